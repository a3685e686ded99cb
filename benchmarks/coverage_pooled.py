"""The 80 % interval's coverage pooled over accuracy-matrix runs, and what a per-cell band can show.

    python benchmarks/coverage_pooled.py benchmarks/results/accuracy_matrix_m15link benchmarks/results/accuracy_matrix_m16loop ...

Per run folder (cells ``*/validation.json`` from ``accuracy_matrix.sh``): the measured medians inside the
predicted 80 % interval over all rows, and the cells whose own coverage is in issue 10's band (75-90 %).
Then the chance that a cell of n rows lands in the band when every row is covered independently with
probability 0.8 (a perfectly calibrated interval): the best a per-cell band can do.
"""

import json
import sys
from pathlib import Path

from scipy.stats import binom


def main(dirs: list[str]) -> None:
    tot_in = tot_n = cells_in = cells = 0
    sizes = []
    for d in dirs:
        r_in = r_n = c_in = c_n = 0
        for f in sorted(Path(d).glob("*/validation.json")):
            rows = [r for r in json.loads(f.read_text())["rows"] if r.get("predicted_p10_s") is not None]
            if not rows:
                continue  # a cell predicted without intervals (an old run) counts nowhere
            k = sum(r["predicted_p10_s"] <= r["measured_median_s"] <= r["predicted_p90_s"] for r in rows)
            r_in, r_n, c_n = r_in + k, r_n + len(rows), c_n + 1
            c_in += 0.75 <= k / len(rows) <= 0.90
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
        p = sum(binom.pmf(k, n, 0.8) for k in range(n + 1) if 0.75 <= k / n <= 0.90)
        print(f"a calibrated 80 % interval, {n} independent rows: the cell lands in 75-90 % with probability {p:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
