"""How far apart the two ranks are inside real DDP steps, per cell of stored accuracy matrices: from each cell's
in-step probe records (torch DDP at its coarse cap, 2 MiB or a quarter of the gradients, and at 1 KiB), per
timed step the gap between the ranks' backward ends, and the backward end and exposed tail (last all-reduce
completion after the backward end) as taken on the slowest rank by step time against across ranks (each event
at the last rank to reach it: ``calibration.timeline.across_ranks_timelines``); medians over steps.

    python benchmarks/results/ranks_apart/skew.py benchmarks/results/accuracy_matrix_m7 ...
"""

import glob
import gzip
import json
import statistics as st
import sys

print(
    "| run / cell | probe | ranks' backward ends apart | backward end: slowest rank / across | tail: slowest rank / across |"
)
print("|---|---|---|---|---|")
for matrix in sys.argv[1:]:
    for cell in sorted(glob.glob(matrix.rstrip("/") + "/*/")):
        cal = glob.glob(cell + "validation.calibration*.jsonl*")
        if not cal:
            continue
        opener = gzip.open if cal[0].endswith(".gz") else open
        for line in opener(cal[0], "rt"):
            d = json.loads(line)
            if d.get("kind") not in ("step_probe", "step_probe_fine"):
                continue
            tl = d["timeline"]
            ranks, lines = tl["rank_step_times_s"], tl["rank_timelines"]
            apart, slow_end, late_end, slow_tail, late_tail = [], [], [], [], []
            for k in range(len(tl["step_times_s"])):
                r = max(range(len(ranks)), key=lambda q: ranks[q][k])
                ends = [lines[q][k]["backward_end_s"] for q in range(len(ranks))]
                last = max(b["complete_s"] for q in range(len(ranks)) for b in lines[q][k]["buckets"])
                apart.append(max(ends) - min(ends))
                slow_end.append(ends[r])
                late_end.append(max(ends))
                slow_tail.append(max(0.0, max(b["complete_s"] for b in lines[r][k]["buckets"]) - ends[r]))
                late_tail.append(max(0.0, last - max(ends)))
            name = (
                matrix.rstrip("/").rsplit("/", 1)[-1].replace("accuracy_matrix_", "")
                + " "
                + cell.rstrip("/").rsplit("/", 1)[-1]
            )
            cap = f"{tl['bucket_mb'] * 1024:g} KiB" if tl["bucket_mb"] < 0.01 else f"{tl['bucket_mb']:g} MiB"

            def ms(xs):
                return f"{st.median(xs) * 1e3:.1f}"

            print(
                f"| {name} | {cap} | {ms(apart)} ms | {ms(slow_end)} / {ms(late_end)} ms | {ms(slow_tail)} / {ms(late_tail)} ms |"
            )
