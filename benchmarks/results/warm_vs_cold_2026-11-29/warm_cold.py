"""One configuration's step measured two ways on the same ranks, alternately: block 1 (every timed step follows
another configuration's model: the in-step probe's order) and block 10 (turns of 10 timed steps after an untimed one:
validate's order where the step is under 50 ms, a training job's). Each beside a compute-only baseline measured in
the same order; the DDP step's part beyond compute (step median - compute-only median) is compared.

    python benchmarks/results/warm_vs_cold_2026-11-29/warm_cold.py MODEL [CONFIGS] [REPS] > OUT.txt

CONFIGS: comma-separated torch-ddp caps in MiB (default 4,0.25); REPS: repetitions of the (block 1, block 10) pair.
"""

import json
import statistics as st
import sys
import time

from realrun.bench_ddp import measure_interleaved
from realrun.launch import RankPool

model = sys.argv[1]
caps = [float(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "4,0.25").split(",")]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
configs = [("compute", None)] + [("torch-ddp", c) for c in caps]
out = []
with RankPool(2, timeout_s=900) as pool:
    for rep in range(reps):
        for block in (1, 10) if rep % 2 == 0 else (10, 1):
            t0 = time.time()
            res = measure_interleaved(pool, model, configs, steps=60, warmup=3 if block == 1 else 1, block=block)
            comp = res[0].median_s
            row = {"rep": rep, "block": block, "time_unix_s": t0, "compute_median_s": comp}
            for r in res[1:]:
                row[f"step_{r.bucket_mb:g}"] = r.median_s
                row[f"beyond_{r.bucket_mb:g}"] = r.median_s - comp
                row[f"raw_{r.bucket_mb:g}"] = list(r.step_times_s)
            row["raw_compute"] = list(res[0].step_times_s)
            out.append(row)
            print(
                f"rep {rep} block {block:2d}: compute {comp * 1e3:7.2f} ms; "
                + "; ".join(
                    f"{c:g} MiB step {row[f'step_{c:g}'] * 1e3:7.2f} beyond {row[f'beyond_{c:g}'] * 1e3:6.2f}"
                    for c in caps
                ),
                flush=True,
            )
for c in caps:
    for b in (1, 10):
        xs = [r[f"beyond_{c:g}"] * 1e3 for r in out if r["block"] == b]
        print(
            f"{c:g} MiB block {b:2d}: beyond compute median over reps {st.median(xs):.2f} ms ({', '.join(f'{x:.2f}' for x in xs)})"
        )
json.dump(out, open(sys.argv[0].replace(".py", f"_{model}.json"), "w"))
