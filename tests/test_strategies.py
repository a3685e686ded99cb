"""The one strategy registry (``simulator.strategies.REGISTRY``): each entry's fields agree with what
``StrategySpec`` accepts and with the plan it produces, every layer reads it, and a new strategy is one entry."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator import strategies as S
from simulator.predict import predict
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import BUCKETED, CAP_LIST, REGISTRY, STRATEGIES, Strategy, StrategySpec, comm_plan, spec_for
from simulator.units import MIB

# three float32 tensors of 1 MiB, ready 1 ms apart
PROF = GradProfile("three", tuple(ParamSpec(f"w{i}", MIB // 4, bwd_s=1e-3) for i in range(3)), ready_order=(2, 1, 0))


def test_the_tuples_are_read_off_the_registry():
    assert STRATEGIES == ("naive", "flat", "individual", "bucketed", "torch-ddp", "sharded") == tuple(REGISTRY)
    assert BUCKETED == ("bucketed", "torch-ddp", "sharded") and CAP_LIST == ("torch-ddp", "sharded")


@pytest.mark.parametrize("name", STRATEGIES)
def test_each_entry_agrees_with_the_spec_and_its_plan(name):
    entry = REGISTRY[name]
    spec = StrategySpec(name, bucket_mb=2.0 if entry.bucketed else None)
    assert comm_plan(PROF, spec, 4).launch == entry.launch  # the launch rule the entry states
    if entry.needs_bucket_size:
        with pytest.raises(ValueError, match="needs a bucket size"):
            StrategySpec(name)
    else:
        StrategySpec(name)
    if entry.accepts_cap_list:
        assert StrategySpec(name, bucket_cap_mb_list=(1, 2)).bucket_cap_mb_list == (1.0, 2.0)
    else:
        with pytest.raises(ValueError, match="applies to torch-ddp and sharded only"):
            StrategySpec(name, bucket_mb=1.0 if entry.bucketed else None, bucket_cap_mb_list=(1,))


def test_unknown_name_lists_the_registry():
    with pytest.raises(ValueError, match="unknown strategy 'ring'; allowed: naive, flat, individual, bucketed"):
        StrategySpec("ring")


def test_spec_for_drops_bucket_knobs_only_where_there_are_no_buckets():
    assert spec_for("naive", 4.0, [1, 2]) == StrategySpec("naive")
    assert spec_for("torch-ddp", 4.0) == StrategySpec("torch-ddp", bucket_mb=4.0)
    with pytest.raises(ValueError, match="needs a bucket size"):
        spec_for("bucketed")
    with pytest.raises(ValueError, match="bucket size must be a finite number > 0"):
        spec_for("sharded", -1.0)


def test_a_new_strategy_is_one_entry(monkeypatch):
    """``flat-twice``: the flat plan with every all-reduce issued twice. One entry: the spec accepts it and
    the engine runs its plan (two 3 MiB all-reduces after backward: o = 1 ms, w = 3 MiB/s -> 2 x 1.001 s)."""

    def plan(profile, spec, world_size):
        p = S.REGISTRY["flat"].plan(profile, spec, world_size)
        return replace(p, collectives=p.collectives * 2, copy_out_bytes=0)

    entry = Strategy("flat-twice", False, False, False, "after_backward", plan, "flat, twice")
    monkeypatch.setitem(S.REGISTRY, "flat-twice", entry)
    from simulator.network import CostModel

    cost = CostModel.linear(1e-3, 3 * MIB, 2, channels=1, contention=0.0)
    one = predict(PROF, cost, StrategySpec("flat"), 2)
    two = predict(PROF, cost, StrategySpec("flat-twice"), 2)
    assert two.n_collectives == 2 * one.n_collectives == 2
    t_call = 1e-3 + 3 * MIB / (3 * MIB)  # o + s / w
    assert two.overhead_s - one.overhead_s == pytest.approx(t_call, rel=0.02)


def test_realrun_has_a_wrapper_for_every_registry_entry():
    pytest.importorskip("torch")
    from realrun.ddp import _WRAPPERS

    assert set(_WRAPPERS) == set(REGISTRY)


def test_shard_owners_largest_first_to_the_lighter_rank():
    """``realrun.sharded.ShardedOptimizer``'s rule (it calls this function), continued across groups."""
    from simulator.strategies import shard_owners

    loads = [0, 0]
    assert shard_owners([400, 240, 200], 2, loads) == [0, 1, 1] and loads == [400, 440]
    assert shard_owners([160, 40], 2, loads) == [0, 1] and loads == [560, 480]
    assert shard_owners([8, 8, 8, 8], 3) == [0, 1, 2, 0]  # ties: in order, to the lowest rank
    with pytest.raises(ValueError, match="world size"):
        shard_owners([8], 0)


def test_shard_owners_at_more_ranks_than_parameters_as_over_every_rank():
    """Past as many ranks as parameters the owners are those over every rank (only the first ranks are
    chosen), without a heap of p entries: a world size of millions costs nothing extra."""
    import random

    from simulator.strategies import shard_owners

    rng = random.Random(3)
    sizes = [rng.choice([0, 8, 8, 64, 4096, rng.randrange(1, 10**6)]) for _ in range(40)]
    for p in (39, 40, 41, 97):
        assert shard_owners(sizes, p) == shard_owners(sizes, p, [0] * p)
    # a zero-byte parameter leaves its rank the lightest, lowest one, which takes the next
    assert shard_owners([0, 0, 5], 10**9) == shard_owners([0, 0, 5], 5, [0] * 5) == [1, 1, 0]
