"""realrun's subcommands of ``ddpsim``: a small registry.

Each entry is a function ``register(subparsers)`` that adds one subcommand and
sets its handler with ``set_defaults(func=...)``; a handler returns an exit
code. Importing this module must not import torch: handlers import it (through
the modules that run ranks) only when they run.
"""

from __future__ import annotations

from typing import Any, Callable


def _bench_allreduce(sub: Any) -> None:
    from . import bench_allreduce as m

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


def _ddp_commands(sub: Any) -> None:
    from . import ddp_cli

    ddp_cli.register_check(sub)
    ddp_cli.register_profile(sub)
    ddp_cli.register_bench_ddp(sub)


REGISTRY: list[Callable[[Any], None]] = [_bench_allreduce, _ddp_commands]


def add_commands(sub: Any) -> None:
    for register in REGISTRY:
        register(sub)
