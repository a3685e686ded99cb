"""Small all-reduces on 2 gloo ranks on loopback, with every thread's CPU and run-queue wait.

    python benchmarks/results/gloo_loop_spin_2026-11-30/small_calls_threads.py MODE [CALLS] [BYTES]

MODE 0: as torch runs; 1: each rank pinned to its own core (``sched_setaffinity`` before the process group);
2: each rank's gloo network thread (``gloo_tcp_loop``) reniced to 19 after the process group starts. Each rank
times CALLS all-reduces of BYTES (default 600 x 4 KiB), a barrier before each, after 20 untimed; a call's time is
the slower rank's. Slow: more than 2 ms over the 10th percentile (as ``calibration.probes.fit_call_modes``).
Printed: the slow share, the median lateness, and per rank and thread name the CPU ms, the run-queue wait ms
and the timeslices over the timed calls (``/proc/self/task/TID/schedstat``).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def per_thread() -> dict[str, tuple[str, int, int, int]]:
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run, wait, slices = (int(x) for x in f.read().split())
        except OSError:
            continue
        out[tid] = (name, run, wait, slices)
    return out


def rank_main(rank: int, mode: int, calls: int, nbytes: int, q) -> None:
    if mode == 1:
        os.sched_setaffinity(0, {rank})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29671", rank=rank, world_size=2)
    x = torch.ones(nbytes // 4)
    if mode == 2:
        for tid, (name, *_) in per_thread().items():
            if name == "gloo_tcp_loop":
                os.setpriority(os.PRIO_PROCESS, int(tid), 19)
    for _ in range(20):
        dist.barrier()
        dist.all_reduce(x)
    before, times = per_thread(), []
    for _ in range(calls):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(x)
        times.append(time.perf_counter() - t0)
    after = per_thread()
    threads = [
        (
            after[t][0],
            (after[t][1] - before[t][1]) // 10**6,
            (after[t][2] - before[t][2]) // 10**6,
            after[t][3] - before[t][3],
        )
        for t in after
        if t in before
    ]
    q.put((rank, times, threads))
    dist.destroy_process_group()


def main() -> None:
    mode = int(sys.argv[1])
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 600
    nbytes = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, mode, calls, nbytes, q)) for r in range(2)]
    for p in procs:
        p.start()
    res = sorted(q.get() for _ in procs)
    for p in procs:
        p.join()
    times = [max(a, b) for a, b in zip(res[0][1], res[1][1])]
    s = sorted(times)
    base = s[len(s) // 10]
    slow = [t - base for t in s if t > base + 2e-3]
    late = statistics.median(slow) if slow else 0.0
    wait = sum(w for r in res for _, _, w, _ in r[2])
    print(
        f"mode={mode} bytes={nbytes} calls={calls}: p10 {base * 1e6:.0f} us, median {statistics.median(times) * 1e6:.0f} us, "
        f"slow {len(slow) / calls:.3f}, late {late * 1e3:.2f} ms; stalled {len(slow) * late * 1e3:.0f} ms in all, "
        f"the ranks' threads waited {wait} ms for a core"
    )
    for rank, _, threads in res:
        print(f"  rank {rank} (thread, CPU ms, wait ms, timeslices): {threads}")


if __name__ == "__main__":
    main()
