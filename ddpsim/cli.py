"""The ``ddpsim`` command line: every command family registers its subcommands here.

``sim_commands`` (predict, sweep, models) never imports torch; ``run_commands``,
``ddp_commands``, ``calib_commands`` and ``tune_command`` import torch only
inside the handlers that run ranks, so ``ddpsim predict`` answers without
paying torch's import time. ``python -m ddpsim`` is the same entry (also as
``torchrun -m ddpsim ...`` for multi-node runs).

Errors (``realrun.errors.run_handler``): a
``ValueError`` (bad input) prints one line on stderr and exits 2; a
``RunFailure`` (a rank crashed, hung or timed out) prints one line and exits
1; Ctrl-C exits 130. No traceback reaches the user unless ``DDPSIM_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse's own convention)
        self.exit(2, f"ddpsim: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ddpsim",
        description="Predict, measure and tune data-parallel step time and gradient bucket size.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    from . import calib_commands, run_commands, sim_commands

    # Everything ships in one distribution: a failing import here is a bug to see, not to hide.
    sim_commands.add_commands(sub)
    run_commands.add_commands(sub)
    calib_commands.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from realrun.errors import run_handler  # no torch: errors.py imports nothing heavy

    return run_handler("ddpsim", args.func, args)


if __name__ == "__main__":
    sys.exit(main())
