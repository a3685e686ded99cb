"""The sharded optimizer's step taken apart on real ranks: torch DDP at one cap with plain SGD beside the same with
``ShardedOptimizer`` (SGD), interleaved in turns of 10 timed steps after an untimed one (validate's order). In
the sharded steps each part is timed on each rank: forward + backward (DDP's all-reduces waited for inside),
the local optimizer on this rank's shard, and every blocking broadcast, one per parameter from its owner.

    python benchmarks/results/sharded_loopback_2026-11-29/run_sharded_steps.py MODEL BUCKET_MB TURNS > OUT.txt
"""

from __future__ import annotations

import time
from typing import Any


def sharded_task(
    ctx: Any, spec: str, bucket_mb: float, turns: int, block: int = 10, barrier_before_broadcasts: bool = False
) -> dict[str, Any]:
    import torch.distributed as dist

    from realrun.ddp import make_ddp, make_optimizer
    from realrun.workloads import cast_batch, load_workload

    w = load_workload(spec)
    batch = cast_batch(w.make_batch(w.default_batch_size, 1000 + ctx.rank), device=ctx.device)
    plain = make_ddp("torch-ddp", w.build(), bucket_mb, None)
    plain_opt = make_optimizer("torch-ddp", plain, "sgd")
    sh = make_ddp("sharded", w.build(), bucket_mb, None)
    sh_opt = make_optimizer("sharded", sh, "sgd")
    params = [p for g in sh_opt.param_groups for p in g["params"]]
    owners = [sh_opt.owner_of(p) for p in params]
    out: dict[str, Any] = {
        "rank": ctx.rank,
        "bytes": [p.numel() * p.element_size() for p in params],
        "owners": owners,
        "plain_s": [],
        "plain": [],
        "sharded": [],
    }

    def plain_step(record: bool) -> None:
        plain_opt.zero_grad(set_to_none=True)
        dist.barrier()
        t0 = time.perf_counter()
        loss = w.loss(plain, batch)
        tf = time.perf_counter()
        loss.backward()
        t1 = time.perf_counter()
        plain_opt.step()
        if record:
            out["plain_s"].append(time.perf_counter() - t0)
            out["plain"].append({"t0": t0, "forward_end": tf, "backward_end": t1, "optimizer_end": time.perf_counter()})

    def sharded_step(record: bool) -> None:
        sh_opt.zero_grad(set_to_none=True)
        dist.barrier()
        t0 = time.perf_counter()
        loss = w.loss(sh, batch)
        tf = time.perf_counter()
        loss.backward()
        t1 = time.perf_counter()
        if sh_opt.inner is not None:
            sh_opt.inner.step()
        if barrier_before_broadcasts:  # a variant: the ranks' skew at the optimizer's end taken out
            dist.barrier()
        t2 = time.perf_counter()
        marks = []
        for p, src in zip(params, owners):
            dist.broadcast(p.detach(), src=src)
            marks.append(time.perf_counter())
        if record:
            out["sharded"].append(
                {"t0": t0, "forward_end": tf, "backward_end": t1, "optimizer_end": t2, "broadcast_ends": marks}
            )

    for i in range(turns + 1):  # the first turn untimed
        order = (plain_step, sharded_step) if i % 2 == 0 else (sharded_step, plain_step)
        for f in order:
            f(False)  # the switch from the other model
            for _ in range(block):
                f(i > 0)
    return out


def chain_task(ctx: Any, spec: str, reps: int = 100) -> dict[str, Any]:
    """The sharded optimizer's broadcasts of a workload's parameters alone, no model step around them: (a) each
    broadcast after a barrier (as the calibration's broadcast benchmark times them); (b) the whole chain back to
    back after one barrier, as the sharded step issues it; (c) the chain after 2 ms of compute on each rank."""
    import torch
    import torch.distributed as dist

    from realrun.ddp import make_ddp, make_optimizer
    from realrun.workloads import load_workload

    w = load_workload(spec)
    sh = make_ddp("sharded", w.build(), 64.0, None)
    opt = make_optimizer("sharded", sh, "sgd")
    params = [p for g in opt.param_groups for p in g["params"]]
    owners = [opt.owner_of(p) for p in params]
    a = torch.randn(256, 256)
    out: dict[str, Any] = {"separated": [[] for _ in params], "chain": [], "chain_after_compute": []}

    def spin(seconds: float) -> None:
        t = time.perf_counter()
        while time.perf_counter() - t < seconds:
            a @ a

    for i in range(reps + 5):
        rec = i >= 5
        for k, (p, src) in enumerate(zip(params, owners)):
            dist.barrier()
            t0 = time.perf_counter()
            dist.broadcast(p.detach(), src=src)
            if rec:
                out["separated"][k].append(time.perf_counter() - t0)
        for key, pre in (("chain", 0.0), ("chain_after_compute", 0.002)):
            dist.barrier()
            if pre:
                spin(pre)
            t0 = time.perf_counter()
            for p, src in zip(params, owners):
                dist.broadcast(p.detach(), src=src)
            if rec:
                out[key].append(time.perf_counter() - t0)
    return out
