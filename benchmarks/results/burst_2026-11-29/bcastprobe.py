"""Rank side of ``sharded_phases.py``: the sharded optimizer's step in parts, on a workload's parameters."""

import time
from typing import Any


def sharded_phases(ctx: Any, model: str, reps: int = 200) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from realrun.ddp import make_optimizer
    from realrun.workloads import load_workload

    torch.manual_seed(0)
    m = load_workload(model).build()
    for p in m.parameters():
        p.grad = torch.zeros_like(p)
    full = make_optimizer("flat", m)
    sh = make_optimizer("sharded", m)
    params = [p for p in m.parameters() if p.requires_grad]
    owners = [sh.owner_of(p) for p in params]
    out: dict[str, list[float]] = {
        "full_opt": [],
        "shard_opt": [],
        "bcast_loop": [],
        "sharded_step": [],
        "bcast_same_src": [],
    }
    for r in range(reps + 5):
        t = {}
        dist.barrier()
        a = time.perf_counter()
        full.step()
        t["full_opt"] = time.perf_counter() - a
        dist.barrier()
        a = time.perf_counter()
        sh.inner.step()
        t["shard_opt"] = time.perf_counter() - a
        dist.barrier()
        a = time.perf_counter()
        for p, o in zip(params, owners):
            dist.broadcast(p.detach(), src=o)
        t["bcast_loop"] = time.perf_counter() - a
        dist.barrier()
        a = time.perf_counter()
        for p in params:
            dist.broadcast(p.detach(), src=0)
        t["bcast_same_src"] = time.perf_counter() - a
        dist.barrier()
        a = time.perf_counter()
        sh.step()
        t["sharded_step"] = time.perf_counter() - a
        if r >= 5:
            for k, v in t.items():
                out[k].append(v)
    return {"rank": ctx.rank, "times": out, "bytes": [p.numel() * p.element_size() for p in params], "owners": owners}
