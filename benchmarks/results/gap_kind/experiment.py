"""Does a call cost more after a gap that moves memory than after one of matmuls of the same length?

Calibration's cold-call probe puts 2, 20 and 100 ms of 64x64 matmuls (cache-resident) before its call; a
training step's backward streams activations and gradients through memory. Here both ranks spend the same wall
time (a loop on perf_counter, so neither rank's work rate enters the timed call) on either kind of gap before one
all-reduce, interleaved, REPS times per size:
  call       another all-reduce of the same buffer right before (the stream probe's case);
  mm<G>      G ms of 64x64 matmuls (the cold-call probe's gap);
  mem<G>     G ms of writing a 256 MiB block 1 MiB at a time, cycling (more than the caches hold);
then the call's buffer is rewritten in every mode (as DDP copies gradients into the bucket just before).
A barrier before each gap; the time is the slower rank's launch-to-completion.

    SIZES_MIB=0.25,4 python benchmarks/results/gap_kind/experiment.py OUT.json [REPS] [GAPS_MS]   (GAPS_MS e.g. 3,20)
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

SIZES = tuple(int(float(x) * (1 << 20)) for x in os.environ.get("SIZES_MIB", "0.25,4").split(","))


def modes_for(gaps):
    return ["call"] + [f"{k}{g:g}" for g in gaps for k in ("mm", "mem")]


def rank_main(rank, world, init, reps, gaps, q):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    big = torch.empty(256 << 18)
    chunk = 1 << 18  # 1 MiB of float32
    a = torch.randn(64, 64)
    modes = modes_for(gaps)
    out, pos = {}, 0
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
                else:
                    g = float(m.lstrip("ame")) * 1e-3
                    t = time.perf_counter()
                    if m.startswith("mm"):
                        while time.perf_counter() - t < g:
                            a @ a
                    else:
                        while time.perf_counter() - t < g:
                            big[pos : pos + chunk].fill_(float(r))
                            pos = (pos + chunk) % big.numel()
                buf.fill_(1.0)
                t0 = time.perf_counter()
                dist.all_reduce(buf)
                times[m].append(time.perf_counter() - t0)
        out[nbytes] = times
    q.put((rank, out))
    dist.destroy_process_group()


def main():
    path = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    gaps = [float(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "3,20").split(",")]
    world = 2
    store = file_store()
    res = spawn(rank_main, [(r, world, store, reps, gaps) for r in range(world)])
    modes = modes_for(gaps)
    lines = [f"reps {reps}, gaps {gaps} ms, torch {torch.__version__}, cpus {os.cpu_count()}, 1 thread a rank"]
    lines.append("MiB    mode     median ms  mean ms  p10 ms  p90 ms  share > median(call)+2 ms")
    table = {}
    for nbytes in SIZES:
        slow = {m: [max(res[r][nbytes][m][k] for r in range(world)) for k in range(reps)] for m in modes}
        ref = statistics.median(slow["call"])
        for m in modes:
            xs = sorted(slow[m])
            table[f"{nbytes}:{m}"] = xs
            share = sum(x > ref + 2e-3 for x in xs) / len(xs)
            lines.append(
                f"{nbytes / (1 << 20):<6g} {m:7s} {statistics.median(xs) * 1e3:9.3f} {statistics.fmean(xs) * 1e3:8.3f} "
                f"{xs[len(xs) // 10] * 1e3:7.3f} {xs[(9 * len(xs)) // 10] * 1e3:7.3f}  {share * 100:5.0f}%"
            )
    text = "\n".join(lines)
    print(text)
    with open(path, "w") as f:
        json.dump({"reps": reps, "gaps_ms": gaps, "text": text, "slower_rank_s": table}, f)


if __name__ == "__main__":
    main()
