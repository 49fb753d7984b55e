"""Medical background knowledge: terms that imply a QID value (000 §E).

Paper 000 (§E, "Evaluation on Medical Background Knowledge") gives the attacker common medical
knowledge: some diagnoses or reactions occur only in one sex or age group (breast cancer,
cervicitis, polycystic ovaries -> female; prostate cancer, hernia -> male; COPD, Alzheimer's
disease -> elderly). A record carrying such a term cannot belong to a target outside the implied
group, so the attacker excludes it, on top of the linkage attacks.

File format (CSV with header ``term,attribute,value``, or TOML with ``[[rule]]`` tables holding
the same keys): ``value`` is a node of the attribute's hierarchy for a categorical QID (the
implied value is any value under that node) or a number / inclusive interval ``[lo-hi]`` for a
numeric QID. Terms are matched case-insensitively against the sensitive columns. Several terms
of one record narrow its implied region to their intersection (an empty intersection means the
record contradicts the knowledge; it is then excluded for every target).
"""

from __future__ import annotations

import csv
import io
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputFormatError, ValidationError
from ..hierarchies import Interval
from ..published.cells import QidInfo
from ..published.links import Region, ReleaseView, intersect, whole_domain

__all__ = ["BackgroundKnowledge", "KnowledgeRule", "read_background"]

_KEYS = ("term", "attribute", "value")


@dataclass(frozen=True)
class KnowledgeRule:
    """``term`` implies ``attribute`` in ``value`` (a hierarchy node, or an interval)."""

    term: str
    attribute: str
    value: str


@dataclass(frozen=True)
class BackgroundKnowledge:
    """A set of :class:`KnowledgeRule`."""

    rules: tuple[KnowledgeRule, ...]

    def check(self, qids: tuple[QidInfo, ...]) -> None:
        """Check every rule names a QID and a value of it.

        Raises:
            ValidationError: an unknown attribute or value.
        """
        by_name = {q.name: q for q in qids}
        for r in self.rules:
            q = by_name.get(r.attribute)
            if q is None:
                raise ValidationError(f"Background rule for {r.term!r} names attribute "
                                      f"{r.attribute!r}, which is not a QID of the series "
                                      f"({', '.join(by_name)}).")
            if q.kind == "categorical" and r.value not in q.hierarchy.code_of:
                raise ValidationError(f"Background rule for {r.term!r}: {r.value!r} is not a node "
                                      f"of the {r.attribute!r} hierarchy.")
            if q.kind == "numeric":
                Interval.parse(r.value)

    def implied_regions(self, view: ReleaseView, qids: tuple[QidInfo, ...]) -> Region:
        """The region each record of ``view`` is confined to by its terms (whole domain if none)."""
        self.check(qids)
        region = whole_domain(view.n, qids)
        names = np.array([str(t).casefold() for t in view.term_names], dtype=object)
        by_name = {q.name: q for q in qids}
        for rule in self.rules:
            codes = np.flatnonzero(names == rule.term.casefold())
            if not codes.size:
                continue
            rows = np.unique(view.term_row[np.isin(view.term_code, codes)])
            implied = whole_domain(len(rows), qids)
            q = by_name[rule.attribute]
            if q.kind == "categorical":
                implied.cat[q.name][:] = q.hierarchy.code_of[rule.value]
            else:
                iv = Interval.parse(rule.value)
                implied.lo[q.name][:], implied.hi[q.name][:] = iv.lo, iv.hi
            merged = intersect(region.take(rows), implied, qids)
            for k in merged.cat:
                region.cat[k][rows] = merged.cat[k]
            for k in merged.lo:
                region.lo[k][rows], region.hi[k][rows] = merged.lo[k], merged.hi[k]
        return region

    @property
    def attributes(self) -> frozenset[str]:
        return frozenset(r.attribute for r in self.rules)


def read_background(path: str | Path) -> BackgroundKnowledge:
    """Read a background-knowledge file (``.csv`` or ``.toml``, see the module docstring).

    Raises:
        InputFormatError: missing file, unknown extension, wrong columns or keys, empty file.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFormatError(f"Background knowledge file {str(path)!r} not found.")
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if tuple(f.strip() for f in (reader.fieldnames or ())) != _KEYS:
            raise InputFormatError(f"{str(path)!r} must have the header 'term,attribute,value'; "
                                   f"found {','.join(reader.fieldnames or ())!r}.")
        items = [{k.strip(): (v or "").strip() for k, v in row.items()} for row in reader]
    elif path.suffix.lower() == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputFormatError(f"{str(path)!r} is not valid TOML: {exc}.") from None
        unknown = set(data) - {"rule"}
        if unknown or not isinstance(data.get("rule", []), list):
            raise InputFormatError(f"{str(path)!r} must hold [[rule]] tables only; found "
                                   f"{', '.join(sorted(unknown)) or 'a non-list rule'}.")
        items = data.get("rule", [])
        for item in items:
            if not isinstance(item, dict) or set(item) != set(_KEYS):
                raise InputFormatError(f"{str(path)!r}: each [[rule]] needs exactly the keys "
                                       f"term, attribute, value; got {item!r}.")
        items = [{k: str(v).strip() for k, v in item.items()} for item in items]
    else:
        raise InputFormatError(f"Background knowledge file {str(path)!r} must be .csv or .toml.")
    rules = []
    for i, item in enumerate(items, start=1):
        if not all(item.get(k) for k in _KEYS):
            raise InputFormatError(f"{str(path)!r}, rule {i}: term, attribute and value must all "
                                   f"be given; got {item!r}.")
        rules.append(KnowledgeRule(item["term"], item["attribute"], item["value"]))
    if not rules:
        raise InputFormatError(f"{str(path)!r} holds no rule.")
    return BackgroundKnowledge(tuple(rules))
