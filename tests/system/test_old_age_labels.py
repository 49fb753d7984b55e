"""Stores and releases from before issue 20, when MeSH bands were internal values.

Until then ``age_to_mesh`` wrote the 25-44 band as ``Adult``, the label of the node that also
stands for any adult; stores hold those labels, releases published them and their manifests
carry that tree. Here a store is made to look like that (its records and first release rewritten
to the old labels, the release's manifest to the old tree), then the next period is published
with the current code and every reader (verify, attack, evaluate, report) runs on the mixed
series, from the store and, for verify and attack, from an exported folder (manifests only).
"""

from __future__ import annotations

import json

import pytest

from medanon.cli.app import main
from medanon.data.synth.faers import write_faers_series
from medanon.hierarchies import mesh_age_tree, read_arx
from medanon.published.series import load_series
from medanon.store import ReleaseStore
from tests.conftest import OLD_MESH_ARX, invoke_cli

# The band leaves of the current tree and the labels the old one published for them.
OLD = {"Infant (1-23 months)": "Infant", "Adult (25-44)": "Adult", "Aged (65-79)": "Aged"}


RELEASE = ["--method", "ppms+", "--k", "3", "--theta", "frequency", "--on-infeasible",
           "raise-theta", "--seed", "3", "--allow-seeded"]


def _to_old_labels(db: ReleaseStore, table: str) -> None:
    # Test-only surgery on the store's tables: what an ingest or a release of before wrote.
    for new, old in OLD.items():
        db._con.execute(f"UPDATE {table} SET age = ? WHERE age = ?", [old, new])


@pytest.fixture(scope="module")
def old_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("old-labels")
    write_faers_series(folder / "in", periods=3, cases=250, seed=13)
    store = folder / "s.duckdb"
    assert main(["ingest", str(folder / "in"), "--store", str(store)]) == 0
    with ReleaseStore.open(store) as db:
        _to_old_labels(db, "records")
        first = db.ingested_periods()[0]
        raw = db.records(first)
    assert {"Adult", "Aged"} <= set(raw["age"].dropna())  # the store holds old band labels
    # Releasing from the old records works: the plain labels are read as their band leaves.
    assert main(["release", "--store", str(store), first, *RELEASE]) == 0
    with ReleaseStore.open(store) as db:
        rows = db.release_rows(first)
        assert "Adult (25-44)" in set(rows["age"])  # ungeneralized bands publish as leaves
        # Now make that release look published by the old code: old labels, old tree.
        _to_old_labels(db, "release_rows")
        manifest = db.manifest(first)
        manifest["hierarchies"]["age"]["text"] = OLD_MESH_ARX
        db._con.execute("UPDATE releases SET manifest = ? WHERE period = ?",
                        [json.dumps(manifest), first])
    assert main(["release", "--store", str(store), *RELEASE]) == 0
    return folder, store


def test_the_store_holds_an_old_release_then_new_ones(old_store) -> None:
    _, store = old_store
    with ReleaseStore.open(store) as db:
        periods = db.published_periods()
        assert len(periods) == 3
        old_rows, new_rows = db.release_rows(periods[0]), db.release_rows(periods[1])
        assert "Adult (25-44)" not in set(old_rows["age"])
        assert "Adult (25-44)" in set(new_rows["age"]) | set(db.release_rows(periods[2])["age"])
        ages = {p: dict(zip(db.release_rows(p)["case_id"], db.release_rows(p)["age"]))
                for p in periods}
    # A follow-up of a case the old release showed as "Adult" is covered by the node Adult
    # (the PPMS+ rule reads the old label as the generalization), never published narrower.
    tree = mesh_age_tree()
    for case, label in ages[periods[0]].items():
        later = ages[periods[1]].get(case)
        if later is not None and label:
            assert tree.covers(later or "*", label), (case, label, later)


@pytest.mark.parametrize("command", ["verify", "evaluate", "report"])
def test_store_readers_run_on_the_mixed_series(old_store, command) -> None:
    folder, store = old_store
    if command == "report":
        result = invoke_cli("report", "--store", store, "--out", folder / "report.html")
    else:
        result = invoke_cli(command, "--store", store, "--json")
    assert result.returncode == 0, result.stderr


def test_attack_reads_the_mixed_series(old_store) -> None:
    _, store = old_store
    with ReleaseStore.open(store) as db:
        first = db.published_periods()[0]
    result = invoke_cli("attack", "--store", store, "--period", first, "--json",
                        "--target", "age=32")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["target"]["age"] == "Adult (25-44)"


def test_an_exported_mixed_series_reads_through_its_newest_manifest(old_store) -> None:
    folder, store = old_store
    out = folder / "exported"
    assert main(["export", "--store", str(store), "--out", str(out)]) == 0
    series = load_series(folder=out)
    # The old manifest's tree alone gives the old bands default self leaves ...
    first = series.periods[0]
    old_tree = read_arx(series.manifests[first]["hierarchies"]["age"]["text"], name="age")
    assert old_tree.self_leaves["Adult"] == "Adult (exact)"
    # ... but the series is read through the newest manifest, which holds every old label.
    assert series.hierarchies["age"] == mesh_age_tree()
    for command in ("verify", "attack"):
        extra = ("--period", first, "--target", "age=70") if command == "attack" else ()
        result = invoke_cli(command, out, "--json", *extra)
        assert result.returncode == 0, (command, result.stderr)
