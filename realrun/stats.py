"""Summaries of raw per-iteration times (seconds); the raw list is always kept beside them.

Percentiles use linear interpolation between order statistics (numpy's
default, ``method="linear"``): for sorted ``x`` of length ``n`` the ``q``
quantile sits at position ``q * (n - 1)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.jsonio import from_fields, to_fields


def percentile(times_s: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation."""
    if not times_s:
        raise ValueError("percentile of an empty list of times")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be in [0, 100], got {q}")
    xs = sorted(float(t) for t in times_s)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class TimeSummary:
    """Median and spread of ``n`` timed iterations, all in seconds."""

    n: int
    median_s: float
    mean_s: float
    min_s: float
    max_s: float
    p10_s: float
    p25_s: float
    p75_s: float
    p90_s: float
    std_s: float

    @property
    def iqr_s(self) -> float:
        return self.p75_s - self.p25_s

    def to_dict(self) -> dict[str, Any]:
        return {**to_fields(self), "iqr_s": self.iqr_s}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TimeSummary:
        return from_fields(cls, d, what="time summary")


def summarize(times_s: Sequence[float]) -> TimeSummary:
    """Summary of raw per-iteration times; raises ``ValueError`` for an empty or non-finite list."""
    xs = [float(t) for t in times_s]
    if not xs:
        raise ValueError("no timed iterations to summarize")
    if not all(math.isfinite(t) for t in xs):
        raise ValueError("times must be finite numbers of seconds")
    n = len(xs)
    mean = sum(xs) / n
    std = math.sqrt(sum((t - mean) ** 2 for t in xs) / (n - 1)) if n > 1 else 0.0
    return TimeSummary(
        n=n,
        median_s=percentile(xs, 50),
        mean_s=mean,
        min_s=min(xs),
        max_s=max(xs),
        p10_s=percentile(xs, 10),
        p25_s=percentile(xs, 25),
        p75_s=percentile(xs, 75),
        p90_s=percentile(xs, 90),
        std_s=std,
    )


def median_ci(times_s: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free ``level`` confidence interval of the median of ``times_s`` (the sign-test
    interval): the order statistics ``x_(j)`` and ``x_(n+1-j)``, ``j`` the largest with
    ``2 P(Binomial(n, 1/2) < j) <= 1 - level``. It assumes nothing of the times' distribution (steps
    are skewed, with slow outliers). Too few times to reach ``level`` (under 6 at 95 %): ``(min, max)``."""
    xs = sorted(float(t) for t in times_s)
    if not xs:
        raise ValueError("median_ci of an empty list of times")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n = len(xs)
    tail, j = 0.0, 0
    log_norm = math.lgamma(n + 1) - n * math.log(2.0)  # log(n! / 2**n)
    while j < n // 2:
        # P(Binomial(n, 1/2) = j) in logs: comb(n, j) / 2**n overflows a float from n = 1024 on
        tail += math.exp(log_norm - math.lgamma(j + 1) - math.lgamma(n - j + 1))
        if 2 * tail > 1.0 - level:
            break
        j += 1
    j = max(j, 1)
    return xs[j - 1], xs[n - j]


def paired_gap_interval(
    times_s: Sequence[float], ref_s: Sequence[float], level: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """A ``level`` percentile-bootstrap interval of ``median(times_s) / median(ref_s) - 1``, in %, the steps
    resampled in pairs (``scipy.stats.bootstrap``, ``paired=True``): step ``k`` of both ran side by side
    (``calibration.validate.measure_beside_compute`` steps its settings in turn), so a slow moment of the
    machine moves both and the interval is of the gap, not of two medians' noise added. None with fewer
    than 3 pairs or lists of different lengths."""
    return gap_interval(times_s, ref_s, level, seed, paired=True)


def gap_interval(
    times_s: Sequence[float], ref_s: Sequence[float], level: float = 0.95, seed: int = 0, paired: bool = True
) -> tuple[float, float] | None:
    """``paired_gap_interval``, or with ``paired`` False each list resampled on its own: for steps that did
    not run side by side (``validate``'s configurations in different groups). None with fewer than 3 steps
    in a list, or (paired) lists of different lengths."""
    a, b = [float(t) for t in times_s], [float(t) for t in ref_s]
    if min(len(a), len(b)) < 3 or (paired and len(a) != len(b)):
        return None
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")

    def gap(x: Any, y: Any) -> float:
        return (float(np.median(x)) / float(np.median(y)) - 1.0) * 100.0

    return bootstrap_interval((a, b), gap, level, seed, paired=paired)


def bootstrap_interval(
    samples: Sequence[Sequence[float]],
    statistic: Callable[..., float],
    level: float = 0.95,
    seed: int = 0,
    paired: bool = False,
) -> tuple[float, float] | None:
    """The ``level`` percentile-bootstrap interval of ``statistic(*samples)`` (``scipy.stats.bootstrap``,
    999 resamples, seeded): each sample resampled on its own, or index by index together (``paired``).
    None where an end is not finite (NaN data)."""
    from scipy.stats import bootstrap

    res = bootstrap(
        tuple(samples),
        statistic,
        paired=paired,
        n_resamples=999,
        confidence_level=level,
        method="percentile",
        vectorized=False,
        rng=np.random.default_rng(seed),
    )
    lo, hi = (float(x) for x in res.confidence_interval)
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def max_over_ranks(per_rank_times_s: Sequence[Sequence[float]]) -> list[float]:
    """Per iteration, the slowest rank's time (a collective is done when its last rank is)."""
    if not per_rank_times_s:
        raise ValueError("no ranks' times given")
    lengths = {len(ts) for ts in per_rank_times_s}
    if len(lengths) != 1:
        raise ValueError(f"ranks timed different numbers of iterations: {sorted(lengths)}")
    return [max(ts) for ts in zip(*per_rank_times_s)]


MIN_SECONDS = 1.0  # validate's default: timed seconds per configuration at least
# tune --verify's: six runs of micro-DLRM's verify on loopback from one params put the default's gap to 4 MiB at an sd
# of 8.3 points over their rounds at 1 s a setting and 3.4 at 4 s, and at 1 s two of three runs named the wrong
# setting best (BENCHMARKS.md, "Thirty-seventh session"); a verdict of 3 % needs the longer measurement
VERIFY_MIN_SECONDS = 4.0
MAX_STEPS_FOR_TIME = 500  # where short steps raise the count, not beyond this (a larger --steps stands)


def spread_pct(values: Sequence[float] | None) -> float | None:
    """How far ``values`` lie apart: the highest over the lowest, less 1, in % (a configuration's median per round:
    whether a measurement repeats); None with fewer than two values or one that is not above 0."""
    if not values or len(values) < 2 or min(values) <= 0:
        return None
    return (max(values) / min(values) - 1) * 100.0


def steps_for_time(steps: int, min_seconds: float, est_step_s: float | None) -> int:
    """Timed steps per configuration: ``steps``, or more where steps of about ``est_step_s`` would not
    fill ``min_seconds`` (up to ``MAX_STEPS_FOR_TIME``). Eight steps of 8 ms are 64 ms of measurement:
    micro-DLRM's medians on this VM carried a noise of +-28-67 % at 8 steps and +-5-10 % at 150 (the
    measured and compute-only medians' 95 % intervals, one run each; BENCHMARKS.md); a 200-ms step
    needs no more than it is given."""
    if min_seconds <= 0 or est_step_s is None or not (math.isfinite(est_step_s) and est_step_s > 0):
        return steps
    return max(steps, min(MAX_STEPS_FOR_TIME, math.ceil(min_seconds / est_step_s)))
