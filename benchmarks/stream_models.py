"""The stream probe's async calls against the two channel models, per size, for stored calibrations.

    python benchmarks/stream_models.py benchmarks/results/accuracy_matrix_m44/micro-dlrm-1000 [CELL ...]

Per cell (a folder holding ``validation.calibration*.jsonl[.gz]``): the network fit as calibration makes it
(``calibration.calibrate.fit_network``), then per size of the stream probe the median async call (16 launched at
once, then waited for) against what one serial channel and one pipelined channel predict
(``calibration.calibrate.stream_models``, as calibration weighs them), and the blocking call. Measures nothing.
"""

from __future__ import annotations

import glob
import gzip
import json
import statistics
import sys
from pathlib import Path

from calibration.calibrate import fit_network, stream_models
from simulator.units import MIB


def main(cells: list[str]) -> int:
    for cell in cells:
        found = sorted(glob.glob(f"{cell}/validation.calibration*.jsonl*"))
        if not found:
            print(f"{cell}: no calibration records", file=sys.stderr)
            return 1
        opener = gzip.open if found[0].endswith(".gz") else open
        with opener(found[0], "rt") as f:
            recs = [json.loads(line) for line in f if line.strip()]
        links = [r["link_mbit"] for r in recs if r.get("link_mbit")]
        p = min(r["world_size"] for r in recs if r.get("kind") == "allreduce")
        net = fit_network(recs, "gloo", p, links[0] if links else None, lambda s: None)
        o, w = net.stream.o_s, (net.bandwidth or net.used).w_bytes_per_s
        print(f"== {Path(cell).name}: pipelined {net.pipelined}, o {o * 1e3:.2f} ms (stream fit), w {w / 1e6:.1f} MB/s")
        print("   size MiB   k   async   serial  pipelined  blocking (ms)")
        for r in recs:
            if r.get("kind") != "allreduce" or r.get("impl") != "stream" or r.get("world_size") != p:
                continue
            models = stream_models(r, o, w)
            if models is None:
                continue
            meas, serial, piped, k = models
            print(
                f"   {r['msg_bytes'] / MIB:8.4g} {k:3d} {meas * 1e3:7.2f} {serial * 1e3:8.2f} {piped * 1e3:10.2f}"
                f" {statistics.median(r['times_s']) * 1e3:9.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
