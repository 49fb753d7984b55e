"""The verify gate: check every release of a series against the model its manifest declares.

Each manifest names its privacy model (``method.privacy_model``) and parameters; the gate checks
the published rows with the independent checker of :mod:`medanon.models.ppms` (strings only,
never an algorithm's bookkeeping, ``design.md`` rule 6):

* ``MS(k, theta*)-bounding`` (a single-release model, Lin et al. 2016): k and θ* within the
  release alone, no cross-release attack (that is the model's own promise; the attack report
  shows what the B/F/L-attacks do to such a series);
* ``PPMS(k, theta*)-bounding`` (001): k and θ* per group after the B-, F- and L-attacks over the
  whole series, within the declared CaseID life span;
* ``PPMS(k, theta, alpha)-bounding`` (002): the same plus the MD-attack and α over the views
  GV1-GV4; the MD part of a release is checked once the next period's release exists (until
  then the verdict says so);
* ``PPMS-DP(k, theta*, epsilon)`` (000): k and θ* per group after the B-, F- and L-attacks, where
  the QIDs the manifest declares perturbed (``details.perturbed_qids``) are read as carrying no
  exact information: the F-attack compares only the generalized QIDs. The ε part is a property
  of the noise, which no check of the output can confirm; the gate requires the manifest to
  declare it (``privacy_spent``) and the ledger records it.

A release that declares no model (``--method none``) or a model the gate does not know fails
verification: nothing vouches for it. ``medanon release`` runs :func:`gate` on each candidate
release before its store transaction commits and refuses a violating release, or records the
violations in its manifest when the user explicitly publishes despite them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .errors import InputFormatError, PrivacyViolation
from .models.names import HA_MODEL, MS_MODEL, PPMS_DP_MODEL, PPMS_MODEL
from .models.ppms import PeriodCheck, check_series
from .models.theta import ThetaTable
from .release.series import PublishedSeries

__all__ = ["GATE_MODELS", "GateResult", "ReleaseVerdict", "SeriesVerdict", "gate", "verify_series"]

GATE_MODELS = (MS_MODEL, PPMS_MODEL, HA_MODEL, PPMS_DP_MODEL)
_SHOWN = 5


@dataclass(frozen=True)
class ReleaseVerdict:
    """The verdict on one release.

    Attributes:
        period: Period label.
        model: The declared privacy model (None when none is declared).
        verdict: ``"passed"``, ``"violated"``, ``"no-model"`` or ``"unknown-model"``.
        attacks: The attacks replayed (e.g. ``"B/F/L/MD"``; empty for a single-release model).
        md_pending: HA only: the MD part awaits the next period's release.
        violations: ``"<period> group <id>: <reason>"`` per violated condition.
        dir, dsr, ssgr: DIG, DSG and SSG ratios as checked (None without a check).
    """

    period: str
    model: str | None
    verdict: str
    attacks: str
    md_pending: bool
    violations: tuple[str, ...]
    dir: float | None
    dsr: float | None
    ssgr: float | None

    @property
    def ok(self) -> bool:
        return self.verdict == "passed"

    def to_dict(self) -> dict:
        return {"period": self.period, "model": self.model, "verdict": self.verdict,
                "attacks": self.attacks, "md_pending": self.md_pending,
                "dir": self.dir, "dsr": self.dsr, "ssgr": self.ssgr,
                "violations": list(self.violations)}


@dataclass(frozen=True)
class SeriesVerdict:
    releases: tuple[ReleaseVerdict, ...]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.releases)

    def release(self, period: str) -> ReleaseVerdict:
        for r in self.releases:
            if r.period == period:
                return r
        raise KeyError(period)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "releases": [r.to_dict() for r in self.releases]}


def _declared(manifest: Mapping, label: str) -> tuple[str | None, dict, dict]:
    method = manifest.get("method") or {}
    return (method.get("privacy_model"), dict(method.get("parameters") or {}),
            dict(manifest.get("details") or {}))


def _setting(model: str, params: dict, details: dict, label: str, spent: object) -> tuple:
    """What the checker needs from one manifest, as a hashable key (releases sharing it are
    checked together)."""
    try:
        k = int(params["k"])
    except (KeyError, TypeError, ValueError):
        raise InputFormatError(f"The manifest of {label} declares {model} without an integer "
                               f"'k' parameter.") from None
    if "theta_table" not in details:
        raise InputFormatError(f"The manifest of {label} declares {model} without the theta table "
                               f"it used ('details.theta_table').")
    lifespan = params.get("lifespan")
    alpha = params.get("alpha") if model == HA_MODEL else None
    if model == HA_MODEL and (alpha is None or not details.get("ss_min_counts")):
        raise InputFormatError(f"The manifest of {label} declares {model} without 'alpha' or the "
                               f"ss thresholds it used ('details.ss_min_counts').")
    perturbed: tuple[str, ...] = ()
    if model == PPMS_DP_MODEL:
        declared = details.get("perturbed_qids")
        if not isinstance(declared, list) or not all(isinstance(x, str) for x in declared):
            raise InputFormatError(f"The manifest of {label} declares {model} without the list of "
                                   f"perturbed QIDs ('details.perturbed_qids').")
        if not (isinstance(spent, dict) and spent.get("epsilon_per_case")):
            raise InputFormatError(f"The manifest of {label} declares {model} without the epsilon "
                                   f"it spends per case ('privacy_spent.epsilon_per_case').")
        perturbed = tuple(sorted(declared))
    return (model, k, None if lifespan is None else int(lifespan),
            None if alpha is None else float(alpha), perturbed)


def _verdict(label: str, model: str, check: PeriodCheck) -> ReleaseVerdict:
    if model == MS_MODEL:
        attacks = ""
    else:
        attacks = "B/F/L/MD" if check.md_checked else "B/F/L"
    return ReleaseVerdict(label, model, "passed" if check.ok else "violated", attacks,
                          model == HA_MODEL and not check.md_checked, check.violations,
                          check.dir, check.dsr, check.ssgr if model == HA_MODEL else None)


def verify_series(series: PublishedSeries, periods: list[str] | None = None) -> SeriesVerdict:
    """Check each release (default: all) against its declared model.

    Raises:
        InputFormatError: a manifest declares a model without the parameters it needs.
    """
    labels = [series.label(p) for p in periods] if periods else series.periods
    verdicts: dict[str, ReleaseVerdict] = {}
    settings: dict[tuple, list[str]] = {}
    for label in labels:
        manifest = series.manifests.get(label, {})
        model, params, details = _declared(manifest, label)
        if model is None:
            verdicts[label] = ReleaseVerdict(label, None, "no-model", "", False,
                                             (f"{label}: the release declares no privacy model",),
                                             None, None, None)
        elif model not in GATE_MODELS:
            verdicts[label] = ReleaseVerdict(
                label, model, "unknown-model", "", False,
                (f"{label}: the gate cannot check the declared model {model!r} (it checks "
                 f"{', '.join(GATE_MODELS)})",), None, None, None)
        else:
            settings.setdefault(_setting(model, params, details, label,
                                         manifest.get("privacy_spent")), []).append(label)
    for (model, k, lifespan, alpha, perturbed), members in settings.items():
        theta = {p: ThetaTable.from_manifest(series.manifests[p]["details"]["theta_table"])
                 for p in members}
        ss = ({p: dict(series.manifests[p]["details"]["ss_min_counts"]) for p in members}
              if model == HA_MODEL else None)
        if model == MS_MODEL:  # single-release model: each release on its own
            checks = [check_series({p: series.releases[p]}, qids=series.qids,
                                   sensitive=series.sensitive, k=k, theta=theta[p]).periods[0]
                      for p in members]
        else:
            qids = tuple(q for q in series.qids if q.name not in perturbed)
            checks = check_series(dict(series.releases), qids=qids,
                                  sensitive=series.sensitive, k=k, theta=theta, lifespan=lifespan,
                                  md=model == HA_MODEL, alpha=alpha, ss_min_counts=ss,
                                  periods=members).periods
        for check in checks:
            verdicts[check.period] = _verdict(check.period, model, check)
    return SeriesVerdict(tuple(verdicts[p] for p in labels))


@dataclass(frozen=True)
class GateResult:
    """What the gate says about a candidate release.

    Attributes:
        verification: The manifest's ``verification`` entry.
        verdict: The verdict on the whole series with the candidate (None when the candidate
            declares no model); pass it as ``before`` when gating the next candidate.
    """

    verification: dict
    verdict: SeriesVerdict | None


def gate(published: PublishedSeries | None, period: str, rows, manifest: dict, *,
         before: SeriesVerdict | None = None) -> GateResult:
    """Check a candidate release before it is published.

    The candidate is checked together with the releases already published: against its own
    declared model, and for what it does to the earlier releases (a later release can break an
    earlier one through the F- and MD-attacks). Violations that the published releases already
    had are not blamed on the candidate.

    Args:
        published: The releases already published.
        period, rows, manifest: The candidate release.
        before: The verdict on ``published`` when already known (the previous candidate's
            :attr:`GateResult.verdict`); computed here otherwise.

    Returns:
        A :class:`GateResult`; its ``verification`` is ``not-applicable`` when the candidate
        declares no model.

    Raises:
        PrivacyViolation: the candidate breaks its model or an earlier release's; the exception
            carries the manifest entry as ``.verification`` (for ``--publish-despite-violations``)
            and the series verdict as ``.verdict``.
    """
    model = (manifest.get("method") or {}).get("privacy_model")
    if model is None:
        return GateResult({"verdict": "not-applicable",
                           "detail": "the method declares no privacy model"}, None)
    if published is None:
        raise InputFormatError("The gate needs the series read through the store's schema.")
    series = published.with_release(period, rows, manifest)
    after = verify_series(series)
    if before is None:
        before = verify_series(published) if published.periods else SeriesVerdict(())
    known = {v for r in before.releases for v in r.violations}
    own = after.release(period)
    caused = [v for r in after.releases if r.period != period for v in r.violations
              if v not in known]
    problems = list(own.violations) + caused
    entry = {"verdict": "passed" if not problems else "violated", "model": own.model,
             "attacks": own.attacks, "md_pending": own.md_pending, "dir": own.dir,
             "dsr": own.dsr, "ssgr": own.ssgr, "checker": "medanon.models.ppms"}
    if own.verdict in ("unknown-model", "no-model"):
        entry["verdict"] = "not-checked"
        entry["detail"] = own.violations[0]
        return GateResult(entry, after)
    if problems:
        entry["violations"] = problems
        shown = "; ".join(problems[:_SHOWN])
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        error = PrivacyViolation(
            f"Release {period} was not published: the verify gate found {len(problems)} "
            f"violation(s) of {model}: {shown}{more}. Publish anyway only with "
            f"--publish-despite-violations (recorded in the manifest).")
        error.verification = entry
        error.verdict = after
        raise error
    return GateResult(entry, after)
