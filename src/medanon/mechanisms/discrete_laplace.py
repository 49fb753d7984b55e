"""The discrete Laplace (two-sided geometric) mechanism for integer-valued queries.

Ghosh, Roughgarden and Sundararajan (STOC 2009) for the geometric mechanism; Canonne, Kamath and
Steinke (NeurIPS 2020) for the exact sampler. An integer query whose value moves by at most Δ
between neighbouring inputs (a count: Δ = 1) gets integer noise Z with
Pr[Z = z] ∝ exp(-|z|·ε/Δ), i.e. scale Δ/ε. For two inputs whose values differ by d <= Δ the
output probabilities differ by a factor of at most exp(ε·d/Δ) <= e^ε: ε-DP with δ = 0, exactly,
since the sampler (:meth:`.NoiseSource.discrete_laplace_array`) uses integer arithmetic on random
bits only and no floating-point number takes part.

Used for IPA's noisy threshold and counterfeit counts and the DP histogram's cell counts
(paper 004): counts and thresholds are integers, so nothing is rounded.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..accounting.accountant import Accountant
from ..errors import ValidationError
from .base import Mechanism
from ..random import Randomness
from .noise import NoisePool, NoiseSource, check_noise

__all__ = ["DiscreteLaplaceMechanism"]

_OWNER = "DiscreteLaplaceMechanism"


class DiscreteLaplaceMechanism(Mechanism):
    """Exact discrete Laplace noise of scale Δ/ε on integers (ε-DP, δ = 0).

    Args:
        epsilon: ε > 0 per invocation on one unit's input (read exactly; 0.1 means 1/10).
        sensitivity: Δ > 0, the most an integer value moves between neighbouring inputs.

    Raises:
        ValidationError: for a non-positive ε or Δ.

    Example:
        >>> counts = DiscreteLaplaceMechanism(epsilon=1, sensitivity=1)
        >>> counts.scale
        Fraction(1, 1)
        >>> from medanon.random import randomness
        >>> counts.randomise([3, 0, 7], randomness(0)).dtype
        dtype('int64')
    """

    name = "discrete-laplace"
    sampler = "exact discrete Laplace on the integers (Canonne-Kamath-Steinke 2020, vectorized)"

    def __init__(self, *, epsilon: Any, sensitivity: Any) -> None:
        super().__init__(epsilon=epsilon, sensitivity=sensitivity)
        self._scale = self._required_sensitivity() / self._epsilon

    @property
    def scale(self) -> Fraction:
        """The exact noise scale Δ/ε."""
        return self._scale

    def _parameters(self) -> dict[str, object]:
        return {"scale": str(self._scale)}

    def randomise(self, values: Any, noise: Randomness | NoiseSource | None = None, *,
                  accountant: Accountant | None = None, target: str = "",
                  units: Any = None) -> np.ndarray:
        """``values`` (integers, any shape) plus independent noise, as an int64 array.

        One invocation per value, each value being one unit's input; ``noise`` is a
        :class:`~medanon.random.Randomness` (default: fresh secure randomness). With an
        ``accountant``, the loss on ``target`` is reported for ``units`` (one per value; None:
        every unit) before any noise is drawn.

        Raises:
            ValidationError: a value is not an integer.
            BudgetExceeded: the accountant's budget refuses the loss (nothing is drawn).
        """
        noise = check_noise(noise, owner=f"{_OWNER}.randomise")
        x = np.asarray(values)
        if x.size and not np.issubdtype(x.dtype, np.integer):
            raise ValidationError(f"{_OWNER}.randomise needs integer values; got an array of "
                                  f"dtype {x.dtype}.")
        self.report(accountant, target=target, units=units, inputs=x.size)
        draws = noise.discrete_laplace_array(self._scale, x.size)
        return x.astype(np.int64) + draws.reshape(x.shape)

    def pool(self, noise: Randomness | NoiseSource | None = None, *,
             accountant: Accountant | None = None, target: str = "", units: Any = None,
             batch: int = 65_536) -> NoisePool:
        """This mechanism's noise, drawn ``batch`` at a time and handed out in slices.

        For a caller that adds the noise to integer values itself, one draw per unit input
        (IPA: one noisy threshold per class of every lattice node). The loss is reported once,
        now, for ``units`` (None: every unit): the caller promises that no unit's input gets two
        draws whose outputs are both released (IPA: classes of a node are disjoint, and only the
        chosen node is released).

        Raises:
            BudgetExceeded: the accountant's budget refuses the loss (nothing is drawn).
        """
        noise = check_noise(noise, owner=f"{_OWNER}.pool")
        self.report(accountant, target=target, units=units)
        scale = self._scale
        return NoisePool(lambda k: noise.discrete_laplace_array(scale, k), batch)
