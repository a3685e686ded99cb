"""What a review of the front door as a new user found (predict, sweep, tune on zoo models, the Python API): ties
in a flat sweep, the API's checks matching the CLI's, one of o and w given, figure formats, TF32 on a device
without it, a profile passed where a model is asked for, unknown fields in a model file."""

import argparse
import json
import math
from pathlib import Path

import pytest

import ddpsim
from ddpsim.cli import main
from ddpsim.sim_commands import no_interval_reason
from simulator import zoo
from simulator.predict import MAX_WORLD_SIZE


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# ---- a flat sweep ------------------------------------------------------------------


def test_a_flat_sweep_picks_the_larger_cap_not_the_last_digit():
    """llama3-70b at p = 4096 hides nearly all communication: many caps give one step time, apart only in their
    last digits (the order sums were taken in). The best is then the largest of the tied caps, and the stated
    ranges' ends agree with the point instead of moving by rounding."""
    prof = zoo.profile_from_flops("llama3-70b")
    from simulator.network import CostModel, load_network
    from simulator.strategies import StrategySpec
    from simulator.sweep import TIE_REL, default_grid_mb, sweep

    cost = CostModel.from_network(load_network("nccl-h100-ib"))
    grid = default_grid_mb(prof, 24)
    sw = sweep(prof, cost, StrategySpec("torch-ddp", bucket_mb=grid[0]), 4096, grid)
    fastest = min(r.step_time_s for r in sw.rows)
    tied = [mb for mb, r in zip(grid, sw.rows) if r.step_time_s <= fastest * (1 + TIE_REL)]
    assert len(tied) > 1  # the case this test is about: several caps tie
    assert sw.best_bucket_mb == max(tied)


def test_the_stated_ends_of_a_flat_sweep_agree_with_the_point(capsys):
    code, out, _ = run(capsys, "sweep", "--model", "llama3-70b", "--world-size", "4096", "--points", "24", "--json")
    assert code == 0
    d = json.loads(out)["results"]
    assert d["stated_ranges"]["short_end_mb"] == d["stated_ranges"]["long_end_mb"] == d["best_bucket_mb"]


def test_the_sweeps_span_line_names_the_bucket_it_is_at(capsys):
    code, out, _ = run(capsys, "sweep", "--model", "gpt2-xl", "--world-size", "64", "--points", "16")
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("over the ranges"))
    best = next(ln for ln in out.splitlines() if ln.startswith("best bucket:")).split()[2]
    assert f"the step at {best} MiB is" in line


# ---- the Python API checks what the CLI checks --------------------------------------


@pytest.mark.parametrize("fn", [ddpsim.predict, ddpsim.recommend])
def test_the_api_refuses_a_world_size_past_the_limit(fn):
    with pytest.raises(ValueError, match=f"world size must be an integer from 1 to {MAX_WORLD_SIZE}"):
        fn("gpt2-small", world_size=MAX_WORLD_SIZE + 1)


@pytest.mark.parametrize(
    "kw, says",
    [
        ({"w_gbps": math.inf}, "w_gbps must be a finite number > 0"),
        ({"w_gbps": 0.0}, "w_gbps must be a finite number > 0"),
        ({"o_us": math.nan}, "o_us must be a finite number >= 0"),
        ({"o_us": -1.0}, "o_us must be a finite number >= 0"),
    ],
)
def test_the_api_refuses_o_and_w_the_cli_refuses(kw, says):
    with pytest.raises(ValueError, match=says):
        ddpsim.predict("gpt2-small", world_size=8, **kw)


def test_an_unknown_keyword_names_the_public_function_and_what_it_takes():
    with pytest.raises(TypeError, match=r"recommend\(\) got unexpected keyword argument\(s\) 'foo'.*points"):
        ddpsim.recommend("gpt2-small", world_size=8, foo=1)
    with pytest.raises(TypeError, match=r"predict\(\) got unexpected keyword argument\(s\) 'bar'.*repeats"):
        ddpsim.predict("gpt2-small", world_size=8, bar=1)
    assert ddpsim.predict("gpt2-small", world_size=8, seed=5).step_time_s > 0  # a keyword predict takes passes


def test_a_sharded_prediction_at_millions_of_ranks_heaps_no_more_ranks_than_parameters(monkeypatch):
    """The sharded optimizer's owners no longer heap p ranks (27 s and 1.9 GB at the world-size limit before):
    the heap holds at most one rank a parameter."""
    import heapq

    from simulator import strategies

    sizes = []
    real = heapq.heapify
    monkeypatch.setattr(strategies.heapq, "heapify", lambda h: sizes.append(len(h)) or real(h))
    strategies._PROFILE_CACHE.clear()  # the owners are kept per profile and p: compute them here
    r = ddpsim.predict("gpt2-small", world_size=MAX_WORLD_SIZE, strategy="sharded")
    n = len(zoo.load_model_spec("gpt2-small").params)
    assert r.step_time_s > 0 and r.world_size == MAX_WORLD_SIZE
    assert sizes and max(sizes) <= n


# ---- one of o and w given ------------------------------------------------------------


def test_one_of_o_and_w_given_says_what_the_other_is_and_where_it_came_from(capsys):
    code, out, _ = run(capsys, "predict", "--model", "gpt2-xl", "--world-size", "64", "--o-us", "94")
    assert code == 0
    assert (
        "note: --o-us given; w = 96 GB/s (768 Gbit/s) kept from the preset nccl-h100-ib's all-reduce at p = 64" in out
    )
    code, out, _ = run(capsys, "sweep", "--model", "gpt2-xl", "--world-size", "64", "--w", "100", "--json")
    d = json.loads(out)["results"]
    assert d["kept_term"].startswith("--w given; t0 = ")
    code, out, _ = run(capsys, "predict", "--model", "gpt2-xl", "--world-size", "64", "--o-us", "94", "--w", "100")
    assert "kept from" not in out  # both given: nothing kept


def test_why_a_prediction_has_no_interval():
    def ns(**kw):
        return argparse.Namespace(**{"o_us": None, "w_gbps": None, "network": None, **kw})

    fitted = object()  # any params: only whether they were given matters here
    assert no_interval_reason(ns(), fitted) is None
    assert (
        no_interval_reason(ns(), None)
        == "the network is the preset nccl-h100-ib, not fitted from measurements (--params)"
    )
    assert (
        no_interval_reason(ns(network="gloo-10gbe"), fitted)
        == "--network gloo-10gbe replaces the network fitted in --params"
    )
    assert no_interval_reason(ns(o_us=5.0), fitted) == "--o-us replaces terms fitted in --params"
    assert (
        no_interval_reason(ns(w_gbps=1.0), None)
        == "the network is given by --w, not fitted from measurements (--params)"
    )


# ---- figures, dtypes, files ------------------------------------------------------------


def test_a_sweep_plot_is_written_in_the_format_its_name_ends_with(capsys, tmp_path):
    for name, magic in (("s.pdf", b"%PDF"), ("s.svg", b"<?xml"), ("s.png", b"\x89PNG")):
        code, _, err = run(
            capsys,
            "sweep",
            "--model",
            "gpt2-small",
            "--world-size",
            "8",
            "--points",
            "8",
            "--plot",
            str(tmp_path / name),
        )
        assert code == 0, err
        assert (tmp_path / name).read_bytes().startswith(magic)
    code, _, err = run(capsys, "sweep", "--model", "gpt2-small", "--world-size", "8", "--plot", str(tmp_path / "s.txt"))
    assert code == 2 and "a figure's name ends with .png, .pdf, .svg" in err and err.count("\n") == 1
    assert not (tmp_path / "s.txt").exists()


def test_tf32_on_a_device_without_tf32_units_says_float32(capsys):
    code, out, _ = run(
        capsys, "predict", "--model", "gpt2-xl", "--world-size", "64", "--device", "v100-sxm", "--dtype", "tf32"
    )
    assert code == 0 and out.splitlines()[0].endswith("flops:v100-sxm compute in float32")
    assert zoo.profile_from_flops("gpt2-small", "v100-sxm", dtype="tf32").env["compute_dtype"] == "float32"
    assert zoo.profile_from_flops("gpt2-small", "h100-sxm", dtype="tf32").env["compute_dtype"] == "tf32"


def test_tune_points_a_profile_given_as_the_model_to_profile(capsys, tmp_path):
    prof = tmp_path / "p.json"
    zoo.profile_from_flops("gpt2-small").save(prof)
    code, _, err = run(
        capsys, "tune", "--model", str(prof), "--network", "nccl-h100-ib", "--out-dir", str(tmp_path / "o")
    )
    assert code == 2 and f"give it as --profile {prof}" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d: d.update(device="tpu-v9"), "unknown field(s) 'device'"),
        (lambda d: d["defaults"].update(batchsize=3), "unknown default(s) 'batchsize'"),
        (lambda d: d.update(defaults=[1]), "'defaults' must be an object"),
    ],
)
def test_a_model_file_with_a_field_it_does_not_take_is_refused(capsys, tmp_path, change, says):
    d = json.loads((Path(zoo.__file__).parent / "data" / "models" / "mlp.json").read_text())
    d.setdefault("defaults", {})
    change(d)
    f = tmp_path / "m.json"
    f.write_text(json.dumps(d))
    code, _, err = run(capsys, "predict", "--model", str(f), "--world-size", "8")
    assert code == 2 and says in err and err.count("\n") == 1


def test_the_api_takes_numpy_numbers_for_o_and_w():
    import numpy as np

    a = ddpsim.predict("gpt2-small", world_size=8, o_us=np.int64(10), w_gbps=np.float32(50.0))
    b = ddpsim.predict("gpt2-small", world_size=8, o_us=10, w_gbps=50.0)
    assert a.step_time_s == pytest.approx(b.step_time_s, rel=1e-6)


def test_the_near_best_run_is_around_the_sweeps_best_among_ties():
    """Where the fastest steps tie but are split by a slower one, the near-best run is the one around the best the
    sweep reports (the largest of the tied caps), not around the first fastest row."""
    from simulator.sweep_plot import near_best_range

    rows = [{"bucket_mb": mb, "step_time_s": t} for mb, t in ((1, 1.0), (2, 1.5), (4, 1.0), (8, 1.001))]
    assert near_best_range(rows, 1.0) == (1, 1)
    assert near_best_range(rows, 1.0, best_mb=4) == (4, 8)
