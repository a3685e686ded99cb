"""Per-bucket timelines of an accuracy matrix's misses: which term of the step is wrong, and by how much.

    python benchmarks/explain_misses.py RUN_DIR [--threshold 10] [--steps 16] [--dry-run]

For every cell of ``accuracy_matrix.sh``'s RUN_DIR and every row whose |error| is ``--threshold`` % or more
(issue 10's worst-row goal), the configuration is run again with ``ddpsim validate --timeline`` from the
cell's own params (nothing refitted): interleaved beside a compute-only baseline as in the matrix, then
alone with each bucket's ready, launch and completion stamped, and decomposed against its predicted
timeline (``calibration.timeline.decompose``: compute, exposed tail, finalize, optimizer, other, and the
summed per-call durations and launch delays). Each miss gets ``RUN_DIR/<cell>/explain/<config>/``;
``RUN_DIR/<cell>/explain/summary.json`` lists them, and ``accuracy_table.py`` prints each miss's largest
term beside it. A miss already explained (its folder holds a validation.json) is kept, not run again.

The recorded steps are not the matrix's: they ran minutes later, alone, with a Python comm hook (about
0.3 ms a call, BENCHMARKS.md "Ninth session"), so their step error is shown beside the matrix row's; where
the two differ much, the miss did not repeat and its decomposition explains the re-run, not the row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration.timeline import STEP_TERMS  # noqa: E402

SUMMARY = "summary.json"


def misses(cell: Path, threshold: float) -> list[dict[str, Any]]:
    """The cell's rows whose |error| is ``threshold`` % or more, worst first ([] without a validation.json)."""
    path = cell / "validation.json"
    if not path.is_file():
        return []
    rows = json.loads(path.read_text()).get("rows") or []
    return sorted((r for r in rows if abs(r["error_pct"]) >= threshold), key=lambda r: -abs(r["error_pct"]))


def label(row: dict[str, Any]) -> str:
    b = row.get("bucket_mb")
    return f"{row['strategy']}_{'default' if b is None else f'{b:g}MB'}"


def command(cell: Path, row: dict[str, Any], steps: int, ddpsim: str) -> list[str]:
    """``ddpsim validate`` of the one configuration from the cell's params, with timelines, into explain/."""
    res = json.loads((cell / "validation.json").read_text())
    params = sorted(cell.glob("validation.params*.json"))
    if not params:
        raise ValueError(f"{cell}: no validation.params*.json (the calibration the cell used)")
    out = cell / "explain" / label(row)
    cmd = [ddpsim, "validate", "--model", str(res["model"]), "--world-size", str(res.get("world_size") or 2)]
    if res.get("link_mbit"):
        cmd += ["--link-mbit", f"{float(res['link_mbit']):g}"]
    cmd += ["--params", str(params[0]), "--strategy", row["strategy"]]
    if row.get("bucket_mb") is not None:
        cmd += ["--bucket-mb", f"{row['bucket_mb']:g}"]
    cmd += ["--steps", str(steps), "--min-seconds", "0", "--out", str(out / "validation.json")]
    cmd += ["--records", str(out / "validation.jsonl"), "--timeline", str(out / "timeline")]
    return cmd


def explained(cell: Path, row: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of one miss's re-run (None if it has not run or recorded no timeline)."""
    path = cell / "explain" / label(row) / "validation.json"
    if not path.is_file():
        return None
    res = json.loads(path.read_text())
    decs = res.get("timelines") or []
    if not decs or not res.get("rows"):
        return None
    dec, rerun = decs[0], res["rows"][0]
    terms = dec["terms"]
    return {
        "strategy": row["strategy"],
        "bucket_mb": row.get("bucket_mb"),
        "matrix_error_pct": row["error_pct"],
        "rerun_error_pct": rerun["error_pct"],
        "timeline_steps": dec["n_measured_steps"],
        "timeline_step_error_pct": terms["step_s"]["error_pct_of_step"],
        "largest_term": dec["largest_term"],
        # each part's error in % of the recorded step (predicted - measured); the parts sum to the step's
        "parts_pct_of_step": {k: terms[k]["error_pct_of_step"] for k in STEP_TERMS},
        "comm_sum_ms": [terms["comm_sum_s"]["measured_s"] * 1e3, terms["comm_sum_s"]["predicted_s"] * 1e3],
        "n_buckets": [dec["n_buckets_measured"], dec["n_buckets_predicted"]],
        "files": dec.get("files"),
    }


def describe(e: dict[str, Any]) -> str:
    """One line: the re-run's errors and the recorded step's largest wrong part."""
    parts = ", ".join(
        f"{k.removesuffix('_s').replace('_', ' ')} {v:+.1f}%"
        for k, v in sorted(e["parts_pct_of_step"].items(), key=lambda kv: -abs(kv[1] or 0))
        if v is not None and abs(v) >= 0.5
    )
    m, p = e["comm_sum_ms"]
    return (
        f"re-run {e['rerun_error_pct']:+.1f}%, recorded alone ({e['timeline_steps']} steps) "
        f"{e['timeline_step_error_pct']:+.1f}%: largest part {e['largest_term'].removesuffix('_s').replace('_', ' ')}"
        f" ({parts or 'no part over 0.5%'}; calls' summed time {m:.1f} ms measured, {p:.1f} predicted)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a folder written by benchmarks/accuracy_matrix.sh")
    ap.add_argument("--threshold", type=float, default=10.0, help="|error| in %% from which a row is a miss")
    ap.add_argument("--steps", type=int, default=16, help="timed steps of each re-run (and of its timeline)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args(argv)
    if not a.run.is_dir():
        ap.error(f"{a.run} is not a folder")
    if not (a.threshold > 0 and a.steps >= 2):
        ap.error("--threshold must be > 0 and --steps >= 2")
    ddpsim = os.environ.get("DDPSIM", "ddpsim")
    failed = 0
    for cell in sorted(p for p in a.run.iterdir() if p.is_dir()):
        rows = misses(cell, a.threshold)
        if not rows:
            continue
        summary = []
        for row in rows:
            out = cell / "explain" / label(row)
            if (out / "validation.json").is_file():
                print(f"== {cell.name} {label(row)}: explained before, kept", file=sys.stderr)
            else:
                cmd = command(cell, row, a.steps, ddpsim)
                print(f"== {cell.name} {label(row)} ({row['error_pct']:+.1f}%): {' '.join(cmd)}", file=sys.stderr)
                if a.dry_run:
                    continue
                out.mkdir(parents=True, exist_ok=True)
                with open(out / "validate.log", "w") as log:
                    rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
                if rc != 0:
                    failed += 1
                    print(f"   failed (rc {rc}): see {out / 'validate.log'}", file=sys.stderr)
                    continue
            e = explained(cell, row)
            if e is not None:
                summary.append(e)
                print(f"- {cell.name}, {label(row)} ({row['error_pct']:+.1f}% in the matrix): {describe(e)}")
        if summary and not a.dry_run:
            (cell / "explain" / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
