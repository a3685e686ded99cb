"""``ddpsim calibrate``: measure this machine and fit the simulator's parameters.

One pool of real ranks (optionally in network namespaces over a ``tbf``-limited
link) runs, in order, with a progress line per phase:

1. all-reduce at a range of sizes -> robust fit of ``o`` and ``w``;
2. memory copies by size -> the bucket copy rate over the model's gradient sizes;
3. the model's gradient-ready profile, ranks computing concurrently as they do
   in training, with no communication;
4. the contention probe: forward+backward alone versus with all-reduces in
   flight -> the compute slowdown ``c``; all-reduces alone versus under compute
   -> the communication slowdown;
5. the in-step probe (``step_probe``): real torch DDP steps at a bucket size of
   its own with per-bucket timelines -> ``c`` and the communication slowdown as
   they are inside a step; these replace the contention probe's (kept in
   ``probes`` beside them).

With several world sizes (``--world-size 2,4``), all of that runs at the
smallest; then a pool of each larger size runs the all-reduce sweep alone, and
one model is fitted across every p (``fit_across_world_sizes``): a per-call
constant, gloo's ring latency per step and the link bandwidth, stored as the
params' ``abg``. With one world size the split of the zero-byte time between
the per-call constant and the per-step latency is assumed, and predictions at
other p say so.

Every measurement is appended to the records file as it is taken; the params
file is written at the end (atomically). Nothing here is assumed: each number
in the params file comes from a record listed in it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from simulator.network import CostModel
from simulator.units import KIB, MIB

from .contention import fit_contention
from .fit import ABGFit, LinearFit, fit_abg, fit_bandwidth, fit_linear, with_terms
from .params import Params
from .probes import call_modes_line, fit_call_modes
from .progress import Progress


@dataclass(frozen=True)
class CalibrateSpec:
    model: str = "gpt"
    backend: str = "gloo"
    world_size: int = 2
    batch_size: int | None = None
    link_mbit: float | None = None
    sizes_bytes: tuple[int, ...] | None = None
    profile_steps: int = 20
    contention_steps: int = 10
    step_probe_steps: int = 10  # 0: no in-step probe (the contention probe's factors are used)
    # more probe steps where ``step_probe_steps`` would not fill this (0: exactly). 4 s, not 1: over the four loopback
    # cells of m70loop, each calibration's 1 s windows replayed its rows to a median |error| of 2.05 %, the whole 4 s
    # probe to 1.36 %; and tune's recommendations from the two were as good against one shared measurement a workload
    # (mean gap to the best 2.28 and 2.10 %; BENCHMARKS.md, "Thirty-seventh session")
    step_probe_seconds: float = 4.0
    step_probe_check: bool = True  # the in-step probe at one bucket too: a check of its fit (the model error)
    cold_call_reps: int = 100  # 0: no cold-call probe (calls on idle channels cost what calls in a row do)
    switch_reps: int = 30  # 0: no broadcast-switch probe (a broadcast costs the same whichever rank sent last)
    sharded_steps: int = 10  # 0: no sharded-step probe (a broadcast in the step costs what the broadcast fit says)
    sharded_seconds: float = 3.0  # more sharded-probe steps where ``sharded_steps`` would not fill this
    optimizer: str = "sgd"
    records: str = "calibration.jsonl"
    timeout_s: float = 900.0
    world_sizes: tuple[int, ...] = ()  # all-reduce measured at each; () = (world_size,); the rest at the smallest

    def __post_init__(self) -> None:
        if self.world_sizes:
            object.__setattr__(self, "world_sizes", tuple(sorted(set(self.world_sizes))))
            object.__setattr__(self, "world_size", self.world_sizes[0])
        small = [p for p in self.world_sizes or (self.world_size,) if p < 2]
        if small:
            raise ValueError(f"calibration needs at least 2 ranks to communicate, got --world-size {small[0]}")
        if self.link_mbit is not None and not self.link_mbit > 0:
            raise ValueError(f"--link-mbit must be > 0, got {self.link_mbit}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"--batch-size must be >= 1, got {self.batch_size}")
        if not (math.isfinite(self.sharded_seconds) and self.sharded_seconds >= 0):
            raise ValueError(f"sharded_seconds must be a finite number >= 0, got {self.sharded_seconds!r}")
        if not (math.isfinite(self.step_probe_seconds) and self.step_probe_seconds >= 0):
            raise ValueError(f"--step-probe-seconds must be a finite number >= 0, got {self.step_probe_seconds!r}")


def default_sizes(link_mbit: float | None) -> tuple[int, ...]:
    """4 KiB up by factors of 4 to 1 MiB, then by factors of 2 to the largest size whose call stays near
    half a second, and over a link at least to 16 MiB: a DDP step moves buckets of that size (torch's
    default cap is 25 MiB), and over a 200 Mbit/s tbf link a fit that stopped at 4 MiB put the bandwidth
    4-8 % above what 16 MiB calls get (benchmarks/results/worldsize.md). The steps of 2 above 1 MiB give
    ``w``'s fit (``fit_bandwidth``, on the transfer-dominated sizes with an intercept of their own) spare sizes:
    over links its 95 % interval went from +-6-23 % to +-1-5 % (BENCHMARKS.md, "Run m15")."""
    cap = 64 * MIB if link_mbit is None else max(16 * MIB, int(link_mbit * 1e6 / 8 * 0.5))
    sizes, s = [], 4096
    while s <= cap:
        sizes.append(s)
        s *= 4 if s < MIB else 2
    return tuple(sizes)


def open_pool(world_size: int, backend: str, link_mbit: float | None, timeout_s: float):
    """A context manager yielding a ``RankPool``, inside emulated links when ``link_mbit`` is given."""
    from contextlib import contextmanager

    from realrun.launch import RankPool
    from realrun.netns import EmulatedNetwork

    @contextmanager
    def _cm():
        net = EmulatedNetwork(world_size, link_mbit) if link_mbit else nullcontext()
        with net as n:
            kw = n.pool_kwargs() if n is not None else {}
            with RankPool(world_size, backend, timeout_s=timeout_s, **kw) as pool:
                yield pool

    return _cm()


def measure_allreduce(
    pool: Any,
    sizes: tuple[int, ...],
    link_mbit: float | None,
    writer: Any,
    say: Callable[[str], None],
    impls: tuple[str, ...] = ("native", "broadcast"),
) -> list[dict]:
    from realrun.bench_allreduce import AllreduceBenchSpec, measure, sweep

    spec = AllreduceBenchSpec(
        backend=pool.backend,
        world_sizes=(pool.world_size,),
        sizes_bytes=sizes,
        impls=impls,
        link_mbit=link_mbit,
    )
    call = lambda *a: pool.run(measure, *a)[0]  # noqa: E731
    what = " and ".join("all-reduce" if i == "native" else i for i in impls)
    say(f"{what} at {len(sizes)} sizes, {sizes[0] // KIB} KiB to {sizes[-1] / MIB:g} MiB")
    return sweep(
        spec, pool.world_size, call, writer, False, run_id=f"calibrate-{int(time.time())}", t_start=time.monotonic()
    )


def stream_records(
    streams: list[dict], backend: str, world_size: int, link_mbit: float | None, env: dict[str, Any]
) -> list[dict[str, Any]]:
    """Rank 0's blocking stream times as all-reduce records (``impl="stream"``, per-call seconds)."""
    from realrun.records import make_record

    s0 = streams[0]
    out = []
    for n, blocking, asyn in zip(s0["sizes_bytes"], s0["blocking_s"], s0["async_s"]):
        out.append(
            make_record(
                "allreduce",
                env,
                impl="stream",
                backend=backend,
                world_size=world_size,
                msg_bytes=n,
                count=n // 4,
                dtype="float32",
                iters=len(blocking) * s0["k"],
                warmup=2,
                times_s=blocking,
                async_times_s=asyn,
                median_s=statistics.median(blocking),
                order=s0.get("order", "by size"),  # the sizes' repetitions in turns, or each size's in a row
                untimed_rounds=s0.get("untimed_rounds", 0),  # a stream of each size before the timed ones
                link_mbit=link_mbit,
            )
        )
    return out


def fit_probe(results: list[dict]) -> dict[str, Any]:
    """Compute slowdown ``c`` and communication slowdown from the contention probe of every rank."""
    alone = [statistics.median(r["alone_s"]) for r in results]
    overlapped = [statistics.median(r["overlapped_s"]) for r in results]
    busy = [r["busy_fraction"] for r in results]
    c = fit_contention(alone, overlapped, busy)
    comm_alone = statistics.median([t for r in results for t in r["comm_alone_s"]])
    comm_under = statistics.median([t for r in results for t in r["comm_under_compute_s"]])
    return {
        "contention_c": c,
        "comm_contention_c": max(0.0, comm_under / comm_alone - 1.0),
        "compute_alone_median_s": alone,
        "compute_overlapped_median_s": overlapped,
        "busy_fraction": busy,
        "comm_alone_median_s": comm_alone,
        "comm_under_compute_median_s": comm_under,
        "comm_bytes": results[0]["comm_bytes"],
    }


@dataclass(frozen=True)
class NetworkFit:
    """The network half of a calibration, fitted from its all-reduce, broadcast and stream records."""

    typical: LinearFit  # medians over every size (the typical call)
    linear: LinearFit  # what the simulator uses: o from the streams, w from the transfer-dominated sizes
    broadcast: LinearFit | None
    stream: LinearFit
    bandwidth: LinearFit | None  # the fit over the transfer-dominated sizes (None: too few of them)
    speedup: float  # blocking over async time of back-to-back calls (gloo: >= 1.3 means 2 channels, unless pipelined)
    channels: int
    pipelined: bool = False  # one channel whose queued calls' hand-offs overlap transfers (stream_pipelined)
    speedup_ci: tuple[float, float] | None = None  # 95 % bootstrap interval of ``speedup`` (gloo; None: no interval)
    call_modes: dict[str, Any] | None = None  # the small calls' two kinds (``probes.fit_call_modes``)

    @property
    def channels_marginal(self) -> bool:
        """Whether the stream probe leaves gloo's channel count open: the speed-up's 95 % interval holds
        ``TWO_CHANNELS_SPEEDUP`` (one channel or two would each be read from a probe like this one). A
        pipelined channel is one channel and counts too: on loopback its fit to the stream is loose (run
        rec3 of BENCHMARKS.md's "Eighth session": pipelined at x1.35, `individual` replayed +29 % long)."""
        ci = self.speedup_ci
        return ci is not None and ci[0] < TWO_CHANNELS_SPEEDUP <= ci[1]


# The pipelining channel describes the stream only where a wire carries the transfer: over the emulated
# links its median error on the async calls was 0.3-6.5 % (runs m17-m18, 16 cells), on loopback, where the
# "transfer" is the same two cores' reduction work, 7-42 % (and the serial channel's 20-50 %): where
# neither describes the stream the serial channel, the rest of the fits' own, stays.
PIPELINE_FIT = 0.10


# gloo's two worker threads count as two channels where back-to-back calls launched async ran this much faster
# than blocking ones (and the pipelined channel does not describe them)
TWO_CHANNELS_SPEEDUP = 1.3


def speedup_of(streams: list[dict[str, Any]]) -> float:
    """The stream probe's async/blocking speed-up: the median over sizes of blocking over async time per call."""
    return statistics.median(
        statistics.median(r["times_s"]) / statistics.median(r["async_times_s"])
        for r in streams
        if r.get("times_s") and r.get("async_times_s")
    )


def speedup_interval(streams: list[dict[str, Any]], level: float = 0.95, seed: int = 0) -> tuple[float, float] | None:
    """A ``level`` percentile-bootstrap interval of ``speedup_of`` (each size's blocking and async repetitions
    resampled on their own, ``scipy.stats.bootstrap``): how far the probe's own sampling moves the speed-up.
    None where a size kept fewer than 2 repetitions of either; repetitions that never vary give the point
    itself. Over four micro-DLRM calibrations on this VM's loopback within 15 minutes the speed-up ran
    x1.20-1.35 (2026-11-27): the channel count it decides flipped between them (BENCHMARKS.md, "Eighth
    session")."""
    from realrun.stats import bootstrap_interval

    data = []
    for r in streams:
        b, a = r.get("times_s") or (), r.get("async_times_s") or ()
        if b and a:
            if len(b) < 2 or len(a) < 2:
                return None
            data += [list(map(float, b)), list(map(float, a))]
    if not data:
        return None

    def stat(*xs: Any) -> float:
        return statistics.median(statistics.median(xs[i]) / statistics.median(xs[i + 1]) for i in range(0, len(xs), 2))

    return bootstrap_interval(data, stat, level, seed)  # None: NaN times


def stream_models(r: dict[str, Any], o_s: float, w_bytes_per_s: float) -> tuple[float, float, float, int] | None:
    """One stream-probe record (one size): ``(measured, serial, pipelined, k)``, the median async call (``k``
    launched at once, then waited for) and what each channel model predicts a call of it takes: served one after
    another ``o + n/w``; pipelined ``(o + n/w + (k - 1) max(o, n/w)) / k``. None where it has no async calls."""
    a, n = r.get("async_times_s"), r.get("msg_bytes")
    if not a or not n:
        return None
    meas = statistics.median(a)
    if not meas > 0:
        return None
    k = max(1, int(r.get("iters") or len(a)) // len(a))
    x = n / w_bytes_per_s
    return meas, o_s + x, (o_s + x + (k - 1) * max(o_s, x)) / k, k


def stream_pipelined(streams: list[dict[str, Any]], o_s: float, w_bytes_per_s: float) -> bool:
    """Whether one channel's queued calls overlap: the model whose prediction of the stream probe's async
    calls (``k`` launched at once, then waited for; ``async_times_s`` per call) is closer, in the median
    over sizes of ``|log(predicted / measured)|``. Served one after another, ``k`` calls take ``k (o +
    n/w)``; pipelined (``CostModel.pipelined``: a call's hand-off runs while the call before transfers),
    ``o + n/w + (k - 1) max(o, n/w)``; pipelined only where that is also within ``PIPELINE_FIT`` (10 %).

    A DDP step launches its buckets the async way. Over an emulated 1000 Mbit/s link 0.25 MiB calls took
    2.18 ms a call launched at once, the wire time (2.20 ms), and 3.6-3.8 ms blocking; the serial
    channel charged every bucket its ``o`` (run m18: 0.25 MiB rows 7-24 % long over 1000 Mbit/s)."""
    e_serial, e_pipe = [], []
    for r in streams:
        models = stream_models(r, o_s, w_bytes_per_s)
        if models is None:
            continue
        meas, serial, piped, _ = models
        e_serial.append(abs(math.log(serial / meas)))
        e_pipe.append(abs(math.log(piped / meas)))
    if not e_pipe:
        return False
    pipe = statistics.median(e_pipe)
    return pipe < PIPELINE_FIT and pipe < statistics.median(e_serial)


def fit_network(
    records: list[dict[str, Any]], backend: str, world_size: int, link_mbit: float | None, say: Callable[[str], None]
) -> NetworkFit:
    """Fit ``o`` and ``w`` from one calibration's records (``kind`` all-reduce with ``impl`` native and
    stream, and broadcast) at ``world_size``: the same fits whether the records were measured just now or
    read back from a file (``refit``)."""
    link = link_mbit if link_mbit else None
    ar = [r for r in records if r.get("kind") == "allreduce" and r.get("world_size") == world_size]
    typical = fit_linear(ar, world_size=world_size, link_mbit=link)
    say(
        f"all-reduce fit of medians (typical call): o = {typical.o_us:.1f} us, w = {typical.w_gbps:.4g} GB/s, "
        f"rel. RMS {typical.rel_rms * 100:.1f}%"
    )
    # the simulator sums many calls per step: it takes the expected call time (fit of means)
    fit = fit_linear(ar, world_size=world_size, link_mbit=link, statistic="mean")
    say(
        f"all-reduce fit of means (expected call): o = {fit.o_us:.1f} us, w = {fit.w_gbps:.4g} GB/s "
        f"({fit.w_gbps * 8e3:.0f} Mbit/s), rel. RMS {fit.rel_rms * 100:.1f}%"
    )
    # broadcasts (the sharded optimizer's parameter broadcasts) get their own o and w
    bc = [
        dict(r, kind="allreduce") for r in records if r.get("kind") == "broadcast" and r.get("world_size") == world_size
    ]
    bfit = fit_linear(bc, impl="broadcast", world_size=world_size, link_mbit=link, statistic="mean") if bc else None
    if bfit is not None:
        say(f"broadcast fit: o = {bfit.o_us:.1f} us, w = {bfit.w_gbps:.4g} GB/s, rel. RMS {bfit.rel_rms * 100:.1f}%")
    streams = [r for r in ar if r.get("impl") == "stream"]
    sfit = fit_linear(streams, impl="stream", world_size=world_size, link_mbit=link, statistic="mean")
    speedup = speedup_of(streams)
    speedup_ci = speedup_interval(streams) if backend == "gloo" else None  # one NCCL stream: nothing to decide
    # w from the sizes where the transfer dominates (the rate a step's large buckets pay), fitted to their median
    # calls: the probe times few of them (5-8 at 4-32 MiB over 200 Mbit/s) and one stalled call in five moves a
    # mean by 4-7 % (m41's micro-DLRM over 1000 Mbit/s: w 115.6 MB/s from means, 119.5 from medians, the
    # other cells there 118-121 either way). Replayed over the 32 stored link cells of m32, m35, m39 and m41
    # (benchmarks/replay_matrix.sh; BENCHMARKS.md, "Fifteenth session"): median |error| 1.91 -> 1.70 % on
    # average, both error goals in 26 cells (24 from means); 11 cells moved the other way, at most +0.9 points.
    bw = fit_bandwidth(ar, fit, world_size=world_size, link_mbit=link, statistic="median")
    # One pipelined channel where it describes the async calls (within PIPELINE_FIT): the speed-up of async
    # over blocking calls is then the hand-offs hidden behind transfers, not a second channel. Else gloo's two
    # threads count as two channels from x1.3. Over the 108 stored link calibrations the speed-up ran x1.00-1.41;
    # the three from x1.3 up had pipelined streams: run m27's gpt over 1000 Mbit/s at x1.31, where two channels
    # put `individual` 10.2 % short (2.0 % with one pipelined channel, as the link calibrations under x1.3 had).
    pipelined = stream_pipelined(streams, sfit.o_s, (bw or fit).w_bytes_per_s)
    channels = 2 if backend == "gloo" and speedup >= TWO_CHANNELS_SPEEDUP and not pipelined else 1
    ci = f" (95 % CI x{speedup_ci[0]:.2f}-{speedup_ci[1]:.2f})" if speedup_ci else ""
    say(
        f"streams: o = {sfit.o_us:.1f} us per consecutive call; async/blocking speed-up x{speedup:.2f}{ci} "
        f"-> {channels} channel(s) in the model"
        + (
            "; calls launched back to back overlap the hand-off with the transfer before (pipelined)"
            if pipelined
            else ""
        )
    )
    if bw is not None:
        mib = ", ".join(f"{n / MIB:g}" for n in bw.sizes_bytes)
        say(
            f"bandwidth from the transfer-dominated sizes ({mib} MiB, median calls): w = {bw.w_gbps:.4g} GB/s "
            f"({bw.w_gbps * 8e3:.0f} Mbit/s; all sizes: {fit.w_gbps * 8e3:.0f} Mbit/s)"
        )
    w_from = f"w from the {len(bw.sizes_bytes)} transfer-dominated sizes" if bw else "w from the sweep"
    used = with_terms(
        fit,
        ar,
        sfit,
        bw or fit,
        f"o from back-to-back calls (stream fit); {w_from}",
        world_size=world_size,
        link_mbit=link,
        statistic="mean",
    )
    modes = fit_call_modes(ar, world_size)
    if modes is not None:
        say(call_modes_line(modes, used.o_s))
    return NetworkFit(typical, used, bfit, sfit, bw, speedup, channels, pipelined, speedup_ci, modes)


def assemble_params(
    backend: str,
    world_size: int,
    net: NetworkFit,
    contention: dict[str, Any],
    copy_bytes_per_s: float,
    profile: dict[str, Any],
    env: dict[str, Any],
    model: str,
    batch_size: int,
    link_mbit: float | None,
    records: str | Path,
    cold_call: dict[str, Any] | None = None,
    broadcast_switch: dict[str, Any] | None = None,
    scale_bytes_per_s: float | None = None,
) -> Params:
    """The params file's content from the fits and probes of one calibration (before the in-step probe);
    ``cold_call``: the cold-call probe's fit (``probes.fit_cold_call``), ``broadcast_switch`` the
    broadcast-switch probe's (``probes.fit_broadcast_switch``), ``scale_bytes_per_s`` the division
    pass's rate (``probes.in_step_scale_rate``), where they ran."""
    return Params(
        backend=backend,
        world_size=world_size,
        linear=net.linear,
        link_mbit=link_mbit,
        contention_c=contention["contention_c"],
        comm_contention_c=contention["comm_contention_c"],
        copy_bytes_per_s=copy_bytes_per_s,
        compute_profile=profile,
        broadcast=net.broadcast,
        channels=net.channels,
        env=env,
        source_records=(str(Path(records).resolve()),),
        probes={
            "contention": dict(contention),
            "model": model,
            "batch_size": batch_size,
            "allreduce_median_fit": net.typical.to_dict(),
            "stream_fit": net.stream.to_dict(),
            "bandwidth_fit": net.bandwidth.to_dict() if net.bandwidth is not None else None,
            "async_speedup": net.speedup,
            "async_speedup_ci": list(net.speedup_ci) if net.speedup_ci else None,
            "channels_marginal": net.channels_marginal,
            "pipelined": net.pipelined,
            **({"cold_call": cold_call} if cold_call is not None else {}),
            **({"broadcast_switch": broadcast_switch} if broadcast_switch is not None else {}),
            **({"scale": {"scale_bytes_per_s": scale_bytes_per_s}} if scale_bytes_per_s else {}),
            **({"call_modes": net.call_modes} if net.call_modes is not None else {}),
        },
    )


def with_step_probe(params: Params, fit: dict[str, Any]) -> Params:
    """``params`` with the in-step probe's contention factors in place of the contention probe's, and its
    channel model where it kept the other one than the stream probe's (``step_probe.channel_choice``)."""
    probes = {**params.probes, "in_step": fit, "contention_source": "in-step probe"}
    channels = params.channels
    ch = fit.get("channel")
    if ch and ch.get("taken") == "other":
        channels = int(ch["channels"])
        probes.update(pipelined=bool(ch["pipelined"]), channel_source="in-step probe")
    return replace(
        params,
        contention_c=fit["contention_c"],
        comm_contention_c=fit["comm_contention_c"],
        channels=channels,
        probes=probes,
    )


def other_channel(params: Params) -> CostModel:
    """``params``' cost model with the channel model the stream probe did not choose, for the in-step probe to
    weigh against it: one pipelined channel where the stream probe found the calls served one after another
    (on one channel or gloo's two), else one serial channel."""
    return params.cost_model().with_overrides(channels=1, pipelined=not params.pipelined)


CHANNELS_MATTER = 0.05  # the other channel count moves `individual`'s predicted step this much or more


def with_channel_check(params: Params, say: Callable[[str], None]) -> Params:
    """Where the stream probe left gloo's channel count open (``NetworkFit.channels_marginal``): the step of
    ``individual`` (a call per gradient, the most calls a step) predicted with one channel (pipelined where
    calibration made it so) and with two, kept in ``probes["channels_check"]``, and a warning where they are
    ``CHANNELS_MATTER`` apart. Both keep the contention terms the in-step probe fitted under the count taken
    (as ``predict --channels`` does); refitted under each count the gap is smaller (m26's micro-DLRM: 25.8 vs
    16.5 ms here, 24.9 vs 17.9 refitted). On this VM's loopback most calibrations leave the count open (86 of
    88 stored ones, 25 of 108 over emulated links: ``benchmarks/results/channels_bracket/marginal_counts.py``);
    micro-DLRM's `individual` moves 24-52 % with it (refitted under each), gpt's 5-8 % where calibrated at
    two, 0-3 % at one (BENCHMARKS.md, "Eighth session")."""
    from simulator.predict import predict
    from simulator.strategies import StrategySpec

    if not params.probes.get("channels_marginal") or params.backend != "gloo":
        return params
    prof, cost = params.profile(), params.cost_model()
    one, two = (
        predict(
            prof,
            cost.with_overrides(channels=n, pipelined=params.pipelined and n == 1),
            StrategySpec("individual"),
            params.world_size,
        ).step_time_s
        for n in (1, 2)
    )
    check = {"individual_one_channel_s": one, "individual_two_channels_s": two}
    probes = {**params.probes, "channels_check": check}
    if warning := channel_warning(probes):
        say(warning)
    return replace(params, probes=probes)


def channel_warning(probes: dict[str, Any]) -> str | None:
    """The warning of ``with_channel_check`` from a calibration's probes (None where the count was settled,
    not checked, or the check found the two counts within ``CHANNELS_MATTER``): calibration says it as it
    goes, ``validate`` again in its summary."""
    check = probes.get("channels_check")
    if not probes.get("channels_marginal") or not isinstance(check, dict):
        return None
    one, two = check.get("individual_one_channel_s"), check.get("individual_two_channels_s")
    if not (isinstance(one, (int, float)) and isinstance(two, (int, float)) and one > 0):
        return None
    if abs(two / one - 1) < CHANNELS_MATTER:
        return None
    ci = probes.get("async_speedup_ci") or (math.nan, math.nan)
    piped = "pipelined " if probes.get("pipelined") else ""
    return (
        f"warning: the channel count is not settled: the async/blocking speed-up's 95 % interval "
        f"(x{ci[0]:.2f}-{ci[1]:.2f}) holds x{TWO_CHANNELS_SPEEDUP:g}, where gloo's two threads count as two "
        f"channels, and the count matters here: `individual` is predicted {one * 1e3:.1f} ms with one "
        f"{piped}channel, {two * 1e3:.1f} ms with two ({(two / one - 1) * 100:+.0f} %); configurations with many "
        f"calls a step move with it (compare `ddpsim predict --params P --strategy individual --channels 1` "
        f"and `--channels 2`)"
    )


def broadcast_switch_line(fit: dict[str, Any]) -> str:
    """One progress line for ``probes.fit_broadcast_switch``'s result."""
    calls, mib = fit["calls"], fit["nbytes"] / MIB
    head = (
        f"broadcast switches: {calls} broadcasts of {mib:g} MiB from one rank {fit['same_median_s'] * 1e3:.2f} ms, "
        f"from alternating ranks {fit['alternating_median_s'] * 1e3:.2f} ms ({fit['reps']} times each): "
    )
    if "difference_s" not in fit:
        return head + "too few repetitions: no credit"
    lo, hi = fit["ci95_s"]
    ci = f"{fit['difference_s'] * 1e3:+.3f} ms a switch (95 % {lo * 1e3:+.3f}..{hi * 1e3:+.3f})"
    return head + (
        f"{ci}: kept, each direction's idle time earns up to {fit['broadcast_switch_credit_s'] * 1e3:.3f} ms "
        "of free transfer"
        if fit["identified"]
        else f"{ci}: not kept (no credit)"
    )


def cold_call_line(fit: dict[str, Any]) -> str:
    extra = ", ".join(f"{g * 1e3:g} ms {e * 1e3:+.2f} ms" for g, e in zip(fit["gaps_s"], fit["extra_s"]))
    head = f"cold calls: after compute of {extra}, against one after a call ({fit['after_call_s'] * 1e3:.2f} ms): "
    if fit.get("fit_error"):
        return head + f"not fitted ({fit['fit_error']}): no cold-call cost"
    if not fit["cold_call_s"]:
        return head + "no cold-call cost"
    bound = f" (at its bound: {', '.join(fit['at_bound'])})" if fit.get("at_bound") else ""
    return (
        head + f"fitted {fit['cold_call_s'] * 1e3:.2f} ms x (1 - exp(-idle / {fit['cold_tau_s'] * 1e3:.1f} ms)){bound}"
    )


def calibrate_on_pool(pool: Any, spec: CalibrateSpec, say: Callable[[str], None]) -> Params:
    from realrun.profile_grads import profile_grads
    from realrun.records import RecordWriter, make_record
    from realrun.workloads import load_workload

    from .probes import (
        COLD_GAPS_S,
        broadcast_switch_probe,
        cold_call_probe,
        contention_probe,
        copy_in_step_probe,
        effective_copy_rate,
        fit_broadcast_switch,
        fit_cold_call,
        in_step_copy_rate,
        in_step_scale_rate,
        memcpy_probe,
        stream_probe,
    )

    wl = load_workload(spec.model)
    bs = spec.batch_size or wl.default_batch_size
    sizes = spec.sizes_bytes or default_sizes(spec.link_mbit)
    env = pool_env(pool, spec)
    if getattr(pool, "omp_note", None):
        say(pool.omp_note)
    with RecordWriter(spec.records) as writer:
        recs = measure_allreduce(pool, sizes, spec.link_mbit, writer, say)
        # consecutive calls, as DDP issues them: the per-call overhead the simulator uses, and
        # whether the backend's concurrent calls really overlap
        stream_sizes = [n for n in sizes if n <= 4 * MIB] or list(sizes[:3])
        say(f"all-reduce streams: {len(stream_sizes)} sizes x 16 calls back to back, blocking and async")
        streams = pool.run(stream_probe, stream_sizes)
        stream_recs = stream_records(streams, pool.backend, pool.world_size, spec.link_mbit, env)
        for r in stream_recs:
            writer.write(r)
        net = fit_network(recs + stream_recs, pool.backend, pool.world_size, spec.link_mbit, say)
        # ... and a call that follows compute instead: its threads wake first
        cold = None
        if spec.cold_call_reps > 0:
            gaps = ", ".join(f"{g * 1e3:g}" for g in COLD_GAPS_S)
            say(
                f"cold calls: one small all-reduce after {gaps} ms of compute, against one after a call "
                f"({spec.cold_call_reps} times each)"
            )
            cold_rank = pool.run(cold_call_probe, reps=spec.cold_call_reps)
            writer.write(make_record("cold_call", env, per_rank=cold_rank))  # kept before it is fitted
            cold = fit_cold_call(cold_rank)
            say(cold_call_line(cold))
        # the sharded optimizer's broadcasts change source: does a link earn credit while one direction idles?
        switch = None
        if spec.switch_reps > 0 and pool.world_size >= 2:
            sw_rank = pool.run(broadcast_switch_probe, reps=spec.switch_reps)
            writer.write(make_record("broadcast_switch", env, per_rank=sw_rank))  # kept before it is fitted
            switch = fit_broadcast_switch(sw_rank)
            say(broadcast_switch_line(switch))

        mem = pool.run(memcpy_probe)
        by_size = ", ".join(
            f"{n / MIB:g} MiB {statistics.median(r['bytes_per_s'][k] for r in mem) / 1e9:.1f}"
            for k, n in enumerate(mem[0]["sizes_bytes"])
        )
        say(f"memory copy (GB/s per rank, all ranks copying, source just written): {by_size}")

        say(f"profiling {spec.model} (batch {bs}, {spec.profile_steps} steps, {pool.world_size} ranks computing)")
        prof = profile_grads(pool, spec.model, batch_size=bs, steps=spec.profile_steps, optimizer=spec.optimizer)
        writer.write(make_record("profile", env, model=spec.model, batch_size=bs, profile=prof.to_dict()))
        # the copy rate over this model's gradients, each copied on its own (into its bucket, and back)
        warm_bps = effective_copy_rate(mem, [p.nbytes for p in prof.params if p.requires_grad])
        writer.write(make_record("memcpy", env, per_rank=mem, copy_bytes_per_s=warm_bps, model=spec.model))
        # ... and as they happen in a step: the rate the simulator uses where it was measured
        cps = pool.run(copy_in_step_probe, spec.model, bs)
        step_bps = in_step_copy_rate(cps)
        scale_bps = in_step_scale_rate(cps)
        writer.write(make_record("copy_in_step", env, model=spec.model, batch_size=bs, per_rank=cps))
        copy_bps = step_bps or warm_bps
        say(
            f"gradient copies over {spec.model}'s gradients: "
            + (
                f"{step_bps / 1e9:.2f} GB/s per rank in the step (into bucket slots as backward produces them, "
                f"and back), "
                if step_bps
                else "none in the step (no dense gradient copied), "
            )
            + f"{warm_bps / 1e9:.2f} GB/s from just-written blocks"
            + (f"; dividing them in place {scale_bps / 1e9:.2f} GB/s" if scale_bps else "")
        )
        say(
            f"profile: forward {prof.forward_s * 1e3:.2f} ms, backward {prof.backward_s * 1e3:.2f} ms, "
            f"optimizer {prof.optimizer_s * 1e3:.2f} ms, {len(prof.params)} params, {prof.total_grad_bytes / MIB:.2f} MiB"
        )

        say("contention: forward+backward alone and with all-reduces in flight")
        comm_bytes = min(4 * MIB, max(sizes))
        probe = pool.run(contention_probe, spec.model, bs, spec.contention_steps, comm_bytes)
        fitted = fit_probe(probe)
        writer.write(make_record("contention", env, model=spec.model, batch_size=bs, per_rank=probe, **fitted))
        say(
            f"contention: compute x{1 + fitted['contention_c']:.2f} while communicating, "
            f"communication x{1 + fitted['comm_contention_c']:.2f} while computing"
        )
        params = assemble_params(
            pool.backend,
            pool.world_size,
            net,
            fitted,
            copy_bps,
            prof.to_dict(),
            env,
            spec.model,
            bs,
            spec.link_mbit,
            spec.records,
            cold,
            switch,
            scale_bps,
        )
        if spec.step_probe_steps > 0:
            from .step_probe import (
                probe_bucket_mb,
                probe_fine_mb,
                probe_one_bucket_mb,
                probe_steps,
                run_step_probe,
                summary_line,
            )

            mb = probe_bucket_mb(prof.total_grad_bytes)
            one_mb = probe_one_bucket_mb(prof.total_grad_bytes)
            n, n_f, n_c = (
                probe_steps(
                    prof, params.cost_model(), pool.world_size, cap, spec.step_probe_steps, spec.step_probe_seconds
                )
                for cap in (mb, probe_fine_mb(mb), one_mb)
            )
            if not spec.step_probe_check:
                n_c = 0
            say(
                f"in-step probe: torch DDP at {mb:g} MiB and at {probe_fine_mb(mb) * 1024:g} KiB (a call per "
                f"gradient), {n} and {n_f} steps with per-bucket timelines"
                + (f"; then at {one_mb:g} MiB (one bucket, a check the fit leaves out), {n_c} steps" if n_c else "")
                + (
                    f" (more than {spec.step_probe_steps} where that many, as predicted, would not fill "
                    f"{spec.step_probe_seconds:g} s)"
                    if max(n, n_f, n_c) > spec.step_probe_steps
                    else ""
                )
            )
            sp = run_step_probe(
                pool,
                spec.model,
                bs,
                prof,
                params.cost_model(),
                n,
                steps_fine=n_f,
                steps_check=n_c or None,
                other_channel=other_channel(params),
            )
            sfit_step = sp.fit
            writer.write(
                make_record(
                    "step_probe", env, model=spec.model, batch_size=bs, timeline=sp.record.to_dict(), fit=sfit_step
                )
            )
            for kind, r in (("step_probe_fine", sp.fine_record), ("step_probe_check", sp.check_record)):
                if r is not None:
                    writer.write(make_record(kind, env, model=spec.model, batch_size=bs, timeline=r.to_dict()))
            say(summary_line(sfit_step))
            params = with_step_probe(params, sfit_step)
        if spec.sharded_steps > 0 and pool.world_size >= 2:
            params = with_sharded_probe(pool, params, spec, bs, writer, env, say)
    return with_channel_check(params, say)


def with_sharded_probe(
    pool: Any, params: Params, spec: CalibrateSpec, bs: int, writer: Any, env: Any, say: Callable[[str], None]
) -> Params:
    """``params`` with the sharded-step probe's fit (``calibration.sharded_probe``) in ``probes["sharded_step"]``:
    torch DDP and sharded at one bucket, interleaved; the record written before it is fitted. Run last, against
    the other terms as fitted."""
    from realrun.records import make_record
    from simulator.predict import predict
    from simulator.strategies import StrategySpec

    from .sharded_probe import check_configs, measure_sharded_probe, probe_steps
    from .step_probe import probe_one_bucket_mb
    from .validate import auto_block

    prof, cost = params.profile(), params.cost_model()
    mb = probe_one_bucket_mb(prof.total_grad_bytes)
    est = predict(prof, cost, StrategySpec("sharded", bucket_mb=mb), pool.world_size).step_time_s
    block = auto_block(est)
    n = probe_steps(est, spec.sharded_steps, spec.sharded_seconds, block)
    checks = check_configs(prof.total_grad_bytes)
    say(
        f"sharded step and step check: torch DDP and the sharded optimizer at {mb:g} MiB (one bucket)"
        + "".join(f", {st} at {c:g} MiB" for st, c in checks)
        + f", beside compute-only steps, {n} steps each, "
        + ("interleaved in turns of {block}" if block > 1 else "interleaved step by step").format(block=block)
    )
    probe = measure_sharded_probe(pool, spec.model, bs, mb, n, block, optimizer=spec.optimizer, checks=checks)
    writer.write(make_record("sharded_probe", env, model=spec.model, batch_size=bs, probe=probe))
    return with_sharded_fit(params, probe, pool.world_size, say)


def with_sharded_fit(params: Params, probe: Any, world_size: int, say: Callable[[str], None]) -> Params:
    """``params`` with the sharded-step probe's record payload ``probe`` fitted against their terms
    (``sharded_probe.fit_sharded_probe``) in ``probes["sharded_step"]``, its line said; as calibrated and refitted."""
    from .sharded_probe import fit_sharded_probe, sharded_probe_line, step_check_line

    fit = fit_sharded_probe(
        probe, params.profile(), params.cost_model(), world_size, unc=check_uncertainty(params, probe, world_size)
    )
    say(sharded_probe_line(fit))
    if line := step_check_line(fit):
        say(line)
    return replace(params, probes={**params.probes, "sharded_step": fit})


def check_uncertainty(params: Params, probe: Any, world_size: int) -> Any:
    """The inputs' errors the step check's predictions carry (``sharded_probe.inputs_log_sd``): ``params``' own, the
    spread of the probe's compute-only steps, no model error (the check is what measures it) and none of an earlier
    sharded-step fit's; ``None`` for a record that is not one (``fit_sharded_probe`` says so)."""
    try:
        comp = [float(x) for x in probe.get("compute_step_times_s") or ()]
    except (AttributeError, TypeError, ValueError):
        return None
    probes = {k: v for k, v in (params.probes or {}).items() if k != "sharded_step"}
    unc = replace(params, probes=probes).uncertainty(comp, world_size=world_size)
    return replace(unc, model_log_sd=0.0)


def calibrate(spec: CalibrateSpec, progress: bool = True) -> Params:
    say = Progress(progress)
    ps = spec.world_sizes or (spec.world_size,)
    t_start = time.time()
    say(
        f"{spec.world_size} {spec.backend} ranks"
        + (f" over emulated {spec.link_mbit:g} Mbit/s links" if spec.link_mbit else " on loopback")
        + (f" (then the all-reduce and the in-step probe at p = {', '.join(map(str, ps[1:]))})" if len(ps) > 1 else "")
    )
    with open_pool(spec.world_size, spec.backend, spec.link_mbit, spec.timeout_s) as pool:
        params = calibrate_on_pool(pool, spec, say)
    if len(ps) > 1:
        params = calibrate_world_sizes(params, spec, ps[1:], say, since_unix_s=t_start)
    return params


# ---- across world sizes ---------------------------------------------------------------
def calibrate_world_sizes(
    params: Params, spec: CalibrateSpec, more: tuple[int, ...], say: Callable[[str], None], since_unix_s: float
) -> Params:
    """The all-reduce sweep at each of the ``more`` world sizes (a fresh pool each, same link), then ONE
    model across all of them (``fit_across_world_sizes``) stored as ``params.abg``; and, with the in-step
    probe on, the probe at each of them too (how compute and communication slow each other as ranks per
    host grow), fitted against the cross-p network and stored per p (``probes["in_step_by_p"]``;
    ``Params.contention_at``). The profile, streams and copies stay those measured at the smallest p."""
    from realrun.records import RecordWriter, make_record, read_records

    from .step_probe import measure_step_probe, probe_bucket_mb, probe_steps

    sizes = spec.sizes_bytes or default_sizes(spec.link_mbit)
    prof = params.profile()
    bucket = probe_bucket_mb(prof.total_grad_bytes)
    bs = int((params.probes or {}).get("batch_size") or spec.batch_size or prof.samples_per_step or 1)
    probes: list[Any] = []  # TimelineRecord of each larger p
    for p in more:
        say(
            f"{p} {spec.backend} ranks"
            + (f" over emulated {spec.link_mbit:g} Mbit/s links" if spec.link_mbit else " on loopback")
        )
        with open_pool(p, spec.backend, spec.link_mbit, spec.timeout_s) as pool, RecordWriter(spec.records) as writer:
            measure_allreduce(pool, sizes, spec.link_mbit, writer, say, impls=("native",))
            if spec.step_probe_steps > 0:
                n = probe_steps(
                    prof, params.cost_model(world_size=p), p, bucket, spec.step_probe_steps, spec.step_probe_seconds
                )
                say(f"in-step probe at p = {p}: torch DDP at {bucket:g} MiB, {n} steps")
                rec = measure_step_probe(pool, spec.model, bs, bucket, n)
                writer.write(
                    make_record(
                        "step_probe", pool_env(pool, spec), model=spec.model, batch_size=bs, timeline=rec.to_dict()
                    )
                )
                probes.append(rec)
    recs = [
        r
        for r in read_records(spec.records)
        if r.get("kind") == "allreduce" and float(r.get("time_unix_s", 0.0)) >= since_unix_s
    ]
    abg = fit_across_world_sizes(recs, params, spec.link_mbit)
    lin = {p: abg.linear_at(p) for p in abg.world_sizes}
    say(
        f"across p = {', '.join(map(str, abg.world_sizes))} ({abg.algorithm}): o = {abg.o_s * 1e6:.1f} us per call, "
        f"alpha = {abg.alpha_s * 1e6:.1f} us per step, link {8e-6 / abg.beta_s_per_byte:.4g} Mbit/s; "
        + ", ".join(f"p={p}: t0 {f.o_us:.0f} us, w {f.w_gbps * 8e3:.0f} Mbit/s" for p, f in lin.items())
        + f"; rel. RMS {abg.rel_rms * 100:.1f}%"
    )
    return with_step_probes_by_p(replace(params, abg=abg), probes, say)


def with_step_probes_by_p(params: Params, records: list[Any], say: Callable[[str], None]) -> Params:
    """``params`` (with its cross-p network) and the in-step probes measured at larger world sizes
    (``TimelineRecord``s or the dicts read back), each fitted at its own p and stored per p
    (``probes["in_step_by_p"]``); unchanged when there are none."""
    from realrun.step_record import timeline_mapping

    from .step_probe import fit_step_probe, summary_line

    prof, cost = params.profile(), params.cost_model()
    by_p = {}
    for rec in records:
        p = int(timeline_mapping(rec)["world_size"])
        by_p[str(p)] = fit_step_probe(rec, prof, cost)
        say(f"p = {p}: " + summary_line(by_p[str(p)]))
    return replace(params, probes={**params.probes, "in_step_by_p": by_p}) if by_p else params


def pool_env(pool: Any, spec: CalibrateSpec) -> dict[str, Any]:
    from realrun.records import environment

    return environment(pool.backend, pool.world_size, link_mbit=spec.link_mbit)


def fit_across_world_sizes(records: list[dict[str, Any]], params: Params, link_mbit: float | None) -> ABGFit:
    """One all-reduce model over every world size measured: gloo's ring (``GLOO_ALGORITHM_SOURCE``) as a
    per-call constant ``o``, ``alpha`` per ring step and the link's bandwidth, fitted to the mean call of
    each (p, size) (``calibrate``'s ``w`` at one p: the median calls of the transfer-dominated sizes; the cross-p
    fit has not been replayed against stored runs with medians).

    The per-call overhead the simulator uses at the smallest p comes from calls issued back to back (the
    stream probe, ``params.linear.o_s``), which pay a hand-off an isolated call does not: that
    difference is taken as per-call (it does not grow with p) and added to ``o``.
    """
    from simulator.network import DEFAULT_ALGORITHM

    algorithm = DEFAULT_ALGORITHM.get(params.backend, "ring")
    abg = fit_abg(records, algorithm, link_mbit=link_mbit if link_mbit else None, statistic="mean")
    p0 = params.world_size
    shift = params.linear.o_s - abg.linear_at(p0).o_s
    o = max(0.0, abg.o_s + shift)
    lo, hi = abg.o_ci_s
    note = f"o shifted by {shift * 1e6:+.1f} us so the zero-byte time at p = {p0} is the back-to-back stream fit's" + (
        " (clipped at 0)" if abg.o_s + shift < 0 else ""
    )
    return replace(
        abg,
        o_s=o,
        o_ci_s=(max(0.0, lo + shift), max(0.0, hi + shift)),
        note="; ".join(x for x in (abg.note, note) if x),
    )
