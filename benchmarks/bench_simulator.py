"""Simulator speed: command wall time (start-up included), engine events/s, and scaling.

    python benchmarks/bench_simulator.py [--repeats 10] [--out benchmarks/results/simulator.json]

Prints Markdown tables for BENCHMARKS.md and writes the raw times as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.network import CostModel  # noqa: E402
from simulator.predict import predict  # noqa: E402
from simulator.profile import GradProfile, ParamSpec  # noqa: E402
from simulator.strategies import StrategySpec  # noqa: E402

SWEEP = ["sweep", "--model", "gpt2-xl", "--world-size", "4096", "--network", "nccl-h100-ib", "--strategy", "torch-ddp", "--json"]
PREDICT = ["predict", "--model", "gpt2-small", "--world-size", "8", "--o-us", "50", "--w-gbps", "100", "--bucket-mb", "25", "--json"]


def summary(xs: list[float]) -> dict:
    q = statistics.quantiles(xs, n=10, method="inclusive") if len(xs) >= 3 else [min(xs), max(xs)]
    return {"median": statistics.median(xs), "p10": q[0], "p90": q[-1], "min": min(xs), "max": max(xs), "raw": xs}


def wall(argv: list[str], repeats: int) -> tuple[dict, dict]:
    exe = [sys.executable, "-m", "ddpsim"]
    subprocess.run(exe + argv, check=True, capture_output=True, cwd=ROOT)  # warm the file cache
    times, last = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = subprocess.run(exe + argv, check=True, capture_output=True, text=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
        last = json.loads(r.stdout)
    return summary(times), last


def synthetic(n_params: int) -> GradProfile:
    return GradProfile("synthetic", tuple(ParamSpec(f"p{i}", 1000, bwd_s=1e-5) for i in range(n_params)), forward_s=1e-3)


def scaling(repeats: int) -> list[dict]:
    cost = CostModel.linear(50e-6, 10e9, channels=2)
    rows = []
    for n_params, n_buckets in [(100, 1), (1000, 1), (1000, 10), (1000, 100), (1000, 1000), (10000, 1), (10000, 100), (10000, 1000), (10000, 10000)]:
        prof = synthetic(n_params)
        per_bucket = n_params // n_buckets * 4000
        spec = StrategySpec("bucketed", bucket_mb=(per_bucket - 1) / 2**20)
        times, events = [], 0
        for _ in range(repeats):
            t0 = time.perf_counter()
            res = predict(prof, cost, spec, 8)
            times.append(time.perf_counter() - t0)
            events = res.n_sim_events
        assert res.n_collectives == n_buckets, (res.n_collectives, n_buckets)
        s = summary(times)
        rows.append({"params": n_params, "buckets": n_buckets, "predict_s": s, "sim_events": events,
                     "events_per_s": events / s["median"]})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "simulator.json"))
    a = ap.parse_args()
    sweep_t, sweep_d = wall(SWEEP, a.repeats)
    pred_t, _ = wall(PREDICT, a.repeats)
    sc = scaling(max(3, a.repeats // 2))
    res = {"machine": platform.platform(), "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
           "sweep_cmd": "ddpsim " + " ".join(SWEEP), "sweep_points": len(sweep_d["rows"]), "sweep_wall_s": sweep_t,
           "predict_cmd": "ddpsim " + " ".join(PREDICT), "predict_wall_s": pred_t, "scaling": sc}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    print("| command | runs | median s | p10 s | p90 s |\n|---|---|---|---|---|")
    print(f"| `{res['sweep_cmd']}` ({res['sweep_points']} sizes) | {a.repeats} | {sweep_t['median']:.3f} | {sweep_t['p10']:.3f} | {sweep_t['p90']:.3f} |")
    print(f"| `{res['predict_cmd']}` | {a.repeats} | {pred_t['median']:.3f} | {pred_t['p10']:.3f} | {pred_t['p90']:.3f} |")
    print("\n| params | buckets | predict median ms | p90 ms | engine events | events/s |\n|---|---|---|---|---|---|")
    for r in sc:
        print(f"| {r['params']} | {r['buckets']} | {r['predict_s']['median'] * 1e3:.2f} | {r['predict_s']['p90'] * 1e3:.2f} | {r['sim_events']} | {r['events_per_s']:,.0f} |")


if __name__ == "__main__":
    main()
