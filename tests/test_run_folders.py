"""Where results go: what the user named, else a new folder of the run's own under the run root
(``$DDPSIM_RUN_ROOT`` here: the ``run_root`` fixture), never the current folder, never a folder an earlier
run wrote. The measuring parts are replaced by fakes, so no rank starts; the files written are the
commands' own."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import pytest

import calibration.calibrate as calibrate_mod
import calibration.validate as validate_mod
from calibration.fit import LinearFit
from calibration.params import Params
from ddpsim.cli import build_parser, main
from ddpsim.cliutil import RUN_ROOT_ENV, fill_run_folder, new_run_folder, run_root

PARAMS = Params(backend="gloo", world_size=2, linear=LinearFit(o_s=4e-4, w_bytes_per_s=1.4e9))
STAMP = r"\d{8}-\d{6}"


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["calibrate", "--out-dir", "d"], {"out": "d/params.json", "records": "d/calibration.jsonl"}),
        (["validate", "--out-dir", "d"], {"out": "d/validation.json", "records": "d/validation.jsonl"}),
        (["calibrate", "--out", "p.json", "--records", "r.jsonl"], {"out": "p.json", "records": "r.jsonl"}),
    ],
)
def test_outputs_placed_by_the_user_stay_there(argv, expected, run_root):
    args = build_parser().parse_args(argv)
    fill_run_folder(args)
    assert {k: getattr(args, k) for k in expected} == {k: str(Path(v)) for k, v in expected.items()}
    assert not run_root.exists()  # every output placed: no run folder made


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["calibrate"], {"out": "params.json", "records": "calibration.jsonl"}),
        (["validate", "--records", "r.jsonl"], {"out": "validation.json"}),
        (["tune"], {}),
        (["plot"], {}),
    ],
)
def test_unset_outputs_go_into_a_new_run_folder(argv, expected, run_root):
    args = build_parser(argv[0]).parse_args(argv)
    fill_run_folder(args)
    folder = Path(args.plot_dir if argv[0] == "plot" else args.out_dir)
    assert folder.parent == run_root and re.fullmatch(f"{argv[0]}-{STAMP}", folder.name), folder
    assert folder.is_dir() and not any(folder.iterdir())
    assert {k: getattr(args, k) for k in expected} == {k: str(folder / v) for k, v in expected.items()}
    if argv[0] == "validate":
        assert args.records == "r.jsonl"


def test_two_runs_in_one_second_get_two_folders(tmp_path):
    a, b = new_run_folder("tune", tmp_path, now=0.0), new_run_folder("tune", tmp_path, now=0.0)
    assert (a.name, b.name) == ("tune-19700101-000000", "tune-19700101-000000-2")


def test_run_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(RUN_ROOT_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert run_root() == tmp_path / "state" / "ddpsim" / "runs"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert run_root() == tmp_path / "home" / ".local" / "state" / "ddpsim" / "runs"


def test_a_run_root_that_cannot_be_made_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv(RUN_ROOT_ENV, str(tmp_path / "afile" / "runs"))
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "--validation", "v.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # plot's run folder is --plot-dir: the line names the flag this command has (it once said --out-dir)
    assert len(err) == 1 and "cannot make a run folder under" in err[0] and "give --plot-dir" in err[0]


def test_bad_input_leaves_no_run_folder(tmp_path, monkeypatch, capsys, run_root):
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "--validation", str(tmp_path / "missing.json")]) == 2  # found after the folder was made
    assert "missing.json" in capsys.readouterr().err
    assert list(run_root.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["ddpsim-runs"]


@pytest.fixture
def fake_measuring(monkeypatch):
    """calibrate and validate without ranks: the fits and measurements are replaced, the writing is real."""
    seen: dict[str, object] = {}

    def calibrate(spec, progress=True):
        seen["records"] = spec.records
        return PARAMS

    def calibrate_on_pool(pool, spec, say):
        seen["cal_records"] = spec.records
        return PARAMS

    def validate_on_pool(pool, params, spec, say, link_mbit=None):
        seen["val_records"] = spec.out
        return {"model": spec.model, "rows": []}

    monkeypatch.setattr(calibrate_mod, "calibrate", calibrate)
    monkeypatch.setattr(calibrate_mod, "calibrate_on_pool", calibrate_on_pool)
    monkeypatch.setattr(calibrate_mod, "open_pool", lambda *a, **k: contextlib.nullcontext(None))
    monkeypatch.setattr(validate_mod, "validate_on_pool", validate_on_pool)
    return seen


def _only_run(run_root: Path, command: str) -> Path:
    (run,) = run_root.iterdir()
    assert re.fullmatch(f"{command}-{STAMP}", run.name)
    return run


def test_calibrate_writes_into_its_run_folder_only(tmp_path, monkeypatch, capsys, fake_measuring, run_root):
    pytest.importorskip("torch")  # the workload is built before ranks would start
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--model", "mlp", "--json", "--quiet"]) == 0
    d = json.loads(capsys.readouterr().out)["results"]
    run = _only_run(run_root, "calibrate")
    assert d["params_file"] == str(run / "params.json") and Params.load(run / "params.json") == PARAMS
    assert fake_measuring["records"] == str(run / "calibration.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddpsim-runs"]  # nothing in the current folder
    assert main(["calibrate", "--model", "mlp", "--json", "--quiet"]) == 0  # a second run: a folder of its own
    assert len(list(run_root.iterdir())) == 2 and Params.load(run / "params.json") == PARAMS


def test_validate_without_params_writes_into_its_run_folder_only(
    tmp_path, monkeypatch, capsys, fake_measuring, run_root
):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--model", "mlp", "--json", "--quiet"]) == 0
    d = json.loads(capsys.readouterr().out)["results"]
    run = _only_run(run_root, "validate")
    assert d["result_file"] == str(run / "validation.json")
    assert json.loads((run / "validation.json").read_text())["model"] == "mlp"
    assert Params.load(run / "validation.params.json") == PARAMS  # the calibration it ran first, beside it
    assert fake_measuring["cal_records"] == str(run / "validation.calibration.jsonl")
    assert fake_measuring["val_records"] == str(run / "validation.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddpsim-runs"]


def test_validate_csv_has_one_row_per_configuration(tmp_path, monkeypatch, capsys, fake_measuring):
    pytest.importorskip("torch")
    import csv

    rows = [
        {
            "strategy": "torch-ddp",
            "bucket_mb": 1.0,
            "measured_median_s": 0.2,
            "predicted_step_s": 0.21,
            "error_pct": 5.0,
        },
        {
            "strategy": "naive",
            "bucket_mb": None,
            "measured_median_s": 0.3,
            "predicted_step_s": 0.27,
            "error_pct": -10.0,
        },
    ]
    monkeypatch.setattr(validate_mod, "validate_on_pool", lambda *a, **k: {"model": "mlp", "rows": rows})
    monkeypatch.setattr(validate_mod, "format_validation", lambda res: "the table")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--model", "mlp", "--quiet", "--csv"]) == 0
    out = capsys.readouterr().out
    got = list(csv.DictReader(out.splitlines()))  # stdout is the CSV alone, not the table
    assert [r["strategy"] for r in got] == ["torch-ddp", "naive"] and "the table" not in out
    assert got[1] == {
        "link_mbit": "",
        "strategy": "naive",
        "bucket_mb": "",
        "measured_median_s": "0.3",
        "predicted_step_s": "0.27",
        "error_pct": "-10.0",
    }
    assert main(["validate", "--model", "mlp", "--quiet", "--csv", "v.csv"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the table") and "csv: v.csv" in out
    assert list(csv.DictReader(open("v.csv", encoding="utf-8")))[0]["error_pct"] == "5.0"


def test_a_failed_run_names_the_folder_that_keeps_its_records(tmp_path, monkeypatch, capsys, run_root):
    pytest.importorskip("torch")
    from realrun.errors import RunFailure

    def calibrate(spec, progress=True):
        Path(spec.records).write_text('{"kind": "allreduce"}\n')  # a record taken before the failure
        raise RunFailure("rank 1 exited with code 9")

    monkeypatch.setattr(calibrate_mod, "calibrate", calibrate)
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--model", "mlp", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    run = _only_run(run_root, "calibrate")
    assert err[0].startswith("ddpsim: run failed: rank 1 exited") and err[-1].endswith(f"kept in {run}")
    assert (run / "calibration.jsonl").read_text().startswith('{"kind"')
