"""The model of one data-parallel training step: a SimPy discrete-event model, and an exact shortcut.

The event model (``_Step``, the reference) runs one SimPy process per simulated
rank and one per channel:

* a rank's process does its compute -- forward, ``no_sync`` micro-steps,
  backward as segments that end where a collective's last gradient becomes
  ready, the wait for communication, the hand-written wrappers' division of
  averaged gradients (``scale_bytes_per_s``), bucket copy-out, torch DDP's finalize
  (``finalize_s_per_param`` per parameter its reducer holds), the optimizer -- and
  plays the reducer, launching collectives by the plan's rule. A launch is
  bookkeeping (a count per collective), not an event: a collective joins the
  channels' FIFO queue once *every* simulated rank has launched it (it cannot
  begin before its last rank);
* a channel's process (``cost.channels`` of them: NCCL 1 stream, gloo 2
  threads) takes the next collective from the queue, spends its latency part,
  then its transfer part -- shared with the other transfers in flight when
  bandwidth is shared. A pipelined channel (``cost.pipelined``, one channel)
  starts a queued collective's latency part once the one before it is
  transferring, and its transfer once that one's is done (``_wire``).

A collective costs about 3 SimPy events on one serial channel (12 when each
collective was its own process holding a ``simpy.Resource``).

Contention goes both ways, each a fitted factor: compute runs ``1 +
contention`` times slower while any collective is in flight, and
communication runs ``1 + comm_contention`` times slower while any rank
computes (on a CPU, gloo's threads and the compute threads share cores). Work
in progress is re-timed whenever either state changes: exact, not sampled at
segment starts. Or the CPU a call takes is counted as work: each collective
brings ``call_cpu_s + call_cpu_s_per_byte * bytes`` of work to every rank
computing when it starts (the reducer's and gloo's work on shared cores), owed
on that rank's core: while it is owed, compute and it share the core, half
speed each; a rank that stops computing leaves the core to it (a rank waiting
for communication pays nothing). So a call costs compute all its work where
compute goes on long enough, and at most the compute left where it does not:
the last bucket, launched at backward's tail.

A step that communicates begins with ``cost.leftover_s`` of work on every rank before its forward: what a
step pays after a DDP step beyond one after a compute-only step, fitted by calibration from the in-step
probe's compute-only steps (one after a DDP step against one after a compute-only step). Measured on
micro-DLRM on loopback it is on-CPU time in the next step, not work left running, and mostly the switch
from one copy of the model to another (BENCHMARKS.md, "Thirtieth session"); and its optimizer takes
``cost.optimizer_extra_s`` beyond the profile's (the probe's timelines against the profile's optimizer).

A collective that starts with none in flight waits ``cost.cold_extra_s(idle)``
before its latency part, ``idle`` the time since the last one ended (for the
step's first: since the previous step's last, taken to end where its
optimizer begins, or at its end where collectives follow the optimizer): the
threads that run it wake from a wait or from compute first (measured by the
cold-call probe with nothing computing, so compute does not slow the wait, nor
the wait compute).
A call that starts while another is in flight is taken as warm (gloo's second
thread: not measured). A call that waited in the channels' queue (it joined it
while every channel was busy, so it starts the moment one frees) spends
``cost.queued_latency_scale`` of its latency part: the threads that serve it
go from one call to the next without a wait between them, unlike the stream
probe's calls, each launched after the one before returned. Not in a step
whose ranks block on collectives (sharded's broadcasts after the optimizer):
there every call spends all of it (on this VM such steps' many-call phase cost
what the stream probe's per-call time says in every run measured, BENCHMARKS.md
"Twentieth session").

With no contention, no per-call work, no cold-call cost, queued calls at their full latency and one channel, not
pipelined, the event model reduces to a recursion
that ``_analytic`` evaluates with numpy (``simulate_step(model="auto")``, the
default, takes it when no events are recorded); ``tests/test_engine_fast.py``
and ``tests/test_engine_golden.py`` hold both to the event model.

Durations come only from the profile and the cost model (over a whole plan at
once: ``collective_parts``). Plans arrive as arrays (``strategies.PlanArrays``).
Events are recorded as ``(start_s, end_s, rank, kind, name)``.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import collectives as C
from .jsonio import to_fields
from .network import CostModel
from .profile import GradProfile
from .strategies import CommPlan, PlanArrays, plan_arrays, profile_arrays

if TYPE_CHECKING:
    import simpy

Event = tuple[float, float, int, str, str]

_EPS = 1e-15
_QUEUED_EPS_S = 1e-12  # a call that joined the queue this long before it started waited there (not: same instant)
_SHARE = 0.5  # compute's share of its core while calls' work is owed on it (two runnable threads, fair share)


@dataclass(frozen=True)
class BucketRow:
    index: int
    name: str
    msg_bytes: int
    n_params: int
    ready_s: float  # all ranks have launched it
    start_s: float  # holds a channel
    end_s: float

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)


class Rows(Sequence[BucketRow]):
    """The per-collective rows of one run, made into ``BucketRow`` only when read.

    A plan of 50,000 buckets would otherwise cost more to report than to simulate.
    """

    def __init__(self, plan: PlanArrays, ready: np.ndarray, start: np.ndarray, end: np.ndarray):
        self._plan, self._ready, self._start, self._end = plan, ready, start, end
        self._n = plan.n_collectives

    def __len__(self) -> int:
        return len(self._ready)

    def _row(self, k: int) -> BucketRow:
        pl, n = self._plan, self._n
        if k < n:
            name, msg, n_params = pl.names(k), int(pl.msg_bytes[k]), int(pl.n_params[k])
        else:
            name, msg, n_params = pl.post_names(k - n), int(pl.post_msg_bytes[k - n]), 1
        return BucketRow(k, name, msg, n_params, float(self._ready[k]), float(self._start[k]), float(self._end[k]))

    def __getitem__(self, k):
        if isinstance(k, slice):
            return tuple(self._row(i) for i in range(*k.indices(len(self))))
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self._row(k)

    def __iter__(self) -> Iterator[BucketRow]:
        return (self._row(k) for k in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"Rows({len(self)} collectives)"


@dataclass(frozen=True)
class RunOutcome:
    """One simulated step (one seed)."""

    step_time_s: float
    backward_end_s: float
    comm_busy_s: float
    rows: Sequence[BucketRow]
    events: tuple[Event, ...]
    n_sim_events: int  # SimPy events scheduled; 0 on the analytic path


# ---- durations, for a whole plan at once --------------------------------------------------


def _best_of(level: Any, msg: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """``LinkLevel.best`` for an array of messages: ``(t0_s, slope)`` of the cheapest algorithm per message,
    the first listed winning ties, with the arithmetic of the scalar version (so equal to the bit)."""
    best0 = best1 = None
    for a in level.algorithms:
        t0 = C.allreduce_time_s(a, 0.0, p, level.alpha_s, level.beta_s_per_byte, level.gamma_s_per_byte)
        t1 = C.allreduce_time_s(a, 1.0, p, level.alpha_s, level.beta_s_per_byte, level.gamma_s_per_byte)
        slope = t1 - t0
        if best0 is None:
            best0, best1 = np.full(msg.shape, t0), np.full(msg.shape, slope)
            continue
        better = t0 + slope * msg < best0 + best1 * msg
        best0 = np.where(better, t0, best0)
        best1 = np.where(better, slope, best1)
    assert best0 is not None and best1 is not None
    return best0, best1


def affine_parts(cost: CostModel, msg_bytes: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """``CostModel._affine`` for an array of message sizes: ``(t0_s, slope_s_per_byte)`` per message."""
    msg = np.asarray(msg_bytes)
    net = cost.network
    if net is None:
        o, slope = cost._affine(0.0, p)  # the linear model does not depend on the size
        return np.full(msg.shape, o), np.full(msg.shape, slope)
    g = min(net.gpus_per_node, p)
    nodes = math.ceil(p / g)
    t0 = np.full(msg.shape, net.call_overhead_s)
    slope = np.zeros(msg.shape)
    if g > 1:
        a0, a1 = _best_of(net.intra or net.inter, msg, g)
        t0, slope = t0 + a0, slope + a1
    if nodes > 1:
        b0, b1 = _best_of(net.inter or net.intra, msg / g, nodes)
        t0, slope = t0 + b0, slope + b1 / g
    return t0, slope


def collective_parts(cost: CostModel, op: str, msg_bytes: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """``(latency_s, transfer_s)`` arrays: ``cost.allreduce_parts_s`` / ``broadcast_parts_s`` per message
    (``broadcast_step_extra_s`` on each broadcast's latency, as there)."""
    msg = np.asarray(msg_bytes, dtype=np.int64)
    if p <= 1:
        return np.zeros(msg.shape), np.zeros(msg.shape)
    if op != "broadcast":
        o, slope = affine_parts(cost, msg, p)
        return o, msg * slope
    if cost.broadcast_o_s is not None and cost.broadcast_w_bytes_per_s is not None:
        lat, xfer = np.full(msg.shape, cost.broadcast_o_s), msg / cost.broadcast_w_bytes_per_s
    else:
        o, slope = affine_parts(cost, msg, p)
        lat, xfer = o, msg * slope / C.busbw_factor_allreduce(p)
    if cost.broadcast_step_extra_s:
        lat = np.maximum(lat + cost.broadcast_step_extra_s, 0.0)
    return lat, xfer


def switch_credit(src: np.ndarray, lat: np.ndarray, xfer: np.ndarray, credit_s: float) -> np.ndarray:
    """The transfer times of blocking broadcasts from sources ``src``, run one after another, on links whose
    direction earns ``credit_s`` of free transfer while idle (``CostModel.broadcast_switch_credit_s``):
    broadcast ``k`` saves ``min(credit_s, idle, xfer[k])``, ``idle`` the time since its source last sent (the
    sequence's start where it has not; none for the first broadcast, nor one from the source before it)."""
    out = np.array(xfer, dtype=float)
    last_end: dict[int, float] = {}
    t = 0.0
    for k in range(len(out)):
        s = int(src[k])
        if k and s != int(src[k - 1]):
            out[k] -= min(credit_s, t - last_end.get(s, 0.0), out[k])
        t += float(lat[k]) + out[k]
        last_end[s] = t
    return out


# ---- what both models share ------------------------------------------------------------------


def scale_pass_s(plan: PlanArrays, cost: CostModel) -> float:
    """The in-place division of ``plan.scale_bytes`` by the world size after communication (0 where the
    plan folds it into the copy-in, or the rate was not measured)."""
    return plan.scale_bytes / cost.scale_bytes_per_s if plan.scale_bytes and cost.scale_bytes_per_s else 0.0


def _scale_label() -> str:
    return "divide gradients by the world size"


class _Setup:
    """Per-parameter backward work in ready order, the segments it is split into, durations."""

    def __init__(self, profile: GradProfile, plan: PlanArrays, cost: CostModel, world_size: int):
        pa = profile_arrays(profile)
        self.profile, self.plan, self.cost, self.p = profile, plan, cost, world_size
        order = pa.order
        work = pa.bwd_s[order]
        if plan.python_hooks and cost.hook_s_per_param:
            work = work + cost.hook_s_per_param
        if plan.copy_in and cost.copy_bytes_per_s:
            work = work + pa.nbytes[order] / cost.copy_bytes_per_s
        self.work = work  # seconds, by ready position
        self.order = order
        n = plan.n_collectives
        self.lat, self.xfer = collective_parts(cost, "allreduce", plan.msg_bytes, world_size)
        self.post_lat, self.post_xfer = collective_parts(cost, "broadcast", plan.post_msg_bytes, world_size)
        if cost.broadcast_switch_credit_s and len(plan.post_src) == plan.n_post:
            self.post_xfer = switch_credit(plan.post_src, self.post_lat, self.post_xfer, cost.broadcast_switch_credit_s)
        # backward segments end where a collective becomes ready (and at the last gradient)
        m = len(order)
        if plan.launch != "after_backward" and n:
            lp = plan.last_pos
            cuts = lp if len(lp) < 2 or bool(np.all(lp[1:] > lp[:-1])) else np.unique(lp)
            if cuts[-1] != m - 1:
                cuts = np.append(cuts, m - 1)
        else:
            cuts = np.array([m - 1], dtype=np.int64)
        self.cuts = cuts  # ready position closing each segment
        seg_starts = np.concatenate(([0], cuts[:-1] + 1))
        self.seg_starts = seg_starts
        self.seg_work = np.add.reduceat(work, seg_starts)
        self.tail = profile.backward_tail_s
        # only a step that communicates pays what the step before (of the same plan) left running, first, and
        # the optimizer's extra after communication
        talks = bool(n or plan.n_post)
        self.lead = cost.leftover_s if talks else 0.0
        self.opt_extra = cost.optimizer_extra_s if talks else 0.0

    def seg_name(self, k: int) -> str:
        ps, order = self.profile.params, self.order
        if k >= len(self.cuts):
            return "backward tail"
        a, b = ps[int(order[self.seg_starts[k]])].name, ps[int(order[self.cuts[k]])].name
        return a if a == b else f"{a}..{b}"


# ---- the analytic path: no contention, no per-call work or cold calls, one serial channel -----
# With no contention compute never waits for communication before backward ends, so every
# rank's segment ends are known up front; with one channel the collectives run one at a time
# in launch order, ``end_k = max(launch_k, end_{k-1}) + d_k``, which unrolls to
# ``end = S + cummax(launch - S_prev)`` (``S`` the running sum of durations): numpy, no loop.
# It is what the event model computes for these plans; tests/test_engine_fast.py checks it.


def analytic_applies(cost: CostModel) -> bool:
    return (
        cost.contention == 0
        and cost.comm_contention == 0
        and cost.call_cpu_s == 0
        and cost.call_cpu_s_per_byte == 0
        and cost.channels == 1
        and not cost.pipelined
        and cost.cold_call_s == 0
        and cost.queued_latency_scale == 1
    )


def _serial(launch: np.ndarray, dur_lat: np.ndarray, dur_xfer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of collectives served one at a time in this order (``launch`` non-decreasing)."""
    d = dur_lat + dur_xfer
    s_incl = np.cumsum(d)
    s_prev = s_incl - d
    end = s_incl + np.maximum.accumulate(launch - s_prev)
    start = np.maximum(launch, np.concatenate(([-np.inf], end[:-1])))
    return start, end


def _analytic(st: _Setup, factors: list[float], accum_steps: int) -> RunOutcome:
    prof, plan, cost = st.profile, st.plan, st.cost
    n = plan.n_collectives
    seg_cum = np.cumsum(st.seg_work)
    bwd_total = float(st.seg_work.sum()) + st.tail
    starts_bwd, bwd_ends = [], []
    for f in factors:
        t = st.lead + prof.forward_s * f
        for _ in range(accum_steps - 1):
            t += bwd_total * f
            t += prof.forward_s * f
        starts_bwd.append(t)
        t_end = t + float(seg_cum[-1]) * f + st.tail * f
        bwd_ends.append(t_end)
    bwd_end_max = max(bwd_ends)
    if n:
        if plan.launch == "after_backward":
            launch = np.full(n, bwd_end_max)
            order = None
        else:
            seg_of = np.searchsorted(st.cuts, plan.last_pos)  # the segment after which each becomes ready
            ready = None
            for t0, f in zip(starts_bwd, factors):
                r = t0 + seg_cum[seg_of] * f
                ready = r if ready is None else np.maximum(ready, r)
            assert ready is not None
            if plan.launch == "in_order":
                launch, order = np.maximum.accumulate(ready), None
            else:  # on_ready: the channel takes them as they launch (ties: segment, then index)
                order = np.lexsort((np.arange(n), seg_of))
                launch = ready
        if order is None:
            start, end = _serial(launch, st.lat, st.xfer)
            if plan.launch == "after_backward":  # each is launched once the one before is done
                launch = start
        else:
            s_o, e_o = _serial(launch[order], st.lat[order], st.xfer[order])
            start, end = np.empty(n), np.empty(n)
            start[order], end[order] = s_o, e_o
        comm_end = float(end.max())
        busy = float((end - start).sum())
    else:
        launch = start = end = np.zeros(0)
        comm_end, busy = -math.inf, 0.0
    copy_s = plan.copy_out_bytes / cost.copy_bytes_per_s if cost.copy_bytes_per_s and plan.copy_out_bytes else 0.0
    per_bucket = bool(copy_s) and plan.copies_bucket_by_bucket
    scale_s = scale_pass_s(plan, cost)
    fin_s = plan.finalize_s(cost.finalize_s_per_param)
    opt_ends = []
    for b_end, f in zip(bwd_ends, factors):
        if per_bucket:  # wait for bucket c, copy it, next: the serial recursion from backward's end
            _, c_end = _serial(np.maximum(end, b_end), plan.msg_bytes / cost.copy_bytes_per_s, np.zeros(n))
            t = float(c_end[-1]) + scale_s
        else:
            t = max(b_end, comm_end) + scale_s + copy_s
        t += fin_s
        t += prof.optimizer_s * plan.optimizer_fraction * f + st.opt_extra
        opt_ends.append(t)
    if plan.n_post:
        pl = np.full(plan.n_post, max(opt_ends))
        p_start, p_end = _serial(pl, st.post_lat, st.post_xfer)
        pl = p_start  # blocking: each broadcast is launched once the one before is done
        step = float(p_end[-1])
        busy += float((p_end - p_start).sum())
        launch, start, end = (np.concatenate((a, b)) for a, b in ((launch, pl), (start, p_start), (end, p_end)))
    else:
        step = max(opt_ends)
    return RunOutcome(step, bwd_end_max, busy, Rows(plan, launch, start, end), (), 0)


# ---- the event model ------------------------------------------------------------------------


class _Step:
    """One step as SimPy processes: one per simulated rank, one per channel.

    A channel serves a FIFO queue of collectives that every rank has launched:
    the reducer's launch is plain bookkeeping (a count per collective), not an
    event, and a channel runs a collective as one timeout per part (latency,
    transfer) unless its rate changes mid-way. Compute is one timeout per
    backward segment (segments end where a collective becomes ready). When
    contention or shared bandwidth applies, work in progress is re-timed
    whenever the state it depends on changes: exact, not sampled.
    """

    def __init__(self, st: _Setup, factors: list[float], record: bool):
        import simpy  # imported here: the analytic path (most sweeps) never needs it, and it costs start-up time

        self.env = simpy.Environment()
        self.st, self.plan, self.cost = st, st.plan, st.cost
        self.factors = factors
        self.n_ranks = len(factors)
        self.record = record
        self.events: list[Event] = []
        n, m = st.plan.n_collectives, st.plan.n_post
        self.n_main = n
        self.lat = np.concatenate((st.lat, st.post_lat)).tolist()
        self.xfer = np.concatenate((st.xfer, st.post_xfer)).tolist()
        self.launch_count = [0] * (n + m)
        self.ready_s = [0.0] * (n + m)
        self.start_s = [0.0] * (n + m)
        self.end_s = [math.nan] * (n + m)
        self.queue: deque[int] = deque()
        self.queue_ev = self.env.event()
        # a pipelined channel: the last call's transfer has started / ended (nothing before the first)
        if self.cost.pipelined:
            self.xfer_started = self.env.event().succeed()
            self.wire_free = self.env.event().succeed()
        self.n_done_main = 0
        self.waiters: dict[int, simpy.Event] = {}  # collective -> event succeeded when it is done
        self.all_main_done = self.env.event()
        self.contention = self.cost.contention > 0
        self.call_cpu = bool(self.cost.call_cpu_s or self.cost.call_cpu_s_per_byte)
        if self.call_cpu:  # the work each collective adds to the compute it overlaps
            msg = np.concatenate((st.plan.msg_bytes, st.plan.post_msg_bytes))
            self.call_work = (self.cost.call_cpu_s + self.cost.call_cpu_s_per_byte * msg).tolist()
        self.in_compute = [False] * len(factors)  # which ranks compute now (call_cpu_s lands on them)
        self.debt = [0.0] * len(factors)  # calls' work landed on a rank and not yet done (call_cpu)
        self.debt_since = [0.0] * len(factors)  # when a rank stopped computing (its debt is done meanwhile)
        # the scale holds in steps whose ranks never block on a collective (the in-step probe's kind); a plan with
        # blocking collectives after its optimizer (sharded's broadcasts) keeps every call's full latency part
        self.queued_scale = 1.0 if st.plan.n_post else self.cost.queued_latency_scale
        self.comm_track = self.cost.comm_contention > 0
        self.shared = self.cost.shared_bandwidth and self.cost.channels > 1
        self.busy = 0
        self.waking = 0  # calls in flight still waking their threads (cold_call_s): they do not slow compute
        self.busy_changed = self.env.event()
        self.n_xfer = 0
        self.computing = 0
        self.comm_rate_changed = self.env.event()
        self.busy_since = 0.0
        # when the last collective in flight ended: for the step's first, the previous step's last one,
        # before its optimizer (or at its end, where collectives follow the optimizer)
        self.idle_since = (
            0.0 if st.plan.n_post else -(st.profile.optimizer_s * st.plan.optimizer_fraction + st.opt_extra)
        )
        self.comm_busy_s = 0.0
        self.rank_end = [0.0] * self.n_ranks
        self.bwd_end = [0.0] * self.n_ranks

    # ---- rate-dependent progress ------------------------------------------------------
    def _signal(self, attr: str) -> None:
        ev = getattr(self, attr)
        setattr(self, attr, self.env.event())
        ev.succeed()

    def _progress(self, work_s: float, rate: Callable[[], float], changed: str) -> Generator[simpy.Event, Any, None]:
        """Do ``work_s`` seconds of work at ``rate()``, re-timed whenever the event named ``changed`` fires."""
        env = self.env
        remaining = work_s
        while remaining > _EPS:
            r = rate()
            t0 = env.now
            to = env.timeout(remaining / r)
            res = yield to | getattr(self, changed)
            remaining = 0.0 if to in res else remaining - (env.now - t0) * r

    def _compute_beside_calls(self, work_s: float, r: int) -> Generator[simpy.Event, Any, None]:
        """Compute while calls' work (``call_cpu``) is owed on this rank's core: the two share it, each at
        ``_SHARE`` speed, until the debt is done; a debt left when the rank stops computing is done on the
        core it leaves free, at full speed. So a call's work costs compute all of itself where compute goes
        on long enough, and no more than the compute left where it does not (the last bucket, launched at
        backward's tail). Re-timed when communication starts or stops (``contention``) and when work lands.
        Work still owed when the step ends is dropped (one step is simulated, not the next one's forward)."""
        env = self.env
        slow = 1.0 + self.cost.contention
        self.debt[r] = max(0.0, self.debt[r] - (env.now - self.debt_since[r]))
        self.in_compute[r] = True
        remaining = work_s
        while remaining > _EPS:
            base = 1.0 / slow if self.busy > self.waking else 1.0
            owed = self.debt[r] > _EPS
            rate = base * _SHARE if owed else base
            t_done = remaining / rate
            t_debt = self.debt[r] / _SHARE if owed else math.inf
            t0 = env.now
            to = env.timeout(min(t_done, t_debt))
            res = yield to | self.busy_changed
            dt = env.now - t0
            fired = to in res
            # where the timer fired, what it timed is done exactly: env.now is rounded, and a remainder
            # below its resolution (from about 32 s of simulated time) would ask for a timeout that cannot move
            if owed:
                self.debt[r] = 0.0 if fired and t_debt <= t_done else max(0.0, self.debt[r] - dt * _SHARE)
            remaining = 0.0 if fired and t_done <= t_debt else remaining - dt * rate
        self.in_compute[r] = False
        self.debt_since[r] = env.now

    def _compute(self, work_s: float, r: int) -> Generator[simpy.Event, Any, None]:
        if work_s <= 0:
            return
        if self.comm_track:
            self.computing += 1
            if self.computing == 1:
                self._signal("comm_rate_changed")
        if not self.contention and not self.call_cpu:
            yield self.env.timeout(work_s)
        elif not self.call_cpu:  # re-timed when communication starts or stops
            slow = 1.0 + self.cost.contention
            yield from self._progress(work_s, lambda: 1.0 / slow if self.busy > self.waking else 1.0, "busy_changed")
        else:
            yield from self._compute_beside_calls(work_s, r)
        if self.comm_track:
            self.computing -= 1
            if self.computing == 0:
                self._signal("comm_rate_changed")

    def _set_busy(self, delta: int, waking: int = 0) -> None:
        """Calls in flight change by ``delta``, of them still waking (``cold_call_s``) by ``waking``;
        compute is slowed (``contention``) only by calls in flight and awake."""
        was, was_awake = self.busy, self.busy - self.waking
        self.busy += delta
        self.waking += waking
        if was == 0 and self.busy:
            self.busy_since = self.env.now
        elif was and self.busy == 0:
            self.comm_busy_s += self.env.now - self.busy_since
            self.idle_since = self.env.now
        if self.contention and (was_awake == 0) != (self.busy == self.waking):
            self._signal("busy_changed")

    def _comm_work(self, work_s: float, shared: bool) -> Generator[simpy.Event, Any, None]:
        cc = self.cost.comm_contention
        shared = shared and self.shared
        if not shared and cc == 0:
            yield self.env.timeout(work_s)
            return
        if shared:
            self.n_xfer += 1
            self._signal("comm_rate_changed")
        yield from self._progress(
            work_s,
            lambda: (1.0 / self.n_xfer if shared else 1.0) / (1.0 + cc if self.computing else 1.0),
            "comm_rate_changed",
        )
        if shared:
            self.n_xfer -= 1
            self._signal("comm_rate_changed")

    # ---- the reducer's bookkeeping and the channels -----------------------------------------
    def _launch(self, c: int) -> None:
        """One rank launches collective ``c``; once every rank has, it joins the channels' queue."""
        self.launch_count[c] += 1
        if self.launch_count[c] == self.n_ranks:
            self.ready_s[c] = self.env.now
            self.queue.append(c)
            if not self.queue_ev.triggered:
                self.queue_ev.succeed()

    def _done(self, c: int) -> simpy.Event:
        ev = self.waiters.get(c)
        if ev is None:
            ev = self.waiters[c] = self.env.event()
            if not math.isnan(self.end_s[c]):
                ev.succeed()
        return ev

    def _channel(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        pipelined = self.cost.pipelined
        while True:
            while not self.queue:
                if self.queue_ev.triggered:
                    self.queue_ev = env.event()
                yield self.queue_ev
            c = self.queue.popleft()
            if pipelined:  # the hand-off waits until the call before is on the wire
                yield self.xfer_started
            self.start_s[c] = env.now
            # a call on idle channels first wakes the threads that run it (cold_call_s): a wait, not work,
            # as the probe measured it with nothing computing: compute does not slow it (comm_contention)
            # and it does not slow compute (contention). It counts as a call in flight (a call starting
            # beside it is warm; comm_busy_s holds it). The call's work lands when it starts, as fitted.
            cold = self.cost.cold_extra_s(env.now - self.idle_since) if self.busy == 0 else 0.0
            self._set_busy(+1, waking=+1 if cold > 0 else 0)
            if self.call_cpu and any(self.in_compute):
                for r, on in enumerate(self.in_compute):
                    if on:
                        self.debt[r] += self.call_work[c]
                self._signal("busy_changed")  # the computing ranks take it on
            if cold > 0:
                yield env.timeout(cold)
                self._set_busy(0, waking=-1)
            lat = self.lat[c]
            if self.queued_scale != 1 and self.ready_s[c] < self.start_s[c] - _QUEUED_EPS_S:  # it waited
                lat *= self.queued_scale
            if lat > 0:
                yield from self._comm_work(lat, shared=False)
            if pipelined:  # the transfer waits for the wire; the next call's hand-off starts with it
                started, done = env.event(), env.event()
                env.process(self._wire(c, self.wire_free, started, done))
                self.xfer_started, self.wire_free = started, done
            else:
                yield from self._transfer(c)

    def _wire(
        self, c: int, free: simpy.Event, started: simpy.Event, done: simpy.Event
    ) -> Generator[simpy.Event, Any, None]:
        """A pipelined channel's transfer of ``c``: once the call before it has left the wire."""
        yield free
        started.succeed()
        yield from self._transfer(c)
        done.succeed()

    def _transfer(self, c: int) -> Generator[simpy.Event, Any, None]:
        env = self.env
        xfer = self.xfer[c]
        if xfer > 0:
            yield from self._comm_work(xfer, shared=True)
        self._set_busy(-1)
        self.end_s[c] = env.now
        if self.record:
            if c < self.n_main:
                self.events.append((self.start_s[c], env.now, -1, "allreduce", self.plan.names(c)))
            else:
                self.events.append((self.start_s[c], env.now, -1, "broadcast", self.plan.post_names(c - self.n_main)))
        ev = self.waiters.get(c)
        if ev is not None:
            ev.succeed()
        if c < self.n_main:
            self.n_done_main += 1
            if self.n_done_main == self.n_main:
                self.all_main_done.succeed()

    # ---- ranks --------------------------------------------------------------------------------
    def _span(self, rank: int, kind: str, name: Callable[[], str], work_s: float) -> Generator[simpy.Event, Any, None]:
        t0 = self.env.now
        yield from self._compute(work_s, rank)
        if self.record and work_s > 0:
            self.events.append((t0, self.env.now, rank, kind, name()))

    def _rank(self, r: int) -> Generator[simpy.Event, Any, None]:
        env, st, plan, f = self.env, self.st, self.plan, self.factors[r]
        prof = st.profile
        seg_work = st.seg_work.tolist()
        bwd_total = sum(seg_work) + st.tail
        fwd = prof.forward_s * f
        if st.lead:
            yield from self._span(r, "leftover", lambda: "the step before's leftover work", st.lead)
        yield from self._span(r, "forward", lambda: "forward", fwd)
        for m in range(st_accum(self) - 1):  # no_sync micro-steps: no communication
            yield from self._span(r, "backward", lambda m=m: f"backward(no_sync {m})", bwd_total * f)
            yield from self._span(r, "forward", lambda: "forward", fwd)
        n = plan.n_collectives
        launch = plan.launch
        by_seg: list[list[int]] = [[] for _ in seg_work]
        if launch != "after_backward" and n:
            seg_of = np.searchsorted(st.cuts, plan.last_pos).tolist()
            for c, k in enumerate(seg_of):
                by_seg[k].append(c)
        next_launch = 0
        ready = [False] * n
        for k, work in enumerate(seg_work):
            yield from self._span(r, "backward", lambda k=k: st.seg_name(k), work * f)
            if launch == "on_ready":
                for c in by_seg[k]:
                    self._launch(c)
            elif launch == "in_order":
                for c in by_seg[k]:
                    ready[c] = True
                while next_launch < n and ready[next_launch]:
                    self._launch(next_launch)
                    next_launch += 1
        if st.tail > 0:
            yield from self._span(r, "backward", lambda: "backward tail", st.tail * f)
        self.bwd_end[r] = env.now
        if launch == "after_backward":
            for c in range(n):  # blocking, one after another
                self._launch(c)
                yield self._done(c)
        copy_bw = self.cost.copy_bytes_per_s
        scale_s = scale_pass_s(plan, self.cost)
        if copy_bw and plan.copies_bucket_by_bucket:
            for c in range(n):  # torch's finalize_backward: wait for bucket c, copy it out, next
                t0 = env.now
                yield self._done(c)
                if self.record and env.now > t0:
                    self.events.append((t0, env.now, r, "wait", "wait for communication"))
                msg_c = int(plan.msg_bytes[c])
                yield from self._span(r, "copy", lambda c=c: f"copy {plan.names(c)} out", msg_c / copy_bw)
            if scale_s:
                yield from self._span(r, "copy", _scale_label, scale_s)
        else:
            if launch != "after_backward" and n:
                yield self.all_main_done
            t0 = env.now
            if self.record and t0 > self.bwd_end[r]:
                self.events.append((self.bwd_end[r], t0, r, "wait", "wait for communication"))
            if scale_s:
                yield from self._span(r, "copy", _scale_label, scale_s)
            if copy_bw and plan.copy_out_bytes:
                yield from self._span(r, "copy", lambda: "copy gradients out of buckets", plan.copy_out_bytes / copy_bw)
        fin_s = plan.finalize_s(self.cost.finalize_s_per_param)
        if fin_s:
            yield from self._span(r, "copy", lambda: "DDP finalize (per parameter)", fin_s)
        opt_s = prof.optimizer_s * plan.optimizer_fraction * f + st.opt_extra
        yield from self._span(r, "optimizer", lambda: "optimizer", opt_s)
        for c in range(n, n + plan.n_post):
            self._launch(c)
            yield self._done(c)
        self.rank_end[r] = env.now

    _accum = 1

    def run(self, accum_steps: int) -> RunOutcome:
        env = self.env
        self._accum = accum_steps
        if self.plan.n_collectives == 0:
            self.all_main_done.succeed()
        for _ in range(self.cost.channels):
            env.process(self._channel())
        for r in range(self.n_ranks):
            env.process(self._rank(r))
        env.run()
        if any(math.isnan(e) for e in self.end_s):  # a plan whose collectives never launch is a bug in the plan
            missing = sum(math.isnan(e) for e in self.end_s)
            raise RuntimeError(f"simulation ended with {missing} collectives never run")
        return RunOutcome(
            step_time_s=max(self.rank_end),
            backward_end_s=max(self.bwd_end),
            comm_busy_s=self.comm_busy_s,
            rows=Rows(self.plan, np.array(self.ready_s), np.array(self.start_s), np.array(self.end_s)),
            events=tuple(sorted(self.events)),
            n_sim_events=next(env._eid),  # SimPy events scheduled (simpy.core.Environment's event counter)
        )


def st_accum(step: _Step) -> int:
    return step._accum


_EMPTY = np.zeros(0, dtype=np.int64)


def simulate_step(
    profile: GradProfile,
    plan: CommPlan | PlanArrays,
    cost: CostModel,
    world_size: int,
    factors: list[float] | None = None,
    accum_steps: int = 1,
    record: bool = False,
    model: str = "auto",
) -> RunOutcome:
    """Simulate one step with per-simulated-rank compute factors (default: one rank, factor 1).

    ``model``: ``"events"`` runs the SimPy event model (the reference); ``"auto"``
    (default) answers analytically when ``analytic_applies(cost)`` (no contention, no
    per-call work, no cold-call cost, a serial channel) and no events are recorded, and
    runs the event model otherwise.
    """
    if model not in ("auto", "events", "analytic"):
        raise ValueError(f"model must be 'auto', 'events' or 'analytic', got {model!r}")
    factors = factors or [1.0]
    pa = plan if isinstance(plan, PlanArrays) else plan_arrays(profile, plan)
    if world_size <= 1:
        pa = PlanArrays(pa.launch, _EMPTY, _EMPTY, _EMPTY, pa.names, False, 0, key=("none",))
    st = _Setup(profile, pa, cost, world_size)
    if model == "analytic" or (model == "auto" and not record and analytic_applies(cost)):
        if not analytic_applies(cost):
            raise ValueError(
                "the analytic model needs no contention, no per-call work, no cold-call cost, queued calls at "
                "their full latency and one channel, not pipelined"
            )
        return _analytic(st, factors, accum_steps)
    return _Step(st, factors, record).run(accum_steps)


def rank_factors(world_size: int, ranks: int, jitter_sigma: float, rng_u: list[float]) -> list[float]:
    """Per-simulated-rank compute factors for lognormal(0, sigma) jitter per rank and step.

    ``ranks`` ranks are simulated; the first stands for the ``world_size - ranks + 1``
    ranks not simulated, so its factor is the *maximum* of that many draws
    (inverse CDF of the max: ``z = Phi^-1(u^(1/m))``); a collective waits for
    the slowest rank, so with a per-step factor this is exact.
    """
    import math

    if jitter_sigma <= 0:
        return [1.0] * ranks
    nd = statistics.NormalDist()
    m = world_size - ranks + 1
    out = []
    for k, u in enumerate(rng_u[:ranks]):
        u = min(max(u, 1e-12), 1 - 1e-12)
        z = nd.inv_cdf(u ** (1.0 / m)) if k == 0 else nd.inv_cdf(u)
        out.append(math.exp(jitter_sigma * z))
    return out
