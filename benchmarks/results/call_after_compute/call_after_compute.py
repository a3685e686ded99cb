# One all-reduce on 2 local gloo ranks after another call, after 50 ms idle, after 50 ms of compute (64x64
# matmuls, one thread): per repetition the last rank's launch to the last completion, and the two launches' skew.
#   python benchmarks/results/call_after_compute/call_after_compute.py
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, q):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29657")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    a = torch.randn(64, 64)
    out = {}
    for nb in (4096, 3 << 20, 16 << 20):
        buf = torch.ones(nb // 4)
        for mode in ("after a call", "after 50 ms idle", "after 50 ms compute"):
            rows = []
            for _ in range(50):
                dist.barrier()
                if mode == "after a call":
                    dist.all_reduce(buf)
                elif mode == "after 50 ms idle":
                    time.sleep(0.05)
                else:
                    t = time.perf_counter()
                    while time.perf_counter() - t < 0.05:
                        a @ a
                t0 = time.perf_counter()
                dist.all_reduce(buf)
                t1 = time.perf_counter()
                rows.append((t0, t1))
            out[(nb, mode)] = rows[5:]
    q.put((rank, out))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=run, args=(r, q)) for r in range(2)]
    [p.start() for p in ps]
    res = dict(q.get() for _ in ps)
    [p.join() for p in ps]
    for key in res[0]:
        r0, r1 = res[0][key], res[1][key]
        dur = [max(a[1], b[1]) - max(a[0], b[0]) for a, b in zip(r0, r1)]
        skew = [abs(a[0] - b[0]) for a, b in zip(r0, r1)]
        print(
            f"{key[0]:>9} B {key[1]:>20}: last-launch -> last-done median {statistics.median(dur) * 1e3:6.3f} ms (p10 {sorted(dur)[len(dur) // 10] * 1e3:6.3f}), launch skew median {statistics.median(skew) * 1e3:6.3f} ms"
        )
