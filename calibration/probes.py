"""Calibration probes that run on ranks (module-level functions for ``RankPool.run``).

* ``memcpy_probe``: the memory-copy rate of gradient <-> bucket copies by size
  (``CostModel.copy_bytes_per_s`` is the rate over the model's gradient sizes,
  ``effective_copy_rate``), timed on every rank at once so the ranks share
  memory bandwidth as they do in training.
* ``copy_in_step_probe``: the same copies as they happen in a training step --
  each gradient copied into its slot of a bucket buffer by a hook as backward
  produces it, and all of them back once the buffer has been rewritten (as an
  all-reduce rewrites it). The slots were last touched a step ago, with
  forward and backward's own memory in between, so they copy at a few GB/s
  where ``memcpy_probe``'s warm blocks copy at 20-40 (``in_step_copy_rate``;
  this is the rate ``CostModel.copy_bytes_per_s`` takes when it was measured).
  Between the two it times the buffers' in-place division by the world size
  (``in_step_scale_rate``, ``CostModel.scale_bytes_per_s``).
* ``cold_call_probe``: one small all-reduce after a burst of compute of a few
  lengths, against one that follows another call (what the stream probe
  times). On this VM a call after 20-100 ms of compute costs 1-2 ms more on
  average (a bimodal wake-up: about half of them take ~3 ms more; the same
  after idle gaps, measured outside calibration: BENCHMARKS.md);
  ``fit_cold_call`` fits ``CostModel.cold_call_s`` and ``cold_tau_s`` to it.
* ``broadcast_switch_probe``: blocking broadcasts from one source against as
  many whose source alternates (the sharded optimizer's owners): on a link
  with a token bucket (tbf) each direction earns free transfer while idle, so
  a broadcast from the other side than the one before runs ahead of its wire
  time; ``fit_broadcast_switch`` fits ``CostModel.broadcast_switch_credit_s``.
* ``contention_probe``: the same forward+backward timed alone and while a
  background thread keeps all-reduces in flight on a second process group --
  overlapped versus non-overlapped compute, from which the simulator's
  contention factor is fitted (``calibration.contention.fit_contention``). It
  also times the all-reduces alone and under compute, which says how much
  compute slows communication.

torch is imported inside the functions: this module is imported by the CLI.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from realrun.cpushare import add_threads

COPY_SIZES = (64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20)


def memcpy_probe(ctx: Any, sizes: tuple[int, ...] = COPY_SIZES, iters: int = 20) -> dict[str, Any]:
    """Copy rate by size, of a source written just before each copy, as DDP copies a gradient that
    backward has just produced into its bucket (and a bucket just all-reduced back out): a 1-4 MiB
    gradient is still in cache then, and copies several times faster than a cold 32 MiB block (this
    VM: 20-30 GB/s against 3-4). Every rank copies at once, sharing memory bandwidth as in training."""
    import torch
    import torch.distributed as dist

    out: dict[str, Any] = {"sizes_bytes": list(sizes), "times_s": [], "median_s": [], "bytes_per_s": []}
    for nbytes in sizes:
        src = torch.ones(nbytes // 4)
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        dist.barrier()
        times = []
        for _ in range(iters):
            src.mul_(1.0)  # freshly written, as a gradient is
            t0 = time.perf_counter()
            dst.copy_(src)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        out["times_s"].append(times)
        out["median_s"].append(med)
        out["bytes_per_s"].append(nbytes / med)
    return out


def effective_copy_rate(per_rank: list[dict[str, Any]], tensor_bytes: list[int]) -> float:
    """One copy rate for the simulator: the rate (median over ranks, interpolated in log size between
    the probe's sizes, clamped at its ends) at which ``tensor_bytes`` (the gradients copied one by one)
    copy in total: ``sum(bytes) / sum(bytes / rate(bytes))``."""
    import math

    import numpy as np

    sizes = per_rank[0]["sizes_bytes"]
    rates = [statistics.median(r["bytes_per_s"][k] for r in per_rank) for k in range(len(sizes))]
    x = np.log([float(s) for s in sizes])
    y = np.log(rates)
    total = sum(tensor_bytes)
    if total <= 0:
        return float(rates[-1])
    t = sum(b / math.exp(float(np.interp(math.log(b), x, y))) for b in tensor_bytes if b > 0)
    return total / t


def copy_in_step_probe(
    ctx: Any, workload_spec: str, batch_size: int, steps: int = 8, warmup: int = 2
) -> dict[str, Any]:
    """DDP's gradient copies inside real steps of the workload, every rank at once (no communication).

    Per step: forward+backward with a hook on each trainable parameter that copies its gradient
    into the parameter's slot of one bucket buffer the moment it is accumulated (torch DDP's
    copy-in; only the copies are timed), then the buffer rewritten in place (as the all-reduce's
    result lands in it) and every gradient copied back out of it (the copy-out), timed whole."""
    import torch
    import torch.distributed as dist

    from realrun.workloads import load_workload

    wl = load_workload(workload_spec)
    model = wl.build()
    batch = wl.make_batch(batch_size, seed=1000 + ctx.rank)
    params = [p for p in model.parameters() if p.requires_grad]
    bufs = {}  # one bucket buffer per dtype, as DDP keeps them
    for dt in {p.dtype for p in params}:
        bufs[dt] = torch.zeros(sum(p.numel() for p in params if p.dtype == dt), dtype=dt)
    slots, off = {}, dict.fromkeys(bufs, 0)
    for p in params:
        slots[p] = bufs[p.dtype][off[p.dtype] : off[p.dtype] + p.numel()].view_as(p)
        off[p.dtype] += p.numel()
    copied: list[Any] = []
    t_in = [0.0]

    def copy_in(p: Any) -> None:
        g = p.grad
        if g is None or g.is_sparse:
            return
        t0 = time.perf_counter()
        slots[p].copy_(g)
        t_in[0] += time.perf_counter() - t0
        copied.append(p)

    handles = [p.register_post_accumulate_grad_hook(copy_in) for p in params]
    ins: list[float] = []
    outs: list[float] = []
    scales: list[float] = []
    nbytes = 0
    try:
        for k in range(warmup + steps):
            model.zero_grad(set_to_none=True)
            copied.clear()
            t_in[0] = 0.0
            dist.barrier()
            wl.loss(model, batch).backward()
            t0 = time.perf_counter()
            for b in bufs.values():  # rewritten in place, as the all-reduce's result lands, and divided
                b.div_(ctx.world_size)
            t_scale = time.perf_counter() - t0
            t0 = time.perf_counter()
            for p in copied:
                p.grad.copy_(slots[p])
            t_out = time.perf_counter() - t0
            if k >= warmup:
                ins.append(t_in[0])
                outs.append(t_out)
                scales.append(t_scale)
                nbytes = sum(p.numel() * p.element_size() for p in copied)
    finally:
        for h in handles:
            h.remove()
    return {
        "rank": ctx.rank,
        "bytes": nbytes,
        "copy_in_s": ins,
        "copy_out_s": outs,
        "scale_s": scales,
        "scale_bytes": sum(b.numel() * b.element_size() for b in bufs.values()),
    }


def in_step_copy_rate(per_rank: list[dict[str, Any]]) -> float | None:
    """The copy rate of ``copy_in_step_probe``: per rank, its gradients' bytes copied in and back out
    over its median step's copy-in plus copy-out time; the median over ranks (ranks whose unused
    parameters differ copy different bytes). None where no rank copied anything in a timed step (no
    trainable dense gradient)."""
    return _median_rank_rate(
        per_rank,
        lambda r: 2 * int(r.get("bytes") or 0),
        lambda r: [a + b for a, b in zip(r.get("copy_in_s") or [], r.get("copy_out_s") or [])],
    )


def in_step_scale_rate(per_rank: list[dict[str, Any]]) -> float | None:
    """The rate of the in-place division pass ``copy_in_step_probe`` times on its bucket buffers right
    after backward (``scale_s``: what the hand-written ``flat``, ``individual`` and ``naive`` wrappers
    do to their averaged gradients, ``CostModel.scale_bytes_per_s``): per rank, the buffers' bytes
    over the median pass; the median over ranks. None for records written before the probe timed it."""
    return _median_rank_rate(
        per_rank, lambda r: int(r.get("scale_bytes") or 0), lambda r: [float(t) for t in r.get("scale_s") or []]
    )


def _median_rank_rate(
    per_rank: list[dict[str, Any]],
    nbytes: Callable[[dict[str, Any]], int],
    times: Callable[[dict[str, Any]], list[float]],
) -> float | None:
    """Per rank ``nbytes(r)`` over the median of ``times(r)``; the median over the ranks that moved bytes
    in a timed pass, None where none did."""
    rates = []
    for r in per_rank:
        n, ts = nbytes(r), times(r)
        t = statistics.median(ts) if ts else 0.0
        if n > 0 and t > 0:
            rates.append(n / t)
    return statistics.median(rates) if rates else None


COLD_GAPS_S = (0.002, 0.02, 0.1)


def cold_call_probe(
    ctx: Any, nbytes: int = 4096, gaps_s: tuple[float, ...] = COLD_GAPS_S, reps: int = 100
) -> dict[str, Any]:
    """One all-reduce of ``nbytes`` after another, and after each of ``gaps_s`` of compute (a loop of
    small matmuls on the rank's threads, all ranks released together by a barrier), interleaved,
    ``reps`` times: per call this rank's launch to completion (clock-local, so it holds across hosts)."""
    import torch
    import torch.distributed as dist

    buf = torch.zeros(max(1, nbytes // 4))
    a = torch.randn(64, 64)
    for _ in range(3):
        dist.all_reduce(buf)
    after_call: list[float] = []
    after_compute: list[list[float]] = [[] for _ in gaps_s]
    for _ in range(reps):
        for k in range(-1, len(gaps_s)):
            dist.barrier()
            if k < 0:
                dist.all_reduce(buf)
            else:
                t = time.perf_counter()
                while time.perf_counter() - t < gaps_s[k]:
                    a @ a
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            dt = time.perf_counter() - t0
            (after_call if k < 0 else after_compute[k]).append(dt)
    return {
        "rank": ctx.rank,
        "nbytes": nbytes,
        "gaps_s": list(gaps_s),
        "after_call_s": after_call,
        "after_compute_s": after_compute,
    }


SWITCH_BYTES = 256 << 10  # 2.1 ms at 1000 Mbit/s, 10.5 ms at 200: longer than the emulated link's 1 ms bucket
SWITCH_CALLS = 8


def broadcast_switch_probe(
    ctx: Any, nbytes: int = SWITCH_BYTES, calls: int = SWITCH_CALLS, reps: int = 30
) -> dict[str, Any]:
    """``calls`` blocking broadcasts of ``nbytes`` from rank 0, and as many from rank ``k % p`` (the source
    changes at every call, as the sharded optimizer's owners do), each sequence after a barrier, the two in
    turns (which goes first alternating), ``reps`` times: per sequence, this rank's time from the barrier to
    its last broadcast's return."""
    import torch
    import torch.distributed as dist

    p = dist.get_world_size()
    buf = torch.zeros(max(1, nbytes // 4))
    for k in range(2 * p):
        dist.broadcast(buf, src=k % p)
    same: list[float] = []
    alternating: list[float] = []
    for r in range(reps):
        for alt in (False, True) if r % 2 == 0 else (True, False):
            dist.barrier()
            t0 = time.perf_counter()
            for k in range(calls):
                dist.broadcast(buf, src=k % p if alt else 0)
            (alternating if alt else same).append(time.perf_counter() - t0)
    return {"rank": ctx.rank, "nbytes": nbytes, "calls": calls, "same_s": same, "alternating_s": alternating}


def fit_broadcast_switch(per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    """``broadcast_switch_credit_s`` from ``broadcast_switch_probe``: per repetition, each sequence's time at
    the last rank to finish it, the one-source sequence's less the alternating one's over its ``calls - 1``
    changes of source; the median over repetitions, kept where its 95 % bootstrap interval lies above 0 and
    there are ``PROBE_TERM_MIN_STEPS`` repetitions or more (``calibration.step_probe.kept_median``), else 0.
    It can show no more credit than a direction earns while the other side sends one broadcast (``nbytes``
    at the link's rate)."""
    import numpy as np

    from .step_probe import kept_median

    n = min(min(len(r["same_s"]), len(r["alternating_s"])) for r in per_rank)
    same = np.max([r["same_s"][:n] for r in per_rank], axis=0)
    alt = np.max([r["alternating_s"][:n] for r in per_rank], axis=0)
    calls = int(per_rank[0]["calls"])
    out: dict[str, Any] = {
        "nbytes": int(per_rank[0]["nbytes"]),
        "calls": calls,
        "reps": n,
        "same_median_s": float(np.median(same)) if n else 0.0,
        "alternating_median_s": float(np.median(alt)) if n else 0.0,
        "broadcast_switch_credit_s": 0.0,
        "identified": False,
    }
    if n >= 2 and calls >= 2:
        out.update(kept_median((same - alt) / (calls - 1), "broadcast_switch_credit_s"))
    return out


def fit_cold_call(per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    """``cold_call_s`` and ``cold_tau_s`` from ``cold_call_probe``: per call the shortest duration over
    ranks (the last rank to launch waits least: its duration is the call's own), the 10 %-trimmed mean
    over repetitions (the wake-up is bimodal: a mean, as a step's sum of calls averages it), the
    extra over the calls that follow a call, and ``extra(g) = cold_call_s * (1 - exp(-g / cold_tau_s))``
    fitted by least squares to the gaps, within what was measured: ``cold_tau_s`` at most the longest
    gap and at least a tenth of the shortest, ``cold_call_s`` at most 1.5 times the largest extra
    (``at_bound`` names a bound the fit reached). ``cold_call_s`` is 0 where no gap costs extra or the fit fails (``fit_error`` says why)."""
    import numpy as np
    from scipy.optimize import least_squares
    from scipy.stats import trim_mean

    def per_call(key: str, k: int | None = None) -> float:
        rows = [r[key] if k is None else r[key][k] for r in per_rank]
        n = min(len(x) for x in rows)  # ranks agree by construction; a short list is not a crash here
        return float(trim_mean(np.min(np.array([x[:n] for x in rows], dtype=float), axis=0), 0.1))

    gaps = [float(g) for g in per_rank[0]["gaps_s"]]
    base = per_call("after_call_s")
    extra = [per_call("after_compute_s", k) - base for k in range(len(gaps))]
    out: dict[str, Any] = {
        "gaps_s": gaps,
        "after_call_s": base,
        "extra_s": extra,
        "cold_call_s": 0.0,
        "cold_tau_s": 0.0,
    }
    if not all(math.isfinite(e) for e in extra):
        out["fit_error"] = "a gap's mean duration is not finite"
        return out
    if max(extra) <= 0:
        return out
    # in ms (values near 1, where the solver's tolerances are meant to work)
    g_ms, e_ms = np.array(gaps) * 1e3, np.array(extra) * 1e3
    lo, hi = np.array([0.0, min(g_ms) / 10]), np.array([1.5 * max(e_ms), max(g_ms)])
    try:
        res = least_squares(
            lambda x: x[0] * -np.expm1(-g_ms / x[1]) - e_ms,
            np.clip([max(e_ms), float(np.median(g_ms))], lo, hi),
            bounds=(lo, hi),
        )
        if not res.success or not np.all(np.isfinite(res.x)):
            raise ValueError(res.message)
    except ValueError as e:  # least_squares raises ValueError on bad input; a failed solve is one too here
        out["fit_error"] = str(e)
        return out
    a, tau = (float(v) for v in res.x)
    out.update(cold_call_s=a / 1e3, cold_tau_s=tau / 1e3 if a > 0 else 0.0)
    at = [n for n, v, b in (("cold_call_s", a, hi[0]), ("cold_tau_s", tau, hi[1])) if v >= b * (1 - 1e-6)]
    at += ["cold_tau_s (lower)"] if a > 0 and tau <= lo[1] * (1 + 1e-6) else []
    if at:
        out["at_bound"] = at
    return out


# A small call this much over its size's 10th percentile waited for something other than its own work: on the
# 2-core VM of BENCHMARKS.md ("Nineteenth session") such calls came 3.0-4.4 ms late (median per calibration; one
# scheduler tick at 250 Hz is 4 ms) in all 314 stored calibrations; of their 188,400 sweep calls of 4-64 KiB,
# 25 % came more than 2.5 ms over their size's p10 and 7 % 1-2.5 ms over it.
SLOW_CALL_EXCESS_S = 2e-3
CALL_MODE_MAX_BYTES = 64 << 10  # sizes whose own work is a fraction of SLOW_CALL_EXCESS_S on this box

# The split moves from minute to minute where small calls stall (README, "What `o` is made of"), and configurations
# of many calls move with it: ``validate`` measures it again beside its rows (``validate.small_call_probe``), so that
# a row's error can be set against the per-call cost the calibration saw.
SMALL_CALLS = 60  # timed all-reduces of SMALL_CALL_BYTES before each group (about 0.02-0.3 s on this VM)
SMALL_CALL_BYTES = 4096
SMALL_CALL_WARMUP = 5


def fit_call_modes(records: list[dict[str, Any]], world_size: int) -> dict[str, Any] | None:
    """The sweep's small all-reduces (one at a time, ``impl`` native, at most ``CALL_MODE_MAX_BYTES``) split in
    two kinds: per size, a call more than ``SLOW_CALL_EXCESS_S`` over the size's 10th percentile is slow. The
    fast calls' median, the slow share and the slow calls' median lateness (over their size's 10th percentile),
    over all sizes and per size (``*_by_size``); and, where the records carry them and each covers its own calls
    only (not interleaved with other implementations), the ranks' thread time per call (``thread_costs``). None
    where the records hold no such size with 10 calls or more.

    The stream probe's per-call time ``o`` is a mean over back-to-back calls, so it carries the slow share of the
    minute it was measured in; the share is what moves it between calibrations of one machine."""
    fast: list[float] = []
    late: list[float] = []
    by_size: dict[str, float] = {}
    fast_by_size: dict[str, float] = {}
    late_by_size: dict[str, float] = {}
    threads: dict[str, list[int]] = {}
    thread_calls = 0
    for r in records:
        if r.get("kind") != "allreduce" or r.get("impl", "native") != "native" or r.get("world_size") != world_size:
            continue
        if int(r.get("msg_bytes", 0)) > CALL_MODE_MAX_BYTES:
            continue
        t = sorted(float(x) for x in r.get("times_s") or () if math.isfinite(float(x)))
        if len(t) < 10:
            continue
        if r.get("threads_ns") and r.get("threads_calls") == len(r["times_s"]):  # its own calls' thread time
            threads = add_threads(threads, r["threads_ns"])
            thread_calls += int(r["threads_calls"])
        base = t[len(t) // 10]
        slow = [x - base for x in t if x > base + SLOW_CALL_EXCESS_S]
        its_fast = [x for x in t if x <= base + SLOW_CALL_EXCESS_S]
        fast += its_fast
        late += slow
        size = str(int(r["msg_bytes"]))
        by_size[size] = len(slow) / len(t)
        fast_by_size[size] = statistics.median(its_fast)
        late_by_size[size] = statistics.median(slow) if slow else 0.0
    n = len(fast) + len(late)
    if not n:
        return None
    return {
        "max_bytes": CALL_MODE_MAX_BYTES,
        "calls": n,
        "fast_median_s": statistics.median(fast),
        "slow_share": len(late) / n,
        "slow_late_median_s": statistics.median(late) if late else 0.0,
        "slow_share_by_size": by_size,
        "fast_median_by_size_s": fast_by_size,
        "slow_late_median_by_size_s": late_by_size,
        "world_size": world_size,
        **thread_costs(threads, thread_calls),
    }


NETWORK_THREAD = "gloo_tcp_loop"  # gloo's TCP transport's event loop, one thread a rank


def thread_costs(threads: dict[str, list[int]], calls: int) -> dict[str, Any]:
    """What the ranks' threads did per timed call (a barrier and the call, as the sweep times them), from the
    records' ``threads_ns`` (``realrun.cpushare.thread_times``, summed over the ranks): ``network_cpu_s``, the
    CPU time of gloo's network threads, and ``core_wait_s``, the time the ranks' threads were ready to run and
    no core took them. gloo's network thread polls while a message waits for the receive that takes it (gloo's
    TCP pair leaves such a message unread and its socket stays readable), so where the ranks' threads outnumber
    the cores it holds a core the woken thread that would post that receive then waits for: the small calls'
    stalls, a scheduler tick each (BENCHMARKS.md, "Twenty-sixth session"). Both are sums over the ranks. Empty
    where not measured."""
    if not calls or not threads:
        return {}
    out = {"thread_calls": calls, "core_wait_s": sum(v[1] for v in threads.values()) / 1e9 / calls}
    if NETWORK_THREAD in threads:
        out["network_cpu_s"] = threads[NETWORK_THREAD][0] / 1e9 / calls
    return out


def call_modes_line(modes: dict[str, Any], o_s: float) -> str:
    """``fit_call_modes`` in words, beside the per-call time ``o_s`` the model takes from the stream probe."""
    head = f"small calls ({modes['calls']} one at a time, up to {modes['max_bytes'] >> 10} KiB): "
    if not modes["slow_share"]:
        return head + f"all took about {modes['fast_median_s'] * 1e3:.2f} ms (median), none stalled"
    by = sorted(modes["slow_share_by_size"].items(), key=lambda kv: int(kv[0]))
    sizes = ", ".join(f"{int(k) >> 10} KiB {v:.0%}" for k, v in by)
    mean = modes["fast_median_s"] + modes["slow_share"] * modes["slow_late_median_s"]
    return (
        head + f"{1 - modes['slow_share']:.0%} took {modes['fast_median_s'] * 1e3:.2f} ms (median), "
        f"{modes['slow_share']:.0%} stalled {modes['slow_late_median_s'] * 1e3:.2f} ms more ({sizes}): "
        f"{mean * 1e3:.2f} ms a call on average, against o = {o_s * 1e3:.2f} ms back to back (the model's); "
        f"configurations of many calls move with the stalled share" + _threads_phrase(modes)
    )


def _threads_phrase(modes: dict[str, Any]) -> str:
    """The ranks' threads behind the stalls, where the sweep measured them (``thread_costs``)."""
    if "core_wait_s" not in modes:
        return ""
    stalled = modes["slow_share"] * modes["slow_late_median_s"]  # a call's stall time, on average
    p = int(modes.get("world_size") or 1)
    net = modes.get("network_cpu_s")
    out = f"; per call (and its barrier), summed over the {p} ranks: "
    if net is not None:
        out += f"gloo's network threads ran {net * 1e3:.2f} ms (they poll while a message waits for its receive), "
    out += f"threads ready to run waited {modes['core_wait_s'] * 1e3:.2f} ms for a core"
    # a rank's share of the waits against the call's stall: where they come near it, the stalls are those waits
    if stalled > 0 and modes["core_wait_s"] / p >= 0.5 * stalled:
        out += f" (against {stalled * 1e3:.2f} ms stalled): the stalls are waits for a core"
    return out


def _timed_steps(step, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        out.append(time.perf_counter() - t0)
    return out


def contention_probe(
    ctx: Any,
    workload_spec: str,
    batch_size: int,
    steps: int = 10,
    comm_bytes: int = 4 << 20,
    warmup: int = 3,
) -> dict[str, Any]:
    """Forward+backward alone, then with all-reduces of ``comm_bytes`` in flight the whole time."""
    import torch
    import torch.distributed as dist

    from realrun.workloads import load_workload

    wl = load_workload(workload_spec)
    model = wl.build()
    batch = wl.make_batch(batch_size, seed=1000 + ctx.rank)

    def step() -> None:
        model.zero_grad(set_to_none=True)
        wl.loss(model, batch).backward()

    group = dist.new_group(backend=dist.get_backend())
    buf = torch.ones(comm_bytes // 4)
    flag = torch.zeros(1)

    for _ in range(warmup):
        step()
    dist.barrier()
    comm_alone = []
    for _ in range(max(5, steps)):
        t0 = time.perf_counter()
        dist.all_reduce(buf, group=group)
        comm_alone.append(time.perf_counter() - t0)
    dist.barrier()
    alone = _timed_steps(step, steps)
    dist.barrier()

    stop = threading.Event()
    comm_busy: list[float] = []
    comm_times: list[float] = []
    window: list[float] = []

    def communicate() -> None:
        # every rank runs the same number of all-reduces: after each one, all ranks agree
        # (MAX of their stop flags) whether to go on
        t_start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            dist.all_reduce(buf, group=group)
            comm_times.append(time.perf_counter() - t0)
            flag.fill_(1.0 if stop.is_set() else 0.0)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
            if flag.item() > 0:
                break
        window.append(time.perf_counter() - t_start)
        comm_busy.append(sum(comm_times))

    th = threading.Thread(target=communicate, daemon=True)
    th.start()
    time.sleep(0.02)
    t0 = time.perf_counter()
    overlapped = _timed_steps(step, steps)
    compute_window = time.perf_counter() - t0
    stop.set()
    th.join(timeout=120)
    if th.is_alive():
        raise RuntimeError("background all-reduce thread did not stop")
    dist.barrier()
    # the fraction of the compute window during which an all-reduce was in flight
    busy_fraction = min(1.0, comm_busy[0] / window[0]) if window and window[0] > 0 else 0.0
    dist.destroy_process_group(group)
    return {
        "rank": ctx.rank,
        "alone_s": alone,
        "overlapped_s": overlapped,
        "busy_fraction": busy_fraction,
        "compute_window_s": compute_window,
        "comm_alone_s": comm_alone,
        "comm_under_compute_s": comm_times,
        "comm_bytes": comm_bytes,
    }


STREAM_RESIDENT_BYTES = 512 * (1 << 20)  # the stream probe's buffers of every size at once, at most (per rank)


def stream_probe(ctx: Any, sizes_bytes: list[int], k: int = 16, reps: int = 8) -> dict[str, Any]:
    """All-reduces issued back to back, as a DDP step issues them.

    For each size: ``k`` calls in a row, blocking one after another, and ``k``
    async calls launched at once then waited for; per call, per repetition.
    The blocking stream gives the per-call cost of consecutive calls (a call
    that follows another pays a hand-off the isolated, barrier-separated call
    of the benchmark does not); blocking over async says how many calls the
    backend really runs at once (gloo has 2 threads; on 2 cores they may not
    help).

    The sizes take turns, repetition by repetition (in the order given, then reversed, and so on: each
    size is first and last as often, the two ends following themselves at each turn-around), after one
    untimed round of every size. Stored calibrations timed each size's repetitions in a row, sizes
    ascending, from the first on, which put the machine's drift into the sizes: over the 142 stored
    loopback calibrations the first size's first blocking repetition took a median 1.46x the rest, and
    its 4 KiB calls 1.16x the 16 KiB ones on the mean of the repetitions (1.10x without the first).
    Dropping that first repetition moved the fitted ``o`` little (a median x0.994) but gloo's channel
    count in 22 of 112 loopback cells (BENCHMARKS.md, "Thirteenth session"). Every size's buffers stay
    resident where they fit ``STREAM_RESIDENT_BYTES``; otherwise each stream's are made before its timing.
    """
    import torch
    import torch.distributed as dist

    sizes_bytes = list(dict.fromkeys(sizes_bytes))

    def make(n: int, count: int = k) -> list[Any]:
        return [torch.ones(max(1, n // 4)) for _ in range(count)]

    resident = k * sum(sizes_bytes) <= STREAM_RESIDENT_BYTES
    kept = {n: make(n) for n in sizes_bytes} if resident else {}

    def buffers(n: int) -> list[Any]:
        return kept[n] if resident else make(n)

    for n in sizes_bytes:
        first = kept[n][0] if resident else make(n, 1)[0]
        for _ in range(2):
            dist.all_reduce(first)
    blocking: dict[int, list[float]] = {n: [] for n in sizes_bytes}
    asyn: dict[int, list[float]] = {n: [] for n in sizes_bytes}
    for rep in range(reps + 1):  # round 0 untimed
        for n in sizes_bytes if rep % 2 == 0 else sizes_bytes[::-1]:
            bufs = buffers(n)
            dist.barrier()
            t0 = time.perf_counter()
            for b in bufs:
                dist.all_reduce(b)
            t_block = (time.perf_counter() - t0) / k
            dist.barrier()
            t0 = time.perf_counter()
            works = [dist.all_reduce(b, async_op=True) for b in bufs]
            for w in works:
                w.wait()
            if rep:
                blocking[n].append(t_block)
                asyn[n].append((time.perf_counter() - t0) / k)
    return {
        "k": k,
        "reps": reps,
        "sizes_bytes": sizes_bytes,
        "blocking_s": [blocking[n] for n in sizes_bytes],
        "async_s": [asyn[n] for n in sizes_bytes],
        "order": "interleaved",
        "untimed_rounds": 1,
    }
