"""Where results go: what the user named, else the command's run folder (``ddpsim-<command>/``), never
the current folder. The measuring parts are replaced by fakes, so no rank starts; the files written are
the commands' own."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

import calibration.calibrate as calibrate_mod
import calibration.validate as validate_mod
from calibration.fit import LinearFit
from calibration.params import Params
from ddpsim.cli import build_parser, main
from ddpsim.cliutil import fill_run_folder

PARAMS = Params(backend="gloo", world_size=2, linear=LinearFit(o_s=4e-4, w_bytes_per_s=1.4e9))


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["calibrate"], {"out": "ddpsim-calibrate/params.json", "records": "ddpsim-calibrate/calibration.jsonl"}),
        (["calibrate", "--out-dir", "d"], {"out": "d/params.json", "records": "d/calibration.jsonl"}),
        (["calibrate", "--out", "p.json"], {"out": "p.json", "records": "ddpsim-calibrate/calibration.jsonl"}),
        (["validate"], {"out": "ddpsim-validate/validation.json", "records": "ddpsim-validate/validation.jsonl"}),
        (["validate", "--records", "r.jsonl"], {"out": "ddpsim-validate/validation.json", "records": "r.jsonl"}),
    ],
)
def test_unset_outputs_go_into_the_run_folder(argv, expected):
    args = build_parser().parse_args(argv)
    fill_run_folder(args)
    assert {k: getattr(args, k) for k in expected} == {k: str(Path(v)) for k, v in expected.items()}


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


def test_calibrate_writes_into_its_run_folder_only(tmp_path, monkeypatch, capsys, fake_measuring):
    pytest.importorskip("torch")  # the workload is built before ranks would start
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--model", "mlp", "--json", "--quiet"]) == 0
    d = json.loads(capsys.readouterr().out)["results"]
    run = Path("ddpsim-calibrate")
    assert d["params_file"] == str(run / "params.json") and Params.load(run / "params.json") == PARAMS
    assert fake_measuring["records"] == str(run / "calibration.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddpsim-calibrate"]  # nothing in the current folder


def test_validate_without_params_writes_into_its_run_folder_only(tmp_path, monkeypatch, capsys, fake_measuring):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--model", "mlp", "--json", "--quiet"]) == 0
    d = json.loads(capsys.readouterr().out)["results"]
    run = Path("ddpsim-validate")
    assert d["result_file"] == str(run / "validation.json")
    assert json.loads((run / "validation.json").read_text())["model"] == "mlp"
    assert Params.load(run / "validation.params.json") == PARAMS  # the calibration it ran first, beside it
    assert fake_measuring["cal_records"] == str(run / "validation.calibration.jsonl")
    assert fake_measuring["val_records"] == str(run / "validation.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddpsim-validate"]


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
