"""Rule E8 (rules.txt): what slows micro-DLRM's backward in a one-bucket step? A rank task (``run_e8.py`` starts it).

Each rank steps a bare micro-DLRM (no DDP: forward, backward, SGD step) and, after each step, one of:
  none      nothing
  tiny      an all-reduce of one float (the ranks kept in step, no data)
  allreduce an all-reduce of a buffer as large as the gradients (3.84 MiB), not the gradients
  copy      the same bytes copied twice in memory (a buffer out and back), no call
  sleep     3 ms asleep (about the all-reduce's time)
in turns of ``block`` steps of one mode, the modes rotating, and times each step's forward, backward and optimizer."""

import time

import torch
import torch.distributed as dist

MODES = ("none", "tiny", "allreduce", "copy", "sleep")


def e8(ctx, turns: int, block: int, warm_turns: int = 2) -> dict:
    from realrun.workloads import load_workload

    wl = load_workload("micro-dlrm")
    model = wl.build()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = wl.make_batch(128, seed=ctx.rank)
    n = sum(p.numel() for p in model.parameters())
    buf, other, one = torch.randn(n), torch.empty(n), torch.ones(1)
    out: dict = {m: [] for m in MODES}
    for turn in range(warm_turns + turns):
        for mode in MODES:
            for _ in range(block):
                t0 = time.perf_counter()
                loss = wl.loss(model, batch)
                t1 = time.perf_counter()
                loss.backward()
                t2 = time.perf_counter()
                opt.step()
                opt.zero_grad(set_to_none=False)
                t3 = time.perf_counter()
                if mode == "tiny":
                    dist.all_reduce(one)
                elif mode == "allreduce":
                    dist.all_reduce(buf)
                elif mode == "copy":
                    other.copy_(buf)
                    buf.copy_(other)
                elif mode == "sleep":
                    time.sleep(0.003)
                if turn >= warm_turns:
                    out[mode].append((t1 - t0, t2 - t1, t3 - t2))
            dist.barrier()
    return {"grad_bytes": 4 * n, "steps": out}
