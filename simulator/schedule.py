"""Non-uniform bucket schedules for torch DDP's ``bucket_cap_mb_list``.

Buckets are contiguous runs of gradients in ready order (DDP's rebuild).
Choosing where they close is a shortest-path problem when the channel is
serial: reducing the first ``j`` gradient groups in buckets that close at
``i < j`` finishes at

    f(j) = min_i  max(ready(j), f(i)) + T(bytes(i..j))

(the bucket launches once its last gradient is ready and starts once the
channel is free; ``T`` is the cost model's all-reduce time). ``max(., f) + T``
is monotone in ``f``, so keeping the earliest finish per prefix is optimal:
dynamic programming in O(m^2) over ``m`` candidate closing points (parameters
grouped into at most ``max_atoms`` runs of consecutive gradients).

The dynamic programme ignores what the event model adds (gloo's second
channel, shared bandwidth, a pipelined channel, contention, the backward tail), so its answer is
then refined against the event model itself: each boundary is moved by one
group either way while that lowers the simulated step time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .engine import collective_parts
from .network import CostModel
from .predict import StepResult, predict
from .profile import GradProfile
from .strategies import StrategySpec
from .units import MIB


@dataclass(frozen=True)
class Schedule:
    groups: tuple[tuple[int, ...], ...]  # buckets in ready order, as profile param indices
    caps_mb: tuple[float, ...]  # the bucket_cap_mb_list that makes DDP form exactly these buckets
    result: StepResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "bucket_cap_mb_list": list(self.caps_mb),
            "n_buckets": len(self.groups),
            "bucket_mb": [c for c in self.caps_mb],
            "step_time_s": self.result.step_time_s,
            "overhead_s": self.result.overhead_s,
        }


def _atoms(profile: GradProfile, max_atoms: int) -> list[list[int]]:
    order = list(profile.ready_order)
    if len(order) <= max_atoms:
        return [[i] for i in order]
    total = profile.total_grad_bytes
    target = total / max_atoms
    atoms: list[list[int]] = [[]]
    acc = 0
    for i in order:
        atoms[-1].append(i)
        acc += profile.params[i].nbytes
        if acc >= target:
            atoms.append([])
            acc = 0
    return [a for a in atoms if a]


def caps_for(profile: GradProfile, groups: list[list[int]] | tuple[tuple[int, ...], ...]) -> tuple[float, ...]:
    """Per-bucket caps (MiB) under which DDP's ``>=`` rule closes each bucket exactly at its last gradient.

    The cap sits between the bucket's size without its last tensor and its full size.
    """
    caps = []
    for g in groups:
        sizes = [profile.params[i].nbytes for i in g]
        full, last = sum(sizes), sizes[-1]
        cap_bytes = full - last / 2 if last > 1 else full
        caps.append(cap_bytes / MIB)
    return tuple(caps)


def dp_groups(profile: GradProfile, cost: CostModel, world_size: int, max_atoms: int = 400) -> list[list[int]]:
    atoms = _atoms(profile, max_atoms)
    ready_at = profile.ready_times_s()
    m = len(atoms)
    ready = [max(ready_at[i] for i in a) for a in atoms]
    prefix = [0]
    for a in atoms:
        prefix.append(prefix[-1] + sum(profile.params[i].nbytes for i in a))
    # f(j) for every i < j at once: the cost model over an array of message sizes (exactly the
    # scalar arithmetic), the first minimum kept as the scalar loop's strict ``<`` keeps it.
    pre = np.asarray(prefix, dtype=np.int64)
    f = np.zeros(m + 1)
    arg = [0] * (m + 1)
    for j in range(1, m + 1):
        lat, xfer = collective_parts(cost, "allreduce", pre[j] - pre[:j], world_size)
        t = np.maximum(ready[j - 1], f[:j]) + (lat + xfer)
        k = int(np.argmin(t))
        f[j], arg[j] = t[k], k
    cuts = []
    j = m
    while j > 0:
        cuts.append(j)
        j = arg[j]
    cuts.reverse()
    groups, start = [], 0
    for c in cuts:
        groups.append([i for a in atoms[start:c] for i in a])
        start = c
    return groups


def _evaluate(profile, cost, base: StrategySpec, world_size, groups, predict_kw) -> StepResult:
    spec = replace(base, name="torch-ddp", bucket_mb=None, bucket_cap_mb_list=caps_for(profile, groups))
    return predict(profile, cost, spec, world_size, **predict_kw)


def best_schedule(
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    base: StrategySpec | None = None,
    max_atoms: int = 400,
    refine_passes: int = 3,
    seeds: tuple[tuple[tuple[int, ...], ...], ...] = (),
    **predict_kw: Any,
) -> Schedule:
    """The dynamic programme's schedule (or a better ``seed``, e.g. the best single cap's
    buckets), refined against the event model."""
    base = base or StrategySpec("torch-ddp")
    groups = dp_groups(profile, cost, world_size, max_atoms)
    best = _evaluate(profile, cost, base, world_size, groups, predict_kw)
    for seed in seeds:
        cand = [list(g) for g in seed]
        res = _evaluate(profile, cost, base, world_size, cand, predict_kw)
        if res.step_time_s < best.step_time_s:
            groups, best = cand, res
    for _ in range(refine_passes):
        improved = False
        for b in range(len(groups) - 1):
            for move in (-1, 1):
                left, right = list(groups[b]), list(groups[b + 1])
                if move == -1 and len(left) > 1:
                    left, right = left[:-1], [left[-1]] + right
                elif move == 1 and len(right) > 1:
                    left, right = left + [right[0]], right[1:]
                else:
                    continue
                cand = groups[:b] + [left, right] + groups[b + 2 :]
                res = _evaluate(profile, cost, base, world_size, cand, predict_kw)
                if res.step_time_s < best.step_time_s * (1 - 1e-9):
                    groups, best, improved = cand, res, True
        if not improved:
            break
    return Schedule(tuple(tuple(g) for g in groups), caps_for(profile, groups), best)
