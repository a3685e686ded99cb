"""Binding a rank's main thread to cores of its own (realrun.binding)."""

import os
import threading

import pytest

from realrun.binding import BIND_ENV, bind_main_thread, bind_mode, rank_cores


def test_rank_cores_splits_the_mask_in_equal_contiguous_shares():
    assert rank_cores(0, 2, [0, 1]) == [0]
    assert rank_cores(1, 2, [1, 0]) == [1]
    assert rank_cores(1, 2, [4, 5, 6, 7, 8]) == [6, 7]  # the odd core left over goes to nobody
    assert rank_cores(2, 3, list(range(16))) == [10, 11, 12, 13, 14]


def test_rank_cores_gives_none_where_ranks_outnumber_cores():
    assert rank_cores(0, 4, [0, 1]) is None


@pytest.mark.parametrize("rank,world", [(-1, 2), (2, 2), (0, 0)])
def test_rank_cores_rejects_a_rank_outside_its_world(rank, world):
    with pytest.raises(ValueError, match="local rank"):
        rank_cores(rank, world, [0, 1])


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="Linux, 2 cores or more"
)
def test_bind_main_thread_binds_only_the_calling_thread(monkeypatch):
    whole = sorted(os.sched_getaffinity(0))
    seen = {}

    def in_a_thread():
        seen["before"] = sorted(os.sched_getaffinity(0))
        monkeypatch.setenv(BIND_ENV, "mains")
        seen["bound"] = bind_main_thread(len(whole) - 1, len(whole))
        seen["after"] = sorted(os.sched_getaffinity(0))

    t = threading.Thread(target=in_a_thread)
    t.start()
    t.join()
    assert seen["bound"] == [whole[-1]] and seen["after"] == [whole[-1]]
    assert sorted(os.sched_getaffinity(0)) == whole  # this (the test's) thread keeps its mask


def test_bind_main_thread_does_nothing_unless_asked(monkeypatch):
    monkeypatch.delenv(BIND_ENV, raising=False)
    assert bind_main_thread(0, 1) is None
    monkeypatch.setenv(BIND_ENV, "none")
    assert bind_main_thread(0, 1) is None


def test_bind_modes_are_read_in_any_case(monkeypatch):
    for value, mode in (("MAINS", "mains"), (" mains ", "mains"), ("None", "none"), ("", "none")):
        monkeypatch.setenv(BIND_ENV, value)
        assert bind_mode() == mode


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_binding_that_cannot_be_done_is_refused_not_skipped(monkeypatch):
    """Asked for, it binds or refuses: a record saying "bind": "mains" was bound."""
    monkeypatch.setenv(BIND_ENV, "mains")
    cores = len(os.sched_getaffinity(0))
    with pytest.raises(ValueError, match=f"{cores + 1} ranks cannot each have a core of the {cores} here"):
        bind_main_thread(0, cores + 1)
    with pytest.raises(ValueError, match="binds gloo ranks on a CPU, not nccl ranks"):
        bind_main_thread(0, 1, "nccl")
    # the pool asks first, so no rank starts
    from realrun.launch import RankPool

    with pytest.raises(ValueError, match=f"{cores + 1} ranks cannot each have a core"):
        RankPool(cores + 1)
    with pytest.raises(ValueError, match="not nccl ranks"):
        RankPool(1, "nccl")


def _no_ranks(monkeypatch):
    """Fail the test at once if a command got as far as starting ranks."""
    from realrun import launch

    def started(*a, **k):
        pytest.fail("ranks were started")

    monkeypatch.setattr(launch.RankPool, "start", started)
    monkeypatch.setattr(launch, "run_under_torchrun", started)
    monkeypatch.delenv("DDPSIM_DEBUG", raising=False)  # else the handler re-raises instead of one line


def test_an_unknown_bind_mode_is_one_line_and_exit_2_before_any_rank_starts(monkeypatch, capsys):
    from ddpsim.cli import main

    _no_ranks(monkeypatch)
    monkeypatch.setenv(BIND_ENV, "yes")
    with pytest.raises(ValueError, match="give 'mains'"):
        bind_mode()
    assert main(["bench-ddp", "--model", "mlp", "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DDPSIM_BIND='yes'" in err[0] and "unset it" in err[0], err


def test_binding_under_torchrun_is_refused(monkeypatch, capsys):
    from ddpsim.cli import main

    _no_ranks(monkeypatch)
    for k, v in {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "1",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv(BIND_ENV, "mains")
    assert main(["bench-ddp", "--model", "mlp", "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "under torchrun bind with the launcher" in err[0], err


def test_records_say_when_the_ranks_were_bound(monkeypatch):
    from realrun.records import environment

    monkeypatch.delenv(BIND_ENV, raising=False)
    assert "bind" not in environment("gloo", 2)
    monkeypatch.setenv(BIND_ENV, "mains")
    assert environment("gloo", 2)["bind"] == "mains"


def where_threads_run(ctx):
    """In a rank: the main thread's cores, and each of gloo's threads' (by name, from /proc)."""
    gloo = {}
    for t in os.listdir("/proc/self/task"):
        name = open(f"/proc/self/task/{t}/comm").read().strip()
        if "gloo" in name:
            gloo[t] = sorted(os.sched_getaffinity(int(t)))
    return sorted(os.sched_getaffinity(0)), list(gloo.values())


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="Linux, 2 cores or more"
)
def test_a_bound_pool_binds_each_main_thread_and_leaves_gloos_threads_free(monkeypatch):
    """Real ranks (one pool start): each main thread on its share of the cores, gloo's threads on all of them."""
    from realrun.launch import RankPool

    whole = sorted(os.sched_getaffinity(0))
    monkeypatch.setenv(BIND_ENV, "mains")
    with RankPool(2, timeout_s=60) as pool:
        shares = [rank_cores(r, 2, whole) for r in range(2)]
        assert [w["bound_cores"] for w in pool.worker_info] == shares
        seen = pool.run(where_threads_run)
    for (main, gloo), share in zip(seen, shares):
        assert main == share
        assert gloo and all(g == whole for g in gloo)  # made before the binding: free


def test_a_long_bind_value_is_shown_cut_with_its_length(monkeypatch):
    monkeypatch.setenv(BIND_ENV, "x" * 10_000)
    with pytest.raises(ValueError) as e:
        bind_mode()
    msg = str(e.value)
    assert len(msg) < 200 and "'" + "x" * 40 + "'... (10000 characters)" in msg, msg
