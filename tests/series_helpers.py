"""Publish a small series through a method's library API (no store), for golden/property tests."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from medanon.anonymize.base import Anonymizer
from medanon.periods import parse_period
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.random import randomness
from medanon.published.format import to_published_rows
from medanon.published.series import PublishedSeries, qids_of_schema
from medanon.verify import verify_series


@dataclass
class Series:
    rows: dict[str, pd.DataFrame]
    manifests: dict[str, dict]
    details: dict[str, dict]

    def check(self, schema: Schema, *, declare: dict | None = None):
        """The verify gate's verdict (the production path) on the series.

        ``declare`` overrides parts of every manifest's ``method`` and ``details`` (e.g. to
        check a series against another model than the one its method declares).
        """
        manifests = self.manifests
        if declare:
            manifests = {p: {**m, "method": {**m["method"], **declare.get("method", {})},
                             "details": {**m["details"], **declare.get("details", {})}}
                         for p, m in manifests.items()}
        qids, sensitive = qids_of_schema(schema)
        return verify_series(PublishedSeries(self.rows, manifests, qids, sensitive, "test series"))


def publish_series(method: Anonymizer, records: dict[str, pd.DataFrame], schema: Schema, *,
                   seed: int = 0) -> Series:
    """Anonymize each period in time order; HA stops before the period without a successor."""
    hierarchies = schema.load_hierarchies()
    out = Series({}, {}, {})
    periods = sorted(records, key=parse_period)
    for i, period in enumerate(periods):
        following = parse_period(period).shift(1).label
        next_cases = None
        if method.needs_next_period:
            if following not in records:
                break
            next_cases = set(records[following][schema.case_id].astype(str))
        supers = combine_super_records(records[period], schema, hierarchies)
        previous = list(out.rows.values()) if method.periodic else []
        result = method.anonymize(supers, previous, rng=randomness(seed + i),
                                  next_cases=next_cases)
        out.rows[period] = to_published_rows(result.table, schema)
        out.manifests[period] = {"method": {"name": method.name, "parameters": method.parameters(),
                                            "privacy_model": method.privacy_model},
                                 "details": result.details,
                                 "privacy_spent": method.privacy_statement(schema, result.privacy_losses)}
        out.details[period] = result.details
    return out
