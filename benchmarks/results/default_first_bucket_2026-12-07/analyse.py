"""Default against one bucket, term by term, from ``measure.py``'s records: per turn the difference
(default - one bucket) of each timeline term's median over the turn's steps, measured (every event at its
last rank) and predicted from PARAMS (the profile scaled to each measurement's compute-only steps, as
``validate`` predicts); then, over turns, the median difference, its range and how many turns it was
positive. The plain steps' (no recorder) difference is printed beside the recorded steps'.

    PYTHONPATH=. python benchmarks/results/default_first_bucket_2026-12-07/analyse.py PARAMS MODEL records.jsonl[.gz]
"""

import gzip
import json
import statistics
import sys
from collections import defaultdict

from calibration.params import load_params
from calibration.timeline import across_ranks_timelines, median_terms, predicted_timeline, step_terms
from calibration.validate import check_profile_matches, order_cost, rescaled_profile
from simulator.strategies import StrategySpec

TERMS = ("step_s", "forward_s", "backward_s", "exposed_tail_s", "finalize_s", "optimizer_s", "other_s")


def first_bucket(terms: dict) -> dict:
    return min(terms["buckets"], key=lambda b: b["launch_s"])


def main() -> None:
    params = load_params(sys.argv[1])
    model = sys.argv[2]
    prof0 = check_profile_matches(params, model, None)
    cost = order_cost(params.cost_model(), True, 1)
    by_turn: dict[int, dict] = defaultdict(dict)
    for line in (gzip.open if sys.argv[3].endswith(".gz") else open)(sys.argv[3], "rt"):
        rec = json.loads(line)
        m = median_terms([step_terms(t) for t in across_ranks_timelines(rec)])
        prof, _scale = rescaled_profile(prof0, rec["compute_median_s"], True)
        p = step_terms(predicted_timeline(prof, cost, StrategySpec("torch-ddp", bucket_mb=rec["bucket_mb"]), 2))
        fb_m, fb_p = first_bucket(m), first_bucket(p)
        row = {f"m_{k}": m[k] for k in TERMS} | {f"p_{k}": p[k] for k in TERMS}
        row |= {
            "m_plain_step_s": statistics.median(rec["plain_step_times_s"]),
            # beyond the compute-only step beside it, step by step (drift between measurements cancels)
            "m_plain_over_s": statistics.median(
                a - b for a, b in zip(rec["plain_step_times_s"], rec["compute_step_times_s"])
            ),
            "m_step_over_s": statistics.median(a - b for a, b in zip(rec["step_times_s"], rec["compute_step_times_s"])),
            "p_step_over_s": p["step_s"] - rec["compute_median_s"],
            "m_compute_only_s": rec["compute_median_s"],
            "p_compute_only_s": rec["compute_median_s"],
            "m_first_call_s": fb_m["duration_s"],
            "p_first_call_s": fb_p["duration_s"],
            "m_first_ready_s": fb_m["ready_s"],
            "p_first_ready_s": fb_p["ready_s"],
            "n_buckets": len(m["buckets"]),
        }
        by_turn[rec["turn"]]["default" if rec["bucket_mb"] is None else "one"] = row
    turns = [t for t in sorted(by_turn) if len(by_turn[t]) == 2]
    print(f"{model}: {len(turns)} turns; per turn default - one bucket (ms), median [min..max] (turns > 0)")
    keys = [f"{s}_{k}" for k in TERMS for s in ("m", "p")] + ["m_plain_step_s", "m_compute_only_s"]
    keys += ["m_plain_over_s", "m_step_over_s", "p_step_over_s"]
    for key in keys:
        d = [(by_turn[t]["default"][key] - by_turn[t]["one"][key]) * 1e3 for t in turns]
        pos = sum(x > 0 for x in d)
        print(
            f"  {key:<18} {statistics.median(d):+8.2f} [{min(d):+7.2f}..{max(d):+7.2f}] ({pos}/{len(d)})"
            f"   default {statistics.median(by_turn[t]['default'][key] for t in turns) * 1e3:8.2f}"
        )
    print("  miss (measured - predicted) of the difference, per turn, ms:")
    for k in TERMS:
        d = [
            (
                by_turn[t]["default"][f"m_{k}"]
                - by_turn[t]["one"][f"m_{k}"]
                - by_turn[t]["default"][f"p_{k}"]
                + by_turn[t]["one"][f"p_{k}"]
            )
            * 1e3
            for t in turns
        ]
        print(
            f"    {k:<16} {statistics.median(d):+8.2f} [{min(d):+7.2f}..{max(d):+7.2f}] ({sum(x > 0 for x in d)}/{len(d)})"
        )
    d = [
        (
            by_turn[t]["default"]["m_plain_over_s"]
            - by_turn[t]["one"]["m_plain_over_s"]
            - by_turn[t]["default"]["p_step_over_s"]
            + by_turn[t]["one"]["p_step_over_s"]
        )
        * 1e3
        for t in turns
    ]
    print(
        f"    {'plain over compute':<16} {statistics.median(d):+8.2f} [{min(d):+7.2f}..{max(d):+7.2f}] "
        f"({sum(x > 0 for x in d)}/{len(d)})"
    )
    print(
        "  default's first call (median over turns, ms): measured "
        f"{statistics.median(by_turn[t]['default']['m_first_call_s'] for t in turns) * 1e3:.2f} at "
        f"{statistics.median(by_turn[t]['default']['m_first_ready_s'] for t in turns) * 1e3:.1f}, predicted "
        f"{statistics.median(by_turn[t]['default']['p_first_call_s'] for t in turns) * 1e3:.2f} at "
        f"{statistics.median(by_turn[t]['default']['p_first_ready_s'] for t in turns) * 1e3:.1f}; buckets "
        f"{sorted({by_turn[t]['default']['n_buckets'] for t in turns})}"
    )
    for name in ("step_s", "plain_step_s"):
        k = f"m_{name}"
        pct = [(by_turn[t]["default"][k] / by_turn[t]["one"][k] - 1) * 100 for t in turns]
        print(
            f"  measured {name} default behind one: median {statistics.median(pct):+.2f} % "
            f"[{min(pct):+.2f}..{max(pct):+.2f}]"
        )
    pct = [(by_turn[t]["default"]["p_step_s"] / by_turn[t]["one"]["p_step_s"] - 1) * 100 for t in turns]
    print(
        f"  predicted step default behind one: median {statistics.median(pct):+.2f} % "
        f"[{min(pct):+.2f}..{max(pct):+.2f}]"
    )


if __name__ == "__main__":
    main()
