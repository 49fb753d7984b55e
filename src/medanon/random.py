"""Randomness: secure by default, reproducible only on explicit request.

Every random choice in medanon goes through one object, a :class:`Randomness`, made by
:func:`randomness`. It holds two sources, both from the same origin:

* :attr:`Randomness.bits` — the **exact bit source** for differential privacy. The mechanisms'
  samplers (:class:`medanon.mechanisms.NoiseSource`) build every distribution from these bits
  with integer arithmetic and read nothing else. Secure: the operating system's CSPRNG
  (``secrets``), read on every draw (nothing buffered, so forked processes never share bits).
* :attr:`Randomness.generator` — a NumPy PCG64 generator for the choices that are not DP noise:
  tie-breaking and seed records in clustering, the patient split of an EHR release. Secure: seeded
  with 256 bits from ``secrets``, so no two runs share a stream and nobody can replay one.

``randomness(seed)`` makes a run reproducible for tests and research: the bits come from
PCG64 on ``SeedSequence(seed)`` (what ``NoiseSource.seeded(seed)`` always drew) and the generator
from PCG64 on its first spawned child, ``SeedSequence(seed).spawn(1)[0]``, a stream independent
of the bits (so, e.g., an EHR release's patient split says nothing about its noise). A seeded
source says so (:attr:`Randomness.seeded`); manifests record it (:meth:`Randomness.describe`),
and every command that publishes refuses it without ``--allow-seeded``
(:func:`refuse_seeded_release`).

Privacy guarantee: a PCG64 stream is fine for tie-breaking and the patient split, never for DP
noise; the DP samplers draw from :attr:`Randomness.bits` only, which is the OS CSPRNG unless the
caller fixed a seed.
"""

from __future__ import annotations

import numbers
import secrets
from collections.abc import Sequence

import numpy as np

from ._validation import check_int
from .errors import ValidationError

__all__ = ["ExactBits", "Randomness", "check_rng", "randomness", "refuse_seeded_release"]

_WORDS_PER_REFILL = 512
_SECURE_BITS = "secrets (OS CSPRNG)"
_SEEDED_BITS = "numpy PCG64"


class ExactBits:
    """Uniform random bits: the only input of the exact DP samplers.

    Secure (``seed`` None): :mod:`secrets` on every call. Seeded: PCG64 on
    ``SeedSequence(seed)``, fetched in 64-bit words, each bit used once.
    """

    __slots__ = ("_bit_generator", "_words", "_acc", "_count")

    def __init__(self, seed: int | tuple[int, ...] | None) -> None:
        self._bit_generator = None if seed is None else np.random.PCG64(seed)
        self._words: list[int] = []
        self._acc = 0     # seeded: unused random bits, least significant first
        self._count = 0   # seeded: how many bits _acc holds

    @property
    def secure(self) -> bool:
        return self._bit_generator is None

    def randbits(self, k: int) -> int:
        """``k`` uniform random bits as an int in [0, 2^k)."""
        if self._bit_generator is None:
            return secrets.randbits(k) if k else 0
        acc, count = self._acc, self._count
        while count < k:
            if not self._words:
                self._words = self._bit_generator.random_raw(_WORDS_PER_REFILL).tolist()
            acc |= self._words.pop() << count
            count += 64
        self._acc, self._count = acc >> k, count - k
        return acc & ((1 << k) - 1)

    def words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words as a uint64 array."""
        if self._bit_generator is None:
            return np.frombuffer(secrets.token_bytes(8 * n), dtype="<u8").astype(np.uint64)
        return self._bit_generator.random_raw(n)

    def __reduce__(self):
        # A secure source unpickles to a secure one (it has no state); a seeded one to its state.
        if self._bit_generator is None:
            return (ExactBits, (None,))
        return (_restore_bits, (self._bit_generator, self._words, self._acc, self._count))


def _restore_bits(bit_generator, words, acc, count) -> ExactBits:
    bits = ExactBits.__new__(ExactBits)
    bits._bit_generator, bits._words, bits._acc, bits._count = bit_generator, words, acc, count
    return bits


class Randomness:
    """The randomness of a run: exact bits for DP noise and a generator for other choices.

    Make one with :func:`randomness` (``randomness()`` secure, ``randomness(seed)`` reproducible).
    Pass it wherever medanon asks for randomness: ``Publisher(..., rng=...)``, a periodic
    method's ``anonymize(..., rng=...)``, a table method's or a mechanism's ``noise``
    argument, ``run_clinsim(..., rng=...)``.

    Attributes:
        seed: The caller's seed (an int, or a tuple of ints), or None for a secure source.
        bits: The exact bit source of the DP samplers (:class:`ExactBits`).
        generator: A NumPy generator for choices that are not DP noise.
    """

    __slots__ = ("_seed", "_bits", "_generator")

    def __init__(self, seed: int | tuple[int, ...] | None, bits: ExactBits,
                 generator: np.random.Generator) -> None:
        self._seed, self._bits, self._generator = seed, bits, generator

    @property
    def seed(self) -> int | tuple[int, ...] | None:
        """The seed of a seeded run (recorded in the manifest); None when secure."""
        return self._seed

    @property
    def bits(self) -> ExactBits:
        """The source of exact random bits the DP samplers draw from."""
        return self._bits

    @property
    def generator(self) -> np.random.Generator:
        """A NumPy generator for the choices that are not DP noise."""
        return self._generator

    @property
    def seeded(self) -> bool:
        """True when the caller fixed the seed (the run is reproducible, not secret)."""
        return self._seed is not None

    @property
    def kind(self) -> str:
        """``"seeded"`` or ``"secure"``, as written into manifests."""
        return "seeded" if self.seeded else "secure"

    def describe(self) -> dict[str, object]:
        """The manifest entry (``rng``): ``kind`` and ``seed`` (read by every reader),
        ``generator`` (the bit generator behind the DP noise, as earlier manifests named it),
        and where the DP noise and the other choices come from."""
        if not self.seeded:
            return {"kind": "secure", "seed": None, "generator": _SECURE_BITS,
                    "dp_noise": f"exact samplers on bits from {_SECURE_BITS}, read on every draw",
                    "other_choices": f"numpy PCG64 seeded with 256 bits from {_SECURE_BITS}"}
        seed = list(self._seed) if isinstance(self._seed, tuple) else self._seed
        return {"kind": "seeded", "seed": seed, "generator": _SEEDED_BITS,
                "dp_noise": f"exact samplers on bits from numpy PCG64 on SeedSequence({seed}): "
                            f"reproducible, not secret",
                "other_choices": f"numpy PCG64 on SeedSequence({seed}).spawn(1)[0], a stream "
                                 f"independent of the noise bits"}

    def __repr__(self) -> str:
        # what a notebook needs to tell the two apart; a seed is shown, as every manifest
        # records it (it is no secret: that is what seeded means)
        if not self.seeded:
            return "<Randomness: secure (OS entropy); DP noise from exact samplers>"
        return f"<Randomness: seeded {self._seed!r}, reproducible and not secret (tests, research)>"

    def __reduce__(self):
        # A secure source unpickles to a fresh secure one (nothing to replay); a seeded one to its
        # exact state (Dask workers continue the stream they were given).
        if not self.seeded:
            return (randomness, ())
        return (Randomness, (self._seed, self._bits, self._generator))


def _check_seed(seed: object, owner: str) -> int | tuple[int, ...]:
    if isinstance(seed, Sequence) and not isinstance(seed, (str, bytes)):
        if not seed:
            raise ValidationError(f"The 'seed' parameter of {owner} must be an integer >= 0 or a "
                                  f"non-empty sequence of them; got {seed!r}.")
        return tuple(check_int(s, name="seed", owner=owner, minimum=0) for s in seed)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return check_int(seed, name="seed", owner=owner, minimum=0)
    raise ValidationError(f"The 'seed' parameter of {owner} must be an integer >= 0 or a "
                          f"sequence of them; got {seed!r}.")


def randomness(seed: int | Sequence[int] | None = None) -> Randomness:
    """The randomness of a run: secure (``seed=None``, the default) or reproducible.

    Args:
        seed: For tests and research only: an integer >= 0 (or a sequence of them, e.g.
            ``(setting, run)``). It is recorded in the manifest; the release is then not secret.

    Raises:
        ValidationError: a seed that is not a non-negative integer or a sequence of them.
    """
    if seed is None:
        generator = np.random.Generator(np.random.PCG64(secrets.randbits(256)))
        return Randomness(None, ExactBits(None), generator)
    seed = _check_seed(seed, "randomness")
    child = np.random.SeedSequence(seed).spawn(1)[0]
    return Randomness(seed, ExactBits(seed), np.random.Generator(np.random.PCG64(child)))


def check_rng(rng: object, *, owner: str, name: str = "rng") -> Randomness:
    """``rng``, or a fresh secure :class:`Randomness` for None.

    Raises:
        ValidationError: anything else (a NumPy generator included: it could not give the
            exact, secure bits the DP samplers need).
    """
    if rng is None:
        return randomness()
    if not isinstance(rng, Randomness):
        raise ValidationError(f"The {name!r} parameter of {owner} must be a Randomness "
                              f"(medanon.random.randomness(seed=None)) or None for secure "
                              f"randomness; got {type(rng).__name__}.")
    return rng


def refuse_seeded_release(seeded: bool, allow_seeded: bool) -> None:
    """The one rule for every command that publishes: a seeded (hence non-secret) random run
    is published only when ``--allow-seeded`` says so.

    Raises:
        ValidationError: ``seeded`` without ``allow_seeded``.
    """
    if seeded and not allow_seeded:
        raise ValidationError("A seeded run is reproducible by anyone who knows the seed; "
                              "publishing it needs --allow-seeded (for tests and research only).")
