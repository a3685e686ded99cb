"""The calibration's 24 bootstrap refits of the in-step terms (the draws the intervals take them from), each
predicting a configuration's backward end + optimizer less the compute-only step (the profile as calibrated):
p10, median and p90 over the draws, and the point prediction. Nothing measured.

    PYTHONPATH=. python benchmarks/results/call_work_by_impl_2026-12-07/draws.py PARAMS
"""

import sys

import numpy as np

from calibration.params import load_params
from simulator.predict import predict
from simulator.strategies import StrategySpec


def main() -> None:
    params = load_params(sys.argv[1])
    prof, cost = params.profile(), params.cost_model(world_size=2)
    draws = params.uncertainty([], world_size=2).contention_draws
    base = (prof.compute_s - prof.optimizer_s) * 1e3
    for spec in (
        StrategySpec("torch-ddp", bucket_mb=0.7323703765869141),
        StrategySpec("torch-ddp", bucket_mb=1 / 1024),
        StrategySpec("individual"),
    ):
        xs = []
        for d in draws:
            c = cost.with_overrides(contention=d[0], comm_contention=d[1], call_cpu_s=d[2], call_cpu_s_per_byte=d[3])
            xs.append(predict(prof, c, spec, 2).backward_end_s * 1e3 - base)
        p10, med, p90 = np.percentile(xs, [10, 50, 90])
        point = predict(prof, cost, spec, 2).backward_end_s * 1e3 - base
        print(
            f"{spec.name} {spec.bucket_mb}: over {len(xs)} draws p10 {p10:.1f}, median {med:.1f}, p90 {p90:.1f} ms; "
            f"point {point:.1f}"
        )


if __name__ == "__main__":
    main()
