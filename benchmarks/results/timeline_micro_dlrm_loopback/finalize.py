"""What torch DDP's finalize takes after the last all-reduce completes, in the calibration's in-step probes:
``backward()`` returning minus the later of backward's end and the last bucket's completion, per rank and
step, against the model's part of it (the last bucket's copy-out at the fitted copy rate).

    python benchmarks/results/timeline_micro_dlrm_loopback/finalize.py benchmarks/results/accuracy_matrix_m7
"""

import statistics as st
import sys

from probe_records import probe_records

for name, params, d in probe_records(sys.argv[1], ("step_probe", "step_probe_fine")):
    rate = params.get("copy_bytes_per_s")
    fin, model = [], []
    for rank in d["timeline"]["rank_timelines"]:
        for s in rank:
            last = max([b["complete_s"] for b in s["buckets"]] + [s["backward_end_s"]])
            fin.append((s["backward_return_s"] - last) * 1e3)
            copy = s["buckets"][-1]["bytes"] / rate if s["buckets"] and rate else 0.0
            model.append(copy * 1e3)
    fin.sort()
    print(
        f"{name:20s} {d['kind']:16s} measured median {st.median(fin):.2f} ms (p10 {fin[len(fin) // 10]:.2f},"
        f" p90 {fin[9 * len(fin) // 10]:.2f}); the model's copy-out {st.median(model):.3f} ms"
    )
