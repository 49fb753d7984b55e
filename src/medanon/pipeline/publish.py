"""The publish flow: store records -> super records -> method -> release rows + manifest -> store.

One period at a time, in time order; each publication is one store transaction, so a failure
in period 3 leaves periods 1-2 published and period 3 untouched.

:func:`prepare_release` is the whole flow for one period without a store (records, the series
published so far and the ledger in; rows, manifest, ledger rows and operator-only facts out);
:func:`release_steps` is the one loop over periods that chains it (each release joins the
series the next one is anonymized and gated against); both destinations iterate it:
:func:`publish_periods` reads its inputs from the store and writes each release there, and
``medanon.Publisher.publish`` (store-free) returns the releases. What a
manifest never holds: a hash of the input, or any other function of the private values that the
privacy model does not account for (``design.md``, "Published release format"); those go to the
store's operator-only ``release_private`` table (:class:`PreparedRelease`'s ``operator``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from .. import __version__
from .._memory import give_back_freed_memory
from .._validation import check_choice
from ..accounting import (Budget, Charge, PrivacyLoss, cases_over_budget, check_plan, compose,
                          format_epsilon, unit_counts)
from ..anonymize.base import AnonymizationResult, Anonymizer
from ..periods import parse_period
from ..data.records import (factorize_cells, is_identity, stable_sort_order,
                             super_records_of_rows)
from ..data.terms import CodedRecords, TermCodes, codes_of
from ..errors import BudgetExceeded, PrivacyViolation, StoreError, ValidationError
from ..data.schema import Schema
from ..hierarchies import Taxonomy, write_arx
from ..models import model_from_manifest
from ..models.theta import caps_raised, theta_table_of
from ..random import Randomness, refuse_seeded_release
from ..store import ReleaseStore
from ..verify import SeriesVerdict, gate, md_whole
from ..published.case_ids import case_id_role, case_ids_entry, highest_case_id
from ..published.format import to_published_rows
from ..published.manifest_roles import MANIFEST_FACTS, operator_view, split_operator_facts
from ..published.cells import reading_once
from ..published.roles import check_roles, column_roles, derive_release_dates
from . import checks
from .checks import NOTHING_ACKNOWLEDGED, Acknowledgements
from .case_ids import CaseIds, check_injective, mode_of, resolve
from ..published.series import PublishedSeries, empty_series
from .history import LinkedHistory, store_history

MANIFEST_FORMAT = "medanon-release/1"
ON_CASE_BUDGET = ("refuse", "suppress")
_SHOWN = 5


@dataclass(frozen=True)
class PublishedSummary:
    """What one publication produced."""

    period: str
    cases: int
    groups: int
    suppressed: int
    method: str
    verdict: str = "not-run"
    #: sensitive terms suppressed from single cases (HA keeps a case that fits no group)
    suppressed_terms: int = 0
    #: the terms the release's θ table gives θ = 1: no limit on their share of a group
    #: (``ThetaTable.unbounded_terms``; the frequency rule's most frequent terms)
    unbounded_terms: tuple[str, ...] = ()
    #: whether every term the table does not list has θ = 1 (a default of 1)
    default_unbounded: bool = False
    #: protected terms whose θ ``raise-theta`` raised above their cap: term -> its
    #: ``details.raised_theta`` entry (``cap``, ``raised_to``; see ``caps_raised``)
    caps_raised: dict[str, dict] = field(default_factory=dict)
    #: every term whose θ ``raise-theta`` raised, protected or not: term -> ``theta`` (asked)
    #: and ``raised_to`` (and ``cap`` for a protected term), also a term only withheld cases
    #: hold (operator-only, so the operator is told of every raise)
    raised_theta: dict[str, dict] = field(default_factory=dict)


def _raised_theta(prepared: PreparedRelease) -> dict[str, dict]:
    """Every θ ``raise-theta`` raised in a release (published in ``details.raised_theta`` or
    operator-only), as term -> ``theta``, ``raised_to`` and, for a protected term, ``cap``."""
    published = (prepared.manifest.get("details") or {}).get("raised_theta") or {}
    hidden = (prepared.operator.get("private_details") or {}).get("raised_theta_unpublished") or {}
    return {str(t): {k: e[k] for k in ("theta", "raised_to", "cap") if k in e}
            for t, e in sorted({**published, **hidden}.items()) if isinstance(e, Mapping)}


def plan_periods(store: ReleaseStore, requested: Sequence[str]) -> list[str]:
    """The periods to publish, in time order, after every check that needs no computation.

    No period given means every ingested, unpublished period. Periods must be published in
    time order: an unpublished period earlier than a requested one is an error, since periodic
    methods anonymize each release against all earlier ones.

    Raises:
        ValidationError: a label does not parse.
        StoreError: a period is not ingested, already published, or would skip an earlier one.
    """
    ingested = store.ingested_periods()
    published = set(store.published_periods())
    if requested:
        labels = sorted({parse_period(p).label for p in requested}, key=parse_period)
    else:
        labels = [p for p in ingested if p not in published]
        if not labels:
            raise StoreError(f"Nothing to publish in {str(store.path)!r}: every ingested period "
                             f"({', '.join(ingested) or 'none'}) is already published.")
    for label in labels:
        if label not in ingested:
            raise StoreError(f"Period {label} is not ingested in {str(store.path)!r}; ingested: "
                             f"{', '.join(ingested) or 'none'}.")
        if label in published:
            raise StoreError(f"Period {label} is already published in {str(store.path)!r}; a "
                             "published release is immutable.")
    for label in labels:
        skipped = [p for p in ingested if parse_period(p) < parse_period(label)
                   and p not in published and p not in labels]
        if skipped:
            raise StoreError(f"Period {label} cannot be published before {', '.join(skipped)}: "
                             "releases are published in time order.")
    return labels


def _with_next_period(store: ReleaseStore, labels: list[str], *, explicit: bool,
                      method: str, final: bool = False) -> list[str]:
    """Periods whose next period is ingested (HA: an md-record is a case absent from it).

    Requested explicitly, a period without its next one is an error; by default the trailing
    periods that lack it are left for later. With ``final`` the last period needs none.
    """
    ingested = set(store.ingested_periods())
    missing = [p for p in (labels[:-1] if final else labels)
               if parse_period(p).shift(1).label not in ingested]
    if missing and (explicit or missing != labels[len(labels) - len(missing):]):
        first = missing[0]
        raise StoreError(f"Method {method!r} releases period {first} only when period "
                         f"{parse_period(first).shift(1).label} is ingested: an md-record is a case "
                         "absent from the next period. Ingest the next quarter first.")
    kept = [p for p in labels if p not in missing]
    if not kept:
        first = missing[0]
        raise StoreError(f"Method {method!r} cannot release {', '.join(missing)} yet: period "
                         f"{parse_period(first).shift(1).label} (the next one) is not ingested, and "
                         "an md-record is a case absent from the next period.")
    return kept


#: what :func:`input_digest` hashes, recorded beside each digest in the store's operator-only
#: details (``input_digest``): ``columns-v3`` (issue 43) hashes each column's distinct values and
#: codes, a multi-valued column's distinct terms once (its distinct cells as numbers into them),
#: codes as int32; ``columns-v2`` hashed each distinct cell's terms as text and codes as int64;
#: stores written before either hold ``csv-v1`` digests (the sorted records' CSV text). Digests
#: of different versions are not comparable.
INPUT_DIGEST_VERSION = "columns-v3"
#: the version of a digest whose store recorded none (written before the version was recorded)
EARLIER_INPUT_DIGEST = "csv-v1"


def input_digest(records: pd.DataFrame | CodedRecords, *,
                 terms: Mapping[str, TermCodes] | None = None) -> str:
    """SHA-256 of a period's input records, independent of their row order (``columns-v3``).

    The records are put in a canonical order (by their first three columns: case, period,
    report), then each column is hashed as its name, its kind, and either its values' bytes
    (a numeric column) or its distinct values followed by each row's code into them (any
    other column: texts; the tuples of a multi-valued column as their sizes, their distinct
    terms' texts and each item's number among those; missing cells). Every part is
    length-prefixed, so two different inputs cannot hash the same bytes. Hashing the distinct
    values once, rather than a CSV text of every cell, is what makes it cheap at 450k cases;
    hashing a multi-valued column's terms once rather than per distinct cell, and codes as
    int32, took another third off (0.33 -> 0.22 s at 450k cases, ``columns-v3``).

    Operator-only (the store's ``release_private``): with every other record known, an adversary
    could test guesses about a target's values against it, so it is never published.

    ``terms`` (``CodedRecords.terms`` of the store's read): codes of multi-valued columns, row for
    row of ``records``; a column they hold is hashed from its codes, to the same bytes. The
    store's ``CodedRecords`` itself may be given: the columns its base lacks are hashed from
    their codes alone.
    """
    names: list = list(records.columns)
    coded_columns: Mapping[str, TermCodes] = {}
    if isinstance(records, CodedRecords):
        coded_columns = {name: records.terms[name] for name in records.columns
                         if name not in records.base.columns}
        terms = records.terms
        # (the rows are ordered by the first three columns: a list column there is made)
        records = records.frame if set(names[:3]) & set(coded_columns) else records.base
        coded_columns = {n: c for n, c in coded_columns.items() if n not in records.columns}
    order: np.ndarray | None = _canonical_order(records, names[:3])
    if order is not None and is_identity(order):
        # the rows are in the canonical order already (as the store reads a period's
        # records): nothing is gathered, and the coded columns' rows are numbered as they
        # come (issue 43)
        order = None

    def in_order(values: np.ndarray) -> np.ndarray:
        return values if order is None else values[order]

    digest = hashlib.sha256()
    _hash_part(digest, INPUT_DIGEST_VERSION)
    digest.update(len(records).to_bytes(8, "little"))
    # codes (rows, distinct values, terms) are below the rows' number: int32 bytes, unless the
    # rows (hashed just above) are too many for it
    width = _code_width(len(records))
    for name in names:
        _hash_part(digest, str(name))
        if name in coded_columns:   # (no cells, only their codes)
            _hash_coded_column(digest, coded_columns[name], order, width)
            continue
        column = records[name]
        if column.dtype.kind in "biuf" and isinstance(column.dtype, np.dtype):
            _hash_part(digest, column.dtype.str)
            digest.update(np.ascontiguousarray(in_order(column.to_numpy())).tobytes())
            continue
        cells = column.to_numpy(dtype=object)
        coded = codes_of(terms, cells, str(name))
        if coded is not None:
            _hash_coded_column(digest, coded, order, width)
            continue
        codes, distinct = factorize_cells(in_order(cells))
        _hash_values(digest, distinct.tolist(), width)
        digest.update(codes.astype(width).tobytes())
    return digest.hexdigest()


def _code_width(rows: int) -> str:
    """The bytes :func:`input_digest` hashes a code as, for records of ``rows`` rows: every
    code it hashes (a row's distinct value, a term's number, a cell's length) is below the
    number of rows or of a column's terms, which a 450k quarter's fit in int32 many times."""
    return "<i4" if rows < 2 ** 31 - 1 else "<i8"


def _hash_terms(digest: hashlib._Hash, count: int, lengths: np.ndarray, number: np.ndarray,
                terms: list, width: str) -> None:
    """Feed the distinct cells of a multi-valued column (``columns-v3``): ``count`` cells,
    each one's number of terms (``lengths``), the distinct terms (``terms``, text, in order of
    first appearance reading the cells in order), then each cell item's number among them
    (``number``). A term's text is hashed once, not once per cell holding it (issue 43)."""
    _hash_part(digest, "tuple")
    digest.update(count.to_bytes(8, "little"))
    digest.update(lengths.astype(width).tobytes())
    _hash_texts(digest, terms)
    digest.update(number.astype(width).tobytes())


def _hash_coded_column(digest: hashlib._Hash, coded: TermCodes,
                       order: np.ndarray | None, width: str) -> None:
    """Feed a multi-valued column given as codes (rows in the records' order) to ``digest``:
    the bytes :func:`input_digest` feeds for its tuples, without making a tuple.

    The distinct cells are the distinct coded rows, numbered in order of first appearance in
    ``order`` (None: the rows' own order; as ``pd.factorize`` numbers the tuples); they are
    hashed as :func:`_hash_values` hashes tuples of text (:func:`_hash_terms`: their number,
    each one's size, their distinct terms' text, each item's number among those terms), or as
    no values at all when there are no rows; then each row's cell number (``width`` bytes)."""
    which, first = coded.distinct_rows()
    if order is None:
        # ``which`` numbers the rows in order of first appearance already: the factorize
        # would give it back, and each number's first row (issue 43)
        codes, rows = which, first
    else:
        codes, distinct = pd.factorize(which[order])
        rows = first[distinct]
    if not len(rows):
        _hash_values(digest, [], width)
        return
    lengths, terms = coded.items_of(rows)
    # the terms numbered in order of first appearance, as the tuples' items factorize (a
    # vocabulary holds each term once: its codes and its texts number alike)
    number, used = pd.factorize(terms)
    vocabulary = coded.vocabulary
    _hash_terms(digest, len(rows), lengths, number, [vocabulary[c] for c in used.tolist()], width)
    digest.update(codes.astype(width).tobytes())


def _canonical_order(records: pd.DataFrame, keys: list | None = None) -> np.ndarray:
    """The row order :func:`input_digest` hashes in: a stable sort by ``keys``, the first
    three columns (case, period, report; None: ``records``' own), missing values last, as
    ``DataFrame.sort_values`` orders them (:func:`~medanon.data.records.stable_sort_order`,
    the super records' sort: text keyed or ranked per distinct value, anything else sorted
    by pandas)."""
    order = stable_sort_order(records, list(records.columns[:3]) if keys is None else keys)
    return np.arange(len(records)) if order is None else order


def _hash_values(digest: hashlib._Hash, values: list, width: str) -> None:
    """Feed a column's distinct values to ``digest``, tagged with how they were written: all
    text (``str``), all tuples of text (``tuple``, :func:`_hash_terms`: each tuple's size, the
    distinct items, each item's number among them), or anything else (``repr``: each value's
    type and repr). ``width``: the bytes of a number (:func:`_code_width`)."""
    if not values or pd.api.types.infer_dtype(values, skipna=False) == "string":
        _hash_part(digest, "str")
        _hash_texts(digest, values)
        return
    # the set of their types, made in C, rather than a generator's test per value
    if set(map(type, values)) == {tuple}:
        items = list(itertools.chain.from_iterable(values))
        try:   # only when every item is text (a str, as infer_dtype's "string")
            "".join(items)
            text = True
        except TypeError:
            text = False
        if text:
            number, terms = pd.factorize(np.array(items, dtype=object)) if items else (
                np.zeros(0, dtype=np.int64), np.empty(0, dtype=object))
            _hash_terms(digest, len(values),
                        np.fromiter(map(len, values), dtype=np.int64, count=len(values)),
                        number, list(terms), width)
            return
    _hash_part(digest, "repr")
    _hash_texts(digest, [_value_text(v) for v in values])


def _hash_texts(digest: hashlib._Hash, texts: list[str], joined: str | None = None) -> None:
    """Feed ``texts`` to ``digest``: how many, each one's length in characters, then their
    UTF-8 bytes joined (the lengths split the join again, so no two lists feed the same);
    ``joined`` is their join when the caller made it already."""
    digest.update(len(texts).to_bytes(8, "little"))
    digest.update(np.fromiter(map(len, texts), dtype="<i8", count=len(texts)).tobytes())
    digest.update(("".join(texts) if joined is None else joined).encode("utf-8", "surrogatepass"))


def _hash_part(digest: hashlib._Hash, text: str) -> None:
    """Feed ``text`` to ``digest`` with its length first (no two sequences of parts collide)."""
    data = text.encode("utf-8", "surrogatepass")
    digest.update(len(data).to_bytes(8, "little"))
    digest.update(data)


def _value_text(value: object) -> str:
    """A distinct cell's type and repr (numpy scalars as the Python values they hold, so the
    text does not depend on numpy's repr)."""
    if isinstance(value, tuple):
        value = tuple(v.item() if isinstance(v, np.generic) else v for v in value)
    elif isinstance(value, np.generic):
        value = value.item()
    return f"{type(value).__name__}:{value!r}"


def build_manifest(schema: Schema, hierarchies: Mapping[str, Taxonomy], method: Anonymizer,
                   period: str, rng: Randomness, *, result: AnonymizationResult, rows: pd.DataFrame,
                   n_reports: int, final: bool = False) -> dict:
    """The manifest of one release (``design.md``: method, parameters, hierarchies, counts, ...).

    It holds no hash of the input and none of ``result.private_details``. The guarantee texts
    come from the privacy-model object the manifest declares (read back from the manifest
    itself, as any verifier will read it), never from text typed per method. ``final`` marks
    the series' final release (``method.final``, :func:`prepare_release`).
    """
    # the entries the steps below add to, each with its own type; the manifest keeps them in
    # this key order
    method_entry: dict[str, object] = {
        "name": method.name, "parameters": method.parameters(),
        "privacy_model": method.privacy_model, "guarantee": method.guarantee}
    if final:   # before the model is read back: its texts and checks depend on it
        method_entry["final"] = True
    columns: dict[str, object] = {
        "qids": [{"name": q.name, "kind": q.kind, "hierarchy": q.hierarchy} for q in schema.qids],
        "sensitive": list(schema.sensitive), "multi": list(schema.multi),
        "insensitive": list(schema.insensitive), "dates": dict(schema.dates),
        "withheld": list(schema.identifiers + schema.private)}
    privacy_spent = _privacy_spent(method, schema, rng, result.privacy_losses)
    manifest: dict[str, object] = {
        "format": MANIFEST_FORMAT,
        "period": period,
        "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": method_entry,
        "columns": columns,
        "hierarchies": {name: {"layout": "arx", "text": write_arx(tax)}
                        for name, tax in hierarchies.items()},
        "counts": {"cases": len(rows), "reports": n_reports, "groups": result.n_groups,
                   "suppressed": result.suppressed, "suppressed_terms": result.suppressed_terms,
                   "counterfeit": result.counterfeit},
        "details": result.details,
        "privacy_spent": privacy_spent,
        "rng": rng.describe(),
        "library": {"name": "medanon", "version": __version__},
        # filled in by the verify gate before the release is published
        "verification": {"verdict": "not-run"},
    }
    perturbed = (result.details or {}).get("perturbed_qids") or ()
    assert isinstance(perturbed, (list, tuple))  # the method's list of QID names, when any
    roles = column_roles(columns, perturbed=perturbed, protected=method.name != "none")
    columns["roles"] = roles
    check_roles(list(rows.columns), roles, where=f"Release {period}")
    model = model_from_manifest(manifest, period)
    if model is not None:
        method_entry.update(guarantee=model.guarantee, does_not_guarantee=model.not_protected,
                            model=model.to_manifest())
        if privacy_spent.get("epsilon") is not None:
            privacy_spent.update(guarantee=model.guarantee,
                                 does_not_guarantee=model.not_protected)
    return manifest


def ingest_entry(report: Mapping | None, *, dp: bool) -> tuple[dict, dict]:
    """What a manifest says about the period's ingest (``manifest["ingest"]``), and what only
    the operator keeps of it.

    Every manifest says whether reports lacking a value were kept (``kept_missing``) and which
    columns that filter reads (``required``: the schema's QIDs and sensitive columns). What
    ingest took out before the method ran (reports dropped for missing values, in total and per
    column; cases FDA withdrew, its DELETE list; superseded case versions) is counted in the
    operator-only facts (``ingest``) only: the counts are functions of the private records that
    no mechanism accounts for and no published row recomputes (issue 41; before it, a release
    without an ε published them).

    Args:
        report: The period's ingest report (:meth:`FaersQuarter.report_dict`, as the store keeps
            it); empty or None for records given without one (no FAERS source).
        dp: Whether the release spends ε.
    """
    report = dict(report or {})
    if "kept_missing" not in report:
        return {"kept_missing": None, "note": "records given without a FAERS ingest report"}, {}
    missing = dict(report.get("missing") or {})
    public: dict = {"kept_missing": bool(report["kept_missing"]),
                    "required": list(report.get("required") or missing)}
    counts = {"dropped_reports": int(report.get("dropped_reports") or 0),
              "dropped_by_column": ({} if report["kept_missing"]
                                    else {k: int(v) for k, v in missing.items()}),
              "deleted_reports": int(report.get("deleted_reports") or 0),
              "superseded_reports": int(report.get("superseded_reports") or 0)}
    # issue 41: no release publishes them (before, a release without an ε did); ``dp`` is kept
    # for callers
    public["counts"] = "operator-only: no release publishes a count of its input"
    return public, {"ingest": counts}


def _privacy_spent(method: Anonymizer, schema: Schema, rng: Randomness,
                   losses: Sequence[PrivacyLoss]) -> dict:
    statement = method.privacy_statement(schema, losses)
    if statement is None:
        return {"epsilon": None, "delta": None}
    return {**statement, "rng_kind": rng.kind}


LEDGER_COLUMNS = ["case_id", "mechanism", "epsilon", "delta", "epsilon_exact", "dp"]


def ledger_entries(cases: pd.Series, charges: Sequence[Charge], *, dp: bool = True) -> pd.DataFrame:
    """The ledger rows of a release, from what its mechanisms reported: one row per case and
    report that charged it (a mechanism that ran twice on a case gives two rows).

    Args:
        cases: The case ids of the units the charges name, in unit order (the super records
            given to the method).
        charges: What the mechanisms that ran reported (``AnonymizationResult.privacy_charges``).
        dp: False marks a nominal ε without an ε-DP claim (PPMS-DP's paper variant): the ledger
            keeps the row but never adds it to a case's ε total (``accounting.ledger``).

    Rows come grouped by mechanism and target, in the order they first ran, cases in unit order.
    """
    ids = cases.astype(str).to_numpy()
    frames = []
    for loss, counts in unit_counts(charges, len(ids)):
        charged = np.repeat(ids, counts)
        if len(charged):
            frames.append(pd.DataFrame({
                "case_id": charged, "mechanism": f"{loss.mechanism}:{loss.target}",
                "epsilon": float(loss.epsilon), "delta": float(loss.delta),
                "epsilon_exact": format_epsilon(loss.epsilon), "dp": bool(dp)}))
    if not frames:
        return pd.DataFrame(columns=LEDGER_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def _check_case_budget(method: Anonymizer, schema: Schema, case_budget: Budget | None) -> None:
    """A per-case budget needs a method whose ε carries an ε-DP claim."""
    if case_budget is None:
        return
    if not method.planned_losses(schema):
        raise ValidationError(f"A per-case budget (--case-budget) applies to differentially "
                              f"private methods; method {method.name!r} spends no epsilon.")
    if not method.claims_dp:
        raise ValidationError(f"A per-case budget (--case-budget) bounds epsilon-DP spending; "
                              f"method {method.name!r} with these parameters makes no epsilon-DP "
                              f"claim (its epsilon is a noise-scale parameter, e.g. --dp-variant "
                              f"paper), so there is nothing to budget. Use --dp-variant strict.")


def _apply_case_budget(schema: Schema, ledger: pd.DataFrame, method: Anonymizer, label: str,
                       records: pd.DataFrame, case_budget: Budget,
                       on_case_budget: str) -> tuple[pd.DataFrame, dict]:
    """Refuse, or withhold the cases of ``records`` that this release would take over budget.

    What it records (cases over budget, withheld) depends on which cases the earlier releases
    held, never on the values of a case: it is published (``privacy_spent.case_budget``).
    """
    losses = method.planned_losses(schema)
    spend = compose(losses).epsilon
    ids = records[schema.case_id].astype(str)
    over = cases_over_budget(ledger, ids.unique(), spend, case_budget)
    entry = {"epsilon": format_epsilon(case_budget.epsilon), "spend_per_case": format_epsilon(spend),
             "action": on_case_budget, "over_budget": len(over)}
    if not over:
        return records, entry
    if on_case_budget == "refuse":
        shown = ", ".join(over[:_SHOWN])
        more = f" (and {len(over) - _SHOWN} more)" if len(over) > _SHOWN else ""
        raise BudgetExceeded(
            f"Period {label} was not published: {len(over)} case(s) would exceed the per-case "
            f"budget {case_budget} (this release spends epsilon {format_epsilon(spend)} per case): "
            f"{shown}{more}. Raise --case-budget, or withhold those cases with --on-case-budget "
            "suppress (recorded in the manifest).")
    entry["withheld_cases"] = len(over)
    return records[~ids.isin(set(over))], entry


@dataclass(frozen=True)
class PreparedRelease:
    """One period's release, ready to be written to a store (see :func:`prepare_release`).

    Attributes:
        period: The period label.
        rows: The published rows (release format, strings).
        manifest: The published manifest (verified by the gate).
        ledger: The ledger rows this release charges (store only).
        operator: Operator-only facts for the store's ``release_private`` (never published):
            ``input_sha256`` and ``private_details``.
        result: The method's result (operator only).
        verdict: The gate's verdict on the series it was gated against with this release
            (all of it, or what the release links to: :meth:`PublishedSeries.linked`).
        seconds: Wall-clock seconds the method's ``anonymize`` took (not the super records, the
            manifest or the gate): what benchmarks and experiments time. Never published.
        series: The series with this release added (set by :func:`release_steps` when it
            holds the series in memory).
    """

    period: str
    rows: pd.DataFrame
    manifest: dict
    ledger: pd.DataFrame
    operator: dict
    result: AnonymizationResult
    verdict: SeriesVerdict | None = None
    seconds: float = 0.0
    series: PublishedSeries | None = field(default=None, repr=False)

    @property
    def operator_manifest(self) -> dict:
        """The manifest with the operator-only facts put back where they were (input and
        withheld counts, ...; ``published.manifest_roles``): what the operator's summaries and
        reports read. Never published."""
        return operator_view(self.manifest,
                             (self.operator.get("private_details") or {}).get(MANIFEST_FACTS))


def _unordered(supers, records: pd.DataFrame, schema: Schema, rng: Randomness,
               super_of_row: np.ndarray | None = None, *, canonical: np.ndarray | None = None):
    """The super records in an order that follows neither the CaseIDs nor the input's rows.

    ``combine_super_records`` orders the cases by CaseID, and FAERS numbers cases in order of
    receipt (so do its files' rows): the published row order, the group numbering (groups are
    numbered by their first case) and every tie an algorithm breaks by position would follow
    receipt order (issue 41). The cases are put in the order of their first row in
    ``records`` (which does not read the CaseID values), then shuffled by one permutation drawn
    from ``rng``'s generator: a renumbering of the CaseIDs with the rows left in place gives the
    same order, and no order of the input survives into the release.

    ``super_of_row`` (:func:`~medanon.data.records.super_records_of_rows`), when given, is the
    super record of each row of ``records``: when the super records' CaseIDs are distinct
    texts that stripping leaves as they are (one period, no blank around a CaseID), each
    CaseID's first row is its super record's first row, and the order is read from it
    without hashing 450k CaseID texts twice (issue 43). ``canonical``, when given, is that
    order (the super records' positions, by their first row in ``records``), which the
    caller knows (:func:`_pseudonymous_super_records`).
    """
    frame = supers.frame
    n = len(frame)
    if n < 2:
        return supers
    if canonical is None and super_of_row is not None and len(super_of_row) == len(records):
        canonical = _first_row_order(frame, schema, super_of_row)
    if canonical is None:
        first = pd.unique(records[schema.case_id].astype(str).str.strip().to_numpy())
        position = pd.Series(np.arange(len(first)), index=first)
        canonical = np.argsort(position.reindex(frame[schema.case_id].astype(str).to_numpy())
                               .to_numpy(), kind="stable")
    order = canonical[rng.generator.permutation(n)]
    return replace(supers, frame=frame.iloc[order].reset_index(drop=True))


def _pseudonymous_super_records(records: pd.DataFrame | CodedRecords, schema: Schema,
                                hierarchies: Mapping[str, Taxonomy], rng: Randomness,
                                case_ids: CaseIds, terms: Mapping[str, TermCodes] | None):
    """The super records of ``records`` (real CaseIDs) as :func:`super_records_of_rows` then
    :func:`_unordered` make them of the records with their published CaseIDs
    (``case_ids``, pseudonymous), or None (nothing drawn from ``rng``) when that need not be
    so: two of the records' distinct CaseIDs would be published as one (they strip alike, or
    their pseudonyms clash, which the release's own check refuses before this).

    Otherwise the real CaseIDs group the rows as their pseudonyms do (one CaseID, one
    pseudonym), and the super records are the same, each made of the same rows in the same
    order: only their order by CaseID differs, which :func:`_unordered` replaces by the order
    of their first rows, the same super records in the same order either way. Grouped by the
    real CaseIDs, as the store gives them (sorted), the records need no sort, and each super
    record's pseudonym is looked up in the order the release's check hashed them: a 450k
    quarter's super records cost 0.95 -> 0.63 s CPU (issue 43).
    """
    supers, super_of_row = super_records_of_rows(records, schema, hierarchies,
                                                 report_ids=False, terms=terms)
    frame = supers.frame
    published = case_ids.distinct_of(frame[schema.case_id].to_numpy())
    if published is None:
        return None
    # the super records by their first row (each row's super record, in order of appearance)
    canonical = pd.unique(super_of_row)
    if len(canonical) != len(frame):   # (every super record has a row)
        return None
    frame = frame.copy(deep=False)   # the other columns are shared, not copied
    frame[schema.case_id] = published
    # (the records are not read with the canonical order given)
    base = records.base if isinstance(records, CodedRecords) else records
    return _unordered(replace(supers, frame=frame), base, schema, rng, canonical=canonical)


def _first_row_order(frame: pd.DataFrame, schema: Schema,
                     super_of_row: np.ndarray) -> np.ndarray | None:
    """The super records in the order of their first row (``super_of_row``: the super record
    of each row), or None when that need not be the order of their CaseIDs' first rows
    (stripped, as :func:`_unordered` reads them): a CaseID in two periods, or a CaseID with
    whitespace around it (another super record's CaseID could strip to it).

    The super records are sorted by period then CaseID, one per (period, CaseID): within one
    period their CaseIDs are distinct. A text without a space that ``isprintable`` holds no
    whitespace at all (every other whitespace character is unprintable), so strips to itself.
    """
    periods = frame[schema.period].to_numpy()
    if not (periods == periods[0]).all():
        return None
    cases = frame[schema.case_id].astype(str).tolist()
    joined = ",".join(cases)
    if " " in joined or not joined.isprintable():
        return None
    order = pd.unique(super_of_row)
    return order if len(order) == len(frame) else None


def prepare_release(schema: Schema, method: Anonymizer, label: str,
                    records: (pd.DataFrame | CodedRecords
                             | Callable[[], pd.DataFrame | CodedRecords]),
                    rng: Randomness, *, series: PublishedSeries,
                    hierarchies: Mapping[str, Taxonomy] | None = None,
                    ledger: pd.DataFrame | None = None, case_budget: Budget | None = None,
                    on_case_budget: str = "refuse", next_cases: Collection[str] | None = None,
                    before: SeriesVerdict | None = None,
                    publish_despite_violations: bool = False,
                    ingest_report: Mapping | None = None, final: bool = False,
                    case_ids: CaseIds | None = None,
                    highest_earlier: str | None = None) -> PreparedRelease:
    """Anonymize one period's records and build what is published, without a store.

    This is the flow :func:`publish_periods` (and so ``medanon release``) runs for every period:
    case budget, super records, the method, release rows, manifest, verify gate, ledger rows.

    Args:
        schema: The data's schema.
        method: The anonymization method.
        label: The period.
        records: The period's report-level records (private), or a function that reads them:
            then the release holds them only until its super records are made (a 450k-case
            quarter's records are about a third of a release's peak memory). Either may be
            ``CodedRecords`` (``ReleaseStore.coded_records``): the records and the codes of
            their list columns, which the super records and the input digest then read.
        rng: The run's randomness (:class:`~medanon.random.Randomness`), recorded in the manifest.
        series: The releases published so far (``published.series.empty_series`` for none),
            or what this period links to of them (:meth:`PublishedSeries.linked`): the method,
            the derived dates and the gate read only the rows of the period's cases and of
            their groups.
        hierarchies: The schema's hierarchies (loaded when None).
        ledger: The privacy ledger so far (for ``case_budget``).
        case_budget, on_case_budget: As for :func:`publish_periods`.
        next_cases: The next period's case ids, for methods that need them (HA).
        before: The gate's verdict on ``series``, when known.
        publish_despite_violations: Keep a release the gate finds violating (recorded).
        ingest_report: The period's ingest report, told in the manifest (:func:`ingest_entry`).
        final: Publish this period as the series' final release (HA): no next period exists,
            so it is grouped as if none of its cases went on (``next_cases`` empty, every
            record md) and the manifest says ``method.final``; its model
            (:class:`~medanon.models.periodic.PPMSAlphaModel`) states that the MD view holds
            only while no later release exists, and :func:`~medanon.pipeline.checks.check_final`
            refuses one.
        case_ids: How CaseIDs are published (:mod:`.case_ids`): ``records`` and ``next_cases``
            hold the real ones and the release the published ones, which ``series`` holds too.
            None: the records' CaseIDs are published as they are (``real``).
        highest_earlier: Under ``real`` CaseIDs, the highest CaseID published in the series
            before this period, when ``series`` may not hold it (a linked part of the history);
            the manifest records the higher of it and the highest CaseID of ``series``' earlier
            releases (``case_ids.highest_earlier``, read by the gate's CaseID-order rule).

    Raises:
        ValidationError: a case budget for a method without an ε-DP claim; ``final`` for a
            method that does not wait for the next period, or with ``next_cases``.
        BudgetExceeded: a case would exceed ``case_budget`` and ``on_case_budget`` is refuse.
        PrivacyViolation: the gate finds a violation (without ``publish_despite_violations``).
        InternalError: the losses the method's mechanisms reported differ from its plan
            (:meth:`Anonymizer.planned_losses`, the budget pre-check).
    """
    _check_case_budget(method, schema, case_budget)
    if final:
        if not method.needs_next_period or next_cases is not None:
            raise ValidationError(f"The 'final' parameter of prepare_release applies to a method "
                                  f"that waits for the next period, without 'next_cases'; got "
                                  f"method {method.name!r}"
                                  f"{' with next_cases' if next_cases is not None else ''}.")
        next_cases = frozenset()   # the series ends: no case goes on
    hierarchies = schema.load_hierarchies() if hierarchies is None else hierarchies
    records = records() if callable(records) else records
    # the codes of the list columns, when the store read them as codes: the super records'
    # unions and the input digest work on them (issue 43)
    terms: Mapping[str, TermCodes] | None = None
    coded: CodedRecords | None = None
    if isinstance(records, CodedRecords):
        # The list columns the store read as codes are made tuples only where a step reads
        # them as a frame's cells (a case budget, CaseIDs published as read by a pseudonym
        # clash): the super records and the input digest read the codes (issue 43).
        coded, terms = records, records.terms
        records = coded.base
    real_records = records
    case_ids = CaseIds.real() if case_ids is None else case_ids
    pseudonymous = case_ids.mode == "pseudonym"   # then the release sees published CaseIDs only
    budget_entry = None
    # Without a case budget (which reads the ledger's published CaseIDs per record), the
    # super records are made from the real CaseIDs and then given their published ones: the
    # same super records in the same order (_pseudonymous_super_records)
    supers = (_pseudonymous_super_records(records if coded is None else coded, schema,
                                          hierarchies, rng, case_ids, terms)
              if pseudonymous and case_budget is None else None)
    if supers is None:
        if coded is not None and (pseudonymous or case_budget is not None):
            records = coded.frame   # (the tuples, for the steps below that map the rows)
        if pseudonymous:   # everything below sees the published CaseIDs only
            records = case_ids.records(records, schema.case_id)
        super_terms = terms   # the codes hold the super records' rows, unless cases go over budget
        if case_budget is not None:
            if ledger is None:
                ledger = pd.DataFrame(columns=["period", *LEDGER_COLUMNS])
            budgeted, budget_entry = _apply_case_budget(schema, ledger, method, label, records,
                                                        case_budget, on_case_budget)
            if budgeted is not records:
                super_terms = None
            records = budgeted
        # (no report ids: nothing of a release reads them)
        supers, super_of_row = super_records_of_rows(
            coded if coded is not None and records is coded.base else records, schema,
            hierarchies, report_ids=False, terms=super_terms)
        supers = _unordered(supers, records, schema, rng, super_of_row)
        del super_of_row, super_terms
    if pseudonymous:
        # (after the period's own CaseIDs, which are then looked up in the order the release's
        # check hashed them)
        if next_cases is not None:
            next_cases = set(case_ids.of(sorted(next_cases)))
        case_ids.forget()   # every CaseID this period publishes is mapped
    # what is read of the records later, taken now so that they can be freed before the method
    # runs (unless the caller holds them)
    n_reports = len(records)
    digest = input_digest(real_records if coded is None else coded, terms=terms)
    del records, real_records, terms, coded
    previous = list(series.releases.values()) if method.periodic else []
    started = time.perf_counter()
    result = method.anonymize(supers, previous, rng=rng, next_cases=next_cases)
    seconds = time.perf_counter() - started
    # the super records' case ids are all the ledger reads of them: the rest is freed before
    # the published rows and the gate's views are made
    super_cases = supers.frame[schema.case_id]
    del supers
    # what the method freed goes back to the system before the rows and the gate's views are
    # made: else they come on top of its high-water mark (a 450k quarter: 1,069 -> 946 MiB)
    give_back_freed_memory()
    # What ran must be what the budget pre-check assumed (exactly, for an epsilon-DP claim;
    # never more, for a nominal epsilon): else the ledger and the pre-check disagree.
    check_plan(method.planned_losses(schema), result.privacy_charges, units=len(super_cases),
               exact=method.claims_dp, owner=f"{method.name} on period {label}")
    rows = to_published_rows(result.table, schema)
    # the candidate's CaseIDs are read and hashed, and probed with each earlier release's,
    # once for its dates and the gate, which makes the same probes (published.cells.reading_once;
    # rows gains its date columns only, not read before; issue 43)
    with reading_once():
        if method.name != "none" and schema.dates:  # dates derived from the series (published.roles)
            earlier = {p: r for p, r in series.releases.items()
                       if parse_period(p).ordinal < parse_period(label).ordinal}
            for name, values in derive_release_dates(rows, schema.dates, label, earlier,
                                                     getattr(method, "lifespan", None)).items():
                rows[name] = values
        manifest = build_manifest(schema, hierarchies, method, label, rng, result=result, rows=rows,
                                  n_reports=n_reports, final=final)
        if case_ids.mode == "real":   # what the rule reads: the given value and the series' rows
            here = parse_period(label).ordinal
            highest_earlier = highest_case_id([
                *([highest_earlier] if highest_earlier is not None else []),
                *(c for p, r in series.releases.items()
                  if parse_period(p).ordinal < here and len(r) for c in r["case_id"].astype(str))])
        manifest["case_ids"] = case_ids_entry(case_ids.mode, highest_earlier)
        manifest["columns"]["roles"]["case_id"] = case_id_role(case_ids.mode)
        if budget_entry is not None:
            manifest["privacy_spent"]["case_budget"] = budget_entry
            manifest["counts"]["suppressed"] += budget_entry.get("withheld_cases", 0)
        manifest["ingest"], ingest_private = ingest_entry(
            ingest_report, dp=manifest["privacy_spent"].get("epsilon") is not None)
        # Every leaf without a public role (input and withheld counts, term counts, ...) moves to
        # the operator-only facts before the gate reads the manifest (issue 41; published.manifest_roles)
        manifest_facts = split_operator_facts(manifest)
        try:
            checked = gate(series, label, rows, manifest, before=before,
                           candidate_terms=result.table_terms)
            manifest["verification"], verdict = checked.verification, checked.verdict
        except PrivacyViolation as exc:
            if not publish_despite_violations:
                if case_ids.mode == "real":
                    error = PrivacyViolation(
                        f"{exc} This series publishes real CaseIDs (--case-ids real): FAERS numbers "
                        f"cases in order of receipt, so a case first published in {label} whose "
                        f"CaseID is below one published earlier was received before {label}, and "
                        f"the gate excludes it from the L-attack's candidates as the adversary "
                        f"would (the method groups without that knowledge). Publish with "
                        f"--case-ids pseudonym (the default, in a new store) to publish linkage "
                        f"only.")
                    error.verification, error.verdict = exc.verification, exc.verdict
                    raise error from None
                raise
            # the gate's refusal carries its manifest entry and what it found (verify.gate)
            entry, found = exc.verification, exc.verdict
            assert entry is not None and isinstance(found, SeriesVerdict)
            manifest["verification"] = {**entry, "published_despite_violations": True}
            verdict = found
    # Every case a mechanism read is charged, also one the method could not place (strict: its
    # privatized values steered the grouping of the others).
    entries = ledger_entries(super_cases, result.privacy_charges,
                             dp=method.claims_dp)
    operator = {"input_sha256": digest,
                "private_details": {**result.private_details, **ingest_private,
                                    "input_digest": INPUT_DIGEST_VERSION,
                                    MANIFEST_FACTS: manifest_facts}}
    # the table's codes were read by the gate: not held until the write
    result = replace(result, table_terms=None)
    return PreparedRelease(label, rows, manifest, entries, operator, result, verdict, seconds)


def release_steps(schema: Schema, method: Anonymizer, periods: Iterable[str],
                  records: Callable[[str], pd.DataFrame], rng: Randomness, *,
                  series: PublishedSeries, available: Collection[str],
                  linked: LinkedHistory | None = None,
                  hierarchies: Mapping[str, Taxonomy] | None = None,
                  ledger: Callable[[], pd.DataFrame] | None = None,
                  case_budget: Budget | None = None, on_case_budget: str = "refuse",
                  publish_despite_violations: bool = False,
                  acknowledged: Sequence[str] = (),
                  ingest: Callable[[str], Mapping] | None = None,
                  final: bool = False, case_ids: CaseIds | None = None,
                  highest_earlier: str | None = None,
                  period_case_ids: Callable[[str], Iterable[str]] | None = None,
                  coded_records: Callable[[str], CodedRecords] | None = None
                  ) -> Iterator[PreparedRelease]:
    """The publish loop: :func:`prepare_release` for each period in time order, each against
    the series with every release before it (the one loop behind the store and the
    store-free ``medanon.Publisher``).

    A release is yielded before the next period is prepared, so a caller that writes it (the
    store, one transaction per period) has written it when the loop resumes: ``ledger`` is read
    again for every period and sees the charges just stored, and a failure leaves the earlier
    releases written.

    Each period is anonymized and gated against what it links to, never the whole history
    (issue 30): the earlier rows of its cases, the groups those sit in and, under 002's
    MD-attack, the whole previous release (:meth:`PublishedSeries.linked`). Its cost grows with
    the cases the period shares with the history, not with the number of releases.

    Args:
        schema, method, rng: As for :func:`prepare_release`.
        periods: The periods to publish (put in time order here).
        records: The report-level records of a period (also read for the next period's case ids
            when the method needs them).
        series: The releases published before ``periods``. Each release is added to it and
            yielded with it (``PreparedRelease.series``) unless ``linked`` is given.
        linked: Where the releases published so far are read from, when not from ``series``
            (a store: :func:`store_history`): called with a period's case ids and its label,
            it returns what the period links to. The yielded releases then carry no series.
        available: Every period ``records`` can give. A method that needs the next period
            (HA: an md-record is a case absent from it) stops before the first period whose
            next one is not available: that release waits for the next quarter.
        hierarchies: The schema's hierarchies (loaded when None).
        ledger: Returns the privacy ledger so far; read per period, only with ``case_budget``.
        case_budget, on_case_budget, publish_despite_violations: As for
            :func:`prepare_release`.
        acknowledged: The safety overrides the operator gave (:mod:`.checks`), recorded in each
            manifest's ``method.acknowledged`` with those given to the method itself
            (:attr:`Anonymizer.acknowledged`, e.g. PPMS-DP's ``allow_tiny_epsilon``).
        ingest: Returns a period's ingest report (what the store keeps), told in its manifest
            (:func:`ingest_entry`); None: the manifests say there was none.
        final: The last of ``periods`` is the series' final release (HA, :func:`prepare_release`),
            published although its next period is not available; the callers check first that
            it is the latest period the data holds (:func:`~medanon.pipeline.checks.check_final`).
        case_ids: How CaseIDs are published (:class:`~medanon.pipeline.case_ids.CaseIds`);
            ``records`` gives the real ones, ``series`` and ``linked`` hold the published ones.
            None: published as they are.
        highest_earlier: Under real CaseIDs, the highest CaseID published before ``periods``
            (for the gate's CaseID-order rule; kept up to date release by release).
        period_case_ids: The real case ids of a period, when they are cheaper to get than its
            records (a store: one SQL query); the next period's are read with it (None: from
            ``records``).
        coded_records: With ``period_case_ids``, what reads the period being prepared instead
            of ``records``: its records with the codes of their list columns
            (``ReleaseStore.coded_records``; the same records, read as codes where the store
            can). None: ``records``.

    Raises:
        As :func:`prepare_release`, for the period being prepared.
    """
    hierarchies = schema.load_hierarchies() if hierarchies is None else hierarchies
    known = set(available)
    acknowledged = list(dict.fromkeys([*acknowledged, *method.acknowledged]))
    ordered = sorted(periods, key=parse_period)
    for label in ordered:
        next_cases, last_final = None, final and label == ordered[-1]
        if method.needs_next_period and not last_final:
            following = parse_period(label).shift(1).label
            if following not in known:
                return
            next_cases = (set(map(str, period_case_ids(following))) if period_case_ids
                          is not None else set(records(following)[schema.case_id].astype(str)))
        period_records: pd.DataFrame | Callable[[], pd.DataFrame | CodedRecords]
        if period_case_ids is not None:
            # the records are read by prepare_release, which alone holds them and frees them
            # once its super records are made (with their codes, when ``coded_records`` reads)
            cases = np.asarray(list(map(str, period_case_ids(label))), dtype=object)
            period_records = functools.partial(
                coded_records if coded_records is not None else records, label)
        else:
            period_records = records(label)
            cases = period_records[schema.case_id].astype(str).unique()
        if case_ids is not None and case_ids.mode == "pseudonym":
            cases = case_ids.of(cases)
        history = (series.linked(cases, whole=md_whole(label, series.manifests)) if linked is None
                   else linked(cases, label))
        prepared = prepare_release(
            schema, method, label, period_records, rng, series=history, hierarchies=hierarchies,
            ledger=ledger() if ledger is not None and case_budget is not None else None,
            case_budget=case_budget, on_case_budget=on_case_budget, next_cases=next_cases,
            publish_despite_violations=publish_despite_violations,
            ingest_report=ingest(label) if ingest is not None else None, final=last_final,
            case_ids=case_ids, highest_earlier=highest_earlier)
        if case_ids is None or case_ids.mode == "real":
            highest_earlier = highest_case_id([*([highest_earlier] if highest_earlier else []),
                                               *prepared.rows["case_id"].tolist()])
        if acknowledged:  # operator choices, not facts of the data (pipeline.checks)
            prepared.manifest["method"]["acknowledged"] = list(acknowledged)
        if linked is None:
            series = series.with_release(label, prepared.rows, prepared.manifest)
        yield replace(prepared, series=series if linked is None else None)


def _check_pseudonyms(store: ReleaseStore, case_ids: CaseIds,
                      labels: Sequence[str]) -> tuple[list[str], PublishedSeed | None]:
    """Refuse a release whose CaseIDs would share a pseudonym with another CaseID of the series.

    Every release checked that the real CaseIDs of the periods it released and of those
    released before map to distinct pseudonyms, so it suffices to check the CaseIDs of
    ``labels`` among themselves and, those not in a released period (the new cases), against
    the pseudonyms published so far. The cost follows the periods released, not the store
    (hashing every ingested CaseID at every release grew with the series: issue 43); the
    pseudonyms computed here are the ones the release then publishes (``case_ids`` keeps them).

    Returns:
        The real CaseIDs of ``labels`` (:meth:`ReleaseStore.ingested_case_ids`), which a
        single-period release then publishes without reading them again, and their
        pseudonyms with which of them are published (None when nothing is published): only
        those select rows of the history (:func:`_linked_of_published`).

    Raises:
        StoreError: naming the two CaseIDs (:func:`check_injective`).
    """
    where = f"Store {str(store.path)!r}"
    new = store.ingested_case_ids(labels)
    mapped = case_ids.checked(new, where=where)
    released = store.published_periods()
    if not released or not new:
        return new, None
    # the pseudonyms of ``labels`` already published: those of follow-ups, unless a new case
    # shares one (first the published ones, a tenth of a quarter, then which of them follow up)
    published = store.published_mask(mapped)
    if not published.any():
        return new, PublishedSeed(mapped, published)
    shared = np.asarray(new, dtype=object)[published]
    followed = store.ingested_case_ids(released, among=shared)
    if pd.Index(shared, dtype=object).isin(followed).all():
        return new, PublishedSeed(mapped, published)
    fresh = ~pd.Index(new, dtype=object).isin(followed) & published
    # a new CaseID takes the pseudonym of a released case (about n^2 / 1.8e16): name the two
    every = [*store.ingested_case_ids(released), *np.asarray(new, dtype=object)[fresh].tolist()]
    check_injective(every, case_ids.of(every), where=where)
    raise StoreError(f"{where}: a new CaseID of {', '.join(labels)} has the keyed pseudonym of "
                     f"a published case. Nothing was published; start the series in a new "
                     f"store (a new key), or publish with --case-ids real.")


@dataclass(frozen=True)
class PublishedSeed:
    """A period's pseudonyms as :func:`_check_pseudonyms` read them, and which of them are
    published (a mask in their order)."""

    pseudonyms: np.ndarray
    mask: np.ndarray


def _linked_of_published(linked: LinkedHistory,
                         published: dict[str, PublishedSeed]) -> LinkedHistory:
    """``linked``, given for a period in ``published`` only the CaseIDs its mask there marks
    (:func:`_check_pseudonyms`: those with a published pseudonym), once.

    A CaseID never published selects no row of the history (:meth:`ReleaseStore.linked_rows`:
    the rows of the seed's cases, of their groups' other cases, and of whole periods), so the
    linked rows are the same; the store then hashes a quarter's follow-ups (45k of a 450k
    quarter 2) instead of all its CaseIDs, which the check has just looked up (issue 43). The
    mask is applied only to the very pseudonyms it was made for, in the same order (compared
    cell by cell: 0.01 s for 450k); any other seed is given whole, so a change in how a
    release hands its CaseIDs over can cost time but never drop a link from the gate.
    """
    def of(cases: Collection[str], label: str) -> PublishedSeries:
        seed = published.pop(label, None)
        if seed is not None and len(seed.pseudonyms) == len(cases):
            given = np.asarray(cases, dtype=object)
            if (given == seed.pseudonyms).all():
                cases = given[seed.mask]
        return linked(cases, label)

    return of


def publish_periods(store: ReleaseStore, method: Anonymizer, periods: Sequence[str], rng: Randomness,
                    *, acknowledged: Acknowledgements = NOTHING_ACKNOWLEDGED,
                    case_budget: Budget | None = None, on_case_budget: str = "refuse",
                    progress: Callable[[str], None] | None = None,
                    per_period_commit: bool = False,
                    pin: Mapping | None = None, final: bool = False,
                    case_ids: str | None = None) -> list[PublishedSummary]:
    """Anonymize and publish each period in order, all in one transaction (every period lands
    or none does) or, with ``per_period_commit``, one transaction per period.

    Before anything is computed, the safety checks of :mod:`medanon.pipeline.checks` run on the
    store's data, each passed only with its acknowledgement in ``acknowledged``
    (:class:`~medanon.pipeline.checks.Acknowledgements`): method ``none`` needs ``unprotected``
    and is refused after a protected release; θ-table terms the data does not hold need
    ``unknown_terms``; passing over a missing or empty period needs ``gap``; a ``lifespan``
    shorter than the longest span of a case in the ingested data needs ``short_lifespan``. The
    overrides given are recorded in each manifest's ``method.acknowledged``. A seeded ``rng``
    needs ``seeded``; a release the gate finds violating is refused unless ``violations``.

    The periods go through :func:`release_steps` (the loop ``medanon.Publisher`` runs too), and
    each release is written with ``store.publish`` (inside the batch) before the next one is
    prepared, so the ledger read for the next period sees its charges.
    DP methods write one ledger row per case and mechanism report (what their mechanisms
    reported while running, :func:`ledger_entries`) in the same transaction.
    With ``case_budget``, a case whose ledger total plus this release's spend would exceed it
    makes the period refused (``on_case_budget="refuse"``) or is withheld (``"suppress"``).
    The input's hash and the method's operator-only details go to the store's
    ``release_private``, never into the manifest. ``pin`` (a series policy record of
    :func:`medanon.pipeline.policy.resolve_policy`) is pinned in the store with the first
    release, in its transaction; a record whose ``history`` has a change (``--change-policy``)
    puts ``change_policy`` in each manifest's ``method.acknowledged``. ``final`` publishes the
    last period as the series' final release (HA; :func:`prepare_release`): it must be the
    latest ingested period, and nothing is published after it
    (:func:`~medanon.pipeline.checks.check_final`). ``case_ids`` (``pseudonym`` or ``real``,
    :mod:`medanon.pipeline.case_ids`) says how CaseIDs are published; None: as the store's
    series does (pseudonyms for a new one). Pseudonyms use the store's key, made and kept with
    the first pseudonymous release.

    Raises:
        ValidationError: a seeded source without ``allow_seeded``; a case budget for a method
            without a DP claim (no ε at all, or the nominal ε of PPMS-DP's paper variant).
        StoreError: see :func:`plan_periods`; ``case_ids`` differs from the series' mode; two
            CaseIDs share a pseudonym.
        BudgetExceeded: a case would exceed ``case_budget`` and ``on_case_budget`` is refuse.
    """
    refuse_seeded_release(rng.seeded, acknowledged.seeded)
    check_choice(on_case_budget, name="on_case_budget", owner="publish_periods",
                 choices=ON_CASE_BUDGET)
    _check_case_budget(method, store.schema, case_budget)
    # DuckDB on this thread alone for the whole release (ReleaseStore.one_thread): its
    # queries are a fifth of a release, and a second thread cost more CPU than it saved
    # (a 450k q2: about 0.5 s of CPU, issue 43)
    with store.one_thread():
        labels = plan_periods(store, periods)
        # before the wait for the next period: an ended series says so, not "ingest the next one"
        checks.check_final(method, labels, store.manifests(), store.ingested_periods(), final=final)
        if method.needs_next_period:
            labels = _with_next_period(store, labels, explicit=bool(periods), method=method.name,
                                       final=final)
        recorded = checks.run_checks(
            method, labels, published=store.manifests(),
            # read only by a check that needs them (scans of every ingested record)
            vocabulary=store.sensitive_vocabulary, longest_span=store.longest_case_span,
            reports={r["period"]: int(r["n_reports"]) for r in store.periods().to_dict("records")},
            acknowledged=acknowledged, schema=store.schema, final=final)
        if pin is not None and pin.get("history") and pin["history"][-1].get("changes"):
            recorded = [*recorded, "change_policy"]
        published_mode = mode_of(store.manifests())
        mode = case_ids or published_mode or "pseudonym"
        if published_mode is not None and mode != published_mode:
            raise StoreError(f"The series in {str(store.path)!r} publishes {published_mode} CaseIDs; "
                             f"a release with {mode} CaseIDs would not link to it (and would pair "
                             f"the two forms of each CaseID). A series keeps one form: start a new "
                             f"store to change it.")
        chosen, new_key = resolve(mode, rng, store.case_key())
        highest = None
        # a period's real CaseIDs already read (by the pseudonyms' check), handed to the loop once
        read_cases: dict[str, list[str]] = {}
        # a period's pseudonyms (in read_cases' order) and which of them are published
        published_seed: dict[str, PublishedSeed] = {}
        if chosen.mode == "pseudonym":
            checked, published = _check_pseudonyms(store, chosen, labels)
            if len(labels) == 1:
                read_cases[labels[0]] = checked
                if published is not None:
                    published_seed[labels[0]] = published
            # the loop pops its period's list and lets it go before the method runs: held here
            # too, a 450k quarter's real CaseIDs (28 MiB) lasted through the method's peak
            del checked, published
        else:
            highest = highest_case_id(c for p in store.published_periods()
                                      for c in store.release_cases(p))
        # the schema's hierarchies, loaded once for this release: the method, the gate and the
        # series views read the same ones
        hierarchies = store.schema.load_hierarchies()

        def read_coded(period: str) -> CodedRecords:
            coded = store.coded_records(period)
            # nothing else of the records is read: their blocks go from DuckDB's cache before
            # the method's peak (as the linked history's do, store_history)
            store.drop_cached_blocks()
            return coded

        steps = release_steps(
            store.schema, method, labels, store.records, rng,
            series=empty_series(store.schema, hierarchies),
            linked=_linked_of_published(store_history(store, hierarchies), published_seed),
            hierarchies=hierarchies,
            available=store.ingested_periods(),
            ledger=store.ledger, case_budget=case_budget, on_case_budget=on_case_budget,
            publish_despite_violations=acknowledged.violations, acknowledged=recorded,
            ingest=store.ingest_report, final=final, case_ids=chosen, highest_earlier=highest,
            period_case_ids=lambda period: (read_cases.pop(period) if period in read_cases
                                            else store.ingested_case_ids([period])),
            coded_records=read_coded)
        summaries = []
        # one transaction for all periods (a failure or Ctrl-C rolls every one back), unless asked
        with contextlib.nullcontext() if per_period_commit else store.batch():
            for prepared in steps:
                store.publish(prepared)
                if new_key is not None:   # operator-only, with the first release that uses it
                    store.keep_case_key(new_key)
                    new_key = None
                if pin is not None:   # with the release it governs (its batch, or its own write)
                    store.pin_policy(pin)
                    pin = None
                result = prepared.result
                table = theta_table_of(prepared.manifest)
                # the operator's summary (never published): counts.suppressed also holds the cases
                # a case budget withheld
                facts = prepared.operator_manifest
                summaries.append(PublishedSummary(
                    prepared.period, len(prepared.rows), result.n_groups,
                    facts["counts"]["suppressed"], method.name,
                    prepared.manifest["verification"]["verdict"],
                    facts["counts"].get("suppressed_terms", 0),
                    unbounded_terms=table.unbounded_terms if table is not None else (),
                    default_unbounded=table is not None and table.default_unbounded,
                    # the operator is warned also of a raise the manifest does not name (a term
                    # that only withheld cases hold, issue 41)
                    caps_raised={**caps_raised(prepared.manifest), **{
                        t: e for t, e in (prepared.operator.get("private_details") or {}).get(
                            "raised_theta_unpublished", {}).items() if "cap" in e}},
                    raised_theta=_raised_theta(prepared)))
                if progress:
                    progress(prepared.period)
        return summaries
