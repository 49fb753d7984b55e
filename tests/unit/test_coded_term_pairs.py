"""The gate reads the candidate's (row, term) pairs from the codes its text was formatted from
(issue 43): those pairs must be, array for array, what splitting the written text gives
(``columns_term_pairs``), and the codes must be read only when the text reads back as them.

Checked on generated codes, on every release of generated series, and on the golden FAERS-like
series of ``tests/system/test_export_digests.py``: at each gate of a release the code-derived
pairs are compared with ``columns_term_pairs`` of the very rows the gate checks (the rows that
are written, ``test_gate_reads_what_is_written``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import medanon
import medanon.verify as verify_module
from medanon.cli.app import main
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.data.terms import TermCodes
from medanon.pipeline.checks import Acknowledgements
from medanon.pipeline.methods import periodic_method
from medanon.pipeline.publish import publish_periods
from medanon.published.cells import (candidate_term_pairs, coded_term_pairs, columns_term_pairs,
                                    reading_once, release_term_pairs)
from medanon.errors import InfeasibleError
from medanon.random import randomness
from tests.property.test_periodic_methods import random_series

# terms the format writes and reads back as themselves: inner spaces, case, non-ASCII, digits
_CLEAN = ["a", "B", "b", "c d", "é", "Zz", "10", "x-y", "Ω", "a b c"]
# terms that do not read back as themselves (split, stripped or dropped by the reader)
_UNCLEAN = ["a|b", " a", "a ", "", "*", "\tq"]


def _codes(vocabulary: list[str], rows: list[list[int]]) -> TermCodes:
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(r) for r in rows])
    codes = np.array([c for r in rows for c in r], dtype=np.int32)
    return TermCodes(vocabulary, ptr, codes)


def _written(columns: list[TermCodes]) -> pd.DataFrame:
    """The release text of the coded columns: each row's terms joined with ``|``."""
    return pd.DataFrame({f"c{j}": pd.Series(["|".join(c.vocabulary[t] for t in
                                                       c.codes[c.ptr[i]:c.ptr[i + 1]].tolist())
                                              for i in range(len(c))], dtype="str")
                         for j, c in enumerate(columns)})


def _assert_same_pairs(got, want) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        assert g.tolist() == w.tolist()


@settings(max_examples=150, deadline=None)
@given(hs.data())
def test_pairs_from_codes_are_the_pairs_of_the_written_text(data) -> None:
    vocabulary = sorted(data.draw(hs.sets(hs.sampled_from(_CLEAN), min_size=1)))
    n = data.draw(hs.integers(0, 12))
    width = data.draw(hs.integers(1, 3))
    # any order and repeats within a row (the reader numbers terms by first reading)
    row = hs.lists(hs.integers(0, len(vocabulary) - 1), max_size=5)
    columns = [_codes(vocabulary, data.draw(hs.lists(row, min_size=n, max_size=n)))
               for _ in range(width)]
    rows = _written(columns)
    _assert_same_pairs(coded_term_pairs(columns), columns_term_pairs(rows, list(rows.columns)))


@pytest.mark.parametrize("unclean", _UNCLEAN)
def test_codes_of_a_term_the_reader_changes_are_not_read(unclean: str) -> None:
    vocabulary = sorted(["a", unclean])
    column = _codes(vocabulary, [[0, 1], [1], []])
    assert coded_term_pairs([column]) is None
    rows = _written([column])
    with reading_once():
        assert not candidate_term_pairs(rows, ["c0"], {"c0": column})
        # the gate then splits the text, as for any release
        _assert_same_pairs(release_term_pairs(rows, ["c0"]), columns_term_pairs(rows, ["c0"]))


def test_codes_that_do_not_hold_the_text_are_not_read() -> None:
    column = _codes(["a", "b"], [[0, 1], [1], [0]] * 30)
    rows = _written([column])
    rows.loc[45, "c0"] = "b"   # a row changed after it was formatted
    with reading_once():
        assert not candidate_term_pairs(rows, ["c0"], {"c0": column})
    with reading_once():
        assert not candidate_term_pairs(rows.iloc[1:], ["c0"], {"c0": column})   # rows lost
        assert not candidate_term_pairs(rows, ["c0", "c1"], {"c0": column})     # a column uncoded
    assert not candidate_term_pairs(_written([column]), ["c0"], {"c0": column})  # no reading_once
    # terms out of order in a row: the writer sorts a cell's terms, so its text is not the
    # codes joined in their order
    unsorted = _codes(["a", "b"], [[1, 0], [1], [0]] * 30)
    with reading_once():
        assert not candidate_term_pairs(_written([unsorted]), ["c0"], {"c0": unsorted})


def _recording_gate(monkeypatch) -> list[tuple[str, bool]]:
    """Wrap the gate's reading of the candidate's codes: each time, the pairs read from them
    must equal the pairs of the rows the gate checks, split from their text."""
    seen: list[tuple[str, bool]] = []
    genuine = verify_module.candidate_term_pairs

    def checking(rows, columns, terms):
        used = genuine(rows, columns, terms)
        if used:
            _assert_same_pairs(release_term_pairs(rows, columns),
                               columns_term_pairs(rows, list(columns)))
            _assert_same_pairs(coded_term_pairs([terms[c] for c in columns]),
                               columns_term_pairs(rows, list(columns)))
        seen.append((str(rows["period"].iloc[0]) if len(rows) else "", used))
        return used

    monkeypatch.setattr(verify_module, "candidate_term_pairs", checking)
    return seen


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("on_infeasible", ["suppress-terms", "raise-theta"])
def test_the_gate_reads_the_pairs_of_what_is_written_on_generated_series(
        tmp_path, monkeypatch, seed: int, on_infeasible: str) -> None:
    seen = _recording_gate(monkeypatch)
    records = random_series(seed, periods=3)
    store = medanon.ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.papers())
    store.ingest(medanon.Dataset(records, Schema.papers()))
    method = periodic_method("ppms++", k=3, theta=0.35, on_infeasible=on_infeasible,
                             max_withheld=1.0)
    publish_periods(store, method, ["2020Q1", "2020Q2", "2020Q3"], randomness(seed),
                    acknowledged=Acknowledgements(seeded=True, violations=True))
    store.close()
    assert [p for p, _ in seen] == ["2020Q1", "2020Q2", "2020Q3"]
    assert all(used for _, used in seen)


def test_the_gate_reads_the_pairs_of_what_is_written_on_the_golden_series(
        tmp_path: Path, monkeypatch) -> None:
    seen = _recording_gate(monkeypatch)
    write_faers_series(tmp_path / "in", periods=3, cases=600, seed=43)
    store = tmp_path / "s.duckdb"
    assert main(["ingest", str(tmp_path / "in"), "--store", str(store)]) == 0
    assert main(["release", "--store", str(store), "--method", "ppms++", "--k", "5", "--theta",
                 "frequency", "--on-infeasible", "suppress-terms", "--seed", "43",
                 "--allow-seeded", "--publish-despite-violations"]) == 0
    assert len(seen) == 3 and all(used for _, used in seen)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("method, options", [
    ("ppms++", {"k": 3, "theta": 0.2, "on_infeasible": "suppress-terms", "max_withheld": 1.0}),
    ("ppms++", {"k": 3, "theta": 0.4, "on_infeasible": "raise-theta", "max_withheld": 1.0}),
    ("ha", {"k": 3, "theta": 0.4, "alpha": 0.3, "on_infeasible": "suppress-terms"}),
    ("ppms-dp-all", {"k": 3, "theta": 0.4, "epsilon": 1.0, "on_infeasible": "suppress-terms",
                     "max_withheld": 1.0}),
])
def test_the_table_codes_hold_the_table_cells(seed: int, method: str,
                                                               options: dict) -> None:
    """``AnonymizationResult.table_terms`` holds every cell of the table's sensitive columns
    (release-wide and per-case suppressed terms taken out)."""
    schema = Schema.papers()
    # a draw the method cannot release is replaced by the next of this seed's own draws
    # (seed, seed + 4, ...: the four parameters' draws stay apart), never skipped
    for draw in range(seed, seed + 4 * 5, 4):
        records = random_series(draw, periods=2, size=(30, 60))
        supers = combine_super_records(records["2020Q1"], schema, schema.load_hierarchies())
        anonymizer = periodic_method(method, **options)
        try:
            result = anonymizer.anonymize(
                supers, [], rng=randomness(draw),
                next_cases=(set(records["2020Q2"]["case_id"].astype(str))
                            if anonymizer.needs_next_period else None))
            break
        except InfeasibleError:
            continue
    else:
        pytest.fail(f"{method}: none of five draws from seed {seed} gives a release")
    assert result.table_terms is not None
    for name in schema.sensitive:
        coded = result.table_terms[name]
        cells = result.table[name].tolist()
        assert len(coded) == len(cells)
        assert [tuple(coded.vocabulary[c] for c in coded.codes[a:b].tolist())
                for a, b in zip(coded.ptr[:-1].tolist(), coded.ptr[1:].tolist())] == cells


def test_key_type_is_int32_only_while_every_key_below_the_bound_fits():
    from medanon.data.terms import key_type
    top = int(np.iinfo(np.int32).max)
    assert key_type(0) is np.int32 and key_type(top - 1) is np.int32
    # a bound of 2^31 - 1 admits the key 2^31 - 2 only, but the bound itself is what is asked
    assert key_type(top) is np.int64 and key_type(2 * top) is np.int64
    # the keys below a bound that passed survive the cast unchanged
    keys = np.array([0, top - 2], dtype=np.int64)
    assert (keys.astype(key_type(top - 1)) == keys).all()
