"""Shared test fixtures. Tests never depend on the working directory."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FAERS_FIXTURES = FIXTURES / "faers"
SHARED = ROOT.parent / "shared"
FAERS_2022Q4_SUBSET = SHARED / "data" / "faers_ascii_2022Q4_subset.zip"
MIMIC_DEMO = SHARED / "data" / "mimic3_demo"

# The one-off ledger (ipa, clinsim: epsilon spent per input) is the operator's file in their home;
# the tests keep theirs in a temporary folder (subprocesses inherit it).
if "MEDANON_LEDGER" not in os.environ:
    import tempfile

    os.environ["MEDANON_LEDGER"] = str(Path(tempfile.mkdtemp(prefix="medanon-ledger-"))
                                       / "one-off-ledger.json")

#: the real data sets in ../shared: mark the tests that read them (see pytest_runtest_setup)
needs_shared = pytest.mark.shared(str(FAERS_2022Q4_SUBSET.relative_to(SHARED)))
needs_mimic_demo = pytest.mark.shared(*(str((MIMIC_DEMO / name).relative_to(SHARED))
                                        for name in ("DIAGNOSES_ICD.csv", "ADMISSIONS.csv")))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.shared("data/x.zip", ...)``: skip unless those files are in ../shared.

    Real data (the FAERS subset, the MIMIC-III demo) lives beside the project, not in it; a
    checkout without it skips these tests, and ``-m "not shared"`` deselects them.
    """
    for mark in item.iter_markers("shared"):
        missing = [name for name in mark.args if not (SHARED / name).exists()]
        if missing:
            pytest.skip(f"../shared is not beside the project (missing {', '.join(missing)})")


def run_cli(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m medanon ARGS`` in a fresh process, as a user would, capturing text output.

    For the real end-to-end paths (a few per command family); error paths and checks of a
    command's output use :func:`invoke_cli`, which does not pay an interpreter start-up.
    """
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200"}
    env.pop("MEDANON_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "medanon", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


@dataclass(frozen=True)
class CliResult:
    """What an in-process command returned and printed (the fields of a CompletedProcess)."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def invoke_cli(*args: object) -> CliResult:
    """Run ``medanon ARGS`` in this process through the console script's own entry point
    (:func:`medanon.cli.app.main`), capturing stdout and stderr: same exit code and output as
    :func:`run_cli`, without starting an interpreter."""
    from medanon.cli.app import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        os.environ.pop("MEDANON_DEBUG", None)
        code = main(argv)
    return CliResult(tuple(argv), code, out.getvalue(), err.getvalue())


def assert_user_error(result: subprocess.CompletedProcess | CliResult, error_type: str,
                      fragment: str) -> None:
    """A clean user error: ``ErrorType: message`` on stderr, non-zero exit, no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
    assert lines, "nothing on stderr"
    assert lines[-1].startswith(f"{error_type}: "), result.stderr
    assert fragment in result.stderr, result.stderr


def ingest_and_release(source: Path, store: Path) -> Path:
    """Ingest ``source`` into ``store`` and publish every period with PPMS++ (k 5, θ frequency,
    seeded): a small published store for the readers' tests."""
    for args in (("ingest", source, "--store", store),
                 ("release", "--store", store, "--method", "ppms++", "--k", "5", "--theta",
                  "frequency", "--seed", "1", "--allow-seeded")):
        result = invoke_cli(*args)
        assert result.returncode == 0, result.stderr
    return store


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes: to prove that nothing was written."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def faers_fixture_dir() -> Path:
    return FAERS_FIXTURES


# The MeSH tree as releases before issue 20 wrote it: bands as internal values.
OLD_MESH_ARX = """\
Infant;Infant;Nonadult;*
Newborn;Infant;Nonadult;*
Child;Child;Nonadult;*
Preschool;Child;Nonadult;*
In-school;Child;Nonadult;*
Adolescent;Adolescent;Nonadult;*
Adult;Adult;Adult;*
Young Adult;Young Adult;Adult;*
Middle Aged;Middle Aged;Adult;*
Aged;Aged;Adult;*
Aged, 80 and over;Aged;Adult;*
"""
