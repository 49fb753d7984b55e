"""Greedy seed-and-grow clustering shared by MS, PPMS, PPMS+, PPMS++ and HA.

All five algorithms (papers 001, 002 and ``algorithms.md`` §1.7, §2.3) run the same skeleton, the
k-member clustering of Byun et al. with 001's privacy-aware metric:

1. start a group from a seed record;
2. grow it by the candidate t with the least ΔIL'(g, t) = ΔIL(g, t) × PR(g, t) (001 Eqs. 2-7,
   002 Eq. 4) until it holds k *anchor* records: all records (MS), new CaseIDs (PPMS family,
   NC-bounding) or new & medication-discontinued records (HA, |GV1| >= k);
3. the next seed is the record farthest from the one just added (Byun distance), anchor or not:
   001 and 002 seed with any record of the pool, and 001 explains PPMS++'s gain by old (covered)
   records seeding groups in PPMS and PPMS+ (``algorithms.md`` §1.7, line 11);
4. place every record left over in the group with the least ΔIL' (001's Generalization, 002's
   Procedure 1 lines 25-30).

The bound η_s(g) on the number of records holding sensitive value s is floor(θ_s · anchors(g))
(001 Lemma 2 with anchors = |NC(g)|; 002 Lemma 1 with anchors = |GV1|; MS: |g|). While a group
grows it uses max(k, anchors) (``algorithms.md`` §1.3 implementation caveat; otherwise no group
could start). PR(g, t) = 1 + Σ_{s ∈ S_t} PR_s with PR_s = σ/(η − σ + 1), ∞ when σ > η (001 Eqs. 4-5,
002 Eqs. 2-3), σ and η taken for g ∪ {t}.

Determinism and ties: candidates are compared by the key (ΔIL·PR, PR, rank) where ``rank`` is a
random permutation drawn from the caller's random source, so equal scores are broken at random
but reproducibly. :func:`group_reference` is the slow, obviously-correct transcription;
:func:`group_records` finds exactly the same groups fast (tests assert this):

* records with identical QID values form *cells*; ΔIL depends only on the cell, so it is
  computed once per cell with numpy;
* PR(g, t) >= P0(t) = PR of t against an empty group, so ΔIL·P0 is a lower bound on the key;
  candidates are probed in lower-bound order and the search stops as soon as the bound exceeds
  the best exact key (a branch-and-bound that never changes the answer);
* cells (and, when leftovers are placed, groups) are kept in blocks that share their
  categorical values (:class:`_Blocks`); a block's extreme numeric bounds give a lower bound of
  every key in it, so a search opens blocks in bound order and stops when the next block cannot
  hold a better key. The farthest seed is found the same way with upper bounds of the distance.
  Each step then touches the few blocks near the group instead of every cell or group, which
  keeps the grouping near-linear in the number of records (``benchmarks/bench_faers_scale.py``);
* when leftovers are placed, PR is computed exactly for every candidate group at once (a dense
  count table of the frequent terms, {group: count} of the others), so no group is probed one
  by one; a leftover whose own value loses nothing first looks among the zero-loss groups of
  its QID class (ΔIL 0, the least key any group can give), ranked by PR alone
  (:func:`_best_in_class`), and searches the blocks only when none of them can take it;
* while a group grows, a probe of a record that holds a term the group already blocks
  (σ_s + 1 > η_s, known from a bit mask of the most frequent terms) or whose (class, ss) breaks
  α is counted with PR ∞ without evaluating it: at a small θ most probes are such (issue 30);
* HA's term-suppression placement (:func:`_fit_by_suppression`) computes ΔIL for every group
  at once (:func:`_fit_by_suppression_fast`, on the leftover phase's :class:`_GroupTable`)
  instead of one group after the other: the same floats and choice (issue 30: at θ = 0.2 the
  group-by-group loop made HA quadratic).

Classes first (``GroupingInput.classes_first``, the methods' default ``grouping``; issue 30):
before the greedy, :func:`preform_classes` cuts each exact QID class into zero-loss groups of k
anchors under the greedy's own growth rule, and the greedy runs on the rest. This changes which
records share a group (on purpose: less loss, and the greedy's per-record cost is paid for the
residue only); ``group_reference`` does the same, so both implementations still agree. The
fast grouping takes a shortcut there (issue 43): a class whose runs of k records, in the first
fit's order, each hold every bounded term at most η times is cut into those runs at once, which
is what the first fit gives it; the reference fits every class record by record, so the property
tests check the shortcut.

Deviations from the papers (all documented in ``docs/algorithms/``):

* 001's stopping test "∃s: σ_s(S) > θ_s·|NC(S)|" is not used: a group that cannot be completed
  already fails at its growth step. When growth fails (no candidate has a finite key) the seed
  is set aside (it can still join other groups) and grouping continues from the next random
  seed, instead of stopping outright as 002's Procedure 1 does: one unlucky seed should not send
  every remaining record to the leftover phase.
* A leftover record that fits no group without breaking θ (or α) is reported as unplaceable;
  the algorithm decides whether to refuse the release or withhold those cases. HA instead asks
  (``suppress_unplaced``) that such a record be placed once every other leftover is, in the
  group nearest to it in the QIDs, with the terms that group cannot take suppressed
  (:func:`_fit_by_suppression`): the case stays in the release, which HA's md-records need
  (``ha.py``). The group is not chosen by the record's terms, so a suppressed term reaches no
  published byte (issue 41).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import chain
from operator import attrgetter, itemgetter
from typing import overload

import numpy as np

from ..errors import InternalError
from ..hierarchies import Taxonomy

INF = math.inf
#: exact PR evaluations per growth step before the search settles for the best so far.
PROBE_BUDGET = 32
#: the growth step's shortcuts for its usual case (one partition for the first blocks, one
#: cell with the least bound): they find what the full search finds, probes and budget stops
#: included, and fall back to it otherwise (off in a test that compares the two)
USUAL_STEP = True
#: queue positions a growth step walks one by one before it walks the rest with arrays.
QUICK_WALK = 48
#: least block bounds a growth step keeps for the group's next step (usual_again)
_KEPT_BLOCKS = 6
#: the most frequent terms get a bit in each record's term mask (growth search prefilter).
MASK_TERMS = 256
#: floats the growth's caches of per-cell or per-block arrays may hold each (16 MB): the
#: leading categorical terms per tuple of codes (_Cells), a value's bound parts (_CellBlocks)
CACHED_FLOATS = 1 << 21
#: categorical hierarchies up to this many nodes get a full LCA table.
LCA_TABLE_MAX = 1024
_EPS = 1e-9
#: the tree arrays' slot of a numeric attribute (QidSpace): never read
_NO_TREE = np.empty(0, dtype=np.int64)


# ------------------------------------------------------------------------------------------ space
@dataclass(frozen=True)
class Attribute:
    """One QID in the loss: categorical (taxonomy) or numeric (range of the whole data set)."""

    name: str
    taxonomy: Taxonomy | None = None
    #: max − min of the present values of the whole (covered) data set: every numeric term is
    #: then at most 1, which the grouping's block bounds rely on (``common._with_ranges``)
    value_range: float = 0.0
    #: numeric QIDs with missing values as their own value: missing is encoded as the point
    #: interval [m, m] at this sentinel above every real value (see ``common._encode_qids``)
    missing_at: float | None = None

    @property
    def numeric(self) -> bool:
        return self.taxonomy is None


class QidSpace:
    """The QIDs of 001 Eq. 1 with precomputed arrays for LCAs and heights."""

    def __init__(self, attributes: Sequence[Attribute]):
        self.attributes = tuple(attributes)
        # per attribute, its tree's arrays; a numeric attribute has no tree, its slots hold an
        # empty array that is never read (the attribute's kind is checked first)
        self._anc: list[np.ndarray] = []
        self._depth: list[np.ndarray] = []
        self._hnorm: list[np.ndarray] = []
        for a in self.attributes:
            tax = a.taxonomy
            if tax is None:  # numeric
                self._anc.append(_NO_TREE)
                self._depth.append(_NO_TREE)
                self._hnorm.append(_NO_TREE)
                continue
            depth = np.asarray(tax.depth_array, dtype=np.int64)
            parent = tax.parent_array
            height = int(depth.max()) if len(depth) else 0
            anc = np.full((len(depth), height + 1), -1, dtype=np.int64)
            for code in range(len(depth)):
                c = code
                while c >= 0:
                    anc[code, depth[c]] = c
                    c = int(parent[c])
            self._anc.append(anc)
            self._depth.append(depth)
            h = float(tax.height)
            sub = np.asarray(tax.subtree_height_array, dtype=float)
            self._hnorm.append(sub / h if h > 0 else np.zeros_like(sub))
        # Small trees (MeSH age, sex, most user hierarchies): a full LCA table, one lookup each.
        self._table: list[np.ndarray | None] = []
        for j, a in enumerate(self.attributes):
            size = 0 if a.numeric else len(self._depth[j])
            if a.numeric or size > LCA_TABLE_MAX:
                self._table.append(None)
                continue
            codes = np.arange(size)
            self._table.append(np.stack([self._lca_climb(j, x, codes) for x in range(size)]))
        # With a full table, the term of every LCA too (cat_term of the table, the same floats
        # in one lookup instead of two), and the terms as Python floats for scalar losses.
        self._cost = [None if t is None else self._hnorm[j][t] for j, t in enumerate(self._table)]
        self._table_list: list[list[list[int]] | None] = [
            None if t is None else t.tolist() for t in self._table]
        self._hnorm_list: list[list[float]] = [h.tolist() for h in self._hnorm]

    def _lca_climb(self, j: int, a: int, codes: np.ndarray) -> np.ndarray:
        anc, depth = self._anc[j], self._depth[j]
        da = int(depth[a])
        row = anc[a, :da + 1]
        match = anc[codes, :da + 1] == row
        return row[match.sum(axis=1) - 1]

    def lca_with(self, j: int, a: int, codes: np.ndarray) -> np.ndarray:
        """LCA codes of ``a`` with each of ``codes`` in categorical attribute ``j``."""
        table = self._table[j]
        if table is not None:
            return table[a][codes]
        return self._lca_climb(j, a, codes)

    def lca(self, j: int, a: int, b: int) -> int:
        table = self._table_list[j]
        if table is not None:
            return table[a][b]
        return int(self._lca_climb(j, a, np.array([b]))[0])

    def cost_with(self, j: int, a: int, codes: np.ndarray) -> np.ndarray:
        """cat_term(j, lca_with(j, a, codes)): the term of each LCA (the same floats)."""
        cost = self._cost[j]
        if cost is not None:
            return cost[a][codes]
        return self._hnorm[j][self._lca_climb(j, a, codes)]

    def losses_with(self, cat: Sequence, lo: Sequence, hi: Sequence, many_cat: Sequence,
                    many_lo: Sequence, many_hi: Sequence) -> np.ndarray:
        """L(lub(x, y_i)) for one value x = (cat, lo, hi) and each y_i of the ``many_*`` arrays.

        Serves both "a group against many cells" and "a record against many groups"; terms are
        added in attribute order like :func:`state_loss`, so the floats agree bit for bit (the
        sum starts from the first term rather than from 0.0 + it: the same float, as no term
        is -0.0).
        """
        total = None
        for j, a in enumerate(self.attributes):
            if a.numeric:
                term = self.num_term(j, np.minimum(many_lo[j], lo[j]), np.maximum(many_hi[j], hi[j]))
            else:
                term = self.cost_with(j, int(cat[j]), many_cat[j])
            total = term if total is None else total + term
        if total is None:
            return np.zeros(len(next(a for a in (*many_cat, *many_lo) if a is not None)))
        return total

    def cat_term(self, j: int, code):
        """h(C_j, g)/h(C_j) of 001 Eq. 1 for an LCA code (scalar or array)."""
        return self._hnorm[j][code]

    def num_term(self, j: int, lo, hi):
        """(max − min)/(range of the data set) of 001 Eq. 1 (0 when the range is 0).

        With missing values as a value (``missing_at``), a group of missing values costs 0 and
        a group mixing missing and present values costs 1: it is published as ``*``.
        """
        a = self.attributes[j]
        r = a.value_range
        term = (hi - lo) / r if r > 0 else (hi - lo) * 0.0
        if a.missing_at is None:
            return term
        m = a.missing_at
        return np.where(hi >= m, np.where(lo >= m, 0.0, 1.0), term)

    def num_term_scalar(self, j: int, lo: float, hi: float) -> float:
        """:meth:`num_term` of one interval, with Python floats: the same IEEE operations and
        the same float, without numpy's per-call cost (a scalar hot path of the grouping)."""
        a = self.attributes[j]
        m = a.missing_at
        if m is not None and hi >= m:
            return 0.0 if lo >= m else 1.0
        r = a.value_range
        return float((hi - lo) / r if r > 0 else (hi - lo) * 0.0)


def state_loss(space: QidSpace, cat: Sequence[int | None], lo: Sequence[float | None],
               hi: Sequence[float | None]) -> float:
    """Per-record loss L(g) of a group whose generalized value is (cat, lo, hi); IL(g) = |g|·L(g).

    Attribute terms are added in the space's order, starting from 0.0, everywhere (scalar and
    vectorized), so that the fast and the reference grouping compute bit-identical floats.
    """
    total = 0.0
    # per attribute, a code (categorical) or two bounds (numeric), the others None
    for j, code in enumerate(cat):
        if code is None:
            low, high = lo[j], hi[j]
            assert low is not None and high is not None
            total = total + space.num_term_scalar(j, low, high)
        else:
            total = total + space._hnorm_list[j][code]
    return total


def delta_il(size, loss_before, loss_after):
    """ΔIL(g, t) = IL(g ∪ {t}) − IL(g) = |g|·(L' − L) + L' (001 Eq. 2); never negative."""
    return size * (loss_after - loss_before) + loss_after


def _delta_il_arrays(size: np.ndarray, loss_before: np.ndarray, loss_after: np.ndarray
                     ) -> np.ndarray:
    """:func:`delta_il` of arrays in one new array (``loss_after`` is not changed): the same
    operations, (L' − L)·|g| being |g|·(L' − L), without two temporary arrays (the leftover
    placement calls it 12k times on a 450k quarter 2)."""
    out = loss_after - loss_before
    out *= size
    out += loss_after
    return out


#: η of a term whose θ is 1: certainty is allowed, so the count is not bounded.
UNBOUNDED = 1 << 40


def eta(theta: float, anchors: int) -> int:
    """η_s = floor(θ_s · anchors) (001 Lemma 2, 002 Lemma 1), robust to 0.29·100 = 28.999…

    θ_s = 1 allows certainty, so such a term never limits a group (:data:`UNBOUNDED`); the
    frequency-based θ* gives 1.0 to the most common, least sensitive terms (001).
    """
    if theta >= 1.0:
        return UNBOUNDED
    return math.floor(theta * anchors + _EPS)


def etas_of(theta: np.ndarray, anchors) -> np.ndarray:
    """Vectorized :func:`eta` (over terms, or over groups for one term)."""
    raw = np.floor(theta * anchors + _EPS).astype(np.int64)
    return np.where(theta >= 1.0, UNBOUNDED, raw)


def privacy_risk(terms: Sequence[int], sigma: dict[int, int],
                 etas: np.ndarray | Sequence[int] | _EtaView) -> float:
    """PR(g, t) of 001 Eq. 5 / 002 Eq. 3: 1 + Σ σ/(η − σ + 1) over t's values, ∞ above η.

    ``sigma`` holds σ_s(g) (before t); ``etas`` maps a term id to η_s(g ∪ {t}).
    """
    total = 1.0
    for s in terms:
        c = sigma.get(s, 0) + 1
        e = etas[s]
        if c > e:
            return INF
        total += c / (e - c + 1)
    return total


# ------------------------------------------------------------------------------------ HA counters
# 002's Procedure 3 (Update_Group) for record classes; counters are [MSAVR_1..4, N_1..4].
NEW_MD, NEW_NMD, OLD_MD, OLD_NMD = 0, 1, 2, 3
#: the views GV1..GV4 (0..3) a record of each class belongs to.
VIEWS_OF_CLASS = {NEW_MD: (0, 1, 2, 3), NEW_NMD: (1, 3), OLD_MD: (2, 3), OLD_NMD: (3,)}


def ha_update(counters: list[int], cls: int, ss: bool, remaining: bool) -> list[int]:
    """Counters after adding a record of class ``cls`` (002 Procedure 3); returns a new list."""
    c = list(counters)
    if not ss:
        return c
    for v in VIEWS_OF_CLASS[cls]:
        c[v] += 1
        if cls != NEW_MD or remaining:  # an n&md record outside R_G takes a new position
            c[4 + v] += 1
    return c


def ha_ok(counters: Sequence[int], alpha: float) -> bool:
    """002's Procedure 2 (Judge_α_bounding): MSAVR_x / N_x <= α in all four views."""
    return all(counters[v] <= alpha * counters[4 + v] + _EPS for v in range(4))


# ------------------------------------------------------------------------------------------ input
@dataclass(frozen=True)
class GroupingInput:
    """Encoded records for the grouping (all arrays of length n).

    Attributes:
        space: the QIDs.
        cat: per attribute, int codes (categorical) or None (numeric).
        lo, hi: per attribute, float bounds (numeric) or None (categorical).
        term_ptr, term_ids: CSR of each record's sensitive values (sorted term ids).
        theta: θ per term id.
        anchor: records that count towards k and η (see module docstring).
        pool: records that may seed or join a group while it grows (PPMS++: new cases only).
        rank: a permutation of 0..n-1 (random tie-breaks).
        k: minimum anchors per group.
        alpha: HA's α, or None (no α-bounding).
        ha_class, ss: HA record class (NEW_MD, ...) and ss flag, when alpha is given.
        suppress_unplaced: place a leftover that fits no group in its nearest group, with the
            terms that group cannot take suppressed (:func:`_fit_by_suppression`), instead of
            reporting it unplaceable (HA).
        ss_cells: with alpha, per ss column ``(term_ptr, term_ids, minimum count)``: the CSR of
            each record's term ids in that column, so that a record's ss flag can be judged
            again on the terms it keeps after a suppression (``ss`` must agree with it).
        late: see the field's comment (:func:`_without_late_terms`).
    """

    space: QidSpace
    cat: tuple[np.ndarray | None, ...]
    lo: tuple[np.ndarray | None, ...]
    hi: tuple[np.ndarray | None, ...]
    term_ptr: np.ndarray
    term_ids: np.ndarray
    theta: np.ndarray
    anchor: np.ndarray
    pool: np.ndarray
    rank: np.ndarray
    k: int
    alpha: float | None = None
    ha_class: np.ndarray | None = None
    ss: np.ndarray | None = None
    suppress_unplaced: bool = False
    ss_cells: tuple[tuple[np.ndarray, np.ndarray, int], ...] = ()
    classes_first: bool = False
    #: records kept out of the grouping and of the ordinary leftover placement, and placed by
    #: suppression after them (``suppress_unplaced``): set by :func:`group_records`'s passes
    late: np.ndarray | None = None
    #: ``term_ids`` and ``term_ptr`` as lists: :meth:`terms` slices a record's term ids out of
    #: them when asked (a list per record made up front cost a second at 450k records, and the
    #: grouping asks for the terms of a fraction of them)
    _term_id_list: list[int] = field(init=False, repr=False, compare=False)
    _term_ptr_list: list[int] = field(init=False, repr=False, compare=False)
    #: ``(alpha, ha_class, ss)`` with α-bounding, else None: one test for the α code of a
    #: probe (:meth:`_Group.risk`)
    _alpha_columns: tuple[float, np.ndarray, np.ndarray] | None = field(
        init=False, repr=False, compare=False)

    #: anchors -> 1/η_s at that count for every term (∞ where η_s < 1): :meth:`inverse_etas`
    _inverse_etas: dict[int, list[float]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_inverse_etas", {})
        # -0.0 as 0.0: the grouping forms cells of equal values, where -0.0 == 0.0, and the
        # growth step takes a record's bounds from its cell's (the first record's) value, not
        # its own; with both signs in one cell, which zero a group's bound holds would depend
        # on the records' order. Adding 0.0 changes no other float.
        for name in ("lo", "hi"):
            bounds = getattr(self, name)
            if any(x is not None and bool((np.signbit(x) & (x == 0)).any()) for x in bounds):
                object.__setattr__(self, name, tuple(None if x is None else x + 0.0
                                                     for x in bounds))
        if self.alpha is None:
            object.__setattr__(self, "_alpha_columns", None)
        elif self.ha_class is None or self.ss is None:
            # (so that the α code below may take them as given whenever alpha is)
            raise InternalError("The grouping's alpha needs each record's ha_class and ss.")
        else:
            object.__setattr__(self, "_alpha_columns", (self.alpha, self.ha_class, self.ss))
        object.__setattr__(self, "_term_id_list", self.term_ids.tolist())
        object.__setattr__(self, "_term_ptr_list", self.term_ptr.tolist())

    @property
    def n(self) -> int:
        return len(self.rank)

    def terms(self, r: int) -> list[int]:
        """Record r's term ids (sorted), as a new list."""
        ptr = self._term_ptr_list
        return self._term_id_list[ptr[r]:ptr[r + 1]]

    def inverse_etas(self, anchors: int) -> list[float]:
        """1/η_s for every term s at ``anchors`` (∞ where η_s < 1), as Python floats: the term a
        record holding s adds to PR in a group without s (σ 0: c/(η − c + 1) with c = 1, the
        same float as :func:`privacy_risk` computes), cached per anchor count."""
        inv = self._inverse_etas.get(anchors)
        if inv is None:
            e = etas_of(self.theta, anchors)
            ok = e >= 1
            out = np.full(len(e), INF)
            out[ok] = 1.0 / e[ok]
            inv = self._inverse_etas[anchors] = out.tolist()
        return inv

    def growth_etas(self) -> np.ndarray:
        """η_s while a group grows: floor(θ_s · k)."""
        return etas_of(self.theta, self.k)

    def base_risk(self) -> np.ndarray:
        """P0(t): PR of t against an empty growing group (a lower bound of PR(g, t) in growth)."""
        etas = self.growth_etas()
        ptr = self.term_ptr
        total = np.ones(self.n)
        # 1 + Σ 1/η_s, each record's terms added in its term order (np.add.at adds one
        # element after the other, in index order: the floats of a loop over the terms), for
        # a slice of records at a time (the per-term arrays of all records were 50 MB at 450k)
        step = 1 << 16
        for first in range(0, self.n, step):
            last = min(first + step, self.n)
            e = etas[self.term_ids[ptr[first]:ptr[last]]]
            with np.errstate(divide="ignore"):
                inverse = np.where(e >= 1, 1.0 / np.maximum(e, 1), INF)
            np.add.at(total, np.repeat(np.arange(first, last), np.diff(ptr[first:last + 1])),
                      inverse)
        return total


@dataclass
class GroupingResult:
    """Group of each record (-1: not placed), and what happened on the way."""

    group_of: np.ndarray
    n_groups: int
    unplaced: list[int] = field(default_factory=list)
    failed_seeds: int = 0
    budget_stops: int = 0
    leftovers: int = 0
    #: record -> the term ids suppressed so that it fits its group (``suppress_unplaced``).
    suppressed: dict[int, tuple[int, ...]] = field(default_factory=dict)
    #: groups formed inside exact QID classes before the greedy (``classes_first``).
    preformed: int = 0
    #: the records placed by suppression (``suppress_unplaced``): in the result of
    #: :func:`group_records`, exactly those the grouping left out (``GroupingInput.late``)
    late: list[int] = field(default_factory=list)
    #: groupings run to find them (1: no record needed suppression)
    passes: int = 1


class _Group:
    """A group's generalized value, counts and σ (shared by both implementations)."""

    __slots__ = ("cat", "lo", "hi", "size", "loss", "anchors", "sigma", "ha", "members")

    def __init__(self, data: GroupingInput, r: int):
        # per attribute, the code (categorical) or the bounds (numeric), None for the others
        self.cat: list[int | None] = [None if c is None else int(c[r]) for c in data.cat]
        self.lo: list[float | None] = [None if x is None else float(x[r]) for x in data.lo]
        self.hi: list[float | None] = [None if x is None else float(x[r]) for x in data.hi]
        self.size = 0
        self.loss = state_loss(data.space, self.cat, self.lo, self.hi)
        self.anchors = 0
        self.sigma: dict[int, int] = {}
        self.ha = [0, 0, 0, 0, data.k, data.k, data.k, data.k]
        self.members: list[int] = []

    def _merged(self, data: GroupingInput, r: int) -> tuple[list, list, list]:
        """The generalized value of g ∪ {r}: LCAs and interval hulls."""
        space = data.space
        cat, lo, hi = list(self.cat), list(self.lo), list(self.hi)
        # per attribute, the group's code (categorical) or bounds (numeric), as the records'
        for j, code in enumerate(self.cat):
            if code is None:
                low, high, los, his = self.lo[j], self.hi[j], data.lo[j], data.hi[j]
                assert low is not None and high is not None and los is not None and his is not None
                lo[j] = min(low, float(los[r]))
                hi[j] = max(high, float(his[r]))
            else:
                codes = data.cat[j]
                assert codes is not None
                cat[j] = space.lca(j, int(codes[r]), code)
        return cat, lo, hi

    def add(self, data: GroupingInput, r: int, *, remaining: bool,
            kept: tuple[list[int], bool] | None = None, same_value: bool = False) -> None:
        """Add record r; ``kept`` = (its published terms, its ss flag on them) when some of its
        terms are suppressed (then only those terms count in σ and that flag in the α counters).
        ``same_value``: the caller knows that r's QID values leave the group's value (and so
        its loss) as they are (a point of the group's own exact QID class, all of whose records
        share their values): the LCAs and hulls are not computed again."""
        sigma = self.sigma  # (read before r joins: a _ClassGroup counts its members when read)
        for s in self._join(data, r, remaining=remaining, kept=kept, same_value=same_value):
            sigma[s] = sigma.get(s, 0) + 1

    def _join(self, data: GroupingInput, r: int, *, remaining: bool,
              kept: tuple[list[int], bool] | None, same_value: bool) -> list[int]:
        """:meth:`add` but for σ: the group's value and loss, size, anchors, α counters and
        members take r; returns the terms r adds to σ (:class:`_GroupTable` counts them in its
        own table)."""
        with_alpha = data._alpha_columns  # (alpha, ha_class, ss) or None
        if kept is None:
            terms = data.terms(r)
            ss = bool(with_alpha[2][r]) if with_alpha is not None else False
        else:
            terms, ss = kept
        if not same_value:
            self.cat, self.lo, self.hi = self._merged(data, r)
            self.loss = state_loss(data.space, self.cat, self.lo, self.hi)
        self.size += 1
        self.anchors += int(data.anchor[r])
        if with_alpha is not None:
            self.ha = ha_update(self.ha, int(with_alpha[1][r]), ss, remaining)
        self.members.append(r)
        return terms

    def _join_value(self, space: QidSpace, r: int, value: list, anchor: int) -> None:
        """:meth:`_join` without α nor ``kept``, of a record whose generalized value ``value``
        (per attribute its code or bounds, as Python ints and floats: the arrays' elements) and
        anchor flag the caller already holds: the same LCAs, hulls and loss as :meth:`_merged`
        (min and max of the same floats), without reading the record's columns at a scattered
        row (the leftover placement's non-point joins: about 7 us of cache misses and numpy
        scalars each, 10k of them on a 450k quarter 2)."""
        cat_r, lo_r, hi_r = value
        cat, lo, hi = list(self.cat), list(self.lo), list(self.hi)
        for j, code in enumerate(self.cat):
            if code is None:
                low, high = self.lo[j], self.hi[j]
                assert low is not None and high is not None
                lo[j] = min(low, lo_r[j])
                hi[j] = max(high, hi_r[j])
            else:
                cat[j] = space.lca(j, cat_r[j], code)
        self.cat, self.lo, self.hi = cat, lo, hi
        self.loss = state_loss(space, cat, lo, hi)
        self.size += 1
        self.anchors += anchor
        self.members.append(r)

    def loss_with(self, data: GroupingInput, r: int) -> float:
        """L(g ∪ {r})."""
        return state_loss(data.space, *self._merged(data, r))

    def risk(self, data: GroupingInput, r: int, *, growing: bool, growth_etas: np.ndarray) -> float:
        """PR(g, r), or ∞ when r would break θ (or α) in g."""
        etas: np.ndarray | _EtaView
        if growing:
            etas = growth_etas
        else:
            anchors = self.anchors + int(data.anchor[r])
            etas = _EtaView(data.theta, anchors)
        pr = privacy_risk(data.terms(r), self.sigma, etas)
        if pr == INF:
            return INF
        with_alpha = data._alpha_columns
        if with_alpha is not None:
            alpha, ha_class, ss = with_alpha
            if not ha_ok(ha_update(self.ha, int(ha_class[r]), bool(ss[r]), not growing), alpha):
                return INF
        return pr


class _EtaView:
    """η_s = floor(θ_s · anchors) computed on demand (leftover phase)."""

    __slots__ = ("theta", "anchors")

    def __init__(self, theta: np.ndarray, anchors: int):
        self.theta, self.anchors = theta, anchors

    def __getitem__(self, s: int) -> int:
        return eta(float(self.theta[s]), self.anchors)


def pair_distance(data: GroupingInput, a: int, b: int) -> float:
    """Byun distance: the loss of the two-record group {a, b}."""
    g = _Group(data, a)
    return g.loss_with(data, b)


def seed_alpha_ok(data: GroupingInput, r: int) -> bool:
    if data.alpha is None:
        return True
    assert data.ha_class is not None and data.ss is not None  # given with alpha
    return ha_ok(ha_update([0, 0, 0, 0, data.k, data.k, data.k, data.k], int(data.ha_class[r]),
                           bool(data.ss[r]), False), data.alpha)


# ------------------------------------------------------------------------- classes first
def _alpha_seeds(data: GroupingInput) -> np.ndarray:
    """The records that meet α alone (:func:`seed_alpha_ok` of each)."""
    return np.array([seed_alpha_ok(data, r) for r in range(data.n)], dtype=bool)


def lexsort_runs(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(order, change): the order that sorts the rows of ``columns`` (equal lengths, at least
    one row) lexicographically, first column first, and where in that order a new distinct row
    starts (``change[i]``: row ``order[i]`` differs from the one before it)."""
    packed = _packed_runs(columns)
    return packed if packed is not None else _lexsorted_runs(columns)


def _lexsorted_runs(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lexsort_runs` by ``np.lexsort`` (any columns: the packed sort's fallback, and
    the reference its test holds it to)."""
    order = np.lexsort(columns[::-1])
    change = np.zeros(len(order), dtype=bool)
    change[0] = True
    for col in columns:
        sorted_col = col[order]
        change[1:] |= sorted_col[1:] != sorted_col[:-1]
    return order, change


def _packed_runs(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`lexsort_runs` by one sort of int64 keys, when the rows' ranks and positions fit
    in 63 bits (None otherwise, or with a NaN: the caller's lexsort then decides).

    Each column becomes the dense rank of its values (an integer column its offset from its
    least value; a float column its rank among its distinct values, from one unstable sort:
    equal floats, −0.0 and 0.0 too, get one rank, as ``!=`` and lexsort see them); the ranks,
    first column first, and then the row's position are packed into one key per row. Keys
    are distinct, so a plain sort of them (vectorized in numpy: a few ms at 450k rows, where
    lexsort's indirect stable passes took 70-80 ms over three columns) gives lexsort's order,
    ties by position, and a new distinct row starts where the rank part changes."""
    n = len(columns[0])
    if not n:
        return None
    position_bits = max(n - 1, 1).bit_length()
    room = 1 << (63 - position_bits)
    key: np.ndarray | None = None
    total = 1
    for col in columns:
        kind = col.dtype.kind
        if kind in "iub" and not (kind == "u" and col.itemsize == 8):  # (int64 holds it)
            low, high = int(col.min()), int(col.max())
            span = high - low + 1
            if total * span >= room:
                return None
            code = col.astype(np.int64)
            if low:
                code -= low
        elif kind == "f":
            by_value = np.argsort(col)
            ranked = col[by_value]
            if np.isnan(ranked[-1]):  # (NaN sorts last: none when the last is not)
                return None
            rank = np.zeros(n, dtype=np.int64)
            np.not_equal(ranked[1:], ranked[:-1], out=rank[1:], casting="unsafe")
            np.cumsum(rank, out=rank)
            span = int(rank[-1]) + 1
            if total * span >= room:
                return None
            code = np.empty(n, dtype=np.int64)
            code[by_value] = rank
        else:
            return None
        total *= span
        key = code if key is None else key * span + code
    assert key is not None
    key <<= position_bits
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    order = key & ((1 << position_bits) - 1)
    key >>= position_bits
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(key[1:], key[:-1], out=change[1:])
    return order, change


def qid_classes(data: GroupingInput) -> tuple[np.ndarray, np.ndarray]:
    """(class of each record, first record of each class): records with identical QID values,
    classes numbered in the lexicographic order of their values (as ``np.unique(axis=0)``
    numbers rows, but with one lexsort: ``unique`` over rows was seconds at 450k).

    A class is what :class:`_Cells` calls a cell; a group inside one class loses nothing.
    """
    cols: list[np.ndarray] = []
    # Fewer columns, the same order and classes (each key pass of the lexsort costs alike):
    # consecutive categorical codes packed into one (non-negative codes: the packed values
    # sort as the rows of codes do), and a numeric QID's upper bounds left out where every
    # record's equal its lower (points: rows equal in the one are equal in the other).
    span = 0  # what the last column may still be multiplied by (0: not a packed code column)
    # per attribute, its codes (categorical) or its bounds (numeric), the others None
    for codes, los, his in zip(data.cat, data.lo, data.hi):
        if codes is None:
            assert los is not None and his is not None
            cols.append(los)
            if not np.array_equal(los, his):
                cols.append(his)
            span = 0
            continue
        top = int(codes.max()) + 1 if len(codes) else 1
        if not len(codes) or int(codes.min()) < 0:
            cols.append(codes)
            span = 0
        elif span and span * top < 1 << 62:
            cols[-1] = cols[-1] * top + codes
            span *= top
        else:
            cols.append(codes.astype(np.int64))
            span = top
    n = data.n
    if not cols or not n:
        return np.zeros(n, dtype=np.int64), np.zeros(min(n, 1), dtype=np.int64)
    order, change = lexsort_runs(cols)
    class_sorted = np.cumsum(change) - 1
    class_of = np.empty(n, dtype=np.int64)
    class_of[order] = class_sorted
    return class_of, order[change]


def preform_classes(data: GroupingInput, class_of: np.ndarray | None = None, *,
                    p0: np.ndarray | None = None, alpha_seed: np.ndarray | None = None,
                    by_runs: bool = True) -> tuple[list[_Group], np.ndarray]:
    """Zero-loss groups formed inside the exact QID classes before the greedy runs (issue 30).

    Only anchors of the pool with a finite P0 (and, with α, able to seed) take part. In each
    class, in rank order, the records some of whose terms are bounded (η_s(k) < ∞, or an
    ss-record under α) are placed first-fit into at most ⌊members/k⌋ groups under exactly the
    growth rule of the greedy (PR < ∞: σ_s + 1 <= floor(θ_s·k), α after the record); the other
    records fit anywhere and fill the groups up to k. A group left short of k is undone. Every
    group so formed has k anchors, meets θ and α like a grown group, and has loss 0.

    ``class_of``, ``p0`` (:meth:`GroupingInput.base_risk`) and ``alpha_seed`` (the records that
    meet α alone) may be passed in by a caller that has them; they are computed otherwise.
    ``by_runs=False`` groups every class record by record (the reference grouping does, so
    that the property tests check the shortcut of the runs against it).

    Returns the groups and the mask of the records in them; the rest is the greedy's.
    """
    n, k = data.n, data.k
    taken = np.zeros(n, dtype=bool)
    if n < k:
        return [], taken
    growth_etas = data.growth_etas()
    p0 = data.base_risk() if p0 is None else p0
    eligible = data.pool & data.anchor & (p0 < INF)
    if data.alpha is not None:
        eligible &= _alpha_seeds(data) if alpha_seed is None else alpha_seed
    is_bounded = growth_etas[data.term_ids] < UNBOUNDED
    # only bounded terms can stop a record from joining a group: the others are not tracked
    # (each record's bounded terms, in its term order, as a CSR: b_ptr from the count of
    # bounded terms before each record's first)
    b_ids = data.term_ids[is_bounded]
    bounded_before = np.zeros(len(is_bounded) + 1, dtype=np.int64)
    np.cumsum(is_bounded, out=bounded_before[1:])
    b_ptr = bounded_before[data.term_ptr]
    del bounded_before
    bounded = b_ptr[1:] > b_ptr[:-1]
    if data.alpha is not None:
        assert data.ss is not None  # given with alpha
        bounded |= data.ss.astype(bool)
    if class_of is None:
        class_of, _ = qid_classes(data)
    members = np.flatnonzero(eligible)
    # by class, bounded records first, each kind in rank order: one sort of a packed key (the
    # ranks are distinct, so is the key, and any sort gives lexsort's order) where it fits in
    # 63 bits, a seventh of lexsort's time at 450k records
    if 2 * (int(class_of.max()) + 1) * n < 1 << 62:
        key = (class_of[members] * 2 + ~bounded[members]) * n + data.rank[members]
        members = members[np.argsort(key)]
    else:
        members = members[np.lexsort((data.rank[members], ~bounded[members], class_of[members]))]
    sizes = np.bincount(class_of[members], minlength=int(class_of.max()) + 1)
    starts = np.r_[0, np.cumsum(sizes)]
    # Almost every bounded record fits the first open group (the first-fit below): then a
    # class's groups are its first ⌊members/k⌋·k records (bounded first, then the others, each
    # in rank order) cut into runs of k, as the first fit fills them. That is the case exactly
    # when no run holds a bounded term more often than its η (each record then finds σ_s + 1
    # <= η_s in its run's group, the first open one): checked for every class at once, and
    # only the classes where it fails are grouped record by record (all of them with α).
    cls_sorted = class_of[members]
    m_of = sizes // k
    pos = np.arange(len(members)) - starts[cls_sorted]
    used = pos < (m_of * k)[cls_sorted]
    runs = members[used].reshape(-1, k)
    run_class = np.repeat(np.arange(len(sizes)), m_of)
    exact = np.zeros(len(sizes), dtype=bool)
    # per class grouped record by record, its runs before the first that breaks η: the first
    # fit forms them as they are (each record finds σ_s + 1 <= η_s in its run's group, the
    # first open one, all groups before it full), so its walk starts after them (0 with α or
    # record by record: every run is walked)
    formed_runs = np.zeros(len(sizes), dtype=np.int64)
    if data.alpha is not None or not by_runs:
        exact[m_of > 0] = True
    elif len(runs):
        recs = runs.ravel()
        lengths = b_ptr[recs + 1] - b_ptr[recs]
        at = np.repeat(b_ptr[recs] - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        V = len(data.theta)
        pairs = np.repeat(np.repeat(np.arange(len(runs)), k), lengths) * V + b_ids[at]
        keys, counts = np.unique(pairs, return_counts=True)
        # only a pair held more often than the least η of all can break its term's: the
        # others' terms are not looked up (a few of the 1.3M distinct pairs of a 450k
        # quarter; the same pairs, in the same order)
        maybe = np.flatnonzero(counts > (int(growth_etas.min()) if V else 0))
        keys, counts = keys[maybe], counts[maybe]
        over = keys[counts > growth_etas[keys % V]] // V
        exact[run_class[over]] = True
        # (over ascends: the first of each class's runs that break η)
        broken, first = np.unique(run_class[over], return_index=True)
        formed_runs[broken] = over[first] - (np.cumsum(m_of) - m_of)[broken]
    keep = ~exact[run_class]
    parts, part_class = [runs[keep]], [run_class[keep]]
    eta_list = growth_etas.tolist()

    def bounded_terms(walk: np.ndarray) -> list[list[int]]:
        """The bounded term ids of each record of ``walk``, as lists (made for the records
        walked alone: a list of every record's was 20 ms of a 450k quarter, to walk 15k)."""
        before = b_ptr[walk]
        lengths = b_ptr[walk + 1] - before
        ends = np.cumsum(lengths)
        count = int(ends[-1]) if len(ends) else 0
        ids = b_ids[np.repeat(before - ends + lengths, lengths) + np.arange(count)].tolist()
        ends_list = ends.tolist()
        return [ids[a:b] for a, b in zip([0] + ends_list[:-1], ends_list)]

    alpha = data.alpha
    for c in np.flatnonzero(exact).tolist():
        formed: list[list[int]] = []   # the class's groups' members, k each
        rows = members[starts[c]:starts[c + 1]]
        m = len(rows) // k
        done = int(formed_runs[c])  # runs the first fit forms as they are (all bounded records)
        slots: list[list[int]] = rows[:done * k].reshape(done, k).tolist() + [[] for _ in range(m - done)]
        sigma: list[dict[int, int]] = [{} for _ in range(m)]
        ha = [[0, 0, 0, 0, k, k, k, k] for _ in range(m)]
        hard = int(bounded[rows].sum())
        open_slots = list(range(done, m))  # slots not yet full, in slot order
        walk = rows[done * k:hard]
        for r, terms in zip(walk.tolist(), bounded_terms(walk)):
            if alpha is not None:  # r's α class and ss flag, read once for every slot
                assert data.ha_class is not None and data.ss is not None  # given with alpha
                r_class, r_ss = int(data.ha_class[r]), bool(data.ss[r])
            for at_slot, i in enumerate(open_slots):
                sig = sigma[i]
                if not _fits(sig, terms, eta_list):
                    continue
                if alpha is not None:
                    after = ha_update(ha[i], r_class, r_ss, False)
                    if not ha_ok(after, alpha):
                        continue
                    ha[i] = after
                for s in terms:
                    sig[s] = sig.get(s, 0) + 1
                slots[i].append(r)
                if len(slots[i]) == k:
                    del open_slots[at_slot]
                break
            if not open_slots:
                break
        free = rows[hard:].tolist()
        used_free = 0
        for i in range(m):
            need = k - len(slots[i])
            slots[i] += free[used_free:used_free + need]
            used_free += need
            if len(slots[i]) == k:
                formed.append(slots[i])
        if formed:
            parts.append(np.asarray(formed, dtype=np.int64))
            part_class.append(np.full(len(formed), c, dtype=np.int64))
    flat = np.concatenate(parts)
    if not len(flat):
        return [], taken
    # the groups in class order, each class's in the order formed
    flat = flat[np.argsort(np.concatenate(part_class), kind="stable")]
    taken[flat.ravel()] = True
    return _class_groups(data, flat, class_of), taken


def _fits(sigma: dict[int, int], terms: list[int], etas: list[int]) -> bool:
    """Whether σ_s + 1 <= η_s for every term s of ``terms`` (a loop: a generator's cost is
    felt over every record of every class)."""
    for s in terms:
        if sigma.get(s, 0) >= etas[s]:
            return False
    return True


class _ClassCounts:
    """σ of every group :func:`preform_classes` formed (rows of ``flat``), counted for all of
    them at once when the first is read (:class:`_ClassGroup`)."""

    def __init__(self, data: GroupingInput, flat: np.ndarray):
        self.data, self.flat = data, flat
        #: (term, count) pairs of every group, group after group, and where each group's start
        self._table: tuple[list[int], list[int], list[int]] | None = None

    def sigma(self, i: int) -> dict[int, int]:
        """σ of the group of row i (a new dict, its terms in ascending order)."""
        if self._table is None:
            self._table = self._count()
        terms, counts, cut = self._table
        start, end = cut[i], cut[i + 1]
        return dict(zip(terms[start:end], counts[start:end]))

    def _count(self) -> tuple[list[int], list[int], list[int]]:
        data, flat = self.data, self.flat
        G, k = flat.shape
        V = max(len(data.theta), 1)
        lengths = np.diff(data.term_ptr)[flat.ravel()]
        group_of = np.repeat(np.repeat(np.arange(G), k), lengths)
        starts = data.term_ptr[flat.ravel()]
        pos = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        keys, counts = np.unique(group_of * V + data.term_ids[pos], return_counts=True)
        cut = np.searchsorted(keys // V, np.arange(G + 1))
        return (keys % V).tolist(), counts.tolist(), cut.tolist()


#: _Group's slot of σ (read and set by :attr:`_ClassGroup.sigma`)
_SIGMA_SLOT = _Group.__dict__["sigma"]


class _ClassGroup(_Group):
    """A group formed inside one exact QID class by :func:`preform_classes`: a :class:`_Group`
    whose σ is made when it is first read.

    Most of these groups are never read again (no leftover joins them: every group of a 450k
    quarter 1, seven in ten on quarter 2), so a dict of counts made for each up front was most
    of a second of the quarter's grouping. σ is counted for all of them at once when the first
    is read (:class:`_ClassCounts`; counting one group's members' terms alone cost 16 µs, their
    scattered term lists read from memory). The count is the one :meth:`_Group.add` keeps: a
    preformed group's σ counts exactly its members' terms (none of them is suppressed), and
    :meth:`_Group.add` reads σ before it appends the record it adds, so the members counted
    are those σ counts.
    """

    __slots__ = ("_counts", "_row")
    _counts: _ClassCounts
    _row: int  # the group's row in ``_counts.flat``

    # σ is a property over _Group's slot, not a __getattr__ for the slot not set yet: a class
    # with __getattr__ reads every attribute of its instances through a slower hook (twice
    # the cost of a slot read), and the table and the leftover placement read the 74k
    # preformed groups' values, sizes and members of a 450k quarter 2 many times.
    @property
    def sigma(self) -> dict[int, int]:
        # σ of the group, counted when first read and kept in the slot. The leftover
        # placement reads σ from its _GroupTable, never from here: once that table is made,
        # this dict (made or not) no longer counts the records the placement adds.
        try:
            return _SIGMA_SLOT.__get__(self, _Group)
        except AttributeError:
            sigma = self._counts.sigma(self._row)
            _SIGMA_SLOT.__set__(self, sigma)
            return sigma

    @sigma.setter
    def sigma(self, value: dict[int, int]) -> None:
        _SIGMA_SLOT.__set__(self, value)


def _class_groups(data: GroupingInput, flat: np.ndarray, class_of: np.ndarray) -> list[_Group]:
    """The :class:`_ClassGroup` of each row of ``flat`` (members of one QID class each): one
    value and loss per class (``class_of``: :func:`qid_classes`), computed for all classes at
    once (:func:`_record_losses`' floats are :func:`state_loss`'s: the same terms, added in
    the same order from 0.0); σ is counted when read."""
    G, k = flat.shape
    first_class = class_of[flat[:, 0]]
    # one record of each class met: a class's records share their QID values
    _, first_at, value_of = np.unique(first_class, return_index=True, return_inverse=True)
    reps = flat[first_at, 0]
    # per attribute, the codes (categorical) or the bounds (numeric) of those records
    cat_cols = [None if c is None else c[reps].tolist() for c in data.cat]
    lo_cols = [None if x is None else x[reps].tolist() for x in data.lo]
    hi_cols = [None if x is None else x[reps].tolist() for x in data.hi]
    nones = [None] * len(reps)
    # (the lists are shared by the class's groups: _Group.add replaces them, never changes them)
    values = list(zip(map(list, zip(*[nones if c is None else c for c in cat_cols])),
                      map(list, zip(*[nones if x is None else x for x in lo_cols])),
                      map(list, zip(*[nones if x is None else x for x in hi_cols])),
                      _record_losses(data, reps).tolist()))
    anchors = data.anchor[flat].sum(axis=1).tolist()
    # without α the counters of a group never move from their start (shared: a group's
    # counters are replaced, never changed in place, by ha_update)
    start = [0, 0, 0, 0, data.k, data.k, data.k, data.k]
    groups: list[_Group] = []
    new = _ClassGroup.__new__
    counts = _ClassCounts(data, flat)
    for i, (row, v, held) in enumerate(zip(flat.tolist(), value_of.tolist(), anchors)):
        cat, lo, hi, loss = values[v]
        g = new(_ClassGroup)
        g.cat, g.lo, g.hi, g.loss = cat, lo, hi, loss
        g.size, g.anchors, g.members, g.ha = k, held, row, start
        g._counts, g._row = counts, i
        if data.alpha is not None:
            assert data.ha_class is not None and data.ss is not None  # given with alpha
            for r in row:
                g.ha = ha_update(g.ha, int(data.ha_class[r]), bool(data.ss[r]), False)
        groups.append(g)
    return groups


def _classes_first(data: GroupingInput, class_of: np.ndarray | None = None, **known
                   ) -> tuple[list[_Group], np.ndarray]:
    """The groups formed before the greedy and the pool it grows from (both implementations);
    ``known`` as in :func:`preform_classes` (with its ``by_runs``)."""
    if not data.classes_first:
        return [], data.pool
    groups, taken = preform_classes(data, class_of, **known)
    return groups, data.pool & ~taken


def _record_losses(data: GroupingInput, rows: np.ndarray | None = None) -> np.ndarray:
    """L({r}) of every record (or of ``rows``): :func:`state_loss` of its own value, vectorized."""
    total = np.zeros(data.n if rows is None else len(rows))
    for j, a in enumerate(data.space.attributes):
        if a.numeric:
            lo, hi = data.lo[j], data.hi[j]
            assert lo is not None and hi is not None  # numeric: bounds
            if rows is not None:
                lo, hi = lo[rows], hi[rows]
            total = total + data.space.num_term(j, lo, hi)
        else:
            codes = data.cat[j]
            assert codes is not None  # categorical: codes
            total = total + data.space.cat_term(j, codes if rows is None else codes[rows])
    return total


# ----------------------------------------------------------------------------- reference version
def group_reference(data: GroupingInput) -> GroupingResult:
    """The grouping written as plainly as possible: O(n²) Python, for tiny inputs and tests."""
    return _without_late_terms(data, _group_reference_once)


def _group_reference_once(data: GroupingInput) -> GroupingResult:
    data = _late_out_of_pool(data)
    n = data.n
    p0 = data.base_risk()
    growth_etas = data.growth_etas()
    rank = data.rank
    groups, pool = _classes_first(data, by_runs=False)
    in_pool = {r for r in range(n) if pool[r]}
    failed: set[int] = set()
    result = GroupingResult(np.full(n, -1, dtype=np.int64), 0, preformed=len(groups))

    def seedable(r: int) -> bool:
        return p0[r] < INF and r not in failed and seed_alpha_ok(data, r)

    def first_seed() -> int | None:
        cands = [r for r in in_pool if seedable(r)]
        return min(cands, key=lambda r: rank[r]) if cands else None

    seed = first_seed()
    while seed is not None:
        if sum(1 for r in in_pool if data.anchor[r] and p0[r] < INF) < data.k:
            break
        g = _Group(data, seed)
        g.add(data, seed, remaining=False)
        in_pool.discard(seed)
        last = seed
        ok = True
        while g.anchors < data.k:
            best, best_r = None, None
            for t in in_pool:
                pr = g.risk(data, t, growing=True, growth_etas=growth_etas)
                if pr == INF:
                    continue
                dil = delta_il(g.size, g.loss, g.loss_with(data, t))
                key = (dil * pr, pr, int(rank[t]))
                if best is None or key < best:
                    best, best_r = key, t
            if best_r is None:
                ok = False
                break
            g.add(data, best_r, remaining=False)
            in_pool.discard(best_r)
            last = best_r
        if not ok:
            in_pool.update(g.members)
            failed.add(seed)
            result.failed_seeds += 1
            seed = first_seed()
            continue
        groups.append(g)
        cands = [r for r in in_pool if seedable(r)]
        seed = (min(cands, key=lambda r: (-pair_distance(data, last, r), rank[r]))
                if cands else None)
    _place_leftovers_reference(data, groups, result)
    return result


def _place_leftovers_reference(data: GroupingInput, groups: list[_Group],
                               result: GroupingResult) -> None:
    grouped = {r for g in groups for r in g.members}
    late = set() if data.late is None else set(np.flatnonzero(data.late).tolist())
    leftovers = sorted((r for r in range(data.n) if r not in grouped and r not in late),
                       key=lambda r: data.rank[r])
    result.leftovers = len(leftovers)
    growth_etas = data.growth_etas()  # (not read: a leftover joins a grown group)
    for r in leftovers:
        best, best_g = None, None
        for gi, g in enumerate(groups):
            pr = g.risk(data, r, growing=False, growth_etas=growth_etas)
            if pr == INF:
                continue
            dil = delta_il(g.size, g.loss, g.loss_with(data, r))
            key = (dil * pr, pr, gi)
            if best is None or key < best:
                best, best_g = key, gi
        if best_g is None:
            result.unplaced.append(r)
        else:
            groups[best_g].add(data, r, remaining=True)
    _place_by_suppression(data, groups, result)
    for gi, g in enumerate(groups):
        result.group_of[g.members] = gi
    result.n_groups = len(groups)


# ---------------------------------------------------------------------------------- fast version
class _Cells:
    """Records with identical QID values, with per-cell queues of candidates."""

    def __init__(self, data: GroupingInput, p0: np.ndarray, seedable: np.ndarray,
                 pool: np.ndarray, classes: tuple[np.ndarray, np.ndarray]):
        self.cell_of, first = classes
        self.count = len(first)
        # per attribute, each cell's code (categorical) or bounds (numeric), None for the others
        self.cat: list[np.ndarray | None] = [None if c is None else c[first].astype(np.int64)
                                             for c in data.cat]
        self.lo: list[np.ndarray | None] = [None if x is None else x[first] for x in data.lo]
        self.hi: list[np.ndarray | None] = [None if x is None else x[first] for x in data.hi]
        # Growth queue: pool records by (P0, rank) within each cell.
        pool = np.flatnonzero(pool)
        order = np.lexsort((data.rank[pool], p0[pool], self.cell_of[pool]))
        self.queue = pool[order]
        self.queue_start = np.searchsorted(self.cell_of[self.queue], np.arange(self.count + 1))
        self.head = self.queue_start[:-1].copy()
        # Seed queue: seedable records by rank within each cell.
        seeds = np.flatnonzero(seedable)
        order = np.lexsort((data.rank[seeds], self.cell_of[seeds]))
        self.seeds = seeds[order]
        self.seed_start = np.searchsorted(self.cell_of[self.seeds], np.arange(self.count + 1))
        self.seed_head = self.seed_start[:-1].copy()
        self.seed_pos = np.full(data.n, -1, dtype=np.int64)
        self.seed_pos[self.seeds] = np.arange(len(self.seeds))
        # Rank of each cell's seed head (∞: no seed left), kept current so that ties between
        # equally far cells are broken with one vectorized argmin.
        self.head_rank = np.full(self.count, np.inf)
        has = self.seed_head < self.seed_start[1:]
        self.head_rank[has] = data.rank[self.seeds[self.seed_head[has]]]

        #: (attribute, categorical code) -> the term of its LCA with every cell's value
        self._cat_cost: dict[tuple[int, int], np.ndarray] = {}
        # The attributes before the first numeric one are categorical: their terms' running
        # sum, added in attribute order as loss_after adds them (the same floats), is kept per
        # tuple of the group's codes, so a step reads it with one lookup.
        attributes = data.space.attributes
        self._lead = next((j for j, a in enumerate(attributes) if a.numeric), len(attributes))
        self._lead_sum: dict[tuple, np.ndarray] = {}
        # numeric QIDs with missing values as a value, and whether a cell holds one there: a
        # step over present cells only skips the missing-value cases of the numeric term
        self._missing_j = [j for j, a in enumerate(attributes) if a.numeric and a.missing_at is not None]
        self.has_missing = np.zeros(self.count, dtype=bool)
        for j in self._missing_j:
            his = self.hi[j]
            assert his is not None
            self.has_missing |= his >= attributes[j].missing_at
        # With one numeric QID after the leading categorical ones (the usual space), its
        # bounds per cell: loss_after's step over present cells in line.
        self._tail: int | None = None
        if self._lead == len(attributes) - 1 and self._lead > 1:
            j = self._lead
            lo_j, hi_j = self.lo[j], self.hi[j]
            assert lo_j is not None and hi_j is not None  # j is numeric
            if attributes[j].value_range > 0:
                self._tail = j
                self._tail_lo, self._tail_hi = lo_j, hi_j

    def release(self) -> None:
        """Empty the caches (the grouping no longer reads this)."""
        self._cat_cost.clear()
        self._lead_sum.clear()

    def loss_after(self, space: QidSpace, g: _Group, cells: np.ndarray, *,
                   present: bool = False) -> np.ndarray:
        """L(g ∪ {t}) for a record t of each of ``cells``: :meth:`QidSpace.losses_with`'s
        terms in its order (the same floats), a categorical term read from a per-cell array
        kept for each code a group takes (few distinct codes, many growth steps).

        ``present``: no cell of ``cells`` holds a missing value (``has_missing``); a numeric
        term of a group that holds none either is then ``(hi − lo)/range`` alone (what
        :meth:`QidSpace.num_term` gives where no bound reaches the missing-value sentinel).
        """
        lead = self._lead
        total = None
        if lead > 1:
            key = tuple(g.cat[:lead])
            total = self._lead_sum.get(key)
            if total is None and (len(self._lead_sum) + 1) * self.count <= CACHED_FLOATS:
                total = self._lead_sum[key] = self._loss_terms(space, g, None, 0, lead)
        if total is None:
            return self._loss_terms(space, g, cells, 0, len(g.cat), None, present)
        j = self._tail
        if j is not None and present:
            g_lo, g_hi, a = g.lo[j], g.hi[j], space.attributes[j]
            assert g_lo is not None and g_hi is not None  # j is numeric
            if a.missing_at is None or g_hi < a.missing_at:
                # _loss_terms's present case in line: (max(hi, g_hi) − min(lo, g_lo))/range,
                # then added to the leading terms (the same floats: addition commutes)
                lo, term = self._tail_lo[cells], self._tail_hi[cells]
                np.maximum(term, g_hi, out=term)
                term -= np.minimum(lo, g_lo, out=lo)
                term /= a.value_range
                term += total[cells]
                return term
        total = total[cells]
        if lead < len(g.cat):
            total = self._loss_terms(space, g, cells, lead, len(g.cat), total, present)
        return total

    def _loss_terms(self, space: QidSpace, g: _Group, cells: np.ndarray | None, first: int,
                    last: int, total: np.ndarray | None = None, present: bool = False
                    ) -> np.ndarray:
        """``total`` plus the terms of attributes ``first`` to ``last`` − 1 of L(g ∪ {t}) for a
        record t of each of ``cells`` (every cell when None), added in attribute order."""
        attributes = space.attributes
        # per attribute, the group's code (categorical) or bounds (numeric), as the cells'
        for j in range(first, last):
            g_code = g.cat[j]
            if g_code is None:
                lo, hi, g_lo, g_hi = self.lo[j], self.hi[j], g.lo[j], g.hi[j]
                assert lo is not None and hi is not None and g_lo is not None and g_hi is not None
                if cells is not None:
                    lo, hi = lo[cells], hi[cells]
                a = attributes[j]
                m = a.missing_at
                if present and (m is None or g_hi < m) and a.value_range > 0:
                    term = np.maximum(hi, g_hi)
                    term -= np.minimum(lo, g_lo)
                    term /= a.value_range
                else:
                    term = space.num_term(j, np.minimum(lo, g_lo), np.maximum(hi, g_hi))
            else:
                code = int(g_code)
                cost = self._cat_cost.get((j, code))
                if cost is None:
                    codes = self.cat[j]
                    assert codes is not None
                    cost = self._cat_cost[(j, code)] = space.cost_with(j, code, codes)
                term = cost if cells is None else cost[cells]
            total = term if total is None else total + term
        if total is None:
            return np.zeros(self.count if cells is None else len(cells))
        return total


def group_records(data: GroupingInput, *, probe_budget: int | None = None) -> GroupingResult:
    """The same groups as :func:`group_reference`, found fast (see the module docstring).

    Args:
        probe_budget: most exact PR evaluations per growth step (default
            :data:`PROBE_BUDGET`). A step that reaches it takes the best candidate evaluated so
            far (candidates are evaluated block by block, each block in lower-bound order) and
            is counted in ``budget_stops``; with no budget stop the groups are exactly the reference's.
    """
    def once(d: GroupingInput) -> GroupingResult:
        with _collection_paused():
            return _group_records_once(d, probe_budget=probe_budget)

    return _without_late_terms(data, once)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's automatic garbage collection paused inside (then back as it was).

    A grouping allocates some 10^5 objects that live until it ends (groups, their member lists,
    value lists and σ dicts) and makes almost no reference cycles; every full collection those
    allocations trigger traverses all of them and the input's term lists (millions of items):
    0.3-0.6 s of a 450k quarter's grouping, for nothing to free. The few cycles a grouping
    leaves (its nested functions) are freed by the first automatic collection after it.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _without_late_terms(data: GroupingInput, group) -> GroupingResult:
    """``group(data)``; with ``suppress_unplaced``, grouped again without the records it cannot
    place, which are then placed by suppression (HA; issue 41).

    A record the grouping cannot place with all its terms is published with some suppressed
    (:func:`_place_by_suppression`). The grouping read those terms: such a record is probed
    while groups grow, and its terms decide which growths succeed. So the groups are found again
    with it left out (``GroupingInput.late``), and again while that leaves further records
    unplaced; the last grouping reads only the records it places with all their terms, and each
    late record is then placed by its QIDs and the terms it keeps. Which records are late is a
    function of every record of the period, as the withheld set is (``common.py``); given that
    set, a suppressed term reaches no published byte. The passes keep the same rank; the first
    pass that leaves no record unplaced besides the late ones is the result.
    """
    if not data.suppress_unplaced:
        return group(data)
    late = np.zeros(data.n, dtype=bool)
    passes = 0
    while True:
        result = group(replace(data, late=late.copy()))
        passes += 1
        # result.late: every record placed by suppression (late or not placed by this pass)
        fresh = [r for r in result.late if not late[r]]
        if not fresh:
            result.passes = passes
            return result
        late[fresh] = True


def _late_out_of_pool(data: GroupingInput) -> GroupingInput:
    """``data`` with its late records out of the pool: they neither seed nor join a growing group."""
    if data.late is None or not data.late.any():
        return data
    return replace(data, pool=data.pool & ~data.late)


def _group_records_once(data: GroupingInput, *, probe_budget: int | None = None) -> GroupingResult:
    data = _late_out_of_pool(data)
    probe_budget = PROBE_BUDGET if probe_budget is None else probe_budget
    n = data.n
    rank = data.rank
    p0 = data.base_risk()
    growth_etas = data.growth_etas()
    alpha_seed = _alpha_seeds(data) if data.alpha is not None else np.ones(n, dtype=bool)
    finite = p0 < INF
    classes = qid_classes(data)
    groups, pool = _classes_first(data, classes[0], p0=p0, alpha_seed=alpha_seed)
    seedable = pool & finite & alpha_seed  # any record seeds, as in 001/002 (not only anchors)
    cells = _Cells(data, p0, seedable, pool, classes)
    alive = pool.copy()                    # in the pool and not in a group
    failed = np.zeros(n, dtype=bool)
    cell_of = cells.cell_of
    # alive pool records and usable seeds per cell (lists: read and written one cell at a
    # time), and whether a cell has any (arrays: what the searches gather for their cells)
    alive_count = np.bincount(cell_of[alive], minlength=cells.count)
    seed_count = np.bincount(cell_of[seedable], minlength=cells.count)
    has_alive, has_seed = alive_count > 0, seed_count > 0
    alive_left, seeds_in = alive_count.tolist(), seed_count.tolist()
    anchors_left = int((alive & data.anchor & finite).sum())
    result = GroupingResult(np.full(n, -1, dtype=np.int64), 0, preformed=len(groups))
    queue, queue_end = cells.queue, cells.queue_start[1:]
    blocks = _CellBlocks(data.space, cells, p0, alive_cells=cell_of[alive],
                         seed_cells=cell_of[seedable])
    # What the walks over the queues read of each record, by queue position (the records of
    # a cell lie side by side): its id, P0 and rank (then its term mask, class and terms).
    queue_list, queued_p0, queued_rank = queue.tolist(), p0[queue].tolist(), rank[queue].tolist()
    queue_end_list = queue_end.tolist()
    # P0 of each cell's queue head (∞: none left), kept current by take and give_back: the
    # search's bound of a cell without reading the head through the queue
    head_p0 = np.full(cells.count, INF)
    has_head = cells.head < queue_end
    head_p0[has_head] = p0[queue[cells.head[has_head]]]
    # With every pool record's P0 finite, ΔIL·P0 needs no mask against 0·∞.
    p0_finite = bool((p0[queue] < INF).all())
    block_of = blocks.block_of.tolist()
    # A block's bound is ∞ while it holds no alive record (or only P0 ∞): kept current here
    # (blocks.mark).
    # What take and give_back read of a pool record, as Python values (a numpy scalar read
    # costs several list reads, and a growth step takes one record): its cell, whether it
    # seeds (before any failure), whether it is an anchor of finite P0, its seed position
    # and its queue position.
    record_info = dict(zip(queue_list, zip(
        cell_of[queue].tolist(), seedable[queue].tolist(),
        (data.anchor[queue] & finite[queue]).tolist(), cells.seed_pos[queue].tolist(),
        range(len(queue_list)))))
    # the seed queues (records and ranks) and each cell's queue heads as lists (cells.head
    # stays current too: first_feasible reads it as an array), and the usable seeds left in all
    seed_list = cells.seeds.tolist()
    seed_rank = rank[cells.seeds].tolist()
    seed_head = cells.seed_head.tolist()
    seed_end = cells.seed_start[1:].tolist()
    head_at = cells.head.tolist()
    block_alive = blocks.alive
    seeds_left = sum(blocks.seeds)
    block_seeds, seedless = blocks.seeds, blocks.seedless
    # Each pool record's term ids by queue position, as lists cut from one list of them all:
    # the growth reads them to probe a record and when it joins, and GroupingInput.terms
    # slices them out of the input's list of every record's terms, whose int objects lie far
    # apart (the slices' reference counts missed the cache on each read).
    lengths = data.term_ptr[queue + 1] - data.term_ptr[queue]
    firsts = np.cumsum(lengths) - lengths
    queued_ids = data.term_ids[np.repeat(data.term_ptr[queue] - firsts, lengths)
                               + np.arange(int(lengths.sum()))]
    queued_term_ids = queued_ids.tolist()
    queued_terms = [queued_term_ids[a:a + m] for a, m in zip(firsts.tolist(), lengths.tolist())]

    def take(r: int) -> None:
        """Remove r from the pool, keeping every cell's queue heads on usable records."""
        nonlocal anchors_left, seeds_left
        alive[r] = False
        c, seeds, counts, at, _ = record_info[r]
        alive_left[c] -= 1
        if not alive_left[c]:
            has_alive[c] = False
        b = block_of[c]
        block_alive[b] -= 1
        if not block_alive[b]:
            blocks.mark(b, True)
        if seeds and not failed[r]:
            seeds_in[c] -= 1
            if not seeds_in[c]:
                has_seed[c] = False
            block_seeds[b] -= 1
            if not block_seeds[b]:
                seedless[b] = -INF
            seeds_left -= 1
        anchors_left -= counts
        pos, end = head_at[c], queue_end_list[c]
        while pos < end and not alive[queue_list[pos]]:
            pos += 1
        head_at[c] = pos
        cells.head[c] = pos
        head_p0[c] = queued_p0[pos] if pos < end else INF
        if at == seed_head[c]:
            advance_seed_head(c)

    def give_back(r: int) -> None:
        nonlocal anchors_left, seeds_left
        alive[r] = True
        c, seeds, counts, at, _ = record_info[r]
        alive_left[c] += 1
        has_alive[c] = True
        usable = seeds and not failed[r]
        b = block_of[c]
        block_alive[b] += 1
        blocks.mark(b, not blocks.p0_finite[b])
        if usable:
            seeds_in[c] += 1
            has_seed[c] = True
            block_seeds[b] += 1
            seedless[b] = 0.0
            seeds_left += 1
        anchors_left += counts
        pos = head_at[c] = min(head_at[c], record_info[r][4])
        cells.head[c] = pos
        head_p0[c] = queued_p0[pos]
        if usable and at < seed_head[c]:
            seed_head[c] = at
            cells.head_rank[c] = seed_rank[at]

    def advance_seed_head(c: int) -> None:
        """Move cell c's seed head to its lowest-rank alive, not failed seed (∞ rank: none)."""
        pos, end = seed_head[c], seed_end[c]
        while pos < end and not (alive[seed_list[pos]] and not failed[seed_list[pos]]):
            pos += 1
        seed_head[c] = pos
        cells.head_rank[c] = seed_rank[pos] if pos < end else INF

    def first_seed() -> int | None:
        cand = np.flatnonzero(seedable & alive & ~failed)
        return int(cand[np.argmin(rank[cand])]) if len(cand) else None

    def farthest_seed(last: int) -> int | None:
        if not seeds_left:
            return None
        # the distance to a cell is the loss of {last} ∪ cell: last's value (its cell's, as
        # Python numbers: what _Group(data, last) would hold) is all the bounds and losses read
        alone = _Group.__new__(_Group)
        c = record_info[last][0]
        alone.cat = [codes[c] if codes else None for codes in cell_cat]
        alone.lo = [x[c] if x else None for x in cell_lo]
        alone.hi = [x[c] if x else None for x in cell_hi]
        low, high = blocks.distance_bounds(alone)
        # every block with a seed whose upper bound reaches the largest lower bound of those
        # blocks may hold the farthest (a seedless block's bounds −∞: out of both)
        low += seedless
        high += seedless
        # (ndarray.nonzero of 1-D masks: flatnonzero's ravel and nonzero wrappers cost a few
        # µs a call, and a 450k quarter 2 seeds 6.6k groups here)
        near = (high >= low.max()).nonzero()[0].tolist()
        live = blocks.cells_of(near)
        live = live[has_seed[live]]
        d = cells.loss_after(data.space, alone, live, present=blocks.present(near))
        tied = (d == d.max()).nonzero()[0]
        if len(tied) == 1:
            c = int(live[tied[0]])
        else:  # the lowest-rank seed head of the equally far cells
            tied = live[tied]
            c = int(tied[np.argmin(cells.head_rank[tied])])
        return seed_list[seed_head[c]]

    # What the usual step of a group's last step knew, for its next step (usual_again): (the
    # group, its value's three lists, the _KEPT_BLOCKS least bounds' blocks in (bound, block)
    # order and their spreads, the next least bound (∞: none), the first blocks, the alive
    # cells of those searched and their L(g ∪ {t}), whether none holds a missing value).
    usual_kept: list[tuple | None] = [None]
    block_p0 = blocks.p0_bound

    def usual_again(g: _Group, blocked: int, alpha_ok: list[bool]
                    ) -> tuple[bool, tuple | None, tuple | None]:
        """The usual step of :func:`best_candidate` for a group whose value did not change since
        its last step, without computing every block's bound: (decided, best key, memo).

        With the same value every block's spread is the same and the size is one more, so no
        bound fell (growth_bounds's operations are monotone in the size, the spread being >= 0,
        and a block only dies while a group grows): every block but the kept ones is still at
        least the kept floor. The kept blocks' bounds are computed again here with growth_bounds's
        operations on Python floats (the same floats); those below the floor are the least
        bounds of all, in (bound, block) order. When they tell the first blocks and settle the
        step as the usual step would (the fifth bound exact, or at least the floor), the step
        is decided here; the cells searched are last time's that are still alive (when the
        first blocks are the same), with their losses (the same value: the same floats).
        Otherwise the memo (first blocks, cells, losses, search result) saves the usual step
        the same search."""
        kept = usual_kept[0]
        usual_kept[0] = None
        if kept is None or kept[0] is not g or kept[1] is not g.cat or kept[2] is not g.lo \
                or kept[3] is not g.hi:
            return False, None, None
        _, _, _, _, least, spreads, floor, opened, cand, after, present = kept
        size, loss, dead = g.size + 1.0, g.loss, blocks.dead
        keyed = []
        for b, spread in zip(least, spreads):
            if dead[b]:
                continue  # (its bound is ∞ now)
            bound = _growth_bound(spread, size, loss, block_p0[b])
            if bound < floor:
                keyed.append((bound, b, spread))
        keyed.sort()
        if len(keyed) > _FIRST_BLOCKS:
            fifth = keyed[_FIRST_BLOCKS][0]
        elif len(keyed) == _FIRST_BLOCKS or floor == INF:
            fifth = floor  # (a lower bound of the fifth; the fifth itself when ∞)
        else:
            return False, None, None
        if not keyed:
            return True, None, None  # no block of finite bound
        first = keyed[:_FIRST_BLOCKS]
        if not first[-1][0] < fifth:
            return False, None, None  # ties: the full search orders them
        now = [b for _, b, _ in first]
        if now == opened:
            still = has_alive[cand]
            cand, after = cand[still], after[still]
        else:
            cand = blocks.cells_of(now)
            cand = cand[has_alive[cand]]
            present = blocks.present(now)
            after = cells.loss_after(data.space, g, cand, present=present)
        best, stopped = search_cells(g, cand, None, [0], blocked, alpha_ok, present, after)
        if stopped or len(now) < _FIRST_BLOCKS or fifth == INF or (
                best is not None and fifth > best[0]):
            usual_kept[0] = (g, g.cat, g.lo, g.hi, [b for _, b, _ in keyed],
                             [spread for _, _, spread in keyed], floor, now, cand, after, present)
            return True, best, None
        return False, None, (now, cand, after, best, stopped)

    def best_candidate(g: _Group, blocked: int) -> tuple | None:
        """Least (ΔIL·PR, PR, rank) key over the alive pool (best-first over blocks, then cells).

        Blocks of cells are opened in the order of their lower bounds, doubling, while a block
        may still hold a better key; their cells are searched by :func:`search_cells`.
        ``blocked``: the mask bits of the frequent terms g blocks (σ_s + 1 > η_s).
        """
        # α after adding a record of each (class, ss) while growing (remaining = no)
        alpha_ok = ([ha_ok(ha_update(g.ha, cls, bool(flag), False), data.alpha)
                     for cls in range(4) for flag in (0, 1)]
                    if data.alpha is not None else [True])
        memo = None
        if USUAL_STEP and usual_kept[0] is not None:
            decided, best, memo = usual_again(g, blocked, alpha_ok)
            if decided:
                return best
        bounds = blocks.growth_bounds(g)
        if USUAL_STEP and len(bounds) > _FIRST_BLOCKS:
            # The usual step: the first blocks (the _FIRST_BLOCKS least bounds, ties by block,
            # as the stable sort below orders them) hold the best key, and the next bound is
            # above it; any other case is searched again the full way. The _FIRST_BLOCKS + 1
            # least finite bounds are found one argmin at a time (each set to ∞, then put
            # back), in (bound, block) order: a fraction of an argpartition's cost on a few
            # hundred blocks.
            first: list[int] = []
            values: list[float] = []
            # (and the next ones, up to _KEPT_BLOCKS + 1, for the group's next step)
            for _ in range(_KEPT_BLOCKS + 1):
                b = int(bounds.argmin())
                v = float(bounds[b])
                if v == INF:
                    break
                first.append(b)
                values.append(v)
                bounds[b] = INF
            for b, v in zip(first, values):
                bounds[b] = v
            floor = values[_KEPT_BLOCKS] if len(values) > _KEPT_BLOCKS else INF
            least = first[:_KEPT_BLOCKS]
            fifth = values[_FIRST_BLOCKS] if len(values) > _FIRST_BLOCKS else INF
            del first[_FIRST_BLOCKS:], values[_FIRST_BLOCKS:]
            if fifth == INF or values[-1] < fifth:  # the first blocks are known without ties
                opened = first
                if opened:
                    present = blocks.present(opened)
                    if memo is not None and memo[0] == opened:
                        cand, after, best, stopped = memo[1:]
                    else:
                        cand = blocks.cells_of(opened)
                        cand = cand[has_alive[cand]]
                        after = cells.loss_after(data.space, g, cand, present=present)
                        best, stopped = search_cells(g, cand, None, [0], blocked, alpha_ok,
                                                     present, after)
                    spread = blocks.last_spread
                    usual_kept[0] = (g, g.cat, g.lo, g.hi, least,
                                     [float(spread[b]) for b in least], floor, opened, cand,
                                     after, present)
                    if stopped or len(opened) < _FIRST_BLOCKS or fifth == INF or (
                            best is not None and fifth > best[0]):
                        return best
                else:
                    return None
        order = bounds.argsort(kind="stable")
        sorted_bounds = bounds[order]
        best, done, probes = None, 0, [0]
        while done < len(order) and sorted_bounds[done] < INF:
            limit = int(sorted_bounds.searchsorted(INF if best is None else best[0],
                                                   side="left" if best is None else "right"))
            if limit <= done:
                break
            upto = min(limit, max(2 * done, _FIRST_BLOCKS))
            opened = order[done:upto].tolist()
            cand = blocks.cells_of(opened)
            best, stopped = search_cells(g, cand[has_alive[cand]], best, probes, blocked,
                                         alpha_ok, blocks.present(opened))
            if stopped:
                return best
            done = upto
        return best

    # Probes that cannot succeed are told apart cheaply: bit i of a record's mask says it holds
    # the i-th most frequent term, so a record holding a term the group blocks (σ_s + 1 > η_s)
    # has PR ∞ without evaluating it; with α, a record whose (class, ss) breaks α likewise.
    freq = np.bincount(data.term_ids, minlength=len(data.theta))
    top = np.argsort(-freq, kind="stable")[:MASK_TERMS]
    top = top[freq[top] > 0]
    bit = np.full(len(data.theta), -1, dtype=np.int64)
    bit[top] = np.arange(len(top))
    # Only the pool's records are probed: masks by queue position, from the pool's terms in
    # queue order (holder: the queue position of each).
    holder = np.repeat(np.arange(len(queue_list)), lengths)
    term_bit = bit[queued_ids]
    in_mask = term_bit >= 0
    holder, term_bit = holder[in_mask], term_bit[in_mask]
    queued_mask = [0] * len(queue_list)
    for at, b in zip(holder.tolist(), term_bit.tolist()):
        queued_mask[at] |= 1 << b
    bit_of = bit.tolist()
    growth_eta_list = growth_etas.tolist()

    def growth_risk(g: _Group, terms: list[int]) -> float:
        """PR(g, r) of a growing group for a record r of these terms: ``g.risk(...,
        growing=True)`` (001 Eq. 5) on η as Python ints (the same float), without its α test,
        which every probe passes first (``alpha_ok`` of r's (class, ss), from the same
        counters)."""
        return privacy_risk(terms, g.sigma, growth_eta_list)

    # each cell's value as Python numbers, for the group's hull with a record of it (grow)
    space = data.space
    cat_attrs = [j for j, codes in enumerate(cells.cat) if codes is not None]
    num_attrs = [j for j, codes in enumerate(cells.cat) if codes is None]
    # (per attribute; empty for the other kind. Floats, as _Group keeps its bounds, whatever
    # the input arrays' dtype)
    cell_cat: list[list[int]] = [[] if codes is None else codes.tolist() for codes in cells.cat]
    cell_lo: list[list[float]] = [[] if x is None else x.astype(np.float64).tolist()
                                  for x in cells.lo]
    cell_hi: list[list[float]] = [[] if x is None else x.astype(np.float64).tolist()
                                  for x in cells.hi]

    def grow(g: _Group, r: int) -> None:
        """``g.add(data, r, remaining=False)`` for a pool record r: g's new value (LCAs and
        hulls, then its loss) from r's cell's value as Python numbers, the same codes and
        floats as :meth:`_Group.add` finds from r's own, and computed again only if it changes."""
        info = record_info[r]
        c = info[0]
        cat, lo, hi = g.cat, g.lo, g.hi
        new_cat, new_lo, new_hi = cat, lo, hi
        for j in cat_attrs:
            code = cat[j]
            assert code is not None
            merged = space.lca(j, cell_cat[j][c], code)
            if merged != code:
                if new_cat is cat:
                    new_cat = list(cat)
                new_cat[j] = merged
        for j in num_attrs:
            low, high = lo[j], hi[j]
            assert low is not None and high is not None
            low, high = min(low, cell_lo[j][c]), max(high, cell_hi[j][c])
            if low != lo[j] or high != hi[j]:
                if new_lo is lo:
                    new_lo, new_hi = list(lo), list(hi)
                new_lo[j], new_hi[j] = low, high
        if new_cat is not cat or new_lo is not lo:
            g.cat, g.lo, g.hi = new_cat, new_lo, new_hi
            g.loss = state_loss(space, new_cat, new_lo, new_hi)
        join(g, r, info[4])

    # What _Group.add reads of a pool record, by queue position: whether it is an anchor, and
    # with α its class and ss flag (given with alpha: GroupingInput)
    queued_anchor = data.anchor[queue].astype(np.int64).tolist()
    queued_alpha = (list(zip(data.ha_class[queue].astype(np.int64).tolist(),
                             data.ss[queue].astype(bool).tolist()))
                    if data.alpha is not None and data.ha_class is not None
                    and data.ss is not None else None)

    def join(g: _Group, r: int, pos: int) -> None:
        """``g.add(data, r, remaining=False, kept=(r's terms, r's ss flag), same_value=True)``
        for the pool record r at queue position ``pos``, in line (two calls less a step): the
        same σ, size, anchors, α counters and members, from lists by queue position."""
        sigma = g.sigma
        for s in queued_terms[pos]:
            sigma[s] = sigma.get(s, 0) + 1
        g.size += 1
        g.anchors += queued_anchor[pos]
        if queued_alpha is not None:
            cls, ss = queued_alpha[pos]
            g.ha = ha_update(g.ha, cls, ss, False)
        g.members.append(r)

    def seed_group(seed: int) -> _Group:
        """``_Group(data, seed)`` with seed added (:func:`join`): its value from its cell's as
        Python numbers (the same codes and floats as the record's own: a cell's records hold
        equal values, and GroupingInput holds no −0.0), its loss by :func:`state_loss`."""
        c, _, _, _, pos = record_info[seed]
        g = _Group.__new__(_Group)
        g.cat = [codes[c] if codes else None for codes in cell_cat]
        g.lo = [x[c] if x else None for x in cell_lo]
        g.hi = [x[c] if x else None for x in cell_hi]
        g.size, g.anchors, g.sigma, g.members = 0, 0, {}, []
        g.loss = state_loss(space, g.cat, g.lo, g.hi)
        g.ha = [0, 0, 0, 0, data.k, data.k, data.k, data.k]
        join(g, seed, pos)
        return g
    # (ha_class and ss are given with alpha: GroupingInput)
    kind_np = ((data.ha_class * 2 + data.ss).astype(np.int64)
               if data.alpha is not None and data.ha_class is not None and data.ss is not None
               else np.zeros(n, dtype=np.int64))
    queued_kind = kind_np[queue].tolist()
    # the same masks as arrays of 64-bit words, for the walk to the first feasible record
    words = []  # (by queue position)
    for w in range((len(top) + 63) // 64):
        sel = term_bit // 64 == w
        word = np.zeros(len(queue_list), dtype=np.uint64)
        np.bitwise_or.at(word, holder[sel], np.left_shift(np.uint64(1),
                                                          (term_bit[sel] % 64).astype(np.uint64)))
        words.append(word)

    def blocked_by(g: _Group, terms: list[int], blocked: int) -> int:
        """``blocked`` with the bits of those of ``terms`` that g now blocks."""
        for s in terms:
            b = bit_of[s]
            if b >= 0 and g.sigma[s] + 1 > growth_eta_list[s]:
                blocked |= 1 << b
        return blocked

    def first_feasible(g: _Group, cand: np.ndarray, lb: np.ndarray, blocked: int,
                       alpha_ok: list[bool], probes: list[int]):
        """With no best key yet, the search's walk over cells ``cand`` (bound order) probes
        every alive record of finite P0 until one has a finite PR: found here with array
        operations (the prefilter of the masks), probing exactly the same records.

        Returns (cell index, queue position, PR) of that record, or None (every cell of finite
        bound walked); ``probes`` counts the records the walk probed.

        Most steps find it among the first few records: those are walked one by one first
        (the array walk costs some twenty numpy calls however short), and the array walk runs,
        from the start, only when :data:`QUICK_WALK` records did not settle it.
        """
        seen = steps = 0
        for at, bound in enumerate(lb.tolist()):
            if bound == INF:
                probes[0] += seen  # the cells of finite bound are all walked: none found
                return None
            c = int(cand[at])
            for pos in range(head_at[c], queue_end_list[c]):
                steps += 1
                if steps > QUICK_WALK:
                    break
                if not alive[queue_list[pos]]:
                    continue
                if queued_p0[pos] == INF:
                    break  # P0 ∞ ends a cell's walk: its queue's tail
                seen += 1
                if queued_mask[pos] & blocked or not alpha_ok[queued_kind[pos]]:
                    continue  # PR ∞ (g.risk would say so)
                pr = growth_risk(g, queued_terms[pos])
                if pr < INF:
                    probes[0] += seen
                    return at, pos, pr
            if steps > QUICK_WALK:
                break
        else:
            probes[0] += seen
            return None
        k = int(np.searchsorted(lb, INF, side="left"))
        cs = cand[:k]
        head = cells.head[cs]
        lengths = queue_end[cs] - head
        total = int(lengths.sum())
        offsets = np.cumsum(lengths) - lengths
        positions = np.repeat(head - offsets, lengths) + np.arange(total)
        which = np.repeat(np.arange(k), lengths)
        recs = queue[positions]
        keep = alive[recs] & (p0[recs] < INF)  # P0 ∞ ends a cell's walk: its queue's tail
        positions, which, recs = positions[keep], which[keep], recs[keep]
        hit = np.asarray(alpha_ok)[kind_np[recs]]
        for w, word in enumerate(words):
            block = np.uint64((blocked >> (64 * w)) & 0xFFFFFFFFFFFFFFFF)
            if block:
                hit &= (word[positions] & block) == 0
        for j in np.flatnonzero(hit).tolist():
            pr = growth_risk(g, queued_terms[int(positions[j])])
            if pr < INF:
                probes[0] += j + 1
                return int(which[j]), int(positions[j]), pr
        probes[0] += len(recs)
        return None

    def least_cell_only(g: _Group, cand: np.ndarray, dil: np.ndarray, lb: np.ndarray,
                        probes: list[int], blocked: int, alpha_ok: list[bool]) -> tuple | None:
        """The search's answer when the usual step makes it plain, else None (``lb`` as given,
        ``probes`` unchanged: the full search then runs as if this had not).

        The usual step: one cell has the least bound, a record of it has a finite PR, and
        every other cell's bound is above the best key of that cell. The search then walks
        that cell alone, probing what this walk probes, and stops (the bound order of the
        other cells, ties included, is never read).
        """
        i = int(lb.argmin())
        least = float(lb[i])
        if least == INF:
            return None
        lb[i] = INF
        second = float(lb[lb.argmin()])  # (lb.min()'s value: no bound is NaN; argmin is cheaper)
        lb[i] = least
        if second == least:
            return None  # ties: the full search orders them
        c = int(cand[i])
        d = float(dil[i])
        end = queue_end_list[c]
        seen = 0
        pos = head_at[c]
        quick_end = min(end, pos + QUICK_WALK)
        best = None
        # first_feasible's walk of its first cell (budget and QUICK_WALK: the full search)
        while pos < quick_end:
            at = pos
            pos += 1
            r = queue_list[at]
            if not alive[r]:
                continue
            if queued_p0[at] == INF:
                return None
            seen += 1
            if queued_mask[at] & blocked or not alpha_ok[queued_kind[at]]:
                continue
            pr = growth_risk(g, queued_terms[at])
            if pr < INF:
                best = (d * pr, pr, queued_rank[at], r)
                break
        if best is None or least > best[0]:
            return None
        count = probes[0] + seen
        # search_cells's walk of the rest of that cell
        while pos < end:
            at = pos
            pos += 1
            r = queue_list[at]
            if not alive[r]:
                continue
            rb = queued_p0[at]
            if rb == INF or (d * rb, rb, queued_rank[at]) >= best[:3]:
                break
            if count >= probe_budget:
                return None
            count += 1
            if queued_mask[at] & blocked or not alpha_ok[queued_kind[at]]:
                continue
            pr = growth_risk(g, queued_terms[at])
            if pr < INF:
                key = (d * pr, pr, queued_rank[at], r)
                if key < best:
                    best = key
        if second <= best[0]:
            return None  # another cell may hold a better key
        probes[0] = count
        return best

    def search_cells(g: _Group, cand: np.ndarray, best: tuple | None, probes: list[int],
                     blocked: int, alpha_ok: list[bool], present: bool,
                     after: np.ndarray | None = None) -> tuple[tuple | None, bool]:
        """The least key over the alive records of cells ``cand`` and ``best``; True when the
        probe budget stopped the search. ``present``: no cell of ``cand`` holds a missing value
        (:meth:`_Cells.loss_after`).

        A cell's records share ΔIL and are queued by (P0, rank), so ΔIL·P0 of the queue head
        bounds every key of the cell; cells are opened in bound order and each is streamed
        until its bound passes the best exact key found so far. ``after``: L(g ∪ {t}) for a
        record t of each cell of ``cand``, when the caller has it.
        """
        if not len(cand):
            return best, False
        # ΔIL = |g|·(L' − L) + L' (delta_il's operations, in place)
        if after is None:
            after = cells.loss_after(data.space, g, cand, present=present)
        dil = after - g.loss
        dil *= g.size
        dil += after
        base = head_p0[cand]
        if p0_finite:
            lb = dil * base
        else:
            lb = np.full(len(cand), INF)
            np.multiply(dil, base, out=lb, where=base < INF)
        if best is None and USUAL_STEP:
            found = least_cell_only(g, cand, dil, lb, probes, blocked, alpha_ok)
            if found is not None:
                return found, False
        chunk = 16
        while True:
            order, outside = _smallest(lb, chunk)
            walk = order.tolist()
            resume = None
            if best is None:
                found = first_feasible(g, cand[order], lb[order], blocked, alpha_ok, probes)
                if found is None:
                    lb[order] = INF  # every cell of finite bound walked, none other opened
                    if outside == INF:
                        return best, False
                    chunk *= 4
                    continue
                at, resume, pr = found
                i = walk[at]
                d = float(dil[i])
                best = (d * pr, pr, queued_rank[resume], queue_list[resume])
                lb[order[:at]] = INF  # opened
                walk = walk[at:]
            for i in walk:
                bound = float(lb[i])
                if bound == INF or (best is not None and bound > best[0]):
                    break
                c = int(cand[i])
                d = float(dil[i])
                start = head_at[c] if resume is None else resume + 1
                resume = None
                for pos in range(start, queue_end_list[c]):
                    r = queue_list[pos]
                    if not alive[r]:
                        continue
                    rb = queued_p0[pos]
                    if rb == INF or (best is not None
                                     and (d * rb, rb, queued_rank[pos]) >= best[:3]):
                        break
                    if best is not None and probes[0] >= probe_budget:
                        result.budget_stops += 1
                        return best, True
                    probes[0] += 1
                    if queued_mask[pos] & blocked or not alpha_ok[queued_kind[pos]]:
                        continue  # PR ∞ (g.risk would say so)
                    pr = growth_risk(g, queued_terms[pos])
                    if pr < INF:
                        key = (d * pr, pr, queued_rank[pos], r)
                        if best is None or key < best:
                            best = key
                lb[i] = INF  # opened
            if outside == INF or (best is not None and best[0] < outside):
                return best, False
            chunk *= 4

    seed = first_seed()
    while seed is not None:
        if anchors_left < data.k:
            break
        g = seed_group(seed)
        take(seed)
        last = seed
        ok = True
        # bits of the frequent terms g blocks (σ_s + 1 > η_s): σ only grows, so a bit once set
        # stays set, and only the terms of the record just added can set one
        blocked = blocked_by(g, queued_terms[record_info[seed][4]], 0)
        while g.anchors < data.k:
            best = best_candidate(g, blocked)
            if best is None:
                ok = False
                break
            r = best[3]
            grow(g, r)
            take(r)
            blocked = blocked_by(g, queued_terms[record_info[r][4]], blocked)
            last = r
        if not ok:
            for r in g.members:
                give_back(r)
            failed[seed] = True
            c, _, _, at, _ = record_info[seed]
            seeds_in[c] -= 1
            if not seeds_in[c]:
                has_seed[c] = False
            b = block_of[c]
            block_seeds[b] -= 1
            if not block_seeds[b]:
                seedless[b] = -INF
            seeds_left -= 1
            if at == seed_head[c]:
                advance_seed_head(c)
            result.failed_seeds += 1
            seed = first_seed()
            continue
        groups.append(g)
        seed = farthest_seed(last)
    # The greedy's own lists and caches (per pool record, cell and block) are not read again:
    # emptied before the leftover placement, whose tables are the grouping's peak (28 MiB of
    # a 450k quarter 2's).
    record_info.clear()
    queued_terms.clear()
    queued_term_ids.clear()
    queued_mask.clear()
    queue_list.clear()
    queued_p0.clear()
    queued_rank.clear()
    queued_kind.clear()
    queued_anchor.clear()
    usual_kept.clear()
    cells.release()
    blocks.release()
    # the preformed groups' records are the pool's records outside the greedy's pool (one
    # mask, not a loop over 10^5 groups); the grown groups' records are added one group each
    grouped = data.pool & ~pool
    for g in groups[result.preformed:]:
        grouped[g.members] = True
    if data.late is not None:
        grouped |= data.late
    _place_leftovers(data, groups, result, leftover=~grouped, class_of=classes[0])
    return result


#: zero-loss groups of a class a leftover looks at one by one before all of them (_best_in_class)
CLASS_SCAN = 64
#: classes of at least this many zero-loss groups keep their rows of σ per term (_ClassGroups),
#: up to this many cells in all (int32: 8 MB)
CLASS_ROWS = 512
KEPT_ROW_CELLS = 1 << 21
#: terms whose per-group counts are kept in a dense table while leftovers are placed.
FREQUENT_TERMS = 64
#: at most so many combined values of the leading categorical attributes for
#: :class:`_GroupTable`'s table of their summed ΔIL terms (a table of this squared floats: 2 MB)
_LEAD_CODES = 512
#: cells of the dense table the leftover phase may use (int16: 32 MB): with few groups, more
#: terms than :data:`FREQUENT_TERMS` get a column, so that fewer σ are read from dicts.
DENSE_CELLS = 1 << 24
#: the dense table counts in int16 while every group is smaller than this (σ <= |g|, and σ + 1
#: must not wrap), in int32 from then on: half the memory to fill and to read (issue 43)
_NARROW_SIGMA = int(np.iinfo(np.int16).max) - 1


class _GroupTable:
    """The groups' values, counts and σ as arrays, kept current while records are placed.

    σ_s(g) of the :data:`FREQUENT_TERMS` most frequent terms is a dense (group × term) table, so
    that their PR is exact for every candidate group at once; the other terms' counts are kept
    per term as {group: count} (a rare term is in few groups) and read as a column on demand.
    """

    def __init__(self, data: GroupingInput, groups: list[_Group]):
        space = data.space
        self.data, self.groups = data, groups
        G = len(groups)
        nattr = len(space.attributes)
        # (each attribute of the 80k groups of a 450k quarter read through attrgetter and
        # itemgetter into np.fromiter: about half the cost of list comprehensions into np.array)
        sizes = list(map(attrgetter("size"), groups))
        numeric = [a.numeric for a in space.attributes]

        def column(values: list, j: int, dtype: type) -> np.ndarray:
            return np.fromiter(map(itemgetter(j), values), dtype=dtype, count=G)

        cats, los, his = (list(map(attrgetter(name), groups)) for name in ("cat", "lo", "hi"))
        self.cat = [None if numeric[j] else column(cats, j, np.int64) for j in range(nattr)]
        self.lo = [column(los, j, float) if numeric[j] else None for j in range(nattr)]
        self.hi = [column(his, j, float) if numeric[j] else None for j in range(nattr)]
        del cats, los, his
        # The leading categorical attributes (those before any numeric one) with a full cost
        # table, when two or more: their terms of ΔIL summed for every pair of (record value,
        # group value) at once, each value as one code (``lead_code``, mixed radix), so that
        # :meth:`delta_il` reads their sum with one lookup instead of a lookup per attribute
        # and the additions (the same floats: the table holds the same sums, added in
        # attribute order, as delta_il adds them)
        lead = 0
        while (lead < nattr and not numeric[lead] and space._cost[lead] is not None):
            lead += 1
        radix = [len(space._depth[j]) for j in range(lead)]
        self._lead = lead if lead >= 2 and math.prod(radix) <= _LEAD_CODES else 0
        self._lead_stride: list[int] = []
        self._lead_cost: np.ndarray | None = None
        self.lead_code: np.ndarray | None = None
        if self._lead:
            stride = 1
            for n_codes in reversed(radix):
                self._lead_stride.insert(0, stride)
                stride *= n_codes
            digits = np.indices(radix).reshape(lead, -1)  # (attribute, combined code)
            tables, codes = space._cost[:lead], self.cat[:lead]
            cost: np.ndarray | None = None
            code: np.ndarray | None = None
            for j, (table_j, codes_j) in enumerate(zip(tables, codes)):
                assert table_j is not None and codes_j is not None
                term_j = table_j[digits[j][:, None], digits[j][None, :]]
                part = codes_j * self._lead_stride[j]
                cost = term_j if cost is None else cost + term_j
                code = part if code is None else code + part
            self._lead_cost, self.lead_code = cost, code
        self.size = np.array(sizes, dtype=float)
        self.loss = np.fromiter(map(attrgetter("loss"), groups), dtype=float, count=G)
        self.anchors = np.fromiter(map(attrgetter("anchors"), groups), dtype=np.int64, count=G)
        # (without α the counters never move and are never read: not gathered)
        self.ha = (np.array([g.ha for g in groups], dtype=np.int64).reshape(G, 8)
                   if data.alpha is not None else np.zeros((G, 8), dtype=np.int64))
        self.freq = np.bincount(data.term_ids, minlength=len(data.theta))
        width = max(FREQUENT_TERMS, DENSE_CELLS // max(G, 1))
        top = np.argsort(-self.freq, kind="stable")[:width]
        top = top[self.freq[top] > 0]
        self.column = np.full(len(data.theta), -1, dtype=np.int64)
        self.column[top] = np.arange(len(top))
        self._column_list: list[int] = self.column.tolist()
        narrow = max(sizes, default=0) < _NARROW_SIGMA
        self.dense = np.zeros((G, len(top)), dtype=np.int16 if narrow else np.int32)
        self.sparse: dict[int, dict[int, int]] = {}
        self._etas: dict[int, np.ndarray] = {}
        #: :meth:`etas` as lists (:meth:`few_risks`), and the groups' anchor counts read as
        #: Python ints (a memoryview over ``anchors``: it stays current)
        self._eta_lists: dict[int, list[int]] = {}
        self._anchors_view = self.anchors.data
        # σ of every group from its members' terms at once (before the leftover phase a
        # group's σ counts exactly its members' terms: no term of theirs is suppressed yet)
        members = np.fromiter(chain.from_iterable(map(attrgetter("members"), groups)),
                              dtype=np.int64, count=sum(sizes))
        owner = np.repeat(np.arange(G), sizes)
        lengths = np.diff(data.term_ptr)[members]
        pos = (np.repeat(data.term_ptr[members] - np.cumsum(lengths) + lengths, lengths)
               + np.arange(int(lengths.sum())))
        term = data.term_ids[pos]
        del pos
        holder = np.repeat(owner, lengths)
        # the counts of each cell, as np.add.at would add them but faster: a bincount of the
        # cells of a slice of groups at a time (``holder`` ascends), so that its int64 counts
        # take half a MB beside the table (slices of 8 MB counts cost twice as much: a
        # fresh 8 MB array is mapped and faulted in each time). A rare term counts in a
        # column past the table's, dropped: the pairs' cells without first selecting the
        # dense ones (three passes over the 2M pairs of a 450k quarter fewer)
        width = self.dense.shape[1]
        past = width + 1
        col = np.where(self.column >= 0, self.column, width)[term]
        rare = np.flatnonzero(col == width)
        cells = holder * past
        cells += col
        del col
        step = max(1, (1 << 16) // max(width, 1))
        edges = np.searchsorted(holder, np.arange(0, G + step, step)).tolist()
        for lo, a, b in zip(range(0, G, step), edges, edges[1:]):
            hi = min(lo + step, G)
            self.dense[lo:hi] = np.bincount(cells[a:b] - lo * past,
                                            minlength=(hi - lo) * past
                                            ).reshape(hi - lo, past)[:, :width]
        #: the dense table's cells one at a time, as Python ints (a memoryview: a cell read or
        #: counted without a numpy scalar, half the cost of one; remade with the table)
        self.cells = self.dense.data
        del cells
        keys, counts = np.unique(term[rare] * max(G, 1) + holder[rare], return_counts=True)
        # (the per-term arrays go before the structures below are made: this is about the
        # peak of a 450k quarter's grouping)
        del members, owner, lengths, term, holder, rare
        self._anchor_list: list[bool] = data.anchor.tolist()
        # (the keys ascend: each term's {group: count} from one slice of them, its groups in
        # ascending order)
        by_term = keys // max(G, 1)
        cut = np.flatnonzero(np.r_[True, by_term[1:] != by_term[:-1], True]).tolist() \
            if len(keys) else []
        holders, held_counts = (keys % max(G, 1)).tolist(), counts.tolist()
        for term_id, a, b in zip(by_term[cut[:-1]].tolist(), cut[:-1], cut[1:]):
            self.sparse[term_id] = dict(zip(holders[a:b], held_counts[a:b]))
        #: the terms outside the dense table each group holds (:meth:`rare_terms_of`): the
        #: pairs above by group (``_rare_owners`` ascending), and per group the terms it took
        #: since (:meth:`_count_terms`); a dict of lists made for every group up front cost
        #: 40 ms of a 450k quarter 2, and only the groups of a few big classes are asked
        owners, terms_of = keys % max(G, 1), keys // max(G, 1)
        by_owner = np.argsort(owners, kind="stable")
        self._rare_owners, self._rare_terms = owners[by_owner], terms_of[by_owner]
        self.rare_added: dict[int, list[int]] = {}

    def rare_terms_of(self, gis: Sequence[int]) -> tuple[list[int], list[int]]:
        """The terms outside the dense table held by groups ``gis``, and the position in
        ``gis`` of the group holding each (a term held by a group once per group at most)."""
        at = np.asarray(gis, dtype=np.int64)
        starts = np.searchsorted(self._rare_owners, at, side="left")
        lengths = np.searchsorted(self._rare_owners, at, side="right") - starts
        pos = (np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
               + np.arange(int(lengths.sum())))
        terms = self._rare_terms[pos].tolist()
        where = np.repeat(np.arange(len(gis)), lengths).tolist()
        added = self.rare_added
        if added:
            for i, gi in enumerate(gis):
                more = added.get(gi)
                if more:
                    terms.extend(more)
                    where.extend([i] * len(more))
        return terms, where

    def etas(self, anchors: int) -> np.ndarray:
        """η_s of every term at ``anchors`` (:func:`etas_of`, the same elements), cached per
        count: the leftover phase meets few distinct counts, and asks for a few terms of one
        of them thousands of times."""
        e = self._etas.get(anchors)
        if e is None:
            e = self._etas[anchors] = etas_of(self.data.theta, anchors)
        return e

    def sigma(self, term: int, cand: np.ndarray | None = None) -> np.ndarray:
        """σ_term(g) of every group (or of groups ``cand``)."""
        col = self.column[term]
        if col >= 0:
            return self.dense[:, col].copy() if cand is None else self.dense[cand, col]
        out = np.zeros(len(self.groups), dtype=np.int64)
        held = self.sparse.get(term)
        if held:
            out[np.fromiter(held.keys(), dtype=np.int64, count=len(held))] = \
                np.fromiter(held.values(), dtype=np.int64, count=len(held))
        return out if cand is None else out[cand]

    def sigma_of(self, term: int, cand: np.ndarray) -> np.ndarray:
        """σ_term(g) of groups ``cand`` (int64, as :meth:`sigmas` gives it)."""
        col = self.column[term]
        if col >= 0:
            return self.dense[cand, col].astype(np.int64)
        return self._sparse_sigma(term, cand)

    def delta_il(self, value: list, cand: np.ndarray) -> np.ndarray:
        """ΔIL(g, r) for groups ``cand`` and a record of generalized value ``value``: the
        terms of :meth:`QidSpace.losses_with` in its order (the same floats), read from the
        table's arrays without gathering the candidates' values first."""
        space = self.data.space
        cat, lo, hi = value
        after: np.ndarray | None = None
        lead = self._lead
        if lead:  # (the leading categorical terms' sum, one lookup: see __init__)
            assert self._lead_cost is not None and self.lead_code is not None
            at = 0
            for j, stride in enumerate(self._lead_stride):
                at += cat[j] * stride
            after = self._lead_cost[at][self.lead_code[cand]]
        for j, a in enumerate(space.attributes):
            if j < lead:
                continue
            if a.numeric:
                glo, ghi = self.lo[j], self.hi[j]
                assert glo is not None and ghi is not None
                m = a.missing_at
                if m is not None and lo[j] < m and hi[j] < m:
                    # r's value is present, so is the low end of every merged interval: of
                    # num_term's missing-value cases only "the group holds the missing value"
                    # (cost 1) is left (its floats, with two operations fewer)
                    # (in place on the one new array: the same operations, fewer arrays)
                    high = ghi[cand]
                    span = np.maximum(high, hi[j])
                    span -= np.minimum(glo[cand], lo[j])
                    width = a.value_range
                    if width > 0:
                        span /= width
                    else:
                        span *= 0.0
                    term = np.where(high >= m, 1.0, span)
                else:
                    term = space.num_term(j, np.minimum(glo[cand], lo[j]),
                                          np.maximum(ghi[cand], hi[j]))
            else:
                codes = self.cat[j]
                assert codes is not None
                term = space.cost_with(j, int(cat[j]), codes[cand])
            after = term if after is None else after + term
        if after is None:
            after = np.zeros(len(cand))
        return _delta_il_arrays(self.size[cand], self.loss[cand], after)

    def _sparse_sigma(self, term: int, cand: np.ndarray) -> np.ndarray:
        """σ_term of groups ``cand`` for a term outside the dense table, reading whichever is
        shorter: the term's {group: count} or the candidates."""
        held = self.sparse.get(term)
        if not held:
            return np.zeros(len(cand), dtype=np.int64)
        if len(held) > len(cand):
            return np.fromiter((held.get(g, 0) for g in cand.tolist()), dtype=np.int64,
                               count=len(cand))
        keys = np.fromiter(held.keys(), dtype=np.int64, count=len(held))
        values = np.fromiter(held.values(), dtype=np.int64, count=len(held))
        order = np.argsort(keys)
        keys, values = keys[order], values[order]
        at = np.minimum(np.searchsorted(keys, cand), len(keys) - 1)
        return np.where(keys[at] == cand, values[at], 0)

    def sigmas(self, terms: Sequence[int], cand: np.ndarray) -> np.ndarray:
        """σ_s(g) for groups ``cand`` (rows) and ``terms`` (columns)."""
        ids = np.asarray(terms, dtype=np.int64)
        cols = self.column[ids]
        if not len(cols) or cols.min() >= 0:  # every term in the dense table: one gather
            return self.dense[cand[:, None], cols].astype(np.int64)
        dense = cols >= 0
        c = np.empty((len(cand), len(terms)), dtype=np.int64)
        c[:, dense] = self.dense[np.ix_(cand, cols[dense])]
        for j in np.flatnonzero(~dense).tolist():
            c[:, j] = self._sparse_sigma(terms[j], cand)
        return c

    def few_risks(self, terms: Sequence[int], own: int, cand: list[int]) -> list[float]:
        """:meth:`risks` without α for a few groups ``cand`` and a record of ``terms`` and
        anchor ``own``, as Python floats: the same operations on the same numbers (σ + 1 and
        η − σ are exact integers, each step one correctly rounded division, added to 1.0 in
        r's term order), so the same floats, without the dozen numpy calls per group set."""
        column, cells, anchors = self._column_list, self.cells, self._anchors_view
        sparse, eta_lists = self.sparse, self._eta_lists
        out = []
        for gi in cand:
            count = anchors[gi] + own
            e = eta_lists.get(count)
            if e is None:
                e = eta_lists[count] = self.etas(count).tolist()
            pr = 1.0
            for s in terms:
                col = column[s]
                if col >= 0:
                    c = cells[gi, col] + 1
                else:
                    held = sparse.get(s)
                    c = (held.get(gi, 0) if held else 0) + 1
                room = e[s] - c + 1
                if room < 1:  # (σ + 1 > η: r breaks θ there)
                    pr = INF
                    break
                pr += c / room
            out.append(pr)
        return out

    def risks(self, r: int, cand: np.ndarray, sigma: np.ndarray | None = None) -> np.ndarray:
        """PR(g, r) of :meth:`_Group.risk` (leftover phase: η from anchors with r) for groups
        ``cand`` at once; ∞ where r would break θ or α. ``sigma``: their :meth:`sigmas` of
        r's terms, when known."""
        data = self.data
        terms = data.terms(r)
        pr = np.ones(len(cand))
        if terms:
            anchors = self.anchors[cand] + int(data.anchor[r])
            ids = np.asarray(terms, dtype=np.int64)
            if anchors.min() == anchors.max():  # the usual case: one row of η for all
                e = self.etas(int(anchors[0]))[ids][None, :]
            else:
                e = etas_of(data.theta[ids][None, :], anchors[:, None])
            c = (self.sigmas(terms, cand) if sigma is None else sigma) + 1
            room = e - c + 1  # >= 1 where the term fits (c <= η)
            step = (c / np.maximum(room, 1)).T
            # 1 + step 1 + step 2 + ... left to right, as privacy_risk adds: the same floats
            pr = pr + step[0]
            for j in range(1, len(terms)):
                pr += step[j]
            pr[(room < 1).any(axis=1)] = INF
        if data.alpha is not None:
            pr[~self.alpha_ok(r, cand)] = INF
        return pr

    def lead_codes(self, rs: np.ndarray) -> np.ndarray | None:
        """Records ``rs``'s combined codes of the leading categorical attributes (``lead_code``
        of a group: see __init__), None without such a table."""
        code = None
        for codes_j, stride in zip(self.data.cat, self._lead_stride):
            assert codes_j is not None
            part = codes_j[rs].astype(np.int64) * stride
            code = part if code is None else code + part
        return code

    def pair_dil(self, rr: np.ndarray, gg: np.ndarray, lead: np.ndarray | None = None
                 ) -> np.ndarray:
        """ΔIL of leftover rr[i] in group gg[i] for every pair i at once: the floats of
        :meth:`delta_il` (the same operations element by element, the loss terms added in
        attribute order). ``lead``: the records' :meth:`lead_codes` per pair, when known."""
        data = self.data
        space = data.space
        after: np.ndarray | None = None
        if self._lead:  # (the leading categorical terms' sum, one lookup: see __init__)
            assert self._lead_cost is not None and self.lead_code is not None
            if lead is None:
                lead = self.lead_codes(rr)
            after = self._lead_cost[lead, self.lead_code[gg]]
        for j, a in enumerate(space.attributes):
            if j < self._lead:
                continue
            if a.numeric:
                los, his, glo, ghi = data.lo[j], data.hi[j], self.lo[j], self.hi[j]
                assert los is not None and his is not None and glo is not None and ghi is not None
                term = space.num_term(j, np.minimum(glo[gg], los[rr]), np.maximum(ghi[gg], his[rr]))
            else:
                codes, gcodes = data.cat[j], self.cat[j]
                assert codes is not None and gcodes is not None
                term = _pair_costs(space, j, codes[rr], gcodes[gg])
            after = term if after is None else after + term
        if after is None:
            after = np.zeros(len(rr))
        return _delta_il_arrays(self.size[gg], self.loss[gg], after)

    def pair_risks(self, rr: np.ndarray, gg: np.ndarray) -> np.ndarray:
        """PR of leftover rr[i] in group gg[i] for every pair i at once, ∞ where the record
        breaks θ (α is not judged): the floats of :meth:`risks` (PR's steps added in the
        record's term order)."""
        ptr = self.data.term_ptr
        lengths = ptr[rr + 1] - ptr[rr]
        ends = np.cumsum(lengths)
        if not len(rr) or ends[-1] <= _PAIR_TERMS:
            return self._pair_risks(rr, gg, lengths, ends)
        # the pairs whose terms start in each span of _PAIR_TERMS (pair, term) elements at a
        # time: arrays of about a hundred thousand elements
        piece = (ends - lengths) // _PAIR_TERMS
        cut = np.flatnonzero(np.r_[True, piece[1:] != piece[:-1], True]).tolist()
        return np.concatenate([self._pair_risks(rr[a:b], gg[a:b], lengths[a:b],
                                                ends[a:b] - (ends[a] - lengths[a]))
                               for a, b in zip(cut[:-1], cut[1:])])

    def _pair_risks(self, rr: np.ndarray, gg: np.ndarray, lengths: np.ndarray,
                    ends: np.ndarray) -> np.ndarray:
        """:meth:`pair_risks` of pairs whose records hold ``lengths`` terms (their running
        total: ``ends``)."""
        data = self.data
        ptr = data.term_ptr
        anchors = self.anchors[gg] + data.anchor[rr].astype(np.int64)
        pr = np.ones(len(rr))
        if not len(rr) or not ends[-1]:
            return pr
        # every (pair, term) at once, pair after pair and each pair's terms in r's order:
        # element first[i] + p is pair i's p-th term
        owner = np.repeat(np.arange(len(rr)), lengths)
        first = ends - lengths
        s = data.term_ids[np.repeat(ptr[rr] - first, lengths) + np.arange(len(owner))]
        col = self.column[s]
        g = gg[owner]
        # the cells' flat positions, one take (cheaper than a two-index gather); a rare
        # term's reads column 0, replaced below
        flat = g * self.dense.shape[1]
        flat += np.maximum(col, 0)
        sigma = self.dense.ravel().take(flat).astype(np.int64)
        del flat
        if _least(col) < 0:
            dense = col >= 0
            sparse = self.sparse
            nothing: dict[int, int] = {}
            rare = np.flatnonzero(~dense)
            sigma[rare] = [sparse.get(term, nothing).get(group, 0)
                           for term, group in zip(s[rare].tolist(), g[rare].tolist())]
        c = sigma + 1
        low, high = int(_least(anchors)), int(_most(anchors))
        if high - low < 8:
            # few anchor counts (one on a 450k quarter 2): η of each pair's term from the
            # cached rows of η (:meth:`etas`: etas_of's elements) instead of etas_of's five
            # passes over every (pair, term)
            e = (self.etas(low)[s] if high == low else
                 np.stack([self.etas(a) for a in range(low, high + 1)])[(anchors - low)[owner], s])
        else:
            e = etas_of(data.theta[s], anchors[owner])
        room = e - sigma  # (η − (σ + 1) + 1: the same integers)
        step = c / np.maximum(room, 1)
        # PR's steps added in each record's term order, as risks adds them: the same floats
        # (the pairs by falling length: those with a p-th term lead)
        by_length = np.argsort(-lengths, kind="stable")
        longer = np.cumsum(np.bincount(lengths)[::-1])[::-1]  # pairs of at least so many terms
        for p in range(int(lengths.max())):
            at = by_length[:longer[p + 1]]
            pr[at] += step[first[at] + p]
        pr[owner[room < 1]] = INF
        return pr

    def alpha_ok(self, r: int, cand: np.ndarray) -> np.ndarray:
        """Whether each group of ``cand`` still meets α with leftover r (all, without α)."""
        data = self.data
        if data.alpha is None:
            return np.ones(len(cand), dtype=bool)
        assert data.ha_class is not None and data.ss is not None  # given with alpha
        after = (_ha_update_rows(self.ha[cand], int(data.ha_class[r])) if data.ss[r]
                 else self.ha[cand])
        return np.all(after[:, :4] <= data.alpha * after[:, 4:] + _EPS, axis=1)

    def add(self, gi: int, r: int, *, kept: tuple[list[int], bool] | None = None,
            same_value: bool = False, terms: list[int] | None = None,
            value: list | None = None, anchor: int | None = None) -> None:
        """Place leftover r in group gi (``kept``, ``same_value``: see :meth:`_Group.add`).

        The group takes r as in :meth:`_Group.add` but for σ (:meth:`_Group._join`), which the
        table counts and the group's dict does not: from the table's making on, σ is read from
        the table only (:func:`_place_leftovers`, :func:`_fit_by_suppression_fast`), and a
        preformed group's dict, made when first read (:class:`_ClassGroup`), is never made
        (the counts of every preformed group at once and a dict of each: about 0.3 s and tens
        of MB of a 450k quarter 2).

        ``terms``: r's term ids when the caller has them (:meth:`GroupingInput.terms`);
        ``value``, ``anchor``: r's generalized value (cat, lo, hi lists) and anchor flag when
        the caller has them (with ``terms``; :meth:`_Group._join_value`)."""
        data, g = self.data, self.groups[gi]
        if same_value and kept is None and data._alpha_columns is None:
            # :meth:`_Group._join` of a record that leaves the value (and the loss) as they
            # are, without α: size, anchors and members (the leftover placement's most
            # common step: points joining a zero-loss group of their class)
            anchors = self._anchor_list[r]
            g.size += 1
            g.members.append(r)
            self.size[gi] = g.size
            if anchors:
                g.anchors += 1
                self.anchors[gi] = g.anchors
            self._count_terms(gi, data.terms(r) if terms is None else terms, g.size)
            return
        if (value is not None and terms is not None and anchor is not None and kept is None
                and not same_value and data._alpha_columns is None):
            g._join_value(data.space, r, value, anchor)
        else:
            terms = g._join(data, r, remaining=True, kept=kept, same_value=same_value)
        if not same_value:
            # per attribute, the group's code (categorical) or bounds (numeric), as the arrays'
            for j, code in enumerate(g.cat):
                if code is None:
                    low, high, los, his = g.lo[j], g.hi[j], self.lo[j], self.hi[j]
                    assert (los is not None and his is not None and low is not None
                            and high is not None)
                    los[gi], his[gi] = low, high
                else:
                    codes = self.cat[j]
                    assert codes is not None
                    codes[gi] = code
            if self._lead:
                assert self.lead_code is not None
                at = 0
                for j, stride in enumerate(self._lead_stride):
                    at += g.cat[j] * stride  # type: ignore[operator]
                self.lead_code[gi] = at
            self.loss[gi] = g.loss
        self.size[gi], self.anchors[gi] = g.size, g.anchors
        if data.alpha is not None:  # (without α the counters never move)
            self.ha[gi] = g.ha
        self._count_terms(gi, terms, g.size)

    def _count_terms(self, gi: int, terms: Sequence[int], size: int) -> None:
        """Count ``terms`` in σ of group gi, now of ``size`` records."""
        if size >= _NARROW_SIGMA and self.dense.dtype == np.int16:
            self.dense = self.dense.astype(np.int32)  # (once: see _NARROW_SIGMA)
            self.cells = self.dense.data
        column, cells = self._column_list, self.cells
        for s in terms:
            col = column[s]
            if col >= 0:
                cells[gi, col] += 1
            else:
                held = self.sparse.setdefault(s, {})
                count = held.get(gi, 0)
                if not count:
                    self.rare_added.setdefault(gi, []).append(s)
                held[gi] = count + 1


class _ClassGroups:
    """The zero-loss groups of each exact QID class (leftover phase: :func:`_best_in_class`
    reads σ of a leftover's terms in every group of its class).

    Invariant, for every class c that has zero-loss groups:

    * ``ids(c)`` are its zero-loss groups in ascending order (a group leaves when its loss turns
      positive, and never comes back: a loss never falls);
    * the anchor counts cached for c are those of the table: :meth:`added` keeps the class's
      histogram of anchor counts current when a record joins one of its groups.

    * a row of σ of a term over ``ids(c)`` that is kept (classes of at least
      :data:`CLASS_ROWS` groups) counts every record that joined those groups since it was
      gathered: :meth:`added` adds each joining record's terms to the class's kept rows.

    σ is gathered from the table's dense columns for each leftover (one fancy index), and kept
    per (class, term) for the big classes only: on the second 450k quarter three of four rows
    a leftover asked for had never been asked for (a cache of every class cost more than it
    saved), but two classes of 2,500 and 3,200 groups (cases lacking age and weight) took
    a thousand of the searches over a whole class, asking for the same few hundred terms.
    """

    def __init__(self, table: _GroupTable, groups: list[int], classes: list[int]):
        self.table = table
        self._members: dict[int, list[int]] = {}
        self._class_of: dict[int, int] = {}
        for gi, c in zip(groups, classes):  # groups ascend: so does each class's list
            self._members.setdefault(c, []).append(gi)
            self._class_of[gi] = c
        self._ids: dict[int, np.ndarray] = {}
        #: class -> {anchor count: groups of the class with it} (made for every class at once:
        #: one np.unique per class was a second on the second 450k quarter)
        self._hist: dict[int, dict[int, int]] = {}
        if groups:
            # (class, anchors) pairs as one int64 each: a 1-D unique, in the pairs' order
            anchors = table.anchors[np.asarray(groups, dtype=np.int64)]
            span = int(anchors.max()) + 1
            found, many = np.unique(np.asarray(classes, dtype=np.int64) * span + anchors,
                                    return_counts=True)
            for key, m in zip(found.tolist(), many.tolist()):
                self._hist.setdefault(key // span, {})[key % span] = m
        self._counts: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        #: class -> {term: σ of the term over ids(c)} (kept rows: big classes only), and
        #: class -> {group: its position in ids(c)} (to count a joining record in them)
        self._rows: dict[int, dict[int, np.ndarray]] = {}
        self._position: dict[int, dict[int, int]] = {}
        self._kept_cells = 0
        #: classes of more than CLASS_SCAN groups (:meth:`first_free`): the class's groups when
        #: first asked (``_frozen``, positions that never move), each group's position there,
        #: per term the bit mask of the positions whose group holds it (kept current by
        #: :meth:`added`; a dense table term's made when first read, from the class's bits of
        #: the table as frozen, ``_packed``: a class's leftovers ask for a few of its terms),
        #: and the mask of the groups that left the class
        self._frozen: dict[int, list[int]] = {}
        self._frozen_at: dict[int, int] = {}
        self._holders: dict[int, dict[int, int]] = {}
        self._packed: dict[int, tuple[bytes, int]] = {}
        self._left: dict[int, int] = {}

    def has(self, c: int) -> bool:
        """Whether class c has a zero-loss group."""
        return bool(self._members.get(c))

    def holds(self, gi: int) -> bool:
        """Whether group gi is a zero-loss group of some class."""
        return gi in self._class_of

    def members(self, c: int) -> list[int]:
        """The class's zero-loss groups, ascending (the list :meth:`ids` is made from: not to
        be changed)."""
        return self._members[c]

    def ids(self, c: int) -> np.ndarray:
        ids = self._ids.get(c)
        if ids is None:
            ids = self._ids[c] = np.asarray(self._members[c], dtype=np.int64)
        return ids

    def sigma_rows(self, c: int, terms: Sequence[int]) -> np.ndarray:
        """σ_s(g) for each of ``terms`` (rows) and each group of ``ids(c)`` (columns)."""
        ids = self.ids(c)
        if len(ids) < CLASS_ROWS:
            return self.table.sigmas(terms, ids).T
        rows = self._rows.get(c)
        if rows is None:
            rows = self._rows[c] = {}
            self._position[c] = {gi: i for i, gi in enumerate(self._members[c])}
        new = [s for s in dict.fromkeys(terms) if s not in rows]
        if new:
            gathered = self.table.sigmas(new, ids).T
            if self._kept_cells + gathered.size <= KEPT_ROW_CELLS:
                self._kept_cells += gathered.size
                for s, row in zip(new, gathered):
                    rows[s] = row.astype(np.int32)
            else:  # (over the budget: read from the table, as for a small class)
                return self.table.sigmas(terms, ids).T
        out = np.empty((len(terms), len(ids)), dtype=np.int64)
        for j, s in enumerate(terms):
            out[j] = rows[s]
        return out

    def first_free(self, c: int, terms: Sequence[int]) -> int | None:
        """The first group of ``ids(c)`` that holds none of ``terms`` (σ 0 for each), or None.

        A class of at most :data:`CLASS_SCAN` groups is scanned (their σ in the table); a
        bigger one answers from a bit mask per term of the groups holding it (a Python int over
        the class's positions): the union of r's terms' masks and of the groups gone, and its
        lowest clear bit. On the second 450k quarter two classes of 2,500 and 3,200 groups
        held a thousand leftovers each whose first 64 groups all held one of their terms.
        """
        holders = self._holders.get(c)
        if holders is None:
            members = self._members[c]
            if len(members) <= CLASS_SCAN:
                # σ of r's terms, group by group, from the table (the groups' dicts are not
                # kept: :meth:`_GroupTable.add`)
                table = self.table
                column, cells = table._column_list, table.cells
                cols = [column[s] for s in terms]
                if min(cols, default=0) >= 0:  # (the usual case: every term in the dense table)
                    for gi in members:
                        for col in cols:
                            if cells[gi, col]:
                                break
                        else:
                            return gi
                    return None
                rare = [table.sparse.get(s, {}) for s, col in zip(terms, cols) if col < 0]
                cols = [col for col in cols if col >= 0]
                for gi in members:
                    if (any(cells[gi, col] for col in cols)
                            or any(held.get(gi) for held in rare)):
                        continue
                    return gi
                return None
            holders = self._holders[c] = self._holder_masks(c)
        taken = self._left[c]
        for s in terms:
            mask = holders.get(s)
            taken |= self._mask(c, s) if mask is None else mask
        at = ((~taken) & (taken + 1)).bit_length() - 1  # the lowest clear bit
        frozen = self._frozen[c]
        return frozen[at] if at < len(frozen) else None

    def _holder_masks(self, c: int) -> dict[int, int]:
        """Freeze class c's groups (:meth:`first_free`), keep the bits of the dense table's
        terms over them from one gather of the class's rows (a term's mask is made from them
        when first read: :meth:`_mask`), and make the mask of every other term some group of
        the class holds, from the rare terms each group holds
        (:meth:`_GroupTable.rare_terms_of`), all at once."""
        members = self._members[c]
        self._frozen[c] = list(members)
        self._left[c] = 0
        self._frozen_at.update(zip(members, range(len(members))))
        table = self.table
        held = table.dense[np.asarray(members, dtype=np.int64)] > 0
        # bit i of a column's bytes (little-endian, both ways) is the class's i-th group; the
        # columns one after the other in one bytes object, each as many bytes long (a mask is
        # made from a slice of it: no numpy row view and copy for each of the 25k masks of a
        # 450k quarter 2)
        packed = np.ascontiguousarray(np.packbits(held, axis=0, bitorder="little").T)
        self._packed[c] = (packed.tobytes(), packed.shape[1])
        masks: dict[int, int] = {}
        terms, where = table.rare_terms_of(members)
        if terms:
            # a row of bits per rare term (its groups' positions), packed as the columns above
            found, row = np.unique(np.asarray(terms, dtype=np.int64), return_inverse=True)
            bits = np.zeros((len(found), len(members)), dtype=bool)
            bits[row.ravel(), np.asarray(where, dtype=np.int64)] = True
            packed = np.packbits(bits, axis=1, bitorder="little")
            for s, line in zip(found.tolist(), packed):
                masks[s] = int.from_bytes(line.tobytes(), "little")
        return masks

    def _mask(self, c: int, s: int) -> int:
        """The mask of term s over frozen class c (:meth:`first_free`) not made yet: a dense
        table term's from the class's packed bits, kept; 0 for another term (no group of the
        class held it when frozen)."""
        col = self.table._column_list[s]
        if col >= 0:
            packed, width = self._packed[c]
            mask = int.from_bytes(packed[col * width:(col + 1) * width], "little")
        else:
            mask = 0
        self._holders[c][s] = mask
        return mask

    def single_anchor_count(self, c: int) -> int | None:
        """The anchor count of every group of the class when they all have the same one (the
        usual case), else None: :meth:`anchor_counts` without its arrays."""
        hist = self._hist.get(c)
        if hist is None:
            self.anchor_counts(c)  # (makes the histogram again)
            hist = self._hist[c]
        if len(hist) == 1:
            for count in hist:
                return count
        return None

    def anchor_counts(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """The distinct anchor counts of the class's groups, and the index of each group's."""
        counts = self._counts.get(c)
        if counts is not None:
            return counts
        ids = self.ids(c)
        hist = self._hist.get(c)
        if hist is None:  # (after a group left the class)
            distinct, at = np.unique(self.table.anchors[ids], return_inverse=True)
            at = at.ravel()
            self._hist[c] = dict(zip(distinct.tolist(), np.bincount(at).tolist()))
        else:
            # the histogram says which counts there are: no sort of the class's groups
            distinct = np.array(sorted(hist), dtype=np.int64)
            at = (np.zeros(len(ids), dtype=np.int64) if len(distinct) == 1
                  else np.searchsorted(distinct, self.table.anchors[ids]))
        counts = self._counts[c] = (distinct, at)
        return counts

    def added(self, gi: int, terms: Sequence[int], anchors: int) -> None:
        """A record holding ``terms`` (counted in σ) and ``anchors`` (0 or 1) joined group gi,
        which kept its zero loss (called after the table counted it)."""
        c = self._class_of[gi]
        rows = self._rows.get(c)
        if rows:
            at = self._position[c][gi]
            for s in terms:
                row = rows.get(s)
                if row is not None:
                    row[at] += 1
        holders = self._holders.get(c)
        if holders is not None:
            bit = 1 << self._frozen_at[gi]
            for s in terms:
                mask = holders.get(s)
                holders[s] = (self._mask(c, s) if mask is None else mask) | bit
        if not anchors:
            return
        self._counts.pop(c, None)
        hist = self._hist.get(c)
        if hist is not None:
            now = int(self.table.anchors[gi])
            before = now - anchors
            if hist[before] == 1:
                del hist[before]
            else:
                hist[before] -= 1
            hist[now] = hist.get(now, 0) + 1

    def remove(self, gi: int) -> None:
        """Group gi lost its zero loss: out of its class (whose cached counts go)."""
        c = self._class_of.pop(gi)
        self._members[c].remove(gi)
        if c in self._holders:
            self._left[c] |= 1 << self._frozen_at[gi]
        for cache in (self._ids, self._hist, self._counts, self._position):
            cache.pop(c, None)
        rows = self._rows.pop(c, None)
        if rows:
            self._kept_cells -= sum(row.size for row in rows.values())


def _place_leftovers(data: GroupingInput, groups: list[_Group], result: GroupingResult, *,
                     leftover: np.ndarray, class_of: np.ndarray) -> None:
    """001's Generalization / 002's lines 25-30: the same order and keys as the reference, with
    the groups searched through a :class:`_GroupBlocks` index (exact: it only skips groups whose
    key provably exceeds the best found). ``class_of``: each record's exact QID class
    (:func:`qid_classes`)."""
    space = data.space
    leftovers = np.flatnonzero(leftover)
    leftovers = leftovers[np.argsort(data.rank[leftovers], kind="stable")]
    result.leftovers = len(leftovers)
    G = len(groups)
    if not G or (not len(leftovers) and (data.late is None or not data.late.any())):
        # no group, or nothing to place (no leftover, no late record: the tables below would
        # be built for nothing, a second of a 450k quarter whose records all found a group)
        result.unplaced.extend(leftovers.tolist())
        _place_by_suppression(data, groups, result)  # (only lists the late records: no group)
        if G:
            _number_groups(groups, result)
        return
    table = _GroupTable(data, groups)
    index = _GroupBlocks(space, table.cat, table.lo, table.hi, table.size, table.loss, table)

    def least_of_few(terms: list[int], own: int, cand: np.ndarray, dil: np.ndarray,
                     best: tuple | None) -> tuple | None:
        """The least of ``best`` and the keys (ΔIL·PR, PR, group) of a few groups ``cand``
        (ΔIL ``dil``) without α, as Python floats: the same operations as :meth:`risks`
        (:meth:`_GroupTable.few_risks`), and the least as :func:`evaluate`'s lexsort takes
        it."""
        for d, p, gi in zip(dil.tolist(), table.few_risks(terms, own, cand.tolist()),
                            cand.tolist()):
            if p < INF:
                key = (d * p, p, gi)
                if best is None or key < best:
                    best = key
        return best

    def evaluate(r: int, terms: list[int], own: int, value: list, cand: np.ndarray,
                 best: tuple | None) -> tuple | None:
        """Best key over groups ``cand`` and ``best``: PR computed exactly for every group at
        once, as :meth:`_Group.risk` computes it (the terms summed in the same order, so the
        floats agree), so that no group is probed one by one. ``terms``, ``own``: r's terms
        and anchor (0 or 1)."""
        if not len(cand):
            return best
        dil = table.delta_il(value, cand)
        if best is None and len(cand) > _FEW_GROUPS and data.alpha is None:
            # no best yet (a leftover's first evaluation, of its loose or moved groups: some
            # sixty groups each, most of the PR computed here on the 450k q2): the groups of
            # least ΔIL give one to start from, so that the floor below leaves most others
            # out before their PR (exact: the best is a group's key, and the answer is the
            # least key over both)
            head = np.argpartition(dil, _FEW_GROUPS - 1)[:_FEW_GROUPS]
            best = least_of_few(terms, own, cand[head], dil[head], None)
        if best is not None:
            # PR >= r's terms alone at the most anchors of ``cand``: a group whose ΔIL times
            # that floor exceeds the best key cannot beat it (nor tie), and its PR is not needed
            # (_floor_at, with r's anchor and terms read from lists)
            inv = data.inverse_etas(int(_most(table.anchors[cand])) + own)
            floor = 1.0  # added in r's term order, as privacy_risk adds (∞ stays ∞)
            for s in terms:
                floor += inv[s]
            if floor == INF:  # (no group of cand can take r)
                return best
            near = dil * floor <= best[0]
            kept = int(np.count_nonzero(near))
            if kept < len(near):
                if not kept:
                    return best
                cand, dil = cand[near], dil[near]
        if len(cand) <= _FEW_GROUPS and data.alpha is None:
            # (most calls: the ΔIL floor above leaves a median of two groups)
            return least_of_few(terms, own, cand, dil, best)
        pr = table.risks(r, cand)
        at = np.flatnonzero(pr < INF)
        if not len(at):
            return best
        key = dil[at] * pr[at]
        i = np.lexsort((cand[at], pr[at], key))[0]
        found = (float(key[i]), float(pr[at[i]]), int(cand[at[i]]))
        return found if best is None or found < best else best

    # A leftover whose own value loses nothing joins, at key 0, any zero-loss group of its QID
    # class that can take it: no other group has ΔIL 0 (a wider group, or one of another
    # class, loses more once it holds r), so that search is the whole search (issue 30).
    # (of the leftovers only: the walk reads no other record's)
    point = np.zeros(data.n, dtype=bool)
    point[leftovers] = _record_losses(data, leftovers) == 0.0
    zero = np.flatnonzero(table.loss == 0.0).tolist()
    # (each zero-loss group's class read at its first member's, for all of them at once)
    firsts = np.fromiter(map(itemgetter(0), map(attrgetter("members"),
                                                 map(groups.__getitem__, zero))),
                         dtype=np.int64, count=len(zero))
    classes = _ClassGroups(table, zero, class_of[firsts].tolist())

    # Leftovers are walked in windows of :data:`_WINDOW`. Each window's leftovers that will
    # search every group (not points of a class with zero-loss groups) have their best group
    # found together, against the groups as they stand when the window opens
    # (:func:`_best_of_many`, vectorized across them). A group no placement of the window has
    # changed since still gives such a leftover the key it gave then; so when its best group
    # is unchanged at its turn, the best over the whole table is the better of that one and
    # the best over the groups the window changed (exact: the same key, PR and group as the
    # search below). When its best group itself changed, the groups the window found for it
    # other than that one are the second best it found and groups whose key exceeds the
    # window's limit for it (:func:`_best_of_many`): the better of that second (when no
    # placement changed it) and the groups the window changed, best group included, is the
    # answer when its key is within that limit. Otherwise the leftover searches the blocks
    # as before. Of the groups changed, only those whose value or anchors moved are evaluated
    # again: a group that only took points of its own value that are no anchors gives every
    # record a key (ΔIL·PR, PR) at least as large as before in both parts (ΔIL = |g|·(L' − L)
    # + L' grows with |g| as L' >= L; PR grows with σ at the same η), so it cannot have become
    # better than the best it did not beat (nor than the second: the leftover's best group
    # itself is evaluated again whatever changed it). (Not with α: the batched keys do not
    # count HA's counters.)
    batched = data.alpha is None
    walk = leftovers.tolist()
    # each leftover's point flag, class, anchor, terms and value in walk order, gathered at
    # once: the walk reads them one after the other, not at 45k scattered records (the rank
    # order is no record order: each read from a list of every record missed the caches)
    walk_point = point[leftovers].tolist()
    walk_class = class_of[leftovers].tolist()
    walk_anchor = data.anchor[leftovers].tolist()
    lengths = data.term_ptr[leftovers + 1] - data.term_ptr[leftovers]
    walk_ptr = np.r_[0, np.cumsum(lengths)]
    walk_terms = data.term_ids[np.repeat(data.term_ptr[leftovers] - walk_ptr[:-1], lengths)
                               + np.arange(int(walk_ptr[-1]))].tolist()
    term_at = walk_ptr.tolist()
    # (Python floats and ints: the same values as the arrays' scalars, in every operation)
    walk_value = [[None if x is None else x[leftovers].tolist() for x in arrays]
                  for arrays in (data.cat, data.lo, data.hi)]
    del lengths, walk_ptr
    # (:meth:`_ClassGroups.has` without a call: a class's list of zero-loss groups, empty or
    # None when it has none)
    class_members = classes._members.get
    ahead: dict[int, tuple[tuple | None, tuple | None, float]] = {}
    # the groups the window changed (each once, in a slot), and those whose value or anchors
    # moved (to be evaluated again)
    slot: dict[int, int] = {}
    moved: list[int] = []
    for i, r in enumerate(walk):
        if batched and i % _WINDOW == 0:
            slot, moved = {}, []
            window = [q for q, is_point, cq in zip(walk[i:i + _WINDOW], walk_point[i:i + _WINDOW],
                                                   walk_class[i:i + _WINDOW])
                      if not (is_point and class_members(cq))]
            ahead = _best_of_many(table, index, window) if window else {}
        c = walk_class[i]
        terms = walk_terms[term_at[i]:term_at[i + 1]]
        anchors = walk_anchor[i]
        if walk_point[i] and class_members(c):
            best = _best_in_class(data, r, classes, c, terms, anchors)
            if best is not None:
                # a point joining a zero-loss group of its own class leaves the group's value
                # as it is (and the group stays in the class): only anchors (and σ) move; the
                # group is evaluated again by the window's next leftovers only if its anchors
                # moved (see above)
                gi = best[2]
                if batched:
                    at = slot.get(gi)
                    if at is None:
                        slot[gi] = len(moved) if anchors else -1
                        if anchors:
                            moved.append(gi)
                    elif at < 0 and anchors:
                        slot[gi] = len(moved)
                        moved.append(gi)
                table.add(gi, r, same_value=True, terms=terms)
                if anchors:
                    index.joined(gi)
                classes.added(gi, terms, anchors)
                continue
        best = None
        value: list | None = None
        # (best, second best, limit) found when the window opened
        found = ahead.get(r)
        known = None if found is None else found[0]
        if found is not None and (known is None or known[2] not in slot):
            best = known
            if moved:
                value = [[None if x is None else x[i] for x in arrays] for arrays in walk_value]
                best = evaluate(r, terms, anchors, value, np.array(moved, dtype=np.int64), best)
        else:
            value = [[None if x is None else x[i] for x in arrays] for arrays in walk_value]
            search = True
            if found is not None and known is not None:
                # its best group changed in the window: that group and the groups whose
                # value moved, as they are now, and its second best when the window left it
                # alone, give a best to start from; and the answer, when its key is within
                # the window's limit (every group the window did not evaluate exceeds it;
                # those it did are the second or above it, or changed)
                second = found[1]
                kept = second is None or second[2] not in slot
                cand = moved if slot[known[2]] >= 0 else [known[2], *moved]
                best = evaluate(r, terms, anchors, value, np.array(cand, dtype=np.int64),
                                second if kept else None)
                search = not (kept and best is not None and best[0] <= found[2])
            if search:
                best = evaluate(r, terms, anchors, value, index.loose(), best)
                bounds = index.lower_bounds(value, r)
                # only the blocks the walk below may open, sorted: those whose bound is at
                # most the best key (below ∞ with no best yet), which only falls (the same
                # order as a stable sort of every block, cut where the walk stops)
                order = np.flatnonzero(bounds < INF if best is None else bounds <= best[0])
                order = order[np.argsort(bounds[order], kind="stable")]
                sorted_bounds = bounds[order]
                done = 0
                while done < len(order):
                    # blocks in bound order, doubling, while a block may still hold a better
                    # group (with no best yet, every block that may hold a group able to
                    # take r)
                    limit = (int(np.searchsorted(sorted_bounds, INF, side="left")) if best is None
                             else int(np.searchsorted(sorted_bounds, best[0], side="right")))
                    if limit <= done:
                        break
                    upto = min(limit, max(2 * done, _FIRST_BLOCKS))
                    best = evaluate(r, terms, anchors, value, index.members_of(order[done:upto]),
                                    best)
                    done = upto
        if best is None:
            result.unplaced.append(r)
            continue
        gi = best[2]
        if batched and slot.get(gi, -1) < 0:  # (the group's value may have moved)
            slot[gi] = len(moved)
            moved.append(gi)
        if value is None:  # (not gathered on the way here)
            value = [[None if x is None else x[i] for x in arrays] for arrays in walk_value]
        table.add(gi, r, terms=terms, value=value, anchor=anchors)
        index.changed(gi)
        if classes.holds(gi):
            if table.loss[gi] > 0.0:
                classes.remove(gi)
            else:
                classes.added(gi, terms, anchors)
    _place_by_suppression(data, groups, result, table=table)
    _number_groups(groups, result)


def _number_groups(groups: list[_Group], result: GroupingResult) -> None:
    """Each member's group number in ``result.group_of`` (group i's members get i), and the
    number of groups: one assignment over every member at once (a record is in one group at
    most), not one per group (80k groups of a 450k quarter 2: about 0.1 s)."""
    sizes = list(map(len, map(attrgetter("members"), groups)))
    members = np.fromiter(chain.from_iterable(map(attrgetter("members"), groups)),
                          dtype=np.int64, count=sum(sizes))
    result.group_of[members] = np.repeat(np.arange(len(groups), dtype=np.int64), sizes)
    result.n_groups = len(groups)


def _best_in_class(data: GroupingInput, r: int, classes: _ClassGroups, c: int,
                   terms: list[int] | None = None, own: int | None = None) -> tuple | None:
    """The least key (0, PR, group) over the zero-loss groups of r's QID class c (ascending:
    ``classes.ids(c)``), where a class can hold thousands of groups (e.g. cases lacking age
    and weight).

    σ of r's terms in those groups (rows in r's term order, columns the groups) and their
    distinct anchor counts with the index of each group's come from ``classes``
    (:class:`_ClassGroups`).

    A group holding none of r's terms has PR = the floor of r's terms alone (σ 0) at its
    anchors, read from a table of its few distinct anchor counts; a group holding one of them
    is above its floor by at least 2^-40 (the term adds (σ+1)/(η−σ) >= 2/η instead of 1/η, and
    η <= 2^40). So the best group holding none of r's terms is the answer when its PR is at
    most every other group's floor; the test is trusted only where float sums cannot blur the
    2^-40 gap (PR < 32 over at most 32 terms: each sum is off by under 32 · 2^-48). Otherwise,
    and when no such group can take r, the PR of every group is computed (their ΔIL is 0).

    With one anchor count (the usual case) and no α, that best free group is the first group
    of the class holding none of r's terms (:meth:`_ClassGroups.first_free`: on the second
    450k quarter it was among the first few groups for almost every leftover, median 1, 99th
    percentile 77 of classes of up to 3,400 groups); when there is none (or PR >= 32), the
    least (PR, group) over every group of the class (:func:`_least_risk_in_class`).
    """
    table = classes.table
    if terms is None:
        terms = data.terms(r)
    if data.alpha is None:
        hist = classes._hist.get(c)
        if hist is not None and len(hist) == 1:  # (single_anchor_count without its calls)
            count: int | None = next(iter(hist))
        else:
            count = classes.single_anchor_count(c)
        if count is not None:
            if len(terms) <= 32:
                # _floor_at, with r's terms and anchor at hand
                anchors = count + (table._anchor_list[r] if own is None else own)
                inv = data._inverse_etas.get(anchors) or data.inverse_etas(anchors)
                pr = 1.0  # added in r's term order, as privacy_risk adds (∞ stays ∞)
                for s in terms:
                    pr += inv[s]
                if pr == INF:  # (PR >= the floor: no group of the class can take r)
                    return None
                if pr < 32:
                    gi = classes.first_free(c, terms)
                    if gi is not None:
                        return (0.0, pr, gi)
            return _least_risk_in_class(table, r, terms, count, classes.ids(c),
                                        classes.sigma_rows(c, terms))
    distinct, inverse = classes.anchor_counts(c)
    same = classes.ids(c)
    sigma = classes.sigma_rows(c, terms)
    holds = (sigma > 0).any(axis=0)
    if len(terms) <= 32:
        floor_of = _floors_at(data, r, distinct)
        if len(distinct) == 1:
            # one anchor count (the usual case): every floor is the same, so the least
            # (floor, group) among the free groups is the first of them (``same`` ascends),
            # and no other group's floor is below it: the certificate holds when PR < 32
            pr = float(floor_of[0])
            if pr < 32:
                free = np.flatnonzero(~holds if data.alpha is None
                                      else ~holds & table.alpha_ok(r, same))
                if len(free):
                    return (0.0, pr, int(same[free[0]]))
        else:
            floors = floor_of[inverse]
            free = np.flatnonzero(~holds & (floors < INF) & table.alpha_ok(r, same))
            if len(free):
                i = free[np.lexsort((same[free], floors[free]))[0]]
                pr = float(floors[i])
                if pr < 32 and (not holds.any() or pr <= floors[holds].min()):
                    return (0.0, pr, int(same[i]))
    # ΔIL is 0 for every group of the class: their PR alone orders them. Without α and with
    # one anchor count, PR depends on the row of σ of r's terms only, so it is computed once
    # per distinct row (a big class repeats a few rows thousands of times); the first group of
    # each row is its lowest-numbered (``same`` ascends), which wins that row's ties.
    rows_of = None
    if (data.alpha is None and terms and len(terms) * 8 <= 62 and sigma.max() < 255
            and len(distinct) == 1):
        packed = np.zeros(len(same), dtype=np.int64)
        for j in range(len(terms)):
            packed |= sigma[j] << (8 * j)
        _, rows_of = np.unique(packed, return_index=True)
    at = np.arange(len(same)) if rows_of is None else rows_of
    risks = table.risks(r, same[at], sigma[:, at].T)
    ok = np.flatnonzero(risks < INF)
    if not len(ok):
        return None
    k = ok[np.lexsort((same[at[ok]], risks[ok]))[0]]
    return (0.0, float(risks[k]), int(same[at[k]]))


def _least_risk_in_class(table: _GroupTable, r: int, terms: list[int], count: int,
                         same: np.ndarray, sigma: np.ndarray) -> tuple | None:
    """The least key (0, PR, group) of r over groups ``same`` (ascending) of one QID class,
    all of ``count`` anchors, with σ of r's terms in them (``sigma``: rows in r's term order,
    columns the groups), without α: PR of every group as :meth:`_GroupTable.risks` computes it
    (the same floats, its steps added in r's term order); the first least PR is the answer, as
    ``same`` ascends (ΔIL is 0 for every group of the class)."""
    if not terms:
        return (0.0, 1.0, int(same[0])) if len(same) else None
    e = table.etas(count + table._anchor_list[r])[np.asarray(terms, dtype=np.int64)]
    held = sigma + 1
    room = e[:, None] - held + 1  # >= 1 where the term fits (σ + 1 <= η)
    step = held / np.maximum(room, 1)
    pr = 1.0 + step[0]
    for j in range(1, len(terms)):
        pr += step[j]
    pr[(room < 1).any(axis=0)] = INF
    i = int(np.argmin(pr))
    if pr[i] == INF:
        return None
    return (0.0, float(pr[i]), int(same[i]))


def _pair_costs(space: QidSpace, j: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:meth:`QidSpace.cost_with` for pairs: the term of lca(a[i], b[i]) in attribute j."""
    cost = space._cost[j]
    if cost is not None:
        return cost[a, b]
    out = np.empty(len(a))
    for code in np.unique(a).tolist():
        at = np.flatnonzero(a == code)
        out[at] = space.cost_with(j, code, b[at])
    return out


def _best_of_many(table: _GroupTable, index: "_GroupBlocks", rs: list[int]
                  ) -> dict[int, tuple[tuple | None, tuple | None, float]]:
    """The least key (ΔIL·PR, PR, group) of each leftover of ``rs`` over every group, as the
    block search of :func:`_place_leftovers` finds it one leftover at a time (None: no group
    can take it), for all of them at once.

    Each leftover's blocks are bounded at once (:meth:`_GroupBlocks.lower_bounds_many`); the
    loose groups and the groups of its :data:`_FIRST_BLOCKS` lowest-bound blocks are evaluated
    exactly, then the groups of every other block whose bound does not exceed the best key
    found (every block that may hold a group able to take it, when none was found), except
    those whose exact ΔIL times r's PR floor at the block's most anchors already exceeds it.
    A group left out has a key above that best, which the second round can only lower: the
    answer is the least key over all groups (exact, ties included).

    Each leftover also gets the second least key over the groups evaluated (None: none but the
    best could take it) and the key every group left out exceeds (the best after the first
    round: the second round's limit; ∞ when every group that may take it was evaluated). The
    walk uses them when the leftover's best group changed before its turn
    (:func:`_place_leftovers`).
    """
    rows = np.asarray(rs, dtype=np.int64)
    L = len(rows)
    # each row's combined leading categorical code, read per pair from these L (None: no table)
    row_lead = table.lead_codes(rows)
    bounds, floors = index.lower_bounds_many(rows)
    B = bounds.shape[1]
    first = min(_FIRST_BLOCKS, B)
    if first < B:
        part = np.argpartition(bounds, first - 1, axis=1)[:, :first]
    else:
        part = np.broadcast_to(np.arange(B), (L, B))
    best_key = np.full(L, INF)
    best_pr = np.full(L, INF)
    best_g = np.full(L, -1, dtype=np.int64)
    second_key = np.full(L, INF)
    second_pr = np.full(L, INF)
    second_g = np.full(L, -1, dtype=np.int64)

    def groups_of(row: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, group, block) of every group still in ``blocks`` (pairs: row[i], blocks[i])."""
        lengths = index.start[blocks + 1] - index.start[blocks]
        pos = (np.repeat(index.start[blocks] - np.cumsum(lengths) + lengths, lengths)
               + np.arange(int(lengths.sum())))
        gg = index.members[pos]
        inside = ~index.out[gg]
        return np.repeat(row, lengths)[inside], gg[inside], np.repeat(blocks, lengths)[inside]

    def merge(rr: np.ndarray, gg: np.ndarray, dil: np.ndarray) -> None:
        """Keep each row's two least keys over its pairs (rr, gg) and its two best so far (a
        group is in at most one pair of a row: the blocks and the loose groups are apart)."""
        pr = table.pair_risks(rows[rr], gg)
        ok = pr < INF
        rr, gg, pr = rr[ok], gg[ok], pr[ok]
        key = dil[ok] * pr
        # with the two best so far, so that one lexsort keeps the least of all
        held = np.flatnonzero(best_g >= 0)
        held2 = np.flatnonzero(second_g >= 0)
        rr = np.concatenate([rr, held, held2])
        gg = np.concatenate([gg, best_g[held], second_g[held2]])
        key = np.concatenate([key, best_key[held], second_key[held2]])
        pr = np.concatenate([pr, best_pr[held], second_pr[held2]])
        if not len(rr):
            return
        lead = _least_per_row(rr, key, pr, gg, L)
        at = rr[lead]
        best_key[at], best_pr[at], best_g[at] = key[lead], pr[lead], gg[lead]
        others = np.ones(len(rr), dtype=bool)
        others[lead] = False
        rest = np.flatnonzero(others)
        lead = rest[_least_per_row(rr[rest], key[rest], pr[rest], gg[rest], L)]
        at = rr[lead]
        second_key[at], second_pr[at], second_g[at] = key[lead], pr[lead], gg[lead]

    # first round: the loose groups and the first blocks of every row; of them, PR is
    # computed first for the few of least ΔIL·floor of each row, then for the others whose
    # ΔIL·floor does not exceed the best key so found (PR >= the floor: a lower bound)
    row_of = np.repeat(np.arange(L), first)
    block = part.ravel()
    keep = bounds[row_of, block] < INF
    rr, gg, bb = groups_of(row_of[keep], block[keep])
    dil = table.pair_dil(rows[rr], gg, None if row_lead is None else row_lead[rr])
    low = dil * floors[rr, bb]
    n_blocks = len(rr)
    loose = index.loose()
    if len(loose):
        lr = np.repeat(np.arange(L), len(loose))
        lg = np.tile(loose, L)
        ld = table.pair_dil(rows[lr], lg, None if row_lead is None else row_lead[lr])
        rr, gg = np.concatenate([rr, lr]), np.concatenate([gg, lg])
        dil, low = np.concatenate([dil, ld]), np.concatenate([low, ld])
    # the _FIRST_PAIRS first pairs of each row in np.lexsort((low, rr))'s order (least low,
    # then first) all have a low at most the row's _FIRST_PAIRS-th least: that low from the
    # _FIRST_PAIRS least of the row's blocks' pairs (a table of them by row, ``rr`` ascending
    # there, padded with ∞) and of its loose groups' (``ld`` by row), so that only the pairs
    # at or below it are sorted (a sort of every pair was ~3% of the placement)
    K = _FIRST_PAIRS
    least = []
    held = np.bincount(rr[:n_blocks], minlength=L)
    width = int(held.max())
    if width:
        lows = np.full((L, width), INF)
        at = rr[:n_blocks]
        lows[at, np.arange(n_blocks) - (np.cumsum(held) - held)[at]] = low[:n_blocks]
        if width > K:
            lows.partition(K - 1, axis=1)
        least.append(lows[:, :K])
    if len(loose):
        by_row = ld.reshape(L, len(loose))  # (``ld`` is not read again: sorted in place)
        if len(loose) > K:
            by_row.partition(K - 1, axis=1)
        least.append(by_row[:, :K])
    joined = np.concatenate(least, axis=1) if least else np.empty((L, 0))
    if joined.shape[1] > K:
        kth = np.partition(joined, K - 1, axis=1)[:, K - 1]
        near = np.flatnonzero(low <= kth[rr])
    else:
        near = np.arange(len(rr))
    o = near[np.lexsort((low[near], rr[near]))]
    ro = rr[o]
    starts = np.searchsorted(ro, np.arange(L))
    lead = np.zeros(len(rr), dtype=bool)
    lead[o[np.arange(len(o)) - starts[ro] < _FIRST_PAIRS]] = True
    merge(rr[lead], gg[lead], dil[lead])
    limit = np.where(best_g >= 0, best_key, INF)
    rest = ~lead & (low <= limit[rr])
    merge(rr[rest], gg[rest], dil[rest])
    # second round: every block not opened whose bound may still hold a key as good
    limit = np.where(best_g >= 0, best_key, INF)
    more = np.where(best_g[:, None] >= 0, bounds <= limit[:, None], bounds < INF)
    more[row_of, block] = False
    row2, block2 = np.nonzero(more)
    # in pieces of about _PAIRS groups: a window whose leftovers few groups can take opens
    # nearly every block for each, which must not hold millions of pairs at once
    piece = np.cumsum(index.start[block2 + 1] - index.start[block2]) // _PAIRS
    cut = (np.flatnonzero(np.r_[True, piece[1:] != piece[:-1], True]).tolist() if len(row2)
           else [])
    for a, b in zip(cut[:-1], cut[1:]):
        rr, gg, bb = groups_of(row2[a:b], block2[a:b])
        dil = table.pair_dil(rows[rr], gg, None if row_lead is None else row_lead[rr])
        # PR >= r's floor at the block's most anchors: ΔIL times it bounds the key
        near = dil * floors[rr, bb] <= limit[rr]
        merge(rr[near], gg[near], dil[near])
    # (a row without a best after the first round opened every block that may hold a group
    # able to take it: no group left out can, and ``limit`` is ∞ there)
    # (read as lists first: the same Python floats and ints, without a numpy scalar per read)
    return {r: (None if g1 < 0 else (k1, p1, g1), None if g2 < 0 else (k2, p2, g2), cap)
            for r, k1, p1, g1, k2, p2, g2, cap in zip(
                rs, best_key.tolist(), best_pr.tolist(), best_g.tolist(), second_key.tolist(),
                second_pr.tolist(), second_g.tolist(), limit.tolist())}


def _least_per_row(rr: np.ndarray, key: np.ndarray, pr: np.ndarray, gg: np.ndarray,
                   rows: int) -> np.ndarray:
    """The position of each row's first element in ``np.lexsort((gg, pr, key, rr))``'s order
    (rows ``rr`` below ``rows``; the keys never NaN), for the rows present (in no set order).

    Each row's least key comes from one ``np.minimum.at``; only the elements at it (one a row,
    but for ties) are sorted, by row, key, PR, group and position, as the lexsort orders
    them. A four-key lexsort of every pair was most of :func:`_best_of_many`'s merges (53 ms
    for one of 80k pairs; the whole minimum 0.5 ms). −0.0 and 0.0 compare equal both ways."""
    least = np.full(rows, INF)
    np.minimum.at(least, rr, key)
    tied = np.flatnonzero(key == least[rr])
    if len(tied) > 1 and int(np.bincount(rr[tied]).max()) > 1:  # (ties: rare)
        tied = tied[np.lexsort((gg[tied], pr[tied], key[tied], rr[tied]))]
        ro = rr[tied]
        tied = tied[np.r_[True, ro[1:] != ro[:-1]]]
    return tied


def _floor_at(data: GroupingInput, r: int, count: int) -> float:
    """:func:`_floors_at` of one anchor count, as a Python float."""
    inv = data.inverse_etas(count + int(data.anchor[r]))
    total = 1.0  # added in r's term order, as privacy_risk adds (∞ stays ∞)
    for s in data.terms(r):
        total += inv[s]
    return total


def _floors_at(data: GroupingInput, r: int, counts: np.ndarray) -> np.ndarray:
    """PR of r's terms alone (every σ 0) in a group of each of ``counts`` anchors (before r
    joins): the least PR of r in any such group."""
    terms = data.terms(r)
    own = int(data.anchor[r])
    out = []
    for a in counts.tolist():
        inv = data.inverse_etas(a + own)
        total = 1.0  # added in r's term order, as privacy_risk adds (∞ stays ∞)
        for s in terms:
            total += inv[s]
        out.append(total)
    return np.array(out, dtype=float)


def _risk_floors(data: GroupingInput, r: int, anchors: np.ndarray) -> np.ndarray:
    """:func:`_floors_at` for each entry of ``anchors``: computed once per distinct anchor
    count (a few, against thousands of groups)."""
    distinct, at = np.unique(anchors, return_inverse=True)
    return _floors_at(data, r, distinct)[at.ravel()]


#: leftovers whose best groups are found together (:func:`_place_leftovers`), and the groups
#: of each whose PR is computed first (:func:`_best_of_many`).
_WINDOW = 512
#: groups whose PR a leftover's evaluation computes with Python floats (:meth:`_GroupTable.few_risks`)
_FEW_GROUPS = 8
#: the most of an array, without ndarray.max's Python wrapper
_most = np.maximum.reduce
_least = np.minimum.reduce
_FIRST_PAIRS = 4
#: (leftover, group) pairs a window evaluates at once, at most (about), and (pair, term)
#: elements :meth:`_GroupTable.pair_risks` makes at once, at most (about)
_PAIRS = 1 << 18
_PAIR_TERMS = 1 << 15
#: groups per block of :class:`_GroupBlocks`, and blocks opened first for a leftover.
_BLOCK = 64
_FIRST_BLOCKS = 4
#: what a growth bound subtracts last (_growth_bound)
_GROWTH_SLACK = 1e-12
#: group values whose spread _CellBlocks keeps (a value met again is almost always met at the
#: group's next step: on a 450k quarter 2, 16 kept find every repeat but one of 2,330)
_SPREADS_KEPT = 16
#: lists of blocks whose cells _CellBlocks.cells_of keeps (some 200 cells each)
_JOINED_KEPT = 256
#: upper ends of the width classes of :class:`_GroupBlocks` (a numeric term, 0 to 1).
_WIDTH_CLASSES = np.array([0.0, 1 / 1024, 1 / 256, 1 / 64, 1 / 16, 1 / 4])


class _Blocks:
    """Items with a generalized value each (groups, or cells of identical records) in blocks.

    Items are sorted by their categorical values, then by the lower end of the first numeric
    QID, and cut into blocks of at most :data:`_BLOCK` items that share every categorical value,
    a width class and a missing-value status (0: present, 1: mixed, 2: missing only) of that
    QID. A block's categorical values and the extremes of its items' bounds bound the loss of
    merging any of its items with a given value, so that a search can skip whole blocks without
    ever changing its answer (see :class:`_GroupBlocks` and :class:`_CellBlocks`).
    """

    def __init__(self, space: QidSpace, cat, lo, hi):
        self.space, self.cat, self.lo, self.hi = space, cat, lo, hi
        self.cat_j = [j for j, a in enumerate(space.attributes) if not a.numeric]
        self.j0 = next((j for j, a in enumerate(space.attributes) if a.numeric), None)
        a0 = None if self.j0 is None else space.attributes[self.j0]
        self.range = 0.0 if a0 is None else a0.value_range
        self.missing_at = None if a0 is None else a0.missing_at
        self.other_numeric = sum(a.numeric for a in space.attributes) - (self.j0 is not None)
        #: categorical value -> (merged, own) of :meth:`_lca_terms`: a value's categorical part
        #: of every block's bound depends on the blocks' categorical values only, and a grouping
        #: meets few distinct values (emptied whenever the blocks are cut again)
        self._cat_parts: dict[tuple, tuple[np.ndarray, float]] = {}

    def _tag(self, ids: np.ndarray) -> np.ndarray:
        """Missing-value status of the first numeric QID: 0 present, 1 mixed, 2 missing only."""
        tag = np.zeros(len(ids), dtype=np.int64)
        if self.missing_at is not None:
            tag[self.hi[self.j0][ids] >= self.missing_at] = 1
            tag[self.lo[self.j0][ids] >= self.missing_at] = 2
        return tag

    def _width(self, ids: np.ndarray) -> np.ndarray:
        """The first numeric term of each item (0 without a numeric QID)."""
        if self.j0 is None:
            return np.zeros(len(ids))
        return self.space.num_term(self.j0, self.lo[self.j0][ids], self.hi[self.j0][ids])

    def _cut(self, n: int) -> np.ndarray:
        """Sort and cut the items into blocks; returns the block starts (positions in order)."""
        ids = np.arange(n)
        tag = self._tag(ids)
        # Items of like widths share blocks, so that one wide item does not loosen the bounds
        # of many narrow ones.
        width_class = np.searchsorted(_WIDTH_CLASSES, np.where(tag > 0, 0.0, self._width(ids)))
        keys = [self.lo[self.j0]] if self.j0 is not None else []
        keys += [self.cat[j] for j in reversed(self.cat_j)] + [width_class, tag]
        ids = np.lexsort(keys) if keys else ids
        self.members = ids
        tags = np.column_stack([tag[ids], width_class[ids]] + [self.cat[j][ids] for j in self.cat_j])
        segment = np.r_[True, np.any(tags[1:] != tags[:-1], axis=1)] if n else np.zeros(0, bool)
        seg_start = np.maximum.accumulate(np.where(segment, np.arange(n), 0))
        starts = np.flatnonzero((np.arange(n) - seg_start) % _BLOCK == 0)
        self.start = np.r_[starts, n]
        self.block_of = np.empty(n, dtype=np.int64)
        self.block_of[ids] = np.repeat(np.arange(len(starts)), np.diff(self.start))
        first = ids[starts]
        self.bcat = {j: self.cat[j][first].copy() for j in self.cat_j}
        self.btag = tag[first]
        self._cat_parts = {}
        return starts

    def items_of(self, blocks: np.ndarray) -> np.ndarray:
        """The items of ``blocks``, block after block."""
        parts = [self.members[self.start[b]:self.start[b + 1]] for b in blocks.tolist()]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _reduce(self, op, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return op.reduceat(values[self.members], starts) if len(starts) else np.zeros(0)

    def _lca_terms(self, cat: Sequence) -> tuple[np.ndarray, float]:
        """Per block, Σ_j h(lca(cat_j, block's value_j)), and Σ_j h(cat_j) (cached per value:
        the arrays returned must not be changed)."""
        key = tuple(int(cat[j]) for j in self.cat_j)
        found = self._cat_parts.get(key)
        if found is None:
            found = self._cat_parts[key] = self._lca_terms_of(cat)
        return found

    def _lca_terms_of(self, cat: Sequence) -> tuple[np.ndarray, float]:
        space = self.space
        merged = np.zeros(len(self.btag))
        own = 0.0
        for j in self.cat_j:
            merged = merged + space.cat_term(j, space.lca_with(j, int(cat[j]), self.bcat[j]))
            own += float(space.cat_term(j, int(cat[j])))
        return merged, own


def _block_minima(table: np.ndarray, members: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``np.minimum.reduceat(table[members], starts, axis=0)``, gathered 128 blocks (at most
    8,192 rows) at a time: the whole gather is a copy of ``table`` (the σ table, 64 MiB at
    450k cases), made at every rebuild, and was the peak of a 450k quarter's release (issue 43)."""
    out = np.zeros((len(starts), table.shape[1]), dtype=table.dtype)
    step = 8192 // _BLOCK
    for a in range(0, len(starts), step):
        b = min(a + step, len(starts))
        first, end = int(starts[a]), int(starts[b]) if b < len(starts) else len(members)
        out[a:b] = np.minimum.reduceat(table[members[first:end]], starts[a:b] - first, axis=0)
    return out


def _unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``keys`` (non-negative codes) and the index of each row's, as
    ``np.unique(keys, axis=0, return_inverse=True)`` but, when the codes fit one int64, from
    a 1-D unique of each row packed (a fraction of its cost: it sorts the rows as records)."""
    spans = keys.max(axis=0) + 1 if len(keys) else np.ones(keys.shape[1], dtype=np.int64)
    if len(keys) and keys.min() >= 0 and float(np.prod(spans.astype(float))) < 2.0 ** 62:
        # row-major weights: the packed values sort as the rows do
        weights = np.cumprod(np.r_[1, spans[:0:-1]])[::-1].astype(np.int64)
        _, first, inverse = np.unique(keys.astype(np.int64) @ weights, return_index=True,
                                      return_inverse=True)
        return keys[first], inverse.ravel()
    found_rows, inverse = np.unique(keys, axis=0, return_inverse=True)
    return found_rows, inverse.ravel()


class _GroupBlocks(_Blocks):
    """The groups in blocks with bounds, so that a leftover's search can skip whole blocks.

    For a group g and a record r, with Δcat the categorical part of L(g ∪ r) − L(g) (the same
    for a whole block) and ΔW >= 0 the growth of the first numeric term:

        ΔIL(g, r) = |g|·(L(g ∪ r) − L(g)) + L(g ∪ r) >= (|g| + 1)·(Δcat + ΔW) + L(g)

    because the other terms of the loss never shrink when a group grows. The block's smallest
    |g| and L(g), and a lower bound of ΔW from the block's extreme bounds, make this a lower
    bound of ΔIL·PR (PR >= 1) for every group of the block. A group whose categorical value
    changes, or that starts or stops holding the missing value, leaves its block (it is then
    always evaluated) until the index is rebuilt; a group that only widens its interval (or,
    holding only missing values, takes a present one) widens its block's bounds.

    With a :class:`_GroupTable`, a block also keeps, per frequent term, the smallest σ_s of its
    groups (as of the last build: σ only grows) and the most anchors (kept current): when
    σ_s + 1 > η_s(anchors + r's) for a term of r even so, no group of the block can take r
    (PR ∞) and the block's bound is ∞. A leftover that fits few groups then skips the others
    whole instead of evaluating every group (issue 30). The bound of ΔIL is also multiplied by
    the least PR any group of the block can give r (r's terms alone at the block's most
    anchors), which is what keeps a leftover from opening block after block of groups whose
    ΔIL ties (issue 30: halved the second 450k quarter's grouping).
    """

    def __init__(self, space: QidSpace, gcat, glo, ghi, gsize, gloss,
                 table: "_GroupTable | None" = None):
        super().__init__(space, gcat, glo, ghi)
        self.gsize, self.gloss, self.table = gsize, gloss, table
        self.rebuild_at = max(256, len(gsize) // 64)
        self._build()

    def _build(self) -> None:
        G = len(self.gsize)
        starts = self._cut(G)
        self.size_min = self._reduce(np.minimum, self.gsize, starts)
        self.loss_min = self._reduce(np.minimum, self.gloss, starts)
        if self.table is not None:
            dense = self.table.dense
            self.sigma_min = _block_minima(dense, self.members, starts)
            self.anchors_max = self._reduce(np.maximum, self.table.anchors, starts).astype(np.int64)
            self.sigma_min_t = np.ascontiguousarray(self.sigma_min.T)
            #: per frequent term, the largest σ_min of any block
            self.sigma_min_max = (self.sigma_min_t.max(axis=1) if len(starts)
                                  else np.zeros(dense.shape[1], dtype=np.int64))
        if self.j0 is not None:
            self.lo_min = self._reduce(np.minimum, self.lo[self.j0], starts)
            self.hi_max = self._reduce(np.maximum, self.hi[self.j0], starts)
            ids = np.arange(G)
            width = np.where(self._tag(ids) > 0, 0.0, self._width(ids))
            self.width_max = self._reduce(np.maximum, width, starts)
        self._present = self.btag == 0
        self._dcat_parts: dict[tuple, np.ndarray] = {}
        self.out = np.zeros(G, dtype=bool)  # left its block since the last build
        self.loose_ids: list[int] = []
        #: np.unique(anchors_max, return_inverse=True), or None when anchors_max changed since
        self._counts: tuple[np.ndarray, np.ndarray] | None = None

    def anchor_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The blocks' distinct most-anchors counts (few), and the index of each block's."""
        if self._counts is None:
            distinct, at = np.unique(self.anchors_max, return_inverse=True)
            self._counts = (distinct, at.ravel())
        return self._counts

    def loose(self) -> np.ndarray:
        """Groups outside every block (always evaluated)."""
        return np.asarray(self.loose_ids, dtype=np.int64)

    def members_of(self, blocks: np.ndarray) -> np.ndarray:
        """The groups of ``blocks`` that are still in them."""
        ids = self.items_of(blocks)
        return ids[~self.out[ids]]

    def lower_bounds(self, value: list, r: int | None = None) -> np.ndarray:
        """A lower bound of ΔIL(g, r)·PR(g, r) for every group of each block (∞: no group of
        the block can take r, judged on r's frequent terms when ``r`` is given)."""
        cat, lo, hi = value
        dcat = self._dcat(cat)
        dw = np.zeros(len(self.btag))
        if self.j0 is not None:
            r_lo, r_hi, m = lo[self.j0], hi[self.j0], self.missing_at
            present = self._present
            if m is not None and r_hi >= m:
                # r holds the missing value: with a present group the term becomes 1
                dw = np.where(present, np.maximum(0.0, 1.0 - self.width_max), 0.0)
            elif self.range > 0:
                grow = np.maximum(self.lo_min - r_lo, r_hi - self.hi_max) / self.range
                dw = np.where(present, np.maximum(0.0, grow), 0.0)
            if m is not None and r_lo < m:
                # groups of missing values only: adding a present value costs 1
                dw[(self.btag > 0) & (self.lo_min >= m)] = 1.0
        bound = (self.size_min + 1.0) * (dcat + dw) + self.loss_min
        bound = bound * (1.0 - 1e-9) - 1e-12  # float slack: never above the exact ΔIL
        if r is not None and self.table is not None and len(bound):
            data = self.table.data
            terms = np.asarray(data.terms(r), dtype=np.int64)
            cols = self.table.column[terms]
            frequent = cols >= 0
            # η and the floors below depend on a block's most anchors only: computed once per
            # distinct count (the same elements as for every block)
            distinct, at = self.anchor_counts()
            one = len(distinct) == 1  # the usual case: one row of η for every block
            if frequent.any() and one:
                # (σ of the frequent terms as rows, one per term: contiguous gathers; only
                # of the terms whose η some block's σ_min reaches, as in lower_bounds_many)
                fcols = cols[frequent]
                e = etas_of(data.theta[terms[frequent]], int(distinct[0]) + int(data.anchor[r]))
                may = e <= self.sigma_min_max[fcols]
                if may.any():
                    full = (self.sigma_min_t[fcols[may]] + 1 > e[may, None]).any(axis=0)
                    bound[full] = INF
            elif frequent.any():
                sigma_min = self.sigma_min_t[cols[frequent]]
                e = etas_of(data.theta[terms[frequent]][:, None],
                            distinct[None, :] + int(data.anchor[r]))[:, at]
                bound[(sigma_min + 1 > e).any(axis=0)] = INF
            if len(terms):
                # PR(g, r) is at least r's terms alone (σ 0) at the block's most anchors (η
                # grows with them): the bound of ΔIL times that floor bounds ΔIL·PR
                if one:
                    floor = float(_floors_at(data, r, distinct)[0])
                    bound = np.full(len(bound), INF) if floor == INF else bound * floor
                else:
                    floors = _floors_at(data, r, distinct)[at]
                    bound = np.where(floors == INF, INF, bound * floors)
        return bound

    def lower_bounds_many(self, rs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`lower_bounds` of each leftover of ``rs`` (rows) for every block (columns) at
        once, with a table: the same bounds, element by element (the same operations on the
        same floats, done in place); and r's PR floor at each block's most anchors
        (:func:`_floors_at`), which they include (read only: a view of one column per
        distinct count)."""
        table = self.table
        assert table is not None
        data = table.data
        L, B = len(rs), len(self.btag)
        if self.j0 is not None and self.range > 0:
            los, his = data.lo[self.j0], data.hi[self.j0]
            assert los is not None and his is not None
            r_lo, r_hi = los[rs][:, None], his[rs][:, None]
            dw = np.subtract(self.lo_min, r_lo)
            np.maximum(dw, np.subtract(r_hi, self.hi_max), out=dw)
            dw /= self.range
            np.maximum(dw, 0.0, out=dw)
            dw[:, ~self._present] = 0.0
        else:
            dw = np.zeros((L, B))
        if self.j0 is not None and self.missing_at is not None:
            los, his = data.lo[self.j0], data.hi[self.j0]
            assert los is not None and his is not None
            m = self.missing_at
            # r holds the missing value: with a present group the term becomes 1
            holds = np.flatnonzero(his[rs] >= m)
            if len(holds):
                dw[holds] = np.where(self._present, np.maximum(0.0, 1.0 - self.width_max), 0.0)
            # groups of missing values only: adding a present value costs 1
            only = np.flatnonzero((self.btag > 0) & (self.lo_min >= m))
            present = np.flatnonzero(los[rs] < m)
            if len(only) and len(present):
                dw[np.ix_(present, only)] = 1.0
        if self.cat_j:
            # per distinct categorical value of the records, the cached row of Δcat
            keys = np.column_stack([data.cat[j][rs] for j in self.cat_j])  # type: ignore[index]
            found, inverse = _unique_rows(keys)
            cat: list = [None] * len(self.space.attributes)
            parts = []
            for row in found.tolist():
                for j, code in zip(self.cat_j, row):
                    cat[j] = code
                parts.append(self._dcat(cat))
            dw += np.stack(parts)[inverse.ravel()]  # (dcat + dw: the same float)
        bound = dw
        bound *= self.size_min + 1.0
        bound += self.loss_min
        bound *= 1.0 - 1e-9  # float slack: never above the exact ΔIL
        bound -= 1e-12
        ptr = data.term_ptr
        lengths = ptr[rs + 1] - ptr[rs]
        own = data.anchor[rs].astype(np.int64)
        # η and the floors depend on a block's most anchors only: per distinct count (few)
        distinct, at = self.anchor_counts()
        one = len(distinct) == 1
        # PR is at least r's terms alone (σ 0) at the block's most anchors: per row and
        # distinct count, 1 + Σ 1/η_s added in r's term order (as _floors_at adds)
        inverse_etas = np.array([[data.inverse_etas(int(a) + o) for a in distinct.tolist()]
                                 for o in (0, 1)])  # (own anchors, count, term)
        floors = np.ones((L, len(distinct)))
        full = np.zeros((L, B), dtype=bool)
        for p in range(int(lengths.max()) if L else 0):
            rows = np.flatnonzero(lengths > p)
            terms = data.term_ids[ptr[rs[rows]] + p]
            floors[rows] += inverse_etas[own[rows], :, terms]
            cols = table.column[terms]
            e = etas_of(data.theta[terms][:, None], distinct[None, :] + own[rows, None])
            # a block can be full only where σ_min + 1 > η for some block: frequent terms
            # whose η exceeds every block's σ_min (most of them) are left out at once
            may = (cols >= 0) & (e.min(axis=1) <= self.sigma_min_max[np.maximum(cols, 0)])
            if not may.any():
                continue
            rows, cols, e = rows[may], cols[may], e[may]
            full[rows] |= self.sigma_min_t[cols] + 1 > (e[:, at] if not one else e)
        never = floors == INF  # (× 1 there: no 0 · ∞)
        if one:
            bound *= np.where(never, 1.0, floors)
            bound[never[:, 0]] = INF
            floors_of = np.broadcast_to(floors, (L, B))
        else:
            floors_of = floors[:, at]
            bound *= np.where(floors_of == INF, 1.0, floors_of)
            bound[floors_of == INF] = INF
        bound[full] = INF
        return bound, floors_of

    def _dcat(self, cat: Sequence) -> np.ndarray:
        """Per block, the categorical part of L(g ∪ r) − L(g) for a value of categorical part
        ``cat`` (cached per value like :meth:`_lca_terms`: not to be changed)."""
        key = tuple(int(cat[j]) for j in self.cat_j)
        found = self._dcat_parts.get(key)
        if found is None:
            merged, _ = self._lca_terms(cat)
            own = np.zeros(len(self.btag))
            for j in self.cat_j:
                own = own + self.space.cat_term(j, self.bcat[j])
            found = self._dcat_parts[key] = merged - own
        return found

    def joined(self, gi: int) -> None:
        """A record joined group gi without changing its value (:meth:`changed` of a value that
        stayed: only the most anchors of its block can move)."""
        if self.out[gi] or self.table is None:
            return
        b = int(self.block_of[gi])
        if self.table.anchors[gi] > self.anchors_max[b]:
            self.anchors_max[b] = self.table.anchors[gi]
            self._counts = None

    def changed(self, gi: int) -> None:
        """Group gi grew: widen its block's bounds, or take it out of its block."""
        if self.out[gi]:
            return
        b = int(self.block_of[gi])
        m = self.missing_at
        holds_missing = m is not None and self.hi[self.j0][gi] >= m  # its tag (_tag) is > 0
        same = holds_missing == (self.btag[b] > 0) and all(
            self.cat[j][gi] == self.bcat[j][b] for j in self.cat_j)
        if not same:
            self.out[gi] = True
            self.loose_ids.append(gi)
            if len(self.loose_ids) > self.rebuild_at:
                self._build()
            return
        if self.table is not None and self.table.anchors[gi] > self.anchors_max[b]:
            self.anchors_max[b] = self.table.anchors[gi]
            self._counts = None
        if self.j0 is not None:
            lo, hi = float(self.lo[self.j0][gi]), float(self.hi[self.j0][gi])
            self.lo_min[b] = min(self.lo_min[b], lo)
            self.hi_max[b] = max(self.hi_max[b], hi)
            if self.btag[b] == 0:  # (_width of the group: its first numeric term)
                self.width_max[b] = max(self.width_max[b],
                                        self.space.num_term_scalar(self.j0, lo, hi))


@overload
def _growth_bound(spread: float, size: float, loss: float, p0: float) -> float: ...
@overload
def _growth_bound(spread: np.ndarray, size: float, loss: float, p0: np.ndarray,
                  slack: np.ndarray) -> np.ndarray: ...
def _growth_bound(spread, size, loss, p0, slack=_GROWTH_SLACK):
    """((|g| + 1)·spread + L(g))·P0, then the slack, so never above the key: per block on
    arrays (:meth:`_CellBlocks.growth_bounds`) and for one block on Python floats
    (best_candidate's ``usual_again``). One sequence of operations serves both, so the two
    give the same float for a block (issue 43). ``slack``: :data:`_GROWTH_SLACK`, or per block
    −∞ where the bound is to be ∞ (x − (−∞) is ∞ for every finite x; x − 1e-12 is the same
    float whether 1e-12 is a scalar or an array's element)."""
    bound = spread * size
    bound += loss
    bound *= p0
    bound *= 1.0 - 1e-9
    bound -= slack
    return bound


class _CellBlocks(_Blocks):
    """The cells in blocks with bounds, for the growth step and the farthest seed.

    Growth: for a growing group g and a record t of cell c, as in :class:`_GroupBlocks`,
    ΔIL(g, t)·PR(g, t) >= ((|g| + 1)·(Δcat + ΔW) + L(g))·P0(t), with Δcat exact for the block and
    ΔW bounded from the block's extreme bounds, and P0 at least the block's smallest.
    Farthest seed: the distance L({r, c}) is the block's exact categorical part plus a numeric
    part bounded below and above by the block's extreme bounds.
    """

    def __init__(self, space: QidSpace, cells: "_Cells", p0: np.ndarray, *,
                 alive_cells: np.ndarray, seed_cells: np.ndarray):
        super().__init__(space, cells.cat, cells.lo, cells.hi)
        starts = self._cut(cells.count)
        cell_p0 = np.full(cells.count, INF)
        np.minimum.at(cell_p0, cells.cell_of[cells.queue], p0[cells.queue])
        self.p0_min = self._reduce(np.minimum, cell_p0, starts)
        if self.j0 is not None:
            self.lo_min = self._reduce(np.minimum, self.lo[self.j0], starts)
            self.lo_max = self._reduce(np.maximum, self.lo[self.j0], starts)
            self.hi_min = self._reduce(np.minimum, self.hi[self.j0], starts)
            self.hi_max = self._reduce(np.maximum, self.hi[self.j0], starts)
        # alive pool records and usable seeds per block (kept current by the grouping)
        alive = np.bincount(self.block_of[alive_cells], minlength=len(starts))
        #: (a list: the grouping reads and writes it one block at a time)
        self.alive: list[int] = alive.tolist()
        seeds = np.bincount(self.block_of[seed_cells], minlength=len(starts))
        #: (a list, as ``alive``)
        self.seeds: list[int] = seeds.tolist()
        #: per block 0.0 while it holds a usable seed, else −∞ (kept current by the grouping):
        #: added to the farthest seed's distance bounds, it leaves the seedless blocks out
        self.seedless = np.where(seeds > 0, 0.0, -INF)
        # constant parts of the growth bounds
        self._p0_finite = self.p0_min < INF
        self.p0_finite: list[bool] = self._p0_finite.tolist()
        #: blocks without an alive record of finite P0 (bound ∞); kept current by the grouping
        self.dead = ~((alive > 0) & self._p0_finite)
        #: per block the growth bound's last term (_growth_bound): its slack, or −∞ where the
        #: block is dead, so that its bound comes out ∞ with no scatter (kept current by mark)
        self._slack = np.where(self.dead, -INF, _GROWTH_SLACK)
        self._p0_or_0 = np.where(self._p0_finite, self.p0_min, 0.0)  # no 0·∞ where masked
        #: (the same, as Python floats: a growth step's bound of one block, best_candidate)
        self.p0_bound: list[float] = self._p0_or_0.tolist()
        #: the spread of the value growth_bounds read last (_spread: not to be changed)
        self.last_spread = np.zeros(0)
        self._touch = self.btag > 0
        self._touch_at = np.flatnonzero(self._touch)
        self._not_missing_only = (self.btag != 2).astype(float)
        # constant parts of the distance bounds: the blocks apart from the missing values
        # and their extreme bounds, and 1 where a block touches them
        self._touch_ones = self._touch.astype(float)
        self._apart = np.flatnonzero(~self._touch)
        if self.j0 is not None:
            self._hi_min_apart, self._lo_max_apart = self.hi_min[self._apart], self.lo_max[self._apart]
            self._hi_max_apart, self._lo_min_apart = self.hi_max[self._apart], self.lo_min[self._apart]
        # each block's cells, and whether none of them holds a missing value (_Cells.loss_after)
        self._cells: list[np.ndarray] = np.split(self.members, self.start[1:-1])
        self._present: list[bool] = (
            ~np.logical_or.reduceat(cells.has_missing[self.members], starts)
            if len(starts) else np.zeros(0, dtype=bool)).tolist()
        #: cells_of's arrays for the lists of blocks met last
        self._joined: dict[tuple, np.ndarray] = {}
        #: the group value's part of the growth bounds for the last values met (a group keeps
        #: its value for some steps: one bound in eight reads a spread again, 450k quarter 2)
        self._spreads: dict[tuple, np.ndarray] = {}
        #: the parts of _spread that depend on a group's categorical value alone, on the lower
        #: and on the upper end of its first numeric QID alone (few distinct values each)
        self._dcat: dict[tuple, np.ndarray] = {}
        self._below: dict[float, np.ndarray] = {}
        self._above: dict[float, np.ndarray] = {}
        #: categorical value -> the parts of distance_bounds that depend on it alone
        self._distance_parts: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._values_kept = max(16, CACHED_FLOATS // max(len(starts), 1))

    def release(self) -> None:
        """Empty the caches of values' parts (the grouping no longer reads them)."""
        for cache in (self._spreads, self._dcat, self._below, self._above, self._distance_parts,
                      self._cat_parts, self._joined):
            cache.clear()

    def mark(self, b: int, dead: bool) -> None:
        """Set whether block b is dead (no alive record of finite P0: its bound ∞)."""
        if bool(self.dead[b]) != dead:
            self.dead[b] = dead
            self._slack[b] = -INF if dead else _GROWTH_SLACK

    def cells_of(self, blocks: list[int]) -> np.ndarray:
        """The cells of ``blocks``, block after block (:meth:`_Blocks.items_of`); not to be
        changed (kept for the lists of blocks met last: a growth step's first blocks are
        mostly those of a step before, 23.3k of 25.3k lists on a 450k quarter 2)."""
        if len(blocks) == 1:
            return self._cells[blocks[0]]
        key = tuple(blocks)
        found = self._joined.get(key)
        if found is None:
            if len(self._joined) >= _JOINED_KEPT:
                self._joined.clear()
            parts = [self._cells[b] for b in blocks]
            found = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            self._joined[key] = found
        return found

    def present(self, blocks: list[int]) -> bool:
        """Whether no cell of ``blocks`` holds a missing value."""
        flags = self._present
        for b in blocks:  # (a loop: all() over a generator costs more for a few blocks)
            if not flags[b]:
                return False
        return True

    def _value_key(self, g: "_Group") -> tuple:
        """What of g's value the bounds read: its categorical codes, its first numeric bounds."""
        cat = g.cat
        key = tuple([cat[j] for j in self.cat_j])
        j0 = self.j0
        return key if j0 is None else (key, g.lo[j0], g.hi[j0])

    def growth_bounds(self, g: "_Group") -> np.ndarray:
        """A lower bound of ΔIL(g, t)·PR(g, t) for every alive record t of each block.

        Every block's bound is computed with the same operations as an element of the whole
        arrays (and ∞ put where no record can be found), so each finite bound is the same float
        as if the finite blocks were computed alone.
        """
        key = self._value_key(g)
        spread = self._spreads.get(key)
        if spread is None:
            if len(self._spreads) >= _SPREADS_KEPT:
                self._spreads.clear()
            spread = self._spreads[key] = self._spread(g)
        self.last_spread = spread
        return _growth_bound(spread, g.size + 1.0, g.loss, self._p0_or_0, self._slack)

    def _spread(self, g: "_Group") -> np.ndarray:
        """Per block, a lower bound of L(g ∪ {t}) − L(g) over its cells t: the categorical part
        exact, the first numeric term's growth bounded from the block's extreme bounds."""
        cat = g.cat
        key = tuple([cat[j] for j in self.cat_j])
        dcat = self._dcat.get(key)
        if dcat is None:
            merged, own = self._lca_terms(cat)
            dcat = self._dcat[key] = merged - own
        dw = None
        if self.j0 is not None:
            a, b, m = g.lo[self.j0], g.hi[self.j0], self.missing_at
            assert a is not None and b is not None  # j0 is numeric: the group has its bounds
            g_tag = 0 if m is None or b < m else (2 if a >= m else 1)
            if g_tag == 0:
                mixed = 1.0 - self.space.num_term_scalar(self.j0, a, b)
                if self.range > 0:
                    # max(0, max(a − lo_max, hi_min − b)/range) as max(max(0, (a − lo_max)/range),
                    # (hi_min − b)/range): the same floats (division by range > 0 is monotone,
                    # and no operand is -0.0), from one array per bound, cached (a group's
                    # bounds take few distinct values)
                    dw = np.maximum(self._growth_below(a), self._growth_above(b))
                    dw[self._touch_at] = mixed
                    dw += dcat  # (dcat + dw: the same float)
                    return dw
                    grow = np.maximum(a - self.lo_max, self.hi_min - b) / self.range
                    dw = np.where(self._touch, mixed, np.maximum(0.0, grow))
                else:
                    dw = np.where(self._touch, mixed, 0.0)
            elif g_tag == 2:
                dw = self._not_missing_only
        return dcat if dw is None else dcat + dw  # (dcat + 0.0 is dcat: no term is -0.0)

    def _growth_below(self, a: float) -> np.ndarray:
        """max(0, (a − lo_max)/range) per block (cached per a)."""
        part = self._below.get(a)
        if part is None:
            if len(self._below) >= self._values_kept:
                self._below.clear()
            part = self._below[a] = np.maximum(0.0, (a - self.lo_max) / self.range)
        return part

    def _growth_above(self, b: float) -> np.ndarray:
        """(hi_min − b)/range per block (cached per b)."""
        part = self._above.get(b)
        if part is None:
            if len(self._above) >= self._values_kept:
                self._above.clear()
            part = self._above[b] = (self.hi_min - b) / self.range
        return part

    def distance_bounds(self, g: "_Group") -> tuple[np.ndarray, np.ndarray]:
        """Per block, lower and upper bounds of L({r, c}) over its cells (g holds r alone).

        Only their soundness matters: the farthest seed's search evaluates every cell of the
        blocks whose upper bound reaches the largest lower bound, and so finds the same cells
        at the largest distance whatever the bounds' floats. A point r of present values (the
        usual seed) takes the short way: the numeric term of every block at once, its blocks
        touching the missing values then set to 1, and a slack of 1e-9·(2 + the rest) cached
        with the categorical part (the numeric term is at most 1).
        """
        j0 = self.j0
        if j0 is not None and self.range > 0:
            a, b, m = g.lo[j0], g.hi[j0], self.missing_at
            assert a is not None and b is not None  # j0 is numeric: the group has its bounds
            if m is None or b < m:
                key = tuple([g.cat[j] for j in self.cat_j])
                parts = self._distance_parts.get(key)
                if parts is None:
                    merged, _ = self._lca_terms(g.cat)
                    slack = 1e-9 * (2.0 + merged + self.other_numeric)
                    parts = self._distance_parts[key] = (
                        merged - slack, merged + self.other_numeric + slack)
                width = self.range
                lo_w = np.maximum(b, self.hi_min)
                lo_w -= np.minimum(a, self.lo_max)
                lo_w /= width
                lo_w[self._touch_at] = 1.0
                hi_w = np.maximum(b, self.hi_max)
                hi_w -= np.minimum(a, self.lo_min)
                hi_w /= width
                hi_w[self._touch_at] = 1.0
                lo_w += parts[0]
                hi_w += parts[1]
                return lo_w, hi_w
        merged, _ = self._lca_terms(g.cat)
        lo_w = np.zeros(len(self.btag))
        hi_w = np.zeros(len(self.btag))
        if self.j0 is not None:
            a, b, m = g.lo[self.j0], g.hi[self.j0], self.missing_at
            assert a is not None and b is not None  # j0 is numeric: the group has its bounds
            r_tag = 0 if m is None or b < m else (2 if a >= m else 1)
            if r_tag == 0:
                lo_w, hi_w = self._touch_ones.copy(), self._touch_ones.copy()
                if self.range > 0:
                    p, width = self._apart, self.range
                    lo_w[p] = (np.maximum(b, self._hi_min_apart) - np.minimum(a, self._lo_max_apart)) / width
                    hi_w[p] = (np.maximum(b, self._hi_max_apart) - np.minimum(a, self._lo_min_apart)) / width
            elif r_tag == 1:
                lo_w[:] = hi_w[:] = 1.0
            else:
                lo_w[self.btag != 2] = hi_w[self.btag != 2] = 1.0
        slack = 1e-9 * (1.0 + merged + hi_w + self.other_numeric)
        return merged + lo_w - slack, merged + hi_w + self.other_numeric + slack


def _ha_update_rows(counters: np.ndarray, cls: int) -> np.ndarray:
    """:func:`ha_update` for an ss leftover, on every group's counters at once."""
    out = counters.copy()
    for v in VIEWS_OF_CLASS[cls]:
        out[:, v] += 1
        out[:, 4 + v] += 1
    return out


# --------------------------------------------------------------- unplaceable leftovers (HA)
def _place_by_suppression(data: GroupingInput, groups: list[_Group], result: GroupingResult, *,
                          table: _GroupTable | None = None) -> None:
    """Place every unplaceable leftover in its nearest group, suppressing the terms it must (HA).

    Only with ``data.suppress_unplaced`` and at least one group (with none, the records stay in
    ``result.unplaced``). It runs once every other leftover is placed, in the leftovers' rank
    order, so that ordinary placements come first and can only lower what must be suppressed.
    A record always fits some group: with all its terms suppressed it holds no term (θ holds)
    and is not an ss-record (α holds: an nss record changes no counter).

    Without ``table`` (the reference grouping) ΔIL is computed group by group
    (:func:`_fit_by_suppression`); with it, for all groups at once (:func:`_fit_by_suppression_fast`,
    the same choice).
    """
    if data.late is not None and data.late.any():
        late = np.flatnonzero(data.late).tolist()
        result.leftovers += len(late)
        result.unplaced = sorted(result.unplaced + late, key=lambda r: int(data.rank[r]))
    if data.suppress_unplaced:
        result.late = list(result.unplaced)
    if not data.suppress_unplaced or not groups or not result.unplaced:
        return
    if data.alpha is not None and not data.ss_cells:
        raise InternalError("GroupingInput.ss_cells is required to suppress terms with alpha: "
                            "the ss flag must be judged again on the terms a record keeps.")
    for r in result.unplaced:
        if table is None:
            gi, dropped, kept, ss = _fit_by_suppression(data, groups, r)
            groups[gi].add(data, r, remaining=True, kept=(kept, ss))
        else:
            gi, dropped, kept, ss = _fit_by_suppression_fast(data, table, r)
            table.add(gi, r, kept=(kept, ss))
        if dropped:
            result.suppressed[r] = tuple(dropped)
    result.unplaced = []


def _fit_by_suppression(data: GroupingInput, groups: list[_Group], r: int
                        ) -> tuple[int, list[int], list[int], bool]:
    """The group leftover r joins with some of its terms suppressed, and those terms.

    The group is the one nearest to r in the QIDs alone: smallest ΔIL, then smallest index.
    It must not be chosen by r's terms (say, where the fewest of them must go), because then a
    suppressed term, which no published row shows, would decide which group r joins and so
    reach published bytes (issue 41's non-interference (a) for HA; ``docs/algorithms/ha.md``).
    In that group (σ, η and the α counters of g ∪ {r}, r taking a new position as any
    leftover), :func:`_suppression_in` says which terms go.

    Returns (group, suppressed term ids, kept term ids, ss flag on the kept terms).
    """
    gi = min(range(len(groups)),
             key=lambda i: (delta_il(groups[i].size, groups[i].loss, groups[i].loss_with(data, r)), i))
    return (gi, *_suppression_in(data, groups[gi], r))


def _suppression_in(data: GroupingInput, g: _Group, r: int, *, sigma: dict[int, int] | None = None
                    ) -> tuple[list[int], list[int], bool]:
    """The terms of leftover r that must go for r to join group g, what it keeps, its ss flag.

    * θ: every term s with σ_s(g) + 1 > η_s must go, and no other term needs to (σ only falls);
    * α: if r, on the terms it keeps, is still an ss-record and the α counters would break,
      r must become an nss record: in each ss column where it keeps c >= m terms (m the
      column's minimum), c − m + 1 more terms go (:func:`_ss_unflag`).

    Each term's fate is decided by its own σ in g, and the α step reads only the terms r
    keeps, so a suppressed term replaced by another that g suppresses too leaves what r
    contributes (kept terms, ss flag) and every published count as they were.

    ``sigma``: σ in g of (at least) r's terms, when not g's own dict.
    """
    terms = data.terms(r)
    anchors = g.anchors + int(data.anchor[r])
    held = g.sigma if sigma is None else sigma
    dropped = {s for s in terms if held.get(s, 0) + 1 > eta(float(data.theta[s]), anchors)}
    ss = False
    if data.alpha is not None:
        assert data.ha_class is not None  # given with alpha
        ss = _ss_kept(data, r, dropped)
        if ss and not ha_ok(ha_update(g.ha, int(data.ha_class[r]), True, True), data.alpha):
            dropped |= _ss_unflag(data, r, dropped)
            ss = False
    return sorted(dropped), [s for s in terms if s not in dropped], ss


def _fit_by_suppression_fast(data: GroupingInput, table: _GroupTable, r: int
                             ) -> tuple[int, list[int], list[int], bool]:
    """:func:`_fit_by_suppression` with ΔIL of every group at once: the same floats and choice."""
    value = [[None if x is None else x[r] for x in arrays] for arrays in (data.cat, data.lo, data.hi)]
    score = table.delta_il(value, np.arange(len(table.groups)))
    gi = int(np.argmin(score))  # the first of equal scores: the smallest index
    # (σ of r's terms from the table, which counts σ in the leftover phase: _GroupTable.add)
    terms = data.terms(r)
    counts = table.sigmas(terms, np.array([gi]))[0].tolist() if terms else []
    return (gi, *_suppression_in(data, table.groups[gi], r, sigma=dict(zip(terms, counts))))


def _ss_columns_of(data: GroupingInput, r: int) -> list[tuple[list[int], int]]:
    """Record r's term ids in each ss column, with the column's minimum count."""
    return [(ids[ptr[r]:ptr[r + 1]].tolist(), m) for ptr, ids, m in data.ss_cells]


def _ss_kept(data: GroupingInput, r: int, dropped: set[int]) -> bool:
    """Whether r is an ss-record on the terms it keeps (some column still at its minimum)."""
    return any(sum(s not in dropped for s in col) >= m for col, m in _ss_columns_of(data, r))


def _ss_unflag(data: GroupingInput, r: int, dropped: set[int]) -> set[int]:
    """Further terms to suppress so that r keeps fewer than the minimum in every ss column.

    Greedy: the term that lowers the most columns still at or above their minimum, then the
    smallest id (term ids follow the terms' sort order). With one ss column (the usual case)
    this is the minimum number. The choice reads only the terms r keeps: not the period's term
    frequencies, which count other cases' suppressed terms (issue 41).
    """
    cols = [([s for s in col if s not in dropped], m) for col, m in _ss_columns_of(data, r)]
    excess = [len(col) - m + 1 for col, m in cols]
    extra: set[int] = set()
    while any(e > 0 for e in excess):
        over = [set(col) for (col, _), e in zip(cols, excess) if e > 0]
        cands = set().union(*over) - extra
        s = min(cands, key=lambda t: (-sum(t in col for col in over), t))
        extra.add(s)
        excess = [e - (s in col) for (col, _), e in zip(cols, excess)]
    return extra


def _smallest(lb: np.ndarray, chunk: int) -> tuple[np.ndarray, float]:
    """Indices of the ``chunk`` smallest bounds in ascending order, and the smallest bound left
    outside them (∞ when the chunk takes everything)."""
    if chunk >= len(lb):
        return np.argsort(lb, kind="stable"), INF
    part = np.argpartition(lb, chunk)
    return part[:chunk][np.argsort(lb[part[:chunk]], kind="stable")], float(lb[part[chunk]])


__all__ = ["Attribute", "GroupingInput", "GroupingResult", "QidSpace", "delta_il", "eta",
           "group_records", "group_reference", "privacy_risk", "state_loss"]
