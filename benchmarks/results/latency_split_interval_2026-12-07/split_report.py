"""Rule X1's claims (b) and (c): intervals away from the calibrated world size, before and after the split is drawn.

    python split_report.py

(b) The stored 2026-11-23 world-size run (``../worldsize-params-p2p4.json`` with its cross-p fit dropped: the
p = 2 calibration alone, as ``benchmarks/bench_worldsize.py`` made it; ``../worldsize-validation-p4.json``: gpt over
200 Mbit/s, 5 rows measured at p = 4): each row's 80 % interval of the median of its steps, predicted as
``bench_worldsize.repredict`` does (the profile rescaled to the row's compute scale, validate's order cost), with
the fit's errors (o, w, contention: ``Params.uncertainty``; the compute-only steps were not stored, so no compute
spread, and that run predates the step check) and with the split held (before) or drawn (after).
(c) ``predict`` from a p = 2 calibration (run m63links' gpt over 1000 Mbit/s) at p = 64 and 4096, torch DDP at
25 MiB, the 80 % interval of a long run's median, held and drawn; and the best of a 0.25-256 MiB sweep at the two
ends of the split (0 and 1).
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from calibration.params import Params  # noqa: E402
from calibration.validate import order_cost  # noqa: E402
from simulator.interval import Uncertainty, step_interval  # noqa: E402
from simulator.network import ASSUMED_LATENCY_SHARE  # noqa: E402
from simulator.predict import predict  # noqa: E402
from simulator.strategies import StrategySpec  # noqa: E402
from simulator.sweep import sweep  # noqa: E402


def held(cost):
    return replace(cost, latency_share=ASSUMED_LATENCY_SHARE)  # the same split, given: not drawn


def claim_b() -> None:
    joint = Params.load(HERE.parent / "worldsize-params-p2p4.json")
    single = replace(joint, abg=None, probes={k: v for k, v in joint.probes.items() if k != "in_step_by_p"})
    val = json.loads((HERE.parent / "worldsize-validation-p4.json").read_text())
    p, prof = val["world_size"], single.profile()
    block = int(val.get("block") or 1)
    unc: Uncertainty = single.uncertainty(world_size=2)
    cost = order_cost(single.cost_model(world_size=p), True, block)
    print(f"(b) gpt, 200 Mbit/s, from p = 2 to p = {p}; {cost.provenance(p)['text']}")
    inside = {"held": 0, "drawn": 0}
    for r in val["rows"]:
        spec = StrategySpec(r["strategy"], bucket_mb=r["bucket_mb"])
        pr = prof.scaled(r.get("compute_scale", 1.0))
        m = r["measured_median_s"]
        n = int(r.get("steps") or 10)
        out = []
        for name, c in (("held", held(cost)), ("drawn", cost)):
            iv = step_interval(pr, c, spec, p, unc, draws=200, steps=n)
            inside[name] += iv.lo_s <= m <= iv.hi_s
            out.append(f"{name} {iv.lo_s * 1e3:.0f}-{iv.hi_s * 1e3:.0f}")
        point = predict(pr, cost, spec, p).step_time_s
        print(
            f"  {r['strategy']:10s} {r['bucket_mb']!s:5s} measured {m * 1e3:.0f} ms, predicted {point * 1e3:.0f}: "
            + ", ".join(out)
        )
    print(
        f"  inside the 80 % interval: held {inside['held']} of {len(val['rows'])}, drawn {inside['drawn']} of {len(val['rows'])}"
    )


def claim_c() -> None:
    path = HERE.parent / "accuracy_matrix_m63links/gpt-1000/validation.params-1000mbit.json"
    params = Params.load(path)
    prof = params.profile()
    unc = params.uncertainty(world_size=2)
    spec = StrategySpec("torch-ddp", bucket_mb=25.0)
    grid = [0.25 * 2**k for k in range(11)]
    print("(c) gpt, 1000 Mbit/s calibration at p = 2 (run m63links), torch DDP at 25 MiB, a long run's median")
    for p in (64, 4096):
        cost = params.cost_model(world_size=p)
        point = predict(prof, cost, spec, p).step_time_s
        ivs = {
            name: step_interval(prof, c, spec, p, unc, draws=200, steps=None)
            for name, c in (("held", held(cost)), ("drawn", cost))
        }
        best = {}
        for share in (0.0, ASSUMED_LATENCY_SHARE, 1.0):
            sw = sweep(prof, replace(cost, latency_share=share), StrategySpec("torch-ddp", bucket_mb=grid[0]), p, grid)
            best[share] = (
                sw.best_bucket_mb
                if hasattr(sw, "best_bucket_mb")
                else sw.bucket_mb[min(range(len(sw.rows)), key=lambda i: sw.rows[i].step_time_s)]
            )
        print(
            f"  p = {p}: predicted {point * 1e3:.0f} ms; 80 % held {ivs['held'].lo_s * 1e3:.0f}-{ivs['held'].hi_s * 1e3:.0f}, "
            f"drawn {ivs['drawn'].lo_s * 1e3:.0f}-{ivs['drawn'].hi_s * 1e3:.0f} ms; best torch-ddp cap of 0.25-256 MiB at "
            f"share 0 / {ASSUMED_LATENCY_SHARE:.2f} / 1: " + " / ".join(f"{best[s]:g}" for s in best) + " MiB"
        )


if __name__ == "__main__":
    claim_b()
    claim_c()
