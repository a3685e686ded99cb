"""Coverage of stored runs with the in-step probe's own measurement noise (bootstrap variance of its log median
step, and of its compute-only median times the compute share) subtracted from the model-error term's variance.
Usage (repository root on PYTHONPATH): python subtract_probe_noise.py RUN...  Approximate (quadrature on the
log scale, no re-simulation); judged only."""

import glob
import gzip
import json
import math
import statistics as st
import sys

import numpy as np

from calibration.timeline import across_ranks_timelines, step_terms
from realrun.step_record import timeline_mapping

Z = 1.2815515655446004


def logmed_var(xs, rng, n=400):
    xs = np.asarray(xs, float)
    if len(xs) < 2:
        return 0.0
    meds = [np.log(np.median(xs[rng.integers(len(xs), size=len(xs))])) for _ in range(n)]
    return float(np.var(meds))


def probe_noise(rec):
    rec = timeline_mapping(rec)
    terms = [step_terms(tl) for tl in across_ranks_timelines(rec)]
    steps = [t["step_s"] for t in terms]
    comp = [t["compute_s"] for t in terms]
    base = list(rec.get("compute_step_times_s") or ())
    rng = np.random.default_rng(0)
    share = st.median(comp) / st.median(steps)
    return logmed_var(steps, rng) + share**2 * logmed_var(base, rng), len(steps), len(base)


out = {}
inband = [0, 0]
pooled = [[0, 0], [0, 0]]
dist = [[], []]
for run in sys.argv[1:]:
    for cell in sorted(glob.glob(f"benchmarks/results/accuracy_matrix_{run}/*/")):
        cal = glob.glob(cell + "validation.calibration*.jsonl.gz")
        if not cal:
            continue
        noise = []
        for line in gzip.open(cal[0], "rt"):
            r = json.loads(line)
            if r.get("kind") in ("step_probe", "step_probe_fine"):
                tl = r["timeline"]
                if isinstance(tl, str):
                    tl = json.loads(tl)
                noise.append(probe_noise(tl))
        d = json.load(open(cell + "validation.json"))
        rows = d["rows"]
        ms = [s for s in rows[0]["interval_sources"] if s.startswith("model error")]
        mc = float(ms[0].split("(")[1].split("%")[0]) / 100 if ms else 0
        nv = st.mean(n[0] for n in noise) if noise else 0
        mn = math.sqrt(max(0.0, mc * mc - nv))
        cov = [0, 0]
        for r in rows:
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
            f"{cell.split('results/')[1][:42]:42s} probe noise sd {math.sqrt(nv) * 100:4.1f}% (steps {[x[1] for x in noise]}) model {mc * 100:4.1f}->{mn * 100:4.1f} cov {cov[0] / n * 100:3.0f} -> {cov[1] / n * 100:3.0f}"
        )
print(
    "in band",
    inband,
    "mean dist",
    [round(st.mean(x), 1) for x in dist],
    "pooled",
    [round(a / b * 100, 1) for a, b in pooled],
)
