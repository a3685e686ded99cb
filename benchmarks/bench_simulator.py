"""Simulator speed: command wall time (start-up included), engine events/s, and scaling.

    python benchmarks/bench_simulator.py [--repeats 10] [--out benchmarks/results/simulator.json]

Prints Markdown tables for BENCHMARKS.md and writes the raw times as JSON:

* command wall times (a fresh process each, start-up included);
* the large-sweep table of issue 12: a 64-size ``torch-ddp`` sweep (the default
  grid) of a seeded synthetic profile of 1,000 / 10,000 / 50,000 tensors on
  ``nccl-h100-ib`` at p = 1024, ddpsim (``simulator.sweep.sweep``) beside a plain-Python
  serial-channel recursion over the same grid (no SimPy, no numpy), timed alternately
  in the same run, after a warm-up; the two must agree on every step time;
* SimPy events per collective of the event model;
* predict scaling with the number of parameters and buckets (event model: gloo, 2 channels).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import math  # noqa: E402
import random  # noqa: E402

from simulator.buckets import mb_to_bytes  # noqa: E402
from simulator.network import CostModel, load_network  # noqa: E402
from simulator.predict import predict  # noqa: E402
from simulator.profile import GradProfile, ParamSpec  # noqa: E402
from simulator.strategies import StrategySpec  # noqa: E402
from simulator.sweep import default_grid_mb, sweep  # noqa: E402
from simulator.units import MIB  # noqa: E402

SWEEP = [
    "sweep",
    "--model",
    "gpt2-xl",
    "--world-size",
    "4096",
    "--network",
    "nccl-h100-ib",
    "--strategy",
    "torch-ddp",
    "--json",
]
SWEEP_PLAIN = ["sweep", "--model", "gpt2-xl", "--world-size", "4096", "--network", "nccl-h100-ib"]
SWEEP_MOE = ["sweep", "--model", "qwen3-moe-235b-a22b", "--world-size", "4096", "--network", "nccl-h100-ib", "--json"]
PREDICT = [
    "predict",
    "--model",
    "gpt2-small",
    "--world-size",
    "8",
    "--o-us",
    "50",
    "--w-gbps",
    "100",
    "--bucket-mb",
    "25",
    "--json",
]


def summary(xs: list[float]) -> dict:
    q = statistics.quantiles(xs, n=10, method="inclusive") if len(xs) >= 3 else [min(xs), max(xs)]
    return {"median": statistics.median(xs), "p10": q[0], "p90": q[-1], "min": min(xs), "max": max(xs), "raw": xs}


def wall(argv: list[str], repeats: int) -> tuple[dict, dict | None]:
    exe = [sys.executable, "-m", "ddpsim"]
    subprocess.run(exe + argv, check=True, capture_output=True, cwd=ROOT)  # warm the file cache
    times, cpu, last = [], [], None
    for _ in range(repeats):
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(exe + argv, check=True, capture_output=True, text=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime)
        last = json.loads(r.stdout) if "--json" in argv else None
    return {**summary(times), "cpu": summary(cpu), "load_avg": os.getloadavg()}, last


# ---- issue 12: large sweeps against a plain recursion ----------------------------------------


def synthetic_large(n: int, seed: int = 12) -> GradProfile:
    """``n`` float32 tensors of log-uniform size (1e3 to 4e6 elements), backward time proportional
    to size (6 ps per element, about 1 ms per 170 MB of gradients, plus 2 us per op)."""
    rng = random.Random(seed)
    params = []
    for i in range(n):
        numel = int(math.exp(rng.uniform(math.log(1e3), math.log(4e6))))
        params.append(ParamSpec(f"p{i}", numel, bwd_s=2e-6 + 6e-12 * numel))
    fwd = sum(p.bwd_s for p in params) / 2
    return GradProfile(f"synthetic-{n}", tuple(params), forward_s=fwd, optimizer_s=1e-3)


def plain_recursion(profile: GradProfile, cost: CostModel, p: int, grid_mb: list[float]) -> list[float]:
    """Step time per cap: DDP's steady buckets (ready order, close at >= cap) on one serial channel,
    ``end = max(ready, end) + T(bytes)``, written as plain Python loops with the scalar cost model."""
    ps = profile.params
    order = profile.ready_order
    out = []
    for mb in grid_mb:
        cap = mb_to_bytes(mb)
        t = profile.forward_s
        end = 0.0
        size = 0
        for i in order:
            par = ps[i]
            t += par.bwd_s
            size += par.nbytes
            if size >= cap:
                end = max(t, end) + cost.allreduce_time_s(size, p)
                size = 0
        if size:
            end = max(t, end) + cost.allreduce_time_s(size, p)
        t += profile.backward_tail_s
        out.append(max(t, end) + profile.optimizer_s)
    return out


BASELINE_CODE = """
import math, random, statistics, sys, time, json
from simulator.network import CostModel, load_network
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import StrategySpec
from simulator.sweep import sweep
n, runs = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(12)
params = []
for i in range(n):
    numel = int(math.exp(rng.uniform(math.log(1e3), math.log(4e6))))
    params.append(ParamSpec(f"p{i}", numel, bwd_s=2e-6 + 6e-12 * numel))
prof = GradProfile(f"synthetic-{n}", tuple(params), forward_s=sum(p.bwd_s for p in params) / 2, optimizer_s=1e-3)
cost = CostModel.from_network(load_network("nccl-h100-ib"))
times = []
for k in range(runs + (1 if runs > 1 else 0)):
    t0 = time.perf_counter()
    res = sweep(prof, cost, StrategySpec("torch-ddp"), 1024)
    times.append(time.perf_counter() - t0)
print(json.dumps({"times": times[1:] if runs > 1 else times, "steps": [r.step_time_s for r in res.rows]}))
"""


def baseline(checkout: str, n: int, runs: int) -> dict:
    """The same sweep on another checkout (e.g. the engine before issue 12), in its own process."""
    r = subprocess.run(
        [sys.executable, "-c", BASELINE_CODE, str(n), str(runs)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": checkout},
        cwd=checkout,
    )
    d = json.loads(r.stdout)
    return {"s": summary(d["times"]), "steps": d["steps"]}


EVENT_CONFIGS = [
    ("1 channel", {"channels": 1}),
    ("2 channels, shared bandwidth", {"channels": 2}),
    ("2 channels, shared, contention 0.3", {"channels": 2, "contention": 0.3}),
    ("1 channel, comm_contention 0.3", {"channels": 1, "comm_contention": 0.3}),
]

BASELINE_EVENTS_CODE = """
import json, sys
from simulator.engine import _Step
from simulator.network import CostModel
from simulator.profile import GradProfile, ParamSpec
from simulator.strategies import StrategySpec, comm_plan
prof = GradProfile("synthetic", tuple(ParamSpec(f"p{i}", 1000, bwd_s=1e-5) for i in range(1000)), forward_s=1e-3)
out = []
for kw in json.loads(sys.argv[1]):
    cost = CostModel.linear(50e-6, 10e9, **kw)
    plan = comm_plan(prof, StrategySpec("torch-ddp", bucket_mb=3999 / MIB), 8)
    step = _Step(prof, plan, cost, 8, [1.0], False)  # the engine before issue 12: (profile, plan, cost, p, factors, record)
    res = step.run(1)
    out.append([next(step.env._eid), res.step_time_s])
print(json.dumps(out))
"""


def baseline_events(checkout: str) -> list[list[float]]:
    """SimPy events scheduled by the engine of another checkout (before issue 12) on the same plans."""
    r = subprocess.run(
        [sys.executable, "-c", BASELINE_EVENTS_CODE, json.dumps([kw for _, kw in EVENT_CONFIGS])],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": checkout},
        cwd=checkout,
    )
    return json.loads(r.stdout)


def large_sweeps(
    repeats: int,
    sizes: tuple[int, ...] = (1000, 10000, 50000),
    baseline_dir: str | None = None,
    baseline_max: int = 10000,
) -> list[dict]:
    cost = CostModel.from_network(load_network("nccl-h100-ib"))
    p = 1024
    rows = []
    for n in sizes:
        prof = synthetic_large(n)
        grid = default_grid_mb(prof)
        assert len(grid) == 64
        ours = sweep(prof, cost, StrategySpec("torch-ddp"), p)  # warm-up (and the answer checked below)
        plain = plain_recursion(prof, cost, p, grid)
        worst = max(abs(r.step_time_s - q) / q for r, q in zip(ours.rows, plain))
        assert worst < 1e-9, f"ddpsim and the plain recursion disagree at {n} tensors: {worst:.3g}"
        t_ours, t_plain = [], []
        reps = repeats if n <= 10000 else max(3, repeats // 2)
        for _ in range(reps):  # alternated, so both see the same load on this shared box
            t0 = time.perf_counter()
            sweep(prof, cost, StrategySpec("torch-ddp"), p)
            t_ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            plain_recursion(prof, cost, p, grid)
            t_plain.append(time.perf_counter() - t0)
        t_events = []
        for _ in range(2 if n > 10000 else reps):  # the event model alone (SimPy), no analytic path
            t0 = time.perf_counter()
            ev = sweep(prof, cost, StrategySpec("torch-ddp"), p, model="events")
            t_events.append(time.perf_counter() - t0)
        worst = max(worst, max(abs(r.step_time_s - q) / q for r, q in zip(ev.rows, plain)))
        n_plans = len({r.n_collectives for r in ours.rows})
        row = {
            "tensors": n,
            "runs": reps,
            "ddpsim_s": summary(t_ours),
            "plain_s": summary(t_plain),
            "events_s": summary(t_events),
            "ratio": statistics.median(t_ours) / statistics.median(t_plain),
            "max_rel_diff": worst,
            "distinct_bucket_counts": n_plans,
            "best_bucket_mb": ours.best_bucket_mb,
        }
        if baseline_dir and n <= baseline_max:
            b = baseline(baseline_dir, n, 3 if n <= 1000 else 1)
            row["baseline_s"] = b["s"]
            row["baseline_max_rel_diff"] = max(abs(x - r.step_time_s) / x for x, r in zip(b["steps"], ours.rows))
        rows.append(row)
    return rows


def events_per_collective(baseline_dir: str | None = None) -> list[dict]:
    """SimPy events the event model schedules per collective: torch-ddp, 1,000 one-tensor buckets, p = 8."""
    out = []
    prof = synthetic(1000)
    base = baseline_events(baseline_dir) if baseline_dir else None
    for k, (label, kw) in enumerate(EVENT_CONFIGS):
        cost = CostModel.linear(50e-6, 10e9, **kw)
        times = []
        for _ in range(4):
            t0 = time.perf_counter()
            res = predict(prof, cost, StrategySpec("torch-ddp", bucket_mb=3999 / MIB), 8, model="events")
            times.append(time.perf_counter() - t0)
        assert res.n_collectives == 1000
        row = {
            "cost": label,
            "simpy_events": res.n_sim_events,
            "per_collective": res.n_sim_events / 1000,
            "predict_s": summary(times[1:]),
        }
        if base:
            row["baseline_per_collective"] = base[k][0] / 1000
            row["baseline_rel_diff"] = abs(base[k][1] - res.step_time_s) / res.step_time_s
        out.append(row)
    return out


def synthetic(n_params: int) -> GradProfile:
    return GradProfile(
        "synthetic", tuple(ParamSpec(f"p{i}", 1000, bwd_s=1e-5) for i in range(n_params)), forward_s=1e-3
    )


def scaling(repeats: int) -> list[dict]:
    cost = CostModel.linear(50e-6, 10e9, channels=2)
    rows = []
    for n_params, n_buckets in [
        (100, 1),
        (1000, 1),
        (1000, 10),
        (1000, 100),
        (1000, 1000),
        (10000, 1),
        (10000, 100),
        (10000, 1000),
        (10000, 10000),
    ]:
        prof = synthetic(n_params)
        per_bucket = n_params // n_buckets * 4000
        spec = StrategySpec("bucketed", bucket_mb=(per_bucket - 1) / MIB)
        times, events = [], 0
        for _ in range(repeats):
            t0 = time.perf_counter()
            res = predict(prof, cost, spec, 8)
            times.append(time.perf_counter() - t0)
            events = res.n_sim_events
        assert res.n_collectives == n_buckets, (res.n_collectives, n_buckets)
        s = summary(times)
        rows.append(
            {
                "params": n_params,
                "buckets": n_buckets,
                "predict_s": s,
                "sim_events": events,
                "events_per_s": events / s["median"],
            }
        )
    return rows


def cli_table(rows: list[tuple[list[str], dict]]) -> None:
    print(
        "| command | runs | wall median s (p10-p90) | CPU median s | load avg (1 min) at end |\n|---|---|---|---|---|"
    )
    for cmd, t in rows:
        print(
            f"| `ddpsim {' '.join(cmd)}` | {len(t['raw'])} | {t['median']:.3f} ({t['p10']:.3f}-{t['p90']:.3f}) "
            f"| {t['cpu']['median']:.3f} | {t['load_avg'][0]:.2f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "simulator.json"))
    ap.add_argument("--baseline", help="another checkout (e.g. `git archive d64e6b1`) to time the same large sweeps on")
    ap.add_argument("--cli-only", action="store_true", help="only the command wall times")
    ap.add_argument("--baseline-max", type=int, default=10000, help="largest tensor count to run the baseline at")
    a = ap.parse_args()
    sweep_t, sweep_d = wall(SWEEP, a.repeats)
    assert sweep_d is not None
    plain_t, _ = wall(SWEEP_PLAIN, a.repeats)
    moe_t, moe_d = wall(SWEEP_MOE, max(3, a.repeats // 2))
    assert moe_d is not None
    pred_t, _ = wall(PREDICT, a.repeats)
    if a.cli_only:
        res = {
            "machine": platform.platform(),
            "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d"),
            "cpus": os.cpu_count(),
            "commands": {
                "ddpsim " + " ".join(c): t
                for c, t in [(SWEEP, sweep_t), (SWEEP_PLAIN, plain_t), (SWEEP_MOE, moe_t), (PREDICT, pred_t)]
            },
        }
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1))
        cli_table([(SWEEP, sweep_t), (SWEEP_PLAIN, plain_t), (SWEEP_MOE, moe_t), (PREDICT, pred_t)])
        return
    large = large_sweeps(max(3, a.repeats // 2), baseline_dir=a.baseline, baseline_max=a.baseline_max)
    epc = events_per_collective(a.baseline)
    sc = scaling(max(3, a.repeats // 2))
    res = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg(),
        "sweep_cmd": "ddpsim " + " ".join(SWEEP),
        "sweep_points": len(sweep_d["results"]["rows"]),  # the --json envelope (schema, command, inputs, results)
        "sweep_wall_s": sweep_t,
        "sweep_plain_cmd": "ddpsim " + " ".join(SWEEP_PLAIN),
        "sweep_plain_wall_s": plain_t,
        "sweep_moe_cmd": "ddpsim " + " ".join(SWEEP_MOE),
        "sweep_moe_wall_s": moe_t,
        "predict_cmd": "ddpsim " + " ".join(PREDICT),
        "predict_wall_s": pred_t,
        "large_sweeps": large,
        "events_per_collective": epc,
        "scaling": sc,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    cli_table([(SWEEP, sweep_t), (SWEEP_PLAIN, plain_t), (SWEEP_MOE, moe_t), (PREDICT, pred_t)])
    print(
        "\n| tensors | runs | ddpsim median s (p10-p90) | plain recursion median s (p10-p90) | ddpsim / plain "
        "| event model only, median s (runs) | max rel diff | baseline checkout, median s (runs) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in large:
        o, q, e = r["ddpsim_s"], r["plain_s"], r["events_s"]
        base = r.get("baseline_s")
        btxt = f"{base['median']:.3f} ({len(base['raw'])}), rel diff {r['baseline_max_rel_diff']:.1e}" if base else "-"
        print(
            f"| {r['tensors']:,} | {r['runs']} | {o['median']:.3f} ({o['p10']:.3f}-{o['p90']:.3f}) | "
            f"{q['median']:.3f} ({q['p10']:.3f}-{q['p90']:.3f}) | {r['ratio']:.2f} | {e['median']:.3f} ({len(e['raw'])}) "
            f"| {r['max_rel_diff']:.1e} | {btxt} |"
        )
    print(
        "\n| event model, 1,000 buckets | SimPy events | per collective | predict median ms (p10-p90) "
        "| baseline checkout: per collective (step rel diff) |\n|---|---|---|---|---|"
    )
    for r in epc:
        t = r["predict_s"]
        b = (
            f"{r['baseline_per_collective']:.2f} ({r['baseline_rel_diff']:.1e})"
            if "baseline_per_collective" in r
            else "-"
        )
        print(
            f"| {r['cost']} | {r['simpy_events']} | {r['per_collective']:.2f} | "
            f"{t['median'] * 1e3:.1f} ({t['p10'] * 1e3:.1f}-{t['p90'] * 1e3:.1f}) | {b} |"
        )
    print("\n| params | buckets | predict median ms | p90 ms | engine events | events/s |\n|---|---|---|---|---|---|")
    for r in sc:
        print(
            f"| {r['params']} | {r['buckets']} | {r['predict_s']['median'] * 1e3:.2f} | {r['predict_s']['p90'] * 1e3:.2f} | {r['sim_events']} | {r['events_per_s']:,.0f} |"
        )


if __name__ == "__main__":
    main()
