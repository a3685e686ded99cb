"""What a lone early call takes from gpt's backward, by its size: torch DDP at one bucket (64 MiB) and at cap lists
whose first cap makes the first bucket 2 KiB (0.001 MiB: ln_f's two tensors), 1 MiB (torch's default) and 4 MiB,
the rest in one bucket (25 MiB). Stepped in turns on the same 2 gloo ranks, each DDP step after a compute-only step of
a bare copy, the sides' order rotated every turn; every DDP step's timeline recorded. One JSON object on stdout. The
timed step is ``paired.step`` (factored out of both scripts after run 5, the same calls in the same order).

    PYTHONPATH=.:benchmarks/results/default_first_bucket_2026-12-07 \
        python benchmarks/results/default_first_bucket_2026-12-07/lone_call.py TURNS > lone.json
"""

import json
import sys
import time
from typing import Any

from paired import step  # the same timed step as runs 3 and 4

from realrun.bench_ddp import N_BATCHES, _loadavg
from realrun.ddp import make_ddp, make_optimizer
from realrun.launch import RankPool
from realrun.timeline import TimelineRecorder
from realrun.workloads import cast_batch, load_workload

SIDES = {
    "one": (64.0, None),
    "first_2KiB": (None, (0.001, 25.0)),
    "default": (None, None),
    "first_4MiB": (None, (4.0, 25.0)),
}


def lone_task(ctx: Any, spec: str, steps: int, warmup: int) -> dict[str, Any]:
    w = load_workload(spec)
    device = ctx.device
    nets: dict[str, Any] = {}
    for name, (bucket, caps) in SIDES.items():
        net = make_ddp("torch-ddp", w.build().to(device), bucket, bucket_cap_mb_list=list(caps) if caps else None)
        nets[name] = (net, make_optimizer("torch-ddp", net, "sgd"), TimelineRecorder(net))
    bare = w.build().to(device)
    bare_opt = make_optimizer("naive", bare, "sgd")
    batches = [
        cast_batch(w.make_batch(w.default_batch_size, 1000 + k * ctx.world_size + ctx.rank), device=device)
        for k in range(N_BATCHES)
    ]
    names = list(SIDES)
    out: dict[str, Any] = {s: {"step_times_s": [], "timeline": []} for s in [*names, "bare"]}
    for i in range(warmup + steps):
        batch = batches[i % N_BATCHES]
        k = i % len(names)
        for side in names[k:] + names[:k]:
            for s in ("bare", side):
                step(s, nets, (bare, bare_opt), batch, w.loss, device, out if i >= warmup else None)
    for _net, _opt, rec in nets.values():
        rec.detach()
    out["loadavg"] = _loadavg()
    return out


def main() -> None:
    steps = int(sys.argv[1])
    from lone_call import lone_task as task  # workers import tasks by module name

    t0 = time.time()
    with RankPool(2, timeout_s=3600) as pool:
        per_rank = pool.run(task, "gpt", steps, 4)
    print(json.dumps({"model": "gpt", "sides": SIDES, "steps": steps, "wall_s": time.time() - t0, "ranks": per_rank}))


if __name__ == "__main__":
    main()
