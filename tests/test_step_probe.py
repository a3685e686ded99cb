"""The in-step probe's fit: targets made by the simulator with known factors are recovered."""

import math

import pytest

from calibration.step_probe import (
    bootstrap_in_step,
    fit_in_step,
    measured_targets,
    probe_bucket_mb,
    probe_fine_mb,
    probe_one_bucket_mb,
    probe_steps,
    queued_phrase,
    simulated_terms,
)
from calibration.timeline import slowest_rank_timelines, step_terms
from simulator.network import CostModel
from simulator.units import MIB
from simulator.zoo import load_profile

PROF = load_profile("gpt", "cpu-core")


def _cost(**kw):
    return CostModel.linear(300e-6, 1.5e9, 2, channels=1, copy_bytes_per_s=8e9, **kw)


def _targets(c, cc, bucket, k=0.0, kb=0.0):
    t = simulated_terms(PROF, _cost(contention=c, comm_contention=cc, call_cpu_s=k, call_cpu_s_per_byte=kb), 2, bucket)
    return {**t, "compute_only_median_s": PROF.compute_s, "steps": 10}


@pytest.mark.parametrize("c, cc", [(0.3, 1.5), (0.0, 2.0), (0.8, 0.0), (0.15, 0.4)])
def test_fit_recovers_known_factors(c, cc):
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    fit = fit_in_step(PROF, _cost(), 2, bucket, _targets(c, cc, bucket))
    assert fit["contention_c"] == pytest.approx(c, abs=2e-3)
    assert fit["comm_contention_c"] == pytest.approx(cc, abs=2e-3)
    assert fit["compute_scale"] == pytest.approx(1.0)
    assert not fit["at_bound"]


@pytest.mark.parametrize(
    "cc, k, kb", [(1.5, 2e-3, 1e-3 / MIB), (0.5, 1e-3, 0.0), (0.0, 0.0, 2e-3 / MIB), (0.0, 1e-3, 0.0)]
)
def test_fit_at_two_caps_recovers_the_work_per_call_and_per_byte(cc, k, kb):
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    fine = probe_fine_mb(bucket)
    t, tf = _targets(0.0, cc, bucket, k, kb), _targets(0.0, cc, fine, k, kb)
    fit = fit_in_step(PROF, _cost(), 2, bucket, t, fine=(fine, tf))
    assert fit["contention_c"] == 0.0  # the work model replaces the factor
    assert fit["comm_contention_c"] == pytest.approx(cc, abs=5e-3)
    assert fit["call_cpu_s"] == pytest.approx(k, abs=2e-5)
    assert fit["call_cpu_s_per_byte"] * MIB == pytest.approx(kb * MIB, abs=2e-5)
    assert fit["fine"]["bucket_mb"] == fine and not fit["at_bound"]
    n_coarse, n_fine = fit["simulated_at_fit"]["n_buckets"], fit["fine"]["simulated_at_fit"]["n_buckets"]
    assert n_fine > 3 * n_coarse  # the same bytes in many more calls: what separates per call from per byte
    assert fit["fine"]["simulated_at_fit"]["compute_s"] == pytest.approx(tf["compute_s"], rel=1e-6)


def test_two_caps_out_of_the_works_reach_keep_the_factor_and_say_so():
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    fine = probe_fine_mb(bucket)
    # a coarse probe 3x slower than compute alone: more than all the bytes' work within the bracket can make
    t = {**_targets(0.0, 1.0, bucket), "compute_s": 3 * PROF.forward_s + 3 * PROF.backward_s}
    fit = fit_in_step(PROF, _cost(contention=0.7), 2, bucket, t, fine=(fine, _targets(0.0, 1.0, fine)))
    assert fit["not_identified"] == ["contention_c", "call_cpu_s"] and fit["at_bound"]
    # neither a factor nor the work reaches it: the contention probe's factor (the cost's) is kept, no work
    assert fit["call_cpu_s"] == 0.0 and fit["call_cpu_s_per_byte"] == 0.0 and fit["contention_c"] == 0.7


def test_work_beyond_the_compute_left_is_not_identified():
    """Owed work shares the core with compute, so compute can lose at most what it has left: 5 ms per call
    over the fine probe's 52 calls (260 ms owed against 111 ms of backward) keeps it at half speed throughout,
    and more work would look the same. The fit says so instead of returning a number it cannot see."""
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    fine = probe_fine_mb(bucket)
    t, tf = _targets(0.0, 0.5, bucket, 5e-3), _targets(0.0, 0.5, fine, 5e-3)
    fit = fit_in_step(PROF, _cost(), 2, bucket, t, fine=(fine, tf))
    assert "call_cpu_s" in fit["not_identified"] and fit["call_cpu_s"] == 0.0


def test_one_cap_fits_no_work_terms_as_before():
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    fit = fit_in_step(PROF, _cost(), 2, bucket, _targets(0.0, 1.5, bucket, 2e-3))
    assert fit["call_cpu_s"] == 0.0 and fit["call_cpu_s_per_byte"] == 0.0 and "fine" not in fit
    assert fit["contention_c"] > 0  # the per-call work it cannot see is taken up by the factor


def test_bootstrap_at_two_caps_draws_the_four_terms_together():
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    fine = probe_fine_mb(bucket)

    def noisy(t, spread):
        per = [{"compute_s": t["compute_s"] * f, "comm_sum_s": t["comm_sum_s"] * f} for f in spread]
        return {**t, "per_step": per}

    spread = (0.97, 0.99, 1.0, 1.01, 1.04)
    t, tf = _targets(0.0, 1.0, bucket, 2e-3, 1e-3 / MIB), _targets(0.0, 1.0, fine, 2e-3, 1e-3 / MIB)
    draws = bootstrap_in_step(PROF, _cost(), 2, bucket, noisy(t, spread), n=4, fine=(fine, noisy(tf, spread)))
    assert len(draws) == 4 and all(len(d) == 4 for d in draws)
    assert len({d[2] for d in draws}) > 1  # the steps drawn move the per-call cost


def test_targets_below_the_model_without_contention_give_zero_not_negative():
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    t = _targets(0.0, 0.0, bucket)
    t = {**t, "compute_s": t["compute_s"] * 0.9, "comm_sum_s": t["comm_sum_s"] * 0.5}
    fit = fit_in_step(PROF, _cost(), 2, bucket, t)
    assert fit["contention_c"] == 0.0 and fit["comm_contention_c"] == 0.0


def test_profile_is_scaled_to_the_compute_only_steps_measured_beside():
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    fast = PROF.scaled(0.5)  # a profile taken when the box was twice as fast
    fit = fit_in_step(fast, _cost(), 2, bucket, _targets(0.3, 1.0, bucket))
    assert fit["compute_scale"] == pytest.approx(2.0)
    assert fit["contention_c"] == pytest.approx(0.3, abs=2e-3)
    assert fit["comm_contention_c"] == pytest.approx(1.0, abs=2e-3)


def test_probe_bucket_gives_several_buckets_for_small_models():
    assert probe_bucket_mb(400 << 20) == 2.0
    assert probe_bucket_mb(2 << 20) == pytest.approx(0.5)


def test_probe_steps_fill_the_asked_seconds_at_each_cap_and_never_fall_below_the_asked_steps():
    from simulator.predict import predict
    from simulator.strategies import StrategySpec

    cost = _cost()
    for mb in (probe_bucket_mb(PROF.total_grad_bytes), probe_fine_mb(probe_bucket_mb(PROF.total_grad_bytes))):
        est = predict(PROF, cost, StrategySpec("torch-ddp", bucket_mb=mb), 2).step_time_s
        assert probe_steps(PROF, cost, 2, mb, 10, 0.0) == 10  # 0 s: exactly the steps asked
        assert probe_steps(PROF, cost, 2, mb, 10, 3 * est) == 10  # ten steps already fill it
        assert probe_steps(PROF, cost, 2, mb, 10, 40.5 * est) == 41
        assert probe_steps(PROF, cost, 2, mb, 10, 1e6 * est) == 500  # realrun.stats.MAX_STEPS_FOR_TIME


def test_measured_targets_take_each_event_at_the_last_rank_to_reach_it():
    def tl(bwd_end, launch, complete, step):
        return {
            "backward_start_s": 0.01,
            "backward_end_s": bwd_end,
            "optimizer_start_s": step - 0.002,
            "optimizer_end_s": step,
            "step_s": step,
            "buckets": [{"index": 0, "bytes": 4, "ready_s": launch - 1e-4, "launch_s": launch, "complete_s": complete}],
        }

    rec = {
        "step_times_s": [0.1, 0.2, 0.12],
        "rank_step_times_s": [[0.1, 0.15, 0.12], [0.09, 0.2, 0.11]],
        "rank_timelines": [
            [tl(0.08, 0.05, 0.07, 0.1), tl(0.12, 0.05, 0.09, 0.15), tl(0.1, 0.06, 0.08, 0.12)],
            [tl(0.07, 0.05, 0.06, 0.09), tl(0.18, 0.05, 0.15, 0.2), tl(0.09, 0.05, 0.07, 0.11)],
        ],
        "compute_median_s": 0.08,
    }
    t = measured_targets(rec)
    # per step the later backward end (0.08, 0.18, 0.10) and the bucket launched and done on both ranks
    assert t["compute_s"] == pytest.approx(0.1)
    assert t["comm_sum_s"] == pytest.approx(0.02)  # median of 0.07-0.05, 0.15-0.05, 0.08-0.06
    assert t["steps"] == 3 and t["compute_only_median_s"] == 0.08
    # a step whose slowest rank (by step time) finished backward first and waited for the other: on that
    # rank alone the wait is a 30 ms "tail" and its early backward end the compute; across ranks it is
    # the other rank's backward end and 5 ms of tail
    rec1 = {
        "step_times_s": [0.1],
        "rank_step_times_s": [[0.1], [0.099]],
        "rank_timelines": [[tl(0.06, 0.05, 0.09, 0.1)], [tl(0.085, 0.08, 0.09, 0.099)]],
        "compute_median_s": 0.08,
    }
    t1 = measured_targets(rec1)
    assert t1["compute_s"] == pytest.approx(0.085) and t1["exposed_tail_s"] == pytest.approx(0.005)
    assert t1["comm_sum_s"] == pytest.approx(0.01)
    slowest = step_terms(slowest_rank_timelines(rec1)[0])
    assert slowest["compute_s"] == pytest.approx(0.06) and slowest["exposed_tail_s"] == pytest.approx(0.03)
    # plain steps beside: the recording's cost (median paired difference, 10 ms) is said, the targets stay
    plain = measured_targets({**rec, "plain_step_times_s": [0.09, 0.19, 0.11]})
    assert plain["recording_s"] == pytest.approx(0.01) and t["recording_s"] == 0.0
    # ... and the plain steps' median, which the model error compares against; absent without them
    assert plain["plain_step_s"] == pytest.approx(0.11) and "plain_step_s" not in t
    extra = ("recording_s", "plain_step_s")
    assert {k: v for k, v in plain.items() if k not in extra} == {k: v for k, v in t.items() if k not in extra}


def test_across_ranks_matches_buckets_by_index_and_leaves_the_record_alone():
    import copy

    from calibration.timeline import across_ranks_timelines

    def bk(i, ready, launch, complete):
        return {"index": i, "bytes": 4, "ready_s": ready, "launch_s": launch, "complete_s": complete}

    def tl(bwd_end, buckets, step):
        return {"backward_start_s": 0.01, "backward_end_s": bwd_end, "optimizer_start_s": step - 0.002,
                "optimizer_end_s": step, "step_s": step, "buckets": buckets}  # fmt: skip

    # rank 1 lists its buckets in another order; its bucket 1 is later, its bucket 0 earlier
    r0 = tl(0.08, [bk(0, 0.03, 0.031, 0.05), bk(1, 0.06, 0.061, 0.085)], 0.1)
    r1 = tl(0.09, [bk(1, 0.07, 0.072, 0.092), bk(0, 0.02, 0.021, 0.052)], 0.099)
    rec = {"step_times_s": [0.1], "rank_step_times_s": [[0.1], [0.099]], "rank_timelines": [[r0], [r1]]}
    before = copy.deepcopy(rec)
    (t,) = across_ranks_timelines(rec)
    assert rec == before
    assert t["backward_end_s"] == 0.09 and t["step_s"] == 0.1  # the later backward end, the slowest rank's step
    assert [(b["index"], b["ready_s"], b["launch_s"], b["complete_s"]) for b in t["buckets"]] == [
        (0, 0.03, 0.031, 0.052),
        (1, 0.07, 0.072, 0.092),
    ]
    # a ready time not recorded on every rank is not mixed with launches from all ranks
    r1["buckets"][0]["ready_s"] = None
    assert across_ranks_timelines(rec)[0]["buckets"][1]["ready_s"] is None
    with pytest.raises(ValueError, match="fewer"):
        across_ranks_timelines({**rec, "rank_timelines": [[r0], []]})


def test_validate_says_when_the_compute_only_baseline_was_noisy():
    from calibration.validate import format_validation, machine_noise

    quiet = machine_noise([0.100, 0.101, 0.099, 0.102, 0.100, 0.098, 0.101, 0.100, 0.099, 0.100], [0.3, 0.2, 0.2])
    assert not quiet["noisy"] and quiet["baseline_spread_pct"] < 5
    busy = machine_noise([0.100, 0.14, 0.09, 0.16, 0.11, 0.10, 0.18, 0.095, 0.13, 0.12], [4.2, 3.0, 2.0])
    assert busy["noisy"] and busy["baseline_spread_pct"] > 15
    res = {
        "model": "gpt",
        "world_size": 2,
        "backend": "gloo",
        "measured_compute_s": 0.1,
        "predicted_compute_s": 0.1,
        "rows": [],
        "median_abs_error_pct": 1.0,
        "worst_abs_error_pct": 2.0,
        "n_configs": 0,
        "best_bucket": {},
    }
    # a result written before other work was measured (no busy flag, no other_cores): judged from the load
    busy = {k: v for k, v in busy.items() if k not in ("busy", "other_cores", "other_cores_measured")}
    busy["cores"] = 2  # load 4.2 on 2 cores
    assert "machine was busy" in format_validation({**res, "machine_noise": busy})
    assert "load average 4.2" in format_validation({**res, "machine_noise": busy})
    assert "busy" not in format_validation({**res, "machine_noise": quiet})
    # the same spread with little load on many cores is the steps' own noise, not a busy machine
    many = {**busy, "cores": 16, "loadavg": [3.9, 3.8, 1.8]}
    text = format_validation({**res, "machine_noise": many})
    assert "busy" not in text and "steps were noisy" in text and "load average of only 3.9 on 16 cores" in text
    for unknown in ({**busy, "loadavg": None}, {**busy, "cores": None}):  # no evidence of other work: not "busy"
        unknown.pop("busy", None)
        text = format_validation({**res, "machine_noise": unknown})
        assert "busy" not in text and "steps were noisy" in text and "unknown" in text
    # the CPU time other work used while measuring decides, not the load average (which holds our own ranks)
    measured = machine_noise([0.100, 0.14, 0.09, 0.16, 0.11, 0.10, 0.18, 0.095, 0.13, 0.12], [4.2, 3.0, 2.0], 0.1)
    assert measured["noisy"] and not measured["busy"] and measured["other_cores"] == 0.1
    text = format_validation({**res, "machine_noise": measured})
    assert "machine was busy" not in text and "only 0.1 of the" in text
    loaded = machine_noise([0.100, 0.101, 0.099, 0.102, 0.100, 0.098, 0.101, 0.100, 0.099, 0.100], None, 64.0)
    assert loaded["busy"] and not loaded["noisy"]  # a steady baseline, yet other work held every core
    text = format_validation({**res, "machine_noise": loaded})
    assert "machine was busy: other work kept 64.0 of the" in text and "baseline held steady" in text
    # other work not measured: the load average (our own calibration's, often) is not "busy", noisy or not
    assert not machine_noise([0.1] * 10, [64.0, 64.0, 64.0], None)["busy"]
    unmeasured = machine_noise([0.100, 0.14, 0.09, 0.16, 0.11, 0.10, 0.18, 0.095, 0.13, 0.12], [64.0, 9.0, 9.0], None)
    assert unmeasured["noisy"] and not unmeasured["busy"]
    text = format_validation({**res, "machine_noise": unmeasured})
    assert "machine was busy" not in text and "other work not measured" in text


def test_effective_copy_rate_weights_the_rate_by_the_gradients_sizes():
    from calibration.probes import effective_copy_rate

    mib = 1 << 20
    per_rank = [
        {"sizes_bytes": [mib, 4 * mib, 16 * mib], "bytes_per_s": [20e9, 10e9, 5e9]},
        {"sizes_bytes": [mib, 4 * mib, 16 * mib], "bytes_per_s": [22e9, 12e9, 3e9]},  # medians 21, 11, 4 GB/s
    ]
    assert effective_copy_rate(per_rank, [4 * mib]) == pytest.approx(11e9)
    assert effective_copy_rate(per_rank, [1024]) == pytest.approx(21e9)  # below the probe's sizes: clamped
    assert effective_copy_rate(per_rank, [64 * mib]) == pytest.approx(4e9)
    # one 1 MiB and one 16 MiB gradient: 17 MiB in 1/21e9 + 16/4e9 MiB-seconds
    assert effective_copy_rate(per_rank, [mib, 16 * mib]) == pytest.approx(17 / (1 / 21e9 + 16 / 4e9))
    # between sizes: log-log interpolation (2 MiB is halfway between 1 and 4 in log size)
    assert effective_copy_rate(per_rank, [2 * mib]) == pytest.approx((21e9 * 11e9) ** 0.5)


def test_a_target_out_of_reach_keeps_the_contention_probes_factor():
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    t = _targets(0.2, 0.0, bucket)
    t = {**t, "comm_sum_s": t["comm_sum_s"] * 1000}  # no slowdown while computing stretches calls this far
    fit = fit_in_step(PROF, _cost(contention=0.5, comm_contention=0.7), 2, bucket, t)
    assert fit["not_identified"] == ["comm_contention_c"] and fit["at_bound"]
    assert fit["comm_contention_c"] == 0.7  # the contention probe's (given in the cost model)
    assert fit["contention_c"] >= 0 and fit["contention_c"] < 20


def test_bootstrap_refits_agree_when_every_step_is_the_same_and_spread_when_steps_differ():
    from calibration.step_probe import bootstrap_in_step

    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    t = _targets(0.3, 1.0, bucket)
    same = {**t, "per_step": [{"compute_s": t["compute_s"], "comm_sum_s": t["comm_sum_s"]}] * 6}
    boot = bootstrap_in_step(PROF, _cost(), 2, bucket, same, n=5)
    assert len(boot) == 5
    for c, cc in boot:
        assert c == pytest.approx(0.3, abs=2e-3) and cc == pytest.approx(1.0, abs=2e-3)
    # steps whose all-reduces took 0.8x..1.2x the fitted total: the refits of c_comm spread around 1.0
    noisy = {
        **t,
        "per_step": [
            {"compute_s": t["compute_s"], "comm_sum_s": t["comm_sum_s"] * f} for f in (0.8, 0.9, 1.0, 1.1, 1.2)
        ],
    }
    boot = bootstrap_in_step(PROF, _cost(), 2, bucket, noisy, n=12, seed=1)
    ccs = sorted(cc for _, cc in boot)
    assert ccs[0] < 1.0 - 0.05 and ccs[-1] > 1.0 + 0.05
    assert bootstrap_in_step(PROF, _cost(), 2, bucket, noisy, n=12, seed=1) == boot  # seeded
    assert bootstrap_in_step(PROF, _cost(), 2, bucket, t) == []  # no per-step terms kept: nothing to resample


def test_finalize_per_parameter_is_the_measured_gap_over_what_the_model_has_per_parameter():
    """At each cap: (measured last-completion-to-optimizer median - the model's copy-out there) / parameters;
    the mean over caps; never negative; 0 where the records did not keep it."""
    from calibration.step_probe import finalize_per_param

    fit = {
        "measured": {"finalize_s": 0.60e-3},
        "simulated_at_fit": {"finalize_s": 0.10e-3, "n_params": 50},
        "fine": {"measured": {"finalize_s": 0.70e-3}, "simulated_at_fit": {"finalize_s": 0.0, "n_params": 50}},
    }
    assert finalize_per_param(fit) == pytest.approx((10e-6 + 14e-6) / 2)
    fit["fine"] = None
    assert finalize_per_param(fit) == pytest.approx(10e-6)
    fit["measured"]["finalize_s"] = 0.05e-3
    assert finalize_per_param(fit) == 0.0
    assert finalize_per_param({"measured": {}, "simulated_at_fit": {"finalize_s": 0.0, "n_params": 3}}) == 0.0


def test_the_compute_only_steps_after_a_ddp_step_are_those_of_even_turns():
    """``bare_follows_ddp`` against the sequence ``turn_order`` steps, turn after turn (the leftover's pairs rest on
    it): with and without the plain side, the compute-only step of turn t follows a DDP step exactly when
    ``bare_follows_ddp(t)``, and in odd turns it follows the turn before's compute-only step."""
    from realrun.step_record import bare_follows_ddp, turn_order

    for sides in (("ddp", "bare"), ("plain", "ddp", "bare")):
        seq = [s for t in range(8) for s in turn_order(sides, t)]
        for t in range(1, 8):
            before = seq[seq.index("bare", t * len(sides)) - 1]
            assert (before in ("ddp", "plain")) == bare_follows_ddp(t)
            assert before == ("ddp" if t % 2 == 0 else "bare")


def _probe_record(after_ddp, after_bare, warmup=3, block=1):
    """A probe record's step lists as ``measure_timeline`` lays them out: timed step ``j`` is turn
    ``warmup + j``, whose compute-only step follows a DDP step when the turn is even."""
    comp = []
    a, b = iter(after_ddp), iter(after_bare)
    for j in range(len(after_ddp) + len(after_bare)):
        comp.append(next(a) if (warmup + j) % 2 == 0 else next(b))
    return {"warmup": warmup, "block": block, "step_times_s": [0.01] * len(comp), "compute_step_times_s": comp}


def test_leftover_is_the_compute_only_step_after_a_ddp_step_less_the_one_after_its_own():
    """Paired a turn apart (an even turn's compute-only step, after a DDP step, less the next turn's, after its
    own), over both caps' records; kept with 20 pairs or more and the interval above 0."""
    import numpy as np

    from calibration.step_probe import leftover_fit

    rng = np.random.default_rng(1)
    noise = lambda n: list(rng.normal(0, 1e-4, n))  # noqa: E731
    coarse = _probe_record([3.0e-3 + x for x in noise(30)], [2.5e-3 + x for x in noise(30)])
    fine = _probe_record([3.0e-3 + x for x in noise(20)], [2.5e-3 + x for x in noise(20)], warmup=4)
    f = leftover_fit(coarse, fine)
    # warm-up 3: timed step 0 is an odd turn's, so pairs start at step 1 (29 of them); warm-up 4: 20 from step 0
    assert f["identified"] and f["pairs"] == 29 + 20
    assert f["leftover_s"] == pytest.approx(0.5e-3, abs=0.1e-3)
    lo, hi = f["ci95_s"]
    assert 0 < lo < f["leftover_s"] < hi
    # the machine drifting by far more than the leftover, step to step (a random walk): the pairs still find it
    walk = np.cumsum(rng.normal(0, 3e-4, 120))
    drift = _probe_record([], [], warmup=0)
    drift["compute_step_times_s"] = [5e-3 + w + (0.5e-3 if j % 2 == 0 else 0.0) for j, w in enumerate(walk)]
    drift["step_times_s"] = [0.01] * 120
    d = leftover_fit(drift)
    assert d["identified"] and d["leftover_s"] == pytest.approx(0.5e-3, abs=0.2e-3) and np.ptp(walk) > 2e-3
    # the same steps with no difference: within the noise, not kept
    same = leftover_fit(_probe_record([2.5e-3 + x for x in noise(30)], [2.5e-3 + x for x in noise(30)]))
    assert not same["identified"] and same["leftover_s"] == 0.0 and same["ci95_s"][0] <= 0
    # a clear difference from too few pairs is not kept either (the bootstrap of a median under-covers)
    few = leftover_fit(_probe_record([3e-3] * 10, [2e-3] * 10))
    assert few["difference_s"] == pytest.approx(1e-3) and not few["identified"] and few["leftover_s"] == 0.0
    # a record measured in turns has no compute-only steps after DDP steps among its timed ones
    turns = leftover_fit(_probe_record([3e-3] * 30, [2e-3] * 30, block=10), None)
    assert turns["pairs"] == 0 and turns["leftover_s"] == 0.0


def test_the_optimizers_extra_is_the_probe_steps_optimizer_less_the_scaled_profiles():
    """Per probe step its optimizer less the profile's, scaled as that probe scales it; the median over both
    caps' steps, kept where 20 or more and its 95 % interval lies above 0."""
    import numpy as np

    from calibration.step_probe import optimizer_extra_fit

    rng = np.random.default_rng(2)

    def targets(base_s, extra_s, n):
        opt = PROF.optimizer_s * base_s / PROF.compute_s  # the profile's optimizer at this probe's scale
        steps = [{"optimizer_s": opt + extra_s + x} for x in rng.normal(0, 2e-5, n)]
        return {"compute_only_median_s": base_s, "per_step": steps}

    f = optimizer_extra_fit(PROF, targets(PROF.compute_s * 1.3, 1e-4, 15), targets(PROF.compute_s * 0.8, 1e-4, 15))
    assert f["identified"] and f["steps"] == 30 and f["optimizer_extra_s"] == pytest.approx(1e-4, abs=2e-5)
    none = optimizer_extra_fit(PROF, targets(PROF.compute_s, 0.0, 30))
    assert not none["identified"] and none["optimizer_extra_s"] == 0.0
    shorter = optimizer_extra_fit(PROF, targets(PROF.compute_s, -1e-4, 30))  # never fitted negative
    assert shorter["difference_s"] < 0 and shorter["optimizer_extra_s"] == 0.0
    few = optimizer_extra_fit(PROF, targets(PROF.compute_s, 1e-3, 10))
    assert few["difference_s"] == pytest.approx(1e-3, abs=1e-4) and few["optimizer_extra_s"] == 0.0
    # records before the timelines kept the optimizer per step: nothing to fit
    assert optimizer_extra_fit(PROF, {"per_step": [{"compute_s": 1.0}]}, None)["steps"] == 0


def test_the_recordings_cost_is_the_median_paired_difference_to_the_plain_steps():
    """A probe record with plain steps beside its recorded ones: the median paired difference; none where
    there are no plain steps (records before them), they are not paired, or the recording came out free."""
    from calibration.step_probe import recording_cost

    rec = {"step_times_s": [0.012, 0.011, 0.013, 0.010], "plain_step_times_s": [0.010, 0.010, 0.011, 0.009]}
    assert recording_cost(rec) == pytest.approx(1.5e-3)
    assert recording_cost({"step_times_s": [0.01]}) == 0.0
    assert recording_cost({**rec, "plain_step_times_s": [0.02] * 4}) == 0.0  # never negative
    assert recording_cost({**rec, "plain_step_times_s": [0.01]}) == 0.0  # not paired: not used


def test_comm_contention_is_kept_only_where_its_refits_tell_it_from_zero():
    from calibration.step_probe import CHECK_MIN_DRAWS, comm_contention_check, comm_contention_phrase

    told = comm_contention_check(0.4, [0.2 + 0.02 * i for i in range(24)])
    assert told["identified"] and told["ci95"][0] > 0 and comm_contention_phrase(told) == ""
    # micro-DLRM over 200 Mbit/s (run m43): fitted 3.77, a quarter of the refits at 0
    loose = comm_contention_check(3.77, [0.0] * 6 + [1.0 + 0.5 * i for i in range(18)])
    assert not loose["identified"] and loose["ci95"][0] == 0.0
    assert "held at x1.00" in comm_contention_phrase(loose) and "x4.77" in comm_contention_phrase(loose)
    # nothing to hold (a fit of 0), or too few refits to judge: as fitted
    assert comm_contention_check(0.0, [0.0] * 24)["identified"]
    assert comm_contention_check(3.77, [0.0] * (CHECK_MIN_DRAWS - 1))["identified"]


def test_holding_comm_contention_refits_the_other_terms_beside_it():
    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    # one cap: the compute factor alone then reaches the backward end
    fit = fit_in_step(PROF, _cost(), 2, bucket, _targets(0.3, 1.5, bucket), hold_cc=0.0)
    assert fit["comm_contention_c"] == 0.0
    assert fit["simulated_at_fit"]["compute_s"] == pytest.approx(_targets(0.3, 1.5, bucket)["compute_s"], rel=1e-4)
    # two caps: the work terms likewise
    fine = probe_fine_mb(bucket)
    t, tf = _targets(0.0, 0.5, bucket, 1e-3, 0.0), _targets(0.0, 0.5, fine, 1e-3, 0.0)
    fit = fit_in_step(PROF, _cost(), 2, bucket, t, fine=(fine, tf), hold_cc=0.0)
    assert fit["comm_contention_c"] == 0.0 and fit["call_cpu_s"] > 0
    assert fit["fine"]["simulated_at_fit"]["compute_s"] == pytest.approx(tf["compute_s"], rel=1e-4)
    boot = bootstrap_in_step(PROF, _cost(), 2, bucket, {**t, "per_step": [t] * 4}, n=3, fine=(fine, tf), hold_cc=0.0)
    assert [d[1] for d in boot] == [0.0, 0.0, 0.0]


def test_the_check_probe_is_at_one_bucket_above_every_gradient():
    """The one-bucket check's cap: the power of two (MiB) at or above all the gradients, so torch DDP makes one
    bucket of them all (the simulator's buckets, as torch's)."""
    from simulator.buckets import ddp_buckets

    assert probe_one_bucket_mb(int(3.84 * MIB)) == 4.0 and probe_one_bucket_mb(4 * MIB) == 4.0
    assert probe_one_bucket_mb(4 * MIB + 1) == 8.0 and probe_one_bucket_mb(int(0.76 * MIB)) == 1.0
    assert probe_one_bucket_mb(1) == 1 / 1024  # never under 1 KiB
    for name in ("gpt", "cnn", "micro-dlrm"):
        prof = load_profile(name, "cpu-core")
        cap = probe_one_bucket_mb(prof.total_grad_bytes)
        assert cap / 2 < prof.total_grad_bytes / MIB <= cap
        assert len(ddp_buckets(prof, bucket_cap_mb=cap).steady) == 1, name


def test_the_channel_choice_keeps_the_stream_probes_model_unless_the_other_fits_the_probe_steps_closer():
    from calibration.step_probe import channel_choice, channel_phrase, fitted_caps_residual

    serial, piped = _cost(), _cost().with_overrides(pipelined=True)
    assert channel_choice(serial, piped, 0.10, 0.02)["taken"] == "other"
    assert channel_choice(serial, piped, 0.10, 0.05)["taken"] == "other"  # half the stream probe's: kept
    for res_other in (0.06, 0.10, 0.12):  # closer, but by less than half: the probe's noise keeps the stream's
        ch = channel_choice(serial, piped, 0.10, res_other)
        assert ch["taken"] == "stream" and not ch["pipelined"] and ch["channels"] == 1
    ch = channel_choice(_cost().with_overrides(channels=2), piped, 0.08, 0.03)
    assert (ch["channels"], ch["pipelined"], ch["stream"]["channels"]) == (1, True, 2)
    assert channel_phrase(ch).endswith(
        "2 channels (the stream probe's) 8.0 %, with one pipelined channel 3.0 %: one pipelined channel kept"
    )
    # the residual: the recorded steps (not the plain ones beside them); the two fitted caps only
    part = {"measured": {"step_s": 0.1, "plain_step_s": 0.2}, "simulated_at_fit": {"step_s": 0.1}}
    fine = {"measured": {"step_s": 0.1}, "simulated_at_fit": {"step_s": 0.1 * math.e}}
    assert fitted_caps_residual({**part, "fine": fine}) == pytest.approx(math.sqrt(0.5))
    assert fitted_caps_residual({**part, "check": fine}) == pytest.approx(0.0)


def test_the_queued_calls_scale_is_read_off_the_fine_probes_plain_steps():
    """Plain steps at a call per gradient made by the model with queued calls at half their latency: the fit finds
    the half and keeps it; steps as long as the model's at full latency, too few steps, or steps no scale can
    reach keep 1."""
    import numpy as np

    from calibration.step_probe import QUEUED_MIN_SCALE, queued_fit

    def cost(**kw):  # 10 ms a call: gpt's 52 calls at 1 KiB queue far past its backward
        return CostModel.linear(10e-3, 1.5e9, 2, channels=1, copy_bytes_per_s=8e9, **kw)

    def targets(mb):
        return {**simulated_terms(PROF, cost(), 2, mb), "compute_only_median_s": PROF.compute_s, "steps": 10}

    bucket = probe_bucket_mb(PROF.total_grad_bytes)
    fine = probe_fine_mb(bucket)
    fit = fit_in_step(PROF, cost(), 2, bucket, targets(bucket), fine=(fine, targets(fine)))

    def plain(scale, n, noise=0.005):
        step = simulated_terms(PROF, cost(queued_latency_scale=scale), 2, fine)["step_s"]
        return {"plain_step_times_s": list(step * (1 + np.random.default_rng(3).normal(0, noise, n)))}

    at_1 = simulated_terms(PROF, cost(), 2, fine)["step_s"]
    assert simulated_terms(PROF, cost(queued_latency_scale=0.5), 2, fine)["step_s"] < 0.97 * at_1  # calls queue
    half = queued_fit(PROF, cost(), fit, plain(0.5, 40), 2)
    assert half["identified"] and half["queued_latency_scale"] == pytest.approx(0.5, abs=0.03)
    assert half["ci95"][0] < 0.5 < half["ci95"][1] < 1 and half["simulated_at_1_s"] == pytest.approx(at_1)
    assert "kept, a queued call's latency x0.5" in queued_phrase(half)
    full = queued_fit(PROF, cost(), fit, plain(1.0, 40), 2)
    assert not full["identified"] and full["queued_latency_scale"] == 1.0
    few = queued_fit(PROF, cost(), fit, plain(0.5, 10), 2)
    assert few["fitted"] == pytest.approx(0.5, abs=0.05) and not few["identified"] and few["queued_latency_scale"] == 1
    low = simulated_terms(PROF, cost(queued_latency_scale=QUEUED_MIN_SCALE), 2, fine)["step_s"]
    far = queued_fit(PROF, cost(), fit, {"plain_step_times_s": [0.8 * low] * 40}, 2)
    assert not far["in_reach"] and far["queued_latency_scale"] == 1.0 and "out of reach" in queued_phrase(far)
    # no fine probe, or records from before the plain steps: nothing fitted
    assert queued_fit(PROF, cost(), fit, {}, 2)["steps"] == 0
    assert queued_fit(PROF, cost(), {**fit, "fine": None}, plain(0.5, 40), 2)["queued_latency_scale"] == 1.0
    # a pipelined channel: its model already holds a queued call's hand-off, so no scale is fitted on top
    piped = queued_fit(PROF, cost(pipelined=True), fit, plain(0.5, 40), 2)
    assert piped["pipelined"] and not piped["identified"] and piped["queued_latency_scale"] == 1.0
    assert "the channel is pipelined" in queued_phrase(piped)
