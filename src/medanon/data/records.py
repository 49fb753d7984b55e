"""Case-level records and super records.

A *record* is one report (one FAERS primaryid/ISR): a row with the case id, the period, the
quasi-identifiers and the multi-valued columns (Python tuples of sorted, unique strings).

A *super record* combines every record of one CaseID within a period (papers 000-002; spec
``algorithms.md`` §2.2): multi-valued columns become the set union, and quasi-identifiers that
differ between follow-ups are reconciled to their least upper bound, i.e. the lowest common
ancestor in the attribute's hierarchy (categorical) or the interval hull (numeric). Privacy
models count super records, never raw rows, so that the reports of one case cannot inflate a
group's size or a sensitive value's count.

Numeric QIDs of super records are held as a pandas ``IntervalArray`` closed on both sides
(``[lo, hi]``; a single value v is ``[v, v]``); categorical QIDs as hierarchy labels.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from ..errors import SchemaError
from ..hierarchies import Taxonomy
from .dates import as_faers_date
from .schema import Schema

if TYPE_CHECKING:   # (terms imports this module)
    from .terms import CodedRecords, TermCodes


def as_value_set(values: object) -> tuple[str, ...]:
    """Normalize a multi-valued cell into a sorted tuple of unique, non-empty, stripped strings.

    Accepts an iterable of strings, a ``|``-joined string (the published format), or a missing
    value (None/NaN -> empty tuple).
    """
    if values is None or (isinstance(values, float) and np.isnan(values)):
        return ()
    if isinstance(values, str):
        values = values.split("|")
    elif not isinstance(values, Iterable):
        raise SchemaError(f"A multi-valued cell must be a list of strings; got {values!r}.")
    return tuple(sorted({str(v).strip() for v in values if v is not None and str(v).strip()}))


def object_array(values: Iterable[object]) -> np.ndarray:
    """``values`` (a Series, an Index, an array, a sequence or any iterable) as a flat object
    array, without copying what is one already."""
    if isinstance(values, (pd.Series, pd.Index)):
        raw = values.to_numpy(dtype=object)
    else:
        raw = np.asarray(values if isinstance(values, (np.ndarray, list, tuple)) else list(values),
                         dtype=object)
    return raw.ravel()


def is_identity(order: np.ndarray) -> bool:
    """Whether ``order`` (positions) is 0, 1, 2, ...: a take by it would give the rows back as
    they are, so a caller can skip the copy."""
    return not len(order) or (int(order[0]) == 0 and bool((np.diff(order) == 1).all()))


def factorize_texts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values)`` (a flat object array), without hashing texts that are in
    strictly increasing order: their codes are 0, 1, ... and their distinct values themselves
    (a period's CaseIDs as the store lists them, the input digest's CaseIDs and report ids in
    its canonical order; issue 43)."""
    if (len(values) > 1 and pd.api.types.infer_dtype(values, skipna=False) == "string"
            and bool((values[1:] > values[:-1]).all())):
        return np.arange(len(values)), values
    return pd.factorize(values)


def factorize_cells(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values)`` (a flat object array), hashing each shared object's value once.

    The store shares one tuple among the cells holding it and one str among a text column's
    equal cells (a quarter's period, age, sex and dates, its 84 distinct outcome tuples):
    the objects are numbered first (:func:`distinct_objects`, one integer hash per cell),
    then only the distinct objects are factorized by value. Objects are numbered in order of
    first appearance, so a value's first object is where the value first appears and the
    codes are pandas' own. Cells whose sample (:data:`_SAMPLE` of them) holds nine tenths
    distinct objects or more (CaseIDs, report ids) are factorized as they are
    (:func:`factorize_texts`): numbering their objects first costs more than it saves. A
    quarter's reactions and drugs, half of them distinct, look 85% distinct in a sample, and
    still cost a sixth less numbered first."""
    sample = _addresses(values[::max(1, len(values) // _SAMPLE)])
    if len(values) > _SAMPLE and 10 * len(np.unique(sample)) <= 9 * len(sample):
        which, first = distinct_objects(values)
        codes, distinct = pd.factorize(values[first])
        return codes[which], distinct
    return factorize_texts(values)


def first_appearances(codes: np.ndarray) -> np.ndarray:
    """The position of each code's first appearance, for codes numbered as ``pd.factorize``
    numbers values (in order of first appearance from 0; -1, a missing value, is skipped): a
    code appears for the first time exactly where it exceeds every code before it."""
    codes = np.asarray(codes)
    seen = np.maximum.accumulate(np.concatenate([np.full(1, -1, dtype=codes.dtype), codes]))
    return np.flatnonzero(codes > seen[:-1])


def distinct_objects(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cell of an object array, the number of its object among the distinct objects (by
    identity, in order of first appearance), and the position of each one's first cell.

    Columns of shared objects (the store's term tuples, a group's label, a decoded
    hierarchy label) hold far fewer objects than cells: work done once per object instead of
    once per cell is exactly the same work, as nothing mutates a cell. Objects are told apart
    by ``id`` (one integer hash per cell, in C), valid while ``values`` holds them all.
    """
    n = len(values)
    if not n:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    which, _ = pd.factorize(_addresses(values))
    return which, first_appearances(which)


def distinct_bounds(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per position, the number of its (lo, hi) pair of floats among the distinct pairs (in
    order of first appearance), and the position of each pair's first appearance.

    Pairs are told apart by the bits of their bounds: 0.0 and -0.0 differ, as they do when
    formatted; a NaN bound equals only the same NaN.
    """
    if not len(lo):
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    # one integer code per pair: each bound's bits factorized, then the pair of codes
    low, _ = pd.factorize(np.ascontiguousarray(lo, dtype=float).view(np.int64))
    high, highs = pd.factorize(np.ascontiguousarray(hi, dtype=float).view(np.int64))
    which, _ = pd.factorize(low.astype(np.int64) * len(highs) + high)
    return which, first_appearances(which)


def _addresses(values: np.ndarray) -> np.ndarray:
    """The object pointers an object array holds, as unsigned integers: equal exactly when
    the cells hold the same object.

    An object array is an array of ``PyObject *``; its memory is read as ``uintp`` (numpy
    exports no buffer of an object array, so ctypes reads it). ``id()`` per cell gives the
    same numbers at 80 ms per 450k cells (issue 43), this at well under a millisecond.
    """
    values = np.ascontiguousarray(values, dtype=object)
    memory = (ctypes.c_char * values.nbytes).from_address(values.ctypes.data)
    return np.frombuffer(memory, dtype=np.uintp).copy()  # type: ignore[call-overload]  # copied while ``values`` lives


def map_cells(values: Iterable[object], fn: Callable[[object], object], *,
              many: Callable[[list], list] | None = None) -> list:
    """``[fn(v) for v in values]``, calling ``fn`` once per distinct object, and once per
    distinct text.

    Cells repeat a lot (a group's generalized label in every row, a common indication), and
    per-cell formatting or normalizing was a tenth of a release's time at 50k cases (issue 30).
    ``fn`` must be a function of its argument's value: it is called once for all the cells
    that hold one object (:func:`distinct_objects`, one integer hash per cell: the store
    shares one tuple among the cells holding it, a release table one label among a group's
    rows). Distinct ``str`` objects are then shared by value (a column read from a database
    holds one object per cell); tuples are not hashed by value again, which cost more than
    formatting them (a tuple's hash reads every item). Floats are shared by their bits (a
    missing QID is a NaN object per cell), never by value (equal numbers can format apart,
    e.g. 0.0 and -0.0); other numbers are not shared.

    ``many``, when given, maps a list of distinct text or tuple cells at once (it must return
    what ``fn`` returns for each): for an ``fn`` that is faster on a batch.
    """
    return map_cell_array(values, fn, many=many).tolist()


def map_cell_array(values: Iterable[object], fn: Callable[[object], object], *,
                   many: Callable[[list], list] | None = None) -> np.ndarray:
    """:func:`map_cells` as a flat object array (a column is made from it without a list)."""
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        array = values
    else:
        cells = values if isinstance(values, list) else list(values)
        array = np.fromiter(cells, dtype=object, count=len(cells))  # a tuple stays one cell
    if not len(array):
        return np.empty(0, dtype=object)
    which, first = distinct_objects(array)
    objects = array[first]
    kinds = np.fromiter(map(type, objects), dtype=object, count=len(objects))
    results = np.empty(len(objects), dtype=object)
    texts = np.flatnonzero(np.equal(kinds, str))  # type: ignore[call-overload]  # exact types
    tuples = np.flatnonzero(np.equal(kinds, tuple))  # type: ignore[call-overload]
    floats = np.flatnonzero(np.equal(kinds, float))  # type: ignore[call-overload]
    codes, distinct = pd.factorize(objects[texts])
    batch = distinct.tolist() + objects[tuples].tolist()
    mapped = (fn(v) for v in batch) if many is None else many(batch)
    mapped_values = np.fromiter(mapped, dtype=object, count=len(batch))
    results[texts] = mapped_values[codes]
    results[tuples] = mapped_values[len(distinct):]
    if len(floats):
        bits = np.fromiter(objects[floats], dtype=float, count=len(floats)).view(np.int64)
        float_codes, float_bits = pd.factorize(bits)
        results[floats] = np.fromiter((fn(v) for v in objects[floats[first_appearances(
            float_codes)]].tolist()), dtype=object, count=len(float_bits))[float_codes]
    shared = np.zeros(len(objects), dtype=bool)
    shared[texts] = shared[tuples] = shared[floats] = True
    for i in np.flatnonzero(~shared).tolist():
        results[i] = fn(objects[i])
    return results[which]


@dataclass(frozen=True)
class SuperRecords:
    """One row per (period, case): the unit every privacy model counts.

    Attributes:
        schema: the column roles.
        frame: columns ``period, case_id, n_reports, report_ids`` then the QIDs (categorical
            labels; numeric ``IntervalArray``), the multi-valued columns (tuples), then the
            insensitive, date (FAERS date strings; a missing one is NA) and private columns
            taken from the case's latest report.
    """

    schema: Schema
    frame: pd.DataFrame
    #: the taxonomy of each categorical QID the records were checked against.
    hierarchies: Mapping[str, Taxonomy] | None = None

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def case_ids(self) -> np.ndarray:
        return self.frame[self.schema.case_id].to_numpy()

    def numeric_bounds(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of a numeric QID as float arrays."""
        values = self.frame[column].array
        return np.asarray(values.left, dtype=float), np.asarray(values.right, dtype=float)


def check_record_values(records: pd.DataFrame, schema: Schema,
                        hierarchies: Mapping[str, Taxonomy]) -> None:
    """Check that the records fit the schema: columns present, labels in hierarchies, numbers numeric."""
    _checked_date_cells(records, schema, hierarchies)


def _checked_date_cells(records: pd.DataFrame, schema: Schema,
                        hierarchies: Mapping[str, Taxonomy], *,
                        columns_checked: bool = False,
                        factorized: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
                        ) -> dict[str, np.ndarray]:
    """:func:`check_record_values`, returning each date column's :func:`date_cells` (in the
    records' row order), which the check computes anyway. ``columns_checked``: the caller
    checked that the records have the schema's columns. ``factorized``, when given, gets each
    categorical QID's :func:`factorize_cells` (rows in the records' order), which the check
    makes: the super records' least upper bounds read it rather than hash the cells again."""
    if not columns_checked:
        schema.check_columns(records, what="the records")
    for name in schema.categorical_qids:
        if name not in hierarchies:
            raise SchemaError(f"No hierarchy loaded for categorical QID {name!r}.")
        # ``dropna().unique()``: the distinct non-missing values in order of first appearance,
        # hashed once per shared str object (a fifth of the super-record step's check at
        # 450k reports, issue 43)
        found = factorize_cells(records[name].to_numpy(dtype=object))
        hierarchies[name].check_values([str(v) for v in found[1]], column=name)
        if factorized is not None:
            factorized[name] = found
    for name in schema.numeric_qids:
        column = records[name]
        if not pd.api.types.is_numeric_dtype(column):
            converted = pd.to_numeric(column, errors="coerce")
            bad = column[converted.isna() & column.notna()]
            if len(bad):
                raise SchemaError(f"Numeric QID {name!r} has non-numeric value(s), e.g. {bad.iloc[0]!r}.")
    return {name: date_cells(records[name], name) for name in schema.date_columns}


def date_cells(values: pd.Series, name: str) -> np.ndarray:
    """A date column's cells as FAERS date strings (None when missing), each distinct value
    checked once.

    Raises:
        SchemaError: a value that is not a FAERS date (``YYYYMMDD``, ``YYYYMM``, ``YYYY``), a
            date or a timestamp, naming the column.
    """
    which, distinct = factorize_cells(values.to_numpy(dtype=object))
    converted = []
    for value in distinct:
        try:
            converted.append(as_faers_date(value))
        except ValueError as exc:
            raise SchemaError(f"Date column {name!r} has a value that is not a date: {exc}.") from None
    cells = np.array(converted + [None], dtype=object)  # factorize: -1 for a missing value
    return cells[which]


def combine_super_records(records: pd.DataFrame, schema: Schema,
                          hierarchies: Mapping[str, Taxonomy], *,
                          report_ids: bool = True) -> SuperRecords:
    """Combine the records of each (period, CaseID) into one super record.

    :func:`super_records_of_rows` also tells which super record each record went into.

    Args:
        records: one row per report; multi-valued cells are tuples/lists (or ``|``-joined text).
            A ``version`` column, when present, orders a case's reports (latest last).
        schema: column roles.
        hierarchies: taxonomy per categorical QID (``schema.load_hierarchies()``).
        report_ids: make the ``report_ids`` column (a tuple of report ids per case). A release
            reads none of it, and at 450k cases its tuples and the report ids they keep alive
            were 45 MiB held through the method's peak (issue 43).

    Returns:
        The super records, ordered by period then case id.

    Raises:
        SchemaError: a schema column is missing, or a numeric QID is not numeric.
        HierarchyError: a categorical QID value is missing from its hierarchy.
    """
    return super_records_of_rows(records, schema, hierarchies, report_ids=report_ids)[0]


def super_records_of_rows(records: pd.DataFrame | CodedRecords, schema: Schema,
                          hierarchies: Mapping[str, Taxonomy], *,
                          report_ids: bool = True,
                          terms: Mapping[str, TermCodes] | None = None
                          ) -> tuple[SuperRecords, np.ndarray]:
    """:func:`combine_super_records`, and for each row of ``records`` (by position) the row of
    the super records' frame it went into: what the release's shuffle reads to order the
    cases by their first report without hashing their CaseIDs' texts again (issue 43).

    ``terms`` (``CodedRecords.terms`` of the store's read) are the codes of some multi-valued
    columns, row for row of ``records``: their unions are made from the codes (the same
    tuples); codes that do not hold a column's cells are not used. ``records`` may be the
    store's ``CodedRecords`` itself: the list columns its base lacks are read from their codes
    alone (their rows' tuples are never made)."""
    from .terms import CodedRecords, codes_of

    coded_columns: Mapping[str, TermCodes] = {}
    if isinstance(records, CodedRecords):
        coded_columns = {name: records.terms[name] for name in records.columns
                         if name not in records.base.columns}
        schema.check_columns(pd.DataFrame(columns=list(records.columns)), what="the records")
        terms, records = records.terms, records.base
    else:
        schema.check_columns(records, what="the records")
    labels: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    dates = _checked_date_cells(records, schema, hierarchies, columns_checked=True,
                                factorized=labels)
    case_col, period_col = schema.case_id, schema.period
    order = [period_col, case_col] + (["version"] if "version" in records.columns else [])
    # Only the columns read below are put in that order, not the whole frame (a copy of every
    # column was a quarter of this step at 450k reports, issue 43); rows the store gives
    # already in order are not sorted at all.
    rows = stable_sort_order(records, order)

    def sorted_cells(values: np.ndarray) -> np.ndarray:
        return values if rows is None else values[rows]

    def cells_at(values: np.ndarray, at: np.ndarray) -> np.ndarray:
        """``sorted_cells(values)[at]`` without putting every cell in order: a gather of
        object cells in a shuffled order (pseudonymized CaseIDs) reads each object's memory,
        a cache miss per cell, and cost a fifth of this step at 450k reports (issue 43)."""
        return values[at] if rows is None else values[rows[at]]

    periods = sorted_cells(records[period_col].astype(str).to_numpy())
    cases = sorted_cells(records[case_col].astype(str).to_numpy())
    group, first_index = _case_groups(periods, cases)
    n_groups = len(first_index)
    sizes = np.bincount(group, minlength=n_groups)
    # Rows are sorted, so a case's rows are contiguous: [first_index[g], last_index[g]].
    last_index = (np.r_[first_index[1:], len(group)] - 1) if n_groups else np.zeros(0, dtype=np.int64)
    multi_groups = np.flatnonzero(sizes > 1)

    out: dict[str, object] = {
        period_col: periods[first_index],
        case_col: cases[first_index],
        "n_reports": sizes.astype(np.int64),
    }
    if schema.identifiers and report_ids:
        ids = records[schema.identifiers[0]].astype(str).to_numpy()
        # a case of one report (most): a 1-tuple made in C by zip, in the rows' own order
        # (made in the cases' order, each read a str scattered in memory: 0.25 -> 0.1 s at
        # 450k reports, issue 43), then put in the cases' order
        reports_of_case = cells_at(
            np.fromiter(zip(ids.tolist()), dtype=object, count=len(ids)), first_index)
        for g in multi_groups.tolist():
            reports_of_case[g] = tuple(
                cells_at(ids, np.arange(first_index[g], last_index[g] + 1)).tolist())
        out["report_ids"] = reports_of_case
    for name in schema.categorical_qids:
        out[name] = _lub_categorical(records[name], hierarchies[name], first_index, last_index,
                                     multi_groups, rows, labels.get(name))
    for name in schema.numeric_qids:
        values = sorted_cells(pd.to_numeric(records[name], errors="coerce").to_numpy(dtype=float))
        lo = np.full(n_groups, np.nan)
        hi = np.full(n_groups, np.nan)
        finite = ~np.isnan(values)
        np.fmin.at(lo, group[finite], values[finite])
        np.fmax.at(hi, group[finite], values[finite])
        out[name] = pd.arrays.IntervalArray.from_arrays(lo, hi, closed="both")
    for name in schema.multi_valued:
        if name in coded_columns:   # (no cells, only their codes)
            merged = _union_cells(None, group, first_index, rows, coded_columns[name])
            assert merged is not None   # (codes are always read)
            out[name] = merged
            continue
        raw = records[name].to_numpy(dtype=object)
        merged = _union_cells(raw, group, first_index, rows, codes_of(terms, raw, name))
        if merged is None:  # cells of other kinds (text, lists, missing): one by one
            cells = map_cells(sorted_cells(raw), as_value_set)
            unions = [cells[i] for i in first_index]
            for g in multi_groups.tolist():
                unions[g] = tuple(sorted(set().union(*cells[first_index[g]:last_index[g] + 1])))
            merged = np.fromiter(unions, dtype=object, count=n_groups)
        out[name] = merged
    for name in schema.insensitive + schema.private:
        out[name] = cells_at(records[name].to_numpy(), last_index)
    for name in schema.date_columns:
        out[name] = cells_at(dates[name], last_index)
    # the columns are arrays made here: the frame takes them as they are, a block each,
    # rather than copying them into one block per dtype (0.1-0.18 s at 450k cases, issue 43)
    frame = pd.DataFrame(out, copy=False)
    for name in schema.multi_valued + ("report_ids",):
        if name in frame.columns:
            frame[name] = frame[name].astype(object)
    if rows is None:
        super_of_row = group
    else:
        super_of_row = np.empty(len(group), dtype=group.dtype)
        super_of_row[rows] = group
    return SuperRecords(schema, frame, hierarchies), super_of_row


def stable_sort_order(records: pd.DataFrame, columns: list[str]) -> np.ndarray | None:
    """The row positions of ``records.sort_values(columns, kind="stable")``; None when that is
    the rows' own order (a stable sort of sorted rows moves none).

    The rows count as sorted when each key column holds only text, or only numbers, none
    missing, and consecutive rows compare in order (text by code point, as pandas sorts it);
    anything else is sorted by pandas.
    """
    n = len(records)
    if n < 2:
        return None
    # the first rows are read first: rows out of order there (a period's pseudonymized
    # CaseIDs) are out of order, and comparing every row's keys is spared (a fifth of this
    # function at 450k reports, issue 43)
    if _rows_in_order(records, columns, min(n, _SAMPLE)) and _rows_in_order(records, columns, n):
        return None
    ranks = [_sort_ranks(records[name]) for name in columns]
    if all(r is not None for r in ranks):
        # lexsort's last key is the primary one; like sort_values(kind="stable"), it keeps
        # rows that tie on every key in their order. A key equal in every row (a quarter's
        # period) orders nothing and is left out.
        varied = [r for r in ranks if r is not None and not (r == r[0]).all()]
        return np.lexsort(varied[::-1]) if varied else np.arange(n)
    keys = records[columns].reset_index(drop=True)
    return keys.sort_values(columns, kind="stable").index.to_numpy()


def _rows_in_order(records: pd.DataFrame, columns: list[str], stop: int) -> bool:
    """Whether the first ``stop`` rows (two at least) count as sorted by ``columns``
    (:func:`stable_sort_order`). When the first rows do not, no more rows do: a pair out of
    order compares so among any rows, and a key column that is not read (not only text, or
    numbers with one missing) is not read among more rows either."""
    in_order = np.zeros(stop - 1, dtype=bool)  # decided: the earlier row's key is smaller
    tied = np.ones(stop - 1, dtype=bool)       # equal on every key so far
    for name in columns:
        values = records[name].to_numpy()[:stop]
        if values.dtype == object:
            if pd.api.types.infer_dtype(values, skipna=False) != "string":
                return False
        elif values.dtype.kind not in "iu" and not (values.dtype.kind == "f"
                                                    and not np.isnan(values).any()):
            return False
        earlier, later = values[:-1], values[1:]
        in_order |= tied & (earlier < later)
        tied &= earlier == later
    return bool((in_order | tied).all())


def _sort_ranks(column: pd.Series) -> np.ndarray | None:
    """Integer keys that order ``column``'s cells as ``sort_values`` orders them (equal cells
    equal keys), or None for a column this does not read (missing cells, mixed kinds).

    Text is keyed once per distinct object (:func:`distinct_objects`; the store and the
    pseudonyms share one str among equal cells), by :func:`_packed_text_keys` when the texts
    allow, else ranked per distinct value (factorized, the distinct values sorted by code
    point, as Python and pandas compare str): pandas' own multi-column sort made an ordered
    Categorical, sorting every distinct str by object comparisons, 1.3 s of a 450k-case
    quarter's release once its CaseIDs are pseudonyms (issue 43). Integers and NaN-free floats
    are their own keys.
    """
    values = column.to_numpy()
    if values.dtype.kind in "iu" or (values.dtype.kind == "f" and not np.isnan(values).any()):
        return values
    if values.dtype != object or pd.api.types.infer_dtype(values, skipna=False) != "string":
        return None
    # cells of a few shared objects (a period) are keyed once per object; cells that are
    # mostly distinct (CaseIDs) at once, without numbering their objects first
    sample = _addresses(values[::max(1, len(values) // _SAMPLE)])
    if 2 * len(np.unique(sample)) <= len(sample):
        which, first = distinct_objects(values)
        packed = _packed_text_keys(values[first].tolist())
        if packed is not None:
            return packed[which]
    else:
        packed = _packed_text_keys(values.tolist())
        if packed is not None:
            return packed
    codes, distinct = pd.factorize(values)
    if len(codes) and codes.min() < 0:  # a missing cell: pandas puts it last; not read here
        return None
    texts = distinct.tolist()
    order = _text_order(texts)
    rank = np.empty(len(texts), dtype=np.int64)
    rank[order] = np.arange(len(texts), dtype=np.int64)
    return rank[codes]


#: the longest text :func:`_packed_text_keys` packs (a 64-bit key holds at most 64 symbols)
_PACKED_WIDTH = 64
#: how many cells :func:`_sort_ranks` looks at to tell whether a column shares its objects
_SAMPLE = 1024
#: the bytes :func:`_packed_text_keys` counts at once
_COUNT_CHUNK = 1 << 20


def _packed_text_keys(texts: list[str]) -> np.ndarray | None:
    """One unsigned 64-bit key per text that orders the texts by code point (equal texts
    equal keys), or None when they do not fit one.

    Each text is read as a number whose digits are its characters, ranked among the
    characters the texts hold, and padded on the right with a digit below them all: ASCII
    texts without NUL characters whose alphabet (with the pad, when a text is shorter than
    the longest) to the power of the longest length fits 64 bits, e.g. 16-digit CaseID
    pseudonyms. One integer sort of these keys replaces sorting 450k distinct str (a
    fixed-width numpy string sort took 0.3 s, ranking them 0.5 s more; issue 43). A shorter
    text that is a prefix of a longer one ranks first, as in Python.
    """
    n = len(texts)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    if set(map(type, texts)) != {str}:  # exactly str: a subclass may compare otherwise
        return None
    joined = "\x00".join(texts)
    if not joined.isascii() or len(joined) > (_PACKED_WIDTH + 1) * n:
        return None
    # the texts' bytes, each followed by a NUL: where the NULs are tells their lengths, and
    # a NUL more than the texts tells that a text holds one
    raw = np.frombuffer((joined + "\x00").encode("ascii"), dtype=np.uint8)
    ends = np.flatnonzero(raw == 0)
    if len(ends) != n:
        return None
    lengths = np.diff(ends, prepend=-1) - 1
    width = int(lengths.max(initial=0))
    if width > _PACKED_WIDTH:
        return None
    if (lengths == width).all():
        digits = raw.reshape(n, width + 1)[:, :width]
    else:  # shorter texts padded with NUL, the digit below every character
        digits = np.zeros((n, width), dtype=np.uint8)
        row = np.repeat(np.arange(n), lengths)
        column = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        digits[row, column] = raw[raw != 0]
    counts = np.zeros(256, dtype=np.int64)
    for at in range(0, len(raw), _COUNT_CHUNK):  # in chunks: bincount counts in int64
        counts += np.bincount(raw[at:at + _COUNT_CHUNK], minlength=256)
    counts[0] = int((lengths < width).any())  # the separators are no characters; the pad is
    present = np.flatnonzero(counts)
    base = len(present)
    if base ** width > 1 << 64:
        return None
    rank = np.zeros(256, dtype=np.uint8)
    rank[present] = np.arange(base)
    ranked = rank[digits]
    keys = np.zeros(n, dtype=np.uint64)
    for j in range(width):  # below base ** width <= 2 ** 64 at every step: no overflow
        keys *= np.uint64(base)
        keys += ranked[:, j]
    return keys


#: the characters of a fixed-width numpy string array :func:`_text_order` makes at any rate
_FIXED_WIDTH_CHARS = 1 << 22


def _text_order(texts: list[str]) -> np.ndarray:
    """The positions of distinct ``texts`` in code-point order: sorted as a numpy string array
    (several times faster than comparing str objects) when that array holds the same texts
    (numpy's fixed-width strings drop trailing NUL characters) and is not much larger than
    they are (every text is padded to the longest one), else by Python's sort."""
    longest = max(map(len, texts), default=0)
    if longest * len(texts) <= max(8 * sum(map(len, texts)), _FIXED_WIDTH_CHARS):
        fixed = np.array(texts, dtype=str)
        if (fixed.astype(object) == np.array(texts, dtype=object)).all():
            return np.argsort(fixed, kind="stable")
    return np.array(sorted(range(len(texts)), key=texts.__getitem__), dtype=np.int64)


def _case_groups(periods: np.ndarray, cases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group id of each row of rows sorted by (period, case id) and the first row of each
    group: a group is a run of rows equal in both (as text)."""
    n = len(periods)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    new_period = periods[1:] != periods[:-1]
    if any("\x1f" in p for p in periods[np.r_[True, new_period]].tolist()):
        # rows were told apart by one text, period + US + case id, which a period holding the
        # separator can make equal for two cases: keep that reading for such a period
        keys = periods.astype(object) + "\x1f" + cases.astype(object)
        starts = np.r_[True, keys[1:] != keys[:-1]]
    else:
        starts = np.r_[True, new_period | (cases[1:] != cases[:-1])]
    return np.cumsum(starts) - 1, np.flatnonzero(starts)


def distinct_sorted(values: np.ndarray, kind: Literal["stable"] | None = None) -> np.ndarray:
    """``np.unique(values)`` of an integer array: a sort and a neighbour test.

    numpy 2's ``np.unique`` hashes integer arrays, several times slower than this at 10^5-10^6
    values (it was a third of the super-record step at 100k cases, issue 30). ``kind``: the
    sort's (``"stable"``, a merge of sorted runs, for values made of a few sorted runs).
    """
    ordered = np.sort(values, kind=kind)
    if len(ordered) < 2:
        return ordered
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]]


def _union_of_str_tuples(cells: Sequence[object] | np.ndarray, group: np.ndarray,
                         first_index: np.ndarray,
                         rows: np.ndarray | None = None) -> list[tuple] | None:
    """:func:`_union_cells` as a list."""
    merged = _union_cells(cells, group, first_index, rows)
    return None if merged is None else merged.tolist()


def _union_cells(cells: Sequence[object] | np.ndarray | None, group: np.ndarray,
                 first_index: np.ndarray, rows: np.ndarray | None = None,
                 terms: TermCodes | None = None) -> np.ndarray | None:
    """Per group, :func:`as_value_set` of the union of its rows' cells, when every cell is a
    tuple of str (what the store gives); None otherwise.

    ``terms``, when given, are the cells' codes (they hold the same tuples, row for row): the
    distinct cells and their terms are then read from the codes, not from the objects (issue
    43); ``cells`` may then be None (the tuples never made).

    ``group`` and ``first_index`` number the rows ``cells[rows]`` (None: ``cells`` as they
    are): the cells are not put in that order, only their objects' numbers.

    The work is done once per distinct tuple object (:func:`distinct_objects`: the store
    shares one tuple among the cells that hold it), not once per row: a 450k-report quarter
    holds 84 distinct outcome tuples and about 220k distinct reaction tuples (issue 43); and
    once per distinct term object for the terms (the store shares one str per term too).
    A group of one row whose tuple is already normalized (stripped, non-empty terms in
    strictly increasing order) keeps that tuple, which equals the one built from its terms.
    The other groups' unions are built from (group, term) pairs, terms coded once (sorted
    vocabulary, so code order is string order), deduplicated and sorted in one numpy pass.
    """
    found: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]] | None
    if terms is not None:
        found = _distinct_cells_of_codes(terms)
    else:
        assert cells is not None
        array = (cells if isinstance(cells, np.ndarray) and cells.dtype == object
                 else np.fromiter(cells, dtype=object, count=len(cells)))
        found = _distinct_cells(array)
    if found is None:
        return None
    which, objects, lengths, terms_of_items, vocabulary = found
    m = len(objects)
    n_groups = len(first_index)
    if not n_groups:
        return np.empty(0, dtype=object)
    # per term of each distinct cell: its code in the stripped vocabulary (-1: blank), and
    # whether it is unclean (blank, or changed by stripping)
    stripped = [t.strip() for t in vocabulary]
    kept_terms = sorted(set(stripped) - {""})
    code_of = {t: i for i, t in enumerate(kept_terms)}
    codes = np.array([code_of.get(v, -1) for v in stripped], dtype=np.int64)[terms_of_items]
    unclean = np.array([t != v or not v for t, v in zip(vocabulary, stripped)],
                       dtype=bool)[terms_of_items]
    vocabulary = kept_terms
    owner = np.repeat(np.arange(m, dtype=np.int64), lengths)  # the object of each term
    # which objects are normalized as they are: every term stripped and non-empty, each
    # greater than the one before it (code order is the order sorted() gives their texts,
    # which are the terms themselves when nothing was stripped)
    as_is = np.ones(m, dtype=bool)
    as_is[owner[unclean]] = False
    step = owner[1:] == owner[:-1]
    as_is[owner[1:][step & (codes[1:] <= codes[:-1])]] = False
    single = np.bincount(group, minlength=n_groups) == 1
    kept = which[first_index if rows is None else rows[first_index]]
    rebuilt = ~(single & as_is[kept])
    # one gather of the distinct objects, whose number is small or whose memory is in the
    # rows' own order: a gather of the cells in the groups' order read each tuple's memory
    # in a shuffled order (issue 43)
    merged = objects[kept]
    if rebuilt.any():  # the other groups' union: (group, term) pairs sorted, made distinct
        # the terms of every row of a rebuilt group: its object's terms
        at_rows = np.flatnonzero(rebuilt[group])
        objs = which[at_rows if rows is None else rows[at_rows]]
        count = lengths[objs]
        start = np.r_[0, np.cumsum(lengths)[:-1]][objs]
        at = np.repeat(start - np.r_[0, np.cumsum(count)[:-1]], count) + np.arange(count.sum())
        owners, row_codes = np.repeat(group[at_rows], count), codes[at]
        present = row_codes >= 0  # -1: a blank term, dropped
        width = max(len(vocabulary), 1)
        pairs = distinct_sorted(owners[present] * width + row_codes[present])  # by group, then term
        where = np.flatnonzero(rebuilt)
        bounds = np.searchsorted(pairs // width, np.r_[where, where + 1]).reshape(2, -1)
        words = np.array(vocabulary + [""], dtype=object)[pairs % width].tolist()
        for g, a, b in zip(where.tolist(), bounds[0].tolist(), bounds[1].tolist()):
            merged[g] = tuple(words[a:b])
    return merged


def _distinct_cells(array: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   np.ndarray, list[str]] | None:
    """The distinct cells of ``array`` for :func:`_union_cells`, by object: per cell the
    number of its object, the distinct objects, each one's number of terms, per term of each
    object (one after another) its number among the distinct terms, and those terms (a str
    each). None unless every cell is a tuple of str."""
    which, first = distinct_objects(array)
    objects = array[first]
    if not set(map(type, objects.tolist())) <= {tuple}:
        return None
    lengths = np.fromiter(map(len, objects), dtype=np.int64, count=len(objects))
    items = np.fromiter(chain.from_iterable(objects), dtype=object, count=int(lengths.sum()))
    # the terms by object (a str object per distinct term), their values looked at once each
    item_of, item_first = distinct_objects(items)
    terms = items[item_first].tolist()
    if not set(map(type, terms)) <= {str}:
        return None
    return which, objects, lengths, item_of, terms


def _distinct_cells_of_codes(terms: TermCodes
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                        list[str]]:
    """:func:`_distinct_cells` read from the cells' codes: the distinct cells are the
    distinct coded rows (their tuples made once, ``TermCodes.distinct_tuples``; the rows'
    tuples, when made, are the same objects), their terms the codes."""
    which, first = terms.distinct_rows()
    lengths, codes = terms.items_of(first)
    return (which, terms.distinct_tuples(), lengths, np.asarray(codes, dtype=np.int64),
            list(terms.vocabulary))


def _lub_categorical(column: pd.Series, taxonomy: Taxonomy, first_index: np.ndarray,
                     last_index: np.ndarray, multi_groups: np.ndarray,
                     rows: np.ndarray | None = None,
                     factorized: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Least upper bound (LCA) of each group's labels; missing labels are ignored.

    ``rows``: the order of the column's cells that the group bounds index (None: as they are).
    ``factorized``: the column's :func:`factorize_cells`, when known (its rows in the
    column's own order).

    A raw label that names an internal node with a self leaf (an ``Adult`` written by data or a
    store from before the MeSH age tree had self leaves) is the record value of that leaf, so it
    becomes the leaf here, before any generalization.
    """
    raw = column.to_numpy(dtype=object)
    if rows is not None:
        raw = raw[rows]
    values = np.empty(len(raw), dtype=object)
    if factorized is not None:   # (the numbers of the distinct labels do not matter below)
        codes, distinct = factorized
        if rows is not None:
            codes = codes[rows]
    else:
        try:
            # the store shares one str among a label's cells: hashed once per object
            codes, distinct = factorize_cells(raw)
        except TypeError:  # an unhashable cell: looked up one by one below
            codes, distinct = np.zeros(0, dtype=np.intp), np.array([None], dtype=object)
    label_na = None
    if all(type(v) is str for v in distinct.tolist()):
        # each distinct label looked up once; a missing cell (-1: None, NaN, NA) is None,
        # which is what it becomes below in any case
        labels = np.empty(len(distinct) + 1, dtype=object)
        labels[:-1] = taxonomy.record_labels(distinct.tolist())
        values[:] = labels[codes]
        missing = codes < 0
        # which cells are missing after the lookup, read once per distinct label (pd.isna
        # of every cell was a sixth of this function at 450k reports, issue 43)
        label_na = pd.isna(labels)[codes[first_index]]
    else:
        values[:] = taxonomy.record_labels(raw)
        missing = pd.isna(values)
    result = values[first_index].copy()
    for g in multi_groups:
        chunk = values[first_index[g]:last_index[g] + 1]
        present = [str(v) for v, m in zip(chunk, missing[first_index[g]:last_index[g] + 1]) if not m]
        result[g] = taxonomy.lca(present) if present else None
    if label_na is None:
        result[pd.isna(result)] = None
    else:
        label_na[multi_groups] = pd.isna(result[multi_groups])
        result[label_na] = None
    return result
