"""Privacy accounting: exact values, budgets, composition, the accountant and the ledger."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medanon.accounting import (Accountant, Budget, LedgerSummary, PrivacyLoss, case_totals,
                                cases_over_budget, compose, format_epsilon, parse_epsilon,
                                summarize_ledger, to_exact)
from medanon.errors import BudgetExceeded, MedanonError, ValidationError

FAST = settings(max_examples=200, deadline=None)
F = Fraction


def _loss(epsilon, mechanism="laplace", target="weight", delta=0):
    return PrivacyLoss(epsilon=epsilon, delta=delta, mechanism=mechanism, target=target)


# ------------------------------------------------------------------------------- to_exact
@pytest.mark.parametrize("value, expected", [
    (1, F(1)), (F(1, 3), F(1, 3)), (0.1, F(1, 10)), (1e-6, F(1, 10 ** 6)), ("0.1", F(1, 10)),
    ("1/3", F(1, 3)), ("1e-2", F(1, 100)), (" 2 ", F(2)), ("1.5e-6", F(3, 2 * 10 ** 6)),
    (np.float64(0.1), F(1, 10)), (np.float32(0.1), F(1, 10)), (np.int64(3), F(3)),
    (Decimal("0.30"), F(3, 10)),
])
def test_to_exact_reads_numbers_as_written(value, expected) -> None:
    result = to_exact(value, name="epsilon", owner="Budget")
    assert result == expected and type(result) is Fraction


@pytest.mark.parametrize("bad", [True, False, np.bool_(True), float("nan"), float("inf"),
                                 -float("inf"), -1, -0.1, "-1/3", "abc", "", "nan", "inf", "1/0",
                                 None, [0.1], "1e99999999", np.float64("nan")])
def test_to_exact_refuses_non_numbers_and_negatives(bad) -> None:
    with pytest.raises(ValidationError, match=r"The 'epsilon' parameter of Budget must be a "
                                              r"positive number"):
        to_exact(bad, name="epsilon", owner="Budget")


def test_to_exact_message_and_zero() -> None:
    with pytest.raises(ValidationError) as info:
        to_exact(-1, name="epsilon", owner="Budget")
    assert str(info.value) == "The 'epsilon' parameter of Budget must be a positive number; got -1."
    with pytest.raises(ValidationError, match="positive number; got 0"):
        to_exact(0, name="epsilon", owner="Budget")
    assert to_exact(0, name="delta", owner="Budget", allow_zero=True) == 0
    assert to_exact("0.0", name="delta", owner="Budget", allow_zero=True) == 0
    with pytest.raises(ValidationError, match="non-negative number; got -1"):
        to_exact(-1, name="delta", owner="Budget", allow_zero=True)
    assert isinstance(ValidationError("x"), MedanonError)


# ------------------------------------------------------------------ formatting and parsing
@pytest.mark.parametrize("value, text", [
    (F(0), "0"), (F(2), "2"), (F(1, 10), "0.1"), (F(1, 4), "0.25"), (F(25, 2), "12.5"),
    (F(1, 3), "1/3"), (F(4, 3), "4/3"), (F(13, 30), "13/30"), (F(1, 10 ** 4), "0.0001"),
    (F(1, 10 ** 6), "1e-6"), (F(3, 2 * 10 ** 6), "1.5e-6"), (F(123, 1000), "0.123"),
    (F(10 ** 20), "100000000000000000000"), (F(-1, 4), "-0.25"),
])
def test_format_epsilon_is_exact_and_readable(value, text) -> None:
    assert format_epsilon(value) == text
    if value >= 0:
        assert parse_epsilon(text) == value


def test_format_epsilon_reads_floats_through_their_repr() -> None:
    assert format_epsilon(0.1) == "0.1" and format_epsilon(1 / 3) == "0.3333333333333333"
    assert format_epsilon(7) == "7"


def test_parse_epsilon_refuses_what_is_not_an_epsilon() -> None:
    for bad in ("abc", "-0.1", "nan", "", "1/0"):
        with pytest.raises(ValidationError, match="parse_epsilon"):
            parse_epsilon(bad)


@FAST
@given(st.fractions(min_value=0, max_denominator=10 ** 12))
def test_format_then_parse_round_trips_any_fraction(value) -> None:
    assert parse_epsilon(format_epsilon(value)) == value


@FAST
@given(st.integers(0, 10 ** 12), st.integers(0, 30), st.integers(0, 30))
def test_format_then_parse_round_trips_finite_decimals(num, twos, fives) -> None:
    value = F(num, 2 ** twos * 5 ** fives)
    text = format_epsilon(value)
    assert "/" not in text
    assert parse_epsilon(text) == value


@FAST
@given(st.floats(min_value=0, allow_nan=False, allow_infinity=False))
def test_floats_mean_their_shortest_repr(value) -> None:
    exact = to_exact(value, name="epsilon", owner="test", allow_zero=True)
    assert exact == Fraction(repr(value))
    assert parse_epsilon(format_epsilon(exact)) == exact


# -------------------------------------------------------------------- PrivacyLoss, Budget
def test_exact_arithmetic_has_no_float_surprises() -> None:
    assert Budget.of(0.1) + Budget.of(0.2) == Budget.of(F(3, 10))
    assert (Budget.of(0.1) + Budget.of(0.2)).epsilon == F(3, 10)
    assert compose([_loss(0.1)] * 10) == Budget.of(1)
    assert sum([Budget.of(0.1)] * 10) == Budget.of(1)
    assert Budget.of(1).remaining_after(compose([_loss(0.1)] * 10)) == Budget.zero()


def test_privacy_loss_validates_and_serializes() -> None:
    loss = PrivacyLoss(epsilon="1/3", mechanism="laplace", target="weight")
    assert loss.epsilon == F(1, 3) and loss.delta == 0 and loss.scope == "case"
    data = loss.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["epsilon_exact"] == "1/3" and data["epsilon"] == pytest.approx(1 / 3)
    assert data["delta"] == 0.0 and data["delta_exact"] == "0"
    assert PrivacyLoss(epsilon=0, mechanism="none").epsilon == 0
    with pytest.raises(TypeError):
        PrivacyLoss(F(1), F(0), "laplace")  # keyword-only
    for kwargs, fragment in [({"epsilon": -1}, "'epsilon' parameter of PrivacyLoss"),
                             ({"epsilon": 1, "delta": 1}, r"'delta' .* in \[0, 1\)"),
                             ({"epsilon": 1, "delta": -0.1}, "'delta'"),
                             ({"epsilon": 1, "mechanism": ""}, "'mechanism'"),
                             ({"epsilon": 1, "scope": ""}, "'scope'"),
                             ({"epsilon": 1, "target": None}, "'target'")]:
        with pytest.raises(ValidationError, match=fragment):
            PrivacyLoss(**{"mechanism": "laplace", **kwargs})


def test_budget_constructors_and_text() -> None:
    assert str(Budget.of(0.1)) == "ε=0.1"
    assert str(Budget.of(0.1, delta=1e-6)) == "ε=0.1, δ=1e-6"
    assert str(Budget.of("1/3")) == "ε=1/3"
    assert Budget.zero() == Budget(epsilon=F(0))
    assert Budget.of(2).to_dict() == {"epsilon": 2.0, "epsilon_exact": "2", "delta": 0.0,
                                      "delta_exact": "0"}
    with pytest.raises(ValidationError, match="'epsilon' parameter of Budget must be a "
                                              "positive number; got 0."):
        Budget.of(0)
    with pytest.raises(ValidationError, match="'delta'"):
        Budget.of(1, delta=1)
    with pytest.raises(TypeError):
        Budget(F(1))  # keyword-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        Budget.of(1).epsilon = F(2)  # frozen


def test_budget_covers_and_adds_losses() -> None:
    budget = Budget.of(1, delta=1e-6)
    assert budget.covers(Budget.of(1, delta=1e-6))  # equal fits
    assert not budget.covers(Budget.of("1.0000001"))
    assert not budget.covers(_loss(0.5, delta=2e-6))
    assert Budget.of(0.5) + _loss(0.25) == Budget.of(0.75)
    assert _loss(0.25) + Budget.of(0.5) == Budget.of(0.75)


def test_budget_exceeded_names_requested_remaining_and_difference() -> None:
    with pytest.raises(BudgetExceeded) as info:
        Budget.of("1/3").remaining_after(Budget.of(0.5))
    message = str(info.value)
    assert "requested ε=0.5" in message
    assert "remaining ε=1/3" in message
    assert "difference ε=1/6" in message
    assert Budget.of(1).remaining_after(Budget.of("1/3")) == Budget.of("2/3")


def test_compose_sums_epsilon_and_delta() -> None:
    total = compose([_loss("1/3"), _loss(0.1, "exponential", "age", delta=1e-7),
                     _loss(0.1, delta=2e-7)])
    assert total == Budget(epsilon=F(1, 3) + F(2, 10), delta=F(3, 10 ** 7))
    assert compose([]) == Budget.zero()
    with pytest.raises(ValidationError, match="compose"):
        compose([Budget.of(1)])


# ----------------------------------------------------------------------------- Accountant
def test_accountant_refuses_the_overspending_loss_and_records_nothing() -> None:
    accountant = Accountant(budget=Budget.of(1))
    for _ in range(3):
        accountant.spend(_loss("1/3"))
    assert accountant.spent == Budget.of(1) and accountant.remaining == Budget.zero()
    with pytest.raises(BudgetExceeded) as info:
        accountant.spend(_loss(0.1, "exponential", "age"))
    assert "requested ε=0.1, remaining ε=0, difference ε=0.1" in str(info.value)
    assert "exponential" in str(info.value) and "nothing was recorded" in str(info.value)
    assert accountant.spent == Budget.of(1)
    assert len(accountant.losses) == 3
    accountant.spend(_loss(0))  # a free loss still fits


def test_accountant_partial_budget_and_unlimited() -> None:
    accountant = Accountant(budget=Budget.of(0.5))
    accountant.spend(_loss(0.2))
    with pytest.raises(BudgetExceeded, match=r"requested ε=0\.4, remaining ε=0\.3, "
                                             r"difference ε=0\.1"):
        accountant.spend(_loss(0.4))
    assert accountant.losses == (_loss(0.2),) and accountant.remaining == Budget.of(0.3)
    with pytest.raises(BudgetExceeded, match="δ"):
        accountant.spend(_loss(0.1, delta=1e-9))  # the budget's δ is 0

    free = Accountant()
    free.spend(_loss(5))
    free.spend(_loss(0.1, delta=1e-6))
    assert free.spent == Budget.of(5.1, delta=1e-6) and free.remaining is None
    assert free.budget is None
    with pytest.raises(TypeError):
        Accountant(Budget.of(1))  # keyword-only
    with pytest.raises(ValidationError, match="'budget' parameter of Accountant"):
        Accountant(budget=1)
    with pytest.raises(ValidationError, match="'loss'"):
        free.spend(Budget.of(1))


# --------------------------------------------------------------------------------- ledger
def _entry(period, case_id, mechanism, epsilon):
    value = F(epsilon)
    return {"period": period, "case_id": case_id, "mechanism": mechanism,
            "epsilon": float(value), "delta": 0.0, "epsilon_exact": format_epsilon(value)}


def _hand_ledger() -> pd.DataFrame:
    """Each release charges a case laplace 1/3 (weight) + exponential 1/10 (age) = 13/30.

    a: 3 releases (13/10), b: 2 (13/15), c and e: 1 (13/30), d: laplace only once (1/3).
    """
    charged = {"2011Q2": "abc", "2011Q3": "abe", "2011Q4": "a"}
    rows = []
    for period, cases in charged.items():
        for case in cases:
            rows.append(_entry(period, case, "laplace", F(1, 3)))
            rows.append(_entry(period, case, "exponential", F(1, 10)))
    rows.append(_entry("2011Q4", "d", "laplace", F(1, 3)))
    random.Random(4).shuffle(rows)
    return pd.DataFrame(rows)


def test_case_totals_exact_across_periods_and_mechanisms() -> None:
    totals = case_totals(_hand_ledger())
    assert list(totals.columns) == ["case_id", "releases", "epsilon", "epsilon_exact", "delta"]
    assert totals["case_id"].tolist() == ["a", "b", "c", "d", "e"]
    assert totals["releases"].tolist() == [3, 2, 1, 1, 1]
    assert totals["epsilon_exact"].tolist() == ["1.3", "13/15", "13/30", "1/3", "13/30"]
    assert [parse_epsilon(t) for t in totals["epsilon_exact"]] == [
        3 * (F(1, 3) + F(1, 10)), 2 * F(13, 30), F(13, 30), F(1, 3), F(13, 30)]
    assert totals["epsilon"].tolist() == [1.3, 13 / 15, 13 / 30, 1 / 3, 13 / 30]
    assert totals["delta"].tolist() == [0.0] * 5


def test_case_totals_falls_back_to_float_repr_and_sums_exactly() -> None:
    # ten releases at the float 0.1 sum to 0.9999999999999999 in floats, exactly 1 here
    ledger = pd.DataFrame({"period": [f"20{10 + i // 4}Q{i % 4 + 1}" for i in range(10)],
                           "case_id": ["x"] * 10, "mechanism": ["laplace"] * 10,
                           "epsilon": [0.1] * 10, "delta": [0.0] * 10})
    assert sum([0.1] * 10) != 1.0
    totals = case_totals(ledger)
    assert totals["epsilon_exact"].tolist() == ["1"] and totals["epsilon"].tolist() == [1.0]
    assert totals["releases"].tolist() == [10]
    # epsilon_exact is authoritative; a null or empty cell falls back to the float
    ledger["epsilon_exact"] = ["1/3"] * 8 + [None, ""]
    assert case_totals(ledger)["epsilon_exact"].tolist() == [format_epsilon(F(8, 3) + F(2, 10))]


def test_case_totals_large_denominators_stay_exact() -> None:
    rng = np.random.default_rng(7)
    texts = ["1/1000003", "1/999983", "2/1000033", "0.1", "1/3", "1e-9"]
    n = 3000
    ledger = pd.DataFrame({"period": rng.choice(["2020Q1", "2020Q2", "2020Q3"], n),
                           "case_id": rng.integers(0, 50, n).astype(str),
                           "mechanism": "laplace", "delta": 0.0,
                           "epsilon_exact": rng.choice(texts, n)})
    ledger["epsilon"] = [float(F(t)) for t in ledger["epsilon_exact"]]
    expected: dict[str, Fraction] = {}
    for case, text in zip(ledger["case_id"], ledger["epsilon_exact"]):
        expected[case] = expected.get(case, F(0)) + F(text)
    totals = case_totals(ledger)
    assert totals["case_id"].tolist() == sorted(expected)
    assert [parse_epsilon(t) for t in totals["epsilon_exact"]] == [expected[c] for c in
                                                                   sorted(expected)]
    summary = summarize_ledger(ledger, case_budget=Budget.of(max(expected.values())))
    assert parse_epsilon(summary.max_epsilon) == max(expected.values())
    assert summary.over_budget == 0
    assert summary.mean_epsilon == pytest.approx(float(sum(expected.values()) / len(expected)))
    worst = max(expected, key=lambda c: (expected[c], c))
    assert cases_over_budget(ledger, [worst], F(1, 10 ** 12), Budget.of(max(expected.values()))) \
        == [worst]


def test_case_totals_validates_the_ledger() -> None:
    good = _hand_ledger()
    with pytest.raises(ValidationError, match="lacks case_id"):
        case_totals(good.drop(columns="case_id"))
    with pytest.raises(ValidationError, match="epsilon_exact"):
        case_totals(good.assign(epsilon_exact="abc"))
    with pytest.raises(ValidationError, match="NaN"):
        case_totals(good.drop(columns="epsilon_exact").assign(epsilon=np.nan))
    with pytest.raises(ValidationError, match="'epsilon'"):
        case_totals(good.drop(columns="epsilon_exact").assign(epsilon=-0.5))
    with pytest.raises(ValidationError, match="delta"):
        case_totals(good.assign(delta=-1.0))
    with pytest.raises(ValidationError, match="DataFrame"):
        case_totals([{"case_id": "a"}])


def test_summarize_ledger_on_a_hand_built_ledger() -> None:
    summary = summarize_ledger(_hand_ledger(), case_budget=Budget.of("13/15"))
    assert isinstance(summary, LedgerSummary)
    assert summary.cases == 5 and summary.entries == 15
    assert summary.periods == ("2011Q2", "2011Q3", "2011Q4")
    assert summary.max_epsilon == "1.3" and summary.max_epsilon_float == 1.3
    totals = sorted([1 / 3, 13 / 30, 13 / 30, 13 / 15, 13 / 10])
    assert summary.mean_epsilon == pytest.approx(101 / 150)            # (101/30) / 5
    assert summary.median_epsilon == pytest.approx(13 / 30)
    assert summary.quantiles == pytest.approx({
        "p50": 13 / 30, "p90": float(np.quantile(totals, 0.9)),
        "p99": float(np.quantile(totals, 0.99))})
    assert summary.quantiles["p90"] == pytest.approx(13 / 15 + 0.6 * (13 / 10 - 13 / 15))
    assert summary.distribution == (("1/3", 1), ("13/30", 2), ("13/15", 1), ("1.3", 1))
    assert summary.per_period == (
        {"period": "2011Q2", "cases": 3, "epsilon_per_case": "13/30"},
        {"period": "2011Q3", "cases": 3, "epsilon_per_case": "13/30"},
        {"period": "2011Q4", "cases": 2, "epsilon_per_case": "13/30"})
    assert summary.case_budget == "13/15"
    assert summary.over_budget == 1            # a
    # remaining < 13/30 (largest per-release spend): a (over) and b (exactly at the budget);
    # c and e have exactly 13/30 left, so one more such release still fits
    assert summary.at_or_near_budget == 2
    assert summary.worst_cases == (
        {"case_id": "a", "epsilon": "1.3", "releases": 3},
        {"case_id": "b", "epsilon": "13/15", "releases": 2},
        {"case_id": "c", "epsilon": "13/30", "releases": 1},
        {"case_id": "e", "epsilon": "13/30", "releases": 1},
        {"case_id": "d", "epsilon": "1/3", "releases": 1})
    data = summary.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["distribution"][0] == {"epsilon": "1/3", "cases": 1}

    unbudgeted = summarize_ledger(_hand_ledger())
    assert unbudgeted.case_budget is None
    assert unbudgeted.over_budget == 0 and unbudgeted.at_or_near_budget == 0


def test_summarize_ledger_keeps_the_50_most_common_totals() -> None:
    rows = [_entry("2020Q1", f"c{i:03d}", "laplace", F(i + 1, 7)) for i in range(60)]
    rows += [_entry("2020Q1", f"d{i:03d}", "laplace", F(60, 7)) for i in range(3)]
    summary = summarize_ledger(pd.DataFrame(rows))
    assert len(summary.distribution) == 50
    totals = [parse_epsilon(t) for t, _ in summary.distribution]
    assert totals == sorted(totals)
    assert (format_epsilon(F(60, 7)), 4) in summary.distribution  # the most common survives
    assert summary.max_epsilon == "60/7" and len(summary.worst_cases) == 10


def test_summarize_empty_ledger() -> None:
    empty = pd.DataFrame(columns=["period", "case_id", "mechanism", "epsilon", "delta",
                                  "epsilon_exact"])
    summary = summarize_ledger(empty, case_budget=Budget.of(1))
    assert summary.cases == 0 and summary.entries == 0 and summary.periods == ()
    assert summary.max_epsilon == "0" and summary.max_epsilon_float == 0.0
    assert summary.mean_epsilon == 0.0 and summary.median_epsilon == 0.0
    assert summary.quantiles == {"p50": 0.0, "p90": 0.0, "p99": 0.0}
    assert summary.distribution == () and summary.per_period == () and summary.worst_cases == ()
    assert summary.case_budget == "1" and summary.over_budget == 0
    assert summary.at_or_near_budget == 0
    assert json.loads(json.dumps(summary.to_dict())) == summary.to_dict()
    assert summarize_ledger(empty).case_budget is None
    totals = case_totals(empty)
    assert len(totals) == 0
    assert list(totals.columns) == ["case_id", "releases", "epsilon", "epsilon_exact", "delta"]
    with pytest.raises(ValidationError, match="'case_budget'"):
        summarize_ledger(empty, case_budget=1)


def test_cases_over_budget_equal_is_allowed_above_is_not() -> None:
    ledger = pd.DataFrame({"period": ["2011Q2"] * 9 + ["2011Q2"] * 10,
                           "case_id": ["x"] * 9 + ["y"] * 10, "mechanism": "laplace",
                           "epsilon": [0.1] * 19, "delta": 0.0})  # x: 0.9, y: 1 (floats only)
    budget = Budget.of(1)
    assert cases_over_budget(ledger, ["x", "y", "z"], F(1, 10), budget) == ["y"]
    assert cases_over_budget(ledger, ["x"], F(1, 10) + F(1, 10 ** 15), budget) == ["x"]
    assert cases_over_budget(ledger, ["y", "x"], F(0), budget) == []
    assert cases_over_budget(ledger, ["z", "y", "z"], "1/100", budget) == ["y"]
    assert cases_over_budget(ledger, ["z"], F(1), budget) == []          # new case, at budget
    assert cases_over_budget(ledger, ["z"], F(11, 10), budget) == ["z"]  # new case, above
    assert cases_over_budget(ledger, [], F(1), budget) == []
    assert cases_over_budget(ledger.iloc[:0], ["x"], F(1), budget) == []
    with pytest.raises(ValidationError, match="'spend'"):
        cases_over_budget(ledger, ["x"], -0.1, budget)
    with pytest.raises(ValidationError, match="'case_budget'"):
        cases_over_budget(ledger, ["x"], 0.1, 1)
    with pytest.raises(ValidationError, match="'case_ids'"):
        cases_over_budget(ledger, "x", 0.1, budget)


def test_ledger_of_200k_rows_sums_exactly() -> None:
    # Speed is measured by benchmarks/bench_ledger.py, not here (no timed tests).
    rng = np.random.default_rng(0)
    n = 200_000
    values = np.array(["1/3", "0.1", "0.25", "13/30"], dtype=object)
    pick = rng.integers(0, len(values), n)
    ledger = pd.DataFrame({
        "period": rng.choice([f"{y}Q{q}" for y in range(2010, 2020) for q in range(1, 5)], n),
        "case_id": rng.integers(0, 60_000, n).astype(str), "mechanism": "laplace",
        "epsilon": np.array([float(F(v)) for v in values])[pick],
        "delta": 0.0, "epsilon_exact": values[pick]})
    totals = case_totals(ledger)
    summary = summarize_ledger(ledger, case_budget=Budget.of(2))
    assert summary.cases == len(totals)
    counts = pd.crosstab(ledger["case_id"], ledger["epsilon_exact"])
    sample = totals.sample(200, random_state=1)
    for case, text in zip(sample["case_id"], sample["epsilon_exact"]):
        row = counts.loc[case]
        assert parse_epsilon(text) == sum((int(row[v]) * F(v) for v in values), F(0))
    assert math.isclose(summary.mean_epsilon, totals["epsilon"].mean())


def test_rows_without_a_dp_claim_are_reported_apart_and_never_counted() -> None:
    dp = _hand_ledger().assign(dp=True)
    paper = pd.DataFrame([_entry("2011Q1", case, "laplace", F(5)) for case in "abz"]).assign(dp=False)
    ledger = pd.concat([dp, paper], ignore_index=True)
    # totals, the summary and the budget check read the DP rows only
    pd.testing.assert_frame_equal(case_totals(ledger), case_totals(dp))
    summary = summarize_ledger(ledger, case_budget=Budget.of(1))
    reference = summarize_ledger(dp, case_budget=Budget.of(1))
    assert {k: v for k, v in summary.to_dict().items() if k != "non_dp"} == \
        {k: v for k, v in reference.to_dict().items() if k != "non_dp"}
    assert cases_over_budget(ledger, ["a", "z"], F(1, 10), Budget.of(1)) == ["a"]
    # ... and the rest are listed apart with their nominal epsilon
    assert summary.to_dict()["non_dp"] == {
        "entries": 3, "cases": 3, "periods": ["2011Q1"],
        "per_period": [{"period": "2011Q1", "cases": 3, "mechanisms": ["laplace"],
                        "nominal_epsilon_per_case": "5"}]}
    assert reference.non_dp["entries"] == 0
    # a ledger of non-DP rows only has no epsilon total at all
    only = summarize_ledger(paper)
    assert only.cases == 0 and only.max_epsilon == "0" and only.non_dp["cases"] == 3
    # an empty dp cell is a DP row (ledgers from before the column); text is refused
    legacy = dp.assign(dp=None)
    pd.testing.assert_frame_equal(case_totals(legacy), case_totals(dp))
    with pytest.raises(ValidationError, match="dp column holds booleans"):
        case_totals(dp.assign(dp="False"))
