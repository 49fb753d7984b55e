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

Per quarter the reader applies the DELETE list (case ids FDA withdrew: dropped from every
quarter of the same ingest), keeps only the latest ``caseversion`` of each case (FAERS eras;
ties broken by FDA date, then primaryid), converts age to years (``age_cod`` YR, DEC, MON, WK,
DY, HR) and its MeSH age group, weight to kg (``wt_cod`` KG, LBS, GMS), and joins DRUG, REAC and
INDI into one record per report with set-valued ``drugs``, ``reactions`` and ``indications``.
Reports lacking a value of one of the schema's quasi-identifiers or sensitive attributes (the
papers' age, sex, weight, reactions and indications by default) are dropped by default, as the
papers do, with the counts per reason in the quarter's :class:`IngestReport`.
"""

from __future__ import annotations

import functools
import io
import re
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import CorruptInputError, InputFormatError
from ...hierarchies import age_to_mesh
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
#: ages and weights outside these are data-entry errors: treated as missing and counted.
PLAUSIBLE_AGE_YEARS = (0.0, 120.0)
PLAUSIBLE_WEIGHT_KG = (0.2, 650.0)

# Per era and table: our column name -> the file's column name (lower case).
_ERA_COLUMNS = {
    "legacy": {
        "DEMO": {"report_id": "isr", "case_id": "case", "version": "foll_seq", "age": "age",
                 "age_cod": "age_cod", "sex": "gndr_cod", "wt": "wt", "wt_cod": "wt_cod",
                 "fda_dt": "fda_dt"},
        "DRUG": {"report_id": "isr", "drugname": "drugname"},
        "REAC": {"report_id": "isr", "pt": "pt"},
        "INDI": {"report_id": "isr", "indi_pt": "indi_pt"},
    },
    "faers-2012": {
        "DEMO": {"report_id": "primaryid", "case_id": "caseid", "version": "caseversion",
                 "age": "age", "age_cod": "age_cod", "sex": "gndr_cod", "wt": "wt",
                 "wt_cod": "wt_cod", "fda_dt": "fda_dt"},
        "DRUG": {"report_id": "primaryid", "drugname": "drugname"},
        "REAC": {"report_id": "primaryid", "pt": "pt"},
        "INDI": {"report_id": "primaryid", "indi_pt": "indi_pt"},
    },
}
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
    missing: dict[str, int] = field(default_factory=dict)
    implausible: dict[str, int] = field(default_factory=dict)
    dropped_reports: int = 0
    kept_missing: bool = False
    reports: int = 0
    cases: int = 0

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


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
    """

    period: Period
    era: str
    source: str
    records: pd.DataFrame
    report: IngestReport | Mapping[str, object] = field(default_factory=dict)

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
@dataclass(frozen=True)
class _Member:
    """A table file, on disk or inside a zip."""

    table: str
    tag: str
    name: str
    read: Callable[[], bytes]


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
                                   functools.partial(_read_member, archive, path, info.filename)))
    return members


def _read_member(archive: zipfile.ZipFile, path: Path, name: str) -> bytes:
    """One member's bytes; a damaged member is named with the archive, not left to surface as
    a decompressor's error."""
    try:
        return archive.read(name)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise CorruptInputError(f"Member {name!r} of {str(path)!r} is corrupt ({exc}): the "
                                f"archive was damaged in transfer or on disk. {_REFETCH}") from None
    except NotImplementedError as exc:  # e.g. Deflate64, which zipfile cannot decompress
        raise InputFormatError(f"Member {name!r} of {str(path)!r} cannot be read: {exc}. Unpack "
                               f"the archive with another tool and ingest the folder.") from None


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
                                           str(path), path.read_bytes))
    quarters: dict[str, dict[str, list[_Member]]] = {}
    for member in members:
        quarters.setdefault(member.tag, {}).setdefault(member.table, []).append(member)
    return quarters


# -- parsing one '$'-separated table ------------------------------------------------------------
@dataclass
class _Table:
    frame: pd.DataFrame
    line_numbers: np.ndarray  # physical line (1-based) where each data row starts
    split_lines: int
    embedded: int


def _parse_table(member: _Member, table: str) -> _Table:
    raw = member.read()
    if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark left by an editor
        raw = raw[3:]
    text = raw.decode("latin-1")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise InputFormatError(f"{member.name} is empty: a FAERS table needs a header line.")
    header = lines[0]
    if "$" not in header:
        found = next((s for s in (",", "\t", ";", "|") if s in header), None)
        hint = f" (it looks {found!r}-separated)" if found else ""
        raise InputFormatError(f"{member.name} is not '$'-separated{hint}: FAERS files use '$' "
                               "between fields.")
    columns = [c.strip().lower() for c in header.split("$")]
    trailing = columns[-1] == ""
    if trailing:
        columns.pop()
    expected = len(columns) - 1 + int(trailing)
    text_col = _TEXT_COLUMN.get(table)
    text_pos = columns.index(text_col) if text_col in columns else len(columns) - 1

    rows: list[str] = []
    starts: list[int] = []
    split = embedded = 0
    i, n = 1, len(lines)
    counts = [line.count("$") for line in lines]
    # Some files end data rows with '$' under a header that does not: decided per file (most
    # rows), so that one row with an embedded '$' and an empty last field is not mistaken for it.
    whole = [(c, ln) for c, ln in zip(counts[1:], lines[1:]) if c >= expected]
    ends = sum(1 for c, ln in whole if c == expected + 1 and ln.endswith("$"))
    data_trailing = not trailing and 2 * ends > len(whole)
    target = expected + int(data_trailing)  # separators a whole data row has in this file
    while i < n:
        line, count, start = lines[i], counts[i], i + 1
        if not line.strip():
            i += 1
            continue
        if count == 0 and rows and (i + 1 >= n or counts[i + 1] >= target):
            # The tail of the previous record's last field, cut off by a stray line break
            # (the previous line already had all its separators).
            rows[-1] = rows[-1] + " " + line
            split += 1
            i += 1
            continue
        # A record broken by a stray line break: glue the following fragments until it is whole.
        while (count < target and i + 1 < n and counts[i + 1] < target
               and count + counts[i + 1] <= target):
            i += 1
            line = line + " " + lines[i]
            count += counts[i]
            split += 1
        if data_trailing and count > expected and line.endswith("$"):
            line, count = line[:-1], count - 1
        if count > expected:
            # An embedded '$': merge the surplus fields into the table's free-text column.
            parts = line.split("$")
            surplus = count - expected
            merged = _PLACEHOLDER.join(parts[text_pos:text_pos + surplus + 1])
            line = "$".join(parts[:text_pos] + [merged] + parts[text_pos + surplus + 1:])
            embedded += 1
        elif count < expected:
            raise InputFormatError(
                f"{member.name} line {start}: {count + 1 - int(trailing)} field(s) where the header "
                f"has {len(columns)}, and the following line does not complete it.")
        rows.append(line)
        starts.append(start)
        i += 1

    body = "\n".join(["$".join(columns) + ("$" if trailing else "")] + rows) + "\n"
    frame = pd.read_csv(io.StringIO(body), sep="$", dtype=str, keep_default_na=False,
                        na_filter=False, quoting=3, engine="c", index_col=False)
    frame = frame.loc[:, [c for c in frame.columns if not str(c).startswith("Unnamed")]]
    frame.columns = columns[: frame.shape[1]]
    if embedded and text_col in frame.columns:
        frame[text_col] = frame[text_col].str.replace(_PLACEHOLDER, "$", regex=False)
    return _Table(frame, np.asarray(starts, dtype=np.int64), split, embedded)


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
    return _parse_table(_Member(table, "", str(path), path.read_bytes), table).frame


def _era_of(columns: list[str], name: str) -> str:
    if "isr" in columns:
        return "legacy"
    if "primaryid" in columns:
        return "faers-2014" if "sex" in columns else "faers-2012"
    raise InputFormatError(f"{name} has neither 'primaryid' (FAERS) nor 'ISR' (legacy AERS) in its "
                           "header: it is not a FAERS DEMO file.")


def _select(table: _Table, mapping: dict[str, str], name: str) -> pd.DataFrame:
    missing = [col for col in mapping.values() if col not in table.frame.columns]
    if missing:
        raise InputFormatError(f"{name} lacks required column(s): {', '.join(missing)}.")
    frame = table.frame[list(mapping.values())].copy()
    frame.columns = list(mapping.keys())
    for col in frame.columns:
        frame[col] = frame[col].str.strip()
    return frame


# -- conversions ---------------------------------------------------------------------------------
def _to_number(values: pd.Series, lines: np.ndarray, what: str, name: str) -> np.ndarray:
    numbers = pd.to_numeric(values.where(values != ""), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(np.isnan(numbers) & (values != "").to_numpy())
    if len(bad):
        raise InputFormatError(f"{name} line {lines[bad[0]]}: {what} {values.iloc[bad[0]]!r} is not a "
                               f"number ({len(bad)} such row(s)).")
    return numbers


def _convert_units(values: np.ndarray, units: pd.Series, table: dict[str, float],
                   lines: np.ndarray, what: str, name: str) -> np.ndarray:
    codes = units.str.upper().to_numpy(dtype=object)
    unknown = ~np.isin(codes, list(table) + [""])
    if unknown.any():
        first = np.flatnonzero(unknown)[0]
        raise InputFormatError(
            f"{name} line {lines[first]}: unknown {what} {codes[first]!r} ({int(unknown.sum())} such "
            f"row(s)); known codes: {', '.join(table)}.")
    factor = np.array([table.get(c, np.nan) for c in codes], dtype=float)
    return values * factor  # an empty unit gives NaN: a value without its unit is unusable


def _none_for_missing(values: np.ndarray) -> np.ndarray:
    values = values.copy()
    values[pd.isna(values)] = None
    return values


def _value_sets(frame: pd.DataFrame, key: str, value: str) -> pd.Series:
    """Sorted unique values per report id, as tuples."""
    sub = frame.loc[frame[value] != "", [key, value]].drop_duplicates()
    sub = sub.sort_values([key, value], kind="stable")
    keys = sub[key].to_numpy()
    vals = sub[value].to_numpy()
    if len(keys) == 0:
        return pd.Series(dtype=object)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    bounds = np.r_[starts, len(keys)]
    sets = [tuple(vals[bounds[j]:bounds[j + 1]]) for j in range(len(starts))]
    return pd.Series(sets, index=keys[starts], dtype=object)


# -- one quarter ---------------------------------------------------------------------------------
def _read_quarter(tag: str, files: dict[str, list[_Member]], source: str
                  ) -> tuple[Period, str, pd.DataFrame, IngestReport, set[str]]:
    period = period_from_faers_tag(tag)
    for table, members in files.items():
        if len(members) > 1:
            names = ", ".join(m.name for m in members)
            raise InputFormatError(f"Quarter {period} has {len(members)} {table} files: {names}.")
    missing = [t for t in REQUIRED_TABLES if t not in files]
    if missing:
        where = ", ".join(sorted({m[0].name.split(':')[0] for m in files.values()}))
        raise InputFormatError(f"Quarter {period} has no {', '.join(missing)} file (found only: "
                               f"{', '.join(sorted(files)) or 'nothing'} in {where}).")
    demo_member = files["DEMO"][0]
    demo_table = _parse_table(demo_member, "DEMO")
    era = _era_of(list(demo_table.frame.columns), demo_member.name)
    spec = _ERA_COLUMNS[era]
    report = IngestReport(period=period.label, era=era, source=source)
    demo = _select(demo_table, spec["DEMO"], demo_member.name)
    lines = demo_table.line_numbers
    report.demo_rows = len(demo)
    report.repaired_split_lines["DEMO"] = demo_table.split_lines
    report.repaired_embedded_separators["DEMO"] = demo_table.embedded

    bad_ids = (demo["report_id"] == "") | (demo["case_id"] == "")
    if bad_ids.any():
        first = int(np.flatnonzero(bad_ids.to_numpy())[0])
        raise InputFormatError(f"{demo_member.name} line {lines[first]}: empty report or case id.")
    version = pd.to_numeric(demo["version"].where(demo["version"] != ""), errors="coerce")
    if era != "legacy" and version.isna().any():
        first = int(np.flatnonzero(version.isna().to_numpy())[0])
        raise InputFormatError(f"{demo_member.name} line {lines[first]}: caseversion "
                               f"{demo['version'].iloc[first]!r} is not an integer.")
    demo["version"] = version.astype("Int64")
    age = _to_number(demo["age"], lines, "age", demo_member.name)
    weight = _to_number(demo["wt"], lines, "weight", demo_member.name)
    age_years = _convert_units(age, demo["age_cod"], AGE_UNITS, lines, "age_cod", demo_member.name)
    weight_kg = _convert_units(weight, demo["wt_cod"], WEIGHT_UNITS, lines, "wt_cod", demo_member.name)
    sex = demo["sex"].str.upper()
    unknown_sex = ~sex.isin(list(SEX_VALUES) + list(SEX_MISSING))
    if unknown_sex.any():
        first = int(np.flatnonzero(unknown_sex.to_numpy())[0])
        raise InputFormatError(f"{demo_member.name} line {lines[first]}: unknown sex code "
                               f"{demo['sex'].iloc[first]!r}; known codes: F, M, UNK, NS.")

    implausible_age = (age_years < PLAUSIBLE_AGE_YEARS[0]) | (age_years > PLAUSIBLE_AGE_YEARS[1])
    implausible_weight = (weight_kg < PLAUSIBLE_WEIGHT_KG[0]) | (weight_kg > PLAUSIBLE_WEIGHT_KG[1])
    report.implausible = {"age": int(implausible_age.sum()), "weight": int(implausible_weight.sum())}
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
    })
    duplicated = records["report_id"].duplicated(keep="last")
    records = records.loc[~duplicated]  # FDA files occasionally repeat a DEMO row verbatim

    deleted: set[str] = set()
    if "DELETE" in files:
        raw = files["DELETE"][0].read().decode("latin-1")
        deleted = {tok for tok in (ln.strip().rstrip("$").strip() for ln in raw.splitlines()) if tok}

    if era != "legacy":
        # Ties on caseversion: the later FDA date, then the larger primaryid (as a number).
        records["_rid"] = pd.to_numeric(records["report_id"], errors="coerce")
        records = records.sort_values(["case_id", "version", "fda_dt", "_rid", "report_id"],
                                      kind="stable").drop(columns="_rid")
        latest = ~records["case_id"].duplicated(keep="last")
        report.superseded_reports = int((~latest).sum())
        records = records.loc[latest]
    report.reports_read = len(records)

    kept_ids = set(records["report_id"])
    for table, column in (("DRUG", "drugname"), ("REAC", "pt"), ("INDI", "indi_pt")):
        member = files[table][0]
        parsed = _parse_table(member, table)
        report.repaired_split_lines[table] = parsed.split_lines
        report.repaired_embedded_separators[table] = parsed.embedded
        frame = _select(parsed, spec[table], member.name)
        frame = frame.loc[frame["report_id"].isin(kept_ids)]
        target = {"DRUG": "drugs", "REAC": "reactions", "INDI": "indications"}[table]
        sets = _value_sets(frame, "report_id", column)
        records[target] = records["report_id"].map(sets)
        records[target] = [v if isinstance(v, tuple) else () for v in records[target]]
    records["age"] = _none_for_missing(np.asarray(age_to_mesh(records["age_years"].to_numpy(dtype=float)),
                                                  dtype=object))
    records = records.sort_values(["case_id", "version", "report_id"], kind="stable").reset_index(drop=True)
    return period, era, records, report, deleted


#: the columns a report needs unless a schema says otherwise: the papers' QIDs and sensitive
#: attributes (the default schema's).
REQUIRED_VALUES = ("age", "sex", "weight", "reactions", "indications")


def _is_missing(values: pd.Series) -> np.ndarray:
    """Missing cells of one record column: NaN/None, or an empty set of terms."""
    missing = values.isna().to_numpy(dtype=bool, copy=True)
    if values.dtype == object:
        missing |= np.fromiter((type(v) is tuple and not v for v in values), dtype=bool,
                               count=len(values))
    return missing


def _finish(records: pd.DataFrame, report: IngestReport, keep_missing: bool,
            required: tuple[str, ...]) -> pd.DataFrame:
    missing = {name: _is_missing(records[name]) for name in required if name in records.columns}
    report.missing = {k: int(v.sum()) for k, v in missing.items()}
    report.kept_missing = keep_missing
    incomplete = np.logical_or.reduce(list(missing.values())) if len(records) else np.zeros(0, bool)
    if not keep_missing:
        report.dropped_reports = int(incomplete.sum())
        records = records.loc[~incomplete].reset_index(drop=True)
    report.reports = len(records)
    report.cases = int(records["case_id"].nunique())
    columns = ["case_id", "period", "report_id", "version", "age", "sex", "weight",
               "indications", "reactions", "drugs", "age_years", "fda_dt"]
    return records[columns]


def read_faers(source: str | Path, *, keep_missing: bool = False,
               progress: Callable[[str], None] | None = None, schema=None) -> FaersIngest:
    """Read every FAERS/AERS quarter found in ``source``.

    Args:
        source: a quarterly zip, an unpacked quarter folder, or a folder of several quarters.
        keep_missing: keep reports that lack a QID or a sensitive value (missing cells stay
            empty); by default they are dropped and counted, as in papers 000-002.
        progress: called with the period label as each quarter is read.
        schema: the :class:`~medanon.data.schema.Schema` the records are read for: a report is
            dropped only for a missing value of one of its QIDs or sensitive columns (a schema
            without weight keeps reports that lack a weight). Default: the papers' columns,
            :data:`REQUIRED_VALUES`.

    Returns:
        The quarters in time order, with one record per report (columns ``case_id, period,
        report_id, version, age, sex, weight, indications, reactions, drugs, age_years, fda_dt``).

    Raises:
        InputFormatError: missing source, not a zip, no DEMO (or DRUG/REAC/INDI) file, a table
            without its required columns, a wrong separator, a non-numeric age or weight, an
            unknown age, weight or sex code, or an unrepairable line.
    """
    required = (REQUIRED_VALUES if schema is None
                else tuple(dict.fromkeys([q.name for q in schema.qids] + list(schema.sensitive))))
    source = Path(source)
    located = _locate(source)
    if not located:
        raise InputFormatError(f"No FAERS tables (DEMOyyQq.txt, ...) found in {str(source)!r}.")
    parsed = []
    all_deleted: set[str] = set()
    for tag in sorted(located, key=lambda t: period_from_faers_tag(t)):
        period, era, records, report, deleted = _read_quarter(tag, located[tag], str(source))
        parsed.append((period, era, records, report))
        all_deleted |= deleted
        if progress:
            progress(period.label)
    quarters = []
    for period, era, records, report in parsed:
        gone = records["case_id"].isin(all_deleted)
        report.deleted_cases = int(records.loc[gone, "case_id"].nunique())
        report.deleted_reports = int(gone.sum())
        records = _finish(records.loc[~gone].reset_index(drop=True), report, keep_missing,
                          required)
        quarters.append(FaersQuarter(period, era, str(source), records, report))
    return FaersIngest(quarters, frozenset(all_deleted))
