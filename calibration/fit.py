"""Fits of the cost model to measurement records: ``o``/``w``, alpha-beta-gamma, contention.

Pure numpy/scipy: no torch, no plotting, no I/O (records come in as the dicts
``realrun.records.read_records`` returns).

How a fit is made, and why (the same core serves ``fit_linear`` and ``fit_abg``):

* **One point per configuration: the median of its raw per-iteration times.**
  On this box small all-reduces are bimodal (gloo's two worker threads collide:
  0.2-0.5 ms usually, 2-4 ms sometimes). Least squares over all raw times
  would fit the mean of that mixture, not the typical call, and would count
  twenty correlated iterations of one size as twenty independent facts,
  which shrinks the confidence interval by ``sqrt(iters)`` for nothing. The
  median is what the simulator should reproduce and what ``validate``
  compares against. Medians are *not* weighted by their spread: the spread
  of small messages is mostly the second mode, and weighting it down would
  leave ``o`` to the large sizes, where it is invisible.
* **Relative residuals** ``prediction / median - 1``, so a 4 KiB call counts
  as much as a 64 MiB one; in absolute terms the large sizes would decide
  everything and ``o`` would be noise.
* **Robust loss** (``scipy.optimize.least_squares``, ``loss="soft_l1"``,
  ``f_scale=0.05``): medians within about 5 % of the line count as in
  ordinary least squares, a whole size far off (a mode that won more than
  half the iterations) counts only linearly. Every cost formula is linear in
  its parameters, so the fit runs on ``(o, 1/w)`` / ``(alpha, beta, gamma)``
  with bounds ``>= 0`` and cannot fail to converge.
* **95 % confidence intervals: the union of two intervals.** A bootstrap over
  iterations (each size's raw times resampled with replacement, medians
  recomputed, model refitted; seeded) sees how noisy each median is; the
  Jacobian interval (``s^2 (J^T J)^-1`` with the residual variance, Student
  t) sees how far the medians sit from the model. Either alone can be too
  narrow: the bootstrap trusts the model, the Jacobian needs spare sizes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from simulator.collectives import ALGORITHMS, allreduce_time_s, linear_params_from_abg
from simulator.units import GB

from .contention import fit_contention, fit_contention_from_runs
from .points import LOOPBACK, AllreducePoint, allreduce_points, select_allreduce
from .robust import inv, jfloat, rms, robust_fit, unjfloat

__all__ = [
    "GB",
    "LOOPBACK",
    "AllreducePoint",
    "LinearFit",
    "ABGPoint",
    "ABGFit",
    "allreduce_points",
    "select_allreduce",
    "fit_linear",
    "fit_abg",
    "fit_bandwidth",
    "transfer_dominated_sizes",
    "with_terms",
    "abg_from_linear",
    "fit_contention",
    "fit_contention_from_runs",
]

DEFAULT_LOSS = "soft_l1"
DEFAULT_F_SCALE = 0.05
DEFAULT_N_BOOT = 200


def _pair(v: Any, upper_null: float = math.nan, name: str = "an interval") -> tuple[float, float]:
    """A (low, high) interval from JSON; a null high bound of a bandwidth means unbounded."""
    if v is None:
        return (math.nan, math.nan)
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise ValueError(f"{name} must be two numbers or [null, null], got {v!r}")
    if all(x is None for x in v):
        return (math.nan, math.nan)
    lo, hi = v
    return (unjfloat(lo), unjfloat(hi, upper_null))


def _check_ci(name: str, ci: tuple[float, float], hi_inf: bool, lo_positive: bool = False) -> None:
    """A fit's 95 % interval is unknown (both ends NaN; ``null`` in JSON) or two numbers, low <= high, the high end
    >= 0 (with ``lo_positive``, a bandwidth's, the low end > 0); only a bandwidth's high end may be ``inf``
    (unbounded). Anything else would be read as "no error known" by the intervals (``simulator.interval.sd_of_ci``,
    ``Uncertainty.from_fit``), silently: refused."""
    try:
        lo, hi = (float(x) for x in ci)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be two numbers or [null, null], got {ci!r}") from None
    if math.isnan(lo) and math.isnan(hi):
        return
    ok = math.isfinite(lo) and (math.isfinite(hi) or (hi_inf and hi == math.inf)) and lo <= hi and hi >= 0
    if not ok or (lo_positive and lo <= 0):
        ends = "finite numbers" if not hi_inf else "numbers (the high end may be unbounded)"
        low = "0 < low <= high" if lo_positive else "low <= high, high >= 0"
        raise ValueError(f"{name} must be [low, high] with {low}, {ends}, or [null, null]; got {ci!r}")


# ---------------------------------------------------------------------------
# o + n / w at one world size
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LinearFit:
    """``T(n) = o + n / w`` for one backend, world size and link, with 95 % intervals.

    ``w_ci_bytes_per_s[1]`` may be ``inf`` (no upper bound: the data cannot
    rule out a cost independent of size). ``rel_errors`` are ``fit / median - 1``
    at ``sizes_bytes``. ``source`` is ``"fit"`` or, for ``ABGFit.linear_at``,
    ``"abg:<algorithm>@p=<p>"`` (then the size lists are empty).
    """

    o_s: float
    w_bytes_per_s: float
    o_ci_s: tuple[float, float] = (math.nan, math.nan)
    w_ci_bytes_per_s: tuple[float, float] = (math.nan, math.nan)
    rel_rms: float = math.nan
    max_abs_rel_err: float = math.nan
    n_points: int = 0
    n_samples: int = 0
    sizes_bytes: tuple[int, ...] = ()
    rel_errors: tuple[float, ...] = ()
    impl: str = "native"
    backend: str | None = None
    world_size: int | None = None
    link_mbit: float | None = None
    ci_method: str = "none"
    source: str = "fit"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.o_s) and self.o_s >= 0):
            raise ValueError(f"o_s must be a finite number >= 0, got {self.o_s!r}")
        if not (self.w_bytes_per_s > 0):
            raise ValueError(f"w_bytes_per_s must be > 0, got {self.w_bytes_per_s!r}")
        if self.w_ci_bytes_per_s[0] == math.inf:  # a slope interval at or below 0 at both ends: no bound at all
            object.__setattr__(self, "w_ci_bytes_per_s", (math.nan, math.nan))
        _check_ci("o_ci_s", self.o_ci_s, hi_inf=False)
        _check_ci("w_ci_bytes_per_s", self.w_ci_bytes_per_s, hi_inf=True, lo_positive=True)

    @property
    def o_us(self) -> float:
        return self.o_s * 1e6

    @property
    def w_gbps(self) -> float:
        """Algorithm bandwidth in GB/s (GB = 1e9 bytes)."""
        return self.w_bytes_per_s / GB

    @property
    def o_ci_us(self) -> tuple[float, float]:
        return (self.o_ci_s[0] * 1e6, self.o_ci_s[1] * 1e6)

    @property
    def w_ci_gbps(self) -> tuple[float, float]:
        return (self.w_ci_bytes_per_s[0] / GB, self.w_ci_bytes_per_s[1] / GB)

    def predict_time_s(self, msg_bytes: Any) -> Any:
        """``o + n/w``; works on a float or a numpy array of sizes."""
        if np.ndim(msg_bytes):
            return self.o_s + np.asarray(msg_bytes, dtype=float) / self.w_bytes_per_s
        return self.o_s + float(msg_bytes) / self.w_bytes_per_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "o_s": self.o_s,
            "w_bytes_per_s": jfloat(self.w_bytes_per_s),
            "o_us": self.o_us,
            "w_gbps": jfloat(self.w_gbps),
            "o_ci_s": [jfloat(v) for v in self.o_ci_s],
            "w_ci_bytes_per_s": [jfloat(v) for v in self.w_ci_bytes_per_s],
            "rel_rms": jfloat(self.rel_rms),
            "max_abs_rel_err": jfloat(self.max_abs_rel_err),
            "n_points": self.n_points,
            "n_samples": self.n_samples,
            "sizes_bytes": list(self.sizes_bytes),
            "rel_errors": list(self.rel_errors),
            "impl": self.impl,
            "backend": self.backend,
            "world_size": self.world_size,
            "link_mbit": self.link_mbit,
            "ci_method": self.ci_method,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LinearFit:
        if not isinstance(d, Mapping):
            raise ValueError("a linear fit must be a JSON object")
        missing = [k for k in ("o_s", "w_bytes_per_s") if k not in d]
        if missing:
            raise ValueError(f"linear fit lacks {', '.join(repr(k) for k in missing)}")
        try:
            return cls(
                o_s=float(d["o_s"]),
                w_bytes_per_s=unjfloat(d["w_bytes_per_s"], math.inf),
                o_ci_s=_pair(d.get("o_ci_s"), name="o_ci_s"),
                w_ci_bytes_per_s=_pair(d.get("w_ci_bytes_per_s"), upper_null=math.inf, name="w_ci_bytes_per_s"),
                rel_rms=unjfloat(d.get("rel_rms")),
                max_abs_rel_err=unjfloat(d.get("max_abs_rel_err")),
                n_points=int(d.get("n_points", 0)),
                n_samples=int(d.get("n_samples", 0)),
                sizes_bytes=tuple(int(v) for v in d.get("sizes_bytes", ())),
                rel_errors=tuple(float(v) for v in d.get("rel_errors", ())),
                impl=str(d.get("impl", "native")),
                backend=d.get("backend"),
                world_size=d.get("world_size"),
                link_mbit=d.get("link_mbit"),
                ci_method=str(d.get("ci_method", "none")),
                source=str(d.get("source", "fit")),
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"linear fit is malformed: {e}") from None


def fit_linear(
    records: Iterable[Mapping[str, Any]],
    impl: str = "native",
    world_size: int | None = None,
    link_mbit: float | str | None = None,
    *,
    backend: str | None = None,
    loss: str = DEFAULT_LOSS,
    f_scale: float = DEFAULT_F_SCALE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    statistic: str = "median",
) -> LinearFit:
    """Fit ``T(n) = o + n/w`` to the all-reduce records of one configuration.

    ``statistic="mean"`` fits the expected call time instead of the typical
    one: on a busy box small calls are bimodal (gloo's threads colliding), and a
    step that makes many calls pays the mean, not the median.

    Method (see the module docstring for why): the median per message size,
    relative residuals, ``soft_l1`` loss with ``f_scale`` (relative), ``o, 1/w >= 0``;
    95 % interval = union of a seeded bootstrap over iterations and the
    Jacobian interval. Selection as in ``select_allreduce``.
    Raises ``ValueError`` for no records, no all-reduce records of this
    configuration, or fewer than two message sizes.
    """
    sel = select_allreduce(records, impl=impl, backend=backend, world_size=world_size, link_mbit=link_mbit)
    pts = allreduce_points(sel)
    if len(pts) < 2:
        raise ValueError(
            f"fit_linear needs at least two message sizes, got only {pts[0].msg_bytes} bytes: "
            "one size cannot separate the per-call overhead o from the bandwidth w"
        )
    n = np.array([pt.msg_bytes for pt in pts], dtype=float)
    X = np.stack([np.ones_like(n), n], axis=1)
    core = robust_fit(
        X,
        np.zeros(len(pts)),
        [np.asarray(pt.times_s) for pt in pts],
        loss=loss,
        f_scale=f_scale,
        n_boot=n_boot,
        seed=seed,
        statistic=statistic,
    )
    o, g = core.theta
    (o_lo, o_hi), (g_lo, g_hi) = core.ci
    if g <= 0:
        raise ValueError(
            "the fitted time does not grow with message size (1/w = 0): the sizes measured are all "
            "overhead-dominated; measure larger messages"
        )
    lm = sel[0].get("link_mbit")
    return LinearFit(
        o_s=float(o),
        w_bytes_per_s=1.0 / float(g),
        o_ci_s=(float(o_lo), float(o_hi)),
        w_ci_bytes_per_s=(inv(g_hi), inv(g_lo)),
        rel_rms=rms(core.rel_err),
        max_abs_rel_err=float(np.max(np.abs(core.rel_err))),
        n_points=len(pts),
        n_samples=sum(len(pt.times_s) for pt in pts),
        sizes_bytes=tuple(pt.msg_bytes for pt in pts),
        rel_errors=tuple(float(e) for e in core.rel_err),
        impl=impl,
        backend=sel[0].get("backend"),
        world_size=pts[0].world_size,
        link_mbit=None if lm is None else float(lm),
        ci_method=core.method,
    )


TRANSFER_SHARE = 0.75  # a size is transfer-dominated when its transfer n/w is >= 3x the per-call o


def transfer_dominated_sizes(fit: LinearFit, share: float = TRANSFER_SHARE) -> tuple[int, ...]:
    """The sizes of ``fit`` whose fitted time is at least ``share`` transfer (``n/w``), largest last."""
    return tuple(
        n
        for n in fit.sizes_bytes
        if n / fit.w_bytes_per_s >= share * (fit.o_s + n / fit.w_bytes_per_s) and n / fit.w_bytes_per_s > 0
    )


def fit_bandwidth(
    records: Iterable[Mapping[str, Any]], all_sizes: LinearFit, *, share: float = TRANSFER_SHARE, **kw: Any
) -> LinearFit | None:
    """The bandwidth ``w`` from the transfer-dominated sizes alone, with an intercept of their own.

    A fit over every size weighs a 4 KiB call as much as a 16 MiB one (relative residuals, so that
    ``o`` is not noise); where the small calls do not follow a line (gloo's threads, the emulated
    link's burst) that tilts the slope: over a 1000 Mbit/s link it put ``w`` 8-19 % above the
    rate the 4 and 16 MiB calls move at. The step's large buckets pay that rate, so ``w`` is taken
    from the sizes where at least ``share`` of the time is transfer under the all-size fit (their
    own intercept absorbs the per-call part there; ``o`` comes from elsewhere). ``None`` when fewer
    than two sizes qualify (then nothing better than the all-size fit is known). ``kw`` as
    ``fit_linear``.
    """
    sizes = set(transfer_dominated_sizes(all_sizes, share))
    if len(sizes) < 2:
        return None
    sub = [r for r in records if isinstance(r, Mapping) and r.get("msg_bytes") in sizes]
    try:
        return fit_linear(sub, **kw)
    except ValueError:
        return None


def with_terms(
    fit: LinearFit, records: Iterable[Mapping[str, Any]], o: LinearFit, w: LinearFit, source: str, **kw: Any
) -> LinearFit:
    """``fit`` with ``o`` (and its CI) from one fit and ``w`` (and its CI) from another; its errors
    (``rel_errors``, ``rel_rms``, ``max_abs_rel_err``) recomputed for the combination against the
    points of ``records`` (selected as ``fit_linear`` does, ``kw``), mean or median as ``statistic``."""
    statistic = kw.pop("statistic", "median")
    pts = allreduce_points(select_allreduce(records, **kw))
    n = np.array([pt.msg_bytes for pt in pts], dtype=float)
    meas = np.array([np.mean(pt.times_s) if statistic == "mean" else pt.median_s for pt in pts])
    err = (o.o_s + n / w.w_bytes_per_s) / meas - 1.0
    return replace(
        fit,
        o_s=o.o_s,
        o_ci_s=o.o_ci_s,
        w_bytes_per_s=w.w_bytes_per_s,
        w_ci_bytes_per_s=w.w_ci_bytes_per_s,
        sizes_bytes=tuple(pt.msg_bytes for pt in pts),
        rel_errors=tuple(float(e) for e in err),
        rel_rms=rms(err),
        max_abs_rel_err=float(np.max(np.abs(err))),
        source=source,
    )


# ---------------------------------------------------------------------------
# alpha-beta-gamma across world sizes
# ---------------------------------------------------------------------------
def _abg_columns(algorithm: str, n: float, p: int) -> tuple[float, float, float]:
    """Coefficients of alpha, beta, gamma in the algorithm's time (every formula is linear in them)."""
    return (
        allreduce_time_s(algorithm, n, p, 1.0, 0.0, 0.0),
        allreduce_time_s(algorithm, n, p, 0.0, 1.0, 0.0),
        allreduce_time_s(algorithm, n, p, 0.0, 0.0, 1.0),
    )


@dataclass(frozen=True)
class ABGPoint:
    """One (world size, size) of a cross-p fit: ``measured_median_s`` is the statistic fitted (the
    median, or the mean with ``fit_abg(statistic="mean")``)."""

    world_size: int
    msg_bytes: int
    measured_median_s: float
    predicted_s: float
    rel_err: float


@dataclass(frozen=True)
class ABGFit:
    """A per-call constant ``o`` (s), alpha (s per step), beta (s/byte sent), gamma (s/byte reduced)
    of one all-reduce algorithm: ``T(n, p) = o + A(p) alpha + B(p) n beta + C(p) n gamma``.

    ``o`` does not grow with p (a network preset's ``call_overhead_s``); alpha is
    paid once per step of the algorithm. ``split`` says how o and alpha were
    separated: ``"fitted"`` (measured at two or more world sizes, ``fit_abg``)
    or ``"assumed"`` (one world size, ``abg_from_linear``: the zero-byte time at
    that p split by an assumed share).

    ``gamma_identified`` is False when gamma was not fitted: either given
    (``gamma_fixed``) or, by default, set to 0 because the data cannot separate
    it from beta. In every formula of ``simulator.collectives`` beta and gamma
    enter only as one combination (ring, Rabenseifner, reduce+broadcast, tree:
    ``2 beta + gamma``; recursive doubling: ``beta + gamma``), at every world
    size, so all-reduce times alone never separate them; with ``gamma = 0`` the
    reported beta is the effective one and predictions of the same algorithm
    are unaffected.
    """

    algorithm: str
    alpha_s: float
    beta_s_per_byte: float
    gamma_s_per_byte: float
    alpha_ci_s: tuple[float, float]
    beta_ci_s_per_byte: tuple[float, float]
    gamma_ci_s_per_byte: tuple[float, float]
    gamma_identified: bool
    world_sizes: tuple[int, ...]
    points: tuple[ABGPoint, ...]
    rel_rms: float
    max_abs_rel_err: float
    impl: str = "native"
    backend: str | None = None
    link_mbit: float | None = None
    ci_method: str = "none"
    note: str = ""
    o_s: float = 0.0
    o_ci_s: tuple[float, float] = (0.0, 0.0)
    split: str = "fitted"

    def __post_init__(self) -> None:
        if self.split not in ("fitted", "assumed"):
            raise ValueError(f"split must be 'fitted' or 'assumed', got {self.split!r}")
        for name in ("o_s", "alpha_s", "beta_s_per_byte", "gamma_s_per_byte"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        for name in ("o_ci_s", "alpha_ci_s", "beta_ci_s_per_byte", "gamma_ci_s_per_byte"):
            _check_ci(name, getattr(self, name), hi_inf=True)

    def predict_time_s(self, msg_bytes: float, p: int) -> float:
        return self.o_s + allreduce_time_s(
            self.algorithm, msg_bytes, p, self.alpha_s, self.beta_s_per_byte, self.gamma_s_per_byte
        )

    def linear_at(self, p: int) -> LinearFit:
        """The ``o``, ``w`` of this algorithm at ``p`` ranks: ``o`` here is the zero-byte time
        ``o + A(p) alpha``, ``w`` the algorithm bandwidth (``linear_params_from_abg``).

        Intervals: the ends of ``o`` and ``A(p) alpha`` added (conservative); for
        ``w`` the ends combine the beta and gamma ends (conservative)."""
        if not isinstance(p, (int, np.integer)) or isinstance(p, bool) or p < 2:
            raise ValueError(f"linear_at needs an integer world size >= 2, got {p!r}")
        p = int(p)
        o, w = linear_params_from_abg(self.algorithm, p, self.alpha_s, self.beta_s_per_byte, self.gamma_s_per_byte)
        a_coef, b_coef, g_coef = _abg_columns(self.algorithm, 1.0, p)  # alpha's coefficient does not depend on n
        slope = [b_coef * self.beta_ci_s_per_byte[i] + g_coef * self.gamma_ci_s_per_byte[i] for i in (0, 1)]
        return LinearFit(
            o_s=self.o_s + o,
            w_bytes_per_s=w,
            o_ci_s=(self.o_ci_s[0] + a_coef * self.alpha_ci_s[0], self.o_ci_s[1] + a_coef * self.alpha_ci_s[1]),
            w_ci_bytes_per_s=(inv(slope[1]), inv(slope[0])),
            impl=self.impl,
            backend=self.backend,
            world_size=p,
            link_mbit=self.link_mbit,
            ci_method=self.ci_method,
            source=f"abg:{self.algorithm}@p={p}",
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "o_s": self.o_s,
            "alpha_s": self.alpha_s,
            "beta_s_per_byte": self.beta_s_per_byte,
            "gamma_s_per_byte": self.gamma_s_per_byte,
            "o_ci_s": [jfloat(v) for v in self.o_ci_s],
            "alpha_ci_s": [jfloat(v) for v in self.alpha_ci_s],
            "beta_ci_s_per_byte": [jfloat(v) for v in self.beta_ci_s_per_byte],
            "gamma_ci_s_per_byte": [jfloat(v) for v in self.gamma_ci_s_per_byte],
            "gamma_identified": self.gamma_identified,
            "split": self.split,
            "world_sizes": list(self.world_sizes),
            "points": [vars(pt).copy() for pt in self.points],
            "rel_rms": jfloat(self.rel_rms),
            "max_abs_rel_err": jfloat(self.max_abs_rel_err),
            "impl": self.impl,
            "backend": self.backend,
            "link_mbit": self.link_mbit,
            "ci_method": self.ci_method,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ABGFit:
        if not isinstance(d, Mapping):
            raise ValueError("an alpha-beta-gamma fit must be a JSON object")
        need = ("algorithm", "alpha_s", "beta_s_per_byte", "gamma_s_per_byte")
        missing = [k for k in need if k not in d]
        if missing:
            raise ValueError(f"alpha-beta-gamma fit lacks {', '.join(repr(k) for k in missing)}")
        if d["algorithm"] not in ALGORITHMS:
            raise ValueError(f"unknown all-reduce algorithm {d['algorithm']!r}; allowed: {', '.join(ALGORITHMS)}")
        try:
            return cls(
                algorithm=d["algorithm"],
                alpha_s=float(d["alpha_s"]),
                beta_s_per_byte=float(d["beta_s_per_byte"]),
                gamma_s_per_byte=float(d["gamma_s_per_byte"]),
                alpha_ci_s=_pair(d.get("alpha_ci_s"), name="alpha_ci_s"),
                beta_ci_s_per_byte=_pair(d.get("beta_ci_s_per_byte"), name="beta_ci_s_per_byte"),
                gamma_ci_s_per_byte=_pair(d.get("gamma_ci_s_per_byte"), name="gamma_ci_s_per_byte"),
                gamma_identified=bool(d.get("gamma_identified", False)),
                world_sizes=tuple(int(v) for v in d.get("world_sizes", ())),
                points=tuple(ABGPoint(**pt) for pt in d.get("points", ())),
                rel_rms=unjfloat(d.get("rel_rms")),
                max_abs_rel_err=unjfloat(d.get("max_abs_rel_err")),
                impl=str(d.get("impl", "native")),
                backend=d.get("backend"),
                link_mbit=d.get("link_mbit"),
                ci_method=str(d.get("ci_method", "none")),
                note=str(d.get("note", "")),
                # written before the per-call constant was fitted: none, as those fits had
                o_s=float(d.get("o_s", 0.0)),
                o_ci_s=_pair(d.get("o_ci_s"), name="o_ci_s") if d.get("o_ci_s") is not None else (0.0, 0.0),
                split=str(d.get("split", "fitted")),
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"alpha-beta-gamma fit is malformed: {e}") from None


def abg_from_linear(fit: LinearFit, latency_share: float | None = None, algorithm: str = "ring") -> ABGFit:
    """The terms of a fit at ONE world size, its latency split assumed: ``latency_share`` of the
    zero-byte time ``o`` goes to the ring's ``2(p-1)`` steps, the rest is the per-call constant
    (``simulator.network.split_linear``, the split ``CostModel`` applies to a linear model)."""
    from simulator.network import ASSUMED_LATENCY_SHARE, ASSUMED_LATENCY_SHARE_SOURCE, split_linear

    if fit.world_size is None or fit.world_size < 2:
        raise ValueError(f"the linear fit needs its world size (>= 2) to be split, got {fit.world_size!r}")
    if algorithm != "ring":
        raise ValueError(f"a one-p fit is split over the ring only (gloo's algorithm), got {algorithm!r}")
    share = ASSUMED_LATENCY_SHARE if latency_share is None else latency_share
    t = split_linear(fit.o_s, fit.w_bytes_per_s, fit.world_size, share)
    beta = 1.0 / t.bw_bytes_per_s
    steps = _abg_columns(algorithm, 0.0, fit.world_size)[0]
    lo, hi = fit.o_ci_s
    w_lo, w_hi = fit.w_ci_bytes_per_s
    per_byte = _abg_columns(algorithm, 1.0, fit.world_size)[1]
    return ABGFit(
        algorithm=algorithm,
        o_s=t.call_overhead_s,
        alpha_s=t.alpha_s,
        beta_s_per_byte=beta,
        gamma_s_per_byte=0.0,
        o_ci_s=((1 - share) * lo, (1 - share) * hi),
        alpha_ci_s=(share * lo / steps, share * hi / steps),
        beta_ci_s_per_byte=(inv(w_hi * per_byte), inv(w_lo * per_byte)),
        gamma_ci_s_per_byte=(0.0, 0.0),
        gamma_identified=False,
        world_sizes=(fit.world_size,),
        points=(),
        rel_rms=fit.rel_rms,
        max_abs_rel_err=fit.max_abs_rel_err,
        impl=fit.impl,
        backend=fit.backend,
        link_mbit=fit.link_mbit,
        ci_method=fit.ci_method,
        note=f"measured at p = {fit.world_size} only: latency split assumed, {share:.0%} of the zero-byte "
        f"time per ring step ({ASSUMED_LATENCY_SHARE_SOURCE if latency_share is None else 'given'})",
        split="assumed",
    )


def fit_abg(
    records: Iterable[Mapping[str, Any]],
    algorithm: str = "ring",
    *,
    gamma_s_per_byte: float | None = None,
    impl: str = "native",
    backend: str | None = None,
    link_mbit: float | str | None = None,
    loss: str = DEFAULT_LOSS,
    f_scale: float = DEFAULT_F_SCALE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    statistic: str = "median",
    call_overhead: bool = True,
) -> ABGFit:
    """Fit ``o`` (per call), alpha, beta, gamma (all >= 0) of ``algorithm`` to all-reduce medians
    (``statistic="mean"``: means) over world sizes and sizes.

    Needs records at two or more world sizes >= 2 (world size 1 records are
    ignored: nothing is communicated): the alpha-beta-gamma form is
    what carries a fit to another ``p``, and with one ``p`` its dependence on
    ``p`` would be assumed rather than fitted (use ``fit_linear`` there, and
    ``abg_from_linear`` to split it with an assumed share).

    ``o`` and alpha: separable because alpha's coefficient ``A(p)`` changes with
    p and ``o``'s does not (``call_overhead=False`` fixes ``o = 0``: all of the
    zero-byte time is per step).

    beta and gamma: separable only if the data make their coefficients
    independent, which no single algorithm here does (see ``ABGFit``). Pass
    ``gamma_s_per_byte`` (from a reduction benchmark) to fix gamma and fit
    alpha and beta; otherwise gamma is fitted only when identifiable and is
    set to 0 (``gamma_identified=False``) when not. Same robust core and
    intervals as ``fit_linear``.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; allowed: {', '.join(ALGORITHMS)}")
    if gamma_s_per_byte is not None and not (math.isfinite(gamma_s_per_byte) and gamma_s_per_byte >= 0):
        raise ValueError(f"gamma_s_per_byte must be a finite number >= 0, got {gamma_s_per_byte!r}")
    sel = select_allreduce(records, impl=impl, backend=backend, link_mbit=link_mbit, one_world_size=False)
    pts = [pt for pt in allreduce_points(sel) if pt.world_size >= 2]
    ps = sorted({pt.world_size for pt in pts})
    if len(ps) < 2:
        raise ValueError(
            f"fit_abg needs all-reduce records at two or more world sizes >= 2, got {ps or 'none'}: at one "
            "world size the data fix only o and w (use fit_linear); fitting alpha/beta/gamma there would "
            "assume, not measure, how time grows with p"
        )
    # columns: o, alpha, beta, gamma
    cols = np.array([(1.0, *_abg_columns(algorithm, pt.msg_bytes, pt.world_size)) for pt in pts])
    med = np.array([pt.median_s for pt in pts])
    A = cols / med[:, None]
    An = A / np.linalg.norm(A, axis=0).clip(min=1e-300)
    if np.linalg.matrix_rank(An[:, 1:3], tol=1e-9) < 2:
        raise ValueError("alpha and beta cannot be separated: measure at least two message sizes")
    o_free = [0] if call_overhead else []
    if call_overhead and np.linalg.matrix_rank(An[:, :3], tol=1e-9) < 3:
        raise ValueError(
            f"the per-call constant and {algorithm}'s per-step latency cannot be separated at world sizes {ps}: "
            "measure world sizes with different step counts"
        )
    if gamma_s_per_byte is not None:
        free, fixed_g, note = o_free + [1, 2], float(gamma_s_per_byte), "gamma given, not fitted"
    elif np.linalg.matrix_rank(An[:, o_free + [1, 2, 3]], tol=1e-9) == len(o_free) + 3:
        free, fixed_g, note = o_free + [1, 2, 3], 0.0, ""
    else:
        free, fixed_g = o_free + [1, 2], 0.0
        note = (
            f"beta and gamma enter {algorithm} only as one combination, so all-reduce times cannot "
            "separate them; gamma set to 0 and beta is the effective value (predictions of this "
            "algorithm are unaffected); pass gamma_s_per_byte to split them"
        )
    core = robust_fit(
        cols[:, free],
        cols[:, 3] * fixed_g if 3 not in free else np.zeros(len(pts)),
        [np.asarray(pt.times_s) for pt in pts],
        loss=loss,
        f_scale=f_scale,
        n_boot=n_boot,
        seed=seed,
        statistic=statistic,
    )
    theta = dict(zip(free, core.theta))
    ci = dict(zip(free, (tuple(map(float, c)) for c in core.ci)))
    gamma = float(theta.get(3, fixed_g))
    center = np.median if statistic == "median" else np.mean
    stat = np.array([center(pt.times_s) for pt in pts])
    pred = stat * (1.0 + core.rel_err)
    lm = sel[0].get("link_mbit")
    return ABGFit(
        algorithm=algorithm,
        o_s=float(theta.get(0, 0.0)),
        o_ci_s=ci.get(0, (0.0, 0.0)),
        alpha_s=float(theta[1]),
        beta_s_per_byte=float(theta[2]),
        gamma_s_per_byte=gamma,
        alpha_ci_s=ci[1],
        beta_ci_s_per_byte=ci[2],
        gamma_ci_s_per_byte=ci.get(3, (gamma, gamma)),
        gamma_identified=3 in free,
        world_sizes=tuple(ps),
        points=tuple(
            ABGPoint(pt.world_size, pt.msg_bytes, float(m), float(pr), float(e))
            for pt, m, pr, e in zip(pts, stat, pred, core.rel_err)
        ),
        rel_rms=rms(core.rel_err),
        max_abs_rel_err=float(np.max(np.abs(core.rel_err))),
        impl=impl,
        backend=sel[0].get("backend"),
        link_mbit=None if lm is None else float(lm),
        ci_method=core.method,
        note=note,
        split="fitted",
    )
