"""``w`` from the transfer-dominated sizes, fitted to mean and to median calls, for every calibration of the runs given.

python wspread.py benchmarks/results/accuracy_matrix_m41 ...
"""

import glob
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root

from calibration.fit import fit_bandwidth, fit_linear  # noqa: E402


def load(p):
    op = gzip.open if p.endswith(".gz") else open
    with op(p, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


for run in sys.argv[1:]:
    for cal in sorted(glob.glob(f"{run}/*/validation.calibration-*mbit.jsonl*")):
        recs = load(cal)
        ar = [r for r in recs if r.get("kind") == "allreduce" and r.get("world_size") == 2]
        link = ar[0].get("link_mbit")
        out = []
        for stat in ("mean", "median"):
            fit = fit_linear(ar, world_size=2, link_mbit=link, statistic=stat)
            bw = fit_bandwidth(ar, fit, world_size=2, link_mbit=link, statistic=stat)
            out.append(f"{stat}: w={bw.w_bytes_per_s / 1e6:7.2f} int={bw.o_s * 1e3:6.2f}ms")
        print(f"{run.split('_')[-1]:>14} {cal.split('/')[-2]:>18} " + "  ".join(out))
