"""Binding a rank's main thread to cores of its own, as MPI launchers bind ranks.

On a CPU box with fewer free cores than busy threads, where the scheduler puts each rank's threads decides the
step: micro-DLRM's `individual` steps (52 calls) on loopback, 2 gloo ranks on this 2-core VM, ran a median of
15.5-22.6 ms with the placement left to the scheduler, 7.0-8.7 ms with each rank's main thread bound to a core of
its own and gloo's threads left free, and 35.8-37.1 ms with all of a rank's threads bound to one core (a call's
hand-off then waits behind the rank's own backward for a scheduler slice); BENCHMARKS.md, "Twenty-eighth session",
benchmarks/results/step_regimes_pinning_2026-11-30/.

Only the calling thread is bound (Linux's ``sched_setaffinity`` on thread id 0), and only after the process
group exists, so gloo's threads (made while it is set up) keep the whole mask and run wherever a core is free;
threads the main thread makes afterwards (OpenMP's pool) inherit its cores. Gloo ranks of a ``RankPool`` only:
NCCL makes its threads later, from the bound thread, and under ``torchrun`` the ranks are the launcher's.
Asked for where it cannot be done, it is refused, so that a record saying ``"bind": "mains"`` was bound.
"""

from __future__ import annotations

import os

BIND_ENV = "DDPSIM_BIND"  # "mains": bind each rank's main thread; "none" or unset: leave placement alone


def bind_mode() -> str:
    """``DDPSIM_BIND``'s mode: "mains" or "none" (unset or empty: "none"; either in any case); else refused."""
    value = os.environ.get(BIND_ENV, "").strip()
    if value.lower() in ("", "none"):
        return "none"
    if value.lower() == "mains":
        return "mains"
    shown = repr(value) if len(value) <= 40 else f"{value[:40]!r}... ({len(value)} characters)"
    raise ValueError(
        f"{BIND_ENV}={shown}: give 'mains' (each rank's main thread on cores of its own) or 'none', or unset it"
    )


def rank_cores(local_rank: int, local_world: int, cpus: list[int]) -> list[int] | None:
    """The cores of ``cpus`` that local rank ``local_rank`` of ``local_world`` gets: an equal, contiguous share;
    ``None`` where there are fewer cores than ranks (no share to give)."""
    if local_world < 1 or not 0 <= local_rank < local_world:
        raise ValueError(f"local rank {local_rank} is not one of {local_world}")
    k = len(cpus) // local_world
    if k < 1:
        return None
    return sorted(cpus)[local_rank * k : (local_rank + 1) * k]


def refusal(local_world: int, backend: str, n_cpus: int) -> str | None:
    """Why ``local_world`` ranks of ``backend`` on ``n_cpus`` cores cannot be bound as "mains" asks (one line),
    or ``None`` where they can. The pool asks before it starts a rank; each rank again before it binds."""
    if backend != "gloo":
        return f"{BIND_ENV}=mains binds gloo ranks on a CPU, not {backend} ranks: unset it"
    if not hasattr(os, "sched_setaffinity"):
        return f"{BIND_ENV}=mains: this platform cannot bind threads (no sched_setaffinity): unset it"
    if n_cpus < local_world:
        return f"{BIND_ENV}=mains: {local_world} ranks cannot each have a core of the {n_cpus} here: unset it"
    return None


def bind_main_thread(local_rank: int, local_world: int, backend: str = "gloo") -> list[int] | None:
    """Bind the calling thread to its rank's cores where ``DDPSIM_BIND`` is "mains" (the cores bound; ``None``
    where it is not asked for). Refused (``ValueError``, ``refusal``'s line) where it cannot be done."""
    if bind_mode() != "mains":
        return None
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if why := refusal(local_world, backend, len(cpus)):
        raise ValueError(why)
    cores = rank_cores(local_rank, local_world, cpus)
    assert cores is not None  # refusal has ruled out fewer cores than ranks
    os.sched_setaffinity(0, cores)
    return cores
