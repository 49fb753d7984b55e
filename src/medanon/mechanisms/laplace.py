"""The Laplace mechanism for real values, made safe against floating-point attacks.

Dwork, McSherry, Nissim and Smith (TCC 2006) add Laplace(Δ/ε) noise to a value of L1
sensitivity Δ. Sampled naively as ``x + b·log(U)`` in double precision, the set of reachable
outputs depends on x, and the low-order bits of the output give the input away (Mironov, "On
significance of the least significant bits for differential privacy", CCS 2012).

:class:`LaplaceMechanism` follows the "discretize, then add exact discrete Laplace noise" design
of OpenDP's float Laplace mechanism:

1. Each value x is rounded to the nearest multiple k·γ of a power-of-two grid γ = 2^g (the
   ``granularity``; ties to even). Rounding moves a value by at most γ/2, so two inputs at
   distance <= Δ land on grid points at most D = ⌊Δ/γ⌋ + 1 steps apart (an integer bound).
2. An integer Z is drawn *exactly* from the discrete Laplace distribution with scale D/ε in grid
   units, Pr[Z = z] ∝ exp(-|z|·ε/D) (Canonne, Kamath, Steinke 2020, Algorithm 2; integer
   arithmetic only, see :mod:`.noise`).
3. The output is (k + Z)·γ, converted to a double. The conversion is exact whenever
   |k + Z| < 2^53 and is post-processing in any case.

Guarantee: for two inputs at L1 distance <= ``sensitivity`` (per value, in real arithmetic on
the doubles given), the output distributions differ by a factor of at most e^ε: the mechanism is
exactly ε-DP (δ = 0) up to the quality of the random bits. The effective scale is
D·γ/ε <= (Δ + γ)/ε, which is the continuous Laplace scale Δ/ε plus a rounding allowance of
γ/ε; equality holds when Δ is a multiple of γ. A sensitivity of 0 is allowed: the scale is then
γ/ε, the output is still ε-DP for inputs that round to adjacent grid points, and trivially so
for identical inputs.

Default granularity: the largest power of two <= (Δ/ε)/2^20, but at least 2^-30 (and at most
2^1023). The grid is then about a millionth of the noise scale, so rounding costs nothing
measurable, while keeping the integers small enough for a fast sampler.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._validation import _fail
from ..accounting.accountant import Accountant
from ..errors import ValidationError
from .base import Mechanism
from ..random import Randomness
from .noise import NoiseSource, check_noise, to_fraction

__all__ = ["LaplaceMechanism"]

_OWNER = "LaplaceMechanism"
_MIN_EXPONENT, _MAX_EXPONENT = -30, 1023  # default grid bounds: 2^-30 <= γ <= 2^1023
_DEFAULT_OFFSET = 20  # γ ≈ scale / 2^20


def _floor_log2(value: Fraction) -> int:
    """The integer e with 2^e <= value < 2^(e+1), for a positive Fraction."""
    e = value.numerator.bit_length() - value.denominator.bit_length()
    return e - 1 if value < Fraction(2) ** e else e


def _power_of_two_exponent(value: Fraction) -> int | None:
    """e when value == 2^e exactly, else None."""
    num, den = value.numerator, value.denominator
    if num & (num - 1) or den & (den - 1) or (num != 1 and den != 1):
        return None
    return num.bit_length() - den.bit_length()


def _grid_to_float(n: int, exponent: int) -> float:
    """n·2^exponent as the nearest double (±inf beyond the double range)."""
    try:
        if -(1 << 53) < n < (1 << 53):
            return math.ldexp(n, exponent)
        return float(Fraction(n) * Fraction(2) ** exponent)
    except OverflowError:
        return math.copysign(math.inf, n)


class LaplaceMechanism(Mechanism):
    """Floating-point-safe Laplace noise for real values (exactly ε-DP, see the module doc).

    Args:
        epsilon: ε > 0 per invocation on one input (read exactly; 0.1 means 1/10).
        sensitivity: Δ >= 0, the L1 distance between neighbouring inputs. A float is taken as
            the larger of its decimal reading and its exact binary value.
        granularity: the grid γ, an exact power of two (e.g. ``2**-10`` or ``"1/1024"``);
            None for the default, max(2^-30, largest power of two <= (Δ/ε)/2^20).

    Raises:
        ValidationError: for a non-positive ε, a negative/NaN/infinite Δ, or a granularity that
            is not a power of two in [2^-1074, 2^1023].
    """

    name = "laplace"
    sampler = ("round to the granularity grid, add exact discrete Laplace noise "
               "(Canonne-Kamath-Steinke 2020, integer arithmetic)")
    zero_sensitivity = True

    def __init__(self, *, epsilon: Any, sensitivity: Any, granularity: Any = None) -> None:
        super().__init__(epsilon=epsilon, sensitivity=sensitivity)
        bound = self._required_sensitivity()
        if isinstance(sensitivity, (float, np.floating)):
            bound = max(bound, Fraction(float(sensitivity)))
        if granularity is None:
            base = bound / self._epsilon
            exponent = _floor_log2(base) - _DEFAULT_OFFSET if base else _MIN_EXPONENT
            exponent = min(max(exponent, _MIN_EXPONENT), _MAX_EXPONENT)
        else:
            gamma = to_fraction(granularity, name="granularity", owner=_OWNER)
            exact = _power_of_two_exponent(gamma)
            if exact is None or not -1074 <= exact <= _MAX_EXPONENT:
                raise _fail("granularity", _OWNER,
                            "a power of two in [2^-1074, 2^1023]", granularity)
            exponent = exact
        self._exponent = exponent
        self._granularity = Fraction(2) ** exponent
        self._steps = math.floor(bound / self._granularity) + 1  # D, in grid units
        self._scale_grid = Fraction(self._steps) / self._epsilon

    @property
    def granularity(self) -> Fraction:
        """The grid γ = 2^g that inputs are rounded to and outputs lie on."""
        return self._granularity

    @property
    def scale_grid(self) -> Fraction:
        """The exact discrete Laplace scale in grid units, D/ε with D = ⌊Δ/γ⌋ + 1."""
        return self._scale_grid

    @property
    def scale(self) -> float:
        """The noise scale in value units, γ·D/ε <= (Δ + γ)/ε (a double, for reporting)."""
        return float(self._scale_grid * self._granularity)

    def _parameters(self) -> dict[str, object]:
        return {"granularity": str(self._granularity),
                "granularity_float": float(self._granularity),
                "scale": self.scale, "scale_grid": str(self._scale_grid)}

    def _repr_fields(self) -> dict[str, object]:
        return {"granularity": self._granularity}

    def randomise(self, values: Any, noise: Randomness | NoiseSource | None = None, *,
                  accountant: Accountant | None = None, target: str = "",
                  units: Any = None) -> np.ndarray:
        """Return ``values`` (any shape of finite reals) plus noise, as a float64 array.

        Each value gets independent noise: one invocation (ε) per value, each value being one
        unit's input. Every output is a multiple of :attr:`granularity`. ``noise`` is a
        :class:`~medanon.random.Randomness` (default: fresh secure randomness). With an
        ``accountant``, the loss on ``target`` is reported for ``units`` (the units the values
        belong to, in any order; None: every unit) before any noise is drawn (:meth:`Mechanism.report`).

        Raises:
            ValidationError: when a value is not a finite real number.
            BudgetExceeded: the accountant's budget refuses the loss (nothing is drawn).
        """
        noise = check_noise(noise, owner=f"{_OWNER}.randomise")
        try:
            x = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValidationError(f"{_OWNER}.randomise needs finite real values; "
                                  f"got {values!r}.") from None
        if not np.all(np.isfinite(x)):
            raise ValidationError(f"{_OWNER}.randomise needs finite real values; "
                                  f"got NaN or an infinity.")
        self.report(accountant, target=target, units=units, inputs=x.size)
        g = self._exponent
        with np.errstate(over="ignore"):
            grid = np.rint(np.ldexp(x, -g)).ravel().tolist()
        t, s = self._scale_grid.numerator, self._scale_grid.denominator
        sample = noise._discrete_laplace
        out = []
        for i, k in enumerate(grid):
            if math.isfinite(k):
                k = int(k)
            else:  # x/γ overflowed a double: round exactly
                k = round(Fraction(float(x.flat[i])) / self._granularity)
            out.append(_grid_to_float(k + sample(t, s), g))
        return np.asarray(out, dtype=np.float64).reshape(x.shape)
