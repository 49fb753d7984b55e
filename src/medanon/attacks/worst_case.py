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
checker of :mod:`medanon.models.ppms` (an adversary who may also keep any excludable record).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..models.names import HA_MODEL
from ..models.theta import ThetaTable
from ..release.series import PublishedSeries
from .background import BackgroundKnowledge
from ..release.links import Region, covers, link
from .ss import MEAN_SD, ss_records, ss_thresholds

__all__ = ["GroupAttack", "ReleaseAttack", "SeriesAttack", "attack_series"]

_TOL = 1e-12


@dataclass(frozen=True)
class GroupAttack:
    """One group after the attacks."""

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

    def to_dict(self) -> dict:
        return {"group": self.group, "size": self.size, "excluded": dict(self.excluded),
                "remaining": self.remaining, "top_term": self.top_term,
                "top_confidence": round(self.top_confidence, 6), "ss_share": self.ss_share,
                "dig": self.dig, "dsg": self.dsg, "ssg": self.ssg}


@dataclass(frozen=True)
class ReleaseAttack:
    """One release after the attacks: per-group outcome and the ratios of 001/002."""

    period: str
    groups: tuple[GroupAttack, ...]
    k: int | None
    alpha: float | None
    md_applied: bool
    dir: float | None
    dsr: float | None
    ssgr: float | None
    reidentified: int

    def to_dict(self, *, all_groups: bool = False) -> dict:
        risky = [g for g in self.groups if g.dig or g.dsg or g.ssg or g.remaining <= 1]
        shown = self.groups if all_groups else risky
        return {"period": self.period, "groups": len(self.groups), "k": self.k,
                "alpha": self.alpha, "md_applied": self.md_applied, "dir": self.dir,
                "dsr": self.dsr, "ssgr": self.ssgr, "reidentified_groups": self.reidentified,
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
              qids) -> list[Region]:
    """Target profiles inside the hull of the group's region, one per distinguishable value."""
    axes = []
    for q in qids:
        if q.name not in bk.attributes:
            continue
        if q.kind == "categorical":
            tax = q.taxonomy
            node = tax.lca_codes(region.cat[q.name][rows])
            values = [tax.code_of[v] for v in tax.values]
            axes.append([(q.name, c) for c in values if tax.covers_codes(node, c)])
        else:
            lo = float(region.lo[q.name][rows].min())
            hi = float(region.hi[q.name][rows].max())
            cuts = {lo, hi, *implied.lo[q.name][rows], *implied.hi[q.name][rows]}
            points = sorted(x for x in cuts if np.isfinite(x) and lo <= x <= hi)
            points += [(a + b) / 2 for a, b in itertools.pairwise(points)]
            points += [x - 1e-9 for x in points] + [x + 1e-9 for x in points]
            axes.append([(q.name, x) for x in points if lo <= x <= hi] or [(q.name, lo)])
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


def attack_series(series: PublishedSeries, *, periods: list[str] | None = None,
                  lifespan: int | None = None, k: int | None = None,
                  theta: ThetaTable | None = None, alpha: float | None = None,
                  ss_rule: str | Mapping[str, int] | None = None,
                  background: BackgroundKnowledge | None = None,
                  md: bool | None = None,
                  views: dict | None = None) -> SeriesAttack:
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
        views: A cache of parsed releases (see :func:`medanon.release.links.link`).
    """
    labels = [series.label(p) for p in periods] if periods else series.periods
    qids = series.qids
    views = views if views is not None else {}  # each release is parsed once for all labels
    out = []
    for label in labels:
        links = link(series, label, lifespan=lifespan, views=views)
        view = links.view
        manifest = series.manifests.get(label, {})
        m_k, m_theta, m_alpha, m_ss = _model(manifest)
        declared = (manifest.get("method") or {}).get("privacy_model") == HA_MODEL
        use_md = links.next_known and (declared if md is None else md)
        kk = k if k is not None else m_k
        th = theta if theta is not None else m_theta
        al = alpha if alpha is not None else m_alpha
        masks = {"B/L": links.old,
                 "F": links.later & ~covers(links.later_region, view.region, qids),
                 "MD": links.in_next if use_md else np.zeros(view.n, dtype=bool)}
        fixed = masks["B/L"] | masks["F"] | masks["MD"]
        ss = None
        if al is not None:
            rule = ss_rule if ss_rule is not None else (m_ss or MEAN_SD)
            ss = ss_records(view.rows, ss_thresholds(view.rows, series.sensitive, rule))
        implied = background.implied_regions(view, qids) if background is not None else None
        terms_of = [[] for _ in range(view.n)]
        for r, c in zip(view.term_row.tolist(), view.term_code.tolist(), strict=True):
            terms_of[r].append(c)
        groups = []
        order = np.argsort(view.group, kind="stable")
        bounds = np.flatnonzero(np.diff(np.concatenate([[-1], view.group[order], [-2]])))
        for a, b in itertools.pairwise(bounds):
            rows = order[a:b]
            best = None
            profiles = (_profiles(view.region, rows, background, implied, qids)
                        if background is not None else [None])
            for profile in profiles:
                drop = fixed[rows].copy()
                bk = np.zeros(len(rows), dtype=bool)
                if profile is not None:
                    bk = ~covers(implied.take(rows), profile, qids, background.attributes)
                    drop |= bk
                kept = rows[~drop]
                basis = kept if len(kept) else rows
                counts: dict[int, int] = {}
                for r in basis.tolist():
                    for c in terms_of[r]:
                        counts[c] = counts.get(c, 0) + 1
                shares = {c: n / len(basis) for c, n in counts.items()}
                top = max(shares, key=lambda c: (shares[c], -c)) if shares else None
                key = (int(drop.sum()), shares.get(top, 0.0))
                if best is None or key > best[0]:
                    best = (key, kept, bk, shares, top)
            _, kept, bk, shares, top = best
            excluded = {name: int(mask[rows].sum()) for name, mask in masks.items()}
            if background is not None:
                excluded["BK"] = int(bk.sum())
            dsg = None
            if th is not None:
                dsg = (any(s > th.get(str(view.term_names[c])) + _TOL for c, s in shares.items())
                       or (len(kept) == 0 and bool(shares)))
            share = None
            ssg = None
            if ss is not None:
                share = float(ss[rows].mean())
                kept_share = float(ss[kept].mean()) if len(kept) else share
                ssg = max(share, kept_share) > al + _TOL
            groups.append(GroupAttack(
                group=str(view.group_labels[view.group[rows[0]]]), size=len(rows),
                excluded=excluded, remaining=len(kept),
                top_term=str(view.term_names[top]) if top is not None else None,
                top_confidence=float(shares.get(top, 0.0)) if top is not None else 0.0,
                ss_share=share, dig=(len(kept) < kk) if kk is not None else None, dsg=dsg,
                ssg=ssg))

        def ratio(flag: str) -> float | None:
            values = [getattr(g, flag) for g in groups]
            if not values or values[0] is None:
                return None if values and values[0] is None else 0.0
            return sum(values) / len(values)

        out.append(ReleaseAttack(label, tuple(groups), kk, al, bool(use_md), ratio("dig"),
                                 ratio("dsg"), ratio("ssg"),
                                 sum(1 for g in groups if g.remaining == 1)))
    return SeriesAttack(tuple(out))
