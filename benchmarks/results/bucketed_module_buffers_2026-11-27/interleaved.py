"""Before/after through validate's own harness (realrun.bench_ddp.measure_interleaved): micro-DLRM, torch DDP and the
hand-written bucketed at 0.25 MiB beside a compute-only copy, 150 steps each, one step a turn and then turns of 10.

    SRC=/path/to/a/checkout python interleaved.py      (run it from outside any checkout: the rank pool puts the
                                                        current folder on the ranks' path)
"""

import os
import sys

sys.path.insert(0, os.environ["SRC"])
from realrun.bench_ddp import measure_interleaved  # noqa: E402
from realrun.launch import RankPool  # noqa: E402

with RankPool(2) as pool:
    for block in (1, 10):
        configs = [("torch-ddp", 0.25), ("bucketed", 0.25), ("compute", None)]
        res = measure_interleaved(pool, "micro-dlrm", configs, steps=150, warmup=2, block=block)
        print(
            os.environ["SRC"], "block", block, " ".join(f"{r.strategy} {r.median_s * 1e3:.2f}" for r in res), flush=True
        )
