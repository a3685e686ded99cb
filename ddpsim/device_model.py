"""Compute on a device you may not have: the roofline of a workload's kernels on a device spec.

``ddpsim roofline --model gpt --device h100-sxm --dtype bf16`` records the
workload's kernels (``realrun.optable``: FLOPs, bytes, dtype of every kernel of
one step, with fake tensors, so an 89 M-parameter model costs a second on a
CPU and needs no GPU), times them on the device (``simulator.roofline``) and
prints forward, backward and optimizer time and which kernels are compute-,
memory- or launch-bound. ``--calibrate-device-from PROFILE.json`` first fits the
device's efficiencies and launch floor to a profile measured on that device
(``ddpsim profile``, any workload; its dtype is read from the profile), then
applies them to ``--model``: efficiency measured on one model carries over to
another. ``ddpsim tune --target-device`` uses the same path.

``--dtype``: ``fp32`` (float32 peak), ``tf32`` (float32 matmuls at the TF32
tensor-core peak, as with ``torch.backends.cuda.matmul.allow_tf32``), ``bf16``
(the step in bf16 autocast: matmuls at the bf16 peak, autocast's casts as
kernels of their own).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .cliutil import emit_json, number

PRECISIONS = {"fp32": ("float32", False), "tf32": ("float32", True), "bf16": ("bfloat16", False)}


def roofline_profile(
    model_spec: str,
    batch_size: int | None,
    device: Any,
    precision: str = "fp32",
    eff: Any = None,
    optimizer: str = "sgd",
) -> tuple[Any, Any]:
    """(``GradProfile``, ``OpTable``) of ``model_spec`` on ``device`` (a name, path or ``DeviceSpec``)."""
    from realrun.optable import op_table
    from realrun.workloads import load_workload
    from simulator import zoo
    from simulator.roofline import OpTable, profile_from_optable

    dtype, tf32 = PRECISIONS[precision]
    dev = zoo.load_device(device) if isinstance(device, str) else device
    wl = load_workload(model_spec)
    table = OpTable.from_dict(op_table(wl, batch_size or wl.default_batch_size, dtype, optimizer))
    prof = profile_from_optable(table, dev, tf32, eff)
    return prof, table


def efficiency_from_profile(path: str, device: Any, precision: str | None = None) -> tuple[Any, dict[str, Any]]:
    """Efficiencies and launch floor of ``device`` fitted to the measured profile at ``path``
    (its model, batch, optimizer and dtype as recorded)."""
    from simulator import zoo
    from simulator.profile import GradProfile
    from simulator.roofline import calibrate

    measured = GradProfile.load(path)
    if not str(measured.source).startswith("measured"):
        raise ValueError(
            f"{path} is not a measured profile (source {measured.source!r}): use one from `ddpsim profile`"
        )
    recorded = measured.env.get("precision")
    precision = precision or (recorded if recorded in PRECISIONS else "fp32")
    optimizer = (measured.env.get("profile") or {}).get("optimizer", "sgd")
    dev = zoo.load_device(device) if isinstance(device, str) else device
    _prof, table = roofline_profile(measured.model, measured.samples_per_step, dev, precision, optimizer=optimizer)
    eff, report = calibrate(table, measured, dev, PRECISIONS[precision][1])
    report["precision"] = precision
    report["profile"] = str(path)
    return eff, report


def summary(prof: Any) -> dict[str, Any]:
    env = prof.env
    return {
        "model": prof.model,
        "device": env["device"],
        "dtype": env["dtype"],
        "tf32": env["tf32"],
        "batch_size": prof.samples_per_step,
        "forward_s": prof.forward_s,
        "backward_s": prof.backward_s,
        "optimizer_s": prof.optimizer_s,
        "compute_s": prof.compute_s,
        "fwd_flops_per_step": env["fwd_flops_per_step"],
        "bwd_flops_per_step": env["bwd_flops_per_step"],
        "kernels": env["kernels"],
        "bound_s": env["bound_s"],
        "bound_kernels": env["bound_kernels"],
        "efficiency": env["efficiency"],
    }


def bound_line(prof: Any) -> str:
    env = prof.env
    parts = [
        f"{env['bound_kernels'].get(k, 0)} {k}-bound ({env['bound_s'].get(k, 0.0) * 1e3:.2f} ms)"
        for k in ("compute", "memory", "launch")
    ]
    return f"{env['kernels']} kernels: " + ", ".join(parts)


def cmd_roofline(args: argparse.Namespace) -> int:
    from simulator import zoo
    from simulator.roofline import bound_report

    dev = zoo.load_device(args.device)
    eff, cal = None, None
    if args.calibrate_device_from:
        eff, cal = efficiency_from_profile(args.calibrate_device_from, dev)
        if cal["precision"] != args.dtype:
            print(
                f"ddpsim roofline: note: efficiencies fitted in {cal['precision']} applied to {args.dtype}; "
                "a device's efficiency differs per dtype",
                file=sys.stderr,
            )
    prof, table = roofline_profile(args.model, args.batch_size, dev, args.dtype, eff, args.optimizer)
    rows = bound_report(table, dev, PRECISIONS[args.dtype][1], eff)
    if args.out:
        prof.save(args.out)
    if args.json:
        emit_json(args, {**summary(prof), "calibration": cal, "ops": rows[: args.top]})
        return 0
    e = prof.env["efficiency"]
    if cal:
        print(
            f"calibrated on {cal['model']} (batch {cal['batch_size']}, {cal['precision']}) from {cal['profile']}: "
            f"measured forward {cal['measured_forward_s'] * 1e3:.2f} ms, backward {cal['measured_backward_s'] * 1e3:.2f} ms; "
            f"fitted {cal['fitted_forward_s'] * 1e3:.2f} / {cal['fitted_backward_s'] * 1e3:.2f} ms"
        )
    print(
        f"{prof.model} on {dev.name}, {args.dtype}, batch {prof.samples_per_step}: forward {prof.forward_s * 1e3:.3f} ms, "
        f"backward {prof.backward_s * 1e3:.3f} ms, optimizer ({args.optimizer}) {prof.optimizer_s * 1e3:.3f} ms, "
        f"compute {prof.compute_s * 1e3:.3f} ms"
    )
    print(
        f"  FLOPs forward {prof.env['fwd_flops_per_step'] / 1e9:.3f} G, backward {prof.env['bwd_flops_per_step'] / 1e9:.3f} G; "
        f"efficiency matmul {e['matmul']:.3f}, memory {e['memory']:.3f}, launch {e['launch_s'] * 1e6:.2f} us ({e['source']})"
    )
    print(f"  {bound_line(prof)}")
    if args.out:
        print(f"  profile written to {args.out}")
    print(f"  {'op':<58} {'phase':<5} {'kernels':>7} {'ms':>9} {'GFLOP':>9} {'MB':>9}  bound")
    for r in rows[: args.top]:
        print(
            f"  {r['op']:<58} {r['phase']:<5} {r['kernels']:>7} {r['time_s'] * 1e3:>9.3f} "
            f"{r['flops'] / 1e9:>9.3f} {r['bytes'] / 1e6:>9.2f}  {r['bound']}"
        )
    return 0


def add_roofline_command(sub: Any) -> None:
    r = sub.add_parser(
        "roofline",
        help="compute time of a workload on a device spec, per kernel (roofline + launch floor); no GPU needed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("--model", default="gpt", help="built-in workload (gpt:n_layer=12,...) or path/to/file.py:build_fn")
    r.add_argument("--device", default="h100-sxm", help="device spec: a name (`ddpsim models`) or a device JSON")
    r.add_argument("--dtype", default="fp32", choices=tuple(PRECISIONS), help="precision of the step")
    r.add_argument(
        "--batch-size", type=number(int, 1, 1 << 20), default=None, help="per rank (default: the workload's)"
    )
    r.add_argument("--optimizer", default="sgd", choices=("sgd", "adam"), help="optimizer timed")
    r.add_argument(
        "--calibrate-device-from",
        default=None,
        metavar="PROFILE.json",
        help="fit the device's efficiencies and launch floor to this profile measured on it (`ddpsim profile`), "
        "then predict --model with them",
    )
    r.add_argument("--top", type=number(int, 0, 10_000), default=12, help="rows of the per-op table")
    r.add_argument(
        "--out", default=None, metavar="PROFILE.json", help="write the predicted profile (for predict, sweep, tune)"
    )
    r.set_defaults(func=cmd_roofline, _outputs={"out": "file"})
