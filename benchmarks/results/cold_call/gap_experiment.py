# One all-reduce on 2 local gloo ranks after another call, after idle gaps and after compute bursts
# (64x64 matmuls, one thread), interleaved, per size; per call the last rank's launch to the last
# completion. The evidence for the cold-call term (BENCHMARKS.md, "A call on idle channels").
#   python benchmarks/results/cold_call/gap_experiment.py OUT.json          (REPS=120 by default)
#   python benchmarks/results/cold_call/gap_experiment.py --stats OUT.json  (means, trimmed means, quantiles)
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = (4096, 4 << 20)
MODES = [("call", 0.0), ("idle", 0.0005), ("idle", 0.002), ("idle", 0.02)]
MODES += [("compute", 0.002), ("compute", 0.02), ("compute", 0.1)]
REPS = int(os.environ.get("REPS", 120))


def run(rank, q):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29659")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    a = torch.randn(64, 64)
    out = {}
    for nb in SIZES:
        buf = torch.ones(nb // 4)
        for rep in range(REPS + 5):
            for kind, g in MODES:
                dist.barrier()
                if kind == "call":
                    dist.all_reduce(buf)
                elif kind == "idle":
                    time.sleep(g)
                else:
                    t = time.perf_counter()
                    while time.perf_counter() - t < g:
                        a @ a
                t0 = time.perf_counter()
                dist.all_reduce(buf)
                t1 = time.perf_counter()
                if rep >= 5:
                    out.setdefault(f"{nb} {kind} {g}", []).append((t0, t1))
    q.put((rank, out))
    dist.barrier()
    dist.destroy_process_group()


def stats(path):
    for key, (r0, r1) in json.load(open(path)).items():
        a0, a1 = np.array(r0), np.array(r1)
        dur = np.maximum(a0[:, 1], a1[:, 1]) - np.maximum(a0[:, 0], a1[:, 0])
        q = np.quantile(dur, [0.1, 0.5, 0.9]) * 1e3
        trim = np.sort(dur)[: int(0.9 * len(dur))].mean() * 1e3
        print(
            f"{key:>22}: n {len(dur)} mean {dur.mean() * 1e3:6.3f} ms, lowest 90% mean {trim:6.3f}, "
            f"p10/50/90 {q[0]:6.3f} {q[1]:6.3f} {q[2]:6.3f}"
        )


if __name__ == "__main__":
    if sys.argv[1] == "--stats":
        stats(sys.argv[2])
        sys.exit(0)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=run, args=(r, q)) for r in range(2)]
    [p.start() for p in ps]
    res = dict(q.get() for _ in ps)
    [p.join() for p in ps]
    json.dump({k: [res[0][k], res[1][k]] for k in res[0]}, open(sys.argv[1], "w"))
    stats(sys.argv[1])
