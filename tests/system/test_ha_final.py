"""HA's final release (issue 33): ``release --final`` publishes the latest quarter, which HA
otherwise holds back until the next one is ingested (an md-record is a case absent from it).

The final release is grouped as if no case went on (every record md), its manifest says
``method.final`` and its model's texts say the MD view holds only while no later release
exists; the store then refuses any later release, and ``verify`` reports one that follows.
"""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

import medanon
from medanon.anonymize import HA
from medanon.data.synth.faers import write_faers_series
from medanon.errors import SeriesEndedError, StoreError, ValidationError
from medanon.published.series import PublishedSeries
from medanon.report.html import _why
from medanon.store import ReleaseStore
from medanon.verify import verify_series
from tests.conftest import assert_user_error, invoke_cli, snapshot

K = 3


def _ha() -> HA:
    return HA(k=K, theta=0.5, alpha=0.5, on_infeasible="raise-theta")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Four synthetic quarters: the first three in one folder, the fourth in another."""
    root = tmp_path_factory.mktemp("final")
    write_faers_series(root / "all", periods=4, cases=300, seed=7)
    (root / "late").mkdir()
    shutil.move(str(root / "all" / "2020Q4"), str(root / "late" / "2020Q4"))
    return root


def _new_per_group(series, label: str) -> pd.Series:
    """Per group of ``label``'s release, its records whose case no earlier release holds (the
    view GV1 when every record is md), counted from the published rows alone."""
    earlier = {str(c) for p, rows in series.releases.items() if p < label
               for c in rows["case_id"]}
    rows = series.releases[label]
    new = ~rows["case_id"].astype(str).isin(earlier)
    return new.groupby(rows["group"]).sum()


def test_the_final_release_publishes_the_latest_quarter_and_ends_the_series(folders, tmp_path):
    store = tmp_path / "s.duckdb"
    assert invoke_cli("ingest", folders / "all", "--store", store).returncode == 0
    first = invoke_cli("release", "--store", store, "--method", "ha", "--k", str(K),
                       "--theta", "0.5", "--alpha", "0.5", "--on-infeasible", "raise-theta")
    assert first.returncode == 0, first.stderr
    assert "--final" in first.stderr           # the waiting note tells the way out
    with ReleaseStore.open(store, read_only=True) as db:
        assert db.published_periods() == ["2020Q1", "2020Q2"]

    done = invoke_cli("release", "--store", store, "--final")   # the pinned policy, no flags
    assert done.returncode == 0, done.stderr
    assert "final release" in done.stderr
    with ReleaseStore.open(store, read_only=True) as db:
        assert db.published_periods() == ["2020Q1", "2020Q2", "2020Q3"]
        method = db.manifest("2020Q3")["method"]
        verification = db.manifest("2020Q3")["verification"]
        assert "final" not in db.manifest("2020Q2")["method"]
    assert method["final"] is True
    # the texts come from the model, and say what the final release does not cover
    assert "final release" in method["guarantee"]
    assert "MD view is not covered once any later release" in method["does_not_guarantee"]
    assert verification["verdict"] == "passed"

    # verify: the final release is checked in every view, as it was grouped
    out = invoke_cli("verify", "--store", store, "--json")
    assert out.returncode == 0, out.stderr
    verdicts = {v["period"]: v for v in json.loads(out.stdout)["releases"]}
    assert verdicts["2020Q3"]["md_pending"] is False
    assert "GV1/GV2/GV3/GV4" in verdicts["2020Q3"]["checked"]
    assert "final release" in verdicts["2020Q3"]["checked"]

    shown = invoke_cli("inspect", "--store", store, "--json")
    assert json.loads(shown.stdout)["final_release"] == "2020Q3"

    # a later quarter arrives: ingest takes it, release refuses it, the store unchanged
    assert invoke_cli("ingest", folders / "late", "--store", store).returncode == 0
    before = snapshot(store)
    for args in ((), ("--final",), ("2020Q4",)):
        refused = invoke_cli("release", *args, "--store", store)
        assert_user_error(refused, "SeriesEndedError", "ended with the final release 2020Q3")
        _says_what_keeps_the_guarantee(refused.stderr)
        assert snapshot(store) == before

    # the store itself refuses, whoever calls it: a later release built from published rows
    with ReleaseStore.open(store) as db:
        rows = db.release_rows("2020Q3").assign(period="2020Q4")
        manifest = json.loads(json.dumps(db.manifest("2020Q3")))
        manifest["period"] = "2020Q4"
        del manifest["method"]["final"]
        with pytest.raises(SeriesEndedError, match="ended with the final release 2020Q3") as err:
            db.publish("2020Q4", rows, manifest)
        assert err.value.final_period == "2020Q3"
        assert isinstance(err.value, StoreError)
        _says_what_keeps_the_guarantee(str(err.value))
        # inside a batch too, and the batch rolls back whole
        with pytest.raises(SeriesEndedError), db.batch():
            db.publish("2020Q4", rows, manifest)
        assert db.published_periods() == ["2020Q1", "2020Q2", "2020Q3"]
    assert snapshot(store) == before


def _says_what_keeps_the_guarantee(message: str) -> None:
    """The refusal recommends no route that breaks the final release: not a new store for the
    later periods (its later reports of the same cases open the MD view just the same)."""
    assert "start a new store for later periods" not in message
    assert "in this store or in another one" in message
    assert "only cases this series never published" in message


def test_the_store_refuses_a_final_release_that_a_later_one_follows(folders, tmp_path):
    """ReleaseStore.publish keeps the rule without the pipeline: a final release must be the
    series' last, even when the caller publishes out of time order."""
    from medanon.store.duckdb_store import _release_columns

    store = tmp_path / "s.duckdb"
    assert invoke_cli("ingest", folders / "all", "--store", store).returncode == 0
    with ReleaseStore.open(store) as db:
        empty = pd.DataFrame({c: pd.Series(dtype=object) for c in _release_columns(db.schema)})
        db.publish("2020Q2", empty, {"method": {"name": "ha"}, "counts": {}})
    before = snapshot(store)
    with ReleaseStore.open(store) as db:
        with pytest.raises(StoreError, match="later release.s. 2020Q2 are published"):
            db.publish("2020Q1", empty, {"method": {"name": "ha", "final": True}, "counts": {}})
        assert db.published_periods() == ["2020Q2"]
    assert snapshot(store) == before


def test_final_is_refused_where_it_would_not_end_the_series(folders, tmp_path):
    store = tmp_path / "s.duckdb"
    assert invoke_cli("ingest", folders / "all", "--store", store).returncode == 0
    assert invoke_cli("ingest", folders / "late", "--store", store).returncode == 0
    before = snapshot(store)
    # not the latest ingested period
    result = invoke_cli("release", "2020Q1", "2020Q2", "2020Q3", "--store", store, "--method",
                        "ha", "--k", str(K), "--theta", "0.5", "--alpha", "0.5", "--final")
    assert_user_error(result, "ValidationError", "--final")
    assert "2020Q4" in result.stderr
    # a method that publishes every period as it comes
    result = invoke_cli("release", "--store", store, "--method", "ppms++", "--k", str(K),
                        "--theta", "0.5", "--final")
    assert_user_error(result, "ValidationError", "--final")
    assert snapshot(store) == before


@pytest.mark.parametrize("drop", [None, "one case"])
def test_every_group_of_the_final_release_keeps_k_new_cases(folders, drop):
    """GV1 of a final release is every new record: each group keeps >= k of them, on the data
    and on a neighbour without one case of the final quarter."""
    data = medanon.Dataset.from_faers(folders / "all")
    if drop:
        frames = {p: data.records(p) for p in data.periods}
        last = frames["2020Q3"]
        case = last["case_id"].iloc[0]
        frames["2020Q3"] = last[last["case_id"] != case].reset_index(drop=True)
        data = medanon.Dataset(frames, data.schema)
    series = medanon.Publisher(_ha(), seed=3).publish(data, final=True)
    assert [r.period for r in series.releases_published] == ["2020Q1", "2020Q2", "2020Q3"]
    assert series.manifests["2020Q3"]["method"]["final"] is True
    new = _new_per_group(series, "2020Q3")
    assert len(new) == series.manifests["2020Q3"]["counts"]["groups"]
    assert int(new.min()) >= K
    assert verify_series(series).ok
    why, _ = _why(series.manifests["2020Q3"])
    assert "final release (release --final)" in why
    assert "final release" not in _why(series.manifests["2020Q2"])[0]


def test_a_release_after_the_final_one_is_refused_and_verify_names_one_that_exists(folders):
    data = medanon.Dataset.from_faers(folders / "all")
    series = medanon.Publisher(_ha(), seed=3).publish(data, final=True)
    # the Publisher refuses a later period after the final release
    rows = {p: data.records(p) for p in data.periods}
    rows["2020Q4"] = medanon.Dataset.from_faers(folders / "late").records("2020Q4")
    later = medanon.Dataset(rows, data.schema)
    with pytest.raises(StoreError, match="ended with the final release 2020Q3"):
        medanon.Publisher(_ha(), seed=3).publish(later, previous=series)
    with pytest.raises(ValidationError, match="'final' parameter"):
        medanon.Publisher(_ha(), seed=3).publish(later, periods=["2020Q1"], final=True)
    # a series written elsewhere with a release after the final one: verify names it
    q4 = series.releases["2020Q3"].copy()
    q4["period"] = "2020Q4"
    manifest = json.loads(json.dumps(series.manifests["2020Q3"]))
    manifest["period"] = "2020Q4"
    del manifest["method"]["final"]
    extended = PublishedSeries({**series.releases, "2020Q4": q4},
                               {**series.manifests, "2020Q4": manifest},
                               series.qids, series.sensitive, "test series")
    verdict = verify_series(extended)
    found = [v for v in verdict.violations if "final release" in v]
    assert found and "2020Q4 follows it" in found[0]
    assert verify_series(PublishedSeries(series.releases, series.manifests, series.qids,
                                         series.sensitive, "test series")).ok


def test_the_final_flag_in_a_manifest_must_be_a_boolean(folders):
    from medanon.errors import InputFormatError
    from medanon.models.periodic import PPMSAlphaModel

    data = medanon.Dataset.from_faers(folders / "all")
    series = medanon.Publisher(_ha(), seed=3).publish(data, final=True)
    manifest = json.loads(json.dumps(series.manifests["2020Q3"]))
    assert PPMSAlphaModel.from_manifest(manifest, "2020Q3").final is True
    manifest["method"]["final"] = "yes"
    with pytest.raises(InputFormatError, match="method.final"):
        PPMSAlphaModel.from_manifest(manifest, "2020Q3")
