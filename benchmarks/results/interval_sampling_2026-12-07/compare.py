"""Rule S1's figures: coverage per cell, cells in 75-90 %, pooled coverage, before (base) and after, over replays.

    python compare.py BASE_PREFIX AFTER_PREFIX m59 m60 m62loop m63links m64loop

BASE_PREFIX/AFTER_PREFIX: replay folders' prefix (e.g. /tmp/rp/base_ and /tmp/rp/after_), each
``<prefix><run>/<cell>/validation.json`` from ``benchmarks/replay_matrix.sh``.
"""

import json
import sys
from pathlib import Path


def cells(prefix: str, run: str) -> dict[str, dict]:
    return {f.parent.name: json.loads(f.read_text()) for f in sorted(Path(prefix + run).glob("*/validation.json"))}


def covered(v: dict) -> tuple[int, int]:
    rows = [r for r in v["rows"] if r.get("predicted_p10_s") is not None]
    inside = sum(1 for r in rows if r["predicted_p10_s"] <= r["measured_median_s"] <= r["predicted_p90_s"])
    return inside, len(rows)


def main(base: str, after: str, runs: list[str]) -> None:
    tot = {"base": [0, 0, 0, 0], "after": [0, 0, 0, 0]}  # inside, rows, cells in band, cells
    fell = []
    print("| run | cell | before | after | before 80 % half-width (median, % of pred.) | after |")
    print("|---|---|---|---|---|---|")
    for run in runs:
        b, a = cells(base, run), cells(after, run)
        for name in sorted(b):
            if name not in a:
                print(f"| {run} | {name} | missing after |")
                continue
            for r0, r1 in zip(b[name]["rows"], a[name]["rows"]):
                assert r0["predicted_step_s"] == r1["predicted_step_s"], (run, name, r0["strategy"], r0["bucket_mb"])
            out = []
            for key, v in (("base", b[name]), ("after", a[name])):
                i, n = covered(v)
                t = tot[key]
                t[0] += i
                t[1] += n
                t[2] += 0.75 <= i / n <= 0.90
                t[3] += 1
                hw = sorted(
                    (r["predicted_p90_s"] - r["predicted_p10_s"]) / 2 / r["predicted_step_s"] * 100 for r in v["rows"]
                )
                out.append((i / n, hw[len(hw) // 2]))
            if 0.75 <= out[0][0] <= 0.90 and out[1][0] < 0.65:
                fell.append(f"{run}/{name}")
            print(f"| {run} | {name} | {out[0][0]:.0%} | {out[1][0]:.0%} | {out[0][1]:.2f} | {out[1][1]:.2f} |")
    for key, t in tot.items():
        print(f"{key}: pooled {t[0]} of {t[1]} ({t[0] / t[1]:.1%}), cells in 75-90 %: {t[2]} of {t[3]}")
    print("cells in band before that fell under 65 %:", ", ".join(fell) or "none")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
