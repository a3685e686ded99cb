"""The accuracy matrix's table: one row per (network, workload) cell from ``accuracy_matrix.sh``'s folders.

    python benchmarks/accuracy_table.py OUT_DIR > OUT_DIR/matrix.md

Per cell: configurations, median and worst |error| of the predicted step (the worst named), the
share of measured medians inside the predicted 80 % interval, the best torch-ddp bucket predicted
and measured with the measured cost of taking the predicted one (and its 95 % interval, where validate
kept it: ``calibration.validate.summarize_rows``), the in-step probe's factors, the
compute-only baseline's own p10-p90 spread (how noisy the machine was), how many errors are larger than
the measured and compute-only medians' own 95 % intervals can make (``noise_pct`` of validate's rows), how far a
configuration's median moved between validate's rounds (median and worst over the rows: whether the measurement
repeats to the goals; validate since 2026-11-30); then every row that misses 10 %, with its error and that noise,
its rounds' medians and its error against its steps' mean, and, where ``explain_misses.py`` ran, the
largest wrong part of its re-run's recorded step. Goals (issue 10): median < 3 %, worst
< 10 %, coverage 75-90 %.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from explain_misses import SUMMARY, cell_params, describe  # noqa: E402

from calibration.validate import ValidationRow, config_label  # noqa: E402


def _cell(d: Path) -> dict | None:
    p = d / "validation.json"
    if not p.exists():
        return None
    v = json.loads(p.read_text())
    rows = v["rows"]
    params = cell_params(d) or next(iter(sorted(d.glob("params.json"))), None)
    noise = v.get("machine_noise") or {}
    fit = {}
    if params is not None:
        fit = (json.loads(params.read_text()).get("probes") or {}).get("in_step") or {}
    return {
        "rows": rows,
        "n": len(rows),
        "median": v["median_abs_error_pct"],
        "worst": max(rows, key=lambda r: abs(r["error_pct"])),
        "coverage": v.get("interval_coverage"),
        "bias": statistics.median(r["error_pct"] for r in rows),
        "best": (v.get("best_bucket") or {}).get("torch-ddp") or {},
        "fit": fit,
        # the compute-only baseline's own step-to-step spread, as validate measures it for its busy warning
        "spread": noise.get("baseline_spread_pct"),
        # the cores other work kept busy while measuring (CPU time; validate since 2026-11-26)
        "other": noise.get("other_cores"),
        "p": v.get("world_size"),
        "model": v.get("model"),
        "link": v.get("link_mbit"),
        "beyond": (v["n_beyond_noise"], v["n_with_noise"]) if v.get("n_with_noise") else None,
        "rounds": v.get("rounds_apart"),
        "explained": _explained(d),
    }


def _explained(d: Path) -> dict[tuple[str, float | None, float], dict]:
    """``explain_misses.py``'s timelines of the cell's misses, by (strategy, bucket, the matrix row's error:
    an explanation of another run into the same folder matches no row); {} where it did not run or its
    summary cannot be read (said on stderr)."""
    p = d / "explain" / SUMMARY
    if not p.is_file():
        return {}
    try:
        return {(e["strategy"], e["bucket_mb"], e["matrix_error_pct"]): e for e in json.loads(p.read_text())}
    except (ValueError, TypeError, KeyError) as err:
        print(f"accuracy_table: {p}: not read ({err})", file=sys.stderr)
        return {}


def _labels(folder: str, c: dict | None) -> tuple[str, str]:
    """(workload, network) of a cell. The network from its validation.json (Mbit/s, or loopback); the
    workload from accuracy_matrix.sh's ``<model>-<network>`` folder name where the name ends in that
    network, else the JSON's model and the folder (a side experiment's ``p8_unset``, a ``run-2``). A cell
    without results is named from its folder alone."""
    if c is None:
        model, _, net = folder.rpartition("-")
        return (model, net) if model else (folder, "?")
    link = c["link"]
    net = "loopback" if link is None else f"{float(link):g}"
    if folder.endswith("-" + net) and len(folder) > len(net) + 1:
        return folder[: -len(net) - 1], net
    return f"{str(c['model'] or folder).rsplit('/', 1)[-1]} ({folder})", net


def _name(r: dict) -> str:
    return config_label(r["strategy"], r.get("bucket_mb"), unit="")


def _rounds_words(r: dict) -> str:
    """A missing row's rounds' medians and its error against its steps' mean, where validate kept them."""
    row = ValidationRow.from_dict(r)
    if row.rounds_apart_pct is None:
        return ""
    err = row.error_vs_mean_pct
    return f"; its rounds' medians {' / '.join(f'{m * 1e3:.1f}' for m in row.round_medians_s or ())} ms" + (
        "" if err is None else f", {err:+.1f}% against its steps' mean"
    )


def main(out: Path) -> None:
    cells = sorted(p for p in out.iterdir() if p.is_dir())
    print(f"# Accuracy matrix ({out})\n")
    print(
        "| workload | network | configs | median abs. error | signed median | worst (config) | 80% interval coverage "
        "| torch-ddp best bucket pred. / meas. (gap, its 95% interval) | in-step fit: compute x, comm x | baseline spread (other work) "
        "| errors beyond noise | rounds apart: median / worst |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    misses = []
    for d in cells:
        c = _cell(d)
        model, net = _labels(d.name, c)
        if c is None:
            print(f"| {model} | {net} | missing | | | | | | | | | |")
            continue
        w = c["worst"]
        cov = "-" if c["coverage"] is None else f"{c['coverage']:.0%}"
        bb = c["best"]
        ci = bb.get("gap_ci_pct")
        best = (
            f"{bb['predicted_best_mb']:g} / {bb['measured_best_mb']:g} ({bb['predicted_best_measured_gap_pct']:+.1f}%"
            + (f", 95% {ci[0]:+.2f}..{ci[1]:+.2f}" + ("" if bb.get("within_noise") else ": behind") if ci else "")
            + ")"
            if bb
            else "-"
        )
        f = c["fit"]
        fit = f"x{1 + f['contention_c']:.2f}, x{1 + f['comm_contention_c']:.2f}" if f else "-"
        net_name = ("loopback" if net == "loopback" else f"tbf {net} Mbit/s") + (
            f", p = {c['p']}" if c["p"] not in (None, 2) else ""
        )
        print(
            f"| {model} | {net_name} | {c['n']} | {c['median']:.2f}% | {c['bias']:+.2f}% | "
            f"{abs(w['error_pct']):.2f}% ({_name(w)}) | {cov} | {best} | {fit} | "
            + ("-" if c["spread"] is None else f"{c['spread']:.0f}%")
            + ("" if c["other"] is None else f" (other work {c['other']:.1f} cores)")
            + " | "
            + ("-" if c["beyond"] is None else f"{c['beyond'][0]} of {c['beyond'][1]}")
            + " | "
            + ("-" if not c["rounds"] else f"{c['rounds']['median_pct']:.1f} / {c['rounds']['worst_pct']:.1f}%")
            + " |"
        )
        for r in c["rows"]:
            if abs(r["error_pct"]) >= 10:
                key = (r["strategy"], r.get("bucket_mb"), r["error_pct"])
                misses.append((model, net_name, _name(r), r, c["explained"].get(key)))
    if misses:
        print("\nRows missing 10 % (predicted vs measured median, p10-p90 measured, the two medians' noise):\n")
        for model, net, name, r, e in misses:
            print(
                f"- {model}, {net}, {name}: {r['predicted_step_s'] * 1e3:.1f} vs {r['measured_median_s'] * 1e3:.1f} ms "
                f"({r['error_pct']:+.1f}%; measured {r['measured_p10_s'] * 1e3:.1f}-{r['measured_p90_s'] * 1e3:.1f}"
                + (
                    ""
                    if r.get("noise_pct") is None
                    else f"; noise +-{r['noise_pct']:.1f}%"
                    + ("" if abs(r["error_pct"]) > r["noise_pct"] else ": within it")
                )
                + ")"
                + _rounds_words(r)
                + ("" if e is None else f"\n  - timeline (benchmarks/explain_misses.py): {describe(e)}")
            )


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python benchmarks/accuracy_table.py OUT_DIR (a folder written by accuracy_matrix.sh)")
    main(Path(sys.argv[1]))
