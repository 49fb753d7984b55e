"""Progress that tells (issue 33): the library functions behind ``medanon evaluate``,
``signals`` and ``ingest`` call their ``progress`` exactly as many times as their step count
says before they start, and the calls change no number."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medanon.api import Dataset, signals
from medanon.data.synth.faers import write_faers_series
from medanon.errors import ValidationError
from medanon.experiments.evaluation import evaluate_store
from medanon.hierarchies.builtin import mesh_age_tree, sex_tree
from medanon.metrics.evaluation import (PublishedOriginals, evaluate_linked, evaluate_series,
                                        evaluation_steps, original_columns)
from medanon.metrics.screening import ScreeningOptions, SeriesScreening, screening_steps
from medanon.metrics.signal_table import signal_table, signal_table_steps
from medanon.metrics.signals import SignalRule
from medanon.pipeline.history import StoreSeries
from medanon.published.series import load_series
from medanon.report.collect import store_originals
from medanon.store import ReleaseStore
from tests.conftest import FAERS_FIXTURES, ingest_and_release

HIER = {"age": mesh_age_tree(), "sex": sex_tree()}


def _quarters(parts: int, n: int = 90, seed: int = 3) -> dict[str, pd.DataFrame]:
    """``parts`` quarters of reports, each case once, with ages and sexes to stratify on."""
    rng = np.random.default_rng(seed)
    rows = pd.DataFrame({
        "case_id": [f"c{i}" for i in range(n)],
        "age": rng.choice(["Adult", "Child", "Aged"], size=n),
        "sex": rng.choice(["F", "M"], size=n),
        "drugs": rng.choice(["ASPIRIN", "AVANDIA", "ZOLOFT", "ASPIRIN|ZOLOFT"], size=n),
        "reactions": rng.choice(["Nausea", "Rash", "Myocardial infarction"], size=n)})
    bounds = np.linspace(0, n, parts + 1).astype(int)
    return {f"2020Q{i + 1}": rows.iloc[lo:hi].reset_index(drop=True)
            for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))}


OPTION_CASES = [
    pytest.param(ScreeningOptions(strata=()), (), id="dedup-and-quarters"),
    pytest.param(ScreeningOptions(strata=("sex = F", "weight > 80"), pooled=True,
                                  cumulative=True), (), id="pooled-cumulative-unpublished-stratum"),
    pytest.param(ScreeningOptions(strata=("age > 18",), quarters=False),
                 (SignalRule("AVANDIA", "Myocardial infarction", "age > 18"),),
                 id="no-quarters-with-a-rule"),
]


@pytest.mark.parametrize(("options", "rules"), OPTION_CASES)
def test_the_screening_tells_each_scope_once_and_screening_steps_counts_them(options, rules):
    original = _quarters(3)
    results, calls = [], []
    for progress in (None, calls.append):
        screening = SeriesScreening(hierarchies=HIER, rules=rules, options=options)
        for label, rows in original.items():
            screening.add(label, rows, rows)
        results.append(screening.result(progress=progress))
    assert len(calls) == screening_steps(options, list(original), rules)
    assert len(calls) == screening_steps(options, 3, rules)
    # every scope of the result is told, by name, in the result's order
    named = {"dedup": "{kind}", "pooled": "{kind}", "cumulative": "up to {scope}"}
    listed = [named.get(e["kind"], "{kind} {scope}").format(**e) for e in results[1]["scopes"]]
    assert [c for c in calls if "skipped" not in c and c != "planted rules"] == listed
    assert ("planted rules" in calls) == bool(rules)
    assert any("skipped" in c for c in calls) == ("weight > 80" in options.strata)
    assert results[0] == results[1]


def test_step_counts_refuse_what_is_not_a_number_of_periods():
    with pytest.raises(ValidationError, match="'periods' parameter of screening_steps"):
        screening_steps(ScreeningOptions(), -1)
    with pytest.raises(ValidationError, match="'periods' parameter of evaluation_steps"):
        evaluation_steps(2.5)
    assert screening_steps(None, 4) == 0 and evaluation_steps(4) == 4


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A small published store: 2 quarters of 120 cases, PPMS++."""
    work = tmp_path_factory.mktemp("progress-steps")
    write_faers_series(work / "in", periods=2, cases=120, followup_rate=0.3, seed=4)
    return ingest_and_release(work / "in", work / "s.duckdb")


@pytest.mark.parametrize("cumulative,pooled", [(False, False), (True, True)])
def test_evaluate_tells_each_release_then_each_scope_as_many_times_as_announced(
        store, cumulative, pooled):
    options = ScreeningOptions(strata=("sex = F",), cumulative=cumulative, pooled=pooled)
    with ReleaseStore.open(store, read_only=True) as db:
        whole = load_series(store=db)
        columns = original_columns((), options)
        got, calls = [], []
        for progress in (None, calls.append):
            frames, _ = store_originals(db, whole.periods, lazy=True, columns=columns)
            rows = PublishedOriginals(frames, db.schema, columns)
            got.append(evaluate_series(whole, frames, rows, screening=options, progress=progress))
        linked_calls: list[str] = []
        frames, _ = store_originals(db, whole.periods, lazy=True, columns=columns)
        linked = evaluate_linked(whole.periods, StoreSeries(db).release_with_cases, frames,
                                 PublishedOriginals(frames, db.schema, columns),
                                 hierarchies=whole.hierarchies, screening=options,
                                 progress=linked_calls.append)
    total = evaluation_steps(whole.periods, screening=options)
    assert len(calls) == len(linked_calls) == total
    # 2 releases; dedup, 2 quarters, 1 stratum; 2 cumulative scopes; pooled
    assert total == 2 + 1 + 2 + 1 + (2 if cumulative else 0) + (1 if pooled else 0)
    assert calls[:2] == whole.periods and calls == linked_calls
    assert got[0] == got[1] == linked


@pytest.mark.slow  # a Dask LocalCluster
def test_evaluate_on_dask_tells_as_the_evaluation_in_one_process(store):
    options = ScreeningOptions(strata=("sex = F",), cumulative=True)
    calls: list[str] = []
    with ReleaseStore.open(store, read_only=True) as db:
        periods = db.published_periods()
    result = evaluate_store(store, periods, screening=options, workers=1,
                            progress=calls.append)
    assert len(calls) == evaluation_steps(periods, screening=options)
    assert calls[:2] == periods and "up to " + periods[-1] in calls
    assert [e["period"] for e in result["releases"]] == periods


@pytest.mark.parametrize("scopes", ["dedup", "quarter", "pooled,cumulative",
                                    "dedup,pooled,quarter,cumulative"])
def test_signal_table_tells_the_prior_then_each_scope(scopes):
    releases = _quarters(3)
    calls: list[str] = []
    quiet = signal_table(releases, scopes=scopes, hierarchies=HIER)
    told = signal_table(releases, scopes=scopes, hierarchies=HIER, progress=calls.append)
    assert len(calls) == signal_table_steps(releases, scopes=scopes)
    assert len(calls) == signal_table_steps(["2020q1", "2020Q2", "2020Q3"], scopes=scopes)
    assert calls[0] == "dedup prior"
    assert calls[1:] == [f"{e['scope']} {e['period']}" for e in told.attrs["signals"]["scopes"]]
    pd.testing.assert_frame_equal(quiet, told)
    assert quiet.attrs == told.attrs


def test_signal_table_steps_refuses_a_bad_scope_or_no_period():
    with pytest.raises(ValidationError, match="'scopes' parameter of signal_table"):
        signal_table_steps(["2020Q1"], scopes="weekly")
    with pytest.raises(ValidationError, match="'releases' parameter of signal_table_steps"):
        signal_table_steps([], scopes="quarter")
    with pytest.raises(ValidationError, match="'releases' parameter of signal_table_steps"):
        signal_table_steps(["Q1 2020"])


def test_signals_of_a_store_announce_their_steps_before_the_first(store):
    events: list[tuple[str, object]] = []
    table = signals(store=store, scopes="quarter,cumulative",
                                on_start=lambda total: events.append(("start", total)),
                                progress=lambda step: events.append(("step", step)))
    (start, total), *steps = events
    assert start == "start" and total == 1 + 2 + 2 == len(steps)
    assert all(kind == "step" for kind, _ in steps)
    assert len(table.attrs["signals"]["scopes"]) == total - 1


def test_the_faers_stream_tells_each_of_the_quarters_it_lists():
    calls: list[str] = []
    quarters = Dataset.stream_faers(FAERS_FIXTURES, progress=calls.append)
    assert len(quarters) >= 1 and not calls  # listed, none read yet
    read = [q.label for q in quarters]
    assert calls == read and len(calls) == len(quarters)
