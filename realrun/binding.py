"""Binding a rank's main thread to cores of its own, as MPI launchers bind ranks.

On a CPU box with fewer free cores than busy threads, where the scheduler puts each rank's threads decides the
step: micro-DLRM's `individual` steps (52 calls) on loopback, 2 gloo ranks on this 2-core VM, ran a median of
15.5-17.2 ms with the placement left to the scheduler, 7.0-8.7 ms with each rank's main thread bound to a core of
its own and gloo's threads left free, and 35.8-37.1 ms with all of a rank's threads bound to one core (a call's
hand-off then waits behind the rank's own backward for a scheduler slice); BENCHMARKS.md, "Step regimes are
thread placement", benchmarks/results/step_regimes_pinning_2026-11-30/.

Only the calling thread is bound (Linux's ``sched_setaffinity`` on thread id 0), and only after the process
group exists, so gloo's threads (made while it is set up) keep the whole mask and run wherever a core is free;
threads the main thread makes afterwards (OpenMP's pool) inherit its cores.
"""

from __future__ import annotations

import os

BIND_ENV = "DDPSIM_BIND"  # "mains": bind each rank's main thread; "none" or unset: leave placement alone


def bind_mode() -> str:
    """``DDPSIM_BIND``'s mode: "mains" or "none" (unset or empty: "none"); anything else is refused."""
    value = os.environ.get(BIND_ENV, "").strip()
    if value in ("", "none"):
        return "none"
    if value == "mains":
        return value
    raise ValueError(
        f"{BIND_ENV}={value!r}: give 'mains' (each rank's main thread on cores of its own) or 'none' (the default)"
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


def bind_main_thread(local_rank: int, local_world: int) -> list[int] | None:
    """Bind the calling thread to its rank's cores where ``DDPSIM_BIND`` is "mains" and each local rank can
    have one; the cores bound, or ``None`` where nothing was done."""
    if bind_mode() != "mains" or not hasattr(os, "sched_setaffinity"):
        return None
    cores = rank_cores(local_rank, local_world, sorted(os.sched_getaffinity(0)))
    if cores is None:
        return None
    os.sched_setaffinity(0, cores)
    return cores
