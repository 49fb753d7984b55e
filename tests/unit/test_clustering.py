"""The shared grouping core: formulas, and the fast grouping against the slow reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from medanon.anonymize import clustering
from medanon.anonymize.clustering import (NEW_MD, NEW_NMD, OLD_MD, OLD_NMD, Attribute,
                                          GroupingInput, QidSpace, delta_il, eta, group_records,
                                          group_reference, ha_ok, ha_update, privacy_risk)
from medanon.anonymize.common import MISSING_LABEL, with_missing_leaf
from medanon.hierarchies import mesh_age_tree, sex_tree


def test_eta_is_floor_of_theta_times_anchors_without_float_surprises():
    assert eta(0.2, 18462) == 3692            # 001's 2007Q1: 0.2 * 18,462 = 3692.4
    assert eta(0.29, 100) == 29               # 0.29 * 100 is 28.999999999999996 in floats
    assert eta(1 / 3, 4) == 1 and eta(1 / 3, 3) == 1 and eta(1 / 3, 2) == 0


def test_privacy_risk_follows_001_eqs_4_and_5():
    # g holds 'a' once; r brings 'a' and 'b'; eta = 2 for both:
    # PR_a = 2 / (2 - 2 + 1) = 2, PR_b = 1 / (2 - 1 + 1) = 0.5, PR = 1 + 2.5.
    assert privacy_risk([0, 1], {0: 1}, {0: 2, 1: 2}) == pytest.approx(3.5)
    assert privacy_risk([], {}, {}) == 1.0                       # the "+1" avoids a zero PR
    assert privacy_risk([0], {0: 2}, {0: 2}) == float("inf")     # sigma would exceed eta


def test_delta_il_is_il_after_minus_il_before():
    # IL(g) = |g| * L(g): a group of 3 with L = 0.5 takes a record that makes L = 0.75.
    assert delta_il(3, 0.5, 0.75) == pytest.approx(4 * 0.75 - 3 * 0.5)
    assert delta_il(3, 0.5, 0.5) == pytest.approx(0.5)         # a covered record still costs L(g)


def test_ha_update_follows_002_procedure_3():
    start = [0, 0, 0, 0, 3, 3, 3, 3]
    assert ha_update(start, NEW_MD, False, False) == start          # nss: nothing changes
    assert ha_update(start, NEW_MD, True, False) == [1, 1, 1, 1, 3, 3, 3, 3]   # reserved slot
    assert ha_update(start, NEW_MD, True, True) == [1, 1, 1, 1, 4, 4, 4, 4]    # remaining record
    assert ha_update(start, NEW_NMD, True, False) == [0, 1, 0, 1, 3, 4, 3, 4]
    assert ha_update(start, OLD_MD, True, False) == [0, 0, 1, 1, 3, 3, 4, 4]
    assert ha_update(start, OLD_NMD, True, False) == [0, 0, 0, 1, 3, 3, 3, 4]
    assert ha_ok([1, 1, 1, 1, 4, 4, 4, 4], 0.25) and not ha_ok([1, 1, 1, 1, 3, 4, 4, 4], 0.25)


def _random_input(n: int, seed: int, mode: str, *, k: int, theta: float, alpha: float | None,
                  missing: bool = False, values: int | None = None, classes_first: bool = False):
    """``values``: draw ages and weights from that many values only (large QID classes)."""
    rng = np.random.default_rng(seed)
    age, sex = mesh_age_tree(), sex_tree()
    if missing:  # missing values as their own value (common._encode_qids)
        age = with_missing_leaf(age)
    ages = age.encode([age.values[i] for i in rng.integers(0, values or len(age.values), n)])
    sexes = sex.encode([sex.values[i] for i in rng.integers(0, len(sex.values), n)])
    weight = rng.integers(40, 40 + (values or 60), n).astype(float)
    sentinel = 100.0 + 2 * 60.0 if missing else None
    if missing:
        weight[rng.random(n) < 0.25] = sentinel
    space = QidSpace([Attribute("age", age), Attribute("sex", sex),
                      Attribute("weight", value_range=60.0, missing_at=sentinel)])
    ptr, ids = [0], []
    for _ in range(n):
        ids += sorted(set(rng.integers(0, 12, rng.integers(0, 4)).tolist()))
        ptr.append(len(ids))
    new, md, ss = rng.random(n) < 0.8, rng.random(n) < 0.7, rng.random(n) < 0.2
    cls = np.where(new, np.where(md, NEW_MD, NEW_NMD), np.where(md, OLD_MD, OLD_NMD))
    anchor = {"ms": np.ones(n, dtype=bool), "ha": new & md}.get(mode, new)
    pool = new if mode == "ppms++" else np.ones(n, dtype=bool)
    return GroupingInput(space, (ages.astype(np.int64), sexes.astype(np.int64), None),
                         (None, None, weight), (None, None, weight.copy()), np.array(ptr),
                         np.array(ids, dtype=np.int64), np.full(12, theta), anchor, pool,
                         rng.permutation(n), k, alpha, cls if alpha else None,
                         ss if alpha else None, classes_first=classes_first)


@pytest.mark.parametrize("mode", ["ms", "ppms", "ppms++", "ha"])
@pytest.mark.parametrize("seed", range(8))
def test_fast_grouping_finds_exactly_the_reference_groups(mode, seed):
    data = _random_input(25 + 9 * seed, seed, mode, k=2 + seed % 3, theta=(0.3, 0.5, 1.0)[seed % 3],
                         alpha=0.5 if mode == "ha" else None, missing=seed % 2 == 1)
    slow, fast = group_reference(data), group_records(data)
    assert np.array_equal(slow.group_of, fast.group_of)
    assert slow.unplaced == fast.unplaced
    assert slow.n_groups == fast.n_groups > 0


@pytest.mark.parametrize("mode", ["ms", "ppms++"])
@pytest.mark.parametrize("seed", range(3))
def test_signed_zeros_are_one_value(mode, seed):
    # cells join equal values, -0.0 == 0.0; the growth step reads a cell's value, not the
    # record's: both signs in one cell must not make the groups' bounds depend on the order
    data = _random_input(40, seed, mode, k=2, theta=1.0, alpha=None)
    weight = np.where(np.random.default_rng(seed).random(data.n) < 0.5, -0.0, 0.0)
    data = dataclasses.replace(data, lo=(None, None, weight), hi=(None, None, weight.copy()))
    assert not any(np.signbit(x).any() for x in (data.lo[2], data.hi[2]))
    assert np.signbit(weight).any()   # the caller's arrays are left as they were
    slow, fast = group_reference(data), group_records(data)
    assert np.array_equal(slow.group_of, fast.group_of) and slow.n_groups == fast.n_groups > 0


@pytest.mark.parametrize("mode", ["ms", "ppms", "ppms++", "ha"])
@pytest.mark.parametrize("seed", range(6))
def test_classes_first_fast_grouping_finds_exactly_the_reference_groups(mode, seed):
    data = _random_input(60 + 15 * seed, seed, mode, k=2 + seed % 3, theta=(0.3, 0.5, 1.0)[seed % 3],
                         alpha=0.5 if mode == "ha" else None, missing=seed % 2 == 1, values=2,
                         classes_first=True)
    slow, fast = group_reference(data), group_records(data)
    assert fast.preformed > 0
    assert np.array_equal(slow.group_of, fast.group_of)
    assert slow.unplaced == fast.unplaced and slow.preformed == fast.preformed


@pytest.mark.parametrize("mode", ["ms", "ppms", "ppms++"])
@pytest.mark.parametrize("seed", range(8))
def test_preforming_by_runs_equals_the_record_by_record_first_fit(mode, seed):
    """The runs of k (checked against η at once) give the groups the first fit gives, both
    where every run meets η and where some run breaks it (θ 0.3 at k 3-4 breaks many)."""
    data = _random_input(200 + 40 * seed, seed, mode, k=2 + seed % 3,
                         theta=(0.3, 0.5, 0.7, 1.0)[seed % 4], alpha=None, values=2 + seed % 2,
                         classes_first=True)
    fast, fast_taken = clustering.preform_classes(data)
    slow, slow_taken = clustering.preform_classes(data, by_runs=False)
    assert np.array_equal(fast_taken, slow_taken)
    assert [g.members for g in fast] == [g.members for g in slow]
    assert [g.sigma for g in fast] == [g.sigma for g in slow]



@pytest.mark.parametrize("mode", ["ms", "ppms++", "ha"])
@pytest.mark.parametrize("seed", range(6))
def test_preformed_groups_hold_what_adding_their_members_gives(mode, seed):
    """A preformed group (its value per class, its σ counted when first read) is the group that
    adding its members one by one gives, and joins after the first read count on top of it."""
    data = _random_input(200 + 30 * seed, seed, mode, k=2 + seed % 3, theta=(0.4, 0.7, 1.0)[seed % 3],
                         alpha=0.5 if mode == "ha" else None, missing=seed % 2 == 1,
                         values=2 + seed % 2, classes_first=True)
    groups, _ = clustering.preform_classes(data)
    assert groups
    rng = np.random.default_rng(seed)
    for i, g in enumerate(groups):
        added = clustering._Group(data, g.members[0])
        for r in g.members:
            added.add(data, r, remaining=False)
        # some groups take a join before σ is first read, some after
        for join in (i % 3 == 1, False, i % 3 == 2):
            if join:
                r = int(rng.integers(data.n))
                g.add(data, r, remaining=True)
                added.add(data, r, remaining=True)
            for name in ("cat", "lo", "hi", "loss", "size", "anchors", "ha", "members", "sigma"):
                assert getattr(g, name) == getattr(added, name), name

def _qid_rows(data, members):
    return {tuple(None if col is None else col[r] for col in (*data.cat, *data.lo, *data.hi))
            for r in members}


@pytest.mark.parametrize("mode", ["ms", "ppms", "ha"])
@pytest.mark.parametrize("seed", range(4))
def test_preformed_groups_lose_nothing_and_meet_the_model_at_k(mode, seed):
    k, theta, alpha = 3, 0.4, 0.5 if mode == "ha" else None
    data = _random_input(300, seed, mode, k=k, theta=theta, alpha=alpha, values=3,
                         classes_first=True)
    groups, taken = clustering.preform_classes(data)
    assert groups and taken.sum() == k * len(groups)
    for g in groups:
        members = g.members
        assert len(_qid_rows(data, members)) == 1 and g.loss == 0.0     # one QID class
        assert int(data.anchor[members].sum()) == k and data.pool[members].all()
        counts: dict[int, int] = {}
        for r in members:
            for s in data.terms(r):
                counts[s] = counts.get(s, 0) + 1
        assert max(counts.values(), default=0) <= eta(theta, k)
        if alpha is not None:
            assert ha_ok(g.ha, alpha)
    # the grouping keeps them (leftovers may join them later) and numbers them first
    result = group_records(data)
    assert result.preformed == len(groups)
    for i, g in enumerate(groups):
        assert (result.group_of[g.members] == i).all()


def test_a_class_of_unbounded_records_is_grouped_whole_but_its_remainder():
    # θ = 1: no term bounds a group, so a class of 2k + 1 anchors gives two groups and one
    # record for the greedy; a class of k - 1 gives none.
    data = _random_input(40, 0, "ms", k=4, theta=1.0, alpha=None, values=1, classes_first=True)
    class_of, _ = clustering.qid_classes(data)
    sizes = np.bincount(class_of)
    groups, taken = clustering.preform_classes(data)
    assert len(groups) == int((sizes // 4).sum())
    assert np.array_equal(np.bincount(class_of[taken], minlength=len(sizes)), sizes // 4 * 4)
    # the papers' greedy forms none before it starts
    plain = dataclasses.replace(data, classes_first=False)
    assert group_records(plain).preformed == 0


def test_every_group_meets_its_own_bounds():
    data = _random_input(120, 3, "ppms", k=3, theta=0.5, alpha=None)
    result = group_records(data)
    etas = {}
    for g in range(result.n_groups):
        members = np.flatnonzero(result.group_of == g)
        anchors = int(data.anchor[members].sum())
        assert anchors >= 3
        counts: dict[int, int] = {}
        for r in members:
            for s in data.terms(int(r)):
                counts[s] = counts.get(s, 0) + 1
        etas[g] = eta(0.5, anchors)
        assert max(counts.values(), default=0) <= etas[g]
    placed = int((result.group_of >= 0).sum())
    assert placed + len(result.unplaced) == data.n


def test_missing_values_cost_nothing_together_and_everything_mixed():
    data = _random_input(40, 1, "ppms", k=4, theta=1.0, alpha=None, missing=True)
    space, m = data.space, data.space.attributes[2].missing_at
    assert space.num_term(2, m, m) == 0.0                 # a group of missing weights
    assert space.num_term(2, 55.0, m) == 1.0              # missing mixed with present: "*"
    assert space.num_term(2, 55.0, 85.0) == pytest.approx(0.5)
    age = space.attributes[0].taxonomy
    lone = space.lca(0, age.code_of[MISSING_LABEL], age.code_of[MISSING_LABEL])
    assert space.cat_term(0, lone) == 0.0
    assert space.lca(0, age.code_of[MISSING_LABEL], age.code_of["Newborn"]) == age.code_of["*"]


def _with_intervals(data: GroupingInput, seed: int) -> GroupingInput:
    """``data`` with some weights widened to intervals (covered old cases), some of them up to
    the missing-value sentinel (published '*' before)."""
    rng = np.random.default_rng(seed)
    lo, hi = data.lo[2].copy(), data.hi[2].copy()
    sentinel = data.space.attributes[2].missing_at
    present = hi < (sentinel if sentinel is not None else np.inf)
    wide = present & (rng.random(data.n) < 0.3)
    hi[wide] = np.minimum(lo[wide] + rng.integers(0, 25, int(wide.sum())), 100.0)
    if sentinel is not None:
        mixed = present & ~wide & (rng.random(data.n) < 0.1)
        hi[mixed] = sentinel
    return dataclasses.replace(data, lo=(None, None, lo), hi=(None, None, hi))


@pytest.mark.parametrize("block", [2, 5])
@pytest.mark.parametrize("mode", ["ms", "ppms", "ppms++", "ha"])
@pytest.mark.parametrize("seed", range(6))
def test_block_index_never_changes_the_groups(monkeypatch, block, mode, seed):
    """The block bounds (growth, farthest seed, leftovers) only skip what cannot win: with
    tiny blocks (many of them), intervals and missing values, the fast grouping without a
    probe budget still equals the reference."""
    monkeypatch.setattr(clustering, "_BLOCK", block)
    data = _random_input(90 + 13 * seed, seed, mode, k=2 + seed % 3,
                         theta=(0.3, 0.5, 1.0)[seed % 3], alpha=0.5 if mode == "ha" else None,
                         missing=seed % 2 == 0)
    data = _with_intervals(data, seed)
    slow, fast = group_reference(data), group_records(data, probe_budget=10**9)
    assert fast.budget_stops == 0
    assert np.array_equal(slow.group_of, fast.group_of)
    assert slow.unplaced == fast.unplaced
    assert slow.n_groups == fast.n_groups > 0


@pytest.mark.parametrize("mode", ["ppms", "ppms++", "ha"])
@pytest.mark.parametrize("seed", range(4))
def test_term_masks_of_only_some_terms_never_change_the_groups(monkeypatch, mode, seed):
    """The growth search's term-mask prefilter (a record holding a blocked frequent term has
    PR ∞) is exact also when only the most frequent terms have a bit."""
    monkeypatch.setattr(clustering, "MASK_TERMS", 3)
    data = _random_input(120 + 10 * seed, seed + 40, mode, k=2 + seed % 2,
                         theta=(0.3, 0.5)[seed % 2], alpha=0.5 if mode == "ha" else None)
    slow, fast = group_reference(data), group_records(data, probe_budget=10**9)
    assert np.array_equal(slow.group_of, fast.group_of)
    assert slow.unplaced == fast.unplaced


@pytest.mark.parametrize("block", [64, 2])
@pytest.mark.parametrize("mode", ["ms", "ppms", "ppms++", "ha"])
def test_the_usual_step_shortcuts_find_what_the_full_search_finds(monkeypatch, mode, block):
    """The growth step's shortcuts (clustering.USUAL_STEP) give the full search's groups, its
    budget stops included: with a small probe budget the groups depend on the order in which
    the search probes, and the few values make ties between bounds common. Blocks of two
    cells give these small inputs the many blocks of a large one, where a step whose group
    kept its value takes its last step's least bounds again (usual_again)."""
    monkeypatch.setattr(clustering, "_BLOCK", block)
    stops = 0
    for seed in range(8):
        data = _random_input(120 + 30 * seed, seed, mode, k=2 + seed % 4,
                             theta=(0.3, 0.5, 1.0)[seed % 3], alpha=0.5 if mode == "ha" else None,
                             missing=seed % 2 == 1, values=(None, 3, 8)[seed % 3],
                             classes_first=seed % 4 == 0)
        for budget in (1, 3, None):
            monkeypatch.setattr(clustering, "USUAL_STEP", True)
            short = group_records(data, probe_budget=budget)
            monkeypatch.setattr(clustering, "USUAL_STEP", False)
            full = group_records(data, probe_budget=budget)
            assert np.array_equal(short.group_of, full.group_of)
            assert (short.budget_stops, short.failed_seeds, short.unplaced) == (
                full.budget_stops, full.failed_seeds, full.unplaced)
            stops += full.budget_stops
    assert stops > 0


@pytest.mark.parametrize("window", [1, 3, 8])
@pytest.mark.parametrize("mode", ["ms", "ppms", "ppms++"])
@pytest.mark.parametrize("seed", range(4))
def test_leftovers_found_by_windows_never_change_the_groups(monkeypatch, window, mode, seed):
    """The leftover phase finds the best groups of a window of leftovers together and walks
    them in order, evaluating again only the groups the window changed (or searching again
    when a leftover's best group changed): with tiny windows and blocks, few dense terms
    (the rest counted per term), exact classes beside wider leftovers, intervals and missing
    values, a window's pairs evaluated a few at a time (their PR two (pair, term) elements at
    a time), σ rows kept for classes of two groups or more (until a small budget is spent),
    and the first free group of a class found from bit masks (every class of more than 0 or
    1 group), the groups are still the reference's."""
    monkeypatch.setattr(clustering, "CLASS_ROWS", 2)
    monkeypatch.setattr(clustering, "CLASS_SCAN", seed % 2)
    monkeypatch.setattr(clustering, "KEPT_ROW_CELLS", 200 * (seed + 1))
    monkeypatch.setattr(clustering, "_WINDOW", window)
    monkeypatch.setattr(clustering, "_BLOCK", 3)
    monkeypatch.setattr(clustering, "FREQUENT_TERMS", 4)
    monkeypatch.setattr(clustering, "DENSE_CELLS", 8)
    monkeypatch.setattr(clustering, "_PAIRS", 5)
    monkeypatch.setattr(clustering, "_PAIR_TERMS", 2)
    calls = []
    batch = clustering._best_of_many
    monkeypatch.setattr(clustering, "_best_of_many",
                        lambda *a: calls.append(len(a[2])) or batch(*a))
    data = _random_input(150 + 20 * seed, seed + 70, mode, k=2 + seed % 3,
                         theta=(0.3, 0.5, 1.0)[seed % 3], alpha=None, missing=seed % 2 == 0,
                         values=3, classes_first=seed % 2 == 1)
    data = _with_intervals(data, seed)
    slow, fast = group_reference(data), group_records(data, probe_budget=10**9)
    assert calls and fast.leftovers > 0
    assert fast.budget_stops == 0
    assert np.array_equal(slow.group_of, fast.group_of)
    assert slow.unplaced == fast.unplaced


@pytest.mark.parametrize("mode", ["ppms", "ppms++"])
def test_leftover_table_widens_its_counts_when_a_group_grows(monkeypatch, mode):
    """The leftover phase's dense σ table counts in int16 until a group reaches
    ``_NARROW_SIGMA`` records, then in int32: with a threshold one above the groups' first
    sizes, both happen in some groupings, and the groups are still the reference's."""
    monkeypatch.setattr(clustering, "_WINDOW", 4)
    widths: list[str] = []
    build, add = clustering._GroupTable.__init__, clustering._GroupTable.add

    def built(self, data, groups):
        # just above the largest group: a leftover that joins one of those widens the table
        monkeypatch.setattr(clustering, "_NARROW_SIGMA", max(g.size for g in groups) + 1)
        build(self, data, groups)
        widths.append(self.dense.dtype.name)

    def added(self, *args, **kwargs):
        add(self, *args, **kwargs)
        widths.append(self.dense.dtype.name)

    monkeypatch.setattr(clustering._GroupTable, "__init__", built)
    monkeypatch.setattr(clustering._GroupTable, "add", added)
    widened = 0
    for seed in range(6):
        widths.clear()
        data = _random_input(160 + 20 * seed, seed + 90, mode, k=2 + seed % 2, theta=0.5,
                             alpha=None, values=3, classes_first=seed % 2 == 1)
        slow, fast = group_reference(data), group_records(data, probe_budget=10**9)
        assert np.array_equal(slow.group_of, fast.group_of)
        assert slow.unplaced == fast.unplaced
        assert widths and widths[0] == "int16"
        widened += widths[-1] == "int32"
    assert widened
