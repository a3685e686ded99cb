"""What ``realrun.bench_ddp`` measures, as frozen dataclasses written by their fields:

- ``DDPStepRecord``: one DDP configuration timed for real (``measure_ddp``), a ``"ddp_step"`` record;
- ``ComputeBaseline``: the bare module's steps (``measure_compute``), shared by ``measure_ddp`` calls;
- ``InterleavedResult``: one configuration stepped in turn with others (``measure_interleaved``),
  written by ``validate`` and ``tune --verify`` as a ``"ddp_step"`` record;
- ``TimelineRecord``: steps with per-bucket timelines (``measure_timeline``), written as
  ``<name>.timeline.json`` and inside ``"step_probe"`` records.

Files of these records are read back as plain dicts (``read_records``, ``combine_records``): older
files, other kinds and the ``round`` a command adds all pass through them unchanged; the timeline
readers take a ``TimelineRecord`` or such a dict (``timeline_mapping``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from simulator.jsonio import from_fields, to_fields

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


@dataclass(frozen=True)
class ComputeBaseline:
    """``measure_compute``'s result: the bare module's steps (no wrapper, no communication) on a pool's
    ranks, per step the slowest rank's time, and their statistics. ``measure_ddp`` takes one to share a
    baseline across configurations; it is not written as a record of its own."""

    model: str
    batch_size: int
    optimizer: str
    world_size: int
    step_times_s: tuple[float, ...]
    median_s: float
    p10_s: float
    p90_s: float

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)


@dataclass(frozen=True)
class InterleavedResult:
    """One configuration of ``measure_interleaved`` (strategy ``"compute"``: the bare module): its step
    times (slowest rank per step) and statistics, and the paired ratio to the first configuration
    (``ratio_to_first``: median over rounds of ``ratios_to_first``). Written by ``validate`` and
    ``tune --verify`` as a ``"ddp_step"`` record, after the round, group, setting and link they add."""

    strategy: str
    bucket_mb: float | None
    bucket_cap_mb_list: tuple[float, ...] | None
    model: str
    batch_size: int
    world_size: int
    steps: int
    warmup: int
    step_times_s: tuple[float, ...]
    median_s: float
    p10_s: float
    p90_s: float
    ratio_to_first: float
    ratios_to_first: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)


TIMELINE_SCHEMA = "ddpsim.timeline/1"


@dataclass(frozen=True)
class TimelineRecord:
    """``measure_timeline``'s result: steps of one configuration with a per-bucket timeline of each
    timed step on every rank (``rank_timelines[r][k]``: rank ``r``'s step ``k``, the dict
    ``realrun.timeline`` records, times relative to that rank's step start), the compute-only steps
    taken alternately with them, and the load average before and after.

    Written whole (``to_dict``: ``schema`` first, then the fields) as ``<name>.timeline.json`` and
    inside ``"step_probe"`` records; the readers (``calibration.timeline``, ``calibration.step_probe``)
    take this or the dict read back from such a file (``timeline_mapping``)."""

    model: str
    strategy: str
    bucket_mb: float | None
    world_size: int
    backend: str
    batch_size: int
    optimizer: str
    steps: int
    warmup: int
    step_times_s: tuple[float, ...]
    rank_step_times_s: tuple[tuple[float, ...], ...]
    rank_timelines: tuple[tuple[Mapping[str, Any], ...], ...]
    compute_step_times_s: tuple[float, ...]
    compute_median_s: float | None
    env: Mapping[str, Any]
    loadavg_before: tuple[float, ...] | None = None
    loadavg_after: tuple[float, ...] | None = None
    block: int = 1  # timed steps a turn (``measure_timeline``); records before it had one
    plain_step_times_s: tuple[float, ...] = ()  # the configuration's steps without the recorder, beside them

    def to_dict(self) -> dict[str, Any]:
        # written as records before these fields were where they are at their defaults: the same bytes
        return to_fields(self, schema=TIMELINE_SCHEMA, omit_default=("block", "plain_step_times_s"))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TimelineRecord:
        return from_fields(cls, d, what="timeline record")


def timeline_mapping(rec: TimelineRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    """A timeline record as the mapping it is written as: a ``TimelineRecord`` by ``to_dict``, a dict
    read back from a file (or a partial one) as it is."""
    return rec.to_dict() if isinstance(rec, TimelineRecord) else rec


_Side = TypeVar("_Side")


def turn_order(sides: Sequence[_Side], turn: int) -> Sequence[_Side]:
    """The order the sides of an interleaved measurement step in turn ``turn``: as given in even turns, reversed in
    odd ones, so each side is first and last as often (``realrun.timeline``; which side a step follows:
    ``bare_follows_ddp``)."""
    return sides if turn % 2 == 0 else sides[::-1]


def bare_follows_ddp(turn: int) -> bool:
    """Whether turn ``turn``'s compute-only step follows a DDP step, in ``measure_timeline``'s order at ``block`` 1
    (sides DDP, bare, or plain, DDP, bare, in ``turn_order``): in even turns it does; in odd ones it comes first
    and follows the turn before's own compute-only step. ``calibration.step_probe.leftover_fit`` pairs the
    compute-only steps by it."""
    return turn % 2 == 0
