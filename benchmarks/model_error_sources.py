"""Where each accuracy-matrix cell's model-error term came from, against what its rows then showed.

    python benchmarks/model_error_sources.py benchmarks/results/accuracy_matrix_m55loop ...

Per cell (``*/validation.json`` with its ``validation.params*.json``, or a replay's ``params.json``): the in-step probe's step residual (the RMS of
its recorded steps' log residuals, ``calibration.params.probe_step_residual``), the step check's
(``calibration.sharded_probe.step_check_residual``, where the calibration ran it) and each check row's error, the
rows' root mean square error (``log(predicted / measured)``: what the model-error term stands for), their median and
worst absolute error, and the share of measured medians inside the predicted 80 % interval. The model-error terms
are recomputed by this version's code from the stored fits (the check's as ``step_check_residual`` has it now).
"""

import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.params import probe_step_residual  # noqa: E402
from calibration.sharded_probe import step_check_residual  # noqa: E402


def pct(log_sd: float | None) -> str:
    return "-" if log_sd is None else f"{(math.exp(log_sd) - 1) * 100:.1f}"


def main(dirs: list[str]) -> None:
    print(
        "| run | cell | in-step probe % | step check % (its rows) | rows: RMS error % | median / worst abs. error % | "
        "80 % interval coverage |"
    )
    print("|---|---|---|---|---|---|---|")
    for d in dirs:
        for f in sorted(Path(d).glob("*/validation.json")):
            v = json.loads(f.read_text())
            (pf,) = sorted(f.parent.glob("validation.params*.json")) or [f.parent / "params.json"]  # a replay's
            probes = json.loads(pf.read_text()).get("probes") or {}
            sh = probes.get("sharded_step") or {}
            check = sh.get("check") or []
            rows_txt = ", ".join(
                f"{r['strategy']} {r['bucket_mb']:g}: {(r['predicted_s'] / r['measured_median_s'] - 1) * 100:+.1f}"
                + (" (fitted)" if r.get("fitted") else "")
                for r in check
            )
            rows = [r for r in v["rows"] if r.get("predicted_p10_s") is not None]
            errs = [abs(r["error_pct"]) for r in v["rows"]]
            rms = math.sqrt(sum(math.log1p(r["error_pct"] / 100) ** 2 for r in v["rows"]) / len(v["rows"]))
            cov = sum(r["predicted_p10_s"] <= r["measured_median_s"] <= r["predicted_p90_s"] for r in rows)
            print(
                f"| {Path(d).name} | {f.parent.name} | {pct(probe_step_residual(probes.get('in_step') or {}))} | "
                f"{pct(step_check_residual(sh))}{f' ({rows_txt})' if rows_txt else ''} | {pct(rms)} | "
                f"{statistics.median(errs):.2f} / {max(errs):.2f} | {cov / len(rows):.0%} of {len(rows)} |"
                if rows
                else f"| {Path(d).name} | {f.parent.name} | no intervals |"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
