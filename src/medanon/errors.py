"""The exception hierarchy of medanon.

Every error a user can cause derives from :class:`MedanonError`; the CLI prints it as
``ErrorType: message`` on stderr and exits with the error's :attr:`~MedanonError.exit_code`
without a traceback. Broken internal invariants raise :class:`InternalError` (an
``AssertionError``), which is a bug, not a user error.

Errors whose cause lies outside the data and the parameters (a lock held by another process, a
permission, a full disk, a damaged download) have classes of their own and exit codes from
``sysexits.h``, so that a script can tell "try again later" from "fix the input" from "a bug"
(70). The table is in ``docs/errors.md``. They subclass the error a caller would already catch
(a locked store is still a :class:`StoreError`).
"""

from __future__ import annotations

from typing import Any


class MedanonError(Exception):
    """Root of every error medanon raises on purpose."""

    exit_code = 1


class ValidationError(MedanonError, ValueError):
    """A parameter or an input value is out of its allowed range or has the wrong type."""


class SchemaError(MedanonError, ValueError):
    """A schema is malformed, or names a column the data does not have."""


class InputFormatError(MedanonError, ValueError):
    """An input file is not in the format it claims to be (FAERS extract, release folder, ...)."""


class CorruptInputError(InputFormatError):
    """An input file is damaged: a zip member that fails its CRC or does not decompress, or an
    archive cut short (an interrupted download). Fetch it again; no parsing fix will help."""

    exit_code = 65  # EX_DATAERR


class InputQualityError(InputFormatError):
    """An input file is in its format, but reading it would repair or drop some of what it
    says (duplicate rows that conflict, implausible values, rows of no report, ...): refused by
    a strict ingest (``medanon ingest --strict``), which names the counts."""


class HierarchyError(MedanonError, ValueError):
    """A generalization hierarchy is invalid, or a value is missing from it."""


class InfeasibleError(MedanonError):
    """The privacy model cannot be satisfied on this data with these parameters.

    Attributes:
        workable_theta: When the refusal is that some terms cannot meet their θ in a period:
            term -> the θ ``on_infeasible="raise-theta"`` would declare for it in that period
            (the smallest θ with which the period holds the term within θ, rounded up to 4
            decimals; :mod:`medanon.anonymize.common`). Empty for any other refusal. It is a
            necessary θ, not a sufficient one: cases the grouping cannot place remain.
    """

    def __init__(self, *args: object, workable_theta: dict[str, float] | None = None) -> None:
        super().__init__(*args)
        # kept as an attribute (not in args): pickling restores it from __dict__, so a refusal
        # raised on a Dask worker arrives whole
        self.workable_theta = dict(workable_theta or {})


class PrivacyViolation(MedanonError):
    """A release violates the privacy model it declares.

    Attributes:
        verification: The gate's manifest entry for the refused release (what it checked and
            the violations), set by the gate that raised the error; ``allow_violations``
            publishes it with ``published_despite_violations``.
        verdict: The gate's verdict: a :class:`~medanon.models.base.ReleaseVerdict` for a
            one-off release, a :class:`~medanon.models.base.SeriesVerdict` for a period of a
            series (``object`` here: this module sits below the models and imports nothing).
    """

    # declared, not assigned: the gate sets both on the error it raises (medanon.verify)
    verification: dict[str, Any]
    verdict: object


class StoreError(MedanonError):
    """The release store is missing, unreadable, or the operation would break its rules."""


class StoreLockedError(StoreError):
    """Another process holds the store's lock (DuckDB: one writer, or any number of readers
    without a writer). Nothing is wrong with the store: try again when that process ends."""

    exit_code = 75  # EX_TEMPFAIL


class StorePermissionError(StoreError):
    """The operating system refuses to open or write the store (file or folder permissions, an
    immutable file, a read-only file system)."""

    exit_code = 77  # EX_NOPERM


class DiskFullError(StoreError):
    """No space left on the device while writing the store or an output folder. Whatever was
    being written was rolled back or removed; free space and run the command again."""

    exit_code = 74  # EX_IOERR


class SeriesEndedError(StoreError):
    """A release after the series' final release (HA's ``final``), refused by the store itself.

    A final release is grouped as if none of its cases went on; any later report of those cases
    shows which did and narrows the final release's groups (the MD view), whichever store or series
    publishes it. The message says what the holder can still do that keeps the guarantee.

    Attributes:
        final_period: The period of the final release (None when unknown).
    """

    def __init__(self, *args: object, final_period: str | None = None) -> None:
        super().__init__(*args)
        # an attribute, not an arg: pickling restores it from __dict__ (as InfeasibleError's)
        self.final_period = final_period

    @classmethod
    def after(cls, final_period: str, *, refused: str | None = None) -> "SeriesEndedError":
        """The refusal of publishing ``refused`` (period labels, when known) after the final
        release ``final_period``."""
        what = f"Publishing {refused} is refused: the" if refused else "The"
        return cls(
            f"{what} series ended with the final release {final_period} (published with "
            f"'final': grouped as if no case went on). Any later report of its cases, in this "
            f"store or in another one, shows which cases went on and narrows {final_period}'s "
            f"groups below what was checked (its MD view), so nothing more is published for "
            f"the cases of this series. What keeps the guarantee: publish nothing further for "
            f"them; a new series (a new store) may publish only cases this series never "
            f"published.", final_period=final_period)


class BudgetExceeded(MedanonError):
    """A differential-privacy budget would be exceeded."""


class InternalError(AssertionError):
    """A broken internal invariant: a bug in medanon, never a user error."""
