"""Unit tests for medanon.hierarchies: Taxonomy, Interval, built-in trees, ARX import/export."""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

from medanon.errors import HierarchyError, ValidationError
from medanon.hierarchies import (
    BUILTIN_HIERARCHIES,
    Interval,
    Taxonomy,
    age_to_mesh,
    interval_hierarchy,
    mesh_age_tree,
    read_arx,
    sex_tree,
    write_arx,
)
from medanon.hierarchies.builtin import mesh_age_band
from tests.conftest import OLD_MESH_ARX

SMALL = {"*": None, "A": "*", "B": "*", "a1": "A", "a2": "A", "b1": "B", "x": "a1"}


@pytest.fixture
def small() -> Taxonomy:
    return Taxonomy(SMALL, name="small")


# --------------------------------------------------------------------------- Taxonomy: structure
class TestTaxonomyStructure:
    def test_basic_properties(self, small: Taxonomy) -> None:
        assert small.name == "small"
        assert small.root == "*"
        assert small.nodes == ("*", "A", "a1", "x", "a2", "B", "b1")  # pre-order
        assert small.leaves == ("x", "a2", "b1")
        assert small.values == small.leaves
        assert len(small) == 7
        assert list(small) == list(small.nodes)
        assert "a1" in small and "zz" not in small and ["unhashable"] not in small
        assert small.parents["a1"] == "A" and small.parents["*"] is None

    def test_parent_children(self, small: Taxonomy) -> None:
        assert small.parent("*") is None
        assert small.parent("x") == "a1"
        assert small.children("A") == ("a1", "a2")
        assert small.children("x") == ()

    def test_depth_height(self, small: Taxonomy) -> None:
        assert [small.depth(v) for v in ("*", "A", "a1", "x")] == [0, 1, 2, 3]
        assert small.height == 3
        assert small.subtree_height("*") == 3
        assert small.subtree_height("A") == 2
        assert small.subtree_height("B") == 1
        assert small.subtree_height("x") == 0

    def test_ancestors_and_covers(self, small: Taxonomy) -> None:
        assert small.ancestors("x") == ("x", "a1", "A", "*")
        assert small.ancestors("*") == ("*",)
        assert small.covers("A", "x") and small.covers("x", "x") and small.covers("*", "b1")
        assert not small.covers("x", "A")
        assert not small.covers("B", "a2")

    def test_lca(self, small: Taxonomy) -> None:
        assert small.lca(["x", "a2"]) == "A"
        assert small.lca(["x", "b1"]) == "*"
        assert small.lca(["x"]) == "x"
        assert small.lca("a2") == "a2"  # a str is one label, not its characters
        assert small.lca(iter(["x", "a1"])) == "a1"

    def test_leaf_count(self, small: Taxonomy) -> None:
        assert small.leaf_count("*") == 3
        assert small.leaf_count("A") == 2
        assert small.leaf_count("x") == 1

    def test_internal_values_get_self_leaves(self) -> None:
        t = Taxonomy(SMALL, name="small", values=["A", "x", "a2", "b1"])
        # The value "A" is published as its self leaf, first among A's children; no new level.
        assert t.values == ("A (exact)", "x", "a2", "b1")
        assert t.children("A") == ("A (exact)", "a1", "a2") and t.parent("A (exact)") == "A"
        assert t.height == Taxonomy(SMALL, name="small").height
        assert t.leaf_count("A (exact)") == 1 and t.subtree_height("A (exact)") == 0
        assert t.lca(["A (exact)", "x"]) == "A"
        assert dict(t.self_leaves) == {"A": "A (exact)"}
        assert not any(t.value_mask[t.code_of[n]] for n in ("A", "a1", "*"))
        t2 = Taxonomy(SMALL, name="small", values="b1")
        assert t2.values == ("b1",) and dict(t2.self_leaves) == {}

    def test_raw_labels_of_internal_values_map_to_self_leaves(self) -> None:
        t = Taxonomy(SMALL, name="small", values=["A", "x", "a2", "b1"])
        assert t.record_labels(["A", "a2", None, "B"]) == ["A (exact)", "a2", None, "B"]
        assert t.record_labels("A") == ["A (exact)"]
        t.check_values(["A", "A (exact)", "x"], column="c")  # raw alias and leaf both accepted
        with pytest.raises(HierarchyError, match="only as generalizations.*'B'"):
            t.check_values(["B"], column="c")
        # As a published label, "A" is the generalization (node A), not the value.
        assert t.decode(t.encode(["A"])) == ["A"]

    def test_named_self_leaves(self) -> None:
        t = Taxonomy(SMALL, name="small", self_leaves={"A": "A only"})
        assert t.children("A")[0] == "A only" and "A only" in t.values
        assert t.record_labels(["A"]) == ["A only"]
        # An existing leaf child may be named (MeSH: Child's band is the leaf In-school).
        t2 = Taxonomy(SMALL, name="small", self_leaves={"A": "a2"})
        assert t2.children("A") == ("a1", "a2") and t2.record_labels(["A"]) == ["a2"]

    @pytest.mark.parametrize("self_leaves,part", [
        ({"b1": "b1 only"}, "names 'b1', which is not an internal node"),
        ({"*": "all"}, "names '\\*', which is not an internal node other than the root"),
        ({"A": "b1"}, "the self leaf of 'A' would be 'b1', but that label is already a node"),
        ({"A": "a1"}, "the self leaf of 'A' would be 'a1', but that label is already a node"),
        ({"A": " "}, "must be a non-empty one-line label"),
        ({"A": "s", "B": "s"}, "'s' is the self leaf of two nodes"),
    ])
    def test_self_leaf_errors(self, self_leaves: dict, part: str) -> None:
        with pytest.raises(HierarchyError, match=part):
            Taxonomy(SMALL, name="small", self_leaves=self_leaves)

    def test_self_leaves_must_be_a_mapping(self) -> None:
        with pytest.raises(ValidationError, match="The 'self_leaves' parameter of Taxonomy"):
            Taxonomy(SMALL, name="small", self_leaves=["A"])  # type: ignore[arg-type]

    def test_default_self_leaf_label_taken_elsewhere(self) -> None:
        parents = dict(SMALL, **{"A (exact)": "B"})
        with pytest.raises(HierarchyError, match="already a node elsewhere.*'self_leaves'"):
            Taxonomy(parents, name="small", values=["A", "b1"])

    def test_self_leaves_survive_pickling(self) -> None:
        t = Taxonomy(SMALL, name="small", self_leaves={"A": "A only"})
        back = pickle.loads(pickle.dumps(t))
        assert back == t and dict(back.self_leaves) == {"A": "A only"}

    def test_root_label_is_free(self) -> None:
        t = Taxonomy({"ANY": None, "F": "ANY", "M": "ANY"}, name="g")
        assert t.root == "ANY" and t.lca(["F", "M"]) == "ANY"

    def test_single_node_tree(self) -> None:
        t = Taxonomy({"*": None}, name="one")
        assert t.height == 0 and t.leaves == ("*",) and t.values == ("*",)

    def test_equality_and_hash_are_structural(self, small: Taxonomy) -> None:
        reordered = dict(reversed(list(SMALL.items())))
        other = Taxonomy(reordered, name="another name")
        assert other == small and hash(other) == hash(small)
        assert Taxonomy(SMALL, name="small", values=["x", "a2"]) != small
        assert Taxonomy(SMALL, name="small", values=["A", "x", "a2", "b1"]) != small
        changed = dict(SMALL, x="a2")
        assert Taxonomy(changed, name="small") != small
        assert small != "small"
        assert len({small, other}) == 1

    def test_immutable(self, small: Taxonomy) -> None:
        with pytest.raises(AttributeError, match="immutable"):
            small.name = "other"  # type: ignore[misc]
        with pytest.raises(AttributeError, match="immutable"):
            del small._name
        with pytest.raises(ValueError):
            small.depth_array[0] = 5
        with pytest.raises(TypeError):
            small.code_of["new"] = 3  # type: ignore[index]

    def test_input_mapping_is_copied(self) -> None:
        parents = dict(SMALL)
        t = Taxonomy(parents, name="small")
        parents["y"] = "x"
        assert "y" not in t

    def test_pickle_and_repr(self, small: Taxonomy) -> None:
        back = pickle.loads(pickle.dumps(small))
        assert back == small and back.name == "small" and back.nodes == small.nodes
        assert "small" in repr(small) and "height=3" in repr(small)

    def test_deep_tree_has_no_recursion_limit(self) -> None:
        parents: dict[str, str | None] = {"n0": None}
        parents.update({f"n{i}": f"n{i - 1}" for i in range(1, 5000)})
        t = Taxonomy(parents, name="chain")
        assert t.height == 4999 and t.lca(["n4999", "n10"]) == "n10"


# --------------------------------------------------------------------------- Taxonomy: errors
class TestTaxonomyErrors:
    def test_empty(self) -> None:
        with pytest.raises(HierarchyError, match="'e' is empty"):
            Taxonomy({}, name="e")

    def test_two_roots_are_named(self) -> None:
        with pytest.raises(HierarchyError, match=r"2 roots \('\*', 'ANY'\)"):
            Taxonomy({"*": None, "ANY": None, "F": "*"}, name="g")

    def test_no_root_names_cycle(self) -> None:
        with pytest.raises(HierarchyError, match="no root.*'a' -> 'b' -> 'a'"):
            Taxonomy({"a": "b", "b": "a"}, name="g")

    def test_cycle_beside_root(self) -> None:
        with pytest.raises(HierarchyError, match=r"cycle: 'c' -> 'd' -> 'e' -> 'c'"):
            Taxonomy({"*": None, "F": "*", "c": "d", "d": "e", "e": "c"}, name="g")

    def test_self_parent_is_cycle(self) -> None:
        with pytest.raises(HierarchyError, match="cycle: 'c' -> 'c'"):
            Taxonomy({"*": None, "c": "c"}, name="g")

    def test_unknown_parent(self) -> None:
        with pytest.raises(HierarchyError, match=r"'Nonadult' \(parent of 'Child'\)"):
            Taxonomy({"*": None, "Child": "Nonadult"}, name="g")

    @pytest.mark.parametrize("parents", [
        {"*": None, "": "*"},
        {"*": None, "  ": "*"},
        {"*": None, 3: "*"},
        {"*": None, "a": 4},
        {"*": None, "a": ""},
        {"*": None, "a\nb": "*"},
    ])
    def test_bad_labels(self, parents: dict) -> None:
        with pytest.raises(HierarchyError, match="non-empty one-line strings"):
            Taxonomy(parents, name="g")

    def test_value_not_in_tree(self) -> None:
        with pytest.raises(HierarchyError, match=r"1 value\(s\) are not nodes.*'Teen'"):
            Taxonomy(SMALL, name="g", values=["x", "Teen"])

    def test_empty_values(self) -> None:
        with pytest.raises(HierarchyError, match="'values' is empty"):
            Taxonomy(SMALL, name="g", values=[])

    def test_bad_name_and_parents_type(self) -> None:
        with pytest.raises(ValidationError, match="'name' parameter of Taxonomy"):
            Taxonomy(SMALL, name="")
        with pytest.raises(ValidationError,
                           match="'parents' parameter of Taxonomy must be a mapping"):
            Taxonomy([("*", None)], name="g")  # type: ignore[arg-type]

    def test_unknown_label_in_methods(self, small: Taxonomy) -> None:
        for call in (lambda: small.depth("zz"), lambda: small.parent("zz"),
                     lambda: small.children("zz"), lambda: small.ancestors("zz"),
                     lambda: small.covers("zz", "x"), lambda: small.lca(["x", "zz"]),
                     lambda: small.subtree_height("zz"), lambda: small.leaf_count("zz")):
            with pytest.raises(HierarchyError, match="'zz' is not a node of hierarchy 'small'"):
                call()

    def test_lca_of_nothing(self, small: Taxonomy) -> None:
        with pytest.raises(ValidationError, match="at least one label"):
            small.lca([])


# --------------------------------------------------------------------------- check_values
class TestCheckValues:
    def test_ok_and_missing_cells_ignored(self) -> None:
        t = mesh_age_tree()
        t.check_values(["Adult", "Newborn", None, float("nan"), "Adult"], column="age")
        t.check_values(np.array(["Child", "Aged"], dtype=object), column="age")

    def test_message(self) -> None:
        with pytest.raises(HierarchyError) as exc:
            mesh_age_tree().check_values(["Adult", "Teen", "Old", "Teen"], column="age")
        assert str(exc.value) == (
            "Column 'age' has 2 value(s) missing from hierarchy 'mesh-age': 'Teen', 'Old'.")

    def test_lists_at_most_five(self) -> None:
        with pytest.raises(HierarchyError, match=r"8 value\(s\).*\(and 3 more\)"):
            sex_tree().check_values([f"v{i}" for i in range(8)], column="sex")

    def test_internal_non_values(self) -> None:
        t = mesh_age_tree()
        with pytest.raises(HierarchyError, match="only as generalizations.*'Nonadult'"):
            t.check_values(["Adult", "Nonadult"], column="age")
        t.check_values(["Nonadult", "*", "Adult"], column="age", allow_generalized=True)

    def test_non_string_values(self) -> None:
        with pytest.raises(HierarchyError, match=r"missing from hierarchy 'sex': 1"):
            sex_tree().check_values(["F", 1], column="sex")


# --------------------------------------------------------------------------- integer codes
class TestCodes:
    def test_code_of_encode_decode(self, small: Taxonomy) -> None:
        assert small.code_of["*"] == 0
        codes = small.encode(["x", "b1", "*"])
        assert codes.dtype == np.int32
        assert codes.tolist() == [small.code_of["x"], small.code_of["b1"], 0]
        assert small.decode(codes) == ["x", "b1", "*"]
        assert small.encode("x").tolist() == [small.code_of["x"]]
        assert small.encode(np.array(["A"], dtype=object)).tolist() == [1]
        assert small.encode(iter(["A", "B"])).tolist() == [1, 5]
        assert small.encode([]).shape == (0,)
        assert small.decode([]) == []

    def test_encode_unknown(self, small: Taxonomy) -> None:
        with pytest.raises(HierarchyError, match=r"2 label\(s\) are not nodes.*'zz', 'yy'"):
            small.encode(["x", "zz", "yy", "zz"])
        with pytest.raises(HierarchyError, match="not nodes"):
            small.encode(["x", None])

    def test_decode_bad_codes(self, small: Taxonomy) -> None:
        with pytest.raises(HierarchyError, match=r"code\(s\) are not nodes.*7"):
            small.decode([0, 7])
        with pytest.raises(ValidationError, match="integer codes"):
            small.decode([0.5])
        assert small.decode(np.array([1.0])) == ["A"]

    def test_arrays(self, small: Taxonomy) -> None:
        assert small.depth_array.tolist() == [small.depth(v) for v in small.nodes]
        assert small.subtree_height_array.tolist() == [small.subtree_height(v) for v in small.nodes]
        assert small.leaf_count_array.tolist() == [small.leaf_count(v) for v in small.nodes]
        assert small.depth_array.dtype == np.int32
        parent = small.parent_array
        assert parent[0] == -1
        assert [small.nodes[p] for p in parent[1:]] == [small.parent(v) for v in small.nodes[1:]]
        assert small.value_mask.tolist() == [v in small.values for v in small.nodes]

    def test_lca_codes(self, small: Taxonomy) -> None:
        c = small.code_of
        assert small.lca_codes(np.array([c["x"], c["a2"]])) == c["A"]
        assert small.lca_codes([c["x"]]) == c["x"]
        assert small.lca_codes(np.array([[c["x"]], [c["b1"]]])) == 0

    def test_lca_codes_errors(self, small: Taxonomy) -> None:
        with pytest.raises(ValidationError, match="at least one code"):
            small.lca_codes(np.array([], dtype=np.int32))
        with pytest.raises(HierarchyError, match="valid: 0 to 6"):
            small.lca_codes(np.array([1, 9]))
        with pytest.raises(HierarchyError, match="-1"):
            small.lca_codes([-1, 2])
        with pytest.raises(ValidationError, match="integer codes"):
            small.lca_codes(np.array(["a"]))

    def test_covers_codes(self, small: Taxonomy) -> None:
        c = small.code_of
        out = small.covers_codes(c["A"], np.array([c["x"], c["b1"], c["A"]]))
        assert out.tolist() == [True, False, True]

    def test_lca_codes_agrees_with_lca_on_a_large_tree(self) -> None:
        # Speed is measured in benchmarks/bench_hierarchies.py, never in a timed test.
        rng = np.random.default_rng(1)
        parents: dict[str, str | None] = {"n0": None}
        for i in range(1, 20_000):
            parents[f"n{i}"] = f"n{int(rng.integers(max(0, i - 30), i))}"
        t = Taxonomy(parents, name="big")
        codes = rng.integers(0, len(t), 10_000).astype(np.int32)
        for size in (1, 2, 10, 10_000):
            subset = codes[:size]
            assert t.decode([t.lca_codes(subset)])[0] == t.lca(t.decode(subset))


# --------------------------------------------------------------------------- Interval
class TestInterval:
    def test_construction_and_coercion(self) -> None:
        iv = Interval(45, 60)
        assert iv.lo == 45.0 and isinstance(iv.lo, float) and iv.width == 15
        assert Interval(np.int64(1), np.float32(2.5)) == Interval(1.0, 2.5)
        assert Interval(-0.0, 0.0).label == "0"

    @pytest.mark.parametrize("lo,hi,msg", [
        (5, 3, "'lo' parameter of Interval must be <= 'hi'; got lo=5, hi=3"),
        (float("nan"), 1, "'lo' parameter of Interval must be a finite number"),
        (0, float("inf"), "'hi' parameter of Interval must be a finite number"),
        ("1", 2, "'lo' parameter of Interval must be a finite number; got '1'"),
        (True, 2, "'lo' parameter"),
    ])
    def test_invalid(self, lo: object, hi: object, msg: str) -> None:
        with pytest.raises(ValidationError, match=msg):
            Interval(lo, hi)  # type: ignore[arg-type]

    def test_labels(self) -> None:
        assert Interval(58.05, 58.05).label == "58.05"
        assert Interval(58.0, 58.0).label == "58"
        assert Interval(45, 60).label == "[45-60]"
        assert Interval(-5, -1).label == "[-5--1]"
        assert Interval(0.1, 0.30000000000000004).label == "[0.1-0.30000000000000004]"
        assert Interval(1e-7, 1e22).label == "[0.0000001-10000000000000000000000]"
        assert str(Interval(1, 2)) == "[1-2]"

    def test_parse(self) -> None:
        assert Interval.parse("58.05") == Interval(58.05, 58.05)
        assert Interval.parse("[45-60]") == Interval(45, 60)
        assert Interval.parse("[-5--1]") == Interval(-5, -1)
        assert Interval.parse(" [ 1.5 - 2 ] ") == Interval(1.5, 2)
        assert Interval.parse("[1e-5-2]") == Interval(1e-5, 2)
        assert Interval.parse("-3") == Interval(-3, -3)

    @pytest.mark.parametrize("text", ["", "abc", "[1-]", "[1,2]", "1-2", "[2-1]", "nan", "inf",
                                      "[1-2-3]", "[a-b]"])
    def test_parse_invalid(self, text: str) -> None:
        with pytest.raises(ValidationError, match=f"Cannot read {text!r}".replace("[", r"\[")):
            Interval.parse(text)

    def test_parse_non_string(self) -> None:
        with pytest.raises(ValidationError, match="must be a string"):
            Interval.parse(5)  # type: ignore[arg-type]

    def test_hull_covers(self) -> None:
        a, b, c = Interval(1, 2), Interval(5, 6), Interval(-1, 0)
        assert a.hull(b, c) == Interval(-1, 6)
        assert Interval.hull(a, b) == Interval(1, 6)
        assert a.hull() == a
        assert Interval(0, 10).covers(Interval(2, 3))
        assert not Interval(0, 10).covers(Interval(2, 11))
        assert Interval(0, 10).covers(10) and not Interval(0, 10).covers(10.5)
        with pytest.raises(ValidationError, match="Interval objects"):
            a.hull((1, 2))  # type: ignore[arg-type]

    def test_ordering_frozen_pickle(self) -> None:
        assert sorted([Interval(2, 3), Interval(1, 5)])[0] == Interval(1, 5)
        with pytest.raises(AttributeError):
            Interval(1, 2).lo = 0  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(Interval(1, 2))) == Interval(1, 2)


class TestIntervalHierarchy:
    def test_tree(self) -> None:
        t = interval_hierarchy(0, 20, [5, 10], name="weight")
        assert t.name == "weight" and t.root == "*" and t.height == 2
        assert t.values == ("[0-5]", "[5-10]", "[10-15]", "[15-20]")
        assert t.ancestors("[15-20]") == ("[15-20]", "[10-20]", "*")
        for node in t.nodes[1:]:
            kids = t.children(node)
            if kids:  # children tile their parent
                assert Interval.parse(node) == Interval.hull(*map(Interval.parse, kids))

    def test_clipped_last_bin_merges_with_equal_parent(self) -> None:
        t = interval_hierarchy(0, 21, [5, 10], name="w")
        assert t.parent("[20-21]") == "*"
        assert t.parent("[15-20]") == "[10-20]"

    def test_decimal_edges(self) -> None:
        t = interval_hierarchy(0, 0.3, [0.1], name="w")
        assert t.values == ("[0-0.1]", "[0.1-0.2]", "[0.2-0.3]")

    def test_negative_domain(self) -> None:
        t = interval_hierarchy(-10, 10, [5, 20], name="w")
        assert t.values[0] == "[-10--5]" and t.parent("[-10--5]") == "[-10-10]"

    @pytest.mark.parametrize("widths,part", [
        ([], "non-empty sequence"),
        ("5", "non-empty sequence"),
        ([0], "is not a positive finite number"),
        ([-1, 2], "is not a positive finite number"),
        ([5, 7], "7 is not a multiple >= 2 of 5"),
        ([5, 5], "is not a multiple >= 2"),
        ([10, 5], "is not a multiple >= 2"),
        ([float("nan")], "positive finite"),
    ])
    def test_bad_widths(self, widths: object, part: str) -> None:
        with pytest.raises(ValidationError,
                           match=r"The 'widths' parameter of interval_hierarchy must be .*" + part):
            interval_hierarchy(0, 100, widths, name="w")  # type: ignore[arg-type]

    def test_bad_domain_and_size(self) -> None:
        with pytest.raises(ValidationError,
                           match="'hi' parameter of interval_hierarchy must be greater"):
            interval_hierarchy(5, 5, [1], name="w")
        with pytest.raises(ValidationError, match="'lo' parameter of interval_hierarchy"):
            interval_hierarchy(float("-inf"), 5, [1], name="w")
        with pytest.raises(ValidationError, match="at most 100000 are allowed"):
            interval_hierarchy(0, 1e9, [1], name="w")


# --------------------------------------------------------------------------- built-in trees
class TestBuiltin:
    def test_mesh_age_tree(self) -> None:
        t = mesh_age_tree()
        assert t.name == "mesh-age" and t.root == "*" and t.height == 3
        assert t.children("*") == ("Nonadult", "Adult")
        assert t.children("Nonadult") == ("Infant", "Child", "Adolescent")
        assert t.children("Infant") == ("Newborn", "Infant (1-23 months)")
        assert t.children("Child") == ("Preschool", "In-school")
        assert t.children("Adult") == ("Young Adult", "Adult (25-44)", "Middle Aged", "Aged")
        assert t.children("Aged") == ("Aged (65-79)", "Aged, 80 and over")
        # Values are the leaves only: a band and a generalization never share a label.
        assert t.values == t.leaves and len(t.values) == 10
        assert len(t) == 16

    def test_mesh_plain_labels_are_raw_aliases(self) -> None:
        t = mesh_age_tree()
        assert t.record_labels(["Infant", "Child", "Adult", "Aged", "Newborn"]) == [
            "Infant (1-23 months)", "In-school", "Adult (25-44)", "Aged (65-79)", "Newborn"]
        t.check_values(["Adult", "Aged", "Infant", "Child"], column="age")
        with pytest.raises(HierarchyError, match="only as generalizations.*'Nonadult'"):
            t.check_values(["Nonadult"], column="age")

    def test_mesh_bands(self) -> None:
        assert mesh_age_band("Adult (25-44)") == (25, 45)
        assert mesh_age_band("Adult") == (19, 150)
        assert mesh_age_band("Aged (65-79)") == (65, 80) and mesh_age_band("Aged") == (65, 150)
        assert mesh_age_band("Infant (1-23 months)") == (1 / 12, 2)
        assert mesh_age_band("Infant") == (0, 2) and mesh_age_band("Child") == (2, 13)

    def test_paper_examples(self) -> None:
        t = mesh_age_tree()
        # 001 Example 5: Newborn, Preschool and Adolescent generalize to Nonadult.
        assert t.lca(["Newborn", "Preschool", "Adolescent"]) == "Nonadult"
        # 000 Example 2: In-school sits under Child.
        assert t.lca(["In-school", "Child"]) == "Child"
        assert t.subtree_height("Nonadult") == 2 and t.subtree_height("Child") == 1

    def test_sex_tree_and_registry(self) -> None:
        t = sex_tree()
        assert t.name == "sex" and t.values == ("F", "M") and t.height == 1
        assert set(BUILTIN_HIERARCHIES) == {"mesh-age", "sex"}
        assert BUILTIN_HIERARCHIES["mesh-age"]() == mesh_age_tree()
        assert BUILTIN_HIERARCHIES["sex"]() == sex_tree()

    @pytest.mark.parametrize("age,label", [
        (0, "Newborn"), (0.08, "Newborn"), (1 / 12, "Infant (1-23 months)"),
        (1.99, "Infant (1-23 months)"),
        (2, "Preschool"), (5.9, "Preschool"), (6.0, "In-school"), (12.99, "In-school"),
        (13, "Adolescent"), (18.99, "Adolescent"), (19, "Young Adult"), (24.5, "Young Adult"),
        (25, "Adult (25-44)"), (44.99, "Adult (25-44)"), (45, "Middle Aged"),
        (64.99, "Middle Aged"), (65, "Aged (65-79)"), (79.99, "Aged (65-79)"),
        (80, "Aged, 80 and over"), (150, "Aged, 80 and over"),
    ])
    def test_age_to_mesh_scalar(self, age: float, label: str) -> None:
        assert age_to_mesh(age) == label
        assert label in mesh_age_tree().values

    def test_age_to_mesh_vector(self) -> None:
        out = age_to_mesh(np.array([[1.0, np.nan], [30.0, 70.0]]))
        assert out.dtype == object and out.shape == (2, 2)
        assert out.tolist() == [["Infant (1-23 months)", None], ["Adult (25-44)", "Aged (65-79)"]]
        assert age_to_mesh(float("nan")) is None
        assert age_to_mesh([3, None]).tolist() == ["Preschool", None]
        big = age_to_mesh(np.linspace(0, 100, 1_000_000))
        assert big[0] == "Newborn" and big[-1] == "Aged, 80 and over"

    @pytest.mark.parametrize("bad,part", [
        (-1, "got 1 value(s) outside: -1"),
        ([10, 151, 200], "got 2 value(s) outside: 151, 200"),
        (float("inf"), "outside: inf"),
    ])
    def test_age_to_mesh_out_of_range(self, bad: object, part: str) -> None:
        with pytest.raises(ValidationError) as exc:
            age_to_mesh(bad)
        assert "The 'years' parameter of age_to_mesh must hold ages from 0 to 150" in str(exc.value)
        assert part in str(exc.value)

    def test_age_to_mesh_not_numeric(self) -> None:
        with pytest.raises(ValidationError, match="must hold numbers"):
            age_to_mesh(["ten"])


# --------------------------------------------------------------------------- ARX
MESH_ARX = """\
Newborn;Infant;Nonadult;*
Infant (1-23 months);Infant;Nonadult;*
Preschool;Child;Nonadult;*
In-school;Child;Nonadult;*
Adolescent;Adolescent;Nonadult;*
Young Adult;Young Adult;Adult;*
Adult (25-44);Adult (25-44);Adult;*
Middle Aged;Middle Aged;Adult;*
Aged (65-79);Aged;Adult;*
Aged, 80 and over;Aged;Adult;*
"""


class TestArx:
    def test_write_mesh(self) -> None:
        assert write_arx(mesh_age_tree()) == MESH_ARX

    def test_read_mesh(self) -> None:
        t = read_arx(MESH_ARX, name="mesh-age")
        assert t == mesh_age_tree() and t.name == "mesh-age"

    def test_read_old_mesh_gives_default_self_leaves(self) -> None:
        t = read_arx(OLD_MESH_ARX, name="mesh-age")
        assert dict(t.self_leaves) == {"Infant": "Infant (exact)", "Child": "Child (exact)",
                                       "Adult": "Adult (exact)", "Aged": "Aged (exact)"}
        assert t.height == 3 and t.values == t.leaves
        # Every label an old release can hold is still a node; "Adult" is the generalization.
        assert set(mesh_age_tree().nodes) - {"Infant (1-23 months)", "Adult (25-44)",
                                             "Aged (65-79)"} <= set(t.nodes)
        assert t.subtree_height("Adult") == 2

    def test_internal_value_row_round_trips_with_suffix(self) -> None:
        t = read_arx("Adult;Adult;*\nYoung Adult;Adult;*\nChild;Child;*\n", name="age")
        text = write_arx(t)
        assert text.splitlines()[0] == "Adult (exact);Adult;*"
        back = read_arx(text, name="age")
        assert back == t and dict(back.self_leaves) == {"Adult": "Adult (exact)"}

    def test_round_trip_sources_and_targets(self, tmp_path) -> None:
        t = mesh_age_tree()
        path = tmp_path / "age.csv"
        assert write_arx(t, path) == MESH_ARX
        assert path.read_text(encoding="utf-8") == MESH_ARX
        assert read_arx(path, name="age") == t
        assert read_arx(str(path), name="age") == t
        buf = io.StringIO()
        write_arx(t, buf)
        buf.seek(0)
        assert read_arx(buf, name="age") == t

    def test_other_separator_and_quoting(self) -> None:
        t = Taxonomy({"*": None, 'a;b': "*", 'say "hi"': "*", "c,d": 'a;b'}, name="q")
        text = write_arx(t)
        assert '"a;b"' in text and '"say ""hi"""' in text
        assert read_arx(text, name="q") == t
        text_comma = write_arx(t, sep=",")
        assert '"c,d"' in text_comma and read_arx(text_comma, name="q", sep=",") == t

    def test_leaf_that_is_not_a_value_still_gets_a_row(self) -> None:
        t = Taxonomy(SMALL, name="s", values=["B", "x"])
        rows = write_arx(t).splitlines()
        assert "B (exact);B (exact);B;*" in rows and "a2;a2;A;*" in rows
        assert len({len(r.split(";")) for r in rows}) == 1

    def test_bom_crlf_blank_lines(self, tmp_path) -> None:
        path = tmp_path / "h.csv"
        path.write_bytes("\ufeffF;*\r\nM;*\r\n\r\n".encode())
        assert read_arx(path, name="sex") == sex_tree()

    def test_duplicate_identical_rows_are_fine(self) -> None:
        assert read_arx("F;*\nF;*\nM;*\n", name="sex") == sex_tree()

    def test_root_as_value(self) -> None:
        t = read_arx("*;*\nF;*\n", name="g")
        assert t.values == ("*", "F")

    def test_errors_empty_and_missing(self, tmp_path) -> None:
        empty = tmp_path / "empty.csv"
        empty.write_text("")
        with pytest.raises(HierarchyError, match="is empty"):
            read_arx(empty, name="e")
        with pytest.raises(HierarchyError, match="is empty"):
            read_arx("\n\n", name="e")
        missing = tmp_path / "nope.csv"
        with pytest.raises(HierarchyError, match=r"nope\.csv\): file not found"):
            read_arx(missing, name="e")
        with pytest.raises(HierarchyError, match="file not found"):
            read_arx(str(missing), name="e")
        with pytest.raises(HierarchyError, match="cannot read the file"):
            read_arx(tmp_path, name="e")
        latin = tmp_path / "latin.csv"
        latin.write_bytes("Ä;*\n".encode("latin-1"))
        with pytest.raises(HierarchyError, match="not UTF-8"):
            read_arx(latin, name="e")

    def test_error_ragged_rows(self) -> None:
        with pytest.raises(HierarchyError,
                           match="ARX requires every row to have the same number of columns; "
                                 "row 1 has 3 but row 2 has 2"):
            read_arx("a;A;*\nb;*\n", name="r")

    def test_error_empty_cell(self) -> None:
        with pytest.raises(HierarchyError, match="row 2, column 2 is empty"):
            read_arx("a;A;*\nb;;*\n", name="r")

    def test_error_two_roots(self) -> None:
        with pytest.raises(HierarchyError, match=r"several roots: '\*' \(row 1\), 'ANY' \(row 2\)"):
            read_arx("a;*\nb;ANY\n", name="r")

    def test_error_two_parents(self) -> None:
        text = MESH_ARX.replace("In-school;Child;Nonadult;*", "In-school;Child;Adult;*")
        with pytest.raises(HierarchyError,
                           match="row 4 gives 'Child' the parent 'Adult' but row 3 gave it "
                                 "'Nonadult'"):
            read_arx(text, name="age")

    def test_error_cycle(self) -> None:
        with pytest.raises(HierarchyError, match="row 1 lists 'a' twice.*cycle"):
            read_arx("a;b;a;*\n", name="r")

    def test_error_value_twice_different_paths(self) -> None:
        with pytest.raises(HierarchyError,
                           match="row 2 lists the value 'a' again with a different path"):
            read_arx("a;A;*\na;B;*\n", name="r")

    def test_error_malformed_csv(self) -> None:
        with pytest.raises(HierarchyError, match="malformed CSV"):
            read_arx('a;"b\n', name="r")

    def test_parameter_errors(self, tmp_path) -> None:
        with pytest.raises(ValidationError, match="The 'sep' parameter of read_arx"):
            read_arx("a;*\n", name="r", sep=";;")
        with pytest.raises(ValidationError, match="The 'sep' parameter of write_arx"):
            write_arx(sex_tree(), sep='"')
        with pytest.raises(ValidationError, match="The 'source' parameter of read_arx"):
            read_arx(42, name="r")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="binary file object"):
            read_arx(io.BytesIO(b"a;*\n"), name="r")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="The 'tax' parameter of write_arx"):
            write_arx({"*": None})  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="The 'target' parameter of write_arx"):
            write_arx(sex_tree(), 42)  # type: ignore[arg-type]
        with pytest.raises(HierarchyError, match="Cannot write ARX hierarchy 'sex'"):
            write_arx(sex_tree(), tmp_path / "no" / "dir.csv")

    def test_interval_hierarchy_round_trip(self) -> None:
        t = interval_hierarchy(0, 21, [5, 10], name="w")
        assert read_arx(write_arx(t), name="w") == t


def test_pandas_inputs() -> None:
    pd = pytest.importorskip("pandas")
    t = mesh_age_tree()
    col = pd.Series(["Adult (25-44)", None, "In-school", "Adult"], dtype=object)
    t.check_values(col, column="age")
    t.check_values(col.astype("category"), column="age")
    with pytest.raises(HierarchyError, match="'Teen'"):
        t.check_values(pd.Series(["Teen", pd.NA], dtype="string"), column="age")
    assert t.encode(pd.Series(["Adult", "Child"])).tolist() == [9, 5]
    assert age_to_mesh(pd.Series([3.0, None])).tolist() == ["Preschool", None]


def test_unhashable_cells_are_reported_not_crashing() -> None:
    with pytest.raises(HierarchyError, match=r"2 value\(s\) missing.*\['F'\]"):
        sex_tree().check_values(["F", ["F"], ["F"], "X"], column="sex")
    with pytest.raises(HierarchyError, match=r"1 label\(s\) are not nodes"):
        sex_tree().encode(["F", ["F"]])
