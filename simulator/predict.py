"""Predict one step: the public entry of the simulator.

``predict(profile, cost, strategy, world_size)`` runs the event model (one
representative rank by default; several ranks with per-rank compute jitter on
request, over seeded repetitions) and returns a ``StepResult``:
``step_time_s``, ``compute_s`` (the same step with no communication),
``overhead_s = step_time_s - compute_s`` (exposed communication, rank skew
included), the per-collective rows and, optionally, the events.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .engine import BucketRow, Event, RunOutcome, rank_factors, simulate_step
from .network import CostModel
from .profile import GradProfile
from .strategies import PlanArrays, StrategySpec, comm_plan_arrays, profile_arrays

RESULT_SCHEMA = "ddpsim.prediction/1"


@dataclass(frozen=True)
class StepResult:
    model: str
    strategy: StrategySpec
    world_size: int
    step_time_s: float
    step_time_p10_s: float
    step_time_p90_s: float
    compute_s: float
    overhead_s: float
    backward_end_s: float
    comm_busy_s: float
    total_grad_bytes: int
    samples_per_step: int
    tokens_per_sample: int
    rows: Sequence[BucketRow]  # engine.Rows: made into BucketRow when read
    events: tuple[Event, ...]
    repeats: int
    n_sim_events: int
    cost_label: str
    network_provenance: Mapping[str, Any] | None = None  # CostModel.provenance: which p were measured

    @property
    def n_collectives(self) -> int:
        return len(self.rows)

    @property
    def samples_per_s(self) -> float:
        """Global samples per second (all ranks)."""
        return self.samples_per_step * self.world_size * self.strategy.accum_steps / self.step_time_s

    def to_dict(self, events: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema": RESULT_SCHEMA,
            "model": self.model,
            "strategy": self.strategy.to_dict(),
            "world_size": self.world_size,
            "network": self.cost_label,
            "network_provenance": dict(self.network_provenance) if self.network_provenance else None,
            "step_time_s": self.step_time_s,
            "step_time_p10_s": self.step_time_p10_s,
            "step_time_p90_s": self.step_time_p90_s,
            "compute_s": self.compute_s,
            "overhead_s": self.overhead_s,
            "overhead_share": self.overhead_s / self.step_time_s if self.step_time_s > 0 else 0.0,
            "backward_end_s": self.backward_end_s,
            "comm_busy_s": self.comm_busy_s,
            "total_grad_bytes": self.total_grad_bytes,
            "n_collectives": self.n_collectives,
            "samples_per_s": self.samples_per_s,
            "tokens_per_s": self.samples_per_s * self.tokens_per_sample,
            "repeats": self.repeats,
            "buckets": [r.to_dict() for r in self.rows],
        }
        if events:
            d["events"] = [list(e) for e in self.events]
        return d


MAX_WORLD_SIZE = 1 << 24  # ranks a prediction takes: far past any job; the costs' terms stay finite there


def _validate_world(world_size: int, ranks: int) -> None:
    if isinstance(world_size, bool) or not isinstance(world_size, int) or not 1 <= world_size <= MAX_WORLD_SIZE:
        raise ValueError(f"world size must be an integer from 1 to {MAX_WORLD_SIZE}, got {world_size!r}")
    if not isinstance(ranks, int) or ranks < 1 or ranks > world_size:
        raise ValueError(f"simulated ranks must be between 1 and the world size ({world_size}), got {ranks!r}")


def check_args(world_size: int, ranks: int = 1, jitter_sigma: float = 0.0, repeats: int = 1) -> None:
    _validate_world(world_size, ranks)
    if jitter_sigma < 0:
        raise ValueError(f"jitter sigma must be >= 0, got {jitter_sigma}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")


def predict(
    profile: GradProfile,
    cost: CostModel,
    strategy: StrategySpec,
    world_size: int,
    *,
    ranks: int = 1,
    jitter_sigma: float = 0.0,
    repeats: int = 1,
    seed: int = 0,
    record_events: bool = False,
    model: str = "auto",
) -> StepResult:
    """Simulate ``repeats`` seeded steps and summarise them (median and p10/p90).

    ``model``: ``"events"`` forces the SimPy event model, ``"auto"`` lets the engine
    answer analytically where that is exact (``engine.simulate_step``).
    """
    check_args(world_size, ranks, jitter_sigma, repeats)
    plan = comm_plan_arrays(profile, strategy, world_size)
    return predict_plan(
        profile,
        cost,
        strategy,
        world_size,
        plan,
        ranks=ranks,
        jitter_sigma=jitter_sigma,
        repeats=repeats,
        seed=seed,
        record_events=record_events,
        model=model,
    )


def predict_plan(
    profile: GradProfile,
    cost: CostModel,
    strategy: StrategySpec,
    world_size: int,
    plan: PlanArrays,
    *,
    ranks: int = 1,
    jitter_sigma: float = 0.0,
    repeats: int = 1,
    seed: int = 0,
    record_events: bool = False,
    model: str = "auto",
) -> StepResult:
    """``predict`` for a plan already formed (``strategies.comm_plan_arrays``); arguments as ``check_args`` checks them."""
    if jitter_sigma == 0:
        repeats = 1  # deterministic: one run is the answer
    rng = random.Random(seed)
    outcomes: list[RunOutcome] = []
    for k in range(repeats):
        factors = rank_factors(world_size, ranks, jitter_sigma, [rng.random() for _ in range(ranks)])
        outcomes.append(
            simulate_step(
                profile,
                plan,
                cost,
                world_size,
                factors,
                strategy.accum_steps,
                record=record_events and k == 0,
                model=model,
            )
        )
    times = sorted(o.step_time_s for o in outcomes)
    median = statistics.median(times)
    rep = min(outcomes, key=lambda o: abs(o.step_time_s - median))
    if repeats >= 3:
        q = statistics.quantiles(times, n=10, method="inclusive")
        p10, p90 = q[0], q[-1]
    else:
        p10, p90 = times[0], times[-1]
    a = strategy.accum_steps
    pa = profile_arrays(profile)
    compute = a * (profile.forward_s + pa.backward_s) + profile.optimizer_s * plan.optimizer_fraction
    if not record_events:
        events: tuple[Event, ...] = ()
    else:
        events = outcomes[0].events
    return StepResult(
        model=profile.model,
        strategy=strategy,
        world_size=world_size,
        step_time_s=median,
        step_time_p10_s=p10,
        step_time_p90_s=p90,
        compute_s=compute,
        overhead_s=median - compute,
        backward_end_s=rep.backward_end_s,
        comm_busy_s=rep.comm_busy_s,
        total_grad_bytes=pa.total_grad_bytes,
        samples_per_step=profile.samples_per_step,
        tokens_per_sample=profile.tokens_per_sample,
        rows=rep.rows,
        events=events,
        repeats=repeats,
        n_sim_events=sum(o.n_sim_events for o in outcomes),
        cost_label=cost.label,
        network_provenance=cost.provenance(world_size),
    )
