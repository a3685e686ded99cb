"""Do small all-reduces launched at once cost less a call while the ranks compute than while they wait?

Two gloo ranks (loopback, or an emulated link with ``--link-mbit``), for each of 4 B, 4 KiB and 256 KiB, 16
buffers; per repetition, after a barrier each, in alternating order: the 16 calls blocking one after another
(the stream probe's `o`), launched at once and waited for (the stream probe's async calls), and launched at once
while the rank then computes (a loop of 96x96 matmuls for 30 ms on its main thread, as backward goes on after
DDP launches a bucket), each completion stamped by a callback. Per call: the slower rank's time to the last
completion over 16; median and mean over repetitions.

    python benchmarks/results/burst_2026-11-29/burst.py [--link-mbit 1000] [--reps 40]
"""

import argparse
import os
import sys
import time
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[2]))
sys.path.insert(0, str(here))
os.environ["PYTHONPATH"] = os.pathsep.join([str(here), str(here.parents[2]), os.environ.get("PYTHONPATH", "")])

from burstprobe import burst_probe, summarize  # noqa: E402

from calibration.calibrate import open_pool  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--link-mbit", type=float, default=None)
ap.add_argument("--reps", type=int, default=40)
args = ap.parse_args()
print(
    f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {'loopback' if not args.link_mbit else f'{args.link_mbit:g} Mbit/s'}; "
    f"load {os.getloadavg()[0]:.2f}"
)
with open_pool(2, "gloo", args.link_mbit, 600) as pool:
    per_rank = pool.run(burst_probe, reps=args.reps)
print(f"torch threads per rank: {per_rank[0]['threads']}")
for n, d in summarize(per_rank).items():
    line = "  ".join(f"{m} {v[0] * 1e3:.3f}/{v[1] * 1e3:.3f}" for m, v in d.items())
    print(f"{int(n):>7} B, ms a call (median/mean over {d['blocking'][2]} reps): {line}")
