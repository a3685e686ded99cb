"""Per matrix cell: each interval source alone, its 80 % half-width (median over the rows, % of the point), against
the rows' errors. Run from the repository root:
    python benchmarks/results/interval_sources_2026-12-07/widths.py benchmarks/results/accuracy_matrix_m63links/*/
The profile is rescaled to the cell's measured compute; the compute step-to-step source is left out (its records
are not in validation.json), so "all" is a little narrower than the stored intervals."""

import dataclasses
import glob
import json
import statistics
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
from calibration.params import Params
from simulator.interval import step_interval
from simulator.predict import predict
from simulator.strategies import StrategySpec

FIELDS = {
    "o": ("o_sd_s",),
    "w": ("w_log_sd",),
    "contention": ("contention_draws",),
    "leftover": ("leftover_sd_s",),
    "opt extra": ("optimizer_extra_sd_s",),
    "queued": ("queued_scale_sd",),
    "bcast": ("broadcast_extra_sd_s",),
    "model err": ("model_log_sd",),
}
ZERO = {
    "o_sd_s": 0.0,
    "w_log_sd": 0.0,
    "contention_draws": (),
    "leftover_sd_s": 0.0,
    "optimizer_extra_sd_s": 0.0,
    "queued_scale_sd": 0.0,
    "broadcast_extra_sd_s": 0.0,
    "model_log_sd": 0.0,
    "compute_rel": (),
}

for cell in sys.argv[1:]:
    v = json.load(open(f"{cell}/validation.json"))
    pfile = glob.glob(f"{cell}/validation.params*.json")[0]
    params = Params.load(pfile)
    p = v["world_size"]
    cost = params.cost_model(world_size=p)
    prof = params.profile()
    prof = prof.scaled(v["measured_compute_s"] / prof.compute_s)
    unc = params.uncertainty((), world_size=p).for_cost(cost)
    widths = {k: [] for k in ["all"] + list(FIELDS)}
    errs = []
    for r in v["rows"]:
        spec = StrategySpec(
            r["strategy"],
            bucket_mb=r.get("bucket_mb"),
            bucket_cap_mb_list=tuple(r["bucket_cap_mb_list"]) if r.get("bucket_cap_mb_list") else None,
        )
        steps = r.get("steps") or r.get("n_steps") or 500
        pt = predict(prof, cost, spec, p).step_time_s
        errs.append(abs(r["error_pct"]))
        for k in widths:
            u = unc if k == "all" else dataclasses.replace(unc, **{**ZERO, **{f: getattr(unc, f) for f in FIELDS[k]}})
            iv = step_interval(prof, cost, spec, p, u, steps=steps)
            widths[k].append((iv.hi_s - iv.lo_s) / 2 / pt * 100)
    name = "/".join(cell.rstrip("/").split("/")[-2:])
    print(f"{name}: |err| median {statistics.median(errs):.2f}%; stored coverage {v['interval_coverage']}")
    print(
        "   half-width % (median over rows): " + ", ".join(f"{k} {statistics.median(w):.2f}" for k, w in widths.items())
    )
