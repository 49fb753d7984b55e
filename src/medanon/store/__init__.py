"""The release store: one embedded DuckDB file per data holder."""

from .duckdb_store import DEFAULT_STORE, IngestSummary, ReleaseStore

__all__ = ["DEFAULT_STORE", "IngestSummary", "ReleaseStore"]
