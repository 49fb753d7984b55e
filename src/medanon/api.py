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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .anonymize.base import Anonymizer
from .pipeline.methods import periodic_method
from .periods import parse_period
from .data.records import SuperRecords, check_record_values, combine_super_records
from .data.schema import Schema
from .errors import ValidationError
from .random import RandomSource, make_random_source
from .pipeline.checks import data_facts, run_checks
from .pipeline.publish import release_steps
from .published.series import PublishedSeries, empty_series, load_series
from .verify import SeriesVerdict, verify_series

__all__ = ["Dataset", "Publisher", "Release", "Series"]


class Dataset:
    """Report-level records per period, with their schema (the private input).

    Args:
        records: One frame per period label, in the schema's layout (one row per report:
            case id, period, version, QIDs, multi-valued columns as tuples).
        schema: The schema (default: the papers' FAERS schema).

    Raises:
        ValidationError: a period label that does not parse, or no period.
        SchemaError / HierarchyError: a value the schema or its hierarchies do not know.
    """

    def __init__(self, records: Mapping[str, pd.DataFrame], schema: Schema | None = None):
        self.schema = schema or Schema.default()
        if not records:
            raise ValidationError("The 'records' parameter of Dataset must hold at least one "
                                  "period.")
        hierarchies = self.schema.load_hierarchies()
        ordered = sorted(((parse_period(p).label, f) for p, f in records.items()),
                         key=lambda item: parse_period(item[0]))
        for _, frame in ordered:
            check_record_values(frame, self.schema, hierarchies)
        self._records = dict(ordered)

    @property
    def periods(self) -> list[str]:
        """The period labels, oldest first."""
        return list(self._records)

    def records(self, period: str) -> pd.DataFrame:
        """The records of one period.

        Raises:
            ValidationError: the dataset has no such period.
        """
        label = parse_period(period).label
        if label not in self._records:
            raise ValidationError(f"The 'period' parameter of Dataset.records names {label}, "
                                  f"which the dataset does not hold ({', '.join(self.periods)}).")
        return self._records[label]

    def super_records(self, period: str) -> SuperRecords:
        """The super records of one period: one per case, its reports combined, as every method
        receives them. Private, like the records: the original side of utility and risk
        measures (``medanon.metrics``) on a release of this period.

        Raises:
            ValidationError: the dataset has no such period.
        """
        return combine_super_records(self.records(period), self.schema,
                                     self.schema.load_hierarchies())

    @classmethod
    def from_faers(cls, source: str | Path, *, schema: Schema | None = None,
                   keep_missing: bool = False) -> "Dataset":
        """Read FAERS quarterly extracts (a zip, a quarter folder or a folder of quarters).

        Cases on FDA's DELETE lists are removed from every period.
        """
        from .data.loaders.faers import read_faers

        found = read_faers(source, keep_missing=keep_missing, schema=schema)
        deleted = set(found.deleted_case_ids)
        records = {}
        for quarter in found.quarters:
            frame = quarter.records
            records[quarter.period.label] = frame[~frame["case_id"].astype(str).isin(deleted)]
        return cls(records, schema)

    @classmethod
    def from_dataframe(cls, frame: pd.DataFrame, schema: Schema | None = None) -> "Dataset":
        """Split one frame of report-level records by its period column."""
        schema = schema or Schema.default()
        if schema.period not in frame.columns:
            raise ValidationError(f"The 'frame' parameter of Dataset.from_dataframe lacks the "
                                  f"period column {schema.period!r}.")
        labels = frame[schema.period].astype(str)
        return cls({p: frame[labels == p].reset_index(drop=True) for p in labels.unique()}, schema)

    @classmethod
    def synthetic_faers(cls, folder: str | Path, *, periods: int = 4, cases: int = 500,
                        seed: int | None = None) -> "Dataset":
        """Write a synthetic FAERS-like series into the new ``folder`` and read it back."""
        from .data.synth.faers import write_faers_series

        write_faers_series(folder, periods=periods, cases=cases, seed=seed)
        return cls.from_faers(folder)


@dataclass(frozen=True)
class Release:
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
    def verdict(self) -> str:
        """The gate's verdict: ``passed``, ``violated`` (published despite violations, only with
        ``allow_violations``) or ``not-applicable`` (a method without a privacy model)."""
        return str(self.manifest["verification"]["verdict"])

    @property
    def verified(self) -> bool:
        """Whether the gate checked the release against its model and found it holds."""
        return self.verdict == "passed"


@dataclass(frozen=True)
class Series(PublishedSeries):
    """A published series: the releases of each period and their manifests (see
    :class:`~medanon.published.series.PublishedSeries`), with what a user does with one.

    Attributes:
        releases_published: The :class:`Release` objects a :class:`Publisher` just made (empty
            for a series read from a folder).
        gate_verdict: The verify gate's verdict on the whole series as its last release was
            gated (None for a series read from a folder, or when the gate had no model to
            check). :meth:`Publisher.publish` starts from it when this series is its
            ``previous``, instead of verifying these releases again; :meth:`verify` always
            checks afresh.
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

    def verify(self, periods: list[str] | None = None) -> SeriesVerdict:
        """Check each release against the model its manifest declares (:mod:`medanon.verify`)."""
        return verify_series(self, periods)

    def export(self, folder: str | Path, fmt: str = "csv") -> list[Path]:
        """Write the series into the new ``folder``, all or nothing: ``fmt`` ``csv`` is the
        published release format (``PERIOD/release.csv`` + ``manifest.json``), ``parquet`` the
        same rows as Parquet, ``faers`` the FAERS ASCII layout. Returns the period folders."""
        from .pipeline.export import export_releases

        releases = {p: (self.releases[p], self.manifests[p]) for p in self.periods}
        return export_releases(releases, folder, fmt).folders


class Publisher:
    """A configured periodic method that publishes verified releases.

    Args:
        method: A method name (``ms``, ``ppms``, ``ppms+``, ``ppms++``, ``ha``, ``ppms-dp-num``,
            ``ppms-dp-all``, ``none``) or a configured :class:`Anonymizer`.
        seed: For tests and research only: a reproducible source of randomness, recorded in
            every manifest. Default: OS entropy.
        rng: A :class:`~medanon.random.RandomSource` (instead of ``seed``).
        **parameters: The method's parameters (``k``, ``theta``, ``lifespan``, ``alpha``,
            ``epsilon``, ...; see :func:`medanon.pipeline.methods.periodic_method`).

    Raises:
        ValidationError: an unknown method or a parameter it cannot take (named).
    """

    def __init__(self, method: str | Anonymizer, *, seed: int | None = None,
                 rng: RandomSource | None = None, **parameters: Any):
        if isinstance(method, Anonymizer):
            if parameters:
                raise ValidationError(f"The 'parameters' of Publisher apply to a method name; "
                                      f"{type(method).__name__} is configured already (got "
                                      f"{', '.join(parameters)}).")
            self.method = method
        else:
            self.method = periodic_method(method, **parameters)
        if rng is not None and seed is not None:
            raise ValidationError("Give the 'seed' or the 'rng' parameter of Publisher, not both.")
        self.rng = rng if rng is not None else make_random_source(seed)

    def publish(self, data: Dataset, periods: Sequence[str] | None = None, *,
                previous: PublishedSeries | None = None, allow_violations: bool = False,
                allow_unprotected: bool = False, allow_unknown_terms: bool = False,
                allow_gap: bool = False, allow_short_lifespan: bool = False) -> Series:
        """Publish ``periods`` of ``data`` (default: all) in time order, each verified by the gate.

        Args:
            data: The private input.
            periods: The periods to publish (default: every period of ``data`` not in
                ``previous``). A method that needs the next period (HA) publishes only the
                periods whose next one ``data`` holds; the others wait.
            previous: The releases already published (their CaseIDs are linked). To publish a
                series one period at a time, pass the :class:`Series` the last call returned:
                the gate then starts from its verdict (:attr:`Series.gate_verdict`).
            allow_violations: Keep a release the gate finds violating (its verdict says so and
                the manifest lists the violations); by default it is refused.
            allow_unprotected, allow_unknown_terms, allow_gap, allow_short_lifespan: Overrides
                of the safety checks (:mod:`medanon.pipeline.checks`): method ``none``; θ-table
                terms ``data`` does not hold; passing over a missing or empty period; a
                ``lifespan`` shorter than a case's span in ``data``. Recorded in each manifest.

        Returns:
            The series with the new releases; ``releases_published`` lists them.

        Raises:
            PrivacyViolation: the gate found a violation (without ``allow_violations``).
            InfeasibleError / ValidationError: as the method raises them.
        """
        series = previous if previous is not None else empty_series(data.schema)
        wanted = [parse_period(p).label for p in periods] if periods else [
            p for p in data.periods if p not in series.releases]
        verdict = getattr(previous, "gate_verdict", None)
        vocabulary, reports, span = data_facts({p: data.records(p) for p in data.periods},
                                               data.schema)
        acknowledged = run_checks(
            self.method, sorted(wanted, key=parse_period), published=series.manifests,
            vocabulary=vocabulary, reports=reports, longest_span=span,
            allow_unprotected=allow_unprotected, allow_unknown_terms=allow_unknown_terms,
            allow_gap=allow_gap, allow_short_lifespan=allow_short_lifespan)
        made = []
        for prepared in release_steps(data.schema, self.method, wanted, data.records, self.rng,
                                      series=series, available=data.periods, before=verdict,
                                      publish_despite_violations=allow_violations,
                                      acknowledged=acknowledged):
            made.append(Release(prepared.period, prepared.rows, prepared.manifest,
                                prepared.ledger, prepared.operator, prepared.seconds))
            series, verdict = prepared.series, prepared.verdict
        return Series._of(series, tuple(made), verdict)
