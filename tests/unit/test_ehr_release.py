"""The published form of an EHR release: keyed pseudonyms of SUBJECT_ID/HADM_ID and their key, and
the published time's resolution."""

from __future__ import annotations

import hashlib
import hmac
import json

import numpy as np
import pandas as pd
import pytest

import medanon.pipeline.ehr as ehr_release
from medanon.errors import InternalError, ValidationError
from medanon.pipeline.ehr import EHR_COLUMNS, TIME_RESOLUTIONS, Pseudonyms, ehr_csv, published_times


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


# -- issue 29: the published time is floored to whole days by default ---------------------------

def test_published_times_are_floored_to_the_resolution():
    days = np.array([0.0, 9.5, 40.99, 3 + 59 / 1440 + 30 / 86400, np.nan])
    day, hour, minute = (published_times(days, r) for r in ("day", "hour", "minute"))
    np.testing.assert_array_equal(day, [0, 9, 40, 3, np.nan])
    np.testing.assert_array_equal(hour, [0, 9.5, 983 / 24, 3, np.nan])
    np.testing.assert_array_equal(minute, [0, 9.5, 59025 / 1440, 3 + 59 / 1440, np.nan])
    # A time read from a whole-minute timestamp (seconds / 86400, as the loaders compute it) is
    # kept bit for bit at minute resolution, never floored to the minute before.
    minutes = np.random.default_rng(0).integers(0, 100 * 366 * 1440, 200_000)
    exact = (minutes * 60) / 86400
    np.testing.assert_array_equal(published_times(exact, "minute"), exact)
    np.testing.assert_array_equal(published_times(exact, "day"), minutes // 1440)
    with pytest.raises(ValidationError, match=r"^The 'time_resolution' parameter of published_times "
                                              r"must be one of 'day', 'hour', 'minute'; got 'second'\.$"):
        published_times(days, "second")


@pytest.fixture(scope="module")
def mimic_layout_run(tmp_path_factory):
    """A ClinSimRR run on MIMIC-layout files (ADMITTIME to the minute, read by the loader)."""
    from medanon.data.ehr import load_mimic
    from medanon.data.synth.ehr import write_synth_ehr
    from medanon.pipeline.clinsim import run_clinsim
    from medanon.random import randomness

    paths = write_synth_ehr(tmp_path_factory.mktemp("ehr") / "ehr", patients=300, seed=6)
    data = load_mimic(paths["diagnoses"], paths["admissions"])
    assert data.dates_reliable
    return run_clinsim(data, method="clinsimrr", epsilon=1, rng=randomness(1))


def test_time_is_published_in_whole_days_by_default(mimic_layout_run):
    from medanon.pipeline.clinsim import build_release

    run = mimic_layout_run
    key = Pseudonyms("key-file", bytes(range(32)))
    table, manifest = build_release(run, identifiers=key)
    private = key.table(run.released)["time"].to_numpy(dtype=float)
    assert (private != np.floor(private)).any()        # the source has times within a day
    published = table["time"].to_numpy(dtype=float)
    np.testing.assert_array_equal(published, np.floor(private))
    times = ehr_csv(table).splitlines()[1:]
    assert all("." not in line.split(",")[3] for line in times)   # whole numbers in release.csv
    assert manifest["time"] == {**manifest["time"], "resolution": "day",
                                "rounding": "floored to whole days", "randomized": False,
                                "empty": False}
    statements = manifest["privacy"]["does_not_guarantee"]
    assert any("floored to whole days: time_resolution = day) is not randomized" in s
               for s in statements)
    # The run itself (the dependence graph of the auxiliary split, the metrics) used the exact
    # times: ΔT was checked on them, and the released frame still holds them.
    assert run.graph.delta_t_checked and (run.released["time"] != np.floor(run.released["time"])).any()


def test_minute_resolution_reproduces_the_old_output(mimic_layout_run):
    """Before issue 29 the published table was the pseudonymized run with its exact times."""
    from medanon.pipeline.clinsim import build_release

    run = mimic_layout_run
    key = Pseudonyms("key-file", bytes(range(32)))
    old = ehr_csv(key.table(run.released))
    minute, manifest = build_release(run, identifiers=key, time_resolution="minute")
    assert ehr_csv(minute) == old
    hour, _ = build_release(run, identifiers=key, time_resolution="hour")
    hours = hour["time"].to_numpy(dtype=float) * 24
    np.testing.assert_array_equal(hours, np.floor(hours))
    assert ehr_csv(hour) != old
    assert manifest["time"]["resolution"] == "minute"
    with pytest.raises(ValidationError, match=r"^The 'time_resolution' parameter of build_release "
                                              r"must be one of 'day', 'hour', 'minute'; got 'week'\.$"):
        build_release(run, identifiers=key, time_resolution="week")


def test_the_publisher_takes_the_time_resolution(ehr):
    import medanon

    day = medanon.Publisher("umaxrr", epsilon=1, seed=3).publish(ehr)
    minute = medanon.Publisher("umaxrr", epsilon=1, seed=3, time_resolution="minute").publish(ehr)
    assert day.manifest["time"]["resolution"] == "day" == day.summary["time_resolution"]
    assert minute.manifest["time"]["resolution"] == "minute"
    # the same run (graph, plan, noise); only the published column differs
    assert day.summary["protected_size"] == minute.summary["protected_size"]
    assert day.summary["cil"] == minute.summary["cil"]
    pd.testing.assert_frame_equal(day.run.released, minute.run.released)
    floored = np.floor(minute.rows["time"].astype(float)).astype(int).astype(str)
    assert canonical(minute.rows.assign(time=floored)) == canonical(day.rows)
    with pytest.raises(ValidationError, match=r"^The 'time_resolution' parameter of Publisher must be "
                                              r"one of 'day', 'hour', 'minute'; got 'seconds'\.$"):
        medanon.Publisher("clinsimrr", epsilon=1, time_resolution="seconds")


def test_whole_days_make_time_patterns_less_unique_but_do_not_stop_linking():
    """What the column does not protect: an adversary who knows every patient's admission dates
    singles out a released patient by the pattern of offsets between admissions. Coarser times
    single out fewer, whole days still many (the manifest says so)."""
    import medanon

    ehr = medanon.EhrRecords.synthetic(2000, seed=2023)
    admissions = ehr.data.events.drop_duplicates(["patient", "admission"])
    linked = {}
    for resolution, units in TIME_RESOLUTIONS.items():
        release = medanon.Publisher("umaxrr", epsilon=1, seed=1,
                                    time_resolution=resolution).publish(ehr)
        rows = release.rows.drop_duplicates(["patient", "admission"])
        published = rows.groupby("patient")["time"].agg(
            lambda s, units=units: tuple(round(float(t) * units) for t in s))
        known = admissions.assign(t=np.round(published_times(admissions["time"], resolution) * units))
        patterns = known.groupby("patient")["t"].agg(lambda s: tuple(int(t) for t in s))
        counts = patterns.value_counts()
        several = published[published.map(len) > 1]
        linked[resolution] = sum(counts[p] == 1 for p in several) / len(several)
    # 2,000 patients: 361 of the released ones have several admissions; minute 361, hour 352,
    # day 274 of them are singled out (docs/algorithms/clinsim.md gives the same at 5,000)
    assert linked["minute"] > 0.99 and linked["minute"] > linked["hour"] > linked["day"] > 0.5
