"""Per stored cell: what the probe's recording cost its steps at each cap (recorded over plain, median of the paired
per-step ratios, in %), beside the validation's errors on the many-call rows (`individual`, torch-ddp 0.25 MiB) and
the mean error of its one-bucket rows (torch-ddp 16 and 64 MiB, `flat`); then, by network (micro-DLRM on loopback left
out: its many-call rows swing tens of points between calibrations), the means, and the rank correlation of the fine
cap's recording cost with `individual`'s error over the one-bucket rows.

    python benchmarks/results/recording_work_2026-11-29/recording_vs_many_call_error.py benchmarks/results/accuracy_matrix_m4[1-9]*
"""

import json
import statistics as st
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.stored import cell_calibration, cell_file, cells  # noqa: E402
from realrun.records import iter_records  # noqa: E402

KINDS = {"step_probe": "coarse", "step_probe_fine": "fine", "step_probe_check": "check"}
by_net: dict[str, list[tuple[float, float, float]]] = {}
for name, cell in cells(sys.argv[1:]):
    cal, v = cell_calibration(cell), cell_file(cell, "validation.json")
    if not cal or not v:
        continue
    cost = {}
    for d in iter_records(cal):
        if d.get("kind") in KINDS:
            t = d["timeline"]
            rec, plain = t["step_times_s"], t.get("plain_step_times_s") or []
            if plain and len(plain) == len(rec):
                cost[KINDS[d["kind"]]] = st.median((a - b) / b * 100 for a, b in zip(rec, plain))
    if "fine" not in cost:
        continue
    rows = {(r["strategy"], r["bucket_mb"]): r["error_pct"] for r in json.load(open(v))["rows"]}
    one = float(np.mean([rows[("torch-ddp", 16.0)], rows[("torch-ddp", 64.0)], rows[("flat", None)]]))
    ind, t25 = rows[("individual", None)], rows[("torch-ddp", 0.25)]
    print(
        f"{name:28s} recording coarse {cost.get('coarse', float('nan')):+6.2f} fine {cost['fine']:+6.2f} "
        f"check {cost.get('check', float('nan')):+6.2f} % | error individual {ind:+6.2f} torch-ddp 0.25 {t25:+6.2f} "
        f"one-bucket mean {one:+6.2f} %"
    )
    if not name.endswith("micro-dlrm-loopback"):
        by_net.setdefault(name.rsplit("-", 1)[-1], []).append((cost["fine"], ind - one, t25 - one))
print()
allx, ally = [], []
for net, v in by_net.items():
    a = np.array(v)
    allx += list(a[:, 0])
    ally += list(a[:, 1])
    print(
        f"{net:9s} {len(a):3d} cells: fine cap's recording cost mean {a[:, 0].mean():+.2f} %; over the one-bucket rows: "
        f"individual {a[:, 1].mean():+.2f} %, torch-ddp 0.25 {a[:, 2].mean():+.2f} %"
    )
rho, p = spearmanr(allx, ally)
print(
    f"rank correlation, fine cap's recording cost vs individual over the one-bucket rows: {rho:.2f} (p {p:.4f}, {len(allx)} cells)"
)
