"""Reader for FDA FAERS / legacy AERS quarterly ASCII extracts.

Accepts a zip file as FDA distributes it, an unpacked folder, or a folder holding several
quarters (folders and/or zips). File names are matched in any case (``DEMO22Q4.txt``,
``demo13q1.txt``, ``DEMO11Q2.TXT``). Three format eras are recognised from the DEMO header:

* ``legacy``      legacy AERS, 2004Q1-2012Q3: ``ISR`` (report) and ``CASE`` (case), ``GNDR_COD``;
                  every ISR of a case in the quarter is kept (they become one super record later).
* ``faers-2012``  FAERS 2012Q4-2014Q2: ``primaryid``, ``caseid``, ``caseversion``, ``gndr_cod``.
* ``faers-2014``  FAERS 2014Q3 onwards: as above with ``sex`` instead of ``gndr_cod``.

Files are ``$``-separated Latin-1 text with a header line, CRLF or LF line ends. Known defects
are repaired and counted: a ``$`` embedded in a free-text field (the line has too many fields;
the surplus is merged back into that table's free-text column) and records split across lines
by a stray line break inside a field (rejoined with a single space).

Tables are read a chunk at a time (zip members too, decompressed as they are read): only the
columns the records need are kept, and of DRUG, REAC and INDI only the rows of kept reports, so
memory grows with the records, not with the size of the files. :func:`open_faers` reads the
quarters of a source one at a time.

Per quarter the reader drops repeated DEMO rows of one report id (the last one kept; counted,
and those whose content conflicts counted apart), applies the DELETE list (case ids FDA
withdrew: dropped from every quarter of the same ingest), keeps only the latest ``caseversion``
of each case (FAERS eras; a report of the same case and caseversion under another primaryid is
dropped and counted: the later FDA date, then the larger primaryid, is kept), converts age to
years (``age_cod`` YR, DEC, MON, WK, DY, HR) and its MeSH age group, weight to kg (``wt_cod``
KG, LBS, GMS), and joins DRUG, REAC, INDI and OUTC into one record per report with set-valued
``drugs`` (every role), ``drugs_primary_suspect``, ``drugs_secondary_suspect``, ``drugs_concomitant``,
``drugs_interacting`` (DRUG ``role_cod`` PS, SS, C, I), ``reactions``, ``indications`` and
``outcomes`` (OUTC ``outc_cod``: DE, LT, HO, DS, CA, RI, OT), and the receipt dates
``init_fda_dt`` and ``fda_dt`` (FAERS date strings, partial ones included; legacy AERS has no
``init_fda_dt``). A drug whose role code is none of the four stays in ``drugs`` only; a quarter
without an OUTC file has empty outcomes; invalid dates, implausible ages and weights and values
without their unit are missing; DRUG, REAC, INDI and OUTC rows of no DEMO row are read by no
report; each is counted in the quarter's :class:`IngestReport`, and ``strict`` refuses a
quarter that needed any of these repairs (:func:`strict_repairs`).

Every report is kept by default: a missing value stays missing (published as missing). With
``keep_missing=False`` reports lacking a value of one of the schema's quasi-identifiers or
sensitive attributes (the papers' age, sex, weight, reactions and indications by default) are
dropped, as the papers do, with the counts per reason in the quarter's :class:`IngestReport`.
"""

from __future__ import annotations

import functools
import io
import itertools
import operator
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol, SupportsInt

import numpy as np
import pandas as pd

from ...errors import CorruptInputError, InputFormatError, InputQualityError, ValidationError
from ...hierarchies import age_to_mesh
from ...hierarchies.builtin import mesh_leaf_of_faers_age_group
from ..dates import valid_dates
from ..._validation import check_int
from ...periods import Period, period_from_faers_tag

REQUIRED_TABLES = ("DEMO", "DRUG", "REAC", "INDI")
_FILE_NAME = re.compile(r"^(DEMO|DRUG|REAC|INDI|OUTC|THER|RPSR|DELETE)(\d{2}Q[1-4])\.TXT$", re.I)

#: age units to years. WK and DY use the mean Gregorian year (365.2425 days).
AGE_UNITS = {"YR": 1.0, "DEC": 10.0, "MON": 1 / 12, "WK": 7 / 365.2425, "DY": 1 / 365.2425,
             "HR": 1 / (365.2425 * 24)}
#: weight units to kilograms.
WEIGHT_UNITS = {"KG": 1.0, "LBS": 0.45359237, "LB": 0.45359237, "GMS": 0.001, "G": 0.001}
SEX_VALUES = {"F": "F", "M": "M"}
SEX_MISSING = {"", "UNK", "NS", "U"}
#: ages and weights outside these are data-entry errors: treated as missing and counted
#: (``implausible``). The bounds apply after the unit conversion, so they hold in every unit
#: alike: an age is implausible below 0 or above 120 years (1,440 MON, 6,261 WK, 43,829 DY,
#: 1,051,898 HR; the oldest verified human lived 122 years), a weight below 0.2 kg
#: (zero and negative weights included) or above 650 kg.
PLAUSIBLE_AGE_YEARS = (0.0, 120.0)
PLAUSIBLE_WEIGHT_KG = (0.2, 650.0)
#: DRUG ``role_cod`` -> the record column listing the report's drugs of that role
DRUG_ROLES = {"PS": "drugs_primary_suspect", "SS": "drugs_secondary_suspect",
              "C": "drugs_concomitant", "I": "drugs_interacting"}
#: OUTC ``outc_cod`` values FDA documents (death, life-threatening, hospitalization,
#: disability, congenital anomaly, required intervention, other serious)
OUTCOME_CODES = ("DE", "LT", "HO", "DS", "CA", "RI", "OT")
#: the DEMO date columns kept as FAERS date strings (legacy AERS has no init_fda_dt)
DATE_COLUMNS = ("init_fda_dt", "fda_dt")

# Per era and table: our column name -> the file's column name (lower case).
_ERA_COLUMNS = {
    "legacy": {
        "DEMO": {"report_id": "isr", "case_id": "case", "version": "foll_seq", "age": "age",
                 "age_cod": "age_cod", "sex": "gndr_cod", "wt": "wt", "wt_cod": "wt_cod",
                 "fda_dt": "fda_dt"},
        "DRUG": {"report_id": "isr", "drugname": "drugname", "role_cod": "role_cod"},
        "REAC": {"report_id": "isr", "pt": "pt"},
        "INDI": {"report_id": "isr", "indi_pt": "indi_pt"},
        "OUTC": {"report_id": "isr", "outc_cod": "outc_cod"},
    },
    "faers-2012": {
        "DEMO": {"report_id": "primaryid", "case_id": "caseid", "version": "caseversion",
                 "age": "age", "age_cod": "age_cod", "sex": "gndr_cod", "wt": "wt",
                 "wt_cod": "wt_cod", "fda_dt": "fda_dt", "init_fda_dt": "init_fda_dt"},
        "DRUG": {"report_id": "primaryid", "drugname": "drugname", "role_cod": "role_cod"},
        "REAC": {"report_id": "primaryid", "pt": "pt"},
        "INDI": {"report_id": "primaryid", "indi_pt": "indi_pt"},
        "OUTC": {"report_id": "primaryid", "outc_cod": "outc_cod"},
    },
}
#: columns a table may lack (older layouts, hand-made extracts): read as empty, and counted
_OPTIONAL_COLUMNS = {"DEMO": ("init_fda_dt",), "DRUG": ("role_cod",)}
#: other names FDA used for a column in some quarters (OUTC of 2012Q4-2014Q2: outc_code)
_ALIASES = {"outc_cod": ("outc_code",)}
_ERA_COLUMNS["faers-2014"] = {**_ERA_COLUMNS["faers-2012"],
                              "DEMO": {**_ERA_COLUMNS["faers-2012"]["DEMO"], "sex": "sex"}}
#: the free-text column of each table that absorbs an embedded '$'.
_TEXT_COLUMN = {"DEMO": "mfr_sndr", "DRUG": "drugname", "REAC": "pt", "INDI": "indi_pt"}
_PLACEHOLDER = "\x1f"  # stands in for an embedded '$' until the table is parsed


@dataclass
class IngestReport:
    """What happened to one quarter on the way in: every count a data steward should see."""

    period: str
    era: str
    source: str
    demo_rows: int = 0
    reports_read: int = 0
    repaired_split_lines: dict[str, int] = field(default_factory=dict)
    repaired_embedded_separators: dict[str, int] = field(default_factory=dict)
    deleted_cases: int = 0
    deleted_reports: int = 0
    superseded_reports: int = 0
    #: DEMO rows dropped because a later row of the file has the same report id (primaryid;
    #: legacy ISR): the last one is kept
    duplicate_rows: int = 0
    #: of ``duplicate_rows``, those whose content differs from the kept row's in a column the
    #: loader reads (case id, version, age, age unit, age group, sex, weight, weight unit, dates)
    conflicting_duplicates: int = 0
    #: FAERS eras: reports dropped because another report of the same case has the same
    #: caseversion under another primaryid (the later fda_dt, then the larger primaryid kept)
    same_version_reports: int = 0
    #: the columns whose missing value drops a report unless ``kept_missing`` (the schema's
    #: QIDs and sensitive columns)
    required: list[str] = field(default_factory=list)
    missing: dict[str, int] = field(default_factory=dict)
    #: ages and weights of the reports read outside :data:`PLAUSIBLE_AGE_YEARS` and
    #: :data:`PLAUSIBLE_WEIGHT_KG` (made missing)
    implausible: dict[str, int] = field(default_factory=dict)
    #: ages and weights of the reports read given without their unit code (made missing)
    without_unit: dict[str, int] = field(default_factory=dict)
    #: per table, rows whose report id is in no DEMO row of the quarter (read by no report)
    orphan_rows: dict[str, int] = field(default_factory=dict)
    dropped_reports: int = 0
    kept_missing: bool = True
    reports: int = 0
    cases: int = 0
    #: what the quarter's files lack, read as empty: ``OUTC`` (no outcomes), ``DRUG.role_cod``
    #: (no drug roles), ``DEMO.init_fda_dt`` (legacy AERS never has it)
    absent: list[str] = field(default_factory=list)
    #: DRUG rows of kept reports whose role code is not PS, SS, C or I, per code as given
    #: (upper case): the drug is in ``drugs`` only
    unknown_roles: dict[str, int] = field(default_factory=dict)
    #: DRUG rows of kept reports with no role code (an empty one, or a table without
    #: ``role_cod``): the drug is in ``drugs`` only
    drugs_without_role: int = 0
    #: OUTC rows of kept reports whose code FDA does not document (kept in ``outcomes``)
    unknown_outcomes: dict[str, int] = field(default_factory=dict)
    #: per date column, non-empty values of kept reports that are not a date (made missing)
    invalid_dates: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)

    def repairs(self) -> list[str]:
        """What ``strict`` refuses (:func:`strict_repairs` of this report)."""
        return strict_repairs(self.as_dict())


def strict_repairs(report: Mapping[str, object]) -> list[str]:
    """The repairs an ingest report (:meth:`IngestReport.as_dict`, or what the store keeps)
    counts that a strict ingest refuses, in words with their counts; empty when none.

    Refused: DEMO rows dropped as duplicates whose content conflicts with the kept row's, reports
    dropped for another of the same case version, implausible ages and weights and values
    without their unit (made missing), dates that are no date (made missing), and DRUG, REAC,
    INDI or OUTC rows that belong to no DEMO row. Accepted, because nothing the file says is
    lost or changed: repaired embedded ``$`` and split lines (the record as FDA wrote it),
    verbatim duplicate rows, older case versions, FDA's DELETE lists, missing-value codes,
    role and outcome codes kept as given, and missing values (kept, or dropped on request).
    """
    out = []
    conflicting = _count(report, "conflicting_duplicates")
    if conflicting:
        out.append(f"{conflicting} duplicate DEMO row(s) whose content conflicts with the kept "
                   f"row of the same report id (the last one in the file was kept)")
    ties = _count(report, "same_version_reports")
    if ties:
        out.append(f"{ties} report(s) dropped for another report of the same case and "
                   f"caseversion (the later fda_dt, then the larger primaryid, was kept)")
    bounds = {"age": f"outside {PLAUSIBLE_AGE_YEARS[0]:g}-{PLAUSIBLE_AGE_YEARS[1]:g} years",
              "weight": f"outside {PLAUSIBLE_WEIGHT_KG[0]:g}-{PLAUSIBLE_WEIGHT_KG[1]:g} kg"}
    for name, count in _counts(report, "implausible").items():
        if count:
            out.append(f"{count} implausible {name}(s) ({bounds.get(name, 'out of bounds')}; "
                       f"made missing)")
    for name, count in _counts(report, "without_unit").items():
        if count:
            out.append(f"{count} {name}(s) without a unit code (made missing)")
    for name, count in _counts(report, "invalid_dates").items():
        if count:
            out.append(f"{count} {name} value(s) that are no date (made missing)")
    for table, count in _counts(report, "orphan_rows").items():
        if count:
            out.append(f"{count} {table} row(s) whose report id is in no DEMO row (read by no "
                       f"report)")
    return out


# An ingest report is loose data (IngestReport.as_dict, what the store kept, or a mapping given
# for records that did not come from FAERS files): its counts are read with these two, which
# refuse a value that is no count with a TypeError (before, int() raised one on it, and a
# non-mapping in place of counts by name failed on .items() with an AttributeError).
def _count(report: Mapping[str, object], key: str) -> int:
    """The count ``key`` of an ingest report; 0 when it is absent (or None)."""
    value = report.get(key) or 0
    if not isinstance(value, (str, SupportsInt)):
        raise TypeError(f"ingest report {key!r} is not a count: {value!r}")
    return int(value)


def _counts(report: Mapping[str, object], key: str) -> Mapping[str, object]:
    """The counts by name ``key`` of an ingest report; empty when absent (or None)."""
    value = report.get(key) or {}
    if not isinstance(value, Mapping):
        raise TypeError(f"ingest report {key!r} is not a mapping of counts: {value!r}")
    return value


@dataclass
class FaersQuarter:
    """One ingested quarter: report-level records plus the report of what was done.

    What :func:`read_faers` returns per quarter and what
    :meth:`~medanon.store.ReleaseStore.ingest` takes (also from a :class:`medanon.Dataset`,
    whose quarters are such objects).

    Attributes:
        period: The quarter.
        era: The FAERS format era (``legacy-aers``, ``faers-2012``, ``faers-2014``), or
            ``unknown`` for records that did not come from FAERS files.
        source: Where the records came from (the path given to :func:`read_faers`).
        records: One row per report (the columns :func:`read_faers` lists).
        report: What happened on the way in (an :class:`IngestReport`, or a mapping for
            records that did not come from FAERS files).
        age_groups: Each record's FAERS ``age_grp`` code as the DEMO file gives it (row for row
            with ``records``; "" where blank), or None for records that did not come from FAERS
            files. Not a record column: raw records hold MeSH leaves, and C, A and E span
            several; ``medanon signals`` reads it for the age strata of a FAERS-layout folder.
    """

    period: Period
    era: str
    source: str
    records: pd.DataFrame
    report: IngestReport | Mapping[str, object] = field(default_factory=dict)
    age_groups: np.ndarray | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """The period label, e.g. ``2024Q1``."""
        return self.period.label

    def report_dict(self) -> dict[str, object]:
        """The ingest report as plain data (for a store or JSON)."""
        report = self.report
        return report.as_dict() if isinstance(report, IngestReport) else dict(report)


@dataclass
class FaersIngest:
    """Every quarter found in a source, oldest first, and the union of their DELETE lists."""

    quarters: list[FaersQuarter]
    deleted_case_ids: frozenset[str]


# -- locating files -----------------------------------------------------------------------------
class _Readable(Protocol):
    """What a table file is read through: a file opened ``"rb"`` or a :class:`_ZipMember`."""

    def read(self, size: int = -1, /) -> bytes: ...

    def __enter__(self) -> _Readable: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None, /) -> None: ...


def _file_opener(path: Path) -> Callable[[], _Readable]:
    """Opens ``path`` for reading in binary each time it is called."""
    return lambda: path.open("rb")


@dataclass(frozen=True)
class _Member:
    """A table file, on disk or inside a zip. ``open`` gives a binary file object that is read
    a chunk at a time (a zip member decompresses as it is read)."""

    table: str
    tag: str
    name: str
    open: Callable[[], _Readable]

    def read(self) -> bytes:
        """The whole file: only for the small DELETE lists."""
        with self.open() as fh:
            return fh.read()


_ZIP_SIGNATURE = b"PK\x03\x04"
_REFETCH = ("Download the quarter again from FDA (and compare its size with FDA's listing); "
            "nothing was ingested.")


def _members_of_zip(path: Path) -> list[_Member]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        with path.open("rb") as fh:
            start = fh.read(len(_ZIP_SIGNATURE))
        if start == _ZIP_SIGNATURE:
            # it starts as a zip but its directory (at the end) is missing: cut short
            raise CorruptInputError(f"{str(path)!r} is a truncated zip archive: it starts as one "
                                    f"but its table of contents at the end is missing (an "
                                    f"interrupted download or copy?). {_REFETCH}") from None
        raise InputFormatError(f"{str(path)!r} is not a zip file (FAERS extracts come as .zip "
                               "archives or unpacked folders).") from None
    members = []
    for info in archive.infolist():
        match = _FILE_NAME.match(Path(info.filename).name)
        if match and not info.is_dir():
            members.append(_Member(match.group(1).upper(), match.group(2).upper(),
                                   f"{path.name}:{info.filename}",
                                   functools.partial(_ZipMember, archive, path, info.filename)))
    return members


class _ZipMember:
    """One zip member opened for reading. A damaged member is named with the archive, not left
    to surface as a decompressor's error; streamed, that error may come with any read (zipfile
    checks the CRC only when the member's last bytes are read)."""

    def __init__(self, archive: zipfile.ZipFile, path: Path, name: str):
        self._path, self._name = path, name
        with self._named_errors():
            self._fh = archive.open(name)

    @contextmanager
    def _named_errors(self) -> Iterator[None]:
        name, path = self._name, self._path
        try:
            yield
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise CorruptInputError(f"Member {name!r} of {str(path)!r} is corrupt ({exc}): the "
                                    f"archive was damaged in transfer or on disk. {_REFETCH}"
                                    ) from None
        except NotImplementedError as exc:  # e.g. Deflate64, which zipfile cannot decompress
            raise InputFormatError(f"Member {name!r} of {str(path)!r} cannot be read: {exc}. "
                                   f"Unpack the archive with another tool and ingest the "
                                   f"folder.") from None

    def read(self, size: int = -1) -> bytes:
        with self._named_errors():
            return self._fh.read(size)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "_ZipMember":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _locate(source: Path) -> dict[str, dict[str, list[_Member]]]:
    if not source.exists():
        raise InputFormatError(f"FAERS source {str(source)!r} does not exist.")
    if source.is_file():
        members = _members_of_zip(source)
    else:
        members = []
        for path in sorted(source.rglob("*")):
            if path.is_file() and path.suffix.lower() == ".zip":
                members += _members_of_zip(path)
            elif path.is_file():
                match = _FILE_NAME.match(path.name)
                if match:
                    members.append(_Member(match.group(1).upper(), match.group(2).upper(),
                                           str(path), _file_opener(path)))
    quarters: dict[str, dict[str, list[_Member]]] = {}
    for member in members:
        quarters.setdefault(member.tag, {}).setdefault(member.table, []).append(member)
    return quarters


# -- parsing one '$'-separated table, a chunk at a time -----------------------------------------
#: bytes read from a table file at a time: large enough that the per-chunk costs (a CSV parse,
#: a few numpy scans) do not count, small enough that a quarter is never held as text (FDA's
#: DRUG file alone is 200+ MB).
_CHUNK_BYTES = 8 << 20
_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark left by an editor
#: the longest field a FAERS table may hold, in characters, unless the caller raises it
#: (``max_field_chars``; ``medanon ingest --max-field-chars``). FDA's fields hold at most a few
#: hundred; a field of millions is a damaged or hostile file, and would be published as it is.
DEFAULT_MAX_FIELD_CHARS = 10_000
#: one UTF-8 encoded character beyond ASCII: a lead byte and its continuation bytes. In real
#: Latin-1 text such a pair ("Ã©") does not occur: it is the mark of UTF-8.
_UTF8_CHARACTER = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}"
                             rb"|[\xf0-\xf4][\x80-\xbf]{3}")


def _first_utf8_character(body: bytes) -> int | None:
    """Where the first match of :data:`_UTF8_CHARACTER` in ``body`` starts (None: nowhere).

    The same answer as ``_UTF8_CHARACTER.search(body)``, found with numpy: the regex engine
    steps through every byte of a block that holds no UTF-8 (a Latin-1 table's, 8 MB at a time)
    at about 1 s per 5 MB, while only the few bytes from 0xC2 up can start a character.
    """
    data = np.frombuffer(body, dtype=np.uint8)
    at = np.flatnonzero(data >= 0xC2)
    at = at[data[at] <= 0xF4]
    if not len(at):
        return None
    # up to three continuation bytes after each lead; past the end counts as none
    padded = np.concatenate([data, np.zeros(3, dtype=np.uint8)])
    cont = [(padded[at + k] >= 0x80) & (padded[at + k] <= 0xBF) for k in (1, 2, 3)]
    lead = data[at]
    found = ((lead <= 0xDF) & cont[0]
             | (lead >= 0xE0) & (lead <= 0xEF) & cont[0] & cont[1]
             | (lead >= 0xF0) & cont[0] & cont[1] & cont[2])
    hits = at[found]
    return int(hits[0]) if len(hits) else None
_LF, _CR, _SEP = 10, 13, 36  # the bytes b"\n", b"\r" and b"$"


def _blocks(fh: _Readable, chunk_bytes: int) -> Iterator[bytes]:
    """The file's bytes in blocks of whole lines, the BOM dropped. A line ends in LF or CRLF (a
    bare CR is made LF; a last line without any end is given LF). A block holds at least one
    line; a line longer than a chunk makes its block longer. CRLF stays: the CSV parser reads
    it as a line end, and rewriting every line would cost more than the parsing."""
    pending, started = b"", False
    while True:
        raw = fh.read(chunk_bytes)
        data = pending + raw if pending else raw
        if not started:
            if raw and len(data) < len(_BOM):  # too short yet to tell a BOM
                pending = data
                continue
            if data.startswith(_BOM):
                data = data[len(_BOM):]
            started = True
        if not raw:  # end of file: what is left is the last line(s)
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if data:
                yield data if data.endswith(b"\n") else data + b"\n"
            return
        held = data.endswith(b"\r")  # the LF of a CRLF may come with the next read
        if held:
            data = data[:-1]
        data = _bare_cr_as_lf(data)
        cut = data.rfind(b"\n") + 1
        pending = data[cut:] + (b"\r" if held else b"")
        if cut:
            yield data if cut == len(data) else data[:cut]


def _refuse_wide_text(name: str, head: bytes) -> None:
    """Refuse a file whose first bytes are a UTF-16 or UTF-32 byte-order mark."""
    for mark, encoding in ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"),
                           (b"\xfe\xff", "UTF-16"), (b"\xff\xfe", "UTF-16")):
        if head.startswith(mark):
            raise InputFormatError(f"{name} is {encoding} text (its first bytes are a {encoding} "
                                   f"byte-order mark): FAERS tables are 8-bit text (ASCII, "
                                   f"Latin-1 or UTF-8). Save it as UTF-8 and ingest it again.")


def _bare_cr_as_lf(data: bytes) -> bytes:
    """``data`` with every CR that no LF follows made LF (a CR that ends ``data`` is followed
    by the CR held back for the next read)."""
    text = np.frombuffer(data, dtype=np.uint8)
    cr = np.flatnonzero(text == _CR)
    last = len(text) - 1
    bare = cr[(cr == last) | (text[np.minimum(cr + 1, last)] != _LF)]
    if not len(bare):
        return data
    text = text.copy()
    text[bare] = _LF
    return text.tobytes()


def _scan(block: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per line of a block: where it starts, where its text stops (before CR LF or LF), where
    its LF is, and how many '$' it holds."""
    text = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(text == _LF)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    # text[ends - 1] of an empty first line is the block's last byte, an LF: no CR to drop
    stops = ends - (text[ends - 1] == _CR)
    # A line's '$' count is how many separators come before its LF less how many came before
    # the previous line's: a binary search of the (sorted) separator positions. Summing a
    # per-byte mask per line (np.add.reduceat) widened every byte to int64 first, 2.3x the cost.
    before = np.searchsorted(np.flatnonzero(text == _SEP), ends)
    counts = np.diff(before, prepend=0)
    return starts, stops, ends, counts


def _ends_with_separator(block: bytes, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    return (stops > starts) & (np.frombuffer(block, dtype=np.uint8)[stops - 1] == _SEP)


class _TableStream:
    """One '$'-separated table, read a chunk at a time with its known defects repaired.

    Gives what reading the whole file at once gave: the same rows, repairs, counts and errors,
    in the same order. A line scanner repairs the rows; it carries across chunks the record
    being glued together from a split line and the last record (a stray tail on a later line
    may still extend it). Lines that need no repair (nearly all) go to the CSV parser as they
    are, found with numpy rather than looked at one by one in Python.

    The header is read on construction (:attr:`names`); :meth:`frames` then reads the rows.
    """

    def __init__(self, member: _Member, table: str, *, chunk_bytes: int | None = None,
                 max_field_chars: int = DEFAULT_MAX_FIELD_CHARS):
        self.member = member
        self.chunk_bytes = chunk_bytes or _CHUNK_BYTES  # tests read with a tiny chunk
        self.max_field_chars = max_field_chars
        with member.open() as fh:
            head = fh.read(4)
        _refuse_wide_text(member.name, head)
        #: the table's text encoding: "utf-8" (non-ASCII text that is valid UTF-8), "latin-1"
        #: (non-ASCII text that is not), None while every byte read is ASCII. A UTF-8 BOM
        #: decides nothing: editors leave one on files of any encoding.
        self.encoding: str | None = None
        self._encoding_line = 0  # the line that decided the encoding (for a refusal's message)
        with member.open() as fh:
            first = next(_blocks(fh, self.chunk_bytes), None)
        if first is None:
            raise InputFormatError(f"{member.name} is empty: a FAERS table needs a header line.")
        raw_header = first[:first.index(b"\n")]
        if b"\x00" in raw_header:
            raise InputFormatError(f"{member.name} holds NUL bytes in its header: it is UTF-16 or "
                                   f"binary, not FAERS text (ASCII, Latin-1 or UTF-8). Save it as "
                                   f"UTF-8 and ingest it again.")
        header = raw_header.decode("latin-1")
        if "$" not in header:
            found = next((s for s in (",", "\t", ";", "|") if s in header), None)
            hint = f" (it looks {found!r}-separated)" if found else ""
            raise InputFormatError(f"{member.name} is not '$'-separated{hint}: FAERS files use "
                                   "'$' between fields.")
        columns = [c.strip().lower() for c in header.split("$")]
        self.trailing = columns[-1] == ""
        if self.trailing:
            columns.pop()
        self.columns = columns
        self.expected = len(columns) - 1 + int(self.trailing)  # separators in a whole row
        text_col = _TEXT_COLUMN.get(table)
        self.text_col = text_col
        self.text_pos = columns.index(text_col) if text_col in columns else len(columns) - 1
        #: the table's columns: every header field with a name, and its field position
        self.positions = [p for p, c in enumerate(columns) if c]
        self.names = [columns[p] for p in self.positions]
        self.split_lines = self.embedded = 0
        #: rows of no known report (counted by :func:`_kept_rows` when it is given the ids)
        self.orphans = 0

    # -- reading -------------------------------------------------------------------------------
    def frames(self, names: list[str]) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
        """The rows, a chunk at a time: the named columns (as text, as in the file; an embedded
        '$' still the placeholder) and the physical line (1-based) where each row starts. The
        repair counts are complete once the last chunk has been taken."""
        position: dict[str, int] = {}
        for name, pos in zip(self.names, self.positions):
            position.setdefault(name, pos)
        return self._frames(names, [position[n] for n in names])

    def _frames(self, names: list[str], positions: list[int]
                ) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
        # Some files end data rows with '$' under a header that does not: decided per file (most
        # rows), so that one row with an embedded '$' and an empty last field is not mistaken
        # for it. That takes a first pass over the file (only for such headers).
        self._data_trailing = not self.trailing and self._rows_end_in_separator()
        self._target = self.expected + int(self._data_trailing)  # separators a whole line has
        self._building: tuple[str, int, int] | None = None  # a record being glued together
        self._last: tuple[str, int] | None = None  # the last record, while a tail may extend it
        self._any_rows = False
        self.split_lines = self.embedded = 0
        with self.member.open() as fh:
            for block, starts, stops, ends, counts, following, first in self._scanned(fh):
                pieces, numbers = self._repair(block, starts, stops, ends, counts, following,
                                               first)
                if pieces:
                    yield self._parse(pieces, numbers, names, positions)

    def _scanned(self, fh: _Readable) -> Iterator[tuple]:
        """Each block of data lines with its scan, the '$' count of the line that follows it
        (None at the end of the file) and the physical number of its first line."""
        blocks = _blocks(fh, self.chunk_bytes)
        first = next(blocks, b"\n")
        previous, number = None, 2  # line 1 is the header
        for block in itertools.chain([first[first.index(b"\n") + 1:]], blocks):
            if not block:
                continue
            scan = _scan(block)
            if previous is not None:
                yield *previous[:5], int(scan[3][0]), previous[5]
            previous = (block, *scan, number)
            number += len(scan[0])
        if previous is not None:
            yield *previous[:5], None, previous[5]

    def _rows_end_in_separator(self) -> bool:
        whole = ending = 0
        with self.member.open() as fh:
            for block, starts, stops, _, counts, _, _ in self._scanned(fh):
                whole += int(np.count_nonzero(counts >= self.expected))
                ending += int(np.count_nonzero((counts == self.expected + 1)
                                               & _ends_with_separator(block, starts, stops)))
        return 2 * ending > whole

    # -- repairing -----------------------------------------------------------------------------
    def _repair(self, block: bytes, starts: np.ndarray, stops: np.ndarray, ends: np.ndarray,
                counts: np.ndarray, following: int | None, first: int) -> tuple[list, list]:
        """The repaired rows of one block (as byte strings for the parser) and their lines."""
        target, n = self._target, len(counts)
        after = np.empty_like(counts)
        after[:-1] = counts[1:]
        after[-1] = -1 if following is None else following
        # A whole line that no stray tail follows (a tail has no '$') is a row as it stands.
        plain = (counts == target) & (after != 0)
        if self._data_trailing:  # ... and, here, ends in the '$' the parser will read as a field
            plain &= _ends_with_separator(block, starts, stops)
        if target == 0:  # a one-column table without trailing '$': every line is a tail or a row
            plain[:] = False
        pieces: list = []
        numbers: list[np.ndarray] = []
        view = memoryview(block)
        done = 0
        for j in np.flatnonzero(~plain).tolist():
            if j > done:
                self._plain(view[starts[done]:ends[j - 1] + 1], first + done, first + j,
                            pieces, numbers)
            nxt = None if (j == n - 1 and following is None) else int(after[j])
            if stops[j] - starts[j] > self.max_field_chars:
                self._check_field_sizes(block[starts[j]:stops[j]].decode("latin-1"), first + j)
            self._line(block[starts[j]:stops[j]].decode("latin-1"), int(counts[j]), first + j,
                       nxt, pieces, numbers)
            done = j + 1
        if done < n:
            self._plain(view[starts[done]:], first + done, first + n, pieces, numbers)
        # a plain line no longer than the limit holds no field longer than it: only the few
        # longer lines are split (in bytes: a UTF-8 character is one byte or more)
        for j in np.flatnonzero(plain & (stops - starts > self.max_field_chars)).tolist():
            self._check_field_sizes(block[starts[j]:stops[j]].decode("latin-1"), first + j)
        if following is None:  # end of file
            self._flush(pieces, numbers)
        return pieces, numbers

    def _plain(self, lines: memoryview, first: int, stop: int, pieces: list,
               numbers: list) -> None:
        self._flush(pieces, numbers)
        pieces.append(lines)
        numbers.append(np.arange(first, stop, dtype=np.int64))
        self._any_rows = True

    def _line(self, line: str, count: int, number: int, following: int | None, pieces: list,
              numbers: list) -> None:
        """One line that may need a repair (``following``: the next line's '$' count, None at
        the end of the file)."""
        target = self._target
        if self._building is not None:
            text, total, start = self._building
            if total < target and count < target and total + count <= target:
                # A record broken by a stray line break: glue the fragments until it is whole.
                self._building = (text + " " + line, total + count, start)
                self.split_lines += 1
                return
            self._finish_record(self._building)
        if not line.strip():
            return
        if count == 0 and self._any_rows and (following is None or following >= target):
            # The tail of the previous record's last field, cut off by a stray line break
            # (the previous line already had all its separators). That record is still held:
            # a row the parser has taken is always followed by a line with a '$'.
            # (The line before a tail is never plain, as the line after it has no '$': it went
            # through this method, which holds it until it is flushed, so _last is set.)
            assert self._last is not None
            text, start = self._last
            self._last = (text + " " + line, start)
            self.split_lines += 1
            return
        self._flush(pieces, numbers)
        self._building = (line, count, number)

    def _finish_record(self, record: tuple[str, int, int]) -> None:
        """Check and repair ``record``, the one being built, and hold it as the last record."""
        line, count, start = record
        self._building = None
        expected = self.expected
        if self._data_trailing and count > expected and line.endswith("$"):
            line, count = line[:-1], count - 1
        if count > expected:
            # An embedded '$': merge the surplus fields into the table's free-text column.
            parts = line.split("$")
            surplus, at = count - expected, self.text_pos
            merged = _PLACEHOLDER.join(parts[at:at + surplus + 1])
            line = "$".join(parts[:at] + [merged] + parts[at + surplus + 1:])
            self.embedded += 1
        elif count < expected:
            raise InputFormatError(
                f"{self.member.name} line {start}: {count + 1 - int(self.trailing)} field(s) "
                f"where the header has {len(self.columns)}, and the following line does not "
                f"complete it.")
        self._last = (line, start)
        self._any_rows = True

    def _flush(self, pieces: list, numbers: list) -> None:
        """Hand the held records to the parser: no later line can change them any more."""
        if self._building is not None:
            self._finish_record(self._building)
        if self._last is not None:
            line, start = self._last
            if len(line) > self.max_field_chars:  # glued from several lines: checked whole
                self._check_field_sizes(line, start)
            # with rows ending in '$', the parser reads that '$' as one more (empty) field
            pieces.append(line.encode("latin-1") + (b"$\n" if self._data_trailing else b"\n"))
            numbers.append(np.array([start], dtype=np.int64))
            self._last = None

    def _check_field_sizes(self, line: str, number: int) -> None:
        """Refuse a field of ``line`` (Latin-1 text of its bytes) longer than the limit. In
        characters: a UTF-8 table's characters are counted as UTF-8."""
        for position, field_text in enumerate(line.split("$")):
            size = len(field_text)
            if size > self.max_field_chars and self.encoding != "latin-1":
                try:  # UTF-8 text has fewer characters than bytes
                    size = len(field_text.encode("latin-1").decode("utf-8"))
                except UnicodeDecodeError:
                    pass
            if size > self.max_field_chars:
                column = (self.columns[position] if position < len(self.columns)
                          and self.columns[position] else f"field {position + 1}")
                raise InputFormatError(
                    f"{self.member.name} line {number}: {column!r} holds {size:,} characters, more "
                    f"than the limit of {self.max_field_chars:,}: FAERS fields hold at most a "
                    f"few hundred, so the file is damaged or not FAERS. If the field is meant, "
                    f"raise the limit (max_field_chars; medanon ingest --max-field-chars).")

    def _decoded(self, body: bytes, lines: np.ndarray) -> bytes:
        """``body`` as UTF-8 for the parser, its encoding told apart: text that is valid UTF-8 is
        read as UTF-8 (a Latin-1 byte pair that is valid UTF-8 is all but impossible in real
        text); other non-ASCII text as Latin-1 (every byte a character), as FAERS' ASCII files
        with a stray accented byte are. One table, one encoding: a table whose text is UTF-8 in
        one place and not in another is refused, naming the lines, rather than stored half
        garbled."""
        if body.isascii():  # all of FDA's own files: nothing to decide, nothing to recode
            return body

        def line_at(offset: int) -> int:
            return int(lines[min(body.count(b"\n", 0, offset), len(lines) - 1)])

        try:
            body.decode("utf-8")
            found, at = "utf-8", re.search(rb"[\x80-\xff]", body)
            offset = at.start() if at else 0
        except UnicodeDecodeError as exc:
            found, offset = "latin-1", exc.start
            utf8 = _first_utf8_character(body)
            if utf8 is not None:  # UTF-8 in the same block as bytes that are not
                self._refuse_mixed(line_at(utf8), line_at(offset))
        line = line_at(offset)
        if self.encoding is None:
            self.encoding, self._encoding_line = found, line
        elif self.encoding != found:
            self._refuse_mixed(*((self._encoding_line, line) if self.encoding == "utf-8"
                                 else (line, self._encoding_line)))
        return body if found == "utf-8" else body.decode("latin-1").encode("utf-8")

    def _refuse_mixed(self, utf8_line: int, other_line: int) -> None:
        raise InputFormatError(
            f"{self.member.name} mixes text encodings: it is UTF-8 at line {utf8_line} and is "
            f"not UTF-8 at line {other_line}. Save the file in one encoding (UTF-8) and ingest "
            f"it again; read as it is, one part would be stored garbled.")

    # -- parsing -------------------------------------------------------------------------------
    def _parse(self, pieces: list, numbers: list[np.ndarray], names: list[str],
               positions: list[int]) -> tuple[pd.DataFrame, np.ndarray]:
        lines = np.concatenate(numbers)
        if not positions:
            return pd.DataFrame(index=pd.RangeIndex(len(lines))), lines
        # pandas reads UTF-8 fastest: Latin-1 is recoded (every byte is a character in it)
        body = self._decoded(b"".join(pieces), lines)
        frame = pd.read_csv(io.BytesIO(body), sep="$", header=None, usecols=sorted(set(positions)),
                            dtype=str, keep_default_na=False, na_filter=False, quoting=3,
                            engine="c", index_col=False)
        frame = frame[positions]
        frame.columns = names
        return frame, lines


@dataclass
class _Table:
    frame: pd.DataFrame
    line_numbers: np.ndarray  # physical line (1-based) where each data row starts
    split_lines: int
    embedded: int


def _collect(stream: _TableStream, names: list[str] | None = None) -> _Table:
    """The whole table (or the named columns of it that exist), every embedded '$' restored."""
    if names is None:
        names, positions = stream.names, stream.positions
        chunks = stream._frames(names, positions)
    else:
        names = [n for n in names if n in stream.names]
        chunks = stream.frames(names)
    frames, lines = [], []
    for frame, numbers in chunks:
        frames.append(frame)
        lines.append(numbers)
    if frames:
        frame = pd.concat(frames, ignore_index=True)
    else:
        frame = pd.DataFrame({i: pd.Series([], dtype=str) for i in range(len(names))})
        frame.columns = names
    if stream.embedded and stream.text_col in frame.columns:
        frame[stream.text_col] = frame[stream.text_col].str.replace(_PLACEHOLDER, "$", regex=False)
    line_numbers = np.concatenate(lines) if lines else np.zeros(0, dtype=np.int64)
    return _Table(frame, line_numbers, stream.split_lines, stream.embedded)


def _parse_table(member: _Member, table: str, *, chunk_bytes: int | None = None) -> _Table:
    """One table whole (every column), read a chunk at a time."""
    return _collect(_TableStream(member, table, chunk_bytes=chunk_bytes))


def read_faers_table(path: str | Path, table: str | None = None) -> pd.DataFrame:
    """Parse one FAERS table file (repairs applied; every column as text, lower-case names).

    ``table`` (DEMO, DRUG, REAC, INDI) picks the free-text column that absorbs an embedded ``$``;
    by default it is read from the file name.
    """
    path = Path(path)
    if table is None:
        match = _FILE_NAME.match(path.name)
        if not match:
            raise InputFormatError(f"{path.name!r} is not a FAERS table name (e.g. DEMO22Q4.txt).")
        table = match.group(1).upper()
    if not path.is_file():
        raise InputFormatError(f"FAERS table {str(path)!r} does not exist.")
    member = _Member(table, "", str(path), _file_opener(path))
    return _parse_table(member, table).frame


def _era_of(columns: list[str], name: str) -> str:
    if "isr" in columns:
        return "legacy"
    if "primaryid" in columns:
        return "faers-2014" if "sex" in columns else "faers-2012"
    raise InputFormatError(f"{name} has neither 'primaryid' (FAERS) nor 'ISR' (legacy AERS) in its "
                           "header: it is not a FAERS DEMO file.")


def _select(table: _Table, mapping: dict[str, str], name: str,
            optional: tuple[str, ...] = ()) -> pd.DataFrame:
    """The mapped columns, stripped, under our names; an ``optional`` file column the table
    lacks is read as empty."""
    missing = [col for col in mapping.values() if col not in table.frame.columns]
    required = [col for col in missing if col not in optional]
    if required:
        raise InputFormatError(f"{name} lacks required column(s): {', '.join(required)}.")
    frame = pd.DataFrame({ours: _stripped(table.frame[theirs]) if theirs not in missing
                          else pd.Series("", index=table.frame.index, dtype=str)
                          for ours, theirs in mapping.items()})
    return frame


def _stripped(values: pd.Series) -> pd.Series:
    """``values.str.strip()`` of a column of text (``values`` itself when no value has
    anything to strip, as in FDA's files). ``str.strip`` gives back the value itself when there
    is nothing to strip: mapped over the column in C and compared by identity, it costs a
    fraction of pandas' string method (which makes a new column of the unique ids)."""
    given = values.to_numpy(dtype=object)
    stripped = list(map(str.strip, given))
    if all(map(operator.is_, stripped, given)):
        return values
    return pd.Series(stripped, index=values.index, dtype=str, name=values.name)


def _per_value(values: pd.Series, method: str) -> pd.Series:
    """``values.str.<method>()``; a column of few distinct values (codes, dates) calls it once
    per distinct value."""
    which, distinct = pd.factorize(values.to_numpy(dtype=object))
    if 4 * len(distinct) > len(values):
        return getattr(values.str, method)()
    done = getattr(pd.Series(distinct, dtype=str).str, method)().to_numpy(dtype=object)
    return pd.Series(done[which], index=values.index, dtype=str)


# -- conversions ---------------------------------------------------------------------------------
def _numeric(values: pd.Series) -> pd.Series:
    """``pd.to_numeric(values.where(values != ""), errors="coerce")`` of a text column, each
    distinct value converted once: ages, weights and case versions repeat a few hundred or
    thousand values over a quarter's rows. (The result's dtype is that of the distinct
    values' conversion, which sees the same values as the whole column's would.)"""
    which, distinct = pd.factorize(values.to_numpy(dtype=object))
    converted = pd.to_numeric(pd.Series(distinct, dtype=object).where(distinct != ""),
                              errors="coerce")
    return pd.Series(converted.to_numpy()[which], index=values.index, name=values.name)


def _to_number(values: pd.Series, lines: np.ndarray, what: str, name: str) -> np.ndarray:
    numbers = _numeric(values).to_numpy(dtype=float)
    bad = np.flatnonzero(np.isnan(numbers) & (values != "").to_numpy())
    if len(bad):
        raise InputFormatError(f"{name} line {lines[bad[0]]}: {what} {values.iloc[bad[0]]!r} is not a "
                               f"number ({len(bad)} such row(s)).")
    return numbers


def _convert_units(values: np.ndarray, units: pd.Series, table: dict[str, float],
                   lines: np.ndarray, what: str, name: str) -> np.ndarray:
    codes = _per_value(units, "upper").to_numpy(dtype=object)
    unknown = ~np.isin(codes, list(table) + [""])
    if unknown.any():
        first = np.flatnonzero(unknown)[0]
        raise InputFormatError(
            f"{name} line {lines[first]}: unknown {what} {codes[first]!r} ({int(unknown.sum())} such "
            f"row(s)); known codes: {', '.join(table)}.")
    which, distinct = pd.factorize(codes)  # a few distinct codes: looked up once each
    factor = np.array([table.get(c, np.nan) for c in distinct], dtype=float)[which]
    return values * factor  # an empty unit gives NaN: a value without its unit is unusable


def _mesh_age(years: np.ndarray, age_grp: pd.Series) -> np.ndarray:
    """The MeSH age group of each report: from its age in years; for a report without a usable
    age, from its FAERS ``age_grp`` when that code stands for one MeSH leaf (N Newborn, I Infant
    (1-23 months), T Adolescent: :func:`~medanon.hierarchies.builtin.mesh_leaf_of_faers_age_group`);
    else None. C, A and E span several leaves and raw records hold leaves, so they stay missing;
    an unknown code is no age either (the column is only a fallback)."""
    labels = np.asarray(age_to_mesh(years), dtype=object)
    gap = np.flatnonzero(pd.isna(labels))
    if len(gap):
        # a handful of distinct codes: each looked up once
        which, codes = pd.factorize(age_grp.to_numpy(dtype=object)[gap])
        leaves = np.array([mesh_leaf_of_faers_age_group(c) for c in codes] + [None], dtype=object)
        labels[gap] = leaves[which]
    return _none_for_missing(labels)


def _none_for_missing(values: np.ndarray) -> np.ndarray:
    values = values.copy()
    values[pd.isna(values)] = None
    return values


@dataclass(frozen=True)
class _DemoOrder:
    """The DEMO table's distinct report ids in file order (``known``'s values) and each one's
    position in ``kept`` (-1: not kept).

    FDA writes DRUG and REAC (and often the others) report by report in DEMO's order, so a
    chunk's reports are usually a stretch of DEMO's: one lookup finds where it starts, and
    comparing the stretch with the chunk (a string comparison per report) replaces hashing
    every report id of the chunk (~0.1 s per 450k ids)."""

    ids: np.ndarray
    kept_at: np.ndarray

    def positions(self, heads: np.ndarray, known: pd.Index) -> np.ndarray | None:
        """Where each of ``heads`` (a chunk's report ids, one per run) is in ``kept``, when
        ``heads`` is a stretch of DEMO's ids as they stand; else None."""
        if not len(heads):
            return None
        start = int(known.get_indexer(pd.Index(heads[:1]))[0])
        stop = start + len(heads)
        if start < 0 or stop > len(self.ids) or self.ids[stop - 1] != heads[-1]:
            return None
        if not np.equal(self.ids[start:stop], heads).all():
            return None
        return self.kept_at[start:stop].copy()


def _term_sets(member: _Member, table: str, mapping: dict[str, str], column: str,
               kept: pd.Index, *, report: IngestReport | None = None,
               known: pd.Index | None = None, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
               demo_order: _DemoOrder | None = None
               ) -> tuple[list[tuple[str, ...]], int, int]:
    """Per report of ``kept`` (in its order), the sorted distinct non-empty values of one
    column of a DRUG, REAC or INDI table, as tuples; and the table's repair counts.

    Read a chunk at a time: only the rows of kept reports are held (their position and value).
    With ``known`` (every report id of DEMO) the rows of no DEMO row are counted in
    ``report.orphan_rows``.
    """
    stream = _TableStream(member, table, max_field_chars=max_field_chars)
    rows, values, _ = _kept_rows(stream, mapping, column, kept, known=known,
                                 demo_order=demo_order)
    if report is not None and known is not None:
        report.orphan_rows[table] = stream.orphans
    if not len(rows):
        return [()] * len(kept), stream.split_lines, stream.embedded
    codes, terms = _distinct_terms(stream, mapping[column], values)
    return _sets_by_row(rows, codes, terms, len(kept)), stream.split_lines, stream.embedded


def _kept_rows(stream: _TableStream, mapping: dict[str, str], column: str, kept: pd.Index,
               extra: str | None = None, optional: tuple[str, ...] = (),
               known: pd.Index | None = None, demo_order: _DemoOrder | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The rows of a table that belong to a report of ``kept``: each one's position in
    ``kept``, its value of ``column`` (as in the file) and, when asked, of the column ``extra``
    (None when the table lacks it and it is ``optional``: our names, e.g. ``role_cod``).
    With ``known`` (unique, stripped ids), the rows whose id is not in it are counted in
    ``stream.orphans``; with ``demo_order`` (``known`` in DEMO's order, and where each is in
    ``kept``) a chunk whose reports come in DEMO's order is placed without hashing its ids.

    Raises:
        InputFormatError: the table lacks a column of ``mapping`` that is not optional.
    """
    id_col, value_col = mapping["report_id"], mapping[column]
    extra_col = mapping[extra] if extra is not None else None
    wanted = [id_col, value_col] + ([extra_col] if extra_col else [])
    present = [c for c in wanted if c in stream.names]
    rows, values, extras = [], [], []
    stream.orphans = 0
    for frame, _ in stream.frames(present):
        if id_col not in present or value_col not in present:
            continue  # a required column is missing: told below, after any bad line
        ids = frame[id_col].to_numpy(dtype=object)
        # A report's rows follow one another (FDA writes DRUG, REAC, ... by report id): each
        # run of one id is looked up once. Comparing neighbours costs a fraction of hashing
        # every row's id string (DRUG has ~4 rows a report).
        heads, runs = _runs(ids)
        in_order = (demo_order.positions(heads, known)
                    if demo_order is not None and known is not None else None)
        # (get_indexer makes an Index of an array or list itself; it is built here as the
        # stubs ask, with the same call.)
        found = kept.get_indexer(pd.Index(heads)) if in_order is None else in_order
        # Ids are compared stripped. One found as it stands had nothing to strip (the kept ids
        # are stripped): only the others are stripped and looked up again. (A chunk in DEMO's
        # order holds only DEMO's ids as they stand: a report not kept, no orphan.)
        missed = np.flatnonzero(found < 0) if in_order is None else np.zeros(0, dtype=np.intp)
        if len(missed):
            stripped = [heads[i].strip() for i in missed.tolist()]
            found[missed] = kept.get_indexer(pd.Index(stripped))
            if known is not None:  # rows of a dropped report, or of none at all
                orphan = known.get_indexer(pd.Index(stripped)) < 0
                stream.orphans += int(np.diff(runs)[missed[orphan]].sum())
        where = np.repeat(found, np.diff(runs))
        hit = where >= 0
        rows.append(where[hit])
        values.append(frame[value_col].to_numpy(dtype=object)[hit])
        if extra_col in present:
            extras.append(frame[extra_col].to_numpy(dtype=object)[hit])
    optional_cols = {mapping[c] for c in optional}
    missing = [c for c in mapping.values() if c not in stream.names and c not in optional_cols]
    if missing:
        raise InputFormatError(f"{stream.member.name} lacks required column(s): "
                               f"{', '.join(missing)}.")
    if not rows:
        empty = np.zeros(0, dtype=object)
        return np.zeros(0, dtype=np.int64), empty, (empty if extra_col in present else None)
    return (np.concatenate(rows), np.concatenate(values),
            np.concatenate(extras) if extra_col in present else None)


def _runs(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first value of each run of equal neighbours of ``ids`` and where the runs start,
    with ``len(ids)`` appended (run j is ``ids[runs[j]:runs[j + 1]]``)."""
    change = np.empty(len(ids), dtype=bool)
    change[:1] = True
    np.not_equal(ids[1:], ids[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    return ids[starts], np.append(starts, len(ids))


def _distinct_terms(stream: _TableStream, value_col: str,
                    values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``values`` and their distinct terms: each distinct value is restored (an
    embedded '$') and stripped once, not once per row."""
    codes, uniques = pd.factorize(values)
    terms = pd.Series(uniques, dtype=str)
    if stream.embedded and value_col == stream.text_col:
        terms = terms.str.replace(_PLACEHOLDER, "$", regex=False)
    return codes, terms.str.strip().to_numpy(dtype=object)


def _drug_sets(member: _Member, mapping: dict[str, str], kept: pd.Index, report: IngestReport,
               *, known: pd.Index | None = None, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
               demo_order: _DemoOrder | None = None
               ) -> tuple[dict[str, list[tuple[str, ...]]], int, int]:
    """Per report of ``kept``: its drugs of every role (``drugs``) and of each role
    (:data:`DRUG_ROLES`), from one chunked read of DRUG; and the table's repair counts.

    A role code is compared stripped and in upper case; a drug with another role code is in
    ``drugs`` only, counted in ``report.unknown_roles``; one with no role code (or of a DRUG
    table without ``role_cod``) too, counted in ``report.drugs_without_role``.
    """
    stream = _TableStream(member, "DRUG", max_field_chars=max_field_chars)
    rows, values, roles = _kept_rows(stream, mapping, "drugname", kept, "role_cod",
                                     optional=_OPTIONAL_COLUMNS["DRUG"], known=known,
                                     demo_order=demo_order)
    if known is not None:
        report.orphan_rows["DRUG"] = stream.orphans
    if roles is None:
        report.absent.append("DRUG.role_cod")
        roles = np.full(len(rows), "", dtype=object)
    out: dict[str, list[tuple[str, ...]]] = {
        "drugs": [()] * len(kept), **{target: [()] * len(kept) for target in DRUG_ROLES.values()}}
    if not len(rows):
        return out, stream.split_lines, stream.embedded
    codes, terms = _distinct_terms(stream, mapping["drugname"], values)
    out["drugs"] = _sets_by_row(rows, codes, terms, len(kept))
    which, role_codes = pd.factorize(roles)
    role_codes = pd.Series(role_codes, dtype=str).str.strip().str.upper().to_numpy(dtype=object)
    # each row's role as its place in DRUG_ROLES (-1: none of them), from its distinct code:
    # integers compared per row, not 1.5M strings of a 450k quarter five times
    roles_known = list(DRUG_ROLES)
    slot = np.array([roles_known.index(c) if c in DRUG_ROLES else -1 for c in role_codes],
                    dtype=np.int64)[which]
    for place, target in enumerate(DRUG_ROLES.values()):
        mine = slot == place
        out[target] = _sets_by_row(rows[mine], codes[mine], terms, len(kept))
    other = role_codes[which[slot < 0]]
    report.drugs_without_role = int((other == "").sum())
    unknown = pd.Series(other[other != ""]).value_counts()
    report.unknown_roles = {str(k): int(v) for k, v in sorted(unknown.items())}
    return out, stream.split_lines, stream.embedded


def _outcome_sets(members: list[_Member] | None, mapping: dict[str, str], kept: pd.Index,
                  report: IngestReport, *, known: pd.Index | None = None,
                  max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
                  demo_order: _DemoOrder | None = None
                  ) -> list[tuple[str, ...]]:
    """Per report of ``kept``, its OUTC codes (stripped, upper case): empty for every report
    of a quarter without an OUTC file (``report.absent`` says so). Codes FDA does not document
    are kept and counted in ``report.unknown_outcomes``."""
    if not members:
        report.absent.append("OUTC")
        return [()] * len(kept)
    member = members[0]
    stream = _TableStream(member, "OUTC", max_field_chars=max_field_chars)
    if mapping["outc_cod"] not in stream.names:
        alias = next((a for a in _ALIASES["outc_cod"] if a in stream.names), None)
        if alias is not None:
            mapping = {**mapping, "outc_cod": alias}
    rows, values, _ = _kept_rows(stream, mapping, "outc_cod", kept, known=known,
                                 demo_order=demo_order)
    if known is not None:
        report.orphan_rows["OUTC"] = stream.orphans
    report.repaired_split_lines["OUTC"] = stream.split_lines
    report.repaired_embedded_separators["OUTC"] = stream.embedded
    if not len(rows):
        return [()] * len(kept)
    codes, terms = _distinct_terms(stream, mapping["outc_cod"], values)
    terms = pd.Series(terms, dtype=str).str.upper().to_numpy(dtype=object)
    given = terms[codes]
    unknown = pd.Series(given[(given != "") & ~np.isin(given, OUTCOME_CODES)]).value_counts()
    report.unknown_outcomes = {str(k): int(v) for k, v in sorted(unknown.items())}
    return _sets_by_row(rows, codes, terms, len(kept))


def _sets_by_row(rows: np.ndarray, codes: np.ndarray, terms: np.ndarray,
                 n: int) -> list[tuple[str, ...]]:
    """For rows 0..n-1, the sorted distinct non-empty terms given for each (``rows[i]`` holds
    ``terms[codes[i]]``), as tuples; ``()`` for a row without any."""
    sets: list[tuple[str, ...]] = [()] * n
    # Sort integer codes, not strings: each distinct term once, ranked in string order (two
    # codes may name one term, e.g. 'A' and 'A ' once stripped).
    same, distinct = pd.factorize(terms)
    order = np.argsort(distinct, kind="stable")
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[order] = np.arange(len(distinct))
    present = (distinct != "")[same][codes]
    width = len(distinct)
    pairs = np.sort(rows[present].astype(np.int64) * width + rank[same][codes[present]])
    if not len(pairs):
        return sets
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]]
    owners = pairs // width
    # a slice of a tuple is a tuple: one object made per row, not a list and then a tuple
    words = tuple(distinct[order][pairs % width].tolist())
    firsts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    bounds = np.r_[firsts, len(owners)].tolist()
    for owner, start, stop in zip(owners[firsts].tolist(), bounds, bounds[1:]):
        sets[owner] = words[start:stop]
    return sets


# -- one quarter ---------------------------------------------------------------------------------
def _check_files(period: Period, files: dict[str, list[_Member]]) -> None:
    for table, members in files.items():
        if len(members) > 1:
            names = ", ".join(m.name for m in members)
            raise InputFormatError(f"Quarter {period} has {len(members)} {table} files: {names}.")
    missing = [t for t in REQUIRED_TABLES if t not in files]
    if missing:
        where = ", ".join(sorted({m[0].name.split(':')[0] for m in files.values()}))
        raise InputFormatError(f"Quarter {period} has no {', '.join(missing)} file (found only: "
                               f"{', '.join(sorted(files)) or 'nothing'} in {where}).")


def _deleted_cases(files: dict[str, list[_Member]]) -> set[str]:
    """The case ids of a quarter's DELETE list (a small file, read whole)."""
    if "DELETE" not in files:
        return set()
    raw = files["DELETE"][0].read().decode("latin-1")
    return {tok for tok in (ln.strip().rstrip("$").strip() for ln in raw.splitlines()) if tok}


def _read_quarter(tag: str, files: dict[str, list[_Member]], source: str, *,
                  max_field_chars: int = DEFAULT_MAX_FIELD_CHARS
                  ) -> tuple[Period, str, pd.DataFrame, IngestReport]:
    period = period_from_faers_tag(tag)
    demo_member = files["DEMO"][0]
    demo_stream = _TableStream(demo_member, "DEMO", max_field_chars=max_field_chars)
    era = _era_of(demo_stream.names, demo_member.name)
    spec = _ERA_COLUMNS[era]
    demo_table = _collect(demo_stream, [*spec["DEMO"].values(), "age_grp"])  # age_grp if present
    report = IngestReport(period=period.label, era=era, source=source)
    optional = _OPTIONAL_COLUMNS["DEMO"]
    demo = _select(demo_table, spec["DEMO"], demo_member.name, optional)
    report.absent += [f"DEMO.{c}" for c in DATE_COLUMNS
                      if spec["DEMO"].get(c) not in demo_table.frame.columns]
    lines = demo_table.line_numbers
    report.demo_rows = len(demo)
    report.repaired_split_lines["DEMO"] = demo_table.split_lines
    report.repaired_embedded_separators["DEMO"] = demo_table.embedded

    bad_ids = (demo["report_id"] == "") | (demo["case_id"] == "")
    if bad_ids.any():
        first = int(np.flatnonzero(bad_ids.to_numpy())[0])
        raise InputFormatError(f"{demo_member.name} line {lines[first]}: empty report or case id.")
    version = _numeric(demo["version"])
    if era != "legacy" and version.isna().any():
        first = int(np.flatnonzero(version.isna().to_numpy())[0])
        raise InputFormatError(f"{demo_member.name} line {lines[first]}: caseversion "
                               f"{demo['version'].iloc[first]!r} is not an integer.")
    # what a duplicate row is compared on: every column read, as written (stripped)
    content = demo.assign(age_grp=_stripped(demo_table.frame["age_grp"])
                          if "age_grp" in demo_table.frame.columns else "")
    demo["version"] = version.astype("Int64")
    age = _to_number(demo["age"], lines, "age", demo_member.name)
    weight = _to_number(demo["wt"], lines, "weight", demo_member.name)
    age_years = _convert_units(age, demo["age_cod"], AGE_UNITS, lines, "age_cod", demo_member.name)
    weight_kg = _convert_units(weight, demo["wt_cod"], WEIGHT_UNITS, lines, "wt_cod", demo_member.name)
    sex = _per_value(demo["sex"], "upper")
    unknown_sex = ~sex.isin(list(SEX_VALUES) + list(SEX_MISSING))
    if unknown_sex.any():
        first = int(np.flatnonzero(unknown_sex.to_numpy())[0])
        raise InputFormatError(f"{demo_member.name} line {lines[first]}: unknown sex code "
                               f"{demo['sex'].iloc[first]!r}; known codes: F, M, UNK, NS.")

    implausible_age = (age_years < PLAUSIBLE_AGE_YEARS[0]) | (age_years > PLAUSIBLE_AGE_YEARS[1])
    implausible_weight = (weight_kg < PLAUSIBLE_WEIGHT_KG[0]) | (weight_kg > PLAUSIBLE_WEIGHT_KG[1])
    # a value without its unit converts to NaN: unusable, made missing (counted)
    unitless_age = ~np.isnan(age) & np.isnan(age_years)
    unitless_weight = ~np.isnan(weight) & np.isnan(weight_kg)
    age_years = np.where(implausible_age, np.nan, age_years)
    weight_kg = np.where(implausible_weight, np.nan, np.round(weight_kg, 2))

    records = pd.DataFrame({
        "period": period.label,
        "case_id": demo["case_id"].to_numpy(),
        "report_id": demo["report_id"].to_numpy(),
        "version": demo["version"].array,
        "age_years": age_years,
        "sex": _none_for_missing(sex.map(SEX_VALUES).to_numpy(dtype=object)),
        "weight": weight_kg,
        "fda_dt": demo["fda_dt"].to_numpy(),
        "init_fda_dt": (demo["init_fda_dt"].to_numpy() if "init_fda_dt" in demo.columns
                        else np.full(len(demo), "", dtype=object)),
        "_age_grp": demo_table.frame.get("age_grp", pd.Series("", index=demo.index)).to_numpy(),
        "_implausible_age": implausible_age, "_implausible_weight": implausible_weight,
        "_unitless_age": unitless_age, "_unitless_weight": unitless_weight,
    })
    # FDA files occasionally repeat a DEMO row, verbatim or not: the last one is kept
    duplicated = records["report_id"].duplicated(keep="last").to_numpy()
    report.duplicate_rows = int(duplicated.sum())
    if duplicated.any():
        report.conflicting_duplicates = _conflicting(content, duplicated, ["report_id"])
    records = records.loc[~duplicated]

    if era != "legacy":
        # Ties on caseversion: the later FDA date, then the larger primaryid (as a number).
        # Sorted by each key's rank (what sort_values(kind="stable") orders by, missing values
        # last); a report id is unique by now, so no two rows tie on all five keys. In that
        # order a case's reports, and a case version's, are neighbours: the one kept of each
        # is the last, the one its next neighbour does not share the key with.
        case = _ranks(records["case_id"])
        version_rank = _ranks(records["version"])
        order = np.lexsort((_ranks(records["report_id"]),
                            _ranks(pd.to_numeric(records["report_id"], errors="coerce")),
                            _ranks(records["fda_dt"]), version_rank, case))
        records = records.iloc[order]
        case, version_rank = case[order], version_rank[order]
        tie = np.zeros(len(case), dtype=bool)
        tie[:-1] = (case[1:] == case[:-1]) & (version_rank[1:] == version_rank[:-1])
        report.same_version_reports = int(tie.sum())
        records, case = records.loc[~tie], case[~tie]
        latest = np.ones(len(case), dtype=bool)
        latest[:-1] = case[1:] != case[:-1]
        report.superseded_reports = int((~latest).sum())
        records = records.loc[latest]
    report.reports_read = len(records)
    # counted over the reports read, as the dates are (not over rows dropped above)
    report.implausible = {"age": int(records.pop("_implausible_age").sum()),
                          "weight": int(records.pop("_implausible_weight").sum())}
    report.without_unit = {"age": int(records.pop("_unitless_age").sum()),
                           "weight": int(records.pop("_unitless_weight").sum())}

    # Dates are checked after the version selection, which orders on fda_dt as FDA wrote it.
    for column in DATE_COLUMNS:
        records[column], invalid = valid_dates(records[column].to_numpy(dtype=object))
        report.invalid_dates[column] = invalid

    kept = pd.Index(records["report_id"])  # unique: one row per report id by now
    # every DEMO row's id, once each in file order; the records are still labelled by their
    # DEMO row, so where each id is among the kept reports needs no lookup
    known_of_row, known_ids = pd.factorize(demo["report_id"].to_numpy(dtype=object))
    known = pd.Index(known_ids)
    kept_at = np.full(len(known_ids), -1, dtype=np.intp)
    kept_at[known_of_row[records.index.to_numpy()]] = np.arange(len(records))
    demo_order = _DemoOrder(np.asarray(known_ids, dtype=object), kept_at)
    drugs, split, embedded = _drug_sets(files["DRUG"][0], spec["DRUG"], kept, report,
                                        known=known, max_field_chars=max_field_chars,
                                        demo_order=demo_order)
    report.repaired_split_lines["DRUG"] = split
    report.repaired_embedded_separators["DRUG"] = embedded
    for target, sets in drugs.items():
        records[target] = sets
    for table, column, target in (("REAC", "pt", "reactions"), ("INDI", "indi_pt", "indications")):
        sets, split, embedded = _term_sets(files[table][0], table, spec[table], column, kept,
                                           report=report, known=known,
                                           max_field_chars=max_field_chars,
                                           demo_order=demo_order)
        report.repaired_split_lines[table] = split
        report.repaired_embedded_separators[table] = embedded
        records[target] = sets
    records["outcomes"] = _outcome_sets(files.get("OUTC"), spec["OUTC"], kept, report,
                                        known=known, max_field_chars=max_field_chars,
                                        demo_order=demo_order)
    # _age_grp stays beside the records until _finish: FaersQuarter.age_groups keeps it
    records["age"] = _mesh_age(records["age_years"].to_numpy(dtype=float), records["_age_grp"])
    records = _in_case_order(records)
    return period, era, records, report


def _in_case_order(records: pd.DataFrame) -> pd.DataFrame:
    """``records`` sorted by case id, version and report id (stable), indexed 0, 1, ...

    The FAERS eras' records are in that order already: sorted by case id for the version
    selection, which kept one report per case. Moving every column (the term sets among them)
    through a sort that keeps each row in place cost ~0.4 s of a 450k quarter."""
    if records["case_id"].is_monotonic_increasing and records["case_id"].is_unique:
        return records.reset_index(drop=True)
    return records.sort_values(["case_id", "version", "report_id"],
                               kind="stable").reset_index(drop=True)


def _ranks(values: pd.Series) -> np.ndarray:
    """Each value's rank among the column's distinct values in sort order, a missing value
    after every other (as ``sort_values`` orders it, ``na_position="last"``). The distinct
    values are hashed and only they are sorted."""
    codes, distinct = pd.factorize(values)
    rank = np.empty(len(distinct) + 1, dtype=np.int64)
    # (numpy's stable sort is a merge sort, nearly linear on FDA's ids, which come about in
    # order; pandas' Index.argsort took ~20x as long on them)
    rank[np.argsort(np.asarray(distinct), kind="stable")] = np.arange(len(distinct))
    rank[-1] = len(distinct)  # code -1: a missing value
    return rank[codes]


def _conflicting(content: pd.DataFrame, dropped: np.ndarray, keys: list[str]) -> int:
    """How many ``dropped`` rows of ``content`` differ, in a column other than ``keys``, from
    the row kept for the same ``keys`` (the last one)."""
    same = content.duplicated(keys, keep=False).to_numpy()
    rows = content.loc[same]
    others = [c for c in content.columns if c not in keys]
    kept = rows.groupby(keys, sort=False)[others].transform("last")
    differs = (rows[others] != kept).any(axis=1).to_numpy()
    return int((differs & dropped[same]).sum())


#: the columns a report needs unless a schema says otherwise: the papers' QIDs and sensitive
#: attributes (the default schema's).
REQUIRED_VALUES = ("age", "sex", "weight", "indications", "reactions")


def _is_missing(values: pd.Series) -> np.ndarray:
    """Missing cells of one record column: NaN/None, or an empty set of terms."""
    missing = values.isna().to_numpy(dtype=bool, copy=True)
    if values.dtype == object:
        # ``v == ()`` holds for the empty tuple only (a cell of text or None compares unequal),
        # and mapped in C it costs a third of a generator's test per cell
        missing |= np.fromiter(map(operator.eq, values, itertools.repeat(())), dtype=bool,
                               count=len(values))
    return missing


def _finish(records: pd.DataFrame, report: IngestReport, keep_missing: bool,
            required: tuple[str, ...]) -> pd.DataFrame:
    missing = {name: _is_missing(records[name]) for name in required if name in records.columns}
    report.required = list(missing)
    report.missing = {k: int(v.sum()) for k, v in missing.items()}
    report.kept_missing = keep_missing
    incomplete = np.logical_or.reduce(list(missing.values())) if len(records) else np.zeros(0, bool)
    if not keep_missing:
        report.dropped_reports = int(incomplete.sum())
        records = records.loc[~incomplete].reset_index(drop=True)
    report.reports = len(records)
    report.cases = int(records["case_id"].nunique())
    return records[[*RECORD_COLUMNS, *(["_age_grp"] if "_age_grp" in records.columns else [])]]


#: the columns of the loader's records, in order
RECORD_COLUMNS = ("case_id", "period", "report_id", "version", "age", "sex", "weight",
                  "indications", "reactions", "drugs", *DRUG_ROLES.values(), "outcomes",
                  "age_years", "init_fda_dt", "fda_dt")


def read_faers(source: str | Path, *, keep_missing: bool = True,
               progress: Callable[[str], None] | None = None, schema=None,
               strict: bool = False,
               max_field_chars: int = DEFAULT_MAX_FIELD_CHARS) -> FaersIngest:
    """Read every FAERS/AERS quarter found in ``source``.

    Every quarter's records are held at once; :func:`open_faers` reads the same quarters one at
    a time (for sources too large to hold whole).

    Args:
        source: a quarterly zip, an unpacked quarter folder, or a folder of several quarters.
        keep_missing: keep reports that lack a QID or a sensitive value (missing cells stay
            empty, and are published as missing), the default; False drops them, counted per
            reason in each quarter's report, as papers 000-002 do.
        progress: called with the period label as each quarter is read.
        schema: the :class:`~medanon.data.schema.Schema` the records are read for: a report is
            dropped only for a missing value of one of its QIDs or sensitive columns (a schema
            without weight keeps reports that lack a weight). Default: the papers' columns,
            :data:`REQUIRED_VALUES`.
        strict: Refuse a quarter whose reading repaired or dropped what the file says
            (:func:`strict_repairs`: conflicting duplicate rows, implausible or unitless ages and
            weights, invalid dates, rows of no report); by default they are repaired and
            counted in the quarter's report.
        max_field_chars: The longest field a table may hold, in characters (default
            :data:`DEFAULT_MAX_FIELD_CHARS`); a longer one refuses the table, naming the file,
            the line and the column.

    A table's text encoding is told from its bytes: ASCII (FDA's files), UTF-8 (non-ASCII text
    that is valid UTF-8) or else Latin-1; a table that mixes
    UTF-8 with other bytes, or a UTF-16/UTF-32 file, is refused, naming the file and the line.

    Returns:
        The quarters in time order, with one record per report (the columns of
        :data:`RECORD_COLUMNS`: ``case_id, period, report_id, version, age, sex, weight,
        indications, reactions, drugs, drugs_primary_suspect, drugs_secondary_suspect,
        drugs_concomitant, drugs_interacting, outcomes, age_years, init_fda_dt, fda_dt``).

    Raises:
        InputFormatError: missing source, not a zip, no DEMO (or DRUG/REAC/INDI) file (OUTC is
            optional), a table without its required columns, a wrong separator, a non-numeric
            age or weight, an unknown age, weight or sex code, an unrepairable line, a field
            over ``max_field_chars``, or a text encoding refused (above).
        InputQualityError: with ``strict``, a quarter that needed a repair it refuses (the
            message names the quarter and each repair with its count).
    """
    found = open_faers(source, keep_missing=keep_missing, progress=progress, schema=schema,
                       strict=strict, max_field_chars=max_field_chars)
    return FaersIngest(list(found), found.deleted_case_ids)


def open_faers(source: str | Path, *, keep_missing: bool = True,
               progress: Callable[[str], None] | None = None, schema=None,
               check: Callable[[FaersQuarter], None] | None = None,
               strict: bool = False,
               max_field_chars: int = DEFAULT_MAX_FIELD_CHARS) -> "FaersQuarters":
    """Find the quarters in ``source`` and read their DELETE lists; the quarters themselves are
    read one at a time, as the result is iterated (what
    :meth:`~medanon.store.ReleaseStore.ingest` takes).

    Takes the arguments of :func:`read_faers`, and ``check``: called with each quarter before it
    is handed out (e.g. to check its values against a schema's hierarchies).

    Raises:
        InputFormatError: at once for a missing source, not a zip, a quarter without its DEMO
            (or DRUG/REAC/INDI) file; while iterating, as :func:`read_faers` does for a table.
        InputQualityError: while iterating, with ``strict``, as :func:`read_faers`.
    """
    if not isinstance(strict, bool):
        raise ValidationError(f"The 'strict' parameter of open_faers must be True or False; got "
                              f"{strict!r}.")
    max_field_chars = check_int(max_field_chars, name="max_field_chars", owner="open_faers",
                                minimum=1)
    required = (REQUIRED_VALUES if schema is None
                else tuple(dict.fromkeys([q.name for q in schema.qids] + list(schema.sensitive))))
    source = Path(source)
    located = _locate(source)
    if not located:
        raise InputFormatError(f"No FAERS tables (DEMOyyQq.txt, ...) found in {str(source)!r}.")
    tags = sorted(located, key=lambda t: period_from_faers_tag(t))
    deleted: set[str] = set()
    for tag in tags:
        _check_files(period_from_faers_tag(tag), located[tag])
        deleted |= _deleted_cases(located[tag])
    return FaersQuarters(str(source), [(tag, located[tag]) for tag in tags], frozenset(deleted),
                         keep_missing=keep_missing, required=required, progress=progress,
                         check=check, strict=strict, max_field_chars=max_field_chars)


class FaersQuarters:
    """The quarters of a FAERS source, read from their files one at a time as they are iterated
    (each time anew): what :func:`open_faers` returns.

    The DELETE lists of every quarter are read first: a case FDA withdrew is dropped from every
    quarter of the same ingest. A consumer that lets go of each quarter before it asks for the
    next (as :meth:`~medanon.store.ReleaseStore.ingest` does) holds one quarter at a time.

    Attributes:
        source: The path the quarters were found in.
        periods: The quarters' periods, oldest first.
        deleted_case_ids: The union of the quarters' DELETE lists.
        reports: The ingest reports (:meth:`FaersQuarter.report_dict`) of the quarters handed
            out so far.
    """

    def __init__(self, source: str, files: list[tuple[str, dict[str, list[_Member]]]],
                 deleted_case_ids: frozenset[str], *, keep_missing: bool,
                 required: tuple[str, ...], progress: Callable[[str], None] | None,
                 check: Callable[[FaersQuarter], None] | None, strict: bool = False,
                 max_field_chars: int = DEFAULT_MAX_FIELD_CHARS):
        self.source = source
        self._files = files
        self.periods = [period_from_faers_tag(tag) for tag, _ in files]
        self.deleted_case_ids = deleted_case_ids
        self.reports: list[dict[str, object]] = []
        self._keep_missing, self._required = keep_missing, required
        self._progress, self._check = progress, check
        self.strict = strict
        self.max_field_chars = max_field_chars

    def __len__(self) -> int:
        return len(self._files)

    def __iter__(self) -> Iterator[FaersQuarter]:
        self.reports = []
        for tag, files in self._files:
            period, era, records, report = _read_quarter(tag, files, self.source,
                                                         max_field_chars=self.max_field_chars)
            gone = records["case_id"].isin(self.deleted_case_ids)
            report.deleted_cases = int(records.loc[gone, "case_id"].nunique())
            report.deleted_reports = int(gone.sum())
            records = _finish(records.loc[~gone].reset_index(drop=True), report,
                              self._keep_missing, self._required)
            if self.strict:
                _refuse_repairs(report)
            age_groups = records.pop("_age_grp").to_numpy(dtype=object)
            quarter = FaersQuarter(period, era, self.source, records, report, age_groups)
            # this generator must not keep a quarter alive while it reads the next
            del records, gone, age_groups
            if self._check is not None:
                self._check(quarter)
            if self._progress:
                self._progress(period.label)
            self.reports.append(quarter.report_dict())
            yield quarter
            del quarter


def _refuse_repairs(report: IngestReport) -> None:
    """Raise :class:`InputQualityError` when ``report`` counts a repair a strict ingest refuses."""
    found = report.repairs()
    if found:
        raise InputQualityError(
            f"Quarter {report.period} of {report.source!r} needed repairs that the 'strict' "
            f"parameter of open_faers refuses: {'; '.join(found)}. Nothing was ingested. Fix "
            f"the extract, or accept the repairs by leaving out the 'strict' parameter (each "
            f"is counted in the ingest report; docs/ingestion.md).")
