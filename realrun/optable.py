"""Per-operator FLOPs and bytes of one training step: the table the simulator's roofline times.

``op_table(workload, batch_size, dtype)`` runs one forward and backward of the
workload under ``FakeTensorMode`` (tensors with shapes and dtypes, no data, no
arithmetic: a 89 M-parameter GPT at 8 x 1024 tokens takes about a second on
one CPU core) and records every aten kernel that runs:

* ``flops``: what ``torch.utils.flop_counter.FlopCounterMode`` counts for it
  (matmuls, convolutions, attention, forward and backward; element-wise ops 0);
  a counted op's backward is counted from its own kernels (two matmuls of the
  forward's size for a linear layer: the "2x forward" rule is measured, not
  assumed, on this path);
* ``bytes``: the sizes of its tensor inputs plus its outputs (each counted
  once per op; a kernel that re-reads an input, or one that fuses, moves
  another amount: an approximation);
* ``dtype``: the dtype it computes in (its first floating input). Under
  ``dtype="bfloat16"`` the step runs in ``torch.autocast`` (CPU autocast on
  fake CPU tensors: the casts and the bf16 matmuls it inserts are recorded;
  CUDA autocast keeps a few more ops in fp32, an approximation);
* ``grad``: for a backward op, the index of the parameter whose gradient
  becomes ready next (``register_post_accumulate_grad_hook``), so the
  simulator can time each gradient's readiness; ``None`` for forward ops and
  for backward work after the last gradient (the tail);
* ``mnkb``: for matmuls, the output's rows and columns, the inner dimension
  and the batch count (work quantization on a GPU).

View ops (``func.is_view``) and allocations launch no kernel and are left out.
Attention runs as the fused CPU kernel (``scaled_dot_product_attention``),
as the fused CUDA kernels do on a GPU.

The table is plain JSON (schema ``ddpsim.optable/1``, read by
``simulator.roofline``, which never imports torch).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count

from .flops import _CUSTOM as _FWD_CUSTOM
from .workloads import Workload

OPTABLE_SCHEMA = "ddpsim.optable/1"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}

_NO_KERNEL = {
    "aten._unsafe_view",
    "aten.detach",
    "aten.alias",
    "aten.lift_fresh",
    "aten.empty",
    "aten.empty_strided",
    "aten.empty_like",
    "aten.new_empty",
    "aten.new_empty_strided",
    "aten._local_scalar_dense",
    "aten.sym_size",
    "aten.sym_stride",
    "aten.sym_numel",
    "aten.sym_storage_offset",
}
_MATMULS = {"aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm"}


def _cpu_sdpa_backward_flop(
    grad_out_shape: Any, query_shape: Any, key_shape: Any, value_shape: Any, *args: Any, **kw: Any
) -> int:
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


_CUSTOM = {
    **_FWD_CUSTOM,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_sdpa_backward_flop,
}


def _nbytes(t: torch.Tensor) -> int:
    return int(t.numel()) * t.element_size()


class _Recorder(TorchDispatchMode):
    """Records each aten kernel: name, phase, FLOPs (from the counter below it), bytes, dtype, matmul shape."""

    def __init__(self, counter: FlopCounterMode):
        super().__init__()
        self.counter = counter
        self.phase = "fwd"
        self.ops: list[dict[str, Any]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        before = self.counter.get_total_flops()
        out = func(*args, **kwargs)
        name = f"{func.namespace}.{func._schema.name.split('::')[-1]}"
        if func.namespace != "aten" or func.is_view or name in _NO_KERNEL:
            return out
        ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        floating = [t for t in ins + outs if t.is_floating_point()]
        rec: dict[str, Any] = {
            "op": name,
            "phase": self.phase,
            "flops": int(self.counter.get_total_flops() - before),
            "bytes": sum(_nbytes(t) for t in ins) + sum(_nbytes(t) for t in outs),
            "dtype": str(floating[0].dtype).removeprefix("torch.") if floating else "float32",
        }
        if name in _MATMULS and outs:
            shape = list(outs[0].shape)
            a = args[1] if name in ("aten.addmm", "aten.baddbmm") else args[0]
            rec["mnkb"] = [shape[-2], shape[-1], int(a.shape[-1]), shape[0] if len(shape) == 3 else 1]
        self.ops.append(rec)
        return out


def _run(wl: Workload, batch_size: int, dtype: str, fake: bool) -> tuple[Any, list[dict[str, Any]], list[str]]:
    from contextlib import nullcontext

    from torch._subclasses.fake_tensor import FakeTensorMode

    fm: Any = FakeTensorMode() if fake else nullcontext()
    with fm:
        module = wl.build()
        batch = wl.make_batch(batch_size, wl.seed)
    names = [n for n, _ in module.named_parameters()]
    index = {id(p): i for i, (_, p) in enumerate(module.named_parameters())}
    counter = FlopCounterMode(display=False, custom_mapping=_CUSTOM)
    rec = _Recorder(counter)
    handles = []
    for p in module.parameters():
        if p.requires_grad:

            def ready(param: Any, i: int = index[id(p)]) -> None:
                rec.ops.append({"ready": i})

            handles.append(p.register_post_accumulate_grad_hook(ready))
    auto = torch.autocast("cpu", dtype=DTYPES[dtype]) if dtype != "float32" else nullcontext()
    try:
        with fm, counter, rec:
            with auto:
                loss = wl.loss(module, batch)
            rec.phase = "bwd"
            loss.backward()
    finally:
        for h in handles:
            h.remove()
    return module, rec.ops, names


def op_table(wl: Workload, batch_size: int, dtype: str = "float32", optimizer: str = "sgd") -> dict[str, Any]:
    """The ``ddpsim.optable/1`` table of one training step of ``wl`` at ``batch_size`` samples (see the module doc)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    try:
        module, raw, names = _run(wl, batch_size, dtype, fake=True)
        how = "fake tensors"
    except Exception:  # noqa: BLE001 - a user module fake tensors cannot run: run it for real (slower)
        module, raw, names = _run(wl, batch_size, dtype, fake=False)
        how = "real tensors"
    ops: list[dict[str, Any]] = []
    ready: list[int] = []
    pending: list[dict[str, Any]] = []  # backward ops since the last gradient became ready
    for r in raw:
        if "ready" in r:
            if r["ready"] not in ready:
                ready.append(r["ready"])
            for o in pending:
                o["grad"] = r["ready"]
            pending = []
            continue
        ops.append(r)
        if r["phase"] == "bwd":
            pending.append(r)
    params = [
        {
            "name": n,
            "shape": list(p.shape),
            "dtype": str(p.dtype).removeprefix("torch."),
            "requires_grad": p.requires_grad,
        }
        for n, p in zip(names, module.parameters())
    ]
    return {
        "schema": OPTABLE_SCHEMA,
        "model": wl.spec,
        "batch_size": batch_size,
        "tokens_per_sample": wl.tokens_per_sample,
        "dtype": dtype,
        "optimizer": optimizer,
        "recorded_with": f"torch {torch.__version__}, {how}, CPU dispatch",
        "params": params,
        "ready_order": ready,
        "ops": ops,
    }
