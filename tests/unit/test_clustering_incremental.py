"""The grouping's incrementally kept structures equal a rebuild from scratch after random joins."""

from __future__ import annotations

import numpy as np
import pytest

from medanon.anonymize import clustering
from medanon.anonymize.clustering import _ClassGroups, _Group, _GroupTable, qid_classes
from tests.unit.test_clustering import _random_input


def _class_groups_case(seed: int):
    """Groups of 3 records of one QID class each (zero loss), over few QID values so that
    classes hold several groups, and the records left for joining them."""
    data = _random_input(240, seed, "ppms", k=3, theta=0.5, alpha=None, values=2)
    class_of, _ = qid_classes(data)
    groups, used = [], set()
    for c in np.unique(class_of).tolist():
        rows = np.flatnonzero(class_of == c).tolist()
        for start in range(0, len(rows) - 3, 4):  # leave a record of each four for joining
            g = _Group(data, rows[start])
            for r in rows[start:start + 3]:
                g.add(data, r, remaining=False)
                used.add(r)
            groups.append(g)
    rest = [r for r in range(data.n) if r not in used]
    return data, class_of, groups, rest


def _class_tables(seed: int):
    """:func:`_class_groups_case` with the leftover phase's table of its groups, each group's
    QID class, the zero-loss groups and their :class:`_ClassGroups`."""
    data, class_of, groups, rest = _class_groups_case(seed)
    table = _GroupTable(data, groups)
    group_class = [int(class_of[g.members[0]]) for g in groups]
    zero = np.flatnonzero(table.loss == 0.0).tolist()
    classes = _ClassGroups(table, zero, [group_class[gi] for gi in zero])
    return data, class_of, groups, rest, table, group_class, zero, classes


def _join_at_random(data, table: _GroupTable, classes: _ClassGroups, group_class: list[int],
                    r: int, c: int, rng: np.random.Generator) -> None:
    """Join record r (of QID class c) to a random group: mostly one of its own class that still
    holds it (zero loss kept), sometimes any (the loss may turn > 0 and the group leave its
    class), and update the class structures as the leftover placement does."""
    own = [gi for gi in range(len(group_class)) if group_class[gi] == c and classes.holds(gi)]
    gi = int(rng.choice(own)) if own and rng.random() < 0.8 else int(rng.integers(len(group_class)))
    table.add(gi, r)
    if classes.holds(gi):
        if table.loss[gi] > 0.0:
            classes.remove(gi)
        else:
            classes.added(gi, data.terms(r), int(data.anchor[r]))


@pytest.mark.parametrize("seed", range(6))
def test_class_sigma_rows_equal_a_rebuild_after_random_joins(seed):
    data, class_of, groups, rest, table, group_class, zero, classes = _class_tables(seed)
    rng = np.random.default_rng(seed)
    all_terms = list(range(len(data.theta)))
    for r in rng.permutation(rest).tolist():
        # read some rows first (so that joins update cached rows), then join r to a random
        # group: mostly one of its own class (zero loss kept), sometimes any (loss may turn > 0)
        c = int(class_of[r])
        if classes.has(c):
            classes.sigma_rows(c, rng.choice(all_terms, 3).tolist())
            classes.anchor_counts(c)
        _join_at_random(data, table, classes, group_class, r, c, rng)
        for c in sorted(set(group_class)):
            expected = [gi for gi in range(len(groups))
                        if group_class[gi] == c and table.loss[gi] == 0.0]
            assert classes.has(c) == bool(expected)
            if not expected:
                continue
            ids = classes.ids(c)
            assert ids.tolist() == expected
            assert np.array_equal(classes.sigma_rows(c, all_terms), table.sigmas(all_terms, ids).T)
            distinct, at = classes.anchor_counts(c)
            assert np.array_equal(distinct[at], table.anchors[ids])
    assert any(not classes.holds(gi) for gi in zero), "some group must have left its class"


@pytest.mark.parametrize("budget", [1 << 21, 40])
@pytest.mark.parametrize("seed", range(3))
def test_kept_class_rows_equal_a_rebuild_after_random_joins(monkeypatch, seed, budget):
    """Every class keeps its σ rows (as the big classes do), every record that joins one of
    its groups is counted in them; with a tiny budget of cells, rows are kept until it is
    spent and read from the table after."""
    monkeypatch.setattr(clustering, "CLASS_ROWS", 1)
    monkeypatch.setattr(clustering, "KEPT_ROW_CELLS", budget)
    test_class_sigma_rows_equal_a_rebuild_after_random_joins(seed)


def test_class_sigma_rows_read_rare_terms_from_the_sparse_counts(monkeypatch):
    """With a dense table of one term, every other σ row comes from the {group: count} dicts."""
    monkeypatch.setattr(clustering, "FREQUENT_TERMS", 1)
    monkeypatch.setattr(clustering, "DENSE_CELLS", 1)
    test_class_sigma_rows_equal_a_rebuild_after_random_joins(0)


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_first_free_group_of_a_class_equals_a_scan_after_random_joins(monkeypatch, seed, dense):
    """The first group of a class holding none of a record's terms, as the bit masks of the
    classes above CLASS_SCAN groups give it (made when a class is first asked, kept current
    as records join and groups leave, the rare terms' from the groups' lists), equals a scan
    of the class's groups on the table's σ; with one dense term, most masks are rare terms'."""
    monkeypatch.setattr(clustering, "CLASS_SCAN", seed % 2)
    if not dense:
        monkeypatch.setattr(clustering, "FREQUENT_TERMS", 1)
        monkeypatch.setattr(clustering, "DENSE_CELLS", 1)
    data, class_of, groups, rest, table, group_class, zero, classes = _class_tables(seed)
    rng = np.random.default_rng(seed)
    all_terms = list(range(len(data.theta)))
    asked = 0
    for r in rng.permutation(rest).tolist():
        c = int(class_of[r])
        for cc in sorted(set(group_class)):
            if not classes.has(cc):
                continue
            terms = sorted(set(rng.choice(all_terms, int(rng.integers(0, 4))).tolist()))
            ids = classes.ids(cc)
            held = table.sigmas(terms, ids) > 0 if terms else np.zeros((len(ids), 0), bool)
            free = np.flatnonzero(~held.any(axis=1))
            assert classes.first_free(cc, terms) == (int(ids[free[0]]) if len(free) else None)
            asked += 1
        _join_at_random(data, table, classes, group_class, r, c, rng)
    assert asked and any(not classes.holds(gi) for gi in zero)
