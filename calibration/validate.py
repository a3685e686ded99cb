"""``ddpsim validate``: run configurations for real and in the simulator, and compare.

For each (strategy, bucket size): real ranks time warm-up then many steps,
configurations interleaved beside a compute-only baseline in copies, one step
a turn, or turns of several steps of one configuration where the step is short
(``measure_beside_compute``, ``baseline_order``, ``auto_block``); the
simulator predicts the same configuration from the fitted parameters, and a
row records measured median and spread, predicted step, measured and predicted
exposed overhead, and the signed error. Step records are appended to a JSONL
file after every round, so an interrupted validation keeps what it had.

Summary: median and worst absolute error; per bucketed strategy, the predicted
best bucket, the measured best, and the predicted best's measured gap to the
best with a 95 % bootstrap interval (steps paired where the two ran in one
group): within the noise, or behind beyond it.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from calibration.probes import SMALL_CALL_BYTES, SMALL_CALL_WARMUP, SMALL_CALLS, fit_call_modes
from realrun.cpushare import add_threads
from realrun.stats import TimeSummary, gap_interval, median_ci, spread_pct, steps_for_time, summarize
from simulator.jsonio import from_fields, to_fields
from simulator.predict import predict
from simulator.profile import GradProfile
from simulator.strategies import STRATEGIES, StrategySpec, strategy

from .params import Params

VALIDATION_SCHEMA = "ddpsim.validation/1"
DEFAULT_BUCKETS_MB = (0.25, 1.0, 4.0, 16.0, 64.0, 256.0)
DEFAULT_BLOCK = 10
SHORT_STEP_S = 0.05
"""Turns of ``DEFAULT_BLOCK`` timed steps of one configuration (after one untimed step) where the predicted step is
under ``SHORT_STEP_S``; one timed step a turn otherwise (``auto_block``). A training job steps one configuration
after itself, and a step's time depends on the step before it: on this project's 2-core VM a micro-DLRM DDP step
on loopback leaves 0.25-0.54 ms of work running that the next step pays, and a one-bucket DDP step after a DDP
step runs about 1 ms longer than after a compute-only one. One step a turn (every run to m33) measured its rows
after other configurations' steps and the compute-only baseline after DDP steps, which hid a 17-20 % miss of
the model's on micro-DLRM's one-bucket rows. Under 50 ms such work is 1 % of a step or more; over it, one step
a turn keeps the drift between configurations cancelling step by step (in turns of 10, gpt's rows' own noise
over 1000 Mbit/s grew from +-1.8 to +-6.2 %), and gpt, cnn and lib met both error goals in either order
(BENCHMARKS.md, "Eleventh session")."""


def auto_block(est_step_s: float | None) -> int:
    """``DEFAULT_BLOCK`` for a predicted step under ``SHORT_STEP_S``, else 1 (also when none was predicted)."""
    return DEFAULT_BLOCK if est_step_s is not None and 0 < est_step_s < SHORT_STEP_S else 1


def warmup_turns(warmup: int, block: int) -> int:
    """``warmup`` untimed steps as the whole turns of ``block`` + 1 steps that a measurement in turns counts
    (``warmup`` itself for one step a turn)."""
    return warmup if block == 1 else -(-warmup // (block + 1))


def order_cost(cost: Any, rescale: bool, block: int) -> Any:
    """``cost`` as a measurement in this order sees it: without ``leftover_s`` where the profile is rescaled
    to compute-only steps measured one step a turn (``block`` 1). In ``validate``'s groups those follow DDP
    steps, as the DDP steps beside them do, so both carry what a DDP step leaves to the next and the rescale
    counts it once (BENCHMARKS.md, "Eleventh session"); in a timeline's one step a turn (``measure_timeline``:
    (DDP, bare), (bare, DDP), ...) half of each side follows a DDP step, and the rescale takes in about half
    on both sides. In turns (a training job's order) the compute-only steps follow their own, and without a
    rescale the profile is the calibration's own compute-only steps: there the leftover is the model's to add.
    ``leftover_used`` says which."""
    if not leftover_used(rescale, block) and getattr(cost, "leftover_s", 0.0):
        return replace(cost, leftover_s=0.0)
    return cost


def rescaled_profile(
    prof: GradProfile, compute_median_s: float | None, rescale: bool = True
) -> tuple[GradProfile, float]:
    """The profile a measured configuration is predicted from: its compute scaled to the median of the compute-only
    steps measured beside it (``rescale``; the compute profile re-taken at measurement time), and that factor; the
    profile as it is and 1 without a rescale, a median or a compute time. ``validate``'s rows, ``--timeline``,
    ``tune --verify`` and the step check (``sharded_probe.check_rows``) all predict so."""
    if not (rescale and compute_median_s and prof.compute_s > 0):
        return prof, 1.0
    scale = compute_median_s / prof.compute_s
    return (prof.scaled(scale) if scale != 1.0 else prof), scale


def leftover_used(rescale: bool, block: int) -> bool:
    """Whether predictions compared with steps measured in this order add the leftover (``order_cost``)."""
    return not (rescale and block == 1)


def turns_note(block: int) -> str:
    """What a result's method adds for turns of ``block`` timed steps ("" for one step a turn); read back by
    ``benchmarks/explain_misses.py``."""
    return f", turns of {block} timed steps after an untimed one" if block > 1 else ""


@dataclass(frozen=True)
class ValidateSpec:
    model: str = "gpt"
    strategies: tuple[str, ...] = STRATEGIES
    bucket_mb: tuple[float | None, ...] = DEFAULT_BUCKETS_MB  # None: torch's default (bucket_cap_mb unset)
    world_size: int | None = None  # default: the params' world size
    batch_size: int | None = None
    steps: int = 20
    warmup: int = 3
    optimizer: str = "sgd"
    out: str = "validation.jsonl"
    min_seconds: float = 0.0  # timed seconds per configuration at least (realrun.stats.steps_for_time; CLI default 1)
    timeout_s: float = 900.0
    rounds: int = 2
    group_size: int = 12
    rescale_compute: bool = True
    block: int | None = None  # timed steps a turn (``measure_interleaved``); None: ``auto_block``
    small_calls: int = SMALL_CALLS  # 4 KiB all-reduces one at a time before each group (``small_call_probe``); 0: none

    def __post_init__(self) -> None:
        for s in self.strategies:
            strategy(s)  # the registry's ValueError for an unknown name
        if any(b is not None and not (math.isfinite(b) and b > 0) for b in self.bucket_mb):
            raise ValueError(f"bucket sizes must be finite numbers > 0 MiB, got {list(self.bucket_mb)}")
        if self.steps < 3:
            raise ValueError(f"--steps must be >= 3 to report a spread, got {self.steps}")
        if not (math.isfinite(self.min_seconds) and self.min_seconds >= 0):
            raise ValueError(f"--min-seconds must be a finite number >= 0, got {self.min_seconds!r}")
        if self.rounds < 1 or self.group_size < 1:
            raise ValueError(f"rounds and group size must be >= 1, got {self.rounds}, {self.group_size}")
        if self.block is not None and self.block < 1:
            raise ValueError(f"--block must be >= 1, got {self.block}")
        if self.small_calls < 0:
            raise ValueError(f"--small-calls must be >= 0, got {self.small_calls}")
        if not self.configs():
            raise ValueError(
                f"nothing to run: {', '.join(self.strategies)} need{'s' if len(self.strategies) == 1 else ''} a bucket "
                "size in MiB ('default' applies to torch-ddp and sharded only)"
            )

    def configs(self) -> list[StrategySpec]:
        """One configuration per strategy without buckets, one per size for the rest; a size of None (torch's
        default, ``bucket_cap_mb`` unset) only for the strategies that have a default (torch-ddp, sharded)."""
        out = []
        for s in self.strategies:
            entry = strategy(s)
            if entry.bucketed:
                out += [
                    StrategySpec(s, bucket_mb=b)
                    for b in dict.fromkeys(self.bucket_mb)
                    if b is not None or not entry.needs_bucket_size
                ]
            else:
                out.append(StrategySpec(s))
        return out


@dataclass(frozen=True)
class RowPrediction:
    """The simulator's side of one validation row: the predicted step, its parts, its 80 % interval."""

    predicted_step_s: float
    predicted_exposed_s: float
    predicted_compute_s: float
    n_buckets: int
    predicted_p10_s: float
    predicted_p90_s: float
    interval_sources: tuple[str, ...]


# fields a row written before they were kept lacks: written only where known
_OPTIONAL_KEYS = ("measured_median_ci_s", "compute_median_ci_s", "noise_pct", "measured_mean_s", "round_medians_s")


@dataclass(frozen=True)
class ValidationRow:
    """One configuration measured and predicted (``make_row``); its JSON is its fields, in this order."""

    strategy: str
    bucket_mb: float | None
    bucket_cap_mb_list: tuple[float, ...] | None
    measured_median_s: float
    measured_p10_s: float
    measured_p90_s: float
    measured_compute_s: float
    measured_exposed_s: float
    predicted_step_s: float
    predicted_exposed_s: float
    predicted_compute_s: float
    n_buckets: int
    predicted_p10_s: float
    predicted_p90_s: float
    interval_sources: tuple[str, ...]
    error_pct: float
    link_mbit: float | None = None
    compute_scale: float = 1.0
    # the measurement's own error: 95 % confidence intervals of the measured median and of the
    # compute-only median the prediction is scaled to (``realrun.stats.median_ci``), and how far the
    # error can move from the two alone (``noise_pct``); None in rows written before they were kept
    measured_median_ci_s: tuple[float, float] | None = None
    compute_median_ci_s: tuple[float, float] | None = None
    noise_pct: float | None = None
    # the mean of the measured steps, and the median of each round's (``round_medians``): whether the measurement
    # repeats. None in rows written before they were kept, and the rounds where there was one or they cannot be told
    measured_mean_s: float | None = None
    round_medians_s: tuple[float, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Its fields; the optional ones only where known (a row read from an older file writes back the same)."""
        d = to_fields(self)
        for k in _OPTIONAL_KEYS:
            if d[k] is None:
                del d[k]
        return d

    @property
    def beyond_noise(self) -> bool | None:
        """Whether the error is larger than what the two medians' sampling errors alone can make."""
        return None if self.noise_pct is None else abs(self.error_pct) > self.noise_pct

    @property
    def rounds_apart_pct(self) -> float | None:
        """How far the rounds' medians lie apart (``realrun.stats.spread_pct``); None with one round."""
        return spread_pct(self.round_medians_s)

    @property
    def error_vs_mean_pct(self) -> float | None:
        """The prediction's error against the mean of the measured steps (None where the mean was not kept)."""
        m = self.measured_mean_s
        return None if not m else (self.predicted_step_s - m) / m * 100.0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ValidationRow:
        return from_fields(cls, d, what="validation row")


def predicted_row(
    profile: GradProfile,
    params: Params,
    spec: StrategySpec,
    world_size: int,
    compute_steps_s: Sequence[float] = (),
    steps: int | None = 1,
    cost: Any = None,
) -> RowPrediction:
    """The prediction of one configuration, with its 80 % interval (of one step, or of the median of
    ``steps`` measured steps) over the fit's and the in-step probe's errors and the step-to-step
    spread of ``compute_steps_s`` (the compute-only steps measured beside it). ``cost``: the params' own
    cost model at ``world_size`` unless given (``order_cost``'s, for a measurement's order)."""
    from simulator.interval import step_interval

    if cost is None:
        cost = params.cost_model(world_size=world_size)
    res = predict(profile, cost, spec, world_size)
    unc = params.uncertainty(compute_steps_s, world_size=world_size)
    iv = step_interval(profile, cost, spec, world_size, unc, steps=steps)
    return RowPrediction(
        predicted_step_s=res.step_time_s,
        predicted_exposed_s=res.overhead_s,
        predicted_compute_s=res.compute_s,
        n_buckets=res.n_collectives,
        predicted_p10_s=iv.lo_s,
        predicted_p90_s=iv.hi_s,
        interval_sources=tuple(iv.sources),
    )


def make_row(
    spec: StrategySpec,
    measured: TimeSummary,
    compute_median_s: float,
    pred: RowPrediction,
    *,
    link_mbit: float | None,
    compute_scale: float,
    measured_ci_s: tuple[float, float] | None = None,
    compute_ci_s: tuple[float, float] | None = None,
    round_medians_s: Sequence[float] | None = None,
) -> ValidationRow:
    """The one place a validation row is made: the measured steps, the compute-only median beside them,
    and the prediction; the error is the prediction's against the measured median. With both medians'
    95 % intervals, ``noise_pct`` is their relative half-widths added in quadrature: the error the two
    samples' own scatter can make (the prediction moves with the compute median; an upper estimate
    where both drift together, as interleaved steps do)."""
    m = measured.median_s
    noise = None
    if measured_ci_s is not None and compute_ci_s is not None and m > 0 and compute_median_s > 0:
        hm = (measured_ci_s[1] - measured_ci_s[0]) / 2 / m
        hc = (compute_ci_s[1] - compute_ci_s[0]) / 2 / compute_median_s
        noise = math.hypot(hm, hc) * 100.0
    return ValidationRow(
        strategy=spec.name,
        bucket_mb=spec.bucket_mb,
        bucket_cap_mb_list=tuple(spec.bucket_cap_mb_list) if spec.bucket_cap_mb_list else None,
        measured_median_s=m,
        measured_p10_s=measured.p10_s,
        measured_p90_s=measured.p90_s,
        measured_compute_s=compute_median_s,
        measured_exposed_s=m - compute_median_s,
        **{f.name: getattr(pred, f.name) for f in fields(pred)},
        error_pct=(pred.predicted_step_s - m) / m * 100.0,
        link_mbit=link_mbit,
        compute_scale=compute_scale,
        measured_median_ci_s=measured_ci_s,
        compute_median_ci_s=compute_ci_s,
        noise_pct=noise,
        measured_mean_s=measured.mean_s,
        round_medians_s=tuple(round_medians_s) if round_medians_s else None,
    )


def summarize_rows(
    rows: Sequence[ValidationRow], steps: Sequence[tuple[Sequence[float], Sequence[float]]] | None = None
) -> dict[str, Any]:
    """Errors, coverage and, per bucketed strategy, the predicted best bucket against the measured best.

    ``steps``: per row, its measured step times and its group's compute-only step times (as
    ``measure_beside_compute`` returns them). With them the predicted best's gap to the measured best gets a
    95 % bootstrap interval (``realrun.stats.gap_interval``): the steps resampled in pairs where the two
    configurations were stepped in turn in one group (the same compute-only steps and as many steps),
    each on its own otherwise; ``within_noise`` is then "the interval reaches 0". Without them (rows read
    from a summary), or with fewer than 3 steps a row, it is the p10-p90 overlap of the two rows. The measured
    best is the lowest of several noisy medians, which leans the gap up: "behind beyond the noise" with a
    lower end near 0 is weak evidence (``tune --verify``'s interval has the same lean)."""
    if not rows:
        raise ValueError("no configuration was measured")
    if steps is not None and len(steps) != len(rows):
        raise ValueError(f"{len(steps)} rows of steps for {len(rows)} rows")
    errs = [abs(r.error_pct) for r in rows]
    with_iv = [r for r in rows if r.interval_sources]
    covered = [r for r in with_iv if r.predicted_p10_s <= r.measured_median_s <= r.predicted_p90_s]
    out: dict[str, Any] = {
        "interval_coverage": len(covered) / len(with_iv) if with_iv else None,
        "n_with_interval": len(with_iv),
        "median_abs_error_pct": statistics.median(errs),
        "worst_abs_error_pct": max(errs),
        "n_configs": len(rows),
        # rows whose error is larger than the two medians' sampling errors can make (of those that say)
        "n_beyond_noise": sum(1 for r in rows if r.beyond_noise),
        "n_with_noise": sum(1 for r in rows if r.noise_pct is not None),
        "rounds_apart": rounds_apart(rows, steps),
        "best_bucket": {},
    }
    first_bucketed = None
    for strat in dict.fromkeys(r.strategy for r in rows):
        ks = [k for k, r in enumerate(rows) if r.strategy == strat and r.bucket_mb is not None]
        if len(ks) < 2:
            continue
        kp = min(ks, key=lambda k: rows[k].predicted_step_s)
        km = min(ks, key=lambda k: rows[k].measured_median_s)
        pb, mb = rows[kp], rows[km]
        gap = (pb.measured_median_s - mb.measured_median_s) / mb.measured_median_s * 100.0
        ci, by = _best_gap_interval(kp, km, steps) if kp != km else (None, None)
        out["best_bucket"][strat] = {
            "predicted_best_mb": pb.bucket_mb,
            "measured_best_mb": mb.bucket_mb,
            "predicted_best_measured_gap_pct": gap,
            "same": pb.bucket_mb == mb.bucket_mb,
            "within_noise": kp == km or (ci[0] <= 0 if ci is not None else pb.measured_p10_s <= mb.measured_p90_s),
            # the gap's 95 % interval and how it was drawn ("paired", "unpaired"); None where the two are one
            # row, or without the steps (then within_noise is the p10-p90 overlap)
            "gap_ci_pct": ci,
            "gap_ci_steps": by,
        }
        if first_bucketed is None or strat == "torch-ddp":
            first_bucketed = strat
    if first_bucketed is not None:
        bb = out["best_bucket"][first_bucketed]
        out["best_bucket_strategy"] = first_bucketed
        out["best_bucket_mb_predicted"] = bb["predicted_best_mb"]
        out["best_bucket_mb_measured"] = bb["measured_best_mb"]
    else:
        out["best_bucket_mb_predicted"] = out["best_bucket_mb_measured"] = None
    return out


WORST_GOAL_PCT = 10.0  # issue 10's goal for a cell's worst row; rounds further apart cannot be judged to it


def rounds_apart(
    rows: Sequence[ValidationRow], steps: Sequence[tuple[Sequence[float], Sequence[float]]] | None = None
) -> dict[str, Any] | None:
    """Whether the measured medians repeat: per row how far its rounds' medians lie apart (``rounds_apart_pct``),
    their median and worst over the rows, the worst row with its rounds' medians, the prediction's error against
    its steps' median and mean, and how many rows moved ``WORST_GOAL_PCT`` or more between rounds (there a row's
    error cannot be judged to the worst-row goal). With ``steps`` (per row its steps and its group's compute-only
    steps, as ``summarize_rows`` takes them), how far the compute-only steps beside the worst row moved between the
    same rounds: drift the two share is the machine's, which the prediction follows in part (it is rescaled to the
    compute-only median). None where no row was measured in two rounds or more."""
    apart = [(r.rounds_apart_pct, k, r) for k, r in enumerate(rows) if r.rounds_apart_pct is not None]
    if not apart:
        return None
    pct, k, worst = max(apart, key=lambda a: a[0])
    n_rounds = len(worst.round_medians_s or ())
    baseline = spread_pct(round_medians(steps[k][1], n_rounds)) if steps is not None else None
    return {
        "n_rounds": n_rounds,
        "median_pct": statistics.median(a[0] for a in apart),
        "worst_pct": pct,
        "worst_row": config_label(worst.strategy, worst.bucket_mb, worst.bucket_cap_mb_list),
        "worst_round_medians_s": list(worst.round_medians_s or ()),
        "worst_compute_apart_pct": baseline,
        "worst_predicted_s": worst.predicted_step_s,
        "worst_error_pct": worst.error_pct,
        "worst_error_vs_mean_pct": worst.error_vs_mean_pct,
        "n_rows_apart_beyond_goal": sum(1 for a in apart if a[0] >= WORST_GOAL_PCT),
        "n_rows": len(apart),
    }


def config_label(
    strategy: str, bucket_mb: float | None, caps: Sequence[float] | None = None, unit: str = " MiB"
) -> str:
    """A configuration in words: "torch-ddp 4 MiB", "torch-ddp default", "individual", "torch-ddp caps 1,4 MiB"
    (``unit`` after the sizes)."""
    if caps:
        return f"{strategy} caps {','.join(f'{c:g}' for c in caps)}{unit}"
    b = bucket_text(strategy, bucket_mb, unit)
    return strategy if b == "-" else f"{strategy} {b}"


def bucket_text(strategy_name: str, bucket_mb: float | None, unit: str = "") -> str:
    """A row's bucket column: the size (``unit`` after it), ``default`` where a strategy with buckets ran with
    ``bucket_cap_mb`` unset (torch's 25 MiB and 1 MiB first bucket), ``-`` for a strategy without buckets (or a name
    not registered)."""
    if bucket_mb is not None:
        return f"{bucket_mb:g}{unit}"
    try:
        return "default" if strategy(strategy_name).bucketed else "-"
    except ValueError:
        return "-"


def rounds_line(ra: Mapping[str, Any], placement: bool = False) -> str:
    """``rounds_apart`` in words: how far a configuration's measured median moved between the rounds (and the
    compute-only steps beside the one that moved most), and where a row moved as much as the worst-row goal, that
    row's error against its steps' median and mean, with ``placement`` (CPU ranks) the cause measured here
    (``PLACEMENT_HINT``)."""
    meds = " then ".join(f"{m * 1e3:.2f}" for m in ra["worst_round_medians_s"])
    base = ra.get("worst_compute_apart_pct")
    line = (
        f"rounds: a configuration's measured median moved between the {ra['n_rounds']} rounds by "
        f"{ra['median_pct']:.1f} % (median over {ra['n_rows']} configurations), at most {ra['worst_pct']:.1f} % "
        f"({ra['worst_row']}: {meds} ms"
        + (f"; the compute-only steps beside it {base:.1f} %" if base is not None else "")
        + ")"
    )
    k = ra["n_rows_apart_beyond_goal"]
    if not k:
        return line + f": within the worst-row goal ({WORST_GOAL_PCT:g} %)"
    vs_mean = ra.get("worst_error_vs_mean_pct")
    return (
        line + f"; {k} of {ra['n_rows']} moved {WORST_GOAL_PCT:g} % or more: their measured medians do not hold to the "
        f"worst-row goal, and their errors say little"
        + (
            f" ({ra['worst_row']}: {ra['worst_error_pct']:+.1f} % against its median, {vs_mean:+.1f} % against its "
            f"steps' mean)"
            if vs_mean is not None
            else ""
        )
        + (PLACEMENT_HINT if placement else "")
    )


# one cause of CPU ranks' medians that do not repeat, measured (BENCHMARKS.md, "Twenty-eighth session")
PLACEMENT_HINT = (
    "; one cause measured on a 2-core VM: where the scheduler puts the ranks' threads when they outnumber the cores "
    '(README, "Where the ranks\' threads run")'
)


def _best_gap_interval(
    i_pred: int, i_meas: int, steps: Sequence[tuple[Sequence[float], Sequence[float]]] | None
) -> tuple[tuple[float, float] | None, str | None]:
    """The 95 % interval of row ``i_pred``'s measured median over row ``i_meas``'s, less 1, in %, and
    "paired" or "unpaired": paired where both rows hold the same compute-only steps (one group, stepped in
    turn) and as many steps of their own."""
    if steps is None:
        return None, None
    (a, comp_a), (b, comp_b) = steps[i_pred], steps[i_meas]
    paired = len(a) == len(b) and list(comp_a) == list(comp_b)
    ci = gap_interval(a, b, paired=paired)
    return ci, (None if ci is None else ("paired" if paired else "unpaired"))


def check_profile_matches(params: Params, model: str, batch_size: int | None) -> GradProfile:
    prof = params.profile()
    if prof is None:
        raise ValueError("the params file holds no compute profile; run `ddpsim calibrate --model ...` first")
    probes = params.probes or {}
    if probes.get("model") not in (None, model):
        raise ValueError(
            f"params were calibrated on model {probes.get('model')!r}, not {model!r}: "
            f"run `ddpsim calibrate --model {model}` for this model"
        )
    if batch_size is not None and probes.get("batch_size") not in (None, batch_size):
        raise ValueError(f"params were calibrated at batch size {probes.get('batch_size')}, not {batch_size}")
    return prof


def typical_step_s(profile: GradProfile, cost: Any, configs: Sequence[StrategySpec], world_size: int) -> float:
    """The median predicted step over ``configs``: what ``steps_for_time`` sizes the measurement by."""
    return float(statistics.median(predict(profile, cost, c, world_size).step_time_s for c in configs))


def baseline_order(n: int) -> list[int | None]:
    """The stepping order of a group of ``n`` configurations beside the compute-only baseline:
    member indices, and ``None`` for a copy of the bare module.

    The baseline's median is subtracted from every member's, so its error is shared by all ``n``
    rows: in run m17 (gpt, 1000 Mbit/s) eight compute-only steps, four of them 187-212 ms among
    162-169 ms, put the median 13 ms high and every row of the group 3-5 % long; the same
    calibration with three times the steps measured 0.7 % (BENCHMARKS.md). Comparing ``n``
    treatments with one control, the control's share that minimises the differences' summed
    variance is sqrt(n) times a treatment's, so the group holds round(sqrt(n)) copies, spread evenly.
    No copy stands at either end (for ``n`` >= 2): a step after its own model's step runs warm (run
    m18, micro-DLRM: the copy at the head, half its steps after itself as the order reversed, 4-6 %
    faster than the two after configurations); ``measure_interleaved`` now steps another
    configuration between turns, so no timed step follows its own model's, and every copy follows a
    configuration's step either way."""
    copies = max(1, round(math.sqrt(n)))
    heads = {min(n - 1, int((j + 0.5) * n / copies + 0.5)) for j in range(copies)} if n > 1 else {0}
    order: list[int | None] = []
    for k in range(n):
        if k in heads:
            order.append(None)
        order.append(k)
    return order or [None]


def measure_beside_compute(
    pool: Any,
    model: str,
    configs: list[StrategySpec],
    labels: list[str],
    batch_size: int,
    *,
    rounds: int,
    steps: int,
    warmup: int,
    optimizer: str,
    group_size: int,
    writer: Any,
    env: dict[str, Any],
    link_mbit: float | None,
    say: Callable[[str], None],
    min_seconds: float = 0.0,
    est_step_s: float | None = None,
    block: int = 1,
    small_calls: int = 0,
    small_records: list[dict[str, Any]] | None = None,
) -> tuple[int, list[list[float]], list[list[float]]]:
    """Step ``configs`` for real beside a compute-only baseline; the measuring half of ``validate``
    and ``tune --verify``.

    This box's timing drifts by more than the differences being measured, so
    configurations are not run one after another: up to ``group_size`` of them
    and copies of the bare module (``baseline_order``) are built side by side and
    stepped in turn (A B C, C B A, ...), over ``rounds`` rounds whose ``ddp_step``
    records are written as each round ends. Drift then hits all alike. Each turn
    is one untimed step then up to ``block`` timed ones of the same configuration
    (a training job's order; ``auto_block``), or with ``block`` 1 one timed
    step after another configuration's; ``warmup`` untimed steps first. ``steps``
    in all per configuration (per baseline copy), more where steps of about
    ``est_step_s`` would not fill ``min_seconds`` (``steps_for_time``). With
    ``small_calls``, that many small all-reduces before each group
    (``small_call_probe``), their records written and added to ``small_records``. Returns
    the steps per round, and per configuration its step times and its group's
    compute-only times (all copies').
    """
    from realrun.bench_ddp import measure_interleaved
    from realrun.records import make_record

    total = steps_for_time(steps, min_seconds, est_step_s)
    steps_per_round = max(2, total // rounds)
    warm_turns = warmup_turns(warmup, block)  # measure_interleaved counts turns where block > 1
    if total > steps and est_step_s is not None:
        say(
            f"{steps_per_round * rounds} steps per configuration instead of {steps}: steps of about "
            f"{est_step_s * 1e3:.1f} ms (predicted) would not fill {min_seconds:g} s (--min-seconds)"
        )
    groups = [list(range(k, min(k + group_size, len(configs)))) for k in range(0, len(configs), group_size)]
    times: list[list[float]] = [[] for _ in configs]
    compute: list[list[float]] = [[] for _ in groups]
    for rnd in range(rounds):
        for g, members in enumerate(groups):
            order = [None if i is None else members[i] for i in baseline_order(len(members))]
            copies = order.count(None)
            say(
                f"round {rnd + 1}/{rounds}, group {g + 1}/{len(groups)}: compute-only"
                f"{f' ({copies} copies)' if copies > 1 else ''} + {len(members)} configurations "
                f"interleaved, {steps_per_round} steps each"
            )
            if small_calls > 0:
                rec = small_call_probe(pool, small_calls, env, link_mbit, round=rnd, group=g)
                writer.write(rec)
                if small_records is not None:
                    small_records.append(rec)
            cfgs = [
                ("compute", None)
                if k is None
                else (configs[k].name, configs[k].bucket_mb, configs[k].bucket_cap_mb_list)
                for k in order
            ]
            res = measure_interleaved(pool, model, cfgs, batch_size, steps_per_round, warm_turns, optimizer, block)
            copy = 0
            for k, r in zip(order, res):
                if k is None:
                    compute[g] += r.step_times_s
                    extra = {"baseline_copy": copy} if copies > 1 else {}
                    copy += 1
                else:
                    times[k] += r.step_times_s
                    extra = {}
                label = "compute" if k is None else labels[k]
                writer.write(
                    make_record(
                        "ddp_step",
                        env,
                        round=rnd,
                        group=g,
                        setting=label,
                        link_mbit=link_mbit,
                        block=block,
                        **extra,
                        **r.to_dict(),
                    )
                )
    return steps_per_round, times, [compute[k // group_size] for k in range(len(configs))]


def small_call_probe(
    pool: Any, calls: int, env: dict[str, Any], link_mbit: float | None, **where: Any
) -> dict[str, Any]:
    """``calls`` all-reduces of ``SMALL_CALL_BYTES``, one at a time (a barrier before each, as the calibration's
    sweep times them), after ``SMALL_CALL_WARMUP`` untimed: an ``allreduce`` record (a call's time is its slowest
    rank's) with the ranks' thread time, marked ``probe`` and with ``where`` (round, group)."""
    from realrun.bench_allreduce import AllreduceBenchSpec, measure, point_record

    spec = AllreduceBenchSpec(
        backend=pool.backend,
        world_sizes=(pool.world_size,),
        sizes_bytes=(SMALL_CALL_BYTES,),
        impls=("native",),
        link_mbit=link_mbit,
    )
    m = pool.run(measure, ("native",), SMALL_CALL_BYTES // 4, spec.dtype, calls, SMALL_CALL_WARMUP)[0]
    rec = point_record(
        spec,
        "native",
        pool.world_size,
        SMALL_CALL_BYTES,
        calls,
        SMALL_CALL_WARMUP,
        m["per_impl"]["native"],
        env,
        "validate-small-calls",
        m["wrong"]["native"],
    )
    threads = {"threads_ns": m["threads"], "threads_calls": m["timed_calls"]} if m.get("threads") else {}
    return {**rec, "probe": "small calls beside validation", **threads, **where}


def small_calls_beside(records: Sequence[Mapping[str, Any]], params: Params, world_size: int) -> dict[str, Any] | None:
    """The small calls measured beside validation (``small_call_probe``'s records, pooled) split as the
    calibration's sweep was (``fit_call_modes``), set against the calibration's own split at the same size:
    ``msg_bytes``; ``validation``, the split; ``mean_call_s``, a call on average (the fast calls' median plus the
    stalled share of the stalls' median); ``calibration_slow_share`` and ``calibration_mean_call_s``, the same of
    the calibration's calls of that size (None where it kept no split). None without records."""
    recs = [r for r in records if r.get("times_s")]
    if not recs:
        return None
    threads = functools.reduce(add_threads, (r.get("threads_ns") or {} for r in recs), {})
    pooled = {
        **recs[0],
        "times_s": [t for r in recs for t in r["times_s"]],
        "threads_ns": threads,
        "threads_calls": sum(int(r.get("threads_calls", 0)) for r in recs) if threads else 0,
    }
    here = fit_call_modes([pooled], world_size)
    if here is None:
        return None
    size = str(int(pooled["msg_bytes"]))
    cal = (params.probes or {}).get("call_modes") if params.world_size == world_size else None
    cal = cal or {}
    share = cal.get("slow_share_by_size", {}).get(size)
    fast = cal.get("fast_median_by_size_s", {}).get(size)  # calibrations before the twenty-sixth session: none
    late = cal.get("slow_late_median_by_size_s", {}).get(size)
    known = None not in (share, fast, late)
    return {
        "msg_bytes": int(pooled["msg_bytes"]),
        "validation": here,
        "mean_call_s": here["fast_median_s"] + here["slow_share"] * here["slow_late_median_s"],
        "calibration_slow_share": share if known else None,
        "calibration_mean_call_s": fast + share * late if known else None,
    }


def small_calls_line(sc: Mapping[str, Any]) -> str:
    """``small_calls_beside`` in words."""
    v = sc["validation"]
    kib = sc["msg_bytes"] >> 10
    out = (
        f"small calls beside the rows ({v['calls']} of {kib} KiB, one at a time, before each group): "
        f"{v['slow_share']:.0%} stalled"
        + (f" {v['slow_late_median_s'] * 1e3:.2f} ms more" if v["slow_share"] else "")
        + f", {sc['mean_call_s'] * 1e3:.2f} ms a call on average"
    )
    if sc.get("calibration_mean_call_s") is None:
        return out + "; the calibration kept no split at this size and world size to set it against"
    d = sc["mean_call_s"] - sc["calibration_mean_call_s"]
    out += (
        f"; in the calibration {sc['calibration_slow_share']:.0%} of its {kib} KiB calls stalled, "
        f"{sc['calibration_mean_call_s'] * 1e3:.2f} ms a call"
    )
    if abs(d) < 0.1 * sc["calibration_mean_call_s"]:
        return out + ": the small calls cost what they did while calibrating"
    return (
        out + f": a small call {abs(d) * 1e3:.2f} ms {'dearer' if d > 0 else 'cheaper'} than calibrated, and "
        f"configurations of many calls with it (a call the step exposes moves it by about that much)"
    )


# The compute-only baseline repeats the same work: on a quiet machine its steps agree to a few
# percent. A wider p10-p90 spread means other work shares the cores (or the clock drifts), and
# errors inside it cannot be told from noise.
NOISY_SPREAD_PCT = 15.0


BUSY_SHARE = 0.25  # other work on a quarter of the cores or more while measuring: the machine was busy


def machine_noise(
    compute_times_s: Sequence[float], loadavg: Sequence[float] | None, other_cores: float | None = None
) -> dict[str, Any]:
    """How busy the machine was while validating: the compute-only baseline's own step-to-step
    spread (p10-p90 over its median), the load average before, and the cores other work kept busy
    while measuring (``realrun.cpushare``: CPU time besides this run's own); ``noisy`` when the spread
    exceeds ``NOISY_SPREAD_PCT``, ``busy`` when other work held ``BUSY_SHARE`` of the cores or more
    (unknown: when the load average was half the cores or more)."""
    from realrun.launch import usable_cpus

    s = summarize(list(compute_times_s))
    spread = (s.p90_s - s.p10_s) / s.median_s * 100.0 if s.median_s > 0 else 0.0
    cores = usable_cpus()
    noisy = spread > NOISY_SPREAD_PCT
    # unknown (a span under a second, no psutil): not "busy"; the load average cannot say it, since after a
    # calibration or a profile it holds this run's own ranks (tune --verify of a tiny model: load 1.3 on 2 cores)
    busy = other_cores is not None and other_cores >= BUSY_SHARE * cores
    return {
        "baseline_spread_pct": spread,
        "baseline_steps": len(compute_times_s),
        "loadavg": list(loadavg) if loadavg else None,
        "cores": cores,  # the CPUs the ranks were sized by (the affinity mask)
        "other_cores": None if other_cores is None else max(0.0, other_cores),
        "other_cores_measured": other_cores,  # unclipped: slightly below 0 is the clock ticks' granularity
        "noisy": noisy,
        "busy": busy,
        "threshold_pct": NOISY_SPREAD_PCT,
    }


def validate_on_pool(
    pool: Any, params: Params, spec: ValidateSpec, say: Callable[[str], None], link_mbit: float | None = None
) -> dict[str, Any]:
    """Measure every configuration beside a compute-only baseline (``measure_beside_compute``), and
    predict each. With ``rescale_compute`` the profile's compute is scaled to the compute-only
    baseline measured beside each group (the compute profile re-taken at validation time;
    communication and contention still come from the params), and the factor is reported.
    """
    from realrun.bench_ddp import _loadavg
    from realrun.cpushare import OtherWork
    from realrun.records import RecordWriter, environment, make_record

    load_before = _loadavg()
    prof = check_profile_matches(params, spec.model, spec.batch_size)
    bs = spec.batch_size or (params.probes or {}).get("batch_size") or prof.samples_per_step
    p = pool.world_size
    configs = spec.configs()
    labels = [config_label(c.name, c.bucket_mb, c.bucket_cap_mb_list) for c in configs]
    env = environment(pool.backend, p, link_mbit=link_mbit)
    rows: list[ValidationRow] = []
    scales: list[float] = []
    small_records: list[dict[str, Any]] = []
    est = typical_step_s(prof, params.cost_model(world_size=p), configs, p)
    block = spec.block or auto_block(est)
    if block > 1:
        say(
            f"turns of {block} timed steps of each configuration after an untimed one, as a training job steps"
            + ("" if spec.block else f" (the predicted step, {est * 1e3:.1f} ms, is under {SHORT_STEP_S * 1e3:g} ms)")
        )
    with RecordWriter(spec.out) as writer:
        with OtherWork(getattr(pool, "pids", [])) as other:
            steps_per_round, times, compute = measure_beside_compute(
                pool,
                spec.model,
                configs,
                labels,
                bs,
                rounds=spec.rounds,
                steps=spec.steps,
                warmup=spec.warmup,
                optimizer=spec.optimizer,
                group_size=spec.group_size,
                writer=writer,
                env=env,
                link_mbit=link_mbit,
                say=say,
                min_seconds=spec.min_seconds,
                block=block,
                est_step_s=est if spec.min_seconds else None,
                small_calls=spec.small_calls,
                small_records=small_records,
            )
        for k, cfg in enumerate(configs):
            row = row_of(
                cfg, times[k], compute[k], prof, params, p, spec.rescale_compute, link_mbit, block, spec.rounds
            )
            if k % spec.group_size == 0:
                scales.append(row.compute_scale)
            rows.append(row)
            writer.write(
                make_record(
                    "validation_row",
                    env,
                    model=spec.model,
                    step_times_s=times[k],
                    compute_step_times_s=compute[k],
                    validation=row.to_dict(),
                )
            )
            say(
                f"{labels[k]}: measured {row.measured_median_s * 1e3:.2f} ms "
                f"(p10 {row.measured_p10_s * 1e3:.2f}, p90 {row.measured_p90_s * 1e3:.2f}), "
                f"predicted {row.predicted_step_s * 1e3:.2f} ms, error {row.error_pct:+.1f}%"
                + (f" (the two medians' own noise: +-{row.noise_pct:.1f}%)" if row.noise_pct is not None else "")
            )
    baseline = [t for ts in compute[:: spec.group_size] for t in ts]  # each group's compute-only steps, once
    res = validation_result(
        spec.model,
        pool.backend,
        link_mbit,
        bs,
        f"interleaved: {spec.rounds} rounds x {steps_per_round} steps, groups of <= {spec.group_size} "
        f"configurations beside a compute-only baseline (round(sqrt(n)) copies among n)" + turns_note(block),
        spec.rescale_compute,
        scales,
        params,
        prof,
        p,
        rows,
        baseline,
        load_before,
        other.cores,
        steps=list(zip(times, compute)),
        block=block,  # --timeline measures in the same order
    )
    res["omp_note"] = getattr(pool, "omp_note", None)  # said while calibrating; in the result's text and JSON
    from realrun.launch import usable_cpus

    res["shared_cores_warning"] = shared_cores_warning(params, p, pool.backend, usable_cpus())
    if res["shared_cores_warning"]:
        say(res["shared_cores_warning"])
    if res.get("rounds_apart"):
        say(rounds_line(res["rounds_apart"], placement=res.get("backend") == "gloo"))
    res["small_calls"] = small_calls_beside(small_records, params, p)
    if res["small_calls"] is not None:
        say(small_calls_line(res["small_calls"]))
    if warning := noise_warning(res["machine_noise"]):
        say(warning)
    return res


def round_medians(times_s: Sequence[float], rounds: int) -> tuple[float, ...] | None:
    """The median of each round's steps, from steps pooled round after round with as many a round
    (``measure_beside_compute``'s order); None with one round or steps that do not split evenly."""
    n = len(times_s)
    if rounds < 2 or n < 2 * rounds or n % rounds:
        return None
    k = n // rounds
    return tuple(statistics.median(times_s[i * k : (i + 1) * k]) for i in range(rounds))


def row_of(
    cfg: StrategySpec,
    times_s: Sequence[float],
    compute_s: Sequence[float],
    prof: GradProfile,
    params: Params,
    world_size: int,
    rescale: bool,
    link_mbit: float | None,
    block: int = 1,
    rounds: int = 1,
) -> ValidationRow:
    """One configuration's row from its measured steps and the compute-only steps measured beside it:
    the profile rescaled to their median (``rescale``), predicted with the interval of the median of
    as many steps as were measured; ``block``, the turns they were measured in, says whether the rescale
    took in the leftover work of DDP steps (``order_cost``); ``rounds``, how many rounds the steps were
    measured in, one after another (``round_medians``)."""
    comp = summarize(list(compute_s))
    scaled, scale = rescaled_profile(prof, comp.median_s, rescale)
    pred = predicted_row(
        scaled,
        params,
        cfg,
        world_size,
        compute_s,
        steps=len(times_s),
        cost=order_cost(params.cost_model(world_size=world_size), rescale, block),
    )
    return make_row(
        cfg,
        summarize(list(times_s)),
        comp.median_s,
        pred,
        link_mbit=link_mbit,
        compute_scale=scale,
        measured_ci_s=median_ci(times_s),
        compute_ci_s=median_ci(compute_s),
        round_medians_s=round_medians(times_s, rounds),
    )


def shared_cores_warning(params: Params, world_size: int, backend: str, cpus: int) -> str | None:
    """A warning where ``world_size`` gloo ranks share ``cpus`` cores but the in-step terms (how compute and the
    calls slow each other) were measured at another p, with fewer ranks to a core; None otherwise. On this VM that
    is where a p = 2 calibration missed p = 4 (gpt over 200 Mbit/s, 4 ranks on 2 cores: 8.6 / 13.7 % median / worst,
    every row low) while one fitted at p = 2 and 4 came within 3 % (BENCHMARKS.md, "Twenty-ninth session")."""
    fits = params.in_step_fits()
    if backend != "gloo" or world_size <= cpus or not fits or world_size in fits:
        return None
    src = params.in_step_source(world_size)
    return (
        f"warning: {world_size} ranks share {cpus} cores here, but how compute and the calls slow each other was "
        f"measured at p = {src}: ranks that share cores slow each other more "
        f"(on a 2-core VM a p = 2 calibration predicted p = 4 8.6 % low, median; one at p = 2 and 4, within 3 %); "
        f"calibrate at this world size too (ddpsim calibrate --world-size {','.join(map(str, sorted({src, world_size})))})"
    )


def validation_result(
    model: str,
    backend: str,
    link_mbit: float | None,
    batch_size: int,
    method: str,
    rescale: bool,
    scales: list[float],
    params: Params,
    prof: GradProfile,
    world_size: int,
    rows: list[ValidationRow],
    baseline: Sequence[float],
    loadavg: Sequence[float] | None,
    other_cores: float | None = None,
    steps: Sequence[tuple[Sequence[float], Sequence[float]]] | None = None,
    block: int = 1,
) -> dict[str, Any]:
    """``validate``'s result: its rows, their summary, the machine's noise and the params used. ``steps``:
    per row, its step times and its group's compute-only ones (``summarize_rows``)."""
    from .calibrate import channel_warning

    return {
        "schema": VALIDATION_SCHEMA,
        "model": model,
        "world_size": world_size,
        "backend": backend,
        "link_mbit": link_mbit,
        "batch_size": batch_size,
        "method": method,
        "rescale_compute": rescale,
        "compute_scale": scales,
        "network_provenance": params.cost_model().provenance(world_size),
        "block": block,
        "params": {
            "measured_world_sizes": list(params.measured_world_sizes),
            **params.fitted_terms(world_size),
            "leftover_used": leftover_used(rescale, block),
            "contention_provenance": params.contention_at(world_size)[2],
        },
        "measured_compute_s": summarize(list(baseline)).median_s,
        "predicted_compute_s": prof.compute_s,
        **summarize_rows(rows, steps),
        "machine_noise": machine_noise(baseline, loadavg, other_cores),
        "channel_warning": channel_warning(params.probes),
        "rows": rows,
    }


def replay_validation(
    path: str | Path, params: Params, rescale: bool = True, block: int | None = None
) -> dict[str, Any]:
    """A past ``validate`` run's measured steps (its ``validation_row`` records) predicted again from
    ``params``, measuring nothing (``ddpsim validate --replay``): the same rows, summary and coverage
    as if the run had used these params. A run that stopped before its rows were written (killed, or a
    failure while predicting) is replayed from its ``ddp_step`` records (``rows_from_steps``). Refuses
    a file holding one configuration twice (appended runs). ``block``: the turns the steps were measured
    in (``validate --block``; whether the leftover work is the model's, ``order_cost``), read from the step
    records where they say it; for records from before they did, given here (None: one step a turn), and
    refused where it contradicts them."""
    from realrun.records import read_records

    every = read_records(path)
    recs = [r for r in every if r.get("kind") == "validation_row"]
    # validate's step records (a group and a setting; bench-ddp's have neither)
    steps = [r for r in every if r.get("kind") == "ddp_step" and "group" in r and "setting" in r]
    stepped = {_config_key(r) for r in steps if r.get("strategy") != "compute"}
    method = f"replayed from {path}"
    n_rounds = len({int(r.get("round", 0)) for r in steps}) if steps else 1  # each row's steps, round after round
    if not recs or not stepped <= {_config_key(r["validation"]) for r in recs}:
        # no rows, or rows for only some of the configurations measured (a failure while predicting)
        recs, kept, recorded = rows_from_steps(steps, path)
        n_rounds = kept
        method += f" (its step records: {kept} of {recorded} round(s), those holding every group the first does)"
    models = {r.get("model") for r in recs}
    envs = {((r.get("env") or {}).get("world_size"), (r.get("env") or {}).get("backend")) for r in recs}
    links = {(r.get("validation") or {}).get("link_mbit") for r in recs}
    if len(models) > 1 or len(envs) > 1 or len(links) > 1:
        raise ValueError(f"{path}: validation rows of several runs (models, world sizes or links differ)")
    blocks = {int(r["block"]) for r in steps if r.get("block") is not None}
    if len(blocks) > 1:
        raise ValueError(f"{path}: steps measured in turns of different lengths {sorted(blocks)}: replay one run")
    if blocks and block is not None and blocks != {block}:
        raise ValueError(f"{path}: the steps were measured in turns of {blocks.pop()}, not {block} (--block)")
    block = blocks.pop() if blocks else (block or 1)  # records before --block: one step a turn, unless told
    method += turns_note(block)
    (model,), ((p, backend),), (link,) = models, envs, links
    if not isinstance(p, int) or p < 1:
        raise ValueError(f"{path}: the records do not say their world size")
    prof = check_profile_matches(params, str(model), None)
    rows: list[ValidationRow] = []
    row_steps: list[tuple[list[float], tuple[float, ...]]] = []  # per row its steps and its group's baseline
    seen: set[tuple[Any, ...]] = set()
    groups: dict[tuple[float, ...], None] = {}
    scales: list[float] = []
    for r in recs:
        v = r["validation"]
        caps = v.get("bucket_cap_mb_list")
        cfg = StrategySpec(
            v["strategy"], bucket_mb=v.get("bucket_mb"), bucket_cap_mb_list=tuple(caps) if caps else None
        )
        key = (cfg.name, cfg.bucket_mb, cfg.bucket_cap_mb_list)
        if key in seen:
            raise ValueError(
                f"{path}: {cfg.name} {cfg.bucket_mb} appears twice (several runs appended): replay one run"
            )
        seen.add(key)
        comp = tuple(float(t) for t in r["compute_step_times_s"])
        row = row_of(cfg, r["step_times_s"], comp, prof, params, p, rescale, link, block, n_rounds)
        if not steps and row.round_medians_s is None and v.get("round_medians_s"):
            # rows whose step records were left out of the file: each row's rounds as it stored them
            row = replace(row, round_medians_s=tuple(float(x) for x in v["round_medians_s"]))
        row_steps.append(([float(t) for t in r["step_times_s"]], comp))
        if comp not in groups:
            groups[comp] = None
            scales.append(row.compute_scale)
        rows.append(row)
    baseline = [t for comp in groups for t in comp]
    return validation_result(
        str(model),
        str(backend),
        link,
        int((params.probes or {}).get("batch_size") or prof.samples_per_step or 0),
        method,
        rescale,
        scales,
        params,
        prof,
        p,
        rows,
        baseline,
        None,
        steps=row_steps,
        block=block,
    )


def _config_key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    caps = r.get("bucket_cap_mb_list")
    return (r.get("strategy"), r.get("bucket_mb"), tuple(caps) if caps else None)


def rows_from_steps(steps: Sequence[dict[str, Any]], path: str | Path) -> tuple[list[dict[str, Any]], int, int]:
    """``validation_row``-shaped records (what ``replay_validation`` reads) from a ``validate`` run's
    ``ddp_step`` records, written as each round ended: per configuration its steps over the rounds, and
    its group's compute-only steps (every copy, in the order ``measure_beside_compute`` pooled them).
    Only rounds as complete as the first count (a round cut short leaves some of its groups' records
    unwritten); returns the records, the rounds kept and the rounds recorded."""
    if not steps:
        raise ValueError(f"{path}: no validation_row or ddp_step records: not the records of a `ddpsim validate` run")
    per_round: dict[int, list[dict[str, Any]]] = {}
    for r in steps:
        per_round.setdefault(int(r.get("round", 0)), []).append(r)
    shape = {
        k: sorted((r.get("group"), r.get("setting"), r.get("baseline_copy") or 0) for r in v)
        for k, v in per_round.items()
    }
    first = shape[min(shape)]
    if len(first) != len(set(first)):
        raise ValueError(f"{path}: a configuration appears twice in one round (several runs appended): replay one run")
    rounds = [k for k in sorted(per_round) if shape[k] == first]
    times: dict[tuple[Any, ...], list[float]] = {}
    compute: dict[Any, list[float]] = {}
    heads: dict[tuple[Any, ...], dict[str, Any]] = {}
    for k in rounds:
        for r in per_round[k]:
            if r.get("strategy") == "compute":
                compute.setdefault(r.get("group"), []).extend(r["step_times_s"])
            else:
                key = (r.get("group"), r.get("setting"))
                times.setdefault(key, []).extend(r["step_times_s"])
                heads.setdefault(key, r)
    if not times:
        raise ValueError(f"{path}: no configuration's steps in the ddp_step records")
    out = []
    for key, ts in times.items():
        h = heads[key]
        if key[0] not in compute:
            raise ValueError(f"{path}: {h.get('setting')} has no compute-only steps beside it")
        v = {k: h.get(k) for k in ("strategy", "bucket_mb", "bucket_cap_mb_list", "link_mbit")}
        out.append(
            {
                "model": h.get("model"),
                "env": h.get("env"),
                "step_times_s": ts,
                "compute_step_times_s": compute[key[0]],
                "validation": v,
            }
        )
    return out, len(rounds), len(per_round)


def noise_warning(noise: dict[str, Any] | None, remedy: str = "more --steps and --rounds") -> str | None:
    """``noise_line`` where the machine was busy or the baseline noisy (``machine_noise``'s flags); else None.
    ``remedy``: the flags of the command that measured which narrow the medians (``tune`` has no --rounds)."""
    return noise_line(noise, remedy) if noise and (noise.get("noisy") or noise.get("busy")) else None


def noise_line(noise: dict[str, Any], remedy: str = "more --steps and --rounds") -> str:
    """The warning for a busy machine or a noisy compute-only baseline. "Busy" rests on the CPU time other
    work used while measuring (``other_cores``; results written before it was kept: a load average of half
    the cores or more); otherwise the noise is the run's own (an idle 16-core box, 2 ranks x 8 threads: the
    baseline varied 22-52 % p10-p90, benchmarks/results/omp_wait_policy/) or other work was not measured."""
    load, cores, other = noise.get("loadavg"), noise.get("cores"), noise.get("other_cores")
    spread = (
        f"the compute-only baseline varied {noise['baseline_spread_pct']:.0f}% "
        f"(p10-p90 over its median; a quiet run stays under {noise['threshold_pct']:.0f}%)"
    )
    if noise.get("busy", bool(load and cores and load[0] >= 0.5 * cores)):
        seen = (
            f"other work kept {other:.1f} of the {cores} cores busy while measuring"
            if other is not None
            else f"load average {load[0]:.1f} on {cores} cores before the ranks ran"
        )
        effect = (
            "errors of that size are noise, not model"
            if noise.get("noisy", True)
            else f"the compute-only baseline held steady ({noise['baseline_spread_pct']:.0f}% p10-p90), but the "
            "configurations shared the cores with that work"
        )
        return (
            f"warning: the machine was busy: {seen}; "
            + (f"{spread}; " if noise.get("noisy", True) else "")
            + f"{effect}: re-run on a quiet machine"
        )
    if other is not None:
        seen = f"while other work kept only {other:.1f} of the {cores} cores busy: the noise is in the run itself"
    elif "other_cores" in noise:  # kept, but not measured: too short a span, or no psutil
        seen = "other work not measured (the measurement was under a second, or psutil is missing)"
    elif load and cores:
        seen = f"with a load average of only {load[0]:.1f} on {cores} cores before the ranks ran (no other work seen)"
    elif load:
        seen = f"load average {load[0]:.1f} before the ranks ran on an unknown number of cores"
    else:
        seen = "the load before the run unknown"
    return (
        f"warning: the steps were noisy: {spread}, {seen}; errors of that size cannot be told from the model's: "
        f"{remedy} narrow the medians"
    )


def format_validation(res: dict[str, Any]) -> str:
    # the rounds column: how far each row's measured median moved between the rounds (rows of older runs: none kept)
    with_rounds = any(r.rounds_apart_pct is not None for r in res["rows"])
    lines = [
        f"{res['model']} on {res['world_size']} {res['backend']} rank{'' if res['world_size'] == 1 else 's'}"
        + (f" over {res['link_mbit']:g} Mbit/s links" if res.get("link_mbit") else " on loopback")
        + f"; compute measured {res['measured_compute_s'] * 1e3:.2f} ms, profiled {res['predicted_compute_s'] * 1e3:.2f} ms"
        + (" (profile rescaled to the measured baseline)" if res.get("rescale_compute") else ""),
        *([res["network_provenance"]["text"]] if res.get("network_provenance") else []),
        "",
        f"  {'strategy':<11} {'bucket MiB':>10} {'measured ms':>12} {'p10..p90':>17} {'predicted':>10} "
        f"{'exp. meas':>10} {'exp. pred':>10} {'error':>8} {'noise':>7}" + (f" {'rounds':>7}" if with_rounds else ""),
    ]
    for r in res["rows"]:
        b = bucket_text(r.strategy, r.bucket_mb)
        apart = r.rounds_apart_pct
        lines.append(
            f"  {r.strategy:<11} {b:>10} {r.measured_median_s * 1e3:>12.2f} "
            f"{r.measured_p10_s * 1e3:>8.2f}..{r.measured_p90_s * 1e3:<8.2f} {r.predicted_step_s * 1e3:>10.2f} "
            f"{r.measured_exposed_s * 1e3:>10.2f} {r.predicted_exposed_s * 1e3:>10.2f} {r.error_pct:>+7.1f}%"
            + (f" {r.noise_pct:>6.1f}%" if r.noise_pct is not None else f" {'-':>7}")
            + (f" {apart:>6.1f}%" if apart is not None else (f" {'-':>7}" if with_rounds else ""))
        )
    lines.append("")
    lines.append(
        f"step-time error: median {res['median_abs_error_pct']:.2f}%, worst {res['worst_abs_error_pct']:.2f}% "
        f"over {res['n_configs']} configurations"
    )
    if res.get("n_with_noise"):
        lines.append(
            f"noise: the column after the error, +- what the measured and the compute-only medians' 95% intervals "
            f"alone can make; {res['n_beyond_noise']} of {res['n_with_noise']} errors are larger"
        )
    if res.get("interval_coverage") is not None:
        n = res["n_with_interval"]
        lines.append(
            f"interval coverage: {res['interval_coverage']:.0%} of the measured medians lie inside the predicted 80% "
            f"interval ({n} configurations; goal 75-90%, where an exact 80% interval over {n} independent "
            f"configurations lands {coverage_band_chance(n):.0%} of the time)"
        )
    if res.get("rounds_apart"):
        lines.append(rounds_line(res["rounds_apart"], placement=res.get("backend") == "gloo"))
    if res.get("small_calls"):
        lines.append(small_calls_line(res["small_calls"]))
    if warning := noise_warning(res.get("machine_noise")):
        lines.append(warning)
    if res.get("channel_warning"):
        lines.append(res["channel_warning"])
    if res.get("omp_note"):
        lines.append(res["omp_note"])
    if res.get("shared_cores_warning"):
        lines.append(res["shared_cores_warning"])
    for strat, bb in res["best_bucket"].items():
        lines.append(
            f"best bucket ({strat}): predicted {bb['predicted_best_mb']:g} MiB, measured {bb['measured_best_mb']:g} MiB "
            f"({best_bucket_verdict(bb)})"
        )
    return "\n".join(lines)


COVERAGE_BAND = (0.75, 0.90)  # issue 10's goal for the share of measured medians inside the 80 % interval


def coverage_band_chance(n: int, level: float = 0.8, band: tuple[float, float] = COVERAGE_BAND) -> float:
    """The chance that an exact ``level`` interval covers a share inside ``band`` of ``n`` independent
    configurations (binomial): 0.64 for 17, what a per-cell goal can show at best."""
    from scipy.stats import binom

    return float(sum(binom.pmf(k, n, level) for k in range(n + 1) if band[0] <= k / n <= band[1]))


def best_bucket_verdict(bb: Mapping[str, Any]) -> str:
    """How the predicted best bucket measured against the measured best, in words (``summarize_rows``'s
    ``best_bucket`` entry; entries written before the gap had an interval say it by the p10-p90 overlap)."""
    gap = f"the predicted best measures {bb['predicted_best_measured_gap_pct']:+.1f}% vs the measured best"
    if bb["same"]:
        return f"same; {gap}"
    ci = bb.get("gap_ci_pct")
    if ci is None:
        return f"{'within measured noise' if bb['within_noise'] else 'differs'} (p10-p90 overlap); {gap}"
    where = "within the noise" if bb["within_noise"] else "behind beyond the noise"
    return f"{where}; {gap}, 95% interval {ci[0]:+.2f}% to {ci[1]:+.2f}%, steps {bb['gap_ci_steps']}"


def save_validation(res: dict[str, Any], path: str | Path) -> Path:
    from simulator.jsonio import dumps_finite, write_whole

    return write_whole(path, dumps_finite(res) + "\n")
