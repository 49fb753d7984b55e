"""The one-off ledger (accounting/oneoff.py): ε per input across one-off releases."""

from __future__ import annotations

import pytest

from medanon.accounting.oneoff import OneOffLedger
from medanon.errors import BudgetExceeded, InputFormatError, ValidationError


def test_spend_adds_up_per_input_and_a_budget_refuses_past_it(tmp_path):
    ledger = OneOffLedger(tmp_path / "l.json")
    assert ledger.spent("a") == 0 and ledger.entries("a") == []
    assert ledger.check("a", 1.0, budget=None) is False          # no budget: never refused
    ledger.record("a", method="ipa", epsilon=1.0, out="o1")
    ledger.record("a", method="ipa", epsilon=0.5, out="o2")
    ledger.record("b", method="dphist", epsilon=2.0, out="o3")
    assert ledger.spent("a") == 1.5 and ledger.spent("b") == 2.0
    assert ledger.check("a", 0.5, budget=2.0) is False           # exactly at the budget
    with pytest.raises(BudgetExceeded, match="would take it to 2.5, past the budget 2"):
        ledger.check("a", 1.0, budget=2.0)
    assert ledger.check("a", 1.0, budget=2.0, allow_over_budget=True) is True
    assert [e["out"] for e in OneOffLedger(tmp_path / "l.json").entries("a")] == ["o1", "o2"]


def test_bad_values_and_a_damaged_ledger_are_named(tmp_path, monkeypatch):
    ledger = OneOffLedger(tmp_path / "l.json")
    for kwargs in ({"budget": 0}, {"budget": float("nan")}):
        with pytest.raises(ValidationError, match="'budget'"):
            ledger.check("a", 1.0, **kwargs)
    with pytest.raises(ValidationError, match="'epsilon'"):
        ledger.check("a", -1.0, budget=1.0)
    (tmp_path / "l.json").write_text("{not json")
    with pytest.raises(InputFormatError, match="not valid JSON"):
        ledger.spent("a")
    monkeypatch.setenv("MEDANON_LEDGER", str(tmp_path / "env.json"))
    assert OneOffLedger.default().path == tmp_path / "env.json"
    assert OneOffLedger.default(tmp_path / "x.json").path == tmp_path / "x.json"
