"""IPA's node choice on the true data: an expected-loss utility with sensitivity O(1/n).

Not in paper 004. The paper (Eq. 12, Thm 8; spec §3.8 Step 2) perturbs every lattice node, scores
each noisy output with ``IL = NCP + EMD + Rate`` and picks a node by the exponential mechanism with
``u = 3 − IL`` and ``Δu = 3``: one record may move every score by the whole range, so at
ε_cand = 0.3 the best node weighs at most e^{0.15} = 1.16 times the worst and the choice is close
to uniform. Here the node is chosen *before* any perturbation, by a utility computed on the true
data that one record moves by O(1/n); then only the chosen node is perturbed (the paper's
Algorithm 1 with the same mechanisms). Derivation in full: ``docs/algorithms/ipa.md``,
"Choosing the node on the true data".

The utility of node ``g`` is minus the *expected* per-record loss of g's release:

- ``Z ~ DLap(b)``, ``b = (t−1)/ε_supp``, ``p = e^{−1/b}``: the noisy threshold's noise. A class of
  ``m`` records is suppressed with probability ``s(m) = Pr[m <= t + Z]`` (Def. 3), i.e.
  ``p^{m−t}/(1+p)`` for ``m > t`` and ``1 − p^{t−m+1}/(1+p)`` otherwise;
- ``c0 = E[max(0, Z')] = p'/((1+p')(1−p'))``, ``Z' ~ DLap(1/ε_ins)``, ``p' = e^{−ε_ins}``: the
  expected number of counterfeit rows of a class (Thm 6);
- a class ``E`` with ``m`` records and NCP ``a`` (the mean over dimensions of its labels' NCP,
  a function of the public hierarchies only) contributes
  ``φ(m, a) = m·(a + (1−a)·s(m)) + w·(1 − s(m))·A(m)``, ``A(m) = m·c0/(m + c0)``: its records'
  expected NCP (a suppressed record counts 1) plus ``w`` times the expected counterfeit share of
  its rows, counted per record (``m·c0/(m+c0)``), if it is kept. ``w = 2``: the class's
  Rate, and its EMD, which equals ``F/(m+F)`` times the distance between its values and the
  counterfeits' and so is at most the Rate (about equal at ε_value <= 1, where counterfeit values
  are nearly uniform over the domain and mostly fall outside the class);
- ``T_g(D) = Σ_E φ(|E|, a_E)`` and ``u_g(D) = −T_g(D)/max(n, N)``, ``n = |D|``, ``N >= 1`` an
  integer fixed before the choice: a public lower bound on the number of records
  (``min_records``) or a noisy count ``max(1, n + DLap(1/ε_records))`` paid from the budget.

Sensitivity (neighbours: add or remove one record; hierarchies and parameters public):
``|u_g(D) − u_g(D')| <= Δ_T/N`` for every node and every neighbouring pair, whatever n, with

    Δ_T = 1 + w·c0/(1+c0) + max(w·ξ, κ),   q(m) = Pr[Z = m−t] = (1−p)/(1+p)·p^{|m−t|},
    κ = max_m m·q(m),   ξ = max_m A(m)·q(m)  (<= c0·(1−p)/(1+p)).

Adding a record changes one class, from m to m+1 records, and ``T`` by
``δ = a + (1−a)(s(m+1) − m·q(m)) + w((1−s(m+1))(A(m+1) − A(m)) + A(m)·q(m))``
(``q(m) = s(m) − s(m+1)``, ``A(m+1) − A(m) <= A(1) = c0/(1+c0)``), so
``−κ <= δ <= 1 + w(c0/(1+c0) + ξ)``; and ``0 <= T/n <= 1 + w·c0/(1+c0)``. For
``n >= N``: ``u' − u = (T/n − δ)/(n+1)``; for ``n + 1 <= N``: ``−δ/N``; ``N`` integer leaves no
third case. The clamp ``max(n, N)`` makes the bound hold for every n, so a noisy ``N`` that
overshoots n costs nothing but sharpness, and none that is wrong breaks the guarantee.

The selection is run with :class:`~medanon.mechanisms.ExponentialMechanism` at sensitivity
``Δ_T`` on the utilities ``N·u_g = −T_g·N/max(n, N)`` (the same distribution: both ε·u/(2Δ)).
Floating point: ``T_g`` is a sum of doubles (relative error about 1e-13); ``Δ_T`` is rounded up to
a multiple of 1e-6, far above it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._validation import check_int
from .lattice import GroupTable, node_ncp

__all__ = ["COUNTERFEIT_WEIGHT", "ExpectedLoss"]

#: w: the counterfeit share counts for the Rate and (at most) the EMD
COUNTERFEIT_WEIGHT = 2


class ExpectedLoss:
    """The expected per-record loss of a node's IPA release, and its sensitivity (module doc).

    Args:
        threshold: IPA's suppression threshold t (>= 2).
        suppression_epsilon: ε of the noisy threshold (scale (t − 1)/ε).
        insertion_epsilon: ε of the counterfeit counts (scale 1/ε).
        weight: w, the weight of the counterfeit share (default 2: Rate and EMD).
    """

    def __init__(self, *, threshold: int, suppression_epsilon: Any, insertion_epsilon: Any,
                 weight: int = COUNTERFEIT_WEIGHT) -> None:
        owner = "ExpectedLoss"
        self.threshold = check_int(threshold, name="threshold", owner=owner, minimum=2)
        self.weight = check_int(weight, name="weight", owner=owner, minimum=0)
        #: p of the noisy threshold's discrete Laplace noise
        self.p = math.exp(-float(Fraction(suppression_epsilon)) / (self.threshold - 1))
        p_ins = math.exp(-float(Fraction(insertion_epsilon)))
        #: expected counterfeit rows per released class, E[max(0, Z')]
        self.c0 = p_ins / ((1 + p_ins) * (1 - p_ins))
        #: the largest probability of one value of Z, Pr[Z = 0]
        self.q = (1 - self.p) / (1 + self.p)

    def suppression_probability(self, sizes: np.ndarray) -> np.ndarray:
        """``s(m) = Pr[m <= t + Z]``: a class of m records is suppressed (Def. 3)."""
        k = np.asarray(sizes, dtype=float) - self.threshold
        over = self.p ** np.maximum(k, 0.0) / (1 + self.p)
        under = 1.0 - self.p ** (1.0 - np.minimum(k, 0.0)) / (1 + self.p)
        return np.where(k > 0, over, under)

    def class_totals(self, sizes: np.ndarray, ncp: np.ndarray) -> np.ndarray:
        """``φ(m, a)`` of each class: expected NCP of its records plus w × expected counterfeit
        share, both summed over its records."""
        m = np.asarray(sizes, dtype=float)
        s = self.suppression_probability(m)
        return m * (ncp + (1.0 - ncp) * s) + self.weight * (1.0 - s) * m * self.c0 / (m + self.c0)

    def node_total(self, hierarchies, table: GroupTable) -> float:
        """``T_g``: the sum of :meth:`class_totals` over the classes of the node's group table."""
        ec_of_row, first = table.classes()
        sizes = np.bincount(ec_of_row, weights=table.count)
        ncp = node_ncp(hierarchies, table.node, [c[first] for c in table.codes])
        return float(self.class_totals(sizes, ncp).sum())

    @property
    def kappa(self) -> float:
        """``κ = max over m >= 0 of m·Pr[Z = m − t]``.

        For m <= t, ``m·p^{t−m}`` grows with m; for m >= t, ``m·p^{m−t}`` grows while
        ``m <= p/(1−p)``: the maximum is at t or at ``⌊p/(1−p)⌋ + 1`` (its neighbours are
        evaluated too, against rounding of the floor).
        """
        t = self.threshold
        peak = math.floor(self.p / (1 - self.p)) + 1 if self.p < 1 else t
        candidates = {t} | {m for m in (peak - 1, peak, peak + 1) if m >= t}
        return self.q * max(m * self.p ** (m - t) for m in candidates)

    @property
    def xi(self) -> float:
        """``ξ = max over m >= 0 of A(m)·Pr[Z = m − t]`` (at most ``c0·q``).

        Scanned from m = 0 upwards; past t, ``A(m)·Pr[Z = m−t] < c0·q·p^{m−t}``, so the scan
        stops once that tail bound is below the largest value seen.
        """
        t, p, c0 = self.threshold, self.p, self.c0
        best, m = 0.0, 0
        while True:
            best = max(best, m * c0 / (m + c0) * self.q * p ** abs(m - t))
            if m > t and c0 * self.q * p ** (m - t) <= best:
                return best
            m += 1

    @property
    def record_bound(self) -> float:
        """``λ = 1 + w·c0/(1+c0)``: the most one record adds to ``T`` on average (T/n <= λ)."""
        return 1.0 + self.weight * self.c0 / (1 + self.c0)

    @property
    def sensitivity(self) -> Fraction:
        """``Δ_T = λ + max(w·ξ, κ)``, rounded up to a multiple of 1e-6: ``|u_g(D) − u_g(D')|
        <= Δ_T/N`` for neighbours D, D' (module doc)."""
        exact = self.record_bound + max(self.weight * self.xi, self.kappa)
        return Fraction(math.ceil(exact * 1_000_000) + 1, 1_000_000)

    def parameters(self) -> dict[str, float]:
        return {"weight": self.weight, "expected_counterfeits": self.c0,
                "sensitivity_times_N": float(self.sensitivity)}
