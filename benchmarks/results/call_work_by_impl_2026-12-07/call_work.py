"""What each implementation's calls take from backward: torch DDP at one bucket (64 MiB: one call, at backward's
end), torch DDP at a 1 KiB cap (many buckets), the hand-written ``individual`` (one call a parameter) and
``bucketed`` at the same 1 KiB cap, stepped in turns on the same 2 gloo ranks, each step after a compute-only step
of a bare copy, the sides' order rotated every turn; every step's timeline recorded (``paired.run_turns`` of
``default_first_bucket_2026-12-07``). With ORDER ``after-ddp`` (run 2) a turn is the four sides and one compute-only
step, rotated, so most DDP steps follow another DDP configuration's step, as in ``validate``'s groups and the
in-step probe. One JSON object on stdout.

    PYTHONPATH=.:benchmarks/results/default_first_bucket_2026-12-07:benchmarks/results/call_work_by_impl_2026-12-07 \
        python benchmarks/results/call_work_by_impl_2026-12-07/call_work.py MODEL TURNS [after-bare|after-ddp|blocks] [SET] > turns.json
"""

import json
import sys
import time
from typing import Any

from paired import run_turns

from realrun.launch import RankPool

FINE_MB = 1 / 1024
COARSE_MB = 0.7323703765869141  # the in-step probe's coarse cap for cnn (params.json): 3 buckets
SIDES = {
    "one": ("torch-ddp", 64.0, None),
    "ddp_fine": ("torch-ddp", FINE_MB, None),
    "individual": ("individual", None, None),
    "bucketed_fine": ("bucketed", FINE_MB, None),
}
# run 3 (SET ``coarse``): the probe's coarse cap in place of bucketed_fine; run 4 (``onebyte``): and torch DDP at a
# one-byte cap too (a bucket per tensor: 12)
SETS = {
    "default": SIDES,
    "coarse": {
        **{k: v for k, v in SIDES.items() if k != "bucketed_fine"},
        "ddp_coarse": ("torch-ddp", COARSE_MB, None),
    },
}
SETS["onebyte"] = {**SETS["coarse"], "ddp_1byte": ("torch-ddp", 1 / 2**20, None)}
# run 5, micro-DLRM (SET ``dlrm``): one bucket, torch's default, its probe's coarse cap (dlrm_params.json) and individual
SETS["dlrm"] = {
    "one": ("torch-ddp", 64.0, None),
    "default": ("torch-ddp", None, None),
    "ddp_coarse": ("torch-ddp", 0.9592599868774414, None),
    "individual": ("individual", None, None),
}
# run 7 (``dlrm_blocks``, ORDER blocks): one bucket and the default without the recorder
SETS["dlrm_blocks"] = {
    "one_plain": ("torch-ddp", 64.0, None, "plain"),
    "default_plain": ("torch-ddp", None, None, "plain"),
}
# run 6 (``dlrm_plain``): one bucket and the default, each also stepped without the recorder
SETS["dlrm_plain"] = {
    "one": ("torch-ddp", 64.0, None),
    "one_plain": ("torch-ddp", 64.0, None, "plain"),
    "default": ("torch-ddp", None, None),
    "default_plain": ("torch-ddp", None, None, "plain"),
}


BLOCK = 11  # ORDER "blocks": a block's first step untimed by the analysis (validate's turns of 10 after one)


def turn_order(names: list[str], i: int, after: str) -> list[str]:
    """Turn ``i``'s steps: ``names`` rotated by ``i``; each after a compute-only step ("after-bare"), all in a row
    with the compute-only copy among them ("after-ddp"), or ("blocks") in even turns ``BLOCK`` steps of the
    compute-only copy and then of each side, in odd turns each side after one compute-only step."""
    if after == "after-ddp":
        names = [*names, "bare"]
    k = i % len(names)
    turn = names[k:] + names[:k]
    if after == "after-ddp":
        return turn
    if after == "blocks" and i % 2 == 0:
        return [s for side in ["bare", *turn] for s in [side] * BLOCK]
    return [s for side in turn for s in ("bare", side)]


def call_work_task(
    ctx: Any, spec: str, steps: int, warmup: int, after: str = "after-bare", sides: str = "default"
) -> dict[str, Any]:
    """On one rank: ``warmup`` + ``steps`` turns of every side of ``SETS[sides]`` in ``turn_order``."""
    names = list(SETS[sides])
    return run_turns(ctx, spec, SETS[sides], lambda i: turn_order(names, i, after), steps, warmup)


def main() -> None:
    model, steps = sys.argv[1], int(sys.argv[2])
    after = sys.argv[3] if len(sys.argv) > 3 else "after-bare"
    if after not in ("after-bare", "after-ddp", "blocks"):
        raise SystemExit(f"ORDER must be after-bare, after-ddp or blocks, not {after!r}")
    sides = sys.argv[4] if len(sys.argv) > 4 else "default"
    if sides not in SETS:
        raise SystemExit(f"SET must be one of {', '.join(SETS)}, not {sides!r}")
    from call_work import call_work_task as task  # workers import tasks by module name

    t0 = time.time()
    with RankPool(2, timeout_s=3600) as pool:
        per_rank = pool.run(task, model, steps, 4, after, sides)
    print(
        json.dumps(
            {
                "model": model,
                "order": after,
                "sides": SETS[sides],
                "steps": steps,
                "wall_s": time.time() - t0,
                "ranks": per_rank,
            }
        )
    )


if __name__ == "__main__":
    main()
