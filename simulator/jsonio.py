"""Reading JSON input files with one clear error (a ``ValueError`` naming the file) for every failure;
writing result files whole (temporary file in the same folder, then ``os.replace``)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def read_json(path: str | Path, what: str) -> Any:
    """The parsed JSON of ``path``; ``what`` names the file in errors ("profile", "params file", ...)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read {what} {p}: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {p} is not valid JSON: {e.msg} at line {e.lineno}") from None


# ---- writing result files whole ------------------------------------------------
@contextmanager
def whole_file(path: str | Path) -> Iterator[Path]:
    """``with whole_file(p) as tmp:`` write ``tmp`` (same folder), and on success it replaces ``p`` in one
    ``os.replace``; on any error it is removed. A result file is written whole or not at all."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp" + p.suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_whole(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole (a temporary file in the same folder, then ``os.replace``)."""
    with whole_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def dumps_finite(obj: Any, indent: int | None = 1) -> str:
    """JSON text of ``obj`` with non-finite floats as ``null`` (JSON has no NaN or Infinity)."""

    def clean(o: Any) -> Any:
        if isinstance(o, float):
            return o if math.isfinite(o) else None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    return json.dumps(clean(obj), indent=indent, allow_nan=False)
