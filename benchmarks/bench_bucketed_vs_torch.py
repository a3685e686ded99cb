"""The hand-written BucketedDDP against torch DDP at the same bucket size (issue: within 10%).

    python benchmarks/bench_bucketed_vs_torch.py [--model gpt] [--bucket-mb 1,4,25] [--rounds 8]
        [--steps 10] [--warmup 4] [--out benchmarks/results/bucketed_vs_torch_ddp.json]

Two gloo ranks, one pool. Each round times, per bucket size, BucketedDDP and
torch DDP back to back (``realrun.bench_ddp.measure_ddp``: warm-up, then timed
steps, the slower rank per step), alternating which goes first, so slow
drifts and other load on the machine hit both alike. Reported per bucket
size: the median step time of each over all rounds' raw steps, and the ratio
bucketed / torch as the median of the per-round ratios of medians, with the
range of those ratios. The raw records go to ``--records`` (JSONL) and the
summary to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from realrun.bench_ddp import combine_records, measure_compute, measure_ddp  # noqa: E402
from realrun.launch import RankPool  # noqa: E402
from realrun.records import RecordWriter  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt")
    ap.add_argument("--bucket-mb", default="1,4,25")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bucketed_vs_torch_ddp.json"))
    ap.add_argument("--records", default=None, help="append the raw ddp_step records here")
    args = ap.parse_args(argv)
    sizes = [float(x) for x in args.bucket_mb.split(",")]
    records = []
    ratios: dict[float, list[float]] = {b: [] for b in sizes}
    loads = []
    with RankPool(2) as pool, RecordWriter(args.records) as writer:
        for rnd in range(args.rounds):
            comp = measure_compute(pool, args.model, None, args.steps, args.warmup)
            for b in sizes:
                order = ("bucketed", "torch-ddp") if rnd % 2 == 0 else ("torch-ddp", "bucketed")
                med = {}
                for s in order:
                    rec = measure_ddp(pool, args.model, s, bucket_mb=b, steps=args.steps, warmup=args.warmup, compute=comp)
                    rec["round"] = rnd
                    writer.write(rec)
                    records.append(rec)
                    med[s] = rec["median_s"]
                    loads.append(rec["env"].get("loadavg"))
                ratios[b].append(med["bucketed"] / med["torch-ddp"])
                print(f"round {rnd + 1}/{args.rounds} {b:g} MiB: bucketed {med['bucketed'] * 1e3:.1f} ms, "
                      f"torch {med['torch-ddp'] * 1e3:.1f} ms, ratio {ratios[b][-1]:.3f}", file=sys.stderr)  # fmt: skip
    combined = {(r["strategy"], r["bucket_mb"]): r for r in combine_records(records)}
    rows = []
    for b in sizes:
        bk, tc = combined[("bucketed", b)], combined[("torch-ddp", b)]
        rows.append({
            "bucket_mb": b,
            "bucketed_median_s": bk["median_s"], "bucketed_p10_s": bk["p10_s"], "bucketed_p90_s": bk["p90_s"],
            "torch_ddp_median_s": tc["median_s"], "torch_ddp_p10_s": tc["p10_s"], "torch_ddp_p90_s": tc["p90_s"],
            "ratio_of_medians": bk["median_s"] / tc["median_s"],
            "ratio_median_of_rounds": statistics.median(ratios[b]),
            "ratio_rounds_min": min(ratios[b]), "ratio_rounds_max": max(ratios[b]),
            "round_ratios": ratios[b],
        })  # fmt: skip
    result = {
        "model": args.model, "world_size": 2, "backend": "gloo", "rounds": args.rounds, "steps": args.steps,
        "warmup": args.warmup, "env": records[0]["env"], "loadavg_seen": loads, "cpu_count": os.cpu_count(),
        "rows": rows,
    }  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"| bucket MiB | BucketedDDP ms (p10-p90) | torch DDP ms (p10-p90) | ratio (median of rounds, range) |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['bucket_mb']:g} | {r['bucketed_median_s'] * 1e3:.1f} ({r['bucketed_p10_s'] * 1e3:.1f}-"
              f"{r['bucketed_p90_s'] * 1e3:.1f}) | {r['torch_ddp_median_s'] * 1e3:.1f} ({r['torch_ddp_p10_s'] * 1e3:.1f}-"
              f"{r['torch_ddp_p90_s'] * 1e3:.1f}) | {r['ratio_median_of_rounds']:.3f} ({r['ratio_rounds_min']:.3f}-"
              f"{r['ratio_rounds_max']:.3f}) |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
