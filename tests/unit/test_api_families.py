"""The table and EHR families in the Publisher shape: loaders, the in-memory gate, wrong-family
data, and ``release.write`` writing what the command line writes."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import medanon
from medanon.cli.app import main
from medanon.data.synth.ehr import write_synth_ehr
from medanon.data.synth.table import write_synth_table
from medanon.errors import PrivacyViolation, SchemaError, ValidationError
from medanon.verify import gate_one_off, verify_release_folder


@pytest.fixture(scope="module")
def table():
    return medanon.Table.synthetic(2000, seed=1)


@pytest.fixture(scope="module")
def ehr():
    return medanon.EhrRecords.synthetic(300, seed=1)


def without_time(manifest: dict) -> dict:
    return {k: v for k, v in manifest.items() if k != "published_at"}


# -- loaders ------------------------------------------------------------------------------------

def test_table_loaders_agree(tmp_path):
    csv_path, schema_path = write_synth_table(tmp_path / "patients.csv", rows=500, seed=4)
    from_csv = medanon.Table.read(csv_path)              # the schema beside the table
    named = medanon.Table.read(csv_path, schema_path)
    frame = pd.read_csv(csv_path, dtype=str)
    from_frame = medanon.Table.from_dataframe(frame, schema_path)
    parquet = tmp_path / "copy.parquet"
    import duckdb

    with duckdb.connect() as con:
        con.register("frame", frame)
        con.execute(f"COPY frame TO '{parquet}' (FORMAT PARQUET)")
    from_parquet = medanon.Table.read(parquet, schema_path)
    assert len(from_csv) == 500
    assert {t.digest for t in (from_csv, named, from_frame, from_parquet)} == {from_csv.digest}
    with pytest.raises(SchemaError, match="'schema' parameter is missing"):
        medanon.Table.read(parquet)                         # no copy.schema.toml beside it
    with pytest.raises(ValidationError, match="'frame' parameter of Table.from_dataframe"):
        medanon.Table.from_dataframe(csv_path, schema_path)


def test_ehr_loaders_agree(tmp_path):
    paths = write_synth_ehr(tmp_path / "ehr", patients=120, seed=5)
    read = medanon.EhrRecords.read(paths["diagnoses"], paths["admissions"])
    synthetic = medanon.EhrRecords.synthetic(120, seed=5)
    assert read.digest() == synthetic.digest() and read.n_patients == 120
    kept = medanon.EhrRecords.read(paths["diagnoses"], paths["admissions"], min_admissions=2)
    assert kept.min_admissions == 2 and 0 < kept.n_patients < 120
    with pytest.raises(ValidationError, match="'data' parameter of EhrRecords"):
        medanon.EhrRecords(read.events)


# -- the gate, in memory --------------------------------------------------------------------------

def test_kanon_release_is_checked_on_its_rows(table):
    release = medanon.Publisher("kanon", k=5).publish(table)
    assert release.verified and release.verdict == "passed"
    entry = release.manifest["verification"]
    assert entry["model"] == "k-anonymity" and "k=5 per class" in entry["checked"]
    # strings, as release.csv reads back
    assert all(pd.api.types.is_string_dtype(t) for t in release.rows.dtypes)
    # The same check refuses rows that break k (a class cut to one row).
    dims = ["age", "sex", "los", "surgery", "region"]
    sizes = release.rows.groupby(dims).size()
    cls = sizes[sizes >= 2].index[0]
    hit = (release.rows[dims] == pd.Series(cls, index=dims)).all(axis=1)
    broken = pd.concat([release.rows[~hit], release.rows[hit].head(1)])
    with pytest.raises(PrivacyViolation, match=r"holds 1 record\(s\) < k=5") as caught:
        gate_one_off("kanon release", broken, release.manifest)
    assert caught.value.verification["verdict"] == "violated"


def test_a_violating_table_release_is_refused_or_flagged(table, monkeypatch):
    from medanon.pipeline import tabular

    real = tabular.tabular_csv
    # What is checked is what would be written: cut the rendered release.csv to a few rows.
    monkeypatch.setattr(tabular, "tabular_csv",
                        lambda frame: real(frame.head(3)))
    publisher = medanon.Publisher("kanon", k=5)
    with pytest.raises(PrivacyViolation, match="was not published"):
        publisher.publish(table)
    kept = publisher.publish(table, allow_violations=True)
    assert kept.verdict == "violated" and not kept.verified
    assert kept.manifest["verification"]["published_despite_violations"] is True
    assert kept.manifest["verification"]["violations"]


def test_ehr_releases_carry_the_verdict_of_their_model(ehr, tmp_path):
    release = medanon.Publisher("clinsimrr", epsilon=1, seed=3).publish(ehr)
    entry = release.manifest["verification"]
    assert release.verdict == "passed" and entry["model"] == release.manifest["method"]["privacy_model"]
    assert "epsilon=1 per element" in entry["checked"]
    assert release.summary["patients"]["evaluation"] == release.rows["patient"].nunique()
    assert "input_sha256" not in json.dumps(release.manifest)
    folder = release.write(tmp_path / "clinsim")
    assert verify_release_folder(folder).checked == entry["checked"]
    none = medanon.Publisher("suppression").publish(ehr)
    assert none.verdict == "not-applicable" and not none.verified


# -- families and parameters ----------------------------------------------------------------------

def test_data_of_another_family_is_refused(table, ehr):
    cases = [(medanon.Publisher("ipa", epsilon=1), ehr, "must be a Table for table method 'ipa'"),
             (medanon.Publisher("clinsimrr", epsilon=1), table,
              "must be an EhrRecords for ehr method 'clinsimrr'"),
             (medanon.Publisher("ppms++", k=5, theta=0.5), table,
              "must be a Dataset for periodic method 'ppms\\+\\+'")]
    for publisher, data, message in cases:
        with pytest.raises(ValidationError, match="The 'data' parameter of Publisher.publish " + message):
            publisher.publish(data)


def test_parameters_of_another_family_are_refused(table):
    with pytest.raises(ValidationError, match="'gamma' parameter of Publisher does not apply to "
                                              "table method 'ipa'"):
        medanon.Publisher("ipa", epsilon=1, gamma=0.1)
    with pytest.raises(ValidationError, match="'threshold' parameter of Publisher does not apply "
                                              "to periodic method"):
        medanon.Publisher("ppms++", k=5, theta=0.5, threshold=3)
    with pytest.raises(ValidationError, match="'epsilon' parameter of Publisher is required"):
        medanon.Publisher("dphist")
    with pytest.raises(ValidationError, match="'aux_fraction' parameter of Publisher"):
        medanon.Publisher("clinsimrr", epsilon=1, aux_fraction=1.0)
    with pytest.raises(ValidationError, match="'sensitive' parameter of Publisher"):
        medanon.Publisher("clinsimrr", epsilon=1, sensitive="nope")
    with pytest.raises(ValidationError, match="'periods' parameter of Publisher.publish does not "
                                              "apply to table method 'kanon'"):
        medanon.Publisher("kanon", k=5).publish(table, ["2020Q1"])


# -- release.write == the command line ------------------------------------------------------------

def test_table_release_write_is_what_medanon_ipa_writes(tmp_path):
    csv_path, _ = write_synth_table(tmp_path / "patients.csv", rows=2000, seed=2)
    assert main(["ipa", str(csv_path), "--method", "ipa", "--epsilon", "1", "--seed", "5",
                 "--allow-seeded", "--out", str(tmp_path / "cli")]) == 0
    release = medanon.Publisher("ipa", epsilon=1, seed=5).publish(medanon.Table.read(csv_path))
    folder = release.write(tmp_path / "api")
    assert (folder / "release.csv").read_bytes() == (tmp_path / "cli" / "release.csv").read_bytes()
    cli_manifest = json.loads((tmp_path / "cli" / "manifest.json").read_text())
    assert without_time(json.loads((folder / "manifest.json").read_text())) == \
        without_time(cli_manifest)
    assert cli_manifest["verification"]["verdict"] == "passed"


def test_ehr_release_write_is_what_medanon_clinsim_writes(tmp_path):
    paths = write_synth_ehr(tmp_path / "ehr", patients=300, seed=6)
    assert main(["clinsim", str(paths["diagnoses"]), "--admissions", str(paths["admissions"]),
                 "--method", "clinsimrr", "--epsilon", "1", "--seed", "4", "--allow-seeded",
                 "--out", str(tmp_path / "cli")]) == 0
    data = medanon.EhrRecords.read(paths["diagnoses"], paths["admissions"])
    folder = medanon.Publisher("clinsimrr", epsilon=1, seed=4).publish(data).write(tmp_path / "api")
    assert without_time(json.loads((folder / "manifest.json").read_text())) == \
        without_time(json.loads((tmp_path / "cli" / "manifest.json").read_text()))
    # The same records (codes, times, structure) under other pseudonyms: the seed reproduces the
    # release, not its pseudonym key, which each run draws afresh (issue 29); the rows are sorted
    # by pseudonym, so their order differs too.
    api, cli = (pd.read_csv(f / "release.csv", dtype=str, keep_default_na=False)
                for f in (folder, tmp_path / "cli"))
    assert records(api) == records(cli)
    assert set(api["patient"]).isdisjoint(cli["patient"])
    assert set(api["admission"]).isdisjoint(cli["admission"])


def records(rows: pd.DataFrame) -> list[tuple]:
    """Each patient's rows without the identifiers, the patients sorted."""
    columns = ["admission_rank", "time", "position", "code"]
    return sorted(tuple(map(tuple, group[columns].to_numpy().tolist()))
                  for _, group in rows.groupby("patient", sort=False))
