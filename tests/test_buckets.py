"""Bucket assignment against torch's own, the oracle.

``assign_buckets`` is compared with ``dist._compute_bucket_assignment_by_size``
on random tensor lists, and ``ddp_buckets`` with the buckets a real
``DistributedDataParallel`` reports after its rebuild (1-rank gloo group).
Skipped when torch is not installed.
"""

import random
import socket

import pytest

from simulator.buckets import assign_buckets, ddp_buckets, reverse_order_buckets
from simulator.profile import GradProfile, ParamSpec
from simulator.units import MIB

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
nn = torch.nn


def _torch_assign(tensors, limits, indices=None):
    if indices is None:
        return dist._compute_bucket_assignment_by_size(tensors, limits)
    return dist._compute_bucket_assignment_by_size(tensors, limits, [False] * len(tensors), indices)


@pytest.mark.parametrize("seed", range(30))
def test_assign_matches_torch_on_random_lists(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    dtypes = [torch.float32, torch.float64, torch.float16] if seed % 3 == 0 else [torch.float32]
    tensors = [torch.empty(rng.choice([1, 7, 100, 2500, 70000, 300000]), dtype=rng.choice(dtypes)) for _ in range(n)]
    limits = sorted(rng.sample([64, 4096, 100_000, 1 << 20, 4 << 20, 25 << 20], rng.randint(1, 3)))
    sizes = [t.numel() * t.element_size() for t in tensors]
    keys = [str(t.dtype) for t in tensors]
    ours, our_limits = assign_buckets(sizes, limits, keys)
    theirs, their_limits = _torch_assign(tensors, limits)
    assert ours == [list(b) for b in theirs]
    assert our_limits == list(their_limits)
    # with explicit indices (the rebuild path): no sorting, indices relabelled
    idx = list(range(n))[::-1]
    ours, _ = assign_buckets(sizes, limits, keys, tensor_indices=idx)
    theirs, _ = _torch_assign(tensors, limits, idx)
    assert ours == [list(b) for b in theirs]


@pytest.mark.parametrize("limits", [[0], [0, 0], [0, 4096], [4096, 0]])
def test_a_limit_of_zero_bytes_makes_one_bucket_a_tensor_as_torch_does(limits):
    tensors = [torch.empty(n) for n in (1, 100, 2500, 7, 70000)]
    sizes = [t.numel() * t.element_size() for t in tensors]
    ours, our_limits = assign_buckets(sizes, limits)
    theirs, their_limits = _torch_assign(tensors, limits)
    assert ours == [list(b) for b in theirs] and our_limits == list(their_limits)


def test_closing_rule_is_greater_or_equal():
    # 3 tensors of 400 B with a 800 B cap: the bucket closes at exactly 800 (>=), not after exceeding it
    assert assign_buckets([400, 400, 400], [800])[0] == [[0, 1], [2]]
    # a bucket can exceed the cap by one tensor
    assert assign_buckets([700, 700, 10], [800])[0] == [[0, 1], [2]]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def one_rank_group():
    import os

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(_free_port())
    dist.init_process_group("gloo", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _profile_of(module):
    params = tuple(
        ParamSpec(n, p.numel(), str(p.dtype).replace("torch.", ""), requires_grad=p.requires_grad)
        for n, p in module.named_parameters()
    )
    return GradProfile("m", params)


def _real_ddp_buckets(module, **kw):
    ddp = nn.parallel.DistributedDataParallel(module, **kw)
    x = torch.randn(2, module[0].in_features, dtype=next(module.parameters()).dtype)
    first = ddp._get_ddp_logging_data().get("bucket_sizes")
    for _ in range(3):
        ddp(x).sum().backward()
    d = ddp._get_ddp_logging_data()
    rebuilt = d.get("rebuilt_per_bucket_param_indices")
    buckets = [tuple(int(i) for i in b.split()) for b in rebuilt.split(", ")] if rebuilt else None
    return first, buckets


@pytest.mark.parametrize(
    "kw",
    [
        {},  # bucket_cap_mb unset: 1 MiB first bucket, then 25 MiB
        {"bucket_cap_mb": 1},
        {"bucket_cap_mb": 25},  # explicit 25: first cap 25 MiB too
        {"bucket_cap_mb": 0.5},
        {"bucket_cap_mb_list": [1, 2, 3]},
    ],
)
def test_ddp_buckets_match_real_ddp(one_rank_group, kw):
    torch.manual_seed(0)
    module = nn.Sequential(*[nn.Linear(300, 300) for _ in range(9)])
    module[2].weight.requires_grad_(False)  # a frozen parameter is left out of every bucket
    first_sizes, real = _real_ddp_buckets(module, **kw)
    prof = _profile_of(module)
    ours = ddp_buckets(prof, kw.get("bucket_cap_mb"), kw.get("bucket_cap_mb_list"))
    # DDP's indices count trainable parameters only; map ours onto them
    trainable = [i for i, p in enumerate(prof.params) if p.requires_grad]
    pos = {i: k for k, i in enumerate(trainable)}
    assert [tuple(pos[i] for i in b) for b in ours.steady] == real
    # first iteration: one bucket with everything (find_unused_parameters=False), unless a cap list is given
    assert (len(ours.first_step) == 1) == ("bucket_cap_mb_list" not in kw)
    assert ", ".join(str(sum(prof.params[i].nbytes for i in b)) for b in ours.first_step) == str(first_sizes)


def test_ddp_first_bucket_only_when_unset():
    prof = GradProfile("m", tuple(ParamSpec(f"p{i}", 100_000) for i in range(30)))  # 400 kB each
    unset = ddp_buckets(prof)
    explicit = ddp_buckets(prof, bucket_cap_mb=25)
    # unset: first bucket closes at >= 1 MiB = 3 params (1.2 MB); explicit 25: a bucket of >= 25 MiB holds all 30
    assert [len(b) for b in unset.steady] == [3, 27]
    assert [len(b) for b in explicit.steady] == [30]


def test_find_unused_parameters_buckets_by_registration_order_without_rebuild():
    prof = GradProfile("m", tuple(ParamSpec(f"p{i}", 100_000) for i in range(8)))
    b = ddp_buckets(prof, bucket_cap_mb=1, find_unused_parameters=True)
    assert not b.rebuilt and b.first_step == b.steady
    # registration order [0..7] grouped at >= 1 MiB (3 params), buckets reversed: last params first
    assert b.steady == ((6, 7), (3, 4, 5), (0, 1, 2))


def test_reverse_order_buckets():
    # 5 tensors of 400 B, cap 1000 B: reverse order 4,3,2 (1200 >= 1000) then 1,0
    mb = 1000 / MIB
    assert reverse_order_buckets([400] * 5, mb) == ((4, 3, 2), (1, 0))
