"""Built-in hierarchies: the MeSH age tree of the PPMS papers and the sex tree.

The age tree is the reconstruction of ``algorithms.md`` §1.8 (the appendix "The taxonomy tree of
Age" of Wang & Lin 2021 is not retrievable). It mirrors MeSH, where a broader age descriptor is an
age band of its own and the parent of narrower ones: ``Infant`` (1-23 months), ``Adult`` (25-44)
and ``Aged`` (65-79) are age bands and internal nodes. Height 3 (``* > Nonadult > Child >
Preschool``), which reproduces Example 5 of 001 and Example 2 of 000.

Self leaves (issue 20). Before, the bands were the internal nodes themselves, so an
ungeneralized ``Adult`` (25-44) was published with the same label as ``Adult`` generalized from
``Young Adult`` (any age 19-150): a reader could not tell them apart, information loss charged the
ungeneralized record, and clustering mixed the bands as if they were free. Each band is now a leaf
of its own under its node, labelled with the band (``Infant (1-23 months)``, ``Adult (25-44)``,
``Aged (65-79)``; :class:`~medanon.hierarchies.Taxonomy` calls them self leaves), and
:func:`age_to_mesh` returns these labels. The plain labels stay raw aliases of the bands
(:meth:`Taxonomy.record_labels`), so data and stores written with the old labels still load. The
height is unchanged (a self leaf sits beside its node's other children).

``Child`` is the MeSH descriptor for 6-12 years, the band this tree calls ``In-school`` (000's
name, which :func:`age_to_mesh` returns). So ``Child`` has no band leaf of its own: a raw ``Child``
is read as ``In-school``, and a published ``Child`` is always the generalization (2-12 years).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from ..errors import HierarchyError, InternalError, ValidationError
from .taxonomy import Taxonomy

__all__ = ["mesh_age_tree", "age_to_mesh", "mesh_age_band", "sex_tree", "BUILTIN_HIERARCHIES",
           "MAX_AGE_YEARS", "FAERS_AGE_GROUP_LEAVES", "faers_age_group", "mesh_leaf_of_faers_age_group"]

# Ages above this are data errors, not very old patients (the oldest verified human: 122 y).
MAX_AGE_YEARS = 150.0

_MESH_AGE_PARENTS: dict[str, str | None] = {
    "*": None,
    "Nonadult": "*",
    "Infant": "Nonadult",
    "Newborn": "Infant",
    "Infant (1-23 months)": "Infant",
    "Child": "Nonadult",
    "Preschool": "Child",
    "In-school": "Child",
    "Adolescent": "Nonadult",
    "Adult": "*",
    "Young Adult": "Adult",
    "Adult (25-44)": "Adult",
    "Middle Aged": "Adult",
    "Aged": "Adult",
    "Aged (65-79)": "Aged",
    "Aged, 80 and over": "Aged",
}

# The MeSH descriptors that are age bands and internal nodes, and the leaf that holds the band;
# their own labels are raw aliases of these leaves (see the module docstring).
_MESH_SELF_LEAVES = {"Infant": "Infant (1-23 months)", "Child": "In-school",
                     "Adult": "Adult (25-44)", "Aged": "Aged (65-79)"}

# Lower edges (years) of the bands after Newborn, for searchsorted(side="right"): an age equal to
# an edge falls in the band that starts there. From 2 years on, bands are whole years, so
# 5.9 is still Preschool and 6.0 In-school.
_AGE_EDGES = np.array([1 / 12, 2, 6, 13, 19, 25, 45, 65, 80], dtype=np.float64)
_AGE_LABELS = np.array(["Newborn", "Infant (1-23 months)", "Preschool", "In-school", "Adolescent",
                        "Young Adult", "Adult (25-44)", "Middle Aged", "Aged (65-79)",
                        "Aged, 80 and over"], dtype=object)


@cache
def mesh_age_tree() -> Taxonomy:
    """The MeSH age tree (``algorithms.md`` §1.8), named ``"mesh-age"``, root ``*``.

    Values are the ten leaves, the bands :func:`age_to_mesh` returns. ``Infant``, ``Child``,
    ``Adult`` and ``Aged`` are internal nodes only; as raw labels they stand for the leaves
    ``Infant (1-23 months)``, ``In-school``, ``Adult (25-44)`` and ``Aged (65-79)``
    (:meth:`Taxonomy.record_labels`). Height 3. The tree is immutable, so one instance is shared.
    """
    return Taxonomy(_MESH_AGE_PARENTS, name="mesh-age", self_leaves=_MESH_SELF_LEAVES)


#: The FAERS DEMO ``age_grp`` codes (N neonate, I infant, C child, T adolescent, A adult,
#: E elderly) and the leaves of the MeSH age tree each one stands for. FDA's notes on the FAERS
#: files give the codes no age limits; they are read as the MeSH descriptors they are named after:
#: N = Newborn (< 1 month), I = 1-23 months, C = 2-12 years, T = 13-18, A = 19-64, E = 65 and
#: over. FDA's pediatric cohorts (and its own coders) put the edges one year lower at C/T (12 is
#: an adolescent) and T/A (18 is an adult), and end the neonate at 28 days: a report read back
#: from a FAERS file is exact only to those edges (``docs/faers-export.md``).
FAERS_AGE_GROUP_LEAVES: dict[str, tuple[str, ...]] = {
    "N": ("Newborn",),
    "I": ("Infant (1-23 months)",),
    "C": ("Preschool", "In-school"),
    "T": ("Adolescent",),
    "A": ("Young Adult", "Adult (25-44)", "Middle Aged"),
    "E": ("Aged (65-79)", "Aged, 80 and over"),
}


def faers_age_group(label: str) -> str | None:
    """The FAERS ``age_grp`` code of a node of :func:`mesh_age_tree`, or None when the node's
    leaves fall in several groups (``*``, ``Nonadult``, ``Infant`` = N + I, ``Adult`` = A + E).

    A raw alias (``Child``, ``Aged``) is read as the node, whose leaves all fall in one group
    either way. See :data:`FAERS_AGE_GROUP_LEAVES`.

    Raises:
        HierarchyError: ``label`` is not a node of the MeSH age tree.
    """
    return _per_mesh_node(_faers_age_groups(), label)


def mesh_leaf_of_faers_age_group(code: str) -> str | None:
    """The MeSH age leaf a FAERS ``age_grp`` code stands for, when it stands for exactly one
    (N, I, T); None for C, A, E (several leaves each: raw records hold leaves only) and for any
    other code. Case and surrounding spaces are ignored."""
    leaves = FAERS_AGE_GROUP_LEAVES.get(code.strip().upper(), ()) if isinstance(code, str) else ()
    return leaves[0] if len(leaves) == 1 else None


@cache
def _faers_age_groups() -> dict[str, str | None]:
    tree = mesh_age_tree()
    group_of_leaf = {leaf: code for code, leaves in FAERS_AGE_GROUP_LEAVES.items() for leaf in leaves}
    if set(group_of_leaf) != set(tree.leaves):  # pragma: no cover - the table covers the tree
        raise InternalError("FAERS_AGE_GROUP_LEAVES must name every leaf of the MeSH age tree once")
    out: dict[str, str | None] = {}
    for node in tree.nodes:
        groups = {group_of_leaf[leaf] for leaf in tree.leaves if tree.covers(node, leaf)}
        out[node] = groups.pop() if len(groups) == 1 else None
    return out


@cache
def sex_tree() -> Taxonomy:
    """The sex tree ``* > F, M`` (height 1), named ``"sex"``."""
    return Taxonomy({"*": None, "F": "*", "M": "*"}, name="sex")


def age_to_mesh(years: Any) -> Any:
    """Map raw ages in years to values of :func:`mesh_age_tree`.

    ===================  ======================
    age (years)          value
    ===================  ======================
    < 1/12 (one month)   ``Newborn``
    < 2                  ``Infant (1-23 months)``
    2 to 5               ``Preschool``
    6 to 12              ``In-school``
    13 to 18             ``Adolescent``
    19 to 24             ``Young Adult``
    25 to 44             ``Adult (25-44)``
    45 to 64             ``Middle Aged``
    65 to 79             ``Aged (65-79)``
    >= 80                ``Aged, 80 and over``
    ===================  ======================

    Bands from 2 years on hold whole years: 18.99 is ``Adolescent``, 19 ``Young Adult``.

    Args:
        years: A number, or an array-like (list, numpy array, pandas Series) of numbers;
            NaN/None mark missing ages.

    Returns:
        A label (``None`` for a missing age) for a scalar, else an object ndarray of the same
        shape with ``None`` where the age is missing.

    Raises:
        ValidationError: a value is not numeric, negative, or above 150 years.
    """
    scalar = np.ndim(years) == 0
    try:
        a = np.asarray(years, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(
            f"The 'years' parameter of age_to_mesh must hold numbers (NaN for missing); got "
            f"{_preview(years)}.") from None
    missing = np.isnan(a)
    bad = ~missing & ((a < 0) | (a > MAX_AGE_YEARS))
    if bad.any():
        shown = ", ".join(f"{x:g}" for x in a[bad].ravel()[:5])
        raise ValidationError(
            f"The 'years' parameter of age_to_mesh must hold ages from 0 to "
            f"{MAX_AGE_YEARS:g} years (NaN for missing); got {int(bad.sum())} value(s) outside: "
            f"{shown}.")
    idx = np.searchsorted(_AGE_EDGES, np.where(missing, 0.0, a).ravel(), side="right")
    out = _AGE_LABELS[idx]
    out[missing.ravel()] = None
    if scalar:
        return out[0]
    return out.reshape(a.shape)


def mesh_age_band(label: str) -> tuple[float, float]:
    """The age band, in years, that a node of :func:`mesh_age_tree` stands for.

    A leaf's band is the one :func:`age_to_mesh` maps into the label (``Adolescent`` =
    ``(13, 19)``, ``Adult (25-44)`` = ``(25, 45)``); an internal node stands for any value of its
    subtree, so its band is the union of the subtree's leaf bands, which is always one contiguous
    range: ``Adult`` = ``(19, 150)``, ``Nonadult`` = ``(0, 19)``, ``*`` = ``(0, 150)``.

    Args:
        label: A node of the MeSH age tree.

    Returns:
        ``(lo, hi)``: the node holds the ages ``lo <= a < hi``; a band that ends at
        :data:`MAX_AGE_YEARS` (150) includes it.

    Raises:
        HierarchyError: ``label`` is not a node of the MeSH age tree.
    """
    return _per_mesh_node(_mesh_age_bands(), label)


def _per_mesh_node(table: dict[str, Any], label: str) -> Any:
    """``table[label]`` for a node of the MeSH age tree, else HierarchyError naming it."""
    try:
        return table[label]
    except (KeyError, TypeError):  # TypeError: an unhashable label
        raise HierarchyError(f"{label!r} is not a node of hierarchy 'mesh-age'.") from None


@cache
def _mesh_age_bands() -> dict[str, tuple[float, float]]:
    lows = np.concatenate(([0.0], _AGE_EDGES))
    highs = np.concatenate((_AGE_EDGES, [MAX_AGE_YEARS]))
    own = {str(lab): (float(lo), float(hi)) for lab, lo, hi in zip(_AGE_LABELS, lows, highs)}
    tree = mesh_age_tree()
    bands: dict[str, tuple[float, float]] = {}
    for node in reversed(tree.nodes):  # children before parents
        parts = [bands[c] for c in tree.children(node)]
        if node in own:
            parts.append(own[node])
        parts.sort()
        for (_, hi), (lo, _) in zip(parts, parts[1:]):
            if lo != hi:  # pragma: no cover - the tables above are contiguous by construction
                raise InternalError(f"the MeSH age band of {node!r} has a gap at {hi} years")
        bands[node] = (parts[0][0], parts[-1][1])
    return bands


def _preview(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


BUILTIN_HIERARCHIES: dict[str, Callable[[], Taxonomy]] = {
    "mesh-age": mesh_age_tree,
    "sex": sex_tree,
}
"""Built-in hierarchies by name (the names a schema may give instead of an ARX file path)."""
