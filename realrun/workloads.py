"""Workloads: a model, its example batch and its loss, all in one shape.

Every command (``check``, ``profile``, ``bench-ddp``) takes ``--model SPEC`` and
calls ``load_workload(SPEC)``:

* a built-in name, optionally with integer options: ``mlp``, ``cnn``,
  ``micro-dlrm``, ``gpt``, ``gpt:n_layer=4,n_embd=256``;
* a user module ``path/to/file.py:build_fn``: ``build_fn()`` returns the
  ``nn.Module``; the file defines ``example_batch(batch_size)`` (a tensor or a
  tuple of tensors, passed positionally, batch along dim 0) and optionally
  ``loss_fn(output)``; without it the loss is the mean of the squared output.
  Optional constants ``BATCH_SIZE`` (default per-rank batch) and
  ``TOKENS_PER_SAMPLE`` (for tokens/s) are read when present.

Built-ins are seeded and deterministic: ``build()`` returns the same weights
every call and ``make_batch(n, seed)`` the same data for the same seed. The
GPT and micro-DLRM models take their targets as the last input and return the
loss (``loss_fn`` is the identity), as nanoGPT does. No built-in has buffers
or batch-statistics layers, so DDP on a shard equals training on the whole batch.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import math
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .models import GPT, MLP, MicroDLRM, ToyCNN

Batch = torch.Tensor | tuple[torch.Tensor, ...]

DEFAULT_SEED = 0


def mean_square_loss(output: Any) -> torch.Tensor:
    """The default loss: mean of the squared output."""
    return output.pow(2).mean()


def identity_loss(output: Any) -> torch.Tensor:
    """For models that compute their own loss."""
    return output


@dataclass(frozen=True)
class Workload:
    """A model to train: ``build()`` a fresh module, ``example_batch(n)`` an input of n samples.

    ``spec`` is the string that loads it again (ranks in other processes call
    ``load_workload(spec)``). ``seeded_batch``: ``example_batch`` takes a
    ``seed`` keyword (built-ins); otherwise ``make_batch`` seeds torch's global
    generator around the call.
    """

    name: str
    spec: str
    build_fn: Callable[[], nn.Module]
    example_batch_fn: Callable[..., Batch]
    loss_fn: Callable[[Any], torch.Tensor] = mean_square_loss
    tokens_per_sample: int = 1
    default_batch_size: int = 32
    seeded_batch: bool = False
    seed: int = DEFAULT_SEED
    config: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> nn.Module:
        """A fresh module, weights from ``seed`` (torch's global RNG state is left as it was)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return self.build_fn()

    def example_batch(self, batch_size: int) -> Batch:
        return self.make_batch(batch_size, self.seed)

    def make_batch(self, batch_size: int, seed: int) -> Batch:
        """``batch_size`` samples, the same for the same ``seed``."""
        if self.seeded_batch:
            return self.example_batch_fn(batch_size, seed=seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return self.example_batch_fn(batch_size)

    def loss(self, module: nn.Module, batch: Batch) -> torch.Tensor:
        """Forward ``batch`` through ``module`` and reduce to the scalar loss (in bf16 autocast when the
        process's precision is bf16, ``realrun.precision``)."""
        from . import precision

        first = next(iter(as_tuple(batch)), None)
        device_type = first.device.type if isinstance(first, torch.Tensor) else "cpu"
        with precision.autocast(device_type):
            out = module(*batch) if isinstance(batch, tuple) else module(batch)
            return self.loss_fn(out)


# ---- batch helpers ---------------------------------------------------------------


def as_tuple(batch: Batch) -> tuple[torch.Tensor, ...]:
    return batch if isinstance(batch, tuple) else (batch,)


def batch_len(batch: Batch) -> int:
    return int(as_tuple(batch)[0].shape[0])


def select(batch: Batch, index: torch.Tensor | slice) -> Batch:
    """Rows ``index`` (along dim 0) of every tensor of ``batch``."""
    if isinstance(batch, tuple):
        return tuple(t[index] for t in batch)
    return batch[index]


def cast_batch(batch: Batch, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> Batch:
    """Floating tensors to ``dtype``; everything to ``device``."""

    def one(t: torch.Tensor) -> torch.Tensor:
        if dtype is not None and t.is_floating_point():
            t = t.to(dtype)
        if device is not None:
            t = t.to(device)
        return t

    if isinstance(batch, tuple):
        return tuple(one(t) for t in batch)
    return one(batch)


# ---- built-in configurations -----------------------------------------------------


@dataclass(frozen=True)
class MLPConfig:
    d_in: int = 256
    width: int = 1024
    depth: int = 4
    d_out: int = 10
    batch_size: int = 64


@dataclass(frozen=True)
class CNNConfig:
    width: int = 32
    n_classes: int = 10
    batch_size: int = 16


@dataclass(frozen=True)
class DLRMConfig:
    n_dense: int = 13
    n_tables: int = 8
    rows: int = 3900
    dim: int = 32
    hidden: int = 64
    bag: int = 4
    batch_size: int = 128


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 4096
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 256
    batch_size: int = 8


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def _mlp(cfg: MLPConfig) -> tuple[Callable, Callable, int]:
    def batch(n: int, seed: int = DEFAULT_SEED) -> Batch:
        return torch.randn(n, cfg.d_in, generator=_gen(seed))

    return (lambda: MLP(cfg.d_in, cfg.width, cfg.depth, cfg.d_out)), batch, 1


def _cnn(cfg: CNNConfig) -> tuple[Callable, Callable, int]:
    def batch(n: int, seed: int = DEFAULT_SEED) -> Batch:
        return torch.randn(n, 3, 32, 32, generator=_gen(seed))

    return (lambda: ToyCNN(cfg.width, cfg.n_classes)), batch, 1


def _dlrm(cfg: DLRMConfig) -> tuple[Callable, Callable, int]:
    def batch(n: int, seed: int = DEFAULT_SEED) -> Batch:
        g = _gen(seed)
        dense = torch.randn(n, cfg.n_dense, generator=g)
        sparse = torch.randint(0, cfg.rows, (n, cfg.n_tables, cfg.bag), generator=g)
        labels = torch.randint(0, 2, (n,), generator=g).float()
        return dense, sparse, labels

    return (lambda: MicroDLRM(cfg.n_dense, cfg.n_tables, cfg.rows, cfg.dim, cfg.hidden)), batch, 1


def _gpt(cfg: GPTConfig) -> tuple[Callable, Callable, int]:
    if cfg.n_embd % cfg.n_head:
        raise ValueError(f"gpt: n_embd ({cfg.n_embd}) must be divisible by n_head ({cfg.n_head})")

    def batch(n: int, seed: int = DEFAULT_SEED) -> Batch:
        # A learnable synthetic language: each sequence counts up from a random start.
        g = _gen(seed)
        start = torch.randint(0, cfg.vocab_size, (n, 1), generator=g)
        seq = (start + torch.arange(cfg.block_size + 1)) % cfg.vocab_size
        return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()

    def build() -> nn.Module:
        return GPT(cfg.vocab_size, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd)

    return build, batch, cfg.block_size


_BUILTINS: dict[str, tuple[type, Callable, Callable[[Any], torch.Tensor], str]] = {
    "mlp": (MLPConfig, _mlp, mean_square_loss, "toy MLP, 4 x 1024 wide, 3.4M parameters (13 MiB)"),
    "cnn": (CNNConfig, _cnn, mean_square_loss, "CIFAR-sized toy CNN on synthetic 3x32x32 input"),
    "micro-dlrm": (DLRMConfig, _dlrm, identity_loss, "8 embedding-bag tables + bottom/top MLP, about 1M parameters"),
    "gpt": (
        GPTConfig,
        _gpt,
        identity_loss,
        "small GPT-style LM, 4.2M parameters (16 MiB), tied head; options n_layer, n_head, n_embd, block_size, vocab_size",
    ),
}

BUILTIN_NAMES = tuple(_BUILTINS)


def describe_builtins() -> str:
    return "; ".join(f"{k} ({v[3]})" for k, v in _BUILTINS.items())


OPTION_MAX = 10_000_000  # any size option of a built-in workload, at most
_OPTION_MAX = {"n_layer": 256, "depth": 256, "n_tables": 256, "n_head": 256}  # repeated blocks, at most


def _parse_options(name: str, text: str, cfg_cls: type) -> Any:
    allowed = {f.name for f in fields(cfg_cls)}
    values: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or key not in allowed:
            raise ValueError(
                f"{name}: bad option {item!r}; options are key=integer with key one of {', '.join(sorted(allowed))}"
            )
        try:
            v = int(val)
        except ValueError:
            raise ValueError(f"{name}: option {key} must be an integer, got {val!r}") from None
        if v <= 0:
            raise ValueError(f"{name}: option {key} must be > 0, got {v}")
        top = _OPTION_MAX.get(key, OPTION_MAX)
        if v > top:  # a model of that size takes minutes to build here (gpt at n_layer=1000: 24 s) or all memory
            raise ValueError(f"{name}: option {key} must be <= {top}, got {v}")
        values[key] = v
    return cfg_cls(**values)


def _load_builtin(spec: str) -> Workload:
    name, _, opts = spec.partition(":")
    cfg_cls, factory, loss_fn, _doc = _BUILTINS[name]
    cfg = _parse_options(name, opts, cfg_cls)
    build, batch, tokens = factory(cfg)
    config = {f.name: getattr(cfg, f.name) for f in fields(cfg)}
    return Workload(
        name=name,
        spec=spec,
        build_fn=build,
        example_batch_fn=batch,
        loss_fn=loss_fn,
        tokens_per_sample=tokens,
        default_batch_size=cfg.batch_size,
        seeded_batch=True,
        config=config,
    )


# ---- user modules ----------------------------------------------------------------


def _import_file(path: Path) -> Any:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    mod_spec = importlib.util.spec_from_file_location(f"ddpsim_user_{path.stem}_{digest}", path)
    if mod_spec is None or mod_spec.loader is None:
        raise ValueError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(mod_spec)
    try:
        mod_spec.loader.exec_module(module)
    except SystemExit as e:  # sys.exit() at import: not ddpsim's exit
        raise ValueError(f"{path} does not import: it called sys.exit({e.code!r}) at import") from None
    except Exception as e:  # noqa: BLE001 - any failure of user code becomes one clear message
        raise ValueError(f"{path} does not import: {type(e).__name__}: {e}") from None
    return module


def _check_user_workload(w: Workload, path: Path) -> None:
    """Build the model and run one small batch through it, so a mismatch fails here with a clear message."""
    try:
        module = w.build()
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"{w.spec}: {w.name}() raised {type(e).__name__}: {e}") from None
    if not isinstance(module, nn.Module):
        raise ValueError(f"{w.spec}: {w.name}() returned {type(module).__name__}, not a torch.nn.Module")
    if not any(p.requires_grad for p in module.parameters()):
        raise ValueError(f"{w.spec}: the module from {w.name}() has no trainable parameters")
    try:
        batch = w.make_batch(2, w.seed)
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"{path}: example_batch(2) raised {type(e).__name__}: {e}") from None
    tensors = batch if isinstance(batch, tuple) else (batch,)
    if not tensors or not all(isinstance(t, torch.Tensor) for t in tensors):
        raise ValueError(
            f"{path}: example_batch must return a tensor or a tuple of tensors, got {type(batch).__name__}"
        )
    if any(t.dim() == 0 or t.shape[0] != 2 for t in tensors):
        shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
        raise ValueError(f"{path}: example_batch(2) must return tensors with 2 rows along dim 0, got shapes {shapes}")
    try:
        out = module(*tensors)
    except Exception as e:  # noqa: BLE001
        shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
        raise ValueError(
            f"{w.spec}: the batch from example_batch(2) (shapes {shapes}) does not fit the model: "
            f"{type(e).__name__}: {e}"
        ) from None
    try:
        loss = w.loss_fn(out)
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"{path}: loss_fn(output) raised {type(e).__name__}: {e}") from None
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
        raise ValueError(
            f"{path}: the loss must be a scalar tensor that depends on the parameters, got "
            f"{type(loss).__name__}{tuple(loss.shape) if isinstance(loss, torch.Tensor) else ''}"
        )


USER_CODE_TIMEOUT_ENV = "DDPSIM_USER_CODE_TIMEOUT_S"
USER_CODE_TIMEOUT_S = 300.0  # importing a user module and checking it on one batch, at most (a library's import
# of a large framework takes tens of seconds on a 2-core VM; a hang takes forever)


class _UserCodeTimeout(BaseException):  # not an Exception: the handlers of user code (theirs, ours) let it by
    pass


@contextlib.contextmanager
def _time_limit(what: str) -> Iterator[None]:
    """Raise a one-line ``ValueError`` where the block (the user's code) runs past ``USER_CODE_TIMEOUT_S``
    (``$DDPSIM_USER_CODE_TIMEOUT_S``): an alarm signal, so only in the main thread of a POSIX process; elsewhere
    (a rank's worker thread) the block runs unlimited, as the rank pool has its own time limits."""
    text = os.environ.get(USER_CODE_TIMEOUT_ENV, "").strip()
    try:
        limit = float(text) if text else USER_CODE_TIMEOUT_S
    except ValueError:
        limit = math.nan
    if not (math.isfinite(limit) and limit > 0):
        raise ValueError(f"{USER_CODE_TIMEOUT_ENV} must be a number of seconds > 0, got {text!r}")
    if not (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _UserCodeTimeout

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    except _UserCodeTimeout:
        raise ValueError(
            f"{what} did not finish in {limit:g} s (does it hang, or wait for input?); "
            f"{USER_CODE_TIMEOUT_ENV} sets the limit"
        ) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _load_user(spec: str) -> Workload:
    file_part, sep, fn_name = spec.rpartition(":")
    if not sep or not fn_name.isidentifier():
        raise ValueError(f"--model {spec!r}: a user module is given as path/to/file.py:build_fn")
    path = Path(file_part)
    if not path.is_file():
        raise ValueError(f"--model {spec!r}: no such file {path}")
    with _time_limit(f"importing {path}"):
        mod = _import_file(path)
    build_fn = getattr(mod, fn_name, None)
    if not callable(build_fn):
        raise ValueError(f"{path} defines no function {fn_name!r} (the build function named after ':')")
    example_batch = getattr(mod, "example_batch", None)
    if not callable(example_batch):
        raise ValueError(f"{path} lacks example_batch(batch_size), which must return the model's input")
    loss_fn = getattr(mod, "loss_fn", None) or mean_square_loss
    if not callable(loss_fn):
        raise ValueError(f"{path}: loss_fn must be a function of the model's output")
    w = Workload(
        name=fn_name,
        spec=spec,
        build_fn=build_fn,
        example_batch_fn=example_batch,
        loss_fn=loss_fn,
        tokens_per_sample=int(getattr(mod, "TOKENS_PER_SAMPLE", 1)),
        default_batch_size=int(getattr(mod, "BATCH_SIZE", 32)),
    )
    try:
        with _time_limit(f"{spec}: building the model and running one batch"):
            _check_user_workload(w, path)
    except SystemExit as e:  # sys.exit() in the user's build, batch or loss: not ddpsim's exit
        raise ValueError(
            f"{spec}: the user code called sys.exit({e.code!r}) while building the model or running one batch"
        ) from None
    return w


def load_workload(spec: str) -> Workload:
    """The workload named by ``spec`` (built-in name with options, or ``file.py:build_fn``)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"--model must name a workload: {describe_builtins()}; or path/to/file.py:build_fn")
    spec = spec.strip()
    head = spec.partition(":")[0]
    if head in _BUILTINS:
        return _load_builtin(spec)
    if ".py:" in spec or spec.endswith(".py") or "/" in spec:
        return _load_user(spec)
    raise ValueError(
        f"unknown workload {spec!r}; built-ins: {', '.join(BUILTIN_NAMES)} "
        f"(e.g. gpt:n_layer=4,n_embd=256), or a user module path/to/file.py:build_fn"
    )
