"""ClinSimRR's planning (leakage extension, adaptive blocking) and its baselines (paper 003)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from medanon.anonymize.clinsim import (ClinSimRR, SensitiveRR, Suppression, UMaxRR, UMaxRRExtended,
                                       adaptive_blocking, expected_cil, make_method, nearest_blocks)
from medanon.anonymize.dependence import DependenceGraph
from medanon.errors import ValidationError
from medanon.hierarchies.icd9 import ROOT, icd9_tree
from medanon.random import randomness

SENSITIVE = ["042", "291", "303", "304", "305"]


@pytest.fixture(scope="module")
def tree():
    return icd9_tree("category")


def make_events(rows: list[tuple[str, int, str]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["patient", "admission_rank", "code"])
    frame["time"] = np.nan
    return frame


@pytest.fixture(scope="module")
def graph():
    """571 (liver disease) precedes 303 (alcohol dependence) in most patients who have it;
    401/428 are common and unrelated."""
    rows = []
    for p in range(40):
        rows += [(f"a{p}", 0, "571"), (f"a{p}", 1, "303"), (f"a{p}", 1, "401")]
    for p in range(5):
        rows += [(f"b{p}", 0, "571"), (f"b{p}", 1, "428")]
    for p in range(200):
        rows += [(f"c{p}", 0, "401"), (f"c{p}", 1, "428"), (f"c{p}", 2, "250")]
    return DependenceGraph.learn(make_events(rows), delta_t_days=300)


def dist_matrix(tree, codes, alpha=0.5):
    idx = tree.index_of(codes)
    return tree.dissimilarity(idx[:, None], idx[None, :], alpha)


def test_block_size_one_without_extension_is_umaxrr(tree, graph):
    clin = ClinSimRR(epsilon=1, gamma=1.0, b_max=1, max_added=0).plan(graph, SENSITIVE, tree)
    urr = UMaxRR(epsilon=1).plan(graph, SENSITIVE, tree)
    assert clin.protected == urr.protected == tuple(SENSITIVE)
    assert clin.block_size == urr.block_size == 1
    np.testing.assert_allclose(clin.mechanism.probability_matrix(), urr.mechanism.probability_matrix())
    m, e = len(SENSITIVE), math.e
    assert urr.mechanism.p_t == pytest.approx(e / (m + e - 1))


def test_leakage_step_protects_the_predictor(tree, graph):
    plan = ClinSimRR(epsilon=1, gamma=0.01, max_added=0, b_max=1).plan(graph, SENSITIVE, tree)
    assert "571" in plan.added_for_leakage
    assert plan.protected[: len(SENSITIVE)] == tuple(SENSITIVE)
    assert max(plan.leakage.leak_after.values()) <= 0.01


def test_larger_gamma_protects_no_more_elements(tree, graph):
    sizes = [len(ClinSimRR(epsilon=1, gamma=g, max_added=0, b_max=1).plan(graph, SENSITIVE, tree).protected)
             for g in (0.001, 0.01, 0.1, 1.0)]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[-1]


def test_expected_cil_matches_the_probability_matrix(tree):
    codes = ["291", "292", "303", "304", "305", "042", "V08"]
    dist = dist_matrix(tree, codes)
    blocks = nearest_blocks(dist, 3)
    plan = ClinSimRR(epsilon=0.7, gamma=1.0)   # only for its epsilon
    from medanon.mechanisms.block_rr import BlockRandomizedResponse
    mech = BlockRandomizedResponse(epsilon=plan.epsilon, blocks=blocks)
    p = mech.probability_matrix()[:-1]
    np.testing.assert_allclose(expected_cil(dist, blocks, 0.7), (p * dist).sum(axis=1), rtol=1e-12)


def test_nearest_blocks_start_with_their_own_element(tree):
    codes = ["291", "292", "303", "304", "305", "042"]
    blocks = nearest_blocks(dist_matrix(tree, codes), 2)
    assert (blocks[:, 0] == np.arange(len(codes))).all()
    # 303's nearest is within the mental-disorders chapter (290-319), not HIV (042).
    assert codes[blocks[2, 1]] in {"291", "292", "304", "305"}


def test_adaptive_blocking_cost_is_the_objective_and_never_worse_than_urr(tree):
    protected = ["042", "282", "291", "292", "303", "304", "305", "V08"]
    for epsilon in (0.1, 1.0, 5.0):
        found = adaptive_blocking(tree, protected, epsilon=epsilon, alpha=0.5, b_max=16, patience=10,
                                  max_added=50)
        leaves = np.asarray(found["leaves"])
        dist = tree.dissimilarity(leaves[:, None], leaves[None, :], 0.5)
        targets = np.arange(len(protected))
        recomputed = expected_cil(dist, found["blocks"], epsilon, targets).sum()
        assert found["expected_cil"] == pytest.approx(recomputed, rel=1e-10)
        base = expected_cil(dist_matrix(tree, protected), np.arange(len(protected))[:, None], epsilon).sum()
        assert found["expected_cil"] <= base + 1e-12
        assert found["trace"][0]["protected"] == len(protected)


def test_small_epsilon_prefers_larger_blocks(tree):
    protected = ["042", "282", "291", "292", "303", "304", "305", "V08"]
    small = adaptive_blocking(tree, protected, epsilon=0.1, alpha=0.5, b_max=16, patience=10, max_added=50)
    large = adaptive_blocking(tree, protected, epsilon=5.0, alpha=0.5, b_max=16, patience=10, max_added=50)
    assert small["block_size"] >= large["block_size"]
    assert large["block_size"] >= 1


def test_suppression_and_rr_obfuscate_only_sensitive_codes(tree, graph):
    codes = np.array(["303", "401", "042", "428", "303"], dtype=object)
    sup = Suppression().plan(graph, SENSITIVE, tree)
    assert sup.obfuscate(codes).tolist() == [ROOT, "401", ROOT, "428", ROOT]
    assert sup.attacked_outputs == (ROOT,)
    rr = SensitiveRR(epsilon=1).plan(graph, SENSITIVE, tree)
    out = rr.obfuscate(np.repeat(codes, 200), randomness(3))
    kept = np.repeat(codes, 200)
    unprotected = ~np.isin(kept, SENSITIVE)
    assert (out[unprotected] == kept[unprotected]).all()
    assert np.isin(out[~unprotected], SENSITIVE).all()


def test_likelihood_is_the_mechanism_row(tree, graph):
    plan = ClinSimRR(epsilon=1, gamma=1.0, b_max=4, max_added=5).plan(graph, SENSITIVE, tree)
    outputs = np.array(plan.protected[:3], dtype=object)
    lik = plan.likelihood(outputs, ["303", "401"])
    p = plan.mechanism.probability_matrix()
    i303 = plan.protected.index("303")
    for k, y in enumerate(outputs):
        j = plan.protected.index(y)
        assert lik[k, 0] == pytest.approx(p[i303, j])
        assert lik[k, 1] == pytest.approx(p[-1, j])          # 401 is unprotected
    sup = Suppression().plan(graph, SENSITIVE, tree)
    assert sup.likelihood(np.array([ROOT], dtype=object), ["303", "401"]).tolist() == [[1.0, 0.0]]


def test_frequency_estimate_sums_to_one_and_tracks_the_truth(tree, graph):
    plan = UMaxRR(epsilon=3).plan(graph, SENSITIVE, tree)
    rng = np.random.default_rng(0)
    original = rng.choice(np.array(SENSITIVE + ["401", "428"], dtype=object), size=20_000,
                          p=[0.05, 0.05, 0.1, 0.05, 0.05, 0.4, 0.3])
    released = plan.obfuscate(original, randomness(4))
    est = plan.estimate_frequencies(released)
    assert est.sum() == pytest.approx(1.0) and (est >= 0).all()
    assert est["401"] == pytest.approx(0.4, abs=0.05)
    assert est["303"] == pytest.approx(0.1, abs=0.05)


def test_guarantee_statements_differ_by_method(tree, graph):
    texts = {m: make_method(m, epsilon=1).plan(graph, SENSITIVE, tree).guarantee()[0]
             for m in ("clinsimrr", "umaxrr", "umaxrr-yp", "rr", "suppression")}
    for m in ("clinsimrr", "umaxrr", "umaxrr-yp"):
        assert "utility-optimized local differential privacy" in texts[m]
    assert "the sensitive set X_S" in texts["umaxrr"]
    assert "extended by ClinSimRR" in texts["umaxrr-yp"]
    assert "among the 5 sensitive codes" in texts["rr"]
    assert texts["suppression"].startswith("none")


def test_guarantee_text_is_generated_from_the_parameters(tree, graph):
    def texts(**kwargs):
        plan = ClinSimRR(**kwargs).plan(graph, SENSITIVE, tree)
        return plan, " ".join(plan.guarantee()), " ".join(plan.does_not_guarantee())

    plan, good, bad = texts(epsilon="1/2", gamma=0.2, max_path_length=1, b_max=3)
    assert "epsilon = 1/2" in good and "e^1/2" in good
    assert f"Y_P ({len(plan.protected)} codes" in good and f"b = {plan.block_size}" in good
    assert "gamma = 0.2, paths up to L = 1" in good
    # Y_P and the blocks are declared a non-private statistic of the auxiliary patients.
    assert "non-private statistic of the auxiliary patients" in bad
    assert "gamma = 0.2, L = 1" in bad and "b_max = 3" in bad
    assert f"1 - p_S = {1 - plan.mechanism.p_s:.4g}" in bad and "j * 1/2" in bad
    _, good2, bad2 = texts(epsilon=3, gamma=0.1)
    assert "epsilon = 3" in good2 and "epsilon = 1/2" not in good2
    assert "gamma = 0.1" in bad2


def test_umaxrr_on_the_extended_protected_set_is_urr_on_clinsimrr_yp(tree, graph):
    clin = ClinSimRR(epsilon=1, gamma=0.01).plan(graph, SENSITIVE, tree)
    ext = make_method("umaxrr-yp", epsilon=1, gamma=0.01).plan(graph, SENSITIVE, tree)
    assert clin.method == "clinsimrr" and ext.method == "umaxrr-yp"
    assert ext.protected == clin.protected and len(ext.protected) > len(SENSITIVE)
    assert ext.block_size == 1
    m, e = len(ext.protected), math.e
    assert ext.mechanism.p_t == pytest.approx(e / (m + e - 1))   # uRR's c1 on |Y_P| codes
    assert UMaxRRExtended.from_plan(clin).protected == clin.protected
    with pytest.raises(ValidationError, match="full"):
        UMaxRRExtended.from_plan(UMaxRR(epsilon=1).plan(graph, SENSITIVE, tree))


@pytest.mark.parametrize("kwargs,match", [
    ({"epsilon": 0}, "epsilon"), ({"epsilon": 1, "gamma": 0}, "gamma"),
    ({"epsilon": 1, "alpha": 1.5}, "alpha"), ({"epsilon": 1, "b_max": 0}, "b_max"),
])
def test_parameters_are_validated(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        ClinSimRR(**kwargs)


def test_unknown_method_and_empty_sensitive_set(tree, graph):
    with pytest.raises(ValidationError, match="method"):
        make_method("bogus", epsilon=1)
    with pytest.raises(ValidationError, match="sensitive"):
        UMaxRR(epsilon=1).plan(graph, [], tree)


def test_the_docs_show_the_generated_guarantee_text():
    """docs/algorithms/clinsim.md quotes the statements a ClinSimRR release publishes; regenerate
    them for the documented run and compare, so the page cannot drift from the code."""
    from pathlib import Path

    from medanon.pipeline.clinsim import build_release, run_clinsim
    from medanon.data.synth.ehr import synth_ehr
    from medanon.pipeline.ehr import Pseudonyms

    page = (Path(__file__).resolve().parents[2] / "docs" / "algorithms" / "clinsim.md").read_text()
    quoted = page.split("<!-- generated-guarantee:start -->")[1].split("<!-- generated-guarantee:end -->")[0]
    run = run_clinsim(synth_ehr(2000, seed=1), method="clinsimrr", epsilon=1, gamma=0.05,
                      rng=randomness(1))
    _, manifest = build_release(run, identifiers=Pseudonyms.fresh())
    lines = ["guarantee:", *(f"- {g}" for g in manifest["privacy"]["guarantee"]),
             "does_not_guarantee:", *(f"- {g}" for g in manifest["privacy"]["does_not_guarantee"])]
    assert quoted.strip().removeprefix("```").removesuffix("```").strip().splitlines() == lines
