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

from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import SchemaError
from ..hierarchies import Taxonomy
from .dates import as_faers_date
from .schema import Schema


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


def map_cells(values: Iterable[object], fn: Callable[[object], object], *,
              many: Callable[[list], list] | None = None) -> list:
    """``[fn(v) for v in values]``, calling ``fn`` once per distinct text or tuple cell.

    Cells repeat a lot (a group's generalized label in every row, a common indication), and
    per-cell formatting or normalizing was a tenth of a release's time at 50k cases (issue 30).
    Only ``str`` and ``tuple`` cells are shared: numbers are not (equal numbers can format
    apart, e.g. 0.0 and -0.0), nor are unhashable cells (a list). The distinct cells are found
    by pandas' hash table in one C pass (a Python dict lookup per cell cost as much as ``fn``
    at 100k cases); a str never equals a tuple, so both kinds share one table.

    ``many``, when given, maps the list of distinct shared cells at once (it must return what
    ``fn`` returns for each): for an ``fn`` that is faster on a batch.
    """
    cells = values if isinstance(values, list) else list(values)
    n = len(cells)
    if not n:
        return []
    shared = np.fromiter((type(v) is str or type(v) is tuple for v in cells), dtype=bool,
                         count=n)
    array = np.fromiter(cells, dtype=object, count=n)  # fromiter: a tuple stays one cell
    out = np.empty(n, dtype=object)
    at = np.flatnonzero(shared)
    if len(at):
        try:
            codes, distinct = pd.factorize(array[at])
        except TypeError:  # a tuple holding an unhashable item: no sharing for this column
            at = np.zeros(0, dtype=np.int64)
            shared[:] = False
        else:
            mapped = (fn(v) for v in distinct) if many is None else many(distinct.tolist())
            results = np.fromiter(mapped, dtype=object, count=len(distinct))
            out[at] = results[codes]
    for i in np.flatnonzero(~shared).tolist():
        out[i] = fn(cells[i])
    return out.tolist()


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
    schema.check_columns(records, what="the records")
    for name in schema.categorical_qids:
        if name not in hierarchies:
            raise SchemaError(f"No hierarchy loaded for categorical QID {name!r}.")
        present = records[name].dropna().unique()
        hierarchies[name].check_values([str(v) for v in present], column=name)
    for name in schema.numeric_qids:
        column = records[name]
        if not pd.api.types.is_numeric_dtype(column):
            converted = pd.to_numeric(column, errors="coerce")
            bad = column[converted.isna() & column.notna()]
            if len(bad):
                raise SchemaError(f"Numeric QID {name!r} has non-numeric value(s), e.g. {bad.iloc[0]!r}.")
    for name in schema.date_columns:
        date_cells(records[name], name)


def date_cells(values: pd.Series, name: str) -> np.ndarray:
    """A date column's cells as FAERS date strings (None when missing), each distinct value
    checked once.

    Raises:
        SchemaError: a value that is not a FAERS date (``YYYYMMDD``, ``YYYYMM``, ``YYYY``), a
            date or a timestamp, naming the column.
    """
    which, distinct = pd.factorize(values.to_numpy(dtype=object))
    converted = []
    for value in distinct:
        try:
            converted.append(as_faers_date(value))
        except ValueError as exc:
            raise SchemaError(f"Date column {name!r} has a value that is not a date: {exc}.") from None
    cells = np.array(converted + [None], dtype=object)  # factorize: -1 for a missing value
    return cells[which]


def combine_super_records(records: pd.DataFrame, schema: Schema,
                          hierarchies: Mapping[str, Taxonomy]) -> SuperRecords:
    """Combine the records of each (period, CaseID) into one super record.

    Args:
        records: one row per report; multi-valued cells are tuples/lists (or ``|``-joined text).
            A ``version`` column, when present, orders a case's reports (latest last).
        schema: column roles.
        hierarchies: taxonomy per categorical QID (``schema.load_hierarchies()``).

    Returns:
        The super records, ordered by period then case id.

    Raises:
        SchemaError: a schema column is missing, or a numeric QID is not numeric.
        HierarchyError: a categorical QID value is missing from its hierarchy.
    """
    check_record_values(records, schema, hierarchies)
    case_col, period_col = schema.case_id, schema.period
    order = [period_col, case_col] + (["version"] if "version" in records.columns else [])
    recs = records.sort_values(order, kind="stable").reset_index(drop=True)
    keys = recs[period_col].astype(str) + "\x1f" + recs[case_col].astype(str)
    group, first_index = _group_ids(keys.to_numpy())
    n_groups = len(first_index)
    sizes = np.bincount(group, minlength=n_groups)
    # Rows are sorted, so a case's rows are contiguous: [first_index[g], last_index[g]].
    last_index = (np.r_[first_index[1:], len(recs)] - 1) if n_groups else np.zeros(0, dtype=np.int64)
    multi_groups = np.flatnonzero(sizes > 1)

    out: dict[str, object] = {
        period_col: recs[period_col].astype(str).to_numpy()[first_index],
        case_col: recs[case_col].astype(str).to_numpy()[first_index],
        "n_reports": sizes.astype(np.int64),
    }
    if schema.identifiers:
        report_col = schema.identifiers[0]
        ids = recs[report_col].astype(str).to_numpy().tolist()
        out["report_ids"] = [tuple(ids[a:b]) for a, b in zip(first_index.tolist(),
                                                             (last_index + 1).tolist())]
    for name in schema.categorical_qids:
        out[name] = _lub_categorical(recs[name], hierarchies[name], first_index, last_index,
                                     multi_groups)
    for name in schema.numeric_qids:
        values = pd.to_numeric(recs[name], errors="coerce").to_numpy(dtype=float)
        lo = np.full(n_groups, np.nan)
        hi = np.full(n_groups, np.nan)
        finite = ~np.isnan(values)
        np.fmin.at(lo, group[finite], values[finite])
        np.fmax.at(hi, group[finite], values[finite])
        out[name] = pd.arrays.IntervalArray.from_arrays(lo, hi, closed="both")
    for name in schema.multi_valued:
        cells = recs[name].tolist()
        merged = _union_of_str_tuples(cells, group, first_index)
        if merged is None:  # cells of other kinds (text, lists, missing): one by one
            cells = map_cells(cells, as_value_set)
            merged = [cells[i] for i in first_index]
            for g in multi_groups:
                merged[g] = tuple(sorted(set().union(*cells[first_index[g]:last_index[g] + 1])))
        out[name] = merged
    for name in schema.insensitive + schema.private:
        out[name] = recs[name].to_numpy()[last_index]
    for name in schema.date_columns:
        out[name] = date_cells(recs[name], name)[last_index]
    frame = pd.DataFrame(out)
    for name in schema.multi_valued + ("report_ids",):
        if name in frame.columns:
            frame[name] = frame[name].astype(object)
    return SuperRecords(schema, frame, hierarchies)


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of an integer array: a sort and a neighbour test.

    numpy 2's ``np.unique`` hashes integer arrays, several times slower than this at 10^5-10^6
    values (it was a third of the super-record step at 100k cases, issue 30).
    """
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]]


def _union_of_str_tuples(cells: list, group: np.ndarray,
                         first_index: np.ndarray) -> list[tuple] | None:
    """Per group, :func:`as_value_set` of the union of its rows' cells, when every cell is a
    tuple of str (what the store gives); None otherwise.

    Terms are coded once (sorted vocabulary, so code order is string order) and the
    (group, term) pairs deduplicated and sorted in one numpy pass: normalizing cell by cell
    was a tenth of a release's CPU at 100k cases (issue 30). A group of one row whose cell is
    already normalized (stripped, non-empty terms in strictly increasing order) keeps that
    tuple, which equals the one built from the pairs.
    """
    if not set(map(type, cells)) <= {tuple}:
        return None
    lengths = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
    flat = list(chain.from_iterable(cells))
    if not set(map(type, flat)) <= {str}:
        return None
    stripped = {t: t.strip() for t in dict.fromkeys(flat)}
    vocabulary = sorted(set(stripped.values()) - {""})
    code_of = {t: i for i, t in enumerate(vocabulary)}
    raw_code = {t: code_of.get(v, -1) for t, v in stripped.items()}  # -1: blank, dropped
    codes = np.fromiter(map(raw_code.__getitem__, flat), dtype=np.int64, count=len(flat))
    row = np.repeat(np.arange(len(cells), dtype=np.int64), lengths)
    owner = group[row]
    kept = codes >= 0
    n_groups = len(first_index)
    width = max(len(vocabulary), 1)
    # rows whose cell is normalized as it is
    as_is = np.ones(len(cells), dtype=bool)
    changed = {t for t, v in stripped.items() if t != v}
    if changed:
        as_is[row[np.fromiter((t in changed for t in flat), dtype=bool, count=len(flat))]] = False
    as_is[row[~kept]] = False
    step = row[1:] == row[:-1]
    as_is[row[1:][step & (codes[1:] <= codes[:-1])]] = False
    single = np.bincount(group, minlength=n_groups) == 1
    rebuilt = ~(single & as_is[first_index])
    merged = np.fromiter(cells, dtype=object, count=len(cells))[first_index]
    if rebuilt.any():  # the other groups' union: (group, term) pairs sorted, made distinct
        items = kept & rebuilt[owner]
        pairs = distinct_sorted(owner[items] * width + codes[items])  # by group, then term
        at = np.flatnonzero(rebuilt)
        bounds = np.searchsorted(pairs // width, np.r_[at, at + 1]).reshape(2, -1)
        terms = np.array(vocabulary + [""], dtype=object)[pairs % width].tolist()
        for g, a, b in zip(at.tolist(), bounds[0].tolist(), bounds[1].tolist()):
            merged[g] = tuple(terms[a:b])
    return merged.tolist()


def _group_ids(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group id of each row of a sorted key array and the first row of each group."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.r_[True, keys[1:] != keys[:-1]]
    return np.cumsum(starts) - 1, np.flatnonzero(starts)


def _lub_categorical(column: pd.Series, taxonomy: Taxonomy, first_index: np.ndarray,
                     last_index: np.ndarray, multi_groups: np.ndarray) -> np.ndarray:
    """Least upper bound (LCA) of each group's labels; missing labels are ignored.

    A raw label that names an internal node with a self leaf (an ``Adult`` written by data or a
    store from before the MeSH age tree had self leaves) is the record value of that leaf, so it
    becomes the leaf here, before any generalization.
    """
    raw = column.to_numpy(dtype=object)
    values = np.empty(len(column), dtype=object)
    if set(map(type, raw.tolist())) <= {str, type(None)}:
        # each distinct label looked up once; a missing cell (-1) stays None
        codes, distinct = pd.factorize(raw)
        labels = np.empty(len(distinct) + 1, dtype=object)
        labels[:-1] = taxonomy.record_labels(distinct.tolist())
        values[:] = labels[codes]
    else:
        values[:] = taxonomy.record_labels(raw)
    result = values[first_index].copy()
    missing = pd.isna(values)
    for g in multi_groups:
        chunk = values[first_index[g]:last_index[g] + 1]
        present = [str(v) for v, m in zip(chunk, missing[first_index[g]:last_index[g] + 1]) if not m]
        result[g] = taxonomy.lca(present) if present else None
    result[pd.isna(result)] = None
    return result
