"""Benchmark: does the cost of a quarter grow with the quarters already published? (issue 30)

A series lasts only if releasing quarter N costs about what releasing quarter 2 did. This runs a
series the way a user does, one quarter at a time, every step the real command
(``python -m medanon ...``) in its own fresh child process:

* synth     ``medanon synth faers`` writes N quarters of M cases (follow-up rate 0.1, seeded)
* ingest    ``medanon ingest QUARTER`` once per quarter, into one release store
* release   ``medanon release QUARTER`` once per quarter, in order (seeded; every option of the
            method is an argument here). By default quarter q is released right after it is
            ingested, before q+1 arrives; HA needs the next quarter to release one (its
            MD-attack), so it releases q once q+1 is ingested, and N - 1 of N quarters.
            --ingest-first ingests every quarter before the first release instead.
* verify, evaluate  ``medanon verify`` and ``medanon evaluate`` (with the planted signals'
            rules), once each over the whole series after the last release.

Each child's wall time, CPU time (user + system) and peak RSS come from its own rusage
(``os.wait4``). The table gives them per quarter, then the ratio of the last quarter's figure to
the second's: 1.0 is a series whose quarters cost the same however long it gets. (The first
quarter is not the base: it has no follow-ups and no earlier release to link them to.)
Each child's CPU includes its start-up (imports, opening the store), about the same in every
quarter, which damps a ratio at small --cases.

This script never imports medanon (a child's peak RSS starts at its parent's high-water mark),
and borrows its measuring from bench_faers_scale.py beside it. Not a test: figures on a shared
machine are noisy (the load average is printed).

    python benchmarks/bench_series_growth.py --quarters 4 --cases 2000
    python benchmarks/bench_series_growth.py --quarters 8 --cases 10000 --json
    python benchmarks/bench_series_growth.py --quarters 8 --lifespan 4 --stages release
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

# benchmarks/ is no package: run as a script, this file's folder is sys.path[0]
from bench_faers_scale import (
    METHODS,
    Measure,
    StageFailed,
    add_run_arguments,
    check_workdir,
    finish,
    medanon_runner,
    run_in_work,
    size_mb,
    split_list,
    verify_note,
    write_rules,
)

STAGES = ("synth", "ingest", "release", "verify", "evaluate")
ON_INFEASIBLE = ("refuse", "raise-theta", "suppress-terms")
#: the methods that release a quarter only once the next one is ingested
NEEDS_NEXT = ("ha",)


def plan(stages: list[str]) -> list[str]:
    """The stages to run, in order: the ones asked for and those they need (verify and evaluate
    read the released series, release needs the ingested quarters, ingest the synthetic ones)."""
    wanted = set(stages)
    if wanted & {"verify", "evaluate"}:
        wanted.add("release")
    if "release" in wanted:
        wanted.add("ingest")
    if "ingest" in wanted:
        wanted.add("synth")
    return [s for s in STAGES if s in wanted]


def release_flags(args: argparse.Namespace) -> list[str]:
    """``medanon release``'s options for this run (the period and store are added per call)."""
    flags = ["--method", args.method, "--k", str(args.k), "--theta", args.theta,
             "--on-infeasible", args.on_infeasible, "--seed", str(args.seed), "--allow-seeded",
             "--json"]
    if args.lifespan is not None:
        flags += ["--lifespan", str(args.lifespan)]
    if args.max_withheld is not None:
        flags += ["--max-withheld", str(args.max_withheld)]
    if args.method == "ha":
        flags += ["--alpha", str(args.alpha)]
    if args.method.startswith("ppms-dp"):
        flags += ["--epsilon", args.epsilon]
    if args.publish_despite_violations:
        flags.append("--publish-despite-violations")
    return flags


def schedule(periods: list[str], *, ingest_first: bool, lag: int) -> list[tuple[str, str]]:
    """The order of the per-quarter steps: ("ingest" | "release", period).

    Quarter q is released as soon as it and the ``lag`` quarters after it are ingested (lag 1:
    HA); with ``ingest_first`` every quarter is ingested before the first release. A quarter
    whose next ones never come is not released.
    """
    released = periods[:len(periods) - lag] if lag else list(periods)
    if ingest_first:
        return [("ingest", p) for p in periods] + [("release", p) for p in released]
    steps: list[tuple[str, str]] = []
    for i, period in enumerate(periods):
        steps.append(("ingest", period))
        if i - lag >= 0:
            steps.append(("release", periods[i - lag]))
    return steps


def release_note(stdout: str) -> str:
    """What one quarter's release did, from its --json rows."""
    notes = []
    for row in json.loads(stdout):
        note = f"{row['groups']:,} groups"
        if row.get("suppressed") or row.get("suppressed_terms"):
            note += f", {row.get('suppressed', 0):,} cases / {row.get('suppressed_terms', 0):,} "
            note += "terms suppressed"
        if row.get("caps_raised"):
            note += f", {len(row['caps_raised'])} theta(s) raised"
        if row.get("verdict") != "passed":
            note += "; gate found violations (published despite)"
        notes.append(note)
    return "; ".join(notes)


def ratio(values: list[float]) -> float | None:
    """The last value over the second (None with fewer than two, or a second of 0)."""
    return values[-1] / values[1] if len(values) >= 2 and values[1] > 0 else None


def growth(rows: list[dict], stage: str) -> dict:
    """Last / second quarter of ``stage``'s CPU, wall time and peak RSS (None when unknown)."""
    measures = [row[stage] for row in rows if row.get(stage) is not None]
    return {"cpu_s": ratio([m.cpu_s for m in measures]),
            "wall_s": ratio([m.wall_s for m in measures]),
            "peak_rss_mb": ratio([m.peak_rss_mb for m in measures]),
            "quarters": len(measures)}


def _cells(measure: Measure | None) -> str:
    if measure is None:
        return f"{'-':>7}  {'-':>7}  {'-':>7}"
    return f"{measure.cpu_s:>7.2f}  {measure.wall_s:>7.2f}  {measure.peak_rss_mb:>7.0f}"


def _ratio_cell(value: float | None, digits: int = 2) -> str:
    return f"{'-':>7}" if value is None else f"{value:>7.{digits}f}"


def format_table(rows: list[dict], series: list[Measure]) -> str:
    """Per quarter: ingest and release CPU s, wall s and peak RSS MB, the store's size after
    the release and the release's note; then last / second for each figure, then the
    whole-series stages (verify, evaluate) with their CPU per released quarter."""
    head = f"{'CPU s':>7}  {'wall s':>7}  {'RSS MB':>7}"
    lines = [f"{'':<14}  {'ingest':^25}  {'release':^25}",
             f"{'quarter':<14}  {head}  {head}  {'store':>8}  note"]
    for row in rows:
        release = row.get("release")
        lines.append(f"{row['period']:<14}  {_cells(row.get('ingest'))}  {_cells(release)}  "
                     f"{row.get('store', ''):>8}  {release.note if release else ''}".rstrip())
    if rows:
        ratios = [growth(rows, stage) for stage in ("ingest", "release")]
        lines.append(f"{'last / second':<14}  " + "  ".join(
            f"{_ratio_cell(r['cpu_s'])}  {_ratio_cell(r['wall_s'])}  "
            f"{_ratio_cell(r['peak_rss_mb'])}" for r in ratios))
    if series:
        released = sum(1 for row in rows if row.get("release") is not None)
        width = max(len("whole series"), *(len(m.stage) for m in series))
        lines += ["", f"{'whole series':<{width}}  {head}  {'CPU s / quarter':>15}  note"]
        for m in series:
            per_quarter = f"{m.cpu_s / released:>15.2f}" if released else f"{'-':>15}"
            lines.append(f"{m.stage:<{width}}  {_cells(m)}  {per_quarter}  {m.note}".rstrip())
    return "\n".join(lines)


def pipeline(args, work: Path, rows: list[dict], series: list[Measure], setup: list[Measure],
             rules: list) -> None:
    """Run the planned stages into ``work``: a row per quarter in ``rows`` (filled as each step
    ends, so that a later failure still shows the earlier ones), verify and evaluate in
    ``series``, synth in ``setup``."""
    stages = plan(args.stages)
    stage = medanon_runner(work)
    source, store = work / "faers", work / "series.duckdb"

    if "synth" not in stages:
        return
    synth = ["synth", "faers", source, "--periods", str(args.quarters), "--cases",
             str(args.cases), "--follow-up-rate", str(args.follow_up_rate), "--seed",
             str(args.seed), "--json"]
    if args.lifespan is not None:  # follow-ups the release's lifespan can link
        synth += ["--lifespan", str(args.lifespan)]
    m, out = stage("synth", synth)
    periods = json.loads(out)["periods"]
    m.note = f"{size_mb(source)} of FAERS text"
    setup.append(m)
    by_period = {p: {"period": p} for p in periods}
    rows.extend(by_period.values())
    if "ingest" not in stages:
        return
    steps = schedule(periods, ingest_first=args.ingest_first,
                     lag=1 if args.method in NEEDS_NEXT else 0)
    if "release" not in stages:
        steps = [s for s in steps if s[0] == "ingest"]
    flags = release_flags(args)
    for step, period in steps:
        row = by_period[period]
        if step == "ingest":
            m, out = stage(f"ingest {period}", ["ingest", source / period, "--store", store,
                                                "--json"])
            quarter = json.loads(out)["quarters"][0]
            row.update(reports=quarter["reports"], cases=quarter["cases"])
        else:
            m, out = stage(f"release {period}", ["release", period, "--store", store, *flags])
            row["store"] = size_mb(store)
            m.note = release_note(out)
        row[step] = m
    if "verify" in stages:
        m, out = stage("verify", ["verify", "--store", store, "--json"], accept=(0, 1))
        m.note = verify_note(out)
        series.append(m)
    if "evaluate" in stages:
        rules_file = write_rules(work / "signal-rules.toml", rules)
        m, _ = stage("evaluate", ["evaluate", "--store", store, "--rules", rules_file])
        m.note = "NIL, RR/AR_rev, signals, screening"
        series.append(m)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quarters", type=int, default=8, help="quarters in the series")
    parser.add_argument("--cases", type=int, default=10_000, help="cases per quarter (synth)")
    parser.add_argument("--method", default="ppms++", choices=METHODS)
    parser.add_argument("--theta", default="frequency",
                        help="release --theta: a number in (0, 1], 'frequency' or a file")
    parser.add_argument("--lifespan", default="none",
                        help="release --lifespan in quarters, or 'none' (links to every earlier "
                             "release); also synth's, so that the data's follow-ups fit it")
    parser.add_argument("--on-infeasible", default="suppress-terms", choices=ON_INFEASIBLE)
    parser.add_argument("--max-withheld", type=float,
                        help="release --max-withheld (default: medanon's)")
    parser.add_argument("--publish-despite-violations", action="store_true",
                        help="publish a quarter the verify gate refuses (said in the table)")
    parser.add_argument("--follow-up-rate", type=float, default=0.1, help="synth's")
    parser.add_argument("--ingest-first", action="store_true",
                        help="ingest every quarter before the first release")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help="stages to run, comma list (the ones they need run too)")
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    if args.cases < 1 or args.quarters < 1:
        parser.error("--cases and --quarters must be at least 1")
    if args.lifespan.strip().lower() == "none":
        args.lifespan = None
    elif not args.lifespan.isdigit() or int(args.lifespan) < 1:
        parser.error(f"--lifespan: a whole number of quarters or 'none', not {args.lifespan!r}")
    else:
        args.lifespan = int(args.lifespan)
    try:
        args.stages = split_list(args.stages, STAGES, "--stages")
    except ValueError as exc:
        parser.error(str(exc))
    check_workdir(parser, args.workdir)
    return args


def to_json(args, host: dict, rows: list[dict], series: list[Measure], setup: list[Measure],
            failed: StageFailed | None) -> dict:
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    return {"machine": host, "settings": settings,
            "setup": [asdict(m) for m in setup],
            "quarters": [{k: asdict(v) if isinstance(v, Measure) else v for k, v in row.items()}
                         for row in rows],
            "last_over_second": {stage: growth(rows, stage) for stage in ("ingest", "release")},
            "series": [asdict(m) for m in series],
            "failed": failed and {"stage": failed.label, "exit": failed.code}}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows: list[dict] = []
    series: list[Measure] = []
    setup: list[Measure] = []
    work, host, failed = run_in_work(
        args, "bench-series-growth-", f"{args.quarters} quarter(s) x {args.cases:,} cases",
        lambda work, rules: pipeline(args, work, rows, series, setup, rules))
    lifespan = "none (every earlier release)" if args.lifespan is None else args.lifespan
    print(f"{args.quarters} quarter(s) x {args.cases:,} cases (follow-up rate "
          f"{args.follow_up_rate}); method {args.method}, k {args.k}, theta {args.theta}, "
          f"lifespan {lifespan}, on-infeasible {args.on_infeasible}"
          + (", publish despite violations" if args.publish_despite_violations else "")
          + ("; every quarter ingested first" if args.ingest_first else
             "; each quarter released before the next is ingested"
             + (" (HA: once the next is)" if args.method in NEEDS_NEXT else "")))
    for m in setup:
        print(f"{m.stage}: {m.wall_s:.2f} s wall, {m.cpu_s:.2f} s CPU, {m.peak_rss_mb:.0f} MB "
              f"peak RSS; {m.note}")
    print()
    print(format_table(rows, series))
    if args.json:
        print(json.dumps(to_json(args, host, rows, series, setup, failed), indent=1))
    refused = failed is not None and failed.label.startswith("release")
    return finish(args, work, failed, " (a refused release: see --on-infeasible, --max-withheld "
                  "and --publish-despite-violations)" if refused else "")


if __name__ == "__main__":
    sys.exit(main())
