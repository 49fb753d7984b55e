"""Per-case summaries of the release store's privacy ledger.

The ledger has one row per case, release and mechanism: ``period, case_id, mechanism, epsilon,
delta, epsilon_exact, dp``. ``epsilon`` and ``delta`` are floats; ``epsilon_exact`` is the exact ε as
written by :func:`~medanon.accounting.budget.format_epsilon`. The exact text is authoritative;
a row without it (missing column, null or empty cell) falls back to the float read through its
shortest ``repr`` (so the float 0.1 counts as exactly 1/10).

``dp`` says whether the row's ε carries an ε-DP claim. It is False for the *nominal* ε of a
mechanism that is not differentially private (PPMS-DP's ``paper`` variant: noise calibrated to
local, data-dependent sensitivity): such a row records that the case was released with that
noise, but its ε bounds nothing, so it is never added to a case's ε total and never counted
against a per-case budget. A missing column or an empty cell means True (ledgers written before
the column existed; the store marks its old paper-variant rows when it opens them).
:func:`summarize_ledger` reports the non-DP rows apart (:attr:`LedgerSummary.non_dp`).

A case's total is the exact sum of its ε over every row (basic sequential composition over the
releases and mechanisms that touched it, see :func:`~medanon.accounting.budget.compose`); cases
are protected separately (parallel composition), so totals are never added across cases.

Budgets are checked on ε only: δ totals are summed as floats and reported, not enforced.

How the sums stay exact and fast: the distinct ε values are few, so each is parsed once, all are
written over one common denominator, and a case's total is an integer sum of numerators
(numpy int64 when it cannot overflow, Python integers otherwise), grouped first by
(case, value) counts. 200,000 ledger rows take about a second.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ..periods import parse_period
from ..errors import ValidationError
from .budget import Budget, format_epsilon, parse_epsilon, to_exact

__all__ = ["LedgerSummary", "case_totals", "cases_over_budget", "dp_rows", "summarize_ledger"]

#: number of distinct totals kept in :attr:`LedgerSummary.distribution`.
DISTRIBUTION_SIZE = 50
#: number of cases listed in :attr:`LedgerSummary.worst_cases`.
WORST_CASES = 10
_INT64_LIMIT = 2 ** 62


@dataclass(frozen=True)
class _Exact:
    """The ledger with each row's ε as an integer numerator over a common ``denominator``."""

    rows: pd.DataFrame          # case_id, period (str), code (int64), delta (float)
    numerators: np.ndarray      # numerator of each distinct value (by code); int64 or object
    denominator: int

    def sums(self, keys: list[str]) -> pd.Series:
        """Exact ε numerators summed per ``keys`` (sorted index); int64 or Python ints."""
        counts = self.rows.groupby(keys + ["code"], sort=False).size().reset_index(name="n")
        part = counts["n"].to_numpy(dtype=np.int64)
        if self.numerators.dtype == object:
            part = part.astype(object)
        counts["num"] = part * self.numerators[counts["code"].to_numpy()]
        return counts.groupby(keys, sort=True)["num"].sum()

    def fraction(self, numerator: Any) -> Fraction:
        return Fraction(int(numerator), self.denominator)


def _fail(owner: str, requirement: str) -> ValidationError:
    return ValidationError(f"The 'ledger' parameter of {owner} must be {requirement}.")


def _dp_flags(ledger: pd.DataFrame, owner: str) -> np.ndarray:
    """The ``dp`` column as booleans (absent or empty: True), validated."""
    if "dp" not in ledger.columns:
        return np.ones(len(ledger), dtype=bool)
    flags = ledger["dp"]
    known = flags.notna().to_numpy()
    values = flags.to_numpy(dtype=object)[known]
    if not all(isinstance(v, (bool, np.bool_)) for v in values):
        raise _fail(owner, "a ledger whose dp column holds booleans (True: the row's epsilon "
                           "carries an epsilon-DP claim)")
    out = np.ones(len(ledger), dtype=bool)
    out[known] = values.astype(bool)
    return out


def dp_rows(ledger: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``ledger`` whose ε carries an ε-DP claim (see the module docstring).

    Raises:
        ValidationError: ``ledger`` is not a DataFrame or its ``dp`` column is not boolean.
    """
    _check_frame(ledger, "dp_rows")
    return ledger[_dp_flags(ledger, "dp_rows")]


def _check_frame(ledger: Any, owner: str) -> None:
    if not isinstance(ledger, pd.DataFrame):
        raise ValidationError(f"The 'ledger' parameter of {owner} must be a pandas DataFrame; "
                              f"got {type(ledger).__name__}.")


def _exact_ledger(ledger: Any, owner: str) -> _Exact:
    """Validate ``ledger`` and resolve every row's exact ε (see the module docstring).

    Only the rows with an ε-DP claim are kept (``dp``); the others bound nothing.
    """
    _check_frame(ledger, owner)
    ledger = ledger[_dp_flags(ledger, owner)]
    missing = [c for c in ("period", "case_id") if c not in ledger.columns]
    if "epsilon" not in ledger.columns and "epsilon_exact" not in ledger.columns:
        missing.append("epsilon")
    if missing:
        raise _fail(owner, f"a DataFrame with columns period, case_id, epsilon (and optionally "
                           f"epsilon_exact, delta); it lacks {', '.join(missing)}")
    n = len(ledger)
    for column in ("period", "case_id"):
        if n and ledger[column].isna().any():
            raise _fail(owner, f"a ledger without empty {column} cells")
    codes = np.full(n, -1, dtype=np.int64)
    values: list[Fraction] = []
    has_exact = np.zeros(n, dtype=bool)
    if "epsilon_exact" in ledger.columns and n:
        exact = ledger["epsilon_exact"]
        text = exact.astype(str).str.strip()
        has_exact = (exact.notna() & (text != "")).to_numpy()
        if has_exact.any():
            found, uniques = pd.factorize(text.to_numpy()[has_exact])
            values += [parse_epsilon(u, name="epsilon_exact", owner=owner) for u in uniques]
            codes[has_exact] = found
    rest = ~has_exact
    if rest.any():
        if "epsilon" not in ledger.columns:
            raise _fail(owner, "a ledger whose rows have epsilon_exact, or an epsilon column to "
                               "fall back on")
        found, uniques = pd.factorize(ledger["epsilon"].to_numpy()[rest])
        if (found < 0).any():
            raise _fail(owner, "a ledger with a finite, non-negative epsilon in every row; "
                               "some are missing or NaN")
        offset = len(values)
        values += [to_exact(u, name="epsilon", owner=owner, allow_zero=True) for u in uniques]
        codes[rest] = found + offset
    denominator = math.lcm(*(v.denominator for v in values)) if values else 1
    numerators = [v.numerator * (denominator // v.denominator) for v in values]
    safe = max(numerators, default=0) * max(n, 1) < _INT64_LIMIT
    numerators_array = np.array(numerators, dtype=np.int64 if safe else object)
    if "delta" in ledger.columns:
        delta = pd.to_numeric(ledger["delta"], errors="coerce")
        bad = delta.isna() & ledger["delta"].notna()
        delta = delta.fillna(0.0).to_numpy(dtype=float)
        if bad.any() or not np.isfinite(delta).all() or (delta < 0).any():
            raise _fail(owner, "a ledger whose delta values are finite, non-negative numbers")
    else:
        delta = np.zeros(n)
    rows = pd.DataFrame({"case_id": ledger["case_id"].astype(str).to_numpy(),
                         "period": ledger["period"].astype(str).to_numpy(),
                         "code": codes, "delta": delta})
    return _Exact(rows, numerators_array, denominator)


def _texts(exact: _Exact, numerators: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact text and float of each summed numerator (each distinct total formatted once)."""
    found, uniques = pd.factorize(numerators)
    fractions = [exact.fraction(u) for u in uniques]
    text = np.array([format_epsilon(f) for f in fractions], dtype=object)
    floats = np.array([float(f) for f in fractions], dtype=float)
    return text[found], floats[found]


def _totals(exact: _Exact) -> pd.DataFrame:
    """Per case: releases, exact numerator of the total, delta; sorted by case_id."""
    sums = exact.sums(["case_id"])
    grouped = exact.rows.groupby("case_id", sort=True)
    return pd.DataFrame({"case_id": sums.index.to_numpy(dtype=object),
                         "releases": grouped["period"].nunique().reindex(sums.index)
                         .to_numpy(dtype=np.int64),
                         "num": sums.to_numpy(),
                         "delta": grouped["delta"].sum().reindex(sums.index).to_numpy(float)})


def case_totals(ledger: pd.DataFrame) -> pd.DataFrame:
    """Per-case privacy totals over every release and mechanism in ``ledger`` with an ε-DP
    claim (rows with ``dp`` False are left out: see the module docstring).

    Returns:
        One row per case_id, sorted by case_id (as text), with columns ``case_id``,
        ``releases`` (number of distinct periods the case was charged in), ``epsilon`` (the
        total as a float), ``epsilon_exact`` (the exact total, :func:`format_epsilon` text) and
        ``delta`` (the float sum of δ). ``epsilon_exact`` is the exact sum of the rows' exact ε
        (see the module docstring); ``epsilon`` is its nearest float. An empty ledger gives an
        empty frame with these columns.

    Raises:
        ValidationError: when a required column is missing, a case_id or period is empty, or an
            ε or δ cannot be read as a finite non-negative number.
    """
    exact = _exact_ledger(ledger, "case_totals")
    totals = _totals(exact)
    text, floats = _texts(exact, totals["num"].to_numpy())
    return pd.DataFrame({"case_id": totals["case_id"].astype(object),
                         "releases": totals["releases"].astype(np.int64),
                         "epsilon": pd.Series(floats, dtype=float),
                         "epsilon_exact": pd.Series(text, dtype=object),
                         "delta": totals["delta"].astype(float)})


@dataclass(frozen=True)
class LedgerSummary:
    """What the ledger says about the privacy spent per case (all ε totals exact per case).

    Attributes:
        cases: Number of distinct cases in the ledger.
        entries: Number of ledger rows.
        periods: The periods charged, in time order.
        max_epsilon: The largest case total, exact text (``"0"`` when empty).
        max_epsilon_float: The same as a float.
        mean_epsilon: Mean of the case totals (computed exactly, then rounded to a float).
        median_epsilon: Median of the case totals (float; equals ``quantiles["p50"]``).
        quantiles: ``p50``, ``p90``, ``p99`` of the case totals (floats, linear interpolation
            between order statistics as ``numpy.quantile``).
        distribution: ``(exact total, number of cases)`` pairs, in increasing order of total; when
            there are more than 50 distinct totals, the 50 shared by the most cases (ties: the
            larger total) are kept, so the largest total may be missing here (see
            ``max_epsilon`` and ``worst_cases``).
        per_period: Per period, in time order: ``period``, ``cases`` (distinct cases charged)
            and ``epsilon_per_case`` (largest exact ε one case was charged in that period).
        case_budget: The per-case ε budget checked, exact text, or None.
        over_budget: Cases whose total exceeds the budget (0 without one).
        at_or_near_budget: Cases whose remaining budget (budget − total) is smaller than the
            largest per-release spend seen (the maximum over periods of
            ``epsilon_per_case``), i.e. that one more such release would refuse; this
            includes the ``over_budget`` cases. A case exactly at its budget counts (any positive
            spend refuses it); a case whose remaining budget equals the largest spend does not
            (spending up to the budget is allowed). 0 without a budget.
        worst_cases: The 10 cases with the largest totals (ties: by case_id): ``case_id``,
            ``epsilon`` (exact text) and ``releases``.
        non_dp: The rows without an ε-DP claim, which every figure above leaves out:
            ``entries``, ``cases`` (distinct cases), ``periods`` and ``per_period`` (``period``,
            ``cases``, ``mechanisms`` and ``nominal_epsilon_per_case``, the largest nominal ε
            one case was given in that period: a noise parameter, not a privacy bound).
    """

    cases: int
    entries: int
    periods: tuple[str, ...]
    max_epsilon: str
    max_epsilon_float: float
    mean_epsilon: float
    median_epsilon: float
    quantiles: dict[str, float]
    distribution: tuple[tuple[str, int], ...]
    per_period: tuple[dict, ...]
    case_budget: str | None
    over_budget: int
    at_or_near_budget: int
    worst_cases: tuple[dict, ...]
    non_dp: dict = field(default_factory=lambda: dict(_NO_NON_DP))

    def to_dict(self) -> dict[str, object]:
        """JSON-ready; ``distribution`` becomes a list of ``{"epsilon", "cases"}`` objects."""
        return {"cases": self.cases, "entries": self.entries, "periods": list(self.periods),
                "max_epsilon": self.max_epsilon, "max_epsilon_float": self.max_epsilon_float,
                "mean_epsilon": self.mean_epsilon, "median_epsilon": self.median_epsilon,
                "quantiles": dict(self.quantiles),
                "distribution": [{"epsilon": e, "cases": n} for e, n in self.distribution],
                "per_period": [dict(p) for p in self.per_period],
                "case_budget": self.case_budget, "over_budget": self.over_budget,
                "at_or_near_budget": self.at_or_near_budget,
                "worst_cases": [dict(w) for w in self.worst_cases],
                "non_dp": {**self.non_dp, "periods": list(self.non_dp["periods"]),
                           "per_period": [dict(p) for p in self.non_dp["per_period"]]}}


_NO_NON_DP: dict[str, object] = {"entries": 0, "cases": 0, "periods": (), "per_period": ()}


def _non_dp_summary(ledger: pd.DataFrame, owner: str) -> dict:
    """What the rows without an ε-DP claim hold (see :attr:`LedgerSummary.non_dp`)."""
    rows = ledger[~_dp_flags(ledger, owner)]
    if not len(rows):
        return dict(_NO_NON_DP)
    # their ε read exactly, as if DP, only to report the nominal noise parameter per period
    exact = _exact_ledger(rows.assign(dp=True), owner)
    periods = tuple(_period_order(exact.rows["period"]))
    nominal = exact.sums(["period", "case_id"]).groupby(level="period").max()
    cases = exact.rows.groupby("period")["case_id"].nunique()
    # per period, its mechanisms' names (nothing to look up when the ledger has no such column)
    mechanisms: pd.Series | dict[str, list[str]] = (
        rows.assign(period=rows["period"].astype(str)).groupby("period")["mechanism"]
        .agg(lambda m: sorted(set(map(str, m)))) if "mechanism" in rows.columns else {})
    per_period = tuple({"period": p, "cases": int(cases[p]),
                        "mechanisms": list(mechanisms[p]) if p in mechanisms else [],
                        "nominal_epsilon_per_case": format_epsilon(exact.fraction(nominal[p]))}
                       for p in periods)
    return {"entries": len(rows), "cases": int(exact.rows["case_id"].nunique()),
            "periods": periods, "per_period": per_period}


def _period_order(periods: Iterable[str]) -> list[str]:
    """Time order when every label is a quarter (``2022Q4``), text order otherwise."""
    labels = sorted(set(periods))
    try:
        return sorted(labels, key=lambda p: parse_period(p).ordinal)
    except ValidationError:
        return labels


def _check_budget(case_budget: Any, owner: str) -> None:
    if case_budget is not None and not isinstance(case_budget, Budget):
        raise ValidationError(f"The 'case_budget' parameter of {owner} must be a Budget or None; "
                              f"got {case_budget!r}.")


def _above(numerators: np.ndarray, limit: Fraction, denominator: int) -> np.ndarray:
    """Exactly ``numerators / denominator > limit`` for each element (a boolean array)."""
    threshold = math.floor(limit * denominator)  # integers n satisfy n > x iff n > floor(x)
    if numerators.dtype == object:
        return np.array([int(v) > threshold for v in numerators], dtype=bool)
    if threshold >= np.iinfo(np.int64).max:
        return np.zeros(len(numerators), dtype=bool)
    if threshold < np.iinfo(np.int64).min:
        return np.ones(len(numerators), dtype=bool)
    return numerators > threshold


def summarize_ledger(ledger: pd.DataFrame, *, case_budget: Budget | None = None) -> LedgerSummary:
    """Summarize the per-case privacy totals of ``ledger`` (see :class:`LedgerSummary`).

    Args:
        ledger: The store's ledger (columns as for :func:`case_totals`).
        case_budget: A per-case budget to check the ε totals against, or None.

    Guarantees: every count and exact text is computed from exact per-case sums over the rows
    with an ε-DP claim; rows without one are only reported in ``non_dp``. A ledger without DP
    rows gives ``cases == 0``, ``"0"`` and 0.0 for the statistics, and empty tuples.

    Raises:
        ValidationError: as :func:`case_totals`, or when ``case_budget`` is not a Budget.
    """
    owner = "summarize_ledger"
    _check_budget(case_budget, owner)
    exact = _exact_ledger(ledger, owner)
    non_dp = _non_dp_summary(ledger, owner)
    budget_text = None if case_budget is None else format_epsilon(case_budget.epsilon)
    totals = _totals(exact)
    periods = tuple(_period_order(exact.rows["period"]))
    if not len(totals):
        return LedgerSummary(cases=0, entries=0, periods=(), max_epsilon="0",
                             max_epsilon_float=0.0, mean_epsilon=0.0, median_epsilon=0.0,
                             quantiles={"p50": 0.0, "p90": 0.0, "p99": 0.0}, distribution=(),
                             per_period=(), case_budget=budget_text, over_budget=0,
                             at_or_near_budget=0, worst_cases=(), non_dp=non_dp)
    nums = totals["num"].to_numpy()
    text, floats = _texts(exact, nums)
    n_cases = len(totals)

    # distinct totals: exact value -> number of cases
    counts = pd.Series(nums).value_counts(sort=False)
    pairs = [(exact.fraction(v), int(c)) for v, c in counts.items()]
    if len(pairs) > DISTRIBUTION_SIZE:
        pairs = sorted(pairs, key=lambda p: (p[1], p[0]), reverse=True)[:DISTRIBUTION_SIZE]
    distribution = tuple((format_epsilon(v), c) for v, c in sorted(pairs))
    total_sum = sum((exact.fraction(v) * c for v, c in counts.items()), Fraction(0))
    largest = exact.fraction(max(int(v) for v in counts.index))
    q50, q90, q99 = (float(q) for q in np.quantile(floats, [0.5, 0.9, 0.99]))

    # per period: distinct cases and the largest per-case spend
    per_release = exact.sums(["period", "case_id"])
    per_period_max = per_release.groupby(level="period").max()
    per_period_cases = exact.rows.groupby("period")["case_id"].nunique()
    per_period = tuple({"period": p, "cases": int(per_period_cases[p]),
                        "epsilon_per_case": format_epsilon(exact.fraction(per_period_max[p]))}
                       for p in periods)
    largest_spend = exact.fraction(max(int(v) for v in per_period_max.to_numpy()))

    over = near = 0
    if case_budget is not None:
        over = int(_above(nums, case_budget.epsilon, exact.denominator).sum())
        near = int(_above(nums, case_budget.epsilon - largest_spend, exact.denominator).sum())

    # the worst cases: largest totals first, ties by case_id
    ids, values = totals["case_id"].tolist(), [int(v) for v in nums.tolist()]
    releases = totals["releases"].tolist()
    order = heapq.nsmallest(WORST_CASES, range(n_cases), key=lambda i: (-values[i], ids[i]))
    worst = tuple({"case_id": ids[i], "epsilon": text[i], "releases": int(releases[i])}
                  for i in order)
    return LedgerSummary(cases=n_cases, entries=len(exact.rows), periods=periods,
                         max_epsilon=format_epsilon(largest), max_epsilon_float=float(largest),
                         mean_epsilon=float(total_sum / n_cases), median_epsilon=q50,
                         quantiles={"p50": q50, "p90": q90, "p99": q99},
                         distribution=distribution, per_period=per_period,
                         case_budget=budget_text, over_budget=over, at_or_near_budget=near,
                         worst_cases=worst, non_dp=non_dp)


def cases_over_budget(ledger: pd.DataFrame, case_ids: Iterable[str], spend: Any,
                      case_budget: Budget) -> list[str]:
    """The given cases that a further ``spend`` would take over ``case_budget``'s ε.

    A case is listed when its exact ledger total plus ``spend`` is strictly greater than
    ``case_budget.epsilon``; reaching the budget exactly is allowed. A case absent from the
    ledger has total 0. Case ids are compared as text. Rows without an ε-DP claim (``dp``
    False) are not counted: their nominal ε bounds nothing (the publish flow refuses a per-case
    budget for such methods).

    Args:
        ledger: The store's ledger (columns as for :func:`case_totals`).
        case_ids: The cases about to be charged.
        spend: The ε each of them would be charged (read with :func:`to_exact`, >= 0).
        case_budget: The per-case budget.

    Returns:
        The distinct offending case ids, sorted.

    Raises:
        ValidationError: for a bad ledger, ``spend`` or ``case_budget``.
    """
    owner = "cases_over_budget"
    if not isinstance(case_budget, Budget):
        raise ValidationError(f"The 'case_budget' parameter of {owner} must be a Budget; "
                              f"got {case_budget!r}.")
    amount = to_exact(spend, name="spend", owner=owner, allow_zero=True)
    if isinstance(case_ids, str):
        raise ValidationError(f"The 'case_ids' parameter of {owner} must be an iterable of case "
                              f"ids, not one string; got {case_ids!r}.")
    wanted = sorted({str(c) for c in case_ids})
    if not wanted:
        return []
    exact = _exact_ledger(ledger, owner)
    sums = exact.sums(["case_id"]) if len(exact.rows) else pd.Series(dtype=np.int64)
    known = np.asarray(pd.Index(wanted).isin(sums.index), dtype=bool)
    limit = case_budget.epsilon - amount
    over = np.zeros(len(wanted), dtype=bool)
    if known.any():
        values = sums.loc[[c for c, k in zip(wanted, known) if k]].to_numpy()
        over[known] = _above(values, limit, exact.denominator)
    over[~known] = limit < 0
    return [c for c, flag in zip(wanted, over) if flag]
