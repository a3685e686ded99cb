"""The channel count chosen by the in-step probe instead of the stream probe (tried 2026-11-27, not adopted).

    python benchmarks/results/tried_not_adopted/channels_by_in_step_probe/pick.py OUT_DIR

OUT_DIR: what `../../channels_bracket/run.sh OUT_DIR` wrote (per cell, the refit and replay as this version
decides the count (base), and under one channel (ch1) and two (ch2), the in-step probe's contention fit made
under each). The rule tried: of base and the other count, keep the one whose in-step probe steps (both caps:
2 MiB and 1 KiB, real torch DDP steps the calibration checks but does not fit) the refit simulates closer,
in the RMS of log(simulated / measured), the same residual `calibration.params.probe_step_residual` takes.
Nothing is fitted to the validation rows; they only judge. Per cell: both residuals, the count kept, the
cell's median / worst |error| as decided and as picked, and `individual`'s signed error under each.
"""

import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from calibration.params import probe_step_residual  # noqa: E402


def residual(params: dict) -> float:
    return probe_step_residual(params["probes"]["in_step"])


if len(sys.argv) != 2:
    sys.exit("usage: pick.py OUT_DIR (the folder channels_bracket/run.sh wrote)")
tot: dict[str, list[list[float]]] = {"base": [], "pick": []}
for cell in sorted(p for p in Path(sys.argv[1]).iterdir() if (p / "base.params.json").exists()):
    P = {v: json.loads((cell / f"{v}.params.json").read_text()) for v in ("base", "ch1", "ch2")}
    V = {v: json.loads((cell / f"{v}.validation.json").read_text())["rows"] for v in P}
    other = "ch2" if P["base"]["channels"] == 1 else "ch1"
    pick = "base" if residual(P["base"]) <= residual(P[other]) else other
    err = {v: [abs(r["error_pct"]) for r in rows] for v, rows in V.items()}
    ind = {v: next(r["error_pct"] for r in rows if r["strategy"] == "individual") for v, rows in V.items()}
    tot["base"].append(err["base"])
    tot["pick"].append(err[pick])
    print(
        f"{cell.name:16s} base {P['base']['channels']} ch, probe residual {residual(P['base']) * 100:5.1f} %;"
        f" {other} {residual(P[other]) * 100:5.1f} % -> {pick:4s}"
        f"  base {st.median(err['base']):5.2f}/{max(err['base']):5.1f}  picked {st.median(err[pick]):5.2f}/{max(err[pick]):5.1f}"
        f"  individual base {ind['base']:+6.1f} picked {ind[pick]:+6.1f}"
    )
for k, cells in tot.items():
    print(
        f"{k:4s}: cells meeting both goals {sum(st.median(e) < 3 and max(e) < 10 for e in cells)} of {len(cells)};"
        f" median of cell medians {st.median(st.median(e) for e in cells):.2f} %, of cell worsts"
        f" {st.median(max(e) for e in cells):.1f} %"
    )
