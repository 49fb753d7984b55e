"""The tables under ``docs/results/`` are what the code produces (issue 31).

``medanon experiment all --quick --out docs/results/quick`` wrote the committed quick tables;
rerunning it must give them byte for byte (every task is seeded from the documented seed and
its own name, so the tables do not depend on the workers or the order tasks finish in). A
change that moves a number fails here until the tables are regenerated with that command (and
the full ones with ``medanon experiment all --out docs/results``).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest

from medanon.errors import StoreError, ValidationError
from medanon.experiments import EXPERIMENTS, regenerate_results
from medanon.experiments.documented import DOCUMENTED, QUICK, documented_config
from tests.conftest import assert_user_error, invoke_cli

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
REGENERATE = "medanon experiment all --quick --out docs/results/quick"


#: where a run ran: no number depends on it
_WHERE = ("scheduler", "workers")


def _config(folder: Path) -> dict:
    config = json.loads((folder / "experiment.json").read_text())["config"]
    return {k: v for k, v in config.items() if k not in _WHERE}


def _settings(config) -> dict:
    return {k: v for k, v in json.loads(json.dumps(asdict(config), default=str)).items()
            if k not in _WHERE}


def _cells(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("|")]


def _same_table(made: str, committed: str) -> bool:
    """Equal tables: the same rows, labels and marks, every number equal to the last printed
    digit (a unit there is allowed: the last digit of a rounded mean can move with the float
    summation of another numpy version)."""
    a, b = _cells(made), _cells(committed)
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b)):
        return False
    numbers = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if numbers.sub("#", u) != numbers.sub("#", v):
                return False
            for p, q in zip(numbers.findall(u), numbers.findall(v)):
                places = len(q.split(".")[1].split("e")[0])
                if abs(float(p) - float(q)) > 1.01 * 10 ** -places:
                    return False
    return True


@pytest.mark.slow
def test_the_committed_quick_tables_are_what_the_code_produces(tmp_path):
    results = regenerate_results(tmp_path, quick=True, workers=2)
    assert list(results) == list(EXPERIMENTS)
    for name in EXPERIMENTS:
        made = (tmp_path / name / "summary.md").read_text()
        committed = (RESULTS / "quick" / name / "summary.md").read_text()
        assert _same_table(made, committed), \
            f"docs/results/quick/{name} is stale: run `{REGENERATE}`"
        assert _config(tmp_path / name) == _config(RESULTS / "quick" / name)


def test_the_table_comparison_tolerates_the_last_digit_only():
    table = "| m | x |\n|---|---|\n| ppms | 0.1276 ± 0.0083 |\n"
    assert _same_table(table, table)
    assert _same_table(table.replace("0.1276", "0.1277"), table)
    assert not _same_table(table.replace("0.1276", "0.1278"), table)
    assert not _same_table(table.replace("ppms", "ppms+"), table)
    assert not _same_table(table + "| ms | 1.0000 ± 0.0000 |\n", table)


def test_the_committed_full_tables_were_made_by_the_documented_settings():
    """Each full folder's experiment.json names exactly the documented settings (the numbers
    themselves are checked through the quick runs: the full ones take minutes)."""
    assert set(EXPERIMENTS) <= set(DOCUMENTED) and list(QUICK) == list(EXPERIMENTS)
    for name in DOCUMENTED:  # the five papers' runs and 001 at 32 quarters (jmir2021-32q)
        assert _config(RESULTS / name) == _settings(DOCUMENTED[name]), name
    for name in QUICK:
        assert _config(RESULTS / "quick" / name) == _settings(QUICK[name]), name


def test_the_documented_runs_refuse_what_they_fix_and_unknown_names(tmp_path):
    with pytest.raises(ValidationError, match="'experiment' parameter of documented_config"):
        documented_config("nope")
    assert_user_error(invoke_cli("experiment", "all", "--runs", "2", "--out", tmp_path / "o"),
                      "ValidationError", "--runs")
    assert not (tmp_path / "o").exists()
    assert_user_error(invoke_cli("experiment", "jmir2021", "--profile", "nope", "--out",
                                 tmp_path / "o"), "ValidationError", "--profile must be one of")
    assert not (tmp_path / "o").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="'out' parameter of regenerate_results"):
        regenerate_results(tmp_path / "file", quick=True)
