"""A published series, read from a store or from a folder in the release format (audit mode).

Attacks, metrics and the verify gate read a series through :class:`PublishedSeries`: the rows of
each release as strings and its manifest. How to read each column (QID kinds, hierarchies,
sensitive columns) comes from the manifests themselves (``columns`` and ``hierarchies`` in ARX
layout, ``design.md``), so a series written by another tool can be audited without our store.
A schema can be given instead when the manifests lack that description.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..periods import parse_period
from ..data.schema import Schema
from ..errors import InputFormatError, ValidationError
from ..hierarchies import Taxonomy, read_arx
from .. import _repr
from .cells import QidInfo
from .format import read_series

__all__ = ["PublishedSeries", "empty_series", "kept_releases", "load_series", "published_columns",
           "qids_of_schema"]


#: the ``source`` of a series that started empty (:func:`empty_series`): made in memory
EMPTY_SOURCE = "an empty series"


@dataclass(frozen=True)
class PublishedSeries:
    """The releases of a series, oldest first.

    Attributes:
        releases: Period label -> published rows (strings, one row per case).
        manifests: Period label -> manifest.
        qids: How to read each QID column.
        sensitive: The multi-valued sensitive columns.
        source: Where the series was read from (for messages).
    """

    releases: Mapping[str, pd.DataFrame]
    manifests: Mapping[str, dict]
    qids: tuple[QidInfo, ...]
    sensitive: tuple[str, ...]
    source: str

    @property
    def periods(self) -> list[str]:
        """The period labels of the releases, oldest first."""
        return list(self.releases)

    def _repr_head(self) -> str:
        """What a repr says of the releases: count, span, method(s), rows, verdicts."""
        periods = self.periods
        methods = list(dict.fromkeys(_repr.method_of(self.manifests.get(p)) for p in periods))
        method = (f" ({methods[0]})" if len(methods) == 1
                  else f" ({_repr.plural(len(methods), 'method')})" if methods else "")
        rows = sum(len(frame) for frame in self.releases.values())
        verdicts = _repr.tally(_repr.verdict_of(self.manifests.get(p)) for p in periods)
        span = f" {_repr.span(periods)}" if periods else ""
        return (f"{_repr.plural(len(periods), 'release')}{span}{method}, "
                f"{rows} published rows, verdicts {verdicts}")

    def _repr_source(self) -> str:
        return "in memory" if self.source == EMPTY_SOURCE else f"from {_repr.clip(self.source, 120)}"

    def __repr__(self) -> str:
        return _repr.one_line(f"<{type(self).__name__}: {self._repr_head()}; "
                              f"{self._repr_source()}>")

    def _repr_html_(self) -> str:
        periods = self.periods
        rows = []
        for p in periods[:_repr.MAX_HTML_ROWS]:
            frame, manifest = self.releases[p], self.manifests.get(p)
            groups = frame["group"].nunique() if "group" in frame.columns else ""
            rows.append((p, _repr.method_of(manifest), len(frame), groups,
                         _repr.verdict_of(manifest)))
        return _repr.html_summary(
            f"{type(self).__name__}: {_repr.plural(len(periods), 'release')}"
            f"{' ' + _repr.span(periods) if periods else ''}",
            [("origin", self._repr_source()),
             ("published rows", sum(len(frame) for frame in self.releases.values())),
             ("QIDs", ", ".join(q.name for q in self.qids)),
             ("sensitive", ", ".join(self.sensitive))],
            ("period", "method", "rows", "groups", "verdict"), rows, total=len(periods))

    def label(self, period: str) -> str:
        """The canonical label of ``period``, which must be in the series.

        Raises:
            ValidationError: the series holds no release of that period.
        """
        wanted = parse_period(period).label
        if wanted not in self.releases:
            raise ValidationError(f"{self.source} holds no release of {wanted}; it holds "
                                  f"{', '.join(self.periods) or 'none'}.")
        return wanted

    def missing_periods(self) -> list[str]:
        """The quarters between the first and the last release that the series lacks.

        A release missing in the middle hides the links through it (a case's follow-up there
        can exclude candidates in the releases around it): a verdict without it is incomplete
        unless the series was published without that period.
        """
        held = sorted(parse_period(p).ordinal for p in self.periods)
        if not held:
            return []
        first = min((parse_period(p) for p in self.periods), key=lambda q: q.ordinal)
        ordinals = set(held)
        return [first.shift(i).label for i in range(held[-1] - held[0] + 1)
                if held[0] + i not in ordinals]

    def undeclared_missing_periods(self) -> list[str]:
        """:meth:`missing_periods` less those the publisher declared: the first release after a
        missing period lists ``allow_gap`` in ``method.acknowledged`` (``medanon release
        --allow-gap`` records it), so the series was published without that period."""
        later = sorted(self.periods, key=parse_period)
        out = []
        for gap in self.missing_periods():
            after = next(p for p in later if parse_period(p) > parse_period(gap))
            given = (self.manifests.get(after) or {}).get("method", {}).get("acknowledged") or []
            if "allow_gap" not in given:
                out.append(gap)
        return out

    @property
    def hierarchies(self) -> dict[str, Taxonomy]:
        """QID name -> its taxonomy, for the categorical QIDs."""
        return {q.name: q.taxonomy for q in self.qids if q.taxonomy is not None}

    def restricted_to(self, periods: list[str]) -> "PublishedSeries":
        """The same series holding only ``periods`` (used to check a series as it was)."""
        keep = [p for p in self.periods if p in set(periods)]
        return PublishedSeries({p: self.releases[p] for p in keep},
                               {p: self.manifests[p] for p in keep}, self.qids, self.sensitive,
                               self.source)

    def linked(self, cases: Iterable[str], *, whole: Iterable[str] = ()) -> "PublishedSeries":
        """What a release of ``cases`` can link to: the series restricted to the cases it can
        concern (each release with only those rows; a release left without rows is dropped
        unless the release before it holds some, :func:`kept_releases`).

        A candidate release changes the verdict of an earlier group only through the cases the
        two share (the F- and L-attacks link by CaseID), and the verdict of a group depends on
        its own rows and on its cases' rows in the other releases. So the rows kept are those
        of the cases of ``cases``, of every case in a group that holds one of them, and of
        every case of the releases in ``whole`` (002's MD-attack: a release gains its MD part,
        over all its groups, once the next period's release exists). Checking the candidate
        against this series gives the candidate's own verdict and the change it makes to every
        earlier group exactly as the whole series would (:func:`medanon.verify.gate`; the
        property tests of ``tests/property/test_incremental_gate.py`` compare the two).
        ``linked_rows`` of the store runs the same selection in SQL.

        Args:
            cases: The candidate's case ids (a superset is fine: more rows, the same verdict).
            whole: Labels of releases to keep whole.
        """
        seed = {str(c) for c in cases}
        whole = set(whole)
        members = set(seed)
        for label, rows in self.releases.items():
            ids = rows["case_id"].astype(str)
            if label in whole:
                members.update(ids)
                continue
            hit = ids.isin(seed).to_numpy()
            if hit.any():
                groups = rows["group"].astype(str)
                members.update(ids[groups.isin(set(groups[hit])).to_numpy()])
        releases = {label: rows[rows["case_id"].astype(str).isin(members).to_numpy()]
                    .reset_index(drop=True) for label, rows in self.releases.items()}
        keep = kept_releases(self.periods,
                             [label for label, rows in releases.items() if len(rows)] + list(whole))
        return PublishedSeries({label: releases[label] for label in keep},
                               {label: self.manifests[label] for label in keep
                                if label in self.manifests}, self.qids, self.sensitive,
                               self.source)

    def with_release(self, period: str, rows: pd.DataFrame, manifest: dict) -> "PublishedSeries":
        """The series with one more (candidate) release, kept in time order."""
        releases = dict(self.releases)
        manifests = dict(self.manifests)
        releases[period], manifests[period] = rows, manifest
        order = sorted(releases, key=lambda p: parse_period(p).ordinal)
        return PublishedSeries({p: releases[p] for p in order}, {p: manifests[p] for p in order},
                               self.qids, self.sensitive, self.source)


def kept_releases(periods: Iterable[str], held: Iterable[str]) -> list[str]:
    """The releases of ``periods`` a series restricted to some rows keeps: those that hold rows
    (``held``), and the release of the period after each.

    A release without rows has no group to check and links no case; only its presence can
    matter, to the release of the period before it (002's MD part is checked once the next
    period's release exists). Dropping the others keeps the cost of a linked series
    (:meth:`PublishedSeries.linked`) off the number of releases.
    """
    held = set(held)
    after = {parse_period(label).shift(1).label for label in held}
    return [label for label in periods if label in held or label in after]


def _qids_from_manifest(manifest: Mapping, label: str) -> tuple[tuple[QidInfo, ...], tuple[str, ...]]:
    columns = manifest.get("columns")
    if not isinstance(columns, Mapping) or "qids" not in columns or "sensitive" not in columns:
        raise InputFormatError(f"The manifest of {label} does not describe its columns "
                               f"('columns.qids' and 'columns.sensitive'); pass --schema to say "
                               f"how to read the series.")
    stored = manifest.get("hierarchies") or {}
    qids = []
    for q in columns["qids"]:
        try:
            name, kind = str(q["name"]), str(q["kind"])
        except (KeyError, TypeError):
            raise InputFormatError(f"The manifest of {label} lists a QID without name and kind: "
                                   f"{q!r}.") from None
        tax = None
        if kind == "categorical":
            entry = stored.get(name)
            if not isinstance(entry, Mapping) or entry.get("layout") != "arx" or "text" not in entry:
                raise InputFormatError(f"The manifest of {label} has no ARX hierarchy for the "
                                       f"categorical QID {name!r}; pass --schema.")
            tax = read_arx(io.StringIO(str(entry["text"])), name=name)
        qids.append(QidInfo(name, kind, tax))
    return tuple(qids), tuple(str(c) for c in columns["sensitive"])


def qids_of_schema(schema: Schema, hierarchies: Mapping[str, Taxonomy] | None = None
                   ) -> tuple[tuple[QidInfo, ...], tuple[str, ...]]:
    """How to read the QID and sensitive columns of a release made with ``schema`` (its
    ``hierarchies``, when the caller holds them already)."""
    if hierarchies is None:
        hierarchies = schema.load_hierarchies()
    qids = tuple(QidInfo(q.name, q.kind, hierarchies.get(q.name)) for q in schema.qids)
    return qids, tuple(schema.sensitive)


def empty_series(schema: Schema, hierarchies: Mapping[str, Taxonomy] | None = None
                 ) -> PublishedSeries:
    """A series with nothing published yet, read through ``schema`` (the first release of a
    store, or a store-free publication: ``pipeline.publish.prepare_release``)."""
    qids, sensitive = qids_of_schema(schema, hierarchies)
    return PublishedSeries({}, {}, qids, sensitive, EMPTY_SOURCE)


def load_series(*, folder: str | Path | None = None, store=None, schema: Schema | None = None,
                allow_empty: bool = False, lazy: bool = False,
                columns: Iterable[str] | None = None) -> PublishedSeries:
    """Read a published series from a folder (audit mode) or from a release store.

    Args:
        folder: A folder of period folders (``P/release.csv`` + ``P/manifest.json``).
        store: An open :class:`~medanon.store.ReleaseStore` (its published periods).
        schema: How to read the columns; default: the manifests' own description (the
            store's schema for a store).
        allow_empty: Accept a store with nothing published yet (an empty series).
        lazy: With a store, read a release's rows from the store each time they are asked for
            and keep none (the store must stay open): for a reader that goes through the
            series a release at a time, in the memory of one release (issue 43).
        columns: With ``lazy``, read only these columns of each release
            (:meth:`~medanon.store.ReleaseStore.release_rows`); None: every column.

    Raises:
        ValidationError: neither or both sources are given; a store with nothing published.
        InputFormatError: the releases cannot be read, or their manifests describe their
            columns differently.
    """
    if (folder is None) == (store is None):
        raise ValidationError("Give exactly one of a series folder or a store.")
    releases: Mapping[str, pd.DataFrame]
    if folder is not None:
        read = read_series(folder)
        releases = {r.period: r.rows for r in read}
        manifests = {r.period: r.manifest for r in read}
        source = f"Series {str(folder)!r}"
    else:
        labels = store.published_periods()
        if not labels and not allow_empty:
            raise ValidationError(f"Store {str(store.path)!r} has no published release yet; run "
                                  f"'medanon release' first.")
        if columns is not None and not lazy:
            raise ValidationError("The 'columns' parameter of load_series needs lazy=True.")
        if lazy:
            wanted = None if columns is None else tuple(columns)
            releases = ReadOnDemand(labels, lambda p: store.release_rows(p, wanted))
        else:
            releases = {p: store.release_rows(p) for p in labels}
        every = store.manifests()  # one query, not one per release
        manifests = {p: every[p] for p in labels}
        source = f"Store {str(store.path)!r}"
        schema = schema or store.schema
    if schema is not None:
        qids, sensitive = qids_of_schema(schema)
    else:
        described = {p: _qids_from_manifest(m, p) for p, m in manifests.items()}
        first = next(iter(described))
        newest = max(described, key=lambda p: parse_period(p).ordinal)
        qids, sensitive = described[first]
        if any(d != described[first] for d in described.values()):
            qids, sensitive = described[newest]
            for p, d in described.items():
                if not _reads_through(d, described[newest], releases[p]):
                    raise InputFormatError(
                        f"The manifests of {p} and {newest} describe the columns differently; "
                        f"audit them apart or pass --schema.")
    return PublishedSeries(releases, manifests, qids, sensitive, source)


class ReadOnDemand(Mapping[str, pd.DataFrame]):
    """Period -> rows made by ``read(period)`` each time they are asked for, and not kept: a
    reader that goes through a series a release at a time (the signal table, in time order)
    never holds it whole (issue 43). A store's published rows (:func:`load_series` with
    ``lazy``) and its original records as they would be published are read so."""

    def __init__(self, labels: Iterable[str], read: Callable[[str], pd.DataFrame]):
        self._labels, self._read = tuple(labels), read

    def __getitem__(self, label: str) -> pd.DataFrame:
        if label not in self._labels:
            raise KeyError(label)
        return self._read(label)

    def __iter__(self) -> Iterator[str]:
        return iter(self._labels)

    def __len__(self) -> int:
        return len(self._labels)


def _reads_through(old: tuple[tuple[QidInfo, ...], tuple[str, ...]],
                   new: tuple[tuple[QidInfo, ...], tuple[str, ...]], rows: pd.DataFrame) -> bool:
    """Whether a release described by ``old`` reads the same through ``new``'s description.

    So it does when the columns are the same and each categorical hierarchy of ``new`` refines
    the old one: every old node is a node of ``new`` under the same parent, bar the old tree's
    self leaves (what :func:`read_arx` adds for a value that is also an internal node, which the
    releases never held), and every published label is a node of ``new``. Releases made before
    issue 20 (MeSH bands such as ``Adult`` were internal values, published with the node's
    label) and after (the band is the leaf ``Adult (25-44)``) are such a pair: an old ``Adult``
    covers the same bands in either tree, and reads as the generalization.
    """
    (old_qids, old_sensitive), (new_qids, new_sensitive) = old, new
    if old_sensitive != new_sensitive or [(q.name, q.kind) for q in old_qids] != [
            (q.name, q.kind) for q in new_qids]:
        return False
    for o, n in zip(old_qids, new_qids):
        if o.taxonomy is None or o.taxonomy == n.taxonomy:
            continue
        new_tax = n.hierarchy  # o has a taxonomy, so both are categorical (same kinds, above)
        added = set(o.taxonomy.self_leaves.values())
        if any(label not in new_tax or new_tax.parent(label) != parent
               for label, parent in o.taxonomy.parents.items() if label not in added):
            return False
        if o.name in rows.columns:
            published = rows[o.name].dropna().astype(str)
            if any(x not in new_tax for x in published.unique() if x != ""):
                return False
    return True


def published_columns(series: PublishedSeries) -> set[str]:
    """Every column some release of the series publishes."""
    return set().union(*(rows.columns for rows in series.releases.values()))
