"""A ping-pong between two processes over a pipe or a loopback TCP socket (TCP_NODELAY), no gloo, no torch.

    python benchmarks/results/gloo_loop_spin_2026-11-30/pingpong_tcp_pipe.py ROUNDS pipe|tcp [BYTES]

Each round: the parent sends BYTES, the child echoes them, then the parent counts to 2000 (a little compute).
Printed: the round trips' 10th percentile and median, the share more than 2 ms over the 10th percentile (as
``calibration.probes.fit_call_modes``), and ksoftirqd's CPU ns and runs over the rounds.
"""

from __future__ import annotations

import glob
import os
import socket
import statistics
import sys
import time


def ksoftirqd() -> dict[str, tuple[int, int]]:
    out = {}
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            with open(comm) as f:
                name = f.read().strip()
            if name.startswith("ksoftirqd"):
                with open(comm.rsplit("/", 1)[0] + "/schedstat") as f:
                    run, _, runs = (int(x) for x in f.read().split())
                out[name] = (run, runs)
        except OSError:
            pass
    return out


def recv_all(fd: int, n: int) -> bytes:
    got = b""
    while len(got) < n:
        got += os.read(fd, n - len(got))
    return got


def main() -> None:
    rounds, mode = int(sys.argv[1]), sys.argv[2]
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    if mode == "pipe":
        child_rd, parent_wr = os.pipe()
        parent_rd, child_wr = os.pipe()
    else:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        parent_rd = parent_wr = client.fileno()
        child_rd = child_wr = server.fileno()
    msg = b"x" * size
    k0 = ksoftirqd()
    pid = os.fork()
    if pid == 0:
        for _ in range(rounds):
            recv_all(child_rd, size)
            os.write(child_wr, msg)
        os._exit(0)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        os.write(parent_wr, msg)
        recv_all(parent_rd, size)
        times.append(time.perf_counter() - t0)
        x = 0
        for _ in range(2000):
            x += 1
    os.waitpid(pid, 0)
    k1 = ksoftirqd()
    soft = {k: (k1[k][0] - k0[k][0], k1[k][1] - k0[k][1]) for k in k1 if k in k0}
    s = sorted(times)
    base = s[len(s) // 10]
    slow = [t - base for t in s if t > base + 2e-3]
    print(
        f"{mode} bytes={size} rounds={rounds}: p10 {base * 1e6:.0f} us, median {statistics.median(times) * 1e6:.0f} us, "
        f"slow share {len(slow) / rounds:.3f}; ksoftirqd (CPU ns, runs): {soft}"
    )


if __name__ == "__main__":
    main()
