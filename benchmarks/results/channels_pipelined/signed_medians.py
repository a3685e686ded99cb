"""Median signed error of each calibration's prediction of each run's measured steps, from the output folder of
``benchmarks/cross_replay.sh`` (its table gives the median absolute error). Nothing is measured.

    python benchmarks/results/channels_pipelined/signed_medians.py CROSS_REPLAY_OUT gpt
"""

import json
import re
import statistics
import sys
from pathlib import Path

out, workload = Path(sys.argv[1]), sys.argv[2]
cells: dict[str, dict[str, float]] = {}
for f in sorted((out / workload).glob("cal-*_meas-*.json")):
    m = re.match(r"cal-(.+)_meas-(.+)\.json", f.name)
    if not m:
        continue
    rows = json.loads(f.read_text())["rows"]
    cells.setdefault(m.group(1), {})[m.group(2)] = statistics.median(r["error_pct"] for r in rows)
runs = sorted(cells)
short = [r.removeprefix("accuracy_matrix_") for r in runs]
print(f"median signed error (%) of {workload}, calibration (row) against measured run (column)")
print("| calibration \\ measured | " + " | ".join(short) + " |")
print("|---" * (len(runs) + 1) + "|")
for r, name in zip(runs, short):
    print(f"| {name} | " + " | ".join(f"{cells[r].get(c, float('nan')):+.2f}" for c in runs) + " |")
