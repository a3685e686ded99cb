"""``ddpsim predict`` and ``ddpsim sweep``: the simulator's commands (no torch, answers in well under a second)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from simulator.network import CostModel, NetworkSpec, list_networks, load_network
from simulator.predict import MAX_WORLD_SIZE
from simulator.profile import GradProfile
from simulator.strategies import BUCKETED, STRATEGIES, StrategySpec
from simulator.units import MIB, TIB
from simulator.zoo import FLOPS_DTYPES

from .cliutil import add_csv, csv_stdout, emit_csv, emit_json, gbps_both, number, number_list, ranks_phrase, rate
from .resolve import DEFAULT_NETWORK
from .stated import SPREAD_MAX_REPEATS, FlopsSource, StatedInputs, model_profile, preset_network, stated_inputs

# ---- argument types (argparse turns their ArgumentTypeError into one line, exit 2) ----
# One number type for every flag of every command (ddpsim.cliutil.number): finite, bounded.

MAX_MIB = TIB // MIB  # 1 TiB: no bucket or gradient set is larger
positive_float = number(float, 0, 1e12, lo_open=True)
nonneg_float = number(float, 0, 1e12)
positive_int = number(int, 1, 1 << 31)
bucket_mib = number(float, 0, MAX_MIB, lo_open=True)
float_list = number_list(bucket_mib)
o_us = number(float, 0, 1e7)  # up to 10 s per call
w_rate = rate(1e9, "GB/s", 1e6, 1e-6)  # a plain number is GB/s (1 kB/s at least); 100GB/s, 400Gbit/s accepted
contention = number(float, 0, 100)
jitter = number(float, 0, 3)  # lognormal sigma: 3 already means x20 at one sigma
sim_world = number(int, 1, MAX_WORLD_SIZE)
seed = number(int, 0, 2**32 - 1)


# ---- shared options ---------------------------------------------------------------
def add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument(
        "--model",
        default=None,
        help="built-in model name (see `ddpsim models`) or a profile JSON written by `ddpsim profile` "
        "(default: the profile in --params, else gpt2-small)",
    )
    g.add_argument(
        "--batch-size",
        type=number(int, 1, 1 << 20),
        default=None,
        help="per-rank batch size, samples (built-in models; default: the model's)",
    )
    g.add_argument(
        "--device",
        default=None,
        help="device spec for FLOP-based compute (default: the model's own device, shown by `ddpsim models`)",
    )
    g.add_argument(
        "--dtype",
        default=None,
        choices=tuple(FLOPS_DTYPES),
        help="compute dtype of FLOP-based compute: the device's peak of it, times its MFU (default: the device "
        "spec's own dtype; the gradients, and so the communication, keep the model's parameter dtype)",
    )
    g.add_argument(
        "--compute-scale",
        type=number(float, 0, 1e6, lo_open=True),
        default=1.0,
        help="multiply every compute time by this factor",
    )


def add_network_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("network (a preset, a calibration, or o and w given directly)")
    g.add_argument(
        "--network",
        default=None,
        help=f"preset name or JSON file (default {DEFAULT_NETWORK}); built-in: {', '.join(list_networks())}",
    )
    g.add_argument(
        "--params",
        default=None,
        help="fitted parameters from `ddpsim calibrate` (cost model and, unless --model is given, the profile)",
    )
    add_o_w_args(g)
    g.add_argument(
        "--channels",
        type=number(int, 1, 64),
        default=None,
        help="collectives in flight at once (NCCL 1, gloo 2; default from the preset)",
    )
    g.add_argument(
        "--pipelined",
        choices=("on", "off"),
        default=None,
        help="one channel that hands a queued call off while the call before it transfers (calls launched "
        "back to back cost max(o, n/w) each; on replaces a preset's channels with one); default: as calibrate "
        "decided from its stream probe, off for presets",
    )
    g.add_argument(
        "--contention",
        type=contention,
        default=None,
        help="compute slowdown while communicating: compute runs 1+c times slower, c <= 100 (default 0 or fitted)",
    )


def add_o_w_args(g: Any) -> None:
    """``--o-us`` and ``--w`` (bandwidth with units; ``--w-gbps`` is the old spelling)."""
    g.add_argument(
        "--o-us", type=o_us, default=None, help="per-call all-reduce overhead o, microseconds (overrides the preset)"
    )
    g.add_argument(
        "--w",
        dest="w_gbps",
        type=w_rate,
        default=None,
        metavar="RATE",
        help="all-reduce algorithm bandwidth w (nccl-tests algbw): a number is GB/s = 1e9 bytes/s; "
        "or with units: 100GB/s, 400Gbit/s, 800Mbit/s (overrides the preset)",
    )
    g.add_argument("--w-gbps", dest="w_gbps", type=w_rate, default=None, help=argparse.SUPPRESS)  # the old spelling


def add_strategy_args(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    g = p.add_argument_group("strategy")
    g.add_argument(
        "--strategy", choices=STRATEGIES, default="torch-ddp", help="data-parallel strategy (default torch-ddp)"
    )
    if sweep:
        g.add_argument(
            "--bucket-mb", type=float_list, default=None, help="explicit bucket sizes in MiB, e.g. 1,4,25,100"
        )
    else:
        g.add_argument(
            "--bucket-mb",
            type=bucket_mib,
            default=None,
            help="bucket size in MiB as torch's bucket_cap_mb (torch-ddp: unset = 25 MiB with a 1 MiB first bucket)",
        )
        g.add_argument(
            "--bucket-cap-mb-list",
            dest="bucket_mb_list",
            type=float_list,
            default=None,
            metavar="MIB,...",
            help="per-bucket caps in MiB (torch 2.13 bucket_cap_mb_list), e.g. 1,4,25",
        )
        g.add_argument(
            "--bucket-mb-list", dest="bucket_mb_list", type=float_list, help=argparse.SUPPRESS
        )  # old spelling
    g.add_argument(
        "--find-unused-parameters",
        action="store_true",
        help="torch DDP find_unused_parameters=True (no bucket rebuild)",
    )
    g.add_argument("--static-graph", action="store_true", help="torch DDP static_graph=True")
    g.add_argument(
        "--gradient-as-bucket-view", action="store_true", help="torch DDP gradient_as_bucket_view=True (no copy-out)"
    )
    g.add_argument(
        "--accum-steps",
        type=number(int, 1, 10000),
        default=1,
        help="micro-batches per step with no_sync() on all but the last",
    )


DEFAULT_SIM_WORLD = 8  # predict's and sweep's ranks without --world-size or --params


def add_sim_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("simulation")
    g.add_argument(
        "--world-size",
        type=sim_world,
        default=None,
        help=f"number of ranks p (default: the world size --params were measured at, else {DEFAULT_SIM_WORLD})",
    )
    g.add_argument("--ranks", type=number(int, 1, 256), default=1, help="ranks simulated explicitly (1 stands for all)")
    g.add_argument(
        "--jitter", type=jitter, default=0.0, help="per-rank compute jitter, lognormal sigma, <= 3 (default 0: none)"
    )
    g.add_argument("--repeats", type=number(int, 1, 1000), default=9, help="seeded repetitions when jitter > 0")
    g.add_argument("--seed", type=seed, default=0, help="random seed of the jitter (default 0)")


# ---- resolution -------------------------------------------------------------------
def _profile_and_flops(args: argparse.Namespace, params: Any = None) -> tuple[GradProfile, FlopsSource | None]:
    """The profile (``ddpsim.stated.model_profile``): --model (a built-in name, a model description or a profile
    JSON), else the one in --params, else gpt2-small; and where its compute came from FLOPs, its source."""
    for flag in ("model", "device", "network"):
        if getattr(args, flag, None) == "":
            raise ValueError(f"--{flag} is empty: give a name or a path, or leave the flag out for the default")
    model: str | GradProfile = args.model or "gpt2-small"
    in_params = params.profile(Path(args.params).parent) if args.model is None and params is not None else None
    if in_params is not None:
        model = in_params
    return model_profile(
        model,
        batch_size=args.batch_size,
        device=args.device,
        dtype=args.dtype,
        compute_scale=args.compute_scale,
        flags={"batch_size": "--batch-size", "device": "--device", "dtype": "--dtype"},
    )


def resolve_cost(args: argparse.Namespace, world_size: int, params: Any = None) -> CostModel:
    """The CLI's flags through the one resolver (``ddpsim.resolve``): fitted params unless --network is given."""
    from .resolve import resolve_cost as _resolve

    return _resolve(
        args.network,
        params=params if args.network is None else None,
        world_size=world_size,
        o_us=args.o_us,
        w_gbps=args.w_gbps,
        **_cost_flags(args),
    )


def _cost_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The flags set on top of any network: channels, pipelining, contention (``ddpsim.resolve``)."""
    return {
        "channels": args.channels,
        "pipelined": None if args.pipelined is None else args.pipelined == "on",
        "contention": args.contention,
    }


DEFAULT_POINTS = 64  # sweep's log grid


def resolve_strategy(args: argparse.Namespace) -> StrategySpec:
    if isinstance(getattr(args, "bucket_mb", None), float) and getattr(args, "bucket_mb_list", None):
        raise ValueError("--bucket-mb and --bucket-cap-mb-list both set the caps: give one")
    return StrategySpec(
        name=args.strategy,
        bucket_mb=args.bucket_mb if isinstance(getattr(args, "bucket_mb", None), float) else None,  # sweep: a grid
        bucket_cap_mb_list=tuple(args.bucket_mb_list) if getattr(args, "bucket_mb_list", None) else None,
        find_unused_parameters=args.find_unused_parameters,
        static_graph=args.static_graph,
        gradient_as_bucket_view=args.gradient_as_bucket_view,
        accum_steps=args.accum_steps,
        first_step=getattr(args, "first_step", False),
    )


def load_params(path: str) -> Any:
    """Fitted parameters of ``ddpsim calibrate`` (``calibration.params.Params``): the one reader of
    ``--params`` for predict, sweep and tune; a ``ValueError`` names the file and the field."""
    from calibration.params import Params

    return Params.load(path)


def _resolve_all(args: argparse.Namespace) -> tuple[GradProfile, CostModel, int, Any, StatedInputs | None]:
    """Profile, cost model, world size, the fitted params they came from (``None`` without --params), and the
    ranges the preset and the device state for them (``ddpsim.stated``; None where none apply)."""
    params = load_params(args.params) if args.params else None
    if args.world_size is None:  # the calibration's own p: a prediction at another is an extrapolation, asked for
        args.world_size = params.world_size if params is not None else DEFAULT_SIM_WORLD
    if not isinstance(args.world_size, int) or args.world_size < 1:
        raise ValueError(f"--world-size must be >= 1, got {args.world_size}")
    prof, flops = _profile_and_flops(args, params)
    cost = resolve_cost(args, args.world_size, params)
    # the preset's stated ranges hold where its figures are what the prediction uses: not --params, not o/w flags
    o_w = args.o_us is not None or args.w_gbps is not None
    network = preset_network(args.network, fitted=params is not None and args.network is None, o_w_given=o_w)
    stated = stated_inputs(prof, cost, flops=flops, network=network, cost_kw=_cost_flags(args))
    return prof, cost, args.world_size, params, stated


def prediction_interval(
    args: argparse.Namespace,
    params: Any,
    prof: GradProfile,
    cost: CostModel,
    spec: StrategySpec,
    p: int,
    steps: int | None = None,
):
    """The 80 % interval (``simulator.interval``) of the median step of a long run (``steps=None``), of
    the median of ``steps`` steps, or of one step (``steps=1``), when the network comes from fitted
    ``params`` (the o/w fit's 95 % intervals, the in-step probe's refits and the profile's measured
    step-to-step backward times), else ``None``. Each draw is predicted as the point is (``--ranks``,
    ``--jitter``, ``--repeats``, ``--seed``), so the interval is of the same quantity."""
    from simulator.interval import measured_backward_s, step_interval

    if no_interval_reason(args, params) is not None:
        return None
    unc = params.uncertainty(measured_backward_s(prof), world_size=p)
    kw = {"ranks": args.ranks, "jitter_sigma": args.jitter, "repeats": args.repeats, "seed": args.seed}
    return step_interval(prof, cost, spec, p, unc, steps=steps, **kw)


def kept_term_note(args: argparse.Namespace, params: Any, p: int) -> str | None:
    """Where one of --o-us and --w is given: the other term's value and where it came from (the network the
    flags replace, as one line through the size ``CostModel.linear_at`` takes); ``None`` otherwise."""
    if (args.o_us is None) == (args.w_gbps is None):
        return None
    base = resolve_cost(argparse.Namespace(**{**vars(args), "o_us": None, "w_gbps": None}), p, params)
    o_s, w = base.linear_at(p)
    kept = f"w = {gbps_both(w)}" if args.o_us is not None else f"t0 = {o_s * 1e6:.1f} us"
    given = "--o-us" if args.o_us is not None else "--w"
    src = (
        f"the preset {args.network or DEFAULT_NETWORK}"
        if args.network is not None or params is None
        else "the network fitted in --params"
    )
    return (
        f"{given} given; {kept} kept from {src}'s all-reduce at p = {p} and 25 MiB calls: one line through that "
        f"size replaces its levels, its algorithm choice by size and any ranges it states"
    )


def no_interval_reason(args: argparse.Namespace, params: Any) -> str | None:
    """Why a prediction has no interval (``None``: it has one): only a network fitted by ``calibrate`` carries
    its measurement errors."""
    given = [f for f, v in (("--o-us", args.o_us), ("--w", args.w_gbps)) if v is not None]
    if params is None:
        net = f"given by {' and '.join(given)}" if given else f"the preset {args.network or DEFAULT_NETWORK}"
        return f"the network is {net}, not fitted from measurements (--params)"
    if args.network is not None:
        return f"--network {args.network} replaces the network fitted in --params"
    if given:
        return f"{' and '.join(given)} replace{'s' if len(given) == 1 else ''} terms fitted in --params"
    return None


# ---- output -----------------------------------------------------------------------
def _ms(s: float) -> str:
    return f"{s * 1e3:10.3f}"


def strategy_label(s: StrategySpec) -> str:
    if s.bucket_cap_mb_list:
        return f"{s.name} bucket_cap_mb_list={list(s.bucket_cap_mb_list)}"
    if s.strategy.ddp_reducer:
        return f"{s.name} bucket_cap_mb={s.bucket_mb if s.bucket_mb is not None else 'unset (25, first 1 MiB)'}"
    if s.strategy.bucketed:
        return f"{s.name} bucket_mb={s.bucket_mb}"
    return s.name


def _dtype_of(prof: GradProfile) -> str:
    """`` in DTYPE`` for a profile from FLOPs (the peak its compute ran at: float32 where TF32 was asked of a
    device without TF32 units), else nothing."""
    dt = prof.env.get("compute_dtype") if prof.source.startswith("flops:") else None
    return f" in {dt}" if dt else ""


def print_prediction(res: Any, prof: GradProfile, out: Any = None) -> None:
    w = (out or sys.stdout).write
    w(
        f"{prof.model}: {sum(p.numel for p in prof.trainable) / 1e6:.1f}M params, "
        f"{res.total_grad_bytes / MIB:.1f} MiB of gradients, {prof.source} compute{_dtype_of(prof)}\n"
    )
    w(f"{ranks_phrase(res.world_size)}, {strategy_label(res.strategy)}, network {res.cost_label}\n")
    if res.network_provenance:
        w(f"{res.network_provenance['text']}\n")
    w("\n")
    w(f"  step time      {_ms(res.step_time_s)} ms")
    if res.repeats > 1:
        w(f"   (p10 {res.step_time_p10_s * 1e3:.3f}, p90 {res.step_time_p90_s * 1e3:.3f} over {res.repeats} seeds)")
    w("\n")
    w(f"  compute        {_ms(res.compute_s)} ms   (no communication)\n")
    share = res.overhead_s / res.step_time_s * 100 if res.step_time_s else 0.0
    w(f"  exposed comm   {_ms(res.overhead_s)} ms   ({share:.1f}% of the step)\n")
    w(f"  comm busy      {_ms(res.comm_busy_s)} ms   ({res.n_collectives} collectives)\n\n")
    rows = res.rows
    show = rows if len(rows) <= 24 else rows[:12] + rows[-12:]
    w(f"  {'#':>4} {'name':<28} {'MiB':>9} {'params':>6} {'ready ms':>10} {'start ms':>10} {'end ms':>10}\n")
    for k, r in enumerate(show):
        if len(rows) > 24 and k == 12:
            w(f"  {'...':>4} ({len(rows) - 24} more)\n")
        w(
            f"  {r.index:>4} {r.name[:28]:<28} {r.msg_bytes / MIB:>9.3f} {r.n_params:>6} "
            f"{r.ready_s * 1e3:>10.3f} {r.start_s * 1e3:>10.3f} {r.end_s * 1e3:>10.3f}\n"
        )


# ---- commands ---------------------------------------------------------------------
def cmd_predict(args: argparse.Namespace) -> int:
    from simulator.predict import predict

    prof, cost, p, params, stated = _resolve_all(args)
    spec = resolve_strategy(args)
    res = predict(
        prof,
        cost,
        spec,
        p,
        ranks=args.ranks,
        jitter_sigma=args.jitter,
        repeats=args.repeats,
        seed=args.seed,
        record_events=bool(args.trace),
    )
    first = None
    if spec.strategy.ddp_reducer and not spec.first_step and not spec.bucket_cap_mb_list:
        first = predict(
            prof,
            cost,
            replace(spec, first_step=True),
            p,
            ranks=args.ranks,
            jitter_sigma=args.jitter,
            repeats=args.repeats,
            seed=args.seed,
        )
    if args.trace:
        from simulator.trace import write_chrome_trace

        write_chrome_trace(args.trace, res.events, {"model": prof.model, "strategy": spec.to_dict(), "world_size": p})
    from simulator.engine import BucketRow

    # the per-bucket rows; their header even where there are none (one rank communicates nothing)
    csv_file = emit_csv(args, [r.to_dict() for r in res.rows], [f.name for f in fields(BucketRow)])
    if csv_stdout(args):
        return 0
    iv = prediction_interval(args, params, prof, cost, spec, p)
    iv1 = prediction_interval(args, params, prof, cost, spec, p, steps=1)
    kept = kept_term_note(args, params, p)
    kw = {"ranks": args.ranks, "jitter_sigma": args.jitter, "repeats": args.repeats, "seed": args.seed}
    spread = stated.spread(spec, p, **kw) if stated is not None else None
    if args.json:
        d = res.to_dict()
        d["first_step_time_s"] = first.step_time_s if first else None
        d["trace"] = args.trace
        d["interval"] = iv.to_dict() if iv is not None else None
        d["single_step_interval"] = iv1.to_dict() if iv1 is not None else None
        d["stated_ranges"] = {"spread": spread.to_dict()} if spread is not None else None
        d["kept_term"] = kept
        d["csv"] = csv_file
        emit_json(args, d)
    else:
        print_prediction(res, prof)
        if kept is not None:
            print(f"  note: {kept}")
        if iv is not None and iv1 is not None:
            print(f"  step time {iv.describe_ms()} (from {', '.join(iv.sources)})")
            print(f"  step time {iv1.describe_ms()}")
        else:
            print(f"  no interval: {no_interval_reason(args, params)}")
        for line in spread.describe() if spread is not None else ():
            print(f"  {line}")
        if first is not None:
            print(f"\n  first step (one bucket before DDP's rebuild): {first.step_time_s * 1e3:.3f} ms")
        if args.trace:
            print(f"  trace: {args.trace} (open in https://ui.perfetto.dev)")
        if csv_file:
            print(f"  bucket rows: {csv_file}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from simulator.sweep import default_grid_mb, log_grid_mb, sweep

    prof, cost, p, params, stated = _resolve_all(args)
    kept = kept_term_note(args, params, p)
    spec = replace(resolve_strategy(args), bucket_mb=None)  # --bucket-mb here is the grid, not one size
    if not spec.strategy.bucketed:
        raise ValueError(f"--strategy {spec.name} has no bucket size to sweep; use one of {', '.join(BUCKETED)}")
    given = [
        flag for flag, v in (("--bucket-mb", args.bucket_mb), ("--grid", args.grid), ("--points", args.points)) if v
    ]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)} each choose the sizes swept: give one")
    if args.bucket_mb:
        grid = sorted(set(args.bucket_mb))
    elif args.grid is not None:
        try:
            parts = args.grid.split(":")
            if len(parts) != 3:
                raise ValueError(f"got {args.grid!r}")
            lo, hi, n = parts
            lo_mb, hi_mb, points = bucket_mib(lo), bucket_mib(hi), number(int, 2, 10000)(n)
            if not lo_mb < hi_mb:
                raise ValueError(f"LO {lo} must be below HI {hi}")
            grid = log_grid_mb(lo_mb, hi_mb, points)
        except (ValueError, argparse.ArgumentTypeError) as e:
            raise ValueError(f"--grid must be LO:HI:N in MiB (e.g. 0.1:1000:64): {e}") from None
    else:
        grid = default_grid_mb(prof, args.points or DEFAULT_POINTS)
    res = sweep(
        prof,
        cost,
        replace(spec, bucket_mb=grid[0]),
        p,
        grid,
        **(kw := {"ranks": args.ranks, "jitter_sigma": args.jitter, "repeats": args.repeats, "seed": args.seed}),
    )
    csv_file = emit_csv(args, res.to_dict()["rows"])
    if csv_stdout(args):
        return 0
    ends = _sweep_ends(stated, spec, p, grid, kw, res.best_bucket_mb) if stated is not None else None
    if args.plot:
        from simulator.sweep_plot import plot_sweep

        plot_sweep(res.to_dict(), args.plot, stated=ends[1] if ends is not None else None)
    if args.json:
        d = res.to_dict()
        d["plot"] = args.plot
        d["csv"] = csv_file
        d["stated_ranges"] = ends[1] if ends is not None else None
        d["kept_term"] = kept
        emit_json(args, d)
        return 0
    out = sys.stdout.write
    out(
        f"{prof.model}: {res.total_grad_bytes / MIB:.1f} MiB of gradients, {ranks_phrase(p)}, {spec.name}, network {res.cost_label}\n"
    )
    if res.network_provenance:
        out(f"{res.network_provenance['text']}\n")
    if kept is not None:
        out(f"note: {kept}\n")
    out(f"compute (no communication) {res.best.compute_s * 1e3:.3f} ms\n\n")
    out(f"  {'bucket MiB':>11} {'buckets':>7} {'step ms':>11} {'exposed ms':>11}\n")
    for mb, r in zip(res.bucket_mb, res.rows):
        mark = "  <- best" if r is res.best else ""
        out(f"  {mb:>11.4g} {r.n_collectives:>7} {r.step_time_s * 1e3:>11.3f} {r.overhead_s * 1e3:>11.3f}{mark}\n")
    cf = res.closed
    out(
        f"\nbest bucket: {res.best_bucket_mb:.4g} MiB -> step {res.best.step_time_s * 1e3:.3f} ms, exposed {res.best.overhead_s * 1e3:.3f} ms\n"
    )
    out(
        f"closed form (o={cf.o_s * 1e6:.1f} us, w={gbps_both(cf.w_bytes_per_s)}, s={cf.total_grad_bytes / MIB:.1f} MiB): "
        f"b* = sqrt(s w o) = {cf.best_bucket_mb:.4g} MiB, T_min = 2 sqrt(s o / w) = {cf.t_min_s * 1e3:.3f} ms\n"
    )
    if ends is not None:
        out(f"{ends[0]}\n")
    if args.plot:
        out(f"plot: {args.plot}\n")
    if csv_file:
        out(f"csv: {csv_file}\n")
    return 0


def _sweep_ends(
    stated: StatedInputs, spec: StrategySpec, p: int, grid: list[float], kw: dict[str, Any], best_mb: float
) -> tuple[str, dict[str, Any]] | None:
    """The best bucket of the grid with every stated value at the end that shortens the step alone, and at the
    end that lengthens it (the ends found at the point's best bucket), with their line (``ddpsim.stated``)."""
    from simulator.sweep import sweep

    few = {**kw, "repeats": min(kw["repeats"], SPREAD_MAX_REPEATS)}
    curves: list[list[float]] = []  # the step over the grid at the short end, then at the long

    def best_at(prof: GradProfile, cost: CostModel) -> float:
        sw = sweep(prof, cost, replace(spec, bucket_mb=grid[0]), p, grid, **few)
        curves.append([r.step_time_s for r in sw.rows])
        return sw.best_bucket_mb

    ends = stated.ends(replace(spec, bucket_mb=best_mb), p, best_at, "the best bucket", **kw)
    if ends is not None:
        ends[1]["short_end_step_s"], ends[1]["long_end_step_s"] = curves
    return ends


def _model_row(name: str) -> dict[str, Any]:
    """What ``ddpsim models`` says of a built-in model: its summary (``simulator.zoo.model_summary``) and whether
    ``tune`` runs it here (``simulator.zoo.RUN_HERE``) or predicts it from its FLOPs only."""
    from simulator import zoo

    return {**zoo.model_summary(name), "runs_here": name in zoo.RUN_HERE}


def cmd_models(args: argparse.Namespace) -> int:
    from simulator import zoo

    rows = [_model_row(name) for name in zoo.list_models()]
    if args.json:
        nets = {name: load_network(name) for name in list_networks()}
        emit_json(
            args,
            {
                "models": [r["name"] for r in rows],
                "model_details": rows,
                "devices": zoo.list_devices(),
                "networks": [{"name": n, "description": net.description} for n, net in nets.items()],
            },
        )
        return 0
    print("models (params, gradients, default batch and device; `tune` runs the four marked * here, the others are")
    print("predicted from their FLOPs):")
    for r in rows:
        print(
            f"  {r['name']:<20}{'*' if r['runs_here'] else ' '} {r['n_params'] / 1e6:>10,.1f} M {r['grad_mib']:>11,.1f} MiB"
            f"  batch {r['default_batch_size']}, {r['default_device']}"
        )
    print("devices:")
    for name in zoo.list_devices():
        print(f"  {name}")
    print("networks:")
    for name in list_networks():
        net: NetworkSpec = load_network(name)
        print(f"  {name:<16} {net.description}")
    return 0


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "predict", help="predict one step's time and exposed communication", description=cmd_predict.__doc__
    )
    add_model_args(p)
    add_network_args(p)
    add_strategy_args(p)
    add_sim_args(p)
    p.add_argument(
        "--first-step", action="store_true", help="model DDP's first iteration (one bucket) instead of the steady state"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--trace", default=None, metavar="OUT.json", help="write the predicted step as a Chrome trace")
    add_csv(p, "the per-bucket rows (index, name, msg_bytes, n_params, ready_s, start_s, end_s)")
    p.set_defaults(func=cmd_predict, _outputs={"trace": "file"})

    s = sub.add_parser("sweep", help="predict step time over bucket sizes and find the best one")
    add_model_args(s)
    add_network_args(s)
    add_strategy_args(s, sweep=True)
    add_sim_args(s)
    s.add_argument(
        "--points",
        type=number(int, 2, 10000),
        default=None,
        help=f"grid points, log-spaced over the model's sizes (default {DEFAULT_POINTS})",
    )
    s.add_argument("--grid", default=None, metavar="LO:HI:N", help="explicit log grid in MiB")
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.add_argument(
        "--plot",
        default=None,
        metavar="OUT.png",
        help="write step time and exposed overhead vs bucket size (.png, .pdf or .svg, by the name's ending)",
    )
    add_csv(s, "the rows (bucket_mb, n_buckets, step_time_s and its p10/p90, overhead_s)")
    s.set_defaults(func=cmd_sweep, _outputs={"plot": "figure"})

    m = sub.add_parser("models", help="list built-in models, devices and networks")
    m.add_argument("--json", action="store_true", help="print the lists as JSON")
    m.set_defaults(func=cmd_models)
