"""Rank side of ``burst.py``: bursts of small all-reduces launched at once, with the rank idle or computing."""

import statistics
import time
from typing import Any

SIZES = (4, 4096, 262144)
K = 16


def burst_probe(ctx: Any, reps: int = 40, compute_ms: float = 30.0) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    a = torch.randn(96, 96)
    out: dict[str, Any] = {"rank": ctx.rank, "threads": torch.get_num_threads()}
    for n in SIZES:
        bufs = [torch.ones(max(1, n // 4)) for _ in range(K)]
        for b in bufs:
            dist.all_reduce(b)
        res: dict[str, list[float]] = {"blocking": [], "idle": [], "busy": [], "busy_first": []}
        for r in range(reps):
            for mode in ("blocking", "idle", "busy") if r % 2 == 0 else ("busy", "idle", "blocking"):
                dist.barrier()
                if mode == "blocking":
                    t0 = time.perf_counter()
                    for b in bufs:
                        dist.all_reduce(b)
                    res[mode].append((time.perf_counter() - t0) / K)
                    continue
                done: list[float] = []
                t0 = time.perf_counter()
                works = [dist.all_reduce(b, async_op=True) for b in bufs]
                if mode == "busy":  # completions polled between matmuls (a callback would wait for the GIL)
                    left = list(range(K))
                    while time.perf_counter() - t0 < compute_ms / 1e3:
                        a @ a
                        if left:
                            now = time.perf_counter()
                            still = [i for i in left if not works[i].is_completed()]
                            done += [now] * (len(left) - len(still))
                            left = still
                    done += [time.perf_counter()] * len(left)
                for w in works:
                    w.wait()
                if mode == "idle":
                    res[mode].append((time.perf_counter() - t0) / K)
                else:
                    if len(done) == K:
                        res[mode].append((max(done) - t0) / K)
                        res["busy_first"].append(min(done) - t0)
        out[str(n)] = res
    return out


def summarize(per_rank: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    s: dict[str, dict[str, float]] = {}
    for n in SIZES:
        s[str(n)] = {}
        for mode in ("blocking", "idle", "busy", "busy_first"):
            rows = [r[str(n)][mode] for r in per_rank]
            m = min(len(x) for x in rows)
            per = [max(x[i] for x in rows) for i in range(m)]  # the slower rank's
            if per:
                s[str(n)][mode] = (statistics.median(per), statistics.fmean(per), len(per))
    return s
