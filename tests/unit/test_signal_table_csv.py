"""Issue 43: :func:`medanon.metrics.signal_table.write_signal_table` writes its CSV from the
columns' cells instead of ``DataFrame.to_csv``; the bytes must be pandas' own for every value a
signal table holds (floats of every magnitude, inf, NaN, -0.0; texts with separators, quotes,
line breaks, blanks and missing cells; counts and flags)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from medanon.metrics.signal_table import _csv_cells, _write_csv

FLOAT = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                  st.sampled_from([0.0, -0.0, 1e16, 1e-5, 1e-4, 9999999999999998.0, 1e15,
                                   5e-324, 0.1, 1.0, math.nan, math.inf, -math.inf]))
TEXT = st.one_of(st.none(), st.sampled_from(["", "ASPIRIN", "a,b", 'say "x"', "line\nbreak",
                                             "cr\rhere", " pad ", "*", "NA", "é"]),
                 st.text(max_size=6))
ROW = st.tuples(TEXT, FLOAT, st.integers(-2**63, 2**63 - 1), st.booleans(), TEXT)


def _frame(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["drug", "e", "n", "signal_mgps", "first_signal_prr"])
    return frame.astype({"drug": "str", "e": "float64", "n": "int64", "signal_mgps": "bool",
                         "first_signal_prr": "str"})


@settings(max_examples=200, deadline=None)
@given(st.lists(ROW, max_size=8))
def test_the_csv_is_pandas_to_csv(tmp_path_factory, rows: list[tuple]) -> None:
    frame = _frame(rows)
    folder = tmp_path_factory.mktemp("csv")
    mine, theirs = folder / "mine.csv", folder / "theirs.csv"
    _write_csv(frame, mine)
    frame.to_csv(theirs, index=False, lineterminator="\n")
    assert mine.read_bytes() == theirs.read_bytes()
    # written a few rows at a time (a cell's text is its own): the same bytes
    chunked = folder / "chunked.csv"
    _write_csv(frame, chunked, chunk_rows=3)
    assert chunked.read_bytes() == theirs.read_bytes()


def test_an_unknown_dtype_is_left_to_pandas(tmp_path: Path) -> None:
    frame = pd.DataFrame({"n": pd.array([1, None], dtype="Int64"), "e": [0.5, np.nan]})
    assert _csv_cells(frame["n"]) is None
    _write_csv(frame, tmp_path / "a.csv")
    assert (tmp_path / "a.csv").read_text() == "n,e\n1,0.5\n,\n"


def test_numpy_legacy_printing_is_left_to_pandas(tmp_path: Path) -> None:
    frame = pd.DataFrame({"e": [0.1, 1 / 3]})
    saved = np.get_printoptions()
    try:
        np.set_printoptions(legacy="1.13")
        assert _csv_cells(frame["e"]) is None
        _write_csv(frame, tmp_path / "a.csv")
        frame.to_csv(tmp_path / "b.csv", index=False, lineterminator="\n")
    finally:
        np.set_printoptions(**saved)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert _csv_cells(frame["e"]) == ["0.1", "0.3333333333333333"]
