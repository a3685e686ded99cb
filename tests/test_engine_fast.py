"""The fast paths against the reference they replace.

* the analytic path (no contention, one serial channel) against the SimPy event
  model, on random profiles, strategies and jittered ranks;
* a sweep (one simulation per distinct bucket assignment) against one
  ``predict`` per cap on the event model;
* O(n) bucket forming against the plain ``>=`` loop;
* the cost model over arrays against the scalar cost model.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from simulator.buckets import bucket_starts
from simulator.engine import collective_parts, simulate_step
from simulator.network import CostModel, list_networks, load_network
from simulator.predict import predict
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import StrategySpec, comm_plan
from simulator.sweep import sweep
from simulator.units import MIB

REL = 1e-9


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= REL * max(abs(a), abs(b))


def _profile(rng: random.Random, n: int) -> GradProfile:
    params = tuple(
        ParamSpec(
            f"p{i}",
            rng.choice([rng.randint(1, 100), rng.randint(1000, 3_000_000)]),
            dtype="float32" if rng.random() < 0.9 or n < 3 else "float16",
            bwd_s=0.0 if rng.random() < 0.2 else rng.uniform(1e-6, 2e-3),
        )
        for i in range(n)
    )
    order = list(range(n))[::-1]
    if rng.random() < 0.3:
        rng.shuffle(order)
    return GradProfile(
        "r",
        params,
        ready_order=tuple(order),
        forward_s=rng.uniform(0, 0.01),
        optimizer_s=rng.uniform(0, 0.003),
        backward_tail_s=rng.choice([0.0, 1e-4]),
    )


def _serial_cost(rng: random.Random) -> CostModel:
    kw = {
        "channels": 1,
        "copy_bytes_per_s": rng.choice([None, 2e10]),
        "hook_s_per_param": rng.choice([0.0, 3e-6]),
        "finalize_s_per_param": rng.choice([0.0, 1e-5]),
        "leftover_s": rng.choice([0.0, 4e-4]),
        "optimizer_extra_s": rng.choice([0.0, 1e-4]),
        "broadcast_switch_credit_s": rng.choice([0.0, 2e-4]),
        "scale_bytes_per_s": rng.choice([None, 8e9]),
    }
    if rng.random() < 0.4:
        return CostModel.from_network(load_network(rng.choice(["nccl-h100-ib", "nccl-a100-ib"])), **kw)
    return CostModel.linear(rng.uniform(5e-6, 3e-4), rng.uniform(1e9, 5e10), ref_world_size=rng.choice([None, 8]), **kw)


def _spec(rng: random.Random, total: int) -> StrategySpec:
    name = rng.choice(["torch-ddp", "torch-ddp", "sharded", "bucketed", "individual", "naive", "flat"])
    kw: dict = {"accum_steps": rng.choice([1, 2])}
    if name in ("torch-ddp", "sharded", "bucketed"):
        kw["bucket_mb"] = max(total * math.exp(rng.uniform(math.log(1e-3), 0)), 16) / MIB
    if name in ("torch-ddp", "sharded"):
        if rng.random() < 0.2:
            kw["bucket_mb"] = None
            kw["bucket_cap_mb_list"] = tuple(max(total * rng.uniform(0.01, 0.3), 16) / MIB for _ in range(3))
        kw["find_unused_parameters"] = rng.random() < 0.2
        kw["first_step"] = rng.random() < 0.1
    return StrategySpec(name, **kw)


@pytest.mark.parametrize("seed", range(120))
def test_analytic_path_equals_event_model(seed):
    rng = random.Random(1000 + seed)
    prof = _profile(rng, rng.choice([1, 4, 30, 200]))
    cost = _serial_cost(rng)
    spec = _spec(rng, prof.total_grad_bytes)
    world = rng.choice([2, 16, 1024])
    kw: dict = {}
    if rng.random() < 0.4:
        kw = {"ranks": rng.randint(2, min(6, world)), "jitter_sigma": 0.1, "repeats": 3, "seed": seed}
    fast = predict(prof, cost, spec, world, model="auto", **kw)
    ref = predict(prof, cost, spec, world, model="events", **kw)
    assert fast.n_sim_events == 0 < ref.n_sim_events  # the fast one really took the analytic path
    for a, b in [
        (fast.step_time_s, ref.step_time_s),
        (fast.step_time_p10_s, ref.step_time_p10_s),
        (fast.step_time_p90_s, ref.step_time_p90_s),
        (fast.backward_end_s, ref.backward_end_s),
        (fast.comm_busy_s, ref.comm_busy_s),
    ]:
        assert _close(a, b), (a, b)
    assert len(fast.rows) == len(ref.rows)
    for f, r in zip(fast.rows, ref.rows):
        assert (f.index, f.name, f.msg_bytes, f.n_params) == (r.index, r.name, r.msg_bytes, r.n_params)
        assert _close(f.ready_s, r.ready_s) and _close(f.start_s, r.start_s) and _close(f.end_s, r.end_s), (f, r)


def test_analytic_is_refused_where_it_does_not_apply():
    prof = _profile(random.Random(0), 5)
    plan = comm_plan(prof, StrategySpec("individual"), 2)
    for cost in (
        CostModel.linear(1e-4, 1e9, contention=0.1),
        CostModel.linear(1e-4, 1e9, channels=2),
        CostModel.linear(1e-4, 1e9, call_cpu_s=1e-4),
        CostModel.linear(1e-4, 1e9, cold_call_s=1e-3, cold_tau_s=0.01),
    ):
        with pytest.raises(ValueError, match="analytic"):
            simulate_step(prof, plan, cost, 2, model="analytic")
        assert simulate_step(prof, plan, cost, 2).n_sim_events > 0  # auto: the event model


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strategy", ["torch-ddp", "sharded", "bucketed"])
def test_sweep_shares_plans_but_equals_one_predict_per_cap(seed, strategy):
    rng = random.Random(seed)
    prof = _profile(rng, 60)
    cost = CostModel.linear(1e-4, 5e9, channels=rng.choice([1, 2]), contention=rng.choice([0.0, 0.4]))
    base = StrategySpec(strategy, bucket_mb=1.0)
    sw = sweep(prof, cost, base, 8)
    assert len(sw.rows) == 64
    for mb, row in zip(sw.bucket_mb, sw.rows):
        ref = predict(prof, cost, StrategySpec(strategy, bucket_mb=mb), 8, model="events")
        assert row.strategy.bucket_mb == mb
        assert _close(row.step_time_s, ref.step_time_s) and row.n_collectives == ref.n_collectives


@pytest.mark.parametrize("seed", range(6))
def test_sharded_plan_arrays_carry_the_owners_of_the_plan(seed):
    """The fast plan (``comm_plan_arrays``) broadcasts each parameter from the owner ``comm_plan`` gives it."""
    from simulator.strategies import comm_plan, comm_plan_arrays, plan_arrays

    rng = random.Random(seed)
    prof = _profile(rng, 40)
    for p in (2, 3, 8):
        spec = StrategySpec("sharded", bucket_mb=1.0)
        ref = plan_arrays(prof, comm_plan(prof, spec, p))
        fast = comm_plan_arrays(prof, spec, p)
        assert fast.post_src.tolist() == ref.post_src.tolist()
        assert fast.post_msg_bytes.tolist() == ref.post_msg_bytes.tolist()
        assert set(ref.post_src.tolist()) <= set(range(p))


def _plain_starts(sizes, limits):
    starts, size, k, open_ = [], 0, 0, False
    for i, s in enumerate(sizes):
        if not open_:
            starts.append(i)
            open_ = True
        size += s
        if size >= limits[min(k, len(limits) - 1)]:
            size, k, open_ = 0, k + 1, False
    return starts


@pytest.mark.parametrize("seed", range(40))
def test_bucket_starts_equal_the_plain_loop(seed):
    rng = random.Random(seed)
    sizes = [rng.choice([0, 1, 4, 400, 4000, 1 << 20]) for _ in range(rng.randint(1, 300))]
    # 0: a cap under one byte, truncated to 0 as torch truncates it (each tensor its own bucket; it once hung here)
    limits = [rng.choice([0, 1, 500, 4096, 1 << 20, 25 << 20]) for _ in range(rng.randint(1, 4))]
    assert bucket_starts(sizes, limits) == _plain_starts(sizes, limits)
    assert bucket_starts(np.asarray(sizes), limits) == _plain_starts(sizes, limits)


@pytest.mark.parametrize("network", [None, *list_networks()])
def test_cost_over_arrays_equals_scalar(network):
    rng = random.Random(7)
    msgs = np.array([0, 1, 7, 4096, 1 << 20, 25 << 20, 1 << 30] + [rng.randint(1, 1 << 31) for _ in range(50)])
    for p in (1, 2, 3, 8, 9, 64, 1000, 4096):
        for cost in (
            [CostModel.from_network(load_network(network))]
            if network
            else [
                CostModel.linear(5e-5, 1e10),
                CostModel.linear(5e-5, 1e10, ref_world_size=8),
                CostModel.linear(5e-5, 1e10, broadcast_o_s=1e-5, broadcast_w_bytes_per_s=3e9),
            ]
        ):
            lat, xfer = collective_parts(cost, "allreduce", msgs, p)
            blat, bxfer = collective_parts(cost, "broadcast", msgs, p)
            for k, m in enumerate(msgs.tolist()):
                assert (lat[k], xfer[k]) == cost.allreduce_parts_s(m, p)
                assert (blat[k], bxfer[k]) == cost.broadcast_parts_s(m, p)
