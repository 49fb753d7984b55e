"""Longitudinal EHR data: patients, their ordered admissions, and the diagnosis codes of each.

This is the input of ClinSimRR (paper 003, Bonomi, Gousheh and Fan, CIKM 2023). A patient record is
a sequence of admissions; each admission carries the set of diagnosis codes recorded for it. The
model is one long table, :attr:`EhrData.events`, with one row per code occurrence::

    patient  admission  admission_rank  time   position  code
    "10006"  "142345"   0               0.0    0         "995"
    "10006"  "142345"   0               0.0    1         "996"
    ...

``admission_rank`` is the 0-based order of the admission within its patient, ``time`` the number
of days since the patient's first admission (the same value for every code of an admission: an
admission is one point in time), and ``position`` the 0-based order of the code within its
admission (MIMIC's SEQ_NUM order, so position 0 is the primary diagnosis).

What 003 does with MIMIC-III (§5, "Data"): it keeps the first three characters of the ICD-9 codes
(``code_level="category"``; E codes keep four, see :mod:`medanon.hierarchies.icd9`), builds for
each patient the sequence of the primary and secondary diagnoses of each admission, keeps the
patients with at least two admissions (:meth:`EhrData.with_min_admissions`), learns its dependence
graph on 80% of the patients and evaluates on the other 20% (:meth:`EhrData.split`), and links a
code to a later one when both occur in the same patient within ΔT = 300 days.

Duplicates: a sequence holds each code at most once per admission. Two full codes that reduce to
the same category (``4280`` and ``4281`` -> ``428``), or a code listed twice, keep the occurrence
with the smallest position; the others are dropped and counted in ``source``. Without this, a
category would count twice in the frequencies and dependence weights 003 estimates per admission.

Dates. Real MIMIC-III dates are ISO (``2196-04-09 12:26:00``), shifted into the years 2100-2200.
Admissions are ordered by ADMITTIME when every ADMITTIME of the file parses with a format that has
a four-digit year (ISO, or ``m/d/YYYY``). A copy whose dates went through a spreadsheet
(``10/23/64 21:09``: two-digit years, the century cannot be recovered) has unusable dates; then the
admissions are ordered by ADMISSIONS.ROW_ID (then HADM_ID, numerically), ``time`` is NaN for every
row and ``dates_reliable`` is False. ΔT windows cannot be applied to such data; ``source`` records
why. Without an ADMISSIONS file the admissions are ordered by the smallest DIAGNOSES_ICD.ROW_ID of
each HADM_ID and ``time`` is NaN as well.
"""

from __future__ import annotations

import copy
import hashlib
import io
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from .._validation import check_choice, check_fraction, check_int
from ..accounting.oneoff import InputFingerprint
from ..errors import InputFormatError, ValidationError
from ..hierarchies.icd9 import icd9_category, normalize_icd9
from ..random import Randomness

__all__ = ["CODE_LEVELS", "DELTA_T_DAYS", "EVENT_COLUMNS", "EhrData", "load_ehr_csv", "load_mimic"]

EVENT_COLUMNS = ("patient", "admission", "admission_rank", "time", "position", "code")
CODE_LEVELS = ("category", "full")
DELTA_T_DAYS = 300.0            # 003's dependence window
MAX_ILL_FORMED = 0.05           # above this share of ill-formed codes the file is rejected
_SHOWN = 5
_SECONDS_PER_DAY = 86400.0
_DATE_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M",
                 "%Y-%m-%d", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%m/%d/%Y")
_GENERIC_DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M",
                         "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M")


# -- the data class ------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class EhrData:
    """Diagnosis sequences of patients, one row per code occurrence (see the module docstring).

    Attributes:
        events: Columns exactly :data:`EVENT_COLUMNS`: ``patient``, ``admission`` and ``code``
            (object columns of Python ``str``), ``admission_rank`` and ``position`` (int64,
            0-based), ``time`` (float64 days since the patient's first admission, NaN when the
            dates are unusable). Sorted by patient (numerically when every id is a number),
            admission_rank and position; RangeIndex. A code occurs at most once per admission.
        code_level: ``"category"`` (3-character ICD-9 categories, 4 for E codes) or ``"full"``.
        dates_reliable: Whether ``time`` holds real day offsets (False: all NaN).
        source: Provenance: input file names and SHA-256, rows read and dropped (by reason), how
            the admissions were ordered, and the subsets taken since loading.
    """

    events: pd.DataFrame
    code_level: str
    dates_reliable: bool
    source: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if list(self.events.columns) != list(EVENT_COLUMNS):
            raise ValidationError(f"EhrData.events must have exactly the columns "
                                  f"{', '.join(EVENT_COLUMNS)}; got "
                                  f"{', '.join(map(str, self.events.columns))}.")
        check_choice(self.code_level, name="code_level", owner="EhrData", choices=CODE_LEVELS)

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_patients(self) -> int:
        return int(self.events["patient"].nunique())

    @property
    def n_admissions(self) -> int:
        if self.events.empty:
            return 0
        return int(len(self.events[["patient", "admission"]].drop_duplicates()))

    @property
    def n_events(self) -> int:
        return int(len(self.events))

    @property
    def patients(self) -> np.ndarray:
        """The patient ids, each once, in the order of :attr:`events`."""
        return np.asarray(pd.unique(self.events["patient"]), dtype=object)

    @property
    def codes(self) -> tuple[str, ...]:
        """The distinct codes, sorted."""
        return tuple(sorted(set(self.events["code"].tolist())))

    # -- subsets -----------------------------------------------------------------------------
    def _subset(self, keep: np.ndarray, step: dict) -> EhrData:
        events = self.events.loc[keep].reset_index(drop=True)
        source = copy.deepcopy(self.source)
        source["subsets"] = [*self.source.get("subsets", []), step]
        return replace(self, events=events, source=source)

    def select_patients(self, ids: Iterable[str]) -> EhrData:
        """The records of the patients ``ids`` (order of :attr:`events` kept).

        Raises:
            ValidationError: an id is not a patient of this data.
        """
        wanted = pd.Index([str(i) for i in ids]).unique()
        unknown = wanted.difference(pd.Index(self.patients))
        if len(unknown):
            shown = ", ".join(repr(u) for u in list(unknown)[:_SHOWN])
            more = f" and {len(unknown) - _SHOWN} more" if len(unknown) > _SHOWN else ""
            raise ValidationError(f"select_patients: {len(unknown)} id(s) are not patients of "
                                  f"this data ({shown}{more}).")
        keep = self.events["patient"].isin(wanted).to_numpy()
        return self._subset(keep, {"select_patients": int(len(wanted))})

    def split(self, fraction: float = 0.8, *,
              rng: Randomness | np.random.Generator) -> tuple[EhrData, EhrData]:
        """Split by patient into (auxiliary, evaluation) parts, as 003 does (80% / 20%).

        The auxiliary part gets ``round(fraction * n_patients)`` patients drawn at random,
        clamped so that both parts hold at least one patient.

        Args:
            rng: A :class:`~medanon.random.Randomness` (its generator draws the patients: the
                split is not DP noise), or a NumPy generator.

        Raises:
            ValidationError: ``fraction`` outside (0, 1), ``rng`` neither, or fewer than two
                patients.
        """
        fraction = check_fraction(fraction, name="fraction", owner="EhrData.split")
        if fraction >= 1.0:
            raise ValidationError(f"The 'fraction' parameter of EhrData.split must be a number "
                                  f"in (0, 1); got {fraction!r}.")
        if isinstance(rng, Randomness):
            rng = rng.generator
        if not isinstance(rng, np.random.Generator):
            raise ValidationError(f"The 'rng' parameter of EhrData.split must be a Randomness "
                                  f"(medanon.random.randomness) or a numpy.random.Generator; got "
                                  f"{type(rng).__name__}.")
        patients = self.patients
        n = len(patients)
        if n < 2:
            raise ValidationError(f"EhrData.split needs at least two patients; this data has {n}.")
        n_aux = min(max(int(round(fraction * n)), 1), n - 1)
        chosen = np.zeros(n, dtype=bool)
        chosen[rng.permutation(n)[:n_aux]] = True
        auxiliary = pd.Index(patients[chosen])
        in_aux = self.events["patient"].isin(auxiliary).to_numpy()
        step = {"fraction": fraction, "auxiliary_patients": n_aux, "evaluation_patients": n - n_aux}
        return (self._subset(in_aux, {"split": {**step, "part": "auxiliary"}}),
                self._subset(~in_aux, {"split": {**step, "part": "evaluation"}}))

    def with_min_admissions(self, n: int) -> EhrData:
        """The patients with at least ``n`` admissions (003 keeps those with two or more)."""
        n = check_int(n, name="n", owner="EhrData.with_min_admissions", minimum=1)
        count = self.events.groupby("patient", sort=False)["admission_rank"].transform("max") + 1
        keep = (count >= n).to_numpy()
        return self._subset(keep, {"min_admissions": n})

    def digest(self) -> str:
        """SHA-256 of the canonical events CSV (UTF-8, ``\\n`` line ends, no index)."""
        text = self.events.to_csv(index=False, lineterminator="\n")
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def fingerprint(self) -> InputFingerprint:
        """The events' identity for the one-off ledger: the event rows as a multiset, so another
        row order is the same input and an extract sharing most events with an earlier one is
        recognised (:mod:`medanon.accounting.oneoff`). Operator-only."""
        return InputFingerprint.of_rows(self.events)


# -- assembling the events table ---------------------------------------------------------------
def _natural_rank(values: np.ndarray) -> np.ndarray:
    """Rank of each (distinct) id: numerically when every id is a decimal number, else as text."""
    text = np.asarray(values, dtype=str)
    if len(text) == 0:
        return np.zeros(0, dtype=np.int64)
    if np.char.str_len(text).max() <= 18 and np.char.isdigit(text).all():
        numbers = text.astype(np.int64)
        if len(np.unique(numbers)) == len(numbers):
            order = np.argsort(numbers, kind="stable")
        else:                                   # "007" and "7": the text breaks the tie
            order = np.lexsort((text, numbers))
    else:
        order = np.argsort(text, kind="stable")
    rank = np.empty(len(text), dtype=np.int64)
    rank[order] = np.arange(len(text))
    return rank


def _factorized(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(integer code of each value, distinct values as an object array of str)``."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object))
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _group_offsets(sorted_keys: np.ndarray) -> np.ndarray:
    """0-based index of each element within its run of equal keys."""
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.ones(n, dtype=bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    idx = np.arange(n, dtype=np.int64)
    return idx - np.maximum.accumulate(np.where(start, idx, 0))


def _assemble(*, patient: tuple[np.ndarray, np.ndarray], admission: tuple[np.ndarray, np.ndarray],
              code: tuple[np.ndarray, np.ndarray], adm_key: np.ndarray,
              adm_seconds: np.ndarray | None, within_keys: tuple[np.ndarray, ...],
              code_level: str, dropped: dict[str, int]) -> pd.DataFrame:
    """Build the canonical events table (internal: shared by the loaders and the generator).

    Args:
        patient, admission, code: per-row ids as ``(integer codes, distinct values)`` pairs (see
            :func:`_factorized`); an admission is identified by (patient, admission); codes are
            normalized full ICD-9 codes.
        adm_key: per-row admission sort key; an admission takes the minimum over its rows.
        adm_seconds: per-row admission time in seconds (any origin), or None when unusable; an
            admission takes the minimum over its rows. Admissions are ordered by
            (seconds, adm_key, admission id) when given, else by (adm_key, admission id).
        within_keys: per-row sort keys within the admission, most significant first (ties keep
            the row order).
        code_level: ``"category"`` or ``"full"``.
        dropped: counts of dropped rows by reason; the duplicate count is added to it.
    """
    pf, p_uniq = patient
    af, a_uniq = admission
    cf, c_uniq = code
    p_rank = _natural_rank(p_uniq)
    width = max(len(a_uniq), 1)
    adm, pair_uniq = pd.factorize(pf * width + af)
    adm = adm.astype(np.int64)
    n_adm = len(pair_uniq)
    adm_patient = pair_uniq // width
    adm_id = pair_uniq % width

    key = np.full(n_adm, np.inf)
    np.fmin.at(key, adm, np.asarray(adm_key, dtype=float))
    if adm_seconds is not None:
        seconds = np.full(n_adm, np.nan)
        np.fmin.at(seconds, adm, np.asarray(adm_seconds, dtype=float))
        first = np.full(len(p_uniq), np.nan)
        np.fmin.at(first, adm_patient, seconds)
        adm_time = (seconds - first[adm_patient]) / _SECONDS_PER_DAY
        primary = seconds
    else:
        adm_time = np.full(n_adm, np.nan)
        primary = np.zeros(n_adm)
    order = np.lexsort((_natural_rank(a_uniq)[adm_id], key, primary, p_rank[adm_patient]))
    adm_rank = np.empty(n_adm, dtype=np.int64)
    adm_rank[order] = _group_offsets(adm_patient[order])
    adm_global = np.empty(n_adm, dtype=np.int64)     # position of the admission in the output
    adm_global[order] = np.arange(n_adm)

    if code_level == "category":
        cf2, c_uniq = _factorized(np.asarray([icd9_category(c) for c in c_uniq], dtype=object))
        cf = cf2[cf]

    within = [np.asarray(k, dtype=float) for k in reversed(within_keys)]
    rows = np.lexsort((*within, adm_global[adm]))       # lexsort is stable: ties keep row order
    adm_sorted = adm[rows]
    duplicate = pd.Series(adm_sorted * max(len(c_uniq), 1) + cf[rows]).duplicated().to_numpy()
    keep = rows[~duplicate]
    n_dup = int(duplicate.sum())
    if n_dup:
        reason = "duplicate_code_in_admission"
        dropped[reason] = dropped.get(reason, 0) + n_dup
    a_kept = adm[keep]
    return pd.DataFrame({
        "patient": pd.Series(p_uniq[pf[keep]], dtype=object),
        "admission": pd.Series(a_uniq[af[keep]], dtype=object),
        "admission_rank": adm_rank[a_kept],
        "time": adm_time[a_kept].astype(np.float64),
        "position": _group_offsets(a_kept),
        "code": pd.Series(c_uniq[cf[keep]], dtype=object),
    }, columns=list(EVENT_COLUMNS))


# -- reading files -------------------------------------------------------------------------------
def _read_csv(path: str | Path, role: str) -> tuple[pd.DataFrame, dict]:
    """Read a CSV as text (headers upper-cased), with its name, SHA-256 and row count."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputFormatError(f"The {role} file {str(path)!r} does not exist.") from None
    except OSError as exc:
        raise InputFormatError(f"The {role} file {str(path)!r} is unreadable: {exc}.") from None
    compression: Literal["gzip"] | None = "gzip" if path.suffix.lower() == ".gz" else None
    try:
        frame = pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False,
                            compression=compression, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError,
            EOFError) as exc:
        raise InputFormatError(f"The {role} file {str(path)!r} is not a readable CSV file: "
                               f"{exc}.") from None
    headers = [str(c).strip().upper() for c in frame.columns]
    repeated = sorted({h for h in headers if headers.count(h) > 1})
    if repeated:
        raise InputFormatError(f"The {role} file {path.name!r} has repeated column(s) "
                               f"(headers are case-insensitive): {', '.join(repeated)}.")
    frame.columns = headers
    info = {"name": path.name, "sha256": hashlib.sha256(raw).hexdigest(), "rows": int(len(frame))}
    return frame, info


def _require(frame: pd.DataFrame, name: str, role: str, needed: Iterable[str]) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise InputFormatError(f"The {role} file {name!r} lacks the required column(s) "
                               f"{', '.join(missing)} (headers are case-insensitive; found: "
                               f"{', '.join(map(str, frame.columns)) or 'none'}).")


def _text(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A column as an object array of stripped ``str`` (stripping each distinct value once)."""
    values = frame[column].to_numpy(dtype=object)
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    stripped = np.asarray(["" if u is None or u != u else str(u).strip() for u in uniques],
                          dtype=object)
    return stripped[codes] if len(values) else np.zeros(0, dtype=object)


def _numbers(values: np.ndarray) -> np.ndarray:
    """Numeric values of a text column; blanks and non-numbers become +inf (sorted last)."""
    out = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)
    return np.where(np.isnan(out), np.inf, out)


def _column_numbers(frame: pd.DataFrame, column: str, default: np.ndarray) -> np.ndarray:
    """:func:`_numbers` of ``column``, or ``default`` when the frame has no such column."""
    if column not in frame.columns:
        return default
    return _numbers(frame[column].to_numpy(dtype=object))


def _drop_missing(no_id: np.ndarray, empty_code: np.ndarray, dropped: dict[str, int]) -> np.ndarray:
    """Count rows without an id or without a code in ``dropped``; return the mask of rows to keep."""
    if no_id.any():
        dropped["missing_id"] = int(no_id.sum())
    empty_code = empty_code & ~no_id
    if empty_code.any():
        dropped["empty_code"] = int(empty_code.sum())
    return ~(no_id | empty_code)


def _normalize_codes(codes: np.ndarray, name: str, column: str,
                     dropped: dict[str, int], source: dict) -> tuple[np.ndarray, np.ndarray]:
    """Normalize non-empty codes; return (normalized codes, ok mask). Too many bad ones: error."""
    uniq = pd.unique(pd.Series(codes, dtype=object))
    mapping: dict[str, str | None] = {}
    for raw in uniq:
        try:
            mapping[raw] = normalize_icd9(raw)
        except InputFormatError:
            mapping[raw] = None
    normalized = pd.Series(codes, dtype=object).map(mapping).to_numpy(dtype=object)
    bad = pd.isna(normalized)
    n_bad = int(bad.sum())
    if n_bad:
        examples = list(pd.unique(pd.Series(codes[bad], dtype=object))[:_SHOWN])
        if n_bad > MAX_ILL_FORMED * len(codes):
            raise InputFormatError(
                f"The {column} column of {name!r} has {n_bad} of {len(codes)} non-empty values "
                f"that are not ICD-9-CM codes (more than {MAX_ILL_FORMED:.0%}; is it the right "
                f"column?), e.g. {', '.join(repr(e) for e in examples)}.")
        dropped["ill_formed_code"] = n_bad
        source["ill_formed_examples"] = [str(e) for e in examples]
    return normalized, ~bad


def _parse_seconds(values: np.ndarray, formats: tuple[str, ...]) -> np.ndarray:
    """Seconds since 1970 of each value (the first of ``formats`` that fits), NaN when none does."""
    series = pd.Series(values, dtype=object)
    seconds = np.full(len(series), np.nan)
    for fmt in formats:
        todo = np.flatnonzero(np.isnan(seconds))
        if len(todo) == 0:
            break
        parsed = pd.to_datetime(series.iloc[todo], format=fmt, errors="coerce")
        ok = parsed.notna().to_numpy()
        stamps = parsed[ok].to_numpy(dtype="datetime64[s]").astype(np.int64)
        seconds[todo[ok]] = stamps.astype(float)
    return seconds


def _examples(values: np.ndarray, bad: np.ndarray, k: int = 3) -> str:
    shown = pd.unique(pd.Series(values[bad], dtype=object))[:k]
    return ", ".join(repr(str(v)) for v in shown)


def _empty_error(name: str, what: str, dropped: dict[str, int]) -> InputFormatError:
    reasons = ", ".join(f"{k}: {v}" for k, v in dropped.items()) or "the file has no data rows"
    return InputFormatError(f"{name!r} has no usable {what} ({reasons}).")


def _finish(events: pd.DataFrame, code_level: str, dates_reliable: bool, source: dict) -> EhrData:
    source["code_level"] = code_level
    source["rows_kept"] = int(len(events))
    return EhrData(events=events, code_level=code_level, dates_reliable=dates_reliable,
                   source=source)


# -- MIMIC ---------------------------------------------------------------------------------------
def load_mimic(diagnoses: str | Path, admissions: str | Path | None = None, *,
               code_level: str = "category") -> EhrData:
    """Load MIMIC-III ``DIAGNOSES_ICD`` (and optionally ``ADMISSIONS``) as :class:`EhrData`.

    Headers are case-insensitive (MIMIC-IV's lowercase headers work too; a MIMIC-IV
    ``icd_code``/``icd_version`` pair is accepted and its ICD-10 rows are dropped and counted).
    Every value is read as text, so ``"0389"`` stays ``"0389"``. Codes are normalized (no dot,
    upper case) and, with ``code_level="category"``, reduced to their 3-character category.

    Dropped and counted in ``source["rows_dropped"]``: rows with an empty code, an empty
    SUBJECT_ID or HADM_ID, an ill-formed code (up to five shown in
    ``source["ill_formed_examples"]``), a HADM_ID absent from ADMISSIONS or whose SUBJECT_ID
    disagrees with it, and repeated codes within an admission (see the module docstring).

    Admission order: ADMITTIME when every ADMITTIME parses with a four-digit-year format, else
    ADMISSIONS.ROW_ID then HADM_ID (``time`` NaN, ``dates_reliable`` False); without ADMISSIONS,
    the smallest DIAGNOSES_ICD.ROW_ID of each HADM_ID (file order if there is no ROW_ID).
    Within an admission: SEQ_NUM, then ROW_ID, then file order.

    Raises:
        InputFormatError: a missing or unreadable file, a missing required column (DIAGNOSES_ICD:
            SUBJECT_ID, HADM_ID, ICD9_CODE; ADMISSIONS: SUBJECT_ID, HADM_ID, ADMITTIME), a
            HADM_ID listed twice in ADMISSIONS, more than 5% ill-formed codes, or no usable row.
        ValidationError: an unknown ``code_level``.
    """
    code_level = check_choice(code_level, name="code_level", owner="load_mimic",
                              choices=CODE_LEVELS)
    diag, diag_info = _read_csv(diagnoses, "DIAGNOSES_ICD")
    name = diag_info["name"]
    dropped: dict[str, int] = {}
    source: dict = {"format": "mimic", "files": {"diagnoses": diag_info}, "rows_read": len(diag)}

    keep = np.ones(len(diag), dtype=bool)
    if "ICD9_CODE" in diag.columns:
        code_column = "ICD9_CODE"
    elif "ICD_CODE" in diag.columns and "ICD_VERSION" in diag.columns:
        code_column = "ICD_CODE"
        icd10 = _text(diag, "ICD_VERSION") != "9"
        if icd10.any():
            dropped["not_icd9"] = int(icd10.sum())
        keep &= ~icd10
    else:
        code_column = "ICD9_CODE"
    _require(diag, name, "DIAGNOSES_ICD", ["SUBJECT_ID", "HADM_ID", code_column])

    subject = _text(diag, "SUBJECT_ID")
    hadm = _text(diag, "HADM_ID")
    raw_code = _text(diag, code_column)
    file_order = np.arange(len(diag), dtype=float)
    row_id = _column_numbers(diag, "ROW_ID", file_order)
    seq = _column_numbers(diag, "SEQ_NUM", file_order)

    keep &= _drop_missing(keep & ((subject == "") | (hadm == "")), keep & (raw_code == ""), dropped)
    normalized, ok = _normalize_codes(raw_code[keep], name, code_column, dropped, source)
    code = np.full(len(diag), None, dtype=object)
    code[keep] = normalized
    keep[np.flatnonzero(keep)[~ok]] = False

    if admissions is None:
        adm_key = row_id
        adm_seconds = None
        dates_reliable = False
        source["admission_order"] = ("smallest DIAGNOSES_ICD.ROW_ID of each HADM_ID, then HADM_ID"
                                     if "ROW_ID" in diag.columns else
                                     "first appearance in DIAGNOSES_ICD, then HADM_ID")
        source["dates"] = "no ADMISSIONS file: time is NaN"
    else:
        adm, adm_info = _read_csv(admissions, "ADMISSIONS")
        source["files"]["admissions"] = adm_info
        _require(adm, adm_info["name"], "ADMISSIONS", ["SUBJECT_ID", "HADM_ID", "ADMITTIME"])
        a_hadm = _text(adm, "HADM_ID")
        present = a_hadm != ""
        if not present.all():
            source["admissions_rows_ignored"] = {"missing_hadm_id": int((~present).sum())}
        adm = adm.loc[present].reset_index(drop=True)
        a_hadm = a_hadm[present]
        repeated = pd.Series(a_hadm).duplicated(keep=False)
        if repeated.any():
            shown = ", ".join(repr(h) for h in pd.unique(a_hadm[repeated.to_numpy()])[:_SHOWN])
            raise InputFormatError(f"The ADMISSIONS file {adm_info['name']!r} lists HADM_ID(s) "
                                   f"more than once: {shown}.")
        lookup = pd.Index(a_hadm)
        where = lookup.get_indexer(hadm)
        absent = keep & (where < 0)
        if absent.any():
            dropped["admission_not_in_admissions"] = int(absent.sum())
        keep &= ~absent
        a_subject = _text(adm, "SUBJECT_ID")
        mismatch = keep & (a_subject[np.maximum(where, 0)] != subject)
        if mismatch.any():
            dropped["subject_mismatch"] = int(mismatch.sum())
        keep &= ~mismatch

        a_row = _column_numbers(adm, "ROW_ID", np.arange(len(adm), dtype=float))
        adm_key = a_row[np.maximum(where, 0)]
        admit_text = _text(adm, "ADMITTIME")
        a_seconds = _parse_seconds(admit_text, _DATE_FORMATS)
        row_order = ("ADMISSIONS.ROW_ID, then HADM_ID" if "ROW_ID" in adm.columns
                     else "ADMISSIONS file order, then HADM_ID")
        unparsed = np.isnan(a_seconds)
        if len(a_seconds) and not unparsed.any():
            adm_seconds = a_seconds[np.maximum(where, 0)]
            dates_reliable = True
            source["admission_order"] = f"ADMITTIME, then {row_order}"
            source["dates"] = "ADMITTIME parsed with a four-digit year: time in days"
        else:
            adm_seconds = None
            dates_reliable = False
            source["admission_order"] = row_order
            source["dates"] = (f"unusable: {int(unparsed.sum())} of {len(a_seconds)} ADMITTIME "
                               f"values do not parse with a four-digit year (two-digit years "
                               f"cannot be placed in a century), e.g. "
                               f"{_examples(admit_text, unparsed)}; time is NaN and admissions "
                               f"are ordered by {row_order}")

    source["rows_dropped"] = dropped
    if not keep.any():
        raise _empty_error(name, "diagnosis rows", dropped)
    events = _assemble(
        patient=_factorized(subject[keep]), admission=_factorized(hadm[keep]),
        code=_factorized(code[keep]),
        adm_key=adm_key[keep], adm_seconds=None if adm_seconds is None else adm_seconds[keep],
        within_keys=(seq[keep], row_id[keep]), code_level=code_level, dropped=dropped)
    return _finish(events, code_level, dates_reliable, source)


# -- generic long CSV ----------------------------------------------------------------------------
def load_ehr_csv(path: str | Path, *, code_level: str = "category") -> EhrData:
    """Load a long-format CSV with columns ``patient, admission, code`` and optionally ``time``.

    Headers are case-insensitive; every value is read as text. ``time`` is either a number of
    days (any origin) in every row, or an ISO date/datetime (``2196-04-09``,
    ``2196-04-09 12:26:00``) in every row. An admission is identified by (patient, admission) and
    takes the earliest time of its rows; admissions are ordered by that time (then by first
    appearance). When ``time`` is absent, or any of its values is blank or unparsable, admissions
    are ordered by first appearance in the file, ``time`` is NaN and ``dates_reliable`` is False
    (recorded in ``source``). Within an admission codes keep the file order (by time first, when
    usable). Dropping rules as in :func:`load_mimic`.

    Raises:
        InputFormatError: missing/unreadable file, missing column, more than 5% ill-formed codes,
            or no usable row.
        ValidationError: an unknown ``code_level``.
    """
    code_level = check_choice(code_level, name="code_level", owner="load_ehr_csv",
                              choices=CODE_LEVELS)
    frame, info = _read_csv(path, "EHR")
    frame.columns = [c.lower() for c in frame.columns]
    name = info["name"]
    _require(frame, name, "EHR", ["patient", "admission", "code"])
    dropped: dict[str, int] = {}
    source: dict = {"format": "long-csv", "files": {"events": info}, "rows_read": len(frame)}

    patient = _text(frame, "patient")
    admission = _text(frame, "admission")
    raw_code = _text(frame, "code")
    file_order = np.arange(len(frame), dtype=float)
    keep = np.ones(len(frame), dtype=bool)
    keep &= _drop_missing((patient == "") | (admission == ""), keep & (raw_code == ""), dropped)
    normalized, ok = _normalize_codes(raw_code[keep], name, "code", dropped, source)
    code = np.full(len(frame), None, dtype=object)
    code[keep] = normalized
    keep[np.flatnonzero(keep)[~ok]] = False

    seconds = None
    if "time" not in frame.columns:
        source["dates"] = "no time column: time is NaN"
    else:
        raw_time = _text(frame, "time")[keep]
        numbers = pd.to_numeric(pd.Series(raw_time, dtype=object), errors="coerce").to_numpy(float)
        if len(raw_time) and np.isfinite(numbers).all():
            seconds = np.zeros(len(frame))
            seconds[keep] = numbers * _SECONDS_PER_DAY
            source["dates"] = "time given in days"
        else:
            parsed = _parse_seconds(raw_time, _GENERIC_DATE_FORMATS)
            unparsed = np.isnan(parsed)
            if len(raw_time) and not unparsed.any():
                seconds = np.zeros(len(frame))
                seconds[keep] = parsed
                source["dates"] = "time given as ISO dates"
            else:
                source["dates"] = (f"unusable: {int(unparsed.sum())} time value(s) are blank or "
                                   f"neither a number of days nor an ISO date, e.g. "
                                   f"{_examples(raw_time, unparsed)}; time is NaN")
    source["admission_order"] = ("time, then first appearance" if seconds is not None
                                 else "first appearance in the file")
    source["rows_dropped"] = dropped
    if not keep.any():
        raise _empty_error(name, "rows", dropped)
    within = np.zeros(len(frame)) if seconds is None else seconds
    events = _assemble(
        patient=_factorized(patient[keep]), admission=_factorized(admission[keep]),
        code=_factorized(code[keep]),
        adm_key=file_order[keep], adm_seconds=None if seconds is None else seconds[keep],
        within_keys=(within[keep],), code_level=code_level, dropped=dropped)
    return _finish(events, code_level, seconds is not None, source)
