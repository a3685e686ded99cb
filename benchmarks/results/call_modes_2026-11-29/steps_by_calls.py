"""How the measured step grows with the number of calls in it, on loopback: per stored cell, the validation rows'
step-time distribution (median, p10, the share of steps in 2 ms bins) for the one-call configurations (`flat`,
torch-ddp at the one-bucket caps) against `individual` (a call per gradient), and the extra time per extra call
at the median and at p10, beside the calibration's per-call time `o` and its sweep's stalled share
(``calibration.probes.fit_call_modes``).

    python benchmarks/results/call_modes_2026-11-29/steps_by_calls.py benchmarks/results/accuracy_matrix_m45 ...
"""

import glob
import json
import sys
from pathlib import Path

import numpy as np

from calibration.probes import fit_call_modes
from realrun.records import iter_records, read_records

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from stored import cell_calibration  # noqa: E402


def steps(path: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for d in iter_records(path, "ddp_step"):
        out.setdefault(d["setting"], []).extend(d["step_times_s"])
    return out


for matrix in sys.argv[1:]:
    for cell in sorted(glob.glob(matrix.rstrip("/") + "/*loopback/")):
        meas = glob.glob(cell + "validation.jsonl*")
        cal = cell_calibration(cell)
        par = glob.glob(cell + "validation.params*.json")
        val = glob.glob(cell + "validation.json")
        if not (meas and cal and par and val):
            continue
        s = steps(meas[0])
        if "flat" not in s or "individual" not in s:
            continue
        n_calls = {r["strategy"]: r["n_buckets"] for r in json.load(open(val[0]))["rows"] if r.get("n_buckets")}
        p = json.load(open(par[0]))
        modes = fit_call_modes(read_records(cal, "allreduce"), 2) or {}
        name = (
            matrix.rstrip("/").rsplit("/", 1)[-1].replace("accuracy_matrix_", "")
            + "/"
            + cell.rstrip("/").rsplit("/", 1)[-1]
        )
        print(
            f"{name}: o = {p['o_us'] / 1e3:.2f} ms, stalled share of single calls {modes.get('slow_share', float('nan')):.2f}"
        )
        flat, ind = np.array(s["flat"]) * 1e3, np.array(s["individual"]) * 1e3
        for label, v in (("flat", flat), ("individual", ind)):
            h = np.histogram(v, bins=np.arange(0, 34, 2))[0] / len(v) * 100
            bins = (
                f"; % of steps per 2 ms bin from 0: {' '.join(f'{x:.0f}' for x in h)}" if np.median(flat) < 20 else ""
            )
            print(
                f"   {label:10s} {n_calls.get(label, '?'):>3} calls  median {np.median(v):6.2f}  p10 {np.percentile(v, 10):6.2f}"
                f"  ms{bins}"
            )
        k = n_calls.get("individual")
        if k and k > 1:
            dm = (np.median(ind) - np.median(flat)) / (k - 1)
            d10 = (np.percentile(ind, 10) - np.percentile(flat, 10)) / (k - 1)
            print(f"   per extra call: {dm:.2f} ms at the median, {d10:.2f} ms at p10 (o: {p['o_us'] / 1e3:.2f} ms)")
