"""The CLI end to end: ingest -> release -> export (csv, parquet, FAERS) -> read back."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest

from medanon.data.loaders.faers import read_faers_table
from medanon.hierarchies import read_arx
from medanon.published.format import read_series
from tests.conftest import FAERS_FIXTURES, invoke_cli, run_cli

EXPECTED = json.loads((FAERS_FIXTURES / "expected.json").read_text(encoding="utf-8"))


def test_ingest_release_export_round_trip(tmp_path) -> None:
    store = tmp_path / "store.duckdb"
    ingest = run_cli("ingest", FAERS_FIXTURES, "--store", store, "--json")
    assert ingest.returncode == 0, ingest.stderr
    assert json.loads(ingest.stdout)["added"] == ["2011Q2", "2013Q1", "2015Q1"]

    released = run_cli("release", "--method", "none", "--allow-unprotected", "--allow-gap",
                       "--store", store, "--json")
    assert released.returncode == 0, released.stderr
    summaries = json.loads(released.stdout)
    assert [s["period"] for s in summaries] == ["2011Q2", "2013Q1", "2015Q1"]

    inspect = json.loads(run_cli("inspect", "--store", store, "--json").stdout)
    assert all(p["published"] for p in inspect["periods"])

    for fmt in ("csv", "parquet", "faers"):
        result = run_cli("export", "--store", store, "--out", tmp_path / fmt, "--format", fmt)
        assert result.returncode == 0, result.stderr

    series = read_series(tmp_path / "csv")
    assert [r.period for r in series] == ["2011Q2", "2013Q1", "2015Q1"]
    for release, summary in zip(series, summaries):
        rows, manifest = release.rows, release.manifest
        assert list(rows.columns) == ["period", "case_id", "group", "age", "sex", "weight",
                                      "indications", "reactions", "drugs",
                                      "drugs_primary_suspect", "drugs_secondary_suspect",
                                      "drugs_concomitant", "drugs_interacting", "outcomes",
                                      "init_fda_dt", "fda_dt"]
        assert rows["fda_dt"].str.fullmatch(r"\d{4}").all()  # published at year granularity
        assert len(rows) == summary["cases"] == manifest["counts"]["cases"]
        assert rows["case_id"].is_unique  # one row per case (super record)
        assert manifest["method"]["name"] == "none" and manifest["rng"]["kind"] == "secure"
        assert manifest["verification"]["verdict"] == "not-applicable"
        assert set(manifest["columns"]["withheld"]) == {"report_id", "age_years"}
        age_tree = read_arx(manifest["hierarchies"]["age"]["text"], name="age")
        assert set(rows["age"]) - {""} <= set(age_tree.nodes)  # "": a missing age, kept
        for cell in rows["reactions"]:
            assert cell.split("|") == sorted(set(cell.split("|")))
        for cell in rows["weight"]:
            float(cell or "nan")  # exact weights are plain numbers under method none, or empty

        parquet = duckdb.connect().execute(
            f"SELECT * FROM read_parquet('{tmp_path / 'parquet' / release.period / 'release.parquet'}')").df()
        pd.testing.assert_frame_equal(parquet.astype(str).reset_index(drop=True),
                                      rows.astype(str).reset_index(drop=True), check_dtype=False)

        tag = release.period[2:4] + release.period[4:]
        demo = read_faers_table(tmp_path / "faers" / release.period / f"DEMO{tag}.txt")
        reac = read_faers_table(tmp_path / "faers" / release.period / f"REAC{tag}.txt")
        assert sorted(demo["caseid"]) == sorted(rows["case_id"])
        assert len(reac) == sum(len(c.split("|")) for c in rows["reactions"] if c)

    # FAERS carries 'VITAMIN B$12'; the FAERS-layout export must not reproduce the '$' defect.
    assert "VITAMIN B$12" in series[0].rows["drugs"].str.cat(sep="|")
    drug = read_faers_table(tmp_path / "faers" / "2011Q2" / "DRUG11Q2.txt")
    assert "VITAMIN B 12" in set(drug["drugname"])

    # The identifiers and private columns never leave the store.
    csv_text = (tmp_path / "csv" / "2015Q1" / "release.csv").read_text(encoding="utf-8")
    for report_id in (r["report_id"] for r in EXPECTED["faers_2015Q1"]["reports"]):
        assert report_id not in csv_text.split(",")
    # A known case, checked against the hand-derived oracle.
    wanted = {r["report_id"]: r for r in EXPECTED["faers_2015Q1"]["reports"]}["109123451"]
    # released under its keyed pseudonym (issue 41): the store's key maps it
    from medanon.pipeline.case_ids import pseudonyms
    from medanon.store import ReleaseStore

    with ReleaseStore.open(store, read_only=True) as db:
        published = pseudonyms(db.case_key(), [wanted["case_id"]])[0]
    assert wanted["case_id"] not in set(series[2].rows["case_id"])
    row = series[2].rows.set_index("case_id").loc[published]
    assert row["reactions"] == "|".join(wanted["reactions"])
    assert row["sex"] == wanted["sex"]
    assert float(row["weight"]) == wanted["weight_kg"]


def test_version_flag_and_help() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("medanon ")
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("ingest", "release", "export", "inspect", "demo", "synth"):
        assert command in result.stdout


def test_synth_ingest_release_export_series(tmp_path) -> None:
    series = tmp_path / "synth"
    synth = run_cli("synth", "faers", series, "--periods", "3", "--cases", "300", "--seed", "5", "--json")
    assert synth.returncode == 0, synth.stderr
    made = json.loads(synth.stdout)
    assert made["periods"] == ["2020Q1", "2020Q2", "2020Q3"] and made["seeded"] is True
    store = tmp_path / "s.duckdb"
    ingest = run_cli("ingest", series, "--store", store, "--json")
    assert ingest.returncode == 0, ingest.stderr
    quarters = json.loads(ingest.stdout)["quarters"]
    assert [q["demo_rows"] for q in quarters] == [made["reports"][p] for p in made["periods"]]
    assert all(q["era"] == "faers-2014" and q["cases"] > 150 for q in quarters)
    # Publish the first period alone, then the rest, seeded (recorded in the manifest).
    unprotected = ("--method", "none", "--allow-unprotected", "--store", store)
    assert run_cli("release", "2020Q1", *unprotected).returncode == 0
    rest = run_cli("release", *unprotected, "--seed", "11", "--allow-seeded", "--json")
    assert rest.returncode == 0, rest.stderr
    assert [s["period"] for s in json.loads(rest.stdout)] == ["2020Q2", "2020Q3"]
    assert run_cli("export", "--store", store, "--out", tmp_path / "out").returncode == 0
    releases = read_series(tmp_path / "out")
    assert [r.manifest["rng"]["kind"] for r in releases] == ["secure", "seeded", "seeded"]
    assert releases[1].manifest["rng"]["seed"] == 11
    # Follow-ups keep their CaseID across releases: exactly what the BFL-attacks exploit.
    first, second = (set(r.rows["case_id"]) for r in releases[:2])
    assert len(first & second) > 0.05 * len(second)


@pytest.mark.slow  # the demo's whole flow, twice
def test_demo_runs_and_reruns(tmp_path) -> None:
    out = tmp_path / "demo"
    for _ in range(2):  # a second run replaces the demo's own earlier output
        result = run_cli("demo", "--out", out)
        assert result.returncode == 0, result.stderr
        assert "Demo finished" in result.stdout
    releases = read_series(out / "published")
    assert len(releases) == 8 and all(len(r.rows) > 300 for r in releases)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    result = invoke_cli("demo", "--out", foreign)
    assert result.returncode != 0 and "ValidationError: " in result.stderr
    assert (foreign / "thesis.tex").read_text() == "precious"
