"""Every report kept by default, and the pharmacovigilance fields (drugs per role, outcomes,
receipt dates) through every method's release; what ingest dropped in each manifest."""

from __future__ import annotations

import json
from dataclasses import replace
import shutil

import pandas as pd
import pytest

import medanon
from medanon.attacks.worst_case import attack_series
from medanon.data.loaders.faers import DRUG_ROLES
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.published.format import format_multi
from medanon.published.series import empty_series
from medanon.store import ReleaseStore
from medanon.verify import verify_series
from tests.conftest import FAERS_FIXTURES, assert_user_error, invoke_cli

NEW_MULTI = (*DRUG_ROLES.values(), "outcomes")
NEW_COLUMNS = (*NEW_MULTI, "init_fda_dt", "fda_dt")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pv") / "faers"
    write_faers_series(folder, periods=3, cases=300, seed=4)
    return folder


def test_ingest_keeps_every_report_and_drop_missing_restores_the_papers_filter(tmp_path):
    source = FAERS_FIXTURES / "legacy_2011Q2"
    reports = {}
    for name, flags in (("default", ()), ("keep", ("--keep-missing",)),
                        ("drop", ("--drop-missing",))):
        done = invoke_cli("ingest", source, "--store", tmp_path / f"{name}.duckdb", "--json",
                          *flags)
        assert done.returncode == 0, done.stderr
        (reports[name],) = json.loads(done.stdout)["quarters"]
    default, drop = reports["default"], reports["drop"]
    assert reports["keep"] == default  # --keep-missing: the default, still accepted
    assert default["kept_missing"] and default["dropped_reports"] == 0
    assert default["reports"] == default["reports_read"] == 8
    assert not drop["kept_missing"] and drop["dropped_reports"] > 0
    assert drop["reports"] == default["reports"] - drop["dropped_reports"]
    done = invoke_cli("ingest", source, "--store", tmp_path / "both.duckdb", "--drop-missing",
                      "--keep-missing")
    assert_user_error(done, "ValidationError", "--drop-missing and --keep-missing")
    assert not (tmp_path / "both.duckdb").exists()


def test_manifests_tell_what_ingest_dropped_and_dp_ones_hold_no_count(synthetic, tmp_path):
    base = tmp_path / "base.duckdb"
    assert invoke_cli("ingest", synthetic, "--store", base, "--drop-missing").returncode == 0
    with ReleaseStore.open(base) as db:
        reports = {p: db.ingest_report(p) for p in db.ingested_periods()}
    assert all(r["dropped_reports"] > 0 for r in reports.values())
    common = ("--k", "3", "--theta", "1", "--seed", "2", "--allow-seeded")
    for method, extra in (("ms", ()), ("ppms-dp-num", ("--epsilon", "1"))):
        store = tmp_path / f"{method}.duckdb"
        shutil.copy(base, store)
        done = invoke_cli("release", "--store", store, "--method", method, *common, *extra)
        assert done.returncode == 0, done.stderr
        out = tmp_path / f"{method}-export"
        assert invoke_cli("export", "--store", store, "--out", out).returncode == 0
        with ReleaseStore.open(store) as db:
            for period, report in reports.items():
                entry = db.manifest(period)["ingest"]
                counts = {"dropped_reports": report["dropped_reports"],
                          "dropped_by_column": report["missing"],
                          "deleted_reports": report["deleted_reports"],
                          "superseded_reports": report["superseded_reports"]}
                assert entry["kept_missing"] is False
                assert entry["required"] == ["age", "sex", "weight", "indications", "reactions"]
                private = db.operator_record(period)["private_details"]
                # every release (issue 41; before, one without an epsilon published them):
                # the flag and the filter, no count
                assert set(entry) == {"kept_missing", "required", "counts"}
                assert private["ingest"] == counts
                published = json.loads((out / period / "manifest.json").read_text())
                assert "dropped_reports" not in json.dumps(published)


def test_every_method_publishes_the_pv_fields_as_they_are_on_kept_missing_data(synthetic):
    data = medanon.Dataset.from_faers(synthetic)
    assert data.schema == Schema.default()
    records = pd.concat([data.records(p) for p in data.periods])
    assert records["weight"].isna().any() and records["age"].isna().any()  # kept, not dropped
    methods = {"none": {}, "ms": {"k": 3, "theta": 1.0}, "ppms": {"k": 3, "theta": 1.0},
               "ppms+": {"k": 3, "theta": 1.0}, "ppms++": {"k": 3, "theta": 1.0},
               "ha": {"k": 3, "theta": 1.0, "alpha": 1.0},
               "ppms-dp-num": {"k": 3, "theta": 1.0, "epsilon": 1},
               "ppms-dp-all": {"k": 3, "theta": 1.0, "epsilon": 1}}
    columns = ["period", "case_id", "group", *data.schema.published]
    for method, parameters in methods.items():
        publisher = medanon.Publisher(method, seed=1, **parameters)
        series = publisher.publish(data, allow_unprotected=method == "none")
        assert series.releases_published, method
        for release in series.releases_published:
            rows = release.rows
            assert list(rows.columns) == columns, method
            # the original cases under their published CaseIDs (pseudonyms, issue 41)
            supers = publisher.case_ids.records(data.super_records(release.period).frame,
                                                "case_id").set_index("case_id")
            truth = supers.loc[rows["case_id"]]
            for column in NEW_MULTI:  # published as they are
                assert rows[column].tolist() == [format_multi(v) for v in truth[column]], \
                    (method, column)
            for column in ("init_fda_dt", "fda_dt"):  # at year granularity
                want = [str(v)[:4] if isinstance(v, str) else "" for v in truth[column]]
                assert rows[column].tolist() == want, (method, column)
            assert release.manifest["columns"]["dates"] == {"init_fda_dt": "year",
                                                            "fda_dt": "year"}
            assert release.manifest["ingest"]["kept_missing"] is True


def test_verdict_and_attacks_ignore_the_pv_fields(synthetic):
    """The same releases with and without the new columns: the same verdict and attack results
    (attacks read only the QID and sensitive columns; verify also checks that the dates are
    the ones the series derives)."""
    data = medanon.Dataset.from_faers(synthetic)
    for method in ("ms", "ppms++"):
        series = medanon.Publisher(method, k=3, theta=1.0, seed=1).publish(data)
        full = empty_series(data.schema)
        bare = empty_series(Schema.papers())
        for release in series.releases_published:
            full = full.with_release(release.period, release.rows, release.manifest)
            manifest = json.loads(json.dumps(release.manifest))
            columns = manifest["columns"]
            columns["multi"] = [c for c in columns["multi"] if c not in NEW_MULTI]
            columns["dates"] = {}
            bare = bare.with_release(release.period, release.rows.drop(columns=list(NEW_COLUMNS)),
                                     manifest)
        checked, without = verify_series(full), verify_series(bare)
        # the verdicts agree; the full one also says it checked that the dates are derived
        # from the series (issue 29: a reported date lets the L-attack exclude cases)
        assert [replace(r, checked=r.checked.split("; dates ")[0]) for r in checked.releases] \
            == list(without.releases)
        assert all(r.checked.endswith("; dates init_fda_dt, fda_dt derived from the series (no "
                                      "reported date)") for r in checked.releases)
        assert attack_series(full).to_dict(all_groups=True) == \
            attack_series(bare).to_dict(all_groups=True)
        # the new columns are there, with terms, in the full series
        assert any(full.releases[p]["outcomes"].str.len().gt(0).any() for p in full.periods)


def test_a_store_made_before_the_pv_fields_keeps_publishing_what_its_schema_says(synthetic,
                                                                                tmp_path):
    """A store created with the papers' schema (as every store was before the FAERS schema had
    drug roles, outcomes and dates): ingest without --schema keeps its schema, and its
    releases publish its columns, not the new default's."""
    store = tmp_path / "old.duckdb"
    first = medanon.Dataset.from_faers(synthetic, schema=Schema.papers())
    with ReleaseStore.create_or_open(store, Schema.papers()) as db:
        db.ingest([first.quarters[0]])
        assert "outcomes" not in db.records(first.periods[0]).columns
        stored = db.schema
    assert stored == Schema.papers() and "dates" not in Schema.papers().to_toml()
    # the next quarters, ingested the way a user would: no --schema
    done = invoke_cli("ingest", synthetic, "--store", store)
    assert done.returncode == 0, done.stderr
    done = invoke_cli("release", "--store", store, "--method", "ppms++", "--k", "3", "--theta",
                      "1", "--seed", "1", "--allow-seeded")
    assert done.returncode == 0, done.stderr
    with ReleaseStore.open(store) as db:
        assert db.schema == Schema.papers()
        assert len(db.published_periods()) == 3
        for period in db.published_periods():
            rows = db.release_rows(period)
            assert list(rows.columns) == ["period", "case_id", "group", *Schema.papers().published]
            assert db.manifest(period)["columns"]["dates"] == {}
    out = tmp_path / "export"
    assert invoke_cli("export", "--store", store, "--out", out).returncode == 0
    assert invoke_cli("verify", out).returncode == 0
