"""Every metric of a published series, per release: what ``medanon evaluate`` prints.

Combines, for each release (formulas in each module and in ``docs/metrics.md``):

* information loss: NIL of 001 (Eqs. 1, 8, 9, from the published rows) and NIL with IL* of 000
  (against the original super records);
* disclosure after the attacks (:mod:`medanon.attacks.worst_case`): DIR and DSR of 001 (Eqs.
  10-11) after the B-, F-, L- (and MD-) attacks, SSGR of 002 when the release declares α;
* record-linkage risk RR and attribute risk AR_rev of 000 (:mod:`.disclosure`), and with
  medical background knowledge the bias it adds (000 §E);
* pharmacovigilance signals (:mod:`.signals`): count, PRR, ROR, χ² and the signal criterion of
  each rule on the original and on the release, and the bias. The result is valid JSON: an
  infinite PRR or ROR (c = 0) is the string ``"inf"`` with the Haldane–Anscombe value in
  ``prr_corrected``/``ror_corrected``, an undefined one ``null`` (:func:`.signals.json_ratio`).

The caller supplies the original super records of each period (the store holds them); the
metrics never read an algorithm's bookkeeping.

Two attackers (``docs/attacks-and-verify.md``). Every release is attacked with hard exclusions
only (a perturbed value never excludes anyone); a release declaring PPMS-DP in its strict
variant is also attacked by the likelihood-weighted attacker of
:mod:`medanon.attacks.likelihood`. Each entry names its ``attacker``; ``dir``, ``dsr``, ``rr``,
``ar_rev`` and ``reidentified`` are that attacker's, and ``dir_hard``, ``dsr_hard``, ``rr_hard``,
``ar_rev_hard`` and ``reidentified_hard`` the hard-exclusion attacker's (``dir_hard`` and
``dsr_hard`` are the numbers ``medanon verify`` prints as DIR and DSR). ``dir_posterior`` and
``dsr_posterior`` are None where no likelihood applies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial

import pandas as pd

from ..attacks.background import BackgroundKnowledge
from ..attacks.likelihood import LikelihoodAttacker
from ..attacks.worst_case import attack_series
from ..data.schema import Schema
from ..errors import ValidationError
from ..hierarchies import Taxonomy
from ..published.cells import reading_once
from ..published.format import CellTerms, original_as_published
from ..published.links import sharing_links
from ..published.roles import checked_columns
from ..published.series import PublishedSeries
from .disclosure import linkage_risk
from .information_loss import information_loss_star, normalized_information_loss
from .screening import ScreeningOptions, SeriesScreening, _period_count, screening_steps
from .signals import KnownCounts, SignalRule, compare_signals

__all__ = ["PublishedOriginals", "evaluate_linked", "evaluate_release", "evaluate_series",
           "evaluated_columns", "evaluation_steps", "original_columns", "own_columns"]


def evaluate_series(series: PublishedSeries, originals: Mapping[str, pd.DataFrame],
                    original_rows: Mapping[str, pd.DataFrame], *,
                    rules: Sequence[SignalRule] = (), background: BackgroundKnowledge | None = None,
                    md: bool = False, periods: Sequence[str] | None = None,
                    screening: ScreeningOptions | None = None,
                    progress: Callable[[str], None] | None = None) -> dict:
    """The metrics of each release, as a JSON-ready dict.

    Args:
        series: The published series.
        originals: Period -> original super records (``case_id`` and QIDs as the algorithms saw
            them: labels, numeric IntervalArray). Read one period at a time, in the order of
            ``periods``, each before the next: a mapping that reads lazily (as
            :func:`medanon.report.collect.store_originals` with ``lazy=True``) holds one
            period in memory.
        original_rows: Period -> the same records as published strings (for the signal counts
            and the screening), read with ``originals`` of the same period (just before it).
        rules: Signal rules (drug, demographic condition, reaction).
        background: Medical background knowledge for the RR/AR bias (000 §E).
        md: Add 002's MD-attack to every measure (by default DIR/DSR apply it only to releases
            declaring 002's model, as the papers' protocols do).
        periods: The releases to evaluate (default all).
        screening: Screen every drug–reaction pair of the original and of the series (MGPS,
            BCPNN, PRR; pooled, per quarter, per stratum: :mod:`.screening`) and compare them;
            the result's ``"screening"``. None skips it.
        progress: Called once per finished step with its name: each release's period label
            once it is measured, then each screening scope
            (:meth:`~medanon.metrics.screening.SeriesScreening.result`);
            :func:`evaluation_steps` calls in all. It changes no number.
    """
    labels = [series.label(p) for p in periods] if periods else series.periods

    def releases() -> Iterator[tuple[str, Callable[[], PublishedSeries], LikelihoodAttacker]]:
        # every release is parsed once, for all the measures below; the attacker keeps every
        # release parsed, and goes with this generator before the scopes are screened
        attacker = LikelihoodAttacker(series)
        for label in labels:
            yield label, lambda: series, attacker

    return _evaluate(releases(), originals, original_rows, hierarchies=series.hierarchies,
                     rules=rules, background=background, md=md, screening=screening,
                     progress=progress)


def evaluation_steps(periods: int | Sequence[str], *, rules: Sequence[SignalRule] = (),
                     screening: ScreeningOptions | None = None) -> int:
    """The number of ``progress`` calls of :func:`evaluate_series`, :func:`evaluate_linked` and
    :func:`medanon.experiments.evaluation.evaluate_store` for this many periods (or these
    labels) and options, known before any release is read: one per release, then
    :func:`~medanon.metrics.screening.screening_steps` for the screening.

    Raises:
        ValidationError: ``periods`` is neither a count nor a sequence of labels.
    """
    count = _period_count(periods, "evaluation_steps")
    return count + screening_steps(screening, count, rules)


def evaluate_linked(labels: Sequence[str], linked_of: Callable[[str], PublishedSeries],
                    originals: Mapping[str, pd.DataFrame],
                    original_rows: Mapping[str, pd.DataFrame], *,
                    hierarchies: Mapping[str, Taxonomy], rules: Sequence[SignalRule] = (),
                    background: BackgroundKnowledge | None = None, md: bool = False,
                    screening: ScreeningOptions | None = None,
                    progress: Callable[[str], None] | None = None) -> dict:
    """:func:`evaluate_series` one release at a time, in memory bounded by one release and what
    it links to (issue 30): what ``medanon evaluate`` runs on a store.

    Each measure of a release reads that release's rows and its cases' rows in the other
    releases, nothing else (the attacks and RR/AR_rev link records by CaseID:
    :func:`medanon.attacks.worst_case.attack_linked`; NIL, IL*, the signals and the screening
    read the release alone). ``linked_of(label)`` returns a series holding at least those
    (:meth:`medanon.pipeline.history.StoreSeries.release_with_cases`), and the result is
    :func:`evaluate_series`'s over the whole series.

    Each release's series is read, and measured, inside one
    :func:`~medanon.published.cells.reading_once`: what ``linked_of`` parsed of its rows (e.g.
    verify's check of the release, :meth:`~medanon.pipeline.history.StoreSeries.
    verified_linked_release`) is what the attacks and the measures read, not parsed again.

    Args:
        labels: The releases to evaluate, in order (canonical period labels).
        linked_of: What each release links to.
        originals, original_rows, rules, background, md, screening, progress: As for
            :func:`evaluate_series`.
        hierarchies: The series' hierarchies (``PublishedSeries.hierarchies``), to judge the
            screening's strata.
    """
    releases = ((label, partial(linked_of, label), None) for label in labels)
    return _evaluate(releases, originals, original_rows, hierarchies=hierarchies, rules=rules,
                     background=background, md=md, screening=screening, progress=progress)


def _evaluate(releases: Iterable[tuple[str, Callable[[], PublishedSeries],
                                      LikelihoodAttacker | None]],
              originals: Mapping[str, pd.DataFrame], original_rows: Mapping[str, pd.DataFrame],
              *, hierarchies: Mapping[str, Taxonomy], rules: Sequence[SignalRule],
              background: BackgroundKnowledge | None, md: bool,
              screening: ScreeningOptions | None,
              progress: Callable[[str], None] | None = None) -> dict:
    """The loop of :func:`evaluate_series` and :func:`evaluate_linked`: ``releases`` yields
    each label with what gives the series to measure it on (called once, inside the release's
    :func:`~medanon.published.cells.reading_once`) and the attacker to share (None: one per
    release)."""
    out = []
    # the screening reads each release once into term codes and classes (nothing else of the
    # rows is kept) and screens every scope at the end
    screener = (SeriesScreening(hierarchies=hierarchies, rules=rules, options=screening)
                if screening is not None else None)
    # one release at a time: its original records and attack results are dropped before the
    # next release is read
    for label, series_of, attacker in releases:
        # what reading the release's series parsed (its rows, its CaseIDs' probes: verify's
        # check of it) serves every measure of it, and goes before the next release is read
        # (issue 43: the attacks parsed again the releases verify had just parsed)
        # (and each release is linked once, for verify's check, the attacks and the risk)
        with reading_once(), sharing_links():
            series = series_of()
            # the screening reads the period first: the signal counts of the rules take the
            # terms and classes it read of the same rows instead of reading them again
            # (with the terms the original's cells were formatted from, when known)
            read = (screener.read(original_rows[label], series.releases[label],
                                  original_rows.cell_terms(label)
                                  if isinstance(original_rows, PublishedOriginals) else None)
                    if screener is not None else None)
            # the published strings are made only if something reads them
            out.append(evaluate_release(series, label, originals[label],
                                        original_rows[label] if rules else None,
                                        attacker=attacker, rules=rules, background=background,
                                        md=md,
                                        known=(screener.known_counts(read)
                                               if screener is not None and read is not None
                                               and rules else None)))
            if screener is not None and read is not None:
                screener.take(label, read)
            del read
            # a linked series (or the whole series' attacker, which keeps every release
            # parsed) goes before the next release is read, or the scopes are screened
            del series, attacker
        if progress is not None:
            progress(label)
    result: dict = {"releases": out}
    if screener is not None:
        result["screening"] = screener.result(progress=progress)
    return result


def evaluate_release(series: PublishedSeries, label: str, original: pd.DataFrame,
                     original_rows: pd.DataFrame | None, *,
                     attacker: LikelihoodAttacker | None = None,
                     rules: Sequence[SignalRule] = (),
                     background: BackgroundKnowledge | None = None, md: bool = False,
                     known: tuple[KnownCounts, KnownCounts] | None = None) -> dict:
    """The entry of one release in :func:`evaluate_series`'s ``"releases"``.

    Each release's entry depends on the series and on that period's original records only, so
    the entries of a series can be computed apart (``medanon evaluate --scheduler``) and equal
    those computed in one pass.

    Args:
        series, rules, background, md: As for :func:`evaluate_series`.
        label: The release's period label.
        original: The period's original super records.
        original_rows: The same records as published strings (read only with ``rules``).
        attacker: The series' attacker, shared between the releases (it keeps every release
            parsed); None makes one.
        known: What the screening read of ``original_rows`` and of the release's rows
            (:meth:`~medanon.metrics.screening.SeriesScreening.known_counts`), for the signal
            counts (:func:`~medanon.metrics.signals.compare_signals`' ``read``); None reads them.
    """
    attacker = attacker if attacker is not None else LikelihoodAttacker(series)
    qid_kinds = [(q.name, q.kind) for q in series.qids]
    hierarchies = series.hierarchies
    rows = series.releases[label]
    manifest = series.manifests.get(label, {})
    worst = attack_series(series, periods=[label], md=True if md else None,
                          attacker=attacker).release(label)
    risk = linkage_risk(series, label, original, md=md, attacker=attacker)
    entry = {
        "period": label,
        "method": (manifest.get("method") or {}).get("name"),
        "cases": len(rows), "groups": len(worst.groups),
        "nil": round(normalized_information_loss(rows, qid_kinds, hierarchies), 6),
        "nil_star": round(information_loss_star(original, rows, qid_kinds, hierarchies).nil, 6),
        "attacker": worst.attacker,
        "dir": worst.dir, "dsr": worst.dsr, "ssgr": worst.ssgr,
        "disclosing_groups": worst.disclosing_groups,
        "attacks": "B/F/L/MD" if worst.md_applied else "B/F/L",
        "rr": round(risk.rr, 6), "ar_rev": round(risk.ar_rev, 6),
        "reidentified": risk.reidentified,
        "dir_hard": worst.dir_hard, "dsr_hard": worst.dsr_hard,
        "dir_posterior": worst.dir_posterior, "dsr_posterior": worst.dsr_posterior,
        "rr_hard": round(risk.rr_hard, 6), "ar_rev_hard": round(risk.ar_rev_hard, 6),
        "reidentified_hard": risk.reidentified_hard,
    }
    if background is not None:
        informed = linkage_risk(series, label, original, md=md, background=background,
                                attacker=attacker)
        worst_bk = attack_series(series, periods=[label], background=background,
                                 md=True if md else None, attacker=attacker).release(label)
        entry["background"] = {
            "rr": round(informed.rr, 6), "ar_rev": round(informed.ar_rev, 6),
            # biases of the printed (rounded) values, so that they add up as shown
            "rr_bias": round(round(informed.rr, 6) - round(risk.rr, 6), 6),
            "ar_bias": round(round(informed.ar_rev, 6) - round(risk.ar_rev, 6), 6),
            "dir": worst_bk.dir, "dsr": worst_bk.dsr,
            "dir_bias": (None if worst_bk.dir is None or worst.dir is None
                         else round(worst_bk.dir - worst.dir, 6)),
        }
    if rules:
        if original_rows is None:
            raise ValidationError("evaluate_release needs 'original_rows' to count the signal "
                                  "rules on the original records.")
        entry["signals"] = [c.to_dict() for c in compare_signals(
            original_rows, rows, list(rules), hierarchies=hierarchies, read=known)]
    return entry


def original_columns(rules: Sequence[SignalRule] = (),
                     screening: ScreeningOptions | None = None) -> list[str]:
    """The columns of ``original_rows`` that :func:`evaluate_series` reads: the drug and
    reaction columns and the conditions of the rules, and what the screening reads."""
    wanted = [c for rule in rules
              for c in ("drugs", "reactions", *([rule.condition.attribute] if rule.condition else []))]
    if screening is not None:
        wanted += _screened_columns(screening)
    return list(dict.fromkeys(wanted))


def evaluated_columns(schema: Schema, rules: Sequence[SignalRule] = (),
                      screening: ScreeningOptions | None = None) -> list[str]:
    """The published columns :func:`evaluate_linked` reads of a release and of what it links
    to, in the release's order: every column but the ``clear`` ones (``multi`` and
    ``insensitive``: :mod:`medanon.published.roles`) that :func:`original_columns` does not
    name.

    A clear column is published as reported and covered by no model: no check of verify, no
    attack and no measure but the signals and the screening reads it. Each cell of the
    linked rows is a str DuckDB makes (24 x 20k: 17.7M of them, issue 43), so the others
    are not fetched: the drug roles and the outcomes, 5 of the 16 columns of FAERS.
    """
    return checked_columns(schema, also=original_columns(rules, screening))


def own_columns(schema: Schema, rules: Sequence[SignalRule] = (),
                screening: ScreeningOptions | None = None) -> list[str]:
    """Of :func:`evaluated_columns`, those read only in the rows of the release measured, never
    in the rows it links to: all but the period, the CaseID, the group and the QIDs.

    Of the releases it links to, verify's checks, the attacks and the measures of a release
    read the links and regions (:func:`medanon.published.links.link`: CaseIDs, groups, QID
    cells) and, for the derived dates, the periods and CaseIDs
    (:func:`medanon.published.roles.date_mismatches`); their terms are parsed, and their
    sensitive columns asked for, only when read, which only the release measured is
    (:func:`medanon.published.links.read_view`). The clear columns are read by the signals
    and the screening of the release alone (:func:`_evaluate`). Each cell fetched is a str
    DuckDB makes: 24 x 20k, the drugs of the linked rows were 0.25 s of CPU, their
    sensitive and date cells 0.3 s (issue 43)."""
    linking = {"period", "case_id", "group", *(q.name for q in schema.qids)}
    return [c for c in evaluated_columns(schema, rules, screening) if c not in linking]


class PublishedOriginals(Mapping):
    """Period -> original super records as published strings
    (:func:`medanon.published.format.original_as_published`), only the given columns (beside
    ``period``, ``case_id`` and ``group``): the other columns of a period's records are never
    formatted, which the evaluation would not read (:func:`original_columns`).

    Each column is formatted by the very function the full conversion uses. The last period
    asked for is kept (``evaluate_series`` reads it twice), the others are not.

    Args:
        originals: Period -> original super records (may read lazily).
        schema: The records' schema.
        columns: The columns wanted; those the schema does not publish are left out, as the
            full conversion leaves them out.
    """

    def __init__(self, originals: Mapping[str, pd.DataFrame], schema: Schema,
                 columns: Sequence[str]):
        wanted = set(columns)
        self._originals = originals
        self._schema = schema.model_copy(update={
            "qids": tuple(q for q in schema.qids if q.name in wanted),
            "sensitive": tuple(c for c in schema.sensitive if c in wanted),
            "multi": tuple(c for c in schema.multi if c in wanted),
            "insensitive": tuple(c for c in schema.insensitive if c in wanted),
            "dates": {c: g for c, g in schema.dates.items() if c in wanted},
        })
        self._label: str | None = None
        self._rows: pd.DataFrame | None = None
        self._terms: dict[str, CellTerms] = {}

    def __getitem__(self, label: str) -> pd.DataFrame:
        if label != self._label or self._rows is None:
            self._label = self._rows = None  # drop the previous period first
            self._terms = {}
            self._rows = original_as_published(self._originals[label], self._schema,
                                               self._terms)
            self._label = label
        return self._rows

    def cell_terms(self, label: str) -> Mapping[str, CellTerms]:
        """The terms the multi-valued cells of ``self[label]`` were joined from
        (:class:`~medanon.published.format.CellTerms`): what the screening reads of the
        original side instead of splitting them again."""
        self[label]
        return self._terms

    def __iter__(self):
        return iter(self._originals)

    def __len__(self) -> int:
        return len(self._originals)


def _screened_columns(options: ScreeningOptions) -> list[str]:
    return [*options.drug_columns, options.reaction_column,
            *(c.attribute for c in options.conditions)]

