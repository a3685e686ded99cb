"""`individual` against torch DDP at a 1 KiB cap (a call per gradient), step by step.

    python benchmarks/results/individual_vs_ddp_per_gradient/paired.py benchmarks/results/individual_vs_ddp_per_gradient

Per workload folder: the gap of the medians and its 95 % interval with the steps resampled in pairs
(`realrun.stats.paired_gap_interval`; validate steps its configurations in turn).
"""

import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from realrun.records import iter_records  # noqa: E402
from realrun.stats import paired_gap_interval  # noqa: E402

for cell in sorted(p for p in Path(sys.argv[1]).iterdir() if (p / "validation.jsonl.gz").exists()):
    steps: dict[str, list[float]] = {}
    for r in iter_records(cell / "validation.jsonl.gz", "ddp_step"):
        if r["strategy"] != "compute":
            steps.setdefault(r["setting"], []).extend(r["step_times_s"])
    a, b = steps["individual"], next(v for k, v in steps.items() if k.startswith("torch-ddp 0.000"))
    lo, hi = paired_gap_interval(a, b)
    print(
        f"{cell.name}: individual {st.median(a) * 1e3:.1f} ms, torch-ddp 1 KiB {st.median(b) * 1e3:.1f} ms:"
        f" {(st.median(a) / st.median(b) - 1) * 100:+.1f} % (95 % interval {lo:+.1f} to {hi:+.1f} %, {len(a)} pairs)"
    )
