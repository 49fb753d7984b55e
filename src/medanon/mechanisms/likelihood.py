"""Likelihoods of published values under the mechanisms: what an attacker computes from noise.

The samplers of this package answer "draw an output for this input"; the functions here answer
the question an adversary asks of a published value: "how probable is this output if the input
was x?". They are pure functions of the published values, the hypothesised inputs and the
mechanisms' public parameters (ε, domain, precision, utilities), so the attacks in
:mod:`medanon.attacks` can weight candidates without reading any algorithm's bookkeeping.

Clipped, rounded Laplace (PPMS-DP strict, paper 000's LaplacePerturbation made ε-DP)
--------------------------------------------------------------------------------------
The strict PPMS-DP pipeline publishes v = round_d(clip(clip(x, lo, hi) + Z, lo, hi)) with Z the
noise of :class:`~medanon.mechanisms.LaplaceMechanism` (sensitivity hi − lo) and d decimals.
Write h = 10^(−d)/2 and B(v) = [v − h, v + h) the rounding bin of v. Then

    P(v | x) = P(clip(x') + Z ∈ B*(v)),  x' = clip(x, lo, hi),

where B*(v) is B(v) extended to −∞ when lo ∈ B(v) (the point mass of everything clipped to lo)
and to +∞ when hi ∈ B(v). With F the Laplace CDF of scale b,

    P(v | x) = F(c₂ − x') − F(c₁ − x'),     B*(v) = [c₁, c₂).

A value whose bin misses [lo, hi] is impossible (log-probability −∞): the only hard evidence a
clipped Laplace value can give.

Scale. The sampler draws exact discrete Laplace noise on a power-of-two grid γ ≈ b·2^-20 with
scale b = :attr:`LaplaceMechanism.scale` (which includes its rounding allowance). We integrate
the continuous Laplace of the same scale b: on bins of width 10^-d ≫ γ the two agree to a
relative 2^-20, far below anything the statistical tests (χ² against the sampler,
``tests/statistical/test_likelihoods.py``) or an attacker could notice.

When the input is only known to lie in an interval [t₁, t₂] (an adversary who knows "45-60 kg";
the prior of a population), :func:`laplace_log_likelihood` returns the mean of P(v | x) over x
uniform on [t₁, t₂], in closed form: clipping puts the parts of [t₁, t₂] outside [lo, hi] on the
bounds, and the integral of F over the rest is elementary. Everything is computed in log space
(sums of terms whose exponents never exceed 0), so ε = 1000 or ε = 10^-3 stays finite: a far
value gets log-probability −5000, never −∞.

Exponential mechanism over a hierarchy (PPMS-DP_all strict)
-----------------------------------------------------------
:class:`~medanon.mechanisms.ExponentialMechanism` selects candidate v for input u with
probability exp(f·U[u, v]) / Σ_w exp(f·U[u, w]), f = ε/(2Δ) (ε/Δ when monotonic).
:func:`exponential_log_table` gives log P(v | u) for every pair with that normalization (the
sampler's own :meth:`~ExponentialMechanism.log_weights`). PPMS-DP_all's strict variant uses
U = −IL over every node of the hierarchy, Δ = 1, not monotonic; :func:`hierarchy_information_loss`
computes that IL from the tree's parent and depth arrays (the same values as the sampler's
``full_tree_il``; a test holds them equal).

References: Dwork, McSherry, Nissim, Smith (TCC 2006) for the Laplace mechanism; McSherry and
Talwar (FOCS 2007) for the exponential mechanism; paper 000 §IV.B-C for where they are applied.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ValidationError
from .exponential import ExponentialMechanism
from .laplace import LaplaceMechanism

__all__ = ["exponential_log_table", "hierarchy_information_loss", "laplace_log_likelihood",
           "laplace_scale"]

_LOG_HALF = math.log(0.5)


def laplace_scale(*, epsilon: Any, lo: float, hi: float) -> float:
    """The noise scale the strict sampler uses on domain [lo, hi]: ``LaplaceMechanism.scale``.

    The sampler is built as ``LaplaceMechanism(epsilon=ε, sensitivity=hi - lo)``; so is this.
    """
    lo, hi = _domain(lo, hi)
    return LaplaceMechanism(epsilon=epsilon, sensitivity=hi - lo).scale


def _domain(lo: float, hi: float) -> tuple[float, float]:
    try:
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise ValidationError(f"The 'lo' and 'hi' parameters of laplace_log_likelihood must be "
                              f"numbers; got {lo!r} and {hi!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValidationError(f"The 'lo' and 'hi' parameters of laplace_log_likelihood must be "
                              f"finite with lo < hi; got {lo!r} and {hi!r}.")
    return lo, hi


def _log_minus_expm1(x: np.ndarray) -> np.ndarray:
    """log(1 − e^x) for x <= 0 (−inf at x = 0, 0 at x = −inf)."""
    with np.errstate(divide="ignore"):
        return np.log(-np.expm1(x))


def _log_point(c1: np.ndarray, c2: np.ndarray, x: np.ndarray | float, b: float) -> np.ndarray:
    """log P(x + Z ∈ [c1, c2)) for Laplace Z of scale b (c1 may be −inf, c2 +inf)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        width = _log_minus_expm1(-(c2 - c1) / b)  # log(1 − e^{−(c2−c1)/b}), 0 for infinite bins
        right = _LOG_HALF - (c1 - x) / b + width   # bin entirely above x
        left = _LOG_HALF - (x - c2) / b + width    # bin entirely below x
        inside = np.log(-0.5 * (np.expm1((c1 - x) / b) + np.expm1((x - c2) / b)))
    return np.where(x <= c1, right, np.where(x >= c2, left, inside))


def _log_integral(c1: np.ndarray, c2: np.ndarray, x1: np.ndarray, x2: np.ndarray,
                  b: float) -> np.ndarray:
    """log ∫_{x1}^{x2} P(x + Z ∈ [c1, c2)) dx for x1 < x2 (−inf when x1 >= x2).

    The x-range is cut at c1 and c2; on each piece the integrand is one exponential (or one
    minus two), integrated exactly; the pieces are summed in log space.
    """
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        log_width = _log_minus_expm1(-(c2 - c1) / b)
        log_half_b = math.log(0.5 * b)
        # piece below the bin: x in [x1, min(x2, c1)]; integrand ½ e^{−(c1−x)/b}(1 − e^{−(c2−c1)/b})
        a2 = np.minimum(x2, c1)
        below = (log_half_b + log_width - (c1 - a2) / b
                 + _log_minus_expm1(-(a2 - x1) / b))
        below = np.where(a2 > x1, below, -np.inf)
        # piece above the bin: x in [max(x1, c2), x2]; integrand ½ e^{−(x−c2)/b}(1 − ...)
        a1 = np.maximum(x1, c2)
        above = (log_half_b + log_width - (a1 - c2) / b
                 + _log_minus_expm1(-(x2 - a1) / b))
        above = np.where(x2 > a1, above, -np.inf)
        # piece inside the bin: x in [m1, m2] ⊆ [c1, c2]; integrand 1 − ½e^{(c1−x)/b} − ½e^{(x−c2)/b}
        m1, m2 = np.maximum(x1, c1), np.minimum(x2, c2)
        # ∫(1 − ½e^{(c1−x)/b} − ½e^{(x−c2)/b}) = (m2−m1) − ½b(e^{(c1−m1)/b} − e^{(c1−m2)/b})
        #                                       − ½b(e^{(m2−c2)/b} − e^{(m1−c2)/b})
        inner = ((m2 - m1)
                 + 0.5 * b * (np.expm1((c1 - m2) / b) - np.expm1((c1 - m1) / b))
                 + 0.5 * b * (np.expm1((m1 - c2) / b) - np.expm1((m2 - c2) / b)))
        inside = np.where(m2 > m1, np.log(np.maximum(inner, 0.0)), -np.inf)
        return np.logaddexp(np.logaddexp(below, above), inside)


def laplace_log_likelihood(published: Any, true_lo: Any, true_hi: Any = None, *, epsilon: Any,
                           lo: float, hi: float, decimals: int) -> np.ndarray:
    """log P(published | true value) under the strict PPMS-DP Laplace perturbation.

    Args:
        published: Published values (array-like; snapped to ``decimals``).
        true_lo: The hypothesised true values, or the lower ends of intervals they lie in.
        true_hi: The upper ends (None: ``true_lo``, a point). Broadcasts with the others.
        epsilon: ε of the mechanism.
        lo, hi: The public domain the value was clipped to before and after the noise.
        decimals: Published precision.

    Returns:
        log-probabilities (float64, broadcast shape); −inf for impossible values (outside the
        domain). For an interval, the log of the mean probability over it (uniform).

    Raises:
        ValidationError: invalid ε, domain or decimals; a true interval with lo > hi.
    """
    lo, hi = _domain(lo, hi)
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)) or not (
            0 <= int(decimals) <= 12):
        raise ValidationError(f"The 'decimals' parameter of laplace_log_likelihood must be an "
                              f"integer in [0, 12]; got {decimals!r}.")
    b = laplace_scale(epsilon=epsilon, lo=lo, hi=hi)
    v = np.round(np.asarray(published, dtype=np.float64), int(decimals))
    t1 = np.asarray(true_lo, dtype=np.float64)
    t2 = t1 if true_hi is None else np.asarray(true_hi, dtype=np.float64)
    if np.any(t1 > t2):
        raise ValidationError("The true intervals of laplace_log_likelihood must have lo <= hi.")
    h = 0.5 * 10.0 ** (-int(decimals))
    c1, c2 = v - h, v + h
    possible = (c2 > lo) & (c1 <= hi)
    c1 = np.where(c1 <= lo, -np.inf, c1)  # lo in the bin: the point mass at lo belongs to it
    c2 = np.where(c2 > hi, np.inf, c2)    # hi in the bin: so does the point mass at hi
    v, c1, c2, t1, t2, possible = np.broadcast_arrays(v, c1, c2, t1, t2, possible)
    point = t1 == t2
    # Point inputs: clip, then one CDF difference.
    out = _log_point(c1, c2, np.clip(t1, lo, hi), b)
    if not point.all():
        width = t2 - t1
        with np.errstate(divide="ignore", invalid="ignore"):
            # Parts of [t1, t2] below lo (above hi) are clipped to lo (hi) by the mechanism.
            below = np.log(np.clip(lo - t1, 0.0, None) / width) + _log_point(c1, c2, lo, b)
            above = np.log(np.clip(t2 - hi, 0.0, None) / width) + _log_point(c1, c2, hi, b)
            x1, x2 = np.clip(t1, lo, hi), np.clip(t2, lo, hi)
            middle = _log_integral(c1, c2, x1, x2, b) - np.log(width)
            mean = np.logaddexp(np.logaddexp(below, above), middle)
        out = np.where(point, out, mean)
    return np.where(possible, out, -np.inf)


def exponential_log_table(utilities: Any, *, epsilon: Any, sensitivity: Any,
                          monotonic: bool = False) -> np.ndarray:
    """log P(select v | input u) for every pair: row u of the result is the log-probabilities.

    Args:
        utilities: Square (or n_in × n_out) matrix; row u holds the utilities of every candidate
            when the input is u (for PPMS-DP_all strict: −IL(u, v)).
        epsilon, sensitivity, monotonic: As for :class:`ExponentialMechanism`.

    Returns:
        The table of log-probabilities (each row's exponentials sum to 1).
    """
    mech = ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity, monotonic=monotonic)
    u = np.asarray(utilities, dtype=np.float64)
    if u.ndim != 2 or 0 in u.shape:
        raise ValidationError(f"The 'utilities' parameter of exponential_log_table must be a "
                              f"non-empty 2-D matrix; got shape {u.shape}.")
    rows = [mech.log_weights(row) for row in u]  # the sampler's own log-weights, row by row
    table = np.vstack(rows)
    top = table.max(axis=1, keepdims=True)
    return table - (top + np.log(np.exp(table - top).sum(axis=1, keepdims=True)))


def hierarchy_information_loss(parent: Any, depth: Any) -> np.ndarray:
    """IL(u, v) between every two nodes of a tree, with φ over the whole tree (000's IL+ term).

    φ(u) is the set of nodes on the path from the root to u (|φ(u)| = depth(u) + 1), and
    IL(u, v) = |φ(u) Δ φ(v)| / |φ(u) ∪ φ(v)|. ``parent`` holds each node's parent code (−1 for
    the root), ``depth`` each node's depth (a Taxonomy's ``parent_array`` and ``depth_array``).
    """
    parent = np.asarray(parent, dtype=np.int64)
    depth = np.asarray(depth, dtype=np.int64)
    n = len(parent)
    if depth.shape != (n,) or n == 0:
        raise ValidationError("The 'parent' and 'depth' parameters of hierarchy_information_loss "
                              "must be non-empty arrays of the same length.")
    height = int(depth.max())
    # ancestor[u, d]: u's ancestor at depth d (−1 below u's own depth).
    ancestor = np.full((n, height + 1), -1, dtype=np.int64)
    node = np.arange(n)
    current = node.copy()
    for _ in range(height + 1):
        ok = current >= 0
        ancestor[node[ok], depth[current[ok]]] = current[ok]
        current = np.where(ok, parent[np.maximum(current, 0)], -1)
    same = (ancestor[:, None, :] == ancestor[None, :, :]) & (ancestor[:, None, :] >= 0)
    common = same.sum(axis=2)  # |φ(u) ∩ φ(v)| = depth(lca) + 1 (paths from the root)
    union = (depth[:, None] + 1) + (depth[None, :] + 1) - common
    return (union - common) / union
