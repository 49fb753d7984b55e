"""Published CaseIDs: keyed pseudonyms by default, the real ones only when the holder must.

FAERS numbers cases in the order it receives them, so a real CaseID tells when its case was
first reported, and its order against the CaseIDs of earlier releases lets an L-adversary
exclude a case first published in period P whose CaseID is below one published before P (it was
received before P, so it is not the target: issue 41). A published CaseID therefore carries
linkage and nothing else:

* ``pseudonym`` (the default): the published CaseID is ``HMAC-SHA256(key, real CaseID)`` mapped
  to a 16-digit decimal integer (:func:`pseudonyms`). The key is 32 bytes per store, made at the
  store's first release (:func:`new_case_key`) and kept in the store as an operator-only fact
  (:meth:`~medanon.store.ReleaseStore.case_key`), never exported. The same real CaseID gets the
  same pseudonym in every release of the store, so the B-, F- and L-linkage, follow-ups and
  FDA's latest-caseversion rule work on the published pseudonyms as they did on the real ids;
  without the key the pseudonyms are unordered with respect to receipt (a keyed hash) and say
  nothing of time. Two real CaseIDs that would share a pseudonym are refused
  (:func:`check_injective`): at 16 digits that happens with probability about n² / 1.8·10^16
  for n cases in a store, and the refusal names the two.
* ``real``: the holder publishes its real CaseIDs (recorded in every manifest, ``case_ids``, and
  in the ``case_id`` column's role). The gate, ``medanon verify`` and ``medanon attack`` then
  read CaseID order as adversary knowledge (:mod:`medanon.published.case_ids`).

A seeded release (tests and research only, ``--allow-seeded``) derives its key from the seed so
that seeded runs stay reproducible byte for byte; the seed is published, so those pseudonyms
hide nothing from a reader who knows the real CaseIDs' range (it can compute them all).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..data.records import factorize_texts, object_array
from ..errors import StoreError, ValidationError
from ..published.case_ids import CASE_ID_MODES, PSEUDONYM_DIGITS, case_ids_entry
from ..random import Randomness

__all__ = ["CASE_ID_MODES", "CaseIds", "KEY_BYTES", "KnownPseudonyms", "case_id_map",
           "check_injective", "new_case_key", "pseudonyms"]

#: bytes of a store's CaseID key
KEY_BYTES = 32
_LOW = 10 ** (PSEUDONYM_DIGITS - 1)
_SPAN = 9 * _LOW
_SEEDED_LABEL = b"medanon case-id key\x00"


def new_case_key(rng: Randomness) -> bytes:
    """A store's CaseID key, from the release's randomness source: 32 bytes of OS entropy
    (a secure source), or a function of the seed (a seeded source, so that seeded runs stay
    reproducible). Nothing is drawn from ``rng``'s streams, so the release's other random
    choices are what they would be without it."""
    if rng.seeded:
        seed = list(rng.seed) if isinstance(rng.seed, tuple) else rng.seed
        return hashlib.sha256(_SEEDED_LABEL + json.dumps(seed).encode("ascii")).digest()
    return secrets.token_bytes(KEY_BYTES)


def pseudonyms(key: bytes, ids: Iterable[object], *,
               known: KnownPseudonyms | None = None) -> np.ndarray:
    """The published pseudonym of each real CaseID (as text): HMAC-SHA256 under ``key`` of the
    CaseID's text (stripped), read as a big-endian integer and mapped onto the 16-digit
    decimals [10^15, 10^16) (``str(10^15 + int.from_bytes(mac, "big") % (9 * 10^15))``).
    Each distinct CaseID is hashed once; ``known`` (under the same key) holds those hashed
    before and gains the new ones, so that a release that maps the same CaseIDs at several
    steps hashes each once."""
    known = KnownPseudonyms() if known is None else known
    at = known.positions(key, ids)
    return known.shown[at] if len(at) else np.zeros(0, dtype=object)


class KnownPseudonyms:
    """The pseudonyms computed so far under one key, kept compact: the distinct stripped real
    CaseIDs (``texts``), each one's pseudonym as an integer (``values``, 16 digits fit int64)
    and as text (``shown``, the objects every lookup hands out, so that the release's frames
    share them). A lookup is an array comparison or one hash-table pass over the CaseIDs, not
    a dict lookup per CaseID, and a period's CaseIDs mapped again (the release maps them at
    three steps) are usually the same array in the same order: the comparison alone."""

    def __init__(self) -> None:
        self.texts = np.zeros(0, dtype=object)
        self.values = np.zeros(0, dtype=np.int64)
        self.shown = np.zeros(0, dtype=object)
        self._index: pd.Index | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def clear(self) -> None:
        """Drop every pseudonym held (a later lookup hashes its CaseIDs again)."""
        self.texts = np.zeros(0, dtype=object)
        self.values = np.zeros(0, dtype=np.int64)
        self.shown = np.zeros(0, dtype=object)
        self._index = None

    def positions(self, key: bytes, ids: Iterable[object]) -> np.ndarray:
        """The position in ``texts`` of each CaseID's stripped text, hashing (under ``key``)
        and adding those not held yet."""
        raw = object_array(ids)
        if self._same_texts(raw):   # already stripped, distinct, and held in this order
            return np.arange(len(raw))
        which, distinct = _distinct_stripped(raw)
        if self._same_texts(distinct):
            return which
        at = self._index_of(distinct)
        missing = np.flatnonzero(at < 0)
        if len(missing):
            fresh = distinct[missing]
            at[missing] = len(self) + np.arange(len(missing))
            values = _pseudonym_values(key, fresh.tolist())
            shown = np.empty(len(values), dtype=object)
            shown[:] = [str(v) for v in values.tolist()]
            self.texts = np.concatenate([self.texts, fresh]) if len(self) else fresh
            self.values = np.concatenate([self.values, values])
            self.shown = np.concatenate([self.shown, shown]) if len(self.shown) else shown
            self._index = None
        return at[which]

    def _same_texts(self, raw: np.ndarray) -> bool:
        """Whether ``raw`` is ``texts`` element for element (all of it text: a text equal to
        a held one is stripped already, so it is its own stripped form)."""
        return (len(raw) == len(self) > 0
                and pd.api.types.infer_dtype(raw, skipna=False) == "string"
                and bool((raw == self.texts).all()))

    def _index_of(self, distinct: np.ndarray) -> np.ndarray:
        """The position of each of ``distinct`` (stripped texts) in ``texts``, -1 if absent."""
        if not len(self):
            return np.full(len(distinct), -1, dtype=np.intp)
        if self._index is None:
            self._index = pd.Index(self.texts, dtype=object)
        return self._index.get_indexer(pd.Index(distinct, dtype=object))


def _pseudonym_values(key: bytes, texts: list[str]) -> np.ndarray:
    """The pseudonym of each of ``texts`` (stripped CaseIDs) as int64: one HMAC per text, then
    the digests reduced modulo 9 * 10^15 together (:func:`_reduce_digests`)."""
    mac = _hmac_sha256(key)
    # the digests are written a chunk at a time into one buffer: a digest is a bytes object
    # of 72 bytes, and the 450k of a quarter held at once were 32 MiB of fresh pages (8k page
    # faults) on top of the buffer, where each chunk's digests reuse the memory the last freed
    digests = bytearray(len(texts) * _DIGEST_BYTES)
    for start in range(0, len(texts), _MAC_CHUNK):
        chunk = texts[start:start + _MAC_CHUNK]
        digests[start * _DIGEST_BYTES:(start + len(chunk)) * _DIGEST_BYTES] = b"".join(
            [mac(text.encode("utf-8")) for text in chunk])
    matrix = np.frombuffer(digests, dtype=np.uint8).reshape(len(texts), _DIGEST_BYTES)
    return (_reduce_digests(matrix) + np.uint64(_LOW)).astype(np.int64)


_DIGEST_BYTES = 32
#: CaseIDs hashed per chunk by _pseudonym_values
_MAC_CHUNK = 1 << 15
#: 256^(31 - j) mod _SPAN: the weight of a digest's byte j in ``int.from_bytes(digest, "big")``
_BYTE_WEIGHTS = np.array([pow(256, _DIGEST_BYTES - 1 - j, _SPAN) for j in range(_DIGEST_BYTES)],
                         dtype=np.uint64)
#: bytes summed before a reduction: 8 * 255 * (_SPAN - 1) < 1.84 * 10^19 < 2^64
_GROUP = 8
assert _GROUP * 255 * (_SPAN - 1) < 2 ** 64 and _DIGEST_BYTES // _GROUP * _SPAN < 2 ** 64


def _reduce_digests(digests: np.ndarray) -> np.ndarray:
    """``int.from_bytes(row, "big") % _SPAN`` of each row of ``digests`` (n x 32 bytes), in
    uint64 without overflow: the integer is the sum of each byte times 256^(31 - j), which
    is congruent to the byte times its weight below ``_SPAN``; eight such products sum below
    2^64 (the module asserts the bound), so each group of eight bytes is summed and reduced,
    and the four reduced groups (below 4 * _SPAN) once more."""
    columns = np.ascontiguousarray(digests.T)   # one contiguous row per byte position
    span = np.uint64(_SPAN)
    total = np.zeros(len(digests), dtype=np.uint64)
    for first in range(0, _DIGEST_BYTES, _GROUP):
        part = columns[first].astype(np.uint64) * _BYTE_WEIGHTS[first]
        for j in range(first + 1, first + _GROUP):
            part += columns[j] * _BYTE_WEIGHTS[j]
        part %= span
        total += part
    total %= span
    return total


#: XOR tables of RFC 2104's inner and outer pads, for ``bytes.translate``
_INNER_PAD = bytes(b ^ 0x36 for b in range(256))
_OUTER_PAD = bytes(b ^ 0x5C for b in range(256))
_SHA256_BLOCK = 64


def _hmac_sha256(key: bytes) -> Callable[[bytes], bytes]:
    """HMAC-SHA256 under ``key`` (RFC 2104: H((K ^ opad) || H((K ^ ipad) || m))), with the two
    padded key blocks hashed once and their states copied for each message. The same bytes as
    ``hmac.digest(key, m, "sha256")`` (a unit test compares them), at about half its cost per
    CaseID, which at 450k CaseIDs a quarter is what the pseudonyms cost."""
    if len(key) > _SHA256_BLOCK:
        key = hashlib.sha256(key).digest()
    padded = key.ljust(_SHA256_BLOCK, b"\0")
    inner, outer = (hashlib.sha256(padded.translate(_INNER_PAD)),
                    hashlib.sha256(padded.translate(_OUTER_PAD)))

    def mac(message: bytes) -> bytes:
        first = inner.copy()
        first.update(message)
        second = outer.copy()
        second.update(first.digest())
        return second.digest()

    return mac


def _distinct_stripped(ids: Iterable[object]) -> tuple[np.ndarray, np.ndarray]:
    """``str(c).strip()`` of each CaseID, as codes into its distinct texts. When every CaseID
    is already text, each distinct text is stripped once (a quarter's CaseIDs repeat across its
    rows, and the published ones are stripped already, so usually nothing changes)."""
    raw = object_array(ids)
    if len(raw) and pd.api.types.infer_dtype(raw, skipna=False) == "string":
        which, distinct = factorize_texts(raw)
        listed = distinct.tolist()
        stripped = [c.strip() for c in listed]
        if stripped == listed:
            return which, np.asarray(distinct, dtype=object)
        again, merged = pd.factorize(np.asarray(stripped, dtype=object))
        return again[which], np.asarray(merged, dtype=object)
    return pd.factorize(np.asarray([str(c).strip() for c in raw.tolist()], dtype=object))


def check_injective(real: Iterable[object], published: np.ndarray, *, where: str) -> None:
    """Refuse when two real CaseIDs share a pseudonym (published linkage would merge them).

    Raises:
        StoreError: naming the two CaseIDs.
    """
    which, distinct = _distinct_stripped(real)
    published = np.asarray(published, dtype=object)
    if len(which) != len(published):
        raise ValueError("check_injective: one published CaseID per real one")
    # the distinct (real, pseudonym) pairs; a clash is a pseudonym that two of them share
    first = np.unique(which, return_index=True)[1]
    if len(pd.unique(published[first])) == len(first):   # the common case: all distinct
        return
    frame = pd.DataFrame({"real": distinct[which[first]], "pseudonym": published[first]})
    clash = frame[frame["pseudonym"].duplicated(keep=False)]
    if len(clash):
        pair = clash.sort_values("pseudonym").head(2)["real"].tolist()
        raise StoreError(f"{where}: CaseIDs {pair[0]!r} and {pair[1]!r} have the same keyed "
                         f"pseudonym, so their releases would link as one case. Nothing was "
                         f"published; start the series in a new store (a new key), or publish "
                         f"with --case-ids real.")


@dataclass(frozen=True)
class CaseIds:
    """How a series publishes its CaseIDs: ``pseudonym`` under ``key``, or ``real``."""

    mode: str = "pseudonym"
    key: bytes | None = None
    #: pseudonyms already computed under ``key``: a release maps the same CaseIDs at several
    #: steps (the injectivity check, the period's cases, its records, the next period)
    _known: KnownPseudonyms = field(default_factory=lambda: KnownPseudonyms(), init=False,
                                    repr=False, compare=False)

    def __post_init__(self) -> None:
        check_choice(self.mode, name="case_ids", owner="CaseIds", choices=CASE_ID_MODES)
        if self.mode == "pseudonym" and (not isinstance(self.key, bytes)
                                         or len(self.key) != KEY_BYTES):
            raise ValidationError(f"CaseIds: pseudonymous CaseIDs need a {KEY_BYTES}-byte key.")

    @classmethod
    def real(cls) -> CaseIds:
        return cls("real", None)

    def of(self, ids: Iterable[object]) -> np.ndarray:
        """The published CaseID of each real one (text)."""
        if self.mode == "real":
            return np.asarray([str(c) for c in ids], dtype=object)
        # the only other mode is "pseudonym", whose key __post_init__ checked is bytes
        assert self.key is not None
        return pseudonyms(self.key, ids, known=self._known)

    def checked(self, ids: Iterable[object], *, where: str) -> np.ndarray:
        """:meth:`of` the CaseIDs (pseudonymous), refusing two real ones that share a
        pseudonym (:func:`check_injective`), which is checked on the pseudonyms' integers.

        Raises:
            StoreError: naming the two CaseIDs.
        """
        assert self.mode == "pseudonym" and self.key is not None
        raw = object_array(ids)
        known = self._known
        at = known.positions(self.key, raw)
        # sorted, a shared value sits next to its twin (numpy's unique hashes int64, at several
        # times the cost of this sort)
        values = np.sort(known.values[np.flatnonzero(np.bincount(at, minlength=len(known)))])
        if (values[1:] == values[:-1]).any():
            # a clash: the text-level check finds the same one and names its two CaseIDs
            check_injective(raw, known.shown[at], where=where)
        return known.shown[at] if len(at) else np.zeros(0, dtype=object)

    def distinct_of(self, ids: Iterable[object]) -> np.ndarray | None:
        """:meth:`of` the CaseIDs ``ids`` (pseudonymous), or None when two of them would be
        published as one: they strip to the same text, or their pseudonyms clash. Then
        grouping rows by ``ids`` groups them as by their published CaseIDs (what a release
        that groups the real CaseIDs and maps them afterwards relies on; no error is raised
        here, :meth:`checked` names a clash)."""
        assert self.mode == "pseudonym" and self.key is not None
        known = self._known
        at = known.positions(self.key, object_array(ids))
        if not len(at):
            return np.zeros(0, dtype=object)
        # two ids at one position strip to one text; two positions of one value clash
        if int(np.bincount(at, minlength=len(known)).max()) > 1:
            return None
        values = np.sort(known.values[at])
        if bool((values[1:] == values[:-1]).any()):
            return None
        return known.shown[at]

    def forget(self) -> None:
        """Drop the pseudonyms computed so far (a later call hashes its CaseIDs again): a
        period's CaseIDs are mapped before its method runs, and what is held of them (the real
        texts, the pseudonyms' integers and texts, the index of a lookup) should not come on
        top of the method's peak memory (as the dict it was, about 80 MB at 450k cases). The
        pseudonyms' texts the published records hold stay with them."""
        self._known.clear()

    def records(self, records: pd.DataFrame, column: str) -> pd.DataFrame:
        """``records`` with the CaseID column published (a copy; unchanged under ``real``)."""
        if self.mode == "real":
            return records
        out = records.copy(deep=False)   # the other columns are shared, not copied
        out[column] = self.of(records[column].to_numpy())
        return out

    def manifest(self) -> dict:
        """The manifest's ``case_ids`` entry (:func:`medanon.published.case_ids.case_ids_entry`)."""
        return case_ids_entry(self.mode)


def resolve(mode: str, rng: Randomness, key: bytes | None) -> tuple[CaseIds, bytes | None]:
    """The CaseIds of a release and the key to keep when it is new (None: ``key`` stands)."""
    check_choice(mode, name="case_ids", owner="release", choices=CASE_ID_MODES)
    if mode == "real":
        return CaseIds.real(), None
    if key is not None:
        return CaseIds("pseudonym", key), None
    fresh = new_case_key(rng)
    return CaseIds("pseudonym", fresh), fresh


def case_id_map(store, periods: Iterable[str] | None = None) -> pd.DataFrame:
    """Operator only: the real CaseID behind each published one in a store.

    Args:
        store: An open :class:`~medanon.store.ReleaseStore`.
        periods: The published periods to cover (default: all).

    Returns:
        One row per (period, published case): ``period``, ``case_id`` (as published) and
        ``real_case_id``; under ``real`` CaseIDs the two are equal.
    """
    manifests = store.manifests()
    key = store.case_key()
    wanted = list(manifests) if periods is None else list(periods)
    frames = []
    for label in wanted:
        published = pd.Index(store.release_cases(label))
        mode = (manifests[label].get("case_ids") or {}).get("mode", "real")
        real = pd.Series(store.records(label)[store.schema.case_id].astype(str).unique())
        shown = real.to_numpy() if mode == "real" else pseudonyms(key, real)
        lookup = pd.Series(real.to_numpy(), index=shown)
        lookup = lookup[lookup.index.isin(published)]
        frames.append(pd.DataFrame({"period": label, "case_id": published.to_numpy(),
                                    "real_case_id": lookup.reindex(published).to_numpy()}))
    if not frames:
        return pd.DataFrame(columns=["period", "case_id", "real_case_id"])
    return pd.concat(frames, ignore_index=True)


def mode_of(manifests: Mapping[str, Mapping]) -> str | None:
    """The CaseID mode of a published series (None: nothing published). A release written
    before pseudonyms existed published real CaseIDs."""
    modes = [(m.get("case_ids") or {}).get("mode", "real") for m in manifests.values()]
    return modes[-1] if modes else None
