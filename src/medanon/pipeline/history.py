"""A store's published series read release by release: what one release links to (issue 30).

A release's verdict depends on its own rows and on its cases' rows in the other releases; what a
new release changes in the earlier ones goes through the cases they share (the F- and L-attacks
link by CaseID) and, under 002's MD-attack, the whole previous release. So neither the release
of a new period nor the verification of a series needs the whole history in memory:

* :func:`store_history` gives :func:`medanon.pipeline.publish.release_steps` what a period
  links to (:meth:`ReleaseStore.linked_rows`), so a release and its gate cost what the period
  shares with the history, not the number of releases;
* :func:`verify_store` checks every release of a store against what it links to
  (:func:`medanon.verify.verify_linked`), with the verdict of :func:`medanon.verify.verify_series`
  over the whole series.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import pandas as pd

from ..data.schema import Schema
from ..hierarchies import Taxonomy
from ..published.roles import checked_columns
from ..published.series import PublishedSeries, kept_releases, qids_of_schema
from ..store import ReleaseLinks, ReleaseStore
from ..verify import SeriesVerdict, md_whole, verify_linked

__all__ = ["LinkedHistory", "StoreSeries", "store_history", "verify_store"]

#: what a period links to in the releases published so far: (its case ids, its label) ->
#: the restricted series (:meth:`PublishedSeries.linked`).
LinkedHistory = Callable[[Collection[str], str], PublishedSeries]


class StoreSeries:
    """A store's published series, read a part at a time: every manifest (read once: releases
    are immutable), and the rows linked to some cases (:meth:`ReleaseStore.linked_rows`)."""

    def __init__(self, store: ReleaseStore, schema: Schema | None = None,
                 hierarchies: Mapping[str, Taxonomy] | None = None):
        self.store = store
        self.qids, self.sensitive = qids_of_schema(schema or store.schema, hierarchies)
        self.manifests: dict[str, dict] = {}
        self.source = f"Store {str(store.path)!r}"
        # which rows each release links to, read once for every release read (issue 43)
        self._links: ReleaseLinks | None = None

    def refresh(self) -> dict[str, dict]:
        if list(self.manifests) != self.store.published_periods():
            self.manifests = self.store.manifests()
        return self.manifests

    def skeleton(self) -> PublishedSeries:
        """Every release with its manifest and no rows: what the checks of gaps and
        declarations (``PublishedSeries.missing_periods``) read."""
        manifests = self.refresh()
        return PublishedSeries({p: pd.DataFrame() for p in manifests}, dict(manifests), self.qids,
                               self.sensitive, self.source)

    def linked(self, cases: Collection[str], whole: Sequence[str] = (),
               also: Sequence[str] = (), *, share_cells: bool = False,
               columns: Iterable[str] | None = None) -> PublishedSeries:
        """The rows ``cases`` link to, the releases of ``whole`` whole, and the releases
        ``also`` even when they hold none of those rows (``share_cells`` and ``columns``: see
        :meth:`ReleaseStore.linked_rows`)."""
        self.refresh()
        return self._kept(self.store.linked_rows(cases, whole=whole, share_cells=share_cells,
                                                 columns=columns), [*whole, *also])

    def linked_release(self, label: str, columns: Iterable[str] | None = None,
                       own_columns: Iterable[str] = (), *,
                       groups: bool = True) -> PublishedSeries:
        """What release ``label`` links to: every row of it and its cases' rows elsewhere
        (the series :func:`medanon.verify.verify_linked` and
        :func:`medanon.attacks.worst_case.attack_linked` read for that release), and the release
        itself even when it holds no case (an empty release is checked as such): :meth:`linked`
        of :meth:`ReleaseStore.release_cases`, those cases read in SQL
        (:meth:`ReleaseStore.release_linked_rows`), only ``columns`` of them (None: every
        column), ``own_columns`` only in the release's own rows; without ``groups``, the rows
        of its cases alone (:meth:`release_with_cases`' selection)."""
        self.refresh()
        links = self._links
        if links is None or links.periods != tuple(self.manifests):
            links = self._links = self.store.release_links()
        if label == links.periods[-1]:
            # read in time order (evaluate, verify), nothing follows the last release: its
            # codes go (evaluate screens the scopes next, at its peak memory)
            self._links = None
        rows = self.store.release_linked_rows(label, links, columns, own_columns, groups=groups)
        # a reader of every release (verify, evaluate) reads blocks of every release for each:
        # what DuckDB keeps of them is bounded, not the whole store (an 8 x 450k series: 163
        # MiB, which dropping at each release would cost verify 8 % more CPU, issue 43)
        self.store.drop_cached_blocks(above=_READ_CACHE)
        return self._kept(rows, [label])

    def _kept(self, rows: dict[str, pd.DataFrame], also: Sequence[str]) -> PublishedSeries:
        """The series of the releases :func:`kept_releases` keeps of ``rows``, with ``also``."""
        keep = kept_releases(rows, [p for p, r in rows.items() if len(r)] + list(also))
        return PublishedSeries({p: rows[p] for p in keep}, {p: self.manifests[p] for p in keep},
                               self.qids, self.sensitive, self.source)

    def release_with_cases(self, label: str) -> PublishedSeries:
        """Release ``label`` whole and its cases' rows in the other releases
        (:meth:`ReleaseStore.release_case_rows`): what the attacks and the measures of that
        release read (:func:`medanon.attacks.worst_case.attack_linked`,
        :func:`medanon.metrics.evaluation.evaluate_linked`), without the other cases of their
        groups that :meth:`linked_release` adds for the gate. The releases kept are those
        :func:`~medanon.published.series.kept_releases` keeps, and ``label`` even when empty.
        """
        self.refresh()
        rows = self.store.release_case_rows(label)
        keep = kept_releases(rows, [p for p, r in rows.items() if len(r)] + [label])
        return PublishedSeries({p: rows[p] for p in keep}, {p: self.manifests[p] for p in keep},
                               self.qids, self.sensitive, self.source)

    def verified_linked_release(self, label: str, columns: Iterable[str] | None = None,
                                own_columns: Iterable[str] = ()) -> PublishedSeries:
        """The release ``label`` and its cases' rows in the other releases (:meth:`linked_release`
        without the other cases of their groups: :meth:`release_with_cases`' rows), once
        verify's checks accept the release, the very series they checked: what ``medanon
        evaluate`` measures and ``medanon attack --store`` attacks, after verify's refusal
        (issue 41), in one read of the store.

        A release's verdict depends on its own rows and on its cases' rows in the other
        releases, nothing else (:func:`medanon.verify.verify_linked`: the property tests of
        ``tests/property/test_incremental_gate.py`` hold it to :func:`~medanon.verify.
        verify_series` on this selection). The other cases of its groups, which
        :meth:`linked_release` adds for the gate (a candidate changes the verdicts of the
        earlier groups its cases are in), link to none of its records; they were half the
        rows of a 24 x 20k evaluate's linked reads, each fetched as text and parsed (issue 43).
        The measures read the same rows (:meth:`release_with_cases`,
        ``tests/unit/test_evaluate_streaming.py``). Measured on the series checked, inside the
        caller's :func:`~medanon.published.cells.reading_once`
        (:func:`medanon.metrics.evaluation.evaluate_linked`), the releases verify parsed are
        not parsed again (issue 43).

        ``columns``: only these columns of the rows (None: every column); they must hold every
        column verify's checks read, which every column but the ``clear`` ones does
        (:func:`medanon.metrics.evaluation.evaluated_columns`). ``own_columns``: of those, the
        ones only the release's own rows hold (:func:`medanon.metrics.evaluation.own_columns`).

        Raises:
            InputFormatError: verify refuses the release (:func:`medanon.verify.verify_series`).
        """
        series = self.linked_release(label, columns, own_columns, groups=False)
        # verify's verdict of the release (refusing as verify_series refuses), without the
        # series' observed case span, which nothing here reads (a pass over every CaseID of
        # the linked series, per release: issue 43)
        verify_linked([label], lambda _: series, observed_span=0)
        return series

    def verify(self, periods: Sequence[str] | None = None) -> SeriesVerdict:
        """:func:`medanon.verify.verify_series` over the store's series, one release at a time:
        memory bounded by one release and what it links to.

        Each release is read as :meth:`checked_release` reads it (as ``evaluate`` checks it,
        :meth:`verified_linked_release`).

        Args:
            periods: The releases to check (default: all).

        Raises:
            ValidationError: a period is not published.
            InputFormatError: as :func:`medanon.verify.verify_series`.
        """
        skeleton = self.skeleton()
        labels = [skeleton.label(p) for p in periods] if periods else skeleton.periods
        return verify_linked(labels, self.checked_release,
                             observed_span=self.store.published_case_span())

    def checked_release(self, label: str) -> PublishedSeries:
        """What the checks of release ``label`` read (:meth:`verify`): the release and its
        cases' rows in the other releases (:meth:`linked_release` without the other cases of
        their groups), only the columns the checks read
        (:func:`~medanon.published.roles.checked_columns`). ``medanon attack --store`` reads
        the same rows and columns, with any clear column its ss rule names, through
        :meth:`verified_linked_release`.

        A release's verdict, and every attack on its groups, depend on those rows alone: the
        property tests of ``tests/property/test_incremental_gate.py`` hold both, on this
        selection, to a run over the whole series. An 8 x 450k series read with the other
        cases of the groups and every column: 0.77-1.09 M rows a release, and 31 s of CPU and
        2.9 GB for ``verify``, 55 s and 2.3 GB for ``attack`` (issue 43).
        """
        return self.linked_release(label, checked_columns(self.store.schema), groups=False)


#: the most of the store's blocks DuckDB keeps cached while a reader of every release reads
#: them one release at a time (:meth:`StoreSeries.linked_release`)
_READ_CACHE = 256 * 2**20


def store_history(store: ReleaseStore, hierarchies: Mapping[str, Taxonomy] | None = None
                  ) -> LinkedHistory:
    """What a period links to, read from ``store`` (:meth:`ReleaseStore.linked_rows`): only
    the linked rows, only the columns a release reads of them
    (:func:`~medanon.published.roles.checked_columns`), with every published manifest (read
    through the store schema's ``hierarchies``, when the caller holds them).

    The clear columns are left out: the method reads the CaseIDs and QIDs of the releases
    before (QID-covering), the dates are derived from their CaseIDs and dates, and the gate's
    checks read their periods, CaseIDs, groups, QIDs, sensitive terms and dates. A 450k
    quarter 2 links to 184k earlier rows, a str per cell: the drugs (all and per role) and the
    outcomes, 6 of FAERS' 16 columns, cost 0.3-0.45 s of CPU to fetch and share, and 45-60 MiB
    of the release's peak (issue 43). A check that reads a clear column of earlier releases
    must be given it here.
    """
    series = StoreSeries(store, hierarchies=hierarchies)
    columns = checked_columns(store.schema)

    def linked(cases: Collection[str], label: str) -> PublishedSeries:
        # held through the method's run: repeated cells shared (memory, issue 43)
        rows = series.linked(cases, md_whole(label, series.refresh()), share_cells=True,
                             columns=columns)
        # the blocks the query read of every earlier release are not read again by this
        # release: left cached, they grew its peak with the series (issue 43)
        store.drop_cached_blocks()
        return rows

    return linked


def verify_store(store: ReleaseStore, periods: Sequence[str] | None = None, *,
                 schema: Schema | None = None) -> SeriesVerdict:
    """:meth:`StoreSeries.verify` of ``store`` read through ``schema`` (default: its own)."""
    return StoreSeries(store, schema).verify(periods)
