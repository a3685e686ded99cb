"""Compute time per operator from a device spec: a roofline plus a per-kernel launch floor.

Input: an op table (schema ``ddpsim.optable/1``, recorded by ``realrun.optable``
without running the arithmetic): every kernel of one training step with its
FLOPs, the bytes it reads and writes, the dtype it computes in, its phase
(forward or backward) and, for backward kernels, the parameter whose gradient
becomes ready after it. This module never imports torch.

One kernel on a device ``d`` (``simulator.zoo.DeviceSpec``)::

    compute_s = flops / (d.peak_for(dtype, tf32) * eff_matmul * wave)
    memory_s  = bytes / (d.mem_bw_bytes_per_s * eff_memory)
    time_s    = max(compute_s, memory_s) + d.launch_s

* ``peak_for``: the datasheet's dense peak of the kernel's dtype (``tf32``: a
  float32 matmul with TF32 allowed runs at the TF32 tensor-core rate);
* ``eff_matmul``, ``eff_memory``: the fractions of peak reached
  (``d.efficiency``: assumed in the spec, or fitted by ``calibrate`` from a
  measured profile of another model on the same device);
* ``wave`` (matmuls only, GPUs): the busy fraction of ``d.sm_count`` SMs when
  a matmul's work, ``TILE x TILE`` output tiles times ``K / TILE_K`` steps of
  the inner dimension, is dealt out evenly in whole rounds (stream-K, as
  cuBLAS does on Hopper; with plain tiles a matmul of 72 tiles on 132 SMs
  would keep only 72/132 busy, NVIDIA's "Matrix Multiplication Background"
  guide). Tile sizes are assumptions: the library picks its own;
* ``launch_s``: the floor of one kernel (launch plus the framework's dispatch),
  added to every kernel: it is what dominates a small model.

A kernel is *compute-bound* when ``compute_s >= memory_s``, *memory-bound*
otherwise, and *launch-bound* when ``launch_s`` exceeds both.

Approximations, said where they matter:

* backward kernels are recorded, not derived: a linear layer's backward shows
  its two matmuls (input and weight gradient, each the forward's size: the "2x
  forward FLOPs" rule comes out of the table rather than going in);
* bytes count each tensor argument and output once per kernel: no cache
  reuse across kernels, no re-reads inside one (a fused attention kernel's
  bytes are its inputs and outputs only);
* the op table is recorded with CPU dispatch (fake CPU tensors, CPU autocast):
  a GPU runs the same aten ops, with fused attention there too, but CUDA
  autocast keeps a few ops in float32 that CPU autocast casts (or the
  reverse);
* the optimizer is memory-bound: ``OPTIMIZER_ELEMENTS`` elements of the
  parameter's dtype moved per parameter element (SGD: read p, g, write p;
  Adam: read p, g, m, v, write p, m, v), plus one launch per tensor on a CPU
  and one per ``MULTI_TENSOR_PER_LAUNCH`` tensors on a GPU (torch's optimizers
  default to multi-tensor "foreach" kernels for CUDA tensors; the group size
  is an assumption).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .jsonio import from_fields, read_json, to_fields
from .profile import GradProfile, ParamSpec
from .zoo import DeviceSpec

OPTABLE_SCHEMA = "ddpsim.optable/1"
TILE = 128  # output tile edge of one SM's work (assumed)
TILE_K = 64  # inner-dimension step of one unit of stream-K work (assumed)
OPTIMIZER_ELEMENTS = {"sgd": 3, "adam": 7, "adamw": 7}
MULTI_TENSOR_PER_LAUNCH = 32
MAX_FITTED_EFFICIENCY = (
    4.0  # above 1: the spec's "peak" is below what the kernels reach (a measured, not a datasheet, peak)
)


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


@dataclass(frozen=True)
class Op:
    """One kernel of the step: aten name, phase, FLOPs, bytes moved, compute dtype, gradient it delays."""

    op: str
    phase: str
    flops: float
    bytes: float
    dtype: str = "float32"
    grad: int | None = None
    mnkb: tuple[int, int, int, int] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Op:
        _require(isinstance(d, Mapping), f"an op must be an object, got {d!r}")
        _require(d.get("phase") in ("fwd", "bwd"), f"op {d.get('op')!r}: phase must be fwd or bwd")
        for k in ("flops", "bytes"):
            v = d.get(k)
            _require(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0,
                f"op {d.get('op')!r}: {k} must be a number >= 0, got {v!r}",
            )
        mnkb = d.get("mnkb")
        return cls(
            op=str(d.get("op", "?")),
            phase=d["phase"],
            flops=d["flops"],
            bytes=d["bytes"],
            dtype=str(d.get("dtype", "float32")),
            grad=d.get("grad"),
            mnkb=tuple(mnkb) if mnkb else None,
        )


@dataclass(frozen=True)
class OpTable:
    """A step's kernels (``Op``), the model's parameters and the order their gradients became ready."""

    model: str
    batch_size: int
    params: tuple[ParamSpec, ...]
    ops: tuple[Op, ...]
    ready_order: tuple[int, ...] = ()
    dtype: str = "float32"
    optimizer: str = "sgd"
    tokens_per_sample: int = 1
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OpTable:
        _require(isinstance(d, Mapping), "an op table must be a JSON object")
        _require(
            d.get("schema") == OPTABLE_SCHEMA,
            f"op table schema is {d.get('schema')!r}; this ddpsim reads {OPTABLE_SCHEMA!r}",
        )
        _require(isinstance(d.get("params"), list) and d["params"], "op table lacks its 'params'")
        _require(isinstance(d.get("ops"), list), "op table lacks its 'ops'")
        params = tuple(
            ParamSpec(
                name=p["name"],
                numel=math.prod(p["shape"]),
                dtype=p.get("dtype", "float32"),
                shape=tuple(p["shape"]),
                requires_grad=bool(p.get("requires_grad", True)),
            )
            for p in d["params"]
        )
        ops = tuple(Op.from_dict(o) for o in d["ops"])
        n = len(params)
        ready = tuple(int(i) for i in d.get("ready_order", ()))
        _require(all(0 <= i < n for i in ready), "op table: ready_order names a parameter that does not exist")
        _require(
            all(o.grad is None or (isinstance(o.grad, int) and 0 <= o.grad < n) for o in ops),
            "op table: an op's grad names a parameter that does not exist",
        )
        return cls(
            model=str(d.get("model", "?")),
            batch_size=int(d.get("batch_size", 1)),
            params=params,
            ops=ops,
            ready_order=ready,
            dtype=str(d.get("dtype", "float32")),
            optimizer=str(d.get("optimizer", "sgd")),
            tokens_per_sample=int(d.get("tokens_per_sample", 1)),
            meta={k: d[k] for k in ("recorded_with",) if k in d},
        )

    @classmethod
    def load(cls, path: str | Path) -> OpTable:
        return cls.from_dict(read_json(Path(path), "op table"))

    @property
    def fwd_flops(self) -> float:
        return sum(o.flops for o in self.ops if o.phase == "fwd")

    @property
    def bwd_flops(self) -> float:
        return sum(o.flops for o in self.ops if o.phase == "bwd")


@dataclass(frozen=True)
class Efficiency:
    """Fractions of peak reached, and the per-kernel floor: the device's, or fitted (``calibrate``)."""

    matmul: float
    memory: float
    launch_s: float
    source: str = "device spec"

    @classmethod
    def of(cls, dev: DeviceSpec) -> Efficiency:
        return cls(dev.efficiency["matmul"], dev.efficiency["memory"], dev.launch_s, f"device spec {dev.name}")

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Efficiency:
        return from_fields(cls, d, what="efficiency", defaults={"source": ""})  # a file without a source says none


def wave_efficiency(mnkb: Sequence[int] | None, sm_count: int) -> float:
    """Busy fraction of ``sm_count`` SMs over a matmul's work units (``TILE x TILE`` output tiles times
    ``K / TILE_K`` inner steps) dealt out in whole rounds; 1 on one core or for a non-matmul."""
    if not mnkb or sm_count <= 1:
        return 1.0
    m, n, k, b = mnkb
    units = math.ceil(m / TILE) * math.ceil(n / TILE) * math.ceil(k / TILE_K) * max(b, 1)
    if units == 0:
        return 1.0
    return units / (math.ceil(units / sm_count) * sm_count)


def _parts(op: Op, dev: DeviceSpec, tf32: bool) -> tuple[float, float]:
    """(compute seconds, memory seconds) of one kernel at efficiency 1."""
    compute = op.flops / (dev.peak_for(op.dtype, tf32) * wave_efficiency(op.mnkb, dev.sm_count)) if op.flops else 0.0
    return compute, op.bytes / dev.mem_bw_bytes_per_s


def op_time_s(op: Op, dev: DeviceSpec, tf32: bool = False, eff: Efficiency | None = None) -> tuple[float, str]:
    """Seconds of one kernel and what bounds it: ``compute``, ``memory`` or ``launch``."""
    e = eff or Efficiency.of(dev)
    c, m = _parts(op, dev, tf32)
    c, m = c / e.matmul, m / e.memory
    roof = max(c, m)
    bound = "launch" if e.launch_s > roof else ("compute" if c >= m else "memory")
    return roof + e.launch_s, bound


def _optimizer_s(table: OpTable, dev: DeviceSpec, eff: Efficiency) -> float:
    k = OPTIMIZER_ELEMENTS.get(table.optimizer, OPTIMIZER_ELEMENTS["sgd"])
    train = [p for p in table.params if p.requires_grad]
    launches = len(train) if dev.sm_count <= 1 else math.ceil(len(train) / MULTI_TENSOR_PER_LAUNCH)
    return k * sum(p.nbytes for p in train) / (dev.mem_bw_bytes_per_s * eff.memory) + eff.launch_s * launches


def profile_from_optable(
    table: OpTable, dev: DeviceSpec, tf32: bool = False, eff: Efficiency | None = None
) -> GradProfile:
    """A ``GradProfile`` of ``table`` on ``dev``: each kernel timed by the roofline; a gradient's
    ``bwd_s`` is the time of the backward kernels before it became ready (the recorded order)."""
    e = eff or Efficiency.of(dev)
    fwd = 0.0
    bwd = [0.0] * len(table.params)
    tail = 0.0
    bound_s: dict[str, float] = defaultdict(float)
    bound_n: dict[str, int] = defaultdict(int)
    for op in table.ops:
        t, bound = op_time_s(op, dev, tf32, e)
        bound_s[bound] += t
        bound_n[bound] += 1
        if op.phase == "fwd":
            fwd += t
        elif op.grad is None:
            tail += t
        else:
            bwd[op.grad] += t
    trainable = [i for i, p in enumerate(table.params) if p.requires_grad]
    order = [i for i in table.ready_order if table.params[i].requires_grad]
    order += [i for i in reversed(trainable) if i not in set(order)]  # never ready (unused): last, 0 s
    params = tuple(
        ParamSpec(p.name, p.numel, p.dtype, bwd[i], p.shape, p.requires_grad) for i, p in enumerate(table.params)
    )
    return GradProfile(
        model=table.model,
        params=params,
        ready_order=tuple(order),
        forward_s=fwd,
        optimizer_s=_optimizer_s(table, dev, e),
        backward_tail_s=tail,
        samples_per_step=table.batch_size,
        tokens_per_sample=table.tokens_per_sample,
        source=f"roofline:{dev.name}",
        env={
            "device": dev.name,
            "dtype": table.dtype,
            "tf32": tf32,
            "efficiency": e.to_dict(),
            "fwd_flops_per_step": table.fwd_flops,
            "bwd_flops_per_step": table.bwd_flops,
            "kernels": len(table.ops),
            "bound_s": dict(bound_s),
            "bound_kernels": dict(bound_n),
        },
    )


def bound_report(
    table: OpTable, dev: DeviceSpec, tf32: bool = False, eff: Efficiency | None = None
) -> list[dict[str, Any]]:
    """Per aten op name and phase: kernels, total seconds, FLOPs, bytes and the bound of most of its time,
    longest first."""
    e = eff or Efficiency.of(dev)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for op in table.ops:
        t, bound = op_time_s(op, dev, tf32, e)
        r = rows.setdefault(
            (op.op, op.phase),
            {
                "op": op.op,
                "phase": op.phase,
                "kernels": 0,
                "time_s": 0.0,
                "flops": 0.0,
                "bytes": 0.0,
                "by_bound": defaultdict(float),
            },
        )
        r["kernels"] += 1
        r["time_s"] += t
        r["flops"] += op.flops
        r["bytes"] += op.bytes
        r["by_bound"][bound] += t
    out = []
    for r in rows.values():
        by = dict(r.pop("by_bound"))
        r["bound"] = max(by, key=lambda k: by[k])
        r["by_bound_s"] = by
        out.append(r)
    return sorted(out, key=lambda r: -r["time_s"])


# ---- calibration: efficiencies from one measured profile --------------------


def _rows(
    table: OpTable, measured: GradProfile, dev: DeviceSpec, tf32: bool, eff: Efficiency, groups: int
) -> tuple[list[list[float]], list[float]]:
    """Linear rows ``[compute_s, memory_s, kernels] . [1/eff_matmul, 1/eff_memory, launch_s] = measured_s``:
    the forward, and the backward cut into ``groups`` runs of consecutive gradients (each kernel counted
    with the part that bounds it under ``eff``)."""

    def term(op: Op) -> list[float]:
        c, m = _parts(op, dev, tf32)
        return [c, 0.0, 1.0] if c / eff.matmul >= m / eff.memory else [0.0, m, 1.0]

    fwd = [0.0, 0.0, 0.0]
    per_grad: dict[int | None, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for op in table.ops:
        t = term(op)
        acc = fwd if op.phase == "fwd" else per_grad[op.grad]
        for k in range(3):
            acc[k] += t[k]
    X, y = [fwd], [measured.forward_s]
    order = [i for i in measured.ready_order]
    _require(
        len(order) == len([p for p in table.params if p.requires_grad]),
        f"the measured profile has {len(order)} gradients, the op table {len(table.params)}: not the same model",
    )
    cut = max(1, math.ceil(len(order) / groups))
    for start in range(0, len(order), cut):
        chunk = order[start : start + cut]
        row = [0.0, 0.0, 0.0]
        for i in chunk:
            for k in range(3):
                row[k] += per_grad[i][k]
        meas = sum(measured.params[i].bwd_s for i in chunk)
        if start + cut >= len(order):  # the tail goes with the last run
            for k in range(3):
                row[k] += per_grad[None][k]
            meas += measured.backward_tail_s
        X.append(row)
        y.append(meas)
    return X, y


def calibrate(
    table: OpTable,
    measured: GradProfile,
    dev: DeviceSpec,
    tf32: bool = False,
    groups: int = 8,
    prior_weight: float = 1e-3,
) -> tuple[Efficiency, dict[str, Any]]:
    """Fit ``eff_matmul``, ``eff_memory`` and ``launch_s`` so the roofline of ``table`` matches ``measured``
    (a profile of the same model, batch and dtype measured on ``dev``).

    Weighted least squares on relative error over the forward and ``groups`` runs of backward
    gradients, the unknowns ``1/eff_matmul``, ``1/eff_memory``, ``launch_s``; a weak pull
    (``prior_weight``) toward the spec's values keeps a term the rows cannot see (a model with no
    memory-bound time) where the spec puts it. Which kernels are compute- or memory-bound is
    re-decided with the fitted values, three rounds. Returns the efficiencies and a fit report.
    """
    import numpy as np
    from scipy.optimize import nnls

    spec = Efficiency.of(dev)
    prior = np.array([1 / spec.matmul, 1 / spec.memory, max(spec.launch_s, 1e-7)])
    eff = spec
    for _ in range(3):
        X, y = _rows(table, measured, dev, tf32, eff, groups)
        A = np.array(X) / np.array(y)[:, None]
        b = np.ones(len(y))
        scale = prior  # solve for u = x / prior: all unknowns near 1
        A = A * scale
        A = np.vstack([A, prior_weight * np.eye(3)])
        b = np.concatenate([b, prior_weight * np.ones(3)])
        u, _ = nnls(A, b)
        x = u * scale
        inv_mm, inv_mem, launch = (float(v) for v in x)
        eff = Efficiency(
            matmul=min(1 / inv_mm, MAX_FITTED_EFFICIENCY) if inv_mm > 0 else MAX_FITTED_EFFICIENCY,
            memory=min(1 / inv_mem, MAX_FITTED_EFFICIENCY) if inv_mem > 0 else MAX_FITTED_EFFICIENCY,
            launch_s=launch,
            source=f"fitted to a measured profile of {measured.model} (batch {measured.samples_per_step})",
        )
    pred = profile_from_optable(table, dev, tf32, eff)
    report = {
        "model": measured.model,
        "batch_size": measured.samples_per_step,
        "measured_forward_s": measured.forward_s,
        "measured_backward_s": measured.backward_s,
        "fitted_forward_s": pred.forward_s,
        "fitted_backward_s": pred.backward_s,
        "spec_efficiency": spec.to_dict(),
        "efficiency": eff.to_dict(),
    }
    return eff, report
