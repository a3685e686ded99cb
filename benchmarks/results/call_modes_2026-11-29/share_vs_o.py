"""The two kinds of small gloo calls in the stored calibrations, against the stream probe's per-call time.

Per cell of the stored accuracy matrices: the calibration's blocking sweep at 4, 16 and 64 KiB (200 timed calls
each, one all-reduce at a time) split by ``calibration.probes.fit_call_modes`` into fast calls and stalled ones
(more than 2 ms over the size's p10), the stalled share and the stalled calls' median lateness; beside it the
stream probe's fitted ``o`` (back-to-back blocking calls, mean per call) and what the mixture predicts for a
call: the fast calls' median plus share x excess. Then a least-squares line o = a + b x share over the cells.

    python benchmarks/results/call_modes_2026-11-29/share_vs_o.py benchmarks/results/accuracy_matrix_m*
"""

import glob
import json
import re
import sys
from pathlib import Path

import numpy as np

from calibration.probes import fit_call_modes
from realrun.records import read_records

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from stored import cell_calibration  # noqa: E402

rows = []


def run_number(path: str) -> int:
    m = re.search(r"accuracy_matrix_m(\d+)", path)
    return int(m.group(1)) if m else 0


for matrix in sorted(sys.argv[1:], key=run_number):
    for cell in sorted(glob.glob(matrix + "/*/")):
        cal = cell_calibration(cell)
        par = glob.glob(cell + "validation.params*.json")
        if cal is None or not par:
            continue
        o_stream = ((json.load(open(par[0])).get("probes") or {}).get("stream_fit") or {}).get("o_s")
        m = fit_call_modes(read_records(cal, "allreduce"), 2)
        if o_stream is None or m is None:
            continue
        mix = m["fast_median_s"] + m["slow_share"] * m["slow_late_median_s"]
        name = (
            matrix.rstrip("/").rsplit("/", 1)[-1].replace("accuracy_matrix_", "")
            + "/"
            + cell.rstrip("/").rsplit("/", 1)[-1]
        )
        late = m["slow_late_median_s"] if m["slow_share"] else float("nan")
        rows.append((name, m["slow_share"], m["fast_median_s"], late, o_stream, mix))

print(
    f"{'cell':32s} {'slow share':>10s} {'fast med ms':>11s} {'slow excess ms':>14s} {'stream o ms':>11s} {'mixture ms':>10s}"
)
for name, share, f, e, o, mix in rows:
    print(f"{name:32s} {share:10.2f} {f * 1e3:11.2f} {e * 1e3:14.2f} {o * 1e3:11.2f} {mix * 1e3:10.2f}")
s = np.array([r[1] for r in rows])
o = np.array([r[4] for r in rows])
loop = np.array(["loop" in r[0] for r in rows])
for label, m in (("all cells", np.ones_like(loop)), ("loopback cells", loop), ("link cells", ~loop)):
    if m.sum() < 3:
        continue
    b, a = np.polyfit(s[m], o[m], 1)
    r = np.corrcoef(s[m], o[m])[0, 1]
    print(
        f"{label}: {int(m.sum())} cells, stream o = {a * 1e3:.2f} ms + {b * 1e3:.2f} ms x slow share (r = {r:.2f});"
        f" slow share {np.min(s[m]):.2f}-{np.max(s[m]):.2f}, median {np.median(s[m]):.2f}"
    )
excess_all = [r[3] for r in rows if r[3] == r[3]]
print(
    f"slow calls' excess over the size's p10, median per cell: {min(excess_all) * 1e3:.2f}-{max(excess_all) * 1e3:.2f} ms"
)
print("per run (medians over its cells): stalled share, stream o ms, mixture ms, o / mixture")
runs: dict[str, list[tuple[float, float, float]]] = {}
for name, share, _f, _e, o_s, mix in rows:
    runs.setdefault(name.split("/")[0], []).append((share, o_s, mix))
for run, v in runs.items():
    med = [float(np.median([x[k] for x in v])) for k in range(3)]
    ratio = float(np.median([x[1] / x[2] for x in v]))
    print(f"  {run:22s} {len(v):2d} cells  {med[0]:.2f}  {med[1] * 1e3:.2f}  {med[2] * 1e3:.2f}  {ratio:.2f}")
