"""``medanon`` starts at once: the version and help load none of the heavy libraries, and no
command but ``report`` (and ``demo``, ``experiment``, which draw figures) loads matplotlib.

The modules are read from a fresh process run with ``-X importtime`` (every import of the run,
on stderr). Time itself is measured by benchmarks/bench_cli_startup.py, not here.
"""

from __future__ import annotations

import os
import subprocess
import sys

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
