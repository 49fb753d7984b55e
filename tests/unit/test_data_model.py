"""Schema, periods, validation messages, random sources and super records on fixed inputs."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from medanon._validation import check_fraction, check_int
from medanon.periods import parse_period, period_from_faers_tag
from medanon.data.records import as_value_set, combine_super_records
from medanon.data.schema import Schema
from medanon.errors import HierarchyError, SchemaError, ValidationError
from medanon.random import randomness


def test_period_labels_parse_order_and_shift() -> None:
    assert parse_period("2022q4").label == "2022Q4"
    assert parse_period("2022Q4") < parse_period("2023Q1")
    assert parse_period("2022Q4").shift(1).label == "2023Q1"
    assert parse_period("2022Q1").shift(-1).label == "2021Q4"
    assert period_from_faers_tag("04q1").label == "2004Q1"
    assert parse_period("2022Q4").faers_tag == "22Q4"
    for bad in ("2022Q5", "22Q4", "2022-10", "", None, 2022):
        with pytest.raises(ValidationError, match="does not parse"):
            parse_period(bad)


def test_parameter_messages_have_one_form() -> None:
    with pytest.raises(ValidationError) as info:
        check_int(1, name="k", owner="PPMS", minimum=2)
    assert str(info.value) == "The 'k' parameter of PPMS must be an integer >= 2; got 1."
    with pytest.raises(ValidationError, match=r"must be an integer >= 2; got True"):
        check_int(True, name="k", owner="PPMS", minimum=2)
    for bad in (0, -0.1, 1.01, float("nan"), "0.2"):
        with pytest.raises(ValidationError,
                           match=r"The 'theta' parameter of PPMS must be a number in \(0, 1\]"):
            check_fraction(bad, name="theta", owner="PPMS")
    assert check_fraction(1, name="theta", owner="PPMS") == 1.0


def test_random_sources_are_secure_unless_seeded() -> None:
    secure_a, secure_b = randomness(), randomness()
    assert secure_a.kind == "secure" and not secure_a.seeded
    assert secure_a.generator.integers(0, 2**62) != secure_b.generator.integers(0, 2**62)
    seeded_a, seeded_b = randomness(5), randomness(5)
    assert {k: seeded_a.describe()[k] for k in ("kind", "seed")} == {"kind": "seeded", "seed": 5}
    assert seeded_a.generator.random() == seeded_b.generator.random()
    with pytest.raises(ValidationError, match="'seed'"):
        randomness(-1)


def test_papers_schema_and_the_default_faers_schema() -> None:
    papers = Schema.papers()
    assert papers.qid_names == ("age", "sex", "weight")
    assert papers.categorical_qids == ("age", "sex") and papers.numeric_qids == ("weight",)
    assert papers.sensitive == ("indications", "reactions") and papers.multi == ("drugs",)
    assert papers.dates == {}
    hierarchies = papers.load_hierarchies()
    assert hierarchies["age"].height == 3 and hierarchies["sex"].height == 1
    # the default: the papers' QIDs and sensitive columns, the FAERS fields published as they are
    schema = Schema.default()
    assert (schema.qids, schema.sensitive) == (papers.qids, papers.sensitive)
    assert schema.multi == ("drugs", "drugs_primary_suspect", "drugs_secondary_suspect",
                            "drugs_concomitant", "drugs_interacting", "outcomes")
    assert schema.dates == {"init_fda_dt": "year", "fda_dt": "year"}
    assert schema.published[-2:] == ("init_fda_dt", "fda_dt")
    for one in (papers, schema):
        assert Schema.from_mapping(__import__("tomllib").loads(one.to_toml())["schema"]) == one
    assert len({Schema.default(), schema, papers}) == 2  # hashable, as before dates existed


def test_schema_from_toml_and_its_errors(tmp_path) -> None:
    arx = tmp_path / "sex.csv"
    arx.write_text("F;*\nM;*\nU;*\n", encoding="utf-8")
    good = tmp_path / "schema.toml"
    good.write_text('[schema]\nname = "mini"\nsensitive = ["reactions"]\n'
                    '[[schema.qid]]\nname = "sex"\nkind = "categorical"\nhierarchy = "sex.csv"\n',
                    encoding="utf-8")
    schema = Schema.from_toml(good)
    assert schema.load_hierarchies()["sex"].values == ("F", "M", "U")
    cases = {
        "missing": (tmp_path / "absent.toml", "does not exist"),
        "no table": ('name = "x"\n', "no [schema] table"),
        "bad toml": ("[schema\n", "not valid TOML"),
        "no hierarchy": ('[schema]\nsensitive = ["r"]\n[[schema.qid]]\nname = "sex"\nkind = "categorical"\n',
                         "needs a 'hierarchy'"),
        "bad kind": ('[schema]\nsensitive = ["r"]\n[[schema.qid]]\nname = "w"\nkind = "text"\n', "kind"),
        "two roles": ('[schema]\nsensitive = ["w"]\n[[schema.qid]]\nname = "w"\nkind = "numeric"\n',
                      "more than one role"),
        "typo": ('[schema]\nsensitiv = ["r"]\n[[schema.qid]]\nname = "w"\nkind = "numeric"\n', "sensitiv"),
    }
    for label, (content, fragment) in cases.items():
        path = content if isinstance(content, type(tmp_path)) else tmp_path / f"{label}.toml"
        if not isinstance(content, type(tmp_path)):
            path.write_text(content, encoding="utf-8")
        with pytest.raises(SchemaError, match=re.escape(fragment)):
            Schema.from_toml(path)


def test_schema_naming_an_absent_column_is_refused() -> None:
    schema = Schema.from_mapping({"qid": [{"name": "bmi", "kind": "numeric"}], "sensitive": ["reactions"]})
    frame = pd.DataFrame({"case_id": ["1"], "period": ["2020Q1"], "reactions": [("x",)]})
    with pytest.raises(SchemaError, match="'bmi'"):
        schema.check_columns(frame)


def _records(**columns) -> pd.DataFrame:
    base = {"case_id": ["1", "1", "2"], "period": ["2020Q1"] * 3, "report_id": ["a", "b", "c"],
            "version": [1, 2, 1], "age": ["Newborn", "Adolescent", "Aged"], "sex": ["F", "F", "M"],
            "weight": [3.0, 50.0, 80.0], "reactions": [("Rash",), ("Fever", "Rash"), ("Death",)],
            "indications": [("Pain",), (), ("Pain",)], "drugs": [("A",), ("B",), ()],
            "age_years": [0.01, 15.0, 70.0]}
    base.update(columns)
    return pd.DataFrame(base)


def test_super_record_of_a_followup_takes_the_lub() -> None:
    schema = Schema.papers()
    supers = combine_super_records(_records(), schema, schema.load_hierarchies())
    first = supers.frame.iloc[0]
    assert first["case_id"] == "1" and first["n_reports"] == 2
    assert first["age"] == "Nonadult"  # LCA of Newborn and Adolescent (algorithms.md §1.8)
    assert (first["weight"].left, first["weight"].right) == (3.0, 50.0)
    assert first["reactions"] == ("Fever", "Rash")
    assert first["report_ids"] == ("a", "b")
    assert first["age_years"] == 15.0  # private columns come from the latest version
    lo, hi = supers.numeric_bounds("weight")
    assert lo.tolist() == [3.0, 80.0] and hi.tolist() == [50.0, 80.0]
    # The raw "Aged" (what age_to_mesh wrote before issue 20, so old stores hold it) is the
    # band leaf, not the generalization "Aged".
    assert supers.frame.iloc[1]["age"] == "Aged (65-79)"


def test_old_band_labels_are_their_leaves_before_the_lub() -> None:
    schema = Schema.papers()
    ages = ["Adult", "Adult (25-44)", "Aged"]
    frame = _records(age=ages, case_id=["1", "1", "2"])
    supers = combine_super_records(frame, schema, schema.load_hierarchies()).frame
    # Adult and Adult (25-44) are one band: no generalization for case 1.
    assert supers["age"].tolist() == ["Adult (25-44)", "Aged (65-79)"]
    mixed = combine_super_records(_records(age=["Adult", "Young Adult", "Infant"]), schema,
                                  schema.load_hierarchies()).frame
    assert mixed["age"].tolist() == ["Adult", "Infant (1-23 months)"]


def test_super_records_reject_values_outside_the_hierarchy() -> None:
    schema = Schema.papers()
    with pytest.raises(HierarchyError, match="Teen"):
        combine_super_records(_records(age=["Teen", "Aged", "Aged"]), schema, schema.load_hierarchies())
    with pytest.raises(SchemaError, match="non-numeric"):
        combine_super_records(_records(weight=["3", "heavy", "1"]), schema, schema.load_hierarchies())


def test_value_sets_normalize() -> None:
    assert as_value_set(["b", " a", "b", ""]) == ("a", "b")
    assert as_value_set("x|y|x") == ("x", "y")
    assert as_value_set(None) == () and as_value_set(float("nan")) == ()
