"""DuckDB-backed release store.

One database file holds, for one schema:

* ``meta``          format version, the schema (TOML), creation time;
* ``periods``       each ingested period with its ingest report (private);
* ``records``       the ingested report-level records (private, never exported);
* ``releases``      each published period with its manifest (public, immutable);
* ``release_rows``  the published rows, cell by cell exactly as the release format writes them;
* ``release_private`` per published period, what only the operator sees (never exported, never in
                    a manifest): the SHA-256 of the period's input records and the method's
                    operator-only details (e.g. how many true values fell outside a public
                    domain). Both are functions of the private values that no privacy model
                    accounts for: an adversary who knows every other record could test guesses
                    about a target's values against them;
* ``ledger``        privacy spent per case and release (filled by the DP methods); ``dp`` is
                    False for the nominal ε of a mechanism without an ε-DP claim.

Every write is one transaction: an ingest or a publication either lands whole or leaves the
store exactly as it was (a crash, a refusal and a failed check all roll back). Inside
:meth:`ReleaseStore.batch` several publications form one transaction (a multi-period release
lands whole or not at all). A published period
is immutable: publishing it again, or re-ingesting it, is refused.

A store opened with ``read_only=True`` takes DuckDB's shared lock: any number of readers may
work side by side (and on a file they may not write), but not beside a writer. What the
operating system or DuckDB reports when opening or writing (a lock held by another process, a
permission, a full disk) becomes :class:`~medanon.errors.StoreLockedError`,
:class:`~medanon.errors.StorePermissionError` or :class:`~medanon.errors.DiskFullError`, naming
the file and what to do, instead of "not a medanon store" or an internal error.
"""

from __future__ import annotations

import functools
import json
import re
import secrets
import tomllib
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from .. import __version__
from .._memory import give_back_freed_memory
from ..periods import parse_period
from ..data.loaders.faers import FaersIngest, FaersQuarter
from ..data.records import date_cells, first_appearances, is_identity, object_array
from ..data.schema import Schema
from ..data.terms import CodedRecords, TermCodes
from ..errors import (DiskFullError, SeriesEndedError, StoreError, StoreLockedError,
                      StorePermissionError, ValidationError)
from . import DEFAULT_STORE  # noqa: F401  (re-exported; the package defines it, and loads this module lazily)

FORMAT_VERSION = "1"
#: the ``meta`` key of the pinned series policy (medanon.pipeline.policy.POLICY_KEY: the store
#: does not import the pipeline)
POLICY_META_KEY = "series_policy"
#: the ``meta`` key of the store's CaseID key (hex; operator-only, never exported:
#: :mod:`medanon.pipeline.case_ids`)
CASE_KEY_META_KEY = "case_id_key"
#: top-level manifest keys and ``details`` keys that are operator-only (never published); a
#: manifest given to :meth:`ReleaseStore.publish` must not hold them, and stores written before
#: ``release_private`` existed have them moved there when opened.
OPERATOR_ONLY_KEYS = ("input_sha256",)
OPERATOR_ONLY_DETAILS = ("clipped_to_domain", "domain_checked_values", "smallest_laplace_scale")


@dataclass
class IngestSummary:
    """What an ingest changed in the store."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    deleted_from_unpublished: dict[str, int] = field(default_factory=dict)
    deleted_but_published: dict[str, int] = field(default_factory=dict)
    #: per published period, the case ids FDA withdrew that it still holds (operator-only: the
    #: operator must be able to act on them, e.g. tell the recipients of that release)
    deleted_but_published_cases: dict[str, list[str]] = field(default_factory=dict)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_LOCKED = ("Could not set lock", "Conflicting lock")
_DENIED = ("Permission denied", "Operation not permitted", "Read-only file system")
_FULL = ("No space left on device", "Disk quota exceeded")
#: EFBIG: the file reached the largest size this process may write (``ulimit -f``, or the
#: filesystem's largest file); like a full disk, the write did not happen (issue 44)
_TOO_LARGE = ("File too large",)
_TOO_LARGE_HINT = ("reached the largest file this process may write (EFBIG: a 'ulimit -f' limit "
                   "or the filesystem's largest file size)")


def store_failure(exc: BaseException, path: str | Path, *, writing: bool) -> StoreError | None:
    """The medanon error for what DuckDB reported while opening or writing the store at
    ``path``: a lock held by another process, a refused permission, a full disk, a write on a
    store opened read-only; None when the message names none of these.

    DuckDB reports them all as ``IOException`` (or, at COMMIT, ``TransactionException``) with
    the operating system's words in the message, so the message is what tells them apart.
    """
    text, shown = str(exc), repr(str(path))
    mentioned = re.search(r'file "([^"]+)"', text)
    target = mentioned.group(1) if mentioned else str(path)
    if any(m in text for m in _LOCKED):
        pid = re.search(r"\(PID (\d+)\)", text)
        holder = f"another process (PID {pid.group(1)})" if pid else "another process"
        if "read-only mode" in text:  # the holder only reads: only a writer is turned away
            return StoreLockedError(
                f"Store {shown} is open in {holder}, which is reading it; a command that writes "
                f"to the store (ingest, release) must wait until that process ends. Try again "
                f"when it has finished.")
        return StoreLockedError(
            f"Store {shown} is locked by {holder}, which has it open for writing (a running "
            f"'medanon ingest' or 'release'?); DuckDB allows one writer and no reader beside "
            f"it. Try again when that process has finished.")
    if any(m in text for m in _DENIED):
        reason = next(m for m in _DENIED if m in text).lower()
        if writing:
            return StorePermissionError(
                f"Cannot write store {shown}: {reason} on {target!r}. Run as a user who may "
                f"write the file and its folder (DuckDB keeps a .wal journal beside it), or fix "
                f"their permissions; the commands that only read (inspect, verify, attack, "
                f"evaluate, export, ledger, report) work on a store they may not write.")
        return StorePermissionError(
            f"Cannot read store {shown}: {reason} on {target!r}. Run as a user who may read "
            f"it, or fix its permissions.")
    if any(m in text for m in _FULL):
        return DiskFullError(
            f"The disk holding store {shown} is full: {target!r} could not be written. The "
            f"write was rolled back and the store is as it was; free some space on that disk "
            f"(or use a --store elsewhere) and run the command again.")
    if any(m in text for m in _TOO_LARGE):
        return DiskFullError(
            f"Store {shown} could not grow: {target!r} {_TOO_LARGE_HINT}. The write was rolled "
            f"back and the store is as it was; raise the limit (or use a --store elsewhere) and "
            f"run the command again.")
    if "read-only mode" in text:
        return StoreError(f"Store {shown} is open read-only; open it with read_only=False to "
                          f"write to it.")
    if "different configuration" in text:  # DuckDB: one mode per file and process
        return StoreError(f"Store {shown} is already open in this process in the other mode "
                          f"(read-only or read-write); close it before opening it again.")
    return None


def duckdb_failure(exc: BaseException) -> StoreError | None:
    """:func:`store_failure` for a DuckDB error raised outside the store's own translation
    (e.g. writing a Parquet export): the file is the one DuckDB names, and a full disk is told
    without claiming it was the store's."""
    mentioned = re.search(r'file "([^"]+)"', str(exc))
    target = mentioned.group(1) if mentioned else None
    if any(m in str(exc) for m in _FULL):
        where = f" while writing {target!r}" if target else ""
        return DiskFullError(f"no space left on the device{where}. Free some space (or write "
                             f"elsewhere) and run the command again.")
    if any(m in str(exc) for m in _TOO_LARGE):
        return DiskFullError(f"{target or 'a file'!r} {_TOO_LARGE_HINT}. Raise the limit (or "
                             f"write elsewhere) and run the command again.")
    return store_failure(exc, target or "the store", writing=True)


def _translated(method: Callable) -> Callable:
    """Report a lock, permission or full disk met while writing as the medanon error naming
    it (the transaction has rolled back by then)."""

    @functools.wraps(method)
    def wrapper(self: "ReleaseStore", *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except duckdb.Error as exc:
            known = store_failure(exc, self.path, writing=True)
            if known is None:
                raise
            raise known from None

    return wrapper


def _read_meta(con: duckdb.DuckDBPyConnection, path: Path) -> Schema:
    """The schema of the store at ``path``, after checking that it is a medanon store."""
    try:
        rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    except duckdb.CatalogException:
        raise StoreError(f"{str(path)!r} is a DuckDB database but not a medanon store "
                         "(it has no 'meta' table).") from None
    if rows.get("format_version") != FORMAT_VERSION:
        raise StoreError(f"Store {str(path)!r} has format version {rows.get('format_version')!r}; "
                         f"this medanon reads version {FORMAT_VERSION}.")
    return Schema.from_mapping(tomllib.loads(rows["schema"])["schema"], source=str(path))


@dataclass(frozen=True)
class ReleaseLinks:
    """Which published rows each release links to, on integer codes of every published row
    (:meth:`ReleaseStore.release_links`): the selection of :meth:`ReleaseStore.linked_rows`
    for the cases of one release, without their text.

    A row is linked to release P when its case is one of P's, or is in a group (of any
    release) that holds one of P's cases. Held by a reader of every release, as the releases
    it reads are immutable: 20 bytes a published row (a 24 x 20k series: 9 MiB), less than the
    hash tables of CaseID texts the query in SQL built for each release.

    Attributes:
        periods: The published periods the codes number, in time order.
        rowids: Each row's position in the ``release_rows`` table (DuckDB's ``rowid``).
        period_codes: Each row's period, as its position in ``periods``.
        case_codes: Each row's CaseID, coded 0, 1, ... (every row has one).
        group_codes: Each row's group within its period, coded 0, 1, ...; ``group_count`` for a
            row without a group (it shares a group with no one).
        case_count, group_count: How many CaseIDs and groups there are.
    """

    periods: tuple[str, ...]
    rowids: np.ndarray
    period_codes: np.ndarray
    case_codes: np.ndarray
    group_codes: np.ndarray
    case_count: int
    group_count: int

    @classmethod
    def of(cls, periods: Iterable[str], rowids: np.ndarray, period_codes: np.ndarray,
           case_codes: np.ndarray, group_texts: np.ndarray) -> ReleaseLinks:
        """The links of these rows: ``period_codes`` index ``periods``, ``case_codes`` are
        0, 1, ... (none missing), ``group_texts`` codes each row's group label in any period
        (-1 where it has none)."""
        with_group = group_texts >= 0
        # a group is a label within a period: (period, label) numbered densely
        pairs = period_codes.astype(np.int64) * (int(group_texts.max(initial=-1)) + 1) + group_texts
        codes, distinct = pd.factorize(pairs[with_group])
        group_codes = np.full(len(rowids), len(distinct), dtype=np.int32)
        group_codes[with_group] = codes
        return cls(tuple(periods), rowids, period_codes.astype(np.int32),
                   case_codes.astype(np.int32), group_codes,
                   int(case_codes.max(initial=-1)) + 1, len(distinct))

    def rows_linked_to(self, period: str, *, groups: bool = True) -> np.ndarray:
        """The ``rowids`` of the rows release ``period`` links to (none for a period not
        published when the links were read). Without ``groups``, only the rows of its cases
        (:meth:`ReleaseStore.release_case_rows`' selection): what the checks and measures of
        that release alone read."""
        if period not in self.periods:
            return self.rowids[:0]
        own = self.period_codes == self.periods.index(period)
        cases = np.zeros(self.case_count, dtype=bool)
        cases[self.case_codes[own]] = True
        if not groups:
            return self.rowids[cases[self.case_codes]]
        # the groups holding one of its cases (the last slot: the rows without a group)
        hit = np.zeros(self.group_count + 1, dtype=bool)
        hit[self.group_codes[cases[self.case_codes]]] = True
        hit[-1] = False
        # every case of those groups, beside its own
        cases[self.case_codes[hit[self.group_codes]]] = True
        return self.rowids[cases[self.case_codes]]


class ReleaseStore:
    """A release store file. Use :meth:`open` for an existing store, :meth:`create_or_open` to ingest.

    The store is a context manager; it closes its connection on exit.
    """

    def __init__(self, path: Path, connection: duckdb.DuckDBPyConnection, schema: Schema, *,
                 read_only: bool = False):
        self.path = path
        self._con = connection
        self._batch = False  # inside batch(): writes join its transaction
        self.schema = schema
        # Read-only, the store cannot change while it is open (DuckDB's reader lock keeps every
        # writer out, in this process and in others): its records table's columns and which
        # periods are ingested and published are asked once (:meth:`_fact`). Each was a query
        # of 1-2 ms per period read, and evaluate reads 24 periods' originals and releases
        # (issue 43).
        self._facts: dict[str, object] | None = {} if read_only else None

    # -- opening ---------------------------------------------------------------------------
    @staticmethod
    def _connect(path: Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as exc:
            known = store_failure(exc, path, writing=not read_only)
            if known is not None:
                raise known from None
            raise StoreError(f"{str(path)!r} is not a medanon store (DuckDB could not open it: "
                             f"{_first_line(exc)}).") from None

    @classmethod
    def open(cls, path: str | Path, *, read_only: bool = False) -> "ReleaseStore":
        """Open an existing store; never creates a file.

        Args:
            path: The store file.
            read_only: Open with DuckDB's shared (reader) lock and refuse every write: for
                commands that only read, so that they run beside other readers and on a file
                they may not write. A store written by an older medanon is upgraded once by a
                short write (as a read-write open would); when that write is impossible (another
                reader, no write permission) the open is refused, saying so.

        Raises:
            StoreError: no file there, not a DuckDB database, or not a medanon store.
            StoreLockedError: another process holds a lock that conflicts with this open.
            StorePermissionError: the operating system refuses access to the file.
        """
        path = Path(path)
        if not path.is_file():
            raise StoreError(f"No store at {str(path)!r}: run 'medanon ingest SOURCE --store "
                             f"{path}' first.")
        con = cls._connect(path, read_only=read_only)
        try:
            schema = _read_meta(con, path)
            if _needs_upgrade(con):
                if read_only:
                    # The upgrade moves operator-only fields out of published manifests: reading
                    # the store without it could export them. Upgrade with a short write, then
                    # read as asked.
                    con.close()
                    cls._upgrade_for_reading(path)
                    con = cls._connect(path, read_only=True)
                else:
                    _upgrade(con)
        except duckdb.Error as exc:
            con.close()
            known = store_failure(exc, path, writing=not read_only)
            if known is None:
                raise StoreError(f"Store {str(path)!r} could not be read (DuckDB: "
                                 f"{_first_line(exc)}).") from None
            raise known from None
        except BaseException:
            con.close()
            raise
        return cls(path, con, schema, read_only=read_only)

    @classmethod
    def _upgrade_for_reading(cls, path: Path) -> None:
        try:
            writer = cls._connect(path)
        except StoreError as exc:
            raise type(exc)(f"Store {str(path)!r} was written by an older medanon and needs a "
                            f"one-time upgrade (operator-only fields move out of its manifests) "
                            f"before it can be read, which needs write access: {exc}") from None
        try:
            _upgrade(writer)
        except duckdb.Error as exc:
            known = store_failure(exc, path, writing=True)
            if known is None:
                raise
            raise known from None
        finally:
            writer.close()

    @classmethod
    def create_or_open(cls, path: str | Path, schema: Schema) -> "ReleaseStore":
        """Open the store at ``path``, creating it for ``schema`` when there is none.

        Raises:
            StoreError: the file exists but is not a store, or holds a different schema.
        """
        path = Path(path)
        if path.exists():
            store = cls.open(path)
            if store.schema != schema:
                store.close()
                raise StoreError(f"Store {str(path)!r} was created for schema {store.schema.name!r} "
                                 f"with different columns; use another --store for schema "
                                 f"{schema.name!r}.")
            return store
        if not path.parent.exists():
            raise StoreError(f"Cannot create store {str(path)!r}: folder {str(path.parent)!r} "
                             "does not exist.")
        try:
            con = cls._connect(path)
        except StoreError:
            # e.g. a full disk: DuckDB may leave an empty file behind; the store did not exist
            path.unlink(missing_ok=True)
            Path(str(path) + ".wal").unlink(missing_ok=True)
            raise
        try:
            with _transaction(con):
                cls._create_tables(con, schema)
        except BaseException as exc:
            con.close()
            path.unlink(missing_ok=True)
            Path(str(path) + ".wal").unlink(missing_ok=True)
            known = store_failure(exc, path, writing=True) if isinstance(exc, duckdb.Error) else None
            if known is not None:
                raise known from None
            raise
        return cls(path, con, schema)

    @staticmethod
    def _create_tables(con: duckdb.DuckDBPyConnection, schema: Schema) -> None:
        _run(con, "CREATE TABLE meta(key VARCHAR PRIMARY KEY, value VARCHAR)")
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        con.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("format_version", FORMAT_VERSION), ("schema", schema.to_toml()),
            ("created_at", now), ("created_by", f"medanon {__version__}")])
        _run(con, """CREATE TABLE periods(
            period VARCHAR PRIMARY KEY, ordinal INTEGER NOT NULL, source VARCHAR, era VARCHAR,
            ingested_at VARCHAR NOT NULL, n_reports BIGINT NOT NULL, n_cases BIGINT NOT NULL,
            report VARCHAR NOT NULL)""")
        _run(con, """CREATE TABLE releases(
            period VARCHAR PRIMARY KEY, ordinal INTEGER NOT NULL, method VARCHAR NOT NULL,
            published_at VARCHAR NOT NULL, n_cases BIGINT NOT NULL, n_groups BIGINT NOT NULL,
            manifest VARCHAR NOT NULL)""")
        published = ", ".join(f"{_quote(c)} VARCHAR" for c in _release_columns(schema))
        _run(con, f"CREATE TABLE release_rows(row_no BIGINT NOT NULL, {published})")
        _run(con, """CREATE TABLE ledger(
            period VARCHAR NOT NULL, case_id VARCHAR NOT NULL, mechanism VARCHAR NOT NULL,
            epsilon DOUBLE NOT NULL, delta DOUBLE NOT NULL DEFAULT 0, epsilon_exact VARCHAR,
            dp BOOLEAN NOT NULL DEFAULT TRUE)""")
        _run(con, _CREATE_PRIVATE)

    def close(self) -> None:
        """Close the connection (a ``with`` block does it)."""
        self._con.close()

    def __enter__(self) -> "ReleaseStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def one_thread(self) -> Iterator[None]:
        """DuckDB runs this connection's queries on the calling thread alone inside the block
        (``threads = 1``), and as many threads as before after it.

        For a caller whose own (Python) work is the bulk of its run, as a release is: its
        queries (records read, pseudonym check, linked history, the write) are a fifth of it,
        and a second DuckDB thread on a 2-core machine added more CPU than it took off the
        main thread: not by spinning (none in a perf profile) but by the work of parallel plans
        (partitioned hash joins and aggregates, a parallel append writing its own row groups).
        A 450k q2 release's DuckDB-heavy store calls alone: about 5.1 -> 4.5 s CPU (issue 43).
        The setting is the database instance's: another connection to the same file in this
        process (DuckDB shares one instance per file) runs on one thread meanwhile.
        """
        previous = self._con.execute("SELECT current_setting('threads')").fetchall()[0][0]
        if int(previous) == 1:
            yield
            return
        _run(self._con, "SET threads = 1")
        with _undone_after(lambda: _run(self._con, f"SET threads = {int(previous)}")):
            yield

    def drop_cached_blocks(self, *, above: int | None = None) -> None:
        """Let DuckDB drop the blocks of the store's tables that its reads left in its buffer
        pool (they are read again from the file when needed), when they take more than
        ``above`` bytes (None: 32 MiB); at most half of that stays.

        DuckDB keeps a block it has read until its memory limit (by default most of the
        machine's memory) makes room for another: a release's linked history, a few rows of
        each earlier release found by their CaseIDs, loads blocks of every release published,
        so what stays cached grows with the series (a 450k quarter: 25 MiB at quarter 2, 155
        MiB at quarter 8), and it stayed through the method, the gate and the write, on top of
        their peaks (issue 43). Lowering the limit to what the other buffers use (such as a
        batch's uncommitted rows) makes DuckDB evict the table blocks at once; the limit is
        then what it was.

        The limit is set on a second connection to the same database (DuckDB shares the buffer
        pool and the setting): when DuckDB cannot evict enough it refuses the setting (after
        evicting what it could), and a statement refused on the store's own connection would
        abort the transaction of a :meth:`batch`.
        """
        usage = self._con.execute(
            "SELECT tag, memory_usage_bytes FROM duckdb_memory()").fetchall()
        above = _WORTH_DROPPING if above is None else above
        cached = sum(int(b) for tag, b in usage if tag == "BASE_TABLE")
        if cached <= above:
            return
        others = sum(int(b) for tag, b in usage if tag != "BASE_TABLE")
        # (half the threshold of them may stay: what a next read may find)
        target = others + above // 2
        setting = self._con.cursor()
        try:
            previous = _the_row(setting, "SELECT current_setting('memory_limit')")[0]
            try:
                _run(setting, f"SET memory_limit = '{target}B'")
            except duckdb.OutOfMemoryException:
                pass   # (what it could not evict stays; the limit was not changed)
            # RESET gives the default exactly; a limit set before is set again from its text
            # (DuckDB prints it rounded, so only when it was not the default)
            _run(setting, "RESET memory_limit")
            if _the_row(setting, "SELECT current_setting('memory_limit')")[0] != previous:
                _run(setting, f"SET memory_limit = '{previous}'")
        finally:
            setting.close()

    # -- reading ---------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write's transaction, or nothing when a :meth:`batch` holds one already."""
        if self._batch:
            yield
            return
        with _transaction(self._con):
            yield

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Make every write inside the block one transaction: all of them land, or none (an
        exception, including KeyboardInterrupt, rolls every one back).

        Raises:
            StoreError: a batch is open already.
        """
        if self._batch:
            raise StoreError("A batch is already open on this store.")
        try:
            with _transaction(self._con):
                self._batch = True
                try:
                    yield
                finally:
                    self._batch = False
        except duckdb.Error as exc:  # e.g. a full disk at COMMIT: named, as _translated does
            known = store_failure(exc, self.path, writing=True)
            if known is None:
                raise
            raise known from None

    def sensitive_vocabulary(self) -> set[str]:
        """Every sensitive term in the ingested records (all periods, all sensitive columns).
        Private: for the operator's checks only."""
        if not self._has_records_table():
            return set()
        terms: set[str] = set()
        for name in self.schema.sensitive:
            column = _quote(name)
            if name in self.schema.multi_valued:
                sql = f"SELECT DISTINCT unnest({column}) FROM records"
            else:
                sql = f"SELECT DISTINCT {column} FROM records"
            terms.update(str(r[0]) for r in self._con.execute(sql).fetchall() if r[0] is not None)
        return terms

    def longest_case_span(self) -> int:
        """The most periods between a case's first and last ingested report (0 when no case
        reappears). Private: for the operator's checks only."""
        if not self._has_records_table():
            return 0
        case, per = _quote(self.schema.case_id), _quote(self.schema.period)
        row = _one(self._con, f"""
            SELECT max(span) FROM (
              SELECT max(p.ordinal) - min(p.ordinal) AS span
              FROM records r JOIN periods p ON p.period = r.{per} GROUP BY r.{case})""")
        return int(row[0] or 0) if row else 0

    def periods(self) -> pd.DataFrame:
        """Every ingested period, oldest first, with counts and publication state."""
        frame = self._con.execute("""
            SELECT p.period, p.n_reports, p.n_cases, p.source, p.era, p.ingested_at,
                   r.period IS NOT NULL AS published, r.method, r.published_at,
                   r.n_cases AS released_cases, r.n_groups AS released_groups
            FROM periods p LEFT JOIN releases r USING (period) ORDER BY p.ordinal""").df()
        return frame

    def ingested_periods(self) -> list[str]:
        """Every ingested period, in time order."""
        return list(self._fact("ingested_periods", lambda: tuple(
            r[0] for r in self._con.execute(
                "SELECT period FROM periods ORDER BY ordinal").fetchall())))

    def published_periods(self) -> list[str]:
        """Every published period, in time order."""
        return list(self._fact("published_periods", lambda: tuple(
            r[0] for r in self._con.execute(
                "SELECT period FROM releases ORDER BY ordinal").fetchall())))

    def ingest_report(self, period: str) -> dict:
        """The ingest report of a period (operator only: it counts private records).

        Raises:
            StoreError: the period is not ingested.
        """
        row = _one(self._con, "SELECT report FROM periods WHERE period = ?", [period])
        if row is None:
            raise StoreError(f"Period {period} is not ingested in {str(self.path)!r}.")
        return json.loads(row[0])

    def records(self, period: str) -> pd.DataFrame:
        """The private report-level records of one period (multi-valued cells as tuples)."""
        return self._period_records(period, None)

    def coded_records(self, period: str) -> CodedRecords:
        """:meth:`records`, with the integer codes of the multi-valued columns read as codes
        (:class:`~medanon.data.terms.CodedRecords`): what a release reads of the records
        works on them, and their tuples are made only for a reader that asks (issue 43)."""
        codes: dict[str, TermCodes] = {}
        base = self._period_records(period, codes, tuples=False)
        columns = (list(self._records_table_types()) if self._has_records_table()
                   else list(base.columns))
        return CodedRecords(base, codes, tuple(columns))

    def _period_records(self, period: str, codes: dict[str, TermCodes] | None, *,
                        tuples: bool = True) -> pd.DataFrame:
        """:meth:`records`; ``codes`` (when given) gets the codes of the columns read as codes,
        which are left out of the frame unless ``tuples``."""
        label = parse_period(period).label
        if label not in self.ingested_periods():
            raise StoreError(f"Period {label} is not ingested in {str(self.path)!r}; ingested: "
                             f"{', '.join(self.ingested_periods()) or 'none'}.")
        if not self._has_records_table():
            return pd.DataFrame(columns=self.schema.all_columns)
        return self._read_records(label, list(self._records_table_types()), codes,
                                  tuples=tuples)

    def record_columns(self, period: str, columns: Iterable[str], *,
                       codes: dict[str, TermCodes] | None = None) -> pd.DataFrame:
        """:meth:`records` of one period with only ``columns`` (and the case id and period
        columns, and ``version``), the rows in the same order.

        A reader that needs a few columns of each report (``evaluate``: the QIDs, drugs and
        reactions) skips fetching and converting the others: each multi-valued cell costs a
        Python list and a tuple (issue 30). A column the records table lacks is left out (the
        caller's checks name it).

        ``codes``, when given, gets the integer codes of the multi-valued columns read as codes
        (as :meth:`coded_records` gives them; ``evaluate``'s super records union them).
        """
        label, kept, table = self._columns_kept(period, columns)
        if not table:
            return pd.DataFrame(columns=kept)
        return self._read_records(label, kept, codes)

    def coded_record_columns(self, period: str, columns: Iterable[str]) -> CodedRecords:
        """:meth:`record_columns`, with the integer codes of the multi-valued columns read as
        codes and their rows' tuples never made (:class:`~medanon.data.terms.CodedRecords`,
        as :meth:`coded_records` gives them): ``evaluate``'s super records union the codes
        (issue 43)."""
        label, kept, table = self._columns_kept(period, columns)
        if not table:
            return CodedRecords(pd.DataFrame(columns=kept), {}, tuple(kept))
        codes: dict[str, TermCodes] = {}
        base = self._read_records(label, kept, codes, tuples=False)
        return CodedRecords(base, codes, tuple(kept))

    def _columns_kept(self, period: str, columns: Iterable[str]) -> tuple[str, list[str], bool]:
        """The label of ``period``, the columns :meth:`record_columns` reads of it, and whether
        the store has a records table (without one, the columns of the empty frame it gives).

        Raises:
            StoreError: the period is not ingested.
        """
        label = parse_period(period).label
        if label not in self.ingested_periods():
            raise StoreError(f"Period {label} is not ingested in {str(self.path)!r}; ingested: "
                             f"{', '.join(self.ingested_periods()) or 'none'}.")
        s = self.schema
        wanted = list(dict.fromkeys([s.case_id, s.period, *columns, "version"]))
        if not self._has_records_table():
            return label, [c for c in wanted if c != "version"], False
        present = self._record_columns()
        return label, [c for c in wanted if c in present], True

    def _read_records(self, label: str, kept: list[str],
                      codes: dict[str, TermCodes] | None = None, *,
                      tuples: bool = True) -> pd.DataFrame:
        """The records of period ``label`` with the columns ``kept`` (in that order), ordered by
        case id, report id and version; multi-valued cells as tuples of text. ``codes``, when
        given, gets the codes of each multi-valued column read as codes; without ``tuples``,
        such a column is left out of the frame (``CodedRecords.base``)."""
        s = self.schema
        types = self._records_table_types()
        order = ", ".join(_quote(c) for c in (s.case_id, *s.identifiers[:1], "version") if c in types)
        where = f"FROM records WHERE {_quote(s.period)} = ?"
        multi = [c for c in s.multi_valued if c in kept]
        if any(types[c] != "VARCHAR[]" for c in multi):
            return self._read_records_cell_by_cell(kept, multi, where, order, label)
        # The rows' order is sorted once, on the row ids alone (rowid breaks ties); every query
        # below scans without sorting and its rows are put in that order here: sorting each
        # query's rows with their payload cost more than the rest of the query (issue 43).
        ordered = self._con.execute(f"SELECT rowid AS {_ROW} {where} ORDER BY {order}, rowid",
                                    [label]).fetchnumpy()[_ROW]
        ordered = np.asarray(ordered, dtype=np.int64)
        shared = [c for c in dict.fromkeys([s.period, *s.categorical_qids, *s.date_columns])
                  if c in kept and c not in multi]
        enums = _few_texts(self._con, [c for c in shared if types[c] == "VARCHAR"], where,
                           label)
        plain = [_enum_cast(c, enums[c]) if c in enums else _quote(c)
                 for c in kept if c not in multi]
        frame = self._con.execute(f"SELECT rowid AS {_ROW}, {', '.join(plain)} {where}",
                                  [label]).df()
        at = _positions(frame.pop(_ROW).to_numpy(), ordered)
        # (rows ingested in that order are scanned in it: the frame is then not copied)
        if not is_identity(at):
            frame = frame.take(at).reset_index(drop=True)
        _texts_of_enums(self._con, frame, list(enums))
        _share_texts(frame, [c for c in shared if c not in enums])
        # A list column whose terms are few (a quarter's reactions, drugs, outcomes: a few
        # hundred terms in all) is read as integer codes: each item cast in SQL to an ENUM of
        # the period's terms, the codes fetched as one integer array, each distinct cell made
        # a tuple once (:class:`~medanon.data.terms.TermCodes`). No text is made per cell,
        # joined, hashed or split (issue 43). A missing item (NULL: the vocabulary holds it)
        # sends the whole read cell by cell.
        vocabulary = self._list_vocabulary(multi, where, label)
        if any(t is None for t in vocabulary):
            del frame
            return self._read_records_cell_by_cell(kept, multi, where, order, label)
        texts = [str(t) for t in vocabulary]
        enum = (f"ENUM({', '.join(_literal(t) for t in texts)})" if len(texts) <= _ENUM_TEXTS
                else None)
        # Lists of more terms come as one string per cell, split here: DuckDB hands a list
        # cell to pandas as a numpy array, and making one per cell cost more than the rest
        # of the read (issue 30).
        # len() tells an empty list from a list holding one empty string. A list that does
        # not come back from its joined items (an item holding the separator) sends the
        # whole read cell by cell.
        # Each distinct cell is split once and its items are shared by every cell holding
        # them: one tuple per cell and one str per item cost a 450k-case quarter more than a
        # gigabyte (issue 30). The joined texts are fetched one column at a time, so only one
        # column of them is alive at once: fetched together they were the peak of the read
        # (issue 43).
        # An item holding the separator is found when the joined texts are split
        # (:func:`_split_lists`), not by joining each list a second time in the query (a
        # fifth of the query's cost, issue 43). Every query scans the same rows in the same
        # order, so their positions are found once.
        terms: dict[str, str] = {}
        scanned: tuple[np.ndarray, np.ndarray] | None = None
        for name in multi:
            coded = (self._coded_lists(name, texts, enum, where, label, ordered)
                     if enum is not None else None)
            if coded is not None:
                if codes is not None:
                    codes[name] = coded
                if tuples or codes is None:
                    frame[name] = coded.tuples()
                continue
            column = _quote(name)
            joined = self._con.execute(
                f"SELECT rowid AS {_ROW}, array_to_string({column}, chr(31)) AS texts, "
                f"len({column}) AS n {where}", [label]).fetchnumpy()
            rowids = np.asarray(joined.pop(_ROW), dtype=np.int64)
            if scanned is None or not np.array_equal(scanned[0], rowids):
                scanned = rowids, _positions(rowids, ordered)
            at = scanned[1]
            counts = np.asarray(joined["n"].filled(0) if np.ma.isMaskedArray(joined["n"])
                                else joined["n"])[at]
            texts_of_cells = np.asarray(joined.pop("texts"), dtype=object)[at]
            texts_of_cells[counts <= 0] = None
            which, distinct = pd.factorize(texts_of_cells)  # an empty list: -1, the last cell
            del texts_of_cells, joined
            cells = _split_lists(distinct.tolist(), counts[first_appearances(which)], terms)
            if cells is None:   # an item holds the separator
                del frame
                if codes is not None:   # (rows tied in the order may come in another order)
                    codes.clear()
                return self._read_records_cell_by_cell(kept, multi, where, order, label)
            frame[name] = cells[which]
        return frame[[c for c in kept if c in frame.columns]]

    def _list_vocabulary(self, multi: list[str], where: str, label: str) -> list[str | None]:
        """The distinct items of the list columns ``multi`` in the rows ``where`` picks (one
        query), sorted as Python sorts text (code point order), a missing item (NULL) first."""
        if not multi:
            return []
        items = " UNION ALL ".join(f"SELECT unnest({_quote(c)}) AS {_CODE} {where}" for c in multi)
        found = self._con.execute(f"SELECT DISTINCT {_CODE} FROM ({items})",
                                  [label] * len(multi)).fetchnumpy()[_CODE]
        hidden = np.ma.getmaskarray(np.asanyarray(found))
        terms = np.asarray(np.ma.getdata(np.asanyarray(found)), dtype=object).tolist()
        present = [t for t, gone in zip(terms, hidden.tolist()) if t is not None and not gone]
        return ([None] if len(present) < len(terms) else []) + sorted(present)

    def _coded_lists(self, name: str, vocabulary: list[str], enum: str, where: str, label: str,
                     ordered: np.ndarray) -> TermCodes | None:
        """The list column ``name`` of the rows ``ordered`` (row ids, in that order) as codes
        into ``vocabulary`` (every item of the column, no missing one; ``enum`` is the ENUM
        type of those texts, in that order). None when the query's items do not come back in
        the order the cells hold them (read it another way).

        Raises:
            StoreError: the records changed between this query and an earlier one.
        """
        if not vocabulary:   # no list holds an item: every cell is empty
            return TermCodes(vocabulary, np.zeros(len(ordered) + 1, dtype=np.int64),
                             np.zeros(0, dtype=np.int32))
        got = self._con.execute(
            f"SELECT {_ROW}, enum_code({_CODE}) AS {_CODE} FROM (SELECT rowid AS {_ROW}, "
            f"unnest(CAST({_quote(name)} AS {enum}[])) AS {_CODE} {where})", [label]).fetchnumpy()
        item_rows = np.asarray(got[_ROW], dtype=np.int64)
        fetched = np.asanyarray(got[_CODE])
        if bool(np.ma.getmaskarray(fetched).any()):   # a missing item, added since
            raise StoreError("The store's records changed while they were read; read them again.")
        codes = np.asarray(np.ma.getdata(fetched))
        # The items come in the order of the scan and, within a list, in the list's order
        # (DuckDB keeps a query's insertion order). It is checked: each row's items are
        # contiguous and rows come in increasing row ids; a list shorter than the batch
        # DuckDB moves (2048 items) cannot have its items moved past another row's unseen.
        starts = np.flatnonzero(np.r_[True, item_rows[1:] != item_rows[:-1]]) if len(
            item_rows) else np.zeros(0, dtype=np.int64)
        run_rows = item_rows[starts]
        run_lengths = np.diff(np.r_[starts, len(item_rows)])
        if len(run_rows) and (bool((run_rows[1:] <= run_rows[:-1]).any())
                              or int(run_lengths.max()) >= _VECTOR_ITEMS):
            return None
        lengths = np.zeros(len(ordered), dtype=np.int64)
        # where each listed row is in the order
        place = _places(ordered, run_rows) if len(run_rows) else np.zeros(0, dtype=np.int64)
        lengths[place] = run_lengths
        ptr = np.r_[0, np.cumsum(lengths)]
        if len(ordered) < 2 or bool((ordered[1:] > ordered[:-1]).all()):
            # The order is the scan's (records ingested in it, as a store writes them): the
            # listed rows' places then increase too, so each row's items start where the
            # rows before it in the order end, and the items are already in the order's
            # place (the gather below would be 0, 1, 2, ...; 1.5M items of a quarter's
            # reactions: issue 43).
            return TermCodes(vocabulary, ptr, codes)
        begin = np.zeros(len(ordered), dtype=np.int64)
        begin[place] = starts
        gather = np.repeat(begin - ptr[:-1], lengths) + np.arange(ptr[-1])
        return TermCodes(vocabulary, ptr, codes[gather])

    def _read_records_cell_by_cell(self, kept: list[str], multi: list[str], where: str,
                                   order: str, label: str) -> pd.DataFrame:
        """:meth:`_read_records` of lists that do not come back from their items joined with
        :data:`_LIST_SEPARATOR` (or are not lists of text): each list cell made a tuple."""
        frame = self._con.execute(f"SELECT {', '.join(_quote(c) for c in kept)} {where} "
                                  f"ORDER BY {order}", [label]).df()
        for name in multi:
            # a missing list: None, or pandas' missing value (pandas 3), which is not iterable
            frame[name] = [() if v is None or v is pd.NA else tuple(v) for v in frame[name]]
        return frame

    def ingested_case_ids(self, periods: Iterable[str] | None = None, *,
                          among: Iterable[str] | None = None) -> list[str]:
        """Operator only: the real CaseIDs the store's records hold (distinct, as text, sorted):
        of every period, or of ``periods`` only; with ``among``, only those that are in it."""
        if not self._has_records_table():
            return []
        column = _quote(self.schema.case_id)
        chosen = pd.DataFrame({"period": pd.Series(
            sorted(set(periods)) if periods is not None else [], dtype=object)})
        wanted = pd.DataFrame({"case_id": _texts_column(among if among is not None else [])})
        where = []
        if periods is not None:
            where.append("period IN (SELECT period FROM case_ids_periods)")
        if among is not None:
            where.append(f"CAST({column} AS VARCHAR) IN (SELECT case_id FROM case_ids_among)")
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        with _registered(self._con, "case_ids_periods", chosen), \
                _registered(self._con, "case_ids_among", wanted):
            # fetched as one array of str, not a tuple per row (450k a quarter, issue 43);
            # sorted, then each run of equal ids kept once: DISTINCT hashed every id besides
            # the sort (0.23 -> 0.13 s of a 450k quarter's, issue 43)
            ids = self._con.execute(
                f"SELECT CAST({column} AS VARCHAR) AS {_ROW} FROM records{clause} "
                f"ORDER BY 1").fetchnumpy()[_ROW]
        if np.ma.isMaskedArray(ids) and ids.mask.any():   # a missing CaseID, as str(None)
            cells = np.array(ids.data, dtype=object)
            cells[np.ma.getmaskarray(ids)] = None
            return [str(c) for c in _runs_once(cells).tolist()]
        return _runs_once(np.asarray(ids, dtype=object)).tolist()

    def published_case_ids(self, among: Iterable[str]) -> list[str]:
        """The published CaseIDs (of any release) that are in ``among`` (distinct, sorted)."""
        # (repeats need not go: SQL's IN reads a set; issue 43)
        wanted = pd.DataFrame({"case_id": _texts_column(among)})
        with _registered(self._con, "published_among", wanted):
            return [r[0] for r in self._con.execute(
                "SELECT DISTINCT case_id FROM release_rows "
                "WHERE case_id IN (SELECT case_id FROM published_among) ORDER BY 1").fetchall()]

    def published_mask(self, ids: Iterable[str]) -> np.ndarray:
        """Whether each of ``ids`` is a published CaseID (of any release), in their order.

        :meth:`published_case_ids` as a mask of ``ids``: the positions of the published ones
        fetched as integers, where their texts, sorted and fetched as tuples, were then looked
        up again in ``ids`` (a 450k quarter: 0.22 -> 0.11 s CPU, issue 43). Positions, as
        DuckDB does not keep the order of a registered frame's rows through the join.
        """
        texts = _texts_column(ids)
        wanted = pd.DataFrame({"case_id": texts,
                               "position": np.arange(len(texts), dtype=np.int64)})
        with _registered(self._con, "published_mask", wanted):
            positions = self._con.execute(
                "SELECT position FROM published_mask "
                "WHERE case_id IN (SELECT case_id FROM release_rows)").fetchnumpy()["position"]
        mask = np.zeros(len(texts), dtype=bool)
        mask[np.asarray(positions, dtype=np.int64)] = True
        return mask

    def release_rows(self, period: str, columns: Iterable[str] | None = None) -> pd.DataFrame:
        """The published rows of a period, as strings in the release format.

        Args:
            period: A published period.
            columns: Only these of :meth:`release_columns`, in that order (a name it does not
                list is left out): a reader of a few columns (``medanon signals``) skips
                fetching and converting the others (issue 43). None: every column.
        """
        self._require_published(period)
        if columns is None:
            selected = "* EXCLUDE (row_no)"
        else:
            wanted = set(columns)
            selected = ", ".join(_quote(c) for c in self.release_columns() if c in wanted)
            if not selected:
                return pd.DataFrame(index=pd.RangeIndex(self._release_count(period)))
        frame = self._con.execute(
            f"SELECT {selected} FROM release_rows WHERE period = ? ORDER BY row_no",
            [period]).df()
        return frame.astype(object).where(frame.notna(), "")

    def _release_count(self, period: str) -> int:
        return int(_the_row(self._con, "SELECT count(*) FROM release_rows WHERE period = ?",
                            [period])[0])

    def release_cases(self, period: str) -> list[str]:
        """The case ids a published period holds, in release order."""
        self._require_published(period)
        return [r[0] for r in self._con.execute(
            "SELECT case_id FROM release_rows WHERE period = ? ORDER BY row_no", [period]).fetchall()]

    def published_case_span(self) -> int:
        """The most periods between a CaseID's first and last published release (0 when no
        case reappears): :func:`medanon.verify.observed_case_span` in SQL."""
        row = _one(self._con, """
            SELECT max(span) FROM (
              SELECT max(p.ordinal) - min(p.ordinal) AS span
              FROM release_rows r JOIN releases p USING (period) GROUP BY r.case_id)""")
        return int(row[0] or 0) if row else 0

    def linked_rows(self, cases: Iterable[str], *, whole: Iterable[str] = (),
                    share_cells: bool = False, columns: Iterable[str] | None = None
                    ) -> dict[str, pd.DataFrame]:
        """The published rows a release of ``cases`` can link to, per published period (oldest
        first; a period with none gives an empty frame): the rows of those cases, of every case
        in a group that holds one of them, and of every case of the periods in ``whole``.

        The selection of :meth:`medanon.published.series.PublishedSeries.linked`, run in SQL:
        what a release reads of the history grows with the cases it shares with it, not with
        the number of releases (issue 30).

        With ``share_cells``, the cells of a column that hold equal text hold one str object
        (the values are the same): for a caller that holds the rows a long time, as a release
        does through its method's peak. A group repeats its QID values on every row, so a
        450k-case quarter linked to 317k earlier rows held 374 MiB less, for 0.7 s of CPU.

        ``columns``: only these of :meth:`release_columns`, in that order, as
        :meth:`release_linked_rows` reads them (None: every column).
        """
        # the seed's repeats need not go: SQL's IN and UNION read a set (a pd.unique of a
        # quarter's 450k CaseIDs cost a seventh of a second, issue 43)
        seed = pd.DataFrame({"case_id": _texts_column(cases)})
        with _registered(self._con, "linked_seed", seed):
            return self._linked_rows("SELECT case_id FROM linked_seed", [], whole, share_cells,
                                     columns)

    def release_linked_rows(self, period: str, links: ReleaseLinks | None = None,
                            columns: Iterable[str] | None = None,
                            own_columns: Iterable[str] = (), *,
                            groups: bool = True) -> dict[str, pd.DataFrame]:
        """:meth:`linked_rows` of the cases the release of ``period`` holds
        (:meth:`release_cases`): the rows ``links`` (:meth:`release_links`, read now when None)
        selects for it, fetched by their position in the table.

        A reader of every release (``evaluate``, ``verify``) reads the links once: selecting the
        rows in SQL joined the whole table's CaseIDs and groups as text, three times a release
        (24 x 20k: 3.0 s of CPU, where the selection on integer codes costs 0.07 s, issue 43).

        ``columns``: only these of :meth:`release_columns`, in that order (a name it does not
        list is left out), as :meth:`release_rows`; None: every column. Each cell fetched is a
        Python str made by DuckDB: ``evaluate`` leaves out the columns it never reads.
        ``own_columns``: of those, the ones fetched for the rows of ``period`` only (the frames
        of the other releases lack them): ``evaluate``'s drugs, which only the signals and the
        screening of the release itself read. Without ``groups``, only the rows of the
        release's cases, not those of the other cases of their groups
        (:meth:`ReleaseLinks.rows_linked_to`).
        """
        self._require_published(period)
        links = links if links is not None else self.release_links()
        wanted = pd.DataFrame({"wanted": links.rows_linked_to(period, groups=groups)})
        with _registered(self._con, "linked_rowids", wanted):
            return self._fetched_linked_rows(
                "SELECT wanted FROM linked_rowids", "r.rowid", [], share_cells=False,
                columns=columns, own=(period, tuple(own_columns)))

    def release_links(self) -> ReleaseLinks:
        """Which rows each published release links to (:class:`ReleaseLinks`), as of now."""
        # Coded in SQL, only integers fetched: the texts of every published row fetched to be
        # coded here (480k CaseIDs, groups and periods) raised verify's peak memory by 20 MB
        # for the same CPU. A row without a CaseID links to nothing (SQL's IN never matches
        # a NULL; the inner join drops it); a NULL group is no group (-1). The codes number
        # the distinct CaseIDs and groups in any order (hashed, then joined back): they are
        # read only as equal or not, and ranking them (a sort of 480k texts each) cost half
        # again as much (issue 43).
        fetched = self._con.execute("""
            WITH cases AS (SELECT case_id, row_number() OVER () - 1 AS code
                           FROM (SELECT DISTINCT case_id FROM release_rows
                                 WHERE case_id IS NOT NULL)),
                 groups AS (SELECT "group", row_number() OVER () - 1 AS code
                            FROM (SELECT DISTINCT "group" FROM release_rows
                                  WHERE "group" IS NOT NULL))
            SELECT r.rowid AS medanon_rowid,
                   coalesce(p.position, -1) AS medanon_period,
                   c.code AS medanon_case,
                   coalesce(g.code, -1) AS medanon_group
            FROM release_rows r
            JOIN cases c USING (case_id)
            LEFT JOIN groups g USING ("group")
            LEFT JOIN (SELECT period, row_number() OVER (ORDER BY ordinal) - 1 AS position
                       FROM releases) p USING (period)""").fetchnumpy()
        return ReleaseLinks.of(self.published_periods(),
                               *(np.asarray(fetched[f"medanon_{name}"], dtype=np.int64)
                                 for name in ("rowid", "period", "case", "group")))

    def _linked_rows(self, seed: str, params: list, whole: Iterable[str],
                     share_cells: bool, columns: Iterable[str] | None = None
                     ) -> dict[str, pd.DataFrame]:
        """:meth:`linked_rows` of the cases the query ``seed`` (with ``params``) selects."""
        periods = pd.DataFrame({"period": pd.Series(sorted(set(whole)), dtype=object)})
        with _registered(self._con, "linked_whole", periods):
            # The seed is read once, for its published rows (``own``): a seed CaseID never
            # published selects no row, so the members need only the published ones. (Its
            # 450k CaseIDs of a quarter, scanned from Python and hashed a second time for a
            # UNION with the members, cost a third of the selection: 0.29 -> 0.18 s CPU,
            # issue 43.) ``own`` is a CTE read twice, so DuckDB keeps a copy of it: the rows
            # of the seed's published cases, not the seed.
            members = f"""
                WITH own AS (
                  SELECT r.period, r."group", r.case_id FROM release_rows r
                  WHERE r.case_id IN ({seed})),
                members AS (
                  SELECT r.case_id FROM release_rows r
                  JOIN (SELECT DISTINCT period, "group" FROM own) USING (period, "group")
                  UNION SELECT case_id FROM own
                  UNION SELECT case_id FROM release_rows
                        WHERE period IN (SELECT period FROM linked_whole))
                SELECT case_id FROM members"""
            return self._fetched_linked_rows(members, "r.case_id", params,
                                             share_cells=share_cells, columns=columns)

    def _fetched_linked_rows(self, selection: str, key: str, params: list, *,
                             share_cells: bool, columns: Iterable[str] | None = None,
                             own: tuple[str, tuple[str, ...]] | None = None
                             ) -> dict[str, pd.DataFrame]:
        """The published rows whose ``key`` is IN the query ``selection`` (with ``params``),
        per published period as :meth:`linked_rows` gives them (only ``columns``, and
        ``own``'s columns for the rows of its period only: see :meth:`release_linked_rows`)."""
        names = _release_columns(self.schema)
        if columns is not None:
            kept = set(columns)
            names = [c for c in names if c in kept]
        periods = self.published_periods()
        # (the period's position: a period not published has no rows here)
        mine = periods.index(own[0]) if own is not None and own[0] in periods else -1
        own_names = set(own[1]) & set(names) - {"period"} if own is not None else set()
        # A missing cell is read as "" (what the frames hold; pandas' isna over every cell
        # cost more than the query's coalesce), and the rows come unsorted: sorting them with
        # their text in the query cost a fifth of the read, where their order (period, then
        # row_no) is an argsort of two arrays here (issue 43). As arrays, not a frame: the
        # frame's text dtype would be converted again, cell by cell.
        # The period comes as its release's position (the rows of no published release are
        # not returned), its label one str for all its rows: a str made per row, and hashed
        # to split the rows, cost 0.15 s of evaluate's 24 x 20k linked reads (issue 43).
        selected = "".join(
            f", CASE WHEN p.position = {mine} THEN coalesce(r.{_quote(c)}, '') END AS {_quote(c)}"
            if c in own_names else f", coalesce(r.{_quote(c)}, '') AS {_quote(c)}"
            for c in names if c != "period")
        fetched = self._con.execute(
            f"SELECT r.row_no AS {_ROW_NO}, p.position AS {_POSITION}{selected} "
            f"FROM release_rows r JOIN (SELECT period, row_number() OVER (ORDER BY ordinal) - 1 "
            f"AS position FROM releases) p USING (period) "
            f"WHERE {key} IN ({selection})", params).fetchnumpy()
        which = np.asarray(fetched.pop(_POSITION), dtype=np.int64)
        row_no = np.asarray(fetched.pop(_ROW_NO), dtype=np.int64)
        cells = {c: np.asarray(fetched.pop(c), dtype=object) for c in names if c != "period"}
        del fetched
        if "period" in names:
            cells["period"] = np.array(periods, dtype=object)[which]
        if share_cells:
            # (the CaseIDs, one a row, are not shared; the periods are)
            # (no cell is missing: the query reads a missing one as "")
            for name in names:
                if name not in ("case_id", "period"):
                    cells[name] = _one_object_per_text(cells[name])
        # each period's rows in row_no order (stable: as the query's ORDER BY period, row_no)
        order = np.lexsort((row_no, which))
        bounds = np.searchsorted(which[order], np.arange(len(periods) + 1))
        empty: dict[bool, pd.DataFrame] = {}   # one frame of each kind for the periods without rows
        out = {}
        for i, label in enumerate(periods):
            held = [c for c in names if i == mine or c not in own_names]
            if bounds[i + 1] > bounds[i]:
                out[label] = _object_frame({c: cells[c][order[bounds[i]:bounds[i + 1]]]
                                            for c in held})
            else:
                own_release = i == mine
                if own_release not in empty:
                    empty[own_release] = pd.DataFrame({c: pd.Series(dtype=object) for c in held})
                out[label] = empty[own_release]
        return out

    def release_columns(self) -> list[str]:
        """The columns of every published release (:meth:`release_rows`), in order."""
        return _release_columns(self.schema)

    def release_case_rows(self, period: str) -> dict[str, pd.DataFrame]:
        """Every published row of the cases the release of ``period`` holds, per published
        period (oldest first; a period with none gives an empty frame): the release itself and
        its cases' rows in the others.

        What the attacks on that release's groups read (:func:`medanon.attacks.worst_case.
        attack_linked`): :meth:`linked_rows` of its cases without the rows of the other cases
        in their groups, which only the gate's check of those other releases reads.
        """
        self._require_published(period)
        columns = _release_columns(self.schema)
        frame = self._con.execute("""
            SELECT r.* FROM release_rows r
            WHERE r.case_id IN (SELECT case_id FROM release_rows WHERE period = ?)
            ORDER BY r.period, r.row_no""", [period]).df()
        frame = frame.astype(object).where(frame.notna(), "")
        by_period = dict(iter(frame.groupby("period", sort=False))) if len(frame) else {}
        empty = pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
        return {label: (by_period[label][columns].reset_index(drop=True) if label in by_period
                        else empty) for label in self.published_periods()}

    def manifests(self) -> dict[str, dict]:
        """Every published manifest, oldest first (one query)."""
        return {p: json.loads(m) for p, m in self._con.execute(
            "SELECT period, manifest FROM releases ORDER BY ordinal").fetchall()}

    def manifest(self, period: str) -> dict:
        """The published manifest of a period.

        Raises:
            StoreError: the period is not published.
        """
        self._require_published(period)
        row = _the_row(self._con, "SELECT manifest FROM releases WHERE period = ?", [period])
        return json.loads(row[0])

    def ledger(self) -> pd.DataFrame:
        """The privacy ledger: one row per case, period and mechanism report (operator only)."""
        return self._con.execute("SELECT * FROM ledger ORDER BY period, case_id").df()

    def operator_record(self, period: str) -> dict:
        """What only the operator sees about a published period (never exported):
        ``input_sha256`` (of the period's input records, or None) and ``private_details``."""
        self._require_published(period)
        row = _one(self._con, "SELECT input_sha256, details FROM release_private WHERE period = ?",
                   [period])
        if row is None:
            return {"input_sha256": None, "private_details": {}}
        return {"input_sha256": row[0], "private_details": json.loads(row[1] or "{}")}

    def operator_manifests(self) -> dict[str, dict]:
        """Every published manifest with its operator-only facts put back where the method
        wrote them (input and withheld counts, term counts, ...; issue 41,
        ``published.manifest_roles``), oldest first: what ``medanon report`` and ``inspect``
        read. Never exported."""
        from ..published.manifest_roles import MANIFEST_FACTS, operator_view

        facts = {p: json.loads(d or "{}").get(MANIFEST_FACTS) for p, d in self._con.execute(
            "SELECT period, details FROM release_private").fetchall()}
        return {p: operator_view(m, facts.get(p)) for p, m in self.manifests().items()}

    # (the store's own tables: an ingest attaches a staging database with a records table too)
    def _record_columns(self) -> list[str]:
        return list(self._records_table_types())

    def _has_records_table(self) -> bool:
        # (a table has at least one column)
        return bool(self._records_table_types())

    def _fact(self, name: str, ask: Callable[[], Any]) -> Any:
        """``ask()``, asked once while the store is open read-only (``self._facts``)."""
        if self._facts is None:
            return ask()
        if name not in self._facts:
            self._facts[name] = ask()
        return self._facts[name]

    def _require_published(self, period: str) -> None:
        if period not in self.published_periods():
            raise StoreError(f"Period {period} is not published in {str(self.path)!r}.")

    # -- writing ---------------------------------------------------------------------------
    @_translated
    def ingest(self, quarters: FaersIngest | Iterable[FaersQuarter] | object,
               deleted_case_ids: Iterable[str] | None = None, *,
               allow_empty: bool = False) -> IngestSummary:
        """Add (or replace, when unpublished) periods in one transaction.

        Args:
            quarters: What the loader returns: a :class:`~medanon.data.loaders.faers.FaersIngest`
                (:func:`~medanon.data.loaders.faers.read_faers`), a :class:`medanon.Dataset`
                (``Dataset.from_faers``, ``Dataset.from_dataframe``), or
                :class:`~medanon.data.loaders.faers.FaersQuarter` objects. Anything with
                ``quarters`` and ``deleted_case_ids`` attributes is read as the first two are.
                An iterable that is not a list or tuple, e.g. the quarters of
                :func:`~medanon.data.loaders.faers.open_faers` (or ``Dataset.stream_faers``),
                is taken one quarter at a time: each is written before the next is asked for,
                and the transaction ends only after the last (its ``deleted_case_ids`` and
                ``periods`` attributes, when it has them, are read first).
            deleted_case_ids: Case ids FDA withdrew; removed from every unpublished period.
                Default: those of ``quarters`` (a FaersIngest's or Dataset's), else none.
            allow_empty: Accept a period with no records (a header-only extract would otherwise
                be published as an empty release and lock the real quarter out).

        Raises:
            ValidationError: ``quarters`` holds something other than FaersQuarter objects.
            StoreError: a period is already published, would precede a published one, or has
                no records without ``allow_empty``.
        """
        found = getattr(quarters, "quarters", None)
        if deleted_case_ids is None:   # a FaersIngest, a Dataset, open_faers: its DELETE list
            deleted_case_ids = getattr(quarters, "deleted_case_ids", ())
        given: object = quarters if found is None else found
        if isinstance(given, FaersQuarter):
            given = [given]
        if not isinstance(given, Iterable):
            raise _not_quarters(given)
        # a list or tuple is checked whole up front; any other iterable is streamed
        listed = [_quarter(item) for item in given] if isinstance(given, (list, tuple)) else None
        streamed = listed is None
        published = set(self.published_periods())
        latest = max((parse_period(p) for p in published), default=None)
        summary = IngestSummary()
        if listed is None:
            for period in getattr(given, "periods", ()):  # refused before anything is read
                self._check_ingestible(parse_period(period).label, published, latest)
        else:
            refuse_empty({item.label: len(item.records) for item in listed},
                         source=listed[0].source if listed else "", allow_empty=allow_empty)
            for item in listed:
                self._check_ingestible(item.label, published, latest)
        existing = set(self.ingested_periods())
        deleted = sorted(set(deleted_case_ids or ()))
        # A source of one quarter (a holder's usual ingest: the quarter FDA just put out) is
        # written straight into the transaction: staging holds no memory back when there is no
        # next quarter to read, and writing the rows twice cost ~3 s of a 450k quarter's 16 s.
        # (A source of unknown length, or of several quarters, is staged.)
        if (streamed and len(getattr(given, "periods", ())) != 1 and not self._batch
                and not self._read_only()):
            with self.one_thread():
                return self._ingest_staged(given, existing, deleted, published, latest,
                                           allow_empty)
        # DuckDB on this thread alone (one_thread), as for a release: a 450k quarter's insert
        # and commit took ~0.25 s less CPU of about 2 s than with a second DuckDB thread
        with self.one_thread(), self._write():
            sizes: dict[str, int] = {}
            source = ""
            # each one checked as it is read (map keeps no reference to a quarter it gave)
            for item in map(_quarter, given if listed is None else listed):
                if streamed:
                    self._check_ingestible(item.label, published, latest)
                sizes[item.label] = len(item.records)
                source = source or item.source
                self.schema.check_columns(item.records, what=f"period {item.label}")
                if not self._has_records_table():
                    self._create_records(_record_types(self.schema, item.records))
                replacing = item.label in existing
                if replacing:
                    _run(self._con, f"DELETE FROM records WHERE {_quote(self.schema.period)} = ?",
                         [item.label])
                # the facts first: their temporaries are gone before DuckDB holds the rows
                fact = _PeriodFacts.of(item, self.schema)
                if streamed:
                    give_back_freed_memory()  # what reading the quarter freed
                self._insert_records(item.records, "records")
                self._period_row(fact, replacing, summary)
                del item  # a streamed quarter is let go before the next one is read
            if streamed:  # the transaction rolls back: nothing of this ingest stays
                refuse_empty(sizes, source=source, allow_empty=allow_empty)
            self._apply_deletions(deleted, published, summary)
        return summary

    def _ingest_staged(self, quarters: Iterable[object], existing: set[str],
                       deleted: list[str], published: set[str], latest,
                       allow_empty: bool) -> IngestSummary:
        """A streamed ingest: each quarter is written into a staging database beside the
        store, and the store takes them all in one transaction at the end. DuckDB keeps the
        rows a transaction appends from pandas in memory until it commits: written straight
        into the store, every quarter of a long source would stay in memory to the end."""
        summary = IngestSummary()
        facts: list[_PeriodFacts] = []
        types: dict[str, str] | None = None
        with self._staging() as staging:
            for item in map(_quarter, quarters):  # each one checked as it is read
                self._check_ingestible(item.label, published, latest)
                self.schema.check_columns(item.records, what=f"period {item.label}")
                if types is None:
                    types = (self._records_table_types() if self._has_records_table()
                             else _record_types(self.schema, item.records))
                    _run(self._con, f"CREATE TABLE {staging}.records(" + ", ".join(
                        f"{_quote(c)} {t}" for c, t in types.items()) + ")")
                facts.append(_PeriodFacts.of(item, self.schema))
                give_back_freed_memory()  # what reading the quarter freed
                # each slice commits on its own (DuckDB's auto-commit): the staging database
                # is thrown away whole if anything fails, and DuckDB lets go of a committed slice
                self._insert_records(item.records, f"{staging}.records", list(types))
                del item  # let go before the next quarter is read
                give_back_freed_memory()
            refuse_empty({f.period: f.n_reports for f in facts},
                         source=facts[0].source if facts else "", allow_empty=allow_empty)
            per = _quote(self.schema.period)
            with self._write():
                if facts and not self._has_records_table():
                    assert types is not None  # set with the first quarter's facts
                    self._create_records(types)
                cols = ", ".join(_quote(c) for c in self._record_columns())
                for fact in facts:
                    replacing = fact.period in existing
                    if replacing:
                        _run(self._con, f"DELETE FROM records WHERE {per} = ?", [fact.period])
                    _run(self._con, f"INSERT INTO records ({cols}) SELECT {cols} FROM "
                                    f"{staging}.records WHERE {per} = ?", [fact.period])
                    self._period_row(fact, replacing, summary)
                self._apply_deletions(deleted, published, summary)
        return summary

    @contextmanager
    def _staging(self) -> Iterator[str]:
        """A staging database beside the store, attached as the name yielded, and removed
        afterwards (also one that an ingest killed on its way left behind: the store's write
        lock, held here, says no other ingest is running)."""
        prefix = f".{self.path.name}.ingest-"
        for stale in self.path.parent.iterdir():
            if stale.name.startswith(prefix) and stale.is_file():
                stale.unlink(missing_ok=True)
        target = self.path.with_name(f"{prefix}{secrets.token_hex(6)}.duckdb")
        name = "medanon_staging"
        _run(self._con, f"ATTACH {_literal(str(target))} AS {name}")
        try:
            yield name
        finally:
            try:
                _run(self._con, f"DETACH {name}")
            except duckdb.Error:
                # A COMMIT that failed may leave its transaction open: end it, then detach. An
                # error here must not hide the one on its way (closing the store detaches too).
                for statement in ("ROLLBACK", f"DETACH {name}"):
                    try:
                        _run(self._con, statement)
                    except duckdb.Error:
                        pass
            for leftover in (target, Path(str(target) + ".wal")):
                leftover.unlink(missing_ok=True)

    def _read_only(self) -> bool:
        return _the_row(self._con, "SELECT current_setting('access_mode')")[0] == "read_only"

    def _records_table_types(self) -> dict[str, str]:
        """The column types of the store's records table (none without one)."""
        return dict(self._fact("records_table_types", lambda: tuple(self._con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'records' AND table_catalog = current_database() "
            "ORDER BY ordinal_position").fetchall())))

    def _create_records(self, types: dict[str, str]) -> None:
        _run(self._con, "CREATE TABLE records(" + ", ".join(
            f"{_quote(c)} {t}" for c, t in types.items()) + ")")

    def _insert_records(self, records: pd.DataFrame, table: str,
                        columns: list[str] | None = None) -> None:
        columns = columns or self._record_columns()
        cols = ", ".join(_quote(c) for c in columns)
        # In slices: the lists DuckDB reads multi-valued cells from exist for one slice at a time.
        for begin in range(0, len(records), _INSERT_ROWS):
            incoming = records.iloc[begin:begin + _INSERT_ROWS].reindex(columns=columns)
            selected = {c: _quote(c) for c in columns}
            for i, name in enumerate(self.schema.multi_valued):
                texts, sizes = _joined_items(incoming[name])
                if texts is None:
                    incoming[name] = list(map(list, incoming[name]))
                    continue
                # A cell goes to DuckDB as its items joined by the unit separator and is split
                # there: DuckDB converting a Python list per cell was most of an ingest's
                # CPU (issue 30). The item count tells [] from [''].
                size = f"_medanon_len_{i}"
                incoming[name], incoming[size] = texts, sizes
                selected[name] = (f"CASE WHEN {size} = 0 THEN []::VARCHAR[] ELSE "
                                  f"string_split({_quote(name)}, chr(31)) END")
            for name in self.schema.date_columns:  # a date or timestamp as its FAERS string
                incoming[name] = date_cells(incoming[name], name)
            with _registered(self._con, "incoming_records", incoming):
                _run(self._con, f"INSERT INTO {table} ({cols}) SELECT "
                                f"{', '.join(selected.values())} FROM incoming_records")
            del incoming

    def _period_row(self, fact: "_PeriodFacts", replacing: bool, summary: IngestSummary) -> None:
        values = [parse_period(fact.period).ordinal, fact.source, fact.era,
                  datetime.now(timezone.utc).isoformat(timespec="seconds"), fact.n_reports,
                  fact.n_cases, fact.report]
        if replacing:
            # UPDATE, not DELETE + INSERT: older DuckDB rejects re-inserting a deleted
            # primary key within one transaction.
            _run(self._con, "UPDATE periods SET ordinal = ?, source = ?, era = ?, ingested_at = ?, "
                 "n_reports = ?, n_cases = ?, report = ? WHERE period = ?", values + [fact.period])
            summary.replaced.append(fact.period)
        else:
            _run(self._con, "INSERT INTO periods VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 [fact.period] + values)
            summary.added.append(fact.period)

    def _apply_deletions(self, deleted: list[str], published: set[str],
                         summary: IngestSummary) -> None:
        """FDA's DELETE list: out of every unpublished period; the published hits reported."""
        if not deleted or not self._has_records_table():
            return
        case, per = _quote(self.schema.case_id), _quote(self.schema.period)
        with _registered(self._con, "deleted_cases", pd.DataFrame({"case_id": deleted})):
            hits = self._con.execute(f"""
                SELECT {per}, count(DISTINCT {case}) FROM records
                WHERE {case} IN (SELECT case_id FROM deleted_cases) GROUP BY {per}""").fetchall()
            for period, count in hits:
                if period in published:
                    summary.deleted_but_published[period] = int(count)
                else:
                    summary.deleted_from_unpublished[period] = int(count)
            for period, case_id in self._con.execute(f"""
                    SELECT DISTINCT {per}, {case} FROM records
                    WHERE {case} IN (SELECT case_id FROM deleted_cases)
                    AND {per} IN (SELECT period FROM releases)
                    ORDER BY {per}, {case}""").fetchall():
                summary.deleted_but_published_cases.setdefault(period, []).append(str(case_id))
            _run(self._con, f"""
                DELETE FROM records WHERE {case} IN (SELECT case_id FROM deleted_cases)
                AND {per} NOT IN (SELECT period FROM releases)""")
            _run(self._con, f"""
                UPDATE periods SET
                  n_reports = (SELECT count(*) FROM records r WHERE r.{per} = periods.period),
                  n_cases = (SELECT count(DISTINCT {case}) FROM records r
                             WHERE r.{per} = periods.period)
                WHERE period NOT IN (SELECT period FROM releases)""")

    def _check_ingestible(self, period: str, published: set[str], latest) -> None:
        if period in published:
            raise StoreError(f"Period {period} is already published in {str(self.path)!r}; a "
                             "published period cannot be re-ingested.")
        if latest is not None and parse_period(period) < latest:
            raise StoreError(f"Period {period} is earlier than the latest published period "
                             f"{latest}: releases must be published in time order.")

    def series_policy(self) -> dict | None:
        """The pinned series policy record (``policy``, ``pinned_at``, ``history``), or None
        (:mod:`medanon.pipeline.policy`)."""
        found = _one(self._con, "SELECT value FROM meta WHERE key = ?", [POLICY_META_KEY])
        return None if found is None else json.loads(found[0])

    def case_key(self) -> bytes | None:
        """Operator only: the secret key of the store's CaseID pseudonyms (None before the first
        pseudonymous release; :mod:`medanon.pipeline.case_ids`). Never exported."""
        found = _one(self._con, "SELECT value FROM meta WHERE key = ?", [CASE_KEY_META_KEY])
        return None if found is None else bytes.fromhex(found[0])

    @_translated
    def keep_case_key(self, key: bytes) -> None:
        """Keep the CaseID key made at the first release (in the open batch, or in its own
        transaction); a store keeps one key for its whole series.

        Raises:
            StoreError: the store holds a key already.
        """
        with self._write():
            if _one(self._con, "SELECT 1 FROM meta WHERE key = ?", [CASE_KEY_META_KEY]):
                raise StoreError(f"{str(self.path)!r} already holds a CaseID key; a series keeps "
                                 f"one key, or its releases would not link.")
            _run(self._con, "INSERT INTO meta VALUES (?, ?)", [CASE_KEY_META_KEY, key.hex()])

    @_translated
    def pin_policy(self, record: Mapping) -> None:
        """Pin a series policy record (in the open batch, or in its own transaction)."""
        text = json.dumps(record, default=_json_default, sort_keys=True)
        with self._write():
            _run(self._con, "DELETE FROM meta WHERE key = ?", [POLICY_META_KEY])
            _run(self._con, "INSERT INTO meta VALUES (?, ?)", [POLICY_META_KEY, text])

    def _check_series_open(self, label: str, manifest: Mapping) -> None:
        """Refuse ``label`` after the series' final release, and a final ``label`` that a
        published later release would follow: the final release's MD view holds only while
        nothing follows it (HA; :func:`medanon.pipeline.checks.check_final` refuses the same
        before any work, this keeps the rule for every caller of :meth:`publish`)."""
        ordinal = parse_period(label).ordinal
        rows = self._con.execute("SELECT period, ordinal, manifest FROM releases "
                                 "ORDER BY ordinal").fetchall()
        finals = [p for p, _, m in rows if (json.loads(m).get("method") or {}).get("final") is True]
        if finals:
            raise SeriesEndedError.after(finals[-1], refused=label)
        later = [p for p, o, _ in rows if o > ordinal]
        if (manifest.get("method") or {}).get("final") is True and later:
            raise StoreError(f"Release {label} is marked final ('final'), but later release(s) "
                             f"{', '.join(later)} are published in {str(self.path)!r}: a final "
                             f"release must be the series' last.")

    @_translated
    def publish(self, period, rows: pd.DataFrame | None = None, manifest: dict | None = None,
                ledger: pd.DataFrame | None = None, operator: dict | None = None) -> None:
        """Publish one release in one transaction.

        ``store.publish(release)`` takes a :class:`medanon.Release` (its rows, manifest, ledger
        and operator-only facts) as one argument.

        Args:
            period: the period label, or a release object.
            rows: the release rows in the published format (strings), columns
                ``period, case_id, group`` then the schema's published columns.
            manifest: the release manifest (JSON-serializable); it must not hold an
                operator-only field (:data:`OPERATOR_ONLY_KEYS`, :data:`OPERATOR_ONLY_DETAILS`).
            ledger: optional ``case_id, mechanism, epsilon, delta, epsilon_exact, dp`` rows of
                privacy spent (``epsilon_exact``: the exact value as text, e.g. ``1/3``; ``dp``:
                whether the ε carries an ε-DP claim, True when absent).
            operator: optional operator-only facts kept in ``release_private``:
                ``input_sha256`` (text) and ``private_details`` (JSON-serializable mapping).

        Raises:
            ValidationError: the manifest holds an operator-only field.
            StoreError: the period is not ingested or already published; rows do not match the
                release format; a final release would not be the series' last.
            SeriesEndedError: the series' final release is published (a :class:`StoreError`):
                nothing is published after it. Nothing is written in any of these cases.
        """
        if rows is None and hasattr(period, "rows") and hasattr(period, "manifest"):
            release = period
            period, rows, manifest = release.period, release.rows, release.manifest
            ledger, operator = getattr(release, "ledger", None), getattr(release, "operator", None)
        if rows is None or manifest is None:
            raise ValidationError("The 'rows' and 'manifest' parameters of ReleaseStore.publish "
                                  "are required unless a release object is given.")
        label = parse_period(period).label
        leaked = _operator_fields(manifest)
        if leaked:
            raise ValidationError(
                f"The 'manifest' parameter of ReleaseStore.publish must not hold operator-only "
                f"field(s) {', '.join(leaked)}: they are functions of the private records; pass "
                f"them in 'operator' (kept in the store, never published).")
        expected = _release_columns(self.schema)
        if list(rows.columns) != expected:
            raise StoreError(f"Release rows for {label} have columns {list(rows.columns)}; the "
                             f"release format needs {expected}.")
        with self._write():
            if _one(self._con, "SELECT 1 FROM periods WHERE period = ?", [label]) is None:
                raise StoreError(f"Period {label} is not ingested in {str(self.path)!r}.")
            if _one(self._con, "SELECT 1 FROM releases WHERE period = ?", [label]):
                raise StoreError(f"Period {label} is already published in {str(self.path)!r}; a "
                                 "published release is immutable.")
            self._check_series_open(label, manifest)
            # the method's and the gate's temporaries are freed by now, but glibc keeps most of
            # their pages mapped and DuckDB's buffers for the write came on top of them: the
            # peak of a 450k-case release (issue 43)
            give_back_freed_memory()
            # astype gives a frame of its own (a copy, or copy-on-write), so the column put in
            # front leaves ``rows`` as it was; a second copy cost 0.07 s and 58 MB at 450k rows
            incoming = rows.astype(str)
            incoming.insert(0, "row_no", np.arange(len(incoming), dtype=np.int64))
            with _registered(self._con, "incoming_release", incoming):
                _run(self._con, "INSERT INTO release_rows SELECT * FROM incoming_release")
            counts = manifest.get("counts", {})
            _run(self._con, "INSERT INTO releases VALUES (?, ?, ?, ?, ?, ?, ?)", [
                label, parse_period(label).ordinal, manifest.get("method", {}).get("name", "?"),
                manifest.get("published_at") or datetime.now(timezone.utc).isoformat(timespec="seconds"),
                int(counts.get("cases", len(rows))), int(counts.get("groups", 0)),
                json.dumps(manifest, default=_json_default, sort_keys=True)])
            operator = operator or {}
            _run(self._con, "INSERT INTO release_private VALUES (?, ?, ?)", [
                label, operator.get("input_sha256"),
                json.dumps(operator.get("private_details") or {}, default=_json_default,
                           sort_keys=True)])
            if ledger is not None and len(ledger):
                entries = ledger.reindex(columns=["case_id", "mechanism", "epsilon", "delta",
                                                  "epsilon_exact", "dp"]).copy()
                entries.insert(0, "period", label)
                entries["delta"] = entries["delta"].fillna(0.0)
                entries["dp"] = entries["dp"].astype(object).where(entries["dp"].notna(), True) \
                    .astype(bool)
                with _registered(self._con, "incoming_ledger", entries):
                    _run(self._con, "INSERT INTO ledger SELECT * FROM incoming_ledger")


_CREATE_PRIVATE = """CREATE TABLE release_private(
    period VARCHAR PRIMARY KEY, input_sha256 VARCHAR, details VARCHAR NOT NULL DEFAULT '{}')"""


@dataclass(frozen=True)
class _PeriodFacts:
    """What the store keeps of an ingested period beside its records (its ``periods`` row)."""

    period: str
    source: str
    era: str
    n_reports: int
    n_cases: int
    report: str  # JSON

    @classmethod
    def of(cls, item: FaersQuarter, schema: Schema) -> "_PeriodFacts":
        records = item.records
        return cls(item.label, item.source, item.era, len(records),
                   int(records[schema.case_id].nunique()),
                   json.dumps(item.report_dict(), default=_json_default))


def _literal(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


#: below this, the table blocks a read left cached are not worth dropping
#: (:meth:`ReleaseStore.drop_cached_blocks`)
_WORTH_DROPPING = 32 * 2**20
#: records written per INSERT: bounds the Python lists built for the multi-valued columns
_INSERT_ROWS = 100_000
#: joins the items of a list cell when the records are read (``ReleaseStore.records``): the
#: unit separator, which no term holds (checked before each read)
_LIST_SEPARATOR = "\x1f"
#: how many distinct list texts :func:`_split_lists` splits at once
_SPLIT_CHUNK = 4096
#: the alias under which a query of the records returns each row's rowid
_ROW = "medanon_row_id"
#: the alias under which a query of the records returns an item's code (``_coded_lists``)
_CODE = "medanon_code"
#: the rows DuckDB moves in one batch (its vector size): a list of fewer items is never
#: spread over batches that could come back out of order (``_coded_lists``)
_VECTOR_ITEMS = 2048
#: the alias under which a query of the published rows returns each row's ``row_no``
_ROW_NO = "medanon_row_no"
#: the alias under which a query of the published rows returns its release's position
#: (``_fetched_linked_rows``)
_POSITION = "medanon_position"


def _runs_once(cells: np.ndarray) -> np.ndarray:
    """The first cell of each run of equal cells (an object array sorted as SQL's ORDER BY
    sorts, NULLs as None together at one end): ``SELECT DISTINCT ... ORDER BY 1``'s cells."""
    if len(cells) < 2:
        return cells
    first = np.empty(len(cells), dtype=bool)
    first[0] = True
    np.not_equal(cells[1:], cells[:-1], out=first[1:])
    return cells if first.all() else cells[first]


def _positions(rowids: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Where each of ``ordered`` (row ids) is in ``rowids`` (the same ids, as a query gave
    them): the take that puts a query's rows in that order.

    Raises:
        StoreError: the two do not hold the same rows (a store changed between two queries).
    """
    rowids = np.asarray(rowids, dtype=np.int64)
    if len(rowids) < 2 or bool((rowids[1:] > rowids[:-1]).all()):
        at = np.searchsorted(rowids, ordered)  # a scan gives the rows in storage order
    else:
        by_id = np.argsort(rowids, kind="stable")
        at = by_id[np.searchsorted(rowids[by_id], ordered)]
    if len(rowids) != len(ordered) or (len(at) and (at.max() >= len(rowids)
                                                     or (rowids[at] != ordered).any())):
        raise StoreError("The store's records changed while they were read; read them again.")
    return at


def _places(ordered: np.ndarray, rowids: np.ndarray) -> np.ndarray:
    """Where each of ``rowids`` (distinct, increasing) is in ``ordered`` (row ids).

    The row ids of a period span about as many ids as it has rows (periods are ingested one
    after another): each one's place is then read from a table indexed by row id, instead of
    a binary search per id in a shuffled order (a cache miss per step).

    Raises:
        StoreError: one of ``rowids`` is not in ``ordered`` (a store changed between two
            queries).
    """
    changed = StoreError("The store's records changed while they were read; read them again.")
    if not len(rowids):
        return np.zeros(0, dtype=np.int64)
    if not len(ordered):
        raise changed
    low, high = int(ordered.min()), int(ordered.max())
    if high - low == len(ordered) - 1 and bool((ordered[1:] > ordered[:-1]).all()):
        # every id from low to high once, in order (a period ingested in one piece, rows
        # in storage order): an id's place is its distance from low, with no table to fill
        # and read for each list column (issue 43)
        if int(rowids[0]) < low or int(rowids[-1]) > high:
            raise changed
        return rowids - low
    if high - low < 4 * len(ordered) + _VECTOR_ITEMS:
        if int(rowids[0]) < low or int(rowids[-1]) > high:
            raise changed
        table = np.full(high - low + 1, -1, dtype=np.int64)
        table[ordered - low] = np.arange(len(ordered))
        place = table[rowids - low]
        if bool((place < 0).any()):
            raise changed
        return place
    by_id = np.argsort(ordered, kind="stable")
    at = np.minimum(np.searchsorted(ordered[by_id], rowids), len(ordered) - 1)
    if bool((ordered[by_id[at]] != rowids).any()):
        raise changed
    return by_id[at]


def _split_lists(texts: list[str], counts: np.ndarray,
                 terms: dict[str, str]) -> np.ndarray | None:
    """The tuple of each text's ``counts`` items joined with :data:`_LIST_SEPARATOR`, then an
    empty tuple (for code -1); each item the one str ``terms`` holds for its text. None when
    an item holds the separator: a text then splits into more than its count of items (no
    text splits into fewer), so the texts split into more items than their counts sum to.

    The texts are joined and split once, and the tuples sliced from the items: splitting
    text by text cost a quarter of the records' read (issue 43).
    """
    cells: list[tuple] = []
    # in chunks: the items of all texts at once, a str each before they are shared, were
    # 60 MiB for a 450k-report quarter's reactions, and their memory stayed scattered
    for at in range(0, len(texts), _SPLIT_CHUNK):
        chunk = counts[at:at + _SPLIT_CHUNK]
        items = _LIST_SEPARATOR.join(texts[at:at + _SPLIT_CHUNK]).split(_LIST_SEPARATOR)
        if len(items) != int(chunk.sum()):
            return None
        items = list(map(terms.setdefault, items, items))
        ends = np.cumsum(chunk).tolist()
        cells += [tuple(items[a:b]) for a, b in zip([0, *ends[:-1]], ends)]
    cells.append(())
    return np.fromiter(cells, dtype=object, count=len(cells))


def _share_texts(frame: pd.DataFrame, columns: Iterable[str]) -> None:
    """Make the cells of each text column in ``columns`` that hold equal text hold one str
    object, in place (values and dtypes unchanged).

    DuckDB makes a str per cell: a quarter's period, age, sex and date columns held 450k
    copies of a few hundred texts each, 27 MiB a column (issue 43); shared, they cost a
    pointer a cell, and later passes hash each text once.
    """
    for name in dict.fromkeys(columns):
        if name not in frame.columns:
            continue
        if isinstance(frame[name].dtype, pd.StringDtype):
            codes, distinct = frame[name].factorize()  # a missing cell: -1, taken as missing
            frame[name] = pd.Series(pd.Index(distinct).array.take(codes, allow_fill=True),
                                    index=frame.index, dtype=frame[name].dtype)
        elif frame[name].dtype == object and frame[name].notna().all():
            # (as an object Series: an array of str would be read as pandas' text dtype)
            frame[name] = pd.Series(_one_object_per_text(frame[name].to_numpy(dtype=object)),
                                    index=frame.index, dtype=object)


def _one_object_per_text(values: np.ndarray) -> np.ndarray:
    """``values`` (an object array with no missing cell) with the cells that hold equal text
    holding one object (:func:`_share_texts`)."""
    codes, distinct = pd.factorize(values)
    return np.asarray(distinct, dtype=object)[codes]


#: the most distinct texts a records column is read as a DuckDB ENUM (:func:`_few_texts`)
_ENUM_TEXTS = 4096


def _few_texts(con: duckdb.DuckDBPyConnection, columns: list[str], where: str,
               label: str) -> dict[str, list[str]]:
    """The distinct texts (not missing) of each text column of ``columns`` in the rows
    ``where`` picks (one scan), for those holding at most :data:`_ENUM_TEXTS` and at least one.

    Such a column (a period, an age or sex, a date) is read as an ENUM of them
    (:func:`_enum_cast`): DuckDB then hands over one small integer per cell and the few texts,
    instead of a str per cell that :func:`_share_texts` then hashes to share them (a 450k
    quarter: 0.38 -> 0.12 s CPU for five such columns, issue 43).
    """
    if not columns or not isinstance(_text_dtype(con), pd.StringDtype):
        return {}
    lists = ", ".join(f"list(DISTINCT {_quote(c)}) FILTER (WHERE {_quote(c)} IS NOT NULL)"
                      for c in columns)
    row = _the_row(con, f"SELECT {lists} {where}", [label])
    return {c: list(texts) for c, texts in zip(columns, row)
            if texts and len(texts) <= _ENUM_TEXTS}


def _enum_cast(column: str, texts: list[str]) -> str:
    """The select expression reading a text column as an ENUM of ``texts`` (its distinct
    texts), under its own name."""
    return (f"CAST({_quote(column)} AS ENUM({', '.join(_literal(t) for t in texts)})) "
            f"AS {_quote(column)}")


def _text_dtype(con: duckdb.DuckDBPyConnection) -> object:
    """The dtype DuckDB gives a text column in a pandas frame (pandas' text dtype, or object
    under an older pandas), asked once per connection: a query and a frame of 3 ms, twice per
    records read (``evaluate`` reads 24 periods' originals: 0.15 s, issue 43)."""
    dtype = _TEXT_DTYPES.get(con)
    if dtype is None:
        dtype = _TEXT_DTYPES[con] = con.execute("SELECT 'a'::VARCHAR AS t").df()["t"].dtype
    return dtype


#: :func:`_text_dtype` of each open connection (let go with it)
_TEXT_DTYPES: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, object] = (
    weakref.WeakKeyDictionary())


def _texts_of_enums(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame,
                    columns: list[str]) -> None:
    """Make each of ``columns`` (read as ENUMs, so categoricals; :func:`_few_texts`) the
    column a text read gives, in place: pandas' text dtype as DuckDB gives it, a missing cell
    its missing value, and the cells holding equal text one str (as :func:`_share_texts`
    leaves them)."""
    if not columns:
        return
    dtype = _text_dtype(con)
    assert isinstance(dtype, pd.StringDtype)   # else _few_texts reads no column as an ENUM
    for name in columns:
        values = frame[name].array
        texts = pd.array(np.asarray(values.categories, dtype=object), dtype=dtype)
        frame[name] = pd.Series(texts.take(values.codes, allow_fill=True), index=frame.index,
                                dtype=dtype)


def _object_frame(columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """A frame of these object arrays (as many rows as each), one block per column: a reader
    that keeps one column of a period's rows (the screening keeps a release's terms to the end
    of ``evaluate``) keeps no other column alive with it: one 2-D block of every column did
    (``evaluate`` of 24 x 20k peaked at 1,640 MiB instead of 740)."""
    first = next(iter(columns.values()), np.zeros(0, dtype=object))
    # not copied, pandas keeps the arrays as given, one block each (as a column set one at a
    # time, at a ninth of its cost: 0.5 s of a 24 x 20k evaluate's linked reads, issue 43)
    return pd.DataFrame(dict(columns), index=pd.RangeIndex(len(first)), dtype=object,
                        copy=False)


def _texts_column(values: Iterable[object]) -> pd.Series:
    """The ``str`` of ``values`` as an object column (for an SQL ``IN`` set; repeats kept).
    Values that are all text already are not converted again."""
    raw = object_array(values)
    if len(raw) and pd.api.types.infer_dtype(raw, skipna=False) != "string":
        raw = np.asarray([str(c) for c in raw.tolist()], dtype=object)
    return pd.Series(raw, dtype=object)


def _not_quarters(item: object) -> ValidationError:
    return ValidationError(f"The 'quarters' parameter of ReleaseStore.ingest must be what the "
                           f"loader returns (read_faers' FaersIngest, a medanon.Dataset, or "
                           f"FaersQuarter objects); it holds a {type(item).__name__}.")


def _quarter(item: object) -> FaersQuarter:
    """``item``, refused unless it is a FaersQuarter (one item of ingest's ``quarters``)."""
    if not isinstance(item, FaersQuarter):
        raise _not_quarters(item)
    return item


def _operator_fields(manifest: dict) -> list[str]:
    """The operator-only fields a manifest holds (as dotted paths)."""
    from ..published.manifest_roles import OPERATOR, leaf_paths, leaf_role

    found = [k for k in OPERATOR_ONLY_KEYS if k in manifest]
    details = manifest.get("details")
    if isinstance(details, dict):
        found += [f"details.{k}" for k in OPERATOR_ONLY_DETAILS if k in details]
    # every leaf whose role is operator-only (issue 41, published.manifest_roles)
    family = str(manifest.get("format") or "medanon-release/1").split("/")[0]
    found += [".".join(map(str, path)) for path, empty in leaf_paths(manifest)
              if leaf_role(path, empty=empty, family=family) == OPERATOR]
    return list(dict.fromkeys(found))


def _ledger_columns(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'ledger'").fetchall()}


def _has_private(con: duckdb.DuckDBPyConnection) -> bool:
    return _the_row(con, "SELECT count(*) FROM information_schema.tables "
                         "WHERE table_name = 'release_private'")[0] > 0


def _needs_upgrade(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether :func:`_upgrade` has work to do (read-only: without writing)."""
    columns = _ledger_columns(con)
    return not ("epsilon_exact" in columns and "dp" in columns and _has_private(con))


def _upgrade(con: duckdb.DuckDBPyConnection) -> None:
    """Bring a store written by an older medanon to the current tables (one transaction).

    - ``ledger.epsilon_exact`` (stores made before the DP methods);
    - ``ledger.dp``: rows of releases whose manifest declares PPMS-DP's paper variant are
      marked as not DP (their ε was nominal);
    - ``release_private``: the input hash and the operator-only details that older versions
      wrote into published manifests move there, and the manifests lose them.
    """
    if not _needs_upgrade(con):
        return
    columns = _ledger_columns(con)
    has_private = _has_private(con)
    with _transaction(con):
        if "epsilon_exact" not in columns:
            _run(con, "ALTER TABLE ledger ADD COLUMN epsilon_exact VARCHAR")
        manifests = {p: json.loads(m) for p, m in
                     con.execute("SELECT period, manifest FROM releases").fetchall()}
        if "dp" not in columns:
            _run(con, "ALTER TABLE ledger ADD COLUMN dp BOOLEAN DEFAULT TRUE")
            paper = [p for p, m in manifests.items()
                     if (m.get("privacy_spent") or {}).get("variant") == "paper"]
            for period in paper:
                _run(con, "UPDATE ledger SET dp = FALSE WHERE period = ?", [period])
        if not has_private:
            _run(con, _CREATE_PRIVATE)
            for period, manifest in manifests.items():
                digest = manifest.pop("input_sha256", None)
                details = manifest.get("details") if isinstance(manifest.get("details"), dict) else {}
                private = {k: details.pop(k) for k in OPERATOR_ONLY_DETAILS if k in details}
                _run(con, "INSERT INTO release_private VALUES (?, ?, ?)",
                     [period, digest if isinstance(digest, str) else None,
                      json.dumps(private, default=_json_default, sort_keys=True)])
                if digest is not None or private:
                    _run(con, "UPDATE releases SET manifest = ? WHERE period = ?",
                         [json.dumps(manifest, default=_json_default, sort_keys=True), period])


def _joined_items(cells: pd.Series) -> tuple[list[str] | None, np.ndarray | None]:
    """Each list cell's items joined by :data:`_LIST_SEPARATOR`, and its item count; (None,
    None) when a cell is not a sequence of str or an item holds the separator (the cells are
    then given to DuckDB as lists)."""
    values = cells.tolist()
    try:
        texts = [_LIST_SEPARATOR.join(v) for v in values]
    except TypeError:  # a missing cell, or an item that is not str
        return None, None
    sizes = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    separators = int(np.maximum(sizes - 1, 0).sum())
    if "".join(texts).count(_LIST_SEPARATOR) != separators:  # an item holds the separator
        return None, None
    return texts, sizes


def _record_types(schema: Schema, sample: pd.DataFrame) -> dict[str, str]:
    """DuckDB column types of the private records table (free columns typed from ``sample``)."""
    types: dict[str, str] = {schema.case_id: "VARCHAR", schema.period: "VARCHAR"}
    for ident in schema.identifiers:
        types[ident] = "VARCHAR"
    if "version" in sample.columns:
        types["version"] = "BIGINT"
    for qid in schema.qids:
        types[qid.name] = "DOUBLE" if qid.kind == "numeric" else "VARCHAR"
    for name in schema.multi_valued:
        types[name] = "VARCHAR[]"
    for name in schema.insensitive + schema.private:
        numeric = pd.api.types.is_numeric_dtype(sample[name]) and not pd.api.types.is_bool_dtype(sample[name])
        types[name] = "DOUBLE" if numeric else "VARCHAR"
    for name in schema.date_columns:
        types[name] = "VARCHAR"  # FAERS date strings: partial dates (YYYYMM, YYYY) are valid
    return types


def _release_columns(schema: Schema) -> list[str]:
    return ["period", "case_id", "group", *schema.published]


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> None:
    """Execute a statement and drain its result (DuckDB 2 refuses new work while one is open)."""
    con.execute(sql, params or []).fetchall()


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple | None:
    """First row of a query, or None; drains the result."""
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def _the_row(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple:
    """The first row of a query that always has one (an aggregate such as ``count(*)``, a
    setting, or a row the caller has checked is there); drains the result."""
    return con.execute(sql, params or []).fetchall()[0]


def refuse_empty(sizes: dict[str, int], *, source: str, allow_empty: bool) -> None:
    """Refuse periods with no records (``sizes``: period -> records) unless ``allow_empty``.

    A header-only or fully filtered extract ingested as an empty period would be published as an
    empty release and lock the real quarter out (periods are published in time order).

    Raises:
        StoreError: an empty period without ``allow_empty``.
    """
    empty = [p for p, n in sizes.items() if n == 0]
    if empty and not allow_empty:
        raise StoreError(f"Period(s) {', '.join(empty)} of {source!r} hold no reports to ingest "
                         f"(header-only files, or every report filtered out). Nothing was "
                         f"ingested; check the source, or give the 'allow_empty' parameter to "
                         f"ingest an empty period on purpose.")


@contextmanager
def _registered(con: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame) -> Iterator[None]:
    """``frame`` visible to SQL as ``name`` inside the block."""
    con.register(name, frame)
    with _undone_after(lambda: con.unregister(name)):
        yield


@contextmanager
def _undone_after(undo: Callable[[], object]) -> Iterator[None]:
    """Runs ``undo`` after the block, however it ends. A failed statement aborts the
    transaction (or the failure closed the connection), and DuckDB then refuses the undo too:
    that second error must not hide the first, so it is dropped while an exception is on its
    way."""
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        try:
            undo()
        except duckdb.Error:
            if not failed:
                raise


@contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK on any exception (including KeyboardInterrupt)."""
    _run(con, "BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        _run(con, "ROLLBACK")
        raise
    _run(con, "COMMIT")


def _json_default(value: object) -> object:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
