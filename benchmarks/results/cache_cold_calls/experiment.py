"""Is an all-reduce slower, per byte, after work that sweeps memory than in calibration's back-to-back loop?

Two gloo ranks on loopback; per size (0.25, 1, 4, 16 MiB) one all-reduce timed (launch to completion, the
slower rank's) after each of, interleaved, REPS times:
  barrier  nothing: the barrier, then the call (what calibration's all-reduce probe times);
  call     another all-reduce of the same buffer (what the stream probe times);
  compute  5 ms of 64x64 matmuls (what the cold-call probe puts before its call: caches keep their lines);
  sweep    writing a 256 MiB block (a training step's forward and backward move more than the caches hold),
           then the call's buffer rewritten (as DDP copies gradients into its bucket just before the call).
Two passes: "hot" times barrier, call and compute alone (as calibration's probes run: nothing else touches memory),
"swept" all four interleaved (the others there follow a sweep a few calls back). "vs hot" is over the
hot pass's barrier-then-call median.

    python benchmarks/results/cache_cold_calls/experiment.py OUT.json [THREADS] [REPS]
"""

import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/: the shared harness
from two_ranks import file_store, spawn  # noqa: E402

SIZES = (256 << 10, 1 << 20, 4 << 20, 16 << 20)
MODES = ("barrier", "call", "compute", "sweep")
PASSES = {"hot": ("barrier", "call", "compute"), "swept": MODES}


def rank_main(rank: int, world: int, init: str, threads: int, reps: int, q) -> None:
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    big = torch.empty(256 << 18)  # 256 MiB of float32
    a = torch.randn(64, 64)
    out = {}
    for pname, modes in PASSES.items():
        for nbytes in SIZES:
            buf = torch.ones(nbytes // 4)
            for _ in range(3):
                dist.all_reduce(buf)
            times = {m: [] for m in modes}
            for r in range(reps):
                for m in modes:
                    dist.barrier()
                    if m == "call":
                        dist.all_reduce(buf)
                    elif m == "barrier":
                        pass
                    elif m == "compute":
                        t = time.perf_counter()
                        while time.perf_counter() - t < 5e-3:
                            a @ a
                    else:
                        big.fill_(float(r))
                        buf.fill_(1.0)
                    t0 = time.perf_counter()
                    dist.all_reduce(buf)
                    times[m].append(time.perf_counter() - t0)
            out[f"{pname}:{nbytes}"] = times
    q.put((rank, out))
    dist.destroy_process_group()


def main() -> None:
    path = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    world = 2
    store = file_store()
    res = spawn(rank_main, [(r, world, store, threads, reps) for r in range(world)])
    table = {}
    lines = [f"threads {threads}, reps {reps}, torch {torch.__version__}, cpus {os.cpu_count()}"]
    lines.append("pass   MiB    mode      median ms  p10 ms  p90 ms  vs hot barrier")
    for nbytes in SIZES:
        base = None
        for pname, modes in PASSES.items():
            key = f"{pname}:{nbytes}"
            slow = {m: [max(res[r][key][m][k] for r in range(world)) for k in range(reps)] for m in modes}
            base = base or statistics.median(slow["barrier"])
            for m in modes:
                xs = sorted(slow[m])
                med = statistics.median(xs)
                table[f"{key}:{m}"] = xs
                lines.append(
                    f"{pname:6s} {nbytes / (1 << 20):<6g} {m:8s} {med * 1e3:9.3f} {xs[len(xs) // 10] * 1e3:7.3f} "
                    f"{xs[(9 * len(xs)) // 10] * 1e3:7.3f}  {med / base:6.2f}x"
                )
    text = "\n".join(lines)
    print(text)
    with open(path, "w") as f:
        json.dump({"threads": threads, "reps": reps, "text": text, "slower_rank_s": table}, f)


if __name__ == "__main__":
    main()
