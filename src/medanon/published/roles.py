"""The role of every published column (``design.md``: "Every published column has a role").

A column of a release is one of:

* ``covered``: protected by the release's privacy model: the generalized (or perturbed) QIDs,
  the sensitive columns under θ, and ``group``, the model's equivalence class;
* ``adversary-knowledge``: what the attacks and the gate read as the adversary does
  (``case_id``: the B-, F-, L- and MD-attacks link releases by it);
* ``derived``: a function of values already published or covered, so it tells nothing more
  (``period``, the release's label; the receipt dates of a protected release, below);
* ``clear``: published as it is and protected by nothing; the model's "does not guarantee"
  text names it (drugs, drug roles, outcomes and other ``multi``/``insensitive`` columns).

A column without a role is never written: :func:`check_roles` refuses it.

Receipt dates (issue 29). The true dates tell when a case was first reported, which the
L-attack's adversary uses: a case withheld in its first quarter and published in a later one
carries an earlier ``init_fda_dt``, so the adversary who knows the target is first reported
this quarter excludes it, and the group keeps fewer than k candidates; a follow-up of a case
reported before the series began is excluded the same way. So a protected release publishes
the dates *derived from the series*: ``init_fda_dt`` (:data:`FIRST_RECEIPT_DATES`) is the year of
the case's first release within the life span (the period's own year for a case new to the
series; the adversary links CaseIDs within the life span anyway), and every other date column
is the year of the release's period. Neither is a function of private values, so the B-, F-,
L- and MD-attacks learn nothing from them that the CaseID linkage does not already give, and
the gate checks that the published dates are exactly these (a release whose dates differ is
violating). Method ``none`` publishes the true dates at the schema's granularity (it protects
nothing). The choice against reading true dates as adversary knowledge: then every follow-up
of a case older than the series (all 258 cases of the real 2022Q4 subset) could never be an
anchor, and no group could form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import InputFormatError
from ..periods import Period, parse_period
from .cells import CaseIds, case_positions, distinct_cells, read_once
from .cells import case_ids as read_case_ids

if TYPE_CHECKING:
    from ..data.schema import Schema

__all__ = ["FIRST_RECEIPT_DATES", "ROLES", "check_roles", "checked_columns", "column_roles",
           "date_mismatches", "derive_dates", "derive_release_dates", "refuse_unknown_role"]

ROLES = ("covered", "adversary-knowledge", "derived", "clear")
#: date columns that hold the first receipt of a case (FAERS ``init_fda_dt``)
FIRST_RECEIPT_DATES = frozenset({"init_fda_dt"})
_SHOWN = 5


def column_roles(columns: Mapping, *, perturbed: Iterable[str] = (), protected: bool = True,
                 ) -> dict[str, dict[str, str]]:
    """Every column of a series release with its role and what it holds.

    Args:
        columns: The manifest's ``columns`` entry (``qids``, ``sensitive``, ``multi``,
            ``insensitive``, ``dates``).
        perturbed: QIDs the release perturbs (DP) instead of generalizing.
        protected: False for method ``none`` (nothing is covered; dates are the true ones).
    """
    perturbed = set(perturbed)
    out: dict[str, dict[str, str]] = {
        "period": {"role": "derived", "holds": "the release's period label"},
        "case_id": {"role": "adversary-knowledge",
                    "holds": "FDA's CaseID, which the B-, F-, L- and MD-attacks link across releases"},
        "group": {"role": "covered" if protected else "clear",
                  "holds": "the QID group (equivalence class) of the model"},
    }
    for q in columns.get("qids", ()):
        name = q["name"] if isinstance(q, Mapping) else str(q)
        how = "perturbed (differential privacy)" if name in perturbed else "generalized"
        out[name] = ({"role": "covered", "holds": f"quasi-identifier, {how}"} if protected else
                     {"role": "clear", "holds": "quasi-identifier as reported"})
    for name in columns.get("sensitive", ()):
        out[name] = ({"role": "covered", "holds": "sensitive terms, bounded by theta"} if protected
                     else {"role": "clear", "holds": "sensitive terms as reported"})
    for name in (*columns.get("multi", ()), *columns.get("insensitive", ())):
        out[name] = {"role": "clear", "holds": "published as reported; no model covers it"}
    for name in dict(columns.get("dates") or {}):
        if not protected:
            out[name] = {"role": "clear", "holds": "the reported date at the schema's granularity"}
        elif name in FIRST_RECEIPT_DATES:
            out[name] = {"role": "derived", "holds": "year of the case's first release in the "
                                                     "series within the life span"}
        else:
            out[name] = {"role": "derived", "holds": "year of the release's period"}
    return out


def checked_columns(schema: Schema, also: Iterable[str] = ()) -> list[str]:
    """The published columns a release's readers need of it, in the release's order: every
    column but the ``multi`` and ``insensitive`` ones, which are ``clear`` whatever the method
    (:func:`column_roles`: no model covers them, so no method, derived date, check or attack
    reads them), except those of ``also`` (clear columns a reader reads besides: the signal
    rules and the screening of ``evaluate``). Readers of the store fetch only these (a clear
    column of FAERS is a str per row; issue 43)."""
    unread = (set(schema.multi) | set(schema.insensitive)) - set(also)
    return [c for c in ("period", "case_id", "group", *schema.published) if c not in unread]


def check_roles(header: Sequence[str], roles: Mapping[str, object], *, where: str) -> None:
    """Refuse to write a column without a role.

    Raises:
        InputFormatError: naming the columns without one.
    """
    missing = [c for c in header if c not in roles]
    if missing:
        raise InputFormatError(f"{where}: column(s) {', '.join(map(repr, missing))} have no role "
                               f"in the release's privacy model (covered, adversary-knowledge, "
                               f"derived or clear); a column without one is never published.")


def derive_dates(case_ids: Sequence[str] | np.ndarray, dates: Iterable[str], label: str,
                 earlier: Mapping[str, pd.DataFrame], lifespan: int | None) -> dict[str, np.ndarray]:
    """The published value of each date column of a protected release (module docstring).

    Args:
        case_ids: The release's CaseIDs, in row order.
        dates: The date columns.
        label: The release's period.
        earlier: Period label -> the rows of every release published before (``case_id``).
        lifespan: The model's CaseID life span (None: every earlier release links).
    """
    return _derived(_texts(case_ids), dates, label, earlier, lifespan)


def derive_release_dates(rows: pd.DataFrame, dates: Iterable[str], label: str,
                         earlier: Mapping[str, pd.DataFrame], lifespan: int | None,
                         ) -> dict[str, np.ndarray]:
    """:func:`derive_dates` of the CaseIDs of ``rows`` (a ``case_id`` column), the same arrays.

    Inside :func:`~medanon.published.cells.reading_once`, the CaseIDs of ``rows`` are read and
    hashed, and probed with each earlier release's, once for this and for a gate that checks
    ``rows`` (its links and its dates check make the same probes): the release derives the
    candidate's dates, then gates it, inside one (0.1-0.2 s of a 450k quarter, issue 43).
    """
    mine = read_case_ids(rows)
    # the texts derive_dates reads (its _texts of the cells): the same objects when plain
    cases = mine.texts if mine.plain else _texts(rows["case_id"].to_numpy())
    return _derived(cases, dates, label, earlier, lifespan, _linked_positions(mine))


def _linked_positions(mine: CaseIds) -> Callable[[pd.DataFrame], np.ndarray | None]:
    """``positions`` (:func:`_first_release_years`) of the CaseIDs ``mine``: the probe the
    gate's links make, when both releases read the ids as ``astype(str)`` does (None:
    :func:`_first_release_years` probes itself)."""
    def positions(theirs: pd.DataFrame) -> np.ndarray | None:
        if not (mine.plain and mine.index.is_unique):
            return None
        other = read_case_ids(theirs)
        return case_positions(mine.index, other.index) if other.plain else None

    return positions


def _derived(cases: np.ndarray, dates: Iterable[str], label: str,
             earlier: Mapping[str, pd.DataFrame], lifespan: int | None,
             positions: Callable[[pd.DataFrame], np.ndarray | None] | None = None,
             ) -> dict[str, np.ndarray]:
    """:func:`derive_dates` of the CaseIDs ``cases`` (str), ``positions`` as in
    :func:`_first_release_years`."""
    here = parse_period(label)
    out: dict[str, np.ndarray] = {}
    first_year = None
    for name in dates:
        if name in FIRST_RECEIPT_DATES:
            if first_year is None:
                first_year = _first_release_years(cases, here, earlier, lifespan, positions)
            out[name] = first_year
        else:
            # one str object in every row (np.full would convert the text to a str per row:
            # 450k copies of one year, which the gate then read one by one; issue 43)
            out[name] = np.empty(len(cases), dtype=object)
            out[name].fill(str(here.year))
    return out


def _first_release_years(cases: np.ndarray, here: Period, earlier: Mapping[str, pd.DataFrame],
                         lifespan: int | None,
                         positions: Callable[[pd.DataFrame], np.ndarray | None] | None = None,
                         ) -> np.ndarray:
    """The year of each case's first release (``cases`` distinct or not).

    ``positions(rows)``, when given and not None, is where each CaseID of ``rows`` is in
    ``cases`` (-1: none), as a probe of their Index gives it: a caller that has probed so
    already (the gate links the candidate to the same releases) saves the probe.
    """
    year = np.full(len(cases), here.year, dtype=np.int64)
    # a release's case ids are distinct: then they are hashed once (the Index keeps its table)
    # and each earlier release's probe them; an isin per earlier release probed every one of
    # them again, a cost that grew with the releases a quarter links to (issue 43)
    index: pd.Index | None = None
    for p, rows in earlier.items():
        period = parse_period(p)
        gap = here.ordinal - period.ordinal
        if gap <= 0 or (lifespan is not None and gap > lifespan) or not len(rows):
            continue
        at = positions(rows) if positions is not None else None
        if at is not None:
            hit = np.zeros(len(cases), dtype=bool)
            hit[at[at >= 0]] = True
            year[hit] = np.minimum(year[hit], period.year)
            continue
        if index is None:
            index = pd.Index(cases)
        unique = index.is_unique
        theirs = rows["case_id"].astype(str).to_numpy(dtype=object)
        if unique:
            hit = np.zeros(len(cases), dtype=bool)
            at = index.get_indexer(pd.Index(theirs))
            hit[at[at >= 0]] = True
        else:
            hit = index.isin(theirs)
        year[hit] = np.minimum(year[hit], period.year)
    # each distinct year formatted once (a str per row cost a fifth of a second per 450k),
    # the few years hashed rather than sorted (np.unique's sort of 450k years, issue 43)
    inverse, distinct = pd.factorize(year)
    return np.array([str(y) for y in distinct.tolist()] or [""], dtype=object)[inverse]


def _texts(values: Sequence[str] | np.ndarray) -> np.ndarray:
    """``[str(v) for v in values]`` as an object array, without the per-row step when every
    value is a str already (a release's case ids)."""
    out = np.asarray(values, dtype=object)
    if out.ndim == 1 and set(map(type, out.tolist())) <= {str}:
        return out
    return np.asarray([str(c) for c in values], dtype=object)


def _stripped(column: pd.Series) -> np.ndarray:
    """``column.fillna("").astype(str).str.strip()`` as an object array, each distinct cell
    stripped once (a date column holds a few distinct cells, often one str object each:
    :func:`~medanon.published.cells.distinct_cells`)."""
    codes, distinct = distinct_cells(column)
    if not len(codes):
        return np.asarray(column.fillna("").astype(str).to_numpy(dtype=object), dtype=object)
    return np.asarray([c.strip() for c in distinct.tolist()], dtype=object)[codes]


def date_mismatches(rows: pd.DataFrame, dates: Iterable[str], label: str,
                    earlier: Mapping[str, pd.DataFrame], lifespan: int | None) -> tuple[str, ...]:
    """Violations where a protected release's date cells are not the derived ones.

    A date the series does not derive is a function of the private record, read by the
    adversary (an ``init_fda_dt`` before the period excludes the case under the L-attack).
    """
    dates = [d for d in dates if d in rows.columns]
    if not dates:
        return ()
    # the gate asks twice of an earlier release (with the candidate and without): once
    # inside reading_once (published.cells)
    return read_once(("date_mismatches", label, tuple(dates), lifespan, tuple(earlier)),
                     (rows, *earlier.values()),
                     lambda: _date_mismatches(rows, dates, label, earlier, lifespan))


def _date_mismatches(rows: pd.DataFrame, dates: list[str], label: str,
                     earlier: Mapping[str, pd.DataFrame], lifespan: int | None,
                     ) -> tuple[str, ...]:
    mine = read_case_ids(rows)
    # plain texts are str already: what _texts would return (its scan of 450k cells' types
    # was a third of this check, issue 43)
    cases = mine.texts if mine.plain else _texts(rows["case_id"].astype(str).to_numpy())
    # (the probe the links made already)
    expected = _derived(cases, dates, label, earlier, lifespan, _linked_positions(mine))
    found = []
    for name in dates:
        cells = _stripped(rows[name])
        bad = np.flatnonzero(cells != expected[name])
        if bad.size:
            shown = ", ".join(f"case {cases[i]} has {cells[i]!r}, derived {expected[name][i]!r}"
                              for i in bad[:_SHOWN])
            more = f" (and {bad.size - _SHOWN} more)" if bad.size > _SHOWN else ""
            found.append(f"{label} column {name!r}: {bad.size} date(s) are not derived from the "
                         f"series ({shown}{more}); a reported date lets the L-attack exclude a "
                         f"case first reported earlier")
    return tuple(found)


def refuse_unknown_role(roles: object, where: str) -> dict:
    """The manifest's ``columns.roles``, checked to give each column a known role.

    Raises:
        InputFormatError: not a mapping, or a column whose role is not one of :data:`ROLES`.
    """
    if not isinstance(roles, Mapping):
        raise InputFormatError(f"{where}: 'columns.roles' must map each column to its role.")
    for name, entry in roles.items():
        role = entry.get("role") if isinstance(entry, Mapping) else None
        if role not in ROLES:
            raise InputFormatError(f"{where}: column {name!r} has role {role!r}; roles are "
                                   f"{', '.join(ROLES)}.")
    return dict(roles)
