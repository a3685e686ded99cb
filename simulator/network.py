"""Networks and the cost model the engine asks for collective durations.

A ``NetworkSpec`` is data (``simulator/data/networks/*.json``, each value with
its source): either a linear fit ``o + n/w`` taken at one world size, or a
two-level topology (intra-node / inter-node links with alpha, bandwidth and
gamma, and the algorithms the library may choose from).

A ``CostModel`` is what the engine consumes: it turns a message size and a
world size into ``(latency_s, transfer_s)`` -- the part of a call that does not
shrink when bandwidth is shared and the part that does -- and carries the
channel count (NCCL 1, gloo 2), the compute contention factor and the optional
memory-copy bandwidth of bucket copies.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from . import collectives as C
from .assumptions import StatedRange, parse_ranges
from .jsonio import read_json, to_fields
from .units import MIB

NETWORK_SCHEMA = "ddpsim.network/1"

# One meaning of the all-reduce's terms everywhere (presets, fitted parameters, a linear o/w):
#
#     T(n, p) = o + A(p) alpha + B(p) n beta + C(p) n gamma
#
# ``o`` is the per-call constant that does not grow with p (enqueue, thread hand-off, DDP's bucket
# bookkeeping: a preset's ``call_overhead_s``); ``alpha`` the latency of one step of the algorithm the
# library runs (gloo: always its ring, ``A(p) = 2(p-1)``; see ``GLOO_ALGORITHM_SOURCE``), ``beta`` seconds
# per byte sent over one link, ``gamma`` per byte reduced. A linear fit ``o + n/w`` taken at one p fixes
# only the zero-byte time ``o + A(p) alpha`` and the slope: how that time splits between the constant
# and the per-step latency is then assumed (``ASSUMED_LATENCY_SHARE``) and every output says so.
ASSUMED_LATENCY_SHARE = 2.0 / 3.0
ASSUMED_LATENCY_SHARE_SOURCE = (
    "assumed: gloo on a 16-core host over loopback (issue 11) measured a zero-byte all-reduce time of "
    "258, 589, 1271 us at p = 2, 4, 8, which the ring fits as 87 us per call + 85 us per step, so 2/3 "
    "of the zero-byte time at p = 2 is the ring's 2(p-1) steps"
)
GLOO_ALGORITHM_SOURCE = (
    "ProcessGroupGloo's AsyncAllreduceWork calls gloo::allreduce(opts) without choosing an algorithm "
    "(torch/csrc/distributed/c10d/ProcessGroupGlooDetail.hpp); gloo/allreduce.cc runs its ring for "
    "UNSPECIFIED (bcube only when asked) at every message size and world size: a reduce-scatter then an "
    "all-gather over 2p or more segments (at most 1 MiB each, kMaxSegmentSize), two in flight"
)
# The algorithm a cross-p fit assumes per backend. gloo: its ring, always (above). NCCL picks ring or tree
# (and NVLS/CollNet where present) per size from its own tuning model; a fit over one node's GPUs takes the
# ring, NCCL's choice for bandwidth-bound sizes (pin it with NCCL_ALGO=Ring when calibrating to be sure).
DEFAULT_ALGORITHM = {"gloo": "ring", "nccl": "ring"}


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _num(d: Mapping[str, Any], key: str, default: Any = None, cast: Any = float, where: str = "") -> Any:
    """Field ``key`` of ``d`` as a finite number (``cast``), or ``default`` when absent; a ``ValueError`` naming the field."""
    v = d.get(key, default)
    if v is None:
        if default is None and key not in d:
            return None
        return default
    name = f"{where}{key}"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"field {name!r} must be a number, got {v!r}")
    if not math.isfinite(v):
        raise ValueError(f"field {name!r} must be finite, got {v!r}")
    if cast is int and v != int(v):
        raise ValueError(f"field {name!r} must be an integer, got {v!r}")
    return cast(v)


def _block(d: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise ValueError(f"field {key!r} must be a JSON object, got {v!r}")
    return v


@dataclass(frozen=True)
class LinkLevel:
    """One level of a topology: per-message latency, link bandwidth, reduction cost, algorithms."""

    alpha_s: float
    bw_bytes_per_s: float
    gamma_s_per_byte: float = 0.0
    algorithms: tuple[str, ...] = ("ring",)

    def __post_init__(self) -> None:
        _require(math.isfinite(self.alpha_s) and self.alpha_s >= 0, f"alpha_s must be >= 0, got {self.alpha_s}")
        _require(
            math.isfinite(self.bw_bytes_per_s) and self.bw_bytes_per_s > 0,
            f"bw_bytes_per_s must be > 0, got {self.bw_bytes_per_s}",
        )
        _require(
            math.isfinite(self.gamma_s_per_byte) and self.gamma_s_per_byte >= 0,
            f"gamma_s_per_byte must be >= 0, got {self.gamma_s_per_byte}",
        )
        _require(len(self.algorithms) > 0, "algorithms must name at least one algorithm")
        for a in self.algorithms:
            _require(a in C.ALGORITHMS, f"unknown algorithm {a!r}; allowed: {', '.join(C.ALGORITHMS)}")

    @property
    def beta_s_per_byte(self) -> float:
        return 1.0 / self.bw_bytes_per_s

    def best(self, msg_bytes: float, p: int) -> tuple[str, float, float]:
        """``(algorithm, t0_s, slope_s_per_byte)`` of the cheapest algorithm for this message.

        Every algorithm is affine in the message size, so a call is fully
        described by its zero-byte time and its slope.
        """
        best: tuple[str, float, float] | None = None
        for a in self.algorithms:
            t0 = C.allreduce_time_s(a, 0.0, p, self.alpha_s, self.beta_s_per_byte, self.gamma_s_per_byte)
            t1 = C.allreduce_time_s(a, 1.0, p, self.alpha_s, self.beta_s_per_byte, self.gamma_s_per_byte)
            t = t0 + (t1 - t0) * msg_bytes
            if best is None or t < best[1] + best[2] * msg_bytes:
                best = (a, t0, t1 - t0)
        assert best is not None  # algorithms is non-empty by construction
        return best

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "") -> LinkLevel:
        for key in ("alpha_s", "bw_bytes_per_s"):
            _require(key in d, f"field {where}{key!r} is missing")
        algs = d.get("algorithms", ["ring"])
        _require(
            isinstance(algs, list) and all(isinstance(a, str) for a in algs),
            f"field '{where}algorithms' must be a list of names, got {algs!r}",
        )
        try:
            return cls(
                alpha_s=_num(d, "alpha_s", where=where),
                bw_bytes_per_s=_num(d, "bw_bytes_per_s", where=where),
                gamma_s_per_byte=_num(d, "gamma_s_per_byte", 0.0, where=where),
                algorithms=tuple(algs),
            )
        except ValueError as e:
            raise ValueError(str(e) if str(e).startswith("field") else f"{where.rstrip('.')}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)  # reading keeps its own checks (``from_dict``): a preset file's messages


@dataclass(frozen=True)
class NetworkSpec:
    """A network: a linear fit at one world size, or a two-level topology."""

    name: str
    backend: str = "nccl"
    channels: int = 1
    gpus_per_node: int = 1
    call_overhead_s: float = 0.0
    intra: LinkLevel | None = None
    inter: LinkLevel | None = None
    linear_o_s: float | None = None
    linear_w_bytes_per_s: float | None = None
    linear_world_size: int | None = None
    description: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    ranges: tuple[StatedRange, ...] = ()  # the spans its sources state for its values (``simulator.assumptions``)

    def __post_init__(self) -> None:
        _require(self.channels >= 1, f"network {self.name!r}: channels must be >= 1")
        _require(self.gpus_per_node >= 1, f"network {self.name!r}: gpus_per_node must be >= 1")
        _require(
            math.isfinite(self.call_overhead_s) and self.call_overhead_s >= 0,
            f"network {self.name!r}: call_overhead_s must be >= 0, got {self.call_overhead_s}",
        )
        has_linear = self.linear_o_s is not None
        _require(
            has_linear or self.intra is not None or self.inter is not None,
            f"network {self.name!r} needs a 'linear' block or 'intra'/'inter' levels",
        )
        if has_linear:
            assert self.linear_o_s is not None
            _require(self.linear_o_s >= 0, f"network {self.name!r}: linear o_s must be >= 0")
            _require(
                self.linear_w_bytes_per_s is not None and self.linear_w_bytes_per_s > 0,
                f"network {self.name!r}: linear w_bytes_per_s must be > 0",
            )
            _require(
                self.linear_world_size is not None and self.linear_world_size >= 2,
                f"network {self.name!r}: linear world_size must be >= 2",
            )

    @classmethod
    def from_alpha_beta(
        cls,
        name: str,
        *,
        call_overhead_s: float,
        alpha_s: float,
        bw_bytes_per_s: float,
        gamma_s_per_byte: float = 0.0,
        algorithm: str = "ring",
        backend: str = "gloo",
        channels: int = 1,
        description: str = "",
        sources: Mapping[str, str] | None = None,
    ) -> NetworkSpec:
        """One rank per node over one level of links: the form of a preset, from fitted terms."""
        return cls(
            name=name,
            backend=backend,
            channels=channels,
            gpus_per_node=1,
            call_overhead_s=call_overhead_s,
            inter=LinkLevel(alpha_s, bw_bytes_per_s, gamma_s_per_byte, (algorithm,)),
            description=description,
            sources=dict(sources or {}),
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NetworkSpec:
        _require(isinstance(d, Mapping), "a network spec must be a JSON object")
        _require(
            d.get("schema") == NETWORK_SCHEMA,
            f"network schema is {d.get('schema')!r}; this ddpsim reads {NETWORK_SCHEMA!r}",
        )
        name = d.get("name", "?")
        try:
            lin = _block(d, "linear")
            intra, inter = _block(d, "intra"), _block(d, "inter")
        except ValueError as e:
            raise ValueError(f"network spec {name!r}: {e}") from None
        sources = {k: v for k, v in d.items() if k.endswith("source") and isinstance(v, str)}
        for level in ("intra", "inter", "linear"):
            if isinstance(d.get(level), Mapping) and "source" in d[level]:
                sources[level] = d[level]["source"]
        try:
            spec = cls(
                name=str(d["name"]),
                backend=str(d.get("backend", "nccl")),
                channels=_num(d, "channels", 1, int),
                gpus_per_node=_num(d, "gpus_per_node", 1, int),
                call_overhead_s=_num(d, "call_overhead_s", 0.0),
                intra=LinkLevel.from_dict(intra, "intra.") if intra else None,
                inter=LinkLevel.from_dict(inter, "inter.") if inter else None,
                linear_o_s=_num(lin, "o_s", where="linear.") if lin else None,
                linear_w_bytes_per_s=_num(lin, "w_bytes_per_s", where="linear.") if lin else None,
                linear_world_size=_num(lin, "world_size", cast=int, where="linear.") if lin else None,
                description=str(d.get("description", "")),
                sources=sources,
            )
        except KeyError as e:
            raise ValueError(f"network spec {name!r} lacks field {e}") from None
        except (ValueError, TypeError) as e:
            msg = str(e)
            raise ValueError(msg if msg.startswith("network") else f"network spec {name!r}: {msg}") from None
        return replace(spec, ranges=parse_ranges(d.get("ranges"), spec.range_values(), f"network spec {name!r}"))

    def range_values(self) -> dict[str, float | None]:
        """The values a ``"ranges"`` entry may span, with their point values (None: not in this spec)."""
        out: dict[str, float | None] = {"call_overhead_s": self.call_overhead_s if self.intra or self.inter else None}
        for level in ("intra", "inter"):
            lv = getattr(self, level)
            out[f"{level}.alpha_s"] = lv.alpha_s if lv else None
            out[f"{level}.bw_bytes_per_s"] = lv.bw_bytes_per_s if lv else None
        out["linear.o_s"] = self.linear_o_s
        out["linear.w_bytes_per_s"] = self.linear_w_bytes_per_s
        return out

    def with_values(self, values: Mapping[str, float]) -> NetworkSpec:
        """This spec with some of ``range_values``' fields set (``{"inter.alpha_s": 4e-6}``)."""
        spec = self
        for key, v in values.items():
            level, _, name = key.rpartition(".")
            field_values: dict[str, Any]
            if level in ("intra", "inter"):
                field_values = {level: replace(getattr(spec, level), **{name: v})}
            else:
                field_values = {f"linear_{name}" if level == "linear" else name: v}
            spec = replace(spec, **field_values)
        return spec

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema": NETWORK_SCHEMA,
            "name": self.name,
            "description": self.description,
            "backend": self.backend,
            "channels": self.channels,
            "gpus_per_node": self.gpus_per_node,
            "call_overhead_s": self.call_overhead_s,
        }
        if self.intra:
            d["intra"] = self.intra.to_dict()
        if self.inter:
            d["inter"] = self.inter.to_dict()
        if self.linear_o_s is not None:
            d["linear"] = {
                "o_s": self.linear_o_s,
                "w_bytes_per_s": self.linear_w_bytes_per_s,
                "world_size": self.linear_world_size,
            }
        if self.ranges:
            d["ranges"] = {r.key: r.to_dict() for r in self.ranges}
        return d


def list_networks() -> list[str]:
    root = resources.files("simulator") / "data" / "networks"
    return sorted(p.name[: -len(".json")] for p in root.iterdir() if p.name.endswith(".json"))


def load_network(name_or_path: str) -> NetworkSpec:
    """A built-in preset by name, or a network JSON file by path."""
    path = Path(name_or_path)
    if name_or_path.endswith(".json") or path.exists():
        try:
            return NetworkSpec.from_dict(read_json(path, "network file"))
        except ValueError as e:
            msg = str(e)
            raise ValueError(msg if str(path) in msg else f"network file {path}: {msg}") from None
    names = list_networks()
    if name_or_path not in names:
        raise ValueError(f"unknown network {name_or_path!r}; built-in: {', '.join(names)} (or a path to a JSON file)")
    text = (resources.files("simulator") / "data" / "networks" / f"{name_or_path}.json").read_text()
    return NetworkSpec.from_dict(json.loads(text))


@dataclass(frozen=True)
class CostModel:
    """Durations of collectives for the engine, plus how communication interacts with compute.

    Either ``o_s``/``w_bytes_per_s`` (the linear model: the zero-byte time and
    algorithm bandwidth of one all-reduce at ``ref_world_size``) or a
    ``network`` topology (a preset, or ``calibration.params.Params.cost_model``
    fitted across world sizes). Both mean the same terms (see the top of this
    module): a per-call constant ``o``, ``alpha`` per step of the algorithm,
    bandwidth. A linear model is used as it is at ``ref_world_size`` (or at
    every p when that is ``None``); at another p it is split into those terms
    (``terms``), ``latency_share`` of its zero-byte time going to the ring's
    ``2(ref-1)`` steps (default ``ASSUMED_LATENCY_SHARE``) and the rest to the
    per-call constant. ``measured_world_sizes``: where the terms were measured
    (empty for presets and given values); outputs say which p are extrapolated
    (``provenance``).

    ``channels``: collectives in flight at once (NCCL 1, gloo 2).
    ``pipelined`` (one channel only): a queued collective's latency part runs while the one before it
    transfers: it starts when that one's transfer starts, and its own transfer starts when both are
    done, so calls launched back to back cost ``max(latency, transfer)`` each instead of their sum (a
    blocking call, launched once the one before is done, still pays both). What gloo's stream probe
    shows over links: 0.25 MiB calls launched at once take the wire time, blocking ones 1.4 ms more.
    ``shared_bandwidth``: concurrent collectives share the bandwidth (their
    transfer parts progress at ``1/k`` speed each) while their latency parts
    overlap freely.
    ``contention``: compute runs ``1 + contention`` times slower while any
    collective is in flight (fitted by calibration; 0 = no interference).
    ``comm_contention``: collectives run ``1 + comm_contention`` times slower
    while any rank computes (fitted by calibration).
    ``call_cpu_s``, ``call_cpu_s_per_byte``: work each collective brings to
    every rank that is computing when the collective starts, ``call_cpu_s +
    call_cpu_s_per_byte * bytes`` (the CPU a call takes from compute on cores
    it shares: fitted by calibration from the in-step probe at two bucket caps,
    in place of ``contention``; 0 = none). Owed on the rank's core, it shares
    the core with compute (half speed each) until it is done, so compute loses
    at most what it has left (the engine, ``_compute_beside_calls``).
    ``copy_bytes_per_s``: memory-copy rate for gradient <-> bucket copies
    (None = free). ``scale_bytes_per_s``: rate of the in-place division of
    averaged gradients by the world size that the hand-written ``flat``,
    ``individual`` and ``naive`` wrappers run after communication (torch's
    reducer and ``bucketed`` fold it into the copy-in; None = free). ``hook_s_per_param``: the cost of one Python gradient hook
    (hand-written wrappers run one per gradient; torch DDP's are C++).
    ``finalize_s_per_param``: torch DDP's reducer work between the last bucket's
    copy-out and ``backward()`` returning, per parameter it reduces (fitted by
    calibration from the in-step probe's timelines; 0 = none).
    ``leftover_s``: what a step pays, before its forward, after a communicating
    step beyond after a compute-only one: fitted by calibration from the in-step
    probe's compute-only steps, one after a DDP step against one after a
    compute-only step (``calibration.step_probe.leftover_fit``; 0 = none).
    On micro-DLRM on loopback it is on-CPU time in the next step, mostly the
    switch from one copy of the model to another, not work left running
    (BENCHMARKS.md, "Thirtieth session").
    ``optimizer_extra_s``: what the optimizer of a step that communicated takes
    beyond a compute-only step's (fitted by calibration from the in-step
    probe's timelines, ``calibration.step_probe.optimizer_extra_fit``; 0 = none).
    ``cold_call_s``, ``cold_tau_s``: what a collective that starts on idle
    channels costs beyond one that follows another call, ``cold_call_s * (1 -
    exp(-idle / cold_tau_s))`` after ``idle`` seconds with no collective in
    flight (the ranks' threads woke from a wait, or from compute, to run it:
    fitted by calibration from ``calibration.probes.cold_call_probe``; 0 = none).
    ``broadcast_switch_credit_s``: what a broadcast from another source than
    the one before saves, at most: a rate-limited link with a token bucket
    (Linux tbf, a cloud VM's egress limit) lets the first bytes of a transfer
    through at once after its direction idled, so the sharded optimizer's
    broadcasts, whose owner alternates, each move ``min(credit, idle, n/w)``
    seconds of their payload for free, ``idle`` the time since their source
    last sent (``simulator.engine.switch_credit``; fitted by calibration from
    ``calibration.probes.broadcast_switch_probe``; 0 = none).
    ``queued_latency_scale``: the share of its latency part a collective
    spends when it waited in the channels' queue (it starts the moment the
    call before it ends, the threads that run it still awake); a call that
    finds a channel idle spends all of it. 1 = no difference (the stream
    probe's calls one after another, each waited for, set the latency part);
    fitted by calibration from the in-step probe's plain steps at a call per
    gradient (``calibration.step_probe.queued_fit``). A step whose ranks block
    on collectives (sharded's broadcasts) keeps 1 (``simulator.engine``).
    ``broadcast_step_extra_s``: what each blocking broadcast of the sharded
    optimizer's step costs beyond ``broadcast_parts_s``' latency part (may be
    below 0; a broadcast's latency never is): the broadcast benchmark times
    each call after a barrier, the step issues them back to back after the
    optimizer (fitted by calibration from ``calibration.sharded_probe``: the
    sharded step against torch DDP's at the same cap, per broadcast; 0 = none).
    """

    o_s: float | None = None
    w_bytes_per_s: float | None = None
    ref_world_size: int | None = None
    network: NetworkSpec | None = None
    channels: int = 1
    shared_bandwidth: bool = True
    pipelined: bool = False
    contention: float = 0.0
    comm_contention: float = 0.0
    call_cpu_s: float = 0.0
    call_cpu_s_per_byte: float = 0.0
    copy_bytes_per_s: float | None = None
    scale_bytes_per_s: float | None = None
    hook_s_per_param: float = 0.0
    finalize_s_per_param: float = 0.0
    cold_call_s: float = 0.0
    cold_tau_s: float = 0.0
    broadcast_switch_credit_s: float = 0.0
    leftover_s: float = 0.0
    optimizer_extra_s: float = 0.0
    queued_latency_scale: float = 1.0
    broadcast_step_extra_s: float = 0.0
    broadcast_o_s: float | None = None
    broadcast_w_bytes_per_s: float | None = None
    latency_share: float | None = None
    measured_world_sizes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        share = self.latency_share
        _require(
            share is None or (math.isfinite(share) and 0.0 <= share <= 1.0),
            f"latency share must be between 0 and 1, got {share}",
        )
        object.__setattr__(self, "measured_world_sizes", tuple(sorted({int(q) for q in self.measured_world_sizes})))
        _require(
            all(q >= 2 for q in self.measured_world_sizes),
            f"measured world sizes must be >= 2, got {list(self.measured_world_sizes)}",
        )
        if self.network is None:
            _require(
                self.o_s is not None and self.w_bytes_per_s is not None, "a cost model needs o and w, or a network"
            )
            assert self.o_s is not None and self.w_bytes_per_s is not None
            _require(self.o_s >= 0, f"per-call overhead o must be >= 0 s, got {self.o_s}")
            _require(self.w_bytes_per_s > 0, f"bandwidth w must be > 0, got {self.w_bytes_per_s}")
        ref = self.ref_world_size
        _require(
            ref is None or (isinstance(ref, numbers.Integral) and not isinstance(ref, bool) and ref >= 1),
            f"the reference world size must be an integer >= 1 or None, got {ref!r}",
        )
        if ref == 1:  # o and w given at one rank: no ring to split them over, held as given at every p
            object.__setattr__(self, "ref_world_size", None)
        _require(self.channels >= 1, f"channels must be >= 1, got {self.channels}")
        _require(
            not self.pipelined or self.channels == 1,
            f"a pipelined channel is one channel; got pipelined with channels = {self.channels}",
        )
        _require(self.contention >= 0, f"contention must be >= 0, got {self.contention}")
        _require(self.comm_contention >= 0, f"comm contention must be >= 0, got {self.comm_contention}")
        _require(
            math.isfinite(self.call_cpu_s) and self.call_cpu_s >= 0,
            f"per-call compute cost must be >= 0 s, got {self.call_cpu_s}",
        )
        _require(
            math.isfinite(self.call_cpu_s_per_byte) and self.call_cpu_s_per_byte >= 0,
            f"per-byte compute cost must be >= 0 s/B, got {self.call_cpu_s_per_byte}",
        )
        _require(self.hook_s_per_param >= 0, f"hook cost must be >= 0 s, got {self.hook_s_per_param}")
        _require(
            math.isfinite(self.finalize_s_per_param) and self.finalize_s_per_param >= 0,
            f"finalize cost must be >= 0 s per parameter, got {self.finalize_s_per_param}",
        )
        _require(
            math.isfinite(self.leftover_s) and self.leftover_s >= 0,
            f"leftover work must be >= 0 s, got {self.leftover_s}",
        )
        _require(
            math.isfinite(self.optimizer_extra_s) and self.optimizer_extra_s >= 0,
            f"the optimizer's extra after communication must be >= 0 s, got {self.optimizer_extra_s}",
        )
        _require(
            math.isfinite(self.cold_call_s) and self.cold_call_s >= 0,
            f"cold-call cost must be >= 0 s, got {self.cold_call_s}",
        )
        _require(
            math.isfinite(self.cold_tau_s) and self.cold_tau_s >= 0 and (self.cold_tau_s > 0 or not self.cold_call_s),
            f"cold-call time constant must be > 0 s where the cost is, got {self.cold_tau_s}",
        )
        _require(
            math.isfinite(self.broadcast_switch_credit_s) and self.broadcast_switch_credit_s >= 0,
            f"broadcast switch credit must be >= 0 s, got {self.broadcast_switch_credit_s}",
        )
        _require(
            math.isfinite(self.broadcast_step_extra_s),
            f"a broadcast's extra in the step must be a finite number of seconds, got {self.broadcast_step_extra_s}",
        )
        _require(
            math.isfinite(self.queued_latency_scale) and 0 < self.queued_latency_scale <= 1,
            f"queued calls' latency scale must be in (0, 1], got {self.queued_latency_scale}",
        )
        _require(
            self.copy_bytes_per_s is None or self.copy_bytes_per_s > 0,
            f"copy bandwidth must be > 0, got {self.copy_bytes_per_s}",
        )
        _require(
            self.scale_bytes_per_s is None or (math.isfinite(self.scale_bytes_per_s) and self.scale_bytes_per_s > 0),
            f"scale (division) rate must be > 0, got {self.scale_bytes_per_s}",
        )

    @classmethod
    def linear(cls, o_s: float, w_bytes_per_s: float, ref_world_size: int | None = None, **kw: Any) -> CostModel:
        return cls(o_s=o_s, w_bytes_per_s=w_bytes_per_s, ref_world_size=ref_world_size, **kw)

    @classmethod
    def from_network(cls, spec: NetworkSpec, **kw: Any) -> CostModel:
        kw.setdefault("channels", spec.channels)
        if spec.linear_o_s is not None:
            return cls(
                o_s=spec.linear_o_s,
                w_bytes_per_s=spec.linear_w_bytes_per_s,
                ref_world_size=spec.linear_world_size,
                network=None,
                **kw,
            )
        return cls(network=spec, **kw)

    def with_overrides(self, **kw: Any) -> CostModel:
        return replace(self, **kw)

    def cold_extra_s(self, idle_s: float) -> float:
        """What a collective starting after ``idle_s`` seconds with none in flight costs beyond one that
        follows another call."""
        if not self.cold_call_s or idle_s <= 0:
            return 0.0
        return self.cold_call_s * -math.expm1(-idle_s / self.cold_tau_s)

    @property
    def label(self) -> str:
        tail = ", pipelined channel" if self.pipelined else ""
        if self.queued_latency_scale != 1:
            tail += f", queued calls x{self.queued_latency_scale:.2f} of t0"
        if self.network is not None:
            return self.network.name + tail
        assert self.o_s is not None and self.w_bytes_per_s is not None  # __post_init__: o and w, or a network
        # o_s here is the whole zero-byte time of a call at ref_world_size (t0 = o + A(p) alpha), not the per-call o
        at = f" at p={self.ref_world_size}" if self.ref_world_size is not None else ""
        if not math.isfinite(self.w_bytes_per_s):  # a preset's at one rank: nothing to carry, no bandwidth to show
            return f"t0={self.o_s * 1e6:.1f}us w=unbounded{at}{tail}"
        return (
            f"t0={self.o_s * 1e6:.1f}us w={self.w_bytes_per_s / 1e9:.3g}GB/s "
            f"({self.w_bytes_per_s * 8 / 1e9:.3g}Gbit/s){at}{tail}"
        )

    # --- what the terms are, and where they come from -------------------------
    def terms(self) -> Terms:
        """The per-call constant, per-step latency and bandwidth of this model (``Terms``).

        A network: its call overhead and its inter-node level (intra when it has only that). The
        linear model: split at ``ref_world_size`` (``split_linear``); with no reference size, all of
        ``o`` is the per-call constant and ``w`` the bandwidth at every p (``split="given"``).
        """
        if self.network is not None:
            net = self.network
            level = net.inter or net.intra
            assert level is not None  # NetworkSpec: intra or inter when there is no linear block
            split = "fitted" if len(self.measured_world_sizes) >= 2 else "preset"
            if len(self.measured_world_sizes) == 1:
                split = "assumed"
            return Terms(
                net.call_overhead_s,
                level.alpha_s,
                level.bw_bytes_per_s,
                level.gamma_s_per_byte,
                "/".join(level.algorithms),
                split,
            )
        assert self.o_s is not None and self.w_bytes_per_s is not None
        if self.ref_world_size is None:
            return Terms(self.o_s, 0.0, self.w_bytes_per_s, 0.0, "ring", "given")
        share = ASSUMED_LATENCY_SHARE if self.latency_share is None else self.latency_share
        return split_linear(self.o_s, self.w_bytes_per_s, self.ref_world_size, share)

    def provenance(self, p: int) -> dict[str, Any]:
        """Which p the network terms were measured at and whether ``p`` is extrapolated, with one line of text
        (``"network fitted at p = 2, 4; p = 64 extrapolated"``) that every output repeats."""
        measured = list(self.measured_world_sizes)
        t = self.terms()
        ref = self.ref_world_size if self.network is None else None
        if measured:
            head = f"network fitted at p = {', '.join(map(str, measured))}" + (" only" if len(measured) == 1 else "")
            at = measured
        elif self.network is not None:
            head = f"network preset {self.network.name} (sourced or assumed values; no p measured here)"
            at = []
        elif ref is not None:
            head = f"network o and w given at p = {ref}"
            at = [ref]
        else:
            head = "network o and w given, used as they are at every p"
            at = []
        extrapolated = p >= 2 and p not in at and not (self.network is None and ref is None)
        if p < 2:
            tail = f"p = {p}: nothing communicated"
        elif p in at:
            tail = f"p = {p} measured" if p in measured else f"p = {p} as given"
        elif self.network is None and ref is None:
            tail = f"p = {p} uses them unchanged"
        else:
            tail = f"p = {p} extrapolated ({t.algorithm}: o + {_steps(t.algorithm)} alpha + bandwidth)"
        if extrapolated and t.split == "assumed":
            share = ASSUMED_LATENCY_SHARE if self.latency_share is None else self.latency_share
            tail += (
                f"; latency split assumed ({share:.0%} of the zero-byte time at p = {at[0] if at else ref} "
                f"taken as per-step latency, the rest per call)"
            )
        return {
            "text": f"{head}; {tail}",
            "measured_world_sizes": measured,
            "world_size": p,
            "extrapolated": extrapolated,
            "latency_split": t.split,
            "terms": t.to_dict(),
        }

    def perturbed(self, o_delta_s: float = 0.0, w_factor: float = 1.0) -> CostModel:
        """This model with the per-call time shifted by ``o_delta_s`` (clipped at 0) and every bandwidth
        scaled by ``w_factor``: what a draw of the fit's uncertainty changes."""
        if self.network is None:
            assert self.o_s is not None and self.w_bytes_per_s is not None
            return replace(self, o_s=max(0.0, self.o_s + o_delta_s), w_bytes_per_s=self.w_bytes_per_s * w_factor)
        net = self.network

        def scaled(level: LinkLevel | None) -> LinkLevel | None:
            return None if level is None else replace(level, bw_bytes_per_s=level.bw_bytes_per_s * w_factor)

        return replace(
            self,
            network=replace(
                net,
                call_overhead_s=max(0.0, net.call_overhead_s + o_delta_s),
                intra=scaled(net.intra),
                inter=scaled(net.inter),
            ),
        )

    # --- per call -----------------------------------------------------------
    def allreduce_parts_s(self, msg_bytes: float, p: int) -> tuple[float, float]:
        """``(latency_s, transfer_s)`` of one all-reduce of ``msg_bytes`` per rank over ``p`` ranks."""
        if p <= 1:
            return 0.0, 0.0
        o, slope = self._affine(msg_bytes, p)
        return o, msg_bytes * slope

    def allreduce_time_s(self, msg_bytes: float, p: int) -> float:
        lat, xfer = self.allreduce_parts_s(msg_bytes, p)
        return lat + xfer

    def broadcast_parts_s(self, msg_bytes: float, p: int) -> tuple[float, float]:
        """One broadcast: same call overhead as an all-reduce, the payload at all-reduce bus bandwidth
        (``w * 2(p-1)/p``): a pipelined broadcast moves each byte over each link once, a ring
        all-reduce ``2(p-1)/p`` times. A fitted broadcast (``broadcast_o_s``/``broadcast_w_bytes_per_s``)
        takes precedence. ``broadcast_step_extra_s`` is added to the latency part (not below 0)."""
        if p <= 1:
            return 0.0, 0.0
        if self.broadcast_o_s is not None and self.broadcast_w_bytes_per_s is not None:
            o, xfer = self.broadcast_o_s, msg_bytes / self.broadcast_w_bytes_per_s
        else:
            o, slope = self._affine(msg_bytes, p)
            xfer = msg_bytes * slope / C.busbw_factor_allreduce(p)
        return max(0.0, o + self.broadcast_step_extra_s), xfer

    def linear_at(self, p: int, msg_bytes: float = 25 * MIB) -> tuple[float, float]:
        """``(o_s, w_bytes_per_s)`` of the all-reduce at ``p`` ranks (for the algorithm chosen at ``msg_bytes``)."""
        o, slope = self._affine(msg_bytes, p)
        return o, (1.0 / slope if slope > 0 else math.inf)

    def _affine(self, msg_bytes: float, p: int) -> tuple[float, float]:
        if self.network is None:
            assert self.o_s is not None and self.w_bytes_per_s is not None  # __post_init__: o and w, or a network
            ref = self.ref_world_size
            if ref is None or ref == p:
                return self.o_s, 1.0 / self.w_bytes_per_s
            # Another p: the same terms a preset has (per-call o, ring alpha per step, link bandwidth),
            # equal to o and w at the reference size; the split of the zero-byte time is assumed.
            t = self.terms()
            steps = C.allreduce_time_s(t.algorithm, 0.0, p, 1.0, 0.0, 0.0)
            per_byte = C.allreduce_time_s(t.algorithm, 1.0, p, 0.0, 1.0, 0.0)
            return t.call_overhead_s + steps * t.alpha_s, per_byte / t.bw_bytes_per_s
        net = self.network
        g = min(net.gpus_per_node, p)
        nodes = math.ceil(p / g)
        t0, slope = net.call_overhead_s, 0.0
        if g > 1:
            level = net.intra or net.inter
            assert level is not None  # NetworkSpec: intra or inter when there is no linear block
            _, a0, a1 = level.best(msg_bytes, g)
            t0, slope = t0 + a0, slope + a1
        if nodes > 1:
            level = net.inter or net.intra
            assert level is not None
            _, b0, b1 = level.best(msg_bytes / g, nodes)
            t0, slope = t0 + b0, slope + b1 / g
        return t0, slope

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "channels": self.channels,
            "shared_bandwidth": self.shared_bandwidth,
            "contention": self.contention,
            "comm_contention": self.comm_contention,
            "copy_bytes_per_s": self.copy_bytes_per_s,
            "hook_s_per_param": self.hook_s_per_param,
            "finalize_s_per_param": self.finalize_s_per_param,
        }
        if self.network is not None:
            d["network"] = self.network.to_dict()
        else:
            d.update(o_s=self.o_s, w_bytes_per_s=self.w_bytes_per_s, ref_world_size=self.ref_world_size)
        if self.broadcast_o_s is not None:
            d.update(broadcast_o_s=self.broadcast_o_s, broadcast_w_bytes_per_s=self.broadcast_w_bytes_per_s)
        if self.latency_share is not None:
            d["latency_share"] = self.latency_share
        if self.call_cpu_s:
            d["call_cpu_s"] = self.call_cpu_s
        if self.call_cpu_s_per_byte:
            d["call_cpu_s_per_byte"] = self.call_cpu_s_per_byte
        if self.cold_call_s or self.cold_tau_s:
            d.update(cold_call_s=self.cold_call_s, cold_tau_s=self.cold_tau_s)
        if self.broadcast_switch_credit_s:
            d["broadcast_switch_credit_s"] = self.broadcast_switch_credit_s
        if self.scale_bytes_per_s is not None:
            d["scale_bytes_per_s"] = self.scale_bytes_per_s
        if self.leftover_s:
            d["leftover_s"] = self.leftover_s
        if self.optimizer_extra_s:
            d["optimizer_extra_s"] = self.optimizer_extra_s
        if self.pipelined:
            d["pipelined"] = True
        if self.queued_latency_scale != 1:
            d["queued_latency_scale"] = self.queued_latency_scale
        if self.broadcast_step_extra_s:
            d["broadcast_step_extra_s"] = self.broadcast_step_extra_s
        if self.measured_world_sizes:
            d["measured_world_sizes"] = list(self.measured_world_sizes)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CostModel:
        _require(isinstance(d, Mapping), f"a cost model must be a JSON object, got {d!r}")
        net = _block(d, "network")
        return cls(
            o_s=_num(d, "o_s"),
            w_bytes_per_s=_num(d, "w_bytes_per_s"),
            ref_world_size=_num(d, "ref_world_size", cast=int),
            network=NetworkSpec.from_dict(net) if net else None,
            channels=_num(d, "channels", 1, int),
            shared_bandwidth=bool(d.get("shared_bandwidth", True)),
            pipelined=bool(d.get("pipelined", False)),
            contention=_num(d, "contention", 0.0),
            comm_contention=_num(d, "comm_contention", 0.0),
            call_cpu_s=_num(d, "call_cpu_s", 0.0),
            call_cpu_s_per_byte=_num(d, "call_cpu_s_per_byte", 0.0),
            copy_bytes_per_s=_num(d, "copy_bytes_per_s"),
            scale_bytes_per_s=_num(d, "scale_bytes_per_s"),
            hook_s_per_param=_num(d, "hook_s_per_param", 0.0),
            finalize_s_per_param=_num(d, "finalize_s_per_param", 0.0),
            cold_call_s=_num(d, "cold_call_s", 0.0),
            cold_tau_s=_num(d, "cold_tau_s", 0.0),
            broadcast_switch_credit_s=_num(d, "broadcast_switch_credit_s", 0.0),
            leftover_s=_num(d, "leftover_s", 0.0),
            optimizer_extra_s=_num(d, "optimizer_extra_s", 0.0),
            queued_latency_scale=_num(d, "queued_latency_scale", 1.0),
            broadcast_step_extra_s=_num(d, "broadcast_step_extra_s", 0.0),
            broadcast_o_s=_num(d, "broadcast_o_s"),
            broadcast_w_bytes_per_s=_num(d, "broadcast_w_bytes_per_s"),
            latency_share=_num(d, "latency_share"),
            measured_world_sizes=_world_sizes(d.get("measured_world_sizes")),
        )


def _world_sizes(v: Any) -> tuple[int, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(q, int) and not isinstance(q, bool) for q in v):
        raise ValueError(f"field 'measured_world_sizes' must be a list of integers, got {v!r}")
    return tuple(v)


def _steps(algorithm: str) -> str:
    """The latency steps of an algorithm, as text."""
    return {
        "ring": "2(p-1)",
        "recursive_doubling": "lg p",
        "rabenseifner": "2 lg p",
        "reduce_bcast": "2 lg p",
        "tree": "2 lg p",
    }.get(algorithm, "A(p)")


@dataclass(frozen=True)
class Terms:
    """The all-reduce's terms, the same for a preset and fitted parameters.

    ``call_overhead_s``: the per-call constant ``o`` (does not grow with p);
    ``alpha_s``: latency per step of ``algorithm``; ``bw_bytes_per_s``: one link's
    bandwidth ``1/beta`` (gamma folded in unless given). ``split``: ``"fitted"``
    (o and alpha fitted across world sizes), ``"assumed"`` (one p measured: the
    zero-byte time split by ``ASSUMED_LATENCY_SHARE``), ``"preset"`` (a preset's
    values), ``"given"`` (o and w used unchanged at every p).
    """

    call_overhead_s: float
    alpha_s: float
    bw_bytes_per_s: float
    gamma_s_per_byte: float
    algorithm: str
    split: str

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)


def split_linear(
    o_s: float, w_bytes_per_s: float, world_size: int, latency_share: float = ASSUMED_LATENCY_SHARE
) -> Terms:
    """A linear fit ``o + n/w`` at one world size as ring terms that reproduce it exactly there:
    ``2(p-1) alpha = share * o``, per-call constant ``(1 - share) * o``, ``1/w = 2(p-1)/p beta``."""
    if world_size < 2:
        raise ValueError(f"a linear fit is split at a world size >= 2, got {world_size}")
    steps = C.allreduce_time_s("ring", 0.0, world_size, 1.0, 0.0, 0.0)
    per_byte = C.allreduce_time_s("ring", 1.0, world_size, 0.0, 1.0, 0.0)
    return Terms(
        call_overhead_s=(1.0 - latency_share) * o_s,
        alpha_s=latency_share * o_s / steps,
        bw_bytes_per_s=w_bytes_per_s * per_byte,
        gamma_s_per_byte=0.0,
        algorithm="ring",
        split="assumed",
    )
