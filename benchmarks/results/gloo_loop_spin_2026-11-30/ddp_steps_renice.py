"""micro-DLRM's steps on 2 gloo ranks on loopback with gloo's network threads at nice 0 and at nice 19.

    PYTHONPATH=.:benchmarks/results/gloo_loop_spin_2026-11-30 python -m ddp_steps_renice OUT.json

One pool; phases N R N R N, each ``measure_interleaved`` of torch DDP at 0.25 and 64 MiB, ``individual`` and
compute-only steps in turns of 10 timed steps after an untimed one (40 turns); before an R phase each rank renices
its ``gloo_tcp_loop`` thread to 19, before an N phase back to 0. Printed: each configuration's median step (ms)
per phase and the network threads' CPU per timed step; raw per-step times in OUT.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

BLOCK = 10
CONFIGS = [("torch-ddp", 0.25), ("torch-ddp", 64.0), ("individual", None), ("compute", None)]


def renice_network(ctx, nice: int) -> int:
    """Set this rank's gloo network threads' nice value; returns how many it found."""
    found = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().strip() != "gloo_tcp_loop":
                    continue
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
            found += 1
        except OSError:
            continue
    return found


def network_cpu_ns() -> int:
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().strip() != "gloo_tcp_loop":
                        continue
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
        except OSError:
            continue
    return total


def main() -> None:
    import ddp_steps_renice as me  # the ranks import their tasks by module name

    from calibration.calibrate import open_pool
    from realrun.bench_ddp import measure_interleaved

    out = sys.argv[1]
    rows = []
    with open_pool(2, "gloo", None, 600.0) as pool:
        t0 = time.monotonic()
        for phase in ("N1", "R1", "N2", "R2", "N3"):
            found = pool.run(me.renice_network, 19 if phase.startswith("R") else 0)
            c0 = network_cpu_ns()
            start = time.monotonic() - t0
            res = measure_interleaved(pool, "micro-dlrm", CONFIGS, None, 40 * BLOCK, 1, "sgd", BLOCK)
            cpu = (network_cpu_ns() - c0) / 1e6 / sum(len(r.step_times_s) for r in res)
            meds = {f"{r.strategy} {r.bucket_mb}": statistics.median(r.step_times_s) * 1e3 for r in res}
            rows.append(
                {
                    "phase": phase,
                    "start_s": start,
                    "network_threads_found": found,
                    "network_cpu_ms_per_timed_step": cpu,
                    "configs": [
                        {"strategy": r.strategy, "bucket_mb": r.bucket_mb, "step_times_s": list(r.step_times_s)}
                        for r in res
                    ],
                }
            )
            print(
                f"{phase} at {start:5.1f} s (network threads found {found}): "
                + ", ".join(f"{k} {v:.2f} ms" for k, v in meds.items())
                + f"; network threads' CPU {cpu:.2f} ms per timed step",
                flush=True,
            )
    with open(out, "w") as f:
        json.dump({"model": "micro-dlrm", "block": BLOCK, "phases": rows}, f)


if __name__ == "__main__":
    main()
