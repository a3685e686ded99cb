"""What ``ddpsim tune --verify`` measured: one ``VerifyRow`` per setting run for real, and the
``Verification`` around them (the compute-only baseline, the measured gain and its spread).
Made in one place (``ddpsim.tune_command._verify``); their JSON is their fields (``tune.json``'s
``verify`` block)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.jsonio import to_fields


@dataclass(frozen=True)
class VerifyRow:
    """One setting run for real: the headline's prediction, the measured median and spread, and the
    prediction re-timed to the compute-only steps measured beside it, whose error is ``error_pct``."""

    setting: str
    bucket_mb: float | None
    bucket_cap_mb_list: tuple[float, ...] | None
    measured_median_s: float
    measured_p10_s: float
    measured_p90_s: float
    predicted_step_s: float
    retimed_predicted_step_s: float
    error_pct: float
    # the median of each round's steps (``calibration.validate.round_medians``): whether the measurement repeats;
    # None with one round, or in results written before it was kept (2026-11-30)
    round_medians_s: tuple[float, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)


_SAME = " = "  # joins the names of settings that make one configuration


def row_name(names: list[str]) -> str:
    """One verify row's name: the settings that make its one configuration, "recommended = default = grid 64"."""
    return _SAME.join(names)


@dataclass(frozen=True)
class Verification:
    """The verified settings (``rows``: the recommended first, then the default, the grid; settings that
    make the same buckets are one row, named "recommended = default = grid 64"), the compute-only
    baseline beside them, and the recommended setting's measured gain over the default."""

    method: str
    world_size: int
    steps: int
    measured_compute_s: float
    profile_compute_s: float
    compute_scale: float
    rows: tuple[VerifyRow, ...]
    recommended_measured_s: float
    recommended_measured_p10_s: float
    recommended_measured_p90_s: float
    default_measured_s: float
    default_measured_p10_s: float
    default_measured_p90_s: float
    best_measured_setting: str
    recommended_vs_best_measured_pct: float
    measured_gain_vs_default_pct: float
    measured_gain_p10_p90_pct: tuple[float, float]
    measured_gain_within_noise: bool
    median_abs_error_pct: float
    # the compute-only baseline's spread and the cores other work kept busy while measuring
    # (``calibration.validate.machine_noise``); None in results written before it was kept
    machine_noise: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    # the 95 % interval of recommended_vs_best_measured_pct, the steps resampled in pairs
    # (``realrun.stats.paired_gap_interval``), and whether it lies above 0: the best measured setting is
    # faster beyond what these steps' noise can make. None where the recommended setting is the best
    # measured (no gap), with fewer than 3 steps, where the bootstrap gave no finite interval, or in results
    # written before it was kept (2026-11-27)
    recommended_vs_best_ci_pct: tuple[float, float] | None = None
    recommended_behind_beyond_noise: bool | None = None

    @property
    def recommended_is_default(self) -> bool:
        """The recommended setting makes the default's buckets: one row, nothing to compare."""
        return "default" in self.rows[0].setting.split(_SAME)

    def to_dict(self) -> dict[str, Any]:
        return to_fields(self)
