"""The arithmetic of measured-vs-predicted timelines, on synthetic timelines with known answers (no torch)."""

from __future__ import annotations

import json

import pytest

from calibration.timeline import (
    decompose,
    predicted_timeline,
    representative_step,
    step_terms,
    timeline_outputs,
    timeline_trace,
)
from simulator.units import MIB


def _tl(bwd_start, bwd_end, buckets, opt_start, opt_end, step):
    return {
        "backward_start_s": bwd_start,
        "backward_end_s": bwd_end,
        "optimizer_start_s": opt_start,
        "optimizer_end_s": opt_end,
        "step_s": step,
        "buckets": [
            {"index": i, "bytes": nb, "n_params": 1, "ready_s": r, "launch_s": la, "complete_s": c}
            for i, (nb, r, la, c) in enumerate(buckets)
        ],
    }


# measured: forward 10 ms, backward to 50 ms; bucket 0 ready 20 launched 22 done 35; bucket 1 ready 48,
# launched 51, done 60 (tail 10 ms past backward end); finalize 60->63; optimizer 63->65; step 66
MEAS = _tl(0.010, 0.050, [(1000, 0.020, 0.022, 0.035), (500, 0.048, 0.051, 0.060)], 0.063, 0.065, 0.066)
# predicted: forward 10, backward to 45; bucket 0 ready 20 launched 20 done 25; bucket 1 ready 44 launched 44
# done 49 (tail 4); finalize 49->50; optimizer 50->52; step 52
PRED = _tl(0.010, 0.045, [(1000, 0.020, 0.020, 0.025), (500, 0.044, 0.044, 0.049)], 0.050, 0.052, 0.052)


def test_step_terms_add_up_exactly():
    t = step_terms(MEAS)
    assert t["compute_s"] == pytest.approx(0.050)
    assert t["forward_s"] == pytest.approx(0.010) and t["backward_s"] == pytest.approx(0.040)
    assert t["exposed_tail_s"] == pytest.approx(0.010)
    assert t["finalize_s"] == pytest.approx(0.003)
    assert t["optimizer_s"] == pytest.approx(0.002)
    assert t["other_s"] == pytest.approx(0.001)
    parts = t["compute_s"] + t["exposed_tail_s"] + t["finalize_s"] + t["optimizer_s"] + t["other_s"]
    assert parts == pytest.approx(t["step_s"])
    assert [b["duration_s"] for b in t["buckets"]] == pytest.approx([0.013, 0.009])
    assert [b["launch_delay_s"] for b in t["buckets"]] == pytest.approx([0.002, 0.003])
    assert t["comm_sum_s"] == pytest.approx(0.022) and t["launch_delay_sum_s"] == pytest.approx(0.005)


def test_no_tail_when_communication_ends_before_backward():
    tl = _tl(0.01, 0.05, [(8, 0.02, 0.02, 0.03)], 0.05, 0.06, 0.06)
    t = step_terms(tl)
    assert t["exposed_tail_s"] == 0.0 and t["finalize_s"] == pytest.approx(0.0)


def test_decompose_known_errors():
    d = decompose([MEAS], PRED)
    e = {k: v["error_s"] for k, v in d["terms"].items()}
    assert e["step_s"] == pytest.approx(-0.014)
    assert e["compute_s"] == pytest.approx(-0.005)
    assert e["exposed_tail_s"] == pytest.approx(-0.006)
    assert e["finalize_s"] == pytest.approx(-0.002)
    assert e["optimizer_s"] == pytest.approx(0.0)
    assert e["other_s"] == pytest.approx(-0.001)
    assert sum(e[k] for k in ("compute_s", "exposed_tail_s", "finalize_s", "optimizer_s", "other_s")) == pytest.approx(
        e["step_s"]
    )
    assert e["comm_sum_s"] == pytest.approx(0.010 - 0.022)
    assert e["launch_delay_sum_s"] == pytest.approx(-0.005)
    assert d["largest_term"] == "exposed_tail_s"
    assert d["terms"]["step_s"]["error_pct_of_step"] == pytest.approx(-0.014 / 0.066 * 100)
    b0, b1 = d["buckets"]
    assert b0["measured_duration_s"] == pytest.approx(0.013) and b0["predicted_duration_s"] == pytest.approx(0.005)
    assert b1["duration_error_s"] == pytest.approx(0.005 - 0.009)
    assert b1["measured_launch_delay_s"] == pytest.approx(0.003) and b1["predicted_launch_delay_s"] == 0.0
    assert b0["bytes_match"] and b1["bytes_match"]


def test_decompose_medians_over_steps_and_bucket_mismatch():
    slow = _tl(0.010, 0.070, [(1000, 0.020, 0.022, 0.035), (500, 0.048, 0.051, 0.080)], 0.083, 0.085, 0.086)
    fast = _tl(0.010, 0.040, [(1000, 0.020, 0.022, 0.035), (500, 0.038, 0.041, 0.045)], 0.046, 0.048, 0.049)
    d = decompose([slow, MEAS, fast], PRED)
    assert d["n_measured_steps"] == 3
    assert d["terms"]["compute_s"]["measured_s"] == pytest.approx(0.050)  # the median step's
    assert d["terms"]["step_s"]["measured_s"] == pytest.approx(0.066)
    other = dict(PRED, buckets=[dict(PRED["buckets"][0], bytes=999)])
    d2 = decompose([MEAS], other)
    assert d2["n_buckets_measured"] == 2 and d2["n_buckets_predicted"] == 1 and not d2["buckets"][0]["bytes_match"]


def test_representative_step_is_lower_median_on_slowest_rank():
    steps = [0.05, 0.09, 0.06, 0.07]
    per_rank = [[0.05, 0.09, 0.055, 0.07], [0.04, 0.08, 0.06, 0.06]]
    assert representative_step(steps, per_rank) == (2, 1)


def test_trace_has_both_processes_and_args(tmp_path):
    tr = timeline_trace(MEAS, PRED, {"model": "x"})
    names = {e["args"]["name"] for e in tr["traceEvents"] if e.get("name") == "process_name"}
    assert names == {"measured", "predicted"}
    ar = [e for e in tr["traceEvents"] if e.get("cat") == "allreduce"]
    assert len(ar) == 4 and all({"bytes", "bucket_index"} <= set(e["args"]) for e in ar)
    m0 = next(e for e in ar if e["pid"] == 1 and e["args"]["bucket_index"] == 0)
    assert m0["ts"] == pytest.approx(22000) and m0["dur"] == pytest.approx(13000) and m0["args"]["bytes"] == 1000
    rec = {
        "model": "m",
        "strategy": "torch-ddp",
        "bucket_mb": 1.0,
        "world_size": 2,
        "step_times_s": [0.066],
        "rank_step_times_s": [[0.066], [0.06]],
        "rank_timelines": [[MEAS], [MEAS]],
    }
    d = timeline_outputs(rec, PRED, tmp_path, "m_torch-ddp_1MB_p2")
    assert json.loads((tmp_path / "m_torch-ddp_1MB_p2.trace.json").read_text())["traceEvents"]
    assert (tmp_path / "m_torch-ddp_1MB_p2.png").stat().st_size > 1000
    saved = json.loads((tmp_path / "m_torch-ddp_1MB_p2.decomposition.json").read_text())
    assert saved["step_error_s"] == pytest.approx(d["step_error_s"]) == pytest.approx(-0.014)


def test_predicted_timeline_from_the_simulator():
    from simulator.network import CostModel
    from simulator.profile import GradProfile, ParamSpec
    from simulator.strategies import StrategySpec

    params = tuple(ParamSpec(f"p{i}", 262144, "float32", 0.002) for i in range(8))  # 1 MiB each, 2 ms backward each
    prof = GradProfile("toy", params, forward_s=0.005, optimizer_s=0.001)
    cost = CostModel.linear(0.0005, 1e9, 2)
    tl = predicted_timeline(prof, cost, StrategySpec("torch-ddp", bucket_mb=2.0), 2)
    assert [b["bytes"] for b in tl["buckets"]] == [2 * MIB] * 4
    assert tl["backward_start_s"] == pytest.approx(0.005)
    for b in tl["buckets"]:
        assert b["ready_s"] <= b["launch_s"] <= b["complete_s"]
    # bucket 0 (p7, p6) ready after two parameters' backward
    assert tl["buckets"][0]["ready_s"] == pytest.approx(0.005 + 0.004)
    t = step_terms(tl)
    assert t["compute_s"] + t["exposed_tail_s"] + t["finalize_s"] + t["optimizer_s"] + t["other_s"] == pytest.approx(
        tl["step_s"]
    )
    assert t["optimizer_s"] == pytest.approx(0.001)
    # sharded: the measured optimizer marks span ShardedOptimizer.step, broadcasts included; so does the prediction's
    sh = predicted_timeline(prof, cost, StrategySpec("sharded", bucket_mb=2.0), 2)
    ts = step_terms(sh)
    opt_events = [e for e in sh["events"] if e[3] == "optimizer"]
    local = opt_events[0][1] - opt_events[0][0]  # the local step on a 1/p shard
    assert local == pytest.approx(0.001 / 2)
    # then one blocking broadcast per parameter, each its latency and transfer parts (the engine's own rule)
    bcast = 8 * sum(cost.broadcast_parts_s(MIB, 2))
    assert ts["optimizer_s"] == pytest.approx(local + bcast) and ts["other_s"] == pytest.approx(0.0)
