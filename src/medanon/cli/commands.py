"""What each CLI command does, over the library; option parsing lives in ``app.py``."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from pathlib import Path

import pandas as pd
from rich.table import Table

from .._validation import check_choice, check_int
from ..accounting import Budget, summarize_ledger
from ..anonymize import Anonymizer
from ..data.schema import Schema
from ..errors import StoreError, ValidationError
from ..attacks import attack_target, read_background
from ..pipeline.methods import periodic_method
from ..attacks.ss import parse_ss_rule
from ..attacks.worst_case import attack_series
from ..errors import PrivacyViolation
from ..metrics.evaluation import evaluate_series
from ..metrics.signals import read_rules
from ..report.collect import store_originals
from ..published.series import load_series
from ..verify import SeriesVerdict, is_release_folder, verify_release_folder, verify_series
from ..random import randomness
from ..pipeline.export import EXPORT_FORMATS, export_releases
from ..pipeline.publish import publish_periods
from ..store import ReleaseStore
from . import console as ui
from .console import print_json, progress_bar




# -- synth ----------------------------------------------------------------------------------------
def synth_faers(out_dir: Path, *, periods: int, cases: int, start: str, lifespan: int,
                seed: int | None, as_json: bool) -> None:
    from ..data.synth.faers import write_faers_series

    started = time.perf_counter()
    with progress_bar("synthesizing", periods) as step:
        summary = write_faers_series(out_dir, periods=periods, cases=cases, seed=seed, start=start,
                                     lifespan=lifespan, progress=lambda done, total: step(f"{done}/{total}"))
    data = {"out": str(summary.out), "periods": list(summary.periods), "seed": summary.seed,
            "seeded": summary.seeded, "reports": summary.reports, "cases": summary.cases,
            "followups": summary.followups, "deleted": summary.deleted,
            "seconds": round(time.perf_counter() - started, 2)}
    if as_json:
        print_json(data)
        return
    table = Table("period", "cases", "reports", "follow-ups", "deleted", title=f"Synthetic FAERS series in {summary.out}")
    for p in summary.periods:
        table.add_row(p, str(summary.cases[p]), str(summary.reports[p]), str(summary.followups[p]),
                      str(summary.deleted.get(p, 0)))
    ui.out.print(table)
    ui.out.print(f"seed {summary.seed} ({'given' if summary.seeded else 'drawn from OS entropy'}); "
              f"{data['seconds']} s")


# -- ingest ---------------------------------------------------------------------------------------
def ingest(source: Path, *, store: Path, schema_path: Path | None, keep_missing: bool,
           as_json: bool) -> None:
    from ..api import Dataset

    schema = Schema.from_toml(schema_path) if schema_path else Schema.default()
    started = time.perf_counter()
    if store.exists():
        ReleaseStore.create_or_open(store, schema).close()  # fail fast on a bad --store
    # Parse and check everything before the store is touched: bad input writes nothing (the
    # Dataset checks every value against the schema's hierarchies).
    with progress_bar("reading FAERS", None) as step:
        data = Dataset.from_faers(source, schema=schema, keep_missing=keep_missing, progress=step)
    with ReleaseStore.create_or_open(store, schema) as db:
        summary = db.ingest(data)
    seconds = round(time.perf_counter() - started, 2)
    reports = [q.report_dict() for q in data.quarters]
    if as_json:
        print_json({"store": str(store), "quarters": reports, "added": summary.added,
                     "replaced": summary.replaced,
                     "deleted_from_unpublished": summary.deleted_from_unpublished,
                     "deleted_but_published": summary.deleted_but_published, "seconds": seconds})
        return
    table = Table("period", "era", "DEMO rows", "deleted", "superseded", "dropped (missing)",
                  "repaired lines", "reports", "cases", title=f"Ingested into {store}")
    for r in reports:
        missing = ", ".join(f"{k} {v}" for k, v in r["missing"].items() if v)
        repaired = sum(r["repaired_split_lines"].values()) + sum(r["repaired_embedded_separators"].values())
        dropped = "kept (--keep-missing)" if r["kept_missing"] else f"{r['dropped_reports']}"
        if missing:
            dropped += f" [{missing}]"
        table.add_row(r["period"], r["era"], str(r["demo_rows"]), str(r["deleted_reports"]),
                      str(r["superseded_reports"]), dropped, str(repaired), str(r["reports"]), str(r["cases"]))
    ui.out.print(table)
    if summary.replaced:
        ui.out.print(f"replaced unpublished period(s): {', '.join(summary.replaced)}")
    if summary.deleted_but_published:
        ui.err.print("warning: FDA deleted cases that are already published in "
                  + ", ".join(f"{p} ({n})" for p, n in summary.deleted_but_published.items())
                  + "; published releases are immutable.")
    ui.out.print(f"{seconds} s")


# -- release --------------------------------------------------------------------------------------
def make_method(method: str, *, k: int | None, theta: str | float | None, alpha: float | None = None,
                ss_rule: str | None = None, lifespan: int | None = None,
                on_infeasible: str = "refuse", epsilon: str | float | None = None,
                dp_variant: str = "strict", domains: list[str] | None = None,
                dp_aware_grouping: bool = False, case_budget: str | None = None) -> Anonymizer:
    """The library's :func:`~medanon.pipeline.methods.periodic_method`, its errors told in
    flags (``'dp_aware_grouping' parameter`` -> ``--dp-aware-grouping``)."""
    with ui.errors_as_flags():
        return periodic_method(method, k=k, theta=theta, alpha=alpha, ss_rule=ss_rule,
                               lifespan=lifespan, on_infeasible=on_infeasible, epsilon=epsilon,
                               dp_variant=dp_variant, domains=domains,
                               dp_aware_grouping=dp_aware_grouping, case_budget=case_budget)


def release(*, store: Path, periods: list[str], method: str, k: int | None, theta: str | None,
            seed: int | None, allow_seeded: bool, as_json: bool, alpha: float | None = None,
            ss_rule: str | None = None, lifespan: int | None = None,
            on_infeasible: str = "refuse", publish_despite_violations: bool = False,
            epsilon: str | None = None, dp_variant: str = "strict",
            domains: list[str] | None = None, case_budget: str | None = None,
            on_case_budget: str = "refuse", dp_aware_grouping: bool = False) -> None:
    anonymizer = make_method(method, k=k, theta=theta, alpha=alpha, ss_rule=ss_rule,
                             lifespan=lifespan, on_infeasible=on_infeasible, epsilon=epsilon,
                             dp_variant=dp_variant, domains=domains,
                             dp_aware_grouping=dp_aware_grouping, case_budget=case_budget)
    budget = None if case_budget is None else Budget.of(case_budget)
    rng = randomness(seed)
    with ReleaseStore.open(store) as db:
        with progress_bar(f"publishing with {method}", None) as step:
            summaries = publish_periods(db, anonymizer, periods, rng, allow_seeded=allow_seeded,
                                        publish_despite_violations=publish_despite_violations,
                                        case_budget=budget, on_case_budget=on_case_budget,
                                        progress=step)
    if as_json:
        print_json([s.__dict__ for s in summaries])
        return
    table = Table("period", "method", "cases", "groups", "withheld", "verify gate",
                  title=f"Published in {store}")
    for s in summaries:
        table.add_row(s.period, s.method, str(s.cases), str(s.groups), str(s.suppressed), s.verdict)
    ui.out.print(table)
    if anonymizer.privacy_model is None:
        ui.err.print(f"note: method '{method}' gives no privacy guarantee; it only drops identifiers.")
    if any(s.verdict == "violated" for s in summaries):
        ui.err.print("warning: published DESPITE violations of the privacy model; they are listed "
                     "in each manifest's 'verification'.")
    if dp_aware_grouping and case_budget is None:
        ui.err.print("note: --dp-aware-grouping without --case-budget bounds the posterior per "
                     "release: a later release that links the same cases spends more epsilon, "
                     "and the gate refuses it if the bound then fails. Give --case-budget to "
                     "design the groups for the whole series.")
    if getattr(anonymizer, "variant", None) == "paper":
        ui.err.print("note: --dp-variant paper follows paper 000 (local sensitivity): the release "
                     "is NOT epsilon-DP; see each manifest's 'privacy_spent'.")
    if anonymizer.privacy_model is not None and any(s.suppressed for s in summaries):
        ui.err.print("note: some cases were withheld (they fit no group without breaking theta); "
                     "see each manifest's details.")


# -- ledger ---------------------------------------------------------------------------------------
def ledger(*, store: Path, case_budget: str | None, as_json: bool) -> None:
    budget = None if case_budget is None else Budget.of(case_budget)
    with ReleaseStore.open(store) as db:
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
        table = Table("period", "cases", "epsilon per case (max)",
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
        table = Table("period", "cases", "nominal epsilon per case", "mechanisms",
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
    with ui.errors_as_flags():
        check_choice(fmt, name="format", owner="export", choices=EXPORT_FORMATS)
    with ReleaseStore.open(store) as db:
        periods = db.published_periods()
        if not periods:
            raise StoreError(f"Nothing is published in {str(store)!r} yet: run 'medanon release' first.")
        releases = {p: (db.release_rows(p), db.manifest(p)) for p in periods}
    exported = export_releases(releases, out, fmt)
    print(f"exported {len(exported.folders)} release(s) as {fmt} to {out}: {', '.join(periods)}")
    if exported.replaced_dollars:
        ui.err.print(f"note: {exported.replaced_dollars} value(s) contained '$', which the FAERS "
                     "layout cannot carry; they were written with a space instead.")


# -- inspect --------------------------------------------------------------------------------------
def inspect(*, store: Path, as_json: bool) -> None:
    with ReleaseStore.open(store) as db:
        frame = db.periods()
        schema = db.schema
        # operator-only (never exported): the hash of each published period's input records
        digests = {p: db.operator_record(p)["input_sha256"] for p in db.published_periods()}
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    for r in records:
        r["input_sha256"] = digests.get(r["period"])
    if as_json:
        print_json({"store": str(store), "schema": schema.name, "periods": records})
        return
    table = Table("period", "era", "reports", "cases", "published", "method", "released cases",
                  "groups", "input sha256 (operator only)", title=f"{store} (schema {schema.name!r})")
    for r in records:
        table.add_row(r["period"], str(r["era"] or ""), str(r["n_reports"]), str(r["n_cases"]),
                      "yes" if r["published"] else "no", str(r["method"] or ""),
                      str(r["released_cases"] or ""), str(r["released_groups"] or ""),
                      (r["input_sha256"] or "")[:16])
    ui.out.print(table)


# -- verify / attack / evaluate -------------------------------------------------------------------
def _series(series_dir: Path | None, store: Path | None, schema_path: Path | None):
    """The series of a folder (audit mode) or of a store."""
    if (series_dir is None) == (store is None):
        raise ValidationError("Give a SERIES folder or --store (exactly one).")
    schema = Schema.from_toml(schema_path) if schema_path else None
    if series_dir is not None:
        return load_series(folder=series_dir, schema=schema)
    with ReleaseStore.open(store) as db:
        return load_series(store=db, schema=schema)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def verify(*, series_dir: Path | None, store: Path | None, schema_path: Path | None,
           periods: list[str], as_json: bool) -> None:
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
    series = _series(series_dir, store, schema_path)
    verdict = verify_series(series, periods or None)
    if as_json:
        print_json(verdict.to_dict())
    else:
        table = Table("period", "model", "verdict", "attacks", "DIR", "DSR", "SSGR",
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
    if not verdict.ok:
        bad = [r.period for r in verdict.releases if not r.ok]
        raise PrivacyViolation(f"{len(bad)} release(s) do not hold their declared privacy model: "
                               f"{', '.join(bad)}.")


def attack(*, series_dir: Path | None, store: Path | None, schema_path: Path | None,
           period: str | None, target: str | None, first_appearance: bool, discontinued: bool,
           background: Path | None, lifespan: int | None, k: int | None, alpha: float | None,
           ss_rule: str | None, all_groups: bool, as_json: bool, md: bool | None = None) -> None:
    series = _series(series_dir, store, schema_path)
    knowledge = read_background(background) if background else None
    if knowledge is not None:
        knowledge.check(series.qids)
    if target is not None:
        if period is None:
            raise ValidationError("--target needs --period: the release the target is known to be in.")
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
    if first_appearance or discontinued:
        raise ValidationError("--first-appearance and --discontinued describe a --target; without "
                              "one the worst case over all targets is reported.")
    rule = parse_ss_rule(ss_rule) if ss_rule else None
    result = attack_series(series, periods=[period] if period else None, lifespan=lifespan, k=k,
                           alpha=alpha, ss_rule=rule, background=knowledge, md=md)
    if as_json:
        print_json(result.to_dict(all_groups=all_groups))
        return
    table = Table("period", "groups", "attacker", "attacks", "DIR hard", "DSR hard", "DIR post.",
                  "DSR post.", "SSGR", "re-identified groups",
                  title=f"Worst case over all targets: {series.source}")
    for r in result.releases:
        table.add_row(r.period, str(len(r.groups)), r.attacker,
                      "B/F/L/MD" if r.md_applied else "B/F/L", _fmt(r.dir_hard),
                      _fmt(r.dsr_hard), _fmt(r.dir_posterior), _fmt(r.dsr_posterior),
                      _fmt(r.ssgr), str(r.reidentified))
    ui.out.print(table)
    ui.out.print("hard: exclusions that hold for sure (CaseID links, generalized QIDs), as verify "
                 "checks them; post.: the likelihood-weighted attacker on perturbed QIDs (strict "
                 "PPMS-DP releases), which weighs candidates by their noisy values.")


def evaluate(*, store: Path, rules: Path | None, background: Path | None, md: bool,
             periods: list[str], as_json: bool) -> None:
    signal_rules = read_rules(rules) if rules else []
    knowledge = read_background(background) if background else None
    with ReleaseStore.open(store) as db:
        series = load_series(store=db)
        if knowledge is not None:
            knowledge.check(series.qids)
        labels = [series.label(p) for p in periods] if periods else series.periods
        frames, rows = store_originals(db, labels)
    with progress_bar("evaluating", None):
        result = evaluate_series(series, frames, rows, rules=signal_rules, background=knowledge,
                                 md=md, periods=labels)
    if as_json:
        print_json(result)
        return
    _evaluation_tables(result, title=f"Evaluation of {store}")


def _evaluation_tables(result: dict, *, title: str) -> None:
    table = Table("period", "method", "cases", "groups", "NIL", "NIL*", "attacker", "DIR", "DSR",
                  "SSGR", "RR", "AR_rev", "DIR hard", "RR hard", title=title)
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
        st = Table("period", "rule", "count orig", "count rel", "PRR orig", "PRR rel",
                   "signal orig/rel", title="Signals: original versus release")
        for period, s in signals:
            rule = s["rule"]
            cond = f", {rule['condition']}" if rule["condition"] else ""
            st.add_row(period, f"{rule['drug']}{cond} -> {rule['reaction']}",
                       str(s["original"]["count"]), str(s["release"]["count"]),
                       f"{s['original']['prr']:.2f}", f"{s['release']['prr']:.2f}",
                       f"{'Y' if s['original']['signal'] else 'n'}/"
                       f"{'Y' if s['release']['signal'] else 'n'}")
        ui.out.print(st)


# -- report ---------------------------------------------------------------------------------------
def report(*, stores: list[Path], names: list[str], rules: Path | None, background: Path | None,
           md: bool, out: Path, title: str) -> list:
    """Write the report; returns the :class:`SeriesReport` of each store."""
    from ..report import collect_series_report, render_report, write_report

    if not stores:
        raise ValidationError("Give at least one --store.")
    if names and len(names) != len(stores):
        raise ValidationError(f"Give one --name per --store ({len(stores)} store(s), "
                              f"{len(names)} name(s)).")
    if Path(out).is_dir():
        raise ValidationError(f"--out {str(out)!r} is a folder; give a file name such as "
                              "report.html.")
    signal_rules = read_rules(rules) if rules else []
    knowledge = read_background(background) if background else None
    with progress_bar("report", 3 * len(stores) + 1) as step:  # read, evaluate, draw
        reports = [collect_series_report(s, rules=signal_rules, background=knowledge, md=md,
                                         name=names[i] if names else None, progress=step)
                   for i, s in enumerate(stores)]
        page = render_report(reports, title=title, progress=step)
    written = write_report(page, out)  # only once everything above succeeded
    ui.err.print(f"report written to {written} ({len(page) / 1e6:.1f} MB)")
    return reports


# -- experiment -----------------------------------------------------------------------------------
def experiment(*, name: str, out: Path, scheduler: str | None, workers: int | None, quick: bool,
               runs: int, periods: int, cases: int, rows: int, patients: int,
               input_path: Path | None, admissions: Path | None, schema: Path | None,
               rules: Path | None, seed: int | None) -> None:
    from ..experiments import ExperimentConfig, run_experiment
    from ..experiments.outputs import METRICS

    if workers is not None:
        check_int(workers, name="workers", owner="experiment", minimum=1)
    config = ExperimentConfig(experiment=name, quick=quick, runs=runs, periods=periods,
                              cases=cases, rows=rows, patients=patients, seed=seed,
                              input=input_path, admissions=admissions, schema=schema, rules=rules,
                              scheduler=scheduler, workers=workers)
    bar: dict = {}
    with contextlib.ExitStack() as stack:
        def on_start(total: int, cluster: str) -> None:
            ui.err.print(f"{name}: {total} tasks on a {cluster}")
            bar["step"] = stack.enter_context(progress_bar(name, total))

        result = run_experiment(config, out=out, on_start=on_start,
                                progress=lambda key: bar["step"](key))
    summary = result.summary
    metrics = [m for m, _ in METRICS[name] if f"{m}_mean" in summary.columns]
    params = [c for c in ("k", "theta", "alpha", "epsilon", "gamma") if c in summary.columns]
    table = Table("method", *params, *metrics, "tasks",
                  title=f"{result.meta['paper']}: mean over periods and runs")
    for _, row in summary.iterrows():
        table.add_row(str(row["method"]), *(str(row[p]) for p in params),
                      *("-" if pd.isna(row[f"{m}_mean"]) else f"{row[f'{m}_mean']:.4f}"
                        for m in metrics), str(row["tasks"]))
    ui.out.print(table)
    ui.out.print(f"{result.meta['tasks']} tasks on {len(result.meta['workers_used'])} worker(s) "
                 f"in {result.meta['seconds']} s; base seed {result.meta['base_seed']}; "
                 f"tables and figures in {out}")


# -- demo -----------------------------------------------------------------------------------------
DEMO_MARKER = ".medanon-demo"
DEMO_PARAMETERS = {"k": 5, "theta": "frequency", "on_infeasible": "raise-theta"}


def _demo_summary(reports: list) -> None:
    from ..report.collect import signal_tally

    safe, naive = reports
    table = Table("period", "PPMS++ NIL", "PPMS++ DIR", "PPMS++ DSR", "MS NIL", "MS DIR", "MS DSR",
                  title="Information loss (NIL), and groups left with < k candidates (DIR) or a "
                        "term above its theta (DSR) after the B-, F- and L-attacks")
    for a, b in zip(safe.releases, naive.releases):
        table.add_row(a["period"], *(_fmt(x[key]) for x in (a, b) for key in ("nil", "dir", "dsr")))
    ui.out.print(table)
    for r in reports:
        kept, lost, spurious = signal_tally(r)
        ui.out.print(f"{r.name}: planted signals kept {kept}, lost {lost}, spurious {spurious}; "
                     f"{sum(x['reidentified'] for x in r.releases)} case(s) re-identified by "
                     "record linkage (RR).")


def _write_planted_rules(path: Path) -> Path:
    """The synthetic series' planted signals as a rules file (TOML), for the demo's report."""
    from ..data.synth.faers import PLANTED_SIGNALS

    path.write_text("".join(
        f"[[rule]]\ndrug = {json.dumps(r.drug)}\nreaction = {json.dumps(r.reaction)}\n"
        f"condition = {json.dumps(r.condition)}\n\n" for r in PLANTED_SIGNALS), encoding="utf-8")
    return path


def demo(*, out: Path, seed: int) -> None:
    from ..data.synth.faers import write_faers_series

    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not (out / DEMO_MARKER).exists():
            raise ValidationError(f"{str(out)!r} is not empty and was not made by 'medanon demo'; "
                                  "choose another --out.")
        shutil.rmtree(out)  # our own earlier demo output: start afresh
    out.mkdir(parents=True, exist_ok=True)
    (out / DEMO_MARKER).write_text("made by medanon demo; safe to delete\n", encoding="utf-8")
    started = time.perf_counter()
    out_series = out / "faers-synthetic"
    store, contrast = out / "ppms++.duckdb", out / "ms.duckdb"
    ui.err.print(f"1/5 synthesizing an 8-quarter FAERS-like series (seed {seed}) ...")
    summary = write_faers_series(out_series, periods=8, cases=600, seed=seed)
    ui.err.print("2/5 ingesting it into two release stores ...")
    for target in (store, contrast):
        ingest(out_series, store=target, schema_path=None, keep_missing=False, as_json=False)
    ui.err.print("3/5 publishing every period with PPMS++ (k=5, frequency-based theta), and with "
                 "MS-Anonymization for contrast ...")
    for method, target in (("ppms++", store), ("ms", contrast)):
        release(store=target, periods=[], method=method, k=DEMO_PARAMETERS["k"],
                theta=DEMO_PARAMETERS["theta"], on_infeasible=DEMO_PARAMETERS["on_infeasible"],
                seed=None, allow_seeded=False, as_json=False)
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
