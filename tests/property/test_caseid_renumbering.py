"""Non-interference (d) of issue 41: nothing published follows the CaseID numbering.

FAERS numbers cases in order of receipt. Renumbering the CaseIDs of a series in an order-
changing way, each row left in place, must give, under the same seed, the same groups of the
same records and the same published text up to the renaming of the published CaseIDs: which
records form a group, the group numbers, the row order, every other cell and the manifests.
Checked for every periodic method, on small random series with follow-ups.
"""

from __future__ import annotations

import pandas as pd
import pytest

import medanon
from medanon.data.schema import Schema
from medanon.errors import InfeasibleError
from medanon.pipeline.methods import periodic_method
from tests.property.test_periodic_methods import random_series

SCHEMA = Schema.papers()
COMMON = dict(k=3, on_infeasible="raise-theta", max_withheld=1.0)
METHODS = {
    "ms": dict(theta=0.5),
    "ppms": dict(theta=0.5),
    "ppms+": dict(theta=0.5),
    "ppms++": dict(theta=0.5),
    "ha": dict(theta=0.5, alpha=0.8),
    "ppms-dp-num": dict(theta=0.5, epsilon=1.0),
    "ppms-dp-all": dict(theta=0.5, epsilon=1.0),
}


def _renumbered(records: dict[str, pd.DataFrame]) -> tuple[dict[str, pd.DataFrame], dict]:
    """Every CaseID mapped to a number that reverses their order (rows left in place)."""
    ids = sorted({c for frame in records.values() for c in frame["case_id"]}, key=int)
    rename = {c: str(900_000 - 7 * int(c)) for c in ids}
    return {p: frame.assign(case_id=frame["case_id"].map(rename)) for p, frame in records.items()}, \
        rename


def _publish(name: str, records: dict[str, pd.DataFrame], seed: int) -> medanon.Series:
    publisher = medanon.Publisher(periodic_method(name, **COMMON, **METHODS[name]), seed=seed)
    series = publisher.publish(medanon.Dataset(records, SCHEMA), allow_violations=True,
                               allow_unknown_terms=True, allow_gap=True,
                               allow_short_lifespan=True)
    return series, publisher


def _without_time(manifest: dict) -> dict:
    return {k: v for k, v in manifest.items() if k != "published_at"}


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("seed", [3, pytest.param(11, marks=pytest.mark.slow)])
def test_renumbering_case_ids_renames_the_release_and_changes_nothing_else(name, seed) -> None:
    records = random_series(seed, periods=4, missing=0.2)
    renumbered, rename = _renumbered(records)
    assert any(list(f["case_id"].astype(int).argsort()) != list(g["case_id"].astype(int)
                                                              .argsort())
               for f, g in zip(records.values(), renumbered.values()))
    try:
        a, pub_a = _publish(name, records, seed)
    except InfeasibleError:
        pytest.skip("the random series has no release at these settings")
    b, pub_b = _publish(name, renumbered, seed)
    assert a.periods == b.periods and a.periods
    # published CaseID in run a -> published CaseID in run b, through the renaming
    real = sorted(rename)
    published = dict(zip(pub_a.case_ids.of(real),
                         pub_b.case_ids.of([rename[c] for c in real]), strict=True))
    assert set(published) != set(published.values())   # the published ids did change
    for period in a.periods:
        rows_a, rows_b = a.releases[period], b.releases[period]
        assert len(rows_a)
        expected = rows_a.assign(case_id=rows_a["case_id"].map(published))
        pd.testing.assert_frame_equal(expected.reset_index(drop=True),
                                      rows_b.reset_index(drop=True))
        assert _without_time(a.manifests[period]) == _without_time(b.manifests[period])
