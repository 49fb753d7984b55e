"""Unit tests for information_loss_star: IL+ / IL* and NIL of paper 000 (algorithms.md §5.7).

Golden values are computed by hand in the comments. Depths in the MeSH age tree (root ``*`` = 0):
Nonadult 1, Child 2, Preschool 3, In-school 3, Adult 1, Young Adult 2, Middle Aged 2, Aged 2,
Aged (65-79) 3. An original raw ``Child`` is its band, the leaf In-school (issue 20).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from medanon.errors import SchemaError, ValidationError
from medanon.hierarchies import Interval, mesh_age_tree, sex_tree
from medanon.metrics.information_loss import (StarLoss, _text_codes, _texts,
                                              information_loss_star)

AGE = [("age", "categorical")]
WEIGHT = [("weight", "numeric")]
BOTH = [("age", "categorical"), ("weight", "numeric")]
TAX = {"age": mesh_age_tree()}


def original(ids, ages=None, weights=None) -> pd.DataFrame:
    frame = {"case_id": [str(i) for i in ids]}
    if ages is not None:
        frame["age"] = ages
    if weights is not None:
        frame["weight"] = weights
    return pd.DataFrame(frame)


def release(ids, groups, ages=None, weights=None) -> pd.DataFrame:
    frame = {"case_id": [str(i) for i in ids], "group": groups}
    if ages is not None:
        frame["age"] = ages
    if weights is not None:
        frame["weight"] = weights
    return pd.DataFrame(frame)


def one_weight(a, published, span=50.0) -> float:
    """Normalized IL* term of one record with original weight a and a published cell."""
    result = information_loss_star(original([1], weights=[a]),
                                   release([1], ["g"], weights=[published]),
                                   WEIGHT, {}, numeric_ranges={"weight": span})
    return float(result.per_group["g"])


def one_age(u, published) -> float:
    result = information_loss_star(original([1], ages=[u]), release([1], ["g"], ages=[published]),
                                   AGE, TAX)
    return float(result.per_group["g"])


# ------------------------------------------------------------------------------ numeric terms
class TestNumeric:
    def test_value_inside_published_interval(self) -> None:
        # a = 40 in [30, 50]: ((40-30)^2 + (50-40)^2) / (2*(50-30)) = 200/40 = 5; 5/50 = 0.1
        assert one_weight(40.0, "[30-50]") == pytest.approx(0.1)

    def test_value_at_interval_edge(self) -> None:
        # a = 50 in [30, 50]: (20^2 + 0^2) / (2*20) = 400/40 = 10; 10/50 = 0.2
        assert one_weight(50.0, "[30-50]") == pytest.approx(0.2)

    def test_value_below_published_interval(self) -> None:
        # a = 20 < L = 30: (1/20) * int_30^50 (x - 20) dx = (1/20) * (30^2 - 10^2)/2 = 20
        # = midpoint 40 - a; 20/50 = 0.4
        assert one_weight(20.0, "[30-50]") == pytest.approx(0.4)

    def test_value_above_published_interval(self) -> None:
        # a = 70 > U = 50: (1/20) * int_30^50 (70 - x) dx = (1/20) * (40^2 - 20^2)/2 = 30
        # = a - midpoint 40; 30/50 = 0.6
        assert one_weight(70.0, "[30-50]") == pytest.approx(0.6)

    def test_point_perturbation(self) -> None:
        # DP value 43.5 for a = 40: |43.5 - 40| / 50 = 3.5/50 = 0.07 (the IL+ term of 000)
        assert one_weight(40.0, "43.5") == pytest.approx(0.07)
        # a degenerate interval [45-45] is the point 45: |45 - 40| / 50 = 0.1
        assert one_weight(40.0, "[45-45]") == pytest.approx(0.1)
        # an exact copy costs nothing
        assert one_weight(40.0, "40") == 0.0

    def test_closed_form_matches_numeric_integration(self) -> None:
        # Mixed inside/outside/degenerate cases in one vectorized call, each record its own group,
        # against the mean of |x - a| over a fine midpoint grid of [L, U].
        rng = np.random.default_rng(7)
        n = 60
        a = rng.uniform(0, 100, n)
        lo = rng.uniform(0, 100, n)
        hi = lo + rng.choice([0.0, 1.0, 15.0, 60.0], n)
        cells = [Interval(x, y).label for x, y in zip(lo, hi)]
        ids = list(range(n))
        result = information_loss_star(original(ids, weights=a),
                                       release(ids, [f"g{i:03d}" for i in ids], weights=cells),
                                       WEIGHT, {}, numeric_ranges={"weight": 1e6})
        got = result.per_group.to_numpy() * 1e6
        expected = []
        for ai, c in zip(a, cells):
            iv = Interval.parse(c)  # the published text, as the metric reads it
            if iv.width == 0:
                expected.append(abs(iv.lo - ai))
            else:
                k = 200_000
                x = iv.lo + (np.arange(k) + 0.5) * iv.width / k
                expected.append(float(np.abs(x - ai).mean()))
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)

    def test_interval_original_uses_midpoint(self) -> None:
        # A super record's weight [38, 42] (two follow-ups) is taken at its midpoint a = 40:
        # published [30-50] -> 5; published 43 -> 3. Range over originals: 90 - 38 = 52.
        weights = pd.arrays.IntervalArray.from_arrays([38.0, 90.0], [42.0, 90.0], closed="both")
        result = information_loss_star(original([1, 2], weights=weights),
                                       release([1, 2], ["g1", "g2"], weights=["[30-50]", "90"]),
                                       WEIGHT, {})
        assert result.per_group["g1"] == pytest.approx(5 / 52)
        assert result.per_group["g2"] == 0.0
        result = information_loss_star(original([1], weights=weights[:1]),
                                       release([1], ["g"], weights=["43"]), WEIGHT, {},
                                       numeric_ranges={"weight": 50})
        assert result.per_group["g"] == pytest.approx(3 / 50)

    @pytest.mark.parametrize("cells", [
        ["[38-42]", "90"],                                         # published-style text
        [pd.Interval(38.0, 42.0, closed="both"), 90.0],            # pandas Interval objects
        [Interval(38.0, 42.0), Interval(90.0, 90.0)],              # medanon Interval objects
    ])
    def test_original_forms_agree(self, cells) -> None:
        # every accepted form of the original [38, 42] gives a = 40 and the span 90 - 38 = 52
        frame = pd.DataFrame({"case_id": ["1", "2"], "weight": pd.Series(cells, dtype=object)})
        rows = release([1, 2], ["g", "h"], weights=["[30-50]", "90"])
        result = information_loss_star(frame, rows, WEIGHT, {})
        assert result.per_group["g"] == pytest.approx(5 / 52)

    def test_range_taken_from_original_values(self) -> None:
        # originals 40 and 90: range 90 - 40 = 50, so a = 40 in [30-50] costs 5/50 = 0.1
        result = information_loss_star(original([1, 2], weights=[40.0, 90.0]),
                                       release([1, 2], ["g", "h"], weights=["[30-50]", "90"]),
                                       WEIGHT, {})
        assert result.per_group["g"] == pytest.approx(0.1)
        # an explicit range overrides it: 5/100
        result = information_loss_star(original([1, 2], weights=[40.0, 90.0]),
                                       release([1, 2], ["g", "h"], weights=["[30-50]", "90"]),
                                       WEIGHT, {}, numeric_ranges={"weight": 100})
        assert result.per_group["g"] == pytest.approx(0.05)

    def test_range_ignores_published_values(self) -> None:
        # the published 0 and 1000 do not widen the range: still 90 - 40 = 50
        result = information_loss_star(original([1, 2], weights=[40.0, 90.0]),
                                       release([1, 2], ["g", "h"], weights=["45", "[80-100]"]),
                                       WEIGHT, {})
        # 5/50 = 0.1 ; a = 90 = midpoint of [80, 100]: (10^2 + 10^2)/(2*20) = 5 -> 0.1
        assert result.per_group["g"] == pytest.approx(0.1)
        assert result.per_group["h"] == pytest.approx(0.1)

    def test_clipping_of_far_dp_values(self) -> None:
        # |1000 - 40| / 50 = 19.2 and |-500 - 40| / 50 = 10.8 are clipped to 1
        assert one_weight(40.0, "1000") == 1.0
        assert one_weight(40.0, "-500") == 1.0
        # an interval far away: (550 - 40)/50 = 10.2 -> 1
        assert one_weight(40.0, "[500-600]") == 1.0
        # just below the clip bound stays as is: |89 - 40| / 50 = 0.98
        assert one_weight(40.0, "89") == pytest.approx(0.98)

    @pytest.mark.parametrize("cell", ["*", "", None, np.nan])
    def test_whole_domain_costs_one(self, cell) -> None:
        assert one_weight(40.0, cell) == 1.0

    def test_missing_original(self) -> None:
        # nothing known, nothing published: 0; a value made up for a missing original: 1
        assert one_weight(np.nan, "*") == 0.0
        assert one_weight(np.nan, "") == 0.0
        assert one_weight(np.nan, "50") == 1.0

    def test_zero_range(self) -> None:
        # one original value: span 0; a copy costs 0, anything else 1
        result = information_loss_star(original([1, 2], weights=[40.0, 40.0]),
                                       release([1, 2], ["g", "h"], weights=["40", "41"]),
                                       WEIGHT, {})
        assert result.per_group.to_dict() == {"g": 0.0, "h": 1.0}


# --------------------------------------------------------------------------- categorical terms
class TestCategorical:
    def test_generalization_to_ancestor(self) -> None:
        tree = mesh_age_tree()
        assert (tree.depth("Preschool"), tree.depth("Child")) == (3, 2)
        # Preschool (3) -> Child (2): (3 - 2)/(3 + 1) = 1/4
        assert one_age("Preschool", "Child") == pytest.approx(1 / 4)
        # Preschool (3) -> Nonadult (1): (3 - 1)/4 = 1/2
        assert one_age("Preschool", "Nonadult") == pytest.approx(1 / 2)
        # Preschool (3) -> * (0): (3 - 0)/4 = 3/4; an empty published cell is the root too
        assert one_age("Preschool", "*") == pytest.approx(3 / 4)
        assert one_age("Preschool", "") == pytest.approx(3 / 4)
        # unchanged: 0
        assert one_age("Preschool", "Preschool") == 0.0

    def test_perturbed_label_uses_lca(self) -> None:
        # Preschool -> In-school (sibling), w = Child (2): (3 + 3 - 4)/(3 + 3 - 2 + 1) = 2/5,
        # worse than the honest generalization to Child (1/4)
        assert one_age("Preschool", "In-school") == pytest.approx(2 / 5)
        # Preschool -> Adult, w = * (0): (3 + 1 - 0)/(3 + 1 - 0 + 1) = 4/5
        assert one_age("Preschool", "Adult") == pytest.approx(4 / 5)
        # a raw original Child is In-school, so Preschool is a sibling: 2/5, not the 1/4 a
        # descendant of the node Child would cost
        assert one_age("Child", "Preschool") == pytest.approx(2 / 5)
        # Aged (raw) is Aged (65-79), depth 3; Aged -> its node: (3 - 2)/(3 + 1) = 1/4
        assert one_age("Aged", "Aged") == pytest.approx(1 / 4)
        assert one_age("Aged (65-79)", "Aged (65-79)") == 0.0

    def test_all_pairs_equal_000_jaccard_formula(self) -> None:
        # 000's IL_c(u, v) = (|phi(u) U phi(v)| - |phi(u) n phi(v)|)/|phi(u) U phi(v)| on every pair
        tree = mesh_age_tree()
        # originals are record values: a node with a self leaf would be read as the leaf
        originals = [u for u in tree.nodes if u not in tree.self_leaves]
        pairs = [(u, v) for u in originals for v in tree.nodes]
        ids = list(range(len(pairs)))
        result = information_loss_star(
            original(ids, ages=[u for u, _ in pairs]),
            release(ids, [f"g{i:04d}" for i in ids], ages=[v for _, v in pairs]), AGE, TAX)
        for i, (u, v) in enumerate(pairs):
            pu, pv = set(tree.ancestors(u)), set(tree.ancestors(v))
            expected = (len(pu | pv) - len(pu & pv)) / len(pu | pv)
            assert result.per_group[f"g{i:04d}"] == pytest.approx(expected), (u, v)

    def test_missing_or_root_original(self) -> None:
        assert one_age(None, "*") == 0.0
        assert one_age(None, "") == 0.0
        assert one_age("*", "*") == 0.0
        # a label made up for a missing original: IL_c(root, Child) = 2/(2 + 1)
        assert one_age(None, "Child") == pytest.approx(2 / 3)

    def test_other_root_label_accepts_star(self) -> None:
        from medanon.hierarchies import Taxonomy
        tree = Taxonomy({"Any": None, "F": "Any", "M": "Any"}, name="sex2")
        result = information_loss_star(
            original([1, 2], ages=["F", "M"]), release([1, 2], ["g", "g"], ages=["*", "Any"]),
            AGE, {"age": tree})
        # F -> root: (1 - 0)/2 = 1/2 twice; IL*(g) = 1
        assert result.per_group["g"] == pytest.approx(1.0)


# ---------------------------------------------------------------------------- groups and NIL
def golden_case() -> tuple[pd.DataFrame, pd.DataFrame]:
    orig = original([1, 2, 3, 4, 5],
                    ages=["Preschool", "In-school", "Middle Aged", "Young Adult", "Middle Aged"],
                    weights=[40.0, 50.0, 70.0, 90.0, 80.0])          # range 90 - 40 = 50
    rows = release([1, 2, 3, 4, 5], ["g1", "g1", "g2", "g2", "g2"],
                   ages=["Child", "Child", "Adult", "Adult", "Adult"],
                   weights=["[30-50]", "[30-50]", "75", "*", "200"])
    return orig, rows


class TestGroups:
    def test_nil_over_two_groups_by_hand(self) -> None:
        orig, rows = golden_case()
        result = information_loss_star(orig, rows, BOTH, TAX)
        # g1: case 1 age Preschool -> Child 1/4, weight 40 in [30-50] 5/50 = 0.1
        #     case 2 age In-school -> Child 1/4, weight 50 in [30-50] 10/50 = 0.2
        #     IL*(g1) = 0.25 + 0.1 + 0.25 + 0.2 = 0.8; NIL(g1) = 0.8/(2*2) = 0.2
        # g2: ages Middle Aged/Young Adult (2) -> Adult (1): (2 - 1)/3 = 1/3 each
        #     weights 75 vs 70: 5/50 = 0.1; '*': 1; 200 vs 80: 120/50 = 2.4 -> clipped 1
        #     IL*(g2) = 3*(1/3) + 0.1 + 1 + 1 = 3.1; NIL(g2) = 3.1/(3*2) = 0.51666...
        # NIL = (0.2 + 0.516666...)/2 = 0.358333...
        assert result.per_group["g1"] == pytest.approx(0.8)
        assert result.per_group["g2"] == pytest.approx(3.1)
        assert result.nil == pytest.approx((0.2 + 3.1 / 6) / 2)
        # record-weighted per attribute: age (1/4 + 1/4 + 3*(1/3))/5 = 0.3,
        # weight (0.1 + 0.2 + 0.1 + 1 + 1)/5 = 0.48
        assert result.per_attribute.to_dict() == pytest.approx({"age": 0.3, "weight": 0.48})
        assert (result.n_records, result.n_withheld) == (5, 0)

    def test_group_average_differs_from_record_average(self) -> None:
        # NIL averages groups, not records: the record average would be (0.8 + 3.1)/(5*2) = 0.39
        orig, rows = golden_case()
        result = information_loss_star(orig, rows, BOTH, TAX)
        assert result.nil != pytest.approx(0.39)
        assert result.per_attribute.mean() == pytest.approx(0.39)

    def test_il_plus_on_point_values(self) -> None:
        # all numeric values published as numbers: IL*(g) = IL+(g) = sum |x - a|/range + IL_c
        orig = original([1, 2], ages=["Preschool", "In-school"], weights=[40.0, 90.0])
        rows = release([1, 2], ["g", "g"], ages=["Child", "Child"], weights=["42", "85"])
        result = information_loss_star(orig, rows, BOTH, TAX)
        # 1/4 + 2/50 + 1/4 + 5/50 = 0.64
        assert result.per_group["g"] == pytest.approx(0.64)
        assert result.nil == pytest.approx(0.64 / 4)

    def test_withheld_cases_are_not_scored(self) -> None:
        orig, rows = golden_case()
        extra = pd.concat([orig, original([6], ages=["Adult"], weights=[60.0])], ignore_index=True)
        # case 6 is not published: same losses (its weight 60 lies inside the range 40..90)
        result = information_loss_star(extra, rows, BOTH, TAX)
        assert (result.n_records, result.n_withheld) == (5, 1)
        assert result.nil == pytest.approx((0.2 + 3.1 / 6) / 2)
        # dropping a released case drops it from its group: g1 holds case 2 only:
        # IL*(g1) = 0.25 + 0.2; NIL(g1) = 0.45/(1*2) = 0.225
        result = information_loss_star(extra, rows[rows.case_id != "1"], BOTH, TAX)
        assert (result.n_records, result.n_withheld) == (4, 2)
        assert result.per_group["g1"] == pytest.approx(0.45)
        assert result.nil == pytest.approx((0.225 + 3.1 / 6) / 2)

    def test_withheld_cases_still_set_the_range(self) -> None:
        # the range is over the ORIGINAL values of the period: withheld 140 makes it 100
        orig = original([1, 2], weights=[40.0, 140.0])
        result = information_loss_star(orig, release([1], ["g"], weights=["[30-50]"]), WEIGHT, {})
        assert result.per_group["g"] == pytest.approx(5 / 100)
        assert result.n_withheld == 1

    def test_empty_release(self) -> None:
        orig, rows = golden_case()
        result = information_loss_star(orig, rows.iloc[:0], BOTH, TAX)
        assert result.nil == 0.0
        assert result.per_group.empty
        assert (result.n_records, result.n_withheld) == (0, 5)

    def test_case_ids_joined_as_text(self) -> None:
        # integer case ids in the original match the published strings; row order is irrelevant
        orig = pd.DataFrame({"case_id": [2, 1], "age": ["In-school", "Preschool"]})
        rows = release([1, 2], ["g", "h"], ages=["Child", "In-school"])
        result = information_loss_star(orig, rows, AGE, TAX)
        assert result.per_group.to_dict() == pytest.approx({"g": 0.25, "h": 0.0})

    def test_to_dict_is_json_ready(self) -> None:
        orig, rows = golden_case()
        result = information_loss_star(orig, rows, BOTH, TAX)
        data = json.loads(json.dumps(result.to_dict()))
        assert data["nil"] == pytest.approx(result.nil)
        assert data["per_group"] == pytest.approx({"g1": 0.8, "g2": 3.1})
        assert data["per_attribute"] == pytest.approx({"age": 0.3, "weight": 0.48})
        assert (data["n_records"], data["n_withheld"]) == (5, 0)
        assert isinstance(result, StarLoss)

    def test_super_records_input(self) -> None:
        from types import SimpleNamespace
        orig, rows = golden_case()
        frame = orig.rename(columns={"case_id": "CASEID"})
        records = SimpleNamespace(frame=frame, schema=SimpleNamespace(case_id="CASEID"))
        result = information_loss_star(records, rows, BOTH, TAX)
        assert result.per_group["g1"] == pytest.approx(0.8)

    def test_large_release_of_mixed_cells(self) -> None:
        # Generalized, interval and noisy cells over 10,000 groups; how long it takes is
        # measured by benchmarks/bench_information_loss.py, not asserted here.
        rng = np.random.default_rng(0)
        n = 100_000
        tree = mesh_age_tree()
        ids = np.arange(n).astype(str)
        ages = rng.choice(tree.values, n)
        weights = rng.uniform(30, 120, n).round(1)
        orig = pd.DataFrame({"case_id": ids, "age": ages, "sex": rng.choice(["F", "M"], n),
                             "weight": weights})
        lo = np.floor(weights / 10) * 10
        cells = np.where(rng.random(n) < 0.5, [f"[{a:g}-{a + 10:g}]" for a in lo],
                         (weights + rng.laplace(0, 5, n)).round(2).astype(str))
        rows = pd.DataFrame({"case_id": ids, "group": (np.arange(n) // 10).astype(str),
                             "age": [tree.parent(a) for a in ages], "sex": "*", "weight": cells})
        result = information_loss_star(orig, rows, [*BOTH, ("sex", "categorical")],
                                       {"age": tree, "sex": sex_tree()})
        assert len(result.per_group) == n // 10
        assert 0 < result.nil < 1
        # sex published as '*' always: (1 - 0)/(1 + 1) = 1/2 for every record
        assert result.per_attribute["sex"] == pytest.approx(0.5)


# --------------------------------------------------------------------------------------- errors
class TestErrors:
    def test_unknown_case_in_release(self) -> None:
        orig, rows = golden_case()
        bad = pd.concat([rows, release([99], ["g1"], ages=["*"], weights=["*"])], ignore_index=True)
        with pytest.raises(ValidationError, match=r"'rows' parameter of information_loss_star "
                                                  r"must only publish.*'99'"):
            information_loss_star(orig, bad, BOTH, TAX)

    @pytest.mark.parametrize("column", ["weight", "group", "case_id"])
    def test_missing_release_column(self, column) -> None:
        orig, rows = golden_case()
        with pytest.raises(SchemaError, match=rf"'rows' parameter.*got none named '{column}'"):
            information_loss_star(orig, rows.drop(columns=column), BOTH, TAX)

    def test_missing_original_column(self) -> None:
        orig, rows = golden_case()
        with pytest.raises(SchemaError, match=r"'original' parameter.*got none named 'age'"):
            information_loss_star(orig.drop(columns="age"), rows, BOTH, TAX)

    def test_missing_hierarchy(self) -> None:
        orig, rows = golden_case()
        with pytest.raises(SchemaError, match="got none for 'age'"):
            information_loss_star(orig, rows, BOTH, {})

    def test_repeated_case_id(self) -> None:
        orig, rows = golden_case()
        with pytest.raises(ValidationError, match=r"'rows' parameter.*each case_id once.*'1'"):
            information_loss_star(orig, pd.concat([rows, rows.iloc[:1]]), BOTH, TAX)
        with pytest.raises(ValidationError, match=r"'original' parameter.*each case_id once"):
            information_loss_star(pd.concat([orig, orig.iloc[:1]]), rows, BOTH, TAX)

    def test_unreadable_cells(self) -> None:
        orig, rows = golden_case()
        bad = rows.assign(weight=["heavy", "[30-50]", "75", "*", "200"])
        with pytest.raises(ValidationError, match=r"numeric QID 'weight'.*'heavy'"):
            information_loss_star(orig, bad, BOTH, TAX)
        bad = rows.assign(age=["Toddler", "Child", "Adult", "Adult", "Adult"])
        with pytest.raises(ValidationError, match=r"'rows' parameter.*'mesh-age'.*'Toddler'"):
            information_loss_star(orig, bad, BOTH, TAX)
        with pytest.raises(ValidationError, match=r"'original' parameter.*'Toddler'"):
            information_loss_star(orig.assign(age="Toddler"), rows, BOTH, TAX)

    @pytest.mark.parametrize("ranges", [{"weight": 0}, {"weight": -5}, {"weight": float("nan")},
                                        {"age": 10}, [("weight", 50)]])
    def test_bad_numeric_ranges(self, ranges) -> None:
        orig, rows = golden_case()
        with pytest.raises(ValidationError, match="'numeric_ranges' parameter"):
            information_loss_star(orig, rows, BOTH, TAX, numeric_ranges=ranges)

    @pytest.mark.parametrize("qids", [[], [("age", "ordinal")], "age", [("age",)],
                                      [("age", "categorical"), ("age", "categorical")]])
    def test_bad_qids(self, qids) -> None:
        orig, rows = golden_case()
        with pytest.raises(ValidationError, match="'qids' parameter of information_loss_star"):
            information_loss_star(orig, rows, qids, TAX)

    def test_not_dataframes(self) -> None:
        orig, rows = golden_case()
        with pytest.raises(ValidationError, match=r"'rows' parameter.*got list"):
            information_loss_star(orig, rows.to_dict("records"), BOTH, TAX)
        with pytest.raises(ValidationError, match=r"'original' parameter.*got dict"):
            information_loss_star(orig.to_dict(), rows, BOTH, TAX)


@pytest.mark.parametrize("labels", [
    ["Child", "Adult", "Child", "*", "Adult"],
    [],
    ["Child", "nope", "Adult", "nope", "other"],
    ["Child", None, "Adult"],
])
def test_encode_distinct_is_encode(labels):
    """Each distinct label looked up once gives encode's codes, or encode's error word for
    word (the unknown labels named once each, in the order first met)."""
    from medanon.errors import HierarchyError
    from medanon.metrics.information_loss import encode_distinct

    tax = mesh_age_tree()
    try:
        want = tax.encode(list(labels))
    except HierarchyError as exc:
        with pytest.raises(HierarchyError) as got:
            encode_distinct(tax, np.array(labels, dtype=object))
        assert str(got.value) == str(exc)
    else:
        got_codes = encode_distinct(tax, np.array(labels, dtype=object))
        assert got_codes.dtype == want.dtype and np.array_equal(got_codes, want)


def test_texts_strip_cells_with_white_space_at_either_end_and_keep_the_others():
    """The fast path of _texts (every cell a str: stripped only when some distinct text holds
    white space, issue 43) reads what stripping every cell reads, dtype included."""
    import numpy as np
    import pandas as pd

    from medanon.metrics import information_loss

    cells = ["12", " 13", "14\t", "a b", "\u00a015", "16", "12", "x\x00 y", ""]
    for chosen in ([0, 5, 6], [0, 1, 5], [2, 0], [3, 0], [4, 5], [7, 0], [8, 0], list(range(9))):
        column = pd.Series(np.array([cells[i] for i in chosen], dtype=object), name="case_id")
        got = information_loss._texts(column)
        want = column.astype(str).str.strip()
        assert got.tolist() == want.tolist() and got.dtype == want.dtype
        assert got.name == "case_id"


@pytest.mark.parametrize("cells", [
    ["a", " a", "b ", "", " ", "b", "a", "c\t"],
    ["[10-20]", "*", "[10-20]", "5"],
    [],
    ["x", None, " x", float("nan")],
    [1, "1", " 1"],
])
def test_text_codes_are_the_factorized_texts(cells):
    # _text_codes factorizes a str column once and strips its distinct cells (issue 43): the
    # codes, the texts, their order and their dtype are those of factorizing _texts' column,
    # for an object column and for a string one (the super records' labels, with missing
    # cells read as "")
    columns = [pd.Series(cells, dtype=object)]
    if all(c is None or isinstance(c, str) or c != c for c in cells):
        columns.append(pd.Series(cells, dtype=pd.Series([], dtype=object).astype(str).dtype))
        assert isinstance(columns[-1].dtype, pd.StringDtype)
    for column in columns:
        codes, texts = _text_codes(column)
        want_codes, want_texts = pd.factorize(_texts(column))
        assert codes.dtype == want_codes.dtype and codes.tolist() == want_codes.tolist()
        assert type(texts) is type(want_texts) and texts.dtype == want_texts.dtype
        assert texts.tolist() == want_texts.tolist()
