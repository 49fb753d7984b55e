"""PPMS-DP_all's published labels against their claimed distribution (fixed seeds, χ²).

:func:`medanon.mechanisms.coarsening.published_log_table` claims the probability of each
published label for randomized response over a level's labels (issue 22); the attacks weigh
candidates with it and the level rule reads it. Here the anonymizer's own sampler produces the
labels, per kind of true value (a leaf below the level, a node between the root and the level,
a missing value), and the claimed probabilities must fit their frequencies; randomized response
at another ε must not.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from medanon.accounting import Accountant
from medanon.anonymize.ppms_dp import _randomized_labels
from medanon.hierarchies import mesh_age_tree
from medanon.mechanisms import NoiseSource
from medanon.mechanisms.coarsening import published_log_table
from medanon.random import randomness
from tests.statistical.chi2 import chisquare_p

P_MIN = 1e-4
AGE = mesh_age_tree()


def frequencies(label: str, level: int, epsilon, n: int, seed: int) -> np.ndarray:
    codes = np.full(n, AGE.code_of[label], dtype=np.int64)
    out = _randomized_labels(AGE, codes, Fraction(epsilon), level, NoiseSource(randomness(seed)),
                             accountant=Accountant(), target="age")
    return np.bincount(out, minlength=len(AGE.nodes))


@pytest.mark.parametrize("label, level, seed", [
    ("Middle Aged", 2, 1), ("Newborn", 2, 2),   # below or on the level: its ancestor there
    ("Adult", 2, 3),                            # between the root and the level: a uniform pick
    ("*", 2, 4), ("*", 1, 5),                   # missing: the root, in the domain
    ("Aged, 80 and over", 3, 6),
])
def test_randomized_response_labels_fit_the_claimed_table(label, level, seed):
    epsilon = 2
    counts = frequencies(label, level, epsilon, 20_000, seed)
    claimed = np.exp(published_log_table(AGE.parent_array, AGE.depth_array, epsilon,
                                         mechanism="randomized-response", level=level))
    row = claimed[AGE.code_of[label]]
    shown = row > 0
    assert counts[~shown].sum() == 0   # nothing outside the level's labels and the root
    assert chisquare_p(counts[shown], row[shown]) > P_MIN
    # ... and the test can fail: the table of another epsilon does not fit
    other = np.exp(published_log_table(AGE.parent_array, AGE.depth_array, 2.5,
                                       mechanism="randomized-response", level=level))
    assert chisquare_p(counts[shown], other[AGE.code_of[label]][shown]) < P_MIN
