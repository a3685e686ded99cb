"""Judge J1's table (P2 of rules.txt): per m70loop cell, the replay of its own validation rows from its calibration
refitted whole (full: the probe at >= 4 s a cap) and from each >= 1 s window (w<i>): median and worst |error|,
coverage, `individual`'s error, and whether both error goals hold; then P2 over the cells.

    python benchmarks/results/probe_length_judge_2026-12-08/j1_table.py J1_OUT
"""

import json
import statistics
import sys
from pathlib import Path


def row_of(v: dict, strategy: str) -> float | None:
    return next((r["error_pct"] for r in v["rows"] if r["strategy"] == strategy), None)


def main(root: Path) -> None:
    print("| cell | params | median / worst abs. error | coverage | `individual` | both goals |")
    print("|---|---|---|---|---|---|")
    med: dict[str, dict[str, float]] = {"full": {}, "windows": {}}
    goals: dict[str, dict[str, list[bool]]] = {"full": {}, "windows": {}}
    for cell in sorted(p for p in root.iterdir() if p.is_dir()):
        wmed = []
        for f in sorted(cell.glob("replay_*.json")):
            name = f.stem.removeprefix("replay_")
            v = json.loads(f.read_text())
            m, w = v["median_abs_error_pct"], v["worst_abs_error_pct"]
            ok = m < 3 and w < 10
            ind = row_of(v, "individual")
            cov = v.get("interval_coverage")
            print(
                f"| {cell.name} | {name} | {m:.2f} / {w:.2f} % | {'-' if cov is None else f'{cov * 100:.0f} %'} "
                f"| {'-' if ind is None else f'{ind:+.1f} %'} | {'yes' if ok else 'no'} |"
            )
            if name == "full":
                med["full"][cell.name] = m
                goals["full"][cell.name] = [ok]
            else:
                wmed.append(m)
                goals["windows"].setdefault(cell.name, []).append(ok)
        if wmed:
            med["windows"][cell.name] = statistics.fmean(wmed)
    print()
    for v in ("full", "windows"):
        cells = sorted(med[v])
        print(
            f"{v}: median over cells of the cell's median |error| (windows: mean over windows first) "
            f"{statistics.median(med[v][c] for c in cells):.2f} %; cells meeting both goals "
            f"{sum(statistics.fmean(goals[v][c]) for c in cells):.2f} of {len(cells)}"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
