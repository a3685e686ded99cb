"""Measure the per-kernel floor of eager torch on this machine: the time of one tiny op.

Run with one thread so the figure describes a single core::

    OMP_NUM_THREADS=1 python scripts/measure_launch_floor.py [--repeats 7]

Times ``--calls`` back-to-back calls of three tiny ops (``add`` and ``mul`` of
8-element float32 tensors, a 8x8 ``mm``) and one autograd round (``(a * b).sum()``
forward and backward, counted as its 4 kernels), each ``--repeats`` times after a
warm-up, and prints one JSON object with the medians per kernel. On a GPU
(``--cuda``) the ops run on the device and the clock stops after a synchronize:
the floor is then the larger of the launch and the framework's CPU dispatch.
The ``launch_s`` of ``simulator/data/devices/cpu-core.json`` came from this script.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch


def _per_call_s(fn, calls: int, repeats: int, sync) -> list[float]:
    for _ in range(max(calls // 10, 10)):
        fn()
    sync()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        out.append((time.perf_counter() - t0) / calls)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cuda", action="store_true")
    args = ap.parse_args()
    dev = "cuda" if args.cuda else "cpu"
    sync = torch.cuda.synchronize if args.cuda else (lambda: None)
    a = torch.randn(8, device=dev)
    b = torch.randn(8, device=dev)
    m = torch.randn(8, 8, device=dev)
    w = torch.randn(8, device=dev, requires_grad=True)

    def autograd_round() -> None:
        (w * a).sum().backward()  # mul, sum; backward: sum's expand, mul's grad (+ accumulate)

    res = {
        "add": _per_call_s(lambda: torch.add(a, b), args.calls, args.repeats, sync),
        "mul": _per_call_s(lambda: torch.mul(a, b), args.calls, args.repeats, sync),
        "mm_8x8": _per_call_s(lambda: torch.mm(m, m), args.calls, args.repeats, sync),
        "autograd_round_per_kernel": [t / 4 for t in _per_call_s(autograd_round, args.calls // 10, args.repeats, sync)],
    }
    print(
        json.dumps(
            {
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "device": dev,
                "machine": platform.processor() or platform.machine(),
                "per_kernel_s_median": {k: statistics.median(v) for k, v in res.items()},
                "per_kernel_s_runs": res,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
