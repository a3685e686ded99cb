"""``call_work.py ... blocks``'s turns: each side's plain step less the compute-only step, in the two orders of the
same run: blocks of ``BLOCK`` steps (even turns: per block the median of its steps after the first, less the
compute-only block's), and one step after a compute-only step (odd turns); median over turns with a 95 % bootstrap
interval (seed 0), against the model's step less the compute-only one as ``validate`` predicts each order
(``order_cost``: the leftover added in blocks, where compute-only steps follow their own). Rules K1 and K2 of
rules.txt.

    PYTHONPATH=.:benchmarks/results/default_first_bucket_2026-12-07:benchmarks/results/call_work_by_impl_2026-12-07 \
        python benchmarks/results/call_work_by_impl_2026-12-07/blocks.py PARAMS RUN.json.gz
"""

import gzip
import json
import random
import statistics
import sys

from call_work import BLOCK, turn_order

from calibration.params import load_params
from calibration.validate import check_profile_matches, order_cost, rescaled_profile
from simulator.predict import predict
from simulator.strategies import StrategySpec

WARMUP = 4  # call_work.py's warm-up turns: recorded turn j is turn j + WARMUP of the order


def main() -> None:
    params = load_params(sys.argv[1])
    data = json.load(gzip.open(sys.argv[2], "rt"))
    ranks, sides = data["ranks"], data["sides"]
    names = list(sides)
    steps = {s: [max(ts) for ts in zip(*(r[s]["step_times_s"] for r in ranks))] for s in [*names, "bare"]}
    pos = {s: 0 for s in steps}
    block = {s: [] for s in steps}  # per even turn: the median of the block's steps after its first
    single = {s: [] for s in steps}  # per odd turn: the side's one step (bare: the median of its steps)
    for j in range(data["steps"]):
        order = turn_order(names, j + WARMUP, "blocks")
        for s in steps:
            m = order.count(s)
            xs = steps[s][pos[s] : pos[s] + m]
            pos[s] += m
            if (j + WARMUP) % 2 == 0:
                block[s].append(statistics.median(xs[1:]))
            else:
                single[s].append(statistics.median(xs))
    assert all(pos[s] == len(steps[s]) for s in steps), "the steps do not match the order"
    prof0 = check_profile_matches(params, data["model"], None)
    rng = random.Random(0)
    for name, got, blk in (("blocks", block, BLOCK - 1), ("one step after a compute-only one", single, 1)):
        base = statistics.median(got["bare"])
        prof, _ = rescaled_profile(prof0, base, True)
        cost = order_cost(params.cost_model(), True, blk)
        print(f"{data['model']}, {name}: {len(got['bare'])} turns, compute-only median {base * 1e3:.2f} ms")
        for s in names:
            d = [(a - b) * 1e3 for a, b in zip(got[s], got["bare"])]
            boot = sorted(statistics.median(rng.choices(d, k=len(d))) for _ in range(2000))
            model = (predict(prof, cost, StrategySpec(sides[s][0], bucket_mb=sides[s][1]), 2).step_time_s - base) * 1e3
            print(
                f"  {s:<14} step - compute-only {statistics.median(d):+6.2f} ms [{boot[50]:+.2f}..{boot[1949]:+.2f}], "
                f"model {model:+6.2f}, excess {statistics.median(d) - model:+6.2f}; step {statistics.median(got[s]) * 1e3:.2f} ms"
            )


if __name__ == "__main__":
    main()
