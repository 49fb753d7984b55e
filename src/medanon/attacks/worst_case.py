"""The worst case over all targets of every group, per release (001 §"Evaluation", 002 Figs 1-3).

For each group g of a release, the adversary targets someone whose QID values lie in g's
published region and who first appears in this release and stops the medication before the next
one. 001's evaluation protocol (``algorithms.md`` §1.6) removes every record excludable by the
B-, F- or L-attack; 002 adds the MD-attack:

* **B/L**: records whose case appears in an earlier release (the L-attack removes every old
  CaseID, which subsumes the B-attack);
* **F**: records whose case appears in a later release with a value that does not cover the
  whole published region of the record (some target in the region is then excluded; taking the
  union over targets is conservative);
* **MD** (002, applied to releases declaring PPMS(k, θ, α)-bounding, or to all with ``md=True``,
  and only when the series holds the next period's release): records whose case appears in the
  release of the next period;
* **BK** (optional, 000 §E): records with a term implying a QID value the target lacks; the
  target is chosen among the values of g's region to exclude the most records.

On the remaining records g': a *DIG* has |g'| < k (Eq. 10), a *DSG* has some term with
σ_s(g')/|g'| > θ_s (Eq. 11) or has terms and nothing remains (the reported top term and its
confidence are then those of the whole group), and an *SSG*
(002's SS-attack) has a share of ss-records above α in g or in g'. DIR, DSR and SSGR divide
their counts by the number of groups. k, θ and α are taken from each release's manifest unless
given; a measure whose parameter is unknown is reported as None.

This is the *measurement* of the papers' figures. The verify gate uses the stricter independent
checker of :mod:`medanon.models.ppms` (an adversary who may also keep any excludable record);
``dsr_hard`` measures that worst case here, so ``dir_hard`` and ``dsr_hard`` are the numbers
``medanon verify`` prints as DIR and DSR (for the same life span):

    DSG_hard: some term s of g has σ_s(g) / (|g'| + σ_s(g \\ g')) > θ_s, or g' is empty while g
              has terms.

Perturbed QIDs (issue 17). Every exclusion above is hard: links and covers are read on
:func:`medanon.attacks.likelihood.hard_series`, where the QIDs a PPMS-DP release perturbs are
blank. On a strict PPMS-DP release the group's remaining records g' are then weighted by the
likelihood-weighted attacker ((L1)-(L2) of :mod:`medanon.attacks.likelihood`). The worst case
needs targets, and from the published rows alone the adversary's best reading of a record's
true values is its published (maximum-likelihood) values: the targets of g are the records of
g', each with the perturbed values it was published with in this release (QIDs not perturbed
here are left unknown). For each such target t the posterior π(t) over g' gives

    DIG_post: max_t max_r π_r(t) > 1/k        DSG_post: max_t max_s Σ_{r ∋ s} π_r(t) > θ_s

(or g' empty, as for the hard flags). With uninformative weights π is uniform on g' and these
are exactly DIG and DSG of Eqs. 10-11: the likelihood attacker only ever adds what the noise
gives away. ``dir_posterior`` and ``dsr_posterior`` are their ratios; for a strict PPMS-DP
release ``dir``/``dsr`` (the headline numbers, ``attacker`` = ``likelihood-weighted``) are those,
elsewhere the hard ones.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError
from ..models.names import HA_MODEL
from ..models.theta import ThetaTable
from ..published.cells import QidInfo, reading_once
from ..published.links import Region, ReleaseView, covers, link, sharing_links, whole_domain
from ..published.series import PublishedSeries
from .background import BackgroundKnowledge
from .likelihood import HARD, LikelihoodAttacker, TargetValues, posterior
from .ss import MEAN_SD, ss_records, ss_thresholds

__all__ = ["GroupAttack", "ReleaseAttack", "SeriesAttack", "attack_linked", "attack_series"]

_TOL = 1e-12


@dataclass(frozen=True)
class GroupAttack:
    """One group after the attacks.

    ``dig``/``dsg`` are the headline flags (the likelihood-weighted ones on a strict PPMS-DP
    release, the hard ones elsewhere); ``dig_hard``/``dsg_hard`` the gate's worst case;
    ``max_posterior`` and ``top_share_posterior`` the worst π and posterior term share over the
    group's targets (None without likelihood weighting).
    """

    group: str
    size: int
    excluded: Mapping[str, int]
    remaining: int
    top_term: str | None
    top_confidence: float
    ss_share: float | None
    dig: bool | None
    dsg: bool | None
    ssg: bool | None
    dig_hard: bool | None = None
    dsg_hard: bool | None = None
    max_posterior: float | None = None
    top_share_posterior: float | None = None

    @property
    def discloses(self) -> bool:
        """Whether every candidate left (every member, when the attacks leave none) holds one
        term: the adversary learns it for sure, whatever θ declares (θ = 1 included)."""
        return self.top_term is not None and self.top_confidence >= 1.0 - _TOL

    def to_dict(self) -> dict:
        out = {"group": self.group, "size": self.size, "excluded": dict(self.excluded),
               "remaining": self.remaining, "top_term": self.top_term,
               "top_confidence": round(self.top_confidence, 6), "ss_share": self.ss_share,
               "dig": self.dig, "dsg": self.dsg, "ssg": self.ssg, "dig_hard": self.dig_hard,
               "dsg_hard": self.dsg_hard}
        if self.max_posterior is not None:
            out["max_posterior"] = round(self.max_posterior, 6)
            out["top_share_posterior"] = round(self.top_share_posterior or 0.0, 6)
        return out


@dataclass(frozen=True)
class ReleaseAttack:
    """One release after the attacks: per-group outcome and the ratios of 001/002.

    Attributes:
        attacker: ``"likelihood-weighted"`` (strict PPMS-DP release) or ``"hard-exclusion"``.
        dir, dsr: The headline ratios: ``dir_posterior``/``dsr_posterior`` for the
            likelihood-weighted attacker, else the papers' DIR and DSR (Eqs. 10-11).
        dir_hard, dsr_hard: The gate's worst case over hard exclusions (what ``verify`` prints).
        dir_posterior, dsr_posterior: The likelihood-weighted attacker's (None otherwise).
    """

    period: str
    groups: tuple[GroupAttack, ...]
    k: int | None
    alpha: float | None
    md_applied: bool
    dir: float | None
    dsr: float | None
    ssgr: float | None
    reidentified: int
    attacker: str = HARD
    dir_hard: float | None = None
    dsr_hard: float | None = None
    dir_posterior: float | None = None
    dsr_posterior: float | None = None

    @property
    def disclosing_groups(self) -> int:
        """The groups in which every candidate left holds some term (:attr:`GroupAttack.
        discloses`): a disclosure DSR cannot see where that term's θ is 1."""
        return sum(g.discloses for g in self.groups)

    def to_dict(self, *, all_groups: bool = False) -> dict:
        risky = [g for g in self.groups
                 if g.dig or g.dsg or g.ssg or g.dig_hard or g.dsg_hard or g.remaining <= 1
                 or g.discloses]
        shown = self.groups if all_groups else risky
        return {"period": self.period, "groups": len(self.groups), "attacker": self.attacker,
                "k": self.k, "alpha": self.alpha, "md_applied": self.md_applied,
                "attacks": "B/F/L/MD" if self.md_applied else "B/F/L",
                "dir": self.dir, "dsr": self.dsr, "ssgr": self.ssgr,
                "dir_hard": self.dir_hard, "dsr_hard": self.dsr_hard,
                "dir_posterior": self.dir_posterior, "dsr_posterior": self.dsr_posterior,
                "reidentified_groups": self.reidentified,
                "disclosing_groups": self.disclosing_groups,
                "group_details": [g.to_dict() for g in shown]}


@dataclass(frozen=True)
class SeriesAttack:
    releases: tuple[ReleaseAttack, ...]

    def release(self, period: str) -> ReleaseAttack:
        for r in self.releases:
            if r.period == period:
                return r
        raise KeyError(period)

    def to_dict(self, *, all_groups: bool = False) -> dict:
        return {"releases": [r.to_dict(all_groups=all_groups) for r in self.releases]}


def _model(manifest: Mapping) -> tuple[int | None, ThetaTable | None, float | None, dict | None]:
    params = dict(manifest.get("method", {}).get("parameters", {}) or {})
    details = dict(manifest.get("details", {}) or {})
    k = int(params["k"]) if params.get("k") is not None else None
    theta = ThetaTable.from_manifest(details["theta_table"]) if "theta_table" in details else None
    alpha = float(params["alpha"]) if params.get("alpha") is not None else None
    ss = details.get("ss_min_counts")
    return k, theta, alpha, ({str(c): int(v) for c, v in ss.items()} if ss else None)


def _profiles(region: Region, rows: np.ndarray, bk: BackgroundKnowledge, implied: Region,
              qids: tuple[QidInfo, ...]) -> list[Region]:
    """Target profiles inside the hull of the group's region, one per distinguishable value."""
    axes: list[list[tuple[str, int | float]]] = []  # per QID: (name, node code or number)
    for q in qids:
        if q.name not in bk.attributes:
            continue
        if q.kind == "categorical":
            tax = q.hierarchy
            node = tax.lca_codes(region.cat[q.name][rows])
            values = [tax.code_of[v] for v in tax.values]
            # a published node may cover no record value (a leaf that is not one, from
            # another tool): the node itself then stands for the target, as a numeric QID's
            # lower bound does below (else no profile at all, and no group)
            axes.append([(q.name, c) for c in values if tax.covers_codes(node, c)]
                        or [(q.name, node)])
        else:
            low = float(region.lo[q.name][rows].min())
            high = float(region.hi[q.name][rows].max())
            cuts = {low, high, *implied.lo[q.name][rows], *implied.hi[q.name][rows]}
            points = sorted(x for x in cuts if np.isfinite(x) and low <= x <= high)
            points += [(a + b) / 2 for a, b in itertools.pairwise(points)]
            points += [x - 1e-9 for x in points] + [x + 1e-9 for x in points]
            axes.append([(q.name, x) for x in points if low <= x <= high] or [(q.name, low)])
    profiles = []
    for combo in itertools.product(*axes):
        cat = {q.name: np.array([0]) for q in qids if q.kind == "categorical"}
        lo = {q.name: np.array([-np.inf]) for q in qids if q.kind == "numeric"}
        hi = {q.name: np.array([np.inf]) for q in qids if q.kind == "numeric"}
        for name, value in combo:
            if name in cat:
                cat[name] = np.array([value])
            else:
                lo[name], hi[name] = np.array([value]), np.array([value])
        profiles.append(Region(cat, lo, hi))
    return profiles


def _plug_in_targets(attacker: LikelihoodAttacker, label: str, rows: np.ndarray) -> TargetValues:
    """The targets whose true values are the perturbed values ``rows`` were published with."""
    own = attacker.view(label)
    model = attacker.models[label]
    values = TargetValues(len(rows))
    for q in attacker.series.qids:
        if q.name not in model.perturbed:
            continue
        if q.kind == "numeric":
            lo, hi = own.region.lo[q.name][rows], own.region.hi[q.name][rows]
            ok = np.isfinite(lo) & (lo == hi)
            values.numeric[q.name] = (np.where(ok, lo, np.nan), np.where(ok, hi, np.nan))
        else:
            values.categorical[q.name] = own.region.cat[q.name][rows].astype(np.int64)
    return values


def _posterior_flags(attacker: LikelihoodAttacker, label: str, kept: np.ndarray,
                     holders: np.ndarray, thresholds: np.ndarray) -> tuple[float, float, bool]:
    """Worst π and worst posterior term share (relative to θ) over the plug-in targets of a
    group: (max π, the share of the term that comes closest to or exceeds its θ, DSG flag)."""
    targets = _plug_in_targets(attacker, label, kept)
    pi = posterior(attacker.log_weights(label, targets, kept))
    worst = float(pi.max()) if pi.size else 0.0
    if holders.shape[1] == 0:
        return worst, 0.0, False
    shares = pi @ holders  # targets x terms: Σ_{r ∋ s} π_r(t)
    excess = shares - thresholds[None, :]
    at = np.unravel_index(np.argmax(excess), excess.shape)
    return worst, float(shares[at]), bool(excess[at] > _TOL)


def attack_series(series: PublishedSeries, *, periods: list[str] | None = None,
                  lifespan: int | None = None, k: int | None = None,
                  theta: ThetaTable | None = None, alpha: float | None = None,
                  ss_rule: str | Mapping[str, int] | None = None,
                  background: BackgroundKnowledge | None = None,
                  md: bool | None = None,
                  views: dict | None = None,
                  attacker: LikelihoodAttacker | None = None) -> SeriesAttack:
    """The worst-case attacks on every group of every release (see the module docstring).

    Args:
        series: The published series.
        periods: The releases to attack (default: all); the others still serve for linking.
        lifespan: Link only releases at most this many periods apart (default: all).
        k, theta, alpha: Override the model read from each manifest.
        ss_rule: ``"mean+sd"`` or ``{column: minimum term count}``; default: the manifest's
            thresholds, else ``mean+sd`` (only used when α is known).
        background: Medical background knowledge (000 §E).
        md: Apply the MD-attack to every release (True), to none (False), or to the releases
            whose manifest declares 002's model (None, the default: 001's protocol otherwise).
        views: A cache of parsed releases of ``series`` (see :func:`medanon.published.links.link`).
        attacker: A :class:`LikelihoodAttacker` of ``series`` with the same ``lifespan`` to
            reuse (built here otherwise).

    Raises:
        InputFormatError: a PPMS-DP manifest lacks a field its model needs.
    """
    return _attack_series(series, periods=periods, lifespan=lifespan, k=k, theta=theta,
                          alpha=alpha, ss_rule=ss_rule, background=background, md=md,
                          views=views, attacker=attacker, vectorized=True)


def attack_linked(labels: Sequence[str], linked_of: Callable[[str], PublishedSeries],
                  **options) -> SeriesAttack:
    """:func:`attack_series` one release at a time, in memory bounded by one release and what it
    links to (issue 30).

    Each release's series is read, and attacked, inside one
    :func:`~medanon.published.cells.reading_once` (as :func:`medanon.metrics.evaluation.
    evaluate_linked` measures it).

    The attacks on a group read its rows and its cases' rows in the other releases, nothing
    else: ``linked_of(label)`` returns a series holding at least those (e.g.
    :meth:`PublishedSeries.linked` of the release's cases), and the result is
    :func:`attack_series` over the whole series (``tests/property/test_incremental_gate.py``
    compares the two).

    Args:
        labels: The releases to attack, in the order reported.
        linked_of: What each release links to.
        options: As for :func:`attack_series` (``periods``, ``views`` and ``attacker`` are
            per release here and cannot be given).
    """
    for name in ("periods", "views", "attacker"):
        if name in options:
            raise ValidationError(f"The {name!r} parameter of attack_linked is set per release; "
                                  f"it cannot be given.")
    out: list[ReleaseAttack] = []
    for label in labels:
        # what reading the release's series parsed and linked (verify's check of it, when
        # ``linked_of`` makes one: StoreSeries.verified_linked_release) serves its attacks,
        # and goes before the next release is read (issue 43)
        with reading_once(), sharing_links():
            out.extend(attack_series(linked_of(label), periods=[label], **options).releases)
    return SeriesAttack(tuple(out))


def _reference_attack_series(series: PublishedSeries, **options) -> SeriesAttack:
    """:func:`attack_series` group by group and record by record (the straightforward loop);
    the tests hold the vectorized groups to it."""
    options.setdefault("attacker", None)
    for name in ("periods", "lifespan", "k", "theta", "alpha", "ss_rule", "background", "md",
                 "views"):
        options.setdefault(name, None)
    return _attack_series(series, vectorized=False, **options)


def _attack_series(series: PublishedSeries, *, periods, lifespan, k, theta, alpha, ss_rule,
                   background, md, views, attacker, vectorized: bool) -> SeriesAttack:
    labels = [series.label(p) for p in periods] if periods else series.periods
    qids = series.qids
    if attacker is None:
        attacker = LikelihoodAttacker(series, lifespan=lifespan, views=views)
    out = []
    for label in labels:
        links = link(attacker.hard, label, lifespan=lifespan, views=attacker.hard_views)
        view = links.view
        manifest = series.manifests.get(label, {})
        m_k, m_theta, m_alpha, m_ss = _model(manifest)
        declared = (manifest.get("method") or {}).get("privacy_model") == HA_MODEL
        use_md = links.next_known and (declared if md is None else md)
        kk = k if k is not None else m_k
        th = theta if theta is not None else m_theta
        al = alpha if alpha is not None else m_alpha
        likelihood = attacker.applies(label)
        masks = {"B/L": links.old,
                 "F": links.forward_excludable(qids),
                 "MD": links.in_next if use_md else np.zeros(view.n, dtype=bool)}
        fixed = masks["B/L"] | masks["F"] | masks["MD"]
        ss = None
        if al is not None:
            rule = ss_rule if ss_rule is not None else (m_ss or MEAN_SD)
            ss = ss_records(view.rows, ss_thresholds(view.rows, series.sensitive, rule))
        if not vectorized:
            groups = _groups_by_profile(attacker, label, view, masks, fixed, kk, th, al, ss,
                                        likelihood, background, qids)
        else:
            groups = _groups_vectorized(attacker, label, view, masks, fixed, kk, th, al, ss,
                                        likelihood)
            if background is not None:
                groups = _with_background(groups, attacker, label, view, masks, fixed, kk, th,
                                          al, ss, likelihood, background, qids)

        out.append(ReleaseAttack(
            label, tuple(groups), kk, al, bool(use_md), _ratio(groups, "dig"),
            _ratio(groups, "dsg"), _ratio(groups, "ssg"),
            sum(1 for g in groups if g.remaining == 1), attacker.attacker(label),
            _ratio(groups, "dig_hard"), _ratio(groups, "dsg_hard"),
            _ratio(groups, "dig") if likelihood else None,
            _ratio(groups, "dsg") if likelihood else None))
    return SeriesAttack(tuple(out))


def _groups_by_profile(attacker: LikelihoodAttacker, label: str, view: ReleaseView,
                       masks: Mapping[str, np.ndarray],
                       fixed: np.ndarray, kk: int | None, th: ThetaTable | None,
                       al: float | None, ss: np.ndarray | None, likelihood: bool,
                       background: BackgroundKnowledge | None, qids: tuple[QidInfo, ...], *,
                       only: np.ndarray | None = None) -> list[GroupAttack]:
    """Every group of one release (or the group codes ``only``), one at a time (with
    background knowledge: every target profile of the group, keeping the one that excludes
    the most)."""
    implied = background.implied_regions(view, qids) if background is not None else None
    terms_of: list[list[int]] = [[] for _ in range(view.n)]
    for r, c in zip(view.term_row.tolist(), view.term_code.tolist(), strict=True):
        terms_of[r].append(c)
    groups = []
    order = np.argsort(view.group, kind="stable")
    bounds = np.flatnonzero(np.diff(np.concatenate([[-1], view.group[order], [-2]])))
    wanted = None if only is None else set(only.tolist())
    for a, b in itertools.pairwise(bounds):
        rows = order[a:b]
        if wanted is not None and int(view.group[rows[0]]) not in wanted:
            continue
        best = None
        # what each target profile excludes by the background knowledge (one profile, which
        # excludes nothing, without it); implied is set exactly when background is
        if background is not None and implied is not None:
            bk_masks = [~covers(implied.take(rows), profile, qids, background.attributes)
                        for profile in _profiles(view.region, rows, background, implied, qids)]
        else:
            bk_masks = [np.zeros(len(rows), dtype=bool)]
        for bk in bk_masks:
            drop = fixed[rows] | bk
            kept = rows[~drop]
            basis = kept if len(kept) else rows
            counts: dict[int, int] = {}
            for r in basis.tolist():
                for c in terms_of[r]:
                    counts[c] = counts.get(c, 0) + 1
            shares = {c: n / len(basis) for c, n in counts.items()}
            top = max(shares, key=lambda c: (shares[c], -c)) if shares else None
            key = (int(drop.sum()), shares[top] if top is not None else 0.0)
            if best is None or key > best[0]:
                best = (key, kept, bk, shares, top, drop)
        assert best is not None  # bk_masks is never empty (_profiles gives at least one)
        _, kept, bk, shares, top, drop = best
        excluded = {name: int(mask[rows].sum()) for name, mask in masks.items()}
        if background is not None:
            excluded["BK"] = int(bk.sum())
        dig = (len(kept) < kk) if kk is not None else None
        dsg = dsg_hard = None
        in_group: dict[int, int] = {}
        for r in rows.tolist():
            for c in terms_of[r]:
                in_group[c] = in_group.get(c, 0) + 1
        if th is not None:
            dsg = (any(s > th.get(str(view.term_names[c])) + _TOL for c, s in shares.items())
                   or (len(kept) == 0 and bool(shares)))
            # the gate's worst case: the adversary may keep the excludable holders of s
            kept_set = set(kept.tolist())
            dsg_hard = len(kept) == 0 and bool(in_group)
            for c, sigma in in_group.items():
                held_out = sum(1 for r in rows.tolist() if r not in kept_set
                               and c in terms_of[r])
                if sigma / (len(kept) + held_out) > th.get(str(view.term_names[c])) + _TOL:
                    dsg_hard = True
        max_post = share_post = None
        dig_post, dsg_post = dig, dsg
        if likelihood:
            if len(kept):
                codes = sorted({c for r in kept.tolist() for c in terms_of[r]})
                holders = np.zeros((len(kept), len(codes)))
                index = {c: i for i, c in enumerate(codes)}
                for i, r in enumerate(kept.tolist()):
                    for c in terms_of[r]:
                        holders[i, index[c]] = 1.0
                limits = np.array([th.get(str(view.term_names[c])) if th is not None else 1.0
                                   for c in codes])
                max_post, share_post, over = _posterior_flags(attacker, label, kept,
                                                              holders, limits)
                dig_post = (max_post > 1.0 / kk + _TOL) if kk is not None else None
                dsg_post = over if th is not None else None
            else:
                max_post, share_post = 1.0, 1.0
                dig_post = True if kk is not None else None
                dsg_post = bool(in_group) if th is not None else None
        share = None
        ssg = None
        if ss is not None:
            assert al is not None  # ss is read only for an alpha (_attack_series)
            share = float(ss[rows].mean())
            kept_share = float(ss[kept].mean()) if len(kept) else share
            ssg = max(share, kept_share) > al + _TOL
        groups.append(GroupAttack(
            group=str(view.group_labels[view.group[rows[0]]]), size=len(rows),
            excluded=excluded, remaining=len(kept),
            top_term=str(view.term_names[top]) if top is not None else None,
            top_confidence=float(shares.get(top, 0.0)) if top is not None else 0.0,
            ss_share=share, dig=dig_post, dsg=dsg_post, ssg=ssg, dig_hard=dig,
            dsg_hard=dsg_hard, max_posterior=max_post, top_share_posterior=share_post))
    return groups


def _with_background(groups: list[GroupAttack], attacker: LikelihoodAttacker, label: str,
                     view: ReleaseView, masks: Mapping[str, np.ndarray], fixed: np.ndarray,
                     kk: int | None, th: ThetaTable | None, al: float | None,
                     ss: np.ndarray | None, likelihood: bool, background: BackgroundKnowledge,
                     qids: tuple[QidInfo, ...]) -> list[GroupAttack]:
    """``groups`` (computed without background knowledge) with it: only a group holding a
    record whose terms imply something can lose a record to it; in the others every target
    profile excludes nothing more, and the first profile, the one kept, gives the group as
    without the knowledge (and BK excludes 0)."""
    implied = background.implied_regions(view, qids)
    whole = whole_domain(view.n, qids)
    informed = np.zeros(view.n, dtype=bool)
    for q in qids:
        if q.kind == "categorical":
            informed |= implied.cat[q.name] != whole.cat[q.name]
        else:
            informed |= ((implied.lo[q.name] != whole.lo[q.name])
                         | (implied.hi[q.name] != whole.hi[q.name]))
    redo = np.unique(view.group[informed])
    again = iter(_groups_by_profile(attacker, label, view, masks, fixed, kk, th, al, ss,
                                    likelihood, background, qids, only=redo))
    redo_set = set(redo.tolist())
    return [next(again) if code in redo_set
            else dataclasses.replace(g, excluded={**g.excluded, "BK": 0})
            for code, g in enumerate(groups)]


def _groups_vectorized(attacker: LikelihoodAttacker, label: str, view: ReleaseView,
                       masks: Mapping[str, np.ndarray],
                       fixed: np.ndarray, kk: int | None, th: ThetaTable | None,
                       al: float | None, ss: np.ndarray | None,
                       likelihood: bool) -> list[GroupAttack]:
    """:func:`_groups_by_profile` without background knowledge, every group at once: counts
    per group and per (group, term) pair instead of a loop over each group's records."""
    n_groups, g = len(view.group_labels), view.group
    if view.n == 0:
        return []
    size = np.bincount(g, minlength=n_groups)
    kept_n = np.bincount(g[~fixed], minlength=n_groups)
    # the records the shares are taken over: those kept, or the whole group when none is
    basis = ~fixed | (kept_n[g] == 0)
    basis_n = np.where(kept_n > 0, kept_n, size)
    excluded = {name: np.bincount(g[mask], minlength=n_groups) for name, mask in masks.items()}
    width = max(len(view.term_names), 1)
    pair_group = g[view.term_row]
    key = pair_group * width + view.term_code

    def per_pair(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        found, count = np.unique(key[mask], return_counts=True)
        return found // width, found % width, count

    b_group, b_term, b_count = per_pair(basis[view.term_row])
    share = b_count / basis_n[b_group]
    # the top term: the largest count, the smallest code among equals. The pairs come sorted
    # by group, then term: each group's first pair at its largest count is its top (what a
    # lexsort by group, count descending and term picked first, at a fifth of its cost)
    starts = np.flatnonzero(np.diff(b_group, prepend=-1))
    runs = np.diff(np.append(starts, len(b_group)))
    at_most = b_count == np.repeat(np.maximum.reduceat(b_count, starts), runs) if len(
        starts) else np.zeros(0, dtype=bool)
    tops_at = np.flatnonzero(at_most)
    first = tops_at[np.flatnonzero(np.diff(b_group[tops_at], prepend=-1))]
    top = np.full(n_groups, -1)
    top_share = np.zeros(n_groups)
    top[b_group[first]], top_share[b_group[first]] = b_term[first], share[first]
    has_terms = np.bincount(pair_group, minlength=n_groups) > 0
    dsg = dsg_hard = None
    if th is not None:
        limit = np.array([th.get(str(t)) for t in view.term_names], dtype=np.float64)
        over = np.bincount(b_group[share > limit[b_term] + _TOL], minlength=n_groups) > 0
        dsg = over | ((kept_n == 0) & has_terms)
        # the gate's worst case: the adversary may keep the excludable holders of s
        s_group, s_term, sigma = per_pair(np.ones(len(key), dtype=bool))
        held = np.zeros(len(sigma), dtype=np.int64)
        x_group, x_term, x_count = per_pair(fixed[view.term_row])
        held[np.searchsorted(s_group * width + s_term, x_group * width + x_term)] = x_count
        worst = sigma / (kept_n[s_group] + held) > limit[s_term] + _TOL
        dsg_hard = (np.bincount(s_group[worst], minlength=n_groups) > 0) | ((kept_n == 0)
                                                                           & has_terms)
    ss_share = kept_share = None
    if ss is not None:
        ss_share = np.bincount(g[ss], minlength=n_groups) / size
        kept_ss = np.bincount(g[ss & ~fixed], minlength=n_groups)
        kept_share = np.divide(kept_ss, kept_n, out=ss_share.copy(), where=kept_n > 0)
    if likelihood:
        by_group = np.argsort(g, kind="stable")
        g_bounds = np.searchsorted(g[by_group], np.arange(n_groups + 1))
        pair_order = np.argsort(view.term_row, kind="stable")
        p_bounds = np.searchsorted(view.term_row[pair_order], np.arange(view.n + 1))
    # each group's numbers as Python scalars, converted once per array, not once per group
    # and field (a 24 x 20k evaluate builds 96k groups; issue 43): the same ints, floats and
    # bools as int(), float() and bool() of each element
    sizes, kept_list, tops, top_shares = (size.tolist(), kept_n.tolist(), top.tolist(),
                                          top_share.tolist())
    # each group's excluded counts as a dict made in C (a comprehension per group was a
    # function call per group)
    names = list(excluded)
    excluded_of = ([dict(zip(names, counts))
                    for counts in zip(*(c.tolist() for c in excluded.values()))]
                   if names else [{} for _ in range(n_groups)])
    dsg_list = dsg.tolist() if dsg is not None else None
    dsg_hard_list = dsg_hard.tolist() if dsg_hard is not None else None
    has_terms_list = has_terms.tolist()
    ss_list = ss_share.tolist() if ss_share is not None else None
    kept_share_list = kept_share.tolist() if kept_share is not None else None
    group_labels, term_names = view.group_labels.tolist(), view.term_names.tolist()
    groups = []
    for code in range(n_groups):
        remaining = kept_list[code]
        dig = (remaining < kk) if kk is not None else None
        d, dh = ((None, None) if dsg_list is None or dsg_hard_list is None  # both set with th
                 else (dsg_list[code], dsg_hard_list[code]))
        max_post = share_post = None
        dig_post, dsg_post = dig, d
        if likelihood:
            rows = by_group[g_bounds[code]:g_bounds[code + 1]]
            kept = rows[~fixed[rows]]
            if len(kept):
                lengths = p_bounds[kept + 1] - p_bounds[kept]
                pairs = pair_order[np.concatenate([np.arange(p_bounds[r], p_bounds[r + 1])
                                                   for r in kept.tolist()])]
                codes, column = np.unique(view.term_code[pairs], return_inverse=True)
                holders = np.zeros((len(kept), len(codes)))
                holders[np.repeat(np.arange(len(kept)), lengths), column.ravel()] = 1.0
                limits = (limit[codes] if th is not None else np.ones(len(codes)))
                max_post, share_post, over_post = _posterior_flags(attacker, label, kept,
                                                                   holders, limits)
                dig_post = (max_post > 1.0 / kk + _TOL) if kk is not None else None
                dsg_post = over_post if th is not None else None
            else:
                max_post, share_post = 1.0, 1.0
                dig_post = True if kk is not None else None
                dsg_post = has_terms_list[code] if th is not None else None
        share = ssg = None
        if ss_list is not None:
            assert kept_share_list is not None and al is not None  # set with ss_share; ss with al
            share = ss_list[code]
            ssg = max(share, kept_share_list[code]) > al + _TOL
        t = tops[code]
        groups.append(_group_attack({
            "group": str(group_labels[code]), "size": sizes[code],
            "excluded": excluded_of[code],
            "remaining": remaining, "top_term": str(term_names[t]) if t >= 0 else None,
            "top_confidence": top_shares[code] if t >= 0 else 0.0,
            "ss_share": share, "dig": dig_post, "dsg": dsg_post, "ssg": ssg, "dig_hard": dig,
            "dsg_hard": dh, "max_posterior": max_post, "top_share_posterior": share_post}))
    return groups


#: the fields of a GroupAttack, each of which :func:`_group_attack` must be given
_GROUP_FIELDS = frozenset(f.name for f in dataclasses.fields(GroupAttack))


def _group_attack(fields: dict[str, object]) -> GroupAttack:
    """``GroupAttack(**fields)``, ``fields`` naming every field: the frozen dataclass's
    ``__init__`` sets each of its 14 fields through ``object.__setattr__``, which for the
    groups of every release (24 x 20k: 86k groups) was a quarter of a second of ``evaluate``;
    the instance's dict is filled at once here, which makes an equal object (issue 43). The
    class has no ``__post_init__`` and no slots (the module asserts it)."""
    made = object.__new__(GroupAttack)
    made.__dict__.update(fields)
    return made


assert not hasattr(GroupAttack, "__post_init__") and not hasattr(GroupAttack, "__slots__")


def _ratio(groups: list[GroupAttack], flag: str) -> float | None:
    """The share of groups whose ``flag`` is set (0 without groups, None where undefined)."""
    values = [getattr(g, flag) for g in groups]
    if not values:
        return 0.0
    if values[0] is None:
        return None
    return sum(values) / len(values)
