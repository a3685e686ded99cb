"""Measure a gradient-ready profile (``simulator.profile.GradProfile``) of a workload.

Compute is profiled in the conditions of the real runs: ``profile_grads``
runs on a ``RankPool`` of ``P`` ranks, each with the thread count the DDP runs
use, all stepping at the same time (a barrier before each step), but with no
communication: each rank trains its own copy locally. So the cores, caches
and memory bandwidth are shared as in a DDP run; only the communication and
its contention are missing (calibration fits those).

Per step, on each rank: forward (up to the loss), backward, optimizer step,
timed with ``time.perf_counter``; post-accumulate-grad hooks stamp the moment
each parameter's gradient is ready, measured from the start of backward. On
CUDA the hooks record events instead and times come from
``Event.elapsed_time`` after a synchronize.

Hooks cost time themselves (a Python call per parameter). Steps alternate
between hooked and hook-free; the hook-free backward median divided by the
hooked one is ``hook_scale``, and the ready times are multiplied by it, so the
profile's backward is the hook-free backward. Both are reported in
``env["profile"]``. ``backward_tail_s`` is the backward after the last ready
gradient (hooked median backward minus the last median ready time, scaled), so
that ``profile.backward_s`` equals the hook-free backward median.

A parameter that gets no gradient in a step counts as ready at the end of
backward (DDP reduces its zeros then). Per parameter: the median over steps (after warm-up) on each rank, then the
median over ranks. ``forward_s`` and ``optimizer_s`` likewise. The optimizer
is SGD or Adam (``env["profile"]["optimizer"]``); ``samples_per_step`` is the
per-rank batch.
"""

from __future__ import annotations

import statistics
from typing import Any

from simulator.profile import GradProfile, ParamSpec

DEFAULT_STEPS = 30
DEFAULT_WARMUP = 5


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def _profile_task(
    ctx: Any, spec: str, batch_size: int, steps: int, warmup: int, optimizer: str
) -> dict[str, Any]:
    """On one rank: ``warmup`` untimed steps, then ``steps`` hooked and ``steps`` hook-free steps, alternating."""
    import time

    import torch
    import torch.distributed as dist

    from .ddp import make_optimizer
    from .records import environment
    from .workloads import cast_batch, load_workload

    w = load_workload(spec)
    device = ctx.device
    cuda = device.startswith("cuda")
    model = w.build().to(device)
    opt = make_optimizer("naive", model, optimizer)
    params = list(model.parameters())
    trainable = [i for i, p in enumerate(params) if p.requires_grad]
    batches = [cast_batch(w.make_batch(batch_size, 1000 + k * ctx.world_size + ctx.rank), device=device) for k in range(4)]
    perf = time.perf_counter
    stamps: list[Any] = [None] * len(params)

    def make_hook(i: int) -> Any:
        if cuda:
            def hook(_p: Any) -> None:
                ev = torch.cuda.Event(enable_timing=True)
                ev.record()
                stamps[i] = ev
        else:
            def hook(_p: Any) -> None:
                stamps[i] = perf()
        return hook

    def clock() -> Any:
        if cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return perf()

    def elapsed(a: Any, b: Any) -> float:
        return a.elapsed_time(b) / 1e3 if cuda else b - a

    ready: dict[int, list[float]] = {i: [] for i in trainable}
    fwd: list[float] = []
    bwd_hooked: list[float] = []
    bwd_free: list[float] = []
    opt_s: list[float] = []
    for n in range(warmup + 2 * steps):
        hooked = n >= warmup and (n - warmup) % 2 == 0
        handles = [params[i].register_post_accumulate_grad_hook(make_hook(i)) for i in trainable] if hooked else []
        batch = batches[n % len(batches)]
        opt.zero_grad(set_to_none=True)
        dist.barrier()
        if cuda:
            torch.cuda.synchronize()
        t0 = clock()
        loss = w.loss(model, batch)
        t1 = clock()
        loss.backward()
        t2 = clock()
        opt.step()
        t3 = clock()
        if cuda:
            torch.cuda.synchronize()
        for h in handles:
            h.remove()
        if n < warmup:
            continue
        fwd.append(elapsed(t0, t1))
        opt_s.append(elapsed(t2, t3))
        if hooked:
            bwd_hooked.append(elapsed(t1, t2))
            bwd = elapsed(t1, t2)
            times = {i: elapsed(t1, stamps[i]) for i in trainable if stamps[i] is not None}
            for i in trainable:  # no gradient this step: DDP reduces its zeros after backward
                times.setdefault(i, bwd)
            for i, t in times.items():
                ready[i].append(t)
            for i in trainable:
                stamps[i] = None
        else:
            bwd_free.append(elapsed(t1, t2))
    out = {
        "ready_s": {i: _median(v) for i, v in ready.items()},
        "forward_s": fwd,
        "backward_hooked_s": bwd_hooked,
        "backward_free_s": bwd_free,
        "optimizer_s": opt_s,
    }
    if ctx.rank == 0:
        names = [n_ for n_, _ in model.named_parameters()]
        out["params"] = [
            {
                "name": names[i],
                "numel": p.numel(),
                "dtype": str(p.dtype).removeprefix("torch."),
                "shape": list(p.shape),
                "requires_grad": p.requires_grad,
            }
            for i, p in enumerate(params)
        ]
        out["env"] = environment(ctx.backend, ctx.world_size, device=device)
    return out


def profile_grads(
    pool: Any,
    workload_spec: str,
    batch_size: int | None = None,
    steps: int = DEFAULT_STEPS,
    warmup: int = DEFAULT_WARMUP,
    optimizer: str = "sgd",
) -> GradProfile:
    """A measured ``GradProfile`` of ``workload_spec`` with ``pool.world_size`` ranks computing concurrently.

    ``steps`` hooked steps and as many hook-free ones are timed after
    ``warmup``. Raises ``RunFailure`` if a rank fails, ``ValueError`` for bad
    input.
    """
    from .workloads import load_workload

    if steps < 1 or warmup < 0:
        raise ValueError(f"need steps >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}")
    w = load_workload(workload_spec)
    bs = batch_size or w.default_batch_size
    per_rank = pool.run(_profile_task, workload_spec, bs, steps, warmup, optimizer)
    fwd = _median([_median(r["forward_s"]) for r in per_rank])
    opt = _median([_median(r["optimizer_s"]) for r in per_rank])
    hooked = _median([_median(r["backward_hooked_s"]) for r in per_rank])
    free = _median([_median(r["backward_free_s"]) for r in per_rank])
    scale = free / hooked if hooked > 0 else 1.0
    specs = [
        ParamSpec(
            name=d["name"], numel=d["numel"], dtype=d["dtype"], shape=tuple(d["shape"]), requires_grad=d["requires_grad"]
        )
        for d in per_rank[0]["params"]
    ]
    ready_hooked = {i: _median([r["ready_s"][i] for r in per_rank]) for i in per_rank[0]["ready_s"]}
    ready = {i: scale * t for i, t in ready_hooked.items()}
    # the backward after its last gradient, so that last ready time + tail = the hook-free backward
    tail = max(0.0, hooked - max(ready_hooked.values()))
    env = dict(per_rank[0]["env"])
    env["threads_per_rank"] = getattr(pool, "threads_per_rank", env.get("torch_threads"))
    env["profile"] = {
        "optimizer": optimizer,
        "batch_size": bs,
        "steps": steps,
        "warmup": warmup,
        "ranks": pool.world_size,
        "ranks_combined": "median over ranks of per-rank medians",
        "backward_hooked_s": hooked,
        "backward_hookfree_s": free,
        "hook_scale": scale,
        "hook_overhead_s": hooked - free,
        "backward_tail_s": tail * scale,
        "forward_p10_p90_s": _spread([t for r in per_rank for t in r["forward_s"]]),
        "backward_hookfree_p10_p90_s": _spread([t for r in per_rank for t in r["backward_free_s"]]),
        "optimizer_p10_p90_s": _spread([t for r in per_rank for t in r["optimizer_s"]]),
        "raw_backward_hookfree_s": [r["backward_free_s"] for r in per_rank],
    }
    return GradProfile.from_ready_times(
        workload_spec,
        specs,
        ready,
        forward_s=fwd,
        optimizer_s=opt,
        backward_tail_s=tail * scale,
        samples_per_step=bs,
        tokens_per_sample=w.tokens_per_sample,
        source=f"measured:{per_rank[0]['env'].get('device', 'cpu')}",
        env=env,
    )


def _spread(xs: list[float]) -> list[float]:
    from .stats import percentile

    return [percentile(xs, 10), percentile(xs, 90)]
