"""Rows as frozen dataclasses, written by their fields: a validation row read from a stored result file and
written again gives the same JSON text (keys, order, values), and the rows of a made-up configuration
carry the keys validate always wrote."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from calibration.validate import (
    PLACEMENT_HINT,
    RowPrediction,
    ValidateSpec,
    ValidationRow,
    best_bucket_verdict,
    bucket_text,
    config_label,
    coverage_band_chance,
    make_row,
    round_medians,
    rounds_apart,
    rounds_line,
    summarize_rows,
)
from realrun.stats import gap_interval, median_ci, paired_gap_interval, spread_pct, summarize
from simulator.jsonio import dumps_finite
from simulator.strategies import StrategySpec

ROOT = Path(__file__).resolve().parent.parent
STORED = ROOT / "benchmarks" / "results" / "accuracy_matrix" / "gpt-1000" / "validation.json"

ROW_KEYS = [
    "strategy",
    "bucket_mb",
    "bucket_cap_mb_list",
    "measured_median_s",
    "measured_p10_s",
    "measured_p90_s",
    "measured_compute_s",
    "measured_exposed_s",
    "predicted_step_s",
    "predicted_exposed_s",
    "predicted_compute_s",
    "n_buckets",
    "predicted_p10_s",
    "predicted_p90_s",
    "interval_sources",
    "error_pct",
    "link_mbit",
    "compute_scale",
]


def test_stored_validation_rows_read_and_write_back_unchanged():
    stored = json.loads(STORED.read_text())["rows"]
    assert len(stored) == 17
    for d in stored:
        row = ValidationRow.from_dict(d)
        assert list(d) == ROW_KEYS
        assert json.dumps(row.to_dict()) == json.dumps(d)  # the same text: keys, order, values
        assert ValidationRow.from_dict(json.loads(json.dumps(row.to_dict()))) == row


def _row(name="torch-ddp", bucket_mb=4.0, times=(0.10, 0.12, 0.11, 0.13, 0.12), pred_s=0.115):
    pred = RowPrediction(pred_s, 0.015, 0.1, 3, 0.105, 0.125, ("o fit CI", "compute spread"))
    spec = StrategySpec(name, bucket_mb=bucket_mb)
    return make_row(spec, summarize(list(times)), 0.1, pred, link_mbit=1000.0, compute_scale=1.25)


def test_make_row_shows_its_arithmetic_and_keeps_the_keys():
    r = _row()
    # median of 0.10 0.11 0.12 0.12 0.13 = 0.12; exposed 0.12 - 0.1; error (0.115 - 0.12) / 0.12
    assert r.measured_median_s == 0.12 and r.measured_exposed_s == pytest.approx(0.02)
    assert r.error_pct == pytest.approx((0.115 - 0.12) / 0.12 * 100)
    d = json.loads(dumps_finite({"rows": [r]}))["rows"][0]  # a dataclass inside a result is written by its fields
    # the steps' mean is kept since 2026-11-30 (rows read from older files write back without it)
    assert list(d) == [*ROW_KEYS, "measured_mean_s"] and d["interval_sources"] == ["o fit CI", "compute spread"]
    assert d["measured_mean_s"] == pytest.approx(0.116)
    assert d["bucket_cap_mb_list"] is None and d["compute_scale"] == 1.25 and d["n_buckets"] == 3
    assert ValidationRow.from_dict(d) == r


def test_summary_reads_rows_by_attribute():
    rows = [_row(bucket_mb=1.0, pred_s=0.13), _row(bucket_mb=4.0, times=(0.2, 0.2, 0.2), pred_s=0.11)]
    s = summarize_rows(rows)
    bb = s["best_bucket"]["torch-ddp"]
    assert (bb["predicted_best_mb"], bb["measured_best_mb"]) == (4.0, 1.0) and not bb["same"]
    assert bb["predicted_best_measured_gap_pct"] == pytest.approx((0.2 - 0.12) / 0.12 * 100)
    assert s["n_configs"] == 2 and s["interval_coverage"] == 0.5  # 0.12 inside 0.105..0.125; 0.2 is not


def test_median_ci_is_the_sign_test_interval():
    # 95 %: n = 8 -> x(1)..x(8) (x(2)..x(7) covers only 93 %); n = 16 -> x(4)..x(13); n = 100 -> x(40)..x(61)
    assert median_ci(range(1, 9)) == (1, 8)
    assert median_ci(list(range(16, 0, -1))) == (4, 13)  # order of the input does not matter
    assert median_ci(range(1, 101)) == (40, 61)
    # past 1023 times 2**n is no float: the interval still comes (run m25's 1000-step micro-DLRM rows)
    lo, hi = median_ci(range(1, 2001))
    assert (lo, hi) == (956, 1045)  # 2 P(Binomial(2000, 1/2) < 956) = 0.047, < 957: 0.052 (scipy.stats.binom)
    assert median_ci([0.3]) == (0.3, 0.3)
    with pytest.raises(ValueError):
        median_ci([])


def test_paired_gap_interval_is_narrow_where_the_machine_moves_both_settings_alike():
    """Two settings stepped in turn on a machine that drifts: setting a is 5 % slower than b at every step,
    while the steps themselves move +-30 %. Paired, the gap's interval is tight around +5 %; the same steps
    with one list's order shuffled (the pairs broken) give an interval many times wider."""
    rng = np.random.default_rng(3)
    drift = 0.2 * np.exp(rng.normal(0.0, 0.3, 40))
    a, b = drift * 1.05 * np.exp(rng.normal(0.0, 0.01, 40)), drift
    lo, hi = paired_gap_interval(a, b)
    assert 2.0 < lo < 5.0 < hi < 8.0  # (2.9, 5.8) with this seed
    lo_u, hi_u = paired_gap_interval(a, rng.permutation(b))
    assert (hi_u - lo_u) > 5 * (hi - lo)
    assert paired_gap_interval(a, b, seed=1) != (lo, hi) and paired_gap_interval(a, b) == (lo, hi)  # seeded
    # equal settings: the interval holds 0
    lo0, hi0 = paired_gap_interval(drift * np.exp(rng.normal(0.0, 0.01, 40)), drift)
    assert lo0 < 0.0 < hi0
    assert paired_gap_interval([0.1, 0.2], [0.1, 0.2]) is None  # too few pairs
    assert paired_gap_interval([0.1] * 4, [0.1] * 5) is None  # not pairs


def test_best_bucket_gap_interval_pairs_the_steps_of_one_group_only():
    """validate's best-bucket verdict on steps of a drifting machine: 4 MiB predicted best, 1 MiB measured best,
    4 MiB 5 % slower at every step while the steps move +-30 %. Stepped in one group (the same compute-only
    steps), the pairs resolve the gap: behind beyond the noise. In two groups the same steps are not pairs:
    each list is resampled on its own, the interval reaches 0 and the verdict is "within the noise". Rows
    without their steps keep the p10-p90 overlap."""
    rng = np.random.default_rng(3)
    drift = 0.2 * np.exp(rng.normal(0.0, 0.3, 40))
    slow, fast = drift * 1.05 * np.exp(rng.normal(0.0, 0.01, 40)), drift
    rows = [_row(bucket_mb=1.0, times=fast, pred_s=0.3), _row(bucket_mb=4.0, times=slow, pred_s=0.1)]
    comp = list(0.1 * drift)
    one_group = summarize_rows(rows, [(list(fast), comp), (list(slow), comp)])["best_bucket"]["torch-ddp"]
    assert (one_group["predicted_best_mb"], one_group["measured_best_mb"]) == (4.0, 1.0)
    assert one_group["gap_ci_steps"] == "paired" and one_group["gap_ci_pct"] == paired_gap_interval(slow, fast)
    lo, hi = one_group["gap_ci_pct"]
    assert 0.0 < lo < 5.0 < hi and one_group["within_noise"] is False
    assert "behind beyond the noise" in best_bucket_verdict(one_group) and "steps paired" in best_bucket_verdict(
        one_group
    )
    two_groups = summarize_rows(rows, [(list(fast), comp), (list(slow), comp[::-1])])["best_bucket"]["torch-ddp"]
    assert two_groups["gap_ci_steps"] == "unpaired"
    assert two_groups["gap_ci_pct"] == gap_interval(slow, fast, paired=False)
    lo_u, hi_u = two_groups["gap_ci_pct"]
    assert lo_u < 0.0 < hi_u and two_groups["within_noise"] is True
    assert "within the noise" in best_bucket_verdict(two_groups)
    # no steps: the p10-p90 overlap, said as such
    bare = summarize_rows(rows)["best_bucket"]["torch-ddp"]
    assert bare["gap_ci_pct"] is None and bare["within_noise"] == (rows[1].measured_p10_s <= rows[0].measured_p90_s)
    assert "(p10-p90 overlap)" in best_bucket_verdict(bare)
    # the predicted best measured best: one row, no interval
    same = summarize_rows([rows[0], _row(bucket_mb=4.0, times=slow, pred_s=0.4)], [(list(fast), comp)] * 2)
    assert same["best_bucket"]["torch-ddp"]["gap_ci_pct"] is None and same["best_bucket"]["torch-ddp"]["same"]
    # written and read back (the interval a JSON list) the verdict reads the same; an entry from before the
    # interval (no gap_ci_* keys) says the p10-p90 overlap
    back = json.loads(dumps_finite(one_group))
    assert back["gap_ci_pct"] == list(one_group["gap_ci_pct"]) and best_bucket_verdict(back) == best_bucket_verdict(
        one_group
    )
    old = {k: v for k, v in bare.items() if not k.startswith("gap_ci")}
    assert best_bucket_verdict(old) == best_bucket_verdict(bare)
    assert f"{lo:+.2f}% to {hi:+.2f}%" in best_bucket_verdict(one_group)  # two decimals: an end near 0 shows its sign
    with pytest.raises(ValueError, match="1 rows of steps for 2 rows"):
        summarize_rows(rows, [(list(fast), comp)])
    assert gap_interval([0.1] * 4, [0.1] * 5, paired=False) is not None  # unpaired: lengths may differ
    assert gap_interval([0.1] * 2, [0.1] * 5, paired=False) is None


def test_row_noise_is_the_two_medians_intervals_in_quadrature():
    pred = RowPrediction(0.115, 0.015, 0.1, 3, 0.105, 0.125, ("o fit CI",))
    times = [0.10, 0.11, 0.12, 0.12, 0.13, 0.12, 0.11, 0.14]  # median 0.12, 95 % interval 0.10..0.14
    comp = [0.09, 0.10, 0.10, 0.10, 0.10, 0.11, 0.10, 0.10]  # median 0.10, interval 0.09..0.11
    r = make_row(
        StrategySpec("flat"),
        summarize(times),
        0.10,
        pred,
        link_mbit=None,
        compute_scale=1.0,
        measured_ci_s=median_ci(times),
        compute_ci_s=median_ci(comp),
    )
    # half-widths 0.02 / 0.12 and 0.01 / 0.10 of their medians
    assert r.noise_pct == pytest.approx(((0.02 / 0.12) ** 2 + 0.1**2) ** 0.5 * 100)
    assert r.error_pct == pytest.approx(-4.1667, abs=1e-3) and r.beyond_noise is False
    d = json.loads(dumps_finite({"rows": [r]}))["rows"][0]
    assert list(d) == ROW_KEYS + ["measured_median_ci_s", "compute_median_ci_s", "noise_pct", "measured_mean_s"]
    assert ValidationRow.from_dict(d) == r
    far = make_row(
        StrategySpec("flat"),
        summarize(times),
        0.10,
        RowPrediction(0.16, 0.015, 0.1, 3, 0.15, 0.17, ()),
        link_mbit=None,
        compute_scale=1.0,
        measured_ci_s=median_ci(times),
        compute_ci_s=median_ci(comp),
    )
    assert far.beyond_noise is True  # +33 % against +-19 %
    s = summarize_rows([r, far, _row()])  # _row() keeps no intervals: it does not count
    assert (s["n_beyond_noise"], s["n_with_noise"]) == (1, 2)


def test_the_band_an_exact_interval_can_reach_is_a_binomial_share():
    # 4 configurations: only 3 of 4 (75 %) is in 75-90 %, which an exact 80 % interval gives 4 * 0.8^3 * 0.2
    assert coverage_band_chance(4) == pytest.approx(4 * 0.8**3 * 0.2, rel=1e-12)
    assert coverage_band_chance(1) == 0.0  # 0 or 100 %: never in the band
    # 17 (a matrix cell): 13, 14 or 15 covered
    want = sum(math.comb(17, k) * 0.8**k * 0.2 ** (17 - k) for k in (13, 14, 15))
    assert coverage_band_chance(17) == pytest.approx(want, rel=1e-9) and round(want, 2) == 0.64


def test_round_medians_split_the_pooled_steps_round_after_round():
    steps = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0]
    assert round_medians(steps, 2) == (2.0, 20.0)
    assert round_medians(steps, 3) == (1.5, 6.5, 25.0)
    assert round_medians(steps, 1) is None  # one round: nothing to compare
    assert round_medians(steps, 4) is None  # 6 steps do not split into 4 rounds of as many
    assert round_medians([1.0, 2.0], 2) is None  # a round of one step says nothing


def _rounds_row(bucket_mb, r1, r2, pred_s):
    pred = RowPrediction(pred_s, 0.015, 0.1, 3, 0.9 * pred_s, 1.1 * pred_s, ("o fit CI",))
    times = [*r1, *r2]
    return make_row(
        StrategySpec("torch-ddp", bucket_mb=bucket_mb),
        summarize(times),
        0.05,
        pred,
        link_mbit=None,
        compute_scale=1.0,
        round_medians_s=round_medians(times, 2),
    )


def test_rounds_apart_names_the_row_whose_median_did_not_repeat():
    steady = _rounds_row(4.0, [0.100, 0.101, 0.102], [0.101, 0.102, 0.103], 0.1)
    # a bimodal row: round 1 mostly fast steps, round 2 mostly slow ones; the steps' mean 1.0 / 6
    flip = _rounds_row(0.25, [0.08, 0.09, 0.25], [0.09, 0.24, 0.25], 1.0 / 6)
    assert steady.rounds_apart_pct == pytest.approx((0.102 / 0.101 - 1) * 100)
    assert flip.rounds_apart_pct == pytest.approx((0.24 / 0.09 - 1) * 100)
    assert flip.error_vs_mean_pct == pytest.approx(0.0, abs=1e-9)  # the prediction is the steps' mean
    ra = rounds_apart([steady, flip])
    assert ra["worst_row"] == "torch-ddp 0.25 MiB" and ra["n_rows_apart_beyond_goal"] == 1 and ra["n_rounds"] == 2
    assert ra["worst_round_medians_s"] == [0.09, 0.24]
    assert ra["median_pct"] == pytest.approx((steady.rounds_apart_pct + flip.rounds_apart_pct) / 2)
    assert ra["worst_compute_apart_pct"] is None  # no steps given: the compute-only steps are not known
    line = rounds_line(ra)
    assert f"by {ra['median_pct']:.1f} % (median over 2 configurations)" in line
    assert "1 of 2 moved 10 % or more" in line and "(torch-ddp 0.25 MiB: 90.00 then 240.00 ms)" in line
    assert f"(torch-ddp 0.25 MiB: {flip.error_pct:+.1f} % against its median, +0.0 % against its steps' mean)" in line
    assert PLACEMENT_HINT not in line  # not said unless the ranks are on a CPU (gloo)
    assert rounds_line(ra, placement=True) == line + PLACEMENT_HINT  # the cause measured here, named
    assert summarize_rows([steady, flip])["rounds_apart"] == ra  # in validate's summary and JSON
    # with the steps: how far the compute-only steps beside the worst row moved between the same rounds
    comp = [0.05, 0.05, 0.05, 0.055, 0.055, 0.055]
    steps = [([0.100, 0.101, 0.102, 0.101, 0.102, 0.103], comp), ([0.08, 0.09, 0.25, 0.09, 0.24, 0.25], comp)]
    with_steps = rounds_apart([steady, flip], steps)
    assert with_steps["worst_compute_apart_pct"] == pytest.approx(10.0)
    assert "; the compute-only steps beside it 10.0 %)" in rounds_line(with_steps)
    assert summarize_rows([steady, flip], steps)["rounds_apart"] == with_steps
    quiet = rounds_line(rounds_apart([steady]))
    assert quiet.endswith(": within the worst-row goal (10 %)") and "moved 10 % or more" not in quiet
    assert PLACEMENT_HINT not in rounds_line(rounds_apart([steady]), placement=True)  # nothing moved: no cause


def test_config_labels_and_spreads():
    assert config_label("torch-ddp", 4.0) == "torch-ddp 4 MiB" and config_label("individual", None) == "individual"
    assert config_label("torch-ddp", None) == "torch-ddp default" and config_label("sharded", None) == "sharded default"
    assert [bucket_text(s, b) for s, b in (("torch-ddp", 0.25), ("torch-ddp", None), ("flat", None))] == [
        "0.25",
        "default",
        "-",
    ]
    assert config_label("torch-ddp", None, (1.0, 4.0)) == "torch-ddp caps 1,4 MiB"
    assert spread_pct([2.0, 3.0]) == pytest.approx(50.0) and spread_pct([3.0, 2.0, 2.5]) == pytest.approx(50.0)
    assert spread_pct([2.0]) is None and spread_pct(None) is None and spread_pct([0.0, 1.0]) is None


def test_rows_of_one_round_or_older_files_have_no_rounds():
    one = _row()  # made without rounds
    assert one.rounds_apart_pct is None and rounds_apart([one]) is None
    assert summarize_rows([one])["rounds_apart"] is None
    d = one.to_dict()
    assert "round_medians_s" not in d  # not written where unknown
    d.pop("measured_mean_s")  # a row written before the mean was kept
    old = ValidationRow.from_dict(d)
    assert old.measured_mean_s is None and old.error_vs_mean_pct is None
    flip = _rounds_row(0.25, [0.08, 0.09, 0.25], [0.09, 0.24, 0.25], 1.0 / 6)
    back = ValidationRow.from_dict(json.loads(dumps_finite(flip.to_dict())))
    assert back == flip and back.round_medians_s == (0.09, 0.24)


def test_validate_takes_torch_default_where_a_strategy_has_one():
    """``--bucket-mb default`` (None): a configuration for torch-ddp and sharded, none for ``bucketed`` (no default
    size), and a list that leaves nothing to run is refused before any rank starts."""
    spec = ValidateSpec(strategies=("torch-ddp", "bucketed", "sharded", "flat"), bucket_mb=(None, 4.0, None))
    assert [(c.name, c.bucket_mb) for c in spec.configs()] == [
        ("torch-ddp", None),
        ("torch-ddp", 4.0),
        ("bucketed", 4.0),
        ("sharded", None),
        ("sharded", 4.0),
        ("flat", None),
    ]
    with pytest.raises(ValueError, match="nothing to run: bucketed needs a bucket size"):
        ValidateSpec(strategies=("bucketed",), bucket_mb=(None,))
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="bucket sizes must be finite numbers > 0 MiB"):
            ValidateSpec(bucket_mb=(bad,))


def test_timeline_files_say_default_only_for_a_strategy_with_buckets():
    from calibration.timeline import timeline_name

    assert timeline_name("gpt", "torch-ddp", None, 2) == "gpt_torch-ddp_default_p2"
    assert timeline_name("gpt", "torch-ddp", 4.0, 2) == "gpt_torch-ddp_4MB_p2"
    assert timeline_name("gpt", "flat", None, 2) == "gpt_flat_p2"


def test_validate_bucket_list_takes_default_and_refuses_bad_sizes(capsys):
    from ddpsim.cli import build_parser, main

    args = build_parser("validate").parse_args(["validate", "--bucket-mb", "default,0.25,4"])
    assert args.bucket_mb == [None, 0.25, 4.0]
    for bad, why in (
        ("0", "must be > 0"),
        ("-1", "must be > 0"),
        ("nan", "finite"),
        ("inf", "finite"),
        ("foo", "not a"),
    ):
        assert main(["validate", "--bucket-mb", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()  # one line, no usage dump, no traceback
        head = f"ddpsim: error: argument --bucket-mb: bad bucket size (MiB > 0, or 'default') {bad!r}: "
        assert len(err) == 1 and err[0].startswith(head) and why in err[0], err
