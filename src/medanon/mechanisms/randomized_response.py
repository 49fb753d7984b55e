"""k-ary (generalized) randomized response.

Warner, "Randomized response: a survey technique for eliminating evasive answer bias" (JASA
1965) for two answers; Kairouz, Oh and Viswanath, "Extremal mechanisms for local differential
privacy" (JMLR 2016) and Kairouz, Bonawitz and Ramage (ICML 2016) for m categories. Each value is
reported truthfully with probability p = e^ε/(e^ε + m - 1) and otherwise replaced by one of the
m - 1 other categories chosen uniformly, i.e. with probability q = 1/(e^ε + m - 1) each. Any two
rows of the m×m matrix of output probabilities differ by a factor of at most p/q = e^ε, so each
report is ε-locally-DP (δ = 0).

Floating-point note: p is irrational, so the keep decision compares a uniform U on the grid
{k·2^-53 : 1 <= k < 2^53} (:meth:`.NoiseSource.uniform01`) with p rounded to a double. Each
output probability is then off by at most 2^-52 in absolute terms, which moves the ratio p/q by
a relative error of at most 2^-52/((m-1)·q). To keep that below 2^-22 (an ε-error below 3e-7;
about 1e-15 for ε = 1, m = 2), ε must satisfy (m-1)·q >= 2^-30 — roughly ε <= 20.8 + ln(m-1);
larger ε are rejected (they give no meaningful protection anyway). The choice among the other
categories is exactly uniform (:meth:`.NoiseSource.uniform_int`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from .._validation import _fail
from ..accounting.accountant import Accountant
from ..errors import ValidationError
from .base import Mechanism
from ..random import Randomness
from .noise import NoiseSource, check_noise

__all__ = ["RandomizedResponse"]

_OWNER = "RandomizedResponse"
_MIN_SWITCH = 2.0 ** -30  # smallest allowed probability of reporting another category


class RandomizedResponse(Mechanism):
    """k-ary randomized response over a fixed list of categories (ε-local DP).

    Args:
        epsilon: ε > 0 per reported value (read exactly; 0.1 means 1/10).
        categories: the m >= 2 distinct, hashable categories, in order.

    Raises:
        ValidationError: for a non-positive or too large ε (see the module doc), fewer than two
            categories, or duplicates.
    """

    name = "randomized-response"
    sampler = "keep if a 53-bit uniform < p (double), else an exactly uniform other category"

    def __init__(self, *, epsilon: Any, categories: Sequence[Hashable]) -> None:
        super().__init__(epsilon=epsilon)
        if isinstance(categories, (str, bytes)) or not isinstance(categories, (Sequence,
                                                                             np.ndarray)):
            raise _fail("categories", _OWNER, "a sequence of at least 2 distinct categories",
                        categories)
        cats = list(categories.tolist() if isinstance(categories, np.ndarray) else categories)
        try:
            index = {c: i for i, c in enumerate(cats)}
        except TypeError:
            raise _fail("categories", _OWNER, "a sequence of hashable categories",
                        categories) from None
        if len(cats) < 2 or len(index) != len(cats):
            raise _fail("categories", _OWNER, "a sequence of at least 2 distinct categories",
                        categories)
        self._categories = tuple(cats)
        self._index = index
        m = len(cats)
        # p = 1/(1 + (m-1)e^-ε) and q = e^-ε/(1 + (m-1)e^-ε): stable for any ε.
        shrink = math.exp(-float(self._epsilon))
        self._keep = 1.0 / (1.0 + (m - 1) * shrink)
        self._other = shrink / (1.0 + (m - 1) * shrink)
        if (m - 1) * self._other < _MIN_SWITCH:
            raise _fail("epsilon", _OWNER,
                        f"small enough that a value changes with probability >= 2^-30 "
                        f"(here epsilon <= {math.log((m - 1) * (2.0 ** 30 - 1)):.4g})",
                        epsilon)
        array = np.array(cats)
        self._array = array if array.tolist() == cats else np.array(cats, dtype=object)

    @property
    def categories(self) -> tuple:
        """The categories, in the order of :meth:`probability_matrix`."""
        return self._categories

    @property
    def keep_probability(self) -> float:
        """p = e^ε/(e^ε + m - 1), the probability of reporting the true category."""
        return self._keep

    def _parameters(self) -> dict[str, object]:
        return {"categories": len(self._categories), "keep_probability": self._keep}

    def _repr_fields(self) -> dict[str, object]:
        return {"categories": repr(list(self._categories))}

    def probability_matrix(self) -> np.ndarray:
        """The m×m matrix P[true, reported]: p on the diagonal, q elsewhere."""
        m = len(self._categories)
        matrix = np.full((m, m), self._other)
        np.fill_diagonal(matrix, self._keep)
        return matrix

    def randomise(self, values: Any, noise: Randomness | NoiseSource | None = None, *,
                  accountant: Accountant | None = None, target: str = "",
                  units: Any = None) -> np.ndarray:
        """Report each of ``values`` (a 1-D sequence of categories) through randomized response.

        Returns an array of categories (NumPy's dtype for them, object when mixed).
        ``noise`` is a :class:`~medanon.random.Randomness` (default: fresh secure randomness).
        With an ``accountant``, the loss on ``target`` is reported for ``units`` (one per value;
        None: every unit) before any noise is drawn (:meth:`Mechanism.report`).

        Raises:
            ValidationError: when a value is not one of the categories.
            BudgetExceeded: the accountant's budget refuses the loss (nothing is drawn).
        """
        noise = check_noise(noise, owner=f"{_OWNER}.randomise")
        items = values.tolist() if isinstance(values, np.ndarray) else list(values)
        codes = []
        for v in items:
            try:
                codes.append(self._index[v])
            except (KeyError, TypeError):
                raise ValidationError(f"{_OWNER}.randomise got {v!r}, which is not one of its "
                                      f"{len(self._categories)} categories.") from None
        self.report(accountant, target=target, units=units, inputs=len(codes))
        keep, others = self._keep, len(self._categories) - 1
        uniform01, uniform_int = noise.uniform01, noise._uniform_int
        out = []
        for c in codes:
            if uniform01() < keep:
                out.append(c)
            else:
                j = uniform_int(others)
                out.append(j + 1 if j >= c else j)
        return self._array[np.asarray(out, dtype=np.intp)]
