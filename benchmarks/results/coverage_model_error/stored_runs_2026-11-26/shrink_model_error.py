"""Coverage of stored runs with the model-error term shrunk toward a pooled value M0 with K pseudo-residuals:
sd^2 = (K M0^2 + 2 m^2) / (K + 2), m the cell's in-step residual RMS. Usage: python shrink_model_error.py M0 K RUN...
(M0 0, K 1e9: no model-error term at all). Intervals are changed in quadrature on the log scale (approximate,
no re-simulation); judged only, nothing fitted to the rows."""

import glob
import json
import math
import statistics as st
import sys

Z = 1.2815515655446004
m0 = float(sys.argv[1])
k = float(sys.argv[2])
runs = sys.argv[3:]
inband = [0, 0]
dist = [[], []]
pooled = [[0, 0], [0, 0]]
for run in runs:
    for f in sorted(glob.glob(f"benchmarks/results/accuracy_matrix_{run}/*/validation.json")):
        d = json.load(open(f))
        rows = d["rows"]
        src = rows[0]["interval_sources"]
        ms = [s for s in src if s.startswith("model error")]
        mc = float(ms[0].split("(")[1].split("%")[0]) / 100 if ms else 0
        # n residuals: 2
        mn = math.sqrt((k * m0 * m0 + 2 * mc * mc) / (k + 2))
        cov = [0, 0]
        for r in rows:
            p = r["predicted_step_s"]
            lo = r["predicted_p10_s"]
            hi = r["predicted_p90_s"]
            m = r["measured_median_s"]
            cov[0] += lo <= m <= hi
            # log-space widen: half-widths in log
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
            f"{f.split('results/')[1][:40]:40s} model {mc * 100:4.1f}->{mn * 100:4.1f}  cov {cov[0] / n * 100:3.0f} -> {cov[1] / n * 100:3.0f}"
        )
print(
    "in band",
    inband,
    "mean dist",
    [round(st.mean(x), 1) for x in dist],
    "pooled",
    [round(a / b * 100, 1) for a, b in pooled],
)
