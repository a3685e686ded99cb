"""How much of the stream probe's o moves within one calibration, and how much between calibrations?

The simulator's per-call cost ``o`` is the intercept of the stream probe's fit (``calibration.calibrate.
fit_network``: per size, REPS repetitions of 16 blocking all-reduces back to back, the mean per call). Per
stored calibration (a cell's ``validation.calibration.jsonl[.gz]``): that o, and its 95 % interval as the fit gives it
(``fit_linear``'s own: a seeded bootstrap over the repetitions, joined with the fit's asymptotic one); then, per run of cells, the spread
of o between calibrations. Nothing is measured.

    python benchmarks/results/stream_o_noise/analysis.py CELL_DIR...
"""

import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from calibration.fit import fit_linear  # noqa: E402
from realrun.records import read_records  # noqa: E402


def records(cell: Path) -> list[dict]:
    for name in ("validation.calibration.jsonl", "validation.calibration.jsonl.gz"):
        if (cell / name).exists():
            return read_records(cell / name)
    return []


def main(cells: list[str]) -> None:
    os_, half = [], []
    for c in cells:
        recs = [r for r in records(Path(c)) if r.get("kind") == "allreduce" and r.get("impl") == "stream"]
        if not recs:
            continue
        fit = fit_linear(recs, impl="stream", world_size=recs[0]["world_size"], statistic="mean")
        lo, hi = fit.o_ci_s
        os_.append(fit.o_s)
        half.append((hi - lo) / 2)
        print(
            f"{c}: o {fit.o_s * 1e6:7.1f} us, 95 % CI {lo * 1e6:7.1f}-{hi * 1e6:7.1f} us ({len(recs)} sizes x {len(recs[0]['times_s'])} reps)"
        )
    if len(os_) > 1:
        print(
            f"over {len(os_)} calibrations: o median {st.median(os_) * 1e6:.1f} us, SD {st.stdev(os_) * 1e6:.1f} us; "
            f"a fit's own SE (CI half-width / 1.96) median {st.median(half) / 1.96 * 1e6:.1f} us"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
