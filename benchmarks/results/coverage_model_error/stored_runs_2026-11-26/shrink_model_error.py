"""Coverage of stored runs with the model-error term shrunk toward a pooled value M0 with K pseudo-residuals:
sd^2 = (K M0^2 + 2 m^2) / (K + 2), m the cell's in-step residual RMS (two residuals). Usage, from the repository
root: python .../shrink_model_error.py M0 K RUN...  (M0 0, K 1e9: no model-error term at all)."""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _coverage import recompute  # noqa: E402

m0, k = float(sys.argv[1]), float(sys.argv[2])


def shrunk(cell, rows, mc):
    mn = math.sqrt((k * m0 * m0 + 2 * mc * mc) / (k + 2))
    return (lambda r: mn), f"model {mc * 100:4.1f}->{mn * 100:4.1f}"


recompute(sys.argv[3:], shrunk)
