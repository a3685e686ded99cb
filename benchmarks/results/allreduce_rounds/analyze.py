"""Sequential sweep (rounds 1) against 4 rounds: per size, the spread of the per-run mean and median across
repetitions, and the spread of the fits calibration makes (all-size fit of means; w from transfer-dominated
sizes) and of the time they give a 4 MiB call.

    python benchmarks/results/allreduce_rounds/analyze.py      (from the repository; reads r*_*.jsonl.gz here)
"""

import glob
import gzip
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))

from calibration.fit import fit_bandwidth, fit_linear  # noqa: E402


def load(f):
    with gzip.open(f, "rt") if f.endswith(".gz") else open(f) as fh:
        return [json.loads(line) for line in fh]


def spread(v):
    return f"{np.mean(v):.3f} (sd {np.std(v, ddof=1):.3f}; " + ", ".join(f"{x:.3f}" for x in v) + ")"


def main():
    for r in (1, 4):
        runs = [load(f) for f in sorted(glob.glob(os.path.join(HERE, f"r{r}_*.jsonl*")))]
        if not runs:
            continue
        sizes = sorted({x["msg_bytes"] for x in runs[0] if x["kind"] == "allreduce"})
        print(f"== rounds {r}: {len(runs)} runs")
        cvs_mean, cvs_med = [], []
        for n in sizes:
            pts = [next(x for x in run if x["kind"] == "allreduce" and x["msg_bytes"] == n) for run in runs]
            means, meds = [p["mean_s"] for p in pts], [p["median_s"] for p in pts]
            cm, cd = np.std(means, ddof=1) / np.mean(means), np.std(meds, ddof=1) / np.mean(meds)
            cvs_mean.append(cm)
            cvs_med.append(cd)
            print(
                f"  {n / 2**20:8.4f} MiB  mean {np.mean(means) * 1e3:7.2f} ms cv {cm * 100:5.1f}%   "
                f"median {np.mean(meds) * 1e3:7.2f} ms cv {cd * 100:5.1f}%"
            )
        print(f"  median cv over sizes: mean {np.median(cvs_mean) * 100:.1f}%, median {np.median(cvs_med) * 100:.1f}%")
        rms, w_bw, t4, o_bw = [], [], [], []
        for run in runs:
            ar = [x for x in run if x["kind"] == "allreduce"]
            fit = fit_linear(ar, world_size=2, statistic="mean", n_boot=0)
            bw = fit_bandwidth(ar, fit, world_size=2, statistic="mean", n_boot=0) or fit  # as calibrate falls back
            rms.append(fit.rel_rms)
            w_bw.append(bw.w_bytes_per_s / 1e9)
            o_bw.append(bw.o_s * 1e3)
            t4.append((fit.o_s + (4 << 20) / bw.w_bytes_per_s) * 1e3)
        print(f"  all-size fit rel. RMS {spread(rms)}")
        print(f"  w (transfer-dominated) GB/s {spread(w_bw)}")
        print(f"  its intercept ms {spread(o_bw)}")
        print(f"  4 MiB call, o (all sizes) + n/w ms {spread(t4)}")


if __name__ == "__main__":
    main()
