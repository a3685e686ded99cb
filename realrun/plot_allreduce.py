"""Plot of all-reduce records: time vs message size, log-log, one line per configuration.

Reads records (never runs anything). Each line is one (kind, impl, backend,
world size, link) with the median per size and a p10-p90 bar.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence


def plot_allreduce(records: Sequence[dict[str, Any]], out_png: str | Path) -> Path:
    if not records:
        raise ValueError("no records to plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        key = (r["impl"], r["backend"], r["world_size"], r.get("link_mbit"))
        lines[key].append(r)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (impl, backend, p, link), rs in sorted(lines.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        rs = sorted(rs, key=lambda r: r["msg_bytes"])
        x = [r["msg_bytes"] for r in rs]
        y = [r["median_s"] for r in rs]
        err = [[r["median_s"] - r["p10_s"] for r in rs], [r["p90_s"] - r["median_s"] for r in rs]]
        label = f"{impl} {backend} p={p}" + (f" {link:g} Mbit/s" if link else "")
        ax.errorbar(x, y, yerr=err, marker="o", ms=3, capsize=2, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("time per call (s), median, p10-p90")
    ax.set_title("collective time vs message size (bench-allreduce)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
