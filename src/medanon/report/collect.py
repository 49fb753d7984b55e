"""Everything the HTML report shows about one release store, gathered without drawing anything.

One :class:`SeriesReport` per store: the periods as ingested, every metric of
:func:`medanon.metrics.evaluation.evaluate_series` (NIL, DIR/DSR/SSGR after the attacks, RR and
AR_rev, signal statistics original versus release), the ε ledger, each release's manifest and a
*generalization profile* of each release (how far each quasi-identifier was generalized, read from
the published rows themselves, not from the algorithm's bookkeeping), the ingest accounting of
every period (what happened to the DEMO rows on the way in), the verify gate's verdict on the
series as it stands now, and a :class:`SeriesCard` that says at a glance what was promised.

Every guarantee and caveat text comes from the privacy-model objects (:mod:`medanon.models`),
rebuilt from each release's manifest: the report never types a promise of its own, so it cannot
drift from what ``medanon verify`` checks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..accounting import dp_rows, format_epsilon, summarize_ledger
from ..accounting.ledger import LedgerSummary
from ..attacks.background import BackgroundKnowledge
from ..data.records import combine_super_records, super_records_of_rows
from ..data.schema import Schema
from ..errors import InputFormatError, StoreError, ValidationError
from ..hierarchies import Interval
from ..metrics.evaluation import (PublishedOriginals, evaluate_linked, evaluated_columns,
                                  evaluation_steps, original_columns, own_columns)
from ..metrics.screening import screening_for
from ..metrics.signals import SignalRule
from ..models.base import PrivacyModel, SeriesVerdict, model_from_manifest
from ..models.periodic import PPMSDPModel
from ..published.cells import SUPPRESSED
from ..pipeline.case_ids import CaseIds, mode_of
from ..published.format import original_as_published
from ..pipeline.history import StoreSeries
from ..pipeline.publish import EARLIER_INPUT_DIGEST
from ..published.series import PublishedSeries
from ..store import ReleaseStore

__all__ = ["Decision", "ModelCard", "QidProfile", "SeriesCard", "SeriesReport",
           "check_report_names", "comparison", "decision", "dedup_recall",
           "collect_series_report", "data_groups", "different_data", "generalization_profile",
           "ingest_accounting", "not_compared", "report_steps", "rule_name", "rule_tally",
           "same_data", "series_card", "signal_tally", "store_originals"]



@dataclass(frozen=True)
class QidProfile:
    """How one quasi-identifier was published in one release.

    Attributes:
        name: The QID column.
        kind: ``"numeric"`` or ``"categorical"``.
        exact: Share of cases published with a most specific value (a leaf, or a numeric
            point): their original value, unless ``perturbed``.
        suppressed: Share published as ``*`` (any value; the root of the hierarchy).
        missing: Share published empty: a missing value published as missing (the grouping
            methods keep missing values together; nothing was generalized).
        levels: Categorical only: share of cases per generalization level (0 = leaf, the
            hierarchy's height = root).
        mean_width: Numeric only: mean width of the published intervals, as a share of the
            range the release spans (0 = exact, 1 = the whole range).
        perturbed: The release's model declares this QID DP-perturbed: its most specific values
            are noisy, not original, and the report calls them "perturbed", never "exact".
    """

    name: str
    kind: str
    exact: float
    suppressed: float
    levels: dict[int, float] = field(default_factory=dict)
    mean_width: float | None = None
    perturbed: bool = False
    missing: float = 0.0

    @property
    def generalized(self) -> float:
        """Share published with a value between the most specific and ``*``."""
        return max(0.0, 1.0 - self.exact - self.suppressed - self.missing)

    @property
    def specific_label(self) -> str:
        """What the most specific published values are: ``"perturbed"`` or ``"exact"``."""
        return "perturbed" if self.perturbed else "exact"


def generalization_profile(series: PublishedSeries, period: str,
                           perturbed: Sequence[str] = ()) -> list[QidProfile]:
    """The :class:`QidProfile` of every QID of one published release; ``perturbed`` names the
    QIDs the release's model declares perturbed."""
    rows = series.releases[period]
    n = max(len(rows), 1)
    out = []
    for qid in series.qids:
        texts = rows[qid.name].fillna("").astype(str).str.strip()
        empty = (texts == "").to_numpy()
        missing = float(empty.sum()) / n
        texts = texts[~empty]
        whole = (texts == SUPPRESSED).to_numpy()  # "*": any value (empty cells counted apart)
        if qid.kind == "numeric":
            uniques = texts[~whole].unique()
            parsed = {t: Interval.parse(t) for t in uniques}
            lo = texts[~whole].map({t: iv.lo for t, iv in parsed.items()}).to_numpy(dtype=float)
            hi = texts[~whole].map({t: iv.hi for t, iv in parsed.items()}).to_numpy(dtype=float)
            span = float(hi.max() - lo.min()) if len(lo) else 0.0
            widths = np.concatenate([(hi - lo) / span if span > 0 else np.zeros(len(lo)),
                                     np.ones(int(whole.sum()))])
            out.append(QidProfile(qid.name, "numeric", exact=float((hi == lo).sum()) / n,
                                  suppressed=float(whole.sum()) / n,
                                  mean_width=float(widths.mean()) if len(widths) else 0.0,
                                  perturbed=qid.name in perturbed, missing=missing))
            continue
        tax = qid.taxonomy
        assert tax is not None  # QidInfo refuses a categorical QID without its taxonomy
        labels = texts.where(~whole, tax.root)
        heights = np.asarray(tax.subtree_height_array)[tax.encode(labels.tolist())]
        levels, counts = np.unique(heights, return_counts=True)  # each level once, ascending
        out.append(QidProfile(qid.name, "categorical", exact=float((heights == 0).sum()) / n,
                              suppressed=float((labels == tax.root).sum()) / n,
                              levels={int(level): float(c) / n for level, c in zip(levels, counts)},
                              perturbed=qid.name in perturbed, missing=missing))
    return out


# ------------------------------------------------------------------------------ the summary card
@dataclass(frozen=True)
class ModelCard:
    """The privacy model a run of releases declares (releases that share method, model, k,
    life span and ε; θ may differ per release and is merged).

    Attributes:
        method: The method's name (``ppms++``, ``ms``, ...).
        model: The declared model's name; None when the releases declare none.
        periods: The releases that declare it.
        scope: ``"release"`` (each release alone) or ``"series"`` (the linked releases);
            None without a model.
        attacks: The attacks the model answers (its own list).
        k: k, or None.
        theta_defaults: Distinct default θ over the releases.
        theta_overrides: term -> θ -> the releases that gave the term that θ.
        theta_rule: The θ specification as the method declares it (``{"kind": "frequency",
            ...}``), or None.
        theta_caps: The protected terms and their caps (the θ tables' ``caps``; a term whose
            cap changed between releases shows the largest, the weakest protection given).
        default_unbounded: The releases whose default θ is 1 (every term not listed unbounded).
        epsilon_per_case: ε one case spends in one release (exact text) for ε-DP models; None
            otherwise.
        epsilon_nominal: The declared ε of a perturbing model that is not ε-DP (paper
            variant), or None.
        lifespan: The declared CaseID life span in periods; None = every release.
        perturbed: The QIDs the model declares perturbed.
        guarantee: The model object's guarantee text (of the latest release; θ counts differ
            per release).
        does_not_guarantee: The model object's text of what it does not guarantee.
        acknowledged: The safety overrides the publisher gave (``method.acknowledged``:
            ``allow_gap``, ``allow_short_lifespan``, ...) with the releases that record each.
    """

    method: str
    model: str | None
    periods: tuple[str, ...]
    scope: str | None = None
    attacks: tuple[str, ...] = ()
    k: int | None = None
    theta_defaults: tuple[float, ...] = ()
    theta_overrides: dict[str, dict[float, tuple[str, ...]]] = field(default_factory=dict)
    theta_rule: dict | None = None
    theta_caps: dict[str, float] = field(default_factory=dict)
    default_unbounded: tuple[str, ...] = ()
    epsilon_per_case: str | None = None
    epsilon_nominal: str | None = None
    lifespan: int | None = None
    perturbed: tuple[str, ...] = ()
    guarantee: str | None = None
    does_not_guarantee: str | None = None
    acknowledged: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def unbounded(self) -> dict[str, tuple[str, ...]]:
        """Term -> the releases that gave it θ = 1 (no limit on its share of a group)."""
        out: dict[str, list[str]] = {}
        for term, values in self.theta_overrides.items():
            for value, periods in values.items():
                if value >= 1.0:
                    out.setdefault(term, []).extend(periods)
        return {t: tuple(sorted(set(p), key=self.periods.index)) for t, p in out.items()}


@dataclass(frozen=True)
class SeriesCard:
    """What a steward must see about a series at a glance.

    Attributes:
        models: One :class:`ModelCard` per run of releases declaring the same model.
        published: Published periods, in time order.
        held_back: Ingested periods not published (yet).
        empty: Published periods with no case at all.
        verdicts: Period -> the verify gate's verdict now (``passed``, ``violated``,
            ``no-model``), over the series as it stands (a later release can break an earlier
            one, so this may differ from the verdict recorded at publication).
        recorded: Period -> the verdict recorded in the manifest at publication (or None).
        violations: Every violation the gate finds now.
        verify_error: Why the gate could not run (a malformed manifest), or None.
        findings: Sentences that reconcile the gate's verdict with the attacks' numbers.
        max_epsilon: The largest ε a case spent over all releases (exact text), or None.
        ingest_dropped: DEMO rows that did not reach a release (deleted, superseded, duplicate,
            dropped for missing values, withheld), and the DEMO rows in total, over the
            published periods.
        suppressed_terms: Sensitive terms removed from published cases over the published
            periods (the manifests' ``counts.suppressed_terms``: one per case and term).
        missing_dropped: Reports dropped at ingest for a missing value over the published
            periods (``--drop-missing``), and whether the published periods kept such reports:
            True (every one), False (none), None (some did, or no ingest report says).
    """

    models: tuple[ModelCard, ...]
    published: tuple[str, ...]
    held_back: tuple[str, ...]
    empty: tuple[str, ...]
    verdicts: dict[str, str]
    recorded: dict[str, str | None]
    violations: tuple[str, ...]
    verify_error: str | None
    findings: tuple[tuple[str, str], ...]
    max_epsilon: str | None
    ingest_dropped: tuple[int, int]
    suppressed_terms: int = 0
    missing_dropped: tuple[int, bool | None] = (0, None)

    @property
    def passed(self) -> int:
        return sum(v == "passed" for v in self.verdicts.values())

    @property
    def unbounded(self) -> dict[str, tuple[str, ...]]:
        """Term -> the published releases that gave it θ = 1, over every model run; most
        releases first, then by name (:attr:`ModelCard.unbounded`)."""
        out: dict[str, list[str]] = {}
        for m in self.models:
            for term, periods in m.unbounded.items():
                out.setdefault(term, []).extend(periods)
        return dict(sorted(((t, tuple(p)) for t, p in out.items()),
                           key=lambda kv: (-len(kv[1]), kv[0].casefold())))

    @property
    def default_unbounded(self) -> tuple[str, ...]:
        """The releases whose default θ is 1 (every term they do not list is unbounded)."""
        return tuple(p for m in self.models for p in m.default_unbounded)

    @property
    def failed(self) -> int:
        return sum(v != "passed" for v in self.verdicts.values())


def _model(manifest: dict, label: str) -> PrivacyModel | None:
    try:
        return model_from_manifest(manifest, label)
    except InputFormatError:
        return None  # the gate reports the malformed manifest (SeriesCard.verify_error)


def _model_key(manifest: dict, model: PrivacyModel | None) -> tuple:
    method = str((manifest.get("method") or {}).get("name"))
    if model is None:
        return (method, None)
    params = {k: v for k, v in model.parameters().items() if k != "theta_table"}
    return (method, model.name, repr(sorted(params.items(), key=lambda kv: kv[0])))


def _model_cards(manifests: dict[str, dict], periods: Sequence[str]) -> tuple[ModelCard, ...]:
    runs: list[tuple[tuple, list[str], list[PrivacyModel | None]]] = []
    for label in periods:
        manifest = manifests.get(label) or {}
        model = _model(manifest, label)
        key = _model_key(manifest, model)
        if runs and runs[-1][0] == key:
            runs[-1][1].append(label)
            runs[-1][2].append(model)
        else:
            runs.append((key, [label], [model]))
    cards = []
    for key, labels, models in runs:
        method = key[0]
        latest = models[-1]
        theta_rule = ((manifests.get(labels[-1]) or {}).get("method") or {}).get(
            "parameters", {}).get("theta")
        if latest is None:
            # a declared model whose manifest cannot be read is not "no model": name it, with
            # no promise (the gate's error says what is wrong)
            declared = ((manifests.get(labels[-1]) or {}).get("method") or {}).get(
                "privacy_model")
            cards.append(ModelCard(method, None if declared is None
                                   else f"{declared} (manifest unreadable)", tuple(labels)))
            continue
        defaults: list[float] = []
        overrides: dict[str, dict[float, list[str]]] = {}
        caps: dict[str, float] = {}
        default_unbounded: list[str] = []
        for label, model in zip(labels, models):
            theta = getattr(model, "theta", None)
            if theta is None:
                continue
            if theta.default not in defaults:
                defaults.append(theta.default)
            if theta.default_unbounded:
                default_unbounded.append(label)
            for term, value in theta.overrides.items():
                overrides.setdefault(term, {}).setdefault(value, []).append(label)
            for term, cap in theta.caps.items():
                caps[term] = max(cap, caps.get(term, cap))
        # ε belongs to the one perturbing model: ε-DP per case (strict) or a nominal ε (paper)
        perturbing = latest if isinstance(latest, PPMSDPModel) else None
        cards.append(ModelCard(
            method=method, model=latest.name, periods=tuple(labels), scope=latest.scope,
            attacks=tuple(latest.attacks), k=getattr(latest, "k", None),
            theta_defaults=tuple(defaults),
            theta_overrides={t: {v: tuple(p) for v, p in sorted(by.items())}
                             for t, by in sorted(overrides.items(), key=lambda kv: kv[0].lower())},
            theta_rule=dict(theta_rule) if isinstance(theta_rule, dict) else None,
            theta_caps=dict(sorted(caps.items(), key=lambda kv: kv[0].casefold())),
            default_unbounded=tuple(default_unbounded),
            epsilon_per_case=(format_epsilon(perturbing.epsilon_per_case)
                              if perturbing is not None and perturbing.is_dp else None),
            epsilon_nominal=(format_epsilon(perturbing.epsilon)
                             if perturbing is not None and not perturbing.is_dp else None),
            lifespan=getattr(latest, "lifespan", None),
            perturbed=tuple(getattr(latest, "perturbed", ())),
            guarantee=latest.guarantee, does_not_guarantee=latest.not_protected,
            acknowledged=_acknowledged(manifests, labels)))
    return tuple(cards)


def _acknowledged(manifests: Mapping[str, dict], labels: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each safety override the publisher gave, with the releases whose manifest records it."""
    given: dict[str, list[str]] = {}
    for label in labels:
        for name in ((manifests.get(label) or {}).get("method") or {}).get("acknowledged") or []:
            given.setdefault(str(name), []).append(label)
    return {name: tuple(found) for name, found in given.items()}


def _worst(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _findings(cards: Sequence[ModelCard], releases: Sequence[dict], verdicts: dict[str, str],
              empty: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The gate's verdict against the attacks' numbers, per model run, in words.

    Each finding is ``(kind, sentence)`` with kind ``ok`` (the two agree), ``warn`` (the gate
    passes what the attacks break: the model does not cover that attack) or ``bad`` (the gate
    itself fails, or nothing vouches for the release).
    """
    by_period = {r["period"]: r for r in releases}
    out: list[tuple[str, str]] = []
    for card in cards:
        rels = [by_period[p] for p in card.periods if p in by_period and p not in empty]
        span = (card.periods[0] if len(card.periods) == 1
                else f"{card.periods[0]}–{card.periods[-1]}")
        if not rels or any(p not in verdicts for p in card.periods):
            continue  # nothing published to compare, or the gate could not run
        dir_, dsr = _worst([r["dir"] for r in rels]), _worst([r["dsr"] for r in rels])
        dir_hard = _worst([r.get("dir_hard") for r in rels])
        attacks = sorted({r["attacks"] for r in rels})
        numbers = f"DIR {dir_:.2f}, DSR {dsr:.2f}" if dir_ is not None and dsr is not None else ""
        failed = [p for p in card.periods if verdicts.get(p) not in (None, "passed")]
        if card.model is None:
            out.append(("bad", f"{span} ({card.method}): no privacy model is declared, so nothing "
                               f"vouches for these releases; the {'/'.join(attacks)}-attacks "
                               f"find {numbers}."))
            continue
        if failed:
            out.append(("bad", f"{span}: verify finds {len(failed)} release(s) that do not meet "
                               f"their own model {card.model} ({', '.join(failed)}); the attacks "
                               f"find {numbers}."))
            continue
        broken = (dir_ or 0) > 0 or (dsr or 0) > 0
        if not broken:
            out.append(("ok", f"{span}: verify passes {card.model} and the "
                              f"{'/'.join(attacks)}-attacks agree: no group falls below k or "
                              f"above its θ ({numbers})."))
            continue
        if card.scope == "release":
            reason = (f"{card.model} checks each release alone, while the attacks link releases "
                      f"through CaseIDs: the model does not cover linkage across releases")
        elif (dir_hard or 0) == 0 and any(r.get("attacker") == "likelihood-weighted"
                                          for r in rels):
            reason = ("the gate checks the exclusions that hold for sure (DIR hard 0), while "
                      "the likelihood-weighted attacker also weighs the noisy values, which the "
                      "model bounds only with dp-aware grouping")
        elif card.lifespan is not None:
            reason = (f"the model assumes CaseIDs are linked only across releases at most "
                      f"{card.lifespan} period(s) apart, while the attacks link every release "
                      f"(FAERS CaseIDs never expire)")
        else:
            reason = ("the attacks measured here go beyond what the model checks (e.g. the MD "
                      "attack, or an adversary who keeps excludable records)")
        out.append(("warn", f"{span}: verify passes {card.model}, yet the "
                            f"{'/'.join(attacks)}-attacks find {numbers}: {reason} (see what "
                            f"the model does not protect)."))
    return tuple(out)


@dataclass(frozen=True)
class SeriesReport:
    """What the report shows about one store.

    Attributes:
        name: Short name of the series (the store's file name unless given).
        store: The store's path, as given.
        schema: The store schema's name.
        ingested: One dict per ingested period (``period``, ``n_reports``, ``n_cases``,
            ``published``, ...), as :meth:`ReleaseStore.periods` gives it.
        evaluation: :func:`evaluate_series`'s result (``{"releases": [...]}``), published
            periods only.
        manifests: Period -> manifest of each published release.
        profiles: Period -> :class:`QidProfile` of each QID.
        ledger: The ε ledger summary, or None when no DP release was made.
        rules: The signal rules evaluated.
        accounting: :func:`ingest_accounting` rows, one per ingested period.
        card: The :class:`SeriesCard`.
        inputs: Period -> SHA-256 of the release's input records (the store's operator-only
            ``input_sha256``; None when the store has none), to tell series of the same data
            from others (:func:`same_data`). Operator-only, like the report: never shown.
        input_versions: Period -> what its digest hashes (the store's ``input_digest``
            detail; ``csv-v1`` where a store recorded none): two digests of different versions
            are not comparable, and those periods are judged by their counts.
    """

    name: str
    store: str
    schema: str
    ingested: list[dict]
    evaluation: dict
    manifests: dict[str, dict]
    profiles: dict[str, list[QidProfile]]
    ledger: LedgerSummary | None
    rules: tuple[SignalRule, ...]
    accounting: list[dict] = field(default_factory=list)
    card: SeriesCard | None = None
    inputs: dict[str, str | None] = field(default_factory=dict)
    input_versions: dict[str, str] = field(default_factory=dict)

    @property
    def summary_card(self) -> SeriesCard:
        """:attr:`card`, for what needs it (the page's summary, :func:`decision`).

        :func:`collect_series_report` always sets it; only a report built by hand for its
        figures alone goes without, and nothing asks such a report for its card."""
        assert self.card is not None, f"the report of {self.name!r} was built without its card"
        return self.card

    @property
    def releases(self) -> list[dict]:
        return self.evaluation["releases"]

    @property
    def periods(self) -> list[str]:
        return [r["period"] for r in self.releases]

    @property
    def empty_periods(self) -> list[str]:
        """Published releases without a single case: their ratios (NIL, DIR, ...) are 0/0."""
        return [r["period"] for r in self.releases if not r["cases"]]


#: The FAERS ingest report's per-field missing counts, in the order the accounting shows them.
MISSING_FIELDS = ("age", "sex", "weight", "indications", "reactions")


def ingest_accounting(ingested: Sequence[dict], reports: dict[str, dict],
                      manifests: dict[str, dict]) -> list[dict]:
    """Where the DEMO rows of each period went: DEMO rows → deleted, superseded, duplicate,
    dropped for missing values (by field) → reports ingested → cases → released.

    Args:
        ingested: :meth:`ReleaseStore.periods` rows.
        reports: Period -> the ingest report the store kept (:meth:`ReleaseStore.ingest_report`).
        manifests: Period -> manifest of each published release.

    Returns:
        One dict per period: ``period``, ``demo_rows``, ``superseded``, ``duplicates`` (DEMO rows
        dropped as a repeat of a kept report: the same report id, or the same case and
        caseversion under another id), ``conflicting`` (those whose content differs from the
        kept report's: conflicting repeats of a report id and every same-version report),
        ``deleted``, ``dropped``, ``kept_missing``, ``missing`` (field ->
        reports missing it, implausible values included; a report may miss several),
        ``reports``, ``cases``, ``published``, ``released`` and ``withheld`` (None when not
        published), ``lost`` (DEMO rows that reached no release; None when unknown).
        Counts the ingest report does not hold are None.
    """
    out = []
    for row in ingested:
        period = row["period"]
        rep = reports.get(period) or {}
        demo = rep.get("demo_rows")
        superseded = rep.get("superseded_reports")
        read = rep.get("reports_read")
        duplicates: int | None
        conflicting: int | None
        if "duplicate_rows" in rep:  # counted by name since the ingest report has them
            ties = int(rep.get("same_version_reports") or 0)
            duplicates = int(rep["duplicate_rows"]) + ties
            conflicting = int(rep.get("conflicting_duplicates") or 0) + ties
        else:  # an older ingest report: what the other counts leave
            duplicates = (demo - superseded - read
                          if demo is not None and superseded is not None and read is not None
                          and demo - superseded - read >= 0 else None)
            conflicting = None
        manifest = manifests.get(period)
        counts = (manifest or {}).get("counts") or {}
        released = counts.get("cases") if manifest is not None else None
        withheld = counts.get("suppressed") if manifest is not None else None
        missing = rep.get("missing") or {}
        out.append({
            "period": period, "demo_rows": demo, "superseded": superseded,
            "duplicates": duplicates, "conflicting": conflicting,
            "deleted": rep.get("deleted_reports"),
            "dropped": rep.get("dropped_reports"), "kept_missing": bool(rep.get("kept_missing")),
            "missing": {f: missing.get(f) for f in MISSING_FIELDS if f in missing},
            "reports": rep.get("reports", row.get("n_reports")),
            "cases": rep.get("cases", row.get("n_cases")),
            "published": bool(row.get("published")), "released": released,
            "withheld": withheld,
            "lost": (demo - released if demo is not None and released is not None else None),
        })
    return out


def series_card(manifests: dict[str, dict], releases: Sequence[dict], ingested: Sequence[dict],
                accounting: Sequence[dict], verdict: SeriesVerdict | None,
                verify_error: str | None, ledger: LedgerSummary | None) -> SeriesCard:
    """The :class:`SeriesCard` of a series (see :func:`collect_series_report`)."""
    published = tuple(r["period"] for r in releases)
    held = tuple(row["period"] for row in ingested if not row.get("published"))
    empty = tuple(r["period"] for r in releases if not r["cases"])
    cards = _model_cards(manifests, published)
    verdicts = ({r.period: r.verdict for r in verdict.releases} if verdict is not None else {})
    recorded = {p: ((manifests.get(p) or {}).get("verification") or {}).get("verdict")
                for p in published}
    lost = [row for row in accounting if row["published"] and row["lost"] is not None]
    return SeriesCard(
        models=cards, published=published, held_back=held, empty=empty, verdicts=verdicts,
        recorded=recorded, violations=verdict.violations if verdict is not None else (),
        verify_error=verify_error, findings=_findings(cards, releases, verdicts, empty),
        max_epsilon=ledger.max_epsilon if ledger is not None else None,
        ingest_dropped=(sum(row["lost"] for row in lost), sum(row["demo_rows"] for row in lost)),
        suppressed_terms=sum(int(((manifests.get(p) or {}).get("counts") or {})
                                 .get("suppressed_terms") or 0) for p in published),
        missing_dropped=_missing_dropped([row for row in accounting if row["published"]]))


def _missing_dropped(rows: Sequence[dict]) -> tuple[int, bool | None]:
    """Reports dropped for missing values over ``rows`` (accounting rows) and whether they all
    kept such reports (True), none did (False), or it is mixed or unknown (None)."""
    flags = {row["kept_missing"] for row in rows if row["demo_rows"] is not None}
    kept = flags.pop() if len(flags) == 1 else None
    return sum(int(row["dropped"] or 0) for row in rows), kept


def missing_sentence(missing: tuple[int, bool | None]) -> str:
    """What ingest did with reports lacking a QID or sensitive value, in the summary card's
    words (``SeriesCard.missing_dropped``)."""
    dropped, kept = missing
    if kept is True:
        return "reports lacking a value were kept (published as missing)"
    if kept is False:
        return f"{dropped:,} report(s) lacking a value dropped at ingest (--drop-missing)"
    return (f"{dropped:,} report(s) lacking a value dropped at ingest in some periods "
            "(--drop-missing), kept in others")


def store_originals(db: ReleaseStore, periods: Sequence[str], *, lazy: bool = False,
                    columns: Sequence[str] | None = None,
                    ) -> tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame]]:
    """The original super records of each period (as the algorithms saw them, and as
    published-format strings for the signal counts), which the metrics compare releases with.

    With ``lazy``, a period is read from the store (which must stay open) when first asked
    for, and only the last period asked for is kept: what lets ``evaluate`` hold one period's
    records at a time; the published-format strings are made only when asked for.

    With ``columns`` (and ``lazy``), the super records hold the case id, the period, every
    QID and only those of ``columns`` the schema names: each column of a super record is a
    function of the same column of the case's reports alone (:func:`combine_super_records`),
    so these columns are what the full records give, and the others (a dozen multi-valued
    columns of FAERS, each a tuple per report) are never read (issue 30).

    The super records carry the CaseIDs the series publishes (keyed pseudonyms under the
    store's key, issue 41; :func:`store_case_ids`), so that they meet their published rows.
    """
    if lazy:
        cache = _OnePeriod(db, periods, columns)
        return _LazyOriginals(cache, published=False), _LazyOriginals(cache, published=True)
    if columns is not None:
        raise ValidationError("The 'columns' parameter of store_originals needs lazy=True.")
    hierarchies = db.schema.load_hierarchies()
    frames, rows = {}, {}
    published = store_case_ids(db)
    for period in periods:
        supers = published.records(
            combine_super_records(db.records(period), db.schema, hierarchies).frame,
            db.schema.case_id)
        frames[period] = supers
        rows[period] = original_as_published(supers, db.schema)
    return frames, rows


def store_case_ids(db: ReleaseStore) -> CaseIds:
    """How the store's series publishes CaseIDs (real for a store without releases or
    without a key: nothing to map)."""
    key = db.case_key()
    if mode_of(db.manifests()) == "pseudonym" and key is not None:
        return CaseIds("pseudonym", key)
    return CaseIds.real()


class _OnePeriod:
    """The original records of the last period asked for (see :func:`store_originals`)."""

    def __init__(self, db: ReleaseStore, periods: Sequence[str],
                 columns: Sequence[str] | None = None):
        self.db, self.periods = db, tuple(periods)
        self.hierarchies = db.schema.load_hierarchies()
        self.columns = None if columns is None else list(columns)
        self.schema = db.schema if columns is None else _narrowed(db.schema, columns)
        self.case_ids = store_case_ids(db)
        self.period: str | None = None
        self.frame: pd.DataFrame | None = None
        self.rows: pd.DataFrame | None = None

    def get(self, period: str, *, published: bool) -> pd.DataFrame:
        if period not in self.periods:
            raise KeyError(period)
        if period != self.period:
            self.period = self.frame = self.rows = None  # drop the previous period first
            # the list columns as codes, as the store read them: the super records' unions are
            # made from the codes, and no row's tuple is made (issue 43)
            records = (self.db.coded_records(period) if self.columns is None
                       else self.db.coded_record_columns(period, self.schema.all_columns))
            # the pseudonyms of the periods read before serve no other period but the few
            # cases it shares with them: held, each lookup rebuilt the hash table of every
            # CaseID read so far and grew the held arrays (24 x 20k: 1.3 s of 2.4 s), where
            # hashing a period's follow-ups again costs a tenth of that (issue 43)
            self.case_ids.forget()
            supers, _ = super_records_of_rows(records, self.schema, self.hierarchies)
            del records
            self.frame = self.case_ids.records(supers.frame, self.schema.case_id)
            self.period = period
        # the frame is read above whenever the period changes, and kept with it otherwise
        assert self.frame is not None
        if not published:
            return self.frame
        if self.rows is None:
            self.rows = original_as_published(self.frame, self.schema)
        return self.rows


def _narrowed(schema: Schema, columns: Sequence[str]) -> Schema:
    """``schema`` with every QID and, of its other columns, only ``columns`` (no identifier
    or private column: the super records then have no ``report_ids``)."""
    wanted = set(columns)
    return schema.model_copy(update={
        "sensitive": tuple(c for c in schema.sensitive if c in wanted),
        "multi": tuple(c for c in schema.multi if c in wanted),
        "insensitive": tuple(c for c in schema.insensitive if c in wanted),
        "dates": {c: g for c, g in schema.dates.items() if c in wanted},
        "identifiers": (), "private": (),
    })


class _LazyOriginals(Mapping):
    def __init__(self, cache: _OnePeriod, *, published: bool):
        self._cache, self._published = cache, published

    def __getitem__(self, period: str) -> pd.DataFrame:
        return self._cache.get(period, published=self._published)

    def __iter__(self):
        return iter(self._cache.periods)

    def __len__(self) -> int:
        return len(self._cache.periods)


def collect_series_report(store: str | Path, *, rules: Sequence[SignalRule] = (),
                          background: BackgroundKnowledge | None = None, md: bool = False,
                          name: str | None = None,
                          progress: Callable[[str], None] | None = None) -> SeriesReport:
    """Read a store and compute everything its report section shows.

    Args:
        store: The release store (DuckDB file); it is opened read-only in effect (nothing is
            written to it).
        rules: Signal rules to compare original versus release.
        background: Medical background knowledge for the RR/AR bias (000 §E).
        md: Apply 002's MD-attack to every release (see :func:`evaluate_series`).
        name: Name shown for the series (default: the store's file name).
        progress: Called with a short step name as the work advances.

    Raises:
        StoreError: the store does not exist, is not a medanon store, or publishes nothing.
    """
    step = progress or (lambda _step: None)
    path = Path(store)
    shown = name or path.name
    with ReleaseStore.open(path, read_only=True) as db:
        published = db.published_periods()
        if not published:
            raise StoreError(f"Nothing is published in {str(path)!r} yet: run 'medanon release' "
                             "first.")
        # the first step as soon as the store is open, so that a log shows the work started
        # before the first release is measured (issue 44: the first line came after 21 s)
        step(f"{shown}: opened")
        frame = db.periods()
        ingested = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
        ingest_reports = {row["period"]: db.ingest_report(row["period"]) for row in ingested}
        # read a release at a time, with what it links to, never the whole series at once
        # (issue 30): the manifests, then each release when it is measured
        reader = StoreSeries(db)
        series = reader.skeleton()
        if background is not None:
            background.check(series.qids)
        ledger_rows = db.ledger()
        schema_name = db.schema.name
        # operator-only, as the report is: what tells series of the same data apart
        operator = {p: db.operator_record(p) for p in series.periods}
        inputs = {p: record["input_sha256"] for p, record in operator.items()}
        input_versions = {
            p: str(record["private_details"].get("input_digest", EARLIER_INPUT_DIGEST))
            for p, record in operator.items()}
        options = screening_for(set(db.release_columns()))
        columns = original_columns(list(rules), options)
        originals, _ = store_originals(db, series.periods, lazy=True, columns=columns)
        # each release with its cases' rows elsewhere, only the columns the measures read
        # (as medanon evaluate reads it; verify's refusal is the report's to show, below)
        linked_of = functools.partial(
            reader.linked_release, columns=evaluated_columns(db.schema, list(rules), options),
            own_columns=own_columns(db.schema, list(rules), options), groups=False)
        evaluation = evaluate_linked(series.periods, linked_of, originals,
                                     PublishedOriginals(originals, db.schema, columns),
                                     hierarchies=series.hierarchies, rules=list(rules),
                                     background=background, md=md, screening=options,
                                     progress=lambda what: step(f"{shown}: {what}"))
        # the gate's verdict now, over the whole series: a later release can break an earlier
        # one, which the verdict recorded at publication cannot show
        try:
            verdict, verify_error = reader.verify(), None
        except InputFormatError as exc:
            verdict, verify_error = None, str(exc)
        # the operator's view: the report is the operator's, and counts of the input and of
        # the withheld cases are operator-only facts the manifests no longer hold (issue 41)
        with_facts = db.operator_manifests()
        manifests = {p: dict(with_facts.get(p) or series.manifests.get(p, {}))
                     for p in series.periods}
        perturbed = {p: tuple(getattr(_model(manifests[p], p), "perturbed", ()))
                     for p in series.periods}
        profiles = {p: generalization_profile(_one_release(db, series, p), p, perturbed[p])
                    for p in series.periods}
    step(f"{shown}: verified")
    # a ledger of paper-variant rows only spent no ε (their nominal ε bounds nothing)
    ledger = summarize_ledger(ledger_rows) if len(dp_rows(ledger_rows)) else None
    accounting = ingest_accounting(ingested, ingest_reports, manifests)
    card = series_card(manifests, evaluation["releases"], ingested, accounting, verdict,
                       verify_error, ledger)
    return SeriesReport(name=shown, store=str(store), schema=schema_name,
                        ingested=ingested, evaluation=evaluation, manifests=manifests,
                        profiles=profiles, ledger=ledger, rules=tuple(rules),
                        accounting=accounting, card=card, inputs=inputs,
                        input_versions=input_versions)


def report_steps(stores: Sequence[str | Path], *, rules: Sequence[SignalRule] = ()) -> int:
    """How many progress steps :func:`collect_series_report` of each store and
    :func:`medanon.report.html.render_report` of them all call in all: per store, its opening,
    each release and screening scope evaluated (:func:`evaluation_steps`) and its verification;
    then the figures and each series' section. A store that cannot be read counts 0 (its
    error comes from :func:`collect_series_report`, in the user's words)."""
    total = 1 + len(stores)
    for store in stores:
        try:
            with ReleaseStore.open(Path(store), read_only=True) as db:
                periods = db.published_periods()
                options = screening_for(set(db.release_columns()))
        except (StoreError, InputFormatError, OSError):
            continue
        total += 2 + evaluation_steps(periods, rules=list(rules), screening=options)
    return total


def _one_release(db: ReleaseStore, series: PublishedSeries, period: str) -> PublishedSeries:
    """Release ``period`` alone (its rows, of them only the QIDs, and its manifest), read
    through ``series``' QIDs: what :func:`generalization_profile` reads."""
    rows = db.release_rows(period, columns=[q.name for q in series.qids])
    return PublishedSeries({period: rows}, {period: series.manifests[period]},
                           series.qids, series.sensitive, series.source)


def signal_tally(report: SeriesReport) -> tuple[int, int, int]:
    """(original signals kept, original signals lost, spurious signals) over all releases."""
    kept = lost = spurious = 0
    for rel in report.releases:
        for s in rel.get("signals", []):
            before, after = s["original"]["signal"], s["release"]["signal"]
            kept += before and after
            lost += before and not after
            spurious += after and not before
    return kept, lost, spurious


def rule_tally(report: SeriesReport) -> list[dict]:
    """Per rule, over all releases: ``rule`` (its name), ``original`` (releases where the
    original data signals), ``kept``, ``lost``, ``spurious`` and ``infinite`` (releases where
    the original PRR is infinite)."""
    rows: dict[str, dict] = {}
    for rel in report.releases:
        for s in rel.get("signals", []):
            name = rule_name(s["rule"])
            row = rows.setdefault(name, {"rule": name, "original": 0, "kept": 0, "lost": 0,
                                         "spurious": 0, "infinite": 0})
            before, after = s["original"]["signal"], s["release"]["signal"]
            row["original"] += before
            row["kept"] += before and after
            row["lost"] += before and not after
            row["spurious"] += after and not before
            row["infinite"] += s["original"]["prr"] == "inf"
    return list(rows.values())


def rule_name(rule: dict) -> str:
    """A rule as the report names it: ``DRUG -> Reaction | condition``."""
    condition = f" | {rule['condition']}" if rule.get("condition") else ""
    return f"{rule['drug']} -> {rule['reaction']}{condition}"


def check_report_names(reports: Sequence[SeriesReport]) -> None:
    """Series shown side by side need distinct names."""
    names = [r.name for r in reports]
    if len(set(names)) != len(names):
        raise ValidationError(f"Two stores have the same name ({', '.join(names)}); give "
                              "distinct --name values.")


# ------------------------------------------------------------------------- what to publish
#: Below this share of the original's MGPS signals kept (each case once, the ``dedup`` scope),
#: the decision asks for care: an analyst would miss one signal in five or more.
RECALL_CARE = 0.8


@dataclass(frozen=True)
class Decision:
    """What to do with a series, read from its :class:`SeriesCard` and the attacks' numbers.

    Attributes:
        state: ``"publish"``, ``"care"`` (publish with care) or ``"hold"`` (do not publish as
            is).
        line: The decision in one sentence.
        reasons: Why, one short sentence each: what blocks publication first, then what needs
            care, then what was checked and found clean.
        blocking: The reasons that make the state ``hold``.
        care: The reasons that make the state ``care`` (when nothing blocks).
    """

    state: str
    line: str
    reasons: tuple[str, ...]
    blocking: tuple[str, ...] = ()
    care: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return {"publish": "Publish", "care": "Publish with care",
                "hold": "Do not publish as is"}[self.state]


def dedup_recall(report: SeriesReport) -> float | None:
    """MGPS recall (EB05 ≥ 2) of the screening's ``dedup`` scope (each case once, as FDA pools
    FAERS), or None when the screening did not run."""
    screening = report.evaluation.get("screening") or {}
    try:
        return screening["summary"]["dedup"]["mgps"]["recall"]
    except (KeyError, TypeError):
        return None


def decision(report: SeriesReport) -> Decision:
    """The decision on one series (:class:`Decision`), derived from its card's verdicts and
    findings and the attacks' numbers; nothing here is a verdict of its own."""
    card = report.summary_card
    filled = [r for r in report.releases if r["cases"]]
    blocking: list[str] = []
    care: list[str] = []
    clean: list[str] = []
    # a release without a model is named below (nothing vouches for it), not as failing it
    failed = [p for p in card.published if p not in card.empty
              and card.verdicts.get(p) not in (None, "passed", "no-model")]
    if card.verify_error:
        blocking.append(f"verify could not run: {card.verify_error}")
    elif failed:
        blocking.append(f"{', '.join(failed)} fail{'s' if len(failed) == 1 else ''} verify: "
                        f"{len(failed)} of {len(card.published) - len(card.empty)} release(s) "
                        "do not meet their own privacy model")
    no_model = [m for m in card.models if m.model is None]
    if no_model:
        blocking.append(f"{_periods_text([p for m in no_model for p in m.periods])} declare "
                        "no privacy model: nothing vouches for them")
    reidentified = sum(int(r.get("reidentified") or 0) for r in filled)
    worst_dir = max((r["dir"] for r in filled if r.get("dir") is not None), default=None)
    worst_dsr = max((r["dsr"] for r in filled if r.get("dsr") is not None), default=None)
    worst_hard = max((r["dir_hard"] for r in filled if r.get("dir_hard") is not None),
                     default=None)
    likelihood = any(r.get("attacker") == "likelihood-weighted" for r in filled)
    if reidentified:
        blocking.append(f"the attacks re-identify {reidentified:,} case(s) (a candidate set "
                        "of one)")
    if worst_dir:
        where = [r["period"] for r in filled if r.get("dir")]
        text = (f"the attacks narrow up to {worst_dir:.0%} of the groups below k candidates "
                f"(max DIR {worst_dir:.2f}, in {_periods_text(where)})")
        # a likelihood-weighted attacker alone (no sure exclusion) is a weaker finding
        (care if likelihood and not worst_hard else blocking).append(text)
    if worst_dsr:
        blocking.append(f"the attacks push a sensitive term above its θ in up to "
                        f"{worst_dsr:.0%} of the groups (max DSR {worst_dsr:.2f})")
    for kind, text in card.findings:
        if kind == "warn" and not (worst_dir or worst_dsr or reidentified):
            care.append(text)  # the gate passes what the model does not cover
    unbounded = card.unbounded
    if unbounded:
        latest = card.published[-1] if card.published else None
        now = sum(latest in p for p in unbounded.values())
        care.append(f"{len(unbounded)} sensitive term(s) have no bound (θ = 1) in some release, "
                    f"{now} in the latest ({latest}): a group may hold only cases with such a "
                    "term")
    if card.default_unbounded:
        care.append(f"θ = 1 by default in {_periods_text(card.default_unbounded)}: every term "
                    "those releases do not list is unbounded")
    if card.empty:
        care.append(f"{_periods_text(card.empty)} published empty (no case): nothing checked "
                    "there")
    if card.held_back:
        care.append(f"{_periods_text(card.held_back)} ingested but not published (held back)")
    withheld = [(r["period"], r["withheld"]) for r in report.accounting
                if r["published"] and r.get("withheld")]
    if withheld:
        care.append(f"{sum(n for _, n in withheld):,} case(s) withheld by the method in "
                    f"{_periods_text([p for p, _ in withheld])}")
    recall = dedup_recall(report)
    if recall is not None and recall < RECALL_CARE:
        care.append(f"the release keeps {recall:.0%} of the original's MGPS signals (each case "
                    f"once); below {RECALL_CARE:.0%}, an analyst misses real signals")
    if not blocking:
        if filled and not failed and not card.verify_error:
            clean.append(f"every release passes its model ({len(filled)} of {len(filled)} "
                         "verified now)")
        if filled and not (worst_dir or worst_dsr or reidentified):
            clean.append("the attacks find nothing more (max DIR 0.00, max DSR 0.00, no case "
                         "re-identified)")
    if recall is not None and recall >= RECALL_CARE:
        clean.append(f"the release keeps {recall:.0%} of the original's MGPS signals (each "
                     "case once)")
    if blocking:
        state = "hold"
        line = f"Do not publish as is: {blocking[0]}" + (
            f"; {len(blocking) - 1} more below" if len(blocking) > 1 else "") + "."
    elif not filled:
        state, line = "hold", "Do not publish as is: no release holds a case, nothing was checked."
        blocking.append("no release holds a case")
    elif care:
        state = "care"
        line = f"Publish with care: {care[0]}" + (
            f"; {len(care) - 1} more below" if len(care) > 1 else "") + "."
    else:
        state = "publish"
        line = ("Publish: every release passes its model and the attacks find nothing more"
                + (f"; {clean[-1]}" if recall is not None else "") + ".")
    return Decision(state, line, tuple(blocking + care + clean), tuple(blocking), tuple(care))


def _periods_text(periods: Sequence[str]) -> str:
    periods = list(periods)
    if len(periods) <= 3:
        return ", ".join(periods)
    return f"{len(periods)} releases, {periods[0]}–{periods[-1]}"


# ------------------------------------------------------------------- series of the same data
def different_data(a: SeriesReport, b: SeriesReport) -> str | None:
    """Why two series are not of the same data, in words; None when they are.

    Two series are of the same data when they publish the same periods from the same input:
    every period's input digest (the store's operator-only ``input_sha256``, which hashes the
    period's input records) is equal; where a store has no digest for a period (an older
    store), or the two digests hash different things (their versions differ: ``csv-v1``
    against ``columns-v3``), its ingested reports and cases must be equal in number instead.
    Only such series can be compared: a risk or a recall measured on other cases, or over other periods, says
    nothing about which publication is better.
    """
    if a.periods != b.periods:
        return (f"they publish different periods ({a.name} {_periods_text(a.periods)}, "
                f"{b.name} {_periods_text(b.periods)})")
    ca, cb = ({row["period"]: (row.get("n_reports"), row.get("n_cases")) for row in r.ingested}
              for r in (a, b))
    for period in a.periods:
        da, db = a.inputs.get(period), b.inputs.get(period)
        comparable = (a.input_versions.get(period, EARLIER_INPUT_DIGEST)
                      == b.input_versions.get(period, EARLIER_INPUT_DIGEST))
        if da is not None and db is not None and comparable:
            if da != db:
                return f"their input records of {period} differ (another input digest)"
        elif ca.get(period) != cb.get(period):
            return f"their input of {period} differs (other report and case counts)"
    return None


def same_data(a: SeriesReport, b: SeriesReport) -> bool:
    """Whether two series are of the same data (:func:`different_data`)."""
    return different_data(a, b) is None


def data_groups(reports: Sequence[SeriesReport]) -> list[list[SeriesReport]]:
    """The series grouped by their data (:func:`same_data`), in the order given: each group
    holds the series of one input over the same periods."""
    groups: list[list[SeriesReport]] = []
    for r in reports:
        for group in groups:
            if same_data(group[0], r):
                group.append(r)
                break
        else:
            groups.append([r])
    return groups


def not_compared(reports: Sequence[SeriesReport]) -> list[str]:
    """One sentence per two groups of series of different data (:func:`data_groups`): they
    are shown side by side but not compared. Empty when every series is of the same data."""
    groups = data_groups(reports)
    out = []
    for i, first in enumerate(groups):
        for second in groups[i + 1:]:
            why = different_data(first[0], second[0])
            out.append(f"Not compared: {_named(first)} and {_named(second)} are of "
                       f"different data: {why}. Neither is called safer or more useful than "
                       "the other; only series of the same input are compared.")
    return out


def _named(group: Sequence[SeriesReport]) -> str:
    """A group of :func:`data_groups` in a sentence: ``series A`` or ``series A, B (of one
    input)``."""
    names = ", ".join(r.name for r in group)
    return f"series {names}" + (" (of one input)" if len(group) > 1 else "")


def comparison(reports: Sequence[SeriesReport]) -> list[str]:
    """With several series of the same data: which is better on risk and which on utility, in
    words. Series of different data are never compared (:func:`not_compared` says so): each
    group of :func:`data_groups` with two series or more is compared on its own, its lines
    led by its series' names when there are several groups.
    """
    groups = data_groups(reports)
    out = []
    for group in groups:
        lines = _compared(group)
        if len(groups) > 1:
            lines = [f"Of one input, {', '.join(r.name for r in group)}: {line}"
                     for line in lines]
        out += lines
    return out


def _compared(reports: Sequence[SeriesReport]) -> list[str]:
    """:func:`comparison` of series of the same data.

    Risk: the decision's state first (hold, care, publish), then cases re-identified, max DIR,
    max DSR and the terms left at θ = 1. Utility: MGPS recall (each case once), then mean NIL.
    """
    if len(reports) < 2:
        return []
    order = {"hold": 2, "care": 1, "publish": 0}

    def risk(r: SeriesReport) -> tuple:
        filled = [x for x in r.releases if x["cases"]]
        return (order[decision(r).state],
                sum(int(x.get("reidentified") or 0) for x in filled),
                max((x["dir"] or 0 for x in filled), default=0),
                max((x["dsr"] or 0 for x in filled), default=0), len(r.summary_card.unbounded))

    def nil(r: SeriesReport) -> float:
        values = [x["nil"] for x in r.releases if x["cases"] and x.get("nil") is not None]
        return sum(values) / len(values) if values else 1.0

    def utility(r: SeriesReport) -> tuple:
        recall = dedup_recall(r)
        return (-(recall if recall is not None else 0.0), round(nil(r), 3))

    out = []
    safest = sorted(reports, key=risk)
    if risk(safest[0]) == risk(safest[1]):
        out.append("On risk the series are level: the same decision, re-identifications, max "
                   "DIR, max DSR and terms at θ = 1.")
    else:
        best, rest = safest[0], safest[1:]
        filled = [x for x in best.releases if x["cases"]]
        out.append(f"Lower risk: {best.name} (max DIR "
                   f"{max((x['dir'] or 0 for x in filled), default=0):.2f}, max DSR "
                   f"{max((x['dsr'] or 0 for x in filled), default=0):.2f}, "
                   f"{len(best.summary_card.unbounded)} term(s) at θ = 1) against "
                   + "; ".join(f"{r.name} (max DIR "
                               f"{max((x['dir'] or 0 for x in r.releases if x['cases']), default=0):.2f}"
                               f", max DSR "
                               f"{max((x['dsr'] or 0 for x in r.releases if x['cases']), default=0):.2f}"
                               f", {len(r.summary_card.unbounded)} term(s) at θ = 1)" for r in rest)
                   + ".")
    useful = sorted(reports, key=utility)

    def facts(r: SeriesReport) -> str:
        recall = dedup_recall(r)
        return ((f"MGPS recall {recall:.2f}, " if recall is not None else "")
                + f"mean NIL {nil(r):.3f}")

    if utility(useful[0]) == utility(useful[1]):
        out.append("On utility the series are level (" + "; ".join(
            f"{r.name}: {facts(r)}" for r in useful) + ").")
    else:
        out.append(f"More utility: {useful[0].name} ({facts(useful[0])}) against "
                   + "; ".join(f"{r.name} ({facts(r)})" for r in useful[1:]) + ".")
    return out
