"""PPMS-DP_num / PPMS-DP_all: noise calibration, group structure, merging, claims per variant."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from medanon.anonymize import PPMSDPAll, PPMSDPNum
from medanon.anonymize.ppms_dp import perturbation_candidates
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.errors import SchemaError, ValidationError
from medanon.hierarchies import mesh_age_tree
from medanon.random import randomness

AGES = ["Young Adult", "Middle Aged", "Aged (65-79)", "Adolescent", "In-school"]


def records(n: int, *, period: str = "2020Q1", weight=None, seed: int = 0, start: int = 0):
    rng = np.random.default_rng(seed)
    weights = rng.uniform(40, 120, n).round(1) if weight is None else np.full(n, float(weight))
    return pd.DataFrame({
        "case_id": [str(start + i) for i in range(n)], "period": period,
        "age": [AGES[i % len(AGES)] for i in range(n)], "sex": ["F" if i % 3 else "M" for i in range(n)],
        "weight": weights, "indications": [(f"I{i % 7}",) for i in range(n)],
        "reactions": [(f"R{i % 11}",) for i in range(n)], "drugs": [()] * n,
        "report_id": [str(start + i) for i in range(n)], "age_years": 40.0})


def run(method, frame, previous=(), seed=1, schema=None):
    schema = schema or Schema.papers()
    supers = combine_super_records(frame, schema, schema.load_hierarchies())
    return method.anonymize(supers, list(previous), rng=randomness(seed))


def test_strict_numeric_noise_is_laplace_with_domain_width_over_epsilon():
    # Domain [0, 300], epsilon 100: scale 3 kg; true weight 150 keeps clipping out of the way.
    method = PPMSDPNum(k=5, theta=1.0, epsilon=100)
    result = run(method, records(6000, weight=150.0))
    noise = result.table["weight"].to_numpy(dtype=float) - 150.0
    assert stats.kstest(noise, stats.laplace(scale=3.0).cdf).pvalue > 1e-4
    assert stats.kstest(noise, stats.laplace(scale=3.6).cdf).pvalue < 1e-4  # it can fail


def test_strict_values_stay_in_the_public_domain_and_are_clipped_first():
    method = PPMSDPNum(k=5, theta=1.0, epsilon=0.5, domains={"weight": (30, 200)})
    frame = records(200)
    frame.loc[:9, "weight"] = 500.0  # outside the public domain
    result = run(method, frame)
    assert result.table["weight"].between(30, 200).all()
    # how many true values were clipped is a function of the private values: operator-only
    assert result.private_details["clipped_to_domain"] == {"weight": 10}
    assert "clipped_to_domain" not in result.details
    assert result.details["domains"] == {"weight": [30.0, 200.0]}


def test_strict_needs_a_public_domain():
    schema = Schema.from_mapping({**Schema.papers().model_dump(by_alias=True),
                                  "qid": [{"name": "age", "kind": "categorical",
                                           "hierarchy": "mesh-age"},
                                          {"name": "sex", "kind": "categorical", "hierarchy": "sex"},
                                          {"name": "weight", "kind": "numeric"}]})
    with pytest.raises(SchemaError, match="public domain of numeric QID 'weight'"):
        run(PPMSDPNum(k=5, theta=1.0, epsilon=1), records(50), schema=schema)
    # the paper variant needs none (its noise is local)
    run(PPMSDPNum(k=5, theta=1.0, epsilon=1, variant="paper"), records(50), schema=schema)


def test_paper_variant_leaves_a_group_of_equal_weights_unperturbed():
    # 000's local sensitivity is max - min within the group: 0 here, so no noise at all.
    result = run(PPMSDPNum(k=5, theta=1.0, epsilon=1, variant="paper"), records(60, weight=72.5))
    assert (result.table["weight"] == 72.5).all()
    # ... and the manifest names every group as exact (labels as published)
    assert sorted(result.details["exact_groups"]["weight"], key=int) == \
        sorted(set(result.table["group"]), key=int)
    # the smallest scale is a function of the raw group ranges: operator-only
    assert "smallest_laplace_scale" not in result.details
    assert result.private_details["smallest_laplace_scale"] < 1e-6


def test_paper_variant_names_exactly_the_groups_whose_scale_is_below_the_precision():
    # Cases 0-29 share weight 80; the others spread over 40-120. With k = 5 and theta 1 the
    # grouping puts equal weights together, so some groups get local sensitivity 0.
    frame = records(60, seed=4)
    frame.loc[:29, "weight"] = 80.0
    method = PPMSDPNum(k=5, theta=1.0, epsilon=1, variant="paper")
    supers = combine_super_records(frame, Schema.papers(), Schema.papers().load_hierarchies())
    result = method.anonymize(supers, [], rng=randomness(3))
    true = frame.set_index("case_id")["weight"]
    table = result.table.assign(true=result.table["case_id"].map(true))
    spread = table.groupby("group")["true"].agg(lambda w: w.max() - w.min())
    # Laplace scale = (max - min)/epsilon (+ the sampler's rounding allowance, far below 0.005)
    below = sorted(spread.index[spread / 1.0 < 0.005])
    named = sorted(result.details["exact_groups"]["weight"])
    assert below and len(below) < len(spread)  # both kinds of group occur
    assert named == below
    for group in named:  # their values are published exact
        rows = table[table["group"] == group]
        assert (rows["weight"] == rows["true"]).all()


def test_strict_variant_names_no_exact_groups():
    result = run(PPMSDPNum(k=5, theta=1.0, epsilon=1), records(60, weight=72.5))
    assert "exact_groups" not in result.details


def test_dp_num_generalizes_categoricals_per_group_and_merges_equal_groups():
    result = run(PPMSDPNum(k=5, theta=1.0, epsilon=1), records(300))
    table = result.table
    per_group = table.groupby("group")[["age", "sex"]].nunique()
    assert (per_group == 1).all().all()  # one generalized value per group and attribute
    keys = table.groupby("group")[["age", "sex"]].first()
    assert not keys.duplicated().any()  # Gen&Merging: no two groups share their QID^C
    assert result.details["groups_merged_away"] == (result.details["groups_before_merging"]
                                                    - result.n_groups)
    assert table.groupby("group").size().min() >= 5


def test_dp_all_paper_draws_one_value_per_group_within_psi():
    frame = records(300)
    result = run(PPMSDPAll(k=5, theta=1.0, epsilon=1, variant="paper"), frame)
    table = result.table.merge(frame[["case_id", "age"]], on="case_id", suffixes=("", "_true"))
    tax = mesh_age_tree()
    for _, group in table.groupby("group"):
        assert group["age"].nunique() == 1
        psi = perturbation_candidates(tax, group["age_true"].tolist()).labels
        assert group["age"].iloc[0] in psi


def test_dp_all_strict_perturbs_categoricals_per_case():
    frame = records(400)
    result = run(PPMSDPAll(k=5, theta=1.0, epsilon=0.1), frame)
    table = result.table.merge(frame[["case_id", "age", "sex"]], on="case_id",
                               suffixes=("", "_true"))
    # At epsilon 0.1 the draw is nearly uniform over 13 age nodes: most values change.
    assert (table["age"] != table["age_true"]).mean() > 0.6
    assert set(table["age"]) <= set(mesh_age_tree().nodes)


def test_privacy_losses_and_statement_per_variant():
    schema = Schema.papers()
    num = PPMSDPNum(k=5, theta=0.5, epsilon="0.1")
    assert [(loss.mechanism, loss.target, loss.epsilon) for loss in num.planned_losses(schema)] == [
        ("laplace", "weight", Fraction(1, 10))]
    everything = PPMSDPAll(k=5, theta=0.5, epsilon=0.1)
    result = run(everything, records(100))
    # what one case incurred, as the mechanisms that ran reported it: the plan, exactly
    assert result.privacy_losses == everything.planned_losses(schema)
    statement = everything.privacy_statement(schema, result.privacy_losses)
    assert statement["epsilon_per_case"] == "0.3" and statement["epsilon_per_attribute"] == "0.1"
    assert statement["perturbed_qids"] == ["age", "sex", "weight"]
    # the paper variant states its nominal epsilon (a noise-scale parameter), whatever ran
    paper = PPMSDPAll(k=5, theta=0.5, epsilon=0.1, variant="paper").privacy_statement(schema, ())
    # The texts of what holds come from the model object when the manifest is built.
    assert paper["variant"] == "paper" and "does_not_guarantee" not in paper
    assert paper["epsilon_per_case"] == "0.3"


@pytest.mark.parametrize("kwargs, fragment", [
    ({"epsilon": 0}, "'epsilon' parameter of PPMSDPNum must be a positive number"),
    ({"epsilon": float("nan")}, "'epsilon'"),
    ({"epsilon": 1, "variant": "loose"}, "'variant'"),
    ({"epsilon": 1, "domains": {"weight": (5, 1)}}, "'domains'"),
])
def test_parameters_are_validated(kwargs, fragment):
    with pytest.raises(ValidationError, match=fragment):
        PPMSDPNum(k=5, theta=0.5, **kwargs)


def test_dp_num_covers_old_cases_categoricals_only():
    first = records(100, period="2020Q1")
    method = PPMSDPNum(k=5, theta=1.0, epsilon=1)
    published = run(method, first)
    from medanon.published.format import to_published_rows
    rows = to_published_rows(published.table, Schema.papers())
    follow = records(100, period="2020Q2", start=50, seed=3)  # cases 50..99 are old
    result = run(method, follow, previous=[rows], seed=2)
    assert result.details["new_cases"] == 50
    # the numeric QID of old cases is perturbed, never widened to an interval
    assert pd.api.types.is_float_dtype(result.table["weight"])


def test_strict_missing_value_is_perturbed_from_the_domain_middle():
    # Not from the period's range: a case's output must depend on its own value only.
    frame = records(400)
    frame.loc[:199, "weight"] = np.nan
    result = run(PPMSDPNum(k=5, theta=1.0, epsilon=1000), frame)
    out = result.table.set_index("case_id")["weight"]
    missing = out.loc[[str(i) for i in range(200)]].to_numpy(dtype=float)
    assert np.abs(missing - 150.0).max() < 5  # scale 0.3 kg around the middle of [0, 300]
