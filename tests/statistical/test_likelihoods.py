"""The mechanisms' likelihoods against their samplers (fixed seeds, χ² and KS).

:mod:`medanon.mechanisms.likelihood` claims the probability of each published value under the
strict PPMS-DP pipeline (clip, Laplace, clip, round) and under the exponential mechanism over a
hierarchy. Here the samplers themselves produce the published values and the claimed
probabilities must fit their frequencies; a 10% error in the Laplace ε, or the exponential
mechanism's other normalization (ε/Δ for ε/2Δ), must not.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from medanon.anonymize.ppms_dp import full_tree_il
from medanon.hierarchies import mesh_age_tree
from medanon.mechanisms import ExponentialMechanism, LaplaceMechanism
from medanon.random import randomness
from medanon.mechanisms.likelihood import exponential_log_table, laplace_log_likelihood
from tests.statistical.chi2 import chisquare_p

P_MIN = 1e-4


def published(x, n: int, *, epsilon, lo: float, hi: float, decimals: int, seed: int):
    """What PPMS-DP strict publishes for true value(s) ``x``: the pipeline of ppms_dp.py."""
    mech = LaplaceMechanism(epsilon=epsilon, sensitivity=hi - lo)
    true = np.clip(np.broadcast_to(np.asarray(x, dtype=float), (n,)), lo, hi)
    return np.round(np.clip(mech.randomise(true, randomness(seed)), lo, hi), decimals)


@pytest.mark.parametrize("x, seed", [(15.0, 1), (2.0, 2), (-4.0, 3), (30.0, 4)])
def test_clipped_rounded_laplace_fits_the_sampler(x, seed):
    # Domain [0, 30], ε = 2: scale 15, so the point masses at 0 and 30 are large.
    lo, hi, eps = 0.0, 30.0, 2
    draws = published(x, 40_000, epsilon=eps, lo=lo, hi=hi, decimals=0, seed=seed)
    support = np.arange(0, 31, dtype=float)
    counts = np.array([(draws == v).sum() for v in support])
    assert counts.sum() == len(draws)  # nothing outside the support
    probs = np.exp(laplace_log_likelihood(support, x, epsilon=eps, lo=lo, hi=hi, decimals=0))
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert chisquare_p(counts, probs) > P_MIN
    wrong = np.exp(laplace_log_likelihood(support, x, epsilon=2.2, lo=lo, hi=hi, decimals=0))
    assert chisquare_p(counts, wrong / wrong.sum()) < P_MIN  # a 10% error in ε is seen


def test_two_decimals_with_point_masses_fit_the_sampler():
    # The published precision of PPMS-DP (0.01) on weight's domain, ε = 10 (scale 30), a true
    # weight of 8 kg: about 38% of the values are the point mass at 0.
    lo, hi, eps, x = 0.0, 300.0, 10, 8.0
    draws = published(x, 60_000, epsilon=eps, lo=lo, hi=hi, decimals=2, seed=11)
    grid = np.round(np.arange(0, 30_001) / 100, 2)
    probs = np.exp(laplace_log_likelihood(grid, x, epsilon=eps, lo=lo, hi=hi, decimals=2))
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    # cells: the point masses at 0 and 300, and 5-kg bins in between
    cell = np.where(grid == 0, 0, np.where(grid == 300, 61, 1 + np.minimum(grid // 5, 59)))
    expected = np.bincount(cell.astype(int), weights=probs, minlength=62)
    drawn = np.where(draws == 0, 0, np.where(draws == 300, 61, 1 + np.minimum(draws // 5, 59)))
    counts = np.bincount(drawn.astype(int), minlength=62)
    assert chisquare_p(counts, expected) > P_MIN
    # and the CDF of the continuous part by KS, given it is not clipped
    inner = draws[(draws > 0) & (draws < 300)]
    cdf = np.cumsum(probs) - probs[0]
    inner_cdf = cdf / cdf[-2]
    assert stats.kstest(inner, lambda v: np.interp(v, grid, inner_cdf)).pvalue > P_MIN


def test_interval_knowledge_fits_uniform_true_values():
    # The true value is uniform on [20, 40] (an adversary who knows "20-40"), partly outside
    # the domain [25, 60]: what is below is clipped to 25 first.
    lo, hi, eps = 25.0, 60.0, 3
    rng = np.random.default_rng(5)
    x = rng.uniform(20, 40, 40_000)
    draws = published(x, len(x), epsilon=eps, lo=lo, hi=hi, decimals=0, seed=12)
    support = np.arange(25, 61, dtype=float)
    counts = np.array([(draws == v).sum() for v in support])
    probs = np.exp(laplace_log_likelihood(support, 20.0, 40.0, epsilon=eps, lo=lo, hi=hi,
                                          decimals=0))
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert chisquare_p(counts, probs) > P_MIN
    point = np.exp(laplace_log_likelihood(support, 30.0, epsilon=eps, lo=lo, hi=hi, decimals=0))
    assert chisquare_p(counts, point) < P_MIN  # the midpoint is not the same distribution


@pytest.mark.parametrize("value, eps, seed", [("Middle Aged", 1, 21), ("Newborn", 4, 22),
                                             ("*", 2, 23)])
def test_exponential_over_the_hierarchy_fits_the_sampler(value, eps, seed):
    # PPMS-DP_all strict draws each case's age with utility -IL over every node (the sampler's
    # own full_tree_il), sensitivity 1.
    tax = mesh_age_tree()
    utility = -full_tree_il(tax)
    mech = ExponentialMechanism(epsilon=eps, sensitivity=1.0)
    noise = randomness(seed)
    u = tax.code_of[value]
    draws = np.array([mech.select(utility[u], noise) for _ in range(20_000)])
    counts = np.bincount(draws, minlength=len(tax))
    table = exponential_log_table(utility, epsilon=eps, sensitivity=1)
    assert chisquare_p(counts, np.exp(table[u])) > P_MIN
    # near-uniform at these ε: the power check is against the other normalization,
    # exp(ε·u/Δ) (monotonic) instead of the sampler's exp(ε·u/(2Δ))
    wrong = exponential_log_table(utility, epsilon=eps, sensitivity=1, monotonic=True)
    assert chisquare_p(counts, np.exp(wrong[u])) < P_MIN
