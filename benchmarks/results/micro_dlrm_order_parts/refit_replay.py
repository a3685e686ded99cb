"""The stored accuracy-matrix cells fitted again by this version and their steps predicted again: what the new
in-step terms (the leftover, the optimizer's extra) do to cells measured before them. Nothing is measured.

    PYTHONPATH=. python benchmarks/results/micro_dlrm_order_parts/refit_replay.py OUT RUN [RUN ...]

For each cell of each RUN (a folder under benchmarks/results holding `<cell>/validation.calibration*.jsonl.gz`,
`validation.params*.json` and `validation.jsonl.gz`): `ddpsim calibrate --refit` of its calibration records into
OUT/<run>/<cell>/params.json, then its validation steps replayed (`calibration.validate.replay_validation`) from the
cell's own params ("stored"), from the refit with both terms set to 0, with the leftover only, and with both. Steps
recorded before validate wrote their turns are read with `--block 10` where the cell's method says turns of 10.
Prints one markdown row a cell (each term's fitted difference and 95 % interval, ms; median / worst absolute error
and coverage) and writes OUT/table.md.
"""

import json
import statistics as st
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from calibration.params import Params
from calibration.validate import replay_validation


def summary(res):
    e = [abs(r.error_pct) for r in res["rows"]]
    return f"{st.median(e):.2f} / {max(e):.2f} % ({(res.get('interval_coverage') or 0) * 100:.0f} %)"


def term(f):
    if not f or "difference_s" not in f:
        return "-"
    lo, hi = f["ci95_s"]
    return f"{f['difference_s'] * 1e3:+.2f} ({lo * 1e3:+.2f}..{hi * 1e3:+.2f})" + (" kept" if f["identified"] else "")


def with_terms(p, leftover, extra):
    ins = dict(p.probes["in_step"])
    if not leftover:
        ins["leftover_s"] = 0.0
    if not extra:
        ins["optimizer_extra_s"] = 0.0
    return replace(p, probes={**p.probes, "in_step": ins})


def main():
    out = Path(sys.argv[1])
    rows = [
        "| cell | leftover | optimizer extra | stored params | refit, neither term | + leftover | + both |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in map(Path, sys.argv[2:]):
        for cell in sorted(p for p in run.iterdir() if p.is_dir()):
            cal = sorted(cell.glob("validation.calibration*.jsonl.gz"))
            stored = sorted(cell.glob("validation.params*.json"))
            steps = cell / "validation.jsonl.gz"
            if not (cal and stored and steps.is_file()):
                continue
            o = out / run.name / cell.name
            o.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["ddpsim", "calibrate", "--refit", str(cal[0]), "--out", str(o / "params.json"), "--quiet"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            method = json.loads((cell / "validation.json").read_text()).get("method", "")
            block = 10 if "turns of 10" in method else None
            new = Params.load(o / "params.json")
            fit = new.probes["in_step"]
            res = {
                "stored": replay_validation(steps, Params.load(stored[0]), block=block),
                "neither": replay_validation(steps, with_terms(new, False, False), block=block),
                "leftover": replay_validation(steps, with_terms(new, True, False), block=block),
                "both": replay_validation(steps, new, block=block),
            }
            (o / "replays.json").write_text(
                json.dumps({k: [r.error_pct for r in v["rows"]] for k, v in res.items()}) + "\n"
            )
            rows.append(
                f"| {run.name} {cell.name} | {term(fit.get('leftover'))} | {term(fit.get('optimizer_extra'))} | "
                + " | ".join(summary(res[k]) for k in ("stored", "neither", "leftover", "both"))
                + " |"
            )
            print(rows[-1], flush=True)
    (out / "table.md").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
