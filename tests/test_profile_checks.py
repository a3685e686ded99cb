"""Where a profile entry is not a parameter, one clear error names it (the entries are checked in one pass)."""

import pytest

from simulator.profile import GradProfile, ParamSpec


@pytest.mark.parametrize("bad", [None, 5, "w"])
def test_an_entry_that_is_not_a_parameter_is_one_clear_error(bad):
    with pytest.raises(ValueError, match=f"a parameter entry must be an object, got {bad!r}"):
        GradProfile("m", (ParamSpec("a", 4), bad))  # type: ignore[arg-type]


def test_a_saved_profile_is_one_line_a_parameter_and_reads_back_equal(tmp_path):
    """``GradProfile.save`` writes each parameter on a line and the ready order on one (a model of tens of
    thousands of tensors stays quick to write), and what it writes reads back as the same profile, its env's
    non-finite numbers as null."""
    import json

    from simulator import zoo
    from simulator.profile import GradProfile

    prof = zoo.profile_from_flops("gpt2-small")
    prof = GradProfile(**{**prof.__dict__, "env": {**prof.env, "odd": float("nan")}})
    f = tmp_path / "p.json"
    prof.save(f)
    lines = f.read_text().splitlines()
    assert sum(1 for ln in lines if ln.lstrip().startswith('{"name": ')) == len(prof.params)
    assert sum(1 for ln in lines if ln.lstrip().startswith('"ready_order": [')) == 1
    d = json.loads(f.read_text())
    assert d["env"]["odd"] is None
    back = GradProfile.load(f)
    assert back.params == prof.params and back.ready_order == prof.ready_order and back.forward_s == prof.forward_s
