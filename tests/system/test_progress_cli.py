"""Progress that tells (issue 33): ``medanon ingest``, ``evaluate`` and ``signals`` write
determinate progress lines (``STEP (i/N, ...)``, N known from the start) when stderr is a log
and ``--verbose`` is given; ``--quiet`` writes none.

The CLI runs in this process (``invoke_cli``), so its stderr is a StringIO: not a terminal.
One small synthetic series (2 quarters of 120 cases, PPMS++) serves every test.
"""

from __future__ import annotations

import re

import pytest

from medanon.data.synth.faers import write_faers_series
from tests.conftest import invoke_cli

#: one step of a log: ``HH:MM:SS DESCRIPTION: STEP (DONE/TOTAL, ELAPSED s[, about N s left])``
STEP = r"^\d\d:\d\d:\d\d {what}: (?P<step>.+) \((?P<done>\d+)/(?P<total>\d+), \d+ s"


def _steps(stderr: str, what: str) -> list[tuple[str, int, int]]:
    """The (step, done, total) of every progress line of ``what`` on ``stderr``."""
    pattern = re.compile(STEP.format(what=re.escape(what)))
    return [(m["step"], int(m["done"]), int(m["total"]))
            for m in map(pattern.match, stderr.splitlines()) if m]


def _assert_determinate(stderr: str, what: str, total: int) -> list[str]:
    """Every step told once, counted 1..total against the same total, then the end; returns
    the steps' names."""
    steps = _steps(stderr, what)
    assert [(done, of) for _, done, of in steps] == [(i, total) for i in range(1, total + 1)], \
        stderr
    lines = stderr.splitlines()
    assert any(re.match(rf"^\d\d:\d\d:\d\d {re.escape(what)} \.\.\.$", ln) for ln in lines), stderr
    assert re.search(rf"^\d\d:\d\d:\d\d {re.escape(what)}: done in [\d.]+ s$", stderr, re.M), stderr
    return [name for name, _, _ in steps]


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """(the FAERS source, the store ingested with --verbose and released, ingest's result)."""
    folder = tmp_path_factory.mktemp("progress")
    source = write_faers_series(folder / "in", periods=2, cases=120, seed=9).out
    store = folder / "s.duckdb"
    ingested = invoke_cli("--verbose", "ingest", source, "--store", store)
    assert ingested.returncode == 0, ingested.stderr
    released = invoke_cli("release", "--store", store, "--method", "ppms++", "--k", "5",
                          "--theta", "frequency", "--seed", "1", "--allow-seeded")
    assert released.returncode == 0, released.stderr
    return source, store, ingested


def test_ingest_tells_each_quarter_of_the_source(series):
    _, _, ingested = series
    assert _assert_determinate(ingested.stderr, "ingesting FAERS", 2) == ["2020Q1", "2020Q2"]


@pytest.mark.parametrize("options,total", [
    # 2 releases; the dedup scope, 2 quarters and the 5 default strata
    ((), 2 + 1 + 2 + 5),
    # and the pooled scope, and the database as it stood at each of the 2 quarters
    (("--cumulative", "--pooled"), 2 + 1 + 2 + 5 + 1 + 2),
])
def test_evaluate_tells_each_release_then_each_scope(series, options, total):
    _, store, _ = series
    result = invoke_cli("--verbose", "evaluate", "--store", store, "--json", *options)
    assert result.returncode == 0, result.stderr
    steps = _assert_determinate(result.stderr, "evaluating", total)
    assert steps[:3] == ["2020Q1", "2020Q2", "dedup"]
    assert ("pooled" in steps) == ("--pooled" in options)
    assert ("up to 2020Q2" in steps) == ("--cumulative" in options)
    assert result.stdout.lstrip().startswith("{")   # the progress stays off stdout


def test_signals_tell_the_prior_then_each_scope(series, tmp_path):
    _, store, _ = series
    result = invoke_cli("--verbose", "signals", "--store", store, "--out", tmp_path / "p.csv",
                        "--scope", "quarter", "--scope", "cumulative")
    assert result.returncode == 0, result.stderr
    steps = _assert_determinate(result.stderr, "screening pairs", 1 + 2 + 2)
    assert steps == ["dedup prior", "quarter 2020Q1", "quarter 2020Q2", "cumulative 2020Q1",
                     "cumulative 2020Q2"]
    quiet = invoke_cli("--quiet", "signals", "--store", store, "--out", tmp_path / "q.csv")
    assert quiet.returncode == 0, quiet.stderr
    assert "screening pairs" not in quiet.stderr
