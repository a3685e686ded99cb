"""How much a plain compute loop varies on this VM, alone and beside a second one (one per core).

    OMP_NUM_THREADS=1 python noise.py                          (one process)
    OMP_NUM_THREADS=1 python noise.py & OMP_NUM_THREADS=1 python noise.py; wait     (two at once)

8 s of iterations of 20 300x300 float64 matmuls; prints the median, p10, p90 and the p10-p90 spread over the
median, and the machine's CPU jiffies over the run from /proc/stat (user, nice, system, idle, iowait, irq,
softirq, steal).
"""

import time

import numpy as np


def stat() -> list[int]:
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


a = np.random.default_rng(0).random((300, 300))
s0, t = stat(), []
end = time.time() + 8
while time.time() < end:
    t0 = time.perf_counter()
    for _ in range(20):
        a @ a
    t.append(time.perf_counter() - t0)
d = [y - x for x, y in zip(s0, stat())]
x = np.array(t) * 1e3
p10, med, p90 = np.percentile(x, [10, 50, 90])
print(f"iterations {len(x)}: median {med:.2f} ms, p10 {p10:.2f}, p90 {p90:.2f}, spread {(p90 - p10) / med * 100:.1f} %")
print("cpu jiffies user,nice,system,idle,iowait,irq,softirq,steal:", d[:8])
