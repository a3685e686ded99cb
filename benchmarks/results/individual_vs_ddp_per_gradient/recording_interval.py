"""Each side of `recording_per_gradient.json` against its plain side: the gap of the medians with its 95 %
interval, the steps resampled in pairs (`realrun.stats.paired_gap_interval`).

    python benchmarks/results/individual_vs_ddp_per_gradient/recording_interval.py
"""

import json
import statistics as st
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from realrun.stats import paired_gap_interval  # noqa: E402

for r in json.loads((HERE / "recording_per_gradient.json").read_text())["rows"]:
    plain = r["plain"]["step_times_s"]
    for side in r["sides"][1:]:
        t = r[side]["step_times_s"]
        lo, hi = paired_gap_interval(t, plain)
        print(
            f"{r['model']} {side}: {(st.median(t) / st.median(plain) - 1) * 100:+.1f} %, "
            f"{(st.median(t) - st.median(plain)) * 1e3:.1f} ms (95 % {lo:+.1f} to {hi:+.1f} %, {len(t)} pairs)"
        )
