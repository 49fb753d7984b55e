"""Independent checker of published series: PPMS(k, θ*)-bounding and PPMS(k, θ, α)-bounding.

The checker reads only what was **published**: the release rows as strings (``design.md``,
"Published release format"), never an algorithm's bookkeeping (design rule 6). It replays the
attacks of the papers on a whole series and tells, group by group, whether the privacy model
still holds. It is the oracle of the algorithms' property tests and of the verify gate.

References:
    001: Wang & Lin, JMIR Med Inform 2021;9(10):e28752, PPMS(k, θ*)-bounding, B-, F- and
    L-attacks, DIR and DSR (Eqs. 10-11); ``algorithms.md`` §1.3 (Lemma 2) and §1.6.
    002: Huang et al., PLOS ONE 2021, PPMS(k, θ, α)-bounding (Definitions 5-7), the MD- and
    SS-attacks, the four attacker views GV1-GV4 and SSGR.

Semantics (a conservative worst case over all targets)
------------------------------------------------------
Let R_i be a release of the series and g one of its QID-groups (rows sharing ``group``). Each row
is one case (super record). For a record r of g with case c:

* **old** (excludable by the B- and the L-attack): c appears in an earlier release R_h with
  ``ordinal(i) - ordinal(h) <= lifespan`` (any earlier release when ``lifespan`` is None). 001
  lets the attacker exclude every old CaseID, whatever its QID value (NC-bounding), so the B-attack
  needs no covering test here.
* **forward** (excludable by the F-attack): c appears in a later release R_j with
  ``ordinal(j) - ordinal(i) <= lifespan`` (any later release when None) whose published QID value
  of c does **not cover** r's published value in R_i on some attribute (categorical: the later
  label is not an ancestor-or-self of the earlier one; numeric: the later interval does not
  contain the earlier one). The target may be any point of r's published region, so a later value
  that misses part of it lets the attacker exclude r for some target.
* **md** (excludable by 002's MD-attack, only with ``md=True``): c appears in the release of the
  next period (``ordinal(i) + 1``). When the series holds no release of the next period the MD
  part cannot be checked for R_i: its ``md_checked`` is False and the MD exclusions and views are
  skipped (this is not a failure).

X is the union of the excludable records (old, forward, and md when checked), kept = g \\ X.
One attacker is assumed to hold all of this background knowledge at once.

* **k** (DIG, "dangerous identity group"): |kept| < k.
* **θ** (DSG, "dangerous sensitivity group"): for a term s present in g, the attacker may drop any
  subset E ⊆ X; the worst case keeps every excludable record having s and drops the others, so
  the confidence is ``σ_s(g) / (|kept| + σ_s(g ∩ X))``. A violation when that exceeds θ_s
  (with a 1e-12 tolerance), or when nothing is kept while s occurs in g. 001's Lemma 2 bound
  ``σ_s(g) <= θ_s · |NC(g)|`` (X = old records, ``algorithms.md`` §1.3) drops σ_s(g ∩ X) from
  the denominator: a slightly stricter sufficient condition, so groups built by it pass here.
  σ_s counts records (cases); a case's terms are the union of all sensitive columns, so a term
  present in two columns of one case counts once.
* **α** (SSG, "substantial symptoms group", only when ``alpha`` is given): the views of 002 are
  GV1 = new & md-records, GV2 = new records, GV3 = md-records, GV4 = g, where new = not old and an
  md-record's case does **not** appear in the next period's release. An ss-record has, in some
  column c of ``ss_min_counts[period]``, at least the given number of distinct terms. A violation
  when some view with |GV_x| > 0 has ``|ss ∩ GV_x| / |GV_x| > α``. GV1 and GV3 need the next
  release: they are checked only when MD is checked (``md=True`` and the next period is in the
  series); otherwise only GV2 and GV4 are.

DIR, DSR and SSGR of a release are the numbers of DIGs, DSGs and SSGs over the number of groups
(0 without groups). A release is ok without any violation; the series is ok when every reported
release is.

Published cells: a categorical QID holds a node label of its hierarchy (root ``*``); a numeric
QID holds a number (``58.05``) or an inclusive interval (``[45-60]``). The suppression mark ``*``
stands for the whole domain (categorical root; numeric (-inf, inf)), missing included; an empty
cell (or a missing value) says the value is *missing*: a group whose records mix it with another
value is malformed, and a later release that publishes a case's cell empty F-excludes the case
from an earlier group whose cell is not empty (issue 29). Multi-valued columns hold terms joined
with ``|``; surrounding spaces are ignored and an empty cell has no term.

Deviations and choices (neither paper gives a published-data checker):

* F compares a record's own published value; in a proper release all records of a group share
  it. Releases of per-record (e.g. DP-perturbed) values are therefore checked very strictly.
* ``lifespan`` bounds both directions (old and forward), as 001's CaseID life span x does.
* α without ``md`` checks GV2 and GV4 only (the md-views belong to the MD-attack).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import cast

import numpy as np
import pandas as pd

from .._validation import check_fraction, check_int
from ..periods import parse_period
from ..errors import InputFormatError, PrivacyViolation, SchemaError, ValidationError
from ..hierarchies import Taxonomy
from ..published.case_ids import CASE_ID_MODES, case_ids_entry
from ..published.cells import QidInfo, cell_strings, term_pairs
from ..published.links import ReleaseView, group_conflicts, link, read_view, row_periods
from ..data.terms import key_type
from ..published.series import PublishedSeries
from .theta import ThetaTable

__all__ = ["GroupCheck", "PeriodCheck", "QidInfo", "SeriesCheck", "check_published", "check_series",
           "qids_from_schema", "refuse_malformed_groups"]

_OWNER = "check_series"
_TOL = 1e-12
_FIXED = ("period", "case_id", "group")
_ALL_VIEWS = ("GV1", "GV2", "GV3", "GV4")
_SHOWN = 5


# ------------------------------------------------------------------------------------ results
def qids_from_schema(schema, hierarchies: Mapping[str, Taxonomy] | None = None,
                     ) -> tuple[QidInfo, ...]:
    """The :class:`QidInfo` of every QID of a :class:`medanon.data.schema.Schema`.

    Args:
        schema: The schema (its ``qids`` give names and kinds).
        hierarchies: Taxonomy per categorical QID; default ``schema.load_hierarchies()``.
    """
    if hierarchies is None:
        hierarchies = schema.load_hierarchies()
    return tuple(QidInfo(q.name, q.kind, hierarchies[q.name] if q.kind == "categorical" else None)
                 for q in schema.qids)


@dataclass(frozen=True)
class GroupCheck:
    """The verdict on one QID-group of one release.

    Attributes:
        period: Period label of the release.
        group: The group's identifier as published.
        size: Records (cases) in the group.
        kept: Records left after removing every excludable record (|g \\ X|).
        excluded: Excludable records, all reasons together (|X|).
        excluded_old: Old records (B/L-attacks).
        excluded_forward: Records excludable by the F-attack (may also be old).
        excluded_md: Records excludable by the MD-attack (0 when MD is not checked).
        dig: Dangerous identity group (|kept| < k).
        dsg: Dangerous sensitivity group (some term above its θ).
        ssg: Substantial symptoms group (some view above α).
        violations: Readable reasons, empty when the group is safe.
    """

    period: str
    group: str
    size: int
    kept: int
    excluded: int
    excluded_old: int
    excluded_forward: int
    excluded_md: int
    dig: bool
    dsg: bool
    ssg: bool
    violations: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether the group has no violation."""
        return not self.violations


@dataclass(frozen=True)
class PeriodCheck:
    """The verdict on one release.

    Attributes:
        period: Period label.
        groups: One :class:`GroupCheck` per group, in order of first appearance.
        n_dig: Number of dangerous identity groups.
        n_dsg: Number of dangerous sensitivity groups.
        n_ssg: Number of substantial symptoms groups.
        dir: DIR = n_dig / groups (0 without groups).
        dsr: DSR = n_dsg / groups.
        ssgr: SSGR = n_ssg / groups (0 when α is not checked).
        md_checked: Whether MD exclusions (and the views GV1, GV3) were applied.
        alpha_views: The α views checked (empty when ``alpha`` is None).
        excluded: Per published row (in release order), whether some attack excludes it (X).
    """

    period: str
    groups: tuple[GroupCheck, ...]
    n_dig: int
    n_dsg: int
    n_ssg: int
    dir: float
    dsr: float
    ssgr: float
    md_checked: bool
    alpha_views: tuple[str, ...]
    excluded: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def n_groups(self) -> int:
        table = self.__dict__.get("groups")
        return len(table) if isinstance(table, _GroupTable) else len(self.groups)

    @property
    def ok(self) -> bool:
        """Whether no group of the release has a violation."""
        return self.n_dig == 0 and self.n_dsg == 0 and self.n_ssg == 0

    @property
    def violations(self) -> tuple[str, ...]:
        """Every violation as ``"<period> group <id>: <reason>"``."""
        table = self.__dict__.get("groups")
        if isinstance(table, _GroupTable):  # read off the table, no group built
            return table.violations()
        return tuple(f"{self.period} group {g.group}: {v}"
                     for g in self.groups for v in g.violations)


class _GroupTable:
    """The groups of a :class:`PeriodCheck` as columns, made :class:`GroupCheck` objects when
    ``groups`` is first read.

    The gate reads a release's violations and ratios, never its groups one by one, and a
    :class:`GroupCheck` per group cost it about half a second per 90k groups (issue 43).
    """

    def __init__(self, period: str, labels: np.ndarray, columns: Sequence[np.ndarray],
                 reasons: dict[int, list[str]]) -> None:
        self.period, self.labels, self.columns, self.reasons = period, labels, columns, reasons

    def __len__(self) -> int:
        return len(self.labels)

    def build(self) -> tuple[GroupCheck, ...]:
        return _group_checks(self.period, map(str, self.labels.tolist()),
                             *(c.tolist() for c in self.columns),
                             _violations_of(self.reasons, len(self.labels)))

    def violations(self) -> tuple[str, ...]:
        """What :attr:`PeriodCheck.violations` reads off the built groups: group order, each
        group's reasons in order."""
        return tuple(f"{self.period} group {str(self.labels[g])}: {v}"
                     for g in sorted(self.reasons) for v in self.reasons[g])


class _GroupsOnDemand:
    """``PeriodCheck.groups``: a data descriptor that keeps what ``__init__`` sets in the
    instance's ``__dict__`` and turns a :class:`_GroupTable` into the tuple of groups on the
    first read (so equality, hashing and repr, which read the field, see the tuple)."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__["groups"]
        if isinstance(value, _GroupTable):
            value = value.build()
            obj.__dict__["groups"] = value
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__["groups"] = value


# installed after the dataclass is made, which then reads and writes the field through it
PeriodCheck.groups = _GroupsOnDemand()  # type: ignore[assignment]


@dataclass(frozen=True)
class SeriesCheck:
    """The verdict on a series: one :class:`PeriodCheck` per reported release, oldest first."""

    periods: tuple[PeriodCheck, ...]

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.periods)

    @property
    def violations(self) -> tuple[str, ...]:
        """Every violation of every reported release, as ``"<period> group <id>: <reason>"``."""
        return tuple(v for p in self.periods for v in p.violations)

    def period(self, label: str) -> PeriodCheck:
        """The check of one period (label in any form :func:`parse_period` reads).

        Raises:
            ValidationError: the period was not reported.
        """
        wanted = parse_period(label).label
        for p in self.periods:
            if p.period == wanted:
                return p
        raise ValidationError(f"Period {wanted} was not checked; checked: "
                              f"{', '.join(p.period for p in self.periods) or 'none'}.")

    def raise_if_violated(self) -> None:
        """Raise :class:`PrivacyViolation` listing the first violations, if there are any."""
        found = self.violations
        if found:
            shown = "; ".join(found[:_SHOWN])
            more = f" (and {len(found) - _SHOWN} more)" if len(found) > _SHOWN else ""
            raise PrivacyViolation(f"The series breaks its privacy model in {len(found)} place(s): "
                                   f"{shown}{more}.")


# ---------------------------------------------------------------------------- linking releases
@dataclass
class _Links:
    old: np.ndarray  # case in an earlier release within the lifespan
    forward: np.ndarray  # case in a later release (within lifespan) whose value does not cover
    in_next: np.ndarray  # case in the release of the next period


def _links(series: PublishedSeries, label: str, lifespan: int | None,
           views: dict[str, ReleaseView]) -> tuple[ReleaseView, _Links]:
    """What the checker needs from the one linker of published releases (:mod:`medanon.published.links`)."""
    found = link(series, label, lifespan=lifespan, views=views)
    # F: excluded for some target in the record's published region (an empty cell later is
    # missing, not "anything": issue 29)
    return found.view, _Links(found.old, found.forward_excludable(series.qids), found.in_next)


def refuse_malformed_groups(view: ReleaseView, names: Sequence[str]) -> None:
    """Refuse a release whose groups do not share their generalized QID values.

    Raises:
        InputFormatError: naming the first conflicting groups, QIDs and values.
    """
    conflicts = group_conflicts(view, names)
    if conflicts:
        shown = "; ".join(f"group {g} publishes {q} as {', '.join(map(repr, v[:_SHOWN]))}"
                          for g, q, v in conflicts[:_SHOWN])
        more = f" (and {len(conflicts) - _SHOWN} more)" if len(conflicts) > _SHOWN else ""
        raise InputFormatError(f"Release {view.label} is malformed: the records of a group must "
                               f"share its generalized QID values, but {shown}{more}.")


# ----------------------------------------------------------------------------- checking one
def _ss_flags(rel: ReleaseView, min_counts: Mapping[str, int]) -> np.ndarray:
    flags = np.zeros(rel.n, dtype=bool)
    for col, minimum in min_counts.items():
        rows, _, _ = term_pairs(cell_strings(rel.rows[col]))
        counts = np.bincount(rows, minlength=rel.n)
        flags |= counts >= minimum
    return flags


def _check_release(rel: ReleaseView, links: _Links, *, k: int, theta: ThetaTable, md_checked: bool,
                   alpha: float | None, ss: np.ndarray | None) -> PeriodCheck:
    n_groups = len(rel.group_labels)
    gcode = rel.group
    md_excl = links.in_next if md_checked else np.zeros(rel.n, dtype=bool)
    x = links.old | links.forward | md_excl

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(gcode[mask], minlength=n_groups)

    size = np.bincount(gcode, minlength=n_groups)
    n_x = count(x)
    kept = size - n_x
    n_old, n_fwd, n_md = count(links.old), count(links.forward), count(md_excl)
    reasons: dict[int, list[str]] = {}  # of the groups with a violation
    attacks = "B/F/L/MD" if md_checked else "B/F/L"

    dig = kept < k
    for g in np.flatnonzero(dig):
        reasons.setdefault(int(g), []).append(
            f"only {kept[g]} case(s) remain after {attacks} exclusions (k={k}; {size[g]} in the "
            f"group, {n_x[g]} excludable)")

    # θ: one entry per (group, term) present in the group.
    dsg = np.zeros(n_groups, dtype=bool)
    if rel.term_row.size:
        tnames = rel.term_names
        n_terms = len(tnames)
        # σ and σ of X per distinct (group, term) key, sorted by key, from one sort of the key
        # with X in its lowest bit: the runs of equal keys and their odd entries (np.unique's
        # inverse and two bincounts cost six times as much, issue 43). Made and sorted in
        # place: an array per step was the peak of a 450k quarter's gate (issue 43)
        # (int32 when they fit, as a 450k quarter's do: the scans were most of the θ check)
        pair_type = key_type(2 * n_groups * n_terms)
        marked = np.asarray(gcode, dtype=pair_type)[rel.term_row]
        marked *= n_terms
        marked += rel.term_code.astype(pair_type, copy=False)
        marked *= 2
        marked += x[rel.term_row]
        marked.sort()
        excluded = marked & 1
        marked >>= 1  # the (group, term) key of each pair, sorted
        is_start = np.empty(len(marked), dtype=bool)
        is_start[:1] = True
        np.not_equal(marked[1:], marked[:-1], out=is_start[1:])
        starts = np.flatnonzero(is_start)
        del is_start
        keys = marked[starts]
        # (each array goes once read: a pair's arrays before the key's are made, the gate's peak)
        del marked
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[-1:] = len(excluded)
        sigma = ends - starts
        del starts
        # σ of X per key from the running count of X, made in place (no array more than the
        # pairs'), read at each run's end: a reduceat over a million short runs cost more
        # (issue 43)
        if len(excluded) >= np.iinfo(excluded.dtype).max:
            excluded = excluded.astype(np.int64)   # (a count that int32 would not hold)
        np.cumsum(excluded, out=excluded)
        ends -= 1   # (each run's last pair)
        last = excluded[ends]
        del excluded, ends
        sigma_x = np.diff(last, prepend=0)
        del last
        kg, kt = np.divmod(keys, n_terms)
        del keys
        thresholds = np.array([theta.get(str(t)) for t in tnames], dtype=np.float64)[kt]
        kept_kg = kept[kg]
        denominator = kept_kg + sigma_x
        confidence = sigma / denominator  # > 0: σ_s(g) > 0 implies σ_s(X) > 0 when kept is empty
        bad = (confidence > thresholds + _TOL) | (kept_kg == 0)
        dsg[kg[bad]] = True
        found = np.flatnonzero(bad)
        order = sorted(found.tolist(), key=lambda i: (kg[i], str(tnames[kt[i]])))
        for i in order:
            term, th = str(tnames[kt[i]]), thresholds[i]
            if confidence[i] > th + _TOL:
                text = (f"term {term!r}: confidence {confidence[i]:.4g} "
                        f"({sigma[i]}/{denominator[i]}) > theta {th:g}")
            else:
                text = (f"term {term!r}: confidence 1 ({sigma[i]}/{denominator[i]}), no case "
                        f"remains after {attacks} exclusions (theta {th:g})")
            reasons.setdefault(int(kg[i]), []).append(text)

    # α: 002's views.
    ssg = np.zeros(n_groups, dtype=bool)
    views: tuple[str, ...] = ()
    if alpha is not None and ss is not None:
        new, md_record = ~links.old, ~links.in_next
        masks = {"GV1": new & md_record, "GV2": new, "GV3": md_record,
                 "GV4": np.ones(rel.n, dtype=bool)}
        views = _ALL_VIEWS if md_checked else ("GV2", "GV4")
        for view in views:
            members = count(masks[view])
            with_ss = count(masks[view] & ss)
            share = np.divide(with_ss, members, out=np.zeros(n_groups), where=members > 0)
            for g in np.flatnonzero((members > 0) & (share > alpha + _TOL)):
                ssg[g] = True
                reasons.setdefault(int(g), []).append(
                    f"view {view}: ss share {share[g]:.4g} ({with_ss[g]}/{members[g]}) > alpha "
                    f"{alpha:g}")

    # the groups are built when read (PeriodCheck.groups), the violations read off the table
    groups = cast("tuple[GroupCheck, ...]", _GroupTable(
        rel.label, rel.group_labels, (size, kept, n_x, n_old, n_fwd, n_md, dig, dsg, ssg),
        reasons))
    n_dig, n_dsg, n_ssg = int(dig.sum()), int(dsg.sum()), int(ssg.sum())

    def ratio(c: int) -> float:
        return c / n_groups if n_groups else 0.0

    return PeriodCheck(period=rel.label, groups=groups, n_dig=n_dig, n_dsg=n_dsg, n_ssg=n_ssg,
                       dir=ratio(n_dig), dsr=ratio(n_dsg), ssgr=ratio(n_ssg), md_checked=md_checked,
                       alpha_views=views, excluded=x)


_GROUP_FIELDS = tuple(f.name for f in fields(GroupCheck))


def _violations_of(reasons: Mapping[int, list[str]], n_groups: int) -> list[tuple[str, ...]]:
    """The violations of each group, from those of the groups that have some."""
    out: list[tuple[str, ...]] = [()] * n_groups
    for g, found in reasons.items():
        out[g] = tuple(found)
    return out


def _group_checks(period: str, *columns) -> tuple[GroupCheck, ...]:
    """One :class:`GroupCheck` per group from the columns of its fields after ``period`` (in
    field order), as ``GroupCheck(period, *values)`` builds it.

    The frozen dataclass's ``__init__`` sets each of its twelve fields through
    ``object.__setattr__``, which cost the gate half a second per 90k groups (issue 43); the
    instance's ``__dict__`` is set at once instead (the class has no ``__post_init__`` and no
    slots, so the objects are the same: equal, hashed and shown alike).
    """
    new, put, cls, names = object.__new__, object.__setattr__, GroupCheck, _GROUP_FIELDS

    def make(values: tuple) -> GroupCheck:
        check = new(cls)
        put(check, "__dict__", dict(zip(names, values)))
        return check

    return tuple(map(make, zip(itertools.repeat(period), *columns)))


# ------------------------------------------------------------------------------- validation
def _period_of(frame: object, where: str) -> str:
    """The one period a release given without its label holds."""
    if not isinstance(frame, pd.DataFrame):
        raise ValidationError(f"The 'releases' parameter of {_OWNER} must hold pandas DataFrames; "
                              f"{where} is a {type(frame).__name__}.")
    if "period" not in frame.columns:
        raise SchemaError(f"{where} lacks the column 'period'.")
    found = row_periods(frame, where)
    if len(found) != 1:
        detail = ", ".join(sorted(found)) if found else "none (no rows)"
        raise InputFormatError(f"{where} must hold exactly one period; found {detail}. Pass the "
                               f"releases as a mapping from period label to rows to check an "
                               f"empty release.")
    return found.pop()



def _names(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError(f"The {name!r} parameter of {_OWNER} must be a sequence of column "
                              f"names; got {value!r}.")
    out = tuple(value)
    if not all(isinstance(v, str) and v for v in out) or len(set(out)) != len(out):
        raise ValidationError(f"The {name!r} parameter of {_OWNER} must hold distinct non-empty "
                              f"column names; got {list(out)!r}.")
    return out


def _per_period(value: object, name: str, reported: Sequence[str], shared: type | None,
                what: str) -> dict[str, object]:
    """``value`` for every reported period: one shared value, or a mapping by period label."""
    if shared is not None and isinstance(value, shared):
        return {p: value for p in reported}
    if not isinstance(value, Mapping):
        raise ValidationError(f"The {name!r} parameter of {_OWNER} must be {what}; got "
                              f"{type(value).__name__}.")
    table = {parse_period(p).label: v for p, v in value.items()}
    missing = [p for p in reported if p not in table]
    if missing:
        raise ValidationError(f"The {name!r} parameter of {_OWNER} has no entry for period(s) "
                              f"{', '.join(missing)}.")
    return {p: table[p] for p in reported}


def check_series(releases: Sequence[pd.DataFrame] | Mapping[str, pd.DataFrame], *,
                 qids: Sequence[QidInfo], sensitive: Sequence[str], k: int,
                 theta: ThetaTable | Mapping[str, ThetaTable], lifespan: int | None = None,
                 md: bool = False, alpha: float | None = None,
                 ss_min_counts: Mapping[str, Mapping[str, int]] | None = None,
                 periods: Sequence[str] | None = None, uniform_groups: bool = True,
                 case_ids: str = "real") -> SeriesCheck:
    """Check a published series against PPMS(k, θ*)-bounding, or PPMS(k, θ, α)-bounding.

    The semantics (which records each attack excludes, the worst-case confidence, the α views)
    are described in the module docstring.

    Args:
        releases: The published releases, as DataFrames of strings (one row per case; columns
            ``period, case_id, group``, the QIDs, the sensitive columns, others ignored), each of
            one period; or a mapping from period label to rows (which also admits empty
            releases). Any order; they are sorted by period.
        qids: How to read each QID column.
        sensitive: The multi-valued sensitive columns (terms joined with ``|``).
        k: The k of the model.
        theta: The thresholds θ*, one table for all periods or one per period label.
        lifespan: CaseID life span in periods (001's x): a case seen more than ``lifespan``
            periods before is new again, and releases more than ``lifespan`` periods later do
            not F-attack. None: unlimited.
        md: Apply 002's MD-attack (needs the next period's release).
        alpha: 002's α; None skips the SS check.
        ss_min_counts: Required with ``alpha``: per period label, ``{column: minimum number of
            distinct terms}`` defining an ss-record (any column reaching its minimum).
        periods: The releases to report on (default all); the others still serve as previous
            and later releases.
        uniform_groups: Refuse a reported release whose groups do not share their QID values
            (every QID in ``qids`` is read as generalized; leave perturbed QIDs out of ``qids``).
        case_ids: How the releases publish CaseIDs (a manifest's ``case_ids.mode``):
            ``"real"`` (the default, the cautious reading of releases that do not say) applies
            the CaseID-order rule (a case new to the series whose CaseID sorts below one
            published earlier is not new, :mod:`medanon.published.case_ids`); ``"pseudonym"``
            reads CaseIDs as linkage only.

    Returns:
        A :class:`SeriesCheck` with one :class:`PeriodCheck` per reported period, oldest first.

    Raises:
        ValidationError: a parameter is out of range, or names a period not in the series.
        SchemaError: a release lacks a required column.
        InputFormatError: a release holds several periods, repeats a case_id, has a cell that
            does not parse, or two releases share a period; a group's records publish
            different QID values (with ``uniform_groups``).
        HierarchyError: a categorical cell is not a node of its hierarchy.
    """
    if isinstance(qids, QidInfo) or not isinstance(qids, Sequence) or not all(
            isinstance(q, QidInfo) for q in qids):
        raise ValidationError(f"The 'qids' parameter of {_OWNER} must be a sequence of QidInfo; "
                              f"got {qids!r}.")
    qids = tuple(qids)
    sensitive = _names(sensitive, "sensitive")
    names = [q.name for q in qids]
    columns = [*names, *sensitive]
    if len(set(columns)) != len(columns) or set(columns) & set(_FIXED):
        raise ValidationError(f"The 'qids' and 'sensitive' parameters of {_OWNER} must name "
                              f"distinct columns other than {', '.join(_FIXED)}; got {names!r} and "
                              f"{list(sensitive)!r}.")
    k = check_int(k, name="k", owner=_OWNER, minimum=1)
    if lifespan is not None:
        lifespan = check_int(lifespan, name="lifespan", owner=_OWNER, minimum=1)
    if not isinstance(md, bool):
        raise ValidationError(f"The 'md' parameter of {_OWNER} must be True or False; got {md!r}.")
    if alpha is not None:
        alpha = check_fraction(alpha, name="alpha", owner=_OWNER)
        if ss_min_counts is None:
            raise ValidationError(f"The 'ss_min_counts' parameter of {_OWNER} is required with "
                                  f"'alpha': give per period {{column: minimum term count}} "
                                  f"defining an ss-record.")

    if case_ids not in CASE_ID_MODES:
        raise ValidationError(f"The 'case_ids' parameter of {_OWNER} must be one of "
                              f"{', '.join(CASE_ID_MODES)}; got {case_ids!r}.")
    if isinstance(releases, Mapping):
        items = [(parse_period(p).label, f) for p, f in releases.items()]
    elif isinstance(releases, Sequence) and not isinstance(releases, (str, pd.DataFrame)):
        items = [(_period_of(f, f"Release #{i + 1}"), f) for i, f in enumerate(releases)]
    else:
        raise ValidationError(f"The 'releases' parameter of {_OWNER} must be a sequence of "
                              f"DataFrames or a mapping from period label to DataFrame; got "
                              f"{type(releases).__name__}.")
    labels = sorted((p for p, _ in items), key=lambda p: parse_period(p).ordinal)
    if len(set(labels)) != len(labels):
        twice = sorted({p for p in labels if labels.count(p) > 1})
        raise InputFormatError(f"Several releases hold period(s) {', '.join(twice)}; a series "
                               f"has one release per period.")
    frames = dict(items)
    series = PublishedSeries({p: frames[p] for p in labels},
                             {p: {"case_ids": case_ids_entry(case_ids)} for p in labels}, qids,
                             sensitive, "the series")
    views: dict[str, ReleaseView] = {}
    for p in labels:  # parse every release up front: a bad cell anywhere is an error
        views[p] = read_view(series, p)

    if periods is None:
        reported = labels
    else:
        if isinstance(periods, str) or not isinstance(periods, Sequence):
            raise ValidationError(f"The 'periods' parameter of {_OWNER} must be a sequence of "
                                  f"period labels; got {periods!r}.")
        wanted = {parse_period(p).label for p in periods}
        unknown = sorted(wanted - set(labels))
        if unknown:
            raise ValidationError(f"The 'periods' parameter of {_OWNER} names period(s) "
                                  f"{', '.join(unknown)} that the series does not hold (it holds "
                                  f"{', '.join(labels) or 'none'}).")
        reported = [p for p in labels if p in wanted]

    thetas: dict[str, ThetaTable] = {}
    for p, t in _per_period(theta, "theta", reported, ThetaTable,
                            "a ThetaTable or a mapping from period label to one").items():
        if not isinstance(t, ThetaTable):
            raise ValidationError(f"The 'theta' parameter of {_OWNER} must give a ThetaTable for "
                                  f"period {p} (resolve a ThetaSpec on the period's counts first); "
                                  f"got {type(t).__name__}.")
        thetas[p] = t
    ss_table: dict[str, object] = {}
    if alpha is not None:
        ss_table = _per_period(ss_min_counts, "ss_min_counts", reported, None,
                               "a mapping from period label to {column: minimum term count}")

    return check_published(series, views, reported, k=k, thetas=thetas, lifespan=lifespan,
                           md=md, alpha=alpha, ss_table=ss_table, uniform=uniform_groups)


def check_published(series: PublishedSeries, views: dict[str, ReleaseView], reported: list[str],
                    *, k: int, thetas: Mapping[str, ThetaTable], lifespan: int | None, md: bool,
                    alpha: float | None, ss_table: Mapping[str, object],
                    uniform: bool, final: Collection[str] = ()) -> SeriesCheck:
    """:func:`check_series` on a :class:`PublishedSeries` whose parameters are validated.

    ``views`` caches the parsed releases (read with ``series.qids``); ``reported`` are labels of
    the series, oldest first; ``thetas`` and ``ss_table`` have an entry per reported label.
    ``final`` (with ``md``): releases published as their series' final one (HA's ``final``):
    their MD part is checked as if the next release existed and held none of their cases,
    which is what they were grouped for (a later release that does exist is the caller's
    violation to report, :class:`~medanon.models.periodic.PPMSAlphaModel`).
    """
    ordinals = {parse_period(p).ordinal for p in series.periods}
    checks = []
    for label in reported:
        rel, links = _links(series, label, lifespan, views)
        if uniform:
            refuse_malformed_groups(rel, [q.name for q in series.qids])
        ss = None
        if alpha is not None:
            ss = _ss_flags(rel, _ss_columns(ss_table[rel.label], rel))
        # a final release with no next one: the MD-attack excludes nothing (in_next is empty)
        # and every record is md, so the views GV1 and GV3 are checked as they were grouped
        ends = rel.label in final and rel.ordinal + 1 not in ordinals
        checks.append(_check_release(rel, links, k=k, theta=thetas[rel.label],
                                     md_checked=md and (ends or rel.ordinal + 1 in ordinals),
                                     alpha=alpha, ss=ss))
    return SeriesCheck(tuple(checks))


def _ss_columns(value: object, rel: ReleaseView) -> dict[str, int]:
    if not isinstance(value, Mapping) or not value:
        raise ValidationError(f"The 'ss_min_counts' parameter of {_OWNER} must map period "
                              f"{rel.label} to a non-empty {{column: minimum term count}}; got "
                              f"{value!r}.")
    out = {}
    for col, minimum in value.items():
        if col not in rel.rows.columns:
            raise SchemaError(f"Release {rel.label} lacks the ss column {col!r}.")
        out[col] = check_int(minimum, name=f"ss_min_counts[{rel.label!r}][{col!r}]", owner=_OWNER,
                             minimum=1)
    return out
