"""Rule E9: run e9_tasks.e9 on 2 gloo ranks (loopback); raw times to OUT, medians printed.
usage (from this folder): python run_e9.py OUT.json [turns] [block]"""

import json
import sys

import numpy as np
from e9_tasks import MODES, e9

from realrun.launch import RankPool

out = sys.argv[1]
turns = int(sys.argv[2]) if len(sys.argv) > 2 else 30
block = int(sys.argv[3]) if len(sys.argv) > 3 else 10
with RankPool(2, timeout_s=600) as pool:
    res = pool.run(e9, turns, block)
json.dump(res, open(out, "w"))
rng = np.random.default_rng(0)
print(f"{turns} turns of {block} steps a mode; per step the slower rank's time, median (95 % bootstrap), p10-p90")
med = {}
for m in MODES:
    for k, name in enumerate(("forward", "backward", "optimizer")):
        v = np.maximum(*[np.array([s[k] for s in r["steps"][m]]) for r in res]) * 1e3
        boot = np.median(rng.choice(v, (2000, len(v))), axis=1)
        lo, hi = np.percentile(boot, [2.5, 97.5])
        med[m, name] = float(np.median(v))
        print(
            f"  {m:13s} {name:9s} {np.median(v):.3f} ms (95 % {lo:.3f}..{hi:.3f}), p10-p90 "
            f"{np.percentile(v, 10):.3f}..{np.percentile(v, 90):.3f}"
        )
print(f"  ddp_noop - bare, backward: {med['ddp_noop', 'backward'] - med['bare', 'backward']:+.3f} ms")
print(f"  ddp_allreduce - ddp_noop, backward: {med['ddp_allreduce', 'backward'] - med['ddp_noop', 'backward']:+.3f} ms")
