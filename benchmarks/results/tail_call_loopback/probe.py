"""Is one all-reduce issued after compute slower than the calibration's back-to-back calls? micro-DLRM's one
4 MB bucket took a median 5.6 ms from launch inside torch DDP steps on loopback, where back-to-back calls of
the same size fit 3.85 ms (benchmarks/results/timeline_micro_dlrm_loopback). Two gloo ranks on loopback, one
intra-op thread each (as realrun's ranks); per size and mode, per call, both ranks timed (a call's time: the
slower rank's), after 3 warm-up calls:

- back_to_back: calls one after another (the calibration's stream probe), per call
- after_barrier: a barrier, then one call
- after_sleep_5ms: a barrier, 5 ms asleep, then one call
- after_compute_5ms: a barrier, about 5 ms of matmuls on the rank's thread, then one call
- after_compute_fresh: the same, then the call on a buffer just written (as DDP's bucket, copied into during
  backward)

    .venv/bin/python benchmarks/results/tail_call_loopback/probe.py [--sizes-kib 256,1024,4096] [--calls 30] [--out F]

The stored run (2026-11-25): printout ``probe_2026-11-25.txt``, raw per-call times per rank ``probe.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics as st
import sys
import time


def worker(rank: int, port: int, sizes_kib: list[int], calls: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    a = torch.randn(192, 192)
    b = torch.randn(192, 192)

    def compute(seconds: float) -> None:
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            torch.mm(a, b)

    res: dict[str, dict[str, list[float]]] = {}
    for kib in sizes_kib:
        t = torch.ones(kib * 256)
        src = torch.randn(kib * 256)
        for _ in range(3):
            dist.all_reduce(t)
        r: dict[str, list[float]] = {}
        dist.barrier()
        ts = []
        for _ in range(calls):
            t0 = time.perf_counter()
            dist.all_reduce(t)
            ts.append(time.perf_counter() - t0)
        r["back_to_back"] = ts
        for mode in ("after_barrier", "after_sleep_5ms", "after_compute_5ms", "after_compute_fresh"):
            ts = []
            for _ in range(calls):
                dist.barrier()
                if mode == "after_sleep_5ms":
                    time.sleep(0.005)
                elif mode.startswith("after_compute"):
                    compute(0.005)
                    if mode == "after_compute_fresh":
                        t.copy_(src)
                t0 = time.perf_counter()
                dist.all_reduce(t)
                ts.append(time.perf_counter() - t0)
            r[mode] = ts
        res[str(kib)] = r
    with open(f"{out}.rank{rank}", "w") as f:
        json.dump(res, f)
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", type=int)
    ap.add_argument("--sizes-kib", default="256,1024,4096")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--out", help="raw per-call times, JSON (default: probe.json in a new temporary folder)")
    ap.add_argument("--port", type=int, default=29677)
    a = ap.parse_args()
    if a.out is None and a.worker is None:
        import tempfile

        a.out = os.path.join(tempfile.mkdtemp(prefix="tail-call-probe-"), "probe.json")
        print(f"raw per-call times: {a.out}")
    sizes = [int(s) for s in a.sizes_kib.split(",")]
    if a.worker is not None:
        worker(a.worker, a.port, sizes, a.calls, a.out)
        return
    procs = [subprocess_rank(r, a) for r in range(2)]
    if any(p.wait(timeout=600) != 0 for p in procs):
        raise SystemExit("a rank failed")
    per_rank = []
    for r in range(2):
        with open(f"{a.out}.rank{r}") as f:
            per_rank.append(json.load(f))
        os.remove(f"{a.out}.rank{r}")
    with open(a.out, "w") as f:
        json.dump(per_rank, f)
    print("per call, the slower rank's time, ms: median (p10-p90); ratio of medians to back_to_back")
    for kib in per_rank[0]:
        base = None
        for mode in per_rank[0][kib]:
            if mode == "back_to_back":  # no barrier between calls: ranks' call boundaries are not aligned
                ms = sorted(x * 1e3 for x in per_rank[0][kib][mode] + per_rank[1][kib][mode])
            else:
                ms = sorted(max(x, y) * 1e3 for x, y in zip(per_rank[0][kib][mode], per_rank[1][kib][mode]))
            med = st.median(ms)
            base = base or med
            p10, p90 = ms[len(ms) // 10], ms[9 * len(ms) // 10]
            print(f"{kib:>6s} KiB {mode:20s} {med:7.2f} ({p10:.2f}-{p90:.2f})  x{med / base:.2f}")


def subprocess_rank(rank: int, a: argparse.Namespace):
    import subprocess

    cmd = [
        sys.executable,
        __file__,
        "--worker",
        str(rank),
        "--sizes-kib",
        a.sizes_kib,
        "--calls",
        str(a.calls),
        "--out",
        a.out,
        "--port",
        str(a.port),
    ]
    return subprocess.Popen(cmd)


if __name__ == "__main__":
    main()
