# One all-reduce on 2 local gloo ranks after another call, after idle gaps and after compute bursts
# (64x64 matmuls, one thread), interleaved, per size; per call the last rank's launch to the last
# completion. The evidence for the cold-call term (BENCHMARKS.md, "A call on idle channels").
#   python benchmarks/results/cold_call/gap_experiment.py OUT.json          (REPS=120 by default)
#   python benchmarks/results/cold_call/gap_experiment.py --stats OUT.json  (means, trimmed means, quantiles)
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/: the shared harness
from two_ranks import main  # noqa: E402

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


if __name__ == "__main__":
    main(run)
