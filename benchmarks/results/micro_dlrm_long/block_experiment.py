"""Steps interleaved one at a time (as validate measures them) against turns of consecutive steps.

    python benchmarks/results/micro_dlrm_long/block_experiment.py MODEL OUT.json [STEPS] [REPEATS] [BLOCK] [LINK_MBIT]

Two gloo ranks (inside emulated links of LINK_MBIT Mbit/s when given); the compute-only module and the
configurations below built side by side, measured with ``measure_interleaved`` at ``block=1`` (each step
follows another configuration's step, except at a turn's ends where the order reverses) and at
``block=BLOCK`` (a turn is one untimed step then BLOCK timed ones), the two modes alternating REPEATS
times. Prints per mode and configuration the median step and the median minus the compute-only median
(the exposed part that validate compares); for ``block=1`` also the compute-only steps split by what ran
just before them (another configuration, or the compute-only module itself at a turn's end, where the
order reversed; since ``measure_interleaved`` steps another configuration between turns, untimed, both
halves follow another configuration's step: the split describes runs before that, such as
``baseline_noise/block-gpt-1000.txt``); writes every step time to OUT.json.
"""

import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from calibration.calibrate import open_pool  # noqa: E402
from realrun.bench_ddp import measure_interleaved  # noqa: E402

CONFIGS = [("compute", None), ("torch-ddp", 1.0), ("torch-ddp", 4.0), ("flat", None), ("individual", None)]
WARMUP = 2


def main() -> None:
    model, out = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    block = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    link = float(sys.argv[6]) if len(sys.argv) > 6 else None
    times: dict[str, dict[str, list[float]]] = {"1": {}, str(block): {}}
    # block=1: turn WARMUP + j runs in reverse order when odd, so the compute-only module (first in
    # the list) is last there, after configuration 1's step; in even turns it follows itself.
    after: dict[str, list[float]] = {"another configuration": [], "itself": []}
    with open_pool(2, "gloo", link, 600.0) as pool:
        for rep in range(repeats):
            for b in (1, block):
                res = measure_interleaved(pool, model, CONFIGS, steps=steps, warmup=WARMUP, block=b)
                for (s, mb), r in zip(CONFIGS, res):
                    times[str(b)].setdefault(f"{s} {mb or ''}".strip(), []).extend(r.step_times_s)
                if b == 1:
                    for j, t in enumerate(res[0].step_times_s):
                        after["another configuration" if (WARMUP + j) % 2 else "itself"].append(t)
                print(f"repeat {rep + 1}/{repeats}, block {b} done", file=sys.stderr, flush=True)
    Path(out).write_text(
        json.dumps(
            {
                "model": model,
                "link_mbit": link,
                "steps": steps,
                "repeats": repeats,
                "times_s": times,
                "compute_only_after_s": after,
            }
        )
    )
    for b, per in times.items():
        base = st.median(per["compute"])
        print(f"block {b}: compute-only median {base * 1e3:.2f} ms")
        for name, ts in per.items():
            q = st.quantiles(ts, n=10)
            print(
                f"  {name:<14} median {st.median(ts) * 1e3:7.2f} ms (p10 {q[0] * 1e3:6.2f}, p90 {q[-1] * 1e3:6.2f}), "
                f"over compute-only {(st.median(ts) - base) * 1e3:+6.2f} ms"
            )
    for k, ts in after.items():
        print(f"block 1: compute-only steps after {k}: median {st.median(ts) * 1e3:.2f} ms over {len(ts)} steps")


if __name__ == "__main__":
    main()
