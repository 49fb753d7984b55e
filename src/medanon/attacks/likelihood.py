"""The likelihood-weighted attacker on perturbed QIDs, and the hard exclusions it starts from.

Perturbed values (paper 000's Laplace and exponential perturbation) are evidence, not facts:
every output of these mechanisms has positive probability under every input, so no perturbed
value can exclude a candidate for sure. The attacks of this package therefore read a series
in two layers (issue 17):

**Hard exclusion.** A candidate is excluded only by CaseID linkage (001's B-, F-, L-attacks,
002's MD-attack), by unperturbed (generalized) QIDs, or by a perturbed value that is impossible
under the mechanism whatever the target's value (bounded support only: a strict-variant Laplace
value outside its public domain). :func:`hard_series` gives the series every attack links and
covers with: in each release declaring ``PPMS-DP(k, theta*, epsilon)`` the QIDs its model
declares perturbed are blanked (an empty cell allows the whole domain), except paper-variant
values the manifest declares exact (``details.exact_groups``: noise scale below the published
precision), which stay as generalized values.

**Likelihood weighting.** For a target with true QID values t, each candidate r kept by the hard
exclusions gets the weight

    w_r = Π_{(p, q)} P_{p,q}(y_{r,p,q} | t_q) / m_{p,q}(y_{r,p,q})                     (L1)

over every linked release p (within the life span, the attacked release included) that is a
strict PPMS-DP release holding r's case, and every QID q that p perturbs; y_{r,p,q} is the value
p published, P the mechanism's probability of it (:mod:`medanon.mechanisms.likelihood`) and m
its probability under the adversary's prior for a record that is *not* the target: uniform over
the public domain (Laplace) or over the hierarchy's record values (exponential mechanism). The
posterior is

    π_r = w_r / Σ_{r' kept} w_r'                                                          (L2)

Why divide by m: with a uniform prior over which candidate is the target and the other records
drawn from the prior, Bayes gives π_r ∝ P(y_r | t) · Π_{r'≠r} m(y_r') ∝ P(y_r | t)/m(y_r). Without
the division, the point masses of the clipped Laplace (a value clipped to 0 kg has probability
~0.4 at ε = 0.5, an interior value ~10^-5 per 0.01 bin) would swamp the weights with the
rounding grid, not with evidence; with it, ε-DP bounds every factor to [e^{-ε}, e^{ε}], which is
what the combined bound of :mod:`medanon.models.dp_bound` assumes. A perturbed QID the adversary
does not know for the target contributes the same factor to every candidate and is left out. A
numeric target known only as an interval uses the mean probability over it; a categorical target
that is not a record value of its hierarchy (e.g. an inner node) the mean over the record values
it covers. A release that publishes its perturbed labels coarsened to a declared level
(``details.label_levels``, PPMS-DP_all's ``label_confidence``) is weighed with the coarsened
table of :mod:`medanon.mechanisms.coarsening`: a published ancestor w has the summed probability
of every perturbed label under it, so the ε-DP bound on each factor still holds.

Releases whose noise scale is not published — PPMS-DP's ``paper`` variant, where each group's
scale is its own (local) spread — give no likelihood evidence here: the attacker would have to
guess the scale. Their perturbed values are used for nothing but the exact groups above, and the
attack on such a release is the hard-exclusion attacker alone (which understates what an
attacker who estimates the scale from the group's published spread can do).

This module reads published strings and manifests only (``design.md`` rule 6).

References: paper 000 §IV.B-C (the Laplace and exponential perturbations attacked here) and §V
(RR, AR_rev); 001 Definitions 2-4 and 002 Definition 5 (the hard exclusions). Beyond the papers
(none of them attacks its own noise): the likelihood weighting, the uniform prior for m, the
plug-in targets of the worst case (:mod:`.worst_case`) and the treatment of the paper variant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypedDict

import numpy as np

from ..errors import InputFormatError
from ..mechanisms.coarsening import published_log_table
from ..mechanisms.likelihood import laplace_log_likelihood
from ..models.periodic import Perturbation, dp_models, hard_series
from ..published.cells import QidInfo
from ..published.links import Region, ReleaseView, read_view
from ..published.series import PublishedSeries

__all__ = ["HARD", "LIKELIHOOD", "LikelihoodAttacker", "TargetValues", "hard_series",
           "posterior"]

#: the names of the two attackers, as reports print them.
HARD = "hard-exclusion"
LIKELIHOOD = "likelihood-weighted"


@dataclass
class TargetValues:
    """What the adversary knows of each target's true QID values (one row per target).

    Attributes:
        n: Number of targets.
        numeric: name -> (lo, hi) arrays; lo == hi for a known point, an interval otherwise,
            NaN where unknown.
        categorical: name -> node codes (−1 where unknown).
    """

    n: int
    numeric: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    categorical: dict[str, np.ndarray] = field(default_factory=dict)

    def take(self, index: np.ndarray) -> "TargetValues":
        return TargetValues(len(index),
                            {k: (a[index], b[index]) for k, (a, b) in self.numeric.items()},
                            {k: v[index] for k, v in self.categorical.items()})

    @classmethod
    def from_region(cls, region: Region, qids: tuple[QidInfo, ...],
                    known: Mapping[str, np.ndarray] | frozenset[str] | None = None,
                    ) -> "TargetValues":
        """From a :class:`~medanon.published.links.Region` of targets (one row each).

        ``known``: per QID a bool array of known rows, or a set of known QID names (all rows),
        or None (every finite value is known).
        """
        n = None
        numeric, categorical = {}, {}
        for q in qids:
            if q.kind == "numeric":
                lo = np.asarray(region.lo[q.name], dtype=np.float64).ravel()
                hi = np.asarray(region.hi[q.name], dtype=np.float64).ravel()
                ok = np.isfinite(lo) & np.isfinite(hi)
                n = len(lo)
            else:
                codes = np.asarray(region.cat[q.name], dtype=np.int64).ravel()
                ok = codes >= 0
                n = len(codes)
            if isinstance(known, frozenset):
                ok = ok & (q.name in known)
            elif known is not None:
                ok = ok & np.asarray(known[q.name], dtype=bool).ravel()
            if q.kind == "numeric":
                numeric[q.name] = (np.where(ok, lo, np.nan), np.where(ok, hi, np.nan))
            else:
                categorical[q.name] = np.where(ok, codes, -1)
        return cls(n or 0, numeric, categorical)


class _LaplaceParams(TypedDict):
    """The keyword parameters of ``laplace_log_likelihood`` for one strict Laplace QID."""

    epsilon: Fraction
    lo: float
    hi: float
    decimals: int


@dataclass
class _Evidence:
    """One perturbed QID of one linked strict release, aligned to the attacked release's rows."""

    qid: str
    present: np.ndarray        # the case appears in that release (with a readable value)
    values: np.ndarray         # published value (float) or node code (int)
    log_prior: np.ndarray      # log m(value) under the adversary's prior for non-targets
    numeric: bool
    laplace: _LaplaceParams | None = None  # numeric evidence only
    rows_table: np.ndarray | None = None  # categorical only: [target node, published node] -> log P


class LikelihoodAttacker:
    """Hard exclusions and likelihood weights over one published series (see module doc).

    Args:
        series: The published series.
        lifespan: Link only releases at most this many periods apart (None: all).
        views: A cache of parsed releases of ``series`` (shared with other readers).

    Raises:
        InputFormatError: a PPMS-DP manifest lacks a field its model needs.
    """

    def __init__(self, series: PublishedSeries, *, lifespan: int | None = None,
                 views: dict[str, ReleaseView] | None = None):
        self.series = series
        self.lifespan = lifespan
        self.models = dp_models(series)
        self.hard = hard_series(series, self.models)
        self.views = views if views is not None else {}
        # the hard series shares the cache only when it is the series itself
        self.hard_views = self.views if self.hard is series else {}
        self._evidence: dict[str, list[_Evidence]] = {}
        self._tables: dict[tuple[str, str, Fraction, int | None], tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------------------ facts
    def applies(self, label: str) -> bool:
        """Whether release ``label`` is attacked with likelihood weights (a strict PPMS-DP
        release: its noise scale is public)."""
        model = self.models.get(label)
        return model is not None and model.is_dp and bool(model.perturbed)

    def attacker(self, label: str) -> str:
        """:data:`LIKELIHOOD` or :data:`HARD` for release ``label``."""
        return LIKELIHOOD if self.applies(label) else HARD

    def k_of(self, label: str) -> int | None:
        params = ((self.series.manifests.get(label) or {}).get("method") or {}).get("parameters")
        k = (params or {}).get("k")
        return int(k) if k is not None else None

    def view(self, label: str) -> ReleaseView:
        """The release as published (perturbed values included)."""
        if label not in self.views:
            self.views[label] = read_view(self.series, label)
        return self.views[label]

    def _qid(self, name: str) -> QidInfo | None:
        return next((q for q in self.series.qids if q.name == name), None)

    def _categorical_tables(self, q: QidInfo, p: Perturbation) -> tuple[np.ndarray, np.ndarray]:
        """(rows_table, log_prior per published node) of the strict categorical perturbation
        ``p`` (000's exponential draw, or randomized response over a level's labels), its labels
        published at the level the release declares (a published ancestor has the summed
        probability of the drawn labels under it)."""
        key = (q.name, p.mechanism, p.epsilon, p.level)
        if key not in self._tables:
            tax = q.hierarchy
            table = published_log_table(tax.parent_array, tax.depth_array, p.epsilon,
                                        mechanism=p.mechanism, level=p.level)
            values = np.flatnonzero(tax.value_mask)
            # A target that is a record value is exact; any other node stands for the record
            # values it covers (mean probability over them).
            rows = table.copy()
            for node in np.flatnonzero(~tax.value_mask).tolist():
                under = values[tax.covers_codes(node, values)]
                if under.size:
                    rows[node] = _log_mean_exp(table[under], axis=0)
            prior = _log_mean_exp(table[values], axis=0)
            self._tables[key] = (rows, prior)
        return self._tables[key]

    def evidence(self, label: str) -> list[_Evidence]:
        """The perturbed values that bear on each record of ``label`` (every linked strict
        PPMS-DP release holding its case, ``label`` included)."""
        if label in self._evidence:
            return self._evidence[label]
        own = self.view(label)
        out: list[_Evidence] = []
        for other_label, model in self.models.items():
            if not model.is_dp:
                continue
            other = self.view(other_label)
            if self.lifespan is not None and abs(other.ordinal - own.ordinal) > self.lifespan:
                continue
            pos = other.index.get_indexer(own.index)  # own.index is pd.Index(own.case)
            hit = pos >= 0
            if not hit.any():
                continue
            for p in model.perturbations:
                q = self._qid(p.qid)
                if q is None:
                    continue
                if p.mechanism == "laplace" and q.kind == "numeric" and p.domain is not None:
                    lo_v = np.where(hit, other.region.lo[q.name][np.maximum(pos, 0)], np.nan)
                    hi_v = np.where(hit, other.region.hi[q.name][np.maximum(pos, 0)], np.nan)
                    # a blank or interval cell is not a perturbed value: no evidence
                    present = hit & np.isfinite(lo_v) & (lo_v == hi_v)
                    values = np.where(present, lo_v, 0.0)
                    params = _LaplaceParams(
                        epsilon=p.epsilon, lo=p.domain[0], hi=p.domain[1],
                        decimals=int(p.decimals if p.decimals is not None else 2))
                    prior = np.zeros(own.n)
                    if present.any():
                        prior[present] = laplace_log_likelihood(
                            values[present], params["lo"], params["hi"], **params)
                    out.append(_Evidence(q.name, present, values, prior, True, laplace=params))
                elif (p.mechanism in ("exponential", "randomized-response")
                      and q.kind == "categorical"):
                    codes = np.where(hit, other.region.cat[q.name][np.maximum(pos, 0)], -1)
                    present = codes >= 0
                    if p.level is not None and (q.hierarchy.depth_array[codes[present]]
                                                > p.level).any():
                        # the coarsened table gives such a label probability 0: it would
                        # exclude candidates for sure on the strength of a false declaration
                        raise InputFormatError(
                            f"Release {other_label} publishes {q.name!r} labels below the level "
                            f"its manifest declares ('details.label_levels.{q.name}' = "
                            f"{p.level}).")
                    rows_table, node_prior = self._categorical_tables(q, p)
                    prior = np.where(present, node_prior[np.maximum(codes, 0)], 0.0)
                    out.append(_Evidence(q.name, present, np.maximum(codes, 0), prior, False,
                                         rows_table=rows_table))
                else:
                    raise InputFormatError(
                        f"The manifest of {other_label} declares the {p.mechanism} mechanism for "
                        f"the {q.kind} QID {q.name!r}; the attacks know the Laplace mechanism for "
                        f"numeric and the exponential mechanism and randomized response for "
                        f"categorical QIDs.")
        self._evidence[label] = out
        return out

    # ---------------------------------------------------------------------------- weights
    def log_weights(self, label: str, targets: TargetValues,
                    rows: np.ndarray | None = None) -> np.ndarray:
        """log w_r (L1) for every target (rows of the result) and record ``rows`` of ``label``.

        −inf marks a record whose perturbed value is impossible under the mechanism (it is
        excluded for sure); 0 everywhere when no linked strict release bears on the records.
        """
        own = self.view(label)
        rows = np.arange(own.n) if rows is None else np.asarray(rows, dtype=np.int64)
        total = np.zeros((targets.n, len(rows)))
        for ev in self.evidence(label):
            present = ev.present[rows]
            if not present.any():
                continue
            cols = rows[present]
            if ev.numeric:
                bounds = targets.numeric.get(ev.qid)
                if bounds is None:
                    continue
                t_lo, t_hi = bounds
                assert ev.laplace is not None  # numeric evidence is Laplace (evidence())
                known = np.isfinite(t_lo)
                if not known.any():
                    continue
                ll = laplace_log_likelihood(ev.values[cols][None, :],
                                            np.where(known, t_lo, 0.0)[:, None],
                                            np.where(known, t_hi, 0.0)[:, None], **ev.laplace)
            else:
                codes = targets.categorical.get(ev.qid)
                if codes is None:
                    continue
                known = codes >= 0
                if not known.any():
                    continue
                assert ev.rows_table is not None  # categorical evidence has its table
                ll = ev.rows_table[np.maximum(codes, 0)][:, ev.values[cols]]
            prior = ev.log_prior[cols][None, :]
            with np.errstate(invalid="ignore"):
                ratio = np.where(np.isneginf(ll), -np.inf, ll - prior)
            total[:, present] += np.where(known[:, None], ratio, 0.0)
        return total


def posterior(log_w: np.ndarray, candidate: np.ndarray | None = None) -> np.ndarray:
    """π (L2) row by row: softmax of ``log_w`` over the candidates (0 elsewhere).

    A row without any possible candidate is all zeros.
    """
    log_w = np.asarray(log_w, dtype=np.float64)
    if candidate is not None:
        log_w = np.where(candidate, log_w, -np.inf)
    if log_w.shape[-1] == 0:
        return np.zeros_like(log_w)
    top = log_w.max(axis=-1, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore"):
        w = np.exp(log_w - safe)
    w = np.where(np.isfinite(top), w, 0.0)
    total = w.sum(axis=-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


def _log_mean_exp(a: np.ndarray, axis: int) -> np.ndarray:
    top = a.max(axis=axis, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):  # a label never published (coarsened tables): −inf
        out = safe + np.log(np.exp(a - safe).mean(axis=axis, keepdims=True))
    return np.squeeze(out, axis=axis)
