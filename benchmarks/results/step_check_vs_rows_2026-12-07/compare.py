"""Does a calibration's step check predict its run's many-call rows? micro-DLRM on loopback, stored cells.

For each stored cell with the six-row step check, the check's errors (predicted / measured - 1, as the rows', from the
calibration, minutes before the rows) beside the validation rows' errors of the many-call configurations.
If the check's many-call errors carried the rows' sign and size, a term fitted to them (a calibration probe,
not the rows) could mend the rows. Run from the repository root: python benchmarks/results/step_check_vs_rows_2026-12-07/compare.py
"""

import glob
import json
import math

for d in sorted(glob.glob("benchmarks/results/*/micro-dlrm-loopback")):
    try:
        params = json.load(open(f"{d}/validation.params.json"))
        val = json.load(open(f"{d}/validation.json"))
    except (OSError, ValueError):
        continue
    check = params["probes"].get("sharded_step", {}).get("check")
    if not isinstance(check, list) or len(check) < 5:
        continue
    q = params["probes"].get("in_step", {}).get("queued_latency_scale")
    chk = " ".join(
        f"{c['strategy']} {c['bucket_mb']:g}: {100 * math.expm1(c['log_residual']):+.0f}%"
        + (" (fitted)" if c["fitted"] else "")
        for c in check
    )
    rows = " ".join(
        f"{r['strategy']} {r.get('bucket_mb') or ''}: {r['error_pct']:+.0f}%"
        for r in val["rows"]
        if r["strategy"] in ("torch-ddp", "bucketed", "individual") and (r.get("bucket_mb") or 0) <= 1
    )
    print(f"{d.split('/')[2]}  queued scale {q:.2f}\n  step check: {chk}\n  rows:       {rows}")
