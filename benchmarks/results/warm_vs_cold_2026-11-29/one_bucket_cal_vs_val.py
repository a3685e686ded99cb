"""Per stored cell: the in-step probe's one-bucket check, its plain steps (the recorder off) at calibration, against the
validation's torch-ddp row at the same cap measured minutes later: each one's part beyond compute (the step median less
the compute-only median measured beside it), and the difference in % of the validation's step, beside that row's error
and the cell's signed median error.

    python benchmarks/results/warm_vs_cold_2026-11-29/one_bucket_cal_vs_val.py benchmarks/results/accuracy_matrix_m4[4-9]*
"""

import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.stored import cell_calibration, cell_file, cells  # noqa: E402
from realrun.records import iter_records  # noqa: E402

for name, cell in cells(sys.argv[1:]):
    cal, v = cell_calibration(cell), cell_file(cell, "validation.json")
    if not cal or not v:
        continue
    chk = next((d["timeline"] for d in iter_records(cal) if d.get("kind") == "step_probe_check"), None)
    if not chk or not chk.get("plain_step_times_s"):
        continue
    res = json.load(open(v))
    row = next((r for r in res["rows"] if r["strategy"] == "torch-ddp" and r["bucket_mb"] == chk["bucket_mb"]), None)
    if row is None:
        continue  # the check's cap is not in the validation's grid (gpt: 32 MiB)
    plain, comp = st.median(chk["plain_step_times_s"]), chk["compute_median_s"]
    cal_beyond, val_beyond = plain - comp, row["measured_median_s"] - row["measured_compute_s"]
    signed = st.median(r["error_pct"] for r in res["rows"])
    print(
        f"{name:28s} cap {chk['bucket_mb']:g} MiB: calibration {plain * 1e3:7.2f} ms, beyond compute {cal_beyond * 1e3:6.2f} | "
        f"validation {row['measured_median_s'] * 1e3:7.2f}, beyond {val_beyond * 1e3:6.2f} | difference "
        f"{(val_beyond - cal_beyond) / row['measured_median_s'] * 100:+6.2f} % of the step | row error {row['error_pct']:+6.2f} %, "
        f"cell signed median {signed:+6.2f} %"
    )
