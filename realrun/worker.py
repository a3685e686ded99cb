"""One rank of a ``RankPool``: joins the process group once, then serves tasks.

Started by ``realrun.launch.RankPool`` as ``python -m realrun.worker ARGS``.
The parent talks to it over stdin/stdout with length-prefixed pickles
(``send_msg``/``recv_msg``); anything the task prints goes to stderr, which the
parent captures to a per-rank log file. Keep the import path lean: torch is
the only heavy import (each worker pays it at start), and it happens inside
``main`` so that ``realrun.launch`` can import the framing helpers for free.

Messages, parent -> worker: ``("run", fn, args, kwargs)``, ``("exit",)``.
Worker -> parent: ``("ready", info)``, ``("ok", result)``,
``("err", {"type", "message", "traceback", "collective"})``, ``("bye",)``.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, BinaryIO

_HEADER = struct.Struct("<Q")


@dataclass(frozen=True)
class RankContext:
    """What a task learns about the rank it runs on (first argument of every task).

    ``device`` is ``"cpu"`` (gloo) or ``"cuda:<local_rank>"`` (nccl). ``state``
    is a dict that lives as long as the worker: tasks may keep a model or
    buffers there between ``RankPool.run`` calls.
    """

    rank: int
    world_size: int
    backend: str
    device: str
    local_rank: int
    state: dict = field(default_factory=dict, compare=False, repr=False)


def frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def send_msg(fh: BinaryIO, obj: Any) -> None:
    fh.write(frame(obj))
    fh.flush()


def _read_exact(fh: BinaryIO, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = fh.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_msg(fh: BinaryIO) -> Any:
    """The next message, or ``None`` at end of stream."""
    head = _read_exact(fh, _HEADER.size)
    if head is None:
        return None
    (length,) = _HEADER.unpack(head)
    body = _read_exact(fh, length)
    if body is None:
        return None
    return pickle.loads(body)


def _watch_parent(parent_pid: int) -> None:
    """Exit if the parent goes away, even while a task is stuck in a collective."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(70)


# Messages of errors that a collective raises because *another* rank failed.
_PEER_FAILURE_HINTS = ("connection reset by peer", "connection closed by peer", "timed out", "gloo", "nccl")


def _error_payload(exc: BaseException, dist: Any) -> dict[str, Any]:
    collective = isinstance(exc, getattr(dist, "DistError", ())) or type(exc).__name__.startswith("Dist")
    if isinstance(exc, RuntimeError) and any(h in str(exc).lower() for h in _PEER_FAILURE_HINTS):
        collective = True
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        "collective": bool(collective),
    }


def bind_device(backend: str, local_rank: int) -> str:
    """The device a rank computes on: its own GPU under NCCL (made current), the CPU under gloo."""
    if backend == "nccl":
        import torch

        torch.cuda.set_device(local_rank)
        return f"cuda:{local_rank}"
    return "cpu"


def main(argv: list[str]) -> int:
    (rank, world_size, local_rank, backend, master_addr, master_port, pg_timeout_s, threads, parent_pid) = argv
    rank, world_size, local_rank = int(rank), int(world_size), int(local_rank)
    # The protocol owns the real stdout; fd 1 (print, C libraries) goes to stderr.
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    proto_in = sys.stdin.buffer
    threading.Thread(target=_watch_parent, args=(int(parent_pid),), daemon=True).start()
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the parent asks where a hung rank is

    import datetime

    import torch
    import torch.distributed as dist

    if int(threads) > 0:
        torch.set_num_threads(int(threads))
    try:
        device = bind_device(backend, local_rank)
        dist.init_process_group(
            backend,
            init_method=f"tcp://{master_addr}:{master_port}",
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=float(pg_timeout_s)),
        )
        from .binding import bind_main_thread

        # after the group exists, so gloo's threads (made while it is set up) keep the whole mask
        bound = bind_main_thread(local_rank, world_size, backend)  # a pool's ranks are all on this machine
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        send_msg(proto_out, ("err", _error_payload(e, dist)))
        return 3
    ctx = RankContext(rank, world_size, backend, device, local_rank)
    send_msg(
        proto_out,
        ("ready", {"pid": os.getpid(), "device": device, "threads": torch.get_num_threads(), "bound_cores": bound}),
    )

    while True:
        msg = recv_msg(proto_in)
        if msg is None or msg[0] == "exit":
            break
        _, fn, args, kwargs = msg
        try:
            result = fn(ctx, *args, **kwargs)
            out = frame(("ok", result))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = frame(("err", _error_payload(e, dist)))
        proto_out.write(out)
        proto_out.flush()
    try:
        dist.destroy_process_group()
    finally:
        send_msg(proto_out, ("bye",))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
