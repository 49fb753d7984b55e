"""Pharmacovigilance signals counted on published rows: the utility metric of papers 000 and 001.

Wang & Lin 2021 (paper 001, section "Influence on ADR Signals") measure how anonymization changes
the strength of known adverse-drug-reaction (ADR) signals such as
"R1: Avandia, Age>18 → Myocardial infarction": the number of reports that satisfy the rule and
its proportional reporting ratio (PRR), before and after anonymization. The PRR and the signal
criteria are those of Evans, Waller & Davis 2001 (the MHRA screening rule); the specification is
``algorithms.md`` §1.9.

**One counting function for both sides.** Every count is read from published strings
(``medanon.published.cells``): the original data is first turned into the same form with
:func:`medanon.published.format.to_published_rows`, so original and release go through
:func:`contingency` alike. A row is one report (a super record, i.e. one case of the period).

**2×2 table.** For a rule "drug D, condition C → reaction R"::

                        reaction R    other reactions
        drug D              a               b
        other drugs         c               d

A report "has D" when D is one of the ``|``-joined terms of its drug cell, "has R" likewise in the
reaction cell; both compared case-insensitively, spaces around a term ignored.

**The condition restricts the population.** a, b, c and d count only the reports whose
generalized value lies *wholly inside* C (``algorithms.md`` §1.9, SEED behaviour): the PRR of the
rule is the PRR within the sub-population C (Evans' PRR stratified on C). Each report is in one of
three classes:

* *inside*: every value its published cell stands for satisfies C; it enters the table;
* *outside*: no value of its cell satisfies C; it is left out of the table;
* *undecided*: some values do and some do not (``sex = *``, an empty cell, ``[30-50]`` for
  ``weight > 40``, ``Adult`` for ``age > 60``); it is left out of the table and counted.

``Contingency.missing`` is the number of undecided reports that have D and R: the reports that
could be in a but cannot be shown to be (the "missing count" of 001, "7 of 11 counts are
missing"). ``Contingency.undecided`` counts every undecided report (what the whole table lost).
Without a condition every report is inside and both are 0.

**Reading a cell against a condition.**

* Numeric attribute (not in ``hierarchies``): a cell is the closed interval [lo, hi] (a number v
  is [v, v]; an empty cell or ``*`` is (-inf, inf)). ``> t`` is inside when lo > t, outside when
  hi <= t; ``>= t``: lo >= t / hi < t; ``< t``: hi < t / lo >= t; ``<= t``: hi <= t / lo > t.
  ``= v`` and ``in [x-y]`` (a number is the range [v-v]) are inside when [lo, hi] ⊆ the range,
  outside when they are disjoint; ``!=`` swaps inside and outside of ``=``.
* Categorical attribute compared with a label (``=``, ``!=``, ``in``): an empty cell is the root.
  ``sex = F`` is inside when the cell is F or a descendant of F (the node covers the cell),
  outside when cell and node are in disjoint subtrees, undecided when the cell is a proper
  ancestor of the node (``*``, or ``Adult`` for ``age = Aged``). ``!=`` swaps inside and outside.
  ``in`` is a synonym of ``=``.
* The MeSH age tree compared with a number (``age > 18``): each node is read as its age band
  (:func:`medanon.hierarchies.builtin.mesh_age_band`; an internal node is the union of its
  subtree: ``Adult`` = 19-150, ``Nonadult`` = 0-19) and then as a numeric interval. MeSH bands
  are defined on age in *completed years* (Adolescent = "13-18 years"), so a band [lo, hi) is read
  as the closed interval [floor(lo), ceil(hi) − 1] (the last band keeps 150): ``Adolescent`` is
  [13, 18], wholly outside ``age > 18``; ``Adult`` [19, 150] wholly inside; ``Middle Aged``
  [45, 64] undecided for ``age > 60``. Other hierarchies have no numeric meaning: comparing them
  with a number is a ValidationError.

**Statistics** (all on the restricted table; N = a + b + c + d)::

    PRR = [a / (a + b)] / [c / (c + d)]                      (Evans 2001; 000; 001)
    ROR = (a · d) / (b · c)
    χ²  = N · max(0, |a·d − b·c| − N/2)² / [(a+b)(c+d)(a+c)(b+d)]   (Yates, 1 df)
    signal  ⇔  a ≥ 3  and  ( PRR = ∞  or  ( PRR ≥ 2  and  χ² ≥ 4 ) )   (Evans 2001 / MHRA)

Haldane–Anscombe correction, reported beside a ratio whenever the table has an empty cell::

    PRR_HA = [(a+½) / (a+b+1)] / [(c+½) / (c+d+1)]      ROR_HA = (a+½)(d+½) / [(b+½)(c+½)]

Choices and deviations:

1. PRR := 0 when a < 3 (001: "we set PRR=0 when a<3", to show the effect of anonymization on rare
   events). With a >= 3 (so a + b > 0) the ratio is what the table says: **infinite** when c = 0
   and c + d > 0 (the reaction is never reported without the drug: the strongest
   disproportionality there is, e.g. LEVAQUIN/tendon rupture with a = 8, b = 1, c = 0), and
   **undefined** (NaN, "n/a") when c + d = 0 (no report without the drug to compare with). A
   PRR of 0 therefore always means a < 3. The 0-when-infinite convention of earlier versions hid
   exactly the strongest signals (PRR printed and plotted as 0.00) and is gone. d = 0 alone does
   not make PRR infinite: it is then a/(a+b) <= 1 (finite); the corrected value is still given.
2. ROR: 0 when a < 3 (as PRR); with a >= 3 infinite when b·c = 0 and d > 0, undefined when
   b·c = 0 and d = 0 (0/0), 0 when d = 0 and b·c > 0.
   Pharmacovigilance tools print a ratio with a zero cell beside its Haldane–Anscombe corrected
   value (+½ in every cell); :attr:`SignalStats.prr_corrected` and ``ror_corrected`` hold it
   when a >= 3 and some cell is 0 and the ratio is defined, None otherwise (a < 3 is already
   reported as 0, and correcting an undefined table would invent a comparator).
3. χ² is the Yates-corrected Pearson statistic of the 2×2 table, as the MHRA/Evans screening
   uses. When |ad − bc| < N/2 the correction would overshoot; the statistic is then 0 (the same
   as clipping each |O − E| correction at 0.5). χ² := 0 when a margin is 0. No a < 3 rule for χ²
   (the signal rule checks a itself).
4. The signal thresholds are inclusive (PRR ≥ 2 as in ``algorithms.md`` §1.9 and the MHRA
   rule; 001 writes PRR > 2). An infinite PRR with a ≥ 3 is a signal whatever χ² says: the
   reaction is reported with the drug at least three times and never without it, which small
   tables cannot push past χ² ≥ 4 (a=3, b=0, c=0, d=2 gives χ² 1.7). ROR does not enter the
   criterion (it never did): an infinite ROR from b = 0 with a finite PRR below 2 (the reaction
   is common without the drug too) is no signal.
5. The condition restricts a, b, c and d (above) rather than defining the exposure "D and C"
   against everything else. Undecided reports are dropped from the table, never guessed. When a
   release only generalizes QIDs (each release cell covers the original one, terms unchanged),
   a report can leave the table (into ``undecided``) but never enter it; perturbed labels (000's
   DP methods) can move reports either way.
6. PRR bias and count bias are release − original (``algorithms.md`` §1.9), in IEEE
   arithmetic: ∞ − 12 = ∞, 12 − ∞ = −∞, ∞ − ∞ and anything with an undefined side = NaN.
7. MeSH labels compared with numbers are read in completed years (above), so the original data,
   already coded in MeSH bands, has no undecided report for ``age > 18`` except the empty ones;
   a threshold that splits a band (``age > 60`` splits Middle Aged) leaves undecided reports on
   the original side too, and they are counted there as well.
8. Terms are matched whole (``AVANDIA`` is not ``AVANDIA-XR``), case-insensitively; a report
   counts once however many times a cell lists the term. Condition attributes and labels also
   match case-insensitively when there is no exact match (``Sex = f``).
9. JSON has no ∞ and no NaN (``json.dumps`` would write the invalid ``Infinity``/``NaN``):
   :meth:`SignalStats.to_dict` writes a ratio as a number when finite, the string ``"inf"``
   when infinite and ``null`` when undefined; a bias as a number, ``"inf"``/``"-inf"``, or
   ``null`` when undefined (∞ − ∞, or a side undefined). :func:`json_ratio` and
   :func:`ratio_from_json` convert both ways. A reader that does arithmetic on these fields
   without converting fails loudly on the string instead of silently using 0.

References:
    Wang & Lin, JMIR Med Inform 2021;9(10):e28752 (seed 001), section "Influence on ADR Signals".
    Wu, Shen & Lin (seed 000), section on data utility, Table IV.
    Evans SJW, Waller PC, Davis S. Use of proportional reporting ratios (PRRs) for signal
    generation from spontaneous adverse drug reaction reports. Pharmacoepidemiol Drug Saf
    2001;10(6):483-486.
"""

from __future__ import annotations

import csv
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_int
from ..errors import HierarchyError, InputFormatError, SchemaError, ValidationError
from ..hierarchies import Interval, Taxonomy
from ..hierarchies.builtin import MAX_AGE_YEARS, mesh_age_band, mesh_age_tree
from ..published.cells import categorical_codes, cell_strings, numeric_bounds, term_pairs

__all__ = [
    "INSIDE",
    "KnownCounts",
    "JSON_INF",
    "MIN_CASES",
    "MIN_CHI_SQUARE",
    "MIN_PRR",
    "OUTSIDE",
    "UNDECIDED",
    "Condition",
    "Contingency",
    "SignalComparison",
    "SignalRule",
    "SignalStats",
    "chi_square",
    "compare_signals",
    "contingency",
    "format_ratio",
    "is_signal",
    "json_ratio",
    "prr",
    "prr_haldane",
    "ratio_from_json",
    "read_rules",
    "ror",
    "ror_haldane",
]

#: Classes returned by :meth:`Condition.classify`.
INSIDE, OUTSIDE, UNDECIDED = 1, 0, -1

#: Evans et al. 2001 / MHRA signal criteria: a >= 3, PRR >= 2, χ² >= 4.
MIN_CASES = 3
MIN_PRR = 2.0
MIN_CHI_SQUARE = 4.0

_COMPARISONS = (">", ">=", "<", "<=")
_OPERATORS = (*_COMPARISONS, "=", "!=", "in")
_CONDITION_RE = re.compile(
    r"\s*(?P<attr>[A-Za-z_]\w*)\s*"
    r"(?P<op>>=|<=|!=|==|=|>|<|(?<=\s)[iI][nN](?=\s))\s*(?P<value>.*?)\s*",
    re.DOTALL)
_ATTRIBUTE_RE = re.compile(r"[A-Za-z_]\w*")
_NUMBER_RE = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_SHAPE = ("'<attribute> <operator> <value>' with an operator among >, >=, <, <=, =, != and in "
          "(e.g. 'age > 18', 'sex = F', 'age in Adult', 'weight in [40-60]')")


def _condition_error(requirement: str, text: str) -> ValidationError:
    return ValidationError(f"The 'condition' parameter of Condition must be {requirement}; "
                           f"got {text!r}.")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].strip()
    return value


# --------------------------------------------------------------------------------- conditions
@dataclass(frozen=True)
class Condition:
    """A demographic condition on one published attribute: ``age > 18``, ``sex = F``, ...

    Build one with :meth:`parse` or directly. The operator is one of ``>``, ``>=``, ``<``,
    ``<=`` (the value must be a number), ``=``, ``!=`` and ``in`` (a label of the attribute's
    hierarchy, a number, or a range ``[lo-hi]``); ``==`` is read as ``=``. How a generalized cell
    is judged is in the module docstring (the wholly-inside rule).

    Args:
        attribute: Name of the published column (matched exactly, else case-insensitively).
        op: The operator.
        value: The value as written (surrounding quotes removed): ``"18"``, ``"F"``,
            ``"Aged, 80 and over"``, ``"[40-60]"``.

    Raises:
        ValidationError: bad attribute name, unknown operator, empty value, or a comparison
            whose value is not a number.
    """

    attribute: str
    op: str
    value: str

    def __post_init__(self) -> None:
        if not isinstance(self.attribute, str) or not _ATTRIBUTE_RE.fullmatch(self.attribute):
            raise ValidationError(
                f"The 'attribute' parameter of Condition must be a column name (letters, digits "
                f"and _, not starting with a digit); got {self.attribute!r}.")
        op = self.op.strip().lower() if isinstance(self.op, str) else self.op
        op = "=" if op == "==" else op
        if op not in _OPERATORS:
            listed = ", ".join(repr(o) for o in _OPERATORS)
            raise ValidationError(
                f"The 'op' parameter of Condition must be one of {listed}; got {self.op!r}.")
        value = _unquote(self.value.strip()) if isinstance(self.value, str) else self.value
        if not isinstance(value, str) or not value:
            raise ValidationError(
                f"The 'value' parameter of Condition must be a non-empty string; got "
                f"{self.value!r}.")
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "value", value)
        if op in _COMPARISONS and self.number is None:
            raise _condition_error(f"a comparison with a number when the operator is {op!r}",
                                   self.text)

    @classmethod
    def parse(cls, text: str) -> Condition:
        """Read ``"age > 18"``, ``"sex = F"``, ``"age in Adult"``, ``"weight <= 80"``...

        Raises:
            ValidationError: the text is not ``<attribute> <operator> <value>``.
        """
        if not isinstance(text, str):
            raise ValidationError(
                f"The 'condition' parameter of Condition must be a string such as 'age > 18'; "
                f"got {text!r}.")
        m = _CONDITION_RE.fullmatch(text)
        if not m or not _unquote(m.group("value")):
            raise _condition_error(_SHAPE, text)
        value = m.group("value")
        if value.startswith(("<", ">", "=", "!")):  # "age >> 18", "age => 18"
            raise _condition_error(_SHAPE, text)
        if m.group("op") in _COMPARISONS and not _NUMBER_RE.fullmatch(_unquote(value)):
            raise _condition_error(
                f"a comparison with a number when the operator is {m.group('op')!r}", text)
        return cls(m.group("attr"), m.group("op"), value)

    @property
    def text(self) -> str:
        """Canonical text, e.g. ``"age > 18"`` (what :meth:`parse` reads back)."""
        return f"{self.attribute} {self.op} {self.value}"

    def __str__(self) -> str:
        return self.text

    @property
    def number(self) -> float | None:
        """The value as a number, or None when it is not one."""
        if not _NUMBER_RE.fullmatch(self.value):
            return None
        x = float(self.value)
        return x if math.isfinite(x) else None

    @property
    def value_range(self) -> Interval | None:
        """The value as a closed range (a number v is [v, v]), or None when it is neither."""
        try:
            return Interval.parse(self.value)
        except ValidationError:
            return None

    def classify(self, cells: Iterable[Any], hierarchy: Taxonomy | None = None) -> np.ndarray:
        """Judge published cells of the attribute against the condition.

        Args:
            cells: Published cells of the attribute's column (strings; None/NaN = empty).
            hierarchy: The attribute's taxonomy when it is categorical; None when numeric.

        Returns:
            An int8 array with :data:`INSIDE` (1), :data:`OUTSIDE` (0) or :data:`UNDECIDED` (-1)
            per cell. Distinct cells are judged once.

        Raises:
            ValidationError: the value cannot be compared with this attribute (a label against a
                numeric attribute, a number against a hierarchy other than MeSH age).
            HierarchyError: the label, or a cell, is not a node of ``hierarchy``.
            InputFormatError: a numeric cell is neither a number nor ``[lo-hi]``.
        """
        values = cell_strings(cells if isinstance(cells, (np.ndarray, pd.Series)) else list(cells))
        where = f"Column {self.attribute!r}"
        if hierarchy is None:
            target = self.value_range
            if self.op not in _COMPARISONS and target is None:
                raise ValidationError(
                    f"The condition {self.text!r} compares the numeric attribute "
                    f"{self.attribute!r} with {self.value!r}, which is not a number or a range "
                    f"[lo-hi]. If {self.attribute!r} is categorical, pass its hierarchy.")
            lo, hi = numeric_bounds(values, where=where)
            return self._classify_bounds(lo, hi)
        if not isinstance(hierarchy, Taxonomy):
            raise ValidationError(
                f"The 'hierarchy' parameter of Condition.classify must be a Taxonomy or None; "
                f"got {type(hierarchy).__name__}.")
        label = None if self.op in _COMPARISONS else _find_label(hierarchy, self.value)
        codes = categorical_codes(values, hierarchy, where=where)
        if label is not None:
            node = hierarchy.code_of[label]
            under = hierarchy.covers_codes(node, codes)      # node covers the cell
            above = hierarchy.covers_codes(codes, node)      # cell covers the node
            inside, outside = under, ~under & ~above
            if self.op == "!=":
                inside, outside = outside, inside
            return _classes(inside, outside)
        if self.value_range is None:
            raise HierarchyError(
                f"{self.value!r} is not a node of hierarchy {hierarchy.name!r} (condition "
                f"{self.text!r}).")
        if hierarchy != mesh_age_tree():
            raise ValidationError(
                f"The condition {self.text!r} compares the categorical attribute "
                f"{self.attribute!r} with a number, but its hierarchy {hierarchy.name!r} has no "
                f"numeric meaning (only the MeSH age tree has, through its age bands). Compare "
                f"it with a label: '{self.attribute} = <label>'.")
        lo_years, hi_years = _mesh_completed_years(hierarchy)
        return self._classify_bounds(lo_years[codes], hi_years[codes])

    def holds(self, cell: Any, hierarchy: Taxonomy | None = None) -> bool | None:
        """One cell: True (wholly inside), False (wholly outside) or None (undecided)."""
        c = int(self.classify([cell], hierarchy)[0])
        return None if c == UNDECIDED else c == INSIDE

    def _classify_bounds(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Classes of closed intervals [lo, hi] (bounds may be infinite)."""
        op = self.op
        if op in _COMPARISONS:
            t = float(self.value)
            if op == ">":
                inside, outside = lo > t, hi <= t
            elif op == ">=":
                inside, outside = lo >= t, hi < t
            elif op == "<":
                inside, outside = hi < t, lo >= t
            else:
                inside, outside = hi <= t, lo > t
        else:
            target = self.value_range
            assert target is not None  # classify refuses such an operator without a range
            inside = (target.lo <= lo) & (hi <= target.hi)
            outside = (hi < target.lo) | (lo > target.hi)
            if op == "!=":
                inside, outside = outside, inside
        return _classes(inside, outside)


def _classes(inside: np.ndarray, outside: np.ndarray) -> np.ndarray:
    return np.where(inside, INSIDE, np.where(outside, OUTSIDE, UNDECIDED)).astype(np.int8)


def _find_label(hierarchy: Taxonomy, value: str) -> str | None:
    """The node named ``value``: exact, else the one node equal to it case-insensitively."""
    if value in hierarchy.code_of:
        return value
    folded = value.casefold()
    matches = [n for n in hierarchy.nodes if n.casefold() == folded]
    return matches[0] if len(matches) == 1 else None


def _mesh_completed_years(hierarchy: Taxonomy) -> tuple[np.ndarray, np.ndarray]:
    """Per node code of the MeSH age tree: its band in completed years, closed [lo, hi]."""
    lo = np.empty(len(hierarchy.nodes), dtype=np.float64)
    hi = np.empty(len(hierarchy.nodes), dtype=np.float64)
    for label, code in hierarchy.code_of.items():
        band_lo, band_hi = mesh_age_band(label)
        lo[code] = math.floor(band_lo)
        hi[code] = band_hi if band_hi >= MAX_AGE_YEARS else math.ceil(band_hi) - 1
    return lo, hi


# -------------------------------------------------------------------------------------- rules
@dataclass(frozen=True, init=False)
class SignalRule:
    """An ADR rule "drug, condition → reaction" (001: "Avandia, Age>18 → Myocardial infarction").

    Args:
        drug: Drug term, matched case-insensitively against the drug column's terms.
        reaction: Reaction term, matched the same way against the reaction column.
        condition: A :class:`Condition`, its text (parsed), or None/empty for no condition.
        name: Name in reports; default ``"<drug>, <condition> -> <reaction>"``.

    Raises:
        ValidationError: empty drug or reaction, or a bad condition.
    """

    drug: str
    reaction: str
    condition: Condition | None = None
    name: str = ""

    # Written out because the constructor takes more than the field holds: a condition's text
    # too (parsed by __post_init__), which a generated __init__ cannot say.
    def __init__(self, drug: str, reaction: str, condition: Condition | str | None = None,
                 name: str = "") -> None:
        object.__setattr__(self, "drug", drug)
        object.__setattr__(self, "reaction", reaction)
        object.__setattr__(self, "condition", condition)
        object.__setattr__(self, "name", name)
        self.__post_init__()

    def __post_init__(self) -> None:
        for field in ("drug", "reaction"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip() or "|" in value:
                raise ValidationError(
                    f"The {field!r} parameter of SignalRule must be a non-empty term without "
                    f"'|'; got {value!r}.")
            object.__setattr__(self, field, value.strip())
        condition = self.condition
        if isinstance(condition, str):
            condition = Condition.parse(condition) if condition.strip() else None
        elif condition is not None and not isinstance(condition, Condition):
            raise ValidationError(
                f"The 'condition' parameter of SignalRule must be a Condition, its text or None; "
                f"got {type(condition).__name__}.")
        object.__setattr__(self, "condition", condition)
        if not isinstance(self.name, str):
            raise ValidationError(
                f"The 'name' parameter of SignalRule must be a string; got {self.name!r}.")
        name = self.name.strip()
        if not name:
            middle = f", {condition}" if condition is not None else ""
            name = f"{self.drug}{middle} -> {self.reaction}"
        object.__setattr__(self, "name", name)

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "drug", "reaction", "condition"}``; condition is its text or None."""
        return {"name": self.name, "drug": self.drug, "reaction": self.reaction,
                "condition": None if self.condition is None else self.condition.text}


_RULE_KEYS = ("name", "drug", "reaction", "condition")


def read_rules(path: str | Path) -> list[SignalRule]:
    """Read signal rules from a TOML or CSV file (chosen by the suffix ``.toml`` / ``.csv``).

    TOML: an array of tables ``[[rule]]`` with keys ``drug``, ``reaction`` (required),
    ``condition`` and ``name`` (optional)::

        [[rule]]
        name = "R1"
        drug = "AVANDIA"
        condition = "age > 18"
        reaction = "Myocardial infarction"

    CSV (UTF-8, a BOM is allowed): a header with ``drug``, ``reaction`` and optionally
    ``condition`` and ``name``, in any order, one rule a line; an empty condition means none::

        drug,condition,reaction
        AVANDIA,age > 18,Myocardial infarction
        ZELNORM,sex = F,Cerebrovascular accident

    Returns:
        The rules in file order.

    Raises:
        InputFormatError: the file does not exist, has another suffix, is not valid TOML/CSV,
            has unknown keys or columns, a rule without drug or reaction, a bad condition,
            duplicate rule names, or no rule at all. Messages name the file and the rule/line.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFormatError(f"Rules file {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    if suffix == ".toml":
        entries = _toml_entries(path)
    elif suffix == ".csv":
        entries = _csv_entries(path)
    else:
        raise InputFormatError(
            f"Rules file {str(path)!r} must be a .toml or a .csv file; got suffix "
            f"{suffix or '(none)'!r}.")
    rules: list[SignalRule] = []
    seen: dict[str, str] = {}
    for where, entry in entries:
        missing = [k for k in ("drug", "reaction") if not entry.get(k, "").strip()]
        if missing:
            raise InputFormatError(
                f"Rules file {str(path)!r}, {where}: {' and '.join(repr(k) for k in missing)} "
                f"must be given (non-empty).")
        try:
            rule = SignalRule(entry["drug"], entry["reaction"], entry.get("condition") or None,
                              entry.get("name", ""))
        except ValidationError as exc:
            raise InputFormatError(f"Rules file {str(path)!r}, {where}: {exc}") from None
        if rule.name in seen:
            raise InputFormatError(
                f"Rules file {str(path)!r}, {where}: the rule name {rule.name!r} is already used "
                f"by {seen[rule.name]}; rule names must be unique.")
        seen[rule.name] = where
        rules.append(rule)
    if not rules:
        raise InputFormatError(f"Rules file {str(path)!r} holds no rules.")
    return rules


def _toml_entries(path: Path) -> list[tuple[str, dict[str, str]]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"Rules file {str(path)!r} is not valid TOML: {exc}.") from None
    unknown = sorted(set(data) - {"rule"})
    if unknown:
        raise InputFormatError(
            f"Rules file {str(path)!r} has unknown top-level key(s) "
            f"{', '.join(repr(k) for k in unknown)}; it must hold only [[rule]] tables.")
    tables = data.get("rule", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise InputFormatError(
            f"Rules file {str(path)!r}: 'rule' must be an array of tables, written [[rule]].")
    entries = []
    for i, table in enumerate(tables, start=1):
        where = f"rule {i}"
        unknown = [k for k in table if k not in _RULE_KEYS]
        if unknown:
            raise InputFormatError(
                f"Rules file {str(path)!r}, {where}: unknown key(s) "
                f"{', '.join(repr(k) for k in unknown)}; allowed: {', '.join(_RULE_KEYS)}.")
        for key, value in table.items():
            if not isinstance(value, str):
                raise InputFormatError(
                    f"Rules file {str(path)!r}, {where}: {key!r} must be a string; got "
                    f"{value!r}.")
        entries.append((where, dict(table)))
    return entries


def _csv_entries(path: Path) -> list[tuple[str, dict[str, str]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"Rules file {str(path)!r} is not UTF-8 text: {exc}.") from None
    reader = csv.reader(text.splitlines())
    try:
        header = next(reader, None)
        if header is None:
            raise InputFormatError(
                f"Rules file {str(path)!r} is empty; it needs a header such as "
                f"'drug,condition,reaction'.")
        columns = [h.strip().lower() for h in header]
        unknown = [c for c in columns if c not in _RULE_KEYS]
        if unknown:
            raise InputFormatError(
                f"Rules file {str(path)!r}: unknown column(s) "
                f"{', '.join(repr(c) for c in unknown)} in the header; allowed: "
                f"{', '.join(_RULE_KEYS)} (e.g. 'drug,condition,reaction').")
        doubled = sorted({c for c in columns if columns.count(c) > 1})
        if doubled:
            raise InputFormatError(
                f"Rules file {str(path)!r}: column(s) {', '.join(repr(c) for c in doubled)} "
                f"appear more than once in the header.")
        absent = [c for c in ("drug", "reaction") if c not in columns]
        if absent:
            raise InputFormatError(
                f"Rules file {str(path)!r}: the header lacks column(s) "
                f"{', '.join(repr(c) for c in absent)} (e.g. 'drug,condition,reaction').")
        entries = []
        for cells in reader:
            where = f"line {reader.line_num}"
            if not any(c.strip() for c in cells):
                continue
            if len(cells) > len(columns):
                raise InputFormatError(
                    f"Rules file {str(path)!r}, {where}: {len(cells)} cells but the header has "
                    f"{len(columns)} (quote a condition that holds a comma: \"age in 'Aged, 80 "
                    f"and over'\").")
            cells = cells + [""] * (len(columns) - len(cells))
            entries.append((where, dict(zip(columns, cells))))
    except csv.Error as exc:
        raise InputFormatError(f"Rules file {str(path)!r} is not valid CSV: {exc}.") from None
    return entries


# -------------------------------------------------------------------------------- contingency
@dataclass(frozen=True)
class Contingency:
    """The 2×2 table of a rule (``algorithms.md`` §1.9), restricted to the condition.

    Attributes:
        a: reports inside the condition with the drug and the reaction.
        b: inside, with the drug, without the reaction.
        c: inside, without the drug, with the reaction.
        d: inside, with neither.
        missing: undecided reports (see the module docstring) with the drug and the reaction:
            001's "missing count" of the rule.
        undecided: all undecided reports (left out of a, b, c and d).

    Raises:
        ValidationError: a count is not an integer >= 0.
    """

    a: int
    b: int
    c: int
    d: int
    missing: int = 0
    undecided: int = 0

    def __post_init__(self) -> None:
        for name in ("a", "b", "c", "d", "missing", "undecided"):
            object.__setattr__(self, name, check_int(getattr(self, name), name=name,
                                                     owner="Contingency", minimum=0))

    @property
    def n(self) -> int:
        """N = a + b + c + d, the reports in the table."""
        return self.a + self.b + self.c + self.d

    def to_dict(self) -> dict[str, int]:
        """The six counts by name."""
        return {"a": self.a, "b": self.b, "c": self.c, "d": self.d, "missing": self.missing,
                "undecided": self.undecided}


#: what a reader of one frame of published rows read already, for :func:`compare_signals`:
#: (column -> (row, term code, casefolded term name) entries, condition -> class of each row)
KnownCounts = tuple[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
                    dict[Condition, np.ndarray]]


class _Counter:
    """Counts rules on one frame of published rows; term lists and conditions are read once."""

    def __init__(self, rows: pd.DataFrame, hierarchies: Mapping[str, Taxonomy], *,
                 drug_column: str, reaction_column: str) -> None:
        if not isinstance(rows, pd.DataFrame):
            raise ValidationError(
                f"The 'rows' parameter of contingency must be a pandas DataFrame of published "
                f"rows; got {type(rows).__name__}.")
        if not isinstance(hierarchies, Mapping) or not all(
                isinstance(t, Taxonomy) for t in hierarchies.values()):
            raise ValidationError(
                f"The 'hierarchies' parameter of contingency must map column names to Taxonomy "
                f"objects; got {type(hierarchies).__name__}.")
        self.rows = rows
        self.hierarchies = hierarchies
        self.drug_column = _column(rows, drug_column, "the drug column")
        self.reaction_column = _column(rows, reaction_column, "the reaction column")
        self._terms: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._classes: dict[Condition, np.ndarray] = {}

    def know(self, terms: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
             classes: Mapping[Condition, np.ndarray]) -> None:
        """Take what another reader read of these rows: per multi-valued column named exactly,
        its (row, term code, casefolded name) entries, which :meth:`mentions` reads as it reads
        its own (each row's set of casefolded terms, ``""`` and ``*`` left out); per condition,
        the class of each row, judged by ``Condition.classify`` of the column named exactly."""
        for column, entries in terms.items():
            if column in self.rows.columns:
                self._terms.setdefault(column, entries)
        for condition, found in classes.items():
            if condition.attribute in self.rows.columns and len(found) == len(self.rows):
                self._classes.setdefault(condition, found)

    def mentions(self, column: str, term: str) -> np.ndarray:
        """Whether each row's multi-valued cell holds ``term`` (case-insensitive)."""
        if column not in self._terms:
            rows, codes, names = term_pairs(cell_strings(self.rows[column]))
            folded = np.array([str(n).casefold() for n in names], dtype=object)
            self._terms[column] = (rows, codes, folded)
        rows, codes, folded = self._terms[column]
        out = np.zeros(len(self.rows), dtype=bool)
        wanted = np.flatnonzero(folded == term.casefold())
        if wanted.size:
            out[rows[np.isin(codes, wanted)]] = True
        return out

    def classes(self, condition: Condition | None) -> np.ndarray:
        if condition is None:
            return np.full(len(self.rows), INSIDE, dtype=np.int8)
        if condition not in self._classes:
            column = _column(self.rows, condition.attribute, f"condition {condition.text!r}")
            hierarchy = self.hierarchies.get(column, self.hierarchies.get(condition.attribute))
            self._classes[condition] = condition.classify(self.rows[column], hierarchy)
        return self._classes[condition]

    def table(self, rule: SignalRule) -> Contingency:
        if not isinstance(rule, SignalRule):
            raise ValidationError(
                f"The 'rule' parameter of contingency must be a SignalRule; got "
                f"{type(rule).__name__}.")
        drug = self.mentions(self.drug_column, rule.drug)
        reaction = self.mentions(self.reaction_column, rule.reaction)
        classes = self.classes(rule.condition)
        inside, undecided = classes == INSIDE, classes == UNDECIDED
        d_in, nd_in = drug & inside, ~drug & inside
        return Contingency(
            a=int(np.count_nonzero(d_in & reaction)),
            b=int(np.count_nonzero(d_in & ~reaction)),
            c=int(np.count_nonzero(nd_in & reaction)),
            d=int(np.count_nonzero(nd_in & ~reaction)),
            missing=int(np.count_nonzero(undecided & drug & reaction)),
            undecided=int(np.count_nonzero(undecided)))


def _column(rows: pd.DataFrame, name: str, role: str) -> str:
    """The column called ``name``: exact, else the single case-insensitive match."""
    if name in rows.columns:
        return name
    folded = [c for c in rows.columns if isinstance(c, str) and c.casefold() == name.casefold()]
    if len(folded) == 1:
        return folded[0]
    shown = ", ".join(repr(c) for c in list(rows.columns)[:20])
    raise SchemaError(f"The rows have no column {name!r} ({role}); their columns: {shown}.")


def contingency(rows: pd.DataFrame, rule: SignalRule, *, hierarchies: Mapping[str, Taxonomy],
                drug_column: str = "drugs", reaction_column: str = "reactions") -> Contingency:
    """The 2×2 table of ``rule`` counted over published rows (one row = one report).

    Args:
        rows: Published rows (strings as in ``release.csv``; the original data through
            :func:`medanon.published.format.to_published_rows`).
        rule: The rule to count.
        hierarchies: Taxonomy of each categorical column, by column name; a condition's
            attribute that is not a key here is read as numeric.
        drug_column: Multi-valued column holding the drugs.
        reaction_column: Multi-valued column holding the reactions.

    Returns:
        a, b, c, d over the reports wholly inside the rule's condition, and the missing and
        undecided counts (module docstring).

    Raises:
        SchemaError: a column is absent.
        ValidationError, HierarchyError, InputFormatError: see :meth:`Condition.classify`.
    """
    counter = _Counter(rows, hierarchies, drug_column=drug_column, reaction_column=reaction_column)
    return counter.table(rule)


# --------------------------------------------------------------------------------- statistics
def _table(table: Contingency, owner: str) -> Contingency:
    if not isinstance(table, Contingency):
        raise ValidationError(
            f"The 'table' parameter of {owner} must be a Contingency; got {type(table).__name__}.")
    return table


def prr(table: Contingency) -> float:
    """Proportional reporting ratio [a/(a+b)] / [c/(c+d)] (Evans et al. 2001).

    0 when a < 3 (001's rule); with a >= 3 ``math.inf`` when c = 0 and d > 0 (the reaction is
    never reported without the drug) and ``math.nan`` when c + d = 0 (undefined: nothing to
    compare with).
    """
    t = _table(table, "prr")
    if t.a < MIN_CASES:
        return 0.0
    if t.c + t.d == 0:
        return math.nan
    if t.c == 0:
        return math.inf
    return (t.a / (t.a + t.b)) / (t.c / (t.c + t.d))  # a + b >= a >= 3


def ror(table: Contingency) -> float:
    """Reporting odds ratio (a·d) / (b·c).

    0 when a < 3 (as PRR); with a >= 3 ``math.inf`` when b·c = 0 and d > 0, ``math.nan`` when
    b·c = 0 and d = 0 (0/0).
    """
    t = _table(table, "ror")
    if t.a < MIN_CASES:
        return 0.0
    if t.b * t.c == 0:
        return math.inf if t.d > 0 else math.nan
    return (t.a * t.d) / (t.b * t.c)


def _has_empty_cell(t: Contingency) -> bool:
    return 0 in (t.a, t.b, t.c, t.d)


def prr_haldane(table: Contingency) -> float:
    """PRR with the Haldane–Anscombe correction (+½ in every cell): always finite and > 0.

    [(a+½)/(a+b+1)] / [(c+½)/(c+d+1)]. No a < 3 rule: this is the plain corrected ratio.
    """
    t = _table(table, "prr_haldane")
    return ((t.a + 0.5) / (t.a + t.b + 1)) / ((t.c + 0.5) / (t.c + t.d + 1))


def ror_haldane(table: Contingency) -> float:
    """ROR with the Haldane–Anscombe correction: (a+½)(d+½) / [(b+½)(c+½)]."""
    t = _table(table, "ror_haldane")
    return ((t.a + 0.5) * (t.d + 0.5)) / ((t.b + 0.5) * (t.c + 0.5))


def chi_square(table: Contingency) -> float:
    """Yates-corrected χ² of the 2×2 table (1 df), as in the MHRA/Evans screening rule.

    N · max(0, |ad − bc| − N/2)² / [(a+b)(c+d)(a+c)(b+d)]; 0 when a margin is 0.
    """
    t = _table(table, "chi_square")
    a, b, c, d = t.a, t.b, t.c, t.d
    n = a + b + c + d
    denominator = (a + b) * (c + d) * (a + c) * (b + d)
    if denominator == 0:
        return 0.0
    excess = max(0.0, abs(a * d - b * c) - n / 2)
    return n * excess * excess / denominator


def is_signal(table: Contingency) -> bool:
    """Evans et al. 2001 / MHRA criteria: a >= 3 and PRR >= 2 and χ² >= 4; an infinite PRR
    (c = 0) with a >= 3 is a signal whatever χ² (module docstring, choice 4)."""
    t = _table(table, "is_signal")
    if t.a < MIN_CASES:
        return False
    value = prr(t)
    if math.isinf(value):
        return True
    return value >= MIN_PRR and chi_square(t) >= MIN_CHI_SQUARE  # NaN >= 2 is False


# ----------------------------------------------------------------------------- JSON and display
#: How an infinite ratio is written in JSON (which has no infinity).
JSON_INF = "inf"


def json_ratio(value: float) -> float | str | None:
    """A ratio or bias for JSON: the number when finite, ``"inf"``/``"-inf"`` when infinite,
    None when undefined (NaN)."""
    value = float(value)
    if math.isnan(value):
        return None
    if math.isinf(value):
        return JSON_INF if value > 0 else f"-{JSON_INF}"
    return value


def ratio_from_json(value: object) -> float:
    """The inverse of :func:`json_ratio`: None -> NaN, ``"inf"`` -> inf, ``"-inf"`` -> -inf.

    Raises:
        ValidationError: anything else that is not a number.
    """
    if value is None:
        return math.nan
    if value == JSON_INF:
        return math.inf
    if value == f"-{JSON_INF}":
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"A ratio in evaluation JSON must be a number, {JSON_INF!r}, "
                              f"'-{JSON_INF}' or null; got {value!r}.")
    return float(value)


def format_ratio(value: object, corrected: float | None = None, *, a: int | None = None,
                 digits: int = 2) -> str:
    """A ratio as the report and the CLI print it: ``5.40``, ``∞ (HA 34.00)``, ``n/a``, or
    ``0 (a<3)`` when ``a`` is given and below 3 (001's rule, so that a 0 is never mistaken for
    "no disproportionality")."""
    x = ratio_from_json(value) if not isinstance(value, float) else value
    if a is not None and a < MIN_CASES:
        return "0 (a<3)"
    if math.isnan(x):
        text = "n/a"
    elif math.isinf(x):
        text = "∞" if x > 0 else "−∞"
    else:
        text = f"{x:.{digits}f}"
    if corrected is not None:
        text += f" (HA {corrected:.{digits}f})"
    return text


# ---------------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class SignalStats:
    """A rule's table and statistics on one side (original or release).

    Attributes:
        table: The 2×2 table.
        prr: :func:`prr` of the table (may be ``inf`` or ``nan``, module docstring).
        ror: :func:`ror` of the table (likewise).
        chi_square: :func:`chi_square` of the table.
        signal: :func:`is_signal` of the table.
        prr_corrected: :func:`prr_haldane` when a >= 3, some cell is 0 and PRR is defined;
            None otherwise.
        ror_corrected: :func:`ror_haldane` under the same conditions for ROR.
    """

    table: Contingency
    prr: float
    ror: float
    chi_square: float
    signal: bool
    prr_corrected: float | None = None
    ror_corrected: float | None = None

    @classmethod
    def from_table(cls, table: Contingency) -> SignalStats:
        """Compute every statistic of ``table``."""
        p, r = prr(table), ror(table)
        # the correction stands beside a ratio the zero cell distorts; a < 3 is already 0 by
        # 001's rule and an undefined ratio has no comparator to correct
        zero = table.a >= MIN_CASES and _has_empty_cell(table)
        return cls(table, p, r, chi_square(table), is_signal(table),
                   prr_haldane(table) if zero and not math.isnan(p) else None,
                   ror_haldane(table) if zero and not math.isnan(r) else None)

    @property
    def count(self) -> int:
        """a: the reports that satisfy the rule (001's "count")."""
        return self.table.a

    @property
    def missing(self) -> int:
        """Reports with the drug and the reaction whose condition is undecided."""
        return self.table.missing

    def to_dict(self) -> dict[str, Any]:
        """Counts and statistics as plain JSON values (ratios through :func:`json_ratio`)."""
        return {"count": self.count, **self.table.to_dict(), "prr": json_ratio(self.prr),
                "prr_corrected": self.prr_corrected, "ror": json_ratio(self.ror),
                "ror_corrected": self.ror_corrected, "chi_square": self.chi_square,
                "signal": self.signal}


@dataclass(frozen=True)
class SignalComparison:
    """One rule on the original data and on a release (biases are release − original).

    Attributes:
        rule: The rule.
        original: Its statistics on the original data.
        release: Its statistics on the release.
    """

    rule: SignalRule
    original: SignalStats
    release: SignalStats

    @property
    def count_bias(self) -> int:
        """count_release − count_original (a on each side)."""
        return self.release.count - self.original.count

    @property
    def prr_bias(self) -> float:
        """PRR_release − PRR_original (IEEE: ∞ − x = ∞, ∞ − ∞ = NaN)."""
        return self.release.prr - self.original.prr

    @property
    def ror_bias(self) -> float:
        """ROR_release − ROR_original (IEEE, as :attr:`prr_bias`)."""
        return self.release.ror - self.original.ror

    def to_dict(self) -> dict[str, Any]:
        """The rule, both sides and the biases as plain JSON values (:func:`json_ratio`)."""
        return {"rule": self.rule.to_dict(), "original": self.original.to_dict(),
                "release": self.release.to_dict(), "count_bias": self.count_bias,
                "prr_bias": json_ratio(self.prr_bias), "ror_bias": json_ratio(self.ror_bias)}



def compare_signals(original_rows: pd.DataFrame, release_rows: pd.DataFrame,
                    rules: Iterable[SignalRule], *, hierarchies: Mapping[str, Taxonomy],
                    drug_column: str = "drugs", reaction_column: str = "reactions",
                    read: tuple[KnownCounts, KnownCounts] | None = None
                    ) -> list[SignalComparison]:
    """Count every rule on the original data and on a release, both as published rows.

    Args:
        original_rows: The original data in the published string form
            (:func:`medanon.published.format.to_published_rows`).
        release_rows: The release's rows.
        rules: The rules (e.g. from :func:`read_rules`).
        hierarchies: Taxonomy of each categorical column, by column name.
        drug_column: Multi-valued column holding the drugs.
        reaction_column: Multi-valued column holding the reactions.
        read: What another reader of the same rows (the evaluation's screening) read of them
            already, original side then release side (:data:`KnownCounts`): the counts are
            those of reading the rows here, without reading them again (issue 43).

    Returns:
        One :class:`SignalComparison` per rule, in the order of ``rules``.

    Raises:
        ValidationError: ``rules`` holds something other than SignalRule objects; see also
            :func:`contingency`.
    """
    if isinstance(rules, (SignalRule, str)) or not isinstance(rules, Iterable):
        raise ValidationError(
            f"The 'rules' parameter of compare_signals must be a list of SignalRule objects; got "
            f"{type(rules).__name__}.")
    rules = list(rules)
    for rule in rules:
        if not isinstance(rule, SignalRule):
            raise ValidationError(
                f"The 'rules' parameter of compare_signals must be a list of SignalRule objects; "
                f"it holds a {type(rule).__name__}.")
    sides = [_Counter(rows, hierarchies, drug_column=drug_column, reaction_column=reaction_column)
             for rows in (original_rows, release_rows)]
    if read is not None:
        for side, (terms, classes) in zip(sides, read, strict=True):
            side.know(terms, classes)
    return [SignalComparison(rule, *(SignalStats.from_table(side.table(rule)) for side in sides))
            for rule in rules]
