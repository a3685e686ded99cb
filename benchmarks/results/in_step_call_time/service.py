"""Per-call time inside real DDP steps against the calibration's back-to-back per-call time, per cell of stored
accuracy matrices: from each cell's fine in-step probe (torch DDP at 1 KiB: about one all-reduce per gradient,
most of them far under the transfer-dominated sizes), per call the time from max(its launch, the previous call's
completion) to its completion on the step's slowest rank (a serial channel's service time), calls of at most
64 KiB only, median over calls and steps; beside it the cell's fitted t0 (``o_us``) and the in-step median over
t0 + bytes / w.

    python benchmarks/results/in_step_call_time/service.py benchmarks/results/accuracy_matrix_m7 ...
"""

import glob
import gzip
import json
import statistics as st
import sys

for matrix in sys.argv[1:]:
    for cell in sorted(glob.glob(matrix + "/*loopback/")) + sorted(glob.glob(matrix + "/*-1000/")):
        cal = glob.glob(cell + "validation.calibration*.jsonl*")
        par = glob.glob(cell + "validation.params*.json")
        if not cal or not par:
            continue
        p = json.load(open(par[0]))
        o, w = p["o_us"] * 1e-6, p["w_gbps"] * 1e9
        opener = gzip.open if cal[0].endswith(".gz") else open
        ratios, serv = [], []
        for line in opener(cal[0], "rt"):
            d = json.loads(line)
            if d.get("kind") != "step_probe_fine":
                continue
            for rank in d["timeline"]["rank_timelines"]:
                for s in rank:
                    prev = -1e9
                    for b in sorted(s["buckets"], key=lambda b: b["launch_s"]):
                        t = b["complete_s"] - max(b["launch_s"], prev)
                        prev = b["complete_s"]
                        if b["bytes"] <= 64 * 1024 and t > 0:
                            serv.append(t)
                            ratios.append(t / (o + b["bytes"] / w))
        if serv:
            name = matrix.rstrip("/").rsplit("/", 1)[-1] + "/" + cell.rstrip("/").rsplit("/", 1)[-1]
            print(
                f"{name:45s} t0 {o * 1e6:7.0f} us   in-step service median {st.median(serv) * 1e6:7.0f} us"
                f"  (x{st.median(ratios):.2f} of t0 + n/w; {len(serv)} calls)"
            )
