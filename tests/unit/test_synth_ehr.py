"""Tests of the synthetic EHR generator (medanon.data.synth.ehr)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from medanon.data.ehr import DELTA_T_DAYS, load_mimic
from medanon.data.synth.ehr import (PLANTED_DEPENDENCIES, SENSITIVE_CATEGORIES, SENSITIVE_CODES,
                                    synth_ehr, write_synth_ehr)
from medanon.errors import ValidationError

PATIENTS = 20_000
ICD9 = re.compile(r"^(\d{3,5}|V\d{2,4}|E\d{3,4})$")


@pytest.fixture(scope="module")
def full():
    return synth_ehr(PATIENTS, seed=11, code_level="full")


@pytest.fixture(scope="module")
def category():
    return synth_ehr(PATIENTS, seed=11)


def _delta(events: pd.DataFrame, predictor: str, sensitive: str,
           window: float = DELTA_T_DAYS) -> tuple[float, int]:
    """δ of 003: share of the patients with ``predictor`` who have ``sensitive`` in a later
    admission at most ``window`` days after it; and the number of patients with the predictor."""
    a = events.loc[events["code"] == predictor, ["patient", "time"]]
    b = events.loc[events["code"] == sensitive, ["patient", "time"]]
    pairs = a.merge(b, on="patient", suffixes=("_a", "_b"))
    later = (pairs["time_b"] > pairs["time_a"]) & (pairs["time_b"] - pairs["time_a"] <= window)
    n_pred = a["patient"].nunique()
    return pairs.loc[later, "patient"].nunique() / max(n_pred, 1), n_pred


def test_same_seed_same_data_other_seed_other_data():
    a = synth_ehr(500, seed=3)
    b = synth_ehr(500, seed=3)
    pd.testing.assert_frame_equal(a.events, b.events)
    assert a.digest() == b.digest()
    assert synth_ehr(500, seed=4).digest() != a.digest()


def test_shapes_and_ranges(full, category):
    ev = full.events
    assert full.n_patients == PATIENTS == category.n_patients
    assert full.dates_reliable and not ev["time"].isna().any()
    per_patient = ev.groupby("patient")["admission_rank"].max() + 1
    assert per_patient.between(1, 8).all()
    share = per_patient.value_counts(normalize=True)
    assert share[[2, 3, 4]].sum() > 0.5 and share[2] > share[1]
    per_admission = ev.groupby(["patient", "admission"]).size()
    assert per_admission.between(3, 15).all()
    assert 5 < per_admission.mean() < 11
    assert all(ICD9.match(c) for c in full.codes)
    assert all(len(c) == (4 if c.startswith("E") else 3) for c in category.codes)
    first = ev.drop_duplicates(["patient", "admission"])
    gaps = first.groupby("patient")["time"].diff().dropna()
    assert (gaps > 0).all() and gaps.min() < 30 and gaps.max() > 365
    assert (ev.loc[ev["admission_rank"] == 0, "time"] == 0).all()


def test_common_codes_are_frequent(full):
    share = full.events.drop_duplicates(["patient", "code"])["code"].value_counts() / PATIENTS
    for code in ("4019", "4280", "42731", "25000", "2724", "0389", "486", "5849"):
        assert share.get(code, 0) > 0.05, code
    assert share.index[0] == "4019"


def test_sensitive_prevalence_about_six_percent(category, full):
    ev = category.events
    sensitive = set(ev.loc[ev["code"].isin(SENSITIVE_CATEGORIES), "patient"])
    assert abs(len(sensitive) / PATIENTS - 0.06) < 0.02
    small = synth_ehr(2000, seed=1)
    small_sensitive = small.events.loc[small.events["code"].isin(SENSITIVE_CATEGORIES), "patient"]
    assert abs(small_sensitive.nunique() / 2000 - 0.06) < 0.02
    assert set(full.codes) >= {"30390", "30400", "042", "28260"}
    assert set(c for c in full.codes if c[:3] in SENSITIVE_CATEGORIES) <= set(SENSITIVE_CODES)


def test_planted_dependencies(category):
    ev = category.events
    sensitive = set(ev.loc[ev["code"].isin(SENSITIVE_CATEGORIES), "patient"])
    others = ev[~ev["patient"].isin(sensitive)]
    n_others = PATIENTS - len(sensitive)
    for predictor, target, approx in PLANTED_DEPENDENCIES:
        delta, n_pred = _delta(ev, predictor, target)
        assert n_pred >= 30, predictor
        assert delta > 0.5, (predictor, target, delta)
        assert abs(delta - approx) < 0.15, (predictor, target, delta, approx)
        background = others.loc[others["code"] == predictor, "patient"].nunique() / n_others
        assert background < 0.005, (predictor, background)
        # the dependence is temporal: the sensitive code rarely comes *before* the predictor
        backwards, _ = _delta(ev.assign(time=-ev["time"]), predictor, target)
        assert backwards < delta / 2


def test_validation():
    with pytest.raises(ValidationError):
        synth_ehr(0, seed=1)
    with pytest.raises(ValidationError):
        synth_ehr(10, seed=-1)
    with pytest.raises(ValidationError):
        synth_ehr(10, seed=1, code_level="chapter")


def test_write_synth_ehr_round_trips_through_load_mimic(tmp_path):
    paths = write_synth_ehr(tmp_path / "mimic", patients=800, seed=9)
    assert set(paths) == {"diagnoses", "admissions"}
    diag = pd.read_csv(paths["diagnoses"], dtype=str, keep_default_na=False)
    adm = pd.read_csv(paths["admissions"], dtype=str, keep_default_na=False)
    assert list(diag.columns) == ["ROW_ID", "SUBJECT_ID", "HADM_ID", "SEQ_NUM", "ICD9_CODE"]
    assert {"ROW_ID", "SUBJECT_ID", "HADM_ID", "ADMITTIME", "DISCHTIME"} <= set(adm.columns)
    assert diag["ICD9_CODE"].str.fullmatch(r"\d{3,5}|V\d{2,4}|E\d{3,4}").all()
    assert not diag["ICD9_CODE"].str.contains(".", regex=False).any()
    admit = pd.to_datetime(adm["ADMITTIME"], format="%Y-%m-%d %H:%M:%S")
    assert admit.dt.year.between(2100, 2199).all()
    assert (pd.to_datetime(adm["DISCHTIME"], format="%Y-%m-%d %H:%M:%S") > admit).all()
    assert adm["HADM_ID"].is_unique and diag["ROW_ID"].astype(int).is_monotonic_increasing
    for level in ("category", "full"):
        loaded = load_mimic(paths["diagnoses"], paths["admissions"], code_level=level)
        generated = synth_ehr(800, seed=9, code_level=level)
        assert loaded.dates_reliable
        pd.testing.assert_frame_equal(loaded.events, generated.events)
        assert loaded.digest() == generated.digest()
    again = write_synth_ehr(tmp_path / "again", patients=800, seed=9)
    assert again["diagnoses"].read_bytes() == paths["diagnoses"].read_bytes()
    assert again["admissions"].read_bytes() == paths["admissions"].read_bytes()


def test_write_synth_ehr_refuses_a_file_as_folder(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(ValidationError, match="folder"):
        write_synth_ehr(target, patients=10, seed=1)
    assert not np.any([p.name.startswith(".") for p in tmp_path.iterdir()])
