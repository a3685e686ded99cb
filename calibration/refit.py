"""Fit a calibration again from its records, measuring nothing (``ddpsim calibrate --refit RECORDS``).

``calibrate`` appends every measurement to its records file before it fits anything, so a newer
ddpsim can refit an older calibration with its own rules: the all-reduce, broadcast and stream
records give ``o`` and ``w`` (``calibrate.fit_network``); the cold-call record, where there is one, the
cost of a call on idle channels; the in-step copy record (else the memory-copy record) the copy rate; the
profile record the compute profile; the contention record the contention probe's factors; the
in-step probe's records (their per-bucket timelines; at two bucket caps since the per-call cost,
one before) are fitted again against the refitted network, and the sharded-step probe's record after them.
Records of larger world sizes, if any, give the cross-p model as ``calibrate --world-size 2,4``
does. The records must be one calibration's: a file with several calibrations of one world size
(appended runs) is refused, since pooling them would mix two machines' states.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .params import Params


def _one(records: list[dict[str, Any]], kind: str, path: str | Path, required: bool = True) -> dict[str, Any] | None:
    found = [r for r in records if r.get("kind") == kind]
    if not found:
        if required:
            raise ValueError(f"{path}: no {kind!r} record: not the records of a `ddpsim calibrate` run")
        return None
    if len(found) > 1:
        raise ValueError(
            f"{path}: {len(found)} {kind!r} records: the file holds several calibrations; refit one run's records"
        )
    return found[0]


def refit_from_records(path: str | Path, say: Callable[[str], None] = lambda s: None) -> Params:
    """The params ``calibrate`` would have written from the measurements in ``path``, by today's fits."""
    from realrun.records import read_records

    from .calibrate import (
        assemble_params,
        broadcast_switch_line,
        cold_call_line,
        fit_across_world_sizes,
        fit_network,
        other_channel,
        with_channel_check,
        with_sharded_fit,
        with_step_probe,
        with_step_probes_by_p,
    )
    from .probes import fit_broadcast_switch, fit_cold_call, in_step_copy_rate, in_step_scale_rate

    records = list(read_records(path))
    prof_rec = _one(records, "profile", path)
    assert prof_rec is not None
    p0 = int(prof_rec.get("world_size") or (prof_rec.get("env") or {}).get("world_size") or 0)
    ar = [r for r in records if r.get("kind") in ("allreduce", "broadcast")]
    sizes_at = sorted({int(r["world_size"]) for r in ar if isinstance(r.get("world_size"), int)})
    if not sizes_at:
        raise ValueError(f"{path}: no all-reduce records")
    p0 = p0 if p0 in sizes_at else sizes_at[0]
    links = {r.get("link_mbit") for r in ar}
    if len(links) > 1:
        raise ValueError(f"{path}: records of several links ({sorted(map(str, links))}): refit one run's records")
    link = links.pop()
    backend = str(ar[0].get("backend", "gloo"))
    streams = [
        r for r in ar if r.get("kind") == "allreduce" and r.get("impl") == "stream" and r.get("world_size") == p0
    ]
    per_size = {}
    for r in ar:
        if r.get("impl", "native") == "native" and r.get("world_size") == p0 and r.get("kind") == "allreduce":
            per_size[r["msg_bytes"]] = per_size.get(r["msg_bytes"], 0) + 1
    if not streams or any(v > 1 for v in per_size.values()):
        raise ValueError(
            f"{path}: expected one calibration's all-reduce sweep and streams at p = {p0} "
            f"(found {len(streams)} stream records, up to {max(per_size.values(), default=0)} records per size)"
        )
    net = fit_network(ar, backend, p0, link, say)
    mem = _one(records, "memcpy", path)
    cont = _one(records, "contention", path)
    assert mem is not None and cont is not None
    keys = ("contention_c", "comm_contention_c", "compute_alone_median_s", "compute_overlapped_median_s")
    keys += ("busy_fraction", "comm_alone_median_s", "comm_under_compute_median_s", "comm_bytes")
    contention = {k: cont.get(k) for k in keys}
    model = str(prof_rec.get("model"))
    bs = int(prof_rec.get("batch_size") or 0)
    # the copy rate measured inside steps where the records have it (since 2026-11-25), else the
    # warm-block rate older calibrations used
    cstep = _one(records, "copy_in_step", path, required=False)
    copy_bps = (cstep and in_step_copy_rate(cstep["per_rank"])) or float(mem["copy_bytes_per_s"])
    scale_bps = in_step_scale_rate(cstep["per_rank"]) if cstep else None  # timed since 2026-11-28
    # the cold-call probe where the records have it (since 2026-11-25 evening)
    cold_rec = _one(records, "cold_call", path, required=False)
    cold = fit_cold_call(cold_rec["per_rank"]) if cold_rec else None
    if cold is not None:
        say(cold_call_line(cold))
    # the broadcast-switch probe where the records have it (since 2026-11-28)
    sw_rec = _one(records, "broadcast_switch", path, required=False)
    switch = fit_broadcast_switch(sw_rec["per_rank"]) if sw_rec else None
    if switch is not None:
        say(broadcast_switch_line(switch))
    params = assemble_params(
        backend,
        p0,
        net,
        contention,
        copy_bps,
        prof_rec["profile"],
        dict(prof_rec.get("env") or {}),
        model,
        bs,
        link,
        path,
        cold,
        switch,
        scale_bps,
    )

    step_probes = [r["timeline"] for r in records if r.get("kind") == "step_probe"]
    at_p0 = [t for t in step_probes if t.get("world_size") == p0]
    if len(at_p0) > 1:
        raise ValueError(f"{path}: {len(at_p0)} in-step probes at p = {p0}: the file holds several calibrations")
    if at_p0:
        from .step_probe import fit_step_probe, summary_line

        fine = _one(records, "step_probe_fine", path, required=False)
        check = _one(records, "step_probe_check", path, required=False)
        fit = fit_step_probe(
            at_p0[0],
            params.profile(),
            params.cost_model(),
            fine_record=fine and fine["timeline"],
            check_record=check and check["timeline"],
            other_channel=other_channel(params),
        )
        say(summary_line(fit))
        params = with_step_probe(params, fit)
    # the sharded-step probe where the records have it (since 2026-11-29), against the terms refitted above
    sh_rec = _one(records, "sharded_probe", path, required=False)
    if sh_rec is not None:
        try:
            params = with_sharded_fit(params, sh_rec.get("probe"), p0, say)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
    params = with_channel_check(params, say)
    if len(sizes_at) > 1:
        native = [r for r in ar if r.get("kind") == "allreduce" and r.get("impl", "native") == "native"]
        params = replace(params, abg=fit_across_world_sizes(native, params, link))
        params = with_step_probes_by_p(params, [t for t in step_probes if t.get("world_size") != p0], say)
    return params
