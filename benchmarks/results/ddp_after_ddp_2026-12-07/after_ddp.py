"""What a DDP step leaves to the next DDP step, from stored calibrations' in-step probes (nothing measured anew).

    python after_ddp.py <matrix run folder> ...

The in-step probe steps its sides at block 1 as (plain, DDP, bare) in even turns and (bare, DDP, plain) in odd ones
(``realrun.step_record.turn_order``), so its recorded DDP step follows a DDP step (the plain one) in even turns and a
compute-only step in odd ones. Per probe record (the coarse cap, the fine cap, the one-bucket check): the median of
paired differences, an even turn's DDP step less the next odd turn's (a step apart, so the machine's drift cancels),
with a 95 % bootstrap interval; beside it the calibration's leftover (a compute-only step after a DDP step less one
after a compute-only step, ``calibration.step_probe.leftover_fit``) and, per cell, the validated one-bucket rows'
mean error in ms (torch-ddp at 4, 16, 64 MiB and flat: measured median less predicted).
"""

import gzip
import json
import sys
from pathlib import Path

import numpy as np

KINDS = ("step_probe", "step_probe_fine", "step_probe_check")


def pairs(tl: dict) -> np.ndarray:
    d, w = tl["step_times_s"], int(tl.get("warmup") or 0)
    if int(tl.get("block") or 1) != 1 or not tl.get("plain_step_times_s"):
        return np.array([])
    return np.array([d[j] - d[j + 1] for j in range(len(d) - 1) if (w + j) % 2 == 0])


def boot_ci(x: np.ndarray, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    meds = np.median(x[rng.integers(len(x), size=(2000, len(x)))], axis=1)
    lo, hi = np.percentile(meds, [2.5, 97.5])
    return float(lo), float(hi)


def main(dirs: list[str]) -> None:
    print(
        "| run | cell | leftover kept, ms | probe: DDP after DDP less after compute-only, median ms (95 %), pairs | one-bucket rows: measured - predicted, ms |"
    )
    print("|---|---|---|---|---|")
    for d in dirs:
        for cell in sorted(Path(d).glob("*/")):
            cal = sorted(cell.glob("validation.calibration.jsonl*"))
            val = cell / "validation.json"
            prm = sorted(cell.glob("validation.params*.json"))
            if not cal or not val.exists() or not prm:
                continue
            opener = gzip.open if cal[0].suffix == ".gz" else open
            with opener(cal[0], "rt") as f:
                recs = [json.loads(line) for line in f]
            parts = []
            for r in recs:
                if r.get("kind") in KINDS and "timeline" in r:
                    x = pairs(r["timeline"])
                    if len(x) >= 4:
                        lo, hi = boot_ci(x)
                        parts.append(
                            f"{r['kind'].replace('step_probe', 'sp')} {r['timeline']['bucket_mb']:.3g} MiB {np.median(x) * 1e3:+.2f} ({lo * 1e3:+.2f}..{hi * 1e3:+.2f}), {len(x)}"
                        )
            p = json.loads(prm[0].read_text())
            left = float(((p.get("probes") or {}).get("in_step") or {}).get("leftover_s") or 0.0)
            v = json.loads(val.read_text())
            one = [
                r["measured_median_s"] - r["predicted_step_s"]
                for r in v["rows"]
                if (r["strategy"] == "torch-ddp" and (r["bucket_mb"] or 0) >= 4) or r["strategy"] == "flat"
            ]
            print(
                f"| {Path(d).name.replace('accuracy_matrix_', '')} | {cell.name} | {left * 1e3:.2f} | {'; '.join(parts)} | {np.mean(one) * 1e3:+.2f} |"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
