"""Which threads do the work a DDP step leaves running (rule L1 in rules.txt)?

    PYTHONPATH=benchmarks/results/left_work_2026-12-07:. python benchmarks/results/left_work_2026-12-07/left_work.py \
        MODEL BUCKET_MB TURNS GAP_MS OUT.json

Two gloo ranks on loopback. Setups C (bare module), D (torch DDP at BUCKET_MB), N (torch DDP at BUCKET_MB with a comm
hook that hands the bucket back untouched: DDP's hooks, copies and finalize, no call), stepped in a rotating order
(C D N, D N C, N C D, ...). After each step every rank sleeps GAP_MS. With BLOCK=n in the environment each setup is stepped n times in a row (a training job's order). Per step, per thread of the rank: the CPU time
(each thread's CPU-time clock, ``clock_gettime``) used during the step and during the gap after it; the machine's
softirq and system time (``/proc/stat``) over the same windows. Raw per-step rows are kept in OUT.json.
"""

import gzip
import json
import os
import statistics as st
import sys
import time

ORDERS = (("C", "D", "N"), ("D", "N", "C"), ("N", "C", "D"))


def _cpu_clock(tid):
    """The CPU-time clock of thread ``tid`` of this process (Linux: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)).
    Read through ``clock_gettime`` it is brought up to date for a running thread, which ``schedstat`` is not (that
    lags by up to a scheduler tick)."""
    return ((~tid) << 3) | 4 | 2


def _threads():
    """{tid: (name, ns on CPU)} of this process."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            ns = time.clock_gettime_ns(_cpu_clock(int(tid)))
        except OSError:  # a thread that ended between listdir and reading its clock
            continue
        out[int(tid)] = (name, ns)
    return out


def _stat():
    """(softirq, system) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    return int(cpu[7]), int(cpu[3])


def _group(tid, name, main_tid):
    if tid == main_tid:
        return "main"
    if "gloo" in name:
        return "gloo"
    return "other"


def _delta(a, b, main_tid):
    g = {"main": 0, "gloo": 0, "other": 0}
    by = {}
    for tid, (name, ns) in b.items():
        d = ns - a.get(tid, (name, ns))[1] if tid in a else ns
        g[_group(tid, name, main_tid)] += d
        by[f"{name}:{tid}"] = d
    return g, by


def task(ctx, model, bucket_mb, turns, gap_s, warmup=3):
    import threading

    import torch
    import torch.distributed as dist

    from realrun.bench_ddp import train_step
    from realrun.ddp import make_ddp, make_optimizer
    from realrun.workloads import cast_batch, load_workload

    w = load_workload(model)
    bare = w.build()
    d = make_ddp("torch-ddp", w.build(), bucket_mb, None)
    n = make_ddp("torch-ddp", w.build(), bucket_mb, None)

    def untouched(state, bucket):
        fut = torch.futures.Future()
        fut.set_result(bucket.buffer())
        return fut

    n.register_comm_hook(None, untouched)
    setups = {
        "C": (bare, make_optimizer("naive", bare, "sgd")),
        "D": (d, make_optimizer("torch-ddp", d, "sgd")),
        "N": (n, make_optimizer("torch-ddp", n, "sgd")),
    }
    batch = cast_batch(w.make_batch(w.default_batch_size, 1000 + ctx.rank), device=ctx.device)
    main_tid = threading.get_native_id()
    rows = []
    prev = None
    block = int(os.environ.get("BLOCK", "1"))
    for i in range(warmup + turns):
        for k in (x for x in ORDERS[i % 3] for _ in range(block)):
            m, opt = setups[k]
            opt.zero_grad(set_to_none=True)
            dist.barrier()
            a, sa = _threads(), _stat()
            t0 = time.perf_counter()
            train_step(m, opt, batch, w.loss)
            t1 = time.perf_counter()
            b, sb = _threads(), _stat()
            if gap_s:
                time.sleep(gap_s)
            c, sc = _threads(), _stat()
            if i >= warmup:
                step_g, step_by = _delta(a, b, main_tid)
                gap_g, gap_by = _delta(b, c, main_tid)
                rows.append(
                    {
                        "prev": prev,
                        "this": k,
                        "step_s": t1 - t0,
                        "step_cpu_ns": step_g,
                        "gap_cpu_ns": gap_g,
                        "gap_by_thread_ns": gap_by,
                        "step_softirq_jiffies": sb[0] - sa[0],
                        "gap_softirq_jiffies": sc[0] - sb[0],
                        "gap_system_jiffies": sc[1] - sb[1],
                    }
                )
            prev = k
    return rows


def run_on_two_ranks(fn, args, out, meta):
    """``fn(ctx, *args)`` on two gloo ranks on loopback; its per-rank rows written, with ``meta`` and the start
    time, to ``out`` (refused if it exists: no run replaces another's file). Returns (start time, rows)."""
    from calibration.calibrate import open_pool

    if os.path.exists(out):
        sys.exit(f"{out} exists")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with open_pool(2, "gloo", None, 1800.0) as pool:
        res = pool.run(fn, *args)
    with open(out, "x") as f:
        json.dump({**meta, "started": started, "ranks": res}, f)
    return started, res


def main():
    import left_work

    model, mb, turns, gap_ms, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    meta = {"block": int(os.environ.get("BLOCK", "1")), "model": model, "bucket_mb": mb, "turns": turns}
    started, res = run_on_two_ranks(left_work.task, (model, mb, turns, gap_ms / 1e3), out, {**meta, "gap_ms": gap_ms})
    print(
        f"{model} torch-ddp {mb:g} MiB, {turns} turns, blocks of {os.environ.get('BLOCK', '1')}, {gap_ms:g} ms asleep "
        f"after each step; started {started}"
    )
    print(
        "medians per rank, ms of CPU: during the step (main / gloo / other) | in the gap after it (main / gloo / other)"
    )
    for r, rows in enumerate(res):
        for k in ("C", "D", "N"):
            xs = [x for x in rows if x["this"] == k]
            s = {g: st.median(x["step_cpu_ns"][g] for x in xs) / 1e6 for g in ("main", "gloo", "other")}
            gp = {g: st.median(x["gap_cpu_ns"][g] for x in xs) / 1e6 for g in ("main", "gloo", "other")}
            gp90 = sorted(x["gap_cpu_ns"]["gloo"] for x in xs)[9 * len(xs) // 10] / 1e6
            print(
                f"  rank {r} {k}: step {st.median(x['step_s'] for x in xs) * 1e3:.3f} ms; cpu in step "
                f"{s['main']:.3f} / {s['gloo']:.3f} / {s['other']:.3f}; in gap {gp['main']:.3f} / {gp['gloo']:.3f} "
                f"(p90 {gp90:.3f}) / {gp['other']:.3f}; softirq jiffies in gap, mean "
                f"{st.mean(x['gap_softirq_jiffies'] for x in xs):.2f} (n {len(xs)})"
            )


def pairs(path):
    """Per rank: wall, main CPU and gloo CPU in the step, medians, by (previous setup, this setup)."""
    d = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    for r, rows in enumerate(d["ranks"]):
        for k in ("D", "C", "N"):
            for prev in ("D", "C", "N"):
                xs = [x for x in rows if x["prev"] == prev and x["this"] == k]
                if xs:
                    print(
                        f"  rank {r} {k} after {prev}: wall {st.median(x['step_s'] for x in xs) * 1e3:.3f} ms, main cpu "
                        f"{st.median(x['step_cpu_ns']['main'] for x in xs) / 1e6:.3f}, gloo cpu "
                        f"{st.median(x['step_cpu_ns']['gloo'] for x in xs) / 1e6:.3f} (n {len(xs)})"
                    )


if __name__ == "__main__":
    if sys.argv[1] == "--pairs":
        pairs(sys.argv[2])
    else:
        main()
