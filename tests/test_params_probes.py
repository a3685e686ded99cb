"""A params file whose probe entries a prediction would trip on is refused at load, one line naming the field,
whatever world size is asked for later."""

import copy
import json
import math
import re

import pytest

from calibration.fit import LinearFit
from calibration.params import Params


def _good() -> dict:
    fit = {"contention_c": 0.1, "comm_contention_c": 0.0, "bootstrap": [[0.1, 0.0], [0.12, 0.0]], "leftover_s": 2e-4}
    p = Params(
        backend="gloo",
        world_size=2,
        linear=LinearFit(o_s=300e-6, w_bytes_per_s=1e9, o_ci_s=(2e-4, 4e-4), w_ci_bytes_per_s=(0.9e9, 1.1e9)),
        probes={"in_step": fit, "in_step_by_p": {"4": {"contention_c": 0.3, "comm_contention_c": 0.0}}},
    )
    return json.loads(json.dumps(p.to_dict()))


def _with(path: str, value) -> dict:
    d = copy.deepcopy(_good())
    *head, last = path.split("/")
    node = d
    for k in head:
        node = node[k]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return d


def test_the_good_file_loads_and_serves_both_world_sizes():
    p = Params.from_dict(_good())
    assert sorted(p.in_step_fits()) == [2, 4] and p.contention_at(4)[0] == pytest.approx(0.3)


@pytest.mark.parametrize(
    "path, value, message",
    [
        ("probes", "x", "probes must be an object, got str"),
        ("probes/in_step", "x", "probes.in_step must be an object, got str"),
        ("probes/sharded_step", [1], "probes.sharded_step must be an object, got list"),
        ("probes/cold_call", [1], "probes.cold_call must be an object, got list"),
        ("probes/in_step_by_p", [1], "probes.in_step_by_p must be an object, got list"),
        ("probes/in_step_by_p/0", {"contention_c": 0.1, "comm_contention_c": 0.0}, "keys must be world sizes >= 2"),
        ("probes/in_step_by_p/four", {"contention_c": 0.1, "comm_contention_c": 0.0}, "got 'four'"),
        ("probes/in_step_by_p/4", "x", "probes.in_step_by_p.4 must be an object, got str"),
        ("probes/in_step_by_p/4/comm_contention_c", math.inf, "in_step_by_p.4.comm_contention_c must be a finite"),
        ("probes/in_step_by_p/4/contention_c", KeyError, "in_step_by_p.4 lacks contention_c"),
        ("probes/in_step/contention_c", -1.0, "probes.in_step.contention_c must be a finite number >= 0, got -1.0"),
        ("probes/in_step/leftover_s", "abc", "probes.in_step.leftover_s must be a finite number >= 0, got 'abc'"),
        ("probes/in_step/bootstrap", 5, "probes.in_step.bootstrap must be a list of lists"),
    ],
)
def test_a_probe_entry_a_prediction_would_trip_on_is_one_line_at_load(path, value, message):
    d = _with(path, value)
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")):
        Params.from_dict(d)


@pytest.mark.parametrize("ws", [0, 10**12, True])
def test_a_world_size_outside_the_simulators_range_is_refused(ws):
    d = _with("world_size", ws)
    with pytest.raises(ValueError, match="world_size must be an integer from 1 to 16777216"):
        Params.from_dict(d)


@pytest.mark.parametrize(
    "path, value, message",
    [
        ("linear/o_ci_s", [None, 4e-4], "o_ci_s must be"),
        ("linear/o_ci_s", [2e-4, "Infinity"], "o_ci_s must be"),
        ("linear/o_ci_s", [4e-4, 2e-4], "low <= high"),
        ("linear/o_ci_s", [-4e-4, -2e-4], "high >= 0"),
        ("linear/o_ci_s", [1e-4], "o_ci_s must be two numbers or [null, null], got [0.0001]"),
        ("linear/w_ci_bytes_per_s", [1.1e9, 0.9e9], "w_ci_bytes_per_s must be"),
        ("o_us", 50.0, "o_us is 50.0 but linear.o_s = 0.0003 s gives o_us = 300: o_us is derived and not read; edit"),
        ("w_gbps", 10, "w_gbps is 10 but linear.w_bytes_per_s = 1e+09 B/s gives w_gbps = 1: w_gbps is derived"),
        ("linear/o_us", 50.0, "linear.o_us is 50.0 but linear.o_s = 0.0003 s gives o_us = 300"),
        ("linear/w_ci_bytes_per_s", [0.0, 2e9], "w_ci_bytes_per_s must be [low, high] with 0 < low <= high"),
        ("linear/w_ci_bytes_per_s", [-1e9, 2e9], "0 < low <= high"),
        ("o_us", "fast", "o_us is 'fast'"),
    ],
)
def test_an_interval_or_headline_number_that_would_be_read_otherwise_is_refused(path, value, message):
    """A fit's interval the intervals would silently read as "no error known" (an end unknown, infinite, or the
    ends crossed), and a headline number edited away from the fit it is derived from, are one line at load."""
    d = _with(path, value)
    with pytest.raises(ValueError, match=re.escape(message)):
        Params.from_dict(d)


def test_an_unknown_interval_and_an_unbounded_bandwidth_still_load():
    d = _with("linear/o_ci_s", [None, None])
    d["linear"]["w_ci_bytes_per_s"] = [0.9e9, None]  # no upper bound
    lin = Params.from_dict(d).linear
    assert all(math.isnan(v) for v in lin.o_ci_s) and lin.w_ci_bytes_per_s[1] == math.inf
    assert LinearFit(o_s=1e-4, w_bytes_per_s=1e9, o_ci_s=(-5e-5, 3e-4)).o_ci_s[0] < 0  # a CI may cross zero


def test_an_edited_broadcast_headline_is_refused_too():
    d = _good()
    d["broadcast"] = copy.deepcopy(d["linear"])
    Params.from_dict(d)  # as written: loads
    d["broadcast"]["o_us"] = 1.0
    with pytest.raises(ValueError, match=re.escape("broadcast.o_us is 1.0 but broadcast.o_s = 0.0003 s")):
        Params.from_dict(d)
