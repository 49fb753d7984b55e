"""PPMS-DP with dp_aware_grouping: groups grown to k' and θ' of the combined bound."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from medanon.anonymize import PPMSDPAll, PPMSDPNum
from medanon.errors import InfeasibleError, ValidationError
from medanon.models.dp_bound import inflated_k, inflated_theta
from tests.unit.test_ppms_dp import records, run


def _anchors_and_shares(result):
    table = result.table
    sizes = table.groupby("group").size()
    terms = table.assign(term=[i[0] for i in table["indications"]])
    shares = terms.groupby(["group", "term"]).size() / sizes.reindex(
        terms.groupby(["group", "term"]).size().index.get_level_values(0)).to_numpy()
    return sizes, shares


def test_groups_hold_k_prime_new_cases_and_terms_within_theta_prime():
    k, theta, eps = 3, 0.6, 0.5
    method = PPMSDPNum(k=k, theta=theta, epsilon=eps, dp_aware_grouping=True)
    result = run(method, records(600, seed=4))
    k_prime = inflated_k(k, eps)  # 1 + 2e = 6.4 -> 7
    assert k_prime == 7
    sizes, shares = _anchors_and_shares(result)
    assert sizes.min() >= k_prime  # every case is new here
    assert shares.max() <= inflated_theta(theta, eps) + 1e-12
    assert result.details["dp_aware_grouping"] == {"epsilon_per_case": "0.5", "k_grouping": 7}
    assert method.parameters()["dp_aware_grouping"] is True
    # the declared θ is the model's, not θ'
    assert result.details["theta_table"] == {"default": theta, "overrides": {}}
    # plain PPMS-DP_num meets only k = 3 on the same data: smaller groups
    plain, _ = _anchors_and_shares(run(PPMSDPNum(k=k, theta=theta, epsilon=eps), records(600, seed=4)))
    assert plain.min() < k_prime


def test_the_design_epsilon_counts_every_perturbed_qid_or_the_given_cap():
    everything = PPMSDPAll(k=2, theta=1.0, epsilon=0.2, dp_aware_grouping=True)
    result = run(everything, records(400))
    # three perturbed QIDs: ε_case = 0.6, k' = 1 + e^{1.2} = 4.3 -> 5
    assert result.details["dp_aware_grouping"] == {"epsilon_per_case": "0.6", "k_grouping": 5}
    capped = PPMSDPNum(k=2, theta=1.0, epsilon=0.2, dp_aware_grouping=True, dp_aware_epsilon=1)
    assert run(capped, records(400)).details["dp_aware_grouping"]["k_grouping"] == 9  # 1 + e^2


def test_a_period_too_small_for_k_prime_is_refused_with_the_reason():
    method = PPMSDPNum(k=5, theta=1.0, epsilon=2, dp_aware_grouping=True)  # k' = 1 + 4e^4 = 220
    with pytest.raises(InfeasibleError, match=r"fewer than k = 220 \(dp-aware grouping: k = 5"):
        run(method, records(150))
    huge = PPMSDPNum(k=5, theta=1.0, epsilon=500, dp_aware_grouping=True)
    with pytest.raises(InfeasibleError, match="beyond any data set"):
        run(huge, records(50))


def test_a_raised_theta_is_declared_as_the_theta_that_inflates_to_it():
    frame = records(300)
    # Half the cases hold "Common", the others no term: any other term's θ' (0.136 < 1/k' = 1/4)
    # would keep its cases out of every group, and with rare indications and reactions on every
    # case no group formed at all: a release of nothing this test used to pass on (issue 29)
    frame["indications"] = [("Common",) if i % 2 else () for i in range(300)]
    frame["reactions"] = [()] * 300
    method = PPMSDPNum(k=2, theta=0.3, epsilon=0.5, dp_aware_grouping=True,
                       on_infeasible="raise-theta", max_withheld=1.0)
    result = run(method, frame)
    assert len(result.table) > 0
    # the declared θ is the smallest point of the public grid whose grouping θ' holds the
    # term's share 150/300 (issue 41: a grid point, not the share itself)
    declared = result.details["theta_table"]["overrides"]["Common"]
    assert result.details["raised_theta"]["Common"]["raised_to"] == declared
    assert declared == pytest.approx(round(declared / 0.05) * 0.05)
    assert declared > 0.3 and inflated_theta(declared, 0.5) >= 150 / 300 - 1e-12
    assert inflated_theta(declared - 0.05, 0.5) < 150 / 300  # the smallest such grid point
    # refused instead, the error gives the declared θ (what the steward would set), not θ'
    refusing = PPMSDPNum(k=2, theta=0.3, epsilon=0.5, dp_aware_grouping=True, max_withheld=1.0)
    with pytest.raises(InfeasibleError) as refused:
        run(refusing, frame)
    assert refused.value.workable_theta == {"Common": declared}


@pytest.mark.parametrize("kwargs, fragment", [
    ({"variant": "paper", "dp_aware_grouping": True}, "needs the strict variant"),
    ({"dp_aware_epsilon": 2}, "applies only with dp_aware_grouping=True"),
    ({"dp_aware_grouping": "yes"}, "'dp_aware_grouping'"),
    ({"dp_aware_grouping": True, "dp_aware_epsilon": -1}, "'dp_aware_epsilon'"),
])
def test_parameters_are_validated(kwargs, fragment):
    with pytest.raises(ValidationError, match=fragment):
        PPMSDPNum(k=5, theta=0.5, epsilon=1, **kwargs)


def test_it_is_the_same_release_without_the_flag():
    a = run(PPMSDPNum(k=5, theta=0.5, epsilon=1), records(200), seed=3)
    b = run(PPMSDPNum(k=5, theta=0.5, epsilon=1, dp_aware_grouping=False), records(200), seed=3)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert "dp_aware_grouping" not in a.details
    assert math.isclose(float(np.asarray(a.table["weight"], float).sum()),
                        float(np.asarray(b.table["weight"], float).sum()))
