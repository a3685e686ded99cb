"""The one serialiser (``simulator.jsonio.to_fields`` / ``from_fields``): a dataclass's JSON is its fields,
and reading it back gives an equal object, for the toy classes here and every class that uses it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from realrun.bench_allreduce import AllreduceBenchSpec
from realrun.check import CheckResult
from realrun.stats import TimeSummary, summarize
from simulator import zoo
from simulator.interval import Interval
from simulator.jsonio import from_fields, to_fields
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import StrategySpec


@dataclass(frozen=True)
class Inner:
    a_s: float
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    groups: tuple[tuple[int, ...], ...]
    pair: tuple[int, float] | None = None
    env: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


def _json_round_trip(d):
    return json.loads(json.dumps(d, allow_nan=False))


def test_fields_in_order_tuples_as_lists_nested_objects():
    o = Outer("x", Inner(1.5, ("a", "b")), ((0, 1), (2,)), (3, 0.5), {"host": "h"})
    d = to_fields(o, schema="toy/1", omit_default=("note",))
    assert d == {
        "schema": "toy/1",
        "name": "x",
        "inner": {"a_s": 1.5, "tags": ["a", "b"]},
        "groups": [[0, 1], [2]],
        "pair": [3, 0.5],
        "env": {"host": "h"},
    }  # "note" left out: it is its default
    assert list(d) == ["schema", "name", "inner", "groups", "pair", "env"]
    assert from_fields(Outer, _json_round_trip(d), what="toy") == o


def test_reading_converts_by_the_declared_types():
    o = from_fields(Outer, {"name": "y", "inner": {"a_s": 2}, "groups": [[1]], "pair": [1, 2]}, what="toy")
    assert o.inner.a_s == 2.0 and isinstance(o.inner.a_s, float)  # an int where a float is declared
    assert o.groups == ((1,),) and o.pair == (1, 2.0) and isinstance(o.pair[1], float)
    assert o.env == {} and o.note == ""  # defaults for what is missing


@pytest.mark.parametrize(
    "d, msg",
    [
        ({"inner": {"a_s": 1}, "groups": []}, "toy lacks 'name'"),
        ({"name": "z", "inner": {}, "groups": []}, "toy: inner lacks 'a_s'"),
        ({"name": "z", "inner": {"a_s": 1}, "groups": 5}, "toy: groups must be a list, got 5"),
        ({"name": "z", "inner": {"a_s": 1}, "groups": [], "pair": [1]}, "toy: pair must be a list of 2"),
        ([1, 2], "toy must be a JSON object, got list"),
    ],
)
def test_bad_objects_say_what_is_wrong(d, msg):
    with pytest.raises(ValueError, match=msg):
        from_fields(Outer, d, what="toy")


# ---- the classes that use it: round trips through JSON text ------------------------------------
def test_strategy_spec_round_trip_and_format():
    s = StrategySpec("torch-ddp", bucket_cap_mb_list=(1, 24.5), find_unused_parameters=True, accum_steps=4)
    d = s.to_dict()
    assert d == {
        "name": "torch-ddp",
        "bucket_mb": None,
        "bucket_cap_mb_list": [1.0, 24.5],
        "find_unused_parameters": True,
        "static_graph": False,
        "gradient_as_bucket_view": False,
        "accum_steps": 4,
        "first_step": False,
    }
    assert StrategySpec.from_dict(_json_round_trip(d)) == s
    assert StrategySpec.from_dict({}) == StrategySpec()  # every field has a default


def test_param_spec_keeps_its_small_format():
    assert ParamSpec("w", 10).to_dict() == {"name": "w", "numel": 10, "dtype": "float32", "bwd_s": 0.0}
    p = ParamSpec("b", 3, "bfloat16", 1e-3, shape=(3,), requires_grad=False)
    assert p.to_dict() == {
        "name": "b",
        "numel": 3,
        "dtype": "bfloat16",
        "bwd_s": 1e-3,
        "shape": [3],
        "requires_grad": False,
    }
    assert ParamSpec.from_dict(_json_round_trip(p.to_dict())) == p
    with pytest.raises(ValueError, match="lacks 'numel'"):
        ParamSpec.from_dict({"name": "w"})


def test_grad_profile_round_trip(tmp_path):
    prof = zoo.profile_from_flops(zoo.load_model_spec("gpt2-small"), zoo.load_device(zoo.DEFAULT_DEVICE))
    d = prof.to_dict()
    assert d["schema"] == "ddpsim.profile/1" and len(d["params"]) == len(prof.params)
    assert GradProfile.from_dict(_json_round_trip(d)) == prof
    prof.save(tmp_path / "p.json")
    assert GradProfile.load(tmp_path / "p.json") == prof
    # an old file without "model" still reads, as before
    assert GradProfile.from_dict({k: v for k, v in d.items() if k != "model"}).model == "unnamed"


def test_results_and_specs_of_realrun_round_trip():
    t = summarize([0.1, 0.3, 0.2, 0.4])
    d = t.to_dict()
    assert d["iqr_s"] == pytest.approx(t.p75_s - t.p25_s)  # derived, written for readers, ignored on reading
    assert TimeSummary.from_dict(_json_round_trip(d)) == t
    spec = AllreduceBenchSpec(world_sizes=(2, 4), sizes_bytes=(4096, 65536), impls=("native", "ring"), iters=3)
    assert AllreduceBenchSpec.from_dict(_json_round_trip(spec.to_dict())) == spec
    c = CheckResult("weights", "flat", True, 1e-12, 1e-9, "max abs diff")
    assert from_fields(CheckResult, _json_round_trip(c.to_dict()), what="check") == c
    iv = Interval(0.8, 0.1, 0.12, 0.15, 32, ("o", "w"))
    assert iv.to_dict()["sources"] == ["o", "w"]
    assert from_fields(Interval, _json_round_trip(iv.to_dict()), what="interval") == iv


def test_simulator_records_written_by_their_fields_keep_their_keys():
    from simulator.engine import BucketRow
    from simulator.network import LinkLevel, Terms, load_network
    from simulator.roofline import Efficiency

    b = BucketRow(2, "bucket2", 4096, 3, 0.01, 0.02, 0.03)
    assert list(b.to_dict()) == ["index", "name", "msg_bytes", "n_params", "ready_s", "start_s", "end_s"]
    assert from_fields(BucketRow, _json_round_trip(b.to_dict()), what="bucket") == b
    t = Terms(1e-4, 2e-6, 1.25e9, 0.0, "ring", "assumed")
    assert list(t.to_dict()) == [
        "call_overhead_s",
        "alpha_s",
        "bw_bytes_per_s",
        "gamma_s_per_byte",
        "algorithm",
        "split",
    ]
    assert from_fields(Terms, _json_round_trip(t.to_dict()), what="terms") == t
    lvl = LinkLevel(5e-6, 2.5e10, 0.0, ("ring", "tree"))
    assert lvl.to_dict() == {
        "alpha_s": 5e-6,
        "bw_bytes_per_s": 2.5e10,
        "gamma_s_per_byte": 0.0,
        "algorithms": ["ring", "tree"],
    }
    assert LinkLevel.from_dict(_json_round_trip(lvl.to_dict())) == lvl
    net = load_network("nccl-h100-ib")  # a preset with two levels: written and read back equal
    assert type(net).from_dict(_json_round_trip(net.to_dict())).to_dict() == net.to_dict()
    e = Efficiency(0.6, 0.8, 5e-6, "fitted")
    assert e.to_dict() == {"matmul": 0.6, "memory": 0.8, "launch_s": 5e-6, "source": "fitted"}
    assert Efficiency.from_dict(_json_round_trip(e.to_dict())) == e
    assert Efficiency.from_dict({"matmul": 1, "memory": 0.5, "launch_s": 0}) == Efficiency(1.0, 0.5, 0.0, "")


def test_model_files_written_by_their_fields_header_first():
    spec = zoo.load_model_spec("gpt2-small")
    d = spec.to_dict()
    assert list(d) == ["schema", "name", "source", "defaults", "tokens_per_sample", "params"]  # the long list last
    assert list(d["params"][0]) == ["name", "shape", "dtype", "fwd_flops_per_sample"]
    assert isinstance(d["params"][0]["shape"], list)
    assert zoo.ModelSpec.from_dict(_json_round_trip(d)) == spec
    p = zoo.ModelParam("h.0.w", (3, 4), "bfloat16", 24.0)
    assert zoo.ModelParam.from_dict(_json_round_trip(p.to_dict())) == p


def test_finite_is_the_one_cleaner_of_strict_json(capsys):
    """``simulator.jsonio.finite``: NaN and infinities as null, dataclasses by their fields, tuples as lists,
    keys as text, paths as text; ``dumps_finite`` and the CLI's ``--json`` envelope both write through it."""
    import argparse
    from pathlib import Path

    from ddpsim.cliutil import CLI_SCHEMA, emit_json
    from simulator.jsonio import dumps_finite, finite

    obj = {"x": float("nan"), 1: (float("inf"), -float("inf"), 2.5), "inner": Inner(0.5, ("a",)), "p": Path("a/b")}
    want = {"x": None, "1": [None, None, 2.5], "inner": {"a_s": 0.5, "tags": ["a"]}, "p": "a/b"}
    assert finite(obj) == want
    assert dumps_finite(obj) == json.dumps(want, indent=1)
    assert dumps_finite(obj, indent=None) == json.dumps(want)
    emit_json(argparse.Namespace(command="x", quiet=True), obj)
    assert (
        capsys.readouterr().out
        == dumps_finite({"schema": CLI_SCHEMA, "command": "x", "inputs": {"quiet": True}, "results": want}) + "\n"
    )
