"""NCCL as a first-class path: ``--backend`` on every real command, checked before any rank starts.

The checks of ``realrun.launch.check_backend`` run everywhere (the CUDA device count is patched);
the tests marked ``cuda`` run the real commands over NCCL and skip without a GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from realrun import launch

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("devices, world, ok", [(0, 1, False), (1, 1, True), (1, 2, False), (2, 2, True), (8, 4, True)])
def test_nccl_needs_one_device_per_rank(monkeypatch, devices, world, ok):
    monkeypatch.setattr(launch, "cuda_device_count", lambda: devices)
    if ok:
        launch.check_backend("nccl", world)
    else:
        with pytest.raises(ValueError, match=f"{devices} CUDA device"):
            launch.check_backend("nccl", world)


def test_gloo_needs_no_gpu_and_nccl_no_emulated_links(monkeypatch):
    monkeypatch.setattr(launch, "cuda_device_count", lambda: 0)
    launch.check_backend("gloo", 64, link_mbit=200.0)  # never asks for CUDA
    monkeypatch.setattr(launch, "cuda_device_count", lambda: 8)
    with pytest.raises(ValueError, match="--link-mbit"):
        launch.check_backend("nccl", 2, link_mbit=200.0)
    with pytest.raises(ValueError, match="backend must be one of"):
        launch.check_backend("mpi", 2)


def test_rank_pool_refuses_nccl_before_spawning(monkeypatch):
    monkeypatch.setattr(launch, "cuda_device_count", lambda: 1)
    pool = launch.RankPool(2, "nccl")
    with pytest.raises(ValueError, match="2 ranks, 1 CUDA device here"):
        pool.start()
    assert pool._workers == []


def test_every_real_command_takes_backend():
    from ddpsim.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in ("bench-allreduce", "profile", "bench-ddp", "check", "calibrate", "validate", "tune"):
        action = sub.choices[name]._option_string_actions.get("--backend")
        assert action is not None, name
        assert tuple(action.choices) == ("gloo", "nccl"), name


def _ddpsim(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "ddpsim", *args], capture_output=True, text=True, cwd=REPO, timeout=timeout, env=env
    )


@pytest.mark.cuda
def test_profile_over_nccl_on_one_gpu():
    r = _ddpsim(
        "profile", "--model", "mlp", "--backend", "nccl", "--world-size", "1", "--steps", "3", "--warmup", "1", "--json"
    )
    assert r.returncode == 0, r.stderr
    prof = json.loads(r.stdout)["results"]
    assert prof["env"]["device"].startswith("cuda"), prof["env"]
    assert prof["forward_s"] > 0


@pytest.mark.cuda
def test_bench_ddp_over_nccl_on_one_gpu():
    r = _ddpsim(
        "bench-ddp",
        "--model",
        "mlp",
        "--backend",
        "nccl",
        "--world-size",
        "1",
        "--strategy",
        "torch-ddp,bucketed",
        "--bucket-mb",
        "1,25",
        "--steps",
        "5",
        "--warmup",
        "2",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    recs = json.loads(r.stdout)["results"]
    assert {rec["backend"] for rec in recs} == {"nccl"}
    assert all(rec["median_s"] > 0 for rec in recs)
