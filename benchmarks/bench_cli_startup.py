"""Benchmark: start-up cost of the ``medanon`` command (CPU time and peak memory).

Runs each command N times in a fresh process and prints the median CPU time (user + sys, from
``wait4``), the median wall time and the peak resident set size of the process. The goal of
issue 18: ``medanon --version`` and ``medanon --help`` cost at most 0.3 s CPU. A last table
lists which heavy libraries each command loads (one extra run with ``-X importtime``): a
command other than ``report``, ``demo`` and ``experiment`` must not load matplotlib.

    python benchmarks/bench_cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FAERS_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "faers"
HEAVY = ("matplotlib", "duckdb", "pandas", "numpy", "scipy", "dask", "rich")
GOAL_CPU = 0.3


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per command")
    args = parser.parse_args()
    base = medanon_command()
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    print(f"{' '.join(base)}; median of {args.runs} fresh processes "
          f"(load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores)\n")
    print(f"{'command':<28} {'CPU s':>6} {'min':>6} {'max':>6} {'wall s':>7} {'peak RSS MB':>12}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, tail in commands(Path(tmp)).items():
            runs = []
            for _ in range(args.runs):
                store = Path(tmp) / "s.duckdb"
                store.unlink(missing_ok=True)
                cpu, wall, rss, code = run_once([*base, *tail], env)
                if code != 0:
                    raise SystemExit(f"{label} exited with {code}")
                runs.append((cpu, wall, rss))
            cpus = [r[0] for r in runs]
            results[label] = statistics.median(cpus)
            print(f"{label:<28} {statistics.median(cpus):6.2f} {min(cpus):6.2f} {max(cpus):6.2f} "
                  f"{statistics.median(r[1] for r in runs):7.2f} "
                  f"{statistics.median(r[2] for r in runs):12.0f}")
        print("\nheavy libraries loaded:")
        for label, tail in commands(Path(tmp)).items():
            (Path(tmp) / "s.duckdb").unlink(missing_ok=True)
            loaded = heavy_modules(tail, env)
            print(f"  {label:<28} {', '.join(loaded) or '-'}")
    worst = max(results["medanon --version"], results["medanon --help"])
    print(f"\n--version/--help: {worst:.2f} s CPU (goal <= {GOAL_CPU} s): "
          f"{'met' if worst <= GOAL_CPU else 'NOT met'}")


if __name__ == "__main__":
    main()
