"""Benchmark: start-up cost of the ``medanon`` command (CPU time and peak memory), and the import
cost of the commands that do the publishing work (``ingest``, ``release``, ``export``).

Every figure is of this checkout's ``src`` (put first on ``PYTHONPATH``), also when the console
script belongs to an install of another checkout. Start-up: runs each command N times in a fresh
process and prints the median CPU time (user + sys, from ``wait4``), the median wall time and
the peak resident set size of the process. The goal of issue 18: ``medanon --version`` and
``medanon --help`` cost at most 0.3 s CPU. A second table lists which heavy libraries each
command loads (one extra run with ``-X importtime``): a command other than ``report``, ``demo``
and ``experiment`` must not load matplotlib.

Work (issue 30): a tiny synthetic series (``--periods`` quarters of ``--cases`` cases) is
ingested, released with PPMS++ and exported, each command in a fresh process, ``--work-runs``
times. Per command: the median CPU and wall time of the whole process, the CPU and wall time
spent importing (every top-level ``import`` of the run, timed in the process itself), the number
of modules loaded, and which modules of the evaluation stack it loaded (matplotlib, Dask,
SciPy's stats, ``medanon.metrics``, ``.attacks``, ``.report``, ``.experiments``): none is the
goal. ``--baseline REF`` runs the same on the ``src`` of a git revision (``git archive``) and
prints both, before and after:

    python benchmarks/bench_cli_startup.py [--runs 7] [--work-runs 3] [--baseline HEAD~1]
    python benchmarks/bench_cli_startup.py --skip-startup --baseline main

Not a test: figures on a shared machine are noisy (the load average is printed);
tests/system/test_cli_startup.py checks the module sets.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAERS_FIXTURES = ROOT / "tests" / "fixtures" / "faers"
HEAVY = ("matplotlib", "duckdb", "pandas", "numpy", "scipy", "dask", "rich")
GOAL_CPU = 0.3
#: what ingest, release and export must not load (issue 30; as tests/system/test_cli_startup.py)
EVALUATION_STACK = (r"(matplotlib|dask|distributed|scipy\.stats"
                    r"|medanon\.(metrics|attacks|report|experiments))(\.|$)")
WORK_COMMANDS = ("ingest", "release", "export")

#: Runs ``medanon ARGV`` through the console script's entry point with every top-level import
#: timed (CPU and wall; nested imports count in their importer's time), then writes the import
#: time, the module count and the evaluation-stack modules loaded to the JSON file ``argv[1]``.
_RUNNER = """\
import builtins, importlib, json, re, sys, time
spent = {"cpu": 0.0, "wall": 0.0, "depth": 0}
def timed(function):
    def wrapper(*args, **kwargs):
        spent["depth"] += 1
        outer = spent["depth"] == 1
        if outer:
            cpu, wall = time.process_time(), time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent["depth"] -= 1
            if outer:
                spent["cpu"] += time.process_time() - cpu
                spent["wall"] += time.perf_counter() - wall
    return wrapper
builtins.__import__ = timed(builtins.__import__)
importlib.import_module = timed(importlib.import_module)
from medanon.cli.app import main
code = main(sys.argv[3:])
pattern = re.compile(sys.argv[2])
stack = sorted(m for m in sys.modules if pattern.match(m))
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    json.dump({"exit": code, "import_cpu": spent["cpu"], "import_wall": spent["wall"],
               "modules": len(sys.modules), "medanon": __import__("medanon").__file__,
               "stack": [m for m in stack if m.rpartition(".")[0] not in stack]}, fh)
sys.exit(code)
"""


def medanon_command() -> list[str]:
    """The console script beside this interpreter (what a user runs), else ``python -m medanon``."""
    script = Path(sys.executable).with_name("medanon")
    return [str(script)] if script.exists() else [sys.executable, "-m", "medanon"]


def commands(tmp: Path) -> dict[str, list[str]]:
    return {
        "medanon --version": ["--version"],
        "medanon --help": ["--help"],
        "medanon verify --help": ["verify", "--help"],
        "medanon ingest <fixtures>": ["ingest", str(FAERS_FIXTURES), "--store", str(tmp / "s.duckdb")],
    }


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """(cpu seconds, wall seconds, peak RSS in MB, exit code) of one fresh process."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, process.returncode


def heavy_modules(tail: list[str], env: dict[str, str]) -> list[str]:
    """The heavy top-level packages ``medanon TAIL`` imports (``-X importtime`` on stderr)."""
    command = [sys.executable, "-X", "importtime", "-m", "medanon", *tail]
    stderr = subprocess.run(command, capture_output=True, text=True, env=env).stderr
    loaded = {line.rsplit("|", 1)[1].strip().split(".")[0]
              for line in stderr.splitlines() if line.startswith("import time:") and "|" in line}
    return [name for name in HEAVY if name in loaded]


def startup(runs: int, env: dict[str, str]) -> None:
    """The start-up table (issue 18) and the heavy libraries each command loads."""
    base = medanon_command()
    print(f"{' '.join(base)} (medanon from {ROOT / 'src'}); median of {runs} fresh processes\n")
    print(f"{'command':<28} {'CPU s':>6} {'min':>6} {'max':>6} {'wall s':>7} {'peak RSS MB':>12}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, tail in commands(Path(tmp)).items():
            measured = []
            for _ in range(runs):
                store = Path(tmp) / "s.duckdb"
                store.unlink(missing_ok=True)
                cpu, wall, rss, code = run_once([*base, *tail], env)
                if code != 0:
                    raise SystemExit(f"{label} exited with {code}")
                measured.append((cpu, wall, rss))
            cpus = [r[0] for r in measured]
            results[label] = statistics.median(cpus)
            print(f"{label:<28} {statistics.median(cpus):6.2f} {min(cpus):6.2f} {max(cpus):6.2f} "
                  f"{statistics.median(r[1] for r in measured):7.2f} "
                  f"{statistics.median(r[2] for r in measured):12.0f}")
        print("\nheavy libraries loaded:")
        for label, tail in commands(Path(tmp)).items():
            (Path(tmp) / "s.duckdb").unlink(missing_ok=True)
            loaded = heavy_modules(tail, env)
            print(f"  {label:<28} {', '.join(loaded) or '-'}")
    worst = max(results["medanon --version"], results["medanon --help"])
    print(f"\n--version/--help: {worst:.2f} s CPU (goal <= {GOAL_CPU} s): "
          f"{'met' if worst <= GOAL_CPU else 'NOT met'}")


# -- work commands (issue 30) ---------------------------------------------------------------------
def baseline_src(ref: str, into: Path) -> Path:
    """The ``src`` folder of git revision ``ref`` of this checkout, extracted under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, "src"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"--baseline {ref}: {archive.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def copy_store(source: Path | None, target: Path) -> None:
    """A fresh copy of a store file and its write-ahead log, if any (no store: ``source`` None)."""
    for suffix in ("", ".wal"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
        if source is not None and Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


def run_work(tail: list[str], src: Path, folder: Path) -> dict:
    """One fresh process running ``medanon TAIL`` (from ``src``) under the import timer."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(src)}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    report = folder / "measure.json"
    report.unlink(missing_ok=True)
    argv = [sys.executable, "-c", _RUNNER, str(report), EVALUATION_STACK, *tail]
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0 or not report.exists():
        raise SystemExit(f"medanon {' '.join(tail)} exited with {code}:\n"
                         f"{stderr.decode(errors='replace')[-3000:]}")
    measured = json.loads(report.read_text(encoding="utf-8"))
    if not Path(measured["medanon"]).is_relative_to(src):
        raise SystemExit(f"the run imported {measured['medanon']}, not the medanon under {src}")
    return {**measured, "cpu": usage.ru_utime + usage.ru_stime, "wall": wall}


def work(src: Path, series: Path, folder: Path, runs: int) -> dict[str, list[dict]]:
    """Per work command, the measures of ``runs`` fresh processes (each on a fresh copy of
    the store it needs: an empty one for ingest, an ingested one for release, a published one
    for export)."""
    folder.mkdir(parents=True)
    ingested, released, store = folder / "ingested.duckdb", folder / "released.duckdb", folder / "s.duckdb"
    out: dict[str, list[dict]] = {name: [] for name in WORK_COMMANDS}
    for _ in range(runs):
        copy_store(None, store)
        out["ingest"].append(run_work(["ingest", str(series), "--store", str(store)], src, folder))
        if not ingested.exists():
            copy_store(store, ingested)
        copy_store(ingested, store)
        out["release"].append(run_work(["release", "--store", str(store), "--method", "ppms++",
                                        "--k", "5", "--theta", "0.5", "--seed", "1",
                                        "--allow-seeded"], src, folder))
        if not released.exists():
            copy_store(store, released)
        shutil.rmtree(folder / "exported", ignore_errors=True)
        out["export"].append(run_work(["export", "--store", str(released), "--out",
                                       str(folder / "exported")], src, folder))
    return out


def work_table(label: str, results: dict[str, list[dict]]) -> dict[str, dict]:
    """Print the medians of one source's work commands; returns them."""
    print(f"\n{label}")
    print(f"  {'command':<9} {'CPU s':>6} {'wall s':>7} {'import CPU s':>13} {'import wall s':>14} "
          f"{'modules':>8}  evaluation stack loaded")
    medians = {}
    for name, runs in results.items():
        m = {key: statistics.median(r[key] for r in runs)
             for key in ("cpu", "wall", "import_cpu", "import_wall", "modules")}
        stack = sorted({s for r in runs for s in r["stack"]})
        medians[name] = {**m, "stack": stack}
        print(f"  {name:<9} {m['cpu']:6.2f} {m['wall']:7.2f} {m['import_cpu']:13.2f} "
              f"{m['import_wall']:14.2f} {m['modules']:8.0f}  {', '.join(stack) or '-'}")
    return medians


def work_section(runs: int, periods: int, cases: int, baseline: str | None) -> None:
    print(f"\nwork commands on a synthetic series of {periods} quarter(s) x {cases} cases "
          f"(ingest; release --method ppms++ --k 5 --theta 0.5; export): median of {runs} "
          f"fresh processes")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        series = tmp / "faers"
        env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(ROOT / "src")}
        subprocess.run([sys.executable, "-m", "medanon", "synth", "faers", str(series),
                        "--periods", str(periods), "--cases", str(cases), "--seed", "1"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        sources = {f"this checkout ({ROOT / 'src'})": ROOT / "src"}
        if baseline is not None:
            sources = {f"baseline {baseline} (git archive)": baseline_src(baseline, tmp / "base"),
                       **sources}
        tables = {}
        for i, (label, src) in enumerate(sources.items()):
            tables[label] = work_table(label, work(src, series, tmp / f"work{i}", runs))
    if baseline is not None:
        (before, after) = tables.values()
        print("\nbefore -> after (median CPU s: import phase, whole process; wall s)")
        for name in WORK_COMMANDS:
            b, a = before[name], after[name]
            print(f"  {name:<9} import {b['import_cpu']:.2f} -> {a['import_cpu']:.2f}, "
                  f"process {b['cpu']:.2f} -> {a['cpu']:.2f}, wall {b['wall']:.2f} -> "
                  f"{a['wall']:.2f}, modules {b['modules']:.0f} -> {a['modules']:.0f}")
    current = list(tables.values())[-1]
    bad = {name: current[name]["stack"] for name in WORK_COMMANDS if current[name]["stack"]}
    print(f"\ningest/release/export load no evaluation stack (goal): "
          f"{'met' if not bad else 'NOT met: ' + '; '.join(f'{n} {s}' for n, s in bad.items())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per start-up command")
    parser.add_argument("--work-runs", type=int, default=3,
                        help="fresh processes per work command (ingest, release, export)")
    parser.add_argument("--periods", type=int, default=2, help="quarters of the work series")
    parser.add_argument("--cases", type=int, default=200, help="cases per quarter of the work series")
    parser.add_argument("--baseline", metavar="REF",
                        help="also measure the work commands on git revision REF (before/after)")
    parser.add_argument("--skip-startup", action="store_true", help="only the work commands")
    args = parser.parse_args()
    # this checkout's medanon, also where the console script belongs to an install of another
    paths = [str(ROOT / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": os.pathsep.join(paths)}
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    if not args.skip_startup:
        startup(args.runs, env)
    if args.work_runs > 0:
        work_section(args.work_runs, args.periods, args.cases, args.baseline)


if __name__ == "__main__":
    main()
