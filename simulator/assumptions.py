"""What a prediction for another machine rests on, and how far the stated ranges of it move the answer.

A prediction from a network preset and a device spec (``ddpsim predict --model gpt2-xl --network
nccl-h100-ib``) has no measured error to draw an interval from: its figures are a datasheet's, a
benchmark report's or an assumption, each with its source. What it can say is how much each of them
matters. A preset or a device spec may state a range for a value (``"ranges"`` in its JSON file:
``{"inter.bw_bytes_per_s": {"low": ..., "high": ..., "source": "..."}}``), the span that its sources
report or that the assumption admits. ``spread_over`` then predicts:

* each value alone at the two ends of its range, the others at their point values (which of them moves
  the step most is what to measure first on the real machine);
* all values together at the end that lengthens the step alone, and at the end that shortens it.

The two joint ends are a span, not a probability interval: nothing says how likely each end is, and no
coverage is claimed for it. Where a value moves the step the same way everywhere (a bandwidth, a
latency, an MFU do), the joint ends bound every combination of values within the ranges.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


@dataclass(frozen=True)
class StatedRange:
    """The range a spec states for one of its values: ``low <= point <= high``, each finite and > 0."""

    key: str  # the value's field, dotted for a nested one (``inter.bw_bytes_per_s``)
    point: float  # the spec's own value
    low: float
    high: float
    source: str
    at_most: float = math.inf  # the largest value the field can take (an MFU: 1)

    def __post_init__(self) -> None:
        for name in ("point", "low", "high"):
            v = getattr(self, name)
            _require(_positive(v), f"range of {self.key}: {name} must be a finite number > 0, got {_short(v)}")
        _require(self.low <= self.high, f"range of {self.key}: low {self.low!r} is above high {self.high!r}")
        _require(
            self.low <= self.point <= self.high,
            f"range of {self.key}: the value {self.point!r} lies outside its stated range {self.low!r}-{self.high!r}: "
            "widen the range (with its source) or remove it",
        )
        _require(self.high <= self.at_most, f"range of {self.key}: high must be <= {self.at_most:g}, got {self.high!r}")
        _require(isinstance(self.source, str) and self.source.strip() != "", f"range of {self.key}: no source given")

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "source": self.source}

    @property
    def high_lengthens(self) -> bool:
        """Whether the high end is the one that lengthens a step when nothing else says (a tie): a latency or an
        overhead does; a bandwidth, an MFU does not."""
        return not (self.key.endswith("bytes_per_s") or self.key.endswith("mfu"))


def _positive(v: Any) -> bool:
    """A real number (not a bool), finite and > 0; a huge integer is not finite here (``math.isfinite`` would
    raise on it)."""
    if not isinstance(v, numbers.Real) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(float(v)) and float(v) > 0
    except OverflowError:
        return False


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else f"{text[:37]}... ({len(text)} characters)"


def parse_ranges(
    d: Any, values: Mapping[str, float | None], where: str, at_most: Mapping[str, float] | None = None
) -> tuple[StatedRange, ...]:
    """The ``"ranges"`` object of a spec file: each key one of ``values`` (a field the spec has, with its
    point value), each entry ``{"low", "high", "source"}``. A ``ValueError`` names the spec and the key."""
    if d is None:
        return ()
    _require(isinstance(d, Mapping), f"{where}: ranges must be an object by field, got {d!r}")
    out = []
    for key, entry in d.items():
        known = [k for k, v in values.items() if v is not None]
        _require(key in known, f"{where}: ranges has unknown field {key!r}; allowed here: {', '.join(known)}")
        _require(
            isinstance(entry, Mapping) and set(entry) == {"low", "high", "source"},
            f"{where}: ranges[{key}] must be an object with low, high and source, got {entry!r}",
        )
        point = values[key]
        assert point is not None
        try:
            out.append(
                StatedRange(
                    key,
                    float(point),
                    entry["low"],
                    entry["high"],
                    entry["source"],
                    (at_most or {}).get(key, math.inf),
                )
            )
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return tuple(out)


@dataclass(frozen=True)
class RangeEffect:
    """One stated range and the step at its two ends, the other values at their points."""

    label: str  # ``network nccl-h100-ib inter.bw_bytes_per_s``
    stated: StatedRange
    step_at_low_s: float
    step_at_high_s: float

    @property
    def moves_s(self) -> float:
        return abs(self.step_at_high_s - self.step_at_low_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.label,
            **self.stated.to_dict(),
            "point": self.stated.point,
            "step_at_low_s": self.step_at_low_s,
            "step_at_high_s": self.step_at_high_s,
        }


@dataclass(frozen=True)
class Spread:
    """The step at the point values, at the joint ends of the stated ranges, and each range alone
    (``effects``, the one that moves the step most first)."""

    point_s: float
    short_s: float  # every value at the end that shortens the step alone
    long_s: float  # every value at the end that lengthens it
    effects: tuple[RangeEffect, ...]
    short_values: Mapping[str, float]  # the values at the short end, keyed as ``spread_over``'s ``step_at`` takes
    long_values: Mapping[str, float]

    @property
    def who(self) -> str:
        """Whose ranges these are, in words: "the preset", "the device", "the preset and the device"."""
        kinds = {e.label.split()[0] for e in self.effects}
        names = [w for k, w in (("network", "the preset"), ("device", "the device")) if k in kinds]
        return " and ".join(names) or "the specs"

    def to_dict(self) -> dict[str, Any]:
        return {
            "what": f"the step over the ranges {self.who} state (assumptions and reported spans, not "
            "measurements; a span, no probability claimed)",
            "point_s": self.point_s,
            "short_s": self.short_s,
            "long_s": self.long_s,
            "effects": [e.to_dict() for e in self.effects],
        }

    def describe(self, top: int = 3) -> list[str]:
        """Lines for a terminal: the joint span, then the ``top`` ranges that move the step most (those that do
        not move it at all are counted, not listed)."""
        verb = "states" if " and " not in self.who else "state"
        lines = [
            f"over the ranges {self.who} {verb} (not measured; a span, not an interval): "
            f"{self.short_s * 1e3:.4g}-{self.long_s * 1e3:.4g} ms"
        ]
        moving = [e for e in self.effects if e.moves_s > 0]
        for e in moving[:top]:
            r = e.stated
            lines.append(
                f"  {e.label} {_value(r.key, r.low, unit=False)}-{_value(r.key, r.high)}: "
                f"{e.step_at_low_s * 1e3:.4g} ms at {_value(r.key, r.low)}, {e.step_at_high_s * 1e3:.4g} ms at "
                f"{_value(r.key, r.high)}"
            )
        rest = [f"{len(moving) - top} more move it less" if len(moving) > top else "", ""]
        if len(moving) < len(self.effects):
            rest[1] = f"{len(self.effects) - len(moving)} do not move this step"
        if any(rest):
            lines.append(f"  ({'; '.join(r for r in rest if r)}: --json has each)")
        return lines


def _value(key: str, v: float, unit: bool = True) -> str:
    """A stated value in the unit people quote it in (``unit``: with the unit's name)."""
    if key.endswith("bytes_per_s"):
        return f"{v / 1e9:.4g}" + (" GB/s" if unit else "")
    if key.endswith("_s"):
        return f"{v * 1e6:.4g}" + (" us" if unit else "")
    return f"{v:.4g}"


Labelled = tuple[str, StatedRange]  # ("network nccl-h100-ib", its range)


def spread_over(ranges: Sequence[Labelled], step_at: Callable[[Mapping[str, float]], float]) -> Spread | None:
    """The ``Spread`` of ``step_at`` (the step, in seconds, with the values given by label and key replaced:
    ``{"network nccl-h100-ib|inter.alpha_s": 4e-6}``) over ``ranges``; ``None`` without any range. Each value
    goes to the end that lengthens the step alone for the long end; where its two ends give the same step (it
    does not move this step alone), to the end that lengthens a step by its kind (``high_lengthens``)."""
    if not ranges:
        return None
    point = step_at({})
    effects, short, long = [], {}, {}
    for label, r in ranges:
        key = f"{label}|{r.key}"
        at_low, at_high = step_at({key: r.low}), step_at({key: r.high})
        effects.append(RangeEffect(f"{label} {r.key}", r, at_low, at_high))
        high_long = at_high > at_low if at_high != at_low else r.high_lengthens
        long[key], short[key] = (r.high, r.low) if high_long else (r.low, r.high)
    effects.sort(key=lambda e: -e.moves_s)
    return Spread(point, step_at(short), step_at(long), tuple(effects), short, long)


def overrides_for(overrides: Mapping[str, float], label: str) -> dict[str, float]:
    """The keys of ``overrides`` that belong to ``label``, without it (``"inter.alpha_s": 4e-6``)."""
    prefix = f"{label}|"
    return {k[len(prefix) :]: v for k, v in overrides.items() if k.startswith(prefix)}
