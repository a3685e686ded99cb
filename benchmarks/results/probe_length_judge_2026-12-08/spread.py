"""Reported beside the judges, deciding nothing (rules.txt): per workload, the sd of the fitted work per call, per MiB
and the communication factor over the full params (the 4 s probe) and over the windows (the 1 s probe; within each
calibration, then the mean of those sds), from windows.py's recs.json under run.sh's folders.

    python benchmarks/results/probe_length_judge_2026-12-08/spread.py RUN_DIR...
"""

import json
import statistics
import sys
from pathlib import Path

KEYS = ("call_cpu_ms", "call_cpu_ms_per_mib", "comm_contention")

by_wl: dict[str, list[dict]] = {}
for root in map(Path, sys.argv[1:]):
    for f in sorted(root.glob("*/cal_*/refits/recs.json")):
        by_wl.setdefault(f.parents[2].name, []).append(json.loads(f.read_text()))
for wl, cals in sorted(by_wl.items()):
    print(f"{wl}: {len(cals)} calibrations, {sum(len(c) - 1 for c in cals)} windows")
    for k in KEYS:
        full = [c["full"][k] for c in cals]
        within = [statistics.stdev([v[k] for n, v in c.items() if n != "full"]) for c in cals if len(c) > 2]
        print(
            f"   {k:<20} full: mean {statistics.fmean(full):.2f}, sd over calibrations "
            f"{statistics.stdev(full) if len(full) > 1 else float('nan'):.2f}; windows: sd within a calibration "
            f"{statistics.fmean(within) if within else float('nan'):.2f}"
        )
