"""RankPool: many tasks on one process group; raise / die / hang end the run, name the rank, leave no process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from realrun.errors import RunFailure
from realrun.launch import RankPool, run_under_torchrun, spawn
from realrun.records import RecordWriter, environment, make_record, read_records

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- tasks (module-level: pickled by reference)
def rank_sum(ctx, offset):
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(ctx.rank + offset)])
    dist.all_reduce(t)
    return {"rank": ctx.rank, "sum": t.item(), "pid": os.getpid(), "world": ctx.world_size, "device": ctx.device}


def remember(ctx, value):
    previous = ctx.state.get("v")
    ctx.state["v"] = value
    return previous


def threads(ctx):
    import torch

    return torch.get_num_threads()


def print_to_stdout(ctx):
    print("this must not corrupt the protocol")
    os.write(1, b"nor this\n")
    return ctx.rank


def raise_on_rank1(ctx):
    import torch.distributed as dist

    if ctx.rank == 1:
        raise KeyError("parameter 'w7' missing")
    dist.barrier()  # rank 0 waits for rank 1 forever: the pool must not wait with it


def exit_on_rank1(ctx):
    import torch.distributed as dist

    if ctx.rank == 1:
        sys.stderr.write("rank 1 about to exit\n")
        sys.stderr.flush()
        os._exit(7)
    dist.barrier()


def sleep_on_rank0(ctx):
    if ctx.rank == 0:
        time.sleep(600)
    return ctx.rank


# ---------------------------------------------------------------- helpers
def _gone(pids):
    deadline = time.monotonic() + 5
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.05)
    return not alive


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def pool():
    with RankPool(3, timeout_s=60) as p:
        yield p


# ---------------------------------------------------------------- one pool, many calls
def test_results_in_rank_order_and_one_group_for_many_calls(pool):
    first = pool.run(rank_sum, 10)
    second = pool.run(rank_sum, offset=0)
    # 0+1+2 + 3*offset on every rank
    assert [r["sum"] for r in first] == [33.0, 33.0, 33.0]
    assert [r["sum"] for r in second] == [3.0, 3.0, 3.0]
    assert [r["rank"] for r in first] == [0, 1, 2]
    assert [r["pid"] for r in first] == [r["pid"] for r in second] == pool.pids
    assert {r["device"] for r in first} == {"cpu"} and {r["world"] for r in first} == {3}


def test_state_survives_between_calls(pool):
    pool.run(remember, "a")
    assert pool.run(remember, "b") == ["a", "a", "a"]


def test_threads_per_rank_default(pool):
    assert pool.run(threads) == [max(1, len(os.sched_getaffinity(0)) // 3)] * 3


def test_task_output_on_stdout_does_not_break_the_protocol(pool):
    assert pool.run(print_to_stdout) == [0, 1, 2]
    assert pool.run(rank_sum, 0)[0]["sum"] == 3.0


def test_tasks_must_be_importable(pool):
    with pytest.raises(ValueError, match="module-level"):
        pool.run(lambda ctx: 1)
    assert pool.usable  # refused before anything was sent


def scaled_rank(ctx, factor, *, offset):
    import torch

    return ctx.rank * factor + offset, torch.get_num_threads()


def test_spawn_is_a_one_shot_pool_and_passes_keywords_to_the_task():
    out = spawn(scaled_rank, 2, 10, offset=1, pool_options={"threads_per_rank": 1}, timeout_s=60)
    assert out == [(1, 1), (11, 1)]  # rank * 10 + 1, one torch thread each


def test_bad_pool_arguments():
    with pytest.raises(ValueError, match="world size"):
        RankPool(0)
    with pytest.raises(ValueError, match="backend"):
        RankPool(2, "mpi")
    with pytest.raises(ValueError, match="one entry per rank"):
        RankPool(2, rank_env=[{}])


# ---------------------------------------------------------------- failures
def test_rank_that_raises_names_rank_and_exception_and_keeps_records(tmp_path):
    out = tmp_path / "r.jsonl"
    with RankPool(2, timeout_s=60, log_dir=tmp_path / "logs") as p:
        pids = p.pids
        with RecordWriter(out) as w:
            for offset in (1, 2):
                res = p.run(rank_sum, offset)
                w.write(make_record("probe", environment("gloo", 2), value=res[0]["sum"]))
            t0 = time.monotonic()
            with pytest.raises(RunFailure) as ei:
                p.run(raise_on_rank1)
            elapsed = time.monotonic() - t0
        assert not p.usable
        with pytest.raises(RunFailure, match="already failed"):
            p.run(rank_sum, 0)
    msg = str(ei.value)
    assert ei.value.rank == 1
    assert msg.splitlines()[0].startswith("rank 1 raised KeyError: \"parameter 'w7' missing\"")
    assert "raise_on_rank1" in msg and "ranks that did not answer (killed): 0" in msg
    assert elapsed < 10  # grace period, not the 60 s timeout
    assert [r["value"] for r in read_records(out)] == [3.0, 5.0]  # 0+1+2*1, 0+1+2*2
    assert _gone(pids)


def test_rank_that_dies_is_named_with_exit_code_and_stderr(tmp_path):
    with RankPool(2, timeout_s=60, log_dir=tmp_path) as p:
        pids = p.pids
        with pytest.raises(RunFailure) as ei:
            p.run(exit_on_rank1)
    msg = str(ei.value)
    assert ei.value.rank == 1
    assert msg.splitlines()[0] == "rank 1 died (exited with code 7) during test_launch.exit_on_rank1"
    assert "rank 1 about to exit" in msg  # the tail of its stderr log, which is kept
    assert "rank 1 about to exit" in (tmp_path / "rank1.log").read_text()
    assert _gone(pids)


def test_rank_that_hangs_is_killed_by_the_watchdog(tmp_path):
    with RankPool(2, timeout_s=60, log_dir=tmp_path) as p:
        pids = p.pids
        t0 = time.monotonic()
        with pytest.raises(RunFailure) as ei:
            p.run(sleep_on_rank0, timeout_s=2)
        elapsed = time.monotonic() - t0
    msg = str(ei.value)
    assert ei.value.rank == 0
    assert msg.splitlines()[0] == "rank 0 did not answer within 2 s during test_launch.sleep_on_rank0; killed"
    assert "in sleep_on_rank0" in msg  # faulthandler's stack of the hung rank
    assert 2 <= elapsed < 6
    assert _gone(pids)


def test_workers_exit_when_the_parent_is_killed(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from realrun.launch import RankPool
        pool = RankPool(2, timeout_s=60, log_dir={str(tmp_path)!r})
        pool.start()
        print(" ".join(map(str, pool.pids)), flush=True)
        os._exit(0)  # no close(): the workers are on their own
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    pids = [int(x) for x in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    assert _gone(pids)


def test_run_under_torchrun_needs_its_variables(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ValueError, match="WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT"):
        run_under_torchrun(rank_sum, 0)


def test_ctrl_c_in_the_parent_kills_the_workers_at_once(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal, sys, threading, time
        sys.path.insert(0, {str(REPO)!r}); sys.path.insert(0, {str(REPO / "tests")!r})
        from realrun.launch import RankPool
        import test_launch
        # as a terminal's Ctrl-C finds it: a shell's background job (CI under `cmd &`) starts with SIGINT
        # ignored, and Python then installs no KeyboardInterrupt handler
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with RankPool(2, timeout_s=60, log_dir={str(tmp_path)!r}) as pool:
            print(" ".join(map(str, pool.pids)), flush=True)
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
            t0 = time.monotonic()
            try:
                pool.run(test_launch.sleep_on_rank0)
            except KeyboardInterrupt:
                print(f"interrupted {{time.monotonic() - t0:.1f}} {{pool.usable}}", flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert len(lines) == 2, out.stderr
    pids = [int(x) for x in lines[0].split()]
    word, elapsed_s, usable = lines[1].split()
    assert word == "interrupted" and float(elapsed_s) < 3 and usable == "False"
    assert _gone(pids)


def test_a_rank_that_stopped_answering_leads_the_message(monkeypatch, tmp_path):
    """Rank 1 hangs; rank 0 fails only in a collective waiting for it (gloo timeout): rank 1 is the cause."""
    import time as _time

    from realrun import launch
    from realrun.errors import RunFailure

    class FakeWorker:
        def __init__(self, rank):
            self.rank, self.log_path, self.proc = rank, tmp_path / f"rank{rank}.log", type("P", (), {"pid": -1})()
            self.log_path.write_text(f"stack of rank {rank}\n")

        def stderr_tail(self, n=20):
            return self.log_path.read_text()

    pool = object.__new__(launch.RankPool)
    pool._workers = [FakeWorker(0), FakeWorker(1)]
    monkeypatch.setattr(pool, "_kill_all", lambda: None, raising=False)
    monkeypatch.setattr(launch.os, "kill", lambda *a: None)
    monkeypatch.setattr(launch.time, "sleep", lambda s: None)
    now = _time.monotonic()
    events = {
        0: launch._Event(
            0, "raised", now, "rank 0 raised DistBackendError: Timed out waiting 30000ms for recv", collective=True
        ),
        1: launch._Event(1, "hung", now, ""),
    }
    with pytest.raises(RunFailure) as exc:
        pool._fail(events, "task", 31.0, 600.0)
    first, *rest = str(exc.value).splitlines()
    assert first.startswith("rank 1 stopped answering during task") and exc.value.rank == 1
    assert any("also: rank 0 raised DistBackendError" in line and "consequence" in line for line in rest)


class _FakeStore:
    def __init__(self, arrived: int):
        self.counts: dict[str, int] = {}
        self.arrived, self.set_keys, self.waited = arrived, [], []

    def add(self, key, n):
        self.counts[key] = self.counts.get(key, self.arrived) + n
        return self.counts[key]

    def set(self, key, value):
        self.set_keys.append(key)

    def wait(self, keys, timeout):
        self.waited.append((tuple(keys), timeout.total_seconds()))


def test_the_teardown_barrier_meets_on_the_store(monkeypatch):
    """The last rank to arrive marks the barrier done; every rank waits for that mark (not for gloo)."""
    from torch.distributed import distributed_c10d as c10d

    from realrun import launch

    for arrived, last in ((0, False), (1, True)):
        store = _FakeStore(arrived)
        monkeypatch.setattr(c10d, "_get_default_store", lambda s=store: s)
        launch._store_barrier(2, 30.0)
        (key,) = store.counts
        assert store.set_keys == ([key + "/all"] if last else [])
        assert store.waited == [((key + "/all",), 30.0)]
    monkeypatch.setattr(c10d, "_get_default_store", lambda: (_ for _ in ()).throw(RuntimeError("no store")))
    launch._store_barrier(2, 30.0)  # best effort: no store, no error
