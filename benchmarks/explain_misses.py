"""Per-bucket timelines of an accuracy matrix's misses: which term of the step is wrong, and by how much.

    python benchmarks/explain_misses.py RUN_DIR [--threshold 10] [--steps 16] [--min-seconds 6] [--no-company]
                                            [--rerun] [--dry-run]

For every cell of ``accuracy_matrix.sh``'s RUN_DIR with a row whose |error| is ``--threshold`` % or more
(issue 10's worst-row goal), the cell's whole configuration set is measured again as the matrix measured it
(``ddpsim validate`` from the cell's own params, nothing refitted: the same configurations in the same groups and
order, as many steps as the matrix timed; ``RUN_DIR/<cell>/explain/_cell/``), so each miss's error is given again in its
own company, with its noise: did the miss repeat? (``--no-company`` skips this.) Then each miss alone: at least
``--min-seconds`` of steps interleaved beside a compute-only baseline, then ``--steps`` steps with each
bucket's ready, launch and completion stamped (``ddpsim validate --timeline``), decomposed against its predicted
timeline (``calibration.timeline.decompose``: compute, exposed tail, finalize, optimizer, other, and the
summed per-call durations). Each miss gets ``RUN_DIR/<cell>/explain/<config>/`` (``matrix_row.json`` says
which row it explains); ``RUN_DIR/<cell>/explain/summary.json`` lists them, and ``accuracy_table.py`` prints
each miss's largest wrong part beside it. A miss explained before for the same row is kept; one explained
for another row (another run into the same folder) is reported and left, or run again with ``--rerun``.
Rows with a list of caps are not re-run (``validate --timeline`` takes one cap). ``DDPSIM`` names the
``ddpsim`` command line (default: on PATH; ``python -m ddpsim`` works too). Exit status 1 where a miss could
not be explained, each said in one line (a cell's re-run in company that failed, or that repeats another
measurement of the cell, counts too); the other cells still run.

Alone is not the matrix's company: with one step a turn every timed step follows a compute-only step there, and
a DDP step leaves work that the step after it pays (micro-DLRM on loopback: a compute-only step after one runs
0.25-0.54 ms longer, a one-bucket DDP step after one 0.9-1.35 ms longer; ``benchmarks/results/
micro_dlrm_context/``). In a cell measured one step a turn the rows and the compute-only copies mostly follow DDP
steps, so a miss that repeats in its company may vanish alone (micro-DLRM's one-bucket rows from m33's
calibration: -10 to -12 % in their group, -1 to -5 % alone). Both re-runs take the cell's order (``--block``). The recorded steps also carry
a Python comm hook (about 0.3 ms a call, BENCHMARKS.md "Ninth session"), so their step error is shown beside
the others; where they differ much, the decomposition explains the re-run, not the row. Each
part is a median over the recorded steps, so the parts add up to the step's error only roughly.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration.timeline import STEP_TERMS  # noqa: E402
from calibration.validate import bucket_text  # noqa: E402

SUMMARY = "summary.json"
ROW = "matrix_row.json"  # which matrix row an explain folder explains
COMPANY = "_cell"  # the cell measured again as a whole: each miss in its matrix company
CELL_ROWS = "matrix_rows.json"  # which measurement of the cell the company re-run repeats, and its command


class Skip(Exception):
    """A miss that is not re-run, for a reason said in one line (not a failure)."""


def cell_params(cell: Path) -> Path | None:
    """The calibration a cell used: ``validation.params.json``, or the one ``validation.params-*.json``
    ``validate`` writes beside a link's results; None if there is none."""
    plain = cell / "validation.params.json"
    if plain.is_file():
        return plain
    return next(iter(sorted(cell.glob("validation.params*.json"))), None)


def misses(cell: Path, threshold: float) -> list[dict[str, Any]]:
    """The cell's rows whose |error| is ``threshold`` % or more, worst first ([] without a validation.json).
    ValueError for a file that is not a validate result."""
    path = cell / "validation.json"
    if not path.is_file():
        return []
    try:
        rows = json.loads(path.read_text()).get("rows")
    except (ValueError, AttributeError) as e:
        raise ValueError(f"{path}: not a validate result ({e})") from None
    if not isinstance(rows, list):
        raise ValueError(f"{path}: not a validate result (no rows)")
    out = []
    for r in rows:
        err = r.get("error_pct") if isinstance(r, dict) else None
        if not isinstance(err, (int, float)) or not math.isfinite(err) or "strategy" not in r:
            raise ValueError(f"{path}: a row without a strategy or a finite error_pct: {r!r:.80}")
        if abs(err) >= threshold:
            out.append(r)
    return sorted(out, key=lambda r: -abs(r["error_pct"]))


def label(row: dict[str, Any]) -> str:
    b = row.get("bucket_mb")
    return f"{row['strategy']}_{'default' if b is None else f'{b:g}MB'}"


def bucket_args(row: dict[str, Any]) -> list[str]:
    """``--bucket-mb`` for one row's configuration: its size, ``default`` for torch DDP (or sharded) run with
    ``bucket_cap_mb`` unset, nothing for a strategy without buckets."""
    b = bucket_text(row["strategy"], row.get("bucket_mb"))
    return [] if b == "-" else ["--bucket-mb", b]


def _validate_head(cell: Path, ddpsim: str) -> tuple[dict[str, Any], list[str]]:
    """The cell's validate result, and the start of a ``ddpsim validate`` that measures as it did: its model,
    world size, link and params (the calibration it used). ``ddpsim``: a command line (``python -m ddpsim``
    as accuracy_matrix.sh's ``DDPSIM`` may give it), split as a shell would."""
    res = json.loads((cell / "validation.json").read_text())
    params = cell_params(cell)
    if params is None:
        raise ValueError(f"{cell}: no validation.params*.json (the calibration the cell used)")
    cmd = [
        *shlex.split(ddpsim),
        "validate",
        "--model",
        str(res["model"]),
        "--world-size",
        str(res.get("world_size") or 2),
    ]
    if res.get("link_mbit"):
        cmd += ["--link-mbit", f"{float(res['link_mbit']):g}"]
    return res, cmd + ["--params", str(params)]


def command(cell: Path, row: dict[str, Any], steps: int, ddpsim: str, min_seconds: float = 6.0) -> list[str]:
    """``ddpsim validate`` of the one configuration from the cell's params, with timelines, into explain/."""
    if row.get("bucket_cap_mb_list"):
        raise Skip(f"{label(row)} has a list of caps; validate --timeline takes one: not re-run")
    res, cmd = _validate_head(cell, ddpsim)
    out = cell / "explain" / label(row)
    cmd += ["--strategy", row["strategy"], *bucket_args(row)]
    cmd += ["--steps", str(steps), "--min-seconds", f"{min_seconds:g}", "--block", matrix_block(res)]
    cmd += ["--out", str(out / "validation.json")]
    cmd += ["--records", str(out / "validation.jsonl"), "--timeline", str(out / "timeline")]
    return cmd


def _unique(xs: list[Any]) -> list[Any]:
    return list(dict.fromkeys(xs))


def matrix_block(res: dict[str, Any]) -> str:
    """The turns the matrix measured a cell in (``validate --block``): its method says "turns of N timed steps"
    where N > 1; none is one step a turn (every run to m33)."""
    m = re.search(r"turns of (\d+) timed steps", str(res.get("method") or ""))
    return m.group(1) if m else "1"


def company_command(cell: Path, ddpsim: str, min_seconds: float = 6.0) -> list[str]:
    """``ddpsim validate`` of the cell's every configuration, as the matrix ran them: the same strategies and
    caps in the same order, groups of the same size (so the same groups), rounds and turns, from the cell's params,
    into explain/_cell/."""
    res, cmd = _validate_head(cell, ddpsim)
    rows = res["rows"]
    if any(r.get("bucket_cap_mb_list") for r in rows):
        raise Skip("the cell holds a list of caps, which validate's --bucket-mb cannot repeat: no company re-run")
    method = str(res.get("method") or "")
    rounds = re.search(r"(\d+) rounds x (\d+) steps", method)
    group = re.search(r"groups of <= (\d+) configurations", method)
    out = cell / "explain" / COMPANY
    cmd += ["--strategy", ",".join(_unique([r["strategy"] for r in rows]))]
    caps = _unique([r["bucket_mb"] for r in rows if r.get("bucket_mb") is not None])
    if caps:
        cmd += ["--bucket-mb", ",".join(f"{b:g}" for b in caps)]
    if rounds:  # exactly as many steps as the matrix timed
        n, per = int(rounds.group(1)), int(rounds.group(2))
        cmd += ["--steps", str(n * per), "--min-seconds", "0", "--rounds", str(n)]
    else:
        cmd += ["--steps", "8", "--min-seconds", f"{min_seconds:g}", "--rounds", "2"]
    if group:  # the same groups of configurations side by side
        cmd += ["--group-size", group.group(1)]
    cmd += ["--block", matrix_block(res)]
    cmd += ["--out", str(out / "validation.json"), "--records", str(out / "validation.jsonl")]
    return cmd


def _cell_errors(cell: Path) -> list[Any]:
    return [r.get("error_pct") for r in json.loads((cell / "validation.json").read_text())["rows"]]


def in_company(cell: Path, a: argparse.Namespace, ddpsim: str) -> dict[tuple[str, Any], dict[str, Any]]:
    """The cell measured again as a whole (unless a re-run of this very measurement is there): its rows by
    (strategy, cap); {} on a dry run. With ``--no-company`` only one made before is read ({} if none).
    Raises Skip, or ValueError/OSError with the reason it failed."""
    out = cell / "explain" / COMPANY
    errors = _cell_errors(cell)
    same = _made_for(out / CELL_ROWS, "matrix_error_pcts", errors)
    if same and (out / "validation.json").is_file():
        print(f"== {cell.name}: the cell's re-run in company was made before, kept", file=sys.stderr)
    elif a.no_company:
        return {}
    elif out.is_dir() and not same and (out / "validation.json").is_file() and not a.rerun:
        raise ValueError(f"{out} repeats another run of this cell: pass --rerun to run it again")
    else:
        cmd = company_command(cell, ddpsim, a.min_seconds)
        print(f"== {cell.name}, the whole cell again: {' '.join(cmd)}", file=sys.stderr)
        if a.dry_run:
            if out.exists():
                print(f"== {cell.name}: would remove {out} and run it again", file=sys.stderr)
            return {}
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        (out / CELL_ROWS).write_text(json.dumps({"matrix_error_pcts": errors, "command": cmd}) + "\n")
        with open(out / "validate.log", "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        if rc != 0 or not (out / "validation.json").is_file():
            raise ValueError(f"the cell's re-run in company failed (rc {rc}): see {out / 'validate.log'}")
    rows = json.loads((out / "validation.json").read_text()).get("rows") or []
    return {(r["strategy"], r.get("bucket_mb")): r for r in rows if isinstance(r, dict) and "strategy" in r}


def _made_for(path: Path, key: str, value: Any) -> bool:
    """Whether the JSON object at ``path`` (the note a re-run leaves of what it repeats) holds ``value`` at
    ``key``; False where it is missing or unreadable."""
    try:
        was = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(was, dict) and was.get(key) == value


def explains(folder: Path, row: dict[str, Any]) -> bool:
    """Whether an explain folder was made for this very row (its matrix error recorded the same)."""
    return _made_for(folder / ROW, "matrix_error_pct", row["error_pct"])


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
        # what the re-run's two medians alone can make of its error (None in results that do not say)
        "rerun_noise_pct": rerun.get("noise_pct"),
        "timeline_steps": dec["n_measured_steps"],
        "timeline_step_error_pct": terms["step_s"]["error_pct_of_step"],
        "largest_term": dec["largest_term"],
        # each part's error in % of the recorded step (predicted - measured), a median over the recorded steps
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
    noise = e.get("rerun_noise_pct")
    company = e.get("company_error_pct")
    cn = e.get("company_noise_pct")
    return (
        (
            ""
            if company is None
            else f"in its company again {company:+.1f}%" + ("" if cn is None else f" (noise +-{cn:.1f}%)") + ", alone "
        )
        + f"re-run {e['rerun_error_pct']:+.1f}%"
        + ("" if noise is None else f" (noise +-{noise:.1f}%)")
        + f", recorded alone ({e['timeline_steps']} steps) {e['timeline_step_error_pct']:+.1f}%: largest part "
        f"{e['largest_term'].removesuffix('_s').replace('_', ' ')} ({parts or 'no part over 0.5%'}; "
        f"calls' summed time {m:.1f} ms measured, {p:.1f} predicted)"
    )


def explain_row(cell: Path, row: dict[str, Any], a: argparse.Namespace, ddpsim: str) -> dict[str, Any] | None:
    """Re-run one miss unless a folder explains it already; its summary, None on a dry run. Raises Skip, or
    ValueError/OSError with the reason a miss could not be explained."""
    out = cell / "explain" / label(row)
    if out.is_dir() and any(out.iterdir()):
        if not explains(out, row):
            if not a.rerun:
                raise ValueError(f"{out} explains another run of this cell: pass --rerun to run it again")
            if a.dry_run:
                print(f"== {cell.name} {label(row)}: would remove {out} and run it again", file=sys.stderr)
                return None
            shutil.rmtree(out)
        elif (out / "validation.json").is_file():
            print(f"== {cell.name} {label(row)}: explained before, kept", file=sys.stderr)
        elif not a.dry_run:  # this row's re-run that failed before: its partial files go, it runs again
            shutil.rmtree(out)
    if not (out / "validation.json").is_file():
        cmd = command(cell, row, a.steps, ddpsim, a.min_seconds)
        print(f"== {cell.name} {label(row)} ({row['error_pct']:+.1f}%): {' '.join(cmd)}", file=sys.stderr)
        if a.dry_run:
            return None
        out.mkdir(parents=True, exist_ok=True)
        (out / ROW).write_text(
            json.dumps(
                {"strategy": row["strategy"], "bucket_mb": row.get("bucket_mb"), "matrix_error_pct": row["error_pct"]}
            )
            + "\n"
        )
        with open(out / "validate.log", "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            raise ValueError(f"the re-run failed (rc {rc}): see {out / 'validate.log'}")
    e = explained(cell, row)
    if e is None:
        raise ValueError(f"the re-run recorded no timeline: see {out / 'validate.log'}")
    return e


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a folder written by benchmarks/accuracy_matrix.sh")
    ap.add_argument("--threshold", type=float, default=10.0, help="|error| in %% from which a row is a miss")
    ap.add_argument(
        "--steps", type=int, default=16, help="recorded steps of each re-run's timeline (and the fewest timed)"
    )
    ap.add_argument(
        "--min-seconds",
        type=float,
        default=6.0,
        help="timed seconds of each re-run at least, as the matrix (default 6)",
    )
    ap.add_argument(
        "--no-company",
        action="store_true",
        help="do not measure the cell again as a whole (each miss alone only; one made before is still read)",
    )
    ap.add_argument(
        "--rerun",
        action="store_true",
        help="run again a miss whose folder explains another run (and the cell's re-run in company, likewise)",
    )
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args(argv)
    if not a.run.is_dir():
        ap.error(f"{a.run} is not a folder")
    if not (math.isfinite(a.threshold) and a.threshold > 0 and a.steps >= 2):
        ap.error("--threshold must be a number > 0 and --steps >= 2")
    if not (math.isfinite(a.min_seconds) and a.min_seconds >= 0):
        ap.error("--min-seconds must be a number >= 0")
    ddpsim = os.environ.get("DDPSIM") or "ddpsim"  # empty: the default, as accuracy_matrix.sh has it
    failed = 0
    for cell in sorted(p for p in a.run.iterdir() if p.is_dir()):
        try:
            rows = misses(cell, a.threshold)
        except ValueError as err:
            failed += 1
            print(f"explain_misses: {cell.name}: {err}", file=sys.stderr)
            continue
        summary = []
        company: dict[tuple[str, Any], dict[str, Any]] = {}
        if rows:
            try:
                company = in_company(cell, a, ddpsim)
            except Skip as why:
                print(f"explain_misses: {cell.name}: {why}", file=sys.stderr)
            except (OSError, ValueError, KeyError, TypeError) as err:
                failed += 1
                print(f"explain_misses: {cell.name}: {err}", file=sys.stderr)
        for row in rows:
            try:
                e = explain_row(cell, row, a, ddpsim)
            except Skip as why:
                print(f"explain_misses: {cell.name}: {why}", file=sys.stderr)
                continue
            except (OSError, ValueError, KeyError, TypeError) as err:
                failed += 1
                print(f"explain_misses: {cell.name} {label(row)}: {err}", file=sys.stderr)
                continue
            if e is not None:
                again = company.get((row["strategy"], row.get("bucket_mb")))
                if again is not None:
                    e = {**e, "company_error_pct": again.get("error_pct"), "company_noise_pct": again.get("noise_pct")}
                summary.append(e)
                print(f"- {cell.name}, {label(row)} ({row['error_pct']:+.1f}% in the matrix): {describe(e)}")
        path = cell / "explain" / SUMMARY
        if not a.dry_run and (summary or path.exists()):
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(summary, indent=1) + "\n")  # this run's, even empty: no stale one kept
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
