"""Rule W1: each p = 4 row predicted from the p = 2 calibration at the two ends of the latency split (0 and 1) and at
the assumed 2/3, as ``benchmarks/bench_worldsize.py``'s ``repredict`` predicts it (the profile rescaled to the row's
compute scale, validate's order cost), beside the measured median and validate's 80 % interval.

    python split_ends.py
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from calibration.params import Params  # noqa: E402
from calibration.validate import order_cost  # noqa: E402
from simulator.predict import predict  # noqa: E402
from simulator.strategies import StrategySpec  # noqa: E402

params = Params.load(HERE / "params-p2.json")
val = json.loads((HERE / "validation-p4-from-p2.json").read_text())
p, prof = val["world_size"], params.profile()
cost = order_cost(params.cost_model(world_size=p), True, int(val.get("block") or 1))
print("| strategy | bucket MiB | measured ms | share 0 | share 2/3 (the point) | share 1 | validate's 80 % interval |")
print("|---|---|---|---|---|---|---|")
for r in val["rows"]:
    spec = StrategySpec(r["strategy"], bucket_mb=r["bucket_mb"])
    pr = prof.scaled(r.get("compute_scale", 1.0))
    at = [predict(pr, replace(cost, latency_share=s), spec, p).step_time_s * 1e3 for s in (0.0, 2 / 3, 1.0)]
    print(
        f"| {r['strategy']} | {r['bucket_mb'] if r['bucket_mb'] is not None else '-'} | {r['measured_median_s'] * 1e3:.1f} | "
        + " | ".join(f"{t:.1f}" for t in at)
        + f" | {r['predicted_p10_s'] * 1e3:.1f}-{r['predicted_p90_s'] * 1e3:.1f} |"
    )
t = params.cost_model(world_size=p)
for s in (0.0, 2 / 3, 1.0):
    lat, _ = replace(t, latency_share=s).allreduce_parts_s(4096, p)
    print(f"a 4 KiB all-reduce's latency part at p = {p}, share {s:.2f}: {lat * 1e3:.2f} ms")
