"""The ranges a prediction's network preset and device spec state, through the front door.

``predict``, ``sweep`` and ``tune`` on a preset network (no ``--params``, no ``--o-us``/``--w-gbps``) and a
zoo model (its compute from FLOPs on a device) have no measured error to draw an interval from. Where the
preset or the device spec states a range for a value (``simulator.assumptions``), these say how far the
step and the best cap move over it. ``StatedInputs.build`` rebuilds the prediction's profile and cost
model with some values replaced, through the same resolver as the point prediction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.assumptions import Labelled, Spread, overrides_for, spread_over
from simulator.network import CostModel, NetworkSpec
from simulator.profile import GradProfile
from simulator.strategies import StrategySpec


@dataclass(frozen=True)
class FlopsSource:
    """Where a profile's compute came from FLOPs: the device, and the profile built on another device (the same
    model, batch, compute dtype and compute scale)."""

    device: Any  # simulator.zoo.DeviceSpec
    on: Callable[[Any], GradProfile]


@dataclass(frozen=True)
class StatedInputs:
    """The ranges a prediction's preset and device state (labelled ``network NAME``, ``device NAME``), and
    its profile and cost model rebuilt with some of those values replaced."""

    ranges: tuple[Labelled, ...]
    build: Callable[[Mapping[str, float]], tuple[GradProfile, CostModel]]

    def spread(self, strategy: StrategySpec, world_size: int, **predict_kw: Any) -> Spread | None:
        """The step over the stated ranges (``simulator.assumptions.spread_over``) of one configuration."""
        from simulator.predict import predict

        return spread_over(
            self.ranges, lambda values: predict(*self.build(values), strategy, world_size, **predict_kw).step_time_s
        )


def stated_inputs(
    profile: GradProfile,
    cost: CostModel,
    *,
    flops: FlopsSource | None,
    network: NetworkSpec | None,
    cost_kw: Mapping[str, Any] | None = None,
) -> StatedInputs | None:
    """The ``StatedInputs`` of a prediction whose ``profile`` came from FLOPs (``flops``, else None) and/or
    whose ``cost`` came from the preset ``network`` alone (else None; ``cost_kw``: the channel, pipelining and
    contention flags given on top of it); None where neither states a range."""
    from .resolve import resolve_cost

    ranges: list[Labelled] = []
    net_label = dev_label = ""
    if network is not None and network.ranges:
        net_label = f"network {network.name}"
        ranges += [(net_label, r) for r in network.ranges]
    if flops is not None and flops.device.ranges:
        dev_label = f"device {flops.device.name}"
        ranges += [(dev_label, r) for r in flops.device.ranges]
    if not ranges:
        return None

    def build(values: Mapping[str, float]) -> tuple[GradProfile, CostModel]:
        prof, c = profile, cost
        dev_values = overrides_for(values, dev_label) if dev_label else {}
        if dev_values and flops is not None:
            prof = flops.on(flops.device.with_values(dev_values))
        net_values = overrides_for(values, net_label) if net_label else {}
        if net_values and network is not None:
            c = resolve_cost(CostModel.from_network(network.with_values(net_values)), **dict(cost_kw or {}))
        return prof, c

    return StatedInputs(tuple(ranges), build)


def ends_note(
    inputs: StatedInputs, spread: Spread, best_at: Callable[[GradProfile, CostModel], float], what: str
) -> tuple[str, dict[str, Any]]:
    """A line and its JSON: ``best_at``'s answer (a best cap, in MiB) with every stated value at the end that
    shortens the step alone and at the end that lengthens it, and the value that moves the step most."""
    short = best_at(*inputs.build(spread.short_values))
    long = best_at(*inputs.build(spread.long_values))
    either = (
        f"{short:.4g} MiB either way"
        if short == long
        else f"{short:.4g} MiB at the short end, {long:.4g} MiB at the long"
    )
    top = spread.effects[0]
    line = (
        f"over the ranges the preset and device state (not measured), the step is "
        f"{spread.short_s * 1e3:.4g}-{spread.long_s * 1e3:.4g} ms and {what} is {either}; "
        f"{top.label} moves it most ({top.step_at_low_s * 1e3:.4g} / {top.step_at_high_s * 1e3:.4g} ms at its ends)"
    )
    return line, {"short_end_mb": short, "long_end_mb": long, "spread": spread.to_dict()}
