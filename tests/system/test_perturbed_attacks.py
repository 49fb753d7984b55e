"""Issue 17's done-when, end to end: sound attacks on perturbed QIDs (PPMS-DP_all strict).

On 3 quarters x 200 synthetic cases released at ε = 0.5, 10 and 1000 per QID:

* the likelihood-weighted attacker's DIR and RR rise with ε, and the combined bound that verify
  records changes with it;
* no candidate is excluded on a perturbed value: the own record of every follow-up target stays
  among the remaining candidates of ``attack --target``;
* ``attack`` and ``verify`` agree on every number they both print.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from medanon.attacks import attack_target
from medanon.attacks.likelihood import LikelihoodAttacker
from medanon.cli.app import main
from medanon.data.synth.faers import write_faers_series
from medanon.published.series import load_series
from medanon.report.collect import store_originals
from medanon.store import ReleaseStore
from tests.conftest import invoke_cli

EPSILONS = ("0.5", "10", "1000")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("perturbed")
    write_faers_series(folder / "in", periods=3, cases=200, seed=11)
    out = {}
    for eps in EPSILONS:
        store = folder / f"dp-all-{eps}.duckdb"
        assert main(["ingest", str(folder / "in"), "--store", str(store)]) == 0
        assert main(["release", "--store", str(store), "--method", "ppms-dp-all", "--epsilon", eps,
                     "--k", "5", "--theta", "0.4", "--on-infeasible", "raise-theta", "--seed", "7",
                     # θ 0.4 withholds 11% of a quarter here; these tests attack what is published
                     "--max-withheld", "0.5", "--allow-seeded"]) == 0
        out[eps] = store
    return out


def _json(*args):
    # in-process: the attack, verify and evaluate commands' own end-to-end (subprocess) runs
    # are in test_attack_verify_evaluate.py
    done = invoke_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_posterior_dir_and_rr_rise_with_epsilon_and_so_does_the_recorded_bound(stores):
    attacked = {e: _json("attack", "--store", s)["releases"] for e, s in stores.items()}
    evaluated = {e: _json("evaluate", "--store", s)["releases"] for e, s in stores.items()}
    verified = {e: _json("verify", "--store", s)["releases"] for e, s in stores.items()}
    for e in EPSILONS:
        assert {r["attacker"] for r in attacked[e]} == {"likelihood-weighted"}
        assert {r["attacker"] for r in evaluated[e]} == {"likelihood-weighted"}
        for r in evaluated[e]:  # evaluate's DIR is attack's
            worst = next(a for a in attacked[e] if a["period"] == r["period"])
            assert (r["dir"], r["dir_hard"]) == (worst["dir_posterior"], worst["dir_hard"])
    mean_dir = [np.mean([r["dir_posterior"] for r in attacked[e]]) for e in EPSILONS]
    assert mean_dir[0] <= mean_dir[1] <= mean_dir[2] and mean_dir[0] < mean_dir[2]
    assert mean_dir[2] == 1.0  # at ε = 1000 every group has a candidate above 1/k
    for i in range(3):  # per release: RR strictly rises, the hard RR does not move with ε
        rr = [evaluated[e][i]["rr"] for e in EPSILONS]
        assert rr[0] < rr[1] < rr[2], rr
        assert rr[2] > 0.5 and evaluated["1000"][i]["reidentified"] > 0.5 * evaluated["1000"][i][
            "cases"]
        hard = [evaluated[e][i]["rr_hard"] for e in EPSILONS]
        assert max(hard) < 0.05 and hard[0] < rr[2]
        bounds = [verified[e][i]["bound"]["max_posterior"] for e in EPSILONS]
        assert bounds[0] < bounds[2] == pytest.approx(1.0)
        eps_max = [verified[e][i]["bound"]["epsilon_case_max"] for e in EPSILONS]
        assert eps_max[0] < eps_max[1] < eps_max[2]
        assert all(verified[e][i]["verdict"] == "passed" for e in EPSILONS)  # hard k, θ hold


def test_attack_and_verify_agree_on_every_number_they_both_print(stores):
    for store in stores.values():
        attacked = _json("attack", "--store", store)["releases"]
        verified = _json("verify", "--store", store)["releases"]
        assert [a["period"] for a in attacked] == [v["period"] for v in verified]
        for a, v in zip(attacked, verified):
            assert a["dir_hard"] == v["dir"] and a["dsr_hard"] == v["dsr"]
            assert a["ssgr"] == v["ssgr"] and a["attacks"] == v["attacks"] == "B/F/L"
            assert a["k"] == 5 and a["groups"] > 0


def test_no_target_loses_its_own_record_to_a_perturbed_value(stores):
    for eps in ("0.5", "1000"):
        with ReleaseStore.open(stores[eps]) as db:
            series = load_series(store=db)
            originals, _ = store_originals(db, series.periods)
        attacker = LikelihoodAttacker(series)
        followups = top = 0
        for i, label in enumerate(series.periods[1:], 1):
            earlier = set().union(*(set(series.releases[p]["case_id"].astype(str))
                                    for p in series.periods[:i]))
            frame = originals[label].set_index(originals[label]["case_id"].astype(str))
            for case in series.releases[label]["case_id"].astype(str):
                if case not in earlier:
                    continue
                row = frame.loc[case]
                known = {q.name: str(getattr(row[q.name], "left", row[q.name]))
                         for q in series.qids if not _missing(row[q.name])}
                out = attack_target(series, label, known, attacker=attacker)
                followups += 1
                assert case in out.candidates and case in out.remaining
                assert not any(out.excluded.values())  # nothing is excluded for sure here
                # found: the case holds the highest posterior (a tie with another candidate at
                # the top counts too: which of the tied rows comes first is the row order, which
                # followed receipt order, old cases first, before issue 41 shuffled it)
                share = {c: pi for c, _, pi in out.posterior}[case]
                top += share >= out.max_posterior * (1 - 1e-9)
        assert followups >= 20
        if eps == "1000":  # two noisy readings of the same values: the attacker finds them
            # (most of them: 41 of 54 follow-ups at the top, ties included, in the realization
            # since issue 41 shuffles the cases before grouping; 0.8 was read off the earlier
            # one, whose row order put old cases first among tied rows)
            assert top >= 0.7 * followups
    # and through the CLI, with a label holding a comma
    with ReleaseStore.open(stores["10"]) as db:
        first = db.release_rows("2020Q1")
        second = db.release_rows("2020Q2")
    case = sorted(set(first["case_id"]) & set(second["case_id"]))[0]
    out = _json("attack", "--store", stores["10"], "--period", "2020Q2", "--target",
                "age=Aged, 80 and over,sex=F,weight=70")
    assert out["attacker"] == "likelihood-weighted" and out["excluded"]["impossible"] == []
    assert len(out["posterior"]) == len(out["remaining"]) == len(second)
    assert case in out["remaining"]
    assert sum(p["posterior"] for p in out["posterior"]) == pytest.approx(1.0, abs=1e-4)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def test_the_attackers_posterior_never_exceeds_the_bound_verify_records(stores):
    # Two independent computations: the attack's actual posterior (likelihood ratios of the
    # published values) and the model's combined bound (from ε alone), over the same hard
    # candidates. ε-DP keeps every likelihood ratio within e^{±ε_r}, so the first is below the
    # second in every release; at ε = 1000 both reach 1.
    for eps, store in stores.items():
        attacked = _json("attack", "--store", store, "--all-groups")["releases"]
        verified = _json("verify", "--store", store)["releases"]
        for a, v in zip(attacked, verified):
            worst = max(g["max_posterior"] for g in a["group_details"])
            assert worst <= v["bound"]["max_posterior"] + 1e-9, (eps, a["period"])
            if eps == "1000":
                assert worst > 0.99


def test_dp_aware_grouping_keeps_the_likelihood_attacker_within_1_over_k(tmp_path):
    write_faers_series(tmp_path / "in", periods=3, cases=200, seed=11)
    plain, aware = tmp_path / "plain.duckdb", tmp_path / "aware.duckdb"
    common = ["--method", "ppms-dp-num", "--epsilon", "0.5", "--k", "5", "--theta", "0.4",
              "--on-infeasible", "raise-theta", "--max-withheld", "0.5", "--case-budget", "1",
              "--on-case-budget", "suppress", "--seed", "7", "--allow-seeded"]
    for store, extra in ((plain, []), (aware, ["--dp-aware-grouping"])):
        assert main(["ingest", str(tmp_path / "in"), "--store", str(store)]) == 0
        assert main(["release", "--store", str(store), *common, *extra]) == 0
    with ReleaseStore.open(aware) as db:
        manifest = db.manifest("2020Q2")
    assert manifest["method"]["parameters"]["dp_aware_grouping"] is True
    # designed for the case budget (1): k' = 1 + 4e^2 = 30.6 -> 31 new cases per group
    assert manifest["details"]["dp_aware_grouping"] == {"epsilon_per_case": "1", "k_grouping": 31}
    verified = _json("verify", "--store", aware)["releases"]
    attacked = _json("attack", "--store", aware, "--all-groups")["releases"]
    evaluated = _json("evaluate", "--store", aware)["releases"]
    for v, a, e in zip(verified, attacked, evaluated):
        assert v["verdict"] == "passed" and v["bound"]["enforced"] is True
        assert v["bound"]["max_posterior"] <= 0.2 + 1e-12
        assert a["dir_posterior"] == 0.0 and a["dsr_posterior"] == 0.0
        assert all(g["remaining"] >= 31 for g in a["group_details"])
        assert e["nil"] > 0
    # without it the same attacker finds groups above 1/k, and the information loss is lower
    attacked_plain = _json("attack", "--store", plain)["releases"]
    evaluated_plain = _json("evaluate", "--store", plain)["releases"]
    assert max(r["dir_posterior"] for r in attacked_plain) > 0
    assert np.mean([r["nil"] for r in evaluated_plain]) < np.mean([r["nil"] for r in evaluated])


def test_dp_aware_grouping_errors_are_clear_and_publish_nothing(tmp_path):
    from tests.conftest import assert_user_error

    write_faers_series(tmp_path / "in", periods=1, cases=120, seed=2)
    store = tmp_path / "s.duckdb"
    assert main(["ingest", str(tmp_path / "in"), "--store", str(store)]) == 0
    base = ["release", "--store", store, "--k", "5", "--theta", "0.4", "--seed", "1",
            "--allow-seeded", "--on-infeasible", "raise-theta"]
    assert_user_error(invoke_cli(*base, "--method", "ppms++", "--dp-aware-grouping"),
                      "ValidationError", "--dp-aware-grouping applies to methods ppms-dp-num")
    assert_user_error(invoke_cli(*base, "--method", "ppms-dp-num", "--epsilon", "1",
                                 "--dp-variant", "paper", "--dp-aware-grouping"),
                      "ValidationError", "--dp-aware-grouping needs --dp-variant 'strict'")
    # ε = 2 per case: k' = 1 + 4e^4 = 220 new cases per group, more than the quarter holds
    assert_user_error(invoke_cli(*base, "--method", "ppms-dp-num", "--epsilon", "2",
                                 "--dp-aware-grouping"),
                      "InfeasibleError", "fewer than k = 220 (dp-aware grouping: k = 5")
    with ReleaseStore.open(store) as db:
        assert db.published_periods() == []
