"""What ``medanon evaluate`` reads of a store, a part at a time (issue 30): the columns of the
original records it needs, and each release with its cases' rows elsewhere."""

from __future__ import annotations

import pandas as pd
import pytest

from medanon.attacks import read_background
from medanon.data.synth.faers import write_faers_series
from medanon.errors import StoreError, ValidationError
from medanon.metrics.evaluation import (PublishedOriginals, evaluate_linked, evaluate_series,
                                        evaluated_columns, original_columns, own_columns)
from medanon.metrics.screening import ScreeningOptions
from medanon.metrics.signals import read_rules
from medanon.pipeline.history import StoreSeries
from medanon.published.series import kept_releases, load_series
from medanon.report.collect import store_originals
from medanon.store import ReleaseStore
from tests.conftest import ingest_and_release


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    work = tmp_path_factory.mktemp("evaluate-streaming")
    write_faers_series(work / "in", periods=3, cases=300, followup_rate=0.3, seed=11)
    return ingest_and_release(work / "in", work / "s.duckdb")


def test_record_columns_are_those_columns_of_the_records(store):
    with ReleaseStore.open(store, read_only=True) as db:
        for period in db.ingested_periods():
            full = db.records(period)
            part = db.record_columns(period, ["age", "reactions", "no such column"])
            assert list(part.columns) == ["case_id", "period", "age", "reactions", "version"]
            pd.testing.assert_frame_equal(part, full[list(part.columns)])
        with pytest.raises(StoreError, match="not ingested"):
            db.record_columns("1999Q1", ["age"])


def test_originals_of_some_columns_equal_those_columns_of_the_whole_originals(store):
    with ReleaseStore.open(store, read_only=True) as db:
        periods = db.published_periods()
        whole, whole_rows = store_originals(db, periods)
        part, part_rows = store_originals(db, periods, lazy=True,
                                          columns=["drugs", "reactions"])
        for period in periods:
            frame = part[period]
            qids = [q.name for q in db.schema.qids]
            assert list(frame.columns) == ["period", "case_id", "n_reports", *qids, "reactions",
                                           "drugs"]
            pd.testing.assert_frame_equal(frame, whole[period][list(frame.columns)])
            rows = part_rows[period]
            pd.testing.assert_frame_equal(rows, whole_rows[period][list(rows.columns)])
        with pytest.raises(ValidationError, match="lazy"):
            store_originals(db, periods, columns=["drugs"])


def test_a_release_with_its_cases_holds_its_rows_and_its_cases_rows_elsewhere(store):
    with ReleaseStore.open(store, read_only=True) as db:
        whole = load_series(store=db)
        reader = StoreSeries(db)
        for label in whole.periods:
            cases = set(whole.releases[label]["case_id"])
            linked = reader.release_with_cases(label)
            held = [p for p, rows in whole.releases.items() if rows["case_id"].isin(cases).any()]
            assert linked.periods == kept_releases(whole.periods, held)
            for period, rows in linked.releases.items():
                expected = whole.releases[period]
                expected = expected[expected["case_id"].isin(cases)].reset_index(drop=True)
                pd.testing.assert_frame_equal(rows, expected)
                assert linked.manifests[period] == whole.manifests[period]
            assert linked.qids == whole.qids and linked.sensitive == whole.sensitive


def _evaluation_options(tmp_path, zelnorm_condition: str = "") -> tuple[list, dict]:
    """Two signal rules (AVANDIA's with a condition on age, ZELNORM's with
    ``zelnorm_condition``), and evaluate's options with them: background knowledge, the
    MD-attack and two strata."""
    (tmp_path / "rules.csv").write_text(
        "drug,condition,reaction\nAVANDIA,age > 18,Myocardial infarction\n"
        f"ZELNORM,{zelnorm_condition},Cerebrovascular accident\n")
    (tmp_path / "bk.csv").write_text("term,attribute,value\nBreast cancer,sex,F\n")
    rules = read_rules(tmp_path / "rules.csv")
    common = dict(rules=rules, background=read_background(tmp_path / "bk.csv"), md=True,
                  screening=ScreeningOptions(strata=("age >= 65", "sex = M")))
    return rules, common


def _linked_and_whole(store, tmp_path, periods, read) -> tuple[dict, dict]:
    """evaluate_linked of ``periods`` with ``read(StoreSeries)`` as each release's reader, and
    evaluate_series of the whole series, both with rules, background knowledge, the MD-attack
    and two strata."""
    rules, common = _evaluation_options(tmp_path)
    with ReleaseStore.open(store, read_only=True) as db:
        whole = load_series(store=db)
        columns = original_columns(rules, common["screening"])
        got = []
        for linked in (True, False):
            frames, _ = store_originals(db, whole.periods, lazy=True, columns=columns)
            rows = PublishedOriginals(frames, db.schema, columns)
            if linked:
                got.append(evaluate_linked(periods(whole), read(StoreSeries(db)), frames, rows,
                                           hierarchies=whole.hierarchies, **common))
            else:
                got.append(evaluate_series(whole, frames, rows, periods=periods(whole),
                                           **common))
    return got[0], got[1]


def test_evaluate_linked_equals_evaluate_series(store, tmp_path):
    linked, whole = _linked_and_whole(store, tmp_path, lambda series: series.periods[1:],
                                      lambda reader: reader.release_with_cases)
    assert linked == whole
    with ReleaseStore.open(store, read_only=True) as db:
        later = db.published_periods()[1:]
    assert [e["period"] for e in linked["releases"]] == later


def test_evaluate_on_the_series_verify_checked_equals_evaluate_series(store, tmp_path):
    """What ``medanon evaluate`` measures each release on (the series verify checked: the
    release and its cases' rows elsewhere, read inside one reading_once: issue 43) gives the
    whole series' evaluation, background knowledge and MD-attack included."""
    with ReleaseStore.open(store, read_only=True) as db:
        reader = StoreSeries(db)
        # the linked series holds rows of cases outside the release (their groups'); the
        # series evaluate checks and measures does not: it is release_with_cases' rows
        assert any(len(reader.linked_release(p).releases[q]) > len(rows_q)
                   for p in db.published_periods()
                   for q, rows_q in reader.release_with_cases(p).releases.items())
        for p in db.published_periods():
            checked = reader.verified_linked_release(p).releases
            cases = reader.release_with_cases(p).releases
            assert list(checked) == list(cases)
            for q, rows_q in cases.items():
                pd.testing.assert_frame_equal(checked[q].reset_index(drop=True),
                                              rows_q.reset_index(drop=True), check_dtype=False)
    linked, whole = _linked_and_whole(store, tmp_path, lambda series: series.periods,
                                      lambda reader: reader.verified_linked_release)
    assert linked == whole


def test_evaluate_on_the_columns_it_reads_equals_evaluate_series(store, tmp_path):
    """``medanon evaluate`` fetches only :func:`evaluated_columns` of the linked rows, all but
    the links and regions (:func:`own_columns`) only in the release measured (issue 43): the
    clear columns no rule and no screening reads are left out, and the evaluation (verify's
    refusal, background knowledge, the MD-attack, the rules' conditions and the strata
    included) is the whole series'."""
    rules, common = _evaluation_options(tmp_path)
    with ReleaseStore.open(store, read_only=True) as db:
        schema = db.schema
        columns = evaluated_columns(schema, rules, common["screening"])
        own = own_columns(schema, rules, common["screening"])
        left_out = [c for c in db.release_columns() if c not in columns]
        assert columns == [c for c in db.release_columns() if c in columns]
        assert set(left_out) == set(schema.multi) - {"drugs"} and left_out
        # all but the links and regions: the drugs (a clear column the screening reads), the
        # sensitive and the date columns, which only the release measured is read for
        linking = ["period", "case_id", "group", *(q.name for q in schema.qids)]
        assert own == [c for c in columns if c not in linking]
        assert set(schema.sensitive) | set(schema.dates) | {"drugs"} == set(own)
        assert set(evaluated_columns(schema)) == set(db.release_columns()) - set(schema.multi)
        assert own_columns(schema) == [c for c in evaluated_columns(schema)
                                       if c not in linking]
        whole = load_series(store=db)
        for label in db.published_periods():
            rows = StoreSeries(db).linked_release(label, columns, own).releases
            for period, frame in rows.items():
                held = columns if period == label else [c for c in columns if c not in own]
                assert list(frame.columns) == held
                cases = set(frame["case_id"])
                expected = whole.releases[period]
                expected = expected[expected["case_id"].isin(cases)][held]
                pd.testing.assert_frame_equal(frame, expected.reset_index(drop=True))
    linked, whole_evaluation = _linked_and_whole(
        store, tmp_path, lambda series: series.periods,
        lambda reader: lambda label: reader.verified_linked_release(label, columns, own))
    assert linked == whole_evaluation


def test_the_report_reads_a_release_at_a_time_and_finds_what_the_whole_series_gives(store):
    """collect_series_report streams (StoreSeries): its evaluation, verdict and profiles equal
    those of the whole series held at once."""
    from medanon.metrics.screening import screening_for
    from medanon.published.series import published_columns
    from medanon.report.collect import collect_series_report, generalization_profile
    from medanon.verify import verify_series

    report = collect_series_report(store)
    with ReleaseStore.open(store, read_only=True) as db:
        whole = load_series(store=db)
        frames, rows = store_originals(db, whole.periods, lazy=True)
        expected = evaluate_series(whole, frames, rows,
                                   screening=screening_for(published_columns(whole)))
    assert report.evaluation == expected
    # the streamed verdict equals verify_series' (tests/property/test_incremental_gate.py);
    # here both pass every release
    assert verify_series(whole).ok and report.card.verify_error is None
    assert report.card.verdicts == {p: "passed" for p in whole.periods}
    for period in whole.periods:
        assert report.profiles[period] == generalization_profile(whole, period)


def test_evaluate_reading_only_the_columns_it_needs_equals_reading_every_column(store,
                                                                               tmp_path):
    """What ``medanon evaluate`` reads of the originals (the QIDs, and of the other columns
    only :func:`original_columns`: the rules' and the screening's drug, reaction and condition
    columns, formatted by :class:`PublishedOriginals`) gives the evaluation, to the byte of
    its JSON, that the originals with every column give (rules with a condition, background
    knowledge, the MD-attack, strata on two QIDs)."""
    import json

    rules, common = _evaluation_options(tmp_path, zelnorm_condition="sex = F")
    with ReleaseStore.open(store, read_only=True) as db:
        whole = load_series(store=db)
        every_frame, every_row = store_originals(db, whole.periods)
        columns = original_columns(rules, common["screening"])
        # the read leaves columns out: the comparison is not of two equal reads
        assert set(columns) < set(db.schema.all_columns)
        frames, _ = store_originals(db, whole.periods, lazy=True, columns=columns)
        some = evaluate_series(whole, frames, PublishedOriginals(frames, db.schema, columns),
                               **common)
        every = evaluate_series(whole, every_frame, every_row, **common)
    assert some == every
    assert json.dumps(some, sort_keys=True) == json.dumps(every, sort_keys=True)
    assert some["releases"] and all(e["signals"] for e in some["releases"])
