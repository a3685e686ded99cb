"""Tune: from a model to a recommended bucket size, in one command and one call.

``recommend`` is the pure core: given a gradient profile, a cost model and a
world size it sweeps every strategy and bucket size in the event model,
searches a non-uniform ``bucket_cap_mb_list`` (``simulator.schedule``), and
returns a ``TuneResult`` whose headline is the ``bucket_cap_mb`` to pass to
``torch.nn.parallel.DistributedDataParallel``, compared with the default.

``tune`` is the Python entry for a training script: it profiles a module
in this process (no ranks needed), takes the network from a preset, a
``CostModel`` or a params file, and calls ``recommend``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from simulator.interval import Interval, Uncertainty, draw_inputs, interval_of, step_times_over
from simulator.jsonio import to_fields
from simulator.network import CostModel
from simulator.predict import StepResult, predict
from simulator.profile import GradProfile
from simulator.schedule import best_schedule
from simulator.strategies import STRATEGIES, StrategySpec, strategy
from simulator.sweep import SweepResult, default_grid_mb, sweep
from simulator.sweep_plot import near_best_range
from simulator.units import MIB

from .cliutil import ranks_phrase
from .stated import StatedInputs
from .verification import Verification

TUNE_SCHEMA = "ddpsim.tune/1"
DEFAULT_BUCKET_MB = 25
NEAR_BEST_PCT = 1.0  # a cap whose predicted step is within this of the best is "near-best"
# Round caps a user would write: powers of two from 1/64 MiB to 16 GiB.
ROUND_CAPS_MB = tuple(2.0**k for k in range(-6, 15))


def round_sig(x: float, sig: int = 3) -> float:
    if x <= 0 or not math.isfinite(x):
        return x
    return round(x, sig - 1 - int(math.floor(math.log10(x))))


def ceil_sig(x: float, sig: int = 3) -> float:
    """``x`` rounded up to ``sig`` significant digits (11.308 -> 12 at two): a cap just above a split point
    makes the same buckets up to the next gradient's boundary, so the round value above is often as good."""
    if x <= 0 or not math.isfinite(x):
        return x
    digits = sig - 1 - int(math.floor(math.log10(x)))
    return round(math.ceil(round(x * 10.0**digits, 9)) / 10.0**digits, max(digits, 0))


def readable_caps(
    profile: GradProfile, groups: Sequence[Sequence[int]], caps_mb: Sequence[float], sig: int = 4
) -> tuple[float, ...]:
    """``caps_mb`` rounded to ``sig`` significant digits, with more digits where fewer would move a boundary.

    DDP closes a bucket once its size is >= ``int(cap * MiB)`` (the bytes torch
    and ``simulator.buckets`` compute), so a cap reproduces its bucket only if
    it lies above the bucket's size without its last tensor and at most its
    full size. A bucket that ends in a small tensor (a bias or a norm weight
    after a large weight) leaves a window narrower than 4 digits can hit.
    """
    out = []
    for g, cap in zip(groups, caps_mb):
        sizes = [profile.params[i].nbytes for i in g]
        full, before = sum(sizes), sum(sizes) - sizes[-1]
        r = cap
        for digits in range(sig, 18):
            r = round_sig(cap, digits)
            if before < int(r * MIB) <= full:
                break
        else:
            r = cap
        out.append(r)
    return tuple(out)


@dataclass(frozen=True)
class StrategyRow:
    """One row of the tune report's strategies table: a strategy at its best bucket size (``None``:
    not bucketed) and the step it predicts."""

    strategy: str
    bucket_mb: float | None
    step_time_s: float
    overhead_s: float
    n_collectives: int

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)


@dataclass(frozen=True)
class TuneResult:
    model: str
    world_size: int
    network: str
    profile_source: str
    recommended_bucket_mb: float
    predicted_step_time_s: float
    predicted_overhead_s: float
    compute_s: float
    default_step_time_s: float
    default_overhead_s: float
    recommended_bucket_mb_list: tuple[float, ...] | None
    list_step_time_s: float
    list_gain_pct: float
    near_best_range_mb: tuple[float, float]
    best_strategy: str
    best_strategy_step_time_s: float
    strategies: tuple[StrategyRow, ...]
    sweep: SweepResult
    notes: tuple[str, ...] = ()
    exact_best_bucket_mb: float | None = None
    keep_default: bool = False
    advice: str = ""
    noise_pct: float = 0.0
    interval: Interval | None = None
    default_interval: Interval | None = None
    gain_p10_p90_pct: tuple[float, float] | None = None
    default_bucket_mb: int = DEFAULT_BUCKET_MB
    files: Mapping[str, str] = field(default_factory=dict)
    verify: Verification | None = None
    run: Mapping[str, Any] | None = None  # the command line, host, torch version (``ddpsim tune``)
    # the best round cap and the step over the ranges a preset and a device state (``StatedInputs.ends``)
    stated_ranges: Mapping[str, Any] | None = None

    @property
    def bucket_cap_mb(self) -> float | None:
        """What to pass to ``DistributedDataParallel(bucket_cap_mb=...)``: the recommended round cap, or None
        where the advice is to keep torch's default (25 MiB, the first bucket 1 MiB)."""
        return None if self.keep_default else self.recommended_bucket_mb

    @property
    def gain_vs_default_pct(self) -> float:
        return (self.default_step_time_s - self.predicted_step_time_s) / self.default_step_time_s * 100.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": TUNE_SCHEMA,
            "model": self.model,
            "world_size": self.world_size,
            "network": self.network,
            "network_provenance": dict(self.sweep.network_provenance) if self.sweep.network_provenance else None,
            "profile_source": self.profile_source,
            "recommended_bucket_mb": self.recommended_bucket_mb,
            "predicted_step_time_s": self.predicted_step_time_s,
            "predicted_overhead_s": self.predicted_overhead_s,
            "compute_s": self.compute_s,
            "default_bucket_mb": self.default_bucket_mb,
            "default_step_time_s": self.default_step_time_s,
            "default_overhead_s": self.default_overhead_s,
            "gain_vs_default_pct": self.gain_vs_default_pct,
            "gain_p10_p90_pct": list(self.gain_p10_p90_pct) if self.gain_p10_p90_pct else None,
            "keep_default": self.keep_default,
            "bucket_cap_mb": self.bucket_cap_mb,
            "advice": self.advice,
            "noise_pct": self.noise_pct,
            "exact_best_bucket_mb": self.exact_best_bucket_mb,
            "interval": self.interval.to_dict() if self.interval else None,
            "default_interval": self.default_interval.to_dict() if self.default_interval else None,
            "near_best_range_mb": list(self.near_best_range_mb),
            "recommended_bucket_mb_list": list(self.recommended_bucket_mb_list)
            if self.recommended_bucket_mb_list
            else None,
            "list_step_time_s": self.list_step_time_s,
            "list_gain_pct": self.list_gain_pct,
            "best_strategy": self.best_strategy,
            "best_strategy_step_time_s": self.best_strategy_step_time_s,
            "strategies": [s.to_dict() for s in self.strategies],
            "closed_form": self.sweep.closed.to_dict(),
            "total_grad_bytes": self.sweep.total_grad_bytes,
            "sweep": self.sweep.to_dict()["rows"],
            "notes": list(self.notes),
            "files": dict(self.files),
            "verify": self.verify.to_dict() if self.verify is not None else None,
            "run": dict(self.run) if self.run is not None else None,
            "stated_ranges": dict(self.stated_ranges) if self.stated_ranges is not None else None,
        }


def recommend(
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    *,
    strategies: Sequence[str] = STRATEGIES,
    points: int = 48,
    list_min_gain_pct: float = 1.0,
    notes: Sequence[str] = (),
    uncertainty: Uncertainty | None = None,
    interval_draws: int = 32,
    stated: StatedInputs | None = None,
    **predict_kw: Any,
) -> TuneResult:
    """Sweep strategies and bucket sizes in the event model; recommend ``bucket_cap_mb`` (and a list).
    ``stated``: the ranges the preset and the device state (``ddpsim.stated``), over which the best round
    cap and the step are given too, in a note and in ``stated_ranges``."""
    grid = default_grid_mb(profile, points)
    if DEFAULT_BUCKET_MB not in grid and grid[0] < DEFAULT_BUCKET_MB < grid[-1]:
        grid = sorted(grid + [float(DEFAULT_BUCKET_MB)])
    ddp = sweep(profile, cost, StrategySpec("torch-ddp", bucket_mb=grid[0]), world_size, grid, **predict_kw)
    best_mb, rec = _round_recommendation(profile, cost, world_size, ddp, grid, **predict_kw)
    default = predict(profile, cost, StrategySpec("torch-ddp"), world_size, **predict_kw)
    band = ddp.best.step_time_s * (1 + NEAR_BEST_PCT / 100)
    near = near_best_range(
        [{"bucket_mb": mb, "step_time_s": r.step_time_s} for mb, r in zip(ddp.bucket_mb, ddp.rows)],
        NEAR_BEST_PCT,
        ddp.best_bucket_mb,
    )
    assert near is not None  # the sweep has rows

    unc = (uncertainty or Uncertainty()).for_cost(cost).at_world_size(cost, world_size)
    interval = default_interval = gain_band = None
    if unc.sources:  # the same draws for both settings: the gain is compared pair by pair
        draws = draw_inputs(profile, cost, unc, interval_draws, seed=0)
        t_rec = step_times_over(draws, StrategySpec("torch-ddp", bucket_mb=best_mb), world_size, **predict_kw)
        t_def = step_times_over(draws, StrategySpec("torch-ddp"), world_size, **predict_kw)
        interval, default_interval = interval_of(t_rec, unc), interval_of(t_def, unc)
        gains = [(d - r) / d * 100.0 for r, d in zip(t_rec, t_def)]
        lo, hi = np.percentile(gains, [10, 90])
        gain_band = (float(lo), float(hi))
    gain_pct = (default.step_time_s - rec.step_time_s) / default.step_time_s * 100.0
    noise_pct = unc.compute_spread_pct
    if default.step_time_s <= band:
        keep, advice = True, f"torch's default is within {NEAR_BEST_PCT:g}% of the best predicted step"
    # The gain is judged by its own spread over the measured errors (the same draws for both settings),
    # not by one step's spread: a training job's time is its steps' sum, and steps measured +-38 % apart
    # (tune --verify, gpt over 1000 Mbit/s, 2026-11-26) did not hide the predicted 15.6 % (measured 18 %)
    elif gain_band is not None and gain_band[0] <= 0:
        keep, advice = (
            True,
            (
                f"the predicted gain ({gain_pct:+.1f}%) is not sure: over the measured errors it ranges "
                f"{gain_band[0]:+.1f}% to {gain_band[1]:+.1f}%"
            ),
        )
    else:
        keep, advice = False, f"predicted {gain_pct:+.1f}% faster than the default"

    notes = list(notes)
    if unc.latency_split_at is not None:  # the split nothing measured (``at_world_size``): what it moves
        notes.append(split_note(profile, cost, world_size, grid, **predict_kw))
    ends = stated_ends(stated, world_size, best_mb, grid, **predict_kw) if stated is not None else None
    if ends is not None:
        notes.append(ends[0])

    from simulator.buckets import ddp_buckets

    single = ddp_buckets(profile, bucket_cap_mb=best_mb).steady  # refine from the best single cap too
    sched = best_schedule(profile, cost, world_size, seeds=(single,), **predict_kw)
    gain = (rec.step_time_s - sched.result.step_time_s) / rec.step_time_s * 100.0
    caps = readable_caps(profile, sched.groups, sched.caps_mb)
    rows: list[StrategyRow] = []
    for s in strategies:
        if s == "torch-ddp":  # the recommendation itself
            rows.append(_strategy_row(s, best_mb, rec))
        elif strategy(s).bucketed:
            sw = sweep(profile, cost, StrategySpec(s, bucket_mb=grid[0]), world_size, grid, **predict_kw)
            rows.append(_strategy_row(s, sw.best_bucket_mb, sw.best))
        else:
            rows.append(_strategy_row(s, None, predict(profile, cost, StrategySpec(s), world_size, **predict_kw)))
    fastest = min(rows, key=lambda r: r.step_time_s)
    return TuneResult(
        model=profile.model,
        world_size=world_size,
        network=cost.label,
        profile_source=profile.source,
        recommended_bucket_mb=best_mb,
        predicted_step_time_s=rec.step_time_s,
        predicted_overhead_s=rec.overhead_s,
        compute_s=rec.compute_s,
        default_step_time_s=default.step_time_s,
        default_overhead_s=default.overhead_s,
        recommended_bucket_mb_list=caps if gain >= list_min_gain_pct else None,
        list_step_time_s=sched.result.step_time_s,
        list_gain_pct=gain,
        near_best_range_mb=near,
        best_strategy=fastest.strategy,
        best_strategy_step_time_s=fastest.step_time_s,
        strategies=tuple(rows),
        sweep=ddp,
        notes=tuple(notes),
        exact_best_bucket_mb=ddp.best_bucket_mb,
        keep_default=keep,
        advice=advice,
        noise_pct=noise_pct,
        interval=interval,
        default_interval=default_interval,
        gain_p10_p90_pct=gain_band,
        stated_ranges=ends[1] if ends is not None else None,
    )


def stated_ends(
    stated: StatedInputs, world_size: int, best_mb: float, grid: Sequence[float], **predict_kw: Any
) -> tuple[str, dict[str, Any]] | None:
    """The best round cap (``_round_recommendation``) with every value a preset or a device states a range for
    at the end that shortens the step at ``best_mb`` alone, and at the end that lengthens it."""

    curves: list[list[float]] = []  # torch DDP's step over the grid at the short end, then at the long

    def best_at(prof: GradProfile, cost: CostModel) -> float:
        sw = sweep(prof, cost, StrategySpec("torch-ddp", bucket_mb=grid[0]), world_size, grid, **predict_kw)
        curves.append([r.step_time_s for r in sw.rows])
        return _round_recommendation(prof, cost, world_size, sw, grid, **predict_kw)[0]

    spec = StrategySpec("torch-ddp", bucket_mb=best_mb)
    ends = stated.ends(spec, world_size, best_at, "the best round cap", **predict_kw)
    if ends is not None:
        ends[1]["short_end_step_s"], ends[1]["long_end_step_s"] = curves
    return ends


def split_note(profile: GradProfile, cost: CostModel, world_size: int, grid: Sequence[float], **predict_kw: Any) -> str:
    """What the recommendation would be at either end of a latency split nothing measured
    (``simulator.interval.split_unknown``, as ``Uncertainty.at_world_size`` records it): one world size fixes a call's zero-byte time, not how much of it
    the ring's ``2(p-1)`` steps take, which at another p can move the best cap a long way."""
    ends = []
    for share in (0.0, 1.0):
        c = replace(cost, latency_share=share)
        sw = sweep(profile, c, StrategySpec("torch-ddp", bucket_mb=grid[0]), world_size, grid, **predict_kw)
        ends.append(_round_recommendation(profile, c, world_size, sw, grid, **predict_kw)[0])
    what = (
        f"{ends[0]:g} MiB either way"
        if ends[0] == ends[1]
        else f"{ends[0]:g} MiB if none of it is, {ends[1]:g} MiB if all"
    )
    return (
        f"the network was measured at p = {cost.ref_world_size} only: how much of a call's zero-byte time is the "
        f"ring's per-step latency is assumed at p = {world_size} (the intervals draw it over 0-100 %); "
        f"the best round cap is {what}; `ddpsim calibrate --world-size 2,4` measures the split"
    )


def rounded_caps(best_mb: float) -> list[float]:
    """The round caps tried for ``best_mb``, in order: 1 significant digit to the nearest, then up; 2 digits
    the same (each once)."""
    return list(dict.fromkeys(f(best_mb, d) for d in (1, 2) for f in (round_sig, ceil_sig)))


def _round_recommendation(
    profile: GradProfile, cost: CostModel, world_size: int, ddp: SweepResult, grid: Sequence[float], **predict_kw: Any
) -> tuple[float, StepResult]:
    """A cap a person would write, inside the near-best band: the fastest power of two there (the larger on
    a tie: fewer calls); else the best rounded to 1, then 2 significant digits, each to the nearest and then up,
    if that stays in the band (cnn over 1000 Mbit/s: 0.8 where the band is 0.62-0.83 MiB, not 0.82; gpt on
    loopback: 12 where the best is the split at 11.308 MiB and 11 splits elsewhere); else the exact best."""
    band = ddp.best.step_time_s * (1 + NEAR_BEST_PCT / 100)
    caps = [mb for mb in ROUND_CAPS_MB if grid[0] <= mb <= grid[-1]]
    # the grid ends at one bucket holding every gradient; any larger cap is that same bucket, so the first
    # power of two above it is a round way to write it (3.84 MiB of gradients: 4, not 3.83704)
    caps += [mb for mb in ROUND_CAPS_MB if mb > grid[-1]][:1]
    if caps:  # one sweep: caps that give the same buckets are simulated once
        rs = sweep(profile, cost, StrategySpec("torch-ddp", bucket_mb=caps[0]), world_size, caps, **predict_kw)
        if rs.best.step_time_s <= band:  # the sweep's best: fastest, the larger cap on a tie
            return rs.best_bucket_mb, rs.best
    for mb in rounded_caps(ddp.best_bucket_mb):
        r = predict(profile, cost, StrategySpec("torch-ddp", bucket_mb=mb), world_size, **predict_kw)
        if r.step_time_s <= band:
            return mb, r
    return ddp.best_bucket_mb, ddp.best


def _strategy_row(name: str, bucket_mb: float | None, r: StepResult) -> StrategyRow:
    return StrategyRow(name, bucket_mb, r.step_time_s, r.overhead_s, r.n_collectives)


def format_tune(res: TuneResult) -> str:
    def ms(s: float) -> str:
        return f"{s * 1e3:.2f} ms"

    iv = f" ({res.interval.describe_ms()})" if res.interval is not None and res.interval.sources else ""
    div = (
        f" ({res.default_interval.describe_ms()})"
        if res.default_interval is not None and res.default_interval.sources
        else ""
    )
    if res.keep_default:
        head = [
            "Recommended: keep the default, DistributedDataParallel(model) with bucket_cap_mb unset",
            f"  why: {res.advice}",
            f"  default predicts step {ms(res.default_step_time_s)}{div}, exposed {ms(res.default_overhead_s)}",
            f"  best round cap: bucket_cap_mb={res.recommended_bucket_mb:g} predicts {ms(res.predicted_step_time_s)} "
            f"({res.gain_vs_default_pct:+.1f}%)",
        ]
    else:
        head = [
            f"Recommended: DistributedDataParallel(model, bucket_cap_mb={res.recommended_bucket_mb:g})",
            f"  Hugging Face Trainer: TrainingArguments(ddp_bucket_cap_mb={res.recommended_bucket_mb:g}); "
            f"Lightning: DDPStrategy(bucket_cap_mb={res.recommended_bucket_mb:g})",
            f"  predicted step {ms(res.predicted_step_time_s)}{iv}, exposed communication "
            f"{ms(res.predicted_overhead_s)} (compute {ms(res.compute_s)})",
            f"  default (bucket_cap_mb unset = 25 MiB, 1 MiB first bucket): step {ms(res.default_step_time_s)}{div}, "
            f"exposed {ms(res.default_overhead_s)} -> {res.advice}",
        ]
    if res.gain_p10_p90_pct is not None:
        g = res.gain_p10_p90_pct
        head.append(f"  gain over the measured errors (p10..p90 of paired draws): {g[0]:+.1f}% to {g[1]:+.1f}%")
    lo, hi = res.near_best_range_mb
    exact = f"exact best of the sweep: {res.exact_best_bucket_mb or res.recommended_bucket_mb:.3g} MiB"
    if f"{lo:.3g}" == f"{hi:.3g}":  # one point of the sweep's grid: its neighbours there are not within the band
        near = f"  of the sweep's sizes only {lo:.3g} MiB is within {NEAR_BEST_PCT:g}% of the best ({exact})"
    else:
        near = f"  any cap from {lo:.3g} to {hi:.3g} MiB is within {NEAR_BEST_PCT:g}% of the best ({exact})"
    lines = [*head, near]
    if res.recommended_bucket_mb_list:
        lines.append(
            f"  non-uniform: bucket_cap_mb_list={list(res.recommended_bucket_mb_list)} (torch >= 2.13) predicts "
            f"{ms(res.list_step_time_s)}, {res.list_gain_pct:.1f}% below the best single cap"
        )
    else:
        lines.append(
            f"  non-uniform bucket_cap_mb_list: best found predicts {ms(res.list_step_time_s)} "
            f"({res.list_gain_pct:+.1f}% vs the best single cap): not worth having"
        )
    cf = res.sweep.closed
    lines.append(
        f"  closed form (o={cf.o_s * 1e6:.1f} us, w={cf.w_bytes_per_s / 1e9:.3g} GB/s, s={cf.total_grad_bytes / MIB:.1f} MiB): "
        f"b* = sqrt(s w o) = {cf.best_bucket_mb:.3g} MiB, T_min = 2 sqrt(s o / w) = {ms(cf.t_min_s)}"
    )
    lines.append(
        f"\n{res.model} on {ranks_phrase(res.world_size)}, network {res.network}, compute from {res.profile_source}"
    )
    if res.sweep.network_provenance:
        lines.append(res.sweep.network_provenance["text"])
    for n in res.notes:
        lines.append(f"note: {n}")
    lines.append(f"\n  {'strategy':<11} {'bucket MiB':>10} {'step ms':>10} {'exposed ms':>11} {'calls':>6}")
    for r in sorted(res.strategies, key=lambda r: r.step_time_s):
        b = f"{r.bucket_mb:.3g}" if r.bucket_mb is not None else "-"
        lines.append(
            f"  {r.strategy:<11} {b:>10} {r.step_time_s * 1e3:>10.3f} {r.overhead_s * 1e3:>11.3f} {r.n_collectives:>6}"
        )
    return "\n".join(lines)


def resolve_network(network: str | CostModel | None, params_path: str | None = None) -> CostModel:
    """``network`` (a preset name or a ``CostModel``; default ``ddpsim.resolve.DEFAULT_NETWORK``) or the
    fitted params file, through the one resolver the CLI uses too."""
    from .resolve import resolve_cost

    params = None
    if params_path is not None:
        from calibration.params import Params

        params = Params.load(params_path)
    return resolve_cost(network, params=params)


def tune(
    model: Any,
    example_inputs: Any,
    loss_fn: Callable[[Any], Any] | None = None,
    *,
    world_size: int = 2,
    network: str | CostModel | None = None,
    params: str | None = None,
    steps: int = 10,
    warmup: int = 3,
    optimizer: str = "sgd",
    **recommend_kw: Any,
) -> TuneResult:
    """Recommend ``bucket_cap_mb`` for ``model`` (an ``nn.Module``) from a training script.

    Profiles a deep copy of ``model`` in this process on ``example_inputs`` (a
    tensor or a tuple passed positionally; ``loss_fn(output)`` defaults to the
    mean of the squared output), then predicts for ``world_size`` ranks on
    ``network`` (a preset name, a ``CostModel``) or the fitted ``params``
    file. The module itself is left untouched.
    """
    from realrun.profile_grads import profile_module

    prof = profile_module(model, example_inputs, loss_fn, steps=steps, warmup=warmup, optimizer=optimizer)
    return recommend(prof, resolve_network(network, params), world_size, **recommend_kw)


def with_files(
    res: TuneResult,
    files: Mapping[str, str],
    verify: Verification | None = None,
    run: Mapping[str, Any] | None = None,
) -> TuneResult:
    return replace(
        res,
        files=dict(files),
        verify=verify if verify is not None else res.verify,
        run=dict(run) if run is not None else res.run,
    )
