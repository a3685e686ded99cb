"""The ranges a network preset and a device spec state, and how far they move a prediction
(``simulator.assumptions``, ``ddpsim.stated``): reading them, refusing bad ones, and what predict, sweep, tune
and the Python API say over them."""

import json
import math
from pathlib import Path

import pytest

import ddpsim
from ddpsim.cli import main
from simulator import zoo
from simulator.assumptions import StatedRange, spread_over
from simulator.network import NetworkSpec, list_networks, load_network

DATA = Path(__file__).parent / "data"


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)["results"]


def run_err(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.err


# ---- the data --------------------------------------------------------------------


def test_every_stated_range_holds_its_point_and_survives_a_round_trip():
    stated = 0
    for name in list_networks():
        net = load_network(name)
        for r in net.ranges:
            assert r.low <= net.range_values()[r.key] == r.point <= r.high and r.source
        assert NetworkSpec.from_dict(net.to_dict()).ranges == net.ranges
        stated += len(net.ranges)
    for name in zoo.list_devices():
        dev = zoo.load_device(name)
        for r in dev.ranges:
            assert r.low <= getattr(dev, r.key) == r.point <= r.high and r.source
        assert zoo.DeviceSpec.from_dict(dev.to_dict()).ranges == dev.ranges
        stated += len(dev.ranges)
    assert stated >= 10  # the GPU presets and the devices state theirs
    assert load_network("gloo-loopback").ranges == ()  # a fit on this machine class: calibrate instead


def _network(**ranges):
    d = load_network("nccl-h100-ib").to_dict()
    d["ranges"] = ranges
    return d


@pytest.mark.parametrize(
    "ranges, says",
    [
        ({"inter.latency": {"low": 1, "high": 2, "source": "x"}}, "unknown field 'inter.latency'"),
        ({"linear.o_s": {"low": 1e-6, "high": 2e-6, "source": "x"}}, "unknown field 'linear.o_s'"),
        ({"inter.alpha_s": {"low": 6e-6, "high": 1e-5, "source": "x"}}, "lies outside its stated range"),
        ({"inter.alpha_s": {"low": 1e-5, "high": 1e-6, "source": "x"}}, "is above high"),
        ({"inter.alpha_s": {"low": 1e-6, "high": 10**400, "source": "x"}}, "finite number > 0"),
        ({"inter.alpha_s": {"low": True, "high": 1e-5, "source": "x"}}, "finite number > 0"),
        ({"inter.alpha_s": {"low": "1e-6", "high": 1e-5, "source": "x"}}, "finite number > 0"),
        ({"inter.alpha_s": {"low": float("nan"), "high": 1e-5, "source": "x"}}, "finite number > 0"),
        ({"inter.alpha_s": {"low": 0, "high": 1e-5, "source": "x"}}, "finite number > 0"),
        ({"inter.alpha_s": {"low": 1e-6, "high": 1e-5, "source": " "}}, "no source"),
        ({"inter.alpha_s": {"low": 1e-6, "high": 1e-5}}, "low, high and source"),
        ({"inter.alpha_s": [1e-6, 1e-5]}, "low, high and source"),
    ],
)
def test_a_bad_network_range_is_refused_naming_the_field(ranges, says):
    with pytest.raises(ValueError, match="nccl-h100-ib") as e:
        NetworkSpec.from_dict(_network(**ranges))
    assert says in str(e.value)


def test_a_bad_range_in_a_file_is_one_line_and_exit_2(capsys, tmp_path):
    path = tmp_path / "net.json"
    path.write_text(json.dumps(_network(**{"inter.bw_bytes_per_s": {"low": 5e10, "high": 6e10, "source": "x"}})))
    code, err = run_err(capsys, "predict", "--model", "gpt2-small", "--network", str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "inter.bw_bytes_per_s" in err


def test_a_bad_device_range_is_refused():
    d = zoo.load_device("h100-sxm").to_dict()
    d["ranges"] = {"mfu": {"low": 0.3, "high": 1.2, "source": "x"}}
    with pytest.raises(ValueError, match=r"h100-sxm.*mfu: high must be <= 1"):
        zoo.DeviceSpec.from_dict(d)
    d["ranges"] = {"peak_flops": {"low": 1e14, "high": 2e15, "source": "x"}}
    with pytest.raises(ValueError, match="unknown field 'peak_flops'"):
        zoo.DeviceSpec.from_dict(d)


def test_with_values_replaces_only_the_named_fields():
    net = load_network("nccl-h100-ib")
    moved = net.with_values({"inter.bw_bytes_per_s": 4e10, "call_overhead_s": 2e-5})
    assert moved.inter.bw_bytes_per_s == 4e10 and moved.call_overhead_s == 2e-5
    assert moved.intra == net.intra and moved.inter.alpha_s == net.inter.alpha_s
    lin = load_network("gloo-loopback").with_values({"linear.o_s": 1e-3})
    assert lin.linear_o_s == 1e-3 and lin.linear_w_bytes_per_s == load_network("gloo-loopback").linear_w_bytes_per_s
    assert zoo.load_device("h100-sxm").with_values({"mfu": 0.3}).effective_flops == pytest.approx(0.3 * 989.5e12)


# ---- the spread ------------------------------------------------------------------


def test_spread_over_a_known_function():
    a = ("x", StatedRange("a", 2.0, 1.0, 4.0, "s"))  # lengthens the step
    b = ("x", StatedRange("b", 10.0, 5.0, 20.0, "s"))  # shortens it

    def step(values):
        va, vb = values.get("x|a", 2.0), values.get("x|b", 10.0)
        return 1.0 + va + 10.0 / vb

    s = spread_over([b, a], step)
    assert s.point_s == 4.0
    assert s.long_s == pytest.approx(1 + 4 + 2) and s.short_s == pytest.approx(1 + 1 + 0.5)
    assert [e.stated.key for e in s.effects] == ["a", "b"]  # a moves it 3, b 1.5
    assert s.long_values == {"x|a": 4.0, "x|b": 5.0} and s.short_values == {"x|a": 1.0, "x|b": 20.0}
    assert spread_over([], step) is None


def test_predict_states_the_spread_and_each_range_alone(capsys):
    d = run_json(capsys, "predict", "--model", "gpt2-xl", "--world-size", "64", "--network", "nccl-h100-ib")
    s = d["stated_ranges"]["spread"]
    assert s["short_s"] < s["point_s"] < s["long_s"] and s["point_s"] == pytest.approx(d["step_time_s"])
    labels = {e["value"] for e in s["effects"]}
    assert "device h100-sxm mfu" in labels and "network nccl-h100-ib inter.bw_bytes_per_s" in labels
    for e in s["effects"]:  # each alone lies within the joint ends; the ones listed first move the step most
        assert s["short_s"] - 1e-12 <= min(e["step_at_low_s"], e["step_at_high_s"])
        assert max(e["step_at_low_s"], e["step_at_high_s"]) <= s["long_s"] + 1e-12
    moves = [abs(e["step_at_high_s"] - e["step_at_low_s"]) for e in s["effects"]]
    assert moves == sorted(moves, reverse=True)
    mfu = next(e for e in s["effects"] if e["value"].endswith("mfu"))
    assert mfu["step_at_high_s"] < mfu["step_at_low_s"]  # a faster device, a shorter step
    assert d["interval"] is None  # nothing measured: no interval, and the spread does not claim to be one


def test_predict_text_names_the_span_and_the_top_ranges(capsys):
    code = main(["predict", "--model", "gpt2-xl", "--world-size", "64"])
    out = capsys.readouterr().out
    assert code == 0
    assert "over the ranges the preset and the device state (not measured; a span, not an interval)" in out
    assert "device h100-sxm mfu 0.25-0.55:" in out


def test_values_given_by_flags_or_measured_state_no_range(capsys):
    d = run_json(capsys, "predict", "--model", "gpt2-xl", "--world-size", "64", "--o-us", "50", "--w", "40")
    assert {e["value"].split()[0] for e in d["stated_ranges"]["spread"]["effects"]} == {"device"}
    prof = str(DATA / "tune_gpt_loopback.profile.json")
    d = run_json(capsys, "predict", "--model", prof, "--network", "nccl-h100-ib", "--world-size", "8")
    assert {e["value"].split()[0] for e in d["stated_ranges"]["spread"]["effects"]} == {"network"}
    d = run_json(capsys, "predict", "--model", prof, "--network", "gloo-loopback", "--world-size", "2")
    assert d["stated_ranges"] is None
    params = str(DATA / "tune_gpt_loopback.params.json")
    d = run_json(capsys, "predict", "--params", params)
    assert d["stated_ranges"] is None and d["interval"] is not None


def test_sweep_gives_the_best_bucket_at_either_end(capsys):
    argv = ("sweep", "--model", "gpt2-xl", "--world-size", "256", "--network", "nccl-h100-ib", "--points", "16")
    d = run_json(capsys, *argv)
    ends = d["stated_ranges"]
    grid = [r["bucket_mb"] for r in d["rows"]]
    assert ends["short_end_mb"] in grid and ends["long_end_mb"] in grid
    assert ends["spread"]["short_s"] <= ends["spread"]["long_s"]
    short, long = ends["short_end_step_s"], ends["long_end_step_s"]  # the step over the grid at either end
    assert len(short) == len(long) == len(grid)
    assert all(a <= r["step_time_s"] <= b for a, r, b in zip(short, d["rows"], long))
    main(list(argv))
    assert "the best bucket is" in capsys.readouterr().out


def test_the_sweep_plot_shades_the_stated_span(capsys, tmp_path):
    from test_plots import check_png

    png = tmp_path / "sweep.png"
    argv = ("sweep", "--model", "gpt2-xl", "--world-size", "64", "--points", "16", "--plot", str(png), "--quiet")
    assert main(list(argv)) == 0
    check_png(png, (7, 5.6))


def test_tune_of_a_zoo_model_and_the_api_agree_over_the_ranges(capsys, tmp_path):
    d = run_json(capsys, "tune", "--model", "gpt2-xl", "--world-size", "64", "--out-dir", str(tmp_path), "--quiet")
    ends = d["stated_ranges"]
    assert ends["short_end_mb"] > 0 and ends["long_end_mb"] > 0
    assert any(n.startswith("over the ranges the preset and the device state") for n in d["notes"])
    api = ddpsim.recommend("gpt2-xl", world_size=64)
    assert api.stated_ranges["short_end_mb"] == ends["short_end_mb"]
    assert api.stated_ranges["long_end_mb"] == ends["long_end_mb"]
    assert math.isclose(api.stated_ranges["spread"]["long_s"], ends["spread"]["long_s"])
    # the API with o and w given: those replace the preset's terms, so only the device's range is left
    given = ddpsim.recommend("gpt2-xl", world_size=64, o_us=100, w_gbps=40)
    assert {e["value"].split()[0] for e in given.stated_ranges["spread"]["effects"]} == {"device"}


# ---- another compute dtype --------------------------------------------------------


def test_predict_at_another_compute_dtype(capsys):
    base = run_json(capsys, "predict", "--model", "gpt2-xl", "--world-size", "64")
    fp32 = run_json(capsys, "predict", "--model", "gpt2-xl", "--world-size", "64", "--dtype", "fp32")
    h100 = zoo.load_device("h100-sxm")
    assert fp32["compute_s"] == pytest.approx(zoo.profile_from_flops("gpt2-xl", h100, dtype="float32").compute_s)
    assert fp32["compute_s"] > 10 * base["compute_s"]  # 67 against 989.5 TFLOP/s
    assert fp32["total_grad_bytes"] == base["total_grad_bytes"]  # the gradients keep the parameters' dtype
    assert fp32["stated_ranges"]["spread"]["long_s"] > fp32["step_time_s"]  # the spread is taken at that dtype too
    bf16 = run_json(capsys, "predict", "--model", "gpt2-xl", "--world-size", "64", "--dtype", "bf16")
    assert bf16["step_time_s"] == base["step_time_s"]  # h100-sxm's own dtype
    assert ddpsim.predict("gpt2-xl", world_size=64, dtype="fp32").step_time_s == pytest.approx(fp32["step_time_s"])


def test_a_dtype_for_a_measured_profile_or_a_device_without_it_is_one_line(capsys):
    prof = str(DATA / "tune_gpt_loopback.profile.json")
    code, err = run_err(capsys, "predict", "--model", prof, "--dtype", "bf16")
    assert code == 2 and "--dtype applies to a model" in err and err.count("\n") == 1
    code, err = run_err(capsys, "predict", "--model", "gpt2-small", "--device", "v100-sxm", "--dtype", "bf16")
    assert code == 2 and "has no bfloat16 peak" in err and err.count("\n") == 1
    with pytest.raises(ValueError, match="dtype must be one of"):
        ddpsim.predict("gpt2-small", world_size=8, dtype="fp16")
    with pytest.raises(ValueError, match="dtype applies to a model"):
        ddpsim.predict(prof, world_size=8, dtype="bf16")


def test_a_linear_preset_range_is_shown_in_its_unit_and_a_tie_goes_by_the_kind(capsys, tmp_path):
    d = load_network("gloo-loopback").to_dict()
    d["ranges"] = {
        "linear.w_bytes_per_s": {"low": 1e9, "high": 2e9, "source": "x"},
        "linear.o_s": {"low": 2e-4, "high": 8e-4, "source": "x"},
    }
    path = tmp_path / "lin.json"
    path.write_text(json.dumps(d))
    argv = ("predict", "--model", "gpt2-small", "--world-size", "4", "--network", str(path))
    main(list(argv))
    out = capsys.readouterr().out
    assert "linear.w_bytes_per_s 1-2 GB/s:" in out and "linear.o_s 200-800 us:" in out
    s = run_json(capsys, *argv)["stated_ranges"]["spread"]
    assert s["short_s"] <= s["point_s"] <= s["long_s"]
    # a value that does not move the step goes to the end its kind lengthens: a latency high, a bandwidth low
    a = ("x", StatedRange("inter.alpha_s", 2.0, 1.0, 4.0, "s"))
    b = ("x", StatedRange("inter.bw_bytes_per_s", 10.0, 5.0, 20.0, "s"))
    flat = spread_over([a, b], lambda values: 1.0)
    assert flat.long_values == {"x|inter.alpha_s": 4.0, "x|inter.bw_bytes_per_s": 5.0}
    assert flat.short_values == {"x|inter.alpha_s": 1.0, "x|inter.bw_bytes_per_s": 20.0}


def test_ranges_that_do_not_move_this_step_are_counted_not_listed(capsys):
    main(["predict", "--model", "gpt2-small", "--world-size", "1"])  # one rank: no call, no network value matters
    out = capsys.readouterr().out
    assert "call_overhead_s" not in out and "do not move this step" in out
    assert "device h100-sxm mfu" in out


def test_the_spread_takes_few_seeds_under_jitter(capsys):
    argv = ("predict", "--model", "gpt2-small", "--world-size", "8", "--jitter", "0.3", "--repeats", "200")
    s = run_json(capsys, *argv)["stated_ranges"]["spread"]
    assert s["point_s"] == pytest.approx(
        ddpsim.predict("gpt2-small", world_size=8, jitter_sigma=0.3, repeats=9).step_time_s
    )


def test_tune_of_a_profile_on_a_preset_states_the_network_ranges(capsys, tmp_path):
    prof = str(DATA / "tune_gpt_loopback.profile.json")
    argv = ["tune", "--profile", prof, "--network", "nccl-h100-ib", "--world-size", "8", "--quiet"]
    d = run_json(capsys, *argv, "--out-dir", str(tmp_path / "a"))
    assert {e["value"].split()[0] for e in d["stated_ranges"]["spread"]["effects"]} == {"network"}
    assert any(n.startswith("over the ranges the preset states") for n in d["notes"])
    params = str(DATA / "tune_gpt_loopback.params.json")
    d = run_json(capsys, "tune", "--profile", prof, "--params", params, "--quiet", "--out-dir", str(tmp_path / "b"))
    assert d["stated_ranges"] is None


@pytest.mark.parametrize("model", ["gpt2-xl", "resnet50"])
def test_a_device_changed_in_mfu_and_bandwidth_alone_rescales_to_the_profile_built_anew(model, monkeypatch):
    """``model_profile``'s source rescales the point's profile for a device differing only in MFU and memory
    bandwidth (the fast path a spread over stated ranges takes); it must equal building the profile again."""
    from dataclasses import replace as dc_replace

    from ddpsim.stated import model_profile

    base, source = model_profile(model, batch_size=4, device="h100-sxm", compute_scale=1.3)
    dev = zoo.load_device("h100-sxm")
    other = dc_replace(dev, mfu=dev.mfu * 0.7, mem_bw_bytes_per_s=dev.mem_bw_bytes_per_s * 1.25)
    built = []  # profiles built from FLOPs from here on: the rescale must build none
    real = zoo.profile_from_flops
    monkeypatch.setattr(zoo, "profile_from_flops", lambda *a, **k: built.append(a) or real(*a, **k))
    fast = source.on(other)
    assert built == []
    anew = real(zoo.load_model_spec(model), other, batch_size=4).scaled(1.3)
    assert fast.env == anew.env
    assert [p.name for p in fast.params] == [p.name for p in anew.params]
    assert [p.bwd_s for p in fast.params] == pytest.approx([p.bwd_s for p in anew.params], rel=1e-12)
    for key in ("forward_s", "optimizer_s", "backward_tail_s"):
        assert getattr(fast, key) == pytest.approx(getattr(anew, key), rel=1e-12)
    # another device is built again
    a100 = zoo.load_device("a100-sxm-40gb")
    again = source.on(a100)
    assert len(built) == 1
    on_a100 = real(zoo.load_model_spec(model), a100, batch_size=4).scaled(1.3)
    assert again.env == on_a100.env
    assert again.forward_s == pytest.approx(on_a100.forward_s, rel=1e-12)
