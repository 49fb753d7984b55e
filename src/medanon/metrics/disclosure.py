"""Disclosure risk of a release after the linkage attacks: RR and AR_rev of paper 000.

For every released record r' (the anonymized version of an original super record r), the
adversary knows r's exact QID values and whether the case first appears in this release, and
links CaseIDs across the series (:mod:`medanon.published.links`). It removes the records excludable
by the B-, F- and L-attacks (optionally 002's MD-attack and medical background knowledge, 000
§E) and takes as candidates G the remaining records at minimum distance from r
(``algorithms.md`` §5.4):

    RR(D')     = (1/|D'|) · Σ_{r'} Pr(r'),      Pr(r') = 1/|G| if r' ∈ G, else 0
    AR_rev(D') = (1/|D'|) · Σ_{r'} Ar(r'),      Ar(r') = Σ_{s ∈ S_G} max{1/|G|, Pr_G(s)} / |S_G|
                                                         if r' ∈ G, else 0

with Pr_G(s) the share of G's records holding sensitive term s and S_G the terms present in G
(§5.5). Because every s ∈ S_G occurs at least once, max{1/|G|, Pr_G(s)} = Pr_G(s), so
Ar(r') = (Σ_{j∈G} |terms_j|) / (|G| · |S_G|); a record without terms in a G without terms has
Ar = 1/|G|.

Distance (000 does not give one; §5.4 suggests a normalized mixed distance): the mean over QIDs
of a numeric gap between r's value and the published value or interval, divided by the span of
the original values, and for a categorical QID 0 when the published node covers r's value, else
the path length between them through their lowest common ancestor divided by twice the height
of the hierarchy. A generalized release puts r at distance 0 from every record that covers it,
so G is the linkage candidate set; a perturbed (DP) release rarely has such ties.

Choices: the adversary knows the truth about first appearance (L-attack) and discontinuation
(MD-attack, only with ``md=True`` and when the next release exists). A missing original value
is unknown to the adversary and does not restrict the candidates. Withheld cases are not in D'.

Perturbed releases (issue 17). Exclusions are hard ones only (:mod:`medanon.attacks.likelihood`):
links and covers are read on the series whose perturbed QIDs are blank. On a release declaring
PPMS-DP in its strict variant, the candidates K(r) of a target r are the records that no attack
excludes and whose generalized QIDs cover r (perturbed values never exclude), and the adversary
weights them with the likelihood-weighted attacker ((L1)-(L2) there): π_j(r) over K(r). Then

    Pr(r')  = π_{r'}(r)                                   (the posterior of the true record)
    Ar(r')  = Σ_{s ∈ S_K} max{π_{r'}(r), P_π(s)} / |S_K|,  P_π(s) = Σ_{j ∈ K(r), s ∈ j} π_j(r)

which are 000's formulas with 1/|G| and Pr_G(s) replaced by their posterior versions (a uniform
π gives them back exactly). RR is then the mean posterior of the true record; a record counts as
re-identified when π_{r'}(r) > 1/2 (the attacker's best guess is right and more likely than not).
``rr_hard``/``ar_rev_hard`` are the same measures with π uniform on K(r): the hard-exclusion
attacker, who reads no perturbed value. Elsewhere (no strict PPMS-DP release) the measures are
the distance-based ones above, and the hard numbers equal them.

Index (how G is found without comparing every target with every record). A record stays in
G(t) when no attack excludes it and it is at minimum distance. The exclusions are all covering
tests, so a record r is spared exactly when its *effective region* E_r = published ∩ earlier ∩
later ∩ implied region covers t on the QIDs t knows (and the L- and MD-flags allow it). When
some spared record covers t, the minimum distance is 0 and G(t) is the set of spared records
covering t, unless a published value misses t by a gap within the 1e-12 tie tolerance (a
*near miss*): a record at distance ≤ 1e-12 would join G. So for each target whose known
numeric values are points on at most one numeric QID, with no published endpoint within
4e-12 · (number of QIDs) · span of it outside it:

* records are bucketed by their effective categorical cells and link flags; a target matches
  the buckets whose cells are ancestors-or-self of its values (any cell where a value is
  unknown) and whose flags its own allow;
* on its known numeric QID, |G| and Σ_{j∈G} |terms_j| count the records of the matched buckets
  whose effective interval holds the point, from sorted lower and upper endpoints; |S_G| counts
  the terms whose union of intervals (over those records, merged per term) holds it.

That is O(n log n) per bucket key. Every other target (G empty, a near miss, an interval value,
two known numeric QIDs) goes through the all-pairs scan by distance, which is also the
reference the tests hold the index to (same floats). The likelihood-weighted version still
needs each candidate's weight (targets x candidates): there the buckets only restrict the
records whose exclusions and likelihoods are computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import sparse

from ..attacks.background import BackgroundKnowledge
from ..attacks.likelihood import HARD, LikelihoodAttacker, TargetValues, posterior
from ..errors import SchemaError, ValidationError
from ..published.cells import QidInfo
from ..published.links import Links, Region, covers, intersect, lca_depth, link
from ..published.series import PublishedSeries
from .information_loss import encode_distinct

__all__ = ["LinkageRisk", "linkage_risk"]

_CHUNK = 512
#: most targets x records entries per chunk of the posterior version (memory bound).
_CELLS = 2_000_000


@dataclass(frozen=True)
class LinkageRisk:
    """RR and AR_rev of one release.

    Attributes:
        rr, ar_rev, reidentified: The attacker's measures (posterior ones for the
            likelihood-weighted attacker, see the module docstring).
        attacker: ``"likelihood-weighted"`` or ``"hard-exclusion"``.
        rr_hard, ar_rev_hard, reidentified_hard: The hard-exclusion attacker's (equal to the
            above when ``attacker`` is ``"hard-exclusion"``).
    """

    period: str
    records: int
    rr: float
    ar_rev: float
    reidentified: int
    attacks: str
    attacker: str
    rr_hard: float
    ar_rev_hard: float
    reidentified_hard: int

    def to_dict(self) -> dict:
        return {"period": self.period, "records": self.records, "attacker": self.attacker,
                "rr": round(self.rr, 6), "ar_rev": round(self.ar_rev, 6),
                "reidentified": self.reidentified, "rr_hard": round(self.rr_hard, 6),
                "ar_rev_hard": round(self.ar_rev_hard, 6),
                "reidentified_hard": self.reidentified_hard,
                "attacks": self.attacks}


def _original_region(original: pd.DataFrame, cases: np.ndarray, series: PublishedSeries,
                     ) -> tuple[Region, dict[str, np.ndarray]]:
    """The original QID values of each released case, and which of them are known."""
    ids = pd.Index(original["case_id"].astype(str))
    # hashed, not np.setdiff1d: that sorts object arrays element by element (seconds at 100k)
    released = pd.Index(cases)
    # one row per case (the rule): the positions the Index's hash table (built to tell it is
    # unique) gives also tell the absent cases, without a second table for an isin (issue 43)
    at = ids.get_indexer(released) if ids.is_unique else None
    absent = at < 0 if at is not None else ~released.isin(ids)
    if absent.any():
        missing = sorted(set(cases[absent].tolist()))
        raise ValidationError(f"The release holds {len(missing)} case(s) absent from the original "
                              f"records (e.g. {missing[0]!r}); pass the same period's records.")
    if at is not None:
        # each QID column taken by position, the rows .loc picks, without reindexing a copy
        # of every column of the records (issue 43)
        positions = at

        def column(name: str) -> pd.Series:
            return original[name].take(positions)
    else:
        frame = original.set_axis(ids).loc[cases]

        def column(name: str) -> pd.Series:
            return frame[name]
    cat, lo, hi, known = {}, {}, {}, {}
    for q in series.qids:
        if q.name not in original.columns:
            raise SchemaError(f"The original records lack the QID column {q.name!r}.")
        col = column(q.name)
        if q.kind == "categorical":
            labels = col.astype(object).where(col.notna(), "").astype(str).to_numpy()
            ok = labels != ""
            tax = q.hierarchy
            codes = np.full(len(labels), tax.code_of[tax.root], dtype=np.int64)
            codes[ok] = encode_distinct(tax, labels[ok])
            cat[q.name], known[q.name] = codes, ok
        else:
            values = col.array
            if isinstance(values, pd.arrays.IntervalArray):
                a, b = np.asarray(values.left, float), np.asarray(values.right, float)
            else:
                a = b = pd.to_numeric(col, errors="coerce").to_numpy(float)
            ok = np.isfinite(a) & np.isfinite(b)
            lo[q.name], hi[q.name], known[q.name] = a, b, ok
    return Region(cat, lo, hi), known


def _distance(view_region: Region, target: Region, known: Mapping[str, np.ndarray],
              qids: tuple[QidInfo, ...], spans: Mapping[str, float]) -> np.ndarray:
    """Mean normalized distance between targets (rows) and published records (columns)."""
    total = None
    for q in qids:
        kn = known[q.name][:, None]
        if q.kind == "categorical":
            tax = q.hierarchy
            g, s = view_region.cat[q.name][None, :], target.cat[q.name][:, None]
            inside = tax.covers_codes(g, s)
            depth = tax.depth_array
            w = lca_depth(tax, g, s)
            d = (depth[g] + depth[s] - 2 * w) / max(2 * tax.height, 1)
            d = np.where(inside | ~kn, 0.0, d)
        else:
            lo, hi = view_region.lo[q.name][None, :], view_region.hi[q.name][None, :]
            a, b = target.lo[q.name][:, None], target.hi[q.name][:, None]
            gap = np.maximum(np.maximum(lo - b, a - hi), 0.0)
            d = np.where(kn, np.minimum(gap / spans[q.name], 1.0), 0.0)
        total = d if total is None else total + d
    # no QID: no distance (broadcasts, as links.covers does for regions)
    return np.zeros(()) if total is None else total / len(qids)


def linkage_risk(series: PublishedSeries, period: str, original: pd.DataFrame, *,
                 md: bool = False, background: BackgroundKnowledge | None = None,
                 lifespan: int | None = None, views: dict | None = None,
                 attacker: LikelihoodAttacker | None = None) -> LinkageRisk:
    """RR and AR_rev of the release of ``period`` (see the module docstring).

    Args:
        series: The published series (linking uses every release unless ``lifespan``).
        period: The release to measure.
        original: The period's original super records (``case_id`` and the QID columns;
            numeric QIDs as numbers or a closed IntervalArray).
        md: Add 002's MD-attack (needs the next period's release in the series).
        background: Medical background knowledge (000 §E).
        lifespan: Link only releases at most this many periods apart.
        views: A cache of parsed releases of ``series`` (see :func:`medanon.published.links.link`).
        attacker: A :class:`~medanon.attacks.likelihood.LikelihoodAttacker` of ``series`` with
            the same ``lifespan`` to reuse (built here otherwise).
    """
    return _linkage_risk(series, period, original, md=md, background=background,
                         lifespan=lifespan, views=views, attacker=attacker, indexed=True)


def _reference_linkage_risk(series: PublishedSeries, period: str, original: pd.DataFrame, *,
                            md: bool = False, background: BackgroundKnowledge | None = None,
                            lifespan: int | None = None) -> LinkageRisk:
    """:func:`linkage_risk` computed the straightforward way: every target against every class
    of records (distances included). Quadratic; the tests hold the index to it."""
    return _linkage_risk(series, period, original, md=md, background=background,
                         lifespan=lifespan, views=None, attacker=None, indexed=False)


def _linkage_risk(series: PublishedSeries, period: str, original: pd.DataFrame, *, md: bool,
                  background: BackgroundKnowledge | None, lifespan: int | None,
                  views: dict | None, attacker: LikelihoodAttacker | None,
                  indexed: bool) -> LinkageRisk:
    label = series.label(period)
    if attacker is None:
        attacker = LikelihoodAttacker(series, lifespan=lifespan, views=views)
    links = link(attacker.hard, label, lifespan=lifespan, views=attacker.hard_views)
    view, qids = links.view, series.qids
    m = view.n
    attacks = "B/F/L" + ("/MD" if md and links.next_known else "") + ("+BK" if background else "")
    if m == 0:
        return LinkageRisk(label, 0, 0.0, 0.0, 0, attacks, attacker.attacker(label), 0.0, 0.0, 0)
    target, known = _original_region(original, view.case, series)
    implied = background.implied_regions(view, qids) if background is not None else None
    use_md = md and links.next_known
    if attacker.applies(label):
        return _posterior_risk(attacker, label, links, target, known, implied, use_md, attacks,
                               indexed=indexed)
    hard = _HardLinkage(links, target, known, implied, use_md, qids)
    pr, ar = hard.measures(indexed=indexed)
    rr, ar_rev, hits = float(pr.mean()), float(ar.mean()), int((pr == 1.0).sum())
    return LinkageRisk(label, m, rr, ar_rev, hits, attacks, HARD, rr, ar_rev, hits)


#: a gap this many times (number of QIDs x span) apart is certainly farther than the 1e-12 tie
#: tolerance of the minimum distance (module docstring, "Index").
_NEAR = 4e-12
#: sentinel of a categorical QID the target's value leaves unknown (matches every record).
_ANY = -2


class _Buckets:
    """Records bucketed by their effective categorical cells and link flags.

    A record's *effective region* is its published region ∩ earlier ∩ later ∩ implied: the
    record stays a candidate of a target (hard exclusions) only if that region covers the
    target on the QIDs it knows and the L- and MD-attacks spare it. A target matches the
    buckets whose cells are ancestors-or-self of its categorical values (any cell where its
    value is unknown) and whose flags its own flags allow: a superset of its candidates, exact
    on the categorical QIDs.
    """

    def __init__(self, links: Links, implied: Region | None, use_md: bool,
                 qids: tuple[QidInfo, ...]):
        self.cat_q = [q for q in qids if q.kind == "categorical"]
        region = intersect(intersect(links.view.region, links.earlier_region, qids),
                           links.later_region, qids)
        self.region = intersect(region, implied, qids) if implied is not None else region
        self.keys, self.key = _rows(np.column_stack(
            [*(self.region.cat[q.name] for q in self.cat_q), links.old,
             links.in_next & use_md]).astype(np.int64))
        self.order = np.argsort(self.key, kind="stable")
        self.bounds = np.searchsorted(self.key[self.order], np.arange(len(self.keys) + 1))

    def target_columns(self, target: Region, known: Mapping[str, np.ndarray],
                       rows: np.ndarray) -> list[np.ndarray]:
        """The categorical part of the key of targets ``rows``: codes, or any where unknown."""
        return [np.where(known[q.name][rows], target.cat[q.name][rows], _ANY)
                for q in self.cat_q]

    def match(self, t_keys: np.ndarray) -> np.ndarray:
        """Target keys (categorical columns, new, gone-with-MD) x buckets: may hold candidates."""
        c, b_keys = len(self.cat_q), self.keys
        match = np.ones((len(t_keys), len(b_keys)), dtype=bool)
        for i, q in enumerate(self.cat_q):
            t, b = t_keys[:, i][:, None], b_keys[:, i][None, :]
            match &= (t == _ANY) | ((b >= 0) & q.hierarchy.covers_codes(np.maximum(b, 0),
                                                                       np.maximum(t, 0)))
        match &= ~((t_keys[:, c] == 1)[:, None] & (b_keys[:, c] == 1)[None, :])  # L
        match &= ~((t_keys[:, c + 1] == 1)[:, None] & (b_keys[:, c + 1] == 1)[None, :])  # MD
        return match

    def records(self, buckets: np.ndarray) -> np.ndarray:
        """The records of ``buckets``, in increasing order."""
        return np.sort(self.order[_ranges(self.bounds[buckets], self.bounds[buckets + 1])])


class _HardLinkage:
    """G of every record's target for the hard-exclusion attacker, and Pr and Ar of each record.

    Targets with the same values and truth flags form one target class; G depends only on the
    class. :meth:`_scan` is the straightforward computation (each target class against every
    class of records, distances included); :meth:`_indexed` gets the same G from an index
    wherever it can prove G is the set of covering records no attack excludes (module
    docstring, "Index"), and leaves the other target classes to :meth:`_scan`.
    """

    def __init__(self, links: Links, target: Region, known: Mapping[str, np.ndarray],
                 implied: Region | None, use_md: bool, qids: tuple[QidInfo, ...]):
        self.links, self.target, self.known = links, target, known
        self.implied, self.use_md, self.qids = implied, use_md, qids
        self.view = view = links.view
        self.m = view.n
        self.spans = {}
        for q in qids:
            if q.kind == "numeric":
                finite = np.concatenate([target.lo[q.name][known[q.name]],
                                         target.hi[q.name][known[q.name]]])
                span = float(finite.max() - finite.min()) if finite.size else 0.0
                self.spans[q.name] = span if span > 0 else 1.0
        self.new = ~links.old  # the target's own case: first appearance in this release?
        self.gone = ~links.in_next
        tgt_cols = _columns(target) + [known[q.name] for q in qids] + [self.new,
                                                                       self.gone & use_md]
        self.tgt_class, self.tgt_rep = _classes(np.column_stack([np.asarray(c, dtype=np.float64)
                                                                 for c in tgt_cols]))
        self.n_terms = np.bincount(view.term_row, minlength=self.m).astype(np.float64)

    def measures(self, *, indexed: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Pr(r') and Ar(r') of every record (module docstring)."""
        n_t = len(self.tgt_rep)
        size = np.zeros(n_t)
        distinct = np.zeros(n_t, dtype=np.int64)
        occurrences = np.zeros(n_t)
        hit = np.zeros(self.m, dtype=bool)
        done = (self._indexed(size, distinct, occurrences, hit) if indexed
                else np.zeros(n_t, dtype=bool))
        rest = np.flatnonzero(~done)
        if rest.size:
            self._scan(rest, size, distinct, occurrences, hit)
        with np.errstate(divide="ignore", invalid="ignore"):
            pr_t = np.where(size > 0, 1.0 / size, 0.0)
            ar_t = np.where(distinct > 0, occurrences / (size * distinct), pr_t)
        pr = np.where(hit, pr_t[self.tgt_class], 0.0)
        ar = np.where(hit, ar_t[self.tgt_class], 0.0)
        return pr, ar

    @cached_property
    def _by_class(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.tgt_class, kind="stable")
        return order, np.searchsorted(self.tgt_class[order], np.arange(len(self.tgt_rep) + 1))

    def _members(self, classes: np.ndarray) -> np.ndarray:
        """The records whose target is in one of ``classes``."""
        order, bounds = self._by_class
        return order[_ranges(bounds[classes], bounds[classes + 1])]

    # --------------------------------------------------------------------- all pairs
    def _scan(self, classes: np.ndarray, size: np.ndarray, distinct: np.ndarray,
              occurrences: np.ndarray, hit: np.ndarray) -> None:
        """G of the target ``classes`` against every class of records, by minimum distance."""
        links, view, qids, target, known = self.links, self.view, self.qids, self.target, self.known
        implied, use_md = self.implied, self.use_md
        # Records that look the same to the adversary (published, earlier, later and implied
        # regions, link flags) form one class: the work is target classes x record classes.
        parts = [_columns(view.region), _columns(links.earlier_region),
                 _columns(links.later_region), [links.old, links.later, links.in_next & use_md]]
        if implied is not None:
            parts.append(_columns(implied))
        rec_class, rep = _classes(np.column_stack([np.asarray(c, dtype=np.float64)
                                                   for part in parts for c in part]))
        n_class = len(rep)
        count = np.bincount(rec_class, minlength=n_class).astype(np.float64)
        occurrences_of = np.bincount(rec_class, weights=self.n_terms, minlength=n_class)
        width = max(len(view.term_names), 1)
        incidence = sparse.csr_matrix((np.ones(len(view.term_row)),
                                       (rec_class[view.term_row], view.term_code)),
                                      shape=(n_class, width))
        regions = (view.region.take(rep), links.earlier_region.take(rep),
                   links.later_region.take(rep), implied.take(rep) if implied is not None else None)
        old_c, later_c, next_c = links.old[rep], links.later[rep], links.in_next[rep]
        step = max(1, min(_CHUNK, _CELLS // max(n_class, 1)))
        for start in range(0, len(classes), step):
            chunk = classes[start:start + step]
            reps = self.tgt_rep[chunk]
            tgt = target.take(reps)
            kn = {k: v[reps] for k, v in known.items()}
            excluded = old_c[None, :] & ~_known_covers(regions[1], tgt, kn, qids)  # B
            excluded |= later_c[None, :] & ~_known_covers(regions[2], tgt, kn, qids)  # F
            excluded |= self.new[reps][:, None] & old_c[None, :]  # L
            if use_md:
                excluded |= self.gone[reps][:, None] & next_c[None, :]  # MD
            if regions[3] is not None:
                excluded |= ~_known_covers(regions[3], tgt, kn, qids)  # background knowledge
            dist = _distance(regions[0], tgt, kn, qids, self.spans)
            dist[excluded] = np.inf
            best = dist.min(axis=1, keepdims=True)
            in_g = np.isfinite(best) & (dist <= best + 1e-12)
            g = sparse.csr_matrix(in_g.astype(np.float64))
            size[chunk] = g @ count
            distinct[chunk] = (g @ incidence > 0).sum(axis=1).A.ravel()
            occurrences[chunk] = g @ occurrences_of
            local = np.full(len(self.tgt_rep), -1)
            local[chunk] = np.arange(len(chunk))
            members = self._members(chunk)
            hit[members] = in_g[local[self.tgt_class[members]], rec_class[members]]

    # ------------------------------------------------------------------------- index
    def _indexed(self, size: np.ndarray, distinct: np.ndarray, occurrences: np.ndarray,
                 hit: np.ndarray) -> np.ndarray:
        """G from the index for every target class it can settle; returns which ones it did.

        A record stays in G(t) exactly when its *effective region* (published ∩ earlier ∩
        later ∩ implied) covers t on the QIDs t knows and the L- and MD-attacks spare it.
        Records are bucketed by their effective categorical cells and link flags; a target
        class matches the buckets whose cells are ancestors of its values (any cell where its
        value is unknown); on the one numeric QID it knows (its sweep axis), the records of
        those buckets covering its value are counted from sorted interval endpoints, and the
        distinct terms from the union of each term's intervals.
        """
        links, view, qids, target, known = self.links, self.view, self.qids, self.target, self.known
        rep, n_t = self.tgt_rep, len(self.tgt_rep)
        cat_q = [q for q in qids if q.kind == "categorical"]
        num_q = [q for q in qids if q.kind == "numeric"]
        done = np.ones(n_t, dtype=bool)
        # A categorical cell that misses the target is at least 1/(2·height) away on that QID:
        # far beyond the tie tolerance for any real hierarchy (else the scan decides).
        if any(1.0 / max(2 * q.hierarchy.height, 1) <= _NEAR * len(qids) for q in cat_q):
            return np.zeros(n_t, dtype=bool)
        index = _Buckets(links, self.implied, self.use_md, qids)
        region = index.region

        # the target side: at most one known numeric QID, a point, with no published endpoint
        # within the tie tolerance outside it (a near miss would tie at distance ~0)
        sweep = np.full(n_t, -1, dtype=np.int64)
        point = np.zeros(n_t)
        n_known = np.zeros(n_t, dtype=np.int64)
        for i, q in enumerate(num_q):
            kn = known[q.name][rep]
            a = np.where(kn, target.lo[q.name][rep], 0.0)
            b = np.where(kn, target.hi[q.name][rep], 0.0)
            n_known += kn
            done &= a == b
            sweep[kn] = i
            point[kn] = a[kn]
            tol = _NEAR * len(qids) * self.spans[q.name]
            lows, highs = np.sort(view.region.lo[q.name]), np.sort(view.region.hi[q.name])
            near = ((np.searchsorted(highs, a, "left") > np.searchsorted(highs, a - tol, "left"))
                    | (np.searchsorted(lows, b + tol, "right") > np.searchsorted(lows, b, "right")))
            done &= ~(kn & near)
        done &= n_known <= 1

        t_keys, t_key = _rows(np.column_stack(
            [*index.target_columns(target, known, rep), self.new[rep],
             self.gone[rep] & self.use_md, sweep]).astype(np.int64))
        c = len(cat_q)
        match = index.match(t_keys[:, :c + 2])
        n_b, b_key = len(index.keys), index.key
        width = max(len(view.term_names), 1)
        # targets whose value on every QID is unknown to the sweep: whole buckets
        b_count = np.bincount(b_key, minlength=n_b).astype(np.float64)
        b_occ = np.bincount(b_key, weights=self.n_terms, minlength=n_b)
        presence = sparse.csr_array((np.ones(len(view.term_row)),
                                     (b_key[view.term_row], view.term_code)), shape=(n_b, width))
        whole = sparse.csr_array(match.astype(np.float64))
        k_size, k_occ = np.asarray(whole @ b_count), np.asarray(whole @ b_occ)  # dense vectors
        k_distinct = np.asarray((whole @ presence > 0).sum(axis=1)).ravel()
        flat = t_keys[:, c + 2] < 0
        mine = flat[t_key] & done
        size[mine], occurrences[mine] = k_size[t_key[mine]], k_occ[t_key[mine]]
        distinct[mine] = k_distinct[t_key[mine]]

        # targets with a sweep axis: per key, the matching records covering each point. Each
        # QID's records are sorted once by either end, and its (record, term) pairs once by
        # term then lower end; a key's records keep that order (a mask, no sort per key: the
        # sorts per key were half of RR's time, issue 43)
        sweeps: dict[str, _Sweep] = {}
        for key in np.flatnonzero(~flat):
            classes = np.flatnonzero((t_key == key) & done)
            if not classes.size:
                continue
            q = num_q[t_keys[key, c + 2]]
            if q.name not in sweeps:
                sweeps[q.name] = _Sweep(region.lo[q.name], region.hi[q.name], b_key, self.n_terms,
                                        view.term_row, view.term_code)
            sweep_q = sweeps[q.name]
            # the record classes of the key's buckets; an empty interval covers no point
            inside = match[key][sweep_q.bucket] & sweep_q.valid
            x = point[classes]
            lo_in, hi_in = inside[sweep_q.by_lo], inside[sweep_q.by_hi]
            at_lo = np.searchsorted(sweep_q.lo_sorted[lo_in], x, "right")  # classes with lo <= x
            at_hi = np.searchsorted(sweep_q.hi_sorted[hi_in], x, "left")  # classes with hi < x
            # records and their terms are counted per class: integers, so the sums are exact
            # in any order (and equal the counts of the records one by one)
            size[classes] = (
                np.concatenate([[0.0], np.cumsum(sweep_q.n_by_lo[lo_in])])[at_lo]
                - np.concatenate([[0.0], np.cumsum(sweep_q.n_by_hi[hi_in])])[at_hi])
            occurrences[classes] = (
                np.concatenate([[0.0], np.cumsum(sweep_q.w_by_lo[lo_in])])[at_lo]
                - np.concatenate([[0.0], np.cumsum(sweep_q.w_by_hi[hi_in])])[at_hi])
            held = np.flatnonzero(inside[sweep_q.pair_class])
            seg_lo, seg_hi = _union_by_term_sorted(
                sweep_q.pair_term[held], sweep_q.pair_lo[held], sweep_q.pair_hi[held],
                sweep_q.lo_values, sweep_q.hi_values)
            distinct[classes] = (np.searchsorted(np.sort(seg_lo), x, "right")
                                 - np.searchsorted(np.sort(seg_hi), x, "left"))
        # an empty G leaves the minimum distance to the scan
        done &= size > 0

        # the own record of each settled target: is it in G?
        mine = done[self.tgt_class]
        j = self.tgt_class[mine]
        own = match[t_key[j], b_key[mine]]
        for i, q in enumerate(num_q):
            on = sweep[j] == i
            rows = np.flatnonzero(mine)[on]
            x = point[j[on]]
            own[on] &= (region.lo[q.name][rows] <= x) & (x <= region.hi[q.name][rows])
        hit[mine] = own
        return done


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The indices start..end-1 of every range, concatenated."""
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return offsets + np.arange(total)


def _rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of an integer table and the index of each row among them."""
    if len(table) == 0:
        return np.zeros((0, table.shape[1]), dtype=table.dtype), np.zeros(0, dtype=np.int64)
    keys, _, inverse = _unique_rows(table)
    return keys, inverse


def _unique_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(table, axis=0, return_index=True, return_inverse=True)`` of a 2-D table
    without NaN: the distinct rows in lexicographic order, the first row of each, and each
    row's index among them. One lexsort of the columns, where ``np.unique`` sorts the rows as
    structured records, compared field by field (several times slower; issue 43): the same
    order (stable, first column first, floats compared as numbers: -0.0 equals 0.0), so the
    same three arrays."""
    order = np.lexsort(table.T[::-1])
    ordered = table[order]
    lead = np.ones(len(table), dtype=bool)
    lead[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(table), dtype=np.int64)
    inverse[order] = np.cumsum(lead) - 1
    return ordered[lead], order[lead], inverse


def _union_by_term(term: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per term, the union of its closed intervals as disjoint closed segments (all terms)."""
    if not len(term):
        return np.zeros(0), np.zeros(0)
    order = np.lexsort((lo, term))
    term, lo, hi = term[order], lo[order], hi[order]
    # running maximum of hi within each term: ranks offset by term keep the terms apart
    values, rank = np.unique(hi, return_inverse=True)
    reach = values[np.maximum.accumulate(term * len(values) + rank.ravel()) - term * len(values)]
    first = np.concatenate([[True], term[1:] != term[:-1]])
    start = first | np.concatenate([[True], lo[1:] > reach[:-1]])
    starts = np.flatnonzero(start)
    ends = np.concatenate([starts[1:], [len(term)]]) - 1
    return lo[starts], reach[ends]


def _ranked(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values (ascending) and each value's index among them: its rank."""
    distinct, rank = np.unique(values, return_inverse=True)
    return distinct, rank.ravel()


def _union_by_term_sorted(term: np.ndarray, lo_rank: np.ndarray, hi_rank: np.ndarray,
                          lo_values: np.ndarray, hi_values: np.ndarray,
                          ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_union_by_term` of the intervals [lo_values[lo_rank], hi_values[hi_rank]],
    already ordered by term, then lower end (by ranks, which order and compare as their
    values do: made once per QID for every target key, :class:`_Sweep`, instead of a sort of
    the floats per key; issue 43).

    The order of intervals with the same term and lower end does not change the segments
    (each interval non-empty): only the first of them can start a segment, and a segment's
    end is the greatest upper end in it."""
    if not len(term):
        return np.zeros(0), np.zeros(0)
    term = term.astype(np.int64)
    lo = lo_values[lo_rank]
    # running maximum of hi within each term, on ranks offset by term
    shift = term * len(hi_values)
    reach = hi_values[np.maximum.accumulate(shift + hi_rank) - shift]
    first = np.concatenate([[True], term[1:] != term[:-1]])
    start = first | np.concatenate([[True], lo[1:] > reach[:-1]])
    starts = np.flatnonzero(start)
    ends = np.concatenate([starts[1:], [len(term)]]) - 1
    return lo[starts], reach[ends]


class _Sweep:
    """One numeric QID's records and (record, term) pairs, sorted once for the sweeps of
    every target key (:meth:`_HardLinkage._indexed`).

    A key takes or leaves a bucket whole, so records of one bucket with the same effective
    interval are always counted together: the sweeps run over these classes of records
    (a sixth as many in the 24 × 20k series: a group's records share their region; issue 43), each
    weighted by its number of records and of terms, and over one (class, term) pair per term
    of a class (the same interval twice adds nothing to a union).

    Args:
        lo, hi: Each record's effective interval on the QID.
        bucket: Each record's bucket (:class:`_Buckets`).
        n_terms: Each record's number of terms.
        term_row, term_code: The release's (record, term) pairs.
    """

    def __init__(self, lo: np.ndarray, hi: np.ndarray, bucket: np.ndarray, n_terms: np.ndarray,
                 term_row: np.ndarray, term_code: np.ndarray):
        _, first, record_class = _unique_rows(np.column_stack([bucket.astype(np.float64), lo, hi]))
        n_class = len(first)
        lo, hi, self.bucket = lo[first], hi[first], bucket[first]
        n_records = np.bincount(record_class, minlength=n_class).astype(np.float64)
        n_terms = np.bincount(record_class, weights=n_terms, minlength=n_class)
        self.valid = lo <= hi  # an empty interval (or NaN) covers no point
        self.by_lo, self.by_hi = np.argsort(lo, kind="stable"), np.argsort(hi, kind="stable")
        self.lo_sorted, self.hi_sorted = lo[self.by_lo], hi[self.by_hi]
        self.n_by_lo, self.n_by_hi = n_records[self.by_lo], n_records[self.by_hi]
        self.w_by_lo, self.w_by_hi = n_terms[self.by_lo], n_terms[self.by_hi]
        (self.lo_values, lo_rank), (self.hi_values, hi_rank) = _ranked(lo), _ranked(hi)
        # the pairs by term, then lower end, then class, in one sort of integer keys (a class
        # has one lower end: a class's pairs of one term are neighbours, and one is kept)
        pair_class = record_class[term_row]
        terms = int(term_code.max()) + 1 if len(term_code) else 0
        if terms * len(self.lo_values) * n_class < _SWEEP_KEYS:
            key = np.sort((term_code.astype(np.int64) * len(self.lo_values) + lo_rank[pair_class])
                          * n_class + pair_class)
            kept = np.ones(len(key), dtype=bool)
            kept[1:] = key[1:] != key[:-1]
            key = key[kept]
            self.pair_class = key % n_class
            self.pair_term = key // n_class // len(self.lo_values)
        else:  # (keys beyond int64: the same order by a lexsort of the three)
            order = np.lexsort((pair_class, lo_rank[pair_class], term_code))
            pair_class, term = pair_class[order], term_code[order].astype(np.int64)
            kept = np.ones(len(order), dtype=bool)
            kept[1:] = (pair_class[1:] != pair_class[:-1]) | (term[1:] != term[:-1])
            self.pair_class, self.pair_term = pair_class[kept], term[kept]
        self.pair_lo, self.pair_hi = lo_rank[self.pair_class], hi_rank[self.pair_class]


#: the sweep's (term, lower end, class) pairs are sorted as one int64 key below this many keys
_SWEEP_KEYS = 2**63


def _known_covers(region: Region, tgt: Region, kn: Mapping[str, np.ndarray],
                  qids: tuple[QidInfo, ...]) -> np.ndarray:
    """Targets (rows) x records (columns): whether the record's region covers each target's
    value, on the QIDs the target's value is known."""
    ok = None
    for q in qids:
        part = covers(_one(region, q), _one(tgt, q, column=True), (q,))
        part = part | ~kn[q.name][:, None]
        ok = part if ok is None else ok & part
    # no QID known: every region covers every target (broadcasts, as links.covers does)
    return np.asarray(True) if ok is None else ok


def _posterior_risk(attacker: LikelihoodAttacker, label: str, links: Links, target: Region,
                    known: Mapping[str, np.ndarray], implied: Region | None, use_md: bool,
                    attacks: str, *, indexed: bool = True) -> LinkageRisk:
    """RR and AR_rev of the likelihood-weighted attacker (and of the hard one), every record of
    the release being a target with its original values (module docstring).

    The posterior of a target needs every candidate's weight, so the work stays targets x
    candidates. With ``indexed``, the exclusions and the likelihoods (the costly part) are
    computed only on the records of the buckets the target matches (:class:`_Buckets`, a
    superset of its candidates), the other records being no candidate; the posterior and the
    term masses are then taken over the whole release exactly as without the index.
    """
    view, qids = links.view, attacker.series.qids
    m = view.n
    values = TargetValues.from_region(target, qids, known)
    width = max(len(view.term_names), 1)
    incidence = sparse.csr_array((np.ones(len(view.term_row)), (view.term_row, view.term_code)),
                                 shape=(m, width))
    incidence.data[:] = 1.0  # a term in two columns of a record counts once
    occurrences_of = np.asarray((incidence > 0).sum(axis=1)).ravel().astype(np.float64)
    new, gone = ~links.old, ~links.in_next
    pr, ar = np.zeros(m), np.zeros(m)
    pr_hard, ar_hard = np.zeros(m), np.zeros(m)
    step = max(1, min(_CHUNK, _CELLS // m))
    chunks: list[tuple[np.ndarray, np.ndarray | None]] = []
    if indexed:
        index = _Buckets(links, implied, use_md, qids)
        t_keys, t_key = _rows(np.column_stack(
            [*index.target_columns(target, known, np.arange(m)), new,
             gone & use_md]).astype(np.int64))
        match = index.match(t_keys)
        by_key = np.argsort(t_key, kind="stable")
        k_bounds = np.searchsorted(t_key[by_key], np.arange(len(t_keys) + 1))
        for key in range(len(t_keys)):
            members = by_key[k_bounds[key]:k_bounds[key + 1]]
            matched = index.records(np.flatnonzero(match[key]))
            chunks += [(members[i:i + step], matched) for i in range(0, len(members), step)]
    else:
        chunks = [(np.arange(i, min(i + step, m)), None) for i in range(0, m, step)]
    for idx, columns in chunks:
        tgt = target.take(idx)
        kn = {k: v[idx] for k, v in known.items()}
        cols = np.arange(m) if columns is None else columns
        old_c, later_c, next_c = links.old[cols], links.later[cols], links.in_next[cols]
        excluded = old_c[None, :] & ~_known_covers(_take(links.earlier_region, columns), tgt, kn, qids)  # B
        excluded |= later_c[None, :] & ~_known_covers(_take(links.later_region, columns), tgt, kn, qids)  # F
        excluded |= new[idx][:, None] & old_c[None, :]  # L
        if use_md:
            excluded |= gone[idx][:, None] & next_c[None, :]  # MD
        if implied is not None:
            excluded |= ~_known_covers(_take(implied, columns), tgt, kn, qids)  # background knowledge
        log_w = attacker.log_weights(label, values.take(idx), columns)
        candidate = (~excluded & _known_covers(_take(view.region, columns), tgt, kn, qids)
                     & ~np.isneginf(log_w))
        if columns is not None:  # the records outside the matched buckets are no candidates
            log_w, candidate = _widen(log_w, columns, m, -np.inf), _widen(candidate, columns,
                                                                          m, False)
        pi = posterior(log_w, candidate)
        local = np.arange(len(idx))
        own = pi[local, idx]
        size = candidate.sum(axis=1).astype(np.float64)
        mass = np.asarray((incidence.T @ pi.T).T)  # P_π(s) per target and term
        held = np.asarray((incidence.T @ candidate.T.astype(np.float64)).T) > 0  # s ∈ S_K
        distinct = held.sum(axis=1)
        top = np.where(held, np.maximum(mass, own[:, None]), 0.0).sum(axis=1)
        pr[idx] = own
        ar[idx] = np.where(distinct > 0, top / np.maximum(distinct, 1), own)
        # the hard-exclusion attacker: π uniform on K(r)
        inside = candidate[local, idx]
        uniform = np.where(inside & (size > 0), 1.0 / np.maximum(size, 1.0), 0.0)
        occ = candidate.astype(np.float64) @ occurrences_of
        ar_u = np.where(distinct > 0, occ / (np.maximum(size, 1.0) * np.maximum(distinct, 1)),
                        uniform)
        pr_hard[idx] = uniform
        ar_hard[idx] = np.where(inside, ar_u, 0.0)
    return LinkageRisk(label, m, float(pr.mean()), float(ar.mean()), int((pr > 0.5).sum()),
                       attacks, attacker.attacker(label), float(pr_hard.mean()),
                       float(ar_hard.mean()), int((pr_hard == 1.0).sum()))


def _take(region: Region, columns: np.ndarray | None) -> Region:
    return region if columns is None else region.take(columns)


def _widen(sub: np.ndarray, columns: np.ndarray, m: int, fill) -> np.ndarray:
    """``sub`` (rows x ``columns``) as rows x ``m``, ``fill`` in the other columns."""
    out = np.full((len(sub), m), fill, dtype=sub.dtype)
    out[:, columns] = sub
    return out


def _columns(region: Region) -> list[np.ndarray]:
    return [*region.cat.values(), *region.lo.values(), *region.hi.values()]


def _classes(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class of each row of ``table`` (identical rows share one) and a representative row each:
    ``np.unique(table, axis=0)``'s inverse and first rows (:func:`_unique_rows`). With NaN (an
    unknown original value) too: both sort NaN last, and a row holding NaN equals no other row
    (numpy compares the rows field by field), so it is a class of its own in both; np.unique
    sorted such tables as structured records, a third of the target side's cost (issue 43)."""
    if not len(table):
        _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
        return inverse.ravel(), first
    _, first, inverse = _unique_rows(table)
    return inverse, first


def _one(region: Region, q, *, column: bool = False) -> Region:
    """The part of ``region`` for one QID, as a row (records) or a column (targets)."""
    shape = (slice(None), None) if column else (None, slice(None))
    if q.kind == "categorical":
        return Region({q.name: region.cat[q.name][shape]}, {}, {})
    return Region({}, {q.name: region.lo[q.name][shape]}, {q.name: region.hi[q.name][shape]})
