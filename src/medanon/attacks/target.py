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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError
from ..hierarchies import Interval
from ..release.cells import QidInfo
from ..release.series import PublishedSeries
from .background import BackgroundKnowledge
from ..release.links import Region, covers, link

__all__ = ["Target", "TargetAttack", "attack_target", "parse_target"]


@dataclass(frozen=True)
class Target:
    """The adversary's knowledge of the target's QID values (a one-row region)."""

    values: Mapping[str, str]
    region: Region
    known: frozenset[str]


def parse_target(text: str | Mapping[str, str], qids: tuple[QidInfo, ...]) -> Target:
    """Read ``"col=value,col=value"`` (or a mapping) into a :class:`Target`.

    Categorical values are node labels of the attribute's hierarchy; numeric values are numbers
    or inclusive intervals ``[lo-hi]`` (the adversary knows the value lies there).

    Raises:
        ValidationError: an unknown column, a repeated one, a value not in the hierarchy, or a
            malformed pair.
    """
    if isinstance(text, str):
        pairs: dict[str, str] = {}
        for part in (p for p in text.split(",") if p.strip()):
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
    cat, lo, hi = {}, {}, {}
    for q in qids:
        value = pairs.get(q.name)
        if q.kind == "categorical":
            if value is not None and value not in q.taxonomy.code_of:
                raise ValidationError(f"Target value {value!r} is not a node of the {q.name!r} "
                                      f"hierarchy.")
            code = q.taxonomy.code_of[value if value is not None else q.taxonomy.root]
            cat[q.name] = np.array([code], dtype=np.int64)
        else:
            iv = Interval.parse(value) if value is not None else None
            lo[q.name] = np.array([iv.lo if iv else -np.inf])
            hi[q.name] = np.array([iv.hi if iv else np.inf])
    return Target(pairs, Region(cat, lo, hi), frozenset(pairs))


@dataclass(frozen=True)
class TargetAttack:
    """The outcome of the attacks on one target (case ids as published)."""

    period: str
    target: Mapping[str, str]
    candidates: tuple[str, ...]
    excluded: Mapping[str, tuple[str, ...]]
    remaining: tuple[str, ...]
    confidence: Mapping[str, float]

    @property
    def reidentified(self) -> bool:
        """Whether exactly one candidate remains."""
        return len(self.remaining) == 1

    def to_dict(self) -> dict:
        return {"period": self.period, "target": dict(self.target),
                "candidates": list(self.candidates),
                "excluded": {k: list(v) for k, v in self.excluded.items()},
                "remaining": list(self.remaining), "reidentified": self.reidentified,
                "confidence": dict(self.confidence)}


def attack_target(series: PublishedSeries, period: str, target: str | Mapping[str, str] | Target,
                  *, first_appearance: bool = False, discontinued: bool = False,
                  background: BackgroundKnowledge | None = None,
                  lifespan: int | None = None) -> TargetAttack:
    """Run the B-, F-, L-, MD- (and background-knowledge) attacks on one target.

    Args:
        series: The published series.
        period: The release the target is known to be in.
        target: The target's QID values (``"sex=F,age=32"``, a mapping or a :class:`Target`).
        first_appearance: The adversary knows the case first appears in ``period`` (L-attack).
        discontinued: The adversary knows the case is absent from the next release (MD-attack).
        background: Terms implying QID values (000 §E).
        lifespan: Link only releases at most this many periods apart (default: all).

    Raises:
        ValidationError: an unknown period or target column; ``discontinued`` when the series
            holds no release of the next period.
    """
    label = series.label(period)
    tgt = target if isinstance(target, Target) else parse_target(target, series.qids)
    links = link(series, label, lifespan=lifespan)
    if discontinued and not links.next_known:
        raise ValidationError(f"The MD-attack on {label} needs the release of the next period, "
                              f"which the series does not hold.")
    view, qids, known = links.view, series.qids, tgt.known
    candidate = covers(view.region, tgt.region, qids, known)
    masks = {
        "B": links.old & ~covers(links.earlier_region, tgt.region, qids, known),
        "F": links.later & ~covers(links.later_region, tgt.region, qids, known),
        "L": links.old if first_appearance else np.zeros(view.n, dtype=bool),
        "MD": links.in_next if discontinued else np.zeros(view.n, dtype=bool),
    }
    if background is not None:
        implied = background.implied_regions(view, qids)
        masks["BK"] = ~covers(implied, tgt.region, qids, known)
    excluded_any = np.zeros(view.n, dtype=bool)
    excluded = {}
    for name, mask in masks.items():
        hit = candidate & mask
        excluded[name] = tuple(view.case[hit].tolist())
        excluded_any |= hit
    remaining = candidate & ~excluded_any
    n_left = int(remaining.sum())
    confidence: dict[str, float] = {}
    if n_left:
        keep = remaining[view.term_row]
        counts = np.bincount(view.term_code[keep], minlength=len(view.term_names))
        for code in np.flatnonzero(counts):
            confidence[str(view.term_names[code])] = round(float(counts[code]) / n_left, 6)
    confidence = dict(sorted(confidence.items(), key=lambda kv: (-kv[1], kv[0])))
    return TargetAttack(label, dict(tgt.values), tuple(view.case[candidate].tolist()), excluded,
                        tuple(view.case[remaining].tolist()), confidence)
