"""The simulator's command-line contract: outputs, and bad input -> one line on stderr, exit 2."""

import json
import subprocess
import sys

import pytest

from ddpsim.cli import main
from simulator.units import MIB


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def run_exit(capsys, *argv):
    """argparse-level errors raise SystemExit; ours return a code. Normalise both."""
    try:
        return run_cli(capsys, *argv)
    except SystemExit as e:
        out = capsys.readouterr()
        return e.code, out.out, out.err


def test_predict_json_contract(capsys, tmp_path):
    trace = tmp_path / "t.json"
    code, out, _ = run_cli(
        capsys,
        "predict",
        "--model",
        "gpt2-small",
        "--world-size",
        "8",
        "--o-us",
        "50",
        "--w-gbps",
        "100",
        "--strategy",
        "torch-ddp",
        "--bucket-mb",
        "25",
        "--json",
        "--trace",
        str(trace),
    )
    assert code == 0
    env = json.loads(out)
    assert env["schema"] == "ddpsim.cli/1" and env["command"] == "predict" and env["inputs"]["world_size"] == 8
    d = env["results"]
    for key in ("step_time_s", "compute_s", "overhead_s", "buckets"):
        assert key in d
    assert d["overhead_s"] == pytest.approx(d["step_time_s"] - d["compute_s"])
    assert len(d["buckets"]) >= 2 and all("msg_bytes" in b for b in d["buckets"])
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("cat") == "allreduce" for e in events) and any(e.get("cat") == "backward" for e in events)


def test_predict_table(capsys):
    code, out, err = run_cli(
        capsys, "predict", "--model", "bert-base", "--world-size", "16", "--network", "nccl-a100-ib"
    )
    assert code == 0, err
    assert "step time" in out and "exposed comm" in out


def test_sweep_json_contract_and_closed_form(capsys, tmp_path):
    png = tmp_path / "s.png"
    code, out, _ = run_cli(
        capsys,
        "sweep",
        "--model",
        "gpt2-xl",
        "--world-size",
        "4096",
        "--network",
        "nccl-h100-ib",
        "--strategy",
        "torch-ddp",
        "--json",
        "--plot",
        str(png),
    )
    assert code == 0
    d = json.loads(out)["results"]
    assert len(d["rows"]) >= 60
    best = min(d["rows"], key=lambda r: r["step_time_s"])
    assert d["best_bucket_mb"] == best["bucket_mb"]
    cf = d["closed_form"]
    s, o, w = d["total_grad_bytes"], cf["o_s"], cf["w_bytes_per_s"]
    assert cf["best_bucket_mb"] == pytest.approx((s * w * o) ** 0.5 / MIB)
    assert cf["t_min_s"] == pytest.approx(2 * (s * o / w) ** 0.5)
    assert png.stat().st_size > 10_000


def test_o_w_override_a_preset(capsys):
    _, out1, _ = run_cli(capsys, "predict", "--model", "gpt2-small", "--network", "nccl-h100-ib", "--json")
    _, out2, _ = run_cli(
        capsys, "predict", "--model", "gpt2-small", "--network", "nccl-h100-ib", "--w-gbps", "1", "--json"
    )
    _, out3, _ = run_cli(
        capsys, "predict", "--model", "gpt2-small", "--network", "nccl-h100-ib", "--w", "8Gbit/s", "--json"
    )
    assert json.loads(out2)["results"]["step_time_s"] > json.loads(out1)["results"]["step_time_s"]
    assert json.loads(out3)["results"]["step_time_s"] == json.loads(out2)["results"]["step_time_s"]  # 8 Gbit/s = 1 GB/s


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["predict", "--bucket-mb", "-5"], "must be > 0"),
        (["predict", "--bucket-mb", "0"], "must be > 0"),
        (["predict", "--world-size", "0"], "--world-size: must be >= 1"),
        (["predict", "--model", "no-such-model"], "unknown model"),
        (["predict", "--network", "no-such-net"], "unknown network"),
        (["sweep", "--strategy", "naive"], "no bucket size to sweep"),
        (["predict", "--strategy", "bucketed"], "needs a bucket size"),
    ],
)
def test_bad_input_exit_2(capsys, argv, msg):
    code, out, err = run_exit(capsys, *argv)
    assert code == 2
    assert msg in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_malformed_profile_json(capsys, tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text('{"schema": "ddpsim.profile/1", "params": [')
    code, _, err = run_cli(capsys, "predict", "--model", str(bad))
    assert code == 2 and "not valid JSON" in err
    bad.write_text('{"schema": "ddpsim.profile/1", "params": [{"name": "w", "numel": -3}]}')
    code, _, err = run_cli(capsys, "predict", "--model", str(bad))
    assert code == 2 and "numel" in err
    bad.write_text('{"schema": "other/9", "params": []}')
    code, _, err = run_cli(capsys, "predict", "--model", str(bad))
    assert code == 2 and "schema" in err
    for text in ("null", "[]"):  # JSON, but no object: the profile's error, naming the file
        bad.write_text(text)
        code, _, err = run_cli(capsys, "predict", "--model", str(bad))
        assert code == 2 and f"profile {bad}" in err and "JSON object" in err and "Traceback" not in err


def test_a_model_file_and_a_profile_file_through_one_flag(capsys, tmp_path):
    """``--model FILE``: a model description (``ddpsim.model/1``) gets FLOPs times like a built-in name; a measured
    profile is taken as it is."""
    import shutil

    from simulator import zoo

    spec_path = tmp_path / "mymodel.json"
    shutil.copy(zoo.MODELS_DIR / "gpt2-small.json", spec_path)
    code, out, _ = run_cli(capsys, "predict", "--model", str(spec_path), "--world-size", "8", "--json")
    code_b, out_b, _ = run_cli(capsys, "predict", "--model", "gpt2-small", "--world-size", "8", "--json")
    assert code == code_b == 0
    assert json.loads(out)["results"]["step_time_s"] == json.loads(out_b)["results"]["step_time_s"]
    prof = zoo.profile_from_flops("gpt2-small").scaled(2.0)
    prof_path = tmp_path / "measured.json"
    prof.save(prof_path)
    code, out, _ = run_cli(capsys, "predict", "--model", str(prof_path), "--world-size", "8", "--json")
    assert code == 0 and json.loads(out)["results"]["step_time_s"] > json.loads(out_b)["results"]["step_time_s"]
    code, _, err = run_cli(capsys, "predict", "--model", str(prof_path), "--device", "h100", "--world-size", "8")
    assert code == 2 and "--device applies to a model" in err


def test_predict_subprocess_never_imports_torch():
    code = (
        "import sys; from ddpsim.cli import main; rc = main(['predict', '--json']);"
        "assert 'torch' not in sys.modules, 'torch imported';"
        "assert 'scipy' not in sys.modules, 'scipy imported (start-up time)'; sys.exit(rc)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"]["step_time_s"] > 0


def test_python_api_and_cli_resolve_the_network_alike():
    import ddpsim
    from ddpsim.resolve import DEFAULT_NETWORK, resolve_cost

    base = ddpsim.predict("gpt2-small", world_size=8)
    same = ddpsim.predict("gpt2-small", world_size=8, network=DEFAULT_NETWORK)
    assert base.step_time_s == same.step_time_s
    # o_us alone is not ignored: it replaces the per-call overhead at this world size, w stays the preset's
    slow = ddpsim.predict("gpt2-small", world_size=8, o_us=5000)
    assert slow.step_time_s > base.step_time_s
    cost = resolve_cost(world_size=8, o_us=5000)
    o, w = resolve_cost().linear_at(8)
    assert cost.linear_at(8) == pytest.approx((5e-3, w))
    with pytest.raises(ValueError, match="world_size"):
        resolve_cost(o_us=5000)


def test_predict_from_fitted_params_carries_an_interval_and_a_preset_says_it_has_none(capsys, tmp_path):
    from calibration.fit import LinearFit
    from calibration.params import Params
    from simulator.zoo import load_profile

    prof = load_profile("gpt", "cpu-core")
    fit = LinearFit(o_s=400e-6, w_bytes_per_s=1.4e9, o_ci_s=(300e-6, 500e-6), w_ci_bytes_per_s=(1.2e9, 1.6e9))
    path = tmp_path / "params.json"
    Params(backend="gloo", world_size=2, linear=fit, compute_profile=prof.to_dict()).save(path)
    code, out, _ = run_cli(capsys, "predict", "--params", str(path), "--world-size", "2", "--bucket-mb", "1", "--json")
    assert code == 0
    res = json.loads(out)["results"]
    iv = res["interval"]
    assert iv["level"] == 0.8 and iv["lo_s"] < iv["median_s"] < iv["hi_s"]
    assert iv["lo_s"] < res["step_time_s"] < iv["hi_s"] and "o fit CI" in iv["sources"]
    # the median of a long run is pinned tighter than one step, which also varies with the steps' noise
    one = res["single_step_interval"]
    assert iv["steps"] is None and one["steps"] == 1
    assert one["hi_s"] - one["lo_s"] >= iv["hi_s"] - iv["lo_s"]
    code, out, _ = run_cli(capsys, "predict", "--params", str(path), "--world-size", "2", "--bucket-mb", "1")
    assert "80% interval" in out and "median step of a long run" in out and "a single step" in out
    code, out, _ = run_cli(capsys, "predict", "--model", "gpt2-small", "--json")
    assert json.loads(out)["results"]["interval"] is None
    code, out, _ = run_cli(capsys, "predict", "--model", "gpt2-small")
    assert "no interval" in out


def test_predict_and_sweep_default_to_the_world_size_the_params_were_measured_at(capsys, tmp_path):
    from calibration.fit import LinearFit
    from calibration.params import Params
    from simulator.zoo import load_profile

    path = tmp_path / "params.json"
    prof = load_profile("gpt", "cpu-core").to_dict()
    Params(backend="gloo", world_size=2, linear=LinearFit(o_s=4e-4, w_bytes_per_s=1.4e9), compute_profile=prof).save(
        path
    )
    for cmd in ("predict", "sweep"):
        code, out, _ = run_cli(capsys, cmd, "--params", str(path), "--json")
        assert code == 0 and json.loads(out)["results"]["world_size"] == 2, cmd
        code, out, _ = run_cli(capsys, cmd, "--params", str(path), "--world-size", "4", "--json")
        assert json.loads(out)["results"]["world_size"] == 4, cmd
        code, out, _ = run_cli(capsys, cmd, "--model", "gpt2-small", "--json")  # no params: 8, as before
        assert json.loads(out)["results"]["world_size"] == 8, cmd


# ---- --csv: the table as CSV, to a file or on stdout --------------------------------------
def _csv_rows(text):
    import csv
    import io

    return list(csv.DictReader(io.StringIO(text)))


def test_sweep_csv_on_stdout_is_the_json_rows(capsys):
    argv = ["sweep", "--model", "gpt2-small", "--bucket-mb", "1,4,25"]
    code, out, _ = run_cli(capsys, *argv, "--csv")
    assert code == 0
    rows = _csv_rows(out)  # stdout is the CSV alone: header, then one row per size
    code, js, _ = run_cli(capsys, *argv, "--json")
    expected = json.loads(js)["results"]["rows"]
    assert [r["bucket_mb"] for r in rows] == ["1.0", "4.0", "25.0"]
    assert [{k: float(v) for k, v in r.items()} for r in rows] == [
        {k: float(v) for k, v in e.items()} for e in expected
    ]  # full precision: repr of each float


def test_sweep_csv_file_beside_the_table_and_predict_bucket_rows(capsys, tmp_path):
    path = tmp_path / "s.csv"
    code, out, _ = run_cli(capsys, "sweep", "--model", "gpt2-small", "--bucket-mb", "1,4", "--csv", str(path))
    assert code == 0 and "<- best" in out and f"csv: {path}" in out  # the table still printed
    assert [r["bucket_mb"] for r in _csv_rows(path.read_text())] == ["1.0", "4.0"]
    code, out, _ = run_cli(capsys, "predict", "--model", "gpt2-small", "--bucket-mb", "25", "--csv", "-")
    rows = _csv_rows(out)
    code, js, _ = run_cli(capsys, "predict", "--model", "gpt2-small", "--bucket-mb", "25", "--json")
    buckets = json.loads(js)["results"]["buckets"]
    assert list(rows[0]) == ["index", "name", "msg_bytes", "n_params", "ready_s", "start_s", "end_s"]
    assert [int(r["msg_bytes"]) for r in rows] == [b["msg_bytes"] for b in buckets]
    assert sum(int(r["msg_bytes"]) for r in rows) == json.loads(js)["results"]["total_grad_bytes"]


def test_pipelined_switch_on_and_off_and_refused_beside_more_channels(capsys):
    """--pipelined on: 148 per-parameter calls queued behind each other cost max(o, n/w) each instead of
    o + n/w, so the step is shorter and the header says so; with --channels 2 it is refused in one line."""
    base = ("predict", "--model", "gpt2-small", "--world-size", "2", "--o-us", "2000", "--w", "1GB/s")
    base += ("--strategy", "individual")
    steps = {}
    for switch in ("on", "off"):
        code, out, _ = run_cli(capsys, *base, "--pipelined", switch, "--json")
        assert code == 0
        steps[switch] = json.loads(out)["results"]["step_time_s"]
    assert steps["on"] < 0.95 * steps["off"]
    code, out, _ = run_cli(capsys, *base, "--pipelined", "on")
    assert code == 0 and "pipelined channel" in out.splitlines()[1]
    code, _, err = run_exit(capsys, *base, "--pipelined", "on", "--channels", "2")
    assert code != 0 and err.strip().splitlines() == [
        "ddpsim: error: a pipelined channel is one channel: not 2 channels"
    ]


@pytest.mark.parametrize("strategy", ["torch-ddp", "bucketed"])
def test_a_cap_under_one_byte_is_a_bucket_a_tensor_not_a_hang(capsys, strategy):
    """``int(cap * MiB)`` is 0 under one byte, as torch truncates it; torch then closes a bucket after each
    tensor. The bucket loop once never advanced there (the audit of 2026-11-29)."""
    code, out, err = run_cli(
        capsys,
        "predict",
        "--model",
        "mlp",
        "--world-size",
        "2",
        "--strategy",
        strategy,
        "--bucket-mb",
        "1e-9",
        "--json",
    )
    assert code == 0, err
    d = json.loads(out)["results"]
    assert len(d["buckets"]) == d["n_collectives"] > 1 and all(b["n_params"] == 1 for b in d["buckets"])


def test_a_model_file_given_as_a_path_is_predicted_as_its_built_in_name_is(capsys, tmp_path):
    """The unknown-model error offers "a path to a model JSON file": a copy of a built-in model's file is one."""
    from pathlib import Path

    import simulator

    copy = tmp_path / "mine.json"
    copy.write_text((Path(simulator.__file__).parent / "data" / "models" / "mlp.json").read_text())
    by_name = run_cli(capsys, "predict", "--model", "mlp", "--world-size", "2", "--json")
    by_path = run_cli(capsys, "predict", "--model", str(copy), "--world-size", "2", "--json")
    assert by_name[0] == by_path[0] == 0, by_path[2]
    a, b = json.loads(by_name[1])["results"], json.loads(by_path[1])["results"]
    assert a["step_time_s"] == b["step_time_s"] and a["total_grad_bytes"] == b["total_grad_bytes"]


def test_an_output_file_that_exists_is_replaced_only_with_force(capsys, tmp_path):
    """A file named by a flag that already exists is refused before anything runs (a typo must not eat a user's
    file); --force replaces it."""
    mine = tmp_path / "notes.csv"
    mine.write_text("the user's own notes\n")
    code, out, err = run_cli(capsys, "predict", "--model", "mlp", "--csv", str(mine))
    assert code == 2 and mine.read_text() == "the user's own notes\n"
    assert err == f"ddpsim: error: --csv: {mine} exists; give --force to replace it, or another path\n"
    trace = tmp_path / "t.json"
    trace.write_text("{}")
    assert run_cli(capsys, "predict", "--model", "mlp", "--trace", str(trace))[0] == 2 and trace.read_text() == "{}"
    code, _, err = run_cli(capsys, "predict", "--model", "mlp", "--csv", str(mine), "--trace", str(trace), "--force")
    assert code == 0, err
    assert mine.read_text().startswith("index,name,msg_bytes") and "traceEvents" in trace.read_text()
    # an empty file is nobody's content: written without --force
    empty = tmp_path / "empty.csv"
    empty.touch()
    assert run_cli(capsys, "predict", "--model", "mlp", "--csv", str(empty))[0] == 0 and empty.stat().st_size > 0


def test_a_result_file_gets_the_mode_a_new_file_gets(capsys, tmp_path):
    """Written whole through a temporary file (mkstemp makes it 0600), a result file ends with the umask's mode."""
    import os

    old = os.umask(0o022)
    try:
        trace = tmp_path / "t.json"
        assert run_cli(capsys, "predict", "--model", "mlp", "--trace", str(trace))[0] == 0
        assert (trace.stat().st_mode & 0o777) == 0o644
    finally:
        os.umask(old)


def test_a_jittered_prediction_sits_inside_its_interval(capsys, tmp_path):
    """The interval's draws are predicted as the point is (--jitter, --repeats, --seed, --ranks)."""
    from calibration.fit import LinearFit
    from calibration.params import Params
    from simulator.zoo import load_profile

    prof = load_profile("gpt", "cpu-core")
    fit = LinearFit(o_s=400e-6, w_bytes_per_s=1.4e9, o_ci_s=(380e-6, 420e-6), w_ci_bytes_per_s=(1.38e9, 1.42e9))
    path = tmp_path / "params.json"
    Params(backend="gloo", world_size=2, linear=fit, compute_profile=prof.to_dict()).save(path)
    argv = ["predict", "--params", str(path), "--world-size", "2", "--bucket-mb", "1", "--json", "--jitter", "0.3"]
    code, out, _ = run_cli(capsys, *argv)
    res = json.loads(out)["results"]
    plain = json.loads(run_cli(capsys, *argv[:-2])[1])["results"]
    assert code == 0 and res["step_time_s"] > 1.05 * plain["step_time_s"]  # the jitter moves the point
    iv = res["interval"]
    assert iv["lo_s"] < res["step_time_s"] < iv["hi_s"]


def test_only_csv_takes_a_dash_for_stdout(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "predict", "--model", "gpt2-small", "--trace", "-")
    assert code == 2 and "--trace takes a path" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_plot_of_a_bad_input_leaves_no_folder_behind(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": [')
    out_dir = tmp_path / "plots"
    code, _, err = run_cli(capsys, "plot", "--validation", str(bad), "--plot-dir", str(out_dir))
    assert code == 2 and "bad.json" in err and not out_dir.exists()


def test_one_rank_csv_still_has_its_header(capsys):
    code, out, _ = run_cli(capsys, "predict", "--model", "gpt2-small", "--world-size", "1", "--csv")
    assert code == 0 and out.splitlines() == ["index,name,msg_bytes,n_params,ready_s,start_s,end_s"]


@pytest.mark.parametrize("given", [[], ["--o-us", "50", "--w-gbps", "10"]])
def test_one_rank_communicates_nothing_and_says_one_rank(capsys, given):
    """At world size 1 a sweep (a preset's network, or o and w given there) is compute alone, said in words: o and
    w given at one rank have no ring to be split over, and are not refused for it."""
    code, out, err = run_cli(capsys, "sweep", "--model", "gpt2-small", "--world-size", "1", *given)
    assert code == 0, err
    head = out.splitlines()[:2]
    assert ", 1 rank, " in head[0] and "p = 1: nothing communicated" in head[1], head
    code, out, err = run_cli(capsys, "predict", "--model", "gpt2-small", "--world-size", "1", *given, "--json")
    res = json.loads(out)["results"]
    assert code == 0 and res["overhead_s"] == 0 and res["step_time_s"] == res["compute_s"] > 0


def test_a_reference_world_size_below_one_is_refused_and_one_is_held_as_given():
    from simulator.network import CostModel

    with pytest.raises(ValueError, match="reference world size must be an integer >= 1"):
        CostModel.linear(1e-4, 1e9, -3)
    one = CostModel.linear(1e-4, 1e9, 1)
    assert one.linear_at(4) == pytest.approx((1e-4, 1e9), rel=1e-12)
    assert "used as they are at every p" in one.provenance(4)["text"] and not one.provenance(4)["extrapolated"]


def test_models_says_each_models_size_and_which_tune_runs_here(capsys):
    from simulator import zoo

    code, out, _ = run_cli(capsys, "models", "--json")
    rows = {r["name"]: r for r in json.loads(out)["results"]["model_details"]}
    assert code == 0 and sorted(rows) == zoo.list_models()
    assert {n for n, r in rows.items() if r["runs_here"]} == set(zoo.RUN_HERE)
    assert rows["gpt2-small"]["n_params"] == 124439808 and rows["gpt2-small"]["default_device"] == zoo.DEFAULT_DEVICE
    code, out, _ = run_cli(capsys, "models")
    line = next(ln for ln in out.splitlines() if ln.split()[:1] == ["micro-dlrm"])
    assert "*" in line and "cpu-core" in line, line
