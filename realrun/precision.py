"""The precision a rank trains in: ``fp32``, ``tf32`` (CUDA matmuls in TF32) or ``bf16`` (autocast).

One setting per process (ranks are processes): ``set_precision`` sets it (and
torch's TF32 switches, which are process-wide anyway), ``Workload.loss`` runs
the forward under ``autocast`` when it is ``bf16``, and ``describe`` is what
measurement records carry (``realrun.records.environment``): the compute dtype,
whether TF32 matmuls are allowed, whether autocast is on. Parameters and
gradients stay float32 in every mode (autocast casts per op), so gradient
bytes, buckets and communication do not change.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

PRECISIONS = ("fp32", "tf32", "bf16")
_STATE = {"precision": "fp32"}


def check_precision(precision: str, cuda: bool) -> None:
    """``ValueError`` (one line) unless ``precision`` can run here; tf32 only means something on CUDA."""
    if precision not in PRECISIONS:
        raise ValueError(f"--dtype must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "tf32" and not cuda:
        raise ValueError(
            "--dtype tf32 sets CUDA matmuls to TF32: it needs --backend nccl (GPUs); on the CPU use fp32 or bf16"
        )


def set_precision(precision: str) -> None:
    import torch

    check_precision(precision, True)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    _STATE["precision"] = precision


def set_precision_task(ctx: Any, precision: str) -> str:
    """On a rank (``RankPool.run``): set the precision; tf32 on a CPU rank is refused."""
    check_precision(precision, str(ctx.device).startswith("cuda"))
    set_precision(precision)
    return precision


def current() -> str:
    return _STATE["precision"]


def autocast(device_type: str) -> AbstractContextManager[Any]:
    """``torch.autocast(device_type, bfloat16)`` under bf16; nothing otherwise."""
    if _STATE["precision"] != "bf16":
        return nullcontext()
    import torch

    return torch.autocast(device_type, dtype=torch.bfloat16)


def describe() -> dict[str, Any]:
    p = _STATE["precision"]
    return {
        "precision": p,
        "dtype": "bfloat16" if p == "bf16" else "float32",
        "tf32": p == "tf32",
        "autocast": p == "bf16",
    }
