"""Per validate cell: each row's error against the measured median (as validate reports it) and against the
measured mean of the same steps (both rounds pooled); the median and worst |error| of each, and how far the rows'
mean and median steps lie apart. Reads validation.json (rows, predictions) and validation.jsonl.gz (raw steps)."""

import gzip
import json
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path

for cell in sys.argv[1:]:
    c = Path(cell)
    v = json.loads((c / "validation.json").read_text())
    steps = defaultdict(list)
    with gzip.open(c / "validation.jsonl.gz", "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "ddp_step" and not r.get("baseline_copy") and r["strategy"] != "compute":
                steps[(r["strategy"], r.get("bucket_mb"))] += r["step_times_s"]
    e_med, e_mean, gap, worst = [], [], [], ("", 0.0, 0.0)
    for row in v["rows"]:
        t = steps.get((row["strategy"], row.get("bucket_mb")))
        if not t:
            continue
        pred = row["predicted_step_s"]
        em = (pred / row["measured_median_s"] - 1) * 100
        ea = (pred / st.mean(t) - 1) * 100
        e_med.append(abs(em))
        e_mean.append(abs(ea))
        gap.append(abs(st.mean(t) / st.median(t) - 1) * 100)
        if abs(em) > abs(worst[1]):
            worst = (f"{row['strategy']} {row.get('bucket_mb') or ''}".strip(), em, ea)
    print(
        f"{str(c.parent.name) + '/' + c.name:48s} vs median {st.median(e_med):5.2f} / {max(e_med):6.2f} %   "
        f"vs mean {st.median(e_mean):5.2f} / {max(e_mean):6.2f} %   mean/median gap median {st.median(gap):5.1f} %, "
        f"worst {max(gap):5.1f} %   worst row {worst[0]} {worst[1]:+.1f} % (vs mean {worst[2]:+.1f} %)"
    )
