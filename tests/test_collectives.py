"""Hand-written all-reduce against ``dist.all_reduce``: one rank pool per world size, many cases each.

Inputs are small integers stored as floats, so every summation order gives the
exact same result and the comparison can be ``torch.equal``.
"""

from __future__ import annotations

import pytest

from realrun.launch import RankPool

pytestmark = pytest.mark.slow

# 1 element (fewer elements than ranks: empty chunks), sizes not divisible by 2 or 3,
# and a size with many segments per chunk once segment_bytes is small.
SIZES = (1, 2, 3, 5, 7, 64, 1000, 1001, 65537)


def compare(ctx, impl_name, numel, dtype_name, op, segment_bytes, shape2d, window_bytes=None):
    import torch
    import torch.distributed as dist

    from realrun import collectives
    from realrun.collectives import naive_allreduce, ring_allreduce

    collectives.RECV_WINDOW_BYTES = window_bytes or (64 << 20)

    dtype = getattr(torch, dtype_name)
    g = torch.Generator().manual_seed(1000 * ctx.rank + numel)
    x = torch.randint(-50, 50, (numel,), generator=g).to(dtype)
    if shape2d:  # a non-contiguous view: results must land in it
        x = x.repeat(2).view(2, numel).t()
    expected = x.clone()
    dist.all_reduce(expected)
    if op == "avg":
        expected = expected / ctx.world_size
    kwargs = {"op": op}
    if impl_name == "ring" and segment_bytes:
        kwargs["segment_bytes"] = segment_bytes
    impl = ring_allreduce if impl_name == "ring" else naive_allreduce
    out = impl(x, **kwargs)
    return (
        out is x,
        bool(torch.equal(x, expected) if op == "sum" else torch.allclose(x, expected)),
        x.shape == expected.shape,
    )


def bad_op(ctx):
    import torch

    from realrun.collectives import ring_allreduce

    try:
        ring_allreduce(torch.zeros(4), op="max")
    except ValueError as e:
        return str(e)
    return None


@pytest.fixture(scope="module", params=[2, 3], ids=lambda p: f"p{p}")
def pool(request):
    with RankPool(request.param, timeout_s=60) as p:
        yield p


def _check(pool, *args):
    results = pool.run(compare, *args)
    assert results == [(True, True, True)] * pool.world_size, (args, results)


@pytest.mark.parametrize("impl", ["ring", "naive"])
def test_sum_matches_native_for_awkward_sizes(pool, impl):
    for numel in SIZES:
        _check(pool, impl, numel, "float32", "sum", None, False)


def test_ring_with_many_segments_per_chunk(pool):
    # 64-byte segments: 1001 float64 elements -> chunks of ~500 elements -> ~63 segments each;
    # a 256-byte receive window holds 4 of them, so slots are reused across segments and steps.
    for numel in (17, 1001, 4099):
        _check(pool, "ring", numel, "float64", "sum", 64, False)
        _check(pool, "ring", numel, "float64", "sum", 64, False, 256)


@pytest.mark.parametrize("impl", ["ring", "naive"])
def test_avg_and_non_contiguous(pool, impl):
    _check(pool, impl, 1001, "float64", "avg", 256, False)
    _check(pool, impl, 999, "float32", "sum", 256, True)


def test_bad_op_is_a_clear_error(pool):
    assert pool.run(bad_op) == ["op must be one of sum, avg, got 'max'"] * pool.world_size
