"""Issue 11, world size: one all-reduce model across p, and one meaning of its terms everywhere.

* ``fit_abg`` recovers a known per-call constant ``o``, ring ``alpha`` and link
  bandwidth from synthetic records at several world sizes (5 % log-normal
  noise, as in tests/test_fit.py) and extrapolates to a p it never saw;
* ``calibrate``'s cross-p step (``fit_across_world_sizes``) keeps the stream
  probe's per-call overhead at the smallest p;
* a params file fitted at one p says its latency split is assumed, one fitted
  across p says which p were measured, and every output repeats it;
* a params file and a network preset with the same numbers give the same
  all-reduce times at every p: ``o`` means the same in both.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from calibration.calibrate import fit_across_world_sizes
from calibration.fit import ABGFit, abg_from_linear, fit_abg, fit_linear
from calibration.params import Params
from ddpsim.cli import main
from realrun.records import make_record
from simulator.network import (
    ASSUMED_LATENCY_SHARE,
    CostModel,
    NetworkSpec,
    load_network,
    split_linear,
)

O_CALL, ALPHA, BW = 300e-6, 120e-6, 25e6  # 300 us per call, 120 us per ring step, a 200 Mbit/s link
SIZES = [4096 * 4**k for k in range(6)]  # 4 KiB .. 4 MiB
ENV = {"host": "synthetic", "backend": "gloo"}


def truth(n: float, p: int) -> float:
    return O_CALL + 2 * (p - 1) * ALPHA + 2 * (p - 1) / p * n / BW


def records(ps=(2, 4), seed=0, iters=20) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for p in ps:
        for n in SIZES:
            times = truth(n, p) * rng.lognormal(0, 0.05, iters)
            out.append(
                make_record(
                    "allreduce",
                    ENV,
                    impl="native",
                    backend="gloo",
                    world_size=p,
                    msg_bytes=n,
                    count=n // 4,
                    dtype="float32",
                    iters=iters,
                    warmup=2,
                    times_s=times.tolist(),
                    median_s=float(np.median(times)),
                    link_mbit=200.0,
                )
            )
    return out


def rel(a: float, b: float) -> float:
    return abs(a / b - 1.0)


# ---- the fit across p --------------------------------------------------------------------------
@pytest.mark.parametrize("ps", [(2, 4), (2, 4, 8)])
def test_fit_across_p_recovers_per_call_o_alpha_and_bandwidth(ps):
    fit = fit_abg(records(ps), link_mbit=200, n_boot=50)
    assert fit.split == "fitted" and fit.world_sizes == ps
    assert rel(fit.o_s, O_CALL) < 0.15, fit.o_s
    assert rel(fit.alpha_s, ALPHA) < 0.15, fit.alpha_s
    assert rel(1 / fit.beta_s_per_byte, BW) < 0.03, 1 / fit.beta_s_per_byte
    assert fit.o_ci_s[0] <= O_CALL <= fit.o_ci_s[1] and fit.alpha_ci_s[0] <= ALPHA <= fit.alpha_ci_s[1]
    # p = 64 was never measured: the zero-byte time and a large call are still right
    assert rel(fit.predict_time_s(0, 64), truth(0, 64)) < 0.1
    assert rel(fit.predict_time_s(4 << 20, 64), truth(4 << 20, 64)) < 0.03


def test_fit_without_the_per_call_constant_puts_it_all_on_the_steps():
    """The old model (o = 0, everything per step) misses a p it did not see: the constant matters."""
    fit = fit_abg(records((2, 4, 8)), link_mbit=200, n_boot=0, call_overhead=False)
    assert fit.o_s == 0.0
    both = fit_abg(records((2, 4, 8)), link_mbit=200, n_boot=0)
    assert rel(both.predict_time_s(0, 64), truth(0, 64)) < rel(fit.predict_time_s(0, 64), truth(0, 64))


def test_one_world_size_is_not_a_fit_across_p_and_its_split_is_assumed():
    with pytest.raises(ValueError, match="two or more world sizes"):
        fit_abg(records((2,)))
    lin = fit_linear(records((2,)), world_size=2, link_mbit=200, n_boot=0)
    one = abg_from_linear(lin)
    assert one.split == "assumed" and one.world_sizes == (2,) and "assumed" in one.note
    # exact at the p it was measured at, whatever the split
    back = one.linear_at(2)
    assert math.isclose(back.o_s, lin.o_s, rel_tol=1e-12)
    assert math.isclose(back.w_bytes_per_s, lin.w_bytes_per_s, rel_tol=1e-12)
    assert math.isclose(2 * one.alpha_s, ASSUMED_LATENCY_SHARE * lin.o_s, rel_tol=1e-12)
    assert ABGFit.from_dict(json.loads(json.dumps(one.to_dict()))) == one


def test_calibrate_keeps_the_stream_overhead_at_the_smallest_p():
    recs = records((2, 4), seed=3)
    lin = fit_linear(recs, world_size=2, link_mbit=200, n_boot=0)
    stream_o = lin.o_s + 500e-6  # calls back to back pay 0.5 ms more, as the stream probe measures
    params = Params(backend="gloo", world_size=2, linear=replace(lin, o_s=stream_o), link_mbit=200.0)
    abg = fit_across_world_sizes(recs, params, 200.0)
    assert abg.world_sizes == (2, 4) and abg.split == "fitted" and "shifted" in abg.note
    assert math.isclose(abg.linear_at(2).o_s, stream_o, rel_tol=1e-9)


# ---- what params say, and how they agree with presets --------------------------------------------
def _params(ps=(2, 4)) -> Params:
    recs = records(ps, seed=5)
    lin = fit_linear(recs, world_size=ps[0], link_mbit=200, n_boot=0, statistic="mean")
    abg = fit_abg(recs, link_mbit=200, n_boot=0, statistic="mean") if len(ps) > 1 else None
    return Params(backend="gloo", world_size=ps[0], linear=lin, abg=abg, link_mbit=200.0, channels=1)


def test_params_fitted_at_one_p_say_the_latency_split_is_assumed():
    p = _params((2,))
    assert p.measured_world_sizes == (2,) and p.network_terms().split == "assumed"
    cost = p.cost_model()
    at2, at4 = cost.provenance(2), cost.provenance(4)
    assert not at2["extrapolated"] and "p = 2 measured" in at2["text"]
    assert at4["extrapolated"] and at4["latency_split"] == "assumed"
    assert at4["text"].startswith("network fitted at p = 2 only; p = 4 extrapolated") and "assumed" in at4["text"]
    # exact at p = 2 (the linear fit as measured)
    assert cost.linear_at(2) == pytest.approx((p.o_s, p.w_bytes_per_s))


def test_params_fitted_across_p_say_which_p_were_measured():
    p = _params((2, 4))
    assert p.measured_world_sizes == (2, 4)
    cost = p.cost_model()
    assert cost.network is not None and cost.terms().split == "fitted"
    prov = cost.provenance(64)
    assert prov["text"].startswith("network fitted at p = 2, 4; p = 64 extrapolated")
    assert prov["extrapolated"] and prov["measured_world_sizes"] == [2, 4] and "assumed" not in prov["text"]
    assert not cost.provenance(4)["extrapolated"]
    # it survives the file
    back = Params.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back.cost_model().allreduce_time_s(1 << 20, 64) == cost.allreduce_time_s(1 << 20, 64)


def test_a_params_file_and_a_preset_with_the_same_terms_agree_at_every_p(tmp_path):
    p = _params((2, 4))
    t = p.network_terms()
    preset = {
        "schema": "ddpsim.network/1",
        "name": "same-terms",
        "backend": "gloo",
        "channels": 1,
        "gpus_per_node": 1,
        "call_overhead_s": t.o_s,
        "inter": {"algorithms": ["ring"], "alpha_s": t.alpha_s, "bw_bytes_per_s": 1 / t.beta_s_per_byte},
    }
    path = tmp_path / "same.json"
    path.write_text(json.dumps(preset))
    from_preset = CostModel.from_network(load_network(str(path)))
    from_params = p.cost_model()
    assert from_preset.terms().call_overhead_s == from_params.terms().call_overhead_s == t.o_s
    for world in (2, 3, 4, 8, 64, 4096):
        for n in (0, 4096, 1 << 20, 64 << 20):
            assert math.isclose(from_params.allreduce_time_s(n, world), from_preset.allreduce_time_s(n, world))


def test_a_linear_model_is_the_preset_of_its_split_terms():
    """o and w at one p, and the preset holding split_linear's terms: same times at every p."""
    o, w, ref = 1.2e-3, 2.4e7, 2
    lin = CostModel.linear(o, w, ref)
    t = split_linear(o, w, ref)
    net = CostModel.from_network(
        NetworkSpec.from_alpha_beta(
            "split", call_overhead_s=t.call_overhead_s, alpha_s=t.alpha_s, bw_bytes_per_s=t.bw_bytes_per_s
        )
    )
    assert math.isclose(t.call_overhead_s, (1 - ASSUMED_LATENCY_SHARE) * o)
    for world in (2, 4, 16, 64):
        for n in (0, 1 << 20):
            assert math.isclose(lin.allreduce_time_s(n, world), net.allreduce_time_s(n, world), rel_tol=1e-9)
    # the per-call constant does not grow with p; before issue 11 all of o did (25x at p = 64)
    assert lin.linear_at(64)[0] < 2 * (64 - 1) / 2 * o
    assert math.isclose(lin.linear_at(64)[0], t.call_overhead_s + 126 * t.alpha_s)
    with pytest.raises(ValueError, match="latency share"):
        CostModel.linear(o, w, ref, latency_share=1.5)


def test_presets_say_no_p_was_measured():
    cost = CostModel.from_network(load_network("nccl-h100-ib"))
    prov = cost.provenance(64)
    assert prov["latency_split"] == "preset" and prov["measured_world_sizes"] == []
    assert "no p measured" in prov["text"] and prov["extrapolated"]


# ---- every output says it ---------------------------------------------------------------------------
def test_predict_sweep_tune_outputs_say_which_p_were_measured(tmp_path, capsys, monkeypatch):
    from simulator import zoo

    monkeypatch.chdir(tmp_path)  # tune writes its run folder here

    prof = zoo.profile_from_flops(zoo.load_model_spec("gpt2-small"), zoo.load_device(zoo.DEFAULT_DEVICE))
    path = replace(_params((2, 4)), compute_profile=prof.to_dict()).save(tmp_path / "params.json")
    want = "network fitted at p = 2, 4; p = 64 extrapolated"
    for cmd in (["predict"], ["sweep", "--points", "4"], ["tune"]):
        assert main([*cmd, "--params", str(path), "--world-size", "64"]) == 0
        assert want in capsys.readouterr().out, cmd
        assert main([*cmd, "--params", str(path), "--world-size", "64", "--json"]) == 0
        d = json.loads(capsys.readouterr().out)["results"]
        assert d["network_provenance"]["text"].startswith(want), cmd
        assert d["network_provenance"]["measured_world_sizes"] == [2, 4]
    assert main(["predict", "--params", str(path), "--world-size", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]["network_provenance"]["extrapolated"] is False


def test_validate_says_which_p_were_measured():
    """validate's result and text name the measured p: params from p = 2 validated at p = 4."""
    from calibration.validate import format_validation

    params = _params((2,))
    prov = params.cost_model().provenance(4)
    res = {
        "model": "gpt",
        "world_size": 4,
        "backend": "gloo",
        "link_mbit": 200.0,
        "measured_compute_s": 0.85,
        "predicted_compute_s": 0.42,
        "rescale_compute": True,
        "network_provenance": prov,
        "rows": [],
        "median_abs_error_pct": 0.0,
        "worst_abs_error_pct": 0.0,
        "n_configs": 0,
        "best_bucket": {},
    }
    text = format_validation(res)
    assert "network fitted at p = 2 only; p = 4 extrapolated" in text and "latency split assumed" in text


# ---- contention at each world size (the in-step probe per p) -------------------------------------
def _probe(c: float, cc: float, step_s: float, sim_s: float, boot=()) -> dict:
    return {
        "contention_c": c,
        "comm_contention_c": cc,
        "measured": {"step_s": step_s},
        "simulated_at_fit": {"step_s": sim_s},
        "bootstrap": [list(b) for b in boot],
    }


def test_contention_is_taken_at_the_p_it_was_measured_at_and_the_nearest_p_elsewhere():
    base = _params((2, 4))
    one = replace(base, contention_c=0.1, comm_contention_c=0.5, probes={"in_step": _probe(0.1, 0.5, 1.0, 1.0)})
    # measured at p = 2 only: used everywhere, and said
    assert one.contention_at(None)[:2] == (0.1, 0.5)
    c, cc, note = one.contention_at(8)
    assert (c, cc) == (0.1, 0.5) and note == "contention measured at p = 2, used at p = 8"
    both = replace(
        one, probes={**one.probes, "in_step_by_p": {"4": _probe(0.3, 1.5, 1.0, 1.1, [(0.3, 1.4), (0.4, 1.6)])}}
    )
    assert both.in_step_fits().keys() == {2, 4}
    assert both.contention_at(2) == (0.1, 0.5, "contention measured at p = 2, 4; p = 2 measured")
    assert both.contention_at(4) == (0.3, 1.5, "contention measured at p = 2, 4; p = 4 measured")
    assert both.contention_at(16) == (0.3, 1.5, "contention measured at p = 2, 4; p = 16 uses p = 4's")
    assert both.contention_at(3)[:2] == (0.3, 1.5)  # nearest by ratio: 4/3 < 3/2
    for p, want in ((2, (0.1, 0.5)), (4, (0.3, 1.5)), (64, (0.3, 1.5))):
        cost = both.cost_model(world_size=p)
        assert (cost.contention, cost.comm_contention) == want
    # the interval draws that p's refits and its residual
    unc = both.uncertainty(world_size=4)
    assert unc.contention_draws == ((0.3, 1.4), (0.4, 1.6)) and unc.model_log_sd == pytest.approx(math.log(1.1))
    assert both.uncertainty(world_size=2).model_log_sd == 0.0
    # and it survives the file
    back = Params.from_dict(json.loads(json.dumps(both.to_dict())))
    assert back.contention_at(4) == both.contention_at(4)
