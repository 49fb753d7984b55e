"""Differential-privacy accounting: exact privacy losses, budgets and the per-case ledger.

Mechanisms report a :class:`PrivacyLoss` per unit of protection (one case in one release); an
:class:`Accountant` collects them for a run and enforces an optional :class:`Budget`; the
release store keeps a per-case ledger across releases, summarized by :func:`case_totals`,
:func:`summarize_ledger` and checked by :func:`cases_over_budget`. All ε and δ arithmetic is
exact (:class:`fractions.Fraction`).
"""

from .budget import (Accountant, Budget, PrivacyLoss, compose, format_epsilon, parse_epsilon,
                     to_exact)
from .ledger import LedgerSummary, case_totals, cases_over_budget, dp_rows, summarize_ledger

__all__ = ["Accountant", "Budget", "LedgerSummary", "PrivacyLoss", "case_totals",
           "cases_over_budget", "compose", "dp_rows", "format_epsilon", "parse_epsilon",
           "summarize_ledger", "to_exact"]
