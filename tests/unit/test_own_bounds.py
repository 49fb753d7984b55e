"""The method's own invariant check (``ClusteringMethod._check_own_bounds``) raises exactly
when a group has fewer than k anchors or a published term above its η = floor(θ·anchors):
compared with a count per (group, term) on random groupings (issue 43 looks up η only for
the pairs whose σ is above the least bound)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from medanon.anonymize.clustering import eta
from medanon.anonymize.ppms import PPMSPlusPlus
from medanon.errors import InternalError


def _naive(data, group_of, k, suppressed) -> str | None:
    placed = group_of >= 0
    anchors = Counter(int(g) for g, a in zip(group_of, data.anchor) if g >= 0 and a)
    groups = set(group_of[placed].tolist())
    if min(anchors.get(g, 0) for g in groups) < k:
        return "k"
    sigma: Counter = Counter()
    for r in np.flatnonzero(placed).tolist():
        dropped = set((suppressed or {}).get(r, ()))
        for t in data.term_ids[data.term_ptr[r]:data.term_ptr[r + 1]].tolist():
            if t not in dropped:
                sigma[(int(group_of[r]), t)] += 1
    if any(c > eta(float(data.theta[t]), anchors[g]) for (g, t), c in sigma.items()):
        return "theta"
    return None


@pytest.mark.parametrize("seed", range(40))
def test_own_bounds_raise_exactly_when_a_bound_is_broken(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, n_terms = int(rng.integers(10, 80)), int(rng.integers(4, 16))
    n_groups = int(rng.integers(1, 6))
    group_of = rng.integers(0, n_groups, n)
    group_of[rng.random(n) < 0.1] = -1
    group_of[: n_groups] = np.arange(n_groups)  # every group id on some row
    lengths = np.minimum(rng.integers(0, 3, n), n_terms)
    ptr = np.r_[0, np.cumsum(lengths)]
    ids = np.concatenate([np.sort(rng.choice(n_terms, size=m, replace=False))
                          for m in lengths.tolist()])
    theta = rng.choice([0.05, 0.2, 0.5, 0.6, 1.0] if seed % 3 else [0.6, 0.8, 1.0], n_terms)
    data = SimpleNamespace(n=n, anchor=rng.random(n) < 0.9, term_ptr=ptr,
                           term_ids=ids.astype(np.int64), theta=theta)
    suppressed = {int(r): tuple(ids[ptr[r]:ptr[r + 1]][:1].tolist())
                  for r in rng.choice(n, size=3, replace=False)} if seed % 2 else None
    k = int(rng.integers(1, 4))
    expected = _naive(data, group_of, k, suppressed)
    method = PPMSPlusPlus(k=2, theta="frequency")  # (the k checked is given)
    if expected is None:
        method._check_own_bounds(data, group_of, k, suppressed)
    else:
        with pytest.raises(InternalError, match="anchors < k" if expected == "k" else "theta"):
            method._check_own_bounds(data, group_of, k, suppressed)
