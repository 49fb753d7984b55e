"""Published CaseIDs (issue 41): keyed pseudonyms, the real-id option and its order rule."""

from __future__ import annotations

import hashlib
import hmac
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import medanon
from medanon.data.schema import Schema
from medanon.errors import StoreError, ValidationError
from medanon.pipeline.case_ids import (CaseIds, KnownPseudonyms, _hmac_sha256, _reduce_digests,
                                       case_id_map, check_injective, new_case_key, pseudonyms)
from medanon.pipeline.policy import SeriesPolicy
from medanon.published.case_ids import case_id_mode, highest_case_id, order_excluded
from medanon.random import randomness
from tests.property.test_periodic_methods import random_series


def test_pseudonyms_are_stable_keyed_and_carry_no_order() -> None:
    key = bytes(range(32))
    ids = [str(i) for i in range(10_000_000, 10_000_400)]
    once, again = pseudonyms(key, ids), pseudonyms(key, ids)
    assert (once == again).all()
    assert all(len(p) == 16 and p[0] != "0" for p in once)
    assert len(set(once)) == len(ids)
    other = pseudonyms(bytes(32), ids)
    assert not set(once) & set(other)
    # receipt order (the real ids' order) and pseudonym order: about half the pairs invert
    ranks = pd.Series(once.astype(np.int64)).rank().to_numpy()
    pairs = np.subtract.outer(ranks, ranks)[np.triu_indices(len(ids), 1)]
    inverted = (pairs > 0).mean()
    assert 0.4 < inverted < 0.6   # sd of the share over 79,800 dependent pairs is about 0.03


def test_pseudonyms_are_the_hmac_of_each_stripped_case_id() -> None:
    """The pseudonym of CaseID c is HMAC-SHA256(key, str(c).strip()) onto [10^15, 10^16),
    whatever the input's type, repeats and spaces, and whatever a cache already holds."""
    key = bytes(range(32))

    def defined(c: object) -> str:
        mac = hmac.new(key, str(c).strip().encode("utf-8"), hashlib.sha256).digest()
        return str(10 ** 15 + int.from_bytes(mac, "big") % (9 * 10 ** 15))

    for ids in (["7", " 7", "7 ", "8", "7", "é"], [7, 7.0, "7", None, float("nan"), " 8"],
                pd.Series(["3", "3", " 4"], dtype="string"), np.array(["1", "2"], dtype=object),
                (c for c in ["5", "6"]), []):
        listed = list(ids.tolist() if hasattr(ids, "tolist") else ids)
        expected = [defined(c) for c in listed]
        assert pseudonyms(key, listed).tolist() == expected
        cache = KnownPseudonyms()
        assert pseudonyms(key, listed, known=cache).tolist() == expected
        assert pseudonyms(key, listed, known=cache).tolist() == expected  # from the cache
        held = dict(zip(cache.texts.tolist(), cache.shown.tolist()))
        assert held == {str(c).strip(): defined(c) for c in listed}
        assert cache.values.tolist() == [int(p) for p in cache.shown]
    case_ids = CaseIds("pseudonym", key)
    assert case_ids.of(["9", "9 "]).tolist() == [defined("9")] * 2 == case_ids.of(["9"]).tolist() * 2
    case_ids.forget()   # the map is dropped, the pseudonyms are not changed
    assert not len(case_ids._known) and case_ids.of(["9"]).tolist() == [defined("9")]


def _defined_pseudonym(key: bytes, case_id: object) -> str:
    """The pseudonym by its definition, one CaseID at a time with the standard library."""
    mac = hmac.new(key, str(case_id).strip().encode("utf-8"), hashlib.sha256).digest()
    return str(10 ** 15 + int.from_bytes(mac, "big") % (9 * 10 ** 15))


#: CaseIDs as they come: digits, padded with spaces, tabs or newlines, non-ASCII, empty
_case_id_texts = st.one_of(
    st.integers(0, 10 ** 12).map(str),
    st.builds(lambda pad, c, tail: pad + c + tail, st.sampled_from(["", " ", "\t", " \n "]),
              st.integers(0, 999).map(str), st.sampled_from(["", " ", "\u00a0", "\r\n"])),
    st.text(max_size=12),
    st.text(alphabet="é漢字ß0123456789 ", min_size=1, max_size=8))


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(st.lists(_case_id_texts, max_size=25), min_size=1, max_size=4),
       key=st.binary(min_size=32, max_size=32), sort=st.booleans())
def test_the_vectorized_pseudonyms_are_the_defined_ones(batches, key, sort) -> None:
    """Whatever the CaseIDs (repeated, padded, non-ASCII, sorted as a store lists them or
    not) and whatever earlier batches left in the cache, each pseudonym is the plain
    definition's (hmac, int.from_bytes, %, str), and the injectivity check passes them."""
    cache = KnownPseudonyms()
    case_ids = CaseIds("pseudonym", key)
    for ids in batches:
        ids = sorted(set(ids)) if sort else ids
        expected = [_defined_pseudonym(key, c) for c in ids]
        assert pseudonyms(key, ids, known=cache).tolist() == expected
        assert pseudonyms(key, ids).tolist() == expected
        assert case_ids.checked(ids, where="test").tolist() == expected
        assert case_ids.of(np.asarray(ids, dtype=object)).tolist() == expected   # again
    assert len(set(cache.texts.tolist())) == len(cache)   # each CaseID held once


@pytest.mark.parametrize("chunk", [1, 3, 4, 5, 1 << 15])
def test_the_pseudonyms_are_the_defined_ones_across_hashing_chunks(monkeypatch, chunk) -> None:
    """The digests hashed a chunk at a time land in their CaseIDs' rows: chunks of one, of a
    divisor of the count, of neither, and the one chunk of a short list."""
    from medanon.pipeline import case_ids as module
    monkeypatch.setattr(module, "_MAC_CHUNK", chunk)
    key = bytes(range(1, 33))
    ids = [str(10 ** 9 + 7919 * i) for i in range(12)] + ["é", "漢字"]
    assert pseudonyms(key, ids).tolist() == [_defined_pseudonym(key, c) for c in ids]
    assert pseudonyms(key, []).tolist() == []


def test_the_digest_reduction_is_exact_at_its_bounds() -> None:
    """The uint64 reduction modulo 9 * 10^15 equals Python's integers on the digests that
    stress its overflow bound (every byte 255), on zero, and on random ones."""
    generator = np.random.default_rng(46)
    digests = np.concatenate([np.full((1, 32), 255, dtype=np.uint8),
                              np.zeros((1, 32), dtype=np.uint8),
                              np.eye(32, dtype=np.uint8) * 255,
                              generator.integers(0, 256, (2000, 32), dtype=np.uint8)])
    expected = [int.from_bytes(row.tobytes(), "big") % (9 * 10 ** 15) for row in digests]
    assert _reduce_digests(digests).tolist() == expected


def test_a_shared_pseudonym_is_refused_naming_the_two_case_ids(monkeypatch) -> None:
    """The integer check finds a clash and the refusal names the two CaseIDs."""
    import medanon.pipeline.case_ids as module

    def clashing(key: bytes, texts: list[str]) -> np.ndarray:
        return np.asarray([10 ** 15 + (1 if t in ("12", "34") else int(t)) for t in texts],
                          dtype=np.int64)

    monkeypatch.setattr(module, "_pseudonym_values", clashing)
    case_ids = CaseIds("pseudonym", bytes(32))
    assert case_ids.checked(["12", "56"], where="here").tolist() == [str(10 ** 15 + 1),
                                                                      str(10 ** 15 + 56)]
    with pytest.raises(StoreError, match="here: CaseIDs '(12|34)' and '(34|12)'"):
        case_ids.checked(["56", "34", "12"], where="here")


def test_distinct_of_maps_distinct_case_ids_and_declines_two_published_as_one(
        monkeypatch) -> None:
    """``CaseIds.distinct_of`` is ``of`` for CaseIDs that publish as distinct pseudonyms, and
    None (no error) when two strip to one text or their pseudonyms clash."""
    import medanon.pipeline.case_ids as module

    case_ids = CaseIds("pseudonym", bytes(32))
    ids = ["7", "3", "12"]
    assert case_ids.distinct_of(ids).tolist() == CaseIds("pseudonym", bytes(32)).of(ids).tolist()
    assert case_ids.distinct_of([]).tolist() == []
    assert case_ids.distinct_of(["3", " 3"]) is None   # one stripped text
    assert case_ids.distinct_of(["3", "3"]) is None

    def clashing(key: bytes, texts: list[str]) -> np.ndarray:
        return np.asarray([10 ** 15 + (1 if t in ("12", "34") else int(t)) for t in texts],
                          dtype=np.int64)

    monkeypatch.setattr(module, "_pseudonym_values", clashing)
    clash = CaseIds("pseudonym", bytes(32))
    assert clash.distinct_of(["12", "56"]).tolist() == [str(10 ** 15 + 1), str(10 ** 15 + 56)]
    assert clash.distinct_of(["56", "34", "12"]) is None


def test_the_precomputed_hmac_is_hmac_sha256() -> None:
    """The pseudonyms' HMAC (padded key blocks hashed once) gives hmac.digest's bytes for keys
    shorter than, equal to and longer than SHA-256's 64-byte block, and any message."""
    generator = np.random.default_rng(43)
    for size in (0, 1, 32, 63, 64, 65, 200):
        key = generator.bytes(size)
        mac = _hmac_sha256(key)
        for length in (0, 1, 7, 55, 56, 64, 119, 1000):
            message = generator.bytes(length)
            assert mac(message) == hmac.digest(key, message, "sha256")


def test_seeded_keys_follow_the_seed_and_secure_keys_are_fresh() -> None:
    assert new_case_key(randomness(5)) == new_case_key(randomness(5))
    assert new_case_key(randomness(5)) != new_case_key(randomness(6))
    assert new_case_key(randomness()) != new_case_key(randomness())
    assert len(new_case_key(randomness())) == 32


def test_a_shared_pseudonym_is_refused_naming_both_cases() -> None:
    with pytest.raises(StoreError, match="'1' and '2'"):
        check_injective(["1", "2", "3"], np.array(["x", "x", "y"], dtype=object), where="here")
    check_injective(["1", "1", "2"], np.array(["x", "x", "y"], dtype=object), where="here")


def test_case_ids_validate_their_mode_and_key() -> None:
    with pytest.raises(ValidationError, match="case_ids"):
        CaseIds("hashed", bytes(32))
    with pytest.raises(ValidationError, match="32-byte key"):
        CaseIds("pseudonym", b"short")
    assert list(CaseIds.real().of([7, "8"])) == ["7", "8"]


def test_the_order_rule_excludes_new_cases_below_an_earlier_case_id() -> None:
    case = np.array(["9", "12", "100", "5"], dtype=object)
    new = np.array([True, True, True, False])
    # numeric order: 9 < 11 excluded, 12 and 100 above, 5 is old (linked) already
    assert order_excluded(case, new, ["3", "11"]).tolist() == [True, False, False, False]
    assert not order_excluded(case, new, []).any()
    assert highest_case_id(["9", "100", "11"]) == "100"
    assert highest_case_id(["b", "a10"]) == "b"
    assert case_id_mode({}) == "real" and case_id_mode({"case_ids": {"mode": "pseudonym"}}) \
        == "pseudonym"


def test_a_series_policy_records_the_case_id_form() -> None:
    assert SeriesPolicy.of("ppms++", k=3, theta=0.5).case_ids == "pseudonym"
    real = SeriesPolicy.of("ppms++", k=3, theta=0.5, case_ids="real")
    assert real.case_ids == "real" and real.to_dict()["parameters"]["case_ids"] == "real"
    with pytest.raises(ValidationError, match="case_ids"):
        SeriesPolicy.of("ppms++", k=3, theta=0.5, case_ids="hashed")


def _store_series(tmp_path, records):
    data = medanon.Dataset(records, Schema.papers())
    store = medanon.ReleaseStore.create_or_open(tmp_path / "s.duckdb", Schema.papers())
    store.ingest(data)
    return store


def test_the_store_keeps_one_key_and_maps_pseudonyms_back(tmp_path) -> None:
    from medanon.pipeline.methods import periodic_method
    from medanon.pipeline.publish import publish_periods
    from medanon.pipeline.checks import Acknowledgements

    records = random_series(3, periods=3)
    store = _store_series(tmp_path, records)
    method = periodic_method("ppms++", k=3, theta=0.5, on_infeasible="raise-theta",
                             max_withheld=1.0)
    publish_periods(store, method, ["2020Q1"], randomness(2), acknowledged=Acknowledgements(seeded=True))
    key = store.case_key()
    assert key is not None and len(key) == 32
    with pytest.raises(StoreError, match="already holds a CaseID key"):
        store.keep_case_key(bytes(32))
    with pytest.raises(StoreError, match="publishes pseudonym CaseIDs"):
        publish_periods(store, method, ["2020Q2"], randomness(2), case_ids="real",
                        acknowledged=Acknowledgements(seeded=True))
    publish_periods(store, method, ["2020Q2"], randomness(9), acknowledged=Acknowledgements(seeded=True))
    assert store.case_key() == key   # the store's key, whatever the later release's seed
    mapping = case_id_map(store)
    assert set(mapping["period"]) == {"2020Q1", "2020Q2"}
    assert (mapping["case_id"] == pseudonyms(key, mapping["real_case_id"])).all()
    real = {c for frame in records.values() for c in frame["case_id"]}
    assert set(mapping["real_case_id"]) <= real
    assert not set(mapping["case_id"]) & real
    manifest = store.manifest("2020Q2")
    assert manifest["case_ids"]["mode"] == "pseudonym"
    # the key is operator-only: in no manifest, in no published row
    assert key.hex() not in json.dumps(store.manifests())
    assert "pseudonym" in manifest["columns"]["roles"]["case_id"]["holds"]
    store.close()


def test_real_case_ids_are_read_in_order_and_the_declared_highest_is_checked() -> None:
    from medanon.pipeline.methods import periodic_method
    from medanon.published.links import link
    from medanon.published.series import PublishedSeries
    from medanon.verify import verify_series

    records = random_series(3, periods=3)
    # a case new in 2020Q2 whose CaseID is below every CaseID of 2020Q1: received before it
    q2 = records["2020Q2"]
    late = q2["case_id"].astype(int).max()
    records["2020Q2"] = q2.assign(case_id=q2["case_id"].replace({str(late): "0"}))
    method = periodic_method("ppms++", k=3, theta=0.5, on_infeasible="raise-theta",
                             max_withheld=1.0)
    series = medanon.Publisher(method, seed=2, case_ids="real").publish(
        medanon.Dataset(records, Schema.papers()), allow_violations=True,
        allow_unknown_terms=True)
    manifest = series.manifests["2020Q2"]
    assert manifest["case_ids"]["mode"] == "real"
    assert manifest["case_ids"]["highest_earlier"] == highest_case_id(
        series.releases["2020Q1"]["case_id"])
    assert "receipt order" in manifest["columns"]["roles"]["case_id"]["holds"]
    links = link(series, "2020Q2")
    assert links.order_old is not None
    assert "0" in set(links.view.case)
    assert set(links.view.case[links.order_old]) == {"0"}
    assert (links.old[links.order_old]).all()
    # a manifest that declares a lower highest CaseID than the series publishes is a violation
    tampered = {**series.manifests, "2020Q2": {**manifest, "case_ids": {
        **manifest["case_ids"], "highest_earlier": "1"}}}
    found = verify_series(PublishedSeries(series.releases, tampered, series.qids,
                                          series.sensitive, "tampered"))
    assert any("highest_earlier" in v for r in found.releases for v in r.violations)
    honest = verify_series(series)
    assert not any("highest_earlier" in v for r in honest.releases for v in r.violations)


def test_a_previous_series_under_another_key_is_refused_and_the_key_continues_it() -> None:
    from medanon.pipeline.methods import periodic_method

    records = random_series(5, periods=3)
    data = medanon.Dataset(records, Schema.papers())
    method = periodic_method("ppms++", k=3, theta=0.5, on_infeasible="raise-theta",
                             max_withheld=1.0)
    first = medanon.Publisher(method, rng=randomness())
    done = first.publish(data, ["2020Q1"], allow_unknown_terms=True)
    with pytest.raises(ValidationError, match="another CaseID key"):
        medanon.Publisher(method, rng=randomness()).publish(data, ["2020Q2"], previous=done,
                                                            allow_unknown_terms=True)
    with pytest.raises(ValidationError, match="publishes pseudonym CaseIDs"):
        medanon.Publisher(method, case_ids="real").publish(data, ["2020Q2"], previous=done,
                                                           allow_unknown_terms=True)
    later = medanon.Publisher(method, rng=randomness(), case_key=first.case_ids.key)
    both = later.publish(data, ["2020Q2"], previous=done, allow_unknown_terms=True)
    shared = set(both.releases["2020Q1"]["case_id"]) & set(both.releases["2020Q2"]["case_id"])
    assert shared   # follow-ups link across the two publishers


def test_a_new_case_id_with_a_published_pseudonym_is_refused_naming_both(tmp_path,
                                                                            monkeypatch) -> None:
    """The check reads the periods released now and the published pseudonyms (issue 43): a new
    CaseID whose pseudonym a released case holds is refused; a follow-up of that case is not."""
    from medanon.pipeline import case_ids as module
    from medanon.pipeline.methods import periodic_method
    from medanon.pipeline.publish import publish_periods
    from medanon.pipeline.checks import Acknowledgements

    records = random_series(3, periods=3)
    store = _store_series(tmp_path, records)
    method = periodic_method("ppms++", k=3, theta=0.5, on_infeasible="raise-theta",
                             max_withheld=1.0)
    publish_periods(store, method, ["2020Q1"], randomness(2), acknowledged=Acknowledgements(seeded=True))
    first = set(records["2020Q1"]["case_id"].astype(str))
    released = sorted(set(store.ingested_case_ids(["2020Q1"])))[0]
    newcomer = sorted(set(records["2020Q2"]["case_id"].astype(str)) - first)[0]
    assert store.ingested_case_ids(["2020Q2"], among=[newcomer, released, "nope"]) == sorted(
        {newcomer, released} & set(records["2020Q2"]["case_id"].astype(str)))
    genuine = module._pseudonym_values   # what every pseudonym is computed with

    def colliding(key: bytes, texts: list[str]) -> np.ndarray:
        out = genuine(key, texts)
        out[[t == newcomer for t in texts]] = genuine(key, [released])[0]
        return out

    monkeypatch.setattr(module, "_pseudonym_values", colliding)
    with pytest.raises(StoreError, match=rf"{released!r} and {newcomer!r}|"
                                         rf"{newcomer!r} and {released!r}"):
        publish_periods(store, method, ["2020Q2"], randomness(2), acknowledged=Acknowledgements(seeded=True))
    assert store.published_periods() == ["2020Q1"]
    monkeypatch.setattr(module, "_pseudonym_values", genuine)
    publish_periods(store, method, ["2020Q2"], randomness(2), acknowledged=Acknowledgements(seeded=True))
    assert store.published_periods() == ["2020Q1", "2020Q2"]
    store.close()


def test_the_history_is_linked_from_the_published_case_ids_alone(tmp_path) -> None:
    """The pseudonym check hands the release which of its CaseIDs are published (issue 43): the
    linked history read from those alone is the one read from every CaseID of the period (a
    CaseID never published selects no row); the mask marks exactly the published pseudonyms."""
    from medanon.pipeline.checks import Acknowledgements
    from medanon.pipeline.history import store_history
    from medanon.pipeline.methods import periodic_method
    from medanon.pipeline.publish import _check_pseudonyms, _linked_of_published, publish_periods
    from medanon.pipeline.case_ids import resolve

    records = random_series(3, periods=3)
    store = _store_series(tmp_path, records)
    method = periodic_method("ppms++", k=3, theta=0.5, on_infeasible="raise-theta",
                             max_withheld=1.0)
    publish_periods(store, method, ["2020Q1", "2020Q2"], randomness(2),
                    acknowledged=Acknowledgements(seeded=True))
    chosen, _ = resolve("pseudonym", randomness(2), store.case_key())
    new, seed = _check_pseudonyms(store, chosen, ["2020Q3"])
    assert seed is not None and 0 < seed.mask.sum() < len(new)
    cases = chosen.of(new)
    assert list(seed.pseudonyms) == list(cases)
    shown = set(store.published_case_ids(cases))
    assert seed.mask.tolist() == [c in shown for c in cases]
    history = store_history(store, store.schema.load_hierarchies())
    whole = history(cases, "2020Q3")
    seeds = []

    def recorded(given, label):
        seeds.append(list(given))
        return history(given, label)

    narrowed = _linked_of_published(recorded, {"2020Q3": seed})(cases, "2020Q3")
    assert seeds[-1] == [c for c, m in zip(cases, seed.mask) if m]   # the published ones only
    assert list(whole.releases) == list(narrowed.releases) == ["2020Q1", "2020Q2"]
    assert sum(map(len, whole.releases.values())) > 0
    for period, rows in whole.releases.items():
        pd.testing.assert_frame_equal(rows, narrowed.releases[period])
    # the CaseIDs in another order than the mask was made for: given whole, not masked
    reordered = list(cases)[::-1]
    _linked_of_published(recorded, {"2020Q3": seed})(reordered, "2020Q3")
    assert seeds[-1] == reordered
    # nothing published yet: no mask, the seed given whole
    (tmp_path / "fresh").mkdir()
    fresh = _store_series(tmp_path / "fresh", records)
    assert _check_pseudonyms(fresh, chosen, ["2020Q1"])[1] is None
    fresh.close()
    store.close()


def test_the_ingested_case_ids_are_the_distinct_ones_sorted(tmp_path) -> None:
    """``ingested_case_ids`` reads the sorted ids and keeps each run of equal ones once (no
    DISTINCT, issue 43): the same list as ``SELECT DISTINCT ... ORDER BY 1``, with a case on
    several rows (a follow-up in two periods), a missing id (str(None), sorted last as SQL
    sorts NULLs) and an ``among``."""
    from medanon.store.duckdb_store import _runs_once

    records = random_series(3, periods=2)
    store = _store_series(tmp_path, records)
    for periods in (["2020Q1"], ["2020Q1", "2020Q2"], None):
        chosen = [records[p] for p in (periods or records)]
        cases = pd.concat(chosen)["case_id"].astype(str)
        assert cases.duplicated().any() == (periods != ["2020Q1"])   # follow-ups
        assert store.ingested_case_ids(periods) == sorted(set(cases))
        among = [*sorted(set(cases))[::2], "nope"]
        assert store.ingested_case_ids(periods, among=among) == sorted(set(cases) & set(among))
    cells = np.array(["a", "a", "b", "c", "c", "c", None, None], dtype=object)
    assert _runs_once(cells).tolist() == ["a", "b", "c", None]
    assert _runs_once(np.array(["a"], dtype=object)).tolist() == ["a"]
    assert _runs_once(np.array([], dtype=object)).tolist() == []
