"""Where a profile entry is not a parameter, one clear error names it (the entries are checked in one pass)."""

import pytest

from simulator.profile import GradProfile, ParamSpec


@pytest.mark.parametrize("bad", [None, 5, "w"])
def test_an_entry_that_is_not_a_parameter_is_one_clear_error(bad):
    with pytest.raises(ValueError, match=f"a parameter entry must be an object, got {bad!r}"):
        GradProfile("m", (ParamSpec("a", 4), bad))  # type: ignore[arg-type]
