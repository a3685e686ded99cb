"""Where one channel and two bracket the measured steps, and what a probe-weighted mix of the two would give.

    python benchmarks/results/channels_bracket/bracket.py OUT_DIR=CELL_DIR ...   (run.sh: every cell below)

OUT_DIR: a `replay_channels.sh` output (base / ch1 / ch2 replays of one cell); CELL_DIR: the cell whose
records it replayed (for the stream probe). Per cell: median / worst |error| of the three and of the mix;
per many-call row (> 4 calls) whether the measured median lies between the ch1 and ch2 predictions.

The mix weighs two channels by f, the share of a second channel the stream probe saw: per size,
f = (s - 1) / (s2 - 1), s the measured blocking / async per-call time (16 calls launched at once), s2
what two channels sharing the bandwidth would give, (o + n/w) / (o/2 + n/w); f is the median over sizes,
clipped to [0, 1]. o and w are the refit's (ch1). Nothing is measured and nothing is fitted to the rows.
"""

import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from realrun.records import read_records  # noqa: E402


def share(cell: Path, o: float, w: float) -> float:
    recs = next(cell.glob("validation.calibration*.jsonl*"))
    fs = []
    for r in read_records(recs):
        if r.get("kind") != "allreduce" or r.get("impl") != "stream" or not r.get("async_times_s"):
            continue
        s = st.median(r["times_s"]) / st.median(r["async_times_s"])
        x = r["msg_bytes"] / w
        s2 = (o + x) / (o / 2 + x)
        fs.append((s - 1) / (s2 - 1))
    return min(1.0, max(0.0, st.median(fs))) if fs else 0.0


def key(r):
    b = r.get("bucket_mb")
    return r["strategy"] + ("" if b is None else f" {b:g}")


if len(sys.argv) < 2:
    sys.exit("usage: bracket.py OUT_DIR=CELL_DIR ... (run.sh gives them; no cell was replayed)")
tot = {"base": [], "ch1": [], "ch2": [], "mix": []}
between = [0, 0]
for arg in sys.argv[1:]:
    out, cell = (Path(x) for x in arg.split("="))
    v = {k: json.loads((out / f"{k}.validation.json").read_text())["rows"] for k in ("base", "ch1", "ch2")}
    p1 = json.loads((out / "ch1.params.json").read_text())
    base_p = json.loads((out / "base.params.json").read_text())
    f = share(cell, p1["linear"]["o_s"], p1["linear"]["w_bytes_per_s"])
    mix = []
    inb = []
    for a, b, c in zip(v["base"], v["ch1"], v["ch2"]):
        m, y1, y2 = a["measured_median_s"], b["predicted_step_s"], c["predicted_step_s"]
        y = y1 + f * (y2 - y1)
        mix.append((y / m - 1) * 100)
        if (a.get("n_buckets") or 0) > 4:
            inb.append(min(y1, y2) <= m <= max(y1, y2))
    between[0] += sum(inb)
    between[1] += len(inb)
    errs = {k: [abs(r["error_pct"]) for r in rows] for k, rows in v.items()}
    errs["mix"] = [abs(e) for e in mix]
    for k in tot:
        tot[k].append(errs[k])
    line = "  ".join(f"{k} {st.median(e):5.2f}/{max(e):5.1f}" for k, e in errs.items())
    ind = (
        {key(r): r["error_pct"] for r in v["ch1"]}.get("individual"),
        {key(r): r["error_pct"] for r in v["ch2"]}.get("individual"),
    )
    print(
        f"{out.name:18s} ch={base_p['channels']} f={f:4.2f}  {line}  individual ch1 {ind[0]:+6.1f} ch2 {ind[1]:+6.1f}"
        f" mix {mix[[key(r) for r in v['base']].index('individual')]:+6.1f}  many-call rows between: {sum(inb)}/{len(inb)}"
    )
print(f"many-call rows (> 4 calls) whose measured median lies between ch1 and ch2: {between[0]} of {between[1]}")
for k, cells in tot.items():
    print(
        f"{k:5s}: cells meeting both goals {sum(st.median(e) < 3 and max(e) < 10 for e in cells)} of {len(cells)};"
        f" median of cell medians {st.median(st.median(e) for e in cells):.2f} %, of cell worsts {st.median(max(e) for e in cells):.1f} %"
    )
