"""The package's layers and the linter are enforced: both pass on the code as it is, and the import
contracts break, naming themselves, when a deliberate back-edge is added to a copy of the package.

The contracts live in pyproject.toml (``[tool.importlinter]``); docs/architecture.md draws them.
``lint-imports`` runs in a fresh process with the package to check first on ``PYTHONPATH``: an
in-process run would find the ``medanon`` this test session already imported, not the copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

PYPROJECT = ROOT / "pyproject.toml"
#: contract id -> contract name (lint-imports reports contracts by name)
CONTRACTS = {c["id"]: c["name"] for c in
             tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]}
# The console script may not sit beside sys.executable (e.g. a system interpreter); the module
# of the installed import-linter always is importable by it.
LINT_IMPORTS = [sys.executable, "-c",
                "from importlinter.cli import lint_imports_command; lint_imports_command()"]


def lint_imports(src: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with this checkout's contracts on the ``medanon`` package under ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([*LINT_IMPORTS, "--config", str(PYPROJECT), "--no-cache", "--no-logo"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_every_contract_is_described_in_the_architecture_page():
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert len(CONTRACTS) >= 4
    assert [name for name in CONTRACTS.values() if name not in architecture] == []


def test_the_package_keeps_every_import_contract():
    result = lint_imports(ROOT / "src", cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in CONTRACTS.values():
        assert f"{name} KEPT" in result.stdout
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout


@pytest.mark.parametrize(("module", "line", "contract", "reported"), [
    # the release format must not reach up to the command line
    pytest.param("published/cells.py", "import medanon.cli", "layers",
                 "medanon.published is not allowed to import medanon.cli", id="published->cli"),
    # a new top-level module must be given its layer (the contract is exhaustive)
    pytest.param("audit.py", "", "layers", "- medanon.audit", id="unlisted-module"),
    # allowed by the layers (verify sits above anonymize), refused by design rule 6
    pytest.param("verify.py", "from medanon.anonymize import ppms", "independent-checkers",
                 "medanon.verify is not allowed to import medanon.anonymize",
                 id="verify->anonymize"),
    pytest.param("api.py", "import typer", "cli-libraries",
                 "medanon.api is not allowed to import typer", id="api->typer"),
    pytest.param("pipeline/export.py", "import matplotlib", "heavy-libraries",
                 "medanon.pipeline is not allowed to import matplotlib", id="pipeline->matplotlib"),
    # allowed by the layers (metrics sit below the pipeline), refused on the release path
    pytest.param("pipeline/export.py", "from medanon.metrics import screening", "release-path",
                 "medanon.pipeline.export is not allowed to import medanon.metrics",
                 id="release-path->metrics"),
])
def test_a_deliberate_back_edge_breaks_its_contract(tmp_path, module, line, contract, reported):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "medanon", src / "medanon",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # appends to the module, or creates it (empty) when it is new
    with (src / "medanon" / module).open("a", encoding="utf-8") as fh:
        fh.write(f"\n{line}  # a deliberate back-edge (tests/system/test_layers.py)\n" if line else "")
    result = lint_imports(src, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = CONTRACTS[contract]
    assert f"{broken} BROKEN" in result.stdout
    assert reported in result.stdout.split("Broken contracts", 1)[1]
    # only the contract that names this edge breaks: the others stay precise
    assert f"Contracts: {len(CONTRACTS) - 1} kept, 1 broken." in result.stdout


def ruff(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_passes_on_sources_tests_and_benchmarks():
    result = ruff("src", "tests", "benchmarks", cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_configuration_catches_what_it_selects(tmp_path):
    # The project's configuration, not ruff's defaults, is in force: each line breaks one rule.
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\n"
                   "def f(x=[]):\n"
                   "    return f'{\"no placeholder\"}' + f'plain' + '" + "x" * 100 + "'\n",
                   encoding="utf-8")
    result = ruff("--config", PYPROJECT, "--output-format", "concise", bad, cwd=tmp_path)
    assert result.returncode == 1
    for code in ("F401", "B006", "F541", "E501"):
        assert f" {code} " in result.stdout, result.stdout
