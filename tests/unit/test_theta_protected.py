"""θ = 1 is no limit (issue 29, item 5): protected terms cap a term's θ whatever the rule gives
it, the θ table records the caps and names the terms it leaves unbounded, and θ files and the
schema declare caps with errors that name what is wrong."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import medanon
from medanon.data.schema import Schema
from medanon.errors import InfeasibleError, InputFormatError, SchemaError, ValidationError
from medanon.models.theta import (FrequencyTheta, ProtectedTheta, TableTheta, ThetaTable,
                                  UniformTheta, caps_raised, parse_protect, parse_theta, protect,
                                  theta_table_of)
from medanon.pipeline.methods import periodic_method

TERMS = [f"term{i}" for i in range(12)]


# ---------------------------------------------------------------------------- the θ table
def test_the_table_names_its_unbounded_terms_and_records_caps_only_when_given() -> None:
    table = ThetaTable(0.6, {"b": 1.0, "Death": 1.0, "c": 0.2})
    assert table.unbounded_terms == ("b", "Death") and not table.default_unbounded
    assert "caps" not in table.to_manifest()  # a table without protected terms reads as before
    assert ThetaTable(1.0).default_unbounded and ThetaTable(1.0).unbounded_terms == ()
    capped = ThetaTable(0.6, {"Death": 0.3}, {"Death": 0.3})
    assert capped.to_manifest()["caps"] == {"Death": 0.3}
    assert ThetaTable.from_manifest(capped.to_manifest()) == capped
    assert capped.with_overrides({"Death": 0.5}).caps == {"Death": 0.3}  # raised, cap kept
    manifest = {"details": {"theta_table": capped.to_manifest(),
                            "raised_theta": {"Death": {"theta": 0.3, "raised_to": 0.5,
                                                       "cap": 0.3, "count": 9},
                                             "Nausea": {"theta": 0.6, "raised_to": 0.7,
                                                        "count": 4}}}}
    assert theta_table_of(manifest) == capped and theta_table_of({"details": {}}) is None
    assert list(caps_raised(manifest)) == ["Death"]


@settings(max_examples=60, deadline=None)
@given(counts=st.dictionaries(st.sampled_from(TERMS), st.integers(1, 500), min_size=1),
       caps=st.dictionaries(st.sampled_from(TERMS), st.floats(0.01, 1.0), min_size=1))
def test_a_protected_term_never_exceeds_its_cap_under_the_frequency_rule(counts, caps) -> None:
    rule = FrequencyTheta()
    plain, capped = rule.resolve(counts), protect(rule, caps).resolve(counts)
    assert dict(capped.caps) == caps
    for term in TERMS:
        if term in caps:  # listed whether or not the period holds it: no fact of the data
            assert capped.get(term) == min(plain.get(term), caps[term]) <= caps[term]
            assert term in capped.overrides
        else:
            assert capped.get(term) == plain.get(term)
    assert set(capped.unbounded_terms) == {t for t in plain.unbounded_terms if caps.get(t, 1) >= 1}


def test_caps_given_twice_keep_the_smaller_one_and_any_rule_takes_them() -> None:
    spec = protect(protect(FrequencyTheta(), {"Death": 0.4, "a": 0.5}), {"Death": 0.3})
    assert isinstance(spec, ProtectedTheta) and spec.kind == "frequency"
    assert dict(spec.caps) == {"Death": 0.3, "a": 0.5}
    assert spec.describe()["protected"] == {"Death": 0.3, "a": 0.5}
    assert protect(UniformTheta(0.5), {"Death": 0.3}).resolve({}).get("Death") == 0.3
    # a cap looser than the rule's θ changes nothing
    assert protect(UniformTheta(0.2), {"Death": 0.3}).resolve({}).get("Death") == 0.2
    assert protect(FrequencyTheta(), {}) == FrequencyTheta()
    assert parse_protect(["Death=0.4", "Death=0.3", " a = b=0.5"], owner="X") == {
        "Death": 0.3, "a = b": 0.5}  # the cap follows the last '='


@pytest.mark.parametrize(("items", "fragment"), [
    (["Death"], "The 'protect' parameter of periodic_method expects TERM=CAP"),
    (["Death=high"], "with a number as CAP"),
    (["=0.3"], "must name each term"),
    (["Death=0"], "must give each term a cap in (0, 1]; got 'Death' = 0.0"),
    ({"Death": 1.5}, "must give each term a cap in (0, 1]; got 'Death' = 1.5"),
    ({"Death": True}, "cap in (0, 1]"),
])
def test_bad_caps_name_the_parameter(items, fragment) -> None:
    with pytest.raises(ValidationError) as err:
        periodic_method("ppms++", k=5, theta="frequency", protect=items)
    assert fragment in str(err.value)


def test_protect_does_not_apply_without_theta() -> None:
    with pytest.raises(ValidationError, match="The 'protect' parameter of periodic_method does "
                                              "not apply to method 'none'"):
        periodic_method("none", protect=["Death=0.3"])
    method = periodic_method("ms", k=5, theta="frequency", protect={"Death": 0.3})
    assert method.parameters()["theta"]["protected"] == {"Death": 0.3}


# ------------------------------------------------------------------------------- θ files
def test_theta_files_take_a_frequency_default_and_caps(tmp_path) -> None:
    csv_file = tmp_path / "theta.csv"
    csv_file.write_text("term,theta,cap\n*,frequency,\nDeath,,0.3\nDepression,,0.25\n",
                        encoding="utf-8")
    spec = parse_theta(str(csv_file))
    assert isinstance(spec, ProtectedTheta) and isinstance(spec.base, FrequencyTheta)
    assert dict(spec.caps) == {"Death": 0.3, "Depression": 0.25}
    toml_file = tmp_path / "theta.toml"
    toml_file.write_text('default = "frequency"\n[protected]\n"Death" = 0.3\n"Depression" = 0.25\n',
                         encoding="utf-8")
    assert parse_theta(str(toml_file)).caps == spec.caps
    # a numeric default keeps its explicit θ and levels, with caps on top
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("term,theta,cap\n*,0.6,\nNausea,1,\nDeath,0.5,0.3\n", encoding="utf-8")
    table = parse_theta(str(mixed)).resolve({})
    assert (table.get("Nausea"), table.get("Death"), dict(table.caps)) == (1.0, 0.3, {"Death": 0.3})
    plain = tmp_path / "plain.csv"
    plain.write_text("term,theta\n*,0.4\nDeath,0.2\n", encoding="utf-8")
    assert isinstance(parse_theta(str(plain)), TableTheta)  # unchanged without caps


@pytest.mark.parametrize(("name", "text", "fragment"), [
    ("a.csv", "term,theta,cap\n*,frequency,\nDeath,0.2,\n", "give 'Death' a cap"),
    ("b.csv", "term,theta,cap\n*,0.6,0.3\n", "the default row '*' takes no cap"),
    ("c.csv", "term,theta,cap\n*,0.6,\nDeath,,\n", "neither a theta nor a cap"),
    ("d.csv", "term,theta,cap\n*,0.6,\nDeath,,1.5\n", "cap '1.5' is not in (0, 1]"),
    ("e.csv", "term,cap\n*,0.6\n", "the header must be 'term,theta' or 'term,theta,cap'"),
    ("f.toml", 'default = "frequency"\n[terms]\n"Death" = 0.2\n',
     "terms cannot be combined with it: cap terms in [protected]"),
    ("g.toml", 'default = 0.4\n[protected]\n"Death" = "low"\n', "cap 'low' is not a number"),
    ("h.toml", 'default = 0.4\nprotected = 0.3\n', "'protected' must be a table"),
    ("i.toml", 'default = 0.4\n[protect]\n"Death" = 0.3\n', "unknown key(s) protect"),
])
def test_malformed_caps_in_theta_files_say_where(tmp_path, name, text, fragment) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError) as err:
        parse_theta(str(path))
    assert fragment in str(err.value) and str(path) in str(err.value)


# -------------------------------------------------------------------------------- schema
def test_schema_protected_terms_round_trip_and_are_validated(tmp_path) -> None:
    mapping = Schema.default().model_dump(by_alias=True)
    schema = Schema.from_mapping({**mapping, "protected_terms": {"Death": 0.3}})
    path = tmp_path / "schema.toml"
    path.write_text(schema.to_toml(), encoding="utf-8")
    assert Schema.from_toml(path) == schema and 'protected_terms = {"Death" = 0.3}' in schema.to_toml()
    assert "protected_terms" not in Schema.default().to_toml()  # stores made before read the same
    for bad, fragment in (({"Death": 1.5}, "the cap of 'Death' must be in (0, 1]"),
                          ({" ": 0.3}, "protected_terms: a term is empty"),
                          ({"Death": "x"}, "protected_terms.Death")):
        with pytest.raises(SchemaError, match=r"Invalid schema") as err:
            Schema.from_mapping({**mapping, "protected_terms": bad})
        assert fragment in str(err.value)


# --------------------------------------------------------------------------- publishing
@pytest.fixture(scope="module")
def data(tmp_path_factory) -> medanon.Dataset:
    return medanon.Dataset.synthetic_faers(tmp_path_factory.mktemp("theta") / "faers", periods=2,
                                           cases=300, seed=1)


def test_publisher_caps_protected_terms_and_says_which_stay_unbounded(data, tmp_path) -> None:
    plain = medanon.Publisher("ppms++", k=5, theta="frequency", on_infeasible="raise-theta",
                              seed=7).publish(data)
    assert all("Depression" in r.unbounded_terms for r in plain.releases_published)
    series = medanon.Publisher("ppms++", k=5, theta="frequency", on_infeasible="raise-theta",
                               seed=7, protect={"Depression": 0.3}).publish(data)
    for release, before in zip(series.releases_published, plain.releases_published):
        table = release.theta_table
        assert release.verdict == "passed"
        assert table.get("Depression") == 0.3 and dict(table.caps) == {"Depression": 0.3}
        assert release.manifest["details"]["theta_table"]["caps"] == {"Depression": 0.3}
        assert release.manifest["method"]["parameters"]["theta"]["protected"] == {"Depression": 0.3}
        assert release.unbounded_terms == tuple(t for t in before.unbounded_terms if t != "Depression")
        assert release.unbounded_terms == table.unbounded_terms
        assert "term(s) at theta 1 have no limit" in release.manifest["method"]["guarantee"]
    # the same facts for a series read back from its folder (the published θ tables)
    series.export(tmp_path / "published")
    assert medanon.Series.read(tmp_path / "published").unbounded_terms() == {
        r.period: r.unbounded_terms for r in series.releases_published}


def test_schema_protected_terms_apply_to_every_release(data) -> None:
    schema = Schema.from_mapping({**data.schema.model_dump(by_alias=True),
                                  "protected_terms": {"Depression": 0.25}})
    records = {p: data.records(p) for p in data.periods}
    capped = medanon.Dataset(records, schema=schema)
    series = medanon.Publisher("ppms++", k=5, theta="frequency", on_infeasible="raise-theta",
                               seed=7, protect={"Depression": 0.3}).publish(capped)
    for release in series.releases_published:  # the stricter of the two caps
        assert release.theta_table.get("Depression") == 0.25
        assert dict(release.theta_table.caps) == {"Depression": 0.25}
    with pytest.raises(ValidationError, match=r"'Depresion' \(did you mean 'Depression'\?\)"):
        medanon.Publisher("ppms++", k=5, theta="frequency", seed=7).publish(
            medanon.Dataset(records, schema=Schema.from_mapping(
                {**data.schema.model_dump(by_alias=True), "protected_terms": {"Depresion": 0.3}})))


def test_an_infeasible_cap_is_refused_or_raised_and_recorded(data) -> None:
    with pytest.raises(InfeasibleError, match=r"'Depression': \d+ cases, theta 0.01 \(protected, "
                                              r"cap 0.01\)") as refused:
        medanon.Publisher("ppms++", k=5, theta="frequency", seed=7,
                          protect={"Depression": 0.01}).publish(data, ["2020Q1"])
    raised = medanon.Publisher("ppms++", k=5, theta="frequency", on_infeasible="raise-theta",
                               seed=7, protect={"Depression": 0.01}, max_withheld=0.5
                               ).publish(data, ["2020Q1"])
    release = raised.releases_published[0]
    # raise-theta raised the cap for the first grouping, which could then place no case holding
    # the term (its raised theta is below 1/k) and withheld them; the published cases, grouped
    # again alone (issue 41), hold it nowhere, so the release keeps the cap and records no raise
    assert "raised_theta" not in release.manifest["details"]
    assert "withheld_cases" not in release.manifest["details"]   # the operator's (issue 41)
    assert release.operator_manifest["details"]["withheld_cases"] > 0
    assert release.theta_table.get("Depression") == 0.01
    assert release.theta_table.caps["Depression"] == 0.01
    assert not any("Depression" in f"{a}|{b}" for a, b in zip(release.rows["indications"],
                                                              release.rows["reactions"]))
    # the refusal carries the θ raise-theta declares for the first grouping: the grid point at
    # or above the smallest workable θ c/N the operator's message states
    workable = refused.value.workable_theta["Depression"]
    assert workable == pytest.approx(round(workable / 0.05) * 0.05)
    smallest = float(re.search(r"smallest workable theta ([0-9]+\.[0-9]+)", str(refused.value))[1])
    assert smallest <= workable < smallest + 0.05
