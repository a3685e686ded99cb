"""The MFU the stored compute-only steps imply on device spec cpu-core, and this VM's single-thread matmul rate.

Run from the repository root: python benchmarks/results/cpu_core_mfu_2026-12-07/implied_mfu.py
Implied MFU = (forward + backward from the model's FLOPs at MFU 1 on cpu-core) / the measured compute-only step
(forward, backward and optimizer, one thread a rank, 2 ranks on the 2-vCPU VM).
"""

import glob
import json
import os
import time

import numpy as np

from simulator import zoo

dev = zoo.load_device("cpu-core")
for run in ("accuracy_matrix_m63links", "accuracy_matrix_m64loop", "accuracy_matrix_m66loop"):
    for cell in sorted(glob.glob(f"benchmarks/results/{run}/*/validation.json")):
        v = json.load(open(cell))
        name = v["model"].split(":")[0]
        if name not in zoo.list_models():
            continue
        p1 = zoo.profile_from_flops(zoo.load_model_spec(name), dev.with_values({"mfu": 1.0}), v["batch_size"])
        fb1, meas = p1.forward_s + p1.backward_s, v["measured_compute_s"]
        print(
            f"{run:26s} {cell.split('/')[-2]:20s} batch {v['batch_size']:4d} measured {meas * 1e3:7.2f} ms, "
            f"fwd+bwd at MFU 1 {fb1 * 1e3:7.2f} ms: implied MFU {fb1 / meas:.2f}"
        )
assert os.environ.get("OPENBLAS_NUM_THREADS") == "1", "run with OPENBLAS_NUM_THREADS=1 for one core's rate"
for n in (1024, 2048):
    a, b = (np.random.rand(n, n).astype(np.float32) for _ in range(2))
    rates = []
    for _ in range(5):
        a @ b
        t = time.perf_counter()
        for _ in range(10):
            a @ b
        rates.append(2 * n**3 / ((time.perf_counter() - t) / 10) / 1e9)
    print(f"numpy float32 matmul {n}x{n}, one thread, 5 runs of 10 calls: {sorted(round(r) for r in rates)} GFLOP/s")
