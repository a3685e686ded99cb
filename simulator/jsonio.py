"""Reading JSON input files with one clear error (a ``ValueError`` naming the file) for every failure;
writing result files whole (temporary file in the same folder, then ``os.replace``); dataclasses to
and from JSON by their fields (``to_fields``, ``from_fields``), the one serialiser of configs and results."""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import math
import os
import stat
import tempfile
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def read_json(path: str | Path, what: str) -> Any:
    """The parsed JSON of ``path``; ``what`` names the file in errors ("profile", "params file", ...)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read {what} {p}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{what} {p} is not a JSON text file (not UTF-8)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {p} is not valid JSON: {e.msg} at line {e.lineno}") from None


# ---- writing result files whole ------------------------------------------------
def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it: set it back at once
    os.umask(mask)
    return mask


@contextmanager
def whole_file(path: str | Path) -> Iterator[Path]:
    """``with whole_file(p) as tmp:`` write ``tmp`` (same folder), and on success it replaces ``p`` in one
    ``os.replace``; on any error it is removed. A result file is written whole or not at all."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp" + p.suffix)
    os.close(fd)
    tmp = Path(name)
    # mkstemp makes the file 0600; a result file gets the mode any new file would get (or the one it replaces)
    try:
        os.chmod(tmp, stat.S_IMODE(p.stat().st_mode) if p.is_file() else 0o666 & ~_umask())
    except OSError:
        pass  # a file system without modes: the file stays as made
    try:
        yield tmp
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


FIGURE_SUFFIXES = (".png", ".pdf", ".svg")  # the formats a figure is written in, by its name's ending


def write_figure(fig: Any, path: str | Path, dpi: int) -> Path:
    """Save a matplotlib figure to ``path`` whole, in the format its name ends with (``FIGURE_SUFFIXES``; PNG
    where it has no ending)."""
    out = Path(path)
    with whole_file(out) as tmp:
        fig.savefig(tmp, dpi=dpi, format=out.suffix.lstrip(".").lower() or "png")
    return out


def write_whole(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole (a temporary file in the same folder, then ``os.replace``)."""
    with whole_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def finite(obj: Any) -> Any:
    """``obj`` made JSON-ready for a strict writer: every non-finite float as ``None`` (JSON has no NaN or
    Infinity), dataclasses by their fields (``to_json``), tuples as lists, dict keys as ``str(key)``,
    paths as their text. The one such cleaner: ``dumps_finite`` and the CLI's ``--json``, ``--csv`` and
    rescued records all go through it."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return finite(to_json(obj))
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def dumps_finite(obj: Any, indent: int | None = 1) -> str:
    """JSON text of ``obj`` cleaned by ``finite``: non-finite floats as ``null``, dataclasses by their fields."""
    return json.dumps(finite(obj), indent=indent, allow_nan=False)


# ---- dataclasses to and from JSON, by their fields -------------------------------
# One serialiser for configs and results: a class's JSON is its fields, in declaration order;
# tuples are lists, nested dataclasses nest. Reading converts back by the field types
# (lists to tuples, ints to floats where a float is declared, nested objects by their
# class's own ``from_dict`` when it has one) and leaves validation to ``__post_init__``.
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def to_json(v: Any) -> Any:
    """``v`` made JSON-ready: a dataclass by its own ``to_dict`` when it has one, else by its fields;
    tuples as lists; lists and mappings element by element."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        to_dict = getattr(v, "to_dict", None)
        return to_dict() if to_dict is not None else to_fields(v)
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, Mapping):
        return {k: to_json(x) for k, x in v.items()}
    return v


_PLAIN = frozenset({str, int, float, bool, type(None)})  # written as they are
_FIELDS: dict[type, tuple[dataclasses.Field[Any], ...]] = {}


def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    if cls not in _FIELDS:
        _FIELDS[cls] = dataclasses.fields(cls)
    return _FIELDS[cls]


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def to_fields(obj: Any, *, schema: str | None = None, omit_default: Iterable[str] = ()) -> dict[str, Any]:
    """``obj`` (a dataclass instance) as a JSON-ready dict of its fields, ``schema`` first when given;
    fields named in ``omit_default`` are left out while they equal their default."""
    out: dict[str, Any] = {"schema": schema} if schema is not None else {}
    for f in _fields(type(obj)):
        v = getattr(obj, f.name)
        if omit_default and f.name in omit_default and v == _default(f):
            continue
        out[f.name] = v if type(v) in _PLAIN else to_json(v)
    return out


def _from_json(v: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        if v is None:
            return None
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        return _from_json(v, options[0], where) if len(options) == 1 else v
    if origin is tuple:
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"{where} must be a list, got {v!r}")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json(x, args[0], where) for x in v)
        if len(args) != len(v):
            raise ValueError(f"{where} must be a list of {len(args)}, got {v!r}")
        return tuple(_from_json(x, a, where) for x, a in zip(v, args))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(v, Mapping):
        from_dict = getattr(tp, "from_dict", None)
        return from_dict(v) if from_dict is not None else from_fields(tp, v, what=where)
    if origin in (dict, Mapping, collections.abc.Mapping) and isinstance(v, Mapping):
        return dict(v)
    if tp is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if tp is int and isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def from_fields(cls: type[T], d: Any, *, what: str, defaults: Mapping[str, Any] | None = None) -> T:
    """``cls`` built from the JSON object ``d`` by its fields (keys that are not fields are ignored:
    a schema, derived values). A missing field takes ``defaults[name]``, else its own default; one
    without either is a ``ValueError``: ``"<what> lacks '<name>'"``."""
    if not isinstance(d, Mapping):
        raise ValueError(f"{what} must be a JSON object, got {type(d).__name__}")
    hints = _hints(cls)
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name in d:
            kw[f.name] = _from_json(d[f.name], hints[f.name], f"{what}: {f.name}")
        elif defaults is not None and f.name in defaults:
            kw[f.name] = defaults[f.name]
        elif _default(f) is dataclasses.MISSING:
            raise ValueError(f"{what} lacks {f.name!r}")
    return cls(**kw)
