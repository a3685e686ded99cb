"""Sweep bucket sizes: predicted step time and exposed overhead per size, the best one, and the closed form."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .buckets import mb_to_bytes
from .closed_form import ClosedForm, closed_form
from .network import CostModel
from .predict import StepResult, check_args, predict_plan
from .profile import GradProfile
from .strategies import BUCKETED, StrategySpec, comm_plan_arrays, profile_arrays
from .units import MIB

SWEEP_SCHEMA = "ddpsim.sweep/1"
TIE_REL = 1e-9  # steps this close (relative) are one time: the sweep's best is then the larger cap


def log_grid_mb(lo_mb: float, hi_mb: float, n: int) -> list[float]:
    """``n`` log-spaced sizes from ``lo_mb`` to ``hi_mb`` MiB inclusive."""
    if not (lo_mb > 0 and hi_mb >= lo_mb):
        raise ValueError(f"bucket grid needs 0 < lo <= hi, got {lo_mb}..{hi_mb} MiB")
    if n < 1:
        raise ValueError(f"bucket grid needs at least one point, got {n}")
    if n == 1 or hi_mb == lo_mb:
        return [lo_mb]
    r = math.log(hi_mb / lo_mb) / (n - 1)
    return [lo_mb * math.exp(r * k) for k in range(n)]


def default_grid_mb(profile: GradProfile, n: int = 64) -> list[float]:
    """From the smallest parameter (at least 4 KiB) up to one bucket holding every gradient."""
    total = profile.total_grad_bytes
    smallest = min(p.nbytes for p in profile.params if p.requires_grad and p.nbytes > 0)
    lo = max(smallest, 4096) / MIB
    hi = max(total / MIB, lo)
    return log_grid_mb(lo, hi, n)


@dataclass(frozen=True)
class SweepResult:
    strategy: StrategySpec
    world_size: int
    total_grad_bytes: int
    rows: tuple[StepResult, ...]
    bucket_mb: tuple[float, ...]
    best_index: int
    closed: ClosedForm
    cost_label: str
    network_provenance: Mapping[str, Any] | None = None  # CostModel.provenance: which p were measured

    @property
    def best(self) -> StepResult:
        return self.rows[self.best_index]

    @property
    def best_bucket_mb(self) -> float:
        return self.bucket_mb[self.best_index]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SWEEP_SCHEMA,
            "model": self.rows[0].model,
            "strategy": self.strategy.name,
            "world_size": self.world_size,
            "network": self.cost_label,
            "network_provenance": dict(self.network_provenance) if self.network_provenance else None,
            "total_grad_bytes": self.total_grad_bytes,
            "best_bucket_mb": self.best_bucket_mb,
            "best_step_time_s": self.best.step_time_s,
            "best_overhead_s": self.best.overhead_s,
            "compute_s": self.best.compute_s,
            "closed_form": self.closed.to_dict(),
            "rows": [
                {
                    "bucket_mb": mb,
                    "n_buckets": r.n_collectives,
                    "step_time_s": r.step_time_s,
                    "step_time_p10_s": r.step_time_p10_s,
                    "step_time_p90_s": r.step_time_p90_s,
                    "overhead_s": r.overhead_s,
                }
                for mb, r in zip(self.bucket_mb, self.rows)
            ],
        }


def sweep(
    profile: GradProfile,
    cost: CostModel,
    strategy: StrategySpec,
    world_size: int,
    bucket_mb: Sequence[float] | None = None,
    **predict_kw: Any,
) -> SweepResult:
    """Predict every bucket size of the grid (default: ``default_grid_mb``) for a bucketed strategy."""
    if not strategy.strategy.bucketed:
        raise ValueError(f"a bucket sweep needs a bucketed strategy ({', '.join(BUCKETED)}), not {strategy.name!r}")
    grid = list(bucket_mb) if bucket_mb is not None else default_grid_mb(profile)
    check_args(world_size, **{k: v for k, v in predict_kw.items() if k in ("ranks", "jitter_sigma", "repeats")})
    # Many caps give the same buckets (every cap below the smallest tensor, every cap between two
    # closing points): each distinct assignment is simulated once and its result shared.
    pa = profile_arrays(profile)
    smallest = int(pa.nbytes[pa.pos >= 0].min())
    singletons = not strategy.first_step  # every bucketed strategy (checked above)
    done: dict[Any, StepResult] = {}
    rows_l: list[StepResult] = []
    for mb in grid:
        spec = replace(strategy, bucket_mb=mb, bucket_cap_mb_list=None)
        hint = ("every tensor its own bucket",) if singletons and mb_to_bytes(mb) <= smallest else None
        res = done.get(hint) if hint else None
        if res is None:
            plan = comm_plan_arrays(profile, spec, world_size)
            res = done.get(plan.key)
            if res is None:
                res = done[plan.key] = predict_plan(profile, cost, spec, world_size, plan, **predict_kw)
            if hint:
                done[hint] = res
        rows_l.append(res if res.strategy == spec else replace(res, strategy=spec))
    rows = tuple(rows_l)
    # fastest, the larger cap on a tie (fewer calls); steps within TIE_REL of the fastest tie: a flat curve's
    # steps differ in their last digits by the order sums were taken in, which must not pick the cap
    fastest = min(r.step_time_s for r in rows)
    best = max((k for k in range(len(rows)) if rows[k].step_time_s <= fastest * (1 + TIE_REL)), key=lambda k: grid[k])
    # closed form with the all-reduce (o, w) at this world size, for the algorithm chosen at the best size
    o_s, w = cost.linear_at(world_size, msg_bytes=grid[best] * MIB)
    return SweepResult(
        strategy=strategy,
        world_size=world_size,
        total_grad_bytes=pa.total_grad_bytes,
        rows=rows,
        bucket_mb=tuple(grid),
        best_index=best,
        closed=closed_form(pa.total_grad_bytes, o_s, w),
        cost_label=cost.label,
        network_provenance=cost.provenance(world_size),
    )
