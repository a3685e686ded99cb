"""Errors of real runs (no torch import here)."""


class RunFailure(RuntimeError):
    """A rank raised, died, hung or timed out; the message names the rank and the cause."""

    def __init__(self, message: str, rank: int | None = None):
        super().__init__(message)
        self.rank = rank


TORCH_HINT = 'this command runs real ranks and needs torch: pip install "ddpsim[torch]"'


def run_handler(prog: str, func, args) -> int:  # noqa: ANN001 - argparse handler and namespace
    """Run a command handler with ddpsim's exit codes: bad input (``ValueError``) 2, a failed run 1,
    a file that cannot be written 1, Ctrl-C 130; one line on stderr, no traceback unless ``DDPSIM_DEBUG=1``."""
    import os
    import sys

    debug = os.environ.get("DDPSIM_DEBUG") == "1"
    try:
        return int(func(args) or 0)
    except ModuleNotFoundError as e:
        if debug or (e.name or "").split(".")[0] != "torch":
            raise
        print(f"{prog}: error: {TORCH_HINT}", file=sys.stderr)
        return 2
    except ValueError as e:
        if debug:
            raise
        print(f"{prog}: error: {_one_line(str(e))}", file=sys.stderr)
        return 2
    except RunFailure as e:
        if debug:
            raise
        print(f"{prog}: run failed: {failure_line(str(e), prog)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        raise  # the front door (ddpsim.cli.main) silences a closed stdout
    except OSError as e:  # a write that failed after the checks (disk full, a folder removed meanwhile)
        if debug:
            raise
        where = f" {e.filename}" if getattr(e, "filename", None) else ""
        print(f"{prog}: error: cannot write{where}: {e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted (ranks stopped; records taken so far stay in the files named)", file=sys.stderr)
        return 130


def failure_line(text: str, prog: str = "ddpsim") -> str:
    """A run failure's message on one line: its first line, and where the rest went (the other ranks' errors, the
    failed rank's traceback or a hung rank's Python stacks, the ranks' log files) when it has more, written whole
    to a new file in the temp folder (the message alone where that file cannot be made)."""
    import tempfile

    first, _, rest = text.strip().partition("\n")
    if not rest.strip():
        return first
    try:
        fd, path = tempfile.mkstemp(prefix=f"{prog}-failure-", suffix=".txt")
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text.strip() + "\n")
    except OSError:
        return _one_line(text)
    return f"{first} (details, with the ranks' tracebacks and logs: {path})"


def _one_line(text: str) -> str:
    """A bad-input message on one line (a message from user code can span several)."""
    return " ".join(part.strip() for part in text.strip().splitlines() if part.strip()) or "bad input"
