"""``medanon plan`` (issue 33): candidate policies measured on the ingested data, nothing
written to the store; the recommendation meets the constraints; ``--apply`` pins one."""

from __future__ import annotations

import json
import re
import warnings

import pandas as pd
import pytest

from medanon.data.synth.faers import write_faers_series
from medanon.experiments.plan import OPERATOR_ONLY_LINE, PLAN_COLUMNS
from medanon.store import ReleaseStore
from tests.conftest import assert_user_error, invoke_cli, snapshot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan")
    # the legacy generator (the default until issue 42): its concentrated terms give the plan
    # a θ to raise at 0.4 and θ = 1 terms that whole groups hold
    write_faers_series(folder / "in", periods=3, cases=300, seed=6, profile="legacy")
    path = folder / "store" / "s.duckdb"
    path.parent.mkdir()
    assert invoke_cli("ingest", folder / "in", "--store", path).returncode == 0
    return path


def _read_plan_csv(folder) -> pd.DataFrame:
    """plan.csv after its operator-only first line (which it must have)."""
    with open(folder / "plan.csv", encoding="utf-8") as handle:
        assert handle.readline().rstrip("\n") == OPERATOR_ONLY_LINE
    return pd.read_csv(folder / "plan.csv", skiprows=1)


def test_the_default_plan_measures_every_candidate_and_writes_nothing(store, tmp_path):
    before = snapshot(store.parent)
    out = tmp_path / "plan"
    # raise-theta: the legacy data's concentrated terms refuse θ 0.4 under release's default
    result = invoke_cli("plan", "--store", store, "--out", out, "--protect", "Death=0.3",
                        "--seed", "5", "--on-infeasible", "raise-theta")
    assert result.returncode == 0, result.stderr
    assert snapshot(store.parent) == before                    # nothing written to the store
    rows = _read_plan_csv(out)
    assert list(rows.columns) == list(PLAN_COLUMNS) and len(rows) >= 6
    # every candidate pins what it was measured with, and says how release pins it
    assert set(rows["on_infeasible"]) == {"raise-theta"}
    assert rows["release_command"].str.contains("--on-infeasible raise-theta").all()
    assert rows["release_command"].str.contains("--protect Death=0.3").all()
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
    command = rows.set_index("candidate").loc[chosen, "release_command"]
    assert f"release it with '{command}'" in " ".join(result.stdout.split())
    meeting = published[published["meets"]]
    best = meeting.set_index("candidate").loc[chosen]
    assert best["withheld_share"] <= 0.1 and best["gate"] == "passed"
    assert best["mgps_recall"] >= 0.8
    # risk first: no candidate that meets the constraints discloses in fewer groups, or as few
    # with a lower max DIR; a tie on both never goes to the candidate with more unbounded terms
    assert (meeting["disclosing_groups"] >= best["disclosing_groups"]).all()
    tied = meeting[meeting["disclosing_groups"] == best["disclosing_groups"]]
    assert (tied["dir_max"] >= best["dir_max"]).all()
    tied = tied[(tied["dir_max"] == best["dir_max"]) & (tied["dsr_max"] == best["dsr_max"])]
    assert (tied["unbounded_terms"] >= best["unbounded_terms"]).all()
    assert f"disclosing groups {int(best['disclosing_groups'])}" in result.stdout
    # the files say they are the operator's
    assert plan["operator_only"].startswith("OPERATOR-ONLY") and "OPERATOR-ONLY" in page
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
    assert len(_read_plan_csv(out)) == 2
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
            (("--period", "2030Q1"), "ValidationError", "2030Q1"),
            (("--workers", "0"), "ValidationError", "--workers")):
        assert_user_error(invoke_cli("plan", "--store", store, "--out", out, *args), error,
                          fragment)
    assert snapshot(store.parent) == before and not (out / "plan.csv").exists()


def test_plan_on_a_local_cluster_equals_the_plan_in_one_process(store, tmp_path):
    # a candidate whose θ raise-theta raises, one refused for a cap the data cannot meet, and
    # one that draws DP noise (seeded: a stream shared in turn would differ between the runs)
    candidates = tmp_path / "candidates.toml"
    candidates.write_text('[[candidate]]\nmethod = "ppms++"\nk = 5\ntheta = 0.4\n'
                          'on_infeasible = "raise-theta"\n\n'
                          '[[candidate]]\nmethod = "ppms++"\nk = 5\ntheta = "frequency"\n'
                          'protect = ["Death=0.05"]\n\n'
                          '[[candidate]]\nmethod = "ppms-dp-num"\nk = 5\ntheta = "frequency"\n'
                          'epsilon = 1\non_infeasible = "raise-theta"\n')
    # two of the three quarters: a θ is still the largest over releases, in less time
    common = ("plan", "--store", store, "--candidates", candidates, "--min-recall", "0",
              "--seed", "5", "--period", "2020Q1", "--period", "2020Q2")
    alone = invoke_cli(*common, "--out", tmp_path / "alone")
    assert alone.returncode == 0, alone.stderr
    on_dask = invoke_cli(*common, "--out", tmp_path / "dask", "--workers", "2")
    assert on_dask.returncode == 0, on_dask.stderr
    expected = _read_plan_csv(tmp_path / "alone")
    got = _read_plan_csv(tmp_path / "dask")
    assert list(expected["status"]) == ["published", "refused", "published"]
    pd.testing.assert_frame_equal(got.drop(columns="cpu_s"), expected.drop(columns="cpu_s"))
    plans = [json.loads((tmp_path / d / "plan.json").read_text()) for d in ("alone", "dask")]
    assert plans[0]["recommended"] == plans[1]["recommended"] is not None
    assert plans[0]["seed"] == 5 and "LocalCluster" in plans[1]["ran_on"]
    assert [c["theta_raised_to"] for c in plans[0]["candidates"]] == [
        c["theta_raised_to"] for c in plans[1]["candidates"]]
    # the θ raise-theta raised, per term, above the requested 0.4; the csv's text says the same
    raised = plans[0]["candidates"][0]["theta_raised_to"]
    assert raised and all(v > 0.4 for v in raised.values())
    assert len(raised) == expected.loc[0, "theta_raised"]
    assert expected.loc[0, "theta_raised_to"] == "; ".join(f"{t}={v:g}" for t, v in
                                                           sorted(raised.items()))
    # the refused candidate: the θ its refusal names for the capped term, above the cap
    refused = plans[0]["candidates"][1]
    assert list(refused["theta_raised_to"]) == ["Death"]
    workable = refused["theta_raised_to"]["Death"]
    # under release's default (refuse) the row says what raise-theta would give, and how to
    # measure it
    assert f"raise-theta would declare Death={workable:g}" in refused["why_not"]
    assert refused["on_infeasible"] == "refuse"
    # the θ raise-theta would declare: the grid point at or above the smallest workable θ the
    # refusal names (issue 41: a raised θ is a point of the public 0.05 grid)
    smallest = float(re.search(r"smallest workable theta ([0-9]+\.[0-9]+)", refused["message"])[1])
    assert workable > 0.05 and smallest <= workable < smallest + 0.05
    assert workable == pytest.approx(round(workable / 0.05) * 0.05)
    page = (tmp_path / "alone" / "plan.html").read_text()
    assert f"Death={workable:g}" in page and "smallest workable theta" in page


def test_the_disclosure_count_sees_the_groups_that_hold_one_term_in_every_member(store):
    """A θ = 1 term held by every member of a group is disclosed, though DIR and DSR are 0:
    ``disclosing_groups`` counts every such published group (after the attacks it can only
    count more), and the plan ranks by it before utility."""
    import medanon
    from medanon.experiments.plan import plan_store
    from medanon.pipeline.policy import SeriesPolicy

    with ReleaseStore.open(store, read_only=True) as db:
        data = medanon.Dataset({p: db.records(p) for p in ("2020Q1", "2020Q2")}, db.schema)
    frequency = SeriesPolicy.ppms_plus_plus(k=3, theta="frequency", on_infeasible="raise-theta")
    series = medanon.Publisher(frequency, seed=5).publish(data)
    published = 0   # counted from the published rows alone, independently of the attacks
    for rows in series.releases.values():
        def terms(row) -> set:
            return {(c, t) for c in series.sensitive for t in str(row[c]).split("|") if t}

        for _, members in rows.groupby("group"):
            held = set.intersection(*(terms(r) for _, r in members.iterrows()))
            published += bool(held)
    assert published > 0
    with warnings.catch_warnings():
        # the plan's table counts the unbounded terms: no warning per candidate (issue 44)
        warnings.simplefilter("error", medanon.UnboundedTermsWarning)
        plan = plan_store(store, candidates=[frequency, SeriesPolicy.ppms_plus_plus(
            k=10, theta="frequency", on_infeasible="raise-theta")], min_recall=0,
            periods=["2020Q1", "2020Q2"], seed=5)
    rows = plan.rows.set_index("candidate")
    assert rows.loc[1, "disclosing_groups"] >= published
    assert rows.loc[1, "dsr_max"] == 0                    # DSR cannot see it
    # k = 10 publishes coarser groups: fewer disclose, and utility (k = 3 loses less) does not
    # buy back the disclosures
    assert rows.loc[2, "disclosing_groups"] < rows.loc[1, "disclosing_groups"]
    assert rows.loc[1, "nil"] < rows.loc[2, "nil"]
    assert rows.loc[1, "meets"] and rows.loc[2, "meets"]
    assert plan.recommended == 2
