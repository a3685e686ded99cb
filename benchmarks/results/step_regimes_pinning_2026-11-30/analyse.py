"""Rule E3 (rules.txt): slow shares of the free and pinned launches, and where the free launches' threads ran.
usage: python analyse.py e3_*.jsonl"""

import json
import sys

import numpy as np

runs = []
for p in sorted(sys.argv[1:], key=lambda s: int(s.split("_")[1])):
    mode = "pin" if p.endswith("_pin.jsonl") else "free"
    t = np.array(json.loads(open(p).readline())["step_times_s"]) * 1e3
    runs.append((p, mode, t))
thr = 1.6 * np.percentile(np.concatenate([t for _, m, t in runs if m == "free"]), 10)
share = {"free": [], "pin": []}
for p, m, t in runs:
    s = t > thr
    share[m].append(float(s.mean()))
    seg = [round(float(x.mean()) * 100) for x in np.array_split(s, 6)]
    smp = json.load(open(p + ".samples.json"))["samples"]
    # run time (clock ticks) of each rank's threads by CPU, summed over the launch
    by = {}
    for row in smp:
        for r, pc in row["ranks"].items():
            for c, d in pc.items():
                by.setdefault(r, {}).setdefault(c, 0)
                by[r][c] += d
    print(
        f"{p}: {m}, median {np.median(t):.2f} ms, mean {t.mean():.2f}, p10 {np.percentile(t, 10):.2f}, "
        f"slow {s.mean() * 100:.0f} %, segments {seg}; ticks by rank by cpu {by}"
    )
f, q = np.median(share["free"]), np.median(share["pin"])
every = max(share["pin"]) < min(share["free"])
print(
    f"threshold {thr:.2f} ms; free slow shares {[round(x * 100) for x in share['free']]}, "
    f"pin {[round(x * 100) for x in share['pin']]}; medians {f * 100:.0f} / {q * 100:.0f} %"
)
if every and q < 0.5 * f:
    print("outcome: claim holds")
elif q >= 0.8 * f:
    print("outcome: refuted")
else:
    print("outcome: inconclusive")
