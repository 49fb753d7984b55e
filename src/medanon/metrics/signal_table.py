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

import json
import math
import re
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
                                 benjamini_hochberg, pair_counts, posterior_h0, prr_p_value,
                                 screen)
from .screening import DEFAULT_STRATA, SCOPE_STARTS
from .signals import INSIDE, Condition

__all__ = ["AGE_GROUP_COLUMN", "DEFAULT_SCOPES", "SCOPES", "SIGNAL_RULES", "STRATIFY_COLUMNS",
           "UNKNOWN_STRATUM",
           "bayesian_fdr", "benjamini_hochberg", "posterior_h0", "prr_p_value", "signal_table",
           "signal_table_steps", "write_signal_table"]

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
    joined = values[0].astype(str)
    for v in values[1:]:
        joined = np.char.add(np.char.add(joined, " & "), v.astype(str))
    codes, labels = pd.factorize(joined, sort=True)
    return _Strata(codes.astype(np.int64), [str(x) for x in labels], unknown)


def _check_strata_columns(releases: Mapping[str, pd.DataFrame], variables: Sequence[str],
                          perturbed: Mapping[str, Sequence[str]],
                          hierarchies: Mapping[str, Taxonomy]) -> None:
    for variable in variables:
        if variable not in STRATIFY_COLUMNS and variable not in hierarchies:
            # a free-text or numeric column would make a stratum of every distinct value
            raise ValidationError(
                f"The 'stratify_by' parameter of signal_table names {variable!r}; it takes "
                f"{', '.join(STRATIFY_COLUMNS)} or a categorical column with a hierarchy"
                f"{' (' + ', '.join(sorted(hierarchies)) + ')' if hierarchies else ''}.")
        column = STRATIFY_COLUMNS.get(variable, variable)
        lacking = [p for p, rows in releases.items() if column not in rows.columns]
        if lacking:
            raise SchemaError(f"The 'stratify_by' parameter of signal_table names {variable!r} "
                              f"(column {column!r}), which the rows of {', '.join(lacking)} do "
                              f"not have.")
        noisy = [p for p, columns in perturbed.items() if column in columns]
        if noisy:
            raise ValidationError(
                f"The 'stratify_by' parameter of signal_table names {variable!r}, but the "
                f"release(s) of {', '.join(noisy)} publish column {column!r} perturbed (a "
                f"randomized value, details.perturbed_qids): a stratum read from it would be a "
                f"guess. Stratify by columns published as measured.")


# ----------------------------------------------------------------------------- scopes
def _scope_rows(releases: Mapping[str, pd.DataFrame], labels: Sequence[str], *,
                dedup: bool) -> pd.DataFrame:
    frames = [releases[p] for p in labels]
    rows = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    # rows without a case_id (a non-FAERS schema) are each their own case, as in evaluate
    if dedup and "case_id" in rows.columns:
        rows = rows.drop_duplicates(subset="case_id", keep="last")
    return rows


def _pair_table(rows: pd.DataFrame, drug_columns: Sequence[str], reaction_column: str,
                strata: _Strata | None) -> pd.DataFrame:
    """:func:`.disproportionality.pair_counts` of the rows, E adjusted by ``strata``."""
    for column in (*drug_columns, reaction_column):
        if column not in rows.columns:
            what = "reaction_column" if column == reaction_column else "drug_columns"
            raise SchemaError(f"The {what!r} parameter of signal_table names {column!r}, which "
                              f"the rows do not have; their columns: "
                              f"{', '.join(map(repr, rows.columns))}.")
    return pair_counts(rows, drug_columns=list(drug_columns), reaction_column=reaction_column,
                       strata=None if strata is None else strata.codes)


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
                frame[f"first_signal_{rule}"] = pd.Series(dtype=object)
            continue
        period = str(frame["period"].iloc[0])
        keys = list(zip(frame["drug"].str.casefold(), frame["reaction"].str.casefold()))
        for rule, flag in SIGNAL_RULES.items():
            seen = first[rule]
            for key, on in zip(keys, frame[flag].to_numpy(bool)):
                if on and key not in seen:
                    seen[key] = period
            frame[f"first_signal_{rule}"] = [seen.get(k, "") for k in keys]


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
        One row per pair and scope, the columns of the module docstring; ``attrs["signals"]``
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
    for label, rows in releases.items():
        if not isinstance(rows, pd.DataFrame):
            raise ValidationError(f"The 'releases' parameter of signal_table maps {label!r} to a "
                                  f"{type(rows).__name__}, not a DataFrame of published rows.")
    # canonical labels (2020q1 -> 2020Q1), so that the table sorts in time order
    labels = _labels(releases, "signal_table")
    releases = {parse_period(p).label: rows for p, rows in releases.items()}
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
    _check_strata_columns(releases, variables, dict(perturbed or {}), hierarchies)

    plan = _plan(labels, wanted)
    # every scope but dedup starts from the dedup prior (fitted from spread starts), as
    # evaluate's screening does: fitted even when the dedup scope is not listed
    anchor_rows = _scope_rows(releases, labels, dedup=True)
    anchor_strata = _strata(anchor_rows, variables, hierarchies) if variables else None
    anchor_table = _pair_table(anchor_rows, drugs, reaction_column, anchor_strata)
    anchor_out, anchor = _screened(anchor_table, fdr=level, min_count=min_count,
                                   starts=GPS_STARTS, warm_start=None, rr0=rr0)
    if progress is not None:
        progress("dedup prior")
    frames, entries, cumulative = [], [], []
    warnings: list[str] = []
    for scope, period, periods, dedup in plan:
        if scope == "dedup":
            rows, strata, table = anchor_rows, anchor_strata, anchor_table
            out, prior = anchor_out.copy(), anchor
        else:
            rows = _scope_rows(releases, periods, dedup=dedup)
            strata = _strata(rows, variables, hierarchies) if variables else None
            table = _pair_table(rows, drugs, reaction_column, strata)
            out, prior = _screened(table, fdr=level, min_count=min_count,
                                   starts=GPS_STARTS if anchor is None else SCOPE_STARTS,
                                   warm_start=anchor, rr0=rr0)
        out.insert(0, "period", period)
        out.insert(0, "scope", scope)
        entry: dict[str, Any] = {"scope": scope, "period": period, "periods": periods,
                                 "reports": int(len(rows)),
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
    parts = [f.reindex(columns=[*columns, *extra]) for f in frames if len(f)]
    result = (pd.concat(parts, ignore_index=True) if parts
              else pd.DataFrame(columns=[*columns, *extra]))
    order = {s: i for i, s in enumerate(SCOPES)}
    result = result.sort_values(["scope", "period"], key=lambda s: s.map(order) if s.name == "scope"
                                else s, kind="stable").reset_index(drop=True)
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
    }
    return result


def _write_parquet(table: pd.DataFrame, path: Path) -> None:
    import duckdb  # the store's engine writes Parquet without another dependency

    con = duckdb.connect()
    try:
        con.register("pairs", table)
        con.execute(f"COPY pairs TO '{str(path).replace(chr(39), chr(39) * 2)}' (FORMAT PARQUET)")
    finally:
        con.close()


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
            table.to_csv(tmp_table, index=False, lineterminator="\n")
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
