"""How many stored calibrations leave the channel count open: the stream speed-up's 95 % bootstrap interval
(``calibration.calibrate.speedup_interval``) holds x1.3 and the stream is not the pipelined channel's (as the
stored params' stream fit decides it). Nothing measured; from the repository root:

    python benchmarks/results/channels_bracket/marginal_counts.py
"""

import json
import sys
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(RESULTS.parents[1]))
from calibration.calibrate import speedup_interval, stream_pipelined  # noqa: E402
from realrun.records import read_records  # noqa: E402

count: Counter = Counter()
for f in sorted(RESULTS.glob("accuracy_matrix_m*/*/validation.calibration*.jsonl.gz")):
    streams = [r for r in read_records(f) if r.get("kind") == "allreduce" and r.get("impl") == "stream"]
    if not streams or not streams[0].get("async_times_s"):
        continue
    p0 = min(r.get("world_size") for r in streams)
    streams = [r for r in streams if r.get("world_size") == p0]
    params = json.loads(next(f.parent.glob("validation.params*.json")).read_text())
    fit = params.get("probes", {}).get("stream_fit")
    piped = bool(fit) and stream_pipelined(streams, fit["o_s"], params["linear"]["w_bytes_per_s"])
    ci = speedup_interval(streams)
    net = "loopback" if "loopback" in f.parent.name else "links"
    count[net] += 1
    count[net + " open"] += ci is not None and ci[0] < 1.3 <= ci[1] and not piped
for net in ("loopback", "links"):
    print(f"{net}: the channel count left open in {count[net + ' open']} of {count[net]} stored calibrations")
