"""Disproportionality screening of every drug–reaction pair, as FDA (MGPS) and WHO-UMC (BCPNN) do.

:mod:`medanon.metrics.signals` counts a few named rules; this module screens *all* pairs of a
release, as the pharmacovigilance centres screen their databases: the FDA with the Multi-item
Gamma Poisson Shrinker (MGPS: EBGM and its 5th percentile EB05), the Uppsala Monitoring Centre
with the Bayesian Confidence Propagation Neural Network (BCPNN: the information component IC and
its 2.5th percentile IC025), both beside the PRR/ROR of Evans et al. 2001. Pure statistics on
count arrays, plus the counting of pairs on published rows (:func:`pair_counts`).

**Counts.** One published row is one report. For a drug D and a reaction R, over the reports
that list at least one drug and at least one reaction (``n_total`` of them)::

    n          reports listing D and R                 (a of the 2×2 table)
    n_drug     reports listing D (and some reaction)   (a + b)
    n_reaction reports listing R (and some drug)       (a + c)
    E = n_drug · n_reaction / n_total                  (expected n under independence)

**MGPS** (DuMouchel 1999). Each pair's count is Poisson with mean λ·E, and the relative
reporting ratios λ of all pairs are drawn from one prior, a mixture of two gammas (rate form)::

    λ ~ p · Gamma(α1, β1) + (1 − p) · Gamma(α2, β2)

so that the count is a mixture of two negative binomials::

    f(n; α, β, E) = Γ(α + n) / (Γ(α) n!) · (β / (β + E))^α · (E / (β + E))^n
    P(N = n) = p · f(n; α1, β1, E) + (1 − p) · f(n; α2, β2, E)

The prior θ = (α1, β1, α2, β2, p) is estimated by maximum marginal likelihood over the pairs
(:func:`fit_gps_prior`). Given N = n, the posterior of λ is again a two-gamma mixture::

    λ | n ~ Qn · Gamma(α1 + n, β1 + E) + (1 − Qn) · Gamma(α2 + n, β2 + E)
    Qn = p f(n; α1, β1, E) / [p f(n; α1, β1, E) + (1 − p) f(n; α2, β2, E)]

and the screening statistics are (DuMouchel 1999, eq. for EBGM and the EB05 percentile)::

    E[log λ | n] = Qn [ψ(α1 + n) − log(β1 + E)] + (1 − Qn) [ψ(α2 + n) − log(β2 + E)]
    EBGM = exp(E[log λ | n])                    (ψ: digamma; the same as 2^E[log2 λ | n])
    EB05, EB95: the 5th and 95th percentiles of λ | n
    signal (FDA practice, Szarfman et al. 2002):  EB05 >= 2

**BCPNN** (Bate et al. 1998) with the shrinkage of Norén et al. 2006: the information component
and its lower 95% credibility bound from the gamma approximation of its posterior (Norén,
Hopstadius & Bate 2013)::

    IC    = log2((n + ½) / (E + ½))
    IC025 = log2(G⁻¹(0.025; shape n + ½, rate E + ½))
    signal (WHO-UMC practice):  IC025 > 0

**PRR, ROR, χ²** of the pair's 2×2 table (a = n, b = n_drug − n, c = n_reaction − n,
d = n_total − n_drug − n_reaction + n) with exactly the conventions of
:mod:`medanon.metrics.signals` (0 when a < 3, ∞ and undefined cases, Yates χ²), and the
Evans/MHRA signal rule of :func:`medanon.metrics.signals.is_signal`: a ≥ 3 and (PRR = ∞ or
(PRR ≥ 2 and χ² ≥ 4)).

Choices and deviations:

1. **Which likelihood.** :func:`fit_gps_prior` maximizes DuMouchel's likelihood over the pairs
   with n ≥ ``min_count``, each term divided by P(N ≥ min_count) (the truncated likelihood of
   DuMouchel & Pregibon 2001). The default ``min_count=1`` is the zero-truncated likelihood over
   the observed pairs, the FDA/openEBGM convention (Canida & Ihrie 2017), and what a table of
   observed pairs allows: the zero cells of the drug × reaction table are never listed.
   ``min_count=0`` uses the plain likelihood of the pairs given, which is DuMouchel's only if the
   caller lists the zero cells too. Pairs below ``min_count`` are still scored.
2. **Squashing.** The likelihood is summed over distinct (n, E) pairs weighted by their
   multiplicity: the same value as over all pairs, faster. A table with more than
   :data:`SQUASH_ABOVE` distinct points (a stratum-adjusted E makes nearly every pair's E its
   own: 400k points for 100k Zipf reports, against 95k with the crude E) is squashed
   approximately for the fit, as DuMouchel & Pregibon 2001 and openEBGM's ``autoSquash`` do,
   but far finer: within each n, the E are binned on a logarithmic grid of relative width
   :data:`SQUASH_WIDTH` (0.1%), each bin weighted by its pairs and placed at their mean E. The
   fitted prior is that of the binned likelihood (its standard errors too); ``GpsPrior.loglik``
   is the exact one at it, and every pair's EBGM, quantiles and posterior use its own E.
   Measured: on that Zipf table the fit takes 2.3 s instead of 47.3 s, the prior agrees to 5 digits, the exact
   log-likelihoods differ by 1e-8, EBGM by 5e-8 (relative), no EB05 ≥ 2 decision moves; on
   the 60 scopes of a 24 × 20,000 ``evaluate`` (10,000 is the threshold so that those tables
   are binned too) every signal count of every scope and statistic is unchanged, the priors'
   parameters within 2.6e-5 (relative), the log-likelihoods within 0.01.
3. **Optimizer.** L-BFGS-B with the analytic gradient, on (log α1, log β1, log α2, log β2,
   logit p), bounded to α, β ∈ [1e-6, ``param_limit``] and p ∈ [1e-6, 1 − 1e-6]; the
   objective is the mean negative log-likelihood per pair (tolerances do not depend on the
   table's size). The default ``param_limit`` is 1e4 (:data:`PARAM_LIMIT`), not openEBGM's
   100: on an 8 × 3,000 synthetic series the pooled maximum-likelihood prior has α2 ≈ 272,
   β2 ≈ 269, the same with bounds 1e3, 1e4, 1e5 and 1e6, and 31 log-likelihood units above the
   fit cut at 100 (issue 32; no EB05 ≥ 2 decision moves there); on the 100,000-report table of
   ``benchmarks/bench_screening.py --rows zipf`` the optimum has α2 ≈ 222, β2 ≈ 241, 107 units
   above the cut fit, and 7 pairs more signal (3,535 against 3,528, none fewer). The likelihood
   of some tables has no maximum at all (measured: each single quarter of that series, about
   3,000 reports, and each quarter of a 24 × 20,000 store): it keeps rising as one component
   becomes a point mass (α and β → ∞ at a fixed ratio); such fits are found and held at 100
   (choice 3a), and a fit that still ends at ``param_limit`` is reported, not accepted: it is
   not ``converged``, its message names the parameters at the bound, and it has no standard
   errors (choice 4).
   Several starts: DuMouchel's published start (α1, β1, α2, β2, p) = (0.2, 0.1, 2, 4, 1/3) first,
   then starts spread log-uniformly (α1, β1 in [0.02, 2], α2, β2 in [0.5, 20], p in [0.05, 0.95])
   from ``seed`` (it only spreads starts). The fit with the highest log-likelihood is kept.
   A ``warm_start`` prior (a fit of a larger table the data belong to, e.g. the pooled series
   for one of its quarters or strata) is tried first, before DuMouchel's: screening fits each
   sub-scope from its side's pooled prior and DuMouchel's start only
   (:class:`medanon.metrics.screening.ScreeningOptions`, ``scope_starts``), a quarter of the
   work of 8 spread starts (issue 30).
3a. **Point-mass guard: two stages.** Every start is fitted first under openEBGM's bound 100
   (:data:`STAGE_LIMIT`, or ``param_limit`` if lower). A best fit inside it is the fit. A best
   fit with a shape or rate at 100 either has a finite maximum beyond it, or has none: its
   likelihood rises for ever as a component tends to a point mass. Walking such a fit to 1e4
   costs many iterations per start (on a 24-quarter × 20,000-report store, every quarter's fit:
   its 35 fits took 15.9 s CPU with every start walked to 1e4, 8.9 s under the bound 100 alone,
   measured back to back on a loaded machine), so the two are told apart first (14.0 s: the 24
   quarters held at 6.5 s against 5.6 s at 100 alone; the pooled table and the 10 strata, whose
   maxima lie beyond 100, pay for the limit fit and the continuation).
   *What:* a fit with one component's shape α or rate β at the bound, neither at the floor
   1e-6, its weight above the floor (on the ray of a point mass at λ the rate reaches the bound
   first when λ < 1: measured on 4 of the 8 quarters of the 8 × 3,000 series). *How:*
   that component's limit as α, β → ∞ at the ratio λ = α/β is a point mass at λ, whose count is
   Poisson(λE); the limit model (the other gamma, the point mass at λ, the weight) is fitted
   from the bounded fit (L-BFGS-B to a relative change of 1e-10, the other gamma under the same
   bound), giving the limit's
   log-likelihood L∞ (the supremum of the likelihood along that component's ray), and at its
   optimum the score U = d log L/dτ of τ = 1/α at τ = 0 is computed exactly: per pair
   s(n) = ((n − λE)² − n)/2 weighted by the point mass's posterior weight (the overdispersion
   score of Dean & Lawless 1989), plus the truncation's term (choice 1). U is the derivative of
   the profile likelihood at the point mass (the other parameters at their optimum there), so
   U <= 0 says the likelihood approaches L∞ from below. *Decision:* L∞ above the bounded fit and
   U <= 0: **no finite maximum**; the bounded fit is kept (held at 100, as openEBGM would have
   it, at the cost of the fit at 100 plus one small fit), not ``converged``, ``param_limit``
   100, and its message says ``no finite maximum: component k tends to a point mass at λ=…``
   with L∞ and the gap. Otherwise a finite maximum lies beyond 100 (U > 0: a gamma of finite shape beats the
   point mass near it; or L∞ below the bounded fit, which rises beyond 100): the best start
   is continued from its bounded fit under ``param_limit``; if that continuation ends below
   L∞ (it found a maximum lower than the limit, which the finite maximum exceeds) a second run
   starts from the limit's fit with the component's shape (rate if λ < 1) at ``param_limit``,
   and the better is kept (measured: the pooled 24 × 20,000 table, whose continuation stops at
   α2 ≈ 494, 75.7 units below the maximum at α2 ≈ 5,321). *Why this test:* an optimum beyond 100 is
   itself close to a point mass (α2 ≈ 272 on the 8 × 3,000 series), and L∞ alone misleads:
   there L∞ is 7.2 units above the fit at 100 while the finite optimum is 31.3 above it; U is
   +2.0e4 there, and −2.3e3 to −2.2e4 on each of the 24 quarters of the 24 × 20,000 store
   (none with a maximum: their likelihoods rise on with the bounds 1e4 and 1e6), +3.0e4 to
   +3.5e5 on its pooled table and its 10 strata (all with a finite maximum, α2 from 241 to
   5,321, the same under the bound 1e6). It is deterministic (no random start), and two facts
   of one profile do not exclude a profile that rises above L∞ and falls back before rising to
   it: a finite maximum hidden that way is not looked for. *Checked before it is claimed*
   (issue 42): along the ray of the limit's fit (the other parameters at the limit's optimum,
   the component a gamma of mean λ with its larger parameter at 100·10^j, j = 0..4) the
   log-likelihood must not fall (by more than :data:`AGREEMENT_TOLERANCE`) and must stay at or
   below L∞; otherwise the claim is not made and the fit is continued as for a finite maximum.
   When the claim holds, the held fit is also refitted under the bound from the limit's fit
   carried back to it (the component's larger parameter at 100), and the better of the two is
   kept: the starts can end in a poorer optimum at the bound (measured: 64 units below on a
   20,000-pair table drawn from a point mass, where the ray from that poorer fit rose to
   c = 10 and fell again, so the claim read wrong against the fit it was printed with).
   A table drawn from a point mass
   need not lack a maximum (the score's sign is then about as often positive, measured on
   simulated tables): such a fit is continued, and its maximum is often at a shape so large
   that it ends at or near ``param_limit``, not converged (choice 4). On the 8 quarters of the
   8 × 3,000 series every fit is held. The agreement of the starts
   (:attr:`GpsPrior.agreeing`) is counted in the first stage; ``starts`` does not count the
   continuation.
4. **Convergence.** :attr:`GpsPrior.converged` holds when the best start's optimizer did not
   stop at its iteration limit (``maxiter``) and the largest component of its projected
   gradient (of the mean log-likelihood, in the transformed coordinates; a component pushing
   against an active bound counts as 0) is at most :data:`GRADIENT_TOLERANCE`. (L-BFGS-B may
   end on a failed line search once it is at the optimum to machine precision: that counts as
   converged when the gradient says so.) :attr:`GpsPrior.agreeing`
   counts the starts whose log-likelihood is within :data:`AGREEMENT_TOLERANCE` of the best
   (starts that found the same optimum, or an equally good one). A fit with a parameter at a
   bound (α or β at ``param_limit`` or at the floor 1e-6, p at 1e-6 or 1 − 1e-6) is a boundary
   solution, not a maximum of the likelihood, and is not converged either (as openEBGM counts a
   boundary solution a failure); :attr:`GpsPrior.message` names each such parameter and its
   bound (a component with p at its bound is effectively absent). Screening still uses such a
   prior (its EB05 decisions hardly move: measured on the quarters above, none of 6 per
   quarter between the bounds 100, 1e4 and 1e5) and reports its fit beside it.
5. **Labels.** The two components are exchangeable; the fitted prior is written with component 1
   the minority one (p ≤ ½), as DuMouchel's published FDA fit (p = 0.097) is.
6. **Quantiles** (EB05, EB95, any q) solve F(x) = q for the posterior mixture CDF
   F(x) = Qn·P(a1, b1·x) + (1 − Qn)·P(a2, b2·x) (P: regularized lower incomplete gamma),
   vectorized: the root lies between the two components' own q-quantiles (F is between their
   CDFs), and a Newton iteration on log x, safeguarded by bisection of that bracket, runs until
   the step on log x is below :data:`QUANTILE_TOLERANCE` (1e-10: a relative error of about 1e-10
   on x). A one-component posterior (Qn = 0 or 1) returns that gamma's quantile directly.
   The bracket decides EB05 ≥ 2 alone for a pair whose larger component quantile is below 2
   (``screened_columns(quantiles=False)``, what the series screening uses: 98% of the pairs
   of a 24 × 20,000 ``evaluate``); the other pairs, and any pair shown, are solved, each
   to the value a solve of the whole table gives it (every step is elementwise; issue 43).
7. **E for BCPNN** is the same E as MGPS (the WHO-UMC's expected count); its credibility bound
   is the gamma approximation of Norén et al. 2013, not the exact BCPNN posterior.
8. **Which reports count.** :func:`pair_counts` keeps only the reports that list at least one
   drug and at least one reaction (the database of the screening); :func:`medanon.metrics.
   signals.contingency` counts every row of a rule's population. Terms are matched
   case-insensitively (``str.casefold``) with surrounding spaces ignored; a report counts once
   per pair however often and in however many drug columns a term is listed. The suppression
   mark ``*`` and empty cells are no term. A term is shown with its spelling first seen in the
   rows (row order, then column and cell order), a drug upper-cased (FAERS writes drug names in
   capitals; MedDRA reaction terms keep their case).
9. **Standard errors** (:attr:`GpsPrior.standard_errors`, as openEBGM offers with
   ``exploreHypers(std_errors = TRUE)``)
   come from the observed information: the Hessian of the total log-likelihood at the optimum
   in the optimizer's coordinates, by central differences (step 1e-4) of the
   analytic gradient, symmetrized and inverted, then carried to (α1, β1, α2, β2, p) by the
   delta method (dα/d log α = α, dp/d logit p = p (1 − p)). They are asymptotic: reliable when
   the table has many pairs, the components are well apart and the optimum is interior
   (measured: refits on 40 simulated tables of 20,000 pairs from a DuMouchel-like prior have
   standardized errors of root mean square 0.86-1.08; with overlapping components the
   estimator is far from normal). Undefined (None) at a fit that is not converged (at a bound,
   or stopped early) and when the information is not positive definite. A standard error far
   above its parameter flags a component the data hardly identify (e.g. independent
   reporting, every λ = 1: an interior fit with p ≈ 1e-5 and β1's standard error 3e10).
10. **Stratum-adjusted E** (``strata`` of :func:`pair_counts` / :func:`count_pairs`): E is
   DuMouchel's Σ_s n_drug,s·n_reaction,s/n_total,s over the strata of the screened reports
   (those listing a drug and a reaction), FDA's MGPS adjustment for age, sex and year; the 2×2
   table (a, b, c, d) stays crude, so PRR, ROR and χ² are crude. Which stratum a published
   report is in is the caller's reading (:mod:`medanon.metrics.signal_table`).
11. **Decisions under a false-discovery rate** (``fdr`` of :func:`screen`). MGPS:
   ``p_h0_mgps`` = P(λ ≤ 1 | n) under the pair's posterior mixture; pairs sorted by it (ties in
   table order), the Bayesian FDR of the first k is the mean of their ``p_h0_mgps`` (Ahmed et
   al. 2009, PhViD's GPS); ``fdr_mgps`` is that mean at the pair's rank and
   ``signal_mgps_fdr`` keeps the longest list whose FDR is at most ``fdr``. PRR: ``p_prr`` is
   the one-sided p-value of log PRR > 0 (normal approximation, +½ in every cell so that every
   table has one), ``q_prr`` its Benjamini–Hochberg adjusted value over every pair screened
   (m = all pairs, the conservative choice: pairs with a < 3 cannot signal but are counted),
   and ``signal_prr_fdr`` = q_prr ≤ ``fdr`` and a ≥ 3 (Evans' minimum count). ``rr0`` (PhViD's
   and vigipy's ``RR0``) moves the null hypothesis: ``p_h0_mgps`` = P(λ ≤ rr0 | n).
12. **Decisions that hinge on the bound** (issue 42). A fit held at its bound because its
   likelihood has no finite maximum (choice 3a) is a boundary solution: the data favour the
   limit it tends to, a gamma plus a point mass at λ (:class:`LimitPrior`, kept in
   :attr:`GpsPrior.limit`), over any prior with finite parameters. No tool has a principled
   single answer there (openEBGM refuses the fit; PhViD and vigipy return an unconverged
   iterate), so :func:`screen` scores every pair under both and says where it matters:
   ``limit_prior_flips`` names each decision of the pair that differs between the held prior and
   the limit — ``eb05`` (EB05 ≥ 2), ``eb95`` (EB95 < 2: the pair is cleared at the same
   threshold) and ``fdr`` (the Bayesian-FDR list at ``fdr``, against ``rr0``) — and is empty
   for every pair whose decisions hold under both (and for every pair of a fit that has a
   maximum). Under the limit a pair's posterior is Qn·Gamma(α + n, β + E) + (1 − Qn)·δ(λ)
   (:func:`limit_scores`): the point mass stays a point mass whatever the counts, so a pair the
   data place in it keeps RR λ exactly; that is the limit's claim, and why its decisions are
   shown beside the held fit's rather than instead of them.

References:
    DuMouchel W. Bayesian data mining in large frequency tables, with an application to the FDA
    spontaneous reporting system. Am Stat 1999;53(3):177-190.
    DuMouchel W, Pregibon D. Empirical Bayes screening for multi-item associations. Proc. 7th
    ACM SIGKDD 2001:67-76.
    Szarfman A, Machado SG, O'Neill RT. Use of screening algorithms and computer systems to
    efficiently signal higher-than-expected combinations of drugs and events in the US FDA's
    spontaneous reports database. Drug Saf 2002;25(6):381-392.
    Bate A, Lindquist M, Edwards IR, et al. A Bayesian neural network method for adverse drug
    reaction signal generation. Eur J Clin Pharmacol 1998;54(4):315-321.
    Norén GN, Bate A, Orre R, Edwards IR. Extending the methods used to screen the WHO drug
    safety database towards analysis of complex associations and improved accuracy for rare
    events. Stat Med 2006;25(21):3740-3757.
    Dean C, Lawless JF. Tests for detecting overdispersion in Poisson regression models. J Am
    Stat Assoc 1989;84(406):467-472.
    Norén GN, Hopstadius J, Bate A. Shrinkage observed-to-expected ratios for robust and
    transparent large-scale pattern discovery. Stat Methods Med Res 2013;22(1):57-69.
    Ahmed I, Haramburu F, Fourrier-Réglat A, et al. Bayesian pharmacovigilance signal
    detection methods revisited in a multiple comparison setting. Stat Med
    2009;28(13):1774-1792.
    Benjamini Y, Hochberg Y. Controlling the false discovery rate: a practical and powerful
    approach to multiple testing. J R Stat Soc B 1995;57(1):289-300.
    Evans SJW, Waller PC, Davis S. Use of proportional reporting ratios (PRRs) for signal
    generation from spontaneous adverse drug reaction reports. Pharmacoepidemiol Drug Saf
    2001;10(6):483-486.
    Canida T, Ihrie J. openEBGM: an R implementation of the Gamma-Poisson Shrinker data mining
    model. R Journal 2017;9(2):499-519.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import betainc, digamma, expit, gammainc, gammaincinv, gammaln, ndtr
from threadpoolctl import ThreadpoolController

from .._validation import check_int
from ..errors import SchemaError, ValidationError
from ..published.cells import SUPPRESSED, cell_strings, joined_terms, term_pairs
from .signals import MIN_CASES, MIN_CHI_SQUARE, MIN_PRR

__all__ = [
    "AGREEMENT_TOLERANCE",
    "BCPNN_IC025_THRESHOLD",
    "BCPNN_QUANTILE",
    "DUMOUCHEL_START",
    "GPS_STARTS",
    "GRADIENT_TOLERANCE",
    "MGPS_EB05_THRESHOLD",
    "MGPS_LOWER_QUANTILE",
    "MGPS_UPPER_QUANTILE",
    "PAIR_COLUMNS",
    "PARAM_LIMIT",
    "PRR_MIN_CASES",
    "PRR_MIN_CHI_SQUARE",
    "PRR_MIN_RATIO",
    "QUANTILE_TOLERANCE",
    "SCREEN_COLUMNS",
    "STAGE_LIMIT",
    "GpsPrior",
    "LimitPrior",
    "LIMIT_FLIP_COLUMN",
    "MGPS_EB95_CLEAR",
    "count_pairs",
    "eb_quantile",
    "FDR_LEVEL",
    "bayesian_fdr",
    "benjamini_hochberg",
    "ebgm",
    "fit_gps_prior",
    "ic_quantile",
    "information_component",
    "limit_scores",
    "pair_counts",
    "posterior_h0",
    "posterior_weight",
    "prr_p_value",
    "screen",
    "screened_columns",
]

#: Default level of the false-discovery-rate decisions (``signal_mgps_fdr``, ``signal_prr_fdr``).
FDR_LEVEL = 0.05
#: FDA signal threshold on EB05 (Szarfman et al. 2002).
MGPS_EB05_THRESHOLD = 2.0
#: Percentiles of the MGPS credibility interval: EB05 and EB95.
MGPS_LOWER_QUANTILE = 0.05
MGPS_UPPER_QUANTILE = 0.95
#: WHO-UMC signal threshold: IC025 > 0.
BCPNN_IC025_THRESHOLD = 0.0
#: Lower percentile of the IC credibility interval (IC025).
BCPNN_QUANTILE = 0.025
#: Evans et al. 2001 / MHRA criteria, as in :mod:`medanon.metrics.signals`.
PRR_MIN_CASES = MIN_CASES
PRR_MIN_RATIO = MIN_PRR
PRR_MIN_CHI_SQUARE = MIN_CHI_SQUARE

#: DuMouchel's (1999) published starting prior (α1, β1, α2, β2, p).
DUMOUCHEL_START = (0.2, 0.1, 2.0, 4.0, 1.0 / 3.0)
#: Convergence: largest projected-gradient component of the mean log-likelihood (choice 4).
GRADIENT_TOLERANCE = 1e-5
#: Starts agree when their log-likelihoods (total, not mean) differ by at most this.
AGREEMENT_TOLERANCE = 1e-3
#: Quantile root finding stops when the Newton step on log x is below this (choice 6).
QUANTILE_TOLERANCE = 1e-10

#: Columns of :func:`pair_counts`.
PAIR_COLUMNS = ("drug", "reaction", "n", "n_drug", "n_reaction", "n_total", "e", "a", "b", "c", "d")
#: Columns :func:`screen` adds.
SCREEN_COLUMNS = ("ebgm", "eb05", "eb95", "ic", "ic025", "prr", "ror", "chi2", "prr_corrected",
                  "signal_mgps", "signal_bcpnn", "signal_prr", "p_h0_mgps", "fdr_mgps",
                  "signal_mgps_fdr", "p_prr", "q_prr", "signal_prr_fdr", "limit_prior_flips")
#: The column of :func:`screen` that names the decisions which differ under the limit prior of
#: a fit held at its bound (choice 12): ``eb05``, ``eb95``, ``fdr``, comma-joined; empty when
#: none differs or the fit has no limit.
LIMIT_FLIP_COLUMN = "limit_prior_flips"
#: EB95 below this says the pair is no signal at the EB05 rule's threshold either (the whole 90%
#: interval lies below it): the EB95 decision compared under the two priors (choice 12).
MGPS_EB95_CLEAR = 2.0

#: Above this many distinct (n, E) points the fit bins E (choice 2).
SQUASH_ABOVE = 10_000
#: Relative width of those bins of E (choice 2).
SQUASH_WIDTH = 1e-3
#: Default number of optimizer starts of a prior's fit (choice 3).
GPS_STARTS = 8

#: Default upper bound of the fitted shapes and rates (choice 3; openEBGM's ``param_limit`` is
#: 100, which cuts finite optima).
PARAM_LIMIT = 1e4
#: The bound of the first stage of a fit (openEBGM's ``param_limit``): a fit that reaches it is
#: continued up to ``param_limit`` only when the likelihood has a finite maximum beyond it
#: (choice 3a).
STAGE_LIMIT = 100.0

# Bounds of the fit (choice 3), and the box of the spread-out starts.
_SHAPE_FLOOR = 1e-6
_WEIGHT_BOUNDS = (1e-6, 1.0 - 1e-6)
_START_BOX = ((0.02, 2.0), (0.02, 2.0), (0.5, 20.0), (0.5, 20.0), (0.05, 0.95))
_MAXITER_QUANTILE = 200
_LOG_TINY = math.log(np.finfo(np.float64).tiny)
_NAMES = ("alpha1", "beta1", "alpha2", "beta2", "p")
# Central-difference step of the observed information, in the optimizer's coordinates (choice 9)
_HESSIAN_STEP = 1e-4
# Relative tolerance on the likelihood of the point-mass limit's fit (choice 3a): its value and
# score decide, to far fewer digits than the fit's own 1e-14
_POINT_MASS_FTOL = 1e-10


# ------------------------------------------------------------------------------- validation
def _counts(values: Any, name: str, owner: str) -> np.ndarray:
    """A 1-d array of whole counts >= 0 (ints, or floats holding whole numbers)."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        arr = np.asarray([], dtype=object)
    if arr.ndim != 1 or arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise ValidationError(f"The {name!r} parameter of {owner} must be a 1-d array of whole "
                              f"counts >= 0; got {_describe(values)}.")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.floor(arr))
        if bad.any():
            raise ValidationError(f"The {name!r} parameter of {owner} must hold whole counts "
                                  f">= 0; got {arr[bad][0]!r}.")
    if arr.size and arr.min() < 0:
        raise ValidationError(f"The {name!r} parameter of {owner} must hold counts >= 0; got "
                              f"{arr.min()!r}.")
    return arr.astype(np.int64)


def _expected(values: Any, name: str, owner: str) -> np.ndarray:
    """A 1-d array of finite expected counts > 0."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        arr = np.asarray([], dtype=object)
    if arr.ndim != 1 or arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise ValidationError(f"The {name!r} parameter of {owner} must be a 1-d array of "
                              f"expected counts > 0; got {_describe(values)}.")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr) | (arr <= 0)
    if bad.any():
        raise ValidationError(f"The {name!r} parameter of {owner} must hold finite expected "
                              f"counts > 0; got {arr[bad][0]!r}.")
    return arr


def _describe(values: Any) -> str:
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    return f"{type(values).__name__} of shape {np.shape(arr)} and dtype {arr.dtype}"


def _pair(n: Any, e: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    n_arr, e_arr = _counts(n, "n", owner), _expected(e, "e", owner)
    if n_arr.shape != e_arr.shape:
        raise ValidationError(f"The 'n' and 'e' parameters of {owner} must have the same length; "
                              f"got {n_arr.size} and {e_arr.size}.")
    return n_arr, e_arr


def _probability(q: Any, owner: str, name: str = "q") -> float:
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0.0 < float(q) < 1.0:
        raise ValidationError(f"The {name!r} parameter of {owner} must be a number in (0, 1); "
                              f"got {q!r}.")
    return float(q)


def _prior(prior: Any, owner: str) -> GpsPrior:
    if not isinstance(prior, GpsPrior):
        raise ValidationError(f"The 'prior' parameter of {owner} must be a GpsPrior (from "
                              f"fit_gps_prior); got {type(prior).__name__}.")
    return prior


# ------------------------------------------------------------------------------------ prior
def _check_prior_fields(prior: Any, positive: Sequence[str], owner: str) -> None:
    """Check and store as floats a frozen prior's ``positive`` fields (finite, > 0) and its
    weight ``p`` (in [0, 1])."""
    for name in positive:
        value = getattr(prior, name)
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not math.isfinite(value) or value <= 0):
            raise ValidationError(f"The {name!r} parameter of {owner} must be a finite "
                                  f"number > 0; got {value!r}.")
        object.__setattr__(prior, name, float(value))
    if (isinstance(prior.p, bool) or not isinstance(prior.p, numbers.Real)
            or not 0.0 <= float(prior.p) <= 1.0):
        raise ValidationError(f"The 'p' parameter of {owner} must be a number in [0, 1]; "
                              f"got {prior.p!r}.")
    object.__setattr__(prior, "p", float(prior.p))


@dataclass(frozen=True)
class GpsPrior:
    """The two-gamma prior of DuMouchel's model, with how its fit went.

    Build one with :func:`fit_gps_prior`, or directly for a fixed prior (e.g. a published one):
    then only the five parameters matter, and ``p = 1`` (or 0) gives a single gamma.

    Attributes:
        alpha1, beta1: Shape and rate of component 1.
        alpha2, beta2: Shape and rate of component 2.
        p: Weight of component 1.
        loglik: Marginal log-likelihood at the fit (the truncated one when ``min_count`` > 0,
            module docstring, choice 1); NaN for a prior given by hand.
        converged: The best start converged (choice 4).
        starts: Starts tried.
        agreeing: Starts whose log-likelihood is within :data:`AGREEMENT_TOLERANCE` of the best.
        message: The optimizer's message for the best start, and any parameter at a bound
            named with the bound it stopped at (choice 4).
        param_limit: The upper bound of the shapes and rates the fit ran under (100 for a
            fit held there because its likelihood has no finite maximum, choice 3a); None for
            a prior given by hand.
        standard_errors: Standard errors of ``alpha1``, ``beta1``, ``alpha2``, ``beta2`` and
            ``p`` from the observed information at the fit (choice 9), each None where it is
            undefined: a fit that did not converge (at a bound, or stopped early) or whose
            observed information is not positive definite. None for a prior given by hand.
            Not compared by ``==`` (two fits are equal when their priors and fit reports are).
        limit: For a fit held at its bound because its likelihood has no finite maximum
            (choice 3a), the limit it tends to (a :class:`LimitPrior`), under which screening
            scores every pair too (choice 12); None otherwise. Not compared by ``==``.

    Raises:
        ValidationError: a shape or rate not finite and > 0, or p outside [0, 1].
    """

    alpha1: float
    beta1: float
    alpha2: float
    beta2: float
    p: float
    loglik: float = math.nan
    converged: bool = False
    starts: int = 0
    agreeing: int = 0
    message: str = ""
    param_limit: float | None = None
    standard_errors: dict[str, float | None] | None = field(default=None, compare=False)
    limit: LimitPrior | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _check_prior_fields(self, ("alpha1", "beta1", "alpha2", "beta2"), "GpsPrior")
        if self.standard_errors is not None:
            if (not isinstance(self.standard_errors, dict)
                    or set(self.standard_errors) != set(_NAMES)):
                raise ValidationError(f"The 'standard_errors' parameter of GpsPrior must be None "
                                      f"or a dict with the keys {', '.join(_NAMES)}; got "
                                      f"{self.standard_errors!r}.")
            given = self.standard_errors
            object.__setattr__(self, "standard_errors", {
                name: None if (error := given[name]) is None else float(error) for name in _NAMES})

    @property
    def parameters(self) -> tuple[float, float, float, float, float]:
        """(α1, β1, α2, β2, p)."""
        return (self.alpha1, self.beta1, self.alpha2, self.beta2, self.p)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (an undefined log-likelihood is None)."""
        return {"alpha1": self.alpha1, "beta1": self.beta1, "alpha2": self.alpha2,
                "beta2": self.beta2, "p": self.p,
                "loglik": self.loglik if math.isfinite(self.loglik) else None,
                "converged": bool(self.converged), "starts": int(self.starts),
                "agreeing": int(self.agreeing), "message": self.message,
                "param_limit": self.param_limit,
                "standard_errors": (None if self.standard_errors is None
                                    else dict(self.standard_errors)),
                "limit": None if self.limit is None else self.limit.to_dict()}


@dataclass(frozen=True)
class LimitPrior:
    """The limit a fit held at its bound tends to (choice 3a, choice 12): a gamma component
    (``alpha``, ``beta``) of weight ``p`` and a point mass at ``lam`` of weight 1 − ``p`` (the
    other component, whose shape and rate grew without bound at the ratio ``lam``).

    A pair's posterior under it is a gamma (α + n, β + E) of weight Qn and the point mass itself
    (a point mass stays one whatever the data) of weight 1 − Qn, Qn from the negative binomial
    and the Poisson(λE) marginals.

    Attributes:
        alpha, beta: Shape and rate of the gamma component.
        lam: Where the point mass sits (the RR every pair of it shares).
        p: Weight of the gamma component.
        loglik: The limit's marginal log-likelihood (the supremum of the held fit's ray).

    Raises:
        ValidationError: a shape, rate or λ not finite and > 0, or p outside [0, 1].
    """

    alpha: float
    beta: float
    lam: float
    p: float
    loglik: float = math.nan

    def __post_init__(self) -> None:
        _check_prior_fields(self, ("alpha", "beta", "lam"), "LimitPrior")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {"alpha": self.alpha, "beta": self.beta, "lam": self.lam, "p": self.p,
                "loglik": self.loglik if math.isfinite(self.loglik) else None}


_RECENT_POINTS = 8  # the objective's results kept for L-BFGS-B's returns to a point


class _Slot:
    """The arrays one gamma component of :class:`_Likelihood` writes its parts into."""

    def __init__(self, size: int):
        self.d_beta, self.tail, self.tail_d_alpha, self.tail_d_beta = (
            np.empty(size) for _ in range(4))


class _Work:
    """The objective's work arrays, written again at every call: an objective call made about
    30 arrays of the table's size, and so many short-lived ones of 120-180 kB can make the
    allocator hand memory back to the system and fault it in again (the 39 fits of an
    ``evaluate`` run alone in a fresh process: 1.0-1.2 s of system time in 870k page faults;
    inside ``evaluate``, whose heap had room for them, few); written into these, the
    operations and so their values are the same (issue 43)."""

    def __init__(self, size: int):
        self.slots = (_Slot(size), _Slot(size))
        # fewer arrays, fewer cache misses: an array is reused once its values are read
        self.be, self.log_be, self.scratch, self.joint1, self.log_f, self.q2 = (
            np.empty(size) for _ in range(6))
        self.zero = self.log_be  # log(β + E) is read within the component, P0 within the tail
        self.mixed = self.joint1  # the tail's mixture once Qn is read
        self.ws = self.q2  # w / tail once 1 − Qn is read
        self._size = size
        self._spares: list[np.ndarray] = []

    def spare(self, i: int) -> np.ndarray:
        """Work array i of the six the objective writes into in place of remembered ones (made
        when first asked: only the standard errors remember)."""
        if not self._spares:
            self._spares = [np.empty(self._size) for _ in range(6)]
        return self._spares[i]


class _Likelihood:
    """The (truncated) marginal log-likelihood over distinct (n, E) pairs and its gradient, in
    the coordinates x = (log α1, log β1, log α2, log β2, logit p).

    This is the inner loop of every fit (a screening fits dozens of priors, each from several
    starts): the arrays are combined in place, in exactly the operations and order of the
    formulas written out in the comments, so that the values are those of the formulas to the
    last bit (the optimizer's path, and so the fit, depend on them).
    """

    def __init__(self, n: np.ndarray, e: np.ndarray, min_count: int, *, squash: bool = True,
                 points: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        # points: the distinct (n, E) and their multiplicities of another model of the same
        # pairs (its :attr:`points`), not sorted out again (n and e are then not read)
        self.points = _distinct_points(n, e) if points is None else points
        self.n, self.e, self.weight = self.points
        self.squashed = squash and self.n.size > SQUASH_ABOVE
        if self.squashed:  # choice 2: bins of E within each n, at their mean E
            cell = np.floor(np.log(self.e) / math.log1p(SQUASH_WIDTH))
            new = np.ones(self.n.size, dtype=bool)
            new[1:] = (self.n[1:] != self.n[:-1]) | (cell[1:] != cell[:-1])
            bins = np.flatnonzero(new)
            mass = np.add.reduceat(self.weight * self.e, bins)
            self.weight = np.add.reduceat(self.weight, bins)
            self.n, self.e = self.n[bins], mass / self.weight
        self.total = float(self.weight.sum())
        # lgamma(α + n) − lgamma(α) and its derivative depend on n only: computed per distinct n
        # (n is sorted: its distinct values start its runs)
        first = np.flatnonzero(np.diff(self.n, prepend=-1.0))
        self.distinct_n = self.n[first]
        # a per-n array is spread over the pairs by repeating each value over its run, the
        # same copies as indexing it by n_index at half the cost (issue 43)
        self._n_runs = np.diff(first, append=self.n.size)
        self.n_index = np.repeat(np.arange(first.size), self._n_runs)
        self.constant = self.n * np.log(self.e) - gammaln(self.n + 1.0)
        self.min_count = min_count
        self.below = np.arange(min_count, dtype=np.float64)  # the truncated counts 0..n*-1
        # a table of distinct pairs weighs each 1 and needs no product; otherwise every t is
        # multiplied by its w (w·t is t to the bit where w = 1): one pass over the array is
        # cheaper than picking the pairs of w != 1 and putting their products back (issue 43)
        self._weighted = bool(np.any(self.weight != 1.0))
        self._memo: dict[tuple[float, float], tuple[Any, ...]] | None = None
        self._work_arrays: _Work | None = None
        self._recent: dict[bytes, tuple[float, np.ndarray]] = {}  # see objective

    def _weighted_sum(self, t: np.ndarray) -> float:
        """Σ w·t, overwriting t with w·t (the same products, summed in the same order)."""
        if self._weighted:
            t *= self.weight
        return float(_add(t))

    def _work(self) -> _Work:
        """The objective's work arrays, made at the first call (issue 43)."""
        if self._work_arrays is None:
            self._work_arrays = _Work(self.n.size)
        return self._work_arrays

    def _component(self, alpha: float, beta: float,
                   into: _Slot | None = None) -> tuple[np.ndarray, ...]:
        """log f(n), d log f/dα, d log f/dβ for each distinct pair, and β + E (d log f/dβ in
        ``into``'s array and β + E in a work array, read by :meth:`_tail` only; all new arrays
        without ``into``)."""
        work = self._work()
        be = np.add(beta, self.e, out=None if into is None else work.be)
        log_be = np.log(be, out=work.log_be)
        shifted = alpha + self.distinct_n
        rise = gammaln(shifted) - gammaln(alpha)
        d_rise = digamma(shifted) - digamma(alpha)
        # log_f = rise[i] + α log β − (α + n) log(β + E) + constant; the first sum, the same
        # for every pair of one n, is made per distinct n (the same additions)
        a_n = np.add(alpha, self.n, out=None if into is None else into.d_beta)
        rise += alpha * math.log(beta)
        # the method, not np.repeat: its dispatch wrapper cost more than the copy (issue 43)
        log_f = rise.repeat(self._n_runs)
        log_f -= np.multiply(a_n, log_be, out=work.scratch)
        log_f += self.constant
        # d_alpha = d_rise[i] + log β − log(β + E)
        d_rise += math.log(beta)
        d_alpha = d_rise.repeat(self._n_runs)
        d_alpha -= log_be
        # d_beta = α/β − (α + n)/(β + E)
        d_beta = np.divide(a_n, be, out=a_n)
        np.subtract(alpha / beta, d_beta, out=d_beta)
        return log_f, d_alpha, d_beta, be

    def _tail(self, alpha: float, beta: float, be: np.ndarray,
              into: _Slot | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """S = P(N >= n*), dS/dα, dS/dβ for each distinct pair (n* = min_count >= 1), given
        ``be`` = β + E (in ``into``'s arrays; new ones without it)."""
        e = self.e
        if self.min_count == 1:
            work = self._work()
            # log((β + E) / β)
            ratio = np.log1p(np.divide(e, beta, out=work.scratch),
                             out=None if into is None else into.tail_d_alpha)
            # P(N = 0) = (β/(β+E))^α; 1 − that through expm1, exact for tiny E
            exponent = np.multiply(ratio, -alpha, out=None if into is None else into.tail)
            zero = np.exp(exponent, out=work.zero)
            tail = np.expm1(exponent, out=exponent)
            np.negative(tail, out=tail)
            # dS/dβ = −P0 · α · E / (β (β + E)); (−P0)·α is P0·(−α) to the bit
            d_beta = np.multiply(zero, -alpha, out=None if into is None else into.tail_d_beta)
            d_beta *= e
            d_beta /= np.multiply(beta, be, out=work.scratch)
            # dS/dα = log((β + E)/β) · P0
            d_alpha = np.multiply(ratio, zero, out=ratio)
            return tail, d_alpha, d_beta
        ratio = np.log1p(e / beta)
        tail = betainc(float(self.min_count), alpha, e / (beta + e))
        d_alpha = np.zeros_like(e)
        d_beta = np.zeros_like(e)
        log_be = np.log(beta + e)
        for j in self.below:  # dS = −Σ_{j < n*} f(j) · d log f(j)
            log_f = (gammaln(alpha + j) - gammaln(alpha) - gammaln(j + 1.0) - alpha * ratio
                     + j * (np.log(e) - log_be))
            f = np.exp(log_f)
            d_alpha -= f * (digamma(alpha + j) - digamma(alpha) - ratio)
            d_beta -= f * (alpha / beta - (alpha + j) / (beta + e))
        return tail, d_alpha, d_beta

    def _parts(self, alpha: float, beta: float, slot: int) -> tuple[Any, ...]:
        """:meth:`_component` and (when truncated) :meth:`_tail` of one gamma component (its
        arrays the work arrays of ``slot``, 0 or 1), and whether the caller may overwrite those
        arrays. Under :meth:`remembering`, each (α, β) is computed once into arrays of its own
        and handed out to be read only (the caller writes its results to work arrays: the same
        values to the bit, the same operations on the same inputs); copying them for each
        caller cost more than computing them again (issue 43)."""
        memo = self._memo
        if memo is not None and (alpha, beta) in memo:
            return (*memo[(alpha, beta)], False)
        # remembered arrays are arrays of their own
        into = self._work().slots[slot] if memo is None else _Slot(self.n.size)
        lf, da, db, be = self._component(alpha, beta, into)
        tail = self._tail(alpha, beta, be, into) if self.min_count > 0 else None
        if memo is not None:
            memo[(alpha, beta)] = (lf, da, db, tail)
        return lf, da, db, tail, memo is None

    @contextlib.contextmanager
    def remembering(self) -> Iterator[None]:
        """Remember each component's arrays while inside: the standard errors' central
        differences move one coordinate at a time, so the other component (both, for p) is
        the same at every step."""
        self._memo = {}
        try:
            yield
        finally:
            self._memo = None

    def loglik(self, theta: tuple[float, ...]) -> float:
        """Total log-likelihood at θ = (α1, β1, α2, β2, p), p in [0, 1]."""
        return float(self._value_and_gradient(theta, gradient=False)[0] * self.total)

    def _value_and_gradient(self, theta: tuple[float, ...],
                            gradient: bool = True) -> tuple[float, np.ndarray]:
        """Mean log-likelihood and its gradient in (α1, β1, α2, β2, p)."""
        a1, b1, a2, b2, p = theta
        lf1, da1, db1, tail1, own1 = self._parts(a1, b1, 0)
        lf2, da2, db2, tail2, own2 = self._parts(a2, b2, 1)
        work = self._work()
        # math's logs, guarded: no numpy error state to set at every call
        lp, lq = math.log(p) if p > 0 else -math.inf, math.log1p(-p) if p < 1 else -math.inf
        # log f = logaddexp(log p + lf1, log(1 − p) + lf2)
        joint1 = np.add(lp, lf1, out=work.joint1)
        log_f = np.logaddexp(joint1, np.add(lq, lf2, out=work.scratch), out=work.log_f)
        # weighted sums as multiply-and-add, not np.dot: OpenBLAS's threaded dot product is
        # many times slower on a loaded machine, and this is the fit's inner loop
        # Σ w·log f; log f is read again below, so w·log f goes to another array
        value = float(_add(np.multiply(log_f, self.weight, out=work.scratch)
                           if self._weighted else log_f))
        grad = np.zeros(5)
        if gradient:
            # q1 = exp(log p + lf1 − log f), the posterior weight of component 1 (Qn); q2 = 1 − q1
            q1 = np.exp(np.subtract(joint1, log_f, out=joint1), out=joint1)
            q2 = np.subtract(1.0, q1, out=work.q2)
            # ∂/∂p: exp(lf1 − log f) − exp(lf2 − log f)
            r1 = np.subtract(lf1, log_f, out=_into(lf1, own1, work, 0))
            np.exp(r1, out=r1)
            r2 = np.subtract(lf2, log_f, out=_into(lf2, own2, work, 1))
            np.exp(r2, out=r2)
            r1 -= r2
            grad[:] = [self._weighted_sum(t) for t in (
                np.multiply(q1, da1, out=_into(da1, own1, work, 2)),
                np.multiply(q1, db1, out=_into(db1, own1, work, 3)),
                np.multiply(q2, da2, out=_into(da2, own2, work, 4)),
                np.multiply(q2, db2, out=_into(db2, own2, work, 5)), r1)]
        if self.min_count > 0:
            s1, ds1a, ds1b = tail1
            s2, ds2a, ds2b = tail2
            # tail = p·s1 + (1 − p)·s2
            tail = np.multiply(p, s1, out=work.mixed)
            tail += np.multiply(1.0 - p, s2, out=work.scratch)
            if gradient:
                ws = np.divide(self.weight, tail, out=work.ws)
            value -= self._weighted_sum(np.log(tail, out=tail))
            if gradient:
                s12 = np.subtract(s1, s2, out=_into(s1, own1, work, 0))
                grad -= [p * float(_add(np.multiply(ws, ds1a, out=_into(ds1a, own1, work, 2)))),
                         p * float(_add(np.multiply(ws, ds1b, out=_into(ds1b, own1, work, 3)))),
                         (1 - p) * float(_add(np.multiply(ws, ds2a, out=_into(ds2a, own2, work, 4)))),
                         (1 - p) * float(_add(np.multiply(ws, ds2b, out=_into(ds2b, own2, work, 5)))),
                         float(_add(np.multiply(ws, s12, out=s12)))]
        return value / self.total, grad / self.total

    def objective(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean negative log-likelihood and its gradient in the transformed coordinates.

        The last few points' results are kept: L-BFGS-B comes back to a point it evaluated two
        or three calls before (its line search returning to the last iterate; about 5 % of an
        ``evaluate``'s calls), and the objective is a function of x alone, so the kept result
        is the one computing it again gives, to the bit (issue 43)."""
        key = x.tobytes()
        kept = self._recent.get(key)
        if kept is not None:
            return kept[0], kept[1].copy()
        a1, b1, a2, b2 = np.exp(x[:4])
        p = float(expit(x[4]))
        value, grad = self._value_and_gradient((a1, b1, a2, b2, p))
        chain = np.array([a1, b1, a2, b2, p * (1.0 - p)])
        result = (math.inf, np.zeros(5)) if not math.isfinite(value) else (-value, -grad * chain)
        if len(self._recent) >= _RECENT_POINTS:
            del self._recent[next(iter(self._recent))]  # the oldest
        self._recent[key] = (result[0], result[1].copy())
        return result

    # ------------------------------------------------------ the point-mass limit (choice 3a)
    def _poisson_tail(self, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """S = P(N >= n*) for N ~ Poisson(μ) (n* = min_count >= 1) and dS/d log λ (μ = λE)."""
        if self.min_count == 1:
            return -np.expm1(-mu), mu * np.exp(-mu)
        m = float(self.min_count)
        # P(N >= m) = P(m, μ) (regularized lower incomplete gamma); dS/dμ = pmf(m − 1; μ)
        pmf = np.exp((m - 1.0) * np.log(mu) - mu - math.lgamma(m))
        return gammainc(m, mu), mu * pmf

    def point_mass_objective(self, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean negative log-likelihood and its gradient of the point-mass limit of the model:
        a gamma component (α, β) of weight w and a point mass at λ of weight 1 − w (the limit
        of a gamma of shape and rate → ∞ at the ratio λ: its count is Poisson(λE)), in the
        coordinates y = (log α, log β, log λ, logit w)."""
        a, b, lam = (float(v) for v in np.exp(y[:3]))
        w = float(expit(y[3]))
        lf1, da1, db1, be1 = self._component(a, b)
        mu = lam * self.e
        # log Poisson(n; λE) = n log λ − λE + (n log E − log n!)
        lf2 = self.n * math.log(lam) - mu + self.constant
        joint1 = math.log(w) + lf1
        log_f = np.logaddexp(joint1, math.log1p(-w) + lf2)
        value = float(np.sum(self.weight * log_f))
        q1 = np.exp(joint1 - log_f)
        grad = np.array([
            float(np.sum(self.weight * q1 * da1)) * a,
            float(np.sum(self.weight * q1 * db1)) * b,
            float(np.sum(self.weight * (1.0 - q1) * (self.n - mu))),
            float(np.sum(self.weight * (np.exp(lf1 - log_f) - np.exp(lf2 - log_f))))
            * w * (1.0 - w)])
        if self.min_count > 0:
            s1, ds1a, ds1b = self._tail(a, b, be1)
            s2, ds2 = self._poisson_tail(mu)
            tail = w * s1 + (1.0 - w) * s2
            value -= float(np.sum(self.weight * np.log(tail)))
            ws = self.weight / tail
            grad -= [w * float(np.sum(ws * ds1a)) * a, w * float(np.sum(ws * ds1b)) * b,
                     (1.0 - w) * float(np.sum(ws * ds2)),
                     float(np.sum(ws * (s1 - s2))) * w * (1.0 - w)]
        if not math.isfinite(value):
            return math.inf, np.zeros(4)
        return -value / self.total, -grad / self.total

    def point_mass_score(self, y: np.ndarray) -> float:
        """d log L / dτ at τ = 0, τ = 1/α of the component that is a point mass in the limit
        model at y (:meth:`point_mass_objective`): a gamma of shape 1/τ and mean λ. Per pair,
        d log f(n)/dτ at τ = 0 is s(n) = ((n − μ)² − n)/2 (μ = λE), the score of the negative
        binomial's overdispersion at the Poisson (Dean & Lawless 1989); the truncation adds
        −d log P(N >= n*)/dτ, with dP(N >= n*)/dτ = −Σ_{j < n*} Poisson(j; μ) s(j)."""
        a, b, lam = (float(v) for v in np.exp(y[:3]))
        w = float(expit(y[3]))
        lf1, _, _, be1 = self._component(a, b)
        mu = lam * self.e
        lf2 = self.n * math.log(lam) - mu + self.constant
        log_f = np.logaddexp(math.log(w) + lf1, math.log1p(-w) + lf2)
        q2 = np.exp(math.log1p(-w) + lf2 - log_f)
        score = float(np.sum(self.weight * q2 * 0.5 * ((self.n - mu) ** 2 - self.n)))
        if self.min_count > 0:
            s1 = self._tail(a, b, be1)[0]
            s2 = self._poisson_tail(mu)[0]
            tail = w * s1 + (1.0 - w) * s2
            below = np.zeros_like(mu)
            for j in self.below:  # Σ_{j < n*} Poisson(j; μ) s(j)
                below += (np.exp(j * np.log(mu) - mu - math.lgamma(j + 1.0))
                          * 0.5 * ((j - mu) ** 2 - j))
            score += float(np.sum(self.weight * (1.0 - w) * below / tail))
        return score


def _into(array: np.ndarray, own: bool, work: _Work, spare: int) -> np.ndarray:
    """The ``out`` of a ufunc that may overwrite ``array`` when the caller owns it; else the
    work array ``spare`` (a component's arrays remembered by :meth:`_Likelihood.remembering`
    are read only): the same values either way."""
    return array if own else work.spare(spare)


def _distinct_points(n: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (n, E) pairs sorted by n then E (n as floats) and how often each occurs.

    Pairs equal in both n and E are interchangeable, so any order of the pairs by (n, E) gives
    these same arrays: E is sorted first (unstable, the fast sort), then n stably, by a radix
    sort where n fits 16 bits (a fifth of the cost of a lexsort of 22,000 pairs; issue 43)."""
    order = np.argsort(e)
    by_e = n[order]
    # n is whole and >= 0 (validated): below 2^16 it is exactly its uint16 (radix sort)
    small = by_e.size == 0 or by_e.max() < 1 << 16
    order = order[np.argsort(by_e.astype(np.uint16) if small else by_e, kind="stable")]
    n, e = n[order], e[order]
    new = np.ones(n.size, dtype=bool)
    new[1:] = (n[1:] != n[:-1]) | (e[1:] != e[:-1])
    starts = np.flatnonzero(new)
    weight = np.diff(np.append(starts, n.size)).astype(np.float64)
    return n[starts].astype(np.float64), e[starts], weight


def _add(values: np.ndarray) -> Any:
    """``np.sum`` of a 1-d float array: the same reduction (``np.add.reduce`` over every axis,
    which np.sum calls), without its wrapper; the fit's inner loop sums a dozen arrays per step."""
    return _ADD_REDUCE(values, axis=None)


_ADD_REDUCE = np.add.reduce


def _to_x(theta: Sequence[float]) -> np.ndarray:
    a1, b1, a2, b2, p = theta
    return np.array([math.log(a1), math.log(b1), math.log(a2), math.log(b2),
                     math.log(p) - math.log1p(-p)])


def _from_x(x: np.ndarray) -> tuple[float, float, float, float, float]:
    a1, b1, a2, b2 = (float(v) for v in np.exp(x[:4]))
    return a1, b1, a2, b2, float(expit(x[4]))


def _x_bounds(limit: float) -> list[tuple[float, float]]:
    """Bounds of x = (log α1, log β1, log α2, log β2, logit p)."""
    lo, hi = _WEIGHT_BOUNDS
    return [(math.log(_SHAPE_FLOOR), math.log(limit))] * 4 + [
        (math.log(lo / (1 - lo)), math.log(hi / (1 - hi)))]


def _starts(count: int, seed: int) -> list[tuple[float, ...]]:
    """DuMouchel's start, then starts spread log-uniformly over the start box (logit-uniform
    for p) from ``seed``."""
    rng = np.random.default_rng(seed)
    out: list[tuple[float, ...]] = [DUMOUCHEL_START]
    for _ in range(count - 1):
        theta = [math.exp(rng.uniform(math.log(lo), math.log(hi))) for lo, hi in _START_BOX[:4]]
        lo, hi = _START_BOX[4]
        theta.append(float(expit(rng.uniform(math.log(lo / (1 - lo)), math.log(hi / (1 - hi))))))
        out.append(tuple(theta))
    return out


def _at_bound(x: float, bound: tuple[float, float]) -> tuple[bool, bool]:
    lo, hi = bound
    return x <= lo + 1e-9, x >= hi - 1e-9


def _projected_gradient(x: np.ndarray, grad: np.ndarray,
                        bounds: list[tuple[float, float]]) -> np.ndarray:
    """The gradient with the components that push against an active bound set to 0."""
    out = grad.copy()
    for i, bound in enumerate(bounds):
        at_lo, at_hi = _at_bound(x[i], bound)
        if (at_lo and out[i] > 0) or (at_hi and out[i] < 0):  # minimizing: −grad points inward
            out[i] = 0.0
    return out


def fit_gps_prior(n: Any, e: Any, *, starts: int = GPS_STARTS, min_count: int = 1,
                  seed: int = 0, maxiter: int = 500, param_limit: float = PARAM_LIMIT,
                  warm_start: GpsPrior | None = None) -> GpsPrior:
    """Fit DuMouchel's two-gamma prior by maximum marginal likelihood.

    Args:
        n: Observed counts of the pairs (whole numbers >= 0).
        e: Expected counts of the same pairs (> 0).
        starts: Optimizer starts: DuMouchel's published start, then ``starts - 1`` spread-out
            ones (module docstring, choice 3); with ``warm_start``, that prior then
            DuMouchel's start and ``starts - 2`` spread-out ones.
        min_count: The likelihood is over the pairs with n >= ``min_count``, truncated at it
            (choice 1): 1 (default) is the zero-truncated likelihood of the observed pairs, as
            FDA/openEBGM; 0 the plain likelihood of every pair given.
        seed: Spreads the starts (the fit is deterministic given it; it is no privacy RNG).
        maxiter: Iteration limit of each start's optimizer.
        param_limit: Upper bound of α1, β1, α2 and β2 (choice 3; default 1e4, openEBGM's
            100). The fit runs under min(100, ``param_limit``) first and goes beyond only
            towards a finite maximum (choice 3a). A fit at a bound is reported as not converged
            (choice 4).
        warm_start: A prior to start from first (choice 3), e.g. the fit of the pooled table
            when fitting one of its scopes; clipped into the bounds.

    Returns:
        The best start's prior, component 1 the minority one (p <= 1/2), with its
        log-likelihood, convergence flag, how many starts agree (choice 4), the bound it ran
        under and the standard errors of its parameters (choice 9).

    Raises:
        ValidationError: n or e malformed (negative or non-whole counts, e <= 0, not finite,
            lengths differ), no pair with n >= ``min_count``, or a bad ``starts``, ``min_count``,
            ``seed``, ``maxiter``, ``param_limit`` or ``warm_start``.
    """
    owner = "fit_gps_prior"
    n_arr, e_arr = _pair(n, e, owner)
    starts = check_int(starts, name="starts", owner=owner, minimum=1)
    min_count = check_int(min_count, name="min_count", owner=owner, minimum=0)
    seed = check_int(seed, name="seed", owner=owner, minimum=0)
    maxiter = check_int(maxiter, name="maxiter", owner=owner, minimum=1)
    if (isinstance(param_limit, bool) or not isinstance(param_limit, numbers.Real)
            or not math.isfinite(param_limit) or param_limit < 1):
        raise ValidationError(f"The 'param_limit' parameter of {owner} must be a finite number "
                              f">= 1; got {param_limit!r}.")
    limit = float(param_limit)
    keep = n_arr >= min_count
    if not keep.any():
        raise ValidationError(f"The 'n' parameter of {owner} has no pair with n >= min_count "
                              f"({min_count}); got {n_arr.size} pair(s).")
    model = _Likelihood(n_arr[keep], e_arr[keep], min_count)
    if warm_start is None:
        thetas = _starts(starts, seed)
    else:
        if not isinstance(warm_start, GpsPrior):
            raise ValidationError(f"The 'warm_start' parameter of {owner} must be a GpsPrior "
                                  f"or None; got {type(warm_start).__name__}.")
        warm = warm_start
        # the warm start, then the first starts - 1 of the usual ones (none when starts is 1)
        thetas = [(warm.alpha1, warm.beta1, warm.alpha2, warm.beta2, warm.p),
                  *(_starts(starts - 1, seed) if starts > 1 else [])]
    # choice 3a: every start is fitted under the first stage's bound (openEBGM's 100)
    first = min(limit, STAGE_LIMIT)
    bounds = _x_bounds(first)
    # L-BFGS-B calls BLAS on 5-vectors: with OpenBLAS's thread pool those calls cost more in
    # synchronisation than in arithmetic (8x slower fits measured on a busy 2-core machine)
    with _blas_controller().limit(limits=1, user_api="blas"):
        results = [_minimize(model.objective, _clipped(_to_x(theta), bounds), bounds, maxiter)
                   for theta in thetas]
        finite = [r for r in results if np.all(np.isfinite(r.x)) and math.isfinite(r.fun)]
        if not finite:
            return GpsPrior(*DUMOUCHEL_START, loglik=math.nan, converged=False, starts=starts,
                            agreeing=0, message="no start reached a finite likelihood",
                            param_limit=limit, standard_errors=dict.fromkeys(_NAMES))
        best = min(finite, key=lambda r: r.fun)
        loglik = -best.fun * model.total
        agreeing = sum(1 for r in finite
                       if abs(-r.fun * model.total - loglik) <= AGREEMENT_TOLERANCE)
        point_mass = None
        limit_prior = None
        if any(_at_bound(best.x[i], bounds[i])[1] for i in range(4)):
            verdict = _point_mass(model, best, bounds, maxiter)
            if verdict is not None and verdict[0]:
                point_mass = verdict[1:4]
                y = verdict[4]
                limit_prior = LimitPrior(float(math.exp(y[0])), float(math.exp(y[1])),
                                         verdict[2], float(expit(y[3])), loglik=verdict[3])
                # the fit held at the bound is the best one there: the starts may have stopped
                # in a poorer optimum than the limit's fit carried back to the bound (measured:
                # 64 units below it on a 20,000-pair table whose two starts agreed)
                held = _minimize(model.objective,
                                 _clipped(_at_the_bound(verdict[1], verdict[2], verdict[4],
                                                        first), bounds), bounds, maxiter)
                if math.isfinite(held.fun) and held.fun < best.fun:
                    best = held
            elif limit > first:
                # a finite maximum beyond the first bound: the best start continued up to
                # param_limit (a descent method: never below the first stage's fit)
                bounds = _x_bounds(limit)
                best = _minimize(model.objective, best.x, bounds, maxiter)
                first = limit
                if verdict is not None and -best.fun * model.total < verdict[3]:
                    # below the point-mass limit, which a finite maximum exceeds: the
                    # likelihood has another maximum, nearer the point mass; approached from
                    # the limit's fit with the component's shape (its rate when λ < 1) at
                    # param_limit
                    x0 = _at_the_bound(verdict[1], verdict[2], verdict[4], limit)
                    second = _minimize(model.objective, _clipped(x0, bounds), bounds, maxiter)
                    if math.isfinite(second.fun) and second.fun < best.fun:
                        best = second
    # L-BFGS-B returns the gradient of the point it returns (on a failed line search it
    # restores both): the objective's gradient at best.x to the bit, not computed again
    grad = best.jac
    gradient = float(np.max(np.abs(_projected_gradient(best.x, grad, bounds))))
    # choice 4: a parameter at a bound is a boundary solution, not the maximum of the
    # likelihood (openEBGM counts it a failure too); named with its bound in the message
    at_bounds = {}
    for i, bound in enumerate(bounds):
        at_lo, at_hi = _at_bound(best.x[i], bound)
        if i == 4 and (at_lo or at_hi):
            # after the relabelling below p <= 1/2: at either bound, p is 1e-6
            at_bounds[_NAMES[i]] = f"its bound {_WEIGHT_BOUNDS[0]:g} (component 1 absent)"
        elif at_hi:
            at_bounds[_NAMES[i]] = f"param_limit {first:g}"
        elif at_lo:
            at_bounds[_NAMES[i]] = f"its floor {_SHAPE_FLOOR:g}"
    # status 1 is the iteration or evaluation limit; a failed line search (status 2) at a point
    # whose projected gradient is already ~0 is the optimum reached at machine precision
    converged = best.status != 1 and gradient <= GRADIENT_TOLERANCE and not at_bounds
    errors = _standard_errors(model, best.x) if converged else (None,) * 5
    theta = _from_x(best.x)
    swapped = theta[4] > 0.5
    if swapped:  # choice 5: component 1 is the minority one
        theta = (theta[2], theta[3], theta[0], theta[1], 1.0 - theta[4])
        errors = (errors[2], errors[3], errors[0], errors[1], errors[4])
        swap = {"alpha1": "alpha2", "beta1": "beta2", "alpha2": "alpha1", "beta2": "beta1"}
        at_bounds = {swap.get(name, name): what for name, what in at_bounds.items()}
    message = str(best.message)
    message += f"; largest projected gradient {gradient:.2e}"
    if at_bounds:
        message += "; at a bound: " + ", ".join(f"{name} at {at_bounds[name]}"
                                                for name in sorted(at_bounds))
    elif converged and None in errors:
        message += "; standard errors undefined: observed information not positive definite"
    # the log-likelihood recomputed at the reported parameters (not the optimizer's value),
    # over the exact (n, E) when the fit ran on binned ones (choice 2)
    squashed = model.squashed
    if squashed:
        model = _Likelihood(n_arr, e_arr, min_count, squash=False, points=model.points)
    loglik = model.loglik(theta)
    if point_mass is not None:
        component, lam, supremum = point_mass
        label = 2 - component if swapped else component + 1
        message += (f"; no finite maximum: component {label} tends to a point mass at "
                    f"λ={lam:.6g} (the likelihood rises towards {supremum:.6g}, "
                    f"{supremum - loglik:.3g} above this fit, as its shape and rate grow at "
                    f"that ratio); held at param_limit {first:g}")
    if squashed:
        message += f"; E binned for the fit (0.1% wide bins: over {SQUASH_ABOVE:,} distinct points)"
    return GpsPrior(*theta, loglik=loglik, converged=converged, starts=starts, agreeing=agreeing,
                    message=message, param_limit=first if point_mass is not None else limit,
                    standard_errors=dict(zip(_NAMES, errors, strict=True)), limit=limit_prior)


@functools.cache
def _blas_controller() -> ThreadpoolController:
    """The BLAS libraries whose threads a fit limits, found once: ``threadpool_limits`` walks
    every shared library the process has loaded at each call (1-3 ms with DuckDB, pandas and
    scipy loaded; an ``evaluate`` makes 39 fits). The libraries are numpy's and scipy's,
    loaded by this module's imports, before the first fit makes the controller (issue 43)."""
    return ThreadpoolController()


def _clipped(x: np.ndarray, bounds: list[tuple[float, float]]) -> np.ndarray:
    return np.clip(x, [b[0] for b in bounds], [b[1] for b in bounds])


def _minimize(objective: Any, x0: np.ndarray, bounds: list[tuple[float, float]],
              maxiter: int) -> Any:
    """One L-BFGS-B run (choice 3)."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        return minimize(objective, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                        options={"maxiter": maxiter, "ftol": 1e-14, "gtol": 1e-9,
                                 "maxcor": 20})


def _at_the_bound(c: int, lam: float, y: np.ndarray, bound: float) -> np.ndarray:
    """The full model's x for the point-mass limit's fit y (:meth:`_Likelihood.point_mass_objective`'s
    coordinates) with component ``c``'s point mass at λ replaced by a gamma of mean λ whose
    larger parameter (the shape when λ >= 1, else the rate) is ``bound``."""
    x = np.empty(5)
    x[2 * (1 - c):2 * (1 - c) + 2] = y[:2]
    x[2 * c] = math.log(bound * min(lam, 1.0))
    x[2 * c + 1] = math.log(bound / max(lam, 1.0))
    x[4] = y[3] if c == 1 else -y[3]
    return x


def _rises_to_limit(model: _Likelihood, c: int, lam: float, y: np.ndarray, supremum: float,
                    bound: float) -> bool:
    """Whether the likelihood does rise towards the limit ``supremum`` along the ray of the
    limit's fit y: the gamma of mean λ at shapes (rates when λ < 1) ``bound``·10^j, j = 0..4,
    the other parameters at y. The values must not fall (by more than
    :data:`AGREEMENT_TOLERANCE`) and must stay below the limit; the score at the limit alone
    describes the profile near τ = 0 only, and a limit fit that stopped short can claim a
    supremum the ray never reaches."""
    values = [model.loglik(_from_x(_at_the_bound(c, lam, y, bound * 10.0 ** j)))
              for j in range(5)]
    if not all(math.isfinite(v) for v in values):
        return False
    rising = all(b >= a - AGREEMENT_TOLERANCE for a, b in zip(values, values[1:]))
    below = max(values) <= supremum + AGREEMENT_TOLERANCE
    return rising and below


def _point_mass(model: _Likelihood, best: Any, bounds: list[tuple[float, float]],
                maxiter: int) -> tuple[bool, int, float, float, np.ndarray] | None:
    """Choice 3a: whether a fit whose shape reached the bound is heading to a point mass, a
    limit the likelihood has no finite maximum before.

    Only a fit with one component's shape or rate at the upper bound (neither at the floor)
    and its weight above the floor is examined (any other fit at a bound: None). The model
    with that component replaced by its limit, a point mass at λ (its count Poisson(λE)), is
    fitted from the bounded fit, the other component held under the same bound; at its optimum
    the score of τ = 1/α of the point-mass component, d log L/dτ at τ = 0, says from which
    side the likelihood approaches its limit. The fit has no finite maximum when the limit is
    above the bounded fit and is approached from below (score <= 0). Otherwise (score > 0: a
    finite gamma beats the point mass; or the limit below the bounded fit) a finite maximum
    lies beyond the bound.

    Returns:
        (no finite maximum, the component's index in x, λ, the limit's log-likelihood, the
        limit's fit in :meth:`_Likelihood.point_mass_objective`'s coordinates), or None when
        the fit is not examined or the limit's fit fails.
    """
    x = best.x
    # on the ray of a point mass α and β grow together: the one whose ratio is larger reaches
    # the bound first (β when λ < 1); a component with either at the floor is no point mass
    sides = [[_at_bound(x[i], bounds[i]) for i in (2 * c, 2 * c + 1)] for c in (0, 1)]
    heading = [c for c in (0, 1) if any(hi for _, hi in sides[c])
               and not any(lo for lo, _ in sides[c])]
    at_lo, at_hi = _at_bound(x[4], bounds[4])
    if len(heading) != 1 or (heading[0] == 0 and at_lo) or (heading[0] == 1 and at_hi):
        return None
    c = heading[0]
    other = 1 - c
    # y = (log α, log β of the other component, log λ of the point mass, logit of the other's
    # weight), from the bounded fit; λ bounded by the ratios the shapes and rates allow
    y0 = np.array([x[2 * other], x[2 * other + 1], x[2 * c] - x[2 * c + 1],
                   x[4] if other == 0 else -x[4]])
    lo, hi = bounds[0]
    y_bounds = [bounds[0], bounds[1], (lo - hi, hi - lo), bounds[4]]
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        res = minimize(model.point_mass_objective, _clipped(y0, y_bounds), jac=True,
                       method="L-BFGS-B", bounds=y_bounds,
                       options={"maxiter": maxiter, "ftol": _POINT_MASS_FTOL, "gtol": 1e-9,
                                "maxcor": 20})
    if res.status == 1 or not math.isfinite(res.fun) or not np.all(np.isfinite(res.x)):
        return None
    supremum = -res.fun * model.total
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        score = model.point_mass_score(res.x)
    lam = float(math.exp(res.x[2]))
    none = (supremum > -best.fun * model.total and score <= 0
            and _rises_to_limit(model, c, lam, res.x, supremum, math.exp(bounds[0][1])))
    return none, c, lam, supremum, res.x


def _standard_errors(model: _Likelihood, x: np.ndarray) -> tuple[float | None, ...]:
    """Standard errors of (α1, β1, α2, β2, p) at the optimum x (choice 9): the observed
    information in x by central differences of the analytic gradient, inverted, and carried to
    the natural parameters by the delta method; all None when it is not positive definite."""
    hessian = np.empty((5, 5))
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"), \
            model.remembering():
        for i in range(5):
            step = np.zeros(5)
            step[i] = _HESSIAN_STEP
            hessian[:, i] = (model.objective(x + step)[1] - model.objective(x - step)[1]) / (
                2.0 * _HESSIAN_STEP)
    information = (hessian + hessian.T) / 2.0 * model.total  # of the total log-likelihood
    if not np.all(np.isfinite(information)) or np.linalg.eigvalsh(information)[0] <= 0:
        return (None,) * 5
    covariance = np.linalg.inv(information)
    theta = _from_x(x)
    # dθ/dx: exp(x) for the shapes and rates, p (1 − p) for the logit of p
    chain = np.array([*theta[:4], theta[4] * (1.0 - theta[4])])
    variance = np.diag(covariance) * chain**2
    if not np.all(np.isfinite(variance)) or np.any(variance <= 0):
        return (None,) * 5
    return tuple(float(v) for v in np.sqrt(variance))


# -------------------------------------------------------------------------------- posterior
class _ByCount:
    """A table's counts n (float64) with their distinct values: a function of α + n alone
    (lgamma, digamma, a gamma quantile) is evaluated once per distinct count and spread over
    the pairs, the same value each pair's own evaluation gives (α + n is the same float for
    the same n). A screening's table has a few hundred distinct counts for 20,000 pairs, and
    its statistics evaluate seven such functions (issue 43)."""

    def __init__(self, n: np.ndarray):
        self.n = n
        self.distinct, self.inverse = np.unique(n, return_inverse=True)

    def of(self, f: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """f(n) of each pair, for an elementwise f."""
        return f(self.distinct)[self.inverse]


def _log_nb(n: np.ndarray, e: np.ndarray, alpha: float, beta: float,
            by: _ByCount | None = None) -> np.ndarray:
    """log f(n; α, β, E): the negative binomial marginal of one gamma component (``by``: n's
    distinct counts, for the terms of n alone)."""
    if by is None:
        rise = gammaln(alpha + n) - gammaln(alpha) - gammaln(n + 1.0)
    else:
        rise = by.of(lambda m: gammaln(alpha + m) - gammaln(alpha) - gammaln(m + 1.0))
    return rise + alpha * np.log(beta / (beta + e)) + n * np.log(e / (beta + e))


def _qn(n: np.ndarray, e: np.ndarray, prior: GpsPrior, by: _ByCount | None = None) -> np.ndarray:
    if prior.p in (0.0, 1.0):
        return np.full(n.shape, prior.p)
    l1 = math.log(prior.p) + _log_nb(n, e, prior.alpha1, prior.beta1, by)
    l2 = math.log1p(-prior.p) + _log_nb(n, e, prior.alpha2, prior.beta2, by)
    return np.exp(l1 - np.logaddexp(l1, l2))


def posterior_weight(n: Any, e: Any, prior: GpsPrior) -> np.ndarray:
    """Qn: the posterior probability that a pair's λ comes from component 1 (DuMouchel eq. 6).

    Raises:
        ValidationError: n, e or prior malformed (see :func:`fit_gps_prior`).
    """
    n_arr, e_arr = _pair(n, e, "posterior_weight")
    return _qn(n_arr.astype(np.float64), e_arr, _prior(prior, "posterior_weight"))


def ebgm(n: Any, e: Any, prior: GpsPrior) -> np.ndarray:
    """Empirical Bayes geometric mean exp(E[log λ | n]) of each pair (module docstring).

    Raises:
        ValidationError: n, e or prior malformed (see :func:`fit_gps_prior`).
    """
    n_arr, e_arr = _pair(n, e, "ebgm")
    prior = _prior(prior, "ebgm")
    nf = n_arr.astype(np.float64)
    return _ebgm(nf, e_arr, prior, _qn(nf, e_arr, prior))


def _ebgm(nf: np.ndarray, e: np.ndarray, prior: GpsPrior, q: np.ndarray,
          by: _ByCount | None = None) -> np.ndarray:
    """:func:`ebgm` of checked arguments, given the posterior weights ``q`` (:func:`_qn`)."""
    if by is None:
        d1, d2 = digamma(prior.alpha1 + nf), digamma(prior.alpha2 + nf)
    else:
        alpha1, alpha2 = prior.alpha1, prior.alpha2
        d1 = by.of(lambda m: digamma(alpha1 + m))
        d2 = by.of(lambda m: digamma(alpha2 + m))
    log1 = d1 - np.log(prior.beta1 + e)
    log2 = d2 - np.log(prior.beta2 + e)
    return np.exp(q * log1 + (1.0 - q) * log2)


def _mixture_quantile(q: float, w: np.ndarray, a1: np.ndarray, b1: np.ndarray, a2: np.ndarray,
                      b2: np.ndarray) -> np.ndarray:
    """The q-quantile of w·Gamma(a1, b1) + (1 − w)·Gamma(a2, b2) (rates), elementwise.

    Safeguarded Newton on u = log x inside the bracket of the two components' q-quantiles
    (module docstring, choice 6).
    """
    # the components' quantiles depend on the shapes alone, α + n: few distinct ones in a table
    # of thousands of pairs, each inverted once (the inversion is the costly step; issue 43)
    x1 = _per_distinct(lambda a: gammaincinv(a, q), a1) / b1
    x2 = _per_distinct(lambda a: gammaincinv(a, q), a2) / b2
    with np.errstate(divide="ignore"):
        # a quantile below the smallest normal float is returned as that float (about 2e-308)
        u1, u2 = (np.maximum(np.log(x), _LOG_TINY) for x in (x1, x2))
    lo, hi = np.minimum(u1, u2), np.maximum(u1, u2)
    u = np.clip(w * u1 + (1.0 - w) * u2, lo, hi)
    single = (w <= 0.0) | (w >= 1.0)
    u[single] = np.where(w[single] >= 1.0, u1[single], u2[single])
    active = ~single & (hi - lo > QUANTILE_TOLERANCE) & np.isfinite(lo) & np.isfinite(hi)
    u[~single & (hi - lo <= QUANTILE_TOLERANCE)] = lo[~single & (hi - lo <= QUANTILE_TOLERANCE)]
    idx = np.flatnonzero(active)
    # the elements still iterating are kept in arrays of their own, shrunk as elements settle:
    # each element's steps are those of iterating it alone (every operation is elementwise),
    # without gathering and scattering every array from the whole ones at each step (issue 43)
    ui, wi, vi = u[idx], w[idx], 1.0 - w[idx]
    a1i, b1i, a2i, b2i = a1[idx], b1[idx], a2[idx], b2[idx]
    lo_i, hi_i = lo[idx], hi[idx]
    # each element's log Γ(a) once, not once per iteration (the same values: issue 43)
    lg1, lg2 = _per_distinct(gammaln, a1i), _per_distinct(gammaln, a2i)
    for _ in range(_MAXITER_QUANTILE):
        if idx.size == 0:
            break
        x = np.exp(ui)
        b1x, b2x = b1i * x, b2i * x
        gap = wi * gammainc(a1i, b1x) + vi * gammainc(a2i, b2x) - q
        lo_i = np.where(gap < 0, ui, lo_i)
        hi_i = np.where(gap > 0, ui, hi_i)
        # dF/du = x·pdf(x); each term exp(a log(bx) − bx − lgamma(a))
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            slope = (wi * np.exp(a1i * np.log(b1x) - b1x - lg1)
                     + vi * np.exp(a2i * np.log(b2x) - b2x - lg2))
            step = gap / slope
            new = ui - step
        outside = ~np.isfinite(new) | (new <= lo_i) | (new >= hi_i)
        new = np.where(outside, 0.5 * (lo_i + hi_i), new)
        settled = gap == 0
        done = settled | (np.abs(new - ui) <= QUANTILE_TOLERANCE) | (hi_i - lo_i <= QUANTILE_TOLERANCE)
        ui = np.where(settled, ui, new)
        u[idx[done]] = ui[done]
        left = ~done
        idx, ui, wi, vi, lo_i, hi_i = idx[left], ui[left], wi[left], vi[left], lo_i[left], hi_i[left]
        a1i, b1i, a2i, b2i, lg1, lg2 = (a1i[left], b1i[left], a2i[left], b2i[left], lg1[left],
                                        lg2[left])
    u[idx] = ui      # those still iterating after the last step: where it left them
    return np.exp(u)


def _per_distinct(f: Callable[[np.ndarray], np.ndarray], values: np.ndarray) -> np.ndarray:
    """The elementwise ``f`` of ``values``, computed once per distinct value (the same
    numbers: each element's result is its value's)."""
    if values.size < 2:
        return f(values)
    distinct, inverse = np.unique(values, return_inverse=True)
    return f(distinct)[inverse.reshape(values.shape)]


def eb_quantile(n: Any, e: Any, prior: GpsPrior, q: float) -> np.ndarray:
    """The q-quantile of each pair's posterior λ | n: EB05 with q = 0.05, EB95 with q = 0.95.

    Raises:
        ValidationError: q outside (0, 1); n, e or prior malformed (see :func:`fit_gps_prior`).
    """
    owner = "eb_quantile"
    n_arr, e_arr = _pair(n, e, owner)
    prior = _prior(prior, owner)
    q = _probability(q, owner)
    return _eb_quantiles(n_arr, e_arr, prior, (q,))[0]


def _eb_quantiles(n: np.ndarray, e: np.ndarray, prior: GpsPrior,
                  qs: Sequence[float]) -> list[np.ndarray]:
    """:func:`eb_quantile` of checked arguments at each of ``qs`` (the distinct pairs and their
    posterior weights found once for all of them)."""
    nf = n.astype(np.float64)
    # each distinct (n, E) solved once: a pair table repeats them (E = n_drug·n_reaction/N, n
    # small), every step is elementwise, so the values are those of solving every pair (issue 43)
    nf, e_d, back = _distinct_pairs(nf, e)
    w = _qn(nf, e_d, prior)
    a1, b1, a2, b2 = prior.alpha1 + nf, prior.beta1 + e_d, prior.alpha2 + nf, prior.beta2 + e_d
    return [_mixture_quantile(q, w, a1, b1, a2, b2)[back].reshape(n.shape) for q in qs]


#: Relative margin below a threshold within which the larger component quantile leaves the
#: decision EB_q >= threshold to the solved quantile (:func:`_eb_reaches`): far above the few
#: ulps by which the computed log and exp of the bracket can move it.
_BRACKET_MARGIN = 1e-9


def _eb_reaches(n: np.ndarray, e: np.ndarray, prior: GpsPrior, q: float,
                threshold: float, by: _ByCount | None = None) -> np.ndarray:
    """Whether each pair's q-quantile (:func:`_eb_quantiles`) is at least ``threshold``,
    solving it only for the pairs whose bracket does not decide.

    The mixture's quantile lies between its two components' own q-quantiles (choice 6), and
    the solver never leaves that bracket (a Newton step outside it is replaced by bisection), so
    a pair whose larger component quantile is below the threshold (by :data:`_BRACKET_MARGIN`)
    has its quantile below it too: no signal, whatever the mixture weight. On the 24 × 20,000
    ``evaluate`` that is 98% of the pairs at EB05 >= 2 (issue 43). Every other pair is solved
    by :func:`_eb_quantiles`, elementwise: its value, hence its decision, is the one a solve of
    the whole table gives it.
    """
    by = _ByCount(n.astype(np.float64)) if by is None else by
    x1 = by.of(lambda m: gammaincinv(prior.alpha1 + m, q)) / (prior.beta1 + e)
    x2 = by.of(lambda m: gammaincinv(prior.alpha2 + m, q)) / (prior.beta2 + e)
    # a NaN bracket compares False: such a pair is solved
    solved = ~(np.maximum(x1, x2) < threshold * (1.0 - _BRACKET_MARGIN))
    out = np.zeros(n.shape, dtype=bool)
    if solved.any():
        out[solved] = _eb_quantiles(n[solved], e[solved], prior, (q,))[0] >= threshold
    return out


def _distinct_pairs(n: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (n, e) of the given ones (float64 arrays of one length) and, for each given
    pair, the index of its own among them."""
    n, e = np.ravel(n), np.ravel(e)
    if n.size < 2:
        return n, e, np.arange(n.size)
    order = np.lexsort((e, n))
    ns, es = n[order], e[order]
    # values compared as numbers (==): -0.0 and 0.0 are one, as they give one result
    lead = np.ones(n.size, dtype=bool)
    lead[1:] = (ns[1:] != ns[:-1]) | (es[1:] != es[:-1])
    back = np.empty(n.size, dtype=np.int64)
    back[order] = np.cumsum(lead) - 1
    return ns[lead], es[lead], back


def _limit_weight(n: np.ndarray, e: np.ndarray, prior: LimitPrior) -> np.ndarray:
    """Qn under the limit prior: the posterior probability of its gamma component."""
    if prior.p in (0.0, 1.0):
        return np.full(n.shape, prior.p)
    l1 = math.log(prior.p) + _log_nb(n, e, prior.alpha, prior.beta)
    mu = prior.lam * e
    l2 = math.log1p(-prior.p) + n * np.log(mu) - mu - gammaln(n + 1.0)
    return np.exp(l1 - np.logaddexp(l1, l2))


def limit_scores(n: Any, e: Any, prior: LimitPrior, *, rr0: float = 1.0
                 ) -> dict[str, np.ndarray]:
    """EBGM, EB05, EB95 and P(λ <= ``rr0`` | n) of each pair under a :class:`LimitPrior`
    (choice 12).

    The posterior is Qn·Gamma(α + n, β + E) + (1 − Qn)·δ(λ): its CDF jumps by 1 − Qn at λ, so
    the q-quantile is the gamma's quantile of q/Qn below λ, λ itself while the jump covers q, and
    the gamma's quantile of (q − 1 + Qn)/Qn above it.

    Raises:
        ValidationError: n, e, prior or rr0 malformed.
    """
    owner = "limit_scores"
    n_arr, e_arr = _pair(n, e, owner)
    if not isinstance(prior, LimitPrior):
        raise ValidationError(f"The 'prior' parameter of {owner} must be a LimitPrior; got "
                              f"{type(prior).__name__}.")
    rr0 = _ratio(rr0, owner)
    nf = n_arr.astype(np.float64)
    w = _limit_weight(nf, e_arr, prior)
    a, b = prior.alpha + nf, prior.beta + e_arr
    below = w * gammainc(a, b * prior.lam)        # F(λ−): the gamma part below the mass

    def quantile(q: float) -> np.ndarray:
        out = np.full(nf.shape, prior.lam)
        with np.errstate(divide="ignore", invalid="ignore"):
            low = below >= q
            out[low] = gammaincinv(a[low], q / w[low]) / b[low]
            high = below + (1.0 - w) < q
            out[high] = gammaincinv(a[high], (q - 1.0 + w[high]) / w[high]) / b[high]
        return out

    with np.errstate(divide="ignore"):
        log_gamma = digamma(a) - np.log(b)
    return {"ebgm": np.exp(w * log_gamma + (1.0 - w) * math.log(prior.lam)),
            "eb05": quantile(MGPS_LOWER_QUANTILE), "eb95": quantile(MGPS_UPPER_QUANTILE),
            "p_h0": w * gammainc(a, b * rr0) + (1.0 - w) * float(prior.lam <= rr0)}


def _ratio(rr0: Any, owner: str) -> float:
    if (isinstance(rr0, bool) or not isinstance(rr0, numbers.Real) or not math.isfinite(rr0)
            or rr0 <= 0):
        raise ValidationError(f"The 'rr0' parameter of {owner} must be a finite number > 0; "
                              f"got {rr0!r}.")
    return float(rr0)


def information_component(n: Any, e: Any) -> np.ndarray:
    """BCPNN information component with Norén et al.'s shrinkage: log2((n + ½) / (e + ½)).

    Raises:
        ValidationError: n or e malformed (see :func:`fit_gps_prior`).
    """
    n_arr, e_arr = _pair(n, e, "information_component")
    return np.log2((n_arr + 0.5) / (e_arr + 0.5))


def ic_quantile(n: Any, e: Any, q: float) -> np.ndarray:
    """log2 of the q-quantile of Gamma(shape n + ½, rate e + ½): IC025 with q = 0.025.

    Raises:
        ValidationError: q outside (0, 1); n or e malformed (see :func:`fit_gps_prior`).
    """
    n_arr, e_arr = _pair(n, e, "ic_quantile")
    q = _probability(q, "ic_quantile")
    return _ic_quantile(e_arr, q, _ByCount(n_arr.astype(np.float64)))


def _ic_quantile(e: np.ndarray, q: float, by: _ByCount) -> np.ndarray:
    """:func:`ic_quantile` of checked arguments: one inversion per distinct count (issue 43)."""
    return np.log2(by.of(lambda m: gammaincinv(m + 0.5, q)) / (e + 0.5))


# ----------------------------------------------------------------------------- FDR decisions
def posterior_h0(n: Any, e: Any, prior: GpsPrior, rr0: float = 1.0) -> np.ndarray:
    """P(λ ≤ ``rr0`` | n) under the MGPS posterior of each pair (the mixture of two gammas):
    the posterior probability that the pair's relative reporting ratio is at most ``rr0`` (1:
    reported no more often than expected; PhViD's and vigipy's ``RR0``).

    Raises:
        ValidationError: ``rr0`` not a finite number > 0; n, e or prior malformed.
    """
    rr0 = _ratio(rr0, "posterior_h0")
    n_arr = np.asarray(n, dtype=np.float64)
    e_arr = np.asarray(e, dtype=np.float64)
    q = posterior_weight(n_arr, e_arr, prior)
    return _posterior_h0(n_arr, e_arr, prior, rr0, q)


def _posterior_h0(nf: np.ndarray, e: np.ndarray, prior: GpsPrior, rr0: float,
                  q: np.ndarray) -> np.ndarray:
    """:func:`posterior_h0` of checked arguments, given the posterior weights ``q``."""
    # the CDF at rr0 of Gamma(shape, rate) is the regularized lower incomplete gamma P(shape, rate·rr0)
    return (q * gammainc(prior.alpha1 + nf, (prior.beta1 + e) * rr0)
            + (1.0 - q) * gammainc(prior.alpha2 + nf, (prior.beta2 + e) * rr0))


def bayesian_fdr(p_h0: Any, q: float) -> tuple[np.ndarray, np.ndarray]:
    """The Bayesian FDR of each pair's rank and the decision at level ``q``.

    Pairs sorted by their posterior probability of H0 (stable: ties keep the given order), the
    FDR of the first k pairs is the mean of their probabilities; the decision keeps the longest
    such list whose FDR is at most ``q`` (the running mean only grows, so it is a prefix).

    Returns:
        (fdr at each pair's rank, in the given order; the boolean decisions).
    """
    p = np.asarray(p_h0, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    running = np.cumsum(p[order]) / np.arange(1, p.size + 1)
    fdr = np.empty_like(running)
    fdr[order] = running
    decided = np.zeros(p.size, dtype=bool)
    kept = int(np.searchsorted(running, q, side="right"))  # running is non-decreasing
    decided[order[:kept]] = True
    return fdr, decided


def prr_p_value(a: Any, b: Any, c: Any, d: Any) -> np.ndarray:
    """One-sided p-value of log PRR > 0, normal approximation on the +½-corrected table."""
    af, bf, cf, df = (np.asarray(x, dtype=np.float64) + 0.5 for x in (a, b, c, d))
    log_prr = np.log(af / (af + bf)) - np.log(cf / (cf + df))
    se = np.sqrt(1.0 / af - 1.0 / (af + bf) + 1.0 / cf - 1.0 / (cf + df))
    # the standard normal's upper tail, which is what scipy.stats.norm.sf computes (its
    # import costs a CLI command about 0.7 s of building distribution docstrings, issue 43)
    return ndtr(-(log_prr / se))


def benjamini_hochberg(p: Any) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values), over every value given."""
    p_arr = np.asarray(p, dtype=np.float64)
    m = p_arr.size
    if not m:
        return p_arr.copy()
    order = np.argsort(p_arr, kind="stable")
    scaled = p_arr[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


# ----------------------------------------------------------------------------- 2×2 statistics
def _prr_ror_chi2(a: np.ndarray, b: np.ndarray, c: np.ndarray,
                  d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """PRR, ROR, Yates χ² and the Evans signal of each 2×2 table, with the conventions (and the
    operation order, so the same floats) of :mod:`medanon.metrics.signals`."""
    af, bf, cf, df = (x.astype(np.float64) for x in (a, b, c, d))
    enough = a >= MIN_CASES
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (af / (af + bf)) / (cf / (cf + df))
        prr = np.where(c + d == 0, np.nan, np.where(c == 0, np.inf, ratio))
        prr = np.where(enough, prr, 0.0)
        bc = b * c
        ror = np.where(bc == 0, np.where(d > 0, np.inf, np.nan), (a * d) / bc)
        ror = np.where(enough, ror, 0.0)
    total = a + b + c + d
    # each factor pair multiplied in integers, then one float product: the single rounding of
    # signals.chi_square's exact integer product whenever it is below 2^53
    denominator = ((a + b) * (c + d)).astype(np.float64) * ((a + c) * (b + d)).astype(np.float64)
    excess = np.maximum(0.0, np.abs(a * d - b * c).astype(np.float64) - total / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = np.where(denominator == 0, 0.0, total * excess * excess / denominator)
    signal = enough & (np.isinf(prr) | ((prr >= MIN_PRR) & (chi2 >= MIN_CHI_SQUARE)))
    return prr, ror, chi2, signal


def _prr_haldane(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """:func:`medanon.metrics.signals.prr_haldane` of each 2×2 table (+½ in every cell):
    finite for every table, so a score every pair can be ranked by."""
    af, bf, cf, df = (x.astype(np.float64) for x in (a, b, c, d))
    return ((af + 0.5) / (af + bf + 1)) / ((cf + 0.5) / (cf + df + 1))


# ----------------------------------------------------------------------------- pair counting
def _column(rows: pd.DataFrame, name: Any, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValidationError(f"The {what!r} parameter of pair_counts must name columns; got "
                              f"{name!r}.")
    if name not in rows.columns:
        shown = ", ".join(repr(c) for c in list(rows.columns)[:20])
        raise SchemaError(f"The rows have no column {name!r} ({what} of pair_counts); their "
                          f"columns: {shown}.")
    return name


def _report_terms(cells: np.ndarray, upper: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (row, term) pairs of multi-valued cells, terms matched case-insensitively.

    Returns ``(rows, codes, names)`` sorted by row then code; codes follow the casefolded
    terms' sort order, and ``names[code]`` is the term's spelling first seen (row order, then
    order within the cell), upper-cased when ``upper``. The suppression mark is no term.
    """
    rows, codes, names = term_pairs(cells)
    folded = np.array([str(t).casefold() for t in names], dtype=object)
    key_codes, keys = pd.factorize(folded, sort=True)
    key_codes = key_codes.astype(np.int64)
    # term_pairs numbers terms in order of first appearance: the smallest raw code of a key is
    # its first-seen spelling
    first = np.full(len(keys), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, key_codes, np.arange(len(names), dtype=np.int64))
    shown = np.array([str(names[i]).upper() if upper else str(names[i]) for i in first],
                     dtype=object)
    codes = key_codes[codes] if codes.size else codes
    star = np.flatnonzero(np.asarray(keys, dtype=object) == SUPPRESSED)
    if star.size:
        keep = codes != star[0]
        rows, codes = rows[keep], codes[keep]
    width = max(len(keys), 1)
    pair = np.unique(rows * width + codes)  # a term spelled two ways in one report counts once
    return pair // width, pair % width, shown


def pair_counts(rows: pd.DataFrame, *, drug_columns: Sequence[str] | str = ("drugs",),
                reaction_column: str = "reactions", strata: Any = None) -> pd.DataFrame:
    """Count every drug–reaction pair over published rows (one row = one report).

    Args:
        rows: Published rows (strings as in ``release.csv``; multi-valued cells ``|``-joined,
            an empty cell missing, ``*`` suppressed).
        drug_columns: The drug columns; a report's drugs are the union of their terms (a bare
            string is one column).
        reaction_column: The reaction column.
        strata: None (the crude E), or each row's stratum as a whole number >= 0: ``e`` is
            then the stratum-adjusted Σ_s n_drug,s·n_reaction,s/n_total,s (DuMouchel 1999)
            and ``e_crude`` the crude one (choice 10).

    Returns:
        One row per pair listed together in at least one report, sorted by the casefolded drug
        then reaction, with the columns of :data:`PAIR_COLUMNS`: ``drug`` (first-seen spelling,
        upper-cased), ``reaction`` (first-seen spelling), ``n``, ``n_drug``, ``n_reaction``,
        ``n_total`` (reports listing at least one drug and one reaction), ``e`` =
        n_drug·n_reaction/n_total and the 2×2 table ``a``, ``b``, ``c``, ``d`` (module
        docstring; choice 8).

    Raises:
        ValidationError: ``rows`` is not a DataFrame, or a column name is not a string.
        SchemaError: a named column is absent.
    """
    if not isinstance(rows, pd.DataFrame):
        raise ValidationError(f"The 'rows' parameter of pair_counts must be a pandas DataFrame of "
                              f"published rows; got {type(rows).__name__}.")
    if isinstance(drug_columns, str):
        drug_columns = (drug_columns,)
    if not isinstance(drug_columns, Sequence) or not drug_columns:
        raise ValidationError(f"The 'drug_columns' parameter of pair_counts must be a non-empty "
                              f"list of column names; got {drug_columns!r}.")
    drug_cols = [_column(rows, c, "drug_columns") for c in drug_columns]
    reaction_col = _column(rows, reaction_column, "reaction_column")
    drug_cells = (cell_strings(rows[drug_cols[0]]) if len(drug_cols) == 1
                  else joined_terms(rows, drug_cols))
    d_rows, d_codes, drugs = _report_terms(drug_cells, upper=True)
    r_rows, r_codes, reactions = _report_terms(cell_strings(rows[reaction_col]), upper=False)
    return count_pairs(len(rows), d_rows, d_codes, drugs, r_rows, r_codes, reactions,
                       strata=_strata_codes(strata, len(rows), "pair_counts"))


def _strata_codes(strata: Any, reports: int, owner: str) -> np.ndarray | None:
    if strata is None:
        return None
    codes = np.asarray(strata)
    if (codes.ndim != 1 or codes.size != reports or not np.issubdtype(codes.dtype, np.integer)
            or (codes.size and codes.min() < 0)):
        raise ValidationError(f"The 'strata' parameter of {owner} must give each of the "
                              f"{reports} reports a stratum as a whole number >= 0; got "
                              f"{_describe(strata)}.")
    return codes.astype(np.int64)


#: pairs whose stratified E is summed at a time (a block of pairs × strata floats)
_STRATIFIED_PAIRS_AT_ONCE = 1 << 16


def _stratified_expected(strata: np.ndarray, eligible: np.ndarray, d_rows: np.ndarray,
                         d_codes: np.ndarray, drugs: int, r_rows: np.ndarray,
                         r_codes: np.ndarray, reactions: int, drug: np.ndarray,
                         reaction: np.ndarray) -> np.ndarray:
    """E = Σ_s n_drug,s · n_reaction,s / n_total,s of each (drug, reaction), over the eligible
    reports (the entries given are those of eligible reports)."""
    width = int(strata.max()) + 1 if strata.size else 1
    per_stratum = np.bincount(strata[eligible], minlength=width).astype(np.float64)
    inverse = np.divide(1.0, per_stratum, out=np.zeros(width), where=per_stratum > 0)
    by_drug = np.bincount(d_codes * width + strata[d_rows],
                          minlength=drugs * width).reshape(drugs, width) * inverse
    by_reaction = np.bincount(r_codes * width + strata[r_rows],
                              minlength=reactions * width).reshape(reactions, width)
    out = np.empty(drug.size)
    for lo in range(0, drug.size, _STRATIFIED_PAIRS_AT_ONCE):
        hi = lo + _STRATIFIED_PAIRS_AT_ONCE
        out[lo:hi] = np.einsum("ij,ij->i", by_drug[drug[lo:hi]], by_reaction[reaction[lo:hi]])
    return out


def count_pairs(reports: int, d_rows: np.ndarray, d_codes: np.ndarray, drugs: np.ndarray,
                r_rows: np.ndarray, r_codes: np.ndarray, reactions: np.ndarray,
                strata: np.ndarray | None = None, *,
                listed: np.ndarray | None = None) -> pd.DataFrame:
    """The :func:`pair_counts` table of reports already read into (report, term) codes.

    :func:`pair_counts` reads published rows into these arrays; the screening of a series
    (:mod:`.screening`) reads each release once and counts every scope from a subset of them,
    through this one function so that both give the same table.

    Args:
        reports: Reports are numbered ``0 .. reports - 1``.
        d_rows, d_codes: One entry per distinct (report, drug): the report's number and the
            drug's code. Codes follow the terms' sort order (casefolded), so that the table
            comes out sorted.
        drugs: ``drugs[code]`` is the drug's name as shown.
        r_rows, r_codes: The same for reactions, with ``r_rows`` in ascending order.
        reactions: ``reactions[code]`` is the reaction's name as shown.
        strata: Each report's stratum (int64 >= 0), or None: see :func:`pair_counts`.
        listed: The number of these reports listing each pair, in a dense array indexed by
            ``drug · max(len(reactions), 1) + reaction`` (what :func:`_pair_matrix` counts of
            them): given, the pairs are not counted again. Counts add up over reports, so a
            caller can make it from the counts of other sets of reports (issue 43).
    """
    # rows index arrays again and again below: as intp once, not converted by each indexing
    d_rows, r_rows = d_rows.astype(np.intp, copy=False), r_rows.astype(np.intp, copy=False)
    # the screened database: reports with at least one drug and at least one reaction
    eligible = np.zeros(reports, dtype=bool)
    eligible[d_rows] = True
    has_reaction = np.zeros(reports, dtype=bool)
    has_reaction[r_rows] = True
    eligible &= has_reaction
    keep_d, keep_r = eligible[d_rows], eligible[r_rows]
    # nearly every report lists both: the entries are copied only when some are dropped
    if not keep_d.all():
        d_rows, d_codes = d_rows[keep_d], d_codes[keep_d]
    if not keep_r.all():
        r_rows, r_codes = r_rows[keep_r], r_codes[keep_r]
    n_total = int(eligible.sum())
    n_drug = np.bincount(d_codes, minlength=len(drugs))
    n_reaction = np.bincount(r_codes, minlength=len(reactions))
    width = max(len(reactions), 1)
    if listed is None:
        pair, n = _pairs_listed(d_rows, d_codes, r_rows, r_codes, reports, len(drugs), width)
    else:
        pair = np.flatnonzero(listed)
        n = listed[pair]
    out = _pair_table(pair, n, n_drug, n_reaction, n_total, drugs, reactions)
    if strata is not None:
        drug, reaction = pair // width, pair % width
        out.insert(list(out.columns).index("e") + 1, "e_crude", out["e"])
        out["e"] = _stratified_expected(strata, eligible, d_rows, d_codes, len(drugs), r_rows,
                                        r_codes, len(reactions), drug, reaction)
    return out


def _pair_table(pair: np.ndarray, n: np.ndarray, n_drug: np.ndarray, n_reaction: np.ndarray,
                n_total: int, drugs: np.ndarray, reactions: np.ndarray) -> pd.DataFrame:
    """:func:`count_pairs`'s table (crude E) of its counts: the pairs listed (codes
    ``drug · max(len(reactions), 1) + reaction``, ascending) and how many reports list each,
    the reports listing each drug and each reaction, and the screened reports (those listing
    a drug and a reaction). A caller that has these counts otherwise (added up from parts of
    the reports: :mod:`.screening`'s strata) gets the same table from them."""
    width = max(len(reactions), 1)
    drug, reaction = pair // width, pair % width
    nd, nr, n = n_drug[drug].astype(np.int64), n_reaction[reaction].astype(np.int64), n.astype(np.int64)
    return pd.DataFrame({
        "drug": pd.Series(drugs[drug], dtype=object),
        "reaction": pd.Series(reactions[reaction], dtype=object),
        "n": n, "n_drug": nd, "n_reaction": nr,
        "n_total": np.full(n.size, n_total, dtype=np.int64),
        "e": nd * nr / n_total if n_total else np.zeros(0),
        "a": n, "b": nd - n, "c": nr - n, "d": n_total - nd - nr + n,
    })


#: (report, drug, reaction) triples enumerated at a time by :func:`count_pairs`: a pooled scope
#: of a long series lists tens of millions, which must not all be held at once.
_TRIPLES_AT_ONCE = 1 << 20
#: Drug × reaction tables at most this large are counted in a dense array (8 bytes a cell).
_DENSE_CELLS = 1 << 22


def _pair_matrix(d_rows: np.ndarray, d_codes: np.ndarray, r_rows: np.ndarray,
                r_codes: np.ndarray, reports: int, drugs: int, reactions: int) -> np.ndarray | None:
    """The number of reports listing each (drug, reaction), in a dense int64 array indexed by
    ``drug · max(reactions, 1) + reaction`` (``count_pairs``'s ``listed``); the arguments are
    :func:`count_pairs`'s (``drugs`` and ``reactions`` the sizes of the vocabularies). None
    when the vocabularies are too large for a dense array (:data:`_DENSE_CELLS`)."""
    width = max(reactions, 1)
    if drugs * width > _DENSE_CELLS:
        return None
    return _pairs_listed(d_rows, d_codes, r_rows, r_codes, reports, drugs, width, matrix=True)[1]


def _pairs_listed(d_rows: np.ndarray, d_codes: np.ndarray, r_rows: np.ndarray,
                  r_codes: np.ndarray, reports: int, drugs: int,
                  width: int, *, matrix: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Each pair code ``drug · width + reaction`` listed in some report, ascending, and the
    number of reports listing it (``r_rows`` ascending); with ``matrix`` (a dense table only),
    every code's count, listed or not, as the second array."""
    # every (report, drug, reaction): each drug entry repeated once per reaction of its report,
    # enumerated for a block of drug entries at a time
    per_row = np.bincount(r_rows, minlength=reports)
    first = np.concatenate(([0], np.cumsum(per_row)[:-1]))
    reps = per_row[d_rows]
    ends = np.cumsum(reps)
    dense = drugs * width <= _DENSE_CELLS
    counts = np.zeros(drugs * width if dense else 0, dtype=np.int64)
    found: list[tuple[np.ndarray, np.ndarray]] = []
    lo = 0
    while lo < len(d_rows):
        # at least one entry per block, however many reactions its report lists
        hi = max(int(np.searchsorted(ends, ends[lo] - reps[lo] + _TRIPLES_AT_ONCE, "right")),
                 lo + 1)
        block = reps[lo:hi]
        # the k-th triple of a drug entry takes the k-th reaction of its report
        reaction_at = np.repeat(first[d_rows[lo:hi]] - (np.cumsum(block) - block), block)
        reaction_at += np.arange(reaction_at.size, dtype=np.int64)
        code = np.repeat(d_codes[lo:hi].astype(np.int64), block)
        code *= width
        code += r_codes[reaction_at]
        if dense:
            counts += np.bincount(code, minlength=counts.size)
        else:
            found.append(np.unique(code, return_counts=True))
        lo = hi
    if matrix:
        return np.arange(counts.size), counts
    if dense:
        pair = np.flatnonzero(counts)
        return pair, counts[pair]
    if not found:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    codes = np.concatenate([f[0] for f in found])
    n = np.concatenate([f[1] for f in found])
    order = np.argsort(codes, kind="stable")
    codes, n = codes[order], n[order]
    lead = np.ones(codes.size, dtype=bool)
    lead[1:] = codes[1:] != codes[:-1]
    starts = np.flatnonzero(lead)
    return codes[starts], np.add.reduceat(n, starts)


# ------------------------------------------------------------------------------------ screen
def _table_column(table: pd.DataFrame, name: str) -> pd.Series:
    if name not in table.columns:
        raise SchemaError(f"The 'table' parameter of screen has no column {name!r} (it needs "
                          f"n, e, a, b, c, d as pair_counts returns them).")
    return table[name]


def screen(table: pd.DataFrame, *, prior: GpsPrior | None = None, min_count: int = 1,
           seed: int = 0, starts: int = GPS_STARTS, warm_start: GpsPrior | None = None,
           fdr: float = FDR_LEVEL, rr0: float = 1.0) -> tuple[pd.DataFrame, GpsPrior]:
    """Screen every pair of a :func:`pair_counts` table with MGPS, BCPNN and PRR.

    Args:
        table: Pair counts with at least the columns n, e, a, b, c, d.
        prior: A fixed GPS prior; None fits one on the table (:func:`fit_gps_prior`).
        min_count, seed, starts, warm_start: Passed to :func:`fit_gps_prior` when ``prior``
            is None.
        fdr: Level of the false-discovery-rate decisions (choice 11).
        rr0: The relative reporting ratio of the null hypothesis of the MGPS FDR decisions:
            ``p_h0_mgps`` is P(λ ≤ ``rr0`` | n) (choice 11; default 1).

    Returns:
        A copy of ``table`` with the columns of :data:`SCREEN_COLUMNS` added (``ebgm``,
        ``eb05``, ``eb95``, ``ic``, ``ic025``, ``prr``, ``ror``, ``chi2``, ``prr_corrected``
        (the Haldane–Anscombe PRR, always finite) and the flags
        ``signal_mgps`` = EB05 >= 2, ``signal_bcpnn`` = IC025 > 0, ``signal_prr`` = the
        Evans/MHRA rule), the FDR columns ``p_h0_mgps``, ``fdr_mgps``, ``p_prr``, ``q_prr`` and
        their decisions ``signal_mgps_fdr`` and ``signal_prr_fdr`` (choice 11),
        ``limit_prior_flips`` (choice 12), and the prior used.

    Raises:
        ValidationError: ``table`` is not a DataFrame, its counts are malformed, it is empty
            and no prior is given, ``prior`` is not a GpsPrior, or ``fdr`` is not in (0, 1).
        SchemaError: a needed column is absent.
    """
    columns, prior = screened_columns(table, prior=prior, min_count=min_count, seed=seed,
                                      starts=starts, warm_start=warm_start, fdr=fdr, rr0=rr0)
    out = table.copy()
    for name, values in columns.items():
        out[name] = values
    return out, prior


def screened_columns(table: pd.DataFrame, *, prior: GpsPrior | None = None, min_count: int = 1,
                     seed: int = 0, starts: int = GPS_STARTS, warm_start: GpsPrior | None = None,
                     fdr: float = FDR_LEVEL, rr0: float = 1.0, quantiles: bool = True
                     ) -> tuple[dict[str, np.ndarray], GpsPrior]:
    """The columns :func:`screen` adds to ``table`` (:data:`SCREEN_COLUMNS`, in that order) as
    arrays, and the prior: what a caller that keeps only the statistics needs, without the
    copy of the table (issue 43). Arguments and errors as :func:`screen`'s.

    ``quantiles=False`` leaves out ``eb05`` and ``eb95`` (unless the prior has a limit, whose
    decisions read them all): ``signal_mgps`` is then decided from each pair's bracket where
    it decides (:func:`_eb_reaches`), and a caller that shows a few pairs' EB05 and EB95
    solves them alone (:func:`eb_quantile`: the same values, pair by pair; issue 43)."""
    owner = "screen"
    fdr = _probability(fdr, owner, "fdr")
    if not isinstance(table, pd.DataFrame):
        raise ValidationError(f"The 'table' parameter of {owner} must be a pandas DataFrame from "
                              f"pair_counts; got {type(table).__name__}.")
    n = _counts(_table_column(table, "n").to_numpy(), "table.n", owner)
    e = _expected(_table_column(table, "e").to_numpy(), "table.e", owner)
    a, b, c, d = (_counts(_table_column(table, k).to_numpy(), f"table.{k}", owner)
                  for k in ("a", "b", "c", "d"))
    if prior is None:
        if n.size == 0:
            raise ValidationError(f"The 'table' parameter of {owner} has no pair: there is no "
                                  f"prior to fit (pass one as 'prior').")
        prior = fit_gps_prior(n, e, starts=starts, min_count=min_count, seed=seed,
                              warm_start=warm_start)
    prior = _prior(prior, owner)
    out: dict[str, np.ndarray] = {}
    # the counts' distinct values and the posterior weights Qn found once for every statistic
    # that reads them (each the values its own function computes: issue 43)
    nf = n.astype(np.float64)
    by = _ByCount(nf)
    weights = _qn(nf, e, prior, by)
    out["ebgm"] = _ebgm(nf, e, prior, weights, by)
    if quantiles or prior.limit is not None:
        out["eb05"], out["eb95"] = _eb_quantiles(n, e, prior,
                                                 (MGPS_LOWER_QUANTILE, MGPS_UPPER_QUANTILE))
        signal_mgps = out["eb05"] >= MGPS_EB05_THRESHOLD
    else:
        signal_mgps = _eb_reaches(n, e, prior, MGPS_LOWER_QUANTILE, MGPS_EB05_THRESHOLD, by)
    out["ic"] = information_component(n, e)
    out["ic025"] = _ic_quantile(e, BCPNN_QUANTILE, by)
    prr, ror, chi2, prr_signal = _prr_ror_chi2(a, b, c, d)
    out["prr"], out["ror"], out["chi2"] = prr, ror, chi2
    out["prr_corrected"] = _prr_haldane(a, b, c, d)
    out["signal_mgps"] = signal_mgps
    out["signal_bcpnn"] = out["ic025"] > BCPNN_IC025_THRESHOLD
    out["signal_prr"] = prr_signal
    rr0 = _ratio(rr0, owner)
    out["p_h0_mgps"] = _posterior_h0(nf, e, prior, rr0, weights)
    out["fdr_mgps"], out["signal_mgps_fdr"] = bayesian_fdr(out["p_h0_mgps"], fdr)
    out["p_prr"] = prr_p_value(a, b, c, d)
    out["q_prr"] = benjamini_hochberg(out["p_prr"])
    out["signal_prr_fdr"] = (out["q_prr"] <= fdr) & (a >= MIN_CASES)
    out[LIMIT_FLIP_COLUMN] = _limit_flips(out, n, e, prior, fdr, rr0)
    return out, prior


def _limit_flips(out: dict[str, np.ndarray], n: np.ndarray, e: np.ndarray, prior: GpsPrior,
                 fdr: float, rr0: float) -> np.ndarray:
    """Choice 12: for a prior held at its bound (no finite maximum), which of each pair's
    decisions differ under the limit the fit tends to: EB05 >= 2, EB95 < 2, the FDR list
    (``out``: the columns screened so far)."""
    flips = np.full(n.size, "", dtype=object)
    if prior.limit is None or not n.size:
        return flips
    held = (out["eb05"] >= MGPS_EB05_THRESHOLD, out["eb95"] < MGPS_EB95_CLEAR,
            out["signal_mgps_fdr"].astype(bool))
    scores = limit_scores(n, e, prior.limit, rr0=rr0)
    at_limit = (scores["eb05"] >= MGPS_EB05_THRESHOLD, scores["eb95"] < MGPS_EB95_CLEAR,
                bayesian_fdr(scores["p_h0"], fdr)[1])
    names = [np.where(h != lim, name, "")
             for name, h, lim in zip(("eb05", "eb95", "fdr"), held, at_limit, strict=True)]
    for i in np.flatnonzero(np.logical_or.reduce([h != lim for h, lim in zip(held, at_limit)])):
        flips[i] = ",".join(x[i] for x in names if x[i])
    return flips
