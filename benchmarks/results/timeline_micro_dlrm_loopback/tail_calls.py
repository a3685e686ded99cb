"""The last bucket's all-reduce in the calibration's in-step probe (coarse cap), where nothing was queued before
it: measured from the later rank's launch to completion, against the isolated call ``o + bytes / w`` of the
cell's own params. Does a call at backward's tail run slower than the calibration's isolated calls?

    python benchmarks/results/timeline_micro_dlrm_loopback/tail_calls.py benchmarks/results/accuracy_matrix_m7
"""

import statistics as st
import sys

from probe_records import probe_records

for name, p, d in probe_records(sys.argv[1], ("step_probe",)):
    o, w = p["o_us"] * 1e-6, p["w_gbps"] * 1e9
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
