"""The block mechanism of ClinSimRR (003 Eqs. 6–7, Algorithm 1) and its uRR special case."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from medanon.errors import ValidationError
from medanon.mechanisms.block_rr import UNPROTECTED, BlockRandomizedResponse, clip_and_normalize
from medanon.random import randomness


def ring_blocks(m: int, b: int) -> np.ndarray:
    """B_i = {i, i+1, ..., i+b-1} mod m: every element in b blocks, an invertible design for most m."""
    return (np.arange(m)[:, None] + np.arange(b)[None, :]) % m


def max_ratio_over_protected_outputs(mech: BlockRandomizedResponse) -> float:
    """max over every pair of input rows and every protected output of P(y|x)/P(y|x')."""
    p = mech.probability_matrix()
    worst = 0.0
    for i, j in itertools.product(range(p.shape[0]), repeat=2):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(p[j] > 0, p[i] / p[j], np.where(p[i] > 0, np.inf, 1.0))
        worst = max(worst, float(ratio.max()))
    return worst


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 2.5, 5.0])
@pytest.mark.parametrize("m,b", [(2, 1), (5, 1), (5, 2), (7, 3), (10, 10), (45, 4), (12, 11)])
def test_ldp_ratio_holds_for_every_pair_and_every_protected_output(epsilon, m, b):
    mech = BlockRandomizedResponse(epsilon=epsilon, blocks=ring_blocks(m, b))
    assert max_ratio_over_protected_outputs(mech) <= math.exp(epsilon) * (1 + 1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_ldp_ratio_is_tight_when_the_block_is_smaller_than_the_set(epsilon):
    mech = BlockRandomizedResponse(epsilon=epsilon, blocks=ring_blocks(9, 3))
    assert max_ratio_over_protected_outputs(mech) == pytest.approx(math.exp(epsilon), rel=1e-12)


def test_rows_are_distributions():
    mech = BlockRandomizedResponse(epsilon=1, blocks=ring_blocks(8, 3))
    p = mech.probability_matrix()
    np.testing.assert_allclose(p[:-1].sum(axis=1), 1.0, rtol=1e-12)
    assert p[-1].sum() == pytest.approx(mech.p_s)          # the rest keeps the unprotected input
    assert 0 < mech.p_s <= 1


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("m", [2, 10, 45])
def test_block_size_one_is_urr(epsilon, m):
    """Spec §4.1: c1 = e^ε/(m+e^ε-1), c2 = 1/(m+e^ε-1), c3 = (e^ε-1)/(m+e^ε-1)."""
    mech = BlockRandomizedResponse(epsilon=epsilon, blocks=np.arange(m)[:, None])
    e = math.exp(epsilon)
    c1, c2, c3 = e / (m + e - 1), 1 / (m + e - 1), (e - 1) / (m + e - 1)
    p = mech.probability_matrix()
    np.testing.assert_allclose(np.diag(p[:-1]), c1, rtol=1e-12)
    off = p[:-1][~np.eye(m, dtype=bool)]
    np.testing.assert_allclose(off, c2, rtol=1e-12)
    np.testing.assert_allclose(p[-1], c2, rtol=1e-12)       # unprotected input -> any protected output
    assert 1 - mech.p_s == pytest.approx(c3, rel=1e-12)    # unprotected input kept


def test_algorithm_1_parameters():
    m, b, epsilon = 45, 4, 1.0
    mech = BlockRandomizedResponse(epsilon=epsilon, blocks=ring_blocks(m, b))
    e = math.exp(epsilon)
    p_t = e * b / (m - b + e * b)
    p_s = m / e * max(p_t / b, (1 - p_t) / (m - b))
    assert mech.p_t == pytest.approx(p_t, rel=1e-12)
    assert mech.p_s == pytest.approx(p_s, rel=1e-12)
    assert mech.p_s == pytest.approx(m / (m - b + e * b), rel=1e-12)     # spec §4.4's closed form


def test_block_equal_to_the_set_is_uniform():
    mech = BlockRandomizedResponse(epsilon=2, blocks=ring_blocks(6, 6))
    assert mech.p_t == 1.0
    np.testing.assert_allclose(mech.probability_matrix()[:-1], 1 / 6)
    out = mech.randomise(np.zeros(600, dtype=int), randomness(1))
    assert set(out.tolist()) == set(range(6))


def test_plain_rr_keeps_unprotected_inputs():
    mech = BlockRandomizedResponse(epsilon=1, blocks=np.arange(5)[:, None], randomize_unprotected=False)
    assert mech.p_s == 0
    out = mech.randomise(np.full(1000, UNPROTECTED), randomness(2))
    assert (out == UNPROTECTED).all()
    assert max_ratio_over_protected_outputs(mech) == math.inf     # not LDP against unprotected inputs


def test_outputs_of_protected_inputs_stay_protected_and_unprotected_may_be_kept():
    mech = BlockRandomizedResponse(epsilon=0.5, blocks=ring_blocks(7, 2))
    x = np.array([0, 1, 2, 3, 4, 5, 6, UNPROTECTED] * 500)
    out = mech.randomise(x, randomness(3))
    assert (out[x >= 0] >= 0).all()
    assert (out[x < 0] == UNPROTECTED).any() and (out[x < 0] >= 0).any()


def test_same_seed_same_output():
    mech = BlockRandomizedResponse(epsilon=1, blocks=ring_blocks(10, 3))
    x = np.arange(-1, 10).repeat(50)
    a = mech.randomise(x, randomness(7))
    b = mech.randomise(x, randomness(7))
    assert np.array_equal(a, b)


@pytest.mark.parametrize("blocks,match", [
    (np.array([[1], [0]]), "contains i"),
    (np.array([[0, 0], [1, 0]]), "repeated"),
    (np.array([[0, 5], [1, 0]]), "out-of-range"),
    (np.zeros((0, 1), dtype=int), "m >= 1"),
    (np.array([[0.0], [1.0]]), "integer"),
])
def test_malformed_blocks_are_refused(blocks, match):
    with pytest.raises(ValidationError, match=match):
        BlockRandomizedResponse(epsilon=1, blocks=blocks)


def test_bad_epsilon_and_inputs():
    with pytest.raises(ValidationError, match="epsilon"):
        BlockRandomizedResponse(epsilon=0, blocks=ring_blocks(3, 1))
    mech = BlockRandomizedResponse(epsilon=1, blocks=ring_blocks(3, 1))
    with pytest.raises(ValidationError, match="inputs"):
        mech.randomise(np.array([3]), randomness(1))


def test_probabilities_match_the_matrix():
    mech = BlockRandomizedResponse(epsilon=1.5, blocks=ring_blocks(6, 2))
    p = mech.probability_matrix()
    x = np.array([0, 3, 5, UNPROTECTED])
    y = np.array([1, 2, 5, 0])
    expected = [p[0, 1], p[3, 2], p[5, 5], p[-1, 0]]
    np.testing.assert_allclose(mech.probabilities(x, y), expected)


def test_estimator_inverts_the_expected_counts_exactly():
    """Feeding E[counts] to the estimator returns the true distribution (linear inversion).

    Ring blocks of size 3 give an invertible design when 3 does not divide m."""
    m, b = 8, 3
    mech = BlockRandomizedResponse(epsilon=1, blocks=ring_blocks(m, b))
    rng = np.random.default_rng(0)
    truth = rng.dirichlet(np.ones(m + 4))                    # 8 protected + 4 unprotected codes
    p = mech.probability_matrix()
    n = 1e6
    expected_protected = n * (truth[:m] @ p[:-1] + truth[m:].sum() * p[-1])
    expected_unprotected = n * truth[m:] * (1 - mech.p_s)
    est_p, est_u = mech.estimate_frequencies(expected_protected, expected_unprotected)
    np.testing.assert_allclose(est_p, truth[:m], atol=1e-12)
    np.testing.assert_allclose(est_u, truth[m:], atol=1e-12)


def test_urr_estimator_is_the_closed_form_of_spec_4_2():
    m, epsilon = 5, 1.0
    mech = BlockRandomizedResponse(epsilon=epsilon, blocks=np.arange(m)[:, None])
    counts_p = np.array([30, 10, 5, 5, 50.0])
    counts_u = np.array([400, 500.0])
    n = counts_p.sum() + counts_u.sum()
    e = math.exp(epsilon)
    est_p, est_u = mech.estimate_frequencies(counts_p, counts_u)
    np.testing.assert_allclose(est_p, ((m + e - 1) * counts_p / n - 1) / (e - 1), rtol=1e-10)
    np.testing.assert_allclose(est_u, (m + e - 1) * counts_u / n / (e - 1), rtol=1e-10)


def test_clip_and_normalize():
    a, b = clip_and_normalize(np.array([0.5, -0.1]), np.array([0.7]))
    np.testing.assert_allclose(np.concatenate([a, b]), [0.5 / 1.2, 0.0, 0.7 / 1.2])
