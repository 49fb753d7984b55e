"""Shared test fixtures. Tests never depend on the working directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FAERS_FIXTURES = FIXTURES / "faers"
SHARED = ROOT.parent / "shared"
FAERS_2022Q4_SUBSET = SHARED / "data" / "faers_ascii_2022Q4_subset.zip"

needs_shared = pytest.mark.skipif(not FAERS_2022Q4_SUBSET.exists(),
                                  reason="../shared (real FAERS subset) is not beside the project")


def run_cli(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m medanon ARGS`` as a user would, capturing text output."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200"}
    env.pop("MEDANON_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "medanon", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


def assert_user_error(result: subprocess.CompletedProcess, error_type: str, fragment: str) -> None:
    """A clean user error: ``ErrorType: message`` on stderr, non-zero exit, no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
    assert lines, "nothing on stderr"
    assert lines[-1].startswith(f"{error_type}: "), result.stderr
    assert fragment in result.stderr, result.stderr


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes: to prove that nothing was written."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def faers_fixture_dir() -> Path:
    return FAERS_FIXTURES
