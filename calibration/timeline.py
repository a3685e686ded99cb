"""Measured against predicted per-bucket timelines: the predicted step as a timeline, the error
split into its parts, a Chrome trace of both side by side.

A *timeline* (one rank, one step; times in seconds from the step start) is the dict
``realrun.timeline.TimelineRecorder.end_step`` returns: ``backward_start_s``,
``backward_end_s`` (compute end), ``optimizer_start_s``, ``optimizer_end_s``, ``step_s`` and
``buckets``: ``[{index, bytes, n_params, ready_s, launch_s, complete_s}]`` in launch order.
``predicted_timeline`` builds the same from the simulator's public result (``predict`` with
events; its per-bucket rows), so both sides go through one arithmetic, ``step_terms``:

* ``compute_s`` = backward end (forward + backward, from the step start);
* ``exposed_tail_s`` = max(0, end of the last all-reduce - backward end);
* ``finalize_s`` = optimizer start - max(backward end, last all-reduce end) (copy-back and
  bookkeeping after communication);
* ``optimizer_s`` = optimizer end - optimizer start;
* ``other_s`` = step - optimizer end;

so ``step = compute + exposed_tail + finalize + optimizer + other`` exactly, and the step error
splits the same way. Per bucket, ``duration_s`` = complete - launch (the all-reduce as the step
saw it, queueing on gloo's threads included) and ``launch_delay_s`` = launch - ready; these
explain the tail but are not added to the step (they overlap compute).

Pure: no torch (the simulator's vocabulary only).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.predict import predict
from simulator.profile import GradProfile
from simulator.strategies import StrategySpec, comm_plan
from simulator.units import MIB

if TYPE_CHECKING:
    from realrun.step_record import TimelineRecord

DECOMPOSITION_SCHEMA = "ddpsim.timeline_decomposition/1"
STEP_TERMS = ("compute_s", "exposed_tail_s", "finalize_s", "optimizer_s", "other_s")


# ---- the predicted step as a timeline ---------------------------------------------------
def predicted_timeline(profile: GradProfile, cost: Any, spec: StrategySpec, world_size: int) -> dict[str, Any]:
    """The simulator's step for ``spec`` in the measured timeline's shape.

    Per bucket: ``ready_s`` = end of the backward segment in which its last gradient becomes
    ready (from the recorded events; the launch time if no segment matches), ``launch_s`` = the
    row's ``ready_s`` (every rank launched it), ``start_s`` = it holds a channel, ``complete_s``
    = the row's ``end_s``. Collectives after the optimizer (``sharded``'s broadcasts) are not among
    ``buckets`` (the measured side records only the gradient all-reduces), but their time counts in the
    optimizer's part, ``optimizer_end_s`` being the step's end: the measured optimizer marks span
    ``ShardedOptimizer.step``, broadcasts included (BENCHMARKS.md, "Tenth session").
    """
    res = predict(profile, cost, spec, world_size, record_events=True)
    plan = comm_plan(profile, spec, world_size)
    ev = [e for e in res.events if e[2] == 0]
    fwd = [e for e in ev if e[3] == "forward"]
    bwd_start = fwd[-1][1] if fwd else profile.forward_s
    opt = [e for e in ev if e[3] == "optimizer"]
    bwd_seg_end: dict[str, float] = {}
    for _start, end, _r, kind, name in ev:
        if kind == "backward":
            last = name.split("..")[-1]
            bwd_seg_end[last] = end
    pos = {i: k for k, i in enumerate(profile.ready_order)}
    buckets = []
    for c, (coll, row) in enumerate(zip(plan.collectives, res.rows)):
        if plan.launch == "after_backward":
            ready = res.backward_end_s
        else:
            last_param = profile.params[max(coll.params, key=lambda i: pos[i])].name
            ready = bwd_seg_end.get(last_param, row.ready_s)
        buckets.append(
            {
                "index": c,
                "name": row.name,
                "bytes": int(row.msg_bytes),
                "n_params": int(row.n_params),
                "ready_s": min(ready, row.ready_s),
                "launch_s": row.ready_s,
                "start_s": row.start_s,
                "complete_s": row.end_s,
            }
        )
    buckets.sort(key=lambda b: (b["launch_s"], b["index"]))
    return {
        "backward_start_s": bwd_start,
        "backward_end_s": res.backward_end_s,
        "optimizer_start_s": opt[0][0] if opt else res.step_time_s,
        "optimizer_end_s": res.step_time_s if plan.post_optimizer or not opt else opt[0][1],
        "step_s": res.step_time_s,
        "buckets": buckets,
        "events": [list(e) for e in ev],
    }


# ---- arithmetic --------------------------------------------------------------------------
def step_terms(tl: dict[str, Any]) -> dict[str, Any]:
    """The additive parts of one timeline's step, and per-bucket durations and launch delays."""
    bwd_end = tl["backward_end_s"]
    bks = tl["buckets"]
    last = max((b["complete_s"] for b in bks), default=bwd_end)
    comm_end = max(bwd_end, last)
    opt_start, opt_end, step = tl["optimizer_start_s"], tl["optimizer_end_s"], tl["step_s"]
    per = []
    for b in bks:
        ready = b["ready_s"] if b.get("ready_s") is not None else b["launch_s"]
        per.append(
            {
                "index": b["index"],
                "bytes": b["bytes"],
                "duration_s": b["complete_s"] - b["launch_s"],
                "launch_delay_s": b["launch_s"] - ready,
                "ready_s": ready,
                "launch_s": b["launch_s"],
                "complete_s": b["complete_s"],
            }
        )
    return {
        "step_s": step,
        "forward_s": tl["backward_start_s"],
        "backward_s": bwd_end - tl["backward_start_s"],
        "compute_s": bwd_end,
        "exposed_tail_s": max(0.0, last - bwd_end),
        "finalize_s": opt_start - comm_end,
        "optimizer_s": opt_end - opt_start,
        "other_s": step - opt_end,
        "comm_sum_s": sum(p["duration_s"] for p in per),
        "launch_delay_sum_s": sum(p["launch_delay_s"] for p in per),
        "buckets": per,
    }


_SCALARS = ("step_s", "forward_s", "backward_s") + STEP_TERMS + ("comm_sum_s", "launch_delay_sum_s")


def median_terms(terms: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-quantity medians over steps (each quantity on its own: the medians need not add up)."""
    if not terms:
        raise ValueError("no steps")
    out: dict[str, Any] = {k: statistics.median(t[k] for t in terms) for k in _SCALARS}
    n = min(len(t["buckets"]) for t in terms)
    out["buckets"] = [
        {
            "index": terms[0]["buckets"][k]["index"],
            "bytes": terms[0]["buckets"][k]["bytes"],
            **{
                q: statistics.median(t["buckets"][k][q] for t in terms)
                for q in ("duration_s", "launch_delay_s", "ready_s", "launch_s", "complete_s")
            },
        }
        for k in range(n)
    ]
    return out


def representative_step(step_times_s: Sequence[float], rank_step_times_s: Sequence[Sequence[float]]) -> tuple[int, int]:
    """``(step, rank)``: the timed step whose time (slowest rank) is the lower median, and its slowest rank."""
    order = sorted(range(len(step_times_s)), key=lambda k: step_times_s[k])
    k = order[(len(order) - 1) // 2]
    rank = max(range(len(rank_step_times_s)), key=lambda r: rank_step_times_s[r][k])
    return k, rank


def slowest_rank_timelines(rec: TimelineRecord | Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each timed step of a ``measure_timeline`` record (or the dict read back from a file) on its slowest rank."""
    from realrun.step_record import timeline_mapping

    record = timeline_mapping(rec)
    ranks = record["rank_step_times_s"]
    return [
        record["rank_timelines"][max(range(len(ranks)), key=lambda r: ranks[r][k])][k]
        for k in range(len(record["step_times_s"]))
    ]


def across_ranks_timelines(rec: TimelineRecord | Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each timed step as the simulator's identical ranks see it: every event when the last rank reaches it.

    Ranks drift apart inside a step (their backward ends differed by a median 1.7-76 ms per step,
    micro-DLRM aside, in the in-step probes of runs m5-m8, BENCHMARKS.md "Ranks apart"), and a
    bucket's all-reduce completes only when its last rank has launched it. On the slowest rank by
    step time alone, the backward end is often the earlier rank's, and its wait for the other rank
    shows up as a longer exposed tail. Here, per step: the backward end, and each bucket's launch and
    completion (and its ready time where every rank recorded one), are the latest over ranks, buckets
    matched by index (the slowest rank's buckets are kept; torch DDP gives every rank the same); the
    rest (forward, optimizer, step) is the slowest rank's. Times are from each rank's step start
    (after a barrier), so the finalize ``step_terms`` takes from this (the slowest rank's optimizer
    start less the latest completion) carries the barrier's exit skew between two ranks' clocks: a
    step's can be slightly negative, and medians over steps came out 0-5 % below the slowest rank's
    own in the stored timelines. The record is not modified."""
    from realrun.step_record import timeline_mapping

    record = timeline_mapping(rec)
    ranks = record["rank_timelines"]
    n = len(record["step_times_s"])
    if any(len(r) < n for r in ranks):
        raise ValueError(f"a rank recorded fewer than the {n} timed steps of the record")
    out = []
    for k, tl in enumerate(slowest_rank_timelines(record)):
        step = [r[k] for r in ranks]
        by_index: dict[int, list[dict[str, Any]]] = {}
        for t in step:
            for b in t["buckets"]:
                by_index.setdefault(b["index"], []).append(b)
        buckets = []
        for b in tl["buckets"]:
            same = by_index[b["index"]]
            late = {q: max(x[q] for x in same) for q in ("launch_s", "complete_s")}
            readies = [x.get("ready_s") for x in same]
            late["ready_s"] = max(readies) if all(r is not None for r in readies) else None
            buckets.append({**b, **late})
        out.append({**tl, "backward_end_s": max(t["backward_end_s"] for t in step), "buckets": buckets})
    return out


def decompose(measured: Sequence[dict[str, Any]], predicted: dict[str, Any]) -> dict[str, Any]:
    """The error (predicted - measured) split into compute, exposed tail, finalize, optimizer, other,
    with per-call durations and launch delays per bucket and summed.

    ``measured``: one or more timelines (e.g. every timed step across ranks); the
    measured side is the per-quantity median over them (exact for one step). Buckets are paired
    in launch order; ``bytes_match`` says whether each pair carries the same bytes.
    """
    m = median_terms([step_terms(t) for t in measured])
    p = step_terms(predicted)
    terms = {}
    for k in _SCALARS:
        err = p[k] - m[k]
        terms[k] = {
            "measured_s": m[k],
            "predicted_s": p[k],
            "error_s": err,
            "error_pct_of_step": err / m["step_s"] * 100.0 if m["step_s"] else None,
        }
    buckets = []
    for mb, pb in zip(m["buckets"], p["buckets"]):
        buckets.append(
            {
                "position": len(buckets),
                "index": mb["index"],
                "bytes": mb["bytes"],
                "predicted_bytes": pb["bytes"],
                "bytes_match": mb["bytes"] == pb["bytes"],
                "measured_duration_s": mb["duration_s"],
                "predicted_duration_s": pb["duration_s"],
                "duration_error_s": pb["duration_s"] - mb["duration_s"],
                "measured_launch_delay_s": mb["launch_delay_s"],
                "predicted_launch_delay_s": pb["launch_delay_s"],
                "measured_ready_s": mb["ready_s"],
                "predicted_ready_s": pb["ready_s"],
                "measured_complete_s": mb["complete_s"],
                "predicted_complete_s": pb["complete_s"],
            }
        )
    step_err = terms["step_s"]["error_s"]
    parts = {k: terms[k]["error_s"] for k in STEP_TERMS}
    largest = max(parts, key=lambda k: abs(parts[k]))
    return {
        "schema": DECOMPOSITION_SCHEMA,
        "n_measured_steps": len(measured),
        "n_buckets_measured": len(m["buckets"]),
        "n_buckets_predicted": len(p["buckets"]),
        "terms": terms,
        "step_error_s": step_err,
        "largest_term": largest,
        "buckets": buckets,
    }


def format_decomposition(dec: dict[str, Any], title: str = "") -> str:
    t = dec["terms"]
    lines = [title] if title else []
    lines.append(f"  {'term':<22} {'measured ms':>11} {'predicted ms':>12} {'error ms':>9} {'% of step':>9}")
    names = {
        "step_s": "step",
        "forward_s": "  forward",
        "backward_s": "  backward",
        "compute_s": "compute (bwd end)",
        "exposed_tail_s": "exposed tail",
        "finalize_s": "finalize (copy-back)",
        "optimizer_s": "optimizer",
        "other_s": "other",
        "comm_sum_s": "all-reduce sum",
        "launch_delay_sum_s": "launch delay sum",
    }
    for k in (
        "step_s",
        "compute_s",
        "forward_s",
        "backward_s",
        "exposed_tail_s",
        "finalize_s",
        "optimizer_s",
        "other_s",
        "comm_sum_s",
        "launch_delay_sum_s",
    ):
        r = t[k]
        pct = "" if r["error_pct_of_step"] is None else f"{r['error_pct_of_step']:+8.1f}%"
        lines.append(
            f"  {names[k]:<22} {r['measured_s'] * 1e3:>11.2f} {r['predicted_s'] * 1e3:>12.2f} "
            f"{r['error_s'] * 1e3:>+9.2f} {pct:>9}"
        )
    lines.append(f"  {'bucket':>6} {'bytes':>10} {'all-reduce meas/pred ms':>24} {'launch delay meas/pred ms':>26}")
    for b in dec["buckets"]:
        mark = "" if b["bytes_match"] else f"  (predicted {b['predicted_bytes']} B)"
        lines.append(
            f"  {b['position']:>6} {b['bytes']:>10} {b['measured_duration_s'] * 1e3:>11.2f} / "
            f"{b['predicted_duration_s'] * 1e3:<10.2f} {b['measured_launch_delay_s'] * 1e3:>12.2f} / "
            f"{b['predicted_launch_delay_s'] * 1e3:<10.2f}{mark}"
        )
    if dec["n_buckets_measured"] != dec["n_buckets_predicted"]:
        lines.append(
            f"  bucket counts differ: measured {dec['n_buckets_measured']}, predicted {dec['n_buckets_predicted']}"
        )
    lines.append(f"  largest part of the step error: {dec['largest_term']}")
    return "\n".join(lines)


# ---- Chrome trace --------------------------------------------------------------------------
MEASURED_PID, PREDICTED_PID = 1, 2


def _lanes(pid: int, tl: dict[str, Any], tid0: int, label: str) -> list[dict[str, Any]]:
    us = 1e6
    out: list[dict[str, Any]] = []

    def span(tid: int, name: str, cat: str, a: float, b: float, args: dict[str, Any] | None = None) -> None:
        if b is None or a is None or b < a:
            return
        out.append(
            {
                "name": name,
                "cat": cat,
                "ph": "X",
                "ts": a * us,
                "dur": (b - a) * us,
                "pid": pid,
                "tid": tid,
                "args": args or {},
            }
        )

    comp = tid0
    out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": comp, "args": {"name": f"{label}compute"}})
    span(comp, "forward", "forward", 0.0, tl["backward_start_s"])
    span(comp, "backward", "backward", tl["backward_start_s"], tl["backward_end_s"])
    last = max((b["complete_s"] for b in tl["buckets"]), default=tl["backward_end_s"])
    span(comp, "wait for communication", "wait", tl["backward_end_s"], max(last, tl["backward_end_s"]))
    span(comp, "finalize", "finalize", max(last, tl["backward_end_s"]), tl["optimizer_start_s"])
    span(comp, "optimizer", "optimizer", tl["optimizer_start_s"], tl["optimizer_end_s"])
    for pos, b in enumerate(tl["buckets"]):
        tid = tid0 + 1 + pos
        out.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": pid,
                "tid": tid,
                "args": {"name": f"{label}bucket {b['index']} ({b['bytes'] / MIB:.2f} MiB)"},
            }
        )
        args = {
            "bucket_index": b["index"],
            "bytes": b["bytes"],
            "n_params": b.get("n_params"),
            "ready_ms": None if b.get("ready_s") is None else b["ready_s"] * 1e3,
            "launch_ms": b["launch_s"] * 1e3,
            "complete_ms": b["complete_s"] * 1e3,
            "duration_ms": (b["complete_s"] - b["launch_s"]) * 1e3,
        }
        if b.get("start_s") is not None:
            args["channel_start_ms"] = b["start_s"] * 1e3
        if b.get("ready_s") is not None and b["launch_s"] > b["ready_s"]:
            span(tid, "launch delay", "launch_delay", b["ready_s"], b["launch_s"], {"bucket_index": b["index"]})
        span(tid, f"all-reduce bucket {b['index']}", "allreduce", b["launch_s"], b["complete_s"], args)
    return out


def timeline_trace(
    measured: dict[str, Any],
    predicted: dict[str, Any] | None,
    meta: dict[str, Any] | None = None,
    others: Sequence[tuple[str, dict[str, Any]]] = (),
) -> dict[str, Any]:
    """Chrome trace JSON (Perfetto): process "measured" (the chosen step of one rank, plus ``others``
    as more lanes, e.g. the other ranks' same step) and process "predicted" (the simulator's step)."""
    ev: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": MEASURED_PID, "args": {"name": "measured"}},
        {"name": "process_sort_index", "ph": "M", "pid": MEASURED_PID, "args": {"sort_index": 0}},
    ]
    ev += _lanes(MEASURED_PID, measured, 0, "")
    for k, (label, tl) in enumerate(others):
        ev += _lanes(MEASURED_PID, tl, 1000 * (k + 1), f"{label} ")
    if predicted is not None:
        ev += [
            {"name": "process_name", "ph": "M", "pid": PREDICTED_PID, "args": {"name": "predicted"}},
            {"name": "process_sort_index", "ph": "M", "pid": PREDICTED_PID, "args": {"sort_index": 1}},
        ]
        ev += _lanes(PREDICTED_PID, predicted, 0, "")
    return {"traceEvents": ev, "displayTimeUnit": "ms", "otherData": meta or {}}


# ---- one configuration's outputs ------------------------------------------------------------
def timeline_outputs(
    rec: TimelineRecord | Mapping[str, Any],
    predicted: dict[str, Any] | None,
    out_dir: str | Path,
    name: str,
    meta: dict[str, Any] | None = None,
    png: bool = True,
) -> dict[str, Any]:
    """Write ``<name>.trace.json``, ``<name>.decomposition.json`` (and ``<name>.png``) for one
    ``realrun.bench_ddp.measure_timeline`` record (or the dict read back from its file) and its
    predicted timeline.

    The trace shows the representative step (``representative_step``: the lower-median step by
    slowest-rank time, on its slowest rank; the other ranks' same step as more lanes); the
    decomposition's measured side is the per-quantity median over every timed step, each taken
    across ranks (``across_ranks_timelines``). Returns the decomposition with the file paths added.
    """
    from realrun.step_record import timeline_mapping

    record = timeline_mapping(rec)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    k, rank = representative_step(record["step_times_s"], record["rank_step_times_s"])
    chosen = record["rank_timelines"][rank][k]
    others = [(f"rank {r}", record["rank_timelines"][r][k]) for r in range(len(record["rank_timelines"])) if r != rank]
    steps_across = across_ranks_timelines(record)
    info = {
        "model": record["model"],
        "strategy": record["strategy"],
        "bucket_mb": record["bucket_mb"],
        "world_size": record["world_size"],
        "representative_step": k,
        "representative_rank": rank,
        "step_choice": "lower-median step by slowest-rank step time, shown on its slowest rank",
        **(meta or {}),
    }
    trace = timeline_trace(chosen, predicted, info, others)
    paths: dict[str, str] = {}
    p = out / f"{name}.trace.json"
    p.write_text(json.dumps(trace))
    paths["trace"] = str(p)
    dec: dict[str, Any] = {**info, "measured_step_times_s": record["step_times_s"]}
    if predicted is not None:
        dec.update(decompose(steps_across, predicted))
        dec["representative"] = decompose([chosen], predicted)
    else:
        dec["measured"] = median_terms([step_terms(t) for t in steps_across])
    if png:
        from .plots import plot_timeline

        bucket = "" if record["bucket_mb"] is None else f"{record['bucket_mb']:g} MiB "
        title = f"{record['model']} {record['strategy']} {bucket}(measured: step {k}, rank {rank})"
        paths["png"] = str(plot_timeline(chosen, predicted, out / f"{name}.png", title=title))
    p = out / f"{name}.decomposition.json"
    dec["files"] = {**paths, "decomposition": str(p)}
    p.write_text(json.dumps(dec, indent=1) + "\n")
    return dec


def timeline_name(model: str, strategy: str, bucket_mb: float | None, world_size: int) -> str:
    import re

    from .validate import bucket_text

    b = bucket_text(strategy, bucket_mb, "MB")  # "default" only for a strategy with buckets run with its default
    part = "" if b == "-" else f"{b}_"
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{model}_{strategy}_{part}p{world_size}").strip("_")[:100]


# ---- measure, predict, compare: what ``bench-ddp --timeline`` and ``validate --timeline`` run ----
def timelines_on_pool(
    pool: Any,
    model: str,
    configs: Sequence[tuple[Any, ...]],
    out_dir: str | Path,
    params: Any,
    *,
    batch_size: int | None,
    steps: int,
    warmup: int,
    optimizer: str = "sgd",
    rescale: bool = True,
    say: Any = lambda _m: None,
    write: bool = True,
    meta: dict[str, Any] | None = None,
    block: int = 1,
) -> list[dict[str, Any]]:
    """Per configuration ``(strategy, bucket_mb, ...)``: ``steps`` steps with timelines recorded
    (``realrun.bench_ddp.measure_timeline``; with ``block`` > 1 in turns of ``block`` timed steps, as
    ``validate --block`` measures, ``warmup`` untimed steps made whole turns), the predicted timeline from
    ``params`` (a ``calibration.params.Params``; with ``rescale`` its profile scaled, as ``validate`` does, to the
    compute-only steps measured alternately with the recorded ones, configuration by
    configuration), and ``timeline_outputs`` in ``out_dir``
    (plus the raw record as ``<name>.timeline.json``). Returns the decompositions (with
    ``table``, the printed form); ``write=False`` (torchrun ranks other than 0) measures only.
    """
    from realrun.bench_ddp import measure_timeline

    from .validate import check_profile_matches, order_cost, rescaled_profile, warmup_turns

    base_prof = check_profile_matches(params, model, batch_size) if params is not None else None
    cost = params.cost_model() if params is not None else None
    out = []
    for strategy, bucket, *rest in configs:
        if rest and rest[0]:
            say(f"timeline: skipped {strategy} with a bucket_cap_mb_list (not recorded)")
            continue
        name = timeline_name(model, strategy, bucket, pool.world_size)
        rec = measure_timeline(
            pool, model, strategy, bucket, batch_size, steps, warmup_turns(warmup, block), optimizer, block=block
        )
        if not write:
            continue
        written = rec.to_dict()  # as <name>.timeline.json holds it
        pred, scale, prof = None, 1.0, base_prof
        if prof is not None:
            prof, scale = rescaled_profile(prof, rec.compute_median_s, rescale)
            pred = predicted_timeline(
                prof, order_cost(cost, rescale, block), StrategySpec(strategy, bucket_mb=bucket), pool.world_size
            )
        info = {
            "compute_scale": scale,
            "compute_only_median_s": rec.compute_median_s,
            "profiled_compute_s": base_prof.compute_s if base_prof is not None else None,
            "loadavg_before": written["loadavg_before"],
            "loadavg_after": written["loadavg_after"],
            "steps": steps,
            "warmup": warmup,
            "block": block,
            "batch_size": rec.batch_size,
            "params": params.fitted_terms(None) if params is not None else None,
            **(meta or {}),
        }
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / f"{name}.timeline.json").write_text(json.dumps(written) + "\n")
        dec = timeline_outputs(written, pred, out_dir, name, info)
        b = "" if bucket is None else f" {bucket:g} MiB"
        comp = rec.compute_median_s
        title = (
            f"{model} {strategy}{b}: measured median of {steps} steps"
            + (f" (turns of {block})" if block > 1 else "")
            + " (each event at its last rank) vs predicted; "
            f"compute-only steps beside {'-' if comp is None else f'{comp * 1e3:.2f}'} ms, profile scaled "
            f"x{scale:.3f}; load {written['loadavg_before']}"
        )
        dec["table"] = (
            format_decomposition(dec, title) if pred is not None else title + "\n  (no prediction: no params)"
        )
        say(f"timeline: {name}: {dec['files']['trace']}")
        out.append(dec)
    return out
