"""The worst-case attacks computed for every group at once equal the group-by-group loop.

:func:`medanon.attacks.worst_case.attack_series` counts, without background knowledge, per
group and per (group, term) pair; the reference walks each group's records. On small random
series (the edge cases of :mod:`tests.random_series`) every field of every group must be the
same: excluded counts, remaining, top term and its confidence (ties to the smallest code), DIG,
DSG, the gate's DSG_hard, SSG with its shares, on strict PPMS-DP releases the posterior flags
of the likelihood-weighted attacker, and with background knowledge the BK exclusions.
"""

from __future__ import annotations

import pytest

from medanon.attacks.worst_case import (_GROUP_FIELDS, GroupAttack, _reference_attack_series,
                                        attack_series)
from medanon.models.names import PPMS_DP_MODEL
from medanon.models.theta import ThetaTable

from ..random_series import KNOWLEDGE, SCHEMAS, random_series

THETA = ThetaTable(0.5, {"a": 0.3, "e": 1.0})


def _dp_manifest(eps: float) -> dict:
    """A strict PPMS-DP release whose weights are Laplace-perturbed on [0, 300]."""
    return {"method": {"name": "ppms-dp-num", "privacy_model": PPMS_DP_MODEL,
                       "parameters": {"k": 3, "epsilon": str(eps), "variant": "strict"}},
            "details": {"theta_table": {"default": 0.5, "overrides": {"a": 0.3}},
                        "perturbed_qids": ["weight"], "domains": {"weight": [0.0, 300.0]}},
            "privacy_spent": {"epsilon_per_case": str(eps),
                              "mechanisms": [{"target": "weight", "mechanism": "laplace",
                                              "epsilon": eps}]}}


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
@pytest.mark.parametrize("seed", range(10))
def test_vectorized_groups_equal_the_loop(schema, seed):
    series, _ = random_series(seed, SCHEMAS[schema], periods=3 + seed % 2)
    for md in (None, True):
        for options in ({}, {"k": 3, "theta": THETA}, {"k": 2, "theta": THETA, "alpha": 0.4},
                        {"alpha": 0.6, "ss_rule": {"reactions": 2}, "lifespan": 1}):
            fast = attack_series(series, md=md, **options)
            slow = _reference_attack_series(series, md=md, **options)
            assert fast == slow, (md, options)


@pytest.mark.parametrize("seed", range(4))
def test_vectorized_groups_are_what_the_dataclass_makes(seed):
    # the vectorized groups are made without GroupAttack.__init__: each holds every field,
    # and making it through __init__ from its fields gives an equal object of the same dict
    series, _ = random_series(seed, SCHEMAS["faers"], periods=3)
    for options in ({}, {"k": 3, "theta": THETA, "alpha": 0.4}):
        for release in attack_series(series, md=True, **options).releases:
            assert release.groups
            for group in release.groups:
                assert set(vars(group)) == _GROUP_FIELDS
                again = GroupAttack(**vars(group))
                assert again == group and vars(again) == vars(group)


@pytest.mark.parametrize("seed", range(10))
def test_background_knowledge_redoes_only_the_groups_it_can_touch(seed):
    # Groups without a record whose terms imply a value keep their counts (BK excludes 0);
    # the others go through every target profile as before.
    series, _ = random_series(seed, SCHEMAS["faers"], periods=3 + seed % 2)
    for options in ({}, {"k": 3, "theta": THETA, "alpha": 0.4, "md": True}):
        fast = attack_series(series, background=KNOWLEDGE, **options)
        slow = _reference_attack_series(series, background=KNOWLEDGE, **options)
        assert fast == slow, options


@pytest.mark.parametrize("seed", range(6))
def test_vectorized_groups_equal_the_loop_with_the_likelihood_attacker(seed):
    series, _ = random_series(seed, SCHEMAS["faers"], manifests=_dp_manifest(0.5 + seed % 3))
    fast = attack_series(series, md=True)
    slow = _reference_attack_series(series, md=True)
    assert fast.releases[0].attacker == "likelihood-weighted"
    assert any(g.max_posterior is not None for r in fast.releases for g in r.groups)
    assert fast == slow


def test_background_on_a_leaf_that_is_no_record_value():
    """A release may publish a leaf that is not a record value (here B1, under B); the attack
    with background knowledge then took no target profile and crashed (found by mypy, issue 44).
    The published node is its own profile: both implementations agree, and the rule flu -> A
    excludes the flu case from the group published as B1."""
    import pandas as pd

    from medanon.attacks.background import BackgroundKnowledge, KnowledgeRule
    from medanon.hierarchies import Taxonomy
    from medanon.published.cells import QidInfo
    from medanon.published.series import PublishedSeries

    tax = Taxonomy({"*": None, "A": "*", "B": "*", "B1": "B"}, name="t", values=["A", "B"])
    rows = pd.DataFrame({"period": ["2020Q1"] * 4, "case_id": ["1", "2", "3", "4"],
                         "group": ["g1", "g1", "g2", "g2"], "x": ["B1", "B1", "A", "A"],
                         "reactions": ["flu", "cough", "flu", "cough"]})
    series = PublishedSeries({"2020Q1": rows}, {"2020Q1": {}},
                             (QidInfo("x", "categorical", tax),), ("reactions",), "test")
    knowledge = BackgroundKnowledge((KnowledgeRule("flu", "x", "A"),))
    found = [[(g.group, g.excluded, g.remaining) for g in f(series, background=knowledge,
                                                               k=2).releases[0].groups]
             for f in (attack_series, _reference_attack_series)]
    assert found[0] == found[1]
    by_group = {group: (excluded["BK"], remaining) for group, excluded, remaining in found[0]}
    assert by_group == {"g1": (1, 1), "g2": (0, 2)}
