"""A calibration's in-step probe cut into the shorter probes it holds: from one calibration's records measured at
>= 4 s a cap (``--step-probe-seconds 4``), the records of the >= 1 s probe (the default) as consecutive windows of its
turns, each refitted with everything else of that calibration unchanged (``calibration.refit``). A window has the
steps the 1 s probe would have taken, max(10, ceil(n / 4)) of the n at 4 s, rounded up to even (a turn's parity sets
which step the compute-only step follows: ``realrun.step_record.bare_follows_ddp``), from the coarse, fine and check
records alike; window i of each is one emulated probe. Nothing measured.

Per calibration folder (the records file given): ``full.params.json`` (the whole probe, refitted: the 4 s version)
and ``w<i>.params.json`` (the 1 s version), and ``recs.json``: for each, what ``ddpsim tune`` recommends from it
(as ``ddpsim.tune_command`` does after calibrating), its fitted work per call and per MiB, and the torch DDP step it
predicts at each cap of the run's grid.

    PYTHONPATH=. python benchmarks/results/probe_length_judge_2026-12-08/windows.py RECORDS.jsonl[.gz] OUT_DIR [GRID]
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from calibration.refit import refit_from_records
from realrun.records import read_records

PROBE_KINDS = ("step_probe", "step_probe_fine", "step_probe_check")
PER_STEP = ("step_times_s", "compute_step_times_s", "plain_step_times_s")
PER_RANK_STEP = ("rank_step_times_s", "rank_timelines")


def window_len(n: int) -> int:
    w = max(10, math.ceil(n / 4))
    return w + (w % 2)


def cut(t: dict[str, Any], lo: int, hi: int) -> dict[str, Any]:
    """Timeline record ``t`` with only turns ``lo..hi-1``."""
    out = dict(t)
    for k in PER_STEP:
        if t.get(k):
            out[k] = list(t[k])[lo:hi]
    for k in PER_RANK_STEP:
        out[k] = [list(x)[lo:hi] for x in t[k]]
    out["steps"] = hi - lo
    if out.get("compute_step_times_s"):
        out["compute_median_s"] = statistics.median(out["compute_step_times_s"])
    return out


def windows(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    probes = {r["kind"]: r for r in records if r.get("kind") in PROBE_KINDS}
    if not probes:
        raise SystemExit("no in-step probe in these records")
    lens = {
        k: (len(r["timeline"]["step_times_s"]), window_len(len(r["timeline"]["step_times_s"])))
        for k, r in probes.items()
    }
    count = min(n // w for n, w in lens.values())
    out = []
    for i in range(count):
        recs = []
        for r in records:
            if r.get("kind") in PROBE_KINDS:
                w = lens[r["kind"]][1]
                r = dict(r, timeline=cut(r["timeline"], i * w, (i + 1) * w))
            recs.append(r)
        out.append(recs)
    return out


def recommendation(params: Any) -> dict[str, Any]:
    """What ``ddpsim tune`` recommends from ``params`` after calibrating here (``ddpsim.tune_command``)."""
    from ddpsim.stated import preset_network, stated_inputs
    from ddpsim.tuner import recommend
    from simulator.interval import measured_backward_s

    prof, cost = params.profile(), params.cost_model()
    unc = params.uncertainty(measured_backward_s(prof))
    stated = stated_inputs(prof, cost, flops=None, network=preset_network(None, fitted=True, o_w_given=False))
    res = recommend(prof, cost, params.world_size, uncertainty=unc, stated=stated)
    return {
        "bucket_cap_mb": res.bucket_cap_mb,
        "recommended_mb": res.recommended_bucket_mb,
        "keep_default": res.keep_default,
    }


def predicted(params: Any, grid: list[float]) -> dict[str, float]:
    from simulator.predict import predict
    from simulator.strategies import StrategySpec

    prof, cost = params.profile(), params.cost_model()
    out = {"default": predict(prof, cost, StrategySpec("torch-ddp"), params.world_size).step_time_s}
    for mb in grid:
        out[f"{mb:g}"] = predict(prof, cost, StrategySpec("torch-ddp", bucket_mb=mb), params.world_size).step_time_s
    return out


def terms(params: Any) -> dict[str, Any]:
    c = params.cost_model()
    return {
        "call_cpu_ms": c.call_cpu_s * 1e3,
        "call_cpu_ms_per_mib": c.call_cpu_s_per_byte * 1e3 * 2**20,
        "comm_contention": c.comm_contention,
        "contention": c.contention,
    }


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    grid = [float(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "0.25,1,4,16,64").split(",")]
    out.mkdir(parents=True, exist_ok=True)
    records = read_records(src)
    sets = {"full": records} | {f"w{i}": w for i, w in enumerate(windows(records))}
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, recs in sets.items():
            path = Path(tmp) / f"{name}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in recs))
            params = refit_from_records(path)
            params.save(out / f"{name}.params.json")
            steps = {r["kind"]: r["timeline"]["steps"] for r in recs if r.get("kind") in PROBE_KINDS}
            result[name] = {
                "probe_steps": steps,
                **terms(params),
                **recommendation(params),
                "predicted_s": predicted(params, grid),
            }
            print(name, json.dumps({k: v for k, v in result[name].items() if k != "predicted_s"}), flush=True)
    (out / "recs.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
