"""How much of the machine other work used while we measured: CPU time, not the load average.

The load average cannot tell this tool's own ranks from other work (after ``calibrate`` it holds the
calibration's own ranks for a minute), so ``validate`` and ``tune --verify`` count CPU seconds instead: the
busy time of every CPU this process may run on (``psutil.cpu_times(percpu=True)``; steal included, another
tenant's work on a VM; interrupts not, see ``_NOT_BUSY``) minus the CPU time of this process and of the
ranks (``psutil.Process.cpu_times``: all their threads, gloo's included, and their reaped children) over
the same wall-clock span. What is left is other work, as an average number of cores; a niced job that only
fills idle time counts too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

# Not counted as busy: idle time; guest time (Linux counts it in user already); irq and softirq, which the
# kernel charges to no process where it accounts interrupt time apart, so the ranks' own network work there
# (loopback TCP, a tbf link's timer) would pass for other work. Steal (another tenant's work on a VM) counts.
_NOT_BUSY = ("idle", "iowait", "guest", "guest_nice", "irq", "softirq")


@dataclass(frozen=True)
class CpuSnapshot:
    wall_s: float
    busy_s: float  # every CPU's non-idle seconds since boot
    own_s: float  # this process's and the ranks' user + system seconds


def snapshot(pids: Sequence[int]) -> CpuSnapshot | None:
    """CPU time now, on the CPUs this process may run on (its affinity mask: a container's host shows all of
    its CPUs); ``None`` where it cannot be read (no psutil, a rank gone, no permission)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        per_cpu = psutil.cpu_times(percpu=True)
        try:
            mine = sorted(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            mine = list(range(len(per_cpu)))
        busy = sum(v for i in mine if i < len(per_cpu) for k, v in per_cpu[i]._asdict().items() if k not in _NOT_BUSY)
        own = 0.0
        for pid in (os.getpid(), *pids):
            c = psutil.Process(pid).cpu_times()
            own += c.user + c.system + c.children_user + c.children_system  # reaped children too
        return CpuSnapshot(time.monotonic(), busy, own)
    except (psutil.Error, OSError):
        return None


MIN_SPAN_S = 1.0  # CPU times count in clock ticks (10 ms): a shorter span says little


def other_cores(before: CpuSnapshot | None, after: CpuSnapshot | None) -> float | None:
    """The average number of cores other work kept busy between two snapshots; ``None`` if unknown or the
    span is under ``MIN_SPAN_S``. Not clipped: a value a little below 0 is the clock ticks' granularity
    (the callers clip it for display and keep it as measured)."""
    if before is None or after is None or after.wall_s - before.wall_s < MIN_SPAN_S:
        return None
    return ((after.busy_s - before.busy_s) - (after.own_s - before.own_s)) / (after.wall_s - before.wall_s)


class OtherWork:
    """``with OtherWork(pids) as other: measure()``, then ``other.cores``: ``other_cores`` over the block."""

    def __init__(self, pids: Sequence[int]):
        self.pids = list(pids)
        self.cores: float | None = None

    def __enter__(self) -> OtherWork:
        self._before = snapshot(self.pids)
        return self

    def __exit__(self, *exc: object) -> None:
        self.cores = other_cores(self._before, snapshot(self.pids))


def thread_times() -> dict[str, tuple[str, int, int, int]] | None:
    """This process's threads by id: ``(name, CPU ns, run-queue wait ns, timeslices)``
    (``/proc/self/task/TID/schedstat``, Linux); the wait is time a thread was ready to run and no core took it.
    ``None`` where it cannot be read. gloo's network thread is ``gloo_tcp_loop`` (one a rank), torch's collective
    workers ``pt_gloo_runloop``."""
    out: dict[str, tuple[str, int, int, int]] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run, wait, slices = (int(x) for x in f.read().split()[:3])
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile, or no schedstat
        out[tid] = (name, run, wait, slices)
    return out or None


def thread_delta(
    before: dict[str, tuple[str, int, int, int]] | None, after: dict[str, tuple[str, int, int, int]] | None
) -> dict[str, list[int]]:
    """``after - before`` thread by thread (one started between counts whole; one that ended is lost), summed by
    name: ``{name: [CPU ns, wait ns, timeslices]}``; empty where either is unknown."""
    if before is None or after is None:
        return {}
    out: dict[str, list[int]] = {}
    for tid, (name, *now) in after.items():
        was = before[tid][1:] if tid in before and before[tid][0] == name else (0, 0, 0)
        acc = out.setdefault(name, [0, 0, 0])
        for i, (a, b) in enumerate(zip(now, was)):
            acc[i] += a - b
    return out


def add_threads(into: dict[str, list[int]], more: dict[str, list[int]]) -> dict[str, list[int]]:
    """``into`` plus ``more``, name by name (a new dict)."""
    out = {k: list(v) for k, v in into.items()}
    for k, v in more.items():
        acc = out.setdefault(k, [0, 0, 0])
        for i, x in enumerate(v):
            acc[i] += x
    return out
