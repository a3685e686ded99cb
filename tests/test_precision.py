"""``--dtype``: a workload's forward in bf16 autocast, TF32 only on CUDA, and the records say which."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from realrun import precision  # noqa: E402
from realrun.records import environment  # noqa: E402
from realrun.workloads import load_workload  # noqa: E402


@pytest.fixture
def restore():
    yield
    precision.set_precision("fp32")


def test_bf16_runs_the_forward_in_autocast(restore):
    wl = load_workload("mlp:width=32,depth=2")
    seen = []
    model, batch = wl.build(), wl.example_batch(4)
    wl_capture = type(wl)(
        **{**wl.__dict__, "loss_fn": lambda out: (seen.append(out.dtype), out.float().pow(2).mean())[1]}
    )
    wl_capture.loss(model, batch).backward()
    precision.set_precision("bf16")
    loss = wl_capture.loss(model, batch)
    loss.backward()
    assert seen == [torch.float32, torch.bfloat16]
    assert all(p.grad.dtype == torch.float32 for p in model.parameters())  # gradients stay fp32: same buckets
    env = environment("gloo", 1)
    assert (env["precision"], env["dtype"], env["tf32"], env["autocast"]) == ("bf16", "bfloat16", False, True)


def test_tf32_sets_the_cuda_switches_and_needs_cuda(restore):
    precision.set_precision("tf32")
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    assert environment()["tf32"] is True
    precision.set_precision("fp32")
    assert not torch.backends.cuda.matmul.allow_tf32
    with pytest.raises(ValueError, match="needs --backend nccl"):
        precision.check_precision("tf32", cuda=False)
    with pytest.raises(ValueError, match="must be one of"):
        precision.check_precision("fp8", cuda=True)
    cpu_rank = type("Ctx", (), {"device": "cpu"})()
    with pytest.raises(ValueError, match="tf32"):
        precision.set_precision_task(cpu_rank, "tf32")  # a CPU rank refuses it


@pytest.mark.slow
def test_a_profile_records_its_dtype(rank_pool):
    from realrun.profile_grads import profile_grads

    try:
        assert rank_pool.run(precision.set_precision_task, "bf16") == ["bf16", "bf16"]
        prof = profile_grads(
            rank_pool, "gpt:n_layer=1,n_embd=32,n_head=2,block_size=8", batch_size=2, steps=2, warmup=1
        )
    finally:
        rank_pool.run(precision.set_precision_task, "fp32")
    assert (prof.env["dtype"], prof.env["tf32"], prof.env["autocast"]) == ("bfloat16", False, True)
