"""Small gloo all-reduces on this VM come in two kinds: about 0.25 ms, or one scheduler tick more.

Two ranks on loopback (gloo, one compute thread each), 4 KiB and 64 KiB all-reduces:
1. one call at a time (blocking), 60 rounds of 16 calls after a barrier: every call's time kept;
2. the same with a SCHED_IDLE busy loop pinned to each core (vCPUs that never halt: whether the slow calls are
   a halted vCPU's wake-up);
3. 16 calls launched at once (async) and waited at the end, per-call time of each round (as DDP queues them);
4. the CPU time of each thread of a rank over 2000 blocking calls (/proc/self/task/*/stat).
Prints each as percentiles and a histogram in 0.5 ms bins; also the kernel's tick (CONFIG_HZ) where readable.

    python benchmarks/results/call_modes_2026-11-29/call_modes.py
"""

import gzip
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = (4096, 65536)
ROUNDS = 60


def _threads() -> dict[str, tuple[str, int, int]]:
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            s = open(f"/proc/self/task/{tid}/stat").read()
        except OSError:
            continue
        f = s[s.rindex(")") + 2 :].split()
        out[tid] = (s[s.index("(") + 1 : s.rindex(")")], int(f[11]), int(f[12]))
    return out


def _rank(rank: int, port: int, mode: str, q) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    res: dict = {}
    for n in SIZES:
        t = torch.ones(n // 4)
        for _ in range(20):
            dist.all_reduce(t)
        calls = []
        for _ in range(ROUNDS):
            dist.barrier()
            if mode == "async":
                a = time.perf_counter()
                ws = [dist.all_reduce(t, async_op=True) for _ in range(16)]
                for w in ws:
                    w.wait()
                calls.append((time.perf_counter() - a) / 16)
            else:
                for _ in range(16):
                    a = time.perf_counter()
                    dist.all_reduce(t)
                    calls.append(time.perf_counter() - a)
        res[n] = calls
    if mode == "threads":
        t = torch.ones(1024)
        a, t0 = _threads(), time.perf_counter()
        for _ in range(2000):
            dist.all_reduce(t)
        wall, b = time.perf_counter() - t0, _threads()
        res["threads"] = (wall, [(b[k][0], b[k][1] - a[k][1], b[k][2] - a[k][2]) for k in b if k in a])
    if rank == 0:
        q.put(res)
    dist.destroy_process_group()


def _spinner(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    while True:
        pass


def run(mode: str, port: int) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    spin = []
    if mode == "spinners":
        spin = [ctx.Process(target=_spinner, args=(c,), daemon=True) for c in sorted(os.sched_getaffinity(0))]
        for p in spin:
            p.start()
    ps = [ctx.Process(target=_rank, args=(r, port, mode, q)) for r in range(2)]
    for p in ps:
        p.start()
    res = q.get()
    for p in ps:
        p.join()
    for p in spin:
        p.kill()
    return res


def describe(label: str, calls: list[float]) -> None:
    ms = sorted(x * 1e3 for x in calls)
    k = len(ms)
    base = ms[k // 10]
    slow = [x for x in ms if x > base + 2.0]
    hist = {}
    for x in ms:
        b = min(int(x / 0.5), 16)
        hist[b] = hist.get(b, 0) + 1
    h = " ".join(f"{b * 0.5:g}{'+' if b == 16 else ''}:{hist[b]}" for b in sorted(hist))
    ex = f", their median {sorted(slow)[len(slow) // 2] - base:.2f} ms over p10" if slow else ""
    print(
        f"  {label}: {k} calls, p10 {base:.3f} / median {ms[k // 2]:.3f} / p90 {ms[9 * k // 10]:.3f} / mean "
        f"{sum(ms) / k:.3f} ms; {len(slow) / k:.0%} more than 2 ms over p10{ex}"
    )
    print(f"    histogram (0.5 ms bins, lower edge:count): {h}")


def main() -> None:
    hz = "unknown"
    try:
        for line in gzip.open("/proc/config.gz", "rt"):
            if line.startswith("CONFIG_HZ="):
                hz = line.strip().split("=")[1]
    except OSError:
        pass
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; kernel {os.uname().release}, CONFIG_HZ={hz}, "
        f"{len(os.sched_getaffinity(0))} cores, load {os.getloadavg()[0]:.2f}; torch {torch.__version__}"
    )
    for mode, port in (("blocking", 29541), ("spinners", 29542), ("async", 29543), ("threads", 29544)):
        res = run(mode, port)
        print(f"{mode}:")
        for n in SIZES:
            describe(f"{n // 1024} KiB" + (" (per call of each round of 16)" if mode == "async" else ""), res[n])
        if "threads" in res:
            wall, rows = res["threads"]
            print(f"  rank 0, 2000 blocking 4 KiB calls in {wall:.2f} s; CPU time per thread (utime + stime, s):")
            for name, u, s in rows:
                if u + s:
                    print(f"    {name:18s} {u / os.sysconf('SC_CLK_TCK'):.2f} + {s / os.sysconf('SC_CLK_TCK'):.2f}")
    sys.stdout.flush()
    subprocess.run(["uptime"])


if __name__ == "__main__":
    main()
