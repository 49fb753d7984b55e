"""``attack`` and ``evaluate`` refuse what ``verify`` refuses (issue 41): a release whose group
publishes an empty cell (missing) beside ``*`` is malformed for verify, and the attacks have
nothing meaningful to measure on it (they reported DIR 0, exit 0)."""

from __future__ import annotations

import shutil

import duckdb
import pandas as pd
import pytest

from medanon.data.synth.faers import write_faers_series
from tests.conftest import assert_user_error, invoke_cli, snapshot

MALFORMED = "is malformed: the records of a group must share its generalized QID values"


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A two-quarter PPMS++ store and its csv export."""
    folder = tmp_path_factory.mktemp("malformed")
    write_faers_series(folder / "in", periods=2, cases=150, seed=3)
    store = folder / "s.duckdb"
    for args in (("ingest", folder / "in", "--store", store),
                 ("release", "--store", store, "--method", "ppms++", "--k", "3", "--theta",
                  "frequency", "--on-infeasible", "raise-theta", "--seed", "1",
                  "--allow-seeded"),
                 ("export", "--store", store, "--out", folder / "export", "--format", "csv")):
        done = invoke_cli(*args)
        assert done.returncode == 0, done.stderr
    return store, folder / "export"


def _star_group(rows: pd.DataFrame) -> tuple[str, str]:
    """A (group, QID) whose records all publish ``*``."""
    for column in ("age", "weight", "sex"):
        starred = rows.groupby("group")[column].agg(lambda v: set(v) == {"*"})
        if starred.any():
            return str(starred.index[starred.to_numpy()][0]), column
    raise AssertionError("no group publishes a QID as '*'")


def test_attack_refuses_a_release_verify_rejects_as_malformed(published, tmp_path):
    _, export = published
    tampered = tmp_path / "tampered"
    shutil.copytree(export, tampered)
    release = next(tampered.rglob("release.csv"))
    rows = pd.read_csv(release, dtype=str, keep_default_na=False)
    group, column = _star_group(rows)
    rows.loc[rows.index[rows["group"] == group][0], column] = ""   # missing beside '*'
    rows.to_csv(release, index=False)
    before = snapshot(tampered)

    verified = invoke_cli("verify", tampered)
    assert_user_error(verified, "InputFormatError", MALFORMED)
    message = verified.stderr.strip().splitlines()[-1]
    assert f"group {group} publishes {column}" in message
    for args in ((), ("--json",), ("--period", release.parent.name)):
        attacked = invoke_cli("attack", tampered, *args)
        assert_user_error(attacked, "InputFormatError", MALFORMED)
        assert attacked.stderr.strip().splitlines()[-1] == message     # verify's own message
        assert attacked.stdout == ""
    assert snapshot(tampered) == before
    # the untouched export is attacked as before
    assert invoke_cli("attack", export).returncode == 0


def test_attack_and_evaluate_refuse_a_store_whose_release_is_malformed(published, tmp_path):
    store, _ = published
    copy = tmp_path / "s.duckdb"
    shutil.copy(store, copy)
    with duckdb.connect(str(copy)) as con:
        rows = con.execute("SELECT row_no, period, \"group\", age, weight, sex FROM release_rows "
                           "ORDER BY row_no").df()
        group, column = _star_group(rows[rows["period"] == rows["period"].iloc[0]])
        row_no = int(rows[(rows["group"] == group)
                          & (rows["period"] == rows["period"].iloc[0])]["row_no"].iloc[0])
        con.execute(f"UPDATE release_rows SET \"{column}\" = '' WHERE row_no = ? AND period = ?",
                    [row_no, rows["period"].iloc[0]])
    before = snapshot(copy.parent)
    for command in (("verify",), ("attack",), ("evaluate", "--no-screening")):
        refused = invoke_cli(*command, "--store", copy)
        assert_user_error(refused, "InputFormatError", MALFORMED)
    assert snapshot(copy.parent) == before
