"""What the stream probe's untimed first repetition does to stored cells: their calibration records refitted with
and without each stream record's first repetition, and their validation steps replayed from both fits. Nothing is
measured.

    PYTHONPATH=. python benchmarks/results/stream_warmup_2026-11-27/replay_warmup.py OUT RUN [RUN ...]

For each cell of each RUN (`<cell>/validation.calibration*.jsonl.gz` with the stream probe's async times,
`validation.jsonl.gz`): the network fit both ways (cheap); where it moves (the channel count, or o by more than
2 %), `ddpsim calibrate --refit` of both record sets into OUT/<run>/<cell>/ and `replay_validation` of the cell's
steps from each. Prints one markdown row a cell (o and channels, then median / worst |error| and coverage as
recorded, and with the first repetition dropped) and writes OUT/table.md; the cells where the fit did not move are
counted.
"""

import gzip
import json
import statistics as st
import subprocess
import sys
from pathlib import Path

from calibration.calibrate import fit_network
from calibration.params import Params
from calibration.validate import replay_validation


def summary(res):
    e = [abs(r.error_pct) for r in res["rows"]]
    return f"{st.median(e):.2f} / {max(e):.2f} % ({(res.get('interval_coverage') or 0) * 100:.0f} %)"


def dropped(r):
    """A stream record without its first repetition (what the probe now leaves untimed)."""
    if r.get("kind") != "allreduce" or r.get("impl") != "stream":
        return r
    t, a = r["times_s"][1:], r["async_times_s"][1:]
    return dict(r, times_s=t, async_times_s=a, median_s=st.median(t), iters=len(t) * (r["iters"] // len(r["times_s"])))


def net_of(recs):
    s = [r for r in recs if r.get("impl") == "stream"]
    ar = [r for r in recs if r.get("kind") in ("allreduce", "broadcast")]
    return fit_network(ar, "gloo", s[0]["world_size"], s[0].get("link_mbit"), lambda m: None)


def main():
    out = Path(sys.argv[1])
    rows = [
        "| cell | o (ms), channels: as recorded -> first repetition dropped | replay as recorded | dropped |",
        "|---|---|---|---|",
    ]
    same = 0
    for run in map(Path, sys.argv[2:]):
        for cell in sorted(p for p in run.iterdir() if p.is_dir()):
            cal = sorted(cell.glob("validation.calibration*.jsonl.gz"))
            steps = cell / "validation.jsonl.gz"
            if not (cal and steps.is_file()):
                continue
            with gzip.open(cal[0], "rt") as f:
                recs = [json.loads(line) for line in f]
            streams = [r for r in recs if r.get("impl") == "stream"]
            if len(streams) < 3 or any("async_times_s" not in r for r in streams):
                continue
            new = [dropped(r) for r in recs]
            a, b = net_of(recs), net_of(new)
            if a.channels == b.channels and abs(b.linear.o_s / a.linear.o_s - 1) <= 0.02:
                same += 1
                continue
            o = out / run.name / cell.name
            o.mkdir(parents=True, exist_ok=True)
            with gzip.open(o / "dropped.jsonl.gz", "wt") as f:
                f.writelines(json.dumps(r) + "\n" for r in new)
            res = {}
            method = json.loads((cell / "validation.json").read_text()).get("method", "")
            block = 10 if "turns of 10" in method else None
            for name, src in (("recorded", cal[0]), ("dropped", o / "dropped.jsonl.gz")):
                p = o / f"params_{name}.json"
                subprocess.run(
                    ["ddpsim", "calibrate", "--refit", str(src), "--out", str(p), "--quiet"],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                res[name] = replay_validation(steps, Params.load(p), block=block)
            rows.append(
                f"| {run.name} {cell.name} | {a.linear.o_s * 1e3:.3f}, {a.channels} -> {b.linear.o_s * 1e3:.3f}, "
                f"{b.channels} | {summary(res['recorded'])} | {summary(res['dropped'])} |"
            )
            print(rows[-1], flush=True)
    rows.append(f"\n{same} more cells: the fit did not move (same channel count, o within 2 %).")
    print(rows[-1])
    (out / "table.md").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
