"""Utility of a tabular release: paper 004's information loss, recomputed, and its analysis queries.

:func:`release_information_loss` recomputes NCP, EMD and Rate (definitions in
:mod:`medanon.anonymize.tabular`) from the *published* table, the operator-only counterfeit mask and
the hierarchies, with independent code (pandas group-bys over labels, not the algorithm's integer
bookkeeping), so that tests can hold the two against each other.

:func:`evaluate_queries` runs paper 004's kind of analysis queries (count or mean of a numeric
dimension by bins of another, e.g. stroke patients per 5-year age group for men without surgery)
on the original table and on a release, and gives each bin's relative error. On generalized rows a
query takes the expectation under a uniform spread over the leaves a label covers: a row ``[10-19]``
counts 1/2 towards the age bin 10–14, a row with sex ``*`` counts 1/2 towards ``sex = M``, and a
length of stay ``[5-9]`` contributes its mean, 7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..data.tabular import QuerySpec, TabularData
from ..hierarchies.levels import LevelHierarchy

__all__ = ["QueryResult", "evaluate_queries", "release_information_loss"]


def release_information_loss(released: pd.DataFrame, is_counterfeit: np.ndarray,
                             data: TabularData) -> dict[str, float]:
    """NCP, EMD, Rate and their sum for a published table and its counterfeit mask."""
    schema = data.schema
    ncp = np.zeros(len(released))
    for h in data.hierarchies:
        labels = released[h.name].astype(str)
        costs = {label: float(h.ncp[level][code])
                 for label in labels.unique() for level, code in [h.locate(label)]}
        ncp += labels.map(costs).to_numpy(dtype=float)
    ncp /= len(data.hierarchies)
    frame = pd.DataFrame({"group": released["group"].to_numpy(),
                          "value": released[schema.informative].to_numpy(),
                          "fake": np.asarray(is_counterfeit, dtype=bool)})
    frame["real"] = ~frame["fake"]
    per_group = frame.groupby("group").agg(size=("fake", "size"), fake=("fake", "sum"),
                                           real=("real", "sum"))
    cells = frame.groupby(["group", "value"]).agg(all=("fake", "size"), real=("real", "sum"))
    cells = cells.join(per_group.add_suffix("_group"), on="group")
    p = np.where(cells["real_group"] > 0, cells["real"] / cells["real_group"].clip(lower=1), 0.0)
    q = cells["all"] / cells["size_group"]
    tv = (0.5 * np.abs(p - q)).groupby(level="group").sum()
    emd = np.where(per_group["real"] > 0, tv.reindex(per_group.index).to_numpy(), 1.0)
    rate = (per_group["fake"] / per_group["size"]).to_numpy()
    out = {"ncp": float(ncp.mean()), "emd": float(emd.mean()), "rate": float(rate.mean())}
    out["information_loss"] = out["ncp"] + out["emd"] + out["rate"]
    return out


@dataclass(frozen=True)
class QueryResult:
    """One query on the original and on the released table, bin by bin."""

    name: str
    aggregate: str
    bins: list[int]
    original: list[float | None]
    released: list[float | None]
    relative_error: list[float | None]

    @property
    def mean_relative_error(self) -> float:
        errors = [e for e in self.relative_error if e is not None]
        return float(np.mean(errors)) if errors else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "aggregate": self.aggregate,
                "mean_relative_error": self.mean_relative_error,
                "bins": [{"from": b, "original": o, "released": r, "relative_error": e}
                         for b, o, r, e in zip(self.bins, self.original, self.released,
                                               self.relative_error)]}


def _label_table(h: LevelHierarchy, labels: pd.Series) -> tuple[np.ndarray, dict[str, int]]:
    uniq = list(pd.unique(labels.astype(str)))
    return np.asarray(uniq, dtype=object), {label: i for i, label in enumerate(uniq)}


def _range_of(h: LevelHierarchy, label: str) -> tuple[int, int]:
    level, code = h.locate(label)
    return int(h.first[level][code]), int(h.last[level][code])


def _bins(h: LevelHierarchy, width: int) -> np.ndarray:
    assert h.lo is not None and h.hi is not None  # numeric: a query bins a numeric dimension
    return np.arange((h.lo // width) * width, (h.hi // width) * width + 1, width)


def _query_weights(query: QuerySpec, frame: pd.DataFrame, data: TabularData) -> np.ndarray:
    """Per row, the expected share of the row matching the query's filters."""
    hierarchies = {h.name: h for h in data.hierarchies}
    weight = np.ones(len(frame))
    for column, wanted in query.where.items():
        h = hierarchies[column]
        leaf = h.labels[0].index(wanted) if wanted in h.labels[0] else -1
        labels = frame[column].astype(str)
        share = {}
        for label in labels.unique():
            level, code = h.locate(label)
            covered = h.covered_leaves(level, code)
            share[label] = float(leaf in covered) / len(covered) if leaf >= 0 else 0.0
        weight *= labels.map(share).to_numpy(dtype=float)
    if query.informative_prefix:
        values = frame[data.schema.informative].astype(str)
        weight *= values.str.startswith(tuple(query.informative_prefix)).to_numpy(dtype=float)
    return weight


def _answer(query: QuerySpec, frame: pd.DataFrame, data: TabularData
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bins, counts, means) of ``query`` on ``frame`` (original values or released labels)."""
    hierarchies = {h.name: h for h in data.hierarchies}
    group = hierarchies[query.group_by]
    bins = _bins(group, query.bin)
    weight = _query_weights(query, frame, data)
    labels, index = _label_table(group, frame[query.group_by])
    spread = np.zeros((len(labels), len(bins)))
    for i, label in enumerate(labels):
        a, b = _range_of(group, label)
        lo = np.maximum(bins, a)
        hi = np.minimum(bins + query.bin - 1, b)
        spread[i] = np.maximum(hi - lo + 1, 0) / (b - a + 1)
    row_label = frame[query.group_by].astype(str).map(index).to_numpy()
    share = spread[row_label] * weight[:, None]
    counts = share.sum(axis=0)
    means = np.full(len(bins), np.nan)
    if query.aggregate == "mean":
        assert query.of is not None  # QuerySpec: a mean names the dimension it is of
        of = hierarchies[query.of]
        mids = {label: sum(_range_of(of, label)) / 2.0 for label in frame[query.of].astype(str).unique()}
        mid = frame[query.of].astype(str).map(mids).to_numpy(dtype=float)
        total = (share * mid[:, None]).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counts > 0, total / counts, np.nan)
    return bins, counts, means


def evaluate_queries(data: TabularData, released: pd.DataFrame,
                     queries: tuple[QuerySpec, ...] | None = None) -> list[QueryResult]:
    """Each query's answer on the original and the released table, with relative errors.

    Counts: ``|released − original| / max(original, 1)`` over the bins where either is non-zero.
    Means: ``|released − original| / original`` over the bins with original records (1.0 when
    the release has no matching row there).
    """
    results = []
    for query in data.schema.queries if queries is None else queries:
        bins, c0, m0 = _answer(query, data.frame, data)
        _, c1, m1 = _answer(query, released, data)
        if query.aggregate == "count":
            shown = (c0 > 0) | (c1 > 1e-12)
            error = np.abs(c1 - c0) / np.maximum(c0, 1)
            original, answer = c0, c1
        else:
            shown = c0 > 0
            error = np.where(np.isnan(m1), 1.0, np.abs(m1 - m0) / np.where(m0 > 0, m0, 1))
            original, answer = m0, m1
        results.append(QueryResult(
            name=query.name, aggregate=query.aggregate, bins=[int(b) for b in bins],
            original=[None if np.isnan(x) else float(x) for x in original],
            released=[None if np.isnan(x) else float(x) for x in answer],
            relative_error=[float(e) if s else None for e, s in zip(error, shown)]))
    return results
