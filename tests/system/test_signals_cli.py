"""``medanon signals`` (issue 32): the per-pair table of a store (original or release side) and of a
published folder (release format or FAERS layout), written as csv or parquet with its sidecar;
bad input refused as a clean user error that writes nothing.

One small synthetic series (2 quarters of 150 cases, PPMS++) serves every test.
"""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import pytest

from medanon.api import signals
from medanon.errors import ValidationError
from medanon.data.synth.faers import write_faers_series
from medanon.metrics.signal_table import SIGNAL_RULES, SIGNAL_TABLE_DTYPES, read_signal_table
from medanon.published.format import RELEASE_FILES
from tests.conftest import assert_user_error, ingest_and_release, invoke_cli, snapshot

KEY = ["scope", "period", "drug", "reaction"]


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """(store, the release exported in the release format, the same in the FAERS layout only)."""
    folder = tmp_path_factory.mktemp("signals")
    write_faers_series(folder / "in", periods=2, cases=150, seed=5)
    store = ingest_and_release(folder / "in", folder / "s.duckdb")
    exported, faers = folder / "release", folder / "faers"
    for out, fmt in ((exported, "csv"), (faers, "faers")):
        result = invoke_cli("export", "--store", store, "--out", out, "--format", fmt)
        assert result.returncode == 0, result.stderr
    for period in faers.iterdir():   # leave only FDA's files
        for name in (*RELEASE_FILES, "manifest.json"):
            (period / name).unlink(missing_ok=True)
    return store, exported, faers


def _read(path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    con = duckdb.connect()
    try:
        return con.execute("SELECT * FROM read_parquet(?)", [str(path)]).df()
    finally:
        con.close()


def _same_pairs(got: pd.DataFrame, want: pd.DataFrame, columns=("n", "e", "ebgm", "eb05",
                                                                 "p_h0_mgps", "q_prr")) -> None:
    got = got.sort_values(KEY).reset_index(drop=True)
    want = want.sort_values(KEY).reset_index(drop=True)
    assert got[KEY].astype(str).values.tolist() == want[KEY].astype(str).values.tolist()
    for column in columns:
        np.testing.assert_allclose(got[column].to_numpy(float), want[column].to_numpy(float),
                                   rtol=1e-12, err_msg=column)
    for flag in SIGNAL_RULES.values():
        assert got[flag].astype(bool).tolist() == want[flag].astype(bool).tolist(), flag


def test_store_original_side_writes_the_csv_and_its_sidecar(series, tmp_path):
    store, _, _ = series
    out = tmp_path / "pairs.csv"
    result = invoke_cli("signals", "--store", store, "--out", out)
    assert result.returncode == 0, result.stderr
    table = _read(out)
    sidecar = json.loads((tmp_path / "pairs.csv.json").read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.csv", "pairs.csv.json"]
    assert f"wrote {len(table)} pair row(s)" in result.stdout
    assert set(table["scope"]) == {"dedup"} and "e_crude" not in table.columns
    assert "original records" in sidecar["source"]
    assert sidecar["options"]["scopes"] == ["dedup"] and sidecar["options"]["fdr"] == 0.05
    [entry] = sidecar["scopes"]
    assert entry["pairs"] == len(table) and entry["reports"] > 0
    assert {"alpha1", "beta1", "alpha2", "beta2", "p", "loglik", "converged", "starts",
            "agreeing", "message"} <= set(entry["prior"])
    assert isinstance(entry["prior"]["converged"], bool)
    assert set(sidecar["rules"]) == set(SIGNAL_RULES)


def test_a_folder_to_parquet_equals_the_api_on_the_same_folder(series, tmp_path):
    _, exported, _ = series
    out = tmp_path / "pairs.parquet"
    options = ["--scope", "dedup,pooled", "--scope", "cumulative", "--stratify-by", "age,sex",
               "--fdr", "0.1"]
    result = invoke_cli("signals", exported, "--out", out, *options)
    assert result.returncode == 0, result.stderr
    assert "warning: age:" in result.stderr   # generalized ages are unknown strata, told
    table = _read(out)
    want = signals(exported, scopes=["dedup", "pooled", "cumulative"], stratify_by="age,sex",
                   fdr=0.1)
    assert list(table.columns) == list(want.columns)
    _same_pairs(table, want, columns=("n", "e", "e_crude", "ebgm", "eb05", "p_h0_mgps",
                                      "fdr_mgps", "q_prr"))
    firsts = [f"first_signal_{r}" for r in SIGNAL_RULES]
    cumulative = table[table["scope"] == "cumulative"]
    # a period label where the pair has signalled, missing (never "") where it has not
    assert cumulative[firsts].notna().any().any() and not (cumulative[firsts] == "").any().any()
    sidecar = json.loads((tmp_path / "pairs.parquet.json").read_text())
    assert [e["scope"] for e in sidecar["scopes"]] == ["dedup", "pooled", "cumulative",
                                                       "cumulative"]
    assert all(set(e["unknown"]) == {"age", "sex"} for e in sidecar["scopes"])


def test_the_release_side_of_the_store_equals_the_exported_series(series, tmp_path):
    store, exported, _ = series
    out = tmp_path / "release.csv"
    result = invoke_cli("signals", "--store", store, "--side", "release", "--out", out,
                        "--scope", "dedup,quarter")
    assert result.returncode == 0, result.stderr
    _same_pairs(_read(out), signals(exported, scopes="dedup,quarter"))
    # the original side is the operator's table, and its sidecar says so
    original = signals(store=store, side="original", scopes="dedup,quarter")
    assert "original records" in original.attrs["signals"]["source"]
    assert "original" not in signals(exported).attrs["signals"]["source"]


def test_a_faers_layout_only_folder_counts_the_same_pairs(series):
    _, exported, faers = series
    assert not any((p / name).exists() for p in faers.iterdir() for name in RELEASE_FILES)
    scopes = "dedup,pooled,quarter"
    got, want = signals(faers, scopes=scopes), signals(exported, scopes=scopes)
    assert got.attrs["signals"]["source"].startswith("FAERS layout")
    n_got = dict(zip(map(tuple, got[KEY].values.tolist()), got["n"]))
    n_want = dict(zip(map(tuple, want[KEY].values.tolist()), want["n"]))
    assert n_got == n_want
    # issue 42: a blank age is read from FDA's age_grp, each code inside one band. The FAERS
    # layout loses exactly the published labels that decide a band but span several FDA groups
    # (Nonadult, Infant: age_grp is left empty for them): nothing else, and nothing guessed
    from medanon.hierarchies.builtin import faers_age_group, mesh_age_tree
    from medanon.metrics.screening import DEFAULT_STRATA
    from medanon.metrics.signals import INSIDE, Condition

    by_faers = signals(faers, stratify_by="age").attrs["signals"]["scopes"][0]
    by_release = signals(exported, stratify_by="age").attrs["signals"]["scopes"][0]
    latest = pd.concat([pd.read_csv(p / "release.csv", dtype=str, keep_default_na=False)
                        for p in sorted(exported.iterdir())]).drop_duplicates("case_id", keep="last")
    cells = latest["age"].to_numpy(dtype=object)
    decided = np.logical_or.reduce([Condition.parse(t).classify(cells, mesh_age_tree()) == INSIDE
                                    for t in DEFAULT_STRATA[:3]])
    spanning = np.array([c not in ("", "*") and faers_age_group(c) is None for c in cells])
    assert by_faers["reports"] == by_release["reports"] == len(latest)
    assert by_faers["unknown"]["age"] == by_release["unknown"]["age"] + int((decided & spanning).sum())
    assert by_faers["unknown"]["age"] < by_faers["reports"]


@pytest.mark.parametrize("args, fragment", [
    (["--out", "{out}.txt"], "--out"),
    (["--scope", "bogus"], "--scope"),
    (["--fdr", "2"], "--fdr"),
    (["--stratify-by", "weight"], "--stratify-by"),
    (["--min-count", "0"], "--min-count"),
    (["--side", "both"], "--side"),
    (["{series}"], "not both"),
])
def test_bad_input_is_a_clean_error_that_writes_nothing(series, tmp_path, args, fragment):
    store, exported, _ = series
    out = tmp_path / "pairs"
    args = [a.format(out=out, series=exported) for a in args]
    if "--out" not in args:
        args += ["--out", f"{out}.csv"]
    before = snapshot(exported)
    result = invoke_cli("signals", "--store", store, *args)
    assert_user_error(result, "ValidationError", fragment)
    assert snapshot(tmp_path) == {}
    assert snapshot(exported) == before


def test_a_folder_with_side_or_neither_input_is_refused(series, tmp_path):
    _, exported, _ = series
    result = invoke_cli("signals", exported, "--side", "release", "--out", tmp_path / "x.csv")
    assert_user_error(result, "ValidationError", "--side")
    result = invoke_cli("signals", "--out", tmp_path / "x.csv")
    assert_user_error(result, "ValidationError", "--store")
    assert snapshot(tmp_path) == {}


def test_the_api_refuses_what_the_series_decides_and_a_side_without_a_store(series):
    _, exported, _ = series
    with pytest.raises(ValidationError, match="hierarchies and perturbed columns"):
        signals(exported, hierarchies={})
    with pytest.raises(ValidationError, match="'side'"):
        signals(exported, side="release")


def test_rr0_moves_p_h0_as_the_posterior_says(series, tmp_path):
    """--rr0 1.5: p_h0_mgps is each pair's posterior P(λ <= 1.5 | n) under the prior the sidecar
    records (recomputed here from scipy's negative binomial and gamma), the sidecar names RR0, and
    no pair's P(λ <= 1.5) is below its P(λ <= 1)."""
    from scipy import stats

    store, _, _ = series
    base, moved = tmp_path / "base.csv", tmp_path / "rr0.csv"
    assert invoke_cli("signals", "--store", store, "--out", base).returncode == 0
    result = invoke_cli("signals", "--store", store, "--out", moved, "--rr0", "1.5")
    assert result.returncode == 0, result.stderr
    sidecar = json.loads((tmp_path / "rr0.csv.json").read_text())
    assert sidecar["options"]["rr0"] == 1.5
    prior = sidecar["scopes"][0]["prior"]
    table, before = _read(moved), _read(base)
    n, e = table["n"].to_numpy(float), table["e"].to_numpy(float)
    l1 = np.log(prior["p"]) + stats.nbinom.logpmf(n, prior["alpha1"],
                                                   prior["beta1"] / (prior["beta1"] + e))
    l2 = np.log1p(-prior["p"]) + stats.nbinom.logpmf(n, prior["alpha2"],
                                                      prior["beta2"] / (prior["beta2"] + e))
    w = np.exp(l1 - np.logaddexp(l1, l2))
    want = (w * stats.gamma.cdf(1.5, prior["alpha1"] + n, scale=1 / (prior["beta1"] + e))
            + (1 - w) * stats.gamma.cdf(1.5, prior["alpha2"] + n, scale=1 / (prior["beta2"] + e)))
    np.testing.assert_allclose(table["p_h0_mgps"].to_numpy(float), want, rtol=1e-6, atol=1e-9)
    merged = table.merge(before, on=KEY, suffixes=("", "_1"))
    assert len(merged) == len(table)
    assert (merged["p_h0_mgps"] >= merged["p_h0_mgps_1"] - 1e-12).all()


def test_the_store_read_a_release_at_a_time_equals_the_series_held_whole(series):
    """Issue 43: the release side reads each release from the store when the table comes to
    it, and only the columns the table reads; the table and its sidecar are those of the
    whole series read into memory first."""
    from medanon.api import _signals_of
    from medanon.published.series import load_series
    from medanon.store import ReleaseStore

    store = series[0]
    options = dict(scopes="dedup,pooled,quarter,cumulative", stratify_by="age,sex")
    streamed = signals(store=store, side="release", **options)
    with ReleaseStore.open(store, read_only=True) as db:
        whole = load_series(store=db)
        for period, rows in whole.releases.items():
            # the columns asked for in the release's own order; one it lacks left out
            narrow = db.release_rows(period, ["reactions", "case_id", "drugs", "age_grp"])
            kept = [c for c in rows.columns if c in ("case_id", "drugs", "reactions")]
            pd.testing.assert_frame_equal(narrow, rows[kept])
        want = _signals_of(whole, **options)
    pd.testing.assert_frame_equal(streamed, want, check_exact=True)
    assert streamed.attrs == want.attrs


# -- the analyst's file (issue 44) ------------------------------------------------------------------
def test_every_column_keeps_one_dtype_in_every_scope_and_in_csv_and_parquet(series, tmp_path):
    """The dtypes of SIGNAL_TABLE_DTYPES whatever the scopes screened, and the csv and parquet
    files read back (read_signal_table) equal to the table; a text column's missing value is NA,
    never an empty string beside a float NaN (first_signal_* was both)."""
    _, exported, _ = series
    scopes = ["dedup", "pooled", "quarter", "cumulative"]
    each = {s: signals(exported, scopes=s, stratify_by="sex") for s in scopes}
    every = signals(exported, scopes=scopes, stratify_by="sex")
    for table in (*each.values(), every):
        assert {c: str(t) for c, t in table.dtypes.items()} == {
            c: SIGNAL_TABLE_DTYPES[c] for c in table.columns}
        assert table.attrs["signals"]["dtypes"] == {c: SIGNAL_TABLE_DTYPES[c] for c in table.columns}
    text = [c for c in every.columns if SIGNAL_TABLE_DTYPES[c] == "str"]
    assert not (every[text] == "").any().any()
    firsts = [c for c in every.columns if c.startswith("first_signal_")]
    assert every.loc[every["scope"] != "cumulative", firsts].isna().all().all()
    assert every[firsts].notna().any().any(), "no pair signals: the fixture tests nothing"
    for name in ("pairs.csv", "pairs.parquet"):
        result = invoke_cli("signals", exported, "--out", tmp_path / name, "--stratify-by", "sex",
                            *(a for s in scopes for a in ("--scope", s)))
        assert result.returncode == 0, result.stderr
        pd.testing.assert_frame_equal(read_signal_table(tmp_path / name), every)
    # pandas' own reader with the sidecar's dtypes gives the same types (no mixed column)
    sidecar = json.loads((tmp_path / "pairs.csv.json").read_text())
    plain = pd.read_csv(tmp_path / "pairs.csv", dtype=sidecar["dtypes"])
    assert list(plain.dtypes.astype(str)) == list(every.dtypes.astype(str))


@pytest.mark.parametrize("limit, hinted", [(0, True), (None, False)])
def test_a_large_csv_gets_a_hint_to_write_parquet(series, tmp_path, monkeypatch, limit, hinted):
    """Above CSV_HINT_BYTES (lowered here: the fixture's table is small) stderr suggests
    --out X.parquet; below it, and for a parquet output, nothing is said."""
    import medanon.metrics.signal_table as module

    _, exported, _ = series
    if limit is not None:
        monkeypatch.setattr(module, "CSV_HINT_BYTES", limit)
    for name in ("pairs.csv", "pairs.parquet"):
        result = invoke_cli("signals", exported, "--out", tmp_path / name)
        assert result.returncode == 0, result.stderr
        said = "hint:" in result.stderr and "--out pairs.parquet" in result.stderr
        assert said == (hinted and name.endswith(".csv")), result.stderr
    assert module.CSV_HINT_BYTES == (limit if limit is not None else 32 * 2**20)
