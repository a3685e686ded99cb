"""What a lone early call takes from gpt's backward, by its size: torch DDP at one bucket (64 MiB) and at cap lists
whose first cap makes the first bucket 2 KiB (0.001 MiB: ln_f's two tensors), 1 MiB (torch's default) and 4 MiB,
the rest in one bucket (25 MiB). Stepped in turns on the same 2 gloo ranks, each DDP step after a compute-only step of
a bare copy, the sides' order rotated every turn; every DDP step's timeline recorded. One JSON object on stdout. The
turns are ``paired.run_turns`` (factored out of both scripts after run 5: the same calls in the same order).

    PYTHONPATH=.:benchmarks/results/default_first_bucket_2026-12-07 \
        python benchmarks/results/default_first_bucket_2026-12-07/lone_call.py TURNS > lone.json
"""

import json
import sys
import time
from typing import Any

from paired import run_turns  # the same setup and timed step as runs 3 and 4

from realrun.launch import RankPool

SIDES = {
    "one": (64.0, None),
    "first_2KiB": (None, (0.001, 25.0)),
    "default": (None, None),
    "first_4MiB": (None, (4.0, 25.0)),
}


def lone_task(ctx: Any, spec: str, steps: int, warmup: int) -> dict[str, Any]:
    """On one rank: ``warmup`` + ``steps`` turns of every side of ``SIDES``, each after a compute-only step, the
    sides' order rotated by one every turn."""
    names = list(SIDES)

    def order(i: int) -> list[str]:
        k = i % len(names)
        return [s for side in names[k:] + names[:k] for s in ("bare", side)]

    return run_turns(ctx, spec, SIDES, order, steps, warmup)


def main() -> None:
    steps = int(sys.argv[1])
    from lone_call import lone_task as task  # workers import tasks by module name

    t0 = time.time()
    with RankPool(2, timeout_s=3600) as pool:
        per_rank = pool.run(task, "gpt", steps, 4)
    print(json.dumps({"model": "gpt", "sides": SIDES, "steps": steps, "wall_s": time.time() - t0, "ranks": per_rank}))


if __name__ == "__main__":
    main()
