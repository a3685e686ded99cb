"""The in-step probe's steps against the calibrated model's, per stored cell: at each cap (2 MiB, 1 KiB, one bucket)
the recorded steps' median, the plain steps' median (the same configuration without the recorder, in the same
turns) and the step simulated at the fitted terms (as stored in the cell's params), and the cell's `individual` row
error. Where the 1 KiB probe's plain step is far under the simulated one, the many-call rows run long.

    python benchmarks/results/queued_calls_2026-11-29/probe_plain_vs_model.py benchmarks/results/accuracy_matrix_m4*
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from stored import cell_file, cells  # noqa: E402

for name, cell in cells(sys.argv[1:]):
    par, val = cell_file(cell, "validation.params*.json"), cell_file(cell, "validation.json")
    if not par or not val:
        continue
    ins = json.load(open(par))["probes"].get("in_step") or {}
    rows = {(r["strategy"], r["bucket_mb"]): r for r in json.load(open(val))["rows"]}
    out = []
    for cap, part in (("2 MiB", ins), ("1 KiB", ins.get("fine")), ("one bucket", ins.get("check"))):
        if not part or "measured" not in part:
            continue
        m, sim = part["measured"], (part.get("simulated_at_fit") or {}).get("step_s")
        if m.get("plain_step_s") and sim:
            out.append(
                f"{cap}: {m['step_s'] * 1e3:6.1f} rec / {m['plain_step_s'] * 1e3:6.1f} plain / {sim * 1e3:6.1f} sim"
                f" (sim/plain {sim / m['plain_step_s']:4.2f})"
            )
    if not out:
        continue
    ind = rows.get(("individual", None))
    print(f"{name:28s} " + " | ".join(out) + (f" | individual {ind['error_pct']:+.1f}%" if ind else ""))
