"""Publishing perturbed hierarchy labels at a level chosen from ε: the label's distribution,
and the level rule.

PPMS-DP_all's strict variant perturbs each categorical QID per case with the exponential
mechanism over every node of the public hierarchy (utility −IL, Δ = 1): the probability
P_ε(v | u) of publishing node v for true node u is a function of ε and the tree only
(:func:`hierarchy_log_table`). At small ε it is close to uniform, so most published labels
contradict the truth (issue 22: 76% of MeSH age labels at ε = 1), and a stratified analysis
reads the reports of one stratum in another.

Two ways to publish a label at depth L (``mechanism=``), both ε-DP per case:

``"exponential"`` — coarsening (post-processing of 000's draw)
    Publish c_L(v), the ancestor of the perturbed label v at depth L (v itself when it is no
    deeper). A deterministic function of the privatized value of each case alone is
    post-processing: the release stays ε-DP with the same ε. Its distribution is

        P_{ε,L}(w | u) = Σ_{v : c_L(v) = w} P_ε(v | u)

``"randomized-response"`` — a coarser output domain (beyond 000)
    The output domain is the root and the level-L cut K_L of the tree (the nodes at depth L and
    the leaves above it; m_L of them), chosen without the data. The true value becomes a node
    of that domain: the root for a missing value, its ancestor on the cut, or, for a value
    between them, one of the cut nodes under it drawn uniformly. That node goes through k-ary
    randomized response over the m_L + 1 labels (kept with p = e^ε/(e^ε + m_L), else one of the
    others uniformly), whose rows differ by at most e^ε; the mixture for a value between the
    root and the cut is a mean of such rows, so every pair of inputs stays within e^ε. The root
    is in the domain so that a missing value mostly stays missing: without it, RR would have
    to give every missing age a band, and half of the (mostly adult) cases without an age
    would land among the children. At L = 0 (the root only) the draw is made on the first
    level with two nodes and published as the root (post-processing).

    RR spends ε on the labels the steward publishes; the exponential mechanism spends it over
    all nodes with weights exp(−ε·IL/2), IL in [0, 1], so the worst-case probability of a
    consistent label at L = 1 on the MeSH age tree is 0.55 at ε = 1 and 0.92 at ε = 10, where
    RR over {*, Nonadult, Adult} gives (e^ε + 1)/(e^ε + 2) = 0.78 and 0.99995.

**Consistency.** A published label w is *consistent* with the true node u when one covers the
other (w is u, an ancestor of u — generalized — or a descendant of u); otherwise it contradicts
u. C_L(u) is the probability that the published label is consistent with u, and the worst case
over the possible true values is C_L = min over the non-root nodes u of C_L(u) (a missing value
is the root, which every label is consistent with). C_0 = 1 (only the root is published), and
C_L does not increase with L for either mechanism (an ancestor of a label consistent with u is
still consistent with u; RR's C_L is (e^ε + 1)/(e^ε + m_L), kept or the root, and the cut
grows with L).

**The level rule.** Given a confidence c in (0, 1], a QID is published at the finest L with
C_L >= c. It reads ε, the hierarchy, the mechanism and c only — never the data — so two
neighbouring inputs get the same level and the choice costs no privacy.

Everything here is a pure function of public parameters; the anonymizer (which applies the
rule and draws) and the attacks (which weigh candidates with :func:`published_log_table`) both
call it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import _fail, check_choice
from ..errors import ValidationError
from .likelihood import exponential_log_table, hierarchy_information_loss
from .randomized_response import RandomizedResponse

__all__ = ["LABEL_MECHANISMS", "ancestor_at_level", "check_confidence", "consistent_pairs",
           "draw_level", "finest_level", "hierarchy_log_table", "label_consistency",
           "level_cut", "published_log_table", "rr_domain"]

#: how a perturbed categorical QID is drawn and published (see the module docstring)
LABEL_MECHANISMS = ("exponential", "randomized-response")


def _tree(parent: Any, depth: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    parent = np.asarray(parent, dtype=np.int64)
    depth = np.asarray(depth, dtype=np.int64)
    if parent.ndim != 1 or parent.size == 0 or depth.shape != parent.shape:
        raise ValidationError(f"The 'parent' and 'depth' parameters of {owner} must be non-empty "
                              f"arrays of the same length (a Taxonomy's parent_array and "
                              f"depth_array).")
    return parent, depth


def _check_level(level: Any, owner: str) -> int:
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 0:
        raise _fail("level", owner, "an integer >= 0 (a depth of the hierarchy; 0 is the root)",
                    level)
    return int(level)


def check_confidence(value: Any, *, owner: str, name: str = "confidence") -> float:
    """A confidence in (0, 1] as a float (bools, strings and non-finite numbers refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise _fail(name, owner, "a number in (0, 1] (e.g. 0.99)", value)
    x = float(value)
    if not (math.isfinite(x) and 0.0 < x <= 1.0):
        raise _fail(name, owner, "a number in (0, 1] (e.g. 0.99)", value)
    return x


def ancestor_at_level(parent: Any, depth: Any, level: int) -> np.ndarray:
    """c_L per node code: the node's ancestor at depth ``level`` (itself when no deeper).

    Args:
        parent: Each node's parent code (−1 for the root): ``Taxonomy.parent_array``.
        depth: Each node's depth (root 0): ``Taxonomy.depth_array``.
        level: The published level L (a level at or below the tree's height keeps every node).
    """
    parent, depth = _tree(parent, depth, "ancestor_at_level")
    level = _check_level(level, "ancestor_at_level")
    out = np.arange(parent.size)
    while True:
        deeper = depth[out] > level
        if not deeper.any():
            return out
        out = np.where(deeper, parent[out], out)


def level_cut(parent: Any, depth: Any, level: int) -> np.ndarray:
    """K_L: the codes of the nodes at depth ``level`` and of the leaves above it, in code
    order (the labels a level-L release can show; an antichain covering every leaf)."""
    parent, depth = _tree(parent, depth, "level_cut")
    level = _check_level(level, "level_cut")
    leaf = np.ones(parent.size, dtype=bool)
    leaf[parent[parent >= 0]] = False
    return np.flatnonzero((depth == level) | (leaf & (depth < level)))


def draw_level(parent: Any, depth: Any, level: int) -> int:
    """The level randomized response draws on for published level ``level``: ``level`` itself,
    or for the root (and a chain of single children) the first level with two nodes."""
    parent, depth = _tree(parent, depth, "draw_level")
    level = _check_level(level, "draw_level")
    draw = level
    while level_cut(parent, depth, draw).size < 2:
        if draw >= int(depth.max()):  # the leaves: no finer cut exists
            break
        draw += 1
    else:
        return draw
    raise ValidationError("Randomized response over a hierarchy needs a level with at least two "
                          "labels; this hierarchy has none.")


def consistent_pairs(parent: Any, depth: Any) -> np.ndarray:
    """[u, w]: whether node w is consistent with node u (one of them covers the other)."""
    parent, depth = _tree(parent, depth, "consistent_pairs")
    n = parent.size
    height = int(depth.max())
    # ancestor[u, d]: u's ancestor at depth d (−1 below u's own depth)
    ancestor = np.full((n, height + 1), -1, dtype=np.int64)
    current = np.arange(n)
    for _ in range(height + 1):
        ok = current >= 0
        ancestor[np.flatnonzero(ok), depth[current[ok]]] = current[ok]
        current = np.where(ok, parent[np.maximum(current, 0)], -1)
    # w covers u  <=>  u's ancestor at w's depth is w
    covers = ancestor[:, depth] == np.arange(n)[None, :]     # [u, w]: w covers u
    return covers | covers.T


def hierarchy_log_table(parent: Any, depth: Any, epsilon: Any) -> np.ndarray:
    """log P_ε(v | u) of 000's strict perturbation: the exponential mechanism over every node
    with utility −IL(u, v) (φ over the whole tree), Δ = 1, not monotonic."""
    parent, depth = _tree(parent, depth, "hierarchy_log_table")
    utility = -hierarchy_information_loss(parent, depth)
    return exponential_log_table(utility, epsilon=epsilon, sensitivity=1)


def _coarsen(table: np.ndarray, parent: np.ndarray, depth: np.ndarray, level: int) -> np.ndarray:
    """Each column's probability moved to its level-``level`` ancestor (−inf elsewhere)."""
    to = ancestor_at_level(parent, depth, level)
    out = np.full(table.shape, -np.inf)
    for w in np.unique(to):
        cols = table[:, to == w]
        top = cols.max(axis=1, keepdims=True)
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            out[:, w] = (safe + np.log(np.exp(cols - safe).sum(axis=1, keepdims=True)))[:, 0]
    return out


def rr_domain(parent: Any, depth: Any, level: int) -> tuple[np.ndarray, np.ndarray]:
    """Randomized response's output domain for published level ``level``, and each node's
    input on it.

    Returns:
        ``(domain, inputs)``: the codes of the root and of the cut of :func:`draw_level`; and
        per node a row of probabilities over ``domain``: the root stays the root, a node at or
        below the cut is its ancestor on the cut, a node between them any cut node under it
        (uniformly).
    """
    parent, depth = _tree(parent, depth, "rr_domain")
    cut = level_cut(parent, depth, draw_level(parent, depth, level))
    root = np.flatnonzero(depth == 0)
    domain = np.concatenate([root, cut])
    inputs = consistent_pairs(parent, depth)[:, domain].astype(np.float64)
    inputs[:, 0] = 0.0
    inputs[root, :] = 0.0
    inputs[root, 0] = 1.0
    return domain, inputs / inputs.sum(axis=1, keepdims=True)


def _rr_table(parent: np.ndarray, depth: np.ndarray, level: int, epsilon: Any) -> np.ndarray:
    """log P(w | u) of randomized response for published level ``level`` (before the level-0
    cut; module docstring)."""
    domain, inputs = rr_domain(parent, depth, level)
    rr = RandomizedResponse(epsilon=epsilon, categories=domain.tolist()).probability_matrix()
    table = np.full((parent.size, parent.size), -np.inf)
    with np.errstate(divide="ignore"):
        table[:, domain] = np.log(inputs @ rr)
    return table


def published_log_table(parent: Any, depth: Any, epsilon: Any, *,
                        mechanism: str = "exponential", level: int | None = None) -> np.ndarray:
    """log P(published label w | true node u) for every pair (rows u, columns w; −inf for
    labels that are never published).

    Args:
        parent, depth: The hierarchy (``Taxonomy.parent_array``, ``depth_array``).
        epsilon: ε of the perturbation of one label.
        mechanism: One of :data:`LABEL_MECHANISMS`.
        level: The published level (None: 000's draw as it is; required for
            randomized response).
    """
    owner = "published_log_table"
    parent, depth = _tree(parent, depth, owner)
    mechanism = check_choice(mechanism, name="mechanism", owner=owner, choices=LABEL_MECHANISMS)
    if mechanism == "exponential":
        table = hierarchy_log_table(parent, depth, epsilon)
        return table if level is None else _coarsen(table, parent, depth,
                                                    _check_level(level, owner))
    if level is None:
        raise ValidationError(f"The 'level' parameter of {owner} is required for randomized "
                              f"response (its output domain is the level's cut).")
    level = _check_level(level, owner)
    return _coarsen(_rr_table(parent, depth, level, epsilon), parent, depth, level)


def label_consistency(published: Any, parent: Any, depth: Any) -> np.ndarray:
    """C(u) per true node u: the probability that the published label (log table
    ``published``, from :func:`published_log_table`) is consistent with u."""
    parent, depth = _tree(parent, depth, "label_consistency")
    table = np.exp(np.asarray(published, dtype=np.float64))
    return (table * consistent_pairs(parent, depth)).sum(axis=1)


def finest_level(parent: Any, depth: Any, epsilon: Any, confidence: Any, *,
                 mechanism: str = "exponential") -> tuple[int, float]:
    """The finest level L whose published labels are consistent with every possible true value
    (non-root node) with probability >= ``confidence``, and that worst-case probability.
    Level 0 (the root only) always qualifies.

    Raises:
        ValidationError: ``confidence`` is not a number in (0, 1]; an unknown ``mechanism``.
    """
    parent, depth = _tree(parent, depth, "finest_level")
    c = check_confidence(confidence, owner="finest_level")
    inner = depth > 0
    best, worst = 0, 1.0
    for level in range(1, int(depth.max()) + 1):
        table = published_log_table(parent, depth, epsilon, mechanism=mechanism, level=level)
        here = float(label_consistency(table, parent, depth)[inner].min())
        if here < c:  # C_L does not increase with L: no finer level qualifies either
            break
        best, worst = level, here
    return best, worst
