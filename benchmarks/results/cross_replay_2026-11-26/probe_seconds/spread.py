"""The spread, over calibrations, of micro-DLRM's predicted rows: each calibration's signed error per configuration
averaged over the six stored measured runs, then its standard deviation over the calibrations of a group (this
session's three with the in-step probe at 10 steps, its three at >= 1 s a cap, and runs m17-m23's six).

    benchmarks/cross_replay.sh OUT loopback benchmarks/results/accuracy_matrix_m{17,18,19,20,22,23}loop \\
        benchmarks/results/cross_replay_2026-11-26/probe_seconds/cal_{old,new}{1,2,3}      (WORKLOADS=micro-dlrm)
    python benchmarks/results/cross_replay_2026-11-26/probe_seconds/spread.py OUT/micro-dlrm
"""

import json
import sys
from pathlib import Path

import numpy as np

MEAS = [f"accuracy_matrix_{r}loop" for r in ("m17", "m18", "m19", "m20", "m22", "m23")]
GROUPS = {
    "10 steps (this session)": ["cal_old1", "cal_old2", "cal_old3"],
    ">= 1 s a cap (this session)": ["cal_new1", "cal_new2", "cal_new3"],
    "runs m17-m23 (10 steps)": MEAS,
}


def errors(folder: Path, cal: str) -> tuple[list[str], np.ndarray]:
    rows = [json.loads((folder / f"cal-{cal}_meas-{m}.json").read_text())["rows"] for m in MEAS]
    keys = [r["strategy"] + (f" {r['bucket_mb']:g}" if r["bucket_mb"] else "") for r in rows[0]]
    return keys, np.array([[r["error_pct"] for r in rs] for rs in rows])  # measured run x configuration


def main(folder: Path) -> None:
    for name, cals in GROUPS.items():
        got = [errors(folder, c) for c in cals]
        keys, A = got[0][0], np.array([e for _, e in got])  # calibration x measured run x configuration
        sd = A.mean(axis=1).std(axis=0, ddof=1)
        print(
            f"{name}: per-configuration spread over calibrations median {np.median(sd):.2f} points, "
            f"max {sd.max():.2f}; median |error| over the pairs {np.median(np.median(np.abs(A), axis=2)):.2f} %; "
            f"mean signed error {A.mean():+.2f} %"
        )
        print("   " + "; ".join(f"{k} {s:.1f}" for k, s in zip(keys, sd)))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
