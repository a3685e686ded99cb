"""Do configurations measured together move together? Per stored accuracy-matrix cell, across runs: the correlation
of torch-ddp 1 MiB's measured exposed part with that of other configurations measured in the same run, in the same
interleaved groups (torch-ddp 0.25, 4 and 16 MiB, individual, bucketed 1 MiB), and of the 1 MiB and 0.25 MiB rows'
errors. The bound on what a probe measured beside the validation's configurations could carry over, against
``analysis.py``'s probe measured minutes before. Nothing is measured.

    python benchmarks/results/probe_moment/together.py benchmarks/results/accuracy_matrix_m*
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

cells = defaultdict(list)
for d in sys.argv[1:]:
    for cell in sorted(Path(d).iterdir()):
        p = cell / "validation.json"
        if not p.exists():
            continue
        v = json.loads(p.read_text())
        if not isinstance(v, dict):
            continue
        by = {(r["strategy"], r.get("bucket_mb")): r for r in v["rows"]}
        need = [
            ("torch-ddp", 0.25),
            ("torch-ddp", 1.0),
            ("torch-ddp", 4.0),
            ("torch-ddp", 16.0),
            ("individual", None),
            ("bucketed", 1.0),
        ]
        if not all(k in by and by[k].get("measured_exposed_s") is not None for k in need):
            continue
        cells[cell.name].append(
            [by[k]["measured_exposed_s"] * 1e3 for k in need]
            + [by[("torch-ddp", 1.0)]["error_pct"], by[("torch-ddp", 0.25)]["error_pct"]]
        )
print(
    "cell | runs | corr of 1 MiB's exposed with: 0.25 MiB, 4 MiB, 16 MiB, individual, bucketed 1 (same runs, same groups) | corr(error 1 MiB, error 0.25)"
)
for n in sorted(cells):
    a = np.array(cells[n])
    if len(a) < 5:
        continue
    c = [np.corrcoef(a[:, 1], a[:, j])[0, 1] for j in (0, 2, 3, 4, 5)]
    print(n, len(a), " ".join(f"{x:+.2f}" for x in c), f"{np.corrcoef(a[:, 6], a[:, 7])[0, 1]:+.2f}")
