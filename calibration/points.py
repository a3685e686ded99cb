"""All-reduce records of one configuration, pooled into one point per (world size, message size).

Input: the dicts ``realrun.records.read_records(path, "allreduce")`` returns.
Bad input raises ``ValueError`` saying which record and field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LOOPBACK = "loopback"  # link_mbit selector for records taken without an emulated link (link_mbit null)


@dataclass(frozen=True)
class AllreducePoint:
    """All iterations measured for one (world size, message size): raw times and their summary."""

    world_size: int
    msg_bytes: int
    times_s: tuple[float, ...]
    median_s: float
    p10_s: float
    p90_s: float


def _num(rec: Mapping[str, Any], key: str, i: int) -> float:
    v = rec.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"all-reduce record #{i}: {key!r} must be a finite number, got {v!r}")
    return float(v)


def _link_matches(rec_link: Any, want: Any) -> bool:
    if want == LOOPBACK:
        return rec_link is None
    return rec_link is not None and math.isclose(float(rec_link), float(want), rel_tol=1e-9)


def _only(values: set, what: str, how: str) -> Any:
    if len(values) > 1:
        shown = ", ".join(sorted(("loopback" if v is None else str(v)) for v in values))
        raise ValueError(f"records mix several {what} ({shown}); choose one with {how}")
    return next(iter(values))


def select_allreduce(
    records: Iterable[Mapping[str, Any]],
    *,
    impl: str = "native",
    backend: str | None = None,
    world_size: int | None = None,
    link_mbit: float | str | None = None,
    one_world_size: bool = True,
) -> list[Mapping[str, Any]]:
    """The all-reduce records of one configuration.

    ``None`` for ``backend``, ``world_size`` or ``link_mbit`` means "whatever the
    records hold, provided it is one value" (records mixing values raise
    ``ValueError``); ``link_mbit=LOOPBACK`` picks records without an emulated
    link. ``one_world_size=False`` lets several world sizes through (``fit_abg``).
    """
    recs = list(records)
    if not recs:
        raise ValueError("no records given: the measurement is empty")
    kinds = {r.get("kind") for r in recs if isinstance(r, Mapping)}
    ar = [r for r in recs if isinstance(r, Mapping) and r.get("kind", "allreduce") == "allreduce"]
    if not ar:
        raise ValueError(
            f"none of the {len(recs)} records is an all-reduce measurement (kinds found: "
            f"{', '.join(sorted(str(k) for k in kinds))})"
        )
    sel = [r for r in ar if r.get("impl", "native") == impl]
    if not sel:
        found = sorted({str(r.get("impl", "native")) for r in ar})
        raise ValueError(f"no all-reduce records with impl={impl!r} (found: {', '.join(found)})")
    if backend is not None:
        sel = [r for r in sel if r.get("backend") == backend]
        if not sel:
            raise ValueError(f"no all-reduce records with backend={backend!r} and impl={impl!r}")
    else:
        _only({r.get("backend") for r in sel}, "backends", "backend=")
    if link_mbit is not None:
        sel = [r for r in sel if _link_matches(r.get("link_mbit"), link_mbit)]
        if not sel:
            raise ValueError(f"no all-reduce records with link_mbit={link_mbit!r} and impl={impl!r}")
    else:
        _only({r.get("link_mbit") for r in sel}, "link rates (link_mbit)", "link_mbit= (or LOOPBACK)")
    if world_size is not None:
        sel = [r for r in sel if r.get("world_size") == world_size]
        if not sel:
            raise ValueError(f"no all-reduce records with world_size={world_size} and impl={impl!r}")
    elif one_world_size:
        _only({r.get("world_size") for r in sel}, "world sizes", "world_size=")
    return sel


def allreduce_points(records: Sequence[Mapping[str, Any]]) -> list[AllreducePoint]:
    """Pool the records of each (world size, message size) into one point, sorted.

    Raw ``times_s`` of repeated records are concatenated; a record without raw
    times contributes its ``median_s`` as one sample.
    """
    pooled: dict[tuple[int, int], list[float]] = {}
    for i, r in enumerate(records):
        msg = _num(r, "msg_bytes", i)
        p = r.get("world_size")
        if not isinstance(p, int) or isinstance(p, bool) or p < 1:
            raise ValueError(f"all-reduce record #{i}: world_size must be an integer >= 1, got {p!r}")
        if msg < 0 or msg != int(msg):
            raise ValueError(f"all-reduce record #{i}: msg_bytes must be a whole number >= 0, got {msg!r}")
        raw = r.get("times_s")
        if raw:
            if not isinstance(raw, (list, tuple)):
                raise ValueError(f"all-reduce record #{i}: times_s must be a list of seconds")
            times = [float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else math.nan for t in raw]
        else:
            times = [_num(r, "median_s", i)]
        if not all(math.isfinite(t) and t > 0 for t in times):
            raise ValueError(f"all-reduce record #{i} (msg_bytes={int(msg)}): times must be finite seconds > 0")
        pooled.setdefault((p, int(msg)), []).extend(times)
    out = []
    for (p, msg), ts in sorted(pooled.items()):
        a = np.asarray(ts)
        p10, med, p90 = np.percentile(a, [10, 50, 90])
        out.append(AllreducePoint(p, msg, tuple(ts), float(med), float(p10), float(p90)))
    return out
