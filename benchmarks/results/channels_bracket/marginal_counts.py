"""How many stored calibrations leave the channel count open (``NetworkFit.channels_marginal``: the stream
speed-up's 95 % bootstrap interval holds x1.3), by this version's network fit of each one's records. Nothing
measured; from the repository root:

    python benchmarks/results/channels_bracket/marginal_counts.py
"""

import sys
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(RESULTS.parents[1]))
from calibration.calibrate import fit_network  # noqa: E402
from realrun.records import read_records  # noqa: E402

count: Counter = Counter()
for f in sorted(RESULTS.glob("accuracy_matrix_m*/*/validation.calibration*.jsonl.gz")):
    recs = list(read_records(f))
    streams = [r for r in recs if r.get("kind") == "allreduce" and r.get("impl") == "stream"]
    if not streams or not streams[0].get("async_times_s"):
        continue
    p0 = min(r["world_size"] for r in streams)
    link = streams[0].get("link_mbit")
    net = fit_network(recs, "gloo", p0, link, lambda _s: None)
    where = "links" if link else "loopback"
    count[where] += 1
    count[where + " open"] += net.channels_marginal
    count[where + " open, pipelined"] += net.channels_marginal and net.pipelined
for where in ("loopback", "links"):
    print(
        f"{where}: the channel count left open in {count[where + ' open']} of {count[where]} stored calibrations"
        f" ({count[where + ' open, pipelined']} of them pipelined)"
    )
