"""The inference attack of paper 003 (Eq. 3) and its Maximum Attacker's Precision (MAP).

Paper 003 (Bonomi, Gousheh, Fan, CIKM'23), §3 "Adversarial model", Eq. 3 and §5.1 "MAP";
reconstructed in ``algorithms.md`` §4.8.

The adversary knows the sensitive universe X_S, the mechanism (its likelihood ``Pr[M(e) = ê]``) and
the dependence graph G. For every released element ê in the mechanism's protected output set Y_P
(for suppression: every root symbol ``*``) it guesses

    e* = argmax_{s ∈ X_S}  Pr[ê | e = s] · Pr[e = s | G, O_NS]                       (003 Eq. 3)

where O_NS are the patient's other released elements *outside* Y_P (truthful, since the mechanism
reports them unchanged) and the denominator of Eq. 3 is constant in s.

Reconstructed choices (the paper gives Eq. 3 but not the prior's formula nor the precision's):

* Prior: ``Pr[e = s | G, O_NS] ∝ Σ_{e' ∈ O_NS} P(e' ⇝ s)`` over the *distinct* elements of O_NS,
  with the path probability of :class:`~medanon.anonymize.dependence.DependenceGraph`. Spec §4.8
  also multiplies each term by the neighbour's frequency ``Pr[e']`` (the weighting 003 §3 uses to
  bound leakage over *unseen* records; ``weight_neighbours=True``). For an attacker who *sees* e' in
  the record, that weighting only lets the most common codes (hypertension, …) drown the telling
  ones: on the synthetic data it lowers suppression's MAP from 0.83 to 0.42, far below 003's
  reported > 0.8, so the unweighted sum — the stronger attacker — is the default. Released elements
  absent from the graph (or the root symbol) contribute nothing.
* When that sum is 0 for every s (no informative neighbour), the prior falls back to ``∝ Pr[s]``
  (the graph frequency of s), and to uniform when those are all 0 too. When likelihood × prior is 0
  for every s, the same fallbacks are tried in turn; the adversary always guesses.
* Ties go to the first sensitive code in sorted order.
* ``prec(s) = #{attacked outputs with e* = s and true element s} / #{attacked outputs with e* = s}``;
  attacked outputs whose true input is non-sensitive (or an added protected element) are false
  positives when predicted. ``MAP = max_s prec(s)`` over the s with at least ``min_predictions``
  predictions (003 Table 1 reports MAP = 1.0 for suppression with a strong prior).
* Which guesses are scored (issue 31): by default every attacked output, so randomized
  non-sensitive codes that land in Y_P are false positives (spec §4.8; what a reader of the release
  achieves). 003 §3/§5.1 describe recovering the obfuscated *sensitive* elements;
  ``scored="sensitive-inputs"`` scores only those (same guesses). With p_S near 1 at small ε the
  two differ by an order of magnitude (``docs/algorithms/clinsim.md``, "Why our MAP and CIL differ
  from 003's").
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from .._validation import check_choice, check_int
from ..errors import SchemaError, ValidationError

__all__ = ["SCORED", "InferenceResult", "inference_attack"]

#: which guesses enter the precision (see :func:`inference_attack`)
SCORED = ("attacked-outputs", "sensitive-inputs")

Likelihood = Callable[[np.ndarray, Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class InferenceResult:
    """The outcome of :func:`inference_attack`.

    Attributes:
        map: The Maximum Attacker's Precision, or None when it is undefined (no code has
            ``min_predictions`` predictions; see ``map_undefined_reason``).
        precision: ``prec(s)`` of each sensitive code with at least one prediction.
        predictions: Number of attacked outputs guessed as each sensitive code (all codes).
        correct: Of those, how many had that code as their true element (all codes).
        attacked: Number of attacked outputs (released elements in Y_P).
        qualified: Whether some code had at least ``min_predictions`` predictions.
        map_code: The sensitive code reaching the MAP (first in sorted order), or None.
        min_predictions: The threshold a code's predictions must reach to enter the MAP.
    """

    map: float | None
    precision: dict[str, float]
    predictions: dict[str, int]
    correct: dict[str, int]
    attacked: int
    qualified: bool = True
    map_code: str | None = None
    min_predictions: int = 1

    @property
    def map_undefined_reason(self) -> str | None:
        """Why :attr:`map` is None (None when it is defined)."""
        if self.qualified:
            return None
        if self.attacked == 0:
            return "no released element is in the attacked output set, so the attacker makes no guess"
        most = max(self.predictions.items(), key=lambda kv: kv[1], default=None)
        shown = f"; the most guessed code, {most[0]!r}, has {most[1]}" if most and most[1] else ""
        return (f"no sensitive code was guessed at least {self.min_predictions} times "
                f"({self.attacked} attacked outputs{shown}); precision on fewer guesses is not "
                "reported")


def _strings(values: pd.Series, name: str) -> np.ndarray:
    if values.isna().any():
        raise ValidationError(f"The released table has missing values in column {name!r}.")
    return np.asarray(values.astype(str), dtype=object)


def inference_attack(released: pd.DataFrame, *, sensitive: Sequence[str], likelihood: Likelihood,
                     attacked_outputs: Collection[str], path_prob: np.ndarray,
                     graph_codes: Sequence[str], frequency: np.ndarray,
                     min_predictions: int = 1, weight_neighbours: bool = False,
                     scored: str = "attacked-outputs") -> InferenceResult:
    """Run 003's Eq. 3 attack on every protected output and measure its precision.

    Args:
        released: One row per element with columns ``patient``, ``code`` (the true element) and
            ``released`` (the published element; the root ``*`` for suppression).
        sensitive: The original sensitive set X_S (the candidates of Eq. 3).
        likelihood: ``likelihood(outputs, candidates)`` → array ``(len(outputs), len(candidates))``
            of ``Pr[M(c) = ê]``; supplied by the mechanism. Called once, on the distinct attacked
            outputs and the sorted sensitive codes.
        attacked_outputs: The mechanism's protected output set Y_P (``("*",)`` for suppression).
            Released elements outside it are taken as truthful (O_NS) and are not attacked.
        path_prob: ``P(e' ⇝ s)``, shape ``(len(graph_codes), len(sensitive))``, columns in the
            order of ``sensitive`` (e.g. ``graph.path_probability(sensitive)``).
        graph_codes: The graph's nodes (rows of ``path_prob``).
        frequency: ``Pr[e']`` of each graph node (the graph's empirical frequency).
        min_predictions: A code enters the MAP only with at least this many predictions.
        weight_neighbours: True weights each observed neighbour by its frequency ``Pr[e']`` (spec
            §4.8's reading); False (the default) sums ``P(e' ⇝ s)`` over the neighbours alone.
        scored: Which guesses enter ``prec(s)``. ``"attacked-outputs"`` (the default): every
            attacked output, so an output in Y_P drawn from a non-sensitive input (probability
            p_S/|Y_P| each) is a false positive when guessed as s — what an attacker reading the
            release achieves. ``"sensitive-inputs"``: only the outputs whose true element is in
            ``sensitive`` (003 §3 and §5.1 speak of inferring the *obfuscated sensitive
            elements*; an evaluation that knows which positions were sensitive). The attack and
            its prior are the same; only the denominator of the precision changes.

    Raises:
        SchemaError: a required column is missing.
        ValidationError: inconsistent shapes, missing values, an empty sensitive set, or a
            likelihood of the wrong shape or with negative values.
    """
    owner = "inference_attack"
    missing = [c for c in ("patient", "code", "released") if c not in released.columns]
    if missing:
        raise SchemaError(f"The released table lacks the column(s) {', '.join(missing)}.")
    min_predictions = check_int(min_predictions, name="min_predictions", owner=owner, minimum=1)
    scored = check_choice(scored, name="scored", owner=owner, choices=SCORED)
    given = [str(s) for s in sensitive]
    if not given:
        raise ValidationError("The sensitive set of inference_attack is empty.")
    graph_codes = [str(c) for c in graph_codes]
    path_prob = np.asarray(path_prob, dtype=np.float64)
    frequency = np.asarray(frequency, dtype=np.float64)
    if path_prob.shape != (len(graph_codes), len(given)):
        raise ValidationError(f"path_prob has shape {path_prob.shape}; expected "
                              f"({len(graph_codes)}, {len(given)}) = (graph codes, sensitive).")
    if frequency.shape != (len(graph_codes),):
        raise ValidationError(f"frequency has shape {frequency.shape}; expected "
                              f"({len(graph_codes)},).")

    # Candidates in sorted order (the tie-break); one column per distinct sensitive code.
    cands = sorted(set(given))
    first_col = {s: given.index(s) for s in cands}
    path_prob = path_prob[:, [first_col[s] for s in cands]]
    k = len(cands)
    graph_index = pd.Index(graph_codes, dtype=object)
    cand_rows = graph_index.get_indexer(pd.Index(cands, dtype=object))
    freq_prior = np.where(cand_rows >= 0, frequency[np.maximum(cand_rows, 0)], 0.0)
    if freq_prior.sum() <= 0:
        freq_prior = np.ones(k)
    freq_prior = freq_prior / freq_prior.sum()
    uniform = np.full(k, 1.0 / k)

    if released["patient"].isna().any():
        raise ValidationError("The released table has missing values in column 'patient'.")
    patient_idx, _ = pd.factorize(released["patient"])
    true = _strings(released["code"], "code")
    out = _strings(released["released"], "released")
    protected_outputs = pd.Index(sorted({str(o) for o in attacked_outputs}), dtype=object)
    is_attacked = protected_outputs.get_indexer(pd.Index(out, dtype=object)) >= 0
    n_patients = int(patient_idx.max()) + 1 if len(patient_idx) else 0

    # Graph prior of every patient: Σ over the distinct truthful elements e' of P(e'⇝s)·Pr[e'].
    truthful = ~is_attacked
    node = graph_index.get_indexer(pd.Index(out[truthful], dtype=object))
    pat = patient_idx[truthful]
    keep = node >= 0
    pairs = np.unique(pat[keep].astype(np.int64) * max(len(graph_codes), 1) + node[keep])
    n_nodes = max(len(graph_codes), 1)
    seen = sparse.csr_matrix((np.ones(len(pairs)), (pairs // n_nodes, pairs % n_nodes)),
                             shape=(n_patients, len(graph_codes)))
    weights = path_prob * frequency[:, None] if weight_neighbours else path_prob
    prior = np.asarray(seen @ weights)
    mass = prior.sum(axis=1)
    informed = mass > 0
    prior[informed] /= mass[informed, None]
    prior[~informed] = freq_prior

    # Likelihood of each distinct attacked output.
    rows = np.flatnonzero(is_attacked)
    outputs, out_idx = np.unique(out[rows].astype(str), return_inverse=True)
    predicted = np.zeros(len(rows), dtype=np.int64)
    if len(rows):
        lik = np.asarray(likelihood(np.asarray(outputs, dtype=object), list(cands)), dtype=float)
        if lik.shape != (len(outputs), k):
            raise ValidationError(f"The likelihood returned shape {lik.shape}; expected "
                                  f"({len(outputs)}, {k}) = (outputs, sensitive codes).")
        if np.isnan(lik).any() or (lik < 0).any():
            raise ValidationError("The likelihood returned negative or NaN values.")
        row_lik = lik[out_idx]
        posterior = row_lik * prior[patient_idx[rows]]
        for fallback in (freq_prior, uniform):
            dead = ~(posterior > 0).any(axis=1)
            if not dead.any():
                break
            posterior[dead] = row_lik[dead] * fallback
        predicted = np.argmax(posterior, axis=1)   # first maximum: sorted-order tie-break

    cand_of_true = pd.Index(cands, dtype=object).get_indexer(pd.Index(true[rows], dtype=object))
    if scored == "sensitive-inputs":
        predicted, cand_of_true = predicted[cand_of_true >= 0], cand_of_true[cand_of_true >= 0]
    hit = cand_of_true == predicted
    n_pred = np.bincount(predicted, minlength=k)
    n_correct = np.bincount(predicted[hit], minlength=k)
    precision = {cands[j]: float(n_correct[j] / n_pred[j]) for j in range(k) if n_pred[j] > 0}
    eligible = [j for j in range(k) if n_pred[j] >= min_predictions]
    if eligible:
        best = max(eligible, key=lambda j: (n_correct[j] / n_pred[j], -j))
        value, code, qualified = float(n_correct[best] / n_pred[best]), cands[best], True
    else:
        value, code, qualified = None, None, False
    return InferenceResult(map=value, precision=precision,
                           predictions={cands[j]: int(n_pred[j]) for j in range(k)},
                           correct={cands[j]: int(n_correct[j]) for j in range(k)},
                           attacked=int(len(rows)), qualified=qualified, map_code=code,
                           min_predictions=min_predictions)
