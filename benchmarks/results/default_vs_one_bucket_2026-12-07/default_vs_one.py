"""torch DDP's default (a 1 MiB first bucket, then 25 MiB ones) against one bucket (`grid 64`), predicted and
measured, in every stored `tune --verify` run where the two were run as different configurations. The prediction
is the verify row's re-timed one (compute scaled to the compute-only steps measured beside the rows), so both sides
share the run's compute speed. Replay of stored results, nothing measured.

    python benchmarks/results/default_vs_one_bucket_2026-12-07/default_vs_one.py > .../table.txt
"""

import glob
import json
import statistics
from collections import defaultdict
from pathlib import Path

from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parents[1]


def pairs() -> dict[str, list[tuple[str, float, float]]]:
    out: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for f in sorted(glob.glob(str(ROOT / "tune_verify_*" / "*" / "tune.json"))):
        v = json.loads(Path(f).read_text()).get("verify") or {}
        rows = {r["setting"]: r for r in v.get("rows", [])}
        d = next((r for s, r in rows.items() if "default" in s.split(" = ")), None)
        o = next((r for s, r in rows.items() if "grid 64" in s.split(" = ")), None)
        if d is None or o is None or d is o or not d.get("retimed_predicted_step_s"):
            continue
        pred = (d["retimed_predicted_step_s"] / o["retimed_predicted_step_s"] - 1) * 100
        meas = (d["measured_median_s"] / o["measured_median_s"] - 1) * 100
        out[Path(f).parent.name].append((Path(f).parents[1].name, pred, meas))
    return out


def main() -> None:
    for cell, got in sorted(pairs().items()):
        for run, p, m in got:
            print(f"{cell:22s} {run:42s} default behind one bucket: predicted {p:+6.2f} %, measured {m:+6.2f} %")
    print()
    for cell, got in sorted(pairs().items()):
        under = sum(m > p for _, p, m in got)
        test = binomtest(under, len(got), 0.5)
        print(
            f"{cell}: {len(got)} runs; median predicted {statistics.median(p for _, p, _ in got):+.2f} %, measured "
            f"{statistics.median(m for _, _, m in got):+.2f} %; measured above predicted in {under} of {len(got)} "
            f"(sign test p = {test.pvalue:.3f}); median of measured less predicted "
            f"{statistics.median(m - p for _, p, m in got):+.2f} points"
        )


if __name__ == "__main__":
    main()
