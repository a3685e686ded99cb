"""Page faults and step time of micro-DLRM's one-bucket torch-ddp step, with few or many setups side by side.

    PYTHONPATH=benchmarks/results/micro_dlrm_context:. python benchmarks/results/micro_dlrm_context/faults.py N [N ...]

Per N: the compute-only module + N torch-ddp 64 MiB setups (own model copy each) stepped in turn (A B C, C B A),
2 gloo ranks on loopback; per setup the median step (slowest rank) and minor page faults per step (rank 0).
"""

import gc
import resource
import statistics as st
import sys
import time


def task(ctx, n, steps, warmup=3):
    import torch.distributed as dist

    from realrun.bench_ddp import train_step
    from realrun.ddp import make_ddp, make_optimizer
    from realrun.workloads import cast_batch, load_workload

    w = load_workload("micro-dlrm")
    setups = [(lambda m: (m, make_optimizer("naive", m, "sgd")))(w.build())]
    for _ in range(n):
        net = make_ddp("torch-ddp", w.build(), 64.0, None)
        setups.append((net, make_optimizer("torch-ddp", net, "sgd")))
    batch = cast_batch(w.make_batch(w.default_batch_size, 1000 + ctx.rank), device=ctx.device)
    out = [[] for _ in setups]
    for i in range(warmup + steps):
        order = list(range(len(setups))) if i % 2 == 0 else list(reversed(range(len(setups))))
        for k in order:
            net, opt = setups[k]
            opt.zero_grad(set_to_none=True)
            dist.barrier()
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            g0 = sum(s["collections"] for s in gc.get_stats())
            t0 = time.perf_counter()
            train_step(net, opt, batch, w.loss)
            dt = time.perf_counter() - t0
            f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            g1 = sum(s["collections"] for s in gc.get_stats())
            if i >= warmup:
                out[k].append((dt, f1 - f0, g1 - g0))
    return out


def main():
    from calibration.calibrate import open_pool

    with open_pool(2, "gloo", None, 900.0) as pool:
        for n in map(int, sys.argv[1:]):
            import faults

            res = pool.run(faults.task, n, 150)
            print(f"N = {n} torch-ddp 64 MiB setups + compute-only:")
            for k in (0, 1, n):
                if k > n:
                    continue
                t = [max(a[j][0] for a in (r[k] for r in res)) for j in range(len(res[0][k]))]
                fl = [x[1] for x in res[0][k]]
                gcs = sum(x[2] for x in res[0][k])
                name = "compute-only" if k == 0 else f"ddp64 #{k}"
                print(
                    f"  {name}: median {st.median(t) * 1e3:.2f} ms, p10-p90 {sorted(t)[len(t) // 10] * 1e3:.2f}-{sorted(t)[9 * len(t) // 10] * 1e3:.2f}, minor faults/step median {st.median(fl):.0f} (rank 0), gc runs {gcs}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
