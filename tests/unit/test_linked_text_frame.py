"""The store's linked read hands each period's rows over as a frame of object columns, one
block per column (issue 43): a reader that keeps one column of a period's rows must not keep
the others alive with it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medanon.store.duckdb_store import _object_frame


def test_each_column_is_its_own_block() -> None:
    # one 2-D block of every column did: evaluate's peak at 24 x 20k, 740 -> 1,640 MiB
    columns = {"period": np.array(["2020Q1", "", "2020Q1"], dtype=object),
               "case_id": np.array(["1", "2", "3"], dtype=object),
               "group": np.array(["g", "g", ""], dtype=object)}
    got = _object_frame(columns)
    assert got._mgr.nblocks == len(columns)
    assert all(got[name].dtype == object for name in columns)
    kept = got["group"].to_numpy()
    assert not any(np.shares_memory(kept, got[name].to_numpy()) for name in ("period", "case_id"))
    pd.testing.assert_frame_equal(got, pd.DataFrame(columns, dtype=object))


def test_no_column_no_row() -> None:
    assert _object_frame({}).shape == (0, 0)
