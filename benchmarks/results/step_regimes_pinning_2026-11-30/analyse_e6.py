"""Rule E6 (rules.txt): the micro-DLRM loopback cell, bound and free in turns: are the bound misses systematic?
usage: python analyse_e6.py e6_1_bind e6_2_free ... (each a matrix folder holding micro-dlrm-loopback/)"""

import json
import re
import statistics
import sys
from pathlib import Path

ONE = {
    ("torch-ddp", 4.0),
    ("torch-ddp", 16.0),
    ("torch-ddp", 64.0),
    ("flat", None),
    ("bucketed", 4.0),
    ("bucketed", 16.0),
    ("bucketed", 64.0),
}
verdicts = []
for d in sys.argv[1:]:
    cell = Path(d) / "micro-dlrm-loopback"
    res = json.loads((cell / "validation.json").read_text())
    log = (cell / "validate.log").read_text()
    rows = res["rows"]
    one = [r["error_pct"] for r in rows if (r["strategy"], r.get("bucket_mb")) in ONE]
    ind = next(r["error_pct"] for r in rows if r["strategy"] == "individual")
    med1 = statistics.median(one)
    m = re.search(
        r"step check beside compute-only steps, predicted as validate predicts: torch-ddp [0-9.]+ MiB ([-+0-9.]+) %",
        log,
    )
    check = float(m.group(1)) if m else float("nan")
    q = re.search(r"queued calls: [^;]*?\((x[0-9.]+), 95 %[^)]*\)[^;]*?: ([^;]*)", log)
    ra = res.get("rounds_apart") or {}
    print(
        f"{d}: {res['median_abs_error_pct']:.2f} / {res['worst_abs_error_pct']:.2f} % "
        f"({res['interval_coverage'] * 100:.0f} %); one-bucket rows' median error {med1:+.1f} % (range "
        f"{min(one):+.1f}..{max(one):+.1f}); step check at one bucket {check:+.1f} %; individual {ind:+.1f} %; "
        f"queued {q.group(1) + ' ' + q.group(2) if q else '-'}; rounds apart {ra.get('median_pct', float('nan')):.1f} / "
        f"{ra.get('worst_pct', float('nan')):.1f} %"
    )
    if "bind" in Path(d).name:
        verdicts.append((med1, check))
if any(m >= -5 for m, _ in verdicts):
    print("outcome: refuted")
elif all(m < -5 and abs(c - m) <= 10 for m, c in verdicts):
    print("outcome: claim holds")
else:
    print("outcome: inconclusive")
