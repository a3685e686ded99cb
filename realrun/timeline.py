"""Per-bucket timelines of real DDP steps: when each bucket's last gradient was ready, when its
all-reduce was launched and when it completed, beside the step's phases.

``TimelineRecorder(net)`` attaches to a wrapper from ``realrun.ddp.make_ddp``:

* torch DDP (``TorchDDP``, also under ``sharded``): a communication hook
  (``register_comm_hook``) that does what torch's default ``allreduce_hook``
  does (``default_hooks._allreduce_fut``: divide the bucket buffer by the
  world size, ``dist.all_reduce(async_op=True)``, ``get_future().then(...)``)
  and timestamps the launch (hook entry) and the completion (the ``then``
  callback; gloo completes the future on one of its worker threads, so the
  callback waits for the GIL: the completion stamp can be late by as long as
  the main thread holds it). "Last gradient ready" comes from a
  post-accumulate-grad hook on every trainable parameter (a tensor hook runs
  inside ``AccumulateGrad`` before the reducer's post-hook on the same
  accumulator, so a bucket's ready stamp precedes its launch), mapped to buckets
  through ``bucket.parameters()``. Compute end ("backward end") is an autograd
  callback queued from the first gradient hook of the step: callbacks run in
  queue order once the graph is done, so it runs before the reducer's
  ``finalize_backward`` (queued when the last bucket is marked ready), and
  ``backward()`` returning includes that wait.
* the hand-written wrappers record natively (``_GradSync._tl``): the hook that
  completes a bucket stamps its readiness, the launch point stamps the launch,
  a ``then`` callback on the work's future the completion. ``naive`` and
  ``flat`` launch after backward, so every collective is "ready" when
  ``finish_gradient_synchronization()`` starts, and their calls are blocking
  (completion = the call returning). Their compute end is ``backward()``
  returning.

Times are ``time.perf_counter()`` seconds relative to the step start (right
after the barrier), per rank. ``end_step()`` returns one plain dict per step
(JSON-able); ranks return theirs through the pool, so rank 0's caller has all.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.distributed as dist

from .step_record import turn_order

TIMELINE_SCHEMA = "ddpsim.timeline/1"

_perf = time.perf_counter


def _timed_allreduce_hook(rec, bucket):  # type: ignore[no-untyped-def]
    """torch's default ``allreduce_hook`` with timestamps (launch at entry, completion in ``then``).

    No annotations: ``register_comm_hook`` checks them and this module's are strings."""
    t = _perf()
    step = rec._cur
    buf = bucket.buffer()
    idx = bucket.index()
    key = (idx, buf.data_ptr(), buf.numel())
    members = rec._bucket_members.get(key)
    if members is None:  # first sight of this bucket layout (torch rebuilds its buckets once, early)
        members = tuple(rec._index_of[id(p)] for p in bucket.parameters())
        rec._bucket_members[key] = members
    buf.div_(rec.world_size)
    fut = dist.all_reduce(buf, group=rec.process_group, async_op=True).get_future()
    row = [idx, buf.numel() * buf.element_size(), len(members), members, t, None]
    if step is not None:
        step["_rows"].append(row)

    def done(f: torch.futures.Future) -> torch.Tensor:
        row[5] = _perf()
        return f.value()[0]

    return fut.then(done)


class TimelineRecorder:
    """Per-step, per-bucket timestamps of one rank's DDP steps (see the module doc)."""

    def __init__(self, net: Any, process_group: Any = None):
        from torch.nn.parallel import DistributedDataParallel

        from .ddp import _GradSync

        self.net = net
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self._cur: dict[str, Any] | None = None
        self._handles: list[Any] = []
        if isinstance(net, DistributedDataParallel):
            self.kind = "torch-ddp"
            self._trainable = [p for p in net.module.parameters() if p.requires_grad]
            self._index_of = {id(p): k for k, p in enumerate(self._trainable)}
            self._bucket_members: dict[tuple[int, int, int], tuple[int, ...]] = {}
            self._handles = [
                p.register_post_accumulate_grad_hook(self._param_hook(k)) for k, p in enumerate(self._trainable)
            ]
            net.register_comm_hook(self, _timed_allreduce_hook)
        elif isinstance(net, _GradSync):
            self.kind = type(net).__name__
            net._tl = self
        else:
            raise TypeError(f"no timeline recording for {type(net).__name__}")

    # ---- torch DDP: gradient-ready stamps ------------------------------------------
    def _param_hook(self, k: int) -> Any:
        def hook(_p: torch.Tensor) -> None:
            step = self._cur
            if step is None:
                return
            ready = step["_param_ready"]
            if not step["_graph_cb"]:
                step["_graph_cb"] = True
                torch.autograd.Variable._execution_engine.queue_callback(self._graph_done)
            ready[k] = _perf()

        return hook

    def _graph_done(self) -> None:
        if self._cur is not None:
            self._cur["_graph_end"] = _perf()

    # ---- the hand-written wrappers call these ----------------------------------------
    def ready(self, idx: int) -> None:
        """Collective ``idx``'s last gradient is ready now."""
        if self._cur is not None:
            self._cur["_ready"][idx] = _perf()

    def ready_all(self, n: int) -> None:
        """Collectives ``0..n-1`` are ready now (launched after backward)."""
        if self._cur is not None:
            t = _perf()
            for i in range(n):
                self._cur["_ready"][i] = t

    def launch(self, idx: int, nbytes: int, n_params: int, work: Any) -> None:
        """Collective ``idx`` was just launched as async ``work``; its completion is stamped by a callback."""
        step = self._cur
        if step is None:
            return
        row = [idx, nbytes, n_params, None, _perf(), None]
        step["_rows"].append(row)

        def done(_f: Any) -> None:
            row[5] = _perf()

        step["_futs"].append(work.get_future().then(done))

    def blocking(self, idx: int, nbytes: int, n_params: int, t_launch: float, t_done: float) -> None:
        """A blocking collective that ran from ``t_launch`` to ``t_done`` (perf_counter seconds)."""
        if self._cur is not None:
            self._cur["_rows"].append([idx, nbytes, n_params, None, t_launch, t_done])

    # ---- the step loop calls these ---------------------------------------------------
    def begin_step(self, t0: float) -> None:
        self._cur = {
            "t0": t0,
            "_rows": [],
            "_futs": [],
            "_ready": {},
            "_param_ready": {},
            "_graph_cb": False,
            "_graph_end": None,
            "marks": {},
        }

    def mark(self, name: str) -> None:
        if self._cur is not None:
            self._cur["marks"][name] = _perf()

    def end_step(self, step_s: float | None = None) -> dict[str, Any]:
        """Close the step (outside the timed region): wait for completion callbacks, return times relative to t0.

        ``step_s``: the step time as the step loop measured it (else the optimizer's end)."""
        step, self._cur = self._cur, None
        if step is None:
            raise RuntimeError("end_step() without begin_step()")
        for f in step["_futs"]:
            f.wait()
        t0 = step["t0"]
        rel = lambda t: None if t is None else t - t0  # noqa: E731
        marks = {k: v - t0 for k, v in step["marks"].items()}
        graph_end = step["_graph_end"]
        compute_end = graph_end if graph_end is not None else step["marks"].get("backward_return")
        buckets = []
        for idx, nbytes, n_params, members, t_launch, t_done in step["_rows"]:
            if members is not None:  # torch DDP: the bucket's last parameter hook
                pr = step["_param_ready"]
                ts = [pr[m] for m in members if m in pr]
                t_ready = max(ts) if ts else None
            else:
                t_ready = step["_ready"].get(idx)
            buckets.append(
                {
                    "index": idx,
                    "bytes": int(nbytes),
                    "n_params": int(n_params),
                    "ready_s": rel(t_ready),
                    "launch_s": rel(t_launch),
                    "complete_s": rel(t_done),
                }
            )
        buckets.sort(key=lambda b: (b["launch_s"], b["index"]))
        return {
            "forward_end_s": marks.get("backward_start"),
            "backward_start_s": marks.get("backward_start"),
            "backward_end_s": rel(compute_end),
            "backward_return_s": marks.get("backward_return"),
            "sync_end_s": marks.get("sync_end", marks.get("backward_return")),
            "optimizer_start_s": marks.get("optimizer_start"),
            "optimizer_end_s": marks.get("optimizer_end"),
            "step_s": step_s if step_s is not None else marks.get("optimizer_end"),
            "buckets": buckets,
        }

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        if hasattr(self.net, "_tl"):
            self.net._tl = None


def recorded_step(rec: TimelineRecorder, t0: float, net: Any, opt: Any, batch: Any, loss_of: Any) -> None:
    """One training step with the recorder's marks: the same work as ``bench_ddp``'s ``one_step``."""
    rec.begin_step(t0)
    start_sync = getattr(net, "on_train_batch_start", None)
    finish = getattr(net, "finish_gradient_synchronization", None)
    if start_sync is not None:
        start_sync()
    loss = loss_of(net, batch)
    rec.mark("backward_start")
    loss.backward()
    rec.mark("backward_return")
    if finish is not None:
        finish()
    rec.mark("sync_end")
    rec.mark("optimizer_start")
    opt.step()
    rec.mark("optimizer_end")


# ---- what the recording costs -----------------------------------------------------------------
def _overhead_task(
    ctx: Any,
    spec: str,
    strategy: str,
    bucket_mb: float | None,
    batch_size: int,
    steps: int,
    warmup: int,
    optimizer: str,
    sides: tuple[str, ...],
) -> dict[str, list[float]]:
    """Copies of one configuration stepped in turn (A B C, C B A, ...): per-rank step times per side.

    Sides: ``plain`` (as ``bench-ddp`` runs it), ``recorded`` (a ``TimelineRecorder`` attached),
    ``torch_hook`` (torch DDP with torch's own Python ``default_hooks.allreduce_hook``, no stamps:
    what any Python comm hook costs, stamps apart).
    """
    import gc

    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    from .bench_ddp import _sync, train_step
    from .ddp import make_ddp, make_optimizer
    from .workloads import cast_batch, load_workload

    w = load_workload(spec)
    device = ctx.device
    setups = []
    for side in sides:
        net = make_ddp(strategy, w.build().to(device), bucket_mb)
        rec = TimelineRecorder(net) if side == "recorded" else None
        if side == "torch_hook":
            net.register_comm_hook(None, default_hooks.allreduce_hook)
        setups.append((side, net, make_optimizer(strategy, net, optimizer), rec))
    batch = cast_batch(w.make_batch(batch_size, 1000 + ctx.rank), device=device)
    times: dict[str, list[float]] = {side: [] for side in sides}
    for i in range(warmup + steps):
        for side, net, opt, rec in turn_order(setups, i):
            opt.zero_grad(set_to_none=True)
            dist.barrier()
            _sync(device)
            t0 = _perf()
            if rec is None:
                train_step(net, opt, batch, w.loss)  # as bench-ddp steps it
            else:
                recorded_step(rec, t0, net, opt, batch, w.loss)
            _sync(device)
            t = _perf() - t0
            if rec is not None:
                rec.end_step(t)
            if i >= warmup:
                times[side].append(t)
    for _side, _net, _opt, rec in setups:
        if rec is not None:
            rec.detach()
    del setups
    gc.collect()
    return times


def measure_recording_overhead(
    pool: Any,
    spec: str,
    strategy: str,
    bucket_mb: float | None = None,
    batch_size: int | None = None,
    steps: int = 100,
    warmup: int = 5,
    optimizer: str = "sgd",
) -> dict[str, Any]:
    """Step time with and without the timeline recording, interleaved step by step on the same ranks.

    Returns per side the slowest-rank step times with median, p10, p90, and the paired ratios
    (side / plain in the same round; median, p10, p90): drift cancels in them. For torch DDP
    a third side, ``torch_hook``, runs torch's own Python all-reduce hook without stamps.
    """
    from simulator.strategies import spec_for

    from .stats import max_over_ranks, summarize
    from .workloads import load_workload

    sspec = spec_for(strategy, bucket_mb)
    bucket_mb = sspec.bucket_mb
    bs = batch_size or load_workload(spec).default_batch_size
    sides = ("plain", "torch_hook", "recorded") if sspec.strategy.ddp_reducer else ("plain", "recorded")
    per_rank = pool.run(_overhead_task, spec, strategy, bucket_mb, bs, steps, warmup, optimizer, sides)
    out: dict[str, Any] = {
        "model": spec,
        "strategy": strategy,
        "bucket_mb": bucket_mb,
        "batch_size": bs,
        "world_size": pool.world_size,
        "steps": steps,
        "warmup": warmup,
        "sides": list(sides),
    }
    for side in sides:
        t = max_over_ranks([r[side] for r in per_rank])
        s = summarize(t)
        out[side] = {"step_times_s": t, "median_s": s.median_s, "p10_s": s.p10_s, "p90_s": s.p90_s}
    for side in sides[1:]:
        r = summarize([a / b for a, b in zip(out[side]["step_times_s"], out["plain"]["step_times_s"])])
        out[f"ratio_{side}"] = {"median": r.median_s, "p10": r.p10_s, "p90": r.p90_s}
    out["ratio"] = out["ratio_recorded"]
    return out


def _timeline_task(
    ctx: Any,
    spec: str,
    strategy: str,
    bucket_mb: float | None,
    batch_size: int,
    steps: int,
    warmup: int,
    optimizer: str,
    baseline: bool,
    block: int = 1,
    plain: bool = False,
) -> dict[str, Any]:
    """On one rank: recorded steps of one configuration; with ``baseline``, each recorded step alternates
    with a compute-only step of a bare copy of the module (no wrapper, no communication), so the
    baseline sees the same load as the recorded steps (this machine's drifts by tens of percent in minutes).
    With ``plain`` a third side, a copy of the configuration without the recorder, steps first (plain,
    recorded, bare; reversed every turn): what the recording costs, step by step (the plain steps always
    follow a DDP step, the recorded ones half the time: the cost comes out low by up to half the leftover).
    With ``block`` > 1 the sides take turns of one untimed step then ``block`` timed ones (a training job's
    order: a DDP step after a DDP step, a compute-only step after a compute-only one), the turns' order
    reversing each time (``step_record.turn_order``); ``warmup`` then counts turns. At ``block`` 1 a compute-only
    step follows a DDP step in even turns and its own in odd ones (``step_record.bare_follows_ddp``, by which
    ``calibration.step_probe.leftover_fit`` pairs them)."""
    import gc

    from .bench_ddp import N_BATCHES, _loadavg, _sync, train_step
    from .ddp import make_ddp, make_optimizer
    from .records import environment
    from .workloads import cast_batch, load_workload

    w = load_workload(spec)
    device = ctx.device
    net = make_ddp(strategy, w.build().to(device), bucket_mb)
    opt = make_optimizer(strategy, net, optimizer)
    rec = TimelineRecorder(net)
    bare = bare_opt = net_p = opt_p = None
    if baseline:
        bare = w.build().to(device)
        bare_opt = make_optimizer("naive", bare, optimizer)
    if plain:
        net_p = make_ddp(strategy, w.build().to(device), bucket_mb)
        opt_p = make_optimizer(strategy, net_p, optimizer)
    batches = [
        cast_batch(w.make_batch(batch_size, 1000 + k * ctx.world_size + ctx.rank), device=device)
        for k in range(N_BATCHES)
    ]
    times: list[float] = []
    compute: list[float] = []
    plain_times: list[float] = []
    steps_tl: list[dict[str, Any]] = []
    done_of = {"ddp": times, "bare": compute, "plain": plain_times}
    opt_of = {"ddp": opt, "bare": bare_opt, "plain": opt_p}
    # plain first: the recorded steps keep their predecessors (a DDP step in even turns, a compute-only one in
    # odd ones), as without it; the plain steps follow DDP steps
    sides = [s for s, on in (("plain", plain), ("ddp", True), ("bare", baseline)) if on]
    for i in range(warmup + -(-steps // block)):
        batch = batches[i % N_BATCHES]
        for side in turn_order(sides, i):
            done = len(done_of[side])
            n = 1 if block == 1 else 1 + (block if i < warmup else min(block, steps - done))
            for j in range(n):
                timed = i >= warmup and (block == 1 or j > 0)
                opt_of[side].zero_grad(set_to_none=True)
                dist.barrier()
                _sync(device)
                t0 = _perf()
                if side == "ddp":
                    recorded_step(rec, t0, net, opt, batch, w.loss)
                elif side == "plain":
                    train_step(net_p, opt_p, batch, w.loss)
                else:
                    w.loss(bare, batch).backward()
                    bare_opt.step()
                _sync(device)
                t = _perf() - t0
                if side == "ddp":
                    tl = rec.end_step(t)
                    if timed:
                        steps_tl.append(tl)
                if timed:
                    done_of[side].append(t)
    rec.detach()
    out: dict[str, Any] = {"step_times_s": times, "compute_step_times_s": compute, "timeline": steps_tl}
    if plain:
        out["plain_step_times_s"] = plain_times
    if ctx.rank == 0:
        out["env"] = environment(ctx.backend, ctx.world_size, device=device, loadavg=_loadavg())
    del net, opt, rec, bare, bare_opt, net_p, opt_p
    gc.collect()
    return out
