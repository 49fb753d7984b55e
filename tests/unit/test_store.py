"""Release store: transactions, immutability, schema binding, deletes."""

from __future__ import annotations

import json
from dataclasses import replace

import duckdb
import pandas as pd
import pytest

from medanon.anonymize import DropIdentifiers
from medanon.data.loaders.faers import read_faers
from medanon.data.schema import Schema
from medanon.errors import StoreError, ValidationError
from medanon.random import randomness
from medanon.pipeline.publish import input_digest, plan_periods, publish_periods
from medanon.pipeline.checks import Acknowledgements
from medanon.store import ReleaseStore
from tests.conftest import FAERS_FIXTURES


def _ingest(path, source=FAERS_FIXTURES):
    ingest = read_faers(source, keep_missing=False)
    with ReleaseStore.create_or_open(path, Schema.default()) as store:
        summary = store.ingest(ingest)  # the loader's own result: quarters and DELETE list
    return ingest, summary


def _content(path):
    with ReleaseStore.open(path) as store:
        frame = store.periods()
        periods = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
        rows = {p: store.release_rows(p).to_dict(orient="records") for p in store.published_periods()}
        ledger = store.ledger().to_dict(orient="records")
    return periods, rows, ledger


def test_ingest_then_read_back_records(tmp_path) -> None:
    ingest, summary = _ingest(tmp_path / "s.duckdb")
    assert summary.added == ["2011Q2", "2013Q1", "2015Q1"]
    with ReleaseStore.open(tmp_path / "s.duckdb") as store:
        assert store.ingested_periods() == ["2011Q2", "2013Q1", "2015Q1"]
        for quarter in ingest.quarters:
            back = store.records(quarter.period.label)
            assert sorted(back["report_id"]) == sorted(quarter.records["report_id"])
            original = quarter.records.set_index("report_id")
            for row in back.itertuples():
                assert row.reactions == original.loc[row.report_id, "reactions"]
                assert row.age == original.loc[row.report_id, "age"]
        assert store.ingest_report("2015Q1")["demo_rows"] == 10


def test_ingest_takes_the_loader_result_or_a_dataset_alike(tmp_path) -> None:
    import medanon

    ingest = read_faers(FAERS_FIXTURES)
    data = medanon.Dataset.from_faers(FAERS_FIXTURES)
    assert [q.label for q in data.quarters] == [q.label for q in ingest.quarters]
    assert data.deleted_case_ids == ingest.deleted_case_ids
    content = {}
    for name, source in (("loader", ingest), ("dataset", data)):
        with ReleaseStore.create_or_open(tmp_path / f"{name}.duckdb", Schema.default()) as store:
            summary = store.ingest(source)
            periods = store.periods().drop(columns="ingested_at")
            content[name] = (summary.added, periods.to_dict(orient="records"),
                             {p: store.ingest_report(p) for p in summary.added},
                             {p: store.records(p) for p in summary.added})
    assert content["loader"][:3] == content["dataset"][:3]
    for period, records in content["loader"][3].items():  # missing values kept: NaN cells
        pd.testing.assert_frame_equal(records, content["dataset"][3][period])
    periods = content["dataset"][1]
    assert {p["source"] for p in periods} == {str(FAERS_FIXTURES)}
    assert [p["era"] for p in periods] == [q.era for q in ingest.quarters]


def test_ingest_refuses_positional_tuples(tmp_path) -> None:
    ingest = read_faers(FAERS_FIXTURES / "faers_2015Q1")
    q = ingest.quarters[0]
    with ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.default()) as store:
        with pytest.raises(ValidationError, match="'quarters' parameter of ReleaseStore.ingest "
                                                  "must be what the loader returns.*tuple"):
            store.ingest([(q.label, q.era, "f", q.records, q.report_dict())])
        assert store.ingested_periods() == []
        assert store.ingest(q).added == ["2015Q1"]    # one quarter object alone is fine


def test_publish_is_one_transaction_and_rolls_back_on_failure(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path)
    before = _content(path)
    rows = pd.DataFrame({c: ["x"] for c in ["period", "case_id", "group", *Schema.default().published]})
    rows["period"] = "2011Q2"
    bad_ledger = pd.DataFrame({"case_id": ["x"], "mechanism": ["laplace"], "epsilon": ["not a number"],
                               "delta": [0.0]})
    with ReleaseStore.open(path) as store, pytest.raises(duckdb.Error) as raised:
        store.publish("2011Q2", rows, {"method": {"name": "test"}}, ledger=bad_ledger)
    # the error is the failed insert's own, not the aborted transaction's refusal that follows it
    assert "transaction is aborted" not in str(raised.value)
    assert "not a number" in str(raised.value)
    assert _content(path) == before  # the release rows inserted before the failure are gone


def test_published_period_is_immutable(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path)
    with ReleaseStore.open(path) as store:
        publish_periods(store, DropIdentifiers(), ["2011Q2"], randomness(),
                        acknowledged=Acknowledgements(unprotected=True, gap=True))
    before = _content(path)
    with ReleaseStore.open(path) as store:
        with pytest.raises(StoreError, match="already published"):
            publish_periods(store, DropIdentifiers(), ["2011Q2"], randomness(),
                            acknowledged=Acknowledgements(unprotected=True, gap=True))
        rows = store.release_rows("2011Q2")
        with pytest.raises(StoreError, match="immutable"):
            store.publish("2011Q2", rows, store.manifest("2011Q2"))
    with pytest.raises(StoreError, match="cannot be re-ingested"):
        _ingest(path, FAERS_FIXTURES / "legacy_2011Q2")
    assert _content(path) == before


def test_periods_publish_in_time_order(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path)
    with ReleaseStore.open(path) as store:
        with pytest.raises(StoreError, match="time order"):
            plan_periods(store, ["2013Q1"])
        assert plan_periods(store, []) == ["2011Q2", "2013Q1", "2015Q1"]
        with pytest.raises(StoreError, match="not ingested"):
            plan_periods(store, ["2019Q1"])
        with pytest.raises(ValidationError, match="does not parse"):
            plan_periods(store, ["2019Q5"])


def test_seeded_runs_need_explicit_permission(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path)
    with ReleaseStore.open(path) as store:
        with pytest.raises(ValidationError, match="--allow-seeded"):
            publish_periods(store, DropIdentifiers(), [], randomness(7),
                            acknowledged=Acknowledgements(unprotected=True, gap=True))
        assert store.published_periods() == []
        publish_periods(store, DropIdentifiers(), ["2011Q2"], randomness(7),
                        acknowledged=Acknowledgements(unprotected=True, gap=True, seeded=True))
        rng = store.manifest("2011Q2")["rng"]
        assert (rng["kind"], rng["seed"]) == ("seeded", 7) and rng == randomness(7).describe()


def test_reingest_of_unpublished_period_replaces_it(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path, FAERS_FIXTURES / "faers_2015Q1")
    _, summary = _ingest(path, FAERS_FIXTURES / "faers_2015Q1")
    assert summary.replaced == ["2015Q1"]
    with ReleaseStore.open(path) as store:
        assert store.periods()["n_reports"].tolist() == [3]


def test_delete_list_reaches_earlier_unpublished_periods(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    ingest = read_faers(FAERS_FIXTURES / "legacy_2011Q2")
    case = ingest.quarters[0].records["case_id"].iloc[0]
    with ReleaseStore.create_or_open(path, Schema.default()) as store:
        store.ingest(ingest.quarters)
        summary = store.ingest([], deleted_case_ids=[case])
        assert summary.deleted_from_unpublished == {"2011Q2": 1}
        assert case not in set(store.records("2011Q2")["case_id"])


def test_store_rejects_other_schema_and_non_store_files(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path)
    other = Schema.from_mapping({"name": "other", "qid": [{"name": "weight", "kind": "numeric"}],
                                 "sensitive": ["reactions"]})
    with pytest.raises(StoreError, match="different columns"):
        ReleaseStore.create_or_open(path, other)
    junk = tmp_path / "junk.duckdb"
    junk.write_text("not a database")
    with pytest.raises(StoreError, match="not a medanon store"):
        ReleaseStore.open(junk)
    assert junk.read_text() == "not a database"
    with pytest.raises(StoreError, match="No store"):
        ReleaseStore.open(tmp_path / "absent.duckdb")
    assert not (tmp_path / "absent.duckdb").exists()


def test_a_period_whose_reports_were_all_dropped_publishes_an_empty_release(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    ingest = read_faers(FAERS_FIXTURES / "faers_2015Q1")
    empty = ingest.quarters[0].records.iloc[0:0]
    with ReleaseStore.create_or_open(path, Schema.default()) as store:
        with pytest.raises(StoreError, match="hold no reports"):
            store.ingest([replace(ingest.quarters[0], records=empty)])
        assert store.ingested_periods() == []
        store.ingest([replace(ingest.quarters[0], records=empty)], allow_empty=True)
        with pytest.raises(ValidationError, match="2015Q1 \\(empty\\)"):
            publish_periods(store, DropIdentifiers(), [], randomness(),
                            acknowledged=Acknowledgements(unprotected=True))
        (summary,) = publish_periods(store, DropIdentifiers(), [], randomness(),
                                     acknowledged=Acknowledgements(unprotected=True, gap=True))
        assert summary.cases == 0 and summary.groups == 0
        assert len(store.release_rows("2015Q1")) == 0
        assert store.manifest("2015Q1")["counts"]["cases"] == 0


def test_input_hash_and_private_details_stay_in_the_store(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path)
    with ReleaseStore.open(path) as store:
        publish_periods(store, DropIdentifiers(), ["2011Q2"], randomness(),
                        acknowledged=Acknowledgements(unprotected=True, gap=True))
        manifest = store.manifest("2011Q2")
        operator = store.operator_record("2011Q2")
        expected = input_digest(store.records("2011Q2"))
    assert "input_sha256" not in manifest
    assert operator["input_sha256"] == expected
    assert expected not in json.dumps(manifest)  # nor anywhere else in the manifest
    # a manifest carrying an operator-only field is refused, nothing written
    before = _content(path)
    with ReleaseStore.open(path) as store:
        rows = store.release_rows("2011Q2").assign(period="2013Q1")
        for leak in ({"input_sha256": expected}, {"details": {"clipped_to_domain": {"weight": 1}}}):
            with pytest.raises(ValidationError, match="'manifest' parameter of ReleaseStore.publish"):
                store.publish("2013Q1", rows, {**manifest, **leak})
    assert _content(path) == before


def test_an_older_store_moves_private_fields_out_of_its_manifests(tmp_path) -> None:
    # A store written before release_private and ledger.dp: its manifests held the input hash
    # and clipped counts, and its ledger did not say which rows were DP.
    path = tmp_path / "s.duckdb"
    _ingest(path)
    with ReleaseStore.open(path) as store:
        publish_periods(store, DropIdentifiers(), ["2011Q2", "2013Q1"], randomness(),
                        acknowledged=Acknowledgements(unprotected=True, gap=True))
    con = duckdb.connect(str(path))
    old = {}
    for period, variant in (("2011Q2", "paper"), ("2013Q1", "strict")):
        (text,) = con.execute("SELECT manifest FROM releases WHERE period = ?", [period]).fetchone()
        manifest = json.loads(text)
        manifest.update(input_sha256=f"hash-{period}", privacy_spent={"variant": variant})
        manifest["details"] = {"clipped_to_domain": {"weight": 3}, "cases": 2}
        old[period] = manifest
        con.execute("UPDATE releases SET manifest = ? WHERE period = ?", [json.dumps(manifest), period])
        con.execute("INSERT INTO ledger VALUES (?, 'c1', 'laplace:weight', 1.0, 0.0, '1', TRUE)",
                    [period])
    con.execute("DROP TABLE release_private")
    con.execute("ALTER TABLE ledger DROP COLUMN dp")
    con.close()
    with ReleaseStore.open(path) as store:
        for period in ("2011Q2", "2013Q1"):
            manifest = store.manifest(period)
            assert "input_sha256" not in manifest
            assert manifest["details"] == {"cases": 2}
            assert store.operator_record(period) == {
                "input_sha256": f"hash-{period}",
                "private_details": {"clipped_to_domain": {"weight": 3}}}
        ledger = store.ledger().set_index("period")["dp"]
        assert ledger.to_dict() == {"2011Q2": False, "2013Q1": True}
    with ReleaseStore.open(path) as store:  # the upgrade ran once; opening again changes nothing
        assert store.manifest("2013Q1")["details"] == {"cases": 2}


# -- ingest one quarter at a time ---------------------------------------------------------------
def test_a_streamed_ingest_stores_what_the_whole_ingest_stores(tmp_path) -> None:
    import medanon

    whole, streamed = tmp_path / "whole.duckdb", tmp_path / "streamed.duckdb"
    _ingest(whole)
    quarters = medanon.Dataset.stream_faers(FAERS_FIXTURES, keep_missing=False)  # as _ingest
    with ReleaseStore.create_or_open(streamed, Schema.default()) as store:
        summary = store.ingest(quarters)
    assert summary.added == ["2011Q2", "2013Q1", "2015Q1"]
    assert [r["period"] for r in quarters.reports] == summary.added
    with ReleaseStore.open(whole) as a, ReleaseStore.open(streamed) as b:
        for period in a.ingested_periods():
            pd.testing.assert_frame_equal(a.records(period), b.records(period))
            assert a.ingest_report(period) == b.ingest_report(period)


def test_the_store_lets_go_of_each_quarter_before_it_asks_for_the_next(tmp_path) -> None:
    import gc
    import weakref

    quarters = read_faers(FAERS_FIXTURES).quarters
    alive: list[bool] = []

    def one_at_a_time():
        previous = None
        for quarter in quarters:
            if previous is not None:
                gc.collect()
                alive.append(previous() is not None)
            copy = replace(quarter, records=quarter.records.copy())
            previous = weakref.ref(copy.records)
            yield copy
            del copy

    with ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.default()) as store:
        assert store.ingest(one_at_a_time()).added == ["2011Q2", "2013Q1", "2015Q1"]
    assert alive == [False, False]


def test_a_streamed_ingest_that_fails_late_leaves_the_store_as_it_was(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path, FAERS_FIXTURES / "legacy_2011Q2")
    before = _content(path)
    quarters = read_faers(FAERS_FIXTURES).quarters

    def failing():
        yield quarters[1]
        yield quarters[2]
        raise RuntimeError("the third quarter cannot be read")

    with ReleaseStore.open(path) as store:
        with pytest.raises(RuntimeError, match="third quarter"):
            store.ingest(failing())
        # empty periods are refused once every quarter is read: all of them named
        empty = [replace(q, records=q.records.iloc[0:0]) for q in quarters[1:]]
        with pytest.raises(StoreError, match="Period\\(s\\) 2013Q1, 2015Q1 of .* hold no reports"):
            store.ingest(iter(empty))
    assert _content(path) == before


def test_a_streamed_ingest_refuses_a_published_period_before_reading_it(tmp_path, monkeypatch) -> None:
    import medanon
    from medanon.data.loaders import faers

    path = tmp_path / "s.duckdb"
    _ingest(path, FAERS_FIXTURES / "faers_2015Q1")
    with ReleaseStore.open(path) as store:
        publish_periods(store, DropIdentifiers(), [], randomness(),
                        acknowledged=Acknowledgements(unprotected=True))
    quarters = medanon.Dataset.stream_faers(FAERS_FIXTURES)

    def unread(*args):
        raise AssertionError("no quarter is read when a period is refused")

    monkeypatch.setattr(faers, "_read_quarter", unread)
    with ReleaseStore.open(path) as store:
        with pytest.raises(StoreError, match="earlier than the latest published period 2015Q1"):
            store.ingest(quarters)


def test_a_streamed_ingest_stages_beside_the_store_and_leaves_nothing_behind(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path, FAERS_FIXTURES / "legacy_2011Q2")
    stale = tmp_path / ".s.duckdb.ingest-0badc0ffee.duckdb"  # left by an ingest that was killed
    stale.write_bytes(b"")
    quarters = read_faers(FAERS_FIXTURES).quarters
    seen: list[list[str]] = []

    def watched(items):
        for item in items:
            seen.append(sorted(p.name for p in tmp_path.iterdir()
                               if ".ingest-" in p.name and p.suffix != ".wal"))
            yield item

    with ReleaseStore.open(path) as store:
        with pytest.raises(StoreError, match="already published|hold no reports"):
            store.ingest(watched([quarters[1], replace(quarters[2], records=quarters[2].records[:0])]))
        store.ingest(watched(quarters[1:]))
        assert store.ingested_periods() == ["2011Q2", "2013Q1", "2015Q1"]
    assert all(len(names) == 1 and names[0] != stale.name for names in seen), seen
    assert not [p for p in tmp_path.iterdir() if ".ingest-" in p.name]


def test_a_streamed_source_of_one_quarter_is_written_without_staging(tmp_path, monkeypatch) -> None:
    """One quarter (a holder's usual ingest) goes straight into the transaction, storing what
    the whole ingest stores; a late failure still leaves the store as it was."""
    import medanon

    whole, streamed = tmp_path / "whole.duckdb", tmp_path / "streamed.duckdb"
    _ingest(whole, FAERS_FIXTURES / "faers_2015Q1")

    def no_staging(self):
        raise AssertionError("a one-quarter source is not staged")

    monkeypatch.setattr(ReleaseStore, "_staging", no_staging)
    quarters = medanon.Dataset.stream_faers(FAERS_FIXTURES / "faers_2015Q1", keep_missing=False)
    assert len(quarters) == 1
    with ReleaseStore.create_or_open(streamed, Schema.default()) as store:
        assert store.ingest(quarters).added == ["2015Q1"]
    with ReleaseStore.open(whole) as a, ReleaseStore.open(streamed) as b:
        assert b.ingested_periods() == ["2015Q1"]
        pd.testing.assert_frame_equal(a.records("2015Q1"), b.records("2015Q1"))
        assert a.ingest_report("2015Q1") == b.ingest_report("2015Q1")

    path = tmp_path / "s.duckdb"
    _ingest(path, FAERS_FIXTURES / "legacy_2011Q2")
    before = _content(path)
    from medanon.data.loaders import faers

    def unreadable(*args, **kwargs):
        raise RuntimeError("the quarter cannot be read")

    monkeypatch.setattr(faers, "_read_quarter", unreadable)
    with ReleaseStore.open(path) as store:
        with pytest.raises(RuntimeError, match="cannot be read"):
            store.ingest(medanon.Dataset.stream_faers(FAERS_FIXTURES / "faers_2015Q1"))
    assert _content(path) == before


def test_a_streamed_ingest_inside_a_batch_joins_its_transaction(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path, FAERS_FIXTURES / "legacy_2011Q2")
    before = _content(path)
    quarters = read_faers(FAERS_FIXTURES).quarters
    with ReleaseStore.open(path) as store:
        with pytest.raises(RuntimeError, match="later"):
            with store.batch():
                store.ingest(iter(quarters[1:]))
                assert store.ingested_periods() == ["2011Q2", "2013Q1", "2015Q1"]
                raise RuntimeError("a later step fails")
    assert _content(path) == before
    assert not [p for p in tmp_path.iterdir() if ".ingest-" in p.name]


def _threads(store) -> int:
    return int(store._con.execute("SELECT current_setting('threads')").fetchall()[0][0])


def test_a_release_runs_duckdb_on_one_thread_and_gives_the_threads_back(tmp_path, monkeypatch) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path)
    seen = []
    with ReleaseStore.open(path) as store:
        store._con.execute("SET threads = 3")
        real_publish = ReleaseStore.publish

        def publish(self, *args, **kwargs):
            seen.append(_threads(self))
            return real_publish(self, *args, **kwargs)

        monkeypatch.setattr(ReleaseStore, "publish", publish)
        publish_periods(store, DropIdentifiers(), ["2011Q2"], randomness(7),
                        acknowledged=Acknowledgements(unprotected=True, gap=True, seeded=True))
        assert seen == [1] and _threads(store) == 3
        # a refused release gives them back too
        with pytest.raises(StoreError):
            publish_periods(store, DropIdentifiers(), ["2011Q2"], randomness(7),
                            acknowledged=Acknowledgements(unprotected=True, gap=True, seeded=True))
        assert _threads(store) == 3
        with store.one_thread():   # nested: the inner block leaves the one thread as it was
            with store.one_thread():
                assert _threads(store) == 1
            assert _threads(store) == 1
        assert _threads(store) == 3


def _cached_table_bytes(store) -> int:
    return int(store._con.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
                                  "WHERE tag = 'BASE_TABLE'").fetchall()[0][0])


def _memory_limit(store) -> str:
    return store._con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


def test_dropping_cached_blocks_evicts_the_table_blocks_and_keeps_the_memory_limit(tmp_path) -> None:
    path = tmp_path / "s.duckdb"
    _ingest(path)
    with ReleaseStore.open(path) as store:
        default = _memory_limit(store)
        for period in store.ingested_periods():
            store.coded_records(period)
        cached = _cached_table_bytes(store)
        assert cached > 0
        store.drop_cached_blocks()                      # (a fixture store caches under 32 MiB)
        store.drop_cached_blocks(above=cached)
        assert _cached_table_bytes(store) == cached
        store.drop_cached_blocks(above=0)
        assert _cached_table_bytes(store) < cached
        assert _memory_limit(store) == default          # the default, exactly (not its rounded text)
        store._con.execute("SET memory_limit = '300MiB'")
        store.coded_records(store.ingested_periods()[0])
        store.drop_cached_blocks(above=0)
        assert _memory_limit(store) == "300.0 MiB"      # a limit set before stays set


def test_a_release_that_drops_cached_blocks_publishes_the_same_rows(tmp_path, monkeypatch) -> None:
    """Every period of one batch (the earlier ones' rows uncommitted while the later ones read
    the store) is published the same whether DuckDB's cached blocks are dropped or kept, and
    verify, which drops them as it reads release after release, says the same."""
    import medanon.pipeline.history as history
    import medanon.store.duckdb_store as duckdb_store

    contents, verdicts = [], []
    for worth in (2**62, 0):   # (never dropped; dropped at each read)
        monkeypatch.setattr(duckdb_store, "_WORTH_DROPPING", worth)
        monkeypatch.setattr(history, "_READ_CACHE", worth)
        path = tmp_path / f"s{worth}.duckdb"
        _ingest(path)
        with ReleaseStore.open(path) as store:
            publish_periods(store, DropIdentifiers(), [], randomness(7),
                            acknowledged=Acknowledgements(unprotected=True, gap=True, seeded=True))
        contents.append(_content(path))
        with ReleaseStore.open(path, read_only=True) as store:
            verdicts.append(history.verify_store(store))
    assert len(contents[0][1]) == 3 and contents[0][1] == contents[1][1]
    assert len(verdicts[0].releases) == 3 and verdicts[0] == verdicts[1]


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("fmt", ["csv", "parquet", "faers"])
def test_an_export_of_the_store_reads_each_release_once_and_writes_what_the_whole_series_gives(
        tmp_path, monkeypatch, fmt) -> None:
    from medanon.pipeline.export import export_releases, export_store

    path = tmp_path / "s.duckdb"
    _ingest(path)
    with ReleaseStore.open(path) as store:
        publish_periods(store, DropIdentifiers(), [], randomness(7),
                        acknowledged=Acknowledgements(unprotected=True, gap=True, seeded=True))
    with ReleaseStore.open(path, read_only=True) as store:
        whole = {p: (store.release_rows(p), store.manifest(p)) for p in store.published_periods()}
        export_releases(whole, tmp_path / "whole", fmt)
        read = []
        real_rows = ReleaseStore.release_rows

        def release_rows(self, period, *args, **kwargs):
            read.append(period)
            return real_rows(self, period, *args, **kwargs)

        monkeypatch.setattr(ReleaseStore, "release_rows", release_rows)
        exported = export_store(store, tmp_path / "streamed", fmt)
    assert read == list(whole) and len(read) == 3      # each release once, in time order
    assert [f.name for f in exported.folders] == list(whole)
    assert _files(tmp_path / "streamed") == _files(tmp_path / "whole")


def test_an_export_of_a_store_with_nothing_published_is_refused(tmp_path) -> None:
    from medanon.pipeline.export import export_store

    path = tmp_path / "s.duckdb"
    _ingest(path)
    with ReleaseStore.open(path, read_only=True) as store, \
            pytest.raises(StoreError, match="Nothing is published"):
        export_store(store, tmp_path / "out")
    assert not (tmp_path / "out").exists()
