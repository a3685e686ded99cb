"""Calibration end to end: one real calibrate + validate round on 2 gloo ranks, the CLI contract, bad input.

One ``RankPool`` (``calibration.calibrate.open_pool``) serves the whole module:
starting ranks costs seconds. The round is short (3 all-reduce sizes, 3 timed
steps) but real. Timing on this box is noisy, so nothing here asserts
accuracy (that goes to BENCHMARKS.md); what is asserted is structure and
arithmetic: every derived number is recomputed here from the numbers it
was derived from, and the files written hold what the results say.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import calibration.calibrate as calibrate_mod  # noqa: E402
import calibration.sharded_probe as sharded_probe  # noqa: E402
import realrun.bench_ddp as bench_ddp  # noqa: E402
import realrun.netns as netns  # noqa: E402
from calibration.calibrate import CalibrateSpec, calibrate_on_pool, check_uncertainty, fit_probe  # noqa: E402
from calibration.fit import fit_bandwidth, fit_linear  # noqa: E402
from calibration.params import PARAMS_SCHEMA, Params, probe_step_residual  # noqa: E402
from calibration.probes import (
    SMALL_CALL_BYTES,
    SMALL_CALLS,
    effective_copy_rate,
    fit_broadcast_switch,
    fit_call_modes,
    fit_cold_call,
    in_step_copy_rate,
    in_step_scale_rate,
)
from calibration.refit import refit_from_records  # noqa: E402
from calibration.step_probe import fit_in_step, measured_targets, probe_bucket_mb, simulated_terms  # noqa: E402
from calibration.validate import (  # noqa: E402
    DEFAULT_BLOCK,
    VALIDATION_SCHEMA,
    ValidateSpec,
    ValidationRow,
    coverage_band_chance,
    format_validation,
    predicted_row,
    summarize_rows,
    validate_on_pool,
)
from ddpsim.cli import main as ddpsim  # noqa: E402
from realrun.errors import RunFailure  # noqa: E402
from realrun.records import RecordWriter, make_record, read_records  # noqa: E402
from realrun.step_record import InterleavedResult  # noqa: E402
from realrun.workloads import load_workload  # noqa: E402
from simulator.profile import GradProfile  # noqa: E402
from simulator.strategies import StrategySpec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TINY = "mlp:width=256,depth=3,batch_size=16"  # 8 tensors, 0.76 MiB of gradients, sub-millisecond steps
SIZES = (4096, 65536, 1 << 20)
STRATEGIES = ("torch-ddp", "bucketed")
BUCKETS_MB = (0.0625, 1.0)  # 64 KiB: one 256 KiB weight per bucket; 1 MiB: every gradient in one bucket
STEPS = 4  # 2 rounds x 2 interleaved steps per configuration
pytestmark = pytest.mark.slow


# ---- the round --------------------------------------------------------------------
@pytest.fixture(scope="module")
def pool(rank_pool):
    return rank_pool  # the session's shared 2-rank pool (conftest.py)


@pytest.fixture(scope="module")
def calibrated(pool, tmp_path_factory):
    d = tmp_path_factory.mktemp("calibrate")
    said: list[str] = []
    spec = CalibrateSpec(
        model=TINY,
        sizes_bytes=SIZES,
        profile_steps=STEPS,
        contention_steps=STEPS,
        step_probe_steps=STEPS,
        step_probe_seconds=0.5,
        cold_call_reps=STEPS,
        switch_reps=STEPS,
        sharded_steps=STEPS,
        sharded_seconds=0.0,
        records=str(d / "calibration.jsonl"),
    )
    asked = []

    def probe_steps(profile, cost, world_size, bucket_mb, steps, min_seconds):  # fine cap +1 step, one bucket +2
        asked.append((bucket_mb, steps, min_seconds))
        coarse = probe_bucket_mb(profile.total_grad_bytes)
        return steps + (bucket_mb < coarse) + 2 * (bucket_mb > coarse)

    with pytest.MonkeyPatch.context() as mp:  # steps each cap gets, as asked, without the tiny model's 1 s
        mp.setattr("calibration.step_probe.probe_steps", probe_steps)
        params = calibrate_on_pool(pool, spec, said.append)
    assert [(steps, secs) for _, steps, secs in asked] == [(STEPS, 0.5)] * 3
    return params, params.save(d / "params.json"), Path(spec.records), said


@pytest.fixture(scope="module")
def validated(pool, calibrated):
    params, params_path, _, _ = calibrated
    spec = ValidateSpec(
        model=TINY,
        strategies=STRATEGIES,
        bucket_mb=BUCKETS_MB,
        steps=STEPS,
        warmup=1,
        rounds=2,
        out=str(params_path.parent / "validation.jsonl"),
    )
    return validate_on_pool(pool, params, spec, lambda msg: None), Path(spec.out)


def _positive_finite(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


def test_stream_probe_takes_the_sizes_in_turns_after_an_untimed_round(monkeypatch):
    """The stream probe's calls as a fake ``torch.distributed`` sees them: two warm-up calls a size, then rounds
    of every size (as given, reversed, ...), each a blocking stream then an async one of ``k`` calls; the first
    round untimed. A fake clock makes each call cost its size times (its round + 1), twice that async, so every
    kept time says which size and round it came from."""
    from types import SimpleNamespace

    import torch.distributed as dist

    import calibration.probes as probes

    calls: list[tuple[str, int]] = []
    now = [0.0]
    seen: dict[int, int] = {}
    k, reps = 2, 3

    class Done:
        def wait(self):
            return None

    def all_reduce(t, async_op=False):
        n = t.numel() * 4
        calls.append(("async" if async_op else "block", n))
        j = seen[n] = seen.get(n, 0) + 1
        if j > 2:  # after the two warm-up calls: round r, k blocking then k async calls
            r = (j - 3) // (2 * k)
            now[0] += n * 1e-9 * (r + 1) * (2 if async_op else 1)
        return Done() if async_op else None

    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    monkeypatch.setattr(dist, "barrier", lambda: calls.append(("barrier", 0)))
    monkeypatch.setattr(probes, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    sizes = [4096, 16384, 65536]
    out = probes.stream_probe(None, sizes + [4096], k=k, reps=reps)  # a size given twice is measured once
    assert out["sizes_bytes"] == sizes and out["order"] == "interleaved" and out["untimed_rounds"] == 1
    for n, blocking, asyn in zip(sizes, out["blocking_s"], out["async_s"]):
        assert blocking == pytest.approx([n * 1e-9 * (r + 1) for r in range(1, reps + 1)], rel=1e-9)
        assert asyn == pytest.approx([2 * n * 1e-9 * (r + 1) for r in range(1, reps + 1)], rel=1e-9)
    assert calls[:6] == [("block", n) for n in sizes for _ in range(2)]
    streams = [n for kind, n in calls[6:] if kind == "block"][::k]
    assert streams == (sizes + sizes[::-1]) * 2  # rounds 0 (untimed) to 3
    per = calls[6:]
    assert per[: 2 * (k + 1)] == [("barrier", 0)] + [("block", 4096)] * k + [("barrier", 0)] + [("async", 4096)] * k
    # buffers made stream by stream where every size's would not fit: the same calls, the same times
    monkeypatch.setattr(probes, "STREAM_RESIDENT_BYTES", 0)
    calls.clear()
    seen.clear()
    again = probes.stream_probe(None, sizes, k=k, reps=reps)
    flat = [[t for per in d["blocking_s"] + d["async_s"] for t in per] for d in (again, out)]
    assert flat[0] == pytest.approx(flat[1], rel=1e-9)
    assert [n for kind, n in calls[6:] if kind == "block"][::k] == streams


def test_calibrated_params_are_positive_finite_and_of_this_run(calibrated):
    params, _, records, said = calibrated
    assert (params.backend, params.world_size, params.link_mbit) == ("gloo", 2, None)
    # gloo runs 2 collectives at once only if async calls measured faster than blocking ones (and not as one
    # pipelined channel's); the in-step probe keeps that channel model or, far closer to its steps, the other
    ch = params.probes["in_step"]["channel"]
    stream = ch["stream"]
    assert stream["channels"] == (2 if params.probes["async_speedup"] >= 1.3 and not stream["pipelined"] else 1)
    kept = ch[ch["taken"]]
    assert (
        (params.channels, params.pipelined)
        == (kept["channels"], kept["pipelined"])
        == (ch["channels"], ch["pipelined"])
    )
    assert (ch["taken"] == "other") == (params.probes.get("channel_source") == "in-step probe")
    assert _positive_finite(params.o_us) and _positive_finite(params.w_gbps)
    assert params.o_us == params.linear.o_s * 1e6 and params.w_gbps == params.linear.w_bytes_per_s / 1e9
    lo, hi = params.linear.o_ci_us
    assert lo <= params.o_us <= hi
    assert params.linear.sizes_bytes == SIZES and params.linear.n_points == len(SIZES)
    assert math.isfinite(params.contention_c) and params.contention_c >= 0
    assert math.isfinite(params.comm_contention_c) and params.comm_contention_c >= 0
    assert _positive_finite(params.copy_bytes_per_s)
    # the in-step probe's factors are the ones used; the contention probe's are kept beside them
    fit = params.probes["in_step"]
    assert (params.contention_c, params.comm_contention_c) == (fit["contention_c"], fit["comm_contention_c"])
    assert fit["measured"]["steps"] == STEPS and fit["measured"]["compute_only_median_s"] > 0
    assert params.probes["contention"]["contention_c"] >= 0
    assert params.source_records == (str(records.resolve()),)
    assert (params.probes["model"], params.probes["batch_size"]) == (TINY, 16)
    # the profile is of this model: 4 bytes per float32 element of every parameter
    prof = params.profile()
    module = load_workload(TINY).build()
    assert prof.model == TINY and prof.samples_per_step == 16
    assert [p.name for p in prof.params] == [n for n, _ in module.named_parameters()]
    assert prof.total_grad_bytes == 4 * sum(p.numel() for p in module.parameters())
    assert prof.forward_s > 0 and prof.backward_s > 0
    # a progress line per phase
    for phase in (
        "all-reduce and broadcast at 3 sizes, 4 KiB to 1 MiB",
        "all-reduce fit of medians",
        "all-reduce fit of means",
        "broadcast fit",
        "all-reduce streams",
        "streams: o =",
        "memory copy",
        "profiling",
        "gradient copies",
        "contention:",
        "in-step probe:",
        "in-step probe (torch-ddp",
        "sharded step and step check: torch DDP and the sharded optimizer at",
        "sharded step at",
        "step check beside compute-only steps, predicted as validate predicts: torch-ddp",
    ):
        assert any(line.startswith(phase) for line in said), (phase, said)


def test_records_hold_every_measurement_and_refit_to_the_params(calibrated):
    params, _, records, _ = calibrated
    recs = read_records(records)
    # 3 sizes swept (native), the same 3 as back-to-back streams (impl "stream"), 3 broadcasts
    assert Counter(r["kind"] for r in recs) == {
        "allreduce": 6,
        "broadcast": 3,
        "memcpy": 1,
        "copy_in_step": 1,
        "cold_call": 1,
        "broadcast_switch": 1,
        "profile": 1,
        "contention": 1,
        "step_probe": 1,
        "step_probe_fine": 1,
        "step_probe_check": 1,
        "sharded_probe": 1,
    }
    ar = [r for r in recs if r["kind"] == "allreduce" and r["impl"] == "native"]
    streams = [r for r in recs if r["kind"] == "allreduce" and r["impl"] == "stream"]
    assert tuple(r["msg_bytes"] for r in ar) == SIZES == tuple(r["msg_bytes"] for r in streams)
    assert all(r["order"] == "interleaved" and len(r["times_s"]) == len(r["async_times_s"]) == 8 for r in streams)
    # every number in the params comes from a record: refitting the file gives the same fits, bit for bit.
    # w: the median call time over the transfer-dominated sizes of the sweep (those chosen by the fit of means;
    # all of it if fewer than two); o: the mean per-call time of consecutive calls (streams)
    sweep, stream = fit_linear(ar, world_size=2, statistic="mean"), fit_linear(streams, impl="stream", statistic="mean")
    bw = fit_bandwidth(ar, sweep, world_size=2, statistic="median") or sweep
    assert (params.linear.w_bytes_per_s, params.linear.o_s, params.linear.o_ci_s) == (
        bw.w_bytes_per_s,
        stream.o_s,
        stream.o_ci_s,
    )
    # and the whole params file, from the records alone, as `ddpsim calibrate --refit` does it
    assert refit_from_records(records).to_dict() == params.to_dict()
    assert stream.to_dict() == params.probes["stream_fit"]
    assert fit_linear(ar, world_size=2).to_dict() == params.probes["allreduce_median_fit"]
    bc = [dict(r, kind="allreduce") for r in recs if r["kind"] == "broadcast"]
    assert fit_linear(bc, impl="broadcast", world_size=2, statistic="mean") == params.broadcast
    assert params.linear.n_samples == sum(len(r["times_s"]) for r in ar)
    # the copy rate: the in-step copies' (every trainable gradient in and back out, per rank and step);
    # the warm-block probe's rate is kept in its record beside it
    (mem,) = [r for r in recs if r["kind"] == "memcpy"]
    assert mem["copy_bytes_per_s"] == effective_copy_rate(
        mem["per_rank"], [p.nbytes for p in params.profile().params if p.requires_grad]
    )
    (cps,) = [r for r in recs if r["kind"] == "copy_in_step"]
    assert [r["rank"] for r in cps["per_rank"]] == [0, 1]
    for r in cps["per_rank"]:
        assert r["bytes"] == params.profile().total_grad_bytes
        assert len(r["copy_in_s"]) == len(r["copy_out_s"]) == 8 and min(r["copy_in_s"] + r["copy_out_s"]) > 0
    rates = [
        2 * r["bytes"] / statistics.median(a + b for a, b in zip(r["copy_in_s"], r["copy_out_s"]))
        for r in cps["per_rank"]
    ]
    assert params.copy_bytes_per_s == in_step_copy_rate(cps["per_rank"]) == pytest.approx(statistics.median(rates))
    # the division pass between them: every bucket buffer's bytes, once a step, the rate the cost model takes
    for r in cps["per_rank"]:
        assert r["scale_bytes"] == params.profile().total_grad_bytes
        assert len(r["scale_s"]) == 8 and min(r["scale_s"]) > 0
    scale = statistics.median(r["scale_bytes"] / statistics.median(r["scale_s"]) for r in cps["per_rank"])
    assert params.scale_bytes_per_s == in_step_scale_rate(cps["per_rank"]) == pytest.approx(scale)
    assert params.cost_model().scale_bytes_per_s == params.scale_bytes_per_s
    assert params.fitted_terms(2)["scale_bytes_per_s"] == params.scale_bytes_per_s
    # the cold-call term: fitted from its record, and what the cost model (and so the in-step fit) uses
    (cold,) = [r for r in recs if r["kind"] == "cold_call"]
    assert [r["rank"] for r in cold["per_rank"]] == [0, 1]
    for r in cold["per_rank"]:
        assert len(r["after_call_s"]) == STEPS and [len(x) for x in r["after_compute_s"]] == [STEPS] * 3
    cfit = fit_cold_call(cold["per_rank"])
    assert params.probes["cold_call"] == cfit and params.cold_call() == (cfit["cold_call_s"], cfit["cold_tau_s"])
    # the small calls' two kinds, from the sweep's records
    assert params.probes["call_modes"] == fit_call_modes(recs, 2)
    assert 0 <= params.probes["call_modes"]["slow_share"] <= 1 and params.probes["call_modes"]["calls"] >= 10
    assert (params.cost_model().cold_call_s, params.cost_model().cold_tau_s) == params.cold_call()
    # within what was measured: no more than 1.5x the largest extra, a time constant within the gaps
    assert 0 <= cfit["cold_call_s"] <= 1.5 * max(max(cfit["extra_s"]), 0) + 1e-15
    assert cfit["cold_call_s"] == 0 or 0 < cfit["cold_tau_s"] <= max(cfit["gaps_s"])
    # the broadcast-switch credit: fitted from its record, what the cost model uses (0 unless kept)
    (sw,) = [r for r in recs if r["kind"] == "broadcast_switch"]
    assert [r["rank"] for r in sw["per_rank"]] == [0, 1]
    assert all(len(r["same_s"]) == len(r["alternating_s"]) == STEPS for r in sw["per_rank"])
    sfit = fit_broadcast_switch(sw["per_rank"])
    assert params.probes["broadcast_switch"] == sfit
    assert params.cost_model().broadcast_switch_credit_s == params.broadcast_switch_credit_s
    assert params.broadcast_switch_credit_s == (sfit["difference_s"] if sfit["identified"] else 0.0)
    # the sharded-step probe: whole turns of both configurations, at least MIN_TURNS of them, fitted last against
    # the other terms; the cost model has its extra only where kept
    (shp,) = [r["probe"] for r in recs if r["kind"] == "sharded_probe"]
    block = shp["block"]
    assert len(shp["torch_ddp_step_times_s"]) == len(shp["sharded_step_times_s"]) == block * sharded_probe.MIN_TURNS
    shfit = params.probes["sharded_step"]
    unc = check_uncertainty(params, shp, 2)
    assert shfit == sharded_probe.fit_sharded_probe(shp, params.profile(), params.cost_model(), 2, unc=unc)
    assert unc.model_log_sd == 0.0 and all(r["inputs_log_sd"] >= 0 for r in shfit["check"])
    assert shfit["n_broadcasts"] == sum(1 for q in params.profile().params if q.requires_grad)
    assert params.cost_model().broadcast_step_extra_s == (shfit["fitted_s"] if shfit["identified"] else 0.0)
    # with the step check beside it: two bare copies among the six (0.76 MiB of gradients: the check's caps from a
    # third of them), its rows predicted as validate predicts, the sharded one marked fitted where the extra was kept
    assert len(shp["compute_step_times_s"]) == 2 * block * sharded_probe.MIN_TURNS
    configs = [("torch-ddp", 0.25), ("torch-ddp", 0.062), ("bucketed", 0.25), ("bucketed", 1.0)]
    assert [(c["strategy"], c["bucket_mb"]) for c in shp["checks"]] == configs
    assert [(r["strategy"], r["bucket_mb"], r["fitted"]) for r in shfit["check"]] == [
        ("torch-ddp", shp["bucket_mb"], False),
        ("sharded", shp["bucket_mb"], shfit["identified"]),
        *((st, mb, False) for st, mb in configs),
    ]
    steps = (shp["torch_ddp_step_times_s"], shp["sharded_step_times_s"], *(c["step_times_s"] for c in shp["checks"]))
    for r, times in zip(shfit["check"], steps, strict=True):
        assert r["measured_median_s"] == statistics.median(times)
        assert r["log_residual"] == math.log(r["predicted_s"] / r["measured_median_s"])
    (cont,) = [r for r in recs if r["kind"] == "contention"]
    refit = fit_probe(cont["per_rank"])
    probe = params.probes["contention"]
    assert refit["contention_c"] == cont["contention_c"] == probe["contention_c"]
    assert refit["comm_contention_c"] == probe["comm_contention_c"]
    # comm slowdown = median under compute / median alone - 1, floored at 0
    alone = statistics.median(t for r in cont["per_rank"] for t in r["comm_alone_s"])
    under = statistics.median(t for r in cont["per_rank"] for t in r["comm_under_compute_s"])
    assert probe["comm_contention_c"] == pytest.approx(max(0.0, under / alone - 1.0), rel=1e-12, abs=1e-15)
    # the factors used come from the in-step probe's record, refitted here the same way
    (sp,) = [r for r in recs if r["kind"] == "step_probe"]
    assert sp["timeline"]["strategy"] == "torch-ddp" and len(sp["timeline"]["step_times_s"]) == STEPS
    # with the same probe at the fine cap (a call per gradient), which the per-call cost is fitted from
    (fine,) = [r["timeline"] for r in recs if r["kind"] == "step_probe_fine"]
    assert fine["bucket_mb"] < sp["timeline"]["bucket_mb"] and len(fine["step_times_s"]) == STEPS + 1
    fit = fit_in_step(
        params.profile(),
        params.cost_model(),
        2,
        sp["fit"]["bucket_mb"],
        measured_targets(sp["timeline"]),
        fine=(fine["bucket_mb"], measured_targets(fine)),
        hold_cc=None if sp["fit"]["comm_contention_check"]["identified"] else 0.0,  # as the calibration held it
    )
    assert sp["fit"]["comm_contention_check"] == params.probes["in_step"]["comm_contention_check"]
    # the one-bucket check: measured at the power of two above every gradient, simulated at the fitted terms,
    # and counted in the model error the intervals carry (its step, the other two's, nothing else)
    (check,) = [r["timeline"] for r in recs if r["kind"] == "step_probe_check"]
    assert check["bucket_mb"] == 1.0 and len(check["step_times_s"]) == STEPS + 2  # 0.76 MiB of gradients
    ins = params.probes["in_step"]
    assert ins["check"]["bucket_mb"] == 1.0 and ins["check"]["measured"]["n_buckets"] == 1
    assert ins["check"]["simulated_at_fit"] == simulated_terms(
        params.profile().scaled(ins["check"]["compute_scale"]),
        params.cost_model().with_overrides(
            contention=fit["contention_c"],
            comm_contention=fit["comm_contention_c"],
            call_cpu_s=fit["call_cpu_s"],
            call_cpu_s_per_byte=fit["call_cpu_s_per_byte"],
            finalize_s_per_param=ins["finalize_s_per_param"],
            leftover_s=0.0,
            optimizer_extra_s=0.0,
        ),
        2,
        1.0,
    )
    extra = ins["optimizer_extra_s"]
    # each checked against its recorded steps (the plain ones beside them, the recorder off, said too)
    parts = (ins, ins["fine"], ins["check"])
    for part, kind in zip(parts, ("step_probe", "step_probe_fine", "step_probe_check")):
        (tl,) = [r["timeline"] for r in recs if r["kind"] == kind]
        assert part["measured"]["plain_step_s"] == statistics.median(tl["plain_step_times_s"])
        assert part["measured"]["step_s"] == statistics.median(tl["step_times_s"])
    logs = [math.log((p["simulated_at_fit"]["step_s"] + extra) / p["measured"]["step_s"]) for p in parts]
    assert probe_step_residual(ins) == pytest.approx(math.sqrt(sum(x * x for x in logs) / 3), rel=1e-12)
    # the intervals' model error: the step check's, which ran, not the in-step probe's
    unc = params.uncertainty()
    assert unc.model_log_sd == sharded_probe.step_check_residual(shfit) and unc.model_error_from == "the step check"
    assert (fit["contention_c"], fit["comm_contention_c"]) == (params.contention_c, params.comm_contention_c)
    assert (fit["call_cpu_s"], fit["call_cpu_s_per_byte"]) == params.work_at(None)
    assert params.work_at(None) == (params.cost_model().call_cpu_s, params.cost_model().call_cpu_s_per_byte)
    assert fit["call_cpu_s"] >= 0 and fit["call_cpu_s_per_byte"] >= 0
    (prof,) = [r for r in recs if r["kind"] == "profile"]
    assert GradProfile.from_dict(prof["profile"]) == params.profile()


def test_params_file_round_trips(calibrated, tmp_path):
    params, path, _, _ = calibrated
    d = json.loads(path.read_text())
    assert d["schema"] == PARAMS_SCHEMA
    assert (d["o_us"], d["w_gbps"]) == (params.o_us, params.w_gbps)
    back = Params.load(path)
    assert back == params
    assert back.profile() == params.profile() and back.cost_model() == params.cost_model()
    again = back.save(tmp_path / "again.json")
    assert again.read_text() == path.read_text()


# ---- validation -------------------------------------------------------------------
def test_validation_rows_recompute(validated, calibrated):
    res, _ = validated
    params = calibrated[0]
    rows = [r.to_dict() for r in res["rows"]]  # as the result file holds them
    assert (res["schema"], res["model"], res["world_size"], res["backend"], res["link_mbit"]) == (
        VALIDATION_SCHEMA,
        TINY,
        2,
        "gloo",
        None,
    )
    assert [(r["strategy"], r["bucket_mb"]) for r in rows] == [(s, b) for s in STRATEGIES for b in BUCKETS_MB]
    assert res["n_configs"] == len(rows) == 4
    prof = params.profile()
    for r in rows:
        for k in (
            "measured_median_s",
            "measured_p10_s",
            "measured_p90_s",
            "measured_compute_s",
            "predicted_step_s",
            "predicted_compute_s",
        ):
            assert _positive_finite(r[k]), (k, r)
        assert r["measured_p10_s"] <= r["measured_median_s"] <= r["measured_p90_s"]
        expected_err = (r["predicted_step_s"] - r["measured_median_s"]) / r["measured_median_s"] * 100
        assert r["error_pct"] == pytest.approx(expected_err, rel=1e-12)
        assert r["measured_exposed_s"] == pytest.approx(r["measured_median_s"] - r["measured_compute_s"], rel=1e-9)
        assert r["measured_compute_s"] == res["measured_compute_s"]  # one shared compute baseline
        assert r["predicted_step_s"] == pytest.approx(r["predicted_compute_s"] + r["predicted_exposed_s"], rel=1e-9)
        # the prediction is the simulator's, from the fitted params, for the same configuration, with the
        # profile's compute scaled to the compute-only baseline measured beside it
        assert r["compute_scale"] == pytest.approx(r["measured_compute_s"] / prof.compute_s, rel=1e-12)
        spec = StrategySpec(r["strategy"], bucket_mb=r["bucket_mb"])
        point = predicted_row(prof.scaled(r["compute_scale"]), params, spec, 2)
        keys = ("predicted_step_s", "predicted_exposed_s", "predicted_compute_s", "n_buckets")
        assert {k: r[k] for k in keys} == {k: getattr(point, k) for k in keys}
        assert r["predicted_p10_s"] <= r["predicted_p90_s"]
        assert "o fit CI" in r["interval_sources"] and any(s.startswith("compute") for s in r["interval_sources"])
    # 64 KiB buckets split the 3 weights of 256 KiB apart; 1 MiB holds all 0.76 MiB in one bucket
    by = {(r["strategy"], r["bucket_mb"]): r["n_buckets"] for r in rows}
    assert by[("torch-ddp", 1.0)] == 1 and by[("torch-ddp", 0.0625)] >= 3


def test_validate_runs_torch_ddp_at_its_default_beside_sizes(pool, calibrated, tmp_path):
    """``--bucket-mb default``: torch DDP with ``bucket_cap_mb`` unset (25 MiB, a 1 MiB first bucket) is a row of
    its own, predicted as ``StrategySpec("torch-ddp")``; the hand-written ``bucketed``, which has no default size,
    runs only the sizes given."""
    params = calibrated[0]
    spec = ValidateSpec(
        model=TINY,
        strategies=STRATEGIES,
        bucket_mb=(None, 1.0),
        steps=4,
        warmup=1,
        rounds=1,
        out=str(tmp_path / "validation.jsonl"),
        small_calls=0,
    )
    res = validate_on_pool(pool, params, spec, lambda msg: None)
    rows = res["rows"]
    assert [(r.strategy, r.bucket_mb) for r in rows] == [("torch-ddp", None), ("torch-ddp", 1.0), ("bucketed", 1.0)]
    row = rows[0]
    point = predicted_row(params.profile().scaled(row.compute_scale), params, StrategySpec("torch-ddp"), 2)
    assert (row.predicted_step_s, row.n_buckets) == (point.predicted_step_s, point.n_buckets)
    assert row.n_buckets == 1  # 0.76 MiB of gradients fit the 1 MiB first bucket whole
    table = [line.split() for line in format_validation(res).splitlines()]
    assert ["torch-ddp", "default"] in [t[:2] for t in table] and ["bucketed", "1"] in [t[:2] for t in table]
    assert "torch-ddp" not in res["best_bucket"]  # one sized row: no best bucket to name


def test_validation_summary_recompute(validated):
    res, path = validated
    rows = res["rows"]
    errs = [abs(r.error_pct) for r in rows]
    assert res["median_abs_error_pct"] == statistics.median(errs) == (sorted(errs)[1] + sorted(errs)[2]) / 2
    assert res["worst_abs_error_pct"] == max(errs)
    for strat in STRATEGIES:
        rs = [r for r in rows if r.strategy == strat]
        pb = min(rs, key=lambda r: r.predicted_step_s)
        mb = min(rs, key=lambda r: r.measured_median_s)
        bb = res["best_bucket"][strat]
        assert (bb["predicted_best_mb"], bb["measured_best_mb"]) == (pb.bucket_mb, mb.bucket_mb)
        gap = (pb.measured_median_s - mb.measured_median_s) / mb.measured_median_s * 100
        assert bb["predicted_best_measured_gap_pct"] == pytest.approx(gap, abs=1e-12) and gap >= 0
        assert bb["same"] == (pb.bucket_mb == mb.bucket_mb)
        # validate kept every row's steps: the gap has an interval (paired: one group), the verdict is its
        if bb["same"]:
            assert bb["gap_ci_pct"] is None and bb["within_noise"]
        else:
            assert bb["gap_ci_steps"] == "paired", bb  # one group, as many steps: an interval of paired steps
            assert bb["within_noise"] == (bb["gap_ci_pct"][0] <= 0)
    # the headline best bucket is torch DDP's
    assert res["best_bucket_strategy"] == "torch-ddp"
    assert res["best_bucket_mb_predicted"] == res["best_bucket"]["torch-ddp"]["predicted_best_mb"]
    assert res["best_bucket_mb_measured"] == res["best_bucket"]["torch-ddp"]["measured_best_mb"]
    inside = [r.predicted_p10_s <= r.measured_median_s <= r.predicted_p90_s for r in rows]
    assert res["interval_coverage"] == sum(inside) / len(rows) and res["n_with_interval"] == len(rows)
    # the summary again from the rows and the steps the run recorded (its validation_row records, in row order)
    recs = read_records(path, "validation_row")
    steps = [(r["step_times_s"], r["compute_step_times_s"]) for r in recs]
    assert [ValidationRow.from_dict(r["validation"]) for r in recs] == list(rows)
    again = summarize_rows(rows, steps)
    assert again == {k: res[k] for k in again}
    # without the steps the same, but for the verdict's interval (the p10-p90 overlap instead) and the compute-only
    # steps beside the row that moved most between the rounds (not known without them)
    bare = summarize_rows(rows)
    assert {k: v for k, v in bare.items() if k not in ("best_bucket", "rounds_apart")} == {
        k: v for k, v in again.items() if k not in ("best_bucket", "rounds_apart")
    }
    assert bare["rounds_apart"] == {**again["rounds_apart"], "worst_compute_apart_pct": None}
    assert all(bb["gap_ci_pct"] is None for bb in bare["best_bucket"].values())
    text = format_validation(res)
    n = res["n_with_interval"]
    assert "interval coverage:" in text
    assert f"over {n} independent configurations lands {coverage_band_chance(n):.0%} of the time" in text
    assert text.count("\n  torch-ddp ") == 2 and text.count("\n  bucketed ") == 2 and "best bucket (torch-ddp)" in text
    assert "\nrounds: a configuration's measured median moved between the 2 rounds by" in text
    # the table's last column: how far each row's measured median moved between the rounds
    assert "   error   noise  rounds\n" in text
    for r in rows:
        line = next(x for x in text.splitlines() if x.startswith(f"  {r.strategy:<11} {r.bucket_mb:>10g} "))
        assert line.endswith(f" {r.rounds_apart_pct:>6.1f}%")
    assert res["rounds_apart"]["worst_compute_apart_pct"] is not None  # the compute-only steps beside it, per round


def test_validation_jsonl_keeps_every_round_and_one_row_per_configuration(validated):
    res, path = validated
    recs = [json.loads(line) for line in path.read_text().splitlines()]  # every line parses
    assert read_records(path) == recs
    steps = [r for r in recs if r["kind"] == "ddp_step"]
    rows = [r for r in recs if r["kind"] == "validation_row"]
    # 2 rounds x (the compute-only baseline's two copies + 4 configurations), then one row per configuration
    assert len(steps) == 2 * (2 + 4) and [s["round"] for s in steps] == [0] * 6 + [1] * 6
    assert [s["baseline_copy"] for s in steps if s["strategy"] == "compute"] == [0, 1, 0, 1]
    # before each group of each round, the small calls beside the rows: kept, and split as the calibration's
    small = [r for r in recs if r["kind"] == "allreduce"]
    assert [(r["round"], r["group"], len(r["times_s"]), r["msg_bytes"]) for r in small] == [
        (0, 0, SMALL_CALLS, SMALL_CALL_BYTES),
        (1, 0, SMALL_CALLS, SMALL_CALL_BYTES),
    ]
    assert res["small_calls"]["validation"]["calls"] == 2 * SMALL_CALLS
    if sys.platform.startswith("linux"):  # the ranks' threads, gloo's network thread among them
        assert all("gloo_tcp_loop" in r["threads_ns"] and r["threads_calls"] == SMALL_CALLS for r in small)
        assert res["small_calls"]["validation"]["network_cpu_s"] > 0
    pooled = fit_call_modes([{**small[0], "times_s": small[0]["times_s"] + small[1]["times_s"], "threads_ns": {}}], 2)
    assert pooled is not None
    split = ("calls", "fast_median_s", "slow_share", "slow_late_median_s")
    assert {k: res["small_calls"]["validation"][k] for k in split} == {k: pooled[k] for k in split}
    assert [r["validation"] for r in rows] == [row.to_dict() for row in res["rows"]]
    assert [ValidationRow.from_dict(r["validation"]) for r in rows] == list(res["rows"])  # read back: equal rows
    for rec, row in zip(rows, res["rows"]):
        rounds = [s for s in steps if (s["strategy"], s["bucket_mb"]) == (row.strategy, row.bucket_mb)]
        assert len(rounds) == 2 and rounds[0]["model"] == TINY
        assert rec["step_times_s"] == rounds[0]["step_times_s"] + rounds[1]["step_times_s"]
        assert len(rec["step_times_s"]) == STEPS
        assert statistics.median(rec["step_times_s"]) == pytest.approx(row.measured_median_s, rel=1e-12)
        # each round's median, from the pooled steps as the rounds' records hold them, and the steps' mean
        assert row.round_medians_s == tuple(statistics.median(r["step_times_s"]) for r in rounds)
        assert row.measured_mean_s == pytest.approx(statistics.fmean(rec["step_times_s"]), rel=1e-12)
    assert res["rounds_apart"]["n_rounds"] == 2 and res["rounds_apart"]["n_rows"] == len(rows)


def test_replay_of_the_records_with_the_same_params_gives_the_same_rows(validated, calibrated, tmp_path):
    from dataclasses import replace

    from calibration.validate import replay_validation

    res, path = validated
    params = calibrated[0]
    again = replay_validation(path, params)
    assert again["rows"] == res["rows"]  # the same steps and params: the same predictions and intervals
    for k in ("interval_coverage", "median_abs_error_pct", "worst_abs_error_pct", "compute_scale", "model"):
        assert again[k] == res[k], k
    assert again["machine_noise"]["baseline_spread_pct"] == res["machine_noise"]["baseline_spread_pct"]
    # the best-bucket verdicts from the records' steps: the same intervals, paired the same way
    assert again["best_bucket"] == res["best_bucket"]
    # other params: the same measured medians, other predictions
    slower = replace(params, copy_bytes_per_s=params.copy_bytes_per_s / 100)
    other = replay_validation(path, slower)
    assert [r.measured_median_s for r in other["rows"]] == [r.measured_median_s for r in res["rows"]]
    pairs = list(zip(other["rows"], res["rows"]))
    assert all(o.predicted_step_s >= r.predicted_step_s for o, r in pairs)
    assert any(o.predicted_step_s > r.predicted_step_s for o, r in pairs)
    # an appended second run is refused, not pooled
    twice = tmp_path / "twice.jsonl"
    twice.write_text(path.read_text() * 2)
    with pytest.raises(ValueError, match="appears twice"):
        replay_validation(twice, params)
    with pytest.raises(ValueError, match="no validation_row or ddp_step records"):
        replay_validation(calibrated[2], params)
    # rows kept without their step records (stripped to save room): each row's rounds as the row stored them
    import json

    rows_only = tmp_path / "rows_only.jsonl"
    rows_only.write_text(
        "\n".join(ln for ln in path.read_text().splitlines() if json.loads(ln)["kind"] == "validation_row") + "\n"
    )
    bare = replay_validation(rows_only, params)
    assert [r.round_medians_s for r in bare["rows"]] == [r.round_medians_s for r in res["rows"]]
    assert all(r.round_medians_s for r in bare["rows"])
    assert bare["rounds_apart"]["n_rows"] == len(res["rows"])


def test_replay_of_a_run_that_died_before_its_rows_uses_its_step_records(validated, calibrated, tmp_path):
    """A run killed (or failing while predicting) after measuring keeps its ddp_step records, written as
    each round ended: replayed from them alone it gives the rows it would have written; a round cut short
    is left out, an appended second run refused."""
    import json

    from calibration.validate import replay_validation

    res, path = validated
    params = calibrated[0]
    lines = path.read_text().splitlines()
    steps = [ln for ln in lines if json.loads(ln)["kind"] == "ddp_step"]
    died = tmp_path / "died.jsonl"
    died.write_text("\n".join(steps) + "\n")
    again = replay_validation(died, params)
    assert again["rows"] == res["rows"]
    assert again["interval_coverage"] == res["interval_coverage"]
    assert "its step records: 2 of 2 round(s)" in again["method"]
    # died while predicting the second row: one row written, every configuration's steps there
    first_row = next(ln for ln in lines if json.loads(ln)["kind"] == "validation_row")
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(steps + [first_row]) + "\n")
    assert replay_validation(partial, params)["rows"] == res["rows"]
    # bench-ddp's step records (no group, no setting) are not a validate run's
    bench = tmp_path / "bench.jsonl"
    bench.write_text(
        "\n".join(
            json.dumps({k: v for k, v in json.loads(ln).items() if k not in ("group", "setting")}) for ln in steps
        )
        + "\n"
    )
    with pytest.raises(ValueError, match="no validation_row or ddp_step records"):
        replay_validation(bench, params)
    # a third round cut short after two of its records: the two complete rounds stand
    third = [json.dumps({**json.loads(ln), "round": 2}) for ln in steps[:2]]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(steps + third) + "\n")
    assert replay_validation(cut, params)["rows"] == res["rows"]
    twice = tmp_path / "twice_steps.jsonl"
    twice.write_text(died.read_text() * 2)
    with pytest.raises(ValueError, match="appears twice in one round"):
        replay_validation(twice, params)


# ---- bad input: torn records, empty measurement, foreign params --------------------
def _torn_copy(records: Path, dst: Path) -> tuple[Path, list[str]]:
    lines = records.read_text().splitlines()
    dst.write_text("\n".join(lines) + "\n" + lines[0][:57])  # a writer killed mid-line
    return dst, lines


def test_torn_last_line_is_skipped_with_a_warning_and_the_fit_is_unchanged(calibrated, tmp_path):
    params, _, records, _ = calibrated
    torn, lines = _torn_copy(records, tmp_path / "torn.jsonl")
    with pytest.warns(UserWarning, match=rf"torn\.jsonl: last line {len(lines) + 1} is incomplete"):
        recs = read_records(torn, "allreduce")
    assert fit_linear(recs, world_size=2, statistic="mean").w_bytes_per_s == params.linear.w_bytes_per_s


def test_appending_after_a_torn_line_loses_nothing(calibrated, tmp_path):
    """A calibrate killed mid-write, then run again on the same records file: every whole record stays readable."""
    _, _, records, _ = calibrated
    torn, lines = _torn_copy(records, tmp_path / "torn.jsonl")
    new = make_record("allreduce", {"host": "test"}, msg_bytes=8, world_size=2, times_s=[1e-4])
    with pytest.warns(UserWarning, match="removed an incomplete last line"):
        with RecordWriter(torn) as w:
            w.write(new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the file is whole again: no warning, no malformed line
        back = read_records(torn)
    assert back == [json.loads(line) for line in lines] + [new]
    # a last record that is whole but lacks its newline is kept and terminated, not cut
    whole = tmp_path / "whole.jsonl"
    whole.write_text("\n".join(lines))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with RecordWriter(whole) as w:
            w.write(new)
        assert read_records(whole) == [json.loads(line) for line in lines] + [new]


def test_records_from_before_the_in_step_copy_probe_refit_with_the_warm_block_rate(calibrated, tmp_path):
    _, _, records, _ = calibrated
    old = tmp_path / "before_copy_in_step.jsonl"
    old.write_text(
        "".join(line + "\n" for line in records.read_text().splitlines() if '"kind":"copy_in_step"' not in line)
    )
    (mem,) = [r for r in read_records(old) if r["kind"] == "memcpy"]
    refit = refit_from_records(old)
    assert refit.copy_bytes_per_s == mem["copy_bytes_per_s"]
    assert refit.scale_bytes_per_s is None and refit.cost_model().scale_bytes_per_s is None  # nothing timed it


def test_refit_reads_the_division_rate_back(calibrated):
    params, _, records, _ = calibrated
    refit = refit_from_records(records)
    assert params.scale_bytes_per_s and refit.scale_bytes_per_s == params.scale_bytes_per_s


def test_records_from_before_the_cold_call_probe_refit_without_the_term(calibrated, tmp_path):
    params, _, records, _ = calibrated
    old = tmp_path / "before_cold_call.jsonl"
    old.write_text(
        "".join(line + "\n" for line in records.read_text().splitlines() if '"kind":"cold_call"' not in line)
    )
    refit = refit_from_records(old)
    assert refit.cold_call() == (0.0, 0.0) and "cold_call" not in refit.probes
    assert refit.cost_model().cold_call_s == 0.0 and params.probes["cold_call"]


def test_empty_measurement_is_a_clear_error(calibrated, tmp_path, capsys):
    _, _, records, _ = calibrated
    no_ar = tmp_path / "no_allreduce.jsonl"
    no_ar.write_text(
        "".join(line + "\n" for line in records.read_text().splitlines() if '"kind":"allreduce"' not in line)
    )
    kinds = (
        r"kinds found: broadcast, broadcast_switch, cold_call, contention, copy_in_step, memcpy, profile, "
        r"sharded_probe, step_probe, step_probe_check, step_probe_fine"
    )
    with pytest.raises(ValueError, match=rf"none of the 13 records is an all-reduce measurement \({kinds}\)"):
        fit_linear(read_records(no_ar))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for path, msg in (
        (no_ar, "none of the 13 records is an all-reduce measurement"),
        (empty, "no records given: the measurement is empty"),
    ):
        assert ddpsim(["plot", "--allreduce", str(path), "--plot-dir", str(tmp_path / "plots")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"ddpsim: error: {path}: {msg}") and err.count("\n") == 1, err
    assert not (tmp_path / "plots" / "allreduce_fit.png").exists()


@pytest.fixture
def no_ranks(monkeypatch):
    """Fail the test if a command starts ranks (bad input must be caught before that)."""

    def refuse(*a, **k):
        raise AssertionError("ranks were started")

    monkeypatch.setattr(calibrate_mod, "open_pool", refuse)


def test_params_of_another_schema_exit_2_with_one_line(calibrated, tmp_path, capsys, no_ranks):
    _, path, _, _ = calibrated
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(json.loads(path.read_text()), schema="ddpsim.params/0")))
    assert ddpsim(["validate", "--params", str(bad), "--model", TINY]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"ddpsim: error: params {bad}: params schema is 'ddpsim.params/0'; this ddpsim reads "
        "'ddpsim.params/1' (re-run ddpsim calibrate)\n"
    )
    # params of another network: refused before any rank starts (they were once used for it, with no word)
    assert ddpsim(["validate", "--params", str(path), "--model", TINY, "--link-mbit", "100"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"ddpsim: error: --params {path} were fitted on loopback, and this validation runs over 100 Mbit/s links: "
        "give params calibrated there, or leave --params out to calibrate first\n"
    )
    # params of another model: refused before any rank starts
    assert ddpsim(["validate", "--params", str(path), "--model", "gpt"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"ddpsim: error: params were calibrated on model '{TINY}', not 'gpt'") and err.count("\n") == 1
    )


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["calibrate", "--world-size", "0"], "argument --world-size: must be >= 1, got 0"),
        (["validate", "--world-size", "0"], "argument --world-size: must be >= 1, got 0"),
        (["validate", "--min-seconds", "-1"], "argument --min-seconds: must be >= 0, got -1"),
        (["tune", "--min-seconds", "nan"], "argument --min-seconds: must be a finite number"),
        (["calibrate", "--world-size", "1"], "calibration needs at least 2 ranks to communicate, got --world-size 1"),
        (["calibrate", "--sizes", "4K"], "argument --sizes: give at least two message sizes"),
        (["calibrate", "--sizes", "4K,6"], "argument --sizes: message sizes must be whole float32 elements"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, msg, capsys, no_ranks, tmp_path):
    assert _exit_code(argv + ["--out", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ddpsim: error: {msg}") and err.count("\n") == 1 and "Traceback" not in err


def _exit_code(argv: list[str]) -> int:
    """``ddpsim``'s exit code, whether argparse exits (usage errors) or the command returns it."""
    try:
        return ddpsim(argv)
    except SystemExit as e:
        return e.code


def test_link_mbit_without_netns_is_skipped(calibrated, tmp_path, capsys, monkeypatch, no_ranks):
    def unavailable():
        raise netns.NetnsUnavailable("emulated links need root (simulated by the test)")

    monkeypatch.setattr(netns, "require_netns", unavailable)
    out = tmp_path / "p.json"
    assert ddpsim(["calibrate", "--model", TINY, "--link-mbit", "100", "--out", str(out), "--json"]) == 0
    cap = capsys.readouterr()
    reason = "emulated links need root (simulated by the test)"
    assert cap.err == f"ddpsim calibrate: skipped 100 Mbit/s: {reason}\n"
    assert json.loads(cap.out)["results"] == {"skipped": [{"link_mbit": 100.0, "reason": reason}]}  # stdout stays JSON
    assert not out.exists()
    _, path, _, _ = calibrated
    assert ddpsim(["validate", "--params", str(path), "--model", TINY, "--link-mbit", "100,400"]) == 0
    cap = capsys.readouterr()
    assert cap.err.splitlines() == [f"ddpsim validate: skipped {r} Mbit/s: {reason}" for r in (100, 400)]
    assert cap.out == ""


def test_validation_keeps_rounds_measured_before_a_failure(calibrated, tmp_path, monkeypatch):
    """Records are appended as each round ends: a run that fails in its second round keeps the first."""
    params = calibrated[0]
    calls = []

    def fake_interleaved(pool, model, cfgs, bs, steps, warmup, optimizer, block):
        calls.append([c[:2] for c in cfgs])
        assert block == DEFAULT_BLOCK  # the tiny model's step is short: a training job's order
        if len(calls) == 2:
            raise RunFailure("rank 1 died (simulated)")
        return [
            InterleavedResult(
                strategy=c[0],
                bucket_mb=c[1],
                bucket_cap_mb_list=None,
                model=model,
                batch_size=bs,
                world_size=2,
                steps=steps,
                warmup=warmup,
                step_times_s=(0.020,) * steps,
                median_s=0.020,
                p10_s=0.020,
                p90_s=0.020,
                ratio_to_first=1.0,
                ratios_to_first=(1.0,) * steps,
            )
            for c in cfgs
        ]

    monkeypatch.setattr(bench_ddp, "measure_interleaved", fake_interleaved)
    fake_pool = type("FakePool", (), {"world_size": 2, "backend": "gloo"})()
    out = tmp_path / "validation.jsonl"
    spec = ValidateSpec(
        model=TINY, strategies=("torch-ddp",), bucket_mb=BUCKETS_MB, steps=4, rounds=2, out=str(out), small_calls=0
    )  # the fake pool steps only
    with pytest.raises(RunFailure, match="simulated"):
        validate_on_pool(fake_pool, params, spec, lambda msg: None)
    kept = read_records(out)
    assert calls[0] == [("torch-ddp", 0.0625), ("compute", None), ("torch-ddp", 1.0)]  # the baseline off the ends
    assert [(r["round"], r["strategy"], r["bucket_mb"]) for r in kept] == [
        (0, "torch-ddp", 0.0625),
        (0, "compute", None),
        (0, "torch-ddp", 1.0),
    ]
    assert all(r["step_times_s"] == [0.020, 0.020] for r in kept)


# ---- the CLI contract (one subprocess each: starting ranks costs seconds) -------------
def _ddpsim_json(args: list[str], cwd: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "ddpsim", *args, "--json", "--quiet"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = json.loads(proc.stdout)
    assert env["schema"] == "ddpsim.cli/1" and env["command"] == args[0]
    return env["results"]


def test_cli_calibrate_leaves_the_check_probe_out_when_asked(tmp_path, monkeypatch):
    """`--no-step-probe-check` reaches the calibration's spec (on by default); no ranks are started here."""
    seen = []

    def fake(spec, progress=True):
        seen.append(spec.step_probe_check)
        raise ValueError("stopped before measuring")

    monkeypatch.setattr("calibration.calibrate.calibrate", fake)
    base = ["calibrate", "--model", TINY, "--out", str(tmp_path / "p.json"), "--records", str(tmp_path / "r.jsonl")]
    assert ddpsim(base) == 2 and ddpsim([*base, "--no-step-probe-check"]) == 2
    assert seen == [True, False]


def test_cli_calibrate_json_contract(tmp_path):
    out, recs = tmp_path / "params.json", tmp_path / "calibration.jsonl"
    d = _ddpsim_json(
        [
            "calibrate",
            "--model",
            TINY,
            "--sizes",
            "4K,64K",
            "--profile-steps",
            "3",
            "--contention-steps",
            "3",
            "--cold-call-reps",
            "3",
            "--step-probe-steps",
            "4",
            "--step-probe-seconds",
            "0",
            "--out",
            str(out),
            "--records",
            str(recs),
        ],
        tmp_path,
    )
    assert _positive_finite(d["o_us"]) and _positive_finite(d["w_gbps"])  # units as in `ddpsim predict`
    params = Params.load(out)
    assert (d["o_us"], d["w_gbps"], d["params_file"]) == (params.o_us, params.w_gbps, str(out))
    assert d["linear"]["sizes_bytes"] == [4096, 65536]
    # the sweep, then the same sizes as back-to-back streams
    assert [(r["impl"], r["msg_bytes"]) for r in read_records(recs, "allreduce")] == [
        ("native", 4096),
        ("native", 65536),
        ("stream", 4096),
        ("stream", 65536),
    ]
    (cold,) = read_records(recs, "cold_call")
    assert [len(r["after_call_s"]) for r in cold["per_rank"]] == [3, 3]  # --cold-call-reps
    assert [len(r["timeline"]["step_times_s"]) for r in read_records(recs) if r["kind"].startswith("step_probe")] == [
        4,
        4,
        4,
    ]  # --step-probe-steps at each of the three caps, exactly with --step-probe-seconds 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calibration.jsonl", "params.json"]  # nothing else written
    # --refit: the same fits from the records alone, no ranks started
    again = _ddpsim_json(["calibrate", "--refit", str(recs), "--out", str(tmp_path / "refit.json")], tmp_path)
    assert again["params_file"] == str(tmp_path / "refit.json")
    assert Params.load(tmp_path / "refit.json").to_dict() == params.to_dict()


def test_cli_validate_json_contract(calibrated, tmp_path):
    _, path, _, _ = calibrated
    d = _ddpsim_json(
        [
            "validate",
            "--params",
            str(path),
            "--model",
            TINY,
            "--strategy",
            "torch-ddp",
            "--bucket-mb",
            "0.0625,1",
            "--steps",
            "3",
            "--min-seconds",
            "0",
            "--warmup",
            "1",
            "--out",
            str(tmp_path / "v.json"),
            "--records",
            str(tmp_path / "v.jsonl"),
        ],
        tmp_path,
    )
    rows = d["rows"]
    assert [(r["strategy"], r["bucket_mb"]) for r in rows] == [("torch-ddp", 0.0625), ("torch-ddp", 1.0)]
    for r in rows:
        assert _positive_finite(r["measured_median_s"]) and _positive_finite(r["predicted_step_s"])
    errs = [abs((r["predicted_step_s"] - r["measured_median_s"]) / r["measured_median_s"] * 100) for r in rows]
    assert d["median_abs_error_pct"] == pytest.approx((errs[0] + errs[1]) / 2, rel=1e-12)
    assert d["worst_abs_error_pct"] == pytest.approx(max(errs), rel=1e-12)
    assert d["best_bucket_mb_predicted"] == min(rows, key=lambda r: r["predicted_step_s"])["bucket_mb"]
    assert d["best_bucket_mb_measured"] == min(rows, key=lambda r: r["measured_median_s"])["bucket_mb"]
    saved = json.loads((tmp_path / "v.json").read_text())
    assert d["result_file"] == str(tmp_path / "v.json") and saved == {k: v for k, v in d.items() if k != "result_file"}
    kinds = Counter(json.loads(line)["kind"] for line in (tmp_path / "v.jsonl").read_text().splitlines())
    # 2 rounds x (compute-only + 2 configurations), and before each round's group its small calls
    assert kinds == {"validation_row": 2, "ddp_step": 2 * (1 + 2), "allreduce": 2}
    assert d["small_calls"]["validation"]["calls"] == 2 * SMALL_CALLS and d["small_calls"]["msg_bytes"] == 4096


def test_calibrate_across_world_sizes_probes_each_p_and_refits_to_the_same_params(tmp_path, monkeypatch):
    """calibrate --world-size 2,3: the all-reduce and the in-step probe at p = 3 too; the records alone
    give the same params back (refit), contention at p = 3 is p = 3's."""
    from calibration.calibrate import calibrate

    def probe_steps(profile, cost, world_size, bucket_mb, steps, min_seconds):  # p = 3's probe: one step more
        return steps + (world_size == 3)

    monkeypatch.setattr("calibration.step_probe.probe_steps", probe_steps)

    spec = CalibrateSpec(
        model=TINY,
        world_sizes=(2, 3),
        sizes_bytes=SIZES,
        profile_steps=STEPS,
        contention_steps=STEPS,
        step_probe_steps=STEPS,
        cold_call_reps=STEPS,
        records=str(tmp_path / "calibration.jsonl"),
    )
    params = calibrate(spec, progress=False)
    assert params.measured_world_sizes == (2, 3) and set(params.in_step_fits()) == {2, 3}
    at3 = params.probes["in_step_by_p"]["3"]
    assert params.cost_model(world_size=3).comm_contention == at3["comm_contention_c"]
    assert params.contention_at(3)[2] == "contention measured at p = 2, 3; p = 3 measured"
    probes = [r for r in read_records(spec.records) if r["kind"] == "step_probe"]
    assert [r["env"]["world_size"] for r in probes] == [2, 3]
    assert [len(r["timeline"]["step_times_s"]) for r in probes] == [STEPS, STEPS + 1]
    assert refit_from_records(spec.records).to_dict() == params.to_dict()


def test_a_malformed_sharded_probe_record_is_refused_naming_the_file(calibrated, tmp_path):
    _, _, records, _ = calibrated
    bad = tmp_path / "bad_sharded.jsonl"
    lines = []
    for line in records.read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "sharded_probe":
            r["probe"]["bucket_mb"] = "four"
        lines.append(json.dumps(r) + "\n")
    bad.write_text("".join(lines))
    with pytest.raises(ValueError, match=rf"{bad}: a sharded-step probe record that is not one"):
        refit_from_records(bad)
    old = tmp_path / "before_sharded_probe.jsonl"  # records from before the probe: refit without the term
    old.write_text("".join(ln + "\n" for ln in records.read_text().splitlines() if '"kind":"sharded_probe"' not in ln))
    refit = refit_from_records(old)
    assert "sharded_step" not in refit.probes and refit.cost_model().broadcast_step_extra_s == 0.0
