"""cell_strings: cells as str, missing ones as "" (the reader of every published column)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medanon.published.cells import cell_strings


def test_missing_cells_become_empty_and_other_values_their_text():
    column = pd.Series(["a", None, np.nan, pd.NA, 3, 2.5, "", " b "], dtype=object)
    got = cell_strings(column)
    assert got.dtype == object
    assert got.tolist() == ["a", "", "", "", "3", "2.5", "", " b "]
    assert all(type(x) is str for x in got)


def test_cells_all_text_come_back_as_they_are_in_a_copy():
    cells = np.array(["x", "", "nan", "None"], dtype=object)
    got = cell_strings(cells)
    assert got.tolist() == ["x", "", "nan", "None"]  # text that reads like a missing value stays
    got[0] = "changed"
    assert cells[0] == "x"  # the caller's array is not the one returned


def test_string_columns_read_as_object_columns_do():
    # the string-dtype path must give what the generic path gives for the same cells
    cells = ["a", None, "", " b ", "nan", "*"]
    for dtype in ("str", "string"):
        column = pd.Series(cells, dtype=dtype)
        got = cell_strings(column)
        assert got.dtype == object
        assert got.tolist() == ["a", "", "", " b ", "nan", "*"]
        assert got.tolist() == cell_strings(pd.Series(cells, dtype=object)).tolist()
        got[0] = "changed"
        assert column.iloc[0] == "a"  # a copy, not the column's own array
