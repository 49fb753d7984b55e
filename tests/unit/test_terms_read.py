"""Issue 43: :meth:`medanon.metrics.screening._Terms.read` with ``repeated=False`` splits every
cell as it comes instead of each distinct cell once (the signal table reads releases so). It
must give the same entries, the same spelling ids and the same vocabulary, release after
release."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from medanon.metrics.screening import _Terms

TERM = st.sampled_from(["ASPIRIN", "aspirin", " Aspirin ", "WARFARIN", "HEPARIN", "*", "",
                        "Nausea", "nausea ", "RASH"])
CELL = st.lists(TERM, max_size=4).map("|".join)
#: a few releases of cells, each cell list with repeats (reports repeat cells)
RELEASES = st.lists(st.lists(CELL, max_size=12), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(RELEASES, st.booleans())
def test_reading_cells_as_they_come_is_reading_distinct_cells(releases: list[list[str]],
                                                              upper: bool) -> None:
    once, each = _Terms(upper=upper), _Terms(upper=upper)
    for cells in releases:
        array = np.asarray(cells, dtype=object)
        expected = once.read(array)
        got = each.read(array, repeated=False)
        for a, b in zip(expected, got, strict=True):
            assert a.dtype == b.dtype
            assert a.tolist() == b.tolist()
    assert once.spellings == each.spellings
    once.close()
    each.close()
    assert once.code_of.tolist() == each.code_of.tolist()
    assert once.shown.tolist() == each.shown.tolist()
