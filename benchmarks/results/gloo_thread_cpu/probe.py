"""How much CPU one gloo all-reduce takes in the calling process, by thread: does it identify the in-step
work per call and per byte? Two ranks on loopback; per size, per call: wall time, and the CPU time
(/proc/self/task/*/schedstat, ns) of rank 0's main thread and of all its other threads (gloo's).

    .venv/bin/python benchmarks/results/gloo_thread_cpu/probe.py
"""

import os
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def cpu_ns() -> dict[int, int]:
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0])
        except OSError:
            pass
    return out


def worker(rank: int, port: int, q) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    main = threading.get_native_id()
    res = []
    for kib in [4, 64, 256, 1024, 2048, 4096, 8192, 16384]:
        t = torch.ones(kib * 256)
        for _ in range(3):
            dist.all_reduce(t)
        n = 40 if kib <= 4096 else 15
        dist.barrier()
        c0, w0 = cpu_ns(), time.perf_counter()
        for _ in range(n):
            dist.all_reduce(t)
        w1, c1 = time.perf_counter(), cpu_ns()
        d_main = (c1.get(main, 0) - c0.get(main, 0)) / n
        d_other = sum(c1[k] - c0.get(k, 0) for k in c1 if k != main) / n
        res.append((kib, (w1 - w0) / n * 1e3, d_main / 1e6, d_other / 1e6))
    if rank == 0:
        q.put(res)
    dist.destroy_process_group()


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(r, 29611, q)) for r in range(2)]
    for p in ps:
        p.start()
    res = q.get()
    for p in ps:
        p.join()
    print("KiB   wall_ms  main_cpu_ms  other_threads_cpu_ms  (per call, rank 0)")
    for kib, wall, main_cpu, other in res:
        print(f"{kib:6d} {wall:8.3f} {main_cpu:8.3f} {other:8.3f}")
