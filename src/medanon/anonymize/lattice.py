"""The full-domain generalization lattice and group counts rolled up across its nodes.

A node ``(l_1, ..., l_q)`` generalizes dimension ``j`` to level ``l_j`` of its
:class:`~medanon.hierarchies.levels.LevelHierarchy`. The methods over this lattice (IPA, the
k-anonymity baseline, the DP histogram) need, per node, the equivalence classes and how many records
(and which informative values) each holds. Recounting the records at every node costs
O(|lattice| · n); here each node's counts are instead *rolled up* from an already counted, more
specific node (Incognito's observation, LeFevre et al. SIGMOD 2005): the counts of
``(codes at the node, informative value)`` are the sums of the counts of the more specific node's
rows after mapping their codes up. The table of a specific node has at most as many rows as the
one below it, so most nodes are counted from a few thousand rows, not from n records.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..data.tabular import TabularData
from .clustering import lexsort_runs

__all__ = ["GroupTable", "Lattice", "RollUp", "group_sum", "marginals", "node_ncp", "record_classes",
           "record_ncp_bound"]

Node = tuple[int, ...]
_MAX_KEY = 2 ** 62


class Lattice:
    """All nodes of the full-domain lattice of the given top levels."""

    def __init__(self, tops: Node) -> None:
        self.tops = tuple(int(t) for t in tops)
        self.nodes: list[Node] = sorted(itertools.product(*(range(t + 1) for t in self.tops)),
                                        key=lambda n: (sum(n), n))

    def __len__(self) -> int:
        return len(self.nodes)

    def predecessors(self, node: Node) -> list[Node]:
        """Direct specializations: one dimension one level lower."""
        return [node[:j] + (node[j] - 1,) + node[j + 1:] for j in range(len(node)) if node[j] > 0]

    def successors(self, node: Node) -> list[Node]:
        """Direct generalizations: one dimension one level higher."""
        return [node[:j] + (node[j] + 1,) + node[j + 1:]
                for j in range(len(node)) if node[j] < self.tops[j]]


def group_sum(columns: list[np.ndarray], sizes: list[int],
              weights: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Distinct rows of ``columns`` (sorted lexicographically) and the summed ``weights`` of each.

    ``sizes[i]`` bounds the values of ``columns[i]``. Rows are packed into one int64 key when the
    product of the sizes allows it (the usual case), else sorted column by column.
    """
    n = len(weights)
    if n == 0:
        return [c[:0].astype(np.int32) for c in columns], weights[:0].astype(np.int64)
    total = 1
    for s in sizes:
        total *= max(int(s), 1)
    if total < _MAX_KEY:
        key = np.zeros(n, dtype=np.int64)
        for c, s in zip(columns, sizes):
            key = key * np.int64(max(int(s), 1)) + c.astype(np.int64)
        order = np.argsort(key, kind="stable")
        key = key[order]
        start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    else:
        order, change = lexsort_runs(columns)
        start = np.flatnonzero(change)
    sums = np.add.reduceat(weights[order].astype(np.int64), start)
    firsts = order[start]
    return [c[firsts].astype(np.int32) for c in columns], sums


@dataclass(frozen=True)
class GroupTable:
    """Counts at one node: distinct ``(codes, informative)`` rows, sorted, with their counts."""

    node: Node
    codes: list[np.ndarray]          # one int32 array per dimension, codes at the node's levels
    informative: np.ndarray | None   # int32 informative codes, or None when not tracked
    count: np.ndarray                # int64

    def __len__(self) -> int:
        return len(self.count)

    def classes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(class_of_row, class_first_row)``: equivalence classes of the dimension codes.

        Rows are sorted by codes, so a class is a run of equal codes.
        """
        m = len(self.count)
        change = np.zeros(m, dtype=bool)
        if m:
            change[0] = True
            for c in self.codes:
                change[1:] |= c[1:] != c[:-1]
        first = np.flatnonzero(change)
        return np.cumsum(change) - 1, first


class RollUp:
    """Group counts of any lattice node, rolled up from cached, more specific nodes.

    Args:
        data: The encoded table.
        with_informative: Keep the informative value in the rows (IPA, histograms) or count
            equivalence classes only (k-anonymity).
        cache_rows: Rows kept in the cache besides the base table (oldest evicted first).
    """

    def __init__(self, data: TabularData, *, with_informative: bool,
                 cache_rows: int | None = None) -> None:
        self.hierarchies = data.hierarchies
        self.n_informative = len(data.informative_domain)
        self.with_informative = with_informative
        bottom = tuple(0 for _ in data.hierarchies)
        columns = [data.codes[:, j] for j in range(data.codes.shape[1])]
        sizes = [h.size(0) for h in data.hierarchies]
        if with_informative:
            columns.append(data.informative)
            sizes.append(self.n_informative)
        grouped, counts = group_sum(columns, sizes, np.ones(len(data), dtype=np.int64))
        inf = grouped.pop() if with_informative else None
        self.base = GroupTable(bottom, grouped, inf, counts)
        self._cache: OrderedDict[Node, GroupTable] = OrderedDict()
        self._cached_rows = 0
        self.cache_rows = 2 * len(self.base) if cache_rows is None else cache_rows
        self.tables_built = 0
        self.rows_scanned = 0

    def table(self, node: Node) -> GroupTable:
        """The :class:`GroupTable` of ``node``."""
        node = tuple(node)
        if node == self.base.node:
            return self.base
        hit = self._cache.get(node)
        if hit is not None:
            return hit
        source = self.base
        for cached in self._cache.values():
            if len(cached) < len(source) and all(a <= b for a, b in zip(cached.node, node)):
                source = cached
        columns = [h.up(a, b)[c] if a != b else c
                   for h, a, b, c in zip(self.hierarchies, source.node, node, source.codes)]
        sizes = [h.size(b) for h, b in zip(self.hierarchies, node)]
        if self.with_informative:
            columns.append(source.informative)
            sizes.append(self.n_informative)
        grouped, counts = group_sum(columns, sizes, source.count)
        inf = grouped.pop() if self.with_informative else None
        table = GroupTable(node, grouped, inf, counts)
        self.tables_built += 1
        self.rows_scanned += len(source)
        self._cache[node] = table
        self._cached_rows += len(table)
        while self._cached_rows > self.cache_rows and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._cached_rows -= len(old)
        return table


def node_ncp(hierarchies, node: Node, codes: list[np.ndarray]) -> np.ndarray:
    """Mean NCP over the dimensions of each class whose codes (at ``node``) are given."""
    total = np.zeros(len(codes[0]) if codes else 0, dtype=float)
    for h, level, c in zip(hierarchies, node, codes):
        total += h.ncp[level][c]
    return total / max(len(hierarchies), 1)


def record_classes(data: TabularData, node: Node) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The classes of ``node`` over the records: ``(class codes, class of each record, sizes)``.

    Classes are in the same (sorted) order as the rows of :meth:`RollUp.table`'s classes.
    """
    columns = [h.up(0, level)[data.codes[:, j]]
               for j, (h, level) in enumerate(zip(data.hierarchies, node))]
    sizes = [h.size(level) for h, level in zip(data.hierarchies, node)]
    total = 1
    for s in sizes:
        total *= s
    if total < _MAX_KEY:
        key = np.zeros(len(data), dtype=np.int64)
        for c, s in zip(columns, sizes):
            key = key * np.int64(s) + c.astype(np.int64)
        _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True,
                                              return_counts=True)
        return [c[first] for c in columns], inverse, counts
    stacked = np.stack(columns, axis=1)
    uniq, inverse, counts = np.unique(stacked, axis=0, return_inverse=True, return_counts=True)
    return [uniq[:, j].astype(np.int32) for j in range(uniq.shape[1])], inverse.ravel(), counts


def marginals(data: TabularData) -> list[np.ndarray]:
    """Leaf histograms of each dimension (float, for dot products)."""
    return [np.bincount(data.codes[:, j], minlength=h.n_leaves).astype(float)
            for j, h in enumerate(data.hierarchies)]


def record_ncp_bound(hierarchies, hists: list[np.ndarray], node: Node) -> float:
    """Mean NCP of the records at ``node`` with nothing suppressed, from the marginals alone.

    Suppressing a record raises its NCP to 1, so this is a lower bound of the NCP of any release
    at ``node``; and it never decreases up the lattice.
    """
    n = float(hists[0].sum())
    total = sum(float(hist @ h.ncp[level][h.maps[level]])
                for h, hist, level in zip(hierarchies, hists, node))
    return total / (n * len(node))
