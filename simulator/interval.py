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
* a compute factor from the measured steps (a bootstrap of step-to-step
  variation): for one step, one measured step over the median of all; for the
  median of ``N`` steps, the median of ``N`` steps drawn with replacement over
  the median of as many as were measured (the prediction is pinned to the
  measured median, which has a sampling error of its own);
* the contention terms ``(c, c_comm)``, or ``(c, c_comm, call_cpu_s,
  call_cpu_s_per_byte)`` where the probe ran at two caps, as one draw from the
  in-step probe's bootstrap fits (``calibration.step_probe``: its steps
  resampled and refitted), so their correlation is kept;
* the in-step terms ``leftover_s`` and ``optimizer_extra_s`` (``calibration.step_probe``: medians whose
  95 % bootstrap intervals the fit keeps) each from a normal as wide as its interval (a percentile
  interval of a median can be lopsided: m39's micro-DLRM leftover 0.23 ms in 0.13-0.28; the normal is
  centred on the fitted value), truncated at 0, from a generator of their own, where the prediction's
  cost model carries the term (``Uncertainty.for_cost``: a term the fit did not keep, or ``validate``
  leaves out, stays 0 and is not drawn);
* the queued calls' latency scale (``CostModel.queued_latency_scale``, fitted from the in-step probe's plain
  steps at a call per gradient where it kept one) from a normal as wide as its 95 % bootstrap interval,
  centred on the fitted scale and held within (0, 1], from the in-step terms' generator, after them;
* the sharded step's extra per broadcast (``CostModel.broadcast_step_extra_s``, ``calibration.sharded_probe``,
  where it was kept) from a normal as wide as its 95 % interval over resampled turns, likewise, after them;
* the latency split, where a prediction's all-reduce terms come from one world size (the linear model, its
  split assumed: ``split_unknown``) and it is made at another: that one p fixes the zero-byte time there, not
  how much of it the ring's ``2(p-1)`` steps take, so the per-step share is drawn uniformly over 0-1 (every
  split reproduces the measured p), from a generator of its own (``Uncertainty.at_world_size``);
* the model's own error: a log-normal factor on the step whose standard
  deviation is the root mean square of ``log(predicted / measured)`` over real
  steps the calibration measures but fits nothing to. Where it ran, the step
  check (``calibration.sharded_probe.step_check_residual``): torch DDP at one
  bucket and at 2 MiB, and sharded where its extra was not kept, measured beside
  compute-only steps and predicted with the profile rescaled to them, as
  ``validate`` measures and predicts its rows. Else (records from before it) the
  in-step probe's step residual (``calibration.params.probe_step_residual``: its
  recorded steps at two caps and at one bucket, which in three link cells of
  runs m53-m54 ran 2.6-4.9 % from the model where the rows' median error was
  1.3-1.8 %, so that their intervals covered 100 %). The inputs' errors alone say how uncertain the
  model's inputs are, not how wrong its rules are; measured with a calm machine,
  their interval was narrower than the misses (benchmarks: coverage 29-59 % in
  cells whose median error was 2-5 %).

Which interval is asked for matters: a single step varies with the machine's
noise, while the median of many steps (what a benchmark reports) varies only
with what the model's inputs do not pin down. A training run's throughput
follows the mean step, which a right-skewed step time puts above the median
(on loopback, this VM: micro-DLRM's many-call rows' mean 8-29 % above the
median; the other rows of the stored cells -1..+9 %, BENCHMARKS.md
"Thirteenth session"). ``validate`` judges the median of its ``N`` measured steps
against the interval of the median of ``N``. What was not measured with an
error (a preset's link figures) is held fixed, and ``Interval.sources`` names
what was drawn, so an interval built from nothing says so instead of looking
certain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .jsonio import to_fields
from .network import CostModel
from .predict import predict
from .profile import GradProfile
from .strategies import StrategySpec

_QUEUED_FLOOR = 0.01  # a drawn queued-call scale is held at or above this (the cost model needs it > 0)
Z95 = 1.959963984540054  # two-sided 95 % normal quantile: a 95 % CI is +-Z95 standard errors


@dataclass(frozen=True)
class Uncertainty:
    """The measured errors a prediction inherits (all zero/empty: a point prediction)."""

    o_sd_s: float = 0.0
    w_log_sd: float = 0.0
    compute_rel: tuple[float, ...] = ()
    contention_draws: tuple[tuple[float, ...], ...] = ()  # (c, c_comm[, call_cpu_s, per byte]) bootstrap fits
    model_log_sd: float = 0.0  # the model's own error, as a log-normal factor on the step
    leftover_sd_s: float = 0.0  # standard error of CostModel.leftover_s, drawn where the cost carries it
    optimizer_extra_sd_s: float = 0.0  # standard error of CostModel.optimizer_extra_s, likewise
    queued_scale_sd: float = 0.0  # standard error of CostModel.queued_latency_scale, where the cost has one below 1
    broadcast_extra_sd_s: float = 0.0  # standard error of CostModel.broadcast_step_extra_s, where the cost has one
    model_error_from: str = "the in-step probe"  # what model_log_sd was measured at (named in ``sources``)
    model_error_steps: int = 0  # how many residuals model_log_sd is the RMS of (0: not said); named in ``sources``
    # the one world size whose all-reduce fit's latency split is drawn (``at_world_size``); None: not drawn
    latency_split_at: int | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.o_sd_s) and self.o_sd_s >= 0):
            raise ValueError(f"o_sd_s must be a finite number >= 0, got {self.o_sd_s!r}")
        if not (math.isfinite(self.w_log_sd) and self.w_log_sd >= 0):
            raise ValueError(f"w_log_sd must be a finite number >= 0, got {self.w_log_sd!r}")
        if any(not (math.isfinite(r) and r > 0) for r in self.compute_rel):
            raise ValueError("compute_rel must hold finite ratios > 0")
        if any(len(d) not in (2, 4) or not all(math.isfinite(x) and x >= 0 for x in d) for d in self.contention_draws):
            raise ValueError(
                "contention_draws must hold (c, c_comm) or (c, c_comm, call_cpu_s, call_cpu_s_per_byte), "
                "finite numbers >= 0"
            )
        if not (math.isfinite(self.model_log_sd) and self.model_log_sd >= 0):
            raise ValueError(f"model_log_sd must be a finite number >= 0, got {self.model_log_sd!r}")
        if isinstance(self.model_error_steps, bool) or not isinstance(self.model_error_steps, int):
            raise ValueError(f"model_error_steps must be a whole number >= 0, got {self.model_error_steps!r}")
        if self.model_error_steps < 0:
            raise ValueError(f"model_error_steps must be a whole number >= 0, got {self.model_error_steps!r}")
        if self.latency_split_at is not None and (
            isinstance(self.latency_split_at, bool)
            or not isinstance(self.latency_split_at, int)
            or self.latency_split_at < 2
        ):
            raise ValueError(f"latency_split_at must be a world size >= 2 or None, got {self.latency_split_at!r}")
        for name in ("leftover_sd_s", "optimizer_extra_sd_s", "queued_scale_sd", "broadcast_extra_sd_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")

    @property
    def sources(self) -> tuple[str, ...]:
        out = []
        if self.o_sd_s > 0:
            out.append("o fit CI")
        if self.w_log_sd > 0:
            out.append("w fit CI")
        if len(self.compute_rel) > 1:
            out.append(f"compute step-to-step ({len(self.compute_rel)} measured steps)")
        if len(self.contention_draws) > 1:
            out.append(f"contention in-step probe ({len(self.contention_draws)} bootstrap fits)")
        if self.leftover_sd_s > 0:
            out.append("leftover fit CI")
        if self.optimizer_extra_sd_s > 0:
            out.append("optimizer extra fit CI")
        if self.queued_scale_sd > 0:
            out.append("queued calls' scale fit CI")
        if self.broadcast_extra_sd_s > 0:
            out.append("sharded step probe CI")
        if self.latency_split_at is not None:
            out.append(f"latency split (p = {self.latency_split_at} measured alone: per-step share drawn over 0-100 %)")
        if self.model_log_sd > 0:
            of = f", RMS of {self.model_error_steps} steps" if self.model_error_steps else ""
            out.append(f"model error at {self.model_error_from} ({(math.exp(self.model_log_sd) - 1) * 100:.1f}%{of})")
        return tuple(out)

    def for_cost(self, cost: CostModel) -> Uncertainty:
        """These errors as a prediction from ``cost`` inherits them: the in-step terms' errors only where the cost
        carries the term (a term the probe did not keep, or ``validate`` leaves out, is drawn nowhere, and
        ``sources`` does not name it)."""
        return replace(
            self,
            leftover_sd_s=self.leftover_sd_s if cost.leftover_s > 0 else 0.0,
            optimizer_extra_sd_s=self.optimizer_extra_sd_s if cost.optimizer_extra_s > 0 else 0.0,
            queued_scale_sd=self.queued_scale_sd if cost.queued_latency_scale < 1 else 0.0,
            broadcast_extra_sd_s=self.broadcast_extra_sd_s if cost.broadcast_step_extra_s else 0.0,
        )

    def at_world_size(self, cost: CostModel, world_size: int) -> Uncertainty:
        """These errors for a prediction from ``cost`` at ``world_size``: where ``cost`` is the linear model of one
        world size with its latency split assumed (``split_unknown``) and ``world_size`` is another, the split
        is drawn too; else as they are, with no split drawn."""
        return replace(self, latency_split_at=cost.ref_world_size if split_unknown(cost, world_size) else None)

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
        contention_draws: Sequence[Sequence[float]] = (),
    ) -> Uncertainty:
        """From a fit's 95 % intervals (NaN or missing ends: no error known), measured compute times and
        the in-step probe's bootstrap fits of ``(c, c_comm[, call_cpu_s, call_cpu_s_per_byte])``."""
        o_sd = sd_of_ci(o_ci_s)
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
        pairs = tuple(tuple(float(x) for x in d) for d in contention_draws)
        return cls(o_sd_s=o_sd, w_log_sd=w_sd, compute_rel=rel, contention_draws=pairs)


def split_unknown(cost: CostModel, world_size: int) -> bool:
    """Whether a prediction from ``cost`` at ``world_size`` rests on a latency split nothing measured: the linear
    model fitted from measurements at one world size (``measured_world_sizes``), its split assumed
    (``simulator.network.ASSUMED_LATENCY_SHARE``, not given), used at another. At its own world size every split
    gives the same times; a split fitted across world sizes or given is held as it is, and so is a preset's (even
    one whose o and w come from a fit at one p, as ``gloo-loopback``'s: a preset's figures are held fixed)."""
    return (
        cost.network is None
        and cost.ref_world_size is not None
        and cost.measured_world_sizes == (cost.ref_world_size,)
        and cost.latency_share is None
        and world_size >= 2
        and world_size != cost.ref_world_size
    )


def sd_of_ci(ci: Sequence[float] | None) -> float:
    """The standard error a normal with this 95 % interval has; 0 where it is missing or not finite."""
    try:
        lo, hi = (float(x) for x in ci or ())
    except (TypeError, ValueError):  # missing, the wrong length, or not numbers
        return 0.0
    return max(0.0, (hi - lo) / (2 * Z95)) if math.isfinite(lo) and math.isfinite(hi) else 0.0


@dataclass(frozen=True)
class Interval:
    """A central interval of the predicted step time at ``level`` (0.8: p10..p90 of the draws)."""

    level: float
    lo_s: float
    median_s: float
    hi_s: float
    n_draws: int
    sources: tuple[str, ...]
    steps: int | None = 1  # of one step (1), of the median of N steps, or of a long run's median (None)

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)

    def describe_ms(self) -> str:
        if not self.sources:
            return "no interval: nothing measured with an error"
        return f"{self.level:.0%} interval {self.lo_s * 1e3:.1f}-{self.hi_s * 1e3:.1f} ms for {self.of_what}"

    @property
    def of_what(self) -> str:
        if self.steps == 1:
            return "a single step"
        return f"the median of {self.steps} steps" if self.steps else "the median step of a long run"


def _check_steps(steps: int | None) -> None:
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
        raise ValueError(f"steps must be a whole number >= 1 (or None: a long run), got {steps!r}")


def compute_factor(rel: np.ndarray, steps: int | None, rng: np.random.Generator) -> float:
    """One draw of (measured compute) / (the median the prediction is pinned to): one step over the
    median for ``steps=1``, else the median of ``steps`` resampled steps (1 for a long run) over the
    median of a resample of the reference steps (its sampling error)."""
    if steps == 1:
        return float(rel[rng.integers(len(rel))])
    top = 1.0 if steps is None else float(np.median(rng.choice(rel, steps)))
    return top / float(np.median(rng.choice(rel, len(rel))))


def draw_inputs(
    profile: GradProfile, cost: CostModel, unc: Uncertainty, n: int, seed: int = 0, steps: int | None = 1
) -> list[tuple[GradProfile, CostModel]]:
    """``n`` seeded draws of (profile, cost model) for the step time of one step, of the median of
    ``steps`` steps, or of a long run (``None``); the same seed gives the same draws, so two
    configurations predicted over the same draws are compared pairwise."""
    if n < 1:
        raise ValueError(f"draws must be >= 1, got {n}")
    _check_steps(steps)
    rng = np.random.default_rng(seed)
    terms_rng = np.random.default_rng([seed, 2])  # the in-step terms' own stream: the other draws stay as they were
    split_rng = np.random.default_rng([seed, 4])  # the latency split's, likewise
    unc = unc.for_cost(cost)
    rel = np.asarray(unc.compute_rel, dtype=float)
    out = []
    for _ in range(n):
        c = cost
        if unc.o_sd_s > 0:
            c = c.perturbed(o_delta_s=unc.o_sd_s * float(rng.standard_normal()))
        if unc.w_log_sd > 0:
            c = c.perturbed(w_factor=math.exp(unc.w_log_sd * float(rng.standard_normal())))
        if len(unc.contention_draws) > 1:
            cc = unc.contention_draws[int(rng.integers(len(unc.contention_draws)))]
            c = c.with_overrides(contention=cc[0], comm_contention=cc[1])
            if len(cc) > 2:
                c = c.with_overrides(call_cpu_s=cc[2], call_cpu_s_per_byte=cc[3])
        # the in-step terms only where this cost carries them (``for_cost``): a term left out stays out
        if unc.leftover_sd_s > 0:
            left = c.leftover_s + unc.leftover_sd_s * float(terms_rng.standard_normal())
            c = c.with_overrides(leftover_s=max(0.0, left))
        if unc.optimizer_extra_sd_s > 0:
            extra = c.optimizer_extra_s + unc.optimizer_extra_sd_s * float(terms_rng.standard_normal())
            c = c.with_overrides(optimizer_extra_s=max(0.0, extra))
        if unc.queued_scale_sd > 0:
            q = c.queued_latency_scale + unc.queued_scale_sd * float(terms_rng.standard_normal())
            c = c.with_overrides(queued_latency_scale=min(1.0, max(_QUEUED_FLOOR, q)))
        if unc.broadcast_extra_sd_s > 0:
            b = c.broadcast_step_extra_s + unc.broadcast_extra_sd_s * float(terms_rng.standard_normal())
            c = c.with_overrides(broadcast_step_extra_s=b)
        if unc.latency_split_at is not None:
            c = c.with_overrides(latency_share=float(split_rng.uniform(0.0, 1.0)))
        p = profile
        if len(rel) > 1:
            p = profile.scaled(compute_factor(rel, steps, rng))
        out.append((p, c))
    return out


def step_times_over(
    draws: Sequence[tuple[GradProfile, CostModel]], strategy: StrategySpec, world_size: int, **predict_kw: Any
) -> list[float]:
    return [predict(p, c, strategy, world_size, **predict_kw).step_time_s for p, c in draws]


def interval_of(
    times_s: Sequence[float], unc: Uncertainty, level: float = 0.8, steps: int | None = 1, seed: int = 0
) -> Interval:
    """The ``level`` interval of step times drawn over ``unc``'s inputs, with the model's own error
    (``with_model_error``, seeded: the draws' seed) applied to them."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    q = (1 - level) / 2 * 100
    lo, med, hi = np.percentile(with_model_error(times_s, unc, seed), [q, 50, 100 - q])
    return Interval(level, float(lo), float(med), float(hi), len(times_s), unc.sources, steps)


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
    steps: int | None = 1,
    **predict_kw: Any,
) -> Interval:
    """The ``level`` interval of one configuration's step time (one step, the median of ``steps``
    steps, or of a long run: ``None``) over ``draws`` draws of its inputs."""
    _check_steps(steps)
    unc = unc.for_cost(cost).at_world_size(cost, world_size)
    if not unc.sources:
        t = predict(profile, cost, strategy, world_size, **predict_kw).step_time_s
        return Interval(level, t, t, t, 1, (), steps)
    times = step_times_over(draw_inputs(profile, cost, unc, draws, seed, steps), strategy, world_size, **predict_kw)
    return interval_of(times, unc, level, steps, seed)


def with_model_error(times_s: Sequence[float], unc: Uncertainty, seed: int = 0) -> list[float]:
    """Each drawn step time times a seeded log-normal factor of ``unc.model_log_sd`` (unchanged at 0).
    Two configurations given the same seed get the same factors: the model's error is taken as common
    to the settings of one model on one machine, so it widens each interval, not their difference."""
    if unc.model_log_sd <= 0:
        return list(times_s)
    z = np.random.default_rng([seed, 1]).standard_normal(len(times_s))
    return [float(t * math.exp(unc.model_log_sd * x)) for t, x in zip(times_s, z)]


def measured_backward_s(profile: GradProfile) -> list[float]:
    """The measured backward times a profile kept (``realrun.profile_grads``), one per step and rank; [] if none."""
    raw = ((profile.env or {}).get("profile") or {}).get("raw_backward_hookfree_s") or []
    out: list[float] = []
    for per_rank in raw:
        if isinstance(per_rank, (list, tuple)):
            out.extend(float(x) for x in per_rank if isinstance(x, (int, float)))
    return out
