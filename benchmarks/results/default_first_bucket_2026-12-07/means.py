"""The same records as ``analyse.py``, by means (which add up term by term, unlike medians): per measurement the mean
over its steps of each term, and of each step less the compute-only step beside it; the prediction from PARAMS with
the profile scaled to the mean compute-only step. Per turn default - one bucket, then the mean over turns of the
measured and predicted differences and of their miss, with a 95 % bootstrap interval over turns (seed 0). Written
after run 2's rules had been applied (a look the rules did not name).

    PYTHONPATH=. python benchmarks/results/default_first_bucket_2026-12-07/means.py PARAMS records.jsonl[.gz]
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

params = load_params(sys.argv[1])
prof0 = check_profile_matches(params, "gpt", None)
cost = order_cost(params.cost_model(), True, 1)
T = ("step_s", "forward_s", "backward_s", "exposed_tail_s", "finalize_s", "optimizer_s", "other_s", "comm_sum_s")
by = {}
for line in (gzip.open if sys.argv[2].endswith(".gz") else open)(sys.argv[2], "rt"):
    rec = json.loads(line)
    st = [step_terms(t) for t in across_ranks_timelines(rec)]
    prof, _ = rescaled_profile(prof0, rec["compute_median_s"], True)
    p = step_terms(predicted_timeline(prof, cost, StrategySpec("torch-ddp", bucket_mb=rec["bucket_mb"]), 2))
    # per-step: term_k, and step_k - compute_k for the step
    mean_m = {k: statistics.fmean(s[k] for s in st) for k in T}
    mean_m["over"] = statistics.fmean(a - b for a, b in zip(rec["step_times_s"], rec["compute_step_times_s"]))
    mean_m["plain_over"] = statistics.fmean(
        a - b for a, b in zip(rec["plain_step_times_s"], rec["compute_step_times_s"])
    )
    comp_mean = statistics.fmean(rec["compute_step_times_s"])
    prof_m, _ = rescaled_profile(prof0, comp_mean, True)
    pm = step_terms(predicted_timeline(prof_m, cost, StrategySpec("torch-ddp", bucket_mb=rec["bucket_mb"]), 2))
    mean_p = {k: pm[k] for k in T}
    mean_p["over"] = mean_p["plain_over"] = pm["step_s"] - comp_mean
    # first bucket call and last call
    fb = [min(s["buckets"], key=lambda b: b["launch_s"]) for s in st]
    lb = [max(s["buckets"], key=lambda b: b["launch_s"]) for s in st]
    mean_m["first_call"] = statistics.fmean(b["duration_s"] for b in fb)
    mean_m["last_call"] = statistics.fmean(b["duration_s"] for b in lb)
    mean_p["first_call"] = min(pm["buckets"], key=lambda b: b["launch_s"])["duration_s"]
    mean_p["last_call"] = max(pm["buckets"], key=lambda b: b["launch_s"])["duration_s"]
    by.setdefault(rec["turn"], {})["d" if rec["bucket_mb"] is None else "o"] = (mean_m, mean_p)
turns = [t for t in by if len(by[t]) == 2]
rng = random.Random(0)


def ci(x):
    bs = sorted(statistics.fmean(rng.choices(x, k=len(x))) for _ in range(4000))
    return bs[100], bs[3899]


print(
    f"{len(turns)} turns; mean over turns of per-turn (default - one) in ms, measured (means over steps) | predicted | miss [95% bootstrap]"
)
for k in T + ("over", "plain_over", "last_call"):
    dm = [(by[t]["d"][0][k] - by[t]["o"][0][k]) * 1e3 for t in turns]
    dp = [(by[t]["d"][1][k] - by[t]["o"][1][k]) * 1e3 for t in turns]
    miss = [a - b for a, b in zip(dm, dp)]
    lo, hi = ci(miss)
    print(
        f"  {k:<15} {statistics.fmean(dm):+7.2f} | {statistics.fmean(dp):+7.2f} | {statistics.fmean(miss):+7.2f} [{lo:+6.2f}..{hi:+6.2f}]"
    )
fm = [by[t]["d"][0]["first_call"] * 1e3 for t in turns]
fp = [by[t]["d"][1]["first_call"] * 1e3 for t in turns]
print(f"  default's first call: measured mean {statistics.fmean(fm):.2f} ms, predicted {statistics.fmean(fp):.2f} ms")
