"""Prototype: the sharded step's extra per broadcast from torch DDP and sharded at one cap, interleaved, against
the model of a calibration's params. python proto_fit.py MODEL PARAMS CAP_MB STEPS"""

import sys

from calibration.params import Params
from realrun.bench_ddp import measure_interleaved
from realrun.launch import RankPool
from simulator.predict import predict
from simulator.strategies import StrategySpec

model, params, cap, steps = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
P = Params.load(params)
prof, cost = P.profile(), P.cost_model()
with RankPool(2, timeout_s=900) as pool:
    res = measure_interleaved(
        pool, model, [("compute", None), ("torch-ddp", cap), ("sharded", cap)], steps=steps, warmup=1, block=10
    )
comp, ddp, sh = (r.median_s for r in res)
scale = comp / prof.compute_s
prof2 = prof.scaled(scale)
sd = predict(prof2, cost, StrategySpec("torch-ddp", bucket_mb=cap), 2).step_time_s
ss = predict(prof2, cost, StrategySpec("sharded", bucket_mb=cap), 2).step_time_s
nb = sum(1 for p in prof.params if p.requires_grad)
print(
    f"{model} cap {cap}: measured compute {comp * 1e3:.2f} torch-ddp {ddp * 1e3:.2f} sharded {sh * 1e3:.2f} (diff {(sh - ddp) * 1e3:.2f}); "
    f"simulated torch-ddp {sd * 1e3:.2f} sharded {ss * 1e3:.2f} (diff {(ss - sd) * 1e3:.2f}); extra per broadcast "
    f"{((sh - ddp) - (ss - sd)) / nb * 1e3:.3f} ms over {nb}"
)
