"""Rule H1's figures: per cell median and worst |error|, both error goals, coverage, before and after, over replays.

    python compare_h1.py BASE_PREFIX AFTER_PREFIX m59 m60 m63links

Cells are those of ``AFTER_PREFIX<run>/`` (the link cells); each ``<prefix><run>/<cell>/validation.json`` from
``benchmarks/replay_matrix.sh``.
"""

import json
import statistics
import sys
from pathlib import Path


def load(prefix: str, run: str, cell: str) -> dict:
    return json.loads((Path(prefix + run) / cell / "validation.json").read_text())


def figures(v: dict) -> tuple[float, float, int, int]:
    errs = [abs(r["error_pct"]) for r in v["rows"]]
    inside = sum(1 for r in v["rows"] if r["predicted_p10_s"] <= r["measured_median_s"] <= r["predicted_p90_s"])
    return statistics.median(errs), max(errs), inside, len(errs)


def row_error(v: dict, strategy: str, mb: float) -> float:
    (r,) = [r for r in v["rows"] if r["strategy"] == strategy and r["bucket_mb"] == mb]
    return r["error_pct"]


def main(base: str, after: str, runs: list[str]) -> None:
    tot = {k: {"med": 0.0, "goals": 0, "inside": 0, "rows": 0} for k in ("before", "after")}
    print("| run | cell | before: median / worst % (coverage) | after | torch-ddp 0.25 MiB error before / after |")
    print("|---|---|---|---|---|")
    for run in runs:
        for d in sorted(Path(after + run).glob("*/validation.json")):
            cell = d.parent.name
            out = []
            for key, v in (("before", load(base, run, cell)), ("after", load(after, run, cell))):
                med, worst, inside, n = figures(v)
                t = tot[key]
                t["med"] += med
                t["goals"] += med < 3 and worst < 10
                t["inside"] += inside
                t["rows"] += n
                out.append(f"{med:.2f} / {worst:.2f} ({inside / n:.0%})")
            e = [row_error(load(p, run, cell), "torch-ddp", 0.25) for p in (base, after)]
            print(f"| {run} | {cell} | {out[0]} | {out[1]} | {e[0]:+.2f} / {e[1]:+.2f} |")
    for key, t in tot.items():
        print(
            f"{key}: summed median |error| {t['med']:.2f}, cells meeting both error goals {t['goals']}, "
            f"pooled coverage {t['inside']} of {t['rows']} ({t['inside'] / t['rows']:.1%})"
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
