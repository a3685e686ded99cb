"""Coverage of stored runs with the in-step probe's own measurement noise (bootstrap variance of its log median
step, and of its compute-only median times the compute share) subtracted from the model-error term's variance.
Usage, from the repository root with it on PYTHONPATH: python .../subtract_probe_noise.py RUN..."""

import glob
import gzip
import json
import math
import os
import statistics as st
import sys

import numpy as np

from calibration.timeline import across_ranks_timelines, step_terms
from realrun.step_record import timeline_mapping

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _coverage import recompute  # noqa: E402


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
    return logmed_var(steps, rng) + share**2 * logmed_var(base, rng), len(steps)


def less_noise(cell, rows, mc):
    noise = []
    for cal in glob.glob(cell + "validation.calibration*.jsonl.gz")[:1]:
        for line in gzip.open(cal, "rt"):
            r = json.loads(line)
            if r.get("kind") in ("step_probe", "step_probe_fine"):
                tl = r["timeline"]
                noise.append(probe_noise(json.loads(tl) if isinstance(tl, str) else tl))
    nv = st.mean(n[0] for n in noise) if noise else 0.0
    mn = math.sqrt(max(0.0, mc * mc - nv))
    steps = [n[1] for n in noise]
    return (
        lambda r: mn
    ), f"probe noise sd {math.sqrt(nv) * 100:4.1f}% (steps {steps}) model {mc * 100:4.1f}->{mn * 100:4.1f}"


recompute(sys.argv[1:], less_noise)
