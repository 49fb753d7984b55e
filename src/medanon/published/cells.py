"""Reading the cells of published releases (``design.md``, "Published release format").

Every reader of published rows (the independent checker in :mod:`medanon.models.ppms`, the
attacks, the metrics) parses cells the same way, so the rules live here once:

* a categorical QID cell is a node label of the attribute's hierarchy; an empty cell (missing)
  and the suppression mark ``*`` (the root) both get the whole domain as their region;
* a numeric QID cell is a number (``58.05``) or an inclusive interval (``[45-60]``); an empty
  cell and ``*`` get (-inf, inf);
* the two are not the same statement, though: ``*`` allows any value, missing included, while
  an empty cell says the value is *missing*. The one reader (``links.read_view``) keeps which
  cells were empty (``ReleaseView.blank``), and verify and the attacks exclude on it (a group
  mixing an empty cell with another value is malformed; a case published missing elsewhere is
  no candidate for a target that has the value; issue 29);
* a multi-valued cell holds terms joined with ``|``; spaces around a term are ignored and an
  empty cell has no term; nor has ``*``, a suppressed cell (medanon marks suppressed terms for a
  release as a whole, never in a cell: ``published/faers_layout.py``), so a release from another
  tool that writes ``*`` in such a cell is counted as publishing no term there.

These functions read strings only. They never look at how an algorithm built the release.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd

from ..data.records import distinct_objects, first_appearances
from ..data.terms import TermCodes, key_type
from ..errors import HierarchyError, InputFormatError, ValidationError
from ..hierarchies import Taxonomy, interval_bounds_of

__all__ = ["QidInfo", "SUPPRESSED", "CaseIds", "case_ids", "case_positions", "categorical_codes",
           "candidate_term_pairs", "cell_strings", "coded_term_pairs", "columns_term_pairs",
           "distinct_cells", "release_term_pairs", "interval_bounds", "joined_terms",
           "numeric_bounds", "read_once", "reading_once", "term_pairs"]

SUPPRESSED = "*"
_SEP = "|"
_SHOWN = 5


@dataclass(frozen=True)
class QidInfo:
    """How to read one published quasi-identifier column.

    Args:
        name: Column name.
        kind: ``"categorical"`` (node labels of ``taxonomy``) or ``"numeric"`` (numbers and
            ``[lo-hi]`` intervals).
        taxonomy: The hierarchy of a categorical QID; None for a numeric one.

    Raises:
        ValidationError: empty name, unknown kind, a categorical QID without a taxonomy or a
            numeric one with a taxonomy.
    """

    name: str
    kind: str
    taxonomy: Taxonomy | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValidationError(f"The 'name' parameter of QidInfo must be a non-empty string; "
                                  f"got {self.name!r}.")
        if self.kind not in ("categorical", "numeric"):
            raise ValidationError(f"The 'kind' parameter of QidInfo must be one of 'categorical', "
                                  f"'numeric'; got {self.kind!r}.")
        if self.kind == "categorical" and not isinstance(self.taxonomy, Taxonomy):
            raise ValidationError(f"The 'taxonomy' parameter of QidInfo must be a Taxonomy for the "
                                  f"categorical QID {self.name!r}; got {self.taxonomy!r}.")
        if self.kind == "numeric" and self.taxonomy is not None:
            raise ValidationError(f"The 'taxonomy' parameter of QidInfo must be None for the "
                                  f"numeric QID {self.name!r} (intervals are read from the cells).")

    @property
    def hierarchy(self) -> Taxonomy:
        """The taxonomy of a categorical QID, typed as never None (for readers of categorical
        cells; a numeric QID has none)."""
        # __post_init__ refuses a categorical QID without a Taxonomy, and the dataclass is frozen.
        assert self.taxonomy is not None, f"QID {self.name!r} is numeric: it has no hierarchy"
        return self.taxonomy


def cell_strings(column: pd.Series | np.ndarray | list) -> np.ndarray:
    """Cells as an object array of str; missing values become ``""``."""
    if isinstance(column, pd.Series) and isinstance(column.dtype, pd.StringDtype):
        # a string column holds str or its missing value, so no scan of the cells' types
        # (release rows are string columns, read many times: issue 43)
        return np.array(column.to_numpy(dtype=object, na_value=""), dtype=object, copy=True)
    arr = np.asarray(column, dtype=object).copy()
    # release rows: every cell a str already, so none missing (one C pass; the scan for
    # missing values costs as much again, and release rows are read many times: issue 43)
    if set(map(type, arr.tolist())) <= {str}:
        return arr
    arr[pd.isna(arr)] = ""
    if set(map(type, arr.tolist())) <= {str}:  # no other type once the missing are ""
        return arr
    return np.array([x if type(x) is str else str(x) for x in arr], dtype=object)


_T = TypeVar("_T")
#: what readers computed of rows inside :func:`reading_once`: key -> (the objects, the value)
_MEMO: ContextVar[dict | None] = ContextVar("medanon_published_reading", default=None)


@contextmanager
def reading_once() -> Iterator[None]:
    """Inside it, what the readers of published rows compute from the same rows is computed
    once (:func:`read_once`): a parsed release, its CaseIDs' hash table, where one release's
    CaseIDs are in another's.

    For a caller that reads the same rows several times: the gate checks the candidate with the
    releases it links to, then those releases without it, and its checks link each release to
    the others and derive each one's dates (each a parse or a hash pass over 450k CaseIDs,
    issue 43). Rows are told apart by identity, so they must not change inside it (the gate's
    do not). Nested, it is the outer one.
    """
    with memo_scope(_MEMO):
        yield


def read_once(key: tuple, objects: tuple, compute: Callable[[], _T]) -> _T:
    """``compute()``, computed once for the same ``key`` and the same ``objects`` (by identity,
    held until the end) inside :func:`reading_once`; outside it, computed each time."""
    return memoized(_MEMO, key, objects, compute)


@contextmanager
def memo_scope(memo: ContextVar[dict | None]) -> Iterator[None]:
    """Inside it, ``memo`` holds what :func:`memoized` computes with it, dropped at its end
    (:func:`reading_once`, ``links.sharing_links``). Nested, it is the outer one."""
    if memo.get() is not None:
        yield
        return
    token = memo.set({})
    try:
        yield
    finally:
        memo.reset(token)


def memoized(memo: ContextVar[dict | None], key: tuple, objects: tuple,
             compute: Callable[[], _T]) -> _T:
    """``compute()``, computed once for the same ``key`` and the same ``objects`` (by identity,
    held with the value so that their ids stay theirs) inside :func:`memo_scope` of ``memo``;
    outside it, computed each time."""
    held = memo.get()
    if held is None:
        return compute()
    full = (*key, *map(id, objects))
    if full not in held:
        held[full] = (objects, compute())
    return held[full][1]


def _kept(key: tuple, objects: tuple):
    """What :func:`read_once` holds for ``key`` and ``objects`` (None: nothing)."""
    memo = _MEMO.get()
    found = None if memo is None else memo.get((*key, *map(id, objects)))
    return None if found is None else found[1]


@dataclass(frozen=True)
class CaseIds:
    """The ``case_id`` column of a release, read once (:func:`case_ids`).

    Attributes:
        texts: The cells as :func:`cell_strings` reads them.
        index: An Index of them: its hash table, built on first use, is kept with it.
        plain: Whether every cell is a str (none missing), so that ``astype(str)`` reads the
            same texts (the readers that read CaseIDs so may use this one).
    """

    texts: np.ndarray
    index: pd.Index
    plain: bool


def case_ids(rows: pd.DataFrame) -> CaseIds:
    """The CaseIDs of ``rows`` (a ``case_id`` column), once per rows inside :func:`reading_once`."""
    def read() -> CaseIds:
        column = rows["case_id"]
        if isinstance(column.dtype, pd.StringDtype) and not column.isna().any():
            # a string column holds a str or its missing value in each cell: none missing, all
            # are text, without a scan of 450k cells' types; and the column is a str Index as
            # it is, not checked again cell by cell (the candidate's CaseIDs, issue 43)
            return CaseIds(column.to_numpy(dtype=object).copy(), pd.Index(column), True)
        cells = column.to_numpy(dtype=object)  # (no copy of an object or str column)
        plain = set(map(type, cells.tolist())) <= {str}
        texts = cells.copy() if plain else cell_strings(column)
        return CaseIds(texts, pd.Index(texts), plain)

    return read_once(("case_ids",), (rows,), read)


def case_positions(within: pd.Index, of: pd.Index) -> np.ndarray:
    """``within.get_indexer(of)``: for each CaseID of ``of``, its position in ``within`` (-1:
    none), ``within``'s ids distinct.

    Inside :func:`reading_once`, computed once per pair of Index objects; and once the other
    way round (both distinct), it is read off that without a probe: the probe of 450k ids
    costs a quarter of a second (issue 43).
    """
    back = _kept(("case_positions",), (of, within))
    if back is not None and within.is_unique and of.is_unique:
        found = np.full(len(of), -1, dtype=np.intp)
        hit = back >= 0
        found[back[hit]] = np.flatnonzero(hit)
        return read_once(("case_positions",), (within, of), lambda: found)
    return read_once(("case_positions",), (within, of), lambda: within.get_indexer(of))


def blank_cells(values: np.ndarray) -> np.ndarray:
    """Which cells of an object array of str are empty once stripped, each distinct cell
    stripped once (a release repeats a group's value on every row)."""
    codes, distinct = pd.factorize(np.asarray(values, dtype=object))
    return blank_distinct(distinct)[codes] if len(codes) else np.zeros(0, dtype=bool)


def blank_distinct(distinct) -> np.ndarray:
    """Which of the str values ``distinct`` are empty once stripped (a C-level pass: a
    generator expression cost a tenth of a second per 450k distinct case ids, issue 43)."""
    texts = np.asarray(distinct, dtype=object).tolist()
    return np.fromiter(map(operator.not_, map(str.strip, texts)), dtype=bool, count=len(texts))


def categorical_codes(values: np.ndarray, taxonomy: Taxonomy, *, where: str) -> np.ndarray:
    """Node codes of categorical cells; empty cells map to the root.

    Raises:
        HierarchyError: a cell is not a node of ``taxonomy`` (``where`` names the column).
    """
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return categorical_codes_of_distinct(uniques, taxonomy, where=where)[codes]


def categorical_codes_of_distinct(uniques, taxonomy: Taxonomy, *, where: str) -> np.ndarray:
    """:func:`categorical_codes` of the distinct cells ``uniques`` (a caller that factorized
    the column already reads each distinct cell once).

    Raises:
        HierarchyError: a cell is not a node of ``taxonomy`` (``where`` names the column).
    """
    root = taxonomy.code_of[taxonomy.root]
    mapped = np.empty(len(uniques), dtype=np.int64)
    bad = []
    for i, v in enumerate(uniques):
        v = str(v)
        if v.strip() == "":
            mapped[i] = root
        elif v in taxonomy.code_of:
            mapped[i] = taxonomy.code_of[v]
        else:
            bad.append(v)
    if bad:
        shown = ", ".join(repr(b) for b in bad[:_SHOWN])
        more = f" (and {len(bad) - _SHOWN} more)" if len(bad) > _SHOWN else ""
        raise HierarchyError(f"{where}: {len(bad)} value(s) are not nodes of hierarchy "
                             f"{taxonomy.name!r}: {shown}{more}.")
    return mapped


def numeric_bounds(values: np.ndarray, *, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive lower and upper bounds of numeric cells (``-inf, inf`` for empty or ``*``).

    Raises:
        InputFormatError: a cell is neither a number nor an interval ``[lo-hi]``.
    """
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    lo, hi = numeric_bounds_of_distinct(uniques, where=where)
    return lo[codes], hi[codes]


def numeric_bounds_of_distinct(uniques, *, where: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numeric_bounds` of the distinct cells ``uniques``.

    Raises:
        InputFormatError: a cell is neither a number nor an interval ``[lo-hi]``.
    """
    lo = np.empty(len(uniques), dtype=np.float64)
    hi = np.empty(len(uniques), dtype=np.float64)
    for i, v in enumerate(uniques):
        v = str(v).strip()
        if v in ("", SUPPRESSED):
            lo[i], hi[i] = -np.inf, np.inf
            continue
        try:
            lo[i], hi[i] = interval_bounds(v)
        except ValidationError as exc:
            raise InputFormatError(f"{where}: {exc}") from None
    return lo, hi


@functools.lru_cache(maxsize=1 << 16)
def interval_bounds(text: str) -> tuple[float, float]:
    """:meth:`Interval.parse`'s bounds of a cell (stripped, neither empty nor ``*``), each
    text parsed once per process: the checks and attacks parse every release a series links
    to once per release they measure, the same few texts each time, and NIL and IL* parse the
    release measured again (``medanon.metrics.information_loss``, issue 43). A failed parse
    (it raises) is not kept."""
    return interval_bounds_of(text)


def term_pairs(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct published terms of each multi-valued cell (neither empty nor ``*``).

    Returns:
        ``(rows, codes, names)``: one entry per distinct (row, term) pair, the term as a code
        into ``names``.
    """
    texts = np.asarray(cells, dtype=object).tolist()
    # One join and one split of the whole column, the cuts between cells read from each cell's
    # separator count: a split per cell made a list per row (issue 30).
    lengths = np.fromiter(map(str.count, texts, itertools.repeat(_SEP)), dtype=np.int64,
                          count=len(texts)) + 1
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    flat = np.fromiter(_SEP.join(texts).split(_SEP) if texts else [], dtype=object,
                       count=int(lengths.sum()))
    raw_codes, raw_names = pd.factorize(flat)
    codes, names = pd.factorize(np.array([str(t).strip() for t in raw_names], dtype=object))
    codes = codes.astype(np.int64)[raw_codes]
    names = np.asarray(names, dtype=object)
    blank = (names == "") | (names == SUPPRESSED)  # an empty cell, "a||b", or a suppressed cell
    if blank.any():
        keep = ~blank[codes]
        rows, codes = rows[keep], codes[keep]
    width = max(len(names), 1)
    # distinct (row, term) pairs, sorted: a sort and a neighbour test, which is what
    # np.unique returns, at a fraction of its cost on large int arrays (numpy 2's hash path)
    key = np.sort(rows * width + codes)
    if len(key):
        key = key[np.r_[True, key[1:] != key[:-1]]]
    return key // width, key % width, names


def distinct_cells(column: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(cell_strings(column))``: the number of each cell's text among the
    distinct texts (in order of first appearance, int64) and those texts, each distinct cell
    object read once (:func:`_cell_objects`)."""
    which, first, texts, by_text = _cell_objects(column, first=False)
    if not len(which) or by_text:
        return which, texts
    code, distinct = pd.factorize(texts)
    return code.astype(np.int64)[which], np.asarray(distinct, dtype=object)


#: cells sampled to tell whether a column shares its objects (:func:`_shares_objects`): a
#: fourth of what :func:`~medanon.data.records.factorize_cells` samples, as evaluate's checks
#: sample some 1,800 columns (a thousand cells' ids cost them a tenth of a second, issue 43)
_SAMPLE = 256


def _cell_objects(column: pd.Series | np.ndarray, *, first: bool = True,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The distinct objects of a column's cells: each cell's object number (in order of first
    appearance, int64), each object's first row, each object's text as :func:`cell_strings`
    reads it, and whether those texts are distinct (the cells were numbered by text).

    A release repeats a group's cell on each of its ≥k rows, and the rows a store or a method
    hands over hold one str object for equal cells: objects are told apart by identity (an
    integer hash per cell, :func:`~medanon.data.records.distinct_objects`) and only the
    distinct ones are read as text (issue 43). Two objects may hold the same text: a reader
    that needs distinct texts factorizes these (:func:`distinct_cells`).

    Rows read with a str object per cell (the linked rows ``evaluate`` and ``verify`` read
    from a store: one object per cell even for the period) gain nothing from the numbering
    of objects, which then cost as much as the factorize of the texts that follows it (a
    third of verify's parse of 24 linked releases, issue 43): their cells are numbered by
    text at once (:func:`_shares_objects` tells the two apart). The numbers are the same
    either way when objects and texts correspond one to one, and every caller reads them only
    as "cells that read alike". Without ``first``, the first rows of cells numbered by text
    are not looked for (an empty array stands for them).
    """
    values = (column.to_numpy(dtype=object) if isinstance(column, pd.Series)
              else np.asarray(column, dtype=object))  # (no copy of an object or str column)
    if not len(values):
        return (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                np.empty(0, dtype=object), True)
    if not _shares_objects(values):
        codes, distinct = pd.factorize(cell_strings(values))
        codes = codes.astype(np.int64)
        rows = first_appearances(codes) if first else np.zeros(0, dtype=np.int64)
        return codes, rows, np.asarray(distinct, dtype=object), True
    which, first_rows = distinct_objects(values)
    return which.astype(np.int64), first_rows.astype(np.int64), cell_strings(values[first_rows]), False


def _shares_objects(values: np.ndarray) -> bool:
    """Whether the cells of a large column are mostly repeats of the same objects: at most
    nine tenths of a sample of :data:`_SAMPLE` cells are distinct objects (the rule of
    :func:`~medanon.data.records.factorize_cells`). A small column is read by text."""
    if len(values) <= _SAMPLE:
        return False
    sample = values[::max(1, len(values) // _SAMPLE)].tolist()
    # ids are those of the objects ``values`` holds, alive while it is
    return 10 * len(set(map(id, sample))) <= 9 * len(sample)


def columns_term_pairs(frame: pd.DataFrame, columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``term_pairs(joined_terms(frame, columns))``, the same arrays, without joining the
    columns row by row (a string built per row before the split: issue 43).

    The terms are numbered as :func:`term_pairs` numbers the joined cells: in order of first
    appearance reading row by row, each row's columns in order, and ``""`` first when there are
    rows (the joined cells start with the separator).

    Each distinct cell object of a column is split once (:func:`_cell_objects`: a release
    repeats a group's cells) and its distinct terms are expanded, as integer codes, to the rows
    that hold it.
    """
    n = len(frame)
    columns = list(columns)
    if n == 0:
        return term_pairs(np.empty(0, dtype=object))
    parts = []
    for col in columns:
        # each distinct cell object split once (two objects of one text split alike; the
        # release path's rows share one object per text, so no hash of the texts here)
        which, cell_row, cells, _ = _cell_objects(frame[col])
        texts = cells.tolist()
        lengths = np.fromiter(map(str.count, texts, itertools.repeat(_SEP)), dtype=np.int64,
                              count=len(texts)) + 1
        flat = np.fromiter(_SEP.join(texts).split(_SEP), dtype=object, count=int(lengths.sum()))
        raw_codes, raw_names = pd.factorize(flat)
        raw_codes = raw_codes.astype(np.int64)
        cell = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        # a raw term's first reading is in the first cell (so the first row) that holds it:
        # its first appearance in the distinct cells' order
        first = first_appearances(raw_codes)
        place = first - (np.cumsum(lengths) - lengths)[cell[first]]
        parts.append((which, len(texts), cell, raw_codes, np.asarray(raw_names, dtype=object),
                      cell_row[cell[first]], place))
    # one numbering of the stripped terms of every column, "" first
    stripped = [""]
    for part in parts:
        stripped.extend(map(str.strip, part[4].tolist()))
    term_of, distinct = pd.factorize(np.array(stripped, dtype=object))
    term_of = term_of.astype(np.int64)
    # each term's first reading position (row, column, place in the cell): its least over the
    # columns' first appearances of the raw texts that strip to it
    places = max(int(part[6].max(initial=0)) for part in parts) + 1 if parts else 1
    first_read = np.full(len(distinct), np.iinfo(np.int64).max, dtype=np.int64)
    first_read[0] = -1
    offset = 1
    for j, (_, _, _, _, raw_names, first_row, place) in enumerate(parts):
        key = (first_row * (len(columns) + 1) + j) * places + place
        np.minimum.at(first_read, term_of[offset:offset + len(raw_names)], key)
        offset += len(raw_names)
    order = np.argsort(first_read, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    names = np.asarray(distinct, dtype=object)[order]
    blank = (names == "") | (names == SUPPRESSED)  # an empty cell, "a||b", or a suppressed cell
    width = max(len(names), 1)
    keys = []
    offset = 1
    for which, n_cells, cell, raw_codes, raw_names, _, _ in parts:
        code = rank[term_of[offset:offset + len(raw_names)]][raw_codes]
        offset += len(raw_names)
        keep = ~blank[code]
        keys.append(_expand_cell_terms(which, n_cells, cell[keep], code[keep], width))
    if len(keys) == 1:
        key = keys[0]
    else:
        # (equal integers sort alike whatever the algorithm: numpy's default sort merged the
        # columns' sorted runs faster than timsort, issue 43)
        key = np.sort(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
        if len(key):
            key = key[np.r_[True, key[1:] != key[:-1]]]
    return key // width, key % width, names


def release_term_pairs(rows: pd.DataFrame, columns: Sequence[str]
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`columns_term_pairs` of ``rows``, once per rows inside :func:`reading_once`, or
    the pairs :func:`candidate_term_pairs` read for them from their codes."""
    columns = tuple(columns)
    return read_once(("term_pairs", columns), (rows,),
                     lambda: columns_term_pairs(rows, columns))


def candidate_term_pairs(rows: pd.DataFrame, columns: Sequence[str],
                         terms: Mapping[str, TermCodes] | None) -> bool:
    """Inside :func:`reading_once`, make :func:`release_term_pairs` of ``rows`` read the
    pairs from ``terms`` (the codes of ``rows``' ``columns``, row for row: the codes of the
    table the text was formatted from, ``AnonymizationResult.table_terms``) rather than split
    the text (:func:`coded_term_pairs`: a third of the gate of a 450k-case quarter, issue 43).

    Only when the codes are those of the text: each column coded, as many rows, each row's
    codes strictly increasing in a sorted vocabulary (the writer joins a cell's terms sorted
    without repeats, ``format_multi``: such codes joined are that text), and at a sample of
    rows the cell is its codes' terms joined with ``|``; and when the text reads back as the
    codes (:func:`coded_term_pairs`). Returns whether the codes are read; otherwise (and
    outside :func:`reading_once`) the text is split as for any release.
    """
    columns = tuple(columns)
    if terms is None or _MEMO.get() is None or any(c not in terms for c in columns):
        return False
    coded = [terms[c] for c in columns]
    n = len(rows)
    if any(len(c) != n or not c.increasing() for c in coded):
        return False
    if any(list(c.vocabulary) != sorted(c.vocabulary) for c in coded):
        return False
    sample = np.unique(np.linspace(0, n - 1, num=min(n, 64)).astype(np.int64)).tolist()
    for name, c in zip(columns, coded):
        cells = rows[name].to_numpy(dtype=object)
        words = c.vocabulary
        for row in sample:
            a, b = int(c.ptr[row]), int(c.ptr[row + 1])
            if cells[row] != _SEP.join(words[t] for t in c.codes[a:b].tolist()):
                return False
    pairs = coded_term_pairs(coded)
    if pairs is None:
        return False
    read_once(("term_pairs", columns), (rows,), lambda: pairs)
    return True


def coded_term_pairs(columns: Sequence[TermCodes]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`columns_term_pairs` of the rows whose multi-valued columns are ``columns``' rows
    written as the release format writes them (each row's terms joined with ``|``), the same
    arrays, read from the codes instead of split from the text (issue 43); None when that text
    need not read back as the codes say, and the caller splits the text.

    The text reads back as the codes exactly when every term of the vocabulary is read as
    itself: it holds no ``|`` (a term holding one is read as two), it is its own
    ``str.strip`` (the reader strips each term), and it is neither ``""`` nor ``*`` (the reader
    drops both). The columns must share one vocabulary and have as many rows each.

    The terms are numbered as :func:`columns_term_pairs` numbers them: ``""`` first, then each
    term in order of its first reading position (row, column, place in the cell).
    """
    if not columns:
        return None
    vocabulary = columns[0].vocabulary
    n = len(columns[0])
    if any(len(c) != n or (c.vocabulary is not vocabulary and c.vocabulary != vocabulary)
           for c in columns):
        return None
    if not all(type(t) is str and t and t != SUPPRESSED and _SEP not in t and t.strip() == t
               for t in vocabulary):
        return None
    if n == 0:
        return term_pairs(np.empty(0, dtype=object))
    size = len(vocabulary)
    places = max((int(np.diff(c.ptr).max(initial=0)) for c in columns), default=0) + 1
    never = np.iinfo(np.int64).max
    first_read = np.full(size, never, dtype=np.int64)
    for j, c in enumerate(columns):
        codes = np.asarray(c.codes, dtype=np.int64)
        # each code's first item: items are in row order, then place order
        first = np.full(size, len(codes), dtype=np.int64)
        np.minimum.at(first, codes, np.arange(len(codes), dtype=np.int64))
        present = np.flatnonzero(first < len(codes))
        item = first[present]
        row = np.searchsorted(c.ptr, item, side="right") - 1
        key = (row * (len(columns) + 1) + j) * places + (item - c.ptr[row])
        first_read[present] = np.minimum(first_read[present], key)
    present = np.flatnonzero(first_read < never)
    order = present[np.argsort(first_read[present], kind="stable")]
    rank = np.zeros(size, dtype=np.int64)   # "" holds number 0
    rank[order] = np.arange(1, len(order) + 1, dtype=np.int64)
    names = np.empty(len(order) + 1, dtype=object)
    names[0] = ""
    names[1:] = [vocabulary[c] for c in order.tolist()]
    width = len(names)
    # (int32 when they fit: numpy's default sort of them took a third of the stable sort of
    # int64 that this was)
    row_type = key_type(n * width)
    ranks = rank.astype(row_type)
    keys = []
    for c in columns:
        rows: np.ndarray = np.repeat(np.arange(n, dtype=row_type), np.diff(c.ptr))
        rows *= width
        rows += ranks[c.codes]
        keys.append(rows)
    key = np.concatenate(keys) if len(keys) > 1 else keys[0]
    key.sort()
    if len(key):
        key = key[np.r_[True, key[1:] != key[:-1]]]
    row, term = np.divmod(key, width)
    return row.astype(np.int64, copy=False), term.astype(np.int64, copy=False), names


def _expand_cell_terms(which: np.ndarray, n_cells: int, cell: np.ndarray, code: np.ndarray,
                       width: int) -> np.ndarray:
    """The sorted distinct keys ``row * width + term`` of the rows of one column, given each
    row's distinct cell (``which``, numbers below ``n_cells``) and the (cell, term) entries of
    the distinct cells.

    Each cell's distinct terms are sorted once; a row takes its cell's run, so the keys come
    out sorted row by row without a sort of the rows' pairs.
    """
    n = len(which)
    key = np.sort(cell * width + code)
    if len(key):
        key = key[np.r_[True, key[1:] != key[:-1]]]
    if n_cells == n:  # each row has a cell of its own (numbered in row order): the same keys
        return key
    cell, code = key // width, key % width
    count = np.bincount(cell, minlength=n_cells)
    start = np.cumsum(count) - count
    per_row = count[which]
    total = int(per_row.sum())
    # the run of row r starts at start[which[r]]; its entries follow one another
    shift = start[which] - (np.cumsum(per_row) - per_row)
    at = np.arange(total, dtype=np.int64) + np.repeat(shift, per_row)
    return np.repeat(np.arange(n, dtype=np.int64) * width, per_row) + code[at]


def joined_terms(frame: pd.DataFrame, columns) -> np.ndarray:
    """The terms of several multi-valued columns of each row, joined into one cell per row."""
    joined = np.full(len(frame), "", dtype=object)
    for col in columns:
        joined = joined + _SEP + cell_strings(frame[col])
    return joined
