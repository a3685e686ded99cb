"""``lone_call.py``'s turns (or ``call_work.py``'s, whose sides name their strategy): per side, the backward end,
the backward and the step less one bucket's in the same turn (every event at its last rank), mean with a 95 %
bootstrap interval (seed 0) and median, against the simulator's difference from PARAMS (profile scaled to the
compute-only steps' median); the first call's duration; and how many calls launched before backward's end.

    PYTHONPATH=. python benchmarks/results/default_first_bucket_2026-12-07/lone_analyse.py PARAMS lone.json[.gz]
"""

import gzip
import json
import random
import statistics
import sys

from paired_analyse import record  # the same record of a side's steps as runs 3 and 4 read

from calibration.params import load_params
from calibration.timeline import across_ranks_timelines, predicted_timeline, step_terms
from calibration.validate import check_profile_matches, order_cost, rescaled_profile
from simulator.strategies import StrategySpec


def main() -> None:
    params = load_params(sys.argv[1])
    path = sys.argv[2]
    data = json.load((gzip.open if path.endswith(".gz") else open)(path, "rt"))
    ranks, sides = data["ranks"], data["sides"]
    prof0 = check_profile_matches(params, data["model"], None)
    cost = order_cost(params.cost_model(), True, 1)
    bare = [max(ts) for ts in zip(*(r["bare"]["step_times_s"] for r in ranks))]
    prof, _ = rescaled_profile(prof0, statistics.median(bare), True)
    terms, pred = {}, {}
    for s, side in sides.items():
        strategy, bucket, caps = side if len(side) == 3 else ("torch-ddp", *side)
        terms[s] = [step_terms(t) for t in across_ranks_timelines(record(ranks, s))]
        spec = StrategySpec(strategy, bucket_mb=bucket, bucket_cap_mb_list=tuple(caps) if caps else None)
        pred[s] = step_terms(predicted_timeline(prof, cost, spec, 2))
    rng = random.Random(0)
    n = len(terms["one"])
    print(
        f"{data['model']}: {n} turns, compute-only median {statistics.median(bare) * 1e3:.1f} ms; each side less one bucket, ms:"
    )
    print(f"  {'side':<11} {'term':<13} {'mean':>8} {'95 % of mean':>17} {'median':>8} {'predicted':>10}")
    for s in sides:
        if s == "one":
            continue
        for name, key in (("backward end", "compute_s"), ("backward", "backward_s"), ("step", "step_s")):
            d = [(a[key] - b[key]) * 1e3 for a, b in zip(terms[s], terms["one"])]
            boot = sorted(statistics.fmean(rng.choices(d, k=len(d))) for _ in range(4000))
            p = (pred[s][key] - pred["one"][key]) * 1e3
            print(
                f"  {s:<11} {name:<13} {statistics.fmean(d):+8.2f} [{boot[100]:+6.2f}..{boot[3899]:+6.2f}] "
                f"{statistics.median(d):+8.2f} {p:+10.2f}"
            )
        early = [sum(b["launch_s"] < t["compute_s"] for b in t["buckets"]) for t in terms[s]]
        p_early = sum(b["launch_s"] < pred[s]["compute_s"] for b in pred[s]["buckets"])
        print(
            f"  {s:<11} calls: {len(terms[s][0]['buckets'])}, launched before backward's end: median "
            f"{statistics.median(early):g} (predicted {p_early})"
        )
        first = [min(t["buckets"], key=lambda b: b["launch_s"]) for t in terms[s]]
        pf = min(pred[s]["buckets"], key=lambda b: b["launch_s"])
        print(
            f"  {s:<11} first call: {first[0]['bytes']} B, median {statistics.median(b['duration_s'] for b in first) * 1e3:.2f} "
            f"ms at {statistics.median(b['ready_s'] for b in first) * 1e3:.1f} ms; predicted {pf['duration_s'] * 1e3:.2f} ms "
            f"at {pf['ready_s'] * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
