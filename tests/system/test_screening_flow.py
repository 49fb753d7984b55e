"""Signal screening end to end: ``--method none`` reproduces the signals an analyst gets from
the raw FAERS files, and ``medanon evaluate --json`` reports the screening."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from medanon.api import signals
from medanon.data.synth.faers import write_faers_series
from medanon.metrics.disproportionality import pair_counts, screen
from medanon.metrics.signal_table import SIGNAL_RULES
from medanon.store import ReleaseStore
from medanon.published.series import load_series
from tests.conftest import assert_user_error, invoke_cli


def _raw_reports(folder: Path) -> pd.DataFrame:
    """What an analyst builds from the raw files, without medanon's reader: per quarter the
    latest version of each case (caseversion, then fda_dt, then primaryid), cases on any DELETE
    list removed, one row per report with its drug and reaction terms joined by '|'."""
    quarters = sorted(p for p in folder.iterdir() if p.is_dir())

    def table(q: Path, name: str) -> pd.DataFrame:
        (path,) = q.glob(f"{name}*.txt")
        return pd.read_csv(path, sep="$", dtype=str, encoding="latin-1",
                           keep_default_na=False, index_col=False).iloc[:, :-1]

    deleted: set[str] = set()
    for path in folder.glob("*/DELETE*.txt"):
        lines = path.read_text(encoding="latin-1").splitlines()
        deleted |= {ln.strip().rstrip("$").strip() for ln in lines if ln.strip()}
    frames = []
    for q in quarters:
        demo = table(q, "DEMO")
        demo = demo[~demo["caseid"].isin(deleted)].copy()
        demo["v"] = demo["caseversion"].astype(int)
        demo = demo.sort_values(["caseid", "v", "fda_dt", "primaryid"]).groupby("caseid").tail(1)
        keep = set(demo["primaryid"])
        drug, reac = table(q, "DRUG"), table(q, "REAC")
        drugs = (drug[drug["primaryid"].isin(keep)].groupby("primaryid")["drugname"]
                 .agg(lambda s: "|".join(sorted(set(s.str.strip().str.upper())))))
        reactions = (reac[reac["primaryid"].isin(keep)].groupby("primaryid")["pt"]
                     .agg(lambda s: "|".join(sorted(set(s.str.strip())))))
        frames.append(pd.DataFrame({"drugs": drugs, "reactions": reactions})
                      .reindex(sorted(keep)).fillna(""))
    return pd.concat(frames, ignore_index=True)


def _signal_sets(rows: pd.DataFrame) -> dict[str, set]:
    table, prior = screen(pair_counts(rows))
    # the likelihood of this small series (3 × 500) rises without limit towards a point-mass
    # component (choice 3 of the disproportionality module): the fit ends at the parameter
    # limit and says so, which is the only way it may fail to converge here
    assert prior.converged or ("at a bound" in prior.message and "floor" not in prior.message
                               and "ITERATIONS" not in prior.message.upper()), prior
    key = list(zip(table["drug"].str.upper(), table["reaction"].str.casefold()))
    return {flag: {k for k, s in zip(key, table[flag]) if s}
            for flag in ("signal_prr", "signal_mgps", "signal_bcpnn")}


@pytest.fixture(scope="module")
def none_store(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("screen")
    write_faers_series(folder / "in", periods=3, cases=500, seed=11)
    store = folder / "s.duckdb"
    for args in (("ingest", folder / "in", "--store", store),
                 ("release", "--store", store, "--method", "none", "--seed", "1",
                  "--allow-seeded", "--allow-unprotected")):
        result = invoke_cli(*args)
        assert result.returncode == 0, result.stderr
    return folder / "in", store


def test_method_none_reproduces_the_raw_files_pooled_signal_sets(none_store):
    raw_folder, store = none_store
    raw = _raw_reports(raw_folder)
    with ReleaseStore.open(store, read_only=True) as db:
        series = load_series(store=db)
    released = pd.concat([series.releases[p] for p in series.periods], ignore_index=True)
    assert len(released) == len(raw)           # every report kept (keep-missing default)
    expected, got = _signal_sets(raw), _signal_sets(released)
    for flag in expected:
        assert expected[flag], flag            # the planted signals exist at all
        assert got[flag] == expected[flag], flag


def test_evaluate_json_reports_the_screening(none_store, tmp_path):
    _, store = none_store
    rules = tmp_path / "rules.csv"
    rules.write_text("drug,condition,reaction\nAVANDIA,age > 18,Myocardial infarction\n"
                     "ZELNORM,sex = F,Cerebrovascular accident\n")
    result = invoke_cli("evaluate", "--store", store, "--json", "--rules", rules, "--pooled")
    assert result.returncode == 0, result.stderr
    screening = json.loads(result.stdout)["screening"]
    kinds = [e["kind"] for e in screening["scopes"]]
    assert kinds[:2] == ["dedup", "pooled"] and kinds.count("quarter") == 3
    assert kinds.count("stratum") == 5
    # evaluate's recall and precision count the signals of medanon signals' own table
    table = signals(store=store, side="release", scopes="dedup,pooled,quarter")
    for entry in screening["scopes"]:
        if entry["kind"] == "stratum":
            continue
        own = table[table["scope"] == entry["kind"]]
        if entry["kind"] == "quarter":
            own = own[own["period"] == entry["scope"]]
        for name, flag in SIGNAL_RULES.items():
            assert entry["statistics"][name]["signals_release"] == int(own[flag].sum()), (
                entry["scope"], name)
    for entry in screening["scopes"]:
        for name in ("mgps", "bcpnn", "prr", "mgps_fdr", "prr_fdr"):
            st = entry["statistics"][name]
            assert st["signals_release"] == st["signals_original"] == st["common"]
        assert entry["prior"]["original"] == entry["prior"]["release"]
        for field in ("alpha1", "beta1", "alpha2", "beta2", "p", "converged", "message",
                      "param_limit", "standard_errors"):
            assert field in entry["prior"]["release"]
        prior = entry["prior"]["release"]
        # a fit at a bound is not converged and names the bound (issue 32)
        assert prior["converged"] is not ("at a bound" in prior["message"])
        if not prior["converged"]:
            assert set(prior["standard_errors"].values()) == {None}
    assert screening["planted_summary"]["mgps"]["manufactured_opposite"] == 0
    own = screening["planted"][0]["own"]["release"]
    for field in ("ebgm", "eb05", "eb95", "ic", "ic025", "prr"):
        assert field in own
    off = invoke_cli("evaluate", "--store", store, "--json", "--no-screening")
    assert off.returncode == 0 and "screening" not in json.loads(off.stdout)


def test_evaluate_refuses_an_unpublished_drug_column(none_store):
    _, store = none_store
    result = invoke_cli("evaluate", "--store", store, "--drug-column", "drugs_made_up")
    assert_user_error(result, "ValidationError", "drugs_made_up")
