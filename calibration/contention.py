"""The contention factor ``c``: compute runs ``1 + c`` times slower while communication is in flight.

On a CPU gloo's threads take cores from compute; on a GPU NCCL kernels take
SMs (DESIGN.md). The simulator applies the factor; these functions fit it
from measurements, never assume it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import optimize


def fit_contention(
    compute_alone_s: float | Sequence[float],
    compute_with_comm_s: float | Sequence[float],
    comm_busy_fraction: float | Sequence[float],
    *,
    c_max: float = 3.0,
) -> float:
    """Contention factor ``c`` from compute measured alone and overlapped with communication.

    Model (the simulator's): compute progresses at rate ``1/(1+c)`` while a
    collective is in flight, at rate 1 otherwise. A compute phase of ``W``
    seconds alone takes ``T`` seconds overlapped, with communication in flight
    for a fraction ``f`` of those ``T``; then ``W = T(1-f) + T f/(1+c)``, i.e.
    ``1 - W/T = f q`` with ``q = c/(1+c)``. Over several runs ``q`` is the
    least-squares solution ``sum f_i (1 - W_i/T_i) / sum f_i^2`` and
    ``c = q/(1-q)``, clipped to ``[0, c_max]`` (compute that lost more time than
    communication was in flight is beyond this model; it gives ``c_max``).
    """
    W, T, f = (
        np.atleast_1d(np.asarray(v, dtype=float)) for v in (compute_alone_s, compute_with_comm_s, comm_busy_fraction)
    )
    if not (len(W) == len(T) == len(f)) or len(W) == 0:
        raise ValueError(
            f"fit_contention needs equally many (>= 1) values of each input, got {len(W)}, {len(T)}, {len(f)}"
        )
    if not (np.all(np.isfinite(W)) and np.all(W > 0) and np.all(np.isfinite(T)) and np.all(T > 0)):
        raise ValueError("compute times must be finite seconds > 0")
    if not (np.all(f >= 0) and np.all(f <= 1)):
        raise ValueError(f"comm_busy_fraction must lie in [0, 1], got {f.tolist()}")
    if not np.any(f > 0):
        raise ValueError("communication was never in flight during compute (busy fraction 0): c cannot be measured")
    q = float(np.sum(f * (1.0 - W / T)) / np.sum(f * f))
    if q >= 1.0:
        return float(c_max)
    return float(min(max(q / (1.0 - q), 0.0), c_max))


def fit_contention_from_runs(
    measured_step_s: Sequence[float],
    predict_fn: Callable[[float], Sequence[float]],
    *,
    c_bounds: tuple[float, float] = (0.0, 3.0),
    n_grid: int = 13,
) -> float:
    """The ``c`` in ``c_bounds`` that minimises the mean squared relative error of predicted step times.

    ``predict_fn(c)`` returns the simulator's step times for the same runs, in
    the order of ``measured_step_s``. A coarse grid first (the simulator's
    step time is piecewise in ``c``, so a bracketing search alone can stop at a
    kink), then a bounded ``minimize_scalar`` between the best grid point's
    neighbours. About ``n_grid + 20`` calls of ``predict_fn``.
    """
    meas = np.asarray(measured_step_s, dtype=float)
    if meas.ndim != 1 or len(meas) == 0:
        raise ValueError("fit_contention_from_runs needs at least one measured step time")
    if not (np.all(np.isfinite(meas)) and np.all(meas > 0)):
        raise ValueError("measured step times must be finite seconds > 0")
    lo, hi = (float(v) for v in c_bounds)
    if not (0 <= lo < hi and math.isfinite(hi)):
        raise ValueError(f"c_bounds must satisfy 0 <= low < high, got {c_bounds!r}")
    if n_grid < 3:
        raise ValueError(f"n_grid must be >= 3, got {n_grid}")

    def err(c: float) -> float:
        pred = np.asarray(predict_fn(float(c)), dtype=float)
        if pred.shape != meas.shape:
            raise ValueError(
                f"predict_fn returned {pred.shape[0] if pred.ndim else 'a scalar'} step times for {len(meas)} runs"
            )
        return float(np.mean(np.square(pred / meas - 1.0)))

    grid = np.linspace(lo, hi, n_grid)
    errs = [err(c) for c in grid]
    i = int(np.argmin(errs))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, n_grid - 1)]
    res = optimize.minimize_scalar(err, bounds=(a, b), method="bounded", options={"xatol": 1e-4 * (hi - lo)})
    return float(res.x) if res.fun <= errs[i] else float(grid[i])
