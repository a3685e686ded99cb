"""Measurement records: JSON Lines, one record per measurement, appended as taken.

Every record carries ``schema`` (``RECORD_SCHEMA``), ``kind`` (what was
measured: ``"allreduce"``, ``"ddp_step"``, ...) and ``env`` (torch version,
backend, world size, threads, host, git revision). A record is written and
flushed the moment it is taken, so a run that dies later loses nothing it had
already measured; ``read_records`` tolerates a torn last line (a writer killed
mid-write) and says so, and a writer appending to such a file first cuts that
line off (with a warning), so the next record does not land on it.

This module imports no torch at import time: calibration reads records
without it.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import socket
import subprocess
import sys
import time
import warnings
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from simulator.jsonio import finite

RECORD_SCHEMA = "ddpsim.record/1"


def _git_revision() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


_GIT_REV: list[str | None] = []


def environment(backend: str | None = None, world_size: int | None = None, **extra: Any) -> dict[str, Any]:
    """The environment a measurement was taken in (cheap; git is asked once per process)."""
    if not _GIT_REV:
        _GIT_REV.append(_git_revision())
    env: dict[str, Any] = {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "git_rev": _GIT_REV[0],
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        env["torch"] = torch.__version__
        env["torch_threads"] = torch.get_num_threads()
        env["cuda"] = torch.version.cuda if torch.cuda.is_available() else None
        if torch.cuda.is_available():
            env["gpu"] = torch.cuda.get_device_name(0)
        from .precision import describe

        env.update(describe())  # precision, dtype, tf32, autocast of this process
    from .binding import bind_mode

    if bind_mode() == "mains":  # a pool's ranks start only where bound (``realrun.binding``)
        env["bind"] = "mains"
    if backend is not None:
        env["backend"] = backend
    if world_size is not None:
        env["world_size"] = world_size
    env.update(extra)
    return env


def make_record(kind: str, env: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    return {"schema": RECORD_SCHEMA, "kind": kind, "time_unix_s": time.time(), "env": dict(env), **fields}


def _seal_last_line(path: Path) -> None:
    """Before appending: make sure the file ends with a newline.

    A last line without one is a record cut off mid-write by a killed writer
    (``iter_records`` skips it while it is last); appending after it would glue
    the next record onto it and leave a malformed line in the middle, which
    makes the whole file unreadable. It held no whole measurement, so it is
    cut off here, with a warning. (A last line that is a complete record,
    written without its newline by another tool, gets the newline instead.)
    """
    try:
        fh = open(path, "rb+")
    except FileNotFoundError:
        return
    with fh:
        end = fh.seek(0, os.SEEK_END)
        if end == 0:
            return
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return
        start, pos = 0, end
        while pos > 0:  # the start of the last line, reading backwards
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            k = fh.read(step).rfind(b"\n")
            if k >= 0:
                start = pos + k + 1
                break
        fh.seek(start)
        try:
            json.loads(fh.read().decode("utf-8"))
        except ValueError:
            warnings.warn(
                f"{path}: removed an incomplete last line ({end - start} bytes; a writer was interrupted) before appending",
                stacklevel=2,
            )
            fh.truncate(start)
        else:
            fh.seek(end)
            fh.write(b"\n")


class RecordWriter:
    """Appends records to a JSONL file, flushing and fsyncing each one.

    Opening happens on the first write, not in the constructor.
    """

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        self._fh = None
        self.count = 0

    def write(self, record: Mapping[str, Any]) -> None:
        if self.path is None:
            return
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _seal_last_line(self.path)
            self._fh = open(self.path, "a", encoding="utf-8")
        # strict JSON: dataclasses by their fields, non-finite floats as null (simulator.jsonio.finite)
        self._fh.write(json.dumps(finite(record), separators=(",", ":"), allow_nan=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.count += 1

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_records(path: str | Path, records: Iterable[Mapping[str, Any]]) -> int:
    with RecordWriter(path) as w:
        for r in records:
            w.write(r)
        return w.count


def iter_records(path: str | Path, kind: str | None = None) -> Iterator[dict[str, Any]]:
    """Records of ``path`` (optionally of one ``kind``); a ``.gz`` file is read gzipped (the records
    kept under ``benchmarks/results/`` are).

    Raises ``ValueError`` naming the file and line for a malformed line or a
    foreign schema; a torn *last* line is skipped with a warning.
    """
    p = Path(path)
    try:
        raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
    except (OSError, EOFError, zlib.error) as e:  # unreadable, or not (or a torn) gzip
        raise ValueError(f"cannot read records {p}: {getattr(e, 'strerror', None) or e}") from None
    lines = raw.decode("utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if lineno == len(lines):
                warnings.warn(
                    f"{p}: last line {lineno} is incomplete (a writer was interrupted); skipped", stacklevel=2
                )
                continue
            raise ValueError(f"{p}:{lineno}: not a JSON record") from None
        if not isinstance(rec, dict) or rec.get("schema") != RECORD_SCHEMA:
            got = rec.get("schema") if isinstance(rec, dict) else type(rec).__name__
            raise ValueError(f"{p}:{lineno}: record schema is {got!r}; this ddpsim reads {RECORD_SCHEMA!r}")
        if kind is None or rec.get("kind") == kind:
            yield rec


def read_records(path: str | Path, kind: str | None = None) -> list[dict[str, Any]]:
    return list(iter_records(path, kind))
