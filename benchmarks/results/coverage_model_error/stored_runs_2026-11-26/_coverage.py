"""What the three scripts here share: every stored cell's rows, their 80 % intervals recomputed with another
model-error term (in quadrature on the log scale: an approximation, no re-simulation), counted as stored and as
recomputed. Judged only: nothing is fitted to the rows."""

import glob
import json
import math
import statistics as st
from collections.abc import Callable

Z = 1.2815515655446004  # the 90th normal percentile: an 80 % interval is +-Z sd


def stored_model_sd(rows: list[dict]) -> float:
    """The model-error term the stored intervals carry (named in their sources, in %)."""
    ms = [s for s in rows[0]["interval_sources"] if s.startswith("model error")]
    return float(ms[0].split("(")[1].split("%")[0]) / 100 if ms else 0.0


def covered(r: dict, add: float) -> bool:
    """Row ``r``'s measured median inside its interval with ``add`` (a variance, log scale) added to each side."""
    p, lo, hi, m = r["predicted_step_s"], r["predicted_p10_s"], r["predicted_p90_s"], r["measured_median_s"]
    w_lo = math.sqrt(max(math.log(p / lo) ** 2 + add, 1e-12))
    w_hi = math.sqrt(max(math.log(hi / p) ** 2 + add, 1e-12))
    return p * math.exp(-w_lo) <= m <= p * math.exp(w_hi)


def recompute(runs: list[str], new_sd: Callable[[str, list[dict], float], tuple[Callable[[dict], float], str]]) -> None:
    """Print, per cell of ``runs`` (accuracy_matrix_<run>), the coverage as stored and with ``new_sd(cell_dir,
    rows, stored_sd)`` = (the new term of a row, a note), then the cells in 75-90 %, the mean distance from
    82.5 % and the pooled coverage, each as stored and recomputed."""
    inband, dist, pooled = [0, 0], [[], []], [[0, 0], [0, 0]]
    for run in runs:
        for cell in sorted(glob.glob(f"benchmarks/results/accuracy_matrix_{run}/*/")):
            try:
                rows = json.load(open(cell + "validation.json"))["rows"]
            except FileNotFoundError:
                continue
            mc = stored_model_sd(rows)
            sd_of, note = new_sd(cell, rows, mc)
            cov = [
                sum(covered(r, 0.0) for r in rows),
                sum(covered(r, (Z * sd_of(r)) ** 2 - (Z * mc) ** 2) for r in rows),
            ]
            n = len(rows)
            for i in (0, 1):
                c = cov[i] / n * 100
                inband[i] += 75 <= c <= 90
                dist[i].append(abs(c - 82.5))
                pooled[i][0] += cov[i]
                pooled[i][1] += n
            print(f"{cell.split('results/')[1][:42]:42s} {note} cov {cov[0] / n * 100:3.0f} -> {cov[1] / n * 100:3.0f}")
    print(
        "in band",
        inband,
        "mean dist",
        [round(st.mean(x), 1) for x in dist],
        "pooled",
        [round(a / b * 100, 1) for a, b in pooled],
    )
