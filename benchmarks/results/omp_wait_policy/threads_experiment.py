# Why a large all-reduce right after backward runs slower than in the calibration sweep on a 16-core box
# (2 gloo ranks, 8 torch threads each): one all-reduce per size after (a) another call, (b) writing its
# buffer, (c) 20 ms of multi-threaded compute (256x256 matmuls), (d) the same compute then 10 ms idle;
# interleaved, per call the last rank's launch to the last completion (clocks of one machine).
#   THREADS=8 REPS=60 python benchmarks/results/omp_wait_policy/threads_experiment.py OUT.json
#   OMP_WAIT_POLICY=PASSIVE ... (the same with OpenMP's idle threads sleeping at once instead of spinning)
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/: the shared harness
from two_ranks import main  # noqa: E402

SIZES = (4096, 1 << 20, 16 << 20)
MODES = ("call", "write", "compute", "compute+idle")
REPS = int(os.environ.get("REPS", 60))
THREADS = int(os.environ.get("THREADS", 8))


def run(rank, q):
    torch.set_num_threads(THREADS)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29661")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    a = torch.randn(256, 256)
    out = {}
    for nb in SIZES:
        buf, src = torch.ones(nb // 4), torch.ones(nb // 4)
        for rep in range(REPS + 5):
            for mode in MODES:
                dist.barrier()
                if mode == "call":
                    dist.all_reduce(buf)
                elif mode == "write":
                    buf.copy_(src)
                else:
                    t = time.perf_counter()
                    while time.perf_counter() - t < 0.02:
                        a @ a
                    if mode == "compute+idle":
                        time.sleep(0.01)
                t0 = time.perf_counter()
                dist.all_reduce(buf)
                t1 = time.perf_counter()
                buf.fill_(1.0)
                if rep >= 5:
                    out.setdefault(f"{nb} {mode}", []).append((t0, t1))
    q.put((rank, out))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1] != "--stats":  # the settings of this run, not of a stored one
        print(f"threads {THREADS}, OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY', '(unset)')}, reps {REPS}")
    main(run)
