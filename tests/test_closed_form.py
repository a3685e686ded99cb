"""The event model reproduces the closed form exactly in its regime."""

import math

import pytest

from simulator.closed_form import closed_form, exposed_overhead_s
from simulator.engine import simulate_step
from simulator.network import CostModel
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import StrategySpec, comm_plan
from simulator.units import MIB


@pytest.mark.parametrize("n_b", [1, 2, 5, 16, 40])
def test_event_model_equals_closed_form(n_b):
    # s = 8 MB in n_b equal buckets (one parameter each); each bucket's backward compute equals its
    # transfer time b/w; one serial channel. Exposed overhead must be s/(n_b w) + n_b o exactly.
    s, o, w = 8_000_000, 2e-4, 1e9
    b = s // n_b
    prof = GradProfile("eq", tuple(ParamSpec(f"p{i}", b // 4, bwd_s=b / w) for i in range(n_b)))
    cost = CostModel.linear(o, w, channels=1)
    spec = StrategySpec("bucketed", bucket_mb=(b - 1) / MIB)  # each parameter closes its own bucket
    out = simulate_step(prof, comm_plan(prof, spec, 2), cost, 2)
    assert len(out.rows) == n_b
    assert out.step_time_s - prof.compute_s == pytest.approx(exposed_overhead_s(s, n_b, o, w), rel=1e-12)


def test_closed_form_optimum():
    s, o, w = 500e6, 50e-6, 100e9
    cf = closed_form(int(s), o, w)
    # n_b* = sqrt(s/(w o)) = sqrt(500e6 / (100e9 * 50e-6)) = sqrt(100) = 10; b* = 50 MB; T_min = 2 sqrt(s o / w)
    assert cf.best_n_buckets == pytest.approx(10.0)
    assert cf.best_bucket_bytes == pytest.approx(50e6)
    assert cf.t_min_s == pytest.approx(2 * math.sqrt(500e6 * 50e-6 / 100e9))
    assert cf.t_min_s == pytest.approx(exposed_overhead_s(s, 10, o, w))
