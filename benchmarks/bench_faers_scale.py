"""Benchmark: the whole FAERS pipeline at scale, stage by stage, as a user runs it.

Every stage is the real command (``python -m medanon ...``) in a fresh child process, so each
figure is that command's own: wall time, CPU time (user + system) and peak resident memory, read
from the child's rusage (``os.wait4``) and never mixed with another stage's. The stages:

* synth     ``medanon synth faers`` writes P quarters of N cases (follow-up rate 0.1)
* ingest    ``medanon ingest`` reads them into a release store (every report kept)
* release   ``medanon release`` once per method, each into its own copy of the ingested store
            (k, frequency-based theta, suppress-terms, seeded; HA with --alpha, the PPMS-DP
            methods with --epsilon). The gate runs as always; a release it finds violating is
            published anyway (``--publish-despite-violations``) so that the stages after it can
            be timed, and the table says so. HA publishes a quarter only once the next one is
            ingested (its MD-attack needs it): of P quarters it publishes P - 1.
* verify, attack (the worst case over all groups), evaluate (NIL, RR/AR_rev and the planted
  signals' PRR), export (each format) and report (HTML) on the store of each --downstream method.

A child's peak RSS starts at its parent's high-water mark (fork and exec keep it), so this script
never imports medanon itself and prints its own peak (about 15 MB), a floor under every figure.
Not a test: figures on a shared machine are noisy (the load average is printed).

    python benchmarks/bench_faers_scale.py                          # 2 quarters x 100k cases
    python benchmarks/bench_faers_scale.py --cases 3000 --methods ppms++,ms --json
    python benchmarks/bench_faers_scale.py --cases 450000 --stages synth,ingest --keep
    python benchmarks/bench_faers_scale.py --cases 450000 --methods ppms++ --stages release \
        --per-period --floor                                        # issue 43's quarter figures

Goals: ``medanon synth faers --cases 450000`` at most 60 s per quarter; ingest and the release
of quarter 1 and of quarter 2 (the gate included) at most 15 s CPU and 1 GB each at 450k cases
(issue 43; ``--per-period`` gives a figure per quarter, ``--floor`` the ratio to one pass).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

STAGES = ("synth", "ingest", "release", "verify", "attack", "evaluate", "export", "report")
#: the stages that read a published store (they need the release of their method)
DOWNSTREAM_STAGES = STAGES[3:]
METHODS = ("ms", "ppms", "ppms+", "ppms++", "ha", "ppms-dp-num", "ppms-dp-all")
EXPORT_FORMATS = ("csv", "parquet", "faers")
STDERR_TAIL = 40  # lines of a failed stage's stderr to print


class StageFailed(Exception):
    def __init__(self, label: str, code: int, stderr_tail: str):
        super().__init__(f"stage {label!r} exited with {code}")
        self.label, self.code, self.stderr_tail = label, code, stderr_tail


@dataclass
class Measure:
    """One stage's figures, from its child process's own rusage."""

    stage: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    note: str = ""
    command: str = ""


def peak_rss_mb(ru_maxrss: int, platform: str = sys.platform) -> float:
    """ru_maxrss in MB: Linux reports KiB, macOS bytes."""
    return ru_maxrss / (1024 * 1024) if platform == "darwin" else ru_maxrss / 1024


def run_stage(label: str, argv: list[str], logs: Path, *,
              accept: tuple[int, ...] = (0,)) -> tuple[Measure, str]:
    """Run ``argv`` as a child and measure it; (its figures, its stdout).

    stdout and stderr go to files (a pipe left unread could block a chatty child) kept in
    ``logs``. ``accept`` lists the exit codes that count as success (``verify`` exits 1 when a
    release violates its model, which is a finding, not a failure).

    Raises:
        StageFailed: the child exited with another code.
    """
    stem = logs / label.replace(" ", "-").replace("+", "p")
    out_path, err_path = stem.with_suffix(".out"), stem.with_suffix(".err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err)
        # wait4, not Popen.wait: it returns this child's own rusage (getrusage(RUSAGE_CHILDREN)
        # would add up every child so far and keep the largest peak of them all)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in accept:
        lines = err_path.read_text(encoding="utf-8", errors="replace").splitlines()
        raise StageFailed(label, process.returncode, "\n".join(lines[-STDERR_TAIL:]))
    measure = Measure(label, wall, usage.ru_utime + usage.ru_stime, peak_rss_mb(usage.ru_maxrss),
                      command=shlex.join(map(str, argv)))
    return measure, out_path.read_text(encoding="utf-8", errors="replace")


def split_list(text: str, allowed: tuple[str, ...], option: str) -> list[str]:
    """A comma list of names from ``allowed``, in the order given, without repeats.

    Raises:
        ValueError: an unknown or no name (the message names the option).
    """
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise ValueError(f"{option}: unknown {', '.join(map(repr, unknown))}" if unknown else
                         f"{option}: no name given")
    return names


def plan(stages: list[str], methods: list[str], downstream: list[str]
         ) -> tuple[list[str], list[str], list[str]]:
    """(stages to run, methods to release, methods whose store the later stages read).

    A stage needs the ones before it: ingest needs synth, release needs ingest, and a stage
    after release needs the release of each downstream method, which is added to the methods
    released even when --methods leaves it out. Stages run in pipeline order.
    """
    wanted = set(stages)
    later = bool(wanted & set(DOWNSTREAM_STAGES))
    if later:
        wanted.add("release")
    if "release" in wanted:
        wanted.add("ingest")
    if "ingest" in wanted:
        wanted.add("synth")
    released: list[str] = []
    if "release" in wanted:
        chosen = set(methods if "release" in stages else []) | set(downstream if later else [])
        released = [m for m in METHODS if m in chosen]
    return [s for s in STAGES if s in wanted], released, (downstream if later else [])


def run_flags(seed: int) -> list[str]:
    """The flags of every release of a series (a later release takes the pinned policy)."""
    return ["--seed", str(seed), "--allow-seeded", "--publish-despite-violations", "--json"]


def release_flags(method: str, *, k: int, alpha: float, epsilon: str, seed: int) -> list[str]:
    flags = ["--method", method, "--k", str(k), "--theta", "frequency",
             "--on-infeasible", "suppress-terms", *run_flags(seed)]
    if method == "ha":
        flags += ["--alpha", str(alpha)]
    if method.startswith("ppms-dp"):
        flags += ["--epsilon", epsilon]
    return flags


def format_table(measures: list[Measure], floor_s: float | None = None) -> str:
    """The figures as a text table, with a total line (sums of times, largest peak); with
    ``floor_s`` (:func:`one_pass_floor`), each stage's CPU as a multiple of it too."""
    width = max([len("stage"), len("total"), *(len(m.stage) for m in measures)])
    ratio = f"  {'x floor':>8}" if floor_s else ""
    lines = [f"{'stage':<{width}}  {'wall s':>8}  {'CPU s':>8}{ratio}  {'peak RSS MB':>11}  note"]
    for m in measures:
        times = f"{m.cpu_s / floor_s:>8.0f}" if floor_s else ""
        lines.append(f"{m.stage:<{width}}  {m.wall_s:>8.2f}  {m.cpu_s:>8.2f}"
                     f"{'  ' + times if floor_s else ''}  {m.peak_rss_mb:>11.0f}  {m.note}".rstrip())
    if measures:
        lines.append(f"{'total':<{width}}  {sum(m.wall_s for m in measures):>8.2f}  "
                     f"{sum(m.cpu_s for m in measures):>8.2f}  {' ' * 10 if floor_s else ''}"
                     f"{max(m.peak_rss_mb for m in measures):>11.0f}  (largest peak)")
    return "\n".join(lines)


#: one vectorized pass over N rows (the issue's floor): factorize a text column, group by its
#: codes, lexsort three integer columns. The best of 5, in a child (this script imports neither
#: medanon nor pandas).
_FLOOR = """
import sys, time
import numpy as np, pandas as pd
n = int(sys.argv[1])
rng = np.random.default_rng(0)
case = pd.Series(rng.integers(0, 10 * n, n).astype(str))
term, age = rng.integers(0, 5000, n), rng.integers(0, 100, n)
best = float("inf")
for _ in range(5):
    start = time.process_time()
    codes, _ = pd.factorize(case)
    pd.DataFrame({"c": codes, "t": term, "a": age}).groupby("c").agg({"t": "max", "a": "min"})
    np.lexsort((age, term, codes))
    best = min(best, time.process_time() - start)
print(best)
"""


def one_pass_floor(rows: int) -> float:
    """CPU seconds of one vectorized pass over ``rows`` rows (:data:`_FLOOR`)."""
    done = subprocess.run([sys.executable, "-c", _FLOOR, str(rows)], capture_output=True,
                          text=True, check=True)
    return float(done.stdout.strip())


def size_mb(path: Path) -> str:
    """The size of a file or folder in MB, as text (one decimal below 10 MB)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    mb = sum(p.stat().st_size for p in files) / 1e6
    return f"{mb:.1f} MB" if mb < 10 else f"{mb:.0f} MB"


def machine() -> dict:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cores": os.cpu_count(), "memory_gb": round(memory / 2**30, 1),
            "load_average": round(os.getloadavg()[0], 2), "python": sys.version.split()[0]}


#: run in a child: medanon's version and folder, and the synthetic series' planted signals
_INFO = ("import json, pathlib, medanon; from medanon.data.synth.faers import PLANTED_SIGNALS; "
         "print(json.dumps({'version': medanon.__version__, "
         "'path': str(pathlib.Path(medanon.__file__).parent), "
         "'rules': [[r.drug, r.reaction, r.condition] for r in PLANTED_SIGNALS]}))")


def medanon_info() -> dict:
    """What :data:`_INFO` prints. Asked of a child so that this process never imports medanon
    (numpy, DuckDB...): a child's peak RSS starts at this process's size (fork and exec keep the
    high-water mark of the memory they replace), so the parent must stay small."""
    done = subprocess.run([sys.executable, "-c", _INFO], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"cannot import medanon with {sys.executable}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def precompile(package: Path | str) -> float:
    """Compile ``package``'s modules to bytecode beside their source (``__pycache__``, as Python
    itself would on a first import); the CPU seconds it took.

    An installed medanon has its bytecode (pip compiles a wheel's modules when it installs
    them), and so has a checkout after its first run, unless ``PYTHONDONTWRITEBYTECODE`` is set,
    as on this project's machines. Then every child compiled the modules it imports (about
    0.2 s of a release's CPU, issue 43), a cost no user pays twice. ``compileall`` writes
    whatever that variable says; a source newer than its bytecode is compiled again, so a
    stale file is never read."""
    started = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                   stdout=subprocess.DEVNULL)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ended.ru_utime + ended.ru_stime) - (started.ru_utime + started.ru_stime)


def bytecode_note(package: Path | str, cold: bool) -> str:
    """Compile ``package`` unless ``cold``; the line that says which the figures are."""
    if cold:
        return ("bytecode: not compiled beforehand (--cold-bytecode): with "
                "PYTHONDONTWRITEBYTECODE set, each command compiles the modules it imports")
    return (f"bytecode: medanon's compiled before timing, as an installed package has it "
            f"({precompile(package):.2f} s CPU, not counted; --cold-bytecode to count it)")


def write_rules(path: Path, rules: list[list[str]]) -> Path:
    """Signal rules (drug, reaction, condition) as a TOML file, for evaluate and report."""
    path.write_text("".join(
        f"[[rule]]\ndrug = {json.dumps(drug)}\nreaction = {json.dumps(reaction)}\n"
        f"condition = {json.dumps(condition)}\n\n" for drug, reaction, condition in rules),
        encoding="utf-8")
    return path


def copy_store(source: Path, target: Path) -> None:
    shutil.copyfile(source, target)
    wal = source.with_name(source.name + ".wal")
    if wal.exists():  # an unflushed write-ahead log belongs to the store
        shutil.copyfile(wal, target.with_name(target.name + ".wal"))


def release_note(stdout: str, periods: int) -> str:
    rows = json.loads(stdout)
    violated = [r["period"] for r in rows if r.get("verdict") != "passed"]
    # HA publishes a quarter only once the next one is ingested (its MD-attack needs it)
    note = f"{len(rows)} of {periods} period(s), {sum(r['groups'] for r in rows):,} groups"
    suppressed = sum(r.get("suppressed", 0) for r in rows)
    terms = sum(r.get("suppressed_terms", 0) for r in rows)
    if suppressed or terms:
        note += f", {suppressed:,} cases / {terms:,} terms suppressed"
    if violated:
        note += f"; gate found violations at {', '.join(violated)} (published despite)"
    return note


def verify_note(stdout: str) -> str:
    data = json.loads(stdout)
    bad = [r["period"] for r in data["releases"] if r["verdict"] != "passed"]
    return "all releases hold their model" if data["ok"] else f"violated: {', '.join(bad) or '-'}"


def medanon_runner(work: Path) -> Callable[..., tuple[Measure, str]]:
    """A function ``(label, medanon's arguments, accept=...)`` that runs ``python -m medanon``
    with them as a stage (:func:`run_stage`, its output in ``work``/logs) and says so on
    stderr."""
    logs = work / "logs"
    logs.mkdir()
    medanon = [sys.executable, "-m", "medanon"]

    def stage(label: str, argv: list, **kw) -> tuple[Measure, str]:
        print(f"... {label}", file=sys.stderr, flush=True)
        return run_stage(label, [*medanon, *argv], logs, **kw)
    return stage


def pipeline(args, work: Path, measures: list[Measure], sizes: dict, rules: list) -> None:
    """Run the planned stages into ``work``, appending each figure to ``measures``, and the
    reports and cases of each ingested quarter to ``sizes`` (filled as soon as known, so that a
    later stage's failure still shows them)."""
    stages, released, downstream = plan(args.stages, args.methods, args.downstream)
    run_medanon = medanon_runner(work)
    series, ingested = work / "faers", work / "ingested.duckdb"

    def stage(label: str, argv: list[str], **kw) -> tuple[Measure, str]:
        measure, stdout = run_medanon(label, argv, **kw)
        measures.append(measure)
        return measure, stdout

    if "synth" in stages:
        m, out = stage("synth", ["synth", "faers", series, "--periods", str(args.periods),
                                 "--cases", str(args.cases), "--follow-up-rate", "0.1",
                                 "--profile", args.profile, "--seed", str(args.seed), "--json"])
        summary = json.loads(out)
        m.note = (f"{size_mb(series)} of FAERS text, "
                  f"{m.wall_s / max(len(summary['periods']), 1):.1f} s per quarter")
    if "ingest" in stages:
        m, out = stage("ingest", ["ingest", series, "--store", ingested, "--json"])
        sizes.update({q["period"]: {"reports": q["reports"], "cases": q["cases"],
                                    "demo_rows": q["demo_rows"]}
                      for q in json.loads(out)["quarters"]})
        m.note = f"store {size_mb(ingested)}"
    stores = {}
    for method in released:
        stores[method] = store = work / f"{method}.duckdb"
        copy_store(ingested, store)  # not timed: each method starts from the same store
        flags = release_flags(method, k=args.k, alpha=args.alpha, epsilon=args.epsilon,
                              seed=args.seed)
        if not args.per_period:
            m, out = stage(f"release {method}", ["release", "--store", store, *flags])
            m.note = release_note(out, len(sizes) or args.periods)
            continue
        # one process per quarter, as a holder publishes them: the first pins the policy
        periods = sorted(sizes)
        for i, period in enumerate(periods[:-1] if method == "ha" else periods):
            m, out = stage(f"release {method} {period}",
                           ["release", "--store", store, *(flags if i == 0 else
                                                           run_flags(args.seed)), period])
            m.note = release_note(out, 1)
    rules_file = write_rules(work / "signal-rules.toml", rules)
    for method in downstream:
        store = stores[method]
        if "verify" in stages:
            m, out = stage(f"verify {method}", ["verify", "--store", store, "--json"], accept=(0, 1))
            m.note = verify_note(out)
        if "attack" in stages:
            stage(f"attack {method}", ["attack", "--store", store])[0].note = "worst case, all groups"
        if "evaluate" in stages:
            stage(f"evaluate {method}", ["evaluate", "--store", store, "--rules", rules_file]
                  )[0].note = "NIL, RR/AR_rev, signals"
        if "export" in stages:
            for fmt in args.export_formats:
                out_dir = work / "export" / method / fmt
                out_dir.parent.mkdir(parents=True, exist_ok=True)
                m, _ = stage(f"export {method} {fmt}",
                             ["export", "--store", store, "--out", out_dir, "--format", fmt])
                m.note = size_mb(out_dir)
        if "report" in stages:
            html = work / f"report-{method}.html"
            m, _ = stage(f"report {method}",
                         ["report", "--store", store, "--out", html, "--rules", rules_file])
            m.note = f"{size_mb(html)} of HTML"


def describe_sizes(sizes: dict) -> str:
    if not sizes:
        return "sizes: (no ingest)"
    return "sizes per quarter: " + "; ".join(
        f"{p} {s['demo_rows']:,} DEMO rows -> {s['reports']:,} reports / {s['cases']:,} cases"
        for p, s in sizes.items())


def check_workdir(parser: argparse.ArgumentParser, workdir: Path | None) -> None:
    """Stops with a usage error unless --workdir is absent, new or an empty folder (whatever
    it holds at the end is removed unless --keep)."""
    if workdir is not None and workdir.exists() and (
            not workdir.is_dir() or any(workdir.iterdir())):
        parser.error(f"--workdir {str(workdir)!r} is not an empty folder")


def make_work(workdir: Path | None, prefix: str) -> Path:
    """The folder to work in: ``workdir`` (created if new; parse_args checked that it is empty)
    or a new temporary folder."""
    if workdir is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir


def remove_work(work: Path, *, given: bool) -> None:
    """Remove what this run wrote into ``work``, and ``work`` itself unless it was given
    (a given --workdir was new or empty, so all it holds is this run's)."""
    for child in list(work.iterdir()) if work.exists() else []:
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()
    if not given:
        work.rmdir()


def describe_machine(host: dict) -> str:
    """Adds the load average at the end and this script's own peak RSS to ``host`` (from
    :func:`machine`) and says them all in one line."""
    host["load_average_end"] = round(os.getloadavg()[0], 2)
    # every child's peak RSS includes at least this (see medanon_info)
    host["bench_rss_mb"] = round(peak_rss_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    return (f"\nmachine: {host['cores']} cores, {host['memory_gb']} GB memory, load average "
            f"{host['load_average']} at start / {host['load_average_end']} at end; this script's "
            f"own peak RSS {host['bench_rss_mb']} MB (a floor under each figure)")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every whole-pipeline benchmark takes: the release's k, HA's alpha and
    PPMS-DP's epsilon, the seed, the work folder, the output and the bytecode's state."""
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--alpha", type=float, default=0.5, help="HA's alpha")
    parser.add_argument("--epsilon", default="1", help="PPMS-DP's epsilon per perturbed QID")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path,
                        help="folder to work in: new or empty (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder at the end")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--cold-bytecode", action="store_true",
                        help="do not compile medanon's bytecode before timing (see precompile)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=100_000, help="cases per quarter (synth)")
    parser.add_argument("--periods", type=int, default=2,
                        help="quarters (2: the second has follow-ups to cover)")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help=f"release methods, comma list (default all: {','.join(METHODS)})")
    parser.add_argument("--downstream", default="ppms++",
                        help="method(s) whose store verify..report read, comma list")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help="stages to run, comma list (the ones they need run too)")
    parser.add_argument("--export-formats", default=",".join(EXPORT_FORMATS))
    parser.add_argument("--profile", default="default",
                        help="synth profile: default (FAERS-like) | legacy | faers-2004 | ...")
    parser.add_argument("--per-period", action="store_true",
                        help="release each quarter in its own process (a figure per quarter; "
                             "needs the ingest stage for the quarters' labels)")
    parser.add_argument("--floor", action="store_true",
                        help="also give each stage's CPU as a multiple of one vectorized pass "
                             "over a quarter's rows")
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    if args.cases < 1 or args.periods < 1:
        parser.error("--cases and --periods must be at least 1")
    try:
        args.stages = split_list(args.stages, STAGES, "--stages")
        args.methods = split_list(args.methods, METHODS, "--methods")
        args.downstream = split_list(args.downstream, METHODS, "--downstream")
        args.export_formats = split_list(args.export_formats, EXPORT_FORMATS, "--export-formats")
    except ValueError as exc:
        parser.error(str(exc))
    check_workdir(parser, args.workdir)
    return args


def run_in_work(args, prefix: str, what: str,
                run: Callable[[Path, list], None]) -> tuple[Path, dict, StageFailed | None]:
    """Run ``run(work folder, the planted signals' rules)`` and print the machine's figures;
    (the work folder, those figures, the stage that failed or None).

    The folder is --workdir or a new temporary one named ``prefix...``, emptied at the end
    unless --keep. ``what`` says the series's size in the first line (on stderr)."""
    info = medanon_info()
    work = make_work(args.workdir, prefix)
    host = machine()
    print(f"medanon {info['version']} ({info['path']}), Python {host['python']}; {what}, "
          f"seed {args.seed}; work folder {work}", file=sys.stderr)
    print(bytecode_note(info["path"], args.cold_bytecode), file=sys.stderr)
    failed: StageFailed | None = None
    try:
        run(work, info["rules"])
    except StageFailed as exc:
        failed = exc
    finally:
        if not args.keep:
            remove_work(work, given=args.workdir is not None)
    print(describe_machine(host))
    return work, host, failed


def finish(args, work: Path, failed: StageFailed | None, hint: str = "") -> int:
    """Say where the kept work folder is and which stage failed (with ``hint`` and its stderr's
    tail); the exit code."""
    if args.keep:
        print(f"\nwork folder kept: {work} (stage logs in {work / 'logs'})")
    if failed is None:
        return 0
    print(f"\nFAILED: {failed}{hint}; its stderr (last {STDERR_TAIL} lines):\n"
          f"{failed.stderr_tail}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    measures: list[Measure] = []
    sizes: dict = {}
    work, host, failed = run_in_work(
        args, "bench-faers-scale-", f"{args.periods} quarter(s) x {args.cases:,} cases",
        lambda work, rules: pipeline(args, work, measures, sizes, rules))
    print(describe_sizes(sizes))
    print(f"k {args.k}, theta frequency, HA alpha {args.alpha}, PPMS-DP epsilon {args.epsilon}\n")
    floor = one_pass_floor(args.cases) if args.floor else None
    if floor:
        print(f"one vectorized pass over {args.cases:,} rows (factorize + group-by + lexsort): "
              f"{floor:.3f} s CPU")
    print(format_table(measures, floor))
    if args.json:
        print(json.dumps({"machine": host, "cases": args.cases, "periods": args.periods,
                          "profile": args.profile, "floor_cpu_s": floor,
                          "seed": args.seed, "sizes": sizes,
                          "stages": [asdict(m) for m in measures],
                          "failed": failed and {"stage": failed.label, "exit": failed.code}},
                         indent=1))
    return finish(args, work, failed)


if __name__ == "__main__":
    sys.exit(main())
