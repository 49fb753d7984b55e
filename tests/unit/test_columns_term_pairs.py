"""columns_term_pairs: the terms of several multi-valued columns read without joining them row
by row give the arrays term_pairs gives for the joined cells (issue 43), term numbers included
(readers of ReleaseView.term_code rely on term_pairs' order of first appearance)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as hs

from medanon.published.cells import (_SAMPLE, _shares_objects, cell_strings, columns_term_pairs,
                                    distinct_cells, joined_terms, term_pairs)

# terms that strip to the same text, blank and suppressed terms, separators at the ends
_TERMS = hs.sampled_from(["a", " a", "a ", "b", "B", "c d", "", " ", "*", " * ", "é"])
_CELL = hs.one_of(hs.none(), hs.lists(_TERMS, max_size=4).map("|".join))


def _frame(columns: list[list[str | None]]) -> pd.DataFrame:
    # string and object columns alike (release rows are string columns; other readers' are not)
    return pd.DataFrame({f"c{j}": pd.Series(cells, dtype="str" if j % 2 == 0 else object)
                         for j, cells in enumerate(columns)})


def _assert_reads_as_joined_cells(frame: pd.DataFrame, names: list) -> None:
    """columns_term_pairs gives term_pairs of the joined cells: the same arrays and dtypes."""
    want = term_pairs(joined_terms(frame, names))
    got = columns_term_pairs(frame, names)
    for w, g in zip(want, got, strict=True):
        assert g.dtype == w.dtype
        assert g.tolist() == w.tolist()


def _assert_distinct_cells_as_factorized(frame: pd.DataFrame, names: list[str]) -> None:
    """``distinct_cells`` numbers each column's cells as ``pd.factorize`` numbers their texts."""
    for name in names:
        codes, texts = distinct_cells(frame[name])
        want_codes, want_texts = pd.factorize(cell_strings(frame[name]))
        assert codes.dtype == np.int64
        assert codes.tolist() == want_codes.tolist()
        assert texts.tolist() == list(want_texts)


@settings(max_examples=300, deadline=None)
@given(hs.integers(0, 3).flatmap(lambda width: hs.integers(0, 12).flatmap(
    lambda n: hs.lists(hs.lists(_CELL, min_size=n, max_size=n), min_size=width,
                       max_size=width))), hs.integers(0, 11))
def test_columns_term_pairs_equals_term_pairs_of_the_joined_cells(columns, rows) -> None:
    frame = _frame(columns) if columns else pd.DataFrame(index=range(rows))
    names = list(frame.columns)
    _assert_reads_as_joined_cells(frame, names)


def test_terms_are_numbered_by_first_appearance_row_by_row() -> None:
    frame = pd.DataFrame({"x": ["", "b|a", "c"], "y": ["a| *", "c", " b"]})
    rows, codes, names = columns_term_pairs(frame, ["x", "y"])
    assert names.tolist() == ["", "a", "*", "b", "c"]
    assert list(zip(rows.tolist(), names[codes].tolist())) == [
        (0, "a"), (1, "a"), (1, "b"), (1, "c"), (2, "b"), (2, "c")]


def _copies(cells: list[str | None], shared: list[bool]) -> list[str | None]:
    """The cells, each either one str object with the other cells of its text (as a store's
    shared cells) or a copy of its own (equal text, another object)."""
    one: dict[str, str] = {}
    out = []
    for cell, share in zip(cells, shared, strict=True):
        if cell is None:
            out.append(None)
        elif share:
            out.append(one.setdefault(cell, "".join(list(cell))))
        else:
            out.append(("." + cell)[1:])  # a new object of the same text
    return out


@settings(max_examples=300, deadline=None)
@given(hs.integers(1, 3).flatmap(lambda width: hs.integers(1, 14).flatmap(
    lambda n: hs.lists(hs.tuples(hs.lists(_CELL, min_size=n, max_size=n),
                                 hs.lists(hs.booleans(), min_size=n, max_size=n)),
                       min_size=width, max_size=width))))
def test_shared_and_copied_cell_objects_read_as_their_text(columns) -> None:
    # the reader parses each distinct cell object once: cells that share an object, and equal
    # texts held in different objects, must read as the joined cells do
    frame = _frame([_copies(cells, shared) for cells, shared in columns])
    names = list(frame.columns)
    _assert_reads_as_joined_cells(frame, names)
    _assert_distinct_cells_as_factorized(frame, names)


def _tiled(cells: list[str | None], rows: int, *, fresh: bool) -> list[str | None]:
    """The cells repeated to ``rows`` rows: the same objects again (a store's shared cells,
    read by object) or, with ``fresh``, a new object per row (rows read with a str per cell,
    read by text)."""
    out = [cells[i % len(cells)] for i in range(rows)]
    return [None if c is None else ("." + c)[1:] for c in out] if fresh else out


@settings(max_examples=100, deadline=None)
@given(hs.integers(1, 2).flatmap(lambda width: hs.integers(1, 14).flatmap(
    lambda n: hs.lists(hs.tuples(hs.lists(_CELL, min_size=n, max_size=n),
                                 hs.lists(hs.booleans(), min_size=n, max_size=n)),
                       min_size=width, max_size=width))), hs.booleans())
def test_large_columns_read_alike_by_object_and_by_text(columns, fresh) -> None:
    # a column above the sample size is numbered by object when its cells repeat objects and
    # by text when nearly every cell is an object of its own: both read as the joined cells
    rows = _SAMPLE + 7
    frame = _frame([_tiled(_copies(cells, shared), rows, fresh=fresh)
                    for cells, shared in columns])
    names = list(frame.columns)
    _assert_reads_as_joined_cells(frame, names)
    _assert_distinct_cells_as_factorized(frame, names)


def test_a_large_column_is_read_by_object_or_by_text_as_its_cells_repeat_objects() -> None:
    # (texts of two characters or more: CPython shares one object for "" and for each single
    # character, however it is made)
    cells = ["a|b", "b |", "c d|a", "a|b"]
    shared = _tiled(cells, _SAMPLE + 7, fresh=False)
    fresh = _tiled(cells, _SAMPLE + 7, fresh=True)
    assert _shares_objects(np.asarray(shared, dtype=object))
    assert not _shares_objects(np.asarray(fresh, dtype=object))
    assert not _shares_objects(np.asarray(shared[:_SAMPLE], dtype=object))  # small: by text
    frame = _frame([shared, fresh])
    _assert_reads_as_joined_cells(frame, ["c0", "c1"])
    _assert_reads_as_joined_cells(frame, ["c1", "c0"])
