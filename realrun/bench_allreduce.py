"""``ddpsim bench-allreduce``: all-reduce (and broadcast) micro-benchmark, nccl-tests style.

For every world size, message size and implementation: ``warmup`` untimed
calls, then ``iters`` timed calls, each after a barrier, timed per rank with
``perf_counter`` (CUDA synchronized on GPU); the per-rank lists are gathered
with ``all_gather_object`` and the time of an iteration is its slowest rank's.
One JSONL record per point is appended as soon as it is taken. With ``--rounds R``
the sizes are swept R times (as given, then reversed, ...), each time with an
even share of a point's calls after ``warmup`` untimed ones (the record's
``warmup`` is per round); a point's record, holding all its calls, is written
as its last round ends (``rounds``: the rounds that gave it calls; ``complete``
false on a point a failure cut short).

Time: the **median of separated calls** (a barrier before each), not the mean
of back-to-back iterations that nccl-tests reports (``mean_s`` is recorded
too). Correctness, as nccl-tests' ``#wrong`` column: after the timed calls each
rank fills its buffer with ``rank + 1``, runs the collective once more and
counts the elements that differ from the expected result (all-reduce: the sum
``p(p+1)/2``; broadcast: rank 0's ``1``); ``wrong`` is that count over all
ranks (and rounds), and any wrong value fails the command.

Definitions follow nccl-tests (``doc/PERFORMANCE.md``): ``algbw = msg_bytes /
time``; all-reduce ``busbw = algbw * 2(p-1)/p``; broadcast ``busbw = algbw``;
GB/s means 1e9 bytes/s (fields ``*_gbps``). Sizes follow nccl-tests too:
``1K`` = ``1KB`` = ``1KiB`` = 1024 bytes (powers of two).

Implementations: ``native`` (``dist.all_reduce``), ``ring`` and ``naive``
(``realrun.collectives``, by hand over send/recv), ``broadcast``
(``dist.broadcast`` from rank 0; recorded with kind ``"broadcast"`` so fits
of ``"allreduce"`` records never mix it in).

This module imports torch only inside the functions that run on ranks.
"""

from __future__ import annotations

import functools
import re
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.jsonio import from_fields, to_fields
from simulator.units import GIB, KIB, MIB

from .cpushare import add_threads, thread_delta, thread_times
from .records import RecordWriter, environment, make_record
from .stats import max_over_ranks, summarize

IMPLS = ("native", "ring", "naive", "broadcast")
DTYPES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
DEFAULT_SIZES = "1M:1G"
MAX_MSG_BYTES = 8 << 30
MAX_WORLD_SIZE = 64
_UNITS = {"": 1, "K": KIB, "M": MIB, "G": GIB}
_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)([KMG]?)(?:I?B)?$", re.IGNORECASE)
LOOPBACK_BYTES_PER_S = 1.5e9  # rough gloo algbw on this kind of box (DESIGN.md), for iteration counts only
TIME_BUDGET_S = 1.5  # target timed seconds per point when --iters is not given


def parse_size(text: str) -> int:
    """``"1KB"`` -> 1024: a byte count with an optional K/M/G suffix (powers of two, as nccl-tests)."""
    m = _SIZE_RE.match(text.strip().replace(" ", ""))
    if not m:
        raise ValueError(f"bad message size {text!r}: use a byte count like 4096, 1K, 1KB, 16MB, 1GiB (K = 1024)")
    value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if value != int(value):
        raise ValueError(f"message size {text!r} is not a whole number of bytes")
    return int(value)


def parse_sizes(text: str) -> tuple[int, ...]:
    """A comma list of sizes; an item ``A:B`` is A, 2A, 4A ... up to B (``A:B:F`` steps by factor F)."""
    sizes: list[int] = []
    for item in text.split(","):
        if not item.strip():
            raise ValueError(f"empty item in message sizes {text!r}")
        parts = item.split(":")
        if len(parts) == 1:
            sizes.append(parse_size(parts[0]))
            continue
        if len(parts) > 3:
            raise ValueError(f"bad size range {item!r}: use START:END or START:END:FACTOR")
        lo, hi = parse_size(parts[0]), parse_size(parts[1])
        factor = int(parts[2]) if len(parts) == 3 and parts[2].strip().isdigit() else (2 if len(parts) == 2 else 0)
        if factor < 2:
            raise ValueError(f"bad size range {item!r}: the factor must be an integer >= 2")
        if lo < 1 or hi < lo:
            raise ValueError(f"bad size range {item!r}: need 1 <= START <= END")
        s = lo
        while s <= hi:
            sizes.append(s)
            s *= factor
    for s in sizes:
        if s > MAX_MSG_BYTES:
            raise ValueError(f"message size {s} bytes is above the {MAX_MSG_BYTES >> 30} GiB this benchmark allows")
    return tuple(dict.fromkeys(sizes))


def parse_world_sizes(text: str) -> tuple[int, ...]:
    out = []
    for item in str(text).split(","):
        try:
            n = int(item)
        except ValueError:
            raise ValueError(f"bad world size {item!r}: use integers like 2 or 2,4,6") from None
        if not 2 <= n <= MAX_WORLD_SIZE:
            raise ValueError(f"world size {n} out of range: all-reduce needs 2 to {MAX_WORLD_SIZE} ranks")
        out.append(n)
    return tuple(dict.fromkeys(out))


def parse_impls(text: str) -> tuple[str, ...]:
    impls = tuple(dict.fromkeys(s.strip() for s in text.split(",")))
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        raise ValueError(f"unknown implementation {', '.join(map(repr, bad))}: choose from {', '.join(IMPLS)}")
    return impls


def default_iters(msg_bytes: int, link_mbit: float | None = None) -> tuple[int, int]:
    """(iters, warmup) for one point: about ``TIME_BUDGET_S`` of timed calls, 5 to 200 iterations."""
    est = estimate_call_s(msg_bytes, link_mbit)
    iters = int(min(200, max(5, TIME_BUDGET_S / est)))
    return iters, int(min(10, max(1, iters // 10)))


def estimate_call_s(msg_bytes: int, link_mbit: float | None = None) -> float:
    bw = link_mbit * 1e6 / 8 if link_mbit else LOOPBACK_BYTES_PER_S
    return 5e-4 + msg_bytes / bw


@dataclass(frozen=True)
class AllreduceBenchSpec:
    backend: str = "gloo"
    world_sizes: tuple[int, ...] = (2,)
    sizes_bytes: tuple[int, ...] = field(default_factory=lambda: parse_sizes(DEFAULT_SIZES))
    impls: tuple[str, ...] = ("native",)
    dtype: str = "float32"
    iters: int | None = None  # None: by size (default_iters)
    warmup: int | None = None
    link_mbit: float | None = None
    timeout_s: float = 600.0
    interleave: bool = False  # alternate the implementations call by call
    rounds: int = 1  # sweep the sizes this many times (ascending, descending, ...), each with a share of the calls

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        for s in self.sizes_bytes:
            if s < DTYPES[self.dtype] or s % DTYPES[self.dtype]:
                raise ValueError(
                    f"message size {s} bytes is not a positive multiple of {self.dtype}'s {DTYPES[self.dtype]} bytes"
                )
        if self.iters is not None and self.iters < 1:
            raise ValueError(f"--iters must be >= 1, got {self.iters}")
        if self.warmup is not None and self.warmup < 0:
            raise ValueError(f"--warmup must be >= 0, got {self.warmup}")
        if self.rounds < 1:
            raise ValueError(f"--rounds must be >= 1, got {self.rounds}")
        if self.link_mbit is not None and not self.link_mbit > 0:
            raise ValueError(f"--link-mbit must be a positive rate in Mbit/s, got {self.link_mbit}")

    def schedule(self, msg_bytes: int) -> tuple[int, int]:
        iters, warmup = default_iters(msg_bytes, self.link_mbit)
        return (self.iters if self.iters is not None else iters, self.warmup if self.warmup is not None else warmup)

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AllreduceBenchSpec:
        return from_fields(cls, d, what="all-reduce bench spec")


# ------------------------------------------------------------------ on the ranks
def measure(ctx: Any, impls: tuple[str, ...], count: int, dtype: str, iters: int, warmup: int) -> dict[str, Any]:
    """One message size on every rank, for each of ``impls``; every rank returns all ranks' times.

    With several implementations they alternate call by call (``warmup`` untimed
    calls of each first), so a change of load on a shared machine hits them all
    alike. Returns ``{"per_impl": {impl: per-rank lists of seconds}, "env": ...}``.
    """
    import torch
    import torch.distributed as dist

    from .collectives import naive_allreduce, ring_allreduce

    ops: dict[str, Callable[[Any], Any]] = {
        "native": dist.all_reduce,
        "ring": ring_allreduce,
        "naive": naive_allreduce,
        "broadcast": lambda t: dist.broadcast(t, src=0),
    }
    cuda = ctx.device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    x = torch.zeros(count, dtype=getattr(torch, dtype), device=ctx.device)  # zeros: sums never overflow
    for impl in impls:
        for _ in range(warmup):
            ops[impl](x)
    sync()
    times: dict[str, list[float]] = {impl: [] for impl in impls}
    threads0 = thread_times()
    for _ in range(iters):
        for impl in impls:
            dist.barrier()
            sync()
            t0 = time.perf_counter()
            ops[impl](x)
            sync()
            times[impl].append(time.perf_counter() - t0)
    threads = thread_delta(threads0, thread_times())  # the timed calls' (and their barriers') thread time
    wrong: dict[str, int] = {}
    p = ctx.world_size
    tol = 0.0 if dtype in ("float32", "float64") else 1e-2  # half types round partial sums
    for impl in impls:  # nccl-tests' #wrong: known inputs, the expected result, every element checked
        x.fill_(ctx.rank + 1)
        ops[impl](x)
        sync()
        expected = 1.0 if impl == "broadcast" else p * (p + 1) / 2
        bad = (x.double() - expected).abs() > tol * expected
        wrong[impl] = int(bad.sum().item())
    del x
    gathered: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(gathered, {"times": times, "wrong": wrong, "threads": threads})
    env = environment(ctx.backend, ctx.world_size, threads_per_rank=torch.get_num_threads(), device=ctx.device)
    return {
        "per_impl": {impl: [g["times"][impl] for g in gathered] for impl in impls},
        "wrong": {impl: sum(g["wrong"][impl] for g in gathered) for impl in impls},
        # every rank's threads by name, summed over the ranks, over the iters x len(impls) timed calls (none
        # where a rank could not read them: a sum over fewer ranks would pass for all of them)
        "threads": functools.reduce(add_threads, (g["threads"] for g in gathered), {})
        if all(g["threads"] for g in gathered)
        else {},
        "timed_calls": iters * len(impls),
        "env": env,
    }


# ------------------------------------------------------------------ records and table
def point_record(
    spec: AllreduceBenchSpec,
    impl: str,
    world_size: int,
    msg_bytes: int,
    iters: int,
    warmup: int,
    per_rank_times_s: list[list[float]],
    env: dict[str, Any],
    run_id: str,
    wrong: int | None = None,
) -> dict[str, Any]:
    times_s = max_over_ranks(per_rank_times_s)
    summ = summarize(times_s)
    algbw = msg_bytes / summ.median_s / 1e9
    factor = 1.0 if impl == "broadcast" else 2.0 * (world_size - 1) / world_size
    return make_record(
        "broadcast" if impl == "broadcast" else "allreduce",
        env,
        run_id=run_id,
        backend=spec.backend,
        world_size=world_size,
        impl=impl,
        msg_bytes=msg_bytes,
        count=msg_bytes // DTYPES[spec.dtype],
        dtype=spec.dtype,
        iters=iters,
        warmup=warmup,
        times_s=times_s,
        median_s=summ.median_s,
        p10_s=summ.p10_s,
        p90_s=summ.p90_s,
        mean_s=summ.mean_s,
        min_s=summ.min_s,
        iqr_s=summ.iqr_s,
        algbw_gbps=algbw,
        busbw_gbps=algbw * factor,
        link_mbit=spec.link_mbit,
        interleaved=spec.interleave and len(spec.impls) > 1,
        time_stat="median of separated calls (barrier before each)",
        wrong=wrong,
    )


def format_table(records: list[dict[str, Any]]) -> str:
    """nccl-tests style: one block per (backend, world size, link), one row per point.

    Blocks over an emulated link add ``algbw(Mbit/s)``, comparable with the link rate.
    """
    lines = []
    key = None
    for r in records:
        link_mbit = r.get("link_mbit")
        k = (r["backend"], r["world_size"], link_mbit)
        if k != key:
            key = k
            link = f"tbf {link_mbit:g} Mbit/s" if link_mbit else "local"
            lines.append(
                f"# backend {r['backend']}, world size {r['world_size']}, link {link}; "
                "GB/s = 1e9 B/s, busbw = algbw*2(p-1)/p (broadcast: algbw)"
            )
            lines.append(
                "# time: median of separated calls, a barrier before each (nccl-tests: mean of "
                "back-to-back calls); #wrong: elements that differ from the expected result"
            )
            lines.append(
                f"#{'impl':>9} {'size':>12} {'count':>11} {'type':>8} {'time(us)':>11} "
                f"{'algbw(GB/s)':>11} {'busbw(GB/s)':>11} {'#wrong':>6} {'p10(us)':>10} {'p90(us)':>10} {'iters':>6}"
                + (f" {'algbw(Mbit/s)':>13}" if link_mbit else "")
            )
        w = r.get("wrong")
        lines.append(
            f"{r['impl']:>10} {r['msg_bytes']:>12} {r['count']:>11} {r['dtype']:>8} {r['median_s'] * 1e6:>11.1f} "
            f"{r['algbw_gbps']:>11.3f} {r['busbw_gbps']:>11.3f} {'n/a' if w is None else w:>6} "
            f"{r['p10_s'] * 1e6:>10.1f} {r['p90_s'] * 1e6:>10.1f} "
            f"{r['iters']:>6}" + (f" {r['algbw_gbps'] * 8e3:>13.1f}" if link_mbit else "")
        )
    if records:
        wrong = [r.get("wrong") for r in records]
        checked = [w for w in wrong if w is not None]
        bad = sum(checked)
        status = "not checked" if not checked else ("OK" if bad == 0 else "FAILED")
        lines.append(f"# Out of bounds values : {bad} {status}")
        avg = sum(r["busbw_gbps"] for r in records) / len(records)
        lines.append(f"# Avg bus bandwidth    : {avg:.4g} GB/s ({avg * 8:.4g} Gbit/s)")
    return "\n".join(lines)


def _human(n: int) -> str:
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def sweep(
    spec: AllreduceBenchSpec,
    world_size: int,
    call: Callable[..., dict[str, Any]],
    writer: RecordWriter,
    progress: bool,
    run_id: str,
    t_start: float,
) -> list[dict[str, Any]]:
    """Every (size, impl) point at one world size; ``call(impls, count, dtype, iters, warmup)`` is ``measure``.

    Implementations are measured one after the other, or together (interleaved) with ``spec.interleave``.
    With ``spec.rounds`` > 1 the sizes are swept that many times, in the order given, then reversed, and so
    on, each round taking an even share of a point's calls (and the point's warm-up again): a slow stretch
    of a shared machine then falls on every size a little instead of on the few measured during it, where
    it would bend the fitted line. A point's record holds all its rounds' calls and is written as its last
    round ends; on a failure the points begun are written too, ``complete`` false and ``iters`` the calls
    taken. Returns the records in size order.
    """
    rounds = spec.rounds
    # per point: per-rank times so far, env, #wrong summed (None if a call did not check), rounds that gave calls
    taken: dict[tuple[int, str], tuple[list[list[float]], dict[str, Any], int | None, int]] = {}
    # per point: the ranks' thread time by name over the calls it was measured with (all of its group's), and
    # how many timed calls that was
    thread_time: dict[tuple[int, str], tuple[dict[str, list[int]], int]] = {}
    written: dict[tuple[int, str], dict[str, Any]] = {}

    def write(key: tuple[int, str], complete: bool) -> None:
        per_rank, env, wrong, rounds_taken = taken[key]
        rec = _point(spec, key[1], world_size, key[0], per_rank, env, wrong, run_id, rounds_taken, complete)
        if key in thread_time and thread_time[key][0]:
            rec["threads_ns"], rec["threads_calls"] = thread_time[key]
        writer.write(rec)
        written[key] = rec
        if progress:
            _say_point(rec, world_size, t_start)

    try:
        for r in range(rounds):
            for msg_bytes in spec.sizes_bytes if r % 2 == 0 else tuple(reversed(spec.sizes_bytes)):
                iters, warmup = spec.schedule(msg_bytes)
                share = (r + 1) * iters // rounds - r * iters // rounds
                if share == 0:
                    continue
                for impls in _impl_groups(spec):
                    measured = call(impls, msg_bytes // DTYPES[spec.dtype], spec.dtype, share, warmup)
                    for impl in impls:
                        key = (msg_bytes, impl)
                        got, wrong = measured["per_impl"][impl], measured.get("wrong", {}).get(impl)
                        n_rounds = 1
                        if key in taken:
                            before, _, wrong_before, n_before = taken[key]
                            got = [a + b for a, b in zip(before, got)]
                            wrong = None if wrong is None or wrong_before is None else wrong + wrong_before
                            n_rounds += n_before
                        taken[key] = (got, measured["env"], wrong, n_rounds)
                        th, calls = thread_time.get(key, ({}, 0))
                        thread_time[key] = (
                            add_threads(th, measured.get("threads") or {}),
                            calls + int(measured.get("timed_calls", 0)),
                        )
                        if r == rounds - 1:  # an even share of iters >= 1 calls always falls in the last round
                            write(key, complete=True)
            if progress and rounds > 1:
                print(
                    f"bench-allreduce: p={world_size} round {r + 1}/{rounds} done "
                    f"(elapsed {time.monotonic() - t_start:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    finally:  # the points begun and not finished: what they took, marked incomplete
        for key in sorted(set(taken) - set(written)):
            write(key, complete=False)
    return [written[(n, impl)] for n in spec.sizes_bytes for impl in spec.impls if (n, impl) in written]


def _impl_groups(spec: AllreduceBenchSpec) -> list[tuple[str, ...]]:
    return [spec.impls] if spec.interleave else [(impl,) for impl in spec.impls]


def _point(
    spec: AllreduceBenchSpec,
    impl: str,
    world_size: int,
    msg_bytes: int,
    per_rank: list[list[float]],
    env: dict[str, Any],
    wrong: int | None,
    run_id: str,
    rounds_taken: int,
    complete: bool,
) -> dict[str, Any]:
    warmup = spec.schedule(msg_bytes)[1]
    rec = point_record(spec, impl, world_size, msg_bytes, len(per_rank[0]), warmup, per_rank, env, run_id, wrong)
    return {**rec, "rounds": rounds_taken, "complete": complete}


def _say_point(rec: dict[str, Any], world_size: int, t_start: float) -> None:
    print(
        f"bench-allreduce: p={world_size} {rec['impl']} {_human(rec['msg_bytes'])}: median "
        f"{rec['median_s'] * 1e3:.3f} ms, {rec['algbw_gbps']:.3f} GB/s, {rec['iters']} iters "
        f"(elapsed {time.monotonic() - t_start:.1f} s)",
        file=sys.stderr,
        flush=True,
    )


def estimate_total_s(spec: AllreduceBenchSpec) -> float:
    total = 0.0
    for p in spec.world_sizes:
        for s in spec.sizes_bytes:
            iters, warmup = spec.schedule(s)
            calls = iters + warmup * min(spec.rounds, iters)  # each round warms up again
            total += len(spec.impls) * calls * estimate_call_s(s, spec.link_mbit) * max(1.0, p / 2)
    return total


def run_spawned(spec: AllreduceBenchSpec, out: str | None, progress: bool = True) -> list[dict[str, Any]]:
    """Run the benchmark on ranks spawned here (one pool per world size); returns the records."""
    from contextlib import nullcontext

    from .launch import RankPool
    from .netns import EmulatedNetwork

    run_id = uuid.uuid4().hex[:12]
    t_start = time.monotonic()
    records: list[dict[str, Any]] = []
    with RecordWriter(out) as writer:
        for p in spec.world_sizes:
            net = EmulatedNetwork(p, spec.link_mbit) if spec.link_mbit else nullcontext()
            with net as n:
                pool_kwargs = n.pool_kwargs() if n is not None else {}
                with RankPool(p, spec.backend, timeout_s=spec.timeout_s, **pool_kwargs) as pool:
                    call = lambda *a: pool.run(measure, *a)[0]  # noqa: E731
                    records += sweep(spec, p, call, writer, progress, run_id, t_start)
    return records


def run_torchrun_rank(ctx: Any, spec: AllreduceBenchSpec, out: str | None) -> list[dict[str, Any]]:
    """The benchmark on a rank started by torchrun; rank 0 writes and reports."""
    run_id_box = [uuid.uuid4().hex[:12] if ctx.rank == 0 else None]
    import torch.distributed as dist

    dist.broadcast_object_list(run_id_box, src=0)
    lead = ctx.rank == 0
    with RecordWriter(out if lead else None) as writer:
        call = lambda *a: measure(ctx, *a)  # noqa: E731
        return sweep(spec, ctx.world_size, call, writer, lead, run_id_box[0], time.monotonic())


# ------------------------------------------------------------------ command line
SIZES_HELP = (
    "message sizes: a comma list of byte counts with K/M/G suffixes (powers of two as in nccl-tests: "
    "1K = 1KB = 1KiB = 1024 bytes), an item START:END[:FACTOR] meaning START, START*2, ... up to END. "
    f"Default {DEFAULT_SIZES} (1 MiB to 1 GiB, 11 sizes): 1 GiB takes about a second per call on a laptop, "
    "so iterations are scaled down with size (5 to 200 per point, about 1.5 s of timed calls each)"
)
