"""``medanon`` starts at once: the version and help load none of the heavy libraries, no
command but ``report`` (and ``demo``, ``experiment``, which draw figures) loads matplotlib, and
``ingest``, ``release`` and ``export`` load none of the evaluation stack (issue 30).

The modules are read from a fresh process: run with ``-X importtime`` (every import of the run,
on stderr), or from ``sys.modules`` after each command's work. Time itself is measured by
benchmarks/bench_cli_startup.py, not here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import FAERS_FIXTURES

HEAVY = {"matplotlib", "duckdb", "pandas", "numpy", "scipy", "dask", "distributed", "pyarrow"}


def imported_packages(*args: object) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``python -X importtime -m medanon ARGS``; the top-level packages it imported."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "medanon", *map(str, args)],
                            capture_output=True, text=True, env=env, timeout=300)
    modules = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
               if line.startswith("import time:") and "|" in line}
    modules.discard("imported package")  # the header line of -X importtime
    assert "medanon.cli.app" in modules, result.stderr[-2000:]
    return result, {name.split(".")[0] for name in modules}


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["verify", "--help"],
                                  ["release", "--help"], ["synth", "faers", "--help"]])
def test_version_and_help_load_no_heavy_library(args):
    result, packages = imported_packages(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()
    assert not packages & HEAVY, sorted(packages & HEAVY)


def test_a_command_other_than_report_loads_no_matplotlib(tmp_path):
    store = tmp_path / "s.duckdb"
    result, packages = imported_packages("ingest", FAERS_FIXTURES, "--store", store)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "duckdb" in packages and store.exists()  # the command really ran
    assert "matplotlib" not in packages
    result, packages = imported_packages("inspect", "--store", store, "--json")
    assert result.returncode == 0 and '"periods"' in result.stdout
    assert "matplotlib" not in packages


#: what ``ingest``, ``release`` and ``export`` must not load (issue 30): plotting, Dask, SciPy's
#: statistics, and medanon's metrics (signal screening), attacks, report and experiments, which
#: only ``evaluate``, ``attack``, ``verify``, ``report``, ``demo`` and ``experiment`` use
EVALUATION_STACK = re.compile(r"(matplotlib|dask|distributed|scipy\.stats"
                              r"|medanon\.(metrics|attacks|report|experiments))(\.|$)")

#: one fresh interpreter runs the commands in turn through the console script's entry point and
#: records, after each, the exit code and the modules of the evaluation stack loaded so far
_RUN_COMMANDS = textwrap.dedent("""\
    import contextlib, io, json, re, sys
    from medanon.cli.app import main
    steps, pattern, record = json.loads(sys.argv[1]), re.compile(sys.argv[2]), []
    for name, argv in steps:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        record.append({"step": name, "exit": code, "stderr": err.getvalue()[-2000:],
                       "loaded": sorted(m for m in sys.modules if pattern.match(m))})
    print(json.dumps(record))
""")


def test_ingest_release_and_export_load_no_evaluation_stack(tmp_path):
    """A tiny synthetic series ingested, released with PPMS++ and exported (csv and FAERS
    layout) in one fresh process: after each step, no module of the evaluation stack is loaded."""
    from medanon.data.synth.faers import write_faers_series

    write_faers_series(tmp_path / "faers", periods=2, cases=120, seed=3)
    store = str(tmp_path / "s.duckdb")
    steps = [
        ("ingest", ["ingest", str(tmp_path / "faers"), "--store", store]),
        ("release", ["release", "--store", store, "--method", "ppms++", "--k", "4",
                     "--theta", "0.5", "--seed", "3", "--allow-seeded"]),
        ("export", ["export", "--store", store, "--out", str(tmp_path / "csv")]),
        ("export faers", ["export", "--store", store, "--out", str(tmp_path / "faers-layout"),
                          "--format", "faers"]),
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    result = subprocess.run([sys.executable, "-c", _RUN_COMMANDS, json.dumps(steps),
                             EVALUATION_STACK.pattern], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert [r["step"] for r in record] == [name for name, _ in steps]
    for r in record:
        assert r["exit"] == 0, (r["step"], r["stderr"])
        roots = [m for m in r["loaded"] if m.rpartition(".")[0] not in r["loaded"]]
        assert roots == [], f"{r['step']} loaded {', '.join(roots)} ({len(r['loaded'])} modules)"
    # the commands really ran: both periods published, and exported
    assert sorted(p.name for p in (tmp_path / "csv").iterdir()) == ["2020Q1", "2020Q2"]
    assert (tmp_path / "faers-layout" / "2020Q2" / "manifest.json").is_file()


def test_the_evaluation_stack_pattern_matches_only_the_evaluation_stack():
    """The guard above is not vacuous: its pattern matches the evaluation stack (what
    ``evaluate`` and ``report`` load) and nothing that ingest, release or export need."""
    for name in ("medanon.metrics.screening", "medanon.attacks.worst_case", "medanon.report.collect",
                 "scipy.stats", "matplotlib.pyplot"):
        assert EVALUATION_STACK.match(name), name
    for name in ("medanon.pipeline.publish", "medanon.store.duckdb_store", "scipy", "medanon.api",
                 "medanon.anonymize.ppms", "medanon.verify", "medanon.reports"):
        assert not EVALUATION_STACK.match(name), name
