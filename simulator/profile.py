"""Gradient profiles: the ordered parameters of a model and when their gradients appear.

A profile is the simulator's description of one training step of one rank:

* ``params`` in registration order (the order of ``module.parameters()``),
  each with its element count and dtype size;
* ``ready_order``: indices into ``params`` in the order gradients become ready
  during backward (by default the reverse of registration order);
* per parameter ``bwd_s``: the backward compute, in seconds, spent between the
  previous gradient becoming ready and this one (the op that produces it). For
  several parameters produced by one op (a linear layer's weight and bias) the
  first in ready order carries the op's time and the others carry 0;
* ``forward_s`` and ``optimizer_s`` for the rest of the step, and
  ``backward_tail_s``: backward work after the last gradient is ready
  (gradients of inputs, autograd's bookkeeping).

Profiles come from FLOPs and a device spec (``simulator.zoo``) or from a real
measurement (``ddpsim profile``, written by ``realrun.profile_grads``). Both use
this one format, saved as JSON with a schema version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .jsonio import from_fields, to_fields

PROFILE_SCHEMA = "ddpsim.profile/1"

DTYPE_BYTES = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int8": 1,
    "uint8": 1,
}


# Byte counts are summed as int64 (``numpy.cumsum`` in the bucket assignment): a profile stays well below its range.
MAX_BYTES = 1 << 60  # 1 EiB of parameters
MAX_NUMEL = MAX_BYTES // max(DTYPE_BYTES.values())
MAX_SECONDS = 1e9  # a compute time in a profile (about 32 years): the sums of such stay finite


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _finite_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _seconds(v: Any) -> bool:
    return _finite_number(v) and 0.0 <= v <= MAX_SECONDS


@dataclass(frozen=True)
class ParamSpec:
    """One parameter tensor: name, size, dtype and the backward compute that yields its gradient."""

    name: str
    numel: int
    dtype: str = "float32"
    bwd_s: float = 0.0
    shape: tuple[int, ...] | None = None
    requires_grad: bool = True

    def __post_init__(self) -> None:
        # every profile's rescale (an interval's draws) builds each parameter again: the valid case in one test,
        # the messages only where it fails
        if (
            type(self.name) is str
            and self.name != ""
            and type(self.numel) is int
            and 0 <= self.numel <= MAX_NUMEL
            and self.dtype in DTYPE_BYTES
            and _seconds(self.bwd_s)
            and type(self.requires_grad) is bool
        ):
            return
        self._refuse()

    def _refuse(self) -> None:
        """Raise the first of this parameter's problems, as one line."""
        _require(isinstance(self.name, str) and self.name != "", "parameter name must be a non-empty string")
        _require(
            isinstance(self.numel, int) and not isinstance(self.numel, bool) and 0 <= self.numel <= MAX_NUMEL,
            f"parameter {self.name!r}: numel must be an integer from 0 to {MAX_NUMEL}, got {self.numel!r}",
        )
        _require(
            self.dtype in DTYPE_BYTES,
            f"parameter {self.name!r}: unknown dtype {self.dtype!r}; allowed: {', '.join(DTYPE_BYTES)}",
        )
        _require(
            _seconds(self.bwd_s),
            f"parameter {self.name!r}: bwd_s must be a number of seconds from 0 to {MAX_SECONDS:g}, got {self.bwd_s!r}",
        )
        _require(
            isinstance(self.requires_grad, bool),
            f"parameter {self.name!r}: requires_grad must be true or false, got {self.requires_grad!r}",
        )

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPE_BYTES[self.dtype]

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self, omit_default=("shape", "requires_grad"))  # profiles of many tensors stay small

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ParamSpec:
        _require(isinstance(d, Mapping), f"a parameter entry must be an object, got {type(d).__name__}")
        return from_fields(cls, d, what=f"parameter entry {dict(d)!r}")


def _scaled_params(params: tuple[ParamSpec, ...], factor: float) -> tuple[ParamSpec, ...]:
    """``params`` with every ``bwd_s`` times ``factor`` (> 0). Each is a valid parameter scaled by a finite factor,
    so where every result stays within ``MAX_SECONDS`` it is built without checking each field again (an
    interval's draws and a spread over stated ranges rescale profiles of tens of thousands of tensors); else
    through the checked constructor, which says what is wrong."""
    if not (math.isfinite(factor) and max((p.bwd_s for p in params), default=0.0) * factor <= MAX_SECONDS):
        return tuple(replace(p, bwd_s=p.bwd_s * factor) for p in params)
    out = []
    for p in params:
        if p.bwd_s == 0.0:  # most tensors of a model from FLOPs: an op's time goes to one of them
            out.append(p)
            continue
        q = object.__new__(ParamSpec)
        q.__dict__.update(p.__dict__)
        q.__dict__["bwd_s"] = p.bwd_s * factor
        out.append(q)
    return tuple(out)


@dataclass(frozen=True)
class GradProfile:
    """One rank's step: parameters, gradient-ready order, compute times.

    ``samples_per_step`` (and ``tokens_per_sample`` for language models) let
    results report throughput. ``source`` says where the times came from
    (``"measured"`` or ``"flops:<device>"``); ``env`` records the machine.
    """

    model: str
    params: tuple[ParamSpec, ...]
    ready_order: tuple[int, ...] = ()
    forward_s: float = 0.0
    optimizer_s: float = 0.0
    backward_tail_s: float = 0.0
    samples_per_step: int = 1
    tokens_per_sample: int = 1
    source: str = "unspecified"
    env: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _require(
            isinstance(self.model, str) and self.model != "", f"a profile's model must be a name, got {self.model!r}"
        )
        _require(len(self.params) > 0, f"profile {self.model!r} has no parameters")
        bad = [p for p in self.params if not isinstance(p, ParamSpec)]  # the message built only where one is
        if bad:
            raise ValueError(f"profile {self.model!r}: a parameter entry must be an object, got {bad[0]!r}")
        trainable = [i for i, p in enumerate(self.params) if p.requires_grad]
        _require(len(trainable) > 0, f"profile {self.model!r} has no trainable parameters")
        if not self.ready_order:
            object.__setattr__(self, "ready_order", tuple(reversed(trainable)))
        order = self.ready_order
        _require(
            sorted(order) == trainable,
            f"profile {self.model!r}: ready_order must list each trainable parameter index exactly once "
            f"(got {len(order)} entries for {len(trainable)} trainable parameters)",
        )
        for name in ("forward_s", "optimizer_s", "backward_tail_s"):
            v = getattr(self, name)
            _require(
                _seconds(v),
                f"profile {self.model!r}: {name} must be a number of seconds from 0 to {MAX_SECONDS:g}, got {v!r}",
            )
        for name in ("samples_per_step", "tokens_per_sample"):
            v = getattr(self, name)
            _require(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                f"profile {self.model!r}: {name} must be a whole number >= 1, got {v!r}",
            )
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"profile {self.model!r}: parameter names must differ; {twice[:3]} appear more than once")
        total = sum(p.nbytes for p in self.params)
        _require(total <= MAX_BYTES, f"profile {self.model!r}: {total} bytes of parameters, over {MAX_BYTES}")

    # ---- derived quantities -------------------------------------------------
    @property
    def trainable(self) -> tuple[ParamSpec, ...]:
        return tuple(p for p in self.params if p.requires_grad)

    @property
    def total_grad_bytes(self) -> int:
        return sum(p.nbytes for p in self.params if p.requires_grad)

    @property
    def backward_s(self) -> float:
        return sum(self.params[i].bwd_s for i in self.ready_order) + self.backward_tail_s

    @property
    def compute_s(self) -> float:
        """Forward + backward + optimizer: the step with no communication at all."""
        return self.forward_s + self.backward_s + self.optimizer_s

    def ready_times_s(self) -> list[float]:
        """Seconds after backward starts at which each parameter's gradient is ready, by param index."""
        out = [0.0] * len(self.params)
        t = 0.0
        for i in self.ready_order:
            t += self.params[i].bwd_s
            out[i] = t
        return out

    def scaled(
        self, compute_factor: float, optimizer_factor: float | None = None, env: Mapping[str, Any] | None = None
    ) -> GradProfile:
        """The same profile with every compute time multiplied by ``compute_factor`` (the optimizer's by
        ``optimizer_factor`` where given: a memory-bound step on a device of another bandwidth), and ``env``
        in place of its own where given (the device it is now on)."""
        _require(compute_factor > 0, f"compute factor must be > 0, got {compute_factor}")
        opt = compute_factor if optimizer_factor is None else optimizer_factor
        _require(opt > 0, f"optimizer factor must be > 0, got {opt}")
        times: dict[str, Any] = {
            "params": self.params if compute_factor == 1.0 else _scaled_params(self.params, compute_factor),
            "forward_s": self.forward_s * compute_factor,
            "optimizer_s": self.optimizer_s * opt,
            "backward_tail_s": self.backward_tail_s * compute_factor,
        }
        if env is not None:
            times["env"] = dict(env)
        if not all(_seconds(times[k]) for k in ("forward_s", "optimizer_s", "backward_tail_s")):
            return replace(self, **times)  # the checked constructor says which time is out of range
        # the same parameters, names, order and sizes as this valid profile, its times scaled within range: built
        # without checking the structure again (tens of thousands of tensors, rescaled many times a prediction)
        out = object.__new__(GradProfile)
        out.__dict__.update(self.__dict__)
        out.__dict__.update(times)
        return out

    # ---- construction -------------------------------------------------------
    @classmethod
    def from_ready_times(
        cls,
        model: str,
        params: Sequence[ParamSpec],
        ready_times_s: Mapping[int, float],
        **kw: Any,
    ) -> GradProfile:
        """Build a profile from measured ready times (seconds after backward start, by param index).

        Parameters ready at the same instant keep registration-reverse order;
        each one's ``bwd_s`` is the gap since the previous ready gradient.
        """
        trainable = [i for i, p in enumerate(params) if p.requires_grad]
        missing = [params[i].name for i in trainable if i not in ready_times_s]
        _require(not missing, f"no ready time for parameters: {', '.join(missing[:5])}")
        order = sorted(trainable, key=lambda i: (ready_times_s[i], -i))
        new_params = list(params)
        prev = 0.0
        for i in order:
            t = max(float(ready_times_s[i]), prev)
            new_params[i] = replace(params[i], bwd_s=t - prev)
            prev = t
        return cls(model=model, params=tuple(new_params), ready_order=tuple(order), **kw)

    # ---- (de)serialisation --------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return to_fields(self, schema=PROFILE_SCHEMA)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GradProfile:
        _require(isinstance(d, Mapping), "a profile must be a JSON object")
        schema = d.get("schema")
        _require(
            schema == PROFILE_SCHEMA,
            f"profile schema is {schema!r}; this ddpsim reads {PROFILE_SCHEMA!r}",
        )
        _require(isinstance(d.get("params"), list), "profile lacks a 'params' list")
        return from_fields(cls, d, what="profile", defaults={"model": "unnamed"})

    def save(self, path: str | Path) -> None:
        """The profile as JSON, written whole: one line a parameter and the ready order on one line (a model of
        tens of thousands of tensors as an indented tree took seconds and megabytes more), the rest indented."""
        import json

        from .jsonio import dumps_finite, write_whole

        parts = []
        for key, value in self.to_dict().items():
            if key == "params":  # each entry's numbers were checked finite when the profile was made
                rows = ",\n".join("  " + json.dumps(p, allow_nan=False) for p in value)
                text = f"[\n{rows}\n ]"
            elif key == "ready_order":
                text = json.dumps(value)
            else:
                text = dumps_finite(value).replace("\n", "\n ")
            parts.append(f" {json.dumps(key)}: {text}")
        write_whole(path, "{\n" + ",\n".join(parts) + "\n}\n")

    @classmethod
    def load(cls, path: str | Path) -> GradProfile:
        from .jsonio import read_json

        return cls.from_file_dict(read_json(path, "profile"), path)

    @classmethod
    def from_file_dict(cls, d: Any, path: str | Path) -> GradProfile:
        """``from_dict`` of what was read from ``path``, its errors naming the file."""
        try:
            return cls.from_dict(d)
        except (TypeError, KeyError, AttributeError) as e:
            raise ValueError(f"profile {path} is malformed: {e}") from None
        except ValueError as e:
            raise ValueError(f"profile {path}: {e}") from None
