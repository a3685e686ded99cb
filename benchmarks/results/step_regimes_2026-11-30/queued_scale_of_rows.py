"""Which queued-call latency scale would put each many-call row of a micro-DLRM loopback cell on its measured median:
the row predicted as validate predicts it (the profile rescaled to the compute-only median beside it, the cost as
turns of 10 see it), at scales from 0.1 to 1, and the scale where the prediction crosses the measured median (linear
between the grid's points). Measures nothing; reads a cell's validation.json and validation.params.json.

    python queued_scale_of_rows.py benchmarks/results/accuracy_matrix_m64loop/micro-dlrm-loopback ...
"""

import json
import sys
from pathlib import Path

import numpy as np

from calibration.params import Params
from calibration.validate import order_cost, rescaled_profile
from simulator.predict import predict
from simulator.strategies import StrategySpec

GRID = np.round(np.arange(0.1, 1.0001, 0.05), 2)
ROWS = [("individual", None), ("torch-ddp", 0.25), ("bucketed", 0.25), ("torch-ddp", 1.0), ("bucketed", 1.0)]

for cell in map(Path, sys.argv[1:]):
    params = Params.load(cell / "validation.params.json")
    v = json.loads((cell / "validation.json").read_text())
    rows = {(r["strategy"], r.get("bucket_mb")): r for r in v["rows"]}
    base = order_cost(params.cost_model(world_size=2), True, int(v.get("block") or 1))
    out = []
    for key in ROWS:
        r = rows[key]
        prof, _ = rescaled_profile(params.profile(), r["measured_compute_s"], True)
        spec = StrategySpec(key[0], bucket_mb=key[1])
        pred = [predict(prof, base.with_overrides(queued_latency_scale=float(q)), spec, 2).step_time_s for q in GRID]
        m = r["measured_median_s"]
        at = float(np.interp(m, pred, GRID)) if pred[0] <= m <= pred[-1] else None
        name = key[0] + ("" if key[1] is None else f" {key[1]:g}")
        out.append(f"{name} " + (f"x{at:.2f}" if at is not None else "outside x0.1-1"))
    print(f"{cell}: fitted x{base.queued_latency_scale:.2f}; the rows' medians at " + ", ".join(out))
