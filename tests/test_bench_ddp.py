"""DDP step timing (measure_ddp), gradient-ready profiles, and the check / profile / bench-ddp commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from ddpsim.cli import main as ddpsim  # noqa: E402
from realrun.bench_ddp import combine_records, format_scaling, format_table, measure_compute, measure_ddp  # noqa: E402
from realrun.profile_grads import profile_grads  # noqa: E402
from realrun.records import read_records  # noqa: E402
from realrun.stats import summarize  # noqa: E402
from realrun.step_record import DDPStepRecord  # noqa: E402
from simulator.profile import GradProfile  # noqa: E402
from simulator.units import MIB

ROOT = Path(__file__).resolve().parent.parent
TINY_GPT = "gpt:n_layer=2,n_embd=32,n_head=2,block_size=16,vocab_size=64"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pool(rank_pool):
    return rank_pool  # the session's shared 2-rank pool (conftest.py)


def test_measure_ddp_record(pool, tmp_path):
    comp = measure_compute(pool, TINY_GPT, batch_size=4, steps=5, warmup=1)
    step = measure_ddp(
        pool, TINY_GPT, "torch-ddp", bucket_mb=0.01, batch_size=4, steps=5, warmup=2, compute=comp, trace_dir=tmp_path
    )
    assert isinstance(step, DDPStepRecord) and step.median_s == summarize(list(step.step_times_s)).median_s
    rec = json.loads(json.dumps(step.to_dict()))  # the record as written: the keys it always had, in order
    assert list(rec) == [
        "schema",
        "kind",
        "time_unix_s",
        "env",
        "model",
        "strategy",
        "bucket_mb",
        "bucket_cap_mb_list",
        "world_size",
        "backend",
        "batch_size",
        "optimizer",
        "steps",
        "warmup",
        "step_times_s",
        "rank_step_times_s",
        "median_s",
        "p10_s",
        "p90_s",
        "compute_step_times_s",
        "compute_median_s",
        "compute_p10_s",
        "compute_p90_s",
        "exposed_comm_s",
        "exposed_comm_share",
        "samples_per_s",
        "tokens_per_s",
        "tokens_per_sample",
        "peak_mem_bytes",
        "rss_end_bytes",
        "link_mbit",
        "trace_files",
    ]
    assert rec["kind"] == "ddp_step" and rec["schema"] == "ddpsim.record/1"
    assert (rec["model"], rec["strategy"], rec["bucket_mb"], rec["world_size"], rec["backend"]) == (
        TINY_GPT,
        "torch-ddp",
        0.01,
        2,
        "gloo",
    )
    # the step time of a step is the slower rank's; statistics are of those raw times
    per_rank = rec["rank_step_times_s"]
    assert rec["step_times_s"] == [max(a, b) for a, b in zip(*per_rank)] and len(rec["step_times_s"]) == 5
    s = summarize(rec["step_times_s"])
    assert (rec["median_s"], rec["p10_s"], rec["p90_s"]) == (s.median_s, s.p10_s, s.p90_s)
    assert rec["exposed_comm_s"] == pytest.approx(rec["median_s"] - comp.median_s)
    assert rec["compute_step_times_s"] == list(comp.step_times_s) and rec["compute_median_s"] == comp.median_s
    assert rec["samples_per_s"] == pytest.approx(2 * 4 / rec["median_s"])
    assert rec["tokens_per_s"] == pytest.approx(2 * 4 * 16 / rec["median_s"])
    assert rec["peak_mem_bytes"] > 10 * MIB and rec["link_mbit"] is None and rec["bucket_cap_mb_list"] is None
    assert rec["env"]["torch"] == torch.__version__ and rec["env"]["threads_per_rank"] == pool.threads_per_rank
    trace = json.loads(Path(rec["trace_files"][0]).read_text())
    assert any("backward" in str(e.get("name", "")).lower() for e in trace["traceEvents"])
    json.dumps(rec)  # a record must be JSON


def test_measure_ddp_strategies_without_buckets_record_null(pool):
    rec = measure_ddp(pool, TINY_GPT, "naive", bucket_mb=8, batch_size=2, steps=2, warmup=1)
    assert rec.bucket_mb is None and rec.compute_median_s > 0
    with pytest.raises(ValueError, match="needs a bucket size"):
        measure_ddp(pool, TINY_GPT, "bucketed", steps=2)
    with pytest.raises(ValueError, match="unknown strategy"):
        measure_ddp(pool, TINY_GPT, "ring", steps=2)


def _rec(strategy, bucket, times, comp, world=2, rnd=0):
    return {
        "model": "m",
        "strategy": strategy,
        "bucket_mb": bucket,
        "bucket_cap_mb_list": None,
        "world_size": world,
        "batch_size": 4,
        "optimizer": "sgd",
        "link_mbit": None,
        "steps": len(times),
        "step_times_s": times,
        "rank_step_times_s": [times, times],
        "compute_step_times_s": comp,
        "tokens_per_sample": 10,
        "peak_mem_bytes": 100 + rnd,
        "round": rnd,
        "median_s": 0,
        "p10_s": 0,
        "p90_s": 0,
        "compute_median_s": 0,
        "exposed_comm_s": 0,
        "samples_per_s": 0,
        "tokens_per_s": 0,
    }


def test_combine_records_concatenates_rounds():
    a = _rec("bucketed", 1.0, [0.10, 0.30], [0.05, 0.07], rnd=0)
    b = _rec("bucketed", 1.0, [0.20], [0.06], rnd=1)
    c = _rec("bucketed", 4.0, [0.5], [0.06])
    out = combine_records([a, b, c])
    assert len(out) == 2 and out[0]["rounds"] == 2 and out[1]["rounds"] == 1
    m = out[0]
    assert m["step_times_s"] == [0.10, 0.30, 0.20] and m["median_s"] == pytest.approx(0.20)
    assert m["compute_median_s"] == pytest.approx(0.06) and m["exposed_comm_s"] == pytest.approx(0.14)
    assert m["samples_per_s"] == pytest.approx(2 * 4 / 0.20) and m["tokens_per_s"] == pytest.approx(400.0)
    assert m["peak_mem_bytes"] == 101 and "round" not in m
    assert "bucketed" in format_table(out)
    scaling = format_scaling(
        combine_records([_rec("flat", None, [0.1], [0.1], world=1), _rec("flat", None, [0.1], [0.1], world=2)])
    )
    # P=1: 4/0.1 = 40 samples/s; P=2: 80 samples/s -> speed-up 2.00, efficiency 100%
    assert " 2.00" in scaling and "100.0%" in scaling


def test_bench_ddp_csv_is_the_combined_table(tmp_path, capsys):
    import argparse
    import csv

    from ddpsim.ddp_commands import BENCH_CSV_COLUMNS, _report_bench

    recs = [_rec("bucketed", 1.0, [0.10, 0.30], [0.05, 0.07]), _rec("bucketed", 1.0, [0.20], [0.06], rnd=1)]
    args = argparse.Namespace(json=False, out=None, csv="-")
    assert _report_bench(recs, args, [2]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))  # the two rounds combined: one row
    assert list(rows[0]) == BENCH_CSV_COLUMNS and len(rows) == 1
    assert float(rows[0]["median_s"]) == pytest.approx(0.20) and float(rows[0]["exposed_comm_s"]) == pytest.approx(0.14)
    assert rows[0]["rounds"] == "2" and rows[0]["bucket_cap_mb_list"] == ""


def test_profile_grads(pool, tmp_path):
    prof = profile_grads(pool, TINY_GPT, batch_size=4, steps=6, warmup=2, optimizer="adam")
    names = [p.name for p in prof.params]
    assert names[0] == "wte.weight" and "lm_head.weight" not in names  # tied: one parameter
    assert sorted(prof.ready_order) == list(range(len(names)))
    # the tied embedding's gradient is complete only after the embedding's backward: it is (among) the last
    assert names.index("wte.weight") in prof.ready_order[-3:]
    info = prof.env["profile"]
    assert info["optimizer"] == "adam" and info["ranks"] == 2
    # ready times are scaled to the backward without hooks: the last one plus the tail is the hooked
    # median less the hooks' paired cost
    hookfree = info["backward_hooked_s"] - max(0.0, info["hook_overhead_s"])
    assert prof.backward_tail_s == info["backward_tail_s"] >= 0
    assert max(prof.ready_times_s()) + prof.backward_tail_s == pytest.approx(hookfree, rel=1e-9)
    assert prof.backward_s == pytest.approx(hookfree, rel=1e-9)
    assert [len(r) for r in info["raw_backward_hooked_s"]] == [6, 6]
    assert prof.forward_s > 0 and prof.optimizer_s > 0 and prof.samples_per_step == 4 and prof.tokens_per_sample == 16
    prof.save(tmp_path / "p.json")
    again = GradProfile.load(tmp_path / "p.json")
    assert again.ready_order == prof.ready_order and again.total_grad_bytes == prof.total_grad_bytes


def test_hook_cost_is_paired_so_a_machine_switching_states_cancels():
    """Hooked and hook-free steps alternate; the machine runs 10 pairs slow (62 ms) then 10 fast (35 ms),
    hooks cost 2 ms a step. A difference of the two medians takes each from whichever state its middle
    falls in; the median of paired differences is the hooks' cost."""
    import numpy as np

    from realrun.profile_grads import _combine, paired_differences

    rng = np.random.default_rng(3)
    state = np.array([0.062] * 10 + [0.035] * 10)
    hooked = list(state + 0.002 + rng.normal(0, 0.002, 20))
    free = list(state + rng.normal(0, 0.002, 20))
    unpaired = float(np.median(hooked) - np.median(free))
    assert abs(unpaired - 0.002) > 0.0015  # the old estimate, on this seed's steps: -0.1 ms
    rank = {
        "forward_s": [0.01] * 20,
        "optimizer_s": [0.001] * 20,
        "backward_hooked_s": hooked,
        "backward_free_s": free,
        "ready_s": {0: 0.02, 1: 0.03},
        "params": [
            {"name": n, "numel": 10, "dtype": "float32", "shape": [10], "requires_grad": True} for n in ("a", "b")
        ],
        "env": {},
    }
    prof = _combine([rank, rank], "m", 4, 1, 20, 2, "sgd", ranks=2, threads=1)
    info = prof.env["profile"]
    assert info["hook_overhead_s"] == pytest.approx(0.002, abs=0.0008)  # paired: 1.6 ms
    assert info["hook_overhead_s"] == pytest.approx(float(np.median(paired_differences(hooked, free))))
    assert prof.backward_s == pytest.approx(info["backward_hooked_s"] - info["hook_overhead_s"], rel=1e-9)
    # hook-free steps that ran longer (noise): the hooks cost nothing, the backward is the hooked one
    neg = dict(rank, backward_free_s=[h + 0.001 for h in hooked])
    prof = _combine([neg, neg], "m", 4, 1, 20, 2, "sgd", ranks=2, threads=1)
    assert prof.env["profile"]["hook_overhead_s"] == pytest.approx(-0.001)
    assert prof.backward_s == pytest.approx(prof.env["profile"]["backward_hooked_s"], rel=1e-9)
    with pytest.raises(ValueError, match="as many hooked as hook-free"):
        paired_differences([0.1, 0.2], [0.1])


# ---- command line ---------------------------------------------------------------------------


def test_bench_ddp_command(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    rc = ddpsim(
        [
            "bench-ddp",
            "--model",
            TINY_GPT,
            "--strategy",
            "bucketed,flat",
            "--bucket-mb",
            "0.01,1",
            "--steps",
            "3",
            "--warmup",
            "1",
            "--rounds",
            "2",
            "--batch-size",
            "2",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert rc == 0
    combined = json.loads(capsys.readouterr().out)["results"]
    recs = read_records(out, "ddp_step")
    # 3 configurations (bucketed 0.01, bucketed 1, flat) x 2 rounds, appended as taken
    assert [(r["strategy"], r["bucket_mb"], r["round"]) for r in recs] == [
        ("bucketed", 0.01, 0),
        ("bucketed", 1.0, 0),
        ("flat", None, 0),
        ("bucketed", 0.01, 1),
        ("bucketed", 1.0, 1),
        ("flat", None, 1),
    ]
    assert [len(c["step_times_s"]) for c in combined] == [6, 6, 6]


def test_check_command_fails_on_batchnorm(capsys):
    # BatchNorm's statistics depend on the shard: DDP cannot equal whole-batch training -> exit 1
    rc = ddpsim(
        ["check", "--model", f"{ROOT}/tests/data/bn_model.py:build", "--strategy", "bucketed", "--accum-steps", "3"]
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert "weights_match_single            FAIL" in out and "sharding_covers_once            pass" in out


@pytest.mark.parametrize(
    "argv, words",
    [
        (["bench-ddp", "--model", "gpt", "--strategy", "bucketed"], "needs bucket sizes"),
        (["bench-ddp", "--model", "gpt", "--world-size", "0"], "must be >= 1"),
        (["bench-ddp", "--model", "gpt", "--strategy", "ring"], "unknown strategy"),
        (["bench-ddp", "--model", "gpt", "--bucket-mb", "-1"], "bad bucket size"),
        (["profile", "--model", "gpt"], "say where the profile goes"),
        (["check", "--model", "resnet", "--world-size", "2"], "unknown workload"),
    ],
)
def test_bad_input_exits_2_before_spawning(argv, words, capsys):
    assert ddpsim(argv) == 2
    assert words in capsys.readouterr().err


def test_bench_ddp_under_torchrun(tmp_path, torchrun_ddpsim):
    out = tmp_path / "tr.jsonl"
    args = ["bench-ddp", "--model", TINY_GPT, "--strategy", "bucketed", "--bucket-mb", "1", "--steps", "2"]
    proc = torchrun_ddpsim(*args, "--warmup", "1", "--json", "--out", str(out), timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = json.loads(proc.stdout)["results"]  # rank 0 alone prints one JSON document
    assert [(r["strategy"], r["world_size"], len(r["rank_step_times_s"])) for r in printed] == [("bucketed", 2, 2)]
    assert len(read_records(out)) == 1  # written once, by rank 0


def test_measure_interleaved_pairs_steps(pool):
    from realrun.bench_ddp import measure_interleaved

    res = measure_interleaved(
        pool, TINY_GPT, [("torch-ddp", 1.0), ("bucketed", 1.0), ("compute", None)], batch_size=2, steps=4, warmup=1
    )
    assert [(r.strategy, len(r.step_times_s)) for r in res] == [("torch-ddp", 4), ("bucketed", 4), ("compute", 4)]
    first, second = res[0].step_times_s, res[1].step_times_s
    # the paired ratio is the median of per-round ratios, not a ratio of medians
    assert res[1].ratios_to_first == tuple(b / a for a, b in zip(first, second))
    assert res[1].ratio_to_first == pytest.approx(summarize(list(res[1].ratios_to_first)).median_s)
    assert res[0].ratio_to_first == 1.0


def test_interleaved_turns_step_each_configuration_as_counted(monkeypatch):
    """In one process (a one-rank gloo group): block=1 steps each configuration warmup + steps times,
    with an untimed step between turns;
    block=3 runs turns of one untimed and up to 3 timed steps, warm-up turns whole, the last turn cut."""
    import socket
    from types import SimpleNamespace

    import torch.distributed as dist

    import realrun.bench_ddp as bench_ddp

    if dist.is_initialized():
        pytest.skip("a process group is already up in this process")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        calls = []
        monkeypatch.setattr(bench_ddp, "train_step", lambda net, *a: calls.append(id(net)))
        ctx = SimpleNamespace(device="cpu", rank=0, world_size=1)
        cfgs = [("compute", None), ("compute", None)]
        # block=1: 6 turns (1 warm-up), A B | a B A | b A B | a B A | b A B | a B A: 6 steps each and
        # the untimed step between turns, so that no step follows its own configuration's
        for block, counts in ((1, [6 + 2, 6 + 3]), (3, [4 + 4 + 3] * 2)):
            calls.clear()
            times = bench_ddp._interleaved_task(ctx, TINY_GPT, cfgs, 2, 5, 1, "sgd", block)
            assert [len(t) for t in times] == [5, 5]
            assert sorted(calls.count(c) for c in set(calls)) == counts
            if block == 1:
                assert all(a != b for a, b in zip(calls, calls[1:]))
    finally:
        dist.destroy_process_group()


def test_measure_interleaved_in_turns_of_consecutive_steps(pool):
    from realrun.bench_ddp import measure_interleaved

    # 5 timed steps in turns of 3 (each after one untimed step): two turns, the last one cut at 5
    res = measure_interleaved(
        pool, TINY_GPT, [("torch-ddp", 1.0), ("compute", None)], batch_size=2, steps=5, warmup=1, block=3
    )
    assert [len(r.step_times_s) for r in res] == [5, 5]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="block"):
            measure_interleaved(pool, TINY_GPT, [("compute", None)], steps=2, block=bad)
