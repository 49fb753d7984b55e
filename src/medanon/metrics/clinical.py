"""Utility of an element-level release: paper 003's clinical information loss and KL divergence.

Paper 003 (Bonomi, Gousheh, Fan, CIKM'23), §5.1; reconstructed choices in ``algorithms.md`` §4.9.

**Clinical information loss (CIL).** For patient j with original elements ``R_j = (e_1..e_n)`` and
released ``R̂_j = (ê_1..ê_n)`` (aligned element by element), ``CIL_j = (1/n) Σ_i d(e_i, ê_i)``, with
the dissimilarity d of 003 Eq. 4 supplied by the caller (any vectorized ``d(a, b)``; ``d(e, e) = 0``
and ``d(·, root) = 1`` in 003). The reported figure is the mean of ``CIL_j`` over patients; 003
reports it for the patients with at least one sensitive element in the original data
(``only_patients``). Each patient weighs the same, whatever the number of its elements.

**KL divergence.** ``D_KL(P ‖ Q) = Σ_e P(e) ln(P(e) / Q(e))`` where P is the empirical distribution
of the elements of the original records and Q that of the released ones, over the union V of the
symbols of both. Reconstructed choices (003 names the measure only):

* direction original ‖ released (the usual one; 003 does not state it);
* Q is smoothed as ``(count + α) / (N + α|V|)`` so that it has no zero cell; P is not smoothed and
  its zero cells contribute 0;
* the root symbol ``*`` of a suppressed element is a symbol of its own (it is never in P, so it only
  takes mass from Q).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from .._validation import _fail
from ..errors import ValidationError

__all__ = ["clinical_information_loss", "clinical_information_loss_by_patient", "kl_divergence",
           "kl_divergence_to_estimate"]

Dissimilarity = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _as_strings(values: object, name: str) -> np.ndarray:
    series = pd.Series(values) if not isinstance(values, pd.Series) else values
    if series.isna().any():
        raise ValidationError(f"{name} has missing values.")
    return np.asarray(series.astype(str), dtype=object)


def clinical_information_loss_by_patient(original_codes: object, released_codes: object,
                                         patients: object, *, dissimilarity: Dissimilarity,
                                         only_patients: Iterable[object] | None = None) -> pd.Series:
    """Per-patient ``CIL_j = mean_i d(e_i, ê_i)``, indexed by patient (order of first appearance).

    Args:
        original_codes: The original element of each row.
        released_codes: The released element of each row (same length, aligned).
        patients: The patient of each row.
        dissimilarity: ``d(a, b)`` on two equally long string arrays → float array; called once,
            on the distinct (original, released) pairs.
        only_patients: Keep only some patients: either a boolean array aligned with the rows (a
            patient is kept when any of its rows is True — pass "the original element is
            sensitive" to get 003's selection) or a collection of patient ids. The per-patient
            mean always runs over all of a kept patient's elements.

    Raises:
        ValidationError: lengths differ, missing values, or a dissimilarity of the wrong shape or
            with NaN values.
    """
    orig = _as_strings(original_codes, "original_codes")
    rel = _as_strings(released_codes, "released_codes")
    pats = pd.Series(patients).to_numpy() if not isinstance(patients, pd.Series) else patients.to_numpy()
    if not (len(orig) == len(rel) == len(pats)):
        raise ValidationError(f"original_codes, released_codes and patients must have the same "
                              f"length; got {len(orig)}, {len(rel)}, {len(pats)}.")
    if pd.isna(pats).any():
        raise ValidationError("patients has missing values.")
    pat_idx, pat_ids = pd.factorize(pats)
    if len(orig) == 0:
        return pd.Series(np.zeros(0), index=pat_ids, dtype=float, name="cil")

    pair_idx, pair_uniques = pd.factorize(pd.MultiIndex.from_arrays([orig, rel]))
    a = np.asarray(pair_uniques.get_level_values(0), dtype=object)
    b = np.asarray(pair_uniques.get_level_values(1), dtype=object)
    d = np.asarray(dissimilarity(a, b), dtype=float)
    if d.shape != (len(a),):
        raise ValidationError(f"The dissimilarity returned shape {d.shape}; expected ({len(a)},).")
    if np.isnan(d).any():
        raise ValidationError("The dissimilarity returned NaN values.")
    per_row = d[pair_idx]
    n = np.bincount(pat_idx, minlength=len(pat_ids))
    cil = np.bincount(pat_idx, weights=per_row, minlength=len(pat_ids)) / n
    out = pd.Series(cil, index=pat_ids, name="cil")

    if only_patients is not None:
        mask = np.asarray(only_patients)
        if mask.dtype == bool:
            if mask.shape != (len(orig),):
                raise ValidationError(f"A boolean only_patients must be aligned with the rows "
                                      f"({len(orig)}); got shape {mask.shape}.")
            kept = np.bincount(pat_idx, weights=mask.astype(float), minlength=len(pat_ids)) > 0
            out = out[kept]
        else:
            out = out[out.index.isin(list(only_patients))]
    return out


def clinical_information_loss(original_codes: object, released_codes: object, patients: object, *,
                              dissimilarity: Dissimilarity,
                              only_patients: Iterable[object] | None = None) -> float:
    """003's clinical information loss: the mean over (kept) patients of ``CIL_j``.

    Same arguments as :func:`clinical_information_loss_by_patient`. Returns NaN when no patient is
    kept.
    """
    per_patient = clinical_information_loss_by_patient(
        original_codes, released_codes, patients, dissimilarity=dissimilarity,
        only_patients=only_patients)
    if len(per_patient) == 0:
        return float("nan")
    return float(per_patient.mean())


def kl_divergence(original_codes: object, released_codes: object, *,
                  smoothing: float = 1e-6) -> float:
    """``D_KL(P ‖ Q)`` of the element distributions, original (P) against released (Q), in nats.

    Args:
        original_codes: The elements of the original records.
        released_codes: The elements of the released records (the root ``*`` is a symbol).
        smoothing: α of ``Q(e) = (count(e) + α) / (N + α|V|)``; 0 gives the unsmoothed divergence
            (``inf`` when Q misses a symbol of P).

    Raises:
        ValidationError: an empty input, missing values, or a negative ``smoothing``.
    """
    owner = "kl_divergence"
    if isinstance(smoothing, bool) or not isinstance(smoothing, numbers.Real) \
            or math.isnan(float(smoothing)) or math.isinf(float(smoothing)) or smoothing < 0:
        raise _fail("smoothing", owner, "a finite number >= 0", smoothing)
    alpha = float(smoothing)
    orig = _as_strings(original_codes, "original_codes")
    rel = _as_strings(released_codes, "released_codes")
    if len(orig) == 0 or len(rel) == 0:
        raise ValidationError("kl_divergence needs at least one original and one released element.")
    idx, symbols = pd.factorize(np.concatenate([orig, rel]))
    n_sym = len(symbols)
    return _kl(np.bincount(idx[:len(orig)], minlength=n_sym).astype(float),
               np.bincount(idx[len(orig):], minlength=n_sym).astype(float), alpha)


def _kl(p_counts: np.ndarray, q_counts: np.ndarray, alpha: float) -> float:
    """D_KL of P = p_counts normalized against Q = (q_counts + α)/(Σ q_counts + α·|V|)."""
    p = p_counts / p_counts.sum()
    q = (q_counts + alpha) / (q_counts.sum() + alpha * len(q_counts))
    support = p > 0
    if (q[support] == 0).any():
        return math.inf
    return float(np.sum(p[support] * np.log(p[support] / q[support])))


def kl_divergence_to_estimate(original_codes: object, estimated_shares: pd.Series, n_released: int, *,
                              smoothing: float = 1e-6) -> float:
    """``D_KL(P ‖ Q̂)`` with Q̂ the code distribution an analyst *estimates* from the release.

    003 does not say whether its KL compares the original distribution with the released codes as
    they are (:func:`kl_divergence`, spec §4.9) or with the distribution recovered by the
    mechanism's estimator (003 §4.2); for randomized methods the two differ widely, so both are
    reported. ``estimated_shares`` (code -> share, summing to 1; the root ``*`` is a symbol) is
    scaled to ``n_released`` pseudo-counts and smoothed like :func:`kl_divergence`.
    """
    orig = _as_strings(original_codes, "original_codes")
    if len(orig) == 0 or n_released <= 0:
        raise ValidationError("kl_divergence_to_estimate needs original elements and n_released > 0.")
    shares = pd.Series(estimated_shares, dtype=float)
    symbols = pd.Index(pd.unique(np.concatenate([orig, shares.index.to_numpy(dtype=object)])))
    p_counts = pd.Series(orig).value_counts().reindex(symbols, fill_value=0).to_numpy(dtype=float)
    q_counts = shares.reindex(symbols, fill_value=0.0).to_numpy(dtype=float) * n_released
    return _kl(p_counts, q_counts, float(smoothing))
