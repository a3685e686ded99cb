"""bench-allreduce: parsing, nccl-tests arithmetic, records kept on failure, the CLI end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from realrun import bench_allreduce as ba
from realrun.errors import RunFailure
from realrun.records import RecordWriter, read_records
from realrun.stats import max_over_ranks, percentile, summarize
from simulator.units import MIB

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- pure parts
def test_sizes_are_powers_of_two_like_nccl_tests():
    assert ba.parse_size("1K") == ba.parse_size("1KB") == ba.parse_size("1KiB") == 1024
    assert ba.parse_size("16MB") == 16 * MIB
    assert ba.parse_size("4096") == 4096
    assert ba.parse_sizes("1KB,1MB,8MB") == (1024, 1 << 20, 8 << 20)
    assert ba.parse_sizes("1M:8M") == (1 << 20, 2 << 20, 4 << 20, 8 << 20)
    assert ba.parse_sizes("1K:64K:4") == (1024, 4096, 16384, 65536)
    assert len(ba.parse_sizes(ba.DEFAULT_SIZES)) == 11  # 1 MiB .. 1 GiB


@pytest.mark.parametrize("bad", ["", "1XB", "-1K", "1K:", "8M:1M", "1M:8M:1", "16G", "0.3B"])
def test_bad_sizes_raise_value_error(bad):
    with pytest.raises(ValueError):
        ba.parse_sizes(bad)


def test_world_sizes_and_impls():
    assert ba.parse_world_sizes("2,4,6") == (2, 4, 6)
    for bad in ("1", "two", "2,0", "100"):
        with pytest.raises(ValueError, match="world size"):
            ba.parse_world_sizes(bad)
    with pytest.raises(ValueError, match="choose from native, ring, naive, broadcast"):
        ba.parse_impls("native,tree")


def test_iterations_scale_down_with_size():
    assert ba.default_iters(1 << 20) == (200, 10)  # 1.5 s / ~1.2 ms caps at 200
    iters, warmup = ba.default_iters(1 << 30)  # ~0.7 s per call
    assert (iters, warmup) == (5, 1)
    # 64 MiB over an emulated 200 Mbit/s link: 2.7 s per call -> the minimum of 5
    assert ba.default_iters(64 << 20, link_mbit=200)[0] == 5


def test_stats_show_their_arithmetic():
    xs = [4.0, 1.0, 3.0, 2.0, 10.0]
    s = summarize(xs)
    assert s.median_s == 3.0 and s.min_s == 1.0 and s.max_s == 10.0 and s.mean_s == 4.0
    # sorted [1,2,3,4,10]: p10 at position 0.4 -> 1 + 0.4*(2-1); p90 at 3.6 -> 4 + 0.6*(10-4)
    assert s.p10_s == pytest.approx(1.4) and s.p90_s == pytest.approx(7.6)
    assert s.iqr_s == pytest.approx(4.0 - 2.0)
    assert percentile([5.0], 90) == 5.0
    assert max_over_ranks([[1, 5, 3], [2, 1, 4]]) == [2, 5, 4]
    with pytest.raises(ValueError):
        max_over_ranks([[1, 2], [1]])
    with pytest.raises(ValueError):
        summarize([])


def test_record_uses_the_slowest_rank_and_nccl_tests_bandwidths():
    spec = ba.AllreduceBenchSpec(world_sizes=(4,), sizes_bytes=(8_000_000,), iters=3, warmup=0)
    per_rank = [[0.001, 0.004, 0.002], [0.002, 0.001, 0.002], [0.001, 0.001, 0.001], [0.001, 0.001, 0.003]]
    rec = ba.point_record(spec, "native", 4, 8_000_000, 3, 0, per_rank, {}, "run")
    assert rec["kind"] == "allreduce" and rec["times_s"] == [0.002, 0.004, 0.003]
    assert rec["median_s"] == 0.003
    assert rec["algbw_gbps"] == pytest.approx(8e6 / 0.003 / 1e9)  # 2.667 GB/s
    assert rec["busbw_gbps"] == pytest.approx(8e6 / 0.003 / 1e9 * 2 * 3 / 4)  # x 1.5 for p = 4
    assert rec["count"] == 2_000_000 and rec["link_mbit"] is None
    bc = ba.point_record(spec, "broadcast", 4, 8_000_000, 3, 0, per_rank, {}, "run")
    assert bc["kind"] == "broadcast" and bc["busbw_gbps"] == bc["algbw_gbps"]
    table = ba.format_table([rec, bc]).splitlines()
    assert "median of separated calls" in table[1]
    assert table[2].split()[1:9] == [
        "impl",
        "size",
        "count",
        "type",
        "time(us)",
        "algbw(GB/s)",
        "busbw(GB/s)",
        "#wrong",
    ]
    assert table[3].split()[:8] == ["native", "8000000", "2000000", "float32", "3000.0", "2.667", "4.000", "n/a"]
    assert table[-1].startswith("# Avg bus bandwidth")


def test_csv_holds_the_tables_rows(tmp_path, capsys):
    import argparse
    import csv

    from ddpsim.run_commands import CSV_COLUMNS, _report

    spec = ba.AllreduceBenchSpec(world_sizes=(2,), sizes_bytes=(4096, 65536), iters=2, warmup=0)
    recs = [ba.point_record(spec, "native", 2, n, 2, 0, [[1e-4, 3e-4], [2e-4, 2e-4]], {}, "run") for n in (4096, 65536)]
    args = argparse.Namespace(json=False, plot=None, quiet=True, out=None, csv="-")
    assert _report(recs, args) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))  # stdout: the CSV alone
    assert list(rows[0]) == CSV_COLUMNS and [int(r["msg_bytes"]) for r in rows] == [4096, 65536]
    # slowest rank per call: [2e-4, 3e-4] -> median 2.5e-4 s; algbw = 4096 B / 2.5e-4 s = 0.016384 GB/s
    assert float(rows[0]["median_s"]) == pytest.approx(2.5e-4)
    assert float(rows[0]["algbw_gbps"]) == pytest.approx(4096 / 2.5e-4 / 1e9)
    path = tmp_path / "ar.csv"
    assert _report(recs, argparse.Namespace(json=False, plot=None, quiet=True, out=None, csv=str(path))) == 0
    out = capsys.readouterr().out
    assert "# Avg bus bandwidth" in out and f"# csv: {path}" in out  # the table, and the file beside it
    assert [r["impl"] for r in csv.DictReader(path.read_text().splitlines())] == ["native", "native"]


class FakeRanks:
    """Stands in for ``measure`` on 2 ranks: records what it was asked, fails on call ``fail_at``."""

    def __init__(self, fail_at=None):
        self.asked = []
        self.fail_at = fail_at

    def __call__(self, impls, count, dtype, iters, warmup):
        self.asked.append((impls, count))
        if len(self.asked) == self.fail_at:
            raise RunFailure("rank 1 died (exited with code 9) during measure", rank=1)
        return {"per_impl": {i: [[0.001] * iters, [0.002] * iters] for i in impls}, "env": {}}


@pytest.mark.parametrize("interleave, expected_calls", [(False, 4), (True, 2)])
def test_sweep_measures_impls_apart_or_interleaved(interleave, expected_calls):
    spec = ba.AllreduceBenchSpec(
        sizes_bytes=(4096, 8192), impls=("native", "ring"), iters=2, warmup=0, interleave=interleave
    )
    fake = FakeRanks()
    recs = ba.sweep(spec, 2, fake, RecordWriter(None), False, "run", 0.0)
    assert len(fake.asked) == expected_calls
    assert [(r["msg_bytes"], r["impl"]) for r in recs] == [
        (4096, "native"),
        (4096, "ring"),
        (8192, "native"),
        (8192, "ring"),
    ]
    assert {r["interleaved"] for r in recs} == {interleave}
    assert recs[0]["times_s"] == [0.002, 0.002]  # the slower rank


class CountingRanks(FakeRanks):
    """As ``FakeRanks``, each call's times numbered so that the records show which call they came from."""

    def __call__(self, impls, count, dtype, iters, warmup):
        self.asked.append((impls, count, iters, warmup))
        if len(self.asked) == self.fail_at:
            raise RunFailure("rank 1 died (exited with code 9) during measure", rank=1)
        k = len(self.asked)
        return {
            "per_impl": {i: [[k * 1e-3] * iters, [k * 1e-3 + 1e-4] * iters] for i in impls},
            "wrong": {i: 1 for i in impls},
            "threads": {"gloo_tcp_loop": [k, 10 * k, 1]},  # the ranks' thread time, summed over them
            "timed_calls": iters * len(impls),
            "env": {},
        }


def test_rounds_sweep_the_sizes_up_then_down_and_each_record_holds_all_its_calls():
    spec = ba.AllreduceBenchSpec(sizes_bytes=(4096, 8192, 16384), iters=7, warmup=2, rounds=3)
    fake = CountingRanks()
    recs = ba.sweep(spec, 2, fake, RecordWriter(None), False, "run", 0.0)
    # as given, reversed, as given; 7 calls split evenly 2 + 2 + 3, each share warmed up again
    assert [(count * 4, it, w) for _, count, it, w in fake.asked] == [
        (4096, 2, 2), (8192, 2, 2), (16384, 2, 2),
        (16384, 2, 2), (8192, 2, 2), (4096, 2, 2),
        (4096, 3, 2), (8192, 3, 2), (16384, 3, 2),
    ]  # fmt: skip
    assert [r["msg_bytes"] for r in recs] == [4096, 8192, 16384]  # in size order, one record a point
    first = recs[0]
    assert (first["iters"], first["warmup"], first["rounds"], first["complete"]) == (7, 2, 3, True)
    assert first["wrong"] == 3  # #wrong summed over the rounds
    # the slower rank's times of calls 1, 6 and 7, in the order taken
    assert first["times_s"] == pytest.approx([1.1e-3] * 2 + [6.1e-3] * 2 + [7.1e-3] * 3)
    # the ranks' thread time over the point's calls, added up over its rounds (calls 1, 6 and 7)
    assert first["threads_ns"] == {"gloo_tcp_loop": [14, 140, 3]} and first["threads_calls"] == 7
    assert "threads_ns" not in ba.sweep(spec, 2, FakeRanks(), RecordWriter(None), False, "run", 0.0)[0]


def test_one_round_writes_each_point_as_taken_and_marks_it_complete():
    spec = ba.AllreduceBenchSpec(sizes_bytes=(4096, 8192), iters=3, warmup=1)
    fake = CountingRanks()
    recs = ba.sweep(spec, 2, fake, RecordWriter(None), False, "run", 0.0)
    assert [(count * 4, it) for _, count, it, _ in fake.asked] == [(4096, 3), (8192, 3)]
    assert [(r["iters"], r["rounds"], r["complete"]) for r in recs] == [(3, 1, True), (3, 1, True)]


def test_rounds_spread_few_calls_over_the_rounds_and_skip_the_empty_shares():
    spec = ba.AllreduceBenchSpec(sizes_bytes=(4096,), iters=2, warmup=0, rounds=4)
    fake = CountingRanks()
    (rec,) = ba.sweep(spec, 2, fake, RecordWriter(None), False, "run", 0.0)
    # shares 0, 1, 0, 1: the calls fall in the second and the last round, not the first two
    assert [it for *_, it, _ in fake.asked] == [1, 1]
    assert rec["times_s"] == pytest.approx([1.1e-3, 2.1e-3]) and (rec["iters"], rec["rounds"]) == (2, 2)


def test_rounds_with_interleaved_impls_keep_each_impls_calls_apart():
    spec = ba.AllreduceBenchSpec(
        sizes_bytes=(4096, 8192), impls=("native", "ring"), iters=2, warmup=0, rounds=2, interleave=True
    )
    fake = CountingRanks()
    recs = ba.sweep(spec, 2, fake, RecordWriter(None), False, "run", 0.0)
    assert len(fake.asked) == 4 and {impls for impls, *_ in fake.asked} == {("native", "ring")}
    assert [(r["msg_bytes"], r["impl"]) for r in recs] == [
        (4096, "native"), (4096, "ring"), (8192, "native"), (8192, "ring"),
    ]  # fmt: skip
    # 4096: round 1's call 1, round 2's call 4 (sizes reversed); each impl its own list
    assert recs[0]["times_s"] == recs[1]["times_s"] == pytest.approx([1.1e-3, 4.1e-3])


def test_a_failure_in_a_later_round_writes_the_calls_taken_so_far_marked_incomplete(tmp_path):
    spec = ba.AllreduceBenchSpec(world_sizes=(2,), sizes_bytes=(4096, 8192), iters=4, warmup=0, rounds=2)
    out = tmp_path / "r.jsonl"
    with pytest.raises(RunFailure):
        with RecordWriter(out) as w:
            ba.sweep(spec, 2, CountingRanks(fail_at=4), w, False, "run", 0.0)  # round 2: 8192 done, 4096 fails
    got = [(r["msg_bytes"], r["iters"], r["rounds"], r["complete"]) for r in read_records(out)]
    assert got == [(8192, 4, 2, True), (4096, 2, 1, False)]  # in the order written


def test_the_time_estimate_counts_a_warm_up_per_round():
    one = ba.AllreduceBenchSpec(sizes_bytes=(4096,), iters=8, warmup=2)
    four = ba.AllreduceBenchSpec(sizes_bytes=(4096,), iters=8, warmup=2, rounds=4)
    call = ba.estimate_call_s(4096)
    assert ba.estimate_total_s(one) == pytest.approx((8 + 2) * call)
    assert ba.estimate_total_s(four) == pytest.approx((8 + 4 * 2) * call)


def test_rounds_below_one_are_refused():
    with pytest.raises(ValueError, match="--rounds must be >= 1"):
        ba.AllreduceBenchSpec(rounds=0)


def test_records_taken_before_a_failure_are_kept(tmp_path):
    spec = ba.AllreduceBenchSpec(world_sizes=(2,), sizes_bytes=(4096, 8192, 16384), iters=2, warmup=0)
    out = tmp_path / "r.jsonl"
    with pytest.raises(RunFailure):
        with RecordWriter(out) as w:
            ba.sweep(spec, 2, FakeRanks(fail_at=3), w, False, "run", 0.0)
    assert [r["msg_bytes"] for r in read_records(out)] == [4096, 8192]


def test_importing_the_cli_does_not_import_torch():
    code = "import sys, ddpsim.run_commands, realrun.launch, realrun.bench_allreduce; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


# ---------------------------------------------------------------- the command
def _main(argv):
    from ddpsim.cli import main

    return main(argv)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sizes", "1KB,12QB"], "bad message size '12QB'"),
        (["--sizes", "6"], "not a positive multiple of float32's 4 bytes"),
        (["--world-size", "1"], "item '1': must be >= 2"),
        (["--world-size", "9999"], "more than this machine can run"),
        (["--timeout-s", "nan"], "must be a finite number"),
        (["--impl", "tree"], "unknown implementation 'tree'"),
        (["--from", "x.jsonl"], "--from only plots"),
    ],
)
def test_bad_input_exits_2_with_one_line(argv, message, capsys):
    from ddpsim.cli import main

    assert main(["bench-allreduce", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("ddpsim: error: ")


@pytest.mark.slow
def test_bench_end_to_end_writes_records_table_and_plot(tmp_path, capsys):
    out, png = tmp_path / "r.jsonl", tmp_path / "r.png"
    argv = [
        "bench-allreduce",
        "--world-size",
        "2",
        "--sizes",
        "4K,64K",
        "--impl",
        "native,ring,naive,broadcast",
        "--iters",
        "6",
        "--warmup",
        "1",
        "--out",
        str(out),
        "--plot",
        str(png),
        "--interleave",
    ]
    assert _main(argv) == 0
    captured = capsys.readouterr()
    recs = read_records(out)
    assert [(r["impl"], r["msg_bytes"]) for r in recs] == [
        (impl, size) for size in (4096, 65536) for impl in ("native", "ring", "naive", "broadcast")
    ]
    for r in recs:
        assert len(r["times_s"]) == 6 and r["iters"] == 6 and r["warmup"] == 1
        assert r["p10_s"] <= r["median_s"] <= r["p90_s"]
        assert r["algbw_gbps"] == pytest.approx(r["msg_bytes"] / r["median_s"] / 1e9)
        assert r["env"]["world_size"] == 2 and "torch" in r["env"] and r["interleaved"] is True
    assert len({r["run_id"] for r in recs}) == 1
    assert captured.out.count("\n") == 3 + 8 + 2  # header lines + one row per point + #wrong and avg busbw
    assert all(r["wrong"] == 0 for r in recs)
    assert captured.err.count("bench-allreduce: p=2") == 8  # a progress line per point
    assert png.stat().st_size > 0
    # plotting reads the records file, never re-runs
    png2 = tmp_path / "again.png"
    assert _main(["bench-allreduce", "--from", str(out), "--plot", str(png2)]) == 0
    assert png2.stat().st_size > 0


@pytest.mark.slow
def test_python_m_ddpsim_under_torchrun(tmp_path, torchrun_ddpsim):
    out = tmp_path / "tr.jsonl"
    args = ["bench-allreduce", "--sizes", "4K", "--iters", "3", "--warmup", "1", "--json", "--out", str(out)]
    proc = torchrun_ddpsim(*args, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = json.loads(proc.stdout)["results"]  # rank 0 only: one JSON document
    assert [r["msg_bytes"] for r in printed] == [4096]
    assert [r["world_size"] for r in read_records(out)] == [2]  # written once, by rank 0
