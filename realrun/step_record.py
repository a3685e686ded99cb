"""The record of one DDP configuration timed for real (``realrun.bench_ddp.measure_ddp``): a frozen
dataclass made in that one place, written as a ``"ddp_step"`` record (``realrun.records``) by its fields.

Files of these records are read back as plain dicts (``read_records``, ``combine_records``): older
files, other kinds and the ``round`` a command adds all pass through them unchanged."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.jsonio import to_fields

from .records import RECORD_SCHEMA


@dataclass(frozen=True)
class DDPStepRecord:
    """Raw step times (slowest rank per step, and per rank), their statistics, the compute-only
    baseline's, what communication adds (``exposed_comm_s``), throughput and memory."""

    env: Mapping[str, Any]
    model: str
    strategy: str
    bucket_mb: float | None
    bucket_cap_mb_list: tuple[float, ...] | None
    world_size: int
    backend: str
    batch_size: int
    optimizer: str
    steps: int
    warmup: int
    step_times_s: tuple[float, ...]
    rank_step_times_s: tuple[tuple[float, ...], ...]
    median_s: float
    p10_s: float
    p90_s: float
    compute_step_times_s: tuple[float, ...]
    compute_median_s: float
    compute_p10_s: float
    compute_p90_s: float
    exposed_comm_s: float
    exposed_comm_share: float | None
    samples_per_s: float
    tokens_per_s: float
    tokens_per_sample: int
    peak_mem_bytes: int
    rss_end_bytes: int
    link_mbit: float | None
    trace_files: tuple[str, ...] | None
    time_unix_s: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """The ``"ddp_step"`` record: schema, kind, time, env, then the measurement, as ``make_record`` lays it out."""
        d = to_fields(self)
        head = {"schema": RECORD_SCHEMA, "kind": "ddp_step", "time_unix_s": d.pop("time_unix_s")}
        return {**head, **d}
