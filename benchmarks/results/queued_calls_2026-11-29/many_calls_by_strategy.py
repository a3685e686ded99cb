"""What a step's many calls cost, measured, by strategy: per stored loopback cell, the measured median step at 0.25
and 1 MiB less the one at 4 MiB (one bucket), for torch-ddp and for sharded (torch DDP's same buckets, then the
sharded optimizer's blocking broadcasts); and the share of each row's steps in the one-bucket row's range.

    python benchmarks/results/queued_calls_2026-11-29/many_calls_by_strategy.py benchmarks/results/accuracy_matrix_m4*
"""

import json
import sys
from pathlib import Path

import numpy as np

from realrun.records import iter_records

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from stored import cell_file, cells  # noqa: E402

for name, cell in cells(sys.argv[1:], "*loopback/"):
    val, meas = cell_file(cell, "validation.json"), cell_file(cell, "validation.jsonl*")
    if not val or not meas:
        continue
    med = {(r["strategy"], r["bucket_mb"]): r["measured_median_s"] * 1e3 for r in json.load(open(val))["rows"]}
    if ("sharded", 0.25) not in med or ("torch-ddp", 0.25) not in med:
        continue
    steps: dict[str, list[float]] = {}
    for d in iter_records(meas, "ddp_step"):
        steps.setdefault(d["setting"], []).extend(d["step_times_s"])
    parts = []
    for s in ("torch-ddp", "sharded"):
        d25, d1 = med[(s, 0.25)] - med[(s, 4.0)], med[(s, 1.0)] - med[(s, 4.0)]
        one = np.array(steps.get(f"{s} 4 MiB", [])) * 1e3
        many = np.array(steps.get(f"{s} 0.25 MiB", [])) * 1e3
        fast = float(np.mean(many <= np.percentile(one, 90))) if len(one) and len(many) else float("nan")
        parts.append(f"{s}: 0.25-4 {d25:+6.2f} ms, 1-4 {d1:+6.2f} ms, 0.25 MiB steps within 4 MiB's p90 {fast:4.0%}")
    print(f"{name:28s} " + " | ".join(parts))
