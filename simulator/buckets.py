"""Gradient bucket assignment: the one function the model and the real runs share.

``assign_buckets`` reproduces ``torch.distributed._compute_bucket_assignment_by_size``
(C++ ``compute_bucket_assignment_by_size`` in ``torch/csrc/distributed/c10d/reducer.cpp``,
checked against the installed torch 2.13 by ``tests/test_buckets.py``):

* tensors are taken in the given order and grouped per key (dtype, device);
* each key has its own open bucket and its own position in ``limits``; a
  bucket closes as soon as its size is **>=** the current limit (so it can
  exceed the cap by one tensor), and the next bucket of that key uses the next
  limit, the last limit repeating; tensors are never split;
* when no explicit ``tensor_indices`` are given the buckets are sorted by the
  smallest index they hold; with indices (the rebuild in ready order) the
  closing order is kept.

``ddp_buckets`` then applies what ``torch.nn.parallel.DistributedDataParallel``
does with it (``_BucketCapacityConfig`` and ``_ddp_init_helper`` in
``torch/nn/parallel/distributed.py``, torch 2.13).
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from .profile import GradProfile
from .units import MIB

DEFAULT_BUCKET_CAP_MB = 25  # torch: _DEFAULT_BUCKET_CAP_MB
DEFAULT_FIRST_BUCKET_BYTES = MIB  # torch: dist._DEFAULT_FIRST_BUCKET_BYTES


def mb_to_bytes(mb: float) -> int:
    """MiB (as in ``bucket_cap_mb``) to bytes, truncated like torch's ``int(cap_mb * _MB_TO_BYTES)``."""
    return int(mb * MIB)


def bucket_starts(sizes_bytes: Sequence[int] | np.ndarray, limits_bytes: Sequence[int]) -> list[int]:
    """Where each bucket starts when all tensors share one key: the ``>=`` rule of ``assign_buckets``
    (``bucket_starts_array`` as a list)."""
    return bucket_starts_array(sizes_bytes, limits_bytes).tolist()


def bucket_starts_array(sizes_bytes: Sequence[int] | np.ndarray, limits_bytes: Sequence[int]) -> np.ndarray:
    """Where each bucket starts when all tensors share one key: the ``>=`` rule of ``assign_buckets`` in numpy.

    With prefix sums ``C`` (``C[k]`` = bytes of the first ``k`` tensors), a bucket
    starting at ``s`` under limit ``L`` ends after the first ``k`` with
    ``C[k] - C[s] >= L``: ``k = bisect_left(C, C[s] + L)``. For the repeating
    last limit every start's successor is found at once (``np.searchsorted``);
    the chain of successors from the first start is then followed by doubling
    (the first ``2m`` starts are the first ``m`` and their ``m``-th successors,
    and the ``2m``-th successor function is the ``m``-th applied twice), so a
    sweep over a model of tens of thousands of tensors does not walk them one by
    one in Python. Returns the start positions (int64); the last bucket may be
    open (never reached its limit), as in ``assign_buckets``.
    """
    n = len(sizes_bytes)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    arr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.asarray(sizes_bytes, dtype=np.int64), out=arr[1:])
    # a limit over the total is never reached, as total + 1 is not: clamped there, no sum below overflows int64
    lims = [min(int(x), int(arr[-1]) + 1) for x in limits_bytes]
    lead: list[int] = []
    s = 0
    for lim in lims[:-1]:  # the leading limits, one bucket each
        if s >= n:
            return np.asarray(lead, dtype=np.int64)
        lead.append(s)
        # a bucket holds at least one tensor
        s = min(max(int(np.searchsorted(arr, arr[s] + lim, side="left")), s + 1), n)
    if s >= n:
        return np.asarray(lead, dtype=np.int64)
    base, m = s, n - s
    # successors relative to base, m absorbing (the end); a bucket holds at least one tensor: under a limit of 0
    # bytes (a cap under one byte, truncated as torch truncates it) each tensor is a bucket of its own, as torch's
    # assignment makes it
    jump = np.empty(m + 1, dtype=np.int64)
    ends = np.searchsorted(arr, arr[base:-1] + lims[-1], side="left") - base
    np.minimum(np.maximum(ends, np.arange(1, m + 1)), m, out=jump[:m])
    jump[m] = m
    path = np.zeros(1, dtype=np.int64)
    while path[-1] < m:
        path = np.concatenate((path, jump[path]))
        jump = jump[jump]
    path = path[: int(np.searchsorted(path, m, side="left"))] + base
    return np.concatenate((np.asarray(lead, dtype=np.int64), path)) if lead else path


def assign_buckets(
    sizes_bytes: Sequence[int],
    limits_bytes: Sequence[int],
    keys: Sequence[Hashable] | None = None,
    tensor_indices: Sequence[int] | None = None,
) -> tuple[list[list[int]], list[int]]:
    """Group tensors into buckets; returns ``(buckets, per_bucket_limit_bytes)``.

    ``sizes_bytes[i]`` is the byte size of tensor ``i``; ``keys[i]`` its group
    (dtype, device), all equal by default. Buckets hold positions ``i``, or
    ``tensor_indices[i]`` when given.
    """
    if not limits_bytes:
        raise ValueError("at least one bucket size limit is needed")
    if any(int(x) < 0 for x in limits_bytes):  # 0 (a cap under one byte): a tensor a bucket, as in torch
        raise ValueError(f"bucket size limits must be >= 0 bytes, got {list(limits_bytes)}")
    n = len(sizes_bytes)
    if keys is None:
        keys = [None] * n
    if tensor_indices is not None and len(tensor_indices) != n:
        raise ValueError("tensor_indices must have one entry per tensor")
    label = list(tensor_indices) if tensor_indices is not None else list(range(n))
    if n and all(k == keys[0] for k in keys):  # one key: prefix sums, O(n)
        starts = bucket_starts(sizes_bytes, limits_bytes)
        ends = starts[1:] + [n]
        last_lim = len(limits_bytes) - 1
        return (
            [label[a:b] for a, b in zip(starts, ends)],
            [int(limits_bytes[min(k, last_lim)]) for k in range(len(starts))],
        )

    open_buckets: dict[Hashable, tuple[list[int], int]] = {}
    limit_pos: dict[Hashable, int] = {}
    result: list[tuple[list[int], int]] = []
    last = len(limits_bytes) - 1
    for i in range(n):
        key = keys[i]
        members, size = open_buckets.get(key, ([], 0))
        members.append(label[i])
        size += int(sizes_bytes[i])
        pos = limit_pos.setdefault(key, 0)
        limit = int(limits_bytes[pos])
        if size >= limit:
            result.append((members, limit))
            open_buckets.pop(key, None)
            limit_pos[key] = min(pos + 1, last)
        else:
            open_buckets[key] = (members, size)
    # Buckets still open at the end follow. torch keeps them in a std::unordered_map
    # keyed by (dtype, device) and appends them in its iteration order; libstdc++
    # iterates a small map in reverse order of first insertion, which the oracle
    # test confirms. (Only visible with mixed dtypes and explicit indices; without
    # indices the result is sorted below anyway.)
    for key in reversed(list(limit_pos)):
        if key in open_buckets:
            members, _size = open_buckets[key]
            result.append((members, int(limits_bytes[limit_pos[key]])))
    if tensor_indices is None:
        result.sort(key=lambda mb: min(mb[0]))
    return [m for m, _ in result], [lim for _, lim in result]


@dataclass(frozen=True)
class DDPBuckets:
    """Buckets of torch DDP in reducer index order (bucket 0 is reduced first).

    ``first_step``: the assignment built at construction, used until the rebuild.
    ``steady``: the assignment from the rebuild on (equal to ``first_step`` when
    there is no rebuild). Entries are indices into ``GradProfile.params``.
    """

    first_step: tuple[tuple[int, ...], ...]
    steady: tuple[tuple[int, ...], ...]
    rebuilt: bool
    bucket_bytes_cap: int
    first_bucket_bytes_cap: int


def ddp_bucket_limits(
    bucket_cap_mb: float | None = None,
    bucket_cap_mb_list: Sequence[float] | None = None,
) -> tuple[int, int, tuple[int, ...]]:
    """``(bucket_bytes_cap, first_bucket_bytes_cap, per_bucket_caps)`` as torch 2.13 computes them.

    The 1 MiB first bucket applies only when ``bucket_cap_mb`` is left ``None``;
    a list of caps overrides both.
    """
    if bucket_cap_mb is not None and not bucket_cap_mb > 0:
        raise ValueError(f"bucket_cap_mb must be > 0 MiB, got {bucket_cap_mb}")
    if bucket_cap_mb_list:
        if any(not c > 0 for c in bucket_cap_mb_list):
            raise ValueError(f"bucket_cap_mb_list entries must be > 0 MiB, got {list(bucket_cap_mb_list)}")
        per = tuple(mb_to_bytes(c) for c in bucket_cap_mb_list)
        cap = mb_to_bytes(max(bucket_cap_mb_list))
        return cap, cap, per
    using_default = bucket_cap_mb is None
    cap = mb_to_bytes(DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb)
    first = DEFAULT_FIRST_BUCKET_BYTES if using_default else cap
    return cap, first, ()


def ddp_buckets(
    profile: GradProfile,
    bucket_cap_mb: float | None = None,
    bucket_cap_mb_list: Sequence[float] | None = None,
    find_unused_parameters: bool = False,
    static_graph: bool = False,
) -> DDPBuckets:
    """The buckets torch DDP forms for ``profile``, before and after the rebuild."""
    cap, first, per = ddp_bucket_limits(bucket_cap_mb, bucket_cap_mb_list)
    reg = [i for i, p in enumerate(profile.params) if p.requires_grad]  # DDP skips frozen params
    sizes = [profile.params[i].nbytes for i in reg]
    keys = [profile.params[i].dtype for i in reg]

    # Initial assignment over registration order, then reversed (_ddp_init_helper).
    if per:
        init_limits: list[int] = list(per)
    elif static_graph or not find_unused_parameters:
        init_limits = [sys.maxsize]  # one bucket holding everything in step 1
    elif first < cap:
        init_limits = [first, cap]
    else:
        init_limits = [cap]
    init, _ = assign_buckets(sizes, init_limits, keys)
    first_step = tuple(tuple(reg[j] for j in b) for b in reversed(init))

    # Rebuild (C++ Reducer::rebuild_buckets) in gradient-ready order, only when
    # find_unused_parameters is off or the graph is static.
    rebuild = static_graph or not find_unused_parameters
    if not rebuild:
        return DDPBuckets(first_step, first_step, False, cap, first)
    rebuild_limits = list(per) if per else [first, cap]
    order = list(profile.ready_order)
    steady, _ = assign_buckets(
        [profile.params[i].nbytes for i in order],
        rebuild_limits,
        [profile.params[i].dtype for i in order],
        tensor_indices=order,
    )
    return DDPBuckets(first_step, tuple(tuple(b) for b in steady), True, cap, first)


def reverse_order_buckets(
    nbytes: Sequence[int],
    bucket_mb: float,
    keys: Sequence[Hashable] | None = None,
    trainable: Sequence[bool] | None = None,
) -> tuple[tuple[int, ...], ...]:
    """Buckets of ``bucket_mb`` MiB (``>=`` closing rule) over tensors in reverse order.

    This is the hand-written ``BucketedDDP``'s assignment (``realrun.ddp`` calls
    it with its module's parameters): bucket 0 holds the last-registered
    parameters, whose gradients come first in backward. Entries are positions
    in ``nbytes``; positions with ``trainable[i]`` false are left out.
    """
    if not bucket_mb > 0:
        raise ValueError(f"bucket size must be > 0 MiB, got {bucket_mb}")
    n = len(nbytes)
    rev = [i for i in reversed(range(n)) if trainable is None or trainable[i]]
    buckets, _ = assign_buckets(
        [nbytes[i] for i in rev],
        [mb_to_bytes(bucket_mb)],
        [keys[i] for i in rev] if keys is not None else None,
        tensor_indices=rev,
    )
    return tuple(tuple(b) for b in buckets)


def simple_buckets(profile: GradProfile, bucket_mb: float) -> tuple[tuple[int, ...], ...]:
    """``reverse_order_buckets`` over a profile's parameters (indices into ``profile.params``)."""
    ps = profile.params
    return reverse_order_buckets(
        [p.nbytes for p in ps], bucket_mb, [p.dtype for p in ps], [p.requires_grad for p in ps]
    )
