"""rules.txt's V1: per run and round, the default's gap to 4 MiB (= 16 = 64), median over median of the round's steps;
the sd over the six rounds at each --min-seconds. Reads run.sh's folder.

    PYTHONPATH=. python benchmarks/results/verify_seconds_2026-12-08/gaps.py OUT
"""

import json
import statistics
import sys
from pathlib import Path

from realrun.records import iter_records

root = Path(sys.argv[1])
by_s: dict[str, list[float]] = {}
for run in sorted((p for p in root.glob("run*_s*") if p.is_dir()), key=lambda p: int(p.name[3 : p.name.index("_")])):
    s = run.name.split("_s")[1]
    steps: dict[tuple[int, str], list[float]] = {}
    for r in iter_records(next(run.glob("verify.jsonl*")), "ddp_step"):
        if r.get("setting") != "compute":
            steps.setdefault((r["round"], r["setting"]), []).extend(r["step_times_s"])
    names = {name for _, name in steps}
    four = next(n for n in names if "grid 4" in n.split(" = "))
    default = next(n for n in names if "default" in n.split(" = "))
    tune = json.loads((run / "tune.json").read_text())
    gaps = []
    for rnd in sorted({k for k, _ in steps}):
        g = (statistics.median(steps[(rnd, default)]) / statistics.median(steps[(rnd, four)]) - 1) * 100
        gaps.append(g)
        by_s.setdefault(s, []).append(g)
    n = len(steps[(0, four)])
    print(
        f"{run.name}: {n} steps a setting a round; default vs {four!r}: rounds "
        + ", ".join(f"{g:+.1f} %" for g in gaps)
        + f"; best measured {tune['verify']['best_measured_setting']!r}"
    )
for s, g in by_s.items():
    print(
        f"--min-seconds {s}: {len(g)} rounds, gap mean {statistics.fmean(g):+.2f} %, sd {statistics.stdev(g):.2f} points"
    )
if {"1", "4"} <= by_s.keys():
    r = statistics.stdev(by_s["4"]) / statistics.stdev(by_s["1"])
    print(f"V1: sd ratio 4 s / 1 s = {r:.2f} (adopt if <= 0.67): {'holds' if r <= 2 / 3 else 'fails'}")
