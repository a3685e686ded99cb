"""Does a DDP step leave work that the next step pays? Steps classified by the step before them.

    PYTHONPATH=benchmarks/results/micro_dlrm_context:. python benchmarks/results/micro_dlrm_context/spill.py MODEL STRATEGY BUCKET_MB TURNS [GAP_MS]

Two gloo ranks on loopback; a compute-only module (C) and one configuration (D) built side by side and stepped
C D, D C, C D, ... (the order reversing every turn, as measure_interleaved's turns did before the untimed switch
step), so each appears after C and after D about equally often. Per pair (previous -> this): the median of the
slower rank's step times, their count, and the p10-p90. GAP_MS: each rank sleeps that long before every
step's barrier (untimed), so that work a step leaves running can finish before the next one starts.
"""

import statistics as st
import sys
import time


def task(ctx, model, strategy, bucket_mb, turns, gap_s=0.0, warmup=4):
    import torch.distributed as dist

    from realrun.bench_ddp import train_step
    from realrun.ddp import make_ddp, make_optimizer
    from realrun.workloads import cast_batch, load_workload

    w = load_workload(model)
    bare = w.build()
    net = make_ddp(strategy, w.build(), bucket_mb, None)
    setups = {"C": (bare, make_optimizer("naive", bare, "sgd")), "D": (net, make_optimizer(strategy, net, "sgd"))}
    batch = cast_batch(w.make_batch(w.default_batch_size, 1000 + ctx.rank), device=ctx.device)
    out = []
    prev = None
    for i in range(warmup + turns):
        for k in ("C", "D") if i % 2 == 0 else ("D", "C"):
            m, opt = setups[k]
            opt.zero_grad(set_to_none=True)
            if gap_s:
                time.sleep(gap_s)
            dist.barrier()
            t0 = time.perf_counter()
            train_step(m, opt, batch, w.loss)
            dt = time.perf_counter() - t0
            if i >= warmup:
                out.append((prev, k, dt))
            prev = k
    return out


def main():
    import spill

    from calibration.calibrate import open_pool

    model, strategy, mb, turns = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    gap_ms = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    with open_pool(2, "gloo", None, 1800.0) as pool:
        res = pool.run(spill.task, model, strategy, mb, turns, gap_ms / 1e3)
    steps = [(a[0], a[1], max(a[2], b[2])) for a, b in zip(res[0], res[1])]
    print(
        f"{model} {strategy} {mb:g} MiB, {turns} turns, {gap_ms:g} ms between steps (C = compute-only, D = {strategy}):"
    )
    for pair in (("C", "C"), ("D", "C"), ("C", "D"), ("D", "D")):
        t = sorted(s[2] for s in steps if (s[0], s[1]) == pair)
        if t:
            print(
                f"  {pair[1]} after {pair[0]}: median {st.median(t) * 1e3:.3f} ms (n {len(t)}, p10-p90 {t[len(t) // 10] * 1e3:.2f}-{t[9 * len(t) // 10] * 1e3:.2f})"
            )


if __name__ == "__main__":
    main()
