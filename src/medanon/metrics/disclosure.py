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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from ..attacks.background import BackgroundKnowledge
from ..attacks.likelihood import HARD, LikelihoodAttacker, TargetValues, posterior
from ..errors import SchemaError, ValidationError
from ..published.links import Links, Region, covers, lca_depth, link
from ..published.series import PublishedSeries

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
    attacker: str = HARD
    rr_hard: float | None = None
    ar_rev_hard: float | None = None
    reidentified_hard: int | None = None

    def to_dict(self) -> dict:
        def r6(x: float | None) -> float | None:
            return None if x is None else round(x, 6)

        return {"period": self.period, "records": self.records, "attacker": self.attacker,
                "rr": round(self.rr, 6), "ar_rev": round(self.ar_rev, 6),
                "reidentified": self.reidentified, "rr_hard": r6(self.rr_hard),
                "ar_rev_hard": r6(self.ar_rev_hard), "reidentified_hard": self.reidentified_hard,
                "attacks": self.attacks}


def _original_region(original: pd.DataFrame, cases: np.ndarray, series: PublishedSeries,
                     ) -> tuple[Region, dict[str, np.ndarray]]:
    """The original QID values of each released case, and which of them are known."""
    frame = original.assign(_case=original["case_id"].astype(str)).set_index("_case")
    missing = np.setdiff1d(cases, frame.index.to_numpy(dtype=object))
    if missing.size:
        raise ValidationError(f"The release holds {missing.size} case(s) absent from the original "
                              f"records (e.g. {missing[0]!r}); pass the same period's records.")
    frame = frame.loc[cases]
    cat, lo, hi, known = {}, {}, {}, {}
    for q in series.qids:
        if q.name not in frame.columns:
            raise SchemaError(f"The original records lack the QID column {q.name!r}.")
        col = frame[q.name]
        if q.kind == "categorical":
            labels = col.astype(object).where(col.notna(), "").astype(str).to_numpy()
            ok = labels != ""
            codes = np.full(len(labels), q.taxonomy.code_of[q.taxonomy.root], dtype=np.int64)
            codes[ok] = q.taxonomy.encode(labels[ok])
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


def _distance(view_region: Region, target: Region, known: Mapping[str, np.ndarray], series,
              spans: Mapping[str, float]) -> np.ndarray:
    """Mean normalized distance between targets (rows) and published records (columns)."""
    total = None
    for q in series.qids:
        kn = known[q.name][:, None]
        if q.kind == "categorical":
            tax = q.taxonomy
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
    return total / len(series.qids)


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
        return _posterior_risk(attacker, label, links, target, known, implied, use_md, attacks)
    spans = {}
    for q in qids:
        if q.kind == "numeric":
            finite = np.concatenate([target.lo[q.name][known[q.name]],
                                     target.hi[q.name][known[q.name]]])
            span = float(finite.max() - finite.min()) if finite.size else 0.0
            spans[q.name] = span if span > 0 else 1.0

    # Records that look the same to the adversary (published, earlier, later and implied
    # regions, link flags) form one class; targets with the same values and truth flags are one
    # target. G depends only on (target, classes), so the work is targets x classes.
    parts = [_columns(view.region), _columns(links.earlier_region), _columns(links.later_region),
             [links.old, links.later, links.in_next & use_md]]
    if implied is not None:
        parts.append(_columns(implied))
    rec_class, rep = _classes(np.column_stack([np.asarray(c, dtype=np.float64)
                                               for part in parts for c in part]))
    n_class = len(rep)
    count = np.bincount(rec_class, minlength=n_class).astype(np.float64)
    n_terms = np.bincount(view.term_row, minlength=m).astype(np.float64)
    occurrences_of = np.bincount(rec_class, weights=n_terms, minlength=n_class)
    width = max(len(view.term_names), 1)
    incidence = sparse.csr_matrix((np.ones(len(view.term_row)),
                                   (rec_class[view.term_row], view.term_code)),
                                  shape=(n_class, width))
    new = ~links.old  # the target's own case: first appearance in this release?
    gone = ~links.in_next
    tgt_cols = _columns(target) + [known[q.name] for q in qids] + [new, gone & use_md]
    tgt_class, tgt_rep = _classes(np.column_stack([np.asarray(c, dtype=np.float64)
                                                   for c in tgt_cols]))
    regions = (view.region.take(rep), links.earlier_region.take(rep),
               links.later_region.take(rep), implied.take(rep) if implied is not None else None)
    old_c, later_c, next_c = links.old[rep], links.later[rep], links.in_next[rep]
    pr = np.zeros(m)
    ar = np.zeros(m)
    order = np.argsort(tgt_class, kind="stable")
    bounds = np.searchsorted(tgt_class[order], np.arange(0, len(tgt_rep) + _CHUNK, _CHUNK))

    def known_covers(region: Region, tgt: Region, kn) -> np.ndarray:
        return _known_covers(region, tgt, kn, qids)

    for chunk, start in enumerate(range(0, len(tgt_rep), _CHUNK)):
        reps = tgt_rep[start:start + _CHUNK]
        tgt = target.take(reps)
        kn = {k: v[reps] for k, v in known.items()}
        excluded = old_c[None, :] & ~known_covers(regions[1], tgt, kn)  # B
        excluded |= later_c[None, :] & ~known_covers(regions[2], tgt, kn)  # F
        excluded |= new[reps][:, None] & old_c[None, :]  # L
        if use_md:
            excluded |= gone[reps][:, None] & next_c[None, :]  # MD
        if regions[3] is not None:
            excluded |= ~known_covers(regions[3], tgt, kn)  # background knowledge
        dist = _distance(regions[0], tgt, kn, series, spans)
        dist[excluded] = np.inf
        best = dist.min(axis=1, keepdims=True)
        in_g = np.isfinite(best) & (dist <= best + 1e-12)
        g = sparse.csr_matrix(in_g.astype(np.float64))
        size = g @ count
        distinct = (g @ incidence > 0).sum(axis=1).A.ravel()
        occurrences = g @ occurrences_of
        members = order[bounds[chunk]:bounds[chunk + 1]]  # records whose target is in the chunk
        local = tgt_class[members] - start
        hit = in_g[local, rec_class[members]]
        with np.errstate(divide="ignore", invalid="ignore"):
            pr_t = np.where(size > 0, 1.0 / size, 0.0)
            ar_t = np.where(distinct > 0, occurrences / (size * distinct), pr_t)
        pr[members] = np.where(hit, pr_t[local], 0.0)
        ar[members] = np.where(hit, ar_t[local], 0.0)
    rr, ar_rev, hits = float(pr.mean()), float(ar.mean()), int((pr == 1.0).sum())
    return LinkageRisk(label, m, rr, ar_rev, hits, attacks, HARD, rr, ar_rev, hits)


def _known_covers(region: Region, tgt: Region, kn: Mapping[str, np.ndarray], qids) -> np.ndarray:
    """Targets (rows) x records (columns): whether the record's region covers each target's
    value, on the QIDs the target's value is known."""
    ok = None
    for q in qids:
        part = covers(_one(region, q), _one(tgt, q, column=True), (q,))
        part = part | ~kn[q.name][:, None]
        ok = part if ok is None else ok & part
    return ok


def _posterior_risk(attacker: LikelihoodAttacker, label: str, links: Links, target: Region,
                    known: Mapping[str, np.ndarray], implied: Region | None, use_md: bool,
                    attacks: str) -> LinkageRisk:
    """RR and AR_rev of the likelihood-weighted attacker (and of the hard one), every record of
    the release being a target with its original values (module docstring)."""
    view, qids = links.view, attacker.series.qids
    m = view.n
    values = TargetValues.from_region(target, qids, known)
    width = max(len(view.term_names), 1)
    incidence = sparse.csr_matrix((np.ones(len(view.term_row)), (view.term_row, view.term_code)),
                                  shape=(m, width))
    incidence.data[:] = 1.0  # a term in two columns of a record counts once
    occurrences_of = np.asarray((incidence > 0).sum(axis=1)).ravel().astype(np.float64)
    new, gone = ~links.old, ~links.in_next
    pr, ar = np.zeros(m), np.zeros(m)
    pr_hard, ar_hard = np.zeros(m), np.zeros(m)
    step = max(1, min(_CHUNK, _CELLS // m))
    for start in range(0, m, step):
        idx = np.arange(start, min(start + step, m))
        tgt = target.take(idx)
        kn = {k: v[idx] for k, v in known.items()}
        excluded = links.old[None, :] & ~_known_covers(links.earlier_region, tgt, kn, qids)  # B
        excluded |= links.later[None, :] & ~_known_covers(links.later_region, tgt, kn, qids)  # F
        excluded |= new[idx][:, None] & links.old[None, :]  # L
        if use_md:
            excluded |= gone[idx][:, None] & links.in_next[None, :]  # MD
        if implied is not None:
            excluded |= ~_known_covers(implied, tgt, kn, qids)  # background knowledge
        log_w = attacker.log_weights(label, values.take(idx))
        candidate = ~excluded & _known_covers(view.region, tgt, kn, qids) & ~np.isneginf(log_w)
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


def _columns(region: Region) -> list[np.ndarray]:
    return [*region.cat.values(), *region.lo.values(), *region.hi.values()]


def _classes(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class of each row of ``table`` (identical rows share one) and a representative row each."""
    _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    return inverse.ravel(), first


def _one(region: Region, q, *, column: bool = False) -> Region:
    """The part of ``region`` for one QID, as a row (records) or a column (targets)."""
    shape = (slice(None), None) if column else (None, slice(None))
    if q.kind == "categorical":
        return Region({q.name: region.cat[q.name][shape]}, {}, {})
    return Region({}, {q.name: region.lo[q.name][shape]}, {q.name: region.hi[q.name][shape]})
