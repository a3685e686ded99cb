"""Correctness checks of the DDP variants on a user's setup (``ddpsim check``) and in the tests.

All checks run on an existing ``RankPool`` (one spawn for many checks):

``weights_match_single``
    ``steps`` DDP steps in float64, rank ``r`` training on the samples with
    ``index % world == r`` of each global batch, end with the same weights as
    one process training on the whole global batch (largest difference
    relative to the largest weight, tolerance 1e-9).
``ranks_agree``
    after those steps every rank holds the same parameters (largest
    difference to rank 0 relative to the largest weight, tolerance 1e-12).
``loss_matches_accumulation``
    the DDP loss (mean over ranks) equals single-process gradient
    accumulation over the same micro-batches, step by step, in float32 for
    ``accum_steps`` steps (relative difference of the final loss < 2%), and
    in float64 (< 1e-9).
``sharding_covers_once``
    ``index % world == rank`` gives every sample of a batch to exactly one rank.
``sampler_reshuffles``
    ``DistributedSampler`` covers the data once per epoch across ranks, gives a
    new order after ``set_epoch``, and the same order again for the same epoch.

The single-process references run inside the ranks (reference ``k`` on rank
``k % world``), so a check costs about one training run's time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simulator.jsonio import to_fields

from .errors import RunFailure

WEIGHTS_RTOL = 1e-9
RANKS_RTOL = 1e-12  # 0 with 2 ranks (a+b == b+a); 3+ ranks may sum in different orders
LOSS_RTOL_F32 = 0.02
LOSS_RTOL_F64 = 1e-9


@dataclass(frozen=True)
class CheckResult:
    """One check of one strategy: what was compared, the largest difference found, the tolerance."""

    check: str
    strategy: str
    passed: bool
    value: float | None
    tolerance: float | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)


def shard_indices(n: int, rank: int, world_size: int) -> list[int]:
    """The samples of an ``n``-sample batch that ``rank`` trains on: ``index % world_size == rank``."""
    return [i for i in range(n) if i % world_size == rank]


# ---- rank tasks ----------------------------------------------------------------------


def _dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "float64": torch.float64}[name]


def _flat_params(module: Any) -> Any:
    import torch

    return torch.cat([p.detach().reshape(-1).double() for p in module.parameters()])


def _train_task(
    ctx: Any,
    spec: str,
    strategy: str,
    bucket_mb: float | None,
    steps: int,
    batch_size: int,
    dtype_name: str,
    optimizer: str,
    lr: float,
    find_unused: bool,
    references: Sequence[str],
) -> dict[str, Any]:
    """DDP training on this rank's shards, then the single-process references assigned to this rank."""
    import torch
    import torch.distributed as dist

    from .ddp import make_ddp, make_optimizer
    from .workloads import cast_batch, load_workload, select

    w = load_workload(spec)
    dtype = _dtype(dtype_name)
    p, r = ctx.world_size, ctx.rank
    global_n = p * batch_size
    mine = torch.tensor(shard_indices(global_n, r, p))

    def batches():
        for s in range(steps):
            yield cast_batch(w.make_batch(global_n, 1000 + s), dtype, ctx.device)

    model = w.build().to(dtype=dtype, device=ctx.device)
    if callable(strategy):  # an experimental wrapper class: strategy(module) (tests use a broken one)
        ddp = strategy(model)
        opt = make_optimizer("naive", ddp, optimizer, lr=lr)
    else:
        ddp = make_ddp(strategy, model, bucket_mb, find_unused_parameters=find_unused)
        opt = make_optimizer(strategy, ddp, optimizer, lr=lr)
    local_losses = []
    for batch in batches():
        ddp.on_train_batch_start()
        loss = w.loss(ddp, select(batch, mine))
        loss.backward()
        ddp.finish_gradient_synchronization()
        opt.step()
        opt.zero_grad(set_to_none=True)
        local_losses.append(loss.detach().double())
    losses = torch.stack(local_losses)
    dist.all_reduce(losses)
    losses /= p
    flat = _flat_params(model)
    gathered = [torch.empty_like(flat) for _ in range(p)]
    dist.all_gather(gathered, flat)
    rank_diff = max(float((g - gathered[0]).abs().max()) for g in gathered)
    out: dict[str, Any] = {"losses": losses.tolist(), "rank_diff": rank_diff}

    for k, ref in enumerate(references):
        if k % p != r:
            continue
        ref_model = w.build().to(dtype=dtype, device=ctx.device)
        ref_opt = make_optimizer("naive", ref_model, optimizer, lr=lr)
        ref_losses = []
        for batch in batches():
            if ref == "whole":
                loss = w.loss(ref_model, batch)
                loss.backward()
            else:  # "accum": the same micro-batches the ranks used, one backward each
                parts = []
                for q in range(p):
                    part = w.loss(ref_model, select(batch, torch.tensor(shard_indices(global_n, q, p))))
                    (part / p).backward()
                    parts.append(part.detach().double())
                loss = torch.stack(parts).mean()
            ref_opt.step()
            ref_opt.zero_grad(set_to_none=True)
            ref_losses.append(float(loss))
        ref_flat = _flat_params(ref_model)
        out[ref] = {
            "losses": ref_losses,
            "max_abs_diff": float((flat - ref_flat).abs().max()),
            "max_abs_weight": float(ref_flat.abs().max()),
        }
    return out


def _shard_task(ctx: Any, n: int) -> list[int]:
    import torch.distributed as dist

    mine = shard_indices(n, ctx.rank, ctx.world_size)
    everyone: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(everyone, mine)
    return [i for part in everyone for i in part]


def _sampler_task(ctx: Any, n: int, epochs: Sequence[int]) -> list[list[int]]:
    """Per entry of ``epochs``: every rank's indices for that epoch, rank 0's first."""
    import torch.distributed as dist
    from torch.utils.data.distributed import DistributedSampler

    sampler = DistributedSampler(list(range(n)), num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True, seed=0)
    mine = []
    for e in epochs:
        sampler.set_epoch(e)
        mine.append(list(sampler))
    everyone: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(everyone, mine)
    return [[i for part in everyone for i in part[k]] for k in range(len(epochs))]


# ---- checks ---------------------------------------------------------------------------


def _rel(diff: float, scale: float) -> float:
    return diff / max(scale, 1e-300)


def check_strategy(
    pool: Any,
    spec: str,
    strategy: Any,
    *,
    bucket_mb: float | None = None,
    steps: int = 3,
    accum_steps: int = 50,
    batch_size: int = 4,
    optimizer: str = "sgd",
    lr: float = 0.01,
    find_unused: bool = False,
    float32_loss: bool = True,
) -> list[CheckResult]:
    """The training checks of one strategy on ``pool``'s ranks.

    ``strategy``: a name of the simulator's registry (``simulator.strategies``), or a module-level
    wrapper class called as ``strategy(module)`` (to check an experiment).
    """
    from simulator.strategies import REGISTRY

    entry = REGISTRY.get(strategy) if isinstance(strategy, str) else None
    if entry is not None and entry.needs_bucket_size and bucket_mb is None:
        bucket_mb = 1.0
    if entry is None or not entry.bucketed:
        bucket_mb = None
    label = strategy if isinstance(strategy, str) else getattr(strategy, "__name__", "custom")
    results: list[CheckResult] = []
    common = dict(
        spec=spec,
        strategy=strategy,
        bucket_mb=bucket_mb,
        batch_size=batch_size,
        optimizer=optimizer,
        lr=lr,
        find_unused=find_unused,
    )
    outs = pool.run(_train_task, steps=steps, dtype_name="float64", references=("whole", "accum"), **common)
    whole = next(o["whole"] for o in outs if "whole" in o)
    accum = next(o["accum"] for o in outs if "accum" in o)
    rel = _rel(whole["max_abs_diff"], whole["max_abs_weight"])
    results.append(
        CheckResult(
            "weights_match_single",
            label,
            rel <= WEIGHTS_RTOL,
            rel,
            WEIGHTS_RTOL,
            f"{steps} steps float64: max |w_ddp - w_single| = {whole['max_abs_diff']:.3g}, "
            f"max |w| = {whole['max_abs_weight']:.3g}",
        )
    )
    rank_diff = max(o["rank_diff"] for o in outs)
    rel_rank = _rel(rank_diff, whole["max_abs_weight"])
    results.append(
        CheckResult(
            "ranks_agree",
            label,
            rel_rank <= RANKS_RTOL,
            rel_rank,
            RANKS_RTOL,
            f"max |w_rank - w_rank0| over {pool.world_size} ranks after {steps} steps = {rank_diff:.3g}",
        )
    )
    ddp_l, acc_l = outs[0]["losses"], accum["losses"]
    worst = max(_rel(abs(a - b), abs(b)) for a, b in zip(ddp_l, acc_l))
    results.append(
        CheckResult(
            "loss_matches_accumulation_f64",
            label,
            worst <= LOSS_RTOL_F64,
            worst,
            LOSS_RTOL_F64,
            f"{steps} steps float64: worst relative loss difference per step = {worst:.3g}",
        )
    )
    if float32_loss:
        outs32 = pool.run(_train_task, steps=accum_steps, dtype_name="float32", references=("accum",), **common)
        acc32 = next(o["accum"] for o in outs32 if "accum" in o)
        a, b = outs32[0]["losses"][-1], acc32["losses"][-1]
        rel32 = _rel(abs(a - b), abs(b))
        ok = rel32 < LOSS_RTOL_F32 and math.isfinite(a)
        results.append(
            CheckResult(
                "loss_matches_accumulation_f32",
                label,
                ok,
                rel32,
                LOSS_RTOL_F32,
                f"{accum_steps} steps float32: final loss DDP {a:.6g} vs accumulation {b:.6g} "
                f"(first {outs32[0]['losses'][0]:.6g})",
            )
        )
    return results


def check_data_sharding(pool: Any, n: int = 37) -> list[CheckResult]:
    """``index % world == rank`` sharding and ``DistributedSampler`` with ``set_epoch``."""
    p = pool.world_size
    got = pool.run(_shard_task, n)[0]
    once = sorted(got) == list(range(n))
    results = [
        CheckResult(
            "sharding_covers_once",
            "-",
            once,
            float(len(got) - len(set(got))),
            0.0,
            f"{n} samples over {p} ranks: {len(got)} assigned, {len(set(got))} distinct",
        )
    ]
    m = 8 * p
    e0, e1, e0_again = pool.run(_sampler_task, m, (0, 1, 0))[0]
    covers = all(sorted(x) == list(range(m)) for x in (e0, e1))
    reshuffled = e0 != e1
    repeat = e0 == e0_again
    ok = covers and reshuffled and repeat
    results.append(
        CheckResult(
            "sampler_reshuffles",
            "-",
            ok,
            None,
            None,
            f"{m} samples, {p} ranks: each epoch covers once: {covers}; epoch 1 order differs from 0: "
            f"{reshuffled}; set_epoch(0) again repeats epoch 0: {repeat}",
        )
    )
    return results


def run_checks(
    pool: Any,
    spec: str,
    strategies: Sequence[str],
    **kwargs: Any,
) -> list[CheckResult]:
    """Every check for every strategy, then the data checks. A rank failure becomes a failed check."""
    results: list[CheckResult] = []
    for s in strategies:
        try:
            results.extend(check_strategy(pool, spec, s, **kwargs))
        except RunFailure as e:
            results.append(CheckResult("run", s, False, None, None, str(e).splitlines()[0]))
            return results
    results.extend(check_data_sharding(pool))
    return results


def format_results(results: Sequence[CheckResult]) -> str:
    lines = [f"{'strategy':<11} {'check':<31} {'result':<6} {'value':>10} {'tol':>8}  detail"]
    for r in results:
        val = "" if r.value is None else f"{r.value:.3g}"
        tol = "" if r.tolerance is None else f"{r.tolerance:.3g}"
        lines.append(
            f"{r.strategy:<11} {r.check:<31} {'pass' if r.passed else 'FAIL':<6} {val:>10} {tol:>8}  {r.detail}"
        )
    n_fail = sum(not r.passed for r in results)
    lines.append(f"{len(results) - n_fail} passed, {n_fail} failed")
    return "\n".join(lines)
