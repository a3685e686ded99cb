"""Plot a sweep result (reads the sweep's dict; never re-simulates).

Two panels over bucket size (log axis): the predicted step time, and the exposed communication
under it. Marked: the best size of the sweep, the band of sizes within ``band_pct`` of the best
step (shaded), torch's default cap (25 MiB) and, when given, the recommended size and the
closed form's ``b*``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .jsonio import write_figure

TORCH_DEFAULT_MB = 25.0


def near_best_range(
    rows: Sequence[Mapping[str, Any]], band_pct: float, best_mb: float | None = None
) -> tuple[float, float] | None:
    """The run of bucket sizes around the best (rows in size order) whose predicted steps are all within
    ``band_pct`` % of the best. Buckets change in steps, so a size further out can be in the band again
    while one between is not (cnn: 0.62-0.9 MiB near the best, 1 MiB as slow as the default, 2.2-2.5 MiB
    near again); the first to the last size in the band would claim the slow ones too. ``best_mb``: the
    sweep's best (``SweepResult.best_bucket_mb``: among caps tied to the last digits, the largest), which the
    run is around; default the first fastest row."""
    if not rows:
        return None
    times = [r["step_time_s"] for r in rows]
    sizes = [r["bucket_mb"] for r in rows]
    i = sizes.index(best_mb) if best_mb in sizes else min(range(len(times)), key=times.__getitem__)
    band = times[i] * (1 + band_pct / 100.0)
    lo = hi = i
    while lo > 0 and times[lo - 1] <= band:
        lo -= 1
    while hi < len(times) - 1 and times[hi + 1] <= band:
        hi += 1
    return rows[lo]["bucket_mb"], rows[hi]["bucket_mb"]


def plot_sweep(
    sweep: Mapping[str, Any],
    out_png: str | Path,
    *,
    band_pct: float = 1.0,
    default_mb: float | None = TORCH_DEFAULT_MB,
    recommended_mb: float | None = None,
    stated: Mapping[str, Any] | None = None,
) -> Path:
    """The predicted step and exposed communication against the bucket size (log), the near-best band, the
    best, torch's default, the recommendation and the closed form's b*. ``stated``: a ``stated_ranges`` result
    with ``short_end_step_s`` and ``long_end_step_s`` (the step at each size with every value a preset or a
    device states a range for at one end: ``ddpsim.stated``), drawn as a shaded span around the step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sweep["rows"]
    mb = [r["bucket_mb"] for r in rows]
    fig, (ax, ax2) = plt.subplots(
        2, 1, figsize=(7, 5.6), sharex=True, gridspec_kw={"height_ratios": [2, 1]}, layout="constrained"
    )
    ax.plot(mb, [r["step_time_s"] * 1e3 for r in rows], "-", color="C0", label="predicted step time")
    short, long = (stated or {}).get("short_end_step_s"), (stated or {}).get("long_end_step_s")
    if short and long and len(short) == len(long) == len(mb):
        ax.fill_between(
            mb,
            [t * 1e3 for t in short],
            [t * 1e3 for t in long],
            color="C0",
            alpha=0.15,
            lw=0,
            label="over the stated ranges (not measured)",
        )
    ax2.plot(mb, [r["overhead_s"] * 1e3 for r in rows], "-", color="C1", label="predicted exposed communication")
    band = near_best_range(rows, band_pct, sweep.get("best_bucket_mb"))
    if band is not None:
        ax.axvspan(band[0], band[1], color="C2", alpha=0.12, lw=0, label=f"within {band_pct:g}% of the best")
        ax2.axvspan(band[0], band[1], color="C2", alpha=0.12, lw=0)
    ax.axvline(sweep["best_bucket_mb"], color="C2", lw=1, label=f"best {sweep['best_bucket_mb']:.3g} MiB")
    if default_mb is not None and mb and min(mb) <= default_mb <= max(mb):
        for a in (ax, ax2):
            a.axvline(default_mb, color="0.4", lw=1, ls="--")
        ax.plot([], [], color="0.4", lw=1, ls="--", label=f"torch default {default_mb:g} MiB")
    if recommended_mb is not None:
        for a in (ax, ax2):
            a.axvline(recommended_mb, color="C4", lw=1.5)
        ax.plot([], [], color="C4", lw=1.5, label=f"recommended {recommended_mb:g} MiB")
    cf = sweep["closed_form"]
    if cf.get("best_bucket_mb"):
        ax.axvline(
            cf["best_bucket_mb"], color="C3", lw=1, ls=":", label=f"closed form b* {cf['best_bucket_mb']:.3g} MiB"
        )
    ax2.set_xscale("log")
    ax2.set_xlabel("bucket size (MiB)")
    ax.set_ylabel("step time (ms)")
    ax2.set_ylabel("exposed comm (ms)")
    ax.set_title(f"{sweep['model']} | {sweep['strategy']} | p={sweep['world_size']} | {sweep['network']}", fontsize=9)
    for a in (ax, ax2):
        a.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    try:
        return write_figure(fig, out_png, dpi=120)
    finally:
        plt.close(fig)
