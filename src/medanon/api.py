"""The public API: data -> configured publisher -> verified releases (``import medanon``).

Three objects carry the whole periodic flow, in the shape of the field's libraries (data and
configuration, an anonymizer, a result):

* :class:`Dataset` — the private input: report-level records per period and their schema, from
  FAERS extracts (:meth:`Dataset.from_faers`), a DataFrame (:meth:`Dataset.from_dataframe`) or
  the synthetic generator (:meth:`Dataset.synthetic_faers`).
* :class:`Publisher` — a configured method (``Publisher("ppms++", k=5, theta="frequency")``)
  whose :meth:`Publisher.publish` anonymizes each period against the earlier releases **and
  runs the verify gate**: every :class:`Release` it returns carries the gate's verdict, and a
  violating release is refused (:class:`~medanon.errors.PrivacyViolation`) unless
  ``allow_violations=True``, in which case its verdict says ``violated``.
* :class:`Series` — the published releases: ``verify()``, ``export(folder)``, and
  :meth:`Series.read` for a series folder (audit mode). A store is one destination among
  others: ``store.publish(release)``.

The one-off families have the same shape: a :class:`Table` (one record per individual, paper
004) or :class:`EhrRecords` (diagnosis sequences, paper 003) goes into
``Publisher("ipa", epsilon=1)`` or ``Publisher("clinsimrr", epsilon=1)``, whose ``publish``
returns one :class:`TableRelease` or :class:`EhrRelease`: rows, manifest and the verdict of the
release's privacy model, checked on the rows as ``release.csv`` reads back; ``write(folder)``
writes the folder ``medanon ipa`` / ``medanon clinsim`` write.

Example (the whole flow in ten lines, run as a doctest):

>>> import tempfile, medanon
>>> folder = tempfile.mkdtemp()
>>> data = medanon.Dataset.synthetic_faers(folder + "/faers", periods=3, cases=300, seed=1)
>>> publisher = medanon.Publisher("ppms++", k=5, theta="frequency", on_infeasible="raise-theta",
...                               seed=7)
>>> series = publisher.publish(data)
>>> [release.verdict for release in series.releases_published]
['passed', 'passed', 'passed']
>>> series.verify().ok
True
>>> written = series.export(folder + "/published")
>>> sorted(p.name for p in written)
['2020Q1', '2020Q2', '2020Q3']
"""

from __future__ import annotations

import inspect
import secrets
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, overload

import pandas as pd

from . import _repr
from ._validation import check_fraction, check_int, in_callers_words
from .data.ehr import EhrData
from .data.loaders.faers import FaersQuarter, FaersQuarters
from .data.records import SuperRecords, check_record_values, combine_super_records
from .data.schema import Schema
from .data.tabular import TableSchema, TabularData
from .errors import PrivacyViolation, ValidationError
from .periods import parse_period
from .published.format import read_release_text, write_release_text
from .published.series import PublishedSeries, ReadOnDemand, empty_series, load_series
from .literals import (CaseIdMode, DpVariant, EhrMethodName, Grouping, IpaSelection,
                       LabelMechanism, OnInfeasible, OnUnplaceable, PeriodicMethodName,
                       TableMethodName, TimeResolution)
from .random import Randomness, check_rng, randomness

# The methods, the pipelines and the verify gate are imported where they are used (issue 30):
# reading data (`medanon ingest` streams FAERS through Dataset) must not load the algorithms,
# the privacy models or SciPy.
if TYPE_CHECKING:
    from .anonymize.base import Anonymizer
    from .anonymize.tabular import TabularResult
    from .pipeline.checks import Acknowledgements
    from .pipeline.ehr import Pseudonyms
    from .pipeline.policy import SeriesPolicy
    from .models.theta import ThetaTable
    from .verify import SeriesVerdict

__all__ = ["Dataset", "EhrMethodName", "EhrPublisher", "EhrRecords", "EhrRelease",
           "PeriodicMethodName", "Publisher", "Release", "Series", "SeriesPublisher", "Table",
           "TableMethodName", "TablePublisher", "TableRelease", "UnboundedTermsWarning",
           "signals"]


class Dataset:
    """Report-level records per period, with their schema (the private input).

    A dataset is what the FAERS loader reads, checked against a schema: its :attr:`quarters`
    are :class:`~medanon.data.loaders.faers.FaersQuarter` objects (period, era, source,
    records, ingest report), so ``store.ingest(dataset)`` records where each period came from.

    Args:
        records: One frame per period label, in the schema's layout (one row per report:
            case id, period, version, QIDs, multi-valued columns as tuples); or the loader's
            quarters (:func:`~medanon.data.loaders.faers.read_faers`' ``quarters``).
        schema: The schema. Default: the FAERS schema (:meth:`Schema.default`: the papers'
            QIDs and sensitive attributes, drugs per role, outcomes and receipt dates, which
            the FAERS loader reads); for records that lack any of its columns, the papers' own
            schema (:meth:`Schema.papers`: no column beyond the papers' drugs).
        deleted_case_ids: Case ids FDA withdrew (its DELETE lists): removed from every period
            here, and from earlier unpublished periods of a store this dataset is ingested into.

    Raises:
        ValidationError: a period label that does not parse, a period given twice, or no period.
        SchemaError / HierarchyError: a value the schema or its hierarchies do not know.
    """

    def __init__(self, records: Mapping[str, pd.DataFrame] | Sequence[FaersQuarter],
                 schema: Schema | None = None, *, deleted_case_ids: Iterable[str] = ()):
        if isinstance(records, Mapping):
            # records without a FAERS source: no era, no ingest report
            quarters = [FaersQuarter(parse_period(p), "unknown", "in-memory records", frame, {})
                        for p, frame in records.items()]
        else:
            quarters = list(records)
            for quarter in quarters:
                if not isinstance(quarter, FaersQuarter):
                    raise ValidationError(f"The 'records' parameter of Dataset must map period "
                                          f"labels to frames or hold the loader's FaersQuarter "
                                          f"objects; it holds a {type(quarter).__name__}.")
        if not quarters:
            raise ValidationError("The 'records' parameter of Dataset must hold at least one "
                                  "period.")
        self.schema = schema or _default_schema(q.records for q in quarters)
        self.deleted_case_ids = frozenset(str(c) for c in deleted_case_ids)
        # loaded once: the checks below, the super records and every release of this data
        # read them (a release passes them down to the method, the gate and the series)
        self._hierarchies = hierarchies = self.schema.load_hierarchies()
        ordered: dict[str, FaersQuarter] = {}
        for quarter in sorted(quarters, key=lambda q: q.period):
            label = quarter.period.label
            if label in ordered:
                raise ValidationError(f"The 'records' parameter of Dataset holds period {label} "
                                      f"twice.")
            frame = quarter.records
            if self.deleted_case_ids and len(frame):
                gone = frame[self.schema.case_id].astype(str).isin(self.deleted_case_ids)
                if gone.any():
                    quarter = replace(quarter, records=frame[~gone].reset_index(drop=True))
            check_record_values(quarter.records, self.schema, hierarchies)
            ordered[label] = quarter
        self._quarters = ordered
        self._facts: tuple[set[str], dict[str, int], int] | None = None  # safety_facts()
        self._sizes: tuple[dict[str, tuple[int, int]], int] | None = None  # _repr_sizes()

    def _repr_sizes(self) -> tuple[dict[str, tuple[int, int]], int]:
        """Period -> (reports, cases), and the cases over all periods: counted once."""
        if self._sizes is None:
            case_id = self.schema.case_id
            per = {}
            ids = []
            for label, quarter in self._quarters.items():
                frame = quarter.records
                column = frame[case_id] if case_id in frame.columns else pd.Series([], dtype=str)
                per[label] = (len(frame), int(column.nunique()))
                ids.append(column.astype(str))
            total = int(pd.concat(ids).nunique()) if ids else 0
            self._sizes = per, total
        return self._sizes

    def __repr__(self) -> str:
        per, cases = self._repr_sizes()
        reports = sum(n for n, _ in per.values())
        return _repr.one_line(
            f"<Dataset: {_repr.plural(len(per), 'period')} {_repr.span(self.periods)}, "
            f"{_repr.plural(reports, 'report')}, {_repr.plural(cases, 'case')}; "
            f"schema {_repr.clip(self.schema.name, 40)}>")

    def _repr_html_(self) -> str:
        per, cases = self._repr_sizes()
        rows = [(q.label, q.era, per[q.label][0], per[q.label][1], q.source)
                for q in self.quarters[:_repr.MAX_HTML_ROWS]]
        return _repr.html_summary(
            f"Dataset: {_repr.plural(len(per), 'period')} {_repr.span(self.periods)}",
            [("schema", self.schema.name), ("reports", sum(n for n, _ in per.values())),
             ("cases", cases), ("deleted case ids", len(self.deleted_case_ids))],
            ("period", "era", "reports", "cases", "source"), rows, total=len(per))

    @property
    def periods(self) -> list[str]:
        """The period labels, oldest first."""
        return list(self._quarters)

    @property
    def quarters(self) -> tuple[FaersQuarter, ...]:
        """The periods as the loader's quarter objects, oldest first (what
        :meth:`~medanon.store.ReleaseStore.ingest` takes)."""
        return tuple(self._quarters.values())

    def records(self, period: str) -> pd.DataFrame:
        """The records of one period.

        Raises:
            ValidationError: the dataset has no such period.
        """
        label = parse_period(period).label
        if label not in self._quarters:
            raise ValidationError(f"The 'period' parameter of Dataset.records names {label}, "
                                  f"which the dataset does not hold ({', '.join(self.periods)}).")
        return self._quarters[label].records

    def ingest_report(self, period: str) -> dict:
        """What happened to one period on the way in (the loader's ingest report as plain
        data; empty for records given without one). Private: its counts describe the input.

        Raises:
            ValidationError: the dataset has no such period.
        """
        self.records(period)  # the period check
        return self._quarters[parse_period(period).label].report_dict()

    def safety_facts(self) -> tuple[set[str], dict[str, int], int]:
        """What the publisher's safety checks read (:func:`~medanon.pipeline.checks.data_facts`:
        the sensitive vocabulary, reports per period, the longest case span), computed once:
        publishing one period at a time must not re-read every period per call. Private."""
        from .pipeline.checks import data_facts

        if self._facts is None:
            self._facts = data_facts({p: self.records(p) for p in self.periods}, self.schema)
        return self._facts

    def super_records(self, period: str) -> SuperRecords:
        """The super records of one period: one per case, its reports combined, as every method
        receives them. Private, like the records: the original side of utility and risk
        measures (``medanon.metrics``) on a release of this period.

        Raises:
            ValidationError: the dataset has no such period.
        """
        return combine_super_records(self.records(period), self.schema, self._hierarchies)

    @classmethod
    def from_faers(cls, source: str | Path, *, schema: Schema | None = None,
                   keep_missing: bool = True,
                   progress: Callable[[str], None] | None = None,
                   strict: bool = False, max_field_chars: int | None = None) -> "Dataset":
        """Read FAERS quarterly extracts (a zip, a quarter folder or a folder of quarters).

        Cases on FDA's DELETE lists are removed from every period (and, through
        ``store.ingest(dataset)``, from a store's earlier unpublished periods).

        Args:
            keep_missing: Keep reports that lack a QID or a sensitive value (the default;
                a missing value is published as missing). False drops them, as papers
                000-002 do (each quarter's ingest report counts them per reason).
            progress: Called with each quarter's label as it is read.
            strict: Refuse (``InputQualityError``) a quarter whose reading had to repair or drop
                what its files say: duplicate DEMO rows that conflict, implausible or unitless
                ages and weights, invalid dates, rows of no report
                (:func:`~medanon.data.loaders.faers.strict_repairs`). By default they are
                repaired and counted in each quarter's ingest report.
            max_field_chars: The longest field a table may hold, in characters (default
                :data:`~medanon.data.loaders.faers.DEFAULT_MAX_FIELD_CHARS`, 10,000): a longer
                one refuses the source, naming file, line and column.
        """
        from .data.loaders.faers import DEFAULT_MAX_FIELD_CHARS, read_faers

        found = read_faers(source, keep_missing=keep_missing, progress=progress, schema=schema,
                           strict=strict, max_field_chars=max_field_chars or DEFAULT_MAX_FIELD_CHARS)
        return cls(found.quarters, schema, deleted_case_ids=found.deleted_case_ids)

    @staticmethod
    def stream_faers(source: str | Path, *, schema: Schema | None = None,
                     keep_missing: bool = True,
                     progress: Callable[[str], None] | None = None,
                     strict: bool = False, max_field_chars: int | None = None) -> FaersQuarters:
        """Read FAERS quarterly extracts as :meth:`from_faers` does, one quarter at a time:
        for ``store.ingest``, which writes each quarter before the next is read, so that a
        source of many large quarters is never held at once.

        The source is searched, its DELETE lists read and the schema's hierarchies loaded at
        once; each quarter is read, and its values checked against the hierarchies (as a
        Dataset checks them), when the result is iterated. Cases on the DELETE lists are
        removed from every quarter (and, through ``store.ingest``, from a store's earlier
        unpublished periods). ``strict`` refuses a quarter as :meth:`from_faers` does, when
        it is read (a store's ingest then writes nothing); so does a field longer than
        ``max_field_chars`` (as :meth:`from_faers`).

        Returns:
            The quarters (:class:`~medanon.data.loaders.faers.FaersQuarters`: ``periods``,
            ``deleted_case_ids``, and ``reports`` of the quarters read so far).
        """
        from .data.loaders.faers import DEFAULT_MAX_FIELD_CHARS, open_faers

        schema = schema or Schema.default()
        hierarchies = schema.load_hierarchies()

        def check(quarter: FaersQuarter) -> None:
            check_record_values(quarter.records, schema, hierarchies)

        return open_faers(source, keep_missing=keep_missing, progress=progress, schema=schema,
                          check=check, strict=strict,
                          max_field_chars=max_field_chars or DEFAULT_MAX_FIELD_CHARS)

    @classmethod
    def from_dataframe(cls, frame: pd.DataFrame, schema: Schema | None = None) -> "Dataset":
        """Split one frame of report-level records by its period column (``schema``: as for
        :class:`Dataset`)."""
        schema = schema or _default_schema([frame])
        if schema.period not in frame.columns:
            raise ValidationError(f"The 'frame' parameter of Dataset.from_dataframe lacks the "
                                  f"period column {schema.period!r}.")
        labels = frame[schema.period].astype(str)
        return cls({p: frame[labels == p].reset_index(drop=True) for p in labels.unique()}, schema)

    @classmethod
    def synthetic_faers(cls, folder: str | Path, *, periods: int = 4, cases: int = 500,
                        seed: int | None = None, profile: str = "default") -> "Dataset":
        """Write a synthetic FAERS-like series into the new ``folder`` and read it back.

        Args:
            folder: where to write (see :func:`~medanon.data.synth.faers.write_faers_series`).
            periods: quarters.
            cases: cases per quarter.
            seed: random seed (None: fresh).
            profile: the generator's calibration: ``default`` (FAERS-like), ``legacy`` (the
                generator before issue 42), ``faers-2004``, ``faers-2014`` or ``faers-current``
                (``docs/data.md``); a ValidationError names ``profile``.
        """
        from .data.synth.faers import write_faers_series

        write_faers_series(folder, periods=periods, cases=cases, seed=seed, profile=profile)
        return cls.from_faers(folder)


def _default_schema(frames: Iterable[pd.DataFrame]) -> Schema:
    """The FAERS schema when every frame holds its columns, else the papers' schema (records
    built by hand, or read from a store made before the FAERS schema had its other fields)."""
    schema = Schema.default()
    needed = set(schema.all_columns)
    return schema if all(needed <= set(f.columns) for f in frames) else Schema.papers()


class Table:
    """One record per individual with its table schema: the private input of the table methods
    (IPA, paper 004, and its baselines ``kanon`` and ``dphist``).

    Build one with :meth:`read` (a CSV or Parquet file and its schema TOML),
    :meth:`from_dataframe` or :meth:`synthetic`; the schema (``medanon.data.tabular``) names the
    dimension attributes, their generalization levels and the informative attribute.

    Args:
        data: The encoded table (what the constructors build).

    Raises:
        ValidationError: ``data`` is not a :class:`~medanon.data.tabular.TabularData`.
    """

    def __init__(self, data: TabularData):
        if not isinstance(data, TabularData):
            raise ValidationError(f"The 'data' parameter of Table must be a TabularData (build "
                                  f"one with Table.read, Table.from_dataframe or "
                                  f"Table.synthetic); got {type(data).__name__}.")
        self.data = data

    @property
    def schema(self) -> TableSchema:
        """The table schema: dimensions, informative attribute, queries."""
        return self.data.schema

    @property
    def frame(self) -> pd.DataFrame:
        """The schema's columns as read (private)."""
        return self.data.frame

    @property
    def digest(self) -> str:
        """SHA-256 of the encoded table: operator only, never in a manifest."""
        return self.data.digest

    def fingerprint(self):
        """The table's identity for the one-off ledger, whatever its row order (an
        :class:`~medanon.accounting.oneoff.InputFingerprint`): operator only."""
        return self.data.fingerprint()

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        schema = self.schema
        return _repr.one_line(
            f"<Table {_repr.clip(schema.name, 40)!r}: {_repr.plural(len(self), 'record')}, "
            f"{_repr.plural(len(schema.dimensions), 'dimension')} "
            f"({_repr.clip(', '.join(schema.dimension_names), 120)}), "
            f"informative {_repr.clip(schema.informative, 40)}>")

    def _repr_html_(self) -> str:
        schema = self.schema
        dimensions = [(d.name, d.kind) for d in schema.dimensions[:_repr.MAX_HTML_ROWS]]
        return _repr.html_summary(
            f"Table {schema.name!r}: {_repr.plural(len(self), 'record')}",
            [("informative", schema.informative),
             ("informative domain", "public" if schema.informative_domain else "from the data"),
             ("queries", ", ".join(q.name for q in schema.queries) or "none")],
            ("dimension", "kind"), dimensions, total=len(schema.dimensions))

    @classmethod
    def read(cls, path: str | Path, schema: str | Path | None = None) -> "Table":
        """Read a CSV or Parquet table and check it against its schema TOML.

        Args:
            path: The table (``.csv`` or ``.parquet``).
            schema: The schema TOML (default: ``NAME.schema.toml`` beside the table, as
                ``medanon synth table`` writes it). Relative hierarchy files resolve against
                its folder.

        Raises:
            SchemaError: no schema, an invalid one, or a column it names is missing.
            InputFormatError: an unreadable file or a value outside its hierarchy or domain.
        """
        from .data.tabular import load_table
        from .pipeline.tabular import table_schema_path

        schema_path = table_schema_path(path, schema)
        return cls(load_table(Path(path), TableSchema.from_toml(schema_path),
                              schema_dir=schema_path.parent))

    @classmethod
    def from_dataframe(cls, frame: pd.DataFrame, schema: TableSchema | str | Path) -> "Table":
        """Check and encode ``frame`` against ``schema`` (a :class:`TableSchema` or a TOML path).

        Raises:
            ValidationError: ``frame`` is not a DataFrame.
            SchemaError / InputFormatError: as :meth:`read`.
        """
        from .data.tabular import load_table

        if not isinstance(frame, pd.DataFrame):
            raise ValidationError(f"The 'frame' parameter of Table.from_dataframe must be a "
                                  f"pandas DataFrame; got {type(frame).__name__}.")
        schema_dir = None
        if not isinstance(schema, TableSchema):
            schema_dir = Path(schema).parent
            schema = TableSchema.from_toml(schema)
        return cls(load_table(frame, schema, schema_dir=schema_dir))

    @classmethod
    def synthetic(cls, rows: int = 2000, *, seed: int | None = None) -> "Table":
        """A synthetic hospital-patient table (age, sex, stay, surgery, region, diagnosis) like
        paper 004's, with its schema (public diagnosis domain and the queries Q1-Q4).

        ``seed`` fixes the synthetic data (not a release's randomness); default: a fresh one.
        """
        from .data.synth.table import synth_patient_schema_toml, synth_patient_table

        seed = secrets.randbits(32) if seed is None else seed
        frame = synth_patient_table(rows, seed=seed)
        return cls.from_dataframe(frame, TableSchema.from_toml_text(synth_patient_schema_toml()))


class EhrRecords:
    """Patients' diagnosis sequences (admissions of ICD-9 codes): the private input of
    ClinSimRR (paper 003) and its baselines.

    Build one with :meth:`read` (MIMIC-III ``DIAGNOSES_ICD`` + ``ADMISSIONS``, or a long CSV of
    patient, admission, time, code) or :meth:`synthetic`.

    Args:
        data: The events (what the constructors build).
        min_admissions: The admissions a patient needed to be kept (recorded in the manifest).

    Raises:
        ValidationError: ``data`` is not an :class:`~medanon.data.ehr.EhrData`.
    """

    def __init__(self, data: EhrData, *, min_admissions: int = 1):
        if not isinstance(data, EhrData):
            raise ValidationError(f"The 'data' parameter of EhrRecords must be an EhrData (build "
                                  f"one with EhrRecords.read or EhrRecords.synthetic); got "
                                  f"{type(data).__name__}.")
        self.data = data
        self.min_admissions = check_int(min_admissions, name="min_admissions",
                                        owner="EhrRecords", minimum=1)

    @property
    def events(self) -> pd.DataFrame:
        """One row per diagnosis element (private)."""
        return self.data.events

    @property
    def n_patients(self) -> int:
        """The number of patients."""
        return self.data.n_patients

    @property
    def code_level(self) -> str:
        """The ICD-9 code level: ``category`` (3-character categories, 4 for E codes) or
        ``full``."""
        return self.data.code_level

    @property
    def dates_reliable(self) -> bool:
        """Whether ``time`` holds real day offsets (False: unusable dates, all NaN; recorded in
        the manifest)."""
        return self.data.dates_reliable

    def digest(self) -> str:
        """SHA-256 of the events: operator only, never in a manifest."""
        return self.data.digest()

    def fingerprint(self):
        """The events' identity for the one-off ledger, whatever their row order (an
        :class:`~medanon.accounting.oneoff.InputFingerprint`): operator only."""
        return self.data.fingerprint()

    def __repr__(self) -> str:
        kept = (f", patients with >= {self.min_admissions} admissions"
                if self.min_admissions != 1 else "")
        return _repr.one_line(
            f"<EhrRecords: {_repr.plural(self.n_patients, 'patient')}, "
            f"{_repr.plural(self.data.n_events, 'element')}, {_repr.clip(self.code_level, 20)} "
            f"codes{kept}{'' if self.dates_reliable else ', dates unusable'}>")

    def _repr_html_(self) -> str:
        return _repr.html_summary(
            f"EhrRecords: {_repr.plural(self.n_patients, 'patient')}",
            [("patients", self.n_patients), ("elements", self.data.n_events),
             ("code level", self.code_level), ("dates reliable", self.dates_reliable),
             ("min admissions", self.min_admissions)])

    def with_min_admissions(self, n: int) -> "EhrRecords":
        """The patients with at least ``n`` admissions (003 keeps those with two or more)."""
        return EhrRecords(self.data.with_min_admissions(n), min_admissions=n)

    @classmethod
    def read(cls, diagnoses: str | Path, admissions: str | Path | None = None, *,
             code_level: str = "category", min_admissions: int = 1) -> "EhrRecords":
        """Read MIMIC-III ``DIAGNOSES_ICD`` (with ``ADMISSIONS`` for the admission order) or a
        long CSV (patient, admission, time, code).

        Args:
            code_level: ``category`` (three-character ICD-9 categories, as 003) or ``full``.
            min_admissions: Keep the patients with at least this many admissions.

        Raises:
            InputFormatError: an unreadable file or a missing column.
            ValidationError: a bad ``code_level`` or ``min_admissions``.
        """
        from .pipeline.clinsim import load_ehr

        records = cls(load_ehr(Path(diagnoses), None if admissions is None else Path(admissions),
                               code_level=code_level))
        return records.with_min_admissions(min_admissions) if min_admissions != 1 else records

    @classmethod
    def synthetic(cls, patients: int = 2000, *, seed: int | None = None,
                  code_level: str = "category") -> "EhrRecords":
        """Synthetic diagnosis sequences with planted dependences (what ``medanon synth ehr``
        writes, read back). ``seed`` fixes the synthetic data; default: a fresh one."""
        from .data.synth.ehr import synth_ehr

        seed = secrets.randbits(32) if seed is None else seed
        return cls(synth_ehr(patients, seed=seed, code_level=code_level))


class _Gated:
    """What every release object says about the gate's entry in its manifest."""

    manifest: dict

    @property
    def verdict(self) -> str:
        """The gate's verdict: ``passed``, ``violated`` (published despite violations, only with
        ``allow_violations``) or ``not-applicable`` (a method without a privacy model)."""
        return str(self.manifest["verification"]["verdict"])

    @property
    def verified(self) -> bool:
        """Whether the gate checked the release against its model and found it holds."""
        return self.verdict == "passed"


@dataclass(frozen=True)
class Release(_Gated):
    """One published period, as the verify gate passed (or, on request, flagged) it.

    Attributes:
        period: The period label.
        rows: The published rows (release format, strings).
        manifest: The published manifest; ``manifest["verification"]`` is the gate's entry.
        ledger: The ledger rows the release charges (DP methods; for a store).
        operator: Operator-only facts (input hash, private details): never publish them.
        seconds: Wall-clock seconds the method took to anonymize the period (not the gate):
            for benchmarks and experiments, never published.
    """

    period: str
    rows: pd.DataFrame
    manifest: dict
    ledger: pd.DataFrame = field(repr=False)
    operator: dict = field(repr=False, default_factory=dict)
    seconds: float = field(repr=False, default=0.0)

    @property
    def operator_manifest(self) -> dict:
        """The manifest with the operator-only facts put back (input and withheld counts, term
        counts, ...; ``medanon.published.manifest_roles``): for the operator's own reports,
        never to publish."""
        from .published.manifest_roles import MANIFEST_FACTS, operator_view

        return operator_view(self.manifest,
                             (self.operator.get("private_details") or {}).get(MANIFEST_FACTS))

    @property
    def theta_table(self) -> ThetaTable | None:
        """The θ table the release used (``manifest["details"]["theta_table"]``): the default,
        every per-term θ and the protected terms' caps; None for a method without θ."""
        from .models.theta import theta_table_of

        return theta_table_of(self.manifest)

    @property
    def unbounded_terms(self) -> tuple[str, ...]:
        """The sensitive terms this release gives θ = 1, no limit: a group may consist only
        of cases holding one, so publishing the group discloses it. The frequency rule gives
        it to the most frequent terms; cap a term with ``protect`` (or a θ file's caps, or the
        schema's ``protected_terms``). Read from the published θ table: nothing new is
        derived from the private data. (A default θ of 1 is ``theta_table.default_unbounded``.)
        """
        table = self.theta_table
        return table.unbounded_terms if table is not None else ()

    def _groups(self) -> int | str:
        counted = (self.manifest.get("counts") or {}).get("groups")
        if isinstance(counted, int):
            return counted
        return int(self.rows["group"].nunique()) if "group" in self.rows.columns else "?"

    def __repr__(self) -> str:
        # the published manifest and rows only: never the operator-only facts, the ledger or
        # the seconds
        groups = self._groups()
        return _repr.one_line(
            f"<Release {_repr.clip(self.period, 20)}: {_repr.method_of(self.manifest)}, "
            f"{_repr.plural(len(self.rows), 'row')} in "
            f"{_repr.plural(groups, 'group') if isinstance(groups, int) else '? groups'}, "
            f"verdict {_repr.verdict_of(self.manifest)}>")

    def _repr_html_(self) -> str:
        return _repr.html_summary(f"Release {self.period}", _release_facts(self.manifest, [
            ("rows", len(self.rows)), ("groups", self._groups())]))



def _release_facts(manifest: Mapping, sizes: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The facts an HTML summary shows of one release: its published manifest's method,
    model and verdict, and ``sizes``."""
    def part(key: str) -> Mapping[str, Any]:  # a damaged manifest shows "?", not a traceback
        value = manifest.get(key)
        return value if isinstance(value, Mapping) else {}

    method, entry, counts = part("method"), part("verification"), part("counts")
    return [("method", _repr.method_of(manifest)),
            ("privacy model", method.get("privacy_model", "?")), *sizes,
            ("verdict", _repr.verdict_of(manifest)), ("checked", entry.get("checked", "?")),
            *((f"counts: {name}", value) for name, value in list(counts.items())[:10])]


@dataclass(frozen=True, repr=False)
class Series(PublishedSeries):
    """A published series: the releases of each period and their manifests (see
    :class:`~medanon.published.series.PublishedSeries`), with what a user does with one.

    Attributes:
        releases_published: The :class:`Release` objects a :class:`Publisher` just made (empty
            for a series read from a folder).
        gate_verdict: The verify gate's verdict as the last release was gated, over the
            releases that release links to (``PublishedSeries.linked``; None for a series read
            from a folder, or when the gate had no model to check). :meth:`verify` checks the
            whole series afresh.
    """

    releases_published: tuple[Release, ...] = ()
    gate_verdict: SeriesVerdict | None = field(default=None, repr=False, compare=False)

    @classmethod
    def read(cls, folder: str | Path, *, schema: Schema | None = None) -> "Series":
        """Read a published series folder (audit mode: also one written by another tool)."""
        return cls._of(load_series(folder=folder, schema=schema))

    @classmethod
    def _of(cls, series: PublishedSeries, made: tuple[Release, ...] = (),
            verdict: SeriesVerdict | None = None) -> "Series":
        return cls(series.releases, series.manifests, series.qids, series.sensitive,
                   series.source, made, verdict)

    def _repr_source(self) -> str:
        made = self.releases_published
        just = f"{len(made)} just published, " if made else ""
        return just + super()._repr_source()

    def operator_manifests(self) -> dict[str, dict]:
        """Period -> the manifest with its operator-only facts (:attr:`Release.operator_manifest`)
        for each release this series just published; the published manifest for the others
        (read from a folder, they have no operator facts). Never to publish."""
        made = {r.period: r.operator_manifest for r in self.releases_published}
        return {p: made.get(p, self.manifests[p]) for p in self.periods}

    def verify(self, periods: list[str] | None = None) -> SeriesVerdict:
        """Check each release against the model its manifest declares (:mod:`medanon.verify`)."""
        from .verify import verify_series

        return verify_series(self, periods)

    def unbounded_terms(self) -> dict[str, tuple[str, ...]]:
        """Period -> the terms its release gives θ = 1 (see :attr:`Release.unbounded_terms`),
        for every release of the series, also one read from a folder."""
        from .models.theta import theta_table_of

        out = {}
        for period in self.periods:
            table = theta_table_of(self.manifests[period])
            out[period] = table.unbounded_terms if table is not None else ()
        return out

    def signals(self, **options: Any) -> pd.DataFrame:
        """Every drug–reaction pair of the series screened per scope, as :func:`signals`
        screens a folder (the options of :func:`medanon.metrics.signal_table.signal_table`)."""
        _check_signal_options(options)
        return _signals_of(self, **options)

    def export(self, folder: str | Path, fmt: str = "csv") -> list[Path]:
        """Write the series into the new ``folder``, all or nothing: ``fmt`` ``csv`` is the
        published release format (``PERIOD/release.csv`` + ``manifest.json``), ``parquet`` the
        same rows as Parquet, ``faers`` the FAERS ASCII layout. Returns the period folders."""
        from .pipeline.export import export_releases

        releases = {p: (self.releases[p], self.manifests[p]) for p in self.periods}
        return export_releases(releases, folder, fmt).folders



@dataclass(frozen=True, repr=False)
class _OneOffRelease(_Gated):
    """What a table and an EHR release share.

    Attributes:
        rows: The published rows as ``release.csv`` reads back (strings).
        manifest: The published manifest; ``manifest["verification"]`` is the gate's entry.
        csv_text: The text of ``release.csv``, rendered once: checked (as ``rows``) and
            written byte for byte by :meth:`write`.
        summary: Operator-only facts (input hash, noisy counts, utility): never publish them.
    """

    rows: pd.DataFrame
    manifest: dict
    #: the text of release.csv, rendered once: checked (as ``rows``) and written byte for byte
    csv_text: str = field(repr=False)
    #: operator-only facts (input hash, noisy counts, utility): never publish them
    summary: dict = field(repr=False)

    @property
    def verification(self) -> dict:
        """The gate's manifest entry: verdict, model and what was checked (``checked``)."""
        return dict(self.manifest["verification"])

    def _repr_sizes(self) -> list[tuple[str, Any]]:
        """The sizes a repr shows: published facts only (the rows, the manifest's counts)."""
        return [("rows", len(self.rows))]

    def __repr__(self) -> str:
        # the published rows and manifest only: never the summary (operator only)
        sizes = ", ".join(_repr.plural(n, name[:-1] if name.endswith("s") else name, name)
                          if isinstance(n, int) else f"{name} {_repr.clip(n, 20)}"
                          for name, n in self._repr_sizes())
        return _repr.one_line(f"<{type(self).__name__}: {_repr.method_of(self.manifest)}, "
                              f"{sizes}, verdict {_repr.verdict_of(self.manifest)}>")

    def _repr_html_(self) -> str:
        return _repr.html_summary(f"{type(self).__name__}: {_repr.method_of(self.manifest)}",
                                  _release_facts(self.manifest, self._repr_sizes()))

    def write(self, folder: str | Path) -> Path:
        """Write ``release.csv`` and ``manifest.json`` into the new ``folder`` (all or nothing):
        the folder the command line writes.

        Raises:
            StoreError: ``folder`` exists and is not empty, or its parent does not exist.
        """
        return write_release_text(folder, self.csv_text, self.manifest)


@dataclass(frozen=True, repr=False)
class TableRelease(_OneOffRelease):
    """A one-off table release (IPA, ``kanon``, ``dphist``), verified in memory.

    Attributes:
        rows: The published rows as ``release.csv`` reads back (strings): ``group``, the
            dimensions, the informative attribute; counterfeit rows are not marked.
        manifest: The published manifest; ``manifest["verification"]`` is the gate's entry.
        summary: Operator only: the method's summary (noisy counts, information loss, the
            candidates), the analysis queries' errors and ``input_sha256``.
        result: The method's result (operator only: it marks the counterfeit rows).
    """

    result: Any = field(repr=False, default=None)

    def _repr_sizes(self) -> list[tuple[str, Any]]:
        classes = (self.manifest.get("counts") or {}).get("classes")
        return [("rows", len(self.rows))] + ([("classes", classes)]
                                             if isinstance(classes, int) else [])


@dataclass(frozen=True, repr=False)
class EhrRelease(_OneOffRelease):
    """A one-off diagnosis-sequence release (ClinSimRR or a baseline), verified in memory.

    Attributes:
        rows: The published rows as ``release.csv`` reads back (strings; identifiers
            pseudonymized unless raw ones were asked for).
        manifest: The published manifest; ``manifest["verification"]`` is the gate's entry.
        summary: Operator only: CIL, KL, the attack's MAP, the protected set's sizes and
            ``input_sha256``.
        run: The run behind it (operator only: it holds the source identifiers).
    """

    run: Any = field(repr=False, default=None)

    def _repr_sizes(self) -> list[tuple[str, Any]]:
        counts = self.manifest.get("counts") or {}
        return [(name, counts[name]) for name in ("patients", "admissions")
                if isinstance(counts.get(name), int)] + [("elements", len(self.rows))]


#: the parameters of an EHR publisher that configure the run, not the mechanism (see
#: :func:`medanon.pipeline.clinsim.run_clinsim`), with their defaults.
_EHR_RUN = {"sensitive": "va-7332", "delta_t_days": 300.0, "aux_fraction": 0.8,
            "min_predictions": 10, "compare": False}
#: the parameters of an EHR publisher that shape the published form only (see
#: :func:`medanon.pipeline.clinsim.build_release`), with their defaults.
_EHR_PUBLISH = {"time_resolution": "day"}


# The typed keywords of Publisher (its overloads below) come from medanon.literals; a test
# keeps each overload's keywords equal to what its family's factory takes, so the types cannot
# drift from what is accepted.


class TableMethod(Protocol):
    """What a configured one-off table method offers (``IPA``, ``FullDomainKAnonymity``,
    ``DPHistogram``; :func:`~medanon.pipeline.methods.table_method` makes one)."""

    name: str

    def anonymize(self, data: TabularData, *, noise: Randomness,
                  progress: Callable[[int, int], None] | None = None) -> TabularResult: ...


class UnboundedTermsWarning(UserWarning):
    """A release :meth:`Publisher.publish` made leaves sensitive terms at θ = 1 (no limit): a
    group may consist only of cases holding such a term, so publishing the group discloses it.
    The command line prints the same warning on stderr."""


#: how many unbounded terms the warning names (``Release.unbounded_terms`` lists all)
_UNBOUNDED_SHOWN = 10


def _warn_unbounded(releases: Sequence[Release]) -> None:
    """One :class:`UnboundedTermsWarning` for the releases that leave terms at θ = 1, naming
    them. Says nothing the published θ tables do not."""
    unbounded: dict[str, None] = {}  # the terms in order of first release, once each
    periods, default = [], False
    for release in releases:
        table = release.theta_table
        if table is None or not (table.unbounded_terms or table.default_unbounded):
            continue
        periods.append(release.period)
        unbounded.update(dict.fromkeys(table.unbounded_terms))
        default = default or table.default_unbounded
    if not periods:
        return
    terms = list(unbounded)
    named = ", ".join(repr(t) for t in terms[:_UNBOUNDED_SHOWN]) + (
        f" and {len(terms) - _UNBOUNDED_SHOWN} more" if len(terms) > _UNBOUNDED_SHOWN else "")
    which = "; ".join(
        ([f"{len(terms)} term(s) at theta 1: {named}"] if terms else [])
        + (["every term not in the theta table (its default theta is 1)"] if default else []))
    span = (periods[0] if len(periods) == 1
            else f"{len(periods)} releases, {periods[0]} to {periods[-1]}")
    warnings.warn(UnboundedTermsWarning(
        f"theta = 1 (no limit) leaves sensitive terms unbounded in {span}: {which}. A group may "
        f"consist only of cases holding such a term, and publishing the group discloses it for "
        f"every one of them. Cap such terms with protect={{'TERM': cap}} (docs/theta.md); "
        f"each release's unbounded_terms lists them all."),
        stacklevel=4)  # the caller of Publisher.publish


def _names(factory: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(p.name for p in inspect.signature(factory).parameters.values()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY)


#: the keywords every publisher takes beside its method's parameters
_COMMON_KEYWORDS = ("seed", "rng")
#: the keywords of a series publisher that say how CaseIDs are published, not the method
_CASE_ID_KEYWORDS = ("case_ids", "case_key")


def _given(constructor: Callable[..., Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The method parameters of a typed constructor's call (``values``: its ``locals()`` on
    entry) that differ from their defaults: what the caller set, as ``**parameters`` gave it."""
    return {p.name: values[p.name] for p in inspect.signature(constructor).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
            and p.name not in _COMMON_KEYWORDS + _CASE_ID_KEYWORDS
            and not _same(values[p.name], p.default)}


def _same(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


def _family_of(method: Any) -> str:
    """The family of the method a :class:`Publisher` is given, by name (any case) or object."""
    from .anonymize.base import Anonymizer
    from .pipeline.methods import EHR_METHODS, PERIODIC_METHODS, TABLE_METHODS, family_of
    from .pipeline.policy import SeriesPolicy

    if isinstance(method, str):
        try:
            return family_of(method.strip().lower())  # the docs write PPMS++; the registry ppms++
        except ValidationError:
            raise ValidationError(f"The 'method' parameter of Publisher must be a periodic "
                                  f"method ({', '.join(PERIODIC_METHODS)}), a table method "
                                  f"({', '.join(TABLE_METHODS)}) or an EHR method "
                                  f"({', '.join(EHR_METHODS)}); got {method!r}.") from None
    if isinstance(method, (SeriesPolicy, Anonymizer)):
        return "periodic"
    if _is_table_method(method):
        return "table"
    raise ValidationError(f"The 'method' parameter of Publisher must be a method name, a "
                          f"configured Anonymizer or a table method; got "
                          f"{type(method).__name__}.")


def _is_table_method(method: Any) -> bool:
    from .pipeline.methods import TABLE_METHODS

    return getattr(method, "name", None) in TABLE_METHODS and hasattr(method, "anonymize")


class Publisher:
    """A configured method that publishes verified releases: the one entry point of the three
    families.

    ``Publisher("ppms++", k=5, theta="frequency")`` is a :class:`SeriesPublisher`, which
    publishes a periodic :class:`Dataset` as a :class:`Series`; ``Publisher("ipa", epsilon=1)``
    a :class:`TablePublisher` (a :class:`Table` as a :class:`TableRelease`);
    ``Publisher("clinsimrr", epsilon=1)`` an :class:`EhrPublisher` (:class:`EhrRecords` as an
    :class:`EhrRelease`). The family follows the method
    (:func:`~medanon.pipeline.methods.family_of`); each family's publisher takes its own typed
    keywords (and can be made directly), and ``Publisher`` shows them all as overloads.

    What it takes (``Publisher(method, *, seed=None, rng=None, **parameters)``; mkdocstrings
    lists each family's keywords under its publisher):

    - ``method``: a :class:`~medanon.pipeline.policy.SeriesPolicy` (a periodic method with its
      parameters: ``SeriesPolicy.ppms_plus_plus(k=5, theta="frequency")``), or a method name in
      any case — periodic (``ms``, ``ppms``, ``ppms+``, ``ppms++``, ``ha``, ``ppms-dp-num``,
      ``ppms-dp-all``, ``none``), table (``ipa``, ``kanon``, ``dphist``) or EHR
      (``clinsimrr``, ``umaxrr``, ``umaxrr-yp``, ``rr``, ``suppression``) — or a configured
      periodic :class:`Anonymizer` or table method.
    - ``seed``: for tests and research only: a reproducible source of randomness, recorded in
      every manifest. Default: OS entropy.
    - ``rng``: a :class:`~medanon.random.Randomness` (``medanon.random.randomness(seed=None)``)
      instead of ``seed``: the one randomness of every release this publisher makes (exact
      bits for DP noise, a generator for the other choices).
    - ``**parameters``: the method's parameters, as its family's publisher takes them
      (:class:`SeriesPublisher`, :class:`TablePublisher`, :class:`EhrPublisher`).

    Attributes:
        name: The method's name (``ppms++``, ``ipa``, ...).
        family: ``periodic``, ``table`` or ``ehr``: the data :meth:`publish` takes.
        method: The configured method object.
        parameters: The parameters given (those that differ from the method's defaults).
        rng: The randomness of every release this publisher makes.

    Raises:
        ValidationError: an unknown method, or a parameter it needs, lacks or cannot take
            (named as the caller wrote it).
    """

    #: ``periodic``, ``table`` or ``ehr`` (each family's publisher sets it)
    family: ClassVar[str] = ""
    #: the publish options of the family, beside ``data`` and ``allow_violations``
    _options: ClassVar[tuple[str, ...]] = ()
    name: str
    method: Any
    parameters: dict[str, Any]
    rng: Randomness

    # One overload per family: an editor completes these keywords and a type checker refuses
    # a keyword the family does not take. A name known only at run time is typed as one of the
    # aliases (``cast(PeriodicMethodName, name)``); at run time any casing of a name is taken.
    # Each overload's keywords are those of its family's constructor (tests/unit/test_api_typed.py).
    @overload
    def __new__(cls, method: PeriodicMethodName, *, seed: int | None = None,
                rng: Randomness | None = None, k: int | None = None,
                theta: float | str | None = None,
                protect: Mapping[str, float] | Sequence[str] | None = None,
                lifespan: int | None = None, on_infeasible: OnInfeasible = "refuse",
                max_withheld: float | None = None, grouping: Grouping | None = None,
                alpha: float | None = None, ss_rule: str | Mapping[str, int] | None = None,
                on_unplaceable: OnUnplaceable | None = None,
                epsilon: float | str | None = None, dp_variant: DpVariant = "strict",
                domains: Sequence[str] | Mapping[str, tuple[float, float]] | None = None,
                dp_aware_grouping: bool = False, case_budget: float | str | None = None,
                label_confidence: float | None = None,
                label_mechanism: LabelMechanism | None = None,
                allow_tiny_epsilon: bool = False, case_ids: CaseIdMode = "pseudonym",
                case_key: bytes | None = None) -> SeriesPublisher: ...

    @overload
    def __new__(cls, method: SeriesPolicy | Anonymizer, *, seed: int | None = None,
                rng: Randomness | None = None, case_ids: CaseIdMode = "pseudonym",
                case_key: bytes | None = None) -> SeriesPublisher: ...

    @overload
    def __new__(cls, method: TableMethodName | TableMethod, *, seed: int | None = None,
                rng: Randomness | None = None, epsilon: float | str | None = None,
                k: int | None = None, max_suppression: float | None = None,
                threshold: int | None = None, budget_split: str | None = None,
                node: str | list[int] | None = None, selection: IpaSelection | None = None,
                min_records: int | None = None,
                allow_tiny_epsilon: bool = False) -> TablePublisher: ...

    @overload
    def __new__(cls, method: EhrMethodName, *, seed: int | None = None,
                rng: Randomness | None = None, epsilon: float | str | None = None,
                gamma: float | None = None, b_max: int | None = None, alpha: float = 0.5,
                max_path_length: int = 2, sensitive: str | Sequence[str] = "va-7332",
                delta_t_days: float = 300.0, aux_fraction: float = 0.8,
                min_predictions: int = 10, compare: bool = False,
                time_resolution: TimeResolution = "day") -> EhrPublisher: ...

    def __new__(cls, method: Any = None, *args: Any, **parameters: Any) -> Any:
        if cls is Publisher:  # the entry point: the family's publisher, its keywords checked
            cls = _PUBLISHERS[_family_of(method)]
            known = [p for p in _names(cls.__init__) if p not in _COMMON_KEYWORDS]
            unknown = [p for p in parameters if p not in known and p not in _COMMON_KEYWORDS]
            if unknown:
                shown = method.strip().lower() if isinstance(method, str) else method
                raise ValidationError(f"The {unknown[0]!r} parameter of Publisher does not apply "
                                      f"to {cls.family} method {shown!r}, which takes "
                                      f"{', '.join(known)}.")
        return super().__new__(cls)

    def _randomness(self, seed: int | None, rng: Randomness | None) -> None:
        if rng is not None and seed is not None:
            raise ValidationError("Give the 'seed' or the 'rng' parameter of Publisher, not both.")
        self.rng = check_rng(rng, owner="Publisher") if rng is not None else randomness(seed)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={_repr.clip(repr(value), 40)}"
                          for name, value in self.parameters.items())
        return _repr.one_line(f"<Publisher: {_repr.clip(self.name, 30)} ({self.family})"
                              f"{', ' + shown if shown else ''}; randomness {self.rng.kind}>")

    def _repr_html_(self) -> str:
        names = list(self.parameters)
        return _repr.html_summary(
            f"Publisher: {self.name} ({self.family})",
            [("method", self.name), ("family", self.family), ("randomness", self.rng.kind)],
            ("parameter", "value"),
            [(name, repr(self.parameters[name])) for name in names[:_repr.MAX_HTML_ROWS]],
            total=len(names))

    # One overload per family's data, with that family's options and its result's type.
    @overload
    def publish(self, data: Dataset, periods: Sequence[str] | str | None = None, *,
                previous: PublishedSeries | None = None, allow_violations: bool = False,
                allow_unprotected: bool = False, allow_unknown_terms: bool = False,
                allow_gap: bool = False, allow_short_lifespan: bool = False,
                final: bool = False) -> Series: ...

    @overload
    def publish(self, data: Table, *, allow_violations: bool = False,
                progress: Callable[[int, int], None] | None = None) -> TableRelease: ...

    @overload
    def publish(self, data: EhrRecords, *, allow_violations: bool = False,
                identifiers: Pseudonyms | None = None,
                progress: Callable[[str], None] | None = None) -> EhrRelease: ...

    def publish(self, data: Dataset | Table | EhrRecords,
                periods: Sequence[str] | str | None = None,
                *, previous: PublishedSeries | None = None, allow_violations: bool = False,
                identifiers: Pseudonyms | None = None, progress: Callable[..., None] | None = None,
                allow_unprotected: bool = False, allow_unknown_terms: bool = False,
                allow_gap: bool = False, allow_short_lifespan: bool = False,
                final: bool = False) -> "Series | TableRelease | EhrRelease":
        """Publish ``data`` with the configured method, each release verified by the gate.

        Args:
            data: The private input of the method's family: a :class:`Dataset` (periodic), a
                :class:`Table` or :class:`EhrRecords`.
            periods: Periodic only: the periods to publish (default: every period of ``data``
                not in ``previous``); one label stands for itself (``"2022Q4"``).
            previous: Periodic only: the releases already published (their CaseIDs are linked).
            allow_violations: Keep a release the gate finds violating (its verdict says so and
                the manifest lists the violations); by default it is refused.
            identifiers: EHR only: how SUBJECT_ID and HADM_ID are published, a
                :class:`~medanon.pipeline.ehr.Pseudonyms` (default: keyed pseudonyms under a
                fresh key per release, drawn from OS entropy even when the publisher is seeded:
                the seed is published, so a key derived from it would hide nothing).
            progress: Table and EHR only: called as the method advances (table: with
                ``(done, total)`` lattice nodes; EHR: with each finished stage's name).
            allow_unprotected: Periodic only, an override of the safety checks
                (:mod:`medanon.pipeline.checks`, as are the three below, each recorded in each
                manifest's ``method.acknowledged``): publish with method ``none``.
            allow_unknown_terms: Periodic only: θ-table terms ``data`` does not hold.
            allow_gap: Periodic only: passing over a missing or empty period.
            allow_short_lifespan: Periodic only: a ``lifespan`` shorter than a case's span in
                ``data``.
            final: Periodic methods that wait for the next period (HA) only: publish the latest
                period of ``data`` too, as the series' final release, grouped as if none of its
                cases went on. Its MD view holds only while no later release exists: nothing
                is published after it (``docs/algorithms/ha.md``, "The final release").

        Returns:
            Periodic: the series with the new releases (``releases_published`` lists them).
            Table / EHR: the one release.

        Raises:
            ValidationError: ``data`` of another family than the method's, or an option of
                another family.
            PrivacyViolation: the gate found a violation (without ``allow_violations``).
            InfeasibleError / ValidationError: as the method raises them.

        Warns:
            UnboundedTermsWarning: a periodic release leaves sensitive terms at θ = 1.
        """
        wanted = {"periodic": Dataset, "table": Table, "ehr": EhrRecords}[self.family]
        if not isinstance(data, wanted):
            article = "an" if wanted.__name__[0] in "AEIOU" else "a"
            raise ValidationError(f"The 'data' parameter of Publisher.publish must be {article} "
                                  f"{wanted.__name__} for {self.family} method {self.name!r}; "
                                  f"got {type(data).__name__}.")
        if isinstance(periods, str):  # one period, not its characters
            periods = [periods]
        given = {"periods": periods is not None, "previous": previous is not None,
                 "identifiers": identifiers is not None, "progress": progress is not None,
                 "allow_unprotected": allow_unprotected,
                 "allow_unknown_terms": allow_unknown_terms, "allow_gap": allow_gap,
                 "allow_short_lifespan": allow_short_lifespan, "final": final}
        for name, is_given in given.items():
            if is_given and name not in self._options:
                raise ValidationError(f"The {name!r} parameter of Publisher.publish does not "
                                      f"apply to {self.family} method {self.name!r}.")
        # data is of the family's type (checked above): the family's publisher takes it
        if isinstance(self, TablePublisher) and isinstance(data, Table):
            return self._publish_table(data, allow_violations=allow_violations, progress=progress)
        if isinstance(self, EhrPublisher) and isinstance(data, EhrRecords):
            return self._publish_ehr(data, allow_violations=allow_violations,
                                     identifiers=identifiers, progress=progress)
        assert isinstance(self, SeriesPublisher) and isinstance(data, Dataset)
        from .pipeline.checks import Acknowledgements

        # the caller's allow_* keywords, as the one value the pipeline takes
        acknowledged = Acknowledgements(
            unprotected=allow_unprotected, unknown_terms=allow_unknown_terms, gap=allow_gap,
            short_lifespan=allow_short_lifespan, violations=allow_violations)
        return self._publish_series(data, periods, previous=previous, acknowledged=acknowledged,
                                    final=final)

    def _gate(self, csv_text: str, manifest: dict,
              allow_violations: bool) -> tuple[pd.DataFrame, dict]:
        """The rows as a reader of ``release.csv`` sees them, and the gate's manifest entry
        (one-off releases: tables and EHR)."""
        from .verify import gate_one_off

        rows = read_release_text(csv_text)
        try:
            manifest["verification"] = gate_one_off(f"{self.name} release", rows, manifest)
        except PrivacyViolation as exc:
            if not allow_violations:
                raise
            manifest["verification"] = {**exc.verification, "published_despite_violations": True}
        return rows, manifest


class SeriesPublisher(Publisher):
    """Publishes a periodic :class:`Dataset` as a :class:`Series` (papers 000–002 and the
    baselines): ``Publisher(<periodic method>, ...)`` makes one.

    Args:
        method: A periodic method's name (any case), a
            :class:`~medanon.pipeline.policy.SeriesPolicy` (then no other method parameter) or a
            configured :class:`Anonymizer`.
        seed: For tests and research only: a reproducible source of randomness, recorded in
            every manifest. Default: OS entropy.
        rng: A :class:`~medanon.random.Randomness` instead of ``seed``.
        k: The k of the model (every periodic method but ``none``).
        theta: θ*: a number in (0, 1], ``"frequency"``, or a θ file.
        protect: Protected terms whose θ never exceeds a cap (``{"Death": 0.3}``).
        lifespan: CaseID life span in periods (not for ``ms``).
        on_infeasible: ``refuse`` (the default), ``raise-theta`` or ``suppress-terms``.
        max_withheld: The largest share of a period's cases a release may withhold (10%).
        grouping: ``classes-first`` or ``greedy``.
        alpha: HA only: 002's α.
        ss_rule: HA only: the ss-record rule.
        on_unplaceable: HA only: ``suppress-terms`` (the default) or ``withhold``.
        epsilon: PPMS-DP only: ε per perturbed QID.
        dp_variant: PPMS-DP only: ``strict`` (the default) or ``paper``.
        domains: PPMS-DP only: the public domains of the numeric QIDs.
        dp_aware_grouping: PPMS-DP only: design the groups for the noise.
        case_budget: PPMS-DP only, with ``dp_aware_grouping``: ε per case over the series.
        label_confidence: PPMS-DP_all, strict: the confidence of a perturbed label's level.
        label_mechanism: PPMS-DP_all: ``exponential`` or ``randomized-response``.
        allow_tiny_epsilon: PPMS-DP only: accept an ε below the floor (recorded).
        case_ids: How CaseIDs are published: ``"pseudonym"`` (keyed pseudonyms, the default) or
            ``"real"`` (whose order the gate then reads as adversary knowledge,
            ``docs/attacks-and-verify.md``).
        case_key: The pseudonym key of an earlier publisher whose series this one continues
            (its ``case_ids.key``; operator only).

    Attributes:
        policy: The :class:`~medanon.pipeline.policy.SeriesPolicy` applied, or None for a
            method given by name or object.
        case_ids: How CaseIDs are published (:class:`~medanon.pipeline.case_ids.CaseIds`):
            keyed pseudonyms under a key made here (OS entropy; from the seed when seeded) and
            kept in ``case_ids.key``, or the real CaseIDs.
    """

    family = "periodic"
    _options = ("periods", "previous", "allow_unprotected", "allow_unknown_terms", "allow_gap",
                "allow_short_lifespan", "final")

    def __init__(self, method: PeriodicMethodName | SeriesPolicy | Anonymizer, *,
                 seed: int | None = None, rng: Randomness | None = None, k: int | None = None,
                 theta: float | str | None = None,
                 protect: Mapping[str, float] | Sequence[str] | None = None,
                 lifespan: int | None = None, on_infeasible: OnInfeasible = "refuse",
                 max_withheld: float | None = None, grouping: Grouping | None = None,
                 alpha: float | None = None, ss_rule: str | Mapping[str, int] | None = None,
                 on_unplaceable: OnUnplaceable | None = None,
                 epsilon: float | str | None = None, dp_variant: DpVariant = "strict",
                 domains: Sequence[str] | Mapping[str, tuple[float, float]] | None = None,
                 dp_aware_grouping: bool = False, case_budget: float | str | None = None,
                 label_confidence: float | None = None,
                 label_mechanism: LabelMechanism | None = None,
                 allow_tiny_epsilon: bool = False, case_ids: CaseIdMode = "pseudonym",
                 case_key: bytes | None = None) -> None:
        from .anonymize.base import Anonymizer
        from .pipeline.case_ids import CaseIds, resolve
        from .pipeline.methods import periodic_method
        from .pipeline.policy import SeriesPolicy

        parameters = _given(SeriesPublisher.__init__, locals())
        self._randomness(seed, rng)
        #: the series policy this publisher applies (None for a method given by name or object)
        self.policy: SeriesPolicy | None = None
        chosen: str | Anonymizer = method if not isinstance(method, SeriesPolicy) else method.method
        if isinstance(method, SeriesPolicy):
            if parameters:
                raise ValidationError(f"A SeriesPolicy holds its parameters: Publisher takes no "
                                      f"others beside it; got {', '.join(sorted(parameters))}.")
            self.policy = method
            # its parameters, but on_case_budget (the store's: publish_periods) and how CaseIDs
            # are published (this publisher's, below)
            parameters = {k: v for k, v in method.parameters.items() if k != "on_case_budget"}
            case_ids = parameters.pop("case_ids", case_ids)
        self.parameters = dict(parameters)
        if isinstance(chosen, Anonymizer):
            if parameters:
                raise ValidationError(f"The 'parameters' of Publisher apply to a method name; "
                                      f"{type(chosen).__name__} is configured already (got "
                                      f"{', '.join(parameters)}).")
            self.method = chosen
        elif isinstance(chosen, str):
            try:
                self.method = periodic_method(chosen.strip().lower(), **parameters)
            except ValidationError as exc:  # told as the caller wrote it: Publisher's keywords
                raise in_callers_words(exc, "Publisher") from None
        else:
            raise ValidationError(f"The 'method' parameter of SeriesPublisher must be a periodic "
                                  f"method's name, a SeriesPolicy or an Anonymizer; got "
                                  f"{type(chosen).__name__}.")
        self.name = str(self.method.name)
        if case_key is not None:
            if not isinstance(case_key, bytes):
                raise ValidationError(f"The 'case_key' parameter of Publisher must be bytes "
                                      f"(a Publisher's case_key); got "
                                      f"{type(case_key).__name__}.")
            self.case_ids = CaseIds(case_ids, case_key if case_ids == "pseudonym" else None)
        else:
            self.case_ids = resolve(case_ids, self.rng, None)[0]

    def _publish_series(self, data: Dataset, periods: Sequence[str] | None, *,
                        previous: PublishedSeries | None, acknowledged: Acknowledgements,
                        final: bool) -> "Series":
        from .pipeline.checks import run_checks
        from .pipeline.publish import release_steps

        from .pipeline.case_ids import check_injective, mode_of
        from .published.case_ids import highest_case_id

        series = (previous if previous is not None
                  else empty_series(data.schema, data._hierarchies))
        before = mode_of(series.manifests)
        if before is not None and before != self.case_ids.mode:
            raise ValidationError(f"The 'previous' series of Publisher.publish publishes {before} "
                                  f"CaseIDs and this publisher {self.case_ids.mode} ones: a series "
                                  f"keeps one form (give case_ids={before!r}).")
        real = [c for p in data.periods for c in data.records(p)[data.schema.case_id].astype(str)]
        check_injective(real, self.case_ids.of(real), where="Publisher.publish")
        for label, rows in series.releases.items():
            # a previous series published under another key would silently not link
            if before == "pseudonym" and len(rows) and label in data.periods:
                ours = self.case_ids.of(data.records(label)[data.schema.case_id].astype(str))
                if not set(ours) & set(rows["case_id"].astype(str)):
                    raise ValidationError(
                        f"The 'previous' series of Publisher.publish publishes {label} under "
                        f"another CaseID key than this publisher's, so its cases would not link: "
                        f"give the publisher that made it, or its key "
                        f"(Publisher(..., case_key=that_publisher.case_ids.key)).")
                break
        highest = (highest_case_id(c for rows in series.releases.values() if len(rows)
                                   for c in rows["case_id"].astype(str))
                   if self.case_ids.mode == "real" else None)
        wanted = [parse_period(p).label for p in periods] if periods else [
            p for p in data.periods if p not in series.releases]
        verdict = None
        vocabulary, reports, span = data.safety_facts()
        recorded = run_checks(
            self.method, sorted(wanted, key=parse_period), published=series.manifests,
            vocabulary=vocabulary, reports=reports, longest_span=span,
            acknowledged=acknowledged, schema=data.schema, final=final)
        made = []
        for prepared in release_steps(data.schema, self.method, wanted, data.records, self.rng,
                                      series=series, available=data.periods,
                                      publish_despite_violations=acknowledged.violations,
                                      acknowledged=recorded, ingest=data.ingest_report,
                                      final=final, case_ids=self.case_ids,
                                      highest_earlier=highest, hierarchies=data._hierarchies):
            made.append(Release(prepared.period, prepared.rows, prepared.manifest,
                                prepared.ledger, prepared.operator, prepared.seconds))
            # release_steps holds this series in memory (no store), so it hands each one back
            assert prepared.series is not None
            series, verdict = prepared.series, prepared.verdict
        _warn_unbounded(made)
        return Series._of(series, tuple(made), verdict)


class TablePublisher(Publisher):
    """Publishes a :class:`Table` as a :class:`TableRelease` (paper 004's IPA and its
    baselines): ``Publisher(<table method>, ...)`` makes one.

    Args:
        method: A table method's name (any case) or a configured table method.
        seed: For tests and research only: a reproducible source of randomness, recorded in
            every manifest. Default: OS entropy.
        rng: A :class:`~medanon.random.Randomness` instead of ``seed``.
        epsilon: The privacy budget (``ipa``, ``dphist``).
        k: ``kanon`` only (default 10).
        max_suppression: ``kanon`` only (default no suppression).
        threshold: ``ipa`` only (default 2).
        budget_split: ``ipa`` only (default the paper's split).
        node: ``dphist`` only: the generalization levels.
        selection: ``ipa`` only: ``utility`` (the default) or ``paper``.
        min_records: ``ipa`` with ``utility`` only: a public lower bound on the records.
        allow_tiny_epsilon: ``ipa``, ``dphist``: accept an ε below the floor (recorded).

    The parameters are :func:`~medanon.pipeline.methods.table_method`'s; it describes them.
    """

    family = "table"
    _options = ("progress",)

    def __init__(self, method: TableMethodName | TableMethod, *, seed: int | None = None,
                 rng: Randomness | None = None, epsilon: float | str | None = None,
                 k: int | None = None, max_suppression: float | None = None,
                 threshold: int | None = None, budget_split: str | None = None,
                 node: str | list[int] | None = None, selection: IpaSelection | None = None,
                 min_records: int | None = None, allow_tiny_epsilon: bool = False) -> None:
        from .pipeline.methods import table_method

        parameters = _given(TablePublisher.__init__, locals())
        self._randomness(seed, rng)
        self.parameters = dict(parameters)
        if isinstance(method, str):
            try:
                self.method = table_method(method.strip().lower(), **parameters)
            except ValidationError as exc:  # told as the caller wrote it: Publisher's keywords
                raise in_callers_words(exc, "Publisher") from None
        elif _is_table_method(method):
            if parameters:
                raise ValidationError(f"The 'parameters' of Publisher apply to a method name; "
                                      f"{type(method).__name__} is configured already (got "
                                      f"{', '.join(parameters)}).")
            self.method = method
        else:
            raise ValidationError(f"The 'method' parameter of TablePublisher must be a table "
                                  f"method's name or a configured table method; got "
                                  f"{type(method).__name__}.")
        self.name = str(self.method.name)

    def _publish_table(self, data: Table, *, allow_violations: bool,
                       progress: Callable[[int, int], None] | None) -> TableRelease:
        from .metrics.tabular import evaluate_queries
        from .pipeline import tabular as table_pipeline

        started = time.perf_counter()
        # the method's DP noise (and IPA's row shuffle) reads the exact bits of self.rng only
        result = self.method.anonymize(data.data, noise=self.rng, progress=progress)
        seconds = time.perf_counter() - started
        manifest = table_pipeline.tabular_manifest(result, data.data,
                                                   randomness=self.rng.describe())
        text = table_pipeline.tabular_csv(result.table)
        rows, manifest = self._gate(text, manifest, allow_violations)
        queries = evaluate_queries(data.data, result.table)
        summary = {**result.summary(), "seconds": round(seconds, 3), "input_sha256": data.digest,
                   "queries": [q.to_dict() for q in queries], "guarantee": result.guarantee,
                   "does_not_guarantee": result.does_not_guarantee}
        return TableRelease(rows, manifest, text, summary, result)


class EhrPublisher(Publisher):
    """Publishes :class:`EhrRecords` as an :class:`EhrRelease` (paper 003's ClinSimRR and its
    baselines): ``Publisher(<EHR method>, ...)`` makes one.

    Args:
        method: An EHR method's name (any case).
        seed: For tests and research only: a reproducible source of randomness, recorded in
            every manifest. Default: OS entropy.
        rng: A :class:`~medanon.random.Randomness` instead of ``seed``.
        epsilon: Per released element (not for ``suppression``).
        gamma: ``clinsimrr``, ``umaxrr-yp``: the protected-set extension's γ (0.05).
        b_max: ``clinsimrr``, ``umaxrr-yp``: the largest block (16).
        alpha: The extension's α (0.5).
        max_path_length: The extension's longest path (2).
        sensitive: The sensitive codes: a preset name (default ``va-7332``) or the codes.
        delta_t_days: The correlation window in days (300).
        aux_fraction: The share of patients the attack learns from (0.8).
        min_predictions: The fewest predictions an attack result needs (10).
        compare: Also evaluate UMAXRR beside ClinSimRR, for the summary only (False).
        time_resolution: ``"day"`` (the default), ``"hour"`` or ``"minute"``: the published
            ``time`` is floored to it; the run itself uses the exact times.
    """

    family = "ehr"
    _options = ("identifiers", "progress")

    def __init__(self, method: EhrMethodName, *, seed: int | None = None,
                 rng: Randomness | None = None, epsilon: float | str | None = None,
                 gamma: float | None = None, b_max: int | None = None, alpha: float = 0.5,
                 max_path_length: int = 2, sensitive: str | Sequence[str] = "va-7332",
                 delta_t_days: float = 300.0, aux_fraction: float = 0.8,
                 min_predictions: int = 10, compare: bool = False,
                 time_resolution: TimeResolution = "day") -> None:
        from .pipeline.ehr import check_time_resolution
        from .pipeline.methods import EHR_METHODS, ehr_method

        parameters = _given(EhrPublisher.__init__, locals())
        self._randomness(seed, rng)
        self.parameters = dict(parameters)
        if not isinstance(method, str):
            raise ValidationError(f"The 'method' parameter of EhrPublisher must be one of "
                                  f"{', '.join(EHR_METHODS)}; got {type(method).__name__}.")
        name = method.strip().lower()
        mechanism = {p: v for p, v in parameters.items()
                     if p not in _EHR_RUN and p not in _EHR_PUBLISH}
        try:
            configured = ehr_method(name, **mechanism)
        except ValidationError as exc:  # told as the caller wrote it: Publisher's keywords
            raise in_callers_words(exc, "Publisher") from None
        run: dict[str, Any] = {**_EHR_RUN,
                               **{p: v for p, v in parameters.items() if p in _EHR_RUN}}
        owner = "Publisher"
        self._publish_form = {"time_resolution": check_time_resolution(
            parameters.get("time_resolution", _EHR_PUBLISH["time_resolution"]), owner=owner)}
        sensitive = run["sensitive"]
        if isinstance(sensitive, str):
            from .hierarchies.icd9 import SENSITIVE_PRESETS

            if sensitive not in SENSITIVE_PRESETS:
                raise ValidationError(f"The 'sensitive' parameter of {owner} must be a preset "
                                      f"({', '.join(sorted(SENSITIVE_PRESETS))}) or a list of "
                                      f"codes; got {sensitive!r}.")
        else:
            run["sensitive"] = [str(c) for c in sensitive]
            if not run["sensitive"]:
                raise ValidationError(f"The 'sensitive' parameter of {owner} must name at least "
                                      f"one code.")
        aux = check_fraction(run["aux_fraction"], name="aux_fraction", owner=owner)
        if aux >= 1.0:
            raise ValidationError(f"The 'aux_fraction' parameter of {owner} must be in (0, 1); "
                                  f"got {run['aux_fraction']!r}.")
        run["min_predictions"] = check_int(run["min_predictions"], name="min_predictions",
                                           owner=owner, minimum=1)
        if not isinstance(run["compare"], bool):
            raise ValidationError(f"The 'compare' parameter of {owner} must be True or False; "
                                  f"got {run['compare']!r}.")
        # the mechanism's own parameters, with ehr_method's defaults, for run_clinsim
        run.update(epsilon=mechanism.get("epsilon"),
                   gamma=mechanism.get("gamma") if mechanism.get("gamma") is not None else 0.05,
                   b_max=mechanism.get("b_max") if mechanism.get("b_max") is not None else 16,
                   alpha=mechanism.get("alpha", 0.5),
                   max_path_length=mechanism.get("max_path_length", 2))
        self._run = run
        self.method = configured
        self.name = str(self.method.name)

    def _publish_ehr(self, data: EhrRecords, *, allow_violations: bool, identifiers: Any,
                     progress: Callable[[str], None] | None) -> EhrRelease:
        from .pipeline import clinsim as ehr_pipeline
        from .pipeline.ehr import Pseudonyms, ehr_csv

        if identifiers is None:
            # never from self.rng: its seed is in the manifest
            identifiers = Pseudonyms.fresh()
        elif not isinstance(identifiers, Pseudonyms):
            raise ValidationError(f"The 'identifiers' parameter of Publisher.publish must be a "
                                  f"Pseudonyms; got {type(identifiers).__name__}.")
        # one randomness: the patient split from its generator, the mechanism from its bits
        run = ehr_pipeline.run_clinsim(data.data, method=self.name, **self._run, rng=self.rng,
                                       progress=progress)
        table, manifest = ehr_pipeline.build_release(
            run, identifiers=identifiers, min_admissions=data.min_admissions,
            dates_reliable=data.dates_reliable, **self._publish_form)
        text = ehr_csv(table)
        rows, manifest = self._gate(text, manifest, allow_violations)
        # Operator only: the input's digest lets the operator check which data was released;
        # the manifest holds no function of the input.
        summary = {**run.summary(), "input_sha256": data.digest(),
                   "dates_reliable": data.dates_reliable,
                   # why time is or is not published (the reader's words, e.g. two-digit years)
                   "dates": data.data.source.get("dates"),
                   "identifiers": identifiers.describe(),
                   "time_resolution": self._publish_form["time_resolution"],
                   "guarantee": manifest["privacy"]["guarantee"],
                   "does_not_guarantee": manifest["privacy"]["does_not_guarantee"]}
        return EhrRelease(rows, manifest, text, summary, run=run)


#: the publisher of each family (what Publisher(...) makes)
_PUBLISHERS: dict[str, type[Publisher]] = {"periodic": SeriesPublisher, "table": TablePublisher,
                                           "ehr": EhrPublisher}


SIGNAL_SIDES = ("original", "release")


#: the options of signal_table a caller of :func:`signals` may give (the rest come from the data)
_SIGNAL_OPTIONS = ("scopes", "stratify_by", "drug_columns", "reaction_column", "fdr", "rr0",
                   "min_count")


def _check_signal_options(options: Mapping[str, Any]) -> None:
    unknown = [k for k in options if k not in _SIGNAL_OPTIONS]
    if unknown:
        raise ValidationError(f"The signals function takes the options "
                              f"{', '.join(_SIGNAL_OPTIONS)}; got {', '.join(map(repr, unknown))} "
                              f"(hierarchies and perturbed columns are read from the series).")


def _with_age_groups(rows: pd.DataFrame, quarter: Any) -> pd.DataFrame:
    """The published rows of a FAERS-layout quarter with FDA's ``age_grp`` of each case's latest
    report beside them (:data:`medanon.metrics.signal_table.AGE_GROUP_COLUMN`): the age stratum
    when the age itself is blank (docs/metrics.md)."""
    from .metrics.signal_table import AGE_GROUP_COLUMN

    if quarter.age_groups is None or "case_id" not in rows.columns:
        return rows
    # records are sorted by case, version and report: the last row of a case is its latest
    latest = (pd.Series(quarter.age_groups, index=quarter.records["case_id"].astype(str))
              .groupby(level=0, sort=False).last())
    codes = rows["case_id"].astype(str).map(latest)
    return rows.assign(**{AGE_GROUP_COLUMN: codes.where(codes.notna(), "").astype(str)})


def _signals_of(series: PublishedSeries, *, progress: Callable[[str], None] | None = None,
                on_start: Callable[[int], None] | None = None, **options: Any) -> pd.DataFrame:
    from .published.faers_layout import perturbed_qids

    hierarchies = {q.name: q.taxonomy for q in series.qids if q.taxonomy is not None}
    perturbed = {p: list(perturbed_qids(m, p)) for p, m in series.manifests.items()}
    return _signal_table(series.releases, progress=progress, on_start=on_start,
                         hierarchies=hierarchies, perturbed=perturbed, source=series.source,
                         **options)


def _signal_table(rows: Mapping[str, pd.DataFrame], *, progress: Callable[[str], None] | None,
                  on_start: Callable[[int], None] | None, **options: Any) -> pd.DataFrame:
    """:func:`~medanon.metrics.signal_table.signal_table` of rows (read, or read when the
    table comes to them), telling ``on_start`` its number of progress calls first."""
    from .metrics.signal_table import DEFAULT_SCOPES, signal_table, signal_table_steps

    if on_start is not None:
        on_start(signal_table_steps(rows, scopes=options.get("scopes", DEFAULT_SCOPES)))
    return signal_table(rows, progress=progress, **options)


def signals(series: str | Path | None = None, *, store: str | Path | None = None,
            side: str = "original", progress: Callable[[str], None] | None = None,
            on_start: Callable[[int], None] | None = None, **options: Any) -> pd.DataFrame:
    """Screen every drug–reaction pair of a series, one row per pair and scope
    (:func:`medanon.metrics.signal_table.signal_table`: MGPS, BCPNN, PRR/ROR, FDR decisions;
    ``attrs["signals"]`` holds the priors and their fit diagnostics).

    Args:
        series: A published series folder: the release format (csv or parquet), or a series
            exported in the FAERS ASCII layout (read as FAERS quarters are ingested; a perturbed
            QID's cells are not FDA's columns there, so they read as missing).
        store: A release store instead: its ``side`` ``original`` (the ingested records, as the
            operator sees them; never publish that table) or ``release`` (what it published).
        side: ``original`` or ``release``, with ``store``.
        progress: Called once per finished step of the screening, with its name
            (``signal_table``'s ``progress``). It changes no number.
        on_start: Called once, when the periods are known and before the first pair is
            counted (a store's rows are read afterwards, a release at a time), with the number
            of ``progress`` calls to come
            (:func:`~medanon.metrics.signal_table.signal_table_steps`): what a determinate
            progress bar needs.
        **options: ``scopes``, ``stratify_by``, ``drug_columns``, ``reaction_column``, ``fdr``,
            ``rr0``, ``min_count`` of :func:`~medanon.metrics.signal_table.signal_table`.

    Raises:
        ValidationError: neither or both of ``series`` and ``store``; a bad ``side``; a bad
            option (named).
        InputFormatError: the folder is no series.
        StoreError: the store cannot be opened.
    """
    from .published.format import original_as_published

    if (series is None) == (store is None):
        raise ValidationError("The signals function needs exactly one of 'series' (a published "
                              "series folder) and 'store'.")
    if side not in SIGNAL_SIDES:
        raise ValidationError(f"The 'side' parameter of signals must be one of "
                              f"{', '.join(SIGNAL_SIDES)}; got {side!r}.")
    if series is not None and side != "original":
        raise ValidationError("The 'side' parameter of signals goes with 'store'; a series "
                              "folder is what it publishes.")
    _check_signal_options(options)
    if series is not None:
        folder = Path(series)
        if _faers_layout_series(folder):
            from .data.loaders.faers import read_faers

            schema = Schema.default()
            hierarchies = schema.load_hierarchies()
            rows = {}
            for quarter in read_faers(folder, schema=schema).quarters:
                supers = combine_super_records(quarter.records, schema, hierarchies).frame
                rows[quarter.label] = _with_age_groups(original_as_published(supers, schema),
                                                       quarter)
            return _signal_table(rows, progress=progress, on_start=on_start,
                                 hierarchies=hierarchies,
                                 source=f"FAERS layout {str(folder)!r}", **options)
        return _signals_of(load_series(folder=folder), progress=progress, on_start=on_start,
                           **options)
    from .store import ReleaseStore

    assert store is not None  # exactly one of series and store was given (checked above)
    with ReleaseStore.open(store, read_only=True) as db:
        if side == "release":
            from .metrics.signal_table import AGE_GROUP_COLUMN, signal_table_columns

            # each release is read from the store when the screening comes to it, and let go;
            # of its columns only those the table reads, when the store publishes them all (a
            # column it lacks is named, with the others, by the table's error)
            wanted = signal_table_columns(**options)
            columns = set(db.release_columns())
            if wanted is not None and not set(wanted) - columns - {AGE_GROUP_COLUMN}:
                releases = load_series(store=db, lazy=True, columns=wanted)
            else:
                releases = load_series(store=db, lazy=True)
            return _signals_of(releases, progress=progress, on_start=on_start, **options)
        periods = db.ingested_periods()
        if not periods:
            raise ValidationError(f"Store {str(store)!r} holds no ingested period.")
        hierarchies = db.schema.load_hierarchies()

        def published(period: str) -> pd.DataFrame:
            # the period's super records (a case's reports of the quarter), as the release
            # would publish them if nothing were anonymized
            return original_as_published(
                combine_super_records(db.records(period), db.schema, hierarchies).frame,
                db.schema)

        return _signal_table(ReadOnDemand(periods, published), progress=progress,
                             on_start=on_start, hierarchies=hierarchies,
                             source=f"Store {str(store)!r}, original records", **options)


def _faers_layout_series(folder: Path) -> bool:
    """Whether ``folder`` is a series (or one period) in the FAERS ASCII layout only: with the
    release format beside it (``export --format faers`` writes both), that is read instead."""
    from .published.format import RELEASE_FILES

    if not folder.is_dir():
        return False
    candidates = [folder, *(c for c in folder.iterdir() if c.is_dir())]
    if any((c / name).is_file() for c in candidates for name in RELEASE_FILES):
        return False
    return any(any(f.is_file() and f.name.upper().startswith("DEMO") and f.suffix.lower() == ".txt"
                   for f in c.iterdir()) for c in candidates)
