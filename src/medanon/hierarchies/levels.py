"""Level hierarchies for full-domain generalization (the lattice of IPA and Incognito-style k-anonymity).

Full-domain generalization (Samarati/Sweeney; LeFevre, DeWitt and Ramakrishnan's Incognito, SIGMOD
2005) maps *every* value of an attribute to the same level of its hierarchy. A
:class:`LevelHierarchy` is therefore a table, not a tree: one row per leaf (a value that can occur
in the data) and one column per level, level 0 being the leaf itself and the last level the single
root ``*``. This is exactly ARX's hierarchy layout (``leaf;level1;...;*``), kept as is: a label that
repeats across levels (ARX padding) stays one label per level.

Everything is held as integer codes so that the lattice search runs on numpy arrays: ``maps[l]``
sends a leaf code to its code at level ``l``, ``labels[l]`` names the codes, and ``ncp[l]`` holds the
Normalized Certainty Penalty of each code (Xu et al., KDD 2006):

- categorical: 0 for a label covering one leaf, else (leaves covered) / (all leaves);
- numeric (integer values ``lo..hi``): a bin ``[a-b]`` costs (b − a) / (hi − lo), so a single value
  costs 0 and the root costs 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import HierarchyError

__all__ = ["LevelHierarchy", "ROOT", "numeric_levels", "categorical_levels"]

ROOT = "*"
#: the most integer leaves a numeric hierarchy may have (each one is a value of the domain)
MAX_NUMERIC_LEAVES = 1_000_000


@dataclass(frozen=True, eq=False)
class LevelHierarchy:
    """A full-domain generalization hierarchy over integer leaf codes.

    Attributes:
        name: The attribute it belongs to.
        kind: ``"numeric"`` (integer values ``lo..hi``) or ``"categorical"``.
        labels: ``labels[l][c]`` is the label of code ``c`` at level ``l``; ``labels[0]`` are the
            leaves and ``labels[-1] == ("*",)``.
        maps: ``maps[l][leaf]`` is the code at level ``l`` of leaf code ``leaf`` (``maps[0]`` is the
            identity).
        ncp: ``ncp[l][c]``, the NCP of code ``c`` at level ``l`` (in [0, 1]).
        low, high: numeric only: ``first[l][c]``/``last[l][c]`` are the smallest and largest leaf
            values a code covers (inclusive).
    """

    name: str
    kind: str
    labels: tuple[tuple[str, ...], ...]
    maps: tuple[np.ndarray, ...]
    ncp: tuple[np.ndarray, ...]
    lo: int | None = None
    hi: int | None = None
    first: tuple[np.ndarray, ...] = ()
    last: tuple[np.ndarray, ...] = ()
    _leaf_index: dict[str, int] = field(default_factory=dict, repr=False)
    _label_index: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._leaf_index.update({label: i for i, label in enumerate(self.labels[0])})
        for level in range(len(self.labels) - 1, -1, -1):  # lowest level wins for repeated labels
            for code, label in enumerate(self.labels[level]):
                self._label_index[label] = (level, code)

    # -- shape ----------------------------------------------------------------------------

    @property
    def levels(self) -> int:
        """Number of levels including the leaves and the root (a flat hierarchy has 2)."""
        return len(self.labels)

    @property
    def top(self) -> int:
        """The root's level (``levels - 1``)."""
        return len(self.labels) - 1

    @property
    def n_leaves(self) -> int:
        return len(self.labels[0])

    def size(self, level: int) -> int:
        """Number of distinct labels at ``level``."""
        return len(self.labels[level])

    def up(self, from_level: int, to_level: int) -> np.ndarray:
        """Codes at ``from_level`` → codes at ``to_level`` (``to_level >= from_level``)."""
        out = np.zeros(self.size(from_level), dtype=np.int32)
        out[self.maps[from_level]] = self.maps[to_level]
        return out

    # -- values ---------------------------------------------------------------------------

    def encode(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        """Leaf codes of ``values`` and a mask of the values that are not leaves of this hierarchy.

        Numeric values must be whole numbers in ``lo..hi``; categorical ones are matched as text.
        """
        if self.kind == "numeric":
            lo, hi = self._domain()
            x = np.asarray(values, dtype=float)
            ok = np.isfinite(x) & (x == np.floor(x)) & (x >= lo) & (x <= hi)
            codes = np.where(ok, x, lo).astype(np.int64) - lo
            return codes.astype(np.int32), ~ok
        codes = np.fromiter((self._leaf_index.get(str(v), -1) for v in values), dtype=np.int32)
        bad = codes < 0
        return np.where(bad, 0, codes).astype(np.int32), bad

    def locate(self, label: str) -> tuple[int, int]:
        """The (level, code) of a released label (a leaf, a generalized label or ``*``).

        Raises:
            HierarchyError: the label is not in this hierarchy.
        """
        found = self._label_index.get(str(label))
        if found is None and self.kind == "numeric":
            found = self._numeric_label(str(label))
        if found is None:
            raise HierarchyError(f"{label!r} is not a label of the hierarchy of {self.name!r}.")
        return found

    def _numeric_label(self, text: str) -> tuple[int, int] | None:
        try:
            value = float(text)
        except ValueError:
            return None
        lo, hi = self._domain()
        # nan and inf are not integers of the domain (and int() would raise on them).
        if math.isfinite(value) and value == int(value) and lo <= value <= hi:
            return 0, int(value) - lo
        return None

    def _domain(self) -> tuple[int, int]:
        """``(lo, hi)`` of a numeric hierarchy."""
        # numeric_levels, the one maker of kind="numeric", always sets both; only categorical
        # hierarchies leave them None, and callers ask for the domain of numeric ones only.
        assert self.lo is not None and self.hi is not None, "a numeric hierarchy has lo and hi"
        return self.lo, self.hi

    def covered_leaves(self, level: int, code: int) -> np.ndarray:
        """Leaf codes under ``code`` at ``level``."""
        return np.flatnonzero(self.maps[level] == code)

    def to_arx_rows(self) -> list[list[str]]:
        """One row per leaf, ``leaf, level1, ..., *`` (the manifest's hierarchy layout)."""
        return [[self.labels[level][int(self.maps[level][leaf])] for level in range(self.levels)]
                for leaf in range(self.n_leaves)]


def _ncp_categorical(maps: list[np.ndarray], n_leaves: int) -> tuple[np.ndarray, ...]:
    out = []
    for m in maps:
        covered = np.bincount(m, minlength=int(m.max()) + 1).astype(float)
        out.append(np.where(covered > 1, covered / n_leaves, 0.0))
    # The root is suppression: it costs 1 even when the domain has a single value, as the methods
    # score a starred row (otherwise a one-value dimension would make suppression free).
    out[-1] = np.ones_like(out[-1])
    return tuple(out)


def categorical_levels(name: str, rows: Sequence[Sequence[Any]]) -> LevelHierarchy:
    """A hierarchy from ARX-style rows ``[leaf, level1, ..., root]``.

    A root ``*`` column is appended when the last column is not already ``*`` for every row. Every
    label of a level must have a single label above it.

    Raises:
        HierarchyError: no rows, rows of different lengths, empty cells, a repeated leaf, or a
            label with two different parents.
    """
    if not rows:
        raise HierarchyError(f"The hierarchy of {name!r} has no rows.")
    table = [[str(cell).strip() for cell in row] for row in rows]
    width = len(table[0])
    for i, row in enumerate(table, start=1):
        if len(row) != width:
            raise HierarchyError(f"The hierarchy of {name!r}: row {i} has {len(row)} cells but "
                                 f"row 1 has {width}; every row needs the same levels.")
        if any(not cell for cell in row):
            raise HierarchyError(f"The hierarchy of {name!r}: row {i} has an empty cell.")
    if any(row[-1] != ROOT for row in table) or width == 1:
        table = [row + [ROOT] for row in table]
        width += 1
    leaves = [row[0] for row in table]
    if len(set(leaves)) != len(leaves):
        dup = sorted({x for x in leaves if leaves.count(x) > 1})
        raise HierarchyError(f"The hierarchy of {name!r} lists the leaf {dup[0]!r} twice.")
    labels: list[tuple[str, ...]] = []
    maps: list[np.ndarray] = []
    for level in range(width):
        column = [row[level] for row in table]
        index: dict[str, int] = {}
        for label in column:
            index.setdefault(label, len(index))
        labels.append(tuple(index))
        maps.append(np.fromiter((index[x] for x in column), dtype=np.int32, count=len(column)))
        if level:
            parent_of: dict[str, str] = {}
            for child, parent in zip((row[level - 1] for row in table), column):
                if parent_of.setdefault(child, parent) != parent:
                    raise HierarchyError(
                        f"The hierarchy of {name!r}: {child!r} (level {level - 1}) has two parents "
                        f"at level {level}, {parent_of[child]!r} and {parent!r}.")
    return LevelHierarchy(name=name, kind="categorical", labels=tuple(labels), maps=tuple(maps),
                          ncp=_ncp_categorical(maps, len(leaves)))


def _bin_label(a: int, b: int) -> str:
    return str(a) if a == b else f"[{a}-{b}]"


def numeric_levels(name: str, lo: int, hi: int, levels: Sequence[Sequence[int]]) -> LevelHierarchy:
    """A hierarchy over the integers ``lo..hi``: the values, then bins starting at ``levels[i]``.

    Each entry of ``levels`` lists the bin starts of one level (the first must be ``lo``); a bin
    runs to the next start minus one (the last to ``hi``), and is labelled ``[a-b]`` (or ``a``
    for a one-value bin). Each level's starts must be a subset of the previous level's, so bins
    nest. The root ``*`` is added on top.

    Raises:
        HierarchyError: a bad domain, unsorted starts, a first start other than ``lo``, a start
            outside the domain, or a level that does not nest in the one below.
    """
    if not (isinstance(lo, int) and isinstance(hi, int)) or lo >= hi:
        raise HierarchyError(f"The domain of {name!r} must be two integers lo < hi; got [{lo}, {hi}].")
    if hi - lo + 1 > MAX_NUMERIC_LEAVES:
        raise HierarchyError(f"The domain of {name!r} has {hi - lo + 1} values; at most "
                             f"{MAX_NUMERIC_LEAVES} are supported.")
    values = np.arange(lo, hi + 1, dtype=np.int64)
    previous = set(range(lo, hi + 1))
    labels = [tuple(str(v) for v in values)]
    maps = [np.arange(len(values), dtype=np.int32)]
    firsts = [values.copy()]
    lasts = [values.copy()]
    for depth, starts in enumerate(levels, start=1):
        starts = [int(s) for s in starts]
        if not starts or starts[0] != lo or any(b <= a for a, b in zip(starts, starts[1:])):
            raise HierarchyError(f"Level {depth} of {name!r} must list increasing bin starts "
                                 f"beginning at the domain's low end {lo}; got {starts}.")
        if starts[-1] > hi:
            raise HierarchyError(f"Level {depth} of {name!r} starts a bin at {starts[-1]}, above "
                                 f"the domain's high end {hi}.")
        if not set(starts) <= previous:
            bad = sorted(set(starts) - previous)
            raise HierarchyError(f"Level {depth} of {name!r} does not nest in level {depth - 1}: "
                                 f"its bin starting at {bad[0]} splits a bin of the level below.")
        previous = set(starts)
        code = np.searchsorted(np.asarray(starts), values, side="right") - 1
        ends = starts[1:] + [hi + 1]
        labels.append(tuple(_bin_label(a, b - 1) for a, b in zip(starts, ends)))
        maps.append(code.astype(np.int32))
        firsts.append(np.asarray(starts, dtype=np.int64))
        lasts.append(np.asarray(ends, dtype=np.int64) - 1)
    labels.append((ROOT,))
    maps.append(np.zeros(len(values), dtype=np.int32))
    firsts.append(np.array([lo], dtype=np.int64))
    lasts.append(np.array([hi], dtype=np.int64))
    ncp = tuple((last - first) / (hi - lo) for first, last in zip(firsts, lasts))
    return LevelHierarchy(name=name, kind="numeric", labels=tuple(labels), maps=tuple(maps),
                          ncp=ncp, lo=lo, hi=hi, first=tuple(firsts), last=tuple(lasts))
