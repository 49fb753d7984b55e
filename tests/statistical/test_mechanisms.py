"""Statistical tests of the DP samplers and mechanisms (fixed seeds, deterministic).

Each test compares empirical draws with the exact distribution, with thresholds (|z| < 4.5,
p > 1e-4) loose enough never to fail by chance at these seeds and sizes, yet tight enough to
catch a wrong distribution: a 10% error in a noise scale moves every statistic far beyond them.
"""

from __future__ import annotations

import math
import pickle
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from tests.statistical.chi2 import chisquare_p
from medanon.errors import ValidationError
from medanon.mechanisms import (ExponentialMechanism, LaplaceMechanism, NoiseSource,
                                RandomizedResponse, to_fraction)
from medanon.mechanisms.noise import check_noise
from medanon.random import randomness

Z_MAX = 4.5
P_MIN = 1e-4


def binomial_z(successes: int, n: int, p: float) -> float:
    return (successes - n * p) / math.sqrt(n * p * (1 - p))



# -- to_fraction ---------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (0.1, Fraction(1, 10)), (3, Fraction(3)), ("1/3", Fraction(1, 3)), (" 0.25 ", Fraction(1, 4)),
    (Fraction(2, 7), Fraction(2, 7)), (np.float64(0.1), Fraction(1, 10)), (np.int64(5), Fraction(5)),
    (Decimal("0.2"), Fraction(1, 5)), ("2e-3", Fraction(1, 500)),
])
def test_to_fraction_is_exact(value, expected):
    assert to_fraction(value, name="epsilon", owner="T") == expected


@pytest.mark.parametrize("value", [True, np.bool_(True), float("nan"), float("inf"), -math.inf, 0,
                                   0.0, -1, "abc", "1/0", None, [1], Decimal("NaN")])
def test_to_fraction_rejects(value):
    with pytest.raises(ValidationError, match="The 'epsilon' parameter of T must be a positive"):
        to_fraction(value, name="epsilon", owner="T")


def test_to_fraction_non_negative():
    assert to_fraction(0, name="x", owner="T", positive=False) == 0
    with pytest.raises(ValidationError, match="non-negative"):
        to_fraction(-0.5, name="x", owner="T", positive=False)


# -- NoiseSource ---------------------------------------------------------------------------

def test_seeded_source_is_reproducible():
    a, b, c = NoiseSource.seeded(7), NoiseSource.seeded(7), NoiseSource.seeded(8)
    draws = [[s.randbits(13), s.discrete_laplace(Fraction(5, 2)), s.uniform_int(10 ** 30),
              s.uniform01(), *s.gumbel(3).tolist()] for s in (a, b, c) for _ in range(50)]
    assert draws[:50] == draws[50:100]
    assert draws[:50] != draws[100:]
    assert a.kind == "seeded"
    assert {k: a.describe()[k] for k in ("kind", "seed", "generator")} == {
        "kind": "seeded", "seed": 7, "generator": "numpy PCG64"}


def test_secure_source():
    s = NoiseSource.secure()
    assert s.kind == "secure" and NoiseSource().kind == "secure"
    assert {k: s.describe()[k] for k in ("kind", "seed", "generator")} == {
        "kind": "secure", "seed": None, "generator": "secrets (OS CSPRNG)"}
    assert 0 <= s.randbits(64) < 2 ** 64 and s.randbits(0) == 0
    assert isinstance(s.discrete_laplace(3), int)
    assert 0 < s.uniform01() < 1
    assert s.gumbel(5).shape == (5,)
    assert len({s.randbits(64) for _ in range(10)}) == 10


def test_pickling_keeps_seeded_state_and_refreshes_secure():
    a = NoiseSource.seeded(3)
    a.randbits(5)
    b = pickle.loads(pickle.dumps(a))
    assert [a.randbits(17) for _ in range(20)] == [b.randbits(17) for _ in range(20)]
    assert pickle.loads(pickle.dumps(NoiseSource.secure())).kind == "secure"


def test_samplers_over_one_randomness_continue_its_stream():
    one, two = randomness(11), randomness(11)
    a, b = NoiseSource(one), NoiseSource(two)
    assert a.kind == b.kind == "seeded" and a.rng is one
    assert [a.randbits(32) for _ in range(10)] == [b.randbits(32) for _ in range(10)]
    # A second sampler over the same Randomness continues its stream (no state of its own).
    reference = NoiseSource(randomness(11))
    expected = [reference.randbits(32) for _ in range(11)]
    assert NoiseSource(one).randbits(32) == expected[10]
    # The seeded bits are PCG64 on SeedSequence(seed), as NoiseSource.seeded(seed) always drew.
    assert randomness(5).bits.words(3).tolist() == np.random.PCG64(5).random_raw(3).tolist()
    assert NoiseSource(randomness()).kind == "secure" and NoiseSource().kind == "secure"
    with pytest.raises(ValidationError, match="'rng' parameter of NoiseSource"):
        NoiseSource(3)
    with pytest.raises(ValidationError, match="'noise' parameter of T must be a Randomness"):
        check_noise(np.random.default_rng(1), owner="T")


def test_seeded_rejects_bad_seeds():
    for seed in (-1, 1.5, None, True):
        with pytest.raises(ValidationError):
            NoiseSource.seeded(seed)


def test_uniform_int_is_uniform():
    s = NoiseSource.seeded(101)
    n = 21000
    counts = np.bincount([s.uniform_int(7) for _ in range(n)], minlength=7)
    assert counts.size == 7
    assert chisquare_p(counts, np.full(7, 1 / 7)) > P_MIN
    assert s.uniform_int(1) == 0
    big = 3 ** 100
    draws = [s.uniform_int(big) for _ in range(2000)]
    assert all(0 <= d < big for d in draws)
    # The top bit-range is hit as often as it should be (mass of [2^158, 3^100) is ~0.29).
    top = sum(d >= 2 ** 158 for d in draws)
    assert abs(binomial_z(top, 2000, (big - 2 ** 158) / big)) < Z_MAX
    with pytest.raises(ValidationError):
        s.uniform_int(0)


def test_bernoulli_is_exact_at_the_ends_and_unbiased():
    s = NoiseSource.seeded(5)
    assert not any(s.bernoulli(0) for _ in range(200))
    assert all(s.bernoulli(1) for _ in range(200))
    hits = sum(s.bernoulli(Fraction(2, 7)) for _ in range(20000))
    assert abs(binomial_z(hits, 20000, 2 / 7)) < Z_MAX
    with pytest.raises(ValidationError):
        s.bernoulli(Fraction(3, 2))


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_frequencies(gamma):
    s = NoiseSource.seeded(1000 + int(gamma * 6))
    n = 20000
    hits = sum(s.bernoulli_exp(gamma) for _ in range(n))
    p = math.exp(-gamma)
    if gamma == 0:
        assert hits == n
    else:
        assert abs(binomial_z(hits, n, p)) < Z_MAX


def test_bernoulli_exp_rejects_negative():
    with pytest.raises(ValidationError):
        NoiseSource.seeded(1).bernoulli_exp(-1)


def discrete_laplace_pmf(scale: Fraction, support: np.ndarray) -> np.ndarray:
    r = math.exp(-1 / float(scale))
    return (1 - r) / (1 + r) * r ** np.abs(support)


@pytest.mark.parametrize("scale, seed", [(Fraction(3, 2), 21), (Fraction(10), 22)])
def test_discrete_laplace_goodness_of_fit(scale, seed):
    s = NoiseSource.seeded(seed)
    n = 20000
    draws = np.array([s.discrete_laplace(scale) for _ in range(n)])
    assert discrete_laplace_fit_p(draws, scale) > P_MIN
    r = math.exp(-1 / float(scale))
    var = 2 * r / (1 - r) ** 2
    full = np.arange(-2000, 2001)
    weights = discrete_laplace_pmf(scale, full)
    fourth = float((weights * full.astype(float) ** 4).sum())
    assert abs(draws.mean()) < Z_MAX * math.sqrt(var / n)
    assert abs(draws.var() - var) < Z_MAX * math.sqrt((fourth - var ** 2) / n)


def test_discrete_laplace_detects_a_ten_percent_scale_error():
    """The goodness-of-fit test above has the power the module doc claims."""
    s = NoiseSource.seeded(23)
    draws = np.array([s.discrete_laplace(Fraction(11)) for _ in range(20000)])
    support = np.arange(draws.min(), draws.max() + 1)
    counts = np.bincount(draws - support[0])
    assert chisquare_p(counts, discrete_laplace_pmf(Fraction(10), support)) < P_MIN


def test_gumbel_and_uniform01():
    s = NoiseSource.seeded(31)
    g = s.gumbel(20000)
    assert stats.kstest(g, stats.gumbel_r.cdf).pvalue > P_MIN
    u = np.array([s.uniform01() for _ in range(20000)])
    assert u.min() > 0 and u.max() < 1
    assert stats.kstest(u, stats.uniform.cdf).pvalue > P_MIN
    assert np.all(u * 2.0 ** 53 == np.round(u * 2.0 ** 53))
    assert s.gumbel(0).shape == (0,)


# -- NoiseSource: array samplers -------------------------------------------------------------

def discrete_laplace_fit_p(draws: np.ndarray, scale: Fraction) -> float:
    """χ² p-value of integer draws against the discrete Laplace pmf, tails pooled at ±max|x|."""
    width = int(np.abs(draws).max())
    support = np.arange(-width, width + 1)
    counts = np.bincount(draws + width, minlength=support.size)
    pmf = discrete_laplace_pmf(scale, support)
    r = math.exp(-1 / float(scale))
    pmf[0] = pmf[-1] = r ** width / (1 + r)  # Pr[X <= -width] = Pr[X >= width]
    assert pmf.sum() == pytest.approx(1)
    return chisquare_p(counts, pmf)


def exact_abs_moments(scale: Fraction) -> tuple[float, float]:
    """E|X| = 2p/((1-p)(1+p)) and sd(|X|) (E X^2 = 2p/(1-p)^2), p = exp(-1/scale), at 60 digits."""
    with localcontext() as ctx:
        ctx.prec = 60
        p = (-Decimal(scale.denominator) / Decimal(scale.numerator)).exp()
        mean = 2 * p / ((1 - p) * (1 + p))
        second = 2 * p / (1 - p) ** 2
        return float(mean), float((second - mean * mean).sqrt())


@pytest.mark.parametrize("scale, seed", [(Fraction(1, 3), 121), (Fraction(1), 122),
                                         (Fraction(10, 3), 123), (Fraction(10), 124)])
def test_discrete_laplace_array_goodness_of_fit(scale, seed):
    n = 200000
    draws = NoiseSource.seeded(seed).discrete_laplace_array(scale, n)
    assert draws.dtype == np.int64 and draws.shape == (n,)
    assert discrete_laplace_fit_p(draws, scale) > P_MIN
    r = math.exp(-1 / float(scale))
    var = 2 * r / (1 - r) ** 2
    full = np.arange(-2000, 2001)
    fourth = float((discrete_laplace_pmf(scale, full) * full.astype(float) ** 4).sum())
    assert abs(draws.mean()) < Z_MAX * math.sqrt(var / n)
    assert abs(draws.var() - var) < Z_MAX * math.sqrt((fourth - var ** 2) / n)


@pytest.mark.parametrize("scale, wrong, seed", [(Fraction(10, 3), Fraction(11, 3), 125),
                                                (Fraction(10), Fraction(11), 126)])
def test_discrete_laplace_array_detects_a_ten_percent_scale_error(scale, wrong, seed):
    draws = NoiseSource.seeded(seed).discrete_laplace_array(scale, 200000)
    assert discrete_laplace_fit_p(draws, wrong) < 1e-12


def test_discrete_laplace_array_reproducible_and_empty():
    a = NoiseSource.seeded(9).discrete_laplace_array(Fraction(10, 3), 5000)
    b = NoiseSource.seeded(9).discrete_laplace_array("10/3", 5000)
    c = NoiseSource.seeded(10).discrete_laplace_array(Fraction(10, 3), 5000)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    for source in (NoiseSource.seeded(1), NoiseSource.secure()):
        empty = source.discrete_laplace_array(3, 0)
        assert empty.dtype == np.int64 and empty.shape == (0,)
    # Floats are read exactly (0.1 is 1/10); numpy integer sizes are accepted.
    assert NoiseSource.seeded(2).discrete_laplace_array(0.1, np.int64(7)).shape == (7,)


@pytest.mark.parametrize("scale, size", [(0, 5), (-1, 5), (Fraction(-1, 3), 5), (True, 5),
                                         (float("nan"), 5), ("abc", 5), (None, 5), (3, -1),
                                         (3, True), (3, 2.0), (3, None), (2 ** 56 + 1, 5)])
def test_discrete_laplace_array_validation(scale, size):
    with pytest.raises(ValidationError, match="NoiseSource.discrete_laplace_array"):
        NoiseSource.seeded(1).discrete_laplace_array(scale, size)


def test_discrete_laplace_array_secure_source():
    # Not seeded, so not deterministic: a looser threshold than P_MIN keeps false alarms
    # negligible while a wrong distribution (see the power test above) still fails.
    scale = Fraction(10, 3)
    draws = NoiseSource.secure().discrete_laplace_array(scale, 20000)
    assert draws.dtype == np.int64 and draws.shape == (20000,)
    assert discrete_laplace_fit_p(draws, scale) > 1e-7


@pytest.mark.parametrize("scale, vectorized", [
    (Fraction(2 ** 40 + 1, 3), True),
    (Fraction(2 ** 62 - 1, 2 ** 10), True),  # t·V can exceed int64: the Python-int branch
    (Fraction(2 ** 62 + 1, 2 ** 12), False),  # t > 2^62: the scalar sampler in a loop
    (Fraction(2 ** 56), True),  # the largest scale accepted
])
def test_discrete_laplace_array_huge_scales(scale, vectorized, monkeypatch):
    s = NoiseSource.seeded(131)
    if not vectorized:  # prove the fallback is the path taken
        monkeypatch.setattr(s, "_discrete_laplace_array", None)
    n = 3000
    draws = s.discrete_laplace_array(scale, n)
    assert draws.dtype == np.int64 and draws.shape == (n,)
    mean, sd = exact_abs_moments(scale)
    assert mean == pytest.approx(float(scale), rel=1e-6)
    observed = float(np.abs(draws).astype(float).mean())
    assert abs(observed - mean) < Z_MAX * sd / math.sqrt(n)
    assert observed == pytest.approx(mean, rel=0.15)
    assert abs(float(draws.astype(float).mean())) < Z_MAX * math.sqrt(2) * mean / math.sqrt(n)


def test_discrete_laplace_array_tiny_scale_with_a_huge_denominator():
    # s > 2^62 takes the scalar fallback; Pr[x != 0] = 2p/(1+p) with p = exp(-2^70): never.
    draws = NoiseSource.seeded(3).discrete_laplace_array(Fraction(1, 2 ** 70), 50)
    assert draws.dtype == np.int64 and not draws.any()


def test_array_sampler_internals():
    """The vectorized building blocks: uniform integers and Bernoulli(exp(-num/den))."""
    s = NoiseSource.seeded(141)
    n = 70000
    for m in (7, 10, 2 ** 20 + 1):  # 3 and 4 bits (21 and 16 fields per word), and 21 bits
        draws = s._uniform_ints(m, n)
        assert draws.dtype == np.int64 and draws.min() >= 0 and draws.max() < m
        cells = min(m, 64)
        counts = np.bincount(draws * cells // m, minlength=cells)
        expected = np.diff((np.arange(cells + 1) * m + cells - 1) // cells) / m
        assert chisquare_p(counts, expected) > P_MIN
    big = 3 * 2 ** 61  # 63 bits; the top quarter [2^62, 3·2^61) has mass 1/3
    draws = s._uniform_ints(big, 6000)
    assert draws.min() >= 0 and draws.max() < big
    assert abs(binomial_z(int((draws >= 2 ** 62).sum()), 6000, 1 / 3)) < Z_MAX
    assert not s._uniform_ints(1, 10).any()
    for num, den in ((0, 3), (1, 3), (2, 3), (3, 3), (1, 1), (5, 7)):
        hits = s._bernoulli_exp_le1_array(np.full(n, num, dtype=np.int64), den)
        assert hits.dtype == bool
        if num == 0:
            assert hits.all()
        else:
            assert abs(binomial_z(int(hits.sum()), n, math.exp(-num / den))) < Z_MAX
    mixed = np.arange(n, dtype=np.int64) % 4  # different γ in one call
    hits = s._bernoulli_exp_le1_array(mixed, 3)
    for num in (1, 2, 3):
        chunk = hits[mixed == num]
        assert abs(binomial_z(int(chunk.sum()), chunk.size, math.exp(-num / 3))) < Z_MAX


def test_uniform01_array_and_gumbel_share_it():
    s = NoiseSource.seeded(151)
    u = s.uniform01_array(50000)
    assert u.dtype == np.float64 and u.shape == (50000,)
    assert u.min() > 0 and u.max() < 1
    assert np.all(u * 2.0 ** 53 == np.round(u * 2.0 ** 53))
    assert stats.kstest(u, stats.uniform.cdf).pvalue > P_MIN
    assert stats.kstest(u, stats.uniform(scale=1.02).cdf).pvalue < P_MIN  # power
    assert np.array_equal(NoiseSource.seeded(152).gumbel(1000),
                          -np.log(-np.log(NoiseSource.seeded(152).uniform01_array(1000))))
    assert np.array_equal(NoiseSource.seeded(153).uniform01_array(100),
                          NoiseSource.seeded(153).uniform01_array(100))
    assert s.uniform01_array(0).shape == (0,) and s.uniform01_array(0).dtype == np.float64
    secure = NoiseSource.secure().uniform01_array(1000)
    assert secure.min() > 0 and secure.max() < 1 and np.unique(secure).size == 1000
    for bad in (-1, True, 1.5, None):
        with pytest.raises(ValidationError, match="NoiseSource.uniform01_array"):
            s.uniform01_array(bad)


# -- LaplaceMechanism ----------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, sensitivity, seed", [(1, 1, 41), (0.5, 37.3, 42)])
def test_laplace_noise_distribution(epsilon, sensitivity, seed):
    mech = LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)
    x = np.random.default_rng(seed).uniform(-1000, 1000, 20000)
    y = mech.randomise(x, NoiseSource.seeded(seed))
    assert y.dtype == np.float64 and y.shape == x.shape
    assert stats.kstest(y - x, stats.laplace(scale=mech.scale).cdf).pvalue > P_MIN
    wrong = stats.laplace(scale=mech.scale * 1.1).cdf
    assert stats.kstest(y - x, wrong).pvalue < P_MIN  # the test has power against 10%
    assert mech.scale == pytest.approx(sensitivity / epsilon, rel=2e-6)
    gamma = float(mech.granularity)
    assert np.all(y / gamma == np.round(y / gamma))


def test_laplace_outputs_do_not_depend_on_low_bits():
    """Mironov's attack needs outputs off the grid; every output is a multiple of γ."""
    mech = LaplaceMechanism(epsilon=1, sensitivity=1, granularity=2 ** -10)
    x = np.full(5000, 0.1) + np.arange(5000) * 1e-12
    y = mech.randomise(x, NoiseSource.seeded(43))
    assert np.all(y * 1024 == np.round(y * 1024))


def test_laplace_epsilon_ratio_on_neighbouring_inputs():
    eps, delta, n = 1.0, 1.0, 100000
    mech = LaplaceMechanism(epsilon=eps, sensitivity=delta)
    a = mech.randomise(np.zeros(n), NoiseSource.seeded(51))
    b = mech.randomise(np.full(n, delta), NoiseSource.seeded(52))
    edges = np.arange(-8, 9.01, 0.5)
    ca, _ = np.histogram(a, edges)
    cb, _ = np.histogram(b, edges)
    ok = (ca >= 200) & (cb >= 200)
    assert ok.sum() >= 10
    log_ratio = np.abs(np.log(ca[ok] / cb[ok]))
    se = np.sqrt(1 / ca[ok] + 1 / cb[ok])
    assert np.all(log_ratio <= eps + Z_MAX * se)
    assert log_ratio.max() >= 0.8 * eps  # the noise is not larger than it needs to be


def test_laplace_default_granularity_and_exact_scale():
    mech = LaplaceMechanism(epsilon=1, sensitivity=1)
    assert mech.granularity == Fraction(1, 2 ** 20)
    assert mech.scale_grid == 2 ** 20 + 1
    assert mech.epsilon == 1 and mech.name == "laplace"
    tiny = LaplaceMechanism(epsilon=Fraction(1, 10), sensitivity=1e-9)
    assert tiny.granularity == Fraction(1, 2 ** 30)
    zero = LaplaceMechanism(epsilon=0.5, sensitivity=0)
    assert zero.granularity == Fraction(1, 2 ** 30)
    assert zero.scale == 2.0 ** -30 / 0.5
    big = LaplaceMechanism(epsilon=0.1, sensitivity=37.3)
    assert big.granularity == Fraction(1, 4096)  # 373 / 2^20 rounded down to a power of two
    assert big.scale <= (37.3 + 1 / 4096) / 0.1
    info = big.describe()
    assert info["epsilon"] == "1/10" and info["sensitivity"] == "373/10"
    assert info["epsilon_float"] == 0.1 and info["name"] == "laplace"
    custom = LaplaceMechanism(epsilon=1, sensitivity=2, granularity="1/8")
    assert custom.scale_grid == 17 and custom.scale == 17 / 8


def test_laplace_handles_extreme_values():
    mech = LaplaceMechanism(epsilon=1, sensitivity=1)
    y = mech.randomise([1e300, -1e300, 0.0], NoiseSource.seeded(1))
    assert y[0] == 1e300 and y[1] == -1e300 and abs(y[2]) < 50
    y = mech.randomise([1.7e308, -1.7e308], NoiseSource.seeded(2))  # x/γ overflows a double
    assert y.tolist() == [1.7e308, -1.7e308]
    assert mech.randomise(np.zeros((2, 3)), NoiseSource.seeded(1)).shape == (2, 3)
    assert mech.randomise([], NoiseSource.seeded(1)).shape == (0,)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(epsilon=-1, sensitivity=1),
     "The 'epsilon' parameter of LaplaceMechanism must be a positive number; got -1."),
    (dict(epsilon=0, sensitivity=1), "'epsilon'"),
    (dict(epsilon=float("nan"), sensitivity=1), "'epsilon'"),
    (dict(epsilon=1, sensitivity=-1), "'sensitivity'"),
    (dict(epsilon=1, sensitivity=float("nan")), "'sensitivity'"),
    (dict(epsilon=1, sensitivity=float("inf")), "'sensitivity'"),
    (dict(epsilon=1, sensitivity=1, granularity=0.3), "'granularity'"),
    (dict(epsilon=1, sensitivity=1, granularity=0), "'granularity'"),
])
def test_laplace_validation(kwargs, fragment):
    with pytest.raises(ValidationError, match=fragment.replace("(", r"\(").replace(".", r"\.")):
        LaplaceMechanism(**kwargs)


def test_laplace_validation_of_inputs():
    mech = LaplaceMechanism(epsilon=1, sensitivity=1)
    with pytest.raises(ValidationError):
        mech.randomise([1.0, float("nan")], NoiseSource.seeded(1))
    with pytest.raises(ValidationError):
        mech.randomise(["a"], NoiseSource.seeded(1))
    with pytest.raises(ValidationError):
        mech.randomise([1.0], noise=np.random.default_rng(1))
    with pytest.raises(TypeError):
        LaplaceMechanism(1, 1)


# -- ExponentialMechanism ------------------------------------------------------------------

def test_exponential_probabilities_closed_form():
    u = np.array([0.0, 1.0, 2.5, -3.0, 0.25])
    for monotonic, divisor in ((False, 2 * 0.5), (True, 0.5)):
        mech = ExponentialMechanism(epsilon=0.8, sensitivity=0.5, monotonic=monotonic)
        p = mech.probabilities(u)
        w = np.exp(0.8 * u / divisor)
        np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12)
        assert p.sum() == pytest.approx(1, abs=1e-12)
    assert mech.name == "exponential" and mech.epsilon == Fraction(4, 5)
    assert mech.describe()["epsilon"] == "4/5"


def test_exponential_does_not_overflow():
    mech = ExponentialMechanism(epsilon=10, sensitivity=1)
    u = np.array([1e6, -1e6, 1e6 - 1, 0.0, 1e308, -1e308])
    p = mech.probabilities(u)
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1)
    assert p[4] == 1.0
    assert mech.select(u, NoiseSource.seeded(1)) == 4
    p = mech.probabilities([1e6, -1e6, 1e6 - 1])
    np.testing.assert_allclose(p, [1 / (1 + math.exp(-5)), 0, math.exp(-5) / (1 + math.exp(-5))])


def test_exponential_selection_frequencies():
    mech = ExponentialMechanism(epsilon=1, sensitivity=1)
    u = np.array([0.0, 1.0, 2.0, 3.0, 0.5, -2.0])
    s = NoiseSource.seeded(61)
    n = 20000
    counts = np.bincount([mech.select(u, s) for _ in range(n)], minlength=u.size)
    assert chisquare_p(counts, mech.probabilities(u)) > P_MIN
    flat = ExponentialMechanism(epsilon=Fraction(1, 10), sensitivity=1)  # power check
    assert chisquare_p(counts, flat.probabilities(u)) < P_MIN


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_epsilon_ratio_on_neighbours(monotonic):
    eps, delta = 0.7, 2.0
    mech = ExponentialMechanism(epsilon=eps, sensitivity=delta, monotonic=monotonic)
    rng = np.random.default_rng(71)
    worst = 0.0
    for _ in range(500):
        u = rng.normal(0, 5, size=rng.integers(2, 30))
        if monotonic:  # neighbours move every utility in the same direction, by <= Δ
            d = rng.uniform(0, delta, u.size) if rng.random() < 0.5 else np.zeros(u.size)
            d[rng.integers(u.size)] = delta  # the extreme: one utility up by Δ
            d *= rng.choice([-1, 1])
        elif rng.random() < 0.5:  # any move by <= Δ per utility
            d = rng.uniform(-delta, delta, u.size)
        else:  # the extreme: one utility up by Δ, all others down by Δ
            d = np.full(u.size, -delta)
            d[rng.integers(u.size)] = delta
        assert np.all(np.abs(d) <= delta)
        p, q = mech.probabilities(u), mech.probabilities(u + d)
        worst = max(worst, float(np.max(np.abs(np.log(p / q)))))
    assert worst <= eps * (1 + 1e-12)
    assert worst >= 0.9 * eps  # the bound is approached: no wasted privacy


@pytest.mark.parametrize("kwargs", [dict(epsilon=1, sensitivity=0), dict(epsilon=0, sensitivity=1),
                                    dict(epsilon=1, sensitivity=-2),
                                    dict(epsilon=1, sensitivity=1, monotonic="yes")])
def test_exponential_validation(kwargs):
    with pytest.raises(ValidationError):
        ExponentialMechanism(**kwargs)


@pytest.mark.parametrize("utilities", [[], [[1.0, 2.0]], [1.0, float("nan")], [float("inf")],
                                       ["a"]])
def test_exponential_rejects_bad_utilities(utilities):
    mech = ExponentialMechanism(epsilon=1, sensitivity=1)
    with pytest.raises(ValidationError):
        mech.probabilities(utilities)
    with pytest.raises(ValidationError):
        mech.select(utilities, NoiseSource.seeded(1))


# -- RandomizedResponse --------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, m", [(1, 2), (0.5, 5), (3, 12), (Fraction(1, 100), 3)])
def test_rr_probability_matrix(epsilon, m):
    rr = RandomizedResponse(epsilon=epsilon, categories=list(range(m)))
    pm = rr.probability_matrix()
    assert pm.shape == (m, m)
    np.testing.assert_allclose(pm.sum(axis=1), 1, rtol=0, atol=1e-12)
    ratios = pm[:, None, :] / pm[None, :, :]
    assert ratios.max() == pytest.approx(math.exp(float(epsilon)), rel=1e-12)
    assert rr.keep_probability == pytest.approx(
        math.exp(float(epsilon)) / (math.exp(float(epsilon)) + m - 1), rel=1e-12)


def test_rr_empirical_frequencies():
    cats = ["a", "b", "c", "d"]
    rr = RandomizedResponse(epsilon=1, categories=cats)
    s = NoiseSource.seeded(81)
    pm = rr.probability_matrix()
    for true in (0, 2):
        out = rr.randomise([cats[true]] * 40000, s)
        assert out.dtype.kind == "U"
        counts = np.array([(out == c).sum() for c in cats])
        assert chisquare_p(counts, pm[true]) > P_MIN
        wrong = RandomizedResponse(epsilon=1.1, categories=cats).probability_matrix()[true]
        assert chisquare_p(counts, wrong) < P_MIN
    mixed = rr.randomise(np.array(["a", "b", "d"]), s)
    assert mixed.shape == (3,) and set(mixed) <= set(cats)
    assert rr.epsilon == 1 and rr.name == "randomized-response"
    assert rr.describe()["categories"] == 4


def test_rr_validation():
    with pytest.raises(ValidationError, match="not one of"):
        RandomizedResponse(epsilon=1, categories=["a", "b"]).randomise(["c"], NoiseSource.seeded(1))
    for cats in (["a"], ["a", "a"], "ab", 5):
        with pytest.raises(ValidationError):
            RandomizedResponse(epsilon=1, categories=cats)
    with pytest.raises(ValidationError):
        RandomizedResponse(epsilon=0, categories=["a", "b"])
    with pytest.raises(ValidationError, match="'epsilon'"):
        RandomizedResponse(epsilon=50, categories=["a", "b"])
    assert RandomizedResponse(epsilon=20, categories=["a", "b"]).keep_probability < 1
