"""The vectorized steps of the release path give what their cell-by-cell definitions give
(issue 30): the same cells, the same term codes and counts, the same input digest bytes."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from medanon.anonymize.common import TermSuppression, _SensitiveTerms
from medanon.data.records import (_union_of_str_tuples, as_value_set, factorize_cells,
                                  factorize_texts,
                                  first_appearances, map_cells, stable_sort_order)
from medanon.data.terms import CodedRecords, TermCodes
from medanon.errors import SchemaError
from medanon.pipeline.publish import INPUT_DIGEST_VERSION, _canonical_order, input_digest
from medanon.published.format import (_format_multi_many, _multi_cell_array, format_multi,
                                     format_numeric, format_numeric_cells)


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.one_of(hs.none(), hs.integers(0, 6)), max_size=30))
def test_first_appearances_are_where_each_factorize_code_first_occurs(values) -> None:
    """The shared idiom of the columnar passes: for pd.factorize's codes (-1 for a missing
    value), the position of each code's first occurrence, code by code."""
    codes, uniques = pd.factorize(pd.Series(values, dtype="Int64"))
    got = first_appearances(codes)
    want = [int(np.flatnonzero(codes == c)[0]) for c in range(len(uniques))]
    assert got.tolist() == want


def test_map_cells_equals_calling_fn_per_cell() -> None:
    cells = [("b", "a"), "x|y", None, float("nan"), ("b", "a"), [1, 2], "x|y", (), ("a", ["u"])]
    assert map_cells(cells, repr) == [repr(v) for v in cells]
    assert map_cells(cells[:8], as_value_set) == [as_value_set(v) for v in cells[:8]]
    assert map_cells(iter(["a", "a"]), str.upper) == ["A", "A"]
    assert map_cells([0.0, -0.0], str) == ["0.0", "-0.0"]  # numbers are never shared
    assert map_cells([], str) == []
    with pytest.raises(SchemaError):
        map_cells([("a",), 3.0], as_value_set)


def test_union_of_str_tuples_is_the_value_set_of_each_groups_cells() -> None:
    rng = np.random.default_rng(3)
    words = ["b", "a", " a ", "", "  ", "c d", "Z", "é"]
    cells = [tuple(rng.choice(words, size=rng.integers(0, 4)).tolist()) for _ in range(300)]
    group = np.sort(rng.integers(0, 120, size=300))
    _, group = np.unique(group, return_inverse=True)
    n_groups = int(group.max()) + 1
    first = np.searchsorted(group, np.arange(n_groups))
    expected = [as_value_set([t for i in np.flatnonzero(group == g) for t in cells[i]])
                for g in range(n_groups)]
    assert _union_of_str_tuples(cells, group, first) == expected
    # the cells in another order, with the positions that put them in the groups' order
    shuffle = rng.permutation(len(cells))
    shuffled = np.empty(len(cells), dtype=object)
    shuffled[:] = [cells[i] for i in shuffle]
    rows = np.argsort(shuffle)  # shuffled[rows] == cells
    assert _union_of_str_tuples(shuffled, group, first, rows) == expected
    two = (np.array([0, 1]), np.array([0, 1]))
    assert _union_of_str_tuples([("a",), "a|b"], *two) is None
    assert _union_of_str_tuples([("a",), (None,)], *two) is None
    assert _union_of_str_tuples([(), ("",)], np.array([0, 0]), np.array([0])) == [()]
    assert _union_of_str_tuples([("a", "b"), ("b", "a"), ("a", "a"), (" a",), ("a", "")],
                                np.arange(5), np.arange(5)) == [("a", "b")] * 2 + [("a",)] * 3


def test_sensitive_terms_pool_count_and_code_as_term_by_term() -> None:
    rng = np.random.default_rng(5)
    words = [f"t{i}" for i in range(12)]
    n = 200
    per_column = {c: [tuple(sorted(set(rng.choice(words, size=rng.integers(0, 4)).tolist())))
                      for _ in range(n)] for c in ("indications", "reactions")}
    pooled = [tuple(sorted(set(per_column["indications"][i]) | set(per_column["reactions"][i])))
              for i in range(n)]
    counts: dict[str, int] = {}
    for ts in pooled:
        for t in ts:
            counts[t] = counts.get(t, 0) + 1
    terms = _SensitiveTerms.of(per_column, n)
    assert list(terms.record_terms()) == pooled
    assert [terms.record_terms()[r] for r in range(-n, n)] == pooled + pooled
    assert list(terms.counts().items()) == list(counts.items())  # same order: θ rules read it
    removed = {"t3", "t7"}
    kept = terms.without(removed)
    assert list(kept.record_terms()) == [tuple(t for t in ts if t not in removed)
                                         for ts in pooled]
    assert kept.columns() == {c: [tuple(t for t in v if t not in removed) for v in cells]
                              for c, cells in per_column.items()}
    vocabulary = sorted(set(words) - removed)
    ptr, ids = kept.csr(vocabulary)
    assert [tuple(vocabulary[i] for i in ids[ptr[r]:ptr[r + 1]]) for r in range(n)] \
        == list(kept.record_terms())
    empty = _SensitiveTerms.of({"reactions": []}, 0)
    assert list(empty.record_terms()) == [] and empty.counts() == {}


@settings(max_examples=150, deadline=None)
@given(hs.data())
def test_suppressed_term_count_of_case_terms_is_the_per_case_count(data) -> None:
    """The count of suppressed (case, term) pairs read from the term codes equals the
    definition case by case (release-wide terms, a case's own terms, placed cases only), and
    the term counts come in order of first appearance."""
    words = ["a", "b", "c", "d", "e"]
    n = data.draw(hs.integers(0, 12))
    cell = hs.lists(hs.sampled_from(words), max_size=4).map(lambda v: tuple(sorted(set(v))))
    per_column = {c: data.draw(hs.lists(cell, min_size=n, max_size=n)) for c in ("x", "y")}
    sensitive = _SensitiveTerms.of(per_column, n)
    terms = sensitive.record_terms()
    pooled = list(terms)
    counts: dict[str, int] = {}
    for ts in pooled:  # the θ rules read the counts in this order
        for t in ts:
            counts[t] = counts.get(t, 0) + 1
    assert list(sensitive.counts().items()) == list(counts.items())
    some = hs.frozensets(hs.sampled_from(words + ["z"]))
    suppression = TermSuppression(
        data.draw(some), data.draw(hs.dictionaries(hs.integers(0, max(n - 1, 0)), some))
        if n else {})
    placed = np.array(data.draw(hs.lists(hs.booleans(), min_size=n, max_size=n)), dtype=bool)
    assert suppression.count(terms, placed) == suppression.count(pooled, placed)


def test_format_numeric_cells_equals_format_numeric_per_cell() -> None:
    intervals = pd.Series(pd.arrays.IntervalArray.from_arrays(
        [1.0, np.nan, 2.5, 1.0, -0.0, 0.0], [1.0, np.nan, 60, 1.0, 3, 3.0], closed="both"))
    mixed = pd.Series(np.array([pd.Interval(1.0, 2.0, closed="both"), None, "*", 3.25,
                                pd.Interval(1, 2, closed="both"), float("nan"), -0.0], dtype=object))
    for column in (intervals, mixed, pd.Series([], dtype=object)):
        assert format_numeric_cells(column) == [format_numeric(v)
                                                for v in column.to_numpy(dtype=object)]


def _records() -> pd.DataFrame:
    records = pd.DataFrame({
        "case_id": ["2", "1", "1", "3"], "period": ["2020Q1"] * 4,
        "report_id": ["21", "12", "11", "31"], "version": [1, 2, 1, 1],
        "sex": ["F", None, "M", "F"], "weight": [53.0, np.nan, 1e-7, 80.5],
        "reactions": [("a,\"b\"", "c\nd"), (), ("x",), ("it's",)],
        "drugs": [("A",), None, ("B", "C"), ("A",)],
        "note": ["", "q\"uote", "com,ma", None]})
    records["drugs"] = records["drugs"].astype(object)
    return records


def test_input_digest_is_pinned_for_its_version() -> None:
    """The bytes ``columns-v3`` hashes do not move silently: a change needs a new version."""
    assert INPUT_DIGEST_VERSION == "columns-v3"
    assert input_digest(_records()) == (
        "0cf5ef57bc96dd08796b530ec763fddef9b2bf094321a809055484a90735ca56")
    assert input_digest(_records().iloc[:0]) != input_digest(_records().iloc[:1])


@settings(max_examples=80, deadline=None, derandomize=True)
@given(hs.lists(hs.one_of(hs.text(alphabet="ab é", max_size=3), hs.none(),
                             hs.tuples(hs.just("a"))), max_size=8), hs.booleans())
def test_the_digest_factorizes_as_pandas(values, ordered) -> None:
    """The digest's shortcut for a column of increasing texts gives pd.factorize's codes and
    distinct values, on any column (sorted, repeated, missing or mixed cells)."""
    if ordered and all(isinstance(v, str) for v in values):
        values = sorted(values)
    column = np.empty(len(values), dtype=object)
    column[:] = values
    codes, distinct = factorize_texts(column)
    expected_codes, expected = pd.factorize(column)
    assert codes.tolist() == expected_codes.tolist()
    assert list(distinct) == list(expected)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(hs.lists(hs.one_of(hs.text(alphabet="ab é", max_size=3), hs.none(), hs.just(float("nan")),
                          hs.lists(hs.sampled_from(["a", "b"]), max_size=2).map(tuple)),
                min_size=1, max_size=6), hs.integers(0, 2 ** 32 - 1))
def test_factorizing_shared_cells_gives_pandas_codes(pool, seed) -> None:
    """Cells sharing a few objects (equal values held by distinct objects too: each pool item
    is copied once) are factorized once per object, and the codes and distinct values are
    pd.factorize's."""
    objects = [*pool, *(tuple(list(v)) if isinstance(v, tuple) else
                        ((v + "x")[:-1] if isinstance(v, str) else v) for v in pool)]
    column = np.empty(3000, dtype=object)
    column[:] = [objects[i] for i in np.random.default_rng(seed).integers(len(objects),
                                                                          size=len(column))]
    codes, distinct = factorize_cells(column)
    expected_codes, expected = pd.factorize(column)
    assert codes.tolist() == expected_codes.tolist()
    assert [repr(v) for v in distinct] == [repr(v) for v in expected]


_TEXT = hs.text(alphabet=hs.sampled_from(list('a,"\r\n\' |é')), max_size=4)
_ROWS = hs.lists(hs.tuples(hs.sampled_from("123"), hs.one_of(hs.none(), _TEXT),
                           hs.one_of(hs.none(), hs.lists(_TEXT, max_size=3).map(tuple))),
                 min_size=1, max_size=12, unique_by=lambda r: r[0] + repr(r[1:]))


def _frame(rows: list) -> pd.DataFrame:
    records = pd.DataFrame(rows, columns=["case_id", "note", "reactions"], dtype=object)
    records.insert(1, "period", "2020Q1")
    records.insert(2, "report_id", [f"{c}-{i}" for i, c in enumerate(records["case_id"])])
    return records


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_ROWS, hs.randoms(use_true_random=False))
def test_input_digest_ignores_the_row_order(rows, random) -> None:
    records = _frame(rows)
    order = list(range(len(records)))
    random.shuffle(order)
    assert input_digest(records.iloc[order]) == input_digest(records)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_ROWS, hs.randoms(use_true_random=False))
def test_input_digest_of_coded_lists_in_any_row_order(rows, random) -> None:
    """A list column hashed from its codes gives the digest of its tuples, with the rows in
    the canonical order (the codes' own numbering is hashed as it is) or in any other order
    (numbered again in the canonical order); as a frame's column or as CodedRecords' codes."""
    records = _frame([(case, note, cell or ()) for case, note, cell in rows])
    expected = input_digest(records)
    cells = records["reactions"].tolist()
    vocabulary = sorted({t for cell in cells for t in cell})
    code = {t: i for i, t in enumerate(vocabulary)}
    ptr = np.r_[0, np.cumsum([len(c) for c in cells])].astype(np.int64)
    coded = TermCodes(vocabulary, ptr,
                      np.array([code[t] for c in cells for t in c], dtype=np.int32))
    shuffled = list(range(len(records)))
    random.shuffle(shuffled)
    for order in (_canonical_order(records), np.array(shuffled, dtype=np.int64)):
        frame = records.iloc[order].reset_index(drop=True)
        terms = {"reactions": coded.take(order)}
        assert input_digest(frame, terms=terms) == expected
        read = CodedRecords(frame.drop(columns="reactions"), terms, tuple(frame.columns))
        assert input_digest(read) == expected


@settings(max_examples=80, deadline=None, derandomize=True)
@given(_ROWS, hs.data())
def test_input_digest_tells_neighbouring_inputs_apart(rows, data) -> None:
    """Inputs that differ in one cell (text, tuple, missing, a tuple's items split or joined,
    a text that reads as a tuple's repr) have different digests."""
    records = _frame(rows)
    i = data.draw(hs.integers(0, len(records) - 1))
    column = data.draw(hs.sampled_from(["note", "reactions"]))
    old = records.at[i, column]
    candidates = [None, "", "('a',)", ("a",), ("a", ""), ("",), ("a,",), "a", ()]
    if isinstance(old, tuple) and old:
        candidates += [old[:-1], (*old, "a"), ("".join(old),), old[::-1]]
    if isinstance(old, str):
        candidates += [old + "a", (old,), old[:-1]]
    new = data.draw(hs.sampled_from([c for c in candidates
                                     if c != old and not (c is None and old is None)]))
    changed = records.copy()
    changed[column] = changed[column].astype(object)
    changed.at[i, column] = new
    assert input_digest(changed) != input_digest(records)


_KEY = hs.one_of(hs.text(alphabet=hs.sampled_from(["1", "2", "a", "é", "\x00", " ", "Z"]),
                         max_size=3), hs.none())


@settings(max_examples=80, deadline=None, derandomize=True)
@given(hs.lists(hs.tuples(_KEY, _KEY, _KEY), min_size=0, max_size=15))
def test_the_digest_order_is_sort_values_order(keys) -> None:
    """The fast order of the digest's rows (numpy strings) is pandas' stable sort by the first
    three columns, also with ties, trailing NULs, non-ASCII text and missing cells."""
    records = pd.DataFrame(keys, columns=["case_id", "period", "report_id"], dtype=object)
    records["weight"] = np.arange(len(records), dtype=float)
    records.index = np.arange(len(records))[::-1]   # the input's own index plays no part
    expected = records.reset_index(drop=True).sort_values(
        ["case_id", "period", "report_id"], kind="stable").index.to_numpy()
    assert _canonical_order(records).tolist() == expected.tolist()


def test_multi_cells_format_as_format_multi_per_cell() -> None:
    cells = [("a", "b"), ("b", "a"), ("a", "a"), (), ("x",), "a|b", ("a", 1), ("é", "z"),
             ("b", "c"), ("c", "b", "c"), None, float("nan"), ["z", "y"]]
    assert _format_multi_many(cells) == [format_multi(c) for c in cells]
    assert map_cells(cells, format_multi, many=_format_multi_many) == [format_multi(c)
                                                                      for c in cells]
    assert _format_multi_many([]) == []


@pytest.mark.parametrize("cells", [
    [("a", "b"), ("b", "a"), ("a", "a"), (), ("x",), ("é", "z"), ("c", "b", "c")],
    [("a", "b"), "a|b", None, ("a", 1)],
    [],
])
def test_a_multi_column_formats_as_format_multi_per_cell(cells) -> None:
    """The all-tuples path and the general one give what format_multi gives cell by cell,
    with the tuple objects shared among cells as the store shares them."""
    shared = cells + cells[::-1]
    array = np.empty(len(shared), dtype=object)
    array[:] = shared
    assert _multi_cell_array(array).tolist() == [format_multi(c) for c in shared]


@pytest.mark.parametrize("late", [False, True])
def test_rows_out_of_order_after_the_first_rows_are_sorted(late) -> None:
    """stable_sort_order reads the first rows first: rows in order there and out of order
    further on are still sorted, rows in order everywhere are left as they are."""
    n = 3000
    records = pd.DataFrame({"period": ["2020Q1"] * n,
                            "case_id": [f"{i:06d}" for i in range(n)],
                            "version": np.zeros(n, dtype=np.int64)})
    if late:
        records.loc[n - 2, "case_id"], records.loc[n - 1, "case_id"] = f"{n - 1:06d}", f"{n - 2:06d}"
    order = stable_sort_order(records, ["period", "case_id", "version"])
    expected = records.sort_values(["period", "case_id", "version"], kind="stable").index
    if late:
        assert order is not None and order.tolist() == expected.tolist()
    else:
        assert order is None


@pytest.mark.parametrize("odd", [(), ("",), ("a", ""), ("x\x1fy",), ("a\x1f", "b")])
def test_list_cells_round_trip_through_the_store(tmp_path, odd) -> None:
    """List cells go to and come from DuckDB as joined text when that is lossless (issue 30):
    an empty list, an empty item and an item holding the separator come back as they were."""
    from medanon.data.loaders.faers import read_faers
    from medanon.data.schema import Schema
    from medanon.store import ReleaseStore
    from tests.conftest import FAERS_FIXTURES

    ingest = read_faers(FAERS_FIXTURES, keep_missing=False)
    quarter = ingest.quarters[0]
    quarter.records.at[quarter.records.index[0], "reactions"] = odd
    with ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.default()) as store:
        store.ingest([quarter])
        back = store.records(quarter.period.label).set_index("report_id")
    original = quarter.records.set_index("report_id")
    for name in Schema.default().multi_valued:
        assert {r: back.at[r, name] for r in back.index} \
            == {r: tuple(original.at[r, name]) for r in back.index}


@settings(max_examples=80, deadline=None, derandomize=True)
@given(hs.dictionaries(hs.sampled_from(["2019Q4", "2020Q1", "2020Q3", "2022Q2", "2021Q1"]),
                       hs.lists(hs.sampled_from(["1", "2", "3", " 3", "10"]), max_size=6)))
def test_longest_case_span_is_the_widest_gap_between_a_case_ids_periods(case_ids) -> None:
    from medanon.periods import parse_period
    from medanon.published.links import longest_case_span

    seen: dict[str, list[int]] = {}
    for label, ids in case_ids.items():
        for c in ids:
            seen.setdefault(c, []).append(parse_period(label).ordinal)
    expected = max((max(o) - min(o) for o in seen.values()), default=0)
    assert longest_case_span(case_ids) == expected


def test_map_cells_calls_fn_once_per_object_and_per_text() -> None:
    """A tuple object held by many cells is formatted once; equal texts in distinct objects
    once; every cell still gets fn of its own value (issue 43)."""
    shared = ("a", "b")
    texts = ["".join(["x", "y"]) for _ in range(3)]  # equal, distinct objects
    equal = tuple(["a", "b"])  # equal to shared, another object: formatted on its own
    cells = [shared, texts[0], shared, None, texts[1], equal, texts[2], None, 1.5]
    calls: list[object] = []

    def fn(v: object) -> str:
        calls.append(v)
        return repr(v)

    assert map_cells(cells, fn) == [repr(v) for v in cells]
    assert sorted(map(repr, calls)) == sorted(map(repr, [shared, "xy", None, equal, 1.5]))
    assert map_cells(np.array(cells, dtype=object), fn) == [repr(v) for v in cells]


def test_store_positions_put_a_querys_rows_in_the_sorted_order() -> None:
    from medanon.errors import StoreError
    from medanon.store.duckdb_store import _positions

    ordered = np.array([7, 2, 9, 4])
    for order in ([2, 4, 7, 9], [9, 2, 7, 4]):
        rowids = np.array(order)
        assert rowids[_positions(rowids, ordered)].tolist() == ordered.tolist()
    with pytest.raises(StoreError):
        _positions(np.array([2, 4, 7, 8]), ordered)
    assert _positions(np.array([], dtype=np.int64), np.array([], dtype=np.int64)).tolist() == []
