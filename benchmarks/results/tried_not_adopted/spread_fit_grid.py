# Why the spread per-byte work does not fit gpt over loopback (m6): the two in-step probes' simulated
# backward ends and all-reduce sums over a grid of (c_comm, k_byte, k_call), with the spread patch applied.
#   git worktree add --detach /tmp/wt HEAD && (cd /tmp/wt && git apply benchmarks/results/tried_not_adopted/spread_per_byte_work.patch)
#   zcat benchmarks/results/accuracy_matrix_m6/gpt-loopback/validation.calibration.jsonl.gz > /tmp/cal.jsonl
#   .venv/bin/python benchmarks/results/tried_not_adopted/spread_fit_grid.py /tmp/wt /tmp/cal.jsonl
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
import calibration.step_probe as sp  # noqa: E402
from calibration.params import Params  # noqa: E402
from realrun.records import read_records  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
p = Params.load(ROOT / "benchmarks/results/accuracy_matrix_m6/gpt-loopback/validation.params.json")
recs = read_records(sys.argv[2])
tl = [r for r in recs if r["kind"] == "step_probe"][0]["timeline"]
tlf = [r for r in recs if r["kind"] == "step_probe_fine"][0]["timeline"]
prof, cost = p.profile(), p.cost_model()
t, tf = sp.measured_targets(tl), sp.measured_targets(tlf)
print(
    "measured: coarse bwd",
    t["compute_s"],
    "comm",
    t["comm_sum_s"],
    "| fine bwd",
    tf["compute_s"],
    "comm",
    tf["comm_sum_s"],
)
mb, mbf = tl["bucket_mb"], tlf["bucket_mb"]
prof_c, prof_f = sp._scaled(prof, t)[0], sp._scaled(prof, tf)[0]
for cc in (1.0, 2.0):
    for kb in (0, 1e-9, 2e-9, 4e-9, 8e-9):
        for k in (0, 3e-4, 1e-3):
            a = sp._sim(prof_c, cost, 2, mb, 0, cc, k, kb)
            b = sp._sim(prof_f, cost, 2, mbf, 0, cc, k, kb)
            print(
                f"cc {cc} kb {kb:.0e} k {k:.0e}: coarse bwd {a['compute_s'] * 1e3:.1f} comm {a['comm_sum_s'] * 1e3:.1f}"
                f" | fine bwd {b['compute_s'] * 1e3:.1f} comm {b['comm_sum_s'] * 1e3:.1f}"
            )
print("fit:", sp._fit_work(prof, cost, 2, (mb, t), (mbf, tf)))
