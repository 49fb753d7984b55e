"""What ``medanon evaluate`` reads of a store, a part at a time (issue 30): the columns of the
original records it needs, and each release with its cases' rows elsewhere."""

from __future__ import annotations

import pandas as pd
import pytest

from medanon.data.synth.faers import write_faers_series
from medanon.errors import StoreError, ValidationError
from medanon.report.collect import store_originals
from medanon.store import ReleaseStore
from tests.conftest import invoke_cli


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    work = tmp_path_factory.mktemp("evaluate-streaming")
    write_faers_series(work / "in", periods=3, cases=300, followup_rate=0.3, seed=11)
    path = work / "s.duckdb"
    for args in (("ingest", work / "in", "--store", path),
                 ("release", "--store", path, "--method", "ppms++", "--k", "5", "--theta",
                  "frequency", "--seed", "1", "--allow-seeded")):
        result = invoke_cli(*args)
        assert result.returncode == 0, result.stderr
    return path


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
