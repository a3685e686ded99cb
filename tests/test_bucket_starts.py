"""``bucket_starts`` (the doubling walk over successors) against the plain greedy rule, tensor by tensor, and
against torch's own assignment on lists far longer than ``tests/test_buckets.py``'s."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from simulator.buckets import assign_buckets, bucket_starts, bucket_starts_array


def greedy_starts(sizes: list[int], limits: list[int]) -> list[int]:
    """The rule as torch states it: a bucket closes once it holds >= its limit; the next uses the next limit,
    the last repeating; a tensor is never split (a tensor of 0 bytes joins the open bucket)."""
    starts, is_open, size, k = [], False, 0, 0
    for i, b in enumerate(sizes):
        if not is_open:
            starts.append(i)
            is_open, size = True, 0
        size += b
        if size >= limits[min(k, len(limits) - 1)]:
            is_open, k = False, k + 1
    return starts


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 1000, 4097])
@pytest.mark.parametrize("limits", [[0], [1], [64], [4096], [1 << 20], [1 << 40], [1 << 20, 4096], [0, 64, 1 << 16]])
def test_the_walk_is_the_greedy_rule(n, limits):
    rng = np.random.default_rng(n * 7 + len(limits))
    sizes = rng.choice([0, 4, 28, 400, 10_000, 280_000, 1_200_000], size=n).tolist()
    want = greedy_starts(sizes, limits)
    assert bucket_starts(sizes, limits) == want
    got = bucket_starts_array(np.asarray(sizes), limits)
    assert got.dtype == np.int64 and got.tolist() == want


def test_no_tensors_no_buckets():
    assert bucket_starts([], [4096]) == [] and bucket_starts_array([], [64, 4096]).shape == (0,)


def test_zero_byte_tensors_join_the_open_bucket():
    assert greedy_starts([0, 5], [5]) == bucket_starts([0, 5], [5]) == [0]
    assert bucket_starts([0, 0, 5, 0], [0]) == [0, 1, 2, 3]


@pytest.mark.parametrize("limits", [[5, sys.maxsize - 3, 5], [1 << 70, 5], [5, sys.maxsize], [sys.maxsize], [1 << 80]])
def test_limits_beyond_int64_or_the_total_are_a_bucket_never_closed(limits):
    sizes = [10] * 5
    assert bucket_starts(sizes, limits) == greedy_starts(sizes, limits)


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
