"""Errors of real runs (no torch import here)."""


class RunFailure(RuntimeError):
    """A rank raised, died, hung or timed out; the message names the rank and the cause."""

    def __init__(self, message: str, rank: int | None = None):
        super().__init__(message)
        self.rank = rank


def run_handler(prog: str, func, args) -> int:  # noqa: ANN001 - argparse handler and namespace
    """Run a command handler with ddpsim's exit codes: bad input (``ValueError``) 2, a failed run 1,
    Ctrl-C 130; one line on stderr, no traceback unless ``DDPSIM_DEBUG=1``."""
    import os
    import sys

    debug = os.environ.get("DDPSIM_DEBUG") == "1"
    try:
        return int(func(args) or 0)
    except ValueError as e:
        if debug:
            raise
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except RunFailure as e:
        if debug:
            raise
        print(f"{prog}: run failed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
