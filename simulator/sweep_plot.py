"""Plot a sweep result (reads the sweep's dict; never re-simulates)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .jsonio import whole_file


def plot_sweep(sweep: Mapping[str, Any], out_png: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sweep["rows"]
    mb = [r["bucket_mb"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(mb, [r["step_time_s"] * 1e3 for r in rows], "-", label="predicted step time")
    ax.plot(mb, [r["overhead_s"] * 1e3 for r in rows], "--", label="predicted exposed communication")
    ax.axvline(sweep["best_bucket_mb"], color="C2", lw=1, label=f"best {sweep['best_bucket_mb']:.3g} MiB")
    cf = sweep["closed_form"]
    if cf.get("best_bucket_mb"):
        ax.axvline(
            cf["best_bucket_mb"], color="C3", lw=1, ls=":", label=f"closed form b* {cf['best_bucket_mb']:.3g} MiB"
        )
    ax.set_xscale("log")
    ax.set_xlabel("bucket size (MiB)")
    ax.set_ylabel("ms")
    ax.set_title(f"{sweep['model']} | {sweep['strategy']} | p={sweep['world_size']} | {sweep['network']}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(out_png)
    try:
        with whole_file(out) as tmp:
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)
    return out
