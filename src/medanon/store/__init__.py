"""The release store: one embedded DuckDB file per data holder.

The store's classes are loaded on first use, so that importing the package (the CLI does, for
the default ``--store``) does not load DuckDB and pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

#: File name of the store when ``--store`` is not given.
DEFAULT_STORE = "medanon.duckdb"

if TYPE_CHECKING:
    from .duckdb_store import IngestSummary, ReleaseLinks, ReleaseStore

__all__ = ["DEFAULT_STORE", "IngestSummary", "ReleaseLinks", "ReleaseStore"]

_LAZY = {"IngestSummary", "ReleaseLinks", "ReleaseStore"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import duckdb_store

        return getattr(duckdb_store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)
