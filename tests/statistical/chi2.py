"""Shared helpers of the statistical tests."""

from __future__ import annotations

import numpy as np
from scipy import stats


def chisquare_p(observed, expected_probs, min_expected: float = 5.0) -> float:
    """Chi-square p-value after pooling cells with small expected counts into their neighbour."""
    observed = np.asarray(observed, dtype=float)
    expected = np.asarray(expected_probs, dtype=float) * observed.sum()
    obs_cells, exp_cells, o_acc, e_acc = [], [], 0.0, 0.0
    for o, e in zip(observed, expected):
        o_acc, e_acc = o_acc + o, e_acc + e
        if e_acc >= min_expected:
            obs_cells.append(o_acc)
            exp_cells.append(e_acc)
            o_acc = e_acc = 0.0
    obs_cells[-1] += o_acc
    exp_cells[-1] += e_acc
    exp_cells = np.array(exp_cells) * (sum(obs_cells) / sum(exp_cells))
    return stats.chisquare(obs_cells, exp_cells).pvalue
