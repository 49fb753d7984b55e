"""Property tests: super records combine a case's reports without losing or inventing anything."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from medanon.data.records import combine_super_records, stable_sort_order, super_records_of_rows
from medanon.data.schema import Schema
from medanon.hierarchies import mesh_age_tree

SCHEMA = Schema.papers()
HIERARCHIES = SCHEMA.load_hierarchies()
AGES = list(mesh_age_tree().values)
TERMS = ["Nausea", "Headache", "Fatigue", "Death", "Rash", "Pain"]

report = st.fixed_dictionaries({
    "case_id": st.sampled_from(["1", "2", "3", "4"]),
    "period": st.sampled_from(["2020Q1", "2020Q2"]),
    "age": st.one_of(st.none(), st.sampled_from(AGES)),
    "sex": st.one_of(st.none(), st.sampled_from(["F", "M"])),
    "weight": st.one_of(st.none(), st.floats(1, 200, allow_nan=False).map(lambda w: round(w, 2))),
    "reactions": st.lists(st.sampled_from(TERMS), max_size=4).map(tuple),
    "indications": st.lists(st.sampled_from(TERMS), max_size=3).map(tuple),
    "drugs": st.lists(st.sampled_from(["A", "B", "C"]), max_size=3).map(tuple),
    "version": st.integers(1, 9),
})


def _frame(reports: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(reports)
    frame["report_id"] = [f"r{i}" for i in range(len(frame))]
    frame["age_years"] = 40.0
    frame["weight"] = frame["weight"].astype(float)
    return frame


@settings(max_examples=150, deadline=None)
@given(st.lists(report, min_size=1, max_size=25))
def test_super_records_cover_every_report(reports: list[dict]) -> None:
    records = _frame(reports)
    supers = combine_super_records(records, SCHEMA, HIERARCHIES).frame
    keys = set(zip(records["period"], records["case_id"]))
    assert len(supers) == len(keys)
    assert supers["n_reports"].sum() == len(records)
    age_tree = HIERARCHIES["age"]
    for row in supers.itertuples():
        mine = records[(records["period"] == row.period) & (records["case_id"] == row.case_id)]
        assert row.n_reports == len(mine)
        assert sorted(row.report_ids) == sorted(mine["report_id"])
        for column in ("reactions", "indications", "drugs"):
            assert set(getattr(row, column)) == set().union(*map(set, mine[column]))
            assert list(getattr(row, column)) == sorted(getattr(row, column))
        ages = [a for a in mine["age"] if a is not None and not pd.isna(a)]
        if ages:
            assert row.age == age_tree.lca(ages)
            assert all(age_tree.covers(row.age, a) for a in ages)
        else:
            assert pd.isna(row.age)  # every report lacks it: the super record lacks it too
        weights = [w for w in mine["weight"] if not math.isnan(w)]
        interval = row.weight
        if weights:
            assert (interval.left, interval.right) == (min(weights), max(weights))
        else:
            assert pd.isna(interval)


@settings(max_examples=50, deadline=None)
@given(st.lists(report, min_size=1, max_size=10))
def test_single_report_cases_keep_their_exact_values(reports: list[dict]) -> None:
    records = _frame(reports).drop_duplicates(["period", "case_id"])
    supers = combine_super_records(records, SCHEMA, HIERARCHIES).frame.set_index(["period", "case_id"])
    for rec in records.itertuples():
        row = supers.loc[(rec.period, rec.case_id)]
        if pd.isna(rec.age):
            assert pd.isna(row["age"])
        else:
            assert row["age"] == rec.age
        if not math.isnan(rec.weight):
            assert row["weight"].left == row["weight"].right == rec.weight


TEXTS = st.text(alphabet=st.sampled_from(["a", "b", "Z", "é", "\x00", " ", "1", "\U0001f600"]),
                max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(TEXTS, TEXTS, st.integers(-3, 3), st.floats(-2, 2, allow_nan=False)),
                min_size=2, max_size=30),
       st.sampled_from(["str", "object"]))
def test_the_records_sort_is_pandas_stable_sort(rows: list[tuple], dtype: str) -> None:
    """The super records' sort of the key columns (text ranked per distinct value, then
    lexsort) puts the rows where ``sort_values(kind="stable")`` puts them: NUL-ended and
    non-ASCII texts, equal keys kept in row order, integers and floats as keys."""
    frame = pd.DataFrame(rows, columns=["p", "c", "v", "f"])
    frame["p"] = frame["p"].astype(dtype)
    frame["c"] = frame["c"].astype(dtype)
    for keys in (["p", "c", "v"], ["c", "f"], ["v", "p"]):
        expected = frame[keys].reset_index(drop=True).sort_values(keys, kind="stable")
        got = stable_sort_order(frame, keys)
        order = np.arange(len(frame)) if got is None else got
        assert order.tolist() == expected.index.tolist()


@settings(max_examples=150, deadline=None)
@given(st.lists(report, min_size=1, max_size=25),
       st.lists(st.sampled_from(["", " ", "\t", "\x1f", "\xa0"]), min_size=2, max_size=2),
       st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_super_record_of_each_row_orders_the_release_as_the_case_ids_do(
        reports: list[dict], pads: list[str], one_period: bool, seed: int) -> None:
    """The release's shuffle (``publish._unordered``) read from each row's super record gives
    the order it reads from the rows' CaseIDs (stripped), whatever the CaseIDs and periods:
    blanks around a CaseID (another case may strip to it) and a case in two periods take the
    CaseIDs' own path."""
    from medanon.pipeline.publish import _unordered
    from medanon.random import randomness

    records = _frame(reports)
    if one_period:
        records["period"] = "2020Q1"
    padded = records["case_id"] == "2"
    records.loc[padded, "case_id"] = pads[0] + "2" + pads[1]
    supers, super_of_row = super_records_of_rows(records, SCHEMA, HIERARCHIES)
    assert supers.frame.equals(combine_super_records(records, SCHEMA, HIERARCHIES).frame)
    for row, case, period in zip(super_of_row.tolist(), records["case_id"], records["period"]):
        assert (supers.frame["case_id"].iloc[row], supers.frame["period"].iloc[row]) == (case, period)
    read = _unordered(supers, records, SCHEMA, randomness(seed), super_of_row).frame
    hashed = _unordered(supers, records, SCHEMA, randomness(seed)).frame
    assert read.equals(hashed)
