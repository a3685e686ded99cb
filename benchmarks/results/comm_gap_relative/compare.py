"""Two replays of the same stored matrices, cell by cell: median / worst abs. error and 80 % coverage, and
the totals issue 10 judges (cells meeting both error goals, cells with coverage in 75-90 %).

    python compare.py A_PREFIX B_PREFIX m5 m6 m7 m8link    (folders A_PREFIX_m5/<cell>/validation.json, ...)
"""

import json
import os
import sys


def cells(folder: str) -> dict[str, dict]:
    out = {}
    for c in sorted(os.listdir(folder)):
        p = os.path.join(folder, c, "validation.json")
        if os.path.exists(p):
            out[c] = json.load(open(p))
    return out


def fmt(d: dict) -> str:
    return f"{d['median_abs_error_pct']:5.2f} / {d['worst_abs_error_pct']:5.2f}% ({d['interval_coverage'] * 100:3.0f}%)"


def goals(d: dict) -> tuple[bool, bool]:
    cov = d["interval_coverage"]
    return d["median_abs_error_pct"] < 3 and d["worst_abs_error_pct"] < 10, 0.75 <= cov <= 0.90


a_pre, b_pre, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
print(f"A = {a_pre}, B = {b_pre}: median / worst abs. error (coverage of the 80 % interval)\n")
print("| run | cell | A | B |\n|---|---|---|---|")
tot = {}
for run in runs:
    a, b = cells(f"{a_pre}_{run}"), cells(f"{b_pre}_{run}")
    t = tot.setdefault(run, {"A": [0, 0, 0.0, 0.0], "B": [0, 0, 0.0, 0.0]})
    for c in a:
        if c not in b:
            continue
        print(f"| {run} | {c} | {fmt(a[c])} | {fmt(b[c])} |")
        for k, d in (("A", a[c]), ("B", b[c])):
            g = goals(d)
            t[k][0] += g[0]
            t[k][1] += g[1]
            if not c.startswith("micro-dlrm"):
                t[k][2] += d["median_abs_error_pct"]
                t[k][3] += d["worst_abs_error_pct"]
print(
    "\n| run | both error goals A / B | coverage in 75-90 % A / B | summed medians, non-DLRM A / B | summed worsts A / B |"
)
print("|---|---|---|---|---|")
for run, t in tot.items():
    A, B = t["A"], t["B"]
    print(f"| {run} | {A[0]} / {B[0]} | {A[1]} / {B[1]} | {A[2]:.1f} / {B[2]:.1f} | {A[3]:.1f} / {B[3]:.1f} |")
