"""The one protocol every differential-privacy mechanism follows.

Configure in the constructor, work in one verb (diffprivlib's ``DPMechanism``): ε, read exactly
(0.1 means 1/10), and the sensitivity Δ where the mechanism has one are validated when the
mechanism is built, and the accessors (:attr:`~Mechanism.epsilon`, :attr:`~Mechanism.delta`,
:attr:`~Mechanism.sensitivity`, :meth:`~Mechanism.describe`, ``repr``) are written once, here.

Each mechanism carries its privacy map (OpenDP's measurements carry their privacy relation):
:meth:`Mechanism.privacy_loss` is the :class:`~medanon.accounting.PrivacyLoss` of one invocation
on one unit's input. The sampling verbs (``randomise``, ``select``) take an optional
:class:`~medanon.accounting.Accountant` and report that loss to it, for the units they are applied
to, *before* drawing any noise (:meth:`Mechanism.report`); so the accountant holds what ran and a
refused charge releases nothing. Without an accountant nothing is recorded (tests, direct use).
"""

from __future__ import annotations

import numbers
from abc import ABC
from fractions import Fraction
from typing import Any, ClassVar

from .._validation import _fail
from ..accounting.accountant import Accountant
from ..accounting.budget import PrivacyLoss
from .noise import to_fraction

__all__ = ["Mechanism"]


class Mechanism(ABC):
    """Base class: validated ε (exact) and Δ, the shared accessors, and the privacy map.

    Args:
        epsilon: ε > 0 per invocation on one unit's input (read exactly; 0.1 means 1/10).
        sensitivity: Δ, for mechanisms that have one (None for local randomizers); > 0, or >= 0
            when the subclass sets ``zero_sensitivity``.

    Raises:
        ValidationError: for a non-positive ε or an out-of-range Δ, naming the parameter and the
            subclass, e.g. ``The 'epsilon' parameter of LaplaceMechanism must be a positive
            number; got -1.``
    """

    #: what the mechanism reports as ``PrivacyLoss.mechanism`` (and the ledger's mechanism name).
    name: ClassVar[str]
    #: how it samples, for :meth:`describe` (floating-point caveats live in the module docs).
    sampler: ClassVar[str]
    #: whether a sensitivity of 0 is allowed.
    zero_sensitivity: ClassVar[bool] = False

    def __init__(self, *, epsilon: Any, sensitivity: Any = None) -> None:
        owner = type(self).__name__
        self._epsilon = to_fraction(epsilon, name="epsilon", owner=owner)
        self._sensitivity = None if sensitivity is None else to_fraction(
            sensitivity, name="sensitivity", owner=owner, positive=not self.zero_sensitivity)
        self._losses: dict[tuple[str, str], PrivacyLoss] = {}

    # -- the shared accessors -------------------------------------------------------------------

    @property
    def epsilon(self) -> Fraction:
        """The exact ε guaranteed per invocation on one unit's input."""
        return self._epsilon

    @property
    def delta(self) -> Fraction:
        """δ: 0, every mechanism here is pure ε-DP (or ε-local DP)."""
        return Fraction(0)

    @property
    def sensitivity(self) -> Fraction | None:
        """Δ as given (decimal reading of floats), or None for a local randomizer."""
        return self._sensitivity

    def _required_sensitivity(self) -> Fraction:
        """Δ, for the mechanisms that cannot work without one: a missing Δ (None) is refused
        with the ValidationError of any other invalid Δ, before any arithmetic on it."""
        if self._sensitivity is None:
            # to_fraction refuses None: this raises the usual message for the parameter.
            return to_fraction(None, name="sensitivity", owner=type(self).__name__,
                               positive=not self.zero_sensitivity)
        return self._sensitivity

    def describe(self) -> dict[str, object]:
        """A JSON-able description: name, exact and float ε (and Δ), the mechanism's own
        parameters, and how it samples."""
        out: dict[str, object] = {"name": self.name, "epsilon": str(self._epsilon),
                                  "epsilon_float": float(self._epsilon)}
        if self._sensitivity is not None:
            out.update(sensitivity=str(self._sensitivity),
                       sensitivity_float=float(self._sensitivity))
        return {**out, **self._parameters(), "sampler": self.sampler}

    def _parameters(self) -> dict[str, object]:
        """The subclass's own parameters for :meth:`describe`."""
        return {}

    def _repr_fields(self) -> dict[str, object]:
        """The subclass's own constructor arguments for ``repr``."""
        return {}

    def __repr__(self) -> str:
        fields: dict[str, object] = {"epsilon": self._epsilon}
        if self._sensitivity is not None:
            fields["sensitivity"] = self._sensitivity
        fields.update(self._repr_fields())
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in fields.items())})"

    # -- the privacy map ------------------------------------------------------------------------

    def privacy_loss(self, *, target: str = "", scope: str = "case") -> PrivacyLoss:
        """What one invocation costs one unit whose input it reads: (ε, δ) with this mechanism's
        name, applied to ``target`` (e.g. an attribute), protecting ``scope``."""
        key = (target, scope)
        loss = self._losses.get(key)
        if loss is None:
            loss = PrivacyLoss(epsilon=self._epsilon, delta=self.delta, mechanism=self.name,
                               target=target, scope=scope)
            self._losses[key] = loss
        return loss

    def report(self, accountant: Accountant | None, *, target: str = "", units: Any = None,
               inputs: int | None = None) -> None:
        """Report this mechanism's loss on ``target`` for ``units`` (None: every unit) to
        ``accountant`` (nothing without one), in the accountant's scope.

        The sampling verbs call it before they draw, with ``inputs`` the number of unit inputs
        they are given (one unit each: ``units`` must then name as many). Call it directly only
        for a sampler built on this mechanism's parameters outside it (IPA's counterfeit values)
        or for noise handed out in batches (:meth:`.DiscreteLaplaceMechanism.pool`).

        Raises:
            ValidationError: ``accountant`` is not an Accountant, or ``units`` does not name one
                unit per input or is invalid for the accountant.
            BudgetExceeded: the accountant's budget refuses the loss.
        """
        owner = f"{type(self).__name__}.report"
        if accountant is None:
            return
        if not isinstance(accountant, Accountant):
            raise _fail("accountant", owner, "an Accountant or None", accountant)
        if units is not None and inputs is not None:
            named = 1 if isinstance(units, numbers.Integral) else len(units)
            if named != inputs:
                raise _fail("units", owner, f"one unit per input ({inputs})",
                            f"{named} unit(s)")
        accountant.spend(self.privacy_loss(target=target, scope=accountant.scope), units=units)
