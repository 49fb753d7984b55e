"""The refuse path's further search for a complete placement (issue 41, item 8).

The grouping (``clustering.py``) places the leftovers one at a time in the order of a random
rank, each in the group with the least key. A leftover that holds many terms can come last and
find every group already holding one of them, although another order of the same greedy, or a
small change to one group, places it: on a synthetic FAERS-like quarter of 300 cases a case of 24
terms was left out of 58 groups, 11 of which only one member (holding one of its terms) kept it
from (``benchmarks/bench_refuse_placement.py`` measures the verdict). With
``on_infeasible="refuse"`` that made the verdict a coin toss: the release was refused (with the
advice to lower k or raise θ) in one run and published at the requested θ in the next. Before
the refuse path refuses, :func:`search_placement` searches further, in two bounded steps:

1. **Repair** (:func:`repair_unplaced`, not with HA's α): each unplaced case r, in rank order,
   tries every group g, the nearest first (least ΔIL(g, r), then group index). If g takes r as
   it stands, r joins it. Otherwise the members of g that hold every term of r that g blocks are
   tried in rank order: r takes the place of such a member x when g − x + r still has k anchors
   and meets every σ_s <= floor(θ_s·anchors), and x moves to the group (not g) with the least
   (ΔIL·PR, PR, group) key that takes it, as a leftover would (η counted with x). The first such
   move is made. At most :data:`REPAIR_SWAPS` swaps are evaluated per case and
   :data:`REPAIR_SWAPS_PER_GROUPING` in all (each costs one pass over the groups), so the stage
   stays near-linear; a refusal whose search stopped there says so.
2. **Redraws**: while a case is still unplaced, the grouping runs again on the same input with a
   rank permutation drawn from the release's own generator, and is repaired, up to
   :data:`PLACEMENT_ATTEMPTS` groupings in all. The first grouping that places every case is
   kept. The cost is paid only by a period that would otherwise be refused.

When a case is still unplaced, the refusal says what was searched (how many groupings, the
repair and whether it stopped at its budget): it does not claim that no placement exists.

Why this is safe (the privacy model is unchanged):

* Every group of the kept grouping is checked as before: the method's own bounds
  (``ClusteringMethod._check_own_bounds``: k anchors, σ_s <= floor(θ_s·anchors)) and the
  verify gate on the published rows. A swap only ever leaves groups that meet both bounds.
* The kept grouping is a function of what a single run reads: the period's encoded records and
  random permutations from the release's own source (``rng.generator``). Which grouping is kept
  depends on whether earlier ones placed every case, a fact of those same records; nothing
  outside them is read. Under ``refuse`` a published release holds every case of the period, so
  no withheld case's values can steer the choice (the non-interference property (a) of issue 41
  is about withheld cases), and a refused period publishes nothing.
* No mechanism runs again: the DP methods privatize the QIDs before grouping
  (``before_grouping``), once; the redraws regroup the same privatized values, so no ε is spent
  twice and the ledger is unchanged.
* How many groupings ran and how many cases the repair placed are operator-only facts (the
  store's private details, ``medanon inspect``), not manifest items: they are counts of the
  private records that no published row recomputes.
* Under ``raise-theta`` and ``suppress-terms`` the first grouping does not search: a redraw
  kept because the first grouping withheld a case would make the release depend on the
  withheld case's values (what the non-interference property (a) forbids). The grouping of
  the published cases alone that follows a withholding (``ClusteringMethod.anonymize``) does
  search: it reads no withheld case.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from .._validation import check_int
from .clustering import (INF, GroupingInput, GroupingResult, _Group, delta_il, eta, etas_of,
                         group_records)

#: groupings the refuse path runs at most (the first one and the redraws) before it refuses.
PLACEMENT_ATTEMPTS = 4
#: swaps the repair evaluates at most per unplaced case (each one pass over the groups).
REPAIR_SWAPS = 512
#: swaps the repair evaluates at most per grouping, over all its unplaced cases: a period with
#: many unplaced cases is refused in a bounded time.
REPAIR_SWAPS_PER_GROUPING = 8 * REPAIR_SWAPS


@dataclass(frozen=True)
class PlacementSearch:
    """What the refuse path searched before it kept a grouping or refused.

    Attributes:
        attempts: groupings run (1: the first one placed every case; no redraw).
        repaired: cases the repair placed in the kept grouping.
        repair: whether the repair ran (not with HA's α: see :func:`repair_unplaced`).
        budget_stops: unplaced cases whose repair stopped at its swap budget, over all
            groupings.
    """

    attempts: int
    repaired: int
    repair: bool
    budget_stops: int = 0

    def as_details(self) -> dict[str, object]:
        """The operator-only record of the search (counts of the private records)."""
        return {"groupings": self.attempts, "cases_placed_by_repair": self.repaired,
                "repair": self.repair, "repair_budget_stops": self.budget_stops}

    def describe(self) -> str:
        """What was searched, for a refusal: no more than that was established."""
        runs = (f"{self.attempts} groupings with different random tie-breaks"
                if self.attempts > 1 else "one grouping")
        if not self.repair:
            return f"no placement was found in {runs}; the swap repair does not run with alpha"
        stop = (f", stopping at its budget ({REPAIR_SWAPS} swaps per case, "
                f"{REPAIR_SWAPS_PER_GROUPING} per grouping) for {self.budget_stops} case(s)"
                if self.budget_stops else "")
        return (f"no placement was found in {runs}, each followed by a repair that tried every "
                f"group, alone or by swapping the case with one member that moves to another "
                f"group{stop}")


def search_placement(data: GroupingInput, first: GroupingResult, generator: np.random.Generator,
                     *, attempts: int = PLACEMENT_ATTEMPTS, swaps: int = REPAIR_SWAPS
                     ) -> tuple[GroupingInput, GroupingResult, PlacementSearch]:
    """The first of up to ``attempts`` groupings that places every case (see the module
    docstring), starting from ``first`` (the grouping of ``data``, already run).

    Args:
        data: The grouping input of the first grouping.
        first: Its result (``group_records(data)``).
        generator: The release's own generator: each redraw takes one permutation from it.
        attempts: Groupings to run at most, ``first`` included.
        swaps: Swaps the repair evaluates at most per unplaced case.

    Returns:
        The input and result of the kept grouping (when none placed every case: the one that
        left the fewest unplaced, the earliest among equals) and what was searched.
    """
    attempts = check_int(attempts, name="attempts", owner="search_placement", minimum=1)
    repair = data.alpha is None and not data.suppress_unplaced
    stops = 0
    best: tuple[GroupingInput, GroupingResult, int] | None = None
    current, result = data, first
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            current = replace(data, rank=generator.permutation(data.n))
            result = group_records(current)
        placed = 0
        if repair and result.unplaced:
            placed, stopped = repair_unplaced(current, result, swaps=swaps)
            stops += stopped
        if not result.unplaced:
            return current, result, PlacementSearch(attempt, placed, repair, stops)
        if best is None or len(result.unplaced) < len(best[1].unplaced):
            best = (current, result, placed)
    assert best is not None  # attempts >= 1: the first attempt returned or set it
    current, result, placed = best
    return current, result, PlacementSearch(attempts, placed, repair, stops)


def repair_unplaced(data: GroupingInput, result: GroupingResult, *,
                    swaps: int = REPAIR_SWAPS) -> tuple[int, int]:
    """Place ``result``'s unplaced cases by the repair of the module docstring, in place.

    ``result.group_of`` and ``result.unplaced`` are updated; every group keeps k anchors and
    σ_s <= floor(θ_s·anchors) for every term. Does nothing with α (HA's α counters follow the
    order records joined a group in, which a swap would rewrite) or with ``suppress_unplaced``
    (HA places those cases by suppression).

    Returns:
        (cases placed, cases whose search stopped at ``swaps`` swaps).
    """
    if data.alpha is not None or data.suppress_unplaced or not result.unplaced \
            or not result.n_groups:
        return 0, 0
    state = _Groups(data, result.group_of, result.n_groups)
    left, placed, stopped, spent = [], 0, 0, [0]
    for r in sorted(result.unplaced, key=lambda r: int(data.rank[r])):
        outcome = state.place(int(r), swaps, spent, REPAIR_SWAPS_PER_GROUPING)
        if outcome is True:
            placed += 1
        else:
            left.append(r)
            stopped += outcome == "budget"
    result.unplaced = left
    return placed, stopped


class _Groups:
    """The groups of a finished grouping as member lists, σ read from the records' terms."""

    def __init__(self, data: GroupingInput, group_of: np.ndarray, n_groups: int):
        self.data, self.group_of, self.G = data, group_of, n_groups
        self.members: list[list[int]] = [[] for _ in range(n_groups)]
        for r in np.flatnonzero(group_of >= 0).tolist():
            self.members[int(group_of[r])].append(r)
        self.anchors = np.bincount(group_of[group_of >= 0], minlength=n_groups,
                                   weights=data.anchor[group_of >= 0].astype(float)).astype(np.int64)
        lengths = np.diff(data.term_ptr)
        owner = np.repeat(np.arange(data.n), lengths)
        order = np.argsort(data.term_ids, kind="stable")
        cut = np.searchsorted(data.term_ids[order], np.arange(len(data.theta) + 1))
        self._holders = [owner[order[cut[s]:cut[s + 1]]] for s in range(len(data.theta))]
        self.values = [self._value(gi) for gi in range(n_groups)]
        # the groups' values as arrays (the layout of QidSpace.losses_with), kept current
        nattr = len(data.space.attributes)
        self._cat = [None if data.cat[j] is None else
                     np.array([g.cat[j] for g in self.values], dtype=np.int64) for j in range(nattr)]
        self._lo = [None if data.lo[j] is None else np.array([g.lo[j] for g in self.values])
                    for j in range(nattr)]
        self._hi = [None if data.hi[j] is None else np.array([g.hi[j] for g in self.values])
                    for j in range(nattr)]
        self._size = np.array([g.size for g in self.values], dtype=float)
        self._loss = np.array([g.loss for g in self.values])

    # ------------------------------------------------------------------ what a group holds
    def _value(self, gi: int) -> _Group:
        """The group's generalized value and loss (a :class:`_Group` of its members)."""
        members = self.members[gi]
        g = _Group(self.data, members[0])
        for r in members:
            g.add(self.data, r, remaining=True)
        return g

    def sigmas(self, terms: list[int]) -> np.ndarray:
        """σ_s(g) of every group (rows) for ``terms`` (columns), from the current groups."""
        out = np.zeros((self.G, len(terms)), dtype=np.int64)
        for j, s in enumerate(terms):
            at = self.group_of[self._holders[s]]
            out[:, j] = np.bincount(at[at >= 0], minlength=self.G)
        return out

    def meets(self, members: list[int]) -> bool:
        """Whether a group of ``members`` has k anchors and σ_s <= floor(θ_s·anchors) for all s
        (counted from scratch: the test every swap is judged by)."""
        data = self.data
        anchors = int(data.anchor[members].sum())
        if anchors < data.k:
            return False
        counts = Counter(s for r in members for s in data.terms(r))
        return all(c <= eta(float(data.theta[s]), anchors) for s, c in counts.items())

    def deltas(self, r: int) -> np.ndarray:
        """ΔIL(g, r) of every group."""
        data = self.data
        cat, lo, hi = ([None if x is None else x[r] for x in arrays]
                       for arrays in (data.cat, data.lo, data.hi))
        after = data.space.losses_with(cat, lo, hi, self._cat, self._lo, self._hi)
        return delta_il(self._size, self._loss, after)

    # ------------------------------------------------------------------------- the repair
    def home(self, x: int, away: int) -> int | None:
        """The group other than ``away`` with the least (ΔIL·PR, PR, group) key that takes x
        as a leftover (η counted with x), or None."""
        data = self.data
        terms = data.terms(x)
        pr = np.ones(self.G)
        if terms:
            e = etas_of(data.theta[np.asarray(terms)][None, :],
                        (self.anchors + int(data.anchor[x]))[:, None])
            c = self.sigmas(terms) + 1
            fits = c <= e
            pr = pr + np.where(fits, c / np.where(fits, e - c + 1, 1), INF).sum(axis=1)
        pr[away] = INF
        ok = np.flatnonzero(pr < INF)
        if not len(ok):
            return None
        key = self.deltas(x)[ok] * pr[ok]
        return int(ok[np.lexsort((ok, pr[ok], key))[0]])

    def place(self, r: int, swaps: int, spent: list[int], total: int) -> bool | str:
        """Place r (module docstring, step 1): True, False (no group takes it, alone or by a
        swap), or ``"budget"`` (the search stopped at ``swaps`` swaps for r, or at ``total``
        swaps in all, counted in ``spent[0]``)."""
        data = self.data
        terms = data.terms(r)
        order = np.lexsort((np.arange(self.G), self.deltas(r)))
        if terms:
            sigma = self.sigmas(terms)
            theta = data.theta[np.asarray(terms, dtype=np.int64)]
            e = etas_of(theta[None, :], (self.anchors + int(data.anchor[r]))[:, None])
            blocked = sigma + 1 > e
            # a swap can only help where a member holds each blocked term (σ >= 1)
            order = order[~(blocked & (sigma == 0)).any(axis=1)[order]]
        else:
            blocked = np.zeros((self.G, 0), dtype=bool)
        tried = 0
        for gi in order.tolist():
            held = {terms[j] for j in np.flatnonzero(blocked[gi]).tolist()}
            if not held and self.meets(self.members[gi] + [r]):
                self._move(r, gi)
                return True
            for x in sorted(self.members[gi], key=lambda m: int(data.rank[m])):
                if not held <= set(data.terms(x)):
                    continue
                if tried >= swaps or spent[0] >= total:
                    return "budget"
                tried += 1
                spent[0] += 1
                if not self.meets([m for m in self.members[gi] if m != x] + [r]):
                    continue
                self.group_of[r], self.group_of[x] = gi, -1   # x's new home is judged without it
                self._reindex(gi, add=r, remove=x)
                h = self.home(x, away=gi)
                if h is None:
                    self.group_of[r], self.group_of[x] = -1, gi
                    self._reindex(gi, add=x, remove=r)
                    continue
                self._move(x, h)
                return True
        return False

    def _move(self, r: int, gi: int) -> None:
        self.group_of[r] = gi
        self._reindex(gi, add=r)

    def _reindex(self, gi: int, *, add: int, remove: int | None = None) -> None:
        members = self.members[gi]
        if remove is not None:
            members.remove(remove)
            self.anchors[gi] -= int(self.data.anchor[remove])
        members.append(add)
        self.anchors[gi] += int(self.data.anchor[add])
        g = self.values[gi] = self._value(gi)
        for j in range(len(g.cat)):
            # per attribute, either its codes (categorical) or its bounds (numeric) are arrays,
            # as in the group's own value
            codes, lo, hi = self._cat[j], self._lo[j], self._hi[j]
            code, low, high = g.cat[j], g.lo[j], g.hi[j]
            if codes is not None:
                assert code is not None
                codes[gi] = code
            else:
                assert lo is not None and hi is not None and low is not None and high is not None
                lo[gi], hi[gi] = low, high
        self._size[gi], self._loss[gi] = g.size, g.loss
