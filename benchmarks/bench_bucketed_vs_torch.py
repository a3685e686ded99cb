"""The hand-written BucketedDDP against torch DDP at the same bucket size (issue: within 10%).

    python benchmarks/bench_bucketed_vs_torch.py [--model gpt] [--bucket-mb 1,4,25] [--steps 40] [--warmup 5]
        [--out benchmarks/results/bucketed_vs_torch_ddp.json]

Two gloo ranks. This machine is shared and its load drifts by a factor of two
within minutes, so the two are not timed one after the other: for each bucket
size, ``realrun.bench_ddp.measure_interleaved`` builds a compute-only model,
BucketedDDP and torch DDP side by side and steps them in turn (A B C, C B A,
...), each step after a barrier, the slower rank's time per step. Reported:
each one's median step time with p10-p90, and the paired ratio BucketedDDP /
torch DDP (median over rounds of the two steps taken back to back).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from realrun.bench_ddp import measure_interleaved  # noqa: E402
from realrun.launch import RankPool  # noqa: E402
from realrun.records import environment  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt")
    ap.add_argument("--bucket-mb", default="1,4,25")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bucketed_vs_torch_ddp.json"))
    args = ap.parse_args(argv)
    sizes = [float(x) for x in args.bucket_mb.split(",")]
    rows = []
    measured = []
    loads = [os.getloadavg()[0]]
    with RankPool(2) as pool:
        for b in sizes:
            res = measure_interleaved(
                pool,
                args.model,
                [("torch-ddp", b), ("bucketed", b), ("compute", None)],
                steps=args.steps,
                warmup=args.warmup,
            )
            loads.append(os.getloadavg()[0])
            tc, bk, comp = res
            measured.append((b, tc, bk, comp))
            rows.append(
                {
                    "bucket_mb": b,
                    "torch_ddp": tc.to_dict(),
                    "bucketed": bk.to_dict(),
                    "compute": comp.to_dict(),
                    "ratio_bucketed_to_torch": bk.ratio_to_first,
                }
            )
            print(
                f"{b:g} MiB: bucketed {bk.median_s * 1e3:.1f} ms, torch {tc.median_s * 1e3:.1f} ms, "
                f"compute {comp.median_s * 1e3:.1f} ms, paired ratio {bk.ratio_to_first:.3f}",
                file=sys.stderr,
            )
    env = environment("gloo", 2, loadavg_1min_seen=loads, threads_per_rank=pool.threads_per_rank)
    result = {
        "model": args.model,
        "world_size": 2,
        "steps": args.steps,
        "warmup": args.warmup,
        "env": env,
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print("| bucket MiB | BucketedDDP ms (p10-p90) | torch DDP ms (p10-p90) | compute only ms | paired ratio |")
    print("|---|---|---|---|---|")
    for b, tc, bk, c in measured:
        print(
            f"| {b:g} | {bk.median_s * 1e3:.1f} ({bk.p10_s * 1e3:.1f}-{bk.p90_s * 1e3:.1f}) | "
            f"{tc.median_s * 1e3:.1f} ({tc.p10_s * 1e3:.1f}-{tc.p90_s * 1e3:.1f}) | "
            f"{c.median_s * 1e3:.1f} | {bk.ratio_to_first:.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
