"""Units are defined once, in ``simulator.units``; every other module imports them."""

from __future__ import annotations

import re
from pathlib import Path

from simulator.units import GB, GIB, KIB, MIB, TIB

ROOT = Path(__file__).resolve().parents[1]


def test_binary_and_decimal_multiples():
    assert (KIB, MIB, GIB, TIB) == (2**10, 2**20, 2**30, 2**40)
    assert GB == 10**9  # nccl-tests' GB/s


def test_no_module_defines_its_own_byte_units():
    pattern = re.compile(r"^\s*(KIB|MIB|GIB|TIB|KB|MB|GB)\s*=", re.MULTILINE)
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("simulator", "realrun", "calibration", "ddpsim", "tests", "benchmarks")
        for p in (ROOT / folder).rglob("*.py")
        if p.name != "units.py" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
