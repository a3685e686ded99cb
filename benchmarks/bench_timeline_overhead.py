"""What the per-bucket timeline recording costs (issue #10: it must not change the step by more than the noise).

    python benchmarks/bench_timeline_overhead.py [--configs mlp:torch-ddp:1,gpt:torch-ddp:4,mlp:individual]
        [--steps 100] [--warmup 5] [--link-mbit RATE] [--out benchmarks/results/timeline_overhead.json]

Two gloo ranks, on loopback or (``--link-mbit``, root only) over an emulated link of that rate. For each configuration, ``realrun.timeline.measure_recording_overhead``
builds copies of the same DDP model on the same ranks: ``plain`` (as bench-ddp
runs it), ``recorded`` (a ``TimelineRecorder`` attached; torch DDP: the timed
all-reduce comm hook and a post-accumulate-grad hook per parameter;
hand-written wrappers: their native stamps) and, for torch DDP,
``torch_hook`` (torch's own Python ``allreduce_hook``, no stamps: what any
Python comm hook costs, since with one registered the reducer copies gradients
into the bucket and the hook divides, two passes where the built-in path makes
one). They are stepped in turn (A B C, C B A, ...), each step after a barrier,
the slower rank's time per step. Reported: each side's median with p10-p90 and
the paired ratio side / plain (median and p10-p90 over rounds), beside the load
average, since other work on this machine moves every number.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from realrun.launch import RankPool  # noqa: E402
from realrun.records import environment  # noqa: E402
from realrun.timeline import measure_recording_overhead  # noqa: E402


def parse_config(item: str) -> tuple[str, str, float | None]:
    """``model:strategy[:bucket_mb]``, read from the right: a user module's spec holds a colon of its own
    (``benchmarks/models/torch_transformer.py:build:torch-ddp:1``)."""
    parts = item.split(":")
    try:
        bucket: float | None = float(parts[-1])
        parts = parts[:-1]
    except ValueError:
        bucket = None
    if len(parts) < 2 or not all(parts) or (bucket is not None and not (math.isfinite(bucket) and bucket > 0)):
        raise SystemExit(f"--configs: {item!r} is not model:strategy[:bucket_mb] (bucket_mb a number > 0)")
    return ":".join(parts[:-1]), parts[-1], bucket


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--configs",
        default="mlp:torch-ddp:1,gpt:torch-ddp:4,mlp:individual",
        help="comma list of model:strategy[:bucket_mb]",
    )
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--link-mbit", type=float, default=None, help="emulated link rate, Mbit/s (root only)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/timeline_overhead.json"))
    args = ap.parse_args(argv)
    rows = []
    net: Any = nullcontext()
    if args.link_mbit is not None:
        from realrun.netns import EmulatedNetwork

        net = EmulatedNetwork(2, args.link_mbit)
    with net as n, RankPool(2, timeout_s=1800, **(n.pool_kwargs() if n is not None else {})) as pool:
        for item in args.configs.split(","):
            model, strategy, bucket = parse_config(item)
            load0 = [round(x, 2) for x in os.getloadavg()]
            t0 = time.time()
            r = measure_recording_overhead(pool, model, strategy, bucket, steps=args.steps, warmup=args.warmup)
            r["loadavg_before"], r["loadavg_after"] = load0, [round(x, 2) for x in os.getloadavg()]
            r["wall_s"] = time.time() - t0
            rows.append(r)
            parts = []
            for side in r["sides"]:
                q = r[side]
                txt = f"{side} {q['median_s'] * 1e3:.2f} ms [{q['p10_s'] * 1e3:.2f}, {q['p90_s'] * 1e3:.2f}]"
                if side != "plain":
                    ra = r[f"ratio_{side}"]
                    txt += f" (paired ratio to plain {ra['median']:.3f} [{ra['p10']:.3f}, {ra['p90']:.3f}])"
                parts.append(txt)
            b = "" if bucket is None else f" {bucket:g} MiB"
            print(
                f"{model} {strategy}{b}: " + ", ".join(parts) + f"; load {r['loadavg_before']} -> {r['loadavg_after']}",
                flush=True,
            )
    out = {
        "benchmark": "timeline_recording_overhead",
        "env": environment("gloo", 2),
        "steps": args.steps,
        "warmup": args.warmup,
        "link_mbit": args.link_mbit,
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
