"""Immutable rooted trees of string labels: the generalization hierarchies of categorical QIDs.

A :class:`Taxonomy` is built once from a parent map, validated, and then answers structural
questions (depth, height, lowest common ancestor, leaf counts) either by label, for the public
API, or by integer code, for the hot loops of the algorithms (design rule 9: pandas at the
boundary, arrays inside).

Codes are positions in a pre-order depth-first walk of the tree (children in the order they first
appear in the parent map). Pre-order numbering makes every subtree a contiguous code range
``[code, end)``, so ``covers`` is two comparisons and the LCA of any set of codes is the LCA of its
smallest and largest code: :meth:`Taxonomy.lca_codes` needs one ``min``/``max`` pass over the
array and a walk of at most ``height`` parent steps.

References:
    Byun, Kamra, Bertino, Li. Efficient k-anonymization using clustering techniques. DASFAA 2007
    (information loss from tree heights, see ``algorithms.md`` §1.1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import HierarchyError, ValidationError

__all__ = ["Taxonomy", "SELF_LEAF_SUFFIX", "self_leaf_label"]

# How many offending labels an error message lists before it says "and N more".
_SHOWN = 5


def _show(labels: Iterable[Any], limit: int = _SHOWN) -> str:
    """Format up to ``limit`` labels as ``'a', 'b', ... (and 3 more)`` for error messages."""
    labels = list(labels)
    text = ", ".join(repr(x) for x in labels[:limit])
    if len(labels) > limit:
        text += f" (and {len(labels) - limit} more)"
    return text


def _is_label(x: object) -> bool:
    # Labels end up in CSV cells (releases, ARX files): one line each.
    return isinstance(x, str) and x.strip() != "" and "\n" not in x and "\r" not in x


def _is_missing(x: object) -> bool:
    """None, a float NaN or pandas' NA: missing cells, which are not labels to check."""
    if x is None or type(x).__name__ == "NAType":
        return True
    return isinstance(x, (float, np.floating)) and math.isnan(x)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _rebuild(parents: dict[str, str | None], name: str, values: tuple[str, ...],
             self_leaves: dict[str, str] | None = None) -> Taxonomy:
    """Unpickle helper: a Taxonomy is rebuilt (and revalidated) from its parent map."""
    return Taxonomy(parents, name=name, values=values, self_leaves=self_leaves)


#: Appended to an internal node's label to name its self leaf when nothing else names it
#: (``"Adult"`` -> ``"Adult (exact)"``): the published label of a record that holds the node's
#: own value, ungeneralized. A leaf so named under that node is recognised as its self leaf.
SELF_LEAF_SUFFIX = " (exact)"


def self_leaf_label(node: str) -> str:
    """The default label of the self leaf of ``node``: ``node`` + :data:`SELF_LEAF_SUFFIX`."""
    return node + SELF_LEAF_SUFFIX


def _with_self_leaves(parents: Mapping[str, str | None], values: list[str] | None,
                      given: Mapping[str, str] | None,
                      where: str) -> tuple[dict[str, str | None], dict[str, str]]:
    """The parent map with a self leaf under every internal node that is a record value.

    Returns the new parent map (a missing self leaf is inserted just before its node's first
    child, so it comes first among them) and the map from node to self leaf.
    """
    # The root as a value says nothing about the record (it is how a missing value publishes),
    # so it keeps its own label and no self leaf.
    inner = {p for p in parents.values() if p is not None} - {k for k, p in parents.items()
                                                              if p is None}
    if given is not None and not isinstance(given, Mapping):
        raise ValidationError(
            f"The 'self_leaves' parameter of Taxonomy must map internal nodes to labels; got "
            f"{type(given).__name__}.")
    chosen: dict[str, str] = {}
    for node, leaf in (given or {}).items():
        if node not in inner:
            raise HierarchyError(
                f"{where}: 'self_leaves' names {node!r}, which is not an internal node other than "
                f"the root.")
        if not _is_label(leaf):
            raise HierarchyError(
                f"{where}: the self leaf of {node!r} must be a non-empty one-line label; got "
                f"{leaf!r}.")
        chosen[node] = leaf
    for node in values or ():
        if isinstance(node, str) and node in inner and node not in chosen:
            chosen[node] = self_leaf_label(node)
    # A leaf named by the convention (what write_arx writes for a default self leaf) is one.
    for label, p in parents.items():
        if p is not None and label not in inner and label == self_leaf_label(p):
            chosen.setdefault(p, label)
    leaf_of = set()
    for node, leaf in chosen.items():
        if leaf in leaf_of:
            raise HierarchyError(f"{where}: {leaf!r} is the self leaf of two nodes.")
        leaf_of.add(leaf)
        if leaf in parents and (parents[leaf] != node or leaf in inner):
            raise HierarchyError(
                f"{where}: the self leaf of {node!r} would be {leaf!r}, but that label is "
                f"already a node elsewhere in the tree; name the self leaf through "
                f"'self_leaves'.")
    if not chosen:
        return dict(parents), {}
    pending = {node: leaf for node, leaf in chosen.items() if leaf not in parents}
    out: dict[str, str | None] = {}
    for label, p in parents.items():
        if p in pending:
            out[pending.pop(p)] = p
        out[label] = p
    return out, chosen


class Taxonomy:
    """An immutable rooted tree of string labels, used as a generalization hierarchy.

    Every node is a label; exactly one node (the root, by convention ``*``) has no parent.
    Record values are the labels a raw record may hold: by default the leaves.

    An internal node may also be a record value (in MeSH, "Adult" is the 25-44 band and the
    parent of "Young Adult"). Published with its own label, such a value could not be told from
    the generalization to that node, and its information loss would not be 0. So every internal
    value gets a *self leaf*: a leaf under the node that stands for the value itself, and that is
    the record value instead of the node. The self leaf is labelled ``self_leaves[node]`` when
    given, else ``node + " (exact)"`` (:func:`self_leaf_label`); a leaf so named under its node is
    recognised as a self leaf when the tree is read back (from
    :func:`~medanon.hierarchies.write_arx` text, say). Raw records may still hold the node's own
    label: :meth:`record_labels` maps it to the self leaf, and :meth:`check_values` accepts it.
    Internal nodes other than the root are thus never values, and a self leaf adds no level (it
    sits beside the node's other children). The root stays a value of its own when listed: a
    record holding it says nothing, so it publishes as the root.

    Equality and hashing are structural: two taxonomies are equal when they have the same nodes,
    the same parent of every node and the same record values. The ``name`` (used in messages), the
    order of children and which raw labels map to self leaves do not take part.

    Args:
        parents: Maps every node to its parent label; the root maps to ``None``.
        name: Name of the hierarchy, used in error messages (e.g. ``"mesh-age"``).
        values: Labels allowed as record values; default: the leaves. Each must be a node; an
            internal node stands for its self leaf.
        self_leaves: Internal node -> label of its self leaf, where the default label does not
            suit (the MeSH age tree names them by band: ``"Adult (25-44)"``). A label that is
            not a node is added as the node's first child; one that is must be a leaf child of
            that node. Each listed node's label becomes a raw alias of its self leaf.

    Raises:
        ValidationError: ``name`` is not a non-empty string, or ``parents`` is not a mapping.
        HierarchyError: the tree is empty, has a non-string or empty label, a parent that is not a
            node, no root or several roots, a cycle, or a value that is not a node; a self leaf's
            label is already another node.

    Example:
        >>> t = Taxonomy({"*": None, "F": "*", "M": "*"}, name="sex")
        >>> t.lca(["F", "M"]), t.height
        ('*', 1)
    """

    __slots__ = ("_name", "_nodes", "_code_of", "_parent", "_children", "_end", "_values",
                 "_value_mask", "_depth", "_sub_height", "_leaf_count", "_parent_arr", "_end_arr",
                 "_hash", "_self_leaves")

    # The slots' types. __init__ fills them with object.__setattr__ (the instance is immutable:
    # __setattr__ raises), so they are declared here for the type checker; bare annotations make
    # no class attributes and do not clash with __slots__.
    _name: str
    _nodes: tuple[str, ...]  # labels in pre-order; index = code
    _code_of: Mapping[str, int]
    _parent: Mapping[str, str | None]
    _children: dict[str, tuple[str, ...]]
    _end: list[int]  # subtree of code i = codes [i, _end[i])
    _values: tuple[str, ...]
    _value_mask: np.ndarray
    _depth: np.ndarray
    _sub_height: np.ndarray
    _leaf_count: np.ndarray
    _parent_arr: list[int]  # parent code of each code, -1 for the root
    _end_arr: np.ndarray
    _hash: int
    _self_leaves: Mapping[str, str]

    def __init__(self, parents: Mapping[str, str | None], *, name: str,
                 values: Iterable[str] | None = None,
                 self_leaves: Mapping[str, str] | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValidationError(
                f"The 'name' parameter of Taxonomy must be a non-empty string; got {name!r}.")
        if not isinstance(parents, Mapping):
            raise ValidationError(
                f"The 'parents' parameter of Taxonomy must be a mapping from label to parent "
                f"label; got {type(parents).__name__}.")
        where = f"Hierarchy {name!r}"
        if len(parents) == 0:
            raise HierarchyError(f"{where} is empty: it needs at least a root node.")

        bad = [k for k, p in parents.items()
               if not _is_label(k) or not (p is None or _is_label(p))]
        if bad:
            pairs = ", ".join(f"{k!r} -> {parents[k]!r}" for k in bad[:_SHOWN])
            raise HierarchyError(
                f"{where}: labels must be non-empty one-line strings; {len(bad)} entry/entries of "
                f"'parents' break this: {pairs}.")

        unknown = {p: k for k, p in parents.items() if p is not None and p not in parents}
        if unknown:
            shown = list(unknown.items())[:_SHOWN]
            detail = ", ".join(f"{p!r} (parent of {k!r})" for p, k in shown)
            raise HierarchyError(
                f"{where}: {len(unknown)} parent label(s) are not nodes of the tree: {detail}. "
                f"Every parent must also be a key of 'parents' (the root maps to None).")

        if values is not None:
            values = [values] if isinstance(values, str) else list(values)
        parents, self_of = _with_self_leaves(parents, values, self_leaves, where)

        roots = [k for k, p in parents.items() if p is None]
        if len(roots) > 1:
            raise HierarchyError(
                f"{where} has {len(roots)} roots ({_show(roots, 10)}); a hierarchy needs exactly "
                f"one node without a parent.")

        children: dict[str, list[str]] = {k: [] for k in parents}
        for k, p in parents.items():
            if p is not None:
                children[p].append(k)

        if not roots:
            cycle = self._find_cycle(parents, next(iter(parents)))
            raise HierarchyError(
                f"{where} has no root (every node has a parent); it contains the cycle "
                f"{' -> '.join(map(repr, cycle))}.")
        root = roots[0]

        # Pre-order walk with an explicit stack (trees can be deeper than Python's recursion limit).
        order: list[str] = []
        stack = [root]
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(reversed(children[node]))
        if len(order) != len(parents):
            seen = set(order)
            start = next(k for k in parents if k not in seen)
            cycle = self._find_cycle(parents, start)
            raise HierarchyError(
                f"{where} has a cycle: {' -> '.join(map(repr, cycle))}; "
                f"{len(parents) - len(order)} node(s) cannot reach the root {root!r}.")

        n = len(order)
        code_of = {label: i for i, label in enumerate(order)}
        parent_code = [-1] * n
        depth = [0] * n
        for i, label in enumerate(order):
            p = parents[label]
            if p is not None:
                parent_code[i] = code_of[p]
                depth[i] = depth[parent_code[i]] + 1  # parent comes earlier in pre-order
        # Subtree size, height and leaf count accumulate bottom-up: reverse pre-order visits
        # every child before its parent.
        size = [1] * n
        sub_height = [0] * n
        leaf_count = [0] * n
        for i in range(n - 1, -1, -1):
            if size[i] == 1:
                leaf_count[i] = 1
            pc = parent_code[i]
            if pc >= 0:
                size[pc] += size[i]
                leaf_count[pc] += leaf_count[i]
                if sub_height[i] + 1 > sub_height[pc]:
                    sub_height[pc] = sub_height[i] + 1

        leaves = [label for i, label in enumerate(order) if size[i] == 1]
        if values is None:
            value_set = set(leaves)
        else:
            given = values
            bad_values = [v for v in given if not isinstance(v, str) or v not in code_of]
            if bad_values:
                raise HierarchyError(
                    f"{where}: {len(bad_values)} value(s) are not nodes of the tree: "
                    f"{_show(bad_values)}.")
            if not given:
                raise HierarchyError(f"{where}: 'values' is empty; at least one node must be a "
                                     f"record value.")
            value_set = {self_of.get(v, v) for v in given} | set(self_of.values())

        s = object.__setattr__
        s(self, "_name", name)
        s(self, "_nodes", tuple(order))
        s(self, "_code_of", MappingProxyType(code_of))
        s(self, "_parent", MappingProxyType({label: parents[label] for label in order}))
        s(self, "_children", {label: tuple(children[label]) for label in order})
        s(self, "_end", [i + size[i] for i in range(n)])  # subtree of i = codes [i, end[i])
        s(self, "_values", tuple(label for label in order if label in value_set))
        s(self, "_value_mask", _readonly(np.array([lab in value_set for lab in order], dtype=bool)))
        s(self, "_depth", _readonly(np.array(depth, dtype=np.int32)))
        s(self, "_sub_height", _readonly(np.array(sub_height, dtype=np.int32)))
        s(self, "_leaf_count", _readonly(np.array(leaf_count, dtype=np.int32)))
        s(self, "_parent_arr", parent_code)
        s(self, "_end_arr", _readonly(np.array(self._end, dtype=np.int64)))
        s(self, "_hash", hash((frozenset(parents.items()), frozenset(value_set))))
        s(self, "_self_leaves", MappingProxyType(self_of))

    @staticmethod
    def _find_cycle(parents: Mapping[str, str | None], start: str) -> list[str]:
        """Follow parents from ``start`` until a label repeats; return the cycle, closed."""
        seen: dict[str, int] = {}
        path: list[str] = []
        node: str | None = start
        while node is not None and node not in seen:
            seen[node] = len(path)
            path.append(node)
            node = parents[node]
        if node is None:  # pragma: no cover - callers only start from nodes that never reach a root
            return path
        return path[seen[node]:] + [node]

    # ----------------------------------------------------------------------------- immutability
    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"Taxonomy is immutable; cannot set {key!r}.")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"Taxonomy is immutable; cannot delete {key!r}.")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (dict(self._parent), self._name, self._values, dict(self._self_leaves)))

    # ------------------------------------------------------------------------- label-level API
    @property
    def name(self) -> str:
        """Name of the hierarchy (used in messages; not part of equality)."""
        return self._name

    @property
    def root(self) -> str:
        """The root label (the only node without a parent)."""
        return self._nodes[0]

    @property
    def nodes(self) -> tuple[str, ...]:
        """All labels in pre-order (root first; children in parent-map order); index = code."""
        return self._nodes

    @property
    def parents(self) -> Mapping[str, str | None]:
        """Read-only parent map (root maps to ``None``), in node order."""
        return self._parent

    @property
    def values(self) -> tuple[str, ...]:
        """Labels allowed as record values, in node order."""
        return self._values

    @property
    def self_leaves(self) -> Mapping[str, str]:
        """Read-only map from an internal node to its self leaf (see the class docstring)."""
        return self._self_leaves

    def record_labels(self, labels: Iterable[Any]) -> list[Any]:
        """Raw record labels as record values: a node that has a self leaf becomes the leaf.

        Raw data may hold an internal node's own label for the value (``"Adult"`` in data or a
        store written before the MeSH age tree had self leaves); everything else, missing cells
        included, is returned as it is. A single str counts as one label.
        """
        if isinstance(labels, str):
            labels = (labels,)
        get = self._self_leaves.get
        return [get(x, x) if isinstance(x, str) else x for x in labels]

    @property
    def leaves(self) -> tuple[str, ...]:
        """Nodes without children, in node order."""
        return tuple(label for label in self._nodes if not self._children[label])

    @property
    def height(self) -> int:
        """Largest depth of any node: h(C) in the information-loss formula (0 for a lone root)."""
        return int(self._sub_height[0])

    def _code(self, label: str) -> int:
        try:
            return self._code_of[label]
        except (KeyError, TypeError):
            raise HierarchyError(
                f"{label!r} is not a node of hierarchy {self._name!r}.") from None

    def parent(self, label: str) -> str | None:
        """Parent of ``label`` (``None`` for the root)."""
        self._code(label)
        return self._parent[label]

    def children(self, label: str) -> tuple[str, ...]:
        """Children of ``label`` in parent-map order (empty for a leaf)."""
        self._code(label)
        return self._children[label]

    def depth(self, label: str) -> int:
        """Number of edges from the root to ``label`` (root = 0)."""
        return int(self._depth[self._code(label)])

    def subtree_height(self, label: str) -> int:
        """Height of the subtree rooted at ``label``: h(C, g) in IL (0 for a leaf)."""
        return int(self._sub_height[self._code(label)])

    def leaf_count(self, label: str) -> int:
        """Number of leaves under ``label`` (1 for a leaf); the numerator of NCP."""
        return int(self._leaf_count[self._code(label)])

    def ancestors(self, label: str) -> tuple[str, ...]:
        """Path from ``label`` itself up to the root, both included."""
        i = self._code(label)
        out = []
        while i >= 0:
            out.append(self._nodes[i])
            i = self._parent_arr[i]
        return tuple(out)

    def covers(self, general: str, specific: str) -> bool:
        """Whether ``general`` is ``specific`` or one of its ancestors."""
        g, s = self._code(general), self._code(specific)
        return g <= s < self._end[g]

    def lca(self, labels: Iterable[str]) -> str:
        """Lowest common ancestor of one or more labels (a single str counts as one label).

        Raises:
            ValidationError: no labels were given.
            HierarchyError: a label is not a node.
        """
        if isinstance(labels, str):
            labels = (labels,)
        codes = [self._code(label) for label in labels]
        if not codes:
            raise ValidationError(
                f"The 'labels' parameter of Taxonomy.lca must hold at least one label; got none "
                f"(hierarchy {self._name!r}).")
        return self._nodes[self._lca_min_max(min(codes), max(codes))]

    def check_values(self, values: Iterable[Any], *, column: str,
                     allow_generalized: bool = False) -> None:
        """Check that every (non-missing) value of a column is a record value of this hierarchy.

        Missing cells (``None``, NaN) are skipped: missingness is the loader's business.

        Args:
            values: The column's values (any iterable; duplicates are fine).
            column: Column name, for the message.
            allow_generalized: Accept any node, not only record values (for released, already
                generalized data such as ``Nonadult`` or ``*``). Without it, the label of a node
                that has a self leaf is accepted too (it stands for the self leaf, see
                :meth:`record_labels`).

        Raises:
            HierarchyError: listing up to five offending values and how many there are.
        """
        if hasattr(values, "unique") and hasattr(values, "to_numpy"):  # pandas: dedupe in C
            distinct = list(np.asarray(values.unique(), dtype=object).ravel())
        elif isinstance(values, np.ndarray):
            distinct = list(values.ravel())
        else:
            distinct = list(values)
        distinct = _unique(v for v in distinct if not _is_missing(v))
        missing = [v for v in distinct if not (isinstance(v, str) and v in self._code_of)]
        problems = []
        if missing:
            problems.append(f"Column {column!r} has {len(missing)} value(s) missing from "
                            f"hierarchy {self._name!r}: {_show(missing)}.")
        if not allow_generalized:
            inner = [v for v in distinct if isinstance(v, str) and v in self._code_of
                     and not self._value_mask[self._code_of[v]] and v not in self._self_leaves]
            if inner:
                problems.append(
                    f"Column {column!r} has {len(inner)} value(s) that hierarchy {self._name!r} "
                    f"holds only as generalizations, not as record values: {_show(inner)}.")
        if problems:
            raise HierarchyError(" ".join(problems))

    # -------------------------------------------------------------------------- dunder methods
    def __contains__(self, label: object) -> bool:
        try:
            return label in self._code_of
        except TypeError:  # unhashable
            return False

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Taxonomy):
            return NotImplemented
        return (self._hash == other._hash and dict(self._parent) == dict(other._parent)
                and set(self._values) == set(other._values))

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (f"Taxonomy(name={self._name!r}, root={self.root!r}, nodes={len(self)}, "
                f"values={len(self._values)}, height={self.height})")

    # -------------------------------------------------------------------------- integer codes
    @property
    def code_of(self) -> Mapping[str, int]:
        """Read-only map from label to integer code (its pre-order position)."""
        return self._code_of

    @property
    def depth_array(self) -> np.ndarray:
        """Read-only int32 array: depth of each code."""
        return self._depth

    @property
    def subtree_height_array(self) -> np.ndarray:
        """Read-only int32 array: height of the subtree at each code (0 for leaves)."""
        return self._sub_height

    @property
    def leaf_count_array(self) -> np.ndarray:
        """Read-only int32 array: number of leaves under each code."""
        return self._leaf_count

    @property
    def parent_array(self) -> np.ndarray:
        """Int32 array: parent code of each code (-1 for the root). A fresh copy."""
        return np.array(self._parent_arr, dtype=np.int32)

    @property
    def value_mask(self) -> np.ndarray:
        """Read-only bool array: whether each code is a record value."""
        return self._value_mask

    def encode(self, labels: Iterable[str]) -> np.ndarray:
        """Integer codes of labels, as an int32 array (a single str is one label).

        Raises:
            HierarchyError: some labels are not nodes (lists up to five, and how many).
        """
        if isinstance(labels, str):
            labels = (labels,)
        if isinstance(labels, np.ndarray) or hasattr(labels, "to_numpy"):
            labels = np.asarray(labels, dtype=object).ravel().tolist()
        else:
            labels = list(labels)  # iterated twice below when reporting unknown labels
        get = self._code_of.get
        codes = [get(x, -1) if isinstance(x, str) else -1 for x in labels]
        out = np.array(codes, dtype=np.int32)
        if out.size and out.min() < 0:
            bad = [x for x, c in zip(labels, codes, strict=True) if c < 0]
            bad = _unique(bad)
            raise HierarchyError(
                f"{len(bad)} label(s) are not nodes of hierarchy {self._name!r}: {_show(bad)}.")
        return out

    def decode(self, codes: Iterable[int] | np.ndarray) -> list[str]:
        """Labels of integer codes.

        Raises:
            HierarchyError: a code is outside ``0 .. len(self) - 1``.
        """
        arr = self._check_codes(codes, "decode")
        nodes = self._nodes
        return [nodes[c] for c in arr.tolist()]

    def lca_codes(self, codes: Iterable[int] | np.ndarray) -> int:
        """Code of the lowest common ancestor of a non-empty set of codes.

        Cost: one ``min``/``max`` pass over ``codes`` plus at most ``height`` parent steps (the
        LCA of a set in pre-order numbering is the LCA of its smallest and largest code).

        Raises:
            ValidationError: ``codes`` is empty or not integer.
            HierarchyError: a code is outside ``0 .. len(self) - 1``.
        """
        arr = np.asarray(codes)
        if arr.size == 0:
            raise ValidationError(
                f"The 'codes' parameter of Taxonomy.lca_codes must hold at least one code; got "
                f"none (hierarchy {self._name!r}).")
        if arr.dtype.kind not in "iu":
            arr = self._check_codes(arr, "lca_codes")
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= len(self._nodes):
            self._check_codes(arr, "lca_codes")
        return self._lca_min_max(lo, hi)

    def covers_codes(self, general: int | np.ndarray, specific: int | np.ndarray) -> np.ndarray:
        """Vectorized :meth:`covers` on codes (broadcasting); no range checks, for hot loops."""
        g = np.asarray(general)
        end = self._end_arr[g]
        s = np.asarray(specific)
        return (g <= s) & (s < end)

    def _lca_min_max(self, lo: int, hi: int) -> int:
        end, parent = self._end, self._parent_arr
        a = lo
        while end[a] <= hi:  # climb until a's subtree range reaches the largest code
            a = parent[a]
        return a

    def _check_codes(self, codes: Iterable[int] | np.ndarray, method: str) -> np.ndarray:
        arr = np.asarray(codes if isinstance(codes, np.ndarray) else list(codes))
        if arr.size == 0:
            return arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
                arr = arr.astype(np.int64)
            else:
                raise ValidationError(
                    f"The 'codes' parameter of Taxonomy.{method} must hold integer codes; got "
                    f"dtype {arr.dtype}.")
        out = (arr < 0) | (arr >= len(self._nodes))
        if out.any():
            bad = np.unique(arr[out]).tolist()
            raise HierarchyError(
                f"{len(bad)} code(s) are not nodes of hierarchy {self._name!r} (valid: 0 to "
                f"{len(self._nodes) - 1}): {_show(bad)}.")
        return arr


def _unique(items: Iterable[Any]) -> list[Any]:
    """Distinct items in first-seen order; unhashable ones (lists in a cell) compared by ==."""
    seen: dict[Any, None] = {}
    odd: list[Any] = []
    for x in items:
        try:
            seen.setdefault(x, None)
        except TypeError:
            if x not in odd:
                odd.append(x)
    return [*seen, *odd]
