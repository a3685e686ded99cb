"""The discrete-event model of one data-parallel training step (SimPy).

One generator per activity:

* ``_rank``: a rank's compute -- forward, ``no_sync`` micro-steps, backward
  as segments that end where a collective's last gradient becomes ready, the
  wait for communication, bucket copy-out, the optimizer; it also plays the
  reducer, launching collectives by the plan's rule;
* ``_collective``: one collective; it starts once *every* simulated rank has
  launched it (a collective cannot begin before its last rank), takes a
  channel slot (``Resource(capacity=channels)``: NCCL 1 stream, gloo 2
  threads), spends its latency part, then its transfer part -- shared with
  the other transfers in flight when bandwidth is shared.

Contention goes both ways, each a fitted factor: compute runs ``1 +
contention`` times slower while any collective is in flight, and
communication runs ``1 + comm_contention`` times slower while any rank
computes (on a CPU, gloo's threads and the compute threads share cores). Work
in progress is re-timed whenever either state changes: exact, not sampled at
segment starts.

Durations come only from the profile and the cost model. Events are recorded
as ``(start_s, end_s, rank, kind, name)`` and turned into tables after
``env.run()``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import simpy

from .network import CostModel
from .profile import GradProfile
from .strategies import Collective, CommPlan

Event = tuple[float, float, int, str, str]

_EPS = 1e-15


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
        return {
            "index": self.index,
            "name": self.name,
            "msg_bytes": self.msg_bytes,
            "n_params": self.n_params,
            "ready_s": self.ready_s,
            "start_s": self.start_s,
            "end_s": self.end_s,
        }


@dataclass(frozen=True)
class RunOutcome:
    """One simulated step (one seed)."""

    step_time_s: float
    backward_end_s: float
    comm_busy_s: float
    rows: tuple[BucketRow, ...]
    events: tuple[Event, ...]
    n_sim_events: int


class _Step:
    def __init__(
        self,
        profile: GradProfile,
        plan: CommPlan,
        cost: CostModel,
        world_size: int,
        factors: list[float],
        record: bool,
    ):
        self.env = simpy.Environment()
        self.profile, self.plan, self.cost, self.p = profile, plan, cost, world_size
        self.factors = factors
        self.record = record
        self.events: list[Event] = []
        self.slots = simpy.Resource(self.env, capacity=cost.channels)
        self.busy = 0
        self.busy_changed = self.env.event()
        self.n_xfer = 0
        self.computing = 0
        self.comm_rate_changed = self.env.event()
        self.busy_since = 0.0
        self.comm_busy_s = 0.0
        self.n_sim_events = 0
        n_ranks = len(factors)
        colls = plan.collectives
        self.launched = [[self.env.event() for _ in range(n_ranks)] for _ in colls]
        self.done = [self.env.event() for _ in colls]
        self.rows: list[BucketRow | None] = [None] * len(colls)
        self.rank_end = [0.0] * n_ranks
        self.bwd_end = [0.0] * n_ranks
        self._segments = self._build_segments()

    # ---- plan -> backward segments ---------------------------------------------
    def _build_segments(self) -> list[tuple[float, str, tuple[int, ...]]]:
        """Backward split at the points where collectives become ready: ``(work_s, name, colls_ready)``."""
        prof, plan = self.profile, self.plan
        pos = {i: k for k, i in enumerate(prof.ready_order)}
        copy_bw = self.cost.copy_bytes_per_s if plan.copy_in else None
        hook_s = self.cost.hook_s_per_param if plan.python_hooks else 0.0
        ready_at: dict[int, list[int]] = {}
        if plan.launch != "after_backward":
            for c, coll in enumerate(plan.collectives):
                ready_at.setdefault(max(pos[i] for i in coll.params), []).append(c)
        segs: list[tuple[float, str, tuple[int, ...]]] = []
        work, first = 0.0, None
        last = len(prof.ready_order) - 1
        for k, i in enumerate(prof.ready_order):
            par = prof.params[i]
            work += par.bwd_s + hook_s + (par.nbytes / copy_bw if copy_bw else 0.0)
            if first is None:
                first = par.name
            if k in ready_at or k == last:
                name = par.name if first == par.name else f"{first}..{par.name}"
                segs.append((work, name, tuple(ready_at.get(k, ()))))
                work, first = 0.0, None
        if prof.backward_tail_s > 0:
            segs.append((prof.backward_tail_s, "backward tail", ()))
        return segs

    # ---- rate-dependent progress ---------------------------------------------------
    # Compute runs at 1/(1+contention) while any collective is in flight; a collective's
    # latency and transfer parts run at 1/(1+comm_contention) while any rank computes, and
    # transfers share bandwidth (1/k each for k in flight) when bandwidth is shared. Work
    # is re-timed whenever one of these states changes, so the result is exact.
    def _signal(self, attr: str) -> None:
        ev = getattr(self, attr)
        setattr(self, attr, self.env.event())
        ev.succeed()

    def _compute(self, work_s: float) -> Iterator[simpy.Event]:
        env, c = self.env, self.cost.contention
        if work_s <= 0:
            return
        track = self.cost.comm_contention > 0
        if track:
            self.computing += 1
            if self.computing == 1:
                self._signal("comm_rate_changed")
        if c == 0:
            self.n_sim_events += 1
            yield env.timeout(work_s)
        else:
            slow = 1.0 + c
            yield from self._progress(work_s, lambda: 1.0 / slow if self.busy else 1.0, "busy_changed")
        if track:
            self.computing -= 1
            if self.computing == 0:
                self._signal("comm_rate_changed")

    def _progress(self, work_s: float, rate: Callable[[], float], changed: str) -> Iterator[simpy.Event]:
        """Do ``work_s`` seconds of work at ``rate()``, re-timed whenever the event named ``changed`` fires."""
        env = self.env
        remaining = work_s
        while remaining > _EPS:
            r = rate()
            t0 = env.now
            to = env.timeout(remaining / r)
            self.n_sim_events += 1
            res = yield to | getattr(self, changed)
            if to in res:
                break
            remaining -= (env.now - t0) * r

    def _set_busy(self, delta: int) -> None:
        was = self.busy
        self.busy += delta
        if was == 0 and self.busy:
            self.busy_since = self.env.now
        elif was and self.busy == 0:
            self.comm_busy_s += self.env.now - self.busy_since
        if (was == 0) != (self.busy == 0):
            self._signal("busy_changed")

    def _comm_work(self, work_s: float, shared: bool) -> Iterator[simpy.Event]:
        """Progress ``work_s`` seconds of communication at the current rates."""
        env = self.env
        cc = self.cost.comm_contention
        shared = shared and self.cost.shared_bandwidth and self.cost.channels > 1
        if not shared and cc == 0:
            self.n_sim_events += 1
            yield env.timeout(work_s)
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

    # ---- processes -------------------------------------------------------------
    def _collective(
        self, c: int, coll: Collective, launched: list[simpy.Event], done: simpy.Event
    ) -> Iterator[simpy.Event]:
        env = self.env
        yield env.all_of(launched)
        ready = env.now
        if coll.op == "allreduce":
            lat, xfer = self.cost.allreduce_parts_s(coll.msg_bytes, self.p)
        else:
            lat, xfer = self.cost.broadcast_parts_s(coll.msg_bytes, self.p)
        with self.slots.request() as req:
            yield req
            start = env.now
            self._set_busy(+1)
            if lat > 0:
                yield from self._comm_work(lat, shared=False)
            if xfer > 0:
                yield from self._comm_work(xfer, shared=True)
            self._set_busy(-1)
        end = env.now
        self.rows[c] = BucketRow(c, coll.name, coll.msg_bytes, len(coll.params), ready, start, end)
        if self.record:
            self.events.append((start, end, -1, coll.op, coll.name))
        done.succeed()

    def _span(self, rank: int, kind: str, name: str, work_s: float) -> Iterator[simpy.Event]:
        t0 = self.env.now
        yield from self._compute(work_s)
        if self.record and work_s > 0:
            self.events.append((t0, self.env.now, rank, kind, name))

    def _rank(self, r: int) -> Iterator[simpy.Event]:
        env, prof, plan, f = self.env, self.profile, self.plan, self.factors[r]
        bwd_total = sum(w for w, _, _ in self._segments)
        yield from self._span(r, "forward", "forward", prof.forward_s * f)
        for m in range(self._accum - 1):  # no_sync micro-steps: no communication
            yield from self._span(r, "backward", f"backward(no_sync {m})", bwd_total * f)
            yield from self._span(r, "forward", "forward", prof.forward_s * f)
        colls = plan.collectives
        next_launch = 0
        ready = [False] * len(colls)
        for work, name, newly in self._segments:
            yield from self._span(r, "backward", name, work * f)
            if plan.launch == "on_ready":
                for c in newly:
                    self.launched[c][r].succeed()
            elif plan.launch == "in_order":
                for c in newly:
                    ready[c] = True
                while next_launch < len(colls) and ready[next_launch]:
                    self.launched[next_launch][r].succeed()
                    next_launch += 1
        self.bwd_end[r] = env.now
        if plan.launch == "after_backward":
            for c in range(len(colls)):  # blocking, one after another
                self.launched[c][r].succeed()
                yield self.done[c]
        elif colls:
            yield env.all_of(self.done)
        t0 = env.now
        if self.record and t0 > self.bwd_end[r]:
            self.events.append((self.bwd_end[r], t0, r, "wait", "wait for communication"))
        copy_bw = self.cost.copy_bytes_per_s
        if copy_bw and plan.copy_out_bytes:
            yield from self._span(r, "copy", "copy gradients out of buckets", plan.copy_out_bytes / copy_bw)
        yield from self._span(r, "optimizer", "optimizer", prof.optimizer_s * plan.optimizer_fraction * f)
        for c, coll in enumerate(plan.post_optimizer):
            self.launched_post[c][r].succeed()
            yield self.done_post[c]
        self.rank_end[r] = env.now

    _accum = 1

    def run(self, accum_steps: int) -> RunOutcome:
        env = self.env
        self._accum = accum_steps
        n_ranks = len(self.factors)
        for c, coll in enumerate(self.plan.collectives):
            env.process(self._collective(c, coll, self.launched[c], self.done[c]))
        post = self.plan.post_optimizer
        self.launched_post = [[env.event() for _ in range(n_ranks)] for _ in post]
        self.done_post = [env.event() for _ in post]
        if post:
            base = len(self.plan.collectives)
            self.rows.extend([None] * len(post))
            for c, coll in enumerate(post):
                env.process(self._collective(base + c, coll, self.launched_post[c], self.done_post[c]))
        for r in range(n_ranks):
            env.process(self._rank(r))
        env.run()
        missing = [i for i, row in enumerate(self.rows) if row is None]
        if missing:  # a plan whose collectives never launch is a bug in the plan, not user input
            raise RuntimeError(f"simulation ended with {len(missing)} collectives never run")
        return RunOutcome(
            step_time_s=max(self.rank_end),
            backward_end_s=max(self.bwd_end),
            comm_busy_s=self.comm_busy_s,
            rows=tuple(self.rows),  # type: ignore[arg-type]
            events=tuple(sorted(self.events)),
            n_sim_events=self.n_sim_events + len(self.rows),
        )


def simulate_step(
    profile: GradProfile,
    plan: CommPlan,
    cost: CostModel,
    world_size: int,
    factors: list[float] | None = None,
    accum_steps: int = 1,
    record: bool = False,
) -> RunOutcome:
    """Simulate one step with per-simulated-rank compute factors (default: one rank, factor 1)."""
    factors = factors or [1.0]
    if world_size <= 1:
        plan = CommPlan(plan.launch, (), False, 0, 1.0, ())
    return _Step(profile, plan, cost, world_size, factors, record).run(accum_steps)


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
