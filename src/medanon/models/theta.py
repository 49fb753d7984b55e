"""Per-value confidence thresholds θ* (papers 001 Definition 6, 002 Definition 7, 000).

A privacy model bounds, for every sensitive value s, the attacker's confidence that a case has s
by θ_s. Paper 001 (and ``algorithms.md`` §1.10) uses four ways of choosing θ*:

* **uniform**: one θ for every value (001 uses 0.2 and 0.4);
* **frequency-based**: with m and SD the mean and standard deviation of the values' counts,
  θ = 0.2 below m − SD, 0.6 between m − SD and m + SD, 1.0 above m + SD (rarer is more sensitive);
* **level-wise**: terms listed as highly sensitive get 0.2, non-sensitive ones 1.0, the rest 0.4
  (001 takes the lists from MedDRA groups, which cannot be shipped: the user supplies them);
* **explicit**: any per-term table with a default.

A *spec* (how to choose) is resolved on a period's value counts into a :class:`ThetaTable` (the
thresholds actually used), which is what algorithms and checkers read and what the manifest
records. Sensitive values are terms, pooled over every sensitive column (001: S_r = INDI_PT ∪ PT).

θ = 1 puts no limit on a term: a group may consist only of cases that hold it, so publishing the
group discloses the term for each of them. The frequency rule gives 1 to every term above
m + SD, which on FAERS includes Death, Depression or Myocardial infarction. **Protected terms**
(:class:`ProtectedTheta`, :func:`protect`) cap a term's θ whatever the rule says: the table
gives it min(rule's θ, cap) and records the caps (``ThetaTable.caps``), and
:attr:`ThetaTable.unbounded_terms` names the terms left at θ = 1 (``medanon release`` warns).
"""

from __future__ import annotations

import csv
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from .._validation import check_fraction
from ..errors import InputFormatError, ValidationError


@dataclass(frozen=True)
class ThetaTable:
    """Resolved thresholds: ``default`` for every term not in ``overrides``.

    ``caps`` are the protected terms and the cap each one's θ was held to (the operator's
    configuration, not a fact of the data). A θ above its cap appears only where
    ``on_infeasible="raise-theta"`` raised it, which the manifest's ``raised_theta`` records.
    """

    default: float
    overrides: Mapping[str, float] = field(default_factory=dict)
    caps: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_fraction(self.default, name="default", owner="ThetaTable")
        for term, value in self.overrides.items():
            check_fraction(value, name=f"theta[{term!r}]", owner="ThetaTable")
        for term, value in self.caps.items():
            check_fraction(value, name=f"caps[{term!r}]", owner="ThetaTable")
        object.__setattr__(self, "overrides", MappingProxyType(dict(self.overrides)))
        object.__setattr__(self, "caps", MappingProxyType(dict(self.caps)))

    def get(self, term: str) -> float:
        return self.overrides.get(term, self.default)

    def with_overrides(self, changes: Mapping[str, float]) -> ThetaTable:
        return ThetaTable(self.default, {**self.overrides, **changes}, self.caps)

    @property
    def unbounded_terms(self) -> tuple[str, ...]:
        """The listed terms with θ = 1 (no limit on their share of a group), sorted.

        Read from the table alone, so a manifest's published table gives the same answer as
        the run that made it. A term not listed has the default: see :attr:`default_unbounded`.
        """
        return tuple(sorted((t for t, v in self.overrides.items() if v >= 1.0),
                            key=lambda t: (t.casefold(), t)))

    @property
    def default_unbounded(self) -> bool:
        """Whether every term not listed has θ = 1 (a uniform θ of 1, or such a default)."""
        return self.default >= 1.0

    def to_manifest(self) -> dict:
        out = {"default": self.default, "overrides": dict(sorted(self.overrides.items()))}
        if self.caps:  # absent without protected terms: older manifests read the same
            out["caps"] = dict(sorted(self.caps.items()))
        return out

    @classmethod
    def from_manifest(cls, data: object) -> ThetaTable:
        """The table a manifest records; ``data`` is the value as read from the JSON, so
        anything but a mapping of the right shape is refused (InputFormatError)."""
        try:
            if not isinstance(data, Mapping):
                raise TypeError(f"expected a mapping, got {type(data).__name__}")
            return cls(float(data["default"]),
                       {str(t): float(v) for t, v in dict(data.get("overrides", {})).items()},
                       {str(t): float(v) for t, v in dict(data.get("caps") or {}).items()})
        except (KeyError, TypeError, ValueError) as exc:
            raise InputFormatError(f"A manifest's theta table is malformed: {exc}.") from None


def theta_table_of(manifest: Mapping) -> ThetaTable | None:
    """The θ table a release's manifest records (``details.theta_table``), or None for a method
    without one (``none``) or a manifest that records none."""
    data = (manifest.get("details") or {}).get("theta_table")
    return None if data is None else ThetaTable.from_manifest(data)


def raised_thetas(manifest: Mapping) -> dict[str, tuple[float, float]]:
    """Term -> (requested θ, effective θ) for every term whose θ ``on_infeasible="raise-theta"``
    raised in a release (``details.raised_theta``); empty when nothing was raised.

    The effective θ is the one the release's θ table declares for the term. (With PPMS-DP's
    ``dp_aware_grouping`` the recorded requested θ is the grouping's inflated one.)
    """
    raised = (manifest.get("details") or {}).get("raised_theta") or {}
    table = theta_table_of(manifest)
    return {str(t): (float(e["theta"]),
                     table.get(str(t)) if table is not None else float(e["raised_to"]))
            for t, e in raised.items() if isinstance(e, Mapping) and "theta" in e}


def requested_theta_table(manifest: Mapping) -> ThetaTable | None:
    """The θ table a release would have used had no θ been raised: its recorded table
    (:func:`theta_table_of`) with every raised term back at its requested θ. None for a
    release without a θ table. Measuring a release against it says what the requested
    setting protects, where the recorded table says what the release promises."""
    table = theta_table_of(manifest)
    if table is None:
        return None
    return table.with_overrides({t: requested for t, (requested, _) in
                                 raised_thetas(manifest).items()})


def caps_raised(manifest: Mapping) -> dict[str, dict]:
    """The protected terms whose θ ``on_infeasible="raise-theta"`` raised above their cap in a
    release (``details.raised_theta`` entries that carry a ``cap``)."""
    raised = (manifest.get("details") or {}).get("raised_theta") or {}
    return {str(t): dict(e) for t, e in raised.items() if isinstance(e, Mapping) and "cap" in e}


class ThetaSpec:
    """How θ* is chosen; :meth:`resolve` turns it into a table on a period's value counts."""

    kind: str = ""

    def resolve(self, counts: Mapping[str, int]) -> ThetaTable:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class UniformTheta(ThetaSpec):
    value: float
    kind = "uniform"

    def __post_init__(self) -> None:
        check_fraction(self.value, name="theta", owner="UniformTheta")

    def resolve(self, counts: Mapping[str, int]) -> ThetaTable:
        return ThetaTable(self.value)

    def describe(self) -> dict:
        return {"kind": self.kind, "theta": self.value}


@dataclass(frozen=True)
class FrequencyTheta(ThetaSpec):
    """001's frequency rule; m and SD are the mean and population SD of the per-term counts."""

    low: float = 0.2
    mid: float = 0.6
    high: float = 1.0
    kind = "frequency"

    def __post_init__(self) -> None:
        for name in ("low", "mid", "high"):
            check_fraction(getattr(self, name), name=name, owner="FrequencyTheta")

    def cut_points(self, counts: Mapping[str, int]) -> tuple[float, float]:
        values = [float(c) for c in counts.values()]
        if not values:
            return (0.0, 0.0)
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return mean - sd, mean + sd

    def resolve(self, counts: Mapping[str, int]) -> ThetaTable:
        lo, hi = self.cut_points(counts)
        overrides = {}
        for term, count in counts.items():
            if count < lo:
                overrides[term] = self.low
            elif count > hi:
                overrides[term] = self.high
        return ThetaTable(self.mid, overrides)

    def describe(self) -> dict:
        return {"kind": self.kind, "low": self.low, "mid": self.mid, "high": self.high,
                "rule": "low if count < m - SD; mid if m - SD <= count <= m + SD; high if count > m + SD"}


@dataclass(frozen=True)
class TableTheta(ThetaSpec):
    """An explicit table (also the level-wise setting: every listed term of a level gets its θ)."""

    table: ThetaTable
    source: str = ""
    levels: tuple[tuple[str, float, int], ...] = ()
    kind = "table"

    def resolve(self, counts: Mapping[str, int]) -> ThetaTable:
        return self.table

    def describe(self) -> dict:
        out: dict = {"kind": "level-wise" if self.levels else self.kind, "source": self.source,
                     "default": self.table.default, "terms": len(self.table.overrides)}
        if self.levels:
            out["levels"] = [{"name": n, "theta": t, "terms": c} for n, t, c in self.levels]
        return out


@dataclass(frozen=True)
class ProtectedTheta(ThetaSpec):
    """Another spec with protected terms: each term's θ is at most its cap.

    The table gives every protected term min(the base spec's θ, cap), also a term the period
    does not hold (so that which terms the table lists never depends on the data), and records
    the caps. A cap the period cannot meet (more cases hold the term than cap·N allows) is what
    ``on_infeasible`` decides, as for any θ.
    """

    base: ThetaSpec
    caps: Mapping[str, float]
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "caps", MappingProxyType(dict(self.caps)))

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.base.kind

    def resolve(self, counts: Mapping[str, int]) -> ThetaTable:
        table = self.base.resolve(counts)
        capped = {t: min(table.get(t), cap) for t, cap in self.caps.items()}
        return ThetaTable(table.default, {**table.overrides, **capped},
                          _stricter(table.caps, self.caps))

    def describe(self) -> dict:
        return {**self.base.describe(), "protected": dict(sorted(self.caps.items()))}


def _stricter(*maps: Mapping[str, float]) -> dict[str, float]:
    """Caps merged: a term capped twice keeps the smaller cap."""
    out: dict[str, float] = {}
    for caps in maps:
        for term, cap in caps.items():
            out[term] = min(cap, out.get(term, cap))
    return out


def caps_of(spec: ThetaSpec) -> Mapping[str, float]:
    """The protected terms of a spec and their caps (none for a spec without them)."""
    return spec.caps if isinstance(spec, ProtectedTheta) else {}


def base_of(spec: ThetaSpec) -> ThetaSpec:
    """The spec a :class:`ProtectedTheta` caps (the spec itself otherwise)."""
    return spec.base if isinstance(spec, ProtectedTheta) else spec


def parse_protect(items: Iterable[str] | Mapping[str, float] | None, *, owner: str,
                  name: str = "protect") -> dict[str, float]:
    """Protected terms and their caps: ``{"Death": 0.3}`` or ``["Death=0.3", ...]``.

    A term given twice keeps the smaller cap (as a term in two θ levels keeps the stricter θ).

    Raises:
        ValidationError: an item that is not ``TERM=CAP``, an empty term, or a cap not in
            (0, 1]; the message names the parameter.
    """
    if items is None:
        return {}
    if isinstance(items, str):  # one "TERM=CAP" given where a list was meant
        items = [items]
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        pairs = []
        for item in items:
            # the cap is after the last "=": a term may itself hold one
            term, sep, cap = str(item).rpartition("=")
            if not sep:
                raise ValidationError(f"The {name!r} parameter of {owner} expects TERM=CAP (e.g. "
                                      f"'Death=0.3'); got {item!r}.")
            try:
                pairs.append((term, float(cap)))
            except ValueError:
                raise ValidationError(f"The {name!r} parameter of {owner} expects TERM=CAP with "
                                      f"a number as CAP (e.g. 'Death=0.3'); got {item!r}.") from None
    out: dict[str, float] = {}
    for term, cap in pairs:
        term = str(term).strip() if isinstance(term, str) else term
        if not isinstance(term, str) or not term:
            raise ValidationError(f"The {name!r} parameter of {owner} must name each term (a "
                                  f"non-empty string); got {term!r}.")
        if (isinstance(cap, bool) or not isinstance(cap, (int, float))
                or math.isnan(cap) or not 0 < cap <= 1):
            raise ValidationError(f"The {name!r} parameter of {owner} must give each term a cap "
                                  f"in (0, 1]; got {term!r} = {cap!r}.")
        out[term] = min(float(cap), out.get(term, float(cap)))
    return out


def protect(spec: ThetaSpec, caps: Mapping[str, float], *, source: str = "") -> ThetaSpec:
    """``spec`` with the protected terms ``caps`` (validated, e.g. by :func:`parse_protect`)
    added to any it has; a term capped twice keeps the smaller cap. No caps: ``spec``."""
    if not caps:
        return spec
    if isinstance(spec, ProtectedTheta):
        sources = ", ".join(s for s in (spec.source, source) if s)
        return ProtectedTheta(spec.base, _stricter(spec.caps, caps), sources)
    return ProtectedTheta(spec, dict(caps), source)


def level_wise(highly_sensitive: list[str], non_sensitive: list[str], *, high: float = 0.2,
               low: float = 0.4, non: float = 1.0, source: str = "") -> TableTheta:
    """001's level-wise setting from two user term lists (the rest is "low sensitive")."""
    overrides = {t: non for t in non_sensitive}
    overrides.update({t: high for t in highly_sensitive})  # a term in both lists: the stricter
    return TableTheta(ThetaTable(low, overrides), source,
                      (("highly sensitive", high, len(highly_sensitive)),
                       ("non-sensitive", non, len(non_sensitive))))


def parse_theta(text: str | float) -> ThetaSpec:
    """Read a ``--theta`` value: a number, ``frequency``, or a ``.csv`` / ``.toml`` file.

    * CSV: header ``term,theta`` or ``term,theta,cap``; the row with term ``*`` gives the
      default (required): a number, or ``frequency`` for 001's frequency rule. A term's row
      gives its θ, its cap (a protected term: its θ never exceeds the cap), or both; under
      ``frequency`` only caps.
    * TOML: ``default = 0.4`` or ``default = "frequency"``; ``[[level]]`` tables with ``name``,
      ``theta`` and ``terms`` and/or a ``[terms]`` table of ``"Term" = θ`` (numeric default
      only); a ``[protected]`` table of ``"Term" = cap``.

    Raises:
        ValidationError: not a number in (0, 1], not ``frequency`` and not an existing file.
        InputFormatError: the file is malformed.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return UniformTheta(float(text))
    text = str(text).strip()
    if text == "frequency":
        return FrequencyTheta()
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None:
        return UniformTheta(value)
    path = Path(text)
    if not path.is_file():
        raise ValidationError(f"The 'theta' parameter must be a number in (0, 1], 'frequency', or a "
                              f".csv/.toml file of per-term thresholds; got {text!r}.")
    if path.suffix.lower() == ".csv":
        return _read_theta_csv(path)
    if path.suffix.lower() == ".toml":
        return _read_theta_toml(path)
    raise ValidationError(f"Theta file {str(path)!r} must end in .csv or .toml.")


def _theta_value(raw: object, where: str, what: str = "theta") -> float:
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputFormatError(f"{where}: {what} {raw!r} is not a number.") from None
    if not 0 < value <= 1:
        raise InputFormatError(f"{where}: {what} {raw!r} is not in (0, 1].")
    return value


def _with_caps(base: ThetaSpec, caps: dict[str, float], path: Path) -> ThetaSpec:
    return ProtectedTheta(base, caps, str(path)) if caps else base


def _read_theta_csv(path: Path) -> ThetaSpec:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        header = [f.strip().lower() for f in reader.fieldnames or []]
        if header not in (["term", "theta"], ["term", "theta", "cap"]):
            raise InputFormatError(f"{path}: the header must be 'term,theta' or "
                                   f"'term,theta,cap'; got {','.join(reader.fieldnames or [])!r}.")
        default: float | str | None = None
        overrides: dict[str, float] = {}
        caps: dict[str, float] = {}
        for line, row in enumerate(reader, start=2):
            values = [(v or "").strip() for v in row.values()]
            where = f"{path}, line {line}"
            term, theta, cap = values[0], values[1], values[2] if len(values) > 2 else ""
            if not term:
                raise InputFormatError(f"{where}: empty term.")
            if term == "*":
                if cap:
                    raise InputFormatError(f"{where}: the default row '*' takes no cap (cap a "
                                           "term by name).")
                default = "frequency" if theta == "frequency" else _theta_value(theta, where)
                continue
            if term in overrides or term in caps:
                raise InputFormatError(f"{where}: term {term!r} is listed twice.")
            if not theta and not cap:
                raise InputFormatError(f"{where}: term {term!r} has neither a theta nor a cap.")
            if theta:
                overrides[term] = _theta_value(theta, where)
            if cap:
                caps[term] = _theta_value(cap, where, "cap")
    if default is None:
        raise InputFormatError(f"{path}: no default row; add a line '*,<theta>' (or "
                               f"'*,frequency') for terms not listed.")
    if default == "frequency":
        if overrides:
            raise InputFormatError(
                f"{path}: with the default '*,frequency' the rule chooses every term's theta; "
                f"give {', '.join(map(repr, sorted(overrides)[:3]))} a cap (the 'cap' column) "
                f"instead of a theta.")
        return _with_caps(FrequencyTheta(), caps, path)
    assert isinstance(default, float)
    return _with_caps(TableTheta(ThetaTable(default, overrides), str(path)), caps, path)


def _read_theta_toml(path: Path) -> ThetaSpec:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputFormatError(f"{path}: not valid TOML ({exc}).") from None
    unknown = set(data) - {"default", "level", "terms", "protected"}
    if unknown:
        raise InputFormatError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; expected "
                               "'default', '[[level]]', '[terms]' and '[protected]'.")
    if "default" not in data:
        raise InputFormatError(f"{path}: 'default = <theta>' (or 'default = \"frequency\"') is "
                               "required (for terms not listed).")
    protected = data.get("protected", {})
    if not isinstance(protected, dict):
        raise InputFormatError(f"{path}: 'protected' must be a table of \"Term\" = cap.")
    caps = {str(term): _theta_value(raw, f"{path}, protected term {term!r}", "cap")
            for term, raw in protected.items()}
    if data["default"] == "frequency":
        given = [key for key in ("level", "terms") if key in data]
        if given:
            raise InputFormatError(
                f"{path}: with default = \"frequency\" the rule chooses every term's theta; "
                f"{' and '.join(given)} cannot be combined with it: cap terms in [protected].")
        return _with_caps(FrequencyTheta(), caps, path)
    default = _theta_value(data["default"], str(path))
    overrides: dict[str, float] = {}
    levels = []
    for i, level in enumerate(data.get("level", []), start=1):
        where = f"{path}, level {i}"
        if not isinstance(level, dict) or "theta" not in level or "terms" not in level:
            raise InputFormatError(f"{where}: needs 'theta' and 'terms'.")
        value = _theta_value(level["theta"], where)
        terms = level["terms"]
        if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
            raise InputFormatError(f"{where}: 'terms' must be a list of strings.")
        for term in terms:  # a term in two levels keeps the stricter threshold
            overrides[term] = min(value, overrides.get(term, value))
        levels.append((str(level.get("name", f"level {i}")), value, len(terms)))
    for term, raw in dict(data.get("terms", {})).items():
        overrides[str(term)] = _theta_value(raw, f"{path}, term {term!r}")
    return _with_caps(TableTheta(ThetaTable(default, overrides), str(path), tuple(levels)),
                      caps, path)
