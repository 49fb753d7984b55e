"""The report's generalization profile, against values worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from medanon.data.schema import Schema
from medanon.published.cells import QidInfo
from medanon.published.series import PublishedSeries
from medanon.report.collect import generalization_profile


def test_profile_counts_exact_generalized_and_suppressed_cells():
    tax = Schema.default().load_hierarchies()
    qids = (QidInfo("age", "categorical", tax["age"]), QidInfo("sex", "categorical", tax["sex"]),
            QidInfo("weight", "numeric", None))
    rows = pd.DataFrame({
        "group": [1, 1, 2, 2],
        # leaf, leaf, an inner node (Adult), suppressed
        "age": ["Newborn", "Preschool", "Adult", "*"],
        "sex": ["F", "M", "*", "F"],
        # exact, an interval of width 20, the whole domain, an interval of width 10
        "weight": ["60", "[50-70]", "*", "[60-70]"],
    })
    series = PublishedSeries({"2020Q1": rows}, {"2020Q1": {}}, qids, ("reactions",), "test")
    age, sex, weight = generalization_profile(series, "2020Q1")
    assert (age.exact, age.suppressed) == (0.5, 0.25)
    height = tax["age"].height
    assert age.levels == {0: 0.5, tax["age"].subtree_height("Adult"): 0.25, height: 0.25}
    assert (sex.exact, sex.suppressed) == (0.75, 0.25)
    assert (weight.exact, weight.suppressed) == (0.25, 0.25)
    # widths relative to the published span 50..70: 0, 20/20, 10/20, and 1 for '*'
    assert weight.mean_width == pytest.approx((0 + 1 + 0.5 + 1) / 4)


def test_profile_tells_missing_cells_from_suppressed_ones():
    tax = Schema.default().load_hierarchies()
    qids = (QidInfo("age", "categorical", tax["age"]), QidInfo("weight", "numeric", None))
    rows = pd.DataFrame({"group": [1, 1, 2, 2],
                         "age": ["", "", "Newborn", "*"],
                         "weight": ["", "", "*", "[60-70]"]})
    series = PublishedSeries({"2020Q1": rows}, {"2020Q1": {}}, qids, ("reactions",), "test")
    age, weight = generalization_profile(series, "2020Q1")
    assert (age.missing, age.exact, age.suppressed, age.generalized) == (0.5, 0.25, 0.25, 0.0)
    assert age.levels == {0: 0.25, tax["age"].height: 0.25}
    assert (weight.missing, weight.exact, weight.suppressed) == (0.5, 0.0, 0.25)
    assert weight.generalized == 0.25
