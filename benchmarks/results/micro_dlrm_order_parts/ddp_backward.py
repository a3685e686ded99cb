"""What makes torch DDP's backward longer than the bare module's when nothing is in flight during it?

    PYTHONPATH=. python benchmarks/results/micro_dlrm_order_parts/ddp_backward.py MODEL BUCKET_MB TURNS

Two gloo ranks on loopback, four setups built side by side and stepped in turn (order reversing each turn),
every step after a barrier: the bare module; torch DDP under ``no_sync()`` (hooks registered, no reduction, no
copies); torch DDP with ``gradient_as_bucket_view=True`` (the reduction, no copy into the bucket); torch DDP as
``realrun`` builds it (gradients copied into the bucket, then out). Per setup: medians over the later rank of
forward, backward (forward end to ``backward()`` return), and the step.
"""

import statistics as st
import sys
import time


def task(ctx, model, bucket_mb, turns, warmup=5):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from realrun.workloads import cast_batch, load_workload

    w = load_workload(model)
    setups = {}
    for name in ("bare", "ddp_no_sync", "ddp_view", "ddp"):
        m = w.build()
        if name != "bare":
            m = DDP(m, bucket_cap_mb=bucket_mb, gradient_as_bucket_view=(name == "ddp_view"))
        setups[name] = (m, torch.optim.SGD(m.parameters(), lr=0.01))
    batch = cast_batch(w.make_batch(w.default_batch_size, 1000 + ctx.rank), device=ctx.device)
    out = {k: [] for k in setups}
    names = list(setups)
    for i in range(warmup + turns):
        for name in names if i % 2 == 0 else names[::-1]:
            m, opt = setups[name]
            opt.zero_grad(set_to_none=True)
            dist.barrier()
            t0 = time.perf_counter()
            if name == "ddp_no_sync":
                with m.no_sync():
                    loss = w.loss(m, batch)
                    t1 = time.perf_counter()
                    loss.backward()
            else:
                loss = w.loss(m, batch)
                t1 = time.perf_counter()
                loss.backward()
            t2 = time.perf_counter()
            opt.step()
            t3 = time.perf_counter()
            if i >= warmup:
                out[name].append((t1 - t0, t2 - t1, t3 - t0))
    return out


def main():
    sys.path.insert(0, "benchmarks/results/micro_dlrm_order_parts")
    import ddp_backward

    from calibration.calibrate import open_pool

    model, mb, turns = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    with open_pool(2, "gloo", None, 1800.0) as pool:
        res = pool.run(ddp_backward.task, model, mb, turns)
    print(f"{model}, torch DDP at {mb:g} MiB, {turns} turns; medians over the later rank, ms")
    print(f"{'setup':12s} {'forward':>8} {'backward':>9} {'step':>8}")
    for name in res[0]:
        rows = [tuple(max(a[q], b[q]) for q in range(3)) for a, b in zip(res[0][name], res[1][name])]
        print(f"{name:12s} " + " ".join(f"{st.median(r[q] for r in rows) * 1e3:8.3f}" for q in range(3)))


if __name__ == "__main__":
    main()
