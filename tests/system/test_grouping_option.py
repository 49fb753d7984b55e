"""``--grouping`` (issue 30): classes-first for PPMS++ and HA by default, the papers' greedy for
the baselines; recorded in the manifest, checked by the gate like any grouping, refused when
unknown without touching the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from medanon.data.synth.faers import write_faers_series
from medanon.store import ReleaseStore
from tests.conftest import assert_user_error, invoke_cli

BASE = ("--k", "3", "--theta", "frequency", "--on-infeasible", "suppress-terms", "--seed", "4",
        "--allow-seeded")


@pytest.fixture(scope="module")
def series(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("grouping") / "faers"
    write_faers_series(folder, periods=2, cases=400, seed=4)
    return folder


def _store(series: Path, tmp_path: Path, name: str) -> Path:
    store = tmp_path / f"{name}.duckdb"
    assert invoke_cli("ingest", series, "--store", store).returncode == 0
    return store


def _manifests(store: Path) -> list[dict]:
    # the operator's view: how many groups were preformed is a count of the private records
    # (issue 41, published.manifest_roles), kept in the store, not published
    with ReleaseStore.open(store, read_only=True) as opened:
        return list(opened.operator_manifests().values())


@pytest.mark.parametrize("method, given, expected", [
    ("ppms++", None, "classes-first"), ("ppms++", "greedy", "greedy"),
    ("ppms+", None, "greedy"), ("ms", "classes-first", "classes-first")])
def test_grouping_is_recorded_and_the_gate_passes(series, tmp_path, method, given, expected):
    store = _store(series, tmp_path, "s")
    flags = ("--grouping", given) if given else ()
    result = invoke_cli("release", "--method", method, *BASE, *flags, "--store", store)
    assert result.returncode == 0, result.stderr
    manifests = _manifests(store)
    assert len(manifests) == 2
    for m in manifests:
        assert m["method"]["parameters"]["grouping"] == expected
        assert (m["details"]["preformed_groups"] > 0) == (expected == "classes-first")
    verified = invoke_cli("verify", "--store", store)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_an_unknown_grouping_is_refused_and_nothing_is_written(series, tmp_path):
    store = _store(series, tmp_path, "bad")
    before = invoke_cli("inspect", "--store", store, "--json").stdout
    result = invoke_cli("release", "--method", "ppms++", *BASE, "--grouping", "fastest",
                        "--store", store)
    assert_user_error(result, "ValidationError", "--grouping")
    assert invoke_cli("inspect", "--store", store, "--json").stdout == before
