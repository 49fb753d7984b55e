"""The verify gate checks the release in memory, and that is the text published (issue 43).

The gate is given the candidate's rows as the release format's strings, before they are
written; it does not parse them back from the store. These tests hold that shortcut honest:
the rows the gate checked are, cell for cell, what the store keeps and what an export's
``release.csv`` holds when read back by the format's own reader.
"""

from __future__ import annotations

import pandas as pd

import medanon
from medanon.data.schema import Schema
from medanon.pipeline import publish as publish_module
from medanon.pipeline.export import export_releases
from medanon.pipeline.methods import periodic_method
from medanon.pipeline.publish import publish_periods
from medanon.pipeline.checks import Acknowledgements
from medanon.published.format import read_series
from medanon.random import randomness
from tests.property.test_periodic_methods import random_series


def test_the_rows_the_gate_checked_are_the_rows_written(tmp_path, monkeypatch) -> None:
    checked: dict[str, pd.DataFrame] = {}
    genuine = publish_module.gate

    def recording(series, period, rows, manifest, **kw):
        checked[period] = rows.copy()
        return genuine(series, period, rows, manifest, **kw)

    monkeypatch.setattr(publish_module, "gate", recording)
    records = random_series(5, periods=3)
    store = medanon.ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.papers())
    store.ingest(medanon.Dataset(records, Schema.papers()))
    method = periodic_method("ppms++", k=3, theta=0.5, on_infeasible="raise-theta",
                             max_withheld=1.0)
    publish_periods(store, method, ["2020Q1", "2020Q2", "2020Q3"], randomness(4),
                    acknowledged=Acknowledgements(seeded=True))
    assert sorted(checked) == ["2020Q1", "2020Q2", "2020Q3"]
    export_releases({p: (store.release_rows(p), store.manifest(p))
                     for p in store.published_periods()}, tmp_path / "out", "csv")
    exported = {r.period: r.rows for r in read_series(tmp_path / "out")}
    for period, rows in checked.items():
        assert len(rows) > 0
        stored = store.release_rows(period)
        assert list(stored.columns) == list(rows.columns)
        assert stored.astype(str).equals(rows.astype(str)), period
        assert exported[period].astype(str).equals(rows.astype(str)), period
    store.close()
