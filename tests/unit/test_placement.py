"""The refuse path's further search for a complete placement (issue 41, item 8; placement.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from medanon.anonymize import HA, PPMSPlusPlus
from medanon.anonymize import common
from medanon.anonymize.clustering import eta, group_records
from medanon.anonymize.placement import (PLACEMENT_ATTEMPTS, PlacementSearch, repair_unplaced,
                                         search_placement)
from medanon.data.loaders.faers import read_faers
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.errors import InfeasibleError
from medanon.random import randomness
from tests.golden.test_papers_ppms import SCHEMA_002, table_1
from tests.series_helpers import publish_series
from tests.unit.test_clustering import _random_input


#: inputs of ``_random_input(60, seed, mode, k=3, theta=0.25)`` whose greedy leaves cases unplaced
SEEDS = (0, 1, 2, 4, 5, 7)


def _groups_meet_the_model(data, group_of) -> None:
    """Every group has k anchors and σ_s <= floor(θ_s·anchors), counted from the records."""
    for g in np.unique(group_of[group_of >= 0]).tolist():
        members = np.flatnonzero(group_of == g)
        anchors = int(data.anchor[members].sum())
        assert anchors >= data.k
        terms, counts = np.unique([s for r in members.tolist() for s in data.terms(r)],
                                  return_counts=True)
        for s, c in zip(terms.tolist(), counts.tolist()):
            assert c <= eta(float(data.theta[s]), anchors), (g, s, c, anchors)


@pytest.mark.parametrize("mode", ["ms", "ppms", "ppms++"])
@pytest.mark.parametrize("seed", SEEDS)
def test_the_repair_places_cases_and_every_group_still_meets_k_and_theta(mode, seed):
    data = _random_input(60, seed, mode, k=3, theta=0.25, alpha=None)
    result = group_records(data)
    before = result.group_of.copy()
    unplaced = list(result.unplaced)
    assert unplaced, "the input must leave cases unplaced for the test to mean anything"
    placed, _ = repair_unplaced(data, result)
    after = result.group_of
    _groups_meet_the_model(data, after)
    # no case is lost: every case placed before still is, and the repaired ones are added
    assert (after[before >= 0] >= 0).all()
    assert sorted(np.flatnonzero(after < 0).tolist()) == sorted(result.unplaced)
    assert set(result.unplaced) <= set(unplaced) and len(unplaced) - len(result.unplaced) == placed
    # a swap moves one member per placed case: the other groups keep their members
    assert (after != before).sum() <= 2 * placed


def test_the_repair_places_most_cases_the_greedy_left_out():
    left, placed = 0, 0
    for mode in ("ms", "ppms", "ppms++"):
        for seed in SEEDS:
            data = _random_input(60, seed, mode, k=3, theta=0.25, alpha=None)
            result = group_records(data)
            left += len(result.unplaced)
            placed += repair_unplaced(data, result)[0]
    assert placed >= 0.5 * left > 0     # measured: 89 of 144 (18 inputs)


def test_redraws_keep_the_first_complete_grouping_from_the_releases_own_generator():
    # an input whose first grouping the repair cannot complete, and a redraw can
    data = _random_input(60, 31, "ppms", k=3, theta=0.34, alpha=None)
    first = group_records(data)
    assert first.unplaced
    assert repair_unplaced(data, dataclasses.replace(first, group_of=first.group_of.copy(),
                                                     unplaced=list(first.unplaced)))[0] \
        < len(first.unplaced)
    kept_data, kept, search = search_placement(data, first, np.random.default_rng(5))
    assert not kept.unplaced and 1 < search.attempts <= PLACEMENT_ATTEMPTS
    _groups_meet_the_model(kept_data, kept.group_of)
    # the kept grouping is the greedy's (and the repair's) on a permutation drawn from the
    # generator: reproducible from the same source, and from nothing else
    again_data, again, _ = search_placement(data, group_records(data), np.random.default_rng(5))
    assert (again.group_of == kept.group_of).all()
    assert (again_data.rank == kept_data.rank).all()
    assert sorted(kept_data.rank.tolist()) == list(range(data.n))


def test_a_case_no_group_can_take_is_refused_after_the_whole_search_and_says_so():
    data = _random_input(40, 1, "ppms", k=3, theta=0.4, alpha=None)
    # case 0 holds a term of θ 0.01: η = 0 in every group, so no search can place it
    ids, ptr = data.term_ids.tolist(), data.term_ptr.tolist()
    ids = [*ids[:ptr[1]], 12, *ids[ptr[1]:]]
    ptr = [0, *(p + 1 for p in ptr[1:])]
    data = dataclasses.replace(data, term_ptr=np.array(ptr), term_ids=np.array(ids),
                               theta=np.r_[data.theta, 0.01])
    first = group_records(data)
    assert 0 in first.unplaced
    _, result, search = search_placement(data, first, np.random.default_rng(0))
    assert 0 in result.unplaced and search.attempts == PLACEMENT_ATTEMPTS
    text = search.describe()
    assert text.startswith(f"no placement was found in {PLACEMENT_ATTEMPTS} groupings")
    assert "tried every group" in text
    assert "alpha" in PlacementSearch(4, 0, False).describe()


class _NoSearch(PlacementSearch):
    """What main did: no search, and a refusal that names none."""

    def describe(self) -> str:
        return ""


@pytest.fixture(scope="module")
def unlucky_period(tmp_path_factory):
    """A synthetic quarter (300 cases) where the rank of release seed 6 leaves a case of
    PPMS++(k 8, θ 0.15) unplaced: the refuse path of main refused it. (Found by a search over
    data and release seeds with the search switched off; issue 42's generator changed the data,
    and with it the seeds: before it, data seed 0, release seed 13 at k 5, θ 0.2.)"""
    folder = tmp_path_factory.mktemp("unlucky") / "in"
    write_faers_series(folder, periods=1, cases=300, seed=1, profile="faers-2004")
    (quarter,) = read_faers(Path(folder)).quarters
    schema = Schema.default()
    return combine_super_records(quarter.records, schema, schema.load_hierarchies())


def test_refuse_places_the_case_an_unlucky_tie_break_left_out(unlucky_period, monkeypatch):
    method = PPMSPlusPlus(k=8, theta=0.15)
    result = method.anonymize(unlucky_period, [], rng=randomness(6))
    assert len(result.table) == len(unlucky_period.frame) and result.suppressed == 0
    assert result.private_details["placement_search"] == {
        "groupings": 1, "cases_placed_by_repair": 1, "repair": True, "repair_budget_stops": 0}
    assert "placement_search" not in result.details          # operator-only, not published
    groups = result.table.groupby("group")
    assert groups.size().min() >= 8                           # one period: every case is new
    for _, rows in groups:
        terms = [t for cell in zip(rows["reactions"], rows["indications"])
                 for t in set(cell[0]) | set(cell[1])]
        assert max(np.unique(terms, return_counts=True)[1], default=0) <= 0.15 * len(rows)
    # what main did: the same rank, no search, refused the period ...
    monkeypatch.setattr(common, "search_placement",
                        lambda data, first, generator: (data, first, _NoSearch(1, 0, False)))
    with pytest.raises(InfeasibleError, match=r"could not place 1 case\(s\) in any group without "
                                              r"breaking the thresholds; their most common"):
        method.anonymize(unlucky_period, [], rng=randomness(6))
    # ... and raise-theta (which raises nothing here) withholds that case: it searches no further
    withheld = PPMSPlusPlus(k=8, theta=0.15, on_infeasible="raise-theta").anonymize(
        unlucky_period, [], rng=randomness(6))
    assert withheld.suppressed == 1 and "raised_theta" not in withheld.details
    assert "placement_search" not in withheld.private_details


def test_a_refusal_after_the_search_says_what_was_searched():
    # HA(3, 0.4, 1/4) on 002's Table 1 cannot place two quarter-1 cases in any grouping tried
    with pytest.raises(InfeasibleError, match=rf"could not place 2 case\(s\) in any group without "
                                              rf"breaking the thresholds \(no placement was found "
                                              rf"in {PLACEMENT_ATTEMPTS} groupings with different "
                                              rf"random tie-breaks; the swap repair does not run "
                                              rf"with alpha\)"):
        publish_series(HA(k=3, theta=0.4, alpha=0.25), table_1(), SCHEMA_002)
