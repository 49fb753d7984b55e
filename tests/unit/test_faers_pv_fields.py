"""The pharmacovigilance fields of the FAERS loader: drugs per role, outcomes, receipt dates.

Expected values come from the files themselves, read here with pandas (not with the loader's
parser), or are written out by hand for the small fixtures.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medanon.data.loaders.faers import DRUG_ROLES, RECORD_COLUMNS, read_faers
from medanon.data.synth.faers import write_faers_series
from tests.conftest import FAERS_2022Q4_SUBSET, FAERS_FIXTURES, needs_shared

ROLE_OF = {v: k for k, v in DRUG_ROLES.items()}


def _table(path: Path) -> pd.DataFrame:
    """A '$'-separated FAERS table as pandas reads it (lower-case headers, stripped text)."""
    frame = pd.read_csv(path, sep="$", encoding="latin-1", dtype=str, keep_default_na=False,
                        index_col=False)
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    frame = frame.loc[:, [c for c in frame.columns if c and not c.startswith("unnamed")]]
    return frame.apply(lambda col: col.str.strip())


def _sets(frame: pd.DataFrame, key: str, value: str) -> dict[str, tuple[str, ...]]:
    frame = frame[frame[value] != ""]
    return {k: tuple(sorted(set(v))) for k, v in frame.groupby(key)[value]}


def _expected(folder: Path, tag: str, id_col: str = "primaryid") -> dict[str, dict]:
    """Per report id: drugs per role, outcomes and the two dates, from the files."""
    demo = _table(folder / f"DEMO{tag}.txt").set_index(id_col)
    drug = _table(folder / f"DRUG{tag}.txt")
    outc = _table(folder / f"OUTC{tag}.txt")
    drug["role_cod"] = drug["role_cod"].str.upper()
    out = {}
    per_role = {column: _sets(drug[drug["role_cod"] == code], id_col, "drugname")
                for code, column in DRUG_ROLES.items()}
    every = _sets(drug, id_col, "drugname")
    outcomes = _sets(outc, id_col, "outc_cod")
    for rid, row in demo.iterrows():
        want = {column: per_role[column].get(rid, ()) for column in DRUG_ROLES.values()}
        want["drugs"] = every.get(rid, ())
        want["outcomes"] = outcomes.get(rid, ())
        want["fda_dt"] = row["fda_dt"] or None
        want["init_fda_dt"] = row.get("init_fda_dt") or None
        out[rid] = want
    return out


def _check(records: pd.DataFrame, expected: dict[str, dict]) -> None:
    assert list(records.columns) == list(RECORD_COLUMNS)
    assert len(records) > 0
    for row in records.to_dict(orient="records"):
        want = expected[row["report_id"]]
        for column, value in want.items():
            got = row[column]
            assert (None if got is None or (isinstance(got, float) and np.isnan(got)) else got) \
                == value, (row["report_id"], column)
        # every role's drugs are drugs of the report
        assert set().union(*(row[c] for c in DRUG_ROLES.values())) <= set(row["drugs"])


def test_synthetic_series_roles_outcomes_and_dates_are_the_files(tmp_path) -> None:
    summary = write_faers_series(tmp_path / "s", periods=2, cases=300, seed=8)
    ingest = read_faers(summary.out)
    seen_roles = set()
    for quarter in ingest.quarters:
        tag = quarter.period.label[2:]
        expected = _expected(summary.out / quarter.period.label, tag)
        _check(quarter.records, expected)
        report = quarter.report
        assert report.absent == [] and report.unknown_roles == {}
        assert report.invalid_dates == {"init_fda_dt": 0, "fda_dt": 0}
        seen_roles |= {c for c in DRUG_ROLES.values() if quarter.records[c].map(len).any()}
        assert quarter.records["outcomes"].map(len).any()
    assert {"drugs_primary_suspect", "drugs_concomitant"} <= seen_roles


@needs_shared
def test_real_2022q4_subset_roles_outcomes_and_dates_are_the_files(tmp_path) -> None:
    (quarter,) = read_faers(FAERS_2022Q4_SUBSET).quarters
    with zipfile.ZipFile(FAERS_2022Q4_SUBSET) as archive:
        archive.extractall(tmp_path)
    folder = next(p.parent for p in tmp_path.rglob("DEMO22Q4.txt"))
    expected = _expected(folder, "22Q4")
    _check(quarter.records, expected)
    records = quarter.records
    # the real subset has primary suspects, secondary suspects, concomitants and outcomes
    for column in ("drugs_primary_suspect", "drugs_secondary_suspect", "drugs_concomitant",
                   "outcomes"):
        assert records[column].map(len).sum() > 0, column
    assert records["init_fda_dt"].str.fullmatch(r"\d{8}").all()
    assert quarter.report.kept_missing and len(records) == quarter.report.reports_read - \
        quarter.report.deleted_reports


def test_fixture_roles_and_outcomes_by_hand() -> None:
    legacy = read_faers(FAERS_FIXTURES / "legacy_2011Q2").quarters[0]
    row = legacy.records.set_index("report_id").loc["7588201"]
    assert row["drugs_primary_suspect"] == ("METHOTREXATE",)
    assert row["drugs_concomitant"] == ("FOLIC ACID", "PREDNISONE", "VITAMIN B$12")
    assert row["drugs_secondary_suspect"] == () and row["drugs_interacting"] == ()
    assert row["outcomes"] == ("HO", "OT") and row["fda_dt"] == "20110428"
    assert pd.isna(row["init_fda_dt"])  # legacy AERS has no initial FDA date
    assert legacy.report.absent == ["DEMO.init_fda_dt"]
    modern = read_faers(FAERS_FIXTURES / "faers_2015Q1").quarters[0]
    row = modern.records.set_index("report_id").loc["1087654311"]  # v11; v9 is superseded
    assert row["outcomes"] == ("DS", "HO") and row["init_fda_dt"] == "20140310"
    assert row["drugs_primary_suspect"] == ("ELIQUIS",) and row["drugs_concomitant"] == ("METOPROLOL",)
    row = modern.records.set_index("report_id").loc["109812341"]  # a split drug name rejoined
    assert row["drugs_primary_suspect"] == ("ACETYLSALICYLIC ACID",)
    assert row["drugs_secondary_suspect"] == ("CLOPIDOGREL",)


def _quarter(folder: Path, *, demo: str, drug: str, outc: str | None) -> Path:
    folder.mkdir()
    (folder / "DEMO20Q1.txt").write_text(demo, encoding="latin-1")
    (folder / "DRUG20Q1.txt").write_text(drug, encoding="latin-1")
    (folder / "REAC20Q1.txt").write_text("primaryid$caseid$pt$\n1$10$Rash$\n2$20$Rash$\n")
    (folder / "INDI20Q1.txt").write_text("primaryid$caseid$indi_pt$\n1$10$Pain$\n2$20$Pain$\n")
    if outc is not None:
        (folder / "OUTC20Q1.txt").write_text(outc, encoding="latin-1")
    return folder


DEMO = ("primaryid$caseid$caseversion$init_fda_dt$fda_dt$age$age_cod$sex$wt$wt_cod$\n"
        "1$10$1$20191301$202001$40$YR$F$60$KG$\n"
        "2$20$1$2019$20200230$50$YR$M$70$KG$\n")


def test_unknown_roles_and_outcomes_invalid_and_partial_dates(tmp_path) -> None:
    folder = _quarter(
        tmp_path / "q", demo=DEMO,
        drug="primaryid$caseid$drug_seq$role_cod$drugname$\n1$10$1$ps$A$\n1$10$2$ X $B$\n"
             "1$10$3$$C$\n2$20$1$I$D$\n2$20$2$SS$A$\n2$20$3$C$A$\n",
        outc="primaryid$caseid$outc_code$\n1$10$de$\n1$10$ZZ$\n2$20$HO$\n")
    quarter = read_faers(folder).quarters[0]
    rows = quarter.records.set_index("report_id")
    # a role code is read stripped and in upper case; unknown ones keep the drug in drugs only
    assert rows.loc["1", "drugs"] == ("A", "B", "C")
    assert rows.loc["1", "drugs_primary_suspect"] == ("A",)
    assert rows.loc["1", "drugs_concomitant"] == () and rows.loc["1", "drugs_interacting"] == ()
    assert quarter.report.unknown_roles == {"X": 1}
    assert quarter.report.drugs_without_role == 1
    # one drug in two roles is in both
    assert rows.loc["2", "drugs_secondary_suspect"] == ("A",) == rows.loc["2", "drugs_concomitant"]
    assert rows.loc["2", "drugs_interacting"] == ("D",)
    # OUTC's 2012-2014 header 'outc_code'; codes upper-cased, an undocumented one kept, counted
    assert rows.loc["1", "outcomes"] == ("DE", "ZZ") and rows.loc["2", "outcomes"] == ("HO",)
    assert quarter.report.unknown_outcomes == {"ZZ": 1}
    # month 13 and 30 February are not dates: missing, counted; partial dates are valid
    assert pd.isna(rows.loc["1", "init_fda_dt"]) and rows.loc["1", "fda_dt"] == "202001"
    assert rows.loc["2", "init_fda_dt"] == "2019" and pd.isna(rows.loc["2", "fda_dt"])
    assert quarter.report.invalid_dates == {"init_fda_dt": 1, "fda_dt": 1}
    assert quarter.report.absent == []


def test_no_outc_file_no_role_column_no_init_date(tmp_path) -> None:
    demo = ("primaryid$caseid$caseversion$fda_dt$age$age_cod$sex$wt$wt_cod$\n"
            "1$10$1$20200105$40$YR$F$60$KG$\n2$20$1$20200106$50$YR$M$70$KG$\n")
    folder = _quarter(tmp_path / "q", demo=demo,
                      drug="primaryid$caseid$drugname$\n1$10$A$\n2$20$B$\n", outc=None)
    quarter = read_faers(folder).quarters[0]
    records = quarter.records
    assert records["drugs"].tolist() == [("A",), ("B",)]
    assert all(records[c].tolist() == [(), ()] for c in DRUG_ROLES.values())
    assert records["outcomes"].tolist() == [(), ()]
    assert records["init_fda_dt"].isna().all()
    assert sorted(quarter.report.absent) == ["DEMO.init_fda_dt", "DRUG.role_cod", "OUTC"]
    assert quarter.report.unknown_roles == {} and quarter.report.drugs_without_role == 2


def test_an_outc_file_without_its_code_column_is_refused(tmp_path) -> None:
    from medanon.errors import InputFormatError

    folder = _quarter(tmp_path / "q", demo=DEMO,
                      drug="primaryid$caseid$role_cod$drugname$\n1$10$PS$A$\n",
                      outc="primaryid$caseid$code$\n1$10$DE$\n")
    with pytest.raises(InputFormatError, match="OUTC20Q1.txt lacks required column.*outc_cod"):
        read_faers(folder).quarters[0]
