"""A tune --verify run's rows judged by what tune recommended: where it said "keep the default", the default's
measured median against the best measured (the verify of that version judged the best round cap instead).

    python benchmarks/results/tune_verify_before_keep_default_fix/rejudge.py DIR   # DIR/*/tune.json
"""

import glob
import json
import sys

for f in sorted(glob.glob(sys.argv[1] + "/*/tune.json")):
    d = json.load(open(f))
    rows = {r["setting"]: r["measured_median_s"] for r in d["verify"]["rows"]}
    best = min(rows, key=rows.__getitem__)
    judged = "default" if d.get("keep_default") else "recommended"
    pct = (rows[judged] - rows[best]) / rows[best] * 100
    rec = "keep the default" if d.get("keep_default") else f"{d['recommended_bucket_mb']:g} MiB"
    print(f"{f.split('/')[-2]:42s} {rec:17s} {judged} vs best measured ({best}): {pct:+.2f}%")
