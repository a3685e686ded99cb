"""Is the emulated link a link? Transfers over ``realrun.netns.EmulatedNetwork`` (2 ranks, tbf on both
ends of each veth) timed per call with gloo on both ranks (a call's time: the slower rank's), back to back
and after idle, for several tbf settings.

A full-duplex link of R bit/s moves a message of n bytes in 8n/R s whether the link was idle before or
not, and sequential messages in alternating directions at the same rate as in one direction.

    .venv/bin/python benchmarks/results/tbf_link_fidelity/probe.py [--link-mbit 1000] [--configs burst4,burst1,burst2,peak]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

TABLE = 499_200  # one micro-DLRM embedding table, fp32 bytes (the sharded optimizer's broadcasts)
BIG = 4 * 2**20  # one bucket of all micro-DLRM's gradients


def worker(rank: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    small = torch.ones(TABLE // 4)
    big = torch.ones(BIG // 4)
    res: dict[str, list[float]] = {}

    def timed(name: str, fn, n: int, idle_s: float = 0.0) -> None:
        ts = []
        for _ in range(n):
            if idle_s:
                time.sleep(idle_s)
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        res[name] = ts

    for _ in range(3):  # warm-up
        dist.all_reduce(big)
        dist.broadcast(small, src=0)

    # back to back: a barrier, then the calls one after another; what counts is the series' total (a rank
    # that sends returns once its bytes are in the socket, so single calls of a series do not time the wire)
    def series(name: str, fn, n: int) -> None:
        dist.barrier()
        t0 = time.perf_counter()
        for i in range(n):
            fn(i)
        res[name] = [time.perf_counter() - t0]

    series("bcast_one_way_x12", lambda i: dist.broadcast(small, src=0), 12)
    series("bcast_alternating_x12", lambda i: dist.broadcast(small, src=i % 2), 12)
    timed("bcast_after_idle_50ms", lambda: dist.broadcast(small, src=0), 10, idle_s=0.05)
    series("allreduce_4MiB_back_to_back_x8", lambda i: dist.all_reduce(big), 8)
    timed("allreduce_4MiB_after_idle_100ms", lambda: dist.all_reduce(big), 8, idle_s=0.1)
    with open(f"{out}.rank{rank}", "w") as f:
        json.dump(res, f)
    dist.destroy_process_group()


def run_config(link_mbit: float, name: str, out_dir: str) -> dict[str, list[float]]:
    from realrun import netns

    rate = link_mbit * 1e6 / 8
    extra: list[str] = []
    burst = netns.tbf_burst_bytes(link_mbit)  # the shipped depth
    if name == "peak":  # the same bucket, drained at no more than 1.02x the rate (a 64 KiB peak bucket)
        extra = ["peakrate", f"{link_mbit * 1.02:g}mbit", "mtu", str(64 * 1024)]
    elif name.startswith("burst"):  # burstX: a bucket of X ms
        burst = max(64 * 1024, int(rate * float(name[5:]) / 1000))

    def tbf(self, ns: str, dev: str) -> None:
        netns._run(netns.tbf_command(ns, dev, link_mbit, burst, 50.0, tuple(extra)))

    netns.EmulatedNetwork._tbf = tbf  # type: ignore[method-assign]
    out = os.path.join(out_dir, f"{name}-{link_mbit:g}.json")
    with netns.EmulatedNetwork(2, link_mbit) as net:
        env0 = dict(os.environ, MASTER_ADDR=net.master_addr, MASTER_PORT="29655")
        procs = []
        for r in range(2):
            env = dict(env0, **net.rank_env[r], RANK=str(r), WORLD_SIZE="2")
            cmd = [*net.cmd_prefix[r], sys.executable, __file__, "--worker", str(r), "--out", out]
            procs.append(subprocess.Popen(cmd, env=env))
        for p in procs:
            if p.wait(timeout=300) != 0:
                raise SystemExit(f"rank failed in config {name}")
    per_rank = []
    for r in range(2):
        with open(f"{out}.rank{r}") as f:
            per_rank.append(json.load(f))
        os.remove(f"{out}.rank{r}")
    # a call is done when both ranks are: per call, the slower rank's time
    res = {k: [max(a, b) for a, b in zip(per_rank[0][k], per_rank[1][k])] for k in per_rank[0]}
    with open(out, "w") as f:
        json.dump({"per_call_max_over_ranks_s": res, "per_rank_s": per_rank}, f)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", type=int)
    ap.add_argument("--out")
    ap.add_argument("--link-mbit", type=float, default=1000.0)
    ap.add_argument("--configs", default="burst4,burst1")
    ap.add_argument("--dir", help="where the per-config JSON goes (default: a new temporary folder)")
    a = ap.parse_args()
    if a.worker is not None:
        worker(a.worker, a.out)
        return
    if a.dir is None:
        import tempfile

        a.dir = tempfile.mkdtemp(prefix="tbf-probe-")
    print(f"raw per-call times: {a.dir}")
    import numpy as np

    wire_small = TABLE * 8 / (a.link_mbit * 1e6) * 1e3
    wire_big = BIG * 8 / (a.link_mbit * 1e6) * 1e3
    print(f"link {a.link_mbit:g} Mbit/s: {TABLE} B on the wire {wire_small:.2f} ms, {BIG} B {wire_big:.2f} ms")
    for name in a.configs.split(","):
        res = run_config(a.link_mbit, name, a.dir)
        print(f"\n[{name}] the slower rank's time, ms (series: the whole series; single calls: median (min-max))")
        for k, ts in res.items():
            ms = np.array(ts) * 1e3
            n = int(k.rsplit("_x", 1)[1]) if "_x" in k else 1
            wire = (wire_big if "4MiB" in k else wire_small) * n
            if len(ms) == 1:
                print(f"  {k:34s} {ms[0]:7.1f}   (wire {wire:.1f}: x{ms[0] / wire:.2f})")
            else:
                print(
                    f"  {k:34s} {np.median(ms):7.2f} ({ms.min():.2f}-{ms.max():.2f})   (wire {wire:.2f}: "
                    f"x{np.median(ms) / wire:.2f})"
                )


if __name__ == "__main__":
    main()
