"""Two or more replays (or runs) of the same accuracy-matrix cells side by side: per cell median / worst |error|
and the 80 % interval coverage (* where both error goals are met), then the mean signed error of each
configuration over the cells. Nothing is measured.

    python compare_replays.py RUN_OR_REPLAY_DIR...
"""

import json
import statistics
import sys
from pathlib import Path

dirs = [Path(a) for a in sys.argv[1:]]
cells = sorted({c.name for d in dirs for c in d.iterdir() if (c / "validation.json").exists()})


def rows(d, c):
    p = d / c / "validation.json"
    if not p.exists():
        return None
    return json.loads(p.read_text())["rows"]


def key(r):
    return f"{r['strategy']} {r.get('bucket_mb') if r.get('bucket_mb') is not None else ''}".strip()


print("cell".ljust(18) + "".join(f"{d.name[-14:]:>24}" for d in dirs))
for c in cells:
    line = c.ljust(18)
    for d in dirs:
        rs = rows(d, c)
        if rs is None:
            line += f"{'-':>24}"
            continue
        e = [abs(r["error_pct"]) for r in rs]
        cov = [
            r["predicted_p10_s"] <= r["measured_median_s"] <= r["predicted_p90_s"]
            for r in rs
            if r.get("predicted_p10_s") is not None
        ]
        ok = statistics.median(e) < 3 and max(e) < 10
        line += f"{statistics.median(e):6.2f}/{max(e):6.2f} {100 * sum(cov) / max(len(cov), 1):4.0f}%{'*' if ok else ' '}".rjust(
            24
        )
    print(line)
print()
allk = []
for c in cells:
    for d in dirs:
        for r in rows(d, c) or []:
            if key(r) not in allk:
                allk.append(key(r))
print("mean signed error per config over cells".ljust(30) + "".join(f"{d.name[-14:]:>16}" for d in dirs))
for k in allk:
    line = k.ljust(30)
    for d in dirs:
        v = [r["error_pct"] for c in cells for r in (rows(d, c) or []) if key(r) == k]
        line += f"{statistics.mean(v):+16.2f}" if v else f"{'-':>16}"
    print(line)
