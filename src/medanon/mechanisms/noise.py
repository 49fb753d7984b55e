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
- :meth:`~NoiseSource.uniform01` and :meth:`~NoiseSource.gumbel` return doubles: uniform on the
  grid {k·2^-53 : 1 <= k < 2^53} (never 0 or 1), and -log(-log(U)) of it. They are *not* exact
  samplers of the continuous distributions; the mechanisms using them say what that costs.
- :meth:`NoiseSource.secure` takes its bits from :mod:`secrets` (the operating system's CSPRNG)
  on every call; nothing is buffered, so forked processes never share bits.
  :meth:`NoiseSource.seeded` takes them from NumPy's PCG64: reproducible, fast, and **not
  secret** (anyone who knows or guesses the seed can replay the noise). Seeded sources are for
  tests and research runs only.
"""

from __future__ import annotations

import secrets
from fractions import Fraction
from typing import Any

import numpy as np

from .._validation import _fail, check_int
from ..accounting.budget import to_exact
from ..random import RandomSource

__all__ = ["NoiseSource", "to_fraction"]

_WORDS_PER_REFILL = 512
_TWO_POW_MINUS_53 = 2.0 ** -53


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
    """Return ``noise``, a fresh secure source for None, or raise ValidationError."""
    if noise is None:
        return NoiseSource.secure()
    if not isinstance(noise, NoiseSource):
        raise _fail("noise", owner, "a NoiseSource (or None for secure randomness)", noise)
    return noise


class _SeededBits:
    """Random bits from PCG64, fetched 64-bit word by word in blocks (for speed)."""

    __slots__ = ("_bit_generator", "_words", "_acc", "_count")

    def __init__(self, seed: int) -> None:
        self._bit_generator = np.random.PCG64(seed)
        self._words: list[int] = []
        self._acc = 0  # unused random bits, least significant first
        self._count = 0  # how many bits _acc holds

    def randbits(self, k: int) -> int:
        acc, count = self._acc, self._count
        while count < k:
            if not self._words:
                self._words = self._bit_generator.random_raw(_WORDS_PER_REFILL).tolist()
            acc |= self._words.pop() << count
            count += 64
        self._acc, self._count = acc >> k, count - k
        return acc & ((1 << k) - 1)

    def words(self, n: int) -> np.ndarray:
        return self._bit_generator.random_raw(n)


class NoiseSource:
    """Uniform random bits and the exact samplers built from them.

    Create one with :meth:`secure` (the default; OS CSPRNG), :meth:`seeded` (reproducible, not
    secret) or :meth:`from_random` (following a :class:`~medanon.random.RandomSource`).
    ``NoiseSource()`` is the same as ``NoiseSource.secure()``.
    """

    def __init__(self, seed: int | None = None) -> None:
        if seed is None:
            self._seeded: _SeededBits | None = None
            self._randbits = _secure_randbits
        else:
            seed = check_int(seed, name="seed", owner="NoiseSource", minimum=0)
            self._seeded = _SeededBits(seed)
            self._randbits = self._seeded.randbits

    # -- construction --------------------------------------------------------------------

    @classmethod
    def secure(cls) -> NoiseSource:
        """A source reading the operating system's CSPRNG through :mod:`secrets`."""
        return cls(None)

    @classmethod
    def seeded(cls, seed: int) -> NoiseSource:
        """A reproducible source: NumPy PCG64 seeded with ``seed`` (an int >= 0). Not secret."""
        if seed is None:
            raise _fail("seed", "NoiseSource.seeded", "an integer >= 0", seed)
        return cls(seed)

    @classmethod
    def from_random(cls, rng: RandomSource) -> NoiseSource:
        """Follow ``rng``: secure when it is unseeded, else seeded from a draw of its generator.

        The seeded case draws one 63-bit integer from ``rng.generator``, so the noise is
        reproducible given the RandomSource seed (and advances that generator by one draw).
        """
        if not isinstance(rng, RandomSource):
            raise _fail("rng", "NoiseSource.from_random", "a RandomSource", rng)
        if not rng.seeded:
            return cls.secure()
        return cls(int(rng.generator.integers(0, 2 ** 63)))

    @property
    def kind(self) -> str:
        """``"secure"`` or ``"seeded"``."""
        return "secure" if self._seeded is None else "seeded"

    def describe(self) -> dict[str, str]:
        """The manifest entry: the kind and the generator behind it."""
        generator = "secrets (OS CSPRNG)" if self._seeded is None else "numpy PCG64"
        return {"kind": self.kind, "generator": generator}

    def __repr__(self) -> str:
        return f"NoiseSource.{self.kind}()" if self._seeded is None else "NoiseSource(seeded)"

    def __reduce__(self):
        # A secure source unpickles to a fresh secure source; a seeded one to its exact state.
        if self._seeded is None:
            return (NoiseSource.secure, ())
        return (_restore_seeded, (self._seeded,))

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

    # -- float samplers --------------------------------------------------------------------

    def uniform01(self) -> float:
        """Uniform on {k·2^-53 : 1 <= k < 2^53}: 53 random bits, redrawn when all are 0."""
        while True:
            k = self._randbits(53)
            if k:
                return k * _TWO_POW_MINUS_53

    def gumbel(self, n: int) -> np.ndarray:
        """``n`` standard Gumbel samples, -log(-log(U)) with U from :meth:`uniform01`'s grid."""
        n = check_int(n, name="n", owner="NoiseSource.gumbel", minimum=0)
        k = self._words(n) >> np.uint64(11)
        while True:
            zero = np.flatnonzero(k == 0)
            if not zero.size:
                break
            k[zero] = self._words(zero.size) >> np.uint64(11)
        u = k.astype(np.float64) * _TWO_POW_MINUS_53
        return -np.log(-np.log(u))

    # -- internals (no validation; integer arguments) -----------------------------------------

    def _words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words as a uint64 array."""
        if self._seeded is not None:
            return self._seeded.words(n)
        return np.frombuffer(secrets.token_bytes(8 * n), dtype="<u8").astype(np.uint64)

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


def _secure_randbits(k: int) -> int:
    return secrets.randbits(k) if k else 0


def _restore_seeded(bits: _SeededBits) -> NoiseSource:
    source = NoiseSource.__new__(NoiseSource)
    source._seeded, source._randbits = bits, bits.randbits
    return source
