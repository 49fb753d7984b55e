"""Signal screening of a published series against the original: deduplicated, pooled, per
quarter, per stratum.

A pharmacovigilance analyst screens every drug–reaction pair of a database for
disproportionality, not a handful of known rules. This module runs that screening
(:mod:`.disproportionality`: MGPS EBGM/EB05/EB95, BCPNN IC/IC025, PRR with the Evans rule) on
the original data and on a published series, over the same *scopes*, and says how much of the
original's signal set the release keeps:

* ``dedup`` (the headline scope, issue 32): every case once, by its latest published version
  (the row of the latest period it appears in), as FDA's pooled analyses of FAERS keep a case's
  latest version; the release publishes ``case_id``, so an analyst can do the same on it.
* with ``ScreeningOptions.pooled``, ``pooled``: every report of the evaluated periods
  together. A report is one case of one quarter (a row of a release): a case followed up in
  three quarters counts three times, on both sides alike, as stacking the per-quarter FAERS
  extracts does (the default before issue 32).
* one scope per quarter (the period's release alone);
* with ``ScreeningOptions.cumulative``, one scope per quarter q, ``cumulative``: the database
  as it stood at q (the ``dedup`` scope of the periods up to q); ``first_signal`` then compares
  when each pair first signals on each side (same quarter, later with the mean delay, earlier,
  never, release only): how much a release delays what a longitudinal analysis would see
  (vigipy's ``LongitudinalModel`` question).
* one scope per *stratum*, over the ``dedup`` reports: those whose published demographic cell
  lies wholly inside the stratum's condition (``age <= 18``, ``sex = F``...), judged by
  :meth:`.signals.Condition.classify` exactly as the rule-based signals are: a generalized cell
  that straddles the stratum (``Adult`` for ``age in [19-64]``, ``*``) is *undecided* and left out
  (counted in ``undecided``), never guessed. Under perturbation (PPMS-DP) a report can land in a
  stratum it does not belong to; the spurious signals of a stratum are how that shows.

Each scope fits its own MGPS prior on each side (as an analyst fitting the stratum's data would):
the dedup scope from 8 starts, every other scope (the pooled one too) from its side's dedup
prior and DuMouchel's start (``ScreeningOptions.scope_starts``; a quarter of the work, issue 30). The
pair tables are those of :mod:`.signal_table` (``medanon signals``), computed by the same
:func:`.disproportionality.screen`. It reports, per statistic (``mgps``: EB05 ≥ 2; ``bcpnn``:
IC025 > 0; ``prr``: Evans; ``mgps_fdr`` and ``prr_fdr``: the false-discovery-rate decisions of
:func:`.disproportionality.screen`):

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
not of the original is a manufactured signal (a rule without a condition is screened in the
``dedup`` scope). ``summary`` pools the scopes of each kind (``dedup``, ``quarter``,
``stratum``, and ``pooled`` and ``cumulative`` when screened): recall and precision over the
(scope, pair) signals.

Every scope is screened once per side and call (a rule whose condition is also a stratum reuses
the stratum's screening).
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_int
from ..errors import MedanonError, SchemaError, ValidationError
from ..hierarchies import Taxonomy
from ..published.cells import SUPPRESSED, cell_strings
from ..published.format import CellTerms
from .disproportionality import (FDR_LEVEL, GPS_STARTS, LIMIT_FLIP_COLUMN, MGPS_LOWER_QUANTILE,
                                 MGPS_UPPER_QUANTILE, GpsPrior, _eb_quantiles, _pair_matrix,
                                 _pair_table, count_pairs, screened_columns)
from .signals import INSIDE, Condition, KnownCounts, SignalRule

__all__ = ["DEFAULT_STRATA", "STATISTICS", "ScreeningOptions", "SeriesScreening",
           "opposite_condition", "screen_series", "screening_for", "screening_steps"]

#: starts of the dedup prior's fit (:func:`.disproportionality.fit_gps_prior`'s default), and
#: of every other scope's, warm-started from its side's dedup prior (issue 30: the
#: fits were 40% of ``evaluate``; from a prior of the whole series a scope's fit needs a fraction
#: of the iterations)
POOLED_STARTS = GPS_STARTS
SCOPE_STARTS = 2
#: Strata of the default FAERS schema: children, adults, the elderly; each sex.
DEFAULT_STRATA = ("age <= 18", "age in [19-64]", "age >= 65", "sex = F", "sex = M")

#: statistic -> (signal column, score for ranking and Spearman, the columns listed per pair)
STATISTICS = {
    "mgps": ("signal_mgps", "ebgm", ("ebgm", "eb05", "eb95")),
    "bcpnn": ("signal_bcpnn", "ic", ("ic", "ic025")),
    "prr": ("signal_prr", "prr_corrected", ("prr", "prr_corrected", "chi2")),
    "mgps_fdr": ("signal_mgps_fdr", "ebgm", ("ebgm", "p_h0_mgps", "fdr_mgps")),
    "prr_fdr": ("signal_prr_fdr", "prr_corrected", ("prr", "p_prr", "q_prr")),
}
#: the kinds of scope, in the order they are reported
KINDS = ("dedup", "pooled", "quarter", "stratum", "cumulative")
#: the kinds every summary has (the pooled and cumulative ones only when asked for)
_ALWAYS = ("dedup", "quarter", "stratum")
#: the kind fitted from spread starts: every other scope starts from its prior (the pooled
#: scope too: it holds the same cases, some of them more than once)
_ANCHOR = "dedup"
# pairs are matched across sides on folded terms (as pair_counts matches them within a side):
# the display spelling is the first one seen, which may differ between original and release
_KEY = ["drug_key", "reaction_key"]
_SEP = "|"
#: The dedup scope's pair counts are kept (to count large strata from) when the vocabularies'
#: drug × reaction table has at most this many cells (8 bytes a cell).
_CACHED_CELLS = 1 << 20
#: The strata of a side are counted from the pair counts of their patterns (:class:`_Patterns`)
#: when those hold at most this many cells (patterns × drugs × reactions, 8 bytes a cell).
_PATTERN_CELLS = 1 << 21
#: Reports whose entries the patterns' pass takes at a time.
_PATTERN_REPORTS_AT_ONCE = 1 << 16
#: At most this many pairs, a score's Spearman correlation with itself is 1.0 once rounded to
#: 6 digits without computing it (the rounding error of the computed one grows with the pairs:
#: n · 2⁻⁵³ is far below 5e-7 here).
_ALIKE_PAIRS = 1 << 24
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
        pooled: Screen every row of every period together too (a case once per quarter it
            appears in), beside the ``dedup`` scope.
        cumulative: Screen the database as it stood at each quarter too (the dedup scope of
            the periods up to it) and compare when each pair first signals on each side
            (``first_signal``).
        scope_starts: Optimizer starts of the prior of every scope but the dedup one: its
            side's dedup prior first, then DuMouchel's start and spread ones
            (:func:`.disproportionality.fit_gps_prior`, ``warm_start``). None: the dedup
            fit's 8 spread starts, with no warm start.
    """

    strata: tuple[str, ...] = DEFAULT_STRATA
    drug_columns: tuple[str, ...] = ("drugs",)
    reaction_column: str = "reactions"
    min_count: int = 1
    listed: int = 20
    quarters: bool = True
    pooled: bool = False
    cumulative: bool = False
    scope_starts: int | None = SCOPE_STARTS
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
        if self.scope_starts is not None:
            check_int(self.scope_starts, name="scope_starts", owner="ScreeningOptions", minimum=1)

    def to_dict(self) -> dict[str, Any]:
        return {"strata": list(self.strata), "drug_columns": list(self.drug_columns),
                "reaction_column": self.reaction_column, "min_count": self.min_count,
                "quarters": self.quarters, "pooled": self.pooled,
                "cumulative": self.cumulative,
                "pooling": {"dedup": "the latest period's row of each case (the default)",
                            "pooled": "one report per case and quarter (a release row)",
                            "stratum": "the dedup reports whose cell is inside the stratum"},
                "prior_starts": {"dedup": POOLED_STARTS,
                                 "other_scopes": self.scope_starts or POOLED_STARTS,
                                 "other_scopes_first_start": ("the side's dedup prior"
                                                              if self.scope_starts else None)},
                "signal_criteria": {"mgps": "EB05 >= 2", "bcpnn": "IC025 > 0",
                                    "prr": "a >= 3 and (PRR = inf or (PRR >= 2 and chi2 >= 4))",
                                    "mgps_fdr": f"Bayesian FDR of P(lambda <= 1 | n) <= {FDR_LEVEL}",
                                    "prr_fdr": f"Benjamini-Hochberg q of log PRR > 0 <= {FDR_LEVEL} "
                                               f"and a >= 3"}}


def screening_for(published_columns: Sequence[str] | set[str], *, strata: Sequence[str] = (),
                  drug_columns: Sequence[str] = (), cumulative: bool = False,
                  pooled: bool = False) -> ScreeningOptions | None:
    """The screening ``evaluate`` and the report run on a series publishing these columns.

    The defaults (:class:`ScreeningOptions`) apply unless ``strata``, ``drug_columns``,
    ``cumulative`` or ``pooled`` are given. Returns None when the defaults are asked for and
    the series does not publish the default drug and reaction columns (a non-FAERS schema).

    Raises:
        ValidationError: asked-for drug columns, or the reaction column, are not published.
    """
    kwargs: dict[str, Any] = {"cumulative": bool(cumulative), "pooled": bool(pooled)}
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


class _Terms:
    """The terms of one multi-valued field (the drugs, or the reactions) over the whole series,
    original and release alike: each distinct spelling is read once and numbered, and so is each
    term (its casefolded spelling, as :func:`.disproportionality.pair_counts` matches terms).

    Every scope is a subset of the reports of the series: reading the ``|``-joined cells once,
    into integer codes, replaces splitting them again for each of the scopes.
    """

    def __init__(self, *, upper: bool):
        self.upper = upper
        self._spellings: dict[str, int] = {}
        self._folded: dict[str, int] = {}
        self._term_of: list[int] = []           # spelling -> term, in order of first appearance
        self.code_of = np.zeros(0, dtype=np.int64)
        self.shown = np.zeros(0, dtype=object)
        self.terms = 0

    def _spelling(self, text: str) -> int:
        text = text.strip()
        if text in ("", SUPPRESSED):              # an empty cell, "a||b", or a suppressed cell
            return -1
        found = self._spellings.get(text)
        if found is None:
            found = self._spellings[text] = len(self._spellings)
            self._term_of.append(self._folded.setdefault(text.casefold(), len(self._folded)))
        return found

    def read(self, cells: np.ndarray, *, repeated: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(reports, spellings)``: one entry per report and term listed in its cell, in report
        order, then the order of the cell; a term listed twice in a report (however spelled) is
        kept once, with its first spelling there.

        ``repeated=False`` splits every cell as it comes instead of each distinct one once: the
        same entries and spellings (a cell seen again brings no term it did not bring the first
        time), faster for cells that seldom repeat (a release's drug and reaction sets)."""
        if not repeated:
            return self._split(np.asarray(cells, dtype=object))
        return self.read_cells(cells)[:2]

    def read_cells(self, cells: np.ndarray, known: CellTerms | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`read`'s ``(reports, spellings)`` and each report's cell as a code (equal codes:
        equal cells, hence equal entries).

        ``known``: the terms the first ``len(known.which)`` cells were joined from
        (:class:`~medanon.published.format.CellTerms`), taken instead of splitting those cells
        again: the same pieces, in the same order."""
        # each distinct cell is split once (reports repeat cells: both sides of a period, the
        # same few drugs): spellings still come in their order of first appearance in the rows
        cell_of, distinct = pd.factorize(cells)
        distinct = np.asarray(distinct, dtype=object)
        if known is None:
            owner, flat = self._pieces(distinct)
        else:
            # the distinct cells are numbered in order of first appearance: those met in the
            # known rows come first, each the joined terms of its first row's cell object
            head = cell_of[:len(known.which)]
            covered = int(head.max(initial=-1)) + 1
            first_row = np.unique(head, return_index=True)[1]
            objects = known.which[first_row]
            lengths = known.lengths[objects]
            starts = (np.cumsum(known.lengths) - known.lengths)[objects]
            at = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
            at += np.arange(at.size, dtype=np.int64)
            rest_owner, rest_flat = self._pieces(distinct[covered:])
            owner = np.concatenate([np.repeat(np.arange(covered, dtype=np.int64), lengths),
                                    rest_owner + covered])
            flat = np.concatenate([known.terms[at], rest_flat])
        owner, spellings = self._entries(owner, flat)
        per_cell = np.bincount(owner, minlength=len(distinct))
        start = np.cumsum(per_cell) - per_cell
        reps = per_cell[cell_of]
        reports = np.repeat(np.arange(len(cells), dtype=np.int64), reps)
        at = np.repeat(start[cell_of] - (np.cumsum(reps) - reps), reps)
        at += np.arange(at.size, dtype=np.int64)
        return reports, spellings[at], cell_of

    def _split(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`read` of cells taken one by one: ``(cell, spelling)`` entries."""
        return self._entries(*self._pieces(cells))

    @staticmethod
    def _pieces(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(cell, piece)``: the cells split at the separator, one after another."""
        # one join and one split of all the cells, each cell's length read from its count of
        # separators: a split per cell made a list per cell (issue 43)
        texts = cells.tolist()
        lengths = np.fromiter(map(str.count, texts, itertools.repeat(_SEP)), dtype=np.int64,
                              count=len(texts)) + 1
        owner = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        flat = np.fromiter(_SEP.join(texts).split(_SEP) if texts else [], dtype=object,
                           count=int(lengths.sum()))
        return owner, flat

    def _entries(self, owner: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``(cell, spelling)`` entries of the pieces ``flat`` of the cells ``owner``."""
        codes, texts = pd.factorize(flat)
        ids = np.fromiter((self._spelling(str(t)) for t in texts), dtype=np.int64,
                          count=len(texts))
        spellings = ids[codes] if codes.size else np.zeros(0, dtype=np.int64)
        listed = spellings >= 0
        owner, spellings = owner[listed], spellings[listed]
        if not spellings.size:
            return owner, spellings
        terms = np.asarray(self._term_of, dtype=np.int64)[spellings]
        # the first entry of each (cell, term): a stable sort keeps the cell order
        pair = owner * len(self._folded) + terms
        order = np.argsort(pair, kind="stable")
        lead = np.ones(pair.size, dtype=bool)
        lead[1:] = pair[order[1:]] != pair[order[:-1]]
        first = np.zeros(pair.size, dtype=bool)
        first[order[lead]] = True
        return owner[first], spellings[first]

    @property
    def spellings(self) -> list[str]:
        """The distinct spellings read, in order of first appearance (their ids)."""
        return list(self._spellings)

    def take(self, spellings: np.ndarray, vocabulary: Sequence[str]) -> np.ndarray:
        """Spelling ids of a read made with another vocabulary (``vocabulary[id]``) in this one:
        new spellings are numbered in their order there, as reading the cells here would."""
        ids = np.fromiter((self._spelling(t) for t in vocabulary), dtype=np.int64,
                          count=len(vocabulary))
        return ids[spellings] if spellings.size else spellings

    def close(self) -> None:
        """Code the terms in their sorted order (as :func:`.disproportionality.pair_counts`
        does, so that a scope's table comes out sorted alike) once every report is read."""
        folded = np.array(list(self._folded), dtype=object)
        rank = pd.factorize(folded, sort=True)[0].astype(np.int64) if folded.size else folded
        self.code_of = (rank[np.asarray(self._term_of, dtype=np.int64)].astype(np.int32)
                        if self._term_of else np.zeros(0, dtype=np.int32))
        self.shown = np.array([t.upper() if self.upper else t for t in self._spellings],
                              dtype=object)
        self.terms = len(folded)

    def names(self, spellings: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Term code -> the spelling shown for it in a scope: the one first seen in the scope's
        entries (which are in report order, then cell order)."""
        out = np.full(max(self.terms, 1), "", dtype=object)
        if not codes.size:
            return out
        small: type[np.signedinteger] = np.int32 if codes.size < 2**31 else np.int64
        first = np.full(out.size, codes.size, dtype=small)
        # a vocabulary of a few hundred terms is all met in the first entries of a scope of
        # millions: the first entries are searched, more of them while a term is still unmet
        wanted = np.count_nonzero(np.bincount(codes, minlength=out.size))
        end = 0
        while end < codes.size:
            start, end = end, min(codes.size, max(4 * end, 1 << 14))
            np.minimum.at(first, codes[start:end], np.arange(start, end, dtype=small))
            if np.count_nonzero(first < codes.size) == wanted:
                break
        present = np.flatnonzero(first < codes.size)
        out[present] = self.shown[spellings[first[present]]]
        return out


@dataclass
class _Read:
    """One period of one side as :meth:`SeriesScreening.read` reads it: the (report, spelling)
    entries of each field in the read's own vocabulary, and the classes of the reports."""

    count: int
    columns: tuple[str, ...]
    entries: dict[str, tuple[np.ndarray, np.ndarray, list[str]]]
    classes: dict[str, Any]
    cases: np.ndarray | None = None   # each report's case_id (None: the rows have none)
    # the release's reports list the original's drug and reaction cells, report for report up
    # to their order (what makes the period's tables alike: SeriesScreening.alike)
    alike: bool = False


class _Failed:
    """A condition that could not be judged on a release's cells: raised when it is used."""

    def __init__(self, error: Exception):
        self.error = error


class _Reports:
    """One side's reports (the original, or the release), read release by release: the drug
    and reaction entries as codes, the period of each report and its class in each condition.
    Nothing else of a release is kept."""

    def __init__(self, options: ScreeningOptions, drugs: _Terms, reactions: _Terms,
                 conditions: Sequence[Condition], hierarchies: Mapping[str, Taxonomy]):
        self.options, self.drugs, self.reactions = options, drugs, reactions
        self.conditions = {c.text: c for c in conditions}
        self.hierarchies = hierarchies
        self.count = 0
        self.columns: dict[str, None] = {}  # in the order the stacked releases had them
        self.bounds: dict[str, tuple[int, int]] = {}
        self._entries: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"drug": [], "reaction": []}
        self._classes: dict[str, list[Any]] = {text: [] for text in self.conditions}
        self._cases: list[np.ndarray] = []
        self.drug_entries = self.reaction_entries = (np.zeros(0, dtype=np.int64),) * 2
        self.latest: np.ndarray | None = None   # the dedup scope's reports (set by close)
        self._next = np.zeros(0, dtype=np.int64)  # each report's next of its case (close)
        self._latest_listed: np.ndarray | None = None  # the dedup scope's pair counts (pairs)
        self._patterns: _Patterns | None = None   # dedup and strata counts (latest_pairs)
        self._patterns_made = False

    def classes_of(self, rows: pd.DataFrame) -> dict[str, Any]:
        """Each report's class in each condition (part of a :class:`_Read`)."""
        classes: dict[str, Any] = {}
        # each column's distinct cells once for all its conditions (age carries most of
        # them): classify judges cell by cell, so judging the distinct cells and spreading
        # the classes back gives its array, and its error, word for word (issue 43)
        distinct: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for text, condition in self.conditions.items():
            if condition.attribute not in rows.columns:
                classes[text] = len(rows)   # judged as empty cells if ever used
                continue
            if condition.attribute not in distinct:
                codes, uniques = pd.factorize(cell_strings(rows[condition.attribute]))
                distinct[condition.attribute] = (codes, np.asarray(uniques, dtype=object))
            codes, uniques = distinct[condition.attribute]
            try:
                classes[text] = condition.classify(
                    uniques, self.hierarchies.get(condition.attribute))[codes]
            except MedanonError as error:  # raised if the scope is screened, not before
                classes[text] = _Failed(error)
        return classes

    def take(self, label: str, read: _Read) -> None:
        start = self.count
        self.columns.update(dict.fromkeys(read.columns))
        for name, terms in (("drug", self.drugs), ("reaction", self.reactions)):
            reports, spellings, vocabulary = read.entries[name]
            spellings = terms.take(spellings, vocabulary)
            # kept for the whole series: 4 bytes a number while they fit
            small = np.int32 if self.count + read.count < 2**31 else np.int64
            self._entries[name].append(((reports + start).astype(small),
                                        spellings.astype(np.int32)))
        for text in self.conditions:
            self._classes[text].append(read.classes[text])
        # rows without a case_id (a non-FAERS schema) are each their own case
        self._cases.append(read.cases if read.cases is not None else np.char.add(
            "\0row", np.arange(start, start + read.count).astype(str)).astype(object))
        self.count += read.count
        self.bounds[label] = (start, self.count)

    def close(self) -> None:
        for name in ("drug", "reaction"):
            chunks = self._entries[name]
            joined = tuple(np.concatenate([c[i] for c in chunks]) if chunks
                           else np.zeros(0, dtype=np.int64) for i in (0, 1))
            setattr(self, f"{name}_entries", joined)
            self._entries[name] = []
        self.latest, self._next = _latest_of_case(self._cases, self.count)
        self._cases = []

    def publishes(self, condition: Condition) -> bool:
        return condition.attribute in self.columns

    def closed_latest(self) -> np.ndarray:
        """:attr:`latest`, once :meth:`close` set it (a scope is screened only then)."""
        assert self.latest is not None, "the reports are screened once closed"
        return self.latest

    def latest_up_to(self, label: str) -> np.ndarray:
        """The reports that are their case's latest among the periods up to ``label``."""
        end = self.bounds[label][1]
        inside = np.zeros(self.count, dtype=bool)
        inside[:end] = self._next[:end] >= end
        return inside

    def classes(self, condition: Condition) -> np.ndarray:
        chunks = []
        for chunk in self._classes[condition.text]:
            if isinstance(chunk, _Failed):
                raise chunk.error
            if isinstance(chunk, int):  # a release without the column: its cells are empty
                chunk = condition.classify(np.full(chunk, "", dtype=object),
                                           self.hierarchies.get(condition.attribute))
            chunks.append(chunk)
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int8)

    def pairs(self, inside: slice | np.ndarray, *, within_latest: bool = False) -> pd.DataFrame:
        """The pair table of the reports of a scope (a range of reports or a mask over them;
        ``within_latest``: a mask of some of the :attr:`latest` reports, the dedup scope's).

        Raises:
            SchemaError: no release of this side has a drug or the reaction column.
        """
        self._check_columns()
        # a mask of latest reports is counted from the dedup scope's pair counts when that
        # takes fewer reports (_counted_as)
        how = self._counted_as(inside) if within_latest and not isinstance(inside, slice) else ""
        parts, rest = [], []
        # a range of reports is counted as reports 0 .. its length - 1: the arrays count_pairs
        # makes per report are then the range's, not the whole series' (the same table)
        count = inside.stop - inside.start if isinstance(inside, slice) else self.count
        for terms, (reports, spellings) in ((self.drugs, self.drug_entries),
                                            (self.reactions, self.reaction_entries)):
            if isinstance(inside, slice):
                # bounds of the entries' own type: other ones would make searchsorted convert
                # the whole array first
                lo, hi = np.searchsorted(reports, np.array([inside.start, inside.stop],
                                                           dtype=reports.dtype))
                reports = reports[lo:hi] - reports.dtype.type(inside.start)
                spellings = spellings[lo:hi]
            else:
                keep = inside[reports]
                if how == "rest":   # the entries of the latest reports outside the mask
                    other = self.closed_latest()[reports] & ~keep
                    rest += [reports[other], terms.code_of[spellings[other]]]
                reports, spellings = reports[keep], spellings[keep]
            codes = terms.code_of[spellings]
            parts.append((reports, codes, terms.names(spellings, codes)))
        (d_rows, d_codes, drugs), (r_rows, r_codes, reactions) = parts
        listed = None
        if how == "latest" and self._latest_listed is None:
            self._latest_listed = self._matrix(d_rows, d_codes, r_rows, r_codes)
        if how == "latest":
            listed = self._latest_listed
        elif how == "rest":
            if self._latest_listed is None:   # the dedup scope is screened first: seldom met
                self._latest_listed = self._matrix(*self._codes_of(self.closed_latest()))
            listed = self._latest_listed - self._matrix(*rest)
        return count_pairs(count, d_rows, d_codes, drugs, r_rows, r_codes, reactions,
                           listed=listed)

    def _check_columns(self) -> None:
        wanted = [(c, "drug_columns") for c in self.options.drug_columns]
        for column, what in [*wanted, (self.options.reaction_column, "reaction_column")]:
            if column not in self.columns:
                shown = ", ".join(repr(c) for c in list(self.columns)[:20])
                raise SchemaError(f"The rows have no column {column!r} ({what} of pair_counts); "
                                  f"their columns: {shown}.")

    def latest_pairs(self, condition: Condition | None = None) -> pd.DataFrame | None:
        """The pair table of the dedup scope (the :attr:`latest` reports), or of a stratum
        (those inside ``condition``), from the counts of the side's patterns
        (:class:`_Patterns`); None when the patterns are not counted (too many cells, or
        conditions), and :meth:`pairs` counts it.

        Raises:
            SchemaError: as :meth:`pairs`.
        """
        self._check_columns()
        if not self._patterns_made:
            self._patterns_made = True
            self._patterns = _Patterns.of(self)
        if self._patterns is None or (condition is not None
                                      and condition.text not in self._patterns.bits):
            return None
        return self._patterns.table(None if condition is None else condition.text)

    def _counted_as(self, inside: np.ndarray) -> str:
        """How the pairs of a mask of latest reports are counted: ``latest`` (the mask is the
        dedup scope: its counts are kept for the others), ``rest`` (it holds more than half of
        them: the dedup scope's counts less those of the other latest reports, which are fewer;
        integer counts, exactly its own; issue 43) or ``""`` (counted as any scope's, as too
        when the vocabularies are too large to keep a dense table of them)."""
        if max(self.drugs.terms, 1) * max(self.reactions.terms, 1) > _CACHED_CELLS:
            return ""
        reports = int(np.count_nonzero(inside))
        total = int(np.count_nonzero(self.closed_latest()))
        if reports == total:
            return "latest"
        return "rest" if 2 * reports > total else ""

    def _codes_of(self, inside: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(drug rows, drug codes, reaction rows, reaction codes)`` of the reports of a mask."""
        out: list[np.ndarray] = []
        for terms, (reports, spellings) in ((self.drugs, self.drug_entries),
                                            (self.reactions, self.reaction_entries)):
            keep = inside[reports]
            out += [reports[keep], terms.code_of[spellings[keep]]]
        return tuple(out)

    def _matrix(self, d_rows: np.ndarray, d_codes: np.ndarray, r_rows: np.ndarray,
                r_codes: np.ndarray) -> np.ndarray:
        """How many of these entries' reports list each pair
        (:func:`.disproportionality._pair_matrix`, within :data:`_CACHED_CELLS`)."""
        out = _pair_matrix(d_rows, d_codes, r_rows, r_codes, self.count,
                           max(self.drugs.terms, 1), max(self.reactions.terms, 1))
        assert out is not None, "a table within _CACHED_CELLS is dense"
        return out


class _Patterns:
    """The pair counts of one side's :attr:`~_Reports.latest` reports grouped by *pattern*:
    the set of strata a report is in (one bit per condition; issue 43).

    The dedup scope is every latest report and every stratum a mask of them, and counts add
    up over reports: a scope's pair counts, its drug and reaction margins and its number of
    screened reports (those listing a drug and a reaction) are the sums of its patterns'
    counts, and the spelling it shows of a term (the term's first entry in its reports) is the
    first among its patterns' first entries. Its table is then
    :func:`.disproportionality.count_pairs`'s of its reports, integer sums and the same
    spellings, from one pass over the entries for all of them instead of one pass per scope;
    the pass goes a range of reports at a time (:data:`_PATTERN_REPORTS_AT_ONCE`), so that
    what it holds besides the counts is a range's worth.
    """

    def __init__(self, bits: dict[str, int], patterns: np.ndarray, terms: dict[str, _Terms],
                 margins: dict[str, np.ndarray], firsts: dict[str, np.ndarray],
                 spellings: dict[str, np.ndarray], screened: np.ndarray, listed: np.ndarray):
        self.bits, self.patterns, self.terms = bits, patterns, terms
        self.margins, self.firsts, self.spellings = margins, firsts, spellings
        self.screened, self.listed = screened, listed

    @classmethod
    def of(cls, side: _Reports) -> _Patterns | None:
        """The patterns of the conditions whose classes can be judged (a condition that cannot
        raises its error when its stratum is screened, by :meth:`_Reports.classes`); None
        when the counts would exceed :data:`_PATTERN_CELLS` or the conditions 62 bits."""
        latest = side.closed_latest()
        inside: dict[str, np.ndarray] = {}
        for text, condition in side.conditions.items():
            try:
                inside[text] = side.classes(condition) == INSIDE
            except MedanonError:
                continue
        if len(inside) > 62:
            return None
        key = np.zeros(side.count, dtype=np.int64)
        for bit, mask in enumerate(inside.values()):
            key |= mask.astype(np.int64) << bit
        codes, patterns = pd.factorize(key[latest])
        del key
        count = len(patterns)
        terms = {"drug": side.drugs, "reaction": side.reactions}
        entries = {"drug": side.drug_entries, "reaction": side.reaction_entries}
        sizes = {name: max(t.terms, 1) for name, t in terms.items()}
        if count * sizes["drug"] * sizes["reaction"] > _PATTERN_CELLS:
            return None
        pattern_of = np.full(side.count, -1, dtype=np.int32)
        pattern_of[latest] = codes
        listing = {name: np.zeros(side.count, dtype=bool) for name in terms}
        for name, (reports, _) in entries.items():
            listing[name][reports] = True
        eligible = listing["drug"] & listing["reaction"]
        del listing
        margins = {name: np.zeros(count * size, dtype=np.int64) for name, size in sizes.items()}
        # each (pattern, term)'s first entry: its position among the side's entries
        firsts = {name: np.full(count * size, entries[name][1].size, dtype=np.int64)
                  for name, size in sizes.items()}
        listed = np.zeros(count * sizes["drug"] * sizes["reaction"], dtype=np.int64)
        edges = np.append(np.arange(0, side.count, _PATTERN_REPORTS_AT_ONCE), side.count)
        # each field's entries of each range of reports (the entries are in report order)
        cuts = {name: np.searchsorted(reports, edges.astype(reports.dtype))
                for name, (reports, _) in entries.items()}
        for at in range(edges.size - 1):
            lo, hi = int(edges[at]), int(edges[at + 1])
            scoped = {}
            for name, (reports, spelled) in entries.items():
                start, stop = int(cuts[name][at]), int(cuts[name][at + 1])
                rows = reports[start:stop]
                pattern = pattern_of[rows]
                where = np.flatnonzero(pattern >= 0)  # the entries of latest reports
                rows = rows[where]
                codes_of = terms[name].code_of[spelled[start:stop][where]]
                grouped = pattern[where].astype(np.int64) * sizes[name] + codes_of
                np.minimum.at(firsts[name], grouped, where + start)
                margins[name] += np.bincount(grouped[eligible[rows]],
                                             minlength=margins[name].size)
                # the range's reports numbered from 0 (count_pairs' arrays are the range's)
                scoped[name] = (rows - rows.dtype.type(lo),
                                grouped if name == "drug" else codes_of)
            # (pattern, drug) as one drug code: each report has one pattern, so its pairs'
            # codes are pattern · drugs · reactions + drug · reactions + reaction
            (d_rows, d_grouped), (r_rows, r_codes) = scoped["drug"], scoped["reaction"]
            found = _pair_matrix(d_rows, d_grouped, r_rows, r_codes, hi - lo,
                                 count * sizes["drug"], sizes["reaction"])
            assert found is not None, "a table within _PATTERN_CELLS is dense"
            listed += found
        screened = np.bincount(pattern_of[eligible & latest], minlength=count)
        return cls({text: bit for bit, text in enumerate(inside)}, np.asarray(patterns), terms,
                   {name: m.reshape(count, -1) for name, m in margins.items()},
                   {name: f.reshape(count, -1) for name, f in firsts.items()},
                   {name: spelled for name, (_, spelled) in entries.items()}, screened,
                   listed.reshape(count, -1))

    def table(self, text: str | None) -> pd.DataFrame:
        """The :func:`.disproportionality.count_pairs` table of the stratum of ``text``, or of
        the dedup scope (None: every pattern)."""
        members = (np.ones(self.patterns.size, dtype=bool) if text is None
                   else (self.patterns >> self.bits[text]) & 1 == 1)
        names = {}
        for name, terms in self.terms.items():
            first = self.firsts[name][members].min(axis=0, initial=self.spellings[name].size)
            present = np.flatnonzero(first < self.spellings[name].size)
            out = np.full(max(terms.terms, 1), "", dtype=object)
            out[present] = terms.shown[self.spellings[name][first[present]]]
            names[name] = out
        listed = self.listed[members].sum(axis=0)
        pair = np.flatnonzero(listed)
        return _pair_table(pair, listed[pair], self.margins["drug"][members].sum(axis=0),
                           self.margins["reaction"][members].sum(axis=0),
                           int(self.screened[members].sum()), names["drug"], names["reaction"])


def _same_reports(originals: int, releases: int, drugs: tuple[np.ndarray, int],
                  reactions: tuple[np.ndarray, int]) -> bool:
    """Whether the release rows (after the ``originals`` original rows) list the same (drug
    cell, reaction cell) pairs as the original rows, each as many times: ``drugs`` and
    ``reactions`` are each row's cell codes (:meth:`_Terms.read_cells`) and their number."""
    if originals != releases:
        return False
    (drug_of, _), (reaction_of, reaction_cells) = drugs, reactions
    # codes from -1 (a missing cell) up
    pair = (drug_of.astype(np.int64) + 1) * (reaction_cells + 1) + (reaction_of + 1)
    return bool(np.array_equal(np.sort(pair[:originals]), np.sort(pair[originals:])))


def _latest_of_case(cases: list[np.ndarray], count: int) -> tuple[np.ndarray, np.ndarray]:
    """The reports that are their case's latest, and each report's next report of the same
    case (``count`` when none). Periods are added oldest first, so the last report of a case
    is its latest period's row."""
    following = np.full(count, count, dtype=np.int64)
    if not count:
        return np.zeros(0, dtype=bool), following
    codes, _ = pd.factorize(np.concatenate(cases))
    missing = codes < 0                               # a report without a case id: its own case
    codes[missing] = codes.max(initial=0) + 1 + np.arange(int(missing.sum()))
    order = np.lexsort((np.arange(count), codes))     # by case, then report
    same = codes[order[1:]] == codes[order[:-1]]
    following[order[:-1][same]] = order[1:][same]
    return following == count, following


def _cells(rows: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """The terms of the columns of each row as one ``|``-joined cell, as
    :func:`.disproportionality.pair_counts` joins them (a column a release lacks reads as empty
    cells, as it did when the releases were stacked into one frame; the signal table reads its
    releases with it too)."""
    def one(column: str) -> np.ndarray:
        if column not in rows.columns:
            return np.full(len(rows), "", dtype=object)
        return cell_strings(rows[column])
    if len(columns) == 1:
        return one(columns[0])
    joined = np.full(len(rows), "", dtype=object)
    for column in columns:
        joined = joined + _SEP + one(column)
    return joined


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

    def __init__(self, table: pd.DataFrame, reports: int, options: ScreeningOptions, *,
                 undecided: int = 0, done: _Done | None = None, fit: _Fit | None = None):
        self.reports = reports
        self.undecided = undecided
        self.prior: GpsPrior | None = None
        fit = fit or _Fit(options.min_count)
        self.fit_key = fit.key()
        table = _screened_rows(table, options.min_count)
        if len(table):
            values, self.prior = _screen(table, fit, done or _Done())
            # the statistics added in one copy of the table, indexed by the folded names (the
            # index set_index makes of them, without making the key columns it drops); as one
            # frame joined to the table: assign inserts them a column at a time, 3x the time
            # for the same columns, dtypes and values (issue 43)
            table = (pd.concat([table, pd.DataFrame(values, index=table.index)], axis=1)
                     if values.keys().isdisjoint(table.columns) else table.assign(**values))
            table.index = _key_index(table["drug"], table["reaction"])
        self.table = table

    def screens(self, table: pd.DataFrame, reports: int, undecided: int, fit: _Fit) -> bool:
        """Whether this is the screening of ``table`` (a scope's pair table), these reports
        and this fit: the same counts, names and settings give every number alike, so the
        other side of a scope whose table equals this one's takes this screening as its own
        (a release that publishes the drugs and reactions as reported: issue 43)."""
        if (reports, undecided) != (self.reports, self.undecided) or fit.key() != self.fit_key:
            return False
        mine = self.table
        table = _screened_rows(table, fit.min_count)
        if not len(table) or len(table) != len(mine):
            return False
        columns = list(table.columns)
        return (list(mine.columns[:len(columns)]) == columns
                and all(np.array_equal(table[c].to_numpy(), mine[c].to_numpy()) for c in columns))

    def limit_flips(self) -> int:
        """How many pairs' decisions differ under the limit of a prior held at its bound
        (:data:`.disproportionality.LIMIT_FLIP_COLUMN`; 0 for a prior with a maximum)."""
        if self.prior is None or self.prior.limit is None or not len(self.table):
            return 0
        return int((self.table[LIMIT_FLIP_COLUMN] != "").sum())

    def signals(self, statistic: str) -> pd.Index:
        if not len(self.table):
            return pd.MultiIndex.from_tuples([], names=_KEY)
        return self.table.index[self.table[STATISTICS[statistic][0]].to_numpy(dtype=bool)]

    def pair(self, drug: str, reaction: str) -> dict[str, Any]:
        """One pair's statistics (n = 0 and no signal when it was never reported here)."""
        key = (drug.strip().casefold(), reaction.strip().casefold())
        found = _pair_row(self.table, key)
        if found is None:
            return {"n": 0, "signal": {s: False for s in STATISTICS}}
        solved = self.quantiles([found])[0]
        out: dict[str, Any] = {"n": int(found["n"])}
        for columns in (v[2] for v in STATISTICS.values()):
            out.update({c: _rounded(solved[c] if c in solved else found[c]) for c in columns})
        out["signal"] = {s: bool(found[v[0]]) for s, v in STATISTICS.items()}
        return out

    def quantiles(self, rows: Sequence[pd.Series]) -> list[dict[str, float]]:
        """EB05 and EB95 of these rows of :attr:`table`: the screening solves them only for the
        pairs it shows (``quantiles=False`` of :func:`.disproportionality.screened_columns`;
        a pair's quantiles solved with any others are the values a solve of the whole table
        gives it, elementwise). Empty dicts when the table has them already (a prior with a
        limit) or no row is given."""
        return self.quantiles_of(np.array([row["n"] for row in rows], dtype=np.int64),
                                 np.array([row["e"] for row in rows], dtype=np.float64))

    def quantiles_of(self, n: np.ndarray, e: np.ndarray) -> list[dict[str, float]]:
        """:meth:`quantiles` of rows given by their counts ``n`` and expected counts ``e``."""
        if not n.size or "eb05" in self.table.columns:
            return [{} for _ in range(n.size)]
        assert self.prior is not None, "a table with rows has been screened"
        eb05, eb95 = _eb_quantiles(n, e, self.prior, (MGPS_LOWER_QUANTILE, MGPS_UPPER_QUANTILE))
        return [{"eb05": low, "eb95": high} for low, high in zip(eb05.tolist(), eb95.tolist())]


def _screened_rows(table: pd.DataFrame, min_count: int) -> pd.DataFrame:
    """The rows of a pair table that are screened: the pairs reported ``min_count`` times."""
    if len(table):
        listed = table["n"].to_numpy() >= min_count
        if not listed.all():   # the filter copies the table: only when it drops a pair
            table = table[listed]
    return table


class _Done:
    """Screenings by their counts. By default the last few: the same scope of the other side is
    screened right after (a scope's two sides are compared together), so a few suffice."""

    def __init__(self, kept: int | None = 4) -> None:
        self.kept = kept
        self._screenings: dict[tuple, tuple[dict[str, np.ndarray], GpsPrior]] = {}
        # every prior fitted, whatever was dropped: a few numbers each, and the fit is the
        # costly part of a screening (a table met again after its statistics were dropped,
        # e.g. a stratum the planted rules read, is screened again under its prior: issue 43)
        self._priors: dict[tuple, GpsPrior] = {}

    def get(self, key: tuple) -> tuple[dict[str, np.ndarray], GpsPrior] | None:
        return self._screenings.get(key)

    def prior(self, key: tuple) -> GpsPrior | None:
        """The prior fitted to the counts of ``key``, kept even after its statistics."""
        return self._priors.get(key)

    def put(self, key: tuple, value: tuple[dict[str, np.ndarray], GpsPrior]) -> None:
        self._screenings[key] = value
        self._priors[key] = value[1]
        while self.kept is not None and len(self._screenings) > self.kept:
            del self._screenings[next(iter(self._screenings))]


@dataclass(frozen=True)
class _Fit:
    """How a scope's prior is fitted: the pair threshold, the starts and the warm start."""

    min_count: int
    starts: int = POOLED_STARTS
    warm_start: GpsPrior | None = None

    def key(self) -> tuple:
        warm = self.warm_start
        return (self.min_count, self.starts,
                None if warm is None else (warm.alpha1, warm.beta1, warm.alpha2, warm.beta2, warm.p))


def _screen(table: pd.DataFrame, fit: _Fit, done: _Done
            ) -> tuple[dict[str, np.ndarray], GpsPrior]:
    """The columns :func:`.disproportionality.screen` adds to a pair table and its prior,
    computed once per distinct table.

    Every statistic and the fitted prior depend only on the counts (n, e and the 2×2 table) and
    the fit's settings: a scope whose counts equal those of a scope already screened the same
    way (the same scope of a release that leaves drugs and reactions as they were, on both
    sides) takes that screening's numbers, identical to what screening it again would give.
    """
    key = _counts_key(table, fit)
    found = done.get(key)
    if found is None:
        # the prior fitted to these counts before, if any: the fit is a function of the
        # counts and the fit's settings alone (both in the key), so it is that prior again
        found = _screen_counts(table, fit, prior=done.prior(key))
        done.put(key, found)
    return found


#: The columns of a pair table that its screening reads.
_COUNTS = ("n", "e", "a", "b", "c", "d")


def _counts_key(table: pd.DataFrame, fit: _Fit) -> tuple:
    digest = hashlib.sha256()
    for name in _COUNTS:
        column = np.ascontiguousarray(table[name].to_numpy())
        digest.update(str(column.dtype).encode())
        digest.update(column.tobytes())
    return (fit.key(), len(table), digest.hexdigest())


def _screen_counts(table: pd.DataFrame, fit: _Fit, prior: GpsPrior | None = None
                   ) -> tuple[dict[str, np.ndarray], GpsPrior]:
    """The statistics :func:`.disproportionality.screen` adds to a pair table, and its prior
    (what a worker computes for ``result(mapper=...)``); ``prior``: the one ``fit`` gave on
    these counts before (not fitted again)."""
    # EB05 and EB95 are solved for the pairs shown only (_Screened.quantiles): the signal
    # decisions need them for a few pairs, the bracket of the others decides (issue 43)
    return screened_columns(table, prior=prior, min_count=fit.min_count, starts=fit.starts,
                            warm_start=fit.warm_start, quantiles=False)


def _screen_item(item: tuple[pd.DataFrame, _Fit]) -> tuple[dict[str, np.ndarray], GpsPrior]:
    """:func:`_screen_counts` of a (table, fit) pair (one item of a cluster's map)."""
    return _screen_counts(*item)


def _key_index(drugs: pd.Series, reactions: pd.Series) -> pd.MultiIndex:
    """The index of a screened table: each pair's folded drug and reaction (``_KEY``), the
    MultiIndex ``set_index`` makes of those columns (each level the sorted distinct keys),
    built from the few distinct names instead of factorizing the folded columns again."""
    # Index levels and arrays of codes (the stubs ask for sequences of labels and of ints)
    levels: list[Any] = []
    codes: list[Any] = []
    for terms in (drugs, reactions):
        # each distinct name folded once: a table lists every pair, a name once per partner
        # (a few hundred names: a list is made faster than pandas' string methods run)
        name_of, names = pd.factorize(terms, use_na_sentinel=False)
        folded = np.array([str(name).strip().casefold() for name in names], dtype=object)
        level, key_of = np.unique(folded, return_inverse=True)
        levels.append(pd.Index(level, dtype=object))
        codes.append(key_of.reshape(-1)[name_of])
    return pd.MultiIndex(levels=levels, codes=codes, names=_KEY, verify_integrity=False)


def _compare(original: _Screened, release: _Screened, listed: int) -> dict[str, Any]:
    if original is release:
        return _compare_alike(original)
    stats: dict[str, Any] = {}
    spurious: dict[str, list] = {}
    lost: dict[str, list] = {}
    # the two sides' pairs matched once for every score, and each score's correlation computed
    # once (two statistics rank by the same score; issue 43)
    scores = list(dict.fromkeys(v[1] for v in STATISTICS.values()))
    both = _matched(original.table, release.table, scores)
    ranked = {score: _spearman(both, score) for score in scores}
    for name, (_flag, score, columns) in STATISTICS.items():
        so, sr = original.signals(name), release.signals(name)
        common = so.intersection(sr)
        entry: dict[str, Any] = {
            "signals_original": len(so), "signals_release": len(sr), "common": len(common),
            "recall": round(len(common) / len(so), 6) if len(so) else None,
            "precision": round(len(common) / len(sr), 6) if len(sr) else None,
        }
        entry.update(ranked[score])
        stats[name] = entry
        spurious[name] = _listed(sr.difference(so), release, original, score, columns, listed)
        lost[name] = _listed(so.difference(sr), original, release, score, columns, listed,
                             listed_side="original")
    return {"statistics": stats, "spurious": spurious, "lost": lost}


def _compare_alike(screened: _Screened) -> dict[str, Any]:
    """:func:`_compare` of a screening with itself (both sides' tables alike, :meth:`_Scopes.
    get`): every signal common, none spurious or lost, and each score ranked against itself
    (the pairs both sides report are the table's, in its order, as :func:`_matched` joins
    them)."""
    table = screened.table
    ranked = {}
    for score in dict.fromkeys(v[1] for v in STATISTICS.values()):
        values = table[score].to_numpy(float) if len(table) else None
        ranked[score] = _spearman_of(values, values, alike=True)
    stats: dict[str, Any] = {}
    for name, (_flag, score, _columns) in STATISTICS.items():
        signals = len(screened.signals(name))
        share = round(signals / signals, 6) if signals else None
        stats[name] = {"signals_original": signals, "signals_release": signals,
                       "common": signals, "recall": share, "precision": share, **ranked[score]}
    return {"statistics": stats, "spurious": {name: [] for name in STATISTICS},
            "lost": {name: [] for name in STATISTICS}}


def _matched(t_o: pd.DataFrame, t_r: pd.DataFrame, scores: list[str]) -> pd.DataFrame | None:
    """The ``scores`` of the pairs both sides report (columns suffixed ``_o`` and ``_r``; the
    rows, and their order, depend on the indexes alone, not on the columns taken); None when
    a side has no pair."""
    if not len(t_o) or not len(t_r):
        return None
    return t_o[scores].add_suffix("_o").join(t_r[scores].add_suffix("_r"), how="inner")


def _spearman(both: pd.DataFrame | None, score: str) -> dict[str, Any]:
    if both is None:
        return _spearman_of(None, None)
    return _spearman_of(both[f"{score}_o"].to_numpy(float), both[f"{score}_r"].to_numpy(float))


def _spearman_of(x: np.ndarray | None, y: np.ndarray | None, *,
                 alike: bool = False) -> dict[str, Any]:
    """:func:`_spearman` of the two sides' scores of the pairs both report (None: a side
    has no pair); ``alike``: y is x."""
    if x is None or y is None:
        return {"spearman": None, "pairs_compared": 0}
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"spearman": None, "pairs_compared": int(len(x))}
    if alike and len(x) <= _ALIKE_PAIRS:
        # the correlation of a ranking with itself is 1; the Pearson correlation of the same
        # ranks computes it within a few ulps per pair (<< 5e-7 at this size), which the
        # 6-digit rounding takes to 1.0: the sort and the sums are not needed for it
        return {"spearman": 1.0, "pairs_compared": int(len(x))}
    return {"spearman": round(float(_spearman_statistic(x, y)), 6), "pairs_compared": int(len(x))}


def _spearman_statistic(x: np.ndarray, y: np.ndarray) -> float:
    """``scipy.stats.spearmanr(x, y).statistic`` of finite, non-constant x and y (at least two
    of each), bit for bit: the Pearson correlation (``np.corrcoef``, as SciPy computes it) of
    their average ranks. Average ranks are integers or halves, exact whatever computes them;
    importing ``scipy.stats`` for them took 0.7 s of every ``medanon evaluate`` (issue 43)."""
    ranks = _average_ranks(x)
    # both sides' scores alike (a release that keeps a scope's counts): the same ranks
    ranked = np.column_stack((ranks, ranks if np.array_equal(x, y) else _average_ranks(y)))
    return float(np.corrcoef(ranked, rowvar=False)[1, 0])


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given the mean of the ranks they span (``rankdata``'s "average")."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    tie = np.cumsum(starts)                       # 1-based tie group of each sorted value
    bounds = np.r_[np.flatnonzero(starts), len(values)]
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = 0.5 * (bounds[tie] + bounds[tie - 1] + 1)
    return ranks


def _pair_row(table: pd.DataFrame, key: Hashable) -> pd.Series | None:
    """The row of the pair ``key`` (folded drug, folded reaction) in a scope's table, None when
    the pair was never reported there."""
    if not len(table) or key not in table.index:
        return None
    # xs, not loc: a tuple given to loc reads to the type checker as (row, column)
    row = table.xs(key)
    assert isinstance(row, pd.Series)  # one row: the table has a row per pair
    return row


def _listed(pairs: pd.Index, shown: _Screened, other: _Screened, score: str,
            columns: tuple[str, ...], limit: int, *, listed_side: str = "release") -> list[dict]:
    if not len(pairs) or limit == 0:
        return []
    # the pairs found by their positions in each table and their values read from its columns
    # (the values a row of the table holds: no row is made, issue 43)
    table = shown.table
    at = table.index.get_indexer(pairs)
    order = np.argsort(-table[score].to_numpy(float)[at], kind="stable")[:limit]
    mine = at[order]
    there = (other.table.index.get_indexer(table.index[mine]) if len(other.table)
             else np.full(mine.size, -1, dtype=np.intp))
    found = there[there >= 0]
    other_side = "original" if listed_side == "release" else "release"
    read = ("n", "e", *columns)

    def values_of(screened: _Screened, rows: np.ndarray) -> list[dict[str, Any]]:
        if not rows.size:   # (a side with no pair may have a table without columns)
            return []
        # the quantiles of the pairs shown, solved together on each side
        got = {c: screened.table[c].to_numpy()[rows] for c in read
               if c in screened.table.columns}   # EB05, EB95: solved below when absent
        solved = screened.quantiles_of(got["n"].astype(np.int64), got["e"].astype(np.float64))
        return [{"n": int(got["n"][i]),
                 **{c: _rounded(done[c] if c in done else got[c][i]) for c in columns}}
                for i, done in enumerate(solved)]

    listed = values_of(shown, mine)
    theirs = iter(values_of(other, found))
    drugs, reactions = table["drug"].to_numpy()[mine], table["reaction"].to_numpy()[mine]
    return [{"drug": drug, "reaction": reaction, listed_side: values,
             other_side: {"n": 0} if where < 0 else next(theirs)}
            for drug, reaction, values, where in zip(drugs, reactions, listed, there,
                                                     strict=True)]


def _scope_entry(kind: str, scope: str, original: _Screened, release: _Screened,
                 listed: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "kind": kind, "scope": scope,
        "reports": {"original": original.reports, "release": release.reports},
        "undecided": {"original": original.undecided, "release": release.undecided},
        "prior": {"original": original.prior.to_dict() if original.prior else None,
                  "release": release.prior.to_dict() if release.prior else None},
        # pairs whose decision differs under the limit of a prior held at its bound (issue 42)
        "limit_prior_flips": {"original": original.limit_flips(), "release": release.limit_flips()},
    }
    entry.update(_compare(original, release, listed))
    return entry


class _Scopes:
    """Screens scopes of one side, caching them (the original side is shared by releases)."""

    def __init__(self, side: _Reports, options: ScreeningOptions, done: _Done):
        self.side, self.options, self.done = side, options, done
        self._cache: dict[tuple[str, str], _Screened] = {}
        self._anchor: GpsPrior | None = None
        self._anchor_fitted = False

    def fit(self, kind: str) -> _Fit:
        """How a scope of this kind is fitted: the dedup scope from the spread starts, the
        others warm from the dedup prior (screening it first when it is not yet)."""
        options = self.options
        if kind == _ANCHOR or options.scope_starts is None:
            return _Fit(options.min_count)
        if not self._anchor_fitted:
            self.get("dedup", "dedup")
        return _Fit(options.min_count, options.scope_starts, self._anchor)

    def publishes(self, condition: Condition) -> bool:
        return self.side.publishes(condition)

    def forget(self, kind: str, scope: str) -> None:
        """Drop a scope's screening once compared (a pair table per scope and side adds up)."""
        self._cache.pop((kind, scope), None)

    def table(self, kind: str, scope: str,
              condition: Condition | None = None) -> tuple[pd.DataFrame, int, int]:
        """A scope's pair table, its number of reports and of undecided ones."""
        inside: slice | np.ndarray = slice(0, self.side.count)
        undecided = 0
        if kind == "quarter":
            inside = slice(*self.side.bounds[scope])
        elif kind == "dedup":
            inside = self.side.closed_latest()
        elif kind == "cumulative":
            inside = self.side.latest_up_to(scope)
        elif condition is not None:
            # a stratum pools the periods as the dedup scope does: each case's latest row
            classes = self.side.classes(condition)
            latest = self.side.closed_latest()
            undecided = int(((classes < 0) & latest).sum())
            inside = (classes == INSIDE) & latest
        reports = inside.stop - inside.start if isinstance(inside, slice) else int(inside.sum())
        # a scope of no report has no table (the columns are not even looked for)
        if not reports:
            return pd.DataFrame(), reports, undecided
        found = (self.side.latest_pairs(condition if kind == "stratum" else None)
                 if kind in ("dedup", "stratum") else None)
        # the dedup scope and the strata are masks of the latest reports
        table = (found if found is not None
                 else self.side.pairs(inside, within_latest=kind in ("dedup", "stratum")))
        return table, reports, undecided

    def get(self, kind: str, scope: str, condition: Condition | None = None, *,
            like: _Screened | None = None, alike: bool = False) -> _Screened:
        """A scope's screening; ``like``: the other side's, taken as this one's when it
        :meth:`~_Screened.screens` the same table (the same object: :func:`_compare` then
        knows the sides alike), or with ``alike`` (the table is known to be the same,
        :meth:`SeriesScreening.alike`) when it is fitted alike, without counting the table."""
        key = (kind, scope)
        if key not in self._cache:
            if alike and like is not None and self.fit(kind).key() == like.fit_key:
                screened = like
            else:
                table, reports, undecided = self.table(kind, scope, condition)
                fit = self.fit(kind)
                screened = (like if like is not None
                            and like.screens(table, reports, undecided, fit)
                            else _Screened(table, reports, self.options, undecided=undecided,
                                           done=self.done, fit=fit))
            self._cache[key] = screened
            if kind == "dedup":
                self._anchor, self._anchor_fitted = screened.prior, True
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


def _first_signal(original: dict[tuple, int], release: dict[tuple, int],
                  labels: Sequence[str]) -> dict[str, Any]:
    """When each pair first signals in the cumulative scopes, original against release: the
    pairs the original signals, and of them how many the release signals in the same quarter,
    later (with the mean delay in quarters), earlier, or never; and the pairs only the release
    signals."""
    delays = [release[p] - q for p, q in original.items() if p in release]
    later = [d for d in delays if d > 0]
    return {"pairs_original": len(original),
            "same_quarter": sum(d == 0 for d in delays), "later": len(later),
            "mean_delay_quarters": round(float(np.mean(later)), 6) if later else None,
            "earlier": sum(d < 0 for d in delays),
            "never": sum(p not in release for p in original),
            "release_only": sum(p not in original for p in release),
            "first_quarters_original": {labels[q]: n for q, n in
                                        sorted(Counter(original.values()).items())},
            "first_quarters_release": {labels[q]: n for q, n in
                                       sorted(Counter(release.values()).items())}}


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
            text = cond.text if cond is not None else "dedup"
            kind = "stratum" if cond is not None else "dedup"
            screened = original.get(kind, text, cond)
            o = screened.pair(rule.drug, rule.reaction)
            r = release.get(kind, text, cond, like=screened).pair(rule.drug, rule.reaction)
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


class SeriesScreening:
    """The screening of a series, fed one release at a time (what :func:`screen_series`
    computes; ``evaluate`` streams the releases through it).

    Each release is read once when added: its drug and reaction cells become integer codes and
    each report's class in each condition is judged; the rows themselves are not kept. The
    scopes are screened by :meth:`result`.

    Args:
        hierarchies: Taxonomies of the categorical QIDs (to judge strata).
        rules: Signal rules screened inside their condition and its opposite (``planted``).
        options: What to screen (:class:`ScreeningOptions`).
    """

    def __init__(self, *, hierarchies: Mapping[str, Taxonomy], rules: Sequence[SignalRule] = (),
                 options: ScreeningOptions | None = None):
        self.options = options or ScreeningOptions()
        self.rules = list(rules)
        self.labels: list[str] = []
        conditions = {c.text: c for c in self.options.conditions}
        for rule in self.rules:
            if rule.condition is not None:
                for c in (rule.condition, opposite_condition(rule.condition)):
                    conditions.setdefault(c.text, c)
        # one vocabulary for both sides: a term has the same code in the original and the release
        drugs, reactions = _Terms(upper=True), _Terms(upper=False)
        self._sides = {side: _Reports(self.options, drugs, reactions, list(conditions.values()),
                                      hierarchies) for side in ("original", "release")}
        self._terms = (drugs, reactions)
        self._alike: set[str] = set()   # the periods SeriesScreening.alike may take as alike

    def add(self, label: str, original_rows: pd.DataFrame, release_rows: pd.DataFrame) -> None:
        """Read one period: its original records as published strings
        (:func:`medanon.published.format.original_as_published`) and its release rows.

        Raises:
            ValidationError: the period was added already, or the release lacks a drug or the
                reaction column.
        """
        self.take(label, self.read(original_rows, release_rows))

    def read(self, original_rows: pd.DataFrame, release_rows: pd.DataFrame,
             original_terms: Mapping[str, CellTerms] | None = None) -> tuple[_Read, _Read]:
        """The part of :meth:`add` that reads one period's rows: independent of the periods
        added before, so a worker can read a period for :meth:`take`.

        ``original_terms``: the terms ``original_rows``' multi-valued columns were joined from
        (:func:`~medanon.published.format.original_as_published`'s ``terms``): the screening
        reads them rather than split the cells again (the same entries; issue 43)."""
        sides = (original_rows, release_rows)
        entries: tuple[dict, dict] = ({}, {})
        cell_of: dict[str, tuple[np.ndarray, int]] = {}
        for name, columns, upper in (("drug", self.options.drug_columns, True),
                                     ("reaction", (self.options.reaction_column,), False)):
            # both sides in one vocabulary of their own, the original's rows first: a release
            # that keeps a period's cells has each of them split once
            cells = [_cells(rows, columns) for rows in sides]
            terms = _Terms(upper=upper)
            # a column's own terms when the cell is that column's alone
            known = (original_terms.get(columns[0])
                     if original_terms is not None and len(columns) == 1 else None)
            if known is not None and len(known.which) != len(cells[0]):
                known = None
            reports, spellings, codes = terms.read_cells(np.concatenate(cells), known)
            cell_of[name] = (codes, int(codes.max(initial=-1)) + 1)
            cut = int(np.searchsorted(reports, len(cells[0])))
            entries[0][name] = (reports[:cut], spellings[:cut], terms.spellings)
            entries[1][name] = (reports[cut:] - len(cells[0]), spellings[cut:], terms.spellings)
        alike = _same_reports(len(original_rows), len(release_rows), cell_of["drug"],
                              cell_of["reaction"])
        original, release = (
            _Read(len(rows), tuple(rows.columns), entry, side.classes_of(rows),
                  # compared only with the same side's ids: no need to make text
                  rows["case_id"].to_numpy(dtype=object) if "case_id" in rows.columns else None,
                  alike)
            for rows, entry, side in zip(sides, entries, (self._sides["original"],
                                                         self._sides["release"])))
        return original, release

    def known_counts(self, read: tuple[_Read, _Read]) -> tuple[KnownCounts, KnownCounts]:
        """What :meth:`read` read of a period, original side then release side, as
        :func:`.signals.compare_signals` counts it (``read``): the drug column (when the
        screening's drugs are one column) and the reaction column, each row's casefolded terms;
        and the class of each row in each condition judged on a column of the rows."""
        drugs = self.options.drug_columns
        out = []
        for side, one in zip((self._sides["original"], self._sides["release"]), read,
                             strict=True):
            terms: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
            for name, column in (("drug", drugs[0] if len(drugs) == 1 else None),
                                 ("reaction", self.options.reaction_column)):
                if column is not None and column in one.columns:
                    reports, spellings, vocabulary = one.entries[name]
                    folded = np.array([t.casefold() for t in vocabulary], dtype=object)
                    terms[column] = (reports, spellings, folded)
            classes = {side.conditions[text]: found for text, found in one.classes.items()
                       if isinstance(found, np.ndarray)}
            out.append((terms, classes))
        return out[0], out[1]

    def take(self, label: str, read: tuple[_Read, _Read]) -> None:
        """Add a period :meth:`read` read (in the order of the periods, as :meth:`add`)."""
        if label in self.labels:
            raise ValidationError(f"The period {label} was added to the screening twice.")
        published = read[1].columns
        for column in (*self.options.drug_columns, self.options.reaction_column):
            if column not in published:
                raise ValidationError(
                    f"The release of {label} has no column {column!r} (ScreeningOptions "
                    f"'drug_columns'/'reaction_column'); it publishes "
                    f"{', '.join(map(repr, published))}.")
        self._sides["original"].take(label, read[0])
        self._sides["release"].take(label, read[1])
        self.labels.append(label)
        if read[1].alike:
            self._alike.add(label)

    def alike(self, label: str) -> bool:
        """Whether the period's release table is the original's without counting it: its
        reports list the original's drug and reaction cells (:func:`_same_reports`: the same
        entries, report for report up to their order, hence the same counts), and every term
        of the series has one spelling (the name a table shows of a term, its first spelling
        in the scope's order, is then that one whatever the order). Once closed."""
        return label in self._alike and all(len(t.spellings) == t.terms for t in self._terms)

    def _close(self) -> None:
        """Code the terms of every report read (after the last :meth:`add`)."""
        for terms in self._terms:
            terms.close()
        for side in self._sides.values():
            side.close()

    def _screen_first(self, original: _Scopes, release: _Scopes, done: _Done,
                      mapper: Callable[[Callable, list], list]) -> None:
        """Screen the distinct pair tables of every scope through ``mapper`` into ``done``: the
        dedup ones first, since the others start from their side's dedup prior."""
        min_count = self.options.min_count
        scopes = _scopes_of(self.options, self.labels, self.rules, original, release)
        for anchor in (True, False):
            wanted: dict[tuple, tuple[pd.DataFrame, _Fit]] = {}
            for kind, scope, condition in scopes:
                if (kind == _ANCHOR) != anchor:
                    continue
                for side in (original, release):
                    table = side.table(kind, scope, condition)[0]
                    if len(table):
                        table = table[table["n"] >= min_count]
                    if len(table):
                        fit = side.fit(kind)
                        wanted.setdefault(_counts_key(table, fit),
                                          (table[list(_COUNTS)].reset_index(drop=True), fit))
            keys = list(wanted)
            screened = mapper(_screen_item, [wanted.pop(k) for k in keys])
            for key, found in zip(keys, screened):
                done.put(key, found)

    def result(self, *, mapper: Callable[[Callable, list], list] | None = None,
               progress: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Screen every scope of the periods added and compare the two sides (the dict
        :func:`screen_series` returns).

        Args:
            mapper: Maps a function over a list, e.g. on the workers of a cluster
                (``lambda f, xs: client.gather(client.map(f, xs))``): the distinct pair tables
                of all scopes are then screened through it first, the rest as without it.
            progress: Called once per scope compared, with the scope's name (``dedup``,
                ``quarter 2020Q1``, ``stratum age <= 18``, ``up to 2020Q1``...; a stratum
                the series does not publish is told as skipped), and once more as
                ``planted rules`` when there are rules: :func:`screening_steps` calls in all.
                With ``mapper`` the fits run before the first call.

        Raises:
            SchemaError: the original records lack a drug or the reaction column.
        """
        self._close()
        options, labels = self.options, self.labels
        done = _Done()  # screenings by their counts, shared by the two sides
        original = _Scopes(self._sides["original"], options, done)
        release = _Scopes(self._sides["release"], options, done)
        if mapper is not None:
            done.kept = None
            self._screen_first(original, release, done, mapper)
        # the scopes the planted rules read again; every other one is dropped once compared
        planted = {("dedup", "dedup")} if any(r.condition is None for r in self.rules) else set()
        planted |= {("stratum", c.text) for r in self.rules if r.condition is not None
                    for c in (r.condition, opposite_condition(r.condition))}

        # per statistic, the period each pair first signals in: original, release
        firsts: dict[str, tuple[dict[tuple, int], dict[tuple, int]]] = {
            name: ({}, {}) for name in STATISTICS}

        def told(step: str) -> None:
            if progress is not None:
                progress(step)

        def entry(kind: str, scope: str, condition: Condition | None = None) -> dict[str, Any]:
            mine = original.get(kind, scope, condition)
            sides = (mine, release.get(kind, scope, condition, like=mine,
                                       alike=kind == "quarter" and self.alike(scope)))
            if kind == "cumulative":
                at = labels.index(scope)
                for name, (first_o, first_r) in firsts.items():
                    for first, screened in zip((first_o, first_r), sides):
                        for pair in screened.signals(name):
                            first.setdefault(pair, at)
            out = _scope_entry(kind, scope, *sides, options.listed)
            if (kind, scope) not in planted:
                original.forget(kind, scope)
                release.forget(kind, scope)
            told(_step_name(kind, scope))
            return out

        scopes = [entry("dedup", "dedup")]
        if options.pooled:
            scopes.append(entry("pooled", "pooled"))
        if options.quarters:
            scopes += [entry("quarter", p) for p in labels]
        skipped = []
        for condition in options.conditions:
            if not release.publishes(condition) or not original.publishes(condition):
                skipped.append(condition.text)
                # still a step: the total is known before the columns are (screening_steps)
                told(f"{_step_name('stratum', condition.text)} (not published, skipped)")
                continue
            scopes.append(entry("stratum", condition.text, condition))
        if options.cumulative:
            scopes += [entry("cumulative", p) for p in labels]
        out: dict[str, Any] = {"options": options.to_dict(), "scopes": scopes,
                               "summary": {kind: _summary([e for e in scopes if e["kind"] == kind])
                                           for kind in KINDS if kind in _ALWAYS
                                           or getattr(options, kind)}}
        if skipped:
            out["strata_skipped"] = skipped
        if options.cumulative:
            out["first_signal"] = {name: _first_signal(*pair, labels)
                                   for name, pair in firsts.items()}
        if self.rules:
            out["planted"], out["planted_summary"] = _planted(self.rules, original, release)
            told("planted rules")
        return out


def _period_count(periods: Any, owner: str) -> int:
    """A number of periods given as a count or as the labels themselves."""
    if isinstance(periods, Sequence) and not isinstance(periods, str):
        return len(periods)
    return check_int(periods, name="periods", owner=owner, minimum=0)


def _step_name(kind: str, scope: str) -> str:
    """How :meth:`SeriesScreening.result`'s ``progress`` names a scope."""
    if kind in ("dedup", "pooled"):
        return kind
    return f"up to {scope}" if kind == "cumulative" else f"{kind} {scope}"


def screening_steps(options: ScreeningOptions | None, periods: int | Sequence[str],
                    rules: Sequence[SignalRule] = ()) -> int:
    """The number of ``progress`` calls of :meth:`SeriesScreening.result` for these options,
    this many periods (or these period labels) and rules: known before any release is read,
    so that a caller can show a determinate bar.

    One per scope of :meth:`~SeriesScreening.result` in its order: ``dedup``, ``pooled`` (with
    ``options.pooled``), each quarter (with ``options.quarters``), each stratum of
    ``options.conditions`` (published or not), each cumulative scope (with
    ``options.cumulative``); one for the planted rules when there are rules. None (no
    screening) is 0.

    Raises:
        ValidationError: ``periods`` is neither a count nor a sequence of labels.
    """
    count = _period_count(periods, "screening_steps")
    if options is None:
        return 0
    return (1 + bool(options.pooled) + count * bool(options.quarters) + len(options.conditions)
            + count * bool(options.cumulative) + bool(list(rules)))


def _scopes_of(options: ScreeningOptions, labels: Sequence[str], rules: Sequence[SignalRule],
               original: _Scopes, release: _Scopes) -> list[tuple[str, str, Condition | None]]:
    """Every scope :meth:`SeriesScreening.result` screens (on both sides)."""
    out: list[tuple[str, str, Condition | None]] = [("dedup", "dedup", None)]
    if options.pooled:
        out.append(("pooled", "pooled", None))
    if options.quarters:
        out += [("quarter", p, None) for p in labels]
    out += [("stratum", c.text, c) for c in options.conditions
            if release.publishes(c) and original.publishes(c)]
    if options.cumulative:
        out += [("cumulative", p, None) for p in labels]
    for rule in rules:
        if rule.condition is None:
            continue   # screened in the dedup scope, listed already
        out += [("stratum", c.text, c)
                for c in (rule.condition, opposite_condition(rule.condition))
                if release.publishes(c)]
    return list({(kind, scope): (kind, scope, c) for kind, scope, c in out}.values())


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
        A JSON-ready dict: ``options``, ``scopes`` (dedup, pooled, each quarter, each stratum),
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
    screening = SeriesScreening(hierarchies=hierarchies, rules=rules, options=options)
    for label in labels:
        screening.add(label, original_rows[label], release_rows[label])
    return screening.result()
