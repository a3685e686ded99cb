"""What 5-6 step-check residuals would do to the intervals, judged on real rows (nothing measured).

    EXTRA="torch-ddp:1,bucketed:4,individual:-" python borrowed_check_rows.py "ddpsim" OUT CELL...

Each CELL is a replayed cell (``benchmarks/replay_matrix.sh``: ``params.json``, ``measured.jsonl`` and
``validation.json``). The validation rows named in ``EXTRA`` (``strategy:bucket_mb``, ``-`` for none) join the
params' step check as residuals (``log(predicted / measured)``, as ``validate`` computed them), ``ddpsim validate
--replay`` predicts every row again from those params into ``OUT/<cell>/``, and coverage is judged on the rows
not borrowed, against the same rows' coverage with the term as calibrated. Optimistic for the borrowed rows: they
were measured in the same minutes as the rows judged, where check rows run minutes before, at calibration.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path


def extra_rows() -> set[tuple[str, float | None]]:
    spec = os.environ.get("EXTRA", "torch-ddp:1,bucketed:4,individual:-")
    out = set()
    for item in spec.split(","):
        strategy, mb = item.split(":")
        out.add((strategy, None if mb == "-" else float(mb)))
    return out


def rows_of(v: dict) -> dict:
    return {(r["strategy"], r["bucket_mb"]): r for r in v["rows"]}


def covered(rows: list[dict]) -> tuple[int, int]:
    inside = [r["predicted_p10_s"] <= r["measured_median_s"] <= r["predicted_p90_s"] for r in rows]
    return sum(inside), len(inside)


def pct(log_sd: float | None) -> str:
    return "-" if log_sd is None else f"{(math.exp(log_sd) - 1) * 100:.1f}"


def rms(xs: list[float]) -> float:
    return math.sqrt(sum(x * x for x in xs) / len(xs))


def main(ddpsim: str, out: Path, cells: list[Path]) -> None:
    extra = extra_rows()
    tot = {"as calibrated": [0, 0], "borrowed": [0, 0]}
    band = dict.fromkeys(tot, 0)
    print(
        "| cell | term as calibrated % (k) | term with borrowed rows % (k) | judged rows' RMS % | "
        "judged rows covered, as calibrated | with borrowed rows |"
    )
    print("|---|---|---|---|---|---|")
    for cell in cells:
        v = json.loads((cell / "validation.json").read_text())
        p = json.loads((cell / "params.json").read_text())
        sh = p["probes"]["sharded_step"]
        own = [r["log_residual"] for r in sh.get("check", []) if not r.get("fitted")]
        rows = rows_of(v)
        added = [
            {
                "strategy": s,
                "bucket_mb": mb or 0.0,
                "steps": 0,
                "measured_median_s": rows[s, mb]["measured_median_s"],
                "predicted_s": rows[s, mb]["predicted_step_s"],
                "log_residual": math.log(rows[s, mb]["predicted_step_s"] / rows[s, mb]["measured_median_s"]),
                "fitted": False,
            }
            for s, mb in sorted(extra, key=str)
        ]
        sh["check"] = [*sh.get("check", []), *added]
        d = out / cell.name
        d.mkdir(parents=True, exist_ok=True)
        (d / "params.json").write_text(json.dumps(p))
        cmd = [
            *ddpsim.split(),
            "validate",
            "--replay",
            str(cell / "measured.jsonl"),
            "--params",
            str(d / "params.json"),
        ]
        subprocess.run(
            [*cmd, "--out", str(d / "validation.json"), "--force", "--quiet"], check=True, stdout=subprocess.DEVNULL
        )
        again = rows_of(json.loads((d / "validation.json").read_text()))
        judged = {k for k in rows if k not in extra}
        cb = covered([rows[k] for k in judged])
        cm = covered([again[k] for k in judged])
        for name, c in (("as calibrated", cb), ("borrowed", cm)):
            tot[name][0] += c[0]
            tot[name][1] += c[1]
            band[name] += 0.75 <= c[0] / c[1] <= 0.90
        err = rms([math.log(rows[k]["predicted_step_s"] / rows[k]["measured_median_s"]) for k in judged])
        both = own + [a["log_residual"] for a in added]
        term = rms(own) if len(own) >= 2 else None
        print(
            f"| {cell.parent.name}/{cell.name} | {pct(term)} ({len(own)}) | {pct(rms(both))} ({len(both)}) | "
            f"{pct(err)} | {cb[0]}/{cb[1]} | {cm[0]}/{cm[1]} |"
        )
    for name, (k, n) in tot.items():
        print(f"{name}: pooled {k}/{n} = {k / n:.1%}; cells in 75-90 %: {band[name]} of {len(cells)}")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), [Path(c) for c in sys.argv[3:]])
