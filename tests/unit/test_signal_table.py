"""The per-pair signal table (metrics/signal_table.py, ``medanon signals``): stratum-adjusted E
against a hand count, the scopes (dedup keeps a case's latest period), the FDR statistics
against scipy, statsmodels and brute force, a neighbouring-input property, and vigipy as an
oracle for PRR, ROR, EBGM and the posterior probability of H0 given the same prior.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from medanon.data.schema import Schema
from medanon.errors import SchemaError, ValidationError
from medanon.metrics.disproportionality import GpsPrior
from medanon.metrics.signal_table import (
    SIGNAL_RULES,
    bayesian_fdr,
    benjamini_hochberg,
    posterior_h0,
    prr_p_value,
    signal_table,
)
from tests.unit.test_disproportionality import DUMOUCHEL_FDA

HIER = Schema.default().load_hierarchies()

#: the test's own reading of the MeSH age labels into the bands <= 18, 19-64, >= 65 (a label
#: that straddles bands, '*' and blank are unknown): written out, not taken from the library
AGE_BAND = {
    **dict.fromkeys(["Nonadult", "Infant", "Newborn", "Infant (1-23 months)", "Child",
                     "Preschool", "In-school", "Adolescent"], "young"),
    **dict.fromkeys(["Young Adult", "Adult (25-44)", "Middle Aged"], "middle"),
    **dict.fromkeys(["Aged", "Aged (65-79)", "Aged, 80 and over"], "old"),
}
SEX = {"F": "F", "M": "M"}

COLUMNS = ["period", "case_id", "group", "age", "sex", "drugs", "reactions"]
#: one quarter written by hand: generalized ages (Adult straddles 19-64 and >= 65), blank and
#: suppressed cells, a report with no drug (not screened), terms spelled two ways
HAND = pd.DataFrame([
    ("2020Q1", "c01", "1", "Adolescent", "F", "ASPIRIN|IBUPROFEN", "Nausea|Rash"),
    ("2020Q1", "c02", "1", "Middle Aged", "M", "ASPIRIN", "Nausea"),
    ("2020Q1", "c03", "2", "Aged (65-79)", "F", "IBUPROFEN|WARFARIN", "Haemorrhage"),
    ("2020Q1", "c04", "2", "Adult", "", "aspirin", "Rash"),
    ("2020Q1", "c05", "3", "*", "*", "WARFARIN", "Haemorrhage|nausea"),
    ("2020Q1", "c06", "3", "Young Adult", "F", "ASPIRIN|WARFARIN", "Haemorrhage"),
    ("2020Q1", "c07", "3", "Child", "M", "IBUPROFEN", "Rash|Headache"),
    ("2020Q1", "c08", "4", "Aged, 80 and over", "F", "", "Nausea"),
    ("2020Q1", "c09", "4", "Aged", "M", "WARFARIN|ASPIRIN", "Haemorrhage|Headache"),
    ("2020Q1", "c10", "4", "Adult (25-44)", "F", "ASPIRIN", "Headache"),
    ("2020Q1", "c11", "5", "Nonadult", "", "IBUPROFEN|ASPIRIN", "Nausea"),
    ("2020Q1", "c12", "5", "", "M", "WARFARIN", "Rash|Haemorrhage"),
    ("2020Q1", "c13", "5", "Infant", "F", "ASPIRIN", "Nausea|Headache"),
    ("2020Q1", "c14", "6", "Aged (65-79)", "M", "WARFARIN|IBUPROFEN", "Haemorrhage|Nausea"),
], columns=COLUMNS)


STRATUM_COLUMN = {"year": "init_fda_dt"}


def read_stratum(variable: str, cell) -> str:
    """The test's reading of one published cell into its stratum."""
    text = cell.strip() if isinstance(cell, str) else ""
    if variable == "year":
        return text[:4] if text.isdigit() and len(text) in (4, 6, 8) else "unknown"
    return (AGE_BAND if variable == "age" else SEX).get(text, "unknown")


def _terms(cell) -> set[str]:
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return set()
    return {t.strip().casefold() for t in str(cell).split("|") if t.strip() not in ("", "*")}


def hand_expected(rows: pd.DataFrame, variables: tuple[str, ...]) -> dict:
    """(drug, reaction) -> (E stratified, E crude, n), counted report by report in plain dicts."""
    def stratum(row) -> tuple[str, ...]:
        return tuple(read_stratum(v, row[STRATUM_COLUMN.get(v, v)]) for v in variables)

    total: dict = {}
    by_drug: dict = {}
    by_reaction: dict = {}
    n: dict = {}
    drugs_all: dict = {}
    reactions_all: dict = {}
    screened = 0
    for _, row in rows.iterrows():
        drugs, reactions = _terms(row["drugs"]), _terms(row["reactions"])
        if not drugs or not reactions:
            continue
        screened += 1
        s = stratum(row)
        total[s] = total.get(s, 0) + 1
        for d in drugs:
            by_drug[(d, s)] = by_drug.get((d, s), 0) + 1
            drugs_all[d] = drugs_all.get(d, 0) + 1
        for r in reactions:
            by_reaction[(r, s)] = by_reaction.get((r, s), 0) + 1
            reactions_all[r] = reactions_all.get(r, 0) + 1
        for d in drugs:
            for r in reactions:
                n[(d, r)] = n.get((d, r), 0) + 1
    out = {}
    for (d, r), count in n.items():
        e = sum(by_drug.get((d, s), 0) * by_reaction.get((r, s), 0) / total[s] for s in total)
        out[(d, r)] = (e, drugs_all[d] * reactions_all[r] / screened, count)
    return out


def _keyed(table: pd.DataFrame) -> dict:
    """(casefolded drug, casefolded reaction) -> the pair's row (one scope's table)."""
    keys = zip(table["drug"].str.casefold(), table["reaction"].str.casefold())
    return dict(zip(keys, table.to_dict("records")))


# ------------------------------------------------------------------------- stratified E
@pytest.mark.parametrize("stratify_by", ["sex", "age,sex", ("age", "sex"), "age"])
def test_stratified_e_equals_a_hand_computed_stratified_table(stratify_by):
    variables = tuple(v.strip() for v in (stratify_by.split(",") if isinstance(stratify_by, str)
                                          else stratify_by))
    table = signal_table({"2020Q1": HAND}, stratify_by=stratify_by, hierarchies=HIER)
    want = hand_expected(HAND, variables)
    got = _keyed(table)
    assert set(got) == set(want)
    for key, (e, e_crude, n) in want.items():
        row = got[key]
        assert row["n"] == n
        assert row["e"] == pytest.approx(e, rel=1e-12), key
        assert row["e_crude"] == pytest.approx(e_crude, rel=1e-12), key
        assert row["e_crude"] == row["n_drug"] * row["n_reaction"] / row["n_total"]
    # the adjustment changes something here (else the test would not test it)
    assert not np.allclose(table["e"], table["e_crude"])
    # unknown: Adult, '*' and blank ages; '*' and blank sexes (over every report of the scope)
    entry = table.attrs["signals"]["scopes"][0]
    unknown_age = sum(AGE_BAND.get(a, "unknown") == "unknown" for a in HAND["age"])
    unknown_sex = sum(s not in SEX for s in HAND["sex"])
    assert entry["unknown"] == {v: {"age": unknown_age, "sex": unknown_sex}[v] for v in variables}
    assert entry["strata"] == len({tuple(read_stratum(v, row[v]) for v in variables)
                                   for _, row in HAND.iterrows()})
    assert any(w.startswith(variables[0] + ":") for w in table.attrs["signals"]["warnings"])


def test_with_one_stratum_the_adjusted_e_is_the_crude_one():
    rows = HAND.assign(sex="F")
    table = signal_table({"2020Q1": rows}, stratify_by="sex", hierarchies=HIER)
    np.testing.assert_allclose(table["e"], table["e_crude"], rtol=1e-12)
    plain = signal_table({"2020Q1": rows})
    assert "e_crude" not in plain.columns
    np.testing.assert_array_equal(plain["e"], table["e_crude"])
    np.testing.assert_array_equal(plain["n"], table["n"])
    assert table.attrs["signals"]["scopes"][0]["unknown"] == {"sex": 0}
    assert table.attrs["signals"]["warnings"] == [w for w in table.attrs["signals"]["warnings"]
                                                  if "stratum" not in w]


def test_a_perturbed_column_is_refused_as_a_stratum():
    with pytest.raises(ValidationError, match="'stratify_by'.*'age'.*perturbed"):
        signal_table({"2020Q1": HAND}, stratify_by="age,sex", hierarchies=HIER,
                     perturbed={"2020Q1": ["age"]})
    # a perturbed column that is not a stratum does not matter
    table = signal_table({"2020Q1": HAND}, stratify_by="sex", hierarchies=HIER,
                         perturbed={"2020Q1": ["age", "weight"]})
    assert len(table)


def test_an_unknown_or_absent_stratifying_variable_is_refused():
    with pytest.raises(ValidationError, match="'stratify_by'.*'weight'"):
        signal_table({"2020Q1": HAND.assign(weight="70")}, stratify_by="age,weight",
                     hierarchies=HIER)
    with pytest.raises(SchemaError, match="'stratify_by'.*'year'.*'init_fda_dt'"):
        signal_table({"2020Q1": HAND}, stratify_by="year")


def test_year_strata_read_the_first_four_digits_of_the_receipt_date():
    rows = HAND.assign(init_fda_dt=["2019", "201912", "20200105", "2020", "", "*", "2020",
                                    "2019", "201", "2020", "2019", "2020", "2020", "2019"])
    table = signal_table({"2020Q1": rows}, stratify_by="year")
    entry = table.attrs["signals"]["scopes"][0]
    assert entry["unknown"] == {"year": 3} and entry["strata"] == 3
    got = _keyed(table)
    for key, (e, e_crude, n) in hand_expected(rows, ("year",)).items():
        assert got[key]["n"] == n
        assert got[key]["e"] == pytest.approx(e, rel=1e-12), key
        assert got[key]["e_crude"] == pytest.approx(e_crude, rel=1e-12), key
    assert not np.allclose(table["e"], table["e_crude"])


# ------------------------------------------------------------------------------- scopes
def _two_quarters() -> dict[str, pd.DataFrame]:
    q1 = pd.DataFrame([
        ("2020Q1", "c1", "1", "Child", "F", "ASPIRIN", "Nausea"),
        ("2020Q1", "c2", "1", "Child", "F", "ASPIRIN", "Nausea"),
        ("2020Q1", "c4", "1", "Child", "M", "IBUPROFEN", "Headache"),
    ], columns=COLUMNS)
    q2 = pd.DataFrame([
        ("2020Q2", "c1", "1", "Child", "F", "ASPIRIN", "Rash"),     # c1's follow-up
        ("2020Q2", "c3", "1", "Aged", "M", "IBUPROFEN", "Rash"),
    ], columns=COLUMNS)
    # given latest first: the period labels, not the mapping's order, say which is latest
    return {"2020Q2": q2, "2020Q1": q1}


def test_dedup_keeps_the_latest_periods_row_of_a_case_and_pooled_counts_both():
    table = signal_table(_two_quarters(), scopes="dedup,pooled,quarter")
    n = {(s, p, d, r): v for s, p, d, r, v in
         table[["scope", "period", "drug", "reaction", "n"]].itertuples(index=False)}
    span = "2020Q1..2020Q2"
    assert n[("dedup", span, "ASPIRIN", "Nausea")] == 1          # c2 only: c1 moved on to Rash
    assert n[("dedup", span, "ASPIRIN", "Rash")] == 1
    assert n[("pooled", span, "ASPIRIN", "Nausea")] == 2
    assert n[("pooled", span, "ASPIRIN", "Rash")] == 1
    assert n[("quarter", "2020Q1", "ASPIRIN", "Nausea")] == 2
    assert ("quarter", "2020Q1", "ASPIRIN", "Rash") not in n
    totals = table.groupby(["scope", "period"])["n_total"].first().to_dict()
    assert totals == {("dedup", span): 4, ("pooled", span): 5, ("quarter", "2020Q1"): 3,
                      ("quarter", "2020Q2"): 2}
    scopes = table.attrs["signals"]["scopes"]
    assert [(e["scope"], e["period"], e["reports"]) for e in scopes] == [
        ("dedup", span, 4), ("pooled", span, 5), ("quarter", "2020Q1", 3),
        ("quarter", "2020Q2", 2)]
    assert list(table["scope"].unique()) == ["dedup", "pooled", "quarter"]


def _random_series(seed: int, periods: int = 3, per: int = 70) -> dict[str, pd.DataFrame]:
    """Reports of 6 drugs and 6 reactions, D0 -> R0 disproportionate; a fifth of each quarter
    follows up an earlier case."""
    rng = np.random.default_rng(seed)
    out, seen, next_case = {}, [], 0
    for q in range(periods):
        rows = []
        for _ in range(per):
            if seen and rng.random() < 0.2:
                case = seen[int(rng.integers(len(seen)))]
            else:
                case, next_case = f"c{next_case}", next_case + 1
                seen.append(case)
            drugs = sorted(set(rng.choice([f"D{i}" for i in range(6)], rng.integers(1, 3))))
            reactions = set(rng.choice([f"R{i}" for i in range(6)], rng.integers(1, 3)))
            if "D0" in drugs and rng.random() < 0.8:
                reactions.add("R0")
            rows.append((f"2021Q{q + 1}", case, "1", rng.choice(list(AGE_BAND)),
                         rng.choice(["F", "M", ""]), "|".join(drugs), "|".join(sorted(reactions))))
        frame = pd.DataFrame(rows, columns=COLUMNS).drop_duplicates("case_id", keep="last")
        out[f"2021Q{q + 1}"] = frame
    return out


def test_cumulative_first_signal_is_the_first_period_a_pairs_flag_holds():
    releases = _random_series(4)
    table = signal_table(releases, scopes=["cumulative", "dedup"], stratify_by="age",
                         hierarchies=HIER)
    cumulative = table[table["scope"] == "cumulative"]
    assert list(cumulative["period"].unique()) == ["2021Q1", "2021Q2", "2021Q3"]
    assert {f"first_signal_{r}" for r in SIGNAL_RULES} <= set(table.columns)
    firsts = 0
    for rule, flag in SIGNAL_RULES.items():
        first: dict = {}
        for row in cumulative.itertuples(index=False):
            key = (row.drug, row.reaction)
            if getattr(row, flag) and key not in first:
                first[key] = row.period
            got = getattr(row, f"first_signal_{rule}")
            # not signalled yet: missing (NA), as outside the cumulative scopes (issue 44)
            assert got == first[key] if key in first else pd.isna(got), (rule, key, got)
        firsts += len(first)
    assert firsts, "no pair signals under any rule: the fixture tests nothing"
    # the last cumulative scope is the dedup scope (the database as it stands at the end)
    last = cumulative[cumulative["period"] == "2021Q3"].reset_index(drop=True)
    dedup = table[table["scope"] == "dedup"].reset_index(drop=True)
    pd.testing.assert_series_equal(last["n"], dedup["n"])
    pd.testing.assert_series_equal(last["e"], dedup["e"])
    assert dedup[[f"first_signal_{r}" for r in SIGNAL_RULES]].isna().all().all()


def test_the_tables_decisions_follow_from_its_columns_and_the_sidecars_prior():
    table = signal_table(_random_series(2), scopes="pooled,quarter", fdr=0.2)
    for entry in table.attrs["signals"]["scopes"]:
        part = table[(table["scope"] == entry["scope"]) & (table["period"] == entry["period"])]
        prior = GpsPrior(**{k: entry["prior"][k] for k in ("alpha1", "beta1", "alpha2",
                                                           "beta2", "p")})
        n, e = part["n"].to_numpy(), part["e"].to_numpy()
        np.testing.assert_allclose(part["p_h0_mgps"], posterior_h0(n, e, prior), rtol=1e-12)
        fdr, decided = bayesian_fdr(part["p_h0_mgps"].to_numpy(), 0.2)
        np.testing.assert_array_equal(part["fdr_mgps"], fdr)
        np.testing.assert_array_equal(part["signal_mgps_fdr"], decided)
        a, nd, nr, total = (part[k].to_numpy() for k in ("n", "n_drug", "n_reaction", "n_total"))
        p = prr_p_value(a, nd - a, nr - a, total - nd - nr + a)
        np.testing.assert_array_equal(part["p_prr"], p)
        np.testing.assert_array_equal(part["q_prr"], benjamini_hochberg(p))
        np.testing.assert_array_equal(part["signal_prr_fdr"], (part["q_prr"] <= 0.2) & (a >= 3))
        assert entry["pairs"] == len(part) and entry["reports_screened"] == total[0]
    assert table["signal_prr_fdr"].any()


# -------------------------------------------------------------------------- FDR statistics
def test_posterior_h0_is_the_gamma_mixture_cdf_at_one():
    rng = np.random.default_rng(3)
    n = rng.integers(0, 40, 300)
    e = np.exp(rng.normal(0.0, 1.5, 300))
    for prior in (DUMOUCHEL_FDA, GpsPrior(0.3, 0.2, 3.0, 2.5, 0.4), GpsPrior(2.0, 1.0, 1.0, 1.0, 1.0)):
        a1, b1, a2, b2, p = prior.parameters
        f1 = stats.nbinom.pmf(n, a1, b1 / (b1 + e))
        f2 = stats.nbinom.pmf(n, a2, b2 / (b2 + e))
        q1 = p * f1 / (p * f1 + (1 - p) * f2)
        q2 = (1 - p) * f2 / (p * f1 + (1 - p) * f2)   # not 1 - q1: exact where q1 is near 1
        want = (q1 * stats.gamma.cdf(1.0, a1 + n, scale=1 / (b1 + e))
                + q2 * stats.gamma.cdf(1.0, a2 + n, scale=1 / (b2 + e)))
        # the module weighs component 2 by 1 - Qn: exact to an absolute 1e-16 or so, which is
        # what a mean of these probabilities (the Bayesian FDR) needs; not relative on 1e-30
        np.testing.assert_allclose(posterior_h0(n, e, prior), want, rtol=1e-9, atol=1e-14)


def test_bayesian_fdr_equals_a_brute_force_loop():
    rng = np.random.default_rng(5)
    for trial in range(30):
        size = int(rng.integers(1, 25))
        p = rng.choice(np.round(rng.random(6), 2), size) if trial % 2 else rng.random(size) ** 3
        q = float(rng.choice([0.01, 0.05, 0.1, 0.3]))
        fdr, decided = bayesian_fdr(p, q)
        order = sorted(range(size), key=lambda i: (p[i], i))   # ties: the given order
        for rank, i in enumerate(order, start=1):
            assert fdr[i] == pytest.approx(sum(p[j] for j in order[:rank]) / rank, rel=1e-12)
        kept = max([k for k in range(size + 1)
                    if k == 0 or sum(p[j] for j in order[:k]) / k <= q])
        assert set(np.flatnonzero(decided)) == set(order[:kept])


def test_benjamini_hochberg_equals_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(6)
    for size in (1, 2, 7, 50, 400):
        p = rng.random(size) ** 2
        p[: size // 5] = np.round(p[: size // 5], 1)   # ties, zeros and ones
        np.testing.assert_allclose(benjamini_hochberg(p),
                                   multitest.multipletests(p, method="fdr_bh")[1], rtol=1e-12)
    assert benjamini_hochberg([]).size == 0


def test_prr_p_value_is_the_one_sided_normal_test_on_the_corrected_table():
    rng = np.random.default_rng(7)
    cells = rng.integers(0, 30, size=(200, 4))
    cells[::9, 2] = 0
    cells[::13, 1] = 0
    got = prr_p_value(*cells.T)
    for (a, b, c, d), value in zip(cells, got):
        a, b, c, d = (x + 0.5 for x in (a, b, c, d))
        z = math.log((a / (a + b)) / (c / (c + d))) / math.sqrt(1 / a - 1 / (a + b) + 1 / c
                                                                 - 1 / (c + d))
        assert value == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)), rel=1e-9, abs=1e-300)
    assert np.all(np.isfinite(got))


# --------------------------------------------------------------------- neighbouring input
DRUGS = st.lists(st.sampled_from(["ASPIRIN", "IBUPROFEN", "WARFARIN"]), min_size=1, max_size=2)
REACTIONS = st.lists(st.sampled_from(["Nausea", "Rash", "Haemorrhage"]), min_size=1, max_size=2)
REPORT = st.tuples(st.sampled_from(["Child", "Adult", "Aged", "Middle Aged", "*", ""]),
                   st.sampled_from(["F", "M", "", "*"]), DRUGS, REACTIONS)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(REPORT, min_size=1, max_size=8), REPORT)
def test_one_more_report_changes_the_n_of_its_pairs_by_one(reports, extra):
    def frame(items):
        return pd.DataFrame([("2020Q1", f"c{i}", "1", age, sex, "|".join(d), "|".join(r))
                             for i, (age, sex, d, r) in enumerate(items)], columns=COLUMNS)

    before = signal_table({"2020Q1": frame(reports)}, stratify_by="age,sex", hierarchies=HIER)
    after = signal_table({"2020Q1": frame([*reports, extra])}, stratify_by="age,sex",
                         hierarchies=HIER)
    old = {k: r["n"] for k, r in _keyed(before).items()}
    new = {k: r["n"] for k, r in _keyed(after).items()}
    added = {(d.casefold(), r.casefold()) for d in extra[2] for r in extra[3]}
    assert set(new) == set(old) | added
    for key in new:
        assert new[key] == old.get(key, 0) + (key in added), key
    assert set(after["n_total"]) == {len(reports) + 1}
    for table, rows in ((before, reports), (after, [*reports, extra])):
        assert (table["n"] <= table["n_drug"]).all() and (table["n"] <= table["n_reaction"]).all()
        assert (table["n_drug"] <= table["n_total"]).all()
        # Σ_s n_d,s n_r,s / N_s <= Σ_s n_d,s: the adjusted E never exceeds a margin
        assert (table["e"] <= np.minimum(table["n_drug"], table["n_reaction"]) * (1 + 1e-12)).all()
        want = hand_expected(frame(rows), ("age", "sex"))
        for key, row in _keyed(table).items():
            assert row["e"] == pytest.approx(want[key][0], rel=1e-12)


# ------------------------------------------------------------------------------ vigipy
def _container(vigipy, table: pd.DataFrame):
    """vigipy's input with our report-level margins: events n, product margin n_drug, event
    margin n_reaction, N n_total (so its Mantel-Haenszel E is our crude E)."""
    data = pd.DataFrame({"events": table["n"].to_numpy(), "product_aes": table["n_drug"].to_numpy(),
                         "count_across_brands": table["n_reaction"].to_numpy(),
                         "ae_name": table["reaction"].to_numpy(),
                         "product_name": table["drug"].to_numpy()})
    return vigipy.DataContainer(data=data, N=int(table["n_total"].iloc[0]))


def _by_pair(result, column: str) -> dict:
    frame = result.all_signals
    return dict(zip(zip(frame["Product"], frame["Adverse Event"]), frame[column]))


def test_agrees_with_vigipy_on_prr_ror_ebgm_and_the_posterior_of_h0():
    """For the same pair counts (vigipy's margins set to ours) and the prior our table fitted:
    PRR and ROR of tables without a zero cell equal vigipy's uncorrected ones; p_prr equals
    vigipy's PRR p-value where vigipy applies its Haldane correction (a table with a zero cell:
    it corrects only those, we correct every table); EBGM, EB05 and P(λ <= 1 | n) equal its GPS
    given that prior (to its 1e-10 guards and its bisection's 1e-5 stop on EB05)."""
    vigipy = pytest.importorskip("vigipy")
    rows = pd.concat(_random_series(11, periods=2, per=150).values(), ignore_index=True)
    # a rare drug always reported with a rare reaction: tables with zero cells (b = 0, c = 0)
    rare = pd.DataFrame([("2021Q1", f"r{i}", "1", "Child", "F", "RAREDRUG|D1", "Rare|R2")
                         for i in range(3)], columns=COLUMNS)
    rows = pd.concat([rows, rare], ignore_index=True)
    table = signal_table({"2021Q1": rows.assign(period="2021Q1")}, scopes="pooled")
    keys = list(zip(table["drug"], table["reaction"]))
    a, nd, nr, total = (table[k].to_numpy() for k in ("n", "n_drug", "n_reaction", "n_total"))
    b, c, d = nd - a, nr - a, total - nd - nr + a
    zero = (b == 0) | (c == 0) | (d == 0)
    assert zero.any() and (~zero & (a >= 3)).any()

    plain = vigipy.prr(_container(vigipy, table), min_events=1, continuity_correction=False)
    corrected = vigipy.prr(_container(vigipy, table), min_events=1)
    odds = vigipy.ror(_container(vigipy, table), min_events=1, continuity_correction=False)
    prr, ror, p_value = _by_pair(plain, "PRR"), _by_pair(odds, "ROR"), _by_pair(corrected, "p_value")
    for i, key in enumerate(keys):
        if zero[i]:
            assert table["p_prr"].iloc[i] == pytest.approx(p_value[key], rel=1e-9, abs=1e-15), key
        elif a[i] >= 3:   # below 3 reports our PRR and ROR are 0 by convention
            assert table["prr"].iloc[i] == pytest.approx(prr[key], rel=1e-12), key
            assert table["ror"].iloc[i] == pytest.approx(ror[key], rel=1e-12), key

    entry = table.attrs["signals"]["scopes"][0]
    prior = [entry["prior"][k] for k in ("alpha1", "beta1", "alpha2", "beta2", "p")]
    gps = vigipy.gps(_container(vigipy, table), min_events=1, prior_param=prior,
                     ranking_statistic="p_value", decision_metric="signals", decision_thres=1)
    ebgm, eb05 = _by_pair(gps, "EBGM"), _by_pair(gps, "LowerBound")
    h0, expected = _by_pair(gps, "p_value"), _by_pair(gps, "Expected Count")
    for i, key in enumerate(keys):
        assert table["e"].iloc[i] == pytest.approx(expected[key], rel=1e-12)
        assert table["ebgm"].iloc[i] == pytest.approx(ebgm[key], rel=1e-8)
        assert table["eb05"].iloc[i] == pytest.approx(eb05[key], rel=1e-3)
        assert table["p_h0_mgps"].iloc[i] == pytest.approx(h0[key], rel=1e-6, abs=1e-9)
    # vigipy's Bayesian FDR (the running mean of the sorted posterior probabilities)
    np.testing.assert_allclose(np.sort(table["fdr_mgps"]), np.sort(gps.all_signals["fdr"]),
                               rtol=1e-6, atol=1e-9)


# ------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kwargs, fragment", [
    ({"scopes": "bogus"}, "'scopes'"),
    ({"scopes": ["dedup", "weekly"]}, "'scopes'"),
    ({"scopes": ""}, "'scopes'"),
    ({"scopes": 3}, "'scopes'"),
    ({"fdr": 2}, "'fdr'"),
    ({"fdr": 0}, "'fdr'"),
    ({"fdr": 1.0}, "'fdr'"),
    ({"fdr": float("nan")}, "'fdr'"),
    ({"fdr": True}, "'fdr'"),
    ({"fdr": "0.05"}, "'fdr'"),
    ({"min_count": 0}, "min_count"),
    ({"drug_columns": []}, "'drug_columns'"),
    ({"reaction_column": ""}, "'reaction_column'"),
    ({"stratify_by": "weight"}, "'stratify_by'"),
])
def test_bad_options_name_their_parameter(kwargs, fragment):
    with pytest.raises(ValidationError, match=fragment):
        signal_table({"2020Q1": HAND}, **kwargs)


@pytest.mark.parametrize("releases", [{}, [], None, {"not a period": HAND},
                                      {"2020Q1": HAND, "Q5": HAND}, {"2020Q1": "rows"}])
def test_bad_releases_name_the_parameter(releases):
    with pytest.raises(ValidationError, match="'releases'"):
        signal_table(releases)


def test_absent_columns_name_the_parameter():
    with pytest.raises(SchemaError, match="'drug_columns'.*'drugs_primary_suspect'"):
        signal_table({"2020Q1": HAND}, drug_columns="drugs_primary_suspect")
    with pytest.raises(SchemaError, match="'reaction_column'.*'pt'"):
        signal_table({"2020Q1": HAND}, reaction_column="pt")
    # rows without a case_id are each their own case: dedup is then pooled
    bare = signal_table({"2020Q1": HAND.drop(columns="case_id")}, scopes="dedup,pooled")
    dedup, pooled = (bare[bare["scope"] == s].reset_index(drop=True) for s in ("dedup", "pooled"))
    assert len(dedup) and dedup["n"].tolist() == pooled["n"].tolist()


def test_age_bands_without_their_hierarchy_are_refused_naming_it():
    with pytest.raises(ValidationError, match="'stratify_by'.*hierarchies"):
        signal_table({"2020Q1": HAND}, stratify_by="age")


def test_a_blank_age_is_read_from_fdas_age_group_when_it_lies_in_one_band():
    """Issue 42: a FAERS-layout input's age_grp decides the band of a report whose age cell
    does not (N, I, C, T: <= 18; A: 19-64; E: >= 65); a decided age cell wins; blank and
    unknown codes stay unknown."""
    from medanon.hierarchies.builtin import mesh_age_tree
    from medanon.metrics.signal_table import AGE_GROUP_COLUMN, _variable_values

    rows = pd.DataFrame({"age": ["", "", "", "", "", "", "", "", "Aged (65-79)", "*"],
                         AGE_GROUP_COLUMN: ["N", "i", " C", "T", "A", "E", "", "X", "C", "A"]})
    got = _variable_values(rows, "age", "age", {"age": mesh_age_tree()})
    assert got.tolist() == ["age <= 18"] * 4 + ["age in [19-64]", "age >= 65", "unknown",
                                                "unknown", "age >= 65", "age in [19-64]"]
