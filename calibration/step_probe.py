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
FINE_PROBE_MB = 1 / 1024
K_MAX_OF_STEP = 0.05  # bracket of the per-call compute cost, as a share of the fine probe's backward end
_ROUNDS = 8
_ROUNDS_FINE = 40  # three terms converge more slowly: k and c trade off through both probes


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


def _root(f: Any, hi: float, xtol: float = 1e-4) -> float:
    """The smallest x in [0, hi] with f(x) >= 0 for an increasing f: 0 if f(0) >= 0, hi if f(hi) < 0."""
    from scipy.optimize import brentq

    f0 = f(0.0)
    if f0 >= 0:
        return 0.0
    fh = f(hi)
    if fh < 0:
        return hi
    return float(brentq(f, 0.0, hi, xtol=xtol, rtol=1e-6))


def fit_in_step(
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    bucket_mb: float,
    targets: dict[str, Any],
    fine: tuple[float, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``contention_c`` and ``comm_contention_c`` such that the simulated probe step has the measured
    backward end and summed in-step all-reduce time. ``profile`` is scaled here to the compute-only
    median in ``targets``; ``cost`` brings o, w, channels, copy rate and hooks (its contention terms are
    replaced).

    ``fine``: ``(bucket_mb, targets)`` of the same probe at a finer cap (more calls, the same bytes). Then
    a third term is fitted, ``call_cpu_s`` (work each call adds to the compute it overlaps), and the three
    meet four targets: ``c`` the coarse probe's backward end, ``call_cpu_s`` the fine probe's (where the
    calls are), ``c_comm`` the two probes' summed all-reduce time together; each by root finding with the
    others held, in turn, until none moves."""
    targets_f = fine[1] if fine else None
    prof, scale = _scaled(profile, targets)
    prof_f, scale_f = _scaled(profile, targets_f) if targets_f else (prof, scale)
    mb_f = fine[0] if fine else bucket_mb

    def sim(c: float, cc: float, k: float = 0.0) -> dict[str, float]:
        return simulated_terms(
            prof, cost.with_overrides(contention=c, comm_contention=cc, call_cpu_s=k), world_size, bucket_mb
        )

    def sim_f(c: float, cc: float, k: float) -> dict[str, float]:
        return simulated_terms(
            prof_f, cost.with_overrides(contention=c, comm_contention=cc, call_cpu_s=k), world_size, mb_f
        )

    def comm_gap(c: float, cc: float, k: float) -> float:
        gap = sim(c, cc, k)["comm_sum_s"] - targets["comm_sum_s"]
        if targets_f is not None:
            gap += sim_f(c, cc, k)["comm_sum_s"] - targets_f["comm_sum_s"]
        return gap

    c = cc = k = 0.0
    history = []
    for _ in range(_ROUNDS_FINE if targets_f is not None else _ROUNDS):
        prev = (c, cc, k)
        cc = _root(lambda x, c=c, k=k: comm_gap(c, x, k), C_MAX)
        c = _root(lambda x, cc=cc, k=k: sim(x, cc, k)["compute_s"] - targets["compute_s"], C_MAX)
        if targets_f is not None:
            k_max = K_MAX_OF_STEP * targets_f["compute_s"]
            k = _root(lambda x, c=c, cc=cc: sim_f(c, cc, x)["compute_s"] - targets_f["compute_s"], k_max, 1e-8)
        history.append((c, cc, k))
        tol = 1e-3 if targets_f is None else 1e-4  # one cap: as before the per-call term
        if all(abs(a - b) < tol for a, b in zip((c, cc), prev[:2])) and abs(k - prev[2]) < 1e-7:
            break
    # A target out of reach within the bracket says the factor is not what moves it in this step
    # (e.g. a step of 7 ms compute and 500 ms of link-bound all-reduces: no slowdown "while
    # computing" can stretch the calls enough). Such a factor is not identified by the probe: keep
    # the contention probe's value for it (``cost``'s), and refit the other with it held.
    fallback = []
    if cc >= C_MAX:
        cc = cost.comm_contention
        fallback.append("comm_contention_c")
        c = _root(lambda x: sim(x, cc, k)["compute_s"] - targets["compute_s"], C_MAX)
    if c >= C_MAX:
        c = cost.contention
        fallback.append("contention_c")
        if "comm_contention_c" not in fallback:
            cc = _root(lambda x: comm_gap(c, x, k), C_MAX)
    if targets_f is not None and k >= K_MAX_OF_STEP * targets_f["compute_s"]:
        # the fine probe's backward end out of reach of any per-call cost: not what moves it
        k = 0.0
        fallback.append("call_cpu_s")
        c = _root(lambda x: sim(x, cc, k)["compute_s"] - targets["compute_s"], C_MAX)
    at_fit = sim(c, cc, k)
    out: dict[str, Any] = {
        "contention_c": c,
        "comm_contention_c": cc,
        "call_cpu_s": k,
        "not_identified": fallback,
        "bucket_mb": bucket_mb,
        "compute_scale": scale,
        "measured": {q: v for q, v in targets.items()},
        "simulated_at_fit": at_fit,
        "simulated_without_contention": sim(0.0, 0.0),
        "rounds": len(history),
        "at_bound": bool(fallback),
    }
    if targets_f is not None:
        out["fine"] = {
            "bucket_mb": mb_f,
            "compute_scale": scale_f,
            "measured": dict(targets_f),
            "simulated_at_fit": sim_f(c, cc, k),
            "simulated_without_contention": sim_f(0.0, 0.0, 0.0),
        }
    return out


def _scaled(profile: GradProfile, targets: Mapping[str, Any] | None) -> tuple[GradProfile, float]:
    """``profile`` scaled to the compute-only median measured beside a probe, and the scale."""
    base = (targets or {}).get("compute_only_median_s")
    if base and profile.compute_s > 0:
        return profile.scaled(base / profile.compute_s), base / profile.compute_s
    return profile, 1.0


N_BOOT = 24


def bootstrap_in_step(
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    bucket_mb: float,
    targets: dict[str, Any],
    n: int = N_BOOT,
    seed: int = 0,
    fine: tuple[float, dict[str, Any]] | None = None,
) -> list[tuple[float, ...]]:
    """``(contention_c, comm_contention_c)``, and ``call_cpu_s`` third with a ``fine`` probe, refitted on
    ``n`` resamples of the probe's steps (each step's backward end and summed all-reduce time kept
    together, the compute-only steps resampled beside them, each probe on its own): how far the fitted
    terms move with which steps happened to be measured. Empty when the targets kept no per-step terms.
    Seeded: the same records give the same draws."""
    import numpy as np

    if len(targets.get("per_step") or []) < 2:
        return []
    rng = np.random.default_rng(seed)
    out: list[tuple[float, ...]] = []
    for _ in range(n):
        t = _resampled(targets, rng)
        f_t = (fine[0], _resampled(fine[1], rng)) if fine else None
        f = fit_in_step(profile, cost, world_size, bucket_mb, t, fine=f_t)
        d = (f["contention_c"], f["comm_contention_c"])
        out.append((*d, f["call_cpu_s"]) if fine else d)
    return out


def _resampled(targets: dict[str, Any], rng: Any) -> dict[str, Any]:
    """``targets`` with its medians taken over a resample (with replacement) of its steps."""
    steps = targets.get("per_step") or []
    base = targets.get("compute_only_step_times_s") or []
    if len(steps) < 2:
        return targets
    pick = [steps[int(k)] for k in rng.integers(len(steps), size=len(steps))]
    t = dict(targets)
    t["compute_s"] = statistics.median(s["compute_s"] for s in pick)
    t["comm_sum_s"] = statistics.median(s["comm_sum_s"] for s in pick)
    if len(base) >= 2:
        t["compute_only_median_s"] = statistics.median(
            float(base[int(k)]) for k in rng.integers(len(base), size=len(base))
        )
    return t


def probe_fine_mb(bucket_mb: float) -> float:
    """The fine probe's cap: 1 KiB, under any gradient worth a call, so torch DDP makes about one call per
    gradient tensor (what ``individual`` does, and where a per-call cost shows most): the same bytes in
    the most calls a bucket cap can give, off the sizes ``validate`` and ``tune`` try."""
    return min(FINE_PROBE_MB, bucket_mb / 2)


def run_step_probe(
    pool: Any,
    model: str,
    batch_size: int,
    profile: GradProfile,
    cost: CostModel,
    steps: int,
    warmup: int = 3,
    fine: bool = True,
) -> tuple[TimelineRecord, TimelineRecord | None, dict[str, Any]]:
    """Measure the probe on ``pool`` (at its cap, and at the fine cap too with ``fine``) and fit it:
    ``(record, fine_record, fit)``."""
    mb = probe_bucket_mb(profile.total_grad_bytes)
    rec = measure_step_probe(pool, model, batch_size, mb, steps, warmup)
    rec_f = measure_step_probe(pool, model, batch_size, probe_fine_mb(mb), steps, warmup) if fine else None
    return rec, rec_f, fit_step_probe(rec, profile, cost, fine_record=rec_f)


def measure_step_probe(
    pool: Any, model: str, batch_size: int, bucket_mb: float, steps: int, warmup: int = 3
) -> TimelineRecord:
    """The probe's measurement alone: torch DDP steps at ``bucket_mb`` with timelines, beside compute-only steps."""
    from realrun.bench_ddp import measure_timeline

    return measure_timeline(pool, model, "torch-ddp", bucket_mb, batch_size, steps, warmup)


def fit_step_probe(
    record: TimelineRecord | Mapping[str, Any],
    profile: GradProfile,
    cost: CostModel,
    fine_record: TimelineRecord | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The in-step fit of a probe record (``measure_timeline``'s), measured now or read back from a
    ``"step_probe"`` record (``refit``, a dict), at the world size and bucket size the record was
    measured at, with its bootstrap refits; with ``fine_record`` (the same probe at a finer cap, the
    same world size) the per-call compute cost too."""
    from realrun.step_record import timeline_mapping

    rec = timeline_mapping(record)
    world_size, bucket_mb = int(rec["world_size"]), float(rec["bucket_mb"])
    targets = measured_targets(rec)
    fine = None
    if fine_record is not None:
        rec_f = timeline_mapping(fine_record)
        if int(rec_f["world_size"]) != world_size or float(rec_f["bucket_mb"]) >= bucket_mb:
            raise ValueError(
                f"the fine in-step probe (p = {rec_f['world_size']}, {rec_f['bucket_mb']} MiB) must be at "
                f"p = {world_size} and a cap under {bucket_mb:g} MiB"
            )
        fine = (float(rec_f["bucket_mb"]), measured_targets(rec_f))
    fit = fit_in_step(profile, cost, world_size, bucket_mb, targets, fine=fine)
    fit["loadavg"] = [rec.get("loadavg_before"), rec.get("loadavg_after")]
    fit["bootstrap"] = [list(d) for d in bootstrap_in_step(profile, cost, world_size, bucket_mb, targets, fine=fine)]
    return fit


def summary_line(fit: dict[str, Any]) -> str:
    m, s = fit["measured"], fit["simulated_at_fit"]
    fine = fit.get("fine")
    per_call = ""
    if fine:
        mf, sf = fine["measured"], fine["simulated_at_fit"]
        per_call = (
            f", {fit['call_cpu_s'] * 1e3:.2f} ms of compute per call (at {fine['bucket_mb'] * 1024:g} KiB, "
            f"{mf['n_buckets']:g} calls: backward end {mf['compute_s'] * 1e3:.1f} ms measured / "
            f"{sf['compute_s'] * 1e3:.1f} fitted, all-reduces {mf['comm_sum_s'] * 1e3:.1f} / "
            f"{sf['comm_sum_s'] * 1e3:.1f} ms)"
        )
    return (
        f"in-step probe (torch-ddp {fit['bucket_mb']:g} MiB, {m['steps']} steps): compute x{1 + fit['contention_c']:.2f} "
        f"while communicating, communication x{1 + fit['comm_contention_c']:.2f} while computing "
        f"(backward end {m['compute_s'] * 1e3:.1f} ms measured / {s['compute_s'] * 1e3:.1f} fitted, "
        f"all-reduces {m['comm_sum_s'] * 1e3:.1f} / {s['comm_sum_s'] * 1e3:.1f} ms per step)"
        + per_call
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
    k = ""
    if all(len(d) > 2 for d in boot):
        lo, hi = np.percentile([d[2] * 1e3 for d in boot], [10, 90])
        k = f", per call {lo:.2f}-{hi:.2f} ms"
    return (
        f"; refitted on {len(boot)} resamples of the steps: compute x{c[0]:.2f}-{c[1]:.2f}, "
        f"communication x{cc[0]:.2f}-{cc[1]:.2f}{k} (p10-p90)"
    )
