"""End to end: PPMS-DP releases, their manifests, the gate, the per-case ledger and its cap."""

from __future__ import annotations

import json
from fractions import Fraction

import pandas as pd
import pytest

from medanon.accounting import parse_epsilon
from medanon.cli.app import main
from medanon.errors import InputFormatError
from medanon.published.series import load_series
from medanon.verify import verify_series
from medanon.data.synth.faers import write_faers_series
from medanon.random import randomness
from medanon.store import ReleaseStore
from tests.conftest import assert_user_error, invoke_cli, run_cli, snapshot

COMMON = ["--k", "5", "--theta", "0.4", "--on-infeasible", "raise-theta", "--seed", "5",
          "--allow-seeded"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dp")
    write_faers_series(folder / "in", periods=3, cases=300, seed=4)
    return folder


def ingested(source, name: str):
    store = source / f"{name}.duckdb"
    assert main(["ingest", str(source / "in"), "--store", str(store)]) == 0
    return store


def operator_manifests(store):
    with ReleaseStore.open(store) as db:
        return db.operator_manifests()


def published(store):
    with ReleaseStore.open(store) as db:
        periods = db.published_periods()
        return ({p: db.release_rows(p) for p in periods}, {p: db.manifest(p) for p in periods},
                db.ledger())


@pytest.mark.parametrize("method, perturbed", [("ppms-dp-num", ["weight"]),
                                               ("ppms-dp-all", ["age", "sex", "weight"])])
def test_strict_release_manifest_gate_and_ledger(source, method, perturbed):
    store = ingested(source, method)
    assert main(["release", "--store", str(store), "--method", method, "--epsilon", "0.5",
                 *COMMON]) == 0
    rows, manifests, ledger = published(store)
    assert list(rows) == ["2020Q1", "2020Q2", "2020Q3"]
    for period, manifest in manifests.items():
        spent = manifest["privacy_spent"]
        assert manifest["method"]["privacy_model"] == "PPMS-DP(k, theta*, epsilon)"
        assert spent["variant"] == "strict" and spent["rng_kind"] == "seeded"
        assert spent["epsilon_per_attribute"] == "0.5"
        assert parse_epsilon(spent["epsilon_per_case"]) == Fraction(1, 2) * len(perturbed)
        assert spent["perturbed_qids"] == perturbed
        assert manifest["details"]["perturbed_qids"] == perturbed
        assert manifest["verification"]["verdict"] == "passed", manifest["verification"]
        assert (manifest["rng"]["kind"], manifest["rng"]["seed"]) == ("seeded", 5)
        assert manifest["rng"] == randomness(5).describe()
        weights = pd.to_numeric(rows[period]["weight"])
        assert weights.between(0, 300).all()  # clipped to the public domain
    # The ledger: one row per case given to the method and perturbed QID, per release (a case
    # the grouping could not place is charged too).
    facts = operator_manifests(store)   # input counts are operator-only (issue 41)
    assert len(ledger) == sum(m["details"]["cases"] for m in facts.values()) * len(perturbed)
    assert set(pd.concat(rows.values())["case_id"]) <= set(ledger["case_id"])
    appearances = ledger.drop_duplicates(["period", "case_id"])["case_id"].value_counts()
    result = run_cli("ledger", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["cases"] == len(appearances)
    expected_max = Fraction(1, 2) * len(perturbed) * int(appearances.max())
    assert parse_epsilon(summary["max_epsilon"]) == expected_max
    assert summary["mean_epsilon"] == pytest.approx(
        0.5 * len(perturbed) * appearances.mean())
    # verify replays the model on the exported series too
    assert run_cli("verify", "--store", store).returncode == 0
    with ReleaseStore.open(store) as db:
        series = load_series(store=db)
    assert verify_series(series).ok
    # The checker can fail: a k no group meets is a violation ...
    strict_k = {p: {**m, "method": {**m["method"], "parameters": {**m["method"]["parameters"],
                                                                    "k": 10_000}}}
                for p, m in series.manifests.items()}
    verdict = verify_series(type(series)(series.releases, strict_k, series.qids,
                                         series.sensitive, series.source))
    assert not verdict.ok and all(r.verdict == "violated" for r in verdict.releases)
    # ... and a DP manifest that does not declare its perturbed QIDs cannot be checked.
    undeclared = {p: {**m, "details": {k: v for k, v in m["details"].items()
                                       if k != "perturbed_qids"}}
                  for p, m in series.manifests.items()}
    with pytest.raises(InputFormatError, match="perturbed_qids"):
        verify_series(type(series)(series.releases, undeclared, series.qids, series.sensitive,
                                   series.source))


def test_paper_variant_says_it_is_not_dp(source):
    store = ingested(source, "paper")
    result = run_cli("release", "--store", store, "--method", "ppms-dp-all", "--epsilon", "1",
                     "--dp-variant", "paper", *COMMON)
    assert result.returncode == 0, result.stderr
    assert "NOT epsilon-DP" in result.stderr
    _, manifests, _ = published(store)
    spent = manifests["2020Q2"]["privacy_spent"]
    assert spent["variant"] == "paper"
    assert "epsilon-differential privacy" in spent["does_not_guarantee"]
    assert "NOT epsilon-DP" in manifests["2020Q2"]["method"]["guarantee"]
    for manifest in manifests.values():  # the groups published exact are named (maybe none)
        assert set(manifest["details"]["exact_groups"]) == {"weight"}
        assert "smallest_laplace_scale" not in manifest["details"]


def test_paper_variant_ledger_rows_are_not_dp_and_not_budgeted(source):
    store = ingested(source, "paper-ledger")
    paper = ["release", "--store", str(store), "--method", "ppms-dp-num", "--epsilon", "1",
             "--dp-variant", "paper", *COMMON]
    # a per-case budget has nothing to bound with the paper variant: refused, nothing written
    assert_user_error(invoke_cli(*paper, "2020Q1", "--case-budget", "5"), "ValidationError",
                      "no epsilon-DP claim")
    assert main([*paper, "2020Q1"]) == 0
    _, _, ledger = published(store)
    assert len(ledger) and not ledger["dp"].any()
    shown = invoke_cli("ledger", "--store", store)
    assert shown.returncode == 0, shown.stderr
    assert "No epsilon-DP release" in shown.stdout
    assert "NOT differentially private" in shown.stdout
    # strict releases after it: their budget ignores the paper rows. Every case followed up
    # from 2020Q1 would be at 2 > 1.5 if the nominal epsilon counted; none is withheld.
    strict = ["release", "--store", str(store), "--method", "ppms-dp-num", "--epsilon", "1",
              "--dp-variant", "strict", *COMMON]
    # the strict variant after the paper one is a change of the series policy (said with
    # --dp-variant: a flag not given keeps the pinned value)
    assert main([*strict, "2020Q2", "--case-budget", "1.5", "--change-policy"]) == 0
    rows, manifests, ledger = published(store)
    # the counts of the case budget are operator-only facts (issue 41)
    assert "over_budget" not in manifests["2020Q2"]["privacy_spent"]["case_budget"]
    assert operator_manifests(store)["2020Q2"]["privacy_spent"]["case_budget"]["over_budget"] == 0
    assert set(rows["2020Q1"]["case_id"]) & set(rows["2020Q2"]["case_id"])  # follow-ups exist
    summary = json.loads(invoke_cli("ledger", "--store", store, "--json").stdout)
    assert summary["max_epsilon"] == "1"  # one strict release; the paper rows are apart
    assert summary["non_dp"]["periods"] == ["2020Q1"]
    assert summary["non_dp"]["entries"] == int((~ledger["dp"]).sum())
    assert summary["non_dp"]["per_period"][0]["nominal_epsilon_per_case"] == "1"


def test_no_input_hash_nor_private_counts_leave_the_store(source, tmp_path):
    # a public domain narrower than the data: some true weights are clipped (operator-only count)
    store = ingested(source, "private")
    assert main(["release", "--store", str(store), "--method", "ppms-dp-num", "--epsilon", "1",
                 "--domain", "weight=40:100", *COMMON]) == 0
    with ReleaseStore.open(store) as db:
        operator = {p: db.operator_record(p) for p in db.published_periods()}
    assert all(o["private_details"]["clipped_to_domain"]["weight"] > 0 for o in operator.values())
    digests = [o["input_sha256"] for o in operator.values()]
    inspected = json.loads(invoke_cli("inspect", "--store", store, "--json").stdout)
    assert [p["input_sha256"] for p in inspected["periods"]] == digests  # the operator sees it
    for fmt in ("csv", "parquet", "faers"):
        out = tmp_path / fmt
        assert main(["export", "--store", str(store), "--out", str(out), "--format", fmt]) == 0
        files = [f for f in out.rglob("*") if f.is_file()]
        assert len(files) >= 6
        for f in files:
            data = f.read_bytes()
            for secret in ("input_sha256", "clipped_to_domain", *digests):
                assert secret.encode() not in data, (fmt, f.name, secret)


def test_evaluate_measures_dp_releases(source, tmp_path):
    # 000's metrics on a DP series: NIL with IL*, RR, AR_rev, the background bias, PRR bias.
    store = ingested(source, "evaluate")
    assert main(["release", "--store", str(store), "--method", "ppms-dp-all", "--epsilon", "1",
                 *COMMON]) == 0
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ndrug = "AVANDIA"\nreaction = "Myocardial infarction"\n'
                     'condition = "age > 18"\n')
    knowledge = tmp_path / "bk.csv"
    knowledge.write_text("term,attribute,value\nProstate cancer,sex,M\n")
    result = invoke_cli("evaluate", "--store", store, "--rules", rules, "--background", knowledge,
                        "--json")
    assert result.returncode == 0, result.stderr
    releases = json.loads(result.stdout)["releases"]
    assert [r["period"] for r in releases] == ["2020Q1", "2020Q2", "2020Q3"]
    for r in releases:
        assert 0 < r["nil_star"] <= 1
        assert 0 <= r["rr"] <= 1 and 0 <= r["ar_rev"] <= 1
        assert r["ar_rev"] >= r["rr"] - 1e-9  # Ar(r') >= Pr(r') term by term
        assert r["background"]["rr_bias"] == pytest.approx(r["background"]["rr"] - r["rr"],
                                                           abs=1e-6)
        signal = r["signals"][0]
        assert signal["original"]["count"] >= 0 and "prr" in signal["release"]


def test_case_budget_refuses_or_withholds(source):
    store = ingested(source, "budget")
    base = ["release", "--store", str(store), "--method", "ppms-dp-num", "--epsilon", "1",
            *COMMON]
    assert main([*base, "2020Q1"]) == 0
    # Cases of 2020Q1 followed up in 2020Q2 would reach 2 > 1.5: refused, store untouched.
    # a case budget from 2020Q2 on is a change of the series policy
    result = invoke_cli(*base, "2020Q2", "--case-budget", "1.5", "--change-policy")
    assert_user_error(result, "BudgetExceeded", "would exceed the per-case budget")
    rows, _, ledger = published(store)
    assert list(rows) == ["2020Q1"] and set(ledger["period"]) == {"2020Q1"}
    # With suppress those cases are withheld, and no case ever exceeds the cap.
    result = invoke_cli(*base, "2020Q2", "--case-budget", "1.5", "--on-case-budget", "suppress",
                        "--change-policy")
    assert result.returncode == 0, result.stderr
    rows, manifests, ledger = published(store)
    cap = operator_manifests(store)["2020Q2"]["privacy_spent"]["case_budget"]
    followed = set(rows["2020Q1"]["case_id"])
    assert cap["withheld_cases"] > 0 and cap["epsilon"] == "1.5"
    assert "withheld_cases" not in manifests["2020Q2"]["privacy_spent"]["case_budget"]
    assert not followed & set(rows["2020Q2"]["case_id"])
    totals = json.loads(invoke_cli("ledger", "--store", store, "--json",
                                   "--case-budget", "1.5").stdout)
    assert parse_epsilon(totals["max_epsilon"]) <= Fraction(3, 2)
    assert totals["over_budget"] == 0


def test_bad_dp_options_are_clear_errors(source):
    store = ingested(source, "errors")
    before = snapshot(source)
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms++", "--epsilon", "1",
                                 *COMMON), "ValidationError", "--epsilon")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms++", "--dp-variant",
                                 "paper", *COMMON), "ValidationError", "--dp-variant")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-num", *COMMON),
                      "ValidationError", "--epsilon is required by method 'ppms-dp-num'")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-num",
                                 "--epsilon", "-1", *COMMON), "ValidationError", "epsilon")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms++",
                                 "--case-budget", "1", *COMMON), "ValidationError", "spends no epsilon")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-all",
                                 "--epsilon", "1", "--dp-variant", "paper", "--case-budget", "4",
                                 *COMMON), "ValidationError", "no epsilon-DP claim")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-num",
                                 "--epsilon", "1", "--domain", "weight=abc", *COMMON),
                      "ValidationError", "NAME=LO:HI")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-num",
                                 "--epsilon", "1", "--dp-variant", "loose", *COMMON),
                      "ValidationError", "variant")
    assert snapshot(source) == before


def test_label_remedy_flow_release_verify_evaluate(source, tmp_path):
    # issue 22: --dp-label-confidence / --dp-label-mechanism through the whole flow
    store = ingested(source, "labels")
    assert main(["release", "--store", str(store), "--method", "ppms-dp-all", "--epsilon", "5",
                 "--dp-label-confidence", "0.99", "--dp-label-mechanism", "randomized-response",
                 *COMMON]) == 0
    rows, manifests, ledger = published(store)
    for period, manifest in manifests.items():
        assert manifest["method"]["parameters"]["label_confidence"] == 0.99
        assert manifest["method"]["parameters"]["label_mechanism"] == "randomized-response"
        assert manifest["details"]["label_levels"] == {"age": 1, "sex": 1}
        assert "randomized response" in manifest["method"]["guarantee"]
        assert set(rows[period]["age"].fillna("*")) <= {"Adult", "Nonadult", "*"}
    assert set(ledger["mechanism"]) == {"randomized-response:age", "randomized-response:sex",
                                        "laplace:weight"}
    assert run_cli("verify", "--store", store).returncode == 0
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ndrug = "AVANDIA"\nreaction = "Myocardial infarction"\n'
                     'condition = "age <= 18"\n')
    result = invoke_cli("evaluate", "--store", store, "--rules", rules, "--json")
    assert result.returncode == 0, result.stderr
    releases = json.loads(result.stdout)["releases"]
    assert all(r["attacker"] == "likelihood-weighted" and 0 < r["nil"] for r in releases)


def test_bad_label_options_are_clear_errors(source):
    store = ingested(source, "label-errors")
    before = snapshot(source)
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-all",
                                 "--epsilon", "1", "--dp-label-confidence", "1.5", *COMMON),
                      "ValidationError", "--dp-label-confidence must be a number in (0, 1]")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-num",
                                 "--epsilon", "1", "--dp-label-confidence", "0.9", *COMMON),
                      "ValidationError", "--dp-label-confidence applies to perturbed categorical")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms++",
                                 "--dp-label-mechanism", "randomized-response", *COMMON),
                      "ValidationError", "--dp-label-mechanism applies to methods ppms-dp-num")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-all",
                                 "--epsilon", "1", "--dp-label-mechanism", "rr", *COMMON),
                      "ValidationError", "--dp-label-mechanism must be one of 'exponential'")
    assert_user_error(invoke_cli("release", "--store", store, "--method", "ppms-dp-all",
                                 "--epsilon", "1", "--dp-variant", "paper",
                                 "--dp-label-confidence", "0.9", *COMMON),
                      "ValidationError", "needs the strict variant")
    assert snapshot(source) == before
