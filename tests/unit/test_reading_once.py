"""reading_once (issue 43): inside it, what the readers of published rows compute from the same
rows is computed once, and a probe of one release's CaseIDs in another's is read the other way
round without a probe; the answers are those computed afresh."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from medanon.published.cells import case_ids, case_positions, read_once, reading_once

_IDS = hs.lists(hs.sampled_from([f"c{i}" for i in range(12)]), unique=True, max_size=12)


@settings(max_examples=200, deadline=None)
@given(_IDS, _IDS, hs.booleans())
def test_positions_read_the_other_way_round_are_a_probe(a, b, first_ab) -> None:
    ia, ib = pd.Index(a, dtype=object), pd.Index(b, dtype=object)
    with reading_once():
        if first_ab:
            case_positions(ia, ib)
        else:
            case_positions(ib, ia)
        ab, ba = case_positions(ia, ib), case_positions(ib, ia)
    assert ab.tolist() == ia.get_indexer(ib).tolist()
    assert ba.tolist() == ib.get_indexer(ia).tolist()


def test_repeated_ids_are_refused_as_a_probe_refuses_them() -> None:
    # the other way round is read off only when both are distinct: else the probe's error
    ia, ib = pd.Index(["x", "x", "y"], dtype=object), pd.Index(["x", "z"], dtype=object)
    with reading_once():
        case_positions(ib, ia)
        with pytest.raises(pd.errors.InvalidIndexError):
            case_positions(ia, ib)


def test_once_inside_and_afresh_outside() -> None:
    rows = pd.DataFrame({"case_id": ["1", "2"]})
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert read_once(("k",), (rows,), compute) == 1
    assert read_once(("k",), (rows,), compute) == 2   # outside: each time
    with reading_once():
        assert read_once(("k",), (rows,), compute) == 3
        with reading_once():   # nested: the outer one
            assert read_once(("k",), (rows,), compute) == 3
        assert read_once(("k",), (rows.copy(),), compute) == 4   # other rows, other value
        assert case_ids(rows) is case_ids(rows)
    assert case_ids(rows) is not case_ids(rows)


def test_case_ids_tell_plain_text_from_missing_or_other_cells() -> None:
    plain = case_ids(pd.DataFrame({"case_id": pd.Series(["1", "2"], dtype="str")}))
    assert plain.plain and plain.texts.tolist() == ["1", "2"]
    missing = case_ids(pd.DataFrame({"case_id": pd.Series(["1", None], dtype="str")}))
    assert not missing.plain and missing.texts.tolist() == ["1", ""]
    numbers = case_ids(pd.DataFrame({"case_id": pd.Series([1, 2], dtype=object)}))
    assert not numbers.plain and numbers.texts.tolist() == ["1", "2"]
