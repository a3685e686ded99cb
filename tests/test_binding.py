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


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
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


def test_an_unknown_bind_mode_is_one_line_and_exit_2_before_any_rank_starts(monkeypatch, capsys):
    from ddpsim.cli import main

    monkeypatch.setenv(BIND_ENV, "yes")
    with pytest.raises(ValueError, match="give 'mains'"):
        bind_mode()
    assert main(["bench-ddp", "--model", "mlp", "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DDPSIM_BIND='yes'" in err[0], err


def test_records_say_when_the_ranks_were_bound(monkeypatch):
    from realrun.records import environment

    monkeypatch.delenv(BIND_ENV, raising=False)
    assert "bind" not in environment("gloo", 2)
    monkeypatch.setenv(BIND_ENV, "mains")
    assert environment("gloo", 2)["bind"] == "mains"
