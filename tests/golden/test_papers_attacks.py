"""The papers' own attack scenarios, replayed on their published tables.

001 (Wang & Lin 2021), the three quarters before "Possible Scenarios": Scenario I (B-attack),
Scenario II (F-attack), Scenario III (L-attack). 002 (Huang et al. 2021), Table 2: Example 1
(MD-attack) and Example 2 (SS-attack). The papers write Male/Female/ANY; the release format
writes M/F/* (the sex hierarchy).
"""

from __future__ import annotations

import pandas as pd
import pytest

from medanon.attacks import attack_target
from medanon.errors import ValidationError
from medanon.hierarchies import sex_tree
from medanon.published.cells import QidInfo
from medanon.published.series import PublishedSeries

QIDS = (QidInfo("sex", "categorical", sex_tree()), QidInfo("age", "numeric"))


def _release(period: str, rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame([{"period": period, "case_id": str(c), "group": str(g), "sex": s,
                          "age": a, "adr": d} for c, s, a, d, g in rows])


def series(tables: dict[str, list[tuple]]) -> PublishedSeries:
    releases = {p: _release(p, rows) for p, rows in tables.items()}
    return PublishedSeries(releases, {p: {} for p in releases}, QIDS, ("adr",), "test series")


# 001, the three quarters (case, sex, age, disease, group)
JMIR = series({
    "2020Q1": [(1, "M", "[35-40]", "Flu", 1), (2, "M", "[35-40]", "Flu", 1),
               (3, "M", "[35-40]", "Fever", 1), (4, "F", "[30-35]", "HIV", 2),
               (5, "F", "[30-35]", "Flu", 2), (6, "F", "[30-35]", "Diabetes", 2)],
    "2020Q2": [(1, "*", "[30-40]", "Flu", 1), (4, "*", "[30-40]", "HIV", 1),
               (7, "*", "[30-40]", "Diabetes", 1), (8, "M", "[30-35]", "Fever", 2),
               (9, "M", "[30-35]", "Flu", 2), (10, "M", "[30-35]", "Diabetes", 2),
               (11, "M", "[30-35]", "HIV", 2), (12, "M", "[30-35]", "Flu", 2)],
    "2020Q3": [(13, "F", "[30-35]", "Flu", 1), (14, "F", "[30-35]", "Diabetes", 1),
               (15, "F", "[30-35]", "Fever", 1), (16, "F", "[30-35]", "Flu", 1),
               (17, "F", "[30-35]", "Fever", 1), (7, "M", "[30-35]", "Diabetes", 2),
               (8, "M", "[30-35]", "Fever", 2), (18, "M", "[30-35]", "HIV", 2)],
})


def test_001_scenario_1_b_attack_excludes_case_1():
    # Alice {Female, 32} is in quarter 2: candidates {1, 4, 7}; case 1 was Male in quarter 1.
    out = attack_target(JMIR.restricted_to(["2020Q1", "2020Q2"]), "2020Q2", "sex=F,age=32")
    assert out.candidates == ("1", "4", "7")
    assert out.excluded["B"] == ("1",)
    assert out.excluded["F"] == () and out.excluded["L"] == ()
    assert out.remaining == ("4", "7")  # "changing (quarter 2) to 2-anonymous"


def test_001_scenario_2_f_attack_then_excludes_case_7():
    # With quarter 3 published, case 7 shows up as Male: Alice is case 4 and has HIV.
    out = attack_target(JMIR, "2020Q2", "sex=F,age=32")
    assert out.excluded["B"] == ("1",)
    assert out.excluded["F"] == ("7",)
    assert out.remaining == ("4",)
    assert out.reidentified
    assert out.confidence == {"HIV": 1.0}


def test_001_scenario_3_l_attack_excludes_7_and_8():
    # John {Male, 33} first appears in quarter 3: candidates {7, 8, 18}; 7 and 8 are old.
    out = attack_target(JMIR, "2020Q3", "sex=M,age=33", first_appearance=True)
    assert out.candidates == ("7", "8", "18")
    assert out.excluded["L"] == ("7", "8")
    assert out.remaining == ("18",)
    # Without the first-appearance knowledge the old cases stay: their quarter-2 values
    # (Male or ANY, ages [30-35] / [30-40]) cover John, so B excludes nothing.
    plain = attack_target(JMIR, "2020Q3", "sex=M,age=33")
    assert plain.excluded["B"] == () and plain.remaining == ("7", "8", "18")


# 002, Table 2 (case, sex, age, ADRs, group); "0" is the paper's own ADR label for case 19.
PLOS = series({
    "2020Q1": [(1, "M", "[46-50]", "c|b", 1), (7, "M", "[46-50]", "a", 1),
               (3, "M", "[46-50]", "d", 1), (5, "M", "[46-50]", "e|g", 1),
               (2, "F", "[21-25]", "c|a", 2), (4, "F", "[21-25]", "b|d", 2),
               (6, "F", "[21-25]", "y", 2)],
    "2020Q2": [(1, "M", "[48-53]", "c|b", 1), (11, "M", "[48-53]", "a", 1),
               (12, "M", "[48-53]", "y", 1), (14, "M", "[48-53]", "h", 1),
               (13, "F", "[39-40]", "h|o", 2), (15, "F", "[39-40]", "x", 2),
               (18, "F", "[39-40]", "q", 2), (16, "*", "[46-48]", "q|d|e|p|x", 3),
               (17, "*", "[46-48]", "y|b|c|f|g|i", 3), (21, "*", "[46-48]", "j|z|v|u|k|n", 3),
               (3, "*", "[40-46]", "d", 4), (20, "*", "[40-46]", "x|i", 4),
               (19, "*", "[40-46]", "0", 4), (22, "*", "[40-46]", "q|l", 4)],
    "2020Q3": [(13, "F", "[39-45]", "h|k", 1), (26, "F", "[39-45]", "x|u", 1),
               (28, "F", "[39-45]", "d|i", 1), (23, "F", "[39-45]", "Z", 1),
               (15, "*", "[38-40]", "x", 2), (27, "*", "[38-40]", "a|c", 2),
               (24, "*", "[38-40]", "d", 2), (25, "*", "[38-40]", "e|q", 2)],
})


def test_002_example_1_md_attack_leaves_t18():
    # Alice (F, 39) is in Table 2(B) and stops her medicine in quarter 3: 13 and 15 reappear.
    out = attack_target(PLOS, "2020Q2", "sex=F,age=39", discontinued=True)
    assert out.candidates == ("13", "15", "18")
    assert out.excluded["MD"] == ("13", "15")
    assert out.excluded["B"] == () and out.excluded["F"] == ()
    assert out.remaining == ("18",)
    assert out.confidence == {"q": 1.0}


def test_md_attack_needs_the_next_release():
    with pytest.raises(ValidationError, match="next period"):
        attack_target(PLOS, "2020Q3", "sex=F,age=40", discontinued=True)


def test_target_errors_name_the_problem():
    with pytest.raises(ValidationError, match="'weight'.*not a QID"):
        attack_target(PLOS, "2020Q2", "weight=3")
    with pytest.raises(ValidationError, match="not a node"):
        attack_target(PLOS, "2020Q2", "sex=X")
    with pytest.raises(ValidationError, match="holds no release of 2019Q4"):
        attack_target(PLOS, "2019Q4", "sex=F")


def test_002_example_2_ss_group_in_table_2b():
    # ADR counts in Table 2(B): 2,1,1,1,2,1,1,5,6,6,1,2,1,2 -> mean 2.2857, population SD
    # 1.8295, mean + SD = 4.115 -> an ss-record has at least 5 ADRs: cases 16, 17 and 21.
    from medanon.attacks.ss import ss_thresholds
    from medanon.attacks.worst_case import attack_series

    assert ss_thresholds(PLOS.releases["2020Q2"], ("adr",), "mean+sd") == {"adr": 5}
    out = attack_series(PLOS, periods=["2020Q2"], alpha=0.25).release("2020Q2")
    flagged = {g.group: g.ss_share for g in out.groups if g.ssg}
    assert flagged == {"3": 1.0}  # Clare's group {16, 17, 21}: every record is an ss-record
    assert out.ssgr == pytest.approx(1 / 4)
    # Clare (M, 47) links to exactly that group.
    assert attack_target(PLOS, "2020Q2", "sex=M,age=47").candidates == ("16", "17", "21")


def test_worst_case_after_bfl_on_001_quarter_2():
    # Quarter 2 of 001 is 3-anonymous, but in the worst case (a new target who stops before
    # quarter 3) group 1 loses everyone: 1 and 4 are old (B/L), 7 reappears in quarter 3 as
    # Male [30-35], which does not cover ANY [30-40] (F), and is there at all (MD).
    from medanon.attacks.worst_case import attack_series
    from medanon.models.theta import ThetaTable

    out = attack_series(JMIR, periods=["2020Q2"], k=3, theta=ThetaTable(default=0.5),
                        md=True).release("2020Q2")
    by_group = {g.group: g for g in out.groups}
    assert by_group["1"].excluded == {"B/L": 2, "F": 1, "MD": 1}
    assert by_group["1"].remaining == 0 and by_group["1"].dig and by_group["1"].dsg
    # Group 2 (8-12, all new) loses 8, which reappears in quarter 3 (MD); Flu 2/4 <= 0.5.
    assert by_group["2"].excluded == {"B/L": 0, "F": 0, "MD": 1}
    assert by_group["2"].remaining == 4 and not by_group["2"].dig and not by_group["2"].dsg
    assert by_group["2"].top_term == "Flu" and by_group["2"].top_confidence == 0.5
    assert out.dir == 0.5 and out.dsr == 0.5 and out.reidentified == 0
    # 001's own protocol (no MD): group 2 keeps all 5.
    bfl = attack_series(JMIR, periods=["2020Q2"], k=3).release("2020Q2")
    assert {g.group: g.remaining for g in bfl.groups} == {"1": 0, "2": 5} and not bfl.md_applied
    # Without quarter 3 only the B/L-attack applies; 7 is the one record left in group 1.
    early = attack_series(JMIR.restricted_to(["2020Q1", "2020Q2"]), k=3).release("2020Q2")
    assert {g.group: g.remaining for g in early.groups} == {"1": 1, "2": 5}
    assert early.reidentified == 1 and not early.md_applied and early.dsr is None
