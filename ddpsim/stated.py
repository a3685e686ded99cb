"""The ranges a prediction's network preset and device spec state, through the front door.

A prediction whose network is a preset (no ``--params``, no ``--o-us``/``--w``) and/or whose compute comes from
a model's FLOPs on a device spec has no measured error to draw an interval from. Where the preset or the
device spec states a range for a value (``simulator.assumptions``), ``predict``, ``sweep``, ``tune`` and
``ddpsim.recommend`` say how far the step, and the best cap, move over it. ``StatedInputs.build`` rebuilds
the prediction's profile and cost model with some values replaced, through the same resolver as the point
prediction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from simulator.assumptions import Labelled, Spread, overrides_for, spread_over
from simulator.network import CostModel, NetworkSpec, load_network
from simulator.profile import GradProfile
from simulator.strategies import StrategySpec

# The spread predicts each setting 2n + 3 times for n ranges; with --jitter each of those runs every seed. The
# spread's own predictions take at most this many seeds (a span over assumptions needs no finer mean).
SPREAD_MAX_REPEATS = 9


@dataclass(frozen=True)
class FlopsSource:
    """Where a profile's compute came from FLOPs: the device, and the profile built on another device (the same
    model, batch, compute dtype and compute scale)."""

    device: Any  # simulator.zoo.DeviceSpec
    on: Callable[[Any], GradProfile]


@dataclass(frozen=True)
class StatedInputs:
    """The ranges a prediction's preset and device state (labelled ``network NAME``, ``device NAME``), and
    its profile and cost model rebuilt with some of those values replaced (``build``, each rebuild kept)."""

    ranges: tuple[Labelled, ...]
    make: Callable[[Mapping[str, float]], tuple[GradProfile, CostModel]]
    _built: dict[tuple[tuple[str, float], ...], tuple[GradProfile, CostModel]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def build(self, values: Mapping[str, float]) -> tuple[GradProfile, CostModel]:
        key = tuple(sorted(values.items()))
        if key not in self._built:
            self._built[key] = self.make(values)
        return self._built[key]

    def spread(self, strategy: StrategySpec, world_size: int, **predict_kw: Any) -> Spread | None:
        """The step over the stated ranges (``simulator.assumptions.spread_over``) of one configuration."""
        from simulator.predict import predict

        kw = dict(predict_kw)
        kw["repeats"] = min(int(kw.get("repeats", 1)), SPREAD_MAX_REPEATS)
        return spread_over(
            self.ranges, lambda values: predict(*self.build(values), strategy, world_size, **kw).step_time_s
        )

    def ends(
        self,
        strategy: StrategySpec,
        world_size: int,
        best_at: Callable[[GradProfile, CostModel], float],
        what: str,
        **predict_kw: Any,
    ) -> tuple[str, dict[str, Any]] | None:
        """A line and its JSON: the spread of ``strategy`` (the point's best setting), and ``best_at``'s answer
        (a best cap, in MiB) with every stated value at the end that shortens the step alone and at the end that
        lengthens it, and the value that moves the step most."""
        spread = self.spread(strategy, world_size, **predict_kw)
        if spread is None:
            return None
        short = best_at(*self.build(spread.short_values))
        long = best_at(*self.build(spread.long_values))
        either = (
            f"{short:.4g} MiB either way"
            if short == long
            else f"{short:.4g} MiB at the short end, {long:.4g} MiB at the long"
        )
        top = spread.effects[0]
        verb = "states" if " and " not in spread.who else "state"
        at = f" at {strategy.bucket_mb:.4g} MiB" if strategy.bucket_mb is not None else ""
        line = (
            f"over the ranges {spread.who} {verb} (not measured), the step{at} is "
            f"{spread.short_s * 1e3:.4g}-{spread.long_s * 1e3:.4g} ms and {what} is {either}; "
            f"{top.label} moves it most ({top.step_at_low_s * 1e3:.4g} / {top.step_at_high_s * 1e3:.4g} ms at its ends)"
        )
        return line, {"spread": spread.to_dict(), "short_end_mb": short, "long_end_mb": long}


def model_profile(
    model: str | GradProfile,
    *,
    batch_size: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    compute_scale: float = 1.0,
    flags: Mapping[str, str] | None = None,
) -> tuple[GradProfile, FlopsSource | None]:
    """The profile of ``model`` for a prediction, and where its compute came from FLOPs, its source:

    * a ``GradProfile``, or a profile JSON (``ddpsim profile``): its own times (``batch_size``, ``device`` and
      ``dtype`` are refused: it has its own);
    * a model description JSON (``ddpsim.model/1``) or a built-in model name: its FLOPs on ``device`` (default
      the model's own) at the peak of ``dtype`` (``fp32``, ``tf32``, ``bf16``; default the device spec's own)
      times the device's MFU, at ``batch_size`` per rank (default the model's).

    ``compute_scale`` multiplies every compute time; ``flags`` names the arguments in messages (the command
    line's ``--batch-size``)."""
    from pathlib import Path

    from simulator import zoo
    from simulator.jsonio import read_json

    names = {"batch_size": "batch_size", "device": "device", "dtype": "dtype", **(flags or {})}
    read = spec = None
    if isinstance(model, str):
        a_file = model.endswith(".json") or Path(model).is_file()
        read = read_json(model, "profile") if a_file else None
        spec = zoo.model_spec_in(read, model) if a_file else zoo.load_model_spec(model)
    if spec is None:  # a measured profile: its own times
        for key, own in (("batch_size", "batch size"), ("device", "compute times"), ("dtype", "compute times")):
            if {"batch_size": batch_size, "device": device, "dtype": dtype}[key] is not None:
                raise ValueError(
                    f"{names[key]} applies to a model (a built-in name or a model description); a profile has its "
                    f"own {own}, measured or already made from FLOPs"
                )
        prof = model if isinstance(model, GradProfile) else GradProfile.from_file_dict(read, str(model))
        return (prof.scaled(compute_scale) if compute_scale != 1.0 else prof), None
    if dtype is not None and dtype not in zoo.FLOPS_DTYPES:
        raise ValueError(f"{names['dtype']} must be one of {', '.join(zoo.FLOPS_DTYPES)}, got {dtype!r}")
    compute_dtype = zoo.FLOPS_DTYPES[dtype] if dtype else None

    def built(dev: Any) -> GradProfile:
        made = zoo.profile_from_flops(spec, dev, batch_size=batch_size, dtype=compute_dtype)
        return made.scaled(compute_scale) if compute_scale != 1.0 else made

    dev = zoo.load_device(device or spec.default_device)
    base = built(dev)

    def on(other: Any) -> GradProfile:
        """The profile on ``other``; where it differs from the point's device (``dev``) in its MFU and memory bandwidth
        alone, the point's profile rescaled (compute ~ 1 / (peak x MFU), the optimizer ~ 1 / bandwidth), not
        built again from every tensor's FLOPs."""
        if replace(other, mfu=dev.mfu, mem_bw_bytes_per_s=dev.mem_bw_bytes_per_s) != dev:
            return built(other)
        env = {**base.env, "mfu": other.mfu, "mem_bw_bytes_per_s": other.mem_bw_bytes_per_s}
        compute = dev.mfu / other.mfu
        return base.scaled(compute, dev.mem_bw_bytes_per_s / other.mem_bw_bytes_per_s, env=env)

    return base, FlopsSource(dev, on)


def preset_network(
    network: str | CostModel | NetworkSpec | None, *, fitted: bool, o_w_given: bool
) -> NetworkSpec | None:
    """The preset a prediction's network figures come from unchanged (its stated ranges then apply): a preset
    name or file (None: ``ddpsim.resolve.DEFAULT_NETWORK``), not where fitted params, a ``CostModel`` or o/w
    given for this world size take their place."""
    from .resolve import DEFAULT_NETWORK

    if fitted or o_w_given or isinstance(network, CostModel):
        return None
    return network if isinstance(network, NetworkSpec) else load_network(network or DEFAULT_NETWORK)


def stated_inputs(
    profile: GradProfile,
    cost: CostModel,
    *,
    flops: FlopsSource | None,
    network: NetworkSpec | None,
    cost_kw: Mapping[str, Any] | None = None,
) -> StatedInputs | None:
    """The ``StatedInputs`` of a prediction whose ``profile`` came from FLOPs (``flops``, else None) and/or
    whose ``cost`` came from the preset ``network`` alone (``preset_network``, else None; ``cost_kw``: the
    channel, pipelining and contention flags given on top of it); None where neither states a range."""
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

    def make(values: Mapping[str, float]) -> tuple[GradProfile, CostModel]:
        prof, c = profile, cost
        dev_values = overrides_for(values, dev_label) if dev_label else {}
        if dev_values and flops is not None:
            prof = flops.on(flops.device.with_values(dev_values))
        net_values = overrides_for(values, net_label) if net_label else {}
        if net_values and network is not None:
            c = resolve_cost(CostModel.from_network(network.with_values(net_values)), **dict(cost_kw or {}))
        return prof, c

    return StatedInputs(tuple(ranges), make)
