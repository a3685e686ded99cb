"""Shared pieces of the ``ddpsim`` command line (no torch, nothing heavy).

- ``number``: the one argparse number type: finite (no ``nan``/``inf``), within bounds;
- ``rate``: a bandwidth with optional units (``100GB/s``, ``400Gbit/s``; a plain number is the flag's unit);
- ``check_writable``: an output path that can be written, checked before anything is measured;
- ``add_csv`` / ``emit_csv``: ``--csv [PATH]``, a command's table as CSV (a file written whole, or stdout);
- ``emit_json``: the one ``--json`` envelope (``{"schema", "command", "inputs", "results"}``), never NaN/Infinity;
- ``HelpFormatter``: help text that shows each flag's default.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from realrun.stats import MAX_STEPS_FOR_TIME, MIN_SECONDS
from simulator.jsonio import FIGURE_SUFFIXES, dumps_finite, finite, write_whole

CLI_SCHEMA = "ddpsim.cli/1"


def ddpsim_version() -> str:
    """The installed ddpsim's version (``ddpsim --version``, recorded in results)."""
    try:
        from importlib.metadata import version

        return version("ddpsim")
    except Exception:  # noqa: BLE001 - running from a checkout that was never installed
        return "unknown (not installed)"


# ---- numbers --------------------------------------------------------------------
def _fmt(v: float) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def number(
    cast: Callable[[str], Any] = float, lo: float | None = None, hi: float | None = None, lo_open: bool = False
) -> Callable[[str], Any]:
    """An argparse type: ``cast`` the text to a finite number ``lo <= v <= hi`` (``lo < v`` with ``lo_open``).

    ``nan`` and ``inf`` are refused everywhere: no flag of ddpsim means "unbounded".
    """
    what = "an integer" if cast is int else "a number"

    def parse(text: str) -> Any:
        try:
            v = cast(text.strip())
        except (ValueError, TypeError):
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if isinstance(v, float) and not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if lo is not None and (v <= lo if lo_open else v < lo):
            raise argparse.ArgumentTypeError(f"must be {'>' if lo_open else '>='} {_fmt(lo)}, got {text}")
        if hi is not None and v > hi:
            raise argparse.ArgumentTypeError(f"must be <= {_fmt(hi)}, got {text}")
        return v

    parse.__name__ = "integer" if cast is int else "number"  # argparse names the type in some messages
    return parse


def number_list(item: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """A comma list of ``item`` values (``1,4,25``)."""

    def parse(text: str) -> list[Any]:
        parts = [s.strip() for s in text.split(",")]
        if not parts or any(not s for s in parts):
            raise argparse.ArgumentTypeError(f"expected a comma list like 1,4,25, got {text!r}")
        out = []
        for s in parts:
            try:
                out.append(item(s))
            except argparse.ArgumentTypeError as e:
                raise argparse.ArgumentTypeError(f"item {s!r}: {e}") from None
        return out

    parse.__name__ = "list"
    return parse


def max_local_ranks() -> int:
    """The most ranks one machine may start here: 4 per core (each rank is a process with its own model)."""
    return 4 * (os.cpu_count() or 1)


def local_world(lo: int = 1, hi: int | None = None) -> Callable[[str], int]:
    """Ranks to start on this machine: ``lo`` to ``min(hi, 4 x cores)``."""
    as_int = number(int, lo, 1 << 20)

    def parse(text: str) -> int:
        n = as_int(text)
        cap = max_local_ranks() if hi is None else min(hi, max_local_ranks())
        if n > cap:
            raise argparse.ArgumentTypeError(
                f"{n} ranks is more than this machine can run: at most {cap} "
                f"({os.cpu_count()} cores, 4 ranks per core); use torchrun across machines for more"
            )
        return n

    parse.__name__ = "world size"
    return parse


def world_sizes(lo: int = 1, hi: int | None = None) -> Callable[[str], list[int]]:
    """``2`` or ``1,2,4``: ranks to start on this machine (each as ``local_world``)."""
    items = number_list(local_world(lo, hi))

    def parse(text: str) -> list[int]:
        return list(dict.fromkeys(items(text)))

    parse.__name__ = "world size"
    return parse


timeout_s = number(float, 0, 7 * 86400, lo_open=True)  # a watchdog that is always on: no nan, no inf, <= a week


def strategy_names(text: str) -> list[str]:
    """``all`` or a comma list of names of the strategy registry (``simulator.strategies``), each once."""
    from simulator.strategies import STRATEGIES

    if text.strip() == "all":
        return list(STRATEGIES)
    names = [s.strip() for s in text.split(",")]
    if any(not s for s in names):
        raise ValueError(f"expected a comma list of strategies like torch-ddp,bucketed, got {text!r}")
    bad = [n for n in names if n not in STRATEGIES]
    if bad:
        raise ValueError(f"unknown strategy {', '.join(map(repr, bad))}; choose from {', '.join(STRATEGIES)} or all")
    return list(dict.fromkeys(names))


# ---- rates ----------------------------------------------------------------------
# <prefix><i?><unit>: B/s is bytes, bit/s (b/s, bps) is bits; k/M/G/T decimal, Ki/Mi/Gi binary (bytes only).
_RATE_RE = re.compile(r"^\s*([0-9.eE+-]+|nan|inf|infinity)\s*([A-Za-z/]*)\s*$", re.IGNORECASE)
_UNIT_RE = re.compile(r"^([kKmMgGtT]?)(i?)(B/s|bit/s|b/s|bps)$")
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def _unit_scale(u: str) -> float | None:
    """Bytes per second of one ``u`` (``GB/s`` 1e9, ``Gbit/s`` 1.25e8, ``GiB/s`` 2**30), None if unknown."""
    m = _UNIT_RE.match(u)
    if not m:
        return None
    prefix, binary, unit = m.groups()
    if binary:
        if unit != "B/s" or not prefix:
            return None
        return 1024.0 ** ("kmgt".index(prefix.lower()) + 1)
    return _PREFIX[prefix.lower()] * (1.0 if unit == "B/s" else 1 / 8)


def rate(unit_bytes_per_s: float, unit_name: str, hi: float, lo: float = 0.0) -> Callable[[str], float]:
    """An argparse type for a bandwidth: ``100GB/s``, ``400Gbit/s``, ``800Mbit/s``, or a plain number in
    ``unit_name``; returns the value in ``unit_name`` (so ``--w 400Gbit/s`` gives 50.0 GB/s), > 0, within
    ``lo`` .. ``hi`` (a rate below ``lo`` is a slip of the units, not a network: ``--w 1e-300``)."""

    def parse(text: str) -> float:
        m = _RATE_RE.match(text.replace(" ", ""))
        if not m:
            raise argparse.ArgumentTypeError(
                f"not a rate: {text!r} (e.g. 100GB/s, 400Gbit/s or a number of {unit_name})"
            )
        try:
            v = float(m.group(1))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a rate: {text!r}") from None
        u = m.group(2)
        if u:
            scale = _unit_scale(u)
            if scale is None:
                raise argparse.ArgumentTypeError(
                    f"unknown rate unit {u!r} in {text!r}: use GB/s, MB/s (bytes, 1e9/1e6) or Gbit/s, Mbit/s (bits)"
                )
            v = v * scale / unit_bytes_per_s
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"must be a finite rate, got {text}")
        if not v > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        if v > hi:
            raise argparse.ArgumentTypeError(f"must be <= {hi:g} {unit_name}, got {text}")
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo:g} {unit_name}, got {text}")
        return v

    parse.__name__ = "rate"
    return parse


link_mbit = rate(1e6 / 8, "Mbit/s", 1e5, 0.01)  # emulated links: a number is Mbit/s; 1Gbit/s accepted


def ranks_phrase(n: int) -> str:
    """``"1 rank"``, ``"4 ranks"``: the world size as the outputs say it."""
    return f"{n} rank" if n == 1 else f"{n} ranks"


def gbps_both(bytes_per_s: float) -> str:
    """``12.5 GB/s (100 Gbit/s)``: a bandwidth in both units, so nobody mistakes bytes for bits."""
    return f"{bytes_per_s / 1e9:.4g} GB/s ({bytes_per_s * 8 / 1e9:.4g} Gbit/s)"


# ---- backends -------------------------------------------------------------------
BACKEND_CHOICES = ("gloo", "nccl")


def add_min_seconds_arg(p: argparse.ArgumentParser, default: float = MIN_SECONDS) -> None:
    """``--min-seconds`` of the commands that measure configurations beside a compute-only baseline."""
    p.add_argument(
        "--min-seconds",
        type=number(float, 0, 3600),
        default=default,
        help=f"timed seconds per configuration at least: where the predicted step is short, more steps than "
        f"--steps (up to {MAX_STEPS_FOR_TIME}); 0: exactly --steps (default {default:g})",
    )


def add_backend_arg(p: argparse.ArgumentParser) -> None:
    """``--backend`` of every command that runs ranks."""
    p.add_argument(
        "--backend",
        default=None,
        choices=BACKEND_CHOICES,
        help="gloo (CPU) or nccl (one CUDA device per rank); default gloo, under torchrun nccl when CUDA is present",
    )


def spawn_backend(args: argparse.Namespace, world_size: int | Any, link_mbit: Any = None) -> str:
    """The backend of ranks this command spawns: ``--backend`` or gloo, checked for ``world_size`` local ranks
    (the largest of a list) before any rank starts: nccl with fewer CUDA devices than ranks is a ``ValueError``."""
    from realrun.launch import check_backend  # no torch at import; imported for nccl only

    backend = getattr(args, "backend", None) or "gloo"
    worlds = list(world_size) if isinstance(world_size, (list, tuple)) else [world_size]
    links = list(link_mbit) if isinstance(link_mbit, (list, tuple)) else [link_mbit]
    check_backend(backend, max(worlds), next((x for x in links if x is not None), None))
    return backend


def torchrun_backend(args: argparse.Namespace) -> str:
    """Under torchrun: ``--backend``, else nccl when CUDA is present, gloo otherwise; nccl checked against
    this node's ranks (``LOCAL_WORLD_SIZE``)."""
    from realrun.launch import check_backend, cuda_device_count

    backend = getattr(args, "backend", None) or ("nccl" if cuda_device_count() > 0 else "gloo")
    check_backend(backend, int(os.environ.get("LOCAL_WORLD_SIZE", "1")), where="ranks on this node")
    return backend


# ---- outputs --------------------------------------------------------------------
def check_writable(path: str | os.PathLike[str], kind: str = "file") -> None:
    """Raise ``ValueError`` (naming the path) unless ``path`` can be written.

    ``kind``: ``"file"`` (written whole), ``"jsonl"`` (records appended: an existing file must
    already hold ddpsim records) or ``"dir"`` (created if missing). Nothing is left behind.
    """
    text = os.fspath(path)
    if not text.strip():
        raise ValueError("an output path is empty")
    p = Path(text)
    if kind == "dir":
        if p.exists() and not p.is_dir():
            raise ValueError(f"output folder {p} exists and is not a folder")
        probe_dir = p
    else:
        if p.is_dir() or text.endswith(os.sep):
            raise ValueError(f"output file {p} is a folder")
        if p.exists() and not p.is_file():
            raise ValueError(f"output file {p} is not a regular file")
        if kind == "jsonl" and p.is_file() and p.stat().st_size > 0:
            _check_records_file(p)
        probe_dir = p.parent
    # the nearest folder that exists must be a folder we can create files in
    d = probe_dir
    while not d.exists():
        if d.is_symlink():
            raise ValueError(f"cannot write {p}: {d} is a dangling link")
        d = d.parent
    if not d.is_dir():
        raise ValueError(f"cannot write {p}: {d} is not a folder")
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".ddpsim-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise ValueError(f"cannot write {p}: no file can be made in {d} ({e.strerror})") from None
    if p.exists() and kind != "dir" and not os.access(p, os.W_OK):
        raise ValueError(f"cannot write {p}: permission denied")


def _nonempty_file(path: str | os.PathLike[str]) -> bool:
    p = Path(os.fspath(path))
    return p.is_file() and p.stat().st_size > 0


def _check_records_file(p: Path) -> None:
    try:
        with open(p, encoding="utf-8") as fh:
            first = fh.readline()
        rec = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        rec = None
    if not (isinstance(rec, dict) and "kind" in rec):
        raise ValueError(f"{p} exists and does not hold ddpsim records; records are appended, so choose a new file")


RUN_ROOT_ENV = "DDPSIM_RUN_ROOT"  # where each run's own folder goes when no --out-dir is given


def run_root(flag: str = "--out-dir") -> Path:
    """Where a run whose outputs were not placed gets its own folder: ``$DDPSIM_RUN_ROOT``, else
    ``$XDG_STATE_HOME/ddpsim/runs``, else ``~/.local/state/ddpsim/runs``: never the current folder."""
    env = os.environ.get(RUN_ROOT_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    state = os.environ.get("XDG_STATE_HOME", "").strip()
    if state and os.path.isabs(state):  # the XDG spec ignores a relative value
        return Path(state) / "ddpsim" / "runs"
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no password entry
        raise ValueError(f"no home folder to keep runs in: give {flag}, or set {RUN_ROOT_ENV}") from None
    return home / ".local" / "state" / "ddpsim" / "runs"


def new_run_folder(command: str, root: Path | None = None, now: float | None = None, flag: str = "--out-dir") -> Path:
    """A new, empty folder for one run of ``command``: ``<root>/<command>-<UTC yyyymmdd-HHMMSS>``, with ``-2``,
    ``-3``, ... where that exists (created here, so two runs at once never share one). ``ValueError`` (one line)
    where it cannot be made."""
    import time

    root = run_root(flag) if root is None else root
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    try:
        root.mkdir(parents=True, exist_ok=True)
        for k in range(1, 1000):
            p = root / (f"{command}-{stamp}" + (f"-{k}" if k > 1 else ""))
            try:
                p.mkdir()
            except FileExistsError:
                continue
            return p
    except OSError as e:
        raise ValueError(
            f"cannot make a run folder under {root}: {e.strerror or e}; give {flag}, or set {RUN_ROOT_ENV}"
        ) from None
    raise ValueError(f"{root} already holds 999 runs of {command} started this second; give {flag}")


def add_out_dir(parser: argparse.ArgumentParser, command: str, what: str) -> None:
    """``--out-dir``: the run folder, where every output the user did not place goes; without it each run gets
    a new folder of its own under ``run_root()`` (nothing goes into the current folder, nothing is replaced)."""
    parser.add_argument(
        "--out-dir",
        default=None,
        metavar="DIR",
        help=f"the run folder: {what}; a run given this folder replaces the results of the last one there, "
        f"records are appended (default: a new folder per run, {command}-<UTC time>, under ${RUN_ROOT_ENV}, "
        "else $XDG_STATE_HOME/ddpsim/runs, else ~/.local/state/ddpsim/runs)",
    )
    parser.set_defaults(_run_command=command, _run_dir_dest="out_dir")


def fill_run_folder(args: argparse.Namespace) -> None:
    """Outputs left unset go into the run folder (``set_defaults(_in_run_dir={dest: file name})``); where the
    run folder itself was not given and something goes into it, a new one is made for this run
    (``new_run_folder``) and kept in ``args._fresh_run_dir``, which the command line removes again if the run
    leaves it empty, or names if the run fails after writing into it (``close_run_folder``)."""
    dest = getattr(args, "_run_dir_dest", None)
    if dest is None:
        return
    unset = {d: n for d, n in (getattr(args, "_in_run_dir", None) or {}).items() if getattr(args, d, None) is None}
    if getattr(args, dest, None) is None:
        if getattr(args, "_in_run_dir", None) and not unset:
            return  # every output was placed: no run folder
        fresh = new_run_folder(args._run_command, flag="--" + dest.replace("_", "-"))
        args._fresh_run_dir = fresh
        setattr(args, dest, str(fresh))
    for d, name in unset.items():
        setattr(args, d, str(Path(getattr(args, dest)) / name))
    args._placed = set(unset)  # outputs put into the run folder, not named by the user


def close_run_folder(args: argparse.Namespace, failed: bool) -> None:
    """After a run, the run folder ``fill_run_folder`` made: removed if the run wrote nothing into it (bad input
    found after the outputs were checked, a failure before the first record), so no empty folders pile up;
    named on stderr if the run failed after writing into it (what it measured is kept there)."""
    fresh = getattr(args, "_fresh_run_dir", None)
    if fresh is None:
        return
    try:
        Path(fresh).rmdir()  # only an empty folder goes
    except OSError:
        if failed and Path(fresh).is_dir():
            print(f"ddpsim: what this run wrote is kept in {fresh}", file=sys.stderr, flush=True)


def check_outputs(args: argparse.Namespace) -> None:
    """Check every output flag a command declared (``set_defaults(_outputs={dest: kind})``), after placing
    the unset ones in the run folder; and ``--csv`` (a file, or ``-`` for stdout) where a command has it."""
    fill_run_folder(args)
    outputs = dict(getattr(args, "_outputs", None) or {})
    if getattr(args, "csv", None) == "-":
        if getattr(args, "json", False):
            raise ValueError(
                "--csv without a file prints the table on stdout, as --json prints JSON: give --csv a file"
            )
    elif getattr(args, "csv", None) is not None:
        outputs["csv"] = "file"
    files: dict[Path, str] = {}
    for dest, kind in outputs.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        named = dest not in (getattr(args, "_placed", None) or ())  # else put into the run folder by fill_run_folder
        flag = "--" + (dest if named else args._run_dir_dest).replace("_", "-")  # the flag the user gave
        if os.fspath(value) == "-":  # only --csv prints on stdout; here "-" would be a file of that name
            raise ValueError(f"{flag} takes a path (only --csv takes - for stdout): give it a file")
        if kind == "figure":  # written in the format its name ends with
            if Path(os.fspath(value)).suffix.lower() not in FIGURE_SUFFIXES:
                raise ValueError(
                    f"{flag}: {value}: a figure's name ends with {', '.join(FIGURE_SUFFIXES)} (its format)"
                )
            kind = "file"
        try:
            check_writable(value, kind)
        except ValueError as e:
            raise ValueError(f"{flag}: {e}") from None
        if kind == "file" and named and not getattr(args, "force", False) and _nonempty_file(value):
            raise ValueError(f"{flag}: {value} exists; give --force to replace it, or another path")
        if kind != "dir":  # two outputs into one file: the second would overwrite or corrupt the first
            where = Path(os.fspath(value)).resolve()
            if where in files:
                raise ValueError(f"{files[where]} and {flag} both name {value}: give each its own file")
            files[where] = flag


def rescue_records(records: list[dict[str, Any]], command: str) -> str | None:
    """Write measurements that could not go where asked into a new file in the temp folder; its path."""
    try:
        fd, path = tempfile.mkstemp(prefix=f"ddpsim-{command}-", suffix=".jsonl")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(finite(r)) + "\n")
        return path
    except OSError:
        return None


# ---- CSV ------------------------------------------------------------------------
def add_csv(parser: argparse.ArgumentParser, what: str) -> None:
    """``--csv [PATH]`` on a table-printing command."""
    parser.add_argument(
        "--csv",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help=f"write {what} as CSV to PATH (written whole); --csv alone (or --csv -) prints the CSV on stdout "
        "instead of the table",
    )


def csv_stdout(args: argparse.Namespace) -> bool:
    """True when stdout carries the CSV (``--csv`` alone): the text table is then not printed."""
    return getattr(args, "csv", None) == "-"


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""  # full precision; JSON's rule: no NaN, no Infinity
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(finite(v), separators=(",", ":"))
    return v


def csv_text(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """``rows`` as CSV text (``csv`` module, header first): columns in first-seen order unless given."""
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def emit_csv(args: argparse.Namespace, rows: list[dict[str, Any]], columns: list[str] | None = None) -> str | None:
    """Write the table for ``--csv``: to its file whole, or on stdout; the file's path (None: stdout or no flag)."""
    target = getattr(args, "csv", None)
    if target is None:
        return None
    text = csv_text(rows, columns)
    if target == "-":
        sys.stdout.write(text)
        return None
    return str(write_whole(target, text))


# ---- JSON -----------------------------------------------------------------------
def inputs_of(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed arguments of a command, as JSON-able values (no handler, no private keys)."""
    out = {}
    for k, v in vars(args).items():
        if k in ("func", "command") or k.startswith("_"):
            continue
        out[k] = v if isinstance(v, (str, int, float, bool, type(None), list, tuple, dict)) else str(v)
    return out


def emit_json(args: argparse.Namespace, results: Any) -> None:
    """Print the one ``--json`` envelope of every command on stdout (``simulator.jsonio.dumps_finite``:
    non-finite floats as ``null``, dataclasses by their fields)."""
    env = {
        "schema": CLI_SCHEMA,
        "command": getattr(args, "command", None),
        "inputs": inputs_of(args),
        "results": results,
    }
    sys.stdout.write(dumps_finite(env) + "\n")


# ---- help -----------------------------------------------------------------------
class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions kept as written; each flag's default appended when it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if text is argparse.SUPPRESS:
            return text
        d = action.default
        switch = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))  # the flag says it
        if action.option_strings and not switch and d not in (None, False, argparse.SUPPRESS) and "default" not in text:
            # a list as the flag takes it: 0.25,1,4 (not [0.25, 1, 4]); % doubled for argparse's formatting
            shown = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in d) if isinstance(d, list) else None
            text += f" (default: {shown.replace('%', '%%')})" if shown is not None else " (default: %(default)s)"
        return text
