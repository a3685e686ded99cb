"""One network resolver for the CLI and the Python API.

A prediction's communication cost comes from, in this order of precedence:

1. ``o_us`` / ``w_gbps`` given for this world size (either one alone replaces
   that term of the base model at this world size and keeps the other);
2. on top of a base: fitted parameters (``ddpsim calibrate``'s params file),
   else a ``CostModel``, else a network preset by name, else
   ``DEFAULT_NETWORK``.

``channels``, ``pipelined`` and ``contention`` override the base's when given (a pipelined channel
is one channel: ``pipelined=True`` makes it one, and refuses ``channels`` above 1).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import replace
from typing import Any

from simulator.network import CostModel, load_network

# The documented default for a prediction without a network: a GPU cluster of H100 nodes on
# InfiniBand through NCCL (simulator/data/networks/nccl-h100-ib.json), the setting most people
# who size buckets train on.
DEFAULT_NETWORK = "nccl-h100-ib"


def _real(v: Any) -> bool:
    """A finite real number (numpy's too; not a bool)."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def resolve_cost(
    network: str | CostModel | None = None,
    *,
    world_size: int | None = None,
    params: Any = None,
    o_us: float | None = None,
    w_gbps: float | None = None,
    channels: int | None = None,
    pipelined: bool | None = None,
    contention: float | None = None,
) -> CostModel:
    """The ``CostModel`` (``params``: a ``calibration.params.Params``; ``world_size``: where o and w were given)."""
    if params is not None and network is not None:
        raise ValueError("give fitted params or a network, not both")
    if isinstance(network, CostModel):
        cost = network
    elif params is not None:
        cost = params.cost_model(world_size=world_size)
    else:
        cost = CostModel.from_network(load_network(network or DEFAULT_NETWORK))
    if o_us is not None and not (_real(o_us) and o_us >= 0):
        raise ValueError(f"o_us must be a finite number >= 0, got {o_us!r}")
    if w_gbps is not None and not (_real(w_gbps) and w_gbps > 0):
        raise ValueError(f"w_gbps must be a finite number > 0, got {w_gbps!r}")
    if o_us is not None or w_gbps is not None:
        if world_size is None:
            raise ValueError("o_us/w_gbps are values at one world size: give world_size too")
        o_s, w = cost.linear_at(world_size)
        cost = replace(
            cost,
            o_s=o_us * 1e-6 if o_us is not None else o_s,
            w_bytes_per_s=w_gbps * 1e9 if w_gbps is not None else w,
            ref_world_size=world_size,  # given for this world size: no extrapolation (``CostModel``: at one rank, held)
            network=None,
            measured_world_sizes=(),  # given, not measured
        )
    overrides: dict[str, Any] = {}
    if pipelined and channels is not None and channels != 1:
        raise ValueError(f"a pipelined channel is one channel: not {channels} channels")
    if channels is not None:
        overrides["channels"] = channels
        if channels != 1:
            overrides["pipelined"] = False  # a pipelined channel is one channel: more are the plain kind
    if pipelined is not None:
        overrides["pipelined"] = pipelined
        if pipelined:
            overrides["channels"] = 1
    if contention is not None:
        overrides["contention"] = contention
    return replace(cost, **overrides) if overrides else cost
