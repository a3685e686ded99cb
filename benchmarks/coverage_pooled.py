"""The 80 % interval's coverage pooled over accuracy-matrix runs, and what a per-cell band can show.

    python benchmarks/coverage_pooled.py benchmarks/results/accuracy_matrix_m15link benchmarks/results/accuracy_matrix_m16loop ...
    python benchmarks/coverage_pooled.py --check-rows 2,3,8 [--estimator rms|meanabs|medabs] <run folders>

Per run folder (cells ``*/validation.json`` from ``accuracy_matrix.sh``): the measured medians inside the
predicted 80 % interval over all rows, and the cells whose own coverage is in issue 10's band (75-90 %).
Then the chance that a cell of n rows lands in the band when every row is covered independently with
probability 0.8 (a perfectly calibrated interval): the best a per-cell band can do.

Then, for each ``--check-rows`` k, the same chance when the interval's width is not known but estimated as
the intervals' model-error term is (``calibration.sharded_probe.step_check_residual``): the root mean square
of k residuals drawn from the same distribution as the rows' errors, the interval +-1.2816 times it (a
normal's 80 %). Seeded simulation, normal errors and Student-t errors of 3 degrees of freedom (heavy tails,
as the stored cells' rows have: most within 0.5 %, a few 3-10 %). Only the model-error term is drawn; the
other sources (``simulator.interval``) widen a real interval beyond it. k = 0 stands for a width known
exactly (the RMS of the error distribution itself).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.validate import COVERAGE_BAND as BAND  # noqa: E402
from calibration.validate import coverage_band_chance  # noqa: E402

Z80 = 1.2815515655446004  # a normal's two-sided 80 % quantile


def in_band(share: float) -> bool:
    return BAND[0] <= share <= BAND[1]


# a normal's standard deviation from k residuals: their RMS, or (robust) their mean or median absolute value scaled
ESTIMATORS = {
    "rms": lambda r: np.sqrt(np.mean(r**2, axis=1)),
    "meanabs": lambda r: np.sqrt(np.pi / 2) * np.mean(np.abs(r), axis=1),
    "medabs": lambda r: np.median(np.abs(r), axis=1) / 0.6744897501960817,
}


def band_chance_estimated_width(
    n_rows: int, k: int, dist: str, trials: int = 20000, seed: int = 0, estimator: str = "rms"
) -> tuple[float, float, float, float]:
    """(in band, mean coverage, over-covered, under-covered) over ``trials`` simulated cells of ``n_rows``
    independent errors, each judged against +-Z80 times the spread ``estimator`` makes of ``k`` residuals of the
    same distribution (``k`` = 0: the distribution's own RMS). ``dist``: "normal" or "t3"."""
    rng = np.random.default_rng([seed, n_rows, k])
    draw = {"normal": rng.standard_normal, "t3": lambda size: rng.standard_t(3, size)}[dist]
    err = draw((trials, n_rows))
    if k == 0:
        width = np.full(trials, np.sqrt(3.0) if dist == "t3" else 1.0)
    else:
        width = ESTIMATORS[estimator](draw((trials, k)))
    cov = np.mean(np.abs(err) <= Z80 * width[:, None], axis=1)
    band = (cov >= BAND[0]) & (cov <= BAND[1])
    return float(band.mean()), float(cov.mean()), float((cov > BAND[1]).mean()), float((cov < BAND[0]).mean())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", help="accuracy-matrix run folders (cells */validation.json)")
    ap.add_argument(
        "--check-rows",
        default="",
        help="comma-separated k: the band's chance with the width estimated from k residuals (0: known width)",
    )
    ap.add_argument(
        "--estimator",
        choices=sorted(ESTIMATORS),
        default="rms",
        help="the width from k residuals: their RMS (the model-error term's), or their mean or median absolute value",
    )
    a = ap.parse_args(argv)
    ks = [int(x) for x in a.check_rows.split(",") if x.strip()]
    if any(k < 0 for k in ks):
        sys.exit("--check-rows: each k must be a whole number >= 0")
    tot_in = tot_n = cells_in = cells = 0
    sizes = []
    for d in a.dirs:
        r_in = r_n = c_in = c_n = 0
        for f in sorted(Path(d).glob("*/validation.json")):
            rows = [r for r in json.loads(f.read_text())["rows"] if r.get("predicted_p10_s") is not None]
            if not rows:
                continue  # a cell predicted without intervals (an old run) counts nowhere
            k = sum(r["predicted_p10_s"] <= r["measured_median_s"] <= r["predicted_p90_s"] for r in rows)
            r_in, r_n, c_n = r_in + k, r_n + len(rows), c_n + 1
            c_in += in_band(k / len(rows))
            sizes.append(len(rows))
        if not r_n:
            print(f"{d}: no cell with intervals")
            continue
        print(f"{d}: {r_in} of {r_n} rows covered ({r_in / r_n:.0%}); cells in 75-90 %: {c_in} of {c_n}")
        tot_in, tot_n, cells_in, cells = tot_in + r_in, tot_n + r_n, cells_in + c_in, cells + c_n
    if not tot_n:
        sys.exit("no cells with intervals in the folders given")
    print(f"all: {tot_in} of {tot_n} rows covered ({tot_in / tot_n:.1%}); cells in 75-90 %: {cells_in} of {cells}")
    for n in sorted(set(sizes)):
        p = coverage_band_chance(n)
        print(f"a calibrated 80 % interval, {n} independent rows: the cell lands in 75-90 % with probability {p:.2f}")
    if ks:
        print()
        print(
            "| rows a cell | errors | width from k residuals | cells in 75-90 % | mean coverage | over 90 % | under 75 % |"
        )
        print("|---|---|---|---|---|---|---|")
        for n in sorted(set(sizes)):
            for dist in ("normal", "t3"):
                for k in ks:
                    band, mean, over, under = band_chance_estimated_width(n, k, dist, estimator=a.estimator)
                    kk = "known" if k == 0 else str(k)
                    print(f"| {n} | {dist} | {kk} | {band:.0%} | {mean:.0%} | {over:.0%} | {under:.0%} |")


if __name__ == "__main__":
    main()
