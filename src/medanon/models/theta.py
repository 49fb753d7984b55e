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
"""

from __future__ import annotations

import csv
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from .._validation import check_fraction
from ..errors import InputFormatError, ValidationError


@dataclass(frozen=True)
class ThetaTable:
    """Resolved thresholds: ``default`` for every term not in ``overrides``."""

    default: float
    overrides: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_fraction(self.default, name="default", owner="ThetaTable")
        for term, value in self.overrides.items():
            check_fraction(value, name=f"theta[{term!r}]", owner="ThetaTable")
        object.__setattr__(self, "overrides", MappingProxyType(dict(self.overrides)))

    def get(self, term: str) -> float:
        return self.overrides.get(term, self.default)

    def with_overrides(self, changes: Mapping[str, float]) -> ThetaTable:
        return ThetaTable(self.default, {**self.overrides, **changes})

    def to_manifest(self) -> dict:
        return {"default": self.default, "overrides": dict(sorted(self.overrides.items()))}

    @classmethod
    def from_manifest(cls, data: Mapping) -> ThetaTable:
        try:
            return cls(float(data["default"]),
                       {str(t): float(v) for t, v in dict(data.get("overrides", {})).items()})
        except (KeyError, TypeError, ValueError) as exc:
            raise InputFormatError(f"A manifest's theta table is malformed: {exc}.") from None


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

    * CSV: header ``term,theta``; the row with term ``*`` gives the default (required).
    * TOML: ``default = 0.4``; ``[[level]]`` tables with ``name``, ``theta`` and ``terms``; and/or
      a ``[terms]`` table of ``"Term" = θ``.

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


def _theta_value(raw: object, where: str) -> float:
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputFormatError(f"{where}: theta {raw!r} is not a number.") from None
    if not 0 < value <= 1:
        raise InputFormatError(f"{where}: theta {raw!r} is not in (0, 1].")
    return value


def _read_theta_csv(path: Path) -> TableTheta:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or [f.strip().lower() for f in reader.fieldnames] != ["term", "theta"]:
            raise InputFormatError(f"{path}: the header must be 'term,theta'; got "
                                   f"{','.join(reader.fieldnames or [])!r}.")
        default, overrides = None, {}
        for line, row in enumerate(reader, start=2):
            values = list(row.values())
            term = (values[0] or "").strip()
            value = _theta_value(values[1], f"{path}, line {line}")
            if not term:
                raise InputFormatError(f"{path}, line {line}: empty term.")
            if term == "*":
                default = value
            elif term in overrides:
                raise InputFormatError(f"{path}, line {line}: term {term!r} is listed twice.")
            else:
                overrides[term] = value
    if default is None:
        raise InputFormatError(f"{path}: no default row; add a line '*,<theta>' for terms not listed.")
    return TableTheta(ThetaTable(default, overrides), str(path))


def _read_theta_toml(path: Path) -> TableTheta:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputFormatError(f"{path}: not valid TOML ({exc}).") from None
    unknown = set(data) - {"default", "level", "terms"}
    if unknown:
        raise InputFormatError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; expected "
                               "'default', '[[level]]' and '[terms]'.")
    if "default" not in data:
        raise InputFormatError(f"{path}: 'default = <theta>' is required (for terms not listed).")
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
    return TableTheta(ThetaTable(default, overrides), str(path), tuple(levels))
