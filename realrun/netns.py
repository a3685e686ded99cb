"""Emulated links: ranks in their own network namespaces, joined by rate-limited veth pairs.

``EmulatedNetwork(world_size, link_mbit)`` builds, on entry::

    ddpsim-<pid>-hub   a bridge br0, and the hub end h<i> of every rank's veth pair
    ddpsim-<pid>-r<i>  lo, and the rank end e<i> with address 10.231.0.<i+1>/24

with ``tc qdisc ... root tbf rate <link_mbit>mbit`` on both ends of every veth
pair, so each rank's link to the hub carries at most ``link_mbit`` Mbit/s in
each direction. The /24 exists only inside these namespaces (each hub is its
own layer-2 domain), so concurrent runs cannot collide and the host's network
is never touched. It yields itself; ``pool_kwargs()`` gives ``cmd_prefix``
(``ip netns exec NS``), ``rank_env`` (``GLOO_SOCKET_IFNAME=e<i>``: without it
gloo binds loopback and ranks cannot connect) and ``master_addr`` for
``RankPool``.

Every namespace it created is removed on exit, on exceptions, on SIGINT and
SIGTERM (turned into ``SystemExit`` while the network exists); namespaces left
by a process that was killed outright are removed by ``cleanup_stale()``,
which entering also calls. Needs root and iproute2 (``ip``, ``tc``); otherwise
``NetnsUnavailable`` is raised, which commands report as "skipped: needs root".
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

PREFIX = "ddpsim-"
SUBNET = "10.231.0"  # a private /24, used only inside this module's namespaces
MAX_RANKS = 250
_STALE_RE = re.compile(rf"^{re.escape(PREFIX)}(\d+)-")


class NetnsUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not root, no iproute2, or not permitted)."""


def require_netns() -> None:
    """Raise ``NetnsUnavailable`` unless this process can build emulated networks."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise NetnsUnavailable("emulated links need root (Linux network namespaces)")
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        raise NetnsUnavailable(f"emulated links need iproute2: {', '.join(missing)} not found")


def _run(cmd: Sequence[str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        msg = proc.stderr.strip() or proc.stdout.strip() or f"exit code {proc.returncode}"
        raise NetnsUnavailable(f"`{' '.join(cmd)}` failed: {msg}")
    return proc


def list_namespaces() -> list[str]:
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cleanup_stale() -> list[str]:
    """Remove ``ddpsim-<pid>-*`` namespaces whose creating process is dead; returns their names."""
    removed = []
    for name in list_namespaces():
        m = _STALE_RE.match(name)
        if m and not _pid_alive(int(m.group(1))):
            if _run(["ip", "netns", "del", name], check=False).returncode == 0:
                removed.append(name)
    return removed


TBF_BURST_S = 0.001
"""tbf's bucket depth in seconds at the link rate. A link has no credit: a transfer after idle lets its
first ``burst`` bytes through at veth speed, so the bucket is as shallow as keeps the rate. Measured
(``benchmarks/results/tbf_link_fidelity``, 2 gloo ranks, 1000 Mbit/s): with 4 ms a 0.48 MiB broadcast
after idle took 0.15x its wire time and one-owner-at-a-time broadcasts 0.52x; with 1 ms 0.87x and 0.85x,
and back-to-back 4 MiB all-reduces ran at the same rate (x1.05 the wire time with either); 0.5 ms lost
the rate (725 Mbit/s)."""


def tbf_burst_bytes(link_mbit: float) -> int:
    """Bucket depth for tbf: ``TBF_BURST_S`` at the link rate, at least 64 KiB (one GSO packet must fit)."""
    return max(64 * 1024, int(link_mbit * 1e6 / 8 * TBF_BURST_S))


def tbf_command(
    ns: str, dev: str, link_mbit: float, burst_bytes: int, latency_ms: float, extra: tuple[str, ...] = ()
) -> list[str]:
    """The ``tc`` command that puts a tbf rate limit on ``dev`` in namespace ``ns`` (``extra``: more tbf options)."""
    return [
        *("tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{link_mbit:g}mbit"),
        *("burst", str(burst_bytes), "latency", f"{latency_ms:g}ms", *extra),
    ]


class EmulatedNetwork:
    """Per-rank namespaces joined through a bridge by veth links of ``link_mbit`` Mbit/s.

    The constructor only checks arguments; the namespaces exist between
    ``__enter__`` and ``__exit__``.
    """

    def __init__(self, world_size: int, link_mbit: float, *, queue_latency_ms: float = 50.0):
        if not isinstance(world_size, int) or not 1 <= world_size <= MAX_RANKS:
            raise ValueError(f"emulated network needs 1 to {MAX_RANKS} ranks, got {world_size!r}")
        if not isinstance(link_mbit, (int, float)) or not link_mbit > 0 or link_mbit != link_mbit:
            raise ValueError(f"link rate must be a positive number of Mbit/s, got {link_mbit!r}")
        if not queue_latency_ms > 0:
            raise ValueError(f"queue latency must be positive ms, got {queue_latency_ms!r}")
        self.world_size = world_size
        self.link_mbit = float(link_mbit)
        self.queue_latency_ms = float(queue_latency_ms)
        self.tag = f"{PREFIX}{os.getpid()}-{id(self) & 0xFFFF:04x}"
        self.hub = f"{self.tag}-hub"
        self.rank_ns = [f"{self.tag}-r{i}" for i in range(world_size)]
        self.rank_ifaces = [f"e{i}" for i in range(world_size)]
        self.addresses = [f"{SUBNET}.{i + 1}" for i in range(world_size)]
        self._created: list[str] = []
        self._old_handlers: dict[int, Any] = {}

    # ---------------------------------------------------------------- for RankPool
    @property
    def master_addr(self) -> str:
        return self.addresses[0]

    @property
    def cmd_prefix(self) -> list[list[str]]:
        return [["ip", "netns", "exec", ns] for ns in self.rank_ns]

    @property
    def rank_env(self) -> list[dict[str, str]]:
        return [
            {"GLOO_SOCKET_IFNAME": ifc, "TP_SOCKET_IFNAME": ifc, "NCCL_SOCKET_IFNAME": ifc} for ifc in self.rank_ifaces
        ]

    def pool_kwargs(self) -> dict[str, Any]:
        return {"cmd_prefix": self.cmd_prefix, "rank_env": self.rank_env, "master_addr": self.master_addr}

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> EmulatedNetwork:
        require_netns()
        cleanup_stale()
        self._install_signal_handlers()
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    def _add_ns(self, name: str) -> None:
        _run(["ip", "netns", "add", name])
        self._created.append(name)
        _run(["ip", "-n", name, "link", "set", "lo", "up"])

    def _tbf(self, ns: str, dev: str) -> None:
        _run(tbf_command(ns, dev, self.link_mbit, tbf_burst_bytes(self.link_mbit), self.queue_latency_ms))

    def _build(self) -> None:
        self._add_ns(self.hub)
        _run(["ip", "-n", self.hub, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", self.hub, "link", "set", "br0", "up"])
        for i, (ns, ifc, addr) in enumerate(zip(self.rank_ns, self.rank_ifaces, self.addresses)):
            self._add_ns(ns)
            hub_end = f"h{i}"
            _run(["ip", "-n", self.hub, "link", "add", hub_end, "type", "veth", "peer", "name", ifc, "netns", ns])
            _run(["ip", "-n", self.hub, "link", "set", hub_end, "master", "br0"])
            _run(["ip", "-n", self.hub, "link", "set", hub_end, "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", ifc])
            _run(["ip", "-n", ns, "link", "set", ifc, "up"])
            self._tbf(self.hub, hub_end)
            self._tbf(ns, ifc)

    def teardown(self) -> None:
        """Remove every namespace this network created (idempotent)."""
        while self._created:
            _run(["ip", "netns", "del", self._created.pop()], check=False)
        self._restore_signal_handlers()

    # ---------------------------------------------------------------- signals
    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def on_term(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        self._old_handlers[signal.SIGTERM] = signal.signal(signal.SIGTERM, on_term)

    def _restore_signal_handlers(self) -> None:
        for signum, handler in self._old_handlers.items():
            if threading.current_thread() is threading.main_thread():
                signal.signal(signum, handler)
        self._old_handlers.clear()


def netns_skip_reason(link_mbit: float | None) -> str | None:
    """Why emulated links of ``link_mbit`` cannot be made here (None: no link asked, or they can)."""
    if link_mbit is None:
        return None
    try:
        require_netns()
    except NetnsUnavailable as e:
        return str(e)
    return None
