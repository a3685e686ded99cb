"""Data-parallel strategies and the communication plan each one produces.

A ``StrategySpec`` says what the user runs; ``comm_plan`` turns it and a
gradient profile into ``CommPlan``: which collectives carry which gradients,
and the rule that launches them. The engine executes the plan; it knows no
strategy names.

Launch rules, each as the real implementation behaves:

* ``after_backward``: collectives run one at a time after backward ends, each
  blocking until done (``naive``: one all-reduce per parameter in
  ``module.parameters()`` order; ``flat``: one all-reduce of everything).
* ``on_ready``: a collective starts as soon as its last gradient is ready
  (kept for what-if studies; no built-in strategy uses it).
* ``in_order``: torch DDP's reducer launches bucket ``i`` only once it is ready
  *and* buckets ``0..i-1`` have been launched (``Reducer::mark_bucket_ready``
  walks ``next_bucket_`` forward; reducer.cpp). The hand-written hook-driven
  variants of ``realrun/ddp.py`` do the same over reverse registration order
  (``individual``: one call per parameter from post-accumulate-grad hooks;
  ``bucketed``: one per bucket), since every rank must issue the same sequence.

``sharded`` (ZeRO-1): gradients are averaged as in torch DDP (bucketed,
in order), each rank steps the optimizer on its ``1/p`` shard, then every
parameter is broadcast from its owner, one blocking broadcast per parameter.
"""

from __future__ import annotations

import heapq
import math
import sys
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .buckets import (
    bucket_starts_array,
    ddp_bucket_limits,
    ddp_buckets,
    mb_to_bytes,
    simple_buckets,
)
from .jsonio import from_fields, to_fields
from .profile import GradProfile

LAUNCH_RULES = ("after_backward", "on_ready", "in_order")


@dataclass(frozen=True)
class Strategy:
    """One entry of the strategy registry: what every layer (simulator, realrun, calibration, CLI) knows
    about a strategy by name. ``plan`` is its launch rule made concrete: the ``CommPlan`` it produces.

    ``bucketed``: takes a bucket size (``bucket_mb``); ``needs_bucket_size``: has no default size;
    ``ddp_reducer``: runs on torch DDP's reducer, so it takes ``bucket_cap_mb_list``, its first bucket
    is capped at 1 MiB when ``bucket_mb`` is unset, and its first iteration is one bucket (the
    rebuild follows); ``launch``: the rule of ``CommPlan.launch`` (module docstring).
    """

    name: str
    bucketed: bool
    needs_bucket_size: bool
    ddp_reducer: bool
    launch: str
    plan: Callable[[GradProfile, StrategySpec, int], CommPlan]
    summary: str

    def __post_init__(self) -> None:
        _require(self.launch in LAUNCH_RULES, f"launch rule {self.launch!r} is not one of {LAUNCH_RULES}")
        _require(self.bucketed or not (self.needs_bucket_size or self.ddp_reducer), "only bucketed take sizes")

    @property
    def accepts_cap_list(self) -> bool:
        """Takes torch's per-bucket ``bucket_cap_mb_list`` (torch >= 2.13, C++ reducer only)."""
        return self.ddp_reducer


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


@dataclass(frozen=True)
class StrategySpec:
    """What runs: the strategy and its knobs.

    ``bucket_mb`` is MiB as torch's ``bucket_cap_mb``; for ``torch-ddp`` and
    ``sharded``, ``None`` means "left unset" (25 MiB with torch's 1 MiB first
    bucket). ``accum_steps`` > 1 models ``no_sync()``: that many micro-batches
    per optimizer step, communicating only on the last. ``first_step`` models
    DDP's first iteration (one bucket holding everything) instead of the steady
    state after the bucket rebuild.
    """

    name: str = "torch-ddp"
    bucket_mb: float | None = None
    bucket_cap_mb_list: tuple[float, ...] | None = None
    find_unused_parameters: bool = False
    static_graph: bool = False
    gradient_as_bucket_view: bool = False
    accum_steps: int = 1
    first_step: bool = False

    def __post_init__(self) -> None:
        entry = strategy(self.name)  # an unknown name is a ValueError naming the allowed ones
        if self.bucket_mb is not None:
            _require(
                isinstance(self.bucket_mb, (int, float)) and math.isfinite(self.bucket_mb) and self.bucket_mb > 0,
                f"bucket size must be a finite number > 0 MiB, got {self.bucket_mb}",
            )
        if self.bucket_cap_mb_list is not None:
            object.__setattr__(self, "bucket_cap_mb_list", tuple(float(x) for x in self.bucket_cap_mb_list))
            _require(len(self.bucket_cap_mb_list) > 0, "bucket_cap_mb_list must not be empty")
            _require(
                all(math.isfinite(x) and x > 0 for x in self.bucket_cap_mb_list),
                "bucket_cap_mb_list entries must be finite numbers > 0 MiB",
            )
            _require(
                entry.accepts_cap_list, f"bucket_cap_mb_list applies to {' and '.join(CAP_LIST)} only, not {self.name}"
            )
        _require(
            isinstance(self.accum_steps, int) and self.accum_steps >= 1,
            f"accum_steps must be an integer >= 1, got {self.accum_steps}",
        )
        if entry.needs_bucket_size:
            _require(self.bucket_mb is not None, f"strategy {self.name!r} needs a bucket size (bucket_mb)")

    @property
    def strategy(self) -> Strategy:
        """This spec's registry entry."""
        return REGISTRY[self.name]

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StrategySpec:
        return from_fields(cls, d, what="strategy")


@dataclass(frozen=True)
class Collective:
    """One collective call: the op, its payload per rank, the parameters whose gradients it waits for."""

    name: str
    op: str  # "allreduce" | "broadcast"
    msg_bytes: int
    params: tuple[int, ...]
    src: int = 0  # a broadcast's source rank (the sharded optimizer's owner of the parameter)


@dataclass(frozen=True)
class CommPlan:
    launch: str  # "after_backward" | "on_ready" | "in_order"
    collectives: tuple[Collective, ...]
    copy_in: bool  # gradients are copied into a bucket buffer as they become ready
    copy_out_bytes: int  # bytes copied back into .grad after communication
    optimizer_fraction: float = 1.0
    post_optimizer: tuple[Collective, ...] = ()
    python_hooks: bool = False  # a Python hook runs per gradient (hand-written wrappers), not C++
    # copy-out bucket by bucket, each once its all-reduce is done, in index order (torch's
    # ``finalize_backward`` waits bucket i then copies it; BucketedDDP does the same), so only
    # what completes after backward's end is exposed; else all of it after the last collective
    copy_out_per_bucket: bool = False
    # torch DDP's reducer: after the last bucket's copy-out, ``backward()`` returns only after work per
    # parameter (``CostModel.finalize_s_per_param``); hand-written wrappers have their own, in their hooks
    reducer_finalize: bool = False
    # bytes divided in place by the world size in one pass after the last collective, before any copy-out
    # (``CostModel.scale_bytes_per_s``): realrun's flat, individual and naive wrappers average that way;
    # torch's reducer and BucketedDDP write ``grad / world_size`` into the bucket as they copy it in
    scale_bytes: int = 0


def _bucket_colls(profile: GradProfile, buckets: tuple[tuple[int, ...], ...]) -> tuple[Collective, ...]:
    return tuple(
        Collective(f"bucket{k}", "allreduce", sum(profile.params[i].nbytes for i in b), tuple(b))
        for k, b in enumerate(buckets)
    )


def _naive_plan(profile: GradProfile, spec: StrategySpec, world_size: int) -> CommPlan:
    """One blocking all-reduce per parameter in ``module.parameters()`` order, after backward."""
    ps = profile.params
    colls = tuple(Collective(p.name, "allreduce", p.nbytes, (i,)) for i, p in enumerate(ps) if p.requires_grad)
    return CommPlan("after_backward", colls, copy_in=False, copy_out_bytes=0, scale_bytes=profile.total_grad_bytes)


def _flat_plan(profile: GradProfile, spec: StrategySpec, world_size: int) -> CommPlan:
    """One all-reduce of everything after backward; flatten before, divide and unflatten after (the two
    copies counted after it)."""
    total = profile.total_grad_bytes
    trainable = tuple(i for i, p in enumerate(profile.params) if p.requires_grad)
    colls = (Collective("flat", "allreduce", total, trainable),)
    return CommPlan("after_backward", colls, False, 2 * total, scale_bytes=total)


# The hand-written hook-driven variants launch in a fixed index order, reverse registration
# (realrun/ddp.py: every rank must issue the same sequence, as torch's reducer walks
# ``next_bucket_``): a call that is ready early waits for every lower-index one to be ready.
def _individual_plan(profile: GradProfile, spec: StrategySpec, world_size: int) -> CommPlan:
    ps = profile.params
    trainable = [i for i, p in enumerate(ps) if p.requires_grad]
    colls = tuple(Collective(ps[i].name, "allreduce", ps[i].nbytes, (i,)) for i in reversed(trainable))
    return CommPlan(
        "in_order", colls, copy_in=False, copy_out_bytes=0, python_hooks=True, scale_bytes=profile.total_grad_bytes
    )


def _bucketed_plan(profile: GradProfile, spec: StrategySpec, world_size: int) -> CommPlan:
    assert spec.bucket_mb is not None  # StrategySpec: bucketed needs a size
    colls = _bucket_colls(profile, simple_buckets(profile, spec.bucket_mb))
    return CommPlan(
        "in_order",
        colls,
        copy_in=True,
        copy_out_bytes=profile.total_grad_bytes,
        python_hooks=True,
        copy_out_per_bucket=True,
    )


def _ddp_plan(profile: GradProfile, spec: StrategySpec, world_size: int) -> CommPlan:
    """torch DDP's reducer: its buckets (``ddp_buckets``), launched in index order."""
    b = ddp_buckets(
        profile,
        bucket_cap_mb=spec.bucket_mb,
        bucket_cap_mb_list=spec.bucket_cap_mb_list,
        find_unused_parameters=spec.find_unused_parameters,
        static_graph=spec.static_graph,
    )
    buckets = b.first_step if spec.first_step else b.steady
    copy_out = 0 if spec.gradient_as_bucket_view else profile.total_grad_bytes
    return CommPlan(
        "in_order",
        _bucket_colls(profile, buckets),
        copy_in=True,
        copy_out_bytes=copy_out,
        copy_out_per_bucket=True,
        reducer_finalize=True,
    )


def shard_owners(nbytes: Sequence[int], world_size: int, loads: list[int] | None = None) -> list[int]:
    """The rank owning each parameter of sizes ``nbytes`` under ``realrun.sharded.ShardedOptimizer``'s rule:
    largest first (ties in order), each to the rank with the fewest bytes so far (ties: the lowest rank).
    ``loads``: bytes per rank before these (a later parameter group continues from them), updated in place."""
    if world_size < 1:
        raise ValueError(f"world size must be >= 1, got {world_size}")
    if loads is None:
        # from all-empty ranks only the first len(nbytes) can be chosen: before each choice fewer than len(nbytes)
        # ranks were taken, so an untaken rank below len(nbytes) is as light as any higher one and wins the tie.
        # Heaping the rest would cost time and memory in p (a world size of millions)
        world_size = max(1, min(world_size, len(nbytes)))
    load = loads if loads is not None else [0] * world_size
    lightest = [(load[k], k) for k in range(world_size)]  # a heap: the lightest rank, the lowest on ties
    heapq.heapify(lightest)
    owners = [0] * len(nbytes)
    for i in sorted(range(len(nbytes)), key=lambda i: (-nbytes[i], i)):
        _, r = heapq.heappop(lightest)
        owners[i] = r
        load[r] += nbytes[i]
        heapq.heappush(lightest, (load[r], r))
    return owners


def _sharded_plan(profile: GradProfile, spec: StrategySpec, world_size: int) -> CommPlan:
    """DDP's reducer, the optimizer on a ``1/p`` shard, then one blocking broadcast per parameter, from its owner."""
    ps = [(i, p) for i, p in enumerate(profile.params) if p.requires_grad]
    owners = shard_owners([p.nbytes for _, p in ps], world_size)
    post = tuple(Collective(f"bcast:{p.name}", "broadcast", p.nbytes, (i,), src) for (i, p), src in zip(ps, owners))
    return replace(_ddp_plan(profile, spec, world_size), optimizer_fraction=1.0 / world_size, post_optimizer=post)


# ---- the registry: a new strategy is one entry (and its plan function) ----------------------
REGISTRY: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(
            "naive",
            bucketed=False,
            needs_bucket_size=False,
            ddp_reducer=False,
            launch="after_backward",
            plan=_naive_plan,
            summary="blocking per-parameter all-reduce after backward",
        ),
        Strategy(
            "flat",
            bucketed=False,
            needs_bucket_size=False,
            ddp_reducer=False,
            launch="after_backward",
            plan=_flat_plan,
            summary="one all-reduce of all gradients, flattened",
        ),
        Strategy(
            "individual",
            bucketed=False,
            needs_bucket_size=False,
            ddp_reducer=False,
            launch="in_order",
            plan=_individual_plan,
            summary="async per-parameter all-reduce from gradient hooks",
        ),
        Strategy(
            "bucketed",
            bucketed=True,
            needs_bucket_size=True,
            ddp_reducer=False,
            launch="in_order",
            plan=_bucketed_plan,
            summary="hand-written buckets, each launched once ready",
        ),
        Strategy(
            "torch-ddp",
            bucketed=True,
            needs_bucket_size=False,
            ddp_reducer=True,
            launch="in_order",
            plan=_ddp_plan,
            summary="torch DistributedDataParallel (bucket_cap_mb, bucket_cap_mb_list)",
        ),
        Strategy(
            "sharded",
            bucketed=True,
            needs_bucket_size=False,
            ddp_reducer=True,
            launch="in_order",
            plan=_sharded_plan,
            summary="ZeRO-1: torch DDP, the optimizer on a 1/p shard, then broadcasts",
        ),
    )
}
STRATEGIES = tuple(REGISTRY)  # every strategy, in the registry's order
BUCKETED = tuple(n for n, s in REGISTRY.items() if s.bucketed)  # take a bucket size
CAP_LIST = tuple(n for n, s in REGISTRY.items() if s.accepts_cap_list)  # take bucket_cap_mb_list (DDP's reducer)


def strategy(name: str) -> Strategy:
    """The registry entry of ``name``; ``ValueError`` naming the allowed ones otherwise."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown strategy {name!r}; allowed: {', '.join(REGISTRY)}") from None


def spec_for(
    name: str, bucket_mb: float | None = None, bucket_cap_mb_list: Sequence[float] | None = None, **knobs: Any
) -> StrategySpec:
    """A ``StrategySpec`` for a run over a grid: a strategy without buckets drops the bucket knobs (a
    grid of sizes applies to the bucketed strategies only); the rest is validated by ``StrategySpec``."""
    bucketed = strategy(name).bucketed
    return StrategySpec(
        name,
        bucket_mb=bucket_mb if bucketed else None,
        bucket_cap_mb_list=tuple(bucket_cap_mb_list) if bucket_cap_mb_list and bucketed else None,
        **knobs,
    )


def comm_plan(profile: GradProfile, spec: StrategySpec, world_size: int) -> CommPlan:
    """The collectives of ``spec`` on ``profile`` and the rule that launches them (its registry entry's)."""
    return spec.strategy.plan(profile, spec, world_size)


# ---- the plan as arrays: what the engine consumes -------------------------------------------
# A plan of 50,000 collectives as 50,000 ``Collective`` objects costs more to build than to
# simulate, so the engine reads the same plan as numpy arrays, built straight from bucket
# boundaries where DDP's buckets are contiguous runs of one dtype (the common case).


@dataclass(frozen=True, eq=False)
class ProfileArrays:
    """A profile's per-parameter numbers as arrays (built once per profile and cached)."""

    order: np.ndarray  # ready order: parameter indices
    pos: np.ndarray  # position in the ready order, by parameter index (-1: frozen)
    nbytes: np.ndarray  # by parameter index
    bwd_s: np.ndarray  # by parameter index
    one_dtype: bool  # every trainable parameter has the same dtype
    total_grad_bytes: int  # GradProfile.total_grad_bytes
    backward_s: float  # GradProfile.backward_s
    # the sharded optimizer's owner of each trainable parameter (registration order), by world size: a sweep
    # forms a plan per cap, and the owners depend on neither
    owners_by_p: dict[int, np.ndarray] = field(default_factory=dict)

    def trainable_owners(self, world_size: int) -> np.ndarray:
        """``shard_owners`` of the trainable parameters at ``world_size``, computed once per profile and p."""
        got = self.owners_by_p.get(world_size)
        if got is None:
            sizes = self.nbytes[np.flatnonzero(self.pos >= 0)].tolist()
            got = self.owners_by_p[world_size] = np.asarray(shard_owners(sizes, world_size), dtype=np.int64)
        return got


_PROFILE_CACHE: dict[int, tuple[Any, ProfileArrays]] = {}


def profile_arrays(profile: GradProfile) -> ProfileArrays:
    key = id(profile)
    hit = _PROFILE_CACHE.get(key)
    if hit is not None and hit[0]() is profile:
        return hit[1]
    ps = profile.params
    order = np.asarray(profile.ready_order, dtype=np.int64)
    pos = np.full(len(ps), -1, dtype=np.int64)
    pos[order] = np.arange(len(order), dtype=np.int64)
    dtypes = {p.dtype for p in ps if p.requires_grad}
    pa = ProfileArrays(
        order=order,
        pos=pos,
        nbytes=np.fromiter((p.nbytes for p in ps), dtype=np.int64, count=len(ps)),
        bwd_s=np.fromiter((p.bwd_s for p in ps), dtype=np.float64, count=len(ps)),
        one_dtype=len(dtypes) == 1,
        total_grad_bytes=profile.total_grad_bytes,
        backward_s=profile.backward_s,
    )
    if len(_PROFILE_CACHE) > 64:
        _PROFILE_CACHE.clear()
    _PROFILE_CACHE[key] = (weakref.ref(profile), pa)
    return pa


@dataclass(frozen=True, eq=False)
class PlanArrays:
    """A ``CommPlan`` as arrays. Main collectives are all-reduces, post-optimizer ones broadcasts.

    ``last_pos[c]``: ready-order position of the last gradient collective ``c`` waits for.
    ``key``: identifies the assignment (equal keys, equal plans) so a sweep simulates it once.
    """

    launch: str
    msg_bytes: np.ndarray
    last_pos: np.ndarray
    n_params: np.ndarray
    names: Callable[[int], str]
    copy_in: bool
    copy_out_bytes: int
    optimizer_fraction: float = 1.0
    post_msg_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    post_names: Callable[[int], str] = str
    python_hooks: bool = False
    key: Hashable = None
    post_src: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # each broadcast's source
    copy_out_per_bucket: bool = False  # as ``CommPlan.copy_out_per_bucket``
    reducer_finalize: bool = False  # as ``CommPlan.reducer_finalize``
    scale_bytes: int = 0  # as ``CommPlan.scale_bytes``

    @property
    def n_collectives(self) -> int:
        return len(self.msg_bytes)

    @property
    def n_post(self) -> int:
        return len(self.post_msg_bytes)

    def finalize_s(self, s_per_param: float) -> float:
        """The reducer's work after the last copy-out: ``s_per_param`` per parameter it reduces (0 for plans
        without torch's reducer)."""
        return s_per_param * float(self.n_params.sum()) if self.reducer_finalize and s_per_param else 0.0

    @property
    def copies_bucket_by_bucket(self) -> bool:
        """Copy-out happens per bucket as each completes (``copy_out_per_bucket`` with something to copy)."""
        return self.copy_out_per_bucket and self.copy_out_bytes > 0 and self.n_collectives > 0


def _bucket_name(k: int) -> str:
    return f"bucket{k}"


def plan_arrays(profile: GradProfile, plan: CommPlan) -> PlanArrays:
    """Any ``CommPlan`` as arrays."""
    pa = profile_arrays(profile)
    colls, post = plan.collectives, plan.post_optimizer
    if any(c.op != "allreduce" for c in colls) or any(c.op != "broadcast" for c in post):
        raise ValueError("the engine runs all-reduces in a plan's collectives and broadcasts after the optimizer")
    pos = pa.pos
    names = tuple(c.name for c in colls)
    post_names = tuple(c.name for c in post)
    return PlanArrays(
        launch=plan.launch,
        msg_bytes=np.fromiter((c.msg_bytes for c in colls), dtype=np.int64, count=len(colls)),
        last_pos=np.fromiter((int(pos[list(c.params)].max()) for c in colls), dtype=np.int64, count=len(colls)),
        n_params=np.fromiter((len(c.params) for c in colls), dtype=np.int64, count=len(colls)),
        names=names.__getitem__,
        copy_in=plan.copy_in,
        copy_out_bytes=plan.copy_out_bytes,
        optimizer_fraction=plan.optimizer_fraction,
        post_msg_bytes=np.fromiter((c.msg_bytes for c in post), dtype=np.int64, count=len(post)),
        post_names=post_names.__getitem__,
        python_hooks=plan.python_hooks,
        post_src=np.fromiter((c.src for c in post), dtype=np.int64, count=len(post)),
        copy_out_per_bucket=plan.copy_out_per_bucket,
        reducer_finalize=plan.reducer_finalize,
        scale_bytes=plan.scale_bytes,
    )


def _runs(pa: ProfileArrays, members: np.ndarray, st: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(msg_bytes, last_pos, n_params)`` of buckets that are runs ``members[st[k]:st[k+1]]`` (``st``: the starts)."""
    msg = np.add.reduceat(pa.nbytes[members], st) if len(st) else np.zeros(0, dtype=np.int64)
    last = np.maximum.reduceat(pa.pos[members], st) if len(st) else np.zeros(0, dtype=np.int64)
    n = np.diff(np.append(st, len(members)))
    return msg, last, n


def comm_plan_arrays(profile: GradProfile, spec: StrategySpec, world_size: int) -> PlanArrays:
    """``plan_arrays(profile, comm_plan(profile, spec, world_size))``, in O(n) numpy for the bucketed
    strategies of one dtype (buckets formed by ``buckets.bucket_starts_array``), with ``key`` set."""
    pa = profile_arrays(profile)
    if spec.strategy.plan not in (_bucketed_plan, _ddp_plan, _sharded_plan) or not pa.one_dtype:
        plan = comm_plan(profile, spec, world_size)
        return replace(plan_arrays(profile, plan), key=("plan", spec.name, tuple(c.params for c in plan.collectives)))
    ps = profile.params
    total = pa.total_grad_bytes
    # bucketed: reverse registration order, launched in index order (buckets.reverse_order_buckets)
    if spec.strategy.plan is _bucketed_plan:
        members = np.flatnonzero(pa.pos >= 0)[::-1]
        assert spec.bucket_mb is not None  # StrategySpec: bucketed needs a size
        starts = bucket_starts_array(pa.nbytes[members], [mb_to_bytes(spec.bucket_mb)])
        msg, last, n = _runs(pa, members, starts)
        return PlanArrays(
            "in_order",
            msg,
            last,
            n,
            _bucket_name,
            True,
            total,
            python_hooks=True,
            key=("bucketed", starts.tobytes()),
            copy_out_per_bucket=True,
        )
    cap, first, per = ddp_bucket_limits(spec.bucket_mb, spec.bucket_cap_mb_list)
    rebuild = spec.static_graph or not spec.find_unused_parameters
    if rebuild and not spec.first_step:  # the rebuild: runs in ready order
        members = pa.order
        starts = bucket_starts_array(pa.nbytes[members], list(per) if per else [first, cap])
        msg, last, n = _runs(pa, members, starts)
        key: Hashable = ("steady", starts.tobytes())
    else:  # the assignment at construction, over registration order, then reversed
        reg = np.flatnonzero(pa.pos >= 0)
        if per:
            lims: list[int] = list(per)
        elif rebuild:
            lims = [sys.maxsize]
        elif first < cap:
            lims = [first, cap]
        else:
            lims = [cap]
        starts = bucket_starts_array(pa.nbytes[reg], lims)
        msg, last, n = _runs(pa, reg, starts)
        msg, last, n = msg[::-1].copy(), last[::-1].copy(), n[::-1].copy()
        key = ("init", starts.tobytes())
    copy_out = 0 if spec.gradient_as_bucket_view else total
    ddp = PlanArrays(
        "in_order", msg, last, n, _bucket_name, True, copy_out, key=key, copy_out_per_bucket=True, reducer_finalize=True
    )
    if spec.name == "torch-ddp":
        return ddp
    trainable = np.flatnonzero(pa.pos >= 0)
    names = tuple(f"bcast:{ps[i].name}" for i in trainable.tolist())
    return replace(
        ddp,
        optimizer_fraction=1.0 / world_size,
        post_msg_bytes=pa.nbytes[trainable],
        post_names=names.__getitem__,
        post_src=pa.trainable_owners(world_size),
    )
