"""Does the in-step probe's measured exposed part carry over to the validation steps of the same run?

Per stored accuracy-matrix cell: the in-step probe's own steps (calibration: ``step_probe`` record, torch DDP at
the probe's cap, each step beside a compute-only one) give a measured exposed part, median step minus median
compute-only step. The validation run, minutes later on the same ranks, measured torch DDP at 1 MiB the same way
(``measured_exposed_s`` of that row) and predicted it from the calibration (``predicted_exposed_s``). Across the
stored runs of one cell: how much each moves, and whether the probe's value predicts the validation's (it should,
if a calibration catches the state the run is in) or only the prediction (it does, by construction: the in-step
fit reproduces its probe). The probe's cap is not the row's (a different bucket count), so only the correlations
across runs are read, not the levels. Nothing is measured.

    python benchmarks/results/probe_moment/analysis.py benchmarks/results/accuracy_matrix_m*
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from realrun.records import read_records  # noqa: E402


def cell_row(cell: Path) -> dict | None:
    try:
        summary = json.loads((cell / "validation.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict):  # the oldest runs kept a list of rows
        return None
    row = next((r for r in summary["rows"] if r["strategy"] == "torch-ddp" and r.get("bucket_mb") == 1), None)
    cal = sorted(cell.glob("validation.calibration*.jsonl*"))
    if row is None or not cal:
        return None
    probe = next((r for r in read_records(cal[0]) if r.get("kind") == "step_probe"), None)
    if probe is None:
        return None
    tl = probe["timeline"]
    return {
        "run": cell.parent.name.removeprefix("accuracy_matrix_"),
        "probe_mb": tl["bucket_mb"],
        "probe_steps": len(tl["step_times_s"]),
        "probe_exposed_ms": (float(np.median(tl["step_times_s"])) - tl["compute_median_s"]) * 1e3,
        "val_exposed_ms": row["measured_exposed_s"] * 1e3,
        "pred_exposed_ms": row["predicted_exposed_s"] * 1e3,
        "error_pct": row["error_pct"],
    }


def main(run_dirs: list[str]) -> None:
    cells: dict[str, list[dict]] = defaultdict(list)
    for d in run_dirs:
        for cell in sorted(Path(d).iterdir()):
            if cell.is_dir() and (r := cell_row(cell)):
                cells[cell.name].append(r)
    print(
        "cell | runs | probe exposed ms, mean (CV) | validation's, 1 MiB (CV) | corr(probe, validation) | "
        "corr(probe, prediction) | corr(probe, row error)"
    )
    for name in sorted(cells):
        rs = cells[name]
        if len(rs) < 5:
            continue
        pe, ve, pr, er = (
            np.array([r[k] for r in rs]) for k in ("probe_exposed_ms", "val_exposed_ms", "pred_exposed_ms", "error_pct")
        )

        def cv(x: np.ndarray) -> str:
            return f"{x.mean():.2f} ({100 * x.std(ddof=1) / abs(x.mean()):.0f} %)"

        c = lambda a, b: f"{np.corrcoef(a, b)[0, 1]:+.2f}"  # noqa: E731
        print(f"{name} | {len(rs)} | {cv(pe)} | {cv(ve)} | {c(pe, ve)} | {c(pe, pr)} | {c(pe, er)}")


if __name__ == "__main__":
    main(sys.argv[1:])
