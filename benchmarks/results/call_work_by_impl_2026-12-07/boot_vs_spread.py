"""Does the in-step probe's bootstrap see its own sampling error? Per stored calibration of one workload on
loopback, the sd of the fine (and coarse) probe's target (backward-end median less compute-only median) over 400
resamples of its steps, as ``calibration.step_probe._resampled`` draws them (steps and compute-only steps each with
replacement, seed 0); its mean over calibrations, against the sd of the target across calibrations. Nothing measured.

    PYTHONPATH=. python benchmarks/results/call_work_by_impl_2026-12-07/boot_vs_spread.py cnn
"""

import glob
import gzip
import json
import random
import statistics
import sys

from calibration.timeline import across_ranks_timelines, step_terms
from realrun.step_record import timeline_mapping


def main() -> None:
    model = sys.argv[1]
    rng = random.Random(0)
    got: dict[str, list[tuple[float, float]]] = {"step_probe": [], "step_probe_fine": []}
    for path in sorted(glob.glob(f"benchmarks/results/accuracy_matrix_m*/{model}-loopback/*calibration.jsonl*")):
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            for line in f:
                r = json.loads(line)
                if r.get("kind") not in got:
                    continue
                rec = timeline_mapping(r["timeline"])
                t = [step_terms(x)["compute_s"] * 1e3 for x in across_ranks_timelines(rec)]
                b = [x * 1e3 for x in rec.get("compute_step_times_s") or ()]
                if len(t) < 5 or len(b) < 5:
                    continue
                boot = [
                    statistics.median(rng.choices(t, k=len(t))) - statistics.median(rng.choices(b, k=len(b)))
                    for _ in range(400)
                ]
                got[r["kind"]].append((statistics.median(t) - statistics.median(b), statistics.stdev(boot)))
    for kind, xs in got.items():
        print(
            f"{model} {kind}: {len(xs)} calibrations; target's sd across them {statistics.stdev(x for x, _ in xs):.2f} ms, "
            f"the bootstrap's sd within one: mean {statistics.fmean(s for _, s in xs):.2f} ms "
            f"(median {statistics.median(s for _, s in xs):.2f})"
        )


if __name__ == "__main__":
    main()
