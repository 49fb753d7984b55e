"""``--method none``: identifiers dropped, equivalence classes numbered, missing values kept apart."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medanon.anonymize import DropIdentifiers
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.random import randomness
from medanon.published.format import to_published_rows


def test_groups_are_equivalence_classes_including_missing_cells() -> None:
    schema = Schema.papers()
    records = pd.DataFrame({
        "case_id": ["1", "2", "3", "4", "5"], "period": ["2020Q1"] * 5,
        "report_id": ["a", "b", "c", "d", "e"], "version": [1] * 5,
        "age": ["Aged", "Aged", None, None, "Aged"], "sex": ["F", "F", "M", "M", None],
        "weight": [70.0, 70.0, np.nan, np.nan, 70.0],
        "reactions": [("x",)] * 5, "indications": [("y",)] * 5, "drugs": [()] * 5,
        "age_years": [70.0] * 5,
    })
    supers = combine_super_records(records, schema, schema.load_hierarchies())
    result = DropIdentifiers().anonymize(supers, rng=randomness())
    rows = to_published_rows(result.table, schema).set_index("case_id")
    assert result.n_groups == 3
    assert rows.loc["1", "group"] == rows.loc["2", "group"]
    assert rows.loc["3", "group"] == rows.loc["4", "group"]
    assert len({rows.loc[c, "group"] for c in ("1", "3", "5")}) == 3
    assert set(rows["group"]) == {"1", "2", "3"}
    assert rows.loc["3", "age"] == "" and rows.loc["3", "weight"] == ""  # missing cells stay empty
    assert rows.loc["1", "weight"] == "70" and rows.loc["5", "sex"] == ""
    # the raw "Aged" (65-79) publishes as its band leaf, never as the generalization "Aged"
    assert rows.loc["1", "age"] == "Aged (65-79)"
    assert "report_id" not in rows.columns and "age_years" not in rows.columns
