"""The robust least-squares core shared by the fits of ``calibration.fit``.

Every cost formula of ``simulator.collectives`` is linear in its parameters:
``T = X theta + fixed`` with ``X`` one row per point. The fit minimises
``sum rho(T / median - 1)`` over ``theta >= 0`` with
``scipy.optimize.least_squares`` (a robust ``loss``, ``f_scale`` in relative
terms), columns scaled to order one, started from non-negative least squares.

95 % interval per parameter: the union of
* the Jacobian interval ``t(0.975, dof) sqrt(diag(s^2 (J^T J)^-1))``, ``s^2``
  from the residual cost (needs more points than parameters), and
* a seeded bootstrap over iterations: each point's raw times resampled with
  replacement, medians recomputed, model refitted; 2.5/97.5 percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats

LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")


@dataclass(frozen=True)
class CoreFit:
    theta: np.ndarray  # fitted free parameters
    ci: np.ndarray  # (k, 2)
    rel_err: np.ndarray  # prediction / median - 1, per point
    method: str


def _solve(As: np.ndarray, b: np.ndarray, loss: str, f_scale: float, x0: np.ndarray | None = None):
    if x0 is None:
        x0 = optimize.nnls(As, b)[0]
    return optimize.least_squares(
        lambda t: As @ t - b, x0, jac=lambda t: As, bounds=(0.0, np.inf), loss=loss, f_scale=f_scale, method="trf"
    )


def robust_fit(
    X: np.ndarray,
    fixed: np.ndarray,
    samples: Sequence[np.ndarray],
    *,
    loss: str,
    f_scale: float,
    n_boot: int,
    seed: int,
    statistic: str = "median",
) -> CoreFit:
    """Minimise ``sum rho((X theta + fixed) / center - 1)`` over ``theta >= 0``; CIs as in the module doc.

    ``center`` is each sample's median (the typical call) or mean (the expected
    call: what a sum of many calls costs when the distribution is skewed).
    """
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; allowed: {', '.join(LOSSES)}")
    if not (f_scale > 0):
        raise ValueError(f"f_scale must be > 0, got {f_scale!r}")
    if statistic not in ("median", "mean"):
        raise ValueError(f"statistic must be 'median' or 'mean', got {statistic!r}")
    center = np.median if statistic == "median" else np.mean
    med = np.array([center(s) for s in samples])
    k = X.shape[1]

    def scaled(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return X / m[:, None], 1.0 - fixed / m

    A, b = scaled(med)
    col = np.abs(A).max(axis=0)
    col[col == 0] = 1.0
    As = A / col
    res = _solve(As, b, loss, f_scale)
    theta = res.x / col
    rel_err = (X @ theta + fixed) / med - 1.0

    lo = np.full(k, np.inf)
    hi = np.full(k, -np.inf)
    methods = []
    dof = len(med) - k
    if dof >= 1:
        J = res.jac
        s2 = 2.0 * res.cost / dof
        cov = s2 * np.linalg.pinv(J.T @ J)
        half = stats.t.ppf(0.975, dof) * np.sqrt(np.clip(np.diag(cov), 0, None)) / col
        lo, hi = np.minimum(lo, theta - half), np.maximum(hi, theta + half)
        methods.append("jacobian")
    if n_boot > 0 and any(len(s) > 1 for s in samples):
        rng = np.random.default_rng(seed)
        boot_med = np.empty((n_boot, len(samples)))
        for j, s in enumerate(samples):
            s = np.asarray(s)
            boot_med[:, j] = center(s[rng.integers(0, len(s), size=(n_boot, len(s)))], axis=1)
        thetas = np.empty((n_boot, k))
        for i in range(n_boot):
            Ab, bb = scaled(boot_med[i])
            thetas[i] = _solve(Ab / col, bb, loss, f_scale, x0=res.x).x / col
        q_lo, q_hi = np.percentile(thetas, [2.5, 97.5], axis=0)
        lo, hi = np.minimum(lo, q_lo), np.maximum(hi, q_hi)
        methods.append(f"bootstrap(n={n_boot},seed={seed})")
    if not methods:
        lo, hi = np.full(k, math.nan), np.full(k, math.nan)
    ci = np.stack([np.clip(np.minimum(lo, theta), 0, None), np.maximum(hi, theta)], axis=1)
    return CoreFit(theta, ci, rel_err, "+".join(methods) or "none")


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if len(x) else math.nan


def inv(x: float) -> float:
    """``1 / x`` of an interval's end: a slope's end at or below 0 bounds nothing (``inf``), an unknown end stays
    unknown (NaN)."""
    if math.isnan(x):
        return math.nan
    return float(1.0 / x) if x > 0 else math.inf


def jfloat(x: float | None) -> float | None:
    """A float for JSON, which has no NaN or infinity: those are written as null."""
    return None if x is None or not math.isfinite(x) else float(x)


def unjfloat(x: Any, null: float = math.nan) -> float:
    """Inverse of ``jfloat``: null reads as ``null`` (NaN unless the field means infinity there)."""
    return null if x is None else float(x)
