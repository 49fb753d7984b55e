"""Safety checks before a periodic release: what a steward would not do on purpose.

Each check refuses (``ValidationError`` naming the parameter that overrides it, or
``StoreError``) a publication that is legal for the method but almost certainly a mistake, and
that cannot be taken back once published:

* :func:`check_unprotected` — method ``none`` publishes raw data: only with
  ``allow_unprotected``, and never after a protected release of the same series (its CaseIDs
  would link straight into the protected releases and undo them);
* :func:`check_theta_terms` — a θ table or a protected term naming terms the data does not hold
  (``Deaht``, a lower-case ``suicidal ideation``) silently leaves the real term at the default
  θ, or the frequency rule's θ = 1, instead;
* :func:`check_gaps` — publishing past a missing or empty period locks that period out for ever
  (releases are published in time order);
* :func:`check_lifespan` — a CaseID life span shorter than the follow-up spans in the data leaves
  exactly the links the adversary makes outside the model;
* :func:`check_final` — a release marked final (HA's ``final``: grouped as if no case went on)
  ends its series; a later release would open its MD view, so none is published (no override),
  and ``final`` itself must name the latest period the data holds, for a method that waits for
  the next period.

The facts checked (the data's terms, its case spans, the periods' sizes) are private: they are
told to the operator and never written into a manifest. A manifest records only which of these
overrides the operator gave (:func:`acknowledgements`), an operator choice, whether or not it
was needed.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pandas as pd

from ..anonymize.base import Anonymizer
from ..errors import SeriesEndedError, StoreError, ValidationError
from ..models.theta import TableTheta, base_of, caps_of
from ..periods import parse_period
from ..published.links import longest_case_span

__all__ = ["Acknowledgements", "NOTHING_ACKNOWLEDGED", "OVERRIDES", "check_final", "check_gaps",
           "check_lifespan", "check_theta_terms", "check_unprotected", "data_facts",
           "final_releases", "run_checks"]

_Fact = TypeVar("_Fact")


def _fact(value: _Fact | Callable[[], _Fact]) -> _Fact:
    """A fact of the private data given as its value, or as the function that computes it
    (called only by a check that reads it)."""
    return value() if callable(value) else value


#: the parameters that override a check, in the order :attr:`Acknowledgements.recorded` lists them
OVERRIDES = ("allow_unprotected", "allow_unknown_terms", "allow_gap", "allow_short_lifespan")


@dataclass(frozen=True)
class Acknowledgements:
    """What the steward acknowledged for a series release, one value: each lets a check pass
    that would refuse. The command line's ``--allow-*`` flags and ``Publisher.publish``'s
    ``allow_*`` keywords make one.

    Attributes:
        unprotected: Publish with method ``none`` (:func:`check_unprotected`).
        unknown_terms: θ-table terms the data does not hold (:func:`check_theta_terms`).
        gap: Pass over a missing or empty period (:func:`check_gaps`).
        short_lifespan: A ``lifespan`` shorter than a case's span (:func:`check_lifespan`).
        seeded: A seeded (reproducible, not secret) randomness for a stored release
            (:func:`medanon.pipeline.publish.refuse_seeded_release`).
        violations: Keep a release the verify gate finds violating (its verdict says so).

    The first four, when given, are recorded in each manifest's ``method.acknowledged``
    (:attr:`recorded`); a seeded source is recorded by the manifest's randomness entry, and a
    kept violation by its verification entry.
    """

    unprotected: bool = False
    unknown_terms: bool = False
    gap: bool = False
    short_lifespan: bool = False
    seeded: bool = False
    violations: bool = False

    def __post_init__(self) -> None:
        for name in ("unprotected", "unknown_terms", "gap", "short_lifespan", "seeded",
                     "violations"):
            if not isinstance(getattr(self, name), bool):
                raise ValidationError(f"The {name!r} parameter of Acknowledgements must be True "
                                      f"or False; got {getattr(self, name)!r}.")

    @property
    def recorded(self) -> list[str]:
        """The safety overrides given, as each manifest's ``method.acknowledged`` names them
        (:data:`OVERRIDES` order)."""
        given = {"allow_unprotected": self.unprotected, "allow_unknown_terms": self.unknown_terms,
                 "allow_gap": self.gap, "allow_short_lifespan": self.short_lifespan}
        return [name for name in OVERRIDES if given[name]]


#: the default: no check is overridden
NOTHING_ACKNOWLEDGED = Acknowledgements()


def _is_protected(manifest: Mapping) -> bool:
    return bool((manifest.get("method") or {}).get("privacy_model"))


def check_unprotected(method: Anonymizer, published: Mapping[str, Mapping], *,
                      allow_unprotected: bool) -> None:
    """Refuse method ``none`` unless ``allow_unprotected``, and always after a protected release.

    Args:
        method: The configured method.
        published: The manifests already published in the series, by period.

    Raises:
        StoreError: a protected release is already published (no override: the raw CaseIDs
            would link into it).
        ValidationError: ``allow_unprotected`` is not given.
    """
    if method.privacy_model is not None:
        return
    protected = [p for p, m in published.items() if _is_protected(m)]
    if protected:
        models = sorted({str(published[p]["method"].get("name")) for p in protected})
        raise StoreError(f"Method {method.name!r} would publish unprotected records after the "
                         f"protected release(s) {', '.join(protected)} ({', '.join(models)}): "
                         f"their CaseIDs would link the raw records to those groups and undo "
                         f"them. Publish this period with the series' method.")
    if not allow_unprotected:
        raise ValidationError(f"The 'allow_unprotected' parameter must be given to publish with "
                              f"method {method.name!r}: it gives no privacy guarantee (only the "
                              f"identifiers are dropped).")


def _close_matches(term: str, vocabulary: Sequence[str], folded: Mapping[str, list[str]]) -> list[str]:
    exact_case = folded.get(term.casefold(), [])
    near = difflib.get_close_matches(term, vocabulary, n=3, cutoff=0.75)
    return list(dict.fromkeys([*exact_case, *near]))[:3]


def check_theta_terms(method: Anonymizer,
                      vocabulary: Iterable[str] | Callable[[], Iterable[str]], *,
                      allow_unknown_terms: bool, schema=None) -> list[str]:
    """Refuse a θ table or protected terms naming terms not in the data's vocabulary (every
    ingested period).

    Args:
        method: The configured method (its θ table from a file or level lists, and its
            protected terms, are checked).
        vocabulary: The sensitive terms of the ingested records (private; operator only), or
            the function that reads them: called only when the method's θ names a term.
        allow_unknown_terms: Accept them (a vocabulary that arrives in later quarters).
        schema: The data's schema, whose ``protected_terms`` are checked too (when the method
            has a θ at all).

    Returns:
        The unknown terms (empty when none, or when the method has no θ).

    Raises:
        ValidationError: unknown terms without ``allow_unknown_terms``; the message lists each
            with its close matches (a different case, a typo).
    """
    spec = getattr(method, "theta", None)
    if spec is None:
        return []
    base = base_of(spec)
    listed = set(base.table.overrides) if isinstance(base, TableTheta) else set()
    protected = {*caps_of(spec), *(getattr(schema, "protected_terms", None) or {})}
    if not listed and not protected:
        # nothing named, nothing unknown: the store's vocabulary (a scan of every ingested
        # period's sensitive columns, 0.18 s of a 2 x 450k store's release) is not read
        return []
    known = set(_fact(vocabulary))
    unknown = sorted(t for t in listed | protected if t not in known)
    if not unknown or allow_unknown_terms:
        return unknown
    ordered = sorted(known)
    folded: dict[str, list[str]] = {}
    for term in ordered:
        folded.setdefault(term.casefold(), []).append(term)
    shown = []
    for term in unknown[:10]:
        matches = _close_matches(term, ordered, folded)
        shown.append(f"{term!r}" + (f" (did you mean {' or '.join(map(repr, matches))}?)"
                                    if matches else " (no close match)"))
    more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
    source = f" in {base.source}" if isinstance(base, TableTheta) and base.source else ""
    in_table, in_caps = bool(set(unknown) & listed), bool(set(unknown) & protected)
    subject = " and the protected terms name" if in_table and in_caps else (
        " names" if in_table else "")
    subject = f"The theta table{source}{subject}" if in_table else "The protected terms name"
    consequence = "; ".join(
        text for given, text in (
            (in_table, "an unmatched term leaves the real one at the default theta"),
            (in_caps, "an unmatched protected term leaves the real one uncapped (theta = 1, no "
                      "limit, for a frequent term under the frequency rule)")) if given)
    raise ValidationError(
        f"{subject} {len(unknown)} term(s) that no ingested period holds: {'; '.join(shown)}"
        f"{more}. Terms are matched exactly (case included); {consequence}. Fix the terms, or "
        f"give the 'allow_unknown_terms' parameter for terms that arrive in later quarters.")


def check_gaps(labels: Sequence[str], reports: Mapping[str, int], published: Iterable[str], *,
               allow_gap: bool) -> list[str]:
    """Refuse to publish past a period that is missing or empty.

    Args:
        labels: The periods about to be published (time order).
        reports: Every ingested period and its number of reports.
        published: The periods already published.
        allow_gap: Publish anyway (the skipped periods can then never be published).

    Returns:
        The skipped periods (missing or empty), oldest first.

    Raises:
        ValidationError: a skipped period without ``allow_gap``.
    """
    if not labels:
        return []
    done = sorted(published, key=parse_period)
    known = sorted({*reports, *done}, key=parse_period)
    start = parse_period(known[0]) if known else parse_period(labels[0])
    last = parse_period(labels[-1])
    skipped, current = [], start
    while current <= last:  # every period up to the last one asked for, published ones aside
        if current.label not in done and reports.get(current.label, 0) == 0:
            skipped.append(current.label)
        current = current.shift(1)
    if skipped and not allow_gap:
        what = ", ".join(f"{p} ({'empty' if p in reports else 'not ingested'})" for p in skipped)
        raise ValidationError(
            f"Publishing up to {labels[-1]} would pass over {what}: releases are published in "
            f"time order, so a period passed over can never be published (and an empty one "
            f"publishes nothing). Ingest it first, or give the 'allow_gap' parameter if it will "
            f"never exist.")
    return skipped


def check_lifespan(method: Anonymizer, longest_span: int | Callable[[], int], *,
                   allow_short_lifespan: bool) -> None:
    """Refuse a CaseID life span shorter than the longest span of a case in the ingested data.

    Args:
        method: The configured method (its ``lifespan``; None links every release).
        longest_span: The most periods between a case's first and last ingested report
            (private; operator only), or the function that reads it: called only for a method
            with a ``lifespan`` (for the others a group by CaseID over every ingested record,
            0.24 s of a 2 x 450k store's release, is not run).
        allow_short_lifespan: Publish anyway (the manifest records the override).

    Raises:
        ValidationError: ``lifespan < longest_span`` without ``allow_short_lifespan``.
    """
    lifespan = getattr(method, "lifespan", None)
    if lifespan is None or allow_short_lifespan:
        return
    longest_span = _fact(longest_span)
    if longest_span <= lifespan:
        return
    raise ValidationError(
        f"The 'lifespan' parameter ({lifespan}) is shorter than the data's own follow-up span: "
        f"a case reports again {longest_span} periods after an earlier report. FAERS CaseIDs never "
        f"expire, so an adversary links those releases and the model, which assumes links at "
        f"most {lifespan} period(s) apart, does not cover them. Give lifespan >= {longest_span} "
        f"(or none), or the 'allow_short_lifespan' parameter to accept the gap.")


def final_releases(published: Mapping[str, Mapping]) -> list[str]:
    """The periods whose manifest marks them as their series' final release
    (``method.final``), oldest first."""
    return sorted((p for p, m in published.items() if (m.get("method") or {}).get("final") is True),
                  key=parse_period)


def check_final(method: Anonymizer, labels: Sequence[str], published: Mapping[str, Mapping],
                available: Iterable[str], *, final: bool) -> None:
    """Refuse any release after a final one, and a ``final`` that would not end the series.

    HA groups a period by which of its cases stop before the next period (md-records). A final
    release is grouped as if none went on (every case md): with no later release that is the
    adversary's view too, but a later release shows which cases did go on, and the MD-attack
    then narrows each group below what was checked. So a final release ends the series.

    Args:
        method: The configured method.
        labels: The periods about to be published, in time order.
        published: The manifests already published, by period.
        available: Every period the data holds (ingested).
        final: Whether the last of ``labels`` is to be published as the final release.

    Raises:
        SeriesEndedError: a final release is already published (a :class:`StoreError`).
        ValidationError: ``final`` for a method that does not wait for the next period, or for a
            period that is not the latest the data holds.
    """
    ended = final_releases(published)
    if ended:
        raise SeriesEndedError.after(ended[-1], refused=", ".join(labels) or None)
    if not final:
        return
    if not method.needs_next_period:
        raise ValidationError(f"The 'final' parameter applies to a method that waits for the next "
                              f"period (ha); method {method.name!r} publishes every period as it "
                              f"comes.")
    if not labels:
        return
    later = [p for p in available if parse_period(p) > parse_period(labels[-1])]
    if later:
        raise ValidationError(f"The 'final' parameter ends the series with {labels[-1]}, but the "
                              f"data holds later period(s) {', '.join(sorted(later, key=parse_period))}: "
                              f"publish up to the latest period, or leave out 'final'.")


def run_checks(method: Anonymizer, labels: Sequence[str], *, published: Mapping[str, Mapping],
               vocabulary: Iterable[str] | Callable[[], Iterable[str]],
               reports: Mapping[str, int], longest_span: int | Callable[[], int],
               acknowledged: Acknowledgements = NOTHING_ACKNOWLEDGED,
               schema=None, final: bool = False) -> list[str]:
    """Every check above, in order; returns the overrides given
    (:attr:`Acknowledgements.recorded`).

    Args:
        method: The configured method.
        schema: The data's schema (its ``protected_terms`` are checked with the θ table).
        labels: The periods about to be published, in time order.
        published: The manifests already published, by period.
        vocabulary, reports, longest_span: Facts of the private data (:func:`data_facts`, or
            the store's own queries); ``reports`` lists every period the data holds.
            ``vocabulary`` and ``longest_span`` may be the functions that read them: each is
            called only by a check that needs it (:func:`check_theta_terms`,
            :func:`check_lifespan`).
        acknowledged: What the steward acknowledged (:class:`Acknowledgements`).
        final: The last of ``labels`` is to end the series (:func:`check_final`).
    """
    check_final(method, labels, published, reports, final=final)
    check_unprotected(method, published, allow_unprotected=acknowledged.unprotected)
    check_theta_terms(method, vocabulary, allow_unknown_terms=acknowledged.unknown_terms,
                      schema=schema)
    check_gaps(labels, reports, published, allow_gap=acknowledged.gap)
    check_lifespan(method, longest_span, allow_short_lifespan=acknowledged.short_lifespan)
    return acknowledged.recorded


def data_facts(records: Mapping[str, pd.DataFrame], schema) -> tuple[set[str], dict[str, int], int]:
    """What the checks read from report-level records per period (the store answers the same
    with SQL): the sensitive vocabulary, the reports per period, the longest case span."""
    vocabulary: set[str] = set()
    for frame in records.values():
        for name in schema.sensitive:
            values = frame[name]
            if name in schema.multi_valued:
                vocabulary.update(str(v) for cell in values for v in cell)
            else:
                vocabulary.update(str(v) for v in values.dropna())
    longest = longest_case_span({label: frame[schema.case_id] for label, frame in records.items()})
    return vocabulary, {label: len(frame) for label, frame in records.items()}, longest
