"""Property test: the store reads list cells back exactly as they are stored (issue 43).

``ReleaseStore.records`` reads a list column as integer codes (an ENUM of the period's terms),
or, with more terms, as joined text, or cell by cell when a list holds a missing item. Each
route must give what a plain read gives: each list as the tuple of its items, in order, repeats,
blanks, whitespace and non-ASCII text kept; a missing list and an empty list both ``()``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from medanon.data.loaders.faers import read_faers
from medanon.data.records import super_records_of_rows
from medanon.data.schema import Schema
from medanon.data.terms import TermCodes, codes_of
from medanon.pipeline.publish import input_digest
from medanon.store import ReleaseStore
from medanon.store import duckdb_store
from tests.conftest import FAERS_FIXTURES

#: terms that a join, a split, a strip or an SQL literal could get wrong
TERMS = ["A", "a", "", " ", "\t", " A", "A ", "é", "e\u0301", "ß", "\U0001d518", "x\x1fy",
         "a|b", "it's", "\\", "NULL", "中文", "Z" * 40]

lists = st.one_of(st.none(), st.lists(st.sampled_from(TERMS), max_size=6))
lists_with_missing = st.one_of(
    lists, st.lists(st.one_of(st.none(), st.sampled_from(TERMS)), min_size=1, max_size=4))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    quarter = read_faers(FAERS_FIXTURES, keep_missing=False).quarters[0]
    path = tmp_path_factory.mktemp("lists") / "s.duckdb"
    with ReleaseStore.create_or_open(path, Schema.default()) as opened:
        opened.ingest([quarter])
        yield opened, quarter.period.label


def _plain_read(opened: ReleaseStore, label: str, columns: list[str]) -> dict[str, list]:
    """The reference: each row's lists fetched as Python lists, in the records' order."""
    s = opened.schema
    rows = opened._con.execute(
        f"SELECT {', '.join(columns)} FROM records WHERE {s.period} = ? "
        f"ORDER BY {s.case_id}, {s.identifiers[0]}, version, rowid", [label]).fetchall()
    return {c: [tuple(r[i]) if r[i] is not None else () for r in rows]
            for i, c in enumerate(columns)}


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), missing=st.booleans(),
       route=st.sampled_from(["codes", "joined", "long lists"]))
def test_lists_read_back_as_stored(store, data, missing, route) -> None:
    opened, label = store
    columns = ["reactions", "drugs", "outcomes"]
    rowids = [r[0] for r in opened._con.execute(
        "SELECT rowid FROM records WHERE period = ? ORDER BY rowid", [label]).fetchall()]
    strategy = lists_with_missing if missing else lists
    for rowid in rowids:
        for column in columns:
            opened._con.execute(f"UPDATE records SET {column} = CAST(? AS VARCHAR[]) "
                                f"WHERE rowid = ?", [data.draw(strategy), rowid])
    with pytest.MonkeyPatch.context() as patch:   # (one example's route, not the next's)
        if route == "joined":       # more terms than an ENUM is made of: the joined-text route
            patch.setattr(duckdb_store, "_ENUM_TEXTS", 2)
        elif route == "long lists":  # any list of 2 items or more read another way
            patch.setattr(duckdb_store, "_VECTOR_ITEMS", 2)
        _check_the_reads(opened, label, columns, route)


def _check_the_reads(opened: ReleaseStore, label: str, columns: list[str], route: str) -> None:
    expected = _plain_read(opened, label, columns)
    has_missing = any(None in cell for cells in expected.values() for cell in cells)
    back = opened.records(label)
    picked = opened.record_columns(label, ["drugs"])
    for column in columns:
        got = back[column].tolist()
        assert got == expected[column]
        assert all(type(c) is tuple for c in got)
        if not has_missing:
            assert all(type(t) is str for c in got for t in c)
    if not has_missing:
        assert picked["drugs"].tolist() == expected["drugs"]
    # evaluate's read of the same columns as codes: the same frame once its tuples are made
    picked_codes = opened.coded_record_columns(label, ["drugs"])
    pd.testing.assert_frame_equal(picked_codes.frame, picked)
    assert "drugs" in picked_codes.base.columns or "drugs" in picked_codes.terms
    # the release's read: the same records, and codes that give the same super records and
    # input digest as the tuples do (issue 43)
    coded = opened.coded_records(label)
    pd.testing.assert_frame_equal(coded.frame, back)
    if route == "codes" and not has_missing:
        assert set(coded.terms) == set(opened.schema.multi_valued)
    hierarchies = opened.schema.load_hierarchies()
    plain, plain_rows = super_records_of_rows(back, opened.schema, hierarchies, report_ids=False)
    fast, fast_rows = super_records_of_rows(coded.frame, opened.schema, hierarchies,
                                            report_ids=False, terms=coded.terms)
    pd.testing.assert_frame_equal(fast.frame, plain.frame)
    assert fast_rows.tolist() == plain_rows.tolist()
    for column in opened.schema.multi_valued:
        assert fast.frame[column].tolist() == plain.frame[column].tolist()
    assert input_digest(coded.frame, terms=coded.terms) == input_digest(back)
    # the release reads the codes alone: the base lacks the columns read as codes, whose
    # tuples are never made, and gives the same super records and digest (issue 43)
    fresh = opened.coded_records(label)
    assert [c for c in fresh.columns if c not in fresh.base.columns] == [
        c for c in fresh.columns if c in fresh.terms]
    from_codes, from_codes_rows = super_records_of_rows(fresh, opened.schema, hierarchies,
                                                        report_ids=False)
    pd.testing.assert_frame_equal(from_codes.frame, plain.frame)
    assert from_codes_rows.tolist() == plain_rows.tolist()
    for column in opened.schema.multi_valued:
        assert from_codes.frame[column].tolist() == plain.frame[column].tolist()
    assert input_digest(fresh) == input_digest(back)
    assert "frame" not in vars(fresh)   # (neither read made the rows' tuples)
    pd.testing.assert_frame_equal(fresh.frame, back)


def test_a_period_of_empty_lists_reads_as_empty_tuples(store) -> None:
    opened, label = store
    opened._con.execute("UPDATE records SET reactions = NULL, drugs = [], outcomes = [] "
                        "WHERE period = ?", [label])
    back = opened.records(label)
    for column in ["reactions", "drugs", "outcomes"]:
        assert back[column].tolist() == [()] * len(back)


def test_codes_that_do_not_hold_the_cells_are_not_read() -> None:
    """codes_of gives a column's codes only while they hold its cells: rows dropped or put in
    another order since the read (a case budget, a caller's own frame) are read as tuples."""
    coded = TermCodes(["a", "b"], np.array([0, 1, 3, 3]), np.array([0, 0, 1], dtype=np.int32))
    cells = coded.tuples()
    assert cells.tolist() == [("a",), ("a", "b"), ()]
    assert codes_of({"c": coded}, cells, "c") is coded
    assert codes_of({"c": coded}, cells[::-1], "c") is None
    assert codes_of({"c": coded}, cells[:2], "c") is None
    assert codes_of({"c": coded}, cells, "d") is None
    assert codes_of(None, cells, "c") is None


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.integers(0, 3), max_size=4), max_size=12), st.booleans(),
       st.sampled_from([63, 6, 1]))
def test_distinct_rows_are_the_distinct_code_lists(rows: list[list[int]], collide: bool,
                                                   packed_bits: int) -> None:
    """TermCodes numbers rows as pd.factorize numbers their tuples: rows keyed by their packed
    codes, longer rows by their hashes (``packed_bits`` 6 packs two terms of 3 bits, the
    codes up to 3, or more of fewer bits; 1 packs one), also when every longer row hashes
    alike (the exact numbering by the codes' bytes)."""
    from medanon.data import terms as terms_module

    ptr = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
    codes = np.array([c for r in rows for c in r], dtype=np.int32)
    expected, _ = pd.factorize(np.array([tuple(r) for r in rows] + [None], dtype=object)[:-1])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(terms_module, "_PACKED_BITS", packed_bits)
        if collide:
            patch.setattr(terms_module, "_PLACE_WEIGHT", 0)
            patch.setattr(terms_module, "_LENGTH_WEIGHT", 0)
        coded = TermCodes(["w", "x", "y", "z"], ptr, codes)
        which, first = coded.distinct_rows()
        assert which.tolist() == expected.tolist()
        assert coded.tuples().tolist() == [tuple("wxyz"[c] for c in r) for r in rows]


@pytest.mark.parametrize("order", ["scan", "reversed", "shuffled"])
def test_coded_lists_in_any_order_of_the_rows(tmp_path, order) -> None:
    """The list codes read in the scan's order (the items taken as fetched) and in any other
    order of the rows (the items gathered) are the same rows' codes (issue 43)."""
    quarter = read_faers(FAERS_FIXTURES, keep_missing=False).quarters[0]
    with ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.default()) as opened:
        opened.ingest([quarter])
        label = quarter.period.label
        where = f"FROM records WHERE {opened.schema.period} = ?"
        rowids = np.array([r[0] for r in opened._con.execute(
            f"SELECT rowid {where} ORDER BY rowid", [label]).fetchall()], dtype=np.int64)
        chosen = {"scan": rowids, "reversed": rowids[::-1].copy(),
                  "shuffled": np.random.default_rng(7).permutation(rowids)}[order]
        for column in ["reactions", "drugs", "outcomes"]:
            vocabulary = opened._list_vocabulary([column], where, label)
            texts = [str(t) for t in vocabulary]
            enum = f"ENUM({', '.join(duckdb_store._literal(t) for t in texts)})"
            coded = opened._coded_lists(column, texts, enum, where, label, chosen)
            assert coded is not None
            lists = dict(opened._con.execute(f"SELECT rowid, {column} {where}",
                                             [label]).fetchall())
            assert coded.tuples().tolist() == [tuple(lists[r] or ()) for r in chosen.tolist()]
