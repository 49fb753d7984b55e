"""Notebook-friendly objects (issue 33): one short repr line and a bounded, escaped HTML summary
for every object of the public API, whatever the data size; docstrings on every public member."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

import medanon
from medanon._repr import MAX_HTML_ROWS, MAX_REPR
from medanon.published.series import PublishedSeries

PUBLISHER = {"k": 5, "theta": "frequency", "on_infeasible": "raise-theta", "seed": 7}


def publish(folder, cases: int) -> tuple[medanon.Dataset, medanon.Series]:
    data = medanon.Dataset.synthetic_faers(folder, periods=3, cases=cases, seed=1)
    return data, medanon.Publisher("ppms++", **PUBLISHER).publish(data)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return publish(tmp_path_factory.mktemp("faers300"), 300)


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    return publish(tmp_path_factory.mktemp("faers600"), 600)


def check_line(text: str, kind: str) -> None:
    assert text.startswith(f"<{kind}") and text.endswith(">"), text
    assert len(text) <= MAX_REPR and "\n" not in text, text


def html_rows(text: str) -> int:
    return text.count("<tr>")


# -- the periodic flow --------------------------------------------------------------------------

def test_dataset_repr_is_one_short_line_naming_its_periods(small):
    data, _ = small
    text = repr(data)
    check_line(text, "Dataset")
    assert "3 periods 2020Q1..2020Q3" in text and "schema faers" in text
    total = sum(len(data.records(p)) for p in data.periods)
    assert f"{total} reports" in text
    assert "object at 0x" not in text


def test_series_and_release_reprs_show_published_facts_only(small, tmp_path):
    _, series = small
    text = repr(series)
    check_line(text, "Series")
    assert "3 releases 2020Q1..2020Q3 (ppms++ k=5)" in text and "3 passed" in text
    assert "DataFrame" not in text and "case_id" not in text
    for release in series.releases_published:
        line = repr(release)
        check_line(line, f"Release {release.period}")
        assert "ppms++ k=5" in line and f"{len(release.rows)} rows" in line
        assert f"verdict {release.verdict}" in line
        shown = line + release._repr_html_()
        # the operator-only facts stay out: the input's hash, the private details, the seconds
        assert release.operator["input_sha256"] not in shown
        assert "input_sha256" not in shown and "private_details" not in shown
        assert "seconds" not in shown
    # a series read back (audit mode) says where it came from
    series.export(tmp_path / "published")
    audited = medanon.Series.read(tmp_path / "published")
    check_line(repr(audited), "Series")
    assert "from Series" in repr(audited) and "just published" not in repr(audited)
    base = PublishedSeries(series.releases, series.manifests, series.qids, series.sensitive,
                           series.source)
    check_line(repr(base), "PublishedSeries")


def test_repr_length_does_not_grow_with_the_data(small, large):
    for (data_s, series_s), (data_l, series_l) in [(small, large)]:
        pairs = [(repr(data_s), repr(data_l)), (repr(series_s), repr(series_l)),
                 (repr(series_s.releases_published[0]), repr(series_l.releases_published[0]))]
        for a, b in pairs:
            assert len(b) <= len(a) + 3, (a, b)     # a digit more per count, at most
    # and stays bounded for a series of many releases, one HTML row each up to the cap
    _, series = small
    period = series.periods[0]
    labels = [f"{2000 + i // 4}Q{i % 4 + 1}" for i in range(100)]
    many = PublishedSeries({p: series.releases[period] for p in labels},
                           {p: series.manifests[period] for p in labels}, series.qids,
                           series.sensitive, "x" * 5000)
    check_line(repr(many), "PublishedSeries")
    assert "100 releases 2000Q1..2024Q4" in repr(many)
    page = many._repr_html_()
    assert "and 70 more" in page
    assert html_rows(page) <= MAX_HTML_ROWS + 10 and len(page) < 20_000


def test_html_is_escaped_and_bounded(small):
    data, series = small
    odd = "<script>alert('x')</script> & co"
    sourced = medanon.Dataset([dataclasses.replace(q, source=odd) for q in data.quarters])
    page = sourced._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "&amp; co" in page
    assert "2020Q1" in page and page.startswith('<div class="medanon-repr">')
    stored = dataclasses.replace(series, source=f"Store '{odd}'" + "y" * 2000)
    check_line(repr(stored), "Series")
    page = stored._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and len(page) < 10_000
    release = dataclasses.replace(series.releases_published[0], period="2020Q1<b>")
    assert "<b>" not in release._repr_html_() and "2020Q1&lt;b&gt;" in release._repr_html_()
    check_line(repr(release), "Release")


def test_publisher_repr_names_method_and_parameters():
    publisher = medanon.Publisher("ppms++", **PUBLISHER)
    text = repr(publisher)
    check_line(text, "Publisher")
    assert "ppms++ (periodic)" in text and "k=5" in text and "randomness seeded" in text
    protected = medanon.Publisher("ppms++", k=5, theta="frequency", seed=7,
                                  protect={f"term {i}": 0.3 for i in range(500)})
    check_line(repr(protected), "Publisher")
    page = protected._repr_html_()
    assert "protect" in page and len(page) < 10_000


# -- the one-off families -----------------------------------------------------------------------

def test_table_and_its_release():
    table = medanon.Table.synthetic(500, seed=1)
    check_line(repr(table), "Table")
    assert "500 records" in repr(table) and table.digest not in repr(table)
    release = medanon.Publisher("kanon", k=5).publish(table)
    text = repr(release)
    check_line(text, "TableRelease")
    assert "kanon k=5" in text and f"{len(release.rows)} rows" in text and "verdict passed" in text
    shown = text + release._repr_html_()
    assert release.summary["input_sha256"] not in shown and "input_sha256" not in shown
    assert table.digest not in table._repr_html_()


def test_ehr_records_and_their_release():
    ehr = medanon.EhrRecords.synthetic(300, seed=1)
    check_line(repr(ehr), "EhrRecords")
    assert "300 patients" in repr(ehr)
    release = medanon.Publisher("clinsimrr", epsilon=1, seed=7).publish(ehr)
    text = repr(release)
    check_line(text, "EhrRelease")
    assert "clinsimrr epsilon=1" in text and "verdict passed" in text
    assert f"{len(release.rows)} elements" in text
    shown = text + release._repr_html_()
    assert release.summary["input_sha256"] not in shown and "identifiers" not in shown


# -- docstrings ---------------------------------------------------------------------------------

API_CLASSES = (medanon.Dataset, medanon.Series, PublishedSeries, medanon.Release,
               medanon.TableRelease, medanon.EhrRelease, medanon.EhrRecords, medanon.Table,
               medanon.Publisher, medanon.SeriesPublisher, medanon.TablePublisher,
               medanon.EhrPublisher)


def public_members(cls: type):
    """(name, function or property) of every public method and property, inherited ones too."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        found = inspect.getattr_static(cls, name)
        if isinstance(found, (staticmethod, classmethod)):
            yield name, found.__func__
        elif isinstance(found, property) or inspect.isfunction(found):
            yield name, found


@pytest.mark.parametrize("cls", API_CLASSES, ids=lambda c: c.__name__)
def test_every_public_member_has_a_docstring(cls):
    assert inspect.getdoc(cls)
    members = dict(public_members(cls))
    assert members, cls
    missing = [name for name, member in members.items() if not inspect.getdoc(member)]
    assert not missing, f"{cls.__name__} lacks docstrings on {', '.join(missing)}"
    # a dataclass's fields are described in its docstring (or its base's)
    if dataclasses.is_dataclass(cls):
        text = " ".join(inspect.getdoc(c) or "" for c in cls.__mro__)
        undocumented = [f.name for f in dataclasses.fields(cls)
                        if not f.name.startswith("_") and f.name not in _documented(text)]
        assert not undocumented, f"{cls.__name__} does not describe {', '.join(undocumented)}"


def _documented(text: str) -> set[str]:
    return set(re.findall(r"^\s*(\w+):", text, flags=re.MULTILINE))


def test_randomness_repr_tells_secure_from_seeded():
    secure, seeded = medanon.randomness(), medanon.randomness(seed=7)
    check_line(repr(secure), "Randomness")
    check_line(repr(seeded), "Randomness")
    assert "secure" in repr(secure) and "seeded" not in repr(secure)
    assert "seeded 7" in repr(seeded) and "not secret" in repr(seeded)


def test_verdict_and_policy_reprs_are_one_short_line(small):
    from medanon.models.base import ReleaseVerdict, SeriesVerdict

    _, series = small
    verdict = series.verify()
    check_line(repr(verdict), "SeriesVerdict")
    assert repr(verdict).startswith("<SeriesVerdict ok, 3 releases 2020Q1..2020Q3: 3 passed")
    check_line(repr(verdict.releases[0]), "ReleaseVerdict")
    # whatever a verdict holds: many violations and a long checked text stay one short line
    many = ReleaseVerdict("2020Q1", "PPMS(k, theta*)-bounding", "violated", "checked " * 500,
                          "B/F/L", violations=tuple(f"group {i}" for i in range(1000)))
    check_line(repr(many), "ReleaseVerdict")
    assert "1000 violations" in repr(many)
    check_line(repr(SeriesVerdict((many,) * 50)), "SeriesVerdict")
    policy = medanon.SeriesPolicy.ppms_plus_plus(k=5, theta="frequency",
                                                 protect={f"term {i}": 0.3 for i in range(500)})
    check_line(repr(policy), "SeriesPolicy")
    assert repr(policy).startswith("<SeriesPolicy: ppms++ k=5, theta='frequency'")
