"""``python -m realrun COMMAND ...``: realrun's subcommands without the rest of ``ddpsim``.

This is the entry for multi-node runs under torchrun::

    torchrun --nnodes 2 --nproc-per-node 1 --rdzv-endpoint HOST:29500 -m realrun bench-allreduce --sizes 1M:64M

Commands see torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT), join the group from them, gather results on rank 0, and only
rank 0 prints and writes. Without those variables the commands spawn their
own ranks, as under ``ddpsim``. Exit codes as ``ddpsim``: 2 bad input, 1 a
failed run.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    from .cli import add_commands
    from .errors import run_handler

    parser = _Parser(prog="python -m realrun", description="realrun: measurements on real ranks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    add_commands(sub)
    args = parser.parse_args(argv)
    return run_handler(parser.prog, args.func, args)


if __name__ == "__main__":
    sys.exit(main())
