"""ddpsim's Python API.

    import ddpsim
    res = ddpsim.predict("gpt2-small", world_size=8, network="nccl-h100-ib", bucket_mb=25)
    print(res.step_time_s, res.overhead_s)

    rec = ddpsim.tune(model, example_inputs, world_size=2)   # needs torch; measures this machine
    ddp = DistributedDataParallel(model, bucket_cap_mb=rec.bucket_cap_mb)   # None where the default is kept

    rec = ddpsim.recommend("gpt2-xl", world_size=64, network="nccl-h100-ib")  # a zoo model: predicted only

``predict`` and ``recommend`` are pure (no torch); ``tune`` profiles the module with torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.network import CostModel
    from simulator.predict import StepResult
    from simulator.profile import GradProfile
    from simulator.strategies import StrategySpec

__all__ = ["predict", "recommend", "tune", "GradProfile", "CostModel", "StrategySpec", "StepResult"]

# Imported on first use, not with the package: the ``ddpsim`` console script imports this package
# before ``ddpsim.cli.main`` runs, and a Ctrl-C during a heavy import there could not be caught.
_LAZY = {
    "CostModel": "simulator.network",
    "StepResult": "simulator.predict",
    "GradProfile": "simulator.profile",
    "StrategySpec": "simulator.strategies",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ddpsim' has no attribute {name!r}")


def _check_keywords(what: str, given: dict[str, Any], *takers: Any) -> None:
    """``TypeError`` naming ``what`` (the public function) for a keyword none of ``takers`` takes by keyword, before
    any work; not an internal function's name from deep in the call."""
    import inspect

    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    takes = {
        name
        for f in takers
        for name, prm in inspect.signature(f).parameters.items()
        if prm.kind in kinds and name not in ("profile", "cost", "strategy", "world_size", "stated")
    }
    unknown = sorted(set(given) - takes)
    if unknown:
        raise TypeError(
            f"{what}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"besides its own it takes {', '.join(sorted(takes))}"
        )


def _profile(model: str | GradProfile, batch_size: int | None, device: str | None, dtype: str | None) -> GradProfile:
    from .stated import model_profile

    return model_profile(model, batch_size=batch_size, device=device, dtype=dtype)[0]


def predict(
    model: str | GradProfile,
    *,
    world_size: int,
    network: str | CostModel | None = None,
    o_us: float | None = None,
    w_gbps: float | None = None,
    strategy: str | StrategySpec = "torch-ddp",
    bucket_mb: float | None = None,
    bucket_cap_mb_list: list[float] | None = None,
    batch_size: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    **predict_kw: Any,
) -> StepResult:
    """Predict one step for a built-in model name, a profile JSON path or a ``GradProfile``.

    The network is a preset name or a ``CostModel`` (default ``ddpsim.resolve.DEFAULT_NETWORK``,
    ``nccl-h100-ib``); ``o_us`` and/or ``w_gbps`` (the all-reduce's per-call overhead in microseconds
    and algorithm bandwidth in GB/s at this world size) replace those terms of it. For a model (not a measured
    profile): ``batch_size`` per rank, ``device`` (a spec name or file; default the model's own) and ``dtype``
    (``fp32``, ``tf32``, ``bf16``: the compute dtype whose peak the device's MFU applies to; default the spec's).
    """
    from simulator.predict import predict as _predict
    from simulator.strategies import StrategySpec

    from .resolve import resolve_cost

    _check_keywords("predict", predict_kw, _predict)
    prof = _profile(model, batch_size, device, dtype)
    cost = resolve_cost(network, world_size=world_size, o_us=o_us, w_gbps=w_gbps)
    spec = (
        strategy
        if isinstance(strategy, StrategySpec)
        else StrategySpec(
            strategy, bucket_mb=bucket_mb, bucket_cap_mb_list=tuple(bucket_cap_mb_list) if bucket_cap_mb_list else None
        )
    )
    return _predict(prof, cost, spec, world_size, **predict_kw)


def recommend(
    model: str | GradProfile,
    *,
    world_size: int,
    network: str | CostModel | None = None,
    o_us: float | None = None,
    w_gbps: float | None = None,
    batch_size: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    **recommend_kw: Any,
) -> Any:
    """``ddpsim tune``'s recommendation (a ``ddpsim.tuner.TuneResult``: a round ``bucket_cap_mb``, or keep the
    default) for a built-in model name (its compute from FLOPs on ``device``, the toy workloads included: to
    measure one here, use ``tune``), a model or profile JSON path or a ``GradProfile``, on a network resolved as
    ``predict`` resolves it; nothing is measured. Where the network is a preset (by name, or the default) and
    no ``o_us``/``w_gbps`` replace its terms, and/or the compute comes from a device's FLOPs, the result's
    ``stated_ranges`` gives the step and the best round cap over the ranges they state (``ddpsim.stated``)."""
    from simulator.predict import predict as _predict

    from .resolve import resolve_cost
    from .stated import model_profile, preset_network, stated_inputs
    from .tuner import recommend as _recommend

    _check_keywords("recommend", recommend_kw, _recommend, _predict)
    prof, flops = model_profile(model, batch_size=batch_size, device=device, dtype=dtype)
    cost = resolve_cost(network, world_size=world_size, o_us=o_us, w_gbps=w_gbps)
    net = preset_network(network, fitted=False, o_w_given=o_us is not None or w_gbps is not None)
    stated = stated_inputs(prof, cost, flops=flops, network=net)
    return _recommend(prof, cost, world_size, stated=stated, **recommend_kw)


def tune(*args: Any, **kwargs: Any) -> Any:
    """Recommend a bucket size for a torch module on this machine (see ``ddpsim.tuner.tune``)."""
    from .tuner import tune as _tune

    return _tune(*args, **kwargs)
