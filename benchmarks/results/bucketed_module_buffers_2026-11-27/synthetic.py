"""Nine 0.5 MB parameters and almost no compute: torch DDP, the hand-written bucketed (0.25 MiB: one bucket each)
and individual, 2 gloo ranks, interleaved in turns of 10 steps; median step (WORK=k adds k tanh a parameter)."""

import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

sys.path.insert(0, os.environ.get("SRC", str(__import__("pathlib").Path(__file__).resolve().parents[3])))
from realrun.ddp import make_ddp, make_optimizer

N = int(os.environ.get("N", "9"))
NUMEL = int(os.environ.get("NUMEL", "124800"))
WORK = int(os.environ.get("WORK", "0"))


class Syn(nn.Module):
    def __init__(self):
        super().__init__()
        self.ps = nn.ParameterList(nn.Parameter(torch.randn(NUMEL)) for _ in range(N))

    def forward(self, x):
        s = 0
        for p in self.ps:
            y = p * x
            for _ in range(WORK):
                y = torch.tanh(y)
            s = s + y.sum()
        return s


def run(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29537")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    setups = {}
    for name in ("torch-ddp", "bucketed", "individual"):
        torch.manual_seed(0)
        m = Syn()
        net = make_ddp(name, m, 0.25) if name != "individual" else make_ddp(name, m)
        setups[name] = (net, make_optimizer(name, net))
    times = {k: [] for k in setups}
    x = torch.tensor(1.0)
    for turn in range(22):
        for k in list(setups) if turn % 2 == 0 else list(setups)[::-1]:
            net, opt = setups[k]
            for j in range(11):
                opt.zero_grad(set_to_none=True)
                dist.barrier()
                t0 = time.perf_counter()
                net(x).backward()
                f = getattr(net, "finish_gradient_synchronization", None)
                if f:
                    f()
                opt.step()
                dt = time.perf_counter() - t0
                if turn >= 2 and j > 0:
                    times[k].append(dt)
    if rank == 0:
        for k, v in times.items():
            print(
                f"{k:11s} median {np.median(v) * 1e3:.2f} ms (p10 {np.percentile(v, 10) * 1e3:.2f}, p90 {np.percentile(v, 90) * 1e3:.2f})"
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
