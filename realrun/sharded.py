"""ZeRO stage 1 in a few lines: a ``torch.optim.Optimizer`` that shards optimizer state over ranks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.distributed as dist

from simulator.strategies import shard_owners


class ShardedOptimizer(torch.optim.Optimizer):
    """ZeRO stage 1: each rank keeps optimizer state for, and steps, only its shard of the parameters.

    ``ShardedOptimizer(params, torch.optim.Adam, lr=1e-3)``. Every parameter
    group is split over the ranks by size: parameters taken largest first
    (ties in group order) go to the rank with the fewest bytes so far, counting
    all earlier groups (greedy balancing; ``simulator.strategies.shard_owners``). ``add_param_group`` shards a new
    group the same way. After the local optimizer's ``step``, each parameter is
    broadcast from the rank that owns it, one broadcast per parameter in group
    order (``simulator.strategies`` models exactly this). ``param_groups``
    holds every parameter (so ``zero_grad`` and learning-rate schedulers see
    them all); hyper-parameters set there reach the local optimizer at each
    ``step``. Gradients must already be averaged (wrap the model in a DDP
    variant); ``state_dict`` holds only this rank's shard.
    """

    def __init__(self, params: Iterable[Any], optimizer_cls: type, process_group: Any = None, **kwargs: Any):
        if not dist.is_initialized():
            raise RuntimeError("ShardedOptimizer needs an initialised process group (torch.distributed)")
        self.optimizer_cls = optimizer_cls
        self.process_group = process_group
        self.rank = dist.get_rank(process_group)
        self.world_size = dist.get_world_size(process_group)
        self._inner_kwargs = dict(kwargs)
        self.inner: torch.optim.Optimizer | None = None
        self._owner: dict[int, int] = {}  # id(param) -> group rank that owns it
        self._load_bytes = [0] * self.world_size
        self._inner_group: list[dict[str, Any] | None] = []  # outer group index -> inner group
        super().__init__(params, defaults=dict(kwargs))

    def owner_of(self, p: torch.Tensor) -> int:
        return self._owner[id(p)]

    @property
    def shard_bytes(self) -> list[int]:
        """Bytes of parameters owned by each rank."""
        return list(self._load_bytes)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        ps = group["params"]
        owners = shard_owners([p.numel() * p.element_size() for p in ps], self.world_size, self._load_bytes)
        for p, r in zip(ps, owners):
            self._owner[id(p)] = r
        local = [p for p in ps if self._owner[id(p)] == self.rank]
        inner_group = None
        if local:
            hyper = {k: v for k, v in group.items() if k not in ("params", "param_names")}
            if self.inner is None:
                self.inner = self.optimizer_cls([{"params": local, **hyper}], **self._inner_kwargs)
            else:
                self.inner.add_param_group({"params": local, **hyper})
            inner_group = self.inner.param_groups[-1]
        self._inner_group.append(inner_group)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if self.inner is not None:
            for outer, inner in zip(self.param_groups, self._inner_group):
                if inner is not None:
                    for k, v in outer.items():
                        if k not in ("params", "param_names"):
                            inner[k] = v
            loss = self.inner.step(closure)
        elif closure is not None:
            with torch.enable_grad():
                loss = closure()
        pg = self.process_group
        for group in self.param_groups:
            for p in group["params"]:
                src = self._owner[id(p)]
                if pg is not None:
                    src = dist.get_global_rank(pg, src)
                dist.broadcast(p.detach(), src=src, group=pg)
        return loss
