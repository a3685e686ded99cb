"""Built-in models and devices as data, and gradient profiles computed from FLOPs.

Models live in ``simulator/data/models/<name>.json`` (schema ``ddpsim.model/1``):
the parameters in registration order (``module.named_parameters()``), each with
``shape``, ``dtype`` and ``fwd_flops_per_sample``, plus ``defaults.batch_size``
(per rank) and ``tokens_per_sample`` (the sequence length of a language model,
1 otherwise). Repeated layers may be written once as a ``repeat`` block
(``expand_params``; ``llama3-70b`` and ``qwen3-moe-235b-a22b`` are stored so).
``scripts/gen_zoo_models.py`` writes the large reference models from formulas; ``scripts/gen_toy_models.py`` writes realrun's toy workloads
from torch.

What ``fwd_flops_per_sample`` means, for every file in the zoo:

* the forward FLOPs of one sample (a multiply-add is 2 FLOPs; matrix products
  and convolutions only, as ``torch.utils.flop_counter`` counts them), given
  to the parameter whose gradient that work's backward delays;
* a module's op puts its FLOPs on its first tensor (the weight) and 0 on the
  rest (the bias);
* parameter-less work (attention's matmuls, a tied LM head) goes to the
  parameter op that ran just before it in forward: its backward runs just
  after that work's backward.

Devices live in ``simulator/data/devices/<name>.json`` (schema
``ddpsim.device/2``; ``/1`` files, with one peak, still load): ``peak_flops``
by dtype (dense: ``float32``, ``tf32``, ``bfloat16``, ``float16``),
``mem_bw_bytes_per_s``, ``launch_s`` (per-kernel floor), ``efficiency``
(``matmul``, ``memory``), ``sm_count``, the ``dtype`` of the whole-model path
below and its ``mfu`` (the fraction of peak a training step is assumed to
reach; an assumption, not a measurement), and a ``source`` per value. The
per-kernel fields serve ``simulator.roofline`` (workloads whose kernels were
recorded, ``ddpsim roofline`` and ``tune --target-device``); the models of
this zoo are data without kernels and stay on the whole-model path.

``profile_from_flops`` turns a model and a device into a ``GradProfile``:

* effective rate ``r = peak_flops * mfu`` (FLOP/s): the peak of the device's own ``dtype``, or of the
  compute dtype asked for (``dtype``: ``float32``, ``tf32``, ``bfloat16``, ``float16``), the MFU taken as a
  share of that dtype's peak; the gradients keep the model's parameter dtype (mixed precision all-reduces
  float32 gradients), so the communication does not change with it;
* ``forward_s = B * sum(fwd_flops_per_sample) / r`` for batch size ``B``;
* backward of one op ``= 2 * B * fwd_flops / r``: a matmul's backward computes
  both the input gradient and the weight gradient, each as large as the
  forward product (so ``backward_s == 2 * forward_s``). The tensors of one
  module (consecutive names with the same module path) form one op; its time
  goes to the tensor whose gradient is ready first (the last registered, since
  gradients become ready in reverse registration order), the others get 0, as
  ``simulator.profile`` defines;
* ``optimizer_s``: an Adam/AdamW update is memory-bound. Per parameter element
  it reads the parameter, its gradient and the two moment buffers and writes the
  parameter and both moments back: ``ADAM_BYTES_PER_ELEMENT = 7`` elements of
  the parameter's dtype (28 bytes in float32), at the full ``mem_bw_bytes_per_s``
  (a lower bound: no kernel reaches peak bandwidth).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .assumptions import StatedRange, parse_ranges
from .jsonio import read_json, to_fields
from .profile import DTYPE_BYTES, GradProfile, ParamSpec
from .units import MIB

MODEL_SCHEMA = "ddpsim.model/1"
MODEL_KEYS = frozenset({"schema", "name", "params", "source", "defaults", "tokens_per_sample"})
MODEL_DEFAULT_KEYS = frozenset({"device", "batch_size"})
DEVICE_SCHEMA = "ddpsim.device/2"
DEVICE_SCHEMA_V1 = "ddpsim.device/1"  # one peak, no launch floor: still read
DEVICE_RANGE_KEYS = ("mfu", "mem_bw_bytes_per_s")  # the values a device spec may state a range for
# the command line's --dtype names (as ``realrun.precision`` runs them) as device specs name their peaks
FLOPS_DTYPES = {"fp32": "float32", "tf32": "tf32", "bf16": "bfloat16"}
DEFAULT_DEVICE = "h100-sxm"
# the built-in models whose code is here to run (``realrun.workloads``; their descriptions here were generated from
# it): ``tune`` profiles these for real; the others are predicted from their FLOPs only
RUN_HERE = ("mlp", "cnn", "micro-dlrm", "gpt")
BACKWARD_FLOPS_PER_FORWARD_FLOP = 2.0
ADAM_BYTES_PER_ELEMENT = 7  # in units of the parameter's dtype size: read p, g, m, v; write p, m, v

DATA_DIR = Path(__file__).resolve().parent / "data"
MODELS_DIR = DATA_DIR / "models"
DEVICES_DIR = DATA_DIR / "devices"


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---- specs -------------------------------------------------------------------


@dataclass(frozen=True)
class ModelParam:
    """One parameter tensor of a model file: name, shape, dtype, forward FLOPs per sample."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    fwd_flops_per_sample: float = 0

    def __post_init__(self) -> None:
        _require(isinstance(self.name, str) and self.name != "", "parameter name must be a non-empty string")
        _require(
            isinstance(self.shape, tuple) and all(_is_count(s) and s >= 0 for s in self.shape),
            f"parameter {self.name!r}: shape must be a list of integers >= 0, got {self.shape!r}",
        )
        _require(
            self.dtype in DTYPE_BYTES,
            f"parameter {self.name!r}: unknown dtype {self.dtype!r}; allowed: {', '.join(DTYPE_BYTES)}",
        )
        _require(
            _is_number(self.fwd_flops_per_sample) and self.fwd_flops_per_sample >= 0,
            f"parameter {self.name!r}: fwd_flops_per_sample must be a number >= 0, got {self.fwd_flops_per_sample!r}",
        )

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPE_BYTES[self.dtype]

    @property
    def module(self) -> str:
        """The owning module's path: the name without its last component (``h.0.attn.c_attn``)."""
        return self.name.rpartition(".")[0]

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ModelParam:
        _require(isinstance(d, Mapping), f"a parameter entry must be an object, got {type(d).__name__}")
        for key in ("name", "shape"):
            _require(key in d, f"parameter entry {dict(d)!r} lacks {key!r}")
        shape = d["shape"]
        _require(isinstance(shape, list), f"parameter {d['name']!r}: shape must be a list, got {shape!r}")
        return cls(
            name=d["name"],
            shape=tuple(shape),
            dtype=d.get("dtype", "float32"),
            fwd_flops_per_sample=d.get("fwd_flops_per_sample", 0),
        )


def _params_from_entries(entries: list[Mapping[str, Any]]) -> tuple[ModelParam, ...]:
    """``ModelParam.from_dict`` per entry; entries that differ only by name (a layer's or an
    expert's tensors, repeated) are validated once and the checked parameter renamed."""
    out: list[ModelParam] = []
    checked: dict[tuple[Any, ...], ModelParam] = {}
    for d in entries:
        name = d.get("name") if isinstance(d, Mapping) else None
        if not (isinstance(name, str) and name and set(d) <= {"name", "shape", "dtype", "fwd_flops_per_sample"}):
            out.append(ModelParam.from_dict(d))
            continue
        flops = d.get("fwd_flops_per_sample", 0)
        key = (repr(d.get("shape")), d.get("dtype", "float32"), type(flops), flops)
        ref = checked.get(key)
        if ref is None:
            ref = checked[key] = ModelParam.from_dict(d)
            out.append(ref)
            continue
        p = object.__new__(ModelParam)  # the fields of a checked parameter, another (checked) name
        p.__dict__.update(ref.__dict__)
        p.__dict__["name"] = name
        out.append(p)
    return tuple(out)


def expand_params(entries: list[Any], subs: Mapping[str, int] | None = None) -> list[Mapping[str, Any]]:
    """A model file's ``params``, with repeated blocks written out.

    Besides parameter entries the list may hold ``{"repeat": {"var": "i", "count": 94},
    "params": [...]}``: the inner list ``count`` times, ``{i}`` in names replaced by
    0, 1, ...; blocks nest (layers, then experts within a layer). A model with tens
    of thousands of tensors (one per expert matrix per layer) is stored this way.
    """
    subs = dict(subs or {})
    out: list[Mapping[str, Any]] = []
    for e in entries:
        if isinstance(e, Mapping) and "repeat" in e:
            rep = e["repeat"]
            _require(
                isinstance(rep, Mapping) and isinstance(rep.get("var"), str) and _is_count(rep.get("count")),
                f"a repeat block needs {{'var': name, 'count': integer}}, got {rep!r}",
            )
            _require(isinstance(e.get("params"), list), "a repeat block needs a 'params' list")
            for k in range(rep["count"]):
                out.extend(expand_params(e["params"], {**subs, rep["var"]: k}))
        elif subs and isinstance(e, Mapping) and isinstance(e.get("name"), str) and "{" in e["name"]:
            name = e["name"]
            for var, k in subs.items():
                name = name.replace("{" + var + "}", str(k))
            out.append({**e, "name": name})
        else:
            out.append(e)
    return out


@dataclass(frozen=True)
class ModelSpec:
    """A model as data: parameters in registration order, default batch size, tokens per sample."""

    name: str
    params: tuple[ModelParam, ...]
    source: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    tokens_per_sample: int = 1

    def __post_init__(self) -> None:
        _require(isinstance(self.name, str) and self.name != "", "model name must be a non-empty string")
        _require(len(self.params) > 0, f"model {self.name!r} has no parameters")
        seen: set[str] = set()
        for p in self.params:
            _require(p.name not in seen, f"model {self.name!r}: parameter {p.name!r} is listed twice")
            seen.add(p.name)
        _require(isinstance(self.defaults, Mapping), f"model {self.name!r}: defaults must be an object")
        bs = self.defaults.get("batch_size", 1)
        _require(
            _is_count(bs) and bs >= 1, f"model {self.name!r}: defaults.batch_size must be an integer >= 1, got {bs!r}"
        )
        _require(
            _is_count(self.tokens_per_sample) and self.tokens_per_sample >= 1,
            f"model {self.name!r}: tokens_per_sample must be an integer >= 1, got {self.tokens_per_sample!r}",
        )

    @property
    def default_batch_size(self) -> int:
        return int(self.defaults.get("batch_size", 1))

    @property
    def default_device(self) -> str:
        """The device its compute is predicted on unless told: its own, else ``DEFAULT_DEVICE``."""
        return str(self.defaults.get("device") or DEFAULT_DEVICE)

    # the sums below are kept once computed: a spec is frozen, and a prediction over stated ranges builds its
    # profile on several devices (Qwen3-MoE: 36,945 tensors)
    @functools.cached_property
    def n_params(self) -> int:
        return sum(p.numel for p in self.params)

    @functools.cached_property
    def grad_bytes(self) -> int:
        return sum(p.nbytes for p in self.params)

    @functools.cached_property
    def fwd_flops_per_sample(self) -> float:
        return sum(p.fwd_flops_per_sample for p in self.params)

    @functools.cached_property
    def op_flops(self) -> tuple[tuple[int, float], ...]:
        """Per op (``op_groups``): the index of its last tensor, whose gradient is ready first, and the op's
        forward FLOPs per sample."""
        return tuple((g[-1], sum(self.params[i].fwd_flops_per_sample for i in g)) for g in self.op_groups())

    def op_groups(self) -> list[list[int]]:
        """Indices of the tensors of each op: consecutive parameters of the same module, in registration order."""
        groups: list[list[int]] = []
        for i, p in enumerate(self.params):
            if groups and self.params[groups[-1][-1]].module == p.module:
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def to_dict(self) -> dict[str, Any]:
        d = to_fields(self, schema=MODEL_SCHEMA)
        d["params"] = d.pop("params")  # the long list last: a model file reads header first
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ModelSpec:
        _require(isinstance(d, Mapping), "a model spec must be a JSON object")
        schema = d.get("schema")
        _require(schema == MODEL_SCHEMA, f"model schema is {schema!r}; this ddpsim reads {MODEL_SCHEMA!r}")
        _require(isinstance(d.get("params"), list), "model spec lacks a 'params' list")
        unknown = sorted(set(d) - MODEL_KEYS)
        _require(
            not unknown,
            f"model spec: unknown field(s) {', '.join(map(repr, unknown))}; it takes {', '.join(sorted(MODEL_KEYS))}",
        )
        defaults = d.get("defaults", {})
        _require(isinstance(defaults, Mapping), f"model spec: 'defaults' must be an object, got {defaults!r}")
        unknown = sorted(set(defaults) - MODEL_DEFAULT_KEYS)
        _require(
            not unknown,
            f"model spec: unknown default(s) {', '.join(map(repr, unknown))}; it takes {', '.join(sorted(MODEL_DEFAULT_KEYS))}",
        )
        return cls(
            name=d.get("name", "unnamed"),
            params=_params_from_entries(expand_params(d["params"])),
            source=str(d.get("source", "")),
            defaults=dict(d.get("defaults", {})),
            tokens_per_sample=d.get("tokens_per_sample", 1),
        )


PEAK_DTYPES = ("float64", "float32", "tf32", "bfloat16", "float16")
EFFICIENCY_KEYS = ("matmul", "memory")


@dataclass(frozen=True)
class DeviceSpec:
    """An accelerator as data: dense peak FLOP/s per dtype, memory bandwidth, per-kernel launch floor,
    assumed efficiencies and MFU, each with a source (schema ``ddpsim.device/2``; ``/1`` files still load).

    * ``peaks``: dense peak FLOP/s by compute dtype (``float32``, ``tf32``, ``bfloat16``, ``float16``;
      ``tf32`` is the tensor-core rate of float32 matmuls with TF32 allowed). A dtype without an
      entry is one the device cannot run fast (a V100 has no bf16): asking for it is a ``ValueError``.
    * ``peak_flops``: the peak of ``dtype``, the dtype of the whole-model path (``effective_flops``);
    * ``launch_s``: the floor of one kernel (launch plus eager framework dispatch), added per kernel
      by the roofline (``simulator.roofline``);
    * ``efficiency``: fractions of peak the roofline assumes, ``matmul`` (of ``peaks``) and
      ``memory`` (of ``mem_bw_bytes_per_s``); calibrated values replace them (``roofline.calibrate``);
    * ``sm_count``: streaming multiprocessors, for the wave quantization of a matmul's output tiles
      (1 for a CPU core: no quantization).
    """

    name: str
    dtype: str
    peak_flops: float
    mem_bw_bytes_per_s: float
    mfu: float
    source: Mapping[str, str]
    description: str = ""
    measured: Mapping[str, Any] = field(default_factory=dict)
    peaks: Mapping[str, float] = field(default_factory=dict)
    launch_s: float = 0.0
    efficiency: Mapping[str, float] = field(default_factory=dict)
    sm_count: int = 1
    schema: str = DEVICE_SCHEMA
    ranges: tuple[StatedRange, ...] = ()  # the spans its sources state for mfu, mem_bw (``simulator.assumptions``)

    def __post_init__(self) -> None:
        _require(isinstance(self.name, str) and self.name != "", "device name must be a non-empty string")
        _require(
            self.dtype in DTYPE_BYTES,
            f"device {self.name!r}: unknown dtype {self.dtype!r}; allowed: {', '.join(DTYPE_BYTES)}",
        )
        for key in ("peak_flops", "mem_bw_bytes_per_s"):
            v = getattr(self, key)
            _require(_is_number(v) and v > 0, f"device {self.name!r}: {key} must be a number > 0, got {v!r}")
        if not self.peaks:
            object.__setattr__(self, "peaks", {self.dtype: self.peak_flops})
        _require(isinstance(self.peaks, Mapping), f"device {self.name!r}: peak_flops must be an object by dtype")
        for k, v in self.peaks.items():
            _require(
                k in PEAK_DTYPES,
                f"device {self.name!r}: peak_flops has unknown dtype {k!r}; allowed: {', '.join(PEAK_DTYPES)}",
            )
            _require(_is_number(v) and v > 0, f"device {self.name!r}: peak_flops[{k}] must be a number > 0, got {v!r}")
        _require(
            _is_number(self.mfu) and 0 < self.mfu <= 1, f"device {self.name!r}: mfu must be in (0, 1], got {self.mfu!r}"
        )
        _require(
            _is_number(self.launch_s) and 0 <= self.launch_s < 1,
            f"device {self.name!r}: launch_s must be a number of seconds in [0, 1), got {self.launch_s!r}",
        )
        _require(isinstance(self.efficiency, Mapping), f"device {self.name!r}: efficiency must be an object")
        eff = {k: 1.0 for k in EFFICIENCY_KEYS}
        for k, v in self.efficiency.items():
            _require(k in EFFICIENCY_KEYS, f"device {self.name!r}: efficiency has unknown key {k!r}")
            _require(
                _is_number(v) and 0 < v <= 1, f"device {self.name!r}: efficiency[{k}] must be in (0, 1], got {v!r}"
            )
            eff[k] = float(v)
        object.__setattr__(self, "efficiency", eff)
        _require(
            _is_count(self.sm_count) and self.sm_count >= 1,
            f"device {self.name!r}: sm_count must be an integer >= 1, got {self.sm_count!r}",
        )
        _require(
            isinstance(self.source, Mapping), f"device {self.name!r}: source must be an object with one entry per value"
        )
        keys = ["peak_flops", "mem_bw_bytes_per_s", "mfu"]
        if self.schema != DEVICE_SCHEMA_V1:
            keys += ["launch_s", "efficiency", "sm_count"]
        missing = [k for k in keys if not self.source.get(k)]
        _require(not missing, f"device {self.name!r}: no source given for {', '.join(missing)}")

    @property
    def effective_flops(self) -> float:
        """FLOP/s a training step is assumed to reach on the whole-model path: ``peak_flops * mfu``."""
        return self.peak_flops * self.mfu

    def peak_key(self, dtype: str, tf32: bool = False) -> str:
        """The peak a matmul computing in ``dtype`` runs at (``tf32``: float32 with TF32 allowed): ``dtype``, or
        ``float32`` for TF32 on a device without TF32 units (V100, a CPU), where float32 matmuls stay float32."""
        key = "tf32" if (tf32 and dtype == "float32") else dtype
        return "float32" if key == "tf32" and "tf32" not in self.peaks else key

    def peak_for(self, dtype: str, tf32: bool = False) -> float:
        """Dense peak FLOP/s of a matmul computing in ``dtype`` (``tf32``: float32 with TF32 allowed)."""
        key = self.peak_key(dtype, tf32)
        _require(
            key in self.peaks,
            f"device {self.name!r} has no {key} peak (it lists {', '.join(self.peaks)}); choose another --dtype",
        )
        return float(self.peaks[key])

    def to_dict(self) -> dict[str, Any]:
        if self.schema == DEVICE_SCHEMA_V1:  # as read: one peak, no roofline fields
            d1: dict[str, Any] = {
                "schema": DEVICE_SCHEMA_V1,
                "name": self.name,
                "description": self.description,
                "dtype": self.dtype,
                "peak_flops": self.peak_flops,
                "mem_bw_bytes_per_s": self.mem_bw_bytes_per_s,
                "mfu": self.mfu,
                "source": dict(self.source),
            }
            return {**d1, "measured": dict(self.measured)} if self.measured else d1
        d: dict[str, Any] = {
            "schema": DEVICE_SCHEMA,
            "name": self.name,
            "description": self.description,
            "dtype": self.dtype,
            "peak_flops": dict(self.peaks),
            "mem_bw_bytes_per_s": self.mem_bw_bytes_per_s,
            "launch_s": self.launch_s,
            "efficiency": dict(self.efficiency),
            "sm_count": self.sm_count,
            "mfu": self.mfu,
            "source": dict(self.source),
        }
        if self.measured:
            d["measured"] = dict(self.measured)
        if self.ranges:
            d["ranges"] = {r.key: r.to_dict() for r in self.ranges}
        return d

    def with_values(self, values: Mapping[str, float]) -> DeviceSpec:
        """This spec with some of its ``DEVICE_RANGE_KEYS`` set (``{"mfu": 0.3}``)."""
        field_values: dict[str, Any] = {k: float(v) for k, v in values.items()}
        return replace(self, **field_values) if field_values else self

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeviceSpec:
        _require(isinstance(d, Mapping), "a device spec must be a JSON object")
        schema = d.get("schema")
        _require(
            schema in (DEVICE_SCHEMA, DEVICE_SCHEMA_V1),
            f"device schema is {schema!r}; this ddpsim reads {DEVICE_SCHEMA!r} (and {DEVICE_SCHEMA_V1!r})",
        )
        for key in ("name", "dtype", "peak_flops", "mem_bw_bytes_per_s", "mfu", "source"):
            _require(key in d, f"device spec {d.get('name', '?')!r} lacks {key!r}")
        peak = d["peak_flops"]
        if isinstance(peak, Mapping):
            peaks = dict(peak)
            _require(d["dtype"] in peaks, f"device spec {d['name']!r}: peak_flops lacks its dtype {d['dtype']!r}")
            peak = peaks[d["dtype"]]
        else:
            peaks = {}
        dev = cls(
            name=d["name"],
            dtype=d["dtype"],
            peak_flops=peak,
            mem_bw_bytes_per_s=d["mem_bw_bytes_per_s"],
            mfu=d["mfu"],
            source=dict(d["source"]) if isinstance(d["source"], Mapping) else d["source"],
            description=str(d.get("description", "")),
            measured=dict(d.get("measured", {})),
            peaks=peaks,
            launch_s=d.get("launch_s", 0.0),
            efficiency=d.get("efficiency", {}),
            sm_count=d.get("sm_count", 1),
            schema=str(schema),
        )
        values = {k: float(getattr(dev, k)) for k in DEVICE_RANGE_KEYS}
        where = f"device spec {dev.name!r}"
        return replace(dev, ranges=parse_ranges(d.get("ranges"), values, where, {"mfu": 1.0}))


# ---- loading -----------------------------------------------------------------


def _looks_like_path(spec: str | os.PathLike[str]) -> bool:
    if isinstance(spec, os.PathLike):
        return True
    return spec.endswith(".json") or "/" in spec or os.sep in spec


def _names(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.json"))


def list_models() -> list[str]:
    """Names of the built-in models (``simulator/data/models/*.json``)."""
    return _names(MODELS_DIR)


def list_devices() -> list[str]:
    """Names of the built-in devices (``simulator/data/devices/*.json``)."""
    return _names(DEVICES_DIR)


def _load_spec(kind: str, directory: Path, name: str, parse: Any) -> Any:
    if _looks_like_path(name):
        path = Path(name)
    else:
        known = _names(directory)
        _require(
            name in known,
            f"unknown {kind} {name!r}; available: {', '.join(known)} (or a path to a {kind} JSON file)",
        )
        path = directory / f"{name}.json"
    return _parse_spec(kind, read_json(path, f"{kind} spec"), path, parse)


def _parse_spec(kind: str, d: Any, path: str | Path, parse: Any) -> Any:
    try:
        return parse(d)
    except (TypeError, KeyError, AttributeError) as e:
        raise ValueError(f"{kind} spec {path} is malformed: {e}") from None


def load_model_spec(name: str) -> ModelSpec:
    """A built-in model by name, or a model JSON file by path; ``ValueError`` listing the names otherwise."""
    return _load_spec("model", MODELS_DIR, name, ModelSpec.from_dict)


def model_spec_from_file_dict(d: Any, path: str | Path) -> ModelSpec:
    """A model spec from what was read from the file ``path`` (``load_model_spec``'s errors)."""
    return _parse_spec("model", d, path, ModelSpec.from_dict)


def model_spec_in(d: Any, path: str | Path) -> ModelSpec | None:
    """The model description (``MODEL_SCHEMA``) in what was read from the file ``path``; ``None`` where the file is
    something else (a measured profile, say)."""
    if isinstance(d, Mapping) and d.get("schema") == MODEL_SCHEMA:
        return model_spec_from_file_dict(d, path)
    return None


def load_device(name: str) -> DeviceSpec:
    """A built-in device by name, or a device JSON file by path; ``ValueError`` listing the names otherwise."""
    return _load_spec("device", DEVICES_DIR, name, DeviceSpec.from_dict)


# ---- profiles ----------------------------------------------------------------


def profile_from_flops(
    model: ModelSpec | str,
    device: DeviceSpec | str = DEFAULT_DEVICE,
    batch_size: int | None = None,
    dtype: str | None = None,
) -> GradProfile:
    """A ``GradProfile`` with compute times from FLOPs and a device (formulas in the module docstring).

    ``batch_size`` is per rank (samples per step); ``None`` takes the model's
    default. ``dtype``: the compute dtype whose peak the MFU applies to (``None``: the device's own).
    ``source`` is ``"flops:<device>"``; ready order is the reverse of registration order.
    """
    spec = load_model_spec(model) if isinstance(model, str) else model
    dev = load_device(device) if isinstance(device, str) else device
    batch = spec.default_batch_size if batch_size is None else batch_size
    _require(_is_count(batch) and batch >= 1, f"batch size must be an integer >= 1, got {batch!r}")
    compute_dtype = dev.peak_key(dev.dtype if dtype is None else dtype)  # TF32 without its units: float32
    rate_flops = dev.peak_for(compute_dtype) * dev.mfu

    bwd_s = [0.0] * len(spec.params)
    for last, op_flops in spec.op_flops:
        bwd_s[last] = BACKWARD_FLOPS_PER_FORWARD_FLOP * batch * op_flops / rate_flops
    params = tuple(
        ParamSpec(name=p.name, numel=p.numel, dtype=p.dtype, bwd_s=t, shape=p.shape) for p, t in zip(spec.params, bwd_s)
    )
    fwd_flops_per_step = batch * spec.fwd_flops_per_sample
    return GradProfile(
        model=spec.name,
        params=params,
        ready_order=tuple(reversed(range(len(params)))),
        forward_s=fwd_flops_per_step / rate_flops,
        optimizer_s=ADAM_BYTES_PER_ELEMENT * spec.grad_bytes / dev.mem_bw_bytes_per_s,
        samples_per_step=batch,
        tokens_per_sample=spec.tokens_per_sample,
        source=f"flops:{dev.name}",
        env={
            "device": dev.name,
            "device_dtype": dev.dtype,
            "compute_dtype": compute_dtype,
            "peak_flops": dev.peak_for(compute_dtype),
            "mfu": dev.mfu,
            "mem_bw_bytes_per_s": dev.mem_bw_bytes_per_s,
            "fwd_flops_per_step": fwd_flops_per_step,
            "model_source": spec.source,
        },
    )


def load_profile(
    spec: str | os.PathLike[str],
    device: DeviceSpec | str | None = None,
    batch_size: int | None = None,
) -> GradProfile:
    """A profile from a path or a model name.

    * a path to a profile JSON (``ddpsim.profile/1``, e.g. measured by
      ``ddpsim profile``): ``GradProfile.load``; ``device``/``batch_size`` must
      then be left unset, the times are already in the file;
    * a path to a model JSON (``ddpsim.model/1``) or a built-in model name:
      ``profile_from_flops`` on ``device`` (default ``DEFAULT_DEVICE``).
    """
    if _looks_like_path(spec):
        path = Path(spec)
        d = read_json(path, "profile")
        if (spec_in_file := model_spec_in(d, path)) is not None:
            return profile_from_flops(spec_in_file, device or DEFAULT_DEVICE, batch_size)
        _require(
            device is None and batch_size is None,
            f"{path} is a profile with its own times; a device or batch size applies only to a model "
            f"(built-in name or {MODEL_SCHEMA} file)",
        )
        return GradProfile.load(path)
    return profile_from_flops(load_model_spec(str(spec)), device or DEFAULT_DEVICE, batch_size)


def model_summary(name: str | ModelSpec) -> dict[str, Any]:
    """Parameter count, gradient bytes and FLOPs of a model, as a JSON-ready dict."""
    spec = load_model_spec(name) if isinstance(name, str) else name
    return {
        "name": spec.name,
        "n_tensors": len(spec.params),
        "n_params": spec.n_params,
        "grad_bytes": spec.grad_bytes,
        "grad_mib": spec.grad_bytes / MIB,
        "fwd_flops_per_sample": spec.fwd_flops_per_sample,
        "default_batch_size": spec.default_batch_size,
        "default_device": spec.default_device,
        "tokens_per_sample": spec.tokens_per_sample,
        "source": spec.source,
    }
