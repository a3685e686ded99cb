"""The sharded optimizer's step measured against torch DDP's: what its broadcasts cost in a real step.

``sharded`` (ZeRO-1, ``realrun.sharded``) is torch DDP plus, after the optimizer, one blocking broadcast per
parameter from its owner. The broadcast fit (``calibration.calibrate.fit_network``) times each broadcast after a
barrier, one root, one buffer. In the step the calls follow each other and the optimizer, the owner alternating,
each into another parameter. The validation rows of ``sharded`` ran short on loopback in nearly every stored run
(cnn -3..-10 %, micro-DLRM -7..-22 % at 4-64 MiB) while those over emulated links did not; on this VM's loopback
(2 gloo ranks, 2026-11-29, ``benchmarks/results/sharded_loopback_2026-11-29/``) micro-DLRM's sharded step ran 0.17 ms
a broadcast over what the model put between it and torch DDP's step in one run (6.36 ms measured, 3.60 modelled),
and -0.013..+0.078 ms, within the noise, in four calibrations minutes later: the excess moves from minute to minute.

The probe: torch DDP and sharded at one cap (one bucket: the reducer's part is one call in both), interleaved in
turns of timed steps after an untimed one, as ``validate`` measures (``calibration.validate.auto_block``: 10 steps a
turn where the step is short, else 1). The fit: the measured difference of
the two medians, less the difference the model has at the calibration's terms, over the broadcasts:
``CostModel.broadcast_step_extra_s``. Its 95 % interval from resampling whole turns (both configurations' steps of
a turn together: the pairing the interleaving gives); kept where that interval excludes 0, as the other in-step
terms are.

The step check rides on the same turns: copies of the bare module among the configurations
(``calibration.validate.baseline_order``) and four more (``check_configs``): torch DDP at ``CHECK_MB`` (several
buckets, a cap outside ``validate``'s grid; a third of the gradients for a model with less than twice that:
``check_mb_for``) and at a quarter of it, the hand-written ``bucketed`` at it and at four times it (records of the
twenty-third session hold the first of these only). Each configuration is then predicted as
``validate`` predicts a row (the profile rescaled to the compute-only steps' median, the cost as that order sees
it) at the terms as fitted, the extra as kept; ``log(predicted / measured median)`` over the rows no term was
fitted to (at least ``MIN_CHECK_ROWS``) is the model's error the intervals carry (``step_check_residual``, ``calibration.params.Params.
uncertainty``). The in-step probe's recorded steps, which carried it before, are steps with a recorder, and the
model's terms were fitted to their backward ends: in runs m53 and m54 they ran 2.6-4.9 % (RMS) from the model in
three link cells whose rows' median error was 1.3-1.8 %, which covered every row, and 0.9-1.2 % in two loopback
cells of m52, which covered 53 and 71 %.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.network import CostModel
from simulator.profile import GradProfile
from simulator.units import MIB

N_BOOT = 2000
MIN_TURNS = 5  # fewer paired turns than this: no interval, nothing kept
# The step check's third configuration: torch DDP at a cap outside ``validate``'s grid (0.25, 1, 4, 16, 64 MiB),
# several buckets for every workload with more than twice as many gradient bytes; smaller ones get a third of
# theirs (``check_mb_for``).
CHECK_MB = 2.0
MIN_CHECK_ROWS = 2  # rows no term was fitted to: fewer, and the intervals keep the in-step probe's model error
CHECK_STRATEGIES = ("torch-ddp", "bucketed")  # what a check row may be besides the probe's own two


def probe_steps(predicted_step_s: float, min_steps: int, seconds: float, block: int) -> int:
    """Timed steps per configuration: ``min_steps``, more where that many steps of ``predicted_step_s`` would not
    fill ``seconds``, at least ``MIN_TURNS`` turns; whole turns of ``block``."""
    n = max(min_steps, math.ceil(seconds / predicted_step_s) if predicted_step_s > 0 else min_steps)
    return block * max(MIN_TURNS, math.ceil(n / block))


def check_mb_for(total_grad_bytes: int) -> float | None:
    """The step check's many-bucket cap for a model of ``total_grad_bytes``: ``CHECK_MB`` where that makes several
    buckets of it (over twice the cap), else a third of its gradients to two significant figures (micro-DLRM's
    3.9 MiB: 1.3); ``None`` for a model without gradients."""
    if total_grad_bytes <= 0:
        return None
    if total_grad_bytes > 2 * CHECK_MB * MIB:
        return CHECK_MB
    return _two_figures(total_grad_bytes / 3 / MIB)


def _two_figures(mb: float) -> float:
    """A cap to two significant figures (micro-DLRM's third, 1.2999 MiB: 1.3)."""
    return float(f"{mb:.2g}")


def check_configs(total_grad_bytes: int) -> list[tuple[str, float]]:
    """The step check's configurations beside the probe's own two (torch DDP and sharded at one bucket): torch DDP
    at ``check_mb_for``'s cap and at a quarter of it (more, smaller buckets), and the hand-written ``bucketed`` at
    that cap and at four times it (fewer buckets), each cap to two significant figures; none for a model without
    gradients. Four rows no term is fitted to, besides the two: from 2-3 residuals the spread the intervals
    carry is known to about +-40-50 %, which alone keeps most 17-row cells out of a 75-90 % coverage band
    (``benchmarks/coverage_pooled.py --check-rows``; BENCHMARKS.md, "Twenty-fourth session")."""
    base = check_mb_for(total_grad_bytes)
    if base is None:
        return []
    return [
        ("torch-ddp", base),
        ("torch-ddp", _two_figures(base / 4)),
        ("bucketed", base),
        ("bucketed", _two_figures(base * 4)),
    ]


def measure_sharded_probe(
    pool: Any,
    model: str,
    batch_size: int,
    bucket_mb: float,
    steps: int,
    block: int,
    optimizer: str = "sgd",
    checks: Sequence[tuple[str, float]] = (),
) -> dict[str, Any]:
    """torch DDP and sharded at ``bucket_mb`` and the step check's ``checks`` (``(strategy, bucket_mb)``:
    ``check_configs``), ``steps`` timed steps each, beside copies of the bare module
    (``calibration.validate.baseline_order``: as ``validate`` measures), interleaved in turns of ``block`` (one
    untimed turn first); the step times (the slowest rank's) as a record's payload."""
    from realrun.bench_ddp import measure_interleaved

    from .validate import baseline_order

    members: list[tuple[str, float]] = [("torch-ddp", bucket_mb), ("sharded", bucket_mb), *checks]
    order = baseline_order(len(members))
    res = measure_interleaved(
        pool,
        model,
        [("compute", None) if k is None else members[k] for k in order],
        batch_size=batch_size,
        steps=steps,
        warmup=1,
        optimizer=optimizer,
        block=block,
    )
    by = {k: list(r.step_times_s) for k, r in zip(order, res) if k is not None}
    out: dict[str, Any] = {
        "bucket_mb": bucket_mb,
        "block": block,
        "optimizer": optimizer,
        "torch_ddp_step_times_s": by[0],
        "sharded_step_times_s": by[1],
        "compute_step_times_s": [t for k, r in zip(order, res) if k is None for t in r.step_times_s],
    }
    if checks:
        out["checks"] = [
            {"strategy": st, "bucket_mb": mb, "step_times_s": by[k]} for k, (st, mb) in enumerate(checks, start=2)
        ]
    return out


def simulated_difference_s(profile: GradProfile, cost: CostModel, world_size: int, bucket_mb: float) -> float:
    """The model's sharded step less its torch DDP step at ``bucket_mb``, ``broadcast_step_extra_s`` left out."""
    from simulator.predict import predict
    from simulator.strategies import StrategySpec

    c = cost.with_overrides(broadcast_step_extra_s=0.0)
    sharded, ddp = (
        predict(profile, c, StrategySpec(s, bucket_mb=bucket_mb), world_size).step_time_s
        for s in ("sharded", "torch-ddp")
    )
    return sharded - ddp


def n_broadcasts(profile: GradProfile) -> int:
    """The sharded optimizer's broadcasts a step: one per trainable parameter."""
    return sum(1 for p in profile.params if p.requires_grad)


def fit_sharded_probe(
    probe: Mapping[str, Any],
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    n_boot: int = N_BOOT,
    seed: int = 0,
    unc: Any = None,
) -> dict[str, Any]:
    """``broadcast_step_extra_s`` from a probe record's payload (``measure_sharded_probe``), against ``cost`` (the
    calibration's other terms) and ``profile``; with its 95 % interval and whether it was kept; and the step check
    (``check_rows``) at those terms and the extra as kept, where the record has compute-only steps."""
    try:
        ddp = [float(x) for x in probe.get("torch_ddp_step_times_s") or []]
        sh = [float(x) for x in probe.get("sharded_step_times_s") or []]
        comp = [float(x) for x in probe.get("compute_step_times_s") or []]
        checks = _check_steps(probe)
        mb = float(probe["bucket_mb"])
        block = int(probe.get("block") or 1)
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"a sharded-step probe record that is not one ({type(e).__name__}: {e})") from None
    caps = [mb, *(c for _, c, _ in checks)]
    times = ddp + sh + comp + [t for _, _, ts in checks for t in ts]
    if not (all(math.isfinite(c) and c > 0 for c in caps) and block >= 1) or not all(
        math.isfinite(t) and t > 0 for t in times
    ):
        raise ValueError("a sharded-step probe record with a cap, turn or step time that is not a number > 0")
    if any(st not in CHECK_STRATEGIES for st, _, _ in checks):
        raise ValueError(f"a sharded-step probe record whose check names a strategy outside {CHECK_STRATEGIES}")
    out = _fit_difference(ddp, sh, mb, block, profile, cost, world_size, n_boot, seed)
    if comp:
        kept = cost.with_overrides(broadcast_step_extra_s=out["broadcast_step_extra_s"])
        measured = [("torch-ddp", mb, ddp, False), ("sharded", mb, sh, out["identified"])]
        measured += [(st, c, ts, False) for st, c, ts in checks]
        out["check"] = check_rows(measured, comp, block, profile, kept, world_size, unc)
    return out


def _check_steps(probe: Mapping[str, Any]) -> list[tuple[str, float, list[float]]]:
    """The step check's ``(strategy, bucket_mb, step times)`` of a probe record: its ``checks`` (since the
    twenty-fourth session), else torch DDP at ``check_mb`` (the twenty-third), else none (before it)."""
    if "checks" in probe:
        return [
            (str(c["strategy"]), float(c["bucket_mb"]), [float(x) for x in c["step_times_s"]]) for c in probe["checks"]
        ]
    old = [float(x) for x in probe.get("torch_ddp_check_step_times_s") or []]
    return [("torch-ddp", float(probe["check_mb"]), old)] if old else []


def check_rows(
    measured: Sequence[tuple[str, float, Sequence[float], bool]],
    compute_s: Sequence[float],
    block: int,
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    unc: Any = None,
) -> list[dict[str, Any]]:
    """The step check: each ``(strategy, bucket_mb, step times, fitted)`` measured beside the compute-only steps
    ``compute_s`` predicted as ``validate`` predicts a row (the profile rescaled to their median, the cost as that
    order sees it: ``calibration.validate.order_cost``), its ``log(predicted / measured median)``. ``fitted``: a
    row a term was fitted to (sharded's, where the probe kept the extra), which is no check."""
    from realrun.stats import summarize
    from simulator.predict import predict
    from simulator.strategies import StrategySpec

    from .validate import order_cost, rescaled_profile

    prof, _ = rescaled_profile(profile, summarize(list(compute_s)).median_s)
    c = order_cost(cost, True, block)
    rows = []
    for strategy, mb, times, fitted in measured:
        if not times:
            continue
        spec = StrategySpec(strategy, bucket_mb=mb)
        pred = predict(prof, c, spec, world_size).step_time_s
        meas = statistics.median(times)
        row = {
            "strategy": strategy,
            "bucket_mb": mb,
            "steps": len(times),
            "measured_median_s": meas,
            "predicted_s": pred,
            "log_residual": math.log(pred / meas),
            "fitted": bool(fitted),
        }
        if unc is not None:
            row["inputs_log_sd"] = inputs_log_sd(prof, c, unc, spec, world_size, len(times))
        rows.append(row)
    return rows


def inputs_log_sd(profile: Any, cost: Any, unc: Any, spec: Any, world_size: int, steps: int) -> float:
    """The standard deviation of ``log`` of the predicted median of ``steps`` steps over 32 seeded draws of
    ``unc``'s inputs (``simulator.interval``, as every interval draws them), the model error left out; 0 where
    nothing is drawn."""
    from dataclasses import replace

    import numpy as np

    from simulator.interval import draw_inputs, step_times_over

    u = replace(unc, model_log_sd=0.0).for_cost(cost)
    if not u.sources:
        return 0.0
    times = step_times_over(draw_inputs(profile, cost, u, 32, 0, steps), spec, world_size)
    return float(np.std(np.log(times), ddof=1))


def step_check_residual(fit: Mapping[str, Any] | None) -> float | None:
    """The model's own error at the step check: the root mean square of its ``log(predicted / measured)`` over the
    rows no term was fitted to (``check_rows``), less in quadrature what the inputs' errors spread those rows'
    predictions by (each row's ``inputs_log_sd``, where the calibration gave the check its inputs' errors:
    every interval draws them again, so they are counted once); 0 where that spread covers the residuals. ``None``
    where the probe had no check (a record from before it, or no compute-only steps) or fewer than
    ``MIN_CHECK_ROWS`` such rows: one residual is no spread.

    From the 2-3 rows of the twenty-third session's check the difference of two spreads was mostly noise (replayed
    over runs m55-m58 it set the term to 0 in 3 of 12 cells, two then covering 47 and 59 %; commit 2ee0d4d,
    reverted), and the plain RMS erred wide (pooled 86.8 %, 3 cells in 75-90 %). From the 5-6 rows of
    ``check_configs`` the RMS tracked the rows' own RMS error (run m59) and the intervals covered 92.2 %, 4 cells in
    band; with the subtraction, replayed over m59's records, 81.9 %, 7 cells in band, none under 53 %
    (BENCHMARKS.md, "Twenty-fourth session")."""
    rows = _check_rows_counted(fit)
    if len(rows) < MIN_CHECK_ROWS:
        return None
    square = sum(float(r["log_residual"]) ** 2 - float(r.get("inputs_log_sd") or 0.0) ** 2 for r in rows)
    return math.sqrt(max(0.0, square) / len(rows))


def step_check_residuals(fit: Mapping[str, Any] | None) -> list[float]:
    """The step check's ``log(predicted / measured)`` of each row no term was fitted to (``check_rows``); [] where
    the probe had no check."""
    return [float(r["log_residual"]) for r in _check_rows_counted(fit)]


def _check_rows_counted(fit: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The step check's rows that count: no term fitted to them, a finite residual."""
    rows = [r for r in ((fit or {}).get("check") or ()) if isinstance(r, Mapping) and not r.get("fitted")]
    return [r for r in rows if math.isfinite(float(r.get("log_residual", math.nan)))]


def _fit_difference(
    ddp: list[float],
    sh: list[float],
    mb: float,
    block: int,
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    """The extra per broadcast from the two configurations' steps, its interval over resampled turns, kept or not."""
    import numpy as np

    n = n_broadcasts(profile)
    sim = simulated_difference_s(profile, cost, world_size, mb)
    out: dict[str, Any] = {
        "bucket_mb": mb,
        "steps": min(len(ddp), len(sh)),
        "n_broadcasts": n,
        "simulated_difference_s": sim,
        "broadcast_step_extra_s": 0.0,
        "identified": False,
    }
    if not ddp or not sh or n == 0:
        return out
    meas = statistics.median(sh) - statistics.median(ddp)
    extra = (meas - sim) / n
    out.update(
        torch_ddp_median_s=statistics.median(ddp),
        sharded_median_s=statistics.median(sh),
        measured_difference_s=meas,
        fitted_s=extra,
    )
    turns = min(len(ddp), len(sh)) // block
    if turns < MIN_TURNS:
        return out
    a = np.asarray(ddp[: turns * block]).reshape(turns, block)
    b = np.asarray(sh[: turns * block]).reshape(turns, block)
    pick = np.random.default_rng(seed).integers(turns, size=(n_boot, turns))
    draws = (np.median(b[pick].reshape(n_boot, -1), axis=1) - np.median(a[pick].reshape(n_boot, -1), axis=1) - sim) / n
    lo, hi = (float(x) for x in np.percentile(draws, [2.5, 97.5]))
    kept = lo > 0 or hi < 0
    out.update(ci95_s=[lo, hi], turns=turns, identified=kept, broadcast_step_extra_s=extra if kept else 0.0)
    return out


def sharded_probe_line(fit: Mapping[str, Any]) -> str:
    """One progress line for ``fit_sharded_probe``'s result."""
    head = f"sharded step at {fit['bucket_mb']:g} MiB against torch DDP's, {fit['steps']} steps each"
    if "measured_difference_s" not in fit:
        return f"{head}: no steps measured, nothing kept"
    ms = 1e3
    body = (
        f": {fit['measured_difference_s'] * ms:+.2f} ms measured, {fit['simulated_difference_s'] * ms:+.2f} ms "
        f"modelled, {fit['fitted_s'] * ms:+.3f} ms for each of its {fit['n_broadcasts']} broadcasts"
    )
    ci = fit.get("ci95_s")
    if not ci:
        return f"{head}{body} (too few turns for an interval): not kept"
    verdict = "kept" if fit["identified"] else "within the probe's noise, not kept"
    return f"{head}{body} (95 % {ci[0] * ms:+.3f}..{ci[1] * ms:+.3f} ms): {verdict}"


def step_check_line(fit: Mapping[str, Any]) -> str | None:
    """One progress line for the step check in ``fit_sharded_probe``'s result; ``None`` where there was none."""
    rows = (fit or {}).get("check") or []
    if not rows:
        return None
    parts = []
    for r in rows:
        err = (r["predicted_s"] - r["measured_median_s"]) / r["measured_median_s"] * 100
        tag = " (fitted, no check)" if r.get("fitted") else ""
        parts.append(f"{r['strategy']} {r['bucket_mb']:g} MiB {err:+.1f} %{tag}")
    sd = step_check_residual(fit)
    tail = ""
    if sd is not None:
        counted = _check_rows_counted(fit)  # the rows ``step_check_residual`` counted
        raw = math.sqrt(sum(float(r["log_residual"]) ** 2 for r in counted) / len(counted))
        spread = any(r.get("inputs_log_sd") for r in counted)
        tail = f": the model's own error {(math.exp(sd) - 1) * 100:.1f} %"
        if spread:  # say what was taken off: a 0.0 % beside misses of a few % reads as a contradiction otherwise
            tail += (
                f" (the misses' root mean square {(math.exp(raw) - 1) * 100:.1f} %, less what the fitted inputs' "
                "errors spread the predictions by)"
            )
        else:
            tail += " (the misses' root mean square)"
        tail += ", its intervals' model-error term"
    return "step check beside compute-only steps, predicted as validate predicts: " + ", ".join(parts) + tail
