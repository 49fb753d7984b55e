"""Unit tests for paper 003's clinical information loss and KL divergence (algorithms.md §4.9)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from medanon.errors import ValidationError
from medanon.metrics.clinical import (clinical_information_loss,
                                      clinical_information_loss_by_patient, kl_divergence)


def zero_one(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.asarray(a) != np.asarray(b)).astype(float)


# p1: 3 elements, 1 changed → 1/3;  p2: 2 elements, both changed → 1;  p3: 1 element kept → 0
ORIG = ["A", "S", "B", "S", "C", "D"]
REL = ["A", "*", "B", "X", "*", "D"]
PATS = ["p1", "p1", "p1", "p2", "p2", "p3"]


def test_cil_hand_computed():
    per = clinical_information_loss_by_patient(ORIG, REL, PATS, dissimilarity=zero_one)
    assert list(per.index) == ["p1", "p2", "p3"]
    np.testing.assert_allclose(per.to_numpy(), [1 / 3, 1.0, 0.0])
    cil = clinical_information_loss(ORIG, REL, PATS, dissimilarity=zero_one)
    assert cil == pytest.approx((1 / 3 + 1.0 + 0.0) / 3)     # patients weigh the same


def test_cil_only_patients_mask_and_ids():
    sensitive_row = np.isin(ORIG, ["S"])                       # p1 and p2 hold S
    cil = clinical_information_loss(ORIG, REL, PATS, dissimilarity=zero_one,
                                    only_patients=sensitive_row)
    assert cil == pytest.approx((1 / 3 + 1.0) / 2)
    by_ids = clinical_information_loss(ORIG, REL, pd.Series(PATS), dissimilarity=zero_one,
                                       only_patients={"p2", "p3", "p9"})
    assert by_ids == pytest.approx(0.5)
    assert math.isnan(clinical_information_loss(ORIG, REL, PATS, dissimilarity=zero_one,
                                                only_patients=[]))
    with pytest.raises(ValidationError):
        clinical_information_loss(ORIG, REL, PATS, dissimilarity=zero_one,
                                  only_patients=np.array([True, False]))


def test_cil_calls_the_dissimilarity_on_distinct_pairs_and_checks_it():
    calls = []

    def graded(a, b):
        calls.append(len(a))
        return np.where(np.asarray(a) == np.asarray(b), 0.0, 0.25)

    orig = ["A", "A", "A", "B"]
    rel = ["B", "B", "A", "B"]
    cil = clinical_information_loss(orig, rel, [1, 1, 2, 2], dissimilarity=graded)
    assert calls == [3]                                        # (A,B), (A,A), (B,B)
    assert cil == pytest.approx((0.25 + 0.0) / 2)              # p1: A→B twice; p2: unchanged
    with pytest.raises(ValidationError):
        clinical_information_loss(orig, rel, [1, 1, 2, 2], dissimilarity=lambda a, b: np.ones(1))
    with pytest.raises(ValidationError):
        clinical_information_loss(orig, rel[:3], [1, 1, 2, 2], dissimilarity=graded)


def test_kl_identical_distributions_is_zero():
    codes = ["A", "B", "B", "C", "C", "C"]
    assert kl_divergence(codes, codes[::-1]) == pytest.approx(0.0, abs=1e-5)
    assert kl_divergence(codes, codes, smoothing=0) == 0.0


def test_kl_two_symbol_hand_case():
    # P = (3/4, 1/4); Q = (1/2, 1/2) without smoothing
    orig = ["A", "A", "A", "B"]
    rel = ["A", "B"]
    expected = 0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5)
    assert kl_divergence(orig, rel, smoothing=0) == pytest.approx(expected)
    assert kl_divergence(orig, rel) == pytest.approx(expected, rel=1e-5)
    # with α = 1: Q = ((1+1)/(2+2), (1+1)/(2+2)) → same; with a root symbol: |V| = 3
    rel_root = ["A", "B", "*", "*"]
    q_a = (1 + 1) / (4 + 3)
    q_b = (1 + 1) / (4 + 3)
    expected_root = 0.75 * math.log(0.75 / q_a) + 0.25 * math.log(0.25 / q_b)
    assert kl_divergence(orig, rel_root, smoothing=1.0) == pytest.approx(expected_root)
    assert kl_divergence(orig, rel_root) > kl_divergence(orig, rel) > 0


def test_kl_missing_symbol_and_validation():
    assert kl_divergence(["A", "B"], ["A"], smoothing=0) == math.inf
    assert math.isfinite(kl_divergence(["A", "B"], ["A"]))
    for bad in (-1.0, float("nan"), True):
        with pytest.raises(ValidationError):
            kl_divergence(["A"], ["A"], smoothing=bad)
    with pytest.raises(ValidationError):
        kl_divergence([], ["A"])
