"""Statistical tests of ClinSimRR's block mechanism: the sampler follows Eqs. 6–7 and the frequency
estimator (003 §4.2) is unbiased. Fixed seeds; significance 1e-3 unless stated."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from medanon.mechanisms.block_rr import UNPROTECTED, BlockRandomizedResponse
from medanon.random import randomness

ALPHA = 1e-3


def ring_blocks(m: int, b: int) -> np.ndarray:
    return (np.arange(m)[:, None] + np.arange(b)[None, :]) % m


def output_histogram(mech: BlockRandomizedResponse, x: int, n: int, seed: int) -> np.ndarray:
    out = mech.randomise(np.full(n, x), randomness(seed))
    # bins: protected outputs 0..m-1, then "kept" (UNPROTECTED)
    return np.bincount(np.where(out == UNPROTECTED, mech.m, out), minlength=mech.m + 1)


@pytest.mark.parametrize("x", [0, 4, UNPROTECTED])
def test_outputs_follow_the_probability_matrix(x):
    mech = BlockRandomizedResponse(epsilon=1.0, blocks=ring_blocks(8, 3))
    n = 40_000
    counts = output_histogram(mech, x, n, seed=11 + x)
    p = mech.probability_matrix()[x if x >= 0 else -1]
    expected = np.append(p, 1 - p.sum()) * n
    keep = expected > 0
    assert counts[~keep].sum() == 0
    assert stats.chisquare(counts[keep], expected[keep]).pvalue > ALPHA


def test_a_wrong_p_t_is_detected():
    """The same χ² test rejects the sampler's output against a mechanism with another ε."""
    mech = BlockRandomizedResponse(epsilon=1.0, blocks=ring_blocks(8, 3))
    other = BlockRandomizedResponse(epsilon=1.3, blocks=ring_blocks(8, 3))
    counts = output_histogram(mech, 0, 40_000, seed=5)
    p = other.probability_matrix()[0] * 40_000
    assert stats.chisquare(counts[:8], p).pvalue < ALPHA


@pytest.mark.parametrize("b", [1, 3])
def test_frequency_estimator_is_unbiased(b):
    """Mean estimate over repeated releases of a fixed population ≈ the true shares."""
    m, n_unprotected = 10, 3
    mech = BlockRandomizedResponse(epsilon=1.0, blocks=ring_blocks(m, b))
    rng = np.random.default_rng(3)
    truth_counts = rng.multinomial(5_000, rng.dirichlet(np.ones(m + n_unprotected)))
    population = np.concatenate([np.full(c, i) for i, c in enumerate(truth_counts[:m])]
                                + [np.full(c, UNPROTECTED) for c in truth_counts[m:]])
    labels = np.concatenate([np.full(c, -1) for c in truth_counts[:m]]
                            + [np.full(c, j) for j, c in enumerate(truth_counts[m:])])
    runs = 300
    estimates = np.empty((runs, m + n_unprotected))
    noise = randomness(17)
    for r in range(runs):
        out = mech.randomise(population, noise)
        prot = np.bincount(out[out >= 0], minlength=m)
        kept = np.bincount(labels[out == UNPROTECTED], minlength=n_unprotected)
        est_p, est_u = mech.estimate_frequencies(prot, kept)
        estimates[r] = np.concatenate([est_p, est_u])
    truth = truth_counts / truth_counts.sum()
    mean = estimates.mean(axis=0)
    se = estimates.std(axis=0, ddof=1) / np.sqrt(runs)
    z = (mean - truth) / se
    # Bonferroni over the 13 shares at the 1e-3 level.
    assert np.abs(z).max() < stats.norm.ppf(1 - ALPHA / (2 * len(z)))
