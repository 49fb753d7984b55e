"""Unit tests for the dependence graph and the greedy leakage bound of paper 003 §3.

Formulas: ``algorithms.md`` §4.5–4.6. The hand example below (ΔT = 300 days):

* P1: adm0 (t=0) A, B; adm1 (t=100) C; adm2 (t=350) D, A
  → A→C, B→C (100 days), C→D, C→A (250 days); adm0→adm2 is 350 days: excluded.
* P2: adm0 (t=0) A, A, C; adm1 (t=10) C, B; adm2 (t=20) C
  → A→C (twice: counted once), A→B, C→B, B→C; C→C is a self loop.
* P3: one admission A, D → nothing (same admission is not "after").
* P4: adm0 (t=0) D; adm1 (t=300) B → D→B (exactly ΔT: included).

Patients holding a code: A 3 (P1-P3), B 3 (P1, P2, P4), C 2, D 3.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from medanon.anonymize.dependence import DependenceGraph, bound_leakage
from medanon.errors import SchemaError, ValidationError


def events_from(rows: list[tuple[str, int, float, list[str]]]) -> pd.DataFrame:
    out = []
    for patient, rank, time, codes in rows:
        for pos, code in enumerate(codes):
            out.append({"patient": patient, "admission": f"{patient}-{rank}", "admission_rank": rank,
                        "time": time, "position": pos, "code": code})
    return pd.DataFrame(out)


HAND = [("P1", 0, 0.0, ["A", "B"]), ("P1", 1, 100.0, ["C"]), ("P1", 2, 350.0, ["D", "A"]),
        ("P2", 0, 0.0, ["A", "A", "C"]), ("P2", 1, 10.0, ["C", "B"]), ("P2", 2, 20.0, ["C"]),
        ("P3", 0, 0.0, ["A", "D"]),
        ("P4", 0, 0.0, ["D"]), ("P4", 1, 300.0, ["B"])]

EXPECTED = {("A", "C"): 2 / 3, ("B", "C"): 2 / 3, ("C", "D"): 1 / 2, ("C", "A"): 1 / 2,
            ("A", "B"): 1 / 3, ("C", "B"): 1 / 2, ("D", "B"): 1 / 3}


def dense(graph: DependenceGraph) -> dict[tuple[str, str], float]:
    w = graph.weights.toarray()
    return {(a, b): float(w[i, j]) for i, a in enumerate(graph.codes)
            for j, b in enumerate(graph.codes) if w[i, j] != 0}


def test_hand_example_weights_and_frequency():
    g = DependenceGraph.learn(events_from(HAND), delta_t_days=300.0)
    assert g.codes == ("A", "B", "C", "D")
    assert g.n_patients == 4 and g.delta_t_checked and g.delta_t_days == 300.0
    got = dense(g)
    assert set(got) == set(EXPECTED)
    for pair, value in EXPECTED.items():
        assert got[pair] == pytest.approx(value)
    assert np.all(g.weights.diagonal() == 0)
    # 15 events: A 5, B 3, C 4, D 3
    np.testing.assert_allclose(g.frequency, np.array([5, 3, 4, 3]) / 15)
    assert g.frequency.sum() == pytest.approx(1.0)


def test_row_order_and_chunking_do_not_matter():
    ev = events_from(HAND)
    ref = DependenceGraph.learn(ev)
    shuffled = ev.sample(frac=1.0, random_state=3).reset_index(drop=True)
    for graph in (DependenceGraph.learn(shuffled), DependenceGraph.learn(ev, chunk_pairs=1)):
        assert graph.codes == ref.codes
        np.testing.assert_allclose(graph.weights.toarray(), ref.weights.toarray())


def test_window_excludes_far_pair_and_nan_times_count_every_later_admission():
    ev = events_from(HAND)
    narrow = dense(DependenceGraph.learn(ev, delta_t_days=100.0))
    assert ("C", "D") not in narrow and ("D", "B") not in narrow and ("A", "C") in narrow
    g = DependenceGraph.learn(ev.assign(time=np.nan))
    assert not g.delta_t_checked
    got = dense(g)
    # P1 adm0 -> adm2 now counts: A→D, B→D, B→A (A→A is a self loop)
    extra = {("A", "D"): 1 / 3, ("B", "D"): 1 / 3, ("B", "A"): 1 / 3}
    assert set(got) == set(EXPECTED) | set(extra)
    for pair, value in {**EXPECTED, **extra}.items():
        assert got[pair] == pytest.approx(value)
    # without a time column: same as NaN times; an infinite window counts everything too
    assert dense(DependenceGraph.learn(ev.drop(columns="time"))) == got
    assert dense(DependenceGraph.learn(ev, delta_t_days=float("inf"))) == got


@pytest.mark.parametrize("monotone", [True, False])
def test_learn_matches_a_merge_reference_on_random_data(monotone):
    # The reference: a plain self-merge on patient (later rank, time gap <= ΔT, no self loop),
    # one count per patient and pair. Non-monotone times (bad data) follow the same rule.
    rng = np.random.default_rng(7 if monotone else 8)
    rows = []
    for p in range(40):
        t = 0.0
        for rank in range(int(rng.integers(1, 6))):
            step = float(rng.choice([0.0, 50.0, 150.0, 200.0, 400.0]))
            t = t + step if monotone else float(rng.choice([0.0, 100.0, 300.0]))
            rows.append((f"p{p}", rank, t, list(rng.choice(list("abcdefg"), rng.integers(1, 5)))))
    ev = events_from(rows)
    g = DependenceGraph.learn(ev, delta_t_days=200.0, chunk_pairs=7)
    x = ev[["patient", "admission_rank", "time", "code"]]
    m = x.merge(x, on="patient", suffixes=("_a", "_b"))
    m = m[(m.admission_rank_b > m.admission_rank_a) & (m.time_b - m.time_a <= 200.0)
          & (m.code_a != m.code_b)]
    num = m.drop_duplicates(["patient", "code_a", "code_b"]).groupby(["code_a", "code_b"]).size()
    holders = x.drop_duplicates(["patient", "code"]).groupby("code").size()
    ref = {(a, b): n / holders[a] for (a, b), n in num.items()}
    got = dense(g)
    assert set(got) == set(ref)
    for pair, value in ref.items():
        assert got[pair] == pytest.approx(value)


def test_learn_validation():
    ev = events_from(HAND)
    with pytest.raises(SchemaError):
        DependenceGraph.learn(ev.drop(columns="code"))
    with pytest.raises(ValidationError):
        DependenceGraph.learn(ev.iloc[:0])
    with pytest.raises(ValidationError):
        DependenceGraph.learn(ev, delta_t_days=-1.0)
    partial = ev.copy()
    partial.loc[0, "time"] = np.nan
    with pytest.raises(ValidationError):
        DependenceGraph.learn(partial)


def graph_from(codes: list[str], w: np.ndarray, freq: np.ndarray | None = None) -> DependenceGraph:
    freq = np.full(len(codes), 1.0 / len(codes)) if freq is None else np.asarray(freq, float)
    return DependenceGraph(codes=tuple(codes), weights=sparse.csr_matrix(w), frequency=freq,
                           delta_t_days=300.0, delta_t_checked=True, n_patients=1)


def random_graph(seed: int, n: int = 12, density: float = 0.3) -> DependenceGraph:
    rng = np.random.default_rng(seed)
    w = rng.uniform(0, 0.9, (n, n)) * (rng.uniform(size=(n, n)) < density)
    np.fill_diagonal(w, 0.0)
    freq = rng.dirichlet(np.ones(n))
    return graph_from([f"c{i:02d}" for i in range(n)], w, freq)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_path_probability_matches_dense_powers(seed):
    g = random_graph(seed, density=0.5)
    w = g.weights.toarray()
    targets = ["c03", "zz", "c00", "c07"]
    for length in (1, 2, 3, 4):
        got = g.path_probability(targets, max_length=length)
        ref = sum(np.linalg.matrix_power(w, k) for k in range(1, length + 1))
        ref = np.minimum(ref, 1.0)
        assert got.shape == (12, 4)
        np.testing.assert_allclose(got[:, 0], ref[:, 3])
        np.testing.assert_allclose(got[:, 2], ref[:, 0])
        np.testing.assert_allclose(got[:, 3], ref[:, 7])
        assert np.all(got[:, 1] == 0)          # absent target: zero column
    assert (g.path_probability(["c01"], max_length=6) <= 1.0).all()


def test_path_probability_equals_path_enumeration_for_length_two():
    w = np.array([[0.0, 0.5, 0.2, 0.0],
                  [0.0, 0.0, 0.4, 0.3],
                  [0.1, 0.0, 0.0, 0.6],
                  [0.0, 0.2, 0.0, 0.0]])
    g = graph_from(["a", "b", "c", "d"], w)
    got = g.path_probability(["c", "d"], max_length=2)
    for col, t in enumerate([2, 3]):
        for s in range(4):
            # every walk s → ... → t with 1 or 2 edges (edges of weight 0 add nothing)
            walks = [w[s, t]] + [w[s, m] * w[m, t] for (m,) in itertools.product(range(4))]
            assert got[s, col] == pytest.approx(min(1.0, sum(walks)))
    # a -> c directly (0.2) and via b (0.5*0.4) → 0.4; b -> d: 0.3 + 0.4*0.6 = 0.54
    assert got[0, 0] == pytest.approx(0.4)
    assert got[1, 1] == pytest.approx(0.54)


def small_leak_graph() -> DependenceGraph:
    # Leak(S1) = 0.2*(0.9+0.5) = 0.28, Leak(S2) = 0.2*(0.5+0.2) = 0.14 with L = 1
    codes = ["N1", "N2", "N3", "S1", "S2"]
    w = np.zeros((5, 5))
    w[0, 3], w[1, 3], w[1, 4], w[2, 4] = 0.9, 0.5, 0.5, 0.2
    return graph_from(codes, w)


def test_bound_leakage_hand_example_and_violating_refinement():
    g = small_leak_graph()
    lb = bound_leakage(g, ["S1", "S2"], gamma=0.2, max_length=1)
    assert lb.leak_before == pytest.approx({"S1": 0.28, "S2": 0.14})
    # only S1 violates: N1 (0.18 toward S1) beats N2 (0.10 toward S1). Summing over all of X_S,
    # as the text does, would pick N2 (0.20) first.
    assert lb.added == ("N1",)
    assert lb.protected == ("S1", "S2", "N1")
    assert lb.leak_after == pytest.approx({"S1": 0.10, "S2": 0.14})
    tight = bound_leakage(g, ["S1", "S2"], gamma=0.05, max_length=1)
    assert tight.added == ("N2", "N1")               # both violate: N2 (0.20) first
    assert set(lb.added) <= set(tight.added)
    assert all(v <= 0.05 for v in tight.leak_after.values())
    none = bound_leakage(g, ["S1", "S2"], gamma=0.28, max_length=1)
    assert none.added == () and none.leak_after == none.leak_before


def test_bound_leakage_ties_break_by_code_and_absent_targets_leak_nothing():
    w = np.zeros((3, 3))
    w[0, 2] = w[1, 2] = 0.5                           # Na → S and Nb → S, equally
    g = graph_from(["Na", "Nb", "S"], w)              # Leak(S) = 2 · 0.5/3 = 1/3
    lb = bound_leakage(g, ["S", "absent"], gamma=0.2, max_length=1)
    assert lb.added == ("Na",)
    assert lb.leak_after["S"] == pytest.approx(1 / 6)
    assert lb.leak_before["absent"] == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_bound_leakage_on_random_graphs(seed):
    g = random_graph(seed, n=30, density=0.2)
    sensitive = ["c03", "c11", "c20", "c29"]
    sizes = []
    for gamma in (0.002, 0.01, 0.03, 0.08, 1.0):
        lb = bound_leakage(g, sensitive, gamma=gamma)
        assert all(v <= gamma + 1e-12 for v in lb.leak_after.values())
        assert lb.protected[:4] == tuple(sensitive)
        assert not set(lb.added) & set(sensitive)
        if gamma >= max(lb.leak_before.values()):
            assert lb.added == ()
        sizes.append(len(lb.added))
    # Larger γ protects no more elements here. Not a theorem of the greedy: a smaller γ can make
    # more targets violate at once and favour one element that serves them all, so rare random
    # graphs give a larger γ one more addition; these seeds check the usual behaviour.
    assert sizes == sorted(sizes, reverse=True)


def test_graph_constructor_validation():
    with pytest.raises(ValidationError):
        graph_from(["b", "a"], np.zeros((2, 2)))
    with pytest.raises(ValidationError):
        graph_from(["a", "b"], np.zeros((3, 3)))


def test_bound_leakage_validation():
    g = small_leak_graph()
    for bad in (0, -0.1, float("nan"), True, "0.1"):
        with pytest.raises(ValidationError):
            bound_leakage(g, ["S1"], gamma=bad)
    with pytest.raises(ValidationError):
        bound_leakage(g, ["S1"], gamma=0.1, max_length=0)
