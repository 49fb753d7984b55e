"""θ = 1 is no limit (issue 29, item 5): ``medanon release`` names on stderr the terms each
released period leaves unbounded, ``--protect`` (or a θ file's caps, or the schema's
``protected_terms``) caps them, and the manifest's θ table records the caps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medanon.cli.commands import UNBOUNDED_SHOWN
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.models.theta import ThetaTable
from medanon.store import ReleaseStore
from tests.conftest import assert_user_error, invoke_cli

FREQUENCY = ("--method", "ppms++", "--k", "3", "--theta", "frequency", "--seed", "5",
             "--allow-seeded")
HEAD = "warning: theta = 1 (no limit) leaves sensitive terms unbounded"


@pytest.fixture(scope="module")
def series(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("unbounded") / "faers"
    # the legacy generator (the default until issue 42): its frequent terms get θ = 1
    write_faers_series(folder, periods=3, cases=200, seed=3, profile="legacy")
    return folder


def _store(series: Path, tmp_path: Path, *extra: str) -> Path:
    store = tmp_path / "s.duckdb"
    result = invoke_cli("ingest", series, "--store", store, *extra)
    assert result.returncode == 0, result.stderr
    return store


def _tables(store: Path) -> dict[str, ThetaTable]:
    with ReleaseStore.open(store) as db:
        return {p: ThetaTable.from_manifest(db.manifest(p)["details"]["theta_table"])
                for p in db.published_periods()}


def _period_lines(stderr: str) -> dict[str, str]:
    """Each released period's line of the warning (a line may cover a run of periods)."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEAD))
    out = {}
    for line in lines[start + 1:]:
        if not line.startswith("  20"):
            break
        span = line.split(":")[0].strip()
        first, _, last = span.partition("-")
        out.update({p: line for p in _periods(first, last or first)})
    return out


def _periods(first: str, last: str) -> list[str]:
    labels = [f"{y}Q{q}" for y in range(2019, 2024) for q in range(1, 5)]
    return labels[labels.index(first):labels.index(last) + 1]


def test_release_warns_of_every_period_s_unbounded_terms(series, tmp_path) -> None:
    store = _store(series, tmp_path)
    result = invoke_cli("release", *FREQUENCY, "--on-infeasible", "raise-theta", "--store", store,
                        "--json")
    assert result.returncode == 0, result.stderr
    tables = _tables(store)
    lines = _period_lines(result.stderr)
    assert sorted(lines) == sorted(tables) == ["2020Q1", "2020Q2", "2020Q3"]
    summaries = {s["period"]: s for s in json.loads(result.stdout)}
    for period, table in tables.items():
        unbounded = sorted((t for t, v in table.overrides.items() if v >= 1.0), key=str.casefold)
        assert unbounded, period  # the frequency rule gives theta 1 to the most frequent terms
        line = lines[period]
        assert f"{len(unbounded)} term(s) at theta 1: " in line
        for term in unbounded[:UNBOUNDED_SHOWN]:
            assert repr(term) in line, term
        if len(unbounded) > UNBOUNDED_SHOWN:
            assert f"and {len(unbounded) - UNBOUNDED_SHOWN} more (--json lists all)" in line
        # --json lists every one, as the published theta table does
        assert summaries[period]["unbounded_terms"] == unbounded
        assert summaries[period]["default_unbounded"] is False
    assert "Cap such terms with --protect TERM=CAP" in result.stderr
    # "Death", rank 5 of the generator's reactions, is among them: the example
    assert all("Death" in t.unbounded_terms for t in tables.values())


def test_a_bounded_release_draws_no_warning_and_uniform_one_says_so(series, tmp_path) -> None:
    store = _store(series, tmp_path)
    args = ("--method", "ppms++", "--k", "3", "--on-infeasible", "raise-theta", "--seed", "5",
            "--allow-seeded", "--store", store)
    bounded = invoke_cli("release", "2020Q1", *args, "--theta", "0.6")
    assert bounded.returncode == 0, bounded.stderr
    assert "theta = 1" not in bounded.stderr
    everything = invoke_cli("release", "2020Q2", *args, "--theta", "1", "--change-policy")
    assert everything.returncode == 0, everything.stderr
    assert HEAD in everything.stderr
    assert ("2020Q2: every term not listed in the theta table (its default theta is 1)"
            in everything.stderr)


def test_protect_caps_terms_and_the_manifest_records_the_caps(series, tmp_path) -> None:
    theta = tmp_path / "theta.toml"  # a theta file's caps join --protect's; the smaller wins
    theta.write_text('default = "frequency"\n[protected]\n"Death" = 0.4\n"Nausea" = 0.5\n',
                     encoding="utf-8")
    store = _store(series, tmp_path)
    result = invoke_cli("release", "--method", "ppms++", "--k", "3", "--theta", theta,
                        "--protect", "Death=0.3", "--on-infeasible", "raise-theta", "--seed", "5",
                        "--allow-seeded", "--store", store)
    assert result.returncode == 0, result.stderr
    caps = {"Death": 0.3, "Nausea": 0.5}
    for period, table in _tables(store).items():
        assert dict(table.caps) == caps, period
        assert all(table.get(t) <= cap for t, cap in caps.items())
        assert "Death" not in table.unbounded_terms and "Nausea" not in table.unbounded_terms
    with ReleaseStore.open(store) as db:
        manifest = db.manifest("2020Q1")
    assert manifest["details"]["theta_table"]["caps"] == caps
    assert manifest["method"]["parameters"]["theta"]["protected"] == caps
    assert manifest["verification"]["verdict"] == "passed"
    lines = _period_lines(result.stderr)
    assert not any("'Death'" in line or "'Nausea'" in line for line in lines.values())


def test_an_infeasible_cap_is_refused_unless_raise_theta_which_warns(series, tmp_path) -> None:
    store = _store(series, tmp_path)
    before = invoke_cli("inspect", "--store", store, "--json").stdout
    refused = invoke_cli("release", "2020Q1", *FREQUENCY, "--protect", "Death=0.01",
                         "--store", store)
    assert_user_error(refused, "InfeasibleError", "theta 0.01 (protected, cap 0.01)")
    assert invoke_cli("inspect", "--store", store, "--json").stdout == before
    # every Death case is withheld at the raised theta (0.12 < 1/k), 12% of the quarter: over
    # the default --max-withheld, which is not what this test is about
    raised = invoke_cli("release", "2020Q1", *FREQUENCY, "--protect", "Death=0.01",
                        "--on-infeasible", "raise-theta", "--max-withheld", "0.5", "--store", store)
    assert raised.returncode == 0, raised.stderr
    # ... and so the published cases, grouped again without them (issue 41: the release is a
    # function of the published cases only), hold no Death: the cap holds, nothing was raised,
    # and no warning says otherwise
    with ReleaseStore.open(store) as db:
        manifest = db.manifest("2020Q1")
        operator = db.operator_manifests()["2020Q1"]
        rows = db.release_rows("2020Q1")
    # the withheld count is the operator's (issue 41), not the manifest's
    assert "withheld_cases" not in manifest["details"]
    assert "raised_theta" not in manifest["details"] and operator["details"]["withheld_cases"] > 0
    assert manifest["details"]["theta_table"]["caps"]["Death"] == 0.01
    assert not rows["reactions"].astype(str).str.contains("Death").any()
    assert "raised protected term(s) above their cap" not in raised.stderr


def test_unknown_or_malformed_protected_terms_are_refused(series, tmp_path) -> None:
    store = _store(series, tmp_path)
    before = invoke_cli("inspect", "--store", store, "--json").stdout
    for protect, error, fragment in (
            ("Deaht=0.3", "ValidationError",
             "The protected terms name 1 term(s) that no ingested period holds: 'Deaht' (did "
             "you mean 'Death'?)"),
            ("Death", "ValidationError", "--protect expects TERM=CAP"),
            ("Death=2", "ValidationError", "--protect must give each term a cap in (0, 1]")):
        result = invoke_cli("release", *FREQUENCY, "--protect", protect, "--store", store)
        assert_user_error(result, error, fragment)
        assert invoke_cli("inspect", "--store", store, "--json").stdout == before
    assert "--allow-unknown-terms" in invoke_cli("release", *FREQUENCY, "--protect", "Deaht=0.3",
                                                 "--store", store).stderr


def test_the_schema_s_protected_terms_cap_every_release(series, tmp_path) -> None:
    schema = Schema.from_mapping({**Schema.default().model_dump(by_alias=True),
                                  "protected_terms": {"Death": 0.35}})
    path = tmp_path / "schema.toml"
    path.write_text(schema.to_toml(), encoding="utf-8")
    store = _store(series, tmp_path, "--schema", path)
    result = invoke_cli("release", *FREQUENCY, "--on-infeasible", "raise-theta", "--store", store)
    assert result.returncode == 0, result.stderr
    for table in _tables(store).values():
        assert table.get("Death") == 0.35 and dict(table.caps) == {"Death": 0.35}


def test_every_raised_theta_is_told_on_stderr_and_in_json(series, tmp_path) -> None:
    """A θ that raise-theta raised (not only a protected term's cap) is told to the steward on
    stderr, also with --json, and listed in --json as the manifest records it (issue 44)."""
    store = _store(series, tmp_path)
    result = invoke_cli("release", "2020Q1", "--method", "ppms++", "--k", "5", "--theta", "0.2",
                        "--on-infeasible", "raise-theta", "--max-withheld", "1", "--seed", "5",
                        "--allow-seeded", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)[0]
    with ReleaseStore.open(store) as db:
        recorded = db.manifest("2020Q1")["details"].get("raised_theta") or {}
    assert recorded, "the legacy profile's frequent terms cannot meet theta 0.2 at k 5"
    assert set(recorded) <= set(summary["raised_theta"])
    for term, entry in summary["raised_theta"].items():
        assert entry["theta"] == 0.2 and entry["raised_to"] > 0.2
        if term in recorded:
            assert entry["raised_to"] == recorded[term]["raised_to"]
        assert f"{term!r} 0.2 -> {entry['raised_to']:g}" in result.stderr
    assert "raised the theta of" in result.stderr
