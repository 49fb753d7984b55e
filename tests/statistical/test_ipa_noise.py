"""Statistical tests of IPA's noise (paper 004): noisy threshold, counterfeit counts and values, node choice.

Each test draws many independent perturbations with a fixed seed and compares the empirical
frequencies with the exact distributions of the spec (§3.1–3.3, 3.7):

- suppression: an equivalence class of size s goes to ``*`` iff ``s <= t + Z``,
  ``Z ~ DLap((t−1)/ε_supp)``, so with probability Pr[Z >= s − t];
- insertion: a class gets ``max(0, Z)`` counterfeits, ``Z ~ DLap(1/ε_ins)``;
- counterfeit values: Eq. 4, Pr[v] ∝ exp(ε_value·S(v)/2);
- node choice: Eq. 12, Pr ∝ exp(ε_cand·(3 − IL)/(2·3)).

``DLap(b)`` has pmf (1−p)/(1+p)·p^|z| with p = exp(−1/b). Thresholds as in test_mechanisms.py
(|z| < 4.5, p > 1e-4): never failing by chance at these seeds, and each test also shows that a
wrong parameter (scale doubled, strict '<', the authors' unseen-value score) is rejected.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.statistical.chi2 import chisquare_p
from medanon.anonymize.ipa import IPA
from medanon.anonymize.lattice import RollUp
from medanon.data.tabular import TableSchema, TabularData, load_table
from medanon.mechanisms.noise import NoiseSource
from medanon.random import randomness

Z_MAX = 4.5
P_MIN = 1e-4


def binomial_z(successes: int, n: int, p: float) -> float:
    return (successes - n * p) / math.sqrt(n * p * (1 - p))



def dlap_p(scale) -> float:
    return math.exp(-1 / float(scale))


def dlap_at_least(d: int, scale) -> float:
    """Pr[Z >= d] for Z ~ DLap(scale): p^d/(1+p) for d >= 1, else 1 − Pr[Z >= 1 − d]."""
    p = dlap_p(scale)
    if d >= 1:
        return p ** d / (1 + p)
    return 1 - p ** (1 - d) / (1 + p)


def clipped_dlap_pmf(scale, kmax: int) -> np.ndarray:
    """pmf of max(0, Z) on 0..kmax, the last cell holding the tail (>= kmax)."""
    p = dlap_p(scale)
    pmf = np.array([1 / (1 + p)] + [(1 - p) / (1 + p) * p ** k for k in range(1, kmax)])
    return np.append(pmf, p ** kmax / (1 + p))


def flat_table(sizes: dict[int, int], values: tuple[str, ...] = ("A", "B"), seed: int = 0) -> TabularData:
    """One flat dimension: ``sizes[s]`` values each held by exactly s records (random informative)."""
    leaves, rows = [], []
    for s, count in sizes.items():
        for _ in range(count):
            leaf = f"v{len(leaves):04d}"
            leaves.append(leaf)
            rows += [leaf] * s
    rng = np.random.default_rng(seed)
    schema = TableSchema.from_mapping({"informative": "dx", "informative_domain": list(values),
                                       "dimension": [{"name": "v", "kind": "categorical",
                                                      "values": leaves}]})
    frame = pd.DataFrame({"v": rows, "dx": rng.choice(list(values), len(rows))})
    return load_table(frame, schema)


def perturbations(ipa: IPA, data: TabularData, node, reps: int, seed: int):
    """``reps`` independent runs of Algorithm 1 on ``node`` (one seeded stream)."""
    noise = NoiseSource(randomness(seed))
    table = RollUp(data, with_informative=True).table(node)
    pools = ipa._pools(noise)
    return table, [ipa._perturb(data, table, noise, pools) for _ in range(reps)]


# -- Step 1: noisy suppression threshold ----------------------------------------------------------

SIZES = (1, 2, 3, 4, 6)
CLASSES_PER_SIZE = 200


@pytest.fixture(scope="module")
def sized_table() -> TabularData:
    return flat_table({s: CLASSES_PER_SIZE for s in SIZES})


def suppression_counts(ipa: IPA, data: TabularData, reps: int, seed: int) -> tuple[dict[int, int], int]:
    table, runs = perturbations(ipa, data, (0,), reps, seed)
    class_of_row, _ = table.classes()
    ec_size = np.bincount(class_of_row, weights=table.count).astype(np.int64)
    assert sorted(np.unique(ec_size, return_counts=True)[1].tolist()) == [CLASSES_PER_SIZE] * len(SIZES)
    hits = {s: 0 for s in SIZES}
    for cand in runs:
        assert cand.suppressed_ec.shape == ec_size.shape
        for s in SIZES:
            hits[s] += int(cand.suppressed_ec[ec_size == s].sum())
    return hits, reps * CLASSES_PER_SIZE


@pytest.mark.parametrize("epsilon", [1, 10])
@pytest.mark.parametrize("threshold", [2, 3])
def test_noisy_threshold_suppression_rate(sized_table, threshold, epsilon):
    ipa = IPA(epsilon=epsilon, threshold=threshold)
    scale = ipa.suppression_scale
    assert scale == Fraction(threshold - 1) / (Fraction(1, 10) * epsilon)
    hits, n = suppression_counts(ipa, sized_table, reps=400, seed=1000 * threshold + epsilon)
    right, doubled, strict = [], [], []
    for s in SIZES:
        right.append(binomial_z(hits[s], n, dlap_at_least(s - threshold, scale)))
        doubled.append(binomial_z(hits[s], n, dlap_at_least(s - threshold, 2 * scale)))
        strict.append(binomial_z(hits[s], n, dlap_at_least(s - threshold + 1, scale)))  # `s < t + Z`
    assert max(abs(z) for z in right) < Z_MAX, right
    # the test has the power to see a wrong scale or a strict comparison
    assert max(abs(z) for z in doubled) > 2 * Z_MAX, doubled
    assert max(abs(z) for z in strict) > 2 * Z_MAX, strict
    # larger classes are suppressed less often
    rates = [hits[s] / n for s in SIZES]
    assert rates == sorted(rates, reverse=True)


def test_suppressed_classes_form_the_star_class(sized_table):
    ipa = IPA(epsilon=10, threshold=2)
    table, runs = perturbations(ipa, sized_table, (0,), reps=5, seed=3)
    class_of_row, _ = table.classes()
    ec_size = np.bincount(class_of_row, weights=table.count).astype(np.int64)
    for cand in runs:
        kept = int((~cand.suppressed_ec).sum())
        starred = bool(cand.suppressed_ec.any())
        assert len(cand.fakes) == kept + starred
        assert np.all(cand.fake_class < kept + starred)
        assert np.bincount(cand.fake_class, minlength=len(cand.fakes)).tolist() == cand.fakes.tolist()
        # row by row, the release has the suppressed records in `*` and the same loss
        release = ipa._release(sized_table, cand)
        real = ~release.row_fake
        assert int(release.starred[release.row_class[real]].sum()) == ec_size[cand.suppressed_ec].sum()
        assert int(release.row_fake.sum()) == int(cand.fakes.sum())
        loss = release.loss()
        assert loss.ncp == pytest.approx(cand.loss.ncp, abs=1e-12)
        assert loss.emd == pytest.approx(cand.loss.emd, abs=1e-12)
        assert loss.rate == pytest.approx(cand.loss.rate, abs=1e-12)


# -- Step 1: counterfeit counts ------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, split", [(1, None), (3, (0.25, 0.25, 0.25, 0.25))])
def test_counterfeit_counts_are_clipped_discrete_laplace(sized_table, epsilon, split):
    ipa = IPA(epsilon=epsilon) if split is None else IPA(epsilon=epsilon, budget_split=split)
    scale = ipa.insertion_scale
    share = Fraction(3, 10) if split is None else Fraction(1, 4)
    assert scale == 1 / (share * epsilon)
    table, runs = perturbations(ipa, sized_table, (0,), reps=80, seed=77 + epsilon)
    fakes = np.concatenate([cand.fakes for cand in runs])
    assert fakes.min() >= 0 and len(fakes) > 30_000
    kmax = 40
    observed = np.bincount(np.minimum(fakes, kmax), minlength=kmax + 1)
    assert chisquare_p(observed, clipped_dlap_pmf(scale, kmax)) > P_MIN
    assert chisquare_p(observed, clipped_dlap_pmf(2 * scale, kmax)) < P_MIN     # power
    assert chisquare_p(observed, clipped_dlap_pmf(scale / 2, kmax)) < P_MIN
    # the mean: E[max(0, Z)] = p/(1 − p²), Var = p/(1 − p)² − mean²
    p = dlap_p(scale)
    mean = p / (1 - p * p)
    sd = math.sqrt(p / (1 - p) ** 2 - mean ** 2)
    z = (fakes.mean() - mean) / (sd / math.sqrt(len(fakes)))
    assert abs(z) < Z_MAX, z
    # the counterfeit count does not depend on the class size: same mean for every size
    class_of_row, _ = table.classes()
    ec_size = np.bincount(class_of_row, weights=table.count).astype(np.int64)
    by_size = {s: [] for s in SIZES}
    for cand in runs:
        kept = np.flatnonzero(~cand.suppressed_ec)
        for s in SIZES:
            by_size[s].append(cand.fakes[:len(kept)][ec_size[kept] == s])
    for s in SIZES:
        sample = np.concatenate(by_size[s])
        assert len(sample) > 1000
        z = (sample.mean() - mean) / (sd / math.sqrt(len(sample)))
        assert abs(z) < Z_MAX, (s, z)


# -- Step 1: counterfeit values (Eq. 3-4) --------------------------------------------------------

def eq4_probabilities(counts: dict[int, int], m: int, epsilon_value, unseen_divisor=None) -> np.ndarray:
    """Pr[v] ∝ exp(ε·S(v)/2) over the m values; S = Count(v)/(|E|+1) if seen, else
    1/((|E|+1)(|Inf| − |Inf_E|)) (or 1/((|E|+1)·unseen_divisor), to test a wrong variant)."""
    size = sum(counts.values())
    unseen = m - len(counts)
    divisor = unseen if unseen_divisor is None else unseen_divisor
    score = np.array([counts[v] / (size + 1) if v in counts else 1 / ((size + 1) * divisor)
                      for v in range(m)])
    w = np.exp(float(epsilon_value) * score / 2)
    return w / w.sum()


def draw_values(ipa: IPA, classes: list[dict[int, int]], fakes: list[int], m: int, seed: int):
    """Call the counterfeit-value sampler on classes given as {value: count}."""
    e_class, e_value, e_count = [], [], []
    for c, counts in enumerate(classes):
        for v in sorted(counts):
            e_class.append(c)
            e_value.append(v)
            e_count.append(counts[v])
    n_real = np.array([sum(c.values()) for c in classes], dtype=np.int64)
    return ipa._counterfeit_values(np.array(e_class, dtype=np.int64), np.array(e_value, dtype=np.int64),
                                   np.array(e_count, dtype=np.int64), n_real,
                                   np.array(fakes, dtype=np.int64), m, NoiseSource(randomness(seed)))


CLASS_9 = {0: 6, 1: 3}            # |E| = 9: A x 6, B x 3; C, D, E unseen


@pytest.mark.parametrize("epsilon", [20, 1])
def test_counterfeit_values_follow_eq4(epsilon):
    ipa = IPA(epsilon=epsilon)
    classes = [CLASS_9, {2: 1}, {0: 1, 1: 2, 2: 3, 3: 4, 4: 5}, {4: 2}]
    fakes = [400_000, 50_000, 50_000, 0]
    fake_class, values = draw_values(ipa, classes, fakes, m=5, seed=epsilon)
    assert np.bincount(fake_class, minlength=4).tolist() == fakes
    assert values.min() >= 0 and values.max() < 5
    for c, counts in enumerate(classes[:3]):
        observed = np.bincount(values[fake_class == c], minlength=5)
        expected = eq4_probabilities(counts, 5, ipa.value_epsilon)
        assert chisquare_p(observed, expected) > P_MIN, (c, observed, expected)
    observed = np.bincount(values[fake_class == 0], minlength=5)
    # the unseen values are equally likely
    assert stats.chisquare(observed[2:]).pvalue > P_MIN
    # power: uniform is rejected, and at ε = 20 also the authors' unseen-value score
    # 1/((|E|+1)·|E|) (spec §3.3); at ε_value = 0.3 the two scores differ by only ~1e-3
    assert chisquare_p(observed, np.full(5, 0.2)) < P_MIN
    if epsilon == 20:
        wrong = eq4_probabilities(CLASS_9, 5, ipa.value_epsilon, unseen_divisor=9)
        assert chisquare_p(observed, wrong) < P_MIN


def test_counterfeit_values_eq4_weights_at_epsilon_20():
    """The exact probabilities of the 9-record class at ε_value = 6 (ε = 20, default split)."""
    ipa = IPA(epsilon=20)
    assert ipa.value_epsilon == 6
    probs = eq4_probabilities(CLASS_9, 5, 6)
    w = np.exp(3 * np.array([0.6, 0.3, 1 / 30, 1 / 30, 1 / 30]))
    np.testing.assert_allclose(probs, w / w.sum())
    assert probs[0] > 2 * probs[1] > 4 * probs[2]


@pytest.mark.parametrize("epsilon, split", [(20, (0.1, 0.005, 0.89, 0.005)), (1, None)])
def test_counterfeit_values_through_algorithm_1(epsilon, split):
    """Classes of 9 records (A x 6, B x 3) in a domain of 5 values, through ``_perturb``."""
    n_classes = 300
    leaves = [f"v{i:03d}" for i in range(n_classes)]
    schema = TableSchema.from_mapping({"informative": "dx", "informative_domain": list("ABCDE"),
                                       "dimension": [{"name": "v", "kind": "categorical",
                                                      "values": leaves}]})
    frame = pd.DataFrame({"v": np.repeat(leaves, 9), "dx": np.tile(["A"] * 6 + ["B"] * 3, n_classes)})
    data = load_table(frame, schema)
    ipa = IPA(epsilon=epsilon) if split is None else IPA(epsilon=epsilon, budget_split=split)
    _, runs = perturbations(ipa, data, (0,), reps=60, seed=5 + epsilon)
    values = []
    for cand in runs:
        kept = int((~cand.suppressed_ec).sum())
        values.append(cand.fake_value[cand.fake_class < kept])   # the `*` class has other counts
    values = np.concatenate(values)
    assert len(values) > 20_000
    observed = np.bincount(values, minlength=5)
    expected = eq4_probabilities(CLASS_9, 5, ipa.value_epsilon)
    assert chisquare_p(observed, expected) > P_MIN
    if epsilon == 20:
        assert chisquare_p(observed, np.full(5, 0.2)) < P_MIN


# -- Step 2: node selection (Eq. 12) -------------------------------------------------------------

@pytest.mark.parametrize("epsilon, split", [(1, None), (2.5, (0.1, 0.2, 0.3, 0.4)), ("1/3", None)])
def test_node_selection_probabilities_are_eq12(epsilon, split):
    ipa = IPA(epsilon=epsilon, selection="paper") if split is None else \
        IPA(epsilon=epsilon, budget_split=split, selection="paper")
    eps_cand = float(ipa.planned_losses()[3].epsilon)
    rng = np.random.default_rng(4)
    il = rng.uniform(0, 3, 256)
    probs = ipa.selector.probabilities(3 - il)
    w = np.exp(eps_cand * (3 - il) / (2 * 3))
    np.testing.assert_allclose(probs, w / w.sum(), rtol=1e-12)
    assert probs.sum() == pytest.approx(1.0)
    assert ipa.selector.sensitivity == 3
    # lower information loss is more likely
    assert probs[np.argmin(il)] == probs.max()


def test_node_selection_frequencies():
    ipa = IPA(epsilon=30, selection="paper")  # ε_cand = 9: the weights differ by up to e^4.5
    il = np.array([0.1, 0.5, 1.0, 1.5, 2.2, 2.9])
    probs = ipa.selector.probabilities(3 - il)
    noise = NoiseSource(randomness(12))
    picks = np.array([ipa.selector.select(3 - il, noise) for _ in range(20_000)])
    observed = np.bincount(picks, minlength=len(il))
    assert chisquare_p(observed, probs) > P_MIN
    assert chisquare_p(observed, np.full(len(il), 1 / len(il))) < P_MIN
