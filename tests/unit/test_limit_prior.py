"""Issue 42: MGPS decisions under the limit of a prior held at its bound, and RR0.

The posterior quantities are checked against scipy's distributions written out independently
(a gamma mixture; a gamma plus a point mass), on the tables of tests/unit/test_disproportionality.
"""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import medanon.metrics.disproportionality as dp
from medanon.errors import ValidationError
from medanon.metrics.disproportionality import (LIMIT_FLIP_COLUMN, GpsPrior, LimitPrior,
                                                fit_gps_prior, limit_scores, posterior_h0, screen)
from medanon.metrics.signal_table import signal_table

from .test_disproportionality import _point_mass_table


def _mixture_cdf(x, n, e, prior: GpsPrior):
    """P(λ <= x | n) of the two-gamma posterior, from scipy's negative binomial and gamma."""
    l1 = math.log(prior.p) + stats.nbinom.logpmf(n, prior.alpha1, prior.beta1 / (prior.beta1 + e))
    l2 = math.log1p(-prior.p) + stats.nbinom.logpmf(n, prior.alpha2,
                                                     prior.beta2 / (prior.beta2 + e))
    w = math.exp(l1 - np.logaddexp(l1, l2))
    return (w * stats.gamma.cdf(x, prior.alpha1 + n, scale=1 / (prior.beta1 + e))
            + (1 - w) * stats.gamma.cdf(x, prior.alpha2 + n, scale=1 / (prior.beta2 + e)))


def _limit_cdf(x, n, e, prior: LimitPrior):
    """P(λ <= x | n) under a gamma plus a point mass, from scipy's distributions."""
    l1 = math.log(prior.p) + stats.nbinom.logpmf(n, prior.alpha, prior.beta / (prior.beta + e))
    l2 = math.log1p(-prior.p) + stats.poisson.logpmf(n, prior.lam * e)
    w = math.exp(l1 - np.logaddexp(l1, l2))
    return (w * stats.gamma.cdf(x, prior.alpha + n, scale=1 / (prior.beta + e))
            + (1 - w) * float(x >= prior.lam))


def _quantile(cdf, q):
    """The smallest x with cdf(x) >= q, by bisection on log x (independent of the library)."""
    lo, hi = math.log(1e-9), math.log(1e6)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cdf(math.exp(mid)) >= q:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


NE = [(0, 0.5), (1, 1.0), (2, 4.14), (5, 2.0), (19, 4.14), (40, 10.0), (3, 3.0), (8, 0.7)]


@pytest.mark.parametrize("rr0", [1.0, 1.5, 0.8])
def test_posterior_h0_is_the_posterior_cdf_at_rr0(rr0):
    """P(λ <= RR0 | n) is the two-gamma posterior's CDF at RR0 (scipy), and --rr0 1.5 moves it
    as that CDF does: up for every pair, since the CDF rises."""
    prior = GpsPrior(0.2, 0.1, 2.0, 4.0, 1 / 3)
    n = np.array([x for x, _ in NE])
    e = np.array([y for _, y in NE])
    got = posterior_h0(n, e, prior, rr0)
    want = [_mixture_cdf(rr0, a, b, prior) for a, b in NE]
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    if rr0 > 1:
        assert np.all(got >= posterior_h0(n, e, prior) - 1e-15)


def test_limit_scores_are_the_gamma_plus_point_mass_posterior():
    """EB05, EB95, EBGM and P(λ <= RR0 | n) under a gamma plus a point mass, against the CDF
    written from scipy's distributions: quantiles to the bisection's precision (the CDF jumps at
    λ, so a quantile lands on λ exactly while the jump covers it)."""
    prior = LimitPrior(1.5, 0.7, 1.0065, 0.036)
    n = np.array([x for x, _ in NE])
    e = np.array([y for _, y in NE])
    got = limit_scores(n, e, prior, rr0=1.5)
    for i, (a, b) in enumerate(NE):
        cdf = lambda x, a=a, b=b: _limit_cdf(x, a, b, prior)  # noqa: E731
        assert got["eb05"][i] == pytest.approx(_quantile(cdf, 0.05), rel=1e-7)
        assert got["eb95"][i] == pytest.approx(_quantile(cdf, 0.95), rel=1e-7)
        assert got["p_h0"][i] == pytest.approx(cdf(1.5), rel=1e-9, abs=1e-12)
    # a pair the data put in the point mass keeps its RR: EBGM is λ to the weight's precision
    assert got["ebgm"][0] == pytest.approx(prior.lam, rel=0.05)


def test_rr0_is_validated_with_its_name():
    with pytest.raises(ValidationError, match="'rr0' parameter of posterior_h0"):
        posterior_h0([1], [1.0], GpsPrior(0.2, 0.1, 2.0, 4.0, 0.3), 0)
    with pytest.raises(ValidationError, match="'rr0' parameter of signal_table"):
        signal_table({"2020Q1": pd.DataFrame({"case_id": ["1"], "drugs": ["A"],
                                              "reactions": ["x"]})}, rr0=-1)


def test_a_held_fit_carries_its_limit_and_flags_exactly_the_decisions_that_differ(monkeypatch):
    """On a table drawn from a point mass the fit is held at 100 and carries the limit it tends
    to; ``limit_prior_flips`` names, pair by pair, each decision (EB05 >= 2, EB95 < 2, the FDR
    list) that differs between the held prior and that limit, decided here from scipy's
    distributions, and is empty everywhere else."""
    monkeypatch.setattr(dp, "SQUASH_ABOVE", 10**9)
    n, e = _point_mass_table(6, pairs=8000)
    fit = fit_gps_prior(n, e, starts=2)
    assert fit.limit is not None and "no finite maximum" in fit.message
    assert fit.limit.lam == pytest.approx(1.0, abs=0.05)
    table = pd.DataFrame({"n": n, "e": e, "a": n, "b": n, "c": n, "d": n + 1})
    out, prior = screen(table, prior=fit)
    flips = out[LIMIT_FLIP_COLUMN].to_numpy()
    assert (flips != "").any()   # a table on which the bound matters
    # decisions recomputed independently for the pairs near the EB05 threshold and a sample
    rng = np.random.default_rng(0)
    near = np.flatnonzero((out["eb05"] > 1.0) & (out["eb05"] < 4.0))
    for i in np.union1d(near[:40], rng.choice(len(out), 40, replace=False)):
        a, b = int(n[i]), float(e[i])
        eb05_limit = _quantile(lambda x, a=a, b=b: _limit_cdf(x, a, b, fit.limit), 0.05)
        eb95_limit = _quantile(lambda x, a=a, b=b: _limit_cdf(x, a, b, fit.limit), 0.95)
        named = set(filter(None, flips[i].split(",")))
        assert ("eb05" in named) == ((out["eb05"][i] >= 2) != (eb05_limit >= 2)), i
        assert ("eb95" in named) == ((out["eb95"][i] < 2) != (eb95_limit < 2)), i
    # the FDR list under the limit, from its own P(λ <= 1 | n)
    p_limit = limit_scores(n, e, fit.limit)["p_h0"]
    listed_limit = dp.bayesian_fdr(p_limit, 0.05)[1]
    fdr_named = np.array(["fdr" in f.split(",") for f in flips])
    assert np.array_equal(fdr_named, listed_limit != out["signal_mgps_fdr"].to_numpy())


def test_a_fit_with_a_maximum_has_no_limit_and_flags_nothing():
    n, e = dp_simulate()
    fit = fit_gps_prior(n, e, starts=2)
    assert fit.limit is None
    table = pd.DataFrame({"n": n, "e": e, "a": n, "b": n, "c": n, "d": n + 1})
    out, _ = screen(table, prior=fit)
    assert (out[LIMIT_FLIP_COLUMN] == "").all()


def dp_simulate():
    from .test_disproportionality import simulate
    return simulate(5, 3000, (0.2, 0.1, 2.0, 4.0, 1 / 3))


def test_one_plain_warning_per_run_counts_the_held_scopes_and_their_flips():
    """The sidecar's warnings: one sentence for all the scopes held at their bound, with how many
    pair decisions differ under the limit, and one for fits that stopped short for another
    reason; no optimizer words in either (they stay in each scope's prior.message)."""
    from medanon.metrics.signal_table import _prior_warnings

    def entry(scope, period, converged, lam=None, flips=0):
        limit = None if lam is None else {"lam": lam}
        out = {"scope": scope, "period": period,
               "prior": {"converged": converged, "limit": limit,
                         "message": "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"}}
        if lam is not None:
            out["limit_prior_flips"] = flips
        return out

    entries = [entry("dedup", "2020Q1..2020Q4", True), entry("quarter", "2020Q1", False, 1.002, 3),
               entry("quarter", "2020Q2", False, 1.01, 0), entry("quarter", "2020Q3", False),
               {"scope": "quarter", "period": "2020Q4", "prior": None}]
    warnings = _prior_warnings(entries)
    assert len(warnings) == 2
    held, short = warnings
    assert "no finite maximum in 2 of 4 scope(s)" in held and "3 pair decision(s)" in held
    assert "λ 1 to 1.01" in held and LIMIT_FLIP_COLUMN in held
    assert "stopped before a maximum in 1 of 4 scope(s) (quarter 2020Q3)" in short
    assert not any("PGTOL" in w for w in warnings)
    assert _prior_warnings([entry("dedup", "x", True)]) == []
