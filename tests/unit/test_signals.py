"""Pharmacovigilance signal metrics: 2×2 tables on published rows, PRR/ROR/χ², rules files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medanon.data.schema import Schema
from medanon.errors import HierarchyError, InputFormatError, SchemaError, ValidationError
from medanon.hierarchies import mesh_age_tree, sex_tree
from medanon.hierarchies.builtin import mesh_age_band
from medanon.metrics.signals import (
    INSIDE,
    OUTSIDE,
    UNDECIDED,
    Condition,
    Contingency,
    SignalRule,
    SignalStats,
    chi_square,
    compare_signals,
    contingency,
    format_ratio,
    is_signal,
    json_ratio,
    prr,
    prr_haldane,
    ratio_from_json,
    read_rules,
    ror,
    ror_haldane,
)
from medanon.published.format import to_published_rows

HIERARCHIES = {"age": mesh_age_tree(), "sex": sex_tree()}
MI = "Myocardial infarction"


def _rows(**columns: list[str]) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    base = {"age": [""] * n, "sex": [""] * n, "weight": [""] * n, "drugs": [""] * n,
            "reactions": [""] * n}
    return pd.DataFrame({**base, **columns})


# ----------------------------------------------------------------------------------- statistics
def test_golden_table_prr_ror_yates_chi_square() -> None:
    t = Contingency(6, 14, 10, 170)
    # PRR = (6/20) / (10/180) = 0.3 / 0.0555... = 5.4
    assert prr(t) == pytest.approx(5.4)
    # ROR = (6*170) / (14*10) = 1020 / 140 = 51/7
    assert ror(t) == pytest.approx(51 / 7)
    # N = 200; ad - bc = 1020 - 140 = 880; |880| - N/2 = 780; 780^2 = 608400
    # margins (a+b)(c+d)(a+c)(b+d) = 20*180*16*184 = 10598400
    # chi2 = 200*608400 / 10598400 = 121680000 / 10598400 = 4225/368 = 11.4810
    assert chi_square(t) == pytest.approx(4225 / 368)
    assert is_signal(t)
    assert t.n == 200


def test_signal_needs_chi_square_at_least_4_even_with_prr_above_2() -> None:
    t = Contingency(3, 7, 20, 170)
    # PRR = (3/10) / (20/190) = 0.3 * 190/20 = 2.85  (>= 2)
    assert prr(t) == pytest.approx(2.85)
    # N = 200; ad - bc = 510 - 140 = 370; 370 - 100 = 270; 270^2 = 72900
    # margins 10*190*23*177 = 7734900; chi2 = 200*72900/7734900 = 14580000/7734900 = 1.88497
    assert chi_square(t) == pytest.approx(14_580_000 / 7_734_900)
    assert chi_square(t) < 4
    assert not is_signal(t)


def test_prr_and_ror_are_zero_when_a_below_3_but_chi_square_is_not() -> None:
    t = Contingency(2, 3, 1, 100)
    # without 001's rule PRR would be (2/5)/(1/101) = 40.4 and ROR (2*100)/(3*1) = 66.7
    assert prr(t) == 0.0
    assert ror(t) == 0.0
    # N = 106; ad - bc = 200 - 3 = 197; 197 - 53 = 144; 144^2 = 20736
    # margins 5*101*3*103 = 156045; chi2 = 106*20736/156045 = 2198016/156045 = 14.0858
    assert chi_square(t) == pytest.approx(2_198_016 / 156_045)
    assert not is_signal(t)
    # one more case and the rule is back: a = 3 -> PRR = (3/6)/(1/101) = 50.5
    assert prr(Contingency(3, 3, 1, 100)) == pytest.approx(50.5)


def test_yates_correction_never_overshoots_and_an_empty_margin_gives_zero() -> None:
    # a margin of 0 (a + c = 0) leaves chi2 undefined -> 0
    assert chi_square(Contingency(0, 4, 0, 7)) == 0.0
    # ad - bc = 9 - 9 = 0 < N/2 = 6: the corrected statistic is 0, not (0 - 6)^2 * ...
    assert chi_square(Contingency(3, 3, 3, 3)) == 0.0
    assert prr(Contingency(3, 3, 3, 3)) == pytest.approx(1.0)  # (3/6)/(3/6)


# LEVAQUIN / tendon rupture: 8 reports with the drug and the reaction, 1 with the drug only, and
# the reaction never without the drug
LEVAQUIN = Contingency(8, 1, 0, 100)


def test_c_zero_is_an_infinite_prr_with_the_haldane_value_beside_it_and_a_signal() -> None:
    assert prr(LEVAQUIN) == math.inf
    assert ror(LEVAQUIN) == math.inf
    # Haldane-Anscombe: PRR (8.5/10) / (0.5/101) = 0.85 * 202 = 171.7
    assert prr_haldane(LEVAQUIN) == pytest.approx(171.7)
    # ROR (8.5 * 100.5) / (1.5 * 0.5) = 854.25 / 0.75 = 1139
    assert ror_haldane(LEVAQUIN) == pytest.approx(1139.0)
    stats = SignalStats.from_table(LEVAQUIN)
    assert stats.signal and is_signal(LEVAQUIN)
    assert stats.prr_corrected == pytest.approx(171.7)
    assert stats.ror_corrected == pytest.approx(1139.0)
    # a table without an empty cell has no corrected value beside it
    assert SignalStats.from_table(Contingency(6, 14, 10, 170)).prr_corrected is None


def test_an_infinite_prr_is_a_signal_from_three_cases_whatever_chi_square_says() -> None:
    small = Contingency(3, 0, 0, 2)
    # N = 5; ad - bc = 6; 6 - 2.5 = 3.5; chi2 = 5 * 12.25 / (3*2*3*2) = 61.25/36 = 1.70 < 4
    assert chi_square(small) == pytest.approx(61.25 / 36)
    assert prr(small) == math.inf and is_signal(small)
    # two cases are not enough: 001's rule sets PRR to 0 and there is no signal
    assert prr(Contingency(2, 0, 0, 2)) == 0.0 and not is_signal(Contingency(2, 0, 0, 2))


def test_undefined_and_zero_ratios() -> None:
    # c + d = 0: every report has the drug, nothing to compare with -> undefined, no signal
    only_drug = Contingency(5, 3, 0, 0)
    assert math.isnan(prr(only_drug)) and not is_signal(only_drug)
    assert math.isnan(ror(only_drug))                    # b*c = 0 and d = 0: 0/0
    assert SignalStats.from_table(only_drug).prr_corrected is None
    # d = 0 alone leaves PRR finite (a/(a+b) = 5/8) and ROR a true 0; the corrected values stand
    # beside them because a cell is empty
    no_d = Contingency(5, 3, 2, 0)
    assert prr(no_d) == pytest.approx(5 / 8)
    assert ror(no_d) == 0.0
    stats = SignalStats.from_table(no_d)
    # (5.5/9) / (2.5/3) = 0.6111 / 0.8333 = 0.7333
    assert stats.prr_corrected == pytest.approx((5.5 / 9) / (2.5 / 3))
    # b = 0 makes ROR infinite while PRR stays finite and below 2: no signal (ROR is not part of
    # the criterion)
    no_b = Contingency(5, 0, 60, 10)
    assert ror(no_b) == math.inf
    assert prr(no_b) == pytest.approx(70 / 60) and not is_signal(no_b)


def test_infinite_ratios_in_json_are_the_string_inf_and_undefined_ones_null() -> None:
    stats = json.loads(json.dumps(SignalStats.from_table(LEVAQUIN).to_dict(), allow_nan=False))
    assert stats["prr"] == "inf" and stats["ror"] == "inf"
    assert stats["prr_corrected"] == pytest.approx(171.7) and stats["signal"] is True
    undefined = SignalStats.from_table(Contingency(5, 3, 0, 0)).to_dict()
    assert undefined["prr"] is None and undefined["prr_corrected"] is None
    assert ratio_from_json("inf") == math.inf and ratio_from_json("-inf") == -math.inf
    assert math.isnan(ratio_from_json(None)) and ratio_from_json(2) == 2.0
    assert json_ratio(math.inf) == "inf" and json_ratio(-math.inf) == "-inf"
    assert json_ratio(math.nan) is None and json_ratio(1.5) == 1.5
    with pytest.raises(ValidationError, match="must be a number, 'inf'"):
        ratio_from_json("Infinity")


def test_format_ratio_never_prints_an_infinite_or_rare_ratio_as_zero() -> None:
    assert format_ratio("inf", 171.7) == "∞ (HA 171.70)"
    assert format_ratio(None) == "n/a"
    assert format_ratio(5.4) == "5.40"
    assert format_ratio(0.0, a=2) == "0 (a<3)"
    assert format_ratio(math.inf) == "∞"


def test_contingency_rejects_negative_counts() -> None:
    with pytest.raises(ValidationError,
                       match="The 'b' parameter of Contingency must be an integer >= 0"):
        Contingency(1, -1, 0, 0)
    with pytest.raises(ValidationError, match="must be a Contingency"):
        prr((6, 14, 10, 170))


# ----------------------------------------------------------------------------------- conditions
def test_mesh_age_band_internal_nodes_are_the_union_of_their_subtree() -> None:
    assert mesh_age_band("Adult") == (19.0, 150.0)       # not the value band 25-45
    assert mesh_age_band("Nonadult") == (0.0, 19.0)
    assert mesh_age_band("*") == (0.0, 150.0)
    assert mesh_age_band("Adolescent") == (13.0, 19.0)
    assert mesh_age_band("Child") == (2.0, 13.0)         # Preschool 2-6 + In-school 6-13
    assert mesh_age_band("Aged") == (65.0, 150.0)
    with pytest.raises(HierarchyError, match="'Senior' is not a node of hierarchy 'mesh-age'"):
        mesh_age_band("Senior")


@pytest.mark.parametrize(("text", "attribute", "op", "value"), [
    ("age > 18", "age", ">", "18"),
    ("age>=65", "age", ">=", "65"),
    ("  weight <= 80.5 ", "weight", "<=", "80.5"),
    ("sex == F", "sex", "=", "F"),
    ("sex != M", "sex", "!=", "M"),
    ("age IN Adult", "age", "in", "Adult"),
    ("age in 'Aged, 80 and over'", "age", "in", "Aged, 80 and over"),
    ("weight in [40-60]", "weight", "in", "[40-60]"),
])
def test_condition_parse(text: str, attribute: str, op: str, value: str) -> None:
    c = Condition.parse(text)
    assert (c.attribute, c.op, c.value) == (attribute, op, value)
    assert Condition.parse(c.text) == c   # the canonical text reads back


@pytest.mark.parametrize(("text", "requirement"), [
    ("age >> 18", "'<attribute> <operator> <value>'"),
    ("age => 18", "'<attribute> <operator> <value>'"),
    ("age", "'<attribute> <operator> <value>'"),
    ("18 < age", "'<attribute> <operator> <value>'"),
    ("age in", "'<attribute> <operator> <value>'"),
    ("", "'<attribute> <operator> <value>'"),
    ("age > old", "a comparison with a number when the operator is '>'"),
])
def test_condition_parse_errors(text: str, requirement: str) -> None:
    with pytest.raises(ValidationError) as info:
        Condition.parse(text)
    message = str(info.value)
    assert message.startswith(f"The 'condition' parameter of Condition must be {requirement}")
    assert message.endswith(f"got {text!r}.")


def test_categorical_equality_is_wholly_inside_the_node() -> None:
    female = Condition.parse("sex = F")
    assert female.holds("F", sex_tree()) is True
    assert female.holds("M", sex_tree()) is False
    assert female.holds("*", sex_tree()) is None     # Gender = Any: undecided, never counted
    assert female.holds("", sex_tree()) is None      # missing = whole domain
    assert female.holds(None, sex_tree()) is None
    not_male = Condition.parse("sex != M")
    assert [not_male.holds(x, sex_tree()) for x in ("F", "M", "*")] == [True, False, None]
    in_adult = Condition.parse("age in Adult")
    cells = ("Adult", "Aged, 80 and over", "Adolescent", "*")
    assert [in_adult.holds(x, mesh_age_tree()) for x in cells] == [True, True, False, None]
    # a published Adult may be a generalized Young Adult: undecided for "age = Aged"
    assert Condition.parse("age = Aged").holds("Adult", mesh_age_tree()) is None


def test_mesh_age_compared_with_numbers_uses_the_completed_year_band() -> None:
    tree = mesh_age_tree()
    over_18 = Condition.parse("age > 18")
    cells = ["Adult", "Young Adult", "Aged", "Adolescent", "Nonadult", "Child", "*", ""]
    assert over_18.classify(cells, tree).tolist() == [INSIDE, INSIDE, INSIDE, OUTSIDE, OUTSIDE,
                                                      OUTSIDE, UNDECIDED, UNDECIDED]
    over_60 = Condition.parse("age > 60")   # 001's R3: bands do not split at 60
    assert [over_60.holds(x, tree) for x in ("Aged", "Middle Aged", "Adult", "Young Adult")] \
        == [True, None, None, False]
    assert Condition.parse("age >= 65").holds("Aged", tree) is True
    under_18 = Condition.parse("age < 18")  # Adolescents are 13-18 years: some are 18
    assert [under_18.holds(x, tree) for x in ("Child", "Adolescent", "Nonadult", "Adult")] \
        == [True, None, None, False]


def test_numeric_cells_must_lie_wholly_inside() -> None:
    assert Condition.parse("weight > 20").holds("[30-50]") is True
    assert Condition.parse("weight > 40").holds("[30-50]") is None   # straddles the threshold
    assert Condition.parse("weight > 50").holds("[30-50]") is False  # hi = 50 is not > 50
    assert Condition.parse("weight >= 50").holds("[30-50]") is None
    assert Condition.parse("weight <= 80").holds("58.05") is True
    assert Condition.parse("weight < 30").holds("[30-50]") is False
    assert Condition.parse("weight > 20").holds("*") is None
    assert Condition.parse("weight > 20").holds("") is None
    between = Condition.parse("weight in [40-60]")
    assert [between.holds(x) for x in ("[45-60]", "[30-50]", "[61-70]", "40")] \
        == [True, None, False, True]
    assert Condition.parse("weight != 70").holds("[71-80]") is True


def test_condition_errors_on_values_the_attribute_cannot_hold() -> None:
    with pytest.raises(ValidationError, match="hierarchy 'sex' has no numeric meaning"):
        Condition.parse("sex > 1").classify(["F"], sex_tree())
    with pytest.raises(ValidationError,
                       match="compares the numeric attribute 'weight' with 'heavy'"):
        Condition.parse("weight = heavy").classify(["70"])
    with pytest.raises(HierarchyError, match="'Senior' is not a node of hierarchy 'mesh-age'"):
        Condition.parse("age = Senior").classify(["Adult"], mesh_age_tree())
    with pytest.raises(InputFormatError, match="Column 'weight'"):
        Condition.parse("weight > 3").classify(["heavy"])


# ---------------------------------------------------------------------------------- contingency
# Ten reports for "AVANDIA, sex = F -> Myocardial infarction"; the comment says where each goes.
CASES = _rows(
    sex=["F", "F", "F", "F", "F", "F", "M", "*", "", "F"],
    drugs=["AVANDIA|METFORMIN",   # a
           "avandia",             # a (terms match case-insensitively)
           "AVANDIA",             # b
           "ASPIRIN",             # c
           "ASPIRIN",             # d
           "",                    # d (no drug at all)
           "AVANDIA",             # outside: sex = M
           "AVANDIA",             # undecided and missing: sex = *
           "ASPIRIN",             # undecided, not missing: empty sex
           "AVANDIA-XR"],         # d: a term matches whole, never as a part
    reactions=[MI, "myocardial infarction|Nausea", "Nausea", MI, "Headache", "Headache", MI, MI,
               "Nausea", "Myocardial infarction X"],
)


def test_contingency_counts_only_reports_wholly_inside_the_condition() -> None:
    rule = SignalRule("AVANDIA", MI, "sex = F")
    t = contingency(CASES, rule, hierarchies=HIERARCHIES)
    assert t == Contingency(a=2, b=1, c=1, d=3, missing=1, undecided=2)


def test_contingency_without_condition_counts_every_report() -> None:
    t = contingency(CASES, SignalRule("AVANDIA", MI), hierarchies=HIERARCHIES)
    # D & R: rows 1, 2, 7, 8; D only: row 3; R only: row 4; the other four have neither
    assert t == Contingency(a=4, b=1, c=1, d=4, missing=0, undecided=0)


def test_contingency_is_vectorized_over_many_rows() -> None:
    big = pd.concat([CASES] * 10_000, ignore_index=True)   # 100 000 reports
    t = contingency(big, SignalRule("AVANDIA", MI, "sex = F"), hierarchies=HIERARCHIES)
    assert (t.a, t.b, t.c, t.d, t.missing, t.undecided) == (20_000, 10_000, 10_000, 30_000,
                                                            10_000, 20_000)


def test_condition_attribute_and_label_match_case_insensitively() -> None:
    t = contingency(CASES, SignalRule("Avandia", "MYOCARDIAL INFARCTION", "Sex = f"),
                    hierarchies=HIERARCHIES)
    assert (t.a, t.b, t.c, t.d) == (2, 1, 1, 3)


def test_contingency_reports_absent_columns() -> None:
    with pytest.raises(SchemaError, match="no column 'bmi'"):
        contingency(CASES, SignalRule("AVANDIA", MI, "bmi > 30"), hierarchies=HIERARCHIES)
    with pytest.raises(SchemaError, match="no column 'drug_names'"):
        contingency(CASES, SignalRule("AVANDIA", MI), hierarchies=HIERARCHIES,
                    drug_column="drug_names")


# ------------------------------------------------------------------------- original vs release
def _original_rows(ages: list[str], drugs: list[str], reactions: list[str],
                   sexes: list[str] | None = None) -> pd.DataFrame:
    """Case records through to_published_rows: the original side in the published form."""
    n = len(ages)
    table = pd.DataFrame({
        "period": ["2020Q1"] * n, "case_id": [str(i) for i in range(n)],
        "group": [str(i) for i in range(n)],
        "age": ages, "sex": sexes or ["F"] * n, "weight": [70.0] * n,
        "indications": [("Diabetes",)] * n, "reactions": [(r,) for r in reactions],
        "drugs": [(d,) for d in drugs],
    })
    return to_published_rows(table, Schema.papers())


def test_generalization_lowers_the_count_and_the_prr() -> None:
    ages = ["Young Adult", "Middle Aged", "Aged", "Adult", "Adult", "Young Adult", "Aged",
            "Middle Aged", "Adolescent", "Adolescent"]
    drugs = ["AVANDIA"] * 5 + ["ASPIRIN"] * 3 + ["AVANDIA", "ASPIRIN"]
    reactions = [MI, MI, MI, MI, "Nausea", MI, "Headache", "Headache", MI, "Headache"]
    original = _original_rows(ages, drugs, reactions)
    release = original.copy()
    # two groups mix an Adolescent with an adult: their lowest common ancestor is the root
    release.loc[[0, 8], "age"] = "*"
    release.loc[[7, 9], "age"] = "*"
    release.loc[[1, 2, 3, 4, 5, 6], "age"] = "Adult"     # still wholly inside age > 18
    rule = SignalRule("AVANDIA", MI, "age > 18", name="R1")
    [result] = compare_signals(original, release, [rule], hierarchies=HIERARCHIES)

    # original: the Adolescents (rows 8, 9) are wholly outside, nothing is undecided
    # a = rows 0-3, b = row 4, c = row 5, d = rows 6, 7 -> PRR = (4/5)/(1/3) = 2.4
    assert result.original.table == Contingency(4, 1, 1, 2, missing=0, undecided=0)
    assert result.original.prr == pytest.approx(2.4)
    # N = 8; ad - bc = 8 - 1 = 7; 7 - 4 = 3; chi2 = 8*9 / (5*3*5*3) = 72/225 = 0.32
    assert result.original.chi_square == pytest.approx(0.32)
    # release: rows 0, 7, 8, 9 are "*" (undecided); rows 0 and 8 have AVANDIA and MI (missing)
    # a = rows 1-3, b = row 4, c = row 5, d = row 6 -> PRR = (3/4)/(1/2) = 1.5
    assert result.release.table == Contingency(3, 1, 1, 1, missing=2, undecided=4)
    assert result.release.prr == pytest.approx(1.5)
    assert result.count_bias == -1          # 3 - 4
    assert result.release.count < result.original.count
    assert result.prr_bias == pytest.approx(-0.9)   # 1.5 - 2.4
    # ROR: original (4*2)/(1*1) = 8, release (3*1)/(1*1) = 3
    assert result.ror_bias == pytest.approx(-5.0)


def test_a_generalized_sex_drops_a_rare_signal_below_three_cases() -> None:
    # 001's R2 effect: one ZELNORM/CVA report of three becomes Gender = Any and the PRR falls to 0
    n = 40
    drugs = ["ZELNORM"] * 4 + ["ASPIRIN"] * (n - 4)
    reactions = ["CVA", "CVA", "CVA", "Nausea"] + ["CVA"] + ["Headache"] * (n - 5)
    original = _original_rows(["Adult"] * n, drugs, reactions, sexes=["F"] * n)
    release = original.copy()
    release.loc[2, "sex"] = "*"
    rule = SignalRule("ZELNORM", "CVA", "sex = F")
    [result] = compare_signals(original, release, [rule], hierarchies=HIERARCHIES)
    # original a=3, b=1, c=1, d=35: PRR = (3/4)/(1/36) = 27
    assert result.original.table == Contingency(3, 1, 1, 35)
    assert result.original.prr == pytest.approx(27.0)
    # N = 40; ad - bc = 105 - 1 = 104; 104 - 20 = 84; 84^2 = 7056
    # chi2 = 40*7056 / (4*36*4*36) = 282240/20736 = 13.611 -> a signal
    assert result.original.chi_square == pytest.approx(282_240 / 20_736)
    assert result.original.signal
    assert result.release.table == Contingency(2, 1, 1, 35, missing=1, undecided=1)
    assert result.release.prr == 0.0 and not result.release.signal
    assert result.prr_bias == pytest.approx(-27.0)


def test_comparison_to_dict_is_json() -> None:
    rule = SignalRule("AVANDIA", MI, "sex = F")
    [result] = compare_signals(CASES, CASES, [rule], hierarchies=HIERARCHIES)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["rule"] == {"name": "AVANDIA, sex = F -> Myocardial infarction", "drug": "AVANDIA",
                            "reaction": MI, "condition": "sex = F"}
    assert data["original"]["count"] == 2 and data["original"]["missing"] == 1
    assert data["count_bias"] == 0 and data["prr_bias"] == 0.0
    # a=2 < 3: PRR and ROR are 0 by 001's rule, not inf/nan
    assert data["release"]["prr"] == 0.0 and data["release"]["signal"] is False
    stats = SignalStats.from_table(Contingency(6, 14, 10, 170))
    assert stats.to_dict()["prr"] == pytest.approx(5.4) and stats.signal
    assert all(math.isfinite(v) for v in (stats.prr, stats.ror, stats.chi_square))


def test_biases_with_an_infinite_side_are_infinite_or_undefined_in_json() -> None:
    # original: A and R together in 3 reports, R never without A (c = 0) -> PRR infinite;
    # release: one report without A now has R (c = 1) -> PRR finite; bias -inf
    drugs = ["A"] * 4 + ["B"] * 6
    reactions = ["R", "R", "R", "S"] + ["S"] * 6
    original = _original_rows(["Adult"] * 10, drugs, reactions)
    release = original.copy()
    release.loc[4, "reactions"] = "R"
    [result] = compare_signals(original, release, [SignalRule("A", "R")], hierarchies=HIERARCHIES)
    assert result.original.prr == math.inf and result.original.signal
    # release a=3, b=1, c=1, d=5: PRR = (3/4)/(1/6) = 4.5
    assert result.release.prr == pytest.approx(4.5)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["prr_bias"] == "-inf" and data["original"]["prr"] == "inf"
    [same] = compare_signals(original, original, [SignalRule("A", "R")], hierarchies=HIERARCHIES)
    assert math.isnan(same.prr_bias) and same.to_dict()["prr_bias"] is None  # inf - inf


def test_compare_signals_rejects_a_single_rule() -> None:
    rule = SignalRule("AVANDIA", MI)
    with pytest.raises(ValidationError, match="must be a list of SignalRule objects"):
        compare_signals(CASES, CASES, rule, hierarchies=HIERARCHIES)


# ----------------------------------------------------------------------------------- rule files
def test_signal_rule_defaults_and_validation() -> None:
    rule = SignalRule(" AVANDIA ", MI, "age > 18")
    assert rule.drug == "AVANDIA"
    assert rule.condition == Condition("age", ">", "18")
    assert rule.name == "AVANDIA, age > 18 -> Myocardial infarction"
    assert SignalRule("X", "Y", "").condition is None
    with pytest.raises(ValidationError, match="The 'drug' parameter of SignalRule"):
        SignalRule("", MI)


def test_read_rules_toml(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(
        '[[rule]]\nname = "R1"\ndrug = "AVANDIA"\ncondition = "age > 18"\n'
        'reaction = "Myocardial infarction"\n\n'
        '[[rule]]\ndrug = "ZELNORM"\nreaction = "Cerebrovascular accident"\n', encoding="utf-8")
    r1, r2 = read_rules(path)
    assert (r1.name, r1.drug, r1.reaction, r1.condition) == ("R1", "AVANDIA", MI,
                                                             Condition("age", ">", "18"))
    assert r2.condition is None and r2.name == "ZELNORM -> Cerebrovascular accident"


def test_read_rules_csv(tmp_path: Path) -> None:
    path = tmp_path / "rules.csv"
    path.write_text('\ufeffdrug,condition,reaction\n'
                    'AVANDIA,age > 18,Myocardial infarction\n'
                    'WARFARIN,,Haemorrhage\n'
                    '\n'
                    'LEVAQUIN,"age in Aged, 80 and over",Tendon rupture\n', encoding="utf-8")
    rules = read_rules(path)
    assert [r.drug for r in rules] == ["AVANDIA", "WARFARIN", "LEVAQUIN"]
    assert rules[0].condition == Condition.parse("age > 18")
    assert rules[1].condition is None
    assert rules[2].condition == Condition("age", "in", "Aged, 80 and over")


@pytest.mark.parametrize(("name", "text", "fragment"), [
    ("bad.toml", "[[rule]\ndrug = 1", "is not valid TOML"),
    ("keys.toml", '[[rule]]\ndrugs = "A"\nreaction = "B"\n', "rule 1: unknown key(s) 'drugs'"),
    ("top.toml", 'rules = []\n', "unknown top-level key(s) 'rules'"),
    ("type.toml", '[[rule]]\ndrug = "A"\nreaction = 3\n', "'reaction' must be a string"),
    ("none.toml", "", "holds no rules"),
    ("nodrug.toml", '[[rule]]\nreaction = "B"\n', "rule 1: 'drug' must be given"),
    ("dup.toml", '[[rule]]\nname="R"\ndrug="A"\nreaction="B"\n[[rule]]\nname="R"\ndrug="C"\n'
                 'reaction="D"\n', "rule 2: the rule name 'R' is already used by rule 1"),
    ("cond.csv", "drug,condition,reaction\nA,age >> 3,B\n",
     "line 2: The 'condition' parameter of Condition must be"),
    ("header.csv", "drug,condition\nA,age > 3\n", "lacks column(s) 'reaction'"),
    ("extra.csv", "drug,condition,reaction,dose\nA,,B,1\n", "unknown column(s) 'dose'"),
    ("cells.csv", "drug,condition,reaction\nA,age in Aged, 80 and over,B\n",
     "line 2: 4 cells but the header has 3"),
    ("empty.csv", "", "is empty"),
    ("rules.txt", "drug,reaction\nA,B\n", "must be a .toml or a .csv file"),
])
def test_read_rules_errors(tmp_path: Path, name: str, text: str, fragment: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError) as info:
        read_rules(path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


def test_read_rules_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match="does not exist"):
        read_rules(tmp_path / "absent.toml")


def test_classify_returns_one_class_per_cell() -> None:
    cells = np.array(["F", "M", "*", "F", ""], dtype=object)
    out = Condition.parse("sex = F").classify(cells, sex_tree())
    assert out.dtype == np.int8
    assert out.tolist() == [INSIDE, OUTSIDE, UNDECIDED, INSIDE, UNDECIDED]
