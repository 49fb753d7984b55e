"""RR and AR_rev from the index equal the straightforward all-pairs computation.

:func:`medanon.metrics.disclosure.linkage_risk` finds each target's candidate set G from an
index (records bucketed by effective QID cells, sorted interval endpoints) and leaves the targets
it cannot settle to the all-pairs scan by minimum distance. The reference runs every target
through that scan. On small random series the two must agree exactly (same floats), with the
edge cases the index has to get right: missing original values, empty and '*' cells, intervals
touching at their endpoints, near misses within the tie tolerance, follow-ups across periods
(B-, F-, L- and MD-attacks), withheld cases, background knowledge, life spans, original values
given as intervals, and schemas with no or two numeric QIDs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medanon.metrics import disclosure
from medanon.metrics.disclosure import _reference_linkage_risk, linkage_risk
from medanon.models.names import PPMS_DP_MODEL
from medanon.published.series import PublishedSeries

from ..random_series import KNOWLEDGE, SCHEMAS, random_series

@pytest.mark.parametrize("schema", sorted(SCHEMAS))
@pytest.mark.parametrize("seed", range(12))
def test_index_equals_the_all_pairs_reference(schema, seed):
    qids = SCHEMAS[schema]
    series, originals = random_series(seed, qids, periods=3 + seed % 2)
    background = KNOWLEDGE if schema == "faers" and seed % 3 == 0 else None
    for label in series.periods:
        for md in (False, True):
            for lifespan in (None, 1):
                fast = linkage_risk(series, label, originals[label], md=md,
                                    background=background, lifespan=lifespan)
                slow = _reference_linkage_risk(series, label, originals[label], md=md,
                                               background=background, lifespan=lifespan)
                assert fast == slow, (label, md, lifespan)


def test_the_index_settles_most_targets_and_the_scan_the_rest(monkeypatch):
    # Not vacuous: over the random series the index settles targets and the scan gets the
    # near misses, the uncovered targets and those knowing two numeric QIDs.
    scanned, settled = [], []
    scan, indexed = disclosure._HardLinkage._scan, disclosure._HardLinkage._indexed

    def count_scan(self, classes, *args):
        scanned.append(len(classes))
        return scan(self, classes, *args)

    def count_index(self, *args):
        done = indexed(self, *args)
        settled.append(int(done.sum()))
        return done

    monkeypatch.setattr(disclosure._HardLinkage, "_scan", count_scan)
    monkeypatch.setattr(disclosure._HardLinkage, "_indexed", count_index)
    for schema in ("faers", "two-numeric"):
        for seed in range(8):
            series, originals = random_series(seed, SCHEMAS[schema])
            for label in series.periods:
                linkage_risk(series, label, originals[label], md=True)
    assert sum(settled) > 0 and sum(scanned) > 0


def test_a_near_miss_ties_with_the_covering_records():
    # Published 59.9999999999999 misses the true 60 by 1e-13: within the tie tolerance of the
    # minimum distance, so the record joins G with the covering one (both Pr 1/2).
    rows = pd.DataFrame({"period": "2020Q1", "case_id": ["a", "b"], "group": ["1", "2"],
                         "sex": ["M", "M"], "age": ["*", "*"],
                         "weight": ["[55-65]", "59.9999999999999"],
                         "indications": ["x", "y"], "reactions": ["", ""]})
    series = PublishedSeries({"2020Q1": rows}, {"2020Q1": {}}, SCHEMAS["faers"],
                             ("indications", "reactions"), "test")
    original = pd.DataFrame({"case_id": ["a", "b"], "sex": ["M", "M"],
                             "age": ["Adult (25-44)", "Adult (25-44)"], "weight": [60.0, 70.0]})
    risk = linkage_risk(series, "2020Q1", original)
    # a: G = {a, b} (b ties) -> 1/2; b (70): only a's [55-65] is 5 away, b's value 10 -> G = {a}
    assert risk.rr == pytest.approx(0.25)
    assert risk == _reference_linkage_risk(series, "2020Q1", original)


def _dp_manifest(eps: float, perturbed: tuple[str, ...]) -> dict:
    """A strict PPMS-DP release: weight Laplace-perturbed on [0, 300], sex by the exponential
    mechanism when listed."""
    mechanisms = [{"target": q, "mechanism": "laplace" if q == "weight" else "exponential",
                   "epsilon": eps} for q in perturbed]
    return {"method": {"name": "ppms-dp", "privacy_model": PPMS_DP_MODEL,
                       "parameters": {"k": 3, "epsilon": str(eps), "variant": "strict"}},
            "details": {"theta_table": {"default": 0.5, "overrides": {}},
                        "perturbed_qids": list(perturbed), "domains": {"weight": [0.0, 300.0]}},
            "privacy_spent": {"epsilon_per_case": str(eps * len(perturbed)),
                              "mechanisms": mechanisms}}


@pytest.mark.parametrize("perturbed", [("weight",), ("weight", "sex")])
@pytest.mark.parametrize("seed", range(6))
def test_posterior_risk_on_the_matched_buckets_equals_the_whole_release(seed, perturbed):
    # The likelihood-weighted attacker's RR/AR_rev: likelihoods computed on the records of the
    # matched buckets only, the posterior over the whole release as before.
    series, originals = random_series(seed, SCHEMAS["faers"],
                                      manifests=_dp_manifest(0.5 + seed % 3, perturbed))
    background = KNOWLEDGE if seed % 2 else None
    for label in series.periods:
        for md in (False, True):
            fast = linkage_risk(series, label, originals[label], md=md, background=background)
            slow = _reference_linkage_risk(series, label, originals[label], md=md,
                                           background=background)
            assert fast.attacker == "likelihood-weighted"
            assert fast == slow, (label, md)


@pytest.mark.parametrize("seed", range(20))
def test_the_union_from_ranks_is_the_union_from_the_floats(seed):
    """_union_by_term_sorted of the intervals ordered as _Sweep orders them (by term, then
    the rank of the lower end; ranks made once per release, issue 43) gives the segments of
    _union_by_term on the same intervals: ties, touching and nested intervals, infinite ends,
    both signs of zero, a term listed once or many times, intervals not in term order."""
    import numpy as np

    rng = np.random.default_rng(seed)
    size = int(rng.integers(0, 300))
    grid = np.array([-np.inf, -2.5, -0.0, 0.0, 1.0, 1.5, 3.0, 7.25, 40.0, np.inf])
    a = grid[rng.integers(0, grid.size, size)] if seed % 2 else rng.normal(0, 5, size).round(1)
    b = a + np.abs(rng.normal(0, 3, size)).round(1) * (rng.random(size) < 0.8)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    term = rng.integers(0, 1 + seed * 3, size)
    pool_lo = np.concatenate([lo, rng.normal(0, 9, 50)])  # the ranks of a whole release
    pool_hi = np.concatenate([hi, rng.normal(0, 9, 50)])
    lo_values, lo_rank = disclosure._ranked(pool_lo)
    hi_values, hi_rank = disclosure._ranked(pool_hi)
    want = disclosure._union_by_term(term, lo, hi)
    order = np.argsort(term * len(lo_values) + lo_rank[:size], kind="stable")
    got = disclosure._union_by_term_sorted(term[order], lo_rank[:size][order],
                                           hi_rank[:size][order], lo_values, hi_values)
    for w, g in zip(want, got, strict=True):
        assert g.shape == w.shape
        assert np.array_equal(g, w)  # == on floats: -0.0 and 0.0 cover the same points


@pytest.mark.parametrize("seed", range(40))
def test_unique_rows_is_numpy_unique_along_rows(seed):
    """The lexsort of the index's keys and target classes gives np.unique(axis=0)'s distinct
    rows, first rows and inverse, on integer tables and on float ones with ties, -0.0 and
    infinities (the class of each record, and its representative, are unchanged)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 200)), int(rng.integers(1, 6))
    if seed % 2:
        table = rng.integers(-2, 3, (n, c)).astype(np.int64)
    else:
        table = rng.choice(np.array([0.0, -0.0, 1.5, -np.inf, np.inf, 2.0]), (n, c))
    keys, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    got = disclosure._unique_rows(table)
    assert np.array_equal(got[0], keys) and np.array_equal(got[1], first)
    assert np.array_equal(got[2], inverse.ravel())


@pytest.mark.parametrize("seed", range(40))
def test_classes_with_unknown_values_are_numpy_unique_along_rows(seed):
    """Target tables with NaN (an unknown original value) get np.unique(axis=0)'s classes and
    representatives from the lexsort too: NaN sorts last in both, and a row holding NaN equals
    no other (numpy compares the rows field by field), so it is a class of its own."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 200)), int(rng.integers(1, 6))
    values = np.array([np.nan, 0.0, -0.0, 1.5, -np.inf, np.inf, 2.0])
    table = rng.choice(values[:3] if seed % 2 else values, (n, c))
    table[0, 0] = np.nan
    _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    got_inverse, got_first = disclosure._classes(table)
    assert np.array_equal(got_first, first) and np.array_equal(got_inverse, inverse.ravel())


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
@pytest.mark.parametrize("seed", range(4))
def test_original_region_takes_the_rows_loc_picks(schema, seed):
    # The targets' values are taken by position (issue 43): the same as the records reindexed
    # by CaseID with .loc (given in the release's order, where positions are the identity),
    # whatever the order of the records and their extra rows and columns; a repeated CaseID
    # keeps .loc's rows (one per occurrence).
    series, originals = random_series(seed, SCHEMAS[schema])
    for label in series.periods:
        cases = series.releases[label]["case_id"].astype(str).to_numpy()
        records = originals[label].sample(frac=1.0, random_state=seed).assign(extra=1)
        in_order = records.set_axis(pd.Index(records["case_id"].astype(str))).loc[cases]
        region, known = disclosure._original_region(records, cases, series)
        expected_region, expected_known = disclosure._original_region(
            in_order.reset_index(drop=True), cases, series)
        for got, expected in ((region.cat, expected_region.cat), (region.lo, expected_region.lo),
                              (region.hi, expected_region.hi), (known, expected_known)):
            assert got.keys() == expected.keys()
            for name in got:
                np.testing.assert_array_equal(got[name], expected[name])
        repeated = pd.concat([records, records[records["case_id"].astype(str) == cases[0]]])
        _, known = disclosure._original_region(repeated, cases, series)
        assert all(len(v) == len(cases) + 1 for v in known.values())


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
@pytest.mark.parametrize("seed", range(8))
def test_index_equals_the_reference_when_groups_share_their_cells(schema, seed):
    # As in a real release, each group's records publish the same cells: the index's sweeps
    # count records of one bucket and interval together, and keep one of their pairs per term
    # (issue 43). Each random group takes its first record's cells.
    qids = SCHEMAS[schema]
    series, originals = random_series(seed, qids, periods=3 + seed % 2)
    names = [q.name for q in qids]
    releases = {}
    for label, rows in series.releases.items():
        rows = rows.copy()
        if names:
            rows[names] = rows.groupby("group")[names].transform("first")
        releases[label] = rows
    shared = PublishedSeries(releases, dict(series.manifests), qids,
                             ("indications", "reactions"), "random series, shared cells")
    for label in shared.periods:
        for md in (False, True):
            fast = linkage_risk(shared, label, originals[label], md=md)
            slow = _reference_linkage_risk(shared, label, originals[label], md=md)
            assert fast == slow, (label, md)


def test_index_sorts_its_pairs_alike_when_their_keys_pass_int64(monkeypatch):
    # beyond int64 the sweep's pairs are ordered by a lexsort of (term, lower end, class)
    monkeypatch.setattr(disclosure, "_SWEEP_KEYS", 0)
    for seed in range(3):
        test_index_equals_the_reference_when_groups_share_their_cells("two-numeric", seed)
        test_index_equals_the_reference_when_groups_share_their_cells("faers", seed)


@pytest.mark.parametrize("seed", range(4))
def test_linked_releases_need_no_sensitive_columns(seed):
    """A release read only to be linked to never has its terms read: the measures of a release
    are the same when the other releases' rows lack the sensitive columns (what ``evaluate``
    fetches, issue 43), and a view whose terms are read without them is refused, naming the
    column."""
    from medanon.attacks.worst_case import attack_series
    from medanon.errors import SchemaError
    from medanon.published.cells import reading_once
    from medanon.published.links import read_view

    series, originals = random_series(seed, SCHEMAS["faers"], periods=3)
    for label in series.periods:
        bare = PublishedSeries(
            {p: rows if p == label else rows.drop(columns=list(series.sensitive))
             for p, rows in series.releases.items()},
            series.manifests, series.qids, series.sensitive, series.source)
        for md in (False, True):
            assert (linkage_risk(bare, label, originals[label], md=md)
                    == linkage_risk(series, label, originals[label], md=md))
            assert (attack_series(bare, periods=[label], md=md)
                    == attack_series(series, periods=[label], md=md))
        other = next(p for p in series.periods if p != label)
        with reading_once():
            view = read_view(bare, other)   # its links, groups and regions read
            assert view.n == len(series.releases[other])
            with pytest.raises(SchemaError, match="lacks column"):
                _ = view.term_row
