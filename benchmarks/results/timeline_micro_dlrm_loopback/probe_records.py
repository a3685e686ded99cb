"""The in-step probe records of every cell of a stored accuracy matrix, with the cell's fitted params (shared by
``tail_calls.py`` and ``finalize.py`` here)."""

import glob
import gzip
import json
from collections.abc import Iterator
from typing import Any


def probe_records(matrix_dir: str, kinds: tuple[str, ...]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(cell name, params, record) for each record of one of ``kinds`` in each cell's gzipped calibration."""
    for cell in sorted(glob.glob(matrix_dir + "/*/")):
        name = cell.rstrip("/").rsplit("/", 1)[-1]
        cal, par = glob.glob(cell + "validation.calibration*.jsonl.gz"), glob.glob(cell + "validation.params*.json")
        if not cal or not par:
            continue
        params = json.load(open(par[0]))
        for line in gzip.open(cal[0], "rt"):
            d = json.loads(line)
            if d["kind"] in kinds:
                yield name, params, d
