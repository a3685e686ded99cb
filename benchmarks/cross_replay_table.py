"""Tables of a cross replay (benchmarks/cross_replay.sh): every calibration against every run's steps.

    python benchmarks/cross_replay_table.py OUT_DIR

Per workload: the median |error| of each (calibration run, measured run) pair, and how much of the signed
error moves with the calibration and how much with the measured steps: per configuration, the error of pair
(a, b) is split as overall + calibration a's part + measured run b's part + the rest (a two-way layout
without replication, fitted by means); reported are the spreads (standard deviation over runs) of the two parts,
median over configurations.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

PAIR = re.compile(r"cal-(?P<a>.+)_meas-(?P<b>.+)\.json$")


def load(folder: Path) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
    """(calibration runs, measured runs, the replays by pair)."""
    pairs = {}
    for f in sorted(folder.glob("cal-*_meas-*.json")):
        m = PAIR.search(f.name)
        if m:
            pairs[(m["a"], m["b"])] = json.loads(f.read_text())
    return sorted({a for a, _ in pairs}), sorted({b for _, b in pairs}), pairs


def short(run: str) -> str:
    return run.replace("accuracy_matrix_", "")


def table(workload: str, cals: list[str], meas: list[str], pairs: dict[tuple[str, str], dict]) -> list[str]:
    lines = [f"## {workload}", "", "median |error| (%), calibration run (row) against measured run (column):", ""]
    lines.append("| calibration \\ measured | " + " | ".join(short(r) for r in meas) + " | row median |")
    lines.append("|---" * (len(meas) + 2) + "|")
    for a in cals:
        cells = [pairs[(a, b)]["median_abs_error_pct"] for b in meas]
        txt = [f"**{c:.2f}**" if a == b else f"{c:.2f}" for c, b in zip(cells, meas)]
        lines.append(f"| {short(a)} | " + " | ".join(txt) + f" | {np.median(cells):.2f} |")
    cols = [np.median([pairs[(a, b)]["median_abs_error_pct"] for a in cals]) for b in meas]
    lines.append("| column median | " + " | ".join(f"{c:.2f}" for c in cols) + " | |")
    diag = [pairs[(r, r)]["median_abs_error_pct"] for r in cals if (r, r) in pairs]
    off = [p["median_abs_error_pct"] for (a, b), p in pairs.items() if a != b]
    lines.append("")
    if diag:
        lines.append(
            f"own calibration (diagonal): median {np.median(diag):.2f} %; another run's: median {np.median(off):.2f} %"
        )
    else:
        lines.append(f"median over all pairs: {np.median(off):.2f} %")

    # signed errors per configuration: err[a, b, c]
    keys = [(r["strategy"], r["bucket_mb"]) for r in next(iter(pairs.values()))["rows"]]
    err = np.full((len(cals), len(meas), len(keys)), np.nan)
    for (a, b), p in pairs.items():
        by = {(r["strategy"], r["bucket_mb"]): r["error_pct"] for r in p["rows"]}
        for k, key in enumerate(keys):
            err[cals.index(a), meas.index(b), k] = by.get(key, np.nan)
    cal_sd, meas_sd, rest_sd = [], [], []
    for k in range(len(keys)):
        e = err[:, :, k]
        if np.isnan(e).any():
            continue
        mu = e.mean()
        ra, cb = e.mean(axis=1) - mu, e.mean(axis=0) - mu
        rest = e - mu - ra[:, None] - cb[None, :]
        cal_sd.append(ra.std(ddof=1))
        meas_sd.append(cb.std(ddof=1))
        rest_sd.append(np.sqrt((rest**2).sum() / ((len(cals) - 1) * (len(meas) - 1))))
    lines += [
        "",
        f"signed error's spread over runs, median over {len(cal_sd)} configurations: "
        f"with the calibration {np.median(cal_sd):.2f} points, with the measured steps {np.median(meas_sd):.2f}, "
        f"the rest {np.median(rest_sd):.2f}",
        "",
        "per configuration (points of signed error; mean over all pairs, spread with calibration / with measured steps):",
        "",
    ]
    for k, (s, mb) in enumerate(keys):
        e = err[:, :, k]
        if np.isnan(e).any():
            continue
        mu = e.mean()
        ra, cb = e.mean(axis=1) - mu, e.mean(axis=0) - mu
        name = s if mb is None else f"{s} {mb:g}"
        lines.append(f"- {name}: {mu:+.1f}; {ra.std(ddof=1):.1f} / {cb.std(ddof=1):.1f}")
    return lines + [""]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: cross_replay_table.py OUT_DIR", file=sys.stderr)
        return 2
    root = Path(argv[0])
    out = ["# Cross replay: each run's calibration against each run's measured steps", ""]
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        cals, meas, pairs = load(folder)
        if len(cals) >= 2 and len(meas) >= 2 and len(pairs) == len(cals) * len(meas):
            out += table(folder.name, cals, meas, pairs)
        elif pairs:
            out += [f"## {folder.name}", "", f"{len(pairs)} of {len(cals)} x {len(meas)} replays: no table", ""]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
