"""RR and AR_rev (000, ``algorithms.md`` §5.4-5.5) on hand-computed examples."""

from __future__ import annotations

import pandas as pd
import pytest

from medanon.attacks import BackgroundKnowledge, KnowledgeRule
from medanon.metrics.disclosure import linkage_risk
from medanon.published.series import PublishedSeries

from .test_papers_attacks import JMIR, QIDS, _release

# Original super records of 001's quarter 2 (ages chosen inside the published intervals).
ORIGINAL_Q2 = pd.DataFrame({
    "case_id": ["1", "4", "7", "8", "9", "10", "11", "12"],
    "sex": ["M", "F", "M", "M", "M", "M", "M", "M"],
    "age": [37.0, 32.0, 33.0, 31.0, 32.0, 33.0, 34.0, 35.0],
})


def test_rr_and_ar_rev_on_001_quarter_2():
    # Alice (case 4, F 32): candidates {1, 4, 7}; B removes 1 (Male in Q1), F removes 7 (Male in
    # Q3) -> G = {4}: Pr 1, Ar = 1 term / (1 record x 1 term) = 1.
    # Case 1 (M 37): only group 1 covers 37; B removes 4 (Female in Q1), F removes 7 ([30-35]
    # does not cover 37) -> G = {1}: Pr 1, Ar 1.
    # Cases 7-12 are new: L removes 1 and 4; G = {7, 8, ..., 12} (group 1 and 2 both cover
    # M 31-35) -> Pr 1/6; terms Diabetes, Fever, Flu, Diabetes, HIV, Flu: 6 occurrences over
    # 4 distinct terms -> Ar = 6 / (6 x 4) = 0.25.
    # RR = (1 + 1 + 6/6) / 8 = 0.375; AR_rev = (1 + 1 + 6 x 0.25) / 8 = 0.4375.
    risk = linkage_risk(JMIR, "2020Q2", ORIGINAL_Q2)
    assert risk.rr == pytest.approx(0.375)
    assert risk.ar_rev == pytest.approx(0.4375)
    assert risk.reidentified == 2 and risk.records == 8 and risk.attacks == "B/F/L"


def test_background_knowledge_raises_the_risk():
    # One group {*, [30-40]}: a (F 32, breast cancer), b (M 35, flu), c (M 38, prostate cancer).
    # Without knowledge every target has G of size 3: RR = 1/3. Knowing breast cancer -> F and
    # prostate cancer -> M, target a drops c, and targets b and c drop a: every G has size 2.
    rows = _release("2020Q1", [("a", "*", "[30-40]", "Breast cancer", 1),
                               ("b", "*", "[30-40]", "Flu", 1),
                               ("c", "*", "[30-40]", "Prostate cancer", 1)])
    series = PublishedSeries({"2020Q1": rows}, {"2020Q1": {}}, QIDS, ("adr",), "test")
    original = pd.DataFrame({"case_id": ["a", "b", "c"], "sex": ["F", "M", "M"],
                             "age": [32.0, 35.0, 38.0]})
    plain = linkage_risk(series, "2020Q1", original)
    knowledge = BackgroundKnowledge((KnowledgeRule("breast cancer", "sex", "F"),
                                     KnowledgeRule("Prostate cancer", "sex", "M")))
    informed = linkage_risk(series, "2020Q1", original, background=knowledge)
    assert plain.rr == pytest.approx(1 / 3)
    assert informed.rr == pytest.approx(1 / 2)
    # AR_rev: each G of 2 records with 2 distinct terms, one each -> 2 / (2 x 2) = 1/2;
    # without knowledge 3 / (3 x 3) = 1/3.
    assert plain.ar_rev == pytest.approx(1 / 3) and informed.ar_rev == pytest.approx(1 / 2)
    assert informed.attacks == "B/F/L+BK"


def test_perturbed_values_link_by_minimum_distance():
    # Per-record numbers (as a DP release publishes them): the target is linked to the record
    # nearest to its true value. a (30) is published as 31 and b (40) as 33: a is 1 from its
    # own record and 3 from b's; b is 7 from its own and 9 from a's -> both Pr 1.
    rows = _release("2020Q1", [("a", "M", "31", "x", 1), ("b", "M", "33", "y", 2)])
    series = PublishedSeries({"2020Q1": rows}, {"2020Q1": {}}, QIDS, ("adr",), "test")
    original = pd.DataFrame({"case_id": ["a", "b"], "sex": ["M", "M"], "age": [30.0, 40.0]})
    assert linkage_risk(series, "2020Q1", original).rr == pytest.approx(1.0)
    # Swap the published values: now each target is nearest to the other's record.
    swapped = _release("2020Q1", [("a", "M", "39", "x", 1), ("b", "M", "31", "y", 2)])
    series = PublishedSeries({"2020Q1": swapped}, {"2020Q1": {}}, QIDS, ("adr",), "test")
    assert linkage_risk(series, "2020Q1", original).rr == 0.0
