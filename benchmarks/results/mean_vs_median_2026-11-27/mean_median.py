"""The mean step against the median step of stored validation rows, and each row's prediction against both.

    python benchmarks/results/mean_vs_median_2026-11-27/mean_median.py CELL_DIR...

CELL_DIR: an accuracy-matrix cell (validation.json and validation.jsonl.gz, the steps as measured). Prints, per
cell, every row's predicted step, measured median, mean and 10 %-trimmed mean, the error against the median
(what validate reports) and against the mean (what a training run's throughput follows), and the cell's
median and worst |error| both ways. Reads stored files only; measures nothing.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np


def steps_of(cell: Path) -> dict[tuple[str, float | None], list[float]]:
    out: dict[tuple[str, float | None], list[float]] = {}
    with gzip.open(cell / "validation.jsonl.gz", "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("step_times_s") and r.get("strategy") and not r.get("bucket_cap_mb_list"):
                out.setdefault((r["strategy"], r.get("bucket_mb")), []).extend(r["step_times_s"])
    return out


def main(cells: list[str]) -> None:
    for c in map(Path, cells):
        rows = json.loads((c / "validation.json").read_text())["rows"]
        steps = steps_of(c)
        print(f"{c}")
        em, ea = [], []
        for row in rows:
            t = np.asarray(steps.get((row["strategy"], row.get("bucket_mb")), []))
            if not len(t):
                continue
            p, med, mean = row["predicted_step_s"], float(np.median(t)), float(np.mean(t))
            k = len(t) // 10
            trim = float(np.mean(np.sort(t)[k : len(t) - k]))
            em.append(abs(p / med - 1) * 100)
            ea.append(abs(p / mean - 1) * 100)
            print(
                f"  {row['strategy']:<10} {row.get('bucket_mb') or '':<5} pred {p * 1e3:7.2f}  median {med * 1e3:7.2f}  "
                f"mean {mean * 1e3:7.2f} (+{(mean / med - 1) * 100:4.1f} %)  trimmed {trim * 1e3:7.2f}  "
                f"err vs median {(p / med - 1) * 100:+6.1f} %  vs mean {(p / mean - 1) * 100:+6.1f} %  ({len(t)} steps)"
            )
        if em:
            print(
                f"  |error| median / worst: against the medians {np.median(em):.2f} / {max(em):.2f} %, "
                f"against the means {np.median(ea):.2f} / {max(ea):.2f} %"
            )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
