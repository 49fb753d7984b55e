"""The one-off ledger (accounting/oneoff.py): ε per input across one-off releases."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from medanon.accounting.oneoff import (OVERLAP_THRESHOLD, SKETCH_SIZE, InputFingerprint,
                                       OneOffLedger, overlap)
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


def _table(n: int, seed: int) -> pd.DataFrame:
    """A table of ``n`` rows with many distinct rows (as real microdata has)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(0, 100, n), "sex": rng.choice(["F", "M"], n),
                         "code": rng.integers(0, 10_000, n).astype(str)})


def test_the_fingerprint_is_the_rows_as_a_multiset():
    rows = _table(500, 1)
    mine = InputFingerprint.of_rows(rows)
    shuffled = InputFingerprint.of_rows(rows.sample(frac=1, random_state=3))
    assert shuffled.digest == mine.digest and shuffled.rows == 500
    # a repeated row is two elements: one copy more or less is another input
    doubled = InputFingerprint.of_rows(pd.concat([rows, rows.iloc[:1]]))
    assert doubled.digest != mine.digest and doubled.rows == 501
    assert InputFingerprint.of_rows(rows.iloc[:-1]).digest != mine.digest
    # a changed value is another row
    changed = rows.copy()
    changed.loc[0, "age"] = 101
    assert InputFingerprint.of_rows(changed).digest != mine.digest
    stored = InputFingerprint.from_json(mine.digest, mine.to_json())
    assert stored.rows == mine.rows and np.array_equal(stored.sketch, mine.sketch)


@pytest.mark.parametrize("n", [400, 6000])   # exact below SKETCH_SIZE rows, estimated above
def test_overlap_is_the_shared_share_of_rows(n):
    rows, other = _table(n, 1), _table(n, 2)
    mine = InputFingerprint.of_rows(rows)
    shared = int(0.9 * n)
    mixed = InputFingerprint.of_rows(pd.concat([rows.iloc[:shared], other.iloc[shared:]]))
    # the error bound of the module docstring: 0.5 / sqrt(sample) at 4 standard errors
    tolerance = 0 if n <= SKETCH_SIZE else 4 * 0.5 / np.sqrt(SKETCH_SIZE)
    assert abs(overlap(mine, mixed) - 0.9) <= tolerance + 1 / n
    subset = InputFingerprint.of_rows(rows.iloc[: n // 10])          # |A ∩ B| / |A| = 1
    assert overlap(mine, subset) >= 1 - tolerance
    assert overlap(mine, InputFingerprint.of_rows(other)) < 0.05      # unrelated
    assert overlap(mine, mine) == 1.0


def test_same_rows_reordered_and_a_mostly_shared_input_are_charged_together(tmp_path):
    ledger = OneOffLedger(tmp_path / "l.json")
    rows, other = _table(300, 1), _table(300, 2)
    first = InputFingerprint.of_rows(rows)
    ledger.record(first, method="dphist", epsilon=1.0, out="o1")
    shuffled = InputFingerprint.of_rows(rows.sample(frac=1, random_state=5))
    with pytest.raises(BudgetExceeded, match="would take it to 2, past the budget 1.5"):
        ledger.check(shuffled, 1.0, budget=1.5)
    ninety = InputFingerprint.of_rows(pd.concat([rows.iloc[:270], other.iloc[270:]]))
    with pytest.raises(BudgetExceeded, match="50% or more of them, as 1 earlier input"):
        ledger.check(ninety, 1.0, budget=1.5)
    ledger.record(ninety, method="dphist", epsilon=1.0, out="o2")   # acknowledged over budget
    assert ledger.spent(ninety) == 2.0 and ledger.spent(first) == 2.0
    # an input sharing 40% of the rows, and an unrelated one, are not charged
    forty = InputFingerprint.of_rows(pd.concat([other.iloc[:180], rows.iloc[:120]]))
    assert ledger.spent(forty) == 0.0 and ledger.check(forty, 1.0, budget=1.5) is False
    assert ledger.spent(InputFingerprint.of_rows(other)) == 0.0
    # what is stored: per input its rows, its sketch and its releases (operator-only file)
    stored = json.loads((tmp_path / "l.json").read_text())
    assert stored["version"] == 2
    assert {k: sorted(v) for k, v in stored["inputs"].items()} == {
        first.digest: ["releases", "rows", "sketch"], ninety.digest: ["releases", "rows", "sketch"]}


def test_a_ledger_written_before_the_fingerprints_is_read(tmp_path):
    path = tmp_path / "l.json"
    path.write_text(json.dumps({"abc": [{"at": "2026-01-01T00:00:00+00:00", "method": "ipa",
                                         "epsilon": 1.0, "out": "o"}]}))
    ledger = OneOffLedger(path)
    assert ledger.spent("abc") == 1.0
    ledger.record(InputFingerprint.of_rows(_table(10, 1)), method="ipa", epsilon=0.5, out="p")
    assert OneOffLedger(path).spent("abc") == 1.0


def test_an_ehr_extract_in_another_row_order_is_the_same_input(tmp_path):
    """clinsim's input: the events as a multiset, whatever the order of the diagnoses file."""
    from medanon.cli.app import main
    from medanon.data.ehr import load_mimic

    folder = tmp_path / "ehr"
    assert main(["synth", "ehr", str(folder), "--patients", "40", "--seed", "2"]) == 0
    diagnoses = pd.read_csv(folder / "DIAGNOSES_ICD.csv", dtype=str, keep_default_na=False)
    diagnoses.sample(frac=1, random_state=4).to_csv(tmp_path / "shuffled.csv", index=False)
    admissions = folder / "ADMISSIONS.csv"
    mine = load_mimic(folder / "DIAGNOSES_ICD.csv", admissions).fingerprint()
    shuffled = load_mimic(tmp_path / "shuffled.csv", admissions).fingerprint()
    assert shuffled.digest == mine.digest and mine.rows > 40
    diagnoses.iloc[: len(diagnoses) // 3].to_csv(tmp_path / "third.csv", index=False)
    third = load_mimic(tmp_path / "third.csv", admissions).fingerprint()
    assert third.digest != mine.digest and overlap(mine, third) >= OVERLAP_THRESHOLD


def test_missing_cells_are_values_of_their_own():
    """A missing cell (NaN: pandas keeps it missing through astype(str)) hashes like any value:
    the fingerprint is made, is order-free, and tells a missing cell from a present one."""
    rows = pd.DataFrame({"a": ["x", None, "y", np.nan], "b": [1.0, np.nan, 2.0, 3.0],
                         "c": [np.nan] * 4})   # a column with no value at all (MIMIC's demo)
    mine = InputFingerprint.of_rows(rows)
    assert mine.digest == InputFingerprint.of_rows(rows.iloc[::-1]).digest
    filled = InputFingerprint.of_rows(rows.fillna({"a": "y"}))   # missing is not "y"
    assert filled.digest != mine.digest
