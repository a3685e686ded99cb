"""How much of the machine other work used while we measured: CPU time, not the load average.

The load average cannot tell this tool's own ranks from other work (after ``calibrate`` it holds the
calibration's own ranks for a minute), so ``validate`` counts CPU seconds instead: every CPU's busy
time (``psutil.cpu_times``, steal included: another tenant's work on a VM) minus the CPU time of this
process and of the ranks (``psutil.Process.cpu_times``, all their threads, gloo's included) over the
same wall-clock span. What is left is other work, as an average number of cores.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

_IDLE_FIELDS = ("idle", "iowait", "guest", "guest_nice")  # guest time is already counted in user on Linux


@dataclass(frozen=True)
class CpuSnapshot:
    wall_s: float
    busy_s: float  # every CPU's non-idle seconds since boot
    own_s: float  # this process's and the ranks' user + system seconds


def snapshot(pids: Sequence[int]) -> CpuSnapshot | None:
    """CPU time now; ``None`` where it cannot be read (no psutil, a rank gone, no permission)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        t = psutil.cpu_times()
        busy = sum(v for k, v in t._asdict().items() if k not in _IDLE_FIELDS)
        own = 0.0
        for pid in (os.getpid(), *pids):
            c = psutil.Process(pid).cpu_times()
            own += c.user + c.system
        return CpuSnapshot(time.monotonic(), busy, own)
    except (psutil.Error, OSError):
        return None


MIN_SPAN_S = 1.0  # CPU times count in clock ticks (10 ms): a shorter span says little


def other_cores(before: CpuSnapshot | None, after: CpuSnapshot | None) -> float | None:
    """The average number of cores other work kept busy between two snapshots (>= 0); ``None`` if unknown
    or the span is under ``MIN_SPAN_S``."""
    if before is None or after is None or after.wall_s - before.wall_s < MIN_SPAN_S:
        return None
    other = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    return max(0.0, other / (after.wall_s - before.wall_s))
