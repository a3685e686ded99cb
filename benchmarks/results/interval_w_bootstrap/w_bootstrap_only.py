# An experiment, not kept: the interval's w draw from the bandwidth fit's bootstrap alone (the Jacobian
# t-interval, 1 degree of freedom over 3 transfer-dominated sizes, left out), refitted from a cell's
# calibration records; then `ddpsim validate --replay` of the cell's measured steps with these params.
#   python benchmarks/results/interval_w_bootstrap/w_bootstrap_only.py CALIBRATION.jsonl OUT_PARAMS.json
import sys

import calibration.calibrate as cal
import calibration.robust as rob
from calibration.refit import refit_from_records

fit_bandwidth = cal.fit_bandwidth


def bootstrap_only(*a, **k):
    ppf = rob.stats.t.ppf
    rob.stats.t.ppf = lambda *x, **y: 0.0  # the Jacobian half-width becomes 0: the union is the bootstrap's
    try:
        return fit_bandwidth(*a, **k)
    finally:
        rob.stats.t.ppf = ppf


cal.fit_bandwidth = bootstrap_only
p = refit_from_records(sys.argv[1])
p.save(sys.argv[2])
print(
    sys.argv[2],
    "w CI GB/s",
    [round(x / 1e9, 4) for x in p.linear.w_ci_bytes_per_s],
    "w",
    round(p.linear.w_bytes_per_s / 1e9, 4),
)
