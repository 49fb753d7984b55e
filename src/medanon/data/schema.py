"""Column roles: which columns identify a case, which are quasi-identifiers, which are sensitive.

A :class:`Schema` is declared in Python or in a TOML file (validated with pydantic, so a typo
gives one clear :class:`~medanon.errors.SchemaError` instead of a crash later)::

    [schema]
    name = "faers"
    case_id = "case_id"
    period = "period"
    sensitive = ["indications", "reactions"]   # multi-valued sensitive attributes
    multi = ["drugs"]                           # multi-valued, published as is
    insensitive = []                            # single-valued, published as is
    identifiers = ["report_id"]                 # kept in the store, never published
    private = ["age_years"]                     # kept for evaluation, never published
    dates = { fda_dt = "year" }                 # FAERS dates, published at day/month/year
    protected_terms = { "Death" = 0.3 }         # sensitive terms whose theta never exceeds a cap

    [[schema.qid]]
    name = "age"
    kind = "categorical"
    hierarchy = "mesh-age"      # a built-in name, or a path to an ARX hierarchy file

    [[schema.qid]]
    name = "weight"
    kind = "numeric"
    domain = [0, 300]           # optional public bounds (the strict DP variant needs them)

The default schema (:meth:`Schema.default`) is the one of papers 000-002 over the FAERS loader's
records: QID = {age (MeSH age tree), sex, weight (kg)}, sensitive = {indications, reactions},
with the pharmacovigilance fields published alongside as they are: drugs (every role) and per
role (primary suspect, secondary suspect, concomitant, interacting), outcomes (OUTC codes), and
the receipt dates ``init_fda_dt`` and ``fda_dt`` at year granularity. :meth:`Schema.papers` is
the papers' own schema (drugs only), for records without the other FAERS fields.

Publication order after ``period, case_id, group``: QIDs, sensitive, multi, insensitive, dates.
A date column is neither QID nor sensitive: attacks and verification ignore it, as they ignore
the multi and insensitive columns.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError as PydanticValidationError, model_validator

from .._validation import pydantic_problems
from ..errors import SchemaError
from ..hierarchies import BUILTIN_HIERARCHIES, Taxonomy, read_arx

#: how finely a date column is published (:mod:`medanon.data.dates`)
Granularity = Literal["day", "month", "year"]
#: the FAERS loader's columns beyond the papers' (``multi`` and ``dates`` of the default schema)
FAERS_ROLE_COLUMNS = ("drugs_primary_suspect", "drugs_secondary_suspect", "drugs_concomitant",
                      "drugs_interacting")
FAERS_DEFAULT_DATES = {"init_fda_dt": "year", "fda_dt": "year"}


class QIDSpec(BaseModel):
    """One quasi-identifier: numeric (generalized to intervals) or categorical (to a hierarchy)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: Literal["numeric", "categorical"]
    hierarchy: str | None = None
    #: numeric only: the attribute's public domain [lo, hi], known without looking at the data
    #: (e.g. weight 0-300 kg). The strict DP variant calibrates noise to it and clips to it.
    domain: tuple[float, float] | None = None

    @model_validator(mode="after")
    def _categorical_needs_hierarchy(self) -> "QIDSpec":
        if self.kind == "categorical" and not self.hierarchy:
            raise ValueError(f"categorical QID {self.name!r} needs a 'hierarchy' "
                             f"(one of {sorted(BUILTIN_HIERARCHIES)} or a path to an ARX file)")
        if self.domain is not None:
            if self.kind != "numeric":
                raise ValueError(f"QID {self.name!r}: only a numeric QID has a 'domain'")
            lo, hi = self.domain
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"QID {self.name!r}: 'domain' must be two finite numbers "
                                 f"[lo, hi] with lo < hi; got {list(self.domain)}")
        return self


class Schema(BaseModel):
    """Roles of the columns of case-level records."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "custom"
    case_id: str = "case_id"
    period: str = "period"
    qids: tuple[QIDSpec, ...] = Field(alias="qid", min_length=1)
    sensitive: tuple[str, ...] = Field(min_length=1)
    multi: tuple[str, ...] = ()
    insensitive: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    private: tuple[str, ...] = ()
    #: single-valued FAERS dates (``YYYYMMDD``, or partial) published at a granularity:
    #: column -> ``day``, ``month`` or ``year``
    dates: dict[str, Granularity] = Field(default_factory=dict)
    #: sensitive terms (of any sensitive column) whose θ may not exceed a cap in (0, 1],
    #: whatever θ rule a release uses (``models.theta.protect``): a data holder's standing
    #: policy, applied to every release of a store created with this schema
    protected_terms: dict[str, float] = Field(default_factory=dict)

    def __hash__(self) -> int:
        # frozen, but ``dates`` is a dict: hashed through the TOML text, which holds every field
        return hash(self.to_toml())

    @model_validator(mode="after")
    def _names_unique(self) -> "Schema":
        names = self.all_columns
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"column(s) given more than one role: {', '.join(duplicated)}")
        for term, cap in self.protected_terms.items():
            if not term.strip():
                raise ValueError("protected_terms: a term is empty")
            if not (math.isfinite(cap) and 0 < cap <= 1):
                raise ValueError(f"protected_terms: the cap of {term!r} must be in (0, 1]; "
                                 f"got {cap!r}")
        return self

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def default(cls) -> "Schema":
        """The FAERS schema: the papers' QIDs and sensitive attributes (:meth:`papers`), with
        the loader's pharmacovigilance fields published as they are (drugs per role, outcomes)
        and its receipt dates at year granularity."""
        return cls.model_validate({
            **cls._papers_mapping(),
            "multi": ["drugs", *FAERS_ROLE_COLUMNS, "outcomes"],
            "dates": dict(FAERS_DEFAULT_DATES),
        })

    @classmethod
    def papers(cls) -> "Schema":
        """The schema of papers 000-002 over FAERS case records: drugs (every role) published
        alongside, no other FAERS field. For records that hold only the papers' columns (and
        for stores created before the default schema had the other fields)."""
        return cls.model_validate(cls._papers_mapping())

    @staticmethod
    def _papers_mapping() -> dict:
        return {
            "name": "faers",
            "qid": [
                {"name": "age", "kind": "categorical", "hierarchy": "mesh-age"},
                {"name": "sex", "kind": "categorical", "hierarchy": "sex"},
                {"name": "weight", "kind": "numeric", "domain": (0.0, 300.0)},
            ],
            "sensitive": ["indications", "reactions"],
            "multi": ["drugs"],
            "identifiers": ["report_id"],
            "private": ["age_years"],
        }

    @classmethod
    def from_mapping(cls, data: dict, *, source: str = "schema") -> "Schema":
        """Validate a mapping (e.g. the ``[schema]`` table of a TOML file)."""
        try:
            return cls.model_validate(data)
        except PydanticValidationError as exc:
            raise SchemaError(f"Invalid schema in {source}: "
                              f"{pydantic_problems(exc, 'schema')}.") from None

    @classmethod
    def from_toml(cls, path: str | Path) -> "Schema":
        """Read a schema from the ``[schema]`` table of a TOML file.

        Relative hierarchy paths are resolved against the TOML file's folder.
        """
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SchemaError(f"Schema file {str(path)!r} does not exist.") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SchemaError(f"Schema file {str(path)!r} is not valid TOML: {exc}.") from None
        if "schema" not in data or not isinstance(data["schema"], dict):
            raise SchemaError(f"Schema file {str(path)!r} has no [schema] table.")
        table = dict(data["schema"])
        qids = []
        for qid in table.get("qid", []) or []:
            qid = dict(qid) if isinstance(qid, dict) else qid
            if isinstance(qid, dict) and qid.get("hierarchy") and qid["hierarchy"] not in BUILTIN_HIERARCHIES:
                qid["hierarchy"] = str((path.parent / qid["hierarchy"]).resolve())
            qids.append(qid)
        if qids:
            table["qid"] = qids
        return cls.from_mapping(table, source=str(path))

    def to_toml(self) -> str:
        """The schema as TOML text (stored in the release store and manifests)."""
        def quote(s: str) -> str:
            return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

        def array(items: tuple[str, ...]) -> str:
            return "[" + ", ".join(quote(i) for i in items) + "]"

        lines = ["[schema]", f"name = {quote(self.name)}", f"case_id = {quote(self.case_id)}",
                 f"period = {quote(self.period)}", f"sensitive = {array(self.sensitive)}",
                 f"multi = {array(self.multi)}", f"insensitive = {array(self.insensitive)}",
                 f"identifiers = {array(self.identifiers)}", f"private = {array(self.private)}"]
        if self.dates:  # a schema without dates writes the TOML it wrote before they existed
            lines.append("dates = {" + ", ".join(f"{quote(c)} = {quote(g)}"
                                                 for c, g in self.dates.items()) + "}")
        if self.protected_terms:  # likewise: absent when there are none
            lines.append("protected_terms = {" + ", ".join(
                f"{quote(t)} = {c!r}" for t, c in self.protected_terms.items()) + "}")
        for qid in self.qids:
            lines += ["", "[[schema.qid]]", f"name = {quote(qid.name)}", f"kind = {quote(qid.kind)}"]
            if qid.hierarchy:
                lines.append(f"hierarchy = {quote(qid.hierarchy)}")
            if qid.domain is not None:
                lines.append(f"domain = [{qid.domain[0]!r}, {qid.domain[1]!r}]")
        return "\n".join(lines) + "\n"

    # -- column groups --------------------------------------------------------------------
    @property
    def qid_names(self) -> tuple[str, ...]:
        """The quasi-identifiers' column names, in declaration order."""
        return tuple(q.name for q in self.qids)

    @property
    def numeric_qids(self) -> tuple[str, ...]:
        """The numeric quasi-identifiers (generalized to intervals)."""
        return tuple(q.name for q in self.qids if q.kind == "numeric")

    @property
    def categorical_qids(self) -> tuple[str, ...]:
        """The categorical quasi-identifiers (generalized along a hierarchy)."""
        return tuple(q.name for q in self.qids if q.kind == "categorical")

    @property
    def multi_valued(self) -> tuple[str, ...]:
        """Every set-valued column: sensitive ones first, then the published multi-valued ones."""
        return self.sensitive + self.multi

    @property
    def date_columns(self) -> tuple[str, ...]:
        """The date columns, in declaration order."""
        return tuple(self.dates)

    @property
    def published(self) -> tuple[str, ...]:
        """Columns a release publishes after ``period, case_id, group`` (the release format order)."""
        return self.qid_names + self.sensitive + self.multi + self.insensitive + self.date_columns

    @property
    def all_columns(self) -> list[str]:
        """Every column of the report-level records, identifiers and private ones included."""
        return [self.case_id, self.period, *self.qid_names, *self.sensitive, *self.multi,
                *self.insensitive, *self.date_columns, *self.identifiers, *self.private]

    def qid(self, name: str) -> QIDSpec:
        """The quasi-identifier called ``name``.

        Raises:
            SchemaError: the schema has none of that name.
        """
        for q in self.qids:
            if q.name == name:
                return q
        raise SchemaError(f"Schema {self.name!r} has no quasi-identifier {name!r}.")

    # -- checks against data --------------------------------------------------------------
    def check_columns(self, frame: pd.DataFrame, *, what: str = "the data") -> None:
        """Raise SchemaError naming every schema column that ``frame`` lacks."""
        missing = [c for c in self.all_columns if c not in frame.columns]
        if missing:
            raise SchemaError(
                f"Schema {self.name!r} names column(s) that {what} does not have: "
                f"{', '.join(repr(c) for c in missing)}. Available: "
                f"{', '.join(repr(str(c)) for c in frame.columns)}.")

    def load_hierarchies(self) -> dict[str, Taxonomy]:
        """The taxonomy of every categorical QID, built in or read from its ARX file."""
        hierarchies: dict[str, Taxonomy] = {}
        for qid in self.qids:
            if qid.kind != "categorical":
                continue
            assert qid.hierarchy is not None
            if qid.hierarchy in BUILTIN_HIERARCHIES:
                hierarchies[qid.name] = BUILTIN_HIERARCHIES[qid.hierarchy]()
            else:
                hierarchies[qid.name] = read_arx(qid.hierarchy, name=qid.name)
        return hierarchies
