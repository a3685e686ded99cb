"""Plots are drawn from small fixed result files (tests/data), as PNGs, without pyplot or a window."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from calibration.fit import fit_linear
from calibration.plots import (
    DPI,
    plot_allreduce,
    plot_bucket_sweep,
    plot_pred_vs_measured,
    plot_scaling,
    read_rows,
)
from realrun.records import read_records

DATA = Path(__file__).parent / "data"
RECORDS = DATA / "allreduce_small.jsonl"  # 6 sizes x 8 iterations, o = 350 us, w = 1.4 GB/s, 5 % noise
ROWS = DATA / "validate_rows_small.json"  # 10 rows: 3 strategies, bucket sizes, world sizes 2/4/6
REPO = Path(__file__).resolve().parent.parent


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])  # IHDR width, height


def check_png(path: Path, figsize: tuple[float, float]) -> None:
    assert path.exists() and path.stat().st_size > 10_000, path.stat().st_size  # a blank PNG is ~3 KB
    assert png_size(path) == (round(figsize[0] * DPI), round(figsize[1] * DPI))
    rgb = (imread(path)[..., :3] * 255).astype(np.uint32)
    colours = np.unique(rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2])
    assert len(colours) > 50, len(colours)  # drawn on: lines, text, markers, not one background


def test_plot_allreduce_from_the_records_file(tmp_path):
    fit = fit_linear(read_records(RECORDS, "allreduce"), n_boot=50)
    assert abs(fit.o_us / 350 - 1) < 0.1 and abs(fit.w_gbps / 1.4 - 1) < 0.1  # the fixture's truth
    out = plot_allreduce(RECORDS, fit, tmp_path / "sub" / "allreduce.png")
    assert out == tmp_path / "sub" / "allreduce.png"
    check_png(out, (6.4, 5.6))


def test_plot_bucket_sweep_and_pred_vs_measured_from_the_rows_file(tmp_path):
    rows = read_rows(ROWS)
    p2 = [r for r in rows if r["world_size"] == 2]
    check_png(plot_bucket_sweep(p2, tmp_path / "sweep.png"), (6.4, 4.4))
    # exposed overhead present in some rows: two panels side by side
    check_png(plot_pred_vs_measured(rows, tmp_path / "pvm.png"), (10.4, 4.8))
    check_png(plot_pred_vs_measured(rows, tmp_path / "pvm_step.png", quantity="step"), (5.2, 4.8))


def test_plot_scaling_from_the_rows_file(tmp_path):
    rows = [r for r in read_rows(ROWS) if r["strategy"] == "torch-ddp" and r["bucket_mb"] == 4]
    assert [r["world_size"] for r in rows] == [2, 4, 6]
    check_png(plot_scaling(rows, tmp_path / "scaling.png"), (6.4, 4.4))
    tput = [
        dict(
            r,
            predicted_throughput=64 * r["world_size"] / r["predicted_step_s"],
            measured_throughput=64 * r["world_size"] / r["measured_median_s"],
        )
        for r in rows
    ]
    check_png(plot_scaling(tput, tmp_path / "tput.png", metric="throughput"), (6.4, 4.4))


def test_bad_rows_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="no rows"):
        plot_bucket_sweep([], tmp_path / "x.png")
    with pytest.raises(ValueError, match="row 0 lacks a number for 'bucket_mb'"):
        plot_bucket_sweep([{"predicted_step_s": 0.1}], tmp_path / "x.png")
    with pytest.raises(ValueError, match="unknown metric"):
        plot_scaling([{"world_size": 2, "predicted_step_s": 0.1}], tmp_path / "x.png", metric="flops")
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": 3}')
    with pytest.raises(ValueError, match="bad.json"):
        read_rows(bad)
    assert not (tmp_path / "x.png").exists()


def test_no_window_no_pyplot_no_torch(tmp_path):
    # In a fresh interpreter with an interactive backend requested: plotting must neither import
    # pyplot (which would pick that backend and could open a window) nor torch.
    code = f"""
import sys
from calibration.fit import fit_linear
from calibration.plots import plot_allreduce, plot_bucket_sweep, read_rows
from realrun.records import read_records
recs = read_records({str(RECORDS)!r}, "allreduce")
plot_allreduce(recs, fit_linear(recs, n_boot=10), {str(tmp_path / "a.png")!r})
plot_bucket_sweep(read_rows({str(ROWS)!r}), {str(tmp_path / "b.png")!r})
bad = [m for m in ("matplotlib.pyplot", "torch") if m in sys.modules]
print("imported:", bad)
sys.exit(1 if bad else 0)
"""
    env = dict(os.environ, MPLBACKEND="TkAgg", DISPLAY="", PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "a.png").exists() and (tmp_path / "b.png").exists()


def test_sweep_plot_marks_the_near_best_band_default_and_recommendation(tmp_path):
    from simulator.network import CostModel, load_network
    from simulator.sweep import sweep
    from simulator.sweep_plot import near_best_range, plot_sweep
    from simulator.zoo import load_profile

    prof = load_profile("gpt2-small")
    from simulator.strategies import StrategySpec

    res = sweep(prof, CostModel.from_network(load_network("nccl-h100-ib")), StrategySpec("torch-ddp"), 64).to_dict()
    lo, hi = near_best_range(res["rows"], 1.0)
    best = min(r["step_time_s"] for r in res["rows"])
    assert lo <= res["best_bucket_mb"] <= hi
    by_mb = {r["bucket_mb"]: r["step_time_s"] for r in res["rows"]}
    assert by_mb[lo] <= best * 1.01 and by_mb[hi] <= best * 1.01
    # every size in the run is in the band, and the run stops where the next size out is not
    sizes = sorted(by_mb)
    assert all(by_mb[mb] <= best * 1.01 for mb in sizes if lo <= mb <= hi)
    i, j = sizes.index(lo), sizes.index(hi)
    assert (i == 0 or by_mb[sizes[i - 1]] > best * 1.01) and (j == len(sizes) - 1 or by_mb[sizes[j + 1]] > best * 1.01)
    assert lo < hi  # the band is more than one grid point here
    out = plot_sweep(res, tmp_path / "s.png", recommended_mb=16.0)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_scaling_from_validate_results_at_two_world_sizes(tmp_path, capsys):
    """`ddpsim plot --scaling` takes `ddpsim validate` results (validation.json): each row takes its file's world
    size, and a configuration (strategy and bucket) is one line."""
    from ddpsim.cli import main

    rows = [r for r in read_rows(ROWS) if r["world_size"] in (2, 4)]
    files = []
    for p in (2, 4):
        path = tmp_path / f"validation-p{p}.json"
        mine = [{k: v for k, v in r.items() if k != "world_size"} for r in rows if r["world_size"] == p]
        path.write_text(json.dumps({"world_size": p, "rows": mine}))
        files.append(str(path))
    assert main(["plot", "--scaling", *files, "--plot-dir", str(tmp_path / "plots"), "--quiet"]) == 0
    n = len({(r["strategy"], r.get("bucket_mb")) for r in rows})
    check_png(tmp_path / "plots" / "scaling.png", (6.4 + (2.6 if n > 1 else 0.0), 4.4))
    no_world = tmp_path / "no_world.json"
    no_world.write_text(json.dumps({"rows": [{"strategy": "flat", "predicted_step_s": 0.1}]}))
    assert main(["plot", "--scaling", str(no_world), "--plot-dir", str(tmp_path / "p2")]) == 2
    assert "no world size" in capsys.readouterr().err


def test_scaling_rows_name_a_cap_list_apart_from_the_default(tmp_path):
    from ddpsim.calib_commands import _scaling_rows

    path = tmp_path / "v.json"
    rows = [
        {"strategy": "torch-ddp", "bucket_mb": None, "predicted_step_s": 0.1, "measured_median_s": 0.1},
        {"strategy": "torch-ddp", "bucket_cap_mb_list": [1, 4], "predicted_step_s": 0.1, "measured_median_s": 0.1},
    ]
    path.write_text(json.dumps({"world_size": 2, "rows": rows}))
    assert [r["strategy"] for r in _scaling_rows(str(path))] == ["torch-ddp default", "torch-ddp caps 1,4 MiB"]
    path.write_text(json.dumps({"world_size": 2, "rows": [{**rows[0], "bucket_mb": "4"}]}))
    with pytest.raises(ValueError, match="not a number or a list"):
        _scaling_rows(str(path))
