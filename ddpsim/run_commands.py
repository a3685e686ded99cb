"""The measuring subcommands of ``ddpsim`` (bench-allreduce, check, profile, bench-ddp): a small registry.

Each entry is a function ``register(subparsers)`` that adds one subcommand and
sets its handler with ``set_defaults(func=...)``; a handler returns an exit
code. Importing this module must not import torch: handlers import it (through
the modules that run ranks) only when they run.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

from realrun.bench_allreduce import (
    DEFAULT_SIZES,
    DTYPES,
    IMPLS,
    SIZES_HELP,
    AllreduceBenchSpec,
    estimate_total_s,
    format_table,
    parse_impls,
    parse_sizes,
    parse_world_sizes,
    run_spawned,
    run_torchrun_rank,
)
from realrun.records import read_records


def _bench_allreduce(sub: Any) -> None:
    m = sys.modules[__name__]
    p = sub.add_parser(
        "bench-allreduce",
        help="all-reduce micro-benchmark (nccl-tests style table, JSONL records)",
        description=(
            "Time all-reduce (native, hand-written ring and naive) and broadcast on real ranks: warm-up, "
            "many timed iterations with a barrier before each, the slowest rank per iteration, "
            "median and p10/p90. algbw = bytes/time, busbw = algbw*2(p-1)/p (nccl-tests); GB/s = 1e9 B/s."
        ),
    )
    m.add_arguments(p)
    p.set_defaults(func=m.main)


# ---- bench-allreduce -----------------------------------------------------------------
def add_arguments(p: Any) -> None:
    p.add_argument("--backend", default="gloo", choices=("gloo", "nccl"), help="gloo (CPU) or nccl (GPU); default gloo")
    p.add_argument("--world-size", default=None, help="ranks: 2, 4, 6 or a list like 2,4,6 (default 2; under torchrun: its world)")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=SIZES_HELP)
    p.add_argument("--impl", default="native", help=f"comma list of {', '.join(IMPLS)} (default native)")
    p.add_argument("--dtype", default="float32", choices=tuple(DTYPES), help="element type (default float32)")
    p.add_argument("--iters", type=int, default=None, help="timed iterations per point (default: by size)")
    p.add_argument("--warmup", type=int, default=None, help="untimed iterations per point (default: by size)")
    p.add_argument("--out", default=None, help="append one JSONL record per point to this file, as taken")
    p.add_argument("--plot", default=None, metavar="PNG", help="draw time vs size (log-log) from the records")
    p.add_argument("--from", dest="from_records", default=None, metavar="JSONL",
                   help="with --plot: plot this records file and run nothing")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the records as JSON instead of the table")
    p.add_argument("--link-mbit", type=float, default=None,
                   help="emulate a link of this many Mbit/s per rank (network namespaces + tbf; root only)")  # fmt: skip
    p.add_argument("--interleave", action="store_true",
                   help="alternate the implementations call by call (fairer comparison on a busy machine)")  # fmt: skip
    p.add_argument("--timeout-s", type=float, default=600.0, help="a point that takes longer fails the run (default 600)")


def spec_from_args(args: Any, world_sizes: tuple[int, ...]) -> AllreduceBenchSpec:
    return AllreduceBenchSpec(
        backend=args.backend,
        world_sizes=world_sizes,
        sizes_bytes=parse_sizes(args.sizes),
        impls=parse_impls(args.impl),
        dtype=args.dtype,
        iters=args.iters,
        warmup=args.warmup,
        link_mbit=args.link_mbit,
        timeout_s=args.timeout_s,
        interleave=args.interleave,
    )


def _report(records: list[dict[str, Any]], args: Any) -> None:
    if args.json:
        print(json.dumps(records))
    else:
        print(format_table(records))
    if args.plot:
        from realrun.plot_allreduce import plot_allreduce

        plot_allreduce(records, args.plot)
        print(f"bench-allreduce: plot written to {args.plot}", file=sys.stderr)


def main(args: Any) -> int:
    """Handler of ``ddpsim bench-allreduce`` (also under ``torchrun -m ddpsim``)."""
    from realrun.launch import run_under_torchrun, torchrun_env_present

    if args.from_records is not None:
        if not args.plot:
            raise ValueError("--from only plots: give --plot PNG too")
        records = [r for r in read_records(args.from_records) if r.get("kind") in ("allreduce", "broadcast")]
        if not records:
            raise ValueError(f"{args.from_records} holds no allreduce or broadcast records")
        from realrun.plot_allreduce import plot_allreduce

        plot_allreduce(records, args.plot)
        print(f"bench-allreduce: plot of {len(records)} records written to {args.plot}", file=sys.stderr)
        return 0
    if torchrun_env_present():
        import os

        world = int(os.environ["WORLD_SIZE"])
        if args.world_size is not None and parse_world_sizes(args.world_size) != (world,):
            raise ValueError(f"--world-size {args.world_size} disagrees with torchrun's WORLD_SIZE={world}")
        if args.link_mbit is not None:
            raise ValueError("--link-mbit emulates links between spawned ranks; it cannot be used under torchrun")
        spec = spec_from_args(args, (world,))
        records = run_under_torchrun(run_torchrun_rank, spec, args.out, backend=args.backend)
        if int(os.environ["RANK"]) == 0:
            _report(records, args)
        return 0
    spec = spec_from_args(args, parse_world_sizes(args.world_size or "2"))
    if spec.link_mbit is not None:
        from realrun.netns import NetnsUnavailable, require_netns

        try:
            require_netns()
        except NetnsUnavailable as e:
            print(f"bench-allreduce: skipped: needs root ({e})", file=sys.stderr)
            return 0
    est = estimate_total_s(spec)
    if est > 60:
        print(f"bench-allreduce: note: this sweep will take roughly {est / 60:.0f} min or more "
              "(large messages; choose --sizes/--iters to shorten)", file=sys.stderr)  # fmt: skip
    records = run_spawned(spec, args.out)
    _report(records, args)
    return 0


def _ddp_commands(sub: Any) -> None:
    from . import ddp_commands as ddp_cli

    ddp_cli.register_check(sub)
    ddp_cli.register_profile(sub)
    ddp_cli.register_bench_ddp(sub)


REGISTRY: list[Callable[[Any], None]] = [_bench_allreduce, _ddp_commands]


def add_commands(sub: Any) -> None:
    for register in REGISTRY:
        register(sub)
