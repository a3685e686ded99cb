"""The probe's fine and coarse targets as its 1 s of steps would see them: run 3's or 4's turns cut into windows of
13, 26 and 52 consecutive turns; the sd over windows of the backward-end median less the compute-only median (the
probe's target) and of the median of per-turn differences; the same over the whole run (and its median less
median); and the fine less coarse difference, paired by turn and not. Nothing measured.

    PYTHONPATH=. python benchmarks/results/call_work_by_impl_2026-12-07/windows.py RUN.json.gz
"""

import gzip
import json
import statistics
import sys

from turns import bare_by_turn, side_terms

data = json.load(gzip.open(sys.argv[1], "rt"))
ranks = data["ranks"]
n = len(ranks[0]["one"]["step_times_s"])
bare, bt = bare_by_turn(ranks, n)
for s in ("ddp_coarse", "ddp_fine"):
    be = [x["compute_s"] * 1e3 for x in side_terms(ranks, s)]
    b = [x * 1e3 for x in bt]
    whole = statistics.median(be) - statistics.median(x * 1e3 for x in bare)
    print(s, f"the whole run: backward-end median less compute-only median {whole:.2f} ms")
    for w in (13, 26, 52):
        A, B = [], []
        for i in range(0, n - w + 1, w):
            A.append(statistics.median(be[i : i + w]) - statistics.median(b[i : i + w]))
            B.append(statistics.median([x - y for x, y in zip(be[i : i + w], b[i : i + w])]))
        print(
            s,
            w,
            "windows",
            len(A),
            f"unpaired sd {statistics.stdev(A):.2f}  paired sd {statistics.stdev(B):.2f}",
            f"means {statistics.fmean(A):.2f} {statistics.fmean(B):.2f}",
        )
    print(
        s,
        f"sd bwd end {statistics.stdev(be):.2f}, sd bare {statistics.stdev(b):.2f}, sd diff {statistics.stdev([x - y for x, y in zip(be, b)]):.2f}, corr {statistics.correlation(be, b):.2f}",
    )
recs = {}
for s in ("ddp_coarse", "ddp_fine"):
    recs[s] = [x["compute_s"] * 1e3 for x in side_terms(ranks, s)]
d = [f - c for f, c in zip(recs["ddp_fine"], recs["ddp_coarse"])]
print(
    "fine - coarse per turn: sd {:.2f}, corr {:.2f}".format(
        statistics.stdev(d), statistics.correlation(recs["ddp_fine"], recs["ddp_coarse"])
    )
)
for w in (13, 26):
    A = [statistics.median(d[i : i + w]) for i in range(0, n - w + 1, w)]
    U = [
        statistics.median(recs["ddp_fine"][i : i + w]) - statistics.median(recs["ddp_coarse"][i : i + w])
        for i in range(0, n - w + 1, w)
    ]
    print(w, f"paired sd {statistics.stdev(A):.2f} unpaired sd {statistics.stdev(U):.2f}")
