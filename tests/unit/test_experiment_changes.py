"""Issue 31: the periodic grids never change a paper's setting silently. Each result row says
what the release changed (θ raised, cases withheld, terms suppressed), DSR is measured against
the requested θ as well, NIL over all cases of the period, and the summary marks the changes."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from medanon.errors import ValidationError
from medanon.experiments.grids import Setting, grid
from medanon.experiments.outputs import LEGEND, summarize, write_tables
from medanon.experiments.periodic import (load_periodic_data, measure_period, nil_all_cases,
                                          release_period)
from medanon.hierarchies import Taxonomy
from medanon.metrics.information_loss import normalized_information_loss
from medanon.models.theta import ThetaTable, raised_thetas, requested_theta_table


@pytest.fixture(scope="module")
def first_quarter():
    """PPMS+ at 001's θ* = 0.2 on a small quarter of the legacy profile (a 40% top term): some
    terms are held by more than a fifth of the cases, so the grid's raise-theta raises them
    and the grouping withholds cases; measured on the first release (no earlier or later
    release: no B/F/L exclusion)."""
    data = load_periodic_data(None, periods=2, cases=150, seed=7, profile="legacy")
    setting = Setting.of("ppms+", k=5, theta=0.2)
    period = data.periods[0]
    state = release_period(data.dataset, None, setting, period, seed=1)
    row = measure_period(data.dataset, state, setting, period, 0, data.rules, md=False)
    return state["series"], period, row


def _dsr_by_hand(rows: pd.DataFrame, theta: ThetaTable) -> float:
    """DSR of a first release without linked releases: the share of groups where some term s is
    held by more than θ_s of the group's cases (001 Eq. 11 with nothing excluded)."""
    disclosing = 0
    for _, group in rows.groupby("group"):
        counts: dict[str, int] = {}
        for _, case in group.iterrows():
            terms = {t for c in ("indications", "reactions") for t in str(case[c]).split("|") if t}
            for t in terms:
                counts[t] = counts.get(t, 0) + 1
        disclosing += any(c / len(group) > theta.get(t) + 1e-12 for t, c in counts.items())
    return disclosing / rows["group"].nunique()


def test_a_raised_theta_is_recorded_with_the_dsr_against_both_tables(first_quarter):
    series, period, row = first_quarter
    raised = json.loads(row["theta_raised"])
    assert row["raised_terms"] == len(raised) > 0
    assert row["theta"] == 0.2  # the setting's θ, as requested
    for requested, effective in raised.values():
        assert requested == 0.2 and effective > requested
    assert row["theta_effective_max"] == max(e for _, e in raised.values())
    # the release's table is the raised one; the requested one has every term back at 0.2
    manifest = series.manifests[period]
    assert raised_thetas(manifest) == {t: tuple(v) for t, v in raised.items()}
    requested = requested_theta_table(manifest)
    assert all(requested.get(t) == 0.2 for t in raised)
    # DSR counted by hand on the published rows, against each table
    rows = series.releases[period]
    effective = ThetaTable.from_manifest(manifest["details"]["theta_table"])
    assert row["dsr"] == pytest.approx(_dsr_by_hand(rows, effective))
    assert row["dsr_requested"] == pytest.approx(_dsr_by_hand(rows, requested))
    assert row["dsr_requested"] > 0.0 and row["dsr"] == 0.0  # this quarter: as computed above


def test_a_setting_that_changes_nothing_has_equal_dsrs():
    manifest = {"details": {"theta_table": {"default": 0.4, "overrides": {}}}}
    assert raised_thetas(manifest) == {}
    assert requested_theta_table(manifest) == ThetaTable(0.4)


def test_nil_on_all_cases_counts_a_withheld_case_as_full_loss(first_quarter):
    series, period, row = first_quarter
    assert row["withheld_cases"] > 0
    assert row["cases"] + row["withheld_cases"] == row["cases_all"]
    expected = (row["nil_cases"] * row["cases"] + row["withheld_cases"]) / row["cases_all"]
    assert row["nil_all"] == pytest.approx(expected, abs=1e-6)
    assert row["withheld_share"] == row["withheld_cases"] / row["cases_all"]
    star = (row["nil_star_cases"] * row["cases"] + row["withheld_cases"]) / row["cases_all"]
    assert row["nil_star_all"] == pytest.approx(star, abs=1e-6)
    assert row["nil_star_all"] > row["nil_star_cases"]
    assert nil_all_cases(0.5, 3, 1) == pytest.approx((0.5 * 3 + 1.0) / 4)
    assert nil_all_cases(0.25, 4, 0) == 0.25


def test_nil_per_case_weighs_groups_by_their_size():
    # group 1: one case fully generalized (loss 1); group 2: three exact cases (loss 0)
    rows = pd.DataFrame({"group": ["1", "2", "2", "2"], "sex": ["*", "F", "F", "F"]})
    sex = Taxonomy({"*": None, "F": "*", "M": "*"}, name="sex")
    qids = [("sex", "categorical")]
    assert normalized_information_loss(rows, qids, {"sex": sex}) == pytest.approx(0.5)
    assert normalized_information_loss(rows, qids, {"sex": sex}, per="case") == pytest.approx(0.25)
    with pytest.raises(ValidationError, match="'per'"):
        normalized_information_loss(rows, qids, {"sex": sex}, per="row")


@pytest.mark.parametrize("quick", [True, False])
def test_grids_run_both_ha_and_both_ppms_dp_variants(quick):
    plos = grid("plos2021", quick=quick)
    has = {s.kwargs.get("on_unplaceable") for s in plos if s.method == "ha"}
    assert has == {"withhold", "suppress-terms"}
    assert len({s.label for s in plos}) == len(plos)
    dp = grid("ppms-dp", quick=quick)
    for method in ("ppms-dp-num", "ppms-dp-all"):
        assert {s.kwargs["variant"] for s in dp if s.method == method} == {"strict", "paper"}
    assert len({s.label for s in dp}) == len(dp)


def _row(method, **values):
    base = {"method": method, "k": 5, "theta": 0.2, "setting": f"{method} k=5 theta=0.2",
            "period": "2020Q1", "run": 0, "nil": 0.5, "nil_cases": 0.5, "nil_all": 0.5,
            "dir": 0.0, "dsr": 0.0, "dsr_requested": 0.0, "ssgr": float("nan"),
            "withheld_share": 0.0, "withheld_cases": 0, "suppressed_terms": 0, "raised_terms": 0,
            "theta_effective_max": float("nan"), "gate": "passed", "seconds": 0.1}
    return {**base, **values}


def test_the_summary_marks_raised_and_withheld_cells(tmp_path):
    frame = pd.DataFrame([
        _row("ppms+", raised_terms=3, theta_effective_max=0.47, withheld_cases=20,
             withheld_share=0.2, nil_all=0.6, dsr_requested=0.9),
        _row("ppms+", period="2020Q2", raised_terms=2, theta_effective_max=0.3),
        _row("ppms+", period="2020Q3"),  # nothing changed in this one
        _row("ppms++"),
    ])
    summary = write_tables(frame, "plos2021", tmp_path)
    changed = summary.set_index("method").loc["ppms+"]
    assert changed["theta_raised_tasks"] == 2 and changed["withheld_tasks"] == 1
    assert changed["raised_terms_min"] == 2 and changed["raised_terms_max"] == 3
    assert changed["theta_effective_max"] == 0.47 and changed["withheld_share_max"] == 0.2
    text = (tmp_path / "summary.md").read_text()
    lines = {line.split("|")[1].strip(): line for line in text.splitlines()
             if line.startswith("| ppms")}
    marked, plain = lines["ppms+ †‡"], lines["ppms++"]
    cells = [c.strip() for c in marked.split("|")]
    header = [c.strip() for c in text.splitlines()[0].split("|")]
    assert cells[header.index("dsr")].endswith("†")        # measured against the raised θ
    assert cells[header.index("nil")].endswith("‡")        # over the published cases only
    assert not cells[header.index("nil_all")].endswith(("†", "‡"))
    # the fewest terms counted over the tasks that raised any
    assert "θ raised in 2/3 tasks (2–3 terms, up to 0.47)" in cells[header.index("changes")]
    assert "cases withheld in 1/3 tasks (up to 20.0%)" in cells[header.index("changes")]
    assert "†" not in plain and "‡" not in plain and "as requested" in plain
    assert f"† {LEGEND['†']}." in text and f"‡ {LEGEND['‡']}." in text
    assert "§" not in text  # no setting suppressed terms: no legend line for it


def test_a_grid_without_changes_columns_is_summarized_as_before():
    frame = pd.DataFrame([{"method": "kanon", "k": 10, "setting": "kanon k=10", "run": 0,
                           "il": 0.3, "ncp": 0.1, "emd": 0.1, "rate": 0.1, "seconds": 1.0}])
    summary = summarize(frame, "ipa")
    assert "theta_raised_tasks" not in summary.columns and summary["tasks"].tolist() == [1]
