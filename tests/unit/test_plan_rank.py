"""``medanon plan``'s order (issue 41): risk first, utility only among equal risk, and a tie on
the measured risk never broken towards the candidate that bounds less."""

from __future__ import annotations

from medanon.experiments.plan import _rank


def _row(**values):
    row = {"disclosing_groups": 0, "dir_max": 0.0, "dsr_max": 0.0, "unbounded_terms": 0,
           "mgps_recall": 1.0, "nil": 0.5}
    return {**row, **values}


def test_a_disclosure_outranks_any_utility():
    disclosing = _row(disclosing_groups=16, nil=0.1)          # 'max DIR 0, max DSR 0'
    safe = _row(nil=0.6, mgps_recall=0.8)
    assert min([disclosing, safe], key=_rank) is safe


def test_equal_measured_risk_goes_to_the_candidate_with_fewer_unbounded_terms():
    open_terms = _row(unbounded_terms=43, nil=0.2)
    bounded = _row(unbounded_terms=0, nil=0.4)
    assert min([open_terms, bounded], key=_rank) is bounded


def test_utility_decides_only_among_equal_risk_and_unknown_risk_is_the_worst():
    better, worse = _row(nil=0.2), _row(nil=0.3)
    assert min([worse, better], key=_rank) is better
    assert min([_row(dir_max=0.1), _row(dir_max=0.0, nil=0.9)], key=_rank)["dir_max"] == 0.0
    unknown = _row(disclosing_groups=None, nil=0.0)
    assert min([unknown, _row(disclosing_groups=3)], key=_rank) is not unknown
