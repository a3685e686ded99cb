"""Driver of ``sharded_steps.sharded_task`` (module docstring there); prints the parts' medians, keeps the raw times.

python benchmarks/results/sharded_loopback_2026-11-29/run_sharded_steps.py MODEL BUCKET_MB TURNS > OUT.txt
"""

import json
import os
import statistics as st
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [os.path.dirname(os.path.abspath(__file__)), os.environ.get("PYTHONPATH", "")]
)

from sharded_steps import sharded_task  # noqa: E402

from realrun.launch import RankPool  # noqa: E402

model, bucket_mb, turns = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
barrier = len(sys.argv) > 4 and sys.argv[4] == "barrier"  # a barrier between the optimizer and the broadcasts
with RankPool(2, timeout_s=900) as pool:
    per_rank = pool.run(sharded_task, model, bucket_mb, turns, barrier_before_broadcasts=barrier)
ms = 1e3
print(f"{model}, torch DDP at {bucket_mb} MiB, 2 gloo ranks, {turns} turns of 10 steps")
print("parameters (bytes, owner):", list(zip(per_rank[0]["bytes"], per_rank[0]["owners"])))
for r in per_rank:
    steps = r["sharded"]
    step = [s["broadcast_ends"][-1] - s["t0"] for s in steps]
    bwd = [s["backward_end"] - s["t0"] for s in steps]
    opt = [s["optimizer_end"] - s["backward_end"] for s in steps]
    bc_all = [s["broadcast_ends"][-1] - s["optimizer_end"] for s in steps]
    pl = r["plain"]
    fw = lambda xs: st.median(s["forward_end"] - s["t0"] for s in xs) * ms  # noqa: E731
    bw = lambda xs: st.median(s["backward_end"] - s["forward_end"] for s in xs) * ms  # noqa: E731
    op = lambda xs: st.median(s["optimizer_end"] - s["backward_end"] for s in xs) * ms  # noqa: E731
    print(
        f"rank {r['rank']}: forward / backward / optimizer medians: plain {fw(pl):.2f} / {bw(pl):.2f} / {op(pl):.2f}, "
        f"sharded {fw(steps):.2f} / {bw(steps):.2f} / {op(steps):.2f} ms"
    )
    print(
        f"rank {r['rank']}: plain step {st.median(r['plain_s']) * ms:.2f} ms; sharded step {st.median(step) * ms:.2f} "
        f"= forward+backward {st.median(bwd) * ms:.2f} + local optimizer {st.median(opt) * ms:.2f} + broadcasts "
        f"{st.median(bc_all) * ms:.2f} (medians)"
    )
    n = len(r["bytes"])
    per = [[] for _ in range(n)]
    for s in steps:
        prev = s["optimizer_end"]
        for k, t in enumerate(s["broadcast_ends"]):
            per[k].append(t - prev)
            prev = t
    print(
        "  per broadcast (bytes, owner: median / mean ms): "
        + "; ".join(
            f"{b} r{o}: {st.median(x) * ms:.3f}/{st.mean(x) * ms:.3f}" for b, o, x in zip(r["bytes"], r["owners"], per)
        )
    )
json.dump(
    per_rank,
    open(
        os.path.join(
            os.path.dirname(os.path.abspath(__file__)), f"raw_{model}_{bucket_mb:g}{'_barrier' if barrier else ''}.json"
        ),
        "w",
    ),
)
