"""The measuring subcommands of ``ddpsim`` (bench-allreduce, check, profile, bench-ddp): a small registry.

Each entry is a function ``register(subparsers)`` that adds one subcommand and
sets its handler with ``set_defaults(func=...)``; a handler returns an exit
code. Importing this module must not import torch: handlers import it (through
the modules that run ranks) only when they run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from realrun.bench_allreduce import (
    DEFAULT_SIZES,
    DTYPES,
    IMPLS,
    MAX_WORLD_SIZE,
    SIZES_HELP,
    AllreduceBenchSpec,
    estimate_total_s,
    format_table,
    parse_impls,
    parse_sizes,
    run_spawned,
    run_torchrun_rank,
)
from realrun.netns import netns_skip_reason
from realrun.records import read_records

from .cliutil import (
    add_backend_arg,
    add_csv,
    csv_stdout,
    emit_csv,
    emit_json,
    link_mbit,
    number,
    rescue_records,
    spawn_backend,
    timeout_s,
    torchrun_backend,
    world_sizes,
)


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
def _arg_type(fn: Any, name: str) -> Any:
    """An argparse type from a parser of realrun that raises ``ValueError``."""
    import argparse

    def parse(text: str) -> Any:
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = name
    return parse


def add_arguments(p: Any) -> None:
    add_backend_arg(p)
    p.add_argument(
        "--world-size",
        type=world_sizes(2, MAX_WORLD_SIZE),
        default=None,
        help="ranks: 2, 4, 6 or a list like 2,4,6 (default 2; under torchrun: its world)",
    )
    p.add_argument("--sizes", type=_arg_type(parse_sizes, "sizes"), default=DEFAULT_SIZES, help=SIZES_HELP)
    p.add_argument(
        "--impl", type=_arg_type(parse_impls, "impl"), default="native", help=f"comma list of {', '.join(IMPLS)}"
    )
    p.add_argument("--dtype", default="float32", choices=tuple(DTYPES), help="element type")
    p.add_argument(
        "--iters", type=number(int, 1, 1_000_000), default=None, help="timed iterations per point (default: by size)"
    )
    p.add_argument(
        "--warmup",
        type=number(int, 0, 100_000),
        default=None,
        help="untimed iterations per point (per round with --rounds; default: by size)",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="RECORDS.jsonl",
        help="append one JSONL record per point to this file, as taken (a new file, or one holding ddpsim records)",
    )
    p.add_argument(
        "--plot", default=None, metavar="PNG", help="draw time vs size (log-log) from the records (.png, .pdf or .svg)"
    )
    p.add_argument(
        "--from",
        dest="from_records",
        default=None,
        metavar="JSONL",
        help="with --plot: plot this records file (bench-allreduce or calibrate records) and run nothing",
    )
    p.add_argument("--json", action="store_true", help="print the records as JSON instead of the table")
    p.add_argument(
        "--link-mbit",
        type=link_mbit,
        default=None,
        metavar="RATE",
        help="emulate a link of this rate per rank, Mbit/s (or with units: 1Gbit/s); network namespaces + tbf, root only",
    )
    p.add_argument(
        "--interleave",
        action="store_true",
        help="alternate the implementations call by call (fairer comparison on a busy machine)",
    )
    p.add_argument(
        "--rounds",
        type=number(int, 1, 1000),
        default=1,
        help="sweep the sizes this many times (as given, then reversed, ...), each round taking an even share of "
        "every point's calls after --warmup untimed ones, so that a slow stretch of a shared machine falls on all "
        "sizes alike; a point's record is written as its last round ends (default 1)",
    )
    p.add_argument(
        "--timeout-s", type=timeout_s, default=600.0, help="a point that takes longer fails the run, seconds"
    )
    add_csv(p, "the table (one row per point: sizes, median/p10/p90 times, algbw, busbw, #wrong)")
    p.set_defaults(_outputs={"out": "jsonl", "plot": "figure"})


def spec_from_args(args: Any, world_sizes: tuple[int, ...], backend: str = "gloo") -> AllreduceBenchSpec:
    return AllreduceBenchSpec(
        backend=backend,
        world_sizes=world_sizes,
        sizes_bytes=tuple(args.sizes) if not isinstance(args.sizes, str) else parse_sizes(args.sizes),
        impls=tuple(args.impl) if not isinstance(args.impl, str) else parse_impls(args.impl),
        dtype=args.dtype,
        iters=args.iters,
        warmup=args.warmup,
        link_mbit=args.link_mbit,
        timeout_s=args.timeout_s,
        interleave=args.interleave,
        rounds=args.rounds,
    )


def _plot(records: list[dict[str, Any]], png: str) -> None:
    from calibration.plots import plot_allreduce  # the one all-reduce plot; reads both record shapes

    plot_allreduce(records, None, png)


# the nccl-tests table's columns, with units in the names (one row per record; raw times stay in the JSONL)
CSV_COLUMNS = [
    "kind",
    "impl",
    "backend",
    "world_size",
    "msg_bytes",
    "count",
    "dtype",
    "iters",
    "median_s",
    "p10_s",
    "p90_s",
    "mean_s",
    "min_s",
    "algbw_gbps",
    "busbw_gbps",
    "wrong",
    "link_mbit",
    "time_stat",
]


def _report(records: list[dict[str, Any]], args: Any) -> int:
    csv_file = emit_csv(args, records, CSV_COLUMNS)
    if csv_stdout(args):
        pass
    elif args.json:
        emit_json(args, records)
    else:
        print(format_table(records))
        if csv_file:
            print(f"# csv: {csv_file}")
    if args.plot:
        try:
            _plot(records, args.plot)
        except (OSError, ValueError) as e:  # the measurement is taken: keep it, say where
            where = args.out or rescue_records(records, "bench-allreduce")
            print(
                f"ddpsim: error: the plot {args.plot} could not be written ({e}); the records are in {where}",
                file=sys.stderr,
            )
            return 1
        if not args.quiet:
            print(f"bench-allreduce: plot written to {args.plot}", file=sys.stderr)
    wrong = sum(int(r.get("wrong") or 0) for r in records)
    if wrong:
        print(f"ddpsim: error: {wrong} wrong values after the collective (see #wrong)", file=sys.stderr)
        return 1
    return 0


def main(args: Any) -> int:
    """Handler of ``ddpsim bench-allreduce`` (also under ``torchrun -m ddpsim``)."""
    from realrun.launch import run_under_torchrun, torchrun_env_present

    if args.from_records is not None:
        if not args.plot:
            raise ValueError("--from only plots: give --plot PNG too")
        records = [r for r in read_records(args.from_records) if r.get("kind") in ("allreduce", "broadcast")]
        if not records:
            raise ValueError(f"{args.from_records} holds no allreduce or broadcast records")
        try:
            _plot(records, args.plot)
        except ValueError as e:
            raise ValueError(f"{args.from_records}: {e}") from None
        if not args.quiet:
            print(f"bench-allreduce: plot of {len(records)} records written to {args.plot}", file=sys.stderr)
        return 0
    if torchrun_env_present():
        import os

        world = int(os.environ["WORLD_SIZE"])
        if args.world_size is not None and list(args.world_size) != [world]:
            raise ValueError(f"--world-size {args.world_size} disagrees with torchrun's WORLD_SIZE={world}")
        if args.link_mbit is not None:
            raise ValueError("--link-mbit emulates links between spawned ranks; it cannot be used under torchrun")
        backend = torchrun_backend(args)
        spec = spec_from_args(args, (world,), backend)
        records = run_under_torchrun(run_torchrun_rank, spec, args.out, backend=backend)
        if int(os.environ["RANK"]) == 0:
            return _report(records, args)
        return 0
    worlds = tuple(args.world_size or (2,))
    spec = spec_from_args(args, worlds, spawn_backend(args, worlds, args.link_mbit))
    reason = netns_skip_reason(spec.link_mbit)
    if reason:
        print(f"bench-allreduce: skipped: needs root ({reason})", file=sys.stderr)
        return 0
    est = estimate_total_s(spec)
    if est > 60 and not args.quiet:
        print(
            f"bench-allreduce: note: this sweep will take roughly {est / 60:.0f} min or more "
            "(large messages; choose --sizes/--iters to shorten)",
            file=sys.stderr,
        )
    records = run_spawned(spec, args.out, progress=not args.quiet)
    return _report(records, args)


def _ddp_commands(sub: Any) -> None:
    from . import ddp_commands as ddp_cli

    ddp_cli.register_check(sub)
    ddp_cli.register_profile(sub)
    ddp_cli.register_bench_ddp(sub)


def _roofline(sub: Any) -> None:
    from .device_model import add_roofline_command

    add_roofline_command(sub)


REGISTRY: list[Callable[[Any], None]] = [_bench_allreduce, _ddp_commands, _roofline]


def add_commands(sub: Any) -> None:
    for register in REGISTRY:
        register(sub)
