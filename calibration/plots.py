"""PNG plots of measurements, fits and predictions, drawn from result files and records.

Plotting never re-runs anything: every function takes records or result rows
(``read_rows`` reads them from a ``validate`` result file) and writes one PNG.
Figures are built with ``matplotlib.figure.Figure`` and saved through the Agg
canvas, never through ``pyplot``: no window can open, no global figure is
left behind, and whatever backend the user configured is left alone.

Row keys (dicts, one per configuration; the measured ones optional):
``bucket_mb``, ``world_size``, ``strategy``, ``predicted_step_s``,
``measured_median_s``, ``measured_p10_s``, ``measured_p90_s``,
``predicted_exposed_s``, ``measured_exposed_s``, ``predicted_throughput``,
``measured_throughput``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from simulator.jsonio import write_figure
from simulator.units import MIB

from .fit import LinearFit, allreduce_points, select_allreduce
from .params import Params
from .points import LOOPBACK

DPI = 120


def _save(fig: Figure, out_png: str | Path) -> Path:
    FigureCanvasAgg(fig)  # attach the Agg canvas explicitly: no backend lookup, no pyplot
    return write_figure(fig, out_png, dpi=DPI)


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Result rows from a JSON object with a ``rows`` list, a JSON list, or JSON Lines."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read results {p}: {e.strerror}") from None
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as e:
            raise ValueError(f"results {p} are neither JSON nor JSON Lines: {e.msg}") from None
    if isinstance(data, Mapping):
        data = data.get("rows")
    if not isinstance(data, list) or not all(isinstance(r, Mapping) for r in data):
        raise ValueError(f"results {p}: expected a list of row objects (or an object with a 'rows' list)")
    return [dict(r) for r in data]


def _rows(rows: Iterable[Mapping[str, Any]], need: Sequence[str], any_of: Sequence[str], what: str) -> list[Mapping]:
    out = list(rows)
    if not out:
        raise ValueError(f"{what}: no rows to plot")
    for i, r in enumerate(out):
        for k in need:
            if not isinstance(r.get(k), (int, float)):
                raise ValueError(f"{what}: row {i} lacks a number for {k!r}")
        if any_of and not any(isinstance(r.get(k), (int, float)) for k in any_of):
            raise ValueError(f"{what}: row {i} has none of {', '.join(any_of)}")
    return out


def _by_strategy(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(str(r.get("strategy") or ""), []).append(r)
    return groups


def _has(r: Mapping[str, Any], k: str) -> bool:
    v = r.get(k)
    return isinstance(v, (int, float)) and math.isfinite(v)


def _spread(rows, key, lo_key, hi_key, scale) -> tuple[np.ndarray, list[np.ndarray]]:
    """Values of ``key`` and error bars down to ``lo_key`` / up to ``hi_key`` (zero where absent)."""
    y = np.array([r[key] for r in rows], dtype=float) * scale
    lo = np.array([r[lo_key] if _has(r, lo_key) else r[key] for r in rows], dtype=float) * scale
    hi = np.array([r[hi_key] if _has(r, hi_key) else r[key] for r in rows], dtype=float) * scale
    return y, [np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)]


def _measured(ax, xs, rows, key, lo_key, hi_key, scale, color, label) -> None:
    pts = [(x, r) for x, r in zip(xs, rows) if _has(r, key)]
    if not pts:
        return
    y, yerr = _spread([p[1] for p in pts], key, lo_key, hi_key, scale)
    ax.errorbar([p[0] for p in pts], y, yerr=yerr, fmt="o", color=color, capsize=3, label=label)


# ---------------------------------------------------------------------------
def plot_allreduce(
    records: Sequence[Mapping[str, Any]] | str | Path, fit: LinearFit | Params | None, out_png: str | Path
) -> Path:
    """All-reduce time vs size (log-log): measured medians with p10-p90 bars, the fit and its 95 % band,
    and below it the relative residual per size. Records are those of the fit's configuration.

    The one all-reduce plot of ddpsim (``bench-allreduce --plot`` and ``plot --allreduce``): it reads
    both record shapes (``bench-allreduce`` summaries and the raw ``times_s`` of ``calibrate``).
    Without a fit: one line per configuration (kind, implementation, backend, world size, link).
    """
    if isinstance(records, (str, Path)):
        from realrun.records import read_records

        records = read_records(records, "allreduce")
    if fit is None:
        return _plot_allreduce_lines(records, out_png)
    lf = fit.linear if isinstance(fit, Params) else fit
    if not isinstance(lf, LinearFit):
        raise ValueError("plot_allreduce needs a LinearFit or Params")
    sel = select_allreduce(
        records,
        impl=lf.impl,
        backend=lf.backend,
        world_size=lf.world_size,
        link_mbit=LOOPBACK if lf.link_mbit is None else lf.link_mbit,
    )
    pts = allreduce_points(sel)
    n = np.array([pt.msg_bytes for pt in pts], dtype=float)
    med = np.array([pt.median_s for pt in pts])
    lo = np.array([pt.p10_s for pt in pts])
    hi = np.array([pt.p90_s for pt in pts])

    fig = Figure(figsize=(6.4, 5.6))
    ax, rax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.errorbar(
        n, med * 1e3, yerr=[(med - lo) * 1e3, (hi - med) * 1e3], fmt="o", capsize=3, label="measured median (p10-p90)"
    )
    nmin = max(n[n > 0].min() / 2, 1.0) if np.any(n > 0) else 1.0
    grid = np.geomspace(nmin, max(n.max(), nmin) * 2, 200)
    ax.plot(grid, lf.predict_time_s(grid) * 1e3, "-", label="fit o + n/w")
    (o_lo, o_hi), (w_lo, w_hi) = lf.o_ci_s, lf.w_ci_bytes_per_s
    if all(math.isfinite(v) for v in (o_lo, o_hi, w_lo)) and w_lo > 0:
        ax.fill_between(grid, (o_lo + grid / w_hi) * 1e3, (o_hi + grid / w_lo) * 1e3, alpha=0.2, label="95 % interval")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylabel("time per all-reduce (ms)")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    link = "loopback" if lf.link_mbit is None else f"{lf.link_mbit:g} Mbit/s"
    ax.set_title(
        f"all-reduce {lf.backend or ''} {lf.impl}, p={lf.world_size}, {link}\n"
        f"o = {lf.o_us:.0f} us [{lf.o_ci_us[0]:.0f}, {lf.o_ci_us[1]:.0f}], "
        f"w = {lf.w_gbps:.3g} GB/s [{lf.w_ci_gbps[0]:.3g}, {lf.w_ci_gbps[1]:.3g}]",
        fontsize=9,
    )
    rel = (lf.predict_time_s(n) / med - 1.0) * 100
    rax.axhline(0, color="0.5", lw=0.8)
    rax.plot(n, rel, "o")
    rax.set_ylabel("fit/median - 1 (%)")
    rax.set_xlabel("message size per rank (bytes)")
    rax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return _save(fig, out_png)


def _plot_allreduce_lines(records: Sequence[Mapping[str, Any]], out_png: str | Path) -> Path:
    lines: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in records:
        if not isinstance(r, Mapping) or r.get("kind", "allreduce") not in ("allreduce", "broadcast"):
            continue
        key = (
            str(r.get("kind", "allreduce")),
            str(r.get("impl", "native")),
            str(r.get("backend") or ""),
            r.get("world_size"),
            r.get("link_mbit"),
        )
        lines.setdefault(key, []).append(r)
    if not lines:
        raise ValueError("no all-reduce or broadcast records to plot")
    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for (kind, impl, backend, p, link), rs in sorted(lines.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        pts = allreduce_points(rs)
        n = np.array([pt.msg_bytes for pt in pts], dtype=float)
        med = np.array([pt.median_s for pt in pts])
        lo, hi = np.array([pt.p10_s for pt in pts]), np.array([pt.p90_s for pt in pts])
        name = impl if kind == "allreduce" else ("broadcast stream" if impl == "stream" else "broadcast")
        label = f"{name} {backend} p={p}" + (f" {link:g} Mbit/s" if link else "")
        ax.errorbar(n, med * 1e3, yerr=[(med - lo) * 1e3, (hi - med) * 1e3], marker="o", ms=3, capsize=2, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size per rank (bytes)")
    ax.set_ylabel("time per call (ms), median, p10-p90")
    ax.set_title("collective time vs message size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, out_png)


def plot_bucket_sweep(rows: Iterable[Mapping[str, Any]], out_png: str | Path, title: str | None = None) -> Path:
    """Step time vs bucket size per strategy: predicted line, measured medians with p10-p90 bars;
    a star marks each strategy's predicted best bucket."""
    rows = _rows(rows, ["bucket_mb"], ["predicted_step_s", "measured_median_s"], "plot_bucket_sweep")
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.subplots()
    for k, (strategy, rs) in enumerate(sorted(_by_strategy(rows).items())):
        color = f"C{k}"
        rs = sorted(rs, key=lambda r: r["bucket_mb"])
        xs = [r["bucket_mb"] for r in rs]
        pred = [(r["bucket_mb"], r["predicted_step_s"] * 1e3) for r in rs if _has(r, "predicted_step_s")]
        name = strategy or "step"
        if pred:
            ax.plot(*zip(*pred), "-", color=color, label=f"{name} predicted")
            best = min(pred, key=lambda t: t[1])
            ax.plot([best[0]], [best[1]], "*", color=color, ms=12)
        _measured(ax, xs, rs, "measured_median_s", "measured_p10_s", "measured_p90_s", 1e3, color, f"{name} measured")
    ax.set_xscale("log")
    ax.set_xlabel("bucket size (MB)")
    ax.set_ylabel("step time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "step time vs bucket size (star: predicted best)", fontsize=10)
    fig.tight_layout()
    return _save(fig, out_png)


_PVM = {
    "step": ("predicted_step_s", "measured_median_s", "step time"),
    "exposed": ("predicted_exposed_s", "measured_exposed_s", "exposed communication"),
}


def plot_pred_vs_measured(rows: Iterable[Mapping[str, Any]], out_png: str | Path, quantity: str = "auto") -> Path:
    """Predicted vs measured, one panel per quantity (``"step"``, ``"exposed"``, ``"both"``, or
    ``"auto"``: exposed too when rows carry it), with the y = x line and +-10 % lines;
    each panel's title gives the median and worst absolute error."""
    rows = list(rows)
    if quantity == "auto":
        has_exposed = any(_has(r, "predicted_exposed_s") and _has(r, "measured_exposed_s") for r in rows)
        kinds = ["step", "exposed"] if has_exposed else ["step"]
    elif quantity == "both":
        kinds = ["step", "exposed"]
    elif quantity in _PVM:
        kinds = [quantity]
    else:
        raise ValueError(f"unknown quantity {quantity!r}; allowed: auto, both, {', '.join(_PVM)}")
    rows = _rows(rows, [], [], "plot_pred_vs_measured")
    fig = Figure(figsize=(5.2 * len(kinds), 4.8))
    axes = np.atleast_1d(fig.subplots(1, len(kinds)))
    colors = {name: f"C{k}" for k, name in enumerate(sorted(_by_strategy(rows)))}  # same in every panel
    for ax, kind in zip(axes, kinds):
        pk, mk, label = _PVM[kind]
        use = [r for r in rows if _has(r, pk) and _has(r, mk)]
        if not use:
            raise ValueError(f"plot_pred_vs_measured: no row has both {pk!r} and {mk!r}")
        for strategy, rs in sorted(_by_strategy(use).items()):
            # measured spread (p10-p90) as horizontal bars where the rows carry it
            m, xerr = (
                _spread(rs, mk, "measured_p10_s", "measured_p90_s", 1e3)
                if kind == "step"
                else (np.array([r[mk] for r in rs]) * 1e3, None)
            )
            p = np.array([r[pk] for r in rs]) * 1e3
            ax.errorbar(m, p, xerr=xerr, fmt="o", color=colors[strategy], capsize=2, label=strategy or None)
        vals = np.array([[r[mk], r[pk]] for r in use]) * 1e3
        bottom, top = vals.min() * 0.9, vals.max() * 1.1
        line = np.array([bottom, top])
        ax.plot(line, line, "-", color="0.3", lw=1, label="y = x")
        ax.plot(line, line * 1.1, ":", color="0.5", lw=1, label="+-10 %")
        ax.plot(line, line * 0.9, ":", color="0.5", lw=1)
        ax.set_xlim(bottom, top)
        ax.set_ylim(bottom, top)
        ax.set_aspect("equal")
        ax.set_xlabel(f"measured {label} (ms)")
        ax.set_ylabel(f"predicted {label} (ms)")
        ax.grid(True, alpha=0.3)
        meas = np.array([r[mk] for r in use])
        err = np.abs(np.array([r[pk] for r in use]) - meas)
        pos = meas > 0
        pct = err[pos] / meas[pos] * 100 if np.any(pos) else np.array([math.nan])
        ax.set_title(f"{label}: median |err| {np.median(pct):.1f} %, worst {np.max(pct):.1f} %", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return _save(fig, out_png)


def plot_scaling(
    rows: Iterable[Mapping[str, Any]],
    out_png: str | Path,
    metric: str = "step_s",
    throughput_unit: str = "samples/s",
) -> Path:
    """Step time (``metric="step_s"``) or throughput (``"throughput"``) vs world size per strategy:
    predicted line, measured points (step time with p10-p90 bars)."""
    if metric == "step_s":
        pk, mk, lo_k, hi_k, scale, ylabel = (
            "predicted_step_s",
            "measured_median_s",
            "measured_p10_s",
            "measured_p90_s",
            1e3,
            "step time (ms)",
        )
    elif metric == "throughput":
        pk, mk, lo_k, hi_k, scale, ylabel = (
            "predicted_throughput",
            "measured_throughput",
            "",
            "",
            1.0,
            f"throughput ({throughput_unit})",
        )
    else:
        raise ValueError(f"unknown metric {metric!r}; allowed: step_s, throughput")
    rows = _rows(rows, ["world_size"], [pk, mk], "plot_scaling")
    groups = sorted(_by_strategy(rows).items())
    # one legend entry per configuration (its line predicted, its points measured), beside the axes
    fig = Figure(figsize=(6.4 + (2.6 if len(groups) > 1 else 0.0), 4.4))
    ax = fig.subplots()
    cmap = matplotlib.colormaps["tab20" if len(groups) > 10 else "tab10"]
    for k, (strategy, rs) in enumerate(groups):
        color = cmap(k % cmap.N)
        rs = sorted(rs, key=lambda r: r["world_size"])
        name = strategy or metric
        pred = [(r["world_size"], r[pk] * scale) for r in rs if _has(r, pk)]
        if pred:
            ax.plot(*zip(*pred), "-", color=color, label=name)
        _measured(ax, [r["world_size"] for r in rs], rs, mk, lo_k, hi_k, scale, color, None if pred else name)
    ax.set_xlabel("world size (ranks)")
    ax.set_ylabel(ylabel)
    ax.set_xticks(sorted({int(r["world_size"]) for r in rows}))
    ax.grid(True, alpha=0.3)
    if len(groups) > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 + len(groups) // 24)
    ax.set_title(f"scaling: {ylabel} vs world size (lines predicted, points measured)", fontsize=10)
    fig.tight_layout()
    return _save(fig, out_png)


def plot_timeline(
    measured: Mapping[str, Any], predicted: Mapping[str, Any] | None, out_png: str | Path, title: str | None = None
) -> Path:
    """Gantt chart of one step: the measured timeline above the predicted one (``calibration.timeline``
    shapes), one row per phase lane (compute) and per bucket; per bucket the launch delay (ready ->
    launch) hatched, the all-reduce (launch -> complete) solid. Times in ms from the step start."""
    sides = [("measured", measured)] + ([("predicted", predicted)] if predicted is not None else [])
    n_rows = sum(1 + len(tl["buckets"]) for _, tl in sides)
    fig = Figure(figsize=(10, 1.0 + 0.32 * n_rows + 0.3 * len(sides)))
    ax = fig.add_subplot(1, 1, 1)
    colors = {
        "forward": "#9ecae1",
        "backward": "#3182bd",
        "wait": "#fdae6b",
        "finalize": "#bcbddc",
        "optimizer": "#74c476",
        "allreduce": "#e6550d",
        "delay": "#fee6ce",
    }
    labels: list[str] = []
    y = 0
    seen: set[str] = set()

    def bar(yy: int, a: float | None, b: float | None, kind: str, **kw: Any) -> None:
        if a is None or b is None or b <= a:
            return
        lab = kind if kind not in seen else None
        seen.add(kind)
        ax.broken_barh([(a * 1e3, (b - a) * 1e3)], (yy - 0.4, 0.8), facecolors=colors[kind], label=lab, **kw)

    for side, tl in sides:
        last = max((bk["complete_s"] for bk in tl["buckets"]), default=tl["backward_end_s"])
        comm_end = max(last, tl["backward_end_s"])
        bar(y, 0.0, tl["backward_start_s"], "forward")
        bar(y, tl["backward_start_s"], tl["backward_end_s"], "backward")
        bar(y, tl["backward_end_s"], comm_end, "wait")
        bar(y, comm_end, tl["optimizer_start_s"], "finalize")
        bar(y, tl["optimizer_start_s"], tl["optimizer_end_s"], "optimizer")
        labels.append(f"{side}: compute")
        y += 1
        for bk in tl["buckets"]:
            if bk.get("ready_s") is not None:
                bar(y, bk["ready_s"], bk["launch_s"], "delay", edgecolor="#e6550d", hatch="//")
            bar(y, bk["launch_s"], bk["complete_s"], "allreduce")
            labels.append(f"{side}: bucket {bk['index']} ({bk['bytes'] / MIB:.2f} MiB)")
            y += 1
        ax.axhline(y - 0.5, color="#999", lw=0.8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ms from step start")
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=7, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return _save(fig, out_png)
