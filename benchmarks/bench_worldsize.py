"""Calibrate at small world sizes, predict and measure at a larger one (issue 11, "World size").

    python benchmarks/bench_worldsize.py [--out runs/worldsize] [--link-mbit 200] [--steps 10]

1. ``ddpsim calibrate --world-size 2,4 --link-mbit R``: everything at p = 2, the all-reduce again at
   p = 4, one ring model fitted across both (``params-p2p4.json``);
2. ``params-p2.json``: the same calibration with the cross-p fit dropped, i.e. what
   ``ddpsim calibrate --world-size 2`` writes from the same p = 2 measurements (the latency split
   then assumed);
3. ``ddpsim validate --world-size 4 --params params-p2.json --link-mbit R``: every configuration run
   for real at p = 4 beside a compute-only baseline, predicted from the p = 2 calibration;
4. the same measured rows predicted again from ``params-p2p4.json`` (same compute rescale), so both
   models are compared against one measurement.

Writes ``worldsize.json`` (both tables, summaries, commands, load averages) and ``worldsize.md`` in
``--out``. Needs root for the emulated links; takes about 10 minutes on a 2-core box at 200 Mbit/s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(cmd: list[str], log: list[dict[str, Any]]) -> None:
    t0 = time.time()
    load0 = os.getloadavg()
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run(cmd, check=True, env=env)
    log.append(
        {
            "command": " ".join(["ddpsim", *cmd[3:]]),
            "wall_s": round(time.time() - t0, 1),
            "loadavg_before": [round(x, 2) for x in load0],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        }
    )


def repredict(validation: dict[str, Any], params: Any) -> list[dict[str, Any]]:
    """Each measured row predicted from ``params`` with the row's own compute rescale."""
    from calibration.validate import order_cost
    from simulator.predict import predict
    from simulator.strategies import StrategySpec

    prof = params.profile()
    p = validation["world_size"]
    cost = params.cost_model(world_size=p)
    block = int(validation.get("block") or 1)  # the turns its steps were measured in (validate's result says)
    out = []
    for r in validation["rows"]:
        spec = StrategySpec(r["strategy"], bucket_mb=r["bucket_mb"])
        scale = r.get("compute_scale", 1.0)
        res = predict(prof.scaled(scale) if scale != 1.0 else prof, order_cost(cost, scale != 1.0, block), spec, p)
        m = r["measured_median_s"]
        out.append(
            {
                "strategy": r["strategy"],
                "bucket_mb": r["bucket_mb"],
                "measured_median_s": m,
                "measured_p10_s": r["measured_p10_s"],
                "measured_p90_s": r["measured_p90_s"],
                "predicted_step_s": res.step_time_s,
                "error_pct": (res.step_time_s - m) / m * 100.0,
            }
        )
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    errs = [abs(r["error_pct"]) for r in rows]
    return {"median_abs_error_pct": statistics.median(errs), "worst_abs_error_pct": max(errs)}


def markdown(doc: dict[str, Any]) -> str:
    a, b = doc["from_p2"], doc["from_p2p4"]
    lines = [
        "| strategy | bucket MiB | measured ms (p10..p90) | from p = 2: predicted ms | error | "
        "from p = 2, 4: predicted ms | error |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for ra, rb in zip(a["rows"], b["rows"]):
        bucket = f"{ra['bucket_mb']:g}" if ra["bucket_mb"] is not None else "-"
        lines.append(
            f"| {ra['strategy']} | {bucket} | {ra['measured_median_s'] * 1e3:.1f} "
            f"({ra['measured_p10_s'] * 1e3:.1f}..{ra['measured_p90_s'] * 1e3:.1f}) | "
            f"{ra['predicted_step_s'] * 1e3:.1f} | {ra['error_pct']:+.1f}% | "
            f"{rb['predicted_step_s'] * 1e3:.1f} | {rb['error_pct']:+.1f}% |"
        )
    lines.append(
        f"| **median / worst \\|error\\|** | | | | **{a['median_abs_error_pct']:.1f}% / "
        f"{a['worst_abs_error_pct']:.1f}%** | | **{b['median_abs_error_pct']:.1f}% / {b['worst_abs_error_pct']:.1f}%** |"
    )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/worldsize")
    ap.add_argument("--model", default="gpt")
    ap.add_argument("--link-mbit", type=float, default=200.0)
    ap.add_argument("--calibrate-world-sizes", default="2,4")
    ap.add_argument("--validate-world-size", type=int, default=4)
    ap.add_argument("--strategies", default="torch-ddp,flat,individual")
    ap.add_argument("--bucket-mb", default="1,4,25")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--sizes", default=None, help="all-reduce sizes for calibrate --sizes (default: calibrate's)")
    args = ap.parse_args()

    from calibration.params import Params

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    py = [sys.executable, "-m", "ddpsim"]
    link = f"{args.link_mbit:g}"
    log: list[dict[str, Any]] = []
    joint_path, p2_path = out / "params-p2p4.json", out / "params-p2.json"
    run(
        py
        + ["calibrate", "--model", args.model, "--world-size", args.calibrate_world_sizes, "--link-mbit", link]
        + ["--out", str(joint_path), "--records", str(out / "calibration.jsonl")]
        + (["--sizes", args.sizes] if args.sizes else []),
        log,
    )
    joint = Params.load(joint_path)
    # the p = 2 calibration alone: its own measurements, latency split assumed, contention from p = 2
    single = replace(joint, abg=None, probes={k: v for k, v in joint.probes.items() if k != "in_step_by_p"})
    single.save(p2_path)
    val_path = out / "validation-p4-from-p2.json"
    run(
        py
        + ["validate", "--model", args.model, "--world-size", str(args.validate_world_size), "--link-mbit", link]
        + ["--params", str(p2_path), "--strategy", args.strategies, "--bucket-mb", args.bucket_mb]
        + ["--steps", str(args.steps), "--out", str(val_path), "--records", str(out / "validation.jsonl")],
        log,
    )
    val = json.loads(val_path.read_text())
    rows_a = repredict(val, single)
    rows_b = repredict(val, joint)
    for r, v in zip(rows_a, val["rows"]):  # the re-prediction is validate's own
        assert abs(r["predicted_step_s"] - v["predicted_step_s"]) <= 1e-9 * v["predicted_step_s"], (r, v)
    doc = {
        "machine": f"{platform.node()}: {os.cpu_count()} cores, {platform.platform()}",
        "date": time.strftime("%Y-%m-%d"),
        "model": args.model,
        "link_mbit": args.link_mbit,
        "world_size": val["world_size"],
        "commands": log,
        "compute_scale": val.get("compute_scale"),
        "measured_compute_s": val.get("measured_compute_s"),
        "network_p2": single.cost_model().provenance(val["world_size"]),
        "network_p2p4": joint.cost_model().provenance(val["world_size"]),
        "terms_p2": single.network_terms().to_dict(),
        "terms_p2p4": joint.network_terms().to_dict(),
        "from_p2": {**summary(rows_a), "rows": rows_a},
        "from_p2p4": {**summary(rows_b), "rows": rows_b},
    }
    (out / "worldsize.json").write_text(json.dumps(doc, indent=1) + "\n")
    md = markdown(doc)
    (out / "worldsize.md").write_text(md)
    print(md)
    print(f"from p = 2: {doc['network_p2']['text']}")
    print(f"from p = 2, 4: {doc['network_p2p4']['text']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
