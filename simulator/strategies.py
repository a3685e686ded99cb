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
  (``individual``: one per parameter from post-accumulate-grad hooks;
  ``bucketed``: one per bucket).
* ``in_order``: torch DDP's reducer launches bucket ``i`` only once it is ready
  *and* buckets ``0..i-1`` have been launched (``Reducer::mark_bucket_ready``
  walks ``next_bucket_`` forward; reducer.cpp).

``sharded`` (ZeRO-1): gradients are averaged as in torch DDP (bucketed,
in order), each rank steps the optimizer on its ``1/p`` shard, then every
parameter is broadcast from its owner, one blocking broadcast per parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .buckets import ddp_buckets, simple_buckets
from .profile import GradProfile

STRATEGIES = ("naive", "flat", "individual", "bucketed", "torch-ddp", "sharded")
BUCKETED = ("bucketed", "torch-ddp", "sharded")


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
        _require(self.name in STRATEGIES, f"unknown strategy {self.name!r}; allowed: {', '.join(STRATEGIES)}")
        if self.bucket_mb is not None:
            _require(
                isinstance(self.bucket_mb, (int, float)) and self.bucket_mb > 0,
                f"bucket size must be > 0 MiB, got {self.bucket_mb}",
            )
        if self.bucket_cap_mb_list is not None:
            object.__setattr__(self, "bucket_cap_mb_list", tuple(float(x) for x in self.bucket_cap_mb_list))
            _require(len(self.bucket_cap_mb_list) > 0, "bucket_cap_mb_list must not be empty")
            _require(all(x > 0 for x in self.bucket_cap_mb_list), "bucket_cap_mb_list entries must be > 0 MiB")
            _require(self.name in ("torch-ddp", "sharded"), "bucket_cap_mb_list applies to torch-ddp and sharded only")
        _require(
            isinstance(self.accum_steps, int) and self.accum_steps >= 1,
            f"accum_steps must be an integer >= 1, got {self.accum_steps}",
        )
        if self.name == "bucketed":
            _require(self.bucket_mb is not None, "strategy 'bucketed' needs a bucket size (bucket_mb)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "bucket_mb": self.bucket_mb,
            "bucket_cap_mb_list": list(self.bucket_cap_mb_list) if self.bucket_cap_mb_list else None,
            "find_unused_parameters": self.find_unused_parameters,
            "static_graph": self.static_graph,
            "gradient_as_bucket_view": self.gradient_as_bucket_view,
            "accum_steps": self.accum_steps,
            "first_step": self.first_step,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StrategySpec":
        lst = d.get("bucket_cap_mb_list")
        return cls(
            name=d.get("name", "torch-ddp"),
            bucket_mb=d.get("bucket_mb"),
            bucket_cap_mb_list=tuple(lst) if lst else None,
            find_unused_parameters=bool(d.get("find_unused_parameters", False)),
            static_graph=bool(d.get("static_graph", False)),
            gradient_as_bucket_view=bool(d.get("gradient_as_bucket_view", False)),
            accum_steps=int(d.get("accum_steps", 1)),
            first_step=bool(d.get("first_step", False)),
        )


@dataclass(frozen=True)
class Collective:
    """One collective call: the op, its payload per rank, the parameters whose gradients it waits for."""

    name: str
    op: str  # "allreduce" | "broadcast"
    msg_bytes: int
    params: tuple[int, ...]


@dataclass(frozen=True)
class CommPlan:
    launch: str  # "after_backward" | "on_ready" | "in_order"
    collectives: tuple[Collective, ...]
    copy_in: bool  # gradients are copied into a bucket buffer as they become ready
    copy_out_bytes: int  # bytes copied back into .grad after communication
    optimizer_fraction: float = 1.0
    post_optimizer: tuple[Collective, ...] = ()
    python_hooks: bool = False  # a Python hook runs per gradient (hand-written wrappers), not C++


def _bucket_colls(profile: GradProfile, buckets: tuple[tuple[int, ...], ...]) -> tuple[Collective, ...]:
    return tuple(
        Collective(f"bucket{k}", "allreduce", sum(profile.params[i].nbytes for i in b), tuple(b))
        for k, b in enumerate(buckets)
    )


def comm_plan(profile: GradProfile, spec: StrategySpec, world_size: int) -> CommPlan:
    ps = profile.params
    trainable = [i for i, p in enumerate(ps) if p.requires_grad]
    total = profile.total_grad_bytes
    if spec.name == "naive":
        colls = tuple(Collective(ps[i].name, "allreduce", ps[i].nbytes, (i,)) for i in trainable)
        return CommPlan("after_backward", colls, copy_in=False, copy_out_bytes=0)
    if spec.name == "flat":
        # flatten before, unflatten after: both copies counted after backward
        return CommPlan(
            "after_backward", (Collective("flat", "allreduce", total, tuple(trainable)),), copy_in=False, copy_out_bytes=2 * total
        )
    if spec.name == "individual":
        colls = tuple(Collective(ps[i].name, "allreduce", ps[i].nbytes, (i,)) for i in profile.ready_order)
        return CommPlan("on_ready", colls, copy_in=False, copy_out_bytes=0, python_hooks=True)
    if spec.name == "bucketed":
        colls = _bucket_colls(profile, simple_buckets(profile, spec.bucket_mb))
        return CommPlan("on_ready", colls, copy_in=True, copy_out_bytes=total, python_hooks=True)
    # torch-ddp and sharded share DDP's reducer
    b = ddp_buckets(
        profile,
        bucket_cap_mb=spec.bucket_mb,
        bucket_cap_mb_list=spec.bucket_cap_mb_list,
        find_unused_parameters=spec.find_unused_parameters,
        static_graph=spec.static_graph,
    )
    buckets = b.first_step if spec.first_step else b.steady
    copy_out = 0 if spec.gradient_as_bucket_view else total
    colls = _bucket_colls(profile, buckets)
    if spec.name == "torch-ddp":
        return CommPlan("in_order", colls, copy_in=True, copy_out_bytes=copy_out)
    post = tuple(Collective(f"bcast:{ps[i].name}", "broadcast", ps[i].nbytes, (i,)) for i in trainable)
    return CommPlan(
        "in_order", colls, copy_in=True, copy_out_bytes=copy_out, optimizer_fraction=1.0 / world_size, post_optimizer=post
    )
