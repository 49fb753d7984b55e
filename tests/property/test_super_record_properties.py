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


@settings(max_examples=150, deadline=None)
@given(st.lists(report, min_size=1, max_size=25),
       st.lists(st.sampled_from(["", " ", "\t", "\xa0"]), min_size=2, max_size=2),
       st.booleans(), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_super_records_of_real_case_ids_are_those_of_their_pseudonyms(
        reports: list[dict], pads: list[str], one_period: bool, keyed_before: bool,
        seed: int) -> None:
    """A pseudonymous release makes its super records from the real CaseIDs and maps them
    afterwards (``publish._pseudonymous_super_records``): the frame, row for row, and the draw
    from the release's generator are those made from the records with their published
    CaseIDs. Where that need not hold (a CaseID with blanks around it, which its stripped twin
    shares a pseudonym with; a case in two periods) it declines and draws nothing."""
    from medanon.pipeline.case_ids import CaseIds
    from medanon.pipeline.publish import _pseudonymous_super_records, _unordered
    from medanon.random import randomness

    records = _frame(reports).sort_values(["case_id", "report_id"], kind="stable")
    records = records.reset_index(drop=True)
    if one_period:
        records["period"] = "2020Q1"
    padded = records["case_id"] == "2"
    records.loc[padded, "case_id"] = pads[0] + "2" + pads[1]
    key = bytes(range(32))
    published_ids = CaseIds("pseudonym", key)
    expected_rng = randomness(seed)
    published = published_ids.records(records, "case_id")
    supers, super_of_row = super_records_of_rows(published, SCHEMA, HIERARCHIES, report_ids=False)
    expected = _unordered(supers, published, SCHEMA, expected_rng, super_of_row).frame
    real_ids = CaseIds("pseudonym", key)
    if keyed_before:   # the release's check hashed the period's CaseIDs (sorted) first
        real_ids.of(sorted(set(records["case_id"])))
    rng = randomness(seed)
    got = _pseudonymous_super_records(records, SCHEMA, HIERARCHIES, rng, real_ids, None)
    stripped = {c.strip() for c in records["case_id"]}
    alike = len(stripped) < len(set(records["case_id"]))
    two_periods = len(set(zip(records["period"], records["case_id"]))) > len(set(records["case_id"]))
    if got is None:
        assert alike or two_periods
        assert rng.generator.random() == randomness(seed).generator.random()   # nothing drawn
        return
    assert not alike and not two_periods
    pd.testing.assert_frame_equal(got.frame, expected)
    assert rng.generator.random() == expected_rng.generator.random()
