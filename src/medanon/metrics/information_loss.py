"""Information loss of a published release: NIL of paper 001 (Eqs. 1, 8, 9).

IL(g) = |g|·[Σ_i (max(N_i, g) − min(N_i, g)) / (max(N_i) − min(N_i)) + Σ_j h(C_j, g)/h(C_j)]
(001 Eq. 1, Byun et al.); NIL(g) = IL(g) / (|g|·|QID|) (Eq. 8); NIL(R) = the mean of NIL(g) over
the groups of R (Eq. 9; ``algorithms.md`` §1.5). Read from the published rows alone: a numeric
value ``[lo-hi]`` spans hi − lo, a categorical label has the height of its subtree; the ranges
max(N_i) − min(N_i) are taken over the release. An empty (missing) cell counts as fully
generalized. NIL lies in [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..hierarchies import Interval, Taxonomy


def _bounds(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    texts = column.fillna("").astype(str)
    uniques = texts.unique()
    parsed = {t: (Interval.parse(t) if t else None) for t in uniques}
    lo = np.array([parsed[t].lo if parsed[t] else np.nan for t in texts])
    hi = np.array([parsed[t].hi if parsed[t] else np.nan for t in texts])
    return lo, hi


def normalized_information_loss(rows: pd.DataFrame, qids: Sequence[tuple[str, str]],
                                hierarchies: Mapping[str, Taxonomy]) -> float:
    """NIL(R) of a release in the published format.

    Args:
        rows: release rows (``group`` plus the QID columns, as published strings).
        qids: ``(name, kind)`` pairs, kind ``"numeric"`` or ``"categorical"``.
        hierarchies: taxonomy of each categorical QID.
    """
    if not len(rows) or not qids:
        return 0.0
    loss = np.zeros(len(rows))
    for name, kind in qids:
        if kind == "numeric":
            lo, hi = _bounds(rows[name])
            span_all = np.nanmax(hi) - np.nanmin(lo) if np.isfinite(hi).any() else 0.0
            if span_all > 0:
                term = (hi - lo) / span_all
                loss += np.where(np.isnan(term), 1.0, term)
        else:
            tax = hierarchies[name]
            labels = rows[name].fillna("").astype(str).replace("", tax.root)
            if tax.height > 0:
                codes = tax.encode(labels.tolist())
                loss += np.asarray(tax.subtree_height_array, dtype=float)[codes] / tax.height
    per_group = pd.Series(loss / len(qids)).groupby(rows["group"].to_numpy()).first()
    return float(per_group.mean())
