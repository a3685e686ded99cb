"""Does the cold-call cost depend on the call's size? Calibration's probe times a 4 KiB all-reduce.

Runs ``calibration.probes.cold_call_probe`` (as ``calibrate`` does: 2 gloo ranks, a barrier, G ms of 64x64
matmuls, one all-reduce; against one that follows a call) at several sizes, sizes taking turns, PASSES
times, and fits each size's pooled repetitions with ``fit_cold_call`` (calibrate's fit).

    python benchmarks/results/cold_call_sizes/experiment.py OUT.json [REPS] [PASSES]
    SIZES=4096,1048576,4194304 GAPS_MS=2,4,20,100 ...
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from calibration.probes import cold_call_probe, fit_cold_call  # noqa: E402
from realrun.launch import RankPool  # noqa: E402

SIZES = [int(x) for x in os.environ.get("SIZES", "4096,1048576,4194304").split(",")]
GAPS = tuple(float(g) / 1e3 for g in os.environ.get("GAPS_MS", "2,4,20,100").split(","))


def main(out: str, reps: int = 50, passes: int = 2) -> None:
    runs: dict[int, list] = {n: [] for n in SIZES}
    with RankPool(2, "gloo", threads_per_rank=1, timeout_s=600) as pool:
        for p in range(passes):
            for n in SIZES if p % 2 == 0 else reversed(SIZES):
                runs[n].append(pool.run(cold_call_probe, nbytes=n, gaps_s=GAPS, reps=reps))
    fits = {}
    for n, per_pass in runs.items():
        pooled = [
            {
                "gaps_s": list(GAPS),
                "after_call_s": [t for run in per_pass for t in run[r]["after_call_s"]],
                "after_compute_s": [
                    [t for run in per_pass for t in run[r]["after_compute_s"][k]] for k in range(len(GAPS))
                ],
            }
            for r in range(2)
        ]
        fits[n] = fit_cold_call(pooled)
        f = fits[n]
        extra = ", ".join(f"{g * 1e3:g} ms {e * 1e3:+.2f}" for g, e in zip(f["gaps_s"], f["extra_s"]))
        print(
            f"{n:>9} B  after a call {f['after_call_s'] * 1e3:6.2f} ms;  extra after {extra};  "
            f"fit {f['cold_call_s'] * 1e3:.2f} ms x (1 - exp(-idle / {f['cold_tau_s'] * 1e3:.1f} ms))"
        )
    Path(out).write_text(
        json.dumps(
            {
                "sizes": SIZES,
                "gaps_s": GAPS,
                "runs": {str(k): v for k, v in runs.items()},
                "fits": {str(k): v for k, v in fits.items()},
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
