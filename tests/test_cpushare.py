"""Other work's CPU while measuring: every CPU's busy time minus this process's and the ranks'."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from realrun.cpushare import CpuSnapshot, OtherWork, other_cores, snapshot


def test_other_cores_is_busy_time_not_ours_over_wall_time():
    before = CpuSnapshot(wall_s=10.0, busy_s=100.0, own_s=5.0)
    after = CpuSnapshot(wall_s=12.0, busy_s=104.0, own_s=7.0)  # 4 busy CPU-seconds in 2 s, 2 of them ours
    assert other_cores(before, after) == pytest.approx(1.0)
    assert other_cores(before, CpuSnapshot(12.0, 101.0, 7.0)) == pytest.approx(-0.5)  # ticks: kept as measured
    assert other_cores(None, after) is None and other_cores(before, None) is None
    assert other_cores(after, before) is None  # no time passed forwards
    assert other_cores(before, CpuSnapshot(10.5, 101.0, 5.0)) is None  # half a second: too short to say


def test_a_busy_process_counts_as_other_work_unless_it_is_a_rank():
    """A child spinning on one core: the same span with and without it among the ranks differs by that core."""
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 3: pass"])
    try:
        time.sleep(0.3)
        before_other, before_rank = snapshot([]), snapshot([child.pid])
        time.sleep(1.5)
        after_other, after_rank = snapshot([]), snapshot([child.pid])
    finally:
        child.kill()
        child.wait()
    as_other, as_rank = other_cores(before_other, after_other), other_cores(before_rank, after_rank)
    assert as_other is not None and as_rank is not None
    assert as_other - as_rank > 0.5  # the child's core, counted as other work only when it is not a rank
    assert as_other > 0.5


def test_snapshot_of_a_process_that_is_gone_is_unknown():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert snapshot([child.pid]) is None


def test_snapshot_sums_busy_fields_of_this_process_cpus_and_the_ranks_times(monkeypatch):
    """Which fields count as busy, which CPUs (the affinity mask), whose CPU time is ours: pinned on a fake psutil."""
    import os
    import types
    from collections import namedtuple

    Cpu = namedtuple("Cpu", "user nice system idle iowait irq softirq steal guest guest_nice")
    Proc = namedtuple("Proc", "user system children_user children_system")
    times = {os.getpid(): Proc(1.0, 0.5, 0.25, 0.0), 4242: Proc(10.0, 2.0, 0.0, 0.0)}
    fake = types.SimpleNamespace(
        Error=Exception,
        # CPU 0 and 1 are ours, CPU 2 is outside the affinity mask (a container's other CPUs)
        cpu_times=lambda percpu: (
            [Cpu(1, 2, 3, 100, 50, 7, 8, 4, 1, 1), Cpu(1, 0, 1, 100, 0, 0, 0, 0, 0, 0)]
            + [Cpu(1000, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
        ),
        Process=lambda pid: types.SimpleNamespace(cpu_times=lambda: times[pid]),
    )
    monkeypatch.setitem(sys.modules, "psutil", fake)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    s = snapshot([4242])
    assert s is not None
    assert s.busy_s == (1 + 2 + 3 + 4) + (1 + 0 + 1 + 0)  # user, nice, system, steal; not idle, iowait, irq, guest
    assert s.own_s == 1.0 + 0.5 + 0.25 + 10.0 + 2.0  # ours and the rank's, reaped children included


def test_other_work_measures_the_block_it_wraps():
    with OtherWork([]) as other:
        assert other.cores is None  # known only once the block has ended
        time.sleep(1.1)
    assert other.cores is not None and other.cores > -0.5  # a number of cores (ticks may leave it a bit below 0)
    with OtherWork([]) as short:
        pass
    assert short.cores is None  # under MIN_SPAN_S: unknown


def test_thread_times_read_this_process_threads_by_name():
    from realrun.cpushare import add_threads, thread_delta, thread_times

    before = thread_times()
    if before is None:
        pytest.skip("no /proc/self/task/TID/schedstat here")
    cpu0 = time.thread_time()
    while time.thread_time() - cpu0 < 0.05:  # 50 ms of this thread's CPU, however busy the box
        pass
    spun_ns = (time.thread_time() - cpu0) * 1e9
    after = thread_times()
    assert after is not None and all(len(v) == 4 for v in after.values())
    d = thread_delta(before, after)
    assert all(len(v) == 3 and v[0] >= 0 and v[2] >= 0 for v in d.values())
    # this thread's delta (by its name; its CPU clock and schedstat count the same time, schedstat's a tick late at
    # most: 4 ms at 250 Hz, 10 at 100) holds the spin
    me = [v for tid, v in after.items() if int(tid) == threading.get_native_id()]
    assert len(me) == 1 and d[me[0][0]][0] >= spun_ns - 10e6
    # a thread id that changed name is new: counted whole; one gone is lost; unknown snapshots give nothing
    assert thread_delta({"7": ("old", 5, 5, 5)}, {"7": ("new", 9, 9, 9), "8": ("new", 1, 0, 1)}) == {"new": [10, 9, 10]}
    assert thread_delta({"7": ("a", 5, 5, 5)}, {"7": ("a", 9, 6, 8)}) == {"a": [4, 1, 3]}
    assert thread_delta(None, after) == {} and thread_delta(before, None) == {}
    assert add_threads({"a": [1, 2, 3]}, {"a": [1, 1, 1], "b": [5, 0, 0]}) == {"a": [2, 3, 4], "b": [5, 0, 0]}
