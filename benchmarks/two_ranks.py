"""The harness of the two-rank call experiments (benchmarks/results/cold_call/gap_experiment.py,
benchmarks/results/omp_wait_policy/threads_experiment.py): spawn two gloo ranks running ``run(rank, queue)``,
each putting ``(rank, {key: [(t0, t1), ...]})``; store both ranks' stamps as JSON and summarise each key.
Per call the duration is the last rank's launch to the last completion (one machine's clock).

``spawn`` alone (benchmarks/results/cache_cold_calls/experiment.py, benchmarks/results/gap_kind/experiment.py):
the processes and the queue, for experiments that keep their own output; ``file_store`` gives them a fresh
``file://`` rendezvous for ``init_process_group``."""

import json
import os
import sys
import tempfile

import numpy as np
import torch.multiprocessing as mp


def stats(path):
    """Per key: calls, median, p10, p90, mean and the mean of the lowest 90 %, in ms."""
    for key, (r0, r1) in json.load(open(path)).items():
        a0, a1 = np.array(r0), np.array(r1)
        dur = np.maximum(a0[:, 1], a1[:, 1]) - np.maximum(a0[:, 0], a1[:, 0])
        q = np.quantile(dur, [0.1, 0.5, 0.9]) * 1e3
        trim = np.sort(dur)[: int(0.9 * len(dur))].mean() * 1e3
        print(
            f"{key:>22}: n {len(dur)} median {q[1]:7.3f} ms, p10 {q[0]:7.3f}, p90 {q[2]:7.3f}, "
            f"mean {dur.mean() * 1e3:7.3f}, lowest 90% mean {trim:7.3f}"
        )


def spawn(target, args_per_rank):
    """``target(*args, queue)`` in a spawned process for each ``args`` of ``args_per_rank``; each puts
    ``(rank, result)`` on the queue. Returns ``{rank: result}`` once all have put theirs and exited."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=target, args=(*args, q)) for args in args_per_rank]
    for p in ps:
        p.start()
    res = dict(q.get() for _ in ps)
    for p in ps:
        p.join()
    return res


def file_store():
    """A fresh ``file://`` init method for ``init_process_group`` (a path that does not exist yet)."""
    fd, path = tempfile.mkstemp()
    os.close(fd)
    os.unlink(path)
    return f"file://{path}"


def main(run, argv=None):
    """``SCRIPT OUT.json`` runs the experiment and writes OUT.json; ``SCRIPT --stats OUT.json`` summarises one."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[0] == "--stats":
        stats(argv[1])
        return
    res = spawn(run, [(r,) for r in range(2)])
    json.dump({k: [res[0][k], res[1][k]] for k in res[0]}, open(argv[0], "w"))
    stats(argv[0])
