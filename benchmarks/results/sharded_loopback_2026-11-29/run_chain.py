"""Driver of ``sharded_steps.chain_task``: the sharded broadcasts alone, separated, chained, chained after compute.

python benchmarks/results/sharded_loopback_2026-11-29/run_chain.py MODEL REPS > OUT.txt
"""

import json
import os
import statistics as st
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
os.environ["PYTHONPATH"] = os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])

from sharded_steps import chain_task  # noqa: E402

from realrun.launch import RankPool  # noqa: E402

model, reps = sys.argv[1], int(sys.argv[2])
with RankPool(2, timeout_s=900) as pool:
    per_rank = pool.run(chain_task, model, reps)
ms = 1e3
for r, d in enumerate(per_rank):
    sep_med = sum(st.median(x) for x in d["separated"])
    sep_mean = sum(st.mean(x) for x in d["separated"])
    print(
        f"rank {r}: {len(d['separated'])} broadcasts; separated (barrier before each): sum of medians "
        f"{sep_med * ms:.2f} ms, of means {sep_mean * ms:.2f}; chained: median {st.median(d['chain']) * ms:.2f} "
        f"(mean {st.mean(d['chain']) * ms:.2f}); chained after 2 ms of compute: median "
        f"{st.median(d['chain_after_compute']) * ms:.2f} (mean {st.mean(d['chain_after_compute']) * ms:.2f})"
    )
json.dump(per_rank, open(os.path.join(here, f"chain_{model}.json"), "w"))
