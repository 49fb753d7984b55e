"""Exact privacy-loss values, budgets and composition.

Every ε and δ here is a :class:`fractions.Fraction`, never a float: ``0.1 + 0.2`` is exactly
``3/10`` and ten releases at ε = 0.1 spend exactly ε = 1, so "at the budget" and "over the
budget" are decided without rounding surprises (the approach of Tumult Analytics, which keeps
budgets as exact rationals). Floats entering from the outside are read through their shortest
``repr`` (:func:`to_exact`), so the float ``0.1`` means the rational 1/10 a person typed, not the
binary number 0.1000000000000000055511151231257827...

Pieces:

* :func:`to_exact`, :func:`format_epsilon`, :func:`parse_epsilon` -- reading and writing exact
  values (the store's ledger keeps the text :func:`format_epsilon` gives).
* :class:`PrivacyLoss` -- what one mechanism reports: the (ε, δ) it costs one unit of protection
  (``scope``, by default one case's values in one release).
* :class:`Budget` -- an (ε, δ) amount with exact addition and an exact "does it still fit" test.
* :func:`compose` -- basic sequential composition (sums).

What the mechanisms of one run report is collected by :class:`~medanon.accounting.Accountant`
(:mod:`.accountant`).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import BudgetExceeded, ValidationError

__all__ = ["EPSILON_FLOOR", "Budget", "PrivacyLoss", "check_epsilon_floor", "compose",
           "format_epsilon", "parse_epsilon", "to_exact"]

#: the smallest ε one mechanism of a method may get without an acknowledgement
#: (``allow_tiny_epsilon``): below it every output distribution is within a factor e^ε < 1.01 of
#: the same for any two inputs, so what is published about one unit (a case's value, a class's
#: counts) is, to within 1%, drawn without looking at it. Where that makes a release degenerate
#: whatever the data (PPMS-DP's clamped values become domain bounds; IPA's counterfeit rows and
#: the DP histogram's rows grow as 1/ε) the methods refuse it unless acknowledged.
EPSILON_FLOOR = Fraction(1, 100)
ACKNOWLEDGE_TINY_EPSILON = "allow_tiny_epsilon"

#: numbers written with a larger decimal exponent than this are refused (``"1e999999999"``
#: would make an integer with a billion digits).
_MAX_EXPONENT = 1000
_EXPONENT = re.compile(r"[eE]\s*([-+]?\d[\d_]*)\s*$")
_TEXT_HINT = "as an int, a Fraction, a finite float or text like '0.1', '1/3' or '1e-2'"


def _shown(value: Any) -> str:
    """``value`` as it appears after "got" in an error message."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Fraction):
        return str(value)
    return repr(value)


def _fail(name: str, owner: str, requirement: str, value: Any) -> ValidationError:
    return ValidationError(f"The {name!r} parameter of {owner} must be {requirement}; "
                           f"got {_shown(value)}.")


def to_exact(value: Any, *, name: str, owner: str, allow_zero: bool = False) -> Fraction:
    """Return ``value`` as an exact, finite, non-negative :class:`~fractions.Fraction`.

    Accepted: ``int`` and numpy integers, ``Fraction`` (and other exact rationals), ``Decimal``,
    ``float`` and numpy floats (read through their shortest decimal text, so ``0.1`` gives
    exactly ``1/10`` and ``np.float32(0.1)`` too), and text such as ``"0.1"``, ``"1/3"``,
    ``"1e-2"`` or ``"2"`` (surrounding spaces allowed).

    Guarantees: the result equals the number the caller wrote, with no binary rounding; it is
    > 0, or >= 0 when ``allow_zero`` is true.

    Args:
        value: The number.
        name, owner: The parameter and the class or function it belongs to (for the message).
        allow_zero: Whether 0 is accepted.

    Raises:
        ValidationError: for ``bool``, NaN, infinities, negative numbers, 0 (unless
            ``allow_zero``), text that is not a number, and any other type; the message reads
            ``The 'epsilon' parameter of Budget must be a positive number; got -1.``
    """
    requirement = "a non-negative number" if allow_zero else "a positive number"
    if isinstance(value, (bool, np.bool_)):
        raise _fail(name, owner, requirement, value)
    try:
        if isinstance(value, Fraction):
            exact = value
        elif isinstance(value, numbers.Integral):
            exact = Fraction(int(value))
        elif isinstance(value, numbers.Rational):
            exact = Fraction(int(value.numerator), int(value.denominator))
        elif isinstance(value, float):  # includes np.float64
            if not math.isfinite(value):
                raise _fail(name, owner, requirement, value)
            exact = Fraction(repr(float(value)))
        elif isinstance(value, np.floating):  # float16/32/longdouble: their own shortest text
            if not np.isfinite(value):
                raise _fail(name, owner, requirement, value)
            exact = Fraction(np.format_float_scientific(value, unique=True))
        elif isinstance(value, Decimal):
            if not value.is_finite():
                raise _fail(name, owner, requirement, value)
            exact = Fraction(value)
        elif isinstance(value, str):
            exact = _parse_text(value, name=name, owner=owner, requirement=requirement)
        elif isinstance(value, numbers.Real):
            as_float = float(value)
            if not math.isfinite(as_float):
                raise _fail(name, owner, requirement, value)
            exact = Fraction(repr(as_float))
        else:
            raise _fail(name, owner, f"{requirement}, {_TEXT_HINT}", value)
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        if isinstance(exc, ValidationError):
            raise
        raise _fail(name, owner, f"{requirement}, {_TEXT_HINT}", value) from None
    if exact < 0 or (exact == 0 and not allow_zero):
        raise _fail(name, owner, requirement, value)
    return exact


def check_epsilon_floor(epsilon: Fraction, *, owner: str, allow_tiny_epsilon: bool,
                        what: str, consequence: str, name: str = "epsilon") -> tuple[str, ...]:
    """Refuse an ε below :data:`EPSILON_FLOOR` unless acknowledged.

    Args:
        epsilon: The ε one mechanism gets (exact, as :func:`to_exact` gives it).
        owner: The class or function whose parameter it is (for the message).
        allow_tiny_epsilon: The acknowledgement (must be a bool).
        what: What the ε is of, e.g. ``"per perturbed QID"``, or ``"for its insertion step
            (0.3 of epsilon)"``.
        consequence: What such an ε does to the release, a sentence for the message.
        name: The parameter that carries ε.

    Returns:
        The acknowledgement to record in the manifest's ``method.acknowledged``: the name
        ``allow_tiny_epsilon`` when given (needed or not, as every override is recorded), else
        nothing.

    Raises:
        ValidationError: ``allow_tiny_epsilon`` is not a bool, or ε is below the floor without it.
    """
    if not isinstance(allow_tiny_epsilon, (bool, np.bool_)):
        raise ValidationError(f"The 'allow_tiny_epsilon' parameter of {owner} must be True or "
                              f"False; got {allow_tiny_epsilon!r}.")
    if epsilon < EPSILON_FLOOR and not allow_tiny_epsilon:
        raise ValidationError(
            f"The {name!r} parameter of {owner} gives {format_epsilon(epsilon)} {what}, below "
            f"the floor of {format_epsilon(EPSILON_FLOOR)}: {consequence} Give a larger epsilon, "
            f"or the 'allow_tiny_epsilon' parameter to publish it anyway (recorded in the "
            f"manifest).")
    return (ACKNOWLEDGE_TINY_EPSILON,) if allow_tiny_epsilon else ()


def _parse_text(text: str, *, name: str, owner: str, requirement: str) -> Fraction:
    stripped = text.strip()
    exponent = _EXPONENT.search(stripped)
    if exponent and abs(int(exponent.group(1).replace("_", ""))) > _MAX_EXPONENT:
        raise _fail(name, owner, f"{requirement} with a decimal exponent of at most "
                                 f"{_MAX_EXPONENT}", text)
    try:
        return Fraction(stripped)
    except (ValueError, ZeroDivisionError):
        raise _fail(name, owner, f"{requirement}, {_TEXT_HINT}", text) from None


def format_epsilon(x: Any) -> str:
    """Exact, readable text for a rational number; :func:`parse_epsilon` reads it back exactly.

    Integers are written as integers (``"2"``); numbers with a finite decimal expansion as
    decimals (``"0.1"``, ``"0.25"``, ``"12.5"``), switching to scientific notation below 1e-4 as
    Python's ``repr`` does (``"1e-6"``, ``"1.5e-6"``); every other rational as
    ``numerator/denominator`` in lowest terms (``"1/3"``, ``"4/3"``). No digit is ever rounded
    away. Negative numbers get a leading ``-`` (ε and δ never are; :func:`parse_epsilon` refuses
    them).

    Args:
        x: A Fraction or int; other numbers are first read with :func:`to_exact` (so the float
            0.1 prints as ``"0.1"``).
    """
    if isinstance(x, numbers.Rational) and not isinstance(x, (bool, np.bool_)):
        value = Fraction(int(x.numerator), int(x.denominator))
    else:
        value = to_exact(x, name="x", owner="format_epsilon", allow_zero=True)
    if value < 0:
        return "-" + format_epsilon(-value)
    num, den = value.numerator, value.denominator
    if den == 1:
        return str(num)
    twos = (den & -den).bit_length() - 1
    rest = den >> twos
    fives = 0
    while rest % 5 == 0:
        rest //= 5
        fives += 1
    if rest != 1:
        return f"{num}/{den}"
    places = max(twos, fives)                 # value == mantissa / 10**places, exactly
    mantissa = num * 10 ** places // den
    digits = str(mantissa)                    # never ends in 0: ``places`` is minimal
    lead = len(digits) - 1 - places           # decimal exponent of the leading digit
    if lead < -4:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{body}e{lead}"
    if len(digits) > places:
        return f"{digits[:-places]}.{digits[-places:]}"
    return "0." + "0" * (places - len(digits)) + digits


def parse_epsilon(text: Any, *, name: str = "epsilon", owner: str = "parse_epsilon") -> Fraction:
    """Read an exact non-negative ε or δ, e.g. text written by :func:`format_epsilon`.

    Guarantees ``parse_epsilon(format_epsilon(x)) == x`` for every rational ``x >= 0``. Also
    accepts whatever :func:`to_exact` accepts (``"1/3"``, ``"1e-2"``, ``0.1``, ``Fraction``).

    Raises:
        ValidationError: for text that is not a number, negatives, NaN or infinities.
    """
    return to_exact(text, name=name, owner=owner, allow_zero=True)


def _check_delta(value: Any, *, owner: str, below_one: bool) -> Fraction:
    delta = to_exact(value, name="delta", owner=owner, allow_zero=True)
    if below_one and delta >= 1:
        raise _fail("delta", owner, "a number in [0, 1)", value)
    return delta


def _check_text(value: Any, *, name: str, owner: str, allow_empty: bool) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise _fail(name, owner, "a string" if allow_empty else "a non-empty string", value)
    return value


def _exact_dict(epsilon: Fraction, delta: Fraction) -> dict[str, object]:
    return {"epsilon": float(epsilon), "epsilon_exact": format_epsilon(epsilon),
            "delta": float(delta), "delta_exact": format_epsilon(delta)}


@dataclass(frozen=True, kw_only=True)
class PrivacyLoss:
    """The privacy loss one mechanism reports for one unit of protection.

    Attributes:
        epsilon: ε >= 0, exact (floats and text are converted with :func:`to_exact`).
        delta: δ in [0, 1), exact; 0 for pure ε-DP mechanisms.
        mechanism: The mechanism, e.g. ``"laplace"`` or ``"exponential"``.
        target: What it was applied to, e.g. the attribute ``"weight"``; may be empty.
        scope: The unit the guarantee protects: ``"case"`` means one case's values in one
            release (two inputs differing only there are (ε, δ)-indistinguishable).

    Guarantees: after construction ``epsilon`` and ``delta`` are Fractions in range and the text
    fields are strings; the value is immutable and hashable.

    Raises:
        ValidationError: for an out-of-range or non-numeric ε or δ, an empty ``mechanism`` or
            ``scope``, or a non-string ``target``.
    """

    epsilon: Fraction
    delta: Fraction = Fraction(0)
    mechanism: str
    target: str = ""
    scope: str = "case"

    def __post_init__(self) -> None:
        owner = "PrivacyLoss"
        object.__setattr__(self, "epsilon",
                           to_exact(self.epsilon, name="epsilon", owner=owner, allow_zero=True))
        object.__setattr__(self, "delta", _check_delta(self.delta, owner=owner, below_one=True))
        _check_text(self.mechanism, name="mechanism", owner=owner, allow_empty=False)
        _check_text(self.target, name="target", owner=owner, allow_empty=True)
        _check_text(self.scope, name="scope", owner=owner, allow_empty=False)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: ε and δ as floats and as exact text (``epsilon_exact``, ``delta_exact``)."""
        return {"mechanism": self.mechanism, "target": self.target, "scope": self.scope,
                **_exact_dict(self.epsilon, self.delta)}

    def __str__(self) -> str:
        on = f" on {self.target!r}" if self.target else ""
        return f"{self.mechanism}{on}: {Budget(epsilon=self.epsilon, delta=self.delta)} per {self.scope}"


@dataclass(frozen=True, kw_only=True)
class Budget:
    """An exact (ε, δ) amount of privacy: an allowance, or a total already spent.

    Build a budget to enforce with :meth:`Budget.of` (ε > 0, δ in [0, 1), any number format
    :func:`to_exact` reads) or an empty one with :meth:`Budget.zero`. The field constructor
    ``Budget(epsilon=..., delta=...)`` converts the same way but accepts ε = 0 and any δ >= 0,
    because sums of losses (:func:`compose`, ``+``) may reach them; a composed δ >= 1 is a
    vacuous guarantee.

    Guarantees: ``epsilon`` and ``delta`` are exact Fractions >= 0; arithmetic and comparisons
    are exact; the value is immutable and hashable.
    """

    epsilon: Fraction
    delta: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon",
                           to_exact(self.epsilon, name="epsilon", owner="Budget", allow_zero=True))
        object.__setattr__(self, "delta", _check_delta(self.delta, owner="Budget", below_one=False))

    @classmethod
    def of(cls, epsilon: Any, delta: Any = 0) -> "Budget":
        """A budget to enforce: ε > 0 and δ in [0, 1), read exactly (``Budget.of(0.1)`` is 1/10).

        Raises:
            ValidationError: for ε <= 0, δ outside [0, 1), or values that are not numbers.
        """
        return cls(epsilon=to_exact(epsilon, name="epsilon", owner="Budget"),
                   delta=_check_delta(delta, owner="Budget", below_one=True))

    @classmethod
    def zero(cls) -> "Budget":
        """The empty amount ε = 0, δ = 0 (nothing spent; a budget that allows nothing)."""
        return cls(epsilon=Fraction(0), delta=Fraction(0))

    def __add__(self, other: object) -> "Budget":
        """Exact sum with a Budget or a PrivacyLoss (basic sequential composition)."""
        if not isinstance(other, (Budget, PrivacyLoss)):
            return NotImplemented
        return Budget(epsilon=self.epsilon + other.epsilon, delta=self.delta + other.delta)

    def __radd__(self, other: object) -> "Budget":
        if isinstance(other, PrivacyLoss):
            return self + other
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self  # so that built-in sum() works
        return NotImplemented

    def covers(self, other: "Budget | PrivacyLoss") -> bool:
        """Whether ``other`` fits in this budget: ε and δ both <= this one's (equal fits)."""
        if not isinstance(other, (Budget, PrivacyLoss)):
            raise _fail("other", "Budget.covers", "a Budget or a PrivacyLoss", other)
        return other.epsilon <= self.epsilon and other.delta <= self.delta

    def remaining_after(self, spent: "Budget | PrivacyLoss") -> "Budget":
        """What is left of this budget after ``spent``, exactly.

        Raises:
            BudgetExceeded: when ``spent`` does not fit (:meth:`covers` is false); the message
                names the requested amount, the remaining amount and the difference, e.g.
                ``requested ε=1/2, remaining ε=1/3, difference ε=1/6``.
        """
        if not self.covers(spent):
            raise BudgetExceeded(f"The privacy budget would be exceeded: "
                                 f"{_exceeded_text(spent, self)}.")
        return Budget(epsilon=self.epsilon - spent.epsilon, delta=self.delta - spent.delta)

    def __str__(self) -> str:
        text = f"ε={format_epsilon(self.epsilon)}"
        if self.delta:
            text += f", δ={format_epsilon(self.delta)}"
        return text

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: ε and δ as floats and as exact text (``epsilon_exact``, ``delta_exact``)."""
        return _exact_dict(self.epsilon, self.delta)


def _exceeded_text(requested: Budget | PrivacyLoss, remaining: Budget) -> str:
    """``requested ε=…, remaining ε=…, difference ε=…`` (the difference is what does not fit)."""
    asked = Budget(epsilon=requested.epsilon, delta=requested.delta)
    over = Budget(epsilon=max(asked.epsilon - remaining.epsilon, Fraction(0)),
                  delta=max(asked.delta - remaining.delta, Fraction(0)))
    return f"requested {asked}, remaining {remaining}, difference {over}"


def compose(losses: Iterable[PrivacyLoss]) -> Budget:
    """Basic sequential composition: the exact sums of ε and of δ.

    Applying mechanisms that are (ε_i, δ_i)-DP to the same data gives (Σε_i, Σδ_i)-DP (Dwork &
    Roth 2014, *The Algorithmic Foundations of Differential Privacy*, Theorem 3.16). It is the
    simple, never-optimistic bound; advanced composition could be tighter for many small δ > 0
    terms but is not used here.

    Sequential composition applies to losses on the *same* unit. Mechanisms applied to disjoint
    sets of cases compose in parallel (the maximum, not the sum: McSherry 2009), which is why the
    release store keeps its ledger per case: a case's total is the sum over the releases and
    mechanisms that touched it, and cases that never appear together do not add up.

    Raises:
        ValidationError: when an item is not a :class:`PrivacyLoss`.
    """
    epsilon, delta = Fraction(0), Fraction(0)
    for loss in losses:
        if not isinstance(loss, PrivacyLoss):
            raise _fail("losses", "compose", "an iterable of PrivacyLoss", loss)
        epsilon += loss.epsilon
        delta += loss.delta
    return Budget(epsilon=epsilon, delta=delta)
