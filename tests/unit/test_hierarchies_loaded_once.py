"""A release reads its schema's hierarchies once and passes them down (issue 44): the method,
the gate and the series views use the same taxonomies, whether published by the Python API
(once per Dataset) or from a store (once per release command)."""

from __future__ import annotations

import warnings

import medanon
from medanon.data.schema import Schema
from medanon.pipeline.methods import periodic_method
from medanon.pipeline.publish import publish_periods
from medanon.pipeline.checks import Acknowledgements
from medanon.random import randomness
from tests.property.test_periodic_methods import random_series


def _counting(monkeypatch) -> list[int]:
    loads: list[int] = []
    genuine = Schema.load_hierarchies

    def counted(self):
        loads.append(1)
        return genuine(self)

    monkeypatch.setattr(Schema, "load_hierarchies", counted)
    return loads


def test_the_api_loads_them_once_per_dataset(monkeypatch):
    loads = _counting(monkeypatch)
    data = medanon.Dataset(random_series(5, periods=3), Schema.papers())
    assert len(loads) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", medanon.UnboundedTermsWarning)
        series = medanon.Publisher("ppms++", k=3, theta=0.5, on_infeasible="raise-theta",
                                   max_withheld=1.0, seed=4).publish(data)
    assert len(series.releases_published) == 3
    assert len(loads) == 1, "publishing three periods loaded the hierarchies again"


def test_a_store_release_loads_them_once(monkeypatch, tmp_path):
    store = medanon.ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.papers())
    store.ingest(medanon.Dataset(random_series(5, periods=3), Schema.papers()))
    loads = _counting(monkeypatch)
    method = periodic_method("ppms++", k=3, theta=0.5, on_infeasible="raise-theta",
                             max_withheld=1.0)
    publish_periods(store, method, ["2020Q1", "2020Q2", "2020Q3"], randomness(4),
                    acknowledged=Acknowledgements(seeded=True))
    assert len(store.published_periods()) == 3
    assert len(loads) == 1
