"""benchmarks/explain_misses.py: the accuracy matrix's misses run again with per-bucket timelines, and the table
naming each miss's largest wrong term. On stored results: run m31's micro-DLRM loopback cell (its misses) and
the timelines of the same cell's misses stored in benchmarks/results/timeline_misses/."""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
RESULTS = BENCH / "results"
CELL = RESULTS / "accuracy_matrix_m31loop" / "micro-dlrm-loopback"
STORED_TIMELINES = RESULTS / "timeline_misses" / "micro-dlrm-loopback" / "validation.json"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


explain = _load("explain_misses")
table = _load("accuracy_table")


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    cell = run / CELL.name
    cell.mkdir(parents=True)
    for f in ("validation.json", "validation.params.json"):
        shutil.copy(CELL / f, cell / f)
    return run


def test_misses_are_the_rows_past_the_threshold_worst_first_and_their_command_reruns_one_config(tmp_path):
    cell = _run(tmp_path) / CELL.name
    rows = explain.misses(cell, 10.0)
    assert [(r["strategy"], r["bucket_mb"]) for r in rows] == [
        ("individual", None),
        ("bucketed", 0.25),
        ("sharded", 0.25),
    ]
    assert [explain.label(r) for r in rows] == ["individual_default", "bucketed_0.25MB", "sharded_0.25MB"]
    assert explain.misses(cell, 30.0) == [] and explain.misses(tmp_path, 10.0) == []  # no validation.json: none
    cmd = explain.command(cell, rows[1], 16, "ddpsim")
    assert cmd[:6] == ["ddpsim", "validate", "--model", "micro-dlrm", "--world-size", "2"]
    # DDPSIM may be a command line (accuracy_matrix.sh run from a clone: "python -m ddpsim")
    assert explain.command(cell, rows[1], 16, "python -m ddpsim")[:4] == ["python", "-m", "ddpsim", "validate"]
    assert "--link-mbit" not in cmd  # loopback
    at = {k: cmd[i + 1] for i, k in enumerate(cmd) if k.startswith("--") and i + 1 < len(cmd)}
    assert at["--params"] == str(cell / "validation.params.json")
    assert (at["--strategy"], at["--bucket-mb"], at["--steps"]) == ("bucketed", "0.25", "16")
    assert at["--timeline"] == str(cell / "explain" / "bucketed_0.25MB" / "timeline")
    assert at["--min-seconds"] == "6"  # timed as long as the matrix times a configuration
    assert at["--block"] == "1"  # and in its order: m31 stepped one step a turn
    assert "--bucket-mb" not in explain.command(cell, rows[0], 16, "ddpsim")  # individual: no cap
    dflt = explain.command(cell, {**rows[2], "strategy": "torch-ddp", "bucket_mb": None}, 16, "ddpsim")
    assert dflt[dflt.index("--strategy") : dflt.index("--strategy") + 4] == [
        "--strategy",
        "torch-ddp",
        "--bucket-mb",
        "default",
    ]  # torch DDP run with bucket_cap_mb unset is re-run so, not at validate's default sizes


def test_the_company_rerun_repeats_the_cells_configurations_and_steps(tmp_path):
    """The whole cell again, as the matrix measured it: its strategies and caps in the matrix's order (so the same
    groups), exactly its steps (2 rounds x 250 in m31) and no --min-seconds top-up, its params, into explain/_cell."""
    cell = _run(tmp_path) / CELL.name
    cmd = explain.company_command(cell, "ddpsim")
    at = {k: cmd[i + 1] for i, k in enumerate(cmd) if k.startswith("--") and i + 1 < len(cmd)}
    res = json.loads((cell / "validation.json").read_text())
    assert at["--strategy"] == "torch-ddp,flat,individual,bucketed,sharded" and at["--bucket-mb"] == "0.25,1,4,16,64"
    assert len(res["rows"]) == 17 and "interleaved: 2 rounds x 250 steps" in res["method"]
    assert (at["--steps"], at["--min-seconds"], at["--rounds"]) == ("500", "0", "2") and at["--block"] == "1"
    assert "groups of <= 12 configurations" in res["method"] and at["--group-size"] == "12"
    assert at["--params"] == str(cell / "validation.params.json") and "--timeline" not in cmd
    assert at["--out"] == str(cell / "explain" / explain.COMPANY / "validation.json")
    # a cell measured in turns of 10 steps is measured so again: the method as validate writes it
    from calibration.validate import turns_note

    assert turns_note(1) == "" and explain.matrix_block({"method": res["method"] + turns_note(1)}) == "1"
    res["method"] += turns_note(10)
    (cell / "validation.json").write_text(json.dumps(res))
    cmd = explain.company_command(cell, "ddpsim")
    assert cmd[cmd.index("--block") + 1] == "10"


def test_dry_run_prints_and_writes_nothing(tmp_path, capsys):
    run = _run(tmp_path)
    assert explain.main([str(run), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert err.count("ddpsim validate") == 4 and not (run / CELL.name / "explain").exists()  # the cell, 3 misses
    for bad in (["--steps", "1"], ["--threshold", "nan"], ["--min-seconds", "-1"]):
        with pytest.raises(SystemExit) as exc:
            explain.main([str(run), *bad])
        assert exc.value.code == 2


def test_bad_cells_and_failed_reruns_are_one_line_each_and_the_other_cells_still_run(tmp_path, capsys, monkeypatch):
    """A validation.json that is not JSON, a row without an error, a cell without its params, a ddpsim that is not
    there, a re-run that records no timeline, a list of caps: one line each on stderr, exit 1, no traceback; the
    good cell beside them still gets its dry-run commands."""
    run = _run(tmp_path)
    (run / "broken").mkdir()
    (run / "broken" / "validation.json").write_text("{not json")
    (run / "nulls").mkdir()
    (run / "nulls" / "validation.json").write_text(json.dumps({"rows": [{"strategy": "flat", "error_pct": None}]}))
    (run / "noparams").mkdir()
    shutil.copy(CELL / "validation.json", run / "noparams" / "validation.json")
    monkeypatch.setenv("DDPSIM", str(tmp_path / "no-such-ddpsim"))
    assert explain.main([str(run), "--threshold", "20"]) == 1
    err = capsys.readouterr().err
    assert "explain_misses: broken: " in err and "not a validate result" in err
    assert "explain_misses: nulls: " in err and "finite error_pct" in err
    assert "explain_misses: noparams individual_default: " in err and "no validation.params" in err
    assert f"explain_misses: {CELL.name} individual_default: " in err and "No such file" in err
    assert "Traceback" not in err
    # a re-run that exits 0 but recorded no timeline is a failure, said so
    monkeypatch.setenv("DDPSIM", "true")
    good = _run(tmp_path / "again")
    stale = good / CELL.name / "explain" / explain.SUMMARY
    stale.parent.mkdir()
    stale.write_text(json.dumps([_summary_entry()]))  # left by an earlier run into the same folder
    assert explain.main([str(good), "--threshold", "20"]) == 1
    assert capsys.readouterr().err.count("the re-run recorded no timeline") == 2
    # the summary written is this run's, empty: no stale one left for the table
    assert json.loads(stale.read_text()) == []
    # a row with a list of caps is skipped with a line, not failed
    caps = {"strategy": "torch-ddp", "bucket_mb": None, "bucket_cap_mb_list": [1.0, 4.0], "error_pct": -30.0}
    with pytest.raises(explain.Skip, match="list of caps"):
        explain.command(good / CELL.name, caps, 16, "ddpsim")


def test_a_folder_explaining_another_run_is_not_reused(tmp_path, capsys, monkeypatch):
    """The same cell measured again into the same folder: an explain folder made for the earlier row (its matrix
    error differs) is reported and left, not shown in the table, and run again only with --rerun."""
    run = _run(tmp_path)
    cell = run / CELL.name
    _explained_folder(cell, "individual", None)
    folder = cell / "explain" / "individual_default"
    (folder / explain.ROW).write_text(
        json.dumps({"strategy": "individual", "bucket_mb": None, "matrix_error_pct": 5.0})
    )
    monkeypatch.setenv("DDPSIM", "false")
    assert explain.main([str(run), "--threshold", "23.5"]) == 1  # only individual (-23.9 %) is a miss at 23.5
    assert "explains another run of this cell: pass --rerun" in capsys.readouterr().err
    assert (folder / "validation.json").is_file()  # left as it was
    assert explain.main([str(run), "--threshold", "23.5", "--rerun", "--dry-run"]) == 0
    assert "would remove" in capsys.readouterr().err and (folder / "validation.json").is_file()
    assert explain.main([str(run), "--threshold", "23.5", "--rerun"]) == 1  # removed, run again with `false`: fails
    assert not (folder / "validation.json").exists() and json.loads((folder / explain.ROW).read_text())[
        "matrix_error_pct"
    ] == pytest.approx(-23.95, abs=0.01)
    # the table shows no explanation made for another row
    (cell / "explain" / explain.SUMMARY).write_text(json.dumps([dict(_summary_entry(), matrix_error_pct=5.0)]))
    table.main(run)
    assert "timeline (benchmarks/explain_misses.py)" not in capsys.readouterr().out


def _summary_entry() -> dict:
    return {
        "strategy": "individual",
        "bucket_mb": None,
        "matrix_error_pct": -23.95,
        "rerun_error_pct": -20.0,
        "rerun_noise_pct": 5.0,
        "timeline_steps": 16,
        "timeline_step_error_pct": -18.0,
        "largest_term": "compute_s",
        "parts_pct_of_step": {k: 0.0 for k in explain.STEP_TERMS},
        "comm_sum_ms": [10.0, 9.0],
    }


def test_the_table_shows_the_best_bucket_interval_and_its_verdict(capsys):
    """Run m32 as stored: intervals printed to two decimals, "behind" where the interval lies above 0 (micro-DLRM over
    200 Mbit/s, +0.02..+1.06, which one decimal would print as +0.0)."""
    table.main(RESULTS / "accuracy_matrix_m32")
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| micro-dlrm | tbf 200 Mbit/s |"))
    assert "0.25 / 1 (+0.6%, 95% +0.02..+1.06: behind)" in row
    row = next(line for line in out.splitlines() if line.startswith("| lib | loopback |"))
    assert "16 / 4 (+2.1%, 95% -4.65..+3.92)" in row
    assert out.count("  - timeline (benchmarks/explain_misses.py): re-run") == 6


def _explained_folder(cell: Path, strategy: str, bucket_mb) -> None:
    """A re-run's validation.json for one miss, cut from the stored timelines of the same cell's misses."""
    stored = json.loads(STORED_TIMELINES.read_text())
    row = next(r for r in stored["rows"] if (r["strategy"], r["bucket_mb"]) == (strategy, bucket_mb))
    tl = next(t for t in stored["timelines"] if (t["strategy"], t["bucket_mb"]) == (strategy, bucket_mb))
    out = cell / "explain" / explain.label({"strategy": strategy, "bucket_mb": bucket_mb})
    out.mkdir(parents=True)
    (out / "validation.json").write_text(json.dumps({**stored, "rows": [row], "timelines": [tl]}))
    matrix_row = next(r for r in explain.misses(cell, 0.0) if (r["strategy"], r["bucket_mb"]) == (strategy, bucket_mb))
    (out / explain.ROW).write_text(
        json.dumps({"strategy": strategy, "bucket_mb": bucket_mb, "matrix_error_pct": matrix_row["error_pct"]})
    )


def _company_folder(cell: Path, shift_pct: float = 0.0) -> None:
    """The cell's re-run in company as if it measured every row ``shift_pct`` points off the matrix."""
    res = json.loads((cell / "validation.json").read_text())
    out = cell / "explain" / explain.COMPANY
    out.mkdir(parents=True)
    (out / explain.CELL_ROWS).write_text(json.dumps({"matrix_error_pcts": [r["error_pct"] for r in res["rows"]]}))
    res["rows"] = [dict(r, error_pct=r["error_pct"] + shift_pct) for r in res["rows"]]
    (out / "validation.json").write_text(json.dumps(res))


def test_explained_misses_are_summarized_kept_and_named_in_the_table(tmp_path, capsys, monkeypatch):
    """Both misses at 20 % and the cell's re-run in company already made: nothing runs (DDPSIM points at a command
    that fails), the summary lists each with its error again in company, its re-run's alone and its recorded
    step's largest wrong part, and the table prints it."""
    run = _run(tmp_path)
    cell = run / CELL.name
    _explained_folder(cell, "individual", None)
    _explained_folder(cell, "bucketed", 0.25)
    _company_folder(cell, shift_pct=2.0)
    monkeypatch.setenv("DDPSIM", "false")
    assert explain.main([str(run), "--threshold", "20", "--no-company"]) == 0  # the one made before is still read
    assert all("company_error_pct" in e for e in json.loads((cell / "explain" / explain.SUMMARY).read_text()))
    capsys.readouterr()
    assert explain.main([str(run), "--threshold", "20"]) == 0
    summary = json.loads((cell / "explain" / explain.SUMMARY).read_text())
    assert [(e["strategy"], e["bucket_mb"]) for e in summary] == [("individual", None), ("bucketed", 0.25)]
    ind = summary[0]
    assert ind["matrix_error_pct"] == pytest.approx(-23.9, abs=0.05) and ind["rerun_error_pct"] == pytest.approx(
        -23.4, abs=0.05
    )
    assert ind["largest_term"] == "finalize_s" and set(ind["parts_pct_of_step"]) == set(explain.STEP_TERMS)
    assert ind["company_error_pct"] == pytest.approx(ind["matrix_error_pct"] + 2.0)
    out = capsys.readouterr()
    assert "explained before, kept" in out.err and out.out.count("largest part") == 2
    assert "re-run in company was made before, kept" in out.err
    assert "largest part finalize" in explain.describe(ind)
    table.main(run)
    text = capsys.readouterr().out
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("- micro-dlrm, loopback, individual:"))
    assert lines[k + 1].startswith("  - timeline (benchmarks/explain_misses.py): in its company again -21.9% (noise")
    assert ", alone re-run -23.4%" in lines[k + 1]
    # the same cell measured again into the folder: the company re-run made for the other measurement is left
    res = json.loads((cell / "validation.json").read_text())
    res["rows"][0]["error_pct"] += 1.0
    (cell / "validation.json").write_text(json.dumps(res))
    assert explain.main([str(run), "--threshold", "20", "--no-company"]) == 0  # no company re-run asked for
    capsys.readouterr()
    assert explain.main([str(run), "--threshold", "20"]) == 1
    assert "repeats another run of this cell: pass --rerun" in capsys.readouterr().err
    assert (cell / "explain" / explain.COMPANY / "validation.json").is_file()
    assert explain.main([str(run), "--threshold", "20", "--rerun", "--dry-run"]) == 0
    assert (
        "would remove" in capsys.readouterr().err and (cell / "explain" / explain.COMPANY / "validation.json").is_file()
    )
    # the third miss (sharded 0.25, -15.6 %) was not explained: no timeline line under it
    k = next(i for i, line in enumerate(lines) if line.startswith("- micro-dlrm, loopback, sharded 0.25:"))
    assert k + 1 == len(lines) or not lines[k + 1].startswith("  - timeline")


def test_a_failed_rerun_is_counted_and_the_others_still_run(tmp_path, monkeypatch):
    run = _run(tmp_path)
    monkeypatch.setenv("DDPSIM", "false")  # every re-run fails
    assert explain.main([str(run), "--threshold", "20"]) == 1
    logs = sorted((run / CELL.name / "explain").glob("*/validate.log"))
    assert len(logs) == 3 and not (run / CELL.name / "explain" / explain.SUMMARY).exists()  # the cell, 2 misses
    assert (run / CELL.name / "explain" / explain.COMPANY / "validate.log") in logs
    note = json.loads((run / CELL.name / "explain" / explain.COMPANY / explain.CELL_ROWS).read_text())
    assert note["command"] == explain.company_command(run / CELL.name, "false")  # what the re-run ran
