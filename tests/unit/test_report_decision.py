"""The report's first section, "What to publish and why" (issue 33): the decision per series
follows the card's verdicts and the attacks' numbers, never a verdict typed in, and the table of
contents links only to anchors the page holds."""

from __future__ import annotations

import re

from medanon.metrics.signals import SignalRule
from medanon.models.base import ReleaseVerdict, SeriesVerdict
from medanon.report.collect import (QidProfile, SeriesReport, comparison, decision,
                                    series_card)
from medanon.report.html import render_report

PERIODS = ["2020Q1", "2020Q2"]
MODEL = "PPMS(k, theta*)-bounding"


def _manifest(theta: dict) -> dict:
    return {"method": {"name": "ppms++", "privacy_model": MODEL,
                       "parameters": {"k": 5, "lifespan": None}},
            "details": {"theta_table": {"default": 0.6, "overrides": theta}},
            "counts": {"cases": 40}}


def _report(name: str = "S", *, verdict: str = "passed", dir_: float = 0.0,
            reidentified: int = 0, theta: dict | None = None, recall: float = 1.0,
            nil: float = 0.2) -> SeriesReport:
    theta = {"Death": 0.3} if theta is None else theta
    manifests = {p: _manifest(theta) for p in PERIODS}
    releases = [{"period": p, "method": "ppms++", "cases": 40, "groups": 8, "nil": nil,
                 "nil_star": nil / 2, "dir": dir_, "dsr": 0.0, "ssgr": None, "attacks": "B/F/L",
                 "attacker": "hard-exclusion", "dir_hard": dir_, "rr": 0.01, "ar_rev": 0.02,
                 "reidentified": reidentified if p == PERIODS[-1] else 0, "signals": []}
                for p in PERIODS]
    verdicts = SeriesVerdict(tuple(ReleaseVerdict(p, MODEL, verdict if p == PERIODS[-1]
                                                  else "passed") for p in PERIODS))
    ingested = [{"period": p, "n_cases": 40, "n_reports": 40, "published": True}
                for p in PERIODS]
    card = series_card(manifests, releases, ingested, [], verdicts, None, None)
    stats = {"recall": recall, "precision": 1.0, "spurious": 0, "scopes": 1}
    screening = {"scopes": [], "summary": {"dedup": {"mgps": stats},
                                           "stratum": {"mgps": {**stats, "scopes": 0}}}}
    profile = [QidProfile("age", "numeric", exact=0.5, suppressed=0.1, mean_width=0.2,
                          missing=0.1)]
    return SeriesReport(name=name, store=f"{name}.duckdb", schema="faers", ingested=ingested,
                        evaluation={"releases": releases, "screening": screening},
                        manifests=manifests, profiles={p: profile for p in PERIODS},
                        ledger=None, rules=(SignalRule("LEVAQUIN", "Tendon rupture"),),
                        card=card)


def test_a_clean_series_is_published_and_says_why():
    d = decision(_report())
    assert d.state == "publish" and d.blocking == () and d.care == ()
    assert d.line.startswith("Publish: every release passes its model and the attacks find "
                             "nothing more")
    assert any("2 of 2 verified now" in r for r in d.reasons)
    assert any("keeps 100% of the original's MGPS signals" in r for r in d.reasons)


def test_a_release_that_fails_verify_is_not_published_as_is():
    d = decision(_report(verdict="violated"))
    assert d.state == "hold"
    assert d.line.startswith("Do not publish as is: 2020Q2 fails verify")
    assert not any("every release passes" in r for r in d.reasons)


def test_attacks_that_re_identify_or_narrow_a_group_block_publication():
    d = decision(_report(reidentified=3))
    assert d.state == "hold" and "re-identify 3 case(s)" in d.line
    d = decision(_report(dir_=0.4))
    assert d.state == "hold" and "max DIR 0.40" in d.line


def test_terms_left_at_theta_one_and_lost_signals_ask_for_care():
    d = decision(_report(theta={"Death": 0.3, "Nausea": 1.0}))
    assert d.state == "care"
    assert d.line.startswith("Publish with care: 1 sensitive term(s) have no bound (θ = 1) in "
                             "some release, 1 in the latest (2020Q2)")
    d = decision(_report(recall=0.5))
    assert d.state == "care" and "keeps 50% of the original's MGPS signals" in d.line


def test_several_series_are_compared_on_risk_and_on_utility():
    safe = _report("Safe", nil=0.4)
    leaky = _report("Leaky", dir_=0.5, nil=0.1)
    risk, utility = comparison([leaky, safe])
    assert risk.startswith("Lower risk: Safe (max DIR 0.00")
    assert utility.startswith("More utility: Leaky (MGPS recall 1.00, mean NIL 0.100)")
    assert comparison([safe]) == []


def test_the_page_opens_with_contents_and_decisions_whose_links_resolve():
    page = render_report([_report("Clean"), _report("Broken", verdict="violated")])
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    links = re.findall(r'href="#([^"]+)"', page)
    assert links and [link for link in links if link not in ids] == []
    for anchor in ("decision", "summary", "glossary", "card-clean", "releases-clean",
                   "screening-broken", "manifests-broken"):
        assert f'href="#{anchor}"' in page, anchor
    # the contents come first, then the decisions, then the summary cards
    assert page.index('id="contents"') < page.index('id="decision"') < page.index(
        'id="summary"')
    states = dict(re.findall(r'data-series="([^"]+)" data-decision="([^"]+)"', page))
    assert states == {"Clean": "publish", "Broken": "hold"}


def test_the_terminal_lists_what_the_line_counts_as_more_below():
    from medanon.cli.commands import decision_lines

    d = decision(_report(verdict="violated", dir_=0.4, reidentified=2))
    assert d.state == "hold" and len(d.blocking) >= 2
    lines = decision_lines(d)
    assert lines[0] == d.line and f"{len(d.blocking) - 1} more below" in d.line
    # every reason the line counts is printed under it, in order
    assert lines[1:] == [f"    also: {reason}" for reason in d.blocking[1:]]
    care = decision(_report(theta={"Death": 0.3, "Nausea": 1.0}, recall=0.5))
    assert decision_lines(care) == [care.line, *(f"    also: {r}" for r in care.care[1:])]
    assert len(decision_lines(care)) == len(care.care)
