"""The cold-call probe at more gaps than calibrate's (2, 20, 100 ms): how the extra cost of a call
after compute grows between 1 and 100 ms, where small models' calls live.

    python benchmarks/results/cold_call_gaps/gaps_experiment.py OUT.json [REPS]

Two gloo ranks on this machine; ``calibration.probes.cold_call_probe`` with the gaps below, REPS (100)
repetitions; prints per gap the 10 %-trimmed mean and the median of the call (shortest over ranks), the
extra over a call after a call, and the fits of ``extra(g) = a (1 - exp(-g / tau))`` to calibrate's three
gaps and to all of them.
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from calibration.probes import cold_call_probe, fit_cold_call  # noqa: E402
from realrun.launch import RankPool  # noqa: E402

GAPS_S = (0.001, 0.002, 0.003, 0.005, 0.007, 0.01, 0.014, 0.02, 0.05, 0.1)


def main() -> None:
    out = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    with RankPool(2) as pool:
        per_rank = pool.run(cold_call_probe, gaps_s=GAPS_S, reps=reps)
    Path(out).write_text(json.dumps(per_rank))
    fit = fit_cold_call(per_rank)
    shortest = np.min([r["after_call_s"] for r in per_rank], axis=0)
    print(f"after a call: median {np.median(shortest) * 1e3:.3f} ms, trimmed mean {fit['after_call_s'] * 1e3:.3f} ms")
    for k, g in enumerate(GAPS_S):
        d = np.min([r["after_compute_s"][k] for r in per_rank], axis=0)
        slow = float(np.mean(d > 2e-3))
        print(
            f"after {g * 1e3:5.1f} ms of compute: median {np.median(d) * 1e3:6.3f} ms, extra (trimmed mean) "
            f"{fit['extra_s'][k] * 1e3:+6.3f} ms, calls over 2 ms {slow:4.0%}"
        )
    three = [
        dict(
            r, gaps_s=[r["gaps_s"][i] for i in (1, 7, 9)], after_compute_s=[r["after_compute_s"][i] for i in (1, 7, 9)]
        )
        for r in per_rank
    ]
    for name, f in (("calibrate's gaps (2, 20, 100 ms)", fit_cold_call(three)), ("all gaps", fit)):
        a, tau = f["cold_call_s"] * 1e3, f["cold_tau_s"] * 1e3
        at = {g: a * -np.expm1(-g / tau) if tau else 0.0 for g in (3, 5, 10)}
        print(
            f"fit to {name}: {a:.2f} ms x (1 - exp(-idle / {tau:.1f} ms)); at 3/5/10 ms: "
            + ", ".join(f"{v:+.2f}" for v in at.values())
        )


if __name__ == "__main__":
    main()
