"""Input facts are never silent (issue 29): every DEMO row the loader drops is counted under a
named reason, every value it makes missing is counted, and ``strict`` refuses a quarter that
needed such a repair; none of these counts reaches a manifest of a DP release."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from medanon.data.loaders.faers import read_faers, strict_repairs
from medanon.errors import InputQualityError, ValidationError
from medanon.pipeline.publish import ingest_entry
from medanon.report.collect import ingest_accounting
from tests.conftest import FAERS_2022Q4_SUBSET, FAERS_FIXTURES, needs_shared

HEADER = "primaryid$caseid$caseversion$age$age_cod$age_grp$sex$wt$wt_cod$fda_dt$"
#: (primaryid, caseid, caseversion, age, age_cod, wt, wt_cod)
ROWS = [
    ("11", "1", "1", "40", "YR", "70", "KG"),
    ("11", "1", "1", "40", "YR", "70", "KG"),        # verbatim repeat: a duplicate, no conflict
    ("21", "2", "1", "99999", "YR", "70", "KG"),     # repeated below with other content
    ("21", "2", "1", "50", "YR", "70", "KG"),        # ... the last row is kept
    ("31", "3", "1", "30", "YR", "60", "KG"),        # case 3, version 1 twice under two ids
    ("32", "3", "1", "30", "YR", "60", "KG"),
    ("41", "4", "1", "20", "YR", "55", "KG"),        # superseded by version 2
    ("42", "4", "2", "20", "YR", "55", "KG"),
    ("51", "5", "1", "-1", "YR", "-5", "KG"),        # impossible age and weight
    ("61", "6", "1", "200", "DEC", "0", "KG"),       # 2000 years; zero weight
    ("71", "7", "1", "1500", "MON", "700", "KG"),    # 125 years; 700 kg
    ("81", "8", "1", "1441", "MON", "0.1", "KG"),    # 120.08 years; 0.1 kg
    ("91", "9", "1", "1440", "MON", "0.2", "KG"),    # exactly 120 years and 0.2 kg: plausible
    ("101", "10", "1", "35", "", "80", ""),          # values without their unit
]


def _quarter(folder: Path, rows=ROWS, *, extra: dict[str, list[str]] | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "DEMO21Q3.txt").write_text(HEADER + "\n" + "".join(
        f"{p}${c}${v}${a}${ac}$$F${w}${wc}$20210801$\n" for p, c, v, a, ac, w, wc in rows))
    extra = extra or {}
    for table, columns in (("DRUG", "primaryid$drugname$role_cod$"), ("REAC", "primaryid$pt$"),
                           ("INDI", "primaryid$indi_pt$"), ("OUTC", "primaryid$outc_cod$")):
        (folder / f"{table}21Q3.txt").write_text(columns + "\n" + "".join(
            line + "\n" for line in extra.get(table, [])))
    return folder


def test_every_dropped_demo_row_has_a_named_reason(tmp_path) -> None:
    (quarter,) = read_faers(_quarter(tmp_path / "q")).quarters
    report = quarter.report
    assert report.demo_rows == len(ROWS) == 14
    assert report.duplicate_rows == 2           # 11 and 21 repeated
    assert report.conflicting_duplicates == 1  # only 21's rows differ
    assert report.same_version_reports == 1    # 31/32: one case version under two ids
    assert report.superseded_reports == 1      # case 4 version 1
    assert report.reports_read == 10
    assert report.demo_rows == (report.duplicate_rows + report.same_version_reports
                                + report.superseded_reports + report.reports_read)
    ids = set(quarter.records["report_id"])
    assert {"11", "21", "32", "42"} <= ids and not {"31", "41"} & ids
    age = dict(zip(quarter.records["report_id"], quarter.records["age_years"]))
    assert age["21"] == 50  # the last row of a repeated id is kept


def test_impossible_and_unitless_ages_and_weights_are_missing_and_counted(tmp_path) -> None:
    (quarter,) = read_faers(_quarter(tmp_path / "q")).quarters
    report = quarter.report
    assert report.implausible == {"age": 4, "weight": 4}  # 51, 61, 71, 81 both
    assert report.without_unit == {"age": 1, "weight": 1}  # 101
    frame = quarter.records.set_index("report_id")
    for rid in ("51", "61", "71", "81", "101"):
        assert np.isnan(frame.loc[rid, "age_years"]) and np.isnan(frame.loc[rid, "weight"]), rid
    assert frame.loc["91", "age_years"] == pytest.approx(120.0)
    assert frame.loc["91", "weight"] == pytest.approx(0.2)
    # the dropped duplicate of 21 said 99999 years: not a value of any report, so not counted
    assert report.missing["age"] == 5 and report.missing["weight"] == 5


def test_rows_of_no_demo_row_are_counted_per_table(tmp_path) -> None:
    extra = {"DRUG": ["11$ASPIRIN$PS$", "999$ASPIRIN$PS$", "41$IBUPROFEN$C$"],  # 41: superseded
             "REAC": ["11$Nausea$", " 998$Rash$"],
             "INDI": ["11$Pain$"],
             "OUTC": ["999$DE$", "997$HO$", "31$OT$"]}  # 31: dropped for same version
    (quarter,) = read_faers(_quarter(tmp_path / "q", extra=extra)).quarters
    assert quarter.report.orphan_rows == {"DRUG": 1, "REAC": 1, "INDI": 0, "OUTC": 2}
    assert quarter.records.set_index("report_id").loc["11", "drugs"] == ("ASPIRIN",)


def test_strict_names_every_repair_and_reads_nothing(tmp_path) -> None:
    source = _quarter(tmp_path / "q", extra={"OUTC": ["999$DE$"]})
    with pytest.raises(InputQualityError) as caught:
        read_faers(source, strict=True)
    message = str(caught.value)
    for fragment in ("Quarter 2021Q3", "'strict' parameter of open_faers",
                     "1 duplicate DEMO row(s) whose content conflicts",
                     "1 report(s) dropped for another report of the same case and caseversion",
                     "4 implausible age(s) (outside 0-120 years", "4 implausible weight(s) "
                     "(outside 0.2-650 kg", "1 age(s) without a unit code",
                     "1 OUTC row(s) whose report id is in no DEMO row", "Nothing was ingested"):
        assert fragment in message, fragment


def test_strict_accepts_verbatim_duplicates_versions_and_repaired_lines(tmp_path) -> None:
    clean = [r for r in ROWS if r[0] in ("11", "41", "42", "91")]  # a verbatim repeat of 11
    (quarter,) = read_faers(_quarter(tmp_path / "q", clean), strict=True).quarters
    assert quarter.report.duplicate_rows == 1 and quarter.report.superseded_reports == 1
    assert quarter.report.repairs() == []
    # the golden fixtures have repaired embedded '$' and split lines, superseded versions and
    # DELETE lists: all accepted
    for name in ("legacy_2011Q2", "faers_2013Q1.zip", "faers_2015Q1"):
        (quarter,) = read_faers(FAERS_FIXTURES / name, strict=True).quarters
        report = quarter.report
        assert sum(report.repaired_split_lines.values()) + sum(
            report.repaired_embedded_separators.values()) > 0, name


def test_strict_must_be_a_bool(tmp_path) -> None:
    with pytest.raises(ValidationError, match="The 'strict' parameter of open_faers must be True"):
        read_faers(_quarter(tmp_path / "q"), strict="yes")


def test_strict_repairs_reads_a_stored_report_without_the_new_counts() -> None:
    assert strict_repairs({"demo_rows": 3, "missing": {"age": 1}}) == []  # an older store


def test_no_new_count_reaches_a_manifest(tmp_path) -> None:
    (quarter,) = read_faers(_quarter(tmp_path / "q", extra={"OUTC": ["999$DE$"]})).quarters
    report = quarter.report_dict()
    operator_only = ("duplicate_rows", "conflicting_duplicates", "same_version_reports",
                     "implausible", "without_unit", "orphan_rows")
    public, private = ingest_entry(report, dp=True)  # a DP release publishes no count at all
    assert set(public) == {"kept_missing", "required", "counts"}
    assert public["counts"].startswith("operator-only")
    assert not set(operator_only) & set(private["ingest"])
    # issue 41: a release without an ε publishes no count of its input either
    public_plain, private_plain = ingest_entry(report, dp=False)
    assert not set(operator_only) & set(public_plain)
    assert (public_plain, private_plain) == (public, private)
    assert private["ingest"]["superseded_reports"] == report["superseded_reports"]


def test_the_report_accounts_duplicates_by_name(tmp_path) -> None:
    (quarter,) = read_faers(_quarter(tmp_path / "q")).quarters
    (row,) = ingest_accounting([{"period": "2021Q3"}], {"2021Q3": quarter.report_dict()}, {})
    assert row["duplicates"] == 3 and row["conflicting"] == 2  # 2 repeated ids + 1 same version
    old = {k: v for k, v in quarter.report_dict().items()
           if k not in ("duplicate_rows", "conflicting_duplicates", "same_version_reports")}
    (row,) = ingest_accounting([{"period": "2021Q3"}], {"2021Q3": old}, {})
    assert row["duplicates"] == 3 and row["conflicting"] is None  # what the other counts leave


def _with_conflicting_duplicates(target: Path, n: int = 20) -> Path:
    """The real subset with its first ``n`` DEMO rows repeated before them, each with an age of
    99999 years: 258 + n DEMO rows."""
    with zipfile.ZipFile(FAERS_2022Q4_SUBSET) as archive:
        archive.extractall(target)
    demo = target / "ASCII" / "DEMO22Q4.txt"
    lines = demo.read_bytes().decode("latin-1").rstrip("\n").split("\n")
    header = lines[0].split("$")
    repeats = []
    for line in lines[1:n + 1]:
        fields = line.split("$")
        fields[header.index("age")], fields[header.index("age_cod")] = "99999", "YR"
        repeats.append("$".join(fields))
    demo.write_bytes("\n".join([lines[0], *repeats, *lines[1:]]).encode("latin-1") + b"\n")
    for pdf in target.rglob("*.pdf"):
        pdf.unlink()
    return target


@needs_shared
def test_real_subset_counts_and_278_demo_rows_that_became_258_reports(tmp_path) -> None:
    (quarter,) = read_faers(FAERS_2022Q4_SUBSET).quarters
    report = quarter.report
    assert (report.demo_rows, report.duplicate_rows, report.same_version_reports,
            report.superseded_reports, report.reports_read) == (258, 0, 0, 0, 258)
    assert report.implausible == {"age": 0, "weight": 0}
    assert report.without_unit == {"age": 0, "weight": 0}
    # the subset's tables are heads of FDA's files: OUTC's head reaches reports DEMO's does not
    assert report.orphan_rows == {"DRUG": 0, "REAC": 0, "INDI": 0, "OUTC": 846}

    (quarter,) = read_faers(_with_conflicting_duplicates(tmp_path / "dup")).quarters
    report = quarter.report
    assert (report.demo_rows, report.reports) == (278, 258)
    assert report.duplicate_rows == report.conflicting_duplicates == 20
    assert report.implausible["age"] == 0  # the 99999-year rows were the dropped ones
    shutil.rmtree(tmp_path / "dup")
