"""Fitted parameters: what ``ddpsim calibrate`` writes and ``predict``/``validate`` read.

One JSON object with ``schema`` (``PARAMS_SCHEMA``), the all-reduce fit
(``o``, ``w`` with intervals; optionally alpha-beta-gamma over world sizes), the
contention factor, the number of communication channels, the compute profile
(a path or embedded), the environment and the record files it all came from.
The top level also repeats ``o_us`` and ``w_gbps`` (derived, for reading; a file
where they were edited away from the fit is refused on load) so a reader sees the
headline numbers without digging.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from simulator.jsonio import read_json
from simulator.profile import GradProfile

from .fit import ABGFit, LinearFit, abg_from_linear

PARAMS_SCHEMA = "ddpsim.params/1"

# How many all-reduces a backend runs at once. gloo: ProcessGroupGloo keeps a
# pool of 2 worker threads per device (``threads{2}``, ProcessGroupGloo.hpp),
# so two collectives can be in flight; NCCL: one stream per device, serialized.
DEFAULT_CHANNELS = {"gloo": 2, "nccl": 1}

_REQUIRED = ("backend", "world_size", "linear")


@dataclass(frozen=True)
class Params:
    """Fitted model parameters of one backend, world size and link.

    ``contention_c`` is ``None`` until fitted (the simulator then runs without
    contention and should say so); ``channels`` defaults from the backend.
    ``compute_profile`` is an embedded profile dict (``GradProfile.to_dict``),
    ``compute_profile_path`` a profile file (relative paths are taken relative
    to the params file by ``profile``).
    """

    backend: str
    world_size: int
    linear: LinearFit
    link_mbit: float | None = None
    abg: ABGFit | None = None
    contention_c: float | None = None
    channels: int | None = None
    compute_profile_path: str | None = None
    compute_profile: Mapping[str, Any] | None = None
    env: Mapping[str, Any] = field(default_factory=dict)
    source_records: tuple[str, ...] = ()
    comm_contention_c: float | None = None
    copy_bytes_per_s: float | None = None
    probes: Mapping[str, Any] = field(default_factory=dict)
    broadcast: LinearFit | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.backend, str) or not self.backend:
            raise ValueError(f"backend must be a non-empty string, got {self.backend!r}")
        ws = self.world_size
        if not isinstance(ws, int) or isinstance(ws, bool) or not 1 <= ws <= MAX_CALIBRATED_WORLD_SIZE:
            raise ValueError(f"world_size must be an integer from 1 to {MAX_CALIBRATED_WORLD_SIZE}, got {ws!r}")
        if not isinstance(self.linear, LinearFit):
            raise ValueError("linear must be a LinearFit")
        if self.abg is not None and not isinstance(self.abg, ABGFit):
            raise ValueError("abg must be an ABGFit or None")
        if self.link_mbit is not None and not (isinstance(self.link_mbit, (int, float)) and self.link_mbit > 0):
            raise ValueError(f"link_mbit must be a number > 0 or None (loopback), got {self.link_mbit!r}")
        c = self.contention_c
        if c is not None and not (isinstance(c, (int, float)) and math.isfinite(c) and c >= 0):
            raise ValueError(f"contention_c must be a finite number >= 0 or None (not fitted), got {c!r}")
        cc = self.comm_contention_c
        if cc is not None and not (isinstance(cc, (int, float)) and math.isfinite(cc) and cc >= 0):
            raise ValueError(f"comm_contention_c must be a finite number >= 0 or None, got {cc!r}")
        if self.copy_bytes_per_s is not None and not self.copy_bytes_per_s > 0:
            raise ValueError(f"copy_bytes_per_s must be > 0 or None, got {self.copy_bytes_per_s!r}")
        if self.channels is None:
            if self.backend not in DEFAULT_CHANNELS:
                raise ValueError(
                    f"backend {self.backend!r} has no default channel count (known: "
                    f"{', '.join(DEFAULT_CHANNELS)}); give channels"
                )
            object.__setattr__(self, "channels", DEFAULT_CHANNELS[self.backend])
        if not isinstance(self.channels, int) or isinstance(self.channels, bool) or self.channels < 1:
            raise ValueError(f"channels must be an integer >= 1, got {self.channels!r}")
        if self.compute_profile is not None:
            GradProfile.from_dict(self.compute_profile)  # raises ValueError naming what is wrong
        object.__setattr__(self, "source_records", tuple(str(s) for s in self.source_records))

    # ---- headline numbers ---------------------------------------------------
    @property
    def o_s(self) -> float:
        return self.linear.o_s

    @property
    def w_bytes_per_s(self) -> float:
        return self.linear.w_bytes_per_s

    @property
    def o_us(self) -> float:
        return self.linear.o_us

    @property
    def w_gbps(self) -> float:
        return self.linear.w_gbps

    def profile(self, base_dir: str | Path | None = None) -> GradProfile | None:
        """The compute profile: embedded, else loaded from ``compute_profile_path``, else ``None``."""
        if self.compute_profile is not None:
            return GradProfile.from_dict(self.compute_profile)
        if self.compute_profile_path is None:
            return None
        p = Path(self.compute_profile_path)
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        return GradProfile.load(p)

    @property
    def measured_world_sizes(self) -> tuple[int, ...]:
        """The world sizes the all-reduce was measured at: the cross-p fit's, else this one."""
        if self.abg is not None and self.abg.split == "fitted" and len(self.abg.world_sizes) >= 2:
            return tuple(self.abg.world_sizes)
        return (self.world_size,)

    def network_terms(self) -> ABGFit:
        """The all-reduce as a per-call constant, per-step latency and bandwidth: fitted across world sizes
        when ``calibrate --world-size`` measured several, else the linear fit at this world size with the
        latency split assumed (``abg_from_linear``)."""
        if self.abg is not None and len(self.measured_world_sizes) >= 2:
            return self.abg
        return abg_from_linear(replace(self.linear, world_size=self.world_size))

    def in_step_fits(self) -> dict[int, dict[str, Any]]:
        """The in-step probe's fit at each world size it ran at (``calibrate --world-size 2,4``: each p)."""
        out: dict[int, dict[str, Any]] = {}
        probes = self.probes or {}
        if probes.get("in_step"):
            out[self.world_size] = probes["in_step"]
        for k, v in (probes.get("in_step_by_p") or {}).items():
            if isinstance(v, Mapping) and str(k).isdigit():
                out[int(k)] = dict(v)
        return out

    def _in_step_at(self, world_size: int | None) -> tuple[int, Mapping[str, Any]]:
        """The p whose in-step fit serves a prediction at ``world_size`` (that p where it was measured, else
        the nearest by ratio; the calibration's own p with ``None`` or one p measured) and that fit
        (``{}`` when the probe did not run)."""
        fits = self.in_step_fits()
        if world_size is None or len(fits) < 2:
            return self.world_size, fits.get(self.world_size, {})
        src = world_size if world_size in fits else min(fits, key=lambda q: (abs(math.log(q / world_size)), q))
        return src, fits[src]

    def in_step_source(self, world_size: int | None) -> int:
        """The p whose in-step fit serves a prediction at ``world_size`` (``_in_step_at``)."""
        return self._in_step_at(world_size)[0]

    def contention_at(self, world_size: int | None) -> tuple[float, float, str]:
        """``(c, c_comm, note)`` for a prediction at ``world_size``: the in-step probe's factors measured at
        that p, else at the nearest p measured (ranks per host is what they follow on one host; the note
        says which p they come from). ``None``: the calibration's own p."""
        fits = self.in_step_fits()
        base = (self.contention_c or 0.0, self.comm_contention_c or 0.0)
        if world_size is None or len(fits) < 2:
            where = f"contention measured at p = {self.world_size}"
            if world_size is not None and world_size != self.world_size:
                where += f", used at p = {world_size}"
            return (*base, where)
        src, f = self._in_step_at(world_size)
        c, cc = base if src == self.world_size else (float(f["contention_c"]), float(f["comm_contention_c"]))
        ps = ", ".join(map(str, sorted(fits)))
        tail = f"p = {world_size} measured" if src == world_size else f"p = {world_size} uses p = {src}'s"
        return c, cc, f"contention measured at p = {ps}; {tail}"

    def work_at(self, world_size: int | None) -> tuple[float, float]:
        """``(call_cpu_s, call_cpu_s_per_byte)``: the compute work per call and per byte fitted by the in-step
        probe serving ``world_size`` (``_in_step_at``); 0 where the probe ran at one cap only (calibrations
        before it) or the work was not identified."""
        return self._in_step_term("call_cpu_s", world_size), self._in_step_term("call_cpu_s_per_byte", world_size)

    def _in_step_term(self, key: str, world_size: int | None) -> float:
        """One term of the in-step fit serving ``world_size`` (``_in_step_at``); 0 where it is missing."""
        return float(self._in_step_at(world_size)[1].get(key) or 0.0)

    def finalize_at(self, world_size: int | None) -> float:
        """torch DDP's finalize per parameter fitted by the in-step probe serving ``world_size``; 0 where the
        probe did not run or its records predate it."""
        return self._in_step_term("finalize_s_per_param", world_size)

    def leftover_at(self, world_size: int | None) -> float:
        """The work a DDP step leaves to the next (``CostModel.leftover_s``) fitted by the in-step probe serving
        ``world_size``; 0 where the probe did not run, predates it, or could not tell it from its noise."""
        return self._in_step_term("leftover_s", world_size)

    def optimizer_extra_at(self, world_size: int | None) -> float:
        """What the optimizer of a communicating step takes beyond the profile's (``CostModel.optimizer_extra_s``),
        fitted by the in-step probe serving ``world_size``; 0 where it did not run, predates it, or could not
        tell it."""
        return self._in_step_term("optimizer_extra_s", world_size)

    def queued_scale_at(self, world_size: int | None) -> float:
        """The share of its latency part a queued call spends (``CostModel.queued_latency_scale``), fitted by the
        in-step probe serving ``world_size`` from its plain steps at a call per gradient; 1 where it did not run,
        predates the fit, or could not tell queued calls from the stream probe's."""
        v = self._in_step_at(world_size)[1].get("queued_latency_scale")
        return float(v) if v else 1.0

    @property
    def pipelined(self) -> bool:
        """One channel whose queued calls' hand-offs overlap the transfer before (``CostModel.pipelined``),
        as calibration found from its stream probe (``probes["pipelined"]``; False where it did not say)."""
        return bool(self.probes.get("pipelined")) and self.channels == 1

    def cold_call(self) -> tuple[float, float]:
        """``(cold_call_s, cold_tau_s)`` fitted from the cold-call probe (``probes["cold_call"]``), measured at
        the calibration's own world size and used at every p; ``(0, 0)`` where it did not run."""
        f = self.probes.get("cold_call") or {}
        return float(f.get("cold_call_s") or 0.0), float(f.get("cold_tau_s") or 0.0)

    @property
    def broadcast_switch_credit_s(self) -> float:
        """``CostModel.broadcast_switch_credit_s`` from the broadcast-switch probe (``probes["broadcast_switch"]``),
        measured at the calibration's own world size; 0 where it did not run or kept no credit."""
        return float((self.probes.get("broadcast_switch") or {}).get("broadcast_switch_credit_s") or 0.0)

    @property
    def broadcast_step_extra_s(self) -> float:
        """``CostModel.broadcast_step_extra_s`` from the sharded-step probe (``probes["sharded_step"]``,
        ``calibration.sharded_probe``), measured at the calibration's own world size; 0 where it did not run or
        could not tell the extra from its noise."""
        f = self.probes.get("sharded_step") or {}
        return float(f.get("broadcast_step_extra_s") or 0.0) if f.get("identified") else 0.0

    @property
    def scale_bytes_per_s(self) -> float | None:
        """``CostModel.scale_bytes_per_s``: the in-place division pass timed by the copy-in-step probe
        (``probes["scale"]``); None for calibrations from before it timed that pass."""
        v = (self.probes.get("scale") or {}).get("scale_bytes_per_s")
        return float(v) if v else None

    def fitted_terms(self, world_size: int | None) -> dict[str, Any]:
        """The headline fitted terms a prediction at ``world_size`` uses, as written beside results
        (``validate``'s summary, ``validate --timeline``'s files)."""
        k, kb = self.work_at(world_size)
        cold, tau = self.cold_call()
        return {
            "o_us": self.o_us,
            "w_gbps": self.w_gbps,
            "contention_c": self.contention_c,
            "comm_contention_c": self.comm_contention_c,
            "call_cpu_s": k,
            "call_cpu_s_per_byte": kb,
            "finalize_s_per_param": self.finalize_at(world_size),
            "leftover_s": self.leftover_at(world_size),
            "optimizer_extra_s": self.optimizer_extra_at(world_size),
            "queued_latency_scale": self.queued_scale_at(world_size),
            "cold_call_s": cold,
            "cold_tau_s": tau,
            "broadcast_switch_credit_s": self.broadcast_switch_credit_s,
            "broadcast_step_extra_s": self.broadcast_step_extra_s,
            "scale_bytes_per_s": self.scale_bytes_per_s,
            "channels": self.channels,
            "pipelined": self.pipelined,
        }

    def cost_model(self, shared_bandwidth: bool = True, world_size: int | None = None):
        """The simulator's ``CostModel`` from these parameters, in the terms a network preset has.

        Fitted across world sizes: a one-level network (``NetworkSpec.from_alpha_beta``) with the fitted
        per-call constant, per-step latency and bandwidth. One world size: the linear model, exact at
        ``world_size`` and split into the same terms with an assumed share at every other p. With
        ``world_size``, the contention factors are those measured at that p where the in-step probe
        ran at several (``contention_at``).
        """
        from simulator.network import CostModel, NetworkSpec

        c, cc, _ = self.contention_at(world_size)
        k, kb = self.work_at(world_size)
        fin = self.finalize_at(world_size)
        cold, tau = self.cold_call()
        kw: dict[str, Any] = dict(
            channels=self.channels,
            shared_bandwidth=shared_bandwidth,
            pipelined=self.pipelined,
            contention=c,
            comm_contention=cc,
            call_cpu_s=k,
            call_cpu_s_per_byte=kb,
            copy_bytes_per_s=self.copy_bytes_per_s,
            hook_s_per_param=self.hook_s_per_param(),
            finalize_s_per_param=fin,
            leftover_s=self.leftover_at(world_size),
            optimizer_extra_s=self.optimizer_extra_at(world_size),
            queued_latency_scale=self.queued_scale_at(world_size),
            cold_call_s=cold,
            cold_tau_s=tau,
            broadcast_switch_credit_s=self.broadcast_switch_credit_s,
            broadcast_step_extra_s=self.broadcast_step_extra_s,
            scale_bytes_per_s=self.scale_bytes_per_s,
            broadcast_o_s=self.broadcast.o_s if self.broadcast is not None else None,
            broadcast_w_bytes_per_s=self.broadcast.w_bytes_per_s if self.broadcast is not None else None,
            measured_world_sizes=self.measured_world_sizes,
        )
        if len(self.measured_world_sizes) >= 2:
            t = self.network_terms()
            ps = ", ".join(map(str, t.world_sizes))
            name = (
                f"fitted at p = {ps}: o={t.o_s * 1e6:.1f}us per call + {t.algorithm} "
                f"alpha={t.alpha_s * 1e6:.1f}us per step, link {8e-6 / t.beta_s_per_byte:.4g} Mbit/s"
            )
            net = NetworkSpec.from_alpha_beta(
                name,
                call_overhead_s=t.o_s,
                alpha_s=t.alpha_s,
                bw_bytes_per_s=1.0 / t.beta_s_per_byte,
                gamma_s_per_byte=t.gamma_s_per_byte,
                algorithm=t.algorithm,
                backend=self.backend,
                channels=kw["channels"],
                description=f"{self.backend} all-reduce fitted across p = {ps} by ddpsim calibrate",
                sources={"fit": f"records {', '.join(self.source_records) or '?'}"},
            )
            return CostModel(network=net, **kw)
        return CostModel.linear(self.o_s, self.w_bytes_per_s, self.world_size, **kw)

    def uncertainty(self, compute_samples_s: Sequence[float] = (), world_size: int | None = None):
        """What a prediction from these parameters inherits (``simulator.interval.Uncertainty``): the o and w
        fit's 95 % intervals, the step-to-step spread of ``compute_samples_s`` (measured compute times), the
        in-step probe's bootstrap fits of the contention terms (two factors, and the work per call and per
        byte where it was fitted), the standard errors of the leftover and the optimizer's extra where the
        probe kept them (``_kept_term_sd``), and the model's own error: at the calibration's step check where it
        ran (``sharded_probe.step_check_residual``: real steps measured and predicted as ``validate`` measures and
        predicts its rows), else at the in-step probe (``probe_step_residual``)."""
        from simulator.interval import Uncertainty

        from .sharded_probe import step_check_residual, step_check_residuals

        _, in_step = self._in_step_at(world_size)
        boot = in_step.get("bootstrap") or ()
        unc = Uncertainty.from_fit(
            self.linear.o_ci_s,
            self.linear.w_ci_bytes_per_s,
            self.linear.w_bytes_per_s,
            compute_samples_s,
            [d for d in boot if isinstance(d, (list, tuple)) and len(d) in (2, 4)],
        )
        sharded = (self.probes or {}).get("sharded_step")
        check = step_check_residual(sharded)
        return replace(
            unc,
            model_log_sd=probe_step_residual(in_step) if check is None else check,
            model_error_from="the in-step probe" if check is None else "the step check",
            model_error_steps=len(probe_step_residuals(in_step) if check is None else step_check_residuals(sharded)),
            leftover_sd_s=_kept_term_sd(in_step, "leftover"),
            optimizer_extra_sd_s=_kept_term_sd(in_step, "optimizer_extra"),
            queued_scale_sd=_kept_term_sd(in_step, "queued", "ci95"),
            broadcast_extra_sd_s=_kept_term_sd(self.probes or {}, "sharded_step"),
        )

    def hook_s_per_param(self) -> float:
        """One Python gradient hook's cost: the profile's paired hooked minus hook-free backward
        (``realrun.profile_grads``), per gradient; 0 where that is negative (noise)."""
        prof = self.compute_profile or {}
        env = (prof.get("env") or {}).get("profile") or {}
        n = sum(1 for p in prof.get("params", ()) if p.get("requires_grad", True))
        over = env.get("hook_overhead_s")
        return max(0.0, over / n) if over and n else 0.0

    # ---- (de)serialisation --------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": PARAMS_SCHEMA,
            "backend": self.backend,
            "world_size": self.world_size,
            "link_mbit": self.link_mbit,
            "o_us": self.o_us,
            "w_gbps": self.w_gbps if math.isfinite(self.w_gbps) else None,
            "linear": self.linear.to_dict(),
            "abg": self.abg.to_dict() if self.abg is not None else None,
            "contention_c": self.contention_c,
            "channels": self.channels,
            "compute_profile_path": self.compute_profile_path,
            "compute_profile": dict(self.compute_profile) if self.compute_profile is not None else None,
            "comm_contention_c": self.comm_contention_c,
            "copy_bytes_per_s": self.copy_bytes_per_s,
            "env": dict(self.env),
            "source_records": list(self.source_records),
            "probes": dict(self.probes),
            "broadcast": self.broadcast.to_dict() if self.broadcast is not None else None,
            # what `ddpsim predict --params` reads (derived; ignored on load)
            "cost_model": self.cost_model().to_dict(),
            "profile": dict(self.compute_profile) if self.compute_profile is not None else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Params:
        if not isinstance(d, Mapping):
            raise ValueError(f"params must be a JSON object, got {type(d).__name__}")
        schema = d.get("schema")
        if schema != PARAMS_SCHEMA:
            raise ValueError(
                f"params schema is {schema!r}; this ddpsim reads {PARAMS_SCHEMA!r} (re-run ddpsim calibrate)"
            )
        missing = [k for k in _REQUIRED if d.get(k) is None]
        if missing:
            raise ValueError(f"params lack required field(s): {', '.join(missing)}")
        if not isinstance(d.get("probes") or {}, Mapping):
            raise ValueError(f"params probes must be an object, got {type(d['probes']).__name__}")
        try:
            params = cls(
                backend=d["backend"],
                world_size=d["world_size"],
                linear=LinearFit.from_dict(d["linear"]),
                link_mbit=d.get("link_mbit"),
                abg=ABGFit.from_dict(d["abg"]) if d.get("abg") is not None else None,
                contention_c=d.get("contention_c"),
                channels=d.get("channels"),
                compute_profile_path=d.get("compute_profile_path"),
                compute_profile=d.get("compute_profile"),
                env=dict(d.get("env") or {}),
                source_records=tuple(d.get("source_records") or ()),
                comm_contention_c=d.get("comm_contention_c"),
                copy_bytes_per_s=d.get("copy_bytes_per_s"),
                probes=dict(d.get("probes") or {}),
                broadcast=LinearFit.from_dict(d["broadcast"]) if d.get("broadcast") else None,
            )
        except (TypeError, KeyError, AttributeError) as e:
            raise ValueError(f"params are malformed: {e}") from None
        _check_derived(d, params)
        params.check_probes()
        return params

    def check_probes(self) -> None:
        """Refuse, as one ``ValueError`` naming the field, probe entries a prediction would trip on: entries that are
        not objects where the fits read objects, ``in_step_by_p`` keys that are not world sizes, in-step terms that
        are not finite numbers >= 0; then build the cost model and the uncertainty at every world size an in-step
        fit serves, so an entry used only at some p fails here, at load, not in the middle of a prediction there."""
        for key in _PROBE_OBJECTS:
            v = self.probes.get(key)
            if v is not None and not isinstance(v, Mapping):
                raise ValueError(f"probes.{key} must be an object, got {type(v).__name__}")
        by_p = self.probes.get("in_step_by_p") or {}
        for k, fit in by_p.items():
            if not (isinstance(k, str) and k.isdigit() and int(k) >= 2):
                raise ValueError(f"probes.in_step_by_p keys must be world sizes >= 2, got {k!r}")
            if not isinstance(fit, Mapping):
                raise ValueError(f"probes.in_step_by_p.{k} must be an object, got {type(fit).__name__}")
        fits = {"in_step": self.probes.get("in_step") or {}, **{f"in_step_by_p.{k}": f for k, f in by_p.items()}}
        for where, fit in fits.items():
            for term in _IN_STEP_TERMS:
                v = fit.get(term)
                if v is not None and not (
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                ):
                    raise ValueError(f"probes.{where}.{term} must be a finite number >= 0, got {v!r}")
            boot = fit.get("bootstrap")
            if boot is not None and not (isinstance(boot, list) and all(isinstance(b, list) for b in boot)):
                raise ValueError(f"probes.{where}.bootstrap must be a list of lists")
            if where != "in_step" and ("contention_c" not in fit or "comm_contention_c" not in fit):
                raise ValueError(f"probes.{where} lacks contention_c or comm_contention_c")
        for p in sorted({self.world_size, *self.in_step_fits()}):
            try:
                self.cost_model(world_size=p)
                self.uncertainty(world_size=p)
            except (ValueError, TypeError, KeyError, AttributeError, ZeroDivisionError, OverflowError) as e:
                raise ValueError(f"a prediction at p = {p} cannot use them ({type(e).__name__}: {e})") from None

    def save(self, path: str | Path) -> Path:
        """Write atomically (temporary file, then rename): an interrupted save leaves the old file whole."""
        from simulator.jsonio import dumps_finite, write_whole

        return write_whole(path, dumps_finite(self.to_dict()) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Params:
        """Read a params file; every error is a ``ValueError`` naming the file."""
        p = Path(path)
        d = read_json(p, "params")
        try:
            return cls.from_dict(d)
        except ValueError as e:
            raise ValueError(f"params {p}: {e}") from None


def _check_derived(d: Mapping[str, Any], params: Params) -> None:
    """The headline ``o_us`` and ``w_gbps`` (top level, in ``linear`` and in ``broadcast``) are written for reading and never read: a
    file where one was edited away from the fit it is derived from (``o_s``, ``w_bytes_per_s``) is
    refused, naming the field to edit, rather than predicting from values other than the ones it shows.
    ``cost_model`` and ``profile`` are derived too (what ``predict --params`` of older versions read); they are
    rebuilt on load and not compared (their form changes between versions)."""
    fits = [("", "linear", d, params.linear), ("linear.", "linear", d.get("linear"), params.linear)]
    fits.append(("broadcast.", "broadcast", d.get("broadcast"), params.broadcast))
    for where, fit_name, block, fit in fits:
        if fit is None or not isinstance(block, Mapping):
            continue
        for key, source, value, shown_source in (
            ("o_us", f"{fit_name}.o_s", fit.o_us, f"{fit.o_s:.6g} s"),
            ("w_gbps", f"{fit_name}.w_bytes_per_s", fit.w_gbps, f"{fit.w_bytes_per_s:.6g} B/s"),
        ):
            shown = block.get(key)
            if shown is None:  # absent, or null for an unbounded w
                continue
            ok = isinstance(shown, (int, float)) and not isinstance(shown, bool)
            if ok and math.isclose(float(shown), value, rel_tol=1e-9, abs_tol=1e-12):
                continue
            raise ValueError(
                f"{where}{key} is {shown!r} but {source} = {shown_source} gives {key} = {value:.6g}: {key} is derived "
                f"and not read; edit {source} (and its interval), or re-run ddpsim calibrate"
            )


# the largest world size a params file may say it was measured at: the simulator's own bound (``ddpsim predict
# --world-size``, 2**24)
MAX_CALIBRATED_WORLD_SIZE = 1 << 24

# probe entries the fits read as objects, and the in-step terms a cost model takes as numbers
_PROBE_OBJECTS = ("in_step", "in_step_by_p", "sharded_step", "cold_call", "scale", "broadcast_switch", "contention")
_IN_STEP_TERMS = (
    "contention_c",
    "comm_contention_c",
    "call_cpu_s",
    "call_cpu_s_per_byte",
    "finalize_s_per_param",
    "leftover_s",
    "optimizer_extra_s",
    "queued_latency_scale",
)


def save_params(params: Params, path: str | Path) -> Path:
    return params.save(path)


def load_params(path: str | Path) -> Params:
    return Params.load(path)


def _kept_term_sd(in_step: Mapping[str, Any], fit_key: str, ci_key: str = "ci95_s") -> float:
    """The standard error of an in-step term (``in_step[fit_key]``'s 95 % bootstrap interval, under ``ci_key``) where
    the probe kept it (the fit says ``identified``); 0 for a term not kept or fits from before the interval was
    stored (in the 270 stored leftover and optimizer-extra fits, ``identified`` and a kept value above 0 agree)."""
    from simulator.interval import sd_of_ci

    fit = in_step.get(fit_key) or {}
    return sd_of_ci(fit.get(ci_key)) if fit.get("identified") else 0.0


def probe_step_residuals(in_step: Mapping[str, Any]) -> list[tuple[float, float, float]]:
    """``(bucket_mb, measured, simulated)`` step of each probe the calibration ran beside its fit: the fitted
    probe, the fine one and the one-bucket check, where each ran and kept its step (simulated at the fitted
    terms, the optimizer's extra added: it is fitted after the simulated steps were taken, from the same steps).
    Measured: the recorded steps' median, the steps the fit's targets (backward ends, all-reduces) came from,
    with what the recording costs in them on both sides. Checked against the plain steps beside them instead
    (the recorder off, up to 50 ms a step apart at a call per gradient), the residual carried the recording's
    cost as model error: replayed over run m44, the 80 % intervals covered 94-100 % of the rows in 10 of 12
    cells (BENCHMARKS.md, "Seventeenth session"). Where the queued calls' scale was kept
    (``step_probe.queued_fit``) the fine probe's step is what that scale was fitted to, no longer a check: it is
    left out, and the other two are simulated at the scale."""
    if not isinstance(in_step, Mapping):
        return []
    out = []
    extra = float(in_step.get("optimizer_extra_s") or 0.0)
    fitted_fine = bool((in_step.get("queued") or {}).get("identified"))
    for part in (in_step, None if fitted_fine else in_step.get("fine"), in_step.get("check")):
        if not isinstance(part, Mapping):
            continue
        try:
            m = part["measured"]
            meas = float(m["step_s"])
            sim = float(part["simulated_at_fit"]["step_s"]) + extra
            mb = float(part.get("bucket_mb") or in_step.get("bucket_mb") or 0.0)
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(meas) and math.isfinite(sim) and meas > 0 and sim > 0:
            out.append((mb, meas, sim))
    return out


def probe_step_residual(in_step: Mapping[str, Any]) -> float:
    """The root mean square of ``log(simulated / measured)`` of the in-step probe's step time at the
    fitted terms, over the caps it ran at (``probe_step_residuals``: two, three with the one-bucket check,
    one before the fine probe): the fit matches the probes' backward ends and summed all-reduce times,
    not their steps, so the steps are checks the calibration carries out of its own fit, on real DDP
    configurations; the one-bucket probe's whole step is out of the fit. It stands for what the model's
    terms do not capture (a prediction's error beyond its inputs' errors); 0 when the probe did not
    run or kept no step times. Both fitted caps, not the coarse one alone: with the targets taken across
    ranks the coarse probe's residual fell to 1-3 % on loopback, under the 4-6 % the validation rows
    miss by (BENCHMARKS.md, "Ranks apart": coverage of the 80 % interval below 75 % in 23 of 52 cells
    with one cap, 17 with both). Two residuals, though, make a poor estimate of a spread: over the 36 cells
    of runs m41-m43 it ran 0.3-12.5 %, and the cells' coverage followed it (88-100 % in 7 of the 9 where it
    was over 5 %; 6-65 % in 5 of the 15 where it was under 1.5 %): hence the third probe (BENCHMARKS.md,
    "Seventeenth session")."""
    res = [math.log(sim / meas) for _, meas, sim in probe_step_residuals(in_step)]
    return math.sqrt(sum(r * r for r in res) / len(res)) if res else 0.0
