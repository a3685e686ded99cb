"""Rule E9 (rules.txt): the backward of micro-DLRM bare, and under torch DDP at one bucket with a comm hook that does
nothing (no call: DDP's hooks, the copies into the bucket and back, its finalize) and with the default all-reduce.
A rank task (``run_e9.py`` starts it); turns of ``block`` steps a mode, rotating; loss.backward() timed (under DDP it
returns after the bucket's work is done and copied back)."""

import time

import torch
import torch.distributed as dist

MODES = ("bare", "ddp_noop", "ddp_allreduce")


def _noop(state, bucket):
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def e9(ctx, turns: int, block: int, warm_turns: int = 2) -> dict:
    from torch.nn.parallel import DistributedDataParallel as DDP

    from realrun.workloads import load_workload

    wl = load_workload("micro-dlrm")
    models = {"bare": wl.build()}
    for m in ("ddp_noop", "ddp_allreduce"):
        models[m] = DDP(wl.build(), bucket_cap_mb=4)
    models["ddp_noop"].register_comm_hook(None, _noop)
    opts = {m: torch.optim.SGD(mod.parameters(), lr=0.01) for m, mod in models.items()}
    batch = wl.make_batch(128, seed=ctx.rank)
    out: dict = {m: [] for m in MODES}
    for turn in range(warm_turns + turns):
        for mode in MODES:
            model, opt = models[mode], opts[mode]
            for _ in range(block):
                t0 = time.perf_counter()
                loss = wl.loss(model, batch)
                t1 = time.perf_counter()
                loss.backward()
                t2 = time.perf_counter()
                opt.step()
                opt.zero_grad(set_to_none=False)
                t3 = time.perf_counter()
                if turn >= warm_turns:
                    out[mode].append((t1 - t0, t2 - t1, t3 - t2))
            dist.barrier()
    return {"steps": out}
