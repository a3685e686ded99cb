"""The sharded optimizer's step in parts on two gloo ranks: the full optimizer step, the shard's, the broadcast
loop (one blocking broadcast per parameter from its owner, as ``ShardedOptimizer.step``), the same loop from one
source, and the whole sharded step; each after a barrier, 200 times; per part the slower rank's median and mean;
beside it what the model charges for the loop (``o_b + n / w_b`` per broadcast from the given params' broadcast fit,
the switch credit off).

    python benchmarks/results/burst_2026-11-29/sharded_phases.py MODEL PARAMS.json
"""

import json
import os
import statistics
import sys
import time
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[2]))
sys.path.insert(0, str(here))
os.environ["PYTHONPATH"] = os.pathsep.join([str(here), str(here.parents[2]), os.environ.get("PYTHONPATH", "")])

from bcastprobe import sharded_phases  # noqa: E402

from calibration.calibrate import open_pool  # noqa: E402

model, params = sys.argv[1], json.load(open(sys.argv[2]))
print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {model}; loopback; load {os.getloadavg()[0]:.2f}")
with open_pool(2, "gloo", None, 900) as pool:
    per_rank = pool.run(sharded_phases, model)
for k in per_rank[0]["times"]:
    per = [max(r["times"][k][i] for r in per_rank) for i in range(len(per_rank[0]["times"][k]))]
    print(f"  {k:15s} median {statistics.median(per) * 1e3:7.3f} ms  mean {statistics.fmean(per) * 1e3:7.3f} ms")
b = params["broadcast"]
nb = per_rank[0]["bytes"]
model_loop = sum(b["o_s"] + n / b["w_bytes_per_s"] for n in nb)
print(
    f"  model's loop: {len(nb)} broadcasts, {sum(nb) / 2**20:.2f} MiB, o_b {b['o_s'] * 1e3:.3f} ms, w_b {b['w_bytes_per_s'] / 1e9:.2f} GB/s: {model_loop * 1e3:.3f} ms"
)
