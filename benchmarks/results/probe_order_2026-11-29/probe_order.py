"""The in-step probe's configuration of micro-DLRM on loopback (torch-ddp at one cap), measured in the probe's
order (block 1: each timed DDP step after a compute-only or plain step) and in `validate`'s order for short steps
(block 10), alternately, REPS times each; plain steps (no recorder) beside. Prints one JSON line per measurement
with the medians in ms (recorded steps, plain steps, compute-only steps).

    PYTHONPATH=. python benchmarks/results/probe_order_2026-11-29/probe_order.py CAP_MIB STEPS REPS
"""

import json
import statistics
import sys
import time

from realrun.bench_ddp import measure_timeline
from realrun.launch import RankPool


def median_ms(record: dict, key: str) -> float:
    times = record.get(key)
    return statistics.median(times) * 1e3 if times else float("nan")


def main() -> None:
    cap = float(sys.argv[1]) if len(sys.argv) > 1 else 0.95926
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    with RankPool(2, timeout_s=1800) as pool:
        for rep in range(reps):
            for block in (1, 10):
                t0 = time.time()
                r = measure_timeline(pool, "micro-dlrm", "torch-ddp", cap, None, steps, 3, block=block, plain=True)
                d = r.to_dict()
                row = {
                    "rep": rep,
                    "block": block,
                    "steps": steps,
                    "recorded_ms": median_ms(d, "step_times_s"),
                    "plain_ms": median_ms(d, "plain_step_times_s"),
                    "compute_only_ms": median_ms(d, "compute_step_times_s"),
                    "wall_s": time.time() - t0,
                }
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
