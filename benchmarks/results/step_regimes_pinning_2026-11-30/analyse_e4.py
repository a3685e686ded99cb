"""Rule E4 (rules.txt): slow shares of the free, "mains" and "cross" launches against E3's threshold.
usage: python analyse_e4.py e4_*.jsonl (E3's free launches are read for the threshold)"""

import glob
import json
import sys

import numpy as np


def steps(p):
    return np.array(json.loads(open(p).readline())["step_times_s"]) * 1e3


thr = 1.6 * np.percentile(np.concatenate([steps(p) for p in sorted(glob.glob("e3_*_free.jsonl"))]), 10)
share: dict = {}
for p in sorted(sys.argv[1:], key=lambda s: int(s.split("_")[1])):
    m = p.rsplit("_", 1)[1].split(".")[0]
    t = steps(p)
    s = t > thr
    share.setdefault(m, []).append(float(s.mean()))
    seg = [round(float(x.mean()) * 100) for x in np.array_split(s, 6)]
    print(
        f"{p}: {m}, median {np.median(t):.2f} ms, mean {t.mean():.2f}, p10 {np.percentile(t, 10):.2f}, "
        f"slow {s.mean() * 100:.0f} %, segments {seg}"
    )
print(
    f"threshold {thr:.2f} ms; slow shares " + "; ".join(f"{m} {[round(x * 100) for x in v]}" for m, v in share.items())
)
f, q = np.median(share["free"]), np.median(share["mains"])
if max(share["mains"]) < 0.2 and max(share["mains"]) < min(share["free"]):
    print("outcome: claim holds")
elif q >= 0.8 * f:
    print("outcome: refuted")
else:
    print("outcome: inconclusive")
