"""``paired.py``'s steps, turn by turn: default - one bucket of each timeline term (every event at its last rank,
as ``calibration.timeline.across_ranks_timelines`` takes it), and of the step; their median and mean over turns
with a 95 % bootstrap interval of the mean (seed 0), how many turns are positive, and the simulator's difference
from PARAMS with the profile scaled to the compute-only steps' median (and at their p10 and p90).

    PYTHONPATH=. python benchmarks/results/default_first_bucket_2026-12-07/paired_analyse.py PARAMS paired.json[.gz] [more ...]
"""

import gzip
import json
import random
import statistics
import sys

from calibration.params import load_params
from calibration.timeline import across_ranks_timelines, predicted_timeline, step_terms
from calibration.validate import check_profile_matches, order_cost, rescaled_profile
from simulator.strategies import StrategySpec

TERMS = ("step_s", "forward_s", "backward_s", "exposed_tail_s", "finalize_s", "optimizer_s", "other_s")


def record(ranks: list, side: str) -> dict:
    rank_times = [r[side]["step_times_s"] for r in ranks]
    return {
        "step_times_s": [max(ts) for ts in zip(*rank_times)],
        "rank_step_times_s": rank_times,
        "rank_timelines": [r[side]["timeline"] for r in ranks],
    }


def boot_ci(x: list[float], rng: random.Random, stat=statistics.fmean) -> tuple[float, float]:
    boot = sorted(stat(rng.choices(x, k=len(x))) for _ in range(4000))
    return boot[100], boot[3899]


def main() -> None:
    params = load_params(sys.argv[1])
    runs = [
        json.load((gzip.open if path.endswith(".gz") else open)(path, "rt")) for path in sys.argv[2:]
    ]  # several runs of one model: their turns pooled
    data = runs[0]
    model, one = data["model"], data["one_mib"]
    ranks = [
        {
            s: {k: [x for d in runs for x in d["ranks"][r][s][k]] for k in data["ranks"][r][s]}
            for s in ("default", "one", "bare")
        }
        for r in range(len(data["ranks"]))
    ]
    ranks[0]["loadavg"] = runs[-1]["ranks"][0].get("loadavg")
    prof0 = check_profile_matches(params, model, None)
    cost = order_cost(params.cost_model(), True, 1)
    terms = {s: [step_terms(t) for t in across_ranks_timelines(record(ranks, s))] for s in ("default", "one")}
    bare = [max(ts) for ts in zip(*(r["bare"]["step_times_s"] for r in ranks))]  # two a turn
    n = len(terms["default"])
    q = statistics.quantiles(bare, n=10)

    def predicted(compute_s: float) -> dict:
        prof, _ = rescaled_profile(prof0, compute_s, True)
        return {
            s: step_terms(predicted_timeline(prof, cost, StrategySpec("torch-ddp", bucket_mb=b), 2))
            for s, b in (("default", None), ("one", one))
        }

    p_mid, p_lo, p_hi = predicted(statistics.median(bare)), predicted(q[0]), predicted(q[-1])
    rng = random.Random(0)
    print(
        f"{model}: {n} turns (default, bare, one bucket {one:g} MiB, bare), compute-only median {statistics.median(bare) * 1e3:.1f} ms "
        f"(p10 {q[0] * 1e3:.1f}, p90 {q[-1] * 1e3:.1f}); load after {ranks[0].get('loadavg')}"
    )
    print(
        f"  {'default - one, ms':<18} {'median':>8} {'95% of median':>17} {'mean':>8} {'95% of mean':>17} {'>0':>8} "
        f"{'predicted (p10..p90)':>24} {'> predicted':>12}"
    )
    rows = [(k, lambda t, k=k: t[k]) for k in TERMS]
    rows.append(("last call", lambda t: max(t["buckets"], key=lambda b: b["launch_s"])["duration_s"]))
    rows.append(("backward end", lambda t: t["compute_s"]))
    for name, get in rows:
        d = [(get(a) - get(b)) * 1e3 for a, b in zip(terms["default"], terms["one"])]
        lo, hi = boot_ci(d, rng)
        mlo, mhi = boot_ci(d, rng, statistics.median)
        pd = [(get(p["default"]) - get(p["one"])) * 1e3 for p in (p_mid, p_lo, p_hi)]
        print(
            f"  {name:<18} {statistics.median(d):+8.2f} [{mlo:+6.2f}..{mhi:+6.2f}] {statistics.fmean(d):+8.2f} "
            f"[{lo:+6.2f}..{hi:+6.2f}] {sum(x > 0 for x in d):>4}/{n:<4} {pd[0]:+8.2f} ({pd[1]:+.2f}..{pd[2]:+.2f}) "
            f"{sum(x > pd[0] for x in d):>6}/{n}"
        )
    med = {s: statistics.median(t["step_s"] for t in terms[s]) for s in terms}
    print(
        f"  medians: default {med['default'] * 1e3:.2f} ms, one bucket {med['one'] * 1e3:.2f} ms: default behind by "
        f"{(med['default'] / med['one'] - 1) * 100:+.2f} %; predicted "
        f"{(p_mid['default']['step_s'] / p_mid['one']['step_s'] - 1) * 100:+.2f} %"
    )
    fb = [min(t["buckets"], key=lambda b: b["launch_s"]) for t in terms["default"]]
    pf = min(p_mid["default"]["buckets"], key=lambda b: b["launch_s"])
    print(
        f"  default's first call: measured median {statistics.median(b['duration_s'] for b in fb) * 1e3:.2f} ms, "
        f"ready at {statistics.median(b['ready_s'] for b in fb) * 1e3:.1f} ms; predicted {pf['duration_s'] * 1e3:.2f} ms "
        f"at {pf['ready_s'] * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
