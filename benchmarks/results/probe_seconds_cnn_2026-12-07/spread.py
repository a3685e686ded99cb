"""cnn's predicted rows over calibrations with the in-step probe at >= 1 s a cap (old) and >= 4 s (new): each
calibration's signed error per configuration averaged over the stored measured runs, its standard deviation over
the calibrations of a group; and each calibration's fitted work per call and per MiB (rules.txt, rule S1).

    WORKLOADS=cnn benchmarks/cross_replay.sh OUT loopback benchmarks/results/accuracy_matrix_m{61,62,64,66,68}loop \\
        benchmarks/results/probe_seconds_cnn_2026-12-07/cal_{old,new}{1,2,3}
    python benchmarks/results/probe_seconds_cnn_2026-12-07/spread.py OUT/cnn
"""

import json
import sys
from pathlib import Path

import numpy as np

MEAS = [f"accuracy_matrix_{r}loop" for r in ("m61", "m62", "m64", "m66", "m68")]
GROUPS = {
    ">= 1 s a cap (old)": ["cal_old1", "cal_old2", "cal_old3"],
    ">= 4 s a cap (new)": ["cal_new1", "cal_new2", "cal_new3"],
}


def errors(folder: Path, cal: str) -> tuple[list[str], np.ndarray]:
    rows = [json.loads((folder / f"cal-{cal}_meas-{m}.json").read_text())["rows"] for m in MEAS]
    keys = [r["strategy"] + (f" {r['bucket_mb']:g}" if r["bucket_mb"] else "") for r in rows[0]]
    return keys, np.array([[r["error_pct"] for r in rs] for rs in rows])  # measured run x configuration


def work(folder: Path, cal: str) -> tuple[float, float]:
    cm = json.loads((folder / f"cal-{cal}" / "params.json").read_text())["cost_model"]
    return 1e3 * cm.get("call_cpu_s", 0.0), 1e3 * cm.get("call_cpu_s_per_byte", 0.0) * (1 << 20)


def main(folder: Path) -> None:
    for name, cals in GROUPS.items():
        got = [errors(folder, c) for c in cals]
        keys, A = got[0][0], np.array([e for _, e in got])  # calibration x measured run x configuration
        mean = A.mean(axis=1)
        sd = mean.std(axis=0, ddof=1)
        ks = [work(folder, c) for c in cals]
        ind = keys.index("individual")
        print(
            f"{name}: per-configuration spread over calibrations median {np.median(sd):.2f} points, max "
            f"{sd.max():.2f}; 'individual' {sd[ind]:.2f} points (its mean errors "
            f"{', '.join(f'{x:+.1f}' for x in mean[:, ind])} %); median |error| over the pairs "
            f"{np.median(np.median(np.abs(A), axis=2)):.2f} %"
        )
        print(
            "   fitted work: "
            + "; ".join(f"{c} {k:.2f} ms/call + {kb:.2f} ms/MiB" for c, (k, kb) in zip(cals, ks))
            + f"; sd of per call {np.std([k for k, _ in ks], ddof=1):.2f} ms"
        )
        print("   " + "; ".join(f"{k} {s:.1f}" for k, s in zip(keys, sd)))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
