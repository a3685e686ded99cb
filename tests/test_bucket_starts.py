"""``bucket_starts`` (the doubling walk over successors) against the plain greedy rule, tensor by tensor, and
against torch's own assignment on lists far longer than ``tests/test_buckets.py``'s."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.buckets import assign_buckets, bucket_starts, bucket_starts_array


def greedy_starts(sizes: list[int], limits: list[int]) -> list[int]:
    """The rule as torch states it: a bucket closes once it holds >= its limit; the next uses the next limit,
    the last repeating; a tensor is never split."""
    starts, size, k = [], 0, 0
    for i, b in enumerate(sizes):
        if size == 0 and (not starts or starts[-1] != i):
            starts.append(i)
        size += b
        if size >= limits[min(k, len(limits) - 1)]:
            size, k = 0, k + 1
            if i + 1 < len(sizes):
                starts.append(i + 1)
    return starts


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 1000, 4097])
@pytest.mark.parametrize("limits", [[0], [1], [64], [4096], [1 << 20], [1 << 40], [1 << 20, 4096], [0, 64, 1 << 16]])
def test_the_walk_is_the_greedy_rule(n, limits):
    rng = np.random.default_rng(n * 7 + len(limits))
    sizes = rng.choice([4, 28, 400, 10_000, 280_000, 1_200_000], size=n).tolist()
    want = greedy_starts(sizes, limits)
    assert bucket_starts(sizes, limits) == want
    got = bucket_starts_array(np.asarray(sizes), limits)
    assert got.dtype == np.int64 and got.tolist() == want


def test_no_tensors_no_buckets():
    assert bucket_starts([], [4096]) == [] and bucket_starts_array([], [64, 4096]).shape == (0,)


def test_leading_limits_longer_than_the_list():
    assert bucket_starts([100, 100], [100, 100, 100, 100]) == [0, 1]
    assert bucket_starts([100], [100, 1]) == [0]


@pytest.mark.parametrize("seed", range(6))
def test_long_lists_match_torch(seed):
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2000, 6000))
    numel = rng.choice([1, 7, 100, 2500, 70_000, 300_000], size=n)
    tensors = [torch.empty(int(k)) for k in numel]
    limits = sorted(int(x) for x in rng.choice([64, 4096, 100_000, 1 << 20, 4 << 20, 25 << 20], size=2, replace=False))
    theirs = dist._compute_bucket_assignment_by_size(tensors, limits)[0]
    ours = assign_buckets([int(k) * 4 for k in numel], limits)[0]
    assert ours == [list(b) for b in theirs]
