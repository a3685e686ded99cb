"""The benchmark scripts' own logic: reading --configs, and the tune-verify table's intervals."""

import gzip
import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


overhead = _load("bench_timeline_overhead", ROOT / "benchmarks" / "bench_timeline_overhead.py")
table = _load("tune_verify_table", ROOT / "benchmarks" / "tune_verify_table.py")
STORED = ROOT / "benchmarks" / "results" / "tune_verify_2026-11-27"


def test_configs_are_read_from_the_right():
    assert overhead.parse_config("gpt:torch-ddp:1") == ("gpt", "torch-ddp", 1.0)
    assert overhead.parse_config("gpt:individual") == ("gpt", "individual", None)
    assert overhead.parse_config("benchmarks/models/torch_transformer.py:build:torch-ddp:0.0009765625") == (
        "benchmarks/models/torch_transformer.py:build",
        "torch-ddp",
        0.0009765625,
    )
    assert overhead.parse_config("m.py:build:individual") == ("m.py:build", "individual", None)
    for bad in ("gpt", "gpt:torch-ddp:", ":torch-ddp:1", "gpt:torch-ddp:nan", "gpt:torch-ddp:-1", "gpt:torch-ddp:0"):
        with pytest.raises(SystemExit):
            overhead.parse_config(bad)


def test_the_stored_16_step_run_gets_its_intervals_from_its_steps(capsys):
    """Results written before tune kept the interval get it from their verify.jsonl, as stored."""
    table.main(STORED)
    assert capsys.readouterr().out == (STORED / "table_with_intervals.md").read_text()


def test_a_folder_written_twice_gives_no_interval(tmp_path, capsys):
    """Records append: a verify.jsonl holding two runs' steps is not this run's, and says so."""
    run = tmp_path / "lib-loopback"
    shutil.copytree(STORED / "lib-loopback", run)
    v = json.loads((run / "tune.json").read_text())["verify"]
    assert table.gap_interval(run, v) is not None
    with gzip.open(run / "verify.jsonl.gz", "rt") as f:
        twice = f.read() * 2
    (run / "verify.jsonl.gz").unlink()
    (run / "verify.jsonl").write_text(twice)
    assert table.gap_interval(run, v) is None
    assert "does not hold this run's 16 steps" in capsys.readouterr().err
