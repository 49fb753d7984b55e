"""End to end: the verify gate inside `release`, and `verify`, `attack`, `evaluate` on a store."""

from __future__ import annotations

import json

import pytest

from medanon.anonymize import PPMSPlusPlus
from medanon.cli.app import main
from medanon.data.synth.faers import write_faers_series
from medanon.errors import PrivacyViolation
from medanon.random import randomness
from medanon.pipeline.publish import publish_periods
from medanon.pipeline.checks import Acknowledgements
from medanon.store import ReleaseStore
from tests.conftest import invoke_cli, run_cli

COMMON = ["--k", "5", "--theta", "frequency", "--on-infeasible", "raise-theta", "--seed", "3",
          "--allow-seeded"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attack")
    write_faers_series(folder / "in", periods=4, cases=400, seed=5)
    out = {}
    for method in ("ppms++", "ms"):
        store = folder / f"{method}.duckdb"
        assert main(["ingest", str(folder / "in"), "--store", str(store)]) == 0
        assert main(["release", "--store", str(store), "--method", method, *COMMON]) == 0
        out[method] = store
    out["folder"] = folder
    return out


def _json(*args):
    done = run_cli(*args, "--json")
    return done, (json.loads(done.stdout) if done.stdout.strip() else None)


def test_ms_falls_to_the_bfl_attacks_and_ppms_plus_plus_does_not(stores):
    # 001's figures: MS-Anonymization shows DIR/DSR > 0 after the BFL-attacks, PPMS++ 0.
    done, safe = _json("attack", "--store", stores["ppms++"])
    assert done.returncode == 0, done.stderr
    done, naive = _json("attack", "--store", stores["ms"])
    assert all(r["dir"] == 0 and r["dsr"] == 0 for r in safe["releases"])
    later = naive["releases"][1:]
    assert max(r["dir"] for r in later) > 0 and max(r["dsr"] for r in later) > 0
    assert all(g["remaining"] < 5 for r in later for g in r["group_details"] if g["dig"])


def test_verify_passes_each_declared_model_and_attack_shows_the_difference(stores):
    for method in ("ppms++", "ms"):
        done, report = _json("verify", "--store", stores[method])
        assert done.returncode == 0, done.stderr
        assert report["ok"] and {r["verdict"] for r in report["releases"]} == {"passed"}
    with ReleaseStore.open(stores["ppms++"]) as db:
        gate = db.manifest("2020Q3")["verification"]
    assert gate["verdict"] == "passed" and gate["attacks"] == "B/F/L" and gate["dir"] == 0


def test_attack_one_target_reports_each_exclusion(stores):
    with ReleaseStore.open(stores["ms"]) as db:
        rows = db.release_rows("2020Q2")
        first = db.release_rows("2020Q1")
    old = rows[rows["case_id"].isin(set(first["case_id"]))].iloc[0]
    target = f"sex={old['sex'] if old['sex'] != '*' else 'F'}"
    done, out = _json("attack", "--store", stores["ms"], "--period", "2020Q2", "--target", target,
                      "--first-appearance")
    assert done.returncode == 0, done.stderr
    assert set(out) >= {"candidates", "excluded", "remaining"}
    assert set(out["excluded"]) == {"B", "F", "L", "MD"}
    # The L-attack removes every candidate whose case was published in 2020Q1.
    assert set(out["excluded"]["L"]) == set(out["candidates"]) & set(first["case_id"])
    assert set(out["remaining"]).isdisjoint(out["excluded"]["L"])


def test_evaluate_reports_every_metric(stores, tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ndrug = "AVANDIA"\nreaction = "Myocardial infarction"\n'
                     'condition = "age > 18"\n')
    knowledge = tmp_path / "bk.csv"
    knowledge.write_text("term,attribute,value\nProstate cancer,sex,M\n")
    done, out = _json("evaluate", "--store", stores["ms"], "--rules", rules,
                      "--background", knowledge)
    assert done.returncode == 0, done.stderr
    for r in out["releases"]:
        assert 0 <= r["nil"] <= 1 and 0 <= r["nil_star"] <= 1
        assert 0 < r["rr"] <= 1 and 0 < r["ar_rev"] <= 1
        assert r["background"]["rr"] >= r["rr"] - 1e-9   # more knowledge, no less risk
        signal = r["signals"][0]
        assert signal["original"]["count"] >= signal["release"]["count"]
    ms_rr = [r["rr"] for r in out["releases"]]
    done, safe = _json("evaluate", "--store", stores["ppms++"])
    # Generalizing over the series (and covering old cases) lowers the linkage risk.
    assert sum(r["rr"] for r in safe["releases"][1:]) < sum(ms_rr[1:])


def test_the_gate_refuses_a_violating_release_and_leaves_the_store_as_it_was(stores, monkeypatch):
    store = stores["folder"] / "gate.duckdb"
    assert main(["ingest", str(stores["folder"] / "in"), "--store", str(store)]) == 0
    method = PPMSPlusPlus(k=5, theta=1.0)
    real = PPMSPlusPlus.anonymize

    def broken(self, data, previous, **kw):  # an algorithm bug: one case split off on its own
        result = real(self, data, previous, **kw)
        result.table.loc[result.table.index[0], "group"] = "lonely"
        return result

    monkeypatch.setattr(PPMSPlusPlus, "anonymize", broken)
    with ReleaseStore.open(store) as db:
        with pytest.raises(PrivacyViolation, match="group lonely: only 1 case"):
            publish_periods(db, method, ["2020Q1"], randomness(1), acknowledged=Acknowledgements(seeded=True))
        assert db.published_periods() == []
        publish_periods(db, method, ["2020Q1"], randomness(1),
                        acknowledged=Acknowledgements(seeded=True, violations=True))
        entry = db.manifest("2020Q1")["verification"]
    assert entry["verdict"] == "violated" and entry["published_despite_violations"]
    assert any("group lonely" in v for v in entry["violations"])
    done = invoke_cli("verify", "--store", store)
    assert done.returncode == 1 and "PrivacyViolation" in done.stderr
