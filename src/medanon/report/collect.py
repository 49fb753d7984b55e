"""Everything the HTML report shows about one release store, gathered without drawing anything.

One :class:`SeriesReport` per store: the periods as ingested, every metric of
:func:`medanon.metrics.evaluation.evaluate_series` (NIL, DIR/DSR/SSGR after the attacks, RR and
AR_rev, signal statistics original versus release), the ε ledger, each release's manifest and a
*generalization profile* of each release (how far each quasi-identifier was generalized, read from
the published rows themselves, not from the algorithm's bookkeeping).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..accounting import dp_rows, summarize_ledger
from ..accounting.ledger import LedgerSummary
from ..attacks.background import BackgroundKnowledge
from ..data.records import combine_super_records
from ..errors import StoreError, ValidationError
from ..hierarchies import Interval
from ..metrics.evaluation import evaluate_series
from ..metrics.signals import SignalRule
from ..published.format import original_as_published
from ..published.series import PublishedSeries, load_series
from ..store import ReleaseStore

__all__ = ["QidProfile", "SeriesReport", "check_report_names", "collect_series_report",
           "generalization_profile", "signal_tally", "store_originals"]

_WHOLE = ("", "*")  # a published cell meaning "any value" (suppressed)


@dataclass(frozen=True)
class QidProfile:
    """How one quasi-identifier was published in one release.

    Attributes:
        name: The QID column.
        kind: ``"numeric"`` or ``"categorical"``.
        exact: Share of cases published with their original, most specific value (a leaf, or a
            numeric point).
        suppressed: Share published as ``*`` (any value; the root of the hierarchy).
        levels: Categorical only: share of cases per generalization level (0 = leaf, the
            hierarchy's height = root).
        mean_width: Numeric only: mean width of the published intervals, as a share of the
            range the release spans (0 = exact, 1 = the whole range).
    """

    name: str
    kind: str
    exact: float
    suppressed: float
    levels: dict[int, float] = field(default_factory=dict)
    mean_width: float | None = None


def generalization_profile(series: PublishedSeries, period: str) -> list[QidProfile]:
    """The :class:`QidProfile` of every QID of one published release."""
    rows = series.releases[period]
    n = max(len(rows), 1)
    out = []
    for qid in series.qids:
        texts = rows[qid.name].fillna("").astype(str)
        whole = texts.isin(_WHOLE).to_numpy()
        if qid.kind == "numeric":
            uniques = texts[~whole].unique()
            parsed = {t: Interval.parse(t) for t in uniques}
            lo = texts[~whole].map({t: iv.lo for t, iv in parsed.items()}).to_numpy(dtype=float)
            hi = texts[~whole].map({t: iv.hi for t, iv in parsed.items()}).to_numpy(dtype=float)
            span = float(hi.max() - lo.min()) if len(lo) else 0.0
            widths = np.concatenate([(hi - lo) / span if span > 0 else np.zeros(len(lo)),
                                     np.ones(int(whole.sum()))])
            out.append(QidProfile(qid.name, "numeric", exact=float((hi == lo).sum()) / n,
                                  suppressed=float(whole.sum()) / n,
                                  mean_width=float(widths.mean()) if len(widths) else 0.0))
            continue
        tax = qid.taxonomy
        labels = texts.where(~whole, tax.root)
        heights = np.asarray(tax.subtree_height_array)[tax.encode(labels.tolist())]
        counts = pd.Series(heights).value_counts().sort_index()
        out.append(QidProfile(qid.name, "categorical", exact=float((heights == 0).sum()) / n,
                              suppressed=float((labels == tax.root).sum()) / n,
                              levels={int(level): float(c) / n for level, c in counts.items()}))
    return out


@dataclass(frozen=True)
class SeriesReport:
    """What the report shows about one store.

    Attributes:
        name: Short name of the series (the store's file name unless given).
        store: The store's path, as given.
        schema: The store schema's name.
        ingested: One dict per ingested period (``period``, ``n_reports``, ``n_cases``,
            ``published``, ...), as :meth:`ReleaseStore.periods` gives it.
        evaluation: :func:`evaluate_series`'s result (``{"releases": [...]}``), published
            periods only.
        manifests: Period -> manifest of each published release.
        profiles: Period -> :class:`QidProfile` of each QID.
        ledger: The ε ledger summary, or None when no DP release was made.
        rules: The signal rules evaluated.
    """

    name: str
    store: str
    schema: str
    ingested: list[dict]
    evaluation: dict
    manifests: dict[str, dict]
    profiles: dict[str, list[QidProfile]]
    ledger: LedgerSummary | None
    rules: tuple[SignalRule, ...]

    @property
    def releases(self) -> list[dict]:
        return self.evaluation["releases"]

    @property
    def periods(self) -> list[str]:
        return [r["period"] for r in self.releases]


def store_originals(db: ReleaseStore, periods: Sequence[str]) -> tuple[dict, dict]:
    """The original super records of each period (as the algorithms saw them, and as
    published-format strings for the signal counts), which the metrics compare releases with."""
    hierarchies = db.schema.load_hierarchies()
    frames, rows = {}, {}
    for period in periods:
        supers = combine_super_records(db.records(period), db.schema, hierarchies).frame
        frames[period] = supers
        rows[period] = original_as_published(supers, db.schema)
    return frames, rows


def collect_series_report(store: str | Path, *, rules: Sequence[SignalRule] = (),
                          background: BackgroundKnowledge | None = None, md: bool = False,
                          name: str | None = None,
                          progress: Callable[[str], None] | None = None) -> SeriesReport:
    """Read a store and compute everything its report section shows.

    Args:
        store: The release store (DuckDB file); it is opened read-only in effect (nothing is
            written to it).
        rules: Signal rules to compare original versus release.
        background: Medical background knowledge for the RR/AR bias (000 §E).
        md: Apply 002's MD-attack to every release (see :func:`evaluate_series`).
        name: Name shown for the series (default: the store's file name).
        progress: Called with a short step name as the work advances.

    Raises:
        StoreError: the store does not exist, is not a medanon store, or publishes nothing.
    """
    step = progress or (lambda _step: None)
    path = Path(store)
    with ReleaseStore.open(path, read_only=True) as db:
        published = db.published_periods()
        if not published:
            raise StoreError(f"Nothing is published in {str(path)!r} yet: run 'medanon release' "
                             "first.")
        frame = db.periods()
        ingested = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
        series = load_series(store=db)
        if background is not None:
            background.check(series.qids)
        originals, original_rows = store_originals(db, series.periods)
        ledger_rows = db.ledger()
        schema_name = db.schema.name
    step(f"{path.name}: read")
    evaluation = evaluate_series(series, originals, original_rows, rules=list(rules),
                                 background=background, md=md)
    step(f"{path.name}: evaluated")
    # a ledger of paper-variant rows only spent no ε (their nominal ε bounds nothing)
    ledger = summarize_ledger(ledger_rows) if len(dp_rows(ledger_rows)) else None
    profiles = {p: generalization_profile(series, p) for p in series.periods}
    return SeriesReport(name=name or path.name, store=str(store), schema=schema_name,
                        ingested=ingested, evaluation=evaluation,
                        manifests={p: dict(series.manifests.get(p, {})) for p in series.periods},
                        profiles=profiles, ledger=ledger, rules=tuple(rules))


def signal_tally(report: SeriesReport) -> tuple[int, int, int]:
    """(original signals kept, original signals lost, spurious signals) over all releases."""
    kept = lost = spurious = 0
    for rel in report.releases:
        for s in rel.get("signals", []):
            before, after = s["original"]["signal"], s["release"]["signal"]
            kept += before and after
            lost += before and not after
            spurious += after and not before
    return kept, lost, spurious


def check_report_names(reports: Sequence[SeriesReport]) -> None:
    """Series shown side by side need distinct names."""
    names = [r.name for r in reports]
    if len(set(names)) != len(names):
        raise ValidationError(f"Two stores have the same name ({', '.join(names)}); give "
                              "distinct --name values.")
