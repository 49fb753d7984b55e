"""The publish flow: store records -> super records -> method -> release rows + manifest -> store.

One period at a time, in time order; each publication is one store transaction, so a failure
in period 3 leaves periods 1-2 published and period 3 untouched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from .. import __version__
from .._validation import check_choice
from ..accounting import Budget, PrivacyLoss, cases_over_budget, compose, format_epsilon
from ..anonymize.base import AnonymizationResult, Anonymizer
from ..data.periods import parse_period
from ..data.records import combine_super_records
from ..errors import BudgetExceeded, PrivacyViolation, StoreError, ValidationError
from ..data.schema import Schema
from ..hierarchies import Taxonomy, write_arx
from ..models import model_from_manifest
from ..random import RandomSource, refuse_seeded_release
from ..store import ReleaseStore
from ..verify import gate
from .format import to_published_rows
from .series import load_series

MANIFEST_FORMAT = "medanon-release/1"
ON_CASE_BUDGET = ("refuse", "suppress")
_SHOWN = 5


@dataclass(frozen=True)
class PublishedSummary:
    """What one publication produced."""

    period: str
    cases: int
    groups: int
    suppressed: int
    method: str
    verdict: str = "not-run"


def plan_periods(store: ReleaseStore, requested: Sequence[str]) -> list[str]:
    """The periods to publish, in time order, after every check that needs no computation.

    No period given means every ingested, unpublished period. Periods must be published in
    time order: an unpublished period earlier than a requested one is an error, since periodic
    methods anonymize each release against all earlier ones.

    Raises:
        ValidationError: a label does not parse.
        StoreError: a period is not ingested, already published, or would skip an earlier one.
    """
    ingested = store.ingested_periods()
    published = set(store.published_periods())
    if requested:
        labels = sorted({parse_period(p).label for p in requested}, key=parse_period)
    else:
        labels = [p for p in ingested if p not in published]
        if not labels:
            raise StoreError(f"Nothing to publish in {str(store.path)!r}: every ingested period "
                             f"({', '.join(ingested) or 'none'}) is already published.")
    for label in labels:
        if label not in ingested:
            raise StoreError(f"Period {label} is not ingested in {str(store.path)!r}; ingested: "
                             f"{', '.join(ingested) or 'none'}.")
        if label in published:
            raise StoreError(f"Period {label} is already published in {str(store.path)!r}; a "
                             "published release is immutable.")
    for label in labels:
        skipped = [p for p in ingested if parse_period(p) < parse_period(label)
                   and p not in published and p not in labels]
        if skipped:
            raise StoreError(f"Period {label} cannot be published before {', '.join(skipped)}: "
                             "releases are published in time order.")
    return labels


def _with_next_period(store: ReleaseStore, labels: list[str], *, explicit: bool,
                      method: str) -> list[str]:
    """Periods whose next period is ingested (HA: an md-record is a case absent from it).

    Requested explicitly, a period without its next one is an error; by default the trailing
    periods that lack it are left for later.
    """
    ingested = set(store.ingested_periods())
    missing = [p for p in labels if parse_period(p).shift(1).label not in ingested]
    if missing and (explicit or missing != labels[len(labels) - len(missing):]):
        first = missing[0]
        raise StoreError(f"Method {method!r} releases period {first} only when period "
                         f"{parse_period(first).shift(1).label} is ingested: an md-record is a case "
                         "absent from the next period. Ingest the next quarter first.")
    kept = [p for p in labels if p not in missing]
    if not kept:
        first = missing[0]
        raise StoreError(f"Method {method!r} cannot release {', '.join(missing)} yet: period "
                         f"{parse_period(first).shift(1).label} (the next one) is not ingested, and "
                         "an md-record is a case absent from the next period.")
    return kept


def input_digest(records: pd.DataFrame) -> str:
    """SHA-256 of a period's input records in a canonical order (recorded in the manifest)."""
    canonical = records.sort_values(list(records.columns[:3])).astype(str)
    return hashlib.sha256(canonical.to_csv(index=False).encode("utf-8")).hexdigest()


def build_manifest(schema: Schema, hierarchies: Mapping[str, Taxonomy], method: Anonymizer,
                   period: str, rng: RandomSource, *, result: AnonymizationResult, rows: pd.DataFrame,
                   digest: str, n_reports: int) -> dict:
    """The manifest of one release (``design.md``: method, parameters, hierarchies, counts, ...).

    The guarantee texts come from the privacy-model object the manifest declares (read back
    from the manifest itself, as any verifier will read it), never from text typed per method.
    """
    manifest = {
        "format": MANIFEST_FORMAT,
        "period": period,
        "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": {"name": method.name, "parameters": method.parameters(),
                   "privacy_model": method.privacy_model, "guarantee": method.guarantee},
        "columns": {"qids": [{"name": q.name, "kind": q.kind, "hierarchy": q.hierarchy}
                             for q in schema.qids],
                    "sensitive": list(schema.sensitive), "multi": list(schema.multi),
                    "insensitive": list(schema.insensitive),
                    "withheld": list(schema.identifiers + schema.private)},
        "hierarchies": {name: {"layout": "arx", "text": write_arx(tax)}
                        for name, tax in hierarchies.items()},
        "counts": {"cases": len(rows), "reports": n_reports, "groups": result.n_groups,
                   "suppressed": result.suppressed, "counterfeit": result.counterfeit},
        "details": result.details,
        "privacy_spent": _privacy_spent(method, schema, rng),
        "rng": rng.describe(),
        "library": {"name": "medanon", "version": __version__},
        "input_sha256": digest,
        # filled in by the verify gate before the release is published
        "verification": {"verdict": "not-run"},
    }
    model = model_from_manifest(manifest, period)
    if model is not None:
        manifest["method"].update(guarantee=model.guarantee,
                                  does_not_guarantee=model.does_not_guarantee,
                                  model=model.to_manifest())
        if manifest["privacy_spent"].get("epsilon") is not None:
            manifest["privacy_spent"].update(guarantee=model.guarantee,
                                             does_not_guarantee=model.does_not_guarantee)
    return manifest


def _privacy_spent(method: Anonymizer, schema: Schema, rng: RandomSource) -> dict:
    statement = method.privacy_statement(schema)
    if statement is None:
        return {"epsilon": None, "delta": None}
    return {**statement, "rng_kind": rng.kind}


def ledger_entries(cases: pd.Series, losses: Sequence[PrivacyLoss]) -> pd.DataFrame:
    """One ledger row per case and mechanism: what each case spent in this release."""
    ids = cases.astype(str).to_numpy()
    frames = [pd.DataFrame({"case_id": ids, "mechanism": f"{loss.mechanism}:{loss.target}",
                            "epsilon": float(loss.epsilon), "delta": float(loss.delta),
                            "epsilon_exact": format_epsilon(loss.epsilon)}) for loss in losses]
    if not frames:
        return pd.DataFrame(columns=["case_id", "mechanism", "epsilon", "delta", "epsilon_exact"])
    return pd.concat(frames, ignore_index=True)


def _apply_case_budget(store: ReleaseStore, method: Anonymizer, label: str, records: pd.DataFrame,
                       case_budget: Budget, on_case_budget: str) -> tuple[pd.DataFrame, dict]:
    """Refuse, or withhold the cases of ``records`` that this release would take over budget."""
    losses = method.planned_losses(store.schema)
    spend = compose(losses).epsilon
    ids = records[store.schema.case_id].astype(str)
    over = cases_over_budget(store.ledger(), ids.unique(), spend, case_budget)
    entry = {"epsilon": format_epsilon(case_budget.epsilon), "spend_per_case": format_epsilon(spend),
             "action": on_case_budget, "over_budget": len(over)}
    if not over:
        return records, entry
    if on_case_budget == "refuse":
        shown = ", ".join(over[:_SHOWN])
        more = f" (and {len(over) - _SHOWN} more)" if len(over) > _SHOWN else ""
        raise BudgetExceeded(
            f"Period {label} was not published: {len(over)} case(s) would exceed the per-case "
            f"budget {case_budget} (this release spends epsilon {format_epsilon(spend)} per case): "
            f"{shown}{more}. Raise --case-budget, or withhold those cases with --on-case-budget "
            "suppress (recorded in the manifest).")
    entry["withheld_cases"] = len(over)
    return records[~ids.isin(set(over))], entry


def publish_periods(store: ReleaseStore, method: Anonymizer, periods: Sequence[str], rng: RandomSource,
                    *, allow_seeded: bool = False, publish_despite_violations: bool = False,
                    case_budget: Budget | None = None, on_case_budget: str = "refuse",
                    progress: Callable[[str], None] | None = None) -> list[PublishedSummary]:
    """Anonymize and publish each period in order (one transaction per period).

    DP methods write one ledger row per released case and mechanism in the same transaction.
    With ``case_budget``, a case whose ledger total plus this release's spend would exceed it
    makes the period refused (``on_case_budget="refuse"``) or is withheld (``"suppress"``).

    Raises:
        ValidationError: a seeded source without ``allow_seeded``; a case budget for a method
            without a DP claim.
        StoreError: see :func:`plan_periods`.
        BudgetExceeded: a case would exceed ``case_budget`` and ``on_case_budget`` is refuse.
    """
    refuse_seeded_release(rng.seeded, allow_seeded)
    check_choice(on_case_budget, name="on_case_budget", owner="publish_periods",
                 choices=ON_CASE_BUDGET)
    if case_budget is not None and not method.planned_losses(store.schema):
        raise ValidationError(f"A per-case budget (--case-budget) applies to differentially "
                              f"private methods; method {method.name!r} spends no epsilon.")
    labels = plan_periods(store, periods)
    if method.needs_next_period:
        labels = _with_next_period(store, labels, explicit=bool(periods), method=method.name)
    hierarchies = store.schema.load_hierarchies()
    series = load_series(store=store, allow_empty=True)
    verdict = None  # the gate's verdict on ``series``, reused for the next candidate
    summaries = []
    for label in labels:
        records = store.records(label)
        budget_entry = None
        if case_budget is not None:
            records, budget_entry = _apply_case_budget(store, method, label, records, case_budget,
                                                       on_case_budget)
        supers = combine_super_records(records, store.schema, hierarchies)
        previous = list(series.releases.values()) if method.periodic else []
        next_cases = None
        if method.needs_next_period:
            following = parse_period(label).shift(1).label
            next_cases = set(store.records(following)[store.schema.case_id].astype(str))
        result = method.anonymize(supers, previous, rng=rng, next_cases=next_cases)
        rows = to_published_rows(result.table, store.schema)
        manifest = build_manifest(store.schema, hierarchies, method, label, rng, result=result,
                                  rows=rows, digest=input_digest(records), n_reports=len(records))
        if budget_entry is not None:
            manifest["privacy_spent"]["case_budget"] = budget_entry
            manifest["counts"]["suppressed"] += budget_entry.get("withheld_cases", 0)
        try:
            checked = gate(series, label, rows, manifest, before=verdict)
            manifest["verification"], verdict = checked.verification, checked.verdict
        except PrivacyViolation as exc:
            if not publish_despite_violations:
                raise
            manifest["verification"] = {**exc.verification, "published_despite_violations": True}
            verdict = exc.verdict
        # Every case given to the method is charged, also one it could not place: its
        # privatized values steered the grouping of the others.
        store.publish(label, rows, manifest,
                      ledger=ledger_entries(supers.frame[store.schema.case_id],
                                            result.privacy_losses))
        series = series.with_release(label, rows, manifest)
        summaries.append(PublishedSummary(label, len(rows), result.n_groups, result.suppressed,
                                          method.name, manifest["verification"]["verdict"]))
        if progress:
            progress(label)
    return summaries
