"""The accountant of one run: what the mechanisms that ran reported, unit by unit.

Design rule 4: every DP step reports its own privacy loss and the accountant sums what the
mechanisms report, never a number typed in by the caller. A mechanism of
:mod:`medanon.mechanisms` given an :class:`Accountant` reports its :class:`PrivacyLoss` to it
(its privacy map, as OpenDP's measurements carry theirs) *before* it draws any noise, so a refused
charge releases nothing; whatever an accountant holds afterwards is what ran.

Units. A run protects units numbered ``0..units-1``: the cases of a release (``scope="case"``),
the records of a table (``"record"``), the elements of an EHR release (``"element"``). A report
names the units its output depends on (``units=``; None: every unit):

* one mechanism applied to many units, one input each (Laplace noise on every case's weight, one
  noisy count per class), is *one* report naming them all: each is charged once (parallel
  composition, McSherry 2009);
* two reports that name the same unit compose sequentially: a mechanism that runs twice on a case
  charges that case twice (:func:`~medanon.accounting.budget.compose`).

:func:`unit_counts` gives how often each unit was charged with each loss (the release store's
ledger is written from it), :func:`losses_per_unit` what one unit incurred, and
:func:`check_plan` compares both with what a method planned (:meth:`Anonymizer.planned_losses`,
the budget pre-check), raising :class:`~medanon.errors.InternalError` when they differ.
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import BudgetExceeded, InternalError
from .budget import Budget, PrivacyLoss, _exceeded_text, _fail, format_epsilon

__all__ = ["Accountant", "Charge", "check_plan", "losses_per_unit", "unit_counts"]


@dataclass(frozen=True, eq=False)
class Charge:
    """One report of a mechanism to an :class:`Accountant`.

    Attributes:
        loss: The loss the mechanism reported (its name, ε, δ, target and the run's scope).
        units: The units charged, each once: a sorted, read-only int64 array of distinct unit
            numbers, or None for every unit of the run.
    """

    loss: PrivacyLoss
    units: np.ndarray | None = None

    def __repr__(self) -> str:
        on = "every unit" if self.units is None else f"{len(self.units)} unit(s)"
        return f"Charge({self.loss}, {on})"


class Accountant:
    """Collects what the mechanisms of one run report, optionally within a per-unit budget.

    Args:
        scope: The unit every loss of the run protects (``"case"``, ``"record"``,
            ``"element"``); a reported loss must have this scope.
        units: How many units the run has (reports may then name units ``0..units-1``); None
            when every report covers every unit.
        budget: The most any one unit may spend in this run, or None to only record.

    Guarantees: :attr:`charges` holds every accepted report, in order; :attr:`spent` is the most
    any one unit has spent (its exact ε total, and the largest δ total), never above the budget:
    a report that would take a unit over it is refused and leaves the accountant unchanged.

    Example:
        >>> from medanon.mechanisms import LaplaceMechanism
        >>> from medanon.random import randomness
        >>> accountant = Accountant(scope="case", units=3)
        >>> laplace = LaplaceMechanism(epsilon="0.5", sensitivity=1)
        >>> rng = randomness(0)
        >>> _ = laplace.randomise([1.0, 2.0, 3.0], rng, accountant=accountant, target="weight")
        >>> _ = laplace.randomise([4.0], rng, accountant=accountant, target="weight", units=[2])
        >>> str(accountant.spent)   # case 2 was charged twice
        'ε=1'
    """

    def __init__(self, *, scope: str = "case", units: int | None = None,
                 budget: Budget | None = None) -> None:
        owner = "Accountant"
        if not isinstance(scope, str) or not scope.strip():
            raise _fail("scope", owner, "a non-empty string", scope)
        if units is not None and (isinstance(units, bool) or not isinstance(units, numbers.Integral)
                                  or units < 0):
            raise _fail("units", owner, "an integer >= 0 or None", units)
        if budget is not None and not isinstance(budget, Budget):
            raise _fail("budget", owner, "a Budget or None", budget)
        self._scope = scope
        self._units = None if units is None else int(units)
        self._budget = budget
        self._charges: list[Charge] = []
        zero = Fraction(0)
        # exact (ε, δ) sums: of the reports covering every unit; per unit, of those naming it;
        # and the componentwise maximum of the latter
        self._everyone = (zero, zero)
        self._per_unit: dict[int, tuple[Fraction, Fraction]] = {}
        self._worst = (zero, zero)

    @property
    def scope(self) -> str:
        """The unit every loss of this run protects."""
        return self._scope

    @property
    def units(self) -> int | None:
        """The number of units, or None."""
        return self._units

    @property
    def budget(self) -> Budget | None:
        """The budget given at construction (None: unlimited)."""
        return self._budget

    def spend(self, loss: PrivacyLoss, *, units: Any = None) -> None:
        """Record ``loss`` for each of ``units`` once (None: every unit of the run).

        Mechanisms call this with their own loss before they draw noise; there is no other way
        in (design rule 4).

        Raises:
            ValidationError: ``loss`` is not a PrivacyLoss or has another scope; ``units`` is not a
                set of distinct unit numbers in ``0..units-1`` (or the accountant counts none).
            BudgetExceeded: a unit's total would exceed the budget; nothing is recorded, and the
                message names the requested, remaining and difference amounts.
        """
        if not isinstance(loss, PrivacyLoss):
            raise _fail("loss", "Accountant.spend", "a PrivacyLoss", loss)
        if loss.scope != self._scope:
            raise _fail("loss", "Accountant.spend", f"a loss per {self._scope!r} (this run's scope)",
                        f"a loss per {loss.scope!r}")
        charged = None if units is None else self._check_units(units)
        eps, delta = loss.epsilon, loss.delta
        everyone, per_unit, worst = self._everyone, {}, self._worst
        if charged is None:
            everyone = (everyone[0] + eps, everyone[1] + delta)
        else:
            zero = (Fraction(0), Fraction(0))
            for u in charged.tolist():
                old = self._per_unit.get(u, zero)
                per_unit[u] = (old[0] + eps, old[1] + delta)
            worst = (max([worst[0], *(t[0] for t in per_unit.values())]),
                     max([worst[1], *(t[1] for t in per_unit.values())]))
        if self._budget is not None and not self._budget.covers(
                Budget(epsilon=everyone[0] + worst[0], delta=everyone[1] + worst[1])):
            on = f" on {loss.target!r}" if loss.target else ""
            raise BudgetExceeded(
                f"The {loss.mechanism} loss{on} would exceed the privacy budget of "
                f"{self._budget} per {self._scope}: "
                f"{_exceeded_text(loss, self._budget.remaining_after(self.spent))}; nothing was "
                f"recorded.")
        self._charges.append(Charge(loss, charged))
        self._everyone, self._worst = everyone, worst
        self._per_unit.update(per_unit)

    def _check_units(self, units: Any) -> np.ndarray:
        owner = "Accountant.spend"
        if self._units is None:
            raise _fail("units", owner, "None for an accountant built without 'units'", units)
        if isinstance(units, numbers.Integral) and not isinstance(units, bool):
            if not 0 <= units < self._units:
                raise _fail("units", owner, f"unit numbers in 0..{self._units - 1}", units)
            array = np.array([units], dtype=np.int64)
            array.flags.writeable = False
            return array
        array = np.asarray(units)
        if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
            raise _fail("units", owner, "a 1-D sequence of unit numbers", units)
        array = np.sort(array.astype(np.int64))
        if array.size and (array[0] < 0 or array[-1] >= self._units):
            raise _fail("units", owner, f"unit numbers in 0..{self._units - 1}", units)
        if array.size > 1 and not (np.diff(array) > 0).all():
            raise _fail("units", owner, "distinct unit numbers (a unit charged twice is two reports)",
                        units)
        array.flags.writeable = False
        return array

    @property
    def charges(self) -> tuple[Charge, ...]:
        """Every accepted report, in order."""
        return tuple(self._charges)

    @property
    def losses(self) -> tuple[PrivacyLoss, ...]:
        """The loss of every accepted report, in order (one per report, whatever its units)."""
        return tuple(c.loss for c in self._charges)

    @property
    def spent(self) -> Budget:
        """The most any one unit has spent: the exact largest ε total and the largest δ total
        (basic sequential composition per unit; equal to ``compose(losses)`` when every report
        covers every unit)."""
        return Budget(epsilon=self._everyone[0] + self._worst[0],
                      delta=self._everyone[1] + self._worst[1])

    @property
    def remaining(self) -> Budget | None:
        """What is left of the budget for the unit that spent most (None without a budget)."""
        return None if self._budget is None else self._budget.remaining_after(self.spent)

    def __repr__(self) -> str:
        return (f"Accountant(scope={self._scope!r}, units={self._units}, budget={self._budget}, "
                f"spent={self.spent}, charges={len(self._charges)})")


def _tally(charges: Iterable[Charge]) -> dict[PrivacyLoss, tuple[int, list[np.ndarray]]]:
    """Per distinct loss, in order of first report: the reports covering every unit, and the
    unit arrays of the others."""
    tally: dict[PrivacyLoss, tuple[int, list[np.ndarray]]] = {}
    for charge in charges:
        if not isinstance(charge, Charge):
            raise _fail("charges", "the accounting", "an iterable of Charge", charge)
        everyone, named = tally.get(charge.loss, (0, []))
        if charge.units is None:
            everyone += 1
        else:
            named.append(charge.units)
        tally[charge.loss] = (everyone, named)
    return tally


def unit_counts(charges: Iterable[Charge], units: int) -> list[tuple[PrivacyLoss, np.ndarray]]:
    """How many times each unit ``0..units-1`` was charged with each distinct loss.

    Returns:
        ``(loss, counts)`` pairs in order of the loss's first report; ``counts`` is an int64 array
        of length ``units``.

    Raises:
        InternalError: a charge names a unit outside ``0..units-1`` (the charges belong to
            another run).
    """
    out = []
    for loss, (everyone, named) in _tally(charges).items():
        counts = np.full(units, everyone, dtype=np.int64)
        if named:
            flat = np.concatenate(named)
            if flat.size and (flat.min() < 0 or flat.max() >= units):
                raise InternalError(f"A charge of {loss} names unit {int(flat.max())}, but the run "
                                    f"has {units} units.")
            counts += np.bincount(flat, minlength=units)
        out.append((loss, counts))
    return out


def losses_per_unit(charges: Iterable[Charge]) -> tuple[PrivacyLoss, ...]:
    """What one unit incurred: each distinct loss (in order of first report) as many times as
    the unit charged most often with it.

    Exactly every unit's losses when all units were charged alike (PPMS-DP strict, IPA, the DP
    histogram, ClinSimRR: each checked against its plan); otherwise a bound on every unit's.
    """
    out: list[PrivacyLoss] = []
    for loss, (everyone, named) in _tally(charges).items():
        most = 0
        if named:
            flat = np.concatenate(named)
            most = int(np.bincount(flat).max()) if flat.size else 0
        out.extend([loss] * (everyone + most))
    return tuple(out)


def _shown(losses: Sequence[PrivacyLoss]) -> str:
    if not losses:
        return "nothing"
    return ", ".join(f"{loss.mechanism}:{loss.target} ε={format_epsilon(loss.epsilon)}"
                     for loss in losses)


def check_plan(planned: Sequence[PrivacyLoss], charges: Iterable[Charge], *, units: int | None = None,
               exact: bool = True, owner: str = "the run") -> None:
    """Raise InternalError unless every unit incurred what was planned.

    Args:
        planned: The losses one unit was planned to incur (the budget pre-check's figures).
        charges: What the mechanisms that ran reported.
        units: The number of units of the run; None when every charge covers every unit.
        exact: True: every unit must have incurred exactly ``planned`` (a DP claim: a unit charged
            less was not privatized, one charged more was not budgeted). False: no unit may have
            incurred more than ``planned`` (a nominal ε, such as PPMS-DP's paper variant, whose
            mechanisms skip the groups they publish exact and the cases they withhold).
        owner: Who ran, for the message.

    Raises:
        InternalError: the plan and what ran differ.
    """
    charges = tuple(charges)
    plan = Counter(planned)
    if units is None:
        if any(c.units is not None for c in charges):
            raise InternalError(f"{owner}: charges name units, but the number of units is unknown.")
        n = 1
    else:
        n = units
    if n == 0:
        return
    counts = dict(unit_counts(charges, n))
    bad = np.zeros(n, dtype=bool)
    for loss in set(plan) | set(counts):
        got = counts.get(loss, np.zeros(n, dtype=np.int64))
        bad |= (got != plan[loss]) if exact else (got > plan[loss])
    if bad.any():
        unit = int(np.flatnonzero(bad)[0])
        ran = [loss for loss, got in counts.items() for _ in range(int(got[unit]))]
        scope = next(iter(plan or counts)).scope
        relation = "equal" if exact else "stay within"
        raise InternalError(
            f"{owner}: the mechanisms that ran do not {relation} the plan for {int(bad.sum())} "
            f"{scope}(s); {scope} #{unit} incurred [{_shown(ran)}] but the plan (the budget "
            f"pre-check) is [{_shown(list(planned))}].")
