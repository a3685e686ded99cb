"""Rule E5 (rules.txt): are the free launches' slow steps what both main threads on one core give?
usage: python analyse_e5.py e5_*.jsonl (E3's free launches are read for the threshold)"""

import glob
import json
import sys

import numpy as np


def steps(p):
    return np.array(json.loads(open(p).readline())["step_times_s"]) * 1e3


thr = 1.6 * np.percentile(np.concatenate([steps(p) for p in sorted(glob.glob("e3_*_free.jsonl"))]), 10)
share: dict = {}
meds: dict = {}
slow_free = []
for p in sorted(sys.argv[1:], key=lambda s: int(s.split("_")[1])):
    m = p.rsplit("_", 1)[1].split(".")[0]
    t = steps(p)
    s = t > thr
    share.setdefault(m, []).append(float(s.mean()))
    meds.setdefault(m, []).append(float(np.median(t)))
    if m == "free":
        slow_free.extend(t[s])
    print(
        f"{p}: {m}, median {np.median(t):.2f} ms, mean {t.mean():.2f}, p10 {np.percentile(t, 10):.2f}, "
        f"slow {s.mean() * 100:.0f} %, slow steps' median {np.median(t[s]) if s.any() else float('nan'):.2f} ms"
    )
ref = float(np.median(slow_free))
tm = float(np.median(meds["together"]))
print(
    f"threshold {thr:.2f} ms; free launches' slow steps: median {ref:.2f} ms; together: slow shares "
    f"{[round(x * 100) for x in share['together']]}, medians {[round(x, 2) for x in meds['together']]}"
)
if min(share["together"]) > 0.9 and all(abs(x / ref - 1) <= 0.25 for x in meds["together"]):
    print("outcome: claim holds")
elif np.median(share["together"]) < 0.6 or not 0.67 <= tm / ref <= 1.5:
    print("outcome: refuted")
else:
    print("outcome: inconclusive")
