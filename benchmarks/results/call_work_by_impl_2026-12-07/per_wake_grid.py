"""The per-wake rule tried and not kept (``per_wake_not_kept.patch``: a call that waited in the queue brings its
per-byte work only): predicted backward end + optimizer less the compute-only step (67.0 ms, run 4's) for cnn's sides
over a grid of the work terms and the communication factor, against run 4's medians. Runs only on a tree with the
patch applied (``git apply``): ``PYTHONPATH=TREE python per_wake_grid.py params.json``.
"""

import sys
from dataclasses import replace

from calibration.params import load_params
from calibration.timeline import predicted_timeline, step_terms
from calibration.validate import check_profile_matches, rescaled_profile
from simulator.strategies import StrategySpec

params = load_params(sys.argv[1])
prof0 = check_profile_matches(params, "cnn", None)
prof = rescaled_profile(prof0, 0.067, True)[0]
base = 67.0
cost = replace(
    params.cost_model(), leftover_s=0.0, optimizer_extra_s=0.0, queued_latency_scale=1.0, call_cpu_per_wake=True
)
sides = {
    "one": ("torch-ddp", 64.0),
    "coarse": ("torch-ddp", 0.7323703765869141),
    "fine": ("torch-ddp", 1 / 1024),
    "1byte": ("torch-ddp", 1 / 2**20),
    "individual": ("individual", None),
}
meas = {"one": 1.28, "coarse": 5.40, "fine": 9.77, "1byte": 12.84, "individual": 11.09}
for cc in (1.0, 1.5):
    for k in (0.0, 1.0, 2.0, 3.0, 4.0):
        for kb in (0.0, 1.0, 2.0):
            at = cost.with_overrides(comm_contention=cc, call_cpu_s=k / 1e3, call_cpu_s_per_byte=kb / 1e3 / 2**20)
            row = []
            for s, (st, b) in sides.items():
                p = step_terms(predicted_timeline(prof, at, StrategySpec(st, bucket_mb=b), 2))
                row.append(f"{s} {(p['compute_s'] + prof.optimizer_s) * 1e3 - base:+6.2f}")
            print(f"cc {cc} k {k} kb {kb}: " + "  ".join(row))
print("measured:", meas)
