"""The channel model each stored calibration gets: the async/blocking threshold alone (two gloo channels from
x1.3) against this version's ``calibration.calibrate.fit_network`` (one pipelined channel wherever the stream
probe's async calls are the pipelined channel's, whatever the speed-up). Lists the calibrations whose model
changes. Nothing is measured.

    python benchmarks/results/channels_pipelined/decisions.py
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from calibration.calibrate import fit_network  # noqa: E402
from realrun.records import read_records  # noqa: E402

rows = []
for cal in sorted((ROOT / "benchmarks" / "results").glob("accuracy_matrix_m*/*/validation.calibration*.jsonl*")):
    recs = read_records(cal)
    link = next(
        ((r.get("env") or {}).get("link_mbit") or r.get("link_mbit") for r in recs if r.get("kind") == "allreduce"),
        None,
    )
    try:
        net = fit_network(recs, "gloo", 2, link, lambda _s: None)
    except (ValueError, KeyError):  # records of runs older than some fit's inputs
        continue
    threshold = 2 if net.speedup >= 1.3 else 1
    rows.append((cal.parent.parent.name.removeprefix("accuracy_matrix_"), cal.parent.name, net, threshold))
changed = [r for r in rows if r[3] != r[2].channels]
print(f"{len(rows)} calibrations; {len(changed)} with another channel model than the threshold alone gives")
for run, cell, net, old in changed:
    print(f"{run:>10} {cell:<22} x{net.speedup:.2f}: {old} -> {net.channels} channel(s), pipelined {net.pipelined}")
