"""ClinSimRR and its baselines: local DP for sensitive diagnosis codes in EHR sequences.

Bonomi, Gousheh and Fan, "Enabling health data sharing with fine-grained privacy", CIKM 2023
(paper 003). Formulas the paper leaves out are recovered in spec ``algorithms.md`` §4.

Methods (each ``.plan(graph, sensitive, tree)`` returns a :class:`ProtectionPlan`, whose
``obfuscate`` reports every element of a record independently):

- :class:`ClinSimRR` (003 §3–4): (1) extend the protected set with the non-sensitive codes that
  leak most about the sensitive ones through the dependence graph, until the graph-estimated
  leakage of every sensitive code is <= γ (:func:`~medanon.anonymize.dependence.bound_leakage`);
  (2) adaptive blocking, the heuristic for Eq. 8: grow the block size b while the expected
  clinical information loss Σ_e E[CIL(e)] (Eq. 5 with Eq. 6, spec §4.4) falls, then add the
  non-sensitive code with the smallest mean dissimilarity (Eq. 4) to the protected set and try
  again, keeping the best configuration (spec §4.7); (3) the block mechanism of Eqs. 6–7 with
  Algorithm 1's p_T and p_S (:class:`~medanon.mechanisms.block_rr.BlockRandomizedResponse`).
- :class:`UMaxRR`: uRR of Murakami and Kawamoto (USENIX Security 2019) with Y_P = X_S, i.e. the
  same mechanism with b = 1 and no extension (003 Eq. 2 with the typo fixed, spec §4.1).
- :class:`UMaxRRExtended` (``umaxrr-yp``): uRR (b = 1) on the protected set ClinSimRR chooses
  (steps 1 and 2 below): the fair baseline for ClinSimRR's blocks, since it protects exactly the
  same codes. 003 compares ClinSimRR only with uRR on X_S.
- :class:`SensitiveRR`: |X_S|-ary randomized response on the sensitive codes only, non-sensitive
  codes published as they are (003 §2.1's "RR on X_S").
- :class:`Suppression`: every sensitive code replaced by the root ``*`` (003 §5's baseline).

Privacy guarantee (ClinSimRR, UMaxRR, UMaxRRExtended): for every reported element, every pair of
inputs x, x' and every output y in the protected set Y_P, Pr[M(x) = y] <= e^ε Pr[M(x') = y] —
(Y_P, ε)-utility-optimized LDP *given Y_P and the blocks*; the ε holds per element, so a record
with j protected elements composes to jε. SensitiveRR: ε-LDP among sensitive inputs only (an
output in Y_P shows the input was sensitive). Suppression: none (a suppressed element is always
sensitive, and the dependence graph points to which one). :meth:`ProtectionPlan.guarantee` and
:meth:`ProtectionPlan.does_not_guarantee` generate these statements from the plan's parameters
(ε, γ, L, b, |Y_P|, p_S); the release manifest and ``docs/algorithms/clinsim.md`` use them.

Not guaranteed: Y_P, the blocks, p_T and p_S are chosen without noise from the dependence graph and
the code tree of the *auxiliary* patients (003 learns them on an 80% split): a non-private
statistic of those patients, published as such (one auxiliary patient more or less can change
Y_P). They depend on no released patient — the caller must build the graph and the tree from the
auxiliary split only (:func:`medanon.pipeline.clinsim.run_clinsim` does). The dependence step bounds a
leakage *estimated on the auxiliary data's graph*; an adversary who knows more dependences than
the graph holds may still infer sensitive codes (003 §7). Codes outside Y_P are published
truthfully.

Deviations and choices (003 leaves them open):

- The leakage targets are the original sensitive codes; added codes only enlarge Y_P (spec §4.6).
- Adaptive blocking: the objective sums E[CIL] over the protected set *after* the leakage step,
  fixed while the search adds codes (spec §4.7's "fixed target", so configurations compare); the
  candidates to add are the leaves of the code tree; the search stops after ``patience`` additions
  without improvement or ``max_added`` additions (003 runs until b_max, which at large ε would add
  every code of the domain one by one).
- Blocks: B_i is i plus its b − 1 nearest protected codes by Eq. 4, ties broken by tree order.
- α of Eq. 4 is not given in 003; it is a parameter (default 0.5).
- Paths of the dependence graph are counted up to length L = 2 by default (spec §4.5 suggests 3).
  The walk sums are not probabilities: a row of δ sums to about 5 on MIMIC-like data (each patient
  has many later codes), so at L = 3 the leak estimates of the common sensitive codes exceed 0.4
  and the leakage step protects nearly every frequent code (83 of ~300 on the synthetic data at
  γ = 0.05), while the attacker's graph prior saturates. L = 1 uses the learned δ alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from .._validation import _fail, check_int
from ..hierarchies.icd9 import ROOT, CodeTree
from ..accounting import Accountant, PrivacyLoss
from ..mechanisms.block_rr import UNPROTECTED, BlockRandomizedResponse, clip_and_normalize
from ..random import Randomness
from ..mechanisms.noise import NoiseSource, check_noise, to_fraction
from ..models.single import LocalDPModel, PlainLDPModel, suppression_non_guarantees
from .dependence import DependenceGraph, LeakageBound, bound_leakage

__all__ = ["ClinSimRR", "ProtectionPlan", "SensitiveRR", "Suppression", "UMaxRR", "UMaxRRExtended",
           "EXTENDING", "METHODS", "make_method", "nearest_blocks", "expected_cil"]


#: what the mechanism reports its loss on, and the unit it protects (one reported element)
TARGET, SCOPE = "code", "element"


# -- blocks and expected loss ---------------------------------------------------------------

def _sorted_rows(dist: np.ndarray) -> np.ndarray:
    """Each row's column order by distance, the row's own element first (ties by index)."""
    d = dist.copy()
    np.fill_diagonal(d, -1.0)
    return np.argsort(d, axis=1, kind="stable")


def nearest_blocks(dist: np.ndarray, b: int) -> np.ndarray:
    """B_i = i and the b − 1 protected elements nearest to i (an (m, b) index array)."""
    return _sorted_rows(dist)[:, :b]


def _block_weights(epsilon: float, m: int, b: int) -> tuple[float, float]:
    """(p_T/b, (1 − p_T)/(m − b)) of Algorithm 1, in overflow-free form."""
    shrink = math.exp(-epsilon)
    denominator = b + (m - b) * shrink
    return 1.0 / denominator, (shrink / denominator if b < m else 0.0)


def expected_cil(dist: np.ndarray, blocks: np.ndarray, epsilon: float,
                 targets: np.ndarray | None = None) -> np.ndarray:
    """E[CIL(e_i)] of Eq. 5 with the block mechanism (spec §4.4), for each target row i."""
    m, b = blocks.shape
    p_in, p_out = _block_weights(epsilon, m, b)
    rows = np.arange(m) if targets is None else np.asarray(targets)
    inside = np.take_along_axis(dist[rows], blocks[rows], axis=1).sum(axis=1)
    return p_in * inside + p_out * (dist[rows].sum(axis=1) - inside)


@dataclass
class _Search:
    """The adaptive-blocking search state (spec §4.7)."""

    tree: CodeTree
    alpha: float
    epsilon: float
    n_targets: int
    leaves: list[int]
    dist: np.ndarray = field(init=False)
    order: np.ndarray = field(init=False)
    cumulative: np.ndarray = field(init=False)
    row_sums: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self._refresh()

    def _refresh(self) -> None:
        idx = np.asarray(self.leaves, dtype=np.int64)
        self.dist = self.tree.dissimilarity(idx[:, None], idx[None, :], self.alpha)
        target = self.dist[: self.n_targets]
        self.order = _sorted_rows(self.dist)[: self.n_targets]
        self.cumulative = np.cumsum(np.take_along_axis(target, self.order, axis=1), axis=1)
        self.row_sums = target.sum(axis=1)

    def add(self, leaf: int) -> None:
        self.leaves.append(leaf)
        self._refresh()

    def cost(self, b: int) -> float:
        """Σ over the fixed targets of E[CIL] with blocks of size b."""
        p_in, p_out = _block_weights(self.epsilon, len(self.leaves), b)
        inside = self.cumulative[:, b - 1]
        return float((p_in * inside + p_out * (self.row_sums - inside)).sum())


def adaptive_blocking(tree: CodeTree, protected: Sequence[str], *, epsilon: float, alpha: float,
                      b_max: int, patience: int, max_added: int) -> dict[str, Any]:
    """003's heuristic for Eq. 8 (spec §4.7): returns the best configuration and the trace."""
    leaves = [int(i) for i in tree.index_of(list(protected))]
    search = _Search(tree, alpha, epsilon, len(leaves), leaves)
    candidates = np.setdiff1d(np.arange(tree.n_leaves), np.asarray(leaves))
    # Sum of d(candidate, s) over the current protected set, updated as codes are added.
    if candidates.size:
        sums = tree.dissimilarity(candidates[:, None], np.asarray(leaves)[None, :], alpha).sum(axis=1)
    b, trace, stale = 1, [], 0
    best: tuple[float, int, int] | None = None  # (expected CIL, block size, protected codes)
    while True:
        cap = min(b_max, len(search.leaves))
        while b + 1 <= cap and search.cost(b + 1) < search.cost(b):
            b += 1
        cost = search.cost(b)
        trace.append({"protected": len(search.leaves), "block_size": b, "expected_cil": cost})
        if best is None or cost < best[0]:
            best = (cost, b, len(search.leaves))
            stale = 0
        else:
            stale += 1
        added = len(search.leaves) - search.n_targets
        if b >= b_max or candidates.size == 0 or stale >= patience or added >= max_added:
            break
        pick = int(np.argmin(sums))                    # smallest mean distance (same divisor)
        leaf = int(candidates[pick])
        candidates = np.delete(candidates, pick)
        sums = np.delete(sums, pick)
        if candidates.size:
            sums = sums + tree.dissimilarity(candidates, np.full(candidates.size, leaf), alpha)
        search.add(leaf)
    assert best is not None  # the loop's first pass sets it
    best_cost, block_size, n_best = best
    chosen = search.leaves[:n_best]
    idx = np.asarray(chosen, dtype=np.int64)
    dist = tree.dissimilarity(idx[:, None], idx[None, :], alpha)
    return {"leaves": chosen, "block_size": block_size, "expected_cil": best_cost,
            "blocks": nearest_blocks(dist, block_size), "trace": trace}


# -- the plan ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProtectionPlan:
    """What a method will do to each element: the protected set, blocks and mechanism.

    Attributes:
        method: ``clinsimrr``, ``umaxrr``, ``umaxrr-yp``, ``rr`` or ``suppression``.
        sensitive: the original sensitive codes X_S (sorted).
        protected: Y_P in mechanism index order (sensitive first, then added codes).
        added_for_leakage / added_for_blocking: the codes ClinSimRR added, in order.
        mechanism: the block mechanism (None for suppression).
        expected_cil: the blocking objective Σ E[CIL] over the targets (None where not searched).
        leakage: the leakage-bounding result (ClinSimRR only).
        search: the adaptive-blocking trace.
        parameters: the method's parameters, for the manifest.
    """

    method: str
    sensitive: tuple[str, ...]
    protected: tuple[str, ...]
    mechanism: BlockRandomizedResponse | None
    parameters: dict[str, Any]
    added_for_leakage: tuple[str, ...] = ()
    added_for_blocking: tuple[str, ...] = ()
    expected_cil: float | None = None
    leakage: LeakageBound | None = None
    search: tuple[dict[str, Any], ...] = ()

    @property
    def block_size(self) -> int:
        return self.mechanism.block_size if self.mechanism is not None else 0

    @property
    def attacked_outputs(self) -> tuple[str, ...]:
        """Released symbols that hide their input: Y_P, or the root for suppression."""
        return self.protected if self.mechanism is not None else (ROOT,)

    def _encode(self, codes: np.ndarray) -> np.ndarray:
        index = pd.Index(self.protected)
        return index.get_indexer(pd.Index(codes))     # -1 (= UNPROTECTED) when absent

    def planned_losses(self) -> tuple[PrivacyLoss, ...]:
        """What :meth:`obfuscate` charges each element: the mechanism's privacy map (none for
        suppression, which claims nothing)."""
        if self.mechanism is None:
            return ()
        return (self.mechanism.privacy_loss(target=TARGET, scope=SCOPE),)

    def obfuscate(self, codes: Any, noise: Randomness | NoiseSource | None = None, *,
                  accountant: Accountant | None = None) -> np.ndarray:
        """Report each element independently; returns the released codes (object array).

        With an ``accountant`` (scope ``"element"``), the mechanism reports its loss for every
        element before it draws (suppression reports nothing: no mechanism runs).
        """
        codes = np.asarray(codes, dtype=object)
        if self.mechanism is None:
            out = codes.copy()
            out[np.isin(codes, np.asarray(self.sensitive, dtype=object))] = ROOT
            return out
        noise = check_noise(noise, owner=f"ProtectionPlan({self.method})")
        reported = self.mechanism.randomise(self._encode(codes), noise, accountant=accountant,
                                            target=TARGET)
        protected = np.asarray(self.protected, dtype=object)
        out = codes.copy()
        hit = reported != UNPROTECTED
        out[hit] = protected[reported[hit]]
        return out

    def likelihood(self, outputs: Any, candidates: Sequence[str]) -> np.ndarray:
        """Pr[M(candidate) = output], shape (len(outputs), len(candidates)); outputs in
        :attr:`attacked_outputs`."""
        outputs = np.asarray(outputs, dtype=object)
        if self.mechanism is None:
            sensitive = np.isin(np.asarray(candidates, dtype=object),
                                np.asarray(self.sensitive, dtype=object))
            return np.where((outputs == ROOT)[:, None] & sensitive[None, :], 1.0, 0.0)
        y = self._encode(outputs)
        x = self._encode(np.asarray(candidates, dtype=object))
        if (y < 0).any():
            raise _fail("outputs", "ProtectionPlan.likelihood", "codes of the protected set", "other codes")
        return self.mechanism.probabilities(x[None, :], y[:, None])

    def estimate_frequencies(self, released: Any) -> pd.Series:
        """Estimated share of each input code from the released codes (003 §4.2, spec §4.2):
        the mechanism's unbiased inversion, clipped at 0 and renormalized. Suppression cannot
        split the root: its share stays on ``*``."""
        counts = pd.Series(np.asarray(released, dtype=object)).value_counts()
        if self.mechanism is None:
            return (counts / counts.sum()).sort_index()
        prot = counts.reindex(list(self.protected), fill_value=0).to_numpy(dtype=float)
        others = counts.drop(labels=list(self.protected), errors="ignore")
        est_p, est_u = self.mechanism.estimate_frequencies(prot, others.to_numpy(dtype=float))
        est_p, est_u = clip_and_normalize(est_p, est_u)
        return pd.concat([pd.Series(est_p, index=list(self.protected)),
                          pd.Series(est_u, index=others.index)]).sort_index()

    @property
    def model(self):
        """The privacy model the plan's release satisfies (:mod:`medanon.models.single`); None
        for suppression, which claims none. Its texts are generated from the plan's parameters."""
        if self.method == "suppression":
            return None
        params = self.parameters
        kind = PlainLDPModel if self.method == "rr" else LocalDPModel
        return kind(method=self.method, epsilon=params.get("epsilon"),
                            protected=len(self.protected), sensitive=len(self.sensitive),
                            block_size=self.block_size,
                            p_s=self.mechanism.p_s if self.mechanism is not None else 0.0,
                            gamma=params.get("gamma"), max_path_length=params.get("max_path_length"),
                            alpha=params.get("alpha"), b_max=params.get("b_max"))

    def guarantee(self) -> list[str]:
        """What holds: the model object's statements (suppression: none)."""
        model = self.model
        if model is None:
            return ["none: sensitive codes are replaced by '*' (a deterministic redaction)"]
        return list(model.guarantees)

    def does_not_guarantee(self) -> list[str]:
        """What does not hold: the model object's statements."""
        model = self.model
        if model is None:
            return list(suppression_non_guarantees())
        return list(model.non_guarantees)


# -- methods ----------------------------------------------------------------------------------

def _epsilon(value: Any, owner: str) -> Fraction:
    return to_fraction(value, name="epsilon", owner=owner)


def _sensitive_codes(sensitive: Sequence[str], tree: CodeTree, owner: str) -> tuple[str, ...]:
    unique = list(dict.fromkeys(str(c) for c in sensitive))
    codes = [unique[i] for i in np.argsort(tree.index_of(unique), kind="stable")] if unique else []
    if not codes:
        raise _fail("sensitive", owner, "at least one sensitive code", "an empty set")
    return tuple(codes)


class UMaxRR:
    """uRR / UMAXRR (Murakami and Kawamoto 2019): Y_P = X_S, b = 1."""

    name = "umaxrr"

    def __init__(self, *, epsilon: Any) -> None:
        self.epsilon = _epsilon(epsilon, "UMaxRR")

    def plan(self, graph: DependenceGraph | None, sensitive: Sequence[str], tree: CodeTree) -> ProtectionPlan:
        codes = _sensitive_codes(sensitive, tree, "UMaxRR")
        blocks = np.arange(len(codes))[:, None]
        return ProtectionPlan(self.name, codes, codes,
                              BlockRandomizedResponse(epsilon=self.epsilon, blocks=blocks),
                              {"epsilon": str(self.epsilon)})


class SensitiveRR(UMaxRR):
    """|X_S|-ary randomized response on the sensitive codes; other codes untouched."""

    name = "rr"

    def plan(self, graph: DependenceGraph | None, sensitive: Sequence[str], tree: CodeTree) -> ProtectionPlan:
        codes = _sensitive_codes(sensitive, tree, "SensitiveRR")
        blocks = np.arange(len(codes))[:, None]
        if len(codes) < 2:
            raise _fail("sensitive", "SensitiveRR", "at least two sensitive codes", f"{len(codes)}")
        return ProtectionPlan(self.name, codes, codes,
                              BlockRandomizedResponse(epsilon=self.epsilon, blocks=blocks,
                                                      randomize_unprotected=False),
                              {"epsilon": str(self.epsilon)})


class Suppression:
    """Replace every sensitive code by the root ``*``."""

    name = "suppression"

    def plan(self, graph: DependenceGraph | None, sensitive: Sequence[str], tree: CodeTree) -> ProtectionPlan:
        codes = _sensitive_codes(sensitive, tree, "Suppression")
        return ProtectionPlan(self.name, codes, codes, None, {})


class ClinSimRR:
    """ClinSimRR (003): dependence-aware protected set, adaptive blocks, block mechanism.

    Args:
        epsilon: ε > 0 per reported element.
        gamma: the leakage bound γ > 0 of 003 §3 (003 uses 0.01, 0.05, 0.1).
        alpha: α ∈ [0, 1] of the dissimilarity, Eq. 4.
        b_max: the largest block size tried (>= 1).
        max_path_length: L, the longest dependence path counted (spec §4.5).
        patience: stop extending the protected set after this many additions without a lower
            expected loss.
        max_added: at most this many codes added by the blocking search.

    Raises:
        ValidationError: for any parameter out of range.
    """

    name = "clinsimrr"

    def __init__(self, *, epsilon: Any, gamma: float = 0.05, alpha: float = 0.5, b_max: int = 16,
                 max_path_length: int = 2, patience: int = 10, max_added: int = 200) -> None:
        owner = "ClinSimRR"
        self.epsilon = _epsilon(epsilon, owner)
        if not isinstance(gamma, (int, float)) or isinstance(gamma, bool) or not 0 < gamma <= 1:
            raise _fail("gamma", owner, "a number in (0, 1]", gamma)
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0 <= alpha <= 1:
            raise _fail("alpha", owner, "a number in [0, 1]", alpha)
        self.gamma, self.alpha = float(gamma), float(alpha)
        self.b_max = check_int(b_max, name="b_max", owner=owner, minimum=1)
        self.max_path_length = check_int(max_path_length, name="max_path_length", owner=owner, minimum=1)
        self.patience = check_int(patience, name="patience", owner=owner, minimum=1)
        self.max_added = check_int(max_added, name="max_added", owner=owner, minimum=0)

    def plan(self, graph: DependenceGraph, sensitive: Sequence[str], tree: CodeTree) -> ProtectionPlan:
        codes = _sensitive_codes(sensitive, tree, "ClinSimRR")
        leakage = bound_leakage(graph, codes, gamma=self.gamma, max_length=self.max_path_length)
        after_leakage = list(codes) + [c for c in leakage.added if c not in codes]
        found = adaptive_blocking(tree, after_leakage, epsilon=float(self.epsilon), alpha=self.alpha,
                                  b_max=self.b_max, patience=self.patience, max_added=self.max_added)
        protected = tuple(tree.leaves[i] for i in found["leaves"])
        mechanism = BlockRandomizedResponse(epsilon=self.epsilon, blocks=found["blocks"])
        return ProtectionPlan(
            ClinSimRR.name, codes, protected, mechanism,
            {"epsilon": str(self.epsilon), "gamma": self.gamma, "alpha": self.alpha,
             "b_max": self.b_max, "max_path_length": self.max_path_length,
             "patience": self.patience, "max_added": self.max_added},
            added_for_leakage=tuple(after_leakage[len(codes):]),
            added_for_blocking=protected[len(after_leakage):],
            expected_cil=found["expected_cil"], leakage=leakage, search=tuple(found["trace"]))


class UMaxRRExtended(ClinSimRR):
    """uRR (b = 1) on ClinSimRR's protected set: the same Y_P as :class:`ClinSimRR` with the same
    parameters, without its blocks (the like-for-like baseline; 003 compares with uRR on X_S only).

    Takes the parameters of :class:`ClinSimRR`.
    """

    name = "umaxrr-yp"

    def plan(self, graph: DependenceGraph, sensitive: Sequence[str], tree: CodeTree) -> ProtectionPlan:
        return self.from_plan(super().plan(graph, sensitive, tree))

    @classmethod
    def from_plan(cls, full: ProtectionPlan) -> ProtectionPlan:
        """The ``umaxrr-yp`` plan of a ClinSimRR plan: its Y_P, its ε, blocks of size 1."""
        if full.method != ClinSimRR.name or full.mechanism is None:
            raise _fail("full", "UMaxRRExtended.from_plan", "a ClinSimRR plan", full.method)
        blocks = np.arange(len(full.protected))[:, None]
        return ProtectionPlan(
            cls.name, full.sensitive, full.protected,
            BlockRandomizedResponse(epsilon=full.mechanism.epsilon, blocks=blocks), full.parameters,
            added_for_leakage=full.added_for_leakage, added_for_blocking=full.added_for_blocking,
            leakage=full.leakage, search=full.search)


METHODS = ("clinsimrr", "umaxrr", "umaxrr-yp", "rr", "suppression")
#: Methods that extend the protected set (and take γ, b_max).
EXTENDING = ("clinsimrr", "umaxrr-yp")


def make_method(name: str, *, epsilon: Any = None, **options: Any):
    """The method object for a CLI name (``epsilon`` is ignored by suppression)."""
    if name == "clinsimrr":
        return ClinSimRR(epsilon=epsilon, **options)
    if name == "umaxrr-yp":
        return UMaxRRExtended(epsilon=epsilon, **options)
    if name == "umaxrr":
        return UMaxRR(epsilon=epsilon)
    if name == "rr":
        return SensitiveRR(epsilon=epsilon)
    if name == "suppression":
        return Suppression()
    raise _fail("method", "clinsim", f"one of {', '.join(METHODS)}", name)
