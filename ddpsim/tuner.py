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
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from simulator.network import CostModel, load_network
from simulator.predict import StepResult, predict
from simulator.profile import GradProfile
from simulator.schedule import best_schedule
from simulator.strategies import StrategySpec
from simulator.sweep import SweepResult, default_grid_mb, sweep

TUNE_SCHEMA = "ddpsim.tune/1"
DEFAULT_BUCKET_MB = 25
MIB = 1024 * 1024
TUNE_STRATEGIES = ("torch-ddp", "bucketed", "sharded", "individual", "flat", "naive")


def round_sig(x: float, sig: int = 3) -> float:
    if x <= 0 or not math.isfinite(x):
        return x
    return round(x, sig - 1 - int(math.floor(math.log10(x))))


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
    strategies: tuple[Mapping[str, Any], ...]
    sweep: SweepResult
    notes: tuple[str, ...] = ()
    default_bucket_mb: int = DEFAULT_BUCKET_MB
    files: Mapping[str, str] = field(default_factory=dict)
    verify: Mapping[str, Any] | None = None

    @property
    def gain_vs_default_pct(self) -> float:
        return (self.default_step_time_s - self.predicted_step_time_s) / self.default_step_time_s * 100.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": TUNE_SCHEMA,
            "model": self.model,
            "world_size": self.world_size,
            "network": self.network,
            "profile_source": self.profile_source,
            "recommended_bucket_mb": self.recommended_bucket_mb,
            "predicted_step_time_s": self.predicted_step_time_s,
            "predicted_overhead_s": self.predicted_overhead_s,
            "compute_s": self.compute_s,
            "default_bucket_mb": self.default_bucket_mb,
            "default_step_time_s": self.default_step_time_s,
            "default_overhead_s": self.default_overhead_s,
            "gain_vs_default_pct": self.gain_vs_default_pct,
            "near_best_range_mb": list(self.near_best_range_mb),
            "recommended_bucket_mb_list": list(self.recommended_bucket_mb_list) if self.recommended_bucket_mb_list else None,
            "list_step_time_s": self.list_step_time_s,
            "list_gain_pct": self.list_gain_pct,
            "best_strategy": self.best_strategy,
            "best_strategy_step_time_s": self.best_strategy_step_time_s,
            "strategies": [dict(s) for s in self.strategies],
            "closed_form": self.sweep.closed.to_dict(),
            "total_grad_bytes": self.sweep.total_grad_bytes,
            "sweep": self.sweep.to_dict()["rows"],
            "notes": list(self.notes),
            "files": dict(self.files),
            "verify": dict(self.verify) if self.verify is not None else None,
        }


def recommend(
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    *,
    strategies: Sequence[str] = TUNE_STRATEGIES,
    points: int = 48,
    list_min_gain_pct: float = 1.0,
    notes: Sequence[str] = (),
    **predict_kw: Any,
) -> TuneResult:
    """Sweep strategies and bucket sizes in the event model; recommend ``bucket_cap_mb`` (and a list)."""
    grid = default_grid_mb(profile, points)
    if DEFAULT_BUCKET_MB not in grid and grid[0] < DEFAULT_BUCKET_MB < grid[-1]:
        grid = sorted(grid + [float(DEFAULT_BUCKET_MB)])
    ddp = sweep(profile, cost, StrategySpec("torch-ddp", bucket_mb=grid[0]), world_size, grid, **predict_kw)
    best_mb = round_sig(ddp.best_bucket_mb)
    rec = predict(profile, cost, StrategySpec("torch-ddp", bucket_mb=best_mb), world_size, **predict_kw)
    if rec.step_time_s > ddp.best.step_time_s * (1 + 1e-9):  # rounding moved a bucket boundary: keep the exact size
        best_mb, rec = ddp.best_bucket_mb, ddp.best
    default = predict(profile, cost, StrategySpec("torch-ddp"), world_size, **predict_kw)
    near = [mb for mb, r in zip(ddp.bucket_mb, ddp.rows) if r.step_time_s <= ddp.best.step_time_s * 1.01]

    from simulator.buckets import ddp_buckets

    single = ddp_buckets(profile, bucket_cap_mb=best_mb).steady  # refine from the best single cap too
    sched = best_schedule(profile, cost, world_size, seeds=(single,), **predict_kw)
    gain = (rec.step_time_s - sched.result.step_time_s) / rec.step_time_s * 100.0
    caps = readable_caps(profile, sched.groups, sched.caps_mb)
    rows: list[dict[str, Any]] = []
    for s in strategies:
        if s == "torch-ddp":
            rows.append(_strategy_row(s, best_mb, rec))
        elif s in ("bucketed", "sharded"):
            sw = sweep(profile, cost, StrategySpec(s, bucket_mb=grid[0]), world_size, grid, **predict_kw)
            rows.append(_strategy_row(s, sw.best_bucket_mb, sw.best))
        else:
            rows.append(_strategy_row(s, None, predict(profile, cost, StrategySpec(s), world_size, **predict_kw)))
    fastest = min(rows, key=lambda r: r["step_time_s"])
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
        near_best_range_mb=(min(near), max(near)),
        best_strategy=fastest["strategy"],
        best_strategy_step_time_s=fastest["step_time_s"],
        strategies=tuple(rows),
        sweep=ddp,
        notes=tuple(notes),
    )


def _strategy_row(name: str, bucket_mb: float | None, r: StepResult) -> dict[str, Any]:
    return {"strategy": name, "bucket_mb": bucket_mb, "step_time_s": r.step_time_s, "overhead_s": r.overhead_s,
            "n_collectives": r.n_collectives}


def format_tune(res: TuneResult) -> str:
    ms = lambda s: f"{s * 1e3:.3f} ms"  # noqa: E731
    lines = [
        f"Recommended: DistributedDataParallel(model, bucket_cap_mb={res.recommended_bucket_mb:g})",
        f"  predicted step {ms(res.predicted_step_time_s)}, exposed communication {ms(res.predicted_overhead_s)} "
        f"(compute {ms(res.compute_s)})",
        f"  default (bucket_cap_mb unset = 25 MiB, 1 MiB first bucket): step {ms(res.default_step_time_s)}, "
        f"exposed {ms(res.default_overhead_s)} -> {res.gain_vs_default_pct:+.1f}% faster with the recommendation",
        f"  any cap from {res.near_best_range_mb[0]:.3g} to {res.near_best_range_mb[1]:.3g} MiB is within 1% of the best",
    ]
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
    lines.append(f"\n{res.model} on {res.world_size} ranks, network {res.network}, compute from {res.profile_source}")
    for n in res.notes:
        lines.append(f"note: {n}")
    lines.append(f"\n  {'strategy':<11} {'bucket MiB':>10} {'step ms':>10} {'exposed ms':>11} {'calls':>6}")
    for r in sorted(res.strategies, key=lambda r: r["step_time_s"]):
        b = f"{r['bucket_mb']:.3g}" if r["bucket_mb"] is not None else "-"
        lines.append(f"  {r['strategy']:<11} {b:>10} {r['step_time_s'] * 1e3:>10.3f} {r['overhead_s'] * 1e3:>11.3f} {r['n_collectives']:>6}")
    return "\n".join(lines)


def resolve_network(network: str | CostModel | None, params_path: str | None = None) -> CostModel:
    if isinstance(network, CostModel):
        return network
    if params_path is not None:
        from calibration.params import Params

        return Params.load(params_path).cost_model()
    return CostModel.from_network(load_network(network or "gloo-loopback"))


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


def with_files(res: TuneResult, files: Mapping[str, str], verify: Mapping[str, Any] | None = None) -> TuneResult:
    return replace(res, files=dict(files), verify=verify if verify is not None else res.verify)
