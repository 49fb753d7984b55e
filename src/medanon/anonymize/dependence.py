"""Dependence between elements of longitudinal records and greedy bounding of the leakage it causes.

Paper 003 (Bonomi, Gousheh, Fan, CIKM'23), §3 "Mitigating privacy inference due to dependent
elements"; reconstructed formulas in ``algorithms.md`` §4.5–4.6.

**The dependence graph** :class:`DependenceGraph` is learned on auxiliary data (003 uses an 80% split
disjoint from the evaluated records). Its nodes are every element (code) of the auxiliary data; an
edge ``(a, b)`` carries

    δ(a, b) = #patients with an occurrence of a followed by an occurrence of b
              in a strictly later admission within ΔT days  /  #patients with a,

with no self loops. "Observed after" (003 §3) is read as *a strictly later admission*: two codes of
the same admission are not ordered (the order of the diagnosis positions is a billing priority, not
time). Admission ranks are taken as chronological; when the times are usable, the time of the later
admission minus the time of the earlier one must be at most ΔT. When the dates are unusable (``time``
NaN on every row) every later admission counts and the graph records ``delta_t_checked=False``.
Each patient counts at most once per pair. ``Pr[e']`` is the empirical frequency of ``e'`` among all
events of the auxiliary data.

**Path probability** (003: "the conditional probability which accounts for all paths from e' to
e_i"; spec §4.5): ``P(e' ⇝ t) = min(1, Σ_{ℓ=1..L} (W^ℓ)[e', t])`` with ``W[a, b] = δ(a, b)``, i.e. the
sum over all directed walks of length ≤ L of the products of their edge weights, capped at 1. It is
computed as repeated sparse × dense products on the target columns only.

**Greedy bounding** (:func:`bound_leakage`, 003 §3): for each original sensitive element ``s``,
``Leak(s) = Σ_{e' ∈ X_NS} P(e' ⇝ s)·Pr[e']``, where ``X_NS`` is the graph's codes minus the sensitive
set minus the elements already added. While some ``Leak(s) > γ``, the non-sensitive element with the
largest ``Σ_{s violating} P(e' ⇝ s)·Pr[e']`` is moved to the protected set.

**What it guarantees, and what not.** On return, the graph-estimated leakage of every original
sensitive element is at most γ *on the auxiliary data, under the learned graph*. This is a heuristic
(003's own approximation ``Pr[e = e_i | G, X_NS] ≈ Σ P(e_i | e')·Pr[e']``), not a formal privacy
guarantee: the ε-LDP guarantee of the mechanism covers the protected set only, and if the learned
dependence is weaker than what the adversary knows, the adversary can still infer sensitive elements
from the truthful non-sensitive ones (003 §7).

**Deviations and choices (reconstructed).**

* Path aggregation is the capped sum of walk products; a noisy-OR over simple paths is an equally
  plausible reading of 003 (spec §4.5). The sum counts walks that revisit nodes and may exceed 1,
  hence the cap.
* The leak targets stay the *original* sensitive set; added elements only enlarge the protected set
  (spec §4.6's "sensible reading"). Paths through sensitive or added elements are kept: the graph is
  not changed by protection.
* The greedy score sums over the sensitive elements *currently violating* the bound, not over all of
  X_S as the text does. This is our refinement: an element that only feeds already-bounded targets
  is not worth protecting. With a single violating target it picks that target's largest
  contributor. Ties are broken by the smallest code.
* One γ for all sensitive elements, as in 003's experiments.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import sparse

from .._validation import _fail, check_int
from ..errors import SchemaError, ValidationError

__all__ = ["DependenceGraph", "LeakageBound", "bound_leakage"]

# Later-admission pairs materialized at once when learning (a few tens of bytes of memory each).
_CHUNK_PAIRS = 2_000_000
# Pair counts are accumulated in a dense bincount when |V|^2 is at most this.
_DENSE_COUNT = 1 << 22


def _check_nonnegative(value: object, *, name: str, owner: str, allow_inf: bool,
                       positive: bool = False) -> float:
    requirement = "a number > 0" if positive else "a number >= 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(name, owner, requirement, value)
    out = float(value)
    if math.isnan(out) or out < 0 or (positive and out == 0) or (math.isinf(out) and not allow_inf):
        raise _fail(name, owner, requirement, value)
    return out


def _run_starts(*columns: np.ndarray) -> np.ndarray:
    """Boolean mask: True where a row differs from the previous one in any column (row 0: True)."""
    n = len(columns[0])
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
        for c in columns:
            change[1:] |= c[1:] != c[:-1]
    return change


@dataclass(frozen=True, eq=False)
class DependenceGraph:
    """Directed dependence graph of 003 §3 (see the module docstring for the definitions).

    Attributes:
        codes: The nodes, every element of the auxiliary data, sorted.
        weights: ``W[a, b] = δ(a, b)`` as a ``len(codes) × len(codes)`` CSR matrix, no self loops.
        frequency: ``Pr[e']``, the empirical frequency of each code among all events (sums to 1).
        delta_t_days: ΔT in days.
        delta_t_checked: False when the dates were unusable and every later admission counted.
        n_patients: Patients in the auxiliary data.
    """

    codes: tuple[str, ...]
    weights: sparse.csr_matrix
    frequency: np.ndarray
    delta_t_days: float
    delta_t_checked: bool
    n_patients: int
    _index: pd.Index = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        codes = tuple(str(c) for c in self.codes)
        if any(a >= b for a, b in zip(codes, codes[1:])):
            raise ValidationError("The codes of a DependenceGraph must be sorted and distinct.")
        n = len(codes)
        if self.weights.shape != (n, n) or np.shape(self.frequency) != (n,):
            raise ValidationError(f"A DependenceGraph over {n} codes needs a {n}x{n} weight matrix "
                                  f"and {n} frequencies; got {self.weights.shape} and "
                                  f"{np.shape(self.frequency)}.")
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "_index", pd.Index(list(codes), dtype=object))

    def __len__(self) -> int:
        return len(self.codes)

    # ------------------------------------------------------------------ learning
    @classmethod
    def learn(cls, events: pd.DataFrame, *, delta_t_days: float = 300.0,
              chunk_pairs: int = _CHUNK_PAIRS) -> DependenceGraph:
        """Learn the graph from an events table.

        Args:
            events: One row per (patient, admission, code) occurrence with columns ``patient``,
                ``admission_rank`` (chronological rank of the admission within the patient),
                ``code`` and, optionally, ``time`` (days; NaN on every row when dates are
                unusable). Row order does not matter.
            delta_t_days: ΔT; 003 uses 300 days. ``inf`` disables the window.
            chunk_pairs: At most this many later-admission pairs are materialized at once (whole
                patients per chunk; one patient with more pairs forms a chunk of its own).

        Raises:
            SchemaError: a required column is missing.
            ValidationError: no events, a missing code, or times NaN on some rows only.
        """
        owner = "DependenceGraph.learn"
        missing = [c for c in ("patient", "admission_rank", "code") if c not in events.columns]
        if missing:
            raise SchemaError(f"The events table lacks the column(s) {', '.join(missing)}.")
        delta = _check_nonnegative(delta_t_days, name="delta_t_days", owner=owner, allow_inf=True)
        chunk_pairs = check_int(chunk_pairs, name="chunk_pairs", owner=owner, minimum=1)
        n_events = len(events)
        if n_events == 0:
            raise ValidationError("Cannot learn a dependence graph from an empty events table.")
        if events["code"].isna().any() or events["patient"].isna().any():
            raise ValidationError("The events table has missing patients or codes.")

        code_idx, uniques = pd.factorize(events["code"].astype(str), sort=True)
        codes = tuple(str(u) for u in uniques)
        n_codes = len(codes)
        patient_idx, patients = pd.factorize(events["patient"])
        rank = events["admission_rank"].to_numpy(dtype=np.int64)
        if "time" in events.columns:
            time = events["time"].to_numpy(dtype=np.float64)
        else:
            time = np.full(n_events, np.nan)
        nan_time = np.isnan(time)
        if nan_time.any() and not nan_time.all():
            raise ValidationError("The 'time' column must be NaN on every row (unusable dates) or "
                                  "on none; it is NaN on some rows only.")
        checked = not nan_time.all()
        windowed = checked and math.isfinite(delta)

        frequency = np.bincount(code_idx, minlength=n_codes) / float(n_events)

        # One row per (patient, admission, code), sorted.
        order = np.lexsort((code_idx, rank, patient_idx))
        p, r, c, t = patient_idx[order], rank[order], code_idx[order], time[order]
        keep = _run_starts(p, r, c)
        p, r, c, t = p[keep], r[keep], c[keep].astype(np.int64), t[keep]
        m = len(p)

        # Patients holding each code.
        pc = np.sort(p.astype(np.int64) * n_codes + c)
        n_with = np.bincount(pc[_run_starts(pc)] % n_codes, minlength=n_codes)

        adm_start = np.flatnonzero(_run_starts(p, r))
        pat_start = np.flatnonzero(_run_starts(p))
        adm_id = np.cumsum(_run_starts(p, r)) - 1
        pat_id = np.cumsum(_run_starts(p)) - 1
        next_adm = np.append(adm_start[1:], m)[adm_id]          # first row of a later admission
        pat_end_all = np.append(pat_start[1:], m)
        end = pat_end_all[pat_id]                               # one past the patient's last row

        exact_filter = False
        if windowed:
            same = p[1:] == p[:-1]
            monotone = bool(np.all(np.diff(t)[same] >= 0))
            if monotone:
                # Rows of the patient with time <= t_i + ΔT form a prefix of the patient's rows.
                base = t - t.min()
                span = float(base.max()) + delta + 1.0
                composite = pat_id.astype(np.float64) * span + base
                slack = 1e-9 * max(1.0, float(composite.max()))
                limit = np.searchsorted(composite, composite + delta + slack, side="right")
                end = np.minimum(end, limit)
            exact_filter = True
        counts = np.maximum(end - next_adm, 0)

        # Chunks of whole patients with at most ``chunk_pairs`` pairs each (or one patient).
        cum = np.concatenate([[0], np.cumsum(counts)])
        bounds = np.append(pat_start, m)
        cum_at = cum[bounds]
        n_pat = len(pat_start)
        pieces_ab: list[np.ndarray] = []
        pieces_n: list[np.ndarray] = []
        n_sq = np.int64(n_codes) * np.int64(n_codes)
        start = 0
        while start < n_pat:
            stop = int(np.searchsorted(cum_at, cum_at[start] + chunk_pairs, side="right")) - 1
            stop = min(max(stop, start + 1), n_pat)
            r0, r1 = int(bounds[start]), int(bounds[stop])
            start = stop
            n = counts[r0:r1]
            total = int(n.sum())
            if total == 0:
                continue
            rows = np.arange(r0, r1, dtype=np.int64)
            i = np.repeat(rows, n)
            offset = np.cumsum(n) - n
            j = np.arange(total, dtype=np.int64) + np.repeat(next_adm[r0:r1] - offset, n)
            if exact_filter:
                ok = (t[j] - t[i]) <= delta
                i, j = i[ok], j[ok]
            a, b = c[i], c[j]
            ok = a != b
            key = (p[i[ok]].astype(np.int64) - int(p[r0])) * n_sq + a[ok] * n_codes + b[ok]
            del i, j, a, b, ok
            key.sort()                        # sort-based: numpy's hash unique is slow here
            ab = key[_run_starts(key)] % n_sq
            del key
            if n_sq <= _DENSE_COUNT:
                n_ab = np.bincount(ab, minlength=int(n_sq))
                ab = np.flatnonzero(n_ab)
                n_ab = n_ab[ab]
            else:
                ab.sort()
                first = np.flatnonzero(_run_starts(ab))
                n_ab = np.diff(np.append(first, len(ab)))
                ab = ab[first]
            pieces_ab.append(ab)
            pieces_n.append(n_ab)

        if pieces_ab:
            pairs = np.concatenate(pieces_ab)
            weights = np.concatenate(pieces_n).astype(np.float64)
        else:
            pairs = np.zeros(0, dtype=np.int64)
            weights = np.zeros(0)
        w = sparse.coo_matrix((weights, (pairs // n_codes, pairs % n_codes)),
                              shape=(n_codes, n_codes)).tocsr()
        w.sum_duplicates()
        row_of = np.repeat(np.arange(n_codes), np.diff(w.indptr))
        w.data = w.data / n_with[row_of]
        return cls(codes=codes, weights=w, frequency=frequency, delta_t_days=delta,
                   delta_t_checked=checked, n_patients=len(patients))

    # ------------------------------------------------------------------ queries
    def index_of(self, codes: Iterable[str]) -> np.ndarray:
        """Node index of each code (int64), ``-1`` for a code absent from the graph."""
        values = list(codes) if not isinstance(codes, (np.ndarray, pd.Series, pd.Index)) else codes
        if len(values) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(self._index.get_indexer(pd.Index(np.asarray(values, dtype=object))),
                          dtype=np.int64)

    def path_probability(self, targets: Sequence[str], *, max_length: int = 2) -> np.ndarray:
        """``P(e' ⇝ t) = min(1, Σ_{ℓ=1..L} (W^ℓ)[e', t])`` for every node e' and target t.

        Returns:
            A ``(len(codes), len(targets))`` float array; a target absent from the graph gets a
            zero column.
        """
        max_length = check_int(max_length, name="max_length", owner="path_probability", minimum=1)
        idx = self.index_of(targets)
        out = np.zeros((len(self.codes), len(idx)))
        present = idx >= 0
        if not present.any():
            return out
        block = self.weights[:, idx[present]].toarray()
        total = block.copy()
        for _ in range(max_length - 1):
            block = np.asarray(self.weights @ block)
            total += block
        out[:, present] = np.minimum(total, 1.0)
        return out


@dataclass(frozen=True)
class LeakageBound:
    """The outcome of :func:`bound_leakage`.

    Attributes:
        protected: The sensitive elements (as given, duplicates removed), then the added ones in
            order of addition: the protected set ``Y_P`` of the mechanism.
        added: The non-sensitive elements moved to the protected set, in order of addition.
        leak_before: ``Leak(s)`` of each original sensitive element before any addition.
        leak_after: ``Leak(s)`` after the additions (each ``<= gamma``).
        gamma: The bound γ.
        max_length: L, the longest path counted.
    """

    protected: tuple[str, ...]
    added: tuple[str, ...]
    leak_before: dict[str, float]
    leak_after: dict[str, float]
    gamma: float
    max_length: int

    @property
    def max_leak_before(self) -> float:
        return max(self.leak_before.values(), default=0.0)

    @property
    def max_leak_after(self) -> float:
        return max(self.leak_after.values(), default=0.0)


def bound_leakage(graph: DependenceGraph, sensitive: Iterable[str], *, gamma: float,
                  max_length: int = 2) -> LeakageBound:
    """Greedily protect non-sensitive elements until every ``Leak(s) <= gamma`` (003 §3).

    Args:
        graph: The dependence graph learned on auxiliary data.
        sensitive: The original sensitive elements X_S (the leak targets). Elements absent from
            the graph have zero leak.
        gamma: The bound γ > 0 (003 uses 0.01, 0.05, 0.1).
        max_length: L, the longest path counted by :meth:`DependenceGraph.path_probability`.

    Raises:
        ValidationError: ``gamma`` is not > 0, or ``max_length`` is not an integer >= 1.
    """
    owner = "bound_leakage"
    gamma = _check_nonnegative(gamma, name="gamma", owner=owner, allow_inf=True, positive=True)
    max_length = check_int(max_length, name="max_length", owner=owner, minimum=1)
    targets = list(dict.fromkeys(str(s) for s in sensitive))
    contrib = graph.path_probability(targets, max_length=max_length) * graph.frequency[:, None]
    available = np.ones(len(graph.codes), dtype=bool)
    idx = graph.index_of(targets)
    available[idx[idx >= 0]] = False
    contrib[~available] = 0.0          # rows of X_NS only; protected rows never contribute

    leak = contrib.sum(axis=0)
    leak_before = {s: float(v) for s, v in zip(targets, leak)}
    added: list[int] = []
    blocked = ~available                      # sensitive or already added: never chosen

    def scores(violating: np.ndarray) -> np.ndarray:
        out = contrib[:, violating].sum(axis=1)
        out[blocked] = -1.0
        return out

    while True:
        leak = contrib.sum(axis=0)            # exact; recomputed each time the violators change
        violating = leak > gamma
        if not violating.any():
            break
        score = scores(violating)
        progressed = False
        while True:
            best = int(np.argmax(score))      # first maximum = smallest code (codes are sorted)
            if score[best] <= 0.0:
                break
            added.append(best)
            blocked[best] = True
            leak -= contrib[best]             # incremental: remove e*'s row from every leak
            contrib[best] = 0.0
            score[best] = -1.0
            progressed = True
            if not np.array_equal(leak > gamma, violating):
                break
        if not progressed:                    # only rounding residue is left
            break
    leak_after = contrib.sum(axis=0)
    added_codes = tuple(graph.codes[k] for k in added)
    return LeakageBound(protected=tuple(targets) + added_codes, added=added_codes,
                        leak_before=leak_before,
                        leak_after={s: float(v) for s, v in zip(targets, leak_after)},
                        gamma=gamma, max_length=max_length)
