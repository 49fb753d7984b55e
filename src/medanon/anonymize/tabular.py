"""Pieces shared by the full-domain methods over tabular data (IPA, k-anonymity, DP histogram).

A release of these methods is a set of *classes*: the equivalence classes of the chosen lattice
node that are published, plus (IPA, k-anonymity) the class ``*`` of suppressed records. Each
released row belongs to one class, carries its class's generalized dimension labels and an
informative value, and is either a real record or a counterfeit one. The information loss of
paper 004 (Step 2, spec §3.4–3.7) is computed over these classes:

- NCP: mean over released rows (counterfeits included) of the mean NCP of their labels; ``*`` is 1;
- EMD: mean over classes of the earth mover's distance between the informative values of the
  class's real records and of all its released rows, with equal ground distance (total variation,
  half the L1 distance). Diagnoses have no natural order, and the ordered variant's 1/(m−1)
  normalization makes it vanish for the hundreds of values of a diagnosis domain; a class with no
  real record has EMD 1 (it only exists in the DP histogram);
- Rate: mean over classes of (counterfeit rows) / (released rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..accounting.budget import PrivacyLoss
from ..data.tabular import TabularData
from ..hierarchies.levels import ROOT
from ..mechanisms.noise import NoiseSource
from .lattice import Node, node_ncp

__all__ = ["LossParts", "TabularResult", "ClassRelease", "class_emd"]


@dataclass(frozen=True)
class LossParts:
    """Paper 004's information loss of a release and its three parts, each in [0, 1]."""

    ncp: float
    emd: float
    rate: float

    @property
    def total(self) -> float:
        """IL = NCP + EMD + Rate, in [0, 3]."""
        return self.ncp + self.emd + self.rate

    def to_dict(self) -> dict[str, float]:
        return {"information_loss": self.total, "ncp": self.ncp, "emd": self.emd, "rate": self.rate}


@dataclass(frozen=True)
class TabularResult:
    """What a full-domain method releases, and the operator-only facts about it.

    ``table`` is the public file: rows in random order, counterfeit rows unmarked.
    ``is_counterfeit`` (aligned with ``table``) and the counts of suppressed and counterfeit rows
    are for the data holder's evaluation only; publishing them would undo the noise.
    """

    method: str
    node: Node
    node_labels: dict[str, str]
    table: pd.DataFrame
    is_counterfeit: np.ndarray
    loss: LossParts
    records: int
    suppressed: int
    counterfeit: int
    classes: int
    parameters: dict[str, Any]
    privacy_losses: tuple[PrivacyLoss, ...]
    #: the privacy model the release satisfies (``medanon.models.single``)
    privacy_model: Any
    details: dict[str, Any] = field(default_factory=dict)
    #: the overrides given to the method (``allow_tiny_epsilon``): the manifest's
    #: ``method.acknowledged``
    acknowledged: tuple[str, ...] = ()

    @property
    def guarantee(self) -> str:
        """What the release guarantees: the model object's text."""
        return self.privacy_model.guarantee

    @property
    def does_not_guarantee(self) -> str:
        """What it does not guarantee: the model object's text."""
        return self.privacy_model.does_not_guarantee

    def summary(self) -> dict[str, Any]:
        """The operator's JSON summary (not for publication: it holds the noisy counts)."""
        return {
            "method": self.method,
            "node": dict(zip(self.node_labels, self.node)),
            "node_levels": self.node_labels,
            **self.loss.to_dict(),
            "records": self.records,
            "released_rows": len(self.table),
            "classes": self.classes,
            "suppressed": self.suppressed,
            "counterfeit": self.counterfeit,
            "epsilon": float(sum(p.epsilon for p in self.privacy_losses)),
            "epsilon_per_step": {p.target: float(p.epsilon) for p in self.privacy_losses},
            "parameters": self.parameters,
            **self.details,
        }


def node_level_names(data: TabularData, node: Node) -> dict[str, str]:
    """``{dimension: "level l of L"}``, how a person reads a lattice node."""
    return {h.name: f"{level}/{h.top}" for h, level in zip(data.hierarchies, node)}


def class_emd(entry_class: np.ndarray, real: np.ndarray, fake: np.ndarray,
              n_real: np.ndarray, n_fake: np.ndarray) -> np.ndarray:
    """Per-class total variation between real and released informative values.

    ``entry_*`` describe distinct (class, value) entries: how many real records and how many
    counterfeit rows of the class have the value. A class with no real record gets 1.
    """
    n_out = n_real + n_fake
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_real[entry_class] > 0, real / np.maximum(n_real[entry_class], 1), 0.0)
        q = (real + fake) / np.maximum(n_out[entry_class], 1)
    tv = 0.5 * np.bincount(entry_class, weights=np.abs(p - q), minlength=len(n_real))
    return np.where(n_real > 0, tv, 1.0)


@dataclass
class ClassRelease:
    """A release described class by class (before it is written out row by row).

    Attributes:
        codes: Per dimension, the codes of each class at the node (ignored for starred classes).
        starred: Whether the class is the suppressed class ``*``.
        row_class, row_informative, row_fake: One entry per released row.
    """

    data: TabularData
    node: Node
    codes: list[np.ndarray]
    starred: np.ndarray
    row_class: np.ndarray
    row_informative: np.ndarray
    row_fake: np.ndarray

    @classmethod
    def from_classes(cls, data: TabularData, node: Node, ec_codes: list[np.ndarray],
                     suppressed_ec: np.ndarray, ec_of_record: np.ndarray,
                     fake_class: np.ndarray | None = None,
                     fake_value: np.ndarray | None = None) -> "ClassRelease":
        """Real records by class (suppressed ECs merged into ``*``, placed last) plus counterfeits.

        Counterfeit classes index the released classes: the kept ECs in order, then ``*``.
        """
        kept = np.flatnonzero(~suppressed_ec)
        n_classes = len(kept) + int(suppressed_ec.any())
        class_of_ec = np.full(len(suppressed_ec), n_classes - 1, dtype=np.int64)
        class_of_ec[kept] = np.arange(len(kept))
        starred = np.zeros(n_classes, dtype=bool)
        starred[len(kept):] = True
        pad = np.zeros(n_classes - len(kept), dtype=np.int32)
        codes = [np.concatenate([c[kept].astype(np.int32), pad]) for c in ec_codes]
        fake_class = np.zeros(0, dtype=np.int64) if fake_class is None else fake_class
        fake_value = np.zeros(0, dtype=np.int64) if fake_value is None else fake_value
        row_class = np.concatenate([class_of_ec[ec_of_record], fake_class]).astype(np.int64)
        row_value = np.concatenate([data.informative, fake_value]).astype(np.int64)
        row_fake = np.concatenate([np.zeros(len(data), dtype=bool),
                                   np.ones(len(fake_class), dtype=bool)])
        return cls(data, node, codes, starred, row_class, row_value, row_fake)

    def class_ncp(self) -> np.ndarray:
        ncp = node_ncp(self.data.hierarchies, self.node, self.codes)
        return np.where(self.starred, 1.0, ncp)

    def loss(self) -> LossParts:
        """NCP, EMD and Rate of this release (module docstring)."""
        k = len(self.starred)
        n_real = np.bincount(self.row_class[~self.row_fake], minlength=k)
        n_fake = np.bincount(self.row_class[self.row_fake], minlength=k)
        sizes = n_real + n_fake
        ncp = float(sizes @ self.class_ncp() / max(sizes.sum(), 1))
        m = len(self.data.informative_domain)
        key = self.row_class.astype(np.int64) * m + self.row_informative
        uniq, inverse = np.unique(key, return_inverse=True)
        real = np.bincount(inverse, weights=~self.row_fake, minlength=len(uniq))
        fake = np.bincount(inverse, weights=self.row_fake, minlength=len(uniq))
        emd = class_emd((uniq // m).astype(np.int64), real, fake, n_real, n_fake)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(sizes > 0, n_fake / np.maximum(sizes, 1), 0.0)
        shown = sizes > 0
        return LossParts(ncp=ncp, emd=float(emd[shown].mean()) if shown.any() else 0.0,
                         rate=float(rate[shown].mean()) if shown.any() else 0.0)

    def frame(self, noise: NoiseSource | None) -> tuple[pd.DataFrame, np.ndarray]:
        """The public table (``group``, dimensions, informative) and the counterfeit mask.

        The rows are first put in a canonical order, by class and informative value (real rows
        before counterfeit ones among equals), so that the input's row order reaches no published
        byte (non-interference, issue 41). With a noise source they are then put in uniformly
        random order, so that a counterfeit row's position says nothing; without one they stay
        sorted by class.
        """
        schema = self.data.schema
        rows = len(self.row_class)
        canonical = np.lexsort((self.row_fake, self.row_informative, self.row_class))
        order = canonical if noise is None else canonical[
            np.argsort(noise.uniform01_array(rows), kind="stable")]
        cls = self.row_class[order]
        columns: dict[str, Any] = {"group": cls}
        for h, level, codes in zip(self.data.hierarchies, self.node, self.codes):
            labels = np.asarray(h.labels[level], dtype=object)
            class_labels = np.where(self.starred, ROOT, labels[codes] if len(codes) else ROOT)
            columns[h.name] = np.asarray(class_labels, dtype=object)[cls]
        domain = np.asarray(self.data.informative_domain, dtype=object)
        columns[schema.informative] = domain[self.row_informative[order]]
        return pd.DataFrame(columns), self.row_fake[order]
