"""Coverage of the 80 % interval per cell under four uncertainty rules, on a stored matrix (compute only).

    git apply benchmarks/results/tried_not_adopted/interval_drift_removed.patch   # variant B needs it
    .venv/bin/python benchmarks/results/tried_not_adopted/interval_variants.py benchmarks/results/accuracy_matrix_m6

old: as shipped; B: the compute term from the jitter of neighbouring compute-only steps (drift removed);
C: the model error as the RMS of both in-step probes' step residuals (not the coarse one's alone); BC: both.
Printed per cell: coverage and the median half-width of the interval, in % of the prediction.
"""

import gzip
import json
import math
import statistics as st
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from calibration.params import Params, probe_step_residual  # noqa: E402
from calibration.validate import check_profile_matches  # noqa: E402
from simulator.interval import step_interval  # noqa: E402
from simulator.strategies import StrategySpec  # noqa: E402

tot: dict[str, list[float]] = {}
for cell in sorted(Path(sys.argv[1]).glob("*/")):
    params = Params.load(next(cell.glob("validation.params*.json")))
    ins = (params.probes or {}).get("in_step") or {}
    res = [probe_step_residual(ins)] + ([probe_step_residual(ins["fine"])] if ins.get("fine") else [])
    rms = math.sqrt(sum(x * x for x in res) / len(res))
    recs = [json.loads(line) for line in gzip.open(cell / "validation.jsonl.gz", "rt")]
    recs = [r for r in recs if r.get("kind") == "validation_row"]
    prof = check_profile_matches(params, recs[0]["model"], None)
    cost = params.cost_model(world_size=2)
    hits: dict[str, list[bool]] = {}
    width: dict[str, list[float]] = {}
    for r in recs:
        v = r["validation"]
        cfg = StrategySpec(v["strategy"], bucket_mb=v.get("bucket_mb"))
        comp = [float(t) for t in r["compute_step_times_s"]]
        scaled = prof.scaled(st.median(comp) / prof.compute_s)
        m, n = st.median(r["step_times_s"]), len(r["step_times_s"])
        old = params.uncertainty(comp, world_size=2)
        b = params.uncertainty(comp, world_size=2, drift_shared=True)
        variants = {"old": old, "B": b, "C": replace(old, model_log_sd=rms), "BC": replace(b, model_log_sd=rms)}
        for k, u in variants.items():
            iv = step_interval(scaled, cost, cfg, 2, u, steps=n)
            hits.setdefault(k, []).append(iv.lo_s <= m <= iv.hi_s)
            width.setdefault(k, []).append((iv.hi_s - iv.lo_s) / 2 / iv.median_s * 100)
    line = "  ".join(f"{k} {100 * sum(h) / len(h):3.0f}% (+-{st.median(width[k]):4.1f})" for k, h in hits.items())
    print(f"{cell.name:<20} {line}", flush=True)
    for k, h in hits.items():
        tot.setdefault(k, []).append(100 * sum(h) / len(h))
print("cells in 75-90%:", {k: sum(75 <= x <= 90 for x in v) for k, v in tot.items()}, end="")
print(
    "  >90:",
    {k: sum(x > 90 for x in v) for k, v in tot.items()},
    " <75:",
    {k: sum(x < 75 for x in v) for k, v in tot.items()},
)
