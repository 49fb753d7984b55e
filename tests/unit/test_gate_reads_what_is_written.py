"""The text written is the text checked (issue 43).

The gate checks the candidate release it is given, in memory, before anything is written. Here
the rows each gate call received are kept, the series is exported in the published release
format, and the written files are read back as an auditor reads them: the gate's reading of its
candidate (``read_view``, the one reader of published rows) must equal the reading of the
written release, cell for cell, so the gate stays an independent reader of what a reader of the
format gets.
"""

from __future__ import annotations

import pandas as pd
import pytest

import medanon
import medanon.pipeline.publish as publish
from medanon.anonymize import PPMSPlusPlus
from medanon.data.schema import Schema
from medanon.published.cells import cell_strings
from medanon.published.links import read_view
from medanon.published.series import PublishedSeries, load_series
from tests.property.test_periodic_methods import random_series

SCHEMA = Schema.papers()


def _reading(series: PublishedSeries, label: str) -> dict[str, list]:
    view = read_view(series, label)
    out: dict[str, list] = {"case": view.case.tolist(),
                            "group": view.group_labels[view.group].tolist(),
                            "terms": sorted(zip(view.case[view.term_row].tolist(),
                                                view.term_names[view.term_code].tolist()))}
    for name, codes in view.region.cat.items():
        out[f"cat {name}"] = codes.tolist()
    for name in view.region.lo:
        out[f"lo {name}"] = view.region.lo[name].tolist()
        out[f"hi {name}"] = view.region.hi[name].tolist()
    for name, blank in view.blank.items():
        out[f"blank {name}"] = blank.tolist()
    return out


@pytest.mark.parametrize("seed", [3, 11])
def test_the_gate_reads_its_candidates_as_the_written_files_read(tmp_path, monkeypatch,
                                                                    seed) -> None:
    checked: dict[str, pd.DataFrame] = {}
    gate = publish.gate

    def keeping(published, period, rows, manifest, **options):
        checked[period] = rows.copy()
        return gate(published, period, rows, manifest, **options)

    monkeypatch.setattr(publish, "gate", keeping)
    records = random_series(seed, periods=3, missing=0.2)
    series = medanon.Publisher(PPMSPlusPlus(k=2, theta=0.7), seed=seed).publish(
        medanon.Dataset(records, SCHEMA), allow_violations=True, allow_unknown_terms=True,
        allow_short_lifespan=True)
    series.export(tmp_path / "out")
    written = load_series(folder=tmp_path / "out")
    assert list(checked) == written.periods == series.periods
    blanks = 0
    for label in written.periods:
        file_rows = written.releases[label]
        gate_rows = checked[label]
        # the same cells, read as text (the file reader reads every cell as a string)
        assert list(gate_rows.columns) == list(file_rows.columns)
        for column in file_rows.columns:
            assert cell_strings(gate_rows[column]).tolist() == \
                cell_strings(file_rows[column]).tolist(), (label, column)
        alone = {p: written.releases[p] for p in written.periods if p == label}
        as_written = PublishedSeries(alone, {label: written.manifests[label]}, written.qids,
                                     written.sensitive, "written")
        as_checked = PublishedSeries({label: gate_rows}, {label: written.manifests[label]},
                                     written.qids, written.sensitive, "checked")
        got, want = _reading(as_checked, label), _reading(as_written, label)
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == want[key], (label, key)
        assert got["terms"]  # the sensitive columns were read, not only the QIDs
        blanks += sum(sum(got[key]) for key in got if key.startswith("blank "))
    assert blanks  # missing cells (written empty) were among those compared
