"""The published release format (``design.md``, "Published release format"): a contract.

A release of period P is a folder ``P/`` with ``release.csv`` and ``manifest.json``; a series is
a folder of such period folders. ``release.csv`` is UTF-8, comma-separated, one row per case
(super record), header ``period,case_id,group,<qids...>,<sensitive...>,<multi...>,<insensitive...>,
<dates...>``:

* numeric QID: a number, or an inclusive interval ``[lo-hi]``;
* categorical QID: a label of the attribute's hierarchy, the root is ``*``;
* multi-valued columns: values joined with ``|``, sorted;
* date columns: FAERS dates at the schema's granularity (``YYYYMMDD``, ``YYYYMM`` or ``YYYY``);
* a suppressed cell is ``*``; a missing cell is empty.

This module turns an algorithm's table into those strings, writes and reads series, so that the
store, export and any verifier (ours or someone else's, in audit mode) share one definition.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import numbers
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.dates import publish_dates
from ..data.records import distinct_bounds, distinct_objects, map_cell_array
from ..periods import parse_period
from ..errors import InputFormatError, StoreError
from ..hierarchies import Interval
from ..hierarchies.intervals import format_number

RELEASE_FILE = "release.csv"
#: the same rows as ``release.csv`` in Parquet (``medanon export --format parquet``)
PARQUET_FILE = "release.parquet"
RELEASE_FILES = (RELEASE_FILE, PARQUET_FILE)
MANIFEST_FILE = "manifest.json"
FIXED_COLUMNS = ("period", "case_id", "group")
SUPPRESSED = "*"
MULTI_SEPARATOR = "|"


def _is_na(value: object) -> bool:
    """``pd.isna`` of one cell, which may be any object (pd.NA, NaT, a Decimal NaN, ...)."""
    return pd.isna(value)  # type: ignore[call-overload]  # its stubs accept pandas scalars only


def format_numeric(value: object) -> str:
    """A number, ``[lo-hi]`` for an interval, empty for missing."""
    if value is None:
        return ""
    if isinstance(value, pd.Interval):
        if pd.isna(value.left) or pd.isna(value.right):
            return ""
        return Interval(float(value.left), float(value.right)).label
    if isinstance(value, Interval):
        return value.label
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Real):
        return "" if math.isnan(float(value)) else format_number(float(value))
    if _is_na(value):
        return ""
    raise InputFormatError(f"Cannot publish {value!r} as a numeric QID value.")


def format_numeric_cells(column: pd.Series) -> list[str]:
    """``[format_numeric(v) for v in column]``, formatting each distinct interval once.

    A group's interval repeats in every row of the group, and formatting it per row was a
    twentieth of a release's CPU at 100k cases (issue 30). Intervals are told apart by the bits
    of their bounds (so 0.0 and -0.0 are formatted apart, as one by one); other cells (plain
    numbers, ``*``, missing) are formatted once per distinct object (a release table holds a
    group's cell object in every row of the group: :func:`distinct_objects`).
    """
    return _numeric_cell_array(column).tolist()


def _numeric_cell_array(column: pd.Series) -> np.ndarray:
    """:func:`format_numeric_cells` as an object array."""
    values = column.array
    n = len(values)
    if isinstance(values, pd.arrays.IntervalArray):
        lo, hi = np.asarray(values.left, dtype=float), np.asarray(values.right, dtype=float)
        labels, which = _interval_labels(lo, hi, lambda i: format_numeric(values[i]))
        return labels[which] if n else np.empty(0, dtype=object)
    cells = column.to_numpy(dtype=object)
    which, first = distinct_objects(cells)
    objects = cells[first]
    m = len(objects)
    out = np.empty(m, dtype=object)
    is_interval = np.fromiter((isinstance(v, pd.Interval) for v in objects), dtype=bool,
                              count=m)
    at = np.flatnonzero(is_interval)
    for i in np.flatnonzero(~is_interval).tolist():
        out[i] = format_numeric(objects[i])
    if len(at):
        lo = np.array([float(objects[i].left) for i in at.tolist()], dtype=float)
        hi = np.array([float(objects[i].right) for i in at.tolist()], dtype=float)
        labels, inverse = _interval_labels(lo, hi, lambda i: format_numeric(objects[at[i]]))
        out[at] = labels[inverse]
    return out[which]


def _interval_labels(lo: np.ndarray, hi: np.ndarray, label) -> tuple[np.ndarray, np.ndarray]:
    """The label of each distinct (lo, hi) pair (:func:`distinct_bounds`) and each
    position's number among them; ``label(i)`` formats the pair at position ``i``."""
    which, first = distinct_bounds(lo, hi)
    # each distinct bound formatted once: the ~6,500 intervals of a 450k quarter share a few
    # hundred bounds, and format_number is most of a label (issue 43). A pair that is not a
    # finite interval is left to ``label`` (which reads it as missing or refuses it).
    texts: dict[float, str] = {}

    def bound(x: float) -> str:
        found = texts.get(x)
        if found is None:
            found = texts[x] = format_number(x)
        return found

    labels = []
    for i, a, b in zip(first.tolist(), lo[first].tolist(), hi[first].tolist()):
        if not (math.isfinite(a) and math.isfinite(b) and a <= b):
            labels.append(label(i))
            continue
        a, b = a + 0.0, b + 0.0  # as Interval reads its bounds: -0.0 is 0.0
        labels.append(bound(a) if a == b else f"[{bound(a)}-{bound(b)}]")
    return np.array(labels, dtype=object), which


def format_label(value: object) -> str:
    if value is None or (not isinstance(value, str) and _is_na(value)):
        return ""
    return str(value)


def format_multi(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, Iterable):  # any other cell holds its terms; Python's own message
        raise TypeError(f"'{type(value).__name__}' object is not iterable")
    return MULTI_SEPARATOR.join(sorted({str(v) for v in value}))


@dataclass(frozen=True)
class CellTerms:
    """The terms of a formatted multi-valued column, as its cells split at
    :data:`MULTI_SEPARATOR` read them: row ``r``'s cell is the terms
    ``terms[start:start + lengths[which[r]]]`` (``start`` the sum of the lengths before)
    joined, and no term holds the separator, so splitting the cell gives back exactly those
    terms (an empty tuple's cell ``""`` gives one empty piece, which readers of terms skip).

    A reader of the published strings that would split them again (the screening of the
    original side, :class:`medanon.metrics.screening.SeriesScreening`) takes the terms the
    cells were joined from instead (issue 43).
    """

    which: np.ndarray     # each row's distinct cell object (intp)
    lengths: np.ndarray   # the number of terms of each distinct cell object (int64)
    terms: np.ndarray     # their terms, cell after cell (object: the store's shared str)


def _format_multi_many(cells: list, *, all_tuples: bool = False,
                       split: list[tuple[np.ndarray, np.ndarray]] | None = None) -> list[str]:
    """:func:`format_multi` of each cell; a tuple of str that is already sorted without
    repeats (what super records hold) is joined as it is.

    Whether a tuple is sorted is read from its terms' ranks among the distinct terms, all
    tuples at once: the terms are ranked once per distinct str object (the store shares one
    str per term, :func:`distinct_objects`), so each comparison is of two integers. Sorting
    and deduplicating each cell again was a twentieth of a release's CPU at 100k cases
    (issue 30); comparing the str objects themselves a third of what remained (issue 43).
    ``all_tuples``: the caller knows that every cell's type is exactly ``tuple``. ``split``:
    when every cell is such a tuple joined as it is and no term holds the separator, the
    cells' ``(lengths, terms)`` (:class:`CellTerms`) are appended to it.
    """
    n = len(cells)
    if all_tuples:
        is_tuple = np.ones(n, dtype=bool)
    else:
        is_tuple = np.equal(np.fromiter(map(type, cells), dtype=object, count=n),  # type: ignore[call-overload]  # exact types
                            tuple)
    tuples = [c for c in cells if type(c) is tuple] if not is_tuple.all() else cells
    lengths = np.fromiter(map(len, tuples), dtype=np.int64, count=len(tuples))
    items = np.fromiter(itertools.chain.from_iterable(tuples), dtype=object,
                        count=int(lengths.sum()))
    item_of, item_first = distinct_objects(items)
    terms = items[item_first].tolist()
    joinable = np.zeros(n, dtype=bool)
    if set(map(type, terms)) <= {str}:
        value_of, values = pd.factorize(np.asarray(terms, dtype=object).reshape(-1))
        rank = np.empty(len(values), dtype=np.int64)
        rank[np.argsort(np.asarray(values, dtype=object), kind="stable")] = np.arange(len(values))
        ranks = rank[value_of][item_of]
        owner = np.repeat(np.flatnonzero(is_tuple), lengths)
        same = owner[1:] == owner[:-1]
        joinable = is_tuple.copy()
        joinable[owner[1:][same & (ranks[1:] <= ranks[:-1])]] = False
    if joinable.all():
        if split is not None and not any(MULTI_SEPARATOR in t for t in terms):
            split.append((lengths, items))
        return list(map(MULTI_SEPARATOR.join, cells))
    return [MULTI_SEPARATOR.join(c) if ok else format_multi(c)
            for c, ok in zip(cells, joinable.tolist())]


def _multi_cell_array(cells: np.ndarray, terms: dict[str, CellTerms] | None = None,
                      name: str = "") -> np.ndarray:
    """``map_cell_array(cells, format_multi, many=_format_multi_many)`` (a flat object array),
    with one pass over the distinct objects' types when every cell holds a tuple (what super
    records hold): the general path sorts the objects by kind, gathers and scatters them, and
    :func:`_format_multi_many` reads their types again, a third of this step's cost for a
    column of 220k distinct tuples at 450k cases (issue 43). With ``terms``, the column's
    :class:`CellTerms` are put there under ``name`` when its cells are such tuples joined as
    they are."""
    which, first = distinct_objects(cells)
    batch = cells[first].tolist()
    if not batch or set(map(type, batch)) != {tuple}:
        return map_cell_array(cells, format_multi, many=_format_multi_many)
    formatted = np.empty(len(batch), dtype=object)
    split: list[tuple[np.ndarray, np.ndarray]] | None = [] if terms is not None else None
    formatted[:] = _format_multi_many(batch, all_tuples=True, split=split)
    if terms is not None and split:
        terms[name] = CellTerms(which, *split[0])
    return formatted[which]


def to_published_rows(table: pd.DataFrame, schema,
                      terms: dict[str, CellTerms] | None = None) -> pd.DataFrame:
    """Format an algorithm's table as release rows (all strings, in the format's column order).

    Each column is made from an object array of its cells, each distinct cell object
    formatted once (:func:`map_cell_array`): a list per column, turned into an array by
    pandas, cost as much as formatting (issue 43). ``terms`` (when given) receives the
    :class:`CellTerms` of the multi-valued columns whose cells are joined from their terms
    as they are.
    """
    out = pd.DataFrame({c: table[c].astype(str).to_numpy() for c in FIXED_COLUMNS})
    for qid in schema.qids:
        cells = table[qid.name].to_numpy(dtype=object)
        out[qid.name] = _column(_numeric_cell_array(table[qid.name]) if qid.kind == "numeric"
                                else map_cell_array(cells, format_label))
    for name in schema.sensitive + schema.multi:
        out[name] = _column(_multi_cell_array(table[name].to_numpy(dtype=object), terms, name))
    for name in schema.insensitive:
        out[name] = _column(map_cell_array(table[name].to_numpy(dtype=object), format_label))
    for name, granularity in schema.dates.items():
        # each distinct date object once: publish_dates is a function of each cell's value
        cells = table[name].to_numpy(dtype=object)
        which, first = distinct_objects(cells)
        out[name] = _column(np.fromiter(publish_dates(cells[first], granularity), dtype=object,
                                        count=len(first))[which])
    return out


def _column(cells: np.ndarray) -> pd.Series | list:
    """Formatted cells (all str) as the column pandas makes of them: of the dtype it infers
    for text (``str`` in pandas 3, object before), given rather than inferred from every cell
    (a tenth of this step at 450k rows, issue 43); a list when there are none (pandas makes
    an empty list a float column: the rows keep the dtypes they had)."""
    if not len(cells):
        return list(cells)
    return pd.Series(cells, dtype=pd.Series(np.array(["x"], dtype=object)).dtype, copy=False)


def original_as_published(supers: pd.DataFrame, schema,
                          terms: dict[str, CellTerms] | None = None) -> pd.DataFrame:
    """Original super records in the release format, each case its own group: what the signal
    metrics count on the original side (``terms``: as for :func:`to_published_rows`)."""
    return to_published_rows(supers.assign(group=supers[schema.case_id]), schema, terms)


@dataclass(frozen=True)
class PublishedRelease:
    """A release read back from disk (or the store): rows as strings plus the manifest."""

    period: str
    rows: pd.DataFrame
    manifest: dict


def write_release(folder: Path, rows: pd.DataFrame, manifest: dict) -> None:
    """Write ``release.csv`` and ``manifest.json`` into ``folder`` (which must not exist yet)."""
    folder.mkdir(parents=True)
    rows.to_csv(folder / RELEASE_FILE, index=False, encoding="utf-8", lineterminator="\n",
                quoting=csv.QUOTE_MINIMAL)
    write_manifest(folder, manifest)


def write_manifest(folder: Path, manifest: dict) -> None:
    """Write ``manifest.json`` (sorted keys, indented) into an existing folder."""
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                        encoding="utf-8")


def write_series_atomically(out: Path, periods: Sequence[str], writer) -> list[Path]:
    """Write one folder per period under ``out`` without leaving partial output behind.

    ``writer(folder, period)`` writes a period's files into a fresh folder. Everything is first
    written under a temporary folder beside ``out`` and moved into place only when every period
    succeeded; existing period folders are never overwritten.

    Raises:
        StoreError: a target period folder already exists.
    """
    out = Path(out)
    clashes = [p for p in periods if (out / p).exists()]
    if clashes:
        raise StoreError(f"{str(out)!r} already holds {', '.join(clashes)}: choose an empty --out "
                         "folder (exports never overwrite).")
    if out.exists() and not out.is_dir():
        raise StoreError(f"--out {str(out)!r} exists and is not a folder.")
    if not out.parent.exists():
        raise StoreError(f"Cannot write to {str(out)!r}: folder {str(out.parent)!r} does not exist.")
    staging = Path(tempfile.mkdtemp(prefix=".medanon-export-", dir=out.parent))
    try:
        for period in periods:
            writer(staging / period, period)
        out.mkdir(exist_ok=True)
        written = []
        for period in periods:
            os.replace(staging / period, out / period)
            written.append(out / period)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def check_new_folder(out: Path, what: str = "--out") -> None:
    """Refuse an ``--out`` (or ``what``) that exists and is not an empty folder, or whose parent is
    missing.

    Raises:
        StoreError: with the reason.
    """
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StoreError(f"{what} {str(out)!r} already exists and is not an empty folder; medanon "
                         "never overwrites: choose a new folder.")
    if not out.parent.exists():
        raise StoreError(f"Cannot write to {str(out)!r}: folder {str(out.parent)!r} does not exist.")


def write_new_folder(out: str | Path, writer, what: str = "--out") -> Path:
    """Create the folder ``out`` with the files ``writer(folder)`` writes, all or nothing.

    The files are written into a temporary folder beside ``out``, which is renamed into place only
    when ``writer`` returned; on any error nothing is left behind.

    Raises:
        StoreError: see :func:`check_new_folder`.
    """
    out = Path(out)
    check_new_folder(out, what)
    staging = Path(tempfile.mkdtemp(prefix=".medanon-release-", dir=out.parent))
    try:
        writer(staging)
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
        return out
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_release_text(out: str | Path, csv_text: str, manifest: dict) -> Path:
    """Create the folder ``out`` with ``release.csv`` (``csv_text``, written byte for byte) and
    ``manifest.json``, all or nothing (:func:`write_new_folder`).

    One-off releases render their CSV text once (:func:`medanon.pipeline.tabular.tabular_csv`,
    :func:`medanon.pipeline.ehr.ehr_csv`), check it, and write that very text.

    Raises:
        StoreError: see :func:`check_new_folder`.
    """
    def write(folder: Path) -> None:
        # newline="": the text already holds "\n" line ends; no translation on any platform
        with open(folder / RELEASE_FILE, "w", encoding="utf-8", newline="") as handle:
            handle.write(csv_text)
        write_manifest(folder, manifest)

    return write_new_folder(out, write)


def read_release_text(csv_text: str) -> pd.DataFrame:
    """The rows of a ``release.csv`` text as every reader sees them: strings, empty cells empty."""
    import io

    return pd.read_csv(io.StringIO(csv_text), dtype=str, keep_default_na=False, na_filter=False)


def read_manifest(folder: str | Path) -> dict:
    """The ``manifest.json`` of a release folder.

    Raises:
        InputFormatError: the file is missing or is not a JSON object.
    """
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        raise InputFormatError(f"{str(Path(folder))!r} is not a release folder: {MANIFEST_FILE} "
                               f"is missing.")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"{str(path)!r} is not valid JSON: {exc}.") from None
    if not isinstance(manifest, dict):
        raise InputFormatError(f"{str(path)!r} must hold a JSON object.")
    return manifest


def _is_faers_layout(folder: Path) -> bool:
    """Whether ``folder`` holds a release exported in the FAERS ASCII layout (DEMOyyQq.txt)."""
    return any(child.is_file() and child.name.upper().startswith("DEMO")
               and child.suffix.lower() == ".txt" for child in folder.iterdir())


def _refuse_faers_layout(folder: Path) -> InputFormatError:
    # Reading it back would verify something else than what was published: the layout has no
    # QID-group column (groups rebuilt from equal QID values merge groups that share them, which
    # changes every per-group check), and it replaces a '$' or a line break in a term by a space.
    return InputFormatError(
        f"{str(folder)!r} holds a release in the FAERS ASCII layout, which cannot be verified: "
        f"it has no QID-group column and changes a '$' or a line break in a term, so a "
        f"verdict on it would not be a verdict on the release. Verify the same release in the "
        f"release format instead: 'medanon export --store S --out DIR' (csv, or --format "
        f"parquet), then 'medanon verify DIR' (or 'medanon verify --store S').")


def _read_parquet_rows(path: Path) -> pd.DataFrame:
    import duckdb  # the store's engine reads Parquet without another dependency

    con = duckdb.connect()
    try:
        frame = con.execute("SELECT * FROM read_parquet(?)", [str(path)]).df()
    except duckdb.Error as exc:
        raise InputFormatError(f"{str(path)!r} is not a valid {PARQUET_FILE}: "
                               f"{str(exc).splitlines()[0]}.") from None
    finally:
        con.close()
    # the release format's cells are strings, an empty cell missing (as read from release.csv)
    frame = frame.astype(object)
    return frame.where(frame.notna(), "").map(str)


def read_release(folder: str | Path) -> PublishedRelease:
    """Read one published period folder: ``manifest.json`` with ``release.csv``, or with
    ``release.parquet`` (``medanon export --format parquet``).

    Raises:
        InputFormatError: files missing, header not in the release format, or bad manifest; a
            release in the FAERS layout (which cannot be verified faithfully; the message says
            what to verify instead).
    """
    folder = Path(folder)
    csv_path, manifest_path = folder / RELEASE_FILE, folder / MANIFEST_FILE
    parquet_path = folder / PARQUET_FILE
    if not csv_path.is_file() and not parquet_path.is_file():
        if folder.is_dir() and _is_faers_layout(folder):
            raise _refuse_faers_layout(folder)
        raise InputFormatError(f"{str(folder)!r} is not a release folder: {RELEASE_FILE} is "
                               f"missing.")
    if not manifest_path.is_file():
        raise InputFormatError(f"{str(folder)!r} is not a release folder: {MANIFEST_FILE} is "
                               f"missing.")
    manifest = read_manifest(folder)
    if csv_path.is_file():
        try:
            rows = pd.read_csv(csv_path, dtype=str, keep_default_na=False, na_filter=False,
                               encoding="utf-8")
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise InputFormatError(f"{str(csv_path)!r} is not a valid release.csv: {exc}.") from None
    else:
        csv_path = parquet_path  # named in the messages below
        rows = _read_parquet_rows(parquet_path)
    header = tuple(rows.columns[:3])
    if header != FIXED_COLUMNS:
        raise InputFormatError(f"{str(csv_path)!r} must start with columns {', '.join(FIXED_COLUMNS)}; "
                               f"found {', '.join(map(str, header))}.")
    period = parse_period(folder.name).label
    if len(rows) and set(rows["period"]) != {period}:
        raise InputFormatError(f"{str(csv_path)!r} holds rows of period(s) "
                               f"{', '.join(sorted(set(rows['period'])))} but its folder is {period}.")
    return PublishedRelease(period, rows, manifest)


def read_series(folder: str | Path) -> list[PublishedRelease]:
    """Read every period folder of a published series, oldest first (audit mode)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputFormatError(f"Series folder {str(folder)!r} does not exist.")
    releases = []
    faers_layout = []
    for child in folder.iterdir():
        if not child.is_dir():
            continue
        if any((child / name).exists() for name in RELEASE_FILES):
            releases.append(read_release(child))
        elif (child / MANIFEST_FILE).exists() and _is_faers_layout(child):
            faers_layout.append(child)
    if faers_layout:
        # one period in the FAERS layout would silently drop out of the series
        raise _refuse_faers_layout(sorted(faers_layout)[0])
    if not releases:
        raise InputFormatError(f"{str(folder)!r} holds no period folders with {RELEASE_FILE} "
                               f"(or {PARQUET_FILE}).")
    return sorted(releases, key=lambda r: parse_period(r.period))
