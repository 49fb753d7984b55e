"""The attacks of papers 001 and 002 on one known target.

The adversary of the papers knows a target's exact QID values and that the target's case is in
release R_i; optionally that the case first appears in R_i (001's L-attack) and that it is
absent from R_{i+1} because the patient stopped the medication (002's MD-attack). Following
001's Definitions 2-4 and 002's Definition 5:

* **candidates** (CI): the records of R_i whose published QID value covers the target's values;
* **B** (Definition 2): candidates whose case appears in an earlier release with a value that
  does not cover the target;
* **F** (Definition 3): candidates whose case appears in a later release with a value that does
  not cover the target;
* **L** (Definition 4, only with ``first_appearance``): candidates whose case appears in an
  earlier release at all;
* **MD** (002 Definition 5, only with ``discontinued``): candidates whose case appears in
  R_{i+1};
* **BK** (000 §E, only with background knowledge): candidates with a term that implies a QID
  value the target does not have (:mod:`medanon.attacks.background`).

``remaining`` = candidates minus the union of the excluded sets; the confidence of each
sensitive term is its share among the remaining records (001 Definition 5 for the known target).
Values the adversary does not know (attributes left out of the target) match every record.

Reproduces 001 Scenarios I-III and 002 Example 1 exactly (``tests/golden/test_papers_attacks.py``).

Perturbed QIDs (issue 17). Every exclusion above is a *hard* one: covering is tested on the
series of :func:`medanon.attacks.likelihood.hard_series`, where the QIDs a PPMS-DP release
perturbs are blank, so a noisy value never excludes anyone (on follow-up cases the old reading
excluded the target's own record every time). On a strict PPMS-DP release the remaining
candidates are then weighted by the likelihood of their perturbed values given the target's
values, over every linked release (:mod:`medanon.attacks.likelihood`, (L1)-(L2)): the result
carries each candidate's weight and posterior π, the term confidences become posterior shares
Σ_{r ∋ s} π_r, and a candidate whose perturbed value is impossible under the mechanism (outside
its public domain) is excluded as ``impossible``. The target is *dangerous* when max π > 1/k
(k of the release's manifest).

Target syntax: ``col=value,col=value``; a value may itself hold commas (``age=Aged, 80 and
over``): a comma starts a new pair only when a QID name and ``=`` follow it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError
from ..hierarchies import Interval, Taxonomy, age_to_mesh
from ..hierarchies.builtin import MAX_AGE_YEARS, mesh_age_tree
from ..published.cells import QidInfo
from ..published.links import Region, covers, link
from ..published.series import PublishedSeries
from .background import BackgroundKnowledge
from .likelihood import HARD, LikelihoodAttacker, TargetValues, posterior

__all__ = ["Target", "TargetAttack", "attack_target", "parse_target"]

_TOL = 1e-12


@dataclass(frozen=True)
class Target:
    """The adversary's knowledge of the target's QID values (a one-row region)."""

    values: Mapping[str, str]
    region: Region
    known: frozenset[str]


def _split_pairs(text: str, names: list[str]) -> list[str]:
    """``col=value`` parts of ``text``; a comma splits only before ``<QID name>=``."""
    if not names:
        return [p for p in text.split(",") if p.strip()]
    lookahead = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return [p for p in re.split(rf",(?=\s*(?:{lookahead})\s*=)", text) if p.strip()]


def parse_target(text: str | Mapping[str, str], qids: tuple[QidInfo, ...]) -> Target:
    """Read ``"col=value,col=value"`` (or a mapping) into a :class:`Target`.

    Categorical values are node labels of the attribute's hierarchy, or, for a banded QID, a
    number the hierarchy places in one band (``age=32`` under the MeSH age tree is
    ``Adult (25-44)``, as ingest maps a report's age; under a hierarchy of intervals, the
    narrowest value holding it); numeric values are numbers or inclusive intervals ``[lo-hi]``
    (the adversary knows the value lies there). A value may hold commas (``age=Aged, 80 and
    over``). The :class:`Target`'s ``values`` hold the labels used.

    Raises:
        ValidationError: an unknown column, a repeated one, a value not in the hierarchy (the
            message lists its values), or a malformed pair.
    """
    if isinstance(text, str):
        pairs: dict[str, str] = {}
        for part in _split_pairs(text, [q.name for q in qids]):
            if "=" not in part:
                raise ValidationError(f"The target must be 'column=value,...'; got {part.strip()!r}.")
            col, value = (s.strip() for s in part.split("=", 1))
            if col in pairs:
                raise ValidationError(f"The target names {col!r} twice.")
            pairs[col] = value
    else:
        pairs = {str(k): str(v) for k, v in text.items()}
    if not pairs:
        raise ValidationError("The target names no QID value; give e.g. 'sex=F,age=32'.")
    by_name = {q.name: q for q in qids}
    unknown = sorted(set(pairs) - set(by_name))
    if unknown:
        raise ValidationError(f"The target names {', '.join(map(repr, unknown))}, which "
                              f"{'is' if len(unknown) == 1 else 'are'} not a QID of the series "
                              f"(QIDs: {', '.join(by_name)}).")
    cat: dict[str, np.ndarray] = {}
    lo: dict[str, np.ndarray] = {}
    hi: dict[str, np.ndarray] = {}
    for q in qids:
        given = pairs.get(q.name)
        if q.kind == "categorical":
            tax = q.hierarchy
            if given is not None:
                given = pairs[q.name] = _categorical_value(q, given)
            code = tax.code_of[given if given is not None else tax.root]
            cat[q.name] = np.array([code], dtype=np.int64)
        else:
            iv = Interval.parse(given) if given is not None else None
            lo[q.name] = np.array([iv.lo if iv else -np.inf])
            hi[q.name] = np.array([iv.hi if iv else np.inf])
    return Target(pairs, Region(cat, lo, hi), frozenset(pairs))


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if np.isfinite(x) else None


def _band_of(taxonomy: Taxonomy, x: float) -> str | None:
    """The record value of ``taxonomy`` whose band holds the number ``x``, when the hierarchy
    says: the MeSH age tree maps ages in years (:func:`~medanon.hierarchies.age_to_mesh`, as
    ingest does), a hierarchy whose values are intervals (``[20-29]``) gives the narrowest
    one holding ``x``. None when the hierarchy has no bands or none holds ``x``."""
    if taxonomy == mesh_age_tree():
        if not 0 <= x <= MAX_AGE_YEARS:
            return None
        return str(age_to_mesh(x))
    holding = []
    # A self leaf ("[0-49] (exact)") holds the band its node's label names.
    node_of = {leaf: node for node, leaf in taxonomy.self_leaves.items()}
    for value in taxonomy.values:
        try:
            band = Interval.parse(node_of.get(value, value))
        except ValidationError:
            return None  # not a hierarchy of bands
        if band.lo <= x <= band.hi:
            holding.append((band.width, value))
    holding.sort()
    if not holding or (len(holding) > 1 and holding[0][0] == holding[1][0]):
        return None
    return holding[0][1]


def _categorical_value(q: QidInfo, value: str) -> str:
    """The node a target value names: a node label, or, for a banded QID (the MeSH age tree,
    or a hierarchy of intervals), a number that the hierarchy puts in one band (``age=32`` is
    the band ``Adult (25-44)``, exactly as ingest maps a report's age).

    Raises:
        ValidationError: neither; the message lists the values the hierarchy takes.
    """
    tax = q.hierarchy
    if value in tax.code_of:
        return value
    x = _number(value)
    if x is not None:
        band = _band_of(tax, x)
        if band is not None:
            return band
    mesh = tax == mesh_age_tree()
    if mesh and x is not None:
        why = f"an age must lie between 0 and {MAX_AGE_YEARS:g} years"
    elif x is not None:
        why = "the hierarchy has no numeric bands to place a number in"
    else:
        why = "it is not a node of the hierarchy"
    numbers = " or an age in years (mapped to its MeSH band)" if mesh else ""
    shown = ", ".join(repr(v) for v in tax.values[:_SHOWN_VALUES])
    more = f" and {len(tax.values) - _SHOWN_VALUES} more" if len(tax.values) > _SHOWN_VALUES else ""
    raise ValidationError(f"Target value {q.name}={value!r} cannot be read: {why}. Give one of "
                          f"the {q.name!r} hierarchy's values{numbers}: {shown}{more}.")


_SHOWN_VALUES = 20


@dataclass(frozen=True)
class TargetAttack:
    """The outcome of the attacks on one target (case ids as published).

    Attributes:
        period, target: The release attacked and the target's known values.
        candidates: Records whose published unperturbed QIDs cover the target.
        excluded: Per attack, the candidates it excludes for sure (``impossible``: a perturbed
            value the mechanism cannot produce; only on strict PPMS-DP releases).
        remaining: Candidates no attack excludes.
        confidence: Per sensitive term, its share among the remaining records (on a strict
            PPMS-DP release: its posterior share Σ_{r ∋ s} π_r).
        attacker: ``"hard-exclusion"`` or ``"likelihood-weighted"``.
        posterior: Likelihood-weighted attacker only: ``(case_id, log weight, π)`` per
            remaining record, most probable first.
        k: The k of the release's manifest (None when it declares none).
    """

    period: str
    target: Mapping[str, str]
    candidates: tuple[str, ...]
    excluded: Mapping[str, tuple[str, ...]]
    remaining: tuple[str, ...]
    confidence: Mapping[str, float]
    attacker: str = HARD
    posterior: tuple[tuple[str, float, float], ...] = ()
    k: int | None = None

    @property
    def reidentified(self) -> bool:
        """Whether exactly one candidate remains."""
        return len(self.remaining) == 1

    @property
    def max_posterior(self) -> float | None:
        """The largest posterior (likelihood-weighted attacker), else None."""
        return self.posterior[0][2] if self.posterior else None

    @property
    def dangerous(self) -> bool | None:
        """Likelihood-weighted attacker: max π > 1/k (None without k or posterior)."""
        if not self.posterior or self.k is None:
            return None
        return self.posterior[0][2] > 1.0 / self.k + _TOL

    def to_dict(self) -> dict:
        out = {"period": self.period, "target": dict(self.target), "attacker": self.attacker,
               "candidates": list(self.candidates),
               "excluded": {k: list(v) for k, v in self.excluded.items()},
               "remaining": list(self.remaining), "reidentified": self.reidentified,
               "confidence": dict(self.confidence)}
        if self.posterior:
            out["posterior"] = [{"case_id": c, "log_weight": round(w, 6),
                                 "posterior": round(p, 6)} for c, w, p in self.posterior]
            out["max_posterior"] = round(self.posterior[0][2], 6)
            out["k"] = self.k
            out["dangerous"] = self.dangerous
        return out


def attack_target(series: PublishedSeries, period: str, target: str | Mapping[str, str] | Target,
                  *, first_appearance: bool = False, discontinued: bool = False,
                  background: BackgroundKnowledge | None = None,
                  lifespan: int | None = None,
                  attacker: LikelihoodAttacker | None = None) -> TargetAttack:
    """Run the B-, F-, L-, MD- (and background-knowledge) attacks on one target.

    Args:
        series: The published series.
        period: The release the target is known to be in.
        target: The target's QID values (``"sex=F,age=32"``, a mapping or a :class:`Target`).
        first_appearance: The adversary knows the case first appears in ``period`` (L-attack).
        discontinued: The adversary knows the case is absent from the next release (MD-attack).
        background: Terms implying QID values (000 §E).
        lifespan: Link only releases at most this many periods apart (default: all).
        attacker: A :class:`LikelihoodAttacker` of ``series`` to reuse (built here otherwise).

    Raises:
        ValidationError: an unknown period or target column; ``discontinued`` when the series
            holds no release of the next period.
        InputFormatError: a PPMS-DP manifest lacks a field its model needs.
    """
    label = series.label(period)
    tgt = target if isinstance(target, Target) else parse_target(target, series.qids)
    if attacker is None:
        attacker = LikelihoodAttacker(series, lifespan=lifespan)
    links = link(attacker.hard, label, lifespan=lifespan, views=attacker.hard_views)
    if discontinued and not links.next_known:
        raise ValidationError(f"The MD-attack on {label} needs the release of the next period, "
                              f"which the series does not hold.")
    view, qids, known = links.view, series.qids, tgt.known
    candidate = covers(view.region, tgt.region, qids, known)
    candidate = np.broadcast_to(candidate, (view.n,)).copy()
    # a target has a value of each attribute it names; an empty cell means missing
    present = {q.name: True for q in qids if known is None or q.name in known}
    for name in present:
        candidate &= ~view.blank.get(name, np.zeros(view.n, dtype=bool))
    masks = {
        "B": links.old & (~covers(links.earlier_region, tgt.region, qids, known)
                          | links.missing_elsewhere(False, present)),
        "F": links.later & (~covers(links.later_region, tgt.region, qids, known)
                            | links.missing_elsewhere(True, present)),
        "L": links.old if first_appearance else np.zeros(view.n, dtype=bool),
        "MD": links.in_next if discontinued else np.zeros(view.n, dtype=bool),
    }
    if background is not None:
        implied = background.implied_regions(view, qids)
        masks["BK"] = ~covers(implied, tgt.region, qids, known)
    likelihood = attacker.applies(label)
    log_w: np.ndarray | None = None  # set exactly when the likelihood attack applies
    if likelihood:
        values = TargetValues.from_region(tgt.region, qids, known)
        log_w = attacker.log_weights(label, values)[0]
        masks["impossible"] = np.isneginf(log_w)
    excluded_any = np.zeros(view.n, dtype=bool)
    excluded = {}
    for name, mask in masks.items():
        hit = candidate & mask
        excluded[name] = tuple(view.case[hit].tolist())
        excluded_any |= hit
    remaining = candidate & ~excluded_any
    n_left = int(remaining.sum())
    weights = remaining.astype(np.float64) / max(n_left, 1)
    ranked: tuple[tuple[str, float, float], ...] = ()
    if log_w is not None and n_left:
        weights = posterior(log_w, remaining)
        rows = np.flatnonzero(remaining)
        order = rows[np.lexsort((view.case[rows].astype(str), -weights[rows]))]
        ranked = tuple((str(view.case[r]), float(log_w[r]), float(weights[r])) for r in order)
    confidence: dict[str, float] = {}
    if n_left:
        mass = np.bincount(view.term_code, weights=weights[view.term_row],
                           minlength=len(view.term_names))
        for code in np.flatnonzero(mass > 0):
            confidence[str(view.term_names[code])] = round(float(mass[code]), 6)
    confidence = dict(sorted(confidence.items(), key=lambda kv: (-kv[1], kv[0])))
    return TargetAttack(label, dict(tgt.values), tuple(view.case[candidate].tolist()), excluded,
                        tuple(view.case[remaining].tolist()), confidence,
                        attacker.attacker(label), ranked, attacker.k_of(label))
