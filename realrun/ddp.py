"""Data-parallel wrappers written by hand, torch's own DDP, and a ZeRO-1 sharded optimizer.

Every wrapper has the same surface:

* ``.module``: the wrapped module; ``parameters()`` are the module's own, in order;
* at construction, parameters and buffers are broadcast from rank 0;
* ``forward`` passes through; call ``finish_gradient_synchronization()`` after
  ``backward()`` and before ``optimizer.step()``; ``on_train_batch_start()``
  (optional, a no-op here) before the forward; ``no_sync()`` skips
  communication for gradient-accumulation micro-steps;
* after ``finish_gradient_synchronization()`` every trainable parameter's
  ``.grad`` is the average over ranks. Frozen parameters are left alone.

The variants (what ``simulator.strategies`` models under the same names):

``NaiveDDP``
    after backward, one blocking all-reduce per trainable parameter in
    ``parameters()`` order, then each gradient divided by the world size.
``FlatDDP``
    after backward, gradients copied into one flat buffer per dtype, one
    all-reduce, divided, copied back.
``IndividualParameterDDP``
    an async all-reduce of each gradient from its post-accumulate-grad hook,
    overlapped with the rest of backward; waited for and divided in
    ``finish_gradient_synchronization()``.
``BucketedDDP(module, bucket_size_mb)``
    buckets from ``simulator.buckets.reverse_order_buckets`` (MiB, the
    ``>=`` closing rule, bucket 0 = last-registered parameters). Each hook
    writes ``grad / world_size`` into its slot of the bucket's flat buffer (one
    op, as torch's reducer does with ``mul_out``); a bucket's async all-reduce
    starts when its last gradient has arrived. ``finish_gradient_synchronization()``
    waits for each bucket in turn and copies it back into ``.grad`` (so the
    copy of bucket ``b`` overlaps the later buckets' all-reduces, as torch's
    ``finalize_backward`` does).
``TorchDDP``
    ``torch.nn.parallel.DistributedDataParallel`` with the two no-op methods.
``ShardedOptimizer`` (``realrun.sharded``, re-exported here)
    ZeRO-1; strategy ``sharded`` = torch DDP for gradients + this optimizer.

Collective order. Gloo and NCCL match collectives by call order, so every rank
must issue the same sequence. The hook-driven variants therefore launch in a
fixed index order (reverse registration order), as torch's reducer does
(``Reducer::mark_bucket_ready`` walks ``next_bucket_``): a bucket that is ready
early waits until every lower-index bucket has been launched. When gradients
become ready in reverse registration order (all built-in workloads) this is the
same as launching each one the moment it is ready.

Parameters that get no gradient in a step (unused on this rank) contribute
zeros, so ranks agree and nothing deadlocks. With
``find_unused_parameters=False`` (the default) every trainable parameter then
has a gradient after synchronisation, zeros where no rank used it; with
``True`` one more small all-reduce counts the ranks that used each parameter,
and a parameter that no rank used keeps ``.grad`` as it was (``None``), which
is torch's behaviour (``Reducer::copy_bucket_to_grad`` skips globally unused
parameters) and equals single-process training with any optimizer.

Hooks hold the wrapper through a weak reference: a parameter's hook list is
not visible to Python's cycle collector, so a strong reference would keep every
dropped wrapper (and its buckets) alive. A dropped wrapper's hooks do nothing.

A tied parameter (one tensor used by two modules) is one entry of
``parameters()`` and its hook fires once per backward, after autograd has
summed both uses.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from simulator.buckets import reverse_order_buckets
from simulator.strategies import BUCKETED, REGISTRY, StrategySpec

from .sharded import ShardedOptimizer


def broadcast_module_state(module: nn.Module, process_group: Any = None, src: int = 0) -> None:
    """Parameters and buffers from global rank ``src`` to every rank, one broadcast per dtype/device."""
    tensors = [t.detach() for t in module.parameters()] + [t.detach() for t in module.buffers()]
    groups: dict[tuple[torch.dtype, torch.device], list[torch.Tensor]] = {}
    for t in tensors:
        groups.setdefault((t.dtype, t.device), []).append(t)
    with torch.no_grad():
        for ts in groups.values():
            flat = torch.cat([t.reshape(-1) for t in ts])
            dist.broadcast(flat, src=src, group=process_group)
            off = 0
            for t in ts:
                n = t.numel()
                t.copy_(flat[off : off + n].view_as(t))
                off += n


def _async_allreduce(process_group: Any) -> tuple[Callable[..., Any], Any]:
    """``(ProcessGroup.allreduce, options)``: an async SUM all-reduce, called without ``dist.all_reduce``'s wrapper.

    The wrapper's Python checks cost tens of microseconds per call when idle
    and up to a millisecond on a 2-core machine busy with backward and gloo
    threads; launching from a gradient hook, that is on the critical path.
    """
    pg = process_group if process_group is not None else dist.group.WORLD
    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.SUM
    return pg.allreduce, opts


class _GradSync(nn.Module):
    """What all hand-written wrappers share: the module, the group, the broadcast, ``no_sync``."""

    def __init__(self, module: nn.Module, process_group: Any = None, find_unused_parameters: bool = False):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("a DDP wrapper needs an initialised process group (torch.distributed)")
        self.module = module
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.find_unused_parameters = bool(find_unused_parameters)
        self._trainable = [p for p in module.parameters() if p.requires_grad]
        self._sync_enabled = True
        self._tl: Any = None  # a realrun.timeline.TimelineRecorder while recording, else None
        broadcast_module_state(module, process_group)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def on_train_batch_start(self) -> None:
        """Nothing to do before a batch in these variants (kept for a common training loop)."""

    def finish_gradient_synchronization(self) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside accumulate locally; the next synced backward reduces the sum."""
        old = self._sync_enabled
        self._sync_enabled = False
        try:
            yield
        finally:
            self._sync_enabled = old

    # ---- unused-parameter bookkeeping ---------------------------------------------
    def _launch_used_count(self, used: Sequence[bool]) -> tuple[Any, torch.Tensor] | None:
        """With ``find_unused_parameters``: all-reduce how many ranks used each trainable parameter."""
        if not self.find_unused_parameters:
            return None
        t = torch.tensor([1 if u else 0 for u in used], dtype=torch.int32, device=self._device())
        return dist.all_reduce(t, group=self.process_group, async_op=True), t

    def _device(self) -> torch.device:
        return self._trainable[0].device if self._trainable else torch.device("cpu")


class NaiveDDP(_GradSync):
    """One blocking all-reduce per trainable parameter, after backward, in ``parameters()`` order."""

    def finish_gradient_synchronization(self) -> None:
        if not self._sync_enabled:
            return
        used = [p.grad is not None for p in self._trainable]
        counted = self._launch_used_count(used)
        if counted is not None:
            counted[0].wait()
        grads = []
        tl = self._tl
        if tl is not None:
            tl.ready_all(len(self._trainable))
        with torch.no_grad():
            for k, p in enumerate(self._trainable):
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                t0 = tl and time.perf_counter()
                dist.all_reduce(p.grad, group=self.process_group)
                if tl is not None:
                    tl.blocking(k, p.grad.numel() * p.grad.element_size(), 1, t0, time.perf_counter())
                grads.append(p.grad)
            torch._foreach_div_(grads, float(self.world_size))
            if counted is not None:
                for k, p in enumerate(self._trainable):
                    if not used[k] and int(counted[1][k]) == 0:
                        p.grad = None


class FlatDDP(_GradSync):
    """Gradients flattened into one buffer per dtype, one all-reduce each, divided and copied back."""

    def __init__(self, module: nn.Module, process_group: Any = None, find_unused_parameters: bool = False):
        super().__init__(module, process_group, find_unused_parameters)
        groups: dict[tuple[torch.dtype, torch.device], list[nn.Parameter]] = {}
        for p in self._trainable:
            groups.setdefault((p.dtype, p.device), []).append(p)
        self._flat: list[tuple[torch.Tensor, list[nn.Parameter], list[torch.Tensor]]] = []
        for (dtype, device), ps in groups.items():
            buf = torch.zeros(sum(p.numel() for p in ps), dtype=dtype, device=device)
            views, off = [], 0
            for p in ps:
                views.append(buf[off : off + p.numel()].view_as(p))
                off += p.numel()
            self._flat.append((buf, ps, views))

    def finish_gradient_synchronization(self) -> None:
        if not self._sync_enabled:
            return
        used = [p.grad is not None for p in self._trainable]
        counted = self._launch_used_count(used)
        tl = self._tl
        if tl is not None:
            tl.ready_all(len(self._flat))
        with torch.no_grad():
            for c, (buf, ps, views) in enumerate(self._flat):
                have = [(v, p.grad) for p, v in zip(ps, views) if p.grad is not None]
                if len(have) < len(ps):
                    for p, v in zip(ps, views):
                        if p.grad is None:
                            v.zero_()
                if have:
                    torch._foreach_copy_([v for v, _ in have], [g for _, g in have])
                t0 = tl and time.perf_counter()
                dist.all_reduce(buf, group=self.process_group)
                if tl is not None:
                    tl.blocking(c, buf.numel() * buf.element_size(), len(ps), t0, time.perf_counter())
                buf.div_(self.world_size)
            _copy_back(self._flat_pairs(), used, counted, self._trainable)

    def _flat_pairs(self) -> list[tuple[nn.Parameter, torch.Tensor]]:
        return [(p, v) for _, ps, views in self._flat for p, v in zip(ps, views)]


def _copy_back(
    pairs: Sequence[tuple[nn.Parameter, torch.Tensor]],
    used: Sequence[bool],
    counted: tuple[Any, torch.Tensor] | None,
    trainable: Sequence[nn.Parameter],
) -> None:
    """Reduced values from ``pairs`` (param, view) into ``.grad``; globally unused ones stay ``None``."""
    if counted is not None:
        counted[0].wait()
        index = {id(p): k for k, p in enumerate(trainable)}
        n_used = counted[1].tolist()
    dst, src = [], []
    for p, v in pairs:
        if p.grad is not None:
            dst.append(p.grad)
            src.append(v)
        elif counted is None or n_used[index[id(p)]] > 0:
            p.grad = v.clone()
    if dst:
        torch._foreach_copy_(dst, src)


class IndividualParameterDDP(_GradSync):
    """An async all-reduce per gradient, launched from its post-accumulate-grad hook (in index order)."""

    def __init__(self, module: nn.Module, process_group: Any = None, find_unused_parameters: bool = False):
        super().__init__(module, process_group, find_unused_parameters)
        self._order = self._trainable[::-1]  # launch order: reverse registration
        n = len(self._order)
        self._ready = [False] * n
        self._next = 0
        self._works: list[tuple[Any, torch.Tensor, torch.Tensor]] = []
        self._allreduce, self._opts = _async_allreduce(process_group)
        self._handles = [p.register_post_accumulate_grad_hook(self._make_hook(k)) for k, p in enumerate(self._order)]

    def _make_hook(self, k: int) -> Callable[[torch.Tensor], None]:
        ref = weakref.ref(self)  # no cycle parameter -> hook -> wrapper -> module -> parameter

        def hook(_p: torch.Tensor) -> None:
            s = ref()
            if s is None or not s._sync_enabled:
                return
            if s._ready[k]:
                raise RuntimeError(
                    "a gradient arrived twice before finish_gradient_synchronization(); "
                    "accumulate micro-batches inside no_sync()"
                )
            s._ready[k] = True
            if s._tl is not None:
                s._tl.ready(k)
            if k == s._next:
                s._launch_ready()

        return hook

    def _launch_ready(self) -> None:
        order, ready, allreduce, opts = self._order, self._ready, self._allreduce, self._opts
        while self._next < len(order) and ready[self._next]:
            p = order[self._next]
            g = p.grad
            if g is None:  # not used on this rank: contribute zeros
                g = p.grad = torch.zeros_like(p)
            buf = g if g.is_contiguous() else g.contiguous()
            work = allreduce([buf], opts)
            self._works.append((work, buf, g))
            if self._tl is not None:
                self._tl.launch(self._next, buf.numel() * buf.element_size(), 1, work)
            self._next += 1

    def finish_gradient_synchronization(self) -> None:
        if not self._sync_enabled:
            return
        n = len(self._order)
        used = self._ready[::-1]  # by trainable index; False: no gradient arrived on this rank
        with torch.no_grad():
            if self._next < n:
                for k in range(self._next, n):
                    if not self._ready[k] and self._order[k].grad is not None:
                        used[n - 1 - k] = True  # accumulated under no_sync, no hook this time
                self._ready = [True] * n
                self._launch_ready()
            counted = self._launch_used_count(used)
            grads = []
            for work, buf, g in self._works:
                work.wait()
                if buf is not g:
                    g.copy_(buf)
                grads.append(g)
            torch._foreach_div_(grads, float(self.world_size))
            if counted is not None:
                counted[0].wait()
                for j, c in enumerate(counted[1].tolist()):
                    if c == 0:
                        self._trainable[j].grad = None
        self._ready = [False] * n
        self._next = 0
        self._works = []

    def remove_hooks(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []


class BucketedDDP(_GradSync):
    """Gradients gathered into buckets of ``bucket_size_mb`` MiB; one async all-reduce per bucket.

    ``buckets``: the assignment, tuples of indices into ``list(module.parameters())``,
    exactly ``simulator.buckets.reverse_order_buckets`` over the parameters' byte
    sizes with keys (dtype, device) and frozen parameters left out.
    """

    def __init__(
        self,
        module: nn.Module,
        bucket_size_mb: float,
        process_group: Any = None,
        find_unused_parameters: bool = False,
    ):
        if not isinstance(bucket_size_mb, (int, float)) or not bucket_size_mb > 0:
            raise ValueError(f"bucket size must be a number > 0 MiB, got {bucket_size_mb!r}")
        super().__init__(module, process_group, find_unused_parameters)
        self.bucket_size_mb = float(bucket_size_mb)
        params = list(module.parameters())
        self.buckets = reverse_order_buckets(
            [p.numel() * p.element_size() for p in params],
            self.bucket_size_mb,
            [(str(p.dtype), str(p.device)) for p in params],
            [p.requires_grad for p in params],
        )
        self._scale = 1.0 / self.world_size
        # not ``_buffers``: that is nn.Module's own registry of buffers, which every attribute assignment
        # searches by name (a list of tensors there made each ``self._next += 1`` compare the name with every
        # bucket tensor, ~11 us a tensor: micro-DLRM at 0.25 MiB measured 20-53 % slower than torch DDP's same
        # nine buckets in matrix runs m30-m40; and it broke ``state_dict()`` and ``.to()``)
        self._bucket_bufs: list[torch.Tensor] = []
        self._members: list[list[nn.Parameter]] = []
        self._views: list[list[torch.Tensor]] = []
        self._handles = []
        index_of = {id(p): j for j, p in enumerate(self._trainable)}
        self._slot: list[tuple[int, int]] = [(0, 0)] * len(self._trainable)  # trainable index -> (bucket, position)
        for b, members in enumerate(self.buckets):
            ps = [params[i] for i in members]
            buf = torch.zeros(sum(p.numel() for p in ps), dtype=ps[0].dtype, device=ps[0].device)
            views, off = [], 0
            for pos, p in enumerate(ps):
                view = buf[off : off + p.numel()].view_as(p)
                views.append(view)
                off += p.numel()
                self._slot[index_of[id(p)]] = (b, pos)
                self._handles.append(p.register_post_accumulate_grad_hook(self._make_hook(b, pos, view)))
            self._bucket_bufs.append(buf)
            self._members.append(ps)
            self._views.append(views)
        self._sizes = [len(ps) for ps in self._members]
        self._allreduce, self._opts = _async_allreduce(process_group)
        self._reset()

    def _reset(self) -> None:
        self._pending = list(self._sizes)
        self._arrived = [[False] * n for n in self._sizes]
        self._next = 0
        self._works: list[Any] = []

    def _make_hook(self, b: int, pos: int, view: torch.Tensor) -> Callable[[torch.Tensor], None]:
        ref = weakref.ref(self)  # no cycle parameter -> hook -> wrapper -> module -> parameter
        mul = torch.mul

        def hook(p: torch.Tensor) -> None:
            s = ref()
            if s is None or not s._sync_enabled:
                return
            flags = s._arrived[b]
            if flags[pos]:
                raise RuntimeError(
                    "a gradient arrived twice before finish_gradient_synchronization(); "
                    "accumulate micro-batches inside no_sync()"
                )
            flags[pos] = True
            if s._tl is not None and s._pending[b] == 1:
                s._tl.ready(b)  # this is the bucket's last gradient
            mul(p.grad, s._scale, out=view)
            pending = s._pending
            pending[b] -= 1
            if pending[b] == 0 and b == s._next:
                s._launch_ready()

        return hook

    def _launch_ready(self) -> None:
        pending, bufs, allreduce, opts = self._pending, self._bucket_bufs, self._allreduce, self._opts
        while self._next < len(bufs) and pending[self._next] == 0:
            work = allreduce([bufs[self._next]], opts)
            self._works.append(work)
            if self._tl is not None:
                buf = bufs[self._next]
                self._tl.launch(self._next, buf.numel() * buf.element_size(), self._sizes[self._next], work)
            self._next += 1

    def finish_gradient_synchronization(self) -> None:
        if not self._sync_enabled:
            return
        used = None
        with torch.no_grad():
            if self._next < len(self._bucket_bufs):  # gradients that never arrived contribute zeros
                for b in range(self._next, len(self._bucket_bufs)):
                    if self._pending[b]:
                        for pos, p in enumerate(self._members[b]):
                            if not self._arrived[b][pos]:
                                if p.grad is not None:  # accumulated under no_sync, no hook this time
                                    torch.mul(p.grad, self._scale, out=self._views[b][pos])
                                    self._arrived[b][pos] = True
                                else:
                                    self._views[b][pos].zero_()
                        self._pending[b] = 0
                self._launch_ready()
            if self.find_unused_parameters:
                used = [self._arrived[b][pos] for b, pos in self._slot]
            counted = self._launch_used_count(used) if used is not None else None
            # bucket by bucket, as torch's finalize_backward: copying bucket b back overlaps the
            # all-reduces of the later buckets still in flight
            deferred = []
            copy = torch._foreach_copy_
            for work, ps, vs in zip(self._works, self._members, self._views):
                work.wait()
                dst, src = [], []
                for p, v in zip(ps, vs):
                    g = p.grad
                    if g is None:
                        deferred.append((p, v))
                    else:
                        dst.append(g)
                        src.append(v)
                if dst:
                    copy(dst, src)
            if deferred or counted is not None:
                _copy_back(deferred, used or [], counted, self._trainable)
        self._reset()

    def remove_hooks(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []


class TorchDDP(DistributedDataParallel):
    """``torch.nn.parallel.DistributedDataParallel`` with the wrappers' two extra methods (no-ops)."""

    def finish_gradient_synchronization(self) -> None:
        """torch's reducer finishes inside ``backward()`` (``finalize_backward``); nothing left to do."""

    def on_train_batch_start(self) -> None:
        pass


# ---- factory ----------------------------------------------------------------------

OPTIMIZERS: dict[str, tuple[type, dict[str, Any]]] = {
    "sgd": (torch.optim.SGD, {"lr": 1e-3}),
    "adam": (torch.optim.Adam, {"lr": 1e-4}),
}


def make_ddp(
    strategy: str | StrategySpec,
    module: nn.Module,
    bucket_mb: float | None = None,
    bucket_cap_mb_list: Sequence[float] | None = None,
    find_unused_parameters: bool = False,
    process_group: Any = None,
) -> nn.Module:
    """The wrapper for ``strategy`` (a name of the simulator's registry, ``simulator.strategies``, with
    the knobs below; or a ``StrategySpec``, whose knobs are used) around ``module``.

    ``bucket_mb`` (MiB) applies to ``bucketed`` (required), ``torch-ddp`` and
    ``sharded`` (torch DDP's ``bucket_cap_mb``; left ``None``, torch uses 25 MiB
    with a 1 MiB first bucket). ``bucket_cap_mb_list`` (torch-ddp and sharded
    only) is torch 2.13's per-bucket caps. ``sharded`` wraps with torch DDP as
    well; pair it with ``make_optimizer("sharded", ...)``.
    """
    if isinstance(strategy, StrategySpec):
        spec = strategy
    else:
        entry = REGISTRY.get(strategy)
        if bucket_mb is not None and entry is not None and not entry.bucketed:
            raise ValueError(f"strategy {strategy!r} has no buckets; a bucket size applies to {', '.join(BUCKETED)}")
        # the simulator's spec validates the name, the sizes and which strategies take a cap list
        spec = StrategySpec(
            strategy,
            bucket_mb=bucket_mb,
            bucket_cap_mb_list=tuple(bucket_cap_mb_list) if bucket_cap_mb_list is not None else None,
            find_unused_parameters=find_unused_parameters,
        )
    return _WRAPPERS[spec.name](module, spec, process_group)


def _torch_ddp(module: nn.Module, spec: StrategySpec, process_group: Any) -> nn.Module:
    device = next(module.parameters()).device
    extra: dict[str, Any] = {}
    if device.type == "cuda":
        extra["device_ids"] = [device.index]
    if spec.bucket_cap_mb_list is not None:
        extra["bucket_cap_mb_list"] = list(spec.bucket_cap_mb_list)
    return TorchDDP(
        module,
        bucket_cap_mb=spec.bucket_mb,
        process_group=process_group,
        find_unused_parameters=spec.find_unused_parameters,
        **extra,
    )


def _hooks(cls: Any) -> Callable[[nn.Module, StrategySpec, Any], nn.Module]:
    def build(module: nn.Module, spec: StrategySpec, process_group: Any) -> nn.Module:
        return cls(module, process_group=process_group, find_unused_parameters=spec.find_unused_parameters)

    return build


def _bucketed_ddp(module: nn.Module, spec: StrategySpec, process_group: Any) -> nn.Module:
    assert spec.bucket_mb is not None  # StrategySpec: bucketed needs a size
    return BucketedDDP(
        module, spec.bucket_mb, process_group=process_group, find_unused_parameters=spec.find_unused_parameters
    )


# The real implementation of each strategy of the simulator's registry (``simulator.strategies.REGISTRY``);
# ``sharded`` is torch DDP here, its optimizer is ``make_optimizer("sharded", ...)``.
_WRAPPERS: dict[str, Callable[[nn.Module, StrategySpec, Any], nn.Module]] = {
    "naive": _hooks(NaiveDDP),
    "flat": _hooks(FlatDDP),
    "individual": _hooks(IndividualParameterDDP),
    "bucketed": _bucketed_ddp,
    "torch-ddp": _torch_ddp,
    "sharded": _torch_ddp,
}


def make_optimizer(strategy: str, model: nn.Module, name: str = "sgd", **overrides: Any) -> torch.optim.Optimizer:
    """SGD or Adam over ``model``'s trainable parameters; a ``ShardedOptimizer`` for ``sharded``."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; allowed: {', '.join(OPTIMIZERS)}")
    cls, kw = OPTIMIZERS[name]
    kw = {**kw, **overrides}
    params = [p for p in model.parameters() if p.requires_grad]
    if strategy == "sharded":
        return ShardedOptimizer(params, cls, **kw)
    return cls(params, **kw)
