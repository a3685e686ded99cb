"""Emulated links: namespaces come and go, and a tbf-limited link limits all-reduce to its rate."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from realrun import netns
from realrun.launch import RankPool

HAVE_NETNS = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip") and shutil.which("tc")
needs_root = pytest.mark.skipif(not HAVE_NETNS, reason="needs root and iproute2")
pytestmark = pytest.mark.netns


def _ours(tag):
    return [n for n in netns.list_namespaces() if n.startswith(tag)]


def test_arguments_checked_without_touching_the_system():
    with pytest.raises(ValueError, match="Mbit/s"):
        netns.EmulatedNetwork(2, 0)
    with pytest.raises(ValueError, match="ranks"):
        netns.EmulatedNetwork(0, 100)
    net = netns.EmulatedNetwork(3, 100)
    assert net.master_addr == "10.231.0.1"
    assert net.rank_env[2]["GLOO_SOCKET_IFNAME"] == "e2"
    assert net.cmd_prefix[1] == ["ip", "netns", "exec", f"{net.tag}-r1"]
    assert netns.tbf_burst_bytes(1000) == 125_000  # 1 ms at 125 MB/s
    assert netns.tbf_burst_bytes(200) == 65536  # 1 ms at 25 MB/s is less than one GSO packet
    assert netns.tbf_burst_bytes(10) == 65536
    cmd = netns.tbf_command("ns0", "e0", 1000, 125_000, 50)
    assert cmd[:3] == ["tc", "-n", "ns0"] and cmd[cmd.index("rate") + 1] == "1000mbit"
    assert cmd[cmd.index("burst") + 1] == "125000" and cmd[-2:] == ["latency", "50ms"]


def test_without_root_the_command_is_skipped(monkeypatch, capsys):
    from ddpsim.cli import main

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(netns.NetnsUnavailable, match="root"):
        netns.require_netns()
    assert main(["bench-allreduce", "--sizes", "4K", "--link-mbit", "100"]) == 0
    assert "skipped: needs root" in capsys.readouterr().err


def measure_allreduce(ctx, numel, iters):
    import time

    import torch
    import torch.distributed as dist

    x = torch.zeros(numel)
    dist.all_reduce(x)  # warm-up
    times = []
    for _ in range(iters):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(x)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


@needs_root
@pytest.mark.slow
def test_200_mbit_link_gives_about_200_mbit_of_algbw():
    msg_bytes = 4 << 20
    with netns.EmulatedNetwork(2, 200) as net:
        assert sorted(_ours(net.tag)) == sorted([net.hub, *net.rank_ns])
        with RankPool(2, timeout_s=60, **net.pool_kwargs()) as pool:
            median_s = max(pool.run(measure_allreduce, msg_bytes // 4, 3))
    assert _ours(net.tag) == []
    algbw_mbit = msg_bytes * 8 / median_s / 1e6
    # 2 ranks: each sends and receives msg_bytes/2 twice = msg_bytes per direction over its
    # 200 Mbit/s link; TCP/IP headers take ~3-5%, loopback would be ~50x faster.
    assert 150 < algbw_mbit < 205, algbw_mbit


@needs_root
def test_namespaces_removed_on_error_and_stale_ones_cleaned():
    with pytest.raises(RuntimeError, match="inside"):
        with netns.EmulatedNetwork(2, 100) as net:
            tag = net.tag
            assert len(_ours(tag)) == 3
            raise RuntimeError("inside")
    assert _ours(tag) == []
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"{netns.PREFIX}{dead.pid}-test-r0"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    try:
        assert stale in netns.cleanup_stale()
        assert stale not in netns.list_namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", stale], capture_output=True)
