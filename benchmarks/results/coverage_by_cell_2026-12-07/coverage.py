"""Coverage of the 80 % interval by (workload, network) kind, pooled over replayed matrix runs, and how the rows
outside their interval differ from those inside (rules.txt). Usage: python coverage.py RUN_DIR [RUN_DIR ...]
where each RUN_DIR holds CELL/validation.json (a replay's output folder)."""

import json
import math
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path

from scipy.stats import binom


def rows_of(run: Path):
    for f in sorted(run.glob("*/validation.json")):
        d = json.loads(f.read_text())
        d = d.get("results", d)
        for r in d["rows"]:
            if r.get("predicted_p10_s") is None:
                continue
            yield f.parent.name, r


def moved(r) -> float:
    m = [x for x in (r.get("round_medians_s") or ()) if x and x > 0]
    return abs(math.log(max(m) / min(m))) if len(m) >= 2 else math.nan


def main(runs: list[str]) -> None:
    kinds: dict[str, list] = defaultdict(list)
    for run in runs:
        for cell, r in rows_of(Path(run)):
            m, lo, hi = r["measured_median_s"], r["predicted_p10_s"], r["predicted_p90_s"]
            side = "in" if lo <= m <= hi else ("above" if m > hi else "below")  # measured above / below
            kinds[cell].append((Path(run).name, r, side))

    print("C1: pooled coverage by kind (central 95 % of Binomial(n, 0.8) given)")
    print("| kind | runs | rows | inside | coverage | binomial 95 % | verdict | outside: measured above / below |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, rs in sorted(kinds.items()):
        n = len(rs)
        k = sum(1 for _, _, s in rs if s == "in")
        lo, hi = binom.ppf(0.025, n, 0.8), binom.ppf(0.975, n, 0.8)
        verdict = "under" if k < lo else ("over" if k > hi else "within chance")
        above = sum(1 for _, _, s in rs if s == "above")
        below = sum(1 for _, _, s in rs if s == "below")
        nruns = len({run for run, _, _ in rs})
        print(
            f"| {kind} | {nruns} | {n} | {k} | {100 * k / n:.1f} % | {lo:.0f}-{hi:.0f} | {verdict} | {above} / {below} |"
        )

    def split(select):
        ins = [moved(r) for kind, rs in kinds.items() if select(kind) for _, r, s in rs if s == "in"]
        out = [moved(r) for kind, rs in kinds.items() if select(kind) for _, r, s in rs if s != "in"]
        ins = [x for x in ins if math.isfinite(x)]
        out = [x for x in out if math.isfinite(x)]
        return ins, out

    print("\nR1: how far a row's median moved between its two rounds, |log(high / low)|, in %")
    for label, sel in (
        ("all cells", lambda k: True),
        ("loopback cells", lambda k: k.endswith("loopback")),
        ("link cells", lambda k: not k.endswith("loopback")),
        ("loopback, micro-DLRM left out", lambda k: k.endswith("loopback") and not k.startswith("micro")),
    ):
        ins, out = split(sel)
        mi, mo = st.median(ins) * 100, st.median(out) * 100
        print(
            f"- {label}: inside {len(ins)} rows, median {mi:.2f} %; outside {len(out)} rows, median {mo:.2f} %;"
            f" ratio {mo / mi:.2f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
