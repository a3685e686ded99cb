"""Across the stored accuracy matrices' calibrations of one workload on loopback: the in-step probe's backward-end
excess over its compute-only steps at each cap, as the fit takes it (median less median) and paired by turn (the
median of per-turn differences); their mean and sd over calibrations. Nothing measured.

    PYTHONPATH=. python benchmarks/results/call_work_by_impl_2026-12-07/probe_noise.py cnn
"""

import glob
import gzip
import json
import statistics
import sys

from calibration.timeline import across_ranks_timelines, step_terms
from realrun.step_record import timeline_mapping


def main() -> None:
    model = sys.argv[1]
    rows = []
    for path in sorted(glob.glob(f"benchmarks/results/accuracy_matrix_m*/{model}-loopback/*calibration.jsonl*")):
        out = {}
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            for line in f:
                r = json.loads(line)
                if r.get("kind") not in ("step_probe", "step_probe_fine"):
                    continue
                rec = timeline_mapping(r["timeline"])
                t = [step_terms(x)["compute_s"] for x in across_ranks_timelines(rec)]
                b = list(rec.get("compute_step_times_s") or ())
                if len(b) == len(t) >= 5:
                    unpaired = (statistics.median(t) - statistics.median(b)) * 1e3
                    paired = statistics.median(x - y for x, y in zip(t, b)) * 1e3
                    out[r["kind"]] = (unpaired, paired)
        if len(out) == 2:
            rows.append((path.split("/")[2], out))
    print(f"{model}: {len(rows)} calibrations ({rows[0][0]} .. {rows[-1][0]} by name)")
    for kind in ("step_probe", "step_probe_fine"):
        u, p = [o[kind][0] for _, o in rows], [o[kind][1] for _, o in rows]
        print(
            f"  {kind:<16} median less median: mean {statistics.fmean(u):.2f} ms, sd {statistics.stdev(u):.2f}; "
            f"paired: mean {statistics.fmean(p):.2f}, sd {statistics.stdev(p):.2f}"
        )


if __name__ == "__main__":
    main()
