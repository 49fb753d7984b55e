"""An ungeneralized value costs nothing, also when its label names an internal node (issue 20).

Before the MeSH bands had leaves of their own, a release of ``Adult`` (25-44) and ``Aged``
(65-79), nothing generalized, had NIL 0.1667 (age, sex, weight), because the bands were the
internal nodes ``Adult`` and ``Aged``. Now the bands are the leaves ``Adult (25-44)`` and
``Aged (65-79)``, which cost 0 everywhere, and the node ``Adult`` is only the generalization.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medanon.anonymize.clustering import Attribute, QidSpace, state_loss
from medanon.hierarchies import Taxonomy, mesh_age_tree, sex_tree
from medanon.metrics import normalized_information_loss
from medanon.metrics.information_loss import information_loss_star
from medanon.published.cells import QidInfo
from medanon.published.series import PublishedSeries
from medanon.report.collect import generalization_profile

QIDS = [("age", "categorical"), ("sex", "categorical"), ("weight", "numeric")]
TAX = {"age": mesh_age_tree(), "sex": sex_tree()}


def rows(ages, groups) -> pd.DataFrame:
    return pd.DataFrame({"case_id": [str(i) for i in range(len(ages))], "group": groups,
                         "age": ages, "sex": "F", "weight": "70"})


def test_a_release_with_nothing_generalized_has_nil_zero() -> None:
    ungeneralized = rows(["Adult (25-44)", "Aged (65-79)"], ["g1", "g2"])
    assert normalized_information_loss(ungeneralized, QIDS, TAX) == 0.0


def test_the_generalization_to_adult_costs() -> None:
    generalized = rows(["Adult", "Adult"], ["g", "g"])
    # h(Adult)/h(age) = 2/3 for age, 0 for sex and weight, over 3 QIDs
    assert normalized_information_loss(generalized, QIDS, TAX) == pytest.approx(2 / 9)


def test_il_star_charges_nothing_for_a_band_published_as_its_leaf() -> None:
    # The original may hold the plain label (data or a store from before): it is the band.
    original = pd.DataFrame({"case_id": ["0", "1"], "age": ["Adult", "Aged (65-79)"],
                             "sex": ["F", "F"], "weight": [70.0, 70.0]})
    same = information_loss_star(original, rows(["Adult (25-44)", "Aged (65-79)"],
                                                ["g1", "g2"]), QIDS, TAX)
    assert same.nil == 0.0
    up = information_loss_star(original, rows(["Adult", "Adult"], ["g", "g"]), QIDS, TAX)
    assert up.nil > 0


def test_clustering_loss_is_zero_for_one_band_and_positive_across_bands() -> None:
    tree = mesh_age_tree()
    space = QidSpace([Attribute("age", tree)])
    band = tree.code_of["Adult (25-44)"]
    young = tree.code_of["Young Adult"]
    assert state_loss(space, [band], [None], [None]) == 0.0
    lub = space.lca(0, band, young)
    assert tree.nodes[lub] == "Adult"
    assert state_loss(space, [lub], [None], [None]) == pytest.approx(2 / 3)
    # two records of the same band group for free: their LUB is the leaf itself
    assert space.lca(0, band, band) == band


def test_report_profile_counts_a_band_leaf_as_exact() -> None:
    tree = mesh_age_tree()
    release = rows(["Adult (25-44)", "Aged (65-79)", "Adult", "Infant (1-23 months)"],
                   ["g1", "g2", "g3", "g4"])
    qids = (QidInfo("age", "categorical", tree),)
    series = PublishedSeries({"2020Q1": release}, {"2020Q1": {}}, qids, (), "test")
    (age,) = generalization_profile(series, "2020Q1")
    assert age.exact == 0.75
    assert age.levels == {0: 0.75, 2: 0.25}


def test_a_user_hierarchy_with_an_internal_value_gets_the_same_treatment() -> None:
    tree = Taxonomy({"*": None, "Adult": "*", "Young Adult": "Adult", "Child": "*"},
                    name="age", values=["Adult", "Young Adult", "Child"])
    tax = {"age": tree}
    exact = pd.DataFrame({"group": ["g1", "g2"], "age": ["Adult (exact)", "Young Adult"]})
    assert normalized_information_loss(exact, [("age", "categorical")], tax) == 0.0
    general = exact.assign(age=["Adult", "Adult"], group=["g", "g"])
    assert normalized_information_loss(general, [("age", "categorical")], tax) == 0.5
    codes = np.asarray(tree.encode(tree.record_labels(["Adult", "Young Adult"])))
    assert tree.decode([tree.lca_codes(codes)]) == ["Adult"]
