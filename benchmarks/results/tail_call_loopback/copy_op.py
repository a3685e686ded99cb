"""What one ``copy_`` of a just-written tensor costs by size on this VM (one thread): is DDP's ~10 us per
parameter in finalize (BENCHMARKS.md, micro-DLRM) the per-tensor copy-out?

    .venv/bin/python benchmarks/results/tail_call_loopback/copy_op.py
"""

import statistics as st
import time

import torch

torch.set_num_threads(1)
print("bytes  median_us  (2000 copies after 100 warm-up, source rewritten before each)")
for n in [64, 1024, 16384, 65536, 262144, 1 << 20]:
    s = torch.ones(n // 4)
    d = torch.empty_like(s)
    for _ in range(100):
        d.copy_(s)
    ts = []
    for _ in range(2000):
        s.mul_(1.0)
        t0 = time.perf_counter()
        d.copy_(s)
        ts.append(time.perf_counter() - t0)
    print(f"{n:8d} {st.median(ts) * 1e6:8.2f}")
