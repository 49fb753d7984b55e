"""Golden tests of FAERS ingestion on hand-made fixtures in all three format eras.

The expected values in ``tests/fixtures/faers/expected.json`` were derived by hand from FDA's
layouts and the reading rules, independently of the reader (see the fixtures' README).
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from medanon.data.loaders.faers import read_faers, read_faers_table
from tests.conftest import FAERS_FIXTURES

EXPECTED = json.loads((FAERS_FIXTURES / "expected.json").read_text(encoding="utf-8"))
SOURCES = {"legacy_2011Q2": "legacy_2011Q2", "faers_2013Q1": "faers_2013Q1.zip",
           "faers_2015Q1": "faers_2015Q1"}


def _missing(value: object) -> bool:
    return value is None or (not isinstance(value, (str, tuple)) and pd.isna(value))


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_reports_match_hand_derived_oracle(key: str) -> None:
    expected = EXPECTED[key]
    ingest = read_faers(FAERS_FIXTURES / SOURCES[key], keep_missing=True)
    assert len(ingest.quarters) == 1
    quarter = ingest.quarters[0]
    assert quarter.period.label == expected["period"]
    assert quarter.era == expected["era"]
    assert quarter.report.demo_rows == expected["demo_rows"]
    assert quarter.report.deleted_cases == len(expected["deleted_cases"])
    assert quarter.report.superseded_reports == len(expected["superseded_reports"])
    got = {row["report_id"]: row for row in quarter.records.to_dict(orient="records")}
    assert sorted(got) == sorted(r["report_id"] for r in expected["reports"])
    for want in expected["reports"]:
        row = got[want["report_id"]]
        assert row["case_id"] == want["case_id"]
        if want["version"] is None:
            assert _missing(row["version"])
        else:
            assert int(row["version"]) == want["version"]
        if want["age_years"] is None:
            assert _missing(row["age_years"]) and _missing(row["age"])
        else:
            assert math.isclose(row["age_years"], want["age_years"], abs_tol=1e-3)
        if want["weight_kg"] is None:
            assert _missing(row["weight"])
        else:
            assert math.isclose(row["weight"], want["weight_kg"], abs_tol=1e-2)
        assert (None if _missing(row["sex"]) else row["sex"]) == want["sex"]
        for column in ("drugs", "reactions", "indications"):
            assert list(row[column]) == want[column], (want["report_id"], column)
    deleted = set(expected["deleted_cases"])
    assert deleted <= ingest.deleted_case_ids
    assert not deleted & set(quarter.records["case_id"])
    assert not set(expected["superseded_reports"]) & set(quarter.records["report_id"])


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_every_report_is_kept_by_default(key: str) -> None:
    expected = EXPECTED[key]
    quarter = read_faers(FAERS_FIXTURES / SOURCES[key]).quarters[0]
    assert sorted(quarter.records["report_id"]) == sorted(r["report_id"] for r in expected["reports"])
    assert quarter.report.kept_missing and quarter.report.dropped_reports == 0
    assert quarter.report.missing["age"] == sum(r["age_years"] is None for r in expected["reports"])


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_incomplete_reports_are_dropped_and_counted(key: str) -> None:
    expected = EXPECTED[key]
    quarter = read_faers(FAERS_FIXTURES / SOURCES[key], keep_missing=False).quarters[0]
    assert sorted(quarter.records["report_id"]) == sorted(expected["complete_reports"])
    report = quarter.report
    assert not report.kept_missing
    assert report.dropped_reports == len(expected["reports"]) - len(expected["complete_reports"])
    by_id = {r["report_id"]: r for r in expected["reports"]}
    assert report.missing["age"] == sum(r["age_years"] is None for r in by_id.values())
    assert report.missing["sex"] == sum(r["sex"] is None for r in by_id.values())
    assert report.missing["weight"] == sum(r["weight_kg"] is None for r in by_id.values())
    assert report.missing["reactions"] == sum(not r["reactions"] for r in by_id.values())
    assert report.missing["indications"] == sum(not r["indications"] for r in by_id.values())


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_known_defects_are_repaired(key: str, tmp_path) -> None:
    quarter = read_faers(FAERS_FIXTURES / SOURCES[key], keep_missing=True).quarters[0]
    repairs = EXPECTED[key]["repaired_fields"]
    split = sum(1 for r in repairs if r["defect"] == "split_line")
    embedded = sum(1 for r in repairs if r["defect"] == "embedded_delimiter")
    assert sum(quarter.report.repaired_split_lines.values()) == split
    assert sum(quarter.report.repaired_embedded_separators.values()) == embedded
    source = FAERS_FIXTURES / SOURCES[key]
    if source.suffix == ".zip":
        import zipfile
        zipfile.ZipFile(source).extractall(tmp_path)
        source = tmp_path
    for repair in repairs:
        table = read_faers_table(source / repair["file"])
        id_column = "isr" if "isr" in table.columns else "primaryid"
        rows = table[table[id_column] == repair["report_id"]]
        assert repair["value"] in set(rows[repair["field"].lower()]), repair


def test_folder_of_several_quarters_reads_all_eras_in_time_order(tmp_path) -> None:
    ingest = read_faers(FAERS_FIXTURES)
    assert [q.period.label for q in ingest.quarters] == ["2011Q2", "2013Q1", "2015Q1"]
    assert [q.era for q in ingest.quarters] == ["legacy", "faers-2012", "faers-2014"]
    # DELETE lists apply to every quarter of the same ingest.
    assert ingest.deleted_case_ids >= {"9012345", "10955501"}


def test_legacy_keeps_every_isr_of_a_case() -> None:
    quarter = read_faers(FAERS_FIXTURES / "legacy_2011Q2", keep_missing=True).quarters[0]
    reports = quarter.records.loc[quarter.records["case_id"] == "7501987", "report_id"]
    assert sorted(reports) == ["7523410", "7619876"]


def test_byte_order_mark_and_trailing_separator_mismatch(tmp_path) -> None:
    # A UTF-8 BOM before the header, and data rows ending in '$' under a header that does not
    # (decided by most rows, so a lone row with an embedded '$' keeps its meaning elsewhere).
    demo = tmp_path / "REAC15Q1.txt"
    demo.write_bytes(b"\xef\xbb\xbfprimaryid$caseid$pt\r\n1$10$Nausea$\r\n2$20$Rash$\r\n3$30$Cough\r\n")
    table = read_faers_table(demo)
    assert list(table.columns) == ["primaryid", "caseid", "pt"]
    assert table["pt"].tolist() == ["Nausea", "Rash", "Cough"]


def test_split_lines_in_files_with_row_trailing_separators_and_in_the_last_field(tmp_path) -> None:
    # Rows end in '$' under a header that does not, and one record is split inside drugname.
    drug = tmp_path / "DRUG20Q1.txt"
    drug.write_bytes(b"primaryid$caseid$drug_seq$role_cod$drugname$prod_ai\r\n"
                     b"1$10$1$PS$ASPI\r\nRIN$ASA$\r\n2$20$1$PS$WARFARIN$WARFARIN$\r\n"
                     b"3$30$1$PS$HUMIRA$ADALIMUMAB$\r\n")
    assert read_faers_table(drug)["drugname"].tolist() == ["ASPI RIN", "WARFARIN", "HUMIRA"]
    # No trailing '$' anywhere and a split inside the LAST field: the tail belongs to the
    # previous record, never glued onto the next complete one.
    reac = tmp_path / "REAC20Q1.txt"
    reac.write_bytes(b"primaryid$caseid$pt\r\n1$10$Naus\r\nea\r\n2$20$Rash\r\n3$30$Rash\r\n")
    table = read_faers_table(reac)
    assert table["primaryid"].tolist() == ["1", "2", "3"]
    assert table["pt"].tolist() == ["Naus ea", "Rash", "Rash"]


def test_version_ties_break_on_numeric_primaryid(tmp_path) -> None:
    quarter = tmp_path / "q"
    quarter.mkdir()
    header = "primaryid$caseid$caseversion$fda_dt$age$age_cod$sex$wt$wt_cod$"
    (quarter / "DEMO20Q1.txt").write_text(
        f"{header}\r\n99$7$1$20200101$40$YR$F$60$KG$\r\n100$7$1$20200101$40$YR$F$61$KG$\r\n",
        encoding="latin-1")
    (quarter / "DRUG20Q1.txt").write_text("primaryid$caseid$drugname$\r\n100$7$A$\r\n99$7$B$\r\n")
    (quarter / "REAC20Q1.txt").write_text("primaryid$caseid$pt$\r\n100$7$Rash$\r\n99$7$Cough$\r\n")
    (quarter / "INDI20Q1.txt").write_text("primaryid$caseid$indi_pt$\r\n100$7$Pain$\r\n99$7$Pain$\r\n")
    records = read_faers(quarter).quarters[0].records
    assert records["report_id"].tolist() == ["100"] and records["reactions"].tolist() == [("Rash",)]
