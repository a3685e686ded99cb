"""Per-step (paired) comparison against validate's per-row medians, on a stored matrix (compute only).

    .venv/bin/python benchmarks/results/tried_not_adopted/paired_steps.py benchmarks/results/accuracy_matrix_m6

raw: the prediction at the compute-only median against the measured median (what validate reports);
paired: each measured step over the prediction at the compute-only step measured beside it (the same
index: the configurations are stepped in turn), the median of those ratios. Printed per cell: median and
worst |error| of both, and the rows the paired one misses by 10 % or more.
"""

import gzip
import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from calibration.params import Params  # noqa: E402
from calibration.validate import check_profile_matches  # noqa: E402
from simulator.predict import predict  # noqa: E402
from simulator.strategies import StrategySpec  # noqa: E402

for cell in sorted(Path(sys.argv[1]).glob("*/")):
    params = Params.load(next(cell.glob("validation.params*.json")))
    recs = [json.loads(line) for line in gzip.open(cell / "validation.jsonl.gz", "rt")]
    recs = [r for r in recs if r.get("kind") == "validation_row"]
    prof = check_profile_matches(params, recs[0]["model"], None)
    cost = params.cost_model(world_size=2)
    raw, pair, bad = [], [], []
    for r in recs:
        v = r["validation"]
        cfg = StrategySpec(v["strategy"], bucket_mb=v.get("bucket_mb"))
        comp = [float(t) for t in r["compute_step_times_s"]]
        ddp = r["step_times_s"]
        at_median = predict(prof.scaled(st.median(comp) / prof.compute_s), cost, cfg, 2).step_time_s
        raw.append(abs(at_median / st.median(ddp) - 1) * 100)
        per_step = [predict(prof.scaled(c / prof.compute_s), cost, cfg, 2).step_time_s for c in comp]
        e = (1 / st.median([d / p for d, p in zip(ddp, per_step)]) - 1) * 100
        pair.append(abs(e))
        if abs(e) >= 10:
            bad.append(f"{v['strategy']} {v.get('bucket_mb')} {e:+.1f}")
    print(
        f"{cell.name:<20} raw med {st.median(raw):4.1f} worst {max(raw):5.1f} | "
        f"paired med {st.median(pair):4.1f} worst {max(pair):5.1f}  {'; '.join(bad)}"
    )
