"""Reading JSON input files with one clear error (a ``ValueError`` naming the file) for every failure."""

from __future__ import annotations

import json
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
