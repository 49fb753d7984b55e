"""The published form of an EHR release: keyed pseudonyms of SUBJECT_ID/HADM_ID and their key."""

from __future__ import annotations

import hashlib
import hmac

import pandas as pd
import pytest

import medanon.pipeline.ehr as ehr_release
from medanon.errors import InternalError, ValidationError
from medanon.pipeline.ehr import EHR_COLUMNS, Pseudonyms


def events() -> pd.DataFrame:
    rows = [("30", "300", 0, 0.0, 0, "401"), ("30", "300", 0, 0.0, 1, "303"),
            ("30", "301", 1, 40.0, 0, "428"), ("7", "70", 0, 0.0, 0, "042"),
            ("12", "120", 0, 0.0, 0, "250"), ("12", "121", 1, 9.5, 0, "250")]
    return pd.DataFrame(rows, columns=list(EHR_COLUMNS))


def test_pseudonyms_are_the_documented_hmac_sha256():
    key = bytes(range(32))
    pseudonyms = Pseudonyms("key-file", key)
    expected_patient = "p" + hmac.new(key, b"patient\x0030", hashlib.sha256).hexdigest()[:16]
    expected_admission = "a" + hmac.new(key, b"admission\x0030\x00301", hashlib.sha256).hexdigest()[:16]
    assert pseudonyms.patients(["30", "30"]).tolist() == [expected_patient] * 2
    assert pseudonyms.admissions(["30"], ["301"]).tolist() == [expected_admission]
    # The same HADM_ID under another patient is another admission.
    assert pseudonyms.admissions(["31"], ["301"])[0] != expected_admission


def test_keys_fresh_seeded_and_raw():
    ids = ["7", "12", "30"]
    assert set(Pseudonyms.fresh().patients(ids)).isdisjoint(Pseudonyms.fresh().patients(ids))
    assert list(Pseudonyms.from_seed(1).patients(ids)) == list(Pseudonyms.from_seed(1).patients(ids))
    assert set(Pseudonyms.from_seed(1).patients(ids)).isdisjoint(Pseudonyms.from_seed(2).patients(ids))
    assert list(Pseudonyms.raw().patients(ids)) == ids
    with pytest.raises(ValidationError, match="seed"):
        Pseudonyms.from_seed(-1)
    with pytest.raises(ValidationError, match="at least 32 bytes"):
        Pseudonyms("key-file", b"short")
    with pytest.raises(ValidationError, match="mode"):
        Pseudonyms("plain", b"x" * 32)


def test_the_key_is_never_shown():
    pseudonyms = Pseudonyms.from_seed(3)
    key_hex = pseudonyms._key.hex()
    described = repr(pseudonyms) + str(pseudonyms.describe()) + str(pseudonyms.guarantee()) \
        + str(pseudonyms.does_not_guarantee())
    assert key_hex not in described and key_hex[:16] not in described
    assert pseudonyms.describe()["key"] == "derived from the recorded seed (research mode)"


def test_table_replaces_ids_and_sorts_rows_by_pseudonym():
    source = events()
    pseudonyms = Pseudonyms.from_seed(4)
    table = pseudonyms.table(source)
    assert list(table.columns) == list(EHR_COLUMNS) and len(table) == len(source)
    assert not set(table["patient"]) & set(source["patient"])
    assert table.equals(table.sort_values(["patient", "admission_rank", "position"]).reset_index(drop=True))
    # Each row is its source row with the identifiers replaced.
    back = dict(zip(pseudonyms.patients(source["patient"]), source["patient"]))
    restored = table.assign(patient=table["patient"].map(back))
    merged = restored.merge(source, on=["patient", "admission_rank", "position"], suffixes=("", "_src"))
    assert len(merged) == len(source) and (merged["code"] == merged["code_src"]).all()
    # Raw mode keeps the IDs and the source order.
    raw = Pseudonyms.raw().table(source)
    assert raw.equals(source)


def test_a_pseudonym_collision_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(ehr_release, "_HEX_DIGITS", 1)      # 16 possible pseudonyms
    with pytest.raises(InternalError, match="collision"):
        Pseudonyms.from_seed(0).patients([str(i) for i in range(40)])


def test_key_file_is_created_0600_and_read_back(tmp_path):
    path = tmp_path / "ehr.key"
    first, new = Pseudonyms.from_key_file(path)
    assert new and not path.exists()                  # written only once the release is ready
    first.save_key(path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    second, new = Pseudonyms.from_key_file(path)
    assert not new and second.patients(["1", "2"]).tolist() == first.patients(["1", "2"]).tolist()
    with pytest.raises(FileExistsError):
        first.save_key(path)                          # never overwrites a key
    path.chmod(0o640)
    with pytest.raises(ValidationError, match="chmod 600"):
        Pseudonyms.from_key_file(path)
    bad = tmp_path / "bad.key"
    bad.write_text("00ff\n")
    bad.chmod(0o600)
    with pytest.raises(ValidationError, match="64 hexadecimal digits"):
        Pseudonyms.from_key_file(bad)
    with pytest.raises(ValidationError, match="does not exist"):
        Pseudonyms.from_key_file(tmp_path / "missing" / "k.key")
