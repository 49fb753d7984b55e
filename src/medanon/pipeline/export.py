"""Write a published series out of the store: the release format, Parquet, or the FAERS layout.

Only published rows and manifests are written (never the store's operator-only facts), all
periods or none (:func:`~medanon.published.format.write_series_atomically`). The FAERS layout
is written beside the release format (``release.csv`` + ``manifest.json``), which keeps the cells
FAERS columns cannot carry (:mod:`medanon.published.faers_layout`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..errors import StoreError
from ..published.faers_layout import case_versions, write_faers_release
from ..published.format import write_manifest, write_release, write_series_atomically
from ..store import ReleaseStore

__all__ = ["EXPORT_FORMATS", "Exported", "StoredReleases", "export_releases", "export_store"]

#: ``csv``: the release format of ``design.md`` (``PERIOD/release.csv`` + ``manifest.json``);
#: ``parquet``: the same rows as ``release.parquet``; ``faers``: FAERS ASCII files per period
#: (DEMO, DRUG, REAC, INDI, OUTC, the side file MEDANON and their notes; UTF-8), beside
#: ``release.csv`` and ``manifest.json``.
EXPORT_FORMATS = ("csv", "parquet", "faers")


@dataclass(frozen=True)
class Exported:
    """What :func:`export_releases` wrote.

    Attributes:
        folders: One folder per period, in time order.
        replaced_dollars: Cells whose ``$`` or line break the FAERS layout could not carry
            (written as a space).
    """

    folders: list[Path]
    replaced_dollars: int = 0


class StoredReleases(Mapping[str, tuple[pd.DataFrame, dict]]):
    """The published releases of an open store (period -> published rows and manifest), each
    read from the store when asked for and not kept: :func:`export_releases` holds one release
    at a time (an 8 x 450k series read whole first: 4.1 GB, issue 43)."""

    def __init__(self, store: ReleaseStore):
        self.store = store
        self.periods = store.published_periods()

    def __getitem__(self, period: str) -> tuple[pd.DataFrame, dict]:
        if period not in self.periods:
            raise KeyError(period)
        rows = self.store.release_rows(period)
        # (its blocks are not read again: a series read release after release would leave the
        # whole store cached, ReleaseStore.drop_cached_blocks)
        self.store.drop_cached_blocks()
        return rows, self.store.manifest(period)

    def __iter__(self) -> Iterator[str]:
        return iter(self.periods)

    def __len__(self) -> int:
        return len(self.periods)

    def case_ids(self, period: str) -> np.ndarray:
        """The CaseIDs of a release in its row order, read without its other columns (a
        missing one as "", as :meth:`ReleaseStore.release_rows` reads it)."""
        return np.asarray(["" if c is None else c for c in self.store.release_cases(period)],
                          dtype=object)


def export_store(store: ReleaseStore, out: str | Path, fmt: str = "csv") -> Exported:
    """:func:`export_releases` of every release published in ``store``, read one at a time.

    Raises:
        StoreError: nothing is published yet; as :func:`export_releases`.
    """
    releases = StoredReleases(store)
    if not releases.periods:
        raise StoreError(f"Nothing is published in {str(store.path)!r} yet: run 'medanon "
                         f"release' first.")
    return export_releases(releases, out, fmt)


def _case_ids(releases: Mapping[str, tuple[pd.DataFrame, dict]], period: str) -> np.ndarray:
    if isinstance(releases, StoredReleases):
        return releases.case_ids(period)
    return releases[period][0]["case_id"].astype(str).to_numpy()


def _write_parquet(rows: pd.DataFrame, target: Path) -> None:
    import duckdb  # the store's engine writes Parquet without another dependency

    con = duckdb.connect()
    try:
        con.register("release_rows", rows)
        con.execute(f"COPY release_rows TO '{str(target).replace(chr(39), chr(39) * 2)}' "
                    f"(FORMAT PARQUET)")
    finally:
        con.close()


def export_releases(releases: Mapping[str, tuple[pd.DataFrame, dict]], out: str | Path,
                    fmt: str = "csv") -> Exported:
    """Write ``releases`` (period -> published rows and manifest) into the new folder ``out``,
    reading each release once (a :class:`StoredReleases` is read one release at a time).

    Raises:
        ValidationError: an unknown ``fmt``.
        StoreError: ``out`` exists, or (``faers``) a release the FAERS layout cannot carry
            (:func:`~medanon.published.faers_layout.write_faers_release`); nothing is written then.
        InputFormatError: (``faers``) a manifest declares a perturbed QID without its mechanism
            and ε, which the FAERS notes must state; nothing is written then.
    """
    check_choice(fmt, name="fmt", owner="export_releases", choices=EXPORT_FORMATS)
    replaced = 0
    # caseversion counts a case's releases over the whole exported series, so it is known first
    versions = (case_versions({p: _case_ids(releases, p) for p in releases})
                if fmt == "faers" else {})

    def writer(folder: Path, period: str) -> None:
        nonlocal replaced
        rows, manifest = releases[period]
        if fmt == "parquet":
            folder.mkdir(parents=True)
            _write_parquet(rows, folder / "release.parquet")
            write_manifest(folder, manifest)
            return
        write_release(folder, rows, manifest)
        if fmt == "faers":
            replaced += write_faers_release(folder, rows, period, versions=versions[period],
                                            manifest=manifest)

    written = write_series_atomically(Path(out), list(releases), writer)
    return Exported(written, replaced)
