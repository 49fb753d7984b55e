"""Tests of the EHR sequence model and its loaders (medanon.data.ehr)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medanon.data.ehr import EVENT_COLUMNS, EhrData, load_ehr_csv, load_mimic
from medanon.errors import InputFormatError, ValidationError
from tests.conftest import MIMIC_DEMO, needs_mimic_demo

DIAG_HEADER = "ROW_ID,SUBJECT_ID,HADM_ID,SEQ_NUM,ICD9_CODE"
ADM_HEADER = "ROW_ID,SUBJECT_ID,HADM_ID,ADMITTIME,DISCHTIME"


def _write(folder: Path, name: str, header: str, rows: list[str]) -> Path:
    path = folder / name
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def _codes_by_admission(data: EhrData) -> dict[str, list[str]]:
    return {a: g["code"].tolist() for a, g in data.events.groupby("admission", sort=False)}


def _admission_order(data: EhrData, patient: str) -> list[str]:
    ev = data.events[data.events["patient"] == patient]
    return ev.drop_duplicates("admission")["admission"].tolist()


# -- a small MIMIC-III-like fixture ----------------------------------------------------------------
@pytest.fixture
def diagnoses(tmp_path: Path) -> Path:
    return _write(tmp_path, "DIAGNOSES_ICD.csv", DIAG_HEADER, [
        "1,7,300,1,0389",
        "2,7,300,2,4019",
        "3,7,300,3,042",
        "4,7,100,2,V5861",
        "5,7,100,1,E8497",
        "6,7,100,3,",            # empty code
        "7,12,500,1,4280",
        "8,12,500,2,4281",       # same category as 4280
        "9,12,500,3,42731",
        "10,12,400,1,25000",
        "11,3,900,1,486",
    ])


def _admissions(tmp_path: Path, times: dict[str, str]) -> Path:
    # ROW_ID order: 300 before 100 for patient 7; 400 before 500 for patient 12.
    rows = [f"1,7,300,{times['300']},", f"2,7,100,{times['100']},",
            f"3,12,400,{times['400']},", f"4,12,500,{times['500']},",
            f"5,3,900,{times['900']},"]
    return _write(tmp_path, "ADMISSIONS.csv", ADM_HEADER, rows)


DAMAGED = {"300": "10/23/64 21:09", "100": "8/14/26 22:32", "400": "5/26/49 17:19",
           "500": "1/2/50 0:00", "900": "3/3/29 16:06"}
ISO = {"300": "2196-04-19 00:26:00", "100": "2196-04-09 12:26:00",
       "400": "2150-01-01 00:00:00", "500": "2150-01-31 06:00:00", "900": "2101-07-07 07:07:07"}


def test_events_columns_dtypes_and_sorting(diagnoses, tmp_path):
    data = load_mimic(diagnoses, _admissions(tmp_path, ISO))
    ev = data.events
    assert list(ev.columns) == list(EVENT_COLUMNS)
    assert isinstance(ev.index, pd.RangeIndex) and ev.index[0] == 0
    assert ev["admission_rank"].dtype == np.int64 and ev["position"].dtype == np.int64
    assert ev["time"].dtype == np.float64
    assert all(isinstance(v, str) for col in ("patient", "admission", "code") for v in ev[col])
    assert list(data.patients) == ["3", "7", "12"]          # numeric order of the ids
    assert data.n_patients == 3 and data.n_admissions == 5
    assert data.n_events == len(ev)
    assert list(data.codes) == sorted(set(ev["code"]))
    key = ev["patient"].astype(int) * 1000 + ev["admission_rank"] * 100 + ev["position"]
    assert key.is_monotonic_increasing


def test_headers_case_insensitive_and_leading_zeros_kept(tmp_path):
    diag = _write(tmp_path, "diagnoses_icd.csv", "row_id,subject_id,hadm_id,seq_num,icd9_code",
                  ["1,1,10,1,0389", "2,1,10,2,042", "3,1,10,3,V5861", "4,1,10,4,E8497",
                   "5,1,10,5,00845"])
    full = load_mimic(diag, code_level="full")
    assert full.events["code"].tolist() == ["0389", "042", "V5861", "E8497", "00845"]
    category = load_mimic(diag)
    assert category.events["code"].tolist() == ["038", "042", "V58", "E849", "008"]
    assert category.code_level == "category" and full.code_level == "full"


def test_empty_codes_dropped_and_counted(diagnoses, tmp_path):
    data = load_mimic(diagnoses, _admissions(tmp_path, ISO), code_level="full")
    assert data.source["rows_read"] == 11
    assert data.source["rows_dropped"]["empty_code"] == 1
    assert data.n_events == 10
    assert data.source["files"]["diagnoses"]["name"] == "DIAGNOSES_ICD.csv"
    assert len(data.source["files"]["admissions"]["sha256"]) == 64


def test_seq_num_orders_codes_within_admission(diagnoses, tmp_path):
    data = load_mimic(diagnoses, _admissions(tmp_path, ISO), code_level="full")
    assert _codes_by_admission(data)["100"] == ["E8497", "V5861"]      # SEQ 1 then SEQ 2
    assert data.events.groupby("admission")["position"].apply(list)["300"] == [0, 1, 2]


def test_damaged_two_digit_years_fall_back_to_row_id(diagnoses, tmp_path):
    data = load_mimic(diagnoses, _admissions(tmp_path, DAMAGED))
    assert data.dates_reliable is False
    assert data.events["time"].isna().all()
    assert _admission_order(data, "7") == ["300", "100"]                # ADMISSIONS.ROW_ID
    assert _admission_order(data, "12") == ["400", "500"]
    assert "ROW_ID" in data.source["admission_order"]
    assert "unusable" in data.source["dates"] and "10/23/64 21:09" in data.source["dates"]


def test_one_damaged_date_makes_the_whole_file_unreliable(diagnoses, tmp_path):
    times = dict(ISO, **{"900": "3/3/29 16:06"})
    data = load_mimic(diagnoses, _admissions(tmp_path, times))
    assert data.dates_reliable is False and data.events["time"].isna().all()


def test_iso_dates_give_days_since_first_admission(diagnoses, tmp_path):
    data = load_mimic(diagnoses, _admissions(tmp_path, ISO))
    assert data.dates_reliable is True
    assert _admission_order(data, "7") == ["100", "300"]                # by ADMITTIME
    times = data.events.drop_duplicates("admission").set_index("admission")["time"]
    assert times["100"] == 0.0 and times["300"] == pytest.approx(9.5)
    assert times["400"] == 0.0 and times["500"] == pytest.approx(30.25)
    assert times["900"] == 0.0
    ranks = data.events.drop_duplicates("admission").set_index("admission")["admission_rank"]
    assert ranks.to_dict() == {"900": 0, "100": 0, "300": 1, "400": 0, "500": 1}


def test_four_digit_month_day_year_dates_are_usable(diagnoses, tmp_path):
    times = {"300": "4/19/2196 0:26", "100": "4/9/2196 12:26", "400": "1/1/2150 0:00",
             "500": "1/31/2150 6:00", "900": "7/7/2101 7:07"}
    data = load_mimic(diagnoses, _admissions(tmp_path, times))
    assert data.dates_reliable is True
    assert _admission_order(data, "7") == ["100", "300"]


def test_without_admissions_orders_by_smallest_diagnosis_row_id(tmp_path):
    diag = _write(tmp_path, "DIAGNOSES_ICD.csv", DIAG_HEADER,
                  ["5,1,20,1,4019", "1,1,30,1,486", "2,1,30,2,5849", "9,1,10,1,0389"])
    data = load_mimic(diag)
    assert _admission_order(data, "1") == ["30", "20", "10"]
    assert data.dates_reliable is False and data.events["time"].isna().all()
    assert "ROW_ID" in data.source["admission_order"]


def test_unknown_admissions_and_subject_mismatch_dropped(diagnoses, tmp_path):
    adm = _write(tmp_path, "ADMISSIONS.csv", ADM_HEADER,
                 ["1,7,300,2196-04-19 00:26:00,", "2,7,100,2196-04-09 12:26:00,",
                  "3,99,400,2150-01-01 00:00:00,"])              # 400 belongs to another subject
    data = load_mimic(diagnoses, adm, code_level="full")
    dropped = data.source["rows_dropped"]
    assert dropped["admission_not_in_admissions"] == 4               # HADM 500 (3) and 900 (1)
    assert dropped["subject_mismatch"] == 1
    assert set(data.events["admission"]) == {"100", "300"}


def test_category_level_drops_repeated_categories_keeping_the_first(diagnoses, tmp_path):
    adm = _admissions(tmp_path, ISO)
    category = load_mimic(diagnoses, adm)
    assert _codes_by_admission(category)["500"] == ["428", "427"]
    assert category.events.set_index("admission").loc["500", "position"].tolist() == [0, 1]
    assert category.source["rows_dropped"]["duplicate_code_in_admission"] == 1
    full = load_mimic(diagnoses, adm, code_level="full")
    assert _codes_by_admission(full)["500"] == ["4280", "4281", "42731"]
    assert "duplicate_code_in_admission" not in full.source["rows_dropped"]


def test_missing_columns_name_the_file_and_columns(tmp_path):
    diag = _write(tmp_path, "DIAGNOSES_ICD.csv", "ROW_ID,SUBJECT_ID,SEQ_NUM,CODE", ["1,1,1,4019"])
    with pytest.raises(InputFormatError, match=r"DIAGNOSES_ICD\.csv.*HADM_ID, ICD9_CODE"):
        load_mimic(diag)
    good = _write(tmp_path, "D.csv", DIAG_HEADER, ["1,1,10,1,4019"])
    adm = _write(tmp_path, "ADMISSIONS.csv", "ROW_ID,SUBJECT_ID,HADM_ID", ["1,1,10"])
    with pytest.raises(InputFormatError, match=r"ADMISSIONS\.csv.*ADMITTIME"):
        load_mimic(good, adm)


def test_missing_or_unreadable_files(tmp_path):
    with pytest.raises(InputFormatError, match="does not exist"):
        load_mimic(tmp_path / "nope.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputFormatError, match="empty.csv"):
        load_mimic(empty)
    header_only = _write(tmp_path, "h.csv", DIAG_HEADER, [])
    with pytest.raises(InputFormatError, match="no usable"):
        load_mimic(header_only)


def test_few_ill_formed_codes_dropped_many_rejected(tmp_path):
    rows = [f"{i},1,10,{i},{4010 + i}" for i in range(1, 40)] + ["40,1,10,40,42.x"]
    data = load_mimic(_write(tmp_path, "ok.csv", DIAG_HEADER, rows), code_level="full")
    assert data.source["rows_dropped"]["ill_formed_code"] == 1
    assert data.source["ill_formed_examples"] == ["42.x"]
    assert data.n_events == 39
    bad = [f"{i},1,10,{i},{4010 + i}" for i in range(1, 18)] + ["18,1,10,18,abc",
                                                                 "19,1,10,19,12",
                                                                 "20,1,10,20,X1"]
    with pytest.raises(InputFormatError, match=r"ICD9_CODE.*bad.csv.*'abc'"):
        load_mimic(_write(tmp_path, "bad.csv", DIAG_HEADER, bad))


def test_duplicate_hadm_in_admissions_rejected(tmp_path):
    diag = _write(tmp_path, "D.csv", DIAG_HEADER, ["1,1,10,1,4019"])
    adm = _write(tmp_path, "A.csv", ADM_HEADER, ["1,1,10,2196-04-09 12:26:00,",
                                                  "2,1,10,2196-05-09 12:26:00,"])
    with pytest.raises(InputFormatError, match="more than once"):
        load_mimic(diag, adm)


def test_unknown_code_level_rejected(diagnoses):
    with pytest.raises(ValidationError, match="code_level"):
        load_mimic(diagnoses, code_level="chapter")


# -- EhrData operations ----------------------------------------------------------------------------
def _ten_patients(tmp_path: Path) -> EhrData:
    rows = ["patient,admission,time,code"]
    for p in range(10):
        for a in range(1 + p % 3):                        # 1, 2 or 3 admissions
            rows.append(f"P{p},A{p}_{a},{100 * a},4019")
            rows.append(f"P{p},A{p}_{a},{100 * a},{'486' if a else '0389'}")
    path = tmp_path / "long.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return load_ehr_csv(path)


def test_split_sizes_disjoint_and_reproducible(tmp_path):
    data = _ten_patients(tmp_path)
    aux, ev = data.split(0.8, rng=np.random.default_rng(5))
    assert aux.n_patients == 8 and ev.n_patients == 2
    assert set(aux.patients).isdisjoint(ev.patients)
    assert set(aux.patients) | set(ev.patients) == set(data.patients)
    assert aux.n_events + ev.n_events == data.n_events
    again, _ = data.split(0.8, rng=np.random.default_rng(5))
    assert list(again.patients) == list(aux.patients)
    assert again.digest() == aux.digest()
    assert aux.source["subsets"][-1]["split"]["part"] == "auxiliary"
    tiny_aux, tiny_ev = data.split(0.01, rng=np.random.default_rng(0))
    assert tiny_aux.n_patients == 1 and tiny_ev.n_patients == 9


def test_split_errors(tmp_path):
    data = _ten_patients(tmp_path)
    with pytest.raises(ValidationError):
        data.split(1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValidationError):
        data.split(0.8, rng=np.random.RandomState(0))        # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="two patients"):
        data.select_patients(["P0"]).split(0.8, rng=np.random.default_rng(0))


def test_with_min_admissions_and_select_patients(tmp_path):
    data = _ten_patients(tmp_path)
    two = data.with_min_admissions(2)
    assert sorted(two.patients) == sorted(f"P{p}" for p in range(10) if p % 3 >= 1)
    assert (two.events.groupby("patient")["admission_rank"].max() >= 1).all()
    assert data.with_min_admissions(1).digest() == data.digest()
    picked = data.select_patients(["P3", "P1"])
    assert list(picked.patients) == ["P1", "P3"]
    assert isinstance(picked.events.index, pd.RangeIndex)
    with pytest.raises(ValidationError, match="P99"):
        data.select_patients(["P99"])
    with pytest.raises(ValidationError):
        data.with_min_admissions(0)


def test_digest_is_stable_and_content_sensitive(tmp_path):
    data = _ten_patients(tmp_path)
    assert data.digest() == _ten_patients(tmp_path).digest()
    assert len(data.digest()) == 64
    assert data.select_patients(["P1"]).digest() != data.digest()


def test_events_columns_checked():
    with pytest.raises(ValidationError, match="columns"):
        EhrData(events=pd.DataFrame({"patient": []}), code_level="category", dates_reliable=False)


# -- generic long CSV ------------------------------------------------------------------------------
def test_long_csv_days_and_case_insensitive_headers(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("Patient,ADMISSION,Time,Code\n"
                    "p1,b,40.5,428.0\np1,a,10,0389\np1,a,10,V58.61\np1,b,40.5,428.1\n"
                    "p2,x,-3,042\n", encoding="utf-8")
    data = load_ehr_csv(path)
    assert data.dates_reliable is True
    assert _admission_order(data, "p1") == ["a", "b"]                   # by time, not file order
    p1 = data.events[data.events["patient"] == "p1"]
    assert p1["time"].tolist() == [0.0, 0.0, 30.5]
    assert p1["code"].tolist() == ["038", "V58", "428"]
    assert data.source["rows_dropped"]["duplicate_code_in_admission"] == 1
    assert data.events.loc[data.events["patient"] == "p2", "time"].tolist() == [0.0]


def test_long_csv_iso_dates_and_fallbacks(tmp_path):
    path = tmp_path / "iso.csv"
    path.write_text("patient,admission,time,code\n"
                    "1,b,2150-03-01,4019\n1,a,2150-01-01 12:00:00,486\n", encoding="utf-8")
    data = load_ehr_csv(path, code_level="full")
    assert _admission_order(data, "1") == ["a", "b"]
    assert data.events["time"].tolist() == [0.0, pytest.approx(58.5)]

    no_time = tmp_path / "no_time.csv"
    no_time.write_text("patient,admission,code\n1,b,4019\n1,a,486\n", encoding="utf-8")
    data = load_ehr_csv(no_time)
    assert _admission_order(data, "1") == ["b", "a"]                    # first appearance
    assert data.dates_reliable is False and data.events["time"].isna().all()

    damaged = tmp_path / "damaged.csv"
    damaged.write_text("patient,admission,time,code\n1,b,3/1/50,4019\n1,a,2150-01-01,486\n",
                       encoding="utf-8")
    data = load_ehr_csv(damaged)
    assert data.dates_reliable is False and math.isnan(data.events["time"].iloc[0])
    assert "3/1/50" in data.source["dates"]


def test_long_csv_missing_column(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("patient,visit,code\n1,a,4019\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"e\.csv.*admission"):
        load_ehr_csv(path)


# -- the real MIMIC-III demo -----------------------------------------------------------------------
@needs_mimic_demo
def test_mimic_demo_copy():
    data = load_mimic(MIMIC_DEMO / "DIAGNOSES_ICD.csv", MIMIC_DEMO / "ADMISSIONS.csv")
    assert data.n_patients == 100
    assert data.n_admissions == 129
    assert data.dates_reliable is False                      # the copy has two-digit years
    assert data.events["time"].isna().all()
    assert "401" in data.codes and all(len(c) == 3 or c.startswith("E") for c in data.codes)
    full = load_mimic(MIMIC_DEMO / "DIAGNOSES_ICD.csv", MIMIC_DEMO / "ADMISSIONS.csv",
                      code_level="full")
    assert "4019" in full.codes
    assert full.n_events == 1761                             # no empty or repeated code
    assert data.n_events < full.n_events                     # categories repeat within stays
    assert data.with_min_admissions(2).n_patients == 14
    aux, ev = data.with_min_admissions(2).split(rng=np.random.default_rng(0))
    assert (aux.n_patients, ev.n_patients) == (11, 3)
