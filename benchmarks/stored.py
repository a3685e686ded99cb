"""The stored accuracy matrices' records, for the scripts under ``benchmarks/results/`` that read them.

``calibration_records(matrix, kinds)`` yields ``(cell_dir, record)`` for each record of one of ``kinds`` in each
cell's calibration records (``validation.calibration*.jsonl``, gzipped or not: ``realrun.records.iter_records``
reads both), cells in name order.
"""

import glob
from collections.abc import Iterator
from typing import Any

from realrun.records import iter_records


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
