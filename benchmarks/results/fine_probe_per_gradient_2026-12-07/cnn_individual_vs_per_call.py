"""cnn on loopback, every stored matrix run: the work per call its calibration fitted against its `individual`
row's error as run (each run's own model). Nothing measured here.

    cd benchmarks/results && python fine_probe_per_gradient_2026-12-07/cnn_individual_vs_per_call.py
"""

import glob
import json
import os
import re
import statistics

from scipy.stats import spearmanr


def run_number(path):
    return int(re.search(r"_m(\d+)", path).group(1))


xs, ys = [], []
for run in sorted(glob.glob("accuracy_matrix_m*"), key=run_number):
    cell = run + "/cnn-loopback"
    if not os.path.exists(cell + "/validation.params.json") or run_number(run) >= 69:
        continue
    ins = (json.load(open(cell + "/validation.params.json")).get("probes") or {}).get("in_step") or {}
    if "call_cpu_s" not in ins:
        continue
    for r in json.load(open(cell + "/validation.json"))["rows"]:
        if r["strategy"] == "individual":
            xs.append(1e3 * ins["call_cpu_s"])
            ys.append(100 * (r["predicted_step_s"] / r["measured_median_s"] - 1))
rho = spearmanr(xs, ys)
print(
    f"{len(xs)} cells (m5-m68): rank correlation of the fitted work per call with individual's error "
    f"{rho.statistic:.2f} (p {rho.pvalue:.1g})"
)
hi = [y for x, y in zip(xs, ys) if x >= 1.5]
lo = [y for x, y in zip(xs, ys) if x < 1.5]
print(
    f"work per call >= 1.5 ms: {len(hi)} cells, individual's median error {statistics.median(hi):+.1f} %; "
    f"under: {len(lo)} cells, {statistics.median(lo):+.1f} %"
)
