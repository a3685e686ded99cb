"""The figures of benchmarks/results/device_roofline.md: roofline predictions vs measured profiles.

    PYTHONPATH=. OMP_NUM_THREADS=1 python scripts/device_roofline_table.py \\
        --device cpu-core --profiles benchmarks/results/device_roofline/profile-*-cpu.json

For each measured profile (``ddpsim profile``): forward, backward and forward +
backward predicted from the device spec alone, then with the efficiencies fitted
to each *other* profile (leave-one-out: calibrated on model A, predicted for
model B), against the measurement. ``--h100`` prints the issue-11 GPT on
h100-sxm in fp32, tf32 and bf16 at block 1024 and 64 from the spec alone.
Prints Markdown.
"""

from __future__ import annotations

import argparse
import statistics

from ddpsim.device_model import efficiency_from_profile, roofline_profile
from simulator import zoo
from simulator.profile import GradProfile


def _pct(pred: float, meas: float) -> str:
    return f"{(pred - meas) / meas * 100:+.1f}%"


def cpu_tables(device: str, paths: list[str]) -> None:
    dev = zoo.load_device(device)
    measured = {p: GradProfile.load(p) for p in paths}
    print(f"### Spec alone ({device})\n")
    print("| model | batch | kernels | fwd ms meas / pred | bwd ms meas / pred | fwd+bwd error | bound (kernels) |")
    print("|---|---|---|---|---|---|---|")
    errs = []
    for m in measured.values():
        prof, _t = roofline_profile(m.model, m.samples_per_step, dev)
        fb_m, fb_p = m.forward_s + m.backward_s, prof.forward_s + prof.backward_s
        errs.append(abs(fb_p - fb_m) / fb_m * 100)
        b = prof.env["bound_kernels"]
        print(
            f"| {m.model} | {m.samples_per_step} | {prof.env['kernels']} | {m.forward_s * 1e3:.2f} / {prof.forward_s * 1e3:.2f} "
            f"| {m.backward_s * 1e3:.2f} / {prof.backward_s * 1e3:.2f} | {_pct(fb_p, fb_m)} "
            f"| {b.get('compute', 0)} compute, {b.get('memory', 0)} memory, {b.get('launch', 0)} launch |"
        )
    print(f"\nmedian |error| of forward+backward: {statistics.median(errs):.1f}%, worst {max(errs):.1f}%\n")
    print("### Calibrated on one model, predicted for the others (forward+backward)\n")
    names = [m.model for m in measured.values()]
    print("| calibrated on | matmul eff | memory eff | launch us | " + " | ".join(names) + " | median abs, others |")
    print("|---|---|---|---|" + "---|" * len(names) + "---|")
    for src in paths:
        eff, _rep = efficiency_from_profile(src, dev)
        cells, others = [], []
        for p, m in measured.items():
            prof, _t = roofline_profile(m.model, m.samples_per_step, dev, eff=eff)
            fb_m, fb_p = m.forward_s + m.backward_s, prof.forward_s + prof.backward_s
            e = (fb_p - fb_m) / fb_m * 100
            cells.append(f"{fb_p * 1e3:.2f} ({e:+.1f}%)" + (" (fit)" if p == src else ""))
            if p != src:
                others.append(abs(e))
        print(
            f"| {measured[src].model} | {eff.matmul:.3f} | {eff.memory:.3f} | {eff.launch_s * 1e6:.2f} | "
            + " | ".join(cells)
            + f" | {statistics.median(others):.1f}% |"
        )
    print(
        "\nmeasured forward+backward, ms: "
        + ", ".join(f"{m.model} {(m.forward_s + m.backward_s) * 1e3:.2f}" for m in measured.values())
    )


def h100_table() -> None:
    targets = {
        ("fp32", 1024): (121.7, 40.1, 83.7, 0.4),
        ("tf32", 1024): (47.7, None, None, None),
        ("bf16", 1024): (27.5, None, None, None),
        ("fp32", 64): (None, 5.8, 8.0, None),
    }
    print("### H100 SXM, issue-11 GPT (12 layers, 768 wide, 12 heads, vocab 4096, batch 8), spec alone\n")
    print("| dtype | block | measured (issue 11) ms | predicted fwd / bwd / opt / step ms | error |")
    print("|---|---|---|---|---|")
    for (dt, blk), (step, fwd, bwd, _opt) in targets.items():
        spec = f"gpt:n_layer=12,n_embd=768,n_head=12,block_size={blk}"
        p, _t = roofline_profile(spec, 8, "h100-sxm", dt)
        meas = []
        errs = []
        if step is not None:
            meas.append(f"step {step}")
            errs.append(f"step {_pct(p.compute_s * 1e3, step)}")
        if fwd is not None:
            meas.append(f"fwd {fwd}, bwd {bwd}")
            errs.append(f"fwd {_pct(p.forward_s * 1e3, fwd)}, bwd {_pct(p.backward_s * 1e3, bwd)}")
        print(
            f"| {dt} | {blk} | {', '.join(meas)} | {p.forward_s * 1e3:.2f} / {p.backward_s * 1e3:.2f} / "
            f"{p.optimizer_s * 1e3:.2f} / {p.compute_s * 1e3:.2f} | {'; '.join(errs)} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu-core")
    ap.add_argument("--profiles", nargs="*", default=[])
    ap.add_argument("--h100", action="store_true")
    a = ap.parse_args()
    if a.profiles:
        cpu_tables(a.device, a.profiles)
    if a.h100:
        h100_table()


if __name__ == "__main__":
    main()
