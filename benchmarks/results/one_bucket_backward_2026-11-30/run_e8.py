"""Rule E8: run e8_tasks.e8 on 2 gloo ranks (loopback) and write the raw times and the medians.
usage (from this folder): python run_e8.py OUT.json [turns] [block]"""

import json
import sys

import numpy as np
from e8_tasks import MODES, e8

from realrun.launch import RankPool

out = sys.argv[1]
turns = int(sys.argv[2]) if len(sys.argv) > 2 else 30
block = int(sys.argv[3]) if len(sys.argv) > 3 else 10
with RankPool(2, timeout_s=600) as pool:
    res = pool.run(e8, turns, block)
json.dump(res, open(out, "w"))
rng = np.random.default_rng(0)
print(f"gradient bytes {res[0]['grad_bytes']}; {turns} turns of {block} steps a mode; per mode, the slower rank's")
bwd = {}
for m in MODES:
    # per step the later rank's backward (the ranks step in lock-step only where a call joins them)
    b = np.maximum(*[np.array([s[1] for s in r["steps"][m]]) for r in res]) * 1e3
    f = np.maximum(*[np.array([s[0] for s in r["steps"][m]]) for r in res]) * 1e3
    bwd[m] = b
    boot = np.median(rng.choice(b, (2000, len(b))), axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    print(
        f"  {m:9s} forward {np.median(f):.3f} ms, backward {np.median(b):.3f} ms (95 % {lo:.3f}..{hi:.3f}), p10-p90 "
        f"{np.percentile(b, 10):.3f}..{np.percentile(b, 90):.3f}, {len(b)} steps"
    )
for m in ("allreduce", "copy", "sleep", "none"):
    d = bwd[m][: len(bwd["tiny"])] - bwd["tiny"][: len(bwd[m])]
    print(f"  {m} - tiny: backward {np.median(bwd[m]) - np.median(bwd['tiny']):+.3f} ms (medians)")
