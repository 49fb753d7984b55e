"""Input facts are never silent, on the command line (issue 29): ``medanon ingest`` prints the
duplicates, implausible values and rows of no report it counted, ``--strict`` refuses them and
writes nothing; ``--epsilon`` below the floor is refused unless ``--allow-tiny-epsilon``
(recorded in the manifest); a DP release prints ε per case and the series maximum.

Run in-process (:func:`invoke_cli`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from medanon.accounting import summarize_ledger
from medanon.data.synth.faers import write_faers_series
from medanon.store import ReleaseStore
from tests.conftest import assert_user_error, invoke_cli
from tests.unit.test_ingest_facts import _quarter

DP = ("--method", "ppms-dp-num", "--k", "3", "--theta", "0.6", "--on-infeasible", "raise-theta",
      "--seed", "5", "--allow-seeded")


def test_ingest_prints_the_counts_and_strict_refuses_them(tmp_path) -> None:
    source = _quarter(tmp_path / "q", extra={"OUTC": ["999$DE$"]})
    refused = tmp_path / "refused.duckdb"
    result = invoke_cli("ingest", source, "--store", refused, "--strict")
    assert_user_error(result, "InputQualityError", "needed repairs that --strict refuses")
    assert result.returncode == 1
    for fragment in ("1 duplicate DEMO row(s) whose content conflicts", "4 implausible age(s)",
                     "1 OUTC row(s) whose report id is in no DEMO row", "Nothing was ingested"):
        assert fragment in result.stderr, fragment
    assert not refused.exists(), "a refused ingest must not create the store"

    store = tmp_path / "s.duckdb"
    result = invoke_cli("ingest", source, "--store", store)
    assert result.returncode == 0, result.stderr
    assert "duplicates" in result.stdout and "3 [1 conflicting, 1" in result.stdout  # may wrap
    assert "note: 2021Q3: 1 duplicate DEMO row(s) whose content conflicts" in result.stderr
    assert "--strict refuses such a source" in result.stderr
    # the time is labelled, not a bare "2.4 s" under the table (issue 44)
    last = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"ingested 1 period\(s\) into {re.escape(str(store))} in [0-9.]+ s",
                        last), last

    again = invoke_cli("ingest", source, "--store", tmp_path / "j.duckdb", "--json")
    out = json.loads(again.stdout)
    (report,) = out["quarters"]
    assert (report["duplicate_rows"], report["conflicting_duplicates"],
            report["same_version_reports"]) == (2, 1, 1)
    assert report["implausible"] == {"age": 4, "weight": 4}
    assert report["without_unit"] == {"age": 1, "weight": 1}
    assert report["orphan_rows"]["OUTC"] == 1
    assert out["strict"] is False and len(out["repairs"]["2021Q3"]) == 7

    # an existing store is left as it was by a strict refusal
    before = invoke_cli("inspect", "--store", store, "--json").stdout
    result = invoke_cli("ingest", source, "--store", store, "--strict")
    assert_user_error(result, "InputQualityError", "--strict")
    assert invoke_cli("inspect", "--store", store, "--json").stdout == before


@pytest.fixture(scope="module")
def series(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("facts") / "faers"
    write_faers_series(folder, periods=2, cases=120, seed=3)
    return folder


def test_strict_ingest_of_a_clean_series(series, tmp_path) -> None:
    result = invoke_cli("ingest", series, "--store", tmp_path / "s.duckdb", "--strict")
    assert result.returncode == 0, result.stderr
    assert "note:" not in result.stderr


def test_tiny_epsilon_is_refused_unless_acknowledged_and_spent_epsilon_is_printed(
        series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    assert invoke_cli("ingest", series, "--store", store).returncode == 0
    before = invoke_cli("inspect", "--store", store, "--json").stdout
    result = invoke_cli("release", "2020Q1", *DP, "--epsilon", "1e-300", "--store", store)
    assert_user_error(result, "ValidationError", "--epsilon gives 1e-300 per perturbed QID, "
                                                 "below the floor of 0.01")
    assert "--allow-tiny-epsilon" in result.stderr and "swamps the domain" in result.stderr
    assert invoke_cli("inspect", "--store", store, "--json").stdout == before

    result = invoke_cli("release", "2020Q1", *DP, "--epsilon", "0.001", "--allow-tiny-epsilon",
                        "--store", store)
    assert result.returncode == 0, result.stderr
    # ppms-dp-num perturbs weight only: one QID, so epsilon per case is epsilon
    assert "epsilon per case in this release: 2020Q1 0.001" in result.stdout
    assert "series maximum epsilon per case" in result.stdout

    # another ε is another series policy: the change is acknowledged, the tiny ε is not
    # carried over (it was 2020Q1's acknowledgement)
    result = invoke_cli("release", "2020Q2", *DP, "--epsilon", "1", "--store", store, "--json",
                        "--change-policy")
    assert result.returncode == 0, result.stderr
    (summary,) = json.loads(result.stdout)
    with ReleaseStore.open(store, read_only=True) as db:
        assert db.manifest("2020Q1")["method"]["acknowledged"] == ["allow_tiny_epsilon"]
        assert db.manifest("2020Q2")["method"]["acknowledged"] == ["change_policy"]
        ledger = summarize_ledger(db.ledger())
    assert summary["epsilon_per_case"] == "1" and summary["nominal_epsilon_per_case"] is None
    assert summary["series_max_epsilon_per_case"] == ledger.max_epsilon
    assert ledger.max_epsilon in ("1", "1.001")  # 1.001 when a case is in both releases


def test_non_dp_release_prints_no_epsilon(series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    assert invoke_cli("ingest", series, "--store", store).returncode == 0
    ppms = ("--method", "ppms++", "--k", "3", "--theta", "0.6", "--on-infeasible", "raise-theta",
            "--store", store)
    result = invoke_cli("release", "2020Q1", *ppms)
    assert result.returncode == 0, result.stderr
    assert "epsilon" not in result.stdout
    result = invoke_cli("release", "2020Q2", *ppms, "--allow-tiny-epsilon")
    assert_user_error(result, "ValidationError", "--allow-tiny-epsilon applies to methods "
                                                 "ppms-dp-num and ppms-dp-all")


def test_table_methods_refuse_a_tiny_epsilon(tmp_path) -> None:
    table = tmp_path / "patients.csv"
    assert invoke_cli("synth", "table", table, "--rows", "300", "--seed", "1").returncode == 0
    out = tmp_path / "out"
    result = invoke_cli("ipa", table, "--method", "dphist", "--epsilon", "0.001", "--out", out)
    assert_user_error(result, "ValidationError", "--epsilon gives 0.001 to its histogram")
    result = invoke_cli("ipa", table, "--method", "ipa", "--epsilon", "0.05", "--out", out)
    assert_user_error(result, "ValidationError",
                      "--epsilon gives 0.005 to its suppression step (0.1 of 0.05)")
    assert not out.exists()
    result = invoke_cli("ipa", table, "--method", "dphist", "--epsilon", "0.05",
                        "--allow-tiny-epsilon", "--out", out, "--seed", "1", "--allow-seeded")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["method"]["acknowledged"] == ["allow_tiny_epsilon"]
    assert invoke_cli("verify", out).returncode == 0
