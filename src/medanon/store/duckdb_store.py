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
store exactly as it was (a crash, a refusal and a failed check all roll back). A published period
is immutable: publishing it again, or re-ingesting it, is refused.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from .. import __version__
from ..periods import parse_period
from ..data.loaders.faers import FaersIngest, FaersQuarter
from ..data.schema import Schema
from ..errors import StoreError, ValidationError
from . import DEFAULT_STORE  # noqa: F401  (re-exported; the package defines it, and loads this module lazily)

FORMAT_VERSION = "1"
#: top-level manifest keys and ``details`` keys that are operator-only (never published); a
#: manifest given to :meth:`ReleaseStore.publish` must not hold them, and stores written before
#: ``release_private`` existed have them moved there when opened.
OPERATOR_ONLY_KEYS = ("input_sha256",)
OPERATOR_ONLY_DETAILS = ("clipped_to_domain", "smallest_laplace_scale")


@dataclass
class IngestSummary:
    """What an ingest changed in the store."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    deleted_from_unpublished: dict[str, int] = field(default_factory=dict)
    deleted_but_published: dict[str, int] = field(default_factory=dict)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class ReleaseStore:
    """A release store file. Use :meth:`open` for an existing store, :meth:`create_or_open` to ingest.

    The store is a context manager; it closes its connection on exit.
    """

    def __init__(self, path: Path, connection: duckdb.DuckDBPyConnection, schema: Schema):
        self.path = path
        self._con = connection
        self.schema = schema

    # -- opening ---------------------------------------------------------------------------
    @staticmethod
    def _connect(path: Path) -> duckdb.DuckDBPyConnection:
        try:
            return duckdb.connect(str(path))
        except duckdb.Error as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"{str(path)!r} is not a medanon store (DuckDB could not open it: "
                             f"{first_line}).") from None

    @classmethod
    def open(cls, path: str | Path) -> "ReleaseStore":
        """Open an existing store; never creates a file.

        Raises:
            StoreError: no file there, not a DuckDB database, or not a medanon store.
        """
        path = Path(path)
        if not path.is_file():
            raise StoreError(f"No store at {str(path)!r}: run 'medanon ingest SOURCE --store "
                             f"{path}' first.")
        con = cls._connect(path)
        try:
            rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
        except duckdb.Error:
            con.close()
            raise StoreError(f"{str(path)!r} is a DuckDB database but not a medanon store "
                             "(it has no 'meta' table).") from None
        if rows.get("format_version") != FORMAT_VERSION:
            con.close()
            raise StoreError(f"Store {str(path)!r} has format version {rows.get('format_version')!r}; "
                             f"this medanon reads version {FORMAT_VERSION}.")
        schema = Schema.from_mapping(tomllib.loads(rows["schema"])["schema"], source=str(path))
        try:
            _upgrade(con)
        except BaseException:
            con.close()
            raise
        return cls(path, con, schema)

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
        con = cls._connect(path)
        try:
            with _transaction(con):
                cls._create_tables(con, schema)
        except BaseException:
            con.close()
            path.unlink(missing_ok=True)
            Path(str(path) + ".wal").unlink(missing_ok=True)
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
        self._con.close()

    def __enter__(self) -> "ReleaseStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ---------------------------------------------------------------------------
    def periods(self) -> pd.DataFrame:
        """Every ingested period, oldest first, with counts and publication state."""
        frame = self._con.execute("""
            SELECT p.period, p.n_reports, p.n_cases, p.source, p.era, p.ingested_at,
                   r.period IS NOT NULL AS published, r.method, r.published_at,
                   r.n_cases AS released_cases, r.n_groups AS released_groups
            FROM periods p LEFT JOIN releases r USING (period) ORDER BY p.ordinal""").df()
        return frame

    def ingested_periods(self) -> list[str]:
        return [r[0] for r in self._con.execute("SELECT period FROM periods ORDER BY ordinal").fetchall()]

    def published_periods(self) -> list[str]:
        return [r[0] for r in self._con.execute("SELECT period FROM releases ORDER BY ordinal").fetchall()]

    def ingest_report(self, period: str) -> dict:
        row = _one(self._con, "SELECT report FROM periods WHERE period = ?", [period])
        if row is None:
            raise StoreError(f"Period {period} is not ingested in {str(self.path)!r}.")
        return json.loads(row[0])

    def records(self, period: str) -> pd.DataFrame:
        """The private report-level records of one period (multi-valued cells as tuples)."""
        label = parse_period(period).label
        if label not in self.ingested_periods():
            raise StoreError(f"Period {label} is not ingested in {str(self.path)!r}; ingested: "
                             f"{', '.join(self.ingested_periods()) or 'none'}.")
        if not self._has_records_table():
            return pd.DataFrame(columns=self.schema.all_columns)
        s = self.schema
        present = set(self._record_columns())
        order = ", ".join(_quote(c) for c in (s.case_id, *s.identifiers[:1], "version") if c in present)
        frame = self._con.execute(
            f"SELECT * FROM records WHERE {_quote(s.period)} = ? ORDER BY {order}", [label]).df()
        for name in self.schema.multi_valued:
            frame[name] = [tuple(v) if v is not None else () for v in frame[name]]
        return frame

    def release_rows(self, period: str) -> pd.DataFrame:
        """The published rows of a period, as strings in the release format."""
        self._require_published(period)
        frame = self._con.execute(
            "SELECT * EXCLUDE (row_no) FROM release_rows WHERE period = ? ORDER BY row_no",
            [period]).df()
        return frame.astype(object).where(frame.notna(), "")

    def manifest(self, period: str) -> dict:
        self._require_published(period)
        row = _one(self._con, "SELECT manifest FROM releases WHERE period = ?", [period])
        return json.loads(row[0])

    def ledger(self) -> pd.DataFrame:
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

    def _record_columns(self) -> list[str]:
        return [r[0] for r in self._con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'records' "
            "ORDER BY ordinal_position").fetchall()]

    def _has_records_table(self) -> bool:
        return _one(self._con, "SELECT count(*) FROM information_schema.tables "
                                 "WHERE table_name = 'records'")[0] > 0

    def _require_published(self, period: str) -> None:
        if period not in self.published_periods():
            raise StoreError(f"Period {period} is not published in {str(self.path)!r}.")

    # -- writing ---------------------------------------------------------------------------
    def ingest(self, quarters: FaersIngest | Iterable[FaersQuarter] | object,
               deleted_case_ids: Iterable[str] | None = None) -> IngestSummary:
        """Add (or replace, when unpublished) periods in one transaction.

        Args:
            quarters: What the loader returns: a :class:`~medanon.data.loaders.faers.FaersIngest`
                (:func:`~medanon.data.loaders.faers.read_faers`), a :class:`medanon.Dataset`
                (``Dataset.from_faers``, ``Dataset.from_dataframe``), or
                :class:`~medanon.data.loaders.faers.FaersQuarter` objects. Anything with
                ``quarters`` and ``deleted_case_ids`` attributes is read as the first two are.
            deleted_case_ids: Case ids FDA withdrew; removed from every unpublished period.
                Default: those of ``quarters`` (a FaersIngest's or Dataset's), else none.

        Raises:
            ValidationError: ``quarters`` holds something other than FaersQuarter objects.
            StoreError: a period is already published, or would precede a published one.
        """
        found = getattr(quarters, "quarters", None)
        if found is not None:   # a FaersIngest or a Dataset: its quarters and its DELETE list
            if deleted_case_ids is None:
                deleted_case_ids = getattr(quarters, "deleted_case_ids", ())
            quarters = found
        items = [quarters] if isinstance(quarters, FaersQuarter) else list(quarters)
        for item in items:
            if not isinstance(item, FaersQuarter):
                raise ValidationError(f"The 'quarters' parameter of ReleaseStore.ingest must be "
                                      f"what the loader returns (read_faers' FaersIngest, a "
                                      f"medanon.Dataset, or FaersQuarter objects); it holds a "
                                      f"{type(item).__name__}.")
        published = set(self.published_periods())
        latest = max((parse_period(p) for p in published), default=None)
        summary = IngestSummary()
        for item in items:
            period = item.label
            if period in published:
                raise StoreError(f"Period {period} is already published in {str(self.path)!r}; a "
                                 "published period cannot be re-ingested.")
            if latest is not None and parse_period(period) < latest:
                raise StoreError(f"Period {period} is earlier than the latest published period "
                                 f"{latest}: releases must be published in time order.")
        existing = set(self.ingested_periods())
        deleted = sorted(set(deleted_case_ids or ()))
        s = self.schema
        case, per = _quote(s.case_id), _quote(s.period)
        with _transaction(self._con):
            for item in items:
                period, records = item.label, item.records
                self.schema.check_columns(records, what=f"period {period}")
                if not self._has_records_table():
                    types = _record_types(self.schema, records)
                    _run(self._con, "CREATE TABLE records(" + ", ".join(
                        f"{_quote(c)} {t}" for c, t in types.items()) + ")")
                columns = self._record_columns()
                if period in existing:
                    _run(self._con, f"DELETE FROM records WHERE {per} = ?", [period])
                    summary.replaced.append(period)
                else:
                    summary.added.append(period)
                incoming = records.reindex(columns=columns).copy()
                for name in self.schema.multi_valued:
                    incoming[name] = [list(v) for v in incoming[name]]
                self._con.register("incoming_records", incoming)
                try:
                    cols = ", ".join(_quote(c) for c in columns)
                    _run(self._con, f"INSERT INTO records ({cols}) SELECT {cols} FROM incoming_records")
                finally:
                    self._con.unregister("incoming_records")
                values = [parse_period(period).ordinal, item.source, item.era,
                          datetime.now(timezone.utc).isoformat(timespec="seconds"), len(records),
                          int(records[self.schema.case_id].nunique()),
                          json.dumps(item.report_dict(), default=_json_default)]
                if period in existing:
                    # UPDATE, not DELETE + INSERT: older DuckDB rejects re-inserting a deleted
                    # primary key within one transaction.
                    _run(self._con, "UPDATE periods SET ordinal = ?, source = ?, era = ?, ingested_at = ?, "
                         "n_reports = ?, n_cases = ?, report = ? WHERE period = ?", values + [period])
                else:
                    _run(self._con, "INSERT INTO periods VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [period] + values)
            if deleted and self._has_records_table():
                self._con.register("deleted_cases", pd.DataFrame({"case_id": deleted}))
                try:
                    hits = self._con.execute(f"""
                        SELECT {per}, count(DISTINCT {case}) FROM records
                        WHERE {case} IN (SELECT case_id FROM deleted_cases) GROUP BY {per}""").fetchall()
                    for period, count in hits:
                        if period in published:
                            summary.deleted_but_published[period] = int(count)
                        else:
                            summary.deleted_from_unpublished[period] = int(count)
                    _run(self._con, f"""
                        DELETE FROM records WHERE {case} IN (SELECT case_id FROM deleted_cases)
                        AND {per} NOT IN (SELECT period FROM releases)""")
                    _run(self._con, f"""
                        UPDATE periods SET
                          n_reports = (SELECT count(*) FROM records r WHERE r.{per} = periods.period),
                          n_cases = (SELECT count(DISTINCT {case}) FROM records r
                                     WHERE r.{per} = periods.period)
                        WHERE period NOT IN (SELECT period FROM releases)""")
                finally:
                    self._con.unregister("deleted_cases")
        return summary

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
                release format. Nothing is written in either case.
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
        with _transaction(self._con):
            if _one(self._con, "SELECT 1 FROM periods WHERE period = ?", [label]) is None:
                raise StoreError(f"Period {label} is not ingested in {str(self.path)!r}.")
            if _one(self._con, "SELECT 1 FROM releases WHERE period = ?", [label]):
                raise StoreError(f"Period {label} is already published in {str(self.path)!r}; a "
                                 "published release is immutable.")
            incoming = rows.astype(str).copy()
            incoming.insert(0, "row_no", np.arange(len(incoming), dtype=np.int64))
            self._con.register("incoming_release", incoming)
            try:
                _run(self._con, "INSERT INTO release_rows SELECT * FROM incoming_release")
            finally:
                self._con.unregister("incoming_release")
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
                self._con.register("incoming_ledger", entries)
                try:
                    _run(self._con, "INSERT INTO ledger SELECT * FROM incoming_ledger")
                finally:
                    self._con.unregister("incoming_ledger")


_CREATE_PRIVATE = """CREATE TABLE release_private(
    period VARCHAR PRIMARY KEY, input_sha256 VARCHAR, details VARCHAR NOT NULL DEFAULT '{}')"""


def _operator_fields(manifest: dict) -> list[str]:
    """The operator-only fields a manifest holds (as dotted paths)."""
    found = [k for k in OPERATOR_ONLY_KEYS if k in manifest]
    details = manifest.get("details")
    if isinstance(details, dict):
        found += [f"details.{k}" for k in OPERATOR_ONLY_DETAILS if k in details]
    return found


def _upgrade(con: duckdb.DuckDBPyConnection) -> None:
    """Bring a store written by an older medanon to the current tables (one transaction).

    - ``ledger.epsilon_exact`` (stores made before the DP methods);
    - ``ledger.dp``: rows of releases whose manifest declares PPMS-DP's paper variant are
      marked as not DP (their ε was nominal);
    - ``release_private``: the input hash and the operator-only details that older versions
      wrote into published manifests move there, and the manifests lose them.
    """
    columns = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                         "WHERE table_name = 'ledger'").fetchall()}
    has_private = _one(con, "SELECT count(*) FROM information_schema.tables "
                            "WHERE table_name = 'release_private'")[0] > 0
    if "epsilon_exact" in columns and "dp" in columns and has_private:
        return
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
