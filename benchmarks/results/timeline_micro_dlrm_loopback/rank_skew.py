"""Per step of a one-bucket timeline (validate --timeline): the two ranks' launch skew and the all-reduce's time
from its launch and from the later rank's launch, median / min / max in ms.

    python benchmarks/results/timeline_micro_dlrm_loopback/rank_skew.py DIR/*.timeline.json

Each step starts on both ranks together (validate's steps are barrier-aligned), so the per-step times of the
two ranks are comparable.
"""

import json
import statistics as st
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    r0, r1 = d["rank_timelines"]
    if len(r0[0]["buckets"]) != 1:
        print(f"{path}: not one bucket, skipped")
        continue
    cols: dict[str, list[float]] = {
        k: [] for k in ("launch skew r0-r1", "call r0", "call r1", "r0 from last launch", "r1 from last launch")
    }
    for a_step, b_step in zip(r0, r1):
        a, b = a_step["buckets"][0], b_step["buckets"][0]
        last = max(a["launch_s"], b["launch_s"])
        for k, v in zip(
            cols,
            (
                a["launch_s"] - b["launch_s"],
                a["complete_s"] - a["launch_s"],
                b["complete_s"] - b["launch_s"],
                a["complete_s"] - last,
                b["complete_s"] - last,
            ),
        ):
            cols[k].append(v * 1e3)
    print(path.rsplit("/", 1)[-1])
    for k, v in cols.items():
        print(f"  {k:22s} median {st.median(v):6.2f}  min {min(v):6.2f}  max {max(v):6.2f} ms")
