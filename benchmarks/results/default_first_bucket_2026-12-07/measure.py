"""torch DDP's default (1 MiB first bucket, then 25 MiB) against one bucket, gpt on 2 gloo ranks, with
per-bucket timelines: TURNS turns, each measuring both configurations (the order alternating AB, BA, ...),
STEPS timed steps a measurement, each timed step beside a compute-only step and a plain step (the same
configuration without the recorder). One ``measure_timeline`` record (``to_dict``) per line on stdout.

    PYTHONPATH=. python benchmarks/results/default_first_bucket_2026-12-07/measure.py MODEL ONE_MIB TURNS STEPS \
        > records.jsonl
"""

import json
import sys

from realrun.bench_ddp import measure_timeline
from realrun.launch import RankPool


def main() -> None:
    model = sys.argv[1]
    one_mib = float(sys.argv[2])
    turns, steps = int(sys.argv[3]), int(sys.argv[4])
    configs = [None, one_mib]  # None: bucket_cap_mb unset, torch's default
    with RankPool(2, timeout_s=1800) as pool:
        for turn in range(turns):
            for bucket in configs if turn % 2 == 0 else configs[::-1]:
                rec = measure_timeline(pool, model, "torch-ddp", bucket, None, steps, 3, plain=True).to_dict()
                rec["turn"] = turn
                print(json.dumps(rec), flush=True)
                print(f"turn {turn} bucket {bucket}: done", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
