"""Collective cost formulas, one function each.

Units: message sizes in bytes per rank (``msg_bytes``: the buffer every rank
contributes, as in nccl-tests' ``size``), times in seconds, bandwidths in
bytes per second. ``p`` is the number of ranks taking part.

Two families:

* the seeds' linear model ``T(n) = o + n / w`` with a per-call overhead ``o``
  and an algorithm bandwidth ``w`` (nccl-tests ``algbw``), fitted at one world
  size;
* alpha-beta-gamma models (Thakur, Rabenseifner & Gropp, "Optimization of
  Collective Communication Operations in MPICH", IJHPCA 2005; Chan et al.,
  "Collective communication: theory, practice, and experience", 2007) with
  ``alpha`` the per-message latency, ``beta`` seconds per byte sent and
  ``gamma`` seconds per byte reduced. They map a fit at one world size onto
  another.

``p`` not a power of two: recursive algorithms use ``ceil(lg p)`` rounds (the
extra fold-in step of MPICH's non-power-of-two variant is not modelled).

The two-level (intra-node, inter-node) composition is ``CostModel`` in
``simulator.network``: an all-reduce inside the node, then one across nodes of
the ``1/g`` shard, each level taking its cheapest algorithm for the size.
"""

from __future__ import annotations

import math

ALGORITHMS = ("ring", "recursive_doubling", "rabenseifner", "reduce_bcast", "tree")


def _lg(p: int) -> int:
    return max(0, math.ceil(math.log2(p))) if p > 1 else 0


def linear_time_s(msg_bytes: float, o_s: float, w_bytes_per_s: float) -> float:
    """``o + n/w``: one call of overhead ``o_s`` seconds moving ``msg_bytes`` at ``w_bytes_per_s``."""
    return o_s + msg_bytes / w_bytes_per_s


def ring_allreduce_time_s(
    msg_bytes: float, p: int, alpha_s: float, beta_s_per_byte: float, gamma_s_per_byte: float
) -> float:
    """Ring all-reduce (reduce-scatter then all-gather): ``2(p-1)a + 2(p-1)/p nb + (p-1)/p ng``."""
    if p <= 1:
        return 0.0
    return (
        2 * (p - 1) * alpha_s
        + 2 * (p - 1) / p * msg_bytes * beta_s_per_byte
        + (p - 1) / p * msg_bytes * gamma_s_per_byte
    )


def recursive_doubling_allreduce_time_s(
    msg_bytes: float, p: int, alpha_s: float, beta_s_per_byte: float, gamma_s_per_byte: float
) -> float:
    """Recursive doubling: ``lg p (a + nb + ng)``."""
    k = _lg(p)
    return k * (alpha_s + msg_bytes * beta_s_per_byte + msg_bytes * gamma_s_per_byte)


def rabenseifner_allreduce_time_s(
    msg_bytes: float, p: int, alpha_s: float, beta_s_per_byte: float, gamma_s_per_byte: float
) -> float:
    """Rabenseifner (recursive-halving reduce-scatter + recursive-doubling all-gather):
    ``2 lg p a + 2(p-1)/p nb + (p-1)/p ng``."""
    if p <= 1:
        return 0.0
    return (
        2 * _lg(p) * alpha_s
        + 2 * (p - 1) / p * msg_bytes * beta_s_per_byte
        + (p - 1) / p * msg_bytes * gamma_s_per_byte
    )


def reduce_bcast_allreduce_time_s(
    msg_bytes: float, p: int, alpha_s: float, beta_s_per_byte: float, gamma_s_per_byte: float
) -> float:
    """Binomial-tree reduce then binomial-tree broadcast: ``2 lg p a + 2n lg p b + n lg p g``."""
    k = _lg(p)
    return 2 * k * alpha_s + 2 * msg_bytes * k * beta_s_per_byte + msg_bytes * k * gamma_s_per_byte


def double_tree_allreduce_time_s(
    msg_bytes: float, p: int, alpha_s: float, beta_s_per_byte: float, gamma_s_per_byte: float
) -> float:
    """Pipelined (double binary) tree all-reduce, NCCL's "tree" algorithm: a pipelined
    reduce to the root then a pipelined broadcast, each at full link bandwidth
    (Sanders, Speck & Traeff, "Two-tree algorithms for full bandwidth broadcast,
    reduction and scan", 2009): ``2 lg p a + 2nb + ng``. Pipeline fill beyond the
    ``lg p`` latency terms is not modelled."""
    if p <= 1:
        return 0.0
    k = _lg(p)
    return 2 * k * alpha_s + 2 * msg_bytes * beta_s_per_byte + msg_bytes * gamma_s_per_byte


ALLREDUCE = {
    "ring": ring_allreduce_time_s,
    "recursive_doubling": recursive_doubling_allreduce_time_s,
    "rabenseifner": rabenseifner_allreduce_time_s,
    "reduce_bcast": reduce_bcast_allreduce_time_s,
    "tree": double_tree_allreduce_time_s,
}


def allreduce_time_s(
    algorithm: str, msg_bytes: float, p: int, alpha_s: float, beta_s_per_byte: float, gamma_s_per_byte: float
) -> float:
    """All-reduce time of a named algorithm (one of ``ALGORITHMS``)."""
    try:
        fn = ALLREDUCE[algorithm]
    except KeyError:
        raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; allowed: {', '.join(ALGORITHMS)}") from None
    return fn(msg_bytes, p, alpha_s, beta_s_per_byte, gamma_s_per_byte)


def linear_params_from_abg(
    algorithm: str, p: int, alpha_s: float, beta_s_per_byte: float, gamma_s_per_byte: float
) -> tuple[float, float]:
    """The ``(o_s, w_bytes_per_s)`` of the linear model equal to an alpha-beta-gamma algorithm at ``p`` ranks.

    Every formula above is affine in ``n``: ``T(n) = T(0) + n * dT/dn``.
    """
    t0 = allreduce_time_s(algorithm, 0.0, p, alpha_s, beta_s_per_byte, gamma_s_per_byte)
    t1 = allreduce_time_s(algorithm, 1.0, p, alpha_s, beta_s_per_byte, gamma_s_per_byte)
    slope = t1 - t0
    return t0, (1.0 / slope if slope > 0 else math.inf)


def busbw_factor_allreduce(p: int) -> float:
    """nccl-tests: ``busbw = algbw * 2(p-1)/p`` for all-reduce."""
    return 2 * (p - 1) / p if p > 1 else 1.0
