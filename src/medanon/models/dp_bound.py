"""The combined bound for releases that publish ε-DP perturbed QIDs next to generalized groups.

Setting (PPMS-DP, paper 000, strict variant). After the hard exclusions an adversary can make
for sure (CaseID linkage: B-, F-, L-, MD-attacks, on the generalized QIDs only), a group g keeps
the candidate records K. Each candidate r also publishes perturbed QID values; the mechanisms
that produced them are ε_r-DP for that case, where ε_r is the sum of the per-case ε of every
linked release the case appears in (sequential composition: the adversary sees all of them).

For a target whose true QID values are t, the adversary's likelihood weight of candidate r is
w_r = P(r's published perturbed values | r's values are t). ε_r-DP bounds the ratio of w_r to
the same probability under r's real values by e^{±ε_r}, so for the real record w_r ≤ e^{ε_r}·c
and for every other w_r' ≥ e^{-ε_r'}·c. With a uniform prior over K the posterior obeys

    P(r is t) ≤ e^{ε_r} / (e^{ε_r} + Σ_{r' ∈ K, r' ≠ r} e^{-ε_r'})                        (1)

and the posterior share of the candidates holding a sensitive term s (pool P = K plus the
excludable records that hold s, which the adversary may keep, as in the θ check) obeys

    P(s) ≤ A / (A + B),  A = Σ_{r ∈ P, s ∈ r} e^{ε_r},  B = Σ_{r ∈ P, s ∉ r} e^{-ε_r}.       (2)

With one ε for every candidate, (1) ≤ 1/k exactly when |K| ≥ 1 + (k − 1)·e^{2ε}, and a share p
of term s keeps (2) ≤ θ exactly when p ≤ θ / (θ + (1 − θ)·e^{2ε}): :func:`inflated_k` and
:func:`inflated_theta` give the group size and threshold a grouping must meet for the combined
bound to hold (``--dp-aware-grouping``).

These are upper bounds over every adversary's prior-free likelihood weighting; the
likelihood-weighted attacker of :mod:`medanon.attacks` computes the actual posterior, which is
never above them.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_fraction, check_int

__all__ = ["inflated_k", "inflated_theta", "posterior_bounds", "term_share_bound"]


def _epsilon(value: float, owner: str) -> float:
    eps = float(value)
    if not (eps >= 0.0 and math.isfinite(eps)):
        from ..errors import ValidationError

        raise ValidationError(f"The 'epsilon' parameter of {owner} must be a finite number >= 0; "
                              f"got {value!r}.")
    return eps


def inflated_k(k: int, epsilon: float) -> int:
    """The number of candidates a group needs so that bound (1) is at most 1/k (one ε for all).

    Args:
        k: The k of the model (>= 1).
        epsilon: ε per case over the linked releases (>= 0).
    """
    k = check_int(k, name="k", owner="inflated_k", minimum=1)
    eps = _epsilon(epsilon, "inflated_k")
    if k > 1 and 2.0 * eps + math.log(k - 1) > 700.0:  # beyond a double (and any data set)
        from ..errors import ValidationError

        raise ValidationError(f"The 'epsilon' parameter of inflated_k is too large: 1 + (k-1)e^(2 "
                              f"epsilon) with k = {k} and epsilon = {eps:g} exceeds 1e300 cases.")
    need = 1.0 + (k - 1) * math.exp(2.0 * eps)
    # Guard against the float product landing a hair above an integer.
    return int(math.ceil(need - 1e-9))


def inflated_theta(theta: float, epsilon: float) -> float:
    """The share of a term a group may hold so that bound (2) is at most θ (one ε for all)."""
    theta = check_fraction(theta, name="theta", owner="inflated_theta")
    eps = _epsilon(epsilon, "inflated_theta")
    if theta >= 1.0:
        return 1.0
    # θ e^{-2ε} / (θ e^{-2ε} + 1 − θ): no overflow for large ε (it tends to 0)
    shrink = math.exp(-2.0 * eps)
    return theta * shrink / (theta * shrink + (1.0 - theta))


def posterior_bounds(epsilons: np.ndarray) -> np.ndarray:
    """Bound (1) for each candidate of one group, given each candidate's ε_r.

    An empty group gives an empty array; a single candidate gives 1.
    """
    eps = np.asarray(epsilons, dtype=np.float64)
    if eps.size == 0:
        return eps
    # (1) = 1 / (1 + e^{-ε_r} Σ_{r'≠r} e^{-ε_r'}). The sum is taken relative to the smallest ε
    # (its largest term is 1), so very large or very different ε neither overflow nor give
    # 0/0: scaling numerator and denominator by e^{-max ε} did both once ε reached ~350.
    low = float(eps.min())
    down = np.exp(-(eps - low))
    others = np.maximum(down.sum() - down, 0.0)
    with np.errstate(divide="ignore", over="ignore"):
        log_rest = -eps - low + np.log(others)  # log(e^{-ε_r} Σ_{r'≠r} e^{-ε_r'}); -inf alone
        return 1.0 / (1.0 + np.exp(log_rest))


def term_share_bound(eps_with: np.ndarray, eps_without: np.ndarray) -> float:
    """Bound (2) for one term: ε_r of the pool records holding it and of those that do not."""
    a = np.asarray(eps_with, dtype=np.float64)
    b = np.asarray(eps_without, dtype=np.float64)
    if a.size == 0:
        return 0.0
    top = float(max(a.max(), (-b).max() if b.size else -np.inf))
    num = np.exp(a - top).sum()
    return float(num / (num + np.exp(-b - top).sum()))
