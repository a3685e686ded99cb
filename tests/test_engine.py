"""The event model on cases small enough to work out by hand."""

import dataclasses
import math

import pytest

from simulator.engine import simulate_step
from simulator.network import CostModel
from simulator.predict import predict
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import StrategySpec, comm_plan
from simulator.units import MIB

# Three parameters registered a, b, c; backward produces c, b, a.
# Sizes 1000 B, 2000 B, 1000 B; backward compute 1.0 s (c), 2.0 s (b), 1.0 s (a);
# forward 0.5 s, optimizer 0.25 s. Linear cost o = 0.5 s, w = 1000 B/s:
# T(1000 B) = 1.5 s, T(2000 B) = 2.5 s.
PROF = GradProfile(
    "three",
    (ParamSpec("a", 250, bwd_s=1.0), ParamSpec("b", 500, bwd_s=2.0), ParamSpec("c", 250, bwd_s=1.0)),
    forward_s=0.5,
    optimizer_s=0.25,
)


def assert_spans(out, want, kinds=("backward", "allreduce")):
    """The run's spans of ``kinds`` are ``want``'s ``(name, start, end)``, in order, to 1e-12 s."""
    got = [(e[4], e[0], e[1]) for e in out.events if e[3] in kinds]
    assert [g[0] for g in got] == [w[0] for w in want]
    assert [g[1:] for g in got] == [pytest.approx(w[1:], abs=1e-12) for w in want]


def run(strategy, channels=1, shared=True, contention=0.0, accum=1, **kw):
    cost = CostModel.linear(0.5, 1000.0, channels=channels, shared_bandwidth=shared, contention=contention)
    spec = StrategySpec(strategy, accum_steps=accum, **kw)
    return simulate_step(PROF, comm_plan(PROF, spec, 2), cost, 2, accum_steps=accum, record=True)


def test_exact_event_log_individual_serial_channel():
    out = run("individual")
    # c ready at 1.5 -> all-reduce [1.5, 3.0]; b ready at 3.5 -> [3.5, 6.0];
    # a ready at 4.5 but the channel is busy until 6.0 -> [6.0, 7.5]; optimizer [7.5, 7.75].
    assert [(e[4], e[0], e[1]) for e in out.events] == [
        ("forward", 0.0, 0.5),
        ("c", 0.5, 1.5),
        ("c", 1.5, 3.0),
        ("b", 1.5, 3.5),
        ("a", 3.5, 4.5),
        ("b", 3.5, 6.0),
        ("wait for communication", 4.5, 7.5),
        ("a", 6.0, 7.5),
        ("optimizer", 7.5, 7.75),
    ]
    assert [e[3] for e in out.events if e[4] == "c"] == ["backward", "allreduce"]
    assert out.step_time_s == 7.75


def test_gloo_two_channels_versus_nccl_one():
    nccl = run("individual", channels=1)
    # gloo, 2 threads, bandwidth not shared: a's all-reduce runs beside b's, [4.5, 6.0]; step 6.0 + 0.25
    gloo_free = run("individual", channels=2, shared=False)
    # gloo, bandwidth shared: b's transfer (2.0 s) starts at 4.0; a's latency [4.5, 5.0], then both
    # transfers share: b has 1.0 s left, a 1.0 s, each at half speed -> both end at 7.0; step 7.25
    gloo_shared = run("individual", channels=2, shared=True)
    assert (nccl.step_time_s, gloo_free.step_time_s, gloo_shared.step_time_s) == (7.75, 6.25, 7.25)


def test_contention_slows_compute_while_communicating():
    out = run("individual", contention=1.0)
    # c: [0.5, 1.5]; all-reduce c [1.5, 3.0]. b needs 2.0 s of work from 1.5: half speed until 3.0
    # (0.75 done), full speed for the remaining 1.25 -> 4.25. all-reduce b [4.25, 6.75].
    # a: 1.0 s of work at half speed -> 6.25; all-reduce a waits for the channel: [6.75, 8.25].
    # optimizer [8.25, 8.5].
    assert [(e[4], e[0], e[1]) for e in out.events if e[3] in ("backward", "allreduce")] == [
        ("c", 0.5, 1.5),
        ("c", 1.5, 3.0),
        ("b", 1.5, 4.25),
        ("a", 4.25, 6.25),
        ("b", 4.25, 6.75),
        ("a", 6.75, 8.25),
    ]
    assert out.step_time_s == 8.5


def test_naive_blocks_per_parameter_after_backward():
    out = run("naive")
    # backward ends at 4.5; a, b, c reduced one after another in registration order: 1.5 + 2.5 + 1.5
    assert out.step_time_s == 4.5 + 5.5 + 0.25
    assert [e[4] for e in out.events if e[3] == "allreduce"] == ["a", "b", "c"]


def test_no_sync_accumulation_communicates_once():
    out = run("flat", accum=3)
    # 3 x (forward 0.5 + backward 4.0) = 13.5, then one all-reduce of 4000 B = 0.5 + 4.0, then optimizer
    assert out.step_time_s == 13.5 + 4.5 + 0.25
    assert len([e for e in out.events if e[3] == "allreduce"]) == 1


def test_torch_ddp_first_step_is_one_bucket_and_launch_is_in_index_order():
    # cap 1500 B = 0.00143 MiB: rebuilt in ready order c (1000), b (2000 -> 3000 >= 1500 closes), a
    mb = 1500 / MIB
    steady = run("torch-ddp", bucket_mb=mb)
    first = run("torch-ddp", bucket_mb=mb, first_step=True)
    assert [r.n_params for r in steady.rows] == [2, 1]
    assert [r.n_params for r in first.rows] == [3]
    # first step: everything after backward (4.5) in one call of 4000 B: 0.5 + 4.0; + optimizer
    assert first.step_time_s == 4.5 + 4.5 + 0.25
    # steady: bucket0 (c, b: 3000 B) ready 3.5 -> [3.5, 7.0]; bucket1 (a) ready 4.5 -> [7.0, 8.5]
    assert [(r.start_s, r.end_s) for r in steady.rows] == [(3.5, 7.0), (7.0, 8.5)]


def test_in_order_launch_waits_for_lower_buckets():
    # find_unused_parameters: buckets by registration order, reversed, no rebuild. With a ready order
    # that differs (a ready first), bucket 0 (= c) is ready last, so nothing launches before it.
    prof = GradProfile("p", PROF.params, ready_order=(0, 1, 2), forward_s=0.5, optimizer_s=0.25)
    cost = CostModel.linear(0.5, 1000.0)
    spec = StrategySpec("torch-ddp", bucket_mb=500 / MIB, find_unused_parameters=True)
    out = simulate_step(prof, comm_plan(prof, spec, 2), cost, 2)
    # buckets (c), (b), (a); backward a [0.5,1.5], b [1.5,3.5], c [3.5,4.5]; all three launch at 4.5
    assert [r.name for r in out.rows] == ["bucket0", "bucket1", "bucket2"]
    assert [r.ready_s for r in out.rows] == [4.5, 4.5, 4.5]
    assert out.step_time_s == 4.5 + 1.5 + 2.5 + 1.5 + 0.25


def test_sharded_adds_broadcasts_after_a_partial_optimizer_step():
    mb = 1e6 / MIB  # one bucket
    ddp = run("torch-ddp", bucket_mb=mb)
    zero = run("sharded", bucket_mb=mb)
    # optimizer on half the parameters (p = 2): 0.125 s; then broadcasts of a, b, c at busbw = w * 2(p-1)/p = w
    assert zero.step_time_s == pytest.approx(ddp.step_time_s - 0.25 + 0.125 + 1.5 + 2.5 + 1.5)


@pytest.mark.parametrize("model", ["analytic", "events"])
def test_a_broadcast_from_the_other_rank_saves_the_switch_credit(model):
    """``broadcast_switch_credit_s``: a broadcast whose source differs from the one before moves
    ``min(credit, idle, transfer)`` of its payload free, ``idle`` since its source last sent."""
    mb = 1e6 / MIB  # one bucket
    plan = comm_plan(PROF, StrategySpec("sharded", bucket_mb=mb), 2)
    # owners, largest first to the lighter rank: b (2000 B) -> 0, a -> 1, c -> 1 (1000 < 2000)
    assert [c.src for c in plan.post_optimizer] == [1, 0, 1]
    cost = CostModel.linear(0.5, 1000.0)
    plain = simulate_step(PROF, plan, cost, 2, model=model).step_time_s
    credit = simulate_step(PROF, plan, cost.with_overrides(broadcast_switch_credit_s=0.4), 2, model=model)
    # a from 1 (no switch, 1.5 s); b from 0 saves 0.4 (idle 1.5 s); c from 1 saves 0.4 (idle 2.1 s)
    assert credit.step_time_s == pytest.approx(plain - 0.8, abs=1e-12)
    # a credit beyond the idle time or the transfer saves only those
    big = simulate_step(PROF, plan, cost.with_overrides(broadcast_switch_credit_s=5.0), 2, model=model)
    assert big.step_time_s == pytest.approx(plain - 1.5 - 1.0, abs=1e-12)  # b: its idle 1.5 s; c: its 1 s of transfer
    with pytest.raises(ValueError, match="switch credit"):
        CostModel.linear(0.5, 1000.0, broadcast_switch_credit_s=-1.0)


def test_switch_credit_by_hand():
    from simulator.engine import switch_credit

    src, lat, xfer = [0, 1, 0, 0, 1], [1.0] * 5, [5.0, 5.0, 5.0, 5.0, 0.5]
    # k1: idle 6 -> saves 2; k2: idle 10 - 6 = 4 -> 2; k3: same source, none; k4: idle 20 - 10, transfer 0.5
    assert switch_credit(src, lat, xfer, 2.0).tolist() == [5.0, 3.0, 3.0, 5.0, 0.0]
    assert switch_credit(src, lat, xfer, 0.0).tolist() == xfer


def test_world_size_one_has_no_communication():
    res = predict(PROF, CostModel.linear(0.5, 1000.0), StrategySpec("individual"), 1)
    assert res.step_time_s == res.compute_s == 4.75 and res.overhead_s == 0


def test_jitter_max_of_ranks_grows_with_world_size():
    cost = CostModel.linear(0.5, 1000.0)
    small = predict(PROF, cost, StrategySpec("individual"), 2, jitter_sigma=0.1, repeats=15, seed=1)
    big = predict(PROF, cost, StrategySpec("individual"), 4096, jitter_sigma=0.1, repeats=15, seed=1)
    explicit = predict(PROF, cost, StrategySpec("individual"), 8, ranks=8, jitter_sigma=0.1, repeats=15, seed=1)
    # the slowest of 4096 ranks (about +3.5 sigma) is slower than the slowest of 2
    assert big.step_time_s > small.step_time_s
    assert big.step_time_p10_s <= big.step_time_s <= big.step_time_p90_s
    assert explicit.repeats == 15


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"name": "bogus"}, "unknown strategy"),
        ({"name": "bucketed", "bucket_mb": -1}, "bucket size must be a finite number > 0"),
        ({"name": "bucketed", "bucket_mb": 0}, "bucket size must be a finite number > 0"),
        ({"name": "torch-ddp", "bucket_mb": float("inf")}, "bucket size must be a finite number > 0"),
        ({"name": "torch-ddp", "bucket_cap_mb_list": [1.0, float("nan")]}, "entries must be finite numbers > 0"),
        ({"name": "bucketed"}, "needs a bucket size"),
        ({"name": "torch-ddp", "accum_steps": 0}, "accum_steps"),
    ],
)
def test_bad_strategy_input(kw, msg):
    with pytest.raises(ValueError, match=msg):
        StrategySpec(**kw)


def test_bad_world_size():
    with pytest.raises(ValueError, match="world size"):
        predict(PROF, CostModel.linear(0.5, 1000.0), StrategySpec("flat"), 0)


def test_communication_slowed_while_compute_runs():
    cost = CostModel.linear(0.5, 1000.0, channels=1, comm_contention=1.0)
    out = simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), cost, 2, record=True)
    # all-reduce c (1.5 s of work) from 1.5 runs at half speed while b and a compute until 4.5:
    # 3.0 s of wall time -> ends 4.5. b (2.5 s) then a (1.5 s) run with no compute: [4.5, 7.0], [7.0, 8.5].
    assert [(e[4], e[0], e[1]) for e in out.events if e[3] == "allreduce"] == [
        ("c", 1.5, 4.5),
        ("b", 4.5, 7.0),
        ("a", 7.0, 8.5),
    ]
    assert out.step_time_s == 8.75


def test_hand_written_variants_launch_in_index_order_like_realrun():
    # registered [a, b]; realrun's hook-driven wrappers launch over reverse registration: b (index 0), then a.
    # Gradients arrive the other way round: a at 1 ms, b at 10 ms. In index order a waits for b to be ready,
    # so both calls queue behind 10 ms: 10 + 2 + 2 = 14 ms (launched on readiness it would be 10 + 2 = 12 ms).
    from simulator.network import CostModel
    from simulator.predict import predict
    from simulator.profile import GradProfile, ParamSpec
    from simulator.strategies import StrategySpec

    prof = GradProfile("reorder", (ParamSpec("a", 4, bwd_s=1e-3), ParamSpec("b", 4, bwd_s=9e-3)), ready_order=(0, 1))
    cost = CostModel.linear(2e-3, 1e18, 2, channels=1)
    for name in ("individual", "bucketed"):
        spec = StrategySpec(name, bucket_mb=1e-5) if name == "bucketed" else StrategySpec(name)
        res = predict(prof, cost, spec, 2)
        assert res.n_collectives == 2
        assert res.step_time_s == pytest.approx(14e-3, rel=1e-9), name


@pytest.mark.parametrize("model", ["events", "analytic"])
def test_copy_out_bucket_by_bucket_as_torch_finalize_backward(model):
    """torch's finalize_backward waits for bucket i, copies it into .grad, then bucket i+1: copies of
    buckets done before backward's end run from there one after another, each later one waits for its
    all-reduce. Copy rate 1000 B/s (1000 B: 1 s; copy-in is added to each gradient's compute)."""
    cost = CostModel.linear(0.5, 1000.0, channels=1, copy_bytes_per_s=1000.0)
    spec = StrategySpec("bucketed", bucket_mb=1e-6)  # one bucket per parameter: c, b, a
    out = simulate_step(PROF, comm_plan(PROF, spec, 2), cost, 2, record=model == "events", model=model)
    # c ready 0.5+2 = 2.5 -> [2.5, 4.0]; b ready 2.5+4 = 6.5 -> [6.5, 9.0]; a ready 8.5, channel busy -> [9.0, 10.5]
    assert [(r.start_s, r.end_s) for r in out.rows] == [(2.5, 4.0), (6.5, 9.0), (9.0, 10.5)]
    assert out.backward_end_s == 8.5
    # copy c [8.5, 9.5], copy b [9.5, 11.5], copy a [11.5, 12.5]; optimizer [12.5, 12.75]
    # (all after the last all-reduce, as the simulator did before: 10.5 + 4 + 0.25 = 14.75)
    assert out.step_time_s == pytest.approx(12.75, abs=1e-12)
    if model == "events":
        copies = [(e[4], e[0], e[1]) for e in out.events if e[3] == "copy"]
        assert copies == [
            ("copy bucket0 out", 8.5, 9.5),
            ("copy bucket1 out", 9.5, 11.5),
            ("copy bucket2 out", 11.5, 12.5),
        ]


def test_per_call_compute_cost_lands_on_ranks_computing_when_a_call_starts():
    cost = CostModel.linear(0.5, 1000.0, channels=1, call_cpu_s=0.25)
    out = simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), cost, 2, record=True)
    # all-reduce c starts at 1.5 while b computes: b does 2.0 + 0.25 s -> [1.5, 3.75]; all-reduce b starts
    # at 3.75 while a computes: a [3.75, 5.0]; all-reduce a waits for the channel until 6.25, when the rank
    # only waits: no cost. [6.25, 7.75], optimizer [7.75, 8.0].
    assert [(e[4], e[0], e[1]) for e in out.events if e[3] in ("backward", "allreduce")] == [
        ("c", 0.5, 1.5),
        ("c", 1.5, 3.0),
        ("b", 1.5, 3.75),
        ("a", 3.75, 5.0),
        ("b", 3.75, 6.25),
        ("a", 6.25, 7.75),
    ]
    assert out.step_time_s == 8.0
    assert predict(PROF, cost, StrategySpec("individual"), 2).step_time_s == 8.0  # "auto" takes the event model


def test_per_call_compute_cost_with_contention_is_retimed_exactly():
    both = CostModel.linear(0.5, 1000.0, channels=1, contention=1.0, call_cpu_s=0.25)
    out = simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), both, 2, record=True)
    # as test_contention_slows_compute_while_communicating (half speed while a call is in flight), and
    # while the 0.25 s of c's work is owed b shares its core with it, half each: from 1.5 b runs at 1/4
    # until the debt is done at 2.0 (0.125 of b done), at 1/2 until c's all-reduce ends at 3.0 (0.625),
    # then at full speed -> 4.375. All-reduce b [4.375, 6.875] starts while a computes: 1/4 until 4.875
    # (0.125 of a), 1/2 for the remaining 0.875 -> 6.625. All-reduce a [6.875, 8.375], optimizer 0.25 s.
    want = [
        ("c", 0.5, 1.5),
        ("c", 1.5, 3.0),
        ("b", 1.5, 4.375),
        ("a", 4.375, 6.625),
        ("b", 4.375, 6.875),
        ("a", 6.875, 8.375),
    ]
    assert_spans(out, want)
    assert out.step_time_s == pytest.approx(8.625, abs=1e-12)


def test_owed_work_costs_compute_no_more_than_the_compute_left():
    """3 s of work per call, more than each backward segment left: compute shares its core with the debt
    (half speed) and loses only as much as it had; the rest is done on the core it leaves free (as a lump
    added to the compute, all of it was charged: the last bucket's over-count at backward's tail)."""
    cost = CostModel.linear(0.5, 1000.0, channels=1, call_cpu_s=3.0)
    out = simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), cost, 2, record=True)
    # c's call starts at 1.5 while b (2.0 s) computes: owed 3.0, b at half speed -> 5.5 (2.0 paid, 1.0 owed);
    # b's call [5.5, 8.0] starts as a (1.0 s) begins: owed 4.0, a at half speed -> 7.5 (3.0 owed). a's call
    # waits for the channel: [8.0, 9.5]; the core pays 2.0 meanwhile, so the optimizer (0.25 s) still
    # shares it with the last 1.0 owed: 0.5 s -> 10.0.
    want = [("c", 0.5, 1.5), ("c", 1.5, 3.0), ("b", 1.5, 5.5), ("a", 5.5, 7.5), ("b", 5.5, 8.0), ("a", 8.0, 9.5)]
    assert_spans(out, want)
    assert out.backward_end_s == pytest.approx(7.5, abs=1e-12)
    assert out.step_time_s == pytest.approx(10.0, abs=1e-12)


def test_per_byte_compute_cost_grows_with_the_collective_that_starts():
    cost = CostModel.linear(0.5, 1000.0, channels=1, call_cpu_s_per_byte=1e-4)
    out = simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), cost, 2, record=True)
    # c's all-reduce (1000 B) starts at 1.5 while b computes: b does 2.0 + 0.1 s -> [1.5, 3.6]; b's
    # (2000 B) starts at 3.6 while a computes: a [3.6, 4.8]; a's waits for the channel until 6.1 and the
    # rank only waits: [6.1, 7.6]; optimizer [7.6, 7.85].
    want = [("c", 0.5, 1.5), ("c", 1.5, 3.0), ("b", 1.5, 3.6), ("a", 3.6, 4.8), ("b", 3.6, 6.1), ("a", 6.1, 7.6)]
    assert_spans(out, want)
    assert out.step_time_s == pytest.approx(7.85, abs=1e-12)


def test_reducer_finalize_costs_per_parameter_after_the_last_copy_out_torch_ddp_only():
    """torch DDP's finalize (``CostModel.finalize_s_per_param``) runs after the last bucket's copy-out, once
    per parameter the reducer holds, before the optimizer: torch-ddp and sharded (DDP's reducer) pay it,
    the hand-written wrappers do not; the analytic path and the event model agree."""
    params = tuple(ParamSpec(f"p{i}", 250_000, bwd_s=1e-3) for i in range(6))
    prof = GradProfile("m", params, ready_order=tuple(range(6))[::-1], forward_s=2e-3, optimizer_s=1e-3)
    fin = 2e-4
    for name, pays in (("torch-ddp", True), ("sharded", True), ("bucketed", False), ("individual", False)):
        spec = StrategySpec(name, bucket_mb=2.0) if name != "individual" else StrategySpec(name)
        plan = comm_plan(prof, spec, 2)
        for model in ("analytic", "events"):
            base = CostModel.linear(1e-4, 1e9, copy_bytes_per_s=1e10)
            t0 = simulate_step(prof, plan, base, 2, model=model).step_time_s
            t1 = simulate_step(prof, plan, base.with_overrides(finalize_s_per_param=fin), 2, model=model).step_time_s
            assert t1 - t0 == pytest.approx(6 * fin if pays else 0.0, abs=1e-12), (name, model)
    with pytest.raises(ValueError, match="finalize"):
        CostModel.linear(1e-4, 1e9, finalize_s_per_param=-1e-6)


def test_a_bucket_launched_at_backward_tail_costs_compute_the_tail_not_its_work():
    """Measured on loopback in every run (BENCHMARKS.md, "Run m10"): torch DDP with all gradients in one
    bucket, launched 0.06-0.1 ms before backward ends, steps as fast as `flat`'s one all-reduce after
    backward. The call's work (10 s here, far more than the 0.1 s tail left) costs backward at most the
    tail; added to that compute whole (the rule before), backward ended at 14.6 and the step at 14.85."""
    prof = GradProfile(
        "tail",
        (ParamSpec("a", 250, bwd_s=1.0), ParamSpec("b", 500, bwd_s=2.0), ParamSpec("c", 250, bwd_s=1.0)),
        forward_s=0.5,
        optimizer_s=0.25,
        backward_tail_s=0.1,
    )
    work = CostModel.linear(0.5, 1000.0, channels=1, call_cpu_s=10.0)
    one = StrategySpec("bucketed", bucket_mb=64.0)
    out = simulate_step(prof, comm_plan(prof, one, 2), work, 2, record=True)
    # the bucket is launched when c..a is done (4.5), before the 0.1 s tail: the tail shares its core with
    # the call's work, half speed -> 4.7, under the all-reduce of 4000 B: [4.5, 9.0]. The 9.9 s of work
    # left is done on the core the rank leaves free, 4.3 s of it by 9.0; the optimizer shares the core
    # with the 5.6 s still owed: 0.5 s -> 9.5 (work can outlast its call: the rule's known over-count)
    assert [(e[3], e[0], e[1]) for e in out.events if e[3] in ("backward", "allreduce", "optimizer")] == [
        ("backward", 0.5, 4.5),
        ("backward", 4.5, 4.7),
        ("allreduce", 4.5, 9.0),
        ("optimizer", 9.0, 9.5),
    ]
    assert out.backward_end_s == pytest.approx(4.7, abs=1e-12) and out.step_time_s == pytest.approx(9.5, abs=1e-12)
    # flat launches after the tail (4.6): no work lands, the same call [4.6, 9.1], optimizer -> 9.35
    t_flat = simulate_step(prof, comm_plan(prof, StrategySpec("flat"), 2), work, 2).step_time_s
    assert t_flat == pytest.approx(9.35, abs=1e-12)


def test_owed_work_ends_at_long_simulated_times():
    """Past about 32 s of simulated time a debt's remainder can fall below the clock's resolution; the
    debt paid when its timer fires must be exactly zero, or the rank asks for timeouts that never move
    the clock (review, 2026-11-25: forward 1000.1 s hung)."""
    prof = GradProfile(
        "long",
        (ParamSpec("a", 250, bwd_s=1.0), ParamSpec("b", 500, bwd_s=2.0), ParamSpec("c", 250, bwd_s=1.0)),
        forward_s=1000.1,
        optimizer_s=0.25,
    )
    for work in (0.3, 0.7):
        cost = CostModel.linear(0.5, 1000.0, channels=1, call_cpu_s=work)
        out = simulate_step(prof, comm_plan(prof, StrategySpec("individual"), 2), cost, 2)
        short = simulate_step(
            dataclasses.replace(prof, forward_s=0.1), comm_plan(prof, StrategySpec("individual"), 2), cost, 2
        )
        assert out.step_time_s == pytest.approx(short.step_time_s + 1000.0, abs=1e-9)


# ---- a call on idle channels (CostModel.cold_call_s, cold_tau_s) ---------------------------------
def _cold(strategy, channels=1, shared=True):
    cost = CostModel.linear(0.5, 1000.0, channels=channels, shared_bandwidth=shared, cold_call_s=1.0, cold_tau_s=1.0)
    return simulate_step(PROF, comm_plan(PROF, StrategySpec(strategy), 2), cost, 2, record=True)


def test_a_call_on_idle_channels_pays_the_cold_cost_of_its_idle_time_and_one_in_a_row_none():
    # c starts at 1.5, idle since the previous step's last call: taken to end where its optimizer
    # (0.25 s) began, so 1.75 s
    e = -math.expm1(-1.75)
    # c [1.5, 3.0 + e]; b ready at 3.5 starts when c ends, in a row: no extra; a, in a row after b
    assert_spans(
        _cold("individual"),
        [
            ("c", 0.5, 1.5),
            ("b", 1.5, 3.5),
            ("c", 1.5, 3.0 + e),
            ("a", 3.5, 4.5),
            ("b", 3.0 + e, 5.5 + e),
            ("a", 5.5 + e, 7.0 + e),
        ],
    )
    # flat: one call of 4000 B after backward (4.75 s idle): 0.5 + 4.0 + (1 - exp(-4.75)), optimizer 0.25
    assert _cold("flat").step_time_s == pytest.approx(4.5 + 4.5 - math.expm1(-4.75) + 0.25, abs=1e-12)


def test_a_call_beside_one_in_flight_is_not_cold():
    """gloo's second thread: b and a start while another call is in flight, so only c pays (c's
    channel was idle); b's wait for c's end does not make b cold."""
    e = -math.expm1(-1.75)
    out = _cold("individual", channels=2, shared=False)
    # c [1.5, 3.0 + e] (e ~ 0.83, so c is still in flight at 3.5): b [3.5, 6.0] on the second channel;
    # a at 4.5 beside b: [4.5, 6.0]; optimizer -> 6.25
    assert [(e_[4], e_[0], e_[1]) for e_ in out.events if e_[3] == "allreduce"] == [
        ("c", 1.5, pytest.approx(3.0 + e, abs=1e-12)),
        ("b", 3.5, 6.0),
        ("a", 4.5, 6.0),
    ]
    assert out.step_time_s == 6.25


def test_cold_call_terms_are_checked_and_round_trip():
    with pytest.raises(ValueError, match="cold-call cost"):
        CostModel.linear(0.5, 1000.0, cold_call_s=-1e-3, cold_tau_s=0.01)
    with pytest.raises(ValueError, match="cold-call cost"):
        CostModel.linear(0.5, 1000.0, cold_call_s=math.nan, cold_tau_s=0.01)
    with pytest.raises(ValueError, match="time constant"):
        CostModel.linear(0.5, 1000.0, cold_call_s=1e-3, cold_tau_s=0.0)
    cost = CostModel.linear(0.5, 1000.0, cold_call_s=2e-3, cold_tau_s=0.015)
    assert CostModel.from_dict(cost.to_dict()) == cost
    assert cost.cold_extra_s(0.0) == 0.0 and cost.cold_extra_s(0.015) == pytest.approx(2e-3 * (1 - math.exp(-1)))
    assert "cold_call_s" not in CostModel.linear(0.5, 1000.0).to_dict()  # off: files stay as they were


@pytest.mark.parametrize(
    "strategy, kw, accum",
    [("individual", {}, 1), ("bucketed", {"bucket_mb": 2000 / MIB}, 1), ("sharded", {}, 1), ("flat", {}, 2)],
)
def test_each_call_pays_the_cold_cost_of_the_idle_time_before_it(strategy, kw, accum):
    """One serial channel, no contention: every collective (all-reduces, and the broadcasts after
    the optimizer) lasts its own duration plus ``cold_extra_s`` of the time since the one before it
    ended, the first since the previous step's (its optimizer's start, or its end where broadcasts
    follow the optimizer); ``accum``: the no_sync micro-steps count as idle."""
    spec = StrategySpec(strategy, accum_steps=accum, **kw)
    plan = comm_plan(PROF, spec, 2)
    warm = CostModel.linear(0.5, 1000.0)
    cold = dataclasses.replace(warm, cold_call_s=0.7, cold_tau_s=2.0)

    def calls(cost):
        out = simulate_step(PROF, plan, cost, 2, accum_steps=accum, record=True)
        return [(e[0], e[1]) for e in out.events if e[3] in ("allreduce", "broadcast")]

    base, got = calls(warm), calls(cold)
    assert len(got) == len(base) >= 1
    prev_end = 0.0 if plan.post_optimizer else -PROF.optimizer_s * plan.optimizer_fraction
    for (s0, e0), (s, e) in zip(base, got):
        assert e - s == pytest.approx(e0 - s0 + cold.cold_extra_s(s - prev_end), abs=1e-12)
        prev_end = e


_LONG = GradProfile(
    "long backward",
    (ParamSpec("a", 250, bwd_s=10.0), ParamSpec("b", 250, bwd_s=10.0), ParamSpec("c", 250, bwd_s=1.0)),
    forward_s=0.5,
    optimizer_s=0.0,
)


def test_the_cold_wait_does_not_slow_compute():
    """A wait, not work: compute beside it runs at full speed (``contention`` applies once the call is
    awake). c is ready at 1.5 and waits e; then its 1.5 s of call slow b's backward to half speed; b's
    10 s of work: e at full speed, 0.75 at half during the call, the rest at full: b ends at 12.25."""
    cost = CostModel.linear(0.5, 1000.0, contention=1.0, cold_call_s=1.0, cold_tau_s=1.0)
    out = simulate_step(_LONG, comm_plan(_LONG, StrategySpec("individual"), 2), cost, 2, record=True)
    (b,) = [e for e in out.events if e[3] == "backward" and e[4] == "b"]
    assert (b[0], b[1]) == (1.5, pytest.approx(12.25, abs=1e-12))


def test_the_cold_wait_is_not_slowed_by_compute():
    """The probe measured the wait with nothing computing: unlike the call's own parts, compute
    running beside it (comm_contention) does not stretch it."""
    cost = CostModel.linear(0.5, 1000.0, comm_contention=1.0, cold_call_s=1.0, cold_tau_s=1.0)
    out = simulate_step(_LONG, comm_plan(_LONG, StrategySpec("individual"), 2), cost, 2, record=True)
    (c,) = [e for e in out.events if e[3] == "allreduce" and e[4] == "c"]
    # c ready at 1.5 after 1.5 s idle; b's backward runs until 11.5: the wait e, then 1.5 s of call at half speed
    assert (c[0], c[1]) == (1.5, pytest.approx(1.5 - math.expm1(-1.5) + 3.0, abs=1e-12))


def test_a_pipelined_channel_overlaps_a_queued_calls_hand_off_with_the_transfer_before():
    """individual on PROF, o = 0.5 s, w = 1000 B/s, pipelined: c [1.5, 3.0] (hand-off 1.5-2.0, wire
    2.0-3.0); b ready at 3.5, c's transfer long started: hand-off 3.5-4.0, wire 4.0-6.0; a ready at 4.5,
    b on the wire since 4.0: hand-off 4.5-5.0 under b's transfer, wire once b leaves it, 6.0-7.0 (serial:
    7.5); optimizer 7.0-7.25."""
    cost = CostModel.linear(0.5, 1000.0, pipelined=True)
    out = simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), cost, 2, record=True)
    assert [(e[4], e[0], e[1]) for e in out.events if e[3] == "allreduce"] == [
        ("c", 1.5, 3.0),
        ("b", 3.5, 6.0),
        ("a", 4.5, 7.0),
    ]
    assert out.step_time_s == 7.25
    assert run("individual").step_time_s == 7.75  # the serial channel, for contrast


def test_a_pipelined_queue_costs_max_of_hand_off_and_transfer_per_call():
    """k equal calls ready at once: serial k (o + x); pipelined o + x + (k - 1) max(o, x), either side of
    o = x. Blocking calls (naive: each launched once the one before is done) gain nothing."""
    k = 6
    prof = GradProfile(
        "k", tuple(ParamSpec(f"p{i}", 250, bwd_s=1e-9) for i in range(k)), forward_s=0.0, optimizer_s=0.0
    )
    for o, w in ((0.5, 1000.0), (2.0, 1000.0)):  # x = 1.0 s per call
        x = 1000 / w
        for strategy, serial_gain in (("individual", True), ("naive", False)):
            plan = comm_plan(prof, StrategySpec(strategy), 2)
            serial = simulate_step(prof, plan, CostModel.linear(o, w), 2).step_time_s
            piped = simulate_step(prof, plan, CostModel.linear(o, w, pipelined=True), 2).step_time_s
            assert serial == pytest.approx(k * (o + x), abs=1e-6)
            want = o + x + (k - 1) * max(o, x) if serial_gain else k * (o + x)
            assert piped == pytest.approx(want, abs=1e-6), (o, strategy)


def test_pipelined_is_one_channel_round_trips_and_leaves_the_analytic_path():
    with pytest.raises(ValueError, match="pipelined"):
        CostModel.linear(0.5, 1000.0, channels=2, pipelined=True)
    cost = CostModel.linear(0.5, 1000.0, pipelined=True)
    assert CostModel.from_dict(cost.to_dict()) == cost and cost.to_dict()["pipelined"] is True
    assert "pipelined" not in CostModel.linear(0.5, 1000.0).to_dict()  # off: files stay as they were
    plan = comm_plan(PROF, StrategySpec("individual"), 2)
    with pytest.raises(ValueError, match="analytic"):
        simulate_step(PROF, plan, cost, 2, model="analytic")


def test_more_channels_asked_of_a_pipelined_model_are_plain_ones():
    from ddpsim.resolve import resolve_cost

    cost = CostModel.linear(0.5, 1000.0, pipelined=True)
    assert resolve_cost(cost, channels=2) == CostModel.linear(0.5, 1000.0, channels=2)
    assert resolve_cost(cost, channels=1).pipelined
    # --pipelined off over a pipelined calibration: the plain channel; on over two channels (gloo's): one
    assert resolve_cost(cost, pipelined=False) == CostModel.linear(0.5, 1000.0)
    two = CostModel.linear(0.5, 1000.0, channels=2)
    assert resolve_cost(two, pipelined=True) == cost
    with pytest.raises(ValueError, match="one channel"):
        resolve_cost(two, pipelined=True, channels=2)


def test_a_pipelined_hand_off_is_slowed_by_compute_like_any_part_of_a_call():
    """comm_contention = 1 (a call's parts run at half speed while a rank computes), pipelined: c's
    hand-off 1.5-2.5 and wire 2.5-4.5 under b and a; b ready at 3.5 (c already on the wire): hand-off
    3.5-4.5 at half speed, wire once c leaves it, 4.5-6.5 at full speed (backward ended at 4.5); a ready
    at 4.5, handed off 4.5-5.0 under b's transfer, wire 6.5-7.5; optimizer 7.5-7.75. The serial channel
    with the same contention starts b only at 4.5: step 8.75."""
    kw = dict(comm_contention=1.0)
    plan = comm_plan(PROF, StrategySpec("individual"), 2)
    piped = simulate_step(PROF, plan, CostModel.linear(0.5, 1000.0, pipelined=True, **kw), 2, record=True)
    assert_spans(piped, [("c", 1.5, 4.5), ("b", 3.5, 6.5), ("a", 4.5, 7.5)], kinds=("allreduce",))
    assert piped.step_time_s == pytest.approx(7.75, abs=1e-12)
    serial = simulate_step(PROF, plan, CostModel.linear(0.5, 1000.0, **kw), 2)
    assert serial.step_time_s == pytest.approx(8.75, abs=1e-12)


def test_a_call_handed_off_beside_a_transfer_is_warm():
    """cold_call_s = 1 s, tau = 1 s, pipelined: c finds nothing in flight after 1.75 s idle (the optimizer's
    0.25 s before the step) and waits e = 1 - exp(-1.75) first: hand-off [1.5 + e, 2 + e], wire
    [2 + e, 3 + e]; b (ready 3.5) and a (ready 4.5) each start while the call before is on the wire, so
    neither waits: as without the cold term, b [3.5, 6.0], a [4.5, 7.0], step 7.25."""
    cost = CostModel.linear(0.5, 1000.0, pipelined=True, cold_call_s=1.0, cold_tau_s=1.0)
    out = simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), cost, 2, record=True)
    e = -math.expm1(-1.75)
    assert_spans(out, [("c", 1.5, 3.0 + e), ("b", 3.5, 6.0), ("a", 4.5, 7.0)], kinds=("allreduce",))
    assert out.step_time_s == pytest.approx(7.25, abs=1e-12)


# PROF with a (1000 B) at 0.2 s of backward: whether a call's work lands on it depends on when the call starts
_SHORT_A = dataclasses.replace(PROF, params=(dataclasses.replace(PROF.params[0], bwd_s=0.2), *PROF.params[1:]))


def test_a_pipelined_hand_off_lands_its_work_on_compute_a_serial_start_would_miss():
    """o = 0.5 s, w = 500 B/s (c 2 s on the wire, b 4 s, a 2 s), 1e-4 s of work per byte (c 0.1, b 0.2).
    Pipelined: c [1.5, 4.0] (wire from 2.0); its 0.1 s lands on b: b [1.5, 3.6]. b is handed off at 3.6,
    c being on the wire, while a computes: a's 0.2 s shares its core with b's 0.2 s, both done at 4.0
    (backward ends 4.0); b's wire waits for its hand-off, 4.1-8.1; a handed off 4.1-4.6 (b on the wire
    since 4.1), wire 8.1-10.1; optimizer -> 10.35. Serial: b starts when c ends (4.0), after a's compute
    (3.6-3.8), so none of its work lands: backward ends 3.8; b [4.0, 8.5], a [8.5, 11.0], step 11.25."""
    kw = dict(call_cpu_s_per_byte=1e-4)
    plan = comm_plan(_SHORT_A, StrategySpec("individual"), 2)
    piped = simulate_step(_SHORT_A, plan, CostModel.linear(0.5, 500.0, pipelined=True, **kw), 2, record=True)
    want = [("c", 0.5, 1.5), ("b", 1.5, 3.6), ("c", 1.5, 4.0), ("a", 3.6, 4.0), ("b", 3.6, 8.1), ("a", 4.1, 10.1)]
    assert_spans(piped, want)
    assert piped.backward_end_s == pytest.approx(4.0, abs=1e-12)
    assert piped.step_time_s == pytest.approx(10.35, abs=1e-12)
    serial = simulate_step(_SHORT_A, plan, CostModel.linear(0.5, 500.0, **kw), 2)
    assert serial.backward_end_s == pytest.approx(3.8, abs=1e-12)
    assert serial.step_time_s == pytest.approx(11.25, abs=1e-12)


@pytest.mark.parametrize("strategy", ["torch-ddp", "individual", "flat", "sharded"])
@pytest.mark.parametrize("contention", [0.0, 0.5])
def test_leftover_work_delays_a_communicating_step_by_exactly_itself(strategy, contention):
    """``leftover_s`` runs before forward on every rank of a step that communicates: the step, every span
    and every collective move by it (nothing is in flight then, so contention cannot stretch it), the
    compute-only time does not, and a step with nothing to communicate (one rank) pays none."""
    kw = {"bucket_mb": 1500 / MIB} if strategy in ("torch-ddp", "sharded") else {}
    spec = StrategySpec(strategy, **kw)
    base = CostModel.linear(0.5, 1000.0, contention=contention)
    left = dataclasses.replace(base, leftover_s=0.3)
    a = predict(PROF, base, spec, 2, record_events=True)
    b = predict(PROF, left, spec, 2, record_events=True)
    assert b.step_time_s == pytest.approx(a.step_time_s + 0.3, abs=1e-12)
    assert b.compute_s == a.compute_s and b.overhead_s == pytest.approx(a.overhead_s + 0.3, abs=1e-12)
    assert [(r.ready_s + 0.3, r.start_s + 0.3, r.end_s + 0.3) for r in a.rows] == [
        pytest.approx((r.ready_s, r.start_s, r.end_s), abs=1e-12) for r in b.rows
    ]
    lead = [e for e in b.events if e[3] == "leftover"]
    assert [(e[0], e[1]) for e in lead] == [(0.0, pytest.approx(0.3))]
    assert [e[:2] for e in b.events if e[3] != "leftover"] == [
        pytest.approx((e[0] + 0.3, e[1] + 0.3), abs=1e-12) for e in a.events
    ]
    one = predict(PROF, left, spec, 1)
    assert one.step_time_s == predict(PROF, base, spec, 1).step_time_s
    if contention == 0:  # the analytic path (no events recorded) shifts the same
        assert predict(PROF, left, spec, 2).step_time_s == pytest.approx(b.step_time_s, abs=1e-12)


@pytest.mark.parametrize("strategy", ["torch-ddp", "individual", "flat", "sharded"])
def test_the_optimizers_extra_lengthens_a_communicating_steps_optimizer_by_exactly_itself(strategy):
    """``optimizer_extra_s``: the optimizer span of a step that communicates grows by it, and so the step (the
    broadcasts after ``sharded``'s optimizer start that much later); nothing before the optimizer moves; one
    rank (nothing to communicate) pays none."""
    kw = {"bucket_mb": 1500 / MIB} if strategy in ("torch-ddp", "sharded") else {}
    spec = StrategySpec(strategy, **kw)
    base = CostModel.linear(0.5, 1000.0)
    extra = dataclasses.replace(base, optimizer_extra_s=0.2)
    a = predict(PROF, base, spec, 2, record_events=True)
    b = predict(PROF, extra, spec, 2, record_events=True, model="events")
    assert b.step_time_s == pytest.approx(a.step_time_s + 0.2, abs=1e-12)
    assert b.backward_end_s == a.backward_end_s and b.compute_s == a.compute_s
    opt_a = [e for e in a.events if e[3] == "optimizer"]
    opt_b = [e for e in b.events if e[3] == "optimizer"]
    assert [e[1] - e[0] for e in opt_b] == [pytest.approx(e[1] - e[0] + 0.2) for e in opt_a]
    assert predict(PROF, extra, spec, 1).step_time_s == predict(PROF, base, spec, 1).step_time_s
    assert predict(PROF, extra, spec, 2).step_time_s == pytest.approx(b.step_time_s, abs=1e-12)  # analytic


def test_leftover_and_the_optimizers_extra_must_be_finite_and_not_negative():
    for field in ("leftover_s", "optimizer_extra_s"):
        for bad in (-1e-3, math.inf, math.nan):
            with pytest.raises(ValueError, match="leftover|optimizer"):
                CostModel.linear(0.5, 1000.0, **{field: bad})
        c = CostModel.linear(0.5, 1000.0, **{field: 2e-4})
        assert getattr(CostModel.from_dict(c.to_dict()), field) == 2e-4
        assert field not in CostModel.linear(0.5, 1000.0).to_dict()  # files without it read as before


@pytest.mark.parametrize("strategy", ["flat", "individual", "naive", "torch-ddp", "bucketed", "sharded"])
@pytest.mark.parametrize("model", ["events", "auto"])
def test_the_division_pass_after_communication_costs_the_wrappers_that_run_it(strategy, model):
    """``scale_bytes_per_s``: realrun's flat, individual and naive wrappers divide the averaged gradients in
    place once communication is done (``buf.div_``, ``torch._foreach_div_``), a pass over every gradient byte
    before the copy-out and the optimizer: the step grows by exactly ``total / rate``, and nothing before
    the last collective's end moves. torch's reducer and BucketedDDP fold the division into the copy-in
    (``mul_out`` into the bucket), so theirs do not change; one rank has nothing to divide."""
    kw = {"bucket_mb": 1500 / MIB} if strategy in ("torch-ddp", "bucketed", "sharded") else {}
    spec = StrategySpec(strategy, **kw)
    base = CostModel.linear(0.5, 1000.0, copy_bytes_per_s=4000.0)
    scaled = dataclasses.replace(base, scale_bytes_per_s=8000.0)  # the 4000 B of PROF: 0.5 s
    a = predict(PROF, base, spec, 2, record_events=True, model=model)
    b = predict(PROF, scaled, spec, 2, record_events=True, model=model)
    divides = strategy in ("flat", "individual", "naive")
    assert b.step_time_s == pytest.approx(a.step_time_s + (0.5 if divides else 0.0), abs=1e-12)
    assert b.backward_end_s == a.backward_end_s
    assert [r.end_s for r in b.rows] == [pytest.approx(r.end_s, abs=1e-12) for r in a.rows]
    if model == "events":
        spans = [e for e in b.events if e[4] == "divide gradients by the world size"]
        assert bool(spans) == divides
        if divides:
            last_allreduce = max(e[1] for e in b.events if e[3] == "allreduce")
            assert all(e[0] >= last_allreduce - 1e-12 and e[1] - e[0] == pytest.approx(0.5) for e in spans)
    assert predict(PROF, scaled, spec, 1).step_time_s == predict(PROF, base, spec, 1).step_time_s


def test_the_division_rate_is_checked_and_round_trips():
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="scale"):
            CostModel.linear(0.5, 1000.0, scale_bytes_per_s=bad)
    c = CostModel.linear(0.5, 1000.0, scale_bytes_per_s=6e9)
    assert CostModel.from_dict(c.to_dict()).scale_bytes_per_s == 6e9
    assert "scale_bytes_per_s" not in CostModel.linear(0.5, 1000.0).to_dict()  # files without it read as before


def test_a_call_that_waited_for_the_channel_spends_the_queued_share_of_its_latency():
    """o = 0.5 s, scale 0.5: c [1.5, 3.0] and b [3.5, 6.0] find the channel idle and pay all of o; a, ready at
    4.5 while b holds the channel, waits and pays 0.25 s of it: [6.0, 7.25], optimizer to 7.5."""
    cost = CostModel.linear(0.5, 1000.0, queued_latency_scale=0.5)
    out = simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), cost, 2, record=True)
    assert [(e[4], e[0], e[1]) for e in out.events if e[3] == "allreduce"] == [
        ("c", 1.5, 3.0),
        ("b", 3.5, 6.0),
        ("a", 6.0, 7.25),
    ]
    assert out.step_time_s == pytest.approx(7.5, abs=1e-12)
    # a call that finds the channel idle pays all of o, cold or not: flat's one call, the same at any scale
    for extra in ({}, {"cold_call_s": 0.2, "cold_tau_s": 1.0}):
        flat = [
            predict(PROF, CostModel.linear(0.5, 1000.0, queued_latency_scale=q, **extra), StrategySpec("flat"), 2)
            for q in (1.0, 0.3)
        ]
        assert flat[0].step_time_s == flat[1].step_time_s
    # two channels: a finds the second one free (no wait, all of o), as without the scale
    two = simulate_step(
        PROF, comm_plan(PROF, StrategySpec("individual"), 2), dataclasses.replace(cost, channels=2), 2, record=True
    )
    assert two.step_time_s == run("individual", channels=2).step_time_s


def test_blocking_broadcasts_are_never_queued_and_the_scale_is_checked_and_round_trips():
    """A bucket a parameter (caps of 1000 B): torch DDP's c, b, a queue as individual's do, and a gets the scale;
    the same buckets in a sharded step (blocking broadcasts after its optimizer) keep all of o, broadcasts too."""
    caps = {"bucket_cap_mb_list": (1000 / MIB,) * 3}
    runs = {
        name: [
            simulate_step(
                PROF,
                comm_plan(PROF, StrategySpec(name, **caps), 2),
                CostModel.linear(0.5, 1e3, queued_latency_scale=q),
                2,
                record=True,
            )
            for q in (1.0, 0.2)
        ]
        for name in ("torch-ddp", "sharded")
    }
    ddp, sharded = runs["torch-ddp"], runs["sharded"]
    assert ddp[1].step_time_s == pytest.approx(ddp[0].step_time_s - 0.4, abs=1e-12)  # a: 0.8 of its o = 0.5 s
    assert sharded[0].step_time_s == sharded[1].step_time_s and sharded[0].events == sharded[1].events
    assert sum(e[3] == "broadcast" for e in sharded[0].events) == 3
    for bad in (0.0, -0.1, 1.5, math.nan, math.inf):
        with pytest.raises(ValueError, match="queued calls' latency scale"):
            CostModel.linear(0.5, 1000.0, queued_latency_scale=bad)
    cost = CostModel.linear(0.5, 1000.0, queued_latency_scale=0.4)
    assert CostModel.from_dict(cost.to_dict()) == cost
    assert "queued_latency_scale" not in CostModel.linear(0.5, 1000.0).to_dict()  # 1: files stay as they were
    assert cost.label.endswith(", queued calls x0.40 of t0") and "queued" not in CostModel.linear(0.5, 1e3).label
    with pytest.raises(ValueError, match="analytic"):
        simulate_step(PROF, comm_plan(PROF, StrategySpec("individual"), 2), cost, 2, model="analytic")
