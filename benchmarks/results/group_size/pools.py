"""Is a configuration's exposed communication a property of the process pool it runs in?

POOLS fresh pools of 2 gloo ranks (new processes, new process group, new TCP connections), each measuring the
compute-only module and FOCUS (``experiment.py``'s) step-interleaved, REPEATS times in the same pool. Prints per
configuration the exposed part (median minus the compute-only median) per repeat, grouped by pool, and the
spread within pools against the spread between pools' means (a one-way random-effects split).

    python benchmarks/results/group_size/pools.py MODEL OUT.json [STEPS] [REPEATS] [POOLS] [LINK_MBIT]
"""

import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from experiment import FOCUS, WARMUP, name  # noqa: E402

from calibration.calibrate import open_pool  # noqa: E402
from realrun.bench_ddp import measure_interleaved  # noqa: E402


def main() -> None:
    model, out = sys.argv[1], sys.argv[2]
    steps, repeats, pools = (int(a) for a in (sys.argv[3:6] + ["100", "3", "6"][len(sys.argv[3:6]) :]))
    link = float(sys.argv[6]) if len(sys.argv) > 6 else None
    over: dict[str, list[list[float]]] = {name(c): [] for c in FOCUS[1:]}
    raw = []
    for p in range(pools):
        with open_pool(2, "gloo", link, 900.0) as pool:
            per_pool: dict[str, list[float]] = {k: [] for k in over}
            for _ in range(repeats):
                res = measure_interleaved(pool, model, FOCUS, steps=steps, warmup=WARMUP)
                raw.append([r.step_times_s for r in res])
                base = res[0].median_s
                for c, r in zip(FOCUS[1:], res[1:]):
                    per_pool[name(c)].append((r.median_s - base) * 1e3)
        for k, v in per_pool.items():
            over[k].append(v)
        print(f"pool {p + 1}/{pools} done", file=sys.stderr, flush=True)
    Path(out).write_text(
        json.dumps(
            {"model": model, "link_mbit": link, "steps": steps, "focus": [name(c) for c in FOCUS], "times_s": raw}
        )
    )
    for k, per_pool in over.items():
        within = st.mean(st.variance(v) for v in per_pool) ** 0.5
        means = [st.mean(v) for v in per_pool]
        between = st.stdev(means)
        print(f"{k:<14} exposed ms by pool: " + " | ".join(" ".join(f"{x:5.2f}" for x in v) for v in per_pool))
        print(
            f"{'':<14} SD within a pool {within:.2f} ms; SD of pool means {between:.2f} ms "
            f"(expected from within alone {within / len(per_pool[0]) ** 0.5:.2f})"
        )


if __name__ == "__main__":
    main()
