"""Rule E3 (rules.txt): run one `ddpsim bench-ddp` launch with every thread of rank r pinned to CPU r (mode "pin"),
or left to the scheduler (mode "free"), or (rule E4) only each rank's main thread pinned to CPU r, its other
threads free (mode "mains") or pinned to the other CPU (mode "cross"), or (rule E5) both ranks' main threads on CPU 0, the other threads free
(mode "together"); and sample where each rank's threads ran.

usage: python pin_run.py MODE OUT.jsonl [bench-ddp args...]
Every 20 ms it reads /proc/<pid>/task/*/stat of both ranks: the CPU each thread last ran on (field 39) and its
cumulative run time (utime+stime); in "pin" mode it also sets each thread's affinity to {rank} (new threads inherit
the mask of the thread that made them, so threads made after the first pass are caught on the next one).
Writes OUT.samples.json: per sample, per rank, the run time of its threads grouped by CPU since the last sample."""

import json
import os
import subprocess
import sys
import time

import psutil

mode, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]
assert mode in ("pin", "free", "mains", "cross", "together")
cmd = [sys.executable, "-m", "ddpsim", "bench-ddp", *args, "--out", out, "--quiet"]
p = subprocess.Popen(cmd)
samples = []
prev: dict = {}
while p.poll() is None:
    ranks = {}
    for c in psutil.Process(p.pid).children(recursive=True):
        try:
            cl = c.cmdline()
        except psutil.Error:
            continue
        if "realrun.worker" in cl:
            ranks[int(cl[cl.index("realrun.worker") + 1])] = c.pid
    row = {"t": time.monotonic(), "ranks": {}}
    for r, pid in ranks.items():
        per_cpu: dict = {}
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                f = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                main = int(tid) == pid
                n = os.cpu_count()
                mask = {
                    "pin": {r % n},
                    "mains": {r % n} if main else set(range(n)),
                    "cross": {r % n} if main else {(r + 1) % n},
                    "together": {0} if main else set(range(n)),
                }.get(mode)
                if mask is not None:
                    os.sched_setaffinity(int(tid), mask)
            except OSError:
                continue
            cpu, run = int(f[36]), int(f[11]) + int(f[12])  # fields 39 and 14+15 (1-based, after the comm)
            d = run - prev.get((pid, tid), run)
            prev[(pid, tid)] = run
            per_cpu[cpu] = per_cpu.get(cpu, 0) + d
        row["ranks"][r] = per_cpu
    samples.append(row)
    time.sleep(0.02)
json.dump({"mode": mode, "rc": p.returncode, "samples": samples}, open(out + ".samples.json", "w"))
sys.exit(p.returncode)
