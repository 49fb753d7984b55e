"""Closed numeric intervals and interval hierarchies for numeric quasi-identifiers.

A numeric QID is generalized to the closed hull ``[lo-hi]`` of a group's values (release format,
``design.md``); a single value is written as the plain number. :func:`interval_hierarchy` builds a
fixed-width binning tree over a domain so that a numeric QID can be exported as an ARX hierarchy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from numbers import Real

import numpy as np

from ..errors import ValidationError
from .taxonomy import Taxonomy

__all__ = ["Interval", "interval_bounds_of", "interval_hierarchy", "format_number",
           "MAX_INTERVAL_BINS"]

# Finest-level bins interval_hierarchy will build; beyond this a tree of labels is the wrong tool.
MAX_INTERVAL_BINS = 100_000

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_POINT_RE = re.compile(rf"\s*({_NUM})\s*")
_RANGE_RE = re.compile(rf"\s*\[\s*({_NUM})\s*-\s*({_NUM})\s*\]\s*")


def format_number(x: float) -> str:
    """Shortest text that reads back as the same float, positional, without a trailing ``.0``.

    ``58.0 -> "58"``, ``58.05 -> "58.05"``, ``1e-7 -> "0.0000001"``. Positional notation keeps an
    exponent's ``-`` out of ``[lo-hi]`` labels, which are read by other tools.
    """
    return np.format_float_positional(float(x), unique=True, trim="-")


def _finite(x: object, param: str, owner: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (Real, np.integer, np.floating)):
        raise ValidationError(
            f"The '{param}' parameter of {owner} must be a finite number; got {x!r}.")
    f = float(x)
    if not math.isfinite(f):
        raise ValidationError(
            f"The '{param}' parameter of {owner} must be a finite number; got {x!r}.")
    return f + 0.0  # turns -0.0 into 0.0 so the label never reads "-0"


@dataclass(frozen=True, order=True, slots=True)
class Interval:
    """A closed interval ``[lo, hi]`` of real numbers; ``lo == hi`` is a single value.

    Args:
        lo: Lower bound (finite).
        hi: Upper bound (finite, ``>= lo``).

    Raises:
        ValidationError: a bound is not a finite number, or ``lo > hi``.
    """

    lo: float
    hi: float

    def __post_init__(self) -> None:
        lo = _finite(self.lo, "lo", "Interval")
        hi = _finite(self.hi, "hi", "Interval")
        if lo > hi:
            raise ValidationError(
                f"The 'lo' parameter of Interval must be <= 'hi'; got lo={format_number(lo)}, "
                f"hi={format_number(hi)}.")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @property
    def width(self) -> float:
        """``hi - lo`` (0 for a single value)."""
        return self.hi - self.lo

    @property
    def label(self) -> str:
        """Release-format text: ``"58.05"`` for a single value, else ``"[45-60]"``."""
        if self.lo == self.hi:
            return format_number(self.lo)
        return f"[{format_number(self.lo)}-{format_number(self.hi)}]"

    def __str__(self) -> str:
        return self.label

    def hull(self, *others: Interval) -> Interval:
        """Smallest interval covering this one and ``others``.

        Also callable as ``Interval.hull(a, b, c)``.
        """
        for o in others:
            if not isinstance(o, Interval):
                raise ValidationError(
                    f"The 'intervals' parameter of Interval.hull must hold Interval objects; "
                    f"got {o!r}.")
        return Interval(min([self.lo, *(o.lo for o in others)]),
                        max([self.hi, *(o.hi for o in others)]))

    def covers(self, other: Interval | float) -> bool:
        """Whether ``other`` (an interval or a number) lies inside this interval."""
        if isinstance(other, Interval):
            return self.lo <= other.lo and other.hi <= self.hi
        x = _finite(other, "other", "Interval.covers")
        return self.lo <= x <= self.hi

    @classmethod
    def parse(cls, text: str) -> Interval:
        """Read ``"58.05"`` or ``"[45-60]"`` (negatives allowed: ``"[-5--1]"``).

        Raises:
            ValidationError: the text is neither form, or its bounds are reversed.
        """
        lo, hi = _read_bounds(text)
        return cls(lo, hi)


def interval_bounds_of(text: str) -> tuple[float, float]:
    """``(lo, hi)`` of :meth:`Interval.parse` of ``text``, the same floats and the same errors,
    without making the Interval: a release's readers parse thousands of distinct numeric
    cells, and the frozen dataclass's checks were most of each parse (issue 43)."""
    lo, hi = _read_bounds(text)
    if math.isfinite(lo) and math.isfinite(hi):
        return lo + 0.0, hi + 0.0   # (as Interval's checks give them: -0.0 read as 0.0)
    found = Interval(lo, hi)   # raises as Interval.parse does (a bound that is not finite)
    return found.lo, found.hi


def _read_bounds(text: str) -> tuple[float, float]:
    """The bounds :meth:`Interval.parse` reads from ``text``, before the Interval's checks.

    Raises:
        ValidationError: the text is neither form, or its bounds are reversed.
    """
    if not isinstance(text, str):
        raise ValidationError(
            f"The 'text' parameter of Interval.parse must be a string; got {text!r}.")
    m = _POINT_RE.fullmatch(text)
    if m:
        x = float(m.group(1))
        return x, x
    m = _RANGE_RE.fullmatch(text)
    if m:
        lo, hi = float(m.group(1)), float(m.group(2))
        if lo > hi:
            raise ValidationError(
                f"Cannot read {text!r} as an interval: its lower bound is above its upper "
                f"bound.")
        return lo, hi
    raise ValidationError(
        f"Cannot read {text!r} as an interval: expected a number such as '58.05' or a "
        f"closed range such as '[45-60]'.")


def _decimal(x: float) -> Decimal:
    # Through the shortest repr so that 0.1 is the decimal 0.1: bin edges lo + j*w then come out
    # as the numbers a person would write (0.3, not 0.30000000000000004).
    return Decimal(repr(float(x)))


def interval_hierarchy(lo: float, hi: float, widths: Sequence[float], *,
                       name: str) -> Taxonomy:
    """A tree of interval labels binning ``[lo, hi]`` at each width, under the root ``*``.

    Level 1 (the leaves) cuts the domain into bins of ``widths[0]`` starting at ``lo``; each
    further level merges consecutive bins into bins of the next width; the last bin of each level
    is clipped at ``hi``. Labels are closed intervals (``[0-5]``, ``[5-10]``, ...): neighbouring
    bins share their boundary label, and a value on a boundary belongs to the upper bin (bins are
    half-open ``[a, b)`` except the last). A bin identical to its only child (possible for the
    clipped last bin) is one node.

    Args:
        lo: Lower end of the domain.
        hi: Upper end of the domain (``> lo``).
        widths: Bin widths from finest to coarsest, each a whole multiple (>= 2) of the previous.
        name: Name of the hierarchy.

    Returns:
        A :class:`Taxonomy` whose values are the finest bins.

    Raises:
        ValidationError: bad ``lo``/``hi``/``widths``, or more than ``MAX_INTERVAL_BINS`` bins.

    Example:
        >>> interval_hierarchy(0, 20, [5, 10], name="w").ancestors("[5-10]")
        ('[5-10]', '[0-10]', '*')
    """
    owner = "interval_hierarchy"
    lo_f = _finite(lo, "lo", owner)
    hi_f = _finite(hi, "hi", owner)
    if not lo_f < hi_f:
        raise ValidationError(
            f"The 'hi' parameter of {owner} must be greater than 'lo'; got lo={lo!r}, hi={hi!r}.")
    rule = ("a non-empty sequence of positive finite numbers, increasing, each a whole multiple "
            "of the one before")
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence) or not widths:
        raise ValidationError(f"The 'widths' parameter of {owner} must be {rule}; got {widths!r}.")
    ws: list[Decimal] = []
    for w in widths:
        if (isinstance(w, bool) or not isinstance(w, (Real, np.integer, np.floating))
                or not math.isfinite(float(w)) or float(w) <= 0):
            raise ValidationError(
                f"The 'widths' parameter of {owner} must be {rule}; got {list(widths)!r} "
                f"({w!r} is not a positive finite number).")
        ws.append(_decimal(w))
    ratios: list[int] = []
    for a, b in zip(ws, ws[1:]):
        r = b / a
        if r != r.to_integral_value() or r < 2:
            raise ValidationError(
                f"The 'widths' parameter of {owner} must be {rule}; got {list(widths)!r} "
                f"({format_number(float(b))} is not a multiple >= 2 of {format_number(float(a))}).")
        ratios.append(int(r))

    dlo, dhi = _decimal(lo_f), _decimal(hi_f)
    n_leaves = int(((dhi - dlo) / ws[0]).to_integral_value(rounding="ROUND_CEILING"))
    if n_leaves > MAX_INTERVAL_BINS:
        raise ValidationError(
            f"The 'widths' parameter of {owner} would cut [{lo_f}, {hi_f}] into {n_leaves} bins "
            f"at the finest level; at most {MAX_INTERVAL_BINS} are allowed. Use a larger first "
            f"width.")

    def label(level: int, j: int) -> str:
        a = dlo + j * ws[level]
        b = min(a + ws[level], dhi)
        return Interval(float(a), float(b)).label

    parents: dict[str, str | None] = {"*": None}
    values: list[str] = []
    for j in range(n_leaves):
        path = [label(0, j)]
        k = j
        for level, ratio in enumerate(ratios, start=1):
            k //= ratio
            lab = label(level, k)
            if lab != path[-1]:  # a clipped bin equal to its only child is the same node
                path.append(lab)
        path.append("*")
        values.append(path[0])
        for child, parent in zip(path, path[1:]):
            parents.setdefault(child, parent)
    return Taxonomy(parents, name=name, values=values)
