"""The DP-histogram baseline of paper 004: noisy counts of a generalized contingency table.

Paper 004 (Motivation, Tables 2–4; reference [10]) contrasts IPA with publishing a differentially
private contingency table: generalize the dimension attributes, count every combination of
(generalized dimension values, informative value) — *including the empty ones* — add Laplace noise
to each count, and publish the noisy table (here as microdata: one row per unit of noisy count).

Implementation:

- the node is fixed before looking at the data (``node=`` or, by default, level 1 of every dimension
  that has a level between the leaves and ``*``, level 0 otherwise: the authors' baseline starts
  the lattice at level 1 for age, length of stay and location, spec §3.10);
- every cell of (all label combinations of the node) × (informative domain) gets exact discrete
  Laplace noise of scale 1/ε and is clipped at 0 (post-processing);
- rows are published in random order.

Privacy guarantee: ε-differential privacy under add/remove-one-record neighbours (each record lies
in exactly one cell; parallel composition; clipping is post-processing). It needs the informative
domain to be *public*: declared in the table schema (``informative_domain``) without looking at
the data. A domain read from the data is itself a non-private statistic: a value held by a single
record gets cells (and so, nearly always, released rows) only when that record is present, which
no noise hides (``tests/property/test_neighbour_privacy.py``: such a value shows in 287 of 300
releases with its record and in 0 of 300 without it; with the domain declared, in 287 and 256).
So :class:`DPHistogram` refuses a table whose schema declares no ``informative_domain`` (a
:class:`~medanon.errors.SchemaError` naming the field); the CLI refuses before reading the data.

Deviations from the authors' code (``FullDomain_naive``): it clamps every noisy count at its true
count (so counts only grow, which is not DP) and adds noise only to values present in the data;
here counts may fall, every value of the public domain gets noise, and a domain taken from the
data is refused.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from .._validation import _fail, check_int
from ..accounting import (Accountant, PrivacyLoss, check_epsilon_floor, check_plan, format_epsilon,
                          losses_per_unit, to_exact)
from ..data.tabular import TabularData
from ..data.tabular import TableSchema
from ..errors import InfeasibleError, SchemaError
from ..mechanisms.discrete_laplace import DiscreteLaplaceMechanism
from ..random import Randomness
from ..mechanisms.noise import NoiseSource, check_noise
from ..models.single import DPHistogramModel
from .lattice import Node
from .tabular import ClassRelease, TabularResult, node_level_names

__all__ = ["DPHistogram", "default_histogram_node", "require_public_domain"]

#: the largest number of cells (classes × informative values) materialized
MAX_CELLS = 50_000_000
#: what an ε below :data:`~medanon.accounting.EPSILON_FLOOR` (0.01) does to the histogram: every
#: cell, empty ones included, gets about 1/(2ε) made-up rows on average whatever the data, so the
#: release is mostly made up and its size grows as 1/ε (a 2,000-row table at ε = 0.001 took 13 GB
#: of memory before it was stopped; at ε = 1e-6 it fails to allocate).
TINY_EPSILON = ("every cell of the histogram, empty ones included, gets about 1/(2 epsilon) "
                "made-up rows whatever the data, so the release is mostly made up and its size "
                "grows as 1/epsilon until it exhausts memory.")
#: what the noise is applied to, and the unit it protects
TARGET, SCOPE = "histogram", "record"



def require_public_domain(schema: TableSchema, *, source: str = "the table schema") -> None:
    """Refuse a table schema without a public ``informative_domain`` (module docstring).

    Raises:
        SchemaError: ``schema`` declares no ``informative_domain``.
    """
    if schema.informative_domain is None:
        raise SchemaError(
            f"The 'informative_domain' parameter of DPHistogram must come from the table schema: "
            f"{source} (table {schema.name!r}) declares none. A domain read from the data "
            f"discloses which {schema.informative!r} values occur (a value held by one record "
            f"shows up only when that record is present), so the release would not be ε-DP. "
            f"Declare informative_domain = [...] in its [table] section: every possible value, "
            f"chosen without looking at the data.")


def default_histogram_node(data: TabularData) -> Node:
    """Level 1 where a dimension has a level between its leaves and ``*``, else level 0."""
    return tuple(1 if h.top >= 2 else 0 for h in data.hierarchies)


class DPHistogram:
    """A DP histogram over a fixed full-domain node, released as microdata (module docstring).

    Args:
        epsilon: ε of the histogram.
        node: The lattice node (one level per dimension), or None for
            :func:`default_histogram_node`.
        allow_tiny_epsilon: Accept an ε below :data:`~medanon.accounting.EPSILON_FLOOR`
            (:data:`TINY_EPSILON`); recorded in the manifest's ``method.acknowledged``.

    Raises:
        ValidationError: on a bad parameter.
    """

    name = "dphist"

    def __init__(self, *, epsilon: Any, node: Sequence[int] | None = None,
                 allow_tiny_epsilon: bool = False) -> None:
        self.epsilon = to_exact(epsilon, name="epsilon", owner="DPHistogram")
        #: the acknowledgements given to the method (the manifest's ``method.acknowledged``)
        self.acknowledged = check_epsilon_floor(
            self.epsilon, owner="DPHistogram", allow_tiny_epsilon=allow_tiny_epsilon,
            what="to its histogram", consequence=TINY_EPSILON)
        #: the privacy model the method satisfies: it writes the guarantee texts
        self.model = DPHistogramModel(epsilon=self.epsilon)
        #: the cells' noise: a record lies in one cell, so a count moves by at most 1
        self.mechanism = DiscreteLaplaceMechanism(epsilon=self.epsilon, sensitivity=1)
        self.node = None if node is None else tuple(
            check_int(level, name="node", owner="DPHistogram", minimum=0) for level in node)

    def planned_losses(self) -> tuple[PrivacyLoss, ...]:
        """ε per record: the cells' mechanism's privacy map (``anonymize`` raises InternalError
        if what it reports differs)."""
        return (self.mechanism.privacy_loss(target=TARGET, scope=SCOPE),)

    @property
    def scale(self) -> Fraction:
        """The cells' noise scale 1/ε."""
        return self.mechanism.scale

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": format_epsilon(self.epsilon),
                "node": None if self.node is None else list(self.node)}

    def _node_for(self, data: TabularData) -> Node:
        if self.node is None:
            return default_histogram_node(data)
        tops = data.top_node
        if len(self.node) != len(tops) or any(level > top for level, top in zip(self.node, tops)):
            raise _fail("node", "DPHistogram",
                        f"{len(tops)} levels, each at most its dimension's top {list(tops)}",
                        list(self.node))
        return self.node

    def anonymize(self, data: TabularData, *, noise: Randomness | NoiseSource | None = None,
                  **_: Any) -> TabularResult:
        """Count, add noise to every cell, and release one row per unit of noisy count.

        Raises:
            SchemaError: the informative domain is not public (the schema declares no
                ``informative_domain``).
            InfeasibleError: the node has more than ``MAX_CELLS`` cells (choose a coarser node).
        """
        noise = check_noise(noise, owner="DPHistogram.anonymize")
        if not data.domain_public:
            require_public_domain(data.schema)
            raise SchemaError("The 'informative_domain' parameter of DPHistogram must come from "
                              "the table schema; this table's domain was read from the data.")
        node = self._node_for(data)
        sizes = [h.size(level) for h, level in zip(data.hierarchies, node)]
        m = len(data.informative_domain)
        n_classes = int(np.prod(sizes, dtype=object))
        if n_classes * m > MAX_CELLS:
            raise InfeasibleError(
                f"The DP histogram at node {list(node)} has {n_classes} classes × {m} informative "
                f"values = {n_classes * m} cells (at most {MAX_CELLS}); choose a coarser node.")
        ec = np.zeros(len(data), dtype=np.int64)
        for j, (h, level) in enumerate(zip(data.hierarchies, node)):
            ec = ec * sizes[j] + h.up(0, level)[data.codes[:, j]]
        cell = ec * m + data.informative
        true = np.bincount(cell, minlength=n_classes * m)
        # every cell at once: each record is in one cell (parallel composition)
        accountant = Accountant(scope=SCOPE)
        noisy = np.maximum(self.mechanism.randomise(true, noise, accountant=accountant,
                                                    target=TARGET), 0)
        check_plan(self.planned_losses(), accountant.charges, owner="DPHistogram")
        real_rows = np.minimum(true, noisy)   # rows of a cell standing for real records
        out_cells = np.flatnonzero(noisy)
        classes, class_of_cell = np.unique(out_cells // m, return_inverse=True)
        counts = noisy[out_cells]
        row_cell = np.repeat(np.arange(len(out_cells)), counts)
        first_of_cell = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.arange(len(row_cell)) - first_of_cell[row_cell]
        row_fake = rank >= real_rows[out_cells][row_cell]
        codes = _unpack(classes, sizes)
        release = ClassRelease(data, node, codes, np.zeros(len(classes), dtype=bool),
                               class_of_cell[row_cell].astype(np.int64),
                               (out_cells % m)[row_cell].astype(np.int64), row_fake)
        table, fake = release.frame(noise)
        return TabularResult(
            method=self.name, node=node, node_labels=node_level_names(data, node), table=table,
            is_counterfeit=fake, loss=release.loss(), records=len(data), suppressed=0,
            counterfeit=int(fake.sum()), classes=len(classes), parameters=self.parameters(),
            privacy_losses=losses_per_unit(accountant.charges), privacy_model=self.model,
            details={"cells": n_classes * m,
                     "records_lost": int((true - real_rows).sum())},
            acknowledged=self.acknowledged)


def _unpack(keys: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    out = []
    for s in reversed(sizes):
        out.append((keys % s).astype(np.int32))
        keys = keys // s
    return out[::-1]
