"""What happens after backward's end in the in-step probe's recorded steps, measured and as fitted.

The thirty-third session read gpt's 52-call probe in run m69loop as "33.1 ms after the backward end measured, 13.1
simulated": the median step less the median backward end. Those two medians come from different steps of ten
(recorded steps 230-356 ms), so their difference is not any step's time after backward. Here, per stored
run and cell, at the fine cap (a call per 1 KiB or per gradient) and the coarse one:
  * per step: step less backward end (both across ranks, as the fit has them), then the median over steps;
  * the difference of the medians (what was read then);
  * the same from the fit's simulated step (``simulated_at_fit``);
  * the calls still running at backward's end: the time from backward's end (or a call's launch, if later) to
    its completion, summed per step, against o + n/w (the quiet stream fit's per-call cost, p = 2).

    python benchmarks/results/drain_after_backward_2026-12-07/drain.py benchmarks/results/accuracy_matrix_m*loop
"""

import gzip
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from calibration.timeline import across_ranks_timelines, step_terms  # noqa: E402


def cell(folder: Path) -> list[str]:
    recs = {}
    with gzip.open(folder / "validation.calibration.jsonl.gz", "rt") as fh:
        for line in fh:
            r = json.loads(line)
            if r["kind"] in ("step_probe", "step_probe_fine"):
                recs[r["kind"]] = r
    if "step_probe_fine" not in recs or "fit" not in recs.get("step_probe", {}):
        return []
    lin = json.loads((folder / "validation.params.json").read_text())["linear"]
    o, w = lin["o_s"], lin["w_bytes_per_s"]
    fit = recs["step_probe"]["fit"]
    out = []
    for kind, sim in (("step_probe", fit["simulated_at_fit"]), ("step_probe_fine", fit["fine"]["simulated_at_fit"])):
        per, steps, bwds, drain, quiet = [], [], [], [], []
        for tl in across_ranks_timelines(recs[kind]["timeline"]):
            t = step_terms(tl)
            be = t["compute_s"]
            per.append(t["step_s"] - be)
            steps.append(t["step_s"])
            bwds.append(be)
            prev, d, q = be, 0.0, 0.0
            for b in sorted(t["buckets"], key=lambda b: b["complete_s"]):
                if b["complete_s"] <= be:
                    continue
                d += b["complete_s"] - max(prev, b["launch_s"])
                q += o + b["bytes"] / w  # ring at p = 2: 2 (p - 1) / p * n / w = n / w
                prev = b["complete_s"]
            drain.append(d)
            quiet.append(q)
        ms = lambda xs: 1e3 * statistics.median(xs)  # noqa: E731
        n = len(recs[kind]["timeline"]["rank_timelines"][0][0]["buckets"])
        out.append(
            f"| {folder.parent.name[16:]} | {folder.name.split('-')[0]} | {n} | {ms(per):.1f} | "
            f"{ms(steps) - ms(bwds):.1f} | {1e3 * (sim['step_s'] - sim['compute_s']):.1f} | "
            f"{ms(drain):.1f} | {ms(quiet):.1f} |"
        )
    return out


def main(runs: list[str]) -> None:
    print(
        "| run | cell | calls | after backward, median per step (ms) | median step - median backward end | "
        "simulated at fit | queued calls' time after backward end | o + n/w of those calls |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for run in runs:
        for folder in sorted(Path(run).glob("*-loopback")):
            for line in cell(folder):
                print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
