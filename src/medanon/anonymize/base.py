"""The common shape of every anonymization method."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import pandas as pd

from ..accounting import Charge, PrivacyLoss, losses_per_unit
from ..data.records import SuperRecords
from ..data.terms import TermCodes
from ..random import Randomness


@dataclass(frozen=True)
class AnonymizationResult:
    """What an algorithm returns for one period.

    Attributes:
        table: one row per released case: ``period, case_id, group`` then the published
            columns; numeric QIDs as ``pandas.Interval`` (or numbers), categorical QIDs as
            hierarchy labels, multi-valued columns as tuples.
        n_groups: number of QID-groups (equivalence classes).
        suppressed: number of cases withheld from the release.
        suppressed_terms: number of sensitive terms removed from published cases, one per
            (case, term) pair (``on_infeasible="suppress-terms"``, and HA's cases that fit no
            group with all their terms); a syntactic model's count, not a DP statistic.
        counterfeit: number of counterfeit records added.
        details: algorithm-specific facts for the manifest (what was generalized and why).
        privacy_charges: what the mechanisms that ran reported to the run's accountant
            (``medanon.accounting.Charge``; units are the positions of the cases in the input
            super records); the release store's ledger is written from them. Empty for methods
            without a DP mechanism.
        private_details: operator-only facts computed from the private values that no privacy
            model accounts for (e.g. how many true values fell outside a public domain). The
            publish flow keeps them in the store beside the release and never writes them into
            the manifest or an export: one case's true value can flip them.
        table_terms: For some multi-valued columns of ``table`` (the sensitive ones, where the
            method coded them), their cells as integer codes, row for row of ``table``
            (``table_terms[c]`` holds the terms of ``table[c]``); None when the method gives
            none. The gate reads the candidate's (row, term) pairs from them rather than split
            the text formatted from ``table`` (issue 43); the tuples in ``table`` stay what
            is published.
    """

    table: pd.DataFrame
    n_groups: int
    suppressed: int = 0
    suppressed_terms: int = 0
    counterfeit: int = 0
    details: dict[str, object] = field(default_factory=dict)
    privacy_charges: tuple[Charge, ...] = ()
    private_details: dict[str, object] = field(default_factory=dict)
    table_terms: Mapping[str, TermCodes] | None = field(default=None, repr=False, compare=False)

    @property
    def privacy_losses(self) -> tuple[PrivacyLoss, ...]:
        """What one case incurred in this release, one entry per mechanism invocation that read
        it, from what the mechanisms that ran reported (:func:`~medanon.accounting.losses_per_unit`:
        exact when every case was charged alike, else a bound on every case's)."""
        return losses_per_unit(self.privacy_charges)


class Anonymizer(ABC):
    """Base class: subclasses validate their parameters in ``__init__`` (keyword-only)."""

    #: the ``--method`` name.
    name: ClassVar[str]
    #: the privacy model the method claims, e.g. ``"PPMS(k, theta*)-bounding"``; None for none.
    privacy_model: ClassVar[str | None] = None
    #: for a method without a privacy model only: what its release is (a method with a model
    #: gets its guarantee text from the model object, ``medanon.models``).
    guarantee: ClassVar[str | None] = None
    #: whether the method draws random numbers (seeds matter only then).
    randomized: ClassVar[bool] = False
    #: whether the method reads earlier releases (periodic methods); others get none.
    periodic: ClassVar[bool] = False
    #: whether the method needs the case ids of the next period (HA's md-records).
    needs_next_period: ClassVar[bool] = False
    #: the overrides of the method's own checks that were given to it (e.g. PPMS-DP's
    #: ``allow_tiny_epsilon``), recorded in each manifest's ``method.acknowledged``.
    acknowledged: tuple[str, ...] = ()

    def planned_losses(self, schema) -> tuple[PrivacyLoss, ...]:
        """The privacy loss each case given to the method is planned to incur in one release of
        ``schema``'s data, one per mechanism; empty without a DP mechanism.

        Only the budget pre-check (``--case-budget``) reads it, before anything runs: the ledger
        is written from what the mechanisms report (:attr:`AnonymizationResult.privacy_charges`),
        and the publish flow raises InternalError when the two differ
        (:func:`~medanon.accounting.check_plan`)."""
        return ()

    @property
    def claims_dp(self) -> bool:
        """Whether the ε the mechanisms report carries an ε-DP claim. False for noise
        calibrated without one (PPMS-DP's paper variant): the ledger then marks its rows as
        not DP, they never count against a per-case budget, and such a budget is refused."""
        return True

    def privacy_statement(self, schema, losses: Sequence[PrivacyLoss]) -> dict | None:
        """DP methods: ε per case, variant, what it does and does not guarantee (manifest
        ``privacy_spent``), from ``losses``, what one case incurred in the release
        (:attr:`AnonymizationResult.privacy_losses`); None for methods without a DP claim."""
        return None

    def check_schema(self, schema) -> None:
        """Refuse parameters that do not fit ``schema`` (a column it lacks, or of another
        kind), before any record is read. Nothing to check by default.

        Raises:
            ValidationError: naming the parameter.
        """
        return None  # a hook with a default, not an abstract method

    @abstractmethod
    def parameters(self) -> dict[str, object]:
        """The parameters as written into the manifest."""

    @abstractmethod
    def anonymize(self, data: SuperRecords, previous: Sequence[pd.DataFrame] = (), *,
                  rng: Randomness, next_cases: Collection[str] | None = None) -> AnonymizationResult:
        """Anonymize one period's super records.

        Args:
            data: the period's super records.
            previous: the earlier published releases (release-format rows), when ``periodic``.
            rng: the run's randomness (:class:`~medanon.random.Randomness`): clustering choices
                from its generator, DP noise from its exact bits.
            next_cases: case ids present in the next period, when ``needs_next_period``.
        """
