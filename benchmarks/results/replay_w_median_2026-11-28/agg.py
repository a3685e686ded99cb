"""Totals over the link cells of runs m41, m39, m35 and m32, replayed with the fit of means (``r<run>_base``) and of
medians (``r<run>_wmed``), from the folder holding those replays.

    python agg.py r       (reads r41_base, r41_wmed, ..., r32_wmed)
"""

import glob
import json
import sys


def load(d):
    return {f.split("/")[-2]: json.load(open(f)) for f in glob.glob(d + "/*/validation.json")}


for tag in sys.argv[1:]:
    tot = {"base": [], "wmed": []}
    for run in ["41", "39", "35", "32"]:
        for k in tot:
            for c, v in load(f"{tag}{run}_{k}").items():
                if c.endswith("loopback"):
                    continue
                cov = v.get("interval_coverage") or 0
                tot[k].append((run, c, v["median_abs_error_pct"], v["worst_abs_error_pct"], cov))
    for k, rows in tot.items():
        n = len(rows)
        med = sum(r[2] for r in rows) / n
        worst = sum(r[3] for r in rows) / n
        ok = sum(r[2] < 3 and r[3] < 10 for r in rows)
        cov = sum(0.75 <= r[4] <= 0.90 for r in rows)
        print(
            f"{k}: {n} cells, mean median-err {med:.2f}%, mean worst {worst:.2f}%, "
            f"both error goals {ok}, coverage in band {cov}"
        )
    b = {(r[0], r[1]): r for r in tot["base"]}
    w = {(r[0], r[1]): r for r in tot["wmed"]}
    lower = sum(w[k][2] < b[k][2] for k in b)
    higher = sum(w[k][2] > b[k][2] for k in b)
    print("median err lower with wmed in", lower, "of", len(b), "; higher in", higher)
