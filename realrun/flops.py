"""Forward FLOPs per parameter: which op's work ends in which parameter's gradient.

``param_forward_flops(module, batch)`` runs one forward under
``torch.utils.flop_counter.FlopCounterMode`` and splits the count at the
boundaries of the *parameter-holding* modules (modules with parameters of
their own, ``recurse=False``):

* FLOPs inside such a module go to its first own parameter (a linear layer's
  weight gets the matmul, its bias 0: one op yields both gradients);
* FLOPs of ops outside any of them (attention's ``q @ k^T``, a loss) go to the
  parameter-holding module that ran most recently before them: in backward
  their gradient ops run just before that module's, so they delay its
  gradient. Ops before the first such module go to the next one;
* a parameter used by several modules (a tied output head) takes the FLOPs
  of its first use only; a later use is parameter-less work as above (its
  backward delays the gradient produced just before it in forward, while the
  shared gradient is complete only after the first use's backward). This
  is the rule of ``simulator.zoo``.

Counts are what ``FlopCounterMode`` counts (matmuls, convolutions,
attention, including the CPU flash-attention kernel torch's table misses);
element-wise ops and embedding lookups count 0.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count


def _cpu_sdpa_flop(
    query_shape: Any, key_shape: Any, value_shape: Any, *args: Any, out_shape: Any = None, **kw: Any
) -> int:
    # torch 2.13's registry lacks the CPU flash kernel (aten._scaled_dot_product_flash_attention_for_cpu);
    # count it as the other SDPA kernels are counted (no discount for a causal mask).
    return sdpa_flop_count(query_shape, key_shape, value_shape)


_CUSTOM = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa_flop}


def param_forward_flops(module: nn.Module, batch: Any, loss_fn: Any = None) -> dict[str, int]:
    """Forward FLOPs of one call ``module(*batch)`` (plus ``loss_fn``), by parameter name.

    Names and order are those of ``module.named_parameters()``; every
    parameter has an entry (0 where no counted op produces its gradient).
    """
    names = {id(p): n for n, p in module.named_parameters()}
    out = {n: 0 for n in names.values()}
    holders = [m for m in module.modules() if any(True for _ in m.parameters(recurse=False))]
    owner_of = {id(m): names[id(next(m.parameters(recurse=False)))] for m in holders}
    counter = FlopCounterMode(display=False, custom_mapping=_CUSTOM)
    state: dict[str, Any] = {"mark": 0, "last": None, "pending": 0}
    stack: list[str | None] = []  # open holder modules; None: a later use of a shared parameter
    seen: set[int] = set()  # parameters whose first use in this forward has happened

    def take() -> int:
        now = counter.get_total_flops()
        d = now - state["mark"]
        state["mark"] = now
        return d

    def open_owner() -> str | None:
        return next((o for o in reversed(stack) if o is not None), None)

    def flush_gap(next_owner: str | None) -> None:
        d = take()
        inner = open_owner()
        if inner is not None:
            out[inner] += d
        elif state["last"] is not None:
            out[state["last"]] += d
        elif next_owner is not None:
            out[next_owner] += d
        else:
            state["pending"] += d

    def pre(m: nn.Module, _args: Any) -> None:
        first = next(m.parameters(recurse=False))
        if id(first) in seen:  # e.g. a tied output head: its gradient is ready only at the first use
            stack.append(None)
            return
        seen.update(id(p) for p in m.parameters(recurse=False))
        owner = owner_of[id(m)]
        flush_gap(owner)
        if state["pending"]:
            out[owner] += state["pending"]
            state["pending"] = 0
        stack.append(owner)

    def post(m: nn.Module, _args: Any, _out: Any) -> None:
        owner = stack.pop()
        if owner is None:
            return
        out[owner] += take()
        state["last"] = owner

    handles = []
    for m in holders:
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    try:
        args = batch if isinstance(batch, tuple) else (batch,)
        with torch.no_grad(), counter:
            res = module(*args)
            if loss_fn is not None:
                loss_fn(res)
        flush_gap(None)
        if state["pending"] and names:
            out[next(iter(out))] += state["pending"]
    finally:
        for h in handles:
            h.remove()
    return out
