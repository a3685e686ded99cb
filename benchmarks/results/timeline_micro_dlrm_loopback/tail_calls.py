"""The last bucket's all-reduce in the calibration's in-step probe (coarse cap), where nothing was queued before
it: measured from the later rank's launch to completion, against the isolated call ``o + bytes / w`` of the
cell's own params. Does a call at backward's tail run slower than the calibration's isolated calls?

    python benchmarks/results/timeline_micro_dlrm_loopback/tail_calls.py benchmarks/results/accuracy_matrix_m7
"""

import glob
import gzip
import json
import statistics as st
import sys

for cell in sorted(glob.glob(sys.argv[1] + "/*/")):
    name = cell.rstrip("/").rsplit("/", 1)[-1]
    cal, par = glob.glob(cell + "validation.calibration*.jsonl.gz"), glob.glob(cell + "validation.params*.json")
    if not cal or not par:
        continue
    p = json.load(open(par[0]))
    o, w = p["o_us"] * 1e-6, p["w_gbps"] * 1e9
    for line in gzip.open(cal[0], "rt"):
        d = json.loads(line)
        if d["kind"] != "step_probe":
            continue
        meas, pred = [], []
        for a, b in zip(*d["timeline"]["rank_timelines"]):
            ba, bb = a["buckets"][-1], b["buckets"][-1]
            last = max(ba["launch_s"], bb["launch_s"])
            if max([x["complete_s"] for x in a["buckets"][:-1]] + [0.0]) <= last:
                meas.append((ba["complete_s"] - last) * 1e3)
                pred.append((o + ba["bytes"] / w) * 1e3)
        if not meas:
            print(f"{name:20s} no step where the last call was not queued behind another")
            continue
        r = sorted(m / q for m, q in zip(meas, pred))
        print(
            f"{name:20s} n={len(r):2d}  measured median {st.median(meas):6.2f} ms  isolated {st.median(pred):6.2f} ms"
            f"  ratio median {st.median(r):.2f} (min {r[0]:.2f}, max {r[-1]:.2f})"
        )
