"""Where does a training job's order put micro-DLRM's extra time? Timelines of one configuration at block 1
(each DDP step beside a compute-only step) and block N (turns of N DDP steps, then N compute-only ones).

    python benchmarks/results/micro_dlrm_order_parts/parts.py MODEL STRATEGY BUCKET_MB STEPS BLOCK [BLOCK ...]

Two gloo ranks on loopback; each step's events at the last rank to reach them (``across_ranks_timelines``).
Prints per block: the medians of step, forward, backward, backward end, exposed tail, summed call time,
finalize, optimizer, and the compute-only median measured beside them. Raw records to OUT_DIR if set.
"""

import json
import os
import statistics as st
import sys


def main() -> None:
    from calibration.calibrate import open_pool
    from calibration.timeline import across_ranks_timelines, step_terms
    from realrun.bench_ddp import measure_timeline

    model, strategy, mb, steps = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    blocks = [int(b) for b in sys.argv[5:]] or [1, 10]
    out_dir = os.environ.get("OUT_DIR")
    q = ("step_s", "forward_s", "backward_s", "compute_s", "exposed_tail_s", "comm_sum_s", "finalize_s", "optimizer_s")
    print(f"{model} {strategy} {mb:g} MiB, {steps} timed steps a block setting; medians in ms")
    print(f"{'block':>5} " + " ".join(f"{x[:-2]:>10}" for x in q) + f" {'compute-only':>12} {'C p10-p90':>13}")
    with open_pool(2, "gloo", None, 1800.0) as pool:
        for rnd in range(2):
            for b in blocks:
                rec = measure_timeline(pool, model, strategy, mb, None, steps, 3, block=b)
                terms = [step_terms(tl) for tl in across_ranks_timelines(rec.to_dict())]
                comp = sorted(rec.compute_step_times_s)
                p10, p90 = comp[len(comp) // 10], comp[(len(comp) * 9) // 10]
                print(
                    f"{b:>5} "
                    + " ".join(f"{st.median(t[x] for t in terms) * 1e3:10.3f}" for x in q)
                    + f" {rec.compute_median_s * 1e3:12.3f} {p10 * 1e3:6.2f}-{p90 * 1e3:6.2f}",
                    flush=True,
                )
                if out_dir:
                    os.makedirs(out_dir, exist_ok=True)
                    with open(os.path.join(out_dir, f"r{rnd}_b{b}.timeline.json"), "x") as f:
                        json.dump(rec.to_dict(), f)


if __name__ == "__main__":
    main()
