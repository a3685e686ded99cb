"""The sharded optimizer's part of the step over emulated links: per cell and bucket, the measured median of
sharded minus torch-ddp at the same cap (the owner-by-owner broadcasts and the optimizer on a 1/p shard), against the
same difference predicted. Nothing is measured.

    python benchmarks/results/sharded_broadcast_link/shard_gap.py benchmarks/results/accuracy_matrix_m27link ...
"""

import json
import sys
from pathlib import Path

print(f"{'run/cell':<34}{'bucket':>7}{'meas gap ms':>12}{'pred gap ms':>12}{'pred-meas':>10}{'of step':>8}")
for d in sys.argv[1:]:
    for c in sorted(Path(d).iterdir()):
        p = c / "validation.json"
        if not p.exists():
            continue
        rows = json.loads(p.read_text())["rows"]
        by = {(r["strategy"], r.get("bucket_mb")): r for r in rows}
        for b in (0.25, 1.0, 4.0, 16.0, 64.0):
            s = by.get(("sharded", b))
            t = by.get(("torch-ddp", b))
            if not s or not t:
                continue
            mg = (s["measured_median_s"] - t["measured_median_s"]) * 1e3
            pg = (s["predicted_step_s"] - t["predicted_step_s"]) * 1e3
            print(
                f"{Path(d).name[-10:] + '/' + c.name:<34}{b:>7}{mg:12.2f}{pg:12.2f}{pg - mg:10.2f}{(pg - mg) / s['measured_median_s'] / 10:7.1f}%"
            )
