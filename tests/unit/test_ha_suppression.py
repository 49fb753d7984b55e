"""HA's unplaceable leftovers: placed in the nearest group in the QIDs, with the terms that group
cannot take suppressed (clustering.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from medanon.anonymize.clustering import (NEW_MD, VIEWS_OF_CLASS, Attribute, GroupingInput,
                                          QidSpace, _fit_by_suppression, _fit_by_suppression_fast,
                                          _Group, _group_records_once, _group_reference_once,
                                          _GroupTable, eta, group_records, group_reference)
from tests.unit.test_clustering import _random_input

SS_MIN = 3  # one ss column holding every term: a record is ss with 3 terms or more


def _ha_input(n: int, seed: int, *, k: int, theta: float, alpha: float, suppress: bool):
    data = _random_input(n, seed, "ha", k=k, theta=theta, alpha=alpha)
    lengths = np.diff(data.term_ptr)
    return dataclasses.replace(data, ss=lengths >= SS_MIN, suppress_unplaced=suppress,
                               ss_cells=((data.term_ptr, data.term_ids, SS_MIN),))


def _published_terms(data, result, r):
    dropped = set(result.suppressed.get(r, ()))
    return [s for s in data.terms(r) if s not in dropped]


@pytest.mark.parametrize("seed", range(6))
def test_unplaceable_leftovers_are_placed_with_terms_suppressed_and_bounds_hold(seed):
    data = _ha_input(60 + 10 * seed, seed, k=2 + seed % 2, theta=(0.3, 0.5)[seed % 2], alpha=0.25,
                     suppress=True)
    plain = group_records(dataclasses.replace(data, suppress_unplaced=False))
    result = group_records(data)
    assert plain.unplaced, "the input must leave cases unplaceable for the test to mean anything"
    assert not result.unplaced and (result.group_of >= 0).all()
    # the cases the plain grouping could not place are late (grouped again without them, and
    # perhaps others after them); only late cases lose terms
    assert set(plain.unplaced) <= set(result.late)
    assert set(result.suppressed) <= set(result.late)
    # the others are placed by the last grouping, which leaves out exactly the late cases
    late = np.zeros(data.n, dtype=bool)
    late[result.late] = True
    last = group_records(dataclasses.replace(data, suppress_unplaced=False, late=late))
    assert sorted(last.unplaced) == sorted(result.late)
    assert np.array_equal(result.group_of[~late], last.group_of[~late])
    for g in range(result.n_groups):
        members = np.flatnonzero(result.group_of == g)
        gv = {v: [r for r in members if v in VIEWS_OF_CLASS[int(data.ha_class[r])]]
              for v in range(4)}
        anchors = len(gv[0])
        assert anchors >= data.k
        sigma: dict[int, int] = {}
        for r in members:
            for s in _published_terms(data, result, int(r)):
                sigma[s] = sigma.get(s, 0) + 1
        assert all(c <= eta(float(data.theta[s]), anchors) for s, c in sigma.items())
        # α on the published term counts, over the exact views (002 Definition 7(3))
        for view in gv.values():
            ss = sum(len(_published_terms(data, result, int(r))) >= SS_MIN for r in view)
            assert ss <= 0.25 * len(view) + 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_fast_and_reference_suppress_the_same_terms(seed):
    data = _ha_input(40 + 7 * seed, seed + 10, k=2, theta=0.3, alpha=0.25, suppress=True)
    slow, fast = group_reference(data), group_records(data)
    assert np.array_equal(slow.group_of, fast.group_of)
    assert slow.suppressed == fast.suppressed


def _tiny(theta: float, alpha: float | None):
    """Records r0..r4 on one numeric QID; groups A = {r0, r1} and B = {r2, r3}; r4 to place.

    Terms: r0 {0}, r1 {2}, r2 {1, 2}, r3 {2}, r4 {0, 1, 2}; r4's QID equals B's, so B has the
    smaller ΔIL. One ss column of all terms with minimum 2. All records are new & md.
    """
    terms = [[0], [2], [1, 2], [2], [0, 1, 2]]
    ptr = np.cumsum([0] + [len(t) for t in terms])
    ids = np.array([s for t in terms for s in t], dtype=np.int64)
    w = np.array([0.0, 1.0, 9.0, 9.0, 9.0])
    n = len(terms)
    data = GroupingInput(QidSpace([Attribute("w", value_range=10.0)]), (None,), (w,), (w.copy(),),
                         ptr, ids, np.full(3, theta), np.ones(n, dtype=bool),
                         np.ones(n, dtype=bool), np.arange(n), 2, alpha,
                         np.full(n, NEW_MD) if alpha else None,
                         (np.diff(ptr) >= 2) if alpha else None, True, ((ptr, ids, 2),))
    groups = []
    for members in ([0, 1], [2, 3]):
        g = _Group(data, members[0])
        for r in members:
            g.add(data, r, remaining=False)
        groups.append(g)
    return data, groups


def test_the_nearest_group_in_the_qids_takes_the_record_whatever_its_terms_cost():
    # θ = 1/2, r4 an anchor: η = floor(3/2) = 1 in both groups. B (r4's QID) is nearer: r4 joins
    # it and loses 1 and 2, which B holds; it keeps 0.
    data, groups = _tiny(0.5, None)
    gi, dropped, kept, ss = _fit_by_suppression(data, groups, 4)
    assert (gi, dropped, kept) == (1, [1, 2], [0])
    # one more term 0 in B makes B cost 3 against A's 2: r4 still joins B (a choice by cost
    # would read the terms it then suppresses, issue 41) and loses all three
    groups[1].sigma[0] = 1
    gi, dropped, kept, _ = _fit_by_suppression(data, groups, 4)
    assert (gi, dropped, kept) == (1, [0, 1, 2], [])


def test_a_suppressed_term_replaced_by_another_the_group_suppresses_changes_nothing():
    """The unit form of non-interference (a) for HA: r4 holds {0, 1, 2} or {0, 2, 3}; B
    suppresses 1, 2 and 3 alike (η 1, each held once), so r4 joins B keeping 0 either way."""
    data, groups = _tiny(0.5, None)
    groups[1].sigma[3] = 1
    other = dataclasses.replace(data, term_ids=np.array([0, 2, 1, 2, 2, 0, 2, 3]),
                                theta=np.full(4, 0.5))
    assert other.terms(4) == [0, 2, 3] and data.terms(4) == [0, 1, 2]
    first, second = _fit_by_suppression(data, groups, 4), _fit_by_suppression(other, groups, 4)
    assert (first[0], first[2]) == (second[0], second[2]) == (1, [0])
    assert (first[1], second[1]) == ([1, 2], [2, 3])


def test_alpha_makes_the_record_nss_dropping_terms_in_sort_order():
    # θ = 1 (unbounded): nothing is forced out by θ. r4 has 3 terms >= 2: an ss-record, and one
    # ss leftover in a group of two nss n&md records gives 1/3 > α = 1/4 in every view, so r4
    # must keep fewer than 2 terms: 3 − 2 + 1 = 2 go, the first in sort order (0, then 1):
    # not the period's most common, which would count other cases' suppressed terms (issue 41)
    data, groups = _tiny(1.0, 0.25)
    _, dropped, kept, ss = _fit_by_suppression(data, groups[:1], 4)
    assert (dropped, kept, ss) == ([0, 1], [2], False)
    # with α = 1/2 the ss leftover fits (1/3 <= 1/2): nothing goes and r4 stays ss
    data, groups = _tiny(1.0, 0.5)
    _, dropped, kept, ss = _fit_by_suppression(data, groups[:1], 4)
    assert (dropped, kept, ss) == ([], [0, 1, 2], True)


def test_the_group_table_fit_equals_the_group_by_group_fit():
    """_fit_by_suppression_fast (all groups at once) picks the reference's group and terms, with
    and without α, on groups of every state, for every record as a leftover."""
    for seed in range(4):
        for alpha in (None, 0.25):
            data = _ha_input(80, seed + 20, k=2, theta=(0.3, 0.5)[seed % 2], alpha=alpha or 0.5,
                             suppress=True)
            if alpha is None:
                data = dataclasses.replace(data, alpha=None, ha_class=None, ss=None)
            groups = []
            for start in range(0, 60, 4):  # 15 groups of 4, some breaking θ or α on purpose
                g = _Group(data, start)
                for r in range(start, start + 4):
                    g.add(data, r, remaining=False)
                groups.append(g)
            table = _GroupTable(data, groups)
            for r in range(60, 80):
                slow = _fit_by_suppression(data, groups, r)
                assert _fit_by_suppression_fast(data, table, r) == slow


@pytest.mark.parametrize("seed", range(6))
def test_fast_and_reference_suppress_the_same_terms_on_larger_inputs(seed):
    data = _ha_input(150 + 20 * seed, seed + 30, k=2 + seed % 2, theta=(0.2, 0.3)[seed % 2],
                     alpha=(0.25, 0.5)[seed % 2], suppress=True)
    slow, fast = group_reference(data), group_records(data, probe_budget=10**9)
    assert slow.suppressed, "the input must need suppressions for the test to mean anything"
    assert np.array_equal(slow.group_of, fast.group_of)
    assert slow.suppressed == fast.suppressed


@pytest.mark.parametrize("seed", range(4))
def test_the_last_grouping_reads_no_term_of_a_late_record(seed):
    """Non-interference (a) for HA at the grouping's level (issue 41): given which records are
    late (placed by suppression after the grouping), their terms may be anything and every other
    record's group stays as it was, in both implementations."""
    data = _ha_input(150 + 20 * seed, seed + 30, k=2 + seed % 2, theta=(0.2, 0.3)[seed % 2],
                     alpha=(0.25, 0.5)[seed % 2], suppress=True)
    result = group_records(data)
    assert result.late and result.passes >= 2, "the input must need suppressions"
    late = np.zeros(data.n, dtype=bool)
    late[result.late] = True
    rng = np.random.default_rng(seed)
    terms = [sorted(set(rng.integers(0, 12, rng.integers(0, 5)).tolist())) if late[r]
             else data.terms(r) for r in range(data.n)]
    assert any(terms[r] != data.terms(r) for r in result.late)
    ptr = np.cumsum([0] + [len(t) for t in terms])
    ids = np.array([s for t in terms for s in t], dtype=np.int64)
    other = dataclasses.replace(data, term_ptr=ptr, term_ids=ids, ss=np.diff(ptr) >= SS_MIN,
                                ss_cells=((ptr, ids, SS_MIN),))
    for once in (_group_records_once, _group_reference_once):
        first = once(dataclasses.replace(data, suppress_unplaced=False, late=late))
        second = once(dataclasses.replace(other, suppress_unplaced=False, late=late))
        assert first.n_groups == second.n_groups
        assert np.array_equal(first.group_of[~late], second.group_of[~late])


# ------------------------------------------------------- on_unplaceable="withhold" (issue 31)
@pytest.fixture(scope="module")
def faers_quarters():
    from medanon.experiments.periodic import load_periodic_data

    # three quarters: HA releases the first two (each needs the next one's case ids)
    return load_periodic_data(None, periods=3, cases=300, seed=2026).dataset


def _ha(unplaceable: str):
    from medanon.anonymize.ha import HA

    # θ = 0.2 on this series leaves cases no group can take (002's θ on FAERS-like data)
    return HA(k=5, theta=0.2, alpha=0.25, on_infeasible="raise-theta", max_withheld=1.0,
              on_unplaceable=unplaceable)


def test_ha_withholds_a_case_that_fits_no_group_and_the_gate_passes(faers_quarters):
    from medanon.api import Publisher

    data = faers_quarters
    periods = list(data.periods)[:2]
    # the gate is enforced (no allow_violations): a violating release would raise here, also
    # one that broke α in the previous release by withholding a case it counted as "not md"
    publisher = Publisher(_ha("withhold"), seed=1)
    series = publisher.publish(data, periods)
    for release in series.releases_published:
        assert release.verdict == "passed"
        # withheld and suppressed counts are operator-only facts (issue 41)
        assert "withheld_cases" not in release.manifest["details"]
        details = release.operator_manifest["details"]
        assert release.manifest["method"]["parameters"]["on_unplaceable"] == "withhold"
        # under their published CaseIDs (keyed pseudonyms, issue 41)
        original = set(publisher.case_ids.of(data.super_records(release.period).frame["case_id"]))
        published = set(release.rows["case_id"].astype(str))
        withheld = original - published
        assert details["withheld_cases"] == len(withheld) > 0
        assert release.operator_manifest["counts"]["suppressed"] == len(withheld)
        assert release.operator_manifest["counts"]["suppressed_terms"] == 0
        assert "cases_with_suppressed_terms" not in details
    assert series.verify().ok


def test_ha_suppresses_terms_by_default_and_withholds_nothing(faers_quarters):
    from medanon.api import Publisher

    data = faers_quarters
    series = Publisher(_ha("suppress-terms"), seed=1).publish(data, list(data.periods)[:1])
    (release,) = series.releases_published
    assert release.manifest["method"]["parameters"]["on_unplaceable"] == "suppress-terms"
    assert release.operator_manifest["details"]["withheld_cases"] == 0
    assert release.operator_manifest["counts"]["suppressed_terms"] > 0
    assert "suppressed_terms" not in release.manifest["counts"]
    assert len(release.rows) == len(data.super_records(release.period).frame)


def test_ha_on_unplaceable_is_validated():
    from medanon.errors import ValidationError

    with pytest.raises(ValidationError, match="on_unplaceable"):
        _ha("drop")


def test_on_unplaceable_reaches_ha_and_only_ha():
    from medanon.errors import ValidationError
    from medanon.pipeline.methods import periodic_method

    method = periodic_method("ha", k=5, theta=0.2, alpha=0.25, on_unplaceable="withhold")
    assert method.on_unplaceable == "withhold" and method.may_withhold
    assert not periodic_method("ha", k=5, theta=0.2, alpha=0.25).may_withhold
    with pytest.raises(ValidationError, match="'on_unplaceable' parameter .* 'ha' only"):
        periodic_method("ppms+", k=5, theta=0.2, on_unplaceable="withhold")
