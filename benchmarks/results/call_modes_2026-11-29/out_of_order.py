"""Whether gloo serves a step's calls one after another: per cell of stored accuracy matrices, the share of adjacent
calls (by launch, on each rank, in the fine in-step probe's steps: torch DDP at 1 KiB, a call per gradient) whose
later-launched call completed first.

    python benchmarks/results/call_modes_2026-11-29/out_of_order.py benchmarks/results/accuracy_matrix_m45 ...
"""

import glob
import gzip
import json
import sys

for matrix in sys.argv[1:]:
    for cell in sorted(glob.glob(matrix.rstrip("/") + "/*/")):
        cal = glob.glob(cell + "validation.calibration*.jsonl*")
        if not cal:
            continue
        opener = gzip.open if cal[0].endswith(".gz") else open
        pairs = ooo = 0
        for line in opener(cal[0], "rt"):
            d = json.loads(line)
            if d.get("kind") != "step_probe_fine":
                continue
            for rank in d["timeline"]["rank_timelines"]:
                for s in rank:
                    b = sorted(s["buckets"], key=lambda b: b["launch_s"])
                    for x, y in zip(b, b[1:]):
                        pairs += 1
                        ooo += y["complete_s"] < x["complete_s"]
        if pairs:
            name = "/".join(cell.rstrip("/").split("/")[-2:])
            print(f"{name:45s} out-of-order completions {ooo / pairs:.2f} of {pairs} adjacent pairs")
