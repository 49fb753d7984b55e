"""What each CLI command does, over the library; option parsing lives in ``app.py``."""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from .. import vocabulary as V
from .._validation import check_choice, check_int
from ..errors import InputFormatError, PrivacyViolation, ValidationError
from ..periods import parse_period
from . import console as ui
from .console import print_json, progress_bar

if TYPE_CHECKING:
    from ..anonymize import Anonymizer
    from ..report.collect import Decision
    from ..store import ReleaseStore

# Each command imports what it needs in its own body (issue 30): `medanon release`, `ingest` and
# `export` must not pay for the evaluation, screening, attack and report stacks (SciPy's stats,
# the signal metrics, ...) that `evaluate`, `attack`, `verify` and `report` use.
# tests/system/test_cli_startup.py checks the modules each command loads.


# -- synth ----------------------------------------------------------------------------------------
def synth_faers(out_dir: Path, *, periods: int, cases: int, start: str | None, lifespan: int,
                seed: int | None, as_json: bool, knobs: dict[str, float | None] | None = None,
                profile: str = "default") -> None:
    from ..data.synth.faers import write_faers_series

    started = time.perf_counter()
    with progress_bar("synthesizing", periods) as step, ui.errors_as_flags():
        summary = write_faers_series(out_dir, periods=periods, cases=cases, seed=seed, start=start,
                                     lifespan=lifespan, profile=profile, **(knobs or {}),
                                     progress=lambda done, total: step(f"{done}/{total}"))
    data = {"out": str(summary.out), "periods": list(summary.periods), "seed": summary.seed,
            "seeded": summary.seeded, "profile": summary.profile,
            "settings": summary.knobs.as_dict(),
            "reports": summary.reports, "cases": summary.cases,
            "followups": summary.followups, "deleted": summary.deleted,
            "seconds": round(time.perf_counter() - started, 2)}
    if as_json:
        print_json(data)
        return
    table = Table("period", "cases", "reports", "follow-ups", "deleted",
                  title=f"Synthetic FAERS series in {summary.out}")
    for p in summary.periods:
        table.add_row(p, str(summary.cases[p]), str(summary.reports[p]), str(summary.followups[p]),
                      str(summary.deleted.get(p, 0)))
    ui.out.print(table)
    ui.out.print(f"profile {summary.profile}; seed {summary.seed} "
              f"({'given' if summary.seeded else 'drawn from OS entropy'}); {data['seconds']} s")


# -- ingest ---------------------------------------------------------------------------------------
def ingest(source: Path, *, store: Path, schema_path: Path | None, keep_missing: bool,
           as_json: bool, allow_empty: bool = False, strict: bool = False,
           max_field_chars: int | None = None) -> None:
    from ..api import Dataset
    from ..data.loaders.faers import strict_repairs
    from ..data.schema import Schema
    from ..store import ReleaseStore

    started = time.perf_counter()
    if schema_path:
        schema = Schema.from_toml(schema_path)
    elif store.exists():
        # Without --schema a store keeps its own: one created before the default FAERS schema
        # had drug roles, outcomes and dates goes on ingesting (and publishing) what it held.
        with ReleaseStore.open(store) as db:
            schema = db.schema
    else:
        schema = Schema.default()
    if store.exists():
        ReleaseStore.create_or_open(store, schema).close()  # fail fast on a bad --store
    # The source is searched, its DELETE lists read and the hierarchies loaded before the
    # store is touched; then each quarter is read, checked and written in turn, all in one
    # transaction: bad input anywhere writes nothing, and only one quarter is in memory.
    # The quarters are listed first, so the bar has their number (``step`` is bound below,
    # before any quarter is read).
    quarters = Dataset.stream_faers(source, schema=schema, keep_missing=keep_missing,
                                    progress=lambda period: step(period), strict=strict,
                                    max_field_chars=max_field_chars)
    with progress_bar("ingesting FAERS", len(quarters)) as step:
        created = not store.exists()
        try:
            with ReleaseStore.create_or_open(store, schema) as db, ui.errors_as_flags():
                summary = db.ingest(quarters, allow_empty=allow_empty)
        except BaseException:
            if created:  # a refused ingest leaves no new, empty store behind (e.g. a full disk)
                for leftover in (store, Path(str(store) + ".wal")):
                    leftover.unlink(missing_ok=True)
            raise
    seconds = round(time.perf_counter() - started, 2)
    reports = quarters.reports
    repairs = {r["period"]: strict_repairs(r) for r in reports}
    if as_json:
        print_json({"store": str(store), "quarters": reports, "added": summary.added,
                     "replaced": summary.replaced,
                     "deleted_from_unpublished": summary.deleted_from_unpublished,
                     "deleted_but_published": summary.deleted_but_published,
                     "deleted_but_published_cases": summary.deleted_but_published_cases,
                     "strict": strict,
                     "repairs": {p: found for p, found in repairs.items() if found},
                     "seconds": seconds})
        return
    table = Table("period", "era", "DEMO rows", "duplicates", "deleted", "superseded",
                  "dropped (missing)", "repaired lines", "reports", "cases", "notes",
                  title=f"Ingested into {store}")
    for r in reports:
        missing = ", ".join(f"{k} {v}" for k, v in _counts(r, "missing").items() if v)
        repaired = (sum(_counts(r, "repaired_split_lines").values())
                    + sum(_counts(r, "repaired_embedded_separators").values()))
        dropped = "none (kept)" if r["kept_missing"] else f"{r['dropped_reports']}"
        if missing:
            dropped += f" [{missing}]"
        table.add_row(str(r["period"]), str(r["era"]), str(r["demo_rows"]), _duplicates_cell(r),
                      str(r["deleted_reports"]), str(r["superseded_reports"]), dropped,
                      str(repaired), str(r["reports"]), str(r["cases"]), _ingest_notes(r))
    ui.out.print(table)
    for period, found in repairs.items():
        if found:  # operator output: what the source said that the store does not hold as said
            ui.err.print(f"note: {period}: {'; '.join(found)}. --strict refuses such a source "
                         f"(docs/ingestion.md).", soft_wrap=True)
    if summary.replaced:
        ui.out.print(f"replaced unpublished period(s): {', '.join(summary.replaced)}")
    if summary.deleted_but_published:
        # operator output: the case ids, so that the operator can act on them
        ui.err.print("warning: FDA's DELETE list withdraws case(s) that are already published: "
                     + "; ".join(f"{p}: {_some(summary.deleted_but_published_cases.get(p, []))}"
                                 for p in summary.deleted_but_published)
                     + ". Published releases are immutable: those cases stay in them; tell the "
                       "recipients of those releases if your policy requires it.", soft_wrap=True)
    # labelled: after the table, a bare "2.4 s" read as one more row
    ui.out.print(f"ingested {len(reports)} period(s) into {store} in {seconds} s")


def _counts(report: Mapping[str, object], key: str) -> dict[str, int]:
    """One of an ingest report's counts per column or table (``missing``,
    ``repaired_split_lines``, ...)."""
    counts = report[key]
    # the reports of FaersQuarters are IngestReport.as_dict(): these fields are dicts of counts
    assert isinstance(counts, dict)
    return counts


def _duplicates_cell(report: dict) -> str:
    """DEMO rows dropped as a repeat of a report kept (same report id, or FAERS: same case and
    caseversion under another primaryid), with those that conflict told apart."""
    rows = int(report.get("duplicate_rows") or 0)
    conflicting = int(report.get("conflicting_duplicates") or 0)
    ties = int(report.get("same_version_reports") or 0)
    parts = ([f"{conflicting} conflicting"] if conflicting else []) + (
        [f"{ties} same version"] if ties else [])
    return str(rows + ties) + (f" [{', '.join(parts)}]" if parts else "")


def _ingest_notes(report: dict) -> str:
    """What a quarter's files lacked or held that the loader could not use (roles, outcome
    codes, dates, implausible or unitless ages and weights, rows of no report), in a few
    words."""
    notes = []
    if report.get("absent"):
        notes.append("no " + ", ".join(report["absent"]))
    roles = sum((report.get("unknown_roles") or {}).values())
    if roles:
        notes.append(f"{roles} drug row(s) of unknown role")
    if report.get("drugs_without_role") and "DRUG.role_cod" not in (report.get("absent") or ()):
        notes.append(f"{report['drugs_without_role']} drug row(s) without a role")
    outcomes = sum((report.get("unknown_outcomes") or {}).values())
    if outcomes:
        notes.append(f"{outcomes} unknown outcome code(s)")
    dates = {k: v for k, v in (report.get("invalid_dates") or {}).items() if v}
    if dates:
        notes.append("invalid dates: " + ", ".join(f"{k} {v}" for k, v in dates.items()))
    for key, label in (("implausible", "implausible"), ("without_unit", "without a unit"),
                       ("orphan_rows", "rows of no report")):
        found = {k: v for k, v in (report.get(key) or {}).items() if v}
        if found:
            notes.append(f"{label}: " + ", ".join(f"{k} {v}" for k, v in found.items()))
    return "; ".join(notes)


def _some(items: list[str], shown: int = 20, complete: str = "--json lists all") -> str:
    """Up to ``shown`` items, and how many more (``complete`` says where all are listed)."""
    more = f" and {len(items) - shown} more ({complete})" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


# -- release --------------------------------------------------------------------------------------
def make_method(method: str, *, k: int | None, theta: str | float | None, alpha: float | None = None,
                ss_rule: str | None = None, lifespan: int | None = None,
                on_infeasible: str = "refuse", epsilon: str | float | None = None,
                dp_variant: str = "strict", domains: list[str] | None = None,
                dp_aware_grouping: bool = False, case_budget: str | None = None,
                label_confidence: float | None = None,
                label_mechanism: str | None = None,
                protect: list[str] | None = None,
                max_withheld: float | None = None,
                allow_tiny_epsilon: bool = False, grouping: str | None = None,
                on_unplaceable: str | None = None) -> Anonymizer:
    """The library's :func:`~medanon.pipeline.methods.periodic_method`, its errors told in
    flags (``'dp_aware_grouping' parameter`` -> ``--dp-aware-grouping``)."""
    from ..pipeline.methods import periodic_method

    with ui.errors_as_flags():
        return periodic_method(method, k=k, theta=theta, alpha=alpha, ss_rule=ss_rule,
                               lifespan=lifespan, on_infeasible=on_infeasible, epsilon=epsilon,
                               dp_variant=dp_variant, domains=domains,
                               dp_aware_grouping=dp_aware_grouping, case_budget=case_budget,
                               label_confidence=label_confidence,
                               label_mechanism=label_mechanism, protect=protect,
                               max_withheld=max_withheld,
                               allow_tiny_epsilon=allow_tiny_epsilon, grouping=grouping,
                               on_unplaceable=on_unplaceable)


def release(*, store: Path, periods: list[str], seed: int | None, allow_seeded: bool,
            as_json: bool, flags: dict | None = None, policy_file: Path | None = None,
            change_policy: bool = False, publish_despite_violations: bool = False,
            allow_unprotected: bool = False, allow_unknown_terms: bool = False,
            allow_gap: bool = False, allow_short_lifespan: bool = False,
            per_period_commit: bool = False, allow_tiny_epsilon: bool = False,
            final: bool = False) -> None:
    """``medanon release``: ``flags`` are the method flags given (``method`` and the
    :data:`~medanon.pipeline.policy.POLICY_PARAMETERS`, None when not given); with the store's
    pinned policy and ``--policy`` they resolve to one :class:`~medanon.pipeline.policy.
    SeriesPolicy` (:func:`~medanon.pipeline.policy.resolve_policy`)."""
    from ..accounting import Budget
    from ..pipeline.policy import SeriesPolicy, resolve_policy
    from ..pipeline.checks import Acknowledgements
    from ..pipeline.publish import publish_periods
    from ..random import randomness
    from ..store import ReleaseStore

    rng = randomness(seed)
    with ReleaseStore.open(store) as db:
        with ui.errors_as_flags():
            given = SeriesPolicy.from_toml(policy_file) if policy_file is not None else None
            published = db.published_periods()
            legacy = (db.manifest(published[-1]).get("method") if published
                      and db.series_policy() is None else None)
            policy, pin = resolve_policy(db.series_policy(), given=given, flags=flags or {},
                                         change_policy=change_policy, legacy=legacy)
            anonymizer = policy.anonymizer(allow_tiny_epsilon=allow_tiny_epsilon)
            anonymizer.check_schema(db.schema)  # e.g. --domain for a categorical QID
        method = policy.method
        case_budget = policy.parameters.get("case_budget")
        budget = None if case_budget is None else Budget.of(str(case_budget))
        # the infeasibility policy said even when it is the default (issue 44: plan's candidates
        # and release's default differed unseen)
        infeasible = ("" if method == "none" or "on_infeasible" in policy.parameters
                      else "; --on-infeasible refuse (the default)")
        if pin is None:
            ui.err.print(f"series policy: {policy.describe()} (pinned){infeasible}")
        elif pin["history"]:
            ui.err.print(f"series policy changed (--change-policy): "
                         f"{'; '.join(pin['history'][-1]['changes'])}")
        else:
            ui.err.print(f"series policy pinned by this release: {policy.describe()}"
                         f"{infeasible}")
        before, done = db.published_periods(), []
        try:
            # the periods asked for, or every ingested one not yet published (an estimate for
            # HA, which waits for the next period)
            total = len(periods) or len([p for p in db.ingested_periods() if p not in before])
            with progress_bar(f"publishing with {method}", total or None) as step, \
                    ui.errors_as_flags():
                def published_one(period: str) -> None:
                    done.append(period)
                    step(period)

                summaries = publish_periods(
                    db, anonymizer, periods, rng, acknowledged=Acknowledgements(
                        unprotected=allow_unprotected, unknown_terms=allow_unknown_terms,
                        gap=allow_gap, short_lifespan=allow_short_lifespan, seeded=allow_seeded,
                        violations=publish_despite_violations),
                    case_budget=budget, on_case_budget=policy.on_case_budget,
                    progress=published_one,
                    per_period_commit=per_period_commit, pin=pin, final=final,
                    # None (the default, pseudonyms): as the store's series already does
                    case_ids=policy.parameters.get("case_ids"))
        except BaseException as exc:
            if done or isinstance(exc, KeyboardInterrupt):  # a refusal up front needs no account
                _say_what_committed(db, before)
            raise
        clipping = _clipping_warnings(db, [s.period for s in summaries])
        waiting = [p for p in db.ingested_periods() if p not in db.published_periods()]
        spent = _epsilon_spent(db, [s.period for s in summaries])
    if final and summaries:
        ui.err.print(f"note: {summaries[-1].period} is the series' final release: its MD view "
                     f"holds only while no later release exists, so this store publishes none "
                     f"after it (see its manifest's does_not_guarantee).")
    if anonymizer.needs_next_period and waiting and not periods:
        ui.err.print(f"note: {', '.join(waiting)} wait(s): method '{method}' publishes a period "
                     f"only when the next one is ingested (an md-record is a case absent from "
                     f"the next period). Ingest {parse_period(waiting[-1]).shift(1).label} and "
                     f"release again, or, if the series ends with {waiting[-1]}, release with "
                     f"--final.")
    # on stderr also with --json (whose stdout lists every term): no θ = 1 goes unsaid
    unbounded = (unbounded_warning(summaries) + _caps_raised_warnings(summaries)
                 + _raised_theta_notes(summaries))
    if as_json:
        _print_warnings(unbounded)
        print_json([{**s.__dict__, **spent.get(s.period, {})} for s in summaries])
        return
    table = Table("period", "method", "cases", "groups", V.WITHHELD, V.VERIFY_GATE,
                  title=f"Published in {store}")
    for s in summaries:
        table.add_row(s.period, s.method, str(s.cases), str(s.groups), str(s.suppressed), s.verdict)
    ui.out.print(table)
    _print_epsilon_spent(spent)
    if anonymizer.privacy_model is None:
        ui.err.print(f"note: method '{method}' gives no privacy guarantee; it only drops identifiers.")
    if any(s.verdict == "violated" for s in summaries):
        ui.err.print("warning: published DESPITE violations of the privacy model; they are listed "
                     "in each manifest's 'verification'.")
    if policy.parameters.get("dp_aware_grouping") and case_budget is None:
        ui.err.print("note: --dp-aware-grouping without --case-budget bounds the posterior per "
                     "release: a later release that links the same cases spends more epsilon, "
                     "and the gate refuses it if the bound then fails. Give --case-budget to "
                     "design the groups for the whole series.")
    if getattr(anonymizer, "variant", None) == "paper":
        ui.err.print("note: --dp-variant paper follows paper 000 (local sensitivity): the release "
                     "is NOT epsilon-DP; see each manifest's 'privacy_spent'.")
    if anonymizer.privacy_model is not None and any(s.suppressed for s in summaries):
        ui.err.print("note: some cases were withheld (they fit no group without breaking theta, "
                     "or --case-budget withheld them); the withheld column above and 'medanon "
                     "inspect' count them for you (operator-only: no manifest publishes the "
                     "count).")
    if any(s.suppressed_terms for s in summaries):
        terms = sum(s.suppressed_terms for s in summaries)
        ui.err.print(f"note: {terms} sensitive term(s) were suppressed from cases that fit no "
                     "group otherwise (the cases stay published); operator-only: no manifest "
                     "publishes the count ('medanon report' shows it).")
    for line in clipping:
        ui.err.print(line, soft_wrap=True)
    _print_warnings(unbounded)


def _print_warnings(lines: list[str]) -> None:
    for line in lines:  # terms are data: never read as rich markup
        ui.err.print(line, soft_wrap=True, markup=False, highlight=False)


#: how many unbounded terms a warning names per release (``--json`` lists all)
UNBOUNDED_SHOWN = 10


def unbounded_warning(summaries: list) -> list[str]:
    """The terms each release leaves at θ = 1 (no limit), as warning lines for stderr: a head
    line, then one line per run of consecutive releases with the same terms.

    Operator output: the terms are those of each release's θ table, which its manifest
    already publishes (``details.theta_table``); this says nothing the manifest does not.
    """
    runs: list[tuple[list[str], tuple[str, ...], bool]] = []
    for s in summaries:
        key = (tuple(s.unbounded_terms), bool(s.default_unbounded))
        if not key[0] and not key[1]:
            continue
        if runs and runs[-1][1:] == key:
            runs[-1][0].append(s.period)
        else:
            runs.append(([s.period], *key))
    if not runs:
        return []
    lines = ["warning: theta = 1 (no limit) leaves sensitive terms unbounded: a group may "
             "consist only of cases holding such a term, and publishing the group discloses it "
             "for every one of them."]
    for periods, terms, default in runs:
        span = periods[0] if len(periods) == 1 else f"{periods[0]}-{periods[-1]}"
        parts = []
        if terms:
            parts.append(f"{len(terms)} term(s) at theta 1: "
                         + _some([repr(t) for t in terms], UNBOUNDED_SHOWN))
        if default:
            parts.append("every term not listed in the theta table (its default theta is 1)")
        lines.append(f"  {span}: " + "; ".join(parts))
    lines.append("  Cap such terms with --protect TERM=CAP (e.g. --protect \"Death=0.3\"), a theta "
                 "file's caps, or the schema's protected_terms (docs/theta.md).")
    return lines


def _caps_raised_warnings(summaries: list) -> list[str]:
    """Protected terms whose cap ``--on-infeasible raise-theta`` overrode, per release."""
    lines = []
    for s in summaries:
        if s.caps_raised:
            shown = ", ".join(f"{t!r} (cap {e['cap']:g}, raised to {e['raised_to']:g})"
                              for t, e in sorted(s.caps_raised.items()))
            lines.append(f"warning: in {s.period}, --on-infeasible raise-theta raised protected "
                         f"term(s) above their cap, as too many cases hold them for it: {shown}; "
                         f"recorded in the manifest's raised_theta.")
    return lines


def _raised_theta_notes(summaries: list) -> list[str]:
    """Every θ ``--on-infeasible raise-theta`` raised, per release (a protected term's raise
    past its cap has its own warning above): the steward learns the θ the release used."""
    lines = []
    for s in summaries:
        raised = {t: e for t, e in s.raised_theta.items() if t not in s.caps_raised}
        if raised:
            shown = ", ".join(f"{t!r} {e['theta']:g} -> {e['raised_to']:g}"
                              for t, e in raised.items())
            lines.append(f"note: in {s.period}, --on-infeasible raise-theta raised the theta of "
                         f"{len(raised)} term(s) too frequent for it: {shown}; recorded in the "
                         f"manifest's raised_theta.")
    return lines


def _epsilon_spent(db: ReleaseStore, periods: list[str]) -> dict[str, dict[str, str | None]]:
    """Per period just published that charged the ledger: the ε per case it spent
    (``epsilon_per_case``; for a release without an ε-DP claim, ``nominal_epsilon_per_case``
    instead) and the series maximum per case after it (``series_max_epsilon_per_case``: the
    largest total of a case over every ε-DP release), from the ledger's own summary."""
    from ..accounting import summarize_ledger

    ledger = summarize_ledger(db.ledger())
    series_max = ledger.max_epsilon if ledger.cases else None
    dp = {row["period"]: row["epsilon_per_case"] for row in ledger.per_period}
    nominal = {row["period"]: row["nominal_epsilon_per_case"]
               for row in ledger.non_dp["per_period"]}
    return {p: {"epsilon_per_case": dp.get(p), "nominal_epsilon_per_case": nominal.get(p),
                "series_max_epsilon_per_case": series_max}
            for p in periods if p in dp or p in nominal}


def _print_epsilon_spent(spent: dict[str, dict[str, str | None]]) -> None:
    """After a DP release: ε per case of each new release and the series maximum per case."""
    if not spent:
        return
    dp = {p: v["epsilon_per_case"] for p, v in spent.items() if v["epsilon_per_case"]}
    nominal = {p: v["nominal_epsilon_per_case"] for p, v in spent.items()
               if v["nominal_epsilon_per_case"]}
    if dp:
        ui.out.print("epsilon per case in this release: "
                     + ", ".join(f"{p} {e}" for p, e in dp.items()))
    if nominal:
        ui.out.print("nominal epsilon per case (NOT epsilon-DP, never summed): "
                     + ", ".join(f"{p} {e}" for p, e in nominal.items()))
    series_max = next(iter(spent.values()))["series_max_epsilon_per_case"]
    if series_max is not None:
        ui.out.print(f"series maximum epsilon per case (summed over every epsilon-DP release "
                     f"of the store): {series_max}; `medanon ledger` gives the distribution.")


#: a public domain that clips at least this share of a QID's true values draws a warning
CLIP_WARNING_SHARE = 0.1


def _clipping_warnings(db: ReleaseStore, periods: list[str]) -> list[str]:
    """Operator-only warnings (stderr) for public domains that clipped a large share of the
    true values: the released values then say more about the bounds than about the data.

    The counts are functions of the private values that no mechanism accounts for: they live
    in the store's operator-only record and are never published (manifest, export, report).
    """
    lines = []
    for period in periods:
        private = db.operator_record(period)["private_details"]
        clipped = private.get("clipped_to_domain") or {}
        checked = private.get("domain_checked_values") or {}
        domains = (db.manifest(period).get("details") or {}).get("domains") or {}
        for name, count in clipped.items():
            total = checked.get(name) or 0
            if not total or count / total < CLIP_WARNING_SHARE:
                continue
            bounds = domains.get(name)
            shown = f" [{bounds[0]:g}, {bounds[1]:g}]" if bounds else ""
            lines.append(
                f"warning: in {period}, the public domain{shown} of {name!r} clipped {count} of "
                f"{total} true values ({count / total:.0%}) to its bounds before the noise: "
                f"their released values reflect the bounds, not the data. Choose bounds that "
                f"cover the data, known without looking at it (--domain {name}=LO:HI or the "
                f"schema's 'domain'). (Operator-only: this count is not published.)")
    return lines


def _say_what_committed(db: ReleaseStore, before: list[str]) -> None:
    """After a failed or interrupted release: exactly which periods landed (stderr)."""
    try:
        committed = [p for p in db.published_periods() if p not in before]
    except Exception:  # the store itself failed: say nothing rather than guess
        return
    if committed:
        ui.err.print(f"committed before the failure: {', '.join(committed)} (published; "
                     f"immutable). Nothing else was written.")
    else:
        ui.err.print("nothing was committed: the store is as it was.")


# -- ledger ---------------------------------------------------------------------------------------
def ledger(*, store: Path, case_budget: str | None, as_json: bool) -> None:
    from ..accounting import Budget, summarize_ledger
    from ..store import ReleaseStore

    budget = None if case_budget is None else Budget.of(case_budget)
    with ReleaseStore.open(store, read_only=True) as db:
        entries = db.ledger()
    summary = summarize_ledger(entries, case_budget=budget)
    if as_json:
        print_json(summary.to_dict())
        return
    non_dp = summary.non_dp
    if not summary.cases and not non_dp["entries"]:
        ui.out.print(f"The ledger of {store} is empty: no differentially private release yet.")
        return
    if summary.cases:
        table = Table("period", "cases", V.EPSILON_PER_CASE,
                      title=f"Privacy ledger of {store} (epsilon-DP releases)")
        for row in summary.per_period:
            table.add_row(str(row["period"]), str(row["cases"]), str(row["epsilon_per_case"]))
        ui.out.print(table)
        ui.out.print(f"{summary.cases} cases; epsilon per case summed over releases: max "
                     f"{summary.max_epsilon}, mean {summary.mean_epsilon:.4g}, median "
                     f"{summary.median_epsilon:.4g}, p90 {summary.quantiles['p90']:.4g}.")
        if budget is not None:
            ui.out.print(f"case budget {budget}: {summary.over_budget} case(s) over it, "
                         f"{summary.at_or_near_budget} that one more such release would take over.")
    else:
        ui.out.print(f"No epsilon-DP release in {store}.")
    if non_dp["entries"]:
        # Shown apart and never summed: a nominal epsilon bounds nothing.
        table = Table("period", "cases", V.NOMINAL_EPSILON_PER_CASE, "mechanisms",
                      title="NOT differentially private (nominal epsilon, not counted)")
        for row in non_dp["per_period"]:
            table.add_row(str(row["period"]), str(row["cases"]),
                          str(row["nominal_epsilon_per_case"]), ", ".join(row["mechanisms"]))
        ui.out.print(table)
        ui.out.print(f"{non_dp['cases']} case(s) appear in releases without an epsilon-DP claim "
                     f"(e.g. --dp-variant paper): their values there carry no epsilon bound, and "
                     f"the totals and --case-budget above do not include them.")


# -- export ---------------------------------------------------------------------------------------
def export(*, store: Path, out: Path, fmt: str) -> None:
    from ..pipeline.export import EXPORT_FORMATS, export_store
    from ..store import ReleaseStore

    with ui.errors_as_flags():
        check_choice(fmt, name="format", owner="export", choices=EXPORT_FORMATS)
    with ReleaseStore.open(store, read_only=True) as db:
        exported = export_store(db, out, fmt)
    periods = [folder.name for folder in exported.folders]
    print(f"exported {len(exported.folders)} release(s) as {fmt} to {out}: {', '.join(periods)}")
    if exported.replaced_dollars:
        ui.err.print(f"note: {exported.replaced_dollars} value(s) contained '$' or a line break, "
                     "which the FAERS layout cannot carry; they were written with a space instead "
                     "(release.csv beside them has them as published).")


# -- plan -----------------------------------------------------------------------------------------
def plan(*, store: Path, out: Path, candidates: Path | None, protect: list[str],
         max_withheld: float, min_recall: float, periods: list[str], apply: int | None,
         change_policy: bool, seed: int | None, scheduler: str | None = None,
         workers: int | None = None, on_infeasible: str = "refuse") -> None:
    import pandas as pd

    from ..experiments.plan import (apply_candidate, default_candidates, plan_store,
                                    read_candidates, write_plan)
    from ..pipeline.policy import SeriesPolicy

    with ui.errors_as_flags():
        if apply is not None:
            pinned = apply_candidate(store, out, apply, change_policy=change_policy)
            print(f"pinned candidate {apply} as the series policy of {store}: "
                  f"{pinned.describe()}")
            return
        caps = SeriesPolicy.of("ppms", k=2, theta=0.5, protect=protect).parameters.get(
            "protect", {}) if protect else {}
        if candidates is not None and on_infeasible != "refuse":
            raise ValidationError("--on-infeasible sets the default candidates': a candidates "
                                  "file gives each candidate's own on_infeasible.")
        pool = (read_candidates(candidates) if candidates is not None
                else default_candidates(caps, on_infeasible))
        with progress_bar("planning", len(pool)) as step:
            result = plan_store(store, candidates=pool, protect=caps,
                                max_withheld=max_withheld, min_recall=min_recall,
                                periods=periods, seed=seed, scheduler=scheduler,
                                workers=workers, progress=step)
    paths = write_plan(result, out)
    table = Table("#", "policy", "status", V.WITHHELD_SHARE, V.MEAN_NIL, V.DISCLOSING_GROUPS,
                  V.MAX_DIR, V.MGPS_RECALL, V.UNBOUNDED_TERMS, "CPU s", "why not",
                  title=f"Plan for {store} (nothing published; operator-only figures)")
    for _, r in result.rows.iterrows():
        mark = " *" if r["candidate"] == result.recommended else ""
        cell = [None if pd.isna(r[c]) else float(r[c]) for c in
                ("withheld_share", "nil", "disclosing_groups", "dir_max", "mgps_recall",
                 "unbounded_terms", "cpu_s")]
        # counts as integers (43 terms, not 43.00); a recall of n/a says why
        shown = [_fmt(v) for v in cell]
        for i in (2, 5):
            count = cell[i]
            shown[i] = "" if count is None else str(int(count))
        if cell[4] is None and r["status"] == "published":
            shown[4] = f"n/a ({r['recall_note']})" if r["recall_note"] else "n/a"
        table.add_row(f"{r['candidate']}{mark}", str(r["policy"]), str(r["status"]), *shown,
                      str(r["why_not"] or "") if r["status"] == "published"
                      else str(r["message"])[:80])
    ui.out.print(table)
    ui.out.print(result.recommendation(), soft_wrap=True)
    for note in result.notes:   # a constraint that could not apply is never silent
        ui.err.print(f"warning: {ui.as_flags(note)}", soft_wrap=True)
    print(f"wrote {', '.join(str(p) for p in paths)}")


# -- signals --------------------------------------------------------------------------------------
def signals(*, series: Path | None, store: Path | None, side: str, out: Path,
            scopes: list[str], stratify_by: str, drug_columns: list[str], fdr: float,
            min_count: int, rr0: float = 1.0) -> None:
    from ..api import signals as screen_signals
    from ..metrics.signal_table import CSV_HINT_BYTES, SIGNAL_RULES, write_signal_table

    with ui.errors_as_flags():
        if out.suffix.lower() not in (".csv", ".parquet"):
            raise ValidationError(f"The --out option must end in .csv or .parquet; got "
                                  f"{str(out)!r}.")
        if series is None and store is None:
            raise ValidationError("Give a SERIES folder or --store.")
        if series is not None and store is not None:
            raise ValidationError("Give a SERIES folder or --store, not both.")
        if series is not None and side != "original":
            raise ValidationError("The --side option goes with --store.")
        with contextlib.ExitStack() as stack:
            bar: dict = {}

            def on_start(total: int) -> None:
                # the bar opens once the periods are known (a folder's rows read, a store's not yet)
                bar["step"] = stack.enter_context(progress_bar("screening pairs", total))

            table = screen_signals(series, store=store, side=side, scopes=scopes,
                                   stratify_by=stratify_by, drug_columns=drug_columns, fdr=fdr,
                                   rr0=rr0,
                                   min_count=min_count, on_start=on_start,
                                   progress=lambda step: bar["step"](step))
    written, sidecar = write_signal_table(table, out)
    meta = table.attrs["signals"]
    summary = Table("scope", "period", "reports", "pairs",
                    *(V.signals_of(rule) for rule in SIGNAL_RULES), "prior",
                    title=f"Signals of {meta['source']}")
    for entry in meta["scopes"]:
        rows = table[(table["scope"] == entry["scope"]) & (table["period"] == entry["period"])]
        prior = entry["prior"]
        summary.add_row(entry["scope"], entry["period"], str(entry["reports"]), str(entry["pairs"]),
                        *(str(int(rows[flag].sum())) for flag in SIGNAL_RULES.values()),
                        "-" if prior is None else ("converged" if prior["converged"]
                                                   else "held at bound" if prior["limit"]
                                                   else "NOT converged"))
    ui.out.print(summary)
    for line in meta["warnings"]:
        ui.err.print(f"warning: {line}")
    if ui.verbosity() >= 2:  # the optimizer's own words, per scope (the sidecar has them too)
        for entry in meta["scopes"]:
            if entry["prior"] is not None and not entry["prior"]["converged"]:
                ui.err.print(f"{entry['scope']} {entry['period']}: {entry['prior']['message']}")
    print(f"wrote {len(table)} pair row(s) to {written} and the priors to {sidecar}")
    size = written.stat().st_size
    if written.suffix.lower() == ".csv" and size > CSV_HINT_BYTES:
        ui.err.print(f"hint: {written} is {size / 2**20:.0f} MiB; --out "
                     f"{written.with_suffix('.parquet').name} writes the same table as Parquet, "
                     "smaller and with its column types (docs/metrics.md).", soft_wrap=True)


# -- inspect --------------------------------------------------------------------------------------
def inspect(*, store: Path, as_json: bool) -> None:
    from ..pipeline.checks import final_releases
    from ..store import ReleaseStore

    with ReleaseStore.open(store, read_only=True) as db:
        frame = db.periods()
        schema = db.schema
        # operator-only (never exported): the hash of each published period's input records
        digests = {p: db.operator_record(p)["input_sha256"] for p in db.published_periods()}
        # operator-only (issue 41): the withheld cases no manifest counts (the whole table is
        # the operator's: reports and cases are input counts too)
        withheld = {p: (m.get("counts") or {}).get("suppressed")
                    for p, m in db.operator_manifests().items()}
        policy = db.series_policy()
        ended = final_releases(db.manifests())
        # operator-only: how the series publishes CaseIDs and whether the store holds their key
        # (never the key itself; medanon.pipeline.case_ids.case_id_map maps them back)
        from ..pipeline.case_ids import mode_of

        case_ids = {"mode": mode_of(db.manifests()), "key_held": db.case_key() is not None}
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    for r in records:
        r["input_sha256"] = digests.get(r["period"])
        r["withheld"] = withheld.get(r["period"])
    if as_json:
        print_json({"store": str(store), "schema": schema.name, "periods": records,
                    "series_policy": policy, "final_release": ended[-1] if ended else None,
                    "case_ids": case_ids})
        return
    table = Table("period", "era", "reports", "cases", "published", "method", "released cases",
                  "groups", "withheld", "input sha256 (operator only)",
                  title=f"{store} (schema {schema.name!r})")
    for r in records:
        table.add_row(r["period"], str(r["era"] or ""), str(r["n_reports"]), str(r["n_cases"]),
                      "yes" if r["published"] else "no", str(r["method"] or ""),
                      str(r["released_cases"] or ""), str(r["released_groups"] or ""),
                      "" if r["withheld"] is None else str(r["withheld"]),
                      (r["input_sha256"] or "")[:16])
    ui.out.print(table)
    if case_ids["mode"] is not None:
        ui.out.print(f"CaseIDs published as: {case_ids['mode']}"
                     + ("; the store holds their secret key (operator only, never exported)"
                        if case_ids["key_held"] else ""), soft_wrap=True)
    if policy is not None:
        from ..pipeline.policy import SeriesPolicy

        pinned = SeriesPolicy(policy["policy"]["method"], policy["policy"].get("parameters", {}))
        ui.out.print(f"series policy (pinned {policy.get('pinned_at')}): {pinned.describe()}"
                     + (f"; changed {len(policy['history'])} time(s)" if policy.get("history")
                        else ""), soft_wrap=True)
    if ended:
        ui.out.print(f"series ended: {ended[-1]} is its final release (release --final); nothing "
                     f"is published after it.", soft_wrap=True)


# -- verify / attack / evaluate -------------------------------------------------------------------
def _series(series_dir: Path | None, store: Path | None, schema_path: Path | None):
    """The series of a folder (audit mode) or of a store."""
    from ..data.schema import Schema
    from ..published.series import load_series
    from ..store import ReleaseStore

    if (series_dir is None) == (store is None):
        raise ValidationError("Give a SERIES folder or --store (exactly one).")
    schema = Schema.from_toml(schema_path) if schema_path else None
    if series_dir is not None:
        return load_series(folder=series_dir, schema=schema)
    assert store is not None  # exactly one of the two was given (checked above)
    with ReleaseStore.open(store, read_only=True) as db:
        return load_series(store=db, schema=schema)


@contextlib.contextmanager
def _store_series(store: Path, schema_path: Path | None):
    """A store's published series read a release at a time (``pipeline.history.StoreSeries``),
    the store open read-only while the block runs."""
    from ..data.schema import Schema
    from ..pipeline.history import StoreSeries
    from ..published.series import load_series
    from ..store import ReleaseStore

    schema = Schema.from_toml(schema_path) if schema_path else None
    with ReleaseStore.open(store, read_only=True) as db:
        if not db.published_periods():
            load_series(store=db)  # the error for a store with nothing published
        yield StoreSeries(db, schema)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def verify(*, series_dir: Path | None, store: Path | None, schema_path: Path | None,
           periods: list[str], as_json: bool, allow_gap: bool = False) -> None:
    from ..verify import SeriesVerdict, is_release_folder, verify_release_folder, verify_series

    if series_dir is not None and store is None and is_release_folder(series_dir):
        # a one-off (table or EHR) release folder, not a series of periods
        one = verify_release_folder(series_dir)
        if as_json:
            print_json(SeriesVerdict((one,)).to_dict())
        else:
            ui.out.print(f"{one.period}: {one.model or 'no model'}: {one.verdict}")
            ui.out.print(f"  checked: {one.checked}")
            for v in one.violations[:10]:
                ui.out.print(f"  {v}")
        if not one.ok:
            raise PrivacyViolation(f"{one.period} does not hold its declared privacy model.")
        return
    if store is not None and series_dir is None:
        # release by release, in memory bounded by one release and what it links to
        with _store_series(store, schema_path) as reader:
            verdict = reader.verify(periods or None)
            series = reader.skeleton()
    else:
        series = _series(series_dir, store, schema_path)
        verdict = verify_series(series, periods or None)
    everything_missing = series.missing_periods()
    missing = series.undeclared_missing_periods()  # a gap the publisher declared is no surprise
    declared = [p for p in everything_missing if p not in missing]
    if as_json:
        print_json({**verdict.to_dict(), "missing_periods": missing,
                    "declared_missing_periods": declared})
    else:
        # the gate's ratios are the hard-exclusion attacker's: the names `attack` prints for them
        table = Table("period", "model", V.VERIFY_NOW, V.ATTACKS, V.DIR_HARD, V.DSR_HARD, V.SSGR,
                      title=f"Verify: {series.source}")
        for r in verdict.releases:
            shown = r.verdict + (" (MD pending)" if r.md_pending else "")
            table.add_row(r.period, r.model or "none", shown, r.attacks or "-", _fmt(r.dir),
                          _fmt(r.dsr), _fmt(r.ssgr))
        ui.out.print(table)
        for r in verdict.releases:
            ui.out.print(f"{r.period} checked: {r.checked}")
            if r.bound is not None:
                b = r.bound
                ui.out.print(f"  combined posterior bound {b['max_posterior']:.3g} (1/k = "
                             f"{b['one_over_k']:.3g}; {b['groups_over_one_over_k']} group(s) "
                             f"above it; max epsilon per case {b['epsilon_case_max']:g})")
            for v in r.violations[:10]:
                ui.out.print(f"  {v}")
            if len(r.violations) > 10:
                ui.out.print(f"  ... and {len(r.violations) - 10} more in {r.period} (--json lists all)")
        ui.out.print(f"observed: CaseIDs recur up to {verdict.observed_case_span} period(s) apart "
                     f"in the published series.")
        for note in verdict.notes:
            ui.err.print(f"note: {note}")
    if missing and allow_gap and not as_json:
        ui.out.print(f"missing period(s) accepted (--allow-gap): {', '.join(missing)}")
    if declared and not as_json:
        ui.out.print(f"missing period(s) the publisher declared (released with --allow-gap): "
                     f"{', '.join(declared)}")
    if not verdict.ok:
        bad = [r.period for r in verdict.releases if not r.ok]
        gap = f" (and the series lacks {', '.join(missing)})" if missing else ""
        raise PrivacyViolation(f"{len(bad)} release(s) do not hold their declared privacy model: "
                               f"{', '.join(bad)}{gap}.")
    if missing and not allow_gap:
        # A missing middle release hides the links through it: the verdicts above may pass
        # while the published series, with that release, fails.
        raise InputFormatError(
            f"{series.source} lacks period(s) {', '.join(missing)} between its first and last "
            f"release: the attacks through them cannot be replayed, so the verdicts above are "
            f"incomplete. Add the missing period folder(s), or pass --allow-gap if the series "
            f"was published without them.")


def attack(*, series_dir: Path | None, store: Path | None, schema_path: Path | None,
           period: str | None, target: str | None, first_appearance: bool, discontinued: bool,
           background: Path | None, lifespan: int | None, k: int | None, alpha: float | None,
           ss_rule: str | None, all_groups: bool, as_json: bool, md: bool | None = None) -> None:
    run = functools.partial(
        _attack, period=period, target=target, first_appearance=first_appearance,
        discontinued=discontinued, background=background, lifespan=lifespan, k=k, alpha=alpha,
        ss_rule=ss_rule, all_groups=all_groups, as_json=as_json, md=md)
    if store is None or series_dir is not None or target is not None:
        run(_series(series_dir, store, schema_path), None)
        return
    # the worst case over a store's releases, one release at a time (memory bounded by one
    # release and what it links to); the same result as over the whole series
    with _store_series(store, schema_path) as reader:
        run(reader.skeleton(), reader)


def _refuse_what_verify_refuses(series, reader, periods: list[str] | None) -> None:
    """Run verify's checks on the releases about to be attacked or evaluated, and let its
    refusal stand (``InputFormatError``, verify's own message; the verdict itself is verify's
    to report). A release verify rejects as malformed (a group whose records publish different
    QID values, a manifest without what its model needs, ...) has no meaning the attacks could
    measure: attacking it anyway reported DIR 0 on a release verify refuses (issue 41)."""
    from ..verify import verify_series

    if reader is not None:
        reader.verify(periods)
    else:
        verify_series(series, periods)


def _attack(series, reader, *, period: str | None, target: str | None, first_appearance: bool,
            discontinued: bool, background: Path | None, lifespan: int | None, k: int | None,
            alpha: float | None, ss_rule: str | None, all_groups: bool, as_json: bool,
            md: bool | None) -> None:
    from ..attacks import attack_target, read_background
    from ..attacks.ss import parse_ss_rule
    from ..attacks.worst_case import attack_linked, attack_series
    from ..published.roles import checked_columns

    knowledge = read_background(background) if background else None
    if knowledge is not None:
        knowledge.check(series.qids)
    if target is not None and period is None:
        raise ValidationError("--target needs --period: the release the target is known to be in.")
    if (first_appearance or discontinued) and target is None:
        raise ValidationError("--first-appearance and --discontinued describe a --target; without "
                              "one the worst case over all targets is reported.")
    rule = parse_ss_rule(ss_rule) if ss_rule else None
    # the flags first, then verify's checks (they read every release asked for; of a store,
    # each release as it is read for its attacks, below: one read of it, not two)
    if target is not None or reader is None:
        _refuse_what_verify_refuses(series, reader, [series.label(period)] if period else None)
    if target is not None:
        assert period is not None  # a --target without --period was refused above
        out = attack_target(series, period, target, first_appearance=first_appearance,
                            discontinued=discontinued, background=knowledge, lifespan=lifespan)
        if as_json:
            print_json(out.to_dict())
            return
        ui.out.print(f"Target {out.target} in {out.period}: {len(out.candidates)} candidate(s) "
                     f"{list(out.candidates)}")
        for name, cases in out.excluded.items():
            what = ("impossible perturbed values exclude" if name == "impossible"
                    else f"{name}-attack excludes")
            ui.out.print(f"  {what} {len(cases)}: {list(cases)}")
        ui.out.print(f"Remaining: {list(out.remaining)}"
                     + ("  -> RE-IDENTIFIED" if out.reidentified else ""))
        if out.posterior:
            ui.out.print(f"Likelihood-weighted attacker (perturbed QIDs weigh, never exclude): "
                         f"max posterior {out.max_posterior:.3f}"
                         + (f" {'>' if out.dangerous else '<='} 1/k = {1 / out.k:.3f}"
                            if out.k else ""))
            for case, _, p in out.posterior[:10]:
                ui.out.print(f"  {case}: posterior {p:.4f}")
            if len(out.posterior) > 10:
                ui.out.print(f"  ... and {len(out.posterior) - 10} more (--json lists all)")
        if out.confidence:
            top = ", ".join(f"{t} {c:.2f}" for t, c in list(out.confidence.items())[:5])
            kind = "Posterior share" if out.posterior else "Confidence"
            ui.out.print(f"{kind} of sensitive terms: {top}")
        return
    if reader is not None:
        labels = [series.label(period)] if period else series.periods
        # each release with its cases' rows elsewhere and the columns the attacks read, once
        # verify's checks accept it (nothing is printed before the last release is attacked)
        columns = checked_columns(reader.store.schema,
                                  also=list(rule) if isinstance(rule, Mapping) else [])
        result = attack_linked(labels, functools.partial(reader.verified_linked_release,
                                                         columns=columns),
                               lifespan=lifespan, k=k, alpha=alpha, ss_rule=rule,
                               background=knowledge, md=md)
    else:
        result = attack_series(series, periods=[period] if period else None, lifespan=lifespan,
                               k=k, alpha=alpha, ss_rule=rule, background=knowledge, md=md)
    if as_json:
        print_json(result.to_dict(all_groups=all_groups))
        return
    table = Table("period", "groups", V.ATTACKER, V.ATTACKS, V.DIR_HARD, V.DSR_HARD,
                  V.DIR_POSTERIOR, V.DSR_POSTERIOR, V.SSGR, V.REIDENTIFIED_GROUPS,
                  V.DISCLOSING_GROUPS, title=f"Worst case over all targets: {series.source}")
    for r in result.releases:
        table.add_row(r.period, str(len(r.groups)), r.attacker,
                      "B/F/L/MD" if r.md_applied else "B/F/L", _fmt(r.dir_hard),
                      _fmt(r.dsr_hard), _fmt(r.dir_posterior), _fmt(r.dsr_posterior),
                      _fmt(r.ssgr), str(r.reidentified), str(r.disclosing_groups))
    ui.out.print(table)
    ui.out.print("hard: exclusions that hold for sure (CaseID links, generalized QIDs), as verify "
                 "checks them; posterior: the likelihood-weighted attacker on perturbed QIDs (strict "
                 "PPMS-DP releases), which weighs candidates by their noisy values; disclosing "
                 "groups: every candidate left holds one term (disclosed whatever its θ).")


def evaluate(*, store: Path, rules: Path | None, background: Path | None, md: bool,
             periods: list[str], as_json: bool, screening: bool = True,
             strata: list[str] | None = None, drug_columns: list[str] | None = None,
             cumulative: bool = False, pooled: bool = False, scheduler: str | None = None,
             workers: int | None = None) -> None:
    from ..attacks import read_background
    from ..metrics.evaluation import evaluate_linked, evaluation_steps
    from ..metrics.screening import screening_for
    from ..metrics.signals import read_rules
    from ..report.collect import store_originals

    signal_rules = read_rules(rules) if rules else []
    knowledge = read_background(background) if background else None
    if workers is not None:
        check_int(workers, name="workers", owner="evaluate", minimum=1)
    with _store_series(store, None) as reader:
        db = reader.store
        # the manifests and no rows: each release is read when it is measured, with what it
        # links to (StoreSeries.release_with_cases), and let go before the next
        skeleton = reader.skeleton()
        if knowledge is not None:
            knowledge.check(skeleton.qids)
        labels = [skeleton.label(p) for p in periods] if periods else skeleton.periods
        options = (screening_for(set(db.release_columns()), strata=strata or [],
                                 drug_columns=drug_columns or [], cumulative=cumulative,
                                 pooled=pooled)
                   if screening else None)
        steps = evaluation_steps(labels, rules=signal_rules, screening=options)
        if scheduler is not None or workers is not None:
            # on Dask: each worker reads the store itself (read-only, alongside this reader)
            from ..experiments.evaluation import evaluate_store

            _refuse_what_verify_refuses(skeleton, reader, labels)
            with progress_bar("evaluating", steps) as step:
                result = evaluate_store(store, labels, rules=signal_rules, background=knowledge,
                                        md=md, screening=options,
                                        hierarchies=skeleton.hierarchies, scheduler=scheduler,
                                        workers=workers, progress=step)
            _print_evaluation(result, store, as_json)
            return
        # one period's original records at a time, read while the store is open; as published
        # strings, only the columns the evaluation reads
        from ..metrics.evaluation import (PublishedOriginals, evaluated_columns,
                                          original_columns, own_columns)

        columns = original_columns(signal_rules, options)
        frames, _ = store_originals(db, labels, lazy=True, columns=columns)
        rows = PublishedOriginals(frames, db.schema, columns)
        # verify's refusal checked on each release as it is read for the evaluation (one read
        # of the store per release, not two; issue 43): nothing is printed before the last.
        # Only the columns the checks and the measures read are fetched, and the clear ones
        # only in the release measured.
        linked_of = functools.partial(
            reader.verified_linked_release,
            columns=evaluated_columns(db.schema, signal_rules, options),
            own_columns=own_columns(db.schema, signal_rules, options))
        with progress_bar("evaluating", steps) as step:
            result = evaluate_linked(labels, linked_of, frames, rows,
                                     hierarchies=skeleton.hierarchies, rules=signal_rules,
                                     background=knowledge, md=md, screening=options,
                                     progress=step)
    _print_evaluation(result, store, as_json)


def _print_evaluation(result: dict, store: Path, as_json: bool) -> None:
    if as_json:
        print_json(result)
        return
    _evaluation_tables(result, title=f"Evaluation of {store}")
    if "screening" in result:
        _screening_tables(result["screening"])


def _screening_tables(screening: dict) -> None:
    table = Table("scope", "reports orig/rel", f"{V.UNDECIDED} rel", V.MGPS_RECALL,
                  V.MGPS_PRECISION, V.SPEARMAN_EBGM, V.BCPNN_RECALL, V.BCPNN_PRECISION,
                  V.PRR_RECALL, V.PRR_PRECISION, V.SPURIOUS_MGPS,
                  title="Signal screening: original versus release (EB05 >= 2, IC025 > 0, Evans PRR)")
    for e in screening["scopes"]:
        st = e["statistics"]
        scope = f"up to {e['scope']}" if e["kind"] == "cumulative" else e["scope"]
        table.add_row(scope, f"{e['reports']['original']}/{e['reports']['release']}",
                      str(e["undecided"]["release"]), _fmt(st["mgps"]["recall"]),
                      _fmt(st["mgps"]["precision"]), _fmt(st["mgps"]["spearman"]),
                      _fmt(st["bcpnn"]["recall"]), _fmt(st["bcpnn"]["precision"]),
                      _fmt(st["prr"]["recall"]), _fmt(st["prr"]["precision"]),
                      str(st["mgps"]["signals_release"] - st["mgps"]["common"]))
    ui.out.print(table)
    first = screening.get("first_signal")
    if first:
        ft = Table("statistic", "pairs (original)", V.SAME_QUARTER, V.LATER, V.MEAN_DELAY,
                   V.EARLIER, V.NEVER, V.RELEASE_ONLY,
                   title="When each pair first signals (cumulative scopes): release against original")
        for name, f in first.items():
            ft.add_row(name, str(f["pairs_original"]), str(f["same_quarter"]), str(f["later"]),
                       _fmt(f["mean_delay_quarters"]), str(f["earlier"]), str(f["never"]),
                       str(f["release_only"]))
        ui.out.print(ft)
    planted = screening.get("planted_summary")
    if planted:
        pt = Table("statistic", f"{V.SIGNALS} (original)", V.KEPT, V.RECALL, V.MANUFACTURED,
                   title="Planted rules inside their condition")
        for name, s in planted.items():
            pt.add_row(name, str(s["signals_original"]), str(s["kept"]), _fmt(s["recall"]),
                       str(s["manufactured_opposite"]))
        ui.out.print(pt)


def _evaluation_tables(result: dict, *, title: str) -> None:
    from ..metrics.signals import format_ratio

    table = Table("period", "method", "cases", "groups", V.NIL, V.NIL_STAR, V.ATTACKER, V.DIR,
                  V.DSR, V.SSGR, V.RR, V.AR_REV, V.DIR_HARD, V.RR_HARD, title=title)
    for r in result["releases"]:
        table.add_row(r["period"], str(r["method"]), str(r["cases"]), str(r["groups"]),
                      _fmt(r["nil"]), _fmt(r["nil_star"]), r.get("attacker", "hard-exclusion"),
                      _fmt(r["dir"]), _fmt(r["dsr"]), _fmt(r["ssgr"]), f"{r['rr']:.4f}",
                      f"{r['ar_rev']:.4f}", _fmt(r.get("dir_hard")),
                      "-" if r.get("rr_hard") is None else f"{r['rr_hard']:.4f}")
    ui.out.print(table)
    if any(r.get("attacker") == "likelihood-weighted" for r in result["releases"]):
        ui.out.print("likelihood-weighted: DIR, DSR, RR and AR_rev weigh candidates by the "
                     "likelihood of their perturbed QIDs (posterior); 'hard' columns count only "
                     "exclusions that hold for sure, as verify does.")
    signals = [(r["period"], s) for r in result["releases"] for s in r.get("signals", [])]
    if signals:
        st = Table("period", "rule", f"{V.COUNT} orig", f"{V.COUNT} rel", f"{V.PRR} orig",
                   f"{V.PRR} rel", f"{V.SIGNAL} orig/rel", title="Signals: original versus release")
        for period, s in signals:
            rule = s["rule"]
            cond = f", {rule['condition']}" if rule["condition"] else ""
            st.add_row(period, f"{rule['drug']}{cond} -> {rule['reaction']}",
                       str(s["original"]["count"]), str(s["release"]["count"]),
                       *(format_ratio(side["prr"], side.get("prr_corrected"), a=side["a"])
                         for side in (s["original"], s["release"])),
                       f"{'Y' if s['original']['signal'] else 'n'}/"
                       f"{'Y' if s['release']['signal'] else 'n'}")
        ui.out.print(st)
        ui.out.print("PRR ∞: the reaction is never reported without the drug (c = 0), with the "
                     "Haldane-Anscombe corrected value (HA, +0.5 per cell) beside it; n/a: "
                     "undefined (no report without the drug); 0 (a<3): fewer than 3 reports, "
                     "set to 0 by 001's rule.")


# -- report ---------------------------------------------------------------------------------------
def report(*, stores: list[Path], names: list[str], rules: Path | None, background: Path | None,
           md: bool, out: Path, title: str) -> list:
    """Write the report; returns the :class:`SeriesReport` of each store."""
    from ..report import collect_series_report, render_report, write_report
    from ..attacks import read_background
    from ..metrics.signals import read_rules

    if not stores:
        raise ValidationError("Give at least one --store.")
    if names and len(names) != len(stores):
        raise ValidationError(f"Give one --name per --store ({len(stores)} store(s), "
                              f"{len(names)} name(s)).")
    if Path(out).is_dir():
        raise ValidationError(f"--out {str(out)!r} is a folder; give a file name such as "
                              "report.html.")
    if not Path(out).parent.is_dir():  # checked before the work, and again when writing
        raise ValidationError(f"--out {str(out)!r}: folder {str(Path(out).parent)!r} does not "
                              "exist; create it first, or write the report elsewhere.")
    signal_rules = read_rules(rules) if rules else []
    knowledge = read_background(background) if background else None
    from ..report.collect import decision, not_compared, report_steps

    # each store's opening, releases, screening scopes and verification, then the page: the
    # first step is told at once, so that a log shows the work started (issue 44)
    with progress_bar("report", report_steps(stores, rules=signal_rules),
                      first_at_once=True) as step:
        reports = [collect_series_report(s, rules=signal_rules, background=knowledge, md=md,
                                         name=names[i] if names else None, progress=step)
                   for i, s in enumerate(stores)]
        page = render_report(reports, title=title, progress=step)
    written = write_report(page, out)  # only once everything above succeeded
    ui.err.print(f"report written to {written} ({len(page) / 1e6:.1f} MB)")
    for r in reports:  # the page's first section, one line per series
        for i, line in enumerate(decision_lines(decision(r))):
            ui.err.print(f"{r.name}: {line}" if i == 0 else line, markup=False)
    for line in not_compared(reports):  # series of different data are never ranked
        ui.err.print(line, markup=False)
    return reports


def decision_lines(made: Decision) -> list[str]:
    """A report's decision for the terminal: its one line, then the reasons of the same weight
    the line counts as "N more below" (on the page they are listed under it; here too)."""
    rest = list(made.blocking[1:] if made.blocking else made.care[1:])
    return [made.line, *(f"    also: {reason}" for reason in rest)]


# -- experiment -----------------------------------------------------------------------------------
def experiment_all(*, out: Path, quick: bool, scheduler: str | None, workers: int | None,
                   refused: list[str]) -> None:
    """``medanon experiment all``: every documented run (:mod:`medanon.experiments.documented`)."""
    from ..experiments.documented import regenerate_results

    if refused:
        raise ValidationError(f"'medanon experiment all' runs the documented settings; "
                              f"{', '.join(refused)} cannot be given with it.")
    if workers is not None:
        check_int(workers, name="workers", owner="experiment", minimum=1)
    results = regenerate_results(
        out, quick=quick, scheduler=scheduler, workers=workers,
        on_run=lambda name, config: ui.err.print(f"{name}: the documented "
                                                 f"{'quick ' if quick else ''}run"))
    for name, result in results.items():
        ui.out.print(f"{name}: {result.meta['tasks']} tasks, {result.meta['seconds']} s -> "
                     f"{result.out}")


def experiment(*, name: str, out: Path, scheduler: str | None, workers: int | None, quick: bool,
               runs: int, periods: int, cases: int, rows: int, patients: int,
               input_path: str | None, admissions: str | None, schema: str | None,
               rules: Path | None, seed: int | None, profile: str = "default",
               only: tuple[str, ...] = ()) -> None:
    import pandas as pd

    from ..experiments import ExperimentConfig, run_experiment
    from ..experiments.outputs import LEGEND, METRICS, PARAMS, setting_marks

    if workers is not None:
        check_int(workers, name="workers", owner="experiment", minimum=1)
    config = ExperimentConfig(experiment=name, quick=quick, runs=runs, periods=periods,
                              cases=cases, profile=profile, rows=rows, patients=patients, seed=seed,
                              input=input_path, admissions=admissions, schema=schema, rules=rules,
                              scheduler=scheduler, workers=workers, only=only)
    bar: dict = {}
    if input_path is not None:
        ui.err.print(f"{name}: every worker reads --input {input_path} (the client does not load it)")
    with contextlib.ExitStack() as stack:
        def on_start(total: int, cluster: str) -> None:
            ui.err.print(f"{name}: {total} tasks on a {cluster}")
            bar["step"] = stack.enter_context(progress_bar(name, total))

        result = run_experiment(config, out=out, on_start=on_start,
                                progress=lambda key: bar["step"](key))
    summary = result.summary
    metrics = [m for m, _ in METRICS[name] if f"{m}_mean" in summary.columns]
    params = [c for c in PARAMS if c in summary.columns]
    # the CSV's metric keys, shown by their glossary names
    table = Table("method", *params, *(V.name_for_key(m) for m in metrics), "tasks",
                  title=f"{result.meta['paper']}: mean over periods and runs")
    used: set[str] = set()
    for _, row in summary.iterrows():
        marks = setting_marks(row)  # a setting the method changed is never shown silently
        used |= set(marks)
        table.add_row(str(row["method"]) + (" " + "".join(marks) if marks else ""),
                      *(str(row[p]) for p in params),
                      *("-" if pd.isna(row[f"{m}_mean"]) else f"{row[f'{m}_mean']:.4f}"
                        for m in metrics), str(row["tasks"]))
    ui.out.print(table)
    for sign in (s for s in LEGEND if s in used):
        ui.out.print(f"{sign} {LEGEND[sign]} (summary.md says how much).")
    loads = result.meta["data"].get("input_loads")
    if loads:
        ui.out.print(f"--input read by {len(loads)} worker(s) (SHA-256 "
                     f"{result.meta['data']['input_sha256'][:12]}..., longest load "
                     f"{max(x['seconds'] for x in loads)} s)")
    ui.out.print(f"{result.meta['tasks']} tasks on {len(result.meta['workers_used'])} worker(s) "
                 f"in {result.meta['seconds']} s; base seed {result.meta['base_seed']}; "
                 f"tables and figures in {out}")


# -- demo -----------------------------------------------------------------------------------------
DEMO_MARKER = ".medanon-demo"
#: the frequency rule gives θ = 1 (no limit) to the most frequent terms; the demo caps four
#: that no steward would leave unbounded (the issue's examples), and its summary names the rest
DEMO_PARAMETERS = {"k": 5, "theta": "frequency", "on_infeasible": "raise-theta",
                   "protect": ["Death=0.3", "Depression=0.3", "Schizophrenia=0.3",
                               "Myocardial infarction=0.3"]}


def _demo_summary(reports: list) -> None:
    from ..report.collect import decision, signal_tally

    safe, naive = reports
    table = Table("period", *(f"{series} {metric}" for series in ("PPMS++", "MS")
                              for metric in (V.NIL, V.DIR, V.DSR)),
                  title="Information loss (NIL), and groups left with < k candidates (DIR) or a "
                        "term above its theta (DSR) after the B-, F- and L-attacks")
    for a, b in zip(safe.releases, naive.releases):
        table.add_row(a["period"], *(_fmt(x[key]) for x in (a, b) for key in ("nil", "dir", "dsr")))
    ui.out.print(table)
    for r in reports:
        kept, lost, spurious = signal_tally(r)
        ui.out.print(f"\n{r.name}: planted signals kept {kept}, lost {lost}, gained {spurious}; "
                     f"{sum(x['reidentified'] for x in r.releases)} case(s) re-identified by "
                     "record linkage (RR).")
        for line in decision_lines(decision(r)):
            ui.out.print(f"  {line}", markup=False)
        _print_card(r.card)


def _print_card(card) -> None:
    """The report's summary card in the terminal: what was promised, at which k, θ and ε, what
    the ingest lost, and what the model does not protect (the model object's own text)."""
    from ..report.collect import missing_sentence

    # first: the terms no θ bounds (the frequency rule's most frequent ones, unless capped)
    unbounded, n = card.unbounded, len(card.published)
    if unbounded:
        named = [t + ("" if len(p) == n else f" ({len(p)}/{n})") for t, p in unbounded.items()]
        latest = card.published[-1]
        now = sum(latest in p for p in unbounded.values())
        ui.out.print(f"  ! theta = 1 (no limit) for {len(unbounded)} sensitive term(s) in some "
                     f"release, {now} in the latest ({latest}): "
                     f"{_some(named, 12, 'the report lists all')}"
                     f"; a group may consist only of cases holding one. Cap terms with --protect.",
                     markup=False)
    if card.default_unbounded:
        ui.out.print(f"  ! theta = 1 by default in {', '.join(card.default_unbounded)}: every "
                     "term those releases do not list is unbounded.", markup=False)
    dropped, demo = card.ingest_dropped
    if demo:
        ui.out.print(f"  ingest: {demo} DEMO rows -> {demo - dropped} released cases; {dropped} "
                     f"DEMO rows ({dropped / demo:.0%} of the rows, one per report version, not "
                     "of the cases) reached no release: superseded versions, follow-ups, "
                     "duplicates, deletions, reports dropped for missing values, withheld "
                     f"cases; {missing_sentence(card.missing_dropped)}")
    for m in card.models:
        if m.model is None:
            ui.out.print(f"  {m.periods[0]}-{m.periods[-1]} {m.method}: no privacy model; "
                         "nothing vouches for these releases")
            continue
        if m.scope == "release":
            scope = "per release only"
        else:
            scope = (f"across linked releases, life span "
                     f"{m.lifespan if m.lifespan is not None else 'every release'}")
        ui.out.print(f"  model: {m.model} ({scope}), k={m.k}")
        defaults = ", ".join(f"{d:g}" for d in m.theta_defaults) or "-"
        terms: dict[float, list[str]] = {}
        for term, values in m.theta_overrides.items():
            for value, periods in values.items():
                where = ("" if len(periods) == len(m.periods)
                         else f" ({len(periods)}/{len(m.periods)})")
                terms.setdefault(value, []).append(term + where)
        latest = sum(any(m.periods[-1] in p for p in values.values())
                     for values in m.theta_overrides.values())
        ui.out.print(f"  theta: default {defaults}; {len(m.theta_overrides)} term(s) with their "
                     f"own theta in some release ({latest} in the latest, {m.periods[-1]})")
        if m.theta_caps:
            ui.out.print("  protected (theta capped): "
                         + ", ".join(f"{t} <= {c:g}" for t, c in m.theta_caps.items()),
                         markup=False)
        for value in sorted(terms):
            ui.out.print(f"    theta {value:g}: {', '.join(terms[value])}")
        if m.epsilon_per_case is not None:
            epsilon = f"{m.epsilon_per_case} per case per release"
        elif m.epsilon_nominal is not None:
            epsilon = f"not DP (nominal {m.epsilon_nominal} sets the noise scale only)"
        else:
            epsilon = "not DP"
        ui.out.print(f"  epsilon: {epsilon}")
        caveat = m.does_not_guarantee or "unknown (manifest unreadable)"
        ui.out.print(f"  does not protect: {caveat}")
    for kind, text in card.findings:
        ui.out.print(f"  {'!' if kind != 'ok' else '-'} {text}")


def _write_planted_rules(path: Path) -> Path:
    """The synthetic series' planted signals as a rules file (TOML), for the demo's report."""
    from ..data.synth.faers import PLANTED_SIGNALS

    path.write_text("".join(
        f"[[rule]]\ndrug = {json.dumps(r.drug)}\nreaction = {json.dumps(r.reaction)}\n"
        f"condition = {json.dumps(r.condition)}\n\n" for r in PLANTED_SIGNALS), encoding="utf-8")
    return path


#: where the demo writes in its --out folder (files and folders), and nowhere else
DEMO_OUTPUTS = ("faers-synthetic", "ppms++.duckdb", "ppms++.duckdb.wal", "ms.duckdb",
                "ms.duckdb.wal", "published", "signal-rules.toml", "report.html")


def _files_under_demo_outputs(out: Path) -> set[str]:
    found = set()
    for name in DEMO_OUTPUTS:
        path = out / name
        if path.is_file() or path.is_symlink():
            found.add(name)
        elif path.is_dir():
            # a symbolic link counts as a file (never followed, never taken for the demo's)
            found.update(str(f.relative_to(out)) for f in path.rglob("*")
                         if f.is_symlink() or not f.is_dir())
    return found


def _recorded_demo_files(out: Path) -> set[str]:
    """The files the marker says an earlier demo wrote (none for a marker that lists none)."""
    try:
        data = json.loads((out / DEMO_MARKER).read_text(encoding="utf-8"))
        return {str(f) for f in data.get("files", [])}
    except (ValueError, AttributeError):
        return set()  # a marker of an older medanon: it recorded no file names


def _record_demo_files(out: Path) -> None:
    """Write the marker: this folder is the demo's, and these files under DEMO_OUTPUTS are its
    own (written since the folder was cleared, so no one else's)."""
    (out / DEMO_MARKER).write_text(json.dumps({
        "made_by": "medanon demo", "note": "a rerun replaces only the files listed here",
        "files": sorted(_files_under_demo_outputs(out))}, indent=1) + "\n", encoding="utf-8")


def _prepare_demo_folder(out: Path) -> None:
    """Make ``out`` ready for the demo, deleting only files an earlier demo wrote itself.

    Raises:
        ValidationError: ``out`` is not empty and no demo made it; or files the demo did not
            write lie where it writes (nothing is deleted then).
    """
    if not out.exists() or not any(out.iterdir()):
        out.mkdir(parents=True, exist_ok=True)
        return
    if not (out / DEMO_MARKER).is_file():
        raise ValidationError(f"{str(out)!r} is not empty and was not made by 'medanon demo'; "
                              "choose another --out.")
    existing, recorded = _files_under_demo_outputs(out), _recorded_demo_files(out)
    foreign = sorted(existing - recorded)
    if foreign:
        raise ValidationError(
            f"{str(out)!r} holds {len(foreign)} file(s) where the demo writes that it did not "
            f"write itself: {_some(foreign, 10)}. The demo deletes only its own files: move "
            f"them away, or choose another --out.")
    for name in sorted(existing & recorded):  # never a listed name outside DEMO_OUTPUTS
        target = out / name
        if target.is_file() or target.is_symlink():
            target.unlink()
    for name in DEMO_OUTPUTS:  # the demo's folders, now holding empty folders only
        if (out / name).is_dir() and not (out / name).is_symlink():
            shutil.rmtree(out / name)


def demo(*, out: Path, seed: int) -> None:
    out = Path(out)
    _prepare_demo_folder(out)
    _record_demo_files(out)
    try:
        _demo_steps(out, seed)
    finally:  # also when interrupted: a rerun may then replace what this run wrote
        _record_demo_files(out)


def _demo_steps(out: Path, seed: int) -> None:
    from ..data.synth.faers import write_faers_series

    started = time.perf_counter()
    out_series = out / "faers-synthetic"
    store, contrast = out / "ppms++.duckdb", out / "ms.duckdb"
    ui.err.print(f"1/5 synthesizing an 8-quarter FAERS-like series (seed {seed}) ...")
    summary = write_faers_series(out_series, periods=8, cases=600, seed=seed)
    ui.err.print("2/5 ingesting it into two release stores ...")
    for target in (store, contrast):
        ingest(out_series, store=target, schema_path=None, keep_missing=True, as_json=False)
    ui.err.print("3/5 publishing every period with PPMS++ (k=5, frequency-based theta, four "
                 "protected terms capped at 0.3), and with MS-Anonymization for contrast ...")
    for method, target in (("ppms++", store), ("ms", contrast)):
        release(store=target, periods=[], seed=None, allow_seeded=False, as_json=False,
                flags={"method": method, "k": DEMO_PARAMETERS["k"],
                       "theta": DEMO_PARAMETERS["theta"],
                       "on_infeasible": DEMO_PARAMETERS["on_infeasible"],
                       "protect": DEMO_PARAMETERS["protect"]})
    ui.err.print("4/5 exporting the PPMS++ series ...")
    export(store=store, out=out / "published", fmt="csv")
    ui.err.print("5/5 attacking and evaluating both series, and writing the HTML report ...")
    rules = _write_planted_rules(out / "signal-rules.toml")
    reports = report(stores=[store, contrast], names=["PPMS++", "MS-Anonymization"], rules=rules,
                  background=None, md=False, out=out / "report.html",
                  title="medanon demo: PPMS++ against MS-Anonymization on 8 synthetic quarters")
    _demo_summary(reports)
    ui.out.print(f"\nDemo finished in {time.perf_counter() - started:.1f} s.\n"
                 f"  report:           {out / 'report.html'}\n"
                 f"  synthetic input:  {out_series} ({len(summary.periods)} quarters)\n"
                 f"  stores:           {store} (PPMS++), {contrast} (MS)\n"
                 f"  published series: {out / 'published'}\n"
                 f"  signal rules:     {rules}")
