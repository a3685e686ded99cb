"""decision_rule.txt's test: every stored cell of the given matrix runs replayed (validate --replay, measuring nothing)
from the params it was calibrated with, the model-error term as before (no floor: ``check_resolution`` held at 0)
and with the floor; per cell the term and the coverage, then per run and pooled the coverage and the cells in
75-90 %.

    python replay_floor.py benchmarks/results/accuracy_matrix_m59 ... > replay.txt   (at commit 1374d15: the floor was reverted after it)
"""

import gzip
import shutil
import sys
import tempfile
from pathlib import Path

import calibration.sharded_probe as sp
from calibration.params import Params
from calibration.validate import replay_validation

BAND = (0.75, 0.90)


def replay(cell: Path, floor: bool) -> tuple[dict, float | None]:
    params_file = next(iter(sorted(cell.glob("validation.params*.json"))))
    params = Params.load(params_file)
    keep = sp.check_resolution
    if not floor:
        sp.check_resolution = lambda fit: 0.0
    try:
        with tempfile.TemporaryDirectory() as d:
            rec = Path(d) / "rec.jsonl"
            with gzip.open(cell / "validation.jsonl.gz", "rb") as f, open(rec, "wb") as g:
                shutil.copyfileobj(f, g)
            res = replay_validation(rec, params)
        unc = params.uncertainty((), world_size=res["world_size"])
        return res, unc.model_log_sd
    finally:
        sp.check_resolution = keep


pooled = {False: [0, 0], True: [0, 0]}
in_band = {False: 0, True: 0}
for run in sys.argv[1:]:
    band = {False: 0, True: 0}
    cov_run = {False: [0, 0], True: [0, 0]}
    for cell in sorted(p for p in Path(run).iterdir() if (p / "validation.jsonl.gz").exists()):
        out = []
        for floor in (False, True):
            res, term = replay(cell, floor)
            n = res["n_with_interval"]
            k = round(res["interval_coverage"] * n)
            cov_run[floor][0] += k
            cov_run[floor][1] += n
            band[floor] += BAND[0] <= res["interval_coverage"] <= BAND[1]
            out.append(f"term {term * 100:4.1f} % coverage {res['interval_coverage'] * 100:5.1f} %")
        print(f"{run.rstrip('/').rsplit('/', 1)[-1]}/{cell.name:22s} before: {out[0]}   floor: {out[1]}", flush=True)
    for floor in (False, True):
        in_band[floor] += band[floor]
        pooled[floor][0] += cov_run[floor][0]
        pooled[floor][1] += cov_run[floor][1]
        print(
            f"  {'floor ' if floor else 'before'}: pooled {cov_run[floor][0] / cov_run[floor][1] * 100:.1f} %, "
            f"cells in 75-90 %: {band[floor]}"
        )
for floor in (False, True):
    print(
        f"all runs, {'floor ' if floor else 'before'}: pooled {pooled[floor][0] / pooled[floor][1] * 100:.1f} %, "
        f"cells in 75-90 %: {in_band[floor]}"
    )
