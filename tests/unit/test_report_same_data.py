"""The report compares only series of the same data (issue 44): series of different inputs or
periods are named as not compared, on the page and in :func:`not_compared`, and no line of a
figure joins the periods of two of them; a recall on the page always says what it was
computed against. Hand-made report data, as in ``test_report_decision``."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from html import unescape

import numpy as np

from medanon.metrics.signals import SignalRule
from medanon.models.base import ReleaseVerdict, SeriesVerdict
from medanon.report import plots
from medanon.report.collect import (QidProfile, SeriesReport, comparison, data_groups,
                                    different_data, not_compared, series_card)
from medanon.report.html import _screening_line, render_report

MODEL = "PPMS(k, theta*)-bounding"
RULE = {"name": "R", "drug": "LEVAQUIN", "reaction": "Tendon rupture", "condition": None}


def _side(prr: float, a: int) -> dict:
    return {"count": a, "a": a, "b": 1, "c": 2, "d": 50, "missing": 0, "undecided": 0,
            "prr": prr, "prr_corrected": None, "ror": prr, "ror_corrected": None,
            "chi_square": 10.0, "signal": True}


def _report(name: str, periods: list[str], *, digest: str | None = "same", dir_: float = 0.0,
            n_cases: int = 40, original_signals: int = 4, recall: float | None = 1.0
            ) -> SeriesReport:
    manifests = {p: {"method": {"name": "ppms++", "privacy_model": MODEL,
                                "parameters": {"k": 5, "lifespan": None}},
                     "details": {"theta_table": {"default": 0.6, "overrides": {}}},
                     "counts": {"cases": n_cases}} for p in periods}
    releases = [{"period": p, "method": "ppms++", "cases": n_cases, "groups": 8, "nil": 0.2,
                 "nil_star": 0.1, "dir": dir_, "dsr": 0.0, "ssgr": None, "attacks": "B/F/L",
                 "attacker": "hard-exclusion", "dir_hard": dir_, "rr": 0.01, "ar_rev": 0.02,
                 "reidentified": 0,
                 "signals": [{"rule": RULE, "original": _side(5.0 + i, 6),
                              "release": _side(4.0 + i, 6)}]}
                for i, p in enumerate(periods)]
    verdicts = SeriesVerdict(tuple(ReleaseVerdict(p, MODEL, "passed") for p in periods))
    ingested = [{"period": p, "n_cases": n_cases, "n_reports": n_cases, "published": True}
                for p in periods]
    card = series_card(manifests, releases, ingested, [], verdicts, None, None)
    kept = None if recall is None else round(recall * original_signals)
    stats = {"recall": recall, "precision": 1.0, "spurious": 0, "scopes": 1,
             "signals_original": original_signals, "signals_release": kept or 0,
             "common": kept or 0}
    screening = {"scopes": [], "summary": {"dedup": {"mgps": stats},
                                           "stratum": {"mgps": {**stats, "scopes": 0}}}}
    profile = [QidProfile("age", "numeric", exact=0.5, suppressed=0.1, mean_width=0.2)]
    return SeriesReport(name=name, store=f"{name}.duckdb", schema="faers", ingested=ingested,
                        evaluation={"releases": releases, "screening": screening},
                        manifests=manifests, profiles={p: profile for p in periods},
                        ledger=None, rules=(SignalRule("LEVAQUIN", "Tendon rupture"),),
                        card=card, inputs={p: digest and f"{digest}-{p}" for p in periods})


OLD = ["2004Q1", "2004Q2"]
NEW = ["2022Q3", "2022Q4"]


def _text(page: str, section: str) -> str:
    start = page.index(f'id="{section}"')
    body = page[start:page.index("</section>", start)]
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def test_series_of_the_same_input_and_periods_are_compared():
    a, b = _report("A", OLD), _report("B", OLD, dir_=0.5)
    assert different_data(a, b) is None and data_groups([a, b]) == [[a, b]]
    assert not_compared([a, b]) == []
    assert comparison([b, a])[0].startswith("Lower risk: A (max DIR 0.00")
    assert "not-compared" not in render_report([a, b])


def test_series_of_other_periods_or_other_inputs_are_never_compared():
    a = _report("A", OLD)
    cases = {
        "periods": _report("B", NEW, dir_=0.5),
        "input": _report("B", OLD, dir_=0.5, digest="other"),
        # an older store without digests: judged by its ingested counts
        "counts": _report("B", OLD, dir_=0.5, digest=None, n_cases=41),
    }
    for what, b in cases.items():
        why = different_data(a, b)
        assert why is not None, what
        assert comparison([a, b]) == [], what
        (line,) = not_compared([a, b])
        assert line.startswith("Not compared: series A and series B are of different data: "), what
        assert why in line
        page = render_report([a, b])
        decided = _text(page, "decision")
        assert "Lower risk" not in decided and "More utility" not in decided, what
        assert line in decided, what
        assert "their rows stand side by side but do not rank them" in _text(page, "summary")
        assert "never joined across series" in _text(page, "figures")
    assert "they publish different periods (A 2004Q1, 2004Q2, B 2022Q3, 2022Q4)" in \
        different_data(a, cases["periods"])
    assert "2004Q1" in different_data(a, cases["input"])


def test_same_counts_without_digests_count_as_the_same_data():
    a, b = _report("A", OLD, digest=None), _report("B", OLD, digest=None, dir_=0.5)
    assert different_data(a, b) is None and comparison([a, b])


def test_digests_of_different_versions_are_judged_by_counts():
    # a store of csv-v1 digests and one of columns-v2 digests of the same input hash other
    # bytes: their digests differ whatever the data, so only the counts can tell
    v2 = {p: "columns-v2" for p in OLD}
    a = _report("A", OLD)
    b = replace(_report("B", OLD, digest="other", dir_=0.5), input_versions=v2)
    assert different_data(a, b) is None and comparison([a, b])
    fewer = replace(_report("C", OLD, digest="other", n_cases=41), input_versions=v2)
    assert "other report and case counts" in different_data(a, fewer)
    # of one version, the digests decide even where the counts agree
    assert "another input digest" in different_data(replace(a, input_versions=v2), b)


def test_of_three_series_only_the_two_of_one_input_are_compared():
    a, b, c = _report("A", OLD), _report("B", OLD, dir_=0.5), _report("C", NEW)
    assert data_groups([a, c, b]) == [[a, b], [c]]
    lines = comparison([a, c, b])
    assert len(lines) == 2 and all(line.startswith("Of one input, A, B: ") for line in lines)
    assert lines[0].startswith("Of one input, A, B: Lower risk: A (max DIR 0.00")
    assert not any("C (" in line for line in lines)
    assert not_compared([a, c, b]) == [
        "Not compared: series A, B (of one input) and series C are of different data: they "
        "publish different periods (A 2004Q1, 2004Q2, C 2022Q3, 2022Q4). Neither is called "
        "safer or more useful than the other; only series of the same input are compared."]


def _finite_periods(line, periods: list[str]) -> set[str]:
    xs = np.asarray(line.get_xdata(), float)
    ys = np.asarray(line.get_ydata(), float)
    return {periods[round(x)] for x, y in zip(xs, ys) if not math.isnan(y)}


def _joined_lines(fig, reports: list[SeriesReport]) -> list[str]:
    """The drawn lines (with a line style, on the data's axes) whose points fall in the
    periods of more than one data group: a line joining two series' quarters."""
    groups = [{p for r in group for p in r.periods} for group in data_groups(reports)]
    periods = sorted({p for r in reports for p in r.periods})
    joined = []
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_linestyle() in ("None", "none", "") or line.get_transform() != ax.transData:
                continue  # markers only, or the threshold across the whole axes
            points = _finite_periods(line, periods)
            if points and not any(points <= g for g in groups):
                joined.append(line.get_label())
    return joined


def test_no_figure_line_joins_two_series_of_different_data():
    a, b = _report("A", OLD), _report("B", NEW)
    for figure in (plots.volume_figure, plots.nil_figure, plots.disclosure_figure,
                   plots.signals_figure):
        fig = figure([a, b])
        assert _joined_lines(fig, [a, b]) == [], figure.__name__
    # each input has its own ingested line and its own original PRR line, named by series
    labels = [line.get_label() for line in plots.volume_figure([a, b]).axes[0].get_lines()]
    assert "ingested: A" in labels and "ingested: B" in labels
    labels = [line.get_label() for line in plots.signals_figure([a, b]).axes[0].get_lines()]
    assert "original data of A" in labels and "original data of B" in labels
    # series of one input share one ingested line and one original line
    same = [_report("A", OLD), _report("B", OLD)]
    labels = [line.get_label() for line in plots.volume_figure(same).axes[0].get_lines()]
    assert labels.count("ingested (cases in the store)") == 1
    labels = [line.get_label() for line in plots.signals_figure(same).axes[0].get_lines()]
    assert labels.count("original data") == 1


def test_a_recall_says_what_it_was_computed_against():
    line = _screening_line(_report("A", OLD).evaluation["screening"])
    assert line.startswith("every drug–reaction pair of the release against the original data")
    assert "4 MGPS signal(s) in the original each case once" in line
    assert "recall / precision: each case once 1.00 / 1.00" in line
    # no original signal: nothing to keep, so no recall number at all
    empty = _screening_line(_report("A", OLD, original_signals=0, recall=None)
                            .evaluation["screening"])
    assert "no recall (the original has no signal to keep)" in empty
    assert "recall /" not in empty and "1.00" not in empty
    assert "no signal was compared" in _screening_line(None)


def test_without_rules_the_page_says_the_screening_compared_every_pair():
    a = _report("A", OLD)
    bare = SeriesReport(**{**a.__dict__, "rules": (),
                           "evaluation": {**a.evaluation, "releases": [
                               {**r, "signals": []} for r in a.releases]}})
    page = render_report([bare])
    figures = " ".join(unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert "so no signal was compared" not in figures
    assert ("No signal rules were given ( --rules FILE ), so no rule's PRR is drawn here. The "
            "screening compared every drug–reaction pair of each release against its original "
            "data instead (A)") in figures
    # the card beside it says what its recall is against
    assert "every drug–reaction pair of the release against the original data" in figures
