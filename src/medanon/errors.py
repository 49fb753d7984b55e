"""The exception hierarchy of medanon.

Every error a user can cause derives from :class:`MedanonError`; the CLI prints it as
``ErrorType: message`` on stderr and exits non-zero without a traceback. Broken internal
invariants raise :class:`InternalError` (an ``AssertionError``), which is a bug, not a user error.
"""

from __future__ import annotations


class MedanonError(Exception):
    """Root of every error medanon raises on purpose."""

    exit_code = 1


class ValidationError(MedanonError, ValueError):
    """A parameter or an input value is out of its allowed range or has the wrong type."""


class SchemaError(MedanonError, ValueError):
    """A schema is malformed, or names a column the data does not have."""


class InputFormatError(MedanonError, ValueError):
    """An input file is not in the format it claims to be (FAERS extract, release folder, ...)."""


class HierarchyError(MedanonError, ValueError):
    """A generalization hierarchy is invalid, or a value is missing from it."""


class InfeasibleError(MedanonError):
    """The privacy model cannot be satisfied on this data with these parameters."""


class PrivacyViolation(MedanonError):
    """A release violates the privacy model it declares."""


class StoreError(MedanonError):
    """The release store is missing, unreadable, or the operation would break its rules."""


class BudgetExceeded(MedanonError):
    """A differential-privacy budget would be exceeded."""


class InternalError(AssertionError):
    """A broken internal invariant: a bug in medanon, never a user error."""
