"""Signal screening of a published series against the original: pooled, per quarter, per stratum.

A pharmacovigilance analyst screens every drug–reaction pair of a database for
disproportionality, not a handful of known rules. This module runs that screening
(:mod:`.disproportionality`: MGPS EBGM/EB05/EB95, BCPNN IC/IC025, PRR with the Evans rule) on
the original data and on a published series, over the same *scopes*, and says how much of the
original's signal set the release keeps:

* ``pooled``: every report of the evaluated periods together. A report is one case of one
  quarter (a row of a release): a case followed up in three quarters counts three times, on both
  sides alike, as a per-quarter FAERS extract does. (FDA's own pooled analyses keep only a
  case's latest version; the release publishes ``case_id``, so an analyst can do that too.)
* one scope per quarter (the period's release alone);
* one scope per *stratum*, pooled over the periods: the reports whose published demographic cell
  lies wholly inside the stratum's condition (``age <= 18``, ``sex = F``...), judged by
  :meth:`.signals.Condition.classify` exactly as the rule-based signals are: a generalized cell
  that straddles the stratum (``Adult`` for ``age in [19-64]``, ``*``) is *undecided* and left out
  (counted in ``undecided``), never guessed. Under perturbation (PPMS-DP) a report can land in a
  stratum it does not belong to; the spurious signals of a stratum are how that shows.

Each scope fits its own MGPS prior on each side (as an analyst fitting the stratum's data would)
and reports, per statistic (``mgps``: EB05 ≥ 2; ``bcpnn``: IC025 > 0; ``prr``: Evans):

* ``signals_original``, ``signals_release``, ``common``; ``recall`` = common / original and
  ``precision`` = common / release (None when the denominator is 0);
* ``spearman``: Spearman's rank correlation of the signal score (EBGM, IC, and the
  Haldane–Anscombe corrected PRR, which is finite for every table) over the pairs reported at
  least once on both sides (``pairs_compared``); None with fewer than 3 pairs or a constant side;
* ``spurious``: signals of the release that the original does not have in the same scope, the
  strongest first (at most ``ScreeningOptions.listed``), with both sides' counts and scores;
  ``lost``: the reverse.

With signal rules (the planted signals of the synthetic generator, or known ADRs), ``planted``
screens each rule's pair inside its own condition (the rule's stratum) and inside the opposite
condition: a rule's reaction appearing as a signal in the *opposite* stratum of the release but
not of the original is a manufactured signal. ``summary`` pools the scopes of each kind
(``quarter``, ``stratum``): recall and precision over the (scope, pair) signals.

Every scope is screened once per side and call (a rule whose condition is also a stratum reuses
the stratum's screening).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from .._validation import check_int
from ..errors import ValidationError
from ..hierarchies import Taxonomy
from .disproportionality import GpsPrior, pair_counts, screen
from .signals import INSIDE, Condition, SignalRule

__all__ = ["DEFAULT_STRATA", "STATISTICS", "ScreeningOptions", "opposite_condition",
           "screen_series", "screening_for"]

#: Strata of the default FAERS schema: children, adults, the elderly; each sex.
DEFAULT_STRATA = ("age <= 18", "age in [19-64]", "age >= 65", "sex = F", "sex = M")

#: statistic -> (signal column, score for ranking and Spearman, the columns listed per pair)
STATISTICS = {
    "mgps": ("signal_mgps", "ebgm", ("ebgm", "eb05", "eb95")),
    "bcpnn": ("signal_bcpnn", "ic", ("ic", "ic025")),
    "prr": ("signal_prr", "prr_corrected", ("prr", "prr_corrected", "chi2")),
}
# pairs are matched across sides on folded terms (as pair_counts matches them within a side):
# the display spelling is the first one seen, which may differ between original and release
_KEY = ["drug_key", "reaction_key"]
_OPPOSITE = {">": "<=", "<=": ">", "<": ">=", ">=": "<", "=": "!=", "in": "!=", "!=": "="}


@dataclass(frozen=True)
class ScreeningOptions:
    """What to screen and how.

    Args:
        strata: Conditions defining the strata (``"age <= 18"``...); conditions on columns the
            release does not publish are skipped with a note.
        drug_columns: Multi-valued columns whose terms are the drugs (their union per report):
            ``("drugs",)`` for every role, ``("drugs_primary_suspect",
            "drugs_secondary_suspect")`` for the suspect-only analysis.
        reaction_column: The multi-valued column of reactions.
        min_count: Pairs reported fewer times are not screened (1: every reported pair).
        listed: At most this many spurious and lost signals listed per scope and statistic.
        quarters: Screen each quarter on its own too.
    """

    strata: tuple[str, ...] = DEFAULT_STRATA
    drug_columns: tuple[str, ...] = ("drugs",)
    reaction_column: str = "reactions"
    min_count: int = 1
    listed: int = 20
    quarters: bool = True
    conditions: tuple[Condition, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.strata, str) or not all(isinstance(s, str) for s in self.strata):
            raise ValidationError(f"The 'strata' parameter of ScreeningOptions must be a sequence "
                                  f"of conditions such as 'age <= 18'; got {self.strata!r}.")
        object.__setattr__(self, "strata", tuple(self.strata))
        object.__setattr__(self, "conditions", tuple(Condition.parse(s) for s in self.strata))
        if (isinstance(self.drug_columns, str) or not self.drug_columns
                or not all(isinstance(c, str) and c for c in self.drug_columns)):
            raise ValidationError(f"The 'drug_columns' parameter of ScreeningOptions must be a "
                                  f"non-empty sequence of column names; got {self.drug_columns!r}.")
        object.__setattr__(self, "drug_columns", tuple(self.drug_columns))
        if not isinstance(self.reaction_column, str) or not self.reaction_column:
            raise ValidationError(f"The 'reaction_column' parameter of ScreeningOptions must be a "
                                  f"column name; got {self.reaction_column!r}.")
        check_int(self.min_count, name="min_count", owner="ScreeningOptions", minimum=1)
        check_int(self.listed, name="listed", owner="ScreeningOptions", minimum=0)

    def to_dict(self) -> dict[str, Any]:
        return {"strata": list(self.strata), "drug_columns": list(self.drug_columns),
                "reaction_column": self.reaction_column, "min_count": self.min_count,
                "quarters": self.quarters,
                "pooling": "one report per case and quarter (a release row)",
                "signal_criteria": {"mgps": "EB05 >= 2", "bcpnn": "IC025 > 0",
                                    "prr": "a >= 3 and (PRR = inf or (PRR >= 2 and chi2 >= 4))"}}


def screening_for(published_columns: Sequence[str] | set[str], *, strata: Sequence[str] = (),
                  drug_columns: Sequence[str] = ()) -> ScreeningOptions | None:
    """The screening ``evaluate`` and the report run on a series publishing these columns.

    The defaults (:class:`ScreeningOptions`) apply unless ``strata`` or ``drug_columns`` are
    given. Returns None when the defaults are asked for and the series does not publish the
    default drug and reaction columns (a non-FAERS schema).

    Raises:
        ValidationError: asked-for drug columns, or the reaction column, are not published.
    """
    kwargs: dict[str, Any] = {}
    if strata:
        kwargs["strata"] = tuple(strata)
    if drug_columns:
        kwargs["drug_columns"] = tuple(drug_columns)
    options = ScreeningOptions(**kwargs)
    published = set(published_columns)
    needed = [*options.drug_columns, options.reaction_column]
    absent = [c for c in needed if c not in published]
    if absent and not drug_columns:
        return None
    if absent:
        raise ValidationError(
            f"The 'drug_columns' parameter of screening_for names column(s) the series does not "
            f"publish: {', '.join(map(repr, absent))}; it publishes "
            f"{', '.join(map(repr, sorted(published)))}.")
    return options


def opposite_condition(condition: Condition) -> Condition:
    """The complement of a condition: ``age > 18`` -> ``age <= 18``, ``sex = F`` -> ``sex != F``.

    Undecided cells stay undecided on both sides (a generalized cell is in neither).
    """
    return Condition(condition.attribute, _OPPOSITE[condition.op], condition.value)


@dataclass
class _Side:
    """One side's reports, with the strata classes computed once."""

    rows: pd.DataFrame
    periods: np.ndarray


def _stack(rows: Mapping[str, pd.DataFrame], labels: Sequence[str]) -> _Side:
    frames = [rows[label] for label in labels]
    stacked = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    periods = np.repeat(np.asarray(labels, dtype=object), [len(f) for f in frames])
    return _Side(stacked, periods)


def _rounded(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    x = float(value)
    if np.isnan(x):
        return None
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return round(x, 6)


class _Screened:
    """The screening of one scope on one side: the pair table with every statistic."""

    def __init__(self, rows: pd.DataFrame, options: ScreeningOptions, *, undecided: int = 0):
        self.reports = len(rows)
        self.undecided = undecided
        self.prior: GpsPrior | None = None
        table = pd.DataFrame()
        if len(rows):
            table = pair_counts(rows, drug_columns=options.drug_columns,
                                reaction_column=options.reaction_column)
            table = table[table["n"] >= options.min_count]
        if len(table):
            table, self.prior = screen(table, min_count=options.min_count)
            table = table.assign(drug_key=_fold(table["drug"]),
                                 reaction_key=_fold(table["reaction"]))
        self.table = table.set_index(_KEY) if len(table) else table

    def signals(self, statistic: str) -> pd.Index:
        if not len(self.table):
            return pd.MultiIndex.from_tuples([], names=_KEY)
        return self.table.index[self.table[STATISTICS[statistic][0]].to_numpy(dtype=bool)]

    def pair(self, drug: str, reaction: str) -> dict[str, Any]:
        """One pair's statistics (n = 0 and no signal when it was never reported here)."""
        key = (drug.strip().casefold(), reaction.strip().casefold())
        found = self.table.loc[key] if len(self.table) and key in self.table.index else None
        if found is None:
            return {"n": 0, "signal": {s: False for s in STATISTICS}}
        out = {"n": int(found["n"])}
        for columns in (v[2] for v in STATISTICS.values()):
            out.update({c: _rounded(found[c]) for c in columns})
        out["signal"] = {s: bool(found[v[0]]) for s, v in STATISTICS.items()}
        return out


def _fold(terms: pd.Series) -> pd.Series:
    return terms.astype(str).str.strip().str.casefold()


def _compare(original: _Screened, release: _Screened, listed: int) -> dict[str, Any]:
    stats: dict[str, Any] = {}
    spurious: dict[str, list] = {}
    lost: dict[str, list] = {}
    for name, (_flag, score, columns) in STATISTICS.items():
        so, sr = original.signals(name), release.signals(name)
        common = so.intersection(sr)
        entry: dict[str, Any] = {
            "signals_original": len(so), "signals_release": len(sr), "common": len(common),
            "recall": round(len(common) / len(so), 6) if len(so) else None,
            "precision": round(len(common) / len(sr), 6) if len(sr) else None,
        }
        entry.update(_spearman(original.table, release.table, score))
        stats[name] = entry
        spurious[name] = _listed(sr.difference(so), release, original, score, columns, listed)
        lost[name] = _listed(so.difference(sr), original, release, score, columns, listed,
                             listed_side="original")
    return {"statistics": stats, "spurious": spurious, "lost": lost}


def _spearman(t_o: pd.DataFrame, t_r: pd.DataFrame, score: str) -> dict[str, Any]:
    if not len(t_o) or not len(t_r):
        return {"spearman": None, "pairs_compared": 0}
    both = t_o[[score]].add_suffix("_o").join(t_r[[score]].add_suffix("_r"), how="inner")
    x, y = both[f"{score}_o"].to_numpy(float), both[f"{score}_r"].to_numpy(float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"spearman": None, "pairs_compared": int(len(x))}
    return {"spearman": round(float(spearmanr(x, y).statistic), 6), "pairs_compared": int(len(x))}


def _listed(pairs: pd.Index, shown: _Screened, other: _Screened, score: str,
            columns: tuple[str, ...], limit: int, *, listed_side: str = "release") -> list[dict]:
    if not len(pairs) or limit == 0:
        return []
    mine = shown.table.loc[pairs]
    order = np.argsort(-mine[score].to_numpy(float), kind="stable")[:limit]
    other_side = "original" if listed_side == "release" else "release"
    out = []
    for key, row in mine.iloc[order].iterrows():
        there = other.table.loc[key] if len(other.table) and key in other.table.index else None
        out.append({
            "drug": row["drug"], "reaction": row["reaction"],
            listed_side: {"n": int(row["n"]), **{c: _rounded(row[c]) for c in columns}},
            other_side: ({"n": 0} if there is None
                         else {"n": int(there["n"]), **{c: _rounded(there[c]) for c in columns}}),
        })
    return out


def _scope_entry(kind: str, scope: str, original: _Screened, release: _Screened,
                 listed: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "kind": kind, "scope": scope,
        "reports": {"original": original.reports, "release": release.reports},
        "undecided": {"original": original.undecided, "release": release.undecided},
        "prior": {"original": original.prior.to_dict() if original.prior else None,
                  "release": release.prior.to_dict() if release.prior else None},
    }
    entry.update(_compare(original, release, listed))
    return entry


class _Scopes:
    """Screens scopes of one side, caching them (the original side is shared by releases)."""

    def __init__(self, side: _Side, hierarchies: Mapping[str, Taxonomy],
                 options: ScreeningOptions):
        self.side, self.hierarchies, self.options = side, hierarchies, options
        self._cache: dict[tuple[str, str], _Screened] = {}

    def publishes(self, condition: Condition) -> bool:
        return condition.attribute in self.side.rows.columns

    def get(self, kind: str, scope: str, condition: Condition | None = None) -> _Screened:
        key = (kind, scope)
        if key not in self._cache:
            rows, undecided = self.side.rows, 0
            if kind == "quarter":
                rows = rows.loc[self.side.periods == scope]
            elif condition is not None:
                classes = condition.classify(rows[condition.attribute],
                                             self.hierarchies.get(condition.attribute))
                undecided = int((classes < 0).sum())
                rows = rows.loc[classes == INSIDE]
            self._cache[key] = _Screened(rows.reset_index(drop=True), self.options,
                                         undecided=undecided)
        return self._cache[key]


def _summary(entries: list[dict]) -> dict[str, Any]:
    out = {}
    for name in STATISTICS:
        n_o = sum(e["statistics"][name]["signals_original"] for e in entries)
        n_r = sum(e["statistics"][name]["signals_release"] for e in entries)
        common = sum(e["statistics"][name]["common"] for e in entries)
        out[name] = {"scopes": len(entries), "signals_original": n_o, "signals_release": n_r,
                     "common": common, "spurious": n_r - common,
                     "recall": round(common / n_o, 6) if n_o else None,
                     "precision": round(common / n_r, 6) if n_r else None}
    return out


def _planted(rules: Sequence[SignalRule], original: _Scopes, release: _Scopes
             ) -> tuple[list[dict], dict[str, Any]]:
    entries = []
    kept = {s: [0, 0] for s in STATISTICS}           # [signals in the original, kept]
    manufactured = {s: 0 for s in STATISTICS}
    for rule in rules:
        condition = rule.condition
        sides: dict[str, Any] = {}
        scopes = [("own", condition)]
        if condition is not None:
            scopes.append(("opposite", opposite_condition(condition)))
        for where, cond in scopes:
            if cond is not None and not release.publishes(cond):
                continue
            text = cond.text if cond is not None else "pooled"
            kind = "stratum" if cond is not None else "pooled"
            o = original.get(kind, text, cond).pair(rule.drug, rule.reaction)
            r = release.get(kind, text, cond).pair(rule.drug, rule.reaction)
            sides[where] = {"scope": text, "original": o, "release": r}
            for s in STATISTICS:
                if where == "own" and o["signal"][s]:
                    kept[s][0] += 1
                    kept[s][1] += r["signal"][s]
                if where == "opposite" and r["signal"][s] and not o["signal"][s]:
                    manufactured[s] += 1
        entries.append({"rule": rule.to_dict(), **sides})
    summary = {s: {"signals_original": kept[s][0], "kept": kept[s][1],
                   "recall": round(kept[s][1] / kept[s][0], 6) if kept[s][0] else None,
                   "manufactured_opposite": manufactured[s]} for s in STATISTICS}
    return entries, summary


def screen_series(original_rows: Mapping[str, pd.DataFrame],
                  release_rows: Mapping[str, pd.DataFrame], *, hierarchies: Mapping[str, Taxonomy],
                  periods: Sequence[str], rules: Sequence[SignalRule] = (),
                  options: ScreeningOptions | None = None) -> dict[str, Any]:
    """Screen the original and the release over every scope and compare them.

    Args:
        original_rows: Period -> the original records as published strings
            (:func:`medanon.published.format.original_as_published`).
        release_rows: Period -> the release rows.
        hierarchies: Taxonomies of the categorical QIDs (to judge strata).
        periods: The periods to screen (each must be in both mappings).
        rules: Signal rules screened inside their condition and its opposite (``planted``).
        options: What to screen (:class:`ScreeningOptions`).

    Returns:
        A JSON-ready dict: ``options``, ``scopes`` (pooled, each quarter, each stratum),
        ``summary`` per kind of scope, and with rules ``planted`` and ``planted_summary``.

    Raises:
        ValidationError: a period is missing from one side, or a drug/reaction column is not
            published.
    """
    options = options or ScreeningOptions()
    labels = list(periods)
    for what, rows in (("original_rows", original_rows), ("release_rows", release_rows)):
        absent = [p for p in labels if p not in rows]
        if absent:
            raise ValidationError(f"The {what!r} parameter of screen_series lacks period(s) "
                                  f"{', '.join(absent)}.")
    for column in (*options.drug_columns, options.reaction_column):
        for label in labels:
            if column not in release_rows[label].columns:
                raise ValidationError(
                    f"The release of {label} has no column {column!r} (ScreeningOptions "
                    f"'drug_columns'/'reaction_column'); it publishes "
                    f"{', '.join(map(repr, release_rows[label].columns))}.")
    original = _Scopes(_stack(original_rows, labels), hierarchies, options)
    release = _Scopes(_stack(release_rows, labels), hierarchies, options)
    scopes = [_scope_entry("pooled", "pooled", original.get("pooled", "pooled"),
                           release.get("pooled", "pooled"), options.listed)]
    if options.quarters:
        scopes += [_scope_entry("quarter", p, original.get("quarter", p),
                                release.get("quarter", p), options.listed) for p in labels]
    skipped = []
    for condition in options.conditions:
        if not release.publishes(condition) or not original.publishes(condition):
            skipped.append(condition.text)
            continue
        scopes.append(_scope_entry("stratum", condition.text,
                                   original.get("stratum", condition.text, condition),
                                   release.get("stratum", condition.text, condition),
                                   options.listed))
    out: dict[str, Any] = {"options": options.to_dict(), "scopes": scopes,
                           "summary": {kind: _summary([e for e in scopes if e["kind"] == kind])
                                       for kind in ("pooled", "quarter", "stratum")}}
    if skipped:
        out["strata_skipped"] = skipped
    if rules:
        out["planted"], out["planted_summary"] = _planted(rules, original, release)
    return out
