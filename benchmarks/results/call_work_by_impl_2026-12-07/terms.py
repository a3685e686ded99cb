"""``call_work.py``'s turns, term by term: per side, the median over turns of each timeline term (every event at its
last rank) and of the step less the turn's compute-only step, with a 95 % bootstrap interval (seed 0), against the
simulator's from PARAMS (profile scaled to the compute-only steps' median; the cost as ``validate`` has it for steps
measured one a turn: ``order_cost``); for a side stepped without the recorder, its step and what the recording
cost its recorded twin (recorded step less this one, per turn). Rules G1, G2 and H1 of rules.txt.

    PYTHONPATH=. python benchmarks/results/call_work_by_impl_2026-12-07/terms.py PARAMS RUN.json.gz
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

TERMS = ("forward_s", "backward_s", "exposed_tail_s", "finalize_s", "optimizer_s", "other_s", "comm_sum_s")


def main() -> None:
    params = load_params(sys.argv[1])
    data = json.load(gzip.open(sys.argv[2], "rt"))
    ranks = data["ranks"]
    n = len(ranks[0][next(iter(data["sides"]))]["step_times_s"])
    bare, bare_turn = bare_by_turn(ranks, n)
    prof, _ = rescaled_profile(check_profile_matches(params, data["model"], None), statistics.median(bare), True)
    cost = order_cost(params.cost_model(), True, 1)
    rng = random.Random(0)
    print(
        f"{data['model']}: {n} turns, compute-only median {statistics.median(bare) * 1e3:.2f} ms "
        f"(profile scaled: forward {prof.forward_s * 1e3:.2f}, backward {prof.backward_s * 1e3:.2f}, optimizer "
        f"{prof.optimizer_s * 1e3:.2f} ms); medians over turns, ms, [95 %], model"
    )

    def boot_line(name: str, xs: list[float], model: float | None) -> str:
        boot = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(2000))
        tail = f"  model {model:7.2f}  excess {statistics.median(xs) - model:+6.2f}" if model is not None else ""
        return f"    {name:<15} {statistics.median(xs):7.2f} [{boot[50]:6.2f}..{boot[1949]:6.2f}]{tail}"

    for s, side in data["sides"].items():
        strategy, bucket = side[0], side[1]
        if len(side) == 4:  # stepped without the recorder: its step, and what the recording cost its recorded twin
            spec = StrategySpec(strategy, bucket_mb=bucket)
            model = (predicted_timeline(prof, cost, spec, 2)["step_s"] - statistics.median(bare)) * 1e3
            plain = [max(ts) for ts in zip(*(r[s]["step_times_s"] for r in ranks))]
            print(f"  {s} (no recorder):")
            print(boot_line("step - bare", [(x - b) * 1e3 for x, b in zip(plain, bare_turn)], model))
            twin = s.removesuffix("_plain")
            if twin in data["sides"]:
                rec_t = [max(ts) for ts in zip(*(r[twin]["step_times_s"] for r in ranks))]
                print(boot_line(f"{twin} - this", [(a - b) * 1e3 for a, b in zip(rec_t, plain)], None))
            continue
        t = side_terms(ranks, s)
        p = step_terms(predicted_timeline(prof, cost, StrategySpec(strategy, bucket_mb=bucket), 2))
        rows = [(q, [x[q] * 1e3 for x in t], p[q] * 1e3) for q in TERMS]
        rows.append(
            (
                "step - bare",
                [(x["step_s"] - b) * 1e3 for x, b in zip(t, bare_turn)],
                (p["step_s"] - statistics.median(bare)) * 1e3,
            )
        )
        print(f"  {s} ({len(t[0]['buckets'])} calls):")
        for name, xs, model in rows:
            print(boot_line(name, xs, model))


if __name__ == "__main__":
    main()
