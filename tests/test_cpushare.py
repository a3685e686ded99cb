"""Other work's CPU while measuring: every CPU's busy time minus this process's and the ranks'."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from realrun.cpushare import CpuSnapshot, other_cores, snapshot


def test_other_cores_is_busy_time_not_ours_over_wall_time():
    before = CpuSnapshot(wall_s=10.0, busy_s=100.0, own_s=5.0)
    after = CpuSnapshot(wall_s=12.0, busy_s=104.0, own_s=7.0)  # 4 busy CPU-seconds in 2 s, 2 of them ours
    assert other_cores(before, after) == pytest.approx(1.0)
    assert other_cores(before, CpuSnapshot(12.0, 101.0, 7.0)) == 0.0  # clock granularity: never below 0
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
