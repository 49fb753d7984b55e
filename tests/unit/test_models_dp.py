"""Privacy models as objects: PPMS-DP's checks on crafted series, manifest errors, guarantee text.

Each crafted series starts from one that passes and changes one thing; the model (through the
verify gate, the production path) must catch it, name it, or refuse the input naming the field.
"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from medanon.cli.app import main
from medanon.errors import InputFormatError, ValidationError
from medanon.models import (MSModel, PPMSAlphaModel, PPMSDPModel, PPMSModel, inflated_k,
                            inflated_theta, model_from_manifest, posterior_bounds,
                            term_share_bound)
from medanon.models.names import HA_MODEL, MS_MODEL, PPMS_DP_MODEL, PPMS_MODEL
from medanon.models.theta import ThetaTable
from medanon.verify import verify_series
from tests.unit.test_verify import series, write_folder

def dp_manifest(*, k=2, epsilon="1", theta=1.0, aware=False, variant="strict", exact=None):
    details = {"theta_table": ThetaTable(default=theta).to_manifest(), "perturbed_qids": ["age"],
               "domains": {"age": [0, 100]}, "dp_variant": variant}
    if exact is not None:
        details["exact_groups"] = exact
    return {"method": {"name": "crafted", "privacy_model": PPMS_DP_MODEL,
                       "parameters": {"k": k, "lifespan": None, "epsilon": epsilon,
                                      "variant": variant, "dp_aware_grouping": aware}},
            "details": details,
            "privacy_spent": {"epsilon_per_case": epsilon,
                              "mechanisms": [{"mechanism": "laplace", "target": "age",
                                              "epsilon": float(epsilon), "epsilon_exact": epsilon}]}}


# Per-record noisy ages; sex generalized per group.
Q1 = [("1", "a", "F", "31.2", "x"), ("2", "a", "F", "77.9", "y"),
      ("3", "b", "M", "12.5", "x"), ("4", "b", "M", "50.0", "y")]


def verdict(tables, **kw):
    return verify_series(series(tables, {p: dp_manifest(**kw) for p in tables}))


def test_perturbed_values_never_exclude_a_candidate():
    # Case 1 reappears with a noisy age far from its first one: a covers-based F-attack would
    # drop it from Q1's group a (k = 2 -> 1). Under the mechanism any age is possible.
    q2 = [("1", "m", "F", "93.4", "x"), ("5", "m", "F", "20.0", "y"), ("6", "m", "F", "40", "z")]
    out = verdict({"2020Q1": Q1, "2020Q2": q2})
    assert out.ok, out.violations
    assert "perturbed QIDs age used for no hard exclusion" in out.releases[0].checked
    # The generalized QID still excludes: case 1 published as M later breaks group a.
    q2_sex = [("1", "m", "M", "93.4", "x"), ("5", "m", "M", "20.0", "y"),
              ("6", "m", "M", "40", "z")]
    bad = verdict({"2020Q1": Q1, "2020Q2": q2_sex})
    assert any(v.startswith("2020Q1 group a: only 1 case(s) remain") for v in bad.violations)


def test_combined_bound_is_recorded_and_grows_with_epsilon():
    maxima = []
    for eps in ("0.5", "10", "1000"):
        out = verdict({"2020Q1": Q1}, epsilon=eps)
        bound = out.releases[0].bound
        assert out.ok and bound is not None and bound["enforced"] is False
        assert bound["epsilon_case_max"] == pytest.approx(float(eps))
        maxima.append(bound["max_posterior"])
    # Two candidates per group: e^ε / (e^ε + e^-ε) = 1 / (1 + e^-2ε).
    assert maxima[0] == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert maxima[0] < maxima[1] < maxima[2] <= 1.0


def test_a_case_in_several_linked_releases_spends_the_sum():
    q2 = [("1", "m", "F", "93.4", "x"), ("5", "m", "F", "20.0", "y"), ("6", "m", "F", "40", "z")]
    out = verdict({"2020Q1": Q1, "2020Q2": q2}, epsilon="0.5")
    assert out.releases[0].bound["epsilon_case_max"] == pytest.approx(1.0)   # case 1: Q1 + Q2


def test_dp_aware_grouping_fails_when_the_bound_exceeds_one_over_k():
    out = verdict({"2020Q1": Q1}, epsilon="1", aware=True)
    assert not out.ok
    assert any("combined posterior bound" in v and "> 1/k" in v for v in out.violations)
    # A group of inflated_k(2, 0.1) candidates meets it.
    need = inflated_k(2, 0.1)
    big = [(str(i), "a", "F", str(10 + i), "x" if i % 2 else "y") for i in range(need)]
    ok = verdict({"2020Q1": big}, epsilon="0.1", aware=True, theta=0.8)
    assert ok.ok, ok.violations
    short = verdict({"2020Q1": big[:-1]}, epsilon="0.1", aware=True, theta=0.8)
    assert not short.ok


def test_dp_aware_theta_share_bound_is_checked():
    # 3 of 4 hold x: share bound at ε=0.01 is about 0.75 > theta 0.6.
    group = [("1", "a", "F", "1", "x"), ("2", "a", "F", "2", "x"), ("3", "a", "F", "3", "x"),
             ("4", "a", "F", "4", "y")]
    out = verdict({"2020Q1": group}, epsilon="0.01", aware=True, k=1, theta=0.6)
    assert any("term 'x'" in v and "share bound" in v for v in out.violations)


def test_bound_formulas():
    eps = 0.7
    assert inflated_k(5, 0) == 5 and inflated_k(1, 3.0) == 1
    need = inflated_k(5, eps)
    assert posterior_bounds(np.full(need, eps)).max() <= 1 / 5 + 1e-12
    assert posterior_bounds(np.full(need - 1, eps)).max() > 1 / 5
    t = inflated_theta(0.4, eps)
    n = 1000
    with_s = int(math.floor(t * n))
    assert term_share_bound(np.full(with_s, eps), np.full(n - with_s, eps)) <= 0.4 + 1e-9
    assert term_share_bound(np.full(with_s + 5, eps), np.full(n - with_s - 5, eps)) > 0.4
    assert posterior_bounds(np.array([])).size == 0
    assert posterior_bounds(np.array([3.0]))[0] == 1.0
    with pytest.raises(ValidationError, match="'epsilon' parameter of inflated_k"):
        inflated_k(2, -1)


def test_paper_variant_records_no_bound_and_exact_values_exclude():
    q2 = [("1", "m", "F", "93.4", "x"), ("5", "m", "F", "93.4", "y"),
          ("6", "m", "F", "93.4", "z")]
    # Without exact groups the paper variant's noisy ages exclude no one.
    plain = verdict({"2020Q1": Q1, "2020Q2": q2}, variant="paper")
    assert plain.ok and plain.releases[0].bound is None
    assert "paper variant (not epsilon-DP)" in plain.releases[0].checked
    # Group a of Q1 published exact ages (noise scale below the published precision): then Q2's
    # exact age of case 1 (group m, exact too) contradicts it and the F-attack applies.
    exact_q1 = [("1", "a", "F", "31.2", "x"), ("2", "a", "F", "31.2", "y")] + Q1[2:]
    manifests = {"2020Q1": dp_manifest(variant="paper", exact={"age": ["a"]}),
                 "2020Q2": dp_manifest(variant="paper", exact={"age": ["m"]})}
    out = verify_series(series({"2020Q1": exact_q1, "2020Q2": q2}, manifests))
    assert any(v.startswith("2020Q1 group a: only 1 case(s)") for v in out.violations)


def test_malformed_group_is_refused_naming_the_group():
    # Group b relabels two records without unifying their sex.
    tampered = Q1[:2] + [("3", "b", "M", "12.5", "x"), ("4", "b", "F", "50.0", "y")]
    with pytest.raises(InputFormatError, match="Release 2020Q1 is malformed.*group b publishes "
                                               "sex as 'F', 'M'"):
        verdict({"2020Q1": tampered})


@pytest.mark.parametrize("change, field", [
    (lambda m: m["privacy_spent"].pop("epsilon_per_case"), "privacy_spent.epsilon_per_case"),
    (lambda m: m.pop("privacy_spent"), "privacy_spent"),
    (lambda m: m["privacy_spent"].update(mechanisms=[]), "without its mechanism parameters"),
    (lambda m: m["details"].pop("domains"), "details.domains.age"),
    (lambda m: m["details"].pop("perturbed_qids"), "details.perturbed_qids"),
    (lambda m: m["method"]["parameters"].pop("k"), "method.parameters.k"),
    (lambda m: m["method"].update(privacy_model="k-map"), "unknown privacy model 'k-map' in "
                                                           "'method.privacy_model'"),
])
def test_manifest_errors_name_the_field(change, field):
    m = copy.deepcopy(dp_manifest())
    change(m)
    with pytest.raises(InputFormatError, match=field.replace(".", r"\.").replace("(", r"\(")
                       .replace(")", r"\)")):
        verify_series(series({"2020Q1": Q1}, {"2020Q1": m}))


def test_models_round_trip_and_text_comes_from_parameters():
    theta = ThetaTable(default=0.4, overrides={"Death": 0.1})
    models = [MSModel(k=3, theta=theta), PPMSModel(k=5, theta=theta, lifespan=4),
              PPMSAlphaModel(k=4, theta=theta, alpha=0.5, ss_min_counts={"reactions": 6})]
    for model in models:
        manifest = {"method": {"privacy_model": model.name, "parameters": model.parameters()},
                    "details": {"theta_table": theta.to_manifest(),
                                **({"ss_min_counts": model.ss_min_counts}
                                   if isinstance(model, PPMSAlphaModel) else {})}}
        back = model_from_manifest(manifest, "2020Q1")
        assert type(back) is type(model) and back.parameters() == model.parameters()
        assert back.guarantee == model.guarantee
        assert f"at least {model.k}" in model.guarantee
        declared = model.to_manifest()
        assert declared["name"] == model.name and declared["guarantee"] == model.guarantee
    assert "at most 4 period(s) apart" in models[1].guarantee
    assert "more than 4 period(s) apart" in models[1].does_not_guarantee
    assert "0.5" in models[2].guarantee and "MD" in models[2].guarantee
    dp = model_from_manifest(dp_manifest(epsilon="0.5"), "2020Q1")
    assert isinstance(dp, PPMSDPModel) and dp.perturbations[0].scale == pytest.approx(200.0)
    assert "0.5-DP per release" in dp.guarantee
    assert "can exceed 1/k" in dp.does_not_guarantee
    aware = model_from_manifest(dp_manifest(aware=True), "2020Q1")
    assert "no candidate's posterior exceeds 1/2" in aware.guarantee
    paper = model_from_manifest(dp_manifest(variant="paper"), "2020Q1")
    assert "NOT epsilon-DP" in paper.guarantee
    assert paper.does_not_guarantee.startswith("epsilon-differential privacy")
    assert HA_MODEL and MS_MODEL and PPMS_MODEL  # the names the registry knows


def _write(folder, tables, manifests):
    folder.rmdir()
    write_folder(folder, tables, manifests)


def test_cli_verify_reports_bound_and_refuses_bad_manifests(tmp_path, capsys):
    good = tmp_path / "good"
    good.mkdir()
    _write(good, {"2020Q1": Q1}, {"2020Q1": dp_manifest(epsilon="2")})
    assert main(["verify", str(good), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["releases"][0]["bound"]["max_posterior"] == pytest.approx(1 / (1 + math.exp(-4)))

    aware = tmp_path / "aware"
    aware.mkdir()
    _write(aware, {"2020Q1": Q1}, {"2020Q1": dp_manifest(epsilon="2", aware=True)})
    assert main(["verify", str(aware)]) == 1
    captured = capsys.readouterr()
    assert "combined posterior bound" in captured.out
    assert captured.err.startswith("PrivacyViolation: 1 release(s)")

    for name, change, text in [
        ("no-eps", lambda m: m["privacy_spent"].pop("epsilon_per_case"),
         "InputFormatError: The manifest of 2020Q1 lacks the field 'privacy_spent.epsilon_per_case'"),
        ("unknown", lambda m: m["method"].update(privacy_model="k-map"),
         "InputFormatError: The manifest of 2020Q1 declares an unknown privacy model 'k-map'"),
        ("no-mech", lambda m: m["privacy_spent"].update(mechanisms=[]),
         "InputFormatError: The manifest of 2020Q1 declares the perturbed QID 'age' without its "
         "mechanism parameters"),
    ]:
        folder = tmp_path / name
        folder.mkdir()
        m = copy.deepcopy(dp_manifest())
        change(m)
        _write(folder, {"2020Q1": Q1}, {"2020Q1": m})
        assert main(["verify", str(folder)]) != 0
        err = capsys.readouterr().err
        assert err.startswith(text) and "Traceback" not in err

    tampered = tmp_path / "tampered"
    tampered.mkdir()
    ppms = {"method": {"name": "crafted", "privacy_model": PPMS_MODEL,
                       "parameters": {"k": 2, "lifespan": None}},
            "details": {"theta_table": ThetaTable(default=1.0).to_manifest()}}
    relabelled = [("1", "a", "F", "[30-40]", "x"), ("2", "a", "F", "[30-40]", "y"),
                  ("3", "a", "M", "[30-40]", "x"), ("4", "a", "M", "[30-40]", "y")]
    _write(tampered, {"2020Q1": relabelled}, {"2020Q1": ppms})
    assert main(["verify", str(tampered)]) != 0
    err = capsys.readouterr().err
    assert err.startswith("InputFormatError: Release 2020Q1 is malformed") and "group a" in err
