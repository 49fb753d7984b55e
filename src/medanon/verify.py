"""The verify gate: check every release of a series against the model its manifest declares.

Each manifest names its privacy model (``method.privacy_model``) and parameters. The gate asks
the model object (:mod:`medanon.models`) to check the published rows: strings only, never an
algorithm's bookkeeping (``design.md`` rule 6). What each model checks is described by its
class and recorded, in words, in every verdict (``ReleaseVerdict.checked``):

* ``MS(k, theta*)-bounding``: k and θ* within each release alone;
* ``PPMS(k, theta*)-bounding`` (001): k and θ* per group after the B-, F- and L-attacks within
  the declared CaseID life span;
* ``PPMS(k, theta, alpha)-bounding`` (002): the same plus the MD-attack and α over the views
  GV1-GV4 (the MD part of a release once the next period's release exists);
* ``PPMS-DP(k, theta*, epsilon)`` (000): k and θ* after the B-, F- and L-attacks over the
  generalized QIDs (a perturbed value never excludes anyone for sure), ε declared, and the
  combined posterior bound of :mod:`medanon.models.dp_bound` recorded (checked when the
  release declares ``dp_aware_grouping``).

A release that declares no model (``--method none``) fails verification: nothing vouches for
it. A model the gate does not know, or a declared model without the parameters it needs, is an
input error naming the manifest field. ``medanon release`` runs :func:`gate` on each candidate
release before its store transaction commits and refuses a violating release, or records the
violations in its manifest when the user explicitly publishes despite them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from .errors import InputFormatError, PrivacyViolation
from .models import OneOffRelease, registered_models
from .models.names import HA_MODEL
from .periods import parse_period
from .models.base import ReleaseVerdict, SeriesVerdict, model_from_manifest
from .published.format import MANIFEST_FILE, RELEASE_FILE, read_manifest
from .data.terms import TermCodes
from .published.cells import candidate_term_pairs, case_ids, case_positions, reading_once
from .published.links import longest_case_span
from .published.series import PublishedSeries

__all__ = ["GATE_MODELS", "GateResult", "ReleaseVerdict", "SeriesVerdict", "gate", "gate_one_off",
           "is_release_folder", "md_whole", "verify_linked", "verify_one_off", "verify_release_folder",
           "verify_series"]

#: the models the gate can check (every registered model).
GATE_MODELS = registered_models()
_SHOWN = 5


def verify_series(series: PublishedSeries, periods: list[str] | None = None) -> SeriesVerdict:
    """Check each release (default: all) against the model its manifest declares.

    Each release's model is read from its manifest (:func:`medanon.models.model_from_manifest`);
    releases whose models share a setting (model, k, life span, ...) are checked together by
    the model class, the other releases of the series serving as earlier and later releases.

    Raises:
        InputFormatError: a manifest declares an unknown model, or a model without the
            parameters it needs (the message names the manifest field); a release is malformed
            (e.g. a group whose records publish different generalized QID values).
    """
    verdicts, lifespans = _verdicts(series, periods)
    span = observed_case_span(series)
    return SeriesVerdict(verdicts, span, _span_notes(span, lifespans))


def _verdicts(series: PublishedSeries, periods: list[str] | None,
              ) -> tuple[tuple[ReleaseVerdict, ...], dict[int, list[str]]]:
    """:func:`verify_series`'s verdicts and the labels per declared life span, without the
    observed case span (which the gate and :func:`verify_linked` do not read off the series
    they check: it costs a pass over every case id, issue 43)."""
    labels = [series.label(p) for p in periods] if periods else series.periods
    verdicts: dict[str, ReleaseVerdict] = {}
    settings: dict[tuple, dict] = {}
    for label in labels:
        model = model_from_manifest(series.manifests.get(label) or {"method": {}}, label)
        if model is None:
            verdicts[label] = ReleaseVerdict(
                label, None, "no-model", "nothing: the release declares no privacy model",
                violations=(f"{label}: the release declares no privacy model",))
        elif model.one_off:
            raise InputFormatError(f"The manifest of {label} declares {model.name!r}, the model "
                                   f"of a one-off (table or EHR) release, not of a period of a "
                                   f"series; verify that release's own folder.")
        else:
            settings.setdefault(model.setting(), {})[label] = model
    lifespans: dict[int, list[str]] = {}
    for declared in settings.values():
        cls = type(next(iter(declared.values())))
        for verdict in cls.check(series, declared):
            verdicts[verdict.period] = verdict
        for label, model in declared.items():
            if getattr(model, "lifespan", None) is not None:
                lifespans.setdefault(model.lifespan, []).append(label)
    return tuple(verdicts[p] for p in labels), lifespans


def _span_notes(span: int, lifespans: Mapping[int, list[str]]) -> tuple[str, ...]:
    return tuple(
        f"CaseIDs of this series recur up to {span} period(s) apart, beyond the life span of "
        f"{lifespan} declared by {', '.join(shown)}: the model does not cover links between "
        f"releases more than {lifespan} period(s) apart, which an adversary can make (FAERS "
        f"CaseIDs never expire)." for lifespan, shown in sorted(lifespans.items()) if span > lifespan)


def verify_linked(labels: Sequence[str], linked_of: Callable[[str], PublishedSeries], *,
                  observed_span: int) -> SeriesVerdict:
    """:func:`verify_series` one release at a time, in memory bounded by one release and what
    it links to (issue 30).

    A release's verdict depends on its own rows and on its cases' rows in the other releases,
    nothing else: ``linked_of(label)`` returns a series holding at least those (e.g.
    :meth:`PublishedSeries.linked` of the release's cases), and the verdict
    is the one :func:`verify_series` gives over the whole series
    (``tests/property/test_incremental_gate.py`` compares the two).

    Args:
        labels: The releases to check, oldest first.
        linked_of: What each release links to.
        observed_span: The most periods between a CaseID's first and last release in the whole
            series (:func:`observed_case_span`), for the life-span notes.
    """
    verdicts = []
    lifespans: dict[int, list[str]] = {}
    for label in labels:
        series = linked_of(label)
        verdicts.append(_verdicts(series, [label])[0][0])
        lifespan = getattr(model_from_manifest(series.manifests.get(label) or {"method": {}},
                                               label), "lifespan", None)
        if lifespan is not None:
            lifespans.setdefault(lifespan, []).append(label)
    return SeriesVerdict(tuple(verdicts), observed_span, _span_notes(observed_span, lifespans))


def observed_case_span(series: PublishedSeries) -> int:
    """The most periods between a CaseID's first and last release in the published series."""
    return longest_case_span({label: series.releases[label]["case_id"] for label in series.periods})


def verify_release_folder(folder: str | Path) -> ReleaseVerdict:
    """Check a one-off release folder (a table or EHR release: ``release.csv`` +
    ``manifest.json``) against the model its manifest declares.

    Raises:
        InputFormatError: the folder is not such a release, the manifest declares an unknown
            model or lacks a parameter the model needs.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    name = f"Release {str(folder)!r}"
    model = _one_off_model(name, manifest)
    if model is None:
        return _no_model(name)
    try:
        rows = pd.read_csv(folder / RELEASE_FILE, dtype=str, keep_default_na=False,
                           na_filter=False, encoding="utf-8")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"{name}: cannot read {RELEASE_FILE}: {exc}") from None
    return model.check({name: OneOffRelease(name, rows, manifest)}, {name: model})[0]


def _one_off_model(name: str, manifest: dict):
    model = model_from_manifest(manifest, name)
    if model is not None and not model.one_off:
        raise InputFormatError(f"The manifest of {name} declares {model.name!r}, the model of a "
                               f"period of a series; verify the series folder that holds it.")
    return model


def _no_model(name: str) -> ReleaseVerdict:
    return ReleaseVerdict(name, None, "no-model", "nothing: the release declares no privacy "
                          "model", violations=(f"{name}: the release declares no privacy model",))


def verify_one_off(name: str, rows: pd.DataFrame, manifest: dict) -> ReleaseVerdict:
    """Check one one-off release (a table or EHR release) against the model its manifest
    declares: the folder check of :func:`verify_release_folder`, on rows held in memory.

    Args:
        name: The release's name in messages.
        rows: The published rows as strings, as ``release.csv`` reads back (the model checks
            what a reader of the folder would see, never the algorithm's own tables).
        manifest: The release's manifest.

    Raises:
        InputFormatError: the manifest declares an unknown model, a model of a periodic series,
            or lacks a parameter the model needs.
    """
    model = _one_off_model(name, manifest)
    if model is None:
        return _no_model(name)
    return model.check({name: OneOffRelease(name, rows, manifest)}, {name: model})[0]


def gate_one_off(name: str, rows: pd.DataFrame, manifest: dict) -> dict:
    """The gate of a one-off release: its manifest's ``verification`` entry, as :func:`gate`
    writes it for a period of a series.

    A release that declares no model (the EHR suppression baseline) is ``not-applicable``.

    Raises:
        PrivacyViolation: the release breaks its model; the exception carries the entry as
            ``.verification`` (to publish despite it, on explicit request) and the verdict as
            ``.verdict``.
    """
    if (manifest.get("method") or {}).get("privacy_model") is None:
        return {"verdict": "not-applicable", "detail": "the method declares no privacy model"}
    own = verify_one_off(name, rows, manifest)
    entry: dict[str, object] = {"verdict": "passed" if own.ok else "violated",
                                "model": own.model, "checked": own.checked, "dir": own.dir,
                                "checker": "medanon.models"}
    if own.violations:
        entry["violations"] = list(own.violations)
        shown = "; ".join(own.violations[:_SHOWN])
        more = (f" (and {len(own.violations) - _SHOWN} more)"
                if len(own.violations) > _SHOWN else "")
        error = PrivacyViolation(
            f"The {name} was not published: the verify gate found {len(own.violations)} "
            f"violation(s) of {own.model}: {shown}{more}. Publish anyway only with "
            f"allow_violations=True (recorded in the manifest).")
        error.verification = entry
        error.verdict = own
        raise error
    return entry


def is_release_folder(folder: str | Path) -> bool:
    """Whether ``folder`` is one release (``manifest.json`` in it) rather than a series."""
    return (Path(folder) / MANIFEST_FILE).is_file()


@dataclass(frozen=True)
class GateResult:
    """What the gate says about a candidate release.

    Attributes:
        verification: The manifest's ``verification`` entry.
        verdict: What the gate found (None when the candidate declares no model): the
            candidate's verdict, and each earlier release the candidate breaks with the
            violations it causes.
    """

    verification: dict
    verdict: SeriesVerdict | None


def gate(published: PublishedSeries | None, period: str, rows, manifest: dict, *,
         before: SeriesVerdict | None = None,
         candidate_terms: Mapping[str, TermCodes] | None = None) -> GateResult:
    """Check a candidate release before it is published.

    The candidate is checked together with the releases already published: against its own
    declared model, and for what it does to the earlier releases (a later release can break an
    earlier one through the F- and MD-attacks). Violations that the published releases already
    had are not blamed on the candidate.

    ``published`` may be the whole series or only what the candidate links to
    (:meth:`PublishedSeries.linked` of the candidate's cases, as ``medanon release`` reads it
    from the store): the verdict on the candidate and the violations it causes are the same
    (``tests/property/test_incremental_gate.py``), at a cost that does not grow with the number
    of releases. ``medanon verify`` still reads every release.

    Args:
        published: The releases already published (all, or those the candidate links to).
        period, rows, manifest: The candidate release.
        before: The verdict of :func:`verify_series` on ``published``, when already known;
            computed here otherwise.
        candidate_terms: The codes of the table the candidate's sensitive cells were
            formatted from (``AnonymizationResult.table_terms``), row for row of ``rows``: its (row, term)
            pairs are then read from them rather than split from the text, when the text reads
            back as the codes (:func:`~medanon.published.cells.candidate_term_pairs`; the
            pairs are the same, ``tests/unit/test_coded_term_pairs.py``). The rest of the
            candidate, and every earlier release, is read from its text.

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
    # each release is parsed, and each probe of CaseIDs made, once for the whole gate: the
    # checks with the candidate and without it read the same rows (issue 43)
    with reading_once():
        candidate_term_pairs(rows, published.sensitive, candidate_terms)
        return _gate(published, period, rows, manifest, model, before)


def _gate(published: PublishedSeries, period: str, rows, manifest: dict, model: str,
          before: SeriesVerdict | None) -> GateResult:
    """:func:`gate` of a candidate that declares ``model``."""
    series = published.with_release(period, rows, manifest)
    # Only the releases the candidate can change are checked: those holding one of its cases
    # (the F- and L-attacks link by CaseID) and those it gives their MD part (md_whole). The
    # others' verdicts are the same with and without it, so none of their violations is the
    # candidate's, and checking them would make the gate cost grow with the series.
    # the candidate's case ids hashed once (an Index keeps its table) and probed with each
    # earlier release's: an isin per release hashed all of them again, a cost that grew with
    # the releases a quarter links to (2.6 s at the eighth 450k quarter, issue 43); the probe
    # is kept for the links and the dates, which make the same one
    holds = _holds_a_case(rows)
    whole = set(md_whole(period, published.manifests))
    reported = [p for p in series.periods if p == period or p in whole or (
        len(series.releases[p]) and holds(series.releases[p]))]
    # the gate's entry and findings read the verdicts only, never the observed case span
    # (verify_series' pass over every case id of the series)
    after = SeriesVerdict(_verdicts(series, reported)[0])
    if before is None:
        earlier = [p for p in reported if p != period]
        before = SeriesVerdict(_verdicts(published, earlier)[0]) if earlier else SeriesVerdict(())
    known = {v for r in before.releases for v in r.violations}
    own = after.release(period)
    caused = [v for r in after.releases if r.period != period for v in r.violations
              if v not in known]
    problems = list(own.violations) + caused
    found = _gate_findings(after, period, known)
    entry: dict[str, object] = {
        "verdict": "passed" if not problems else "violated", "model": own.model,
        "checked": own.checked, "attacks": own.attacks, "md_pending": own.md_pending,
        "dir": own.dir, "dsr": own.dsr, "ssgr": own.ssgr, "checker": "medanon.models"}
    if own.bound is not None:
        entry["bound"] = dict(own.bound)
    if problems:
        entry["violations"] = problems
        shown = "; ".join(problems[:_SHOWN])
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        error = PrivacyViolation(
            f"Release {period} was not published: the verify gate found {len(problems)} "
            f"violation(s) of {model}: {shown}{more}. Publish anyway only with "
            f"--publish-despite-violations (recorded in the manifest).")
        error.verification = entry
        error.verdict = found
        raise error
    return GateResult(entry, found)


def _holds_a_case(rows) -> Callable[[pd.DataFrame], bool]:
    """Whether a release holds one of the CaseIDs of ``rows`` (each read as ``astype(str)``).

    The candidate's ids are hashed once; when they and a release's are plain str and the
    candidate's distinct (read_view refuses repeats), the probe is the one the links and the
    dates read (``published.cells.case_positions``).
    """
    mine = case_ids(rows) if isinstance(rows, pd.DataFrame) else None
    cases: pd.Index | None = None

    def holds(theirs: pd.DataFrame) -> bool:
        nonlocal cases
        if mine is not None and mine.plain and mine.index.is_unique:
            other = case_ids(theirs)
            if other.plain:
                return bool((case_positions(mine.index, other.index) >= 0).any())
        if cases is None:
            cases = pd.Index(pd.unique(pd.Series(rows["case_id"]).astype(str)
                                       .to_numpy(dtype=object)))
        return bool((cases.get_indexer(pd.Index(theirs["case_id"].astype(str)
                                                .to_numpy(dtype=object))) >= 0).any())

    return holds


def md_whole(label: str, manifests: Mapping[str, dict]) -> list[str]:
    """The earlier releases a release of ``label`` changes in every group: the previous
    period's, when it declares 002's model (its MD part, over all its groups, is checked once
    the next period's release exists)."""
    previous = parse_period(label).shift(-1).label
    declared = ((manifests.get(previous) or {}).get("method") or {}).get("privacy_model")
    return [previous] if declared == HA_MODEL else []


def _gate_findings(after: SeriesVerdict, period: str, known: set[str]) -> SeriesVerdict:
    """What the gate found: the candidate's verdict, and each earlier release the candidate
    breaks with only the violations it causes (an earlier release's own, older violations, and
    in an incremental gate the groups it holds only in part, are not the candidate's)."""
    out = []
    for r in after.releases:
        if r.period == period:
            out.append(r)
            continue
        caused = tuple(v for v in r.violations if v not in known)
        if caused:
            # the release's ratios are not what the gate measured (in an incremental gate the
            # release is held only in part), so the findings carry none
            out.append(replace(r, verdict="violated", violations=caused, dir=None, dsr=None,
                               ssgr=None, bound=None))
    return SeriesVerdict(tuple(out), None, ())
