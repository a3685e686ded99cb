"""The ``ddpsim`` command line: each floor registers its own subcommands here.

``simulator.cli`` (predict, sweep) never imports torch; ``realrun.cli`` and this
floor import torch only inside the handlers that run ranks, so ``ddpsim
predict`` answers without paying torch's import time.

Errors (``realrun.errors.run_handler``, shared with ``python -m realrun``): a
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
    from simulator import cli as sim_cli

    sim_cli.add_commands(sub)
    try:
        from realrun import cli as run_cli
    except ImportError:  # realrun floor not present
        run_cli = None
    if run_cli is not None:
        run_cli.add_commands(sub)
    try:
        from calibration import commands as cal_cmds
    except ImportError:
        cal_cmds = None
    if cal_cmds is not None:
        cal_cmds.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from realrun.errors import run_handler  # no torch: errors.py imports nothing heavy

    return run_handler("ddpsim", args.func, args)


if __name__ == "__main__":
    sys.exit(main())
