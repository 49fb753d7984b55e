"""Issue 43: :func:`medanon.metrics.signal_table.signal_table` reads a series a release at a
time into term codes and counts every scope from them. These tests hold it to the table of the
whole series at once: each scope's rows stacked into one frame (a case's latest row kept for
dedup and cumulative), counted by :func:`~medanon.metrics.disproportionality.pair_counts` with
the strata read from the stacked rows, as the table was counted before the change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from medanon.data.schema import Schema
from medanon.metrics.disproportionality import pair_counts
from medanon.metrics.signal_table import AGE_GROUP_COLUMN, _variable_values, signal_table

HIER = Schema.default().load_hierarchies()
COLUMNS = ["period", "case_id", "group", "age", "sex", "init_fda_dt", "drugs", "reactions"]
#: counts and expected counts: what the reading decides (every other column is a function of
#: them and the prior, which is fitted on them)
COUNTED = ["drug", "reaction", "n", "e", "e_crude", "n_drug", "n_reaction", "n_total"]
STRATIFY = {"age": "age", "sex": "sex", "year": "init_fda_dt"}

# spellings that differ in case and spaces, blanks and the suppression mark
DRUG = st.sampled_from(["ASPIRIN", "aspirin", " Aspirin ", "WARFARIN", "warfarin", "IBUPROFEN",
                        "HEPARIN", "*", ""])
REACTION = st.sampled_from(["Nausea", "nausea", "Rash", " RASH", "Haemorrhage", "Headache", "*",
                            ""])
AGE = st.sampled_from(["Child", "Adult", "Aged", "Middle Aged", "Young Adult", "Aged (65-79)",
                       "Adolescent", "*", ""])
REPORT = st.tuples(
    st.integers(0, 11),                                   # the case: follow-ups reuse it
    AGE, st.sampled_from(["F", "M", "", "*"]),
    st.sampled_from(["20200105", "202103", "2022", "", "*"]),
    st.lists(DRUG, min_size=0, max_size=3), st.lists(REACTION, min_size=0, max_size=3))
SERIES = st.lists(st.lists(REPORT, min_size=0, max_size=9), min_size=1, max_size=4)


def _series(quarters: list[list[tuple]]) -> dict[str, pd.DataFrame]:
    out = {}
    for q, reports in enumerate(quarters):
        label = f"2020Q{q + 1}"
        rows = [(label, f"c{case}", "1", age, sex, date, "|".join(d), "|".join(r))
                for case, age, sex, date, d, r in reports]
        # one row per case and period, as a release publishes
        out[label] = pd.DataFrame(rows, columns=COLUMNS).drop_duplicates("case_id", keep="last")
    return out


def _whole_strata(rows: pd.DataFrame, variables: tuple[str, ...]) -> tuple[np.ndarray, int, dict]:
    """The strata of stacked rows: the variables' values joined per row, numbered in sorted
    order over the whole array (the reading before issue 43)."""
    values = [_variable_values(rows, v, STRATIFY.get(v, v), HIER) for v in variables]
    joined = values[0].astype(str)
    for v in values[1:]:
        joined = np.char.add(np.char.add(joined, " & "), v.astype(str))
    codes, labels = pd.factorize(joined, sort=True)
    unknown = {v: int((x == "unknown").sum()) for v, x in zip(variables, values)}
    return codes.astype(np.int64), len(labels), unknown


def _whole_scopes(releases: Mapping[str, pd.DataFrame]
                  ) -> Iterator[tuple[str, str, pd.DataFrame]]:
    labels = sorted(releases)
    span = f"{labels[0]}..{labels[-1]}"

    def stacked(periods: list[str], dedup: bool) -> pd.DataFrame:
        rows = pd.concat([releases[p] for p in periods], ignore_index=True)
        # rows without a case_id are each their own case
        if dedup and "case_id" in rows.columns:
            return rows.drop_duplicates(subset="case_id", keep="last")
        return rows

    yield "dedup", span, stacked(labels, True)
    yield "pooled", span, stacked(labels, False)
    for p in labels:
        yield "quarter", p, stacked([p], False)
    for i, p in enumerate(labels):
        yield "cumulative", p, stacked(labels[:i + 1], True)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(SERIES, st.sampled_from([(), ("age",), ("sex", "year"), ("age", "sex")]))
def test_every_scope_counts_what_the_whole_series_stacked_counts(quarters, variables):
    releases = _series(quarters)
    table = signal_table(releases, scopes="dedup,pooled,quarter,cumulative",
                         stratify_by=list(variables), hierarchies=HIER)
    entries = {(e["scope"], e["period"]): e for e in table.attrs["signals"]["scopes"]}
    for scope, period, rows in _whole_scopes(releases):
        got = table[(table["scope"] == scope) & (table["period"] == period)]
        strata = _whole_strata(rows, variables) if variables else None
        want = pair_counts(rows, strata=None if strata is None else strata[0])
        columns = [c for c in COUNTED if c in want.columns]
        assert ("e_crude" in got.columns) == bool(variables)
        # the same pairs in the same order, with bit-identical counts and expected counts
        pd.testing.assert_frame_equal(got[columns].reset_index(drop=True),
                                      want[columns].reset_index(drop=True), check_exact=True,
                                      check_dtype=False)
        entry = entries[(scope, period)]
        assert entry["reports"] == len(rows)
        assert entry["pairs"] == len(want)
        if strata is not None:
            assert (entry["strata"], entry["unknown"]) == strata[1:]


class _Reads(Mapping):
    """Releases that record which period is read when, and hand out each as a fresh frame."""

    def __init__(self, releases: dict[str, pd.DataFrame]):
        self.releases, self.log = releases, []

    def __getitem__(self, label: str) -> pd.DataFrame:
        self.log.append(label)
        return self.releases[label].copy()

    def __iter__(self):
        return iter(self.releases)

    def __len__(self) -> int:
        return len(self.releases)


def test_each_release_is_read_once_in_time_order_and_the_table_is_that_of_a_dict():
    releases = _series([[(1, "Child", "F", "2020", ["ASPIRIN"], ["Rash"]),
                         (2, "Aged", "M", "2021", ["warfarin", "ASPIRIN"], ["Nausea"])],
                        [(1, "Adult", "F", "", ["Aspirin"], ["rash", "Headache"])],
                        [(3, "", "", "*", ["HEPARIN"], ["Haemorrhage"]),
                         (2, "Aged", "M", "2021", ["WARFARIN"], ["Nausea"])]])
    # handed out latest first: the labels, not the mapping, give the order
    reads = _Reads(dict(reversed(list(releases.items()))))
    options = dict(scopes="dedup,pooled,quarter,cumulative", stratify_by="age,sex",
                   hierarchies=HIER)
    streamed = signal_table(reads, **options)
    assert reads.log == ["2020Q1", "2020Q2", "2020Q3"]
    whole = signal_table(releases, **options)
    pd.testing.assert_frame_equal(streamed, whole, check_exact=True)
    assert streamed.attrs == whole.attrs


def test_a_release_without_case_ids_or_age_groups_reads_as_stacked_frames_read_it():
    """A release lacking a column stacks as NaN cells: its rows share one missing case id
    (drop_duplicates keeps the last of them), and FDA's age group decides no band there."""
    releases = _series([[(1, "", "F", "2020", ["ASPIRIN"], ["Rash"]),
                         (2, "", "M", "2021", ["ASPIRIN"], ["Nausea"])],
                        [(1, "", "F", "", ["ASPIRIN"], ["Rash"]),
                         (4, "Aged", "M", "2021", ["WARFARIN"], ["Nausea"])]])
    releases["2020Q1"] = releases["2020Q1"].drop(columns="case_id").assign(
        **{AGE_GROUP_COLUMN: ["C", "E"]})
    table = signal_table(releases, scopes="dedup,pooled,cumulative", stratify_by="age",
                         hierarchies=HIER)
    entries = {(e["scope"], e["period"]): e for e in table.attrs["signals"]["scopes"]}
    for scope, period, rows in _whole_scopes(releases):
        if scope == "quarter":
            continue
        got = table[(table["scope"] == scope) & (table["period"] == period)]
        codes, count, unknown = _whole_strata(rows, ("age",))
        want = pair_counts(rows, strata=codes)
        pd.testing.assert_frame_equal(got[COUNTED].reset_index(drop=True),
                                      want[COUNTED].reset_index(drop=True), check_exact=True,
                                      check_dtype=False)
        assert entries[(scope, period)]["reports"] == len(rows)
        assert (entries[(scope, period)]["strata"], entries[(scope, period)]["unknown"]) == (
            count, unknown)
