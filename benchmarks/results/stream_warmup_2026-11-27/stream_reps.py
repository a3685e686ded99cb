"""The stream probe's repetitions in every stored calibration: how the first ones compare with the rest.

    python benchmarks/results/stream_warmup_2026-11-27/stream_reps.py [ROOT]   (ROOT default benchmarks/results)

Over every `*.calibration*.jsonl.gz` under ROOT with stream records (`impl` "stream": 8 repetitions of 16 calls
a size, sizes ascending from 4 KiB), by network: the median over calibrations of the first repetition over the
median of the rest, for the first three sizes (blocking and async), and of the 4 KiB size's mean per-call time
over the 16 KiB size's, with every repetition, without the first, and from the fifth on. Measures nothing.
"""

import gzip
import json
import statistics as st
import sys
from pathlib import Path

import numpy as np


def main(root: str) -> None:
    first: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    ratio: dict[str, list[tuple[float, float, float]]] = {}
    for f in sorted(Path(root).glob("**/*.calibration*.jsonl.gz")):
        try:
            with gzip.open(f, "rt") as fh:
                recs = [json.loads(line) for line in fh]
        except (OSError, ValueError):
            continue
        s = [r for r in recs if r.get("kind") == "allreduce" and r.get("impl") == "stream"]
        if len(s) < 3 or any("async_times_s" not in r or r.get("order", "by size") != "by size" for r in s):
            continue
        net = "loopback" if not s[0].get("link_mbit") else f"{s[0]['link_mbit']:g} Mbit/s"
        for i, r in enumerate(s[:3]):
            t, a = r["times_s"], r["async_times_s"]
            first.setdefault((net, i), []).append(
                (t[0] / st.median(t[1:]), st.median(t[:4]) / st.median(t[4:]), a[0] / st.median(a[1:]))
            )
        a, b = s[0]["times_s"], s[1]["times_s"]
        ratio.setdefault(net, []).append(
            (st.mean(a) / st.mean(b), st.mean(a[1:]) / st.mean(b[1:]), st.mean(a[4:]) / st.mean(b[4:]))
        )
    for (net, i), v in sorted(first.items()):
        m = np.median(np.asarray(v), axis=0)
        print(
            f"{net}, size {i + 1} ({len(v)} calibrations): blocking first repetition / rest x{m[0]:.2f}, "
            f"first half / second half x{m[1]:.2f}; async first / rest x{m[2]:.2f}"
        )
    for net, v in sorted(ratio.items()):
        m = np.median(np.asarray(v), axis=0)
        print(
            f"{net}: 4 KiB / 16 KiB per call (means of repetitions): every one x{m[0]:.2f}, without the first "
            f"x{m[1]:.2f}, from the fifth x{m[2]:.2f}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results")
