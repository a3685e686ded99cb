"""The in-step probe's recording cost, per cell: each probe's recorded steps against the steps of the copy without
the recording taken in the same rounds (``plain_step_times_s``, recorded since this folder's runs). Per probe: the
steps, the median paired difference with its 80 % sign-test interval, and the medians of both sides. Nothing is
measured.

    python benchmarks/results/tried_not_adopted/recording_cost_in_probe/paired.py MATRIX_DIR...
"""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from realrun.records import read_records  # noqa: E402
from realrun.stats import median_ci  # noqa: E402

print(
    f"{'cell':<22} {'probe':<16} {'steps':>5} {'recorded':>9} {'plain':>9} {'paired':>8} {'80% interval':>17} {'of step':>8}"
)
for d in sys.argv[1:]:
    for cell in sorted(Path(d).iterdir()):
        cal = sorted(cell.glob("validation.calibration*.jsonl*"))
        if not cal:
            continue
        for r in read_records(cal[0]):
            if r.get("kind") not in ("step_probe", "step_probe_fine"):
                continue
            tl = r["timeline"]
            rec, plain = tl["step_times_s"], tl.get("plain_step_times_s") or []
            if len(plain) != len(rec):
                continue
            diffs = [a - b for a, b in zip(rec, plain)]
            lo, hi = median_ci(diffs, 0.80)
            med = statistics.median(diffs)
            mr = statistics.median(rec)
            name = f"{r['kind'].replace('step_probe', 'probe')} {tl['bucket_mb'] * 1024:g} KiB"
            print(
                f"{cell.name:<22} {name:<16} {len(rec):>5} {mr * 1e3:9.1f} "
                f"{statistics.median(plain) * 1e3:9.1f} {med * 1e3:8.2f} {lo * 1e3:8.2f}..{hi * 1e3:7.2f} "
                f"{med / mr * 100:7.1f}%"
            )
