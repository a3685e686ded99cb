"""Honest DDP step timing: ``measure_ddp`` on an existing ``RankPool``, one record per configuration.

One configuration = a workload, a strategy (with its bucket size), a world
size and a per-rank batch. On every rank: build the model, wrap it, run
``warmup`` untimed steps (torch DDP rebuilds its buckets in the second), then
``steps`` timed ones. Each step starts after a barrier; the timed region is
forward + backward + ``finish_gradient_synchronization()`` +
``optimizer.step()`` (``zero_grad`` and the barrier are outside; on CUDA the
device is synchronised before each clock read). The step time of a step is
the slowest rank's, since the next step cannot start before it.

The compute-only baseline runs the same loop on the same ranks with the bare
module: no wrapper, no communication (only the untimed barrier), so the ranks
compete for cores exactly as in the DDP runs. ``exposed_comm_s = median_s -
compute_median_s`` is the part of the step communication adds.

Records (kind ``"ddp_step"``, see ``realrun.records``) keep every raw time:
``step_times_s`` (max over ranks), ``rank_step_times_s`` (per rank) and the
baseline's. Peak memory on CPU is the largest ``ru_maxrss`` over ranks, which
is the peak of the worker process so far (a shared pool carries it from one
configuration to the next; ``rss_end_bytes`` is the resident size after this
configuration); on CUDA ``torch.cuda.max_memory_allocated`` after a reset.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from simulator.units import MIB

from .stats import max_over_ranks, summarize
from .step_record import ComputeBaseline, DDPStepRecord, InterleavedResult, TimelineRecord

DEFAULT_STEPS = 20
DEFAULT_WARMUP = 5
N_BATCHES = 4  # distinct batches per rank, cycled


def _loadavg() -> list[float] | None:
    """1, 5 and 15 minute load averages: other work on the machine shows up here."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _memory(device: str) -> dict[str, int]:
    import resource

    out = {"peak_mem_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    try:
        with open("/proc/self/statm") as f:
            out["rss_end_bytes"] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        pass
    if device.startswith("cuda"):
        import torch

        out["peak_mem_bytes"] = int(torch.cuda.max_memory_allocated())
    return out


def train_step(net: Any, opt: Any, batch: Any, loss_of: Callable[[Any, Any], Any]) -> None:
    """One training step as every strategy is driven: the hand-written wrappers' per-step hooks
    (``on_train_batch_start``, ``finish_gradient_synchronization``) where they exist, then the optimizer."""
    start = getattr(net, "on_train_batch_start", None)
    if start is not None:
        start()
    loss_of(net, batch).backward()
    finish = getattr(net, "finish_gradient_synchronization", None)
    if finish is not None:
        finish()
    opt.step()


def _step_task(
    ctx: Any,
    spec: str,
    strategy: str,
    bucket_mb: float | None,
    bucket_cap_mb_list: Sequence[float] | None,
    batch_size: int,
    steps: int,
    warmup: int,
    optimizer: str,
    trace_path: str | None,
) -> dict[str, Any]:
    """On one rank: warm-up and timed steps of ``strategy`` (``"compute"``: the bare module, no communication)."""
    import time

    import torch
    import torch.distributed as dist

    from .ddp import make_ddp, make_optimizer
    from .records import environment
    from .workloads import cast_batch, load_workload

    w = load_workload(spec)
    device = ctx.device
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    model = w.build().to(device)
    net: Any
    if strategy == "compute":
        net = model
        opt = make_optimizer("naive", model, optimizer)
    else:
        net = make_ddp(strategy, model, bucket_mb, bucket_cap_mb_list)
        opt = make_optimizer(strategy, net, optimizer)
    batches = [
        cast_batch(w.make_batch(batch_size, 1000 + k * ctx.world_size + ctx.rank), device=device)
        for k in range(N_BATCHES)
    ]
    loss_of = w.loss
    perf = time.perf_counter

    def one_step(batch: Any, net: Any = net, opt: Any = opt) -> None:
        train_step(net, opt, batch, loss_of)

    times: list[float] = []
    for i in range(warmup + steps):
        batch = batches[i % N_BATCHES]
        opt.zero_grad(set_to_none=True)
        dist.barrier()
        _sync(device)
        t0 = perf()
        one_step(batch)
        _sync(device)
        t = perf() - t0
        if i >= warmup:
            times.append(t)
    out: dict[str, Any] = {"step_times_s": times, **_memory(device)}
    if trace_path is not None:
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
        opt.zero_grad(set_to_none=True)
        dist.barrier()
        with profile(activities=acts) as prof:
            one_step(batches[0])
            _sync(device)
        path = Path(trace_path.format(rank=ctx.rank))
        path.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(path))
        out["trace_file"] = str(path)
    if ctx.rank == 0:
        out["env"] = environment(ctx.backend, ctx.world_size, device=device, loadavg=_loadavg())
    del net, opt, model, batches, one_step
    gc.collect()  # hooks make reference cycles: free this model before the next configuration
    return out


def _interleaved_task(
    ctx: Any,
    spec: str,
    configs: Sequence[tuple[Any, ...]],
    batch_size: int,
    steps: int,
    warmup: int,
    optimizer: str,
    block: int = 1,
) -> list[list[float]]:
    """Every configuration built side by side (own model copy each), stepped in turn: A B C, C B A, A B C, ...
    with an untimed step of the turn's second configuration before each turn after the first (A B C, b C B
    A, b A B C: no timed step follows a step of its own model). With ``block`` > 1 each turn is one
    untimed step (the switch from another configuration's model) then up to ``block`` timed ones, as a
    training job's steps follow steps of the same model; ``warmup`` counts turns (``block + 1`` steps
    each)."""
    import time

    import torch.distributed as dist

    from .ddp import make_ddp, make_optimizer
    from .workloads import cast_batch, load_workload

    w = load_workload(spec)
    device = ctx.device
    setups = []
    for strategy, bucket_mb, *rest in configs:
        caps = rest[0] if rest else None
        model = w.build().to(device)
        if strategy == "compute":
            setups.append((model, make_optimizer("naive", model, optimizer)))
        else:
            net = make_ddp(strategy, model, bucket_mb, caps)
            setups.append((net, make_optimizer(strategy, net, optimizer)))
    batch = cast_batch(w.make_batch(batch_size, 1000 + ctx.rank), device=device)
    times: list[list[float]] = [[] for _ in configs]

    def step(net: Any, opt: Any) -> float:
        """One training step of a configuration, every rank released together; its time on this rank."""
        opt.zero_grad(set_to_none=True)
        dist.barrier()
        _sync(device)
        t0 = time.perf_counter()
        train_step(net, opt, batch, w.loss)
        _sync(device)
        return time.perf_counter() - t0

    turns = warmup + -(-steps // block)
    for i in range(turns):
        order = list(range(len(setups))) if i % 2 == 0 else list(reversed(range(len(setups))))
        if block == 1 and i > 0 and len(order) > 1:
            # the reversed order starts with the configuration the turn before ended with: a step of
            # the next one in between, untimed, so that no timed step follows its own model's (warm:
            # micro-DLRM's 4-6 % faster), as none does between the ends
            step(*setups[order[1]])
        for k in order:
            n = 1 if block == 1 else 1 + (block if i < warmup else min(block, steps - len(times[k])))
            for j in range(n):
                dt = step(*setups[k])
                if i >= warmup and (block == 1 or j > 0):
                    times[k].append(dt)
    del setups
    gc.collect()
    return times


def measure_interleaved(
    pool: Any,
    workload_spec: str,
    configs: Sequence[tuple[Any, ...]],
    batch_size: int | None = None,
    steps: int = DEFAULT_STEPS,
    warmup: int = DEFAULT_WARMUP,
    optimizer: str = "sgd",
    block: int = 1,
) -> list[InterleavedResult]:
    """An A/B comparison robust to drift: configurations alternate step by step on the same ranks
    (or ``block`` timed steps at a time, each turn after one untimed step).

    ``configs``: ``(strategy, bucket_mb)`` pairs, or ``(strategy, bucket_mb,
    bucket_cap_mb_list)`` triples, strategy ``"compute"`` for
    the bare module. All are built at once (one model copy each); each round
    of steps runs them in turn, reversing the order every round. Returns per
    configuration the raw step times (slowest rank per step) with median,
    p10, p90, and ``ratio_to_first``: the median over steps of this
    configuration's time divided by the first configuration's time in the same
    round (the paired ratio; slow drifts cancel in it).
    """
    from .workloads import load_workload

    if len(configs) < 1:
        raise ValueError("give at least one configuration")
    if not isinstance(block, int) or isinstance(block, bool) or block < 1:
        raise ValueError(f"block must be a whole number >= 1, got {block!r}")
    bs = batch_size or load_workload(workload_spec).default_batch_size
    configs = [tuple(c) for c in configs]
    per_rank = pool.run(_interleaved_task, workload_spec, configs, bs, steps, warmup, optimizer, block)
    out: list[InterleavedResult] = []
    first = max_over_ranks([r[0] for r in per_rank])
    for k, (strategy, bucket_mb, *rest) in enumerate(configs):
        times = max_over_ranks([r[k] for r in per_rank])
        s = summarize(times)
        ratios = [t / f for t, f in zip(times, first)]
        out.append(
            InterleavedResult(
                strategy=strategy,
                bucket_mb=bucket_mb,
                bucket_cap_mb_list=tuple(rest[0]) if rest and rest[0] else None,
                model=workload_spec,
                batch_size=bs,
                world_size=pool.world_size,
                steps=steps,
                warmup=warmup,
                step_times_s=tuple(times),
                median_s=s.median_s,
                p10_s=s.p10_s,
                p90_s=s.p90_s,
                ratio_to_first=summarize(ratios).median_s,
                ratios_to_first=tuple(ratios),
            )
        )
    return out


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_")[:80]


def trace_path_template(
    trace_dir: str | Path, spec: str, strategy: str, bucket_mb: float | None, world_size: int
) -> str:
    b = "default" if bucket_mb is None else f"{bucket_mb:g}MB"
    name = f"{_safe(spec)}_{strategy}_{b}_p{world_size}_rank{{rank}}.trace.json"
    return str(Path(trace_dir) / name)


def measure_compute(
    pool: Any,
    workload_spec: str,
    batch_size: int | None = None,
    steps: int = DEFAULT_STEPS,
    warmup: int = DEFAULT_WARMUP,
    optimizer: str = "sgd",
) -> ComputeBaseline:
    """The compute-only baseline on ``pool``: per step the slowest rank's forward+backward+optimizer time."""
    from .workloads import load_workload

    bs = batch_size or load_workload(workload_spec).default_batch_size
    per_rank = pool.run(_step_task, workload_spec, "compute", None, None, bs, steps, warmup, optimizer, None)
    times = max_over_ranks([r["step_times_s"] for r in per_rank])
    s = summarize(times)
    return ComputeBaseline(
        model=workload_spec,
        batch_size=bs,
        optimizer=optimizer,
        world_size=pool.world_size,
        step_times_s=tuple(times),
        median_s=s.median_s,
        p10_s=s.p10_s,
        p90_s=s.p90_s,
    )


def measure_ddp(
    pool: Any,
    workload_spec: str,
    strategy: str,
    bucket_mb: float | None = None,
    bucket_cap_mb_list: Sequence[float] | None = None,
    batch_size: int | None = None,
    steps: int = DEFAULT_STEPS,
    warmup: int = DEFAULT_WARMUP,
    optimizer: str = "sgd",
    compute: ComputeBaseline | None = None,
    trace_dir: str | Path | None = None,
    link_mbit: float | None = None,
) -> DDPStepRecord:
    """Time one DDP configuration on ``pool``'s ranks; returns its record (``DDPStepRecord``, written as a
    ``"ddp_step"`` record by its ``to_dict``).

    ``compute``: a ``measure_compute`` result of the same workload, batch and
    optimizer on the same pool, to share one baseline across configurations;
    measured here when ``None``. ``link_mbit``: the emulated link rate the
    pool runs over, recorded as given. Raises ``RunFailure`` if a rank fails.
    """
    from simulator.strategies import spec_for

    from .workloads import load_workload

    spec = spec_for(strategy, bucket_mb, bucket_cap_mb_list)  # the simulator's registry checks it, before ranks
    bucket_mb, bucket_cap_mb_list = spec.bucket_mb, spec.bucket_cap_mb_list
    if steps < 1 or warmup < 0:
        raise ValueError(f"need steps >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}")
    w = load_workload(workload_spec)
    bs = batch_size or w.default_batch_size
    if compute is None:
        compute = measure_compute(pool, workload_spec, bs, steps, warmup, optimizer)
    elif (compute.model, compute.batch_size, compute.optimizer, compute.world_size) != (
        workload_spec,
        bs,
        optimizer,
        pool.world_size,
    ):
        raise ValueError("the compute baseline given is of another workload, batch size, optimizer or world size")
    trace = None
    if trace_dir is not None:
        trace = trace_path_template(trace_dir, workload_spec, strategy, bucket_mb, pool.world_size)
    per_rank = pool.run(
        _step_task,
        workload_spec,
        strategy,
        bucket_mb,
        list(bucket_cap_mb_list) if bucket_cap_mb_list else None,
        bs,
        steps,
        warmup,
        optimizer,
        trace,
    )
    rank_times = [r["step_times_s"] for r in per_rank]
    times = max_over_ranks(rank_times)
    s = summarize(times)
    p = pool.world_size
    exposed = s.median_s - compute.median_s
    env = dict(per_rank[0].get("env", {}))
    env["threads_per_rank"] = getattr(pool, "threads_per_rank", env.get("torch_threads"))
    return DDPStepRecord(
        env=env,
        model=workload_spec,
        strategy=strategy,
        bucket_mb=bucket_mb,
        bucket_cap_mb_list=tuple(bucket_cap_mb_list) if bucket_cap_mb_list else None,
        world_size=p,
        backend=pool.backend,
        batch_size=bs,
        optimizer=optimizer,
        steps=steps,
        warmup=warmup,
        step_times_s=tuple(times),
        rank_step_times_s=tuple(tuple(ts) for ts in rank_times),
        median_s=s.median_s,
        p10_s=s.p10_s,
        p90_s=s.p90_s,
        compute_step_times_s=compute.step_times_s,
        compute_median_s=compute.median_s,
        compute_p10_s=compute.p10_s,
        compute_p90_s=compute.p90_s,
        exposed_comm_s=exposed,
        exposed_comm_share=exposed / s.median_s if s.median_s > 0 else None,
        samples_per_s=p * bs / s.median_s,
        tokens_per_s=p * bs * w.tokens_per_sample / s.median_s,
        tokens_per_sample=w.tokens_per_sample,
        peak_mem_bytes=max(r["peak_mem_bytes"] for r in per_rank),
        rss_end_bytes=max(r.get("rss_end_bytes", 0) for r in per_rank),
        link_mbit=link_mbit,
        trace_files=tuple(r["trace_file"] for r in per_rank if "trace_file" in r) or None,
    )


def measure_timeline(
    pool: Any,
    workload_spec: str,
    strategy: str,
    bucket_mb: float | None = None,
    batch_size: int | None = None,
    steps: int = DEFAULT_STEPS,
    warmup: int = DEFAULT_WARMUP,
    optimizer: str = "sgd",
    baseline: bool = True,
    block: int = 1,
    plain: bool = False,
) -> TimelineRecord:
    """Steps of one configuration with per-bucket timelines recorded (``realrun.timeline``) on every rank.

    With ``baseline`` every recorded step alternates with a compute-only step of a bare copy of
    the module on the same ranks (``compute_step_times_s``, slowest rank per step); with ``block`` > 1
    the two take turns of one untimed step then ``block`` timed ones, a training job's order
    (``warmup`` then counts turns); with ``plain`` a copy of the configuration without the recorder steps
    beside them too (``plain_step_times_s``, slowest rank per step: what the recording costs). Returns a
    ``TimelineRecord``: ``step_times_s`` (slowest rank per step), ``rank_step_times_s``,
    ``rank_timelines`` (``rank_timelines[r][k]`` is rank ``r``'s timeline of timed step ``k``, times
    relative to that rank's step start), the compute-only steps and their median, and the load
    average before and after.
    """
    from simulator.strategies import spec_for

    from .workloads import load_workload

    bucket_mb = spec_for(strategy, bucket_mb).bucket_mb  # the simulator's registry checks it, before ranks
    if steps < 1 or warmup < 0:
        raise ValueError(f"need steps >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}")
    if not isinstance(block, int) or isinstance(block, bool) or block < 1:
        raise ValueError(f"block must be a whole number >= 1, got {block!r}")
    from .timeline import _timeline_task

    bs = batch_size or load_workload(workload_spec).default_batch_size
    load_before = _loadavg()
    per_rank = pool.run(
        _timeline_task, workload_spec, strategy, bucket_mb, bs, steps, warmup, optimizer, baseline, block, plain
    )
    load_after = _loadavg()
    rank_times = [r["step_times_s"] for r in per_rank]
    comp = max_over_ranks([r["compute_step_times_s"] for r in per_rank]) if baseline else []
    return TimelineRecord(
        model=workload_spec,
        strategy=strategy,
        bucket_mb=bucket_mb,
        world_size=pool.world_size,
        backend=pool.backend,
        batch_size=bs,
        optimizer=optimizer,
        steps=steps,
        warmup=warmup,
        block=block,
        plain_step_times_s=tuple(max_over_ranks([r["plain_step_times_s"] for r in per_rank])) if plain else (),
        step_times_s=tuple(max_over_ranks(rank_times)),
        rank_step_times_s=tuple(tuple(ts) for ts in rank_times),
        rank_timelines=tuple(tuple(r["timeline"]) for r in per_rank),
        compute_step_times_s=tuple(comp),
        compute_median_s=summarize(comp).median_s if comp else None,
        env=per_rank[0].get("env", {}),
        loadavg_before=tuple(load_before) if load_before is not None else None,
        loadavg_after=tuple(load_after) if load_after is not None else None,
    )


def format_table(records: Sequence[dict[str, Any]]) -> str:
    """One row per record: step time median [p10, p90], compute, exposed communication, throughput, memory."""
    head = (
        f"{'model':<14} {'strategy':<10} {'bucket_mb':>9} {'P':>2} {'step_ms':>8} {'p10':>7} {'p90':>7} "
        f"{'compute':>8} {'exposed':>8} {'share':>6} {'samples/s':>10} {'tokens/s':>10} {'peak_MiB':>8}"
    )
    lines = [head]
    for r in records:
        b = "-" if r["bucket_mb"] is None else f"{r['bucket_mb']:g}"
        if r.get("bucket_cap_mb_list"):
            b = "list"
        share = r.get("exposed_comm_share")
        lines.append(
            f"{r['model'][:14]:<14} {r['strategy']:<10} {b:>9} {r['world_size']:>2} "
            f"{r['median_s'] * 1e3:8.2f} {r['p10_s'] * 1e3:7.2f} {r['p90_s'] * 1e3:7.2f} "
            f"{r['compute_median_s'] * 1e3:8.2f} {r['exposed_comm_s'] * 1e3:8.2f} "
            f"{'' if share is None else f'{share * 100:5.1f}%':>6} {r['samples_per_s']:10.1f} "
            f"{r['tokens_per_s']:10.0f} {r['peak_mem_bytes'] / MIB:8.0f}"
        )
    return "\n".join(lines)


def format_scaling(records: Sequence[dict[str, Any]]) -> str:
    """Throughput against world size per (strategy, bucket): speed-up and efficiency relative to the smallest P."""
    groups: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for r in records:
        key = (r["strategy"], r["bucket_mb"] if not r.get("bucket_cap_mb_list") else tuple(r["bucket_cap_mb_list"]))
        groups.setdefault(key, []).append(r)
    lines = [
        f"{'strategy':<10} {'bucket_mb':>9} {'P':>2} {'tokens/s':>10} {'samples/s':>10} {'speedup':>8} {'efficiency':>10}"
    ]
    for (strategy, bucket), rs in groups.items():
        rs = sorted(rs, key=lambda r: r["world_size"])
        base = rs[0]
        for r in rs:
            speed = r["samples_per_s"] / base["samples_per_s"]
            eff = speed * base["world_size"] / r["world_size"]
            b = "-" if bucket is None else (f"{bucket:g}" if not isinstance(bucket, tuple) else "list")
            lines.append(
                f"{strategy:<10} {b:>9} {r['world_size']:>2} {r['tokens_per_s']:10.0f} "
                f"{r['samples_per_s']:10.1f} {speed:8.2f} {eff * 100:9.1f}%"
            )
    return "\n".join(lines)


def _config_key(r: dict[str, Any]) -> tuple[Any, ...]:
    caps = tuple(r["bucket_cap_mb_list"]) if r.get("bucket_cap_mb_list") else None
    return (
        r["model"],
        r["strategy"],
        r["bucket_mb"],
        caps,
        r["world_size"],
        r["batch_size"],
        r.get("optimizer"),
        r.get("link_mbit"),
    )


def combine_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per configuration: the raw times of its rounds concatenated, statistics recomputed.

    Records of one configuration (same model, strategy, bucket, world size,
    batch, optimizer, link) taken in several rounds become one with
    ``rounds`` = how many; order of first appearance is kept.
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(_config_key(r), []).append(r)
    out = []
    for rs in groups.values():
        base = dict(rs[0])
        base.pop("round", None)
        times = [t for r in rs for t in r["step_times_s"]]
        comp = [t for r in rs for t in r["compute_step_times_s"]]
        n_ranks = len(rs[0]["rank_step_times_s"])
        s, c = summarize(times), summarize(comp)
        p, bs = base["world_size"], base["batch_size"]
        exposed = s.median_s - c.median_s
        base.update(
            rounds=len(rs),
            steps=sum(r["steps"] for r in rs),
            step_times_s=times,
            rank_step_times_s=[[t for r in rs for t in r["rank_step_times_s"][k]] for k in range(n_ranks)],
            median_s=s.median_s,
            p10_s=s.p10_s,
            p90_s=s.p90_s,
            compute_step_times_s=comp,
            compute_median_s=c.median_s,
            compute_p10_s=c.p10_s,
            compute_p90_s=c.p90_s,
            exposed_comm_s=exposed,
            exposed_comm_share=exposed / s.median_s if s.median_s > 0 else None,
            samples_per_s=p * bs / s.median_s,
            tokens_per_s=p * bs * base.get("tokens_per_sample", 1) / s.median_s,
            peak_mem_bytes=max(r["peak_mem_bytes"] for r in rs),
            rss_end_bytes=max(r.get("rss_end_bytes", 0) for r in rs),
        )
        out.append(base)
    return out
