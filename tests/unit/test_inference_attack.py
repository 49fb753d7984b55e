"""Unit tests for paper 003's Eq. 3 inference attack and MAP (algorithms.md §4.8).

The tests pass the path probabilities and frequencies directly (no graph learning), and likelihoods
as small tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medanon.attacks.inference import inference_attack
from medanon.errors import SchemaError, ValidationError

GRAPH = ["N1", "N2", "N3", "S1", "S2", "S3"]


def released(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["patient", "code", "released"])


def ones(outputs, candidates):
    return np.ones((len(outputs), len(candidates)))


def table_likelihood(table: dict[str, dict[str, float]]):
    def lik(outputs, candidates):
        return np.array([[table[o][c] for c in candidates] for o in outputs])
    return lik


def path(entries: dict[tuple[str, str], float], sensitive: list[str]) -> np.ndarray:
    out = np.zeros((len(GRAPH), len(sensitive)))
    for (src, dst), v in entries.items():
        out[GRAPH.index(src), sensitive.index(dst)] = v
    return out


def test_suppression_with_a_perfect_predictor_gives_map_one():
    sens = ["S1", "S2"]
    pp = path({("N1", "S1"): 1.0, ("N2", "S2"): 1.0}, sens)
    freq = np.full(6, 1 / 6)
    data = released([("p1", "S1", "*"), ("p1", "N1", "N1"),
                     ("p2", "S2", "*"), ("p2", "N2", "N2"), ("p2", "N3", "N3"),
                     ("p3", "S1", "*"), ("p3", "N1", "N1"), ("p3", "N1", "N1"),
                     ("p4", "N3", "N3")])
    res = inference_attack(data, sensitive=sens, likelihood=ones, attacked_outputs=("*",),
                           path_prob=pp, graph_codes=GRAPH, frequency=freq)
    assert res.attacked == 3
    assert res.predictions == {"S1": 2, "S2": 1}
    assert res.correct == {"S1": 2, "S2": 1}
    assert res.precision == {"S1": 1.0, "S2": 1.0}
    assert res.map == 1.0 and res.qualified and res.map_code == "S1"


def test_no_neighbours_fall_back_to_the_frequency_prior():
    sens = ["S1", "S2", "S3"]
    pp = np.zeros((6, 3))
    freq = np.array([0.3, 0.2, 0.1, 0.1, 0.25, 0.05])        # S2 is the most frequent sensitive
    data = released([("p1", "S1", "*"), ("p2", "S2", "*"), ("p3", "S2", "*"), ("p4", "N1", "*"),
                     ("p4", "N2", "N2")])                    # N2 has no path: uninformative
    uniform = table_likelihood({"*": {"S1": 1 / 3, "S2": 1 / 3, "S3": 1 / 3}})
    res = inference_attack(data, sensitive=sens, likelihood=uniform, attacked_outputs=["*"],
                           path_prob=pp, graph_codes=GRAPH, frequency=freq)
    assert res.predictions == {"S1": 0, "S2": 4, "S3": 0}
    assert res.correct["S2"] == 2
    assert res.precision == {"S2": 0.5}                      # N1's suppression: false positive
    assert res.map == 0.5


def test_hand_computed_argmax_with_a_non_uniform_likelihood():
    # Y_P = {S1, S2, S3}; the attacked output is "S1" in both patients.
    sens = ["S3", "S1", "S2"]                                # unsorted on purpose
    lik = table_likelihood({"S1": {"S1": 0.6, "S2": 0.2, "S3": 0.2},
                            "S2": {"S1": 0.2, "S2": 0.6, "S3": 0.2}})
    pp = path({("N1", "S1"): 0.2, ("N1", "S2"): 0.9, ("N2", "S1"): 0.3, ("N2", "S2"): 0.4}, sens)
    freq = np.array([0.5, 0.2, 0.1, 0.1, 0.05, 0.05])
    # p1: prior ∝ 0.5·(0.2, 0.9, 0) → posterior (0.6·0.1, 0.2·0.45, 0) = (0.06, 0.09, 0) → S2
    # p2: prior ∝ 0.2·(0.3, 0.4, 0) → posterior (0.6·0.06, 0.2·0.08, 0) = (0.036, 0.016, 0) → S1
    data = released([("p1", "S1", "S1"), ("p1", "N1", "N1"),
                     ("p2", "S1", "S1"), ("p2", "N2", "N2")])
    res = inference_attack(data, sensitive=sens, likelihood=lik,
                           attacked_outputs={"S1", "S2", "S3"}, path_prob=pp, graph_codes=GRAPH,
                           frequency=freq)
    assert res.predictions == {"S1": 1, "S2": 1, "S3": 0}
    assert res.correct == {"S1": 1, "S2": 0, "S3": 0}
    assert res.precision == {"S1": 1.0, "S2": 0.0}
    assert res.map == 1.0 and res.map_code == "S1"


def test_non_sensitive_inputs_released_in_yp_are_false_positives():
    sens = ["S1", "S2"]
    lik = table_likelihood({"S1": {"S1": 0.7, "S2": 0.3}, "S2": {"S1": 0.3, "S2": 0.7}})
    pp = np.zeros((6, 2))
    freq = np.full(6, 1 / 6)
    # N3 was randomized into Y_P: the attacker takes it for S1 (likelihood dominates)
    data = released([("p1", "S1", "S1"), ("p2", "N3", "S1"), ("p3", "N1", "S1"),
                     ("p4", "S2", "S2")])
    res = inference_attack(data, sensitive=sens, likelihood=lik, attacked_outputs=["S1", "S2"],
                           path_prob=pp, graph_codes=GRAPH, frequency=freq)
    assert res.predictions == {"S1": 3, "S2": 1}
    assert res.correct == {"S1": 1, "S2": 1}
    assert res.precision["S1"] == pytest.approx(1 / 3)
    assert res.map == 1.0 and res.map_code == "S2"
    strict = inference_attack(data, sensitive=sens, likelihood=lik, attacked_outputs=["S1", "S2"],
                              path_prob=pp, graph_codes=GRAPH, frequency=freq, min_predictions=2)
    assert strict.map == pytest.approx(1 / 3) and strict.map_code == "S1"
    nothing = inference_attack(data, sensitive=sens, likelihood=lik, attacked_outputs=["S1", "S2"],
                               path_prob=pp, graph_codes=GRAPH, frequency=freq, min_predictions=5)
    # Too few guesses: the MAP is undefined (None), never 0.0, and the reason says why.
    assert nothing.map is None and not nothing.qualified and nothing.map_code is None
    assert "at least 5 times" in nothing.map_undefined_reason
    assert "'S1', has 3" in nothing.map_undefined_reason
    assert strict.map_undefined_reason is None


def test_ties_go_to_the_first_sorted_code_and_unknown_neighbours_are_ignored():
    sens = ["S2", "S1"]
    pp = path({("N1", "S1"): 0.5, ("N1", "S2"): 0.5}, sens)
    freq = np.zeros(6)                                       # fallback would be uniform
    data = released([("p1", "S2", "*"), ("p1", "N1", "N1"), ("p1", "X9", "X9"),
                     ("p2", "S2", "*"), ("p2", "X9", "X9")])
    res = inference_attack(data, sensitive=sens, likelihood=ones, attacked_outputs=["*"],
                           path_prob=pp, graph_codes=GRAPH, frequency=np.full(6, 1 / 6))
    assert res.predictions == {"S1": 2, "S2": 0}
    res0 = inference_attack(data, sensitive=sens, likelihood=ones, attacked_outputs=["*"],
                            path_prob=pp, graph_codes=GRAPH, frequency=freq)
    assert res0.predictions == {"S1": 2, "S2": 0} and res0.map == 0.0 and res0.qualified


def test_an_impossible_graph_prior_falls_back_to_frequency():
    sens = ["S1", "S2"]
    pp = path({("N1", "S1"): 1.0}, sens)                    # graph says S1 ...
    lik = table_likelihood({"S2": {"S1": 0.0, "S2": 1.0}})  # ... the output says S2 only
    freq = np.full(6, 1 / 6)
    data = released([("p1", "S2", "S2"), ("p1", "N1", "N1")])
    res = inference_attack(data, sensitive=sens, likelihood=lik, attacked_outputs=["S1", "S2"],
                           path_prob=pp, graph_codes=GRAPH, frequency=freq)
    assert res.predictions == {"S1": 0, "S2": 1} and res.map == 1.0


def test_validation():
    sens = ["S1", "S2"]
    good = dict(sensitive=sens, likelihood=ones, attacked_outputs=["*"],
                path_prob=np.zeros((6, 2)), graph_codes=GRAPH, frequency=np.full(6, 1 / 6))
    data = released([("p1", "S1", "*")])
    with pytest.raises(SchemaError):
        inference_attack(data.drop(columns="released"), **good)
    with pytest.raises(ValidationError):
        inference_attack(data, **{**good, "path_prob": np.zeros((6, 3))})
    with pytest.raises(ValidationError):
        inference_attack(data, **{**good, "likelihood": lambda o, c: np.ones((len(o), 1))})
    with pytest.raises(ValidationError):
        inference_attack(data, **{**good, "sensitive": [], "path_prob": np.zeros((6, 0))})
    with pytest.raises(ValidationError):
        inference_attack(data, **{**good, "min_predictions": 0})
    empty = inference_attack(released([("p1", "N1", "N1")]), **good)
    assert empty.attacked == 0 and empty.map is None and not empty.qualified
    assert "no released element is in the attacked output set" in empty.map_undefined_reason


def test_ten_thousand_patients_scale_smoke():
    rng = np.random.default_rng(0)
    n_pat, n_graph, k = 10_000, 300, 45
    graph = [f"g{i:03d}" for i in range(n_graph)]
    sens = graph[:k]
    pp = rng.uniform(0, 0.2, (n_graph, k)) * (rng.uniform(size=(n_graph, k)) < 0.1)
    freq = rng.dirichlet(np.ones(n_graph))
    pats = np.repeat(np.arange(n_pat), 10).astype(str)
    true = rng.choice(graph, len(pats))
    out = np.where(np.isin(true, sens), "*", true)
    data = pd.DataFrame({"patient": pats, "code": true, "released": out})
    res = inference_attack(data, sensitive=sens, likelihood=ones, attacked_outputs=["*"],
                           path_prob=pp, graph_codes=graph, frequency=freq)
    assert res.attacked == int((out == "*").sum())
    assert sum(res.predictions.values()) == res.attacked
    assert 0.0 <= res.map <= 1.0


def test_scoring_on_sensitive_inputs_drops_the_false_positives_of_randomized_non_sensitive_codes():
    """003's reading (issue 31): only the obfuscated *sensitive* elements are scored; the guesses
    themselves do not change."""
    sens = ["S1", "S2"]
    lik = table_likelihood({"S1": {"S1": 0.7, "S2": 0.3}, "S2": {"S1": 0.3, "S2": 0.7}})
    pp = np.zeros((6, 2))
    freq = np.full(6, 1 / 6)
    data = released([("p1", "S1", "S1"), ("p2", "N3", "S1"), ("p3", "N1", "S1"),
                     ("p4", "S2", "S1"), ("p5", "S2", "S2"), ("p6", "N2", "S2")])
    common = dict(sensitive=sens, likelihood=lik, attacked_outputs=["S1", "S2"], path_prob=pp,
                  graph_codes=GRAPH, frequency=freq)
    ours = inference_attack(data, **common)
    assert ours.predictions == {"S1": 4, "S2": 2}
    assert ours.precision == {"S1": pytest.approx(1 / 4), "S2": pytest.approx(1 / 2)}
    assert ours.map == pytest.approx(1 / 2)
    paper = inference_attack(data, scored="sensitive-inputs", **common)
    assert paper.attacked == ours.attacked == 6
    assert paper.predictions == {"S1": 2, "S2": 1}
    assert paper.correct == {"S1": 1, "S2": 1}
    assert paper.precision == {"S1": pytest.approx(1 / 2), "S2": 1.0}
    assert paper.map == 1.0 and paper.map_code == "S2"
    with pytest.raises(ValidationError, match="scored"):
        inference_attack(data, scored="everything", **common)
