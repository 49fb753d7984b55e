"""Differential-privacy accounting: exact privacy losses, budgets, the run's accountant and the
per-case ledger.

Mechanisms report a :class:`PrivacyLoss` per unit of protection (one case in one release) to the
run's :class:`Accountant`, which may enforce a :class:`Budget`; what they reported
(:func:`unit_counts`, :func:`losses_per_unit`) is checked against the plan (:func:`check_plan`)
and becomes the release store's per-case ledger across releases, summarized by
:func:`case_totals`, :func:`summarize_ledger` and checked by :func:`cases_over_budget`. All ε and
δ arithmetic is exact (:class:`fractions.Fraction`).
"""

from .accountant import Accountant, Charge, check_plan, losses_per_unit, unit_counts
from .budget import (EPSILON_FLOOR, Budget, PrivacyLoss, check_epsilon_floor, compose,
                     format_epsilon, parse_epsilon, to_exact)
from .ledger import LedgerSummary, case_totals, cases_over_budget, dp_rows, summarize_ledger

__all__ = ["EPSILON_FLOOR", "Accountant", "Budget", "Charge", "LedgerSummary", "PrivacyLoss", "case_totals",
           "cases_over_budget", "check_epsilon_floor", "check_plan", "compose", "dp_rows", "format_epsilon",
           "losses_per_unit", "parse_epsilon", "summarize_ledger", "to_exact", "unit_counts"]
