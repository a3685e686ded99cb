"""Coverage of stored runs with the model-error term per row interpolated (in log bucket count) between the
coarse probe's |residual| and the fine (per-parameter) probe's, by the row's bucket count. Usage, from the
repository root: python .../model_error_by_calls.py RUN..."""

import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _coverage import recompute  # noqa: E402


def by_calls(cell, rows, mc):
    pf = glob.glob(cell + "validation.params*.json")
    ins = json.load(open(pf[0]))["probes"]["in_step"] if pf else {}
    pts = []
    for part in (ins, ins.get("fine") or {}):
        try:
            res = math.log(part["simulated_at_fit"]["step_s"] / part["measured"]["step_s"])
            pts.append((float(part["measured"]["n_buckets"]), abs(res)))
        except (KeyError, TypeError, ValueError):
            pass
    pts.sort()

    def sd(r):
        if len(pts) < 2 or pts[1][0] <= pts[0][0]:
            return mc
        (n0, a0), (n1, a1) = pts
        x = min(1.0, max(0.0, (math.log(max(1, r["n_buckets"])) - math.log(n0)) / (math.log(n1) - math.log(n0))))
        return a0 + (a1 - a0) * x

    return sd, f"pts {[(int(a), round(b * 100, 1)) for a, b in pts]} model {mc * 100:4.1f}"


recompute(sys.argv[1:], by_calls)
