"""Property tests (Hypothesis) for medanon.hierarchies on random trees and intervals."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from medanon.hierarchies import (
    Interval,
    Taxonomy,
    age_to_mesh,
    interval_hierarchy,
    mesh_age_tree,
    read_arx,
    write_arx,
)

FAST = settings(max_examples=60, deadline=None)

# Labels with the characters that matter for CSV: separators, quotes, spaces, non-ASCII.
_label_chars = st.sampled_from(list("abcXYZ019 ;,\"'*-[]äé"))
labels = st.text(_label_chars, min_size=1, max_size=6).filter(lambda s: s.strip() != "")


@st.composite
def trees(draw: st.DrawFn, max_nodes: int = 25) -> Taxonomy:
    """A random tree: node i's parent is a random earlier node; random insertion order and
    random internal nodes added to the record values."""
    names = draw(st.lists(labels, min_size=1, max_size=max_nodes, unique=True))
    parent_idx = [None] + [draw(st.integers(0, i - 1)) for i in range(1, len(names))]
    items = [(names[i], None if p is None else names[p]) for i, p in enumerate(parent_idx)]
    items = draw(st.permutations(items))
    has_child = {p for _, p in items if p is not None}
    leaves = [n for n, _ in items if n not in has_child]
    internal = [n for n, _ in items if n in has_child]
    extra = draw(st.lists(st.sampled_from(internal), unique=True)) if internal else []
    return Taxonomy(dict(items), name="random", values=leaves + extra)


@st.composite
def tree_and_labels(draw: st.DrawFn) -> tuple[Taxonomy, list[str]]:
    t = draw(trees())
    chosen = draw(st.lists(st.sampled_from(t.nodes), min_size=1, max_size=8))
    return t, chosen


@FAST
@given(tree_and_labels())
def test_lca_is_the_lowest_common_ancestor(case: tuple[Taxonomy, list[str]]) -> None:
    t, chosen = case
    anc = t.lca(chosen)
    assert all(t.covers(anc, v) for v in chosen)
    for child in t.children(anc):
        assert not all(t.covers(child, v) for v in chosen)
    # Order and repetition do not matter.
    assert t.lca(list(reversed(chosen)) + chosen) == anc


@FAST
@given(tree_and_labels())
def test_lca_codes_equals_lca(case: tuple[Taxonomy, list[str]]) -> None:
    t, chosen = case
    codes = t.encode(chosen)
    assert t.decode(codes) == chosen
    assert t.lca_codes(codes) == t.code_of[t.lca(chosen)]
    assert t.lca_codes(codes.astype(np.int64)[::-1]) == t.code_of[t.lca(chosen)]


@FAST
@given(trees(max_nodes=15))
def test_covers_is_a_partial_order(t: Taxonomy) -> None:
    nodes = t.nodes
    for a in nodes:
        assert t.covers(a, a)
        assert t.covers(t.root, a)
        for b in nodes:
            ab = t.covers(a, b)
            assert ab == (a in t.ancestors(b))
            if ab and t.covers(b, a):
                assert a == b
            if ab:
                for c in t.children(b):  # transitivity along the tree edges below b
                    assert t.covers(a, c)
    # Vectorized form agrees.
    codes = np.arange(len(t))
    for a in nodes:
        expect = [t.covers(a, b) for b in nodes]
        assert t.covers_codes(t.code_of[a], codes).tolist() == expect


@FAST
@given(trees())
def test_depth_height_consistent(t: Taxonomy) -> None:
    depth = {v: t.depth(v) for v in t.nodes}
    assert depth[t.root] == 0
    assert t.height == max(depth.values())
    for v in t.nodes:
        assert depth[v] == len(t.ancestors(v)) - 1
        for c in t.children(v):
            assert t.parent(c) == v and depth[c] == depth[v] + 1
        below = [u for u in t.nodes if t.covers(v, u)]
        assert t.subtree_height(v) == max(depth[u] for u in below) - depth[v]
        assert t.leaf_count(v) == sum(1 for u in below if not t.children(u))
    assert t.leaf_count(t.root) == len(t.leaves)
    assert set(t.leaves) <= set(t.values)
    assert t.depth_array.tolist() == [depth[v] for v in t.nodes]
    # Pre-order: every node's code is greater than its parent's.
    parent = t.parent_array
    assert all(parent[i] < i for i in range(1, len(t)))


@FAST
@given(trees(), st.sampled_from([";", ",", "\t", "|"]))
def test_arx_round_trip(t: Taxonomy, sep: str) -> None:
    text = write_arx(t, sep=sep)
    rows = text.splitlines()
    assert len(rows) == len(set(t.values) | set(t.leaves))
    back = read_arx(text, name=t.name, sep=sep)
    assert back == t
    assert write_arx(back, sep=sep) == text


@FAST
@given(trees())
def test_equality_ignores_insertion_order(t: Taxonomy) -> None:
    shuffled = dict(reversed(list(t.parents.items())))
    other = Taxonomy(shuffled, name="other", values=t.values)
    assert other == t and hash(other) == hash(t)


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@st.composite
def intervals(draw: st.DrawFn) -> Interval:
    a, b = draw(finite), draw(finite)
    return Interval(min(a, b), max(a, b))


@FAST
@given(st.lists(intervals(), min_size=1, max_size=6))
def test_hull_covers_its_inputs_and_is_tight(ivs: list[Interval]) -> None:
    h = ivs[0].hull(*ivs[1:])
    assert all(h.covers(iv) for iv in ivs)
    assert h.lo in {iv.lo for iv in ivs} and h.hi in {iv.hi for iv in ivs}
    assert h.covers(h.lo) and h.covers(h.hi)


@settings(max_examples=200, deadline=None)
@given(st.one_of(intervals(), finite.map(lambda x: Interval(x, x))))
def test_interval_label_parse_round_trip(iv: Interval) -> None:
    assert Interval.parse(iv.label) == iv
    assert Interval.parse(iv.label).label == iv.label


@FAST
@given(st.integers(-50, 50), st.integers(1, 40),
       st.lists(st.integers(2, 4), max_size=3), st.sampled_from([1, 0.5, 2.5]))
def test_interval_hierarchy_children_tile_parents(lo: int, span: int, ratios: list[int],
                                                  unit: float) -> None:
    widths = [unit]
    for r in ratios:
        widths.append(widths[-1] * r)
    hi = lo + span * unit * 0.75 + unit * 0.1  # often a clipped last bin
    t = interval_hierarchy(lo, hi, widths, name="w")
    for node in t.nodes:
        kids = t.children(node)
        if node == t.root or not kids:
            continue
        assert Interval.parse(node) == Interval.hull(*map(Interval.parse, kids))
    top = [Interval.parse(c) for c in t.children(t.root)]
    assert Interval.hull(*top) == Interval(lo, hi)
    assert read_arx(write_arx(t), name="w") == t


@FAST
@given(st.lists(st.floats(0, 150, allow_nan=False), min_size=1, max_size=50))
def test_age_to_mesh_gives_values_monotonically(ages: list[float]) -> None:
    t = mesh_age_tree()
    order = ["Newborn", "Infant (1-23 months)", "Preschool", "In-school", "Adolescent",
             "Young Adult", "Adult (25-44)", "Middle Aged", "Aged (65-79)", "Aged, 80 and over"]
    out = age_to_mesh(np.array(sorted(ages)))
    assert set(out) <= set(t.values)
    ranks = [order.index(v) for v in out]
    assert ranks == sorted(ranks)
    assert [age_to_mesh(a) for a in sorted(ages)] == out.tolist()
