"""What an adversary learns by linking CaseIDs across the releases of a series.

This module reads published releases (strings, :mod:`medanon.published.cells`) and, for every
record of one release, collects what the other releases say about the same case:

* **earlier**: the case appears in an earlier release (an *old* CaseID, 001's B- and L-attacks);
  ``earlier_region`` is the intersection of the regions it was published with there, so a
  target lying outside it is not that case (B-attack);
* **later**: the case appears in a later release; ``later_region`` is the intersection of its
  later regions (F-attack);
* **in_next**: the case appears in the release of the next period (002's MD-attack);
  ``next_known`` says whether the series holds that release at all.

A *region* is what a published QID value allows: a node of the attribute's hierarchy for a
categorical QID (code -1 when two releases contradict each other, i.e. the empty region) and an
inclusive interval for a numeric one (empty when lo > hi).

The adversary links every release of the series unless a life span is given (001's CaseID
life span x: releases more than x periods apart are not linked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np
import pandas as pd

from ..periods import parse_period
from ..errors import InputFormatError, SchemaError, ValidationError
from ..hierarchies import Taxonomy
from .case_ids import case_id_mode, order_excluded
from .cells import (QidInfo, blank_distinct, case_ids, case_positions,
                    categorical_codes_of_distinct, cell_strings, release_term_pairs,
                    distinct_cells, memo_scope, memoized, numeric_bounds_of_distinct,
                    read_once)
from .series import PublishedSeries

__all__ = ["Region", "ReleaseView", "Links", "group_conflicts", "read_view", "link", "lca_depth",
           "longest_case_span", "sharing_links"]

EMPTY = -1


@dataclass
class Region:
    """Per-record regions: categorical node codes (-1 = empty) and numeric [lo, hi] bounds."""

    cat: dict[str, np.ndarray]
    lo: dict[str, np.ndarray]
    hi: dict[str, np.ndarray]

    def take(self, index: np.ndarray) -> "Region":
        return Region({k: v[index] for k, v in self.cat.items()},
                      {k: v[index] for k, v in self.lo.items()},
                      {k: v[index] for k, v in self.hi.items()})

    def copy(self) -> "Region":
        return Region({k: v.copy() for k, v in self.cat.items()},
                      {k: v.copy() for k, v in self.lo.items()},
                      {k: v.copy() for k, v in self.hi.items()})


def covers(region: Region, target: Region, qids: tuple[QidInfo, ...],
           attributes: frozenset[str] | None = None) -> np.ndarray:
    """Whether each region contains the target (broadcasting region rows against target rows).

    ``target`` arrays may have shape (t, 1) against regions of shape (m,) to give a (t, m) table.
    Attributes outside ``attributes`` (unknown to the adversary) are not tested.
    """
    out = None
    for q in qids:
        if attributes is not None and q.name not in attributes:
            continue
        if q.kind == "categorical":
            g, s = region.cat[q.name], target.cat[q.name]
            ok = (g >= 0) & (s >= 0) & q.hierarchy.covers_codes(np.maximum(g, 0), np.maximum(s, 0))
        else:
            ok = (region.lo[q.name] <= target.lo[q.name]) & (target.hi[q.name] <= region.hi[q.name])
        out = ok if out is None else out & ok
    return np.asarray(True) if out is None else out


def intersect(a: Region, b: Region, qids: tuple[QidInfo, ...]) -> Region:
    """Row-wise intersection of two regions (categorical: the deeper node, or empty)."""
    cat: dict[str, np.ndarray] = {}
    lo: dict[str, np.ndarray] = {}
    hi: dict[str, np.ndarray] = {}
    for q in qids:
        if q.kind == "categorical":
            x, y = a.cat[q.name], b.cat[q.name]
            tax = q.hierarchy
            xs, ys = np.maximum(x, 0), np.maximum(y, 0)
            out = np.where(tax.covers_codes(xs, ys), y, np.where(tax.covers_codes(ys, xs), x, EMPTY))
            cat[q.name] = np.where((x < 0) | (y < 0), EMPTY, out)
        else:
            lo[q.name] = np.maximum(a.lo[q.name], b.lo[q.name])
            hi[q.name] = np.minimum(a.hi[q.name], b.hi[q.name])
    return Region(cat, lo, hi)


def whole_domain(n: int, qids: tuple[QidInfo, ...]) -> Region:
    """``n`` regions that allow everything."""
    return Region({q.name: np.full(n, q.hierarchy.code_of[q.hierarchy.root], dtype=np.int64)
                   for q in qids if q.kind == "categorical"},
                  {q.name: np.full(n, -np.inf) for q in qids if q.kind == "numeric"},
                  {q.name: np.full(n, np.inf) for q in qids if q.kind == "numeric"})


def lca_depth(tax: Taxonomy, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Depth of the lowest common ancestor of node codes ``a`` and ``b`` (element-wise)."""
    parent = tax.parent_array
    depth = tax.depth_array
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    a, b = a.copy(), b.copy()
    for _ in range(int(depth.max(initial=0)) + 1):
        differ = a != b
        if not differ.any():
            break
        deeper_a = differ & (depth[a] >= depth[b])
        deeper_b = differ & (depth[b] > depth[a])
        a[deeper_a] = parent[a[deeper_a]]
        b[deeper_b] = parent[b[deeper_b]]
    return depth[a]


@dataclass
class ReleaseView:
    """One published release, parsed.

    Attributes:
        label: Period label.
        ordinal: Period ordinal (consecutive periods differ by 1).
        case: CaseID of each row (str).
        group: Group code of each row; ``group_labels[code]`` is the published identifier.
        region: The published QID regions.
        term_row, term_code, term_names: distinct (row, sensitive term) pairs (parsed when
            first read: a release read only to link its cases to another's never reads them).
        terms_by_column: per multi-valued column, the number of distinct terms of each row.
        blank: per QID, whether each row's cell is empty (*missing* in the release format;
            its region is still the whole domain, as for ``*``, but a reader that knows the
            cell was blank knows the value is missing, see :class:`Links`).
    """

    label: str
    ordinal: int
    rows: pd.DataFrame
    case: np.ndarray
    group: np.ndarray
    group_labels: np.ndarray
    region: Region
    #: the (term_row, term_code, term_names) of the rows, read once when first asked for
    terms: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]] = field(repr=False)
    index: pd.Index = field(repr=False)
    blank: dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    @cached_property
    def _term_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.terms()

    @property
    def term_row(self) -> np.ndarray:
        return self._term_pairs[0]

    @property
    def term_code(self) -> np.ndarray:
        return self._term_pairs[1]

    @property
    def term_names(self) -> np.ndarray:
        return self._term_pairs[2]

    @property
    def n(self) -> int:
        return len(self.case)

    def term_sets(self) -> list[frozenset[str]]:
        """The sensitive terms of each row."""
        sets: list[set[str]] = [set() for _ in range(self.n)]
        for r, c in zip(self.term_row.tolist(), self.term_code.tolist(), strict=True):
            sets[r].add(str(self.term_names[c]))
        return [frozenset(s) for s in sets]


def row_periods(rows: pd.DataFrame, where: str) -> set[str]:
    """The period labels the ``period`` column of a release holds.

    Raises:
        InputFormatError: a row has no period, or one that does not parse.
    """
    # one factorize: the distinct cells tell both whether one is blank and which periods
    _, distinct = distinct_cells(rows["period"])
    if blank_distinct(distinct).any():
        raise InputFormatError(f"{where} has rows without a period.")
    try:
        return {parse_period(c).label for c in distinct.tolist()}
    except ValidationError as exc:
        raise InputFormatError(f"{where}: {exc}") from None


def read_view(series: PublishedSeries, label: str) -> ReleaseView:
    """Parse the release of ``label`` (the one reader of published rows: models, attacks, metrics).

    Inside :func:`~medanon.published.cells.reading_once`, the same rows read with the same
    QIDs and sensitive columns are parsed once (the gate reads each release it links to with
    the candidate and without it).

    Raises:
        SchemaError: a required column is missing.
        InputFormatError: a row has no period or another period than ``label``, a row has no
            case_id, a case_id is on several rows, or a cell does not parse (the message names
            the release and column).
        HierarchyError: a categorical cell is not a node of its hierarchy.
    """
    rows = series.releases[label]
    return read_once(("view", label), (rows, series.qids, series.sensitive),
                     lambda: _read_view(series, label))


def _read_view(series: PublishedSeries, label: str) -> ReleaseView:
    rows = series.releases[label]
    where = f"Release {label}"
    if not isinstance(rows, pd.DataFrame):
        raise ValidationError(f"{where} must be a pandas DataFrame; got {type(rows).__name__}.")
    needed = ("period", "case_id", "group", *(q.name for q in series.qids), *series.sensitive)
    # (the sensitive columns are asked for when the terms are read, :func:`_release_terms`)
    _require_columns(rows, where, needed[:len(needed) - len(series.sensitive)], needed)
    found = row_periods(rows, where)
    if found - {label}:
        raise InputFormatError(f"{where} holds rows of period(s) {', '.join(sorted(found))}, "
                               f"not {label}.")
    cases = case_ids(rows)
    case = cases.texts
    blank = blank_distinct(case)
    if blank.any():
        raise InputFormatError(f"{where} has {int(blank.sum())} row(s) without a case_id.")
    # the ids' hash table, built here to tell whether they are distinct, is the one the links
    # probe (the Index keeps it; a factorize for this check was another hash pass: issue 43)
    if not cases.index.is_unique:
        case_code, _ = pd.factorize(case)
        dup = np.bincount(case_code)[case_code] > 1
        ids = sorted(set(case[dup]))
        shown = ", ".join(repr(c) for c in ids[:5])
        raise InputFormatError(f"{where} holds {len(ids)} case_id(s) on several rows ({shown}); "
                               f"a release has one row per case.")
    gcode, glabels = distinct_cells(rows["group"])
    cat: dict[str, np.ndarray] = {}
    lo: dict[str, np.ndarray] = {}
    hi: dict[str, np.ndarray] = {}
    qid_blank: dict[str, np.ndarray] = {}
    for q in series.qids:
        # each column factorized once: its distinct cells give the blanks and the regions
        codes, distinct = distinct_cells(rows[q.name])
        qid_blank[q.name] = (blank_distinct(distinct)[codes] if len(codes)
                             else np.zeros(0, dtype=bool))
        if q.kind == "categorical":
            cat[q.name] = categorical_codes_of_distinct(
                distinct, q.hierarchy, where=f"{where}, column {q.name!r}")[codes]
        else:
            bounds = numeric_bounds_of_distinct(distinct, where=f"{where}, column {q.name!r}")
            lo[q.name], hi[q.name] = bounds[0][codes], bounds[1][codes]
    # the terms are parsed when first read (columns_term_pairs refuses no cell): verify's
    # check of a release links the other releases' rows it reads and never reads their
    # terms, which were half of its parse (issue 43)
    return ReleaseView(label, parse_period(label).ordinal, rows, case, gcode, glabels,
                       Region(cat, lo, hi),
                       partial(_release_terms, rows, tuple(series.sensitive), where, needed),
                       cases.index, qid_blank)


def _require_columns(rows: pd.DataFrame, where: str, columns: Sequence[str],
                     needed: Sequence[str]) -> None:
    """Refuse rows that lack one of ``columns``, naming every column a release ``needed``.

    Raises:
        SchemaError: a column is missing.
    """
    missing = [c for c in columns if c not in rows.columns]
    if missing:
        raise SchemaError(f"{where} lacks column(s) {', '.join(map(repr, missing))}; a release "
                          f"needs {', '.join(map(repr, needed))}.")


def _release_terms(rows: pd.DataFrame, sensitive: tuple[str, ...], where: str,
                   needed: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The view's (row, term) pairs (:func:`~medanon.published.cells.release_term_pairs`),
    refusing rows that lack a sensitive column when the terms are first read. A release read
    only to be linked to (its CaseIDs, groups and regions) never reads its terms, so a reader
    may leave its sensitive columns out: ``evaluate`` fetches them for the release it
    measures alone (each cell a str DuckDB makes: 24 x 20k, a third of a second; issue 43).

    Raises:
        SchemaError: a sensitive column is missing.
    """
    _require_columns(rows, where, sensitive, needed)
    return release_term_pairs(rows, sensitive)


def group_conflicts(view: ReleaseView, names: Sequence[str]) -> list[tuple[str, str, list[str]]]:
    """Groups whose rows publish different values of a QID in ``names``.

    In a generalized release every record of a group carries the group's generalized QID values
    (that is what makes the group an equivalence class); a group that does not is malformed
    (hand-edited or tampered), and no model check of it would mean anything.

    Returns:
        ``(group label, QID name, distinct published values)`` per conflicting group and QID,
        in order of group then QID.
    """
    out = []
    # each row against its group's first row: a group holds two distinct values exactly when
    # some row differs from its first (a drop_duplicates of group and value hashed every row)
    first = _first_rows(view.group, len(view.group_labels))[view.group]
    for name in names:
        if name in view.region.cat:
            keys = [view.region.cat[name]]
        else:
            keys = [view.region.lo[name], view.region.hi[name]]
        if name in view.blank:  # an empty cell (missing) and "*" share a region, not a meaning
            keys.append(view.blank[name])
        differs = np.zeros(view.n, dtype=bool)
        for key in keys:
            other = key[first]
            same = key == other
            if key.dtype.kind == "f":  # NaN equals NaN, as drop_duplicates reads it
                same |= np.isnan(key) & np.isnan(other)
            differs |= ~same
        for g in np.unique(view.group[differs]).tolist():
            values = sorted(set(cell_strings(view.rows[name])[view.group == g]))
            out.append((str(view.group_labels[g]), name, values))
    return sorted(out, key=lambda t: (t[0], t[1]))


def _first_rows(group: np.ndarray, n_groups: int) -> np.ndarray:
    """The first row of each group code (codes 0..n_groups-1, each on some row)."""
    first = np.full(n_groups, len(group), dtype=np.int64)
    np.minimum.at(first, group, np.arange(len(group), dtype=np.int64))
    return first


@dataclass
class Links:
    """What the other releases of the series reveal about each record of one release."""

    view: ReleaseView
    old: np.ndarray
    earlier_region: Region
    later: np.ndarray
    later_region: Region
    in_next: np.ndarray
    next_known: bool
    #: per QID, whether a later linked release published the case's cell empty (missing)
    later_blank: dict[str, np.ndarray] = field(default_factory=dict)
    #: per QID, whether an earlier linked release published the case's cell empty (missing)
    earlier_blank: dict[str, np.ndarray] = field(default_factory=dict)
    #: records that are in no earlier release but whose real CaseID sorts below one published
    #: before (``case_ids.mode`` real, :func:`~medanon.published.case_ids.order_excluded`):
    #: received before the period, so not new; they are also in ``old``
    order_old: np.ndarray | None = None

    def missing_elsewhere(self, later: bool, present: Mapping[str, np.ndarray | bool]) -> np.ndarray:
        """Records another release shows *missing* on a QID where the target has a value.

        An empty cell means missing (the release format), so a later (``later``) or earlier
        release that publishes a case's QID empty excludes the case for a target with a value.

        Args:
            later: Read the later releases (F-attack) or the earlier ones (B-attack).
            present: Per QID, whether the target has a value there (an array per record for
                the worst case over each record's own region, or one flag for one target);
                QIDs absent from it are unknown to the adversary.
        """
        blank = self.later_blank if later else self.earlier_blank
        out = np.zeros(self.view.n, dtype=bool)
        for name, flags in blank.items():
            if name in present:
                out |= flags & present[name]
        return out

    def forward_excludable(self, qids: tuple[QidInfo, ...]) -> np.ndarray:
        """Records the F-attack excludes for some target of their own published region (the
        worst case the checker and the worst-case attack both take): a later value that does
        not contain the whole region (the intersection of the later regions contains it exactly
        when each later region does), or a later empty cell (missing) where the record's own
        cell is not empty."""
        own = self.view
        inside = np.broadcast_to(covers(self.later_region, own.region, qids), (own.n,))
        present = {name: ~flags for name, flags in own.blank.items()}
        return self.later & (~inside | self.missing_elsewhere(True, present))


def link(series: PublishedSeries, label: str, *, lifespan: int | None = None,
         views: dict[str, ReleaseView] | None = None) -> Links:
    """Link the records of release ``label`` to every other release of the series.

    Args:
        series: The published series.
        label: The release to attack (a period label of the series).
        lifespan: Link only releases at most this many periods apart (None: all).
        views: A cache of parsed releases by label, shared between calls on the same series:
            missing ones are parsed here and added to it.

    Inside :func:`sharing_links`, the links of the same release of the same rows (a series
    of frames held in memory) are made once: ``evaluate`` links each release for verify's
    check, for the attacks and for the linkage risk (issue 43). The :class:`Links` returned
    are then shared: their readers do not change them.
    """
    if not isinstance(series.releases, dict):
        # (rows read on demand are new frames at each read: nothing to tell apart by identity)
        return _link(series, label, lifespan, views)
    objects = (*series.releases.values(), series.qids, series.sensitive,
               series.manifests.get(label))
    return memoized(_SHARED_LINKS, (label, lifespan, tuple(series.releases)), objects,
                    lambda: _link(series, label, lifespan, views))


#: the links :func:`link` made inside :func:`sharing_links` (None outside it)
_SHARED_LINKS: ContextVar[dict | None] = ContextVar("medanon_shared_links", default=None)


@contextmanager
def sharing_links() -> Iterator[None]:
    """Inside it, :func:`link` of the same release of the same rows is made once, and held to
    the end: for a reader that measures one release several ways (``evaluate``: verify's
    check, the attacks, the linkage risk; issue 43). Not for the gate, which links releases
    of 450k rows and would hold their links through its peak. Nested, it is the outer one."""
    with memo_scope(_SHARED_LINKS):
        yield


def _link(series: PublishedSeries, label: str, lifespan: int | None,
          views: dict[str, ReleaseView] | None) -> Links:
    """:func:`link`, made."""
    views = views if views is not None else {}

    def view(p: str) -> ReleaseView:
        if p not in views:
            views[p] = read_view(series, p)
        return views[p]

    own = view(label)
    n, qids = own.n, series.qids
    old = np.zeros(n, dtype=bool)
    later = np.zeros(n, dtype=bool)
    in_next = np.zeros(n, dtype=bool)
    earlier_region = whole_domain(n, qids)
    later_region = whole_domain(n, qids)
    later_blank = {q.name: np.zeros(n, dtype=bool) for q in qids}
    earlier_blank = {q.name: np.zeros(n, dtype=bool) for q in qids}
    next_known = False
    for p in series.periods:
        other = view(p)
        gap = other.ordinal - own.ordinal
        if gap == 0 or (lifespan is not None and abs(gap) > lifespan):
            continue
        if gap == 1:
            next_known = True
        # where each of own's cases is in the other release: own's (distinct, read_view
        # refuses repeats) are hashed once (the Index keeps its table) and the other's
        # probe them; probing the other's with all of own's, per release, grew with the
        # releases a quarter links to (2.8 s at the eighth 450k quarter, issue 43)
        found = case_positions(own.index, other.index)
        pos = np.full(n, -1, dtype=np.intp)
        pos[found[found >= 0]] = np.flatnonzero(found >= 0)
        hit = pos >= 0
        if not hit.any():
            continue
        rows = np.flatnonzero(hit)
        theirs = other.region.take(pos[hit])
        target = earlier_region if gap < 0 else later_region
        merged = intersect(target.take(rows), theirs, qids)
        for k in merged.cat:
            target.cat[k][rows] = merged.cat[k]
        for k in merged.lo:
            target.lo[k][rows] = merged.lo[k]
            target.hi[k][rows] = merged.hi[k]
        (old if gap < 0 else later)[rows] = True
        for name, flags in (later_blank if gap > 0 else earlier_blank).items():
            if name in other.blank:
                flags[rows] |= other.blank[name][pos[hit]]
        if gap == 1:
            in_next[rows] = True
    order_old = _order_old(series, own, old)
    return Links(own, old | order_old, earlier_region, later, later_region, in_next, next_known,
                 later_blank, earlier_blank, order_old)


def _order_old(series: PublishedSeries, own: ReleaseView, old: np.ndarray) -> np.ndarray:
    """The CaseID-order rule of a release that publishes real CaseIDs (issue 41): a case new
    to the series whose CaseID is below one published before it was received before the period.

    Every earlier release of the series counts, whatever the life span (the CaseIDs are public
    and the rule needs no linkage), and so does the manifest's ``case_ids.highest_earlier``,
    the highest CaseID published before (a series read in part, as the gate reads what a
    release links to, may lack the release that held it).
    """
    manifest = series.manifests.get(own.label) or {}
    if case_id_mode(manifest) != "real":
        return np.zeros(own.n, dtype=bool)
    earlier: list[str] = []
    declared = (manifest.get("case_ids") or {}).get("highest_earlier")
    if declared is not None:
        earlier.append(str(declared))
    for p in series.periods:
        if parse_period(p).ordinal < own.ordinal:
            rows = series.releases[p]
            if len(rows):
                earlier.extend(cell_strings(rows["case_id"]).tolist())
    return order_excluded(own.case, ~old, earlier)


def longest_case_span(case_ids: Mapping[str, Iterable]) -> int:
    """The most periods between a CaseID's first and last appearance, given the case ids of
    each period (0 when no case reappears). The verifier reads it off published releases; the
    publisher's safety check off the private records (:mod:`medanon.pipeline.checks`)."""
    cases, ordinals = [], []
    for label, ids in case_ids.items():
        # a column or array as an object array of its elements, which is what list() gives,
        # without a Python step per element (iterating a string column: issue 43)
        items = (np.asarray(ids, dtype=object) if isinstance(ids, (pd.Series, pd.Index, np.ndarray))
                 else list(ids))
        texts = pd.Series(items, dtype=object).astype(str).to_numpy()
        cases.append(texts)
        ordinals.append(np.full(len(texts), parse_period(label).ordinal, dtype=np.int64))
    if not cases or not sum(map(len, cases)):
        return 0
    # one factorize of every id, then each case's first and last ordinal by a sort (a group-by
    # over text keys cost the gate a tenth of a second per 100k rows, twice: issue 43)
    codes, _ = pd.factorize(np.concatenate(cases))
    ordinal = np.concatenate(ordinals)
    order = np.lexsort((ordinal, codes))
    codes, ordinal = codes[order], ordinal[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], len(codes)] - 1
    return int((ordinal[ends] - ordinal[starts]).max())
