"""The public API: docs/api.md and the module's examples run as doctests; the gate cannot be
skipped by the store-free path."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import medanon
from medanon.errors import PrivacyViolation, ValidationError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_docs_api_page_runs():
    result = doctest.testfile(str(DOCS), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10 and result.failed == 0


def test_api_module_examples_run():
    import medanon.api

    result = doctest.testmod(medanon.api)
    assert result.attempted >= 5 and result.failed == 0


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return medanon.Dataset.synthetic_faers(tmp_path_factory.mktemp("api") / "faers", periods=3,
                                           cases=250, seed=3)


def test_a_violating_release_is_refused_or_flagged(data, monkeypatch):
    import medanon.verify as gate_module

    # Make the model check fail for the candidate: the store-free path must not return it as
    # verified, whatever happens. (The gate reads the models' verdicts through _verdicts, which
    # verify_series wraps with the observed case span the gate does not read.)
    real = gate_module._verdicts

    def failing(series, periods=None):
        verdicts, lifespans = real(series, periods)
        broken = tuple(type(r)(r.period, r.model, "violated", r.checked, r.attacks, r.md_pending,
                               (f"{r.period} group 1: crafted",), r.dir, r.dsr, r.ssgr, r.bound)
                       for r in verdicts)
        return broken, lifespans

    monkeypatch.setattr(gate_module, "_verdicts", failing)
    publisher = medanon.Publisher("ppms++", k=5, theta=1.0, seed=1)
    with pytest.raises(PrivacyViolation, match="was not published"):
        publisher.publish(data, ["2020Q1"])
    kept = publisher.publish(data, ["2020Q1"], allow_violations=True).releases_published[0]
    assert kept.verdict == "violated" and not kept.verified
    assert kept.manifest["verification"]["published_despite_violations"] is True


def test_publisher_errors_name_parameters(data):
    with pytest.raises(ValidationError, match="'method' parameter of Publisher must be a periodic "
                                              r"method \(none, ms.*a table method \(ipa"):
        medanon.Publisher("k-map", k=5)
    with pytest.raises(ValidationError, match="'theta' parameter of Publisher is required"):
        medanon.Publisher("ppms++", k=5)
    with pytest.raises(ValidationError, match="'epsilon' parameter of Publisher applies"):
        medanon.Publisher("ppms++", k=5, theta=0.5, epsilon=1)
    with pytest.raises(ValidationError, match="'period' parameter of Dataset.records"):
        data.records("1999Q1")


def test_method_names_ignore_case_and_one_period_is_a_label(data):
    """The docs write PPMS++ and HA; a period given alone is that period, not its characters
    (issue 44)."""
    assert medanon.Publisher("PPMS++", k=5, theta=1.0, seed=1).name == "ppms++"
    assert medanon.Publisher(" Ha ", k=5, theta=1.0, alpha=0.5, seed=1).name == "ha"
    alone = medanon.Publisher("ppms++", k=5, theta=1.0, seed=1).publish(data, "2020Q2")
    listed = medanon.Publisher("ppms++", k=5, theta=1.0, seed=1).publish(data, ["2020Q2"])
    assert [r.period for r in alone.releases_published] == ["2020Q2"]
    assert alone.releases_published[0].rows.equals(listed.releases_published[0].rows)


def test_release_goes_into_a_store(data, tmp_path):
    from medanon.store import ReleaseStore

    store_path = tmp_path / "s.duckdb"
    schema = data.schema
    with ReleaseStore.create_or_open(store_path, schema) as store:
        store.ingest(data)  # the Dataset's own quarters: one path from loader to store
        series = medanon.Publisher("ppms++", k=5, theta=1.0, seed=2).publish(data)
        for release in series.releases_published:
            store.publish(release)
        assert store.published_periods() == data.periods
        assert store.operator_record("2020Q1")["input_sha256"]
        assert "input_sha256" not in store.manifest("2020Q1")


def test_import_medanon_is_lazy():
    import subprocess
    import sys

    code = ("import sys, medanon; heavy = {'pandas', 'duckdb', 'matplotlib', 'numpy'}; "
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_store_and_store_free_publish_the_same_releases(data, tmp_path):
    """publish_periods and Publisher.publish run one loop: same seed, same releases."""
    from medanon.pipeline.methods import periodic_method
    from medanon.pipeline.publish import publish_periods
    from medanon.pipeline.checks import Acknowledgements
    from medanon.random import randomness
    from medanon.store import ReleaseStore

    params = {"k": 5, "theta": 1.0}
    api = medanon.Publisher("ppms++", seed=4, **params).publish(data)
    with ReleaseStore.create_or_open(tmp_path / "s.duckdb", data.schema) as store:
        store.ingest(data)
        publish_periods(store, periodic_method("ppms++", **params), [], randomness(4),
                        acknowledged=Acknowledgements(seeded=True))
        for release in api.releases_published:
            stored = store.release_rows(release.period)
            assert stored[list(release.rows.columns)].astype(str).equals(release.rows.astype(str))
            assert store.manifest(release.period)["verification"] == \
                release.manifest["verification"]


def test_one_period_at_a_time_continues_the_series_and_its_gate(data, monkeypatch):
    import medanon.pipeline.publish as publish_module

    whole = medanon.Publisher("ppms++", k=5, theta=1.0, seed=5).publish(data)
    publisher = medanon.Publisher("ppms++", k=5, theta=1.0, seed=5)
    series = None
    calls = []
    real = publish_module.gate
    monkeypatch.setattr(publish_module, "gate", lambda published, period, rows, *a, **k: calls.append(
        (period, dict(published.releases), set(rows["case_id"])))
        or real(published, period, rows, *a, **k))
    for period in data.periods:
        series = publisher.publish(data, [period], previous=series)
        assert series.gate_verdict is not None and series.gate_verdict.ok
        assert [r.period for r in series.gate_verdict.releases] == [period]
    # each period was gated against what it links to (issue 30): every earlier release, each
    # holding the rows of the candidate's cases and of their groups, never the whole history
    assert [c[0] for c in calls] == data.periods
    for i, (_, linked, cases) in enumerate(calls):
        assert list(linked) == data.periods[:i]
        for earlier, rows in linked.items():
            full = series.releases[earlier]
            assert set(full.loc[full["case_id"].isin(cases), "case_id"]) <= set(rows["case_id"])
            hit = set(full.loc[full["case_id"].isin(cases), "group"])
            assert set(full.loc[full["group"].isin(hit), "case_id"]) <= set(rows["case_id"])
        if i:
            assert sum(map(len, linked.values())) < sum(len(series.releases[p])
                                                        for p in data.periods[:i])
    assert series.periods == whole.periods
    for period in data.periods:
        assert series.releases[period].equals(whole.releases[period])
    (last,) = series.releases_published
    assert last.period == data.periods[-1] and last.seconds > 0


def test_ha_waits_for_the_next_period_without_a_store(data):
    publisher = medanon.Publisher("ha", k=3, theta=1.0, alpha=0.5, seed=6,
                                  on_infeasible="suppress-terms")
    series = publisher.publish(data)
    assert series.periods == data.periods[:-1]     # the last period has no next one yet
    assert publisher.publish(data, data.periods[-1:], previous=series).releases_published == ()


def test_super_records_hold_one_row_per_case(data):
    records = data.records("2020Q2")
    supers = data.super_records("2020Q2")
    assert len(supers) == records["case_id"].nunique()
    assert supers.frame["case_id"].is_unique
    with pytest.raises(ValidationError, match="'period' parameter of Dataset.records"):
        data.super_records("1999Q1")
