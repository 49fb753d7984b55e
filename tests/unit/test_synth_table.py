"""Tests of the synthetic hospital-patient table (medanon.data.synth.table)."""

from __future__ import annotations

import re
import tomllib

import numpy as np
import pandas as pd
import pytest

from medanon.data.synth import synth_patient_schema_toml, synth_patient_table, write_synth_table
from medanon.data.synth import table as synth_table
from medanon.errors import ValidationError

COLUMNS = ["age", "sex", "los", "surgery", "region", "diagnosis"]
REGIONS = {"11", "21", "22", "23", "24", "25", "26", "31", "32", "33", "34", "35", "36", "37",
           "38", "39"}
CODE = re.compile(r"^[A-Z][0-9]{2}(\.[0-9])?$")
ROWS = 50_000


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return synth_patient_table(ROWS, seed=7)


@pytest.fixture(scope="module")
def schema() -> dict:
    return tomllib.loads(synth_patient_schema_toml())["table"]


def _stroke(frame: pd.DataFrame) -> pd.Series:
    return frame["diagnosis"].str.startswith("I6")


# -- shape, types, ranges --------------------------------------------------------------------------
def test_columns_dtypes_and_ranges(frame):
    assert list(frame.columns) == COLUMNS
    assert len(frame) == ROWS
    assert frame.index.equals(pd.RangeIndex(ROWS))
    assert frame["age"].dtype == np.int64 and frame["los"].dtype == np.int64
    for column in ("sex", "surgery", "region", "diagnosis"):
        assert frame[column].dtype == object
        assert all(type(v) is str for v in frame[column].head(1000))
    assert frame["age"].between(0, 99).all()
    assert frame["los"].between(1, 400).all()
    assert set(frame["sex"]) == {"F", "M"}
    assert set(frame["surgery"]) == {"N", "Y"}
    assert set(frame["region"]) == REGIONS
    assert frame["diagnosis"].map(lambda c: bool(CODE.match(c))).all()


def test_single_row_table():
    one = synth_patient_table(1, seed=0)
    assert list(one.columns) == COLUMNS and len(one) == 1


def test_same_seed_gives_identical_frame_and_csv():
    a = synth_patient_table(3000, seed=11)
    b = synth_patient_table(3000, seed=11)
    pd.testing.assert_frame_equal(a, b)
    assert a.to_csv(index=False) == b.to_csv(index=False)


def test_different_seeds_differ():
    a = synth_patient_table(3000, seed=11)
    b = synth_patient_table(3000, seed=12)
    assert not a.equals(b)
    assert (a["diagnosis"] != b["diagnosis"]).mean() > 0.5


# -- marginal profiles -----------------------------------------------------------------------------
def test_age_profile_is_bimodal(frame):
    share = frame["age"].value_counts(normalize=True)
    decade = (frame["age"] // 10).value_counts(normalize=True)
    assert decade[0] > decade[1] and decade[7] > decade[1] and decade[7] > decade[4]
    assert share.get(0, 0) > 0.03                     # many newborns


def test_los_has_a_heavy_right_tail(frame):
    los = frame["los"]
    assert (los <= 10).mean() > 0.5
    assert 0.02 < (los >= 30).mean() < 0.2
    assert (los > 100).mean() < 0.02
    assert los.mean() > los.median()


def test_region_weights_capital_largest(frame):
    counts = frame["region"].value_counts()
    assert counts.index[0] == "11"
    assert counts.max() > 4 * counts.min()


def test_diagnosis_profile_is_zipf_like(frame):
    counts = frame["diagnosis"].value_counts()
    assert counts.iloc[0] > 10 * counts.iloc[len(counts) // 2]
    assert counts.iloc[: len(counts) // 10].sum() > 0.25 * ROWS


# -- planted correlations --------------------------------------------------------------------------
def test_stroke_share_rises_steeply_with_age(frame):
    stroke = _stroke(frame)
    old = stroke[frame["age"] >= 70].mean()
    young = stroke[frame["age"] < 40].mean()
    assert old > 0.03
    assert old > 10 * young


def test_obstetric_codes_only_for_women_15_to_49(frame):
    obstetric = frame["diagnosis"].str.startswith("O")
    assert obstetric.sum() > 100
    rows = frame[obstetric]
    assert (rows["sex"] == "F").all()
    assert rows["age"].between(15, 49).all()


def test_perinatal_codes_only_at_age_zero(frame):
    perinatal = frame["diagnosis"].str.startswith("P")
    assert perinatal.sum() > 50
    assert (frame.loc[perinatal, "age"] == 0).all()


def test_prostate_codes_only_for_men(frame):
    prostate = frame["diagnosis"].isin(["N40", "N41.0", "N42.9", "C61"])
    assert prostate.sum() > 20
    assert (frame.loc[prostate, "sex"] == "M").all()


def test_pediatric_infections_more_frequent_in_the_young(frame):
    enteric = frame["diagnosis"].str.startswith("A0")
    assert enteric[frame["age"] < 5].mean() > 3 * enteric[frame["age"] >= 20].mean()


def test_surgery_depends_on_diagnosis(frame):
    surgery = frame["surgery"] == "Y"
    appendicitis = frame["diagnosis"].str.startswith("K35")
    hip_fracture = frame["diagnosis"].str.startswith("S72")
    stroke = _stroke(frame)
    assert surgery[appendicitis].mean() > 0.7
    assert surgery[hip_fracture].mean() > 0.6
    assert 0.03 < surgery[stroke].mean() < 0.25


def test_los_longer_with_surgery_for_stroke_and_with_age(frame):
    los = frame["los"]
    surgery = frame["surgery"] == "Y"
    stroke = _stroke(frame)
    assert los[surgery].mean() > 1.2 * los[~surgery].mean()
    assert los[stroke].mean() > 1.5 * los[~stroke].mean()
    adults = frame["age"].between(20, 99)
    assert los[adults & (frame["age"] >= 75)].mean() > 1.2 * los[adults & (frame["age"] < 50)].mean()


def test_capital_is_a_bit_younger(frame):
    capital = frame["region"] == "11"
    assert frame.loc[capital, "age"].mean() < frame.loc[~capital, "age"].mean() - 2


# -- schema ----------------------------------------------------------------------------------------
def test_schema_parses_with_the_expected_shape(schema):
    assert schema["name"] == "synthetic-patients"
    assert schema["informative"] == "diagnosis"
    dims = schema["dimension"]
    assert [d["name"] for d in dims] == ["age", "sex", "los", "surgery", "region"]
    by_name = {d["name"]: d for d in dims}
    assert by_name["age"] == {"name": "age", "kind": "numeric", "domain": [0, 99],
                              "levels": [{"width": 10}, {"cuts": [0, 30, 60]}]}
    assert by_name["los"] == {"name": "los", "kind": "numeric", "domain": [1, 400],
                              "levels": [{"cuts": [1, 2, 5, 10, 30]}, {"cuts": [1, 2]}]}
    assert by_name["sex"]["values"] == ["F", "M"]
    assert by_name["surgery"]["values"] == ["N", "Y"]
    queries = {q["name"]: q for q in schema["query"]}
    assert sorted(queries) == ["Q1", "Q2", "Q3", "Q4"]
    for name, aggregate, sex in (("Q1", "count", "M"), ("Q2", "count", "F"),
                                 ("Q3", "mean", "M"), ("Q4", "mean", "F")):
        q = queries[name]
        assert q["aggregate"] == aggregate and q["group_by"] == "age" and q["bin"] == 5
        assert q["where"] == {"sex": sex, "surgery": "N"}
        assert q["informative_prefix"] == ["I6"]
        assert q.get("of") == ("los" if aggregate == "mean" else None)


def test_schema_region_hierarchy_covers_every_code(schema):
    rows = next(d for d in schema["dimension"] if d["name"] == "region")["hierarchy"]
    assert {row[0] for row in rows} == REGIONS and len(rows) == 16
    assert len({len(row) for row in rows}) == 1
    assert all(row[-1] == "*" for row in rows)
    parent: dict[str, str] = {}
    for row in rows:
        assert parent.setdefault(row[1], row[2]) == row[2]   # one level-2 label per level-1 label
    areas = {row[0]: row[1] for row in rows}
    assert len(set(areas.values())) == 3
    assert sum(1 for a in areas.values() if a == areas["11"]) == 1
    assert len({areas[c] for c in ("21", "22", "23", "24", "25", "26")}) == 1
    assert len({areas[c] for c in REGIONS if c.startswith("3")}) == 1
    assert len({row[2] for row in rows if row[0] != "11"}) == 1


def test_schema_domain_is_the_generators_code_list(schema, frame):
    domain = schema["informative_domain"]
    assert domain == sorted(set(domain))
    assert 250 <= len(domain) <= 350
    assert all(CODE.match(c) for c in domain)
    assert len({c[0] for c in domain}) >= 18                    # spread across chapters
    assert {"I63.9", "I61.9", "I64"} <= set(domain)
    assert set(frame["diagnosis"]) <= set(domain)


def test_every_code_can_be_drawn():
    table = synth_table._code_table()
    p = np.diff(table.cdf, axis=1, prepend=0.0)
    assert (p.max(axis=0) > 0).all()
    assert np.all(table.cdf[:, -1] == 1.0)


# -- writing ---------------------------------------------------------------------------------------
def test_write_synth_table_writes_both_files(tmp_path):
    out = tmp_path / "patients.csv"
    csv_path, schema_path = write_synth_table(out, rows=500, seed=3)
    assert csv_path == out and schema_path == tmp_path / "patients.schema.toml"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["patients.csv", "patients.schema.toml"]
    back = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    expected = synth_patient_table(500, seed=3)
    assert list(back.columns) == COLUMNS
    assert back["diagnosis"].tolist() == expected["diagnosis"].tolist()
    assert back["region"].tolist() == expected["region"].tolist()
    assert back["los"].astype(int).tolist() == expected["los"].tolist()
    assert csv_path.read_bytes().decode("utf-8").startswith("age,sex,los,surgery,region,diagnosis\n")
    assert schema_path.read_text(encoding="utf-8") == synth_patient_schema_toml()


def test_write_synth_table_leaves_nothing_behind_on_error(tmp_path, monkeypatch):
    real_replace = synth_table.os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(synth_table.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_synth_table(tmp_path / "patients.csv", rows=50, seed=1)
    assert list(tmp_path.iterdir()) == []


def test_write_synth_table_rejects_a_missing_folder(tmp_path):
    with pytest.raises(ValidationError, match="'out_csv' parameter of write_synth_table"):
        write_synth_table(tmp_path / "nope" / "patients.csv", rows=10, seed=1)
    with pytest.raises(ValidationError, match="'out_csv' parameter of write_synth_table"):
        write_synth_table(tmp_path, rows=10, seed=1)


# -- validation ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("rows", "seed", "message"), [
    (0, 1, "The 'rows' parameter of synth_patient_table must be an integer >= 1; got 0."),
    (10, -1, "The 'seed' parameter of synth_patient_table must be an integer >= 0; got -1."),
    (2.5, 1, "The 'rows' parameter of synth_patient_table must be an integer >= 1; got 2.5."),
    (True, 1, "The 'rows' parameter of synth_patient_table must be an integer >= 1; got True."),
    (10, None, "The 'seed' parameter of synth_patient_table must be an integer >= 0; got None."),
])
def test_synth_patient_table_validation(rows, seed, message):
    with pytest.raises(ValidationError) as info:
        synth_patient_table(rows, seed=seed)
    assert str(info.value) == message


@pytest.mark.parametrize(("rows", "seed", "name"), [(0, 1, "rows"), (10, -1, "seed")])
def test_write_synth_table_validation(tmp_path, rows, seed, name):
    with pytest.raises(ValidationError, match=f"The '{name}' parameter of write_synth_table"):
        write_synth_table(tmp_path / "t.csv", rows=rows, seed=seed)
    assert list(tmp_path.iterdir()) == []
