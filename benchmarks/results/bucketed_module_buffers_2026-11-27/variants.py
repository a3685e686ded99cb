"""Why is the hand-written BucketedDDP at 0.25 MiB slower than torch DDP with the same buckets (micro-DLRM)?
Per-phase step times of variants, interleaved in turns of 10 steps, 2 gloo ranks on loopback."""

import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.environ.get("SRC", str(__import__("pathlib").Path(__file__).resolve().parents[3])))
from realrun.ddp import BucketedDDP, make_ddp, make_optimizer
from realrun.workloads import cast_batch, load_workload

BUCKET_MB = float(os.environ.get("BUCKET_MB", "0.25"))
MODEL = os.environ.get("MODEL", "micro-dlrm")
TURNS = int(os.environ.get("TURNS", "20"))


class BAllThenCopy(BucketedDDP):
    def finish_gradient_synchronization(self):
        for w in self._works:
            w.wait()
        dst, src = [], []
        for ps, vs in zip(self._members, self._views):
            for p, v in zip(ps, vs):
                dst.append(p.grad)
                src.append(v)
        torch._foreach_copy_(dst, src)
        self._reset()


class BDeferred(BucketedDDP):
    """copies in hooks, launches every bucket after backward"""

    def _launch_ready(self):
        if getattr(self, "_go", False):
            super()._launch_ready()

    def finish_gradient_synchronization(self):
        self._go = True
        self._launch_ready()
        self._go = False
        super().finish_gradient_synchronization()


def run(rank, world, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    if os.environ.get("SWITCH"):
        sys.setswitchinterval(float(os.environ["SWITCH"]))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    w = load_workload(MODEL)
    batch = cast_batch(w.make_batch(w.default_batch_size, 1000 + rank))
    setups = {}
    for name in os.environ.get("VARIANTS", "T,B,BA,C").split(","):
        m = w.build()
        if name == "T":
            net = make_ddp("torch-ddp", m, BUCKET_MB)
        elif name == "B":
            net = make_ddp("bucketed", m, BUCKET_MB)
        elif name == "BA":
            net = BAllThenCopy(m, BUCKET_MB)
        elif name == "C":
            net = m
        elif name == "BD":
            net = BDeferred(m, BUCKET_MB)
        elif name == "TH":
            net = make_ddp("torch-ddp", m, BUCKET_MB)
            pg = dist.group.WORLD
            opts = dist.AllreduceOptions()
            opts.reduceOp = dist.ReduceOp.SUM

            def hook(state, bucket, pg=pg, opts=opts):
                t = bucket.buffer()
                t.div_(world)
                return pg.allreduce([t], opts).get_future().then(lambda f: f.value()[0])

            net.register_comm_hook(None, hook)
        setups[name] = (net, make_optimizer("naive" if name == "C" else "torch-ddp", net))
    times = {k: [] for k in setups}

    def step(net, opt):
        opt.zero_grad(set_to_none=True)
        dist.barrier()
        t0 = time.perf_counter()
        w.loss(net, batch).backward()
        t1 = time.perf_counter()
        f = getattr(net, "finish_gradient_synchronization", None)
        if f:
            f()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        return (t3 - t0, t1 - t0, t2 - t1, t3 - t2)

    names = list(setups)
    for turn in range(TURNS + 2):
        order = names if turn % 2 == 0 else names[::-1]
        for k in order:
            for j in range(11):
                r = step(*setups[k])
                if turn >= 2 and j > 0:
                    times[k].append(r)
    if rank == 0:
        res = {k: np.array(v).tolist() for k, v in times.items()}
        json.dump(res, open(out, "w"))
    dist.destroy_process_group()


if __name__ == "__main__":
    out = sys.argv[1]
    mp.spawn(run, args=(int(os.environ.get("P", "2")), out), nprocs=int(os.environ.get("P", "2")))
    d = json.load(open(out))
    for k, v in d.items():
        a = np.array(v) * 1e3
        med = np.median(a, axis=0)
        print(
            f"{k:3s} n={len(a)} step {med[0]:.2f} (p10 {np.percentile(a[:, 0], 10):.2f} p90 {np.percentile(a[:, 0], 90):.2f})  fwd+bwd {med[1]:.2f}  finish {med[2]:.2f}  opt {med[3]:.2f}"
        )
