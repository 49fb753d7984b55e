"""The published form of an EHR release: keyed pseudonyms of SUBJECT_ID/HADM_ID and their key."""

from __future__ import annotations

import hashlib
import hmac
import json

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


def test_keys_fresh_key_file_and_raw():
    ids = ["7", "12", "30"]
    assert set(Pseudonyms.fresh().patients(ids)).isdisjoint(Pseudonyms.fresh().patients(ids))
    key = bytes(range(32))
    assert list(Pseudonyms("key-file", key).patients(ids)) == \
        list(Pseudonyms("key-file", key).patients(ids))
    assert list(Pseudonyms.raw().patients(ids)) == ids
    # No key is derived from a seed any more (issue 29): neither the constructor nor the mode.
    assert not hasattr(Pseudonyms, "from_seed")
    with pytest.raises(ValidationError, match="'mode' parameter of Pseudonyms must be one of "
                                              "fresh, key-file, raw; got 'seed'"):
        Pseudonyms("seed", b"x" * 32)
    with pytest.raises(ValidationError, match="at least 32 bytes"):
        Pseudonyms("key-file", b"short")
    with pytest.raises(ValidationError, match="mode"):
        Pseudonyms("plain", b"x" * 32)


def test_the_key_is_never_shown():
    pseudonyms = Pseudonyms.fresh()
    key_hex = pseudonyms._key.hex()
    described = repr(pseudonyms) + str(pseudonyms.describe()) + str(pseudonyms.guarantee()) \
        + str(pseudonyms.does_not_guarantee())
    assert key_hex not in described and key_hex[:16] not in described
    assert pseudonyms.describe()["key"].startswith("fresh per release, from OS entropy (never "
                                                   "derived from the seed")


def test_table_replaces_ids_and_sorts_rows_by_pseudonym():
    source = events()
    pseudonyms = Pseudonyms.fresh()
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
        Pseudonyms.fresh().patients([str(i) for i in range(40)])


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


# -- issue 29: a seeded run's pseudonyms are not a function of the published seed ---------------

def canonical(rows: pd.DataFrame) -> list[tuple]:
    """A release's content without its identifiers: each patient's rows (admission_rank, time,
    position, code) in order, the patients sorted. Equal for two releases that publish the same
    records under different pseudonyms (and so in a different row order)."""
    per_patient = rows.groupby("patient", sort=False)[["admission_rank", "time", "position", "code"]]
    return sorted(tuple(map(tuple, group.to_numpy().tolist())) for _, group in per_patient)


def seed_derived_pseudonyms(seed: int, subjects) -> set[str]:
    """What an adversary who reads ``rng.seed`` in the manifest computes with the key derivation
    medanon used before issue 29 (SHA-256 of a fixed context and the seed)."""
    key = hashlib.sha256(b"medanon/ehr-pseudonym-key/v1\x00" + str(seed).encode()).digest()
    return {"p" + hmac.new(key, b"patient\x00" + str(s).encode(), hashlib.sha256).hexdigest()[:16]
            for s in subjects}


@pytest.fixture(scope="module")
def ehr():
    import medanon

    return medanon.EhrRecords.synthetic(300, seed=1)


def test_a_seeded_run_draws_a_fresh_pseudonym_key(ehr):
    """Two runs with the same seed publish the same records (codes, times, structure: the seed
    still reproduces the release) under disjoint pseudonyms, so the pseudonyms are no function of
    the seed and the SUBJECT_ID; the old seed-derived key recovers none of them."""
    import medanon

    first, second = (medanon.Publisher("clinsimrr", epsilon=1, seed=7).publish(ehr)
                     for _ in range(2))
    assert first.manifest["rng"]["seed"] == 7                      # the seed is published
    # The released content is reproducible ...
    assert canonical(first.rows) == canonical(second.rows)
    pd.testing.assert_frame_equal(first.run.released, second.run.released)
    drop = ("published_at",)
    assert {k: v for k, v in first.manifest.items() if k not in drop} == \
        {k: v for k, v in second.manifest.items() if k not in drop}
    # ... its identifiers are not.
    for column in ("patient", "admission"):
        assert set(first.rows[column]).isdisjoint(second.rows[column])
    subjects = ehr.data.events["patient"].unique()
    assert len(first.rows["patient"].unique()) == first.summary["patients"]["evaluation"] == 60
    assert seed_derived_pseudonyms(7, subjects).isdisjoint(first.rows["patient"])
    assert not set(first.rows["patient"]) & set(map(str, subjects))
    ids = first.manifest["identifiers"]
    assert ids["key"].startswith("fresh per release, from OS entropy (never derived from the seed")
    assert ids["linkable_across_releases"] is False
    assert "derived from the recorded seed" not in json.dumps(first.manifest)


def test_a_given_key_still_wins_over_the_fresh_key_in_a_seeded_run(ehr):
    import medanon

    key = Pseudonyms("key-file", bytes(range(32)))
    release = medanon.Publisher("umaxrr", epsilon=1, seed=7).publish(ehr, identifiers=key)
    source = release.run.released["patient"]
    assert set(release.rows["patient"]) == set(key.patients(source))
    assert release.manifest["identifiers"]["key"] == "operator-held key file (not published)"
