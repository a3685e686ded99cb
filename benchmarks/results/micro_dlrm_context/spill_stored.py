"""The in-step probe's steps split by the step before them, over every stored calibration.

The probe (realrun.timeline._timeline_task with a baseline) steps turn i as (DDP, bare) when i is even and
(bare, DDP) when odd, so a DDP step follows a DDP step in even turns and a bare (compute-only) step in odd
ones; a bare step follows a DDP step in even turns and a bare one in odd ones.

    python benchmarks/results/micro_dlrm_context/spill_stored.py   (from the repository root; output spill_stored.txt)
"""

import collections
import glob
import gzip
import json
import statistics as st

out = collections.defaultdict(list)
for f in sorted(glob.glob("benchmarks/results/**/*calibration*.jsonl*", recursive=True)):
    op = gzip.open if f.endswith(".gz") else open
    try:
        lines = list(op(f, "rt"))
    except Exception:
        continue
    for line in lines:
        r = json.loads(line)
        if not r.get("kind", "").startswith("step_probe"):
            continue
        tl = r["timeline"]
        d, c, w = tl.get("step_times_s") or [], tl.get("compute_step_times_s") or [], tl.get("warmup", 0)
        if len(d) < 6 or len(c) != len(d):
            continue
        dd = [t for j, t in enumerate(d) if (w + j) % 2 == 0]
        dc = [t for j, t in enumerate(d) if (w + j) % 2 == 1]
        cd = [t for j, t in enumerate(c) if (w + j) % 2 == 0]
        cc = [t for j, t in enumerate(c) if (w + j) % 2 == 1]
        if min(map(len, (dd, dc, cd, cc))) < 2:
            continue
        link = (r.get("env") or {}).get("link_mbit") or "loop"
        key = (r["model"].split("/")[-1][:12], str(link), r["kind"][10:] or "coarse")
        out[key].append(
            (st.median(dd) - st.median(dc), st.median(cd) - st.median(cc), st.median(d), len(d), f.split("/")[2])
        )
print(
    "model link probe: n_probes | DDP after DDP - after bare, ms (median over probes; each % of its DDP median) | bare after DDP - after bare, ms"
)
for k in sorted(out):
    v = out[k]
    dd = [x[0] * 1e3 for x in v]
    cb = [x[1] * 1e3 for x in v]
    pct = [x[0] / x[2] * 100 for x in v]
    pos = sum(x > 0 for x in dd)
    print(
        f"{k[0]:12s} {k[1]:5s} {k[2]:6s} n={len(v):3d} | DD-DC median {st.median(dd):+7.2f} ms ({st.median(pct):+5.1f} %), >0 in {pos}/{len(v)}, steps/probe {st.median(x[3] for x in v):.0f} | CD-CC median {st.median(cb):+6.2f} ms, >0 in {sum(x > 0 for x in cb)}/{len(v)}"
    )
