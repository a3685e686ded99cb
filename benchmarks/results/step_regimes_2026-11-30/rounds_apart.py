"""Per validate cell: how far each configuration's median moved between round 1 and round 2, |log(r2 / r1)| in %,
the median over the rows and the worst row (rounds.txt)."""

import collections
import gzip
import json
import math
import statistics as st
import sys

for path in sys.argv[1:]:
    by = collections.defaultdict(dict)
    with gzip.open(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") != "ddp_step":
                continue
            key = (r["strategy"], r.get("bucket_mb"), bool(r.get("baseline_copy")))
            by[key].setdefault(r["round"], []).append(r["median_s"])
    out = []
    for key, rd in by.items():
        if len(rd) < 2 or key[0] == "compute":
            continue
        a, b = st.median(rd[0]), st.median(rd[1])
        out.append((abs(math.log(b / a)) * 100, key[0], key[1], a * 1e3, b * 1e3))
    out.sort(reverse=True)
    med = st.median(o[0] for o in out)
    cell = path.split("results/")[-1].rsplit("/", 1)[0]
    print(
        f"{cell:45s} median |r2/r1| {med:5.1f}%  worst {out[0][0]:5.1f}% ({out[0][1]} {out[0][2]}: {out[0][3]:.2f} -> {out[0][4]:.2f} ms)"
    )
