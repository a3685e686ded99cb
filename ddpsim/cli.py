"""The ``ddpsim`` command line: every command family registers its subcommands here.

``sim_commands`` (predict, sweep, models) never imports torch; ``run_commands``,
``ddp_commands``, ``calib_commands`` and ``tune_command`` import torch only
inside the handlers that run ranks, so ``ddpsim predict`` answers without
paying torch's import time. ``python -m ddpsim`` is the same entry (also as
``torchrun -m ddpsim ...`` for multi-node runs).

Errors (``realrun.errors.run_handler``): a
``ValueError`` (bad input) prints one line on stderr and exits 2; a
``RunFailure`` (a rank crashed, hung or timed out) prints one line (the rest
of its message, tracebacks and stacks included, goes to a file that line
names) and exits 1; Ctrl-C exits 130; a warning is one line. No traceback reaches the user unless ``DDPSIM_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):  # noqa: ANN002, ANN003 - argparse's own signature
        from .cliutil import HelpFormatter

        if kwargs.get("formatter_class") in (None, argparse.HelpFormatter, argparse.RawDescriptionHelpFormatter):
            kwargs["formatter_class"] = HelpFormatter  # every flag shows its default
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one line, exit 2 (argparse's own convention)
        self.exit(2, f"ddpsim: error: {message}\n")


class _VersionAction(argparse.Action):
    """``--version``, looked up only when asked (importlib.metadata costs tens of ms at every start)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kw: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from .cliutil import ddpsim_version

        print(f"ddpsim {ddpsim_version()}")
        parser.exit(0)


# Which module registers which command, in the order ``ddpsim --help`` lists them. A command line
# that names its command imports only that command's module: ``ddpsim sweep`` no longer pays for the
# measuring commands' imports (a third of its wall time). tests/test_cli_registry.py holds this table
# to what the modules register.
COMMAND_MODULES: dict[str, str] = {
    "predict": "sim_commands",
    "sweep": "sim_commands",
    "models": "sim_commands",
    "bench-allreduce": "run_commands",
    "check": "run_commands",
    "profile": "run_commands",
    "bench-ddp": "run_commands",
    "roofline": "run_commands",
    "calibrate": "calib_commands",
    "validate": "calib_commands",
    "plot": "calib_commands",
    "tune": "calib_commands",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or, given a known ``command``, of that command's family only."""
    import importlib

    parser = _Parser(
        prog="ddpsim",
        description="Predict, measure and tune data-parallel step time and gradient bucket size.",
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    families = list(dict.fromkeys(COMMAND_MODULES.values()))
    if command in COMMAND_MODULES:
        families = [COMMAND_MODULES[command]]
    # Everything ships in one distribution: a failing import here is a bug to see, not to hide.
    for family in families:
        importlib.import_module(f".{family}", __package__).add_commands(sub)
    for p in sub.choices.values():  # the same two switches on every command
        if "--json" not in p._option_string_actions:
            p.add_argument(
                "--json", action="store_true", help="print the results as one JSON object (schema ddpsim.cli/1)"
            )
        if "--quiet" not in p._option_string_actions:
            p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        if _writes_files(p) and "--force" not in p._option_string_actions:
            p.add_argument(
                "--force",
                action="store_true",
                help="replace an output file that exists (without it, a file named by a flag that already exists "
                "is refused before anything runs"
                + (
                    "; a run folder's own files are replaced, as --out-dir says)"
                    if "--out-dir" in p._option_string_actions
                    else ")"
                ),
            )
    return parser


def _writes_files(p: argparse.ArgumentParser) -> bool:
    """Whether a command has an output flag written whole (``_outputs`` kind ``file``, or ``--csv``)."""
    outputs = p.get_default("_outputs") or {}
    return "file" in outputs.values() or "--csv" in p._option_string_actions


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a bad argument (argparse already said why)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    args._argv = words  # the command line, for results that record it
    import warnings

    warnings.formatwarning = _warning_line  # a warning is one line too (a records file's torn last line, ...)
    from realrun.errors import run_handler  # no torch: errors.py imports nothing heavy

    from .cliutil import check_outputs, close_run_folder

    def handler(a: argparse.Namespace) -> int:
        from realrun.binding import bind_mode  # no torch; a DDPSIM_BIND the ranks could not follow: refused here

        if bind_mode() != "none":
            from realrun.launch import torchrun_env_present

            if torchrun_env_present():
                raise ValueError("DDPSIM_BIND binds the ranks ddpsim starts; under torchrun bind with the launcher")
        check_outputs(a)  # every output path, before anything is measured
        return a.func(a)

    code = 1
    try:
        code = run_handler("ddpsim", handler, args)
        return code
    finally:  # after the run's own message: an empty run folder goes, a failed run's is named
        close_run_folder(args, failed=code != 0)


def _warning_line(message: Warning | str, category: type[Warning], *_: object, **__: object) -> str:
    return "ddpsim: warning: " + " ".join(str(message).split()) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """The ``ddpsim`` entry: an exit code, never a traceback (``DDPSIM_DEBUG=1`` shows them)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while importing or parsing, before a handler runs
        print("ddpsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `ddpsim ... | head -1`: the reader left; say nothing more
        _silence_stdout()
        return 141


def _silence_stdout() -> None:
    import os

    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
