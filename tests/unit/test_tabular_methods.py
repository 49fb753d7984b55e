"""The full-domain methods of paper 004 (IPA, optimal k-anonymity, DP histogram) on small tables.

Each algorithmic claim is checked against an independent, brute-force computation with pandas:
roll-up counts against a direct group-by, the k-anonymity optimum against every lattice node, the
reported information loss against :func:`release_information_loss` (computed from the published
table alone), and the query answers against hand-computed values.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from medanon.anonymize.dphist import DPHistogram, default_histogram_node, require_public_domain
from medanon.anonymize.ipa import (DEFAULT_BUDGET_SPLIT, IPA, RECORDS_SHARE, STEPS,
                                  parse_budget_split)
from medanon.anonymize.kanon import FullDomainKAnonymity
from medanon.anonymize.lattice import Lattice, RollUp, record_classes
from medanon.data.synth import synth_patient_schema_toml, synth_patient_table
from medanon.data.tabular import TableSchema, TabularData, load_table
from medanon.errors import InfeasibleError, SchemaError, ValidationError
from medanon.random import randomness
from medanon.metrics.tabular import evaluate_queries, release_information_loss


SMALL_TOML = """
[table]
name = "small"
informative = "dx"
informative_domain = ["A", "B", "C", "D", "E"]

[[table.dimension]]
name = "age"
kind = "numeric"
domain = [0, 29]
levels = [{ width = 5 }, { cuts = [0, 15] }]

[[table.dimension]]
name = "sex"
kind = "categorical"
values = ["F", "M"]

[[table.dimension]]
name = "region"
kind = "categorical"
hierarchy = [["a", "North"], ["b", "North"], ["c", "North"], ["d", "South"], ["e", "South"],
             ["f", "East"]]
"""
SMALL_SCHEMA = TableSchema.from_toml_text(SMALL_TOML)
SYNTH_SCHEMA = TableSchema.from_toml_text(synth_patient_schema_toml())


def small_data(n: int, seed: int) -> TabularData:
    """A random table over 3 dimensions (lattice 4 x 2 x 3 = 24 nodes) with skewed values."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(0, 30, n),
        "sex": rng.choice(["F", "M"], n, p=[0.6, 0.4]),
        "region": rng.choice(list("abcdef"), n, p=[0.3, 0.2, 0.1, 0.2, 0.15, 0.05]),
        "dx": rng.choice(list("ABCDE"), n, p=[0.4, 0.3, 0.15, 0.1, 0.05])})
    return load_table(frame, SMALL_SCHEMA)


def synth_data(n: int, seed: int) -> TabularData:
    return load_table(synth_patient_table(n, seed=seed), SYNTH_SCHEMA)


def recompute_loss(table: pd.DataFrame, is_counterfeit: np.ndarray, data: TabularData) -> dict:
    """:func:`release_information_loss`, tolerating its pandas-3 deprecation warning (see below)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The 'lsuffix' and 'rsuffix' keywords",
                                category=DeprecationWarning)
        return release_information_loss(table, is_counterfeit, data)


def test_release_information_loss_emits_no_deprecation_warning():
    data = small_data(100, 0)
    result = FullDomainKAnonymity(k=2).anonymize(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = release_information_loss(result.table, result.is_counterfeit, data)
    assert out["information_loss"] == pytest.approx(result.loss.total)


def all_nodes(data: TabularData) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(h.top + 1) for h in data.hierarchies)))


def generalized_codes(data: TabularData, node) -> pd.DataFrame:
    return pd.DataFrame({f"d{j}": h.up(0, level)[data.codes[:, j]]
                         for j, (h, level) in enumerate(zip(data.hierarchies, node))})


def generalized_labels(data: TabularData, node) -> pd.DataFrame:
    """Every record's dimension labels at ``node`` (no suppression), by direct lookup."""
    return pd.DataFrame({h.name: np.asarray(h.labels[level], dtype=object)[h.maps[level][data.codes[:, j]]]
                         for j, (h, level) in enumerate(zip(data.hierarchies, node))})


def record_ncp(data: TabularData, node) -> np.ndarray:
    """Mean NCP over the dimensions of each record generalized to ``node``."""
    total = np.zeros(len(data))
    for j, (h, level) in enumerate(zip(data.hierarchies, node)):
        total += h.ncp[level][h.maps[level][data.codes[:, j]]]
    return total / len(data.hierarchies)


# -- RollUp ------------------------------------------------------------------------------------

def expected_counts(data: TabularData, node, with_informative: bool) -> np.ndarray:
    frame = generalized_codes(data, node)
    if with_informative:
        frame["inf"] = data.informative
    counts = frame.groupby(list(frame.columns)).size().reset_index(name="count")
    return counts.to_numpy(dtype=np.int64)          # groupby sorts the keys lexicographically


def table_array(table) -> np.ndarray:
    columns = list(table.codes)
    if table.informative is not None:
        columns.append(table.informative)
    columns.append(table.count)
    return np.column_stack([np.asarray(c, dtype=np.int64) for c in columns])


@pytest.mark.parametrize("with_informative", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_rollup_equals_direct_groupby(seed, with_informative):
    data = small_data(400, seed)
    rng = np.random.default_rng(100 + seed)
    nodes = all_nodes(data)
    order = [nodes[i] for i in rng.permutation(len(nodes))]
    rollup = RollUp(data, with_informative=with_informative)
    for node in order:
        table = rollup.table(node)
        assert table.node == node
        assert (table.informative is not None) == with_informative
        np.testing.assert_array_equal(table_array(table), expected_counts(data, node, with_informative))
        assert table.count.sum() == len(data)
    assert rollup.tables_built == len(nodes) - 1          # the bottom node is the base table


@pytest.mark.parametrize("seed", [2, 3])
def test_rollup_does_not_depend_on_request_order_or_cache(seed):
    data = synth_data(600, seed)
    nodes = Lattice(data.top_node).nodes
    rng = np.random.default_rng(seed)
    picked = [nodes[i] for i in rng.choice(len(nodes), 40, replace=False)]
    cached = RollUp(data, with_informative=True)
    uncached = RollUp(data, with_informative=True, cache_rows=0)
    forward = {node: table_array(cached.table(node)) for node in picked}
    backward = {node: table_array(uncached.table(node)) for node in reversed(picked)}
    shuffled = RollUp(data, with_informative=True)
    for node in [picked[i] for i in rng.permutation(len(picked))]:
        np.testing.assert_array_equal(table_array(shuffled.table(node)), forward[node])
    for node in picked:
        np.testing.assert_array_equal(forward[node], backward[node])
    for node in picked[:8]:
        np.testing.assert_array_equal(forward[node], expected_counts(data, node, True))


def test_group_table_classes_match_record_classes():
    data = small_data(300, 4)
    rollup = RollUp(data, with_informative=True)
    for node in all_nodes(data):
        table = rollup.table(node)
        class_of_row, first = table.classes()
        sizes = np.bincount(class_of_row, weights=table.count).astype(np.int64)
        codes, ec_of_record, counts = record_classes(data, node)
        np.testing.assert_array_equal(sizes, counts)
        for c_table, c_records in zip(table.codes, codes):
            np.testing.assert_array_equal(c_table[first], c_records)
        # each record's class has its generalized codes
        gen = generalized_codes(data, node).to_numpy()
        np.testing.assert_array_equal(np.column_stack(codes)[ec_of_record], gen)


# -- Lattice -----------------------------------------------------------------------------------

def test_lattice_nodes_predecessors_successors():
    lattice = Lattice((3, 1, 2))
    assert len(lattice) == 4 * 2 * 3
    assert len(set(lattice.nodes)) == len(lattice)
    assert set(lattice.nodes) == set(itertools.product(range(4), range(2), range(3)))
    assert lattice.nodes[0] == (0, 0, 0) and lattice.nodes[-1] == (3, 1, 2)
    assert [sum(n) for n in lattice.nodes] == sorted(sum(n) for n in lattice.nodes)
    assert lattice.predecessors((1, 0, 2)) == [(0, 0, 2), (1, 0, 1)]
    assert lattice.successors((1, 0, 2)) == [(2, 0, 2), (1, 1, 2)]
    assert lattice.predecessors((0, 0, 0)) == [] and lattice.successors((3, 1, 2)) == []
    for node in lattice.nodes:
        for p in lattice.predecessors(node):
            assert node in lattice.successors(p)
            assert sum(p) == sum(node) - 1
        for s in lattice.successors(node):
            assert node in lattice.predecessors(s)
    assert len(Lattice((3, 1, 3, 1, 3))) == 256      # the paper's lattice


# -- FullDomainKAnonymity ----------------------------------------------------------------------

def brute_force_kanon(data: TabularData, k: int, max_suppression: float) -> dict:
    """Loss of every k-anonymous node: NCP of kept records, 1 per suppressed record."""
    n = len(data)
    limit = math.floor(Fraction(str(max_suppression)) * n)
    losses = {}
    for node in all_nodes(data):
        gen = generalized_codes(data, node)
        size = gen.groupby(list(gen.columns))["d0"].transform("size").to_numpy()
        small = size < k
        if small.sum() > limit:
            continue
        ncp = record_ncp(data, node)
        losses[node] = (ncp[~small].sum() + small.sum()) / n
    return losses


def star_rows(table: pd.DataFrame, dims) -> np.ndarray:
    return (table[list(dims)] == "*").all(axis=1).to_numpy()


@pytest.mark.parametrize("max_suppression", [0.0, 0.05])
@pytest.mark.parametrize("k", [2, 5, 10])
@pytest.mark.parametrize("seed", [0, 1])
def test_kanon_is_optimal_against_brute_force(seed, k, max_suppression):
    data = small_data(300, seed)
    dims = [h.name for h in data.hierarchies]
    losses = brute_force_kanon(data, k, max_suppression)
    assert losses, "some node must be k-anonymous (the top one is)"
    best = min(losses.values())
    result = FullDomainKAnonymity(k=k, max_suppression=max_suppression).anonymize(data)
    assert result.node in losses                        # the chosen node is k-anonymous
    assert losses[result.node] == pytest.approx(best, abs=1e-12)
    assert result.loss.ncp == pytest.approx(best, abs=1e-12)
    assert result.loss.emd == 0.0 and result.loss.rate == 0.0 and result.loss.total == result.loss.ncp
    table = result.table
    assert len(table) == len(data) and result.counterfeit == 0 and not result.is_counterfeit.any()
    star = star_rows(table, dims)
    assert result.suppressed == int(star.sum())
    assert result.suppressed <= math.floor(Fraction(str(max_suppression)) * len(data))
    if max_suppression == 0:
        assert result.suppressed == 0
    kept = table.loc[~star]
    assert (kept.groupby("group").size() >= k).all()
    assert (kept.groupby(dims).size() >= k).all()
    # the released rows are the records generalized to the node (or '*')
    assert Counter(table["dx"]) == Counter(data.frame["dx"])
    expected = generalized_labels(data, result.node)
    expected_kept = expected.groupby(dims).size()
    expected_kept = expected_kept[expected_kept >= k]
    np.testing.assert_array_equal(kept.groupby(dims).size().sort_index().to_numpy(),
                                  expected_kept.sort_index().to_numpy())
    assert recompute_loss(table, result.is_counterfeit, data)["information_loss"] == \
        pytest.approx(result.loss.total)


def test_kanon_on_synthetic_table_matches_brute_force():
    data = synth_data(500, 9)
    losses = brute_force_kanon(data, 5, 0.02)
    result = FullDomainKAnonymity(k=5, max_suppression=0.02).anonymize(data)
    assert result.loss.total == pytest.approx(min(losses.values()), abs=1e-12)


def test_kanon_infeasible_and_validation():
    data = small_data(4, 0)
    with pytest.raises(InfeasibleError, match="No node of the lattice is 5-anonymous"):
        FullDomainKAnonymity(k=5).anonymize(data)
    with pytest.raises(InfeasibleError):
        FullDomainKAnonymity(k=5, max_suppression=0.5).anonymize(data)   # 2 of 4 may go, not 4
    assert FullDomainKAnonymity(k=4).anonymize(data).node == data.top_node
    for bad in ({"k": 1}, {"k": 0}, {"k": 2.5}, {"k": True}, {"max_suppression": 1.0},
                {"max_suppression": -0.1}, {"max_suppression": float("nan")},
                {"max_suppression": "0.1"}):
        with pytest.raises(ValidationError):
            FullDomainKAnonymity(**bad)


# -- IPA ---------------------------------------------------------------------------------------

IPA_CASES = [(kind, n, seed, selection) for kind, n, seed in
             [("small", 300, 2), ("small", 300, 4), ("small", 1000, 3), ("synth", 1500, 11)]
             for selection in ("utility", "paper")]


@pytest.fixture(scope="module", params=IPA_CASES,
                ids=lambda c: f"{c[0]}-{c[1]}-seed{c[2]}-{c[3]}")
def ipa_run(request):
    kind, n, seed, selection = request.param
    data = small_data(n, seed) if kind == "small" else synth_data(n, seed)
    result = IPA(epsilon=1, selection=selection).anonymize(data, noise=randomness(seed))
    return data, result


def test_ipa_loss_matches_independent_recomputation(ipa_run):
    data, result = ipa_run
    recomputed = recompute_loss(result.table, result.is_counterfeit, data)
    assert result.loss.ncp == pytest.approx(recomputed["ncp"], abs=1e-12)
    assert result.loss.emd == pytest.approx(recomputed["emd"], abs=1e-12)
    assert result.loss.rate == pytest.approx(recomputed["rate"], abs=1e-12)
    assert result.loss.total == pytest.approx(recomputed["information_loss"], abs=1e-12)
    chosen = [c for c in result.details["candidates"] if tuple(c["node"]) == result.node]
    assert len(chosen) == 1
    if result.details["selection"] == "paper":  # every node perturbed; the chosen one released
        assert chosen[0]["information_loss"] == pytest.approx(result.loss.total)
    else:  # scored on the true data; only the chosen node perturbed
        assert chosen[0]["probability"] == pytest.approx(result.details["selection_probability"])
        assert sum(c["probability"] for c in result.details["candidates"]) == pytest.approx(1)
    assert result.details["candidates_evaluated"] == len(Lattice(data.top_node))


def test_ipa_real_rows_are_the_input(ipa_run):
    data, result = ipa_run
    table, fake = result.table, result.is_counterfeit
    inf = data.schema.informative
    assert len(table) == len(data) + result.counterfeit
    assert result.counterfeit == int(fake.sum()) and result.records == len(data)
    assert Counter(table.loc[~fake, inf]) == Counter(data.frame[inf])
    assert set(table.loc[fake, inf]) <= set(data.informative_domain)


def test_ipa_groups_and_suppression(ipa_run):
    data, result = ipa_run
    table, fake = result.table, result.is_counterfeit
    dims = [h.name for h in data.hierarchies]
    # one set of labels per group, and distinct groups have distinct labels
    assert (table.groupby("group")[dims].nunique() == 1).all().all()
    labels_of_group = table.groupby("group")[dims].first()
    assert not labels_of_group.duplicated().any()
    assert result.classes == len(labels_of_group)
    # counterfeit rows sit in groups that hold real records
    assert set(table.loc[fake, "group"]) <= set(table.loc[~fake, "group"])
    # suppressed rows: '*' everywhere; their count is result.suppressed
    star_groups = labels_of_group.index[(labels_of_group == "*").all(axis=1)]
    assert len(star_groups) <= 1
    star = table["group"].isin(star_groups).to_numpy()
    assert result.suppressed == int((star & ~fake).sum())
    # every other group has the node's labels, and holds exactly the records with those labels
    for h, level in zip(data.hierarchies, result.node):
        assert set(table.loc[~star, h.name]) <= set(h.labels[level])
    released = table.loc[~star & ~fake].groupby(dims).size()
    original = generalized_labels(data, result.node).groupby(dims).size()
    assert (original.reindex(released.index) == released).all()
    assert original.drop(released.index).sum() == result.suppressed


def test_ipa_suppresses_and_inserts_in_these_runs(ipa_run):
    """The seeded cases are chosen so that the checks above see '*' rows and counterfeits."""
    data, result = ipa_run
    assert result.counterfeit > 0
    # (at 1000 records the utility's choice, a node with classes of dozens, suppresses nothing)
    if data.schema.name == "small" and (result.details["selection"] == "paper" or len(data) < 1000):
        assert result.suppressed > 0
        star = star_rows(result.table, [h.name for h in data.hierarchies])
        assert star.sum() >= result.suppressed


def test_ipa_rows_are_shuffled(ipa_run):
    data, result = ipa_run
    positions = np.flatnonzero(result.is_counterfeit)
    assert positions.min() < len(data)              # not all counterfeits at the end
    assert (~result.is_counterfeit[len(data):]).any() or result.counterfeit == 0
    groups = result.table["group"].to_numpy()
    assert not (np.diff(groups) >= 0).all()         # not in class order either


@pytest.mark.parametrize("selection", ["utility", "paper"])
def test_ipa_same_seed_same_release(selection):
    data = small_data(300, 4)
    a = IPA(epsilon=1, selection=selection).anonymize(data, noise=randomness(21))
    b = IPA(epsilon=1, selection=selection).anonymize(data, noise=randomness(21))
    c = IPA(epsilon=1, selection=selection).anonymize(data, noise=randomness(22))
    pd.testing.assert_frame_equal(a.table, b.table)
    np.testing.assert_array_equal(a.is_counterfeit, b.is_counterfeit)
    assert a.loss == b.loss and a.node == b.node
    assert a.details["candidates"] == b.details["candidates"]
    if selection == "paper":  # the candidates are perturbed nodes
        assert a.details["candidates"] != c.details["candidates"]
    else:
        assert not (a.table.equals(c.table) and (a.is_counterfeit == c.is_counterfeit).all())


def test_ipa_selection_probability_is_reported():
    data = small_data(300, 2)
    ipa = IPA(epsilon=2, selection="paper")
    result = ipa.anonymize(data, noise=randomness(5))
    losses = np.array([c["information_loss"] for c in result.details["candidates"]])
    weights = np.exp(float(Fraction(2) * Fraction(3, 10)) * (3 - losses) / 6)
    index = [tuple(c["node"]) for c in result.details["candidates"]].index(result.node)
    assert result.details["selection_probability"] == pytest.approx(weights[index] / weights.sum())
    assert result.details["selection_max_weight_ratio"] == pytest.approx(math.exp(0.6 / 2))


EPSILONS = [(1, Fraction(1)), (0.1, Fraction(1, 10)), ("1/3", Fraction(1, 3)), (2.5, Fraction(5, 2))]
SPLITS = [(DEFAULT_BUDGET_SPLIT, DEFAULT_BUDGET_SPLIT),
          ("0.25,0.25,0.25,0.25", (Fraction(1, 4),) * 4),
          ((0.1, 0.2, 0.3, 0.4), (Fraction(1, 10), Fraction(2, 10), Fraction(3, 10), Fraction(4, 10)))]


@pytest.mark.parametrize("split, shares", SPLITS, ids=["default", "quarters", "1-2-3-4"])
@pytest.mark.parametrize("epsilon, exact", EPSILONS, ids=[str(e[0]) for e in EPSILONS])
def test_ipa_epsilon_accounting_is_exact(epsilon, exact, split, shares):
    ipa = IPA(epsilon=epsilon, budget_split=split, selection="paper")
    losses = ipa.planned_losses()
    assert sum(p.epsilon for p in losses) == exact
    assert [p.target for p in losses] == list(STEPS)
    for p, share in zip(losses, shares):
        assert isinstance(p.epsilon, Fraction)
        assert p.epsilon == share * exact
    assert ipa.suppression_scale == Fraction(ipa.threshold - 1) / (shares[0] * exact)
    assert ipa.insertion_scale == 1 / (shares[1] * exact)
    assert ipa.selector.epsilon == shares[3] * exact
    assert ipa.selector.sensitivity == 3


@pytest.mark.parametrize("min_records", [None, 500])
@pytest.mark.parametrize("split, shares", SPLITS, ids=["default", "quarters", "1-2-3-4"])
@pytest.mark.parametrize("epsilon, exact", EPSILONS, ids=[str(e[0]) for e in EPSILONS])
def test_ipa_utility_selection_epsilon_accounting_is_exact(epsilon, exact, split, shares,
                                                             min_records):
    ipa = IPA(epsilon=epsilon, budget_split=split, min_records=min_records)
    losses = ipa.planned_losses()
    assert sum(p.epsilon for p in losses) == exact
    by_target = {p.target: p.epsilon for p in losses}
    for step, share in zip(STEPS[:3], shares):
        assert by_target[step] == share * exact
    if min_records is None:  # the noisy record count takes 1/10 of the candidates' share
        assert list(by_target) == [*STEPS[:3], "records", "candidates"]
        assert by_target["records"] == shares[3] * exact * RECORDS_SHARE
        assert by_target["candidates"] == shares[3] * exact * (1 - RECORDS_SHARE)
    else:
        assert list(by_target) == list(STEPS)
        assert by_target["candidates"] == shares[3] * exact
    assert ipa.selector.epsilon == by_target["candidates"]
    assert ipa.selector.sensitivity == ipa.expected_loss.sensitivity
    # the manifest's shares give every ledger step and sum to 1
    manifest_shares = ipa.parameters()["budget_split"]
    assert list(manifest_shares) == list(by_target)
    assert sum(Fraction(v) for v in manifest_shares.values()) == 1


@pytest.mark.parametrize("selection", ["utility", "paper"])
def test_ipa_result_spends_exactly_epsilon(selection):
    result = IPA(epsilon="0.7", selection=selection).anonymize(small_data(300, 3),
                                                               noise=randomness(1))
    assert sum(p.epsilon for p in result.privacy_losses) == Fraction(7, 10)
    assert result.summary()["epsilon"] == pytest.approx(0.7)
    assert result.parameters["selection"] == selection
    assert result.privacy_model.selection == selection


def test_ipa_epsilon_accounting_with_threshold():
    ipa = IPA(epsilon="0.7", threshold=5, selection="paper")
    assert ipa.suppression_scale == Fraction(4) / Fraction(7, 100)
    assert [p.epsilon for p in ipa.planned_losses()] == [Fraction(7, 100)] + [Fraction(21, 100)] * 3


def test_parse_budget_split_accepts():
    assert parse_budget_split("0.1,0.3,0.3,0.3") == DEFAULT_BUDGET_SPLIT
    assert parse_budget_split(" 0.1 , 0.3, 0.3 ,0.3 ") == DEFAULT_BUDGET_SPLIT
    assert parse_budget_split("0.1 0.3 0.3 0.3") == DEFAULT_BUDGET_SPLIT
    assert parse_budget_split([Fraction(1, 3), "1/6", 0.25, 0.25]) == \
        (Fraction(1, 3), Fraction(1, 6), Fraction(1, 4), Fraction(1, 4))


@pytest.mark.parametrize("split", [
    (0.1, 0.3, 0.6), "0.5,0.5", (0.1, 0.3, 0.3, 0.2, 0.1), "0.1,0.3,0.3,0.3,0",
    (0, 0.3, 0.3, 0.4), (-0.1, 0.5, 0.3, 0.3), "0.1,0.3,-0.3,0.9",
    "0.1,0.3,0.3,0.31", (0.1, 0.3, 0.3, 0.29), (0.25, 0.25, 0.25, 0.26),
    "a,b,c,d", 5, None,
])
def test_parse_budget_split_rejects(split):
    with pytest.raises(ValidationError, match="budget_split"):
        parse_budget_split(split)
    with pytest.raises(ValidationError):
        IPA(epsilon=1, budget_split=split)


@pytest.mark.parametrize("params", [{"epsilon": 1, "threshold": 1}, {"epsilon": 1, "threshold": 0},
                                    {"epsilon": 1, "threshold": 2.0}, {"epsilon": 0},
                                    {"epsilon": -1}, {"epsilon": "abc"},
                                    {"epsilon": 1, "selection": "best"},
                                    {"epsilon": 1, "min_records": 0},
                                    {"epsilon": 1, "min_records": 10.5},
                                    {"epsilon": 1, "selection": "paper", "min_records": 100}])
def test_ipa_validation(params):
    with pytest.raises(ValidationError):
        IPA(**params)


def test_ipa_is_not_dp_for_the_reason_it_states_one_sided_counterfeits():
    # A record holding a value no other record holds ("E") is always released as it is, so "E"
    # is in every release with it; without it, "E" can only come from a counterfeit draw, and
    # some releases lack it: an output with probability > 0 on one neighbour and 0 on the other.
    base = small_data(120, 4)
    frame = base.frame[base.frame["dx"] != "E"].reset_index(drop=True)
    with_e = pd.concat([frame, pd.DataFrame([{"age": 7, "sex": "F", "region": "b", "dx": "E"}])],
                       ignore_index=True)
    method = IPA(epsilon=1)

    def shows_e(table: pd.DataFrame, seed: int) -> bool:
        data = load_table(table, SMALL_SCHEMA)
        return bool((method.anonymize(data, noise=randomness(seed)).table["dx"] == "E").any())

    assert all(shows_e(with_e, seed) for seed in range(15))
    assert not all(shows_e(frame, seed) for seed in range(15))
    text = IPA(epsilon=1).anonymize(base, noise=randomness(0)).does_not_guarantee
    assert "one-sided" in text and "node choice" not in text


# -- DPHistogram -------------------------------------------------------------------------------

def test_dphist_default_node():
    small = small_data(50, 0)
    assert [h.top for h in small.hierarchies] == [3, 1, 2]
    assert default_histogram_node(small) == (1, 0, 1)
    synth = synth_data(50, 0)
    assert default_histogram_node(synth) == (1, 0, 1, 0, 1)
    assert DPHistogram(epsilon=1).anonymize(small, noise=randomness(1)).node == (1, 0, 1)


@pytest.mark.parametrize("node", [(0, 1, 2), (3, 1, 2), (2, 0, 0)])
def test_dphist_explicit_node(node):
    data = small_data(400, 1)
    result = DPHistogram(epsilon=1, node=node).anonymize(data, noise=randomness(3))
    assert result.node == node
    for h, level in zip(data.hierarchies, node):
        assert set(result.table[h.name]) <= set(h.labels[level])


@pytest.mark.parametrize("node", [(4, 0, 0), (0, 2, 0), (0, 0, 3), (1, 0), (1, 0, 1, 0)])
def test_dphist_node_validation_against_data(node):
    data = small_data(50, 0)
    with pytest.raises(ValidationError, match="'node' parameter of DPHistogram"):
        DPHistogram(epsilon=1, node=node).anonymize(data, noise=randomness(1))


@pytest.mark.parametrize("params", [{"epsilon": 1, "node": (-1, 0, 0)}, {"epsilon": 1, "node": (0.5, 0, 0)},
                                    {"epsilon": 0}])
def test_dphist_validation(params):
    with pytest.raises(ValidationError):
        DPHistogram(**params)


@pytest.mark.parametrize("case", [("small", 400, 1, 1), ("small", 1000, 2, 0.5), ("synth", 800, 3, 2)])
def test_dphist_loss_and_records(case):
    kind, n, seed, epsilon = case
    data = small_data(n, seed) if kind == "small" else synth_data(n, seed)
    result = DPHistogram(epsilon=epsilon).anonymize(data, noise=randomness(seed))
    recomputed = recompute_loss(result.table, result.is_counterfeit, data)
    assert result.loss.ncp == pytest.approx(recomputed["ncp"], abs=1e-12)
    assert result.loss.emd == pytest.approx(recomputed["emd"], abs=1e-12)
    assert result.loss.rate == pytest.approx(recomputed["rate"], abs=1e-12)
    real = ~result.is_counterfeit
    assert result.details["records_lost"] + int(real.sum()) == len(data)
    assert result.counterfeit == int(result.is_counterfeit.sum()) and result.suppressed == 0
    assert sum(p.epsilon for p in result.privacy_losses) == Fraction(str(epsilon))
    # real rows are a sub-multiset of the records generalized to the node
    dims = [h.name for h in data.hierarchies]
    inf = data.schema.informative
    original = generalized_labels(data, result.node)
    original[inf] = data.frame[inf].to_numpy()
    released = Counter(map(tuple, result.table.loc[real, dims + [inf]].to_numpy().tolist()))
    expected = Counter(map(tuple, original.to_numpy().tolist()))
    assert not released - expected
    assert (result.table.groupby("group")[dims].nunique() == 1).all().all()
    assert result.details["cells"] == math.prod(
        h.size(level) for h, level in zip(data.hierarchies, result.node)) * len(data.informative_domain)


def test_dphist_too_many_cells(monkeypatch):
    data = small_data(50, 0)
    monkeypatch.setattr("medanon.anonymize.dphist.MAX_CELLS", 100)
    node = (1, 0, 1)    # 6 x 2 x 3 classes x 5 values = 180 cells
    with pytest.raises(InfeasibleError, match="180 cells"):
        DPHistogram(epsilon=1, node=node).anonymize(data, noise=randomness(1))
    coarse = DPHistogram(epsilon=1, node=(2, 1, 2)).anonymize(data, noise=randomness(1))
    assert coarse.details["cells"] == 2 * 1 * 1 * 5


def test_dphist_refuses_an_informative_domain_read_from_the_data():
    schema = TableSchema.from_toml_text(
        SMALL_TOML.replace('informative_domain = ["A", "B", "C", "D", "E"]', ""))
    frame = small_data(60, 0).frame
    data = load_table(frame, schema)
    assert not data.domain_public
    with pytest.raises(SchemaError, match="'informative_domain' parameter of DPHistogram") as err:
        DPHistogram(epsilon=1).anonymize(data, noise=randomness(1))
    assert "(table 'small') declares none" in str(err.value)
    with pytest.raises(SchemaError, match="'informative_domain' parameter of DPHistogram"):
        require_public_domain(schema)
    require_public_domain(SMALL_SCHEMA)  # a declared domain passes
    # with the declared domain the same records are released
    public = load_table(frame, SMALL_SCHEMA)
    assert len(DPHistogram(epsilon=1).anonymize(public, noise=randomness(1)).table)


def test_dphist_same_seed_same_release():
    data = small_data(200, 0)
    a = DPHistogram(epsilon=1).anonymize(data, noise=randomness(8))
    b = DPHistogram(epsilon=1).anonymize(data, noise=randomness(8))
    pd.testing.assert_frame_equal(a.table, b.table)
    np.testing.assert_array_equal(a.is_counterfeit, b.is_counterfeit)


# -- evaluate_queries --------------------------------------------------------------------------

def test_queries_on_an_identity_release_have_no_error():
    data = synth_data(1500, 2)
    released = data.frame.astype(str)
    released.insert(0, "group", np.arange(len(released)))
    results = evaluate_queries(data, released)
    assert [r.name for r in results] == ["Q1", "Q2", "Q3", "Q4"]
    shown = [e for r in results for e in r.relative_error if e is not None]
    assert len(shown) > 20
    assert all(e == pytest.approx(0.0, abs=1e-12) for e in shown)
    assert all(r.mean_relative_error == pytest.approx(0.0, abs=1e-12) for r in results)
    assert results[0].original == results[0].released
    assert sum(results[0].original) > 0


def test_queries_on_a_kanon_release_at_the_bottom_node_have_no_error():
    data = small_data(60, 0)
    # with every record duplicated the bottom node is 2-anonymous
    doubled = pd.concat([data.frame, data.frame], ignore_index=True)
    schema = TableSchema.from_toml_text(SMALL_TOML + """
[[table.query]]
name = "Q"
aggregate = "count"
group_by = "age"
bin = 5
where = { sex = "M" }
""")
    data = load_table(doubled, schema)
    result = FullDomainKAnonymity(k=2).anonymize(data)
    assert result.node == (0, 0, 0)
    (q,) = evaluate_queries(data, result.table)
    assert any(e is not None for e in q.relative_error)
    assert all(e == 0 for e in q.relative_error if e is not None)


QUERY_TOML = """
[table]
informative = "dx"

[[table.dimension]]
name = "age"
kind = "numeric"
domain = [0, 99]
levels = [{ width = 10 }]

[[table.dimension]]
name = "sex"
kind = "categorical"
values = ["F", "M"]

[[table.dimension]]
name = "los"
kind = "numeric"
domain = [1, 30]
levels = [{ cuts = [1, 5, 10] }]

[[table.query]]
name = "count"
aggregate = "count"
group_by = "age"
bin = 5
where = { sex = "M" }
informative_prefix = ["I6"]

[[table.query]]
name = "mean"
aggregate = "mean"
of = "los"
group_by = "age"
bin = 5
where = { sex = "M" }
informative_prefix = ["I6"]
"""


def test_queries_hand_computed_with_generalized_labels():
    schema = TableSchema.from_toml_text(QUERY_TOML)
    original = pd.DataFrame({"age": [12, 40, 11, 70], "sex": ["M", "M", "F", "M"],
                             "los": [7, 3, 20, 2], "dx": ["I63", "I64", "I61", "J18"]})
    data = load_table(original, schema)
    released = pd.DataFrame({"group": [0, 1, 2, 3],
                             "age": ["[10-19]", "40", "[10-19]", "*"],
                             "sex": ["*", "M", "F", "M"],
                             "los": ["[5-9]", "3", "[10-30]", "2"],
                             "dx": ["I63", "I64", "I61", "J18"]})
    count, mean = evaluate_queries(data, released)
    bins = list(range(0, 100, 5))
    assert count.bins == bins and mean.bins == bins
    i10, i15, i40 = bins.index(10), bins.index(15), bins.index(40)
    # original: one man with a stroke aged 12 (bin 10) and one aged 40; J18 does not count
    assert count.original[i10] == 1 and count.original[i40] == 1 and sum(count.original) == 2
    # released: the row [10-19]/* counts 1/2 (age) x 1/2 (sex) in bins 10 and 15; the F row 0
    assert count.released[i10] == pytest.approx(0.25)
    assert count.released[i15] == pytest.approx(0.25)
    assert count.released[i40] == pytest.approx(1.0)
    assert sum(count.released) == pytest.approx(1.5)
    assert count.relative_error[i10] == pytest.approx(0.75)
    assert count.relative_error[i15] == pytest.approx(0.25)     # |0.25 - 0| / max(0, 1)
    assert count.relative_error[i40] == 0
    assert all(count.relative_error[i] is None for i in range(len(bins)) if i not in (i10, i15, i40))
    assert count.mean_relative_error == pytest.approx((0.75 + 0.25 + 0) / 3)
    # means: [5-9] contributes its midpoint 7, the original stay is 7 as well
    assert mean.original[i10] == pytest.approx(7.0) and mean.released[i10] == pytest.approx(7.0)
    assert mean.released[i15] == pytest.approx(7.0) and mean.original[i15] is None
    assert mean.relative_error[i10] == pytest.approx(0.0)
    assert mean.relative_error[i15] is None                      # no original record there
    assert mean.original[i40] == pytest.approx(3.0) and mean.relative_error[i40] == 0


def test_queries_mean_error_when_the_release_has_no_match():
    schema = TableSchema.from_toml_text(QUERY_TOML)
    original = pd.DataFrame({"age": [12], "sex": ["M"], "los": [8], "dx": ["I63"]})
    data = load_table(original, schema)
    released = pd.DataFrame({"group": [0], "age": ["12"], "sex": ["M"], "los": ["[10-30]"],
                             "dx": ["I63"]})
    count, mean = evaluate_queries(data, released)
    i10 = count.bins.index(10)
    assert count.relative_error[i10] == 0
    assert mean.released[i10] == pytest.approx(20.0)
    assert mean.relative_error[i10] == pytest.approx(12 / 8)
    released["sex"] = "F"
    count, mean = evaluate_queries(data, released)
    assert count.relative_error[i10] == 1.0 and mean.relative_error[i10] == 1.0


def test_single_value_dimension_suppressed_rows_cost_one_in_both_losses():
    schema = TableSchema.from_mapping({"informative": "dx", "dimension": [
        {"name": "age", "kind": "numeric", "domain": [0, 9], "levels": [{"width": 5}]},
        {"name": "one", "kind": "categorical", "values": ["X"]}]})
    frame = pd.DataFrame({"age": [0] * 10 + [9], "one": "X", "dx": ["A"] * 10 + ["B"]})
    data = load_table(frame, schema)
    result = FullDomainKAnonymity(k=5, max_suppression=0.2).anonymize(data)
    assert result.node == (0, 0) and result.suppressed == 1
    assert result.loss.ncp == pytest.approx(1 / 11)          # the suppressed row costs 1
    assert recompute_loss(result.table, result.is_counterfeit, data)["ncp"] == pytest.approx(1 / 11)
