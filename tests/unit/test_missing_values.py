"""Missing QID values as a value of their own (issue 20): grouped together, published empty,
``*`` only where a group mixes missing and present values, and covered across releases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import medanon
from medanon.anonymize.common import MISSING_LABEL, with_missing_leaf
from medanon.data.schema import Schema
from medanon.hierarchies import mesh_age_tree

AGES = ("Newborn", "Preschool", "Adolescent", "Young Adult", "Middle Aged")


def _period(label: str, ids: list[str], *, weight, age) -> pd.DataFrame:
    n = len(ids)
    return pd.DataFrame({
        "case_id": ids, "period": [label] * n, "report_id": [f"{label}-{c}" for c in ids],
        "version": [1] * n, "age": age, "sex": ["F"] * n, "weight": weight,
        "reactions": [("Rash",)] * n, "indications": [("Pain",)] * n, "drugs": [("A",)] * n,
        "age_years": [50.0] * n})


def _publish(records: dict[str, pd.DataFrame], method: str = "ppms++", k: int = 5):
    data = medanon.Dataset(records, Schema.papers())
    # the real CaseIDs (issue 41's pseudonyms are the default): the checks below join the
    # published rows to the input cases
    return medanon.Publisher(method, k=k, theta=1.0, seed=3, case_ids="real").publish(data)


def test_missing_values_group_together_and_publish_empty():
    ids = [str(i) for i in range(20)]
    weight = [np.nan if i % 2 else 60.0 + i for i in range(20)]   # every other case: no weight
    age = [None if i % 4 == 3 else "Middle Aged" for i in range(20)]
    series = _publish({"2020Q1": _period("2020Q1", ids, weight=weight, age=age)})
    rows = series.releases_published[0].rows.set_index("case_id")
    missing_w = {str(i) for i in range(20) if i % 2}
    # Each group is all-missing (published empty) or all-present (an interval): never "*".
    assert set(rows.index[rows["weight"] == ""]) == missing_w
    assert not (rows["weight"] == "*").any()
    for _, group in rows.groupby("group"):
        assert group["weight"].nunique() == 1
    # 5 missing ages among 20: k = 5 groups are split by weight first, so ages may have to mix;
    # but no more rows lose their age than the groups that hold a missing one.
    lost_age = rows["age"].isin(["", "*"])
    groups_with_missing_age = rows.loc[[str(i) for i in range(20) if i % 4 == 3], "group"]
    assert lost_age.sum() <= rows["group"].isin(groups_with_missing_age).sum()
    assert series.verify().ok


def test_missing_and_present_values_form_separate_groups():
    """Under the old reading (missing = the whole range) both groups published the range."""
    ids = [str(i) for i in range(10)]
    weight = [np.nan] * 5 + [60.0 + i for i in range(5)]
    series = _publish({"2020Q1": _period("2020Q1", ids, weight=weight, age=["Middle Aged"] * 10)})
    rows = series.releases_published[0].rows
    assert sorted(rows["weight"].unique()) == ["", "[60-64]"]


def test_a_missing_value_filled_in_later_is_covered_by_star():
    ids = [str(i) for i in range(10)]
    q1 = _period("2020Q1", ids, weight=[np.nan] * 5 + [70.0] * 5, age=["Middle Aged"] * 10)
    later = [str(i) for i in range(10, 20)]
    # case "0" comes back with its weight now reported; ten new cases join the quarter
    q2 = _period("2020Q2", ["0", *later], weight=[80.0] + [75.0] * 10,
                 age=["Middle Aged"] * 11)
    series = _publish({"2020Q1": q1, "2020Q2": q2})
    first = series.releases_published[0].rows.set_index("case_id")
    second = series.releases_published[1].rows.set_index("case_id")
    assert first.loc["0", "weight"] == ""
    # published empty before, so now it must cover the whole domain: "*", and so must its group
    assert second.loc["0", "weight"] == "*"
    group = second.loc[second["group"] == second.loc["0", "group"], "weight"]
    assert (group == "*").all()
    assert series.verify().ok


def test_missing_leaf_is_its_own_lowest_common_value():
    tax = with_missing_leaf(mesh_age_tree())
    assert tax.lca([MISSING_LABEL, MISSING_LABEL]) == MISSING_LABEL
    assert tax.lca([MISSING_LABEL, "Newborn"]) == tax.root
    assert tax.height == mesh_age_tree().height
    assert MISSING_LABEL not in mesh_age_tree()


def test_nil_charges_an_empty_cell_nothing_and_star_everything():
    from medanon.metrics import normalized_information_loss
    schema = Schema.papers()
    tax = schema.load_hierarchies()
    qids = [(q.name, q.kind) for q in schema.qids]
    rows = pd.DataFrame({"group": ["1", "1", "2", "2"], "age": ["", "", "Newborn", "Newborn"],
                         "sex": ["F", "F", "", ""], "weight": ["", "", "65", "65"]})
    assert normalized_information_loss(rows, qids, tax) == 0.0
    starred = rows.assign(weight=["*", "*", "65", "65"])
    # group 1 loses its weight entirely (1/3 of its QIDs); group 2 nothing
    assert normalized_information_loss(starred, qids, tax) == pytest.approx((1 / 3) / 2)


@pytest.mark.parametrize("method", ["ppms", "ppms+", "ppms++"])
def test_a_star_published_earlier_is_covered_by_star(method):
    """An earlier ``*`` (the group mixed missing and present values) allows any value and a
    missing one; covering it by the present values' range of the new period published an
    interval, by which the F-attack excluded the case from its earlier group (a target lacking
    the value, or outside the range, is not that case): the earlier group fell below k."""
    ids = [str(i) for i in range(5)]
    # one group of k = 5: four missing weights and one present, published "*"
    q1 = _period("2020Q1", ids, weight=[np.nan] * 4 + [70.0], age=["Middle Aged"] * 5)
    later = [str(i) for i in range(10, 20)]
    # case "4" comes back with a present weight inside the new period's range
    q2 = _period("2020Q2", ["4", *later], weight=[80.0] + [75.0] * 5 + [85.0] * 5,
                 age=["Middle Aged"] * 11)
    data = medanon.Dataset({"2020Q1": q1, "2020Q2": q2}, Schema.papers())
    publisher = medanon.Publisher(method, k=5, theta=1.0, seed=3)
    series = publisher.publish(data, allow_violations=True)
    first = series.releases_published[0].rows.set_index("case_id")
    second = series.releases_published[1].rows.set_index("case_id")
    assert (first["weight"] == "*").all()
    # case "4" as published (a keyed pseudonym, issue 41)
    assert second.loc[publisher.case_ids.of(["4"])[0], "weight"] == "*"
    assert series.verify().ok
