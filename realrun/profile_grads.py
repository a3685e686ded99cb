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
between hooked and hook-free, and the hooks' cost (``hook_overhead_s``) is the
median over step pairs of a hooked backward minus the hook-free one right
after it: paired, so that a machine whose steps switch between a slow and a
fast state (this VM's: 35 and 62 ms for one cnn backward, ten steps each)
cancels in each pair, where a difference of the two medians would take each
median from whichever state it falls in (8.1 ms for 12 hooks in that run; the
paired median is the hooks' own cost). ``hook_scale`` is ``1 - hook_overhead_s
/ hooked median`` (a negative ``hook_overhead_s``, noise, counts as 0); the
ready times are multiplied by it, so the profile's backward is the hooked
median less the hooks' cost. ``backward_tail_s`` is the
backward after the last ready gradient (hooked median backward minus the last
median ready time, scaled). The medians of both kinds of step are reported in
``env["profile"]`` beside every step's time.

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


def _measure_steps(
    model: Any, loss_of: Any, batches: list[Any], opt: Any, steps: int, warmup: int, device: str, barrier: Any = None
) -> dict[str, Any]:
    """``warmup`` untimed steps, then ``steps`` hooked and ``steps`` hook-free steps, alternating.

    ``loss_of(batch)`` runs the forward to the scalar loss; ``barrier`` (when
    given) lines the ranks up before every step.
    """
    import time

    import torch

    cuda = device.startswith("cuda")
    params = list(model.parameters())
    trainable = [i for i, p in enumerate(params) if p.requires_grad]
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
        if barrier is not None:
            barrier()
        if cuda:
            torch.cuda.synchronize()
        t0 = clock()
        loss = loss_of(batch)
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
    names = [n_ for n_, _ in model.named_parameters()]
    return {
        "ready_s": {i: _median(v) for i, v in ready.items()},
        "forward_s": fwd,
        "backward_hooked_s": bwd_hooked,
        "backward_free_s": bwd_free,
        "optimizer_s": opt_s,
        "params": [
            {
                "name": names[i],
                "numel": p.numel(),
                "dtype": str(p.dtype).removeprefix("torch."),
                "shape": list(p.shape),
                "requires_grad": p.requires_grad,
            }
            for i, p in enumerate(params)
        ],
    }


def _profile_task(ctx: Any, spec: str, batch_size: int, steps: int, warmup: int, optimizer: str) -> dict[str, Any]:
    """On one rank: the workload's steps, every rank stepping at once (a barrier before each)."""
    import torch.distributed as dist

    from .ddp import make_optimizer
    from .records import environment
    from .workloads import cast_batch, load_workload

    w = load_workload(spec)
    device = ctx.device
    model = w.build().to(device)
    opt = make_optimizer("naive", model, optimizer)
    batches = [
        cast_batch(w.make_batch(batch_size, 1000 + k * ctx.world_size + ctx.rank), device=device) for k in range(4)
    ]
    out = _measure_steps(model, lambda b: w.loss(model, b), batches, opt, steps, warmup, device, dist.barrier)
    if ctx.rank == 0:
        out["env"] = environment(ctx.backend, ctx.world_size, device=device)
    else:
        del out["params"]
    return out


def profile_module(
    module: Any,
    example_inputs: Any,
    loss_fn: Any = None,
    *,
    steps: int = 10,
    warmup: int = 3,
    optimizer: str = "sgd",
    name: str | None = None,
) -> GradProfile:
    """A measured ``GradProfile`` of an in-memory module, in this process (no ranks).

    A deep copy of ``module`` is trained, so the caller's weights and gradients
    are untouched. ``example_inputs`` is a tensor or a tuple passed
    positionally; ``loss_fn(output)`` defaults to the mean of the squared output.
    """
    import copy

    import torch

    from .ddp import make_optimizer
    from .records import environment
    from .workloads import batch_len, mean_square_loss

    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"tune needs a torch.nn.Module, got {type(module).__name__}")
    if not any(p.requires_grad for p in module.parameters()):
        raise ValueError("the module has no trainable parameters")
    if steps < 1 or warmup < 0:
        raise ValueError(f"need steps >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}")
    model = copy.deepcopy(module)
    device = str(next(model.parameters()).device)
    loss_fn = loss_fn or mean_square_loss
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)

    def loss_of(b: Any) -> Any:
        return loss_fn(model(*b))

    try:
        loss = loss_of(inputs)
    except Exception as e:  # noqa: BLE001 - the user's inputs: one clear message
        shapes = ", ".join(str(tuple(getattr(t, "shape", ()))) for t in inputs)
        raise ValueError(
            f"the example inputs (shapes {shapes}) do not fit the model: {type(e).__name__}: {e}"
        ) from None
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise ValueError("loss_fn(output) must return a scalar tensor")
    opt = make_optimizer("naive", model, optimizer)
    out = _measure_steps(model, loss_of, [inputs], opt, steps, warmup, device)
    out["env"] = environment(None, 1, device=device)
    return _combine(
        [out], name or type(module).__name__, batch_len(inputs), 1, steps, warmup, optimizer, ranks=1, threads=None
    )


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
    return _combine(
        per_rank,
        workload_spec,
        bs,
        w.tokens_per_sample,
        steps,
        warmup,
        optimizer,
        ranks=pool.world_size,
        threads=getattr(pool, "threads_per_rank", None),
    )


def _combine(
    per_rank: list[dict[str, Any]],
    model: str,
    bs: int,
    tokens_per_sample: int,
    steps: int,
    warmup: int,
    optimizer: str,
    ranks: int,
    threads: int | None,
) -> GradProfile:
    """Per parameter the median over steps on each rank, then the median over ranks."""
    fwd = _median([_median(r["forward_s"]) for r in per_rank])
    opt = _median([_median(r["optimizer_s"]) for r in per_rank])
    hooked = _median([_median(r["backward_hooked_s"]) for r in per_rank])
    free = _median([_median(r["backward_free_s"]) for r in per_rank])
    overhead = _median([_median(paired_differences(r["backward_hooked_s"], r["backward_free_s"])) for r in per_rank])
    cost = max(0.0, overhead)  # a hook does not make backward faster: a negative paired median is noise
    if hooked > cost:
        scale = (hooked - cost) / hooked
    else:  # the pairs say the hooks cost the whole backward: nothing to take from them
        scale = free / hooked if hooked > 0 else 1.0
    specs = [
        ParamSpec(
            name=d["name"],
            numel=d["numel"],
            dtype=d["dtype"],
            shape=tuple(d["shape"]),
            requires_grad=d["requires_grad"],
        )
        for d in per_rank[0]["params"]
    ]
    ready_hooked = {i: _median([r["ready_s"][i] for r in per_rank]) for i in per_rank[0]["ready_s"]}
    ready = {i: scale * t for i, t in ready_hooked.items()}
    # the backward after its last gradient, so that last ready time + tail = the backward without hooks
    tail = max(0.0, hooked - max(ready_hooked.values()))
    env = dict(per_rank[0]["env"])
    env["threads_per_rank"] = threads if threads is not None else env.get("torch_threads")
    env["profile"] = {
        "optimizer": optimizer,
        "batch_size": bs,
        "steps": steps,
        "warmup": warmup,
        "ranks": ranks,
        "ranks_combined": "median over ranks of per-rank medians",
        "backward_hooked_s": hooked,
        "backward_hookfree_s": free,
        "hook_scale": scale,
        "hook_overhead_s": overhead,
        "hook_overhead_estimate": "median over step pairs of hooked minus the next hook-free backward",
        "backward_tail_s": tail * scale,
        "forward_p10_p90_s": _spread([t for r in per_rank for t in r["forward_s"]]),
        "backward_hookfree_p10_p90_s": _spread([t for r in per_rank for t in r["backward_free_s"]]),
        "optimizer_p10_p90_s": _spread([t for r in per_rank for t in r["optimizer_s"]]),
        "raw_backward_hookfree_s": [r["backward_free_s"] for r in per_rank],
        "raw_backward_hooked_s": [r["backward_hooked_s"] for r in per_rank],
    }
    return GradProfile.from_ready_times(
        model,
        specs,
        ready,
        forward_s=fwd,
        optimizer_s=opt,
        backward_tail_s=tail * scale,
        samples_per_step=bs,
        tokens_per_sample=tokens_per_sample,
        source=f"measured:{per_rank[0]['env'].get('device', 'cpu')}",
        env=env,
    )


def paired_differences(hooked: list[float], free: list[float]) -> list[float]:
    """Each hooked step's backward minus the hook-free step's that followed it (``_measure_steps``
    alternates them: hooked, free, hooked, ...)."""
    if not hooked or len(hooked) != len(free):
        raise ValueError(f"need as many hooked as hook-free steps (at least one), got {len(hooked)} and {len(free)}")
    return [h - f for h, f in zip(hooked, free)]


def _spread(xs: list[float]) -> list[float]:
    from .stats import percentile

    return [percentile(xs, 10), percentile(xs, 90)]
