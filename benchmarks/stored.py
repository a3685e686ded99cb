"""The stored accuracy matrices' records, for the scripts under ``benchmarks/results/`` that read them.

``calibration_records(matrix, kinds)`` yields ``(cell_dir, record)`` for each record of one of ``kinds`` in each
cell's calibration records (``validation.calibration*.jsonl``, gzipped or not: ``realrun.records.iter_records``
reads both), cells in name order.
"""

import glob
from collections.abc import Iterator
from typing import Any

from realrun.records import iter_records


def cells(matrices: list[str], pattern: str = "*/") -> Iterator[tuple[str, str]]:
    """``(name, cell_dir)`` of each stored matrix's cells matching ``pattern`` (``*loopback/``), in name order; the
    name is ``<run>/<cell>`` (``m45/gpt-loopback``)."""
    for matrix in matrices:
        run = matrix.rstrip("/").rsplit("_", 1)[-1]
        for cell in sorted(glob.glob(matrix.rstrip("/") + "/" + pattern)):
            yield f"{run}/{cell.rstrip('/').rsplit('/', 1)[-1]}", cell


def cell_file(cell: str, pattern: str) -> str | None:
    """The cell's one file matching ``pattern`` (``validation.json``, ``validation.params*.json``), None where none."""
    found = glob.glob(cell.rstrip("/") + "/" + pattern)
    return found[0] if found else None


def cell_calibration(cell: str) -> str | None:
    """The cell's calibration records file, None where it has none."""
    found = glob.glob(cell.rstrip("/") + "/validation.calibration*.jsonl*")
    return found[0] if found else None


def calibration_records(matrix: str, kinds: tuple[str, ...]) -> Iterator[tuple[str, dict[str, Any]]]:
    for cell in sorted(glob.glob(matrix.rstrip("/") + "/*/")):
        cal = cell_calibration(cell)
        if cal is None:
            continue
        for d in iter_records(cal):
            if d.get("kind") in kinds:
                yield cell, d
