"""What MS, PPMS, PPMS+, PPMS++ and HA share around the clustering core.

One period is anonymized in six steps (001's PPMS-Anonymization; ``algorithms.md`` §1.7):

1. encode the super records: categorical QIDs as taxonomy codes, numeric ones as [lo, hi].
   A missing value is a value of its own (:attr:`ClusteringMethod.missing_as_value`): a group
   whose members all lack it costs nothing on that QID and is published with an empty cell
   (missing); a group that mixes missing and present values costs 1 for every member and is
   published as ``*`` (root), since its reader can no longer tell which values were missing.
   So the grouping puts missing with missing. (Before, a missing value was the root or the
   period's whole range, which cost a group nothing more once one member lacked the value:
   with 20% of weights missing, 64% of published weights were the whole range.)
2. QID-covering of old cases against the F-attack: the QIDs of a case already published in the
   life span are generalized to cover its published value in the latest (PPMS) or earliest
   (PPMS+, PPMS++, HA) earlier release holding it (an earlier empty cell or ``*`` is covered
   by ``*`` unless the case is still missing after an empty cell);
3. resolve θ* on the period's term counts, and check feasibility: a term held by c cases can
   meet θ_s only if c <= θ_s·N, N the number of anchor records (new cases; HA: new & md),
   because Σ_g floor(θ_s·anchors(g)) <= θ_s·N (001's 2007Q1 example: 3877/18,462 = 21.0%);
4. group (``clustering.py``);
5. check the result with the algorithm's own bound (a broken bound is a bug: InternalError);
6. generalize every group to its lowest common value and build the release table.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import chain
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar

import numpy as np
import pandas as pd

from .._validation import check_choice, check_fraction, check_int
from ..accounting import Accountant
from ..periods import parse_period
from ..data.records import (SuperRecords, distinct_bounds, distinct_objects, distinct_sorted,
                            first_appearances, is_identity)
from ..data.terms import TermCodes, codes_of, key_type
from ..errors import HierarchyError, InfeasibleError, InternalError, ValidationError
from ..hierarchies import Taxonomy, interval_bounds_of
from ..models.theta import ThetaSpec, ThetaTable, UniformTheta, parse_protect, parse_theta
from ..models.theta import protect as with_caps
from ..published.cells import SUPPRESSED
from ..published.manifest_roles import RAISE_THETA_GRID
from ..random import Randomness
from .base import AnonymizationResult, Anonymizer
from .clustering import Attribute, GroupingInput, QidSpace, eta, etas_of, group_records
from .placement import search_placement

ON_INFEASIBLE = ("refuse", "raise-theta", "suppress-terms")
#: default largest share of a period's cases a release may withhold (``max_withheld``)
MAX_WITHHELD = 0.1
#: how groups are formed (``clustering.py``): ``classes-first`` forms zero-loss groups inside
#: the exact QID classes, then runs the papers' greedy on the rest (issue 30: several times
#: faster on FAERS-size quarters, and less loss); ``greedy`` runs the papers' greedy alone.
GROUPINGS = ("classes-first", "greedy")


@dataclass(frozen=True)
class TermSuppression:
    """Terms removed from the published sensitive cells (from every column holding them).

    Attributes:
        release_wide: terms removed from every case (``on_infeasible="suppress-terms"`` on
            terms that cannot meet their θ in this period).
        per_case: position of a case in the period's super records -> terms removed from that
            case only (HA: the terms that kept it out of every group, see ``clustering.py``).
    """

    release_wide: frozenset[str] = frozenset()
    per_case: Mapping[int, frozenset[str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.release_wide or self.per_case)

    def of(self, r: int) -> frozenset[str]:
        """The terms removed from case ``r``'s cells."""
        extra = self.per_case.get(r)
        return self.release_wide | extra if extra else self.release_wide

    def count(self, record_terms: Sequence[Sequence[str]], placed: np.ndarray) -> int:
        """Published cases' terms removed, one per (case, term) pair (a term of two columns of
        a case counts once); ``record_terms`` are each case's terms before any suppression."""
        if self and isinstance(record_terms, _CaseTerms):
            return record_terms.removed(self, placed)
        return sum(len(self.of(r).intersection(record_terms[r]))
                   for r in np.flatnonzero(placed).tolist()) if self else 0

#: key under which a hook's details carry operator-only facts (see
#: :attr:`AnonymizationResult.private_details`); popped before the public details are built.
OPERATOR_ONLY = "_operator_only"
_SHOWN = 10


@dataclass(frozen=True)
class _Declared:
    """The settings of a period the model declares as functions of its input, computed in the
    first grouping pass over every case and kept by the later ones (``ClusteringMethod.anonymize``).

    Attributes:
        table: The resolved θ table (before raise-theta).
        raised: Term -> the grid point raise-theta raised its θ to.
        ss_min: HA's ss-rule thresholds per sensitive column (None: not HA).
    """

    table: ThetaTable
    raised: Mapping[str, float]
    ss_min: Mapping[str, int] | None


class ClusteringMethod(Anonymizer):
    """Base of the greedy-clustering methods (configure in the constructor, keyword-only).

    Args:
        k: minimum number of anchor records per group (>= 2).
        theta: θ* as a number in (0, 1], ``"frequency"``, a file path, or a :class:`ThetaSpec`.
        protect: Protected terms and their caps (``{"Death": 0.3}`` or ``["Death=0.3"]``):
            each one's θ is at most its cap, whatever ``theta`` gives it (the frequency rule
            gives θ = 1, no limit, to the most frequent terms). Added to the caps of a θ file
            and of the schema (``protected_terms``); a term capped twice keeps the smaller cap.
        lifespan: periods within which a follow-up links to an earlier release (None: all).
        on_infeasible: ``refuse`` (default) when a term cannot meet its θ or a case fits no
            group; ``raise-theta`` raises those terms' θ to the smallest feasible value;
            ``suppress-terms`` removes those terms from this release. With either option, cases
            the greedy grouping cannot place are withheld from the release, or, for a method
            that may not withhold cases (HA by default), kept with the terms that block them suppressed
            (:class:`TermSuppression`). Every action is recorded in the manifest.
        max_withheld: the largest share of a period's cases that may be withheld (default
            :data:`MAX_WITHHELD`): a release that would withhold more is refused, naming the
            terms that block the cases and the θ or k that would place them. A release that
            publishes almost nothing is no success, though every group in it meets the model.
        grouping: ``"classes-first"`` or ``"greedy"`` (see :data:`GROUPINGS`); both meet the
            same model, they differ in which records share a group. Default: the method's
            :attr:`default_grouping` (classes-first for PPMS++ and HA, the methods to publish
            with; the papers' greedy for the baselines MS, PPMS, PPMS+ and for PPMS-DP).
    """

    periodic: ClassVar[bool] = True
    randomized: ClassVar[bool] = True
    #: earlier clone to cover: "latest" (PPMS), "earliest" (PPMS+, PPMS++, HA), None (MS).
    cover: ClassVar[str | None] = "earliest"
    #: whether only new cases seed and grow groups (PPMS++).
    new_cases_first: ClassVar[bool] = False
    #: whether cases that fit no group may be withheld (HA: only with on_unplaceable="withhold",
    #: see ha.py); a method that may not withhold them keeps them with their blocking terms
    #: suppressed instead, unless ``on_infeasible`` is ``refuse``.
    may_withhold: ClassVar[bool] = True
    #: the grouping when none is given: baselines run as their papers describe them.
    default_grouping: ClassVar[str] = "greedy"

    def __init__(self, *, k: int, theta: float | str | ThetaSpec, lifespan: int | None = None,
                 on_infeasible: str = "refuse",
                 protect: Mapping[str, float] | Sequence[str] | None = None,
                 max_withheld: float | None = None, grouping: str | None = None):
        owner = type(self).__name__
        self.k = check_int(k, name="k", owner=owner, minimum=2)
        if isinstance(theta, ThetaSpec):
            self.theta = theta
        elif isinstance(theta, (int, float)) and not isinstance(theta, bool):
            self.theta = UniformTheta(check_fraction(theta, name="theta", owner=owner))
        elif isinstance(theta, str):
            self.theta = parse_theta(theta)
        else:
            raise ValidationError(f"The 'theta' parameter of {owner} must be a number in (0, 1], "
                                  f"'frequency', a file path or a ThetaSpec; got {theta!r}.")
        self.theta = with_caps(self.theta, parse_protect(protect, owner=owner))
        self.lifespan = None if lifespan is None else check_int(lifespan, name="lifespan",
                                                                owner=owner, minimum=1)
        self.on_infeasible = check_choice(on_infeasible, name="on_infeasible", owner=owner,
                                          choices=ON_INFEASIBLE)
        self.max_withheld = MAX_WITHHELD if max_withheld is None else check_fraction(
            max_withheld, name="max_withheld", owner=owner, low_open=False)
        self.grouping = check_choice(self.default_grouping if grouping is None else grouping,
                                     name="grouping", owner=owner, choices=GROUPINGS)

    def parameters(self) -> dict[str, object]:
        return {"k": self.k, "theta": self.theta.describe(), "lifespan": self.lifespan,
                "on_infeasible": self.on_infeasible, "max_withheld": self.max_withheld,
                "grouping": self.grouping}

    def theta_spec(self, schema) -> ThetaSpec:
        """The θ spec a period of data under ``schema`` is resolved with: the method's own,
        with the schema's protected terms (``Schema.protected_terms``) capped as well."""
        return with_caps(self.theta, dict(getattr(schema, "protected_terms", None) or {}),
                         source="the schema's protected_terms")

    # ------------------------------------------------------------------ hooks for subclasses
    def anchors_and_pool(self, new: np.ndarray, md: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Which records count towards k and η, and which may join a growing group."""
        pool = new.copy() if self.new_cases_first else np.ones(len(new), dtype=bool)
        return new.copy(), pool

    def anchor_name(self) -> str:
        return "new cases"

    def ha_inputs(self, data: SuperRecords, terms_by_column: dict[str, list[tuple[str, ...]]],
                  new: np.ndarray, md: np.ndarray | None,
                  thresholds: Mapping[str, int] | None = None) -> dict:
        """HA's grouping inputs (α, classes, ss-records); ``thresholds``: the ss-rule's
        thresholds when already computed (over the period's input, in a first pass)."""
        return {}

    def md_flags(self, data: SuperRecords, next_cases: Collection[str] | None) -> np.ndarray | None:
        return None

    #: which QID kinds QID-covering widens ("categorical", "numeric").
    cover_kinds: ClassVar[tuple[str, ...]] = ("categorical", "numeric")

    def grouping_thresholds(self, table: ThetaTable, schema) -> tuple[int, ThetaTable, str]:
        """The k and θ table the grouping must meet, and a note for refusals.

        The model's own by default; PPMS-DP with ``dp_aware_grouping`` grows them so that a
        likelihood-weighting adversary's posterior stays within 1/k and θ (``ppms_dp.py``).
        """
        return self.k, table, ""

    def declared_theta(self, raised: dict[str, float]) -> dict[str, float]:
        """The declared θ of terms whose grouping θ was raised to ``raised`` (the same here)."""
        return raised

    def grouping_theta(self, declared: dict[str, float]) -> dict[str, float]:
        """The grouping θ of terms whose declared θ is ``declared`` (the same here; PPMS-DP's
        dp-aware grouping shrinks it)."""
        return declared

    def raised_on_grid(self, blocked: Sequence[tuple[str, int, float]], n_anchor: int
                       ) -> tuple[dict[str, float], dict[str, float]]:
        """The grouping θ and the declared θ ``raise-theta`` gives each blocking term.

        The declared θ is the smallest multiple of :data:`RAISE_THETA_GRID` at or above the θ
        that would declare the term's share c/N of the anchors (capped at 1); the grouping θ is
        the one that declared θ gives (:meth:`grouping_theta`). So a raised θ in a manifest
        says only which grid cell c/N falls in (docs/theta.md, "Raised θ"), never the count
        c, and the grouping it ran with is a function of that grid point and public settings.
        """
        needed = self.declared_theta({t: c / n_anchor for t, c, _ in blocked})
        declared = {t: on_grid(v) for t, v in needed.items()}
        return self.grouping_theta(declared), declared

    #: whether a missing QID value is a value of its own (see the module docstring); PPMS-DP
    #: perturbs the encoded values and keeps the older reading (missing = the whole domain).
    missing_as_value: ClassVar[bool] = True

    def before_grouping(self, data: SuperRecords, space: QidSpace, values: dict,
                        rng: Randomness, accountant: Accountant) -> dict:
        """Change the encoded values in place before grouping (DP methods privatize here; their
        mechanisms report to ``accountant``, whose units are the cases' positions in ``data``).

        Returns facts for the manifest; operator-only facts go under :data:`OPERATOR_ONLY`.
        """
        return {}

    def build_table(self, data: SuperRecords, space: QidSpace, values: dict, group_of: np.ndarray,
                    suppressed_terms: TermSuppression, rng: Randomness, accountant: Accountant
                    ) -> tuple[pd.DataFrame, int, dict]:
        """The release table, its number of groups and facts for the manifest (operator-only
        facts under :data:`OPERATOR_ONLY`); mechanisms report to ``accountant``."""
        table = _release_table(data, space, values, group_of, suppressed_terms)
        return table, int(table["group"].nunique()) if len(table) else 0, {}

    #: whether a period that withholds cases is grouped again without them (see
    #: :meth:`anonymize`); PPMS-DP says no: its mechanisms read and charge every case once.
    regroup_without_withheld: ClassVar[bool] = True

    # -------------------------------------------------------------------------------- run
    def anonymize(self, data: SuperRecords, previous: Sequence[pd.DataFrame] = (), *,
                  rng: Randomness, next_cases: Collection[str] | None = None) -> AnonymizationResult:
        """Anonymize one period; a case that fits no group is withheld (when allowed) and the
        published cases are then grouped again without the withheld ones, until none is left
        out.

        Why the second grouping (issue 41, non-interference): the first one read every case,
        the withheld ones too: their numeric QIDs set the ranges that weigh the loss (001
        Eq. 1), one of them may be the record farthest from the last one grouped (the next
        seed), may use up a growth step's probe budget, and their terms count towards the θ
        table (frequency rule, raise-theta). Grouping the published cases alone makes the
        release a function of their records (and of the seed) only. Which cases are withheld
        still depends on every case, as the greedy decides it.

        Every pass keeps the first pass's tie-breaking rank (restricted to the cases left), and
        a pass after a withholding searches as the refuse path does (repair, then redraws:
        ``placement.py``) before it withholds again: a feasible grouping of the published cases
        exists (the previous pass's groups), but the greedy alone misses it in about one case
        in ten. The search reads only the published cases and the generator, so the release
        stays a function of them. The price is more withheld cases than one pass withholds: on
        the dates attack's series (k 5, θ 0.3, 4 quarters of about 400 cases) 46-60 per
        quarter where one pass withheld 46-59.

        The settings the model declares as functions of the period's input (:class:`_Declared`:
        the θ table, a θ raise-theta raised, HA's mean+SD ss-rule thresholds) are computed once,
        in the first pass, over every case of the period, as the model declares them
        (``models.periodic``, ``input_dependence``: "withheld cases included"), and hold in the
        later passes; a later pass raises a θ further when its cases need it. Computed again
        over the published cases alone they move with the withheld cases taken out: a term the
        withheld cases held drops back to the requested θ, the greedy cannot meet it and
        withholds more of its holders, and so on (on 150 synthetic cases at k 5, θ 0.2, the
        periodic grid's first quarter, 28 withheld cases grew to 47 of 111; on the dates
        attack's series to 67-141 per quarter), and HA's ss-threshold drops once its many-term
        cases are withheld, making more cases ss-records (8 withheld grew to 48 of 213).
        """
        n, withheld, reason = len(data.frame), 0, None
        # One tie-breaking rank for every pass: a pass after a withholding keeps the published
        # cases' order under the first rank. A fresh draw per pass would make the second
        # grouping an unrelated coin toss that may withhold other cases, and those yet others
        # (a cascade seen on the dates attack's series: 1 withheld case grew to 8). Drawing it
        # here, before the pass, takes the same draws from the generator as drawing it inside:
        # no hook of a regrouping method reads the generator before the rank.
        rank = rng.generator.permutation(n) if self.regroup_without_withheld else None
        result, first = self._anonymize_once(data, previous, rng=rng, next_cases=next_cases,
                                             rank=rank)
        while self.regroup_without_withheld and result.suppressed:
            reason = reason or result.details.get("withheld_reason")
            published = set(result.table["case_id"].astype(str))
            keep = data.frame[data.schema.case_id].astype(str).isin(published).to_numpy()
            withheld += int((~keep).sum())
            data = SuperRecords(data.schema, data.frame[keep].reset_index(drop=True),
                                data.hierarchies)
            assert rank is not None
            rank = np.argsort(np.argsort(rank[keep], kind="stable"), kind="stable")
            result, _ = self._anonymize_once(data, previous, rng=rng, next_cases=next_cases,
                                             withheld_before=withheld, rank=rank,
                                             carried=first)
        if not withheld:
            return result
        details = {**result.details, "cases": n, "withheld_cases": withheld,
                   "withheld_reason": result.details.get("withheld_reason", reason)}
        return replace(result, suppressed=withheld, details=details)

    def _anonymize_once(self, data: SuperRecords, previous: Sequence[pd.DataFrame] = (), *,
                        rng: Randomness, next_cases: Collection[str] | None = None,
                        withheld_before: int = 0,
                        rank: np.ndarray | None = None, carried: "_Declared | None" = None
                        ) -> "tuple[AnonymizationResult, _Declared]":
        """One grouping of ``data``; ``withheld_before`` cases of the period were withheld
        already (they count towards ``max_withheld``); ``rank`` breaks the grouping's ties
        (drawn from ``rng`` when not given); ``carried``: the first pass's declared settings
        (computed here over ``data`` when not given), returned beside the result."""
        schema = data.schema
        frame = data.frame
        hierarchies = data.hierarchies or schema.load_hierarchies()
        n = len(frame)
        period = str(frame[schema.period].iloc[0]) if n else ""
        case_ids = frame[schema.case_id].astype(str).to_numpy()
        space, values = _encode_qids(data, hierarchies, missing_as_value=self.missing_as_value)
        new = np.ones(n, dtype=bool)
        covered = 0
        if self.cover is not None and n:
            new, covered = _cover_old_cases(space, values, case_ids, period, previous,
                                            hierarchies, schema, latest=self.cover == "latest",
                                            lifespan=self.lifespan, kinds=self.cover_kinds)
        accountant = Accountant(scope="case", units=n)  # what the mechanisms that run report
        hook_details = dict(self.before_grouping(data, space, values, rng, accountant))
        private = dict(hook_details.pop(OPERATOR_ONLY, {}))
        space = _with_ranges(space, values)
        md = self.md_flags(data, next_cases)
        anchor, pool = self.anchors_and_pool(new, md)

        # Sensitive values: terms pooled over the sensitive columns (001: S_r = INDI_PT ∪ PT).
        per_column = {c: frame[c].tolist() for c in schema.sensitive}
        tuples_only = all(set(map(type, cells)) <= {tuple} for cells in per_column.values())
        if not tuples_only:
            per_column = {c: [v if type(v) is tuple else tuple(v) for v in cells]
                          for c, cells in per_column.items()}
        terms = _SensitiveTerms.of(per_column, n)
        # the columns' codes, for the table's codes (:func:`_table_terms`): only when every
        # cell is a tuple of str, so that a cell's codes stand for the cell as it is
        # formatted (a str cell is published as it is, not as its characters)
        column_codes = (terms.coded_columns()
                        if tuples_only and set(map(type, terms.vocabulary)) <= {str} else None)
        record_terms = terms.record_terms()
        counts = terms.counts()
        all_terms = record_terms
        table = carried.table if carried else self.theta_spec(schema).resolve(counts)
        raised_before = carried.raised if carried else {}
        resolved = table
        k_group, grouping, note = self.grouping_thresholds(table, schema)
        n_anchor = int(anchor.sum())
        actions = {}
        if n and n_anchor < k_group:
            raise InfeasibleError(
                f"Period {period} has {n_anchor} {self.anchor_name()} among {n} cases, fewer than "
                f"k = {k_group}{note}: no group can satisfy {self.privacy_model}.")
        blocked = _infeasible_terms(counts, grouping, n_anchor)
        if raised_before:
            have = {t for t, _, _ in blocked}
            blocked += [(t, counts[t], grouping.get(t)) for t in raised_before
                        if t in counts and t not in have]
        suppressed_terms: set[str] = set()
        raised_now: dict[str, float] = {}
        if blocked:
            # the θ raise-theta gives each blocking term: a point of the public grid at or above
            # its share of the anchors (issue 41: the grid point is all a manifest says of it)
            raised, declared = self.raised_on_grid(blocked, n_anchor)
            if raised_before:
                declared = {t: max(v, raised_before.get(t, 0.0)) for t, v in declared.items()}
                raised = self.grouping_theta(declared)
            if self.on_infeasible == "raise-theta":
                raised_now = dict(declared)
            if self.on_infeasible == "refuse":
                raise InfeasibleError(
                    _infeasible_message(period, blocked, n_anchor, self.anchor_name(),
                                        table.caps),
                    # what raise-theta would declare: a caller (medanon plan) can say the θ
                    # each blocking term needs without parsing the message
                    workable_theta=declared)
            if self.on_infeasible == "raise-theta":
                grouping = grouping.with_overrides(raised)
                table = table.with_overrides(declared)
                # a protected term raised past its cap says so: the operator's cap gave way;
                # the count is operator-only (published.manifest_roles)
                actions["raised_theta"] = {
                    t: {"count": c, "theta": th, "raised_to": declared[t],
                        "grid": RAISE_THETA_GRID,
                        **({"cap": table.caps[t]} if declared[t] > table.caps.get(t, 1.0) else {})}
                    for t, c, th in blocked}
            else:
                suppressed_terms = {t for t, _, _ in blocked}
                actions["suppressed_terms"] = {t: {"count": c, "theta": th} for t, c, th in blocked}
                terms = terms.without(suppressed_terms)
                record_terms = terms.record_terms()
                for t in suppressed_terms:
                    counts.pop(t)
        if self.may_withhold and n:
            _refuse_unplaceable(period, record_terms, counts, anchor, grouping, k_group)
        vocabulary = sorted(counts)
        term_id = {t: i for i, t in enumerate(vocabulary)}
        ptr, ids = terms.csr(vocabulary)
        theta_arr = np.array([grouping.get(t) for t in vocabulary], dtype=float)
        if suppressed_terms:  # ss-records are judged on the terms the release can publish
            per_column = terms.columns()
        extra = self.ha_inputs(data, per_column, new, md,
                               thresholds=carried.ss_min if carried else None)
        extra_details = extra.pop("_details", {})
        ss_min = extra.pop("_ss_min_counts", {})
        suppress_unplaced = not self.may_withhold and self.on_infeasible != "refuse"
        if suppress_unplaced:
            extra["suppress_unplaced"] = True
            extra["ss_cells"] = tuple((*_csr(per_column[c], term_id), m) for c, m in ss_min.items())
        # the columns' terms are coded by now (``ptr, ids``, ``record_terms``): their lists and
        # per-column codes, 40 MiB at 450k cases, are freed before the grouping's peak
        del terms, per_column
        if rank is None:
            rank = rng.generator.permutation(n)
        grouping_input = GroupingInput(space, values["cat"], values["lo"], values["hi"], ptr, ids,
                                       theta_arr, anchor, pool, rank, k_group,
                                       classes_first=self.grouping == "classes-first", **extra)
        result = group_records(grouping_input)
        searched = ""
        if result.unplaced and (self.on_infeasible == "refuse" or withheld_before):
            # before refusing, search further: repair and redraw the tie-breaks (placement.py)
            grouping_input, result, search = search_placement(grouping_input, result,
                                                              rng.generator)
            private["placement_search"] = search.as_details()
            searched = search.describe()
        withheld = sorted(result.unplaced)
        if withheld and (self.on_infeasible == "refuse" or not self.may_withhold):
            raise InfeasibleError(_unplaced_message(period, withheld, record_terms, counts,
                                                    grouping, may_withhold=self.may_withhold,
                                                    groups=result.n_groups, searched=searched))
        if withheld and len(withheld) == n:  # publishing nothing is no success (issue 29)
            raise InfeasibleError(_unplaced_message(period, withheld, record_terms, counts,
                                                    grouping, may_withhold=self.may_withhold,
                                                    groups=0, nothing=True))
        if withheld and len(withheld) + withheld_before > self.max_withheld * (n + withheld_before):
            raise InfeasibleError(_too_many_withheld_message(
                period, withheld, n, record_terms, counts, grouping, k_group, self.max_withheld,
                withheld_before=withheld_before))
        self._check_own_bounds(grouping_input, result.group_of, k_group, result.suppressed)
        suppression = TermSuppression(
            frozenset(suppressed_terms),
            {r: frozenset(vocabulary[s] for s in ids_) for r, ids_ in result.suppressed.items()})
        out, n_groups, table_details = self.build_table(data, space, values, result.group_of,
                                                        suppression, rng, accountant)
        table_details = dict(table_details)
        private.update(table_details.pop(OPERATOR_ONLY, {}))
        table_terms = _table_terms(column_codes, out, case_ids, result.group_of, suppression)
        table, actions = self._published_terms_only(table, actions, out, schema, private,
                                                    table_terms)
        del column_codes
        details = {
            "theta_table": table.to_manifest(),
            "cases": n, "new_cases": int(new.sum()), "old_cases_covered": covered,
            "anchors": n_anchor, "anchor_kind": self.anchor_name(),
            "groups": n_groups, "leftovers_placed": result.leftovers - len(withheld),
            "withheld_cases": len(withheld), "failed_seeds": result.failed_seeds,
            "search_budget_stops": result.budget_stops, "preformed_groups": result.preformed,
            **actions, **extra_details, **hook_details, **table_details,
        }
        if withheld:
            details["withheld_reason"] = ("no group could take these cases without breaking theta"
                                          + (" or alpha" if extra else "") + "; withheld from this release")
        if suppress_unplaced:
            details["cases_with_suppressed_terms"] = len(result.suppressed)
            # which cases the grouping left out and placed by suppression (clustering.
            # _without_late_terms): a function of every case, as the withheld set is
            private["cases_placed_by_suppression"] = sorted(case_ids[result.late].tolist())
            private["grouping_passes"] = result.passes
        if result.suppressed:
            details["suppressed_terms_reason"] = (
                "no group could take these cases with all their terms without breaking theta"
                + (" or alpha" if extra.get("alpha") is not None else "") + "; each is published "
                "in the group nearest to it in the QIDs, with the terms that group cannot take "
                "suppressed (counts."
                "suppressed_terms counts every suppressed term of every case)")
            # which terms: operator-only (a term's count here says a case of the period held it)
            tally: dict[str, int] = {}
            for case_terms in suppression.per_case.values():
                for t in case_terms:
                    tally[t] = tally.get(t, 0) + 1
            private["suppressed_terms_per_case"] = dict(sorted(tally.items()))
        return AnonymizationResult(table=out, n_groups=n_groups, suppressed=len(withheld),
                                   suppressed_terms=suppression.count(all_terms, result.group_of >= 0),
                                   details=details, privacy_charges=accountant.charges,
                                   private_details=private, table_terms=table_terms), \
            carried or _Declared(resolved, raised_now, ss_min or None)

    def _published_terms_only(self, table: ThetaTable, actions: dict, out: pd.DataFrame,
                              schema, private: dict,
                              table_terms: Mapping[str, TermCodes] | None = None,
                              ) -> tuple[ThetaTable, dict]:
        """The θ table and raise-theta record the manifest publishes: per-term entries only for
        terms a published row holds, or that the settings name (a θ file's terms, caps).

        A term that only withheld cases hold would otherwise appear in the manifest (the
        frequency rule lists every term of the input; raise-theta every blocking one), telling
        that a withheld case holds it (issue 41). Its θ bounds no published group, so the
        verifier needs no entry for it; the operator keeps them (``theta_table_unpublished``,
        ``raised_theta_unpublished``).

        ``table_terms``: the codes of ``out``'s sensitive cells (:func:`_table_terms`), when
        they stand for them; the published terms are then read from the codes.
        """
        published: set = set()
        for c in schema.sensitive:
            if c not in out.columns:
                continue
            coded = table_terms.get(c) if table_terms is not None else None
            if coded is not None:
                # the terms of the codes a row holds: the cells' terms, without chaining two
                # million items of 450k tuples into the set (issue 43)
                held = np.zeros(len(coded.vocabulary), dtype=bool)
                held[coded.codes[int(coded.ptr[0]):int(coded.ptr[-1])]] = True
                published.update(coded.vocabulary[i] for i in np.flatnonzero(held).tolist())
            else:   # the terms chained in C (a cell is a tuple, or empty or None: skipped)
                published.update(chain.from_iterable(filter(None, out[c].tolist())))
        # a term the settings name (θ file, cap) but no published row holds keeps the θ the
        # settings alone give it: the rule's band or a raise would tell its input count
        static = self.theta_spec(schema).resolve({})
        named = (set(static.overrides) | set(table.caps)) - published
        overrides = {t: v for t, v in table.overrides.items() if t in published}
        overrides.update({t: static.get(t) for t in named})
        dropped = {t: v for t, v in table.overrides.items() if overrides.get(t) != v}
        raised = dict(actions.get("raised_theta") or {})
        if not dropped and all(t in published for t in raised):
            return table, actions
        private["theta_table_unpublished"] = dict(sorted(dropped.items()))
        actions = dict(actions)
        if raised:
            hidden = {t: e for t, e in raised.items() if t not in published}
            if hidden:
                private["raised_theta_unpublished"] = hidden
            actions["raised_theta"] = {t: e for t, e in raised.items() if t in published}
            if not actions["raised_theta"]:
                del actions["raised_theta"]
        return ThetaTable(table.default, overrides, table.caps), actions

    def _check_own_bounds(self, data: GroupingInput, group_of: np.ndarray, k: int,
                          suppressed: Mapping[int, tuple[int, ...]] | None = None) -> None:
        """The algorithm's own invariant: anchors >= k and σ_s <= floor(θ_s·anchors) per group,
        σ over the terms the release publishes (a term suppressed from a case is not counted)."""
        placed = group_of >= 0
        if not placed.any():
            return
        anchors = np.bincount(group_of[placed], weights=data.anchor[placed].astype(float))
        if anchors.min() < k:
            raise InternalError(f"{self.name}: a group has {anchors.min():.0f} anchors < k.")
        lengths = np.diff(data.term_ptr)
        width = max(len(data.theta), 1)
        pair_type = key_type((int(group_of.max()) + 1) * width)
        pairs: np.ndarray
        if not suppressed and bool(placed.all()):
            # every case placed, none with a suppressed term (a quarter's usual run): every
            # pair counts, and each case's group is repeated for its terms without the pairs'
            # owners and masks (issue 43)
            pairs = np.repeat(group_of.astype(pair_type), lengths)
            pairs *= width
            pairs += data.term_ids
        else:
            owner = np.repeat(np.arange(data.n), lengths)
            keep = placed[owner]
            for r, dropped in (suppressed or {}).items():
                at = np.arange(data.term_ptr[r], data.term_ptr[r + 1])
                keep[at[np.isin(data.term_ids[at], dropped)]] = False
            pairs = group_of[owner[keep]].astype(pair_type)
            pairs *= width
            pairs += data.term_ids[keep]
        if len(pairs):
            # σ of each (group, term) pair: the pairs as one integer each, sorted, counted in
            # runs (a pandas value_counts of the pairs cost ten times as much, issue 43)
            pairs.sort()
            starts = np.flatnonzero(np.r_[True, pairs[1:] != pairs[:-1]])
            sigma = np.diff(starts, append=len(pairs))
            # η is monotone in θ and in the anchors, so no pair's bound is below that of the
            # least θ with the fewest anchors: only the pairs above it are looked up (at k 5
            # and θ 0.2, those with σ >= 2, a few in a hundred)
            least = etas_of(np.array([data.theta.min()]), anchors.min())[0]
            above = np.flatnonzero(sigma > least)
            g, s = np.divmod(pairs[starts[above]].astype(np.int64), width)
            limit = etas_of(data.theta[s], anchors[g])
            if (sigma[above] > limit).any():
                raise InternalError(f"{self.name}: a group exceeds its theta bound.")


# ------------------------------------------------------------------------------------ encoding
#: the grouping's label for a missing categorical value: a leaf under the root, so that it is
#: its own lowest common value and its LCA with any present value is the root
MISSING_LABEL = "\x00missing"


def with_missing_leaf(tax: Taxonomy) -> Taxonomy:
    """``tax`` with :data:`MISSING_LABEL` as one more record value, a child of the root."""
    if MISSING_LABEL in tax:  # pragma: no cover - a control character is never a real label
        raise HierarchyError(f"Hierarchy {tax.name!r} already has the reserved label "
                             f"{MISSING_LABEL!r}.")
    return Taxonomy({**tax.parents, MISSING_LABEL: tax.root}, name=tax.name,
                    values=(*tax.values, MISSING_LABEL))


def _encode_qids(data: SuperRecords, hierarchies: Mapping[str, Taxonomy], *,
                 missing_as_value: bool = True) -> tuple[QidSpace, dict]:
    schema, frame = data.schema, data.frame
    # per QID, its codes (categorical) or its bounds (numeric), None for what it has not
    cat: list[np.ndarray | None] = []
    lo: list[np.ndarray | None] = []
    hi: list[np.ndarray | None] = []
    attrs: list[Attribute] = []
    for qid in schema.qids:
        if qid.kind == "categorical":
            tax = hierarchies[qid.name]
            if missing_as_value:
                tax = with_missing_leaf(tax)
            # each distinct label encoded once (a missing one, -1, as the missing leaf or the
            # root); in order of first appearance, so an unknown label is reported as before
            which, distinct = pd.factorize(frame[qid.name].to_numpy(dtype=object))
            fill = MISSING_LABEL if missing_as_value else tax.root
            codes = tax.encode([*distinct.tolist(), fill]).astype(np.int64)
            cat.append(codes[which])
            lo.append(None)
            hi.append(None)
            attrs.append(Attribute(qid.name, tax))
        else:
            a, b = data.numeric_bounds(qid.name)
            finite_lo, finite_hi = a[~np.isnan(a)], b[~np.isnan(b)]
            vmin = float(finite_lo.min()) if len(finite_lo) else 0.0
            vmax = float(finite_hi.max()) if len(finite_hi) else 0.0
            if missing_as_value:
                # The point [m, m] above every value: hulls with it reach m, which num_term
                # reads as "mixed" (cost 1); it never enters the range max N − min N.
                m = vmax + 2.0 * max(vmax - vmin, 1.0)
                low, high = m, m
            else:
                m, low, high = None, vmin, vmax
            lo.append(np.where(np.isnan(a), low, a).astype(float))
            hi.append(np.where(np.isnan(b), high, b).astype(float))
            cat.append(None)
            attrs.append(Attribute(qid.name, None, 0.0, missing_at=m))
    return QidSpace(attrs), {"cat": tuple(cat), "lo": tuple(lo), "hi": tuple(hi)}


def _present(a: Attribute, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Which numeric values are present (not the missing sentinel)."""
    return np.ones(len(lo), dtype=bool) if a.missing_at is None else hi < a.missing_at


def _with_ranges(space: QidSpace, values: dict) -> QidSpace:
    """Numeric ranges max(N_i) − min(N_i) over the whole (covered) data set (001 Eq. 1).

    A QID whose values, after covering, are all present drops its missing sentinel, so that the
    grouping's loss (``QidSpace.num_term``, a hot path) skips the missing-value test there.
    """
    attrs = []
    for j, a in enumerate(space.attributes):
        if a.numeric:
            lo, hi = values["lo"][j], values["hi"][j]
            ok = _present(a, lo, hi)
            r = float(hi[ok].max() - lo[ok].min()) if ok.any() else 0.0
            attrs.append(Attribute(a.name, None, r, missing_at=None if ok.all() else a.missing_at))
        else:
            attrs.append(a)
    return QidSpace(attrs)


def _cover_old_cases(space: QidSpace, values: dict, case_ids: np.ndarray, period: str,
                     previous: Sequence[pd.DataFrame], hierarchies: Mapping[str, Taxonomy], schema,
                     *, latest: bool, lifespan: int | None,
                     kinds: tuple[str, ...] = ("categorical", "numeric")) -> tuple[np.ndarray, int]:
    """QID-covering (001 Lemma 1 / Algorithm lines 2-18; 002 HA lines 2-6), in place.

    Only QIDs of the given ``kinds`` are widened (PPMS-DP_num covers categorical QIDs only,
    PPMS-DP_all none). Returns the "new" flags (case in no earlier release of the life span) and
    how many old cases had their QIDs widened.
    """
    n = len(case_ids)
    here = parse_period(period).ordinal
    frames = []
    for rel in previous:
        if not len(rel):
            continue
        p = parse_period(str(rel["period"].iloc[0])).ordinal
        if p >= here or (lifespan is not None and here - p > lifespan):
            continue
        part = rel[["case_id", *schema.qid_names]].copy()
        part["_ord"] = p
        frames.append(part)
    new = np.ones(n, dtype=bool)
    if not frames:
        return new, 0
    prev = pd.concat(frames, ignore_index=True)
    prev["case_id"] = prev["case_id"].astype(str)
    cases = pd.Index(case_ids)
    if cases.is_unique:
        # each earlier row's case among this period's, found with one hash table: the
        # isin, then the lookup of the rows kept, each built one of 450k CaseIDs (issue 43)
        # (the column itself, a str column already: its object array would be checked and
        # made a str Index again, a quarter of the probe's cost)
        at = cases.get_indexer(prev["case_id"])
        prev = prev[at >= 0].assign(_row=at[at >= 0])
    else:
        prev = prev[prev["case_id"].isin(set(case_ids))]
    prev = prev.sort_values("_ord", ascending=not latest, kind="stable").drop_duplicates("case_id")
    if not len(prev):
        return new, 0
    if "_row" in prev.columns:
        rows = prev["_row"].to_numpy()
    else:
        index = pd.Series(np.arange(n), index=case_ids)
        rows = index.loc[prev["case_id"].to_numpy()].to_numpy()
    new[rows] = False
    widened = np.zeros(len(rows), dtype=bool)
    for j, (qid, a) in enumerate(zip(schema.qids, space.attributes)):
        if qid.kind not in kinds:
            continue
        published = prev[qid.name].fillna("").astype(str).to_numpy()
        if a.taxonomy is not None:  # categorical
            tax = a.taxonomy
            # An empty cell was published for a group of missing values: its own value here
            # (its LCA with a present value is the root, which covers the empty cell).
            empty = MISSING_LABEL if MISSING_LABEL in tax else tax.root
            labels = np.where(published == "", empty, published)
            try:
                codes = tax.encode(labels.tolist()).astype(np.int64)
            except HierarchyError as exc:
                raise HierarchyError(f"An earlier release's {qid.name!r} value is not in the "
                                     f"hierarchy used now: {exc}") from None
            cur = values["cat"][j]
            merged = _pair_lcas(tax, cur[rows], codes)
            widened |= merged != cur[rows]
            cur[rows] = merged
        else:
            lo, hi = values["lo"][j], values["hi"][j]
            # each distinct published cell (a group's interval, on every row of the group)
            # is read once
            which, texts = pd.factorize(published)
            plo = np.empty(len(texts))
            phi = np.empty(len(texts))
            ok = _present(a, lo, hi)
            whole = ((float(lo[ok].min()), float(hi[ok].max())) if ok.any() else (0.0, 0.0))
            for i, text in enumerate(texts.tolist()):
                if text == "" and a.missing_at is not None:
                    plo[i] = phi[i] = a.missing_at
                elif text == "*" and a.missing_at is not None:
                    # "*" allowed any value and a missing one (readers take it as the whole
                    # domain): only "*" covers it, i.e. a hull from a present value up to the
                    # missing point. The present values' range of this period would publish an
                    # interval, and the F-attack would exclude the case from its earlier group
                    # for a target lacking the value or lying outside this period's range.
                    plo[i], phi[i] = whole[0], a.missing_at
                elif text in ("", "*"):
                    plo[i], phi[i] = whole
                else:
                    # (Interval.parse's bounds without the Interval: issue 43)
                    plo[i], phi[i] = interval_bounds_of(text)
            plo, phi = plo[which], phi[which]
            nlo, nhi = np.minimum(lo[rows], plo), np.maximum(hi[rows], phi)
            widened |= (nlo != lo[rows]) | (nhi != hi[rows])
            lo[rows], hi[rows] = nlo, nhi
    return new, int(widened.sum())


# -------------------------------------------------------------------------------- feasibility
def _infeasible_terms(counts: Mapping[str, int], table: ThetaTable,
                      n_anchor: int) -> list[tuple[str, int, float]]:
    """Terms held by more cases than θ_s·N allows (necessary condition, see module docstring)."""
    out = [(t, c, table.get(t)) for t, c in counts.items()
           if c > eta(table.get(t), n_anchor)]
    return sorted(out, key=lambda x: (-x[1] / max(n_anchor, 1) + x[2], x[0]))


def on_grid(x: float, grid: float = RAISE_THETA_GRID) -> float:
    """The smallest multiple of ``grid`` at or above ``x`` (at most 1), rounded to 4 decimals
    so that the manifest shows the grid point as written (0.35, not 0.35000000000000003)."""
    steps = math.ceil(x / grid - 1e-9)
    return min(1.0, round(steps * grid, 4))


def _ceil4(x: float) -> float:
    """Round up to 4 decimals (so that the raised θ is never below the bound)."""
    return min(1.0, math.ceil(x * 10_000 - 1e-9) / 10_000)


def _infeasible_message(period: str, blocked: list[tuple[str, int, float]], n_anchor: int,
                        anchor_name: str, caps: Mapping[str, float] | None = None) -> str:
    caps = caps or {}
    shown = "; ".join(f"{t!r}: {c} cases, theta {th:g}"
                      + (f" (protected, cap {caps[t]:g})" if t in caps else "")
                      + f", smallest workable theta {_ceil4(c / n_anchor):.4f}"
                      for t, c, th in blocked[:_SHOWN])
    more = f" (and {len(blocked) - _SHOWN} more)" if len(blocked) > _SHOWN else ""
    return (f"Period {period} cannot meet theta for {len(blocked)} term(s) with {n_anchor} "
            f"{anchor_name}: {shown}{more}. Raise those thresholds (--on-infeasible raise-theta) "
            "or suppress those terms in this release (--on-infeasible suppress-terms); the "
            "manifest records either choice.")


def _term_counts(term_lists: Iterable[Sequence[str]], only: Collection[str] | None = None,
                 ) -> Counter:
    """How many of the records hold each term (of ``only``, when given), in order of first
    appearance: what the refusal messages name."""
    return Counter(t for ts in term_lists for t in ts if only is None or t in only)


def _smallest_workable(theta: float, k: int) -> str:
    """What lets one case holding a term of threshold ``theta`` into a group of ``k`` anchors."""
    return f"theta >= {_ceil4(1 / k):.4f} or k >= {math.ceil(1 / theta - 1e-9)}"


def _refuse_unplaceable(period: str, record_terms: Sequence[Sequence[str]],
                        counts: Mapping[str, int], anchor: np.ndarray, table: ThetaTable,
                        k: int) -> None:
    """Refuse, before grouping, a period where no group can form at all.

    A group grows until it holds k anchors, and while it grows a term s may appear at most
    floor(θ_s·k) times (``clustering.py``): a term with θ_s < 1/k can enter no growing group.
    When the anchors free of such terms are fewer than k, no group forms and the release would
    publish nothing, whatever 'raise-theta' does (it raises θ only to the term's share, which
    can stay below 1/k). Fewer blocked cases can still join groups that grew past k anchors as
    leftovers; the withheld share after grouping decides those (``max_withheld``).

    Raises:
        InfeasibleError: naming the blocking terms and the smallest workable θ or k.
    """
    blocking = {t for t in counts if eta(table.get(t), k) == 0}
    if not blocking:
        return
    held = np.array([any(t in blocking for t in ts) for ts in record_terms], dtype=bool)
    free_anchors = int((anchor & ~held).sum())
    if free_anchors >= k:
        return
    tally = _term_counts(record_terms, only=blocking)
    top = sorted(tally.items(), key=lambda x: (-x[1], x[0]))[:5]
    shown = "; ".join(f"{t!r}: {c} cases, theta {table.get(t):g}, workable with "
                      f"{_smallest_workable(table.get(t), k)}" for t, c in top)
    more = f" (and {len(tally) - 5} more)" if len(tally) > 5 else ""
    raise InfeasibleError(
        f"Period {period}: {len(tally)} term(s) have theta below 1/k = {1 / k:.4g}, so a group "
        f"of k = {k} can hold none of them, and only {free_anchors} anchor(s) hold none of them, "
        f"fewer than k = {k}, so no group can form: {shown}{more}. Raise those thresholds or "
        f"lower k; nothing was published.")


def _too_many_withheld_message(period: str, withheld: list[int], n: int, record_terms,
                               counts: Mapping[str, int], table: ThetaTable, k: int,
                               max_withheld: float, withheld_before: int = 0) -> str:
    """``withheld`` index this pass's ``n`` cases; ``withheld_before`` cases were withheld by
    earlier passes of the period (their terms are not among those shown)."""
    tally = _term_counts(record_terms[r] for r in withheld)
    top = sorted(tally.items(), key=lambda x: (-x[1], x[0]))[:5]
    shown = "; ".join(f"{t!r}: {c} of them ({counts.get(t, 0)} cases in all, theta "
                      f"{table.get(t):g})" for t, c in top)
    total, cases = len(withheld) + withheld_before, n + withheld_before
    earlier = (f" ({withheld_before} of them withheld before the published cases were grouped "
               f"again without them)" if withheld_before else "")
    return (f"Period {period}: the grouping would withhold {total} of {cases} cases "
            f"({total / cases:.1%}){earlier}, more than max_withheld {max_withheld:.0%} "
            f"(--max-withheld); their most common terms: {shown or 'none'}. Raise theta for "
            f"those terms, lower k (now {k}), or allow withholding more (the manifest records "
            f"the count); nothing was published.")


@dataclass(frozen=True)
class _SensitiveTerms:
    """The terms of a period's sensitive columns as integer codes, one pass for all cases.

    Building each case's pooled term tuple, the term counts and the grouping's CSR arrays term
    by term in Python was about a tenth of a release's CPU outside the grouping at 100k cases
    (issue 30). The codes index a sorted vocabulary, so code order is string order and every
    tuple built back from codes is sorted as ``sorted(set(...))`` sorts it.

    Attributes:
        vocabulary: every term of the columns, sorted (terms removed later keep their code).
        owner, code: per column, the case and term code of each cell item, in cell order.
        n: the number of cases.
    """

    vocabulary: list
    owner: dict[str, np.ndarray]
    code: dict[str, np.ndarray]
    n: int

    @classmethod
    def of(cls, per_column: Mapping[str, Sequence[tuple]], n: int) -> "_SensitiveTerms":
        # Each distinct term object is hashed and coded once (:func:`distinct_objects`): the
        # store shares one str per term among every cell and column holding it, so a 450k
        # quarter's two million term cells hold a few tens of thousands of objects (issue 43).
        lengths = {c: np.fromiter(map(len, cells), dtype=np.int64, count=n)
                   for c, cells in per_column.items()}
        items = np.fromiter(chain.from_iterable(chain.from_iterable(per_column.values())),
                            dtype=object, count=int(sum(int(v.sum()) for v in lengths.values())))
        item_of, first = distinct_objects(items)
        terms = items[first].tolist()
        vocabulary = sorted(set(terms))
        code_of = {t: i for i, t in enumerate(vocabulary)}
        codes = np.fromiter(map(code_of.__getitem__, terms), dtype=np.int64,
                            count=len(terms))[item_of]
        owner, code = {}, {}
        start = 0
        for c in per_column:
            owner[c] = np.repeat(np.arange(n, dtype=np.int64), lengths[c])
            code[c] = codes[start:start + len(owner[c])]
            start += len(owner[c])
        return cls(vocabulary, owner, code, n)

    def without(self, removed: Collection[str]) -> "_SensitiveTerms":
        """The same cells with the terms ``removed`` taken out of every one."""
        dropped = np.zeros(len(self.vocabulary), dtype=bool)
        dropped[[i for i, t in enumerate(self.vocabulary) if t in removed]] = True
        keep = {c: ~dropped[self.code[c]] for c in self.code}
        return _SensitiveTerms(self.vocabulary, {c: o[keep[c]] for c, o in self.owner.items()},
                               {c: k[keep[c]] for c, k in self.code.items()}, self.n)

    @cached_property
    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Case and code of each distinct (case, term), sorted by case then term."""
        width = max(len(self.vocabulary), 1)
        # int32 keys when they fit (a 450k quarter's do); each column's keys come sorted when
        # its cells' codes increase (the store's do), and a stable sort then merges the
        # columns' runs: 35 rather than 49 ms at 450k cases, the same distinct keys (issue 43)
        pair_type = key_type(self.n * width)
        keys: list[np.ndarray] = [np.zeros(0, dtype=pair_type)]
        for c, owner in self.owner.items():
            key: np.ndarray = owner.astype(pair_type)
            key *= width
            key += self.code[c].astype(pair_type, copy=False)
            keys.append(key)
        pairs = distinct_sorted(np.concatenate(keys), kind="stable")
        owner_of, code_of = np.divmod(pairs, width)
        return owner_of.astype(np.int64, copy=False), code_of.astype(np.int64, copy=False)

    def record_terms(self) -> "_CaseTerms":
        """Each case's terms pooled over the columns: ``tuple(sorted(set().union(...)))``."""
        owner, code = self._pairs
        return _CaseTerms(self.vocabulary, owner, code, self.n)

    def counts(self) -> dict:
        """How many cases hold each term, in order of first appearance when the cases' pooled
        terms are read in order (the order the θ rules read the counts in)."""
        _, code = self._pairs
        # per term its count and its first position (np.unique with return_index sorted all
        # the pairs' codes again, stably)
        width = len(self.vocabulary)
        tally = np.bincount(code, minlength=width)
        first = np.full(width, len(code), dtype=np.int64)
        np.minimum.at(first, code, np.arange(len(code), dtype=np.int64))
        present = np.flatnonzero(tally)
        order = present[np.argsort(first[present], kind="stable")]
        return {self.vocabulary[c]: int(k) for c, k in zip(order.tolist(),
                                                              tally[order].tolist())}

    def csr(self, vocabulary: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """(pointer, ids) of each case's pooled terms, ids indexing ``vocabulary`` (a sorted
        subset of this vocabulary holding every term still present)."""
        owner, code = self._pairs
        position = np.searchsorted(np.array(vocabulary, dtype=object),
                                   np.array(self.vocabulary, dtype=object)) if len(vocabulary) \
            else np.zeros(len(self.vocabulary), dtype=np.int64)
        ptr = np.zeros(self.n + 1, dtype=np.int64)
        ptr[1:] = np.cumsum(np.bincount(owner, minlength=self.n))
        return ptr, position[code].astype(np.int64)

    def coded_columns(self) -> dict[str, TermCodes]:
        """Each column's cells as codes into the (sorted) vocabulary, in their order."""
        out = {}
        for c, owner in self.owner.items():
            ptr = np.zeros(self.n + 1, dtype=np.int64)
            np.cumsum(np.bincount(owner, minlength=self.n), out=ptr[1:])
            code = self.code[c]
            out[c] = TermCodes(self.vocabulary, ptr,
                               code.astype(np.int32) if len(self.vocabulary) < 2**31 else code)
        return out

    def columns(self) -> dict[str, list[tuple]]:
        """Each column's cells as tuples (in their order, less any removed term)."""
        return {c: _tuples(self.vocabulary, self.owner[c], self.code[c], self.n)
                for c in self.owner}


class _CaseTerms(Sequence):
    """Each case's pooled terms (:meth:`_SensitiveTerms.record_terms`), a tuple made when a
    case is read: the sequence is read whole only on a refusal's path, and a tuple per case
    made up front was about half a second of a 450k-case quarter's method, twice (issue 43).
    Iterating it makes every tuple once (as the list did).

    It is held through the grouping (the refusals and the suppressed-term count read it
    after): the cases' bounds stand for the pairs' owners, and the codes are kept as int32
    when they fit (24 of 32 MiB less at 450k cases, issue 43)."""

    def __init__(self, vocabulary: list, owner: np.ndarray, code: np.ndarray, n: int) -> None:
        self._vocabulary, self._n = vocabulary, n
        self._code = (code.astype(np.int32) if len(vocabulary) <= np.iinfo(np.int32).max
                      else code)
        self._bounds = np.zeros(n + 1, dtype=np.int64)
        self._bounds[1:] = np.cumsum(np.bincount(owner, minlength=n))

    @property
    def _owner(self) -> np.ndarray:
        """The case of each (case, term) pair (the pairs are grouped by case)."""
        return np.repeat(np.arange(self._n, dtype=np.int64), np.diff(self._bounds))

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, r):  # an int position (the readers index cases, never slice)
        r = range(self._n)[r]  # an int in range, a negative one counted from the end
        a, b = int(self._bounds[r]), int(self._bounds[r + 1])
        vocabulary = self._vocabulary
        return tuple(vocabulary[c] for c in self._code[a:b].tolist())

    def __iter__(self):
        return iter(_tuples(self._vocabulary, self._owner, self._code, self._n))

    def removed(self, suppression: TermSuppression, placed: np.ndarray) -> int:
        """:meth:`TermSuppression.count` of these cases' terms: the release-wide terms
        counted over the placed cases' (case, term) pairs at once (each pair is distinct),
        then each placed case's own terms that are not release-wide."""
        wide = suppression.release_wide
        is_wide = np.fromiter((t in wide for t in self._vocabulary), dtype=bool,
                              count=len(self._vocabulary))
        placed = np.asarray(placed, dtype=bool)
        total = int((is_wide[self._code] & placed[self._owner]).sum()) if len(self._code) else 0
        for r, extra in suppression.per_case.items():
            if extra and placed[r]:
                total += len((extra - wide).intersection(self[r]))
        return total


def _tuples(vocabulary: list, owner: np.ndarray, code: np.ndarray, n: int) -> list[tuple]:
    """One tuple of terms per case from (case, code) items grouped by case, in their order."""
    bounds = np.zeros(n + 1, dtype=np.int64)
    bounds[1:] = np.cumsum(np.bincount(owner, minlength=n))
    terms = np.array(vocabulary + [None], dtype=object)[code].tolist()
    return [tuple(terms[a:b]) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def _csr(cells: Sequence[Sequence[str]], term_id: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(pointer, term ids) of one sensitive column, one row per case."""
    ptr = np.zeros(len(cells) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(v) for v in cells])
    ids = np.fromiter((term_id[t] for v in cells for t in v), dtype=np.int64, count=int(ptr[-1]))
    return ptr, ids


def _unplaced_message(period: str, withheld: list[int], record_terms, counts, table: ThetaTable,
                      *, may_withhold: bool, groups: int, nothing: bool = False,
                      searched: str = "") -> str:
    """The refusal for cases the grouping left unplaced; ``searched``: what the refuse path's
    further search tried (:meth:`placement.PlacementSearch.describe`), so that the message
    claims no more than that search established."""
    tally = _term_counts(record_terms[r] for r in withheld)
    top = sorted(tally.items(), key=lambda x: -x[1])[:5]
    shown = ", ".join(f"{t!r} ({c} of them; {counts.get(t, 0)} cases in all, theta {table.get(t):g})"
                      for t, c in top)
    if nothing:
        remedy = ("No group could be formed at all: lower k or raise theta. A release that "
                  "publishes no case is refused whatever max_withheld allows.")
    elif may_withhold:
        remedy = ("Lower k, raise theta, or allow withholding them with --on-infeasible "
                  "raise-theta or suppress-terms (the manifest records the withheld count).")
    elif groups:
        remedy = ("Lower k, raise theta or alpha, or allow suppressing the terms that block them "
                  "with --on-infeasible raise-theta or suppress-terms (the manifest counts them): "
                  "HA never withholds cases, because a withheld case would change which cases of "
                  "the previous release stop (md).")
    else:
        remedy = ("No group could be formed at all, so suppressing terms cannot help: lower k, or "
                  "raise theta or alpha. HA never withholds cases, because a withheld case would "
                  "change which cases of the previous release stop (md).")
    searched = f" ({searched})" if searched else ""
    return (f"Period {period}: the grouping could not place {len(withheld)} case(s) in any group "
            f"without breaking the thresholds{searched}; their most common terms: "
            f"{shown or 'none'}. {remedy}")


# ---------------------------------------------------------------------------------- the table
def _release_table(data: SuperRecords, space: QidSpace, values: dict, group_of: np.ndarray,
                   suppressed_terms: TermSuppression) -> pd.DataFrame:
    """One row per placed case, QIDs generalized to the group's lowest common value."""
    schema = data.schema
    placed = np.flatnonzero(group_of >= 0)
    groups = group_of[placed]
    # Number groups 1..G in order of their first case in the period's case order
    # (pd.unique keeps that order); ``number`` is each row's group as 0..G-1.
    label_of = np.empty(groups.max() + 1 if len(groups) else 0, dtype=np.int64)
    in_order = pd.unique(groups)
    label_of[in_order] = np.arange(1, len(in_order) + 1)
    number = label_of[groups] - 1
    first = first_appearances(number)
    runs = _GroupBounds(number, first)
    out = case_columns(data, placed, label_of[groups])
    for j, (qid, a) in enumerate(zip(schema.qids, space.attributes)):
        if a.taxonomy is None:  # numeric
            lo = runs.least(values["lo"][j][placed])[number]
            hi = runs.greatest(values["hi"][j][placed])[number]
            missing = ~_present(a, lo, hi)
            if a.missing_at is None or not missing.any():  # (no sentinel: nothing is missing)
                out[qid.name] = pd.arrays.IntervalArray.from_arrays(lo, hi, closed="both")
                continue
            # one Interval per distinct (lo, hi), held by every row with those bounds (an
            # Interval per row was a third of this step at 450k cases, and formatting then
            # reads each object once)
            lo_g, hi_g, missing_g = lo[first], hi[first], missing[first]
            cells = np.empty(len(first), dtype=object)
            pair, at = distinct_bounds(lo_g[~missing_g], hi_g[~missing_g])
            intervals = np.empty(len(at), dtype=object)
            intervals[:] = list(pd.arrays.IntervalArray.from_arrays(
                lo_g[~missing_g][at], hi_g[~missing_g][at], closed="both"))
            cells[~missing_g] = intervals[pair]
            # a group of missing values only is published empty (None), a group that mixes
            # missing and present values as SUPPRESSED
            cells[missing_g] = None
            cells[missing_g & ~(lo_g >= a.missing_at)] = SUPPRESSED
            out[qid.name] = cells[number]
        else:
            # each group's LCA decoded once (group_lub's, per group rather than per row)
            codes = values["cat"][j][placed]
            lub = _pair_lcas(a.taxonomy, runs.least(codes), runs.greatest(codes))
            labels = np.asarray(a.taxonomy.decode(lub), dtype=object)
            labels[labels == MISSING_LABEL] = None  # a group of missing values: published empty
            out[qid.name] = labels[number]
    add_published_columns(out, data, placed, suppressed_terms)
    return out


@dataclass(frozen=True)
class _GroupBounds:
    """The least and the greatest value of each group of a table's rows, by one unbuffered
    ``fmin.at``/``fmax.at`` over the rows from each group's first value (a pandas
    ``groupby(...).transform`` per QID and bound hashed the groups six times, a third of
    building a 450k-case table; a stable sort of the rows by group for ``reduceat`` cost
    twice the ``.at`` passes; issue 43)."""

    number: np.ndarray  # each row's group, 0 .. G - 1, each on some row
    first: np.ndarray   # each group's first row

    def least(self, values: np.ndarray) -> np.ndarray:
        """Per group, its least value; a NaN is skipped unless the group holds only NaN (as
        pandas' ``min`` reads it: ``fmin`` keeps the number of a NaN and a number)."""
        out = values[self.first]  # (a copy: fancy indexing)
        np.fmin.at(out, self.number, values)
        return out

    def greatest(self, values: np.ndarray) -> np.ndarray:
        """Per group, its greatest value (NaN as :meth:`least` reads it)."""
        out = values[self.first]
        np.fmax.at(out, self.number, values)
        return out


def case_columns(data: SuperRecords, placed: np.ndarray, group_labels: np.ndarray) -> pd.DataFrame:
    """The first columns of a release table: ``period, case_id, group`` of the placed cases."""
    schema, frame = data.schema, data.frame
    labels = np.asarray(group_labels)
    if labels.dtype.kind in "iu":
        # each group's text made once and held by its rows (numpy's text of an integer is
        # Python's): a text per row cost as much again, and its memory
        which, distinct = pd.factorize(labels)
        text = np.array([str(v) for v in distinct.tolist()], dtype=object)[which]
    else:
        text = labels.astype(str)
    return pd.DataFrame({"period": _placed_cells(frame[schema.period].to_numpy(), placed),
                         "case_id": _placed_cells(frame[schema.case_id].astype(str).to_numpy(),
                                                  placed),
                         "group": text})


def _placed_cells(cells: np.ndarray, placed: np.ndarray) -> np.ndarray:
    """``cells[placed]``, without the gather when every case is placed (``placed`` is 0, 1, 2,
    ...: a period without withheld cases, the usual one): the column's own array, which the
    table's frame and columns copy as they copied the gathered one (a gather of each of a 450k
    table's ten object columns cost a fifth of building it, issue 43)."""
    return cells if len(placed) == len(cells) and is_identity(placed) else cells[placed]


def add_published_columns(table: pd.DataFrame, data: SuperRecords, placed: np.ndarray,
                          suppressed_terms: TermSuppression) -> None:
    """Add the sensitive (minus suppressed terms), multi, insensitive and date columns, in
    place."""
    schema, frame = data.schema, data.frame
    for name in schema.sensitive:
        cells = _placed_cells(frame[name].to_numpy(dtype=object), placed)
        if suppressed_terms:
            cells = _without_terms(cells, placed, suppressed_terms)
        table[name] = pd.Series(cells, dtype=object, index=table.index)
    for name in schema.multi + schema.insensitive + schema.date_columns:
        table[name] = _placed_cells(frame[name].to_numpy(), placed)


def _table_terms(coded: Mapping[str, TermCodes] | None, table: pd.DataFrame,
                 case_ids: np.ndarray, group_of: np.ndarray,
                 suppressed: TermSuppression) -> dict[str, TermCodes] | None:
    """The codes of the release table's sensitive cells (``AnonymizationResult.table_terms``),
    from the codes of the super records' cells (``coded``, row for row of the super records):
    the placed cases' rows, in the table's order, without their suppressed terms, as
    :func:`add_published_columns` writes the table's tuples.

    None when the table is not one row per placed case in their order (a method whose table
    is built otherwise), or when a sample of its cells differs from its codes
    (:func:`~medanon.data.terms.codes_of`): the gate then splits the candidate's text, as
    before (issue 43).
    """
    if coded is None:
        return None
    placed = np.flatnonzero(group_of >= 0)
    if (len(table) != len(placed) or "case_id" not in table.columns
            or not np.array_equal(table["case_id"].to_numpy(dtype=object),
                                  case_ids[placed])):
        return None
    found: dict[str, TermCodes] = {}
    for name, codes in coded.items():
        if name not in table.columns:
            return None
        taken = codes if len(placed) == len(codes) else codes.take(placed)
        if suppressed:
            vocabulary = taken.vocabulary
            wide = np.fromiter((t in suppressed.release_wide for t in vocabulary), dtype=bool,
                               count=len(vocabulary))
            dropped = wide[taken.codes]
            for i in np.flatnonzero(np.isin(placed, list(suppressed.per_case))).tolist():
                own = suppressed.of(int(placed[i]))
                a, b = int(taken.ptr[i]), int(taken.ptr[i + 1])
                dropped[a:b] |= np.fromiter((vocabulary[c] in own
                                             for c in taken.codes[a:b].tolist()),
                                            dtype=bool, count=b - a)
            if dropped.any():
                taken = taken.without(dropped)
        if codes_of({name: taken}, table[name].to_numpy(dtype=object), name) is None:
            return None
        found[name] = taken
    return found


def _without_terms(cells: np.ndarray, placed: np.ndarray,
                   suppressed: TermSuppression) -> np.ndarray:
    """Each cell (of the case at that position of ``placed``) as a tuple without its
    suppressed terms: the release-wide ones worked out once per distinct cell object, a
    case's own ones for that case."""
    which, first = distinct_objects(cells)
    wide = suppressed.release_wide
    kept = np.fromiter((tuple(t for t in v if t not in wide) for v in cells[first].tolist()),
                       dtype=object, count=len(first))
    out = kept[which]
    if suppressed.per_case:
        for i in np.flatnonzero(np.isin(placed, list(suppressed.per_case))).tolist():
            terms = suppressed.of(int(placed[i]))
            out[i] = tuple(t for t in cells[i] if t not in terms)
    return out


def group_lub(taxonomy: Taxonomy, codes: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per record, the lowest common ancestor of its group's codes."""
    # In pre-order numbering the LCA of a set is the LCA of its smallest and largest code.
    s = pd.Series(codes)
    low = s.groupby(groups).transform("min").to_numpy()
    high = s.groupby(groups).transform("max").to_numpy()
    return _pair_lcas(taxonomy, low, high)


def _pair_lcas(taxonomy: Taxonomy, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per position, the code of the lowest common ancestor of codes ``a`` and ``b``, each
    distinct pair looked up once (found by hashing one integer key per pair: np.unique over
    stacked rows sorted them at several times the cost)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if not len(a):
        return np.zeros(0, dtype=np.int64)
    which, keys = pd.factorize((a << 32) | b)
    lub = np.array([taxonomy.lca_codes([x >> 32, x & 0xFFFFFFFF]) for x in keys.tolist()],
                   dtype=np.int64)
    return lub[which]

