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
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from simulator.network import CostModel
from simulator.profile import GradProfile

N_BOOT = 2000
MIN_TURNS = 5  # fewer paired turns than this: no interval, nothing kept


def probe_steps(predicted_step_s: float, min_steps: int, seconds: float, block: int) -> int:
    """Timed steps per configuration: ``min_steps``, more where that many steps of ``predicted_step_s`` would not
    fill ``seconds``, at least ``MIN_TURNS`` turns; whole turns of ``block``."""
    n = max(min_steps, math.ceil(seconds / predicted_step_s) if predicted_step_s > 0 else min_steps)
    return block * max(MIN_TURNS, math.ceil(n / block))


def measure_sharded_probe(
    pool: Any, model: str, batch_size: int, bucket_mb: float, steps: int, block: int, optimizer: str = "sgd"
) -> dict[str, Any]:
    """torch DDP and sharded at ``bucket_mb``, ``steps`` timed steps each, interleaved in turns of ``block`` (one
    untimed turn first); the step times (the slowest rank's) as a record's payload."""
    from realrun.bench_ddp import measure_interleaved

    res = measure_interleaved(
        pool,
        model,
        [("torch-ddp", bucket_mb), ("sharded", bucket_mb)],
        batch_size=batch_size,
        steps=steps,
        warmup=1,
        optimizer=optimizer,
        block=block,
    )
    return {
        "bucket_mb": bucket_mb,
        "block": block,
        "optimizer": optimizer,
        "torch_ddp_step_times_s": list(res[0].step_times_s),
        "sharded_step_times_s": list(res[1].step_times_s),
    }


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
) -> dict[str, Any]:
    """``broadcast_step_extra_s`` from a probe record's payload (``measure_sharded_probe``), against ``cost`` (the
    calibration's other terms) and ``profile``; with its 95 % interval and whether it was kept."""
    import numpy as np

    try:
        ddp = [float(x) for x in probe.get("torch_ddp_step_times_s") or []]
        sh = [float(x) for x in probe.get("sharded_step_times_s") or []]
        mb = float(probe["bucket_mb"])
        block = int(probe.get("block") or 1)
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"a sharded-step probe record that is not one ({type(e).__name__}: {e})") from None
    if not (math.isfinite(mb) and mb > 0 and block >= 1) or not all(math.isfinite(t) and t > 0 for t in ddp + sh):
        raise ValueError("a sharded-step probe record with a cap, turn or step time that is not a number > 0")
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
