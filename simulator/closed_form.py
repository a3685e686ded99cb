"""The closed form beside every sweep: the intuition, not the answer.

Equal buckets of ``b = s / n_b`` bytes, each bucket's compute as long as its
transfer ``b / w``, one serial channel: the channel is the bottleneck from the
first bucket on, so communication ends ``b/w + n_b (o + b/w)`` after backward
starts while backward ends at ``s/w``. The exposed overhead is

    T(n_b) = s / (n_b w) + n_b o

minimised at ``n_b* = sqrt(s / (w o))``, i.e. ``b* = sqrt(s w o)``, with
``T_min = 2 sqrt(s o / w)``. The event model reproduces ``T(n_b)`` exactly in
this regime (``tests/test_closed_form.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .units import MIB


@dataclass(frozen=True)
class ClosedForm:
    total_grad_bytes: int
    o_s: float
    w_bytes_per_s: float
    best_n_buckets: float
    best_bucket_bytes: float
    t_min_s: float

    @property
    def best_bucket_mb(self) -> float:
        return self.best_bucket_bytes / MIB

    def to_dict(self) -> dict[str, Any]:
        return {
            "formula": "T(n_b) = s/(n_b w) + n_b o; b* = sqrt(s w o); T_min = 2 sqrt(s o / w)",
            "total_grad_bytes": self.total_grad_bytes,
            "o_s": self.o_s,
            "w_bytes_per_s": self.w_bytes_per_s,
            "best_n_buckets": self.best_n_buckets,
            "best_bucket_mb": self.best_bucket_mb,
            "t_min_s": self.t_min_s,
        }


def exposed_overhead_s(total_grad_bytes: float, n_buckets: float, o_s: float, w_bytes_per_s: float) -> float:
    """``s/(n_b w) + n_b o``."""
    if n_buckets <= 0:
        raise ValueError(f"number of buckets must be > 0, got {n_buckets}")
    return total_grad_bytes / (n_buckets * w_bytes_per_s) + n_buckets * o_s


def closed_form(total_grad_bytes: int, o_s: float, w_bytes_per_s: float) -> ClosedForm:
    s, o, w = float(total_grad_bytes), o_s, w_bytes_per_s
    if s <= 0 or w <= 0:
        raise ValueError("closed form needs s > 0 and w > 0")
    if o <= 0:  # no per-call cost: infinitely many buckets, nothing exposed
        return ClosedForm(total_grad_bytes, o, w, math.inf, 0.0, 0.0)
    n_b = math.sqrt(s / (w * o))
    return ClosedForm(total_grad_bytes, o, w, n_b, math.sqrt(s * w * o), 2 * math.sqrt(s * o / w))
