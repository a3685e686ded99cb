"""Slow/fast regimes of consecutive DDP steps (rules_and_results.txt): per run, the slow share in 10 segments of
200 steps, the longest runs of slow and of fast steps. A step is slow over 1.6x the run's 10th percentile."""

import json
import sys

import numpy as np

for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        t = np.array(r["step_times_s"]) * 1e3
        slow = t > 1.6 * np.percentile(t, 10)
        seg = [float(s.mean()) * 100 for s in np.array_split(slow, 10)]
        runs = {True: [], False: []}
        cur, n = slow[0], 0
        for s in slow:
            if s == cur:
                n += 1
            else:
                runs[bool(cur)].append(n)
                cur, n = s, 1
        runs[bool(cur)].append(n)
        ge10 = {k: sum(1 for x in v if x >= 10) for k, v in runs.items()}
        print(
            f"{path} {r['strategy']} {r.get('bucket_mb')}: {len(t)} steps, median {np.median(t):.2f} ms, "
            f"p10 {np.percentile(t, 10):.2f}, mean {t.mean():.2f}; slow {slow.mean() * 100:.0f} %; segments' slow % "
            f"{[round(s) for s in seg]} (span {max(seg) - min(seg):.0f}); longest slow run {max(runs[True], default=0)}, "
            f"fast {max(runs[False], default=0)}; runs >= 10: slow {ge10[True]}, fast {ge10[False]}"
        )
        med200 = [round(float(np.median(s)), 1) for s in np.array_split(t, 10)]
        print(f"   segments' medians (ms): {med200}")
