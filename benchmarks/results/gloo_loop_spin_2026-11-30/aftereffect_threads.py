"""The sharded after-effect (benchmarks/results/sharded_aftereffect_2026-11-29) with gloo's threads watched.

    python benchmarks/results/gloo_loop_spin_2026-11-30/aftereffect_threads.py OUT.json

As ``aftereffect.py`` there (one pool of 2 gloo ranks on loopback, micro-DLRM, phases of ``measure_interleaved`` in
turns of 10 timed steps after an untimed one), with the first 20 turns after each `sharded` or control phase kept
as a phase of their own, and, around every phase, the CPU time and the run-queue wait (``/proc/PID/task/TID/schedstat``,
Linux) of the ranks' threads by name: ``gloo_tcp_loop`` (gloo's network thread, one a rank) and ``pt_gloo_runloop``
(torch's two collective workers a rank). Printed per phase: torch DDP 0.25's median step, and per timed step of
all the phase's configurations the network threads' CPU and the workers' wait, in ms.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from calibration.calibrate import open_pool
from realrun.bench_ddp import measure_interleaved

MODEL = "micro-dlrm"
BLOCK = 10
A = [("torch-ddp", 0.25), ("compute", None)]
S = [("torch-ddp", 0.25), ("sharded", 4.0), ("compute", None)]
C = [("torch-ddp", 0.25), ("torch-ddp", 64.0), ("compute", None)]
NAMES = ("gloo_tcp_loop", "pt_gloo_runloop")


def threads() -> dict[str, list[int]]:
    """Summed [run ns, wait ns, slices] of every thread on the machine by name, for NAMES."""
    out = {n: [0, 0, 0] for n in NAMES}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    name = f.read().strip()
                if name not in out:
                    continue
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    run, wait, slices = (int(x) for x in f.read().split())
            except OSError:
                continue
            for i, v in enumerate((run, wait, slices)):
                out[name][i] += v
    return out


def main() -> None:
    out = sys.argv[1]
    plan = [("A0", A, 60), ("A1", A, 60)]
    for k in range(2):
        plan += [(f"S{k + 1}", S, 60), (f"A{k + 2}a", A, 20), (f"A{k + 2}b", A, 100)]
        plan += [(f"C{k + 1}", C, 60), (f"A{k + 2}c", A, 20), (f"A{k + 2}d", A, 60)]
    rows = []
    with open_pool(2, "gloo", None, 600.0) as pool:
        t0 = time.monotonic()
        for name, cfgs, turns in plan:
            start = time.monotonic() - t0
            th0 = threads()
            res = measure_interleaved(pool, MODEL, cfgs, None, turns * BLOCK, 1, "sgd", BLOCK)
            th1 = threads()
            end = time.monotonic() - t0
            d = {n: [b - a for a, b in zip(th0[n], th1[n])] for n in NAMES}
            steps = sum(len(r.step_times_s) for r in res)
            t = list(res[0].step_times_s)
            rec = {"phase": name, "start_s": start, "end_s": end, "threads_delta": d, "timed_steps": steps}
            rec["configs"] = [
                {"strategy": r.strategy, "bucket_mb": r.bucket_mb, "step_times_s": list(r.step_times_s)} for r in res
            ]
            rows.append(rec)
            loop_ms = d["gloo_tcp_loop"][0] / 1e6 / steps
            wait_ms = d["pt_gloo_runloop"][1] / 1e6 / steps
            print(
                f"{name:4s} {start:6.1f}-{end:6.1f} s  torch-ddp 0.25 median {statistics.median(t) * 1e3:5.2f} ms; "
                f"per timed step: network threads' CPU {loop_ms:5.2f} ms, workers' wait for a core {wait_ms:5.2f} ms",
                flush=True,
            )
    with open(out, "w") as f:
        json.dump({"model": MODEL, "block": BLOCK, "phases": rows}, f)


if __name__ == "__main__":
    main()
