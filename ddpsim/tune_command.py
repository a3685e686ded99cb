"""``ddpsim tune``: profile, calibrate, sweep, recommend -- and optionally verify for real.

Phases, each with a progress line and elapsed time on stderr:

1. profile the model on this machine (or ``--profile`` measured elsewhere);
2. calibrate the network on this machine (or ``--params``, ``--network``,
   ``--o-us``/``--w``);
3. sweep strategies, bucket sizes and a non-uniform cap list in the simulator;
4. print the answer, then write the sweep plot, the predicted Chrome trace,
   ``tune.json`` and a Markdown report into ``--out-dir``;
5. ``--verify``: run the recommended and the default setting (and
   ``--verify-grid`` sizes) for real on this machine, and compare.

Ranks are started once and shared by every phase that needs them. Ctrl-C
stops cleanly: ranks and namespaces are removed, records taken so far stay in
``--out-dir``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from realrun.stats import VERIFY_MIN_SECONDS
from simulator.jsonio import dumps_finite, write_whole
from simulator.network import CostModel
from simulator.profile import GradProfile
from simulator.strategies import CommPlan, StrategySpec, comm_plan
from simulator.zoo import FLOPS_DTYPES

from .cliutil import (
    add_backend_arg,
    add_min_seconds_arg,
    add_out_dir,
    emit_json,
    link_mbit,
    local_world,
    number,
    ranks_phrase,
    spawn_backend,
)
from .report import format_verify, report_md, run_info, write_outputs
from .sim_commands import add_o_w_args, float_list, load_params, sim_world
from .stated import FlopsSource, model_profile
from .tuner import TuneResult, format_tune, recommend, with_files
from .verification import Verification, VerifyRow, row_name

# calibration.calibrate (scipy) and realrun (torch) are imported inside the handlers:
# `ddpsim predict` builds this parser and must stay fast.


def _target_profile(args: argparse.Namespace, batch_size: int) -> tuple[GradProfile, str]:
    """Compute of ``--model`` on ``--target-device``: each kernel on the roofline of the device spec
    (``ddpsim.device_model``), with efficiencies fitted to ``--calibrate-device-from`` when given."""
    from .device_model import bound_line, efficiency_from_profile, roofline_profile

    eff, how = None, "the spec's efficiencies"
    if args.calibrate_device_from:
        eff, cal = efficiency_from_profile(args.calibrate_device_from, args.target_device)
        how = (
            f"efficiencies fitted to {cal['model']} measured on it in {cal['precision']} (matmul {eff.matmul:.3f}, "
            f"memory {eff.memory:.3f}, launch {eff.launch_s * 1e6:.2f} us)"
        )
    prof, _table = roofline_profile(args.model, batch_size, args.target_device, args.dtype, eff)
    note = (
        f"compute from the roofline of each kernel on device {args.target_device} ({args.dtype}, {how}): "
        f"forward {prof.forward_s * 1e3:.2f} ms, backward {prof.backward_s * 1e3:.2f} ms; {bound_line(prof)}"
    )
    return prof, note


def _verify(
    pool: Any, args: argparse.Namespace, res: TuneResult, prof: GradProfile, cost: CostModel, say: Any, records: str
) -> Verification:
    """Run the recommended and default settings (and the grid) for real, interleaved with a compute-only
    baseline (one step a turn, or turns of several steps where the step is short, as ``validate``) so this
    box's drift hits all alike; records written per round."""
    from calibration.validate import (
        auto_block,
        machine_noise,
        measure_beside_compute,
        order_cost,
        rescaled_profile,
        round_medians,
        turns_note,
        typical_step_s,
    )
    from realrun.bench_ddp import _loadavg
    from realrun.cpushare import OtherWork
    from realrun.records import RecordWriter, environment
    from realrun.stats import paired_gap_interval, percentile, summarize
    from simulator.predict import predict

    bs = prof.samples_per_step
    # where tune says "keep the default", the default is what it recommends, and is judged as such
    rec_spec = StrategySpec("torch-ddp", bucket_mb=None if res.keep_default else res.recommended_bucket_mb)
    named: list[tuple[str, StrategySpec]] = [("recommended", rec_spec), ("default", StrategySpec("torch-ddp"))]
    if res.recommended_bucket_mb_list:
        named.append(("recommended_list", StrategySpec("torch-ddp", bucket_cap_mb_list=res.recommended_bucket_mb_list)))
    named += [(f"grid {mb:g}", StrategySpec("torch-ddp", bucket_mb=mb)) for mb in args.verify_grid or ()]
    # settings that make the same buckets are one configuration: measured once, under all their names (two
    # measurements of one configuration differ by the noise alone, and the lower would pass for "the best")
    groups: list[tuple[list[str], StrategySpec, CommPlan]] = []
    for label, spec in named:
        plan = comm_plan(prof, spec, pool.world_size)
        same = next((g for g in groups if g[2] == plan), None)
        if same is None:
            groups.append(([label], spec, plan))
        else:
            same[0].append(label)
    settings = [(row_name(names), spec) for names, spec, _ in groups]
    i_dflt = next(i for i, (names, _, _) in enumerate(groups) if "default" in names)
    rounds = 2
    say(f"verify: {len(settings)} settings and a compute-only baseline interleaved, on {pool.world_size} real ranks")
    env = environment(pool.backend, pool.world_size, link_mbit=args.link_mbit)
    load_before = _loadavg()
    est = typical_step_s(prof, cost, [s for _, s in settings], pool.world_size)
    block = auto_block(est)
    with RecordWriter(records) as w, OtherWork(getattr(pool, "pids", [])) as other:
        per_round, times, compute = measure_beside_compute(
            pool,
            args.model,
            [s for _, s in settings],
            [label for label, _ in settings],
            bs,
            rounds=rounds,
            steps=args.steps,
            warmup=args.warmup,
            optimizer="sgd",
            group_size=len(settings),
            writer=w,
            env=env,
            link_mbit=args.link_mbit,
            say=say,
            min_seconds=args.min_seconds,
            block=block,  # as validate measures: a training job's order where the step is short
            est_step_s=est if args.min_seconds else None,
        )
    noise = machine_noise(compute[0], load_before, other.cores)  # said under the verify table
    comp = summarize(compute[0]).median_s
    retimed_prof, scale = rescaled_profile(prof, comp)
    rows = []
    for (label, spec), ts in zip(settings, times):
        m = summarize(ts)
        pred = predict(prof, cost, spec, pool.world_size).step_time_s  # the headline's prediction of this setting
        retimed = predict(retimed_prof, order_cost(cost, True, block), spec, pool.world_size).step_time_s
        rows.append(
            VerifyRow(
                setting=label,
                bucket_mb=spec.bucket_mb,
                bucket_cap_mb_list=tuple(spec.bucket_cap_mb_list) if spec.bucket_cap_mb_list else None,
                measured_median_s=m.median_s,
                measured_p10_s=m.p10_s,
                measured_p90_s=m.p90_s,
                predicted_step_s=pred,
                retimed_predicted_step_s=retimed,
                error_pct=(retimed - m.median_s) / m.median_s * 100,
                round_medians_s=round_medians(ts, rounds),
            )
        )
        say(
            f"verify {label}: measured {m.median_s * 1e3:.2f} ms (p10 {m.p10_s * 1e3:.2f}, p90 {m.p90_s * 1e3:.2f}), "
            f"predicted {pred * 1e3:.2f} ms, re-timed to the measured compute {retimed * 1e3:.2f} ms"
        )
    i_best = min(range(len(rows)), key=lambda i: rows[i].measured_median_s)
    best, recm, dflt = rows[i_best], rows[0], rows[i_dflt]
    # how sure the gap to the best is: step k of each setting ran side by side, so they are resampled in pairs
    # (the best is picked as the lowest of several noisy medians, which favours finding a gap)
    gap_ci = paired_gap_interval(times[0], times[i_best]) if i_best != 0 else None
    # the gain step by step: the settings ran interleaved (in turns of a few steps where the step is short), so
    # step k of each ran close in time to the others' step k
    paired = [(d - r) / d * 100 for r, d in zip(times[0], times[i_dflt])]
    gain_lo, gain_hi = percentile(paired, 10), percentile(paired, 90)
    return Verification(
        method=f"interleaved with a compute-only baseline, {rounds} rounds x {per_round} steps"
        + turns_note(block)
        + "; "
        f"error_pct compares the measured median with the prediction re-timed to the measured baseline "
        f"(compute x{scale:.3f})",
        world_size=pool.world_size,
        steps=per_round * rounds,
        measured_compute_s=comp,
        profile_compute_s=prof.compute_s,
        compute_scale=scale,
        rows=tuple(rows),
        recommended_measured_s=recm.measured_median_s,
        recommended_measured_p10_s=recm.measured_p10_s,
        recommended_measured_p90_s=recm.measured_p90_s,
        default_measured_s=dflt.measured_median_s,
        default_measured_p10_s=dflt.measured_p10_s,
        default_measured_p90_s=dflt.measured_p90_s,
        best_measured_setting=best.setting,
        recommended_vs_best_measured_pct=(recm.measured_median_s - best.measured_median_s)
        / best.measured_median_s
        * 100,
        measured_gain_vs_default_pct=(dflt.measured_median_s - recm.measured_median_s) / dflt.measured_median_s * 100,
        measured_gain_p10_p90_pct=(gain_lo, gain_hi),
        measured_gain_within_noise=gain_lo <= 0 <= gain_hi,
        median_abs_error_pct=statistics.median(abs(r.error_pct) for r in rows),
        machine_noise=noise,
        recommended_vs_best_ci_pct=gap_ci,
        recommended_behind_beyond_noise=None if gap_ci is None else gap_ci[0] > 0,
    )


def _zoo_profile(args: argparse.Namespace) -> tuple[GradProfile, FlopsSource] | None:
    """The profile of ``--model`` where it names a model of the simulator's zoo (``ddpsim models``, or a model
    description file, ``ddpsim.model/1``, as ``predict`` reads it: no code to run here), its compute from FLOPs on
    ``--target-device`` (else the model's own default device, as ``predict``); ``None`` for a workload run here or
    where ``--profile`` gives the compute. Flags that only apply to a model run here are refused, one line each;
    ``--dtype`` is the compute dtype whose peak the device's MFU applies to (default: the spec's own), and with it
    the device where its spec has no peak for it."""
    from simulator import zoo
    from simulator.jsonio import read_json
    from simulator.profile import PROFILE_SCHEMA

    model = args.model
    if model is None or args.profile is not None or model in zoo.RUN_HERE:
        return None
    if model not in zoo.list_models():
        if not (model.endswith(".json") and Path(model).is_file()):
            return None
        d = read_json(model, "model")
        if isinstance(d, dict) and d.get("schema") == PROFILE_SCHEMA:
            raise ValueError(f"--model {model} is a profile ({PROFILE_SCHEMA}): give it as --profile {model}")
        if zoo.model_spec_in(d, model) is None:
            return None  # not a model description: the workload loader says what is wrong with it
    why = f"{model} is a model of the simulator's zoo (`ddpsim models`), with no code to run here"
    for flag, given in (
        ("--verify", args.verify),
        ("--calibrate-device-from", args.calibrate_device_from),
        ("--link-mbit", args.link_mbit is not None),
    ):
        if given:
            raise ValueError(
                f"{why}: {flag} applies to a model run on this machine ({', '.join(zoo.RUN_HERE)}, or a module)"
            )
    # a dtype the device has no peak for: one line, exit 2
    prof, flops = model_profile(model, batch_size=args.batch_size, device=args.target_device, dtype=args.dtype)
    assert flops is not None  # a model description, by the checks above
    return prof, flops


def _resolve_tune_cost(args: argparse.Namespace, base: CostModel | None, params: Any) -> CostModel:
    """The cost model of ``tune`` through ``ddpsim.resolve``: ``base`` (just calibrated), ``--params`` or
    ``--network`` (not both), then ``--o-us``/``--w-gbps`` at ``--world-size``."""
    from .resolve import resolve_cost

    if params is not None and args.network is not None:
        raise ValueError("give --params or --network, not both (both describe the network)")
    return resolve_cost(
        base if base is not None else args.network,
        params=params,
        world_size=args.world_size,
        o_us=args.o_us,
        w_gbps=args.w_gbps,
    )


def cmd_tune(args: argparse.Namespace) -> int:
    from calibration.progress import Progress  # the fits (scipy) load only where something is measured

    say = Progress(not args.quiet, prefix="tune")
    notes: list[str] = []
    found = _zoo_profile(args)  # a model of the zoo: predicted only, on a preset or given network
    zoo_prof, zoo_flops = found if found is not None else (None, None)
    if zoo_prof is not None:
        args.model = zoo_prof.model  # a model file's own name
    elif args.dtype is None:
        args.dtype = "fp32"  # the ranks' precision here
    given_prof: GradProfile | None = GradProfile.load(args.profile) if args.profile else zoo_prof  # bad file: exit 2
    if args.model is None:
        args.model = given_prof.model if given_prof is not None else "gpt"
    elif given_prof is not None and given_prof.model != args.model and (args.verify or args.target_device):
        raise ValueError(
            f"--profile {args.profile} was measured for model {given_prof.model!r}, not --model {args.model!r}: "
            "--verify and --target-device would run another model than the profile describes"
        )
    elif given_prof is not None and given_prof.model != args.model:
        raise ValueError(
            f"--profile {args.profile} describes model {given_prof.model!r}; --model {args.model!r} would be ignored: "
            "leave it out, or give that model's profile"
        )
    if args.profile is not None and args.batch_size is not None:
        raise ValueError(
            f"--batch-size applies when profiling here; --profile {args.profile} was measured at batch "
            f"{given_prof.samples_per_step}"
        )
    given_params = load_params(args.params) if args.params else None  # the reader of predict --params too
    if args.world_size is None:  # this machine's run where it is verified, else as predict's: the params' world size,
        from .sim_commands import DEFAULT_SIM_WORLD  # else 8 for a zoo model, else this machine's run

        if args.verify or (given_params is None and zoo_prof is None):
            args.world_size = args.run_world_size
        else:
            args.world_size = given_params.world_size if given_params is not None else DEFAULT_SIM_WORLD
    if args.verify_grid and not args.verify:
        raise ValueError("--verify-grid needs --verify (the grid is run for real beside the recommended setting)")
    if args.verify and args.world_size != args.run_world_size:
        raise ValueError(f"--verify runs on this machine: use --world-size {args.run_world_size} (or --run-world-size)")
    if args.calibrate_device_from and not args.target_device:
        raise ValueError("--calibrate-device-from fits a device's efficiencies: give --target-device too")
    if args.target_device and zoo_prof is None:
        from simulator import zoo

        from .device_model import PRECISIONS

        dev = zoo.load_device(args.target_device)  # an unknown device or a bad file: exit 2 now
        dev.peak_for(*PRECISIONS[args.dtype])  # a dtype the device has no peak for: exit 2 now
        if args.calibrate_device_from:  # not a profile, not a measured one, or one the fit cannot use: exit 2 now
            from .device_model import efficiency_from_profile

            efficiency_from_profile(args.calibrate_device_from, dev)
    need_cal = args.params is None and args.network is None and args.o_us is None and zoo_prof is None
    if zoo_prof is not None:
        notes.append(
            f"compute of {args.model} from its FLOPs on device {zoo_prof.source.split(':', 1)[-1]} "
            f"({zoo_prof.env.get('compute_dtype')}; predicted only)"
        )
        if args.params is None and args.network is None:
            from .resolve import DEFAULT_NETWORK

            given = " and ".join(f for f, v in (("o", args.o_us), ("w", args.w_gbps)) if v is not None)
            notes.append(
                f"network: the preset {DEFAULT_NETWORK} (no --network or --params given)"
                + (f", its {given} replaced as given" if given else "")
            )
    # the network, through the one resolver, before any rank starts (calibrated costs are resolved after)
    given_cost = None if need_cal else _resolve_tune_cost(args, None, given_params)
    if args.link_mbit is not None:
        from realrun.netns import netns_skip_reason

        reason = netns_skip_reason(args.link_mbit)
        if reason:
            raise ValueError(f"--link-mbit: {reason}")
    if given_prof is None:
        from realrun.workloads import load_workload  # torch: a model run here

        try:
            wl = load_workload(args.model)  # a user module that does not import or fit fails here, exit 2
        except ValueError as e:
            if str(e).startswith("unknown workload"):
                raise ValueError(f"{e}; or a model of the simulator's zoo, predicted only (`ddpsim models`)") from None
            raise
        bs = args.batch_size or wl.default_batch_size
    else:
        bs = None
    run_world = args.run_world_size
    need_ranks = need_cal or given_prof is None or args.verify
    backend = spawn_backend(args, run_world, args.link_mbit) if need_ranks else args.backend
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)  # a given --out-dir after every check: bad input leaves no folder behind

    def plan(pool: Any | None) -> int:
        prof: GradProfile | None = given_prof
        cost: CostModel | None = None
        fitted = None  # the calibration the cost model came from, if any: its fit's intervals feed the prediction's
        if pool is not None and pool.omp_note:
            notes.append(pool.omp_note)
        if need_cal:
            from calibration.calibrate import CalibrateSpec, calibrate_on_pool

            say(
                f"calibrating the network on {run_world} local ranks"
                + (f" over {args.link_mbit:g} Mbit/s links" if args.link_mbit else "")
            )
            params = calibrate_on_pool(
                pool,
                CalibrateSpec(
                    model=args.model,
                    backend=backend,
                    world_size=run_world,
                    batch_size=bs,
                    link_mbit=args.link_mbit,
                    records=str(out_dir / "calibration.jsonl"),
                ),
                say,
            )
            params.save(out_dir / "params.json")
            cost, fitted = _resolve_tune_cost(args, params.cost_model(), None), params
            if prof is None:
                prof = params.profile()
        else:
            fitted, cost = given_params, given_cost
        assert cost is not None  # resolved above: calibrated here, or given
        if prof is None:
            from realrun.profile_grads import profile_grads

            say(f"profiling {args.model} (batch {bs}) on {run_world} local ranks")
            prof = profile_grads(pool, args.model, batch_size=bs)
        if args.target_device and zoo_prof is None:
            prof, note = _target_profile(args, prof.samples_per_step)
            notes.append(note)
        say(f"sweeping strategies and bucket sizes for {ranks_phrase(args.world_size)}")
        from simulator.interval import Uncertainty, measured_backward_s

        compute_steps = () if args.target_device or zoo_prof is not None else measured_backward_s(prof)
        if fitted is not None and args.o_us is None and args.w_gbps is None:
            unc = fitted.uncertainty(compute_steps)
        else:
            unc = Uncertainty.from_fit(compute_samples_s=compute_steps)
        # the ranges a zoo model's device and a preset network state (not a calibration's, --params', o/w's)
        from .stated import preset_network, stated_inputs

        o_w = args.o_us is not None or args.w_gbps is not None
        network = preset_network(args.network, fitted=need_cal or args.params is not None, o_w_given=o_w)
        stated = stated_inputs(prof, cost, flops=zoo_flops, network=network)
        res = recommend(prof, cost, args.world_size, notes=notes, uncertainty=unc, stated=stated)
        verify = None
        if args.verify:
            verify = _verify(pool, args, res, prof, cost, say, str(out_dir / "verify.jsonl"))
        files = write_outputs(res, prof, cost, out_dir)
        res = with_files(res, files, verify, run=run_info(args))
        write_whole(files["result"], dumps_finite(res.to_dict()) + "\n")
        write_whole(files["report"], report_md(res))
        if args.json:
            emit_json(args, res.to_dict())
        else:
            print(format_tune(res))
            if verify:
                print("\n" + format_verify(verify))
            print(f"\nwrote {files['report']}, {files['sweep_plot']}, {files['trace']}, {files['result']}")
        return 0

    if not need_ranks:
        return plan(None)
    from calibration.calibrate import open_pool
    from realrun.precision import set_precision_task

    local = args.dtype if (args.dtype != "tf32" or backend == "nccl") else "fp32"
    if local != args.dtype:
        notes.append("--dtype tf32 applies to CUDA: the ranks here measured in fp32")
    with open_pool(run_world, backend, args.link_mbit, 900.0) as pool:
        pool.run(set_precision_task, local)
        return plan(pool)


def add_tune_command(sub: Any, positive_float: Any = None) -> None:
    t = sub.add_parser(
        "tune",
        help="recommend bucket_cap_mb (and a cap list) for a model: profile, calibrate, sweep, verify",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument(
        "--model",
        default=None,
        help="built-in workload or path/to/file.py:build_fn (default: the --profile's model, else gpt); or a model of "
        "the simulator's zoo (`ddpsim models`, e.g. gpt2-xl, or its JSON file), predicted only from its FLOPs on "
        "--target-device (default: the model's own device, else h100-sxm)",
    )
    t.add_argument(
        "--batch-size",
        type=number(int, 1, 1 << 20),
        default=None,
        help="per-rank batch, samples (default: the workload's)",
    )
    t.add_argument(
        "--world-size",
        type=sim_world,
        default=None,
        help="ranks to predict for (default: the world size --params were measured at, else 8 for a zoo model, as "
        "predict's, else --run-world-size: this machine's run)",
    )
    t.add_argument(
        "--run-world-size",
        type=local_world(2),
        default=2,
        help="local ranks for profiling, calibration and --verify (default 2)",
    )
    t.add_argument(
        "--profile", default=None, help="a profile JSON measured elsewhere (`ddpsim profile`) instead of profiling here"
    )
    t.add_argument("--params", default=None, help="fitted params (`ddpsim calibrate`) instead of calibrating here")
    t.add_argument("--network", default=None, help="a network preset instead of calibrating here (e.g. nccl-h100-ib)")
    add_o_w_args(t)
    t.add_argument(
        "--target-device",
        default=None,
        help="predict for this device spec (compute from the roofline of each kernel; for a zoo model, from its FLOPs "
        "at the device's rate), e.g. h100-sxm",
    )
    t.add_argument(
        "--dtype",
        default=None,
        choices=tuple(FLOPS_DTYPES),
        help="precision of the step: of the ranks here (bf16 autocast; tf32 on CUDA only) and of --target-device "
        "(default fp32; for a zoo model, the dtype whose peak the device's MFU applies to, default the spec's own)",
    )
    t.add_argument(
        "--calibrate-device-from",
        default=None,
        metavar="PROFILE.json",
        help="with --target-device: fit its efficiencies to this profile of any model measured on it (`ddpsim profile`)",
    )
    t.add_argument(
        "--link-mbit",
        type=link_mbit,
        default=None,
        metavar="RATE",
        help="calibrate and verify over an emulated link, Mbit/s or with units (root)",
    )
    add_backend_arg(t)
    t.add_argument("--verify", action="store_true", help="run the recommended and default settings for real here")
    t.add_argument("--verify-grid", type=float_list, default=None, help="also run these bucket sizes (MiB) for real")
    t.add_argument(
        "--steps", type=number(int, 1, 100_000), default=20, help="timed steps per real setting (default 20)"
    )
    add_min_seconds_arg(t, VERIFY_MIN_SECONDS)
    t.add_argument("--warmup", type=number(int, 0, 100_000), default=3, help="untimed steps first")
    add_out_dir(t, "tune", "plots, trace, report and results")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.set_defaults(func=cmd_tune, _outputs={"out_dir": "dir"})
