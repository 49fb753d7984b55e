"""Every drug–reaction pair of a series, screened as an analyst screens FAERS: one table.

``medanon signals`` and :func:`signal_table` give what openEBGM's ``ebScores`` and vigipy's
``all_signals`` give: one row per drug–reaction pair and *scope*, with every statistic of
:mod:`.disproportionality` and the decision of every rule, and beside it (``attrs``, the
sidecar JSON) the prior of each scope with its fit diagnostics. It reads published rows only,
so it screens a published series exactly as the original in a store (the operator's view).

**Scopes** (``scopes``):

* ``dedup`` (default): the latest published version of each case: of the rows sharing a
  ``case_id``, the one of the latest period. This is how FDA analyses pool FAERS (a case's
  follow-ups replace its earlier versions).
* ``pooled``: every row of every period, one report per case *and quarter* (a case followed up
  three times counts three times), what a reader stacking the quarterly extracts gets.
* ``quarter``: each period on its own.
* ``cumulative``: for each period q, the ``dedup`` scope of the periods up to q (the database as
  it stood at q); with the columns ``first_signal_<rule>``, the first period at which the pair
  signals under each rule (vigipy's ``LongitudinalModel`` question: when did it first signal?).

The ``dedup`` prior is fitted from the 8 starts of :func:`.disproportionality.fit_gps_prior`
(also when that scope is not listed); every other scope's (``pooled`` too) from the dedup
prior and DuMouchel's start, exactly as ``evaluate`` fits its scopes (:mod:`.screening`), so
that both give the same table.

**Stratum-adjusted expected counts** (``stratify_by``; DuMouchel 1999 §4, FDA's MGPS and
openEBGM ``processRaw(stratify = TRUE)``): with reports in strata s (the combinations of the
stratifying variables' values)::

    E = Σ_s n_drug,s · n_reaction,s / n_total,s

used by EBGM, EB05, EB95, IC and IC025 and the posterior probabilities below. PRR, ROR and the
χ² keep the crude 2×2 table (as openEBGM and PhViD do: the adjustment is the expected count's).
``e_crude`` keeps the unadjusted E. A stratum is read from the *published* cell only:

* ``age``: the bands of :data:`.screening.DEFAULT_STRATA` (≤ 18, 19–64, ≥ 65), a cell judged
  by :meth:`.signals.Condition.classify` exactly as the strata of ``evaluate``: a cell wholly
  inside one band is in it; a cell that straddles bands (``Adult``, which spans 19–64 and
  ≥ 65), a blank cell and ``*`` are ``unknown``;
* ``sex``: ``F`` or ``M`` judged the same way; anything else ``unknown``;
* ``year``: the year of the initial FDA receipt date (``init_fda_dt``; the first four digits of
  a date published at year, month or day); anything else ``unknown``;
* a categorical column with a hierarchy (``hierarchies``): its published label, blank and
  ``*`` ``unknown`` (a generalized label is a stratum of its own).

``unknown`` is a stratum of its own (its reports are not dropped: the adjusted E of every pair
still sums over every screened report), and the sidecar counts it per variable and warns. A
column a release declares perturbed (``details.perturbed_qids``: PPMS-DP's randomized QIDs) is
refused: its values are noise, and a stratum read from them would be a guess.

**Decisions under a false-discovery rate** (``fdr``, default 0.05):

* MGPS: ``p_h0_mgps`` = P(λ ≤ 1 | n), the posterior probability of no excess under the pair's
  posterior (the two-gamma mixture of :mod:`.disproportionality`). Pairs sorted by it, the
  Bayesian FDR of the first k is the mean of their ``p_h0_mgps`` (Ahmed et al. 2009, the FDR
  procedure of PhViD's GPS); ``fdr_mgps`` is that mean at the pair's rank and
  ``signal_mgps_fdr`` holds for the longest list whose FDR is at most ``fdr``.
* PRR: ``p_prr``, the one-sided p-value of log PRR > 0 from the normal approximation on the
  Haldane–Anscombe corrected table (+½ per cell: defined for every table); ``q_prr`` its
  Benjamini–Hochberg adjusted value over the scope's pairs; ``signal_prr_fdr``: q_prr ≤ ``fdr``
  and a ≥ 3 (Evans' minimum count).

Deviations and choices:

1. Ties in ``p_h0_mgps`` are broken by the table's order (drug, then reaction), so that the
   decision is deterministic; a tie at the cut can split.
2. BH runs over every pair of the scope, including those with a < 3 (which cannot signal): the
   m of BH is the number of pairs screened, the conservative choice.
3. The ``dedup`` scope keeps the latest *period's* row of a case: the release format publishes
   one row per case and period (a super record of the case's reports in that quarter), so the
   latest period is the latest published version. Rows without a ``case_id`` column are each
   their own case (``dedup`` is then ``pooled``), as in ``evaluate``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from .._validation import check_int
from ..errors import InputFormatError, MedanonError, SchemaError, ValidationError
from ..hierarchies import Taxonomy
from ..hierarchies.builtin import FAERS_AGE_GROUP_LEAVES, mesh_age_tree
from ..periods import parse_period
from ..published.cells import SUPPRESSED, blank_cells, cell_strings
from .disproportionality import (GPS_STARTS, LIMIT_FLIP_COLUMN, GpsPrior, bayesian_fdr,
                                 benjamini_hochberg, count_pairs, posterior_h0, prr_p_value,
                                 screen)
from .screening import DEFAULT_STRATA, SCOPE_STARTS, _cells, _Terms
from .signals import INSIDE, Condition

__all__ = ["AGE_GROUP_COLUMN", "CSV_HINT_BYTES", "DEFAULT_SCOPES", "SCOPES", "SIGNAL_RULES",
           "SIGNAL_TABLE_DTYPES", "STRATIFY_COLUMNS", "UNKNOWN_STRATUM",
           "bayesian_fdr", "benjamini_hochberg", "posterior_h0", "prr_p_value",
           "read_signal_table", "signal_table", "signal_table_columns", "signal_table_steps",
           "write_signal_table"]

SCOPES = ("dedup", "pooled", "quarter", "cumulative")
#: the scopes :func:`signal_table` screens unless told
DEFAULT_SCOPES = ("dedup",)
#: ``stratify_by`` alias -> the column it reads
STRATIFY_COLUMNS = {"age": "age", "sex": "sex", "year": "init_fda_dt"}
UNKNOWN_STRATUM = "unknown"
#: FDA's age group code of a report (DEMO ``age_grp``), read for the ``age`` stratum when the age
#: cell decides none: a FAERS-layout folder carries a generalized age only there
AGE_GROUP_COLUMN = "age_grp"
#: rule -> the flag column deciding it (every flag of the table, in this order)
SIGNAL_RULES = {
    "mgps": "signal_mgps", "bcpnn": "signal_bcpnn", "prr": "signal_prr",
    "mgps_fdr": "signal_mgps_fdr", "prr_fdr": "signal_prr_fdr",
}
_BANDS = {"age": DEFAULT_STRATA[:3], "sex": ("sex = F", "sex = M")}
_YEAR = re.compile(r"^(\d{4})(?:\d{2}){0,2}$")
#: the table's columns in order (``e_crude`` only when stratified; ``first_signal_*`` only in
#: cumulative scopes)
_OUT = ("scope", "period", "drug", "reaction", "n", "e", "e_crude", "n_drug", "n_reaction",
        "n_total", "ebgm", "eb05", "eb95", "ic", "ic025", "prr", "prr_corrected", "ror",
        "chi2_yates", "p_h0_mgps", "fdr_mgps", "p_prr", "q_prr", *SIGNAL_RULES.values(),
        LIMIT_FLIP_COLUMN)
#: every column's dtype, the same in every scope, in the DataFrame and in the files written
#: (Parquet: VARCHAR, BIGINT, DOUBLE, BOOLEAN). A text column's missing value is NA (an empty
#: CSV field, a Parquet NULL), never an empty string beside a float NaN: ``first_signal_*`` is
#: missing outside the cumulative scopes and where the pair has not signalled yet;
#: ``limit_prior_flips`` is missing where no decision flips.
SIGNAL_TABLE_DTYPES: dict[str, str] = {
    **dict.fromkeys(("scope", "period", "drug", "reaction"), "str"),
    **dict.fromkeys(("n", "n_drug", "n_reaction", "n_total"), "int64"),
    **dict.fromkeys(("e", "e_crude", "ebgm", "eb05", "eb95", "ic", "ic025", "prr",
                     "prr_corrected", "ror", "chi2_yates", "p_h0_mgps", "fdr_mgps", "p_prr",
                     "q_prr"), "float64"),
    **dict.fromkeys(SIGNAL_RULES.values(), "bool"),
    LIMIT_FLIP_COLUMN: "str",
    **{f"first_signal_{rule}": "str" for rule in SIGNAL_RULES},
}
#: a CSV table larger than this gets a hint to write Parquet instead (``medanon signals``):
#: 32 MiB is about 100,000 pair rows at the ~340 bytes a row measured on an 8 x 1,000 series,
#: where pandas' ``read_csv`` takes about half a CPU second and, without ``dtype=``, warns of
#: mixed types in the mostly empty text columns; that series' default dedup table (~20,000
#: rows, ~7 MB) stays below it, its four scopes (~223,000 rows, ~75 MB) above.
CSV_HINT_BYTES = 32 * 2**20


# ----------------------------------------------------------------------------- options
def _names(value: Any, name: str, allowed: Sequence[str] | None = None) -> tuple[str, ...]:
    """A tuple of names from a sequence or a comma-separated string."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"The {name!r} parameter of signal_table must be a list of names; "
                              f"got {value!r}.")
    out = tuple(dict.fromkeys(p.strip() for v in value for p in v.split(",") if p.strip()))
    if allowed is not None:
        bad = [v for v in out if v not in allowed]
        if bad:
            raise ValidationError(f"The {name!r} parameter of signal_table names "
                                  f"{', '.join(map(repr, bad))}; it takes "
                                  f"{', '.join(allowed)}.")
    return out


def _fdr_level(fdr: Any) -> float:
    if (isinstance(fdr, bool) or not isinstance(fdr, (int, float)) or not math.isfinite(fdr)
            or not 0.0 < fdr < 1.0):
        raise ValidationError(f"The 'fdr' parameter of signal_table must be a number in (0, 1); "
                              f"got {fdr!r}.")
    return float(fdr)


# ----------------------------------------------------------------------------- strata
@dataclass
class _Strata:
    """Each report's stratum code, the strata's labels and the unknown count per variable."""

    codes: np.ndarray
    labels: list[str]
    unknown: dict[str, int]


def _variable_values(rows: pd.DataFrame, variable: str, column: str,
                     hierarchies: Mapping[str, Taxonomy]) -> np.ndarray:
    """Each report's value of one stratifying variable (:data:`UNKNOWN_STRATUM` when the
    published cell does not decide it)."""
    cells = cell_strings(rows[column])
    out = np.full(len(rows), UNKNOWN_STRATUM, dtype=object)
    if variable in _BANDS:
        for text in _BANDS[variable]:
            condition = Condition.parse(text)
            try:
                inside = condition.classify(cells, hierarchies.get(column)) == INSIDE
            except MedanonError as exc:
                raise ValidationError(
                    f"The 'stratify_by' parameter of signal_table names {variable!r}, but column "
                    f"{column!r} cannot be read into the stratum {text!r}"
                    f"{'' if column in hierarchies else ' without its hierarchy (hierarchies)'}"
                    f": {exc}") from None
            out[inside] = text
        if variable == "age" and AGE_GROUP_COLUMN in rows.columns:
            bands = _age_group_bands(hierarchies.get(column))
            codes = rows[AGE_GROUP_COLUMN].astype(str).str.strip().str.upper().to_numpy()
            for code, band in bands.items():
                out[(out == UNKNOWN_STRATUM) & (codes == code)] = band
        return out
    if variable == "year":
        for value in pd.unique(cells):
            found = _YEAR.match(str(value).strip())
            if found:
                out[cells == value] = found.group(1)
        return out
    known = ~blank_cells(cells) & (cells != SUPPRESSED)
    out[known] = cells[known]
    return out


def _age_group_bands(tree: Taxonomy | None) -> dict[str, str]:
    """Each FAERS ``age_grp`` code whose ages all fall in one age band, and that band: decided by
    classifying the MeSH leaves the code stands for (:data:`~medanon.hierarchies.builtin.
    FAERS_AGE_GROUP_LEAVES`) as a published cell is, so the reading cannot drift from the
    bands (N, I, C, T: age <= 18; A: 19-64; E: >= 65)."""
    if tree is None:
        tree = mesh_age_tree()
    out = {}
    for code, leaves in FAERS_AGE_GROUP_LEAVES.items():
        cells = np.array(leaves, dtype=object)
        for text in _BANDS["age"]:
            if (Condition.parse(text).classify(cells, tree) == INSIDE).all():
                out[code] = text
                break
    return out


def _strata(rows: pd.DataFrame, variables: Sequence[str],
            hierarchies: Mapping[str, Taxonomy]) -> _Strata:
    values, unknown = [], {}
    for variable in variables:
        column = STRATIFY_COLUMNS.get(variable, variable)
        v = _variable_values(rows, variable, column, hierarchies)
        unknown[variable] = int((v == UNKNOWN_STRATUM).sum())
        values.append(v)
    return _joined_strata(values, unknown)


def _joined_strata(values: Sequence[np.ndarray], unknown: dict[str, int]) -> _Strata:
    """The strata of reports with these values of the variables: each combination's label
    (the values joined by `` & ``), numbered in the labels' sorted order."""
    # each distinct combination is joined once: a scope holds a handful of them, each on
    # many reports
    combination = np.zeros(len(values[0]), dtype=np.int64)
    for v in values:
        codes, uniques = pd.factorize(v)
        combination = combination * max(len(uniques), 1) + codes
    per_report, firsts = pd.factorize(combination)
    at = np.zeros(len(firsts), dtype=np.int64)
    at[per_report] = np.arange(len(per_report))  # a row of each (any: they hold the same values)
    joined = values[0][at].astype(str)
    for v in values[1:]:
        joined = np.char.add(np.char.add(joined, " & "), v[at].astype(str))
    codes, labels = pd.factorize(joined, sort=True)
    return _Strata(codes.astype(np.int64)[per_report], [str(x) for x in labels], unknown)


def _check_strata_columns(columns: Mapping[str, Sequence[str]], variables: Sequence[str],
                          perturbed: Mapping[str, Sequence[str]],
                          hierarchies: Mapping[str, Taxonomy]) -> None:
    """Refuse a stratifying variable that is no stratum, that a release lacks (``columns``:
    each period's columns) or that a release publishes perturbed."""
    for variable in variables:
        if variable not in STRATIFY_COLUMNS and variable not in hierarchies:
            # a free-text or numeric column would make a stratum of every distinct value
            raise ValidationError(
                f"The 'stratify_by' parameter of signal_table names {variable!r}; it takes "
                f"{', '.join(STRATIFY_COLUMNS)} or a categorical column with a hierarchy"
                f"{' (' + ', '.join(sorted(hierarchies)) + ')' if hierarchies else ''}.")
        column = STRATIFY_COLUMNS.get(variable, variable)
        lacking = [p for p, names in columns.items() if column not in names]
        if lacking:
            raise SchemaError(f"The 'stratify_by' parameter of signal_table names {variable!r} "
                              f"(column {column!r}), which the rows of {', '.join(lacking)} do "
                              f"not have.")
        noisy = [p for p, names in perturbed.items() if column in names]
        if noisy:
            raise ValidationError(
                f"The 'stratify_by' parameter of signal_table names {variable!r}, but the "
                f"release(s) of {', '.join(noisy)} publish column {column!r} perturbed (a "
                f"randomized value, details.perturbed_qids): a stratum read from it would be a "
                f"guess. Stratify by columns published as measured.")


# ----------------------------------------------------------------------------- the series
class _Cells:
    """The cells of some columns over the series, each distinct combination numbered once in
    its order of first appearance (a release repeats a group's value on every row): what a
    stratum is read from, kept as one number per report instead of the rows."""

    def __init__(self, columns: Sequence[str]):
        self.columns = tuple(columns)
        self._ids: dict[tuple, int] = {}
        self._chunks: list[np.ndarray] = []
        self.codes = np.zeros(0, dtype=np.int32)

    def read(self, rows: pd.DataFrame) -> None:
        # a period without a column reads as NaN there, as it did when the periods were
        # stacked into one frame
        parts = [pd.factorize(np.asarray(rows[c], dtype=object) if c in rows.columns
                              else np.full(len(rows), np.nan, dtype=object),
                              use_na_sentinel=False) for c in self.columns]
        joint = np.zeros(len(rows), dtype=np.int64)
        for codes, uniques in parts:
            joint = joint * max(len(uniques), 1) + codes
        joint_codes, joint_uniques = pd.factorize(joint)
        keys = []
        for value in joint_uniques.tolist():
            key = []
            for _codes, uniques in reversed(parts):
                value, at = divmod(value, max(len(uniques), 1))
                key.append(uniques[at])
            keys.append(tuple(reversed(key)))
        ids = np.fromiter((self._ids.setdefault(k, len(self._ids)) for k in keys),
                          dtype=np.int64, count=len(keys))
        self._chunks.append(ids[joint_codes].astype(np.int32) if len(rows)
                            else np.zeros(0, dtype=np.int32))

    def close(self) -> None:
        self.codes = (np.concatenate(self._chunks) if self._chunks
                      else np.zeros(0, dtype=np.int32))
        self._chunks = []

    def frame(self, ids: np.ndarray) -> pd.DataFrame:
        """The combinations ``ids`` as rows of the columns."""
        keys = self.keys
        return pd.DataFrame({c: pd.Series([keys[i][k] for i in ids.tolist()], dtype=object)
                             for k, c in enumerate(self.columns)})

    @property
    def keys(self) -> list[tuple]:
        """The combinations read, by number."""
        return list(self._ids)


class _Variable:
    """One stratifying variable over the series: each report's value
    (:func:`_variable_values`), judged on the distinct combinations of its cells."""

    def __init__(self, variable: str, column: str, with_age_groups: bool):
        self.variable, self.column = variable, column
        # FDA's age group decides the age band of a blank age (a FAERS-layout series)
        self.cells = _Cells([column, AGE_GROUP_COLUMN] if with_age_groups else [column])
        self.with_age_groups = with_age_groups
        self.hierarchies: Mapping[str, Taxonomy] = {}
        self.values: np.ndarray | None = None   # the value of each combination (close)

    def close(self, hierarchies: Mapping[str, Taxonomy], age_groups: bool) -> None:
        """Judge every combination read (``age_groups``: some release has the column)."""
        self.cells.close()
        self.hierarchies = hierarchies
        try:
            # each cell is judged alone (a report's value depends on its cells only), so the
            # values judged once serve every scope
            self.values = self._judge(np.arange(len(self.cells.keys)), age_groups)
        except MedanonError:
            self.values = None  # judged scope by scope: a scope holding the cell raises

    def _judge(self, ids: np.ndarray, age_groups: bool) -> np.ndarray:
        frame = self.cells.frame(ids)
        if self.with_age_groups and not age_groups:
            # as on rows that do not have the column (FDA's age group is not read at all)
            frame = frame.drop(columns=AGE_GROUP_COLUMN)
        return _variable_values(frame, self.variable, self.column, self.hierarchies)

    def of(self, inside: np.ndarray, age_groups: bool) -> np.ndarray:
        """The value of each report ``inside`` (a scope's reports in order; ``age_groups``:
        some release of the scope has FDA's age group), as :func:`_variable_values` judges the
        scope's rows, raising what it raises on them."""
        codes = self.cells.codes[inside]
        if self.values is not None:
            # a missing age group matches no code: a scope whose rows lack the column reads
            # the same values as one whose rows have it blank
            return self.values[codes]
        # the distinct cells in the order of the scope's rows: an error names what it names
        # on the rows
        per_report, distinct = pd.factorize(codes)
        return self._judge(np.asarray(distinct, dtype=np.int64), age_groups)[per_report]


class _SeriesReports:
    """Every report of a series, read a release at a time and kept as numbers: the drug and
    reaction entries as term codes (:class:`.screening._Terms`, the evaluation's reading), each
    report's case, and the cells of the stratifying columns. A scope is a set of these reports
    and its pair table is counted from them (:func:`.disproportionality.count_pairs`), the
    table :func:`.disproportionality.pair_counts` gives on the scope's rows stacked into one
    frame: no release is held once it is read."""

    def __init__(self, drug_columns: Sequence[str], reaction_column: str,
                 variables: Sequence[str]):
        self.drug_columns, self.reaction_column = tuple(drug_columns), reaction_column
        self.drugs, self.reactions = _Terms(upper=True), _Terms(upper=False)
        self.count = 0
        self.bounds: dict[str, tuple[int, int]] = {}
        self.columns: dict[str, tuple[str, ...]] = {}
        self._entries: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"drug": [],
                                                                         "reaction": []}
        self.drug_entries = self.reaction_entries = (np.zeros(0, dtype=np.int64),) * 2
        self._cases: list[np.ndarray] = []
        self._next = np.zeros(0, dtype=np.int64)
        self.variables = {v: _Variable(v, STRATIFY_COLUMNS.get(v, v), v == "age")
                          for v in variables}

    def add(self, label: str, rows: pd.DataFrame) -> None:
        start = self.count
        self.columns[label] = tuple(rows.columns)
        for name, terms, columns in (("drug", self.drugs, self.drug_columns),
                                     ("reaction", self.reactions, (self.reaction_column,))):
            # a release's cells seldom repeat (about 2 in 3 are distinct): split as they come
            reports, spellings = terms.read(_cells(rows, columns), repeated=False)
            small = np.int32 if start + len(rows) < 2**31 else np.int64
            self._entries[name].append(((reports + start).astype(small),
                                        spellings.astype(np.int32)))
        # kept as they are until every release is read, then numbered at once (close)
        self._cases.append(np.asarray(rows["case_id"], dtype=object) if "case_id" in rows.columns
                           else np.full(len(rows), np.nan, dtype=object))
        for variable in self.variables.values():
            variable.cells.read(rows)
        self.count += len(rows)
        self.bounds[label] = (start, self.count)

    def close(self, hierarchies: Mapping[str, Taxonomy]) -> None:
        """Code the terms and judge the strata once every release is read."""
        for terms in (self.drugs, self.reactions):
            terms.close()
        for name in ("drug", "reaction"):
            chunks = self._entries[name]
            setattr(self, f"{name}_entries",
                    tuple(np.concatenate([c[i] for c in chunks]) if chunks
                          else np.zeros(0, dtype=np.int64) for i in (0, 1)))
            self._entries[name] = []
        # each report's next report of its case (count: none), reports in period order
        # drop_duplicates matches case ids as values, a missing one (NaN, or a release without
        # the column) equal to every other missing one
        cases = (pd.factorize(np.concatenate(self._cases), use_na_sentinel=False)[0]
                 if self._cases else np.zeros(0, dtype=np.int64))
        self._cases = []
        following = np.full(self.count, self.count, dtype=np.int64)
        order = np.lexsort((np.arange(self.count), cases))
        same = cases[order[1:]] == cases[order[:-1]]
        following[order[:-1][same]] = order[1:][same]
        self._next = following
        age_groups = any(AGE_GROUP_COLUMN in c for c in self.columns.values())
        for variable in self.variables.values():
            variable.close(hierarchies, age_groups)

    def scope(self, periods: Sequence[str], dedup: bool) -> tuple[np.ndarray, list[str]]:
        """The reports of a scope (a mask, in report order) and the columns its rows stacked
        into one frame would have. Scopes are a run of periods: a quarter, or the periods up to
        one."""
        start, end = self.bounds[periods[0]][0], self.bounds[periods[-1]][1]
        inside = np.zeros(self.count, dtype=bool)
        columns = list(dict.fromkeys(c for p in periods for c in self.columns[p]))
        if dedup and "case_id" in columns:
            # the last row of each case among the scope's (drop_duplicates keep="last")
            inside[start:end] = self._next[start:end] >= end
        else:
            inside[start:end] = True
        return inside, columns

    def table(self, inside: np.ndarray, columns: Sequence[str], periods: Sequence[str],
              variables: Sequence[str]) -> tuple[pd.DataFrame, _Strata | None]:
        """The pair table of a scope's reports (as :func:`.disproportionality.pair_counts`
        counts its rows), its
        strata counted first as :func:`_strata` counts them on the rows."""
        strata = self._strata(inside, periods, variables) if variables else None
        for column in (*self.drug_columns, self.reaction_column):
            if column not in columns:
                what = "reaction_column" if column == self.reaction_column else "drug_columns"
                raise SchemaError(f"The {what!r} parameter of signal_table names {column!r}, "
                                  f"which the rows do not have; their columns: "
                                  f"{', '.join(map(repr, columns))}.")
        parts = []
        for terms, (reports, spellings) in ((self.drugs, self.drug_entries),
                                            (self.reactions, self.reaction_entries)):
            keep = inside[reports]
            reports, spellings = reports[keep], spellings[keep]
            codes = terms.code_of[spellings]
            parts.append((reports, codes, terms.names(spellings, codes)))
        (d_rows, d_codes, drugs), (r_rows, r_codes, reactions) = parts
        codes = None
        if strata is not None:
            codes = np.zeros(self.count, dtype=np.int64)
            codes[inside] = strata.codes
        table = count_pairs(self.count, d_rows, d_codes, drugs, r_rows, r_codes, reactions,
                            strata=codes)
        return table, strata

    def _strata(self, inside: np.ndarray, periods: Sequence[str],
                variables: Sequence[str]) -> _Strata:
        age_groups = any(AGE_GROUP_COLUMN in self.columns[p] for p in periods)
        values, unknown = [], {}
        for name in variables:
            v = self.variables[name].of(inside, age_groups)
            unknown[name] = int((v == UNKNOWN_STRATUM).sum())
            values.append(v)
        return _joined_strata(values, unknown)


def _screened(table: pd.DataFrame, *, fdr: float, min_count: int, starts: int,
              warm_start: GpsPrior | None, rr0: float = 1.0
              ) -> tuple[pd.DataFrame, GpsPrior | None]:
    if not len(table):
        return table, None
    out, prior = screen(table, min_count=min_count, starts=starts, warm_start=warm_start, fdr=fdr,
                        rr0=rr0)
    return out.rename(columns={"chi2": "chi2_yates"}), prior


def _first_signals(frames: list[pd.DataFrame]) -> None:
    """Add ``first_signal_<rule>`` to each cumulative scope's table (in period order)."""
    first: dict[str, dict[tuple[str, str], str]] = {rule: {} for rule in SIGNAL_RULES}
    for frame in frames:
        if not len(frame):
            for rule in SIGNAL_RULES:
                frame[f"first_signal_{rule}"] = pd.Series(dtype="str")
            continue
        period = str(frame["period"].iloc[0])
        keys = list(zip(frame["drug"].str.casefold(), frame["reaction"].str.casefold()))
        for rule, flag in SIGNAL_RULES.items():
            seen = first[rule]
            for key, on in zip(keys, frame[flag].to_numpy(bool)):
                if on and key not in seen:
                    seen[key] = period
            # not signalled yet: missing (the column's one missing value, _typed)
            frame[f"first_signal_{rule}"] = pd.Series([seen.get(k) for k in keys],
                                                      index=frame.index, dtype="str")


def _unknown_warnings(entries: list[dict[str, Any]]) -> list[str]:
    """One warning per stratifying variable that leaves reports unknown, told for the scope
    with the most reports (the sidecar counts every scope)."""
    stratified = [e for e in entries if "unknown" in e]
    if not stratified:
        return []
    widest = max(stratified, key=lambda e: e["reports"])
    return [f"{variable}: the published cell of {count} of {widest['reports']} reports "
            f"({count / widest['reports']:.1%}; scope {widest['scope']} {widest['period']}) "
            f"is in no {variable} stratum (blank, suppressed or generalized across strata); they "
            f"are counted in the stratum {UNKNOWN_STRATUM!r}, not guessed."
            for variable, count in widest["unknown"].items() if count]


def _prior_warnings(entries: list[dict[str, Any]]) -> list[str]:
    """At most two plain-language warnings for the whole run (the sidecar's scope entries keep
    each fit's own optimizer text): the scopes whose prior has no finite maximum, with what that
    means for the decisions, and the scopes whose fit stopped short for another reason."""
    fitted = [e for e in entries if e["prior"] is not None]
    held = [e for e in fitted if e["prior"]["limit"] is not None]
    other = [e for e in fitted if not e["prior"]["converged"] and e["prior"]["limit"] is None]
    out = []
    if held:
        flips = sum(e["limit_prior_flips"] for e in held)
        names = ", ".join(f"{e['scope']} {e['period']}" for e in held[:4])
        lams = sorted(e["prior"]["limit"]["lam"] for e in held)
        out.append(
            f"The MGPS prior has no finite maximum in {len(held)} of {len(fitted)} scope(s) "
            f"({names}{', ...' if len(held) > 4 else ''}): the data fit best a prior in which "
            f"many pairs are reported at one fixed ratio (λ {lams[0]:.3g}"
            f"{'' if lams[0] == lams[-1] else f' to {lams[-1]:.3g}'}), which no gamma reaches, "
            f"so the prior is held at its bound. "
            + (f"{flips} pair decision(s) (EB05 >= 2, EB95 < 2 or the FDR list) differ under "
               f"that limit: column {LIMIT_FLIP_COLUMN} names them; read those pairs as "
               f"undecided. Every other decision holds under both priors."
               if flips else "No pair's decision (EB05 >= 2, EB95 < 2, the FDR list) differs "
                             "under that limit: the decisions hold under both priors."))
    if other:
        names = ", ".join(f"{e['scope']} {e['period']}" for e in other[:4])
        out.append(f"The MGPS prior's fit stopped before a maximum in {len(other)} of "
                   f"{len(fitted)} scope(s) ({names}{', ...' if len(other) > 4 else ''}); their "
                   f"decisions use the fit as it stopped (each scope's prior.message in the "
                   f"sidecar says why).")
    return out


def _labels(releases: Mapping[str, Any], owner: str) -> list[str]:
    """The canonical period labels of ``releases`` in time order (2020q1 -> 2020Q1)."""
    try:
        labels = {parse_period(p).label for p in releases}
    except (ValidationError, InputFormatError) as exc:
        raise ValidationError(f"The 'releases' parameter of {owner} must be keyed by period "
                              f"labels: {exc}") from None
    return sorted(labels, key=lambda p: parse_period(p).ordinal)


def _plan(labels: Sequence[str], wanted: Sequence[str]) -> list[tuple[str, str, list[str], bool]]:
    """The scopes to screen, in order: (scope, period shown, its periods, dedup)."""
    plan: list[tuple[str, str, list[str], bool]] = []
    for scope in SCOPES:
        if scope not in wanted:
            continue
        if scope in ("dedup", "pooled"):
            plan.append((scope, f"{labels[0]}..{labels[-1]}", list(labels), scope == "dedup"))
        elif scope == "quarter":
            plan += [("quarter", p, [p], False) for p in labels]
        else:
            plan += [("cumulative", p, list(labels[:i + 1]), True) for i, p in enumerate(labels)]
    return plan


def signal_table_columns(*, drug_columns: Sequence[str] | str = ("drugs",),
                         reaction_column: str = "reactions",
                         stratify_by: Sequence[str] | str = (), **_: Any) -> list[str] | None:
    """The columns of the rows :func:`signal_table` reads with these options (the drugs, the
    reactions, ``case_id``, the stratifying columns and FDA's age group with ``age``), or None
    when an option is malformed (:func:`signal_table` then names it). A reader of a store can
    fetch only these (issue 43): no other column changes a number of the table.
    """
    try:
        drugs = _names(drug_columns, "drug_columns")
        variables = _names(stratify_by, "stratify_by")
    except ValidationError:
        return None
    if not isinstance(reaction_column, str):
        return None
    strata = [STRATIFY_COLUMNS.get(v, v) for v in variables]
    age_groups = [AGE_GROUP_COLUMN] if "age" in variables else []
    return list(dict.fromkeys([*drugs, reaction_column, "case_id", *strata, *age_groups]))


def signal_table_steps(releases: Mapping[str, Any] | Sequence[str], *,
                       scopes: Sequence[str] | str = DEFAULT_SCOPES) -> int:
    """The number of ``progress`` calls of :func:`signal_table` for these releases (or just
    their period labels) and ``scopes``, known before any pair is counted: the dedup prior's
    fit, then one per scope listed (each quarter of ``quarter`` and of ``cumulative``).

    Raises:
        ValidationError: a bad scope or period label (named as :func:`signal_table` names it);
            no period.
    """
    labels = _labels(releases if isinstance(releases, Mapping) else dict.fromkeys(releases),
                     "signal_table_steps")
    if not labels:
        raise ValidationError("The 'releases' parameter of signal_table_steps must name at least "
                              "one period.")
    return 1 + len(_plan(labels, _names(scopes, "scopes", SCOPES)))


def signal_table(releases: Mapping[str, pd.DataFrame], *,
                 scopes: Sequence[str] | str = DEFAULT_SCOPES,
                 stratify_by: Sequence[str] | str = (), drug_columns: Sequence[str] | str = ("drugs",),
                 reaction_column: str = "reactions", fdr: float = 0.05, min_count: int = 1,
                 rr0: float = 1.0,
                 hierarchies: Mapping[str, Taxonomy] | None = None,
                 perturbed: Mapping[str, Sequence[str]] | None = None,
                 source: str = "",
                 progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Screen every drug–reaction pair of a series in each scope (module docstring).

    Args:
        releases: Period -> published rows (strings as in ``release.csv``: ``period``,
            ``case_id``, multi-valued cells ``|``-joined); a published series' releases, or the
            original records as published strings (:func:`medanon.published.format.
            original_as_published`).
        scopes: Of :data:`SCOPES` (a list, or a comma-separated string).
        stratify_by: Variables of the stratum-adjusted E (``age``, ``sex``, ``year`` or a
            column name); empty: the crude E.
        drug_columns: Column(s) whose terms are the drugs (their union per report).
        reaction_column: The column of reactions.
        fdr: The level of the FDR decisions.
        min_count: The prior is fitted on the pairs with n >= ``min_count`` (every pair is
            scored).
        rr0: The null hypothesis of the MGPS FDR decisions: ``p_h0_mgps`` is P(λ ≤ ``rr0`` | n)
            (PhViD's and vigipy's RR0; default 1).
        hierarchies: Taxonomies of the categorical QIDs (to read ``age`` and ``sex`` bands).
        perturbed: Period -> the columns its release declares perturbed (refused as strata).
        source: Where the rows came from (recorded in the sidecar).
        progress: Called once per finished step with its name: ``dedup prior`` once the prior
            every other scope starts from is fitted, then each scope as ``SCOPE PERIOD``
            (``quarter 2020Q1``, ``cumulative 2020Q2``...); :func:`signal_table_steps` calls
            in all. It changes no number.

    Returns:
        One row per pair and scope, the columns of the module docstring, each in its dtype of
        :data:`SIGNAL_TABLE_DTYPES` (a text cell without a value NA); ``attrs["signals"]``
        holds the sidecar (options, each scope's reports, prior and fit diagnostics, the
        unknown strata and warnings), JSON-ready.

    Raises:
        ValidationError: a bad scope, FDR level, ``min_count``; no period; a perturbed
            stratifying column.
        SchemaError: a named column is absent.
    """
    if not isinstance(releases, Mapping) or not releases:
        raise ValidationError("The 'releases' parameter of signal_table must map at least one "
                              "period to its rows.")
    # canonical labels (2020q1 -> 2020Q1), so that the table sorts in time order
    labels = _labels(releases, "signal_table")
    keys = {parse_period(p).label: p for p in releases}
    wanted = _names(scopes, "scopes", SCOPES)
    if not wanted:
        raise ValidationError(f"The 'scopes' parameter of signal_table names no scope; it takes "
                              f"{', '.join(SCOPES)}.")
    variables = _names(stratify_by, "stratify_by")
    drugs = _names(drug_columns, "drug_columns")
    if not drugs:
        raise ValidationError("The 'drug_columns' parameter of signal_table names no column.")
    if not isinstance(reaction_column, str) or not reaction_column:
        raise ValidationError(f"The 'reaction_column' parameter of signal_table must be a column "
                              f"name; got {reaction_column!r}.")
    level = _fdr_level(fdr)
    if (isinstance(rr0, bool) or not isinstance(rr0, (int, float)) or not math.isfinite(rr0)
            or rr0 <= 0):
        raise ValidationError(f"The 'rr0' parameter of signal_table must be a number > 0; "
                              f"got {rr0!r}.")
    rr0 = float(rr0)
    min_count = check_int(min_count, name="min_count", owner="signal_table", minimum=1)
    hierarchies = dict(hierarchies or {})

    # every release is read once, in time order, into numbers (term codes, cases, the cells
    # of the strata) and let go: the series is never held whole (issue 43)
    series = _SeriesReports(drugs, reaction_column, variables)
    for label in labels:
        rows = releases[keys[label]]
        if not isinstance(rows, pd.DataFrame):
            raise ValidationError(f"The 'releases' parameter of signal_table maps "
                                  f"{keys[label]!r} to a {type(rows).__name__}, not a DataFrame "
                                  f"of published rows.")
        series.add(label, rows)
        del rows
    _check_strata_columns(series.columns, variables, dict(perturbed or {}), hierarchies)
    series.close(hierarchies)

    def scope_table(periods: list[str], dedup: bool
                    ) -> tuple[int, _Strata | None, pd.DataFrame]:
        inside, columns = series.scope(periods, dedup)
        table, strata = series.table(inside, columns, periods, variables)
        return int(inside.sum()), strata, table

    plan = _plan(labels, wanted)
    # every scope but dedup starts from the dedup prior (fitted from spread starts), as
    # evaluate's screening does: fitted even when the dedup scope is not listed
    anchor_reports, anchor_strata, anchor_table = scope_table(list(labels), True)
    anchor_out, anchor = _screened(anchor_table, fdr=level, min_count=min_count,
                                   starts=GPS_STARTS, warm_start=None, rr0=rr0)
    if progress is not None:
        progress("dedup prior")
    frames: list[pd.DataFrame] = []
    entries: list[dict[str, Any]] = []
    cumulative: list[pd.DataFrame] = []
    warnings: list[str] = []
    for scope, period, periods, dedup in plan:
        if scope == "dedup":
            reports, strata, table = anchor_reports, anchor_strata, anchor_table
            out, prior = anchor_out.copy(), anchor
        else:
            reports, strata, table = scope_table(periods, dedup)
            out, prior = _screened(table, fdr=level, min_count=min_count,
                                   starts=GPS_STARTS if anchor is None else SCOPE_STARTS,
                                   warm_start=anchor, rr0=rr0)
        out.insert(0, "period", period)
        out.insert(0, "scope", scope)
        entry: dict[str, Any] = {"scope": scope, "period": period, "periods": periods,
                                 "reports": reports,
                                 "reports_screened": int(table["n_total"].iloc[0]) if len(table) else 0,
                                 "pairs": int(len(table)),
                                 "prior": None if prior is None else prior.to_dict()}
        if strata is not None:
            entry["strata"] = len(strata.labels)
            entry["unknown"] = strata.unknown
        if prior is not None and prior.limit is not None:
            entry["limit_prior_flips"] = int((out[LIMIT_FLIP_COLUMN] != "").sum())
        entries.append(entry)
        (cumulative if scope == "cumulative" else frames).append(out)
        if progress is not None:
            progress(f"{scope} {period}")
    warnings[:0] = [*_unknown_warnings(entries), *_prior_warnings(entries)]
    if cumulative:
        _first_signals(cumulative)
        frames += cumulative
    columns = [c for c in _OUT if c != "e_crude" or variables]
    extra = [f"first_signal_{r}" for r in SIGNAL_RULES] if cumulative else []
    # the rows in scope order, then by period (as a stable sort of the rows by both): each
    # scope's frame holds one scope and period, so the frames are sorted instead of the rows,
    # and each is typed on its own and let go as it is, so that the table is not copied whole
    # three more times (reindexed, typed, sorted; issue 43)
    order = {s: i for i, s in enumerate(SCOPES)}
    frames.sort(key=lambda f: (order[str(f["scope"].iloc[0])], str(f["period"].iloc[0]))
                if len(f) else (-1, ""))
    del cumulative, anchor_out, anchor_table, out, table
    names = [*columns, *extra]
    parts = []
    while frames:
        frame = frames.pop(0)
        if len(frame):
            parts.append(_typed(frame.reindex(columns=names)))
        del frame
    result = (pd.concat(parts, ignore_index=True) if parts
              else _typed(pd.DataFrame(columns=names)))
    del parts
    result.attrs["signals"] = {
        "source": source,
        "options": {"scopes": list(wanted), "stratify_by": list(variables),
                    "stratify_columns": {v: STRATIFY_COLUMNS.get(v, v) for v in variables},
                    "drug_columns": list(drugs), "reaction_column": reaction_column,
                    "fdr": level, "rr0": rr0, "min_count": min_count,
                    "prior_starts": {"dedup": GPS_STARTS, "other_scopes": SCOPE_STARTS,
                                     "other_scopes_first_start": "the dedup prior"}},
        "rules": {"mgps": "EB05 >= 2", "bcpnn": "IC025 > 0",
                  "prr": "a >= 3 and (PRR = inf or (PRR >= 2 and chi2_yates >= 4))",
                  "mgps_fdr": f"Bayesian FDR of p_h0_mgps = P(lambda <= {rr0:g} | n) <= {level}",
                  "prr_fdr": f"Benjamini-Hochberg q_prr <= {level} and a >= 3"},
        "scopes": entries, "warnings": warnings,
        # for readers of the CSV (which carries no types): read_signal_table, or dtype=
        "dtypes": {c: SIGNAL_TABLE_DTYPES[c] for c in result.columns},
    }
    return result


def _typed(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every column of :data:`SIGNAL_TABLE_DTYPES` in its dtype, an empty text
    cell as NA: the types do not depend on which scopes hold rows."""
    out = table.astype({c: t for c, t in SIGNAL_TABLE_DTYPES.items() if c in table.columns})
    for column in out.columns:
        if SIGNAL_TABLE_DTYPES.get(column) == "str":
            out[column] = out[column].where(out[column] != "")
    return out


def read_signal_table(path: str | Path) -> pd.DataFrame:
    """Read a table :func:`write_signal_table` wrote (``.csv`` or ``.parquet``) with the dtypes
    of :data:`SIGNAL_TABLE_DTYPES`, so that both files give the frame :func:`signal_table`
    returned (its sidecar not included). In a CSV only an empty field is missing: a drug named
    ``NA`` stays a name.

    Raises:
        ValidationError: ``path`` ends neither in .csv nor .parquet.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        header = pd.read_csv(path, nrows=0).columns
        return _typed(pd.read_csv(path, keep_default_na=False, na_values=[""],
                                  dtype={c: SIGNAL_TABLE_DTYPES.get(c, "str") for c in header}))
    if suffix == ".parquet":
        import duckdb

        con = duckdb.connect()
        try:
            frame = con.sql(f"SELECT * FROM read_parquet('{str(path).replace(chr(39), chr(39) * 2)}')"
                            ).df()
        finally:
            con.close()
        return _typed(frame)
    raise ValidationError(f"The 'path' parameter of read_signal_table must end in .csv or "
                          f".parquet; got {str(path)!r}.")


def _write_parquet(table: pd.DataFrame, path: Path) -> None:
    import duckdb  # the store's engine writes Parquet without another dependency

    con = duckdb.connect()
    try:
        con.register("pairs", table)
        con.execute(f"COPY pairs TO '{str(path).replace(chr(39), chr(39) * 2)}' (FORMAT PARQUET)")
    finally:
        con.close()


def _csv_cells(column: pd.Series) -> list[str] | None:
    """The CSV fields of one column exactly as ``DataFrame.to_csv`` (default options) writes
    them, or None for a dtype this does not format (the caller then lets pandas write it)."""
    dtype = column.dtype
    if (isinstance(dtype, np.dtype) and dtype.kind == "f" and dtype.itemsize == 8
            and np.get_printoptions()["legacy"] in (False, sys.maxsize)):
        # pandas writes numpy's str of a float64, the shortest round-trip text, which is
        # Python's repr (0.1, 1e-05, 1e+16, inf, -0.0; not under numpy's legacy printing,
        # left to pandas); a missing value is the empty field
        values = column.to_numpy()
        cells = list(map(repr, values.tolist()))
        for i in np.flatnonzero(np.isnan(values)).tolist():
            cells[i] = ""
        return cells
    if isinstance(dtype, np.dtype) and dtype.kind in "iub":
        return list(map(str, column.to_numpy().tolist()))  # 12, True: never missing
    if isinstance(dtype, pd.StringDtype):
        texts = column.to_numpy(dtype=object, na_value="").tolist()
        if not all(type(t) is str for t in texts):
            return None
        # a field holding a separator, a quote or a line break is quoted by the csv module's
        # own rule (QUOTE_MINIMAL), read off a two-field row so that an empty text stays empty
        quoted: dict[str, str] = {}
        special = re.compile(r'[,"\r\n]')
        for text in set(texts):
            if special.search(text):
                buffer = io.StringIO()
                csv.writer(buffer, lineterminator="\n").writerow([text, ""])
                quoted[text] = buffer.getvalue()[:-2]
        return [quoted.get(t, t) for t in texts] if quoted else texts
    return None


def _csv_formatted(column: pd.Series) -> bool:
    """Whether :func:`_csv_cells` formats every cell of ``column`` (its dtype, and for text
    that every cell is a str or missing), decided once for the whole column."""
    if isinstance(column.dtype, pd.StringDtype):
        texts = column.to_numpy(dtype=object, na_value="")
        return all(type(t) is str for t in texts.tolist())
    return _csv_cells(column.iloc[:0]) is not None


#: rows formatted at a time by :func:`_write_csv`: the cells of every column are Python strs
#: (about 60 bytes each), so the table's cells formatted at once took 2.3 GB of a 1.1-million
#: row, 33-column table (every scope of 24 x 20k, issue 43); 65,536 rows take about 130 MB
_CSV_CHUNK_ROWS = 65_536


def _write_csv(table: pd.DataFrame, path: Path, chunk_rows: int = _CSV_CHUNK_ROWS) -> None:
    """``table.to_csv(path, index=False, lineterminator="\\n")``, the same bytes, written from
    the columns' cells joined row by row (pandas' csv writer took about 0.6 s CPU of a
    23,000-pair table, issue 43), ``chunk_rows`` rows at a time (a cell's text depends on the
    cell alone); any other dtype is left to pandas."""
    if (not table.shape[1] or table.columns.nlevels > 1
            or not all(_csv_formatted(table.iloc[:, i]) for i in range(table.shape[1]))):
        table.to_csv(path, index=False, lineterminator="\n")
        return
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerow(list(table.columns))
        for start in range(0, len(table), chunk_rows):
            chunk = table.iloc[start:start + chunk_rows]
            columns: list[list[str]] = []
            for i in range(chunk.shape[1]):
                cells = _csv_cells(chunk.iloc[:, i])
                assert cells is not None  # _csv_formatted held for the whole column
                columns.append(cells)
            handle.write("\n".join(map(",".join, zip(*columns))))
            handle.write("\n")
            del chunk, columns


def write_signal_table(table: pd.DataFrame, out: str | Path) -> tuple[Path, Path]:
    """Write a :func:`signal_table` to ``out`` (``.csv`` or ``.parquet``) and its sidecar to
    ``out`` + ``.json``; both are written to temporary names first and moved into place.

    Raises:
        ValidationError: ``out`` ends neither in .csv nor .parquet, or the table has no sidecar.
    """
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValidationError(f"The 'out' parameter of write_signal_table must end in .csv or "
                              f".parquet; got {str(path)!r}.")
    if "signals" not in table.attrs:
        raise ValidationError("The 'table' parameter of write_signal_table must come from "
                              "signal_table (it carries the sidecar in attrs['signals']).")
    sidecar = path.with_name(path.name + ".json")
    tmp_table = path.with_name(f".{path.name}.tmp")
    tmp_sidecar = sidecar.with_name(f".{sidecar.name}.tmp")
    try:
        if suffix == ".csv":
            _write_csv(table, tmp_table)
        else:
            _write_parquet(table, tmp_table)
        tmp_sidecar.write_text(json.dumps(table.attrs["signals"], indent=2, allow_nan=False)
                               + "\n", encoding="utf-8")
        tmp_table.replace(path)
        tmp_sidecar.replace(sidecar)
    finally:
        for tmp in (tmp_table, tmp_sidecar):
            tmp.unlink(missing_ok=True)
    return path, sidecar
