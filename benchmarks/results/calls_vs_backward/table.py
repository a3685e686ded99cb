"""Per configuration: calls, and forward+backward measured against the compute-only steps beside it.

python table.py gpt-1000 gpt-loopback
"""

import glob
import json
import sys

print("| cell | config | calls | fwd+bwd measured ms | compute-only ms | excess ms | predicted excess ms (m4 terms) |")
print("|---|---|---|---|---|---|---|")
for cell in sys.argv[1:]:
    for f in sorted(glob.glob(f"{cell}/*.decomposition.json")):
        d = json.load(open(f))
        t = d["terms"]["compute_s"]
        co = d["compute_only_median_s"]
        cfg = d["strategy"] + (f" {d['bucket_mb']:g} MiB" if d["bucket_mb"] else "")
        print(
            f"| {cell} | {cfg} | {d['n_buckets_measured']} | {t['measured_s'] * 1e3:.1f} | {co * 1e3:.1f} | "
            f"{(t['measured_s'] - co) * 1e3:+.1f} | {(t['predicted_s'] - co) * 1e3:+.1f} |"
        )
