"""An interval at a world size the all-reduce fit did not measure draws the latency split that one world size
cannot pin (``simulator.interval.split_unknown``); at the measured one nothing changes."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from ddpsim.tuner import recommend
from simulator.interval import Uncertainty, draw_inputs, split_unknown, step_interval
from simulator.network import ASSUMED_LATENCY_SHARE, CostModel, load_network
from simulator.predict import predict
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import StrategySpec
from simulator.units import MIB

PROF = GradProfile(
    "eight",
    tuple(ParamSpec(f"w{i}", MIB, bwd_s=2e-3) for i in range(8)),
    forward_s=4e-3,
    optimizer_s=1e-3,
)
ASSUMED = CostModel.linear(500e-6, 1e9, 2, channels=1, measured_world_sizes=(2,))  # fitted at p = 2, split assumed
GIVEN = replace(ASSUMED, latency_share=ASSUMED_LATENCY_SHARE)  # the same split, given: never drawn
UNC = Uncertainty(o_sd_s=20e-6, w_log_sd=0.02, compute_rel=(0.95, 1.0, 1.05))
SPEC = StrategySpec("torch-ddp", bucket_mb=2.0)


def test_only_the_linear_model_of_one_world_size_with_an_assumed_split_is_unknown_away_from_it():
    assert not split_unknown(ASSUMED, 2)
    assert split_unknown(ASSUMED, 3) and split_unknown(ASSUMED, 4096)
    assert not split_unknown(ASSUMED, 1)  # nothing communicated
    assert not split_unknown(GIVEN, 64)
    assert not split_unknown(CostModel.linear(500e-6, 1e9), 64)  # o and w given, used unchanged at every p
    assert not split_unknown(CostModel(network=load_network("nccl-h100-ib")), 64)  # a preset's split
    # a preset whose o and w come from a fit at one p is a preset: its figures are held, its split too
    loop = CostModel.from_network(load_network("gloo-loopback"))
    assert loop.network is None and loop.ref_world_size == 2 and not split_unknown(loop, 8)
    assert step_interval(PROF, loop, SPEC, 8, Uncertainty()).sources == ()
    assert not any("measured at p = 2 only" in n for n in recommend(PROF, loop, 8).notes)


def test_at_the_measured_world_size_the_interval_is_what_it_was():
    """Every split reproduces the one p measured: validate's rows (at the calibration's p) are untouched."""
    a = step_interval(PROF, ASSUMED, SPEC, 2, UNC, draws=64, steps=20)
    b = step_interval(PROF, GIVEN, SPEC, 2, UNC, draws=64, steps=20)
    assert (a.lo_s, a.median_s, a.hi_s, a.sources) == (b.lo_s, b.median_s, b.hi_s, b.sources)
    assert not any("latency split" in s for s in a.sources)


def test_away_from_it_the_split_is_drawn_over_every_share_and_named():
    for p in (8, 256):
        point = predict(PROF, ASSUMED, SPEC, p).step_time_s
        drawn = step_interval(PROF, ASSUMED, SPEC, p, UNC, draws=200)
        held = step_interval(PROF, GIVEN, SPEC, p, UNC, draws=200)
        assert drawn.hi_s - drawn.lo_s > 2 * (held.hi_s - held.lo_s)
        assert "latency split (p = 2 measured alone: per-step share drawn over 0-100 %)" in drawn.sources
        assert not any("latency split" in s for s in held.sources)
        assert predict(PROF, ASSUMED, SPEC, p).step_time_s == point  # the point prediction keeps the assumed split
        # the draws span what the two ends of the split predict
        lo = predict(PROF, replace(ASSUMED, latency_share=0.0), SPEC, p).step_time_s
        hi = predict(PROF, replace(ASSUMED, latency_share=1.0), SPEC, p).step_time_s
        assert lo < drawn.lo_s < point < drawn.hi_s < hi


def test_the_split_has_a_stream_of_its_own_and_only_where_asked():
    unc = UNC.at_world_size(ASSUMED, 16)
    assert unc.latency_split_at == 2 and UNC.at_world_size(ASSUMED, 2).latency_split_at is None
    a = draw_inputs(PROF, ASSUMED, UNC, 40, seed=5)
    b = draw_inputs(PROF, ASSUMED, unc, 40, seed=5)
    assert [(c.o_s, c.w_bytes_per_s) for _, c in a] == [(c.o_s, c.w_bytes_per_s) for _, c in b]
    assert [p.compute_s for p, _ in a] == [p.compute_s for p, _ in b]
    shares = [c.latency_share for _, c in b]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in shares) and len(set(shares)) == 40
    assert all(c.latency_share is None for _, c in a)
    assert shares == [c.latency_share for _, c in draw_inputs(PROF, ASSUMED, unc, 40, seed=5)]


@pytest.mark.parametrize("bad", [1, 0, -2, 2.0, True, "2"])
def test_a_split_world_size_that_is_not_one_is_refused(bad):
    with pytest.raises(ValueError, match="latency_split_at"):
        Uncertainty(latency_split_at=bad)


def test_tune_away_from_the_measured_world_size_carries_the_split_in_its_gain_and_intervals():
    at = recommend(PROF, ASSUMED, 256, uncertainty=UNC, interval_draws=64)
    held = recommend(PROF, GIVEN, 256, uncertainty=UNC, interval_draws=64)
    assert at.interval is not None and held.interval is not None
    assert at.gain_p10_p90_pct is not None and held.gain_p10_p90_pct is not None
    assert any("latency split" in s for s in at.interval.sources)
    assert not any("latency split" in s for s in held.interval.sources)
    assert at.interval.hi_s - at.interval.lo_s > held.interval.hi_s - held.interval.lo_s
    assert at.recommended_bucket_mb == held.recommended_bucket_mb  # the point sweep keeps the assumed split
    (a_lo, a_hi), (h_lo, h_hi) = at.gain_p10_p90_pct, held.gain_p10_p90_pct
    assert math.isfinite(a_lo) and a_hi - a_lo > h_hi - h_lo


def test_tune_names_the_best_cap_at_either_end_of_the_split_away_from_the_measured_world_size():
    at = recommend(PROF, ASSUMED, 256, uncertainty=UNC, interval_draws=16)
    (note,) = [n for n in at.notes if "measured at p = 2 only" in n]
    ends = [recommend(PROF, replace(ASSUMED, latency_share=s), 256).recommended_bucket_mb for s in (0.0, 1.0)]
    assert ends[0] != ends[1]  # on this profile the split moves the answer
    assert f"{ends[0]:g} MiB if none of it is, {ends[1]:g} MiB if all" in note
    assert not any("measured at p = 2 only" in n for n in recommend(PROF, ASSUMED, 2, uncertainty=UNC).notes)
    assert not any("measured at p = 2 only" in n for n in recommend(PROF, GIVEN, 256, uncertainty=UNC).notes)
