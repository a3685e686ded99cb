"""The sharded-step probe's fit (``calibration.sharded_probe``) and the term it feeds
(``CostModel.broadcast_step_extra_s``): recovered from synthetic steps whose truth is known, applied once per
broadcast and only to broadcasts, carried into params, intervals and JSON."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.fit import LinearFit
from calibration.params import Params
from calibration.sharded_probe import (
    CHECK_MB,
    MIN_TURNS,
    check_configs,
    check_mb_for,
    fit_sharded_probe,
    n_broadcasts,
    probe_steps,
    sharded_probe_line,
    simulated_difference_s,
    step_check_line,
    step_check_residual,
    step_check_residuals,
)
from calibration.validate import order_cost
from simulator.interval import Uncertainty
from simulator.network import CostModel
from simulator.predict import predict
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import StrategySpec
from simulator.units import MIB

PROF = GradProfile(
    "six",
    tuple(ParamSpec(f"w{i}", MIB // 2 if i % 2 else 4096, bwd_s=1e-3) for i in range(6)),
    forward_s=2e-3,
    optimizer_s=1e-3,
)
COST = CostModel.linear(300e-6, 1.5e9, 2, broadcast_o_s=150e-6, broadcast_w_bytes_per_s=4e9)


def _steps(diff_s: float, turns: int, block: int, noise_s: float, seed: int) -> dict:
    """A probe record's payload: torch DDP steps around 10 ms and sharded ones ``diff_s`` longer, each with noise."""
    rng = np.random.default_rng(seed)
    n = turns * block
    drift = np.repeat(rng.normal(0, 1e-3, turns), block)  # the machine's state moving turn by turn, both alike
    ddp = 10e-3 + drift + rng.normal(0, noise_s, n)
    sh = 10e-3 + diff_s + drift + rng.normal(0, noise_s, n)
    return {
        "bucket_mb": 4.0,
        "block": block,
        "torch_ddp_step_times_s": ddp.tolist(),
        "sharded_step_times_s": sh.tolist(),
    }


def test_each_broadcast_of_the_sharded_step_pays_the_extra_and_nothing_else_does():
    n = n_broadcasts(PROF)
    assert n == 6
    for cost in (COST, COST.with_overrides(contention=0.2)):  # the analytic path, and the event model's
        base = {s: predict(PROF, cost, StrategySpec(s, bucket_mb=4), 2).step_time_s for s in ("sharded", "torch-ddp")}
        more = cost.with_overrides(broadcast_step_extra_s=50e-6)
        assert predict(PROF, more, StrategySpec("sharded", bucket_mb=4), 2).step_time_s == pytest.approx(
            base["sharded"] + n * 50e-6, rel=1e-9
        )
        assert predict(PROF, more, StrategySpec("torch-ddp", bucket_mb=4), 2).step_time_s == base["torch-ddp"]
    # below 0 it takes from the latency part, never below none of it
    assert more.with_overrides(broadcast_step_extra_s=-1.0).broadcast_parts_s(4096, 2)[0] == 0.0
    assert COST.broadcast_parts_s(4096, 2)[0] == pytest.approx(150e-6)


def test_the_fit_recovers_a_known_extra_per_broadcast():
    sim = simulated_difference_s(PROF, COST, 2, 4.0)
    truth = 80e-6
    fit = fit_sharded_probe(_steps(sim + 6 * truth, 30, 10, 0.3e-3, seed=1), PROF, COST, 2)
    assert fit["simulated_difference_s"] == pytest.approx(sim)
    assert fit["fitted_s"] == pytest.approx(truth, abs=25e-6)
    lo, hi = fit["ci95_s"]
    assert lo < truth < hi and lo > 0
    assert fit["identified"] and fit["broadcast_step_extra_s"] == fit["fitted_s"]
    assert "kept" in sharded_probe_line(fit) and "not kept" not in sharded_probe_line(fit)


def test_the_fit_keeps_nothing_where_the_model_already_has_the_difference():
    sim = simulated_difference_s(PROF, COST, 2, 4.0)
    fit = fit_sharded_probe(_steps(sim, 30, 10, 0.3e-3, seed=2), PROF, COST, 2)
    lo, hi = fit["ci95_s"]
    assert lo < 0 < hi
    assert not fit["identified"] and fit["broadcast_step_extra_s"] == 0.0
    assert "within the probe's noise, not kept" in sharded_probe_line(fit)


def test_an_extra_below_zero_is_kept_too():
    sim = simulated_difference_s(PROF, COST, 2, 4.0)
    fit = fit_sharded_probe(_steps(sim - 6 * 60e-6, 30, 10, 0.1e-3, seed=3), PROF, COST, 2)
    assert fit["identified"] and fit["broadcast_step_extra_s"] == pytest.approx(-60e-6, abs=20e-6)


def test_too_few_turns_give_no_interval_and_keep_nothing():
    sim = simulated_difference_s(PROF, COST, 2, 4.0)
    fit = fit_sharded_probe(_steps(sim + 1e-3, MIN_TURNS - 1, 10, 0.1e-3, seed=4), PROF, COST, 2)
    assert "ci95_s" not in fit and not fit["identified"] and fit["broadcast_step_extra_s"] == 0.0
    assert fit["fitted_s"] > 0
    assert "too few turns" in sharded_probe_line(fit)
    empty = fit_sharded_probe(
        {"bucket_mb": 4.0, "torch_ddp_step_times_s": [], "sharded_step_times_s": []}, PROF, COST, 2
    )
    assert not empty["identified"] and "no steps measured" in sharded_probe_line(empty)


def test_probe_steps_fill_the_time_in_whole_turns_and_at_least_the_minimum_of_turns():
    assert probe_steps(0.01, 20, 3.0, 10) == 300
    assert probe_steps(0.2, 20, 3.0, 1) == 20
    assert probe_steps(1.0, 2, 0.0, 1) == MIN_TURNS
    assert probe_steps(0.01, 20, 0.0, 10) == 10 * MIN_TURNS
    assert all(probe_steps(s, 20, 3.0, 10) % 10 == 0 for s in (0.001, 0.013, 0.05))


def _params(sharded_step: dict | None) -> Params:
    probes = {"sharded_step": sharded_step} if sharded_step is not None else {}
    return Params(
        backend="gloo",
        world_size=2,
        linear=LinearFit(o_s=300e-6, w_bytes_per_s=1.5e9),
        broadcast=LinearFit(o_s=150e-6, w_bytes_per_s=4e9),
        compute_profile=PROF.to_dict(),
        probes=probes,
    )


def test_params_carry_a_kept_extra_into_the_cost_model_its_interval_and_json():
    kept = {"identified": True, "broadcast_step_extra_s": 80e-6, "ci95_s": [40e-6, 120e-6]}
    p = _params(kept)
    cost = p.cost_model()
    assert cost.broadcast_step_extra_s == 80e-6 and p.fitted_terms(2)["broadcast_step_extra_s"] == 80e-6
    assert CostModel.from_dict(cost.to_dict()).broadcast_step_extra_s == 80e-6
    assert Params.from_dict(p.to_dict()).cost_model().broadcast_step_extra_s == 80e-6
    unc = p.uncertainty()
    assert unc.broadcast_extra_sd_s == pytest.approx(80e-6 / (2 * 1.959963984540054), rel=1e-6)
    assert "sharded step probe CI" in unc.for_cost(cost).sources
    # a cost without the term draws none of its error
    assert unc.for_cost(cost.with_overrides(broadcast_step_extra_s=0.0)).broadcast_extra_sd_s == 0.0
    for not_kept in ({"identified": False, "broadcast_step_extra_s": 80e-6}, None):
        q = _params(not_kept)
        assert q.cost_model().broadcast_step_extra_s == 0.0 and q.uncertainty().broadcast_extra_sd_s == 0.0
        assert "broadcast_step_extra_s" not in q.cost_model().to_dict()


def test_bad_values_of_the_term_are_refused():
    with pytest.raises(ValueError, match="broadcast's extra in the step"):
        COST.with_overrides(broadcast_step_extra_s=math.nan)
    with pytest.raises(ValueError, match="broadcast_extra_sd_s"):
        Uncertainty(broadcast_extra_sd_s=-1.0)


@pytest.mark.parametrize(
    "probe",
    [
        None,
        {"torch_ddp_step_times_s": [0.01], "sharded_step_times_s": [0.02]},  # no cap
        {"bucket_mb": "four", "torch_ddp_step_times_s": [], "sharded_step_times_s": []},
        {"bucket_mb": 4.0, "torch_ddp_step_times_s": [0.01, "x"], "sharded_step_times_s": [0.02]},
        {"bucket_mb": 4.0, "torch_ddp_step_times_s": [0.01, float("nan")], "sharded_step_times_s": [0.02]},
        {"bucket_mb": -1.0, "torch_ddp_step_times_s": [0.01], "sharded_step_times_s": [0.02]},
        {"bucket_mb": 4.0, "block": -2, "torch_ddp_step_times_s": [0.01], "sharded_step_times_s": [0.02]},
        {
            "bucket_mb": 4.0,
            "torch_ddp_step_times_s": [0.01],
            "sharded_step_times_s": [0.02],
            "compute_step_times_s": [0],
        },
        {"bucket_mb": 4.0, "torch_ddp_step_times_s": [0.01], "sharded_step_times_s": [0.02], "compute_step_times_s": 3},
        {  # check steps without their cap
            "bucket_mb": 4.0,
            "torch_ddp_step_times_s": [0.01],
            "sharded_step_times_s": [0.02],
            "compute_step_times_s": [0.005],
            "torch_ddp_check_step_times_s": [0.01],
        },
        {  # a check row of a strategy the check does not run
            "bucket_mb": 4.0,
            "torch_ddp_step_times_s": [0.01],
            "sharded_step_times_s": [0.02],
            "compute_step_times_s": [0.005],
            "checks": [{"strategy": "naive", "bucket_mb": 1.0, "step_times_s": [0.01]}],
        },
        {  # a check row without its cap
            "bucket_mb": 4.0,
            "torch_ddp_step_times_s": [0.01],
            "sharded_step_times_s": [0.02],
            "compute_step_times_s": [0.005],
            "checks": [{"strategy": "bucketed", "step_times_s": [0.01]}],
        },
        {  # a check row whose steps are not numbers > 0
            "bucket_mb": 4.0,
            "torch_ddp_step_times_s": [0.01],
            "sharded_step_times_s": [0.02],
            "compute_step_times_s": [0.005],
            "checks": [{"strategy": "bucketed", "bucket_mb": 1.0, "step_times_s": [0.01, -1]}],
        },
        {  # a check cap that is no cap
            "bucket_mb": 4.0,
            "torch_ddp_step_times_s": [0.01],
            "sharded_step_times_s": [0.02],
            "compute_step_times_s": [0.005],
            "torch_ddp_check_step_times_s": [0.01],
            "check_mb": float("inf"),
        },
    ],
)
def test_a_malformed_probe_record_is_one_clear_error(probe):
    with pytest.raises(ValueError, match="sharded-step probe record"):
        fit_sharded_probe(probe, PROF, COST, 2)


def _check_probe(ddp_factor: float, check_factor: float, sharded_gap_s: float = 0.0) -> dict:
    """A probe record whose compute-only steps run 1.2x the profile's compute and whose torch DDP steps (one bucket
    and ``CHECK_MB``) run ``ddp_factor`` / ``check_factor`` of what the model predicts for them at that compute, as
    ``validate`` would; sharded's ``sharded_gap_s`` more than the model's difference over torch DDP's."""
    block, n = 1, 8
    scale = 1.2
    prof, cost = PROF.scaled(scale), order_cost(COST, True, block)
    ddp = predict(prof, cost, StrategySpec("torch-ddp", bucket_mb=4.0), 2).step_time_s * ddp_factor
    chk = predict(prof, cost, StrategySpec("torch-ddp", bucket_mb=CHECK_MB), 2).step_time_s * check_factor
    sh = ddp + simulated_difference_s(PROF, COST, 2, 4.0) + sharded_gap_s
    return {
        "bucket_mb": 4.0,
        "block": block,
        "torch_ddp_step_times_s": [ddp] * n,
        "sharded_step_times_s": [sh] * n,
        "compute_step_times_s": [PROF.compute_s * scale] * n,
        "check_mb": CHECK_MB,
        "torch_ddp_check_step_times_s": [chk] * n,
    }


def test_the_step_check_predicts_its_rows_as_validate_predicts_them():
    fit = fit_sharded_probe(_check_probe(1.05, 0.98), PROF, COST, 2)
    assert not fit["identified"]  # sharded's difference is the model's: nothing kept, its row a check too
    rows = {(r["strategy"], r["bucket_mb"]): r for r in fit["check"]}
    assert rows["torch-ddp", 4.0]["log_residual"] == pytest.approx(-math.log(1.05), rel=1e-9)
    assert rows["torch-ddp", CHECK_MB]["log_residual"] == pytest.approx(-math.log(0.98), rel=1e-9)
    assert not any(r["fitted"] for r in fit["check"])
    want = math.sqrt(sum(r["log_residual"] ** 2 for r in fit["check"]) / 3)
    assert step_check_residual(fit) == pytest.approx(want, rel=1e-12) and want > math.log(1.02)
    line = step_check_line(fit)
    assert line and "torch-ddp 4 MiB -4.8 %" in line and "torch-ddp 2 MiB +2.0 %" in line


def test_a_sharded_row_the_extra_was_fitted_to_is_no_check():
    fit = fit_sharded_probe(_check_probe(1.05, 1.0, sharded_gap_s=2e-3), PROF, COST, 2)
    assert fit["identified"] and fit["broadcast_step_extra_s"] == pytest.approx(2e-3 / n_broadcasts(PROF))
    sharded = [r for r in fit["check"] if r["strategy"] == "sharded"]
    assert len(sharded) == 1 and sharded[0]["fitted"]
    assert "sharded 4 MiB" in step_check_line(fit) and "(fitted, no check)" in step_check_line(fit)
    ddp = [r["log_residual"] for r in fit["check"] if not r["fitted"]]
    assert step_check_residual(fit) == pytest.approx(math.sqrt(sum(x * x for x in ddp) / 2), rel=1e-12)


def test_without_compute_only_steps_there_is_no_check_and_intervals_keep_the_in_step_probes_error():
    old = _steps(1e-3, 8, 1, 1e-5, 3)  # a record from before the check
    fit = fit_sharded_probe(old, PROF, COST, 2)
    assert "check" not in fit and step_check_residual(fit) is None and step_check_line(fit) is None
    unc = _params(fit).uncertainty()
    assert unc.model_error_from == "the in-step probe" and unc.model_log_sd == 0.0


def test_params_take_the_model_error_from_the_step_check_where_it_ran():
    fit = fit_sharded_probe(_check_probe(1.05, 0.98), PROF, COST, 2)
    unc = _params(fit).uncertainty()
    assert unc.model_log_sd == step_check_residual(fit) and unc.model_error_from == "the step check"
    pct = (math.exp(unc.model_log_sd) - 1) * 100
    assert unc.model_error_steps == 3  # torch DDP at one bucket and at CHECK_MB, sharded (its extra not kept)
    assert f"model error at the step check ({pct:.1f}%, RMS of 3 steps)" in unc.sources
    # and it survives the params' JSON
    again = Params.from_dict(_params(fit).to_dict()).uncertainty()
    assert again.model_log_sd == unc.model_log_sd


def test_the_check_cap_makes_several_buckets_of_any_model():
    assert check_mb_for(4 * MIB + 1) == CHECK_MB and check_mb_for(400 * MIB) == CHECK_MB
    assert check_mb_for(4 * MIB) == 1.3 and check_mb_for(int(0.76 * MIB)) == 0.25 and check_mb_for(0) is None


def test_one_row_is_no_spread_and_leaves_the_in_step_probes_error():
    probe = _check_probe(1.05, 1.0, sharded_gap_s=2e-3)  # sharded's row fitted
    del probe["check_mb"], probe["torch_ddp_check_step_times_s"]
    fit = fit_sharded_probe(probe, PROF, COST, 2)
    assert [r["fitted"] for r in fit["check"]] == [False, True]
    assert step_check_residual(fit) is None and step_check_residuals(fit) == [fit["check"][0]["log_residual"]]
    unc = _params(fit).uncertainty()
    assert unc.model_error_from == "the in-step probe" and unc.model_error_steps == 0  # this record has no in-step


@pytest.mark.parametrize("steps", [-1, 1.5, True])
def test_the_model_errors_step_count_is_a_whole_number(steps):
    with pytest.raises(ValueError, match="model_error_steps"):
        Uncertainty(model_log_sd=0.01, model_error_steps=steps)


def test_sources_leave_the_step_count_out_where_it_is_not_known():
    assert Uncertainty(model_log_sd=math.log(1.02)).sources == ("model error at the in-step probe (2.0%)",)


def test_the_check_runs_four_configurations_more_each_predicted_as_validate_predicts_it():
    """Since the twenty-fourth session the record holds ``checks`` (``check_configs``): torch DDP at two caps and
    the hand-written ``bucketed`` at two, each a row no term is fitted to, beside the probe's own two."""
    configs = check_configs(PROF.total_grad_bytes)
    base = check_mb_for(PROF.total_grad_bytes)
    assert [st for st, _ in configs] == ["torch-ddp", "torch-ddp", "bucketed", "bucketed"]
    assert configs[0][1] == configs[2][1] == base and configs[1][1] < base < configs[3][1]
    block, n, scale = 1, 8, 1.2
    prof, cost = PROF.scaled(scale), order_cost(COST, True, block)
    misses = [1.03, 0.99, 1.05, 0.97]  # measured over predicted, per check configuration
    probe = _check_probe(1.02, 1.0)
    del probe["check_mb"], probe["torch_ddp_check_step_times_s"]
    probe["checks"] = [
        {
            "strategy": st,
            "bucket_mb": mb,
            "step_times_s": [predict(prof, cost, StrategySpec(st, bucket_mb=mb), 2).step_time_s * f] * n,
        }
        for (st, mb), f in zip(configs, misses)
    ]
    fit = fit_sharded_probe(probe, PROF, COST, 2)
    rows = fit["check"]
    assert [(r["strategy"], r["bucket_mb"]) for r in rows] == [("torch-ddp", 4.0), ("sharded", 4.0), *configs]
    for r, f in zip(rows[2:], misses):
        assert r["log_residual"] == pytest.approx(-math.log(f), rel=1e-9) and not r["fitted"]
    assert rows[0]["log_residual"] == pytest.approx(-math.log(1.02), rel=1e-9)
    want = math.sqrt(sum(r["log_residual"] ** 2 for r in rows) / 6)  # sharded's row too: its extra was not kept
    assert not fit["identified"] and step_check_residual(fit) == pytest.approx(want, rel=1e-12)
    assert _params(fit).uncertainty().model_error_steps == 6
    line = step_check_line(fit)
    assert line and f"bucketed {configs[3][1]:g} MiB +3.1 %" in line


def test_a_model_without_gradients_has_no_check_configurations():
    assert check_configs(0) == []


def test_the_checks_model_error_is_what_the_inputs_errors_do_not_spread():
    """The check's residuals hold the inputs' errors too, which every interval draws again: the term is their mean
    square less, in quadrature, each row's spread under those draws (counted once, not twice)."""
    probe = _check_probe(1.05, 0.98)
    plain = fit_sharded_probe(probe, PROF, COST, 2)
    assert all("inputs_log_sd" not in r for r in plain["check"])
    unc = Uncertainty(o_sd_s=100e-6, w_log_sd=0.05)
    fit = fit_sharded_probe(probe, PROF, COST, 2, unc=unc)
    sds = [r["inputs_log_sd"] for r in fit["check"]]
    assert all(s > 0 for s in sds) and len(set(sds)) == 3
    res = [r["log_residual"] for r in fit["check"]]
    assert res == [r["log_residual"] for r in plain["check"]]  # the residuals do not change, their share does
    want = math.sqrt(max(0.0, sum(x * x for x in res) - sum(s * s for s in sds)) / 3)
    assert step_check_residual(fit) == pytest.approx(want, rel=1e-12) and want < step_check_residual(plain)
    # inputs that spread the predictions more than the check missed by leave no model error
    wide = fit_sharded_probe(probe, PROF, COST, 2, unc=Uncertainty(o_sd_s=2e-3, w_log_sd=0.5))
    assert step_check_residual(wide) == 0.0
    # and the line says what was taken off, so a 0.0 % beside misses of a few % is not read as a contradiction
    raw = (math.exp(math.sqrt(sum(x * x for x in res) / 3)) - 1) * 100
    line = step_check_line(wide)
    assert line is not None and line.endswith(
        f": the model's own error 0.0 % (the misses' root mean square {raw:.1f} %, less what the fitted inputs' "
        "errors spread the predictions by), its intervals' model-error term"
    )
    assert step_check_line(plain).endswith(
        f": the model's own error {(math.exp(step_check_residual(plain)) - 1) * 100:.1f} % (the misses' root mean "
        "square), its intervals' model-error term"
    )
