"""Prediction intervals: the step time over draws of what was measured with error.

A prediction rests on quantities that were measured, each with an error: the
all-reduce fit's per-call overhead ``o`` and bandwidth ``w`` (95 % confidence
intervals from ``calibration.fit``), and the compute profile, whose steps vary
from one to the next (the profile keeps every measured backward time). The
interval is the spread of the event model's answer when those inputs are drawn
from what was measured:

* ``o`` from a normal with the fit's standard error (truncated at 0);
* ``w`` log-normal, its standard error from the lower half of the CI (the upper
  end may be unbounded);
* a compute factor: one measured step's backward over the median backward,
  drawn from the measured steps (a bootstrap of step-to-step variation).

What was not measured with an error (contention, a preset's link figures) is
held fixed, and ``Interval.sources`` names what was drawn, so an interval built
from nothing says so instead of looking certain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .jsonio import to_fields
from .network import CostModel
from .predict import predict
from .profile import GradProfile
from .strategies import StrategySpec

Z95 = 1.959963984540054  # two-sided 95 % normal quantile: a 95 % CI is +-Z95 standard errors


@dataclass(frozen=True)
class Uncertainty:
    """The measured errors a prediction inherits (all zero/empty: a point prediction)."""

    o_sd_s: float = 0.0
    w_log_sd: float = 0.0
    compute_rel: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.o_sd_s) and self.o_sd_s >= 0):
            raise ValueError(f"o_sd_s must be a finite number >= 0, got {self.o_sd_s!r}")
        if not (math.isfinite(self.w_log_sd) and self.w_log_sd >= 0):
            raise ValueError(f"w_log_sd must be a finite number >= 0, got {self.w_log_sd!r}")
        if any(not (math.isfinite(r) and r > 0) for r in self.compute_rel):
            raise ValueError("compute_rel must hold finite ratios > 0")

    @property
    def sources(self) -> tuple[str, ...]:
        out = []
        if self.o_sd_s > 0:
            out.append("o fit CI")
        if self.w_log_sd > 0:
            out.append("w fit CI")
        if len(self.compute_rel) > 1:
            out.append(f"compute step-to-step ({len(self.compute_rel)} measured steps)")
        return tuple(out)

    @property
    def compute_spread_pct(self) -> float:
        """Half the p10..p90 width of the measured compute steps, in % of the median (0 if unmeasured)."""
        if len(self.compute_rel) < 2:
            return 0.0
        lo, hi = np.percentile(self.compute_rel, [10, 90])
        return float((hi - lo) / 2.0 * 100.0)

    @classmethod
    def from_fit(
        cls,
        o_ci_s: tuple[float, float] | None = None,
        w_ci_bytes_per_s: tuple[float, float] | None = None,
        w_bytes_per_s: float | None = None,
        compute_samples_s: Sequence[float] = (),
    ) -> Uncertainty:
        """From a fit's 95 % intervals (NaN or missing ends: no error known) and measured compute times."""
        o_sd = 0.0
        if o_ci_s is not None and all(math.isfinite(x) for x in o_ci_s):
            o_sd = max(0.0, (o_ci_s[1] - o_ci_s[0]) / (2 * Z95))
        w_sd = 0.0
        if w_ci_bytes_per_s is not None and w_bytes_per_s and w_bytes_per_s > 0:
            lo = w_ci_bytes_per_s[0]
            if math.isfinite(lo) and 0 < lo < w_bytes_per_s:
                w_sd = math.log(w_bytes_per_s / lo) / Z95
        xs = [float(x) for x in compute_samples_s if math.isfinite(x) and x > 0]
        rel: tuple[float, ...] = ()
        if len(xs) >= 2:
            med = float(np.median(xs))
            rel = tuple(x / med for x in xs)
        return cls(o_sd_s=o_sd, w_log_sd=w_sd, compute_rel=rel)


@dataclass(frozen=True)
class Interval:
    """A central interval of the predicted step time at ``level`` (0.8: p10..p90 of the draws)."""

    level: float
    lo_s: float
    median_s: float
    hi_s: float
    n_draws: int
    sources: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)

    def describe_ms(self) -> str:
        if not self.sources:
            return "no interval: nothing measured with an error"
        return f"{self.level:.0%} interval {self.lo_s * 1e3:.1f}-{self.hi_s * 1e3:.1f} ms"


def draw_inputs(
    profile: GradProfile, cost: CostModel, unc: Uncertainty, n: int, seed: int = 0
) -> list[tuple[GradProfile, CostModel]]:
    """``n`` seeded draws of (profile, cost model); the same seed gives the same draws, so two
    configurations predicted over the same draws are compared pairwise."""
    if n < 1:
        raise ValueError(f"draws must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        c = cost
        if unc.o_sd_s > 0:
            c = c.perturbed(o_delta_s=unc.o_sd_s * float(rng.standard_normal()))
        if unc.w_log_sd > 0:
            c = c.perturbed(w_factor=math.exp(unc.w_log_sd * float(rng.standard_normal())))
        p = profile
        if len(unc.compute_rel) > 1:
            p = profile.scaled(float(unc.compute_rel[int(rng.integers(len(unc.compute_rel)))]))
        out.append((p, c))
    return out


def step_times_over(
    draws: Sequence[tuple[GradProfile, CostModel]], strategy: StrategySpec, world_size: int, **predict_kw: Any
) -> list[float]:
    return [predict(p, c, strategy, world_size, **predict_kw).step_time_s for p, c in draws]


def interval_of(times_s: Sequence[float], unc: Uncertainty, level: float = 0.8) -> Interval:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    q = (1 - level) / 2 * 100
    lo, med, hi = np.percentile(times_s, [q, 50, 100 - q])
    return Interval(level, float(lo), float(med), float(hi), len(times_s), unc.sources)


def step_interval(
    profile: GradProfile,
    cost: CostModel,
    strategy: StrategySpec,
    world_size: int,
    unc: Uncertainty,
    *,
    level: float = 0.8,
    draws: int = 32,
    seed: int = 0,
    **predict_kw: Any,
) -> Interval:
    """The ``level`` interval of one configuration's step time over ``draws`` draws of its inputs."""
    if not unc.sources:
        t = predict(profile, cost, strategy, world_size, **predict_kw).step_time_s
        return Interval(level, t, t, t, 1, ())
    times = step_times_over(draw_inputs(profile, cost, unc, draws, seed), strategy, world_size, **predict_kw)
    return interval_of(times, unc, level)


def measured_backward_s(profile: GradProfile) -> list[float]:
    """The measured backward times a profile kept (``realrun.profile_grads``), one per step and rank; [] if none."""
    raw = ((profile.env or {}).get("profile") or {}).get("raw_backward_hookfree_s") or []
    out: list[float] = []
    for per_rank in raw:
        if isinstance(per_rank, (list, tuple)):
            out.extend(float(x) for x in per_rank if isinstance(x, (int, float)))
    return out
