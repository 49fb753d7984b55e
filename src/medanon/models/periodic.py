"""The privacy models of periodic SRS releases: MS(k, θ*), PPMS(k, θ*), PPMS(k, θ, α), PPMS-DP.

Each class reads itself from a release manifest, writes its declaration, generates its
guarantee text from its parameters and checks published series with the independent checker of
:mod:`medanon.models.ppms` (published strings only, ``design.md`` rule 6).

* :class:`MSModel` — MS(k, θ*)-bounding (Lin et al. 2016, the baseline of 001): k and θ* within
  each release alone; no cross-release attack is part of the promise.
* :class:`PPMSModel` — PPMS(k, θ*)-bounding (001 Definition 6): k and θ* per group after the
  B-, F- and L-attacks over the releases within the CaseID life span.
* :class:`PPMSAlphaModel` — PPMS(k, θ, α)-bounding (002 Definitions 5-7): the same plus the
  MD-attack and α over the attacker views GV1-GV4.
* :class:`PPMSDPModel` — PPMS-DP(k, θ*, ε) (000): k and θ* after the B-, F- and L-attacks over
  the generalized QIDs; the perturbed QIDs are never used for a hard exclusion (every output of
  the Laplace and exponential mechanisms has positive probability under every input), and the
  verdict records the combined bound of :mod:`medanon.models.dp_bound` on the posterior of a
  likelihood-weighting adversary. Releases made with ``dp_aware_grouping`` declare that bound
  as part of the model, and fail when it exceeds 1/k or θ. Variant ``paper`` is not ε-DP: its
  verdict records no bound, and values the manifest declares exact (noise scale below the
  published precision, ``details.exact_groups``) are checked as generalized values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Self

import numpy as np
import pandas as pd

from .._validation import check_fraction, check_int
from ..errors import InputFormatError, ValidationError
from ..periods import parse_period
from ..published.case_ids import case_id_mode, highest_case_id
from ..published.links import ReleaseView, read_view
from ..published.roles import date_mismatches
from ..published.series import PublishedSeries
from .base import (PrivacyModel, ReleaseVerdict, manifest_field, manifest_int, names_list,
                   register)
from .dp_bound import posterior_bounds, term_share_bound
from .names import HA_MODEL, MS_MODEL, PPMS_DP_MODEL, PPMS_MODEL
from .ppms import PeriodCheck, check_published
from .theta import ThetaTable

__all__ = ["GROUPED_DEPENDENCE", "MSModel", "NEIGHBOURS", "PPMSAlphaModel", "PPMSDPModel",
           "PPMSModel", "Perturbation", "dp_models", "hard_series"]

_TOL = 1e-12


def _theta_summary(theta: ThetaTable | None) -> str:
    if theta is None:
        return "its theta (resolved per release)"
    if not theta.overrides:
        return f"theta = {theta.default:g}"
    values = sorted(set(theta.overrides.values()) | {theta.default})
    # a theta of 1 bounds nothing: the promise says how many terms it leaves out
    unbounded = len(theta.unbounded_terms)
    return (f"its theta (default {theta.default:g}; {len(theta.overrides)} term(s) with their own "
            f"theta, from {values[0]:g} to {values[-1]:g}"
            + (f"; {unbounded} term(s) at theta 1 have no limit" if unbounded else "") + ")")


def _lifespan_text(lifespan: int | None) -> str:
    return ("across every release of the series" if lifespan is None
            else f"across releases at most {lifespan} period(s) apart")


def _beyond_text(lifespan: int | None) -> str:
    return ("" if lifespan is None else
            f" Nothing against an adversary who links releases more than {lifespan} period(s) "
            f"apart (FAERS CaseIDs do not expire).")


def _theta_from(manifest: Mapping, label: str) -> ThetaTable:
    return ThetaTable.from_manifest(manifest_field(manifest, "details.theta_table", label))


#: what a θ table's per-term entry may reveal of the input (docs/theta.md)
THETA_DEPENDENCE = (
    "A term's θ is a setting when a θ file or a cap gives it. Under the frequency rule it is "
    "low, mid or high by where the term's count over the period's input (withheld cases "
    "included) falls against m - SD and m + SD of every term's count: one of three values per "
    "listed term. A θ raised by raise-theta is a point of the public grid (raised_theta.*.grid, "
    "0.05): see raised_to. Only terms a published row holds, and terms the settings name, are "
    "listed, so no entry tells that a withheld case holds a term.")
#: what a raised θ may reveal of the input (docs/theta.md, "Raised θ")
RAISED_DEPENDENCE = (
    "The smallest multiple of the grid at or above the θ that declares the term's share c/N of "
    "the period's anchors (all input cases, withheld ones included; PPMS-DP's dp-aware grouping "
    "maps c/N through its public epsilon first). It reveals that c > θ·N and which grid cell "
    "(width 0.05) c/N falls in: at most log2(20) < 4.4 bits per raised term, never c or N. "
    "Listed only for terms a published row holds.")
GROUPED_DEPENDENCE: Mapping[str, str] = {
    "details.theta_table.overrides.*": THETA_DEPENDENCE,
    "method.model.parameters.theta_table.overrides.*": THETA_DEPENDENCE,
    "details.raised_theta.*.raised_to": RAISED_DEPENDENCE,
    "details.raised_theta.*.theta": "the term's θ before it was raised: " + THETA_DEPENDENCE,
}


class _Grouped(PrivacyModel):
    """Shared parameters and text of the grouping models (k, θ*, life span)."""

    input_dependence = GROUPED_DEPENDENCE

    def __init__(self, *, k: int, theta: ThetaTable | None = None, lifespan: int | None = None):
        owner = type(self).__name__
        self.k = check_int(k, name="k", owner=owner, minimum=1)
        if theta is not None and not isinstance(theta, ThetaTable):
            raise ValidationError(f"The 'theta' parameter of {owner} must be a ThetaTable (the "
                                  f"thresholds a release used) or None; got {type(theta).__name__}.")
        self.theta = theta
        self.lifespan = (None if lifespan is None
                         else check_int(lifespan, name="lifespan", owner=owner, minimum=1))

    def parameters(self) -> dict[str, object]:
        return {"k": self.k, "lifespan": self.lifespan,
                "theta_table": None if self.theta is None else self.theta.to_manifest()}

    def setting(self) -> tuple:
        return (type(self).__name__, self.k, self.lifespan)

    def _require_theta(self, label: str) -> ThetaTable:
        if self.theta is None:
            raise InputFormatError(f"The manifest of {label} declares {self.name} without the "
                                   f"theta table it used ('details.theta_table').")
        return self.theta

    @classmethod
    def _common(cls, manifest: Mapping, label: str) -> dict:
        return {"k": manifest_int(manifest, "method.parameters.k", label),
                "theta": _theta_from(manifest, label),
                "lifespan": manifest_int(manifest, "method.parameters.lifespan", label,
                                         required=False)}


def _dates_checked(series: PublishedSeries, label: str, lifespan: int | None) -> tuple[str, tuple]:
    """The date columns of a release and whether they are the ones the series derives
    (``published.roles``): the words for the verdict, and the violations."""
    dates = list(((series.manifests.get(label) or {}).get("columns") or {}).get("dates") or {})
    if not dates:
        return "", ()
    here = parse_period(label).ordinal
    earlier = {p: rows for p, rows in series.releases.items() if parse_period(p).ordinal < here}
    found = date_mismatches(series.releases[label], dates, label, earlier, lifespan)
    return f"; dates {', '.join(dates)} derived from the series (no reported date)", found


def _case_ids_checked(series: PublishedSeries, label: str) -> tuple[str, tuple]:
    """Under real CaseIDs, the words for the verdict and the violation when the manifest's
    ``case_ids.highest_earlier`` (what the gate's CaseID-order rule read) is below a CaseID an
    earlier release of the series publishes (``published.case_ids``)."""
    manifest = series.manifests.get(label) or {}
    if case_id_mode(manifest) != "real":
        return "", ()
    here = parse_period(label).ordinal
    observed = highest_case_id(c for p, rows in series.releases.items()
                               if parse_period(p).ordinal < here and len(rows)
                               for c in rows["case_id"].astype(str))
    declared = (manifest.get("case_ids") or {}).get("highest_earlier")
    words = "; real CaseIDs: their order is read as the L-adversary's knowledge"
    # a manifest written before CaseID modes declares nothing to check (its rows are read)
    if "case_ids" not in manifest or observed is None or (declared is not None
                            and highest_case_id([observed, declared]) == str(declared)):
        return words, ()
    return words, (f"case_ids.highest_earlier {declared!r} is below CaseID {observed!r} of an "
                   f"earlier release: the CaseID-order rule would read too little",)


def _verdict(label: str, model: PrivacyModel, check: PeriodCheck, checked: str, attacks: str,
             *, md_pending: bool = False, ssgr: bool = False, bound: dict | None = None,
             extra: tuple[str, ...] = (), series: PublishedSeries | None = None,
             lifespan: int | None = None) -> ReleaseVerdict:
    if series is not None:
        words, dated = _dates_checked(series, label, lifespan)
        checked, extra = checked + words, extra + dated
        words, ordered = _case_ids_checked(series, label)
        checked, extra = checked + words, extra + ordered
    violations = tuple(check.violations) + extra
    return ReleaseVerdict(label, model.name, "violated" if violations else "passed", checked,
                          attacks, md_pending, violations, check.dir, check.dsr,
                          check.ssgr if ssgr else None, bound)


def _qid_names(qids) -> str:
    return ", ".join(q.name for q in qids) or "none"


@register
class MSModel(_Grouped):
    """MS(k, θ*)-bounding: one release in isolation."""

    name = MS_MODEL
    scope = "release"

    @property
    def attacks(self) -> tuple[str, ...]:
        return ()

    @property
    def guarantee(self) -> str:
        return (f"Within this release alone, every QID-group holds at least {self.k} cases and "
                f"each sensitive term's share of a group is at most {_theta_summary(self.theta)}.")

    @property
    def does_not_guarantee(self) -> str:
        return ("Anything once this release is linked with other releases of the same cases: "
                "follow-up reports keep their CaseID, and the B-, F- and L-attacks can shrink a "
                "group below k or raise a term above its theta. No differential privacy.")

    @classmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "MSModel":
        common = cls._common(manifest, label)
        common.pop("lifespan")
        return cls(**common)

    def setting(self) -> tuple:
        return (type(self).__name__, self.k)

    @classmethod
    def check(cls, series: PublishedSeries, declared: Mapping[str, Self]) -> list[ReleaseVerdict]:
        out = []
        for label, model in declared.items():
            alone = series.restricted_to([label])
            views = {label: read_view(alone, label)}
            check = check_published(alone, views, [label], k=model.k,
                                    thetas={label: model._require_theta(label)}, lifespan=None,
                                    md=False, alpha=None, ss_table={}, uniform=True).periods[0]
            checked = (f"k={model.k} and theta* per group within the release alone, over the "
                       f"QIDs {_qid_names(series.qids)}")
            out.append(_verdict(label, model, check, checked, "", series=series))
        return out


@register
class PPMSModel(_Grouped):
    """PPMS(k, θ*)-bounding (001): k and θ* after the B-, F- and L-attacks."""

    name = PPMS_MODEL
    scope = "series"

    @property
    def attacks(self) -> tuple[str, ...]:
        return ("B", "F", "L")

    @property
    def guarantee(self) -> str:
        return (f"For an adversary who knows a target's exact QID values and links CaseIDs "
                f"{_lifespan_text(self.lifespan)} (B-, F- and L-attacks), the target's group keeps "
                f"at least {self.k} candidate cases and each sensitive term's share among them is "
                f"at most {_theta_summary(self.theta)}.")

    @property
    def does_not_guarantee(self) -> str:
        return ("No protection against the medication-discontinuation (MD) or substantial-"
                "symptom (SS) attacks of paper 002, nor against background knowledge that ties "
                "terms to QID values; no differential privacy." + _beyond_text(self.lifespan))

    @classmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "PPMSModel":
        return cls(**cls._common(manifest, label))

    @classmethod
    def _run(cls, series: PublishedSeries, declared: Mapping[str, "_Grouped"], *,
             md: bool = False, alpha: float | None = None,
             ss: Mapping[str, object] | None = None,
             final: tuple[str, ...] = ()) -> tuple[dict, list[PeriodCheck]]:
        """Check ``declared`` releases of ``series``; the parsed views are returned for reuse."""
        first = next(iter(declared.values()))
        views: dict[str, ReleaseView] = {}
        checks = check_published(series, views, list(declared), k=first.k,
                                 thetas={p: m._require_theta(p) for p, m in declared.items()},
                                 lifespan=first.lifespan, md=md, alpha=alpha,
                                 ss_table=ss or {}, uniform=True, final=final).periods
        return views, list(checks)

    @classmethod
    def check(cls, series: PublishedSeries, declared: Mapping[str, Self]) -> list[ReleaseVerdict]:
        _, checks = cls._run(series, declared)
        first = next(iter(declared.values()))
        return [_verdict(c.period, declared[c.period], c,
                         f"k={first.k} and theta* per group after the B/F/L-attacks "
                         f"({_lifespan_text(first.lifespan)}) over the QIDs "
                         f"{_qid_names(series.qids)}", "B/F/L", series=series,
                         lifespan=first.lifespan) for c in checks]


@register
class PPMSAlphaModel(PPMSModel):
    """PPMS(k, θ, α)-bounding (002): PPMS plus the MD-attack and α over the views GV1-GV4."""

    name = HA_MODEL
    #: the 'mean+sd' ss-rule reads the period's input (an --ss-rule of counts is a setting)
    input_dependence = {
        **GROUPED_DEPENDENCE,
        **dict.fromkeys(("details.ss_min_counts.*", "method.model.parameters.ss_min_counts.*"),
                        "HA's ss-record threshold per sensitive column: a setting with --ss-rule "
                        "column=count; under 'mean+sd' the mean plus SD of the number of terms per "
                        "case over the period's input cells (withheld cases included), rounded "
                        "to an integer: one integer per sensitive column."),
    }

    def __init__(self, *, k: int, alpha: float, ss_min_counts: Mapping[str, int] | None = None,
                 theta: ThetaTable | None = None, lifespan: int | None = None,
                 final: bool = False):
        super().__init__(k=k, theta=theta, lifespan=lifespan)
        self.alpha = check_fraction(alpha, name="alpha", owner=type(self).__name__)
        if not isinstance(final, bool):
            raise ValidationError(f"The 'final' parameter of {type(self).__name__} must be True "
                                  f"or False; got {final!r}.")
        #: the series' final release: grouped as if no case went on (no next period existed)
        self.final = final
        self.ss_min_counts = None if ss_min_counts is None else {
            str(c): check_int(v, name=f"ss_min_counts[{c!r}]", owner=type(self).__name__, minimum=1)
            for c, v in dict(ss_min_counts).items()}

    @property
    def attacks(self) -> tuple[str, ...]:
        return ("B", "F", "L", "MD", "SS")

    def parameters(self) -> dict[str, object]:
        return {**super().parameters(), "alpha": self.alpha, "ss_min_counts": self.ss_min_counts,
                **({"final": True} if self.final else {})}

    def setting(self) -> tuple:
        # a final release and the earlier ones of its series are one setting: one model
        return (*super().setting(), self.alpha)

    @property
    def guarantee(self) -> str:
        md = ("and, while no later release is published, the MD-attack (this is the series' "
              "final release: grouped with every case counted as stopping, since no next period "
              "exists)" if self.final else
              "and knows whether the target stopped the medication before the next release "
              "(MD-attack)")
        return (f"For an adversary who knows a target's exact QID values, links CaseIDs "
                f"{_lifespan_text(self.lifespan)} (B-, F-, L-attacks) {md}, the target's group "
                f"keeps at least {self.k} candidate cases, each sensitive term's share among them "
                f"is at most {_theta_summary(self.theta)}, and the share of records with "
                f"substantial symptoms in each of the four attacker views is at most "
                f"{self.alpha:g} (SS-attack).")

    @property
    def does_not_guarantee(self) -> str:
        md = ("This final release's MD view is not covered once any later release of the series "
              "exists: a later release shows which of its cases went on, and the MD-attack then "
              "narrows its groups below what was checked (medanon publishes nothing after it, "
              "and verify reports a later release as a violation); "
              if self.final else
              "The MD part of a release holds only once the next period's release exists; ")
        return (md + "shares and ss-records are those of the published terms (a case whose terms "
                "were suppressed counts by the terms it keeps); no protection against "
                "background knowledge that ties terms to QID values; no differential privacy."
                + _beyond_text(self.lifespan))

    @classmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "PPMSAlphaModel":
        common = cls._common(manifest, label)
        alpha = manifest_field(manifest, "method.parameters.alpha", label)
        try:
            if not isinstance(alpha, (int, float, str)):
                raise TypeError  # a list, a mapping...: refused below like a non-numeric text
            alpha = float(alpha)
        except (TypeError, ValueError):
            raise InputFormatError(f"The manifest of {label} has a non-numeric "
                                   f"'method.parameters.alpha': {alpha!r}.") from None
        ss = manifest_field(manifest, "details.ss_min_counts", label)
        if not isinstance(ss, Mapping) or not ss:
            raise InputFormatError(f"The manifest of {label} must give 'details.ss_min_counts' as "
                                   f"{{column: minimum term count}}; got {ss!r}.")
        final = manifest_field(manifest, "method.final", label, required=False)
        if final is not None and not isinstance(final, bool):
            raise InputFormatError(f"The manifest of {label} must give 'method.final' as true or "
                                   f"false; got {final!r}.")
        try:
            return cls(alpha=alpha, ss_min_counts=ss, final=bool(final), **common)
        except ValidationError as exc:
            raise InputFormatError(f"The manifest of {label}: {exc}") from None

    @classmethod
    def check(cls, series: PublishedSeries, declared: Mapping[str, Self]) -> list[ReleaseVerdict]:
        first = next(iter(declared.values()))
        final = tuple(p for p, m in declared.items() if m.final)
        _, checks = cls._run(series, declared, md=True, alpha=first.alpha,
                             ss={p: m.ss_min_counts for p, m in declared.items()}, final=final)
        out = []
        for c in checks:
            attacks = "B/F/L/MD" if c.md_checked else "B/F/L"
            pending = "" if c.md_checked else " (MD and the views GV1, GV3 pending the next release)"
            extra: tuple[str, ...] = ()
            if c.period in final:
                here = parse_period(c.period)
                later = [p for p in series.periods if parse_period(p) > here]
                pending = (" (the series' final release: every record md, no next release)"
                           if not later else pending)
                # a later release opens the MD view this release was not grouped for
                extra = tuple(f"{c.period}: published as the series' final release, but release "
                              f"{p} follows it (its MD view is not covered)" for p in later)
            checked = (f"k={first.k}, theta* and alpha={first.alpha:g} over the views "
                       f"{'/'.join(c.alpha_views)} (ss-records by their published term counts "
                       f"against details.ss_min_counts) after the {attacks}-attacks "
                       f"({_lifespan_text(first.lifespan)}) over the QIDs "
                       f"{_qid_names(series.qids)}{pending}")
            out.append(_verdict(c.period, declared[c.period], c, checked, attacks,
                                md_pending=not c.md_checked, ssgr=True, series=series,
                                lifespan=first.lifespan, extra=extra))
        return out


# --------------------------------------------------------------------------------- PPMS-DP
@dataclass(frozen=True)
class Perturbation:
    """How one QID was perturbed, as the manifest declares it.

    Attributes:
        qid: The QID's name.
        mechanism: ``"laplace"`` (numeric), ``"exponential"`` or ``"randomized-response"``
            (categorical; the latter over the labels of ``level``).
        epsilon: ε of the mechanism for one case in one release.
        domain: Laplace, strict variant: the public bounds the value was clipped to (before and
            after the noise; its scale is (hi − lo)/ε). None for the paper variant (local
            sensitivity per group, not published) and for the exponential mechanism.
        decimals: Published numbers are rounded to this many decimals (Laplace).
        level: Categorical, strict variant: the depth of the hierarchy the labels are published
            at (``details.label_levels``; :mod:`medanon.mechanisms.coarsening`): the drawn
            label's ancestor there (exponential), or the output domain of randomized response.
            None: 000's exponential draw published as drawn.
    """

    qid: str
    mechanism: str
    epsilon: Fraction
    domain: tuple[float, float] | None = None
    decimals: int | None = None
    level: int | None = None

    @property
    def scale(self) -> float | None:
        """The Laplace scale (hi − lo)/ε when it is public; None otherwise."""
        if self.mechanism != "laplace" or self.domain is None:
            return None
        return (self.domain[1] - self.domain[0]) / float(self.epsilon)


_MECHANISMS = {"laplace": "numeric", "exponential": "categorical",
               "randomized-response": "categorical"}
#: the published precision of PPMS-DP's noisy numbers when a manifest does not say.
_DEFAULT_DECIMALS = 2


#: the neighbour relation of PPMS-DP's strict epsilon-DP claim: the first sentence of its
#: guarantee (issue 41). The grouping, merging and withholding read every case that is
#: present, so adding or removing one case changes the groups deterministically.
NEIGHBOURS = ("The epsilon-DP claim is for neighbouring inputs that hold the same cases and "
              "differ in one case's perturbed QID values; adding or removing a case is NOT "
              "covered (which cases are grouped together, published or withheld depends on "
              "which cases are present).")


@register
class PPMSDPModel(PPMSModel):
    """PPMS-DP(k, θ*, ε) (000), see the module docstring."""

    name = PPMS_DP_MODEL

    def __init__(self, *, k: int, epsilon: object, perturbations: tuple[Perturbation, ...],
                 variant: str = "strict", theta: ThetaTable | None = None,
                 lifespan: int | None = None, dp_aware_grouping: bool = False,
                 exact_groups: Mapping[str, tuple[str, ...]] | None = None):
        super().__init__(k=k, theta=theta, lifespan=lifespan)
        owner = type(self).__name__
        from ..accounting import to_exact

        self.epsilon = to_exact(epsilon, name="epsilon", owner=owner)
        if variant not in ("strict", "paper"):
            raise ValidationError(f"The 'variant' parameter of {owner} must be 'strict' or "
                                  f"'paper'; got {variant!r}.")
        self.variant = variant
        self.perturbations = tuple(perturbations)
        self.dp_aware_grouping = bool(dp_aware_grouping)
        self.exact_groups = {str(q): tuple(map(str, g)) for q, g in dict(exact_groups or {}).items()}

    @property
    def perturbed(self) -> tuple[str, ...]:
        return tuple(p.qid for p in self.perturbations)

    @property
    def epsilon_per_case(self) -> Fraction:
        """ε one case spends in one release: the sum over its perturbed QIDs."""
        return sum((p.epsilon for p in self.perturbations), Fraction(0))

    @property
    def is_dp(self) -> bool:
        return self.variant == "strict"

    def parameters(self) -> dict[str, object]:
        from ..accounting import format_epsilon

        return {**super().parameters(), "epsilon": format_epsilon(self.epsilon),
                "variant": self.variant, "perturbed_qids": list(self.perturbed),
                "dp_aware_grouping": self.dp_aware_grouping,
                "label_levels": {p.qid: p.level for p in self.perturbations
                                 if p.level is not None} or None}

    def setting(self) -> tuple:
        return (*super().setting(), self.perturbed, self.variant)

    @property
    def attacks(self) -> tuple[str, ...]:
        return ("B", "F", "L", "likelihood-weighted")

    @property
    def guarantee(self) -> str:
        from ..accounting import format_epsilon

        qids = ", ".join(self.perturbed) or "none"
        syntactic = (f"For an adversary who links CaseIDs {_lifespan_text(self.lifespan)} (B-, F- "
                     f"and L-attacks) and uses only the QIDs published generalized, the target's "
                     f"group keeps at least {self.k} candidate cases and each sensitive term's "
                     f"share among them is at most {_theta_summary(self.theta)}")
        if not self.is_dp:
            return (f"{syntactic}. The perturbed QIDs ({qids}) carry noise as in paper 000, "
                    f"which is NOT epsilon-DP end to end (epsilon = {format_epsilon(self.epsilon)} "
                    f"only sets the noise scale).")
        text = (f"{NEIGHBOURS} {syntactic}. Each case's perturbed QIDs ({qids}) are "
                f"{format_epsilon(self.epsilon_per_case)}-DP per release (epsilon "
                f"{format_epsilon(self.epsilon)} per QID, summed over its QIDs); a case in several "
                f"linked releases spends the sum.")
        cut = [p for p in self.perturbations if p.level is not None
               and p.mechanism == "exponential"]
        if cut:
            levels = ", ".join(f"{p.qid} at level {p.level}" for p in cut)
            text += (f" Perturbed labels are published cut to their ancestor ({levels} of its "
                     f"hierarchy; 0 is the root), a level chosen from epsilon and the hierarchy "
                     f"alone: post-processing, under the same epsilon.")
        rr = [p for p in self.perturbations if p.mechanism == "randomized-response"]
        if rr:
            levels = ", ".join(f"{p.qid} at level {p.level}" for p in rr)
            text += (f" Categorical labels are drawn by randomized response over the root and "
                     f"the labels of one level of their hierarchy ({levels}; at level 0 only "
                     f"the root is published), an output domain chosen from epsilon and the "
                     f"hierarchy alone.")
        if self.dp_aware_grouping:
            text += (f" Groups are grown so that, even weighting candidates by the likelihood of "
                     f"their perturbed values, no candidate's posterior exceeds 1/{self.k} and no "
                     f"term's posterior share exceeds its theta.")
        return text

    @property
    def does_not_guarantee(self) -> str:
        if not self.is_dp:
            return ("epsilon-differential privacy: the paper variant calibrates noise to each group's own "
                    "spread (local sensitivity), so the noise scale depends on the data and a "
                    "group whose values coincide is published exactly; epsilon is a noise-scale "
                    "parameter only.")
        text = ("Protection of attributes published in the clear (sensitive terms, drugs). ")
        if not self.dp_aware_grouping:
            text += (f"k={self.k} and theta hold for hard exclusions only: an adversary who weights "
                     f"candidates by the likelihood of their perturbed values can exceed 1/k; the "
                     f"verify verdict records the combined bound.")
        return text.strip()

    @classmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "PPMSDPModel":
        common = cls._common(manifest, label)
        variant = manifest_field(manifest, "method.parameters.variant", label, required=False,
                                 default=manifest_field(manifest, "details.dp_variant", label,
                                                        required=False, default="strict"))
        perturbed = names_list(manifest_field(manifest, "details.perturbed_qids", label),
                               "details.perturbed_qids", label)
        spent = manifest_field(manifest, "privacy_spent", label)
        per_case = manifest_field(manifest, "privacy_spent.epsilon_per_case", label)
        epsilon = manifest_field(manifest, "method.parameters.epsilon", label)
        mechanisms = manifest_field(manifest, "privacy_spent.mechanisms", label)
        if not isinstance(mechanisms, list) or not all(isinstance(m, Mapping) for m in mechanisms):
            raise InputFormatError(f"The manifest of {label} must list its mechanisms in "
                                   f"'privacy_spent.mechanisms'; got {mechanisms!r}.")
        by_target = {str(m.get("target")): m for m in mechanisms}
        domains = manifest_field(manifest, "details.domains", label, required=False, default={})
        levels = manifest_field(manifest, "details.label_levels", label, required=False,
                                default={}) or {}
        if not isinstance(levels, Mapping) or not all(
                q in perturbed and isinstance(v, int) and not isinstance(v, bool) and v >= 0
                for q, v in levels.items()):
            raise InputFormatError(f"The manifest of {label} has a malformed "
                                   f"'details.label_levels' (perturbed QID -> level >= 0): "
                                   f"{levels!r}.")
        from ..accounting import to_exact

        perturbations = []
        for qid in perturbed:
            entry = by_target.get(qid)
            if entry is None or entry.get("mechanism") not in _MECHANISMS or "epsilon" not in entry:
                raise InputFormatError(
                    f"The manifest of {label} declares the perturbed QID {qid!r} without its "
                    f"mechanism parameters: 'privacy_spent.mechanisms' needs an entry with target "
                    f"{qid!r}, 'mechanism' ({' or '.join(_MECHANISMS)}) and 'epsilon'.")
            try:
                eps = to_exact(entry.get("epsilon_exact", entry["epsilon"]), name="epsilon",
                               owner=f"mechanism of {qid!r}")
            except ValidationError as exc:
                raise InputFormatError(f"The manifest of {label}, 'privacy_spent.mechanisms' for "
                                       f"{qid!r}: {exc}") from None
            domain = None
            if entry["mechanism"] == "laplace" and variant == "strict":
                # no domain at all fails the unpacking below like a malformed one
                bounds = domains.get(qid, ()) if isinstance(domains, Mapping) else ()
                try:
                    lo, hi = (float(b) for b in bounds)
                except (TypeError, ValueError):
                    raise InputFormatError(
                        f"The manifest of {label} declares the strict Laplace mechanism for "
                        f"{qid!r} without its public domain ('details.domains.{qid}' = [lo, hi]), "
                        f"so its noise scale is unknown.") from None
                if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                    raise InputFormatError(f"The manifest of {label} has an invalid "
                                           f"'details.domains.{qid}': {bounds!r}.")
                domain = (lo, hi)
            # the published precision of Laplace outputs (a malformed one is refused, not a crash)
            decimals = None
            if entry["mechanism"] == "laplace":
                decimals = manifest_int(manifest, "details.decimals", label, minimum=0,
                                        required=False)
                if decimals is None:
                    decimals = _DEFAULT_DECIMALS
            if qid in levels and _MECHANISMS[entry["mechanism"]] != "categorical":
                raise InputFormatError(f"The manifest of {label} declares a label level for "
                                       f"{qid!r}, which the {entry['mechanism']} mechanism "
                                       f"perturbs: only categorical labels have levels.")
            if entry["mechanism"] == "randomized-response" and qid not in levels:
                raise InputFormatError(f"The manifest of {label} declares randomized response "
                                       f"for {qid!r} without its level "
                                       f"('details.label_levels.{qid}'), its output domain.")
            perturbations.append(Perturbation(qid, str(entry["mechanism"]), eps, domain,
                                              decimals, levels.get(qid)))
        if not isinstance(spent, Mapping) or per_case in (None, "", 0, "0"):
            raise InputFormatError(f"The manifest of {label} declares {cls.name} without the "
                                   f"epsilon it spends per case ('privacy_spent.epsilon_per_case').")
        exact = manifest_field(manifest, "details.exact_groups", label, required=False, default={})
        if not isinstance(exact, Mapping):
            raise InputFormatError(f"The manifest of {label} has a malformed "
                                   f"'details.exact_groups': {exact!r}.")
        aware = manifest_field(manifest, "method.parameters.dp_aware_grouping", label,
                               required=False, default=False)
        try:
            return cls(epsilon=epsilon, perturbations=tuple(perturbations), variant=str(variant),
                       dp_aware_grouping=bool(aware),
                       exact_groups={q: tuple(g) for q, g in exact.items()}, **common)
        except ValidationError as exc:
            raise InputFormatError(f"The manifest of {label}: {exc}") from None

    @classmethod
    def check(cls, series: PublishedSeries, declared: Mapping[str, Self]) -> list[ReleaseVerdict]:
        models = dp_models(series)
        hard = hard_series(series, models)
        views, checks = cls._run(hard, declared)
        epsilons = _case_epsilons(models, hard, views, list(declared),
                                  next(iter(declared.values())).lifespan)
        out = []
        for c in checks:
            model = declared[c.period]
            checked = (f"k={model.k} and theta* per group after the B/F/L-attacks "
                       f"({_lifespan_text(model.lifespan)}) over the generalized QIDs "
                       f"{_qid_names(q for q in series.qids if q.name not in model.perturbed)}; "
                       f"perturbed QIDs {', '.join(model.perturbed) or 'none'} used for no hard "
                       f"exclusion; epsilon declared")
            extra: tuple[str, ...] = ()
            bound = None
            if model.is_dp:
                bound, extra = _combined_bound(views[c.period], c, model, epsilons)
                checked += ("; combined posterior bound checked against 1/k and theta"
                            if model.dp_aware_grouping else "; combined posterior bound recorded")
            else:
                checked += ("; paper variant (not epsilon-DP): no posterior bound; values whose "
                            "noise scale is below the published precision checked as exact")
            out.append(_verdict(c.period, model, c, checked, "B/F/L", bound=bound, extra=extra,
                                series=series, lifespan=model.lifespan))
        return out


def dp_models(series: PublishedSeries) -> dict[str, PPMSDPModel]:
    """The PPMS-DP model of every release of ``series`` that declares one (label -> model).

    Raises:
        InputFormatError: a release declares PPMS-DP without the fields its model needs (the
            message names the field).
    """
    out = {}
    for label in series.periods:
        manifest = series.manifests.get(label) or {}
        if (manifest.get("method") or {}).get("privacy_model") == PPMS_DP_MODEL:
            out[label] = PPMSDPModel.from_manifest(manifest, label)
    return out


def hard_series(series: PublishedSeries, models: Mapping[str, PPMSDPModel] | None = None,
                ) -> PublishedSeries:
    """The series as every hard exclusion reads it (the gate's and the attacks').

    In each PPMS-DP release the perturbed cells are suppressed (``*``): ``*`` allows the whole
    domain, so a perturbed value never excludes a candidate for sure (every output of the
    Laplace and exponential mechanisms is possible under every input), while a generalized value
    of another release still does. Paper-variant values the manifest declares exact
    (``details.exact_groups``: noise scale below the published precision) are kept: they are as
    good as published values. A series without PPMS-DP releases is returned as it is.
    """
    models = dp_models(series) if models is None else models
    if not models:
        return series
    releases = {}
    for label, rows in series.releases.items():
        model = models.get(label)
        if model is None or not model.perturbed:
            releases[label] = rows
            continue
        rows = rows.copy()
        groups = rows["group"].astype(str) if "group" in rows.columns else None
        for qid in model.perturbed:
            if qid not in rows.columns:
                continue
            exact = set(model.exact_groups.get(qid, ())) if not model.is_dp else set()
            keep = (groups.isin(exact) if groups is not None and exact
                    else pd.Series(False, index=rows.index))
            # "*", not empty: an empty cell means missing, which would exclude for sure
            rows[qid] = rows[qid].astype(object).where(keep.to_numpy(), "*")
        releases[label] = rows
    return PublishedSeries(releases, series.manifests, series.qids, series.sensitive,
                           series.source)


def _case_epsilons(models: Mapping[str, PPMSDPModel], view_series: PublishedSeries,
                   views: dict[str, ReleaseView], labels: list[str],
                   lifespan: int | None) -> dict[str, np.ndarray]:
    """For each release in ``labels``, per row, ε_r: the per-case ε of every linked strict
    PPMS-DP release the case appears in (its own included). Releases of other models add
    nothing (their QIDs are exact or generalized and enter the hard exclusions instead)."""
    spend = {label: float(m.epsilon_per_case) for label, m in models.items() if m.is_dp}

    def view(label: str) -> ReleaseView:
        if label not in views:
            views[label] = read_view(view_series, label)
        return views[label]

    out = {}
    for label in labels:
        own = view(label)
        eps = np.zeros(own.n)
        for other_label, e in spend.items():
            other = view(other_label)
            if lifespan is None or abs(other.ordinal - own.ordinal) <= lifespan:
                # pandas makes the target an Index itself; the stubs want one
                eps += e * (other.index.get_indexer(pd.Index(own.case)) >= 0)
        out[label] = eps
    return out


def _combined_bound(view: ReleaseView, check: PeriodCheck, model: PPMSDPModel,
                    epsilons: Mapping[str, np.ndarray]) -> tuple[dict, tuple[str, ...]]:
    """Bounds (1) and (2) of :mod:`medanon.models.dp_bound` per group of one release."""
    eps = epsilons[view.label]
    excluded = check.excluded if check.excluded is not None else np.zeros(view.n, dtype=bool)
    theta = model._require_theta(view.label)
    order = np.argsort(view.group, kind="stable")
    cuts = np.flatnonzero(np.diff(view.group[order])) + 1
    # the distinct (row, term) pairs of each group, found once (not terms × groups)
    pair_order = np.argsort(view.group[view.term_row], kind="stable")
    pair_group = view.group[view.term_row][pair_order]
    worst_post, worst_share_ratio = 0.0, 0.0
    violations = []
    n_over_k = n_over_theta = 0
    for rows in np.split(order, cuts) if view.n else []:
        code = view.group[rows[0]]
        g = str(view.group_labels[code])
        kept = rows[~excluded[rows]]
        post = float(posterior_bounds(eps[kept]).max()) if kept.size else 1.0
        worst_post = max(worst_post, post)
        if post > 1.0 / model.k + _TOL:
            n_over_k += 1
            if model.dp_aware_grouping:
                violations.append(f"{view.label} group {g}: combined posterior bound {post:.4g} > "
                                  f"1/k = {1.0 / model.k:.4g}")
        lo, hi = np.searchsorted(pair_group, [code, code + 1])
        pairs = pair_order[lo:hi]
        holders_of: dict[int, list[int]] = {}
        for r, t in zip(view.term_row[pairs].tolist(), view.term_code[pairs].tolist(),
                        strict=True):
            holders_of.setdefault(t, []).append(r)
        for t in sorted(holders_of):
            inside = np.asarray(holders_of[t], dtype=np.int64)  # kept or excludable, hold t
            pool_without = np.setdiff1d(kept, inside)
            share = term_share_bound(eps[inside], eps[pool_without])
            name = str(view.term_names[t])
            th = theta.get(name)
            worst_share_ratio = max(worst_share_ratio, share / th if th > 0 else np.inf)
            if share > th + _TOL:
                n_over_theta += 1
                if model.dp_aware_grouping:
                    violations.append(f"{view.label} group {g}: term {name!r} combined posterior "
                                      f"share bound {share:.4g} > theta {th:g}")
    bound = {"epsilon_case_max": float(eps.max()) if eps.size else 0.0,
             "max_posterior": worst_post,
             "one_over_k": 1.0 / model.k,
             "groups_over_one_over_k": n_over_k,
             "max_share_over_theta": worst_share_ratio,
             "terms_over_theta": n_over_theta,
             "enforced": model.dp_aware_grouping}
    return bound, tuple(violations)
