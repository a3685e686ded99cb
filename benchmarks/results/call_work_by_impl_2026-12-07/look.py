"""``call_work.py``'s turns against the compute-only step of the same turn: per side, the backward end plus the
profile's optimizer less that step (median, mean), the step less it, the calls' time in flight during backward and
each call's launch and launch-to-completion (medians), each against the simulator from PARAMS (profile scaled to
the compute-only steps' median). With two runs, the difference of ddp_fine's medians (second - first) and its 95 %
bootstrap interval (seed 0): rule D1 of rules.txt.

    PYTHONPATH=. python benchmarks/results/call_work_by_impl_2026-12-07/look.py PARAMS RUN1.json.gz [RUN2.json.gz]
"""

import gzip
import json
import random
import statistics
import sys

from turns import bare_by_turn, side_terms

from calibration.params import load_params
from calibration.timeline import predicted_timeline, step_terms
from calibration.validate import check_profile_matches, order_cost, rescaled_profile
from simulator.strategies import StrategySpec


def busy_in_backward(t: dict) -> float:
    """The time, between forward's end and backward's, that at least one call was in flight."""
    start, end = t["forward_s"], t["compute_s"]
    total, cur = 0.0, None
    for a, b in sorted((max(b["launch_s"], start), min(b["complete_s"], end)) for b in t["buckets"]):
        if b <= a:
            continue
        if cur is None or a > cur[1]:
            total += cur[1] - cur[0] if cur else 0.0
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return total + (cur[1] - cur[0] if cur else 0.0)


def look(params, path: str) -> dict[str, list[float]]:
    """Print one run's figures; per side the per-turn backward end + optimizer less the compute-only step (ms)."""
    data = json.load((gzip.open if path.endswith(".gz") else open)(path, "rt"))
    ranks = data["ranks"]
    n = len(ranks[0]["one"]["step_times_s"])
    bare, bare_turn = bare_by_turn(ranks, n)
    prof, _ = rescaled_profile(check_profile_matches(params, data["model"], None), statistics.median(bare), True)
    cost = order_cost(params.cost_model(), True, 1)
    base = statistics.median(bare) * 1e3
    print(f"{path}: {data.get('order', 'after-bare')}, {n} turns, compute-only median {base:.1f} ms")
    out = {}
    for s, (strategy, bucket, _caps) in data["sides"].items():
        t = side_terms(ranks, s)
        p = step_terms(predicted_timeline(prof, cost, StrategySpec(strategy, bucket_mb=bucket), 2))
        d = out[s] = [(a["compute_s"] + prof.optimizer_s - b) * 1e3 for a, b in zip(t, bare_turn)]
        st = [(a["step_s"] - b) * 1e3 for a, b in zip(t, bare_turn)]
        busy = statistics.median(busy_in_backward(x) for x in t) * 1e3
        print(
            f"  {s:<14} backward end + opt - compute-only: median {statistics.median(d):+6.2f} mean "
            f"{statistics.fmean(d):+6.2f} (model {(p['compute_s'] + prof.optimizer_s) * 1e3 - base:+6.2f}); step - "
            f"compute-only median {statistics.median(st):+6.2f} (model {p['step_s'] * 1e3 - base:+6.2f}); calls in "
            f"flight in backward {busy:.2f} ms (model {busy_in_backward(p) * 1e3:.2f})"
        )
        calls = range(len(t[0]["buckets"]))
        for name, key in (("launch", "launch_s"), ("in flight", "duration_s")):
            m = [f"{statistics.median(x['buckets'][i][key] for x in t) * 1e3:.1f}" for i in calls]
            print(f"    {name:<9} ms: {' '.join(m)}")
            print(f"    {'model':<9} ms: {' '.join(f'{b[key] * 1e3:.1f}' for b in p['buckets'])}")
    return out


def main() -> None:
    params = load_params(sys.argv[1])
    runs = [look(params, path) for path in sys.argv[2:]]
    if len(runs) == 2:
        a, b = runs[0]["ddp_fine"], runs[1]["ddp_fine"]
        rng = random.Random(0)
        boot = sorted(
            statistics.median(rng.choices(b, k=len(b))) - statistics.median(rng.choices(a, k=len(a)))
            for _ in range(4000)
        )
        diff = statistics.median(b) - statistics.median(a)
        print(
            f"ddp_fine, second run less first, difference of medians: {diff:+.2f} ms [{boot[100]:+.2f}..{boot[3899]:+.2f}]"
        )


if __name__ == "__main__":
    main()
