"""General tabular microdata: a schema naming dimension attributes and one informative attribute.

This is the input of IPA (paper 004) and its baselines: one record per individual, *dimension*
attributes (quasi-identifiers an adversary may know: age, sex, region...) that are generalized
full-domain along a :class:`~medanon.hierarchies.levels.LevelHierarchy`, and one *informative*
attribute (the diagnosis) that is published unchanged. The schema is a TOML file::

    [table]
    name = "patients"
    informative = "diagnosis"
    informative_domain = ["A09.9", "I63.9", ...]   # optional: the public list of possible values

    [[table.dimension]]
    name = "age"
    kind = "numeric"
    domain = [0, 99]                                # whole numbers lo..hi
    levels = [{ width = 10 }, { cuts = [0, 30, 60] }]   # "*" is added on top

    [[table.dimension]]
    name = "sex"
    kind = "categorical"
    values = ["F", "M"]                             # flat: the value, then "*"

    [[table.dimension]]
    name = "region"
    kind = "categorical"
    # an ARX file (leaf;level1;...;*), or inline rows [["11", "Capital", "*"], ...]
    hierarchy = "region.csv"

    [[table.query]]              # utility queries (see medanon.metrics.queries)
    name = "Q1"
    aggregate = "count"          # or "mean" with of = "<numeric dimension>"
    group_by = "age"
    bin = 5
    where = { sex = "M", surgery = "N" }
    informative_prefix = ["I6"]

When ``informative_domain`` is absent the domain is the set of values present in the data; the
manifest then says so, because that set is itself taken from the private data (the DP histogram,
whose ε-DP claim needs a public domain, refuses such a table).
"""

from __future__ import annotations

import csv
import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError as PydanticValidationError, model_validator

from .._validation import pydantic_problems
from ..accounting.oneoff import InputFingerprint
from ..errors import HierarchyError, InputFormatError, SchemaError
from ..hierarchies.levels import LevelHierarchy, categorical_levels, numeric_levels

__all__ = ["DimensionSpec", "QuerySpec", "TableSchema", "TabularData", "load_table", "read_table"]

_SHOWN = 5


class _Level(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    width: int | None = Field(default=None, gt=0)
    cuts: tuple[int, ...] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> "_Level":
        if (self.width is None) == (self.cuts is None):
            raise ValueError("a numeric level is either { width = W } or { cuts = [...] }")
        return self


class DimensionSpec(BaseModel):
    """One dimension attribute and its generalization levels."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: Literal["numeric", "categorical"]
    domain: tuple[int, int] | None = None
    levels: tuple[_Level, ...] = ()
    values: tuple[str, ...] | None = None
    hierarchy: str | tuple[tuple[str, ...], ...] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "DimensionSpec":
        if self.kind == "numeric":
            if self.domain is None:
                raise ValueError(f"numeric dimension {self.name!r} needs domain = [lo, hi]")
            if self.values is not None or self.hierarchy is not None:
                raise ValueError(f"numeric dimension {self.name!r} takes 'levels', not "
                                 f"'values' or 'hierarchy'")
        else:
            if (self.values is None) == (self.hierarchy is None):
                raise ValueError(f"categorical dimension {self.name!r} needs exactly one of "
                                 f"'values' (flat) or 'hierarchy' (ARX rows or file)")
            if self.domain is not None or self.levels:
                raise ValueError(f"categorical dimension {self.name!r} takes no 'domain'/'levels'")
        return self

    def build(self, base: Path | None) -> LevelHierarchy:
        """The dimension's :class:`LevelHierarchy` (ARX paths resolve against ``base``)."""
        if self.kind == "numeric":
            # _consistent, the model's validator, refuses a numeric dimension without a domain.
            assert self.domain is not None
            lo, hi = self.domain
            starts: list[list[int]] = []
            for level in self.levels:
                if level.cuts is not None:
                    starts.append(list(level.cuts))
                else:
                    assert level.width is not None  # _Level._one_of: a width when no cuts
                    starts.append(list(range(lo, hi + 1, level.width)))
            return numeric_levels(self.name, lo, hi, starts)
        if self.values is not None:
            return categorical_levels(self.name, [[v] for v in self.values])
        if isinstance(self.hierarchy, str):
            return categorical_levels(self.name, _read_arx_rows(self.hierarchy, base, self.name))
        # _consistent: a categorical dimension has exactly one of 'values' and 'hierarchy'.
        assert self.hierarchy is not None
        return categorical_levels(self.name, self.hierarchy)


def _read_arx_rows(path_text: str, base: Path | None, name: str) -> list[list[str]]:
    path = Path(path_text)
    if not path.is_absolute() and base is not None:
        path = base / path
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return [row for row in csv.reader(fh, delimiter=";") if row]
    except FileNotFoundError:
        raise HierarchyError(f"The hierarchy file {str(path)!r} of {name!r} does not exist.") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise HierarchyError(f"The hierarchy file {str(path)!r} of {name!r} is unreadable: {exc}.") from None


class QuerySpec(BaseModel):
    """An aggregate query by bins of a numeric dimension (paper 004's Q1–Q4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    aggregate: Literal["count", "mean"]
    of: str | None = None
    group_by: str
    bin: int = Field(gt=0)
    where: dict[str, str] = Field(default_factory=dict)
    informative_prefix: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _mean_needs_of(self) -> "QuerySpec":
        if (self.aggregate == "mean") != (self.of is not None):
            raise ValueError(f"query {self.name!r}: 'of' is required for mean and only for mean")
        return self


class TableSchema(BaseModel):
    """Roles of the columns of a tabular data set (see the module docstring for the TOML)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "table"
    informative: str = Field(min_length=1)
    informative_domain: tuple[str, ...] | None = None
    dimensions: tuple[DimensionSpec, ...] = Field(alias="dimension", min_length=1)
    queries: tuple[QuerySpec, ...] = Field(default=(), alias="query")

    @model_validator(mode="after")
    def _names(self) -> "TableSchema":
        names = [d.name for d in self.dimensions] + [self.informative]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"column(s) given more than one role: {', '.join(dup)}")
        if self.informative_domain is not None and not self.informative_domain:
            raise ValueError("'informative_domain' must not be empty when given")
        kinds = {d.name: d.kind for d in self.dimensions}
        for q in self.queries:
            for col in [q.group_by, *([q.of] if q.of else [])]:
                if kinds.get(col) != "numeric":
                    raise ValueError(f"query {q.name!r}: {col!r} is not a numeric dimension")
            for col in q.where:
                if kinds.get(col) != "categorical":
                    raise ValueError(f"query {q.name!r}: 'where' column {col!r} is not a "
                                     f"categorical dimension")
        return self

    @property
    def dimension_names(self) -> tuple[str, ...]:
        """The dimensions' column names, in declaration order."""
        return tuple(d.name for d in self.dimensions)

    @classmethod
    def from_mapping(cls, data: dict, *, source: str = "schema") -> "TableSchema":
        """The schema of a ``[table]`` mapping.

        Raises:
            SchemaError: the mapping is invalid (named with ``source``).
        """
        try:
            return cls.model_validate(data)
        except PydanticValidationError as exc:
            raise SchemaError(f"Invalid table schema in {source}: "
                              f"{pydantic_problems(exc, 'table')}.") from None

    @classmethod
    def from_toml_text(cls, text: str, *, source: str = "schema") -> "TableSchema":
        """The schema of TOML text with a ``[table]`` section.

        Raises:
            SchemaError: not TOML, no ``[table]`` section, or an invalid one.
        """
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SchemaError(f"{source} is not valid TOML: {exc}.") from None
        if not isinstance(data.get("table"), dict):
            raise SchemaError(f"{source} has no [table] section (a table schema names "
                              f"[[table.dimension]] entries and the informative column).")
        return cls.from_mapping(data["table"], source=source)

    @classmethod
    def from_toml(cls, path: str | Path) -> "TableSchema":
        """The schema of a TOML file with a ``[table]`` section.

        Raises:
            SchemaError: the file is missing, not TOML, or its schema is invalid.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SchemaError(f"Schema file {str(path)!r} does not exist.") from None
        except UnicodeDecodeError as exc:
            raise SchemaError(f"Schema file {str(path)!r} is not UTF-8 text: {exc}.") from None
        return cls.from_toml_text(text, source=f"schema file {str(path)!r}")


@dataclass(frozen=True, eq=False)
class TabularData:
    """A table encoded for full-domain generalization.

    Attributes:
        schema: The :class:`TableSchema`.
        hierarchies: One :class:`LevelHierarchy` per dimension, in schema order.
        codes: ``(n, q)`` int32 leaf codes of the dimension attributes.
        informative: ``(n,)`` int32 codes into ``informative_domain``.
        informative_domain: Every possible informative value (sorted).
        domain_public: Whether that domain came from the schema (public) or from the data.
        frame: The input columns as read (dimensions and the informative attribute).
        digest: SHA-256 of the encoded table (kept out of published manifests: see ``release``).
    """

    schema: TableSchema
    hierarchies: tuple[LevelHierarchy, ...]
    codes: np.ndarray
    informative: np.ndarray
    informative_domain: tuple[str, ...]
    domain_public: bool
    frame: pd.DataFrame
    digest: str

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    @property
    def top_node(self) -> tuple[int, ...]:
        return tuple(h.top for h in self.hierarchies)

    def fingerprint(self) -> InputFingerprint:
        """The table's identity for the one-off ledger: its rows as a multiset (the dimensions'
        leaf codes, fixed by the schema's hierarchies, and the informative value's text), so the
        same rows in another order are the same input and a table sharing most rows with an
        earlier one is recognised (:mod:`medanon.accounting.oneoff`). Operator-only."""
        columns = {f"d{j}": self.codes[:, j] for j in range(self.codes.shape[1])}
        columns["informative"] = self.frame[self.schema.informative].to_numpy()
        return InputFingerprint.of_rows(pd.DataFrame(columns))


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV (any text column stays text) or a Parquet file (through DuckDB).

    Raises:
        InputFormatError: missing file, unknown extension, or unreadable content.
    """
    path = Path(path)
    if not path.exists():
        raise InputFormatError(f"Input file {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".txt", ".gz"):
            return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
        if suffix in (".parquet", ".pq"):
            import duckdb
            with duckdb.connect() as con:
                return con.execute("SELECT * FROM read_parquet(?)", [str(path)]).df()
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"{str(path)!r} is not a readable CSV file: {exc}.") from None
    except Exception as exc:  # DuckDB raises its own exception classes
        if type(exc).__module__.startswith("duckdb") or type(exc).__module__.startswith("_duckdb"):
            raise InputFormatError(f"{str(path)!r} is not a readable Parquet file: {exc}.") from None
        raise
    raise InputFormatError(f"{str(path)!r}: unknown table format {suffix!r}; use .csv or .parquet.")


def _bad_values(column: str, values: pd.Series, bad: np.ndarray, what: str) -> InputFormatError:
    rows = np.flatnonzero(bad)
    shown = ", ".join(f"row {r + 2}: {values.iloc[r]!r}" for r in rows[:_SHOWN])
    more = f" and {len(rows) - _SHOWN} more" if len(rows) > _SHOWN else ""
    return InputFormatError(f"Column {column!r} has {len(rows)} value(s) {what} ({shown}{more}).")


def load_table(frame: pd.DataFrame | str | Path, schema: TableSchema, *,
               schema_dir: Path | None = None) -> TabularData:
    """Check and encode a table against ``schema``.

    Args:
        frame: A DataFrame, or a path to a CSV/Parquet file.
        schema: The table schema.
        schema_dir: Folder against which relative hierarchy paths resolve.

    Raises:
        SchemaError: a schema column is missing from the data.
        InputFormatError: a missing value, a value outside its hierarchy or domain, or an
            informative value outside the declared ``informative_domain``.
        HierarchyError: an invalid hierarchy.
    """
    if not isinstance(frame, pd.DataFrame):
        frame = read_table(frame)
    columns = [*schema.dimension_names, schema.informative]
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SchemaError(f"Table schema {schema.name!r} names column(s) the data does not have: "
                          f"{', '.join(repr(c) for c in missing)}. Available: "
                          f"{', '.join(repr(str(c)) for c in frame.columns)}.")
    if len(frame) == 0:
        raise InputFormatError("The table has no rows.")
    data = frame[columns].reset_index(drop=True)
    for column in columns:
        empty = data[column].isna().to_numpy()
        if empty.any():
            raise _bad_values(column, data[column], empty,
                              "missing; IPA needs complete records (drop or impute them first)")
    hierarchies = tuple(d.build(schema_dir) for d in schema.dimensions)
    codes = np.empty((len(data), len(hierarchies)), dtype=np.int32)
    for j, (spec, h) in enumerate(zip(schema.dimensions, hierarchies)):
        values = data[spec.name]
        if spec.kind == "numeric":
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
            codes[:, j], bad = h.encode(numbers)
            what = f"that are not whole numbers in [{h.lo}, {h.hi}]"
        else:
            text = values.astype(str).str.strip()
            data[spec.name] = text
            codes[:, j], bad = h.encode(text.to_numpy())
            what = "that are not leaves of its hierarchy"
        if bad.any():
            raise _bad_values(spec.name, values, bad, what)
    informative_text = data[schema.informative].astype(str).str.strip()
    data[schema.informative] = informative_text
    if schema.informative_domain is not None:
        domain = tuple(sorted(set(schema.informative_domain)))
        public = True
    else:
        domain = tuple(sorted(informative_text.unique()))
        public = False
    index = {v: i for i, v in enumerate(domain)}
    mapped = informative_text.map(index)
    bad = mapped.isna().to_numpy()
    if bad.any():
        raise _bad_values(schema.informative, informative_text, bad,
                          "outside the schema's informative_domain")
    informative = mapped.to_numpy(dtype=np.int32)
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(codes).tobytes())
    digest.update(informative.tobytes())
    return TabularData(schema=schema, hierarchies=hierarchies, codes=codes, informative=informative,
                       informative_domain=domain, domain_public=public, frame=data,
                       digest=digest.hexdigest())
