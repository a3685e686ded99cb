"""The parts of a DDP step, split by the step before it: where does a DDP step after a DDP step spend its extra?

    PYTHONPATH=benchmarks/results/micro_dlrm_order_parts:. python benchmarks/results/micro_dlrm_order_parts/pairs.py MODEL STRATEGY BUCKET_MB TURNS

Two gloo ranks on loopback; a compute-only copy C and the configuration D (with the per-bucket timeline
recorder of ``realrun.timeline``) stepped C D, D C, C D, ... (reversing each turn), so that D follows C and D
about equally often, in the same stretch of time (drift cancels). Every step starts with a barrier. For D steps
per predecessor: medians of the timeline's parts, each step's events at the last rank to reach them
(``across_ranks_timelines``); for C steps per predecessor: the median step, forward and backward end. Raw records to OUT_DIR if set.
"""

import json
import os
import statistics as st
import sys


def task(ctx, model, strategy, bucket_mb, turns, warmup=4):
    import time

    import torch.distributed as dist

    from realrun.ddp import make_ddp, make_optimizer
    from realrun.timeline import TimelineRecorder, recorded_step
    from realrun.workloads import cast_batch, load_workload

    w = load_workload(model)
    bare = w.build()
    bare_opt = make_optimizer("naive", bare, "sgd")
    net = make_ddp(strategy, w.build(), bucket_mb, None)
    opt = make_optimizer(strategy, net, "sgd")
    rec = TimelineRecorder(net)
    batch = cast_batch(w.make_batch(w.default_batch_size, 1000 + ctx.rank), device=ctx.device)
    out = []
    prev = None
    for i in range(warmup + turns):
        for k in ("C", "D") if i % 2 == 0 else ("D", "C"):
            (opt if k == "D" else bare_opt).zero_grad(set_to_none=True)
            dist.barrier()
            t0 = time.perf_counter()
            if k == "D":
                recorded_step(rec, t0, net, opt, batch, w.loss)
            else:
                loss = w.loss(bare, batch)
                t_f = time.perf_counter()
                loss.backward()
                t_b = time.perf_counter()
                bare_opt.step()
            dt = time.perf_counter() - t0
            tl = rec.end_step(dt) if k == "D" else {"forward_s": t_f - t0, "backward_end_s": t_b - t0}
            if i >= warmup:
                out.append((prev, k, dt, tl))
            prev = k
    rec.detach()
    return out


def main():
    import pairs

    from calibration.calibrate import open_pool
    from calibration.timeline import across_ranks_timelines, step_terms

    model, strategy, mb, turns = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    with open_pool(2, "gloo", None, 1800.0) as pool:
        res = pool.run(pairs.task, model, strategy, mb, turns)
    out_dir = os.environ.get("OUT_DIR")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "pairs.json"), "x") as f:
            json.dump({"argv": sys.argv[1:], "per_rank": res}, f)
    print(f"{model} {strategy} {mb:g} MiB, {turns} turns (C = compute-only, D = {strategy}); medians in ms")
    for prev in ("C", "D"):
        pair = [(a, b) for a, b in zip(*res) if a[1] == "C" and a[0] == prev]
        c = [max(a[2], b[2]) for a, b in pair]
        f = [max(a[3]["forward_s"], b[3]["forward_s"]) for a, b in pair]
        be = [max(a[3]["backward_end_s"], b[3]["backward_end_s"]) for a, b in pair]
        print(
            f"C after {prev}: step {st.median(c) * 1e3:.3f}, forward {st.median(f) * 1e3:.3f}, "
            f"backward end {st.median(be) * 1e3:.3f} ({len(c)} steps; forward and backward end: the later rank's)"
        )
    q = ("step_s", "forward_s", "backward_s", "compute_s", "exposed_tail_s", "comm_sum_s", "finalize_s", "optimizer_s")
    print(f"{'':>9} " + " ".join(f"{x[:-2]:>12}" for x in q))
    for prev in ("C", "D"):
        idx = [i for i, a in enumerate(res[0]) if a[1] == "D" and a[0] == prev]
        rec = {
            "step_times_s": [max(r[i][2] for r in res) for i in idx],
            "rank_step_times_s": [[r[i][2] for i in idx] for r in res],
            "rank_timelines": [[r[i][3] for i in idx] for r in res],
        }
        terms = [step_terms(tl) for tl in across_ranks_timelines(rec)]
        print(
            f"D after {prev} "
            + " ".join(f"{st.median(t[x] for t in terms) * 1e3:12.3f}" for x in q)
            + f"  ({len(idx)} steps)"
        )


if __name__ == "__main__":
    main()
