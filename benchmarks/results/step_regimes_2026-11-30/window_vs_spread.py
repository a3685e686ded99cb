"""How well 60 steps estimate the long-run median of micro-DLRM `individual` on loopback (E2's 8 launches of 600
steps, 4800 in all, files e2_1..8.jsonl): 60 consecutive steps (one window, as the calibration's in-step probe takes
its plain steps) against 60 steps taken as 6 turns of 10 spread over the whole span, and 300 steps as 30 turns of 10.
Seeded resampling; measures nothing. Prints the pooled median and each way's spread of its median (p10-p90 and the
share within 10 % of the pooled median)."""

import json
import sys

import numpy as np

runs = [np.array(json.loads(open(p).readline())["step_times_s"]) * 1e3 for p in sys.argv[1:]]
steps = np.concatenate(runs)  # launch after launch, in time order
pooled = float(np.median(steps))
rng = np.random.default_rng(0)
n, draws = len(steps), 4000
window = [float(np.median(steps[s : s + 60])) for s in rng.integers(0, n - 60, draws)]


def spread(turns: int) -> list[float]:
    out = []
    for _ in range(draws):
        starts = rng.choice(np.arange(0, n - 10, 10), turns, replace=False)
        out.append(float(np.median(np.concatenate([steps[s : s + 10] for s in starts]))))
    return out


print(f"{n} steps, pooled median {pooled:.2f} ms")
ways = (
    ("60 consecutive steps", window),
    ("6 turns of 10 spread over the span", spread(6)),
    ("30 turns of 10 spread over the span", spread(30)),
)
for name, est in ways:
    e = np.asarray(est)
    lo, hi = np.percentile(e, [10, 90])
    within = float(np.mean(np.abs(e / pooled - 1) < 0.10)) * 100
    print(f"{name}: its median p10-p90 {lo:.2f}-{hi:.2f} ms, within 10 % of the pooled median {within:.0f} %")
