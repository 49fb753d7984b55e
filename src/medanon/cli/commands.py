"""What each CLI command does, over the library; option parsing lives in ``app.py``."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import duckdb
from rich.table import Table

from .._validation import check_choice, check_int
from ..anonymize import METHODS, Anonymizer
from ..data.loaders.faers import read_faers
from ..data.records import check_record_values
from ..data.schema import Schema
from ..errors import StoreError, ValidationError
from ..models import check_from_manifests
from ..random import make_random_source
from ..release.faers_layout import write_faers_release
from ..release.format import write_manifest, write_release, write_series_atomically
from ..release.publish import publish_periods
from ..store import ReleaseStore
from . import console as ui
from .console import progress_bar

EXPORT_FORMATS = ("csv", "parquet", "faers")


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


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
        _print_json(data)
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
    schema = Schema.from_toml(schema_path) if schema_path else Schema.default()
    hierarchies = schema.load_hierarchies()
    started = time.perf_counter()
    if store.exists():
        ReleaseStore.create_or_open(store, schema).close()  # fail fast on a bad --store
    # Parse and check everything before the store is touched: bad input writes nothing.
    with progress_bar("reading FAERS", None) as step:
        result = read_faers(source, keep_missing=keep_missing, progress=step)
    for quarter in result.quarters:
        check_record_values(quarter.records, schema, hierarchies)
    with ReleaseStore.create_or_open(store, schema) as db:
        summary = db.ingest([(q.period.label, q.era, str(source), q.records, q.report.as_dict())
                             for q in result.quarters], result.deleted_case_ids)
    seconds = round(time.perf_counter() - started, 2)
    reports = [q.report.as_dict() for q in result.quarters]
    if as_json:
        _print_json({"store": str(store), "quarters": reports, "added": summary.added,
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
                on_infeasible: str = "refuse") -> Anonymizer:
    """Build a method from command-line values, with messages that name the flags."""
    if method not in METHODS:
        raise ValidationError(f"Unknown method {method!r}; available: {', '.join(METHODS)}.")
    if method == "none":
        if any(v is not None for v in (k, theta, alpha, ss_rule, lifespan)):
            raise ValidationError("Method 'none' gives no privacy guarantee and takes no --k, "
                                  "--theta, --alpha, --ss-rule or --lifespan.")
        return METHODS[method]()
    if k is None or theta is None:
        raise ValidationError(f"Method {method!r} needs --k and --theta (e.g. --k 5 --theta 0.2).")
    check_int(k, name="k", owner="release", minimum=2)
    kwargs: dict = {"k": k, "theta": theta, "on_infeasible": on_infeasible}
    if method != "ms":
        kwargs["lifespan"] = lifespan
    elif lifespan is not None:
        raise ValidationError("Method 'ms' anonymizes each release on its own and takes no --lifespan.")
    if method == "ha":
        if alpha is None:
            raise ValidationError("Method 'ha' needs --alpha (e.g. --alpha 0.25).")
        kwargs["alpha"] = alpha
        if ss_rule is not None:
            kwargs["ss_rule"] = _parse_ss_rule(ss_rule)
    elif alpha is not None or ss_rule is not None:
        raise ValidationError(f"--alpha and --ss-rule apply to method 'ha' only, not {method!r}.")
    return METHODS[method](**kwargs)


def _parse_ss_rule(text: str) -> str | dict[str, int]:
    if text.strip() == "mean+sd":
        return "mean+sd"
    rule: dict[str, int] = {}
    for part in text.split(","):
        column, sep, count = part.partition("=")
        if not sep or not column.strip():
            raise ValidationError(f"--ss-rule must be 'mean+sd' or 'column=count,...'; got {text!r}.")
        try:
            rule[column.strip()] = int(count)
        except ValueError:
            raise ValidationError(f"--ss-rule count {count!r} is not an integer.") from None
    return rule


def release(*, store: Path, periods: list[str], method: str, k: int | None, theta: str | None,
            seed: int | None, allow_seeded: bool, as_json: bool, alpha: float | None = None,
            ss_rule: str | None = None, lifespan: int | None = None,
            on_infeasible: str = "refuse", publish_despite_violations: bool = False) -> None:
    anonymizer = make_method(method, k=k, theta=theta, alpha=alpha, ss_rule=ss_rule,
                             lifespan=lifespan, on_infeasible=on_infeasible)
    rng = make_random_source(seed)
    with ReleaseStore.open(store) as db:
        with progress_bar(f"publishing with {method}", None) as step:
            summaries = publish_periods(db, anonymizer, periods, rng, allow_seeded=allow_seeded,
                                        publish_despite_violations=publish_despite_violations,
                                        progress=step)
    if as_json:
        _print_json([s.__dict__ for s in summaries])
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
    if anonymizer.privacy_model is not None and any(s.suppressed for s in summaries):
        ui.err.print("note: some cases were withheld (they fit no group without breaking theta); "
                     "see each manifest's details.")


# -- export ---------------------------------------------------------------------------------------
def export(*, store: Path, out: Path, fmt: str) -> None:
    check_choice(fmt, name="format", owner="export", choices=EXPORT_FORMATS)
    with ReleaseStore.open(store) as db:
        periods = db.published_periods()
        if not periods:
            raise StoreError(f"Nothing is published in {str(store)!r} yet: run 'medanon release' first.")
        releases = {p: (db.release_rows(p), db.manifest(p)) for p in periods}

    sanitized = 0

    def writer(folder: Path, period: str) -> None:
        nonlocal sanitized
        rows, manifest = releases[period]
        if fmt == "csv":
            write_release(folder, rows, manifest)
            return
        folder.mkdir(parents=True)
        if fmt == "parquet":
            con = duckdb.connect()
            try:
                con.register("release_rows", rows)
                target = str(folder / "release.parquet").replace("'", "''")
                con.execute(f"COPY release_rows TO '{target}' (FORMAT PARQUET)")
            finally:
                con.close()
        else:
            sanitized += write_faers_release(folder, rows, period)
        write_manifest(folder, manifest)

    written = write_series_atomically(out, periods, writer)
    print(f"exported {len(written)} release(s) as {fmt} to {out}: {', '.join(periods)}")
    if sanitized:
        ui.err.print(f"note: {sanitized} value(s) contained '$', which the FAERS layout cannot carry; "
                  "they were written with a space instead.")


# -- inspect --------------------------------------------------------------------------------------
def inspect(*, store: Path, as_json: bool) -> None:
    with ReleaseStore.open(store) as db:
        frame = db.periods()
        schema = db.schema
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    if as_json:
        _print_json({"store": str(store), "schema": schema.name, "periods": records})
        return
    table = Table("period", "era", "reports", "cases", "published", "method", "released cases",
                  "groups", title=f"{store} (schema {schema.name!r})")
    for r in records:
        table.add_row(r["period"], str(r["era"] or ""), str(r["n_reports"]), str(r["n_cases"]),
                      "yes" if r["published"] else "no", str(r["method"] or ""),
                      str(r["released_cases"] or ""), str(r["released_groups"] or ""))
    ui.out.print(table)


# -- demo -----------------------------------------------------------------------------------------
def _attack_summary(store: Path) -> dict[str, tuple[float, float]]:
    """DIR and DSR of each published period under the B-, F- and L-attacks (independent check)."""
    with ReleaseStore.open(store) as db:
        periods = db.published_periods()
        rows = {p: db.release_rows(p) for p in periods}
        manifests = {p: db.manifest(p) for p in periods}
        schema = db.schema
    # MS declares no life span (None), so it is judged like the periodic model over the series.
    check = check_from_manifests(rows, manifests, schema)
    return {p.period: (p.dir, p.dsr) for p in check.periods}


DEMO_MARKER = ".medanon-demo"
DEMO_PARAMETERS = {"k": 5, "theta": "frequency", "on_infeasible": "raise-theta"}


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
    store, contrast = out / "demo.duckdb", out / "demo-ms.duckdb"
    ui.err.print(f"1/4 synthesizing an 8-quarter FAERS-like series (seed {seed}) ...")
    summary = write_faers_series(out_series, periods=8, cases=600, seed=seed)
    ui.err.print("2/4 ingesting it into the release store ...")
    for target in (store, contrast):
        ingest(out_series, store=target, schema_path=None, keep_missing=False, as_json=False)
    ui.err.print("3/4 publishing every period with PPMS++ (k=5, frequency-based theta), and with "
                 "MS-Anonymization for contrast ...")
    for method, target in (("ppms++", store), ("ms", contrast)):
        release(store=target, periods=[], method=method, k=DEMO_PARAMETERS["k"],
                theta=DEMO_PARAMETERS["theta"], on_infeasible=DEMO_PARAMETERS["on_infeasible"],
                seed=None, allow_seeded=False, as_json=False)
    ui.err.print("4/4 exporting the PPMS++ series and replaying the B-, F- and L-attacks ...")
    export(store=store, out=out / "published", fmt="csv")
    safe, naive = _attack_summary(store), _attack_summary(contrast)
    table = Table("period", "PPMS++ DIR", "PPMS++ DSR", "MS DIR", "MS DSR",
                  title="Groups left with < k candidates (DIR) or a term above its theta (DSR) "
                        "after the BFL-attacks")
    for period in safe:
        table.add_row(period, f"{safe[period][0]:.2f}", f"{safe[period][1]:.2f}",
                      f"{naive[period][0]:.2f}", f"{naive[period][1]:.2f}")
    ui.out.print(table)
    ui.out.print(f"\nDemo finished in {time.perf_counter() - started:.1f} s. "
                 f"Synthetic input: {out_series} ({len(summary.periods)} quarters); stores: {store} "
                 f"(PPMS++), {contrast} (MS); published series: {out / 'published'}.")
