"""Signal screening of a series against the original (metrics/screening.py): scopes, strata,
comparison figures, planted rules and their opposite strata."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as hs

from medanon.errors import ValidationError
from medanon.hierarchies.builtin import mesh_age_tree, sex_tree
from medanon.metrics.disproportionality import GpsPrior, fit_gps_prior, pair_counts
from medanon.metrics.screening import (ScreeningOptions, SeriesScreening, _latest_of_case,
                                       _Screened,
                                       _spearman_statistic, opposite_condition, screen_series,
                                       screening_for)
from medanon.metrics.signals import Condition, SignalRule

HIER = {"age": mesh_age_tree(), "sex": sex_tree()}
GPS_PARAMETERS = ("alpha1", "beta1", "alpha2", "beta2", "p")


def _rows(n: int, seed: int, *, flip: float = 0.0) -> pd.DataFrame:
    """Reports with a signal AVANDIA -> Myocardial infarction among adults only; with ``flip``,
    that share of the adults' age labels is published as Child (a perturbed release)."""
    rng = np.random.default_rng(seed)
    adult = rng.random(n) < 0.7
    drugs = rng.choice(["ASPIRIN", "METFORMIN", "LIPITOR", "AVANDIA", "ZOLOFT"], size=n)
    reactions = rng.choice(["Nausea", "Headache", "Rash", "Dizziness", "Fatigue"], size=n)
    mi = adult & (drugs == "AVANDIA") & (rng.random(n) < 0.8)
    reactions = np.where(mi, "Myocardial infarction", reactions)
    age = np.where(adult, "Adult", "Child")
    if flip:
        age = np.where(adult & (rng.random(n) < flip), "Child", age)
    return pd.DataFrame({"age": age, "sex": rng.choice(["F", "M"], size=n),
                         "drugs": drugs, "reactions": reactions})


def _series(rows: pd.DataFrame, parts: int = 2) -> dict[str, pd.DataFrame]:
    labels = [f"2020Q{i + 1}" for i in range(parts)]
    bounds = np.linspace(0, len(rows), parts + 1).astype(int)
    return {p: rows.iloc[lo:hi].reset_index(drop=True)
            for p, lo, hi in zip(labels, bounds[:-1], bounds[1:])}


OPTIONS = ScreeningOptions(strata=("age <= 18", "age > 18", "sex = F"), pooled=True)
RULE = SignalRule("AVANDIA", "Myocardial infarction", "age > 18")


def test_a_release_equal_to_the_original_keeps_every_signal_in_every_scope():
    original = _series(_rows(600, 1))
    result = screen_series(original, {p: r.copy() for p, r in original.items()},
                           hierarchies=HIER, periods=list(original), rules=[RULE],
                           options=OPTIONS)
    kinds = [e["kind"] for e in result["scopes"]]
    assert kinds == ["dedup", "pooled", "quarter", "quarter", "stratum", "stratum", "stratum"]
    for entry in result["scopes"]:
        for name, st in entry["statistics"].items():
            assert st["signals_original"] == st["signals_release"] == st["common"], (entry, name)
            if st["signals_original"]:
                assert st["recall"] == st["precision"] == 1.0
            assert entry["spurious"][name] == [] and entry["lost"][name] == []
        assert entry["statistics"]["mgps"]["spearman"] in (None, 1.0)
    pooled = result["scopes"][0]["statistics"]
    assert pooled["mgps"]["signals_original"] >= 1   # the planted pair is found at all
    own = result["planted"][0]["own"]
    assert own["scope"] == "age > 18" and own["original"]["signal"]["mgps"]
    assert result["planted_summary"]["mgps"]["recall"] == 1.0
    assert result["planted_summary"]["mgps"]["manufactured_opposite"] == 0


def test_perturbed_age_labels_manufacture_a_signal_in_the_opposite_stratum():
    original = _series(_rows(1500, 2))
    perturbed = _series(_rows(1500, 2, flip=0.5))
    result = screen_series(original, perturbed, hierarchies=HIER, periods=list(original),
                           rules=[RULE], options=OPTIONS)
    children = next(e for e in result["scopes"] if e["scope"] == "age <= 18")
    listed = {(s["drug"], s["reaction"]) for s in children["spurious"]["mgps"]}
    assert ("AVANDIA", "Myocardial infarction") in {(d.upper(), r.capitalize())
                                                     for d, r in listed}
    assert children["statistics"]["mgps"]["precision"] < 1.0
    opposite = result["planted"][0]["opposite"]
    assert opposite["scope"] == "age <= 18"
    assert not opposite["original"]["signal"]["mgps"] and opposite["release"]["signal"]["mgps"]
    assert result["planted_summary"]["mgps"]["manufactured_opposite"] == 1
    # pooled, the labels do not matter: the dedup and pooled scopes are unchanged
    for whole in result["scopes"][:2]:
        assert whole["statistics"]["mgps"]["recall"] == whole["statistics"]["mgps"]["precision"] == 1.0


def test_quantiles_solved_for_the_pairs_shown_are_those_of_solving_every_pair(monkeypatch):
    """The screening solves EB05 and EB95 only for the pairs it lists or the rules read
    (issue 43): its result is the one of solving them for every pair, to the last digit."""
    from medanon.metrics import disproportionality, screening
    original = _series(_rows(1500, 2))
    perturbed = _series(_rows(1500, 2, flip=0.5))

    def result() -> dict:
        return screen_series(original, perturbed, hierarchies=HIER, periods=list(original),
                             rules=[RULE], options=OPTIONS)
    lean = result()
    solved = disproportionality.screened_columns
    monkeypatch.setattr(screening, "screened_columns",
                        lambda *a, **k: solved(*a, **{**k, "quantiles": True}))
    assert result() == lean
    listed = [s for e in lean["scopes"] for side in ("spurious", "lost")
              for s in e[side]["mgps"]]
    assert listed and all("eb95" in s["release"] or "eb95" in s["original"] for s in listed)
    assert "eb05" in lean["planted"][0]["own"]["release"]


def test_generalized_cells_are_undecided_not_guessed():
    original = _series(_rows(400, 3))
    release = {p: r.assign(age=np.where(np.arange(len(r)) % 2 == 0, "*", r["age"]))
               for p, r in original.items()}
    result = screen_series(original, release, hierarchies=HIER, periods=list(original),
                           options=OPTIONS)
    adults = next(e for e in result["scopes"] if e["scope"] == "age > 18")
    assert adults["undecided"]["original"] == 0
    expected = sum(int((r["age"] == "*").sum()) for r in release.values())
    assert adults["undecided"]["release"] == expected
    assert adults["reports"]["release"] < adults["reports"]["original"]
    # a report leaves the stratum; none enters it: every release signal there has its pair in
    # the original stratum
    assert all(s["original"]["n"] > 0 for s in adults["spurious"]["bcpnn"])


@pytest.mark.parametrize("text, expected", [
    ("age > 18", "age <= 18"), ("age <= 18", "age > 18"), ("age >= 65", "age < 65"),
    ("sex = F", "sex != F"), ("age in Adult", "age != Adult"), ("sex != M", "sex = M"),
])
def test_opposite_condition(text, expected):
    assert opposite_condition(Condition.parse(text)).text == expected


def test_opposite_of_a_categorical_condition_leaves_generalized_cells_undecided():
    cond = Condition.parse("sex = F")
    cells = ["F", "M", "*"]
    assert cond.classify(cells, HIER["sex"]).tolist() == [1, 0, -1]
    assert opposite_condition(cond).classify(cells, HIER["sex"]).tolist() == [0, 1, -1]


def test_options_and_inputs_are_checked():
    with pytest.raises(ValidationError, match="strata"):
        ScreeningOptions(strata="age > 18")
    with pytest.raises(ValidationError, match="condition"):
        ScreeningOptions(strata=("age >> 18",))
    with pytest.raises(ValidationError, match="drug_columns"):
        ScreeningOptions(drug_columns=())
    with pytest.raises(ValidationError, match="min_count"):
        ScreeningOptions(min_count=0)
    with pytest.raises(ValidationError, match="scope_starts"):
        ScreeningOptions(scope_starts=0)
    original = _series(_rows(100, 4))
    with pytest.raises(ValidationError, match="release_rows"):
        screen_series(original, {}, hierarchies=HIER, periods=list(original))
    with pytest.raises(ValidationError, match="drugs_primary_suspect"):
        screen_series(original, original, hierarchies=HIER, periods=list(original),
                      options=ScreeningOptions(drug_columns=("drugs_primary_suspect",)))


def test_scopes_fit_their_prior_warm_from_their_sides_dedup_prior():
    """The dedup scope is fitted from 8 starts, every other scope (pooled too) from its side's
    dedup prior
    and DuMouchel's start (scope_starts=2): each quarter's prior is exactly that fit of the
    quarter's pair table. scope_starts=None fits every scope from 8 starts; the options say
    which was done. (A warm fit may end at another local optimum than 8 starts: on this tiny
    series it does in one stratum, 0.05 log-likelihood units lower; hence the option.)"""
    original = _series(_rows(900, 12), parts=3)
    release = _series(_rows(900, 12, flip=0.3), parts=3)
    sides = {"original": original, "release": release}

    def run(options):
        result = screen_series(original, release, hierarchies=HIER, periods=list(original),
                               options=options)
        return {(e["kind"], e["scope"], side): e["prior"][side] for e in result["scopes"]
                for side in sides if e["prior"][side]}, result["options"]

    warm, warm_options = run(OPTIONS)
    cold, cold_options = run(ScreeningOptions(strata=OPTIONS.strata, scope_starts=None,
                                              pooled=True))
    # dedup, pooled, 3 quarters, 3 strata
    assert warm.keys() == cold.keys() and len(warm) == 2 * 8
    for key, prior in warm.items():
        assert prior["starts"] == (8 if key[0] == "dedup" else 2), key
        assert cold[key]["starts"] == 8
    for name, frames in sides.items():
        pooled = GpsPrior(**{k: warm["dedup", "dedup", name][k] for k in GPS_PARAMETERS})
        assert all(warm["dedup", "dedup", name][k] == cold["dedup", "dedup", name][k]
                   for k in GPS_PARAMETERS)
        for period, rows in frames.items():
            table = pair_counts(rows)
            own = fit_gps_prior(table["n"], table["e"], starts=2, warm_start=pooled)
            for k in GPS_PARAMETERS:
                assert warm["quarter", period, name][k] == pytest.approx(getattr(own, k),
                                                                         rel=1e-12), (period, k)
    assert warm_options["prior_starts"] == {
        "dedup": 8, "other_scopes": 2,
        "other_scopes_first_start": "the side's dedup prior"}
    assert cold_options["prior_starts"]["other_scopes_first_start"] is None


def test_the_dedup_scope_keeps_each_cases_latest_row_and_strata_pool_like_it():
    """A case published in two quarters counts once in dedup (its latest row: the later
    quarter's reactions), twice in pooled; a stratum holds only latest rows; rows without a
    case_id are each their own case."""
    early = pd.DataFrame({"case_id": ["1", "2"], "age": ["Adult", "Adult"], "sex": ["F", "M"],
                          "drugs": ["ASPIRIN", "LIPITOR"], "reactions": ["Rash", "Nausea"]})
    late = pd.DataFrame({"case_id": ["1", "3"], "age": ["Adult", "Child"], "sex": ["F", "F"],
                         "drugs": ["ASPIRIN", "ZOLOFT"], "reactions": ["Headache", "Rash"]})
    rows = {"2020Q1": early, "2020Q2": late}
    screening = SeriesScreening(hierarchies=HIER,
                                options=ScreeningOptions(strata=("sex = F",), pooled=True))
    for label, frame in rows.items():
        screening.add(label, frame, frame)
    result = screening.result()
    scopes = {e["scope"]: e for e in result["scopes"]}
    assert scopes["dedup"]["reports"] == {"original": 3, "release": 3}
    assert scopes["pooled"]["reports"] == {"original": 4, "release": 4}
    assert scopes["sex = F"]["reports"] == {"original": 2, "release": 2}  # case 1 once, case 3
    side = screening._sides["original"]
    assert side.latest.tolist() == [False, True, True, True]
    table = side.pairs(side.latest)
    pairs = set(zip(table["drug"], table["reaction"]))
    assert ("ASPIRIN", "Headache") in pairs and ("ASPIRIN", "Rash") not in pairs
    bare = SeriesScreening(hierarchies=HIER, options=ScreeningOptions(strata=()))
    for label, frame in rows.items():
        bare.add(label, frame.drop(columns="case_id"), frame.drop(columns="case_id"))
    assert {e["scope"]: e["reports"]["original"] for e in bare.result()["scopes"]}["dedup"] == 4
    # a missing case id is no case: each such report is its own
    latest, following = _latest_of_case([np.array(["a", None, "b"], dtype=object),
                                         np.array(["a", None], dtype=object)], 5)
    assert latest.tolist() == [False, True, True, True, True] and following[0] == 3


def _quarter(prefix: str, pair: int, hide: bool = False) -> pd.DataFrame:
    """``pair`` reports of DRUGX with Bleeding (DRUGX suppressed when ``hide``) among 48
    reports of other drugs and reactions."""
    # each other drug with each other reaction alike: none of their pairs is disproportionate
    others = [(d, r) for d in ("ASPIRIN", "LIPITOR", "ZOLOFT", "METFORMIN")
              for r in ("Rash", "Nausea", "Headache", "Fatigue")] * 3
    rows = [("*" if hide else "DRUGX", "Bleeding")] * pair + others
    return pd.DataFrame({"case_id": [f"{prefix}{i}" for i in range(len(rows))],
                         "sex": "F", "drugs": [d for d, _ in rows],
                         "reactions": [r for _, r in rows]})


def test_cumulative_scopes_tell_when_a_release_delays_a_signal():
    """The original signals DRUGX-Bleeding (Evans PRR) from the first quarter on; a release
    that suppresses the drug in the first quarter signals it one quarter later."""
    original = {"2020Q1": _quarter("a", 6), "2020Q2": _quarter("b", 6)}
    release = {"2020Q1": _quarter("a", 6, hide=True), "2020Q2": _quarter("b", 6)}
    options = ScreeningOptions(strata=(), cumulative=True)
    result = screen_series(original, release, hierarchies=HIER, periods=list(original),
                           options=options)
    kinds = [e["kind"] for e in result["scopes"]]
    assert kinds.count("cumulative") == 2
    up_to_q1 = next(e for e in result["scopes"] if e["kind"] == "cumulative"
                    and e["scope"] == "2020Q1")
    assert up_to_q1["reports"] == {"original": 54, "release": 54}
    prr = result["first_signal"]["prr"]
    assert prr["pairs_original"] == 1 and prr["later"] == 1 and prr["same_quarter"] == 0
    assert prr["mean_delay_quarters"] == 1.0 and prr["never"] == prr["release_only"] == 0
    assert prr["first_quarters_original"] == {"2020Q1": 1}
    assert prr["first_quarters_release"] == {"2020Q2": 1}
    same = screen_series(original, original, hierarchies=HIER, periods=list(original),
                         options=options)["first_signal"]["prr"]
    assert same["same_quarter"] == same["pairs_original"] == 1 and same["later"] == 0
    assert "first_signal" not in screen_series(original, original, hierarchies=HIER,
                                               periods=list(original),
                                               options=ScreeningOptions(strata=()))


def test_the_pooled_scope_is_screened_when_asked_for():
    original = _series(_rows(300, 5))
    results = [screen_series(original, original, hierarchies=HIER, periods=list(original),
                             options=ScreeningOptions(strata=(), pooled=p)) for p in (False, True)]
    kinds = [[e["kind"] for e in r["scopes"]] for r in results]
    assert kinds == [["dedup", "quarter", "quarter"], ["dedup", "pooled", "quarter", "quarter"]]
    # the summary has a kind asked for, and every kind the report reads
    assert [list(r["summary"]) for r in results] == [["dedup", "quarter", "stratum"],
                                                     ["dedup", "pooled", "quarter", "stratum"]]


def test_screening_for_a_series_without_drugs_is_none_unless_asked_for():
    assert screening_for({"age", "reactions"}) is None
    assert screening_for({"drugs", "reactions"}).drug_columns == ("drugs",)
    with pytest.raises(ValidationError, match="drug_columns"):
        screening_for({"drugs", "reactions"}, drug_columns=["drugs_suspect"])
    chosen = screening_for({"drugs", "reactions", "sex"}, strata=["sex = F"])
    assert chosen.strata == ("sex = F",)


def test_strata_on_columns_the_release_lacks_are_skipped_and_said():
    original = _series(_rows(200, 5))
    result = screen_series(original, original, hierarchies=HIER, periods=list(original),
                           options=ScreeningOptions(strata=("weight > 80", "sex = F")))
    assert result["strata_skipped"] == ["weight > 80"]
    assert [e["scope"] for e in result["scopes"] if e["kind"] == "stratum"] == ["sex = F"]


def test_pairs_match_across_sides_whatever_the_first_spelling():
    original = _series(_rows(600, 6))
    respelled = {p: r.assign(drugs=r["drugs"].str.lower(), reactions=r["reactions"].str.upper())
                 for p, r in original.items()}
    result = screen_series(original, respelled, hierarchies=HIER, periods=list(original),
                           rules=[RULE], options=OPTIONS)
    for entry in result["scopes"]:
        for name, st in entry["statistics"].items():
            assert st["signals_original"] == st["common"] == st["signals_release"], (entry, name)
    assert result["planted"][0]["own"]["release"]["signal"]["mgps"]


TERMS = hs.sampled_from(["aspirin", "ASPIRIN", " Aspirin ", "ibuprofen", "Ibuprofen", "*", "",
                         "Nausea", "nausea", "NAUSEA ", "rash", "Rash", "ß", "SS"])
CELLS = hs.one_of(hs.none(), hs.just(""), hs.lists(TERMS, min_size=1, max_size=4).map("|".join))
ROWS = hs.lists(hs.tuples(CELLS, CELLS, CELLS, hs.sampled_from(["F", "M", "*", ""])),
                min_size=0, max_size=12)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(hs.lists(ROWS, min_size=1, max_size=3), hs.lists(ROWS, min_size=1, max_size=3))
def test_each_scope_counts_the_pairs_of_its_reports_as_pair_counts_does(original, release):
    """The series is read once into term codes; each scope's pair table (counts, order and the
    spelling shown, the first one seen in the scope) is pair_counts of the scope's rows."""
    columns = ["drugs", "drugs_concomitant", "reactions", "sex"]
    periods = [f"2020Q{i + 1}" for i in range(min(len(original), len(release)))]
    sides = {name: {p: pd.DataFrame(rows, columns=columns) for p, rows in zip(periods, frames)}
             for name, frames in (("original", original), ("release", release))}
    options = ScreeningOptions(strata=("sex = F",), drug_columns=("drugs", "drugs_concomitant"))
    screening = SeriesScreening(hierarchies=HIER, options=options)
    for p in periods:
        screening.add(p, sides["original"][p], sides["release"][p])
    screening._close()
    condition = options.conditions[0]
    for name, frames in sides.items():
        stacked = pd.concat([frames[p] for p in periods], ignore_index=True)
        period_of = np.repeat(periods, [len(frames[p]) for p in periods])
        side = screening._sides[name]
        scopes = [(slice(0, len(stacked)), np.ones(len(stacked), dtype=bool))]
        scopes += [(slice(*side.bounds[p]), period_of == p) for p in periods]
        inside = condition.classify(stacked["sex"], HIER["sex"]) == 1
        assert np.array_equal(side.classes(condition) == 1, inside)
        scopes.append((inside, inside))
        for scope, rows in scopes:
            if not rows.any():
                continue
            want = pair_counts(stacked[rows].reset_index(drop=True),
                               drug_columns=options.drug_columns)
            pd.testing.assert_frame_equal(side.pairs(scope), want)
            if not isinstance(scope, slice):
                # rows without a case_id are all latest: a mask of them is counted from the
                # dedup scope's counts when it holds more than half of them
                pd.testing.assert_frame_equal(side.pairs(scope, within_latest=True), want)
        assert side.latest.all()
        if len(stacked):   # the dedup scope: counted, then its counts kept for the strata
            want = pair_counts(stacked, drug_columns=options.drug_columns)
            pd.testing.assert_frame_equal(side.pairs(side.latest, within_latest=True), want)
        within = stacked["sex"].to_numpy() != "F"
        if within.any():
            want = pair_counts(stacked[within].reset_index(drop=True),
                               drug_columns=options.drug_columns)
            pd.testing.assert_frame_equal(side.pairs(within, within_latest=True), want)


STRATA_ROWS = hs.lists(hs.tuples(hs.sampled_from(["1", "2", "3", "4", "5", "6"]), CELLS, CELLS,
                                 hs.sampled_from(["F", "M", "*", ""]),
                                 hs.sampled_from(["Adult", "Child", "Aged", "*", ""])),
                       min_size=0, max_size=10)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(hs.lists(STRATA_ROWS, min_size=1, max_size=3))
def test_each_stratum_counted_from_the_patterns_is_pair_counts_of_its_reports(frames):
    """A side's dedup scope and strata are counted from the pair counts of its patterns (the
    latest reports grouped by the strata they are in; issue 43), a range of reports at a time:
    each table (counts, order, the spelling shown) is pair_counts of the scope's own latest
    rows, as counting its mask gives."""
    with pytest.MonkeyPatch.context() as patch:
        from medanon.metrics import screening as module
        patch.setattr(module, "_PATTERN_REPORTS_AT_ONCE", 4)   # several ranges of reports
        _check_patterns(frames)


def _check_patterns(frames: list) -> None:
    columns = ["case_id", "drugs", "reactions", "sex", "age"]
    periods = [f"2020Q{i + 1}" for i in range(len(frames))]
    rows = {p: pd.DataFrame(f, columns=columns) for p, f in zip(periods, frames)}
    options = ScreeningOptions(strata=("sex = F", "sex != M", "age <= 18", "age >= 65",
                                       "age in [19-64]"))
    screening = SeriesScreening(hierarchies=HIER, options=options,
                                rules=[SignalRule("A", "B", "age > 18")])
    for p in periods:
        screening.add(p, rows[p], rows[p])
    screening._close()
    side = screening._sides["original"]
    stacked = pd.concat([rows[p] for p in periods], ignore_index=True)
    latest = side.closed_latest()
    # the latest row of each case: the last one of it in the stacked periods
    assert np.array_equal(latest, ~stacked["case_id"].duplicated(keep="last").to_numpy())
    for condition in [None, *side.conditions.values()]:
        inside = latest if condition is None else (side.classes(condition) == 1) & latest
        if not inside.any():
            continue
        want = pair_counts(stacked[inside].reset_index(drop=True))
        got = side.latest_pairs(condition)
        assert got is not None
        pd.testing.assert_frame_equal(got, want)
        pd.testing.assert_frame_equal(side.pairs(inside, within_latest=True), want)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(hs.lists(hs.tuples(TERMS, TERMS), min_size=1, max_size=30))
def test_key_index_is_the_index_set_index_makes_of_the_folded_names(names):
    """A screened table is indexed by its folded names (issue 43: built from the distinct
    names): the same MultiIndex, levels and codes, as set_index of the folded columns."""
    from medanon.metrics.screening import _KEY, _key_index
    table = pd.DataFrame(names, columns=["drug", "reaction"], dtype=object)
    # the folded columns as the screening made them before (object Series)
    folded = table.assign(**{key: pd.Series([str(t).strip().casefold() for t in table[name]],
                                            dtype=object)
                             for key, name in zip(_KEY, ("drug", "reaction"))})
    want = folded.set_index(_KEY).index
    got = _key_index(table["drug"], table["reaction"])
    assert got.equals(want) and got.names == want.names
    for a, b in zip(got.levels, want.levels, strict=True):
        assert a.equals(b) and a.dtype == b.dtype
    for a, b in zip(got.codes, want.codes, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def test_strata_beyond_the_patterns_cells_are_counted_one_by_one(monkeypatch):
    from medanon.metrics import screening as module
    monkeypatch.setattr(module, "_PATTERN_CELLS", 1)
    original = _series(_rows(300, 4))
    screening = SeriesScreening(hierarchies=HIER, options=OPTIONS)
    for label, frame in original.items():
        screening.add(label, frame, frame)
    screening._close()
    side = screening._sides["original"]
    assert side.latest_pairs(OPTIONS.conditions[0]) is None and side.latest_pairs() is None
    one_by_one = screen_series(original, original, hierarchies=HIER, periods=list(original),
                                  options=OPTIONS)
    monkeypatch.undo()
    assert screen_series(original, original, hierarchies=HIER, periods=list(original),
                         options=OPTIONS) == one_by_one


@settings(max_examples=200, deadline=None, derandomize=True)
@given(hs.lists(hs.tuples(hs.integers(0, 6), hs.floats(0.01, 50.0)), min_size=3, max_size=60),
       hs.booleans())
def test_spearman_statistic_is_scipy_spearmanr_bit_for_bit(pairs, tied):
    """The screening's Spearman correlation (no scipy.stats import) is spearmanr's statistic,
    the same float, with ties (small integers) and without."""
    from scipy.stats import spearmanr

    x = np.array([float(a) if tied else b for a, b in pairs])
    y = np.array([b * (1 + a) for a, b in pairs])
    # constant: the screening reports no correlation and never computes one
    assume(np.ptp(x) > 0 and np.ptp(y) > 0)
    assert _spearman_statistic(x, y) == float(spearmanr(x, y).statistic)
    # both sides alike (ranked once): still spearmanr's float
    assert _spearman_statistic(x, x.copy()) == float(spearmanr(x, x).statistic)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(ROWS, ROWS, hs.sampled_from(["aspirin", "SS", "ibuprofen", "*"]),
       hs.sampled_from(["nausea", "rash", "ß", ""]), hs.sampled_from([None, "sex = F", "sex != M"]))
def test_signal_counts_from_the_screenings_read_are_those_of_reading_the_rows(
        original, release, drug, reaction, condition):
    """compare_signals given what the screening read of a period (the evaluation's one read of
    its drug and reaction cells and conditions) counts every rule as reading the rows does."""
    from medanon.metrics.signals import compare_signals

    columns = ["drugs", "drugs_concomitant", "reactions", "sex"]
    frames = [pd.DataFrame(rows, columns=columns) for rows in (original, release)]
    rules = [SignalRule(drug=drug, reaction=reaction or "nausea",
                        condition=Condition.parse(condition) if condition else None),
             SignalRule(drug="ibuprofen", reaction="Rash", condition=Condition.parse("sex = M"))]
    screening = SeriesScreening(hierarchies=HIER, rules=rules,
                                options=ScreeningOptions(strata=("sex = F",)))
    known = screening.known_counts(screening.read(*frames))
    want = compare_signals(*frames, rules, hierarchies=HIER)
    got = compare_signals(*frames, rules, hierarchies=HIER, read=known)
    assert [c.to_dict() for c in got] == [c.to_dict() for c in want]
    assert set(known[1][0]) == {"drugs", "reactions"}  # the shared read was taken


@pytest.mark.parametrize("bad", [None, "zzz"])
def test_classes_of_judges_each_distinct_cell_as_classify_judges_the_column(bad):
    """The screening judges each column's distinct cells once for all its conditions: every
    condition's classes are classify's of the whole column, and a cell classify refuses is
    refused with classify's error."""
    ages = ["Child", "Adult", "*", "", None, "Aged", "Adolescent", "Child", "Adult"]
    weights = ["72.5", "[60-80]", "", "*", "55", "[80-100]", None, "72.5", "[60-80]"]
    if bad is not None:
        ages[3], weights[2] = bad, "abc"
    rows = pd.DataFrame({"age": ages, "sex": ["F", "M", "*", "", "F", None, "M", "F", "M"],
                         "weight": weights})
    strata = ("age <= 18", "age >= 65", "age = Adult", "sex = F", "weight > 60",
              "weight in [50-75]")
    screening = SeriesScreening(hierarchies=HIER, options=ScreeningOptions(strata=strata))
    got = screening._sides["release"].classes_of(rows)
    for text in strata:
        condition = Condition.parse(text)
        try:
            want = condition.classify(rows[condition.attribute], HIER.get(condition.attribute))
        except Exception as exc:  # the screening keeps whatever classify raises
            assert type(got[text].error) is type(exc) and str(got[text].error) == str(exc)
        else:
            assert got[text].dtype == want.dtype and np.array_equal(got[text], want)


def _shuffled(frames: dict[str, pd.DataFrame], seed: int) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    return {p: r.iloc[rng.permutation(len(r))].reset_index(drop=True) for p, r in frames.items()}


def _releases_against(original: dict[str, pd.DataFrame]) -> list[dict[str, pd.DataFrame]]:
    """Releases that keep every cell (rows reordered), perturb the ages, suppress a drug in one
    period, respell the terms, or drop a row."""
    first = next(iter(original))
    suppressed = {p: r.assign(drugs=r["drugs"].replace("LIPITOR", "*")) if p == first else r
                  for p, r in original.items()}
    return [_shuffled(original, 1),
            _shuffled({p: r.assign(age=np.where(np.arange(len(r)) % 3 == 0, "Child", r["age"]))
                       for p, r in original.items()}, 2),
            suppressed,
            {p: r.assign(drugs=r["drugs"].str.lower()) for p, r in original.items()},
            {p: r.iloc[1:].reset_index(drop=True) for p, r in original.items()}]


@pytest.mark.parametrize("which", range(5))
def test_sides_taken_alike_give_the_result_of_screening_and_comparing_each(which, monkeypatch):
    """A scope whose release table equals the original's takes the original's screening, and a
    period whose release lists the original's cells takes it without counting its table: the
    result is that of screening each side and comparing them."""
    original = _series(_rows(900, 7), parts=3)
    release = _releases_against(original)[which]
    options = ScreeningOptions(strata=("age <= 18", "age > 18", "sex = F"), pooled=True,
                               cumulative=True)

    def run() -> dict:
        return screen_series(original, release, hierarchies=HIER, periods=list(original),
                             rules=[RULE], options=options)

    taken = run()
    monkeypatch.setattr(SeriesScreening, "alike", lambda self, label: False)
    monkeypatch.setattr(_Screened, "screens", lambda self, *args: False)
    assert run() == taken
    if which == 0:   # every scope alike
        assert all(not any(e["spurious"].values()) for e in taken["scopes"])


def test_a_scope_the_release_leaves_empty_lists_the_originals_signals_as_lost():
    # every release row is published as a child: the adults' stratum of the release holds no
    # report, so its table has no pair (and no columns), and the original's planted signal
    # there is listed as lost, with no count on the release's side
    original = _series(_rows(600, 1))
    release = {p: r.assign(age="Child") for p, r in original.items()}
    result = screen_series(original, release, hierarchies=HIER, periods=list(original),
                           rules=[RULE], options=OPTIONS)
    adults = next(e for e in result["scopes"] if e["scope"] == "age > 18")
    lost = adults["lost"]["mgps"]
    assert adults["statistics"]["mgps"]["signals_release"] == 0
    assert ("AVANDIA", "Myocardial infarction") in {(p["drug"], p["reaction"]) for p in lost}
    assert all(p["release"] == {"n": 0} and p["original"]["n"] >= 1 for p in lost)


def _reads_equal(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_reads_equal(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_reads_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all())
    return bool(a == b)


@pytest.mark.parametrize("seed", range(8))
def test_read_of_the_original_terms_equals_splitting_their_cells(seed):
    """SeriesScreening.read given the terms the original cells were formatted from
    (original_as_published's CellTerms) reads what splitting the cells reads: the same
    entries, spellings in the same order, and the same cells' codes; a column whose terms
    hold the separator, or whose tuples are not joined as they are, records no terms."""
    from medanon.data.schema import Schema
    from medanon.published.format import original_as_published

    rng = np.random.default_rng(seed)
    pool = ["Nausea", "NAUSEA", " Headache ", "Rash", "rash", "Death", "", "Tendon rupture"]
    drug_pool = ["AVANDIA", "Warfarin", "WARFARIN", "ACTOS", "zelnorm"]
    if seed % 3 == 1:
        drug_pool.append("A|B")  # a term holding the separator: no terms recorded
    def cells(terms, n):
        shared = [tuple(sorted(set(rng.choice(terms, size=rng.integers(0, 4)).tolist())))
                  for _ in range(max(1, n // 3))]
        if seed % 3 == 2:
            shared.append(("b", "a"))  # not sorted: formatted otherwise, no terms recorded
        return [shared[i] for i in rng.integers(0, len(shared), size=n)]
    n = int(rng.integers(1, 60))
    supers = pd.DataFrame({
        "period": "2020Q1", "case_id": [f"c{i}" for i in range(n)],
        "sex": rng.choice(["F", "M"], size=n),
        "reactions": cells(pool, n), "drugs": cells(drug_pool, n)})
    papers = Schema.papers()
    schema = papers.model_copy(update={
        "qids": tuple(q for q in papers.qids if q.name == "sex"),
        "sensitive": ("reactions",), "multi": ("drugs",)})
    terms: dict = {}
    original = original_as_published(supers, schema, terms)
    if seed % 3 == 0:
        assert set(terms) == {"reactions", "drugs"}
    release = original.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    release["reactions"] = [c if rng.random() < 0.7 else "Vomiting|nausea"
                            for c in release["reactions"]]
    release["drugs"] = [str(c) for c in release["drugs"]]  # other str objects, same text
    options = ScreeningOptions(strata=())
    screening = SeriesScreening(hierarchies=HIER, options=options)
    split = screening.read(original, release)
    taken = screening.read(original, release, terms)
    assert _reads_equal([s.__dict__ for s in split], [t.__dict__ for t in taken])
