"""``medanon plan``'s command line (issue 44): the default candidates take ``--on-infeasible``
(release's default, refuse, unless given), a constraint that could not apply is said on stderr,
and counts are printed as integers. The candidates' measurements are stubbed: these tests are
about what the command tells the steward, not about the measuring (tests/system/test_plan.py)."""

from __future__ import annotations

import pandas as pd
import pytest

import medanon.experiments.plan as plan_module
from tests.conftest import assert_user_error, invoke_cli
from tests.unit.test_plan_page import _result, _row

NOTE = "the original holds no MGPS signal (EB05 ≥ 2) to keep"


@pytest.fixture()
def asked(monkeypatch):
    """plan_store stubbed: records the candidates it was given, returns a fixed result (one
    candidate with 43 unbounded terms, one with a recall of n/a)."""
    seen: dict = {}

    def plan_store(store, *, candidates, min_recall, **_):
        seen["candidates"] = list(candidates)
        return _result([_row(1), _row(2, mgps_recall=None, recall_note=NOTE)],
                       min_recall=min_recall)

    monkeypatch.setattr(plan_module, "plan_store", plan_store)
    return seen


def test_a_recall_constraint_that_could_not_apply_is_said_on_stderr(asked, tmp_path):
    result = invoke_cli("plan", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "plan")
    assert result.returncode == 0, result.stderr
    assert "warning: --min-recall (0.8) could not apply to candidate(s) 2: " in result.stderr
    assert NOTE in result.stderr
    assert "n/a (the original holds no" in result.stdout   # the table's recall says why
    # counts as integers in the terminal's table too
    assert "43.00" not in result.stdout and " 43 " in result.stdout
    # no constraint, nothing to say
    quiet = invoke_cli("plan", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "plan",
                       "--min-recall", "0")
    assert quiet.returncode == 0 and "could not apply" not in quiet.stderr


def test_the_default_candidates_take_releases_default_or_the_one_given(asked, tmp_path):
    common = ("plan", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "plan")
    assert invoke_cli(*common).returncode == 0
    assert {c.parameters.get("on_infeasible", "refuse") for c in asked["candidates"]} == \
        {"refuse"}
    assert invoke_cli(*common, "--on-infeasible", "raise-theta").returncode == 0
    assert {c.parameters.get("on_infeasible") for c in asked["candidates"]} == {"raise-theta"}
    assert_user_error(invoke_cli(*common, "--on-infeasible", "raise"), "ValidationError",
                      "--on-infeasible")
    candidates = tmp_path / "c.toml"
    candidates.write_text('[[candidate]]\nmethod = "ppms"\nk = 5\ntheta = 0.4\n')
    assert_user_error(invoke_cli(*common, "--candidates", candidates, "--on-infeasible",
                                 "raise-theta"), "ValidationError", "candidates file")
    # the recommendation names the command that pins the candidate
    result = invoke_cli(*common)
    assert "release it with 'medanon release --method ppms++ --k 1 --theta 0.4'" in \
        " ".join(result.stdout.split())
    assert pd.read_csv(tmp_path / "plan" / "plan.csv", skiprows=1)["release_command"].notna().all()
