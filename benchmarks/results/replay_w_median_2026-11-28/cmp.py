"""Side by side, per cell: median / worst |error|, signed median and coverage of several replays of one matrix.

python cmp.py REPLAY_A REPLAY_B [...]     (folders of benchmarks/replay_matrix.sh, or of a matrix run)
"""

import glob
import json
import statistics
import sys


def load(d):
    return {f.split("/")[-2]: json.load(open(f)) for f in glob.glob(d + "/*/validation.json")}


runs = [load(d) for d in sys.argv[1:]]
for c in sorted(set(runs[0]) & set(runs[-1])):
    cols = []
    for r in runs:
        v = r.get(c)
        if not v:
            cols.append("   -   ")
            continue
        errs = [row["error_pct"] for row in v["rows"] if row.get("error_pct") is not None]
        cov = (v.get("interval_coverage") or 0) * 100
        cols.append(
            f"{v['median_abs_error_pct']:5.2f}/{v['worst_abs_error_pct']:5.2f} "
            f"sgn{statistics.median(errs):+5.2f} cov{cov:3.0f}"
        )
    print(f"{c:>20}  " + "  |  ".join(cols))
