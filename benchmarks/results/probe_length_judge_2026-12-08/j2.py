"""Judge J2 of rules.txt (reads run.sh's folder, measures nothing): per workload, every params' recommendation
(full = the probe at >= 4 s a cap, w<i> = its >= 1 s windows; windows.py's recs.json) is given the gap of its setting
to the best setting measured in the workload's one shared `tune --verify` (median over median, as tune's verify
has it; the 95 % interval with the steps resampled in pairs, ``realrun.stats.paired_gap_interval``). Then P1 and
P1b: the mean gap and the share within 3 % for full and for the windows, each workload weighted equally.

    PYTHONPATH=.:benchmarks python benchmarks/results/probe_length_judge_2026-12-08/j2.py OUT[:VERIFY]...

VERIFY: a workload's verify folder to read where it has one (verify_long: rules.txt's amendment), else verify.
Several run folders (rounds) pool: each workload of each round weighs the same (D2 of rules.txt).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from tune_verify_table import steps_by_setting

from realrun.stats import paired_gap_interval


def setting_caps(name: str, tune: dict) -> set[str]:
    """The caps a verify setting stands for ("default", or a cap written %g): "grid 16 = grid 64", "recommended"."""
    out = set()
    for part in name.split(" = "):
        if part == "default":
            out.add("default")
        elif part == "recommended":
            out.add("default" if tune.get("keep_default") else f"{tune['recommended_bucket_mb']:g}")
        elif part.startswith("grid "):
            out.add(f"{float(part[5:]):g}")
    return out


def main(runs: list[str]) -> None:
    by_version: dict[str, dict[str, list[float]]] = {"full": {}, "windows": {}}
    hits: dict[str, dict[str, list[bool]]] = {"full": {}, "windows": {}}
    for run in runs:
        root, _, which = run.partition(":")
        judge(Path(root), which or "verify", by_version, hits)
    print("## P1 / P1b (each workload of each round weighted equally)")
    for v in ("full", "windows"):
        gaps, hs = by_version[v], hits[v]
        mean_gap = statistics.fmean(statistics.fmean(g) for g in gaps.values())
        share = statistics.fmean(statistics.fmean(h) for h in hs.values())
        per = ", ".join(f"{w} {statistics.fmean(g):+.2f} % ({sum(hs[w])}/{len(hs[w])})" for w, g in gaps.items())
        print(f"   {v:<8} mean gap {mean_gap:+.2f} %, within 3 %: {share * 100:.0f} %  [{per}]")


def judge(root: Path, which: str, by_version: dict, hits: dict) -> None:
    for wl in sorted(p for p in root.iterdir() if (p / "verify" / "tune.json").exists()):
        vdir = wl / which if (wl / which / "tune.json").exists() else wl / "verify"
        tune = json.loads((vdir / "tune.json").read_text())
        steps = steps_by_setting(next(vdir.glob("verify.jsonl*")))
        med = {s: statistics.median(v) for s, v in steps.items()}
        best = min(med, key=med.get)
        caps = {c: s for s in steps for c in setting_caps(s, tune)}
        key = f"{root.name}/{wl.name}"
        print(f"## {key} ({vdir.name}): best measured {best!r} {med[best] * 1e3:.2f} ms")
        for s in sorted(med, key=med.get):
            ci = paired_gap_interval(steps[s], steps[best]) if s != best else None
            ci_txt = "" if ci is None else f" (95 % {ci[0]:+.2f}..{ci[1]:+.2f})"
            print(
                f"   {s:<28} {med[s] * 1e3:8.2f} ms  {(med[s] / med[best] - 1) * 100:+6.2f} %{ci_txt}  n={len(steps[s])}"
            )
        for recs in sorted(wl.glob("cal_*/refits/recs.json")):
            for name, r in json.loads(recs.read_text()).items():
                cap = "default" if r["keep_default"] else f"{r['recommended_mb']:g}"
                s = caps.get(cap)
                if s is None:
                    print(f"   {recs.parent.parent.name} {name}: {cap} not measured")
                    continue
                gap = (med[s] / med[best] - 1) * 100
                v = "full" if name == "full" else "windows"
                by_version[v].setdefault(key, []).append(gap)
                hits[v].setdefault(key, []).append(gap <= 3.0)
                print(
                    f"   {recs.parent.parent.name} {name:<4} recommends {cap:<8} gap {gap:+6.2f} %  work/call "
                    f"{r['call_cpu_ms']:.2f} ms + {r['call_cpu_ms_per_mib']:.2f} ms/MiB, comm x{1 + r['comm_contention']:.2f}"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
