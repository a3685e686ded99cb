"""CPU time a step of each strategy takes, per thread (from /proc/self/task), on the synthetic model of
synthetic.py: 2 gloo ranks, 100 steps each after 20, rank 0 printed."""

import os
import resource
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.environ.get("SRC", str(__import__("pathlib").Path(__file__).resolve().parents[3])))
from realrun.ddp import make_ddp, make_optimizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from synthetic import Syn

pc = time.perf_counter


def run(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29547")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    x = torch.tensor(1.0)
    for name in ("torch-ddp", "bucketed", "individual", "torch-ddp", "bucketed", "individual"):
        torch.manual_seed(0)
        m = Syn()
        net = make_ddp(name, m, 0.25) if name != "individual" else make_ddp(name, m)
        opt = make_optimizer(name, net)
        for _ in range(20):
            opt.zero_grad(set_to_none=True)
            dist.barrier()
            net(x).backward()
            getattr(net, "finish_gradient_synchronization", lambda: None)()

        def th():
            out = {}
            for t in os.listdir("/proc/self/task"):
                f = open(f"/proc/self/task/{t}/stat").read().rsplit(")", 1)[1].split()
                name = open(f"/proc/self/task/{t}/comm").read().strip()
                out[t] = (name, int(f[11]) + int(f[12]))
            return out

        th0 = th()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        w0 = pc()
        ts = []
        for _ in range(100):
            opt.zero_grad(set_to_none=True)
            dist.barrier()
            a = pc()
            net(x).backward()
            getattr(net, "finish_gradient_synchronization", lambda: None)()
            ts.append(pc() - a)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        w1 = pc()
        th1 = th()
        tick = os.sysconf("SC_CLK_TCK")
        per = sorted(((th1[t][1] - th0.get(t, (0, 0))[1]) * 1000 / tick / 100, th1[t][0], t) for t in th1)[::-1][:5]
        if rank == 0:
            print("   per thread ms/step:", [(round(a, 2), n) for a, n, t in per])
        cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) / 100
        vcs = (r1.ru_nvcsw - r0.ru_nvcsw) / 100
        ivcs = (r1.ru_nivcsw - r0.ru_nivcsw) / 100
        if rank == 0:
            print(
                f"{name:10s} step median {np.median(ts) * 1e3:.2f} ms, wall/step {(w1 - w0) * 10:.2f} ms, CPU/step (all threads) {cpu * 1e3:.2f} ms (user {(r1.ru_utime - r0.ru_utime) * 10:.2f}, sys {(r1.ru_stime - r0.ru_stime) * 10:.2f}), vol cs {vcs:.0f} invol {ivcs:.0f}"
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
