"""Exact randomness for differential-privacy mechanisms.

:class:`NoiseSource` is the only randomness the mechanisms in :mod:`medanon.mechanisms` use. It
hands out uniformly random *bits* and builds every distribution from them with integer
arithmetic, so the exact samplers below have exactly the distribution they claim; no floating
point number takes part in them.

Guarantees:

- :meth:`NoiseSource.uniform_int`, :meth:`~NoiseSource.bernoulli`,
  :meth:`~NoiseSource.bernoulli_exp` and :meth:`~NoiseSource.discrete_laplace` are exact for
  rational parameters (given perfectly uniform bits). The last two follow Canonne, Kamath and
  Steinke, "The discrete Gaussian for differential privacy" (NeurIPS 2020), Algorithms 1 and 2.
  Exact integer sampling is what defeats the floating-point attack of Mironov, "On significance
  of the least significant bits for differential privacy" (CCS 2012) on textbook Laplace noise.
- :meth:`~NoiseSource.discrete_laplace_array` runs the same algorithm vectorized with NumPy
  (int64 arithmetic only, rejection loops over the still-pending draws), so each element is an
  independent exact draw, like :meth:`~NoiseSource.discrete_laplace`'s.
- :meth:`~NoiseSource.uniform01`, :meth:`~NoiseSource.uniform01_array` and
  :meth:`~NoiseSource.gumbel` return doubles: uniform on the grid {k·2^-53 : 1 <= k < 2^53}
  (never 0 or 1), and -log(-log(U)) of it. The grid draws are exact; they are *not* exact
  samplers of the continuous distributions; the mechanisms using them say what that costs.
- The bits come from a :class:`~medanon.random.Randomness` (``medanon.random.randomness()``),
  the one randomness object a user passes: its :attr:`~medanon.random.Randomness.bits`, never its
  PCG64 generator. Secure (the default): :mod:`secrets` (the operating system's CSPRNG) on every
  call; nothing is buffered, so forked processes never share bits. Seeded
  (``randomness(seed)``): NumPy's PCG64 on ``SeedSequence(seed)``: reproducible, fast, and **not
  secret** (anyone who knows or guesses the seed can replay the noise); for tests and research
  runs only.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

import numpy as np

from .._validation import _fail, check_int
from ..accounting.budget import to_exact
from ..random import Randomness, randomness

__all__ = ["NoisePool", "NoiseSource", "to_fraction"]

_TWO_POW_MINUS_53 = 2.0 ** -53
_INT64_MAX = 2 ** 63 - 1
# discrete_laplace_array: scales above this are refused (their draws would not fit in int64), and
# scales t/s with t or s above _ARRAY_LIMIT use the scalar sampler in a loop (see below).
_ARRAY_MAX_SCALE = 2 ** 56
_ARRAY_LIMIT = 2 ** 62


def to_fraction(value: Any, *, name: str, owner: str, positive: bool = True) -> Fraction:
    """Convert a user-supplied number to an exact :class:`~fractions.Fraction`.

    The one conversion of :func:`medanon.accounting.to_exact` (floats read as their shortest
    decimal text, so ``0.1`` is exactly 1/10); ``positive=False`` also accepts 0.

    Raises:
        ValidationError: for bools, non-numbers, NaN, infinities, negative values, and zero when
            ``positive`` is true.
    """
    return to_exact(value, name=name, owner=owner, allow_zero=not positive)


def check_noise(noise: Any, *, owner: str) -> "NoiseSource":
    """The exact samplers over ``noise``: a :class:`~medanon.random.Randomness` (what users
    pass), a :class:`NoiseSource` (as is), or None (fresh secure randomness).

    Raises:
        ValidationError: anything else.
    """
    if isinstance(noise, NoiseSource):
        return noise
    if noise is None or isinstance(noise, Randomness):
        return NoiseSource(noise)
    raise _fail("noise", owner, "a Randomness (medanon.random.randomness(seed=None)), or None for "
                                "secure randomness", noise)


class NoiseSource:
    """The exact samplers, over the bits of a :class:`~medanon.random.Randomness`.

    ``NoiseSource(rng)`` reads ``rng.bits`` only (never ``rng.generator``) and keeps no state of
    its own: two sources over one Randomness continue one stream. ``NoiseSource()`` is secure.
    Users pass the Randomness itself (the mechanisms wrap it with :func:`check_noise`);
    :meth:`secure` and :meth:`seeded` are shorthands for ``NoiseSource(randomness(...))``.
    """

    def __init__(self, rng: Randomness | None = None) -> None:
        if rng is None:
            rng = randomness()
        elif not isinstance(rng, Randomness):
            raise _fail("rng", "NoiseSource", "a Randomness (medanon.random.randomness(seed=None)) "
                                              "or None", rng)
        self.rng = rng
        self._randbits = rng.bits.randbits
        self._words = rng.bits.words

    # -- construction --------------------------------------------------------------------

    @classmethod
    def secure(cls) -> NoiseSource:
        """Samplers over fresh secure randomness (the operating system's CSPRNG)."""
        return cls(randomness())

    @classmethod
    def seeded(cls, seed: int) -> NoiseSource:
        """Samplers over ``randomness(seed)``: reproducible, not secret."""
        if seed is None:
            raise _fail("seed", "NoiseSource.seeded", "an integer >= 0", seed)
        return cls(randomness(seed))

    @property
    def kind(self) -> str:
        """``"secure"`` or ``"seeded"``."""
        return self.rng.kind

    def describe(self) -> dict[str, object]:
        """The manifest entry of the randomness the samplers read (:meth:`Randomness.describe`)."""
        return self.rng.describe()

    def __repr__(self) -> str:
        return f"NoiseSource({self.rng!r})"

    def __reduce__(self):
        return (NoiseSource, (self.rng,))

    # -- exact samplers --------------------------------------------------------------------

    def randbits(self, n: int) -> int:
        """``n`` uniform random bits as an int in [0, 2^n)."""
        n = check_int(n, name="n", owner="NoiseSource.randbits", minimum=0)
        return self._randbits(n)

    def uniform_int(self, n: int) -> int:
        """Exactly uniform on {0, ..., n-1} for any int n >= 1 (rejection sampling on bits)."""
        n = check_int(n, name="n", owner="NoiseSource.uniform_int", minimum=1)
        return self._uniform_int(n)

    def bernoulli(self, p: Any) -> bool:
        """True with probability exactly ``p``, a rational number in [0, 1]."""
        p = to_fraction(p, name="p", owner="NoiseSource.bernoulli", positive=False)
        if p > 1:
            raise _fail("p", "NoiseSource.bernoulli", "a number in [0, 1]", p)
        return self._uniform_int(p.denominator) < p.numerator

    def bernoulli_exp(self, gamma: Any) -> bool:
        """True with probability exactly exp(-gamma), for rational gamma >= 0 (CKS 2020, Alg. 1)."""
        gamma = to_fraction(gamma, name="gamma", owner="NoiseSource.bernoulli_exp", positive=False)
        return self._bernoulli_exp(gamma.numerator, gamma.denominator)

    def discrete_laplace(self, scale: Any) -> int:
        """An exact sample with Pr[x] proportional to exp(-|x|/scale) on the integers.

        ``scale`` is a positive rational t/s (CKS 2020, Algorithm 2, run with integers only).
        """
        scale = to_fraction(scale, name="scale", owner="NoiseSource.discrete_laplace")
        return self._discrete_laplace(scale.numerator, scale.denominator)

    def discrete_laplace_array(self, scale: Any, size: int) -> np.ndarray:
        """``size`` independent exact draws with Pr[x] proportional to exp(-|x|/scale).

        The algorithm of :meth:`discrete_laplace` (CKS 2020, Algorithm 2, with Algorithm 1 for
        the Bernoulli(exp(-γ)) coins), vectorized: each step runs on all still-pending draws at
        once, and a draw that is rejected starts again from scratch in the next round.

        Exactness: only integer arithmetic on uniform random bits takes part (no floating
        point); every intermediate is checked to fit in int64 (the astronomically rare ones
        that would not are finished on Python ints, and scales t/s with t or s above 2^62 use
        :meth:`discrete_laplace`'s scalar code in a loop); and the bits of different draws never
        overlap. So, given perfectly uniform bits, every element has exactly the discrete
        Laplace distribution and the elements are independent. The bits are used differently
        from :meth:`discrete_laplace`, so a seeded source gives different (equally distributed)
        values than repeated scalar calls.

        Args:
            scale: A positive rational t/s, at most 2^56 (converted exactly, see
                :func:`to_fraction`).
            size: The number of draws, an int >= 0.

        Returns:
            An int64 array of shape ``(size,)``.

        Raises:
            ValidationError: for a ``scale`` that is not a positive number or exceeds 2^56,
                and for a ``size`` that is not an int >= 0.
            OverflowError: when a draw does not fit in int64; at scales <= 2^56 each draw does
                so with probability below exp(-127).
        """
        owner, given = "NoiseSource.discrete_laplace_array", scale
        scale = to_fraction(scale, name="scale", owner=owner)
        if scale > _ARRAY_MAX_SCALE:
            raise _fail("scale", owner, "a positive number <= 2**56 (draws must fit in int64)",
                        given)
        size = check_int(size, name="size", owner=owner, minimum=0)
        t, s = scale.numerator, scale.denominator
        if t > _ARRAY_LIMIT or s > _ARRAY_LIMIT:
            # int64 arithmetic could overflow: the scalar sampler, on Python ints, in a loop.
            sample = self._discrete_laplace
            return np.array([sample(t, s) for _ in range(size)], dtype=np.int64)
        return self._discrete_laplace_array(t, s, size)

    # -- float samplers --------------------------------------------------------------------

    def uniform01(self) -> float:
        """Uniform on {k·2^-53 : 1 <= k < 2^53}: 53 random bits, redrawn when all are 0."""
        while True:
            k = self._randbits(53)
            if k:
                return k * _TWO_POW_MINUS_53

    def uniform01_array(self, size: int) -> np.ndarray:
        """``size`` independent draws of :meth:`uniform01`, as a float64 array.

        Each element is uniform on {k·2^-53 : 1 <= k < 2^53}: the top 53 bits of a random word,
        redrawn while all are 0, times 2^-53 (exact in a double).

        Raises:
            ValidationError: for a ``size`` that is not an int >= 0.
        """
        size = check_int(size, name="size", owner="NoiseSource.uniform01_array", minimum=0)
        return self._uniform01_array(size)

    def uniform_int_array(self, n: int, size: int) -> np.ndarray:
        """``size`` exactly uniform draws from {0, ..., n-1} (1 <= n <= 2^63), as int64.

        Raises:
            ValidationError: for an ``n`` or ``size`` out of range.
        """
        n = check_int(n, name="n", owner="NoiseSource.uniform_int_array", minimum=1, maximum=2 ** 63)
        size = check_int(size, name="size", owner="NoiseSource.uniform_int_array", minimum=0)
        return self._uniform_ints(n, size)

    def gumbel(self, n: int) -> np.ndarray:
        """``n`` standard Gumbel samples, -log(-log(U)) with U from :meth:`uniform01_array`."""
        n = check_int(n, name="n", owner="NoiseSource.gumbel", minimum=0)
        return -np.log(-np.log(self._uniform01_array(n)))

    # -- internals (no validation; integer arguments) -----------------------------------------

    def _bits_array(self, b: int, m: int) -> np.ndarray:
        """``m`` independent uniform ``b``-bit integers (1 <= b <= 64) as a uint64 array.

        Each word is cut into floor(64/b) disjoint ``b``-bit fields, so no bit is used twice.
        """
        per = 64 // b
        words = self._words(-(-m // per))
        if per == 1:
            return words if b == 64 else words & np.uint64((1 << b) - 1)
        shifts = np.arange(per, dtype=np.uint64) * np.uint64(b)
        fields = (words[:, None] >> shifts) & np.uint64((1 << b) - 1)
        return fields.ravel()[:m]

    def _uniform01_array(self, m: int) -> np.ndarray:
        if not m:
            return np.empty(0, dtype=np.float64)
        k = self._words(m) >> np.uint64(11)
        while True:
            zero = np.flatnonzero(k == 0)
            if not zero.size:
                break
            k[zero] = self._words(zero.size) >> np.uint64(11)
        return k.astype(np.float64) * _TWO_POW_MINUS_53

    def _uniform_ints(self, n: int, m: int) -> np.ndarray:
        """``m`` independent exactly uniform draws from {0, ..., n-1}, 1 <= n <= 2^63, as int64.

        Rejection sampling: bit_length(n-1) random bits, redrawn (for the rejected ones only)
        while >= n; each try succeeds with probability > 1/2.
        """
        if n == 1:
            return np.zeros(m, dtype=np.int64)
        b, limit = (n - 1).bit_length(), np.uint64(n)
        r = self._bits_array(b, m)
        while True:
            bad = np.flatnonzero(r >= limit)
            if not bad.size:
                return r.astype(np.int64)
            r[bad] = self._bits_array(b, bad.size)

    def _bernoulli_exp_le1_array(self, num: np.ndarray, den: int) -> np.ndarray:
        """Bernoulli(exp(-num[i]/den)) for each i, as a bool array: :meth:`_bernoulli_exp_le1`
        vectorized (CKS 2020, Algorithm 1), for an int64 array 0 <= num <= den <= 2^62.

        The draws still running are all at the same k, so one ``_uniform_ints(den·k)`` call per
        step serves them all. A draw reaches a k with den·k > 2^63 (k >= 3) with probability
        below 1/(k-1)!; such draws finish on Python ints, so the result stays exact.
        """
        result = np.ones(num.size, dtype=bool)  # num == 0: K = 1 at once, True
        active = np.flatnonzero(num)
        active_num = num[active]
        k = 1
        while active.size:
            n = den * k
            if n > 2 ** 63:
                for i, a in zip(active.tolist(), active_num.tolist()):
                    kk = k
                    while self._uniform_int(den * kk) < a:
                        kk += 1
                    result[i] = kk % 2 == 1
                break
            go = self._uniform_ints(n, active.size) < active_num
            if k % 2 == 0:
                result[active[~go]] = False
            active, active_num = active[go], active_num[go]
            k += 1
        return result

    def _discrete_laplace_array(self, t: int, s: int, size: int) -> np.ndarray:
        """:meth:`_discrete_laplace` vectorized, for 1 <= t, s <= 2^62 (see its docstring)."""
        out = np.empty(size, dtype=np.int64)
        pending = np.arange(size)
        # u + t·v stays <= 2^63 - 1 while v <= v_max (v_max >= 1 since t <= 2^62).
        v_max = (_INT64_MAX - (t - 1)) // t
        while pending.size:
            u = self._uniform_ints(t, pending.size)
            keep = self._bernoulli_exp_le1_array(u, t)
            retry = pending[~keep]
            idx, u = pending[keep], u[keep]
            # V ~ Geometric(1 - exp(-1)): Bernoulli(exp(-1)) coins up to the first failure.
            v = np.zeros(idx.size, dtype=np.int64)
            running, rounds = np.arange(idx.size), 0
            while running.size:
                running = running[self._bernoulli_exp_le1_array(
                    np.ones(running.size, dtype=np.int64), 1)]
                v[running] += 1
                rounds += 1
            if rounds - 1 > v_max:  # u + t·v might overflow int64 (probability < exp(-v_max))
                exact = [(a + t * b) // s for a, b in zip(u.tolist(), v.tolist())]
                if max(exact) > _INT64_MAX:
                    raise OverflowError("a discrete Laplace draw does not fit in int64")
                y: np.ndarray = np.array(exact, dtype=np.int64)
            else:
                y = (u + t * v) // s
            negative = self._bits_array(1, idx.size).astype(bool)
            accept = ~(negative & (y == 0))  # "-0" is rejected, as in the scalar sampler
            y = np.where(negative, -y, y)
            out[idx[accept]] = y[accept]
            pending = np.concatenate([retry, idx[~accept]])
        return out

    def _uniform_int(self, n: int) -> int:
        if n == 1:
            return 0
        randbits, k = self._randbits, (n - 1).bit_length()
        while True:
            r = randbits(k)
            if r < n:
                return r

    def _bernoulli_exp_le1(self, num: int, den: int) -> bool:
        """Bernoulli(exp(-num/den)) for 0 <= num <= den: CKS 2020 Algorithm 1, gamma in [0, 1].

        K counts successes of Bernoulli(gamma/1), Bernoulli(gamma/2), ... up to the first
        failure; Pr[K >= k] = gamma^k/k!, so Pr[K even] = sum (-gamma)^k/k! = exp(-gamma).
        """
        uniform_int, k = self._uniform_int, 1
        while uniform_int(den * k) < num:
            k += 1
        return k % 2 == 1

    def _bernoulli_exp(self, num: int, den: int) -> bool:
        """Bernoulli(exp(-num/den)) for num/den >= 0: floor(gamma) Bernoulli(exp(-1)) draws,
        all of which must succeed, then the fractional part (CKS 2020, Algorithm 1)."""
        while num > den:
            if not self._bernoulli_exp_le1(1, 1):
                return False
            num -= den
        return self._bernoulli_exp_le1(num, den)

    def _discrete_laplace(self, t: int, s: int) -> int:
        """Discrete Laplace with scale t/s (CKS 2020, Algorithm 2).

        U uniform on {0..t-1} kept with probability exp(-U/t) and V ~ Geometric(1 - exp(-1))
        make X = U + tV geometric with Pr[X = x] proportional to exp(-x/t); Y = floor(X/s) has
        Pr[Y = y] proportional to exp(-y·s/t); a random sign, rejecting "-0", makes it two-sided.
        """
        uniform_int, bexp, randbits = self._uniform_int, self._bernoulli_exp_le1, self._randbits
        while True:
            u = uniform_int(t)
            if not bexp(u, t):
                continue
            v = 0
            while bexp(1, 1):
                v += 1
            y = (u + t * v) // s
            if randbits(1):
                if y:
                    return -y
            else:
                return y


class NoisePool:
    """Draws of one array sampler handed out in slices, to amortize its per-call overhead.

    The vectorized samplers cost a few hundred microseconds per call whatever the size; a
    caller needing many small arrays (one per lattice node, say) takes them from a pool refilled
    ``batch`` draws at a time. Draws are independent and identically distributed, so any slice
    has exactly the sampler's distribution.

    Example:
        >>> from medanon.random import randomness
        >>> noise = NoiseSource(randomness(1))
        >>> pool = NoisePool(lambda m: noise.discrete_laplace_array(3, m))
        >>> pool.take(4).shape
        (4,)
    """

    def __init__(self, draw: "Callable[[int], np.ndarray]", batch: int = 65_536) -> None:
        self._draw = draw
        self._batch = check_int(batch, name="batch", owner="NoisePool", minimum=1)
        self._buffer = draw(0)
        self._used = 0

    def take(self, size: int) -> np.ndarray:
        """The next ``size`` draws."""
        available = len(self._buffer) - self._used
        if size > available:
            fresh = self._draw(max(self._batch, size - available))
            self._buffer = np.concatenate([self._buffer[self._used:], fresh])
            self._used = 0
        out = self._buffer[self._used:self._used + size]
        self._used += size
        return out
