"""``ddpsim calibrate``, ``validate``, ``plot`` and ``tune``: the commands of the top floor.

torch is imported only inside the handlers (through realrun), never at import.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from realrun.netns import netns_skip_reason
from simulator.strategies import STRATEGIES

from .cliutil import (
    add_backend_arg,
    add_csv,
    add_min_seconds_arg,
    add_out_dir,
    csv_stdout,
    emit_csv,
    emit_json,
    link_mbit,
    local_world,
    number,
    number_list,
    spawn_backend,
    strategy_names,
    world_sizes,
)
from .ddp_commands import bucket_mb_list_arg
from .sim_commands import positive_float


def _sizes(text: str) -> tuple[int, ...]:
    """All-reduce message sizes for ``calibrate --sizes`` (the syntax of ``bench-allreduce --sizes``)."""
    from realrun.bench_allreduce import parse_sizes  # no torch at import

    try:
        sizes = parse_sizes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if len(sizes) < 2:
        raise argparse.ArgumentTypeError(
            f"give at least two message sizes (one size cannot separate o from w), got {text!r}"
        )
    odd = [s for s in sizes if s % 4]
    if odd:
        raise argparse.ArgumentTypeError(
            f"message sizes must be whole float32 elements (multiples of 4 bytes), got {odd}"
        )
    return sizes


def block_arg(text: str) -> int | None:
    """``--block``: a whole number >= 1, or "auto" (None: ``calibration.validate.auto_block``)."""
    if text.strip().lower() == "auto":
        return None
    return number(int, 1, 100_000)(text)


def _strategies(text: str) -> tuple[str, ...]:
    try:
        return tuple(strategy_names(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


steps = number(int, 1, 100_000)


def _calibrate_worlds(text: str) -> list[int]:
    """``--world-size 2`` (its message as before) or ``2,4``: ranks started here, each as ``local_world``."""
    return world_sizes(1)(text) if "," in text else [local_world(1)(text)]


_calibrate_worlds.__name__ = "world size"
link_list = number_list(link_mbit)


def _over(link_mbit: float | None) -> str:
    return f"over {link_mbit:g} Mbit/s links" if link_mbit else "on loopback"


def _runnable_links(links: list[float | None], command: str) -> tuple[list[float | None], list[dict[str, Any]]]:
    """The links that can run here, and the skipped ones with the reason (each said on stderr)."""
    runnable, skipped = [], []
    for link in links:
        reason = netns_skip_reason(link)
        if reason:
            print(f"ddpsim {command}: skipped {link:g} Mbit/s: {reason}", file=sys.stderr)
            skipped.append({"link_mbit": link, "reason": reason})
        else:
            runnable.append(link)
    return runnable, skipped


def _out_path(base: str, link: float | None, multi: bool) -> str:
    if not multi or link is None:
        return base
    p = Path(base)
    return str(p.with_name(f"{p.stem}-{link:g}mbit{p.suffix}"))


# ---- calibrate ----------------------------------------------------------------------
def print_params(out: Any, params: Any, link: float | None) -> None:
    """What ``calibrate`` prints about the params it wrote."""
    from calibration.step_probe import work_phrase

    lin = params.linear
    print(f"wrote {out}")
    print(
        f"  t0 = {lin.o_us:.1f} us at p = {params.world_size}: zero-byte time of one call, o + 2(p-1) alpha  "
        f"(95% CI {lin.o_ci_us[0]:.1f} .. {lin.o_ci_us[1]:.1f})"
    )
    print(
        f"  w = {lin.w_gbps:.4g} GB/s = {lin.w_gbps * 8:.4g} Gbit/s = {lin.w_gbps * 8e3:.1f} Mbit/s  "
        f"(95% CI {lin.w_ci_gbps[0]:.4g} .. {lin.w_ci_gbps[1]:.4g} GB/s)"
        + (f"; configured link {link:g} Mbit/s" if link else "")
    )
    print(
        f"  fit error: relative RMS {lin.rel_rms * 100:.2f}%, worst {lin.max_abs_rel_err * 100:.2f}% over {lin.n_points} sizes"
    )
    k, kb = params.work_at(None)
    print(
        f"  contention: compute x{1 + params.contention_c:.3f} while communicating, communication x{1 + params.comm_contention_c:.3f} while computing"
        + (f"; {work_phrase(k, kb)} (in-step probe at two caps)" if k or kb else "")
    )
    for q, f in sorted(params.in_step_fits().items()):
        if q != params.world_size:
            print(
                f"  contention at p = {q}: compute x{1 + f['contention_c']:.3f} while communicating, "
                f"communication x{1 + f['comm_contention_c']:.3f} while computing (in-step probe at p = {q})"
            )
    fin = params.finalize_at(None)
    print(
        f"  memory copy {params.copy_bytes_per_s / 1e9:.2f} GB/s"
        + (f", in-place division {params.scale_bytes_per_s / 1e9:.2f} GB/s" if params.scale_bytes_per_s else "")
        + f"; channels {params.channels}"
        + (" (pipelined: a queued call's hand-off overlaps the transfer before)" if params.pipelined else "")
        + (" (the in-step probe's choice over the stream probe's)" if params.probes.get("channel_source") else "")
        + (f"; DDP's finalize {fin * 1e6:.1f} us per parameter (in-step probe)" if fin else "")
    )
    cold, tau = params.cold_call()
    if cold:
        print(
            f"  a call on idle channels: +{cold * 1e3:.2f} ms x (1 - exp(-idle / {tau * 1e3:.1f} ms)) "
            "(cold-call probe: after compute, against after a call)"
        )
    t = params.network_terms()
    how = (
        f"fitted across p = {', '.join(map(str, t.world_sizes))}"
        if t.split == "fitted"
        else f"measured at p = {params.world_size} only: latency split assumed"
    )
    print(
        f"  network terms ({t.algorithm}, {how}): "
        f"o = {t.o_s * 1e6:.1f} us per call, alpha = {t.alpha_s * 1e6:.1f} us per step, "
        f"link {8e-6 / t.beta_s_per_byte:.4g} Mbit/s"
        + (f", fit rel. RMS {t.rel_rms * 100:.1f}% over {len(t.points)} points" if t.split == "fitted" else "")
    )
    prof = params.profile()
    print(
        f"  profile {prof.model}: forward {prof.forward_s * 1e3:.2f} ms, backward {prof.backward_s * 1e3:.2f} ms, optimizer {prof.optimizer_s * 1e3:.2f} ms"
    )


def params_json(out: Any, params: Any) -> dict[str, Any]:
    """``calibrate --json``'s result: the params file's content and its path, without the profile (it is in
    the file)."""
    d = dict(params.to_dict(), params_file=str(out))
    d.pop("profile", None)
    d.pop("compute_profile", None)
    return d


def _refit(args: argparse.Namespace) -> int:
    """``calibrate --refit RECORDS``: today's fits on a past calibration's records; no rank starts."""
    from calibration.progress import Progress
    from calibration.refit import refit_from_records

    params = refit_from_records(args.refit, say=Progress(not args.quiet, prefix="refit"))
    out = params.save(_out_path(args.out, params.link_mbit, False))
    if args.json:
        emit_json(args, params_json(out, params))
    else:
        print_params(out, params, params.link_mbit)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from calibration.calibrate import CalibrateSpec, calibrate
    from realrun.workloads import load_workload

    if args.refit:
        return _refit(args)
    load_workload(args.model)  # a bad --model (or a user module that fails) stops here, before ranks start
    backend = spawn_backend(args, args.world_size, args.link_mbit)
    links = args.link_mbit or [None]
    results = []
    runnable, skipped = _runnable_links(links, "calibrate")
    for link in runnable:
        multi = len(links) > 1
        spec = CalibrateSpec(
            model=args.model,
            backend=backend,
            world_size=min(args.world_size),
            world_sizes=tuple(args.world_size),
            batch_size=args.batch_size,
            link_mbit=link,
            records=_out_path(args.records, link, multi),
            profile_steps=args.profile_steps,
            contention_steps=args.contention_steps,
            step_probe_steps=args.step_probe_steps,
            step_probe_seconds=args.step_probe_seconds,
            step_probe_check=args.step_probe_check,
            cold_call_reps=args.cold_call_reps,
            switch_reps=args.switch_reps,
            sharded_steps=args.sharded_steps,
            sizes_bytes=args.sizes,
        )
        params = calibrate(spec, progress=not args.quiet)
        out = params.save(_out_path(args.out, link, multi))
        results.append((out, params))
        if not args.json:
            print_params(out, params, link)
    if args.json and not results:
        emit_json(args, {"skipped": skipped})  # stdout stays JSON when every link was skipped
    elif args.json:
        payload = [params_json(o, p) for o, p in results]
        emit_json(args, payload[0] if len(payload) == 1 else payload)
    return 0


# ---- validate -----------------------------------------------------------------------
def cmd_validate(args: argparse.Namespace) -> int:
    from calibration.calibrate import CalibrateSpec, calibrate_on_pool, open_pool
    from calibration.params import Params
    from calibration.progress import Progress
    from calibration.validate import (
        ValidateSpec,
        check_profile_matches,
        format_validation,
        save_validation,
        validate_on_pool,
    )

    if args.replay:
        return _replay(args)
    links = args.link_mbit or [None]
    spec = ValidateSpec(
        model=args.model,
        strategies=args.strategy,
        bucket_mb=tuple(args.bucket_mb),
        batch_size=args.batch_size,
        steps=args.steps,
        min_seconds=args.min_seconds,
        warmup=args.warmup,
        out=args.records,
        rounds=args.rounds,
        group_size=args.group_size,
        rescale_compute=not args.no_rescale,
        block=args.block,
        small_calls=args.small_calls,
    )
    from realrun.workloads import load_workload

    given = Params.load(args.params) if args.params else None
    load_workload(args.model)  # before ranks start
    world = args.world_size or (given.world_size if given else 2)
    backend = spawn_backend(args, world, args.link_mbit)
    if given is not None and len(links) == 1 and links[0] != given.link_mbit:
        raise ValueError(
            f"--params {args.params} were fitted {_over(given.link_mbit)}, and this validation runs {_over(links[0])}: "
            "give params calibrated there, or leave --params out to calibrate first"
        )
    calibrates = given is None or (len(links) > 1 and any(link != given.link_mbit for link in links))
    if world < 2 and calibrates:
        raise ValueError(
            f"validate calibrates first (no --params for every link), which needs at least 2 ranks to communicate, "
            f"got --world-size {world}"
        )
    if given is not None and (len(links) == 1 or given.link_mbit in links):
        check_profile_matches(given, args.model, args.batch_size)  # before starting ranks, not after
    results = []
    runnable, skipped = _runnable_links(links, "validate")
    for link in runnable:
        multi = len(links) > 1
        say = Progress(not args.quiet, prefix="validate")
        world = args.world_size or (given.world_size if given else 2)
        with open_pool(world, backend, link, spec.timeout_s) as pool:
            params = given
            if params is None or (multi and link != params.link_mbit):
                say("no params for this link: calibrating first")
                # next to --out, never over ./params.json or into ./calibration.jsonl
                cal = CalibrateSpec(
                    model=args.model,
                    backend=backend,
                    world_size=world,
                    batch_size=args.batch_size,
                    link_mbit=link,
                    records=_out_path(_beside(args.out, "calibration.jsonl"), link, True),
                )
                params = calibrate_on_pool(pool, cal, say)
                saved = params.save(_out_path(_beside(args.out, "params.json"), link, True))
                say(f"calibration written to {saved} (records {cal.records})")
            run_spec = spec if not multi else ValidateSpec(**{**spec.__dict__, "out": _out_path(spec.out, link, True)})
            res = validate_on_pool(pool, params, run_spec, say, link_mbit=link)
            if args.timeline:
                res["timelines"] = _validate_timelines(pool, params, res, spec, args, link, multi, say)
        res_path = save_validation(res, _out_path(args.out, link, multi))
        res["result_file"] = str(res_path)
        if args.plot_dir:
            res["plots"] = _validation_plots(res, Path(args.plot_dir), link)
        results.append(res)
        if not args.json and not csv_stdout(args):
            print(format_validation(res))
            print(f"results: {res_path}" + (f"; plots: {', '.join(res['plots'])}" if args.plot_dir else ""))
    csv_file = emit_csv(args, validation_csv_rows(results))
    if csv_file and not args.json:
        print(f"csv: {csv_file}")
    if not results:
        if args.json:
            emit_json(args, {"skipped": skipped})  # stdout stays JSON when every link was skipped
        return 0
    if csv_stdout(args):
        return 0
    if args.json:
        emit_json(args, results[0] if len(results) == 1 else {"runs": results})
    return 0


def validation_csv_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One table over every validate result: its rows with the link they ran over."""
    from simulator.jsonio import to_json

    return [{"link_mbit": r.get("link_mbit"), **to_json(row)} for r in results for row in r["rows"]]


def _replay(args: argparse.Namespace) -> int:
    """``validate --replay RECORDS --params P``: a past run's measured steps predicted from P; no rank starts."""
    from calibration.params import Params
    from calibration.validate import format_validation, replay_validation, save_validation

    if not args.params:
        raise ValueError("--replay predicts a past run's measurements from --params: give --params")
    res = replay_validation(args.replay, Params.load(args.params), rescale=not args.no_rescale, block=args.block)
    res_path = save_validation(res, args.out)
    res["result_file"] = str(res_path)
    csv_file = emit_csv(args, validation_csv_rows([res]))
    if csv_stdout(args):
        return 0
    if args.json:
        emit_json(args, res)
    else:
        print(format_validation(res))
        print(f"results: {res_path}" + (f"; csv: {csv_file}" if csv_file else ""))
    return 0


def _beside(out: str, name: str) -> str:
    """``validation.json`` + ``params.json`` -> ``validation.params.json``, in the folder of ``out``."""
    p = Path(out)
    return str(p.with_name(f"{p.stem}.{name}"))


def _validate_timelines(
    pool: Any,
    params: Any,
    res: dict[str, Any],
    spec: Any,
    args: argparse.Namespace,
    link: float | None,
    multi: bool,
    say: Any,
) -> list[dict[str, Any]]:
    """``--timeline DIR``: each configuration once more with per-bucket timelines recorded (after the
    interleaved validation, so the recording cannot disturb it; in turns as long as validation's), compared
    with its prediction."""
    from calibration.timeline import timelines_on_pool

    out = Path(args.timeline) / (f"{link:g}mbit" if multi and link else "")
    configs = [(c.name, c.bucket_mb, c.bucket_cap_mb_list) for c in spec.configs()]
    decs = timelines_on_pool(
        pool,
        spec.model,
        configs,
        out,
        params,
        batch_size=res["batch_size"],
        steps=spec.steps,
        warmup=spec.warmup,
        optimizer=spec.optimizer,
        rescale=spec.rescale_compute,
        say=say,
        meta={"command": "validate", "link_mbit": link},
        block=res.get("block", 1),
    )
    for d in decs:
        if not args.json:
            print(d["table"])
    return [{k: v for k, v in d.items() if k != "table"} for d in decs]


def _validation_plots(res: dict[str, Any], out_dir: Path, link: float | None) -> list[str]:
    from calibration.plots import plot_bucket_sweep, plot_pred_vs_measured

    tag = f"-{link:g}mbit" if link else ""
    out_dir.mkdir(parents=True, exist_ok=True)
    every = [r.to_dict() for r in res["rows"]]  # the plots read rows as the result file holds them
    rows = [r for r in every if r["bucket_mb"] is not None]
    paths = [str(plot_pred_vs_measured(every, out_dir / f"pred_vs_measured{tag}.png", quantity="both"))]
    if rows:
        paths.append(
            str(
                plot_bucket_sweep(
                    rows, out_dir / f"bucket_sweep{tag}.png", title=f"{res['model']} p={res['world_size']}{tag}"
                )
            )
        )
    return paths


# ---- plot ---------------------------------------------------------------------------
def cmd_plot(args: argparse.Namespace) -> int:
    """Plots from result files only (never re-runs anything)."""
    out = Path(args.plot_dir)
    if not (args.allreduce or args.validation or args.scaling):
        raise ValueError(
            "nothing to plot: give --allreduce RECORDS.jsonl, --validation RESULT.json or --scaling RESULT.json ..."
        )
    given = [("--allreduce", args.allreduce), ("--validation", args.validation)]
    for flag, path in given + [("--scaling", p) for p in args.scaling or ()]:
        if path is not None and not Path(path).is_file():
            raise ValueError(f"{flag} {path}: no such file")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        written = _plots(args, out)
    except BaseException:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # bad input leaves nothing behind
        raise
    if args.json:
        emit_json(args, {"plots": [str(w) for w in written]})
        return 0
    for w in written:
        print(w)
    return 0


def _plots(args: argparse.Namespace, out: Path) -> list[Any]:
    """``cmd_plot``'s plots into ``out``; a ``ValueError`` naming the input that is not what its flag asks for."""
    from calibration.plots import plot_allreduce, plot_bucket_sweep, plot_pred_vs_measured, plot_scaling, read_rows

    written = []
    if args.allreduce:
        from calibration.fit import fit_linear
        from realrun.records import read_records

        recs = read_records(args.allreduce)  # every kind: the fit says what it found when none is an all-reduce
        try:
            fit = fit_linear(recs)
        except ValueError as e:
            raise ValueError(f"{args.allreduce}: {e}") from None
        written.append(plot_allreduce(recs, fit, out / "allreduce_fit.png"))
    if args.validation:
        rows = read_rows(args.validation)  # a ValueError naming the file when it is not a result file
        try:
            written.append(plot_pred_vs_measured(rows, out / "pred_vs_measured.png", quantity="both"))
            sized = [r for r in rows if r.get("bucket_mb") is not None]
            if sized:
                written.append(plot_bucket_sweep(sized, out / "bucket_sweep.png"))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"--validation {args.validation}: not a `ddpsim validate` result ({e})") from None
    if args.scaling:
        rows = [r for path in args.scaling for r in _scaling_rows(path)]
        try:
            written.append(plot_scaling(rows, out / "scaling.png"))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"--scaling {' '.join(args.scaling)}: not `ddpsim validate` results ({e})") from None
    return written


def _scaling_rows(path: str) -> list[dict[str, Any]]:
    """The rows of one ``ddpsim validate`` result for the scaling plot: each row takes the result's world size,
    and its configuration's name (``calibration.validate.config_label``) as the line it belongs to."""
    from calibration.validate import config_label
    from simulator.jsonio import read_json

    top = read_json(path, "validate result")
    rows = top.get("rows") if isinstance(top, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"--scaling {path}: not a `ddpsim validate` result (no list of rows)")
    p = top.get("world_size")
    out = []
    for r in rows:
        world = r.get("world_size", p)
        if not isinstance(world, int) or isinstance(world, bool) or world < 1:
            raise ValueError(f"--scaling {path}: no world size in the result or its rows (a `ddpsim validate` result)")
        mb, caps = r.get("bucket_mb"), r.get("bucket_cap_mb_list")
        if not (mb is None or isinstance(mb, (int, float))) or not (caps is None or isinstance(caps, list)):
            raise ValueError(f"--scaling {path}: a row's bucket_mb or bucket_cap_mb_list is not a number or a list")
        out.append({**r, "world_size": world, "strategy": config_label(str(r.get("strategy") or ""), mb, caps)})
    return out


def add_commands(sub: Any) -> None:
    from calibration.probes import SMALL_CALL_BYTES, SMALL_CALLS  # light: no scipy, no torch

    c = sub.add_parser("calibrate", help="measure this machine and fit o, w, contention and the compute profile")
    c.add_argument(
        "--model", default="gpt", help="workload to profile (built-in or path/to/file.py:build_fn; default gpt)"
    )
    add_backend_arg(c)
    c.add_argument(
        "--world-size",
        type=_calibrate_worlds,
        default=[2],
        help="ranks started here: one number, or a list like 2,4 (the all-reduce is measured at each and one "
        "model fitted across them; the profile and contention probes run at the smallest)",
    )
    c.add_argument(
        "--batch-size", type=number(int, 1, 1 << 20), default=None, help="samples per rank (default: the workload's)"
    )
    c.add_argument(
        "--link-mbit",
        type=link_list,
        default=None,
        metavar="RATE,...",
        help="emulate links of these rates (Mbit/s, or with units: 1Gbit/s; needs root), e.g. 100,400",
    )
    c.add_argument("--profile-steps", type=steps, default=20, help="timed steps of the gradient-ready profile")
    c.add_argument(
        "--contention-steps", type=steps, default=10, help="timed steps of the contention probe, alone and overlapped"
    )
    c.add_argument(
        "--step-probe-steps",
        type=number(int, 0, 100_000),
        default=10,
        help="timed torch DDP steps of the in-step probe at each of its caps, at least (per-bucket timelines; "
        "fits how compute and communication slow each other inside a step, at two caps, and checks the fit at one "
        "bucket); 0 keeps the contention probe's factors",
    )
    c.add_argument(
        "--no-step-probe-check",
        dest="step_probe_check",
        action="store_false",
        help="leave out the in-step probe at one bucket (a check of its fit; the intervals' model error comes from "
        "the step check, --sharded-steps, and from the in-step probe's steps only where the step check did not run)",
    )
    c.add_argument(
        "--step-probe-seconds",
        type=number(float, 0, 600),
        default=4.0,
        help="more in-step probe steps at a cap where --step-probe-steps steps, as predicted from the network's "
        "fit before the probe, would not fill this many seconds (up to 500); 0 times exactly --step-probe-steps "
        "(default 4)",
    )
    c.add_argument(
        "--cold-call-reps",
        type=number(int, 0, 100_000),
        default=100,
        help="repetitions of the cold-call probe (a small all-reduce after 2, 20 and 100 ms of compute, "
        "against one after a call: what a call on idle channels costs more; about 0.13 s each); "
        "0 leaves the term out",
    )
    c.add_argument(
        "--switch-reps",
        type=number(int, 0, 100_000),
        default=30,
        help="repetitions of the broadcast-switch probe (8 broadcasts of 256 KiB from one rank, against 8 from "
        "alternating ranks: the free transfer a rate-limited link's idle direction earns, which the sharded "
        "optimizer's broadcasts get); 0 leaves the term out",
    )
    c.add_argument(
        "--sharded-steps",
        type=number(int, 0, 100_000),
        default=10,
        help="steps of the sharded-step probe (torch DDP and the sharded optimizer at one bucket, torch DDP at 2 "
        "and 0.5 MiB and the hand-written bucketed at 2 and 8 MiB, beside compute-only steps, interleaved; more "
        "where they would not fill 3 s; smaller caps for models under 4 MiB of gradients): what each of the sharded "
        "optimizer's broadcasts costs in the step beyond the broadcast fit, and the step check the intervals' model "
        "error comes from; 0 leaves both out (default 10)",
    )
    c.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help="all-reduce message sizes to fit o and w on, as in bench-allreduce --sizes (e.g. 4K,64K,1M "
        "or 4K:64M:4); default 4 KiB up by factors of 4 to 1 MiB, then by factors of 2 to 64 MiB on "
        "loopback, or to about half a second per call (at least 16 MiB) over an emulated link",
    )
    add_out_dir(c, "calibrate", "fitted parameters and measurement records")
    c.add_argument(
        "--refit",
        default=None,
        metavar="RECORDS",
        help="measure nothing: fit again from the records file of an earlier calibrate run (its all-reduce, "
        "stream, copy, profile and probe records) with this version's fits, and write --out",
    )
    c.add_argument("--out", default=None, help="fitted parameters (JSON, written whole; default OUT_DIR/params.json)")
    c.add_argument(
        "--records",
        default=None,
        help="measurement records, appended (a new file, or one holding ddpsim records; "
        "default OUT_DIR/calibration.jsonl)",
    )
    c.add_argument("--json", action="store_true", help="print the fitted parameters as JSON")
    c.set_defaults(
        func=cmd_calibrate,
        _outputs={"out": "file", "records": "jsonl"},
        _in_run_dir={"out": "params.json", "records": "calibration.jsonl"},
    )

    v = sub.add_parser("validate", help="run configurations for real and in the simulator; report the error")
    v.add_argument("--params", default=None, help="params from `ddpsim calibrate` (default: calibrate first)")
    v.add_argument("--model", default="gpt", help="workload (built-in or path/to/file.py:build_fn)")
    v.add_argument("--strategy", type=_strategies, default=STRATEGIES, help="comma list or 'all' (default all)")
    v.add_argument(
        "--bucket-mb",
        type=bucket_mb_list_arg,
        default=[0.25, 1, 4, 16, 64, 256],
        help="bucket sizes in MiB for bucketed strategies; 'default' = torch's own (bucket_cap_mb unset: 25 MiB, "
        "1 MiB first bucket), for torch-ddp and sharded",
    )
    add_backend_arg(v)
    v.add_argument("--world-size", type=local_world(1), default=None, help="ranks (default: the params' world size)")
    v.add_argument(
        "--batch-size", type=number(int, 1, 1 << 20), default=None, help="samples per rank (default: the workload's)"
    )
    v.add_argument(
        "--steps",
        type=steps,
        default=20,
        help="timed steps per configuration, split over the rounds (at least 2 a round)",
    )
    add_min_seconds_arg(v)
    v.add_argument("--warmup", type=number(int, 0, 100_000), default=3, help="untimed steps first")
    v.add_argument(
        "--rounds",
        type=number(int, 1, 1000),
        default=2,
        help="rounds of interleaved steps, records written after each; the table's rounds column says how far "
        "each row's measured median moved between them (default 2)",
    )
    v.add_argument(
        "--group-size",
        type=number(int, 1, 1000),
        default=12,
        help="configurations built side by side and stepped in turn (default 12)",
    )
    v.add_argument(
        "--small-calls",
        type=number(int, 0, 100_000),
        default=SMALL_CALLS,
        metavar="N",
        help=f"small all-reduces ({SMALL_CALL_BYTES >> 10} KiB, one at a time) measured before each group of "
        "configurations and split as the calibration's (fast and stalled), so that the rows can be set against "
        f"the per-call cost the calibration saw (default {SMALL_CALLS}; 0: none)",
    )
    v.add_argument(
        "--block",
        type=block_arg,
        default=None,
        metavar="N|auto",
        help="timed steps a configuration takes in a row, after one untimed step, before the next one's turn, as a "
        "training job steps (default auto: 10 where the predicted step is under 50 ms, else 1; 1: each timed step "
        "follows another configuration's, as runs up to m33 measured every step); with --replay: the turns the "
        "replayed steps were measured in, for records that do not say it (auto there: theirs, else 1)",
    )
    v.add_argument(
        "--replay",
        default=None,
        metavar="RECORDS",
        help="measure nothing: predict the measured steps of an earlier validate run (its records file, "
        "--records there) again from --params, e.g. params refitted with `calibrate --refit`; a run that stopped "
        "before its summary is replayed from the steps it recorded",
    )
    v.add_argument(
        "--no-rescale",
        action="store_true",
        help="keep the calibrated compute profile as is (default: scale it to the compute-only baseline measured beside the configurations)",
    )
    v.add_argument(
        "--link-mbit",
        type=link_list,
        default=None,
        metavar="RATE,...",
        help="validate over emulated links of these rates, Mbit/s or with units (calibrates each)",
    )
    add_out_dir(v, "validate", "results, records and (without --params) the calibration")
    v.add_argument(
        "--out",
        default=None,
        help="summary and rows (JSON; default OUT_DIR/validation.json); without --params the calibration "
        "goes beside it (OUT.params.json and OUT.calibration.jsonl: validation.params.json for the default OUT)",
    )
    v.add_argument(
        "--records",
        default=None,
        help="raw step records (JSONL, appended; a new file or one holding ddpsim records; "
        "default OUT_DIR/validation.jsonl)",
    )
    v.add_argument("--plot-dir", default=None, help="write predicted-vs-measured and bucket-sweep PNGs here")
    v.add_argument(
        "--timeline",
        default=None,
        metavar="DIR",
        help="also run each configuration with per-bucket timelines recorded; write per configuration a "
        "Chrome trace (measured beside predicted), an error decomposition (JSON) and a PNG here",
    )
    add_csv(v, "the rows (measured and predicted per configuration, with the link)")
    v.add_argument("--json", action="store_true", help="print the results as JSON")
    v.set_defaults(
        func=cmd_validate,
        _outputs={"out": "file", "records": "jsonl", "plot_dir": "dir", "timeline": "dir"},
        _in_run_dir={"out": "validation.json", "records": "validation.jsonl"},
    )

    p = sub.add_parser("plot", help="plots from result files (never re-runs)")
    p.add_argument(
        "--allreduce", default=None, metavar="RECORDS.jsonl", help="all-reduce records (bench-allreduce or calibrate)"
    )
    p.add_argument("--validation", default=None, metavar="RESULT.json", help="a `ddpsim validate` result")
    p.add_argument(
        "--scaling",
        nargs="+",
        default=None,
        metavar="RESULT.json",
        help="`ddpsim validate` results at several world sizes (validation.json each): predicted and measured step "
        "against the world size, a line per configuration",
    )
    p.add_argument(
        "--plot-dir",
        default=None,
        help="folder for the PNGs (default: a new run folder, plot-<UTC time>, as the other commands' run folders)",
    )
    p.add_argument("--out-dir", dest="plot_dir", help=argparse.SUPPRESS)  # old spelling
    p.set_defaults(func=cmd_plot, _outputs={"plot_dir": "dir"}, _run_command="plot", _run_dir_dest="plot_dir")

    try:
        from .tune_command import add_tune_command
    except ImportError:
        return
    add_tune_command(sub, positive_float=positive_float)
