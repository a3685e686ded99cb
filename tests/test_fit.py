"""Fits recover known parameters from synthetic records; bad input gets a clear ValueError.

Noise model of the synthetic records: each iteration is the true time times a
log-normal factor with sigma 0.05 (5 %, about the spread seen on this box
for large messages), 20 iterations per size. The median of 20 such samples has
a relative standard deviation of about 1.2533 * 0.05 / sqrt(20) = 1.4 %, and
each parameter is pinned by several sizes, so recovering within 3 % is about
3 standard deviations: a fit that works passes, a fit that is biased by more
than noise fails.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from calibration.fit import (
    LOOPBACK,
    ABGFit,
    LinearFit,
    fit_abg,
    fit_contention,
    fit_contention_from_runs,
    fit_linear,
)
from calibration.params import PARAMS_SCHEMA, Params
from realrun.records import append_records, make_record, read_records
from simulator.collectives import linear_params_from_abg, ring_allreduce_time_s

O_S = 400e-6  # DESIGN.md: a fit o of about 0.4 ms on this box
W_BPS = 1.4e9  # and w of about 1.4 GB/s
SIZES = [4096 * 4**k for k in range(8)]  # 4 KiB .. 64 MiB
ENV = {"host": "synthetic", "backend": "gloo"}


def _record(n: int, times: np.ndarray, p: int = 2, **kw) -> dict:
    fields = dict(
        backend="gloo",
        world_size=p,
        impl="native",
        msg_bytes=n,
        count=n // 4,
        dtype="float32",
        iters=len(times),
        warmup=2,
        times_s=[float(t) for t in times],
        median_s=float(np.median(times)),
        p10_s=float(np.percentile(times, 10)),
        p90_s=float(np.percentile(times, 90)),
        link_mbit=None,
    )
    fields.update(kw)
    return make_record("allreduce", ENV, **fields)


def linear_records(seed: int, o_s=O_S, w=W_BPS, iters=20, sigma=0.05, slow_frac=0.0, p=2, **kw) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for n in SIZES:
        t = (o_s + n / w) * rng.lognormal(0.0, sigma, iters)
        if slow_frac:
            t = np.where(rng.random(iters) < slow_frac, 5.0 * t, t)
        out.append(_record(n, t, p=p, **kw))
    return out


def rel(a: float, b: float) -> float:
    return abs(a / b - 1.0)


# ---- o and w ---------------------------------------------------------------
def test_linear_fit_recovers_o_and_w_within_ci_and_3pct():
    fit = fit_linear(linear_records(seed=1))
    assert fit.n_points == 8 and fit.n_samples == 8 * 20
    assert rel(fit.o_s, O_S) < 0.03, (fit.o_us, O_S * 1e6)
    assert rel(fit.w_bytes_per_s, W_BPS) < 0.03, (fit.w_gbps, W_BPS / 1e9)
    assert fit.o_ci_s[0] <= O_S <= fit.o_ci_s[1], fit.o_ci_us
    assert fit.w_ci_bytes_per_s[0] <= W_BPS <= fit.w_ci_bytes_per_s[1], fit.w_ci_gbps
    # The fit's own error is the noise of a median (~1.4 %), not more.
    assert fit.rel_rms < 0.03 and fit.max_abs_rel_err < 0.06
    assert math.isclose(fit.o_us, fit.o_s * 1e6) and math.isclose(fit.w_gbps, fit.w_bytes_per_s / 1e9)


def test_confidence_interval_covers_truth_about_95pct_and_is_narrow():
    # 20 independent data sets: a 95 % interval should miss about once. Allow 3 misses
    # (P[>3 misses | 95 % coverage] = 1.6 %). Half-widths under 5 % show it is not
    # honest merely by being huge (the median's noise is ~1.4 %).
    miss_o = miss_w = 0
    widths = []
    for seed in range(100, 120):
        f = fit_linear(linear_records(seed), n_boot=100, seed=seed)
        miss_o += not (f.o_ci_s[0] <= O_S <= f.o_ci_s[1])
        miss_w += not (f.w_ci_bytes_per_s[0] <= W_BPS <= f.w_ci_bytes_per_s[1])
        widths += [
            (f.o_ci_s[1] - f.o_ci_s[0]) / 2 / f.o_s,
            (f.w_ci_bytes_per_s[1] - f.w_ci_bytes_per_s[0]) / 2 / f.w_bytes_per_s,
        ]
    assert miss_o <= 3 and miss_w <= 3, (miss_o, miss_w)
    assert max(widths) < 0.05, max(widths)


def test_slow_iterations_do_not_drag_the_fit():
    # 10 % of iterations 5x slower (gloo threads colliding). The median of a 90/10 mixture is the
    # 0.5/0.9 = 55.6th percentile of the clean times: +0.14 sigma = +0.7 %. A mean would be
    # 0.9 + 0.1 * 5 = 1.4x the truth.
    recs = linear_records(seed=2, slow_frac=0.10)
    fit = fit_linear(recs)
    assert rel(fit.o_s, O_S) < 0.03 and rel(fit.w_bytes_per_s, W_BPS) < 0.03, (fit.o_us, fit.w_gbps)
    # The same data summarised by means (no raw times) is dragged: the test can tell.
    means = [dict(r, times_s=[], median_s=float(np.mean(r["times_s"]))) for r in recs]
    dragged = fit_linear(means)
    assert rel(dragged.w_bytes_per_s, W_BPS) > 0.25 and dragged.o_s > O_S * 1.1, (dragged.o_us, dragged.w_gbps)


def test_a_whole_size_off_the_line_is_downweighted_by_the_robust_loss():
    # One size (16 KiB) where the slow mode won every iteration: its median is 3x.
    recs = linear_records(seed=3)
    recs[1] = dict(recs[1], times_s=[3 * t for t in recs[1]["times_s"]])
    robust = fit_linear(recs)
    plain = fit_linear(recs, loss="linear")
    assert rel(robust.o_s, O_S) < 0.03, robust.o_us
    # ordinary (relative) least squares is pulled up by about 8 % (433 us on this seed and 5 others)
    assert rel(plain.o_s, O_S) > 0.06, plain.o_us
    assert robust.max_abs_rel_err > 0.5  # and the fit reports the bad size instead of hiding it
    assert np.argmax(np.abs(robust.rel_errors)) == 1


def test_linear_fit_selects_one_configuration():
    recs = linear_records(seed=4) + linear_records(seed=5, w=25e6, link_mbit=200.0)
    with pytest.raises(ValueError, match="link rates"):
        fit_linear(recs)
    lo = fit_linear(recs, link_mbit=LOOPBACK)
    link = fit_linear(recs, link_mbit=200)
    assert rel(lo.w_bytes_per_s, W_BPS) < 0.03 and lo.link_mbit is None
    assert rel(link.w_bytes_per_s, 25e6) < 0.03 and link.link_mbit == 200.0
    with pytest.raises(ValueError, match="world sizes"):
        fit_linear(linear_records(seed=6) + linear_records(seed=7, p=4))


def test_linear_fit_round_trips_through_json():
    fit = fit_linear(linear_records(seed=8), n_boot=20)
    back = LinearFit.from_dict(json.loads(json.dumps(fit.to_dict(), allow_nan=False)))
    assert back == fit


# ---- bad input --------------------------------------------------------------
def test_empty_measurement_is_a_clear_error():
    with pytest.raises(ValueError, match="no records given"):
        fit_linear([])
    step = make_record("ddp_step", ENV, model="mlp", strategy="torch-ddp", step_times_s=[0.1])
    with pytest.raises(ValueError, match="none of the 1 records is an all-reduce"):
        fit_linear([step])
    with pytest.raises(ValueError, match="impl='ring'.*found: native"):
        fit_linear(linear_records(seed=9), impl="ring")
    with pytest.raises(ValueError, match="at least two message sizes"):
        fit_linear(linear_records(seed=9)[:1])
    bad = linear_records(seed=9)
    bad[0] = dict(bad[0], times_s=[0.001, -1.0])
    with pytest.raises(ValueError, match="record #0"):
        fit_linear(bad)


def test_torn_last_line_is_skipped_and_the_rest_is_fitted(tmp_path):
    recs = linear_records(seed=10)
    path = tmp_path / "allreduce.jsonl"
    append_records(path, recs)
    with open(path, "a") as fh:
        fh.write(json.dumps(_record(SIZES[-1], np.array([0.05] * 20)))[:57])  # a writer killed mid-line
    with pytest.warns(UserWarning, match="incomplete"):
        back = read_records(path, "allreduce")
    assert len(back) == len(recs)
    assert fit_linear(back, n_boot=20) == fit_linear(recs, n_boot=20)


# ---- alpha, beta, gamma -----------------------------------------------------
ALPHA, BETA, GAMMA = 50e-6, 0.5e-9, 0.1e-9  # 2 beta + gamma = 1.1 ns/byte


def ring_records(ps=(2, 4, 6), seed=20) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        _record(n, ring_allreduce_time_s(n, p, ALPHA, BETA, GAMMA) * rng.lognormal(0, 0.05, 20), p=p)
        for p in ps
        for n in SIZES
    ]


def test_abg_fit_recovers_alpha_and_bandwidth_term_and_predicts_p8():
    fit = fit_abg(ring_records())
    assert fit.world_sizes == (2, 4, 6) and len(fit.points) == 24
    assert rel(fit.alpha_s, ALPHA) < 0.03, fit.alpha_s
    # ring: beta and gamma only appear as 2 beta + gamma, so gamma is not identified and set to 0
    assert not fit.gamma_identified and fit.gamma_s_per_byte == 0.0 and "combination" in fit.note
    assert rel(2 * fit.beta_s_per_byte + fit.gamma_s_per_byte, 2 * BETA + GAMMA) < 0.03
    assert fit.alpha_ci_s[0] <= ALPHA <= fit.alpha_ci_s[1]
    # extrapolate to p = 8, never measured: within 3 % at every size
    errs = [rel(fit.predict_time_s(n, 8), ring_allreduce_time_s(n, 8, ALPHA, BETA, GAMMA)) for n in SIZES]
    assert max(errs) < 0.03, errs
    assert max(abs(pt.rel_err) for pt in fit.points) < 0.06


def test_abg_fit_with_given_gamma_recovers_beta():
    fit = fit_abg(ring_records(seed=21), gamma_s_per_byte=GAMMA)
    assert fit.gamma_s_per_byte == GAMMA and not fit.gamma_identified
    assert rel(fit.beta_s_per_byte, BETA) < 0.03, fit.beta_s_per_byte
    assert fit.beta_ci_s_per_byte[0] <= BETA <= fit.beta_ci_s_per_byte[1]


def test_abg_linear_at_matches_the_collectives_formula():
    fit = fit_abg(ring_records(seed=22), n_boot=20)
    lin = fit.linear_at(8)
    o, w = linear_params_from_abg("ring", 8, fit.alpha_s, fit.beta_s_per_byte, fit.gamma_s_per_byte)
    assert (lin.o_s, lin.w_bytes_per_s) == (fit.o_s + o, w)
    assert math.isclose(lin.o_s, fit.o_s + 2 * 7 * fit.alpha_s)  # per-call o + ring: 2 (p-1) alpha
    assert lin.o_ci_s[0] <= lin.o_s <= lin.o_ci_s[1] and lin.source == "abg:ring@p=8"
    assert ABGFit.from_dict(json.loads(json.dumps(fit.to_dict(), allow_nan=False))) == fit


def test_abg_needs_two_world_sizes():
    with pytest.raises(ValueError, match=r"two or more world sizes.*\[2\].*fit_linear"):
        fit_abg(ring_records(ps=(2,)))
    with pytest.raises(ValueError, match="unknown all-reduce algorithm"):
        fit_abg(ring_records(), algorithm="butterfly")


# ---- contention -------------------------------------------------------------
def test_fit_contention_inverts_the_slowdown_model():
    # W = 1.0 s of compute, c = 0.5, comm in flight 40 % of the overlapped time:
    # W = T (1 - f) + T f / (1 + c)  =>  T = W / (1 - f c / (1 + c)) = 1 / (1 - 0.4/3) = 1.1538 s
    T = 1.0 / (1 - 0.4 * 0.5 / 1.5)
    assert math.isclose(fit_contention(1.0, T, 0.4), 0.5, rel_tol=1e-12)
    # several runs, different busy fractions, same c
    f = np.array([0.2, 0.5, 0.8])
    Ts = 2.0 / (1 - f * (0.3 / 1.3))
    assert math.isclose(fit_contention([2.0] * 3, Ts, f), 0.3, rel_tol=1e-12)
    assert fit_contention(1.0, 0.99, 0.5) == 0.0  # faster with comm: no contention, clipped at 0
    with pytest.raises(ValueError, match="never in flight"):
        fit_contention(1.0, 1.2, 0.0)


def test_fit_contention_from_runs_finds_the_c_of_the_predictor():
    measured = [0.150, 0.120, 0.200]
    sens = [0.04, 0.01, 0.07]  # seconds of step time per unit of c (a stand-in for the simulator)
    base = [m - s * 0.7 for m, s in zip(measured, sens)]
    calls = []

    def predict(c: float) -> list[float]:
        calls.append(c)
        return [b + s * c for b, s in zip(base, sens)]

    c = fit_contention_from_runs(measured, predict)
    assert abs(c - 0.7) < 1e-3 and all(0 <= x <= 3 for x in calls) and len(calls) < 60
    # a predictor already too slow at c = 0: the best c is the lower bound
    assert fit_contention_from_runs(measured, lambda c: [m * (1.1 + c) for m in measured]) < 1e-3
    with pytest.raises(ValueError, match="returned 2 step times for 3 runs"):
        fit_contention_from_runs(measured, lambda c: [0.1, 0.2])
    with pytest.raises(ValueError, match="at least one"):
        fit_contention_from_runs([], predict)


# ---- params -----------------------------------------------------------------
def _params(**kw) -> Params:
    fit = fit_linear(linear_records(seed=30), n_boot=20)
    base = dict(
        backend="gloo",
        world_size=2,
        linear=fit,
        contention_c=0.2,
        env={"host": "x"},
        source_records=["runs/allreduce.jsonl"],
    )
    base.update(kw)
    return Params(**base)


def test_params_round_trip_and_headline_numbers(tmp_path):
    p = _params(abg=fit_abg(ring_records(), n_boot=20))
    assert p.channels == 2  # gloo: 2 worker threads
    path = p.save(tmp_path / "params.json")
    d = json.loads(path.read_text())
    assert d["schema"] == PARAMS_SCHEMA and math.isclose(d["o_us"], p.linear.o_s * 1e6)
    assert math.isclose(d["w_gbps"], p.linear.w_bytes_per_s / 1e9)
    assert Params.load(path) == p
    assert _params(backend="nccl").channels == 1


def test_params_of_another_schema_or_malformed_are_clear_errors(tmp_path):
    path = _params().save(tmp_path / "params.json")
    d = json.loads(path.read_text())
    other = tmp_path / "old.json"
    other.write_text(json.dumps(dict(d, schema="ddpsim.params/0")))
    with pytest.raises(ValueError, match=r"old\.json.*'ddpsim.params/0'.*ddpsim.params/1"):
        Params.load(other)
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({k: v for k, v in d.items() if k != "linear"}))
    with pytest.raises(ValueError, match=r"missing\.json.*linear"):
        Params.load(missing)
    torn = tmp_path / "torn.json"
    torn.write_text(path.read_text()[:100])
    with pytest.raises(ValueError, match=r"torn\.json is not valid JSON"):
        Params.load(torn)
    with pytest.raises(ValueError, match="cannot read params"):
        Params.load(tmp_path / "absent.json")
    with pytest.raises(ValueError, match="no default channel count"):
        _params(backend="mpi")
    with pytest.raises(ValueError, match="contention_c"):
        _params(contention_c=-0.1)


def test_bandwidth_from_the_transfer_dominated_sizes_is_not_tilted_by_small_calls():
    """Small calls that do not follow the line (here 3x slower, as gloo's colliding threads make
    them) tilt an all-size fit with relative residuals; the slope of the large sizes is the link's."""
    from calibration.fit import fit_bandwidth, transfer_dominated_sizes, with_terms

    w = 125e6  # a 1000 Mbit/s link
    rng = np.random.default_rng(3)
    recs = []
    for n in SIZES:
        t = 2e-3 + n / w if n >= 1 << 20 else 3 * (2e-3 + n / w)
        recs.append(_record(n, t * np.exp(rng.normal(0, 0.02, 20))))
    everything = fit_linear(recs, statistic="mean")
    assert everything.w_bytes_per_s > 1.05 * w  # the tilt this guards against
    big = transfer_dominated_sizes(everything)
    assert big and min(big) >= 1 << 20 and max(big) == SIZES[-1]
    bw = fit_bandwidth(recs, everything, statistic="mean")
    assert bw is not None and bw.w_bytes_per_s == pytest.approx(w, rel=0.02)
    assert bw.sizes_bytes == big
    # o from one fit, w from the other; the errors are those of the combination at every size
    stream = LinearFit(o_s=1.5e-3, w_bytes_per_s=1e9, o_ci_s=(1e-3, 2e-3))
    both = with_terms(everything, recs, stream, bw, "o from streams; w from big sizes", statistic="mean")
    assert (both.o_s, both.o_ci_s, both.w_bytes_per_s) == (1.5e-3, (1e-3, 2e-3), bw.w_bytes_per_s)
    assert both.sizes_bytes == tuple(SIZES) and both.source == "o from streams; w from big sizes"
    k = SIZES.index(64 << 20)
    mean_64 = np.mean(recs[k]["times_s"])
    assert both.rel_errors[k] == pytest.approx((1.5e-3 + (64 << 20) / bw.w_bytes_per_s) / mean_64 - 1)
    # too few transfer-dominated sizes: nothing better than the all-size fit is known
    assert fit_bandwidth(recs[:3], fit_linear(recs[:3]), statistic="mean") is None


def test_bandwidth_from_median_calls_is_not_moved_by_one_stalled_call_in_five():
    """The probe times few large calls over a slow link (5 at 8-64 MiB here, as over 200 Mbit/s); one of
    five stalled (here at 16 and 64 MiB) moves the mean of its size, so a fit of means puts w low; the medians keep the link's rate."""
    from calibration.fit import fit_bandwidth

    w = 25e6  # a 200 Mbit/s link
    rng = np.random.default_rng(5)
    recs = []
    for n in SIZES:
        k = 5 if n >= 8 << 20 else 40
        t = (1e-3 + n / w) * np.exp(rng.normal(0, 0.002, k))
        if n >= 16 << 20:
            t[2] *= 1.3  # one stalled call (TCP, the queue), as the stored calibrations have at 4-32 MiB
        recs.append(_record(n, t))
    everything = fit_linear(recs, statistic="mean")
    by_mean = fit_bandwidth(recs, everything, statistic="mean")
    by_median = fit_bandwidth(recs, everything, statistic="median")
    assert by_mean is not None and by_median is not None
    assert by_mean.w_bytes_per_s < 0.98 * w, by_mean.w_bytes_per_s  # the tilt this guards against
    assert by_median.w_bytes_per_s == pytest.approx(w, rel=0.005)


# ---- the in-step copy rate (calibration.probes.in_step_copy_rate) -----------------------
def test_in_step_copy_rate_is_the_median_over_ranks_of_bytes_in_and_out_over_the_median_step():
    from calibration.probes import in_step_copy_rate

    mb = 1 << 20
    ranks = [
        {"rank": 0, "bytes": mb, "copy_in_s": [1e-3, 2e-3, 9e-3], "copy_out_s": [1e-3, 1e-3, 1e-3]},  # median 3 ms
        {"rank": 1, "bytes": mb, "copy_in_s": [3e-3, 3e-3, 3e-3], "copy_out_s": [2e-3, 2e-3, 2e-3]},  # median 5 ms
    ]
    assert in_step_copy_rate(ranks) == pytest.approx((2 * mb / 3e-3 + 2 * mb / 5e-3) / 2)  # median of 2 ranks
    # ranks that copied different bytes (unused parameters differ): each its own rate
    assert in_step_copy_rate([ranks[0], dict(ranks[1], bytes=2 * mb)]) == pytest.approx(
        (2 * mb / 3e-3 + 4 * mb / 5e-3) / 2
    )
    # a rank with nothing timed does not count; nothing to say where no rank copied anything
    assert in_step_copy_rate([ranks[0], dict(ranks[1], copy_in_s=[], copy_out_s=[])]) == pytest.approx(2 * mb / 3e-3)
    assert in_step_copy_rate([dict(r, copy_in_s=[], copy_out_s=[]) for r in ranks]) is None
    assert in_step_copy_rate([dict(r, bytes=0) for r in ranks]) is None


def test_in_step_scale_rate_is_the_median_over_ranks_of_buffer_bytes_over_the_median_pass():
    from calibration.probes import in_step_scale_rate

    mb = 1 << 20
    ranks = [
        {"rank": 0, "scale_bytes": 4 * mb, "scale_s": [1e-3, 2e-3, 8e-3]},  # median 2 ms
        {"rank": 1, "scale_bytes": 4 * mb, "scale_s": [4e-3, 4e-3, 5e-3]},  # median 4 ms
        {"rank": 2, "scale_bytes": 4 * mb, "scale_s": [3e-3, 3e-3, 3e-3]},  # median 3 ms
    ]
    assert in_step_scale_rate(ranks) == pytest.approx(4 * mb / 3e-3)  # the middle rank's rate
    # records from before the probe timed the pass: nothing to say, the term stays off
    assert in_step_scale_rate([{"rank": 0, "bytes": mb, "copy_in_s": [1e-3], "copy_out_s": [1e-3]}]) is None
    assert in_step_scale_rate([dict(r, scale_s=[]) for r in ranks]) is None


# ---- the broadcast-switch credit (calibration.probes.fit_broadcast_switch) -------------------------
def _switch_ranks(credit_s, reps=30, calls=8, wire_s=2e-3, seed=0):
    # 8 broadcasts of 2 ms wire time; rank 1 ends each sequence 0.1 ms after rank 0 (the later rank counts);
    # the alternating sequence saves credit_s at each of its 7 changes of source; 2 % noise a sequence
    rng = np.random.default_rng(seed)
    same = calls * wire_s * np.exp(rng.normal(0, 0.02, reps))
    alt = (calls * wire_s - (calls - 1) * credit_s) * np.exp(rng.normal(0, 0.02, reps))
    r0 = {"rank": 0, "nbytes": 1 << 18, "calls": calls, "same_s": same.tolist(), "alternating_s": alt.tolist()}
    r1 = {**r0, "rank": 1, "same_s": (same + 1e-4).tolist(), "alternating_s": (alt + 1e-4).tolist()}
    return [r0, r1]


def test_broadcast_switch_credit_is_the_median_saving_per_change_of_source():
    from calibration.probes import fit_broadcast_switch

    fit = fit_broadcast_switch(_switch_ranks(1e-3))  # the emulated 1000 Mbit/s link's 1 ms bucket
    assert fit["identified"] and fit["reps"] == 30 and fit["calls"] == 8
    assert fit["broadcast_switch_credit_s"] == fit["difference_s"] == pytest.approx(1e-3, rel=0.1)
    lo, hi = fit["ci95_s"]
    assert 0 < lo <= fit["difference_s"] <= hi
    # no saving (loopback): not told from the noise, no credit
    none = fit_broadcast_switch(_switch_ranks(0.0, seed=1))
    assert not none["identified"] and none["broadcast_switch_credit_s"] == 0.0
    # too few repetitions to keep even a clear saving
    few = fit_broadcast_switch(_switch_ranks(1e-3, reps=10))
    assert not few["identified"] and few["broadcast_switch_credit_s"] == 0.0 and few["difference_s"] > 0


# ---- the cold-call term (calibration.probes.fit_cold_call) ----------------------------------------
def _cold_ranks(extra_of_gap, gaps=(0.002, 0.02, 0.1), n=20, base=0.5e-3):
    # rank 0 launched last (its durations are the calls' own); rank 1 waited 3 ms for it every time;
    # one call in 20 on each rank hit a 50 ms stall, which the trimmed mean leaves out
    def calls(t):
        return [t] * (n - 1) + [t + 0.05]

    r0 = {
        "rank": 0,
        "gaps_s": list(gaps),
        "after_call_s": calls(base),
        "after_compute_s": [calls(base + extra_of_gap(g)) for g in gaps],
    }
    r1 = {**r0, "rank": 1, "after_call_s": calls(base + 3e-3)}
    r1["after_compute_s"] = [[t + 3e-3 for t in c] for c in r0["after_compute_s"]]
    return [r0, r1]


def test_cold_call_fit_recovers_a_saturating_extra_from_the_last_launched_rank():
    from calibration.probes import fit_cold_call

    fit = fit_cold_call(_cold_ranks(lambda g: 2e-3 * (1 - math.exp(-g / 0.015))))
    assert fit["after_call_s"] == pytest.approx(0.5e-3, rel=1e-12)
    assert fit["extra_s"] == pytest.approx([2e-3 * (1 - math.exp(-g / 0.015)) for g in (0.002, 0.02, 0.1)])
    assert fit["cold_call_s"] == pytest.approx(2e-3, rel=1e-4) and fit["cold_tau_s"] == pytest.approx(0.015, rel=1e-3)


def test_cold_call_fit_is_off_where_no_gap_costs_extra():
    from calibration.probes import fit_cold_call

    fit = fit_cold_call(_cold_ranks(lambda g: -1e-4))  # after compute a little faster than after a call
    assert (fit["cold_call_s"], fit["cold_tau_s"]) == (0.0, 0.0)


def test_cold_call_fit_stays_within_what_was_measured():
    """Extras that grow with the gap and do not level off (review: [0, 0.3, 2.0] ms) fit a time
    constant of any length with ``cold_call_s`` growing with it; bounded, the fit keeps the time
    constant within the longest gap, the cost within 1.5x the largest extra, and says so."""
    from calibration.probes import fit_cold_call

    extra = dict(zip((0.002, 0.02, 0.1), (0.0, 0.3e-3, 2.0e-3)))
    fit = fit_cold_call(_cold_ranks(lambda g: extra[g]))
    assert 0 < fit["cold_call_s"] <= 1.5 * 2.0e-3 * (1 + 1e-9) and 0 < fit["cold_tau_s"] <= 0.1
    assert fit["at_bound"]
    assert "at_bound" not in fit_cold_call(_cold_ranks(lambda g: 2e-3 * (1 - math.exp(-g / 0.015))))


# ---- the small calls' two kinds (calibration.probes.fit_call_modes) -------------------------------
def _sweep(nbytes, fast_s, late_s, n_late, n=200, p=2, seed=0):
    rng = np.random.default_rng(seed)
    t = fast_s * np.exp(rng.normal(0, 0.05, n))
    t[:n_late] += late_s
    return {"kind": "allreduce", "impl": "native", "world_size": p, "msg_bytes": nbytes, "times_s": t.tolist()}


def test_call_modes_split_the_stalled_calls_from_the_fast_ones():
    from calibration.probes import call_modes_line, fit_call_modes

    recs = [_sweep(4096, 0.3e-3, 3.6e-3, 40), _sweep(65536, 0.35e-3, 3.6e-3, 20, seed=1)]
    recs += [_sweep(1 << 20, 1e-3, 3.6e-3, 100), _sweep(4096, 0.3e-3, 3.6e-3, 200, p=4)]  # too large; other p
    recs += [{**_sweep(4096, 0.3e-3, 0, 0), "impl": "stream"}]  # back-to-back calls are not counted
    m = fit_call_modes(recs, 2)
    assert m is not None and m["calls"] == 400
    assert m["slow_share"] == pytest.approx(60 / 400)
    assert m["slow_share_by_size"] == {"4096": pytest.approx(0.2), "65536": pytest.approx(0.1)}
    assert m["slow_late_median_s"] == pytest.approx(3.6e-3, rel=0.05)
    assert m["fast_median_s"] == pytest.approx(0.32e-3, rel=0.1)
    line = call_modes_line(m, 1.2e-3)
    assert "15% stalled" in line and "4 KiB 20%" in line and "o = 1.20 ms" in line
    quiet = fit_call_modes([_sweep(4096, 0.3e-3, 0.0, 0)], 2)
    assert quiet is not None and quiet["slow_share"] == 0 and "none stalled" in call_modes_line(quiet, 3e-4)
    assert fit_call_modes([_sweep(1 << 20, 1e-3, 0.0, 0)], 2) is None


def test_call_modes_carry_the_ranks_thread_time_per_call():
    """The sweep's thread accounting: gloo's network threads' CPU and the ranks' threads' wait for a core, per
    timed call, summed over the small native points that carry it (others, and a too-large size, add nothing)."""
    from calibration.probes import call_modes_line, fit_call_modes

    th = {"gloo_tcp_loop": [300_000_000, 10_000_000, 900], "pt_gloo_runloop": [20_000_000, 250_000_000, 1500]}
    recs = [
        {**_sweep(4096, 0.3e-3, 3.6e-3, 40), "threads_ns": th, "threads_calls": 200},
        {**_sweep(16384, 0.3e-3, 3.6e-3, 40, seed=2), "threads_ns": th, "threads_calls": 200},
        {**_sweep(1 << 20, 1e-3, 0.0, 0), "threads_ns": th, "threads_calls": 200},  # not a small call
        _sweep(65536, 0.35e-3, 3.6e-3, 20, seed=1),  # measured without the accounting
    ]
    m = fit_call_modes(recs, 2)
    assert m is not None and m["thread_calls"] == 400
    assert m["network_cpu_s"] == pytest.approx(2 * 0.3 / 400)
    assert m["core_wait_s"] == pytest.approx(2 * 0.26 / 400)
    assert m["world_size"] == 2
    line = call_modes_line(m, 1.2e-3)
    assert "summed over the 2 ranks" in line
    assert "network threads ran 1.50 ms" in line and "waited 1.30 ms for a core" in line
    assert line.endswith("the stalls are waits for a core")
    # a record whose thread time covers other implementations' calls too (interleaved) is left out of it
    mixed = {**_sweep(4096, 0.3e-3, 3.6e-3, 40), "threads_ns": th, "threads_calls": 400}
    assert "thread_calls" not in fit_call_modes([mixed], 2)
    # waits far under the stalls: the figures, no such reading; no accounting at all: no phrase
    few = {"pt_gloo_runloop": [20_000_000, 2_000_000, 1500]}
    m2 = fit_call_modes([{**_sweep(4096, 0.3e-3, 3.6e-3, 40), "threads_ns": few, "threads_calls": 200}], 2)
    assert m2 is not None and "network_cpu_s" not in m2
    line2 = call_modes_line(m2, 1.2e-3)
    assert "waited 0.01 ms for a core" in line2 and "waits for a core" not in line2 and "network" not in line2
    assert "for a core" not in call_modes_line(fit_call_modes([_sweep(4096, 0.3e-3, 3.6e-3, 40)], 2), 1.2e-3)


def test_small_calls_beside_validation_are_set_against_the_calibrations_split():
    """``validate``'s small calls, pooled over its groups and split as the calibration's sweep, against the
    calibration's split at the same size: how much a call moved, and which way."""
    from types import SimpleNamespace

    from calibration.validate import small_calls_beside, small_calls_line

    cal = {
        "fast_median_s": 0.5e-3,  # over every size: not what a 4 KiB call is set against
        "slow_late_median_s": 3.0e-3,
        "slow_share_by_size": {"4096": 0.4, "65536": 0.1},
        "fast_median_by_size_s": {"4096": 0.3e-3, "65536": 0.9e-3},
        "slow_late_median_by_size_s": {"4096": 3.6e-3, "65536": 2.5e-3},
    }
    params = SimpleNamespace(probes={"call_modes": cal}, world_size=2)
    th = {"gloo_tcp_loop": [6_000_000, 0, 10], "pt_gloo_runloop": [1_000_000, 12_000_000, 20]}
    recs = [
        {**_sweep(4096, 0.3e-3, 3.6e-3, 6, n=60, seed=s), "threads_ns": th, "threads_calls": 60, "round": s}
        for s in range(2)
    ]
    sc = small_calls_beside(recs, params, 2)
    assert sc is not None and sc["validation"]["calls"] == 120 and sc["validation"]["thread_calls"] == 120
    assert sc["validation"]["slow_share"] == pytest.approx(0.1)
    assert sc["validation"]["core_wait_s"] == pytest.approx(2 * 12e-3 / 120)
    assert sc["calibration_slow_share"] == 0.4
    assert sc["calibration_mean_call_s"] == pytest.approx(0.3e-3 + 0.4 * 3.6e-3)
    assert sc["mean_call_s"] == pytest.approx(0.3e-3 + 0.1 * 3.6e-3, rel=0.05)
    line = small_calls_line(sc)
    assert "120 of 4 KiB" in line and "10% stalled" in line and "in the calibration 40%" in line
    assert "cheaper than calibrated" in line
    # as stalled as while calibrating; no split kept; nothing measured
    same = small_calls_beside(
        recs, SimpleNamespace(probes={"call_modes": {**cal, "slow_share_by_size": {"4096": 0.1}}}, world_size=2), 2
    )
    assert same is not None and "cost what they did while calibrating" in small_calls_line(same)
    # nothing to set it against: no split kept, one from before the per-size medians, another world size
    before = {k: v for k, v in cal.items() if "by_size_s" not in k}
    for other in (
        {"probes": {}, "world_size": 2},
        {"probes": {"call_modes": before}, "world_size": 2},
        {"probes": {"call_modes": cal}, "world_size": 4},
    ):
        bare = small_calls_beside(recs, SimpleNamespace(**other), 2)
        assert bare is not None and bare["calibration_mean_call_s"] is None
        assert "kept no split at this size and world size" in small_calls_line(bare)
    assert small_calls_beside([], params, 2) is None


def test_a_fit_without_an_interval_method_still_fits_with_its_intervals_unknown():
    """Two sizes, one time each: no interval can be had (no residual degrees of freedom, nothing to resample).
    The fit is made and its intervals read "unknown", not refused as malformed."""
    from calibration.fit import fit_bandwidth

    recs = [_record(n, np.array([2e-3 + n / 125e6])) for n in (1 << 22, 1 << 24)]
    fit = fit_linear(recs, n_boot=0)
    assert fit.w_bytes_per_s == pytest.approx(125e6, rel=1e-6)
    assert all(math.isnan(v) for v in fit.w_ci_bytes_per_s + fit.o_ci_s)
    bw = fit_bandwidth(recs, fit, n_boot=0)
    assert bw is not None and bw.w_bytes_per_s == pytest.approx(125e6, rel=1e-6)


@pytest.mark.parametrize(
    "field, ci", [("alpha_ci_s", (math.nan, 5.0)), ("beta_ci_s_per_byte", (3e-9, 1e-9)), ("o_ci_s", (1.0, -1.0))]
)
def test_an_abg_fit_refuses_an_interval_it_would_read_as_no_error(field, ci):
    import dataclasses

    fit = fit_abg(ring_records(), n_boot=20)
    assert fit.linear_at(4).w_ci_bytes_per_s[0] > 0  # the fitted one is whole
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(fit, **{field: ci})
