"""The in-step probe: how much compute and communication slow each other inside a real DDP step.

The contention probe (``probes.contention_probe``) runs forward+backward beside a loop of
all-reduces of one size. Inside a DDP step it is different: the all-reduces are the buckets',
launched from the autograd thread while backward runs, and on a CPU gloo's threads compete with
backward's for the same cores. Per-bucket timelines of real steps (``realrun.timeline``) measured
the in-step calls at 1.4-3.1x the time the contention probe predicted (BENCHMARKS.md, "Per-bucket
timelines"). So ``calibrate`` also runs real torch DDP steps of the calibration model at one bucket
size of its own (``PROBE_BUCKET_MB``: neither a size of ``validate``'s grid nor torch's default),
with timelines recorded and a compute-only step of a bare copy of the model between them, and fits
the two factors the simulator has for this:

* ``contention_c``: compute runs ``1 + c`` times slower while a collective is in flight. Target:
  the measured backward end (forward + backward of the DDP step).
* ``comm_contention_c``: communication runs ``1 + c_comm`` times slower while compute runs.
  Target: the sum over buckets of launch-to-completion (queueing behind the call before included).

Both targets are medians over the timed steps, each step on its slowest rank; the simulated side is
the same step in the simulator (profile scaled to the compute-only steps measured beside it, as
``validate`` scales it). The two are solved together: each factor by root finding with the other
held, alternately, until neither moves. A target already met with the factor at 0 gives 0 (nothing
is fitted negative). Validation rows are never used: the probe is its own configuration.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from simulator.network import CostModel
from simulator.predict import predict
from simulator.profile import GradProfile
from simulator.strategies import StrategySpec

if TYPE_CHECKING:
    from realrun.step_record import TimelineRecord

PROBE_BUCKET_MB = 2.0
C_MAX = 20.0  # bracket of both factors (x21): a target out of reach within it is not identified
_ROUNDS = 8


def probe_bucket_mb(total_grad_bytes: int) -> float:
    """The probe's cap: 2 MiB, or a quarter of the gradients for models under 8 MiB (so several buckets)."""
    return min(PROBE_BUCKET_MB, max(total_grad_bytes / 4 / (1 << 20), 1e-3))


def measured_targets(record: TimelineRecord | Mapping[str, Any]) -> dict[str, Any]:
    """Medians over a ``measure_timeline`` record's timed steps (each on its slowest rank) of the step
    terms the fit uses; also the compute-only median measured beside them. ``record``: the
    ``TimelineRecord`` just measured, or the dict read back from a ``"step_probe"`` record."""
    from realrun.step_record import timeline_mapping

    from .timeline import slowest_rank_timelines, step_terms

    rec = timeline_mapping(record)
    terms = [step_terms(tl) for tl in slowest_rank_timelines(rec)]
    if not terms:
        raise ValueError("the in-step probe recorded no steps")
    med = {q: statistics.median(t[q] for t in terms) for q in ("step_s", "compute_s", "comm_sum_s", "exposed_tail_s")}
    med["n_buckets"] = statistics.median(len(t["buckets"]) for t in terms)
    med["launch_delay_median_s"] = statistics.median(b["launch_delay_s"] for t in terms for b in t["buckets"])
    med["compute_only_median_s"] = rec["compute_median_s"]
    med["steps"] = len(terms)
    med["per_step"] = [{"compute_s": t["compute_s"], "comm_sum_s": t["comm_sum_s"]} for t in terms]
    med["compute_only_step_times_s"] = list(rec.get("compute_step_times_s") or ())
    return med


def simulated_terms(profile: GradProfile, cost: CostModel, world_size: int, bucket_mb: float) -> dict[str, float]:
    """The simulator's backward end, summed launch-to-completion, exposed tail and step for the probe."""
    res = predict(profile, cost, StrategySpec("torch-ddp", bucket_mb=bucket_mb), world_size)
    rows = res.rows  # torch-ddp: the buckets' all-reduces only
    last = max((r.end_s for r in rows), default=res.backward_end_s)
    return {
        "step_s": res.step_time_s,
        "compute_s": res.backward_end_s,
        "comm_sum_s": sum(r.end_s - r.ready_s for r in rows),
        "exposed_tail_s": max(0.0, last - res.backward_end_s),
        "n_buckets": len(rows),
    }


def _root(f: Any, hi: float) -> float:
    """The smallest x in [0, hi] with f(x) >= 0 for an increasing f: 0 if f(0) >= 0, hi if f(hi) < 0."""
    from scipy.optimize import brentq

    f0 = f(0.0)
    if f0 >= 0:
        return 0.0
    fh = f(hi)
    if fh < 0:
        return hi
    return float(brentq(f, 0.0, hi, xtol=1e-4, rtol=1e-6))


def fit_in_step(
    profile: GradProfile, cost: CostModel, world_size: int, bucket_mb: float, targets: dict[str, Any]
) -> dict[str, Any]:
    """``contention_c`` and ``comm_contention_c`` such that the simulated probe step has the measured
    backward end and summed in-step all-reduce time. ``profile`` is scaled here to the compute-only
    median in ``targets``; ``cost`` brings o, w, channels, copy rate and hooks (its contention terms are
    replaced)."""
    prof = profile
    base = targets.get("compute_only_median_s")
    scale = 1.0
    if base and profile.compute_s > 0:
        scale = base / profile.compute_s
        prof = profile.scaled(scale)

    def sim(c: float, cc: float) -> dict[str, float]:
        return simulated_terms(prof, cost.with_overrides(contention=c, comm_contention=cc), world_size, bucket_mb)

    c = cc = 0.0
    history = []
    for _ in range(_ROUNDS):
        c_prev, cc_prev = c, cc
        cc = _root(lambda x, c=c: sim(c, x)["comm_sum_s"] - targets["comm_sum_s"], C_MAX)
        c = _root(lambda x, cc=cc: sim(x, cc)["compute_s"] - targets["compute_s"], C_MAX)
        history.append((c, cc))
        if abs(c - c_prev) < 1e-3 and abs(cc - cc_prev) < 1e-3:
            break
    # A target out of reach within the bracket says the factor is not what moves it in this step
    # (e.g. a step of 7 ms compute and 500 ms of link-bound all-reduces: no slowdown "while
    # computing" can stretch the calls enough). Such a factor is not identified by the probe: keep
    # the contention probe's value for it (``cost``'s), and refit the other with it held.
    fallback = []
    if cc >= C_MAX:
        cc = cost.comm_contention
        fallback.append("comm_contention_c")
        c = _root(lambda x: sim(x, cc)["compute_s"] - targets["compute_s"], C_MAX)
    if c >= C_MAX:
        c = cost.contention
        fallback.append("contention_c")
        if "comm_contention_c" not in fallback:
            cc = _root(lambda x: sim(c, x)["comm_sum_s"] - targets["comm_sum_s"], C_MAX)
    at_fit = sim(c, cc)
    return {
        "contention_c": c,
        "comm_contention_c": cc,
        "not_identified": fallback,
        "bucket_mb": bucket_mb,
        "compute_scale": scale,
        "measured": {k: v for k, v in targets.items()},
        "simulated_at_fit": at_fit,
        "simulated_without_contention": sim(0.0, 0.0),
        "rounds": len(history),
        "at_bound": bool(fallback),
    }


N_BOOT = 24


def bootstrap_in_step(
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    bucket_mb: float,
    targets: dict[str, Any],
    n: int = N_BOOT,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """``(contention_c, comm_contention_c)`` refitted on ``n`` resamples of the probe's steps (each
    step's backward end and summed all-reduce time kept together, and the compute-only steps
    resampled beside them): how far the fitted pair moves with which steps happened to be measured.
    Empty when the targets kept no per-step terms. Seeded: the same record gives the same pairs."""
    import numpy as np

    steps = targets.get("per_step") or []
    base = targets.get("compute_only_step_times_s") or []
    if len(steps) < 2:
        return []
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        pick = [steps[int(k)] for k in rng.integers(len(steps), size=len(steps))]
        t = dict(targets)
        t["compute_s"] = statistics.median(s["compute_s"] for s in pick)
        t["comm_sum_s"] = statistics.median(s["comm_sum_s"] for s in pick)
        if len(base) >= 2:
            t["compute_only_median_s"] = statistics.median(
                float(base[int(k)]) for k in rng.integers(len(base), size=len(base))
            )
        f = fit_in_step(profile, cost, world_size, bucket_mb, t)
        out.append((f["contention_c"], f["comm_contention_c"]))
    return out


def run_step_probe(
    pool: Any, model: str, batch_size: int, profile: GradProfile, cost: CostModel, steps: int, warmup: int = 3
) -> tuple[TimelineRecord, dict[str, Any]]:
    """Measure the probe on ``pool`` and fit it: ``(record, fit)``."""
    rec = measure_step_probe(pool, model, batch_size, probe_bucket_mb(profile.total_grad_bytes), steps, warmup)
    return rec, fit_step_probe(rec, profile, cost)


def measure_step_probe(
    pool: Any, model: str, batch_size: int, bucket_mb: float, steps: int, warmup: int = 3
) -> TimelineRecord:
    """The probe's measurement alone: torch DDP steps at ``bucket_mb`` with timelines, beside compute-only steps."""
    from realrun.bench_ddp import measure_timeline

    return measure_timeline(pool, model, "torch-ddp", bucket_mb, batch_size, steps, warmup)


def fit_step_probe(record: TimelineRecord | Mapping[str, Any], profile: GradProfile, cost: CostModel) -> dict[str, Any]:
    """The in-step fit of a probe record (``measure_timeline``'s), measured now or read back from a
    ``"step_probe"`` record (``refit``, a dict), at the world size and bucket size the record was
    measured at, with its bootstrap refits."""
    from realrun.step_record import timeline_mapping

    rec = timeline_mapping(record)
    world_size, bucket_mb = int(rec["world_size"]), float(rec["bucket_mb"])
    targets = measured_targets(rec)
    fit = fit_in_step(profile, cost, world_size, bucket_mb, targets)
    fit["loadavg"] = [rec.get("loadavg_before"), rec.get("loadavg_after")]
    fit["bootstrap"] = [list(d) for d in bootstrap_in_step(profile, cost, world_size, bucket_mb, targets)]
    return fit


def summary_line(fit: dict[str, Any]) -> str:
    m, s = fit["measured"], fit["simulated_at_fit"]
    return (
        f"in-step probe (torch-ddp {fit['bucket_mb']:g} MiB, {m['steps']} steps): compute x{1 + fit['contention_c']:.2f} "
        f"while communicating, communication x{1 + fit['comm_contention_c']:.2f} while computing "
        f"(backward end {m['compute_s'] * 1e3:.1f} ms measured / {s['compute_s'] * 1e3:.1f} fitted, "
        f"all-reduces {m['comm_sum_s'] * 1e3:.1f} / {s['comm_sum_s'] * 1e3:.1f} ms per step)"
        + (
            f"; not identified by this step, the contention probe's kept: {', '.join(fit['not_identified'])}"
            if fit["not_identified"]
            else ""
        )
        + _spread(fit.get("bootstrap") or [])
    )


def _spread(boot: list[Any]) -> str:
    if len(boot) < 2:
        return ""
    import numpy as np

    c = np.percentile([1 + d[0] for d in boot], [10, 90])
    cc = np.percentile([1 + d[1] for d in boot], [10, 90])
    return f"; refitted on {len(boot)} resamples of the steps: compute x{c[0]:.2f}-{c[1]:.2f}, communication x{cc[0]:.2f}-{cc[1]:.2f} (p10-p90)"
