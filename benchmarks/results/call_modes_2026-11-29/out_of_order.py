"""Whether gloo serves a step's calls one after another: per cell of stored accuracy matrices, the share of adjacent
calls (by launch, on each rank, in the fine in-step probe's steps: torch DDP at 1 KiB, a call per gradient) whose
later-launched call completed first.

    python benchmarks/results/call_modes_2026-11-29/out_of_order.py benchmarks/results/accuracy_matrix_m45 ...
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from stored import calibration_records  # noqa: E402

for matrix in sys.argv[1:]:
    counts: dict[str, list[int]] = {}
    for cell, d in calibration_records(matrix, ("step_probe_fine",)):
        c = counts.setdefault(cell, [0, 0])
        for rank in d["timeline"]["rank_timelines"]:
            for s in rank:
                b = sorted(s["buckets"], key=lambda b: b["launch_s"])
                for x, y in zip(b, b[1:]):
                    c[0] += 1
                    c[1] += y["complete_s"] < x["complete_s"]
    for cell, (pairs, ooo) in counts.items():
        if pairs:
            name = "/".join(cell.rstrip("/").split("/")[-2:])
            print(f"{name:45s} out-of-order completions {ooo / pairs:.2f} of {pairs} adjacent pairs")
