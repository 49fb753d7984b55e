"""medanon.mechanisms.likelihood and the combined bound: exact properties, no sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from medanon.anonymize.ppms_dp import full_tree_il
from medanon.errors import ValidationError
from medanon.hierarchies import Taxonomy, mesh_age_tree, sex_tree
from medanon.mechanisms import LaplaceMechanism
from medanon.mechanisms.likelihood import (exponential_log_table, hierarchy_information_loss,
                                           laplace_log_likelihood, laplace_scale)
from medanon.models.dp_bound import inflated_k, inflated_theta, posterior_bounds

GRID = np.round(np.arange(0, 30_001) / 100, 2)  # every value 0.00 .. 300.00


@pytest.mark.parametrize("eps", [1e-3, 0.5, 10, 1000])
@pytest.mark.parametrize("x", [-5.0, 0.0, 70.0, 299.995, 300.0, 450.0])
def test_laplace_probabilities_sum_to_one_over_the_published_grid(eps, x):
    ll = laplace_log_likelihood(GRID, x, epsilon=eps, lo=0, hi=300, decimals=2)
    assert np.all(np.isfinite(ll))  # every value in the domain is possible, even at ε = 1000
    assert np.exp(ll).sum() == pytest.approx(1.0, abs=1e-9)


def test_laplace_values_outside_the_domain_are_impossible_and_only_they():
    ll = laplace_log_likelihood([-0.01, -0.005, 0.0, 300.0, 300.004, 300.01], 150.0, epsilon=1,
                                lo=0, hi=300, decimals=2)
    # -0.005 and 300.004 round into the bins of 0 and 300: possible
    assert np.isneginf(ll).tolist() == [True, False, False, False, False, True]


def test_laplace_uses_the_samplers_scale_and_bound_point_masses():
    assert laplace_scale(epsilon=2, lo=0, hi=300) == LaplaceMechanism(
        epsilon=2, sensitivity=300.0).scale
    b = laplace_scale(epsilon=2, lo=0, hi=300)
    # true value 100: P(published 0) = P(x + Z <= 0.005) = ½ e^{-(100 - 0.005)/b}
    ll = laplace_log_likelihood(0.0, 100.0, epsilon=2, lo=0, hi=300, decimals=2)
    assert float(ll) == pytest.approx(math.log(0.5) - (100 - 0.005) / b, rel=1e-12)
    # an interior bin far above: ½ e^{-(c1 - x)/b}(1 - e^{-0.01/b})
    ll = laplace_log_likelihood(250.0, 100.0, epsilon=2, lo=0, hi=300, decimals=2)
    expected = math.log(0.5) - (249.995 - 100) / b + math.log(-math.expm1(-0.01 / b))
    assert float(ll) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("eps", [0.5, 10, 300])
def test_laplace_interval_is_the_mean_over_points(eps):
    values = np.array([0.0, 12.34, 19.99, 25.0, 55.5, 300.0])
    ll = laplace_log_likelihood(values, 10.0, 30.0, epsilon=eps, lo=0, hi=300, decimals=2)
    xs = 10.0 + 20.0 * (np.arange(200_000) + 0.5) / 200_000
    mean = np.exp(laplace_log_likelihood(values[None, :], xs[:, None], epsilon=eps, lo=0, hi=300,
                                         decimals=2)).mean(axis=0)
    assert np.exp(ll) == pytest.approx(mean, rel=2e-3)


def test_laplace_far_values_stay_finite_at_huge_epsilon():
    ll = laplace_log_likelihood([299.0, 10.0], 10.0, 10.0, epsilon=1e4, lo=0, hi=300, decimals=2)
    assert np.isfinite(ll).all() and ll[0] < -9000 < ll[1]  # b = 0.03: -289/b
    ll = laplace_log_likelihood(299.0, 0.0, 20.0, epsilon=1e4, lo=0, hi=300, decimals=2)
    assert np.isfinite(ll) and ll < -9000


@pytest.mark.parametrize("kwargs, fragment", [
    ({"lo": 5, "hi": 5}, "lo < hi"), ({"lo": 0, "hi": float("inf")}, "lo < hi"),
    ({"lo": 0, "hi": 1, "decimals": -1}, "'decimals'"), ({"lo": 0, "hi": 1, "epsilon": 0}, "epsilon"),
])
def test_laplace_parameters_are_validated(kwargs, fragment):
    args = {"epsilon": 1, "decimals": 2, **kwargs}
    with pytest.raises(ValidationError, match=fragment):
        laplace_log_likelihood([1.0], 1.0, **args)
    with pytest.raises(ValidationError, match="lo <= hi"):
        laplace_log_likelihood([1.0], 2.0, 1.0, epsilon=1, lo=0, hi=3, decimals=2)


@pytest.mark.parametrize("tree", [mesh_age_tree(), sex_tree(),
                                  Taxonomy({"*": None, "a": "*", "b": "a", "c": "b", "d": "*"},
                                           name="chain")])
def test_hierarchy_information_loss_is_the_samplers_utility(tree):
    il = hierarchy_information_loss(tree.parent_array, tree.depth_array)
    assert np.array_equal(il, full_tree_il(tree))
    assert np.all(np.diag(il) == 0) and np.array_equal(il, il.T)


def test_exponential_table_rows_are_the_samplers_probabilities():
    from medanon.mechanisms import ExponentialMechanism

    utility = -full_tree_il(mesh_age_tree())
    table = exponential_log_table(utility, epsilon=3, sensitivity=1)
    mech = ExponentialMechanism(epsilon=3, sensitivity=1)
    for u in range(len(utility)):
        assert np.exp(table[u]) == pytest.approx(mech.probabilities(utility[u]), rel=1e-12)
    with pytest.raises(ValidationError, match="'utilities'"):
        exponential_log_table(np.zeros(3), epsilon=1, sensitivity=1)


# ------------------------------------------------------------------------- the combined bound
def test_posterior_bound_is_finite_and_right_at_large_epsilon():
    # Regression: the bound was computed as e^{ε-max}/(e^{ε-max} + ...), which is 0/0 once the
    # ε of a group differ by ~700, so verify recorded max_posterior 0 at ε = 1000.
    assert posterior_bounds(np.array([3000.0, 6000.0])).tolist() == [1.0, 1.0]
    eps = np.array([1.0, 2.0, 3.0])
    direct = np.exp(eps) / (np.exp(eps) + (np.exp(-eps).sum() - np.exp(-eps)))
    assert posterior_bounds(eps) == pytest.approx(direct, rel=1e-12)
    assert posterior_bounds(np.array([0.0, 0.0])).tolist() == [0.5, 0.5]


@pytest.mark.parametrize("k, eps", [(5, 0.5), (5, 1.0), (3, 2.0), (10, 0.1)])
def test_inflated_k_and_theta_make_the_bound_hold_exactly(k, eps):
    n = inflated_k(k, eps)
    assert posterior_bounds(np.full(n, eps)).max() <= 1 / k + 1e-12
    assert posterior_bounds(np.full(n - 1, eps)).max() > 1 / k
    theta = 0.4
    p = inflated_theta(theta, eps)
    share = p * math.exp(eps) / (p * math.exp(eps) + (1 - p) * math.exp(-eps))
    assert share == pytest.approx(theta, rel=1e-12)
