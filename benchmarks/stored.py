"""The stored accuracy matrices' records, for the scripts under ``benchmarks/results/`` that read them.

``calibration_records(matrix, kinds)`` yields ``(cell_dir, record)`` for each record of one of ``kinds`` in each
cell's calibration records (``validation.calibration*.jsonl``, gzipped or not), cells in name order.
"""

import glob
import gzip
import json
from collections.abc import Iterator
from typing import Any


def cell_calibration(cell: str) -> str | None:
    """The cell's calibration records file, None where it has none."""
    found = glob.glob(cell.rstrip("/") + "/validation.calibration*.jsonl*")
    return found[0] if found else None


def read_jsonl(path: str) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            yield json.loads(line)


def calibration_records(
    matrix: str, kinds: tuple[str, ...], pattern: str = "*"
) -> Iterator[tuple[str, dict[str, Any]]]:
    for cell in sorted(glob.glob(matrix.rstrip("/") + f"/{pattern}/")):
        cal = cell_calibration(cell)
        if cal is None:
            continue
        for d in read_jsonl(cal):
            if d.get("kind") in kinds:
                yield cell, d
