"""Shared fixtures: one 2-rank gloo pool for the whole session.

Starting gloo ranks costs 2-5 s a spawn on a 2-core box, so every test module
that only needs two healthy ranks takes ``rank_pool`` instead of starting its
own. Tests that kill, hang or misconfigure ranks (``test_launch``) keep their
own pools, so a failure they provoke never reaches the shared one.

Marks: ``slow`` (real ranks, still in the default run; ``pytest -m "not slow"``
is the quick loop), ``netns`` (root and network namespaces), ``cuda`` (skips
without a GPU).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def run_root(tmp_path, monkeypatch):
    """Each test's runs get their folders here (``ddpsim.cliutil.run_root``), never in the home folder."""
    root = tmp_path / "ddpsim-runs"
    monkeypatch.setenv("DDPSIM_RUN_ROOT", str(root))
    return root


@pytest.fixture(scope="session")
def rank_pool():
    from realrun.launch import RankPool

    with RankPool(2, timeout_s=300) as p:
        yield p


@pytest.fixture
def torchrun_ddpsim():
    """Run ``torchrun --standalone --nproc-per-node 2 -m ddpsim ARGS`` on the CPU path (gloo), also on a
    machine with a GPU; returns the finished process."""

    def run(*args: str, timeout: float) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        return subprocess.run(
            [*cmd, "-m", "ddpsim", *args], capture_output=True, text=True, cwd=REPO, timeout=timeout, env=env
        )

    return run


def pytest_collection_modifyitems(config, items):
    cuda_items = [item for item in items if "cuda" in item.keywords]
    if not cuda_items:
        return  # no torch import for a run that has no cuda test
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in cuda_items:
            item.add_marker(skip)
