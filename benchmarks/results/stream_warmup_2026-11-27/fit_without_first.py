"""The network fit of stored matrix cells with and without each stream record's first repetition (what the stream
probe now leaves untimed). Nothing is measured, nothing replayed.

    PYTHONPATH=. python benchmarks/results/stream_warmup_2026-11-27/fit_without_first.py [ROOT]

Over every `accuracy_matrix_m*/<cell>/validation.calibration*.jsonl.gz` under ROOT (default benchmarks/results) whose
stream records kept their async times: `calibration.calibrate.fit_network` as recorded and with the first
repetition of every stream record dropped; by network, the median `o` both ways, the per-cell ratio's median and
p10-p90, and the cells whose channel count changes.
"""

import gzip
import json
import statistics as st
import sys
from pathlib import Path

import numpy as np

from calibration.calibrate import fit_network


def dropped(r):
    if r.get("kind") != "allreduce" or r.get("impl") != "stream":
        return r
    t, a = r["times_s"][1:], r["async_times_s"][1:]
    return dict(r, times_s=t, async_times_s=a, median_s=st.median(t))


def main(root: str) -> None:
    out: dict[str, list[tuple[float, float, int, int]]] = {}
    for f in sorted(Path(root).glob("accuracy_matrix_m*/*/validation.calibration*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            recs = [json.loads(line) for line in fh]
        ar = [r for r in recs if r.get("kind") in ("allreduce", "broadcast")]
        s = [r for r in ar if r.get("impl") == "stream"]
        if len(s) < 3 or any("async_times_s" not in r or r.get("order", "by size") != "by size" for r in s):
            continue
        ws, link = s[0]["world_size"], s[0].get("link_mbit")
        a = fit_network(ar, "gloo", ws, link, lambda m: None)
        b = fit_network([dropped(r) for r in ar], "gloo", ws, link, lambda m: None)
        net = "loopback" if not link else f"{link:g} Mbit/s"
        out.setdefault(net, []).append((a.linear.o_s, b.linear.o_s, a.channels, b.channels))
    for net, v in sorted(out.items()):
        o = np.asarray([(x[0], x[1]) for x in v])
        r = o[:, 1] / o[:, 0]
        flips = sum(x[2] != x[3] for x in v)
        print(
            f"{net}: {len(v)} cells; o median {np.median(o[:, 0]) * 1e3:.3f} -> {np.median(o[:, 1]) * 1e3:.3f} ms, "
            f"per cell x{np.median(r):.3f} (p10-p90 x{np.percentile(r, 10):.3f}-{np.percentile(r, 90):.3f}); "
            f"channel count changed in {flips}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results")
