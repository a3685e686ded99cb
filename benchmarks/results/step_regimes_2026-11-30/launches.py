"""Rule E2 (rules_and_results.txt): is the slow share of micro-DLRM `individual` steps set per launch?
Slow: over 1.6x the pooled 10th percentile of all launches' steps."""

import json
import sys

import numpy as np

runs = [np.array(json.loads(open(p).readline())["step_times_s"]) * 1e3 for p in sys.argv[1:]]
thr = 1.6 * np.percentile(np.concatenate(runs), 10)
shares, within = [], []
for p, t in zip(sys.argv[1:], runs):
    s = t > thr
    seg = [float(x.mean()) for x in np.array_split(s, 6)]
    shares.append(float(s.mean()))
    within.append(np.var(seg, ddof=1))
    print(
        f"{p}: median {np.median(t):.2f} ms, mean {t.mean():.2f}, slow {s.mean() * 100:.0f} %, segments {[round(x * 100) for x in seg]}"
    )
sd_b = float(np.std(shares, ddof=1))
sd_w = float(np.sqrt(np.mean(within)))
print(
    f"threshold {thr:.2f} ms; sd between launches {sd_b * 100:.1f} points; sd within (segments) {sd_w * 100:.1f}, "
    f"/sqrt(6) {sd_w / np.sqrt(6) * 100:.1f}; ratio {sd_b / (sd_w / np.sqrt(6)):.2f} (claim > 2, refuted <= 1.2)"
)
