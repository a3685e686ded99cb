"""The in-step probe in a training job's order, against the leftover term: which predicts turns of 10 better?

    PATH=.venv/bin:$PATH python benchmarks/results/micro_dlrm_order_parts/probe_order.py OUT [MODEL]

Two gloo ranks on loopback, in this order, one stretch of time:
1. ``ddpsim calibrate`` (its in-step probe one step a turn, as always) -> params A, leftover fitted;
2. the in-step probe again, coarse and fine caps and as many steps, in turns of 10 -> a copy of the
   calibration's records with these probe records in place of its own -> ``calibrate --refit`` -> params B
   (its probe's compute-only steps follow their own, its DDP steps their own: the order of the rows below;
   no leftover is fitted from records in turns);
3. ``ddpsim validate --block 10`` from A (17 configurations);
4. the same steps replayed from A without its leftover, and from B.
Prints the three summaries; everything under OUT.
"""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path


def run(*cmd):
    print("$", " ".join(map(str, cmd)), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


def main():
    out = Path(sys.argv[1])
    model = sys.argv[2] if len(sys.argv) > 2 else "micro-dlrm"
    out.mkdir(parents=True, exist_ok=False)
    run("ddpsim", "calibrate", "--model", model, "--out-dir", out / "cal", "--quiet")
    recs = [json.loads(x) for x in open(out / "cal" / "calibration.jsonl")]
    probes = {r["kind"]: r for r in recs if r["kind"] in ("step_probe", "step_probe_fine")}

    from calibration.calibrate import open_pool
    from calibration.step_probe import measure_step_probe

    turns = {}
    with open_pool(2, "gloo", None, 1800.0) as pool:
        for kind, r in probes.items():
            tl = r["timeline"]
            rec = measure_step_probe(pool, model, r["batch_size"], tl["bucket_mb"], tl["steps"], warmup=1, block=10)
            turns[kind] = {**r, "timeline": rec.to_dict()}
            turns[kind].pop("fit", None)
            print(f"{kind} in turns of 10: {tl['steps']} steps at {tl['bucket_mb']:g} MiB", flush=True)
    with open(out / "calibration_probe_in_turns.jsonl", "w") as f:
        for r in recs:
            f.write(json.dumps(turns.get(r["kind"], r)) + "\n")
    run("ddpsim", "calibrate", "--refit", out / "calibration_probe_in_turns.jsonl", "--out", out / "params_B.json")
    run(
        "ddpsim",
        "validate",
        "--params",
        out / "cal" / "params.json",
        "--model",
        model,
        "--block",
        "10",
        "--out-dir",
        out / "val",
    )
    from calibration.params import Params

    a = Params.load(out / "cal" / "params.json")
    no_left = replace(a, probes={**a.probes, "in_step": {**a.probes["in_step"], "leftover_s": 0.0}})
    no_left.save(out / "params_A_without_leftover.json")
    for name, p in (("A_without_leftover", out / "params_A_without_leftover.json"), ("B", out / "params_B.json")):
        run(
            "ddpsim",
            "validate",
            "--replay",
            out / "val" / "validation.jsonl",
            "--params",
            p,
            "--out",
            out / f"replay_{name}.json",
            "--quiet",
        )
    import statistics as st

    for name, f in (
        ("A (leftover)", out / "val" / "validation.json"),
        ("A without leftover", out / "replay_A_without_leftover.json"),
        ("B (probe in turns)", out / "replay_B.json"),
    ):
        r = json.load(open(f))
        e = [x["error_pct"] for x in r["rows"]]
        print(
            f"{name:20s} median |error| {st.median(abs(x) for x in e):5.2f} %, worst {max(abs(x) for x in e):5.2f} %, "
            f"coverage {r.get('interval_coverage')}, rows: " + " ".join(f"{x:+.1f}" for x in e),
            flush=True,
        )


if __name__ == "__main__":
    main()
