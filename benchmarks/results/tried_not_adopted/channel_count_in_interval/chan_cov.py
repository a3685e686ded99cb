"""Coverage of validate's 80 % intervals over stored accuracy-matrix cells, with and without gloo's channel
count drawn (nothing measured): per cell its stored params, the share of the stored stream probe's speed-up
resamples at x1.3 or more (fit_network on the cell's calibration records), and validate --replay of its stored
steps twice: without the share (as before) and with it.

    git apply benchmarks/results/tried_not_adopted/channel_count_in_interval/channel_draw.patch
    python benchmarks/results/tried_not_adopted/channel_count_in_interval/chan_cov.py [RUN_DIR ...] > OUT
"""

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

from calibration.calibrate import fit_network  # noqa: E402
from calibration.params import Params  # noqa: E402
from calibration.validate import replay_validation  # noqa: E402
from realrun.records import read_records  # noqa: E402


def first(d: Path, pattern: str) -> Path | None:
    return next(iter(sorted(d.glob(pattern))), None)


def covered(res):
    return [r.predicted_p10_s <= r.measured_median_s <= r.predicted_p90_s for r in res["rows"]]


runs = [Path(a) for a in sys.argv[1:]] or sorted((ROOT / "benchmarks" / "results").glob("accuracy_matrix_m*"))
print("run cell channels share cov_before cov_after rows_in->out rows_out->in many_call_rows_in_before->after")
tot = {"b": 0, "a": 0, "n": 0}
for run in runs:
    for cell in sorted(p for p in run.iterdir() if p.is_dir()):
        cal, par, meas = (
            first(cell, "validation.calibration*.jsonl*"),
            first(cell, "validation.params*.json"),
            first(cell, "validation.jsonl*"),
        )
        if not (cal and par and meas):
            continue
        try:
            params = Params.load(par)
            if params.backend != "gloo":
                continue
            net = fit_network(read_records(cal), "gloo", params.world_size, params.link_mbit, lambda _s: None)
            share = net.two_channels_share
            probes = {k: v for k, v in params.probes.items() if k != "two_channels_share"}
            before = replay_validation(meas, replace(params, probes=probes))
            after = replay_validation(meas, replace(params, probes={**probes, "two_channels_share": share}))
        except Exception as e:  # noqa: BLE001
            print(f"{run.name} {cell.name} skipped: {type(e).__name__}: {str(e)[:100]}")
            continue
        cb, ca = covered(before), covered(after)
        many = [k for k, r in enumerate(before["rows"]) if r.strategy == "individual" or (r.bucket_mb == 0.25)]
        tot["b"] += sum(cb)
        tot["a"] += sum(ca)
        tot["n"] += len(cb)
        print(
            f"{run.name} {cell.name} {params.channels}{' pipelined' if params.pipelined else ''} "
            f"{'-' if share is None else f'{share:.2f}'} {sum(cb) / len(cb):.0%} {sum(ca) / len(ca):.0%} "
            f"{sum(1 for x, y in zip(cb, ca) if x and not y)} {sum(1 for x, y in zip(cb, ca) if y and not x)} "
            f"{sum(cb[k] for k in many)}/{len(many)}->{sum(ca[k] for k in many)}/{len(many)}",
            flush=True,
        )
print(f"all rows covered: before {tot['b']}/{tot['n']}, after {tot['a']}/{tot['n']}")
