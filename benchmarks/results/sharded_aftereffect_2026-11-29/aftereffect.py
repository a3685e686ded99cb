"""Do small calls stay slow after sharded steps? micro-DLRM on 2 gloo ranks on loopback.

    python benchmarks/results/sharded_aftereffect_2026-11-29/aftereffect.py OUT.json [REPEATS]

One pool of ranks, phases run one after another, each a ``measure_interleaved`` call in turns of 10 timed steps
after an untimed one (validate's order for steps under 50 ms), every phase building its models afresh:

- A: torch DDP at 0.25 MiB (nine calls a step) beside compute-only steps;
- S: the same beside `sharded` at 4 MiB (one all-reduce and 16 broadcasts a step), as the calibration's step check
  runs its rows;
- C: the same beside torch DDP at 64 MiB (one call a step): a control that rebuilds and runs a second DDP model
  without broadcasts.

Order: A0 (right after the ranks start), A1, then REPEATS times (S, A, C, A). Printed: each phase's seconds since
the pool started and the per-turn medians (ms) of torch DDP 0.25; raw per-step times in OUT.json.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from calibration.calibrate import open_pool
from realrun.bench_ddp import measure_interleaved

MODEL = "micro-dlrm"
BLOCK = 10
A = [("torch-ddp", 0.25), ("compute", None)]
S = [("torch-ddp", 0.25), ("sharded", 4.0), ("compute", None)]
C = [("torch-ddp", 0.25), ("torch-ddp", 64.0), ("compute", None)]


def main() -> None:
    out, repeats = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2
    plan = [("A0", A, 60), ("A1", A, 60)]
    for k in range(repeats):
        plan += [(f"S{k + 1}", S, 60), (f"A{2 * k + 2}", A, 120), (f"C{k + 1}", C, 60), (f"A{2 * k + 3}", A, 120)]
    rows = []
    with open_pool(2, "gloo", None, 600.0) as pool:
        t0 = time.monotonic()
        for name, cfgs, turns in plan:
            start = time.monotonic() - t0
            res = measure_interleaved(pool, MODEL, cfgs, None, turns * BLOCK, 1, "sgd", BLOCK)
            end = time.monotonic() - t0
            rec = {"phase": name, "start_s": start, "end_s": end, "configs": []}
            for r in res:
                t = list(r.step_times_s)
                rec["configs"].append({"strategy": r.strategy, "bucket_mb": r.bucket_mb, "step_times_s": t})
            rows.append(rec)
            t = list(res[0].step_times_s)
            turns_med = [statistics.median(t[i : i + BLOCK]) * 1e3 for i in range(0, len(t), BLOCK)]
            others = ", ".join(
                f"{r.strategy} {r.bucket_mb} {statistics.median(r.step_times_s) * 1e3:.2f}" for r in res[1:]
            )
            print(
                f"{name:4s} {start:6.1f}-{end:6.1f} s  torch-ddp 0.25 median {statistics.median(t) * 1e3:5.2f} ms "
                f"(first 10 turns {statistics.median(t[: 10 * BLOCK]) * 1e3:5.2f}, last 10 "
                f"{statistics.median(t[-10 * BLOCK :]) * 1e3:5.2f}); {others}",
                flush=True,
            )
            print("     turns: " + " ".join(f"{x:.0f}" for x in turns_med), flush=True)
    with open(out, "w") as f:
        json.dump({"model": MODEL, "block": BLOCK, "phases": rows}, f)


if __name__ == "__main__":
    main()
