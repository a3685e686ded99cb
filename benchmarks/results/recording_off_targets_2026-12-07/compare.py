"""Base against patch over replayed runs: per cell median / worst |error| and 80 % coverage, the rules' figures.

python compare.py BASE_DIR PATCH_DIR RUN...   (each DIR/RUN/<cell>/validation.json from replay_matrix.sh)
"""

import json
import statistics
import sys
from pathlib import Path


def rows(path):
    v = json.loads(Path(path).read_text())
    out = {}
    for r in v["rows"]:
        name = r["strategy"] + (f" {r['bucket_mb']:g}" if r.get("bucket_mb") else "")
        m, p = r["measured_median_s"], r["predicted_step_s"]
        lo, hi = r.get("predicted_p10_s"), r.get("predicted_p90_s")
        inside = lo is not None and hi is not None and lo <= m <= hi
        out[name] = (100 * (p / m - 1), inside)
    return out


def main():
    base, patch, runs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    cells = []
    for run in runs:
        for cell in sorted((base / run).iterdir()):
            pv = patch / run / cell.name / "validation.json"
            if not (cell / "validation.json").exists() or not pv.exists():
                continue
            cells.append((run, cell.name, rows(cell / "validation.json"), rows(pv)))
    print("| run | cell | base median / worst (cov) | patch median / worst (cov) |")
    print("|---|---|---|---|")
    tot = {"base": [0, 0.0, 0, 0], "patch": [0, 0.0, 0, 0]}  # cells meeting both goals, summed medians, inside, rows
    for run, cell, b, p in cells:
        line = [run, cell]
        for tag, r in (("base", b), ("patch", p)):
            errs = [abs(e) for e, _ in r.values()]
            med, worst = statistics.median(errs), max(errs)
            cov = sum(i for _, i in r.values())
            t = tot[tag]
            t[0] += med < 3 and worst < 10
            t[1] += med
            t[2] += cov
            t[3] += len(r)
            line.append(f"{med:.2f} / {worst:.2f} % ({100 * cov / len(r):.0f} %)")
        print("| " + " | ".join(line) + " |")
    print()
    for tag, t in tot.items():
        print(
            f"{tag}: {len(cells)} cells, both error goals in {t[0]}, summed medians {t[1]:.1f}, "
            f"coverage {t[2]} / {t[3]} = {100 * t[2] / t[3]:.1f} %"
        )
    print()
    print("signed median error by configuration, loopback cells of gpt, cnn, lib (base -> patch):")
    for model in ("gpt", "cnn", "lib", "micro-dlrm"):
        sel = [(b, p) for run, cell, b, p in cells if cell == f"{model}-loopback"]
        if not sel:
            continue
        print(f"  {model} ({len(sel)} cells):")
        for name in ("individual", "torch-ddp 0.25", "bucketed 0.25", "sharded 0.25", "torch-ddp 64", "flat"):
            bs = [b[name][0] for b, _ in sel if name in b]
            ps = [p[name][0] for _, p in sel if name in p]
            print(f"    {name:16s} {statistics.median(bs):+6.2f} -> {statistics.median(ps):+6.2f} %")
    print()
    print("pooled over gpt, cnn, lib loopback cells:")
    for name in ("individual", "torch-ddp 0.25", "bucketed 0.25", "sharded 0.25", "torch-ddp 64", "flat"):
        sel = [(b, p) for run, cell, b, p in cells if cell in ("gpt-loopback", "cnn-loopback", "lib-loopback")]
        bs = [b[name][0] for b, _ in sel if name in b]
        ps = [p[name][0] for _, p in sel if name in p]
        print(f"    {name:16s} {statistics.median(bs):+6.2f} -> {statistics.median(ps):+6.2f} % ({len(bs)} cells)")


if __name__ == "__main__":
    main()
