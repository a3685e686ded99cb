"""``ddpsim check``, ``ddpsim profile`` and ``ddpsim bench-ddp``: arguments and handlers.

Registered in ``ddpsim.run_commands``. No torch at import time: handlers import the
modules that run ranks.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from simulator.strategies import STRATEGIES
from simulator.units import MIB, TIB

from .cliutil import (
    add_backend_arg,
    add_csv,
    csv_stdout,
    emit_csv,
    emit_json,
    link_mbit,
    local_world,
    number,
    number_list,
    ranks_phrase,
    spawn_backend,
    strategy_names,
    timeout_s,
    torchrun_backend,
    world_sizes,
)

_QUIET = [False]  # --quiet of the running command (progress lines on stderr)
MAX_MIB = TIB // MIB  # 1 TiB: no bucket or gradient set is larger
bucket_mib = number(float, 0, MAX_MIB, lo_open=True)
steps = number(int, 1, 100_000)
warmup = number(int, 0, 100_000)
batch = number(int, 1, 1 << 20)
lr = number(float, 0, 100, lo_open=True)


def _progress(msg: str) -> None:
    if _QUIET[0]:
        return
    print(msg, file=sys.stderr, flush=True)


def parse_list(text: str, what: str, conv: Any) -> list[Any]:
    out = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            raise ValueError(f"an empty item in the comma list {text!r} ({what})")
        try:
            out.append(conv(item))
        except argparse.ArgumentTypeError as e:  # a ``cliutil.number`` type: its reason is worth saying
            raise ValueError(f"bad {what} {item!r}: {e}") from None
        except ValueError:
            raise ValueError(f"bad {what} {item!r}") from None
    if not out:
        raise ValueError(f"no {what} given")
    return out


def parse_world_sizes(text: str) -> list[int]:
    sizes = parse_list(text, "world size", int)
    if any(n < 1 for n in sizes):
        raise ValueError(f"world sizes must be >= 1, got {sizes}")
    return list(dict.fromkeys(sizes))


def parse_bucket_mbs(text: str | list | None) -> list[float | None]:
    """``1,10,100`` (MiB); ``default`` stands for torch's own default (``bucket_cap_mb=None``)."""
    if text is None:
        return []
    if isinstance(text, list):
        return text

    def conv(s: str) -> float | None:
        if s.lower() in ("default", "none"):
            return None
        return bucket_mib(s)

    return parse_list(text, "bucket size (MiB > 0, or 'default')", conv)


def bucket_mb_list_arg(text: str) -> list[float | None]:
    """argparse type of bench-ddp's ``--bucket-mb``: sizes in MiB or ``default``."""
    import argparse

    try:
        return parse_bucket_mbs(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _check_positive(name: str, v: int | None, minimum: int = 1) -> None:
    if v is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")


class TorchrunGroup:
    """``RankPool``'s ``run`` interface inside a process started by torchrun.

    ``run(fn, ...)`` calls ``fn(ctx, ...)`` on this rank (every rank calls it
    too) and gathers all ranks' results with ``all_gather_object``, so
    ``measure_ddp`` and ``profile_grads`` work unchanged across nodes.
    """

    def __init__(self, ctx: Any):
        import torch

        self.ctx = ctx
        self.world_size = ctx.world_size
        self.backend = ctx.backend
        self.threads_per_rank = torch.get_num_threads()

    @property
    def omp_note(self) -> str | None:
        """``realrun.launch.omp_spin_note`` for the ranks on this node (torchrun's ``LOCAL_WORLD_SIZE`` of them)."""
        import os

        from realrun.launch import omp_spin_note, usable_cpus

        local = int(os.environ.get("LOCAL_WORLD_SIZE", self.world_size))
        return omp_spin_note(self.backend, self.threads_per_rank, None, self.world_size, usable_cpus(), local)

    def run(self, fn: Any, *args: Any, timeout_s: float | None = None, **kwargs: Any) -> list[Any]:
        import torch.distributed as dist

        mine = fn(self.ctx, *args, **kwargs)
        everyone: list[Any] = [None] * self.world_size
        dist.all_gather_object(everyone, mine)
        return everyone


def _under_torchrun(args: Any, body: Any) -> int | None:
    """Run ``body(pool, lead)`` on every torchrun rank (``lead``: rank 0, which prints and writes); None if not under torchrun."""
    import os

    from realrun.launch import run_under_torchrun, torchrun_env_present

    if not torchrun_env_present():
        return None
    world = int(os.environ["WORLD_SIZE"])
    asked = getattr(args, "world_size", None)
    if isinstance(asked, list):
        asked = asked[0] if len(asked) == 1 else ",".join(map(str, asked))
    if asked is not None and str(asked) not in (str(world), ""):
        raise ValueError(f"--world-size {asked} disagrees with torchrun's WORLD_SIZE={world}")
    if getattr(args, "link_mbit", None) is not None:
        raise ValueError("--link-mbit emulates links between spawned ranks; it cannot be used under torchrun")
    return run_under_torchrun(_torchrun_task, body, backend=torchrun_backend(args))


def _torchrun_task(ctx: Any, body: Any) -> int:
    return int(body(TorchrunGroup(ctx), ctx.rank == 0) or 0)


def add_dtype_arg(p: Any) -> None:
    p.add_argument(
        "--dtype",
        default="fp32",
        choices=("fp32", "tf32", "bf16"),
        help="fp32; tf32: CUDA matmuls in TF32 (nccl only); bf16: forward in bf16 autocast (CPU or CUDA). "
        "Parameters and gradients stay fp32; records carry the dtype and the TF32 setting",
    )


def _set_precision(pool: Any, args: Any) -> None:
    """The ``--dtype`` on every rank of ``pool`` (each rank checks it can: tf32 needs CUDA)."""
    from realrun.precision import set_precision_task

    pool.run(set_precision_task, getattr(args, "dtype", "fp32"))


def _check_dtype(args: Any, backend: str) -> None:
    from realrun.precision import check_precision

    check_precision(getattr(args, "dtype", "fp32"), backend == "nccl")


def _workload(spec: str) -> Any:
    from realrun.workloads import load_workload

    return load_workload(spec)


# ---- check -------------------------------------------------------------------------


def add_check_arguments(p: Any) -> None:
    p.add_argument(
        "--model", required=True, help="workload: mlp, cnn, micro-dlrm, gpt[:opts] or path/to/file.py:build_fn"
    )
    p.add_argument("--strategy", default="all", help=f"comma list of {', '.join(STRATEGIES)}, or all (default)")
    p.add_argument("--world-size", type=local_world(2), default=2, help="ranks")
    p.add_argument(
        "--bucket-mb",
        type=bucket_mib,
        default=None,
        help="bucket size in MiB for bucketed (default 1), torch-ddp and sharded (default: torch's, 25 MiB with a "
        "1 MiB first bucket)",
    )
    p.add_argument("--batch-size", type=batch, default=4, help="samples per rank per step")
    p.add_argument("--steps", type=steps, default=3, help="float64 steps compared with single-process training")
    p.add_argument("--accum-steps", type=steps, default=50, help="float32 steps of the loss-vs-accumulation check")
    p.add_argument("--optimizer", default="sgd", choices=("sgd", "adam"), help="optimizer")
    p.add_argument("--lr", type=lr, default=0.01, help="learning rate")
    p.add_argument(
        "--find-unused-parameters",
        dest="find_unused",
        action="store_true",
        help="find_unused_parameters=True (needed by torch-ddp when some parameters get no gradient)",
    )
    p.add_argument("--find-unused", dest="find_unused", action="store_true", help=argparse.SUPPRESS)  # old spelling
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--timeout-s", type=timeout_s, default=600.0, help="a check that takes longer fails, seconds")
    add_backend_arg(p)


def check_main(args: Any) -> int:
    _QUIET[0] = bool(getattr(args, "quiet", False))
    from realrun.check import format_results, run_checks
    from realrun.launch import RankPool

    strategies = strategy_names(args.strategy)
    _check_positive("--world-size", args.world_size, 2)
    _check_positive("--batch-size", args.batch_size)
    _check_positive("--steps", args.steps)
    _check_positive("--accum-steps", args.accum_steps)
    _workload(args.model)  # a bad --model fails here, with its message, before ranks start
    backend = spawn_backend(args, args.world_size)
    with RankPool(args.world_size, backend, timeout_s=args.timeout_s) as pool:
        results = run_checks(
            pool,
            args.model,
            strategies,
            bucket_mb=args.bucket_mb,
            steps=args.steps,
            accum_steps=args.accum_steps,
            batch_size=args.batch_size,
            optimizer=args.optimizer,
            lr=args.lr,
            find_unused=args.find_unused,
        )
    if args.json:
        emit_json(args, [r.to_dict() for r in results])
    else:
        print(format_results(results))
    return 0 if all(r.passed for r in results) else 1


# ---- profile -----------------------------------------------------------------------


def add_profile_arguments(p: Any) -> None:
    p.add_argument(
        "--model", required=True, help="workload: mlp, cnn, micro-dlrm, gpt[:opts] or path/to/file.py:build_fn"
    )
    p.add_argument("--batch-size", type=batch, default=None, help="samples per rank (default: the workload's)")
    p.add_argument(
        "--world-size",
        type=local_world(1),
        default=None,
        help="ranks computing at once, as in the DDP runs to predict (default 2; under torchrun: "
        "its world); no communication",
    )
    p.add_argument("--steps", type=steps, default=30, help="timed steps with hooks, and as many without")
    p.add_argument("--warmup", type=warmup, default=5, help="untimed steps first")
    p.add_argument("--optimizer", default="sgd", choices=("sgd", "adam"), help="optimizer timed")
    p.add_argument(
        "--out", default=None, metavar="PROFILE.json", help="write the profile (simulator format, JSON) here"
    )
    p.add_argument(
        "--records",
        default=None,
        metavar="RECORDS.jsonl",
        help="also append a 'grad_profile' record to this JSONL file",
    )
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.add_argument("--timeout-s", type=timeout_s, default=600.0, help="a run that takes longer fails, seconds")
    add_backend_arg(p)
    add_dtype_arg(p)
    p.set_defaults(_outputs={"out": "file", "records": "jsonl"})


def profile_main(args: Any) -> int:
    _QUIET[0] = bool(getattr(args, "quiet", False))
    from realrun.launch import RankPool
    from realrun.profile_grads import profile_grads

    _check_positive("--world-size", args.world_size)
    _check_positive("--steps", args.steps)
    _check_positive("--warmup", args.warmup, 0)
    world = args.world_size or 2
    _check_positive("--batch-size", args.batch_size)
    if args.out is None and not args.json and args.records is None:
        raise ValueError("say where the profile goes: --out profile.json, --records FILE or --json")
    _workload(args.model)

    def body(pool: Any, lead: bool) -> int:
        _set_precision(pool, args)
        prof = profile_grads(pool, args.model, args.batch_size, args.steps, args.warmup, args.optimizer)
        return _report_profile(prof, args) if lead else 0

    rc = _under_torchrun(args, body)
    if rc is not None:
        return rc
    backend = spawn_backend(args, world)
    _check_dtype(args, backend)
    _progress(
        f"profile: {args.model} ({args.dtype}), {ranks_phrase(world)} computing at once, {args.steps}+{args.steps} steps"
    )
    with RankPool(world, backend, timeout_s=args.timeout_s) as pool:
        return body(pool, True)


def _report_profile(prof: Any, args: Any) -> int:
    from realrun.records import RecordWriter, make_record

    if args.out is not None:
        prof.save(args.out)
    if args.records is not None:
        with RecordWriter(args.records) as w:
            w.write(make_record("grad_profile", prof.env, model=args.model, profile=prof.to_dict()))
    if args.json:
        emit_json(args, prof.to_dict())
        return 0
    info = prof.env["profile"]
    print(
        f"profile of {args.model}: {len(prof.params)} parameter tensors, {prof.total_grad_bytes / MIB:.2f} MiB of gradients"
    )
    print(
        f"  per rank: batch {prof.samples_per_step}, {ranks_phrase(int(prof.env.get('world_size') or 0))} at once, "
        f"{prof.env.get('threads_per_rank')} threads each, optimizer {info['optimizer']}"
    )
    print(
        f"  forward {prof.forward_s * 1e3:.2f} ms, backward {prof.backward_s * 1e3:.2f} ms "
        f"(hooked {info['backward_hooked_s'] * 1e3:.2f} ms, hook-free {info['backward_hookfree_s'] * 1e3:.2f} ms, "
        f"scale {info['hook_scale']:.4f}), optimizer {prof.optimizer_s * 1e3:.2f} ms"
    )
    ready = prof.ready_times_s()
    first = prof.ready_order[0]
    print(
        f"  first gradient ready {ready[first] * 1e3:.2f} ms after backward start ({prof.params[first].name}); "
        f"last at {max(ready) * 1e3:.2f} ms; tail after it {prof.backward_tail_s * 1e3:.2f} ms"
    )
    if args.out is not None:
        print(f"  written to {args.out}")
    return 0


# ---- bench-ddp -----------------------------------------------------------------------


def add_bench_arguments(p: Any) -> None:
    p.add_argument(
        "--model", required=True, help="workload: mlp, cnn, micro-dlrm, gpt[:opts] or path/to/file.py:build_fn"
    )
    p.add_argument(
        "--strategy",
        default="torch-ddp",
        help=f"comma list of {', '.join(STRATEGIES)}, or all (default torch-ddp)",
    )
    p.add_argument(
        "--bucket-mb",
        type=bucket_mb_list_arg,
        default=None,
        help="bucket sizes in MiB, e.g. 1,10,100,1000; 'default' = torch's (25 MiB, 1 MiB first bucket). "
        "Applies to bucketed (required), torch-ddp and sharded; others have no buckets",
    )
    p.add_argument(
        "--bucket-cap-mb-list",
        type=number_list(bucket_mib),
        default=None,
        metavar="MIB,...",
        help="one more torch-ddp/sharded configuration with per-bucket caps in MiB, e.g. 1,4,25 (torch 2.13)",
    )
    p.add_argument(
        "--world-size",
        type=world_sizes(1),
        default=None,
        help="ranks, or a list for a scaling table: 1,2,4 (default 2; under torchrun: its world)",
    )
    p.add_argument("--steps", type=steps, default=20, help="timed steps per configuration")
    p.add_argument(
        "--warmup", type=warmup, default=5, help="untimed steps first (torch DDP rebuilds buckets in step 2)"
    )
    p.add_argument(
        "--rounds",
        type=number(int, 1, 1000),
        default=1,
        help="repeat all configurations this many times, interleaved, so drift on a busy machine "
        "hits them alike; one record per configuration and round",
    )
    p.add_argument("--batch-size", type=batch, default=None, help="samples per rank (default: the workload's)")
    p.add_argument("--optimizer", default="sgd", choices=("sgd", "adam"), help="optimizer")
    p.add_argument(
        "--out",
        default=None,
        metavar="RECORDS.jsonl",
        help="append one 'ddp_step' JSONL record per configuration, as taken (a new file, or one holding ddpsim records)",
    )
    p.add_argument("--json", action="store_true", help="print the records (rounds combined) as JSON")
    p.add_argument(
        "--trace-dir",
        default=None,
        help="save a torch profiler trace (Chrome JSON) of one step per configuration and rank",
    )
    p.add_argument(
        "--link-mbit",
        type=link_mbit,
        default=None,
        metavar="RATE",
        help="run the ranks over an emulated link of this rate, Mbit/s or with units (1Gbit/s); network namespaces + tbf, root only",
    )
    p.add_argument(
        "--timeout-s", type=timeout_s, default=900.0, help="a configuration that takes longer fails, seconds"
    )
    p.add_argument(
        "--timeline",
        default=None,
        metavar="DIR",
        help="after the timed rounds, run each configuration again with per-bucket timelines recorded and "
        "write per configuration a Chrome trace (measured beside predicted), an error decomposition "
        "(JSON) and a PNG here",
    )
    p.add_argument(
        "--params",
        default=None,
        help="params from `ddpsim calibrate` for the predicted side of --timeline (default: calibrate first)",
    )
    add_backend_arg(p)
    add_dtype_arg(p)
    p.set_defaults(_outputs={"out": "jsonl", "trace_dir": "dir", "timeline": "dir"})


def bench_configs(
    strategies: Sequence[str], bucket_mbs: Sequence[float | None], cap_list: Sequence[float] | None
) -> list[tuple[str, float | None, list[float] | None]]:
    """(strategy, bucket_mb, bucket_cap_mb_list) per configuration, in the order they run."""
    from simulator.strategies import CAP_LIST, strategy

    out: list[tuple[str, float | None, list[float] | None]] = []
    if cap_list and not any(strategy(s).accepts_cap_list for s in strategies):
        raise ValueError(
            f"--bucket-cap-mb-list applies to {', '.join(CAP_LIST)}; none of {', '.join(strategies)} takes it"
        )
    for s in strategies:
        entry = strategy(s)
        if entry.bucketed:
            sizes = list(bucket_mbs) or [None]
            if entry.needs_bucket_size:
                sizes = [b for b in sizes if b is not None]
                if not sizes:
                    raise ValueError(f"strategy {s} needs bucket sizes: --bucket-mb 1,10,100")
            out += [(s, b, None) for b in sizes]
            if cap_list and entry.accepts_cap_list:
                out.append((s, None, list(cap_list)))
        else:
            out.append((s, None, None))
    return out


def bench_main(args: Any) -> int:
    _QUIET[0] = bool(getattr(args, "quiet", False))
    from contextlib import nullcontext

    from realrun.bench_ddp import measure_compute, measure_ddp
    from realrun.launch import RankPool
    from realrun.records import RecordWriter

    strategies = strategy_names(args.strategy)
    world_sizes = list(args.world_size) if args.world_size is not None else [2]
    caps = list(args.bucket_cap_mb_list) if args.bucket_cap_mb_list else None
    configs = bench_configs(strategies, parse_bucket_mbs(args.bucket_mb), caps)
    for name, v, lo in (
        ("--steps", args.steps, 1),
        ("--warmup", args.warmup, 0),
        ("--rounds", args.rounds, 1),
        ("--batch-size", args.batch_size, 1),
    ):
        _check_positive(name, v, lo)
    w = _workload(args.model)
    bs = args.batch_size or w.default_batch_size
    params = None  # the predicted side of --timeline: read and checked before anything is measured
    if args.params is not None:
        if not args.timeline:
            raise ValueError("--params is the predicted side of --timeline: give --timeline DIR too, or leave it out")
        from calibration.params import Params

        params = Params.load(args.params)
    from realrun.launch import torchrun_env_present

    backend = "gloo" if torchrun_env_present() else spawn_backend(args, world_sizes, args.link_mbit)
    if not torchrun_env_present():
        _check_dtype(args, backend)
    from realrun.netns import netns_skip_reason

    reason = netns_skip_reason(args.link_mbit)
    if reason:
        _progress(f"bench-ddp: skipped: --link-mbit needs root ({reason})")
        return 0
    records: list[dict[str, Any]] = []

    def run_rounds(pool: Any, writer: Any, lead: bool) -> None:
        say = _progress if lead else (lambda _m: None)
        p = pool.world_size
        if getattr(pool, "omp_note", None):
            say(pool.omp_note)
        _set_precision(pool, args)
        for rnd in range(args.rounds):
            comp = measure_compute(pool, args.model, bs, args.steps, args.warmup, args.optimizer)
            say(f"bench-ddp: P={p} round {rnd + 1}/{args.rounds}: compute only {comp.median_s * 1e3:.2f} ms")
            for strategy, bucket, cap_list in configs:
                rec = measure_ddp(
                    pool,
                    args.model,
                    strategy,
                    bucket,
                    cap_list,
                    bs,
                    args.steps,
                    args.warmup,
                    args.optimizer,
                    compute=comp,
                    trace_dir=args.trace_dir,
                    link_mbit=args.link_mbit,
                )
                d = {**rec.to_dict(), "round": rnd}  # the record as written, and as the report reads files
                writer.write(d)
                records.append(d)
                b = "list" if cap_list else ("-" if bucket is None else f"{bucket:g} MiB")
                say(
                    f"bench-ddp: P={p} {strategy} {b}: {rec.median_s * 1e3:.2f} ms "
                    f"[{rec.p10_s * 1e3:.2f}, {rec.p90_s * 1e3:.2f}], exposed "
                    f"{rec.exposed_comm_s * 1e3:.2f} ms"
                )
            if args.timeline and rnd == args.rounds - 1:
                _bench_timelines(pool, args, configs, bs, say, lead, params)

    def torchrun_body(pool: Any, lead: bool) -> int:
        with RecordWriter(args.out if lead else None) as writer:
            run_rounds(pool, writer, lead)
        return _report_bench(records, args, [pool.world_size]) if lead else 0

    rc = _under_torchrun(args, torchrun_body)
    if rc is not None:
        return rc
    with RecordWriter(args.out) as writer:
        for p in world_sizes:
            net: Any = nullcontext()
            if args.link_mbit is not None and p > 1:
                from realrun.netns import EmulatedNetwork

                net = EmulatedNetwork(p, args.link_mbit)
            with net as n:
                kw = n.pool_kwargs() if n is not None else {}
                with RankPool(p, backend, timeout_s=args.timeout_s, **kw) as pool:
                    run_rounds(pool, writer, True)
    return _report_bench(records, args, world_sizes)


def _bench_timelines(pool: Any, args: Any, configs: Any, bs: int, say: Any, lead: bool, params: Any = None) -> None:
    """``--timeline DIR``: each configuration again with timelines recorded, compared with the prediction from
    ``params`` (``--params``, read before the run), or from a calibration made here first."""
    from pathlib import Path

    from calibration.timeline import timelines_on_pool

    if params is None:
        from calibration.calibrate import CalibrateSpec, calibrate_on_pool

        say("bench-ddp --timeline: no --params: calibrating first")
        out = Path(args.timeline)
        out.mkdir(parents=True, exist_ok=True)
        cal = CalibrateSpec(
            model=args.model,
            world_size=pool.world_size,
            batch_size=bs,
            link_mbit=args.link_mbit,
            records=str(out / "calibration.jsonl") if lead else None,
        )
        params = calibrate_on_pool(pool, cal, say)
        if lead:
            params.save(out / f"params-p{pool.world_size}.json")
    decs = timelines_on_pool(
        pool,
        args.model,
        configs,
        args.timeline,
        params,
        batch_size=bs,
        steps=args.steps,
        warmup=args.warmup,
        optimizer=args.optimizer,
        say=say,
        write=lead,
        meta={"command": "bench-ddp", "link_mbit": args.link_mbit},
    )
    for d in decs:
        print(d["table"], file=sys.stderr if args.json else sys.stdout)


# the table's columns, with units in the names (raw per-step times stay in the JSONL records)
BENCH_CSV_COLUMNS = [
    "model",
    "strategy",
    "bucket_mb",
    "bucket_cap_mb_list",
    "world_size",
    "batch_size",
    "rounds",
    "steps",
    "median_s",
    "p10_s",
    "p90_s",
    "compute_median_s",
    "exposed_comm_s",
    "exposed_comm_share",
    "samples_per_s",
    "tokens_per_s",
    "peak_mem_bytes",
    "link_mbit",
]


def _report_bench(records: list[dict[str, Any]], args: Any, world_sizes: Sequence[int]) -> int:
    from realrun.bench_ddp import combine_records, format_scaling, format_table

    combined = combine_records(records)
    csv_file = emit_csv(args, combined, BENCH_CSV_COLUMNS)
    if csv_stdout(args):
        return 0
    if args.json:
        emit_json(args, combined)
        return 0
    print(format_table(combined))
    if csv_file:
        print(f"csv: {csv_file}")
    if len(world_sizes) > 1:
        print()
        print(format_scaling(combined))
    if args.out:
        print(f"{len(records)} records appended to {args.out}")
    return 0


# ---- registration (called from ddpsim.run_commands) -------------------------------------------


def register_check(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="check the DDP variants on a workload: weights, ranks, loss vs accumulation, sharding (pass/fail)",
        description="Run the correctness checks of realrun.check on real ranks; exit 1 if any fails.",
    )
    add_check_arguments(p)
    p.set_defaults(func=check_main)


def register_profile(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="measure a gradient-ready profile (simulator format) with P ranks computing at once",
        description=(
            "Time forward, backward (when each gradient is ready) and the optimizer step on P ranks that "
            "compute concurrently without communicating, and write a GradProfile."
        ),
    )
    add_profile_arguments(p)
    p.set_defaults(func=profile_main)


def register_bench_ddp(sub: Any) -> None:
    p = sub.add_parser(
        "bench-ddp",
        help="time DDP training steps per strategy and bucket size (median, p10/p90, exposed communication)",
        description=(
            "Warm-up, then timed steps (forward+backward+sync+optimizer, slowest rank per step) per "
            "configuration, a compute-only baseline on the same ranks, throughput and peak memory; "
            "one JSONL record per configuration."
        ),
    )
    add_bench_arguments(p)
    add_csv(p, "the table (one row per configuration)")
    p.set_defaults(func=bench_main)
