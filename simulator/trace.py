"""Chrome trace JSON of a predicted step (opens in Perfetto or chrome://tracing).

One process per simulated rank (compute on thread 0) and one process for the
communication channel; times in microseconds, as the format requires.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .engine import Event
from .jsonio import dumps_finite, write_whole

COMM_PID = 10_000


def chrome_trace(events: Sequence[Event], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    pids = set()
    comm_lanes: list[float] = []  # end time of the last event in each lane
    for start, end, rank, kind, name in sorted(events):
        if rank < 0:
            pid = COMM_PID
            lane = next((k for k, t in enumerate(comm_lanes) if t <= start + 1e-12), None)
            if lane is None:
                comm_lanes.append(end)
                lane = len(comm_lanes) - 1
            else:
                comm_lanes[lane] = end
            tid = lane
        else:
            pid, tid = rank, 0
        pids.add(pid)
        out.append(
            {
                "name": name,
                "cat": kind,
                "ph": "X",
                "ts": start * 1e6,
                "dur": (end - start) * 1e6,
                "pid": pid,
                "tid": tid,
            }
        )
    for pid in sorted(pids):
        label = "communication (all ranks)" if pid == COMM_PID else f"rank {pid} compute"
        out.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": label}})
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": meta or {}}


def write_chrome_trace(path: str | Path, events: Sequence[Event], meta: dict[str, Any] | None = None) -> Path:
    return write_whole(path, dumps_finite(chrome_trace(events, meta), indent=None))
