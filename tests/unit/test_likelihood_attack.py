"""Perturbed QIDs weigh, never exclude: hard exclusions and the likelihood-weighted attacker on
small hand-built PPMS-DP series (sex generalized, weight perturbed on the domain [0, 300])."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medanon.attacks import attack_target
from medanon.attacks.likelihood import HARD, LIKELIHOOD, LikelihoodAttacker, hard_series
from medanon.attacks.worst_case import attack_series
from medanon.errors import InputFormatError
from medanon.hierarchies import sex_tree
from medanon.mechanisms.likelihood import laplace_log_likelihood
from medanon.metrics.disclosure import linkage_risk
from medanon.models.names import PPMS_DP_MODEL, PPMS_MODEL
from medanon.models.ppms import check_series
from medanon.models.theta import ThetaTable
from medanon.published.cells import QidInfo
from medanon.published.series import PublishedSeries

QIDS = (QidInfo("sex", "categorical", sex_tree()), QidInfo("weight", "numeric"))
DOMAIN = (0.0, 300.0)


def dp_manifest(eps, *, k: int = 2, theta: float = 1.0, variant: str = "strict",
                exact: dict | None = None) -> dict:
    details = {"theta_table": {"default": theta, "overrides": {}}, "perturbed_qids": ["weight"],
               "domains": {"weight": list(DOMAIN)}}
    if exact:
        details["exact_groups"] = exact
    return {"method": {"name": "ppms-dp-num", "privacy_model": PPMS_DP_MODEL,
                       "parameters": {"k": k, "epsilon": str(eps), "variant": variant}},
            "details": details,
            "privacy_spent": {"epsilon_per_case": str(eps),
                              "mechanisms": [{"target": "weight", "mechanism": "laplace",
                                              "epsilon": eps}]}}


def release(period: str, rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame([{"period": period, "case_id": c, "group": g, "sex": s, "weight": w,
                          "adr": a} for c, g, s, w, a in rows])


def series(tables: dict, manifests: dict) -> PublishedSeries:
    releases = {p: release(p, rows) for p, rows in tables.items()}
    return PublishedSeries(releases, manifests, QIDS, ("adr",), "test series")


# Case 1 (true weight 70) is followed up in 2020Q2; its two noisy weights are far apart. In
# 2020Q2 each group keeps three new cases, each with its own term.
TABLES = {
    "2020Q1": [("1", "1", "*", "71.30", "Flu"), ("2", "1", "*", "180.00", "HIV"),
               ("3", "1", "*", "0.00", "Flu")],
    "2020Q2": [("1", "1", "*", "250.55", "Flu"), ("4", "1", "*", "140.20", "Fever"),
               ("5", "1", "*", "300.00", "HIV"), ("10", "1", "*", "95.00", "Cough"),
               ("6", "2", "M", "65.00", "Flu"), ("7", "2", "M", "20.10", "Fever"),
               ("8", "2", "M", "110.00", "Rash")],
}


def dp_series(eps=1, **kwargs) -> PublishedSeries:
    return series(TABLES, {p: dp_manifest(eps, **kwargs) for p in TABLES})


def test_a_noisy_value_never_excludes_the_targets_own_record():
    # The old reading excluded case 1 twice over: 250.55 does not "cover" 70 (not even a
    # candidate), and its 2020Q1 value 71.30 does not cover 70 either (B-attack).
    out = attack_target(dp_series(), "2020Q2", "sex=F,weight=70")
    assert out.attacker == LIKELIHOOD
    assert "1" in out.candidates and "1" in out.remaining
    assert all("1" not in cases for cases in out.excluded.values())
    # the generalized QID still excludes for sure: group 2 is published as M
    assert set(out.candidates) == {"1", "4", "5", "10"}


def test_posterior_is_the_product_of_likelihood_ratios_over_linked_releases():
    eps = 1
    out = attack_target(dp_series(eps), "2020Q2", "sex=F,weight=70")

    def ratio(y):  # (L1): P(y | 70) / m(y), m uniform over the domain
        own = laplace_log_likelihood(y, 70.0, epsilon=eps, lo=0, hi=300, decimals=2)
        prior = laplace_log_likelihood(y, 0.0, 300.0, epsilon=eps, lo=0, hi=300, decimals=2)
        return float(own - prior)

    log_w = {"1": ratio(250.55) + ratio(71.30), "4": ratio(140.20), "5": ratio(300.0),
             "10": ratio(95.0)}
    top = max(log_w.values())
    total = sum(np.exp(v - top) for v in log_w.values())
    expected = {c: float(np.exp(v - top) / total) for c, v in log_w.items()}
    got = {c: p for c, _, p in out.posterior}
    assert got == pytest.approx(expected, rel=1e-9)
    assert {c: w for c, w, _ in out.posterior} == pytest.approx(log_w, rel=1e-9)
    assert [c for c, _, _ in out.posterior] == sorted(got, key=lambda c: -got[c])
    # term confidences are posterior shares
    assert out.confidence["Flu"] == pytest.approx(round(expected["1"], 6), abs=1e-6)
    assert sum(p for _, _, p in out.posterior) == pytest.approx(1.0)
    assert out.k == 2 and out.dangerous == (max(expected.values()) > 0.5)


def test_an_impossible_value_is_the_one_perturbed_exclusion():
    tables = {"2020Q1": TABLES["2020Q1"] + [("9", "1", "*", "301.00", "Flu")]}
    out = attack_target(series(tables, {"2020Q1": dp_manifest(1)}), "2020Q1", "weight=70")
    assert out.excluded["impossible"] == ("9",)
    assert "9" not in {c for c, _, _ in out.posterior}


def test_hard_series_blanks_perturbed_cells_and_keeps_declared_exact_groups():
    # "blanked" with "*" (any value): an empty cell would say the value is missing (issue 29)
    strict = hard_series(dp_series())
    assert (strict.releases["2020Q2"]["weight"] == "*").all()
    assert strict.releases["2020Q2"]["sex"].tolist() == ["*"] * 4 + ["M"] * 3
    paper = series(TABLES, {p: dp_manifest(1, variant="paper", exact={"weight": ["2"]})
                            for p in TABLES})
    blanked = hard_series(paper).releases["2020Q2"]
    assert blanked["weight"].tolist() == ["*", "*", "*", "*", "65.00", "20.10", "110.00"]
    # the paper variant's scale is not published: hard exclusions only, where the declared
    # exact values of group 2 exclude 7 and 8 for sure
    out = attack_target(paper, "2020Q2", "sex=M,weight=65")
    assert out.attacker == HARD and out.posterior == ()
    assert out.remaining == ("1", "4", "5", "10", "6")
    plain = series(TABLES, {p: {} for p in TABLES})
    assert hard_series(plain) is plain


def test_a_dp_manifest_without_its_mechanism_is_refused_naming_the_field():
    manifest = dp_manifest(1)
    manifest["privacy_spent"]["mechanisms"] = []
    with pytest.raises(InputFormatError, match="privacy_spent.mechanisms"):
        LikelihoodAttacker(series(TABLES, {p: manifest for p in TABLES}))


@pytest.mark.parametrize("eps, expected", [(1e-4, 0.0), (1000, 1.0)])
def test_worst_case_posterior_dir_grows_with_epsilon_from_the_hard_one(eps, expected):
    # 2020Q2: group 1 keeps 4, 5, 10 (1 is old), group 2 keeps 6, 7, 8; k = 2 holds for sure.
    out = attack_series(dp_series(eps), periods=["2020Q2"]).release("2020Q2")
    assert out.attacker == LIKELIHOOD and out.dir_hard == 0.0
    assert [g.remaining for g in out.groups] == [3, 3]
    # nearly uninformative noise: π ≈ 1/3 each, not above 1/k (the hard DIR);
    # ε = 1000: each target is its own record, π ≈ 1 > 1/2
    assert out.dir_posterior == expected and out.dir == out.dir_posterior
    assert all((g.max_posterior > 0.99) == (eps > 1) for g in out.groups)


def test_worst_case_posterior_dsr_reduces_to_the_papers_share_without_information():
    out = attack_series(dp_series(1e-6, theta=0.5)).release("2020Q2")
    hard = attack_series(series(TABLES, {p: {**dp_manifest(1, theta=0.5), "method": {
        "privacy_model": PPMS_MODEL, "parameters": {"k": 2}}} for p in TABLES})
                         ).release("2020Q2")
    assert out.dsr_posterior == hard.dsr == 0.0
    out = attack_series(dp_series(1000, theta=0.5)).release("2020Q2")
    assert out.dsr_posterior == 1.0  # π ≈ 1 on one record: its terms have share 1 > 0.5


def test_dsr_hard_is_the_gates_worst_case():
    # 001's three quarters (tests/golden): the papers' DSR drops every excludable record; the
    # gate lets the adversary keep the excludable records that hold the term.
    from tests.golden.test_papers_attacks import JMIR

    theta = ThetaTable(default=0.4)
    for period in JMIR.periods:
        worst = attack_series(JMIR, periods=[period], k=3, theta=theta).release(period)
        gate = check_series(JMIR.releases, qids=JMIR.qids, sensitive=JMIR.sensitive, k=3,
                            theta=theta, periods=[period]).period(period)
        assert worst.dir_hard == gate.dir and worst.dsr_hard == gate.dsr
        assert worst.dir == worst.dir_hard and worst.dsr <= worst.dsr_hard
        assert worst.attacker == HARD and worst.dir_posterior is None


def test_linkage_risk_uses_the_posterior_of_the_true_record():
    original = pd.DataFrame({"case_id": ["1", "4", "5", "10", "6", "7", "8"],
                             "sex": ["F", "F", "M", "M", "M", "M", "M"],
                             "weight": [70.0, 140.0, 299.0, 95.0, 65.0, 20.0, 110.0]})
    sharp = linkage_risk(dp_series(1000), "2020Q2", original)
    # every record is the most likely one for its own target, but case 1, whose 2020Q2 value
    # (250.55) and 2020Q1 value (71.30) lie far apart: at ε = 1000 case 4 is likelier for it
    assert sharp.attacker == LIKELIHOOD and sharp.reidentified == 6
    assert sharp.rr == pytest.approx(6 / 7, abs=1e-3)
    blurred = linkage_risk(dp_series(1e-4), "2020Q2", original)
    # without information the posterior is uniform over the hard candidates: RR = rr_hard
    assert blurred.rr == pytest.approx(blurred.rr_hard, rel=1e-3)
    assert blurred.reidentified == 0 and sharp.rr_hard == blurred.rr_hard
    # hard candidates: F targets see group 1 (sex "*"), M targets all 7 records; the new
    # targets (all but case 1) also drop the old record 1 (L-attack): 1/4 for case 1, 1/3 for
    # case 4, 1/6 for each of the five M cases
    assert sharp.rr_hard == pytest.approx((1 / 4 + 1 / 3 + 5 / 6) / 7)
    assert sharp.ar_rev >= sharp.rr - 1e-12


def test_target_syntax_allows_commas_inside_values():
    from medanon.attacks.target import parse_target
    from medanon.hierarchies import mesh_age_tree

    qids = (QidInfo("age", "categorical", mesh_age_tree()), QidInfo("weight", "numeric"))
    tgt = parse_target("age=Aged, 80 and over,weight=70", qids)
    assert tgt.values == {"age": "Aged, 80 and over", "weight": "70"}
