"""``ddpsim tune``: profile, calibrate, sweep, recommend -- and optionally verify for real.

Phases, each with a progress line and elapsed time on stderr:

1. profile the model on this machine (or ``--profile`` measured elsewhere);
2. calibrate the network on this machine (or ``--params``, ``--network``,
   ``--o-us``/``--w-gbps``);
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
from dataclasses import replace
from pathlib import Path
from typing import Any

from simulator.jsonio import dumps_finite, write_whole
from simulator.network import CostModel
from simulator.profile import GradProfile
from simulator.strategies import StrategySpec

from .cliutil import emit_json, link_mbit, local_world, number
from .sim_commands import add_o_w_args, float_list, load_params, sim_world
from .tuner import TuneResult, format_tune, recommend, resolve_network, with_files

# calibration.calibrate (scipy) and realrun (torch) are imported inside the handlers:
# `ddpsim predict` builds this parser and must stay fast.


def _target_profile(prof: GradProfile, model_spec: str, device_name: str, batch_size: int) -> GradProfile:
    """Compute re-timed from the model's FLOPs on a device spec, keeping the measured ready order."""
    from realrun.flops import param_forward_flops
    from realrun.workloads import load_workload
    from simulator import zoo

    wl = load_workload(model_spec)
    module = wl.build()
    flops = param_forward_flops(module, wl.make_batch(batch_size, wl.seed), wl.loss_fn)
    params = tuple(
        zoo.ModelParam(name, tuple(p.shape), str(p.dtype).removeprefix("torch."), flops.get(name, 0) / batch_size)
        for name, p in module.named_parameters()
    )
    spec = zoo.ModelSpec(
        model_spec,
        params,
        source="FLOPs counted by realrun.flops",
        defaults={"batch_size": batch_size},
        tokens_per_sample=wl.tokens_per_sample,
    )
    flop_prof = zoo.profile_from_flops(spec, zoo.load_device(device_name), batch_size=batch_size)
    if sorted(flop_prof.ready_order) == sorted(prof.ready_order):
        # the FLOP profile assumes reverse registration order; keep what was measured
        times = flop_prof.ready_times_s()
        flop_prof = GradProfile.from_ready_times(
            flop_prof.model,
            flop_prof.params,
            {i: times[i] for i in prof.ready_order},
            forward_s=flop_prof.forward_s,
            optimizer_s=flop_prof.optimizer_s,
            samples_per_step=flop_prof.samples_per_step,
            tokens_per_sample=flop_prof.tokens_per_sample,
            source=flop_prof.source,
            env=flop_prof.env,
        )
    return flop_prof


def _verify(
    pool: Any, args: argparse.Namespace, res: TuneResult, prof: GradProfile, cost: CostModel, say: Any, records: str
) -> dict[str, Any]:
    """Run the recommended and default settings (and the grid) for real, interleaved step by step
    with a compute-only baseline so this box's drift hits all alike; records written per round."""
    from calibration.validate import measure_beside_compute
    from realrun.records import RecordWriter, environment
    from realrun.stats import summarize
    from simulator.predict import predict

    bs = prof.samples_per_step
    settings: list[tuple[str, StrategySpec]] = [
        ("recommended", StrategySpec("torch-ddp", bucket_mb=res.recommended_bucket_mb)),
        ("default", StrategySpec("torch-ddp")),
    ]
    if res.recommended_bucket_mb_list:
        settings.append(
            ("recommended_list", StrategySpec("torch-ddp", bucket_cap_mb_list=res.recommended_bucket_mb_list))
        )
    for mb in args.verify_grid or ():
        settings.append((f"grid {mb:g}", StrategySpec("torch-ddp", bucket_mb=mb)))
    rounds = 2
    say(f"verify: {len(settings)} settings and a compute-only baseline interleaved, on {pool.world_size} real ranks")
    env = environment(pool.backend, pool.world_size, link_mbit=args.link_mbit)
    with RecordWriter(records) as w:
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
        )
    comp = summarize(compute[0]).median_s
    scale = comp / prof.compute_s if prof.compute_s > 0 else 1.0
    rows = []
    for (label, spec), ts in zip(settings, times):
        m = summarize(ts)
        pred = predict(prof.scaled(scale), cost, spec, pool.world_size).step_time_s
        rows.append(
            {
                "setting": label,
                "bucket_mb": spec.bucket_mb,
                "bucket_cap_mb_list": list(spec.bucket_cap_mb_list) if spec.bucket_cap_mb_list else None,
                "measured_median_s": m.median_s,
                "measured_p10_s": m.p10_s,
                "measured_p90_s": m.p90_s,
                "predicted_step_s": pred,
                "error_pct": (pred - m.median_s) / m.median_s * 100,
            }
        )
        say(
            f"verify {label}: measured {m.median_s * 1e3:.2f} ms (p10 {m.p10_s * 1e3:.2f}, p90 {m.p90_s * 1e3:.2f}), "
            f"predicted {pred * 1e3:.2f} ms"
        )
    best = min(rows, key=lambda r: r["measured_median_s"])
    recm, dflt = rows[0], rows[1]
    return {
        "method": f"interleaved with a compute-only baseline, {rounds} rounds x {per_round} steps; "
        f"predictions with compute scaled to the measured baseline (x{scale:.3f})",
        "measured_compute_s": comp,
        "rows": rows,
        "recommended_measured_s": recm["measured_median_s"],
        "recommended_measured_p10_s": recm["measured_p10_s"],
        "recommended_measured_p90_s": recm["measured_p90_s"],
        "default_measured_s": dflt["measured_median_s"],
        "default_measured_p10_s": dflt["measured_p10_s"],
        "default_measured_p90_s": dflt["measured_p90_s"],
        "best_measured_setting": best["setting"],
        "recommended_vs_best_measured_pct": (recm["measured_median_s"] - best["measured_median_s"])
        / best["measured_median_s"]
        * 100,
        "measured_gain_vs_default_pct": (dflt["measured_median_s"] - recm["measured_median_s"])
        / dflt["measured_median_s"]
        * 100,
        "median_abs_error_pct": statistics.median(abs(r["error_pct"]) for r in rows),
    }


def _write_outputs(res: TuneResult, prof: GradProfile, cost: CostModel, out_dir: Path) -> dict[str, str]:
    from simulator.predict import predict
    from simulator.sweep_plot import plot_sweep
    from simulator.trace import write_chrome_trace

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    files["sweep_plot"] = str(plot_sweep(res.sweep.to_dict(), out_dir / "sweep.png"))
    rec = predict(
        prof, cost, StrategySpec("torch-ddp", bucket_mb=res.recommended_bucket_mb), res.world_size, record_events=True
    )
    files["trace"] = str(
        write_chrome_trace(
            out_dir / "predicted_trace.json",
            rec.events,
            {"model": prof.model, "bucket_cap_mb": res.recommended_bucket_mb},
        )
    )
    prof.save(out_dir / "profile.json")
    files["profile"] = str(out_dir / "profile.json")
    files["result"] = str(out_dir / "tune.json")
    files["report"] = str(out_dir / "report.md")
    return files


def _report_md(res: TuneResult) -> str:
    lines = ["# ddpsim tune report", "", "```", format_tune(res), "```", ""]
    if res.verify:
        v = res.verify
        lines += [
            "## Verified on this machine",
            "",
            "| setting | measured median ms | p10..p90 ms | predicted ms | error |",
            "|---|---|---|---|---|",
        ]
        for r in v["rows"]:
            lines.append(
                f"| {r['setting']} | {r['measured_median_s'] * 1e3:.2f} | {r['measured_p10_s'] * 1e3:.2f}..{r['measured_p90_s'] * 1e3:.2f} "
                f"| {r['predicted_step_s'] * 1e3:.2f} | {r['error_pct']:+.1f}% |"
            )
        lines += [
            "",
            f"Recommended setting measured {v['recommended_vs_best_measured_pct']:+.2f}% vs the best setting measured "
            f"({v['best_measured_setting']}); {v['measured_gain_vs_default_pct']:+.2f}% vs the default.",
            "",
        ]
    lines += [
        "## Step time vs bucket size (predicted)",
        "",
        "![sweep](sweep.png)",
        "",
        "The predicted timeline of the recommended setting is `predicted_trace.json` (open it in https://ui.perfetto.dev).",
        "",
    ]
    return "\n".join(lines)


def cmd_tune(args: argparse.Namespace) -> int:
    from calibration.calibrate import CalibrateSpec, Progress, calibrate_on_pool, open_pool
    from realrun.workloads import load_workload

    say = Progress(not args.quiet, prefix="tune")
    notes: list[str] = []
    given_prof: GradProfile | None = GradProfile.load(args.profile) if args.profile else None  # bad file: exit 2 now
    if args.model is None:
        args.model = given_prof.model if given_prof is not None else "gpt"
    elif given_prof is not None and given_prof.model != args.model and (args.verify or args.target_device):
        raise ValueError(
            f"--profile {args.profile} was measured for model {given_prof.model!r}, not --model {args.model!r}: "
            "--verify and --target-device would run another model than the profile describes"
        )
    given_params = load_params(args.params) if args.params else None  # the reader of predict --params too
    if args.link_mbit is not None:
        from realrun.netns import netns_skip_reason

        reason = netns_skip_reason(args.link_mbit)
        if reason:
            raise ValueError(f"--link-mbit: {reason}")
    if args.profile is None:
        wl = load_workload(args.model)  # a user module that does not import or fit fails here, exit 2
        bs = args.batch_size or wl.default_batch_size
    else:
        bs = None
    run_world = args.run_world_size
    need_cal = args.params is None and args.network is None and args.o_us is None
    need_ranks = need_cal or args.profile is None or args.verify
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def plan(pool: Any | None) -> int:
        prof: GradProfile | None = given_prof
        cost: CostModel | None = None
        fitted = None  # the calibration the cost model came from, if any: its fit's intervals feed the prediction's
        if need_cal:
            say(
                f"calibrating the network on {run_world} local ranks"
                + (f" over {args.link_mbit:g} Mbit/s links" if args.link_mbit else "")
            )
            params = calibrate_on_pool(
                pool,
                CalibrateSpec(
                    model=args.model,
                    world_size=run_world,
                    batch_size=bs,
                    link_mbit=args.link_mbit,
                    records=str(out_dir / "calibration.jsonl"),
                ),
                say,
            )
            params.save(out_dir / "params.json")
            cost, fitted = params.cost_model(), params
            if prof is None:
                prof = params.profile()
        elif given_params is not None:
            fitted = given_params
            cost = given_params.cost_model()
        else:
            cost = resolve_network(args.network)
        if args.o_us is not None or args.w_gbps is not None:
            o, w = cost.linear_at(args.world_size)
            cost = replace(
                cost,
                network=None,
                measured_world_sizes=(),
                ref_world_size=args.world_size,
                o_s=args.o_us * 1e-6 if args.o_us is not None else o,
                w_bytes_per_s=args.w_gbps * 1e9 if args.w_gbps is not None else w,
            )
        if prof is None:
            from realrun.profile_grads import profile_grads

            say(f"profiling {args.model} (batch {bs}) on {run_world} local ranks")
            prof = profile_grads(pool, args.model, batch_size=bs)
        if args.target_device:
            prof = _target_profile(prof, args.model, args.target_device, prof.samples_per_step)
            notes.append(
                f"compute scaled to device {args.target_device} from the model's FLOPs (measured ready order kept)"
            )
        say(f"sweeping strategies and bucket sizes for {args.world_size} ranks")
        from simulator.interval import Uncertainty, measured_backward_s

        compute_steps = () if args.target_device else measured_backward_s(prof)
        if fitted is not None and args.o_us is None and args.w_gbps is None:
            unc = fitted.uncertainty(compute_steps)
        else:
            unc = Uncertainty.from_fit(compute_samples_s=compute_steps)
        res = recommend(prof, cost, args.world_size, notes=notes, uncertainty=unc)
        verify = None
        if args.verify:
            if pool is None or args.world_size != run_world:
                raise ValueError(f"--verify runs on this machine: use --world-size {run_world} (or --run-world-size)")
            verify = _verify(pool, args, res, prof, cost, say, str(out_dir / "verify.jsonl"))
        files = _write_outputs(res, prof, cost, out_dir)
        res = with_files(res, files, verify)
        write_whole(files["result"], dumps_finite(res.to_dict()) + "\n")
        write_whole(files["report"], _report_md(res))
        if args.json:
            emit_json(args, res.to_dict())
        else:
            print(format_tune(res))
            if verify:
                print(f"\nverified on {run_world} real ranks ({args.steps} steps each):")
                for r in verify["rows"]:
                    print(
                        f"  {r['setting']:<18} measured {r['measured_median_s'] * 1e3:9.2f} ms "
                        f"(p10 {r['measured_p10_s'] * 1e3:.2f}, p90 {r['measured_p90_s'] * 1e3:.2f})  "
                        f"predicted {r['predicted_step_s'] * 1e3:9.2f} ms  {r['error_pct']:+6.1f}%"
                    )
                print(
                    f"  recommended vs best measured: {verify['recommended_vs_best_measured_pct']:+.2f}%; "
                    f"vs default: {verify['measured_gain_vs_default_pct']:+.2f}% faster"
                )
            print(f"\nwrote {files['report']}, {files['sweep_plot']}, {files['trace']}, {files['result']}")
        return 0

    if not need_ranks:
        return plan(None)
    with open_pool(run_world, "gloo", args.link_mbit, 900.0) as pool:
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
        help="built-in workload or path/to/file.py:build_fn (default: the --profile's model, else gpt)",
    )
    t.add_argument(
        "--batch-size",
        type=number(int, 1, 1 << 20),
        default=None,
        help="per-rank batch, samples (default: the workload's)",
    )
    t.add_argument(
        "--world-size", type=sim_world, default=2, help="ranks to predict for (default 2: this machine's run)"
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
        help="predict for this device spec (compute from the model's FLOPs), e.g. h100-sxm",
    )
    t.add_argument(
        "--link-mbit",
        type=link_mbit,
        default=None,
        metavar="RATE",
        help="calibrate and verify over an emulated link, Mbit/s or with units (root)",
    )
    t.add_argument("--verify", action="store_true", help="run the recommended and default settings for real here")
    t.add_argument("--verify-grid", type=float_list, default=None, help="also run these bucket sizes (MiB) for real")
    t.add_argument(
        "--steps", type=number(int, 1, 100_000), default=20, help="timed steps per real setting (default 20)"
    )
    t.add_argument("--warmup", type=number(int, 0, 100_000), default=3, help="untimed steps first")
    t.add_argument(
        "--out-dir",
        default="ddpsim-tune",
        help="the run folder: plots, trace, report and results (default ddpsim-tune)",
    )
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.set_defaults(func=cmd_tune, _outputs={"out_dir": "dir"})
