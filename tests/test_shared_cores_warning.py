"""validate warns where more gloo ranks than cores run on in-step terms measured at another world size."""

import pytest

from calibration.fit import LinearFit
from calibration.params import Params
from calibration.validate import shared_cores_warning

FIT = {"contention_c": 0.2, "comm_contention_c": 0.0}


def _params(by_p: dict | None = None, in_step: bool = True) -> Params:
    probes: dict = {"in_step": dict(FIT)} if in_step else {}
    if by_p:
        probes["in_step_by_p"] = by_p
    return Params(backend="gloo", world_size=2, linear=LinearFit(o_s=300e-6, w_bytes_per_s=1e9), probes=probes)


def test_more_ranks_than_cores_on_terms_from_another_p_is_warned():
    w = shared_cores_warning(_params(), 4, "gloo", 2)
    assert w and w.startswith("warning: 4 ranks share 2 cores here")
    assert "measured at p = 2" in w and "ddpsim calibrate --world-size 2,4" in w


@pytest.mark.parametrize(
    "params, p, backend, cpus",
    [
        (_params(), 2, "gloo", 2),  # the calibration's own p
        (_params(), 4, "gloo", 4),  # a core a rank
        (_params(), 4, "nccl", 2),  # GPUs
        (_params({"4": dict(FIT)}), 4, "gloo", 2),  # measured at this p too
        (_params(in_step=False), 4, "gloo", 2),  # no in-step terms to be wrong
    ],
)
def test_no_warning_where_the_terms_hold_or_there_are_none(params, p, backend, cpus):
    assert shared_cores_warning(params, p, backend, cpus) is None


def test_the_nearest_p_measured_is_named():
    w = shared_cores_warning(_params({"8": dict(FIT)}), 6, "gloo", 2)
    assert w and "measured at p = 8" in w and "--world-size 6,8" in w
