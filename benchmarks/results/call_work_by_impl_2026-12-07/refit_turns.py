"""Rules E3 and F1 of rules.txt: the in-step probe's own fit (``calibration.step_probe.fit_in_step``) on the
medians of ``call_work.py``'s turns at the probe's coarse cap and a fine one (ddp_fine, 1 KiB; and ddp_1byte where the
run has it: backward end, summed all-reduce time, beside the compute-only steps' median); then every side predicted
from the fitted terms, against its measured backward end + optimizer less the turn's compute-only step. The 95 %
bootstrap intervals of E2's marginals per call too (turns resampled, seed 0). (Run 3's per-wake fit in rules.txt ran
on a working-tree rule not kept, ``CostModel.call_cpu_per_wake``; this script no longer has that branch.)

    PYTHONPATH=. python benchmarks/results/call_work_by_impl_2026-12-07/refit_turns.py PARAMS RUN3.json.gz
"""

import gzip
import json
import random
import statistics
import sys
from dataclasses import replace

from turns import bare_by_turn, side_terms

from calibration.params import load_params
from calibration.step_probe import fit_in_step
from calibration.timeline import predicted_timeline, step_terms
from calibration.validate import check_profile_matches, rescaled_profile
from simulator.strategies import StrategySpec


def main() -> None:
    params = load_params(sys.argv[1])
    data = json.load(gzip.open(sys.argv[2], "rt"))
    ranks, sides = data["ranks"], data["sides"]
    n = len(ranks[0]["one"]["step_times_s"])
    bare, bare_turn = bare_by_turn(ranks, n)
    prof0 = check_profile_matches(params, data["model"], None)
    terms = {}
    for s in sides:
        terms[s] = side_terms(ranks, s)
    opt = rescaled_profile(prof0, statistics.median(bare), True)[0].optimizer_s
    excess = {s: [(t["compute_s"] + opt - b) * 1e3 for t, b in zip(terms[s], bare_turn)] for s in sides}

    rng = random.Random(0)
    draws = {"1 to 3": [], "3 to 8": []}
    for _ in range(4000):
        idx = [rng.randrange(n) for _ in range(n)]
        med = {s: statistics.median(excess[s][i] for i in idx) for s in ("one", "ddp_coarse", "ddp_fine")}
        draws["1 to 3"].append((med["ddp_coarse"] - med["one"]) / 2)
        draws["3 to 8"].append((med["ddp_fine"] - med["ddp_coarse"]) / 5)
    for name, d in draws.items():
        d.sort()
        print(
            f"E2: marginal excess per call from {name} buckets: median {statistics.median(d):.2f} ms [{d[100]:.2f}..{d[3899]:.2f}]"
        )
    for s in sides:
        e = sorted(statistics.median(rng.choices(excess[s], k=n)) for _ in range(2000))
        print(
            f"E1: {s:<11} backward end + opt - compute-only: median {statistics.median(excess[s]):+.2f} ms [{e[50]:+.2f}..{e[1949]:+.2f}]"
        )

    def targets(s: str) -> dict:
        return {
            "compute_s": statistics.median(t["compute_s"] for t in terms[s]),
            "comm_sum_s": statistics.median(t["comm_sum_s"] for t in terms[s]),
            "compute_only_median_s": statistics.median(bare),
        }

    cost = replace(params.cost_model(), leftover_s=0.0, optimizer_extra_s=0.0, queued_latency_scale=1.0)
    prof = rescaled_profile(prof0, statistics.median(bare), True)[0]
    base_ms = statistics.median(bare) * 1e3
    for fine in [s for s in ("ddp_fine", "ddp_1byte") if s in sides]:
        coarse_mb, fine_mb = sides["ddp_coarse"][1], sides[fine][1]
        fit = fit_in_step(prof0, cost, 2, coarse_mb, targets("ddp_coarse"), fine=(fine_mb, targets(fine)))
        print(
            f"E3/F1 (ddp_coarse and {fine}): k {fit['call_cpu_s'] * 1e3:.2f} ms, kb "
            f"{fit['call_cpu_s_per_byte'] * 1e3 * 2**20:.2f} ms/MiB, comm x{1 + fit['comm_contention_c']:.2f}, "
            f"compute x{1 + fit['contention_c']:.2f}, not identified {fit['not_identified']}"
        )
        at = cost.with_overrides(
            contention=fit["contention_c"],
            comm_contention=fit["comm_contention_c"],
            call_cpu_s=fit["call_cpu_s"],
            call_cpu_s_per_byte=fit["call_cpu_s_per_byte"],
        )
        missed = 0.0
        for s, (strategy, bucket, _c) in sides.items():
            p = step_terms(predicted_timeline(prof, at, StrategySpec(strategy, bucket_mb=bucket), 2))
            pred, meas = (p["compute_s"] + prof.optimizer_s) * 1e3 - base_ms, statistics.median(excess[s])
            missed += abs(pred - meas)
            print(
                f"   {s:<11} predicted {pred:+6.2f} ms, measured {meas:+6.2f}; step {p['step_s'] * 1e3 - base_ms:+6.2f} "
                f"against {statistics.median((t['step_s'] - b) * 1e3 for t, b in zip(terms[s], bare_turn)):+6.2f}"
            )
        print(f"   summed |miss| of the backward ends over the sides: {missed:.2f} ms")


if __name__ == "__main__":
    main()
