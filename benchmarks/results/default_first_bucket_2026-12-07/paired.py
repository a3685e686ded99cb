"""torch DDP's default and one bucket stepped in turn, step by step, on the same 2 gloo ranks, each step's
per-bucket timeline recorded, each after a compute-only step of a bare copy (turns of default, bare, one bucket,
bare; one bucket first in every other turn), so neither side steps after a DDP step. Drift between minutes hits the two alike, so per-turn differences
(default - one bucket) of the backward, the exposed tail and the step are paired within seconds.
Writes one JSON object: per side the step times (slowest rank per step) and each rank's timelines.

    PYTHONPATH=.:benchmarks/results/default_first_bucket_2026-12-07 \
        python benchmarks/results/default_first_bucket_2026-12-07/paired.py MODEL ONE_MIB STEPS > paired.json
"""

import json
import sys
import time
from typing import Any

import torch.distributed as dist

from realrun.bench_ddp import N_BATCHES, _loadavg, _sync
from realrun.ddp import make_ddp, make_optimizer
from realrun.launch import RankPool
from realrun.timeline import TimelineRecorder, _perf, recorded_step
from realrun.workloads import cast_batch, load_workload


def step(
    side: str, sides: dict[str, Any], bare: tuple[Any, Any], batch: Any, loss: Any, device: str, out: dict | None
) -> None:
    """One timed step of ``side`` ("bare": the compute-only copy; else ``sides[side]`` = (DDP net, optimizer,
    recorder), its timeline recorded), after a barrier; its time (and timeline) appended to ``out[side]``."""
    net, opt, rec = bare + (None,) if side == "bare" else sides[side]
    opt.zero_grad(set_to_none=True)
    dist.barrier()
    _sync(device)
    t0 = _perf()
    if rec is None:  # the bare copy, or a side stepped without the recorder (a hand-written one syncs here)
        loss(net, batch).backward()
        finish = getattr(net, "finish_gradient_synchronization", None)
        if finish is not None:
            finish()
        opt.step()
    else:
        recorded_step(rec, t0, net, opt, batch, loss)
    _sync(device)
    t = _perf() - t0
    tl = rec.end_step(t) if rec is not None else None
    if out is not None:
        out[side]["step_times_s"].append(t)
        if tl is not None:
            out[side]["timeline"].append(tl)


def run_turns(
    ctx: Any, spec: str, sides: dict[str, tuple[Any, ...]], order: Any, steps: int, warmup: int
) -> dict[str, Any]:
    """On one rank: torch DDP at each of ``sides`` (name -> (bucket_mb, cap list), or (strategy, bucket_mb, cap
    list) for another wrapper, or (strategy, bucket_mb, cap list, "plain") for one stepped without the recorder:
    its step times only), each with a timeline recorder, and a bare compute-only copy ("bare"); ``warmup`` + ``steps`` turns, turn ``i`` stepping the names
    ``order(i)`` gives, in that order (``step``); per name the timed steps' times and timelines, and the load."""
    w = load_workload(spec)
    device = ctx.device
    nets: dict[str, Any] = {}
    for name, side in sides.items():
        strategy, bucket, caps = side[:3] if len(side) >= 3 else ("torch-ddp", *side)
        net = make_ddp(strategy, w.build().to(device), bucket, bucket_cap_mb_list=list(caps) if caps else None)
        plain = len(side) == 4 and side[3] == "plain"
        nets[name] = (net, make_optimizer(strategy, net, "sgd"), None if plain else TimelineRecorder(net))
    bare = w.build().to(device)
    bare_opt = make_optimizer("naive", bare, "sgd")
    batches = [
        cast_batch(w.make_batch(w.default_batch_size, 1000 + k * ctx.world_size + ctx.rank), device=device)
        for k in range(N_BATCHES)
    ]
    out: dict[str, Any] = {s: {"step_times_s": [], "timeline": []} for s in [*sides, "bare"]}
    for i in range(warmup + steps):
        for side in order(i):
            step(side, nets, (bare, bare_opt), batches[i % N_BATCHES], w.loss, device, out if i >= warmup else None)
    for _net, _opt, rec in nets.values():
        if rec is not None:
            rec.detach()
    out["loadavg"] = _loadavg()
    return out


def paired_task(ctx: Any, spec: str, one_mib: float, steps: int, warmup: int) -> dict[str, Any]:
    """On one rank: ``warmup`` + ``steps`` turns of (default, bare, one bucket, bare), each DDP step recorded."""
    return run_turns(
        ctx,
        spec,
        {"default": (None, None), "one": (one_mib, None)},
        lambda i: ("default", "bare", "one", "bare") if i % 2 == 0 else ("one", "bare", "default", "bare"),
        steps,
        warmup,
    )


def main() -> None:
    model, one_mib, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    from paired import paired_task as task  # workers import tasks by module name

    t0 = time.time()
    with RankPool(2, timeout_s=3600) as pool:
        per_rank = pool.run(task, model, one_mib, steps, 5)
    print(
        json.dumps({"model": model, "one_mib": one_mib, "steps": steps, "wall_s": time.time() - t0, "ranks": per_rank})
    )


if __name__ == "__main__":
    main()
