"""gpt on loopback, pooled over replayed runs: per configuration, how often the measured median falls outside the
80 % interval and on which side, with the median error and half-width. Usage: python gpt_loopback_rows.py RUN_DIR..."""

import json
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path

by = defaultdict(list)
for run in sys.argv[1:]:
    f = Path(run) / "gpt-loopback" / "validation.json"
    d = json.loads(f.read_text())
    d = d.get("results", d)
    for r in d["rows"]:
        key = f"{r['strategy']} {r['bucket_mb'] if r.get('bucket_mb') is not None else ''}".strip()
        m, lo, hi, p = r["measured_median_s"], r["predicted_p10_s"], r["predicted_p90_s"], r["predicted_step_s"]
        side = "in" if lo <= m <= hi else ("above" if m > hi else "below")
        by[key].append((Path(run).name, side, 100 * (p - m) / m, 100 * (hi - lo) / 2 / p))
print("| configuration | runs | outside (measured above / below) | median error | median half-width |")
print("|---|---|---|---|---|")
for key, rs in sorted(by.items(), key=lambda kv: -sum(s != "in" for _, s, _, _ in kv[1])):
    a = sum(s == "above" for _, s, _, _ in rs)
    b = sum(s == "below" for _, s, _, _ in rs)
    print(
        f"| {key} | {len(rs)} | {a + b} ({a} / {b}) | {st.median(e for *_, e, _ in rs):+.2f} % |"
        f" {st.median(w for *_, w in rs):.2f} % |"
    )
