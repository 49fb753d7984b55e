"""The incremental gate equals the gate over the whole series (issue 30).

``medanon release`` gates a candidate against what it links to (``PublishedSeries.linked``:
the earlier rows of its cases, every case of the groups those sit in, and under 002's MD-attack
the whole previous release), never the whole history. For random series (follow-ups with gaps,
missing values, life spans) published by each periodic method, and with declared models that
the releases break on purpose (so that both a candidate's own violations and violations it
causes in earlier groups occur), every candidate gets the same manifest entry and the same
findings from both gates, and the store's SQL selection (``ReleaseStore.linked_rows``) holds
the same rows as the in-memory one. Verifying a series one release at a time, each against
what it links to (``verify_linked``, ``medanon verify --store``), gives the whole series'
verdict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import medanon
from medanon.attacks.worst_case import attack_linked, attack_series
from medanon.anonymize import HA, MSAnonymization, PPMSDPNum, PPMSPlus, PPMSPlusPlus
from medanon.data.loaders.faers import read_faers
from medanon.data.schema import Schema
from medanon.errors import InfeasibleError, PrivacyViolation
from medanon.models.names import PPMS_MODEL
from medanon.pipeline.history import StoreSeries, verify_store
from medanon.pipeline.publish import publish_periods
from medanon.pipeline.checks import Acknowledgements
from medanon.published.series import PublishedSeries, kept_releases, load_series
from medanon.random import randomness
from medanon.store import ReleaseStore
from medanon.verify import gate, md_whole, observed_case_span, verify_linked, verify_series
from tests.property.test_gate_brute_force import SCHEMA as DATED
from tests.property.test_gate_brute_force import with_dates
from tests.property.test_periodic_methods import random_series
from tests.series_helpers import publish_series

SCHEMA = Schema.papers()
#: no shrinking: a failing example is reported as generated (shrinking a series takes minutes)
PHASES = (Phase.explicit, Phase.reuse, Phase.generate)
SETTINGS = settings(max_examples=6, deadline=None, derandomize=True, phases=PHASES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _declared(series: medanon.Series, *, k: int | None, lifespan: int | None,
              alpha: float | None, as_ppms: bool) -> PublishedSeries:
    """The series with its manifests declaring another k, life span or α than the method used:
    the releases then break the declared model in places (own and caused violations)."""
    manifests = {}
    for label, manifest in series.manifests.items():
        method = dict(manifest["method"])
        parameters = dict(method.get("parameters") or {})
        if k is not None:
            parameters["k"] = k
        parameters["lifespan"] = lifespan
        if alpha is not None:
            parameters["alpha"] = alpha
        if as_ppms:
            method["privacy_model"] = PPMS_MODEL
        manifests[label] = {**manifest, "method": {**method, "parameters": parameters}}
    return PublishedSeries(dict(series.releases), manifests, series.qids, series.sensitive,
                           "test series")


def _gated(published: PublishedSeries, label: str, rows: pd.DataFrame, manifest: dict):
    try:
        result = gate(published, label, rows, manifest)
        return result.verification, result.verdict
    except PrivacyViolation as exc:
        return exc.verification, exc.verdict


def assert_incremental_equals_full(series: PublishedSeries) -> int:
    """Gate every release of ``series`` as the candidate after the ones before it, with the
    whole history and with what it links to; return the violations seen (to show the series
    exercised the comparison)."""
    seen = 0
    labels = series.periods
    # the streamed verification (medanon verify --store) gives the whole series' verdict
    def linked_of(label):
        return series.linked(series.releases[label]["case_id"])

    assert verify_linked(labels, linked_of, observed_span=observed_case_span(series)) == \
        verify_series(series)

    # and so does each release checked on its cases' rows alone, without the other cases of
    # their groups (what medanon evaluate checks and measures: StoreSeries.
    # verified_linked_release, issue 43)
    def cases_of(label):
        ids = set(series.releases[label]["case_id"].astype(str))
        rows = {p: r[r["case_id"].astype(str).isin(ids).to_numpy()].reset_index(drop=True)
                for p, r in series.releases.items()}
        keep = kept_releases(series.periods, [p for p, r in rows.items() if len(r)])
        return PublishedSeries({p: rows[p] for p in keep},
                               {p: series.manifests[p] for p in keep if p in series.manifests},
                               series.qids, series.sensitive, series.source)

    assert verify_linked(labels, cases_of, observed_span=observed_case_span(series)) == \
        verify_series(series)
    # and so does the streamed worst-case attack (medanon attack --store), on either selection
    whole = attack_series(series)
    assert attack_linked(labels, linked_of) == whole
    assert attack_linked(labels, cases_of) == whole
    for i, label in enumerate(labels):
        history = series.restricted_to(labels[:i])
        rows, manifest = series.releases[label], series.manifests[label]
        full_entry, full_found = _gated(history, label, rows, manifest)
        linked = history.linked(rows["case_id"], whole=md_whole(label, history.manifests))
        entry, found = _gated(linked, label, rows, manifest)
        assert entry == full_entry, label
        if full_found is None:
            assert found is None
            continue
        assert found == full_found
        assert [r.period for r in found.releases if r.period == label] == [label]
        seen += len(entry.get("violations", ()))
    return seen


def _publish(method, records, schema=SCHEMA):
    try:
        return publish_series(method, records, schema, seed=1)
    except InfeasibleError:
        assume(False)


@pytest.mark.parametrize("method_class", [PPMSPlus, PPMSPlusPlus])
@given(seed=st.integers(0, 2**31), k=st.integers(2, 3), missing=st.sampled_from([0.0, 0.3]),
       lifespan=st.sampled_from([None, 1, 2]), declared_k=st.sampled_from([None, 4, 6]),
       dated=st.booleans())
@SETTINGS
def test_the_ppms_gate_reads_only_what_a_release_links_to(method_class, seed, k, missing,
                                                          lifespan, declared_k, dated):
    records = random_series(seed, periods=5, missing=missing)
    if dated:  # receipt dates derived from the series, checked by the gate (issue 29)
        records = with_dates(records, seed)
    series = _publish(method_class(k=k, theta=1.0, lifespan=lifespan,
                                   on_infeasible="suppress-terms", max_withheld=1.0), records,
                      DATED if dated else SCHEMA)
    assert_incremental_equals_full(_declared(series, k=declared_k, lifespan=lifespan, alpha=None,
                                             as_ppms=False))


@given(seed=st.integers(0, 2**31), lifespan=st.sampled_from([None, 1, 3]))
@SETTINGS
def test_single_release_groups_checked_as_ppms_break_earlier_groups_alike(seed, lifespan):
    """MS covers no old case: later releases F-exclude records of earlier groups, so the
    candidates cause violations in the releases before them."""
    records = random_series(seed, periods=5)
    series = _publish(MSAnonymization(k=2, theta=1.0), records)
    declared = _declared(series, k=3, lifespan=lifespan, alpha=None, as_ppms=True)
    full = verify_series(declared)
    assert not full.ok
    assert assert_incremental_equals_full(declared) > 0


@given(seed=st.integers(0, 2**31), missing=st.sampled_from([0.0, 0.3]),
       alpha=st.sampled_from([None, 0.2]))
@settings(max_examples=5, deadline=None, derandomize=True, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_the_ha_gate_reads_the_previous_release_whole_for_its_md_part(seed, missing, alpha):
    """A release gives the previous one its MD part (every group's md-records and views):
    a tighter declared α makes the candidate break groups that hold none of its cases."""
    records = random_series(seed, periods=5, size=(40, 70), vocabulary=60,
                            reaction_counts=(0.5, 0.35, 0.15), missing=missing)
    series = _publish(HA(k=2, theta=1.0, alpha=0.5, on_infeasible="suppress-terms",
                         ss_rule={"reactions": 3}, max_withheld=1.0), records)
    assert_incremental_equals_full(_declared(series, k=None, lifespan=None, alpha=alpha,
                                             as_ppms=False))


@given(seed=st.integers(0, 2**31), declared_k=st.sampled_from([None, 5]))
@settings(max_examples=4, deadline=None, derandomize=True, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_the_ppms_dp_gate_reads_only_what_a_release_links_to(seed, declared_k):
    records = random_series(seed, periods=4, missing=0.2)
    series = _publish(PPMSDPNum(k=2, theta=1.0, epsilon=1.0, on_infeasible="suppress-terms",
                                max_withheld=1.0), records)
    assert_incremental_equals_full(_declared(series, k=declared_k, lifespan=None, alpha=None,
                                             as_ppms=False))


def test_the_store_selects_the_rows_the_series_selects(tmp_path) -> None:
    source = tmp_path / "faers"
    medanon.Dataset.synthetic_faers(source, periods=4, cases=150, seed=11)
    with ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.default()) as store:
        store.ingest(read_faers(source))
        publish_periods(store, PPMSPlusPlus(k=3, theta=1.0, max_withheld=1.0), [], randomness(seed=2),
                        acknowledged=Acknowledgements(seeded=True))
        series = load_series(store=store)
        rng = np.random.default_rng(0)
        everyone = sorted(set().union(*(set(r["case_id"]) for r in series.releases.values())))
        for size, whole in [(0, []), (5, []), (40, []), (40, ["2020Q2"]), (len(everyone), [])]:
            cases = list(rng.choice(everyone, size, replace=False)) + ["not-a-case"]
            expected = series.linked(cases, whole=whole)
            got = StoreSeries(store).linked(cases, whole=whole)
            assert list(got.releases) == list(expected.releases)
            assert got.manifests == expected.manifests
            for label in expected.periods:
                assert got.releases[label].equals(expected.releases[label].astype(object)), label
            rows = store.linked_rows(cases, whole=whole)  # every published period
            assert list(rows) == series.periods
            # the release's read (cells shared) is the same frames, dtypes included
            shared = store.linked_rows(cases, whole=whole, share_cells=True)
            for label in rows:
                pd.testing.assert_frame_equal(shared[label], rows[label])
            for label, r in shared.items():   # equal cells of a column are one object
                for name in (c for c in r.columns if c != "case_id"):
                    if len(r):
                        assert len({id(c) for c in r[name]}) == r[name].nunique(), (label, name)
            assert all(len(rows[p]) == len(got.releases.get(p, ())) for p in rows)
            if 0 < size < len(everyone):
                assert sum(map(len, rows.values())) < sum(map(len, series.releases.values()))
        for label in series.periods:   # a release's own read: its cases selected in SQL
            mine = store.release_linked_rows(label)
            want = store.linked_rows(store.release_cases(label))
            assert list(mine) == list(want)
            for period in want:
                pd.testing.assert_frame_equal(mine[period], want[period])
        assert verify_store(store) == verify_series(series)
        assert verify_store(store, ["2020Q3", "2020Q1"]) == verify_series(series, ["2020Q3", "2020Q1"])
        # the pseudonyms' check asks which CaseIDs are published: a mask in the order given
        asked = [*rng.choice(everyone, 30, replace=False), "not-a-case", everyone[0], everyone[0]]
        assert store.published_mask(asked).tolist() == [c in set(everyone) for c in asked]
        assert (store.published_mask(asked).tolist()
                == pd.Index(asked).isin(store.published_case_ids(asked)).tolist())
        assert store.published_mask([]).tolist() == []


def test_the_comparison_catches_a_gate_that_reads_too_little() -> None:
    """Without the previous release held whole, the HA gate misses the violations the MD part
    causes in groups that hold none of the candidate's cases: the comparison above sees it."""
    records = random_series(3, periods=4, size=(40, 70), vocabulary=60,
                            reaction_counts=(0.5, 0.35, 0.15))
    series = _declared(publish_series(HA(k=2, theta=1.0, alpha=0.5, on_infeasible="suppress-terms",
                                         ss_rule={"reactions": 3}, max_withheld=1.0),
                                      records, SCHEMA, seed=1),
                       k=None, lifespan=None, alpha=0.2, as_ppms=False)
    differ = 0
    for i, label in enumerate(series.periods):
        history = series.restricted_to(series.periods[:i])
        rows, manifest = series.releases[label], series.manifests[label]
        too_little = history.linked(rows["case_id"])  # no whole previous release
        differ += _gated(too_little, label, rows, manifest) != _gated(history, label, rows, manifest)
    assert differ > 0
