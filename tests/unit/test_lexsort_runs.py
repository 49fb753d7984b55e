"""The packed sorts of the grouping equal the lexsorts they replace (issue 43)."""

import numpy as np
import pytest

from medanon.anonymize.clustering import (_least_per_row, _lexsorted_runs, _packed_runs,
                                           lexsort_runs)


@pytest.mark.parametrize("seed", range(20))
def test_packed_runs_equal_lexsort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    columns = [rng.integers(-3, 4, n),
               rng.choice([-0.0, 0.0, 1.5, -2.25, 7.0], n),
               rng.integers(0, 2, n).astype(bool),
               rng.integers(0, 5, n).astype(np.uint8),
               rng.choice([0.1, 0.2, 0.30000000000000004, 0.3], n)]
    picked = [columns[j] for j in rng.permutation(len(columns))[:int(rng.integers(1, 6))]]
    packed = _packed_runs(picked)
    assert packed is not None
    expected = _lexsorted_runs(picked)
    assert np.array_equal(packed[0], expected[0])
    assert np.array_equal(packed[1], expected[1])


def test_lexsort_runs_falls_back():
    # a NaN, or keys too wide for one int64: the lexsort itself
    with_nan = [np.array([1.0, np.nan, 0.5, np.nan]), np.array([2, 1, 2, 1])]
    assert _packed_runs(with_nan) is None
    wide = [np.array([0, 1 << 40, 5]), np.array([0, 1 << 40, 7])]
    assert _packed_runs(wide) is None
    for columns in (with_nan, wide):
        order, change = lexsort_runs(columns)
        expected = _lexsorted_runs(columns)
        assert np.array_equal(order, expected[0])
        assert np.array_equal(change, expected[1])


@pytest.mark.parametrize("seed", range(20))
def test_least_per_row_equals_lexsort_first(seed):
    rng = np.random.default_rng(seed)
    n, rows = int(rng.integers(1, 300)), int(rng.integers(1, 20))
    rr = rng.integers(0, rows, n)
    key = rng.choice([0.0, -0.0, 1.0, 2.5, 3.0], n)
    pr = rng.choice([1.0, 1.5, 2.0], n)
    gg = rng.integers(0, 6, n)
    o = np.lexsort((gg, pr, key, rr))
    ro = rr[o]
    expected = o[np.r_[True, ro[1:] != ro[:-1]]]
    found = _least_per_row(rr, key, pr, gg, rows)
    assert np.array_equal(found[np.argsort(rr[found])], expected)
