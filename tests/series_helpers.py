"""Publish a small series through the public API (no store), for golden/property tests."""

from __future__ import annotations

import pandas as pd

import medanon
from medanon.anonymize.base import Anonymizer
from medanon.data.schema import Schema
from medanon.published.series import PublishedSeries
from medanon.verify import SeriesVerdict, verify_series


def publish_series(method: Anonymizer, records: dict[str, pd.DataFrame], schema: Schema, *,
                   seed: int = 0) -> medanon.Series:
    """Publish every period in time order (HA stops before the period without a successor).

    The gate runs as in production, but a violating release is kept: the tests judge the
    series themselves with :func:`check`, which names the violations. The safety checks'
    overrides are all given: the tests choose their methods and series on purpose (short life
    spans, method ``none`` as a baseline).
    """
    data = medanon.Dataset(records, schema)
    publisher = medanon.Publisher(method, seed=seed)
    series = publisher.publish(
        data, allow_violations=True, allow_unprotected=True, allow_unknown_terms=True,
        allow_gap=True, allow_short_lifespan=True)
    # The releases publish keyed pseudonyms of the CaseIDs (issue 41); the tests join releases
    # to their records, so the rows get the real CaseIDs back (in place: the series and its
    # releases share them). Under pseudonyms the verdicts read CaseIDs only as links, which a
    # one-to-one renaming keeps (tests/property/test_caseid_renumbering.py).
    return with_real_case_ids(series, publisher, [c for frame in records.values()
                                                  for c in frame[schema.case_id]])


def with_real_case_ids(series: medanon.Series, publisher: medanon.Publisher,
                       real: list) -> medanon.Series:
    """``series`` with each published pseudonym replaced by the real CaseID behind it, in place
    (the series and its releases share the rows), for tests that join releases to records."""
    real = sorted({str(c) for c in real})
    back = dict(zip(publisher.case_ids.of(real), real, strict=True))
    for rows in series.releases.values():
        if len(rows):
            rows["case_id"] = rows["case_id"].map(back)
    return series


def check(series: medanon.Series, *, declare: dict | None = None) -> SeriesVerdict:
    """The verifier's verdict (the gate's own check) on the whole series, computed afresh.

    ``declare`` overrides parts of every manifest's ``method`` and ``details`` (e.g. to
    check a series against another model than the one its method declares).
    """
    manifests = series.manifests
    if declare:
        manifests = {p: {**m, "method": {**m["method"], **declare.get("method", {})},
                         "details": {**m["details"], **declare.get("details", {})}}
                     for p, m in manifests.items()}
    return verify_series(PublishedSeries(series.releases, manifests, series.qids,
                                         series.sensitive, "test series"))
