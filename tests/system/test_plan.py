"""``medanon plan`` (issue 33): candidate policies measured on the ingested data, nothing
written to the store; the recommendation meets the constraints; ``--apply`` pins one."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from medanon.data.synth.faers import write_faers_series
from medanon.experiments.plan import PLAN_COLUMNS
from medanon.store import ReleaseStore
from tests.conftest import assert_user_error, invoke_cli, snapshot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan")
    write_faers_series(folder / "in", periods=3, cases=300, seed=6)
    path = folder / "store" / "s.duckdb"
    path.parent.mkdir()
    assert invoke_cli("ingest", folder / "in", "--store", path).returncode == 0
    return path


def test_the_default_plan_measures_every_candidate_and_writes_nothing(store, tmp_path):
    before = snapshot(store.parent)
    out = tmp_path / "plan"
    result = invoke_cli("plan", "--store", store, "--out", out, "--protect", "Death=0.3",
                        "--seed", "5")
    assert result.returncode == 0, result.stderr
    assert snapshot(store.parent) == before                    # nothing written to the store
    rows = pd.read_csv(out / "plan.csv")
    assert list(rows.columns) == list(PLAN_COLUMNS) and len(rows) >= 6
    published = rows[rows["status"] == "published"]
    assert len(published) >= 6
    for column in ("withheld_share", "nil", "mgps_recall", "dir_max"):
        assert published[column].notna().all(), column
    plan = json.loads((out / "plan.json").read_text())
    page = (out / "plan.html").read_text()
    assert "data:image/png;base64," in page and "Recommendation" in page
    # the recommendation meets the constraints and no candidate that does has less risk
    chosen = plan["recommended"]
    assert chosen is not None and f"Candidate {chosen}:" in result.stdout
    meeting = published[published["meets"]]
    best = meeting.set_index("candidate").loc[chosen]
    assert best["withheld_share"] <= 0.1 and best["gate"] == "passed"
    assert best["mgps_recall"] >= 0.8
    assert (meeting["dir_max"] >= best["dir_max"]).all()
    # a candidate that leaves the protected term unbounded is never recommended; MS (no
    # protection across releases) has the attacks find more
    ms = published[published["method"] == "ms"].iloc[0]
    assert ms["dir_max"] > best["dir_max"]


def test_candidates_from_a_file_and_apply_pins_one(store, tmp_path):
    candidates = tmp_path / "candidates.toml"
    candidates.write_text('[[candidate]]\nmethod = "ppms++"\nk = 5\ntheta = "frequency"\n'
                          'on_infeasible = "raise-theta"\n\n'
                          '[[candidate]]\nmethod = "ppms"\nk = 4\ntheta = 0.6\n'
                          'on_infeasible = "raise-theta"\n')
    out = tmp_path / "plan"
    result = invoke_cli("plan", "--store", store, "--out", out, "--candidates", candidates,
                        "--min-recall", "0")
    assert result.returncode == 0, result.stderr
    assert len(pd.read_csv(out / "plan.csv")) == 2
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(store.read_bytes())
    applied = invoke_cli("plan", "--store", copy, "--out", out, "--apply", "2")
    assert applied.returncode == 0, applied.stderr
    with ReleaseStore.open(copy, read_only=True) as db:
        pinned = db.series_policy()["policy"]
    assert pinned == {"method": "ppms", "parameters": {"k": 4, "theta": 0.6,
                                                       "on_infeasible": "raise-theta"}}
    # the next release uses it with no flags
    released = invoke_cli("release", "2020Q1", "--store", copy)
    assert released.returncode == 0, released.stderr
    with ReleaseStore.open(copy, read_only=True) as db:
        assert db.manifest("2020Q1")["method"]["parameters"]["k"] == 4
    # another candidate over a pinned policy: only with --change-policy
    assert_user_error(invoke_cli("plan", "--store", copy, "--out", out, "--apply", "1"),
                      "ValidationError", "--change-policy")
    assert invoke_cli("plan", "--store", copy, "--out", out, "--apply", "1",
                      "--change-policy").returncode == 0


def test_bad_plan_input_is_refused_and_writes_nothing(store, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[candidate]]\nk = 5\n")
    out = tmp_path / "plan"
    before = snapshot(store.parent)
    for args, error, fragment in (
            (("--candidates", bad), "InputFormatError", "[[candidate]]"),
            (("--min-recall", "2"), "ValidationError", "--min-recall"),
            (("--apply", "1"), "InputFormatError", "no plan"),
            (("--period", "2030Q1"), "ValidationError", "2030Q1")):
        assert_user_error(invoke_cli("plan", "--store", store, "--out", out, *args), error,
                          fragment)
    assert snapshot(store.parent) == before and not (out / "plan.csv").exists()
