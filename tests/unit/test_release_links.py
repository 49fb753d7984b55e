"""ReleaseLinks selects a release's linked rows on integer codes (issue 43): the rows of its
cases and of every case in a group (of any release) holding one of them, as the SQL of
ReleaseStore.linked_rows selects them; a row without a group shares a group with no one."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medanon.store.duckdb_store import ReleaseLinks

# (period, case, group label; None: no group), one published row each, rowid = position
ROWS = [("P0", "a", "g1"), ("P0", "b", "g1"), ("P0", "c", None), ("P0", "f", "g9"),
        ("P1", "a", "g1"), ("P1", "d", "g2"), ("P1", "e", "g1"), ("P1", "c", "g3"),
        ("P2", "f", "g1"), ("P2", "b", "g4")]


def _links() -> ReleaseLinks:
    periods = ["P0", "P1", "P2", "P3"]
    period, case, group = zip(*ROWS)
    return ReleaseLinks.of(periods, np.arange(len(ROWS), dtype=np.int64) + 100,
                           pd.Index(periods).get_indexer(list(period)),
                           pd.factorize(np.asarray(case, dtype=object))[0],
                           pd.factorize(np.asarray(group, dtype=object))[0])


def _expected(period: str) -> list[int]:
    """The selection written out: cases of ``period``, the groups holding one, their cases."""
    own = {c for p, c, _ in ROWS if p == period}
    hit = {(p, g) for p, c, g in ROWS if c in own and g is not None}
    members = own | {c for p, c, g in ROWS if (p, g) in hit}
    return [100 + i for i, (_, c, _) in enumerate(ROWS) if c in members]


def test_the_codes_select_what_the_selection_selects() -> None:
    links = _links()
    for period in ("P0", "P1", "P2"):
        assert links.rows_linked_to(period).tolist() == _expected(period), period
    # P1: c's group g3 holds no other case; P0's c has no group and pulls in no one
    assert links.rows_linked_to("P1").tolist() == [100, 101, 102, 104, 105, 106, 107, 109]


def test_a_release_without_rows_or_not_published_links_nothing() -> None:
    links = _links()
    assert links.rows_linked_to("P3").tolist() == []
    assert links.rows_linked_to("P9").tolist() == []


def test_without_groups_only_the_rows_of_its_cases() -> None:
    # what evaluate checks and measures a release on (StoreSeries.verified_linked_release):
    # its cases' rows in every release, not the other cases of their groups
    links = _links()
    for period in ("P0", "P1", "P2"):
        own = {c for p, c, _ in ROWS if p == period}
        assert links.rows_linked_to(period, groups=False).tolist() == [
            100 + i for i, (_, c, _) in enumerate(ROWS) if c in own], period
    assert links.rows_linked_to("P1", groups=False).tolist() == [100, 102, 104, 105, 106, 107]
    assert links.rows_linked_to("P3", groups=False).tolist() == []
    assert links.rows_linked_to("P9", groups=False).tolist() == []
