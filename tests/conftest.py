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

import pytest


@pytest.fixture(scope="session")
def rank_pool():
    from realrun.launch import RankPool

    with RankPool(2, timeout_s=300) as p:
        yield p


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "cuda" in item.keywords and not has_cuda:
            item.add_marker(skip)
