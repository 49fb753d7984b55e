"""The exponential mechanism (McSherry and Talwar, FOCS 2007).

Given utilities u_1..u_n of n candidates, each of sensitivity Δ (changing one individual moves
every u_i by at most Δ), candidate i is selected with probability proportional to
exp(ε·u_i/(2Δ)). That is ε-DP (δ = 0). When the utilities are *monotonic* (a neighbouring input
moves all of them in the same direction) exp(ε·u_i/Δ) suffices and is still ε-DP (Dwork and
Roth, "The Algorithmic Foundations of Differential Privacy", 2014, Theorem 3.10 and remark).

Implementation: everything happens in log space. :meth:`ExponentialMechanism.probabilities`
subtracts the largest log-weight before exponentiating (a log-sum-exp), so utilities such as
±1e6 with ε = 10 cannot overflow. :meth:`ExponentialMechanism.select` uses the Gumbel-max trick:
argmax_i (log w_i + G_i) with independent standard Gumbel G_i is distributed exactly as the
normalized weights (Gumbel 1954; Yellott 1977; see also Durfee and Rogers, NeurIPS 2019, on
one-shot top-k).

Floating-point caveat, stated plainly: the log-weights are rounded to doubles and the Gumbel
variables are -log(-log(U)) of a 53-bit uniform U computed in double precision, so the selection
probabilities equal the ideal ones only up to those roundings (relative perturbations of the
order of 2^-50 in the common case, larger only in the extreme tails of the Gumbel draw). Unlike
the Laplace case, no attack analogous to Mironov's (CCS 2012) is known against a *selection*:
the output is a candidate index, not a float whose low bits could carry the input. We do not
claim a proof that the implemented distribution satisfies exactly e^ε ratios.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import _fail
from ..accounting.accountant import Accountant
from ..errors import ValidationError
from .base import Mechanism
from ..random import Randomness
from .noise import NoiseSource, check_noise

__all__ = ["ExponentialMechanism"]

_OWNER = "ExponentialMechanism"


class ExponentialMechanism(Mechanism):
    """Select a candidate with probability ∝ exp(ε·u/(2Δ)) (exp(ε·u/Δ) when monotonic).

    Args:
        epsilon: ε > 0 per selection (read exactly; 0.1 means 1/10).
        sensitivity: Δ > 0, the largest change of any utility between neighbouring inputs.
        monotonic: True when neighbouring inputs move all utilities in the same direction.

    Raises:
        ValidationError: for a non-positive ε or Δ, or a non-bool ``monotonic``.
    """

    name = "exponential"
    sampler = "Gumbel-max on log-weights in double precision"

    def __init__(self, *, epsilon: Any, sensitivity: Any, monotonic: bool = False) -> None:
        super().__init__(epsilon=epsilon, sensitivity=sensitivity)
        if not isinstance(monotonic, (bool, np.bool_)):
            raise _fail("monotonic", _OWNER, "a bool", monotonic)
        self._monotonic = bool(monotonic)
        sensitivity_ = self._required_sensitivity()
        divisor = sensitivity_ if self._monotonic else 2 * sensitivity_
        try:
            self._factor = float(self._epsilon / divisor)  # log-weight per unit of utility
        except OverflowError:
            raise ValidationError(f"The ratio epsilon/sensitivity of {_OWNER} must fit in a "
                                  f"double; got {self._epsilon}/{self._sensitivity}.") from None

    @property
    def monotonic(self) -> bool:
        """Whether the utilities are declared monotonic (weights exp(ε·u/Δ))."""
        return self._monotonic

    def _parameters(self) -> dict[str, object]:
        return {"monotonic": self._monotonic}

    def _repr_fields(self) -> dict[str, object]:
        return {"monotonic": self._monotonic}

    def log_weights(self, utilities: Any) -> np.ndarray:
        """ε·(u - max u)/(2Δ) (or ε·(u - max u)/Δ): the log-weights shifted so the largest is 0.

        Shifting before scaling keeps every entry <= 0, so nothing can overflow to +inf; an
        entry may underflow to -inf (weight 0) only when its true weight is below e^-1e308.
        """
        u = _check_utilities(utilities)
        with np.errstate(over="ignore"):
            return (u - u.max()) * self._factor

    def probabilities(self, utilities: Any) -> np.ndarray:
        """The selection probabilities, computed in log space (they sum to 1)."""
        weights = np.exp(self.log_weights(utilities))
        return weights / weights.sum()

    def select(self, utilities: Any, noise: Randomness | NoiseSource | None = None, *,
               accountant: Accountant | None = None, target: str = "", units: Any = None) -> int:
        """The index of the selected candidate (Gumbel-max). ``noise`` defaults to secure.

        With an ``accountant``, the loss on ``target`` is reported for ``units`` (the units whose
        data the utilities depend on; None: every unit) before the Gumbel noise is drawn
        (:meth:`Mechanism.report`).

        Raises:
            ValidationError: for utilities that are not a non-empty 1-D array of finite numbers.
            BudgetExceeded: the accountant's budget refuses the loss (nothing is drawn).
        """
        noise = check_noise(noise, owner=f"{_OWNER}.select")
        scores = self.log_weights(utilities)
        self.report(accountant, target=target, units=units)
        return int(np.argmax(scores + noise.gumbel(scores.size)))


def _check_utilities(utilities: Any) -> np.ndarray:
    try:
        u = np.asarray(utilities, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"{_OWNER} needs a 1-D array of finite utilities; "
                              f"got {utilities!r}.") from None
    if u.ndim != 1 or u.size == 0:
        raise ValidationError(f"{_OWNER} needs a non-empty 1-D array of utilities; "
                              f"got shape {u.shape}.")
    if not np.all(np.isfinite(u)):
        raise ValidationError(f"{_OWNER} needs finite utilities; got NaN or an infinity.")
    return u
