"""cnn on loopback: `individual` (a call per gradient from Python hooks) against torch DDP at a 1 KiB cap (the in-step
probe's fine cap) and at 0.25 MiB, beside a compute-only baseline, interleaved in turns of 10 (validate's order).

    python benchmarks/results/recording_work_2026-11-29/indiv_vs_ddp.py MODEL REPS > OUT.txt
"""

import json
import statistics as st
import sys

from realrun.bench_ddp import measure_interleaved
from realrun.launch import RankPool

model = sys.argv[1]
reps = int(sys.argv[2])
configs = [("compute", None), ("individual", None), ("torch-ddp", 1 / 1024), ("torch-ddp", 0.25), ("torch-ddp", 4.0)]
rows = []
with RankPool(2, timeout_s=900) as pool:
    for rep in range(reps):
        res = measure_interleaved(pool, model, configs, steps=60, warmup=1, block=10)
        comp = res[0].median_s
        row = {"rep": rep, "compute_s": comp, "raw": {f"{r.strategy}:{r.bucket_mb}": list(r.step_times_s) for r in res}}
        row.update({f"{r.strategy}:{r.bucket_mb}": r.median_s for r in res[1:]})
        rows.append(row)
        print(
            f"rep {rep}: compute {comp * 1e3:.2f} ms; "
            + "; ".join(
                f"{r.strategy} {r.bucket_mb} {r.median_s * 1e3:.2f} (+{(r.median_s - comp) * 1e3:.2f})" for r in res[1:]
            ),
            flush=True,
        )
for k in [f"{s}:{b}" for s, b in configs[1:]]:
    print(k, "beyond compute, median over reps:", f"{st.median(r[k] - r['compute_s'] for r in rows) * 1e3:.2f} ms")
json.dump(rows, open(sys.argv[0].replace(".py", f"_{model}.json"), "w"))
