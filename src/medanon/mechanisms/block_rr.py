"""Block-structured randomized response over a protected output set (ClinSimRR's mechanism).

Bonomi, Gousheh and Fan, "Enabling health data sharing with fine-grained privacy", CIKM 2023
(paper 003), §4.2, Eqs. 6–7 and Algorithm 1; the utility-optimized randomized response uRR
("UMAXRR") of Murakami and Kawamoto (USENIX Security 2019) is the special case b = 1 (spec
§4.1). The domain is split into the protected set Y_P (m elements; the sensitive codes and any
code added to protect them) and everything else. Each protected element i has a *block* B_i of b
protected elements that contains i (ClinSimRR: i and its b − 1 most similar protected elements).

    protected input i:    output y ∈ B_i with probability p_T/b,
                          output y ∈ Y_P \\ B_i with probability (1 − p_T)/(m − b)
    unprotected input x:  output y ∈ Y_P with probability p_S/m, output x itself with 1 − p_S

with Algorithm 1's p_T = e^ε b/(m − b + e^ε b) and p_S = (m/e^ε)·max{p_T/b, (1 − p_T)/(m − b)},
which simplifies to p_S = m/(m − b + e^ε b). Writing D = m − b + e^ε b, every output y ∈ Y_P then
has probability e^ε/D (inside the input's block) or 1/D (outside it, or any unprotected input).

Privacy guarantee: (Y_P, ε)-utility-optimized LDP, per reported element. For every pair of inputs
x, x' (protected or not) and every output y ∈ Y_P, Pr[M(x) = y] <= e^ε Pr[M(x') = y]; a protected
input is always reported inside Y_P. Theorem 1 of 003 checks only the protected → unprotected
direction of cases 4–5; the reverse direction also holds with Algorithm 1's p_S (spec §4.4).
Not guaranteed: an output outside Y_P reveals the (unprotected) input exactly — that is the point
of the relaxation — and a record with several protected elements composes (ε per element).

With ``randomize_unprotected=False`` unprotected inputs are always reported as they are (p_S = 0):
that is plain |Y_P|-ary randomized response restricted to the sensitive elements, 003's "RR" baseline.
It is ε-LDP only among protected inputs; an output in Y_P shows that the input was protected.

Edge case (spec §4.4): b = m makes (1 − p_T)/(m − b) a 0/0; p_T = 1 then and the output is uniform
over Y_P.

Sampling: the in-block/out-of-block choice (and the unprotected report-or-keep choice) compares a
uniform on the 2^-53 grid with the probability rounded to a double, so each output probability is
off by at most 2^-53 in absolute terms; the choice of an element inside the block, or outside it, is
exactly uniform (:meth:`.NoiseSource.uniform_int_array`). p_T and p_S are computed in the form
b/(b + (m − b)e^-ε) and m e^-ε/(b + (m − b)e^-ε) so that no e^ε overflows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import _fail
from ..accounting.accountant import Accountant
from .base import Mechanism
from ..random import Randomness
from .noise import NoiseSource, check_noise

__all__ = ["BlockRandomizedResponse", "UNPROTECTED"]

_OWNER = "BlockRandomizedResponse"
UNPROTECTED = -1  # index of "an element outside Y_P" (an input kept as it is, or an unprotected input)


class BlockRandomizedResponse(Mechanism):
    """Eqs. 6–7 of 003 over protected elements ``0..m-1`` with blocks of size b.

    Args:
        epsilon: ε > 0 per reported element (read exactly; 0.1 means 1/10).
        blocks: an (m, b) integer array; row i lists the block B_i of protected element i, which
            must contain i and no repeated element. b = 1 gives uRR.
        randomize_unprotected: False for plain randomized response among the protected elements
            (unprotected inputs always kept).

    Raises:
        ValidationError: for a non-positive ε, a malformed block array, or a block without its
            own element.
    """

    name = "block-randomized-response"
    sampler = ("in or out of the block: a 53-bit uniform against the probability (double); the "
               "element within: exactly uniform")

    def __init__(self, *, epsilon: Any, blocks: Any, randomize_unprotected: bool = True) -> None:
        super().__init__(epsilon=epsilon)
        blocks = np.asarray(blocks)
        if blocks.ndim != 2 or blocks.shape[0] < 1 or blocks.shape[1] < 1 \
                or not np.issubdtype(blocks.dtype, np.integer):
            raise _fail("blocks", _OWNER, "an (m, b) integer array with m >= 1 and b >= 1",
                        f"an array of shape {blocks.shape} and dtype {blocks.dtype}")
        m, b = blocks.shape
        if b > m or blocks.min() < 0 or blocks.max() >= m:
            raise _fail("blocks", _OWNER, f"entries in 0..{m - 1} and b <= m", "out-of-range entries")
        member = np.zeros((m, m), dtype=bool)
        member[np.repeat(np.arange(m), b), blocks.ravel()] = True
        if member.sum() != m * b:
            raise _fail("blocks", _OWNER, "blocks without repeated elements", "a repeated element")
        if not member[np.arange(m), np.arange(m)].all():
            missing = int(np.flatnonzero(~member[np.arange(m), np.arange(m)])[0])
            raise _fail("blocks", _OWNER, "a block B_i that contains i for every i",
                        f"block {missing} without its own element")
        self._blocks = blocks.astype(np.int64)
        self._member = member
        # Out-of-block elements of each row, in index order: the uniform draw outside B_i.
        self._outside = np.nonzero(~member)[1].reshape(m, m - b) if b < m else np.zeros((m, 0), int)
        self._m, self._b = m, b
        self._randomize_unprotected = bool(randomize_unprotected)
        shrink = math.exp(-float(self._epsilon))          # e^-ε, never overflows
        denominator = b + (m - b) * shrink               # D·e^-ε
        self._p_t = b / denominator
        self._p_out = shrink / denominator if b < m else 0.0   # (1 - p_T)/(m - b) = 1/D
        self._p_in = 1.0 / denominator                  # p_T/b = e^ε/D
        self._p_s = m * shrink / denominator if self._randomize_unprotected else 0.0

    # -- description --------------------------------------------------------------------------

    @property
    def m(self) -> int:
        """|Y_P|, the number of protected elements."""
        return self._m

    @property
    def block_size(self) -> int:
        return self._b

    @property
    def blocks(self) -> np.ndarray:
        return self._blocks.copy()

    @property
    def p_t(self) -> float:
        """Probability that a protected input is reported inside its block."""
        return self._p_t

    @property
    def p_s(self) -> float:
        """Probability that an unprotected input is replaced by a protected element."""
        return self._p_s

    def _parameters(self) -> dict[str, object]:
        return {"protected": self._m, "block_size": self._b, "p_T": self._p_t, "p_S": self._p_s,
                "randomize_unprotected": self._randomize_unprotected}

    def _repr_fields(self) -> dict[str, object]:
        return {"protected": self._m, "block_size": self._b,
                "randomize_unprotected": self._randomize_unprotected}

    # -- probabilities ------------------------------------------------------------------------

    def probability_matrix(self) -> np.ndarray:
        """An (m + 1, m) array: Pr[M(x) = y] for the m protected inputs and, in the last row, any
        unprotected input; columns are the protected outputs. A protected row sums to 1; the last
        row sums to p_S (the rest is the probability of keeping the unprotected input)."""
        out = np.where(self._member, self._p_in, self._p_out)
        return np.vstack([out, np.full((1, self._m), self._p_s / self._m)])

    def probabilities(self, inputs: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Pr[M(x) = y] for each pair of ``inputs`` (protected indices or UNPROTECTED) and protected
        ``outputs``, as an array of the broadcast shape."""
        x, y = np.broadcast_arrays(np.asarray(inputs), np.asarray(outputs))
        out = np.full(x.shape, self._p_s / self._m, dtype=float)
        protected = x >= 0
        inside = self._member[x[protected], y[protected]]
        out[protected] = np.where(inside, self._p_in, self._p_out)
        return out

    # -- sampling -----------------------------------------------------------------------------

    def randomise(self, inputs: Any, noise: Randomness | NoiseSource | None = None, *,
                  accountant: Accountant | None = None, target: str = "",
                  units: Any = None) -> np.ndarray:
        """Report each input: protected indices 0..m-1 or UNPROTECTED (-1) for an element outside Y_P.

        Returns an int64 array of the same length: a protected index, or UNPROTECTED where an
        unprotected input is kept as it is. With an ``accountant``, the loss on ``target`` is
        reported for ``units`` (one per input; None: every unit) before any noise is drawn
        (:meth:`Mechanism.report`): every input is reported, protected or not.

        Raises:
            ValidationError: for an index outside -1..m-1.
            BudgetExceeded: the accountant's budget refuses the loss (nothing is drawn).
        """
        noise = check_noise(noise, owner=_OWNER)
        x = np.asarray(inputs, dtype=np.int64).ravel()
        if x.size and (x.min() < UNPROTECTED or x.max() >= self._m):
            raise _fail("inputs", _OWNER, f"indices in -1..{self._m - 1}", "out-of-range indices")
        self.report(accountant, target=target, units=units, inputs=x.size)
        out = np.full(x.size, UNPROTECTED, dtype=np.int64)
        protected = np.flatnonzero(x >= 0)
        if protected.size:
            u = noise.uniform01_array(protected.size)
            inside = u < self._p_t
            rows_in, rows_out = protected[inside], protected[~inside]
            if rows_in.size:
                pick = noise.uniform_int_array(self._b, rows_in.size)
                out[rows_in] = self._blocks[x[rows_in], pick]
            if rows_out.size:
                pick = noise.uniform_int_array(self._m - self._b, rows_out.size)
                out[rows_out] = self._outside[x[rows_out], pick]
        others = np.flatnonzero(x < 0)
        if others.size and self._p_s > 0:
            u = noise.uniform01_array(others.size)
            replaced = others[u < self._p_s]
            if replaced.size:
                out[replaced] = noise.uniform_int_array(self._m, replaced.size)
        return out

    # -- estimation ---------------------------------------------------------------------------

    def estimate_frequencies(self, protected_counts: Any, unprotected_counts: Any
                             ) -> tuple[np.ndarray, np.ndarray]:
        """Unbiased estimates of the input frequencies from the released counts (003 §4.2; spec §4.2).

        ``protected_counts[i]`` counts outputs equal to protected element i; ``unprotected_counts``
        counts each kept unprotected element. With m̂ the released shares and n the total, an
        unprotected element x has E[m̂(x)] = (1 − p_S) p(x); a protected output y has
        E[m̂(y)] = Σ_i Q(y|i) p(i) + (p_S/m)(1 − Σ_i p(i)). Solving these linear equations (least
        squares when the block matrix is singular, e.g. two elements with the same block: their
        sum is identified but not each share) gives p̂. Returns (protected, unprotected) shares,
        possibly negative or above 1: clip and renormalize with :func:`clip_and_normalize`.
        Without randomized unprotected inputs (plain RR) this is the usual RR inversion.
        """
        counts_p = np.asarray(protected_counts, dtype=float)
        counts_u = np.asarray(unprotected_counts, dtype=float)
        total = counts_p.sum() + counts_u.sum()
        if total <= 0:
            return np.zeros_like(counts_p), np.zeros_like(counts_u)
        share_p, share_u = counts_p / total, counts_u / total
        kept = 1.0 - self._p_s
        est_u = share_u / kept if kept > 0 else np.zeros_like(share_u)
        # m̂_P − (p_S/m)(1 − s) = (Q_PP − (p_S/m)·1)ᵀ p_P, with s = Σ p_P unknown: move it left.
        q = np.where(self._member, self._p_in, self._p_out)
        system = (q - self._p_s / self._m).T
        rhs = share_p - self._p_s / self._m
        est_p = np.linalg.lstsq(system, rhs, rcond=None)[0]
        return est_p, est_u


def clip_and_normalize(*shares: np.ndarray) -> tuple[np.ndarray, ...]:
    """Clip negative estimates to 0 and rescale all parts together to sum to 1."""
    clipped = [np.clip(np.asarray(s, dtype=float), 0.0, None) for s in shares]
    total = sum(float(c.sum()) for c in clipped)
    if total <= 0:
        return tuple(clipped)
    return tuple(c / total for c in clipped)
