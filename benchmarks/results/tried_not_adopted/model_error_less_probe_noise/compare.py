"""Per cell, median / worst |error| and the 80 % interval's coverage of two versions of one matrix.

    python compare.py BEFORE AFTER

BEFORE: a matrix folder (cells with validation.json) or a table written by benchmarks/accuracy_table.py;
AFTER: a matrix folder. Prints one line per cell and the count of cells with coverage in 75-90 %.
"""

import glob
import json
import re
import sys

ROW = re.compile(r"\| (\S+) \| (tbf (\d+) Mbit/s|loopback) \| \d+ \| ([\d.]+)% \| [^|]* \| ([\d.]+)% [^|]*\| (\d+)% \|")


def from_folder(folder: str) -> dict[str, tuple[float, float, float]]:
    out = {}
    for path in glob.glob(folder + "/*/validation.json"):
        with open(path) as f:
            v = json.load(f)
        cov = v["interval_coverage"]
        out[path.split("/")[-2]] = (v["median_abs_error_pct"], v["worst_abs_error_pct"], cov * 100 if cov <= 1 else cov)
    return out


def from_table(path: str) -> dict[str, tuple[float, float, float]]:
    out = {}
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m:
                out[f"{m.group(1)}-{m.group(3) or 'loopback'}"] = (
                    float(m.group(4)),
                    float(m.group(5)),
                    float(m.group(6)),
                )
    return out


def in_band(coverage: float) -> bool:
    return 75 <= coverage <= 90


def main() -> None:
    before = from_table(sys.argv[1]) if sys.argv[1].endswith(".md") else from_folder(sys.argv[1])
    after = from_folder(sys.argv[2])
    both = sorted(k for k in after if k in before)
    for k in both:
        x, y = before[k], after[k]
        print(f"{k:22s} {x[0]:5.2f}/{x[1]:6.2f} ({x[2]:3.0f}) -> {y[0]:5.2f}/{y[1]:6.2f} ({y[2]:3.0f})")
    n0 = sum(in_band(before[k][2]) for k in both)
    n1 = sum(in_band(after[k][2]) for k in both)
    print("in band", n0, "->", n1, "of", len(both))


if __name__ == "__main__":
    main()
