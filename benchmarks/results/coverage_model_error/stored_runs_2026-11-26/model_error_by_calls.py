"""Coverage of stored runs with the model-error term per row interpolated (in log buckets) between the coarse
probe's |residual| and the fine (per-parameter) probe's, by the row's bucket count. Usage: python
model_error_by_calls.py RUN...  Approximate (quadrature on the log scale, no re-simulation); judged only."""

import glob
import json
import math
import statistics as st
import sys

Z = 1.2815515655446004
inband = [0, 0]
pooled = [[0, 0], [0, 0]]
dist = [[], []]
for run in sys.argv[1:]:
    for cell in sorted(glob.glob(f"benchmarks/results/accuracy_matrix_{run}/*/")):
        pf = glob.glob(cell + "validation.params*.json")
        if not pf:
            continue
        ins = json.load(open(pf[0]))["probes"]["in_step"]
        pts = []
        for part in (ins, ins.get("fine") or {}):
            try:
                pts.append(
                    (
                        float(part["measured"]["n_buckets"]),
                        abs(math.log(part["simulated_at_fit"]["step_s"] / part["measured"]["step_s"])),
                    )
                )
            except Exception:
                pass
        pts.sort()
        d = json.load(open(cell + "validation.json"))
        rows = d["rows"]
        ms = [s for s in rows[0]["interval_sources"] if s.startswith("model error")]
        mc = float(ms[0].split("(")[1].split("%")[0]) / 100 if ms else 0
        cov = [0, 0]
        for r in rows:
            nb = max(1, r["n_buckets"])
            if len(pts) == 2 and pts[1][0] > pts[0][0]:
                (n0, a0), (n1, a1) = pts
                x = min(1, max(0, (math.log(nb) - math.log(n0)) / (math.log(n1) - math.log(n0))))
                mn = a0 + (a1 - a0) * x
            else:
                mn = mc
            p = r["predicted_step_s"]
            lo = r["predicted_p10_s"]
            hi = r["predicted_p90_s"]
            m = r["measured_median_s"]
            cov[0] += lo <= m <= hi
            w_lo = math.log(p / lo)
            h = math.log(hi / p)
            add = (Z * mn) ** 2 - (Z * mc) ** 2
            w_lo2 = math.sqrt(max(w_lo * w_lo + add, 1e-12))
            h2 = math.sqrt(max(h * h + add, 1e-12))
            cov[1] += p * math.exp(-w_lo2) <= m <= p * math.exp(h2)
        n = len(rows)
        for i in (0, 1):
            c = cov[i] / n * 100
            inband[i] += 75 <= c <= 90
            dist[i].append(abs(c - 82.5))
            pooled[i][0] += cov[i]
            pooled[i][1] += n
        print(
            f"{cell.split('results/')[1][:42]:42s} pts {[(int(a), round(b * 100, 1)) for a, b in pts]} model {mc * 100:4.1f} cov {cov[0] / n * 100:3.0f} -> {cov[1] / n * 100:3.0f}"
        )
print(
    "in band",
    inband,
    "mean dist",
    [round(st.mean(x), 1) for x in dist],
    "pooled",
    [round(a / b * 100, 1) for a, b in pooled],
)
