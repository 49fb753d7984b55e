"""PPMS-DP_all's label remedy (issue 22): perturbed categorical QIDs published at a level chosen
from ε and the hierarchy (``label_confidence``), drawn by 000's exponential mechanism and cut
(post-processing) or by randomized response over the level's labels (``label_mechanism``)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from medanon.anonymize import PPMSDPAll, PPMSDPNum
from medanon.anonymize.ppms_dp import label_level
from medanon.attacks.likelihood import LikelihoodAttacker
from medanon.attacks.worst_case import attack_series
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.errors import InputFormatError, ValidationError
from medanon.hierarchies import Taxonomy, mesh_age_tree, sex_tree
from medanon.mechanisms import RandomizedResponse
from medanon.mechanisms.coarsening import (ancestor_at_level, check_confidence, consistent_pairs,
                                           finest_level, hierarchy_log_table, label_consistency,
                                           level_cut, published_log_table)
from medanon.models import PPMSDPModel
from medanon.pipeline import publish
from medanon.pipeline.methods import periodic_method
from medanon.published.series import empty_series
from medanon.random import randomness

SCHEMA = Schema.papers()  # the records below hold only the papers' columns
HIERARCHIES = SCHEMA.load_hierarchies()
AGE, SEX = mesh_age_tree(), sex_tree()
AGES = ["Young Adult", "Middle Aged", "Aged (65-79)", "Adolescent", "In-school", "Newborn"]
RR = "randomized-response"


def records(n: int, *, seed: int = 0, period: str = "2020Q1") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "case_id": [str(i) for i in range(n)], "period": period,
        "age": [AGES[i % len(AGES)] if i % 13 else None for i in range(n)],
        "sex": ["F" if i % 3 else "M" for i in range(n)],
        "weight": rng.uniform(40, 120, n).round(1), "indications": [(f"I{i % 7}",) for i in range(n)],
        "reactions": [(f"R{i % 11}",) for i in range(n)], "drugs": [("D1",)] * n,
        "report_id": [str(i) for i in range(n)], "age_years": 40.0})


def run(method, frame, seed=1):
    supers = combine_super_records(frame, SCHEMA, HIERARCHIES)
    return method.anonymize(supers, [], rng=randomness(seed))


def prepared(method, frame, seed=1):
    return publish.prepare_release(SCHEMA, method, "2020Q1", frame, randomness(seed),
                                   series=empty_series(SCHEMA), hierarchies=HIERARCHIES)


def tree(tax: Taxonomy):
    return tax.parent_array, tax.depth_array


# ------------------------------------------------------------------ the coarsening functions
def test_ancestor_at_level_and_the_cut_of_each_level_of_the_mesh_age_tree():
    up = ancestor_at_level(*tree(AGE), 1)
    assert AGE.decode(up[AGE.encode(["Middle Aged", "Newborn", "Adult", "*"])]) == \
        ["Adult", "Nonadult", "Adult", "*"]
    assert (ancestor_at_level(*tree(AGE), AGE.height) == np.arange(len(AGE.nodes))).all()
    assert AGE.decode(level_cut(*tree(AGE), 0)) == ["*"]
    assert sorted(AGE.decode(level_cut(*tree(AGE), 1))) == ["Adult", "Nonadult"]
    # depth 2 holds the bands that are leaves there (Adolescent, Young Adult, ...) beside the
    # inner nodes (Infant, Child, Aged)
    assert sorted(AGE.decode(level_cut(*tree(AGE), 2))) == sorted(
        ["Infant", "Child", "Adolescent", "Young Adult", "Adult (25-44)", "Middle Aged", "Aged"])
    assert sorted(AGE.decode(level_cut(*tree(AGE), 3))) == sorted(AGE.values)
    ok = consistent_pairs(*tree(AGE))
    code = AGE.code_of
    assert ok[code["Middle Aged"], code["Adult"]] and ok[code["Adult"], code["Middle Aged"]]
    assert not ok[code["Middle Aged"], code["Nonadult"]]
    assert not ok[code["Middle Aged"], code["Aged"]]   # siblings contradict


@pytest.mark.parametrize("mechanism, level", [("exponential", None), ("exponential", 0),
                                              ("exponential", 1), ("exponential", 2),
                                              (RR, 0), (RR, 1), (RR, 2), (RR, 3)])
@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(5)])
def test_published_tables_are_distributions_within_e_epsilon_on_the_levels_labels(
        mechanism, level, epsilon):
    table = published_log_table(*tree(AGE), epsilon, mechanism=mechanism, level=level)
    assert np.allclose(np.exp(table).sum(axis=1), 1.0)
    shown = np.flatnonzero(np.isfinite(table[0]))
    if level is not None:  # only the level's labels are ever published: randomized response
        # draws on the root and the cut, 000's draw is cut to it (a label above stays as drawn)
        expected = (np.union1d(level_cut(*tree(AGE), level), [AGE.code_of["*"]]) if mechanism == RR
                    else np.flatnonzero(AGE.depth_array <= level))
        assert set(shown.tolist()) == set(expected.tolist())
    # epsilon-DP: any two true values give each published label within a factor e^epsilon
    cols = table[:, shown]
    spread = cols.max(axis=0) - cols.min(axis=0)
    assert spread.max() <= float(epsilon) + 1e-9
    # ... and the bound is used (the root alone carries nothing)
    assert spread.max() > float(epsilon) / 4 if level != 0 else spread.max() < 1e-9


def test_the_randomized_response_table_is_the_mechanisms_on_the_root_and_the_cut():
    domain = np.concatenate([[AGE.code_of["*"]], level_cut(*tree(AGE), 2)])
    table = np.exp(published_log_table(*tree(AGE), 3, mechanism=RR, level=2))
    matrix = RandomizedResponse(epsilon=3, categories=domain.tolist()).probability_matrix()
    assert np.allclose(table[np.ix_(domain, domain)], matrix)
    # a leaf reads as its ancestor on the cut; a missing value (the root) stays mostly missing
    assert np.allclose(table[AGE.code_of["Newborn"]], table[AGE.code_of["Infant"]])
    assert table[AGE.code_of["*"], AGE.code_of["*"]] == pytest.approx(math.exp(3) / (math.exp(3) + 7))
    # a node between the root and the cut: a uniform pick of the cut labels under it
    under = [AGE.code_of[c] for c in ("Young Adult", "Adult (25-44)", "Middle Aged", "Aged")]
    assert np.allclose(table[AGE.code_of["Adult"]], table[under].mean(axis=0))
    # level 0 publishes the root, always
    assert np.allclose(np.exp(published_log_table(*tree(AGE), 3, mechanism=RR, level=0))[:, 0], 1)


def test_the_cut_table_sums_the_drawn_labels_under_each_published_one():
    full = np.exp(hierarchy_log_table(*tree(AGE), 1))
    cut = np.exp(published_log_table(*tree(AGE), 1, level=1))
    under_adult = AGE.covers_codes(AGE.code_of["Adult"], np.arange(len(AGE.nodes)))
    assert np.allclose(cut[:, AGE.code_of["Adult"]], full[:, under_adult].sum(axis=1))
    assert np.allclose(cut[:, 0], full[:, 0])  # the root is published as drawn


@pytest.mark.parametrize("tax, epsilon, mechanism, confidence, level", [
    (AGE, 1, "exponential", 0.9, 0), (AGE, 10, "exponential", 0.9, 1),
    (AGE, 10, "exponential", 0.99, 0), (AGE, 20, "exponential", 0.97, 3),
    (SEX, 10, "exponential", 0.9, 1), (SEX, 5, "exponential", 0.9, 0),
    (AGE, 5, RR, 0.99, 1), (AGE, 5, RR, 0.9, 3), (AGE, 10, RR, 0.99, 3),
    (AGE, 1, RR, 0.75, 1), (AGE, 1, RR, 0.8, 0), (SEX, 5, RR, 0.99, 1),
])
def test_finest_level_is_the_finest_whose_worst_case_consistency_meets_the_confidence(
        tax, epsilon, mechanism, confidence, level):
    parent, depth = tree(tax)
    found, worst = finest_level(parent, depth, epsilon, confidence, mechanism=mechanism)
    assert found == level
    per_level = [float(label_consistency(published_log_table(parent, depth, epsilon,
                                                             mechanism=mechanism, level=L),
                                         parent, depth)[depth > 0].min())
                 for L in range(tax.height + 1)]
    assert per_level[0] == pytest.approx(1.0)
    assert all(a >= b - 1e-12 for a, b in zip(per_level, per_level[1:]))  # never increases
    assert worst == pytest.approx(per_level[level]) and worst >= confidence
    if level < tax.height:
        assert per_level[level + 1] < confidence


def test_randomized_responses_consistency_is_kept_or_the_root():
    # the root and two labels at level 1: kept, or the root, with (e^eps + 1) / (e^eps + 2)
    _, worst = finest_level(*tree(AGE), 5, 0.99, mechanism=RR)
    assert worst == pytest.approx((math.exp(5) + 1) / (math.exp(5) + 2))


@pytest.mark.parametrize("value", [0, -0.5, 1.5, float("nan"), "0.9", True, None])
def test_confidence_must_be_a_number_in_zero_one(value):
    with pytest.raises(ValidationError, match="'label_confidence' parameter of X must be a number"):
        check_confidence(value, owner="X", name="label_confidence")


# ------------------------------------------------------------------------- the anonymizer
def test_the_cut_release_is_the_unremedied_one_with_ancestors_at_the_level():
    frame = records(600)
    plain = run(PPMSDPAll(k=5, theta=1.0, epsilon=10), frame, seed=3)
    cut = run(PPMSDPAll(k=5, theta=1.0, epsilon=10, label_confidence=0.9), frame, seed=3)
    assert cut.details["label_levels"] == {"age": 1, "sex": 1}
    assert cut.details["label_consistency"]["age"] == pytest.approx(0.917712, abs=1e-6)
    a, b = plain.table.set_index("case_id"), cut.table.set_index("case_id")
    assert a.index.equals(b.index)
    others = [c for c in a.columns if c not in ("age", "sex")]
    pd.testing.assert_frame_equal(a[others], b[others])   # groups, weights, terms: the same
    for qid, tax in (("age", AGE), ("sex", SEX)):
        up = ancestor_at_level(*tree(tax), 1)
        assert b[qid].tolist() == tax.decode(up[tax.encode(a[qid].tolist())])
    assert (a["age"] != b["age"]).any()   # some labels were below level 1
    assert plain.privacy_losses == cut.privacy_losses   # the same mechanisms, the same epsilon


def test_a_level_0_release_publishes_every_perturbed_label_as_the_root():
    result = run(PPMSDPAll(k=5, theta=1.0, epsilon=1, label_confidence=0.9), records(200))
    assert result.details["label_levels"] == {"age": 0, "sex": 0}
    assert set(result.table["age"]) == {"*"} == set(result.table["sex"])


def test_the_level_reads_epsilon_and_the_hierarchy_never_the_data():
    frame = records(300)
    neighbour = frame.copy()
    neighbour.loc[5, ["age", "sex"]] = ["Newborn", "M"]
    neighbour.loc[6, "age"] = None
    for mechanism in ("exponential", RR):
        method = PPMSDPAll(k=5, theta=1.0, epsilon=5, label_confidence=0.95,
                           label_mechanism=mechanism)
        levels = {(str(d["label_levels"]), str(d["label_consistency"]))
                  for d in (run(method, f, seed=s).details
                            for f in (frame, neighbour, records(40, seed=9)) for s in (1, 2))}
        assert len(levels) == 1
        expected = {q: label_level(HIERARCHIES[q], 5, 0.95, mechanism=mechanism)[0]
                    for q in ("age", "sex")}
        assert run(method, frame).details["label_levels"] == expected


def test_randomized_response_draws_on_the_levels_labels_and_charges_its_epsilon():
    method = PPMSDPAll(k=5, theta=1.0, epsilon=5, label_confidence=0.99, label_mechanism=RR)
    result = run(method, records(300))
    assert result.details["label_levels"] == {"age": 1, "sex": 1}
    assert set(result.table["age"]) <= {"Adult", "Nonadult", "*"}
    assert set(result.table["sex"]) <= {"F", "M", "*"}
    assert [(loss.mechanism, loss.target) for loss in result.privacy_losses] == [
        (RR, "age"), (RR, "sex"), ("laplace", "weight")]
    assert result.privacy_losses == method.planned_losses(SCHEMA)
    # at epsilon 5 over two labels, 99.3% are kept: the adults stay adults
    truth = records(300).set_index("case_id")["age"]
    adult = truth.isin(["Young Adult", "Middle Aged", "Aged (65-79)"])
    published = result.table.set_index("case_id")["age"]
    assert (published[adult[adult].index] == "Adult").mean() > 0.95
    # ... and the cases without an age mostly stay without one (the root is in the domain)
    missing = truth.isna()
    assert (published[missing[missing].index] == "*").mean() > 0.9
    # without a confidence: randomized response over the leaves
    leaves = run(PPMSDPAll(k=5, theta=1.0, epsilon=5, label_mechanism=RR), records(300))
    assert leaves.details["label_levels"] == {"age": AGE.height, "sex": SEX.height}
    assert set(leaves.table["age"]) <= {*AGE.values, "*"}


def test_randomized_response_at_level_0_still_draws_and_charges():
    # the root carries nothing; the draw (and its charge) keep the plan the budget checked
    method = PPMSDPAll(k=5, theta=1.0, epsilon=Fraction(1, 10), label_confidence=0.9,
                       label_mechanism=RR)
    result = run(method, records(100))
    assert set(result.table["age"]) == {"*"}
    assert result.privacy_losses == method.planned_losses(SCHEMA)


@pytest.mark.parametrize("cls, kwargs, fragment", [
    (PPMSDPNum, {"label_confidence": 0.9}, "'label_confidence' parameter of PPMSDPNum applies "
                                           "to perturbed categorical QIDs"),
    (PPMSDPNum, {"label_mechanism": RR}, "'label_mechanism' parameter of PPMSDPNum applies"),
    (PPMSDPAll, {"label_confidence": 0.9, "variant": "paper"},
     "'label_confidence' parameter of PPMSDPAll needs the strict variant"),
    (PPMSDPAll, {"label_mechanism": RR, "variant": "paper"}, "'label_mechanism' .* strict"),
    (PPMSDPAll, {"label_mechanism": "laplace"}, "'label_mechanism' parameter of PPMSDPAll must "
                                                "be one of 'exponential', 'randomized-response'"),
    (PPMSDPAll, {"label_confidence": 0}, "'label_confidence' parameter of PPMSDPAll must be a "
                                         "number in \\(0, 1\\]"),
    (PPMSDPAll, {"label_confidence": "high"}, "'label_confidence'"),
])
def test_invalid_label_options_name_the_parameter(cls, kwargs, fragment):
    with pytest.raises(ValidationError, match=fragment):
        cls(k=5, theta=0.5, epsilon=1, **kwargs)


def test_periodic_method_refuses_label_options_for_methods_without_noise():
    with pytest.raises(ValidationError, match="'label_confidence' parameter of periodic_method "
                                              "applies to methods ppms-dp-num and ppms-dp-all"):
        periodic_method("ppms++", k=5, theta=0.5, label_confidence=0.9)
    with pytest.raises(ValidationError, match="'label_mechanism'"):
        periodic_method("ppms", k=5, theta=0.5, label_mechanism=RR)
    method = periodic_method("ppms-dp-all", k=5, theta=0.5, epsilon=1, label_confidence=0.9,
                             label_mechanism=RR)
    assert (method.label_confidence, method.label_mechanism) == (0.9, RR)


# ------------------------------------------------------------ manifest, model, gate, attacks
@pytest.mark.parametrize("mechanism", ["exponential", RR])
def test_the_manifest_records_the_option_and_the_gate_and_attacks_accept_it(mechanism):
    method = PPMSDPAll(k=5, theta=1.0, epsilon=10, label_confidence=0.9,
                       label_mechanism=mechanism)
    release = prepared(method, records(300))
    manifest = release.manifest
    assert manifest["method"]["parameters"]["label_confidence"] == 0.9
    assert manifest["method"]["parameters"]["label_mechanism"] == mechanism
    levels = manifest["details"]["label_levels"]
    assert levels == {"age": 1 if mechanism == "exponential" else 3, "sex": 1}
    assert manifest["verification"]["verdict"] == "passed"
    assert [m["mechanism"] for m in manifest["privacy_spent"]["mechanisms"]] == [
        mechanism, mechanism, "laplace"]
    model = PPMSDPModel.from_manifest(manifest, "2020Q1")
    assert {p.qid: p.level for p in model.perturbations} == {**levels, "weight": None}
    # the guarantee is the plain one, extended (30 = 3 QIDs x epsilon 10)
    plain = PPMSDPModel.from_manifest(prepared(PPMSDPAll(k=5, theta=1.0, epsilon=10),
                                               records(300)).manifest, "2020Q1")
    assert model.guarantee.startswith(plain.guarantee)
    assert "30-DP per release" in model.guarantee
    extra = model.guarantee[len(plain.guarantee):]
    assert ("cut to their ancestor (age at level 1" in extra if mechanism == "exponential"
            else "randomized response over the root and the labels of one level of their "
                 "hierarchy (age at level 3, sex at level 1" in extra)
    assert model.does_not_guarantee == plain.does_not_guarantee
    series = empty_series(SCHEMA).with_release("2020Q1", release.rows, manifest)
    attacker = LikelihoodAttacker(series)
    assert attacker.applies("2020Q1")
    worst = attack_series(series, attacker=attacker).release("2020Q1")
    assert worst.dir_posterior is not None


def test_the_attacks_weigh_a_cut_label_with_the_cut_table():
    release = prepared(PPMSDPAll(k=5, theta=1.0, epsilon=10, label_confidence=0.9),
                       records(200))
    series = empty_series(SCHEMA).with_release("2020Q1", release.rows, release.manifest)
    attacker = LikelihoodAttacker(series)
    evidence = {ev.qid: ev for ev in attacker.evidence("2020Q1")}
    table = published_log_table(*tree(AGE), 10, level=1)
    age = evidence["age"]
    # a record value's row is the cut table's (inner targets: the mean over their values)
    newborn = AGE.code_of["Newborn"]
    assert np.allclose(age.rows_table[newborn][np.isfinite(table[newborn])],
                       table[newborn][np.isfinite(table[newborn])])


def test_a_label_below_the_declared_level_is_refused_by_the_attacks():
    release = prepared(PPMSDPAll(k=5, theta=1.0, epsilon=10, label_confidence=0.9),
                       records(200))
    rows = release.rows.copy()
    rows.loc[0, "age"] = "Middle Aged"   # deeper than the declared level 1
    series = empty_series(SCHEMA).with_release("2020Q1", rows, release.manifest)
    with pytest.raises(InputFormatError, match="below the level its manifest declares"):
        LikelihoodAttacker(series).evidence("2020Q1")


@pytest.mark.parametrize("change, fragment", [
    ({"label_levels": {"age": -1}}, "malformed 'details.label_levels'"),
    ({"label_levels": {"age": "1"}}, "malformed 'details.label_levels'"),
    ({"label_levels": {"height": 1}}, "malformed 'details.label_levels'"),
    ({"label_levels": {"age": 3, "sex": 1, "weight": 1}}, "label level for 'weight'"),
    ({"label_levels": {"sex": 1}}, "randomized response for 'age' without its level"),
])
def test_malformed_label_levels_in_a_manifest_are_refused(change, fragment):
    method = PPMSDPAll(k=5, theta=1.0, epsilon=10, label_confidence=0.9, label_mechanism=RR)
    manifest = prepared(method, records(200)).manifest
    manifest["details"].update(change)
    with pytest.raises(InputFormatError, match=fragment):
        PPMSDPModel.from_manifest(manifest, "2020Q1")
