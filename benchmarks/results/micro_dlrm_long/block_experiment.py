"""Steps interleaved one at a time (as validate measures them) against turns of consecutive steps.

    python benchmarks/results/micro_dlrm_long/block_experiment.py MODEL OUT.json [STEPS] [REPEATS] [BLOCK]

Two gloo ranks; the compute-only module and five configurations built side by side, measured with
``measure_interleaved`` at ``block=1`` (each step follows another configuration's step) and at ``block=BLOCK``
(a turn is one untimed step then BLOCK timed ones), the two modes alternating REPEATS times. Prints per mode
and configuration the median step and the median minus the compute-only median (the exposed part that
validate compares), and writes every step time to OUT.json.
"""

import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from realrun.bench_ddp import measure_interleaved  # noqa: E402
from realrun.launch import RankPool  # noqa: E402

CONFIGS = [("compute", None), ("torch-ddp", 1.0), ("torch-ddp", 4.0), ("flat", None), ("individual", None)]


def main() -> None:
    model, out = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    block = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    times: dict[str, dict[str, list[float]]] = {"1": {}, str(block): {}}
    with RankPool(2) as pool:
        for rep in range(repeats):
            for b in (1, block):
                res = measure_interleaved(pool, model, CONFIGS, steps=steps, warmup=2, block=b)
                for (s, mb), r in zip(CONFIGS, res):
                    times[str(b)].setdefault(f"{s} {mb or ''}".strip(), []).extend(r.step_times_s)
                print(f"repeat {rep + 1}/{repeats}, block {b} done", file=sys.stderr, flush=True)
    Path(out).write_text(json.dumps({"model": model, "steps": steps, "repeats": repeats, "times_s": times}))
    for b, per in times.items():
        base = st.median(per["compute"])
        print(f"block {b}: compute-only median {base * 1e3:.2f} ms")
        for name, ts in per.items():
            q = st.quantiles(ts, n=10)
            print(
                f"  {name:<14} median {st.median(ts) * 1e3:7.2f} ms (p10 {q[0] * 1e3:6.2f}, p90 {q[-1] * 1e3:6.2f}), "
                f"over compute-only {(st.median(ts) - base) * 1e3:+6.2f} ms"
            )


if __name__ == "__main__":
    main()
