"""The report's figures, drawn from hand-made report data: infinite and undefined PRRs are never
drawn as 0, empty releases are gaps, perturbed values are not called exact, and the metadata
the page embeds (axis labels, text boxes) describes the drawn figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from medanon.metrics.signals import SignalRule
from medanon.report import plots
from medanon.report.collect import QidProfile, SeriesReport, rule_tally

PERIODS = ["2020Q1", "2020Q2", "2020Q3", "2020Q4"]
RULE = {"name": "R", "drug": "LEVAQUIN", "reaction": "Tendon rupture", "condition": None}


def _side(prr: object, a: int, signal: bool) -> dict:
    return {"count": a, "a": a, "b": 1, "c": 0, "d": 50, "missing": 0, "undecided": 0,
            "prr": prr, "prr_corrected": None, "ror": prr, "ror_corrected": None,
            "chi_square": 10.0, "signal": signal}


def _report(name: str = "S", cases: tuple[int, ...] = (40, 40, 40, 40),
            perturbed: bool = False) -> SeriesReport:
    # per period, (PRR, a, signal) of the original and of the release: finite, ∞ (c = 0),
    # undefined (c + d = 0), and a release that falls below a = 3
    sides = [((5.0, 6, True), (4.0, 6, True)), (("inf", 8, True), ("inf", 8, True)),
             ((None, 5, False), (None, 5, False)), ((3.0, 4, True), (0.0, 2, False))]
    releases = []
    for period, n, (orig, rel) in zip(PERIODS, cases, sides):
        releases.append({
            "period": period, "method": "ppms++", "cases": n, "groups": n // 5,
            "nil": 0.2 if n else 0.0, "nil_star": 0.1 if n else 0.0, "dir": 0.0, "dsr": 0.0,
            "ssgr": None, "attacks": "B/F/L", "rr": 0.01, "ar_rev": 0.02, "reidentified": 0,
            "signals": [{"rule": RULE, "original": _side(*orig), "release": _side(*rel)}]})
    profile = [QidProfile("weight", "numeric", exact=0.3, suppressed=0.1, mean_width=0.2,
                          perturbed=perturbed)]
    return SeriesReport(name=name, store="s.duckdb", schema="faers",
                        ingested=[{"period": p, "n_cases": n} for p, n in zip(PERIODS, cases)],
                        evaluation={"releases": releases}, manifests={p: {} for p in PERIODS},
                        profiles={p: profile for p in PERIODS}, ledger=None,
                        rules=(SignalRule("LEVAQUIN", "Tendon rupture"),))


def _plotted(ax) -> dict[int, list[float]]:
    """Period index -> the PRR values drawn there (the threshold line left out)."""
    out: dict[int, list[float]] = {}
    for line in ax.get_lines():
        if "threshold" in line.get_label():
            continue
        for x, y in zip(np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)):
            if not math.isnan(y):
                out.setdefault(round(x), []).append(float(y))
    return out


def test_the_prr_figure_never_draws_an_infinite_or_rare_prr_as_zero():
    fig = plots.signals_figure([_report("A"), _report("B")])
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    bottom, top = ax.get_ylim()
    drawn = _plotted(ax)
    assert all(y > 0 for ys in drawn.values() for y in ys)      # nothing at 0 (or below)
    assert sorted(drawn[0]) == [4.0, 4.0, 5.0]     # finite values as they are (two releases)
    # ∞ in the top band, above every finite value: original and both releases
    assert len(drawn[1]) == 3 and all(top / plots._BAND <= y <= top for y in drawn[1])
    assert max(drawn[0] + [3.0]) < top / plots._BAND
    assert 2 not in drawn                                       # undefined: not drawn at all
    # period 4: the original's 3.0, and each release's a < 3 in the bottom band
    assert 3.0 in drawn[3]
    rare = [y for y in drawn[3] if y != 3.0]
    assert len(rare) == 2 and all(bottom <= y <= bottom * plots._BAND for y in rare)
    meta = plots.figure_meta(fig)
    texts = [t[1] for t in meta["texts"]]
    assert "∞" in texts and "a<3" in texts
    assert any(t.startswith("∞ (grey band at the top)") for t in texts)
    assert all(a["xlabel"] and a["ylabel"] for a in meta["axes"])
    assert plots.text_overlaps(meta["texts"]) == []


def test_figure_meta_finds_overprinted_texts():
    """The overlap check can fail: two titles drawn on top of each other are found."""
    fig = plots.new_figure(3)
    ax = fig.subplots()
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
    ax.text(0.52, 0.5, "second label", transform=ax.transAxes)
    meta = plots.figure_meta(fig)
    assert ("first label", "second label") in plots.text_overlaps(meta["texts"])
    png = plots.figure_png(fig)
    assert png.startswith(b"\x89PNG")
    # the boxes are in the PNG's own pixels
    width = int.from_bytes(png[16:20], "big")
    height = int.from_bytes(png[20:24], "big")
    assert (width, height) == (meta["width"], meta["height"])


def test_period_labels_are_thinned_until_they_fit():
    periods = [f"{y}Q{q}" for y in range(2004, 2012) for q in range(1, 5)]  # 32 quarters
    fig = plots.new_figure(3)
    axes = fig.subplots(1, 3)
    for ax in axes:
        ax.plot(range(len(periods)), range(len(periods)))
        plots._period_axis(ax, periods)
        ax.set_ylabel("y")
    meta = plots.figure_meta(fig)
    ticks = [t for t in meta["texts"] if t[0] == "xtick"]
    assert 3 <= len(ticks) < 3 * len(periods)
    assert plots.text_overlaps(meta["texts"]) == []


def test_an_empty_release_is_a_gap_not_a_zero():
    fig = plots.nil_figure([_report(cases=(40, 0, 40, 40))])
    ys = np.asarray(fig.axes[0].get_lines()[0].get_ydata(), float)
    assert math.isnan(ys[1]) and ys[0] == pytest.approx(0.2)
    # the volume figure does show the 0 cases: that count is real
    fig = plots.volume_figure([_report(cases=(40, 0, 40, 40))])
    assert np.asarray(fig.axes[0].get_lines()[0].get_ydata(), float)[1] == 0


def test_perturbed_values_are_labelled_perturbed_not_exact():
    fig = plots.generalization_figure(_report(perturbed=True))
    labels = [t[1] for t in plots.figure_meta(fig)["texts"] if t[0] == "legend"]
    assert "perturbed (DP noise, not exact)" in labels
    plain = [t[1] for t in plots.figure_meta(plots.generalization_figure(_report()))["texts"]
             if t[0] == "legend"]
    assert "perturbed (DP noise, not exact)" not in plain and "exact (original value)" in plain
    profile = QidProfile("weight", "numeric", exact=0.3, suppressed=0.1, perturbed=True)
    assert profile.specific_label == "perturbed"


def test_the_cases_plot_keeps_its_points_off_the_frame_and_shows_the_ingested_line():
    # released = ingested in every period (the usual case): the points sat on the top frame
    # and the ingested line hid under the released one (issue 33)
    fig = plots.volume_figure([_report(cases=(600, 597, 600, 598))])
    left = fig.axes[0]
    bottom, top = left.get_ylim()
    drawn = [y for line in left.get_lines() for y in np.asarray(line.get_ydata(), float)]
    assert bottom == 0 and max(drawn) < 0.95 * top
    ingested = next(line for line in left.get_lines() if line.get_label().startswith("ingested"))
    released = next(line for line in left.get_lines() if "released" in line.get_label())
    # drawn on top, in its own marker, so that the legend entry and the line are visible
    assert ingested.get_zorder() > released.get_zorder()
    assert ingested.get_marker() != released.get_marker()
    assert ingested.get_markerfacecolor() == "none"


def test_the_field_plot_has_a_missing_category():
    report = _report()
    profile = [QidProfile("weight", "numeric", exact=0.3, suppressed=0.1, mean_width=0.2,
                          missing=0.25)]
    report = SeriesReport(**{**report.__dict__, "profiles": {p: profile for p in PERIODS}})
    fig = plots.generalization_figure(report)
    labels = [t[1] for t in plots.figure_meta(fig)["texts"] if t[0] == "legend"]
    assert "missing (published empty)" in labels
    # the bars of a period add up to 1: generalized no longer absorbs the missing share
    heights = {}
    for bar in fig.axes[0].patches:
        x = round(bar.get_x() + bar.get_width() / 2)
        heights[x] = heights.get(x, 0.0) + bar.get_height()
    assert all(h == pytest.approx(1.0) for h in heights.values())
    tops = [bar.get_y() + bar.get_height() for bar in fig.axes[0].patches
            if bar.get_facecolor()[:3] == pytest.approx((0xBB / 255,) * 3)]
    assert tops and all(t == pytest.approx(1.0) for t in tops)
    assert "missing (published empty)" not in [
        t[1] for t in plots.figure_meta(plots.generalization_figure(_report()))["texts"]]


def test_rule_tally_counts_kept_lost_and_infinite():
    [row] = rule_tally(_report())
    # originals signal in periods 1, 2 (∞) and 4 (PRR 3 with a = 4); the release loses period 4
    assert row == {"rule": "LEVAQUIN -> Tendon rupture", "original": 3, "kept": 2, "lost": 1,
                   "spurious": 0, "infinite": 1}


# ------------------------------------------------------------------- verify against the attacks
def _manifest(model: str | None, *, k: int = 5, lifespan: int | None = None) -> dict:
    return {"method": {"name": "m", "privacy_model": model,
                       "parameters": {"k": k, "lifespan": lifespan}},
            "details": {"theta_table": {"default": 0.6, "overrides": {"Death": 1.0}}}}


def _card(model: str | None, dir_: float, verdict: str = "passed", *, lifespan: int | None = None,
          attacker: str = "hard-exclusion", dir_hard: float | None = None):
    from medanon.models.base import ReleaseVerdict, SeriesVerdict
    from medanon.report.collect import series_card

    periods = ["2020Q1", "2020Q2"]
    manifests = {p: _manifest(model, lifespan=lifespan) for p in periods}
    releases = [{"period": p, "cases": 40, "dir": dir_, "dsr": 0.0, "attacks": "B/F/L",
                 "attacker": attacker, "dir_hard": dir_ if dir_hard is None else dir_hard}
                for p in periods]
    verdicts = SeriesVerdict(tuple(ReleaseVerdict(p, model, verdict) for p in periods))
    ingested = [{"period": p, "published": p in periods} for p in [*periods, "2020Q3"]]
    return series_card(manifests, releases, ingested, [], verdicts, None, None)


def test_the_card_reconciles_the_verdict_with_the_attacks_in_words():
    [(kind, text)] = _card("MS(k, theta*)-bounding", 0.86).findings
    assert kind == "warn" and "DIR 0.86" in text
    assert "the model does not cover linkage across releases" in text
    [(kind, text)] = _card("PPMS(k, theta*)-bounding", 0.3, lifespan=1).findings
    assert kind == "warn" and "at most 1 period(s) apart" in text and "never expire" in text
    [(kind, text)] = _card("PPMS(k, theta*)-bounding", 0.0).findings
    assert kind == "ok" and "agree" in text
    [(kind, text)] = _card("PPMS(k, theta*)-bounding", 0.2, "violated").findings
    assert kind == "bad" and "do not meet their own model" in text
    [(kind, text)] = _card(None, 0.9, "no-model").findings
    assert kind == "bad" and "nothing vouches" in text
    card = _card("MS(k, theta*)-bounding", 0.0)
    assert card.held_back == ("2020Q3",) and card.published == ("2020Q1", "2020Q2")
    [model] = card.models
    # k, θ and the texts come from the model object the manifests declare
    from medanon.models.base import model_from_manifest
    declared = model_from_manifest(_manifest("MS(k, theta*)-bounding"), "2020Q2")
    assert (model.k, model.scope, model.theta_defaults) == (5, "release", (0.6,))
    assert model.theta_overrides == {"Death": {1.0: ("2020Q1", "2020Q2")}}
    assert model.does_not_guarantee == declared.does_not_guarantee
    assert model.guarantee == declared.guarantee
