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

Both targets are medians over the timed steps, each step with every event at the last rank to reach it
(``timeline.across_ranks_timelines``: the backward end the later rank's, a bucket done when its all-reduce
is done on every rank, as the simulator's identical ranks have them); the simulated side is
the same step in the simulator (profile scaled to the compute-only steps measured beside it, as
``validate`` scales it). The two are solved together: each factor by root finding with the other
held, alternately, until neither moves. A target already met with the factor at 0 gives 0 (nothing
is fitted negative). Validation rows are never used: the probe is its own configuration.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from simulator.network import CostModel
from simulator.predict import predict
from simulator.profile import GradProfile
from simulator.strategies import StrategySpec
from simulator.units import MIB

if TYPE_CHECKING:
    from realrun.step_record import TimelineRecord

PROBE_BUCKET_MB = 2.0
C_MAX = 20.0  # bracket of both factors (x21): a target out of reach within it is not identified
FINE_PROBE_MB = 1 / 1024
# brackets of the work terms, as shares of forward+backward alone: per call, and all the gradients' bytes
K_MAX_OF_STEP = 0.05
KB_MAX_OF_STEP = 1.0
_ROUNDS_WORK = 40
_ROUNDS = 8


def probe_bucket_mb(total_grad_bytes: int) -> float:
    """The probe's cap: 2 MiB, or a quarter of the gradients for models under 8 MiB (so several buckets)."""
    return min(PROBE_BUCKET_MB, max(total_grad_bytes / 4 / (1 << 20), 1e-3))


def measured_targets(record: TimelineRecord | Mapping[str, Any]) -> dict[str, Any]:
    """Medians over a ``measure_timeline`` record's timed steps (each across ranks:
    ``across_ranks_timelines``) of the step terms the fit uses; also the compute-only median measured
    beside them. ``record``: the ``TimelineRecord`` just measured, or the dict read back from a
    ``"step_probe"`` record."""
    from realrun.step_record import timeline_mapping

    from .timeline import across_ranks_timelines, step_terms

    rec = timeline_mapping(record)
    terms = [step_terms(tl) for tl in across_ranks_timelines(rec)]
    if not terms:
        raise ValueError("the in-step probe recorded no steps")
    med = {
        q: statistics.median(t[q] for t in terms)
        for q in ("step_s", "compute_s", "comm_sum_s", "exposed_tail_s", "finalize_s", "optimizer_s")
    }
    # what recording costs a step, said beside the fit, not taken off its targets: taken off the backward ends
    # (run m38) it moved no micro-DLRM row and put lib's median 1.28 -> 1.65 % (BENCHMARKS.md, "Twelfth session")
    med["recording_s"] = recording_cost(rec)
    # the same configuration's steps without the recorder, beside them: what a user's step is (said; the model's
    # step is checked against the recorded ones its targets came from: ``calibration.params.probe_step_residuals``)
    plain = list(rec.get("plain_step_times_s") or ())
    if plain:
        med["plain_step_s"] = statistics.median(plain)
    med["n_buckets"] = statistics.median(len(t["buckets"]) for t in terms)
    med["launch_delay_median_s"] = statistics.median(b["launch_delay_s"] for t in terms for b in t["buckets"])
    med["compute_only_median_s"] = rec["compute_median_s"]
    med["steps"] = len(terms)
    med["per_step"] = [
        {"compute_s": t["compute_s"], "comm_sum_s": t["comm_sum_s"], "optimizer_s": t["optimizer_s"]} for t in terms
    ]
    med["compute_only_step_times_s"] = list(rec.get("compute_step_times_s") or ())
    return med


def recording_cost(record: Mapping[str, Any]) -> float:
    """What recording the timeline adds to a probe step: the median over turns of the recorded step less the
    plain one beside it (``measure_step_probe``'s third side), 0 where none was measured (records before it) or
    the difference is not positive. Measured on this VM (BENCHMARKS.md, "Twelfth session"): micro-DLRM's steps
    15.6 % longer recorded at a call per gradient, 8.4 % at the coarse cap; torch's own Python all-reduce hook,
    without stamps, 14.7 % and 3.4 %: most of it is what any Python comm hook costs."""
    rec, plain = list(record.get("step_times_s") or ()), list(record.get("plain_step_times_s") or ())
    if not plain or len(plain) != len(rec):
        return 0.0
    return max(0.0, statistics.median(a - b for a, b in zip(rec, plain)))


def simulated_terms(profile: GradProfile, cost: CostModel, world_size: int, bucket_mb: float) -> dict[str, float]:
    """The simulator's backward end, summed launch-to-completion, exposed tail and step for the probe."""
    res = predict(profile, cost, StrategySpec("torch-ddp", bucket_mb=bucket_mb), world_size)
    rows = res.rows  # torch-ddp: the buckets' all-reduces only
    last = max((r.end_s for r in rows), default=res.backward_end_s)
    comm_end = max(last, res.backward_end_s)
    return {
        "step_s": res.step_time_s,
        "compute_s": res.backward_end_s,
        "comm_sum_s": sum(r.end_s - r.ready_s for r in rows),
        "exposed_tail_s": max(0.0, last - res.backward_end_s),
        "n_buckets": len(rows),
        # from the last completion to the optimizer: the copy-out after it (and finalize, when in ``cost``)
        "finalize_s": max(0.0, res.step_time_s - profile.optimizer_s - comm_end),
        "n_params": sum(r.n_params for r in rows),
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
    hold_cc: float | None = None,
) -> dict[str, Any]:
    """The in-step terms such that the simulated probe step has the measured backward end and summed
    in-step all-reduce time. ``profile`` is scaled here to the compute-only median in ``targets``;
    ``cost`` brings o, w, channels, copy rate and hooks (its contention terms are replaced).

    One cap (``fine`` None): ``contention_c`` and ``comm_contention_c``, each by root finding with the
    other held, in turn, until neither moves.

    ``fine``: ``(bucket_mb, targets)`` of the same probe at a finer cap (the same bytes in many more
    calls). Then what compute loses is counted as work each call brings (``CostModel.call_cpu_s`` per
    call and ``call_cpu_s_per_byte``) instead of a factor over the time calls are in flight: a factor
    fitted at the coarse cap held through the fine probe's 52 calls over-predicted its backward end by
    52 ms on loopback (BENCHMARKS.md, "Runs m5 and m6"). Three terms, four targets: the per-byte cost the coarse
    probe's backward end, the per-call cost the fine probe's, ``comm_contention_c`` the two probes'
    summed all-reduce time together, each relative to its own measurement (the fine probe's 52 queued
    calls sum to ten times the coarse probe's: added in seconds, they set the factor alone); each by root
    finding with the others held, in turn. Where the work cannot reach a backward end within its bracket
    (a compute-bound slowdown, not one of the calls'), the factor fit is kept and ``not_identified`` says
    so.

    ``hold_cc``: ``comm_contention_c`` held at this value, the other terms fitted beside it
    (``fit_step_probe`` holds it at 0 where the bootstrap cannot tell it from 0)."""
    prof, scale = _scaled(profile, targets)

    def sim(c: float, cc: float, k: float = 0.0, kb: float = 0.0, fin: float = 0.0) -> dict[str, float]:
        return _sim(prof, cost, world_size, bucket_mb, c, cc, k, kb, fin)

    c = cc = k = kb = 0.0
    fallback: list[str] = []
    work = _fit_work(profile, cost, world_size, (bucket_mb, targets), fine, hold_cc) if fine is not None else None
    if work is not None:
        cc, k, kb, history = work["comm_contention_c"], work["call_cpu_s"], work["call_cpu_s_per_byte"], work["history"]
    else:
        if fine is not None:
            fallback.append("call_cpu_s")
        c, cc, history, not_identified = _fit_factors(sim, cost, targets, hold_cc)
        fallback[:0] = not_identified
    out: dict[str, Any] = {
        "contention_c": c,
        "comm_contention_c": cc,
        "call_cpu_s": k,
        "call_cpu_s_per_byte": kb,
        "not_identified": fallback,
        "bucket_mb": bucket_mb,
        "compute_scale": scale,
        "measured": {q: v for q, v in targets.items()},
        "simulated_at_fit": sim(c, cc, k, kb),
        "simulated_without_contention": sim(0.0, 0.0),
        "rounds": len(history),
        "at_bound": bool(fallback),
    }
    if fine is not None:
        prof_f, scale_f = _scaled(profile, fine[1])
        out["fine"] = {
            "bucket_mb": fine[0],
            "compute_scale": scale_f,
            "measured": dict(fine[1]),
            "simulated_at_fit": _sim(prof_f, cost, world_size, fine[0], c, cc, k, kb),
        }
    # the finalize after the last completion is fitted last: it moves none of the targets above
    fin = out["finalize_s_per_param"] = finalize_per_param(out)
    if fin:
        out["simulated_at_fit"] = sim(c, cc, k, kb, fin)
        if fine is not None:
            out["fine"]["simulated_at_fit"] = _sim(prof_f, cost, world_size, fine[0], c, cc, k, kb, fin)
    return out


def finalize_per_param(fit: Mapping[str, Any]) -> float:
    """torch DDP's work after the last bucket's all-reduce and copy-out, per parameter: at each cap the probe
    ran at, the measured median from the last completion (or backward's end) to the optimizer's start, less
    what the model has there (the last bucket's copy-out), over the parameters reduced; the mean over the
    caps, 0 if negative or not measured (records before the timelines kept it)."""
    per = []
    for part in (fit, fit.get("fine") or {}):
        m, s = part.get("measured") or {}, part.get("simulated_at_fit") or {}
        if m.get("finalize_s") is None or s.get("finalize_s") is None or not s.get("n_params"):
            continue
        per.append((float(m["finalize_s"]) - float(s["finalize_s"])) / float(s["n_params"]))
    return max(0.0, sum(per) / len(per)) if per else 0.0


def _fit_factors(
    sim: Any, cost: CostModel, targets: dict[str, Any], hold_cc: float | None = None
) -> tuple[float, float, list[Any], list[str]]:
    """``(contention_c, comm_contention_c, history, not_identified)`` at one cap: each factor by root
    finding with the other held, in turn, until neither moves (``hold_cc``: that factor fixed)."""
    c = 0.0
    cc = hold_cc or 0.0
    history = []
    for _ in range(_ROUNDS):
        c_prev, cc_prev = c, cc
        if hold_cc is None:
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
    if hold_cc is None and cc >= C_MAX:
        cc = cost.comm_contention
        fallback.append("comm_contention_c")
        c = _root(lambda x: sim(x, cc)["compute_s"] - targets["compute_s"], C_MAX)
    if c >= C_MAX:
        c = cost.contention
        fallback.append("contention_c")
        if "comm_contention_c" not in fallback and hold_cc is None:
            cc = _root(lambda x: sim(c, x)["comm_sum_s"] - targets["comm_sum_s"], C_MAX)
    return c, cc, history, fallback


def _sim(
    prof: GradProfile,
    cost: CostModel,
    world_size: int,
    bucket_mb: float,
    c: float,
    cc: float,
    k: float,
    kb: float,
    fin: float = 0.0,
) -> dict[str, float]:
    """``simulated_terms`` of the probe at ``bucket_mb`` with these contention terms and finalize cost in
    ``cost``."""
    over = dict(contention=c, comm_contention=cc, call_cpu_s=k, call_cpu_s_per_byte=kb, finalize_s_per_param=fin)
    return simulated_terms(prof, cost.with_overrides(**over), world_size, bucket_mb)


def _sim_at_fit(
    prof: GradProfile, cost: CostModel, world_size: int, bucket_mb: float, fit: Mapping[str, Any]
) -> dict[str, float]:
    """``_sim`` at the terms of an in-step ``fit`` (its contention terms, work and finalize)."""
    terms = (fit["contention_c"], fit["comm_contention_c"], fit["call_cpu_s"], fit["call_cpu_s_per_byte"])
    return _sim(prof, cost, world_size, bucket_mb, *terms, float(fit.get("finalize_s_per_param") or 0.0))


def _fit_work(
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    coarse: tuple[float, dict[str, Any]],
    fine: tuple[float, dict[str, Any]],
    hold_cc: float | None = None,
) -> dict[str, Any] | None:
    """``call_cpu_s_per_byte``, ``call_cpu_s`` and ``comm_contention_c`` from the probe at two caps (no
    factor: ``contention`` 0), or None when a backward end is out of reach of the work's bracket."""
    (mb, t), (mb_f, t_f) = coarse, fine
    prof, prof_f = _scaled(profile, t)[0], _scaled(profile, t_f)[0]

    def sims(cc: float, k: float, kb: float) -> tuple[dict[str, float], dict[str, float]]:
        return _sim(prof, cost, world_size, mb, 0.0, cc, k, kb), _sim(prof_f, cost, world_size, mb_f, 0.0, cc, k, kb)

    def comm_gap(cc: float, k: float, kb: float) -> float:
        a, b = sims(cc, k, kb)
        return _rel_gap(a["comm_sum_s"], t["comm_sum_s"]) + _rel_gap(b["comm_sum_s"], t_f["comm_sum_s"])

    alone = prof.forward_s + prof.backward_s  # what the backward end is without any communication
    k_max = K_MAX_OF_STEP * alone
    kb_max = KB_MAX_OF_STEP * alone / max(profile.total_grad_bytes, 1)
    k = kb = 0.0
    cc = hold_cc or 0.0
    history = []
    for _ in range(_ROUNDS_WORK):
        prev = (cc, k, kb)
        if hold_cc is None:
            cc = _root(lambda x, k=k, kb=kb: comm_gap(x, k, kb), C_MAX)
        kb = _root(lambda x, cc=cc, k=k: sims(cc, k, x)[0]["compute_s"] - t["compute_s"], kb_max, kb_max * 1e-6)
        k = _root(lambda x, cc=cc, kb=kb: sims(cc, x, kb)[1]["compute_s"] - t_f["compute_s"], k_max, 1e-8)
        history.append((0.0, cc, k, kb))
        if abs(cc - prev[0]) < 1e-4 and abs(k - prev[1]) < 1e-7 and abs(kb - prev[2]) <= kb_max * 1e-5:
            break
    if k >= k_max or kb >= kb_max:
        return None
    if hold_cc is None and cc >= C_MAX:
        cc = cost.comm_contention
    return {"comm_contention_c": cc, "call_cpu_s": k, "call_cpu_s_per_byte": kb, "history": history}


def _rel_gap(simulated: float, measured: float) -> float:
    """``simulated / measured - 1``; the difference in seconds where nothing was measured."""
    return simulated / measured - 1.0 if measured > 0 else simulated - measured


def _scaled(profile: GradProfile, targets: Mapping[str, Any] | None) -> tuple[GradProfile, float]:
    """``profile`` scaled to the compute-only median measured beside a probe, and the scale."""
    base = (targets or {}).get("compute_only_median_s")
    if base and profile.compute_s > 0:
        return profile.scaled(base / profile.compute_s), base / profile.compute_s
    return profile, 1.0


N_BOOT = 24
CHECK_MIN_DRAWS = 10


def comm_contention_check(fitted: float, draws: Sequence[float]) -> dict[str, Any]:
    """Whether the in-step probe tells ``comm_contention_c`` from 0: its bootstrap refits' 95 % percentile
    interval lies above 0, as the calibration asks of the leftover, the optimizer's extra and the
    broadcast-switch credit. Where the step is link-bound the calls overlap compute for a
    small share of their time, so a little noise in their summed time maps to a large factor: micro-DLRM's
    probe over 200 Mbit/s fitted x4.77, x8.50 and x8.65 in runs m43, m41 and m39 with intervals from x1.00 to
    x7.5-x14.9, and its torch-ddp and bucketed rows at 0.25 and 1 MiB ran long in all three (+4.0..+13.0 %).
    A fit of 0, or one with too few draws to judge (under ``CHECK_MIN_DRAWS``), stands as fitted."""
    import numpy as np

    out: dict[str, Any] = {"fitted": fitted, "draws": len(draws), "identified": True}
    if fitted <= 0 or len(draws) < CHECK_MIN_DRAWS:
        return out
    lo, hi = (float(x) for x in np.percentile(np.asarray(draws, dtype=float), [2.5, 97.5]))
    out.update(ci95=[lo, hi], identified=lo > 0)
    return out


def bootstrap_in_step(
    profile: GradProfile,
    cost: CostModel,
    world_size: int,
    bucket_mb: float,
    targets: dict[str, Any],
    n: int = N_BOOT,
    seed: int = 0,
    fine: tuple[float, dict[str, Any]] | None = None,
    hold_cc: float | None = None,
) -> list[tuple[float, ...]]:
    """``(contention_c, comm_contention_c)``, and ``call_cpu_s``, ``call_cpu_s_per_byte`` after them with a
    ``fine`` probe, refitted on
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
        f = fit_in_step(profile, cost, world_size, bucket_mb, t, fine=f_t, hold_cc=hold_cc)
        d = (f["contention_c"], f["comm_contention_c"])
        out.append((*d, f["call_cpu_s"], f["call_cpu_s_per_byte"]) if fine else d)
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


def probe_one_bucket_mb(total_grad_bytes: int) -> float:
    """The check probe's cap: the power of two (MiB) at or above all the gradients, so torch DDP makes one
    bucket and its one call starts after backward (no overlap: the shape the two fitted probes do not have)."""
    return float(2.0 ** math.ceil(math.log2(max(total_grad_bytes / MIB, 1 / 1024))))


@dataclass(frozen=True)
class StepProbe:
    """What ``run_step_probe`` measured and fitted: the records at the probe's cap, at the fine cap and at one
    bucket (the check: ``None`` where not run), and the fit."""

    record: TimelineRecord
    fine_record: TimelineRecord | None
    check_record: TimelineRecord | None
    fit: dict[str, Any]


def run_step_probe(
    pool: Any,
    model: str,
    batch_size: int,
    profile: GradProfile,
    cost: CostModel,
    steps: int,
    warmup: int = 3,
    fine: bool = True,
    steps_fine: int | None = None,
    steps_check: int | None = None,
    other_channel: CostModel | None = None,
) -> StepProbe:
    """Measure the probe on ``pool`` (at its cap, at the fine cap too with ``fine``: ``steps_fine`` steps,
    default ``steps``; and at one bucket, ``steps_check`` steps, where that is given and > 0) and fit it
    (``other_channel``: as ``fit_step_probe``)."""
    mb = probe_bucket_mb(profile.total_grad_bytes)
    rec = measure_step_probe(pool, model, batch_size, mb, steps, warmup)
    rec_f = (
        measure_step_probe(
            pool, model, batch_size, probe_fine_mb(mb), steps if steps_fine is None else steps_fine, warmup
        )
        if fine
        else None
    )
    rec_c = (
        measure_step_probe(pool, model, batch_size, probe_one_bucket_mb(profile.total_grad_bytes), steps_check, warmup)
        if steps_check
        else None
    )
    fit = fit_step_probe(rec, profile, cost, fine_record=rec_f, check_record=rec_c, other_channel=other_channel)
    return StepProbe(rec, rec_f, rec_c, fit)


def probe_steps(
    profile: GradProfile, cost: CostModel, world_size: int, bucket_mb: float, steps: int, min_seconds: float
) -> int:
    """Timed steps of the probe at ``bucket_mb``: ``steps``, or more where the step predicted from the network's
    fit would not fill ``min_seconds`` (``realrun.stats.steps_for_time``). Ten steps of micro-DLRM (about 20 ms
    each on this VM) put the probe's communication factor anywhere from x1.0 to x17.7 over six calibrations
    (bootstrap p10-p90 up to x1.0-12.8), and with it the rows with several buckets (BENCHMARKS.md, "Cross
    replay"); ten steps of gpt are two seconds."""
    from realrun.stats import steps_for_time

    if min_seconds <= 0:
        return steps
    est = predict(profile, cost, StrategySpec("torch-ddp", bucket_mb=bucket_mb), world_size).step_time_s
    return steps_for_time(steps, min_seconds, est)


def measure_step_probe(
    pool: Any, model: str, batch_size: int, bucket_mb: float, steps: int, warmup: int = 3, block: int = 1
) -> TimelineRecord:
    """The probe's measurement alone: torch DDP steps at ``bucket_mb`` with timelines, beside compute-only steps
    and the same configuration's steps without the recorder (what recording costs: ``recording_cost``, said
    beside the fit); in turns of ``block`` timed steps where ``block`` > 1 (``warmup`` counts turns then)."""
    from realrun.bench_ddp import measure_timeline

    return measure_timeline(pool, model, "torch-ddp", bucket_mb, batch_size, steps, warmup, block=block, plain=True)


PROBE_TERM_BOOT = 2000  # resamples for the leftover's and the optimizer's extra's intervals
# differences (pairs of turns, or steps), at least, for either to be kept: a percentile bootstrap of a median
# from fewer covers too little (gpt's probes over the emulated links, 10 steps a side, put a "leftover" of
# 10-28 ms above 0 at 90 % when the two sides' medians were compared)
PROBE_TERM_MIN_STEPS = 20


def kept_median(d: Any, key: str, seed: int = 0) -> dict[str, Any]:
    """The median of the differences ``d``, its 95 % percentile-bootstrap interval (seeded), whether it is
    kept (``PROBE_TERM_MIN_STEPS`` or more of them and the interval above 0), and under ``key`` the term's
    value: the median where kept, else 0."""
    import numpy as np

    rng = np.random.default_rng(seed)
    boot = np.median(rng.choice(d, (PROBE_TERM_BOOT, len(d))), axis=1)
    lo, hi = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
    med, kept = float(np.median(d)), lo > 0 and len(d) >= PROBE_TERM_MIN_STEPS
    return {"difference_s": med, "ci95_s": [lo, hi], "identified": kept, key: med if kept else 0.0}


def leftover_fit(*records: TimelineRecord | Mapping[str, Any] | None, seed: int = 0) -> dict[str, Any]:
    """What a step pays after a DDP step beyond after a compute-only step (``CostModel.leftover_s``; measured
    on micro-DLRM on loopback as on-CPU time in that step, mostly the switch from one copy of the model to
    another, not work left running: BENCHMARKS.md, "Thirtieth session"): over the probe records given (the coarse and the fine probe: their compute-only steps are the same bare
    module's), the median of paired differences, a compute-only step after a DDP step less the one after a
    compute-only step in the turn just after it.

    The probe steps turn ``i`` as (DDP, bare) when ``i`` is even and (bare, DDP) when odd (``measure_timeline``
    at ``block`` 1; with plain steps, (plain, DDP, bare) and its reverse), so a bare step follows a DDP step in
    even turns and a bare one in odd ones (``realrun.step_record.bare_follows_ddp``); each even turn's is paired
    with the next turn's, a step apart, so a drift of the machine (its compute-only steps varied 52-64 % in the
    runs of BENCHMARKS.md "Twelfth session") cancels in each pair. Records in turns (``block`` > 1) are left
    out. Kept only where there are ``PROBE_TERM_MIN_STEPS`` pairs or more and the median's 95 % bootstrap interval lies above 0; 0 otherwise
    (``identified`` False: the probe could not tell it from its noise), so noise is not fitted into every
    prediction. Fitted from the stored calibrations on this VM: micro-DLRM 0.20-0.48 ms on loopback and
    0.50-0.52 ms over 1000 Mbit/s, kept in every cell with 20 pairs; gpt, cnn and the library model have 8-15
    pairs (never kept)."""
    import numpy as np

    from realrun.step_record import bare_follows_ddp, timeline_mapping

    pairs: list[tuple[float, float]] = []
    for rec in records:
        if rec is None:
            continue
        r = timeline_mapping(rec)
        comp, w = list(r.get("compute_step_times_s") or ()), int(r.get("warmup") or 0)
        if int(r.get("block") or 1) != 1 or len(comp) != len(r.get("step_times_s") or ()):
            continue
        pairs += [(comp[j], comp[j + 1]) for j in range(len(comp) - 1) if bare_follows_ddp(w + j)]
    out: dict[str, Any] = {"leftover_s": 0.0, "identified": False, "pairs": len(pairs)}
    if len(pairs) < 2:
        return out
    a, b = np.asarray([p[0] for p in pairs]), np.asarray([p[1] for p in pairs])
    out.update(median_after_ddp_s=float(np.median(a)), median_after_compute_s=float(np.median(b)))
    out.update(kept_median(a - b, "leftover_s", seed=seed))
    return out


def optimizer_extra_fit(profile: GradProfile, *targets: Mapping[str, Any] | None, seed: int = 0) -> dict[str, Any]:
    """What the optimizer of a DDP step takes beyond the compute-only step's (``CostModel.optimizer_extra_s``):
    per probe step (both caps' ``measured_targets``), its optimizer (the slowest rank's, from ``optimizer_start``
    to ``optimizer_end``) less the profile's optimizer scaled as that probe scales it (to its compute-only steps);
    the median over the steps. Kept, as the leftover is, where there are ``PROBE_TERM_MIN_STEPS`` or more and the
    95 % bootstrap interval of the median lies above 0; 0 otherwise (nothing fitted negative). The interval is
    the probe steps' only: the profile's optimizer is taken as exact. Fitted on this VM (BENCHMARKS.md, "Twelfth
    session"): micro-DLRM 0.10-0.17 ms on loopback and over 1000 Mbit/s, kept in every cell; gpt's, cnn's and the
    library model's either way (cnn's below 0 in 3 of 4 cells, not fitted)."""
    import numpy as np

    diffs: list[float] = []
    for t in targets:
        if not t:
            continue
        steps = [s for s in t.get("per_step") or () if s.get("optimizer_s") is not None]
        if not steps:
            continue
        sim = _scaled(profile, t)[0].optimizer_s
        diffs += [float(s["optimizer_s"]) - sim for s in steps]
    out: dict[str, Any] = {"optimizer_extra_s": 0.0, "identified": False, "steps": len(diffs)}
    if len(diffs) < 2:
        return out
    out.update(kept_median(np.asarray(diffs), "optimizer_extra_s", seed=seed))
    return out


def _term_phrase(f: Mapping[str, Any] | None, what: str, steps: str, n: int, key: str) -> str:
    """One probe-fitted term in words, for the probe's summary line: ``what`` it measured, the difference and
    its interval over ``steps`` (``n`` the fewer a side), and whether it is kept (``f[key]``)."""
    if not f or "difference_s" not in f:
        return ""
    lo, hi = f["ci95_s"]
    if f["identified"]:
        verdict = f"kept, {f[key] * 1e3:.2f} ms"
    elif n < PROBE_TERM_MIN_STEPS:
        verdict = f"not kept (fewer than {PROBE_TERM_MIN_STEPS})"
    elif hi < 0:
        verdict = "below 0, not fitted"
    else:
        verdict = "within the probe's noise, not kept"
    return f"; {what} {f['difference_s'] * 1e3:+.2f} ms (95 % {lo * 1e3:+.2f}..{hi * 1e3:+.2f} ms, {steps}): {verdict}"


def optimizer_extra_phrase(of: Mapping[str, Any] | None) -> str:
    """The optimizer's extra in words, for the probe's summary line."""
    n = int((of or {}).get("steps", 0))
    return _term_phrase(of, "the optimizer in a DDP step beyond the profile's", f"{n} steps", n, "optimizer_extra_s")


def leftover_phrase(lf: Mapping[str, Any] | None) -> str:
    """The leftover fit in words, for the probe's summary line."""
    n = int((lf or {}).get("pairs", 0))
    what = "the leftover work: compute-only steps after a DDP step longer than after their own by"
    return _term_phrase(lf, what, f"{n} pairs of turns", n, "leftover_s")


QUEUED_MIN_SCALE = 0.05  # the bracket's low end: a queued call's latency part at least this share of the stream's
_QUEUED_GRID = 40  # scales simulated between it and 1; the bootstrap's medians are read off this curve


def queued_fit(
    profile: GradProfile,
    cost: CostModel,
    fit: Mapping[str, Any],
    fine_record: TimelineRecord | Mapping[str, Any] | None,
    world_size: int,
    seed: int = 0,
) -> dict[str, Any]:
    """``CostModel.queued_latency_scale`` from the fine probe (torch DDP at about a call per gradient): the scale of
    a queued call's latency part at which the probe's step, simulated at the fitted in-step terms (``fit``, with
    ``cost`` as the fit had it, the optimizer's extra added as ``params.probe_step_residuals`` adds it), equals
    the median of its plain steps, the same configuration's steps without the recorder measured in the same turns
    (what a user's step is; the recorded steps carry the recorder's Python hook on every call).

    The simulated step is taken over ``_QUEUED_GRID`` scales from ``QUEUED_MIN_SCALE`` to 1 and the measured
    median read off that curve, for the plain steps and for ``PROBE_TERM_BOOT`` resamples of them (seeded). Kept
    where there are ``PROBE_TERM_MIN_STEPS`` plain steps or more, the median lies within the curve's reach, and
    the resamples' 95 % interval of the scale lies below 1 (the probe tells queued calls from the stream's);
    else 1, as where the simulated step at scale 1 is not longer than the measured one (nothing is fitted above
    1: a slower queue is ``comm_contention_c``'s). Fitted last, after the terms the recorded steps set, so
    it takes up what the model's per-call time over-counts in a step of many calls.

    Not fitted on a pipelined channel (``cost.pipelined``): that model already holds a queued call's hand-off (it
    runs while the call before transfers), taken where the stream probe's calls launched at once, a queue measured
    on its own, cost ``max(o, n/w)`` a call (or where the in-step probe's steps chose it); a scale on that hand-off
    would count the same thing twice. Over the emulated links, where the channel is pipelined, the scale fitted
    0.05-0.80 in six calibrations of one cell (micro-DLRM, 1000 Mbit/s, m49-m60), an ill-posed fit taking up other
    terms' misses."""
    import numpy as np

    from realrun.step_record import timeline_mapping

    out: dict[str, Any] = {"queued_latency_scale": 1.0, "identified": False, "steps": 0}
    fine = fit.get("fine")
    if fine_record is None or not fine:
        return out
    if cost.pipelined:
        out["pipelined"] = True
        return out
    plain = [float(x) for x in timeline_mapping(fine_record).get("plain_step_times_s") or () if math.isfinite(x)]
    out["steps"] = len(plain)
    if len(plain) < 2:
        return out
    prof_f = _scaled(profile, fine["measured"])[0]
    extra = float(fit.get("optimizer_extra_s") or 0.0)
    grid = np.linspace(QUEUED_MIN_SCALE, 1.0, _QUEUED_GRID)
    sim = np.array(
        [
            _sim_at_fit(prof_f, cost.with_overrides(queued_latency_scale=float(q)), world_size, fine["bucket_mb"], fit)[
                "step_s"
            ]
            + extra
            for q in grid
        ]
    )
    sim = np.maximum.accumulate(sim)  # non-decreasing in the scale (re-timing can wobble it by rounding)

    def scale_at(t: Any) -> Any:  # the scale whose simulated step is t; clipped at the curve's two ends
        return np.interp(t, sim, grid, left=QUEUED_MIN_SCALE, right=1.0)

    med = float(np.median(plain))
    rng = np.random.default_rng(seed)
    boot = scale_at(np.median(rng.choice(plain, (PROBE_TERM_BOOT, len(plain))), axis=1))
    lo, hi = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
    q = float(scale_at(med))
    reach = med >= sim[0]
    kept = reach and hi < 1.0 and len(plain) >= PROBE_TERM_MIN_STEPS
    out.update(
        plain_median_s=med,
        simulated_at_1_s=float(sim[-1]),
        simulated_at_min_s=float(sim[0]),
        fitted=q,
        ci95=[lo, hi],
        in_reach=bool(reach),
        identified=bool(kept),
        queued_latency_scale=q if kept else 1.0,
    )
    return out


def queued_phrase(qf: Mapping[str, Any] | None) -> str:
    """The queued calls' fit in words, for the probe's summary line."""
    if qf and qf.get("pipelined"):
        return "; queued calls: not fitted, the channel is pipelined (its model holds a queued call's hand-off)"
    if not qf or "fitted" not in qf:
        return ""
    lo, hi = qf["ci95"]
    head = (
        f"; queued calls: the fine probe's plain steps {qf['plain_median_s'] * 1e3:.1f} ms against "
        f"{qf['simulated_at_1_s'] * 1e3:.1f} simulated with the stream's per-call time"
    )
    n = int(qf["steps"])
    if qf["identified"]:
        verdict = f"kept, a queued call's latency x{qf['queued_latency_scale']:.2f}"
    elif not qf["in_reach"]:
        verdict = f"out of reach even at x{QUEUED_MIN_SCALE:g}, not kept"
    elif n < PROBE_TERM_MIN_STEPS:
        verdict = f"not kept (fewer than {PROBE_TERM_MIN_STEPS} steps)"
    else:
        verdict = "within the probe's noise, not kept"
    return head + f" (x{qf['fitted']:.2f}, 95 % x{lo:.2f}..x{hi:.2f}, {n} steps): {verdict}"


def fit_step_probe(
    record: TimelineRecord | Mapping[str, Any],
    profile: GradProfile,
    cost: CostModel,
    fine_record: TimelineRecord | Mapping[str, Any] | None = None,
    check_record: TimelineRecord | Mapping[str, Any] | None = None,
    other_channel: CostModel | None = None,
) -> dict[str, Any]:
    """The in-step fit of a probe record (``measure_timeline``'s), measured now or read back from a
    ``"step_probe"`` record (``refit``, a dict), at the world size and bucket size the record was
    measured at, with its bootstrap refits; with ``fine_record`` (the same probe at a finer cap, the
    same world size) the per-call compute cost too; with ``check_record`` (the same probe at one bucket)
    that probe's step simulated at the fitted terms beside its measured one (``fit["check"]``): a check
    the fit does not use, which ``calibration.params.probe_step_residual`` counts with the other two.

    ``other_channel``: ``cost`` with the channel model the stream probe did not choose (``channel_choice``);
    with a fine record, the terms are fitted under both, and the other is kept where its two fitted caps' steps
    come at most half as far from the measured ones (``fit["channel"]``)."""
    from realrun.step_record import timeline_mapping

    rec = timeline_mapping(record)
    world_size, bucket_mb = int(rec["world_size"]), float(rec["bucket_mb"])
    targets = measured_targets(rec)
    fine = None
    rec_f = timeline_mapping(fine_record) if fine_record is not None else None
    if rec_f is not None:
        if int(rec_f["world_size"]) != world_size or float(rec_f["bucket_mb"]) >= bucket_mb:
            raise ValueError(
                f"the fine in-step probe (p = {rec_f['world_size']}, {rec_f['bucket_mb']} MiB) must be at "
                f"p = {world_size} and a cap under {bucket_mb:g} MiB"
            )
        fine = (float(rec_f["bucket_mb"]), measured_targets(rec_f))
    # the probe's own steps carry the leftover on both sides (its compute-only steps too, half of them after
    # a DDP step): its fit sees none of it; nor the optimizer's extra, fitted after it from the same steps
    # (nor the queued calls' scale, fitted last from the fine probe's plain steps)
    cost = replace(cost, leftover_s=0.0, optimizer_extra_s=0.0, queued_latency_scale=1.0)
    fit = fit_in_step(profile, cost, world_size, bucket_mb, targets, fine=fine)
    channel = None
    if other_channel is not None and fine is not None:
        other = replace(other_channel, leftover_s=0.0, optimizer_extra_s=0.0, queued_latency_scale=1.0)
        fit_o = fit_in_step(profile, other, world_size, bucket_mb, targets, fine=fine)
        channel = channel_choice(cost, other, fitted_caps_residual(fit), fitted_caps_residual(fit_o))
        if channel["taken"] == "other":
            cost, fit = other, fit_o
    boot = bootstrap_in_step(profile, cost, world_size, bucket_mb, targets, fine=fine)
    cc_check = comm_contention_check(fit["comm_contention_c"], [d[1] for d in boot])
    if not cc_check["identified"]:  # held at 0, the other terms refitted beside it, and their spread with it
        fit = fit_in_step(profile, cost, world_size, bucket_mb, targets, fine=fine, hold_cc=0.0)
        boot = bootstrap_in_step(profile, cost, world_size, bucket_mb, targets, fine=fine, hold_cc=0.0)
    fit["loadavg"] = [rec.get("loadavg_before"), rec.get("loadavg_after")]
    fit["comm_contention_check"] = cc_check
    fit["bootstrap"] = [list(d) for d in boot]
    fit["leftover"] = leftover_fit(rec, rec_f)
    fit["leftover_s"] = fit["leftover"]["leftover_s"]
    fit["optimizer_extra"] = optimizer_extra_fit(profile, targets, fine[1] if fine else None)
    fit["optimizer_extra_s"] = fit["optimizer_extra"]["optimizer_extra_s"]
    fit["queued"] = queued_fit(profile, cost, fit, rec_f, world_size)
    q = fit["queued_latency_scale"] = fit["queued"]["queued_latency_scale"]
    if q != 1:  # the probes' steps as the model now has them (the residuals the intervals carry come from these)
        cost = cost.with_overrides(queued_latency_scale=q)
        _resimulate(fit, profile, cost, world_size)
    if check_record is not None:
        fit["check"] = check_at_fit(check_record, profile, cost, fit, world_size)
    if channel is not None:
        fit["channel"] = channel
    return fit


def _resimulate(fit: dict[str, Any], profile: GradProfile, cost: CostModel, world_size: int) -> None:
    """``fit``'s probes simulated again at its terms under ``cost`` (``simulated_at_fit``, both caps)."""
    for part in (fit, fit.get("fine")):
        if part:
            prof = _scaled(profile, part["measured"])[0]
            part["simulated_at_fit"] = _sim_at_fit(prof, cost, world_size, part["bucket_mb"], fit)


def fitted_caps_residual(fit: Mapping[str, Any]) -> float:
    """``params.probe_step_residual`` at the two caps the in-step terms were fitted at, the one-bucket check
    left out (the channel choice is made from the fitted caps only)."""
    from .params import probe_step_residual

    return probe_step_residual({k: v for k, v in fit.items() if k != "check"})


CHANNEL_SWITCH = 0.5  # the other channel model is kept where its probe residual is at most this share of the stream's


def channel_choice(stream: CostModel, other: CostModel, res_stream: float, res_other: float) -> dict[str, Any]:
    """Which channel model the in-step probe keeps: the stream probe's (``stream``) unless the other one's
    fitted probe steps come far closer to the measured ones (``fitted_caps_residual``). The stream probe decides
    from 16 calls launched at once, a few seconds of a calibration: on a busy machine its large calls ran
    10-17 % over the wire time and outvoted the sizes where the two models differ (run m44: 4 of 8 link
    cells calibrated serial, 0 of 8 in m41 and m42), and the serial channel charged every bucket its ``o``:
    micro-DLRM's 0.25 MiB rows over 1000 Mbit/s +31 %, its 1 KiB probe step 67.2 ms fitted against 55.1
    measured (BENCHMARKS.md, "Seventeenth session"). The probe's fine cap, a call per gradient inside real
    DDP steps, is where the two differ most.

    The other model is kept only where its residual is at most ``CHANNEL_SWITCH`` of the stream probe's: in the
    other ten cells of m44 the other came at most 0.3 points closer (of 0.5-8.2 %), the probe's noise, not
    a verdict; micro-DLRM's two over the links came 16.5 -> 3.2 % and 8.3 -> 2.3 %. The kept model's residual
    then enters the model error (``params.probe_step_residual``) with the one-bucket check, which the choice
    does not see."""
    taken = "other" if res_other <= CHANNEL_SWITCH * res_stream else "stream"
    chosen = other if taken == "other" else stream
    return {
        "taken": taken,
        "channels": int(chosen.channels),
        "pipelined": bool(chosen.pipelined),
        "stream": {"channels": int(stream.channels), "pipelined": bool(stream.pipelined), "residual": res_stream},
        "other": {"channels": int(other.channels), "pipelined": bool(other.pipelined), "residual": res_other},
    }


def channel_words(channels: int, pipelined: bool) -> str:
    """A channel model in words."""
    return "one pipelined channel" if pipelined else ("one channel" if channels == 1 else f"{channels} channels")


def channel_phrase(ch: Mapping[str, Any] | None) -> str:
    """The in-step probe's channel choice in words, for its summary line ('' where it made none)."""
    if not ch:
        return ""
    st, ot = ch["stream"], ch["other"]
    a = f"{channel_words(st['channels'], st['pipelined'])} (the stream probe's) {st['residual'] * 100:.1f} %"
    b = f"{channel_words(ot['channels'], ot['pipelined'])} {ot['residual'] * 100:.1f} %"
    kept = channel_words(ch["channels"], ch["pipelined"])
    return f"; the fitted caps' steps off by {a}, with {b}: {kept} kept"


def check_at_fit(
    record: TimelineRecord | Mapping[str, Any],
    profile: GradProfile,
    cost: CostModel,
    fit: Mapping[str, Any],
    world_size: int,
) -> dict[str, Any]:
    """The probe measured at another cap (the one-bucket check), simulated at ``fit``'s terms: nothing is fitted
    to it. ``cost`` as the fit had it (without the leftover and the optimizer's extra: the residual adds the
    extra to every probe alike)."""
    from realrun.step_record import timeline_mapping

    rec = timeline_mapping(record)
    if int(rec["world_size"]) != world_size:
        raise ValueError(f"the check probe (p = {rec['world_size']}) must be at the fitted probe's p = {world_size}")
    targets = measured_targets(rec)
    prof, scale = _scaled(profile, targets)
    mb = float(rec["bucket_mb"])
    sim = _sim_at_fit(prof, cost, world_size, mb, fit)
    return {"bucket_mb": mb, "compute_scale": scale, "measured": targets, "simulated_at_fit": sim}


def summary_line(fit: dict[str, Any]) -> str:
    m, s = fit["measured"], fit["simulated_at_fit"]
    fine = fit.get("fine")
    per_call = ""
    if fine:
        mf, sf = fine["measured"], fine["simulated_at_fit"]
        per_call = (
            f"; at {fine['bucket_mb'] * 1024:g} KiB ({mf['n_buckets']:g} calls): backward end "
            f"{mf['compute_s'] * 1e3:.1f} ms measured / {sf['compute_s'] * 1e3:.1f} fitted, all-reduces "
            f"{mf['comm_sum_s'] * 1e3:.1f} / {sf['comm_sum_s'] * 1e3:.1f} ms"
        )
    return (
        f"in-step probe (torch-ddp {fit['bucket_mb']:g} MiB, {m['steps']} steps): {_compute_terms(fit)}, "
        f"communication x{1 + fit['comm_contention_c']:.2f} while computing "
        f"(backward end {m['compute_s'] * 1e3:.1f} ms measured / {s['compute_s'] * 1e3:.1f} fitted, "
        f"all-reduces {m['comm_sum_s'] * 1e3:.1f} / {s['comm_sum_s'] * 1e3:.1f} ms per step)"
        + per_call
        + _finalize_phrase(fit)
        + _recording_phrase(m, (fine or {}).get("measured") or {})
        + leftover_phrase(fit.get("leftover"))
        + optimizer_extra_phrase(fit.get("optimizer_extra"))
        + queued_phrase(fit.get("queued"))
        + _not_identified(fit["not_identified"])
        + comm_contention_phrase(fit.get("comm_contention_check"))
        + _spread(fit.get("bootstrap") or [])
        + steps_phrase(fit)
        + channel_phrase(fit.get("channel"))
    )


def cap_words(mb: float) -> str:
    """A probe's cap as a person reads it: 1 KiB, 0.959 MiB, 4 MiB."""
    return f"{mb * 1024:.3g} KiB" if mb < 1 / 64 else f"{mb:.3g} MiB"


def steps_phrase(fit: Mapping[str, Any]) -> str:
    """The probes' steps at the fitted terms, measured against simulated (the checks the fit leaves out), and
    the model error the intervals take from them (``calibration.params.probe_step_residual``)."""
    from .params import probe_step_residual, probe_step_residuals

    steps = probe_step_residuals(fit)
    if not steps:
        return ""
    check = (fit.get("check") or {}).get("bucket_mb")
    parts = [
        f"{m * 1e3:.1f} measured / {s * 1e3:.1f} simulated at {cap_words(mb)}"
        + (" (one bucket)" if mb == check else "")
        for mb, m, s in steps
    ]
    sd = (math.exp(probe_step_residual(fit)) - 1) * 100
    return f"; steps (ms): {', '.join(parts)}: the model's own error {sd:.1f} % (RMS), carried in every interval"


def _recording_phrase(m: Mapping[str, Any], mf: Mapping[str, Any]) -> str:
    """What recording cost the probe's steps, at each cap it was measured at."""
    costs = [f"{x['recording_s'] * 1e3:.2f}" for x in (m, mf) if x.get("recording_s")]
    if not costs:
        return ""
    return f"; recording the timelines cost {' and '.join(costs)} ms a step (against plain steps beside; not taken off)"


def _finalize_phrase(fit: dict[str, Any]) -> str:
    fin = fit.get("finalize_s_per_param")
    m = fit["measured"].get("finalize_s")
    if fin is None or m is None:
        return ""
    return (
        f"; DDP's finalize {fin * 1e6:.1f} us per parameter ({m * 1e3:.2f} ms from the last completion to the "
        "optimizer, copy-out included)"
    )


def comm_contention_phrase(check: Mapping[str, Any] | None) -> str:
    """Words for ``comm_contention_check`` where it held the factor at 0 (nothing otherwise)."""
    if not check or check.get("identified", True):
        return ""
    lo, hi = check["ci95"]
    return (
        f"; communication's slowdown while computing not told from none (fitted x{1 + check['fitted']:.2f}, "
        f"95 % of {check['draws']} refits x{1 + lo:.2f}-x{1 + hi:.2f}): held at x1.00, the rest refitted beside it"
    )


def _not_identified(terms: list[str]) -> str:
    if not terms:
        return ""
    kept = ["the compute slowdown kept as a factor"] if "call_cpu_s" in terms else []
    kept += ["the contention probe's kept"] if set(terms) - {"call_cpu_s"} else []
    return f"; not identified by this step ({', '.join(terms)}): {'; '.join(kept)}"


def work_phrase(k: float, kb: float) -> str:
    """The calls' work in words: what compute loses per call and per MiB of each call launched while it runs."""
    return (
        f"compute loses {k * 1e3:.2f} ms per call + {kb * MIB * 1e3:.2f} ms per MiB of each call launched while it runs"
    )


def _compute_terms(fit: dict[str, Any]) -> str:
    """How compute is slowed: work per call and per MiB, or a factor while calls are in flight."""
    k, kb = fit.get("call_cpu_s") or 0.0, fit.get("call_cpu_s_per_byte") or 0.0
    if k or kb:
        return work_phrase(k, kb)
    return f"compute x{1 + fit['contention_c']:.2f} while communicating"


def _spread(boot: list[Any]) -> str:
    if len(boot) < 2:
        return ""
    import numpy as np

    c = np.percentile([1 + d[0] for d in boot], [10, 90])
    cc = np.percentile([1 + d[1] for d in boot], [10, 90])
    k = ""
    if all(len(d) > 3 for d in boot):
        lo, hi = np.percentile([d[2] * 1e3 for d in boot], [10, 90])
        blo, bhi = np.percentile([d[3] * MIB * 1e3 for d in boot], [10, 90])
        k = f", per call {lo:.2f}-{hi:.2f} ms, per MiB {blo:.2f}-{bhi:.2f} ms"
    return (
        f"; refitted on {len(boot)} resamples of the steps: compute x{c[0]:.2f}-{c[1]:.2f}, "
        f"communication x{cc[0]:.2f}-{cc[1]:.2f}{k} (p10-p90)"
    )
