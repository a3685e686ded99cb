"""Does a configuration's step depend on how many other configurations are stepped between its steps?

``validate`` steps up to ``--group-size`` (default 12) configurations in turn, each with its own model copy,
beside copies of the compute-only module; a training job steps one model. Here the same few configurations
(FOCUS) are measured with ``measure_interleaved`` (one step at a time, as validate does) in a small group (the
compute-only module and FOCUS) and in a large one (the same plus the matrix's other configurations, EXTRA), the
two alternating REPEATS times. Prints per group and configuration the median step and the median minus the
group's compute-only median (the exposed part validate compares); writes every step time to OUT.json.

    python benchmarks/results/group_size/experiment.py MODEL OUT.json [STEPS] [REPEATS] [LINK_MBIT]
"""

import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from calibration.calibrate import open_pool  # noqa: E402
from realrun.bench_ddp import measure_interleaved  # noqa: E402

FOCUS = [("compute", None), ("torch-ddp", 16.0), ("flat", None), ("torch-ddp", 1.0)]
EXTRA = [
    ("torch-ddp", 0.25),
    ("torch-ddp", 4.0),
    ("torch-ddp", 64.0),
    ("individual", None),
    ("bucketed", 0.25),
    ("bucketed", 1.0),
    ("bucketed", 16.0),
    ("sharded", 1.0),
]
WARMUP = 2


def name(cfg):
    return f"{cfg[0]} {cfg[1] or ''}".strip()


def main() -> None:
    model, out = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    link = float(sys.argv[5]) if len(sys.argv) > 5 else None
    groups = {"small": FOCUS, "large": FOCUS + EXTRA}
    times: dict[str, dict[str, list[list[float]]]] = {g: {} for g in groups}
    with open_pool(2, "gloo", link, 900.0) as pool:
        for rep in range(repeats):
            for g in ("small", "large") if rep % 2 == 0 else ("large", "small"):
                res = measure_interleaved(pool, model, groups[g], steps=steps, warmup=WARMUP)
                for cfg, r in zip(groups[g], res):
                    times[g].setdefault(name(cfg), []).append(r.step_times_s)
                print(f"repeat {rep + 1}/{repeats}, {g} group done", file=sys.stderr, flush=True)
    Path(out).write_text(json.dumps({"model": model, "link_mbit": link, "steps": steps, "times_s": times}))
    for g, per in times.items():
        print(f"{g} group ({len(groups[g])} configurations, the compute-only module included):")
        base_each = [st.median(ts) for ts in per["compute"]]
        for cfg in FOCUS:
            runs = per[name(cfg)]
            pooled = [t for ts in runs for t in ts]
            over = [(st.median(ts) - b) * 1e3 for ts, b in zip(runs, base_each)]
            print(
                f"  {name(cfg):<14} median {st.median(pooled) * 1e3:6.2f} ms; over compute-only per repeat "
                + " ".join(f"{o:+5.2f}" for o in over)
                + f" ms (median {st.median(over):+5.2f})"
            )


if __name__ == "__main__":
    main()
