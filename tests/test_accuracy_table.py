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
