"""Measure one CPU core's float32 matmul rate and memory copy bandwidth (numpy only).

Run with one BLAS thread so the figures describe a single core::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        python scripts/measure_cpu_core.py [--repeats 20]

Prints one JSON object: per-size sgemm rates (FLOP/s, a multiply-add counted as
2 FLOPs) and copy bandwidth (bytes read + bytes written per second), each as the
median and spread of ``--repeats`` timed runs after warm-up. The numbers behind
``simulator/data/devices/cpu-core.json`` came from this script.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np


def _times_s(fn, repeats: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _summary(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {
        "median": statistics.median(values),
        "p10": values[len(values) // 10],
        "p90": values[(len(values) * 9) // 10],
        "max": values[-1],
    }


def measure_sgemm(n: int, repeats: int) -> dict[str, object]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    flops = 2.0 * n * n * n
    rates = [flops / t for t in _times_s(lambda: np.matmul(a, b, out=c), repeats)]
    return {"n": n, "flops_per_s": _summary(rates)}


def measure_copy(n_bytes: int, repeats: int) -> dict[str, object]:
    src = np.ones(n_bytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    moved = 2.0 * src.nbytes  # read src + write dst
    rates = [moved / t for t in _times_s(lambda: np.copyto(dst, src), repeats)]
    return {"bytes": src.nbytes, "bytes_per_s": _summary(rates)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    threads = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    result = {
        "host": platform.node(),
        "processor": platform.processor() or platform.machine(),
        "numpy": np.__version__,
        "thread_env": threads,
        "sgemm": [measure_sgemm(n, args.repeats) for n in (256, 512, 1024, 2048)],
        "copy": [measure_copy(n, args.repeats) for n in (64 << 20, 256 << 20)],
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
