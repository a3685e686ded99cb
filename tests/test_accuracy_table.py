"""benchmarks/accuracy_table.py names each cell's workload and network."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "accuracy_table", Path(__file__).resolve().parents[1] / "benchmarks" / "accuracy_table.py"
)
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)


def test_cell_labels_from_the_folder_and_the_json():
    gpt = {"model": "gpt", "link": None}
    assert table._labels("gpt-loopback", gpt) == ("gpt", "loopback")
    assert table._labels("micro-dlrm-1000", {"model": "micro-dlrm", "link": 1000.0}) == ("micro-dlrm", "1000")
    lib = {"model": "/x/benchmarks/models/torch_transformer.py:build", "link": 200.0}
    assert table._labels("lib-200", lib) == ("lib", "200")
    # folders that are not <model>-<network>: the JSON's model, the folder in brackets
    assert table._labels("p8_unset", gpt) == ("gpt (p8_unset)", "loopback")
    assert table._labels("run-2", gpt) == ("gpt (run-2)", "loopback")  # not "2 Mbit/s"
    # a cell without results: its folder alone
    assert table._labels("cnn-200", None) == ("cnn", "200")
    assert table._labels("odd", None) == ("odd", "?")


def test_the_table_gives_the_rounds_column_and_each_miss_its_rounds(tmp_path, capsys):
    """A cell validated with its rounds kept (run m64loop's micro-DLRM) gets its rounds' median and worst spread, and
    each of its rows missing 10 % the medians of its rounds and its error against its steps' mean; a cell written
    before validate kept them (run m62loop's gpt) gets "-"; every row of the table has as many columns as its head."""
    import json
    import shutil

    stored = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    for run, cell in (("accuracy_matrix_m64loop", "micro-dlrm-loopback"), ("accuracy_matrix_m62loop", "gpt-loopback")):
        (tmp_path / cell).mkdir()
        shutil.copy(stored / run / cell / "validation.json", tmp_path / cell / "validation.json")
    table.main(tmp_path)
    out = capsys.readouterr().out.splitlines()
    head = next(x for x in out if x.startswith("| workload"))
    assert head.endswith("| rounds apart: median / worst |")
    rows = {x.split(" | ")[0].strip("| "): x for x in out if x.startswith("| ") and " loopback " in x}
    assert all(x.count("|") == head.count("|") for x in rows.values())
    ra = json.loads((tmp_path / "micro-dlrm-loopback" / "validation.json").read_text())["rounds_apart"]
    assert rows["micro-dlrm"].endswith(f"| {ra['median_pct']:.1f} / {ra['worst_pct']:.1f}% |")
    assert rows["gpt"].endswith("| - |")
    individual = next(x for x in out if x.startswith("- micro-dlrm, loopback, individual:"))
    assert "its rounds' medians 17.2 / 17.4 ms, -43.5% against its steps' mean" in individual
