"""``medanon evaluate --scheduler``: the evaluation of a stored series on Dask.

:func:`medanon.metrics.evaluation.evaluate_series` measures the releases one after the other in
one process. Each release's entry depends only on the series and that period's original records
(:func:`~medanon.metrics.evaluation.evaluate_release`), and the screening reads each period on
its own (:meth:`~medanon.metrics.screening.SeriesScreening.read`) before its scopes are screened,
each scope on its own. So here one task per release, on the workers, computes the release's entry
and reads its period for the screening; the client adds the reads in period order and has the
workers screen the scopes' distinct pair tables. The result is the one ``evaluate_series`` gives:
every number comes from the same functions on the same inputs.

Each worker reads the store (a path every worker sees; DuckDB lets any number of processes read
a file at once): for each task, the release and its cases' rows in the other releases
(:meth:`~medanon.pipeline.history.StoreSeries.release_with_cases`), what
:func:`~medanon.metrics.evaluation.evaluate_linked` measures a release on in one process; a
worker holds one release and what it links to at a time, not the series.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..attacks.background import BackgroundKnowledge
from ..metrics.evaluation import PublishedOriginals, evaluate_release, original_columns
from ..metrics.screening import ScreeningOptions, SeriesScreening
from ..metrics.signals import SignalRule
from ..pipeline.history import StoreSeries
from ..report.collect import store_originals
from ..store import ReleaseStore
from .runner import dask_client

if TYPE_CHECKING:
    # one period as SeriesScreening.read reads it (original side, release side); the screening
    # module names no public type for it
    from ..metrics.screening import _Read

__all__ = ["evaluate_store"]


def _release_task(label: str, *, store: str, rules: Sequence[SignalRule],
                  background: BackgroundKnowledge | None, md: bool,
                  screening: ScreeningOptions | None
                  ) -> tuple[dict, tuple[_Read, _Read] | None]:
    """One release's entry, and its period read for the screening (None without one)."""
    with ReleaseStore.open(store, read_only=True) as db:
        series = StoreSeries(db).release_with_cases(label)
        columns = original_columns(rules, screening)
        frames, _ = store_originals(db, [label], lazy=True, columns=columns)
        rows = PublishedOriginals(frames, db.schema, columns)
        read, known = None, None
        if screening is not None:
            reader = SeriesScreening(hierarchies=series.hierarchies, rules=rules,
                                     options=screening)
            read = reader.read(rows[label], series.releases[label])
            # the rules' signal counts take what the screening read (as evaluate_linked does)
            known = reader.known_counts(read) if rules else None
        entry = evaluate_release(series, label, frames[label], rows[label] if rules else None,
                                 rules=rules, background=background, md=md, known=known)
    return entry, read


def evaluate_store(store: str | Path, periods: Sequence[str], *, rules: Sequence[SignalRule] = (),
                   background: BackgroundKnowledge | None = None, md: bool = False,
                   screening: ScreeningOptions | None = None, hierarchies: dict | None = None,
                   scheduler: str | None = None, workers: int | None = None,
                   progress: Callable[[str], None] | None = None) -> dict:
    """:func:`~medanon.metrics.evaluation.evaluate_series` of a stored series, on Dask.

    Args:
        store: The release store (a path every worker sees).
        periods: The period labels to evaluate, in order (as the series labels them).
        rules, background, md, screening: As for ``evaluate_series``.
        hierarchies: The series' hierarchies (``PublishedSeries.hierarchies``, to judge strata
            on the client); read from the store when None.
        scheduler: Address of a running Dask scheduler; None (or ``"local"``) starts a
            LocalCluster.
        workers: Workers of the LocalCluster (default: the machine's cores, at most 4).
        progress: As for ``evaluate_series`` (the same calls, in the same order: each release
            as its entry arrives, in period order, then each screening scope;
            :func:`~medanon.metrics.evaluation.evaluation_steps` in all). The scopes' fits run
            on the workers before the first scope is told.

    Returns:
        The dict ``evaluate_series`` returns.

    Raises:
        ValidationError: an unreachable scheduler; as ``evaluate_series`` otherwise.
    """
    path = str(Path(store).resolve())
    labels = list(periods)
    if hierarchies is None and screening is not None:
        with ReleaseStore.open(path, read_only=True) as db:
            hierarchies = StoreSeries(db).skeleton().hierarchies
    screener = (SeriesScreening(hierarchies=hierarchies or {}, rules=rules, options=screening)
                if screening is not None else None)
    with dask_client(None if scheduler == "local" else scheduler, workers) as (client, _cluster):
        futures = client.map(_release_task, labels, store=path, rules=list(rules),
                             background=background, md=md, screening=screening, pure=False)
        entries = []
        # in period order: the screening numbers the terms in the order the periods list them;
        # each release's result is waited for on its own, so that it is told when it arrives
        for label, future in zip(labels, futures):
            entry, read = future.result()
            entries.append(entry)
            if screener is not None:
                assert read is not None  # each task reads its period when there is a screening
                screener.take(label, read)
            if progress is not None:
                progress(label)
        result: dict = {"releases": entries}
        if screener is not None:
            result["screening"] = screener.result(mapper=lambda func, items: client.gather(
                client.map(func, client.scatter(items), pure=False)), progress=progress)
    return result
