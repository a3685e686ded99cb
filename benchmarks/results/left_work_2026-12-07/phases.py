"""Where does a one-bucket DDP step after a DDP step spend its extra time (rule L4 in rules.txt)?

    PYTHONPATH=benchmarks/results/left_work_2026-12-07:. python benchmarks/results/left_work_2026-12-07/phases.py \
        MODEL BUCKET_MB TURNS BLOCK OUT.json

Two gloo ranks on loopback; C (bare) and D (torch DDP at BUCKET_MB with a Python comm hook: the bucket's all-reduce
launched async and divided by the world size, as torch's default hook, with the launch and the completion stamped)
stepped in blocks of BLOCK steps, C and D blocks alternating, no gap. Per D step: forward, backward to the launch, the
call, backward's rest after the call (finalize), the optimizer; raw rows kept in OUT.json.
"""

import gzip
import json
import statistics as st
import sys
import time

PHASES = ("forward", "to_launch", "call", "finalize", "optimizer", "step")


def task(ctx, model, bucket_mb, turns, block, warmup=3):
    import torch.distributed as dist

    from realrun.ddp import make_ddp, make_optimizer
    from realrun.workloads import cast_batch, load_workload

    w = load_workload(model)
    bare = w.build()
    d = make_ddp("torch-ddp", w.build(), bucket_mb, None)
    stamps = {"launch": [], "done": []}

    def hook(state, bucket):
        stamps["launch"].append(time.perf_counter())
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()

        def done(f):
            stamps["done"].append(time.perf_counter())
            return f.value()[0].div_(ctx.world_size)

        return fut.then(done)

    d.register_comm_hook(None, hook)
    setups = {"C": (bare, make_optimizer("naive", bare, "sgd")), "D": (d, make_optimizer("torch-ddp", d, "sgd"))}
    batch = cast_batch(w.make_batch(w.default_batch_size, 1000 + ctx.rank), device=ctx.device)
    rows, prev = [], None
    for i in range(warmup + turns):
        for k in (x for x in (("C", "D") if i % 2 == 0 else ("D", "C")) for _ in range(block)):
            m, opt = setups[k]
            opt.zero_grad(set_to_none=True)
            stamps["launch"].clear()
            stamps["done"].clear()
            dist.barrier()
            t0 = time.perf_counter()
            loss = w.loss(m, batch)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            opt.step()
            t3 = time.perf_counter()
            if i >= warmup:
                row = {"prev": prev, "this": k, "step": t3 - t0, "forward": t1 - t0, "optimizer": t3 - t2}
                if k == "D" and len(stamps["launch"]) == 1 and len(stamps["done"]) == 1:
                    la, dn = stamps["launch"][0], stamps["done"][0]
                    row.update(to_launch=la - t1, call=dn - la, finalize=t2 - dn)
                else:
                    row.update(backward=t2 - t1)
                rows.append(row)
            prev = k
    return rows


def main():
    import phases
    from left_work import run_on_two_ranks

    model, mb, turns, block, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    meta = {"model": model, "bucket_mb": mb, "turns": turns, "block": block}
    run_on_two_ranks(phases.task, (model, mb, turns, block), out, meta)
    report(out)


def report(path):
    d = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    print(
        f"{d['model']} torch-ddp {d['bucket_mb']:g} MiB, {d['turns']} turns, blocks of {d['block']}, started {d['started']}"
    )
    print("medians, ms: " + " / ".join(PHASES))
    for r, rows in enumerate(d["ranks"]):
        med = {}
        for prev in ("D", "C"):
            xs = [x for x in rows if x["this"] == "D" and x["prev"] == prev and "call" in x]
            med[prev] = {p: st.median(x[p] for x in xs) * 1e3 for p in PHASES}
            print(
                f"  rank {r} D after {prev}: " + " / ".join(f"{med[prev][p]:.3f}" for p in PHASES) + f" (n {len(xs)})"
            )
        print(f"  rank {r} difference:  " + " / ".join(f"{med['D'][p] - med['C'][p]:+.3f}" for p in PHASES))
        for prev in ("C", "D"):
            xs = [x for x in rows if x["this"] == "C" and x["prev"] == prev]
            print(f"  rank {r} C after {prev}: step {st.median(x['step'] for x in xs) * 1e3:.3f} (n {len(xs)})")


if __name__ == "__main__":
    if sys.argv[1] == "--report":
        report(sys.argv[2])
    else:
        main()
