"""The independent PPMS(k, θ*) / PPMS(k, θ, α) checker of published series, on tiny releases."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from medanon.data.schema import Schema
from medanon.errors import (HierarchyError, InputFormatError, PrivacyViolation, SchemaError,
                            ValidationError)
from medanon.hierarchies import mesh_age_tree, sex_tree
from medanon.models import QidInfo, SeriesCheck, ThetaTable, check_series, qids_from_schema

QIDS = (QidInfo("sex", "categorical", sex_tree()), QidInfo("age", "numeric"))
SENSITIVE = ("reactions", "indications")
LOOSE = ThetaTable(1.0)


def release(period: str, rows: list[tuple]) -> pd.DataFrame:
    """Rows ``(case_id, group, sex, age, reactions[, indications])`` as a published release."""
    out = []
    for row in rows:
        case_id, group, sex, age, reactions, *rest = row
        out.append({"period": period, "case_id": str(case_id), "group": str(group), "sex": sex,
                    "age": age, "reactions": reactions, "indications": rest[0] if rest else "",
                    "drugs": ""})
    return pd.DataFrame(out, columns=["period", "case_id", "group", "sex", "age", "reactions",
                                      "indications", "drugs"])


def same_group(cases, *, group="1", sex="*", age="[30-35]", reactions="") -> list[tuple]:
    return [(c, group, sex, age, reactions) for c in cases]


def check(releases, **kwargs) -> SeriesCheck:
    kwargs.setdefault("qids", QIDS)
    kwargs.setdefault("sensitive", SENSITIVE)
    kwargs.setdefault("theta", LOOSE)
    # the tiny releases number their cases freely: their CaseIDs are linkage only
    kwargs.setdefault("case_ids", "pseudonym")
    return check_series(releases, **kwargs)


# ------------------------------------------------------------------------------- k and B/L
def test_scenario_one_old_case_leaves_two_new_cases() -> None:
    """001 Scenario I: case 1 (Male, [30-35]) was published in quarter 1; quarter 2's group
    {1, 4, 7} has only 2 new cases left after the B/L-attacks, so it is a DIG for k = 3."""
    q1 = release("2020Q1", [(1, "1", "M", "[30-35]", "Flu")])
    q2 = release("2020Q2", [(1, "1", "*", "[30-35]", "Flu"), (4, "1", "*", "[30-35]", "HIV"),
                            (7, "1", "*", "[30-35]", "Diabetes")])
    result = check([q1, q2], k=3, periods=["2020Q2"])
    assert [p.period for p in result.periods] == ["2020Q2"]
    period = result.period("2020Q2")
    assert period.dir == 1.0 and period.n_dig == 1 and period.n_groups == 1
    assert period.dsr == 0.0 and not period.ok and not result.ok
    group = period.groups[0]
    assert (group.size, group.kept, group.excluded, group.excluded_old) == (3, 2, 1, 1)
    assert (group.excluded_forward, group.excluded_md) == (0, 0)
    assert group.dig and not group.dsg and not group.ssg
    assert group.violations == ("only 2 case(s) remain after B/F/L exclusions (k=3; 3 in the "
                                "group, 1 excludable)",)
    assert result.violations == (f"2020Q2 group 1: {group.violations[0]}",)
    with pytest.raises(PrivacyViolation, match="1 place"):
        result.raise_if_violated()


def test_scenario_one_passes_with_two_more_new_cases() -> None:
    q1 = release("2020Q1", [(1, "1", "M", "[30-35]", "Flu")])
    q2 = release("2020Q2", same_group([1, 4, 7, 8, 9]))
    result = check([q1, q2], k=3, periods=["2020Q2"])
    assert result.ok and result.violations == ()
    group = result.periods[0].groups[0]
    assert (group.size, group.kept, group.excluded_old) == (5, 4, 1)
    result.raise_if_violated()  # no error
    # Reporting on every period: quarter 1 (one case) is a DIG on its own.
    everything = check([q1, q2], k=3)
    assert [p.period for p in everything.periods] == ["2020Q1", "2020Q2"]
    assert everything.period("2020Q1").dir == 1.0 and everything.period("2020Q2").ok


def test_dir_is_the_share_of_dangerous_groups() -> None:
    q1 = release("2020Q1", same_group([1, 2], group="old"))
    q2 = release("2020Q2", same_group([1, 2, 3, 4], group="a")
                 + same_group([5, 6, 7, 8], group="b"))
    period = check([q1, q2], k=3, periods=["2020Q2"]).periods[0]
    assert [g.group for g in period.groups] == ["a", "b"]
    assert [g.dig for g in period.groups] == [True, False]
    assert period.dir == 0.5 and period.n_dig == 1


def test_releases_are_sorted_and_may_be_given_by_period() -> None:
    q1 = release("2020Q1", same_group([1]))
    q2 = release("2020Q2", same_group([1, 2, 3]))
    assert check([q2, q1], k=2).period("2020Q2").groups[0].kept == 2
    empty = release("2020Q3", [])
    result = check({"2020Q3": empty, "2020q1": q1, "2020Q2": q2}, k=2)
    assert [p.period for p in result.periods] == ["2020Q1", "2020Q2", "2020Q3"]
    assert result.period("2020Q3").n_groups == 0 and result.period("2020Q3").dir == 0.0


# ------------------------------------------------------------------------------------ F-attack
@pytest.mark.parametrize(("later_sex", "later_age", "excluded"), [
    ("M", "[30-35]", True),      # Male does not cover Female
    ("*", "[30-35]", False),     # the root covers everything
    ("F", "[31-40]", True),      # [31-40] does not contain [30-35]
    ("F", "[30-40]", False),
    ("F", "32", True),           # a point does not cover an interval
])
def test_forward_attack_excludes_a_case_whose_later_value_does_not_cover(
        later_sex: str, later_age: str, excluded: bool) -> None:
    r1 = release("2020Q1", same_group([1, 2, 3, 4], sex="F"))
    r2 = release("2020Q2", [(1, "1", later_sex, later_age, ""), (5, "1", later_sex, later_age, "")])
    group = check([r1, r2], k=4, periods=["2020Q1"]).periods[0].groups[0]
    assert group.excluded_forward == int(excluded)
    assert group.excluded_old == 0
    assert group.kept == 4 - int(excluded)
    assert group.dig is excluded


def test_forward_attack_respects_the_lifespan() -> None:
    r1 = release("2020Q1", same_group([1, 2, 3], sex="F"))
    r2 = release("2020Q2", same_group([7, 8, 9], sex="F"))
    r3 = release("2020Q3", [(1, "1", "M", "[30-35]", "")])  # two periods after R1
    for lifespan, excluded in ((None, 1), (2, 1), (1, 0)):
        result = check([r1, r2, r3], k=3, lifespan=lifespan, periods=["2020Q1"])
        assert result.periods[0].groups[0].excluded_forward == excluded
        assert result.ok is (excluded == 0)


# --------------------------------------------------------------------------------------- θ
def test_theta_confidence_of_new_cases() -> None:
    rows = [(c, "1", "*", "[30-35]", "X|Y" if c <= 2 else "Y") for c in range(1, 6)]
    strict = check([release("2020Q1", rows)], k=5, theta=ThetaTable(1.0, {"X": 0.2})).periods[0]
    assert strict.dsr == 1.0 and strict.n_dsg == 1 and strict.dir == 0.0
    assert strict.groups[0].violations == ("term 'X': confidence 0.4 (2/5) > theta 0.2",)
    assert check([release("2020Q1", rows)], k=5, theta=ThetaTable(0.4, {"Y": 1.0})).ok  # 2/5 = θ


def test_theta_uses_the_kept_denominator_when_an_old_case_lacks_the_term() -> None:
    q1 = release("2020Q1", same_group([6]))
    rows = [(c, "1", "*", "[30-35]", "X" if c <= 2 else "") for c in range(1, 7)]
    q2 = release("2020Q2", rows)
    # Naively 2/6 = 0.33 <= 0.35, but the attacker drops old case 6: 2/5 = 0.4.
    period = check([q1, q2], k=5, theta=ThetaTable(0.35), periods=["2020Q2"]).periods[0]
    assert period.groups[0].kept == 5
    assert period.groups[0].violations == ("term 'X': confidence 0.4 (2/5) > theta 0.35",)
    assert check([q1, q2], k=5, theta=ThetaTable(0.4), periods=["2020Q2"]).ok


def test_theta_keeps_an_old_case_that_has_the_term() -> None:
    q1 = release("2020Q1", same_group([6]))
    rows = [(c, "1", "*", "[30-35]", "X" if c in (1, 2, 6) else "") for c in range(1, 7)]
    period = check([q1, release("2020Q2", rows)], k=5, theta=ThetaTable(0.45),
                   periods=["2020Q2"]).periods[0]
    # 3 cases have X (one old): the attacker keeps the old one, 3 / (5 + 1) = 0.5.
    assert period.groups[0].violations == ("term 'X': confidence 0.5 (3/6) > theta 0.45",)


def test_theta_per_period_tables() -> None:
    rows = [(c, "1", "*", "[30-35]", "X" if c == 1 else "") for c in range(1, 5)]
    r1, r2 = release("2020Q1", rows), release("2020Q2", same_group([11, 12, 13, 14]))
    thetas = {"2020Q1": ThetaTable(0.2), "2020Q2": ThetaTable(0.1)}
    result = check([r1, r2], k=2, theta=thetas)
    assert result.period("2020Q1").dsr == 1.0 and result.period("2020Q2").ok
    with pytest.raises(ValidationError, match="no entry for period"):
        check([r1, r2], k=2, theta={"2020Q1": ThetaTable(0.2)})


def test_a_group_left_empty_is_dangerous_for_every_term_even_at_theta_one() -> None:
    q1 = release("2020Q1", same_group([1, 2]))
    q2 = release("2020Q2", same_group([1, 2], reactions="X"))
    group = check([q1, q2], k=1, periods=["2020Q2"]).periods[0].groups[0]
    assert group.kept == 0 and group.dig and group.dsg
    assert group.violations[1] == ("term 'X': confidence 1 (2/2), no case remains after B/F/L "
                                   "exclusions (theta 1)")


def _brute_force_worst(has: np.ndarray, excludable: np.ndarray) -> float:
    """Largest σ_s / |g'| over every subset of the excludable records dropped (g' non-empty)."""
    x = np.flatnonzero(excludable)
    best = 0.0
    for r in range(len(x) + 1):
        for dropped in itertools.combinations(x, r):
            keep = np.ones(len(has), dtype=bool)
            keep[list(dropped)] = False
            if keep.any():
                best = max(best, has[keep].sum() / keep.sum())
    return best


def test_theta_matches_a_brute_force_attacker() -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(2, 8))
        old = rng.random(n) < 0.4
        has = rng.random(n) < 0.4
        has[0] = True
        theta = float(rng.choice([0.2, 0.34, 0.5, 0.75]))
        previous = release("2020Q1", same_group([c for c in range(n) if old[c]]))
        rows = [(c, "1", "*", "[30-35]", "X" if has[c] else "") for c in range(n)]
        result = check({"2020Q1": previous, "2020Q2": release("2020Q2", rows)}, k=1,
                       theta=ThetaTable(theta), periods=["2020Q2"])
        assert result.periods[0].groups[0].dsg == (_brute_force_worst(has, old) > theta + 1e-12)


# -------------------------------------------------------------------------------- lifespan
@pytest.mark.parametrize(("lifespan", "old"), [(None, True), (4, True), (3, False), (1, False)])
def test_a_case_seen_longer_ago_than_the_lifespan_is_new(lifespan: int | None, old: bool) -> None:
    first = release("2020Q1", same_group([1]))
    again = release("2021Q1", same_group([1, 2, 3]))  # four quarters later
    group = check([first, again], k=3, lifespan=lifespan, periods=["2021Q1"]).periods[0].groups[0]
    assert group.excluded_old == int(old)
    assert group.dig is old


# ------------------------------------------------------------------------------ MD and α
def _md_series() -> list[pd.DataFrame]:
    """Q1: one group of 4 new cases, case 1 an ss-record; cases 3, 4 come back in Q2."""
    q1 = release("2020Q1", [(1, "1", "*", "[30-35]", "A|B|C"), (2, "1", "*", "[30-35]", "A"),
                            (3, "1", "*", "[30-35]", "B"), (4, "1", "*", "[30-35]", "")])
    q2 = release("2020Q2", [(3, "1", "*", "[30-35]", "A"), (4, "1", "*", "[30-35]", ""),
                            (5, "1", "*", "[30-35]", "C"), (6, "1", "*", "[30-35]", "")])
    return [q1, q2]


SS = {"2020Q1": {"reactions": 3}, "2020Q2": {"reactions": 3}}


def test_md_attack_and_the_four_views_of_paper_002() -> None:
    result = check(_md_series(), k=2, md=True, alpha=0.25, ss_min_counts=SS)
    q1, q2 = result.periods
    assert q1.md_checked and q1.alpha_views == ("GV1", "GV2", "GV3", "GV4")
    group = q1.groups[0]
    # GV1 = GV3 = {1, 2}: one ss-record of two; GV2 = GV4 = the 4 cases: 1/4 = α passes.
    assert (group.size, group.kept, group.excluded_md, group.excluded) == (4, 2, 2, 2)
    assert not group.dig and not group.dsg and group.ssg
    assert group.violations == ("view GV1: ss share 0.5 (1/2) > alpha 0.25",
                                "view GV3: ss share 0.5 (1/2) > alpha 0.25")
    assert q1.ssgr == 1.0 and not q1.ok
    # Q2 is the last release: no next one, so MD is not checked (and is no failure).
    assert not q2.md_checked and q2.alpha_views == ("GV2", "GV4")
    assert q2.ok and q2.groups[0].kept == 2 and q2.groups[0].excluded_md == 0


def test_md_exclusions_count_for_k() -> None:
    result = check(_md_series(), k=3, md=True, periods=["2020Q1"])
    group = result.periods[0].groups[0]
    assert group.violations == ("only 2 case(s) remain after B/F/L/MD exclusions (k=3; 4 in the "
                                "group, 2 excludable)",)
    assert check(_md_series(), k=3, md=False, periods=["2020Q1"]).ok


def test_alpha_without_md_checks_the_views_it_can() -> None:
    result = check(_md_series(), k=2, alpha=0.25, ss_min_counts=SS)
    assert all(p.alpha_views == ("GV2", "GV4") and not p.md_checked for p in result.periods)
    assert result.ok
    stricter = check(_md_series(), k=2, alpha=0.2, ss_min_counts=SS, periods=["2020Q1"])
    assert stricter.periods[0].groups[0].violations == (
        "view GV2: ss share 0.25 (1/4) > alpha 0.2", "view GV4: ss share 0.25 (1/4) > alpha 0.2")


def test_md_is_not_checkable_across_a_gap() -> None:
    q1 = _md_series()[0]
    q3 = release("2020Q3", [(c, "1", "*", "[30-35]", "") for c in (3, 4, 5, 6)])
    ss = {"2020Q1": {"reactions": 3}, "2020Q3": {"reactions": 3}}
    result = check([q1, q3], k=2, md=True, alpha=0.25, ss_min_counts=ss)
    assert not result.period("2020Q1").md_checked
    assert result.period("2020Q1").groups[0].excluded_md == 0


def test_ss_records_use_any_listed_column_and_its_own_minimum() -> None:
    rows = [(1, "1", "*", "[30-35]", "A", "I1|I2"), (2, "1", "*", "[30-35]", "A|B|C", ""),
            (3, "1", "*", "[30-35]", "A", ""), (4, "1", "*", "[30-35]", "B", "")]
    r = [release("2020Q1", rows)]
    both = check(r, k=2, alpha=0.4, ss_min_counts={"2020Q1": {"reactions": 3, "indications": 2}})
    assert both.periods[0].groups[0].violations[0] == "view GV2: ss share 0.5 (2/4) > alpha 0.4"
    assert check(r, k=2, alpha=0.4, ss_min_counts={"2020Q1": {"reactions": 3}}).ok
    with pytest.raises(ValidationError, match="'ss_min_counts' parameter of check_series is "
                                              "required"):
        check(r, k=2, alpha=0.4)
    with pytest.raises(SchemaError, match="ss column 'nope'"):
        check(r, k=2, alpha=0.4, ss_min_counts={"2020Q1": {"nope": 2}})


# ------------------------------------------------------------------------- cells and terms
def test_empty_cells_are_the_whole_domain() -> None:
    r1 = release("2020Q1", same_group([1, 2, 3], sex="", age=""))
    # Later values F and [0-120] do not cover the whole domain: case 1 is F-excludable.
    r2 = release("2020Q2", [(1, "9", "F", "[30-35]", ""), (2, "9", "", "[0-120]", ""),
                            (3, "9", "", "", "")])
    group = check([r1, r2], k=1, periods=["2020Q1"]).periods[0].groups[0]
    assert group.excluded_forward == 2 and group.kept == 1
    # Empty and suppressed (*) later cells cover anything.
    r2 = release("2020Q2", [(1, "9", "", "*", ""), (2, "9", "*", "", "")])
    assert check([r1, r2], k=3, periods=["2020Q1"]).ok


def test_missing_values_read_as_nan_are_empty_cells() -> None:
    r1 = release("2020Q1", same_group([1, 2, 3], sex="F"))
    r2 = release("2020Q2", [(1, "9", "F", "[30-35]", "X")])
    r2["sex"] = np.nan
    r2["indications"] = None
    result = check([r1, r2], k=3)
    # NaN is read as an empty cell, i.e. missing (not the root): a case published F in Q1 and
    # missing in Q2 is excluded by the F-attack for a target known to be F (issue 29)
    group = result.period("2020Q1").groups[0]
    assert (group.excluded_forward, group.kept) == (1, 2)
    r2["sex"] = "*"  # the root covers F
    assert check([r1, r2], k=3).period("2020Q1").ok


def test_a_term_in_two_columns_of_one_case_counts_once() -> None:
    rows = [(1, "1", "*", "[30-35]", "X|Y", "X"), (2, "1", "*", "[30-35]", "", ""),
            (3, "1", "*", "[30-35]", "", " Y ")]
    period = check([release("2020Q1", rows)], k=3, theta=ThetaTable(0.3)).periods[0]
    assert period.groups[0].violations == ("term 'X': confidence 0.3333 (1/3) > theta 0.3",
                                           "term 'Y': confidence 0.6667 (2/3) > theta 0.3")


def test_mesh_age_as_a_categorical_qid() -> None:
    qids = (QidInfo("age", "categorical", mesh_age_tree()),)
    r1 = release("2020Q1", [(1, "1", "", "Preschool", ""), (2, "1", "", "Preschool", "")])
    covering = release("2020Q2", [(1, "1", "", "Nonadult", "")])
    escaping = release("2020Q2", [(1, "1", "", "Adult", "")])
    assert check([r1, covering], qids=qids, k=2, periods=["2020Q1"]).ok
    assert check([r1, escaping], qids=qids, k=2, periods=["2020Q1"]).periods[0].n_dig == 1


# -------------------------------------------------------------------------------- validation
def test_bad_parameters_and_inputs_fail_clearly() -> None:
    r1 = release("2020Q1", same_group([1, 2]))
    with pytest.raises(ValidationError, match="The 'k' parameter of check_series must be an "
                                              "integer >= 1; got 0."):
        check([r1], k=0)
    with pytest.raises(ValidationError, match="'lifespan'"):
        check([r1], k=2, lifespan=0)
    with pytest.raises(ValidationError, match="'alpha'"):
        check([r1], k=2, alpha=1.5, ss_min_counts={})
    with pytest.raises(ValidationError, match="2021Q1"):
        check([r1], k=2, periods=["2021Q1"])
    with pytest.raises(ValidationError, match="ThetaTable"):
        check([r1], k=2, theta=0.2)
    with pytest.raises(ValidationError, match="taxonomy"):
        QidInfo("sex", "categorical")
    with pytest.raises(SchemaError, match="'age'"):
        check([r1.drop(columns="age")], k=2)
    with pytest.raises(InputFormatError, match="several rows"):
        check([release("2020Q1", same_group([1, 1]))], k=2)
    with pytest.raises(InputFormatError, match="one release per period"):
        check([r1, r1], k=2)
    with pytest.raises(InputFormatError, match="exactly one period"):
        check([pd.concat([r1, release("2020Q2", same_group([3]))])], k=2)
    with pytest.raises(InputFormatError, match="exactly one period"):
        check([release("2020Q1", [])], k=2)
    with pytest.raises(HierarchyError, match="'Female'"):
        check([release("2020Q1", same_group([1], sex="Female"))], k=1)
    with pytest.raises(InputFormatError, match="column 'age'"):
        check([release("2020Q1", same_group([1], age="30 to 35"))], k=1)


def test_more_input_checks() -> None:
    r1 = release("2020Q1", same_group([1, 2]))
    with pytest.raises(ValidationError, match="sequence of DataFrames"):
        check(r1, k=2)
    with pytest.raises(ValidationError, match="Release #1 is a dict"):
        check([{"period": "2020Q1"}], k=2)
    with pytest.raises(ValidationError, match="sequence of QidInfo"):
        check([r1], k=2, qids=QIDS[0])
    with pytest.raises(ValidationError, match="distinct"):
        check([r1], k=2, sensitive=["reactions", "reactions"])
    with pytest.raises(ValidationError, match="distinct"):
        check([r1], k=2, sensitive=["sex"])
    with pytest.raises(ValidationError, match="'md'"):
        check([r1], k=2, md=1)
    with pytest.raises(ValidationError, match=r"ss_min_counts\['2020Q1'\]\['reactions'\]"):
        check([r1], k=2, alpha=0.5, ss_min_counts={"2020Q1": {"reactions": 0}})
    with pytest.raises(InputFormatError, match="not 2020Q2"):
        check({"2020Q2": r1}, k=2)
    blank = r1.copy()
    blank.loc[0, "period"] = ""
    with pytest.raises(InputFormatError, match="rows without a period"):
        check([blank], k=2)
    with pytest.raises(InputFormatError, match="does not parse"):
        check([r1.assign(period="2020-01")], k=2)
    with pytest.raises(ValidationError, match="2020Q3 was not checked"):
        check([r1], k=2).period("2020Q3")


def test_qids_from_a_schema() -> None:
    qids = qids_from_schema(Schema.default())
    assert [(q.name, q.kind) for q in qids] == [("age", "categorical"), ("sex", "categorical"),
                                                ("weight", "numeric")]
    assert qids[0].taxonomy == mesh_age_tree() and qids[2].taxonomy is None


# ------------------------------------------------------- an empty cell is missing (issue 29)
def test_a_blank_cell_in_a_suppressed_group_is_malformed() -> None:
    """An empty cell means *missing*, ``*`` means any value: a group of ``*`` ages with one
    blanked row tells that this case has no age, so the group no longer shares its value."""
    q1 = release("2020Q1", same_group(range(1, 6), age="*"))
    q1.loc[2, "age"] = ""
    with pytest.raises(InputFormatError, match=r"group 1 publishes age as '', '\*'"):
        check([q1], k=3)
    assert check([release("2020Q1", same_group(range(1, 6), age="*"))], k=3).ok
    assert check([release("2020Q1", same_group(range(1, 6), age=""))], k=3).ok


def test_a_later_missing_value_excludes_the_case_for_a_target_that_has_one() -> None:
    """Seven cases published an age interval in Q1; Q2 publishes them (a whole, uniform group)
    with the age blank. The F-adversary who knows the target has an age excludes the seven from
    the Q1 group: 2 < k = 3 remain. Read as "any age" (before), the blank excluded nobody."""
    q1 = release("2020Q1", same_group(range(1, 10), age="[30-35]"))
    q2 = release("2020Q2", same_group(range(1, 8), age="") + same_group(range(20, 23), group="2"))
    result = check([q1, q2], k=3, periods=["2020Q1"])
    group = result.period("2020Q1").groups[0]
    assert (group.size, group.excluded_forward, group.kept) == (9, 7, 2) and group.dig
    # the neighbour that publishes the seven as "*" (any age, missing included) excludes nobody
    q2_star = release("2020Q2", same_group(range(1, 8), age="*")
                      + same_group(range(20, 23), group="2"))
    assert check([q1, q2_star], k=3, periods=["2020Q1"]).ok
    # and a case missing in both releases is consistent: not excluded
    both = check([release("2020Q1", same_group(range(1, 10), age="")), q2], k=3,
                 periods=["2020Q1"])
    assert both.ok


def test_the_attacks_read_an_empty_cell_as_missing_as_the_checker_does() -> None:
    """``medanon attack`` on one target and its worst case over every target agree with verify:
    the seven cases that Q2 publishes with no age are excluded from Q1's group for a target that
    has an age, and a record whose own age is empty is no candidate for such a target."""
    from medanon.attacks import attack_target
    from medanon.attacks.worst_case import attack_series
    from medanon.published.series import PublishedSeries

    q1 = release("2020Q1", same_group(range(1, 10), age="[30-35]"))
    q2 = release("2020Q2", same_group(range(1, 8), age="") + same_group(range(20, 23), group="2"))
    series = PublishedSeries({"2020Q1": q1, "2020Q2": q2}, {"2020Q1": {}, "2020Q2": {}}, QIDS,
                             SENSITIVE, "test series")
    out = attack_target(series, "2020Q1", "age=32,sex=F")
    assert out.remaining == ("8", "9") and len(out.excluded["F"]) == 7
    # the same target in Q2: the seven blank ages cannot be hers
    assert attack_target(series, "2020Q2", "age=32,sex=F").candidates == ("20", "21", "22")
    worst = attack_series(series, periods=["2020Q1"], k=3, theta=ThetaTable(1.0))
    assert worst.releases[0].dir_hard == 1.0
    assert worst.releases[0].groups[0].remaining == 2


def test_a_manifest_with_an_unknown_column_role_is_refused_naming_it() -> None:
    from medanon.models import model_from_manifest

    manifest = {"method": {"privacy_model": "PPMS(k, theta*)-bounding",
                           "parameters": {"k": 3, "lifespan": None}},
                "details": {"theta_table": ThetaTable(0.5).to_manifest()},
                "columns": {"roles": {"drugs": {"role": "clear"}, "age": {"role": "hidden"}}}}
    with pytest.raises(InputFormatError, match="column 'age' has role 'hidden'"):
        model_from_manifest(manifest, "2020Q1")
    manifest["columns"]["roles"]["age"]["role"] = "covered"
    model = model_from_manifest(manifest, "2020Q1")
    assert model.clear_columns == ("drugs",)
    assert model.not_protected.endswith("Published as reported, covered by no model: drugs.")


def test_real_case_ids_carry_their_order_and_pseudonyms_do_not() -> None:
    """Issue 41: under real CaseIDs (the default for releases that do not say) a case new to
    the series whose CaseID sorts below one published earlier was received before the period."""
    q1 = release("2020Q1", same_group([6]))
    q2 = release("2020Q2", same_group([1, 2, 3, 7, 8]))
    real = check([q1, q2], k=3, periods=["2020Q2"], case_ids="real").periods[0].groups[0]
    assert (real.kept, real.excluded_old) == (2, 3)  # 1, 2 and 3 sort below 6
    assert check_series([q1, q2], qids=QIDS, sensitive=SENSITIVE, theta=LOOSE, k=3,
                        periods=["2020Q2"]).periods[0].groups[0].kept == 2
    pseudonym = check([q1, q2], k=3, periods=["2020Q2"]).periods[0].groups[0]
    assert (pseudonym.kept, pseudonym.excluded_old) == (5, 0)
    with pytest.raises(ValidationError, match="'case_ids' parameter"):
        check([q1, q2], k=3, case_ids="hashed")


def test_violations_read_off_the_group_table_equal_those_of_the_built_groups() -> None:
    # the gate reads a release's violations without building its groups (issue 43); they must
    # be the built groups' violations, in group order, and the check must survive pickling
    import pickle

    rows = pd.DataFrame({"period": "2020Q1", "case_id": ["1", "2", "3", "4", "5", "6"],
                         "group": ["b", "b", "a", "a", "a", "c"],
                         "sex": ["F", "F", "M", "M", "M", "F"], "age": "[30-40]",
                         "adr": ["x", "x", "x|y", "y", "", "z"]})
    period = check_series({"2020Q1": rows}, qids=QIDS, sensitive=["adr"], k=3,
                          theta=ThetaTable(default=0.5)).periods[0]
    lazy, count = period.violations, period.n_groups
    again = pickle.loads(pickle.dumps(period))
    built = tuple(f"{period.period} group {g.group}: {v}" for g in period.groups
                  for v in g.violations)
    assert lazy == built and count == len(period.groups) == 3
    assert [g.group for g in period.groups] == ["b", "a", "c"]
    assert lazy[0].startswith("2020Q1 group b: only 2 case(s)") and len(lazy) == 5
    assert again == period and hash(again) == hash(period)
